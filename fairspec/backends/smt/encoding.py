"""The pair encoding in pysmt (solved with z3), Fairify-style.

Inputs are ``Int`` symbols (integral inputs) or ``Real`` symbols; tied inputs are one symbol
shared by both copies. Every neuron is a fresh ``Real`` ``h`` with
``h = Ite(z > 0, z, 0)`` (``z`` the affine pre-activation with the weights as *exact*
rationals of the float64 weights), or ``h = z`` / nothing when the interval bounds decide
the ReLU. The bounds of :mod:`fairspec.backends.pair.bounds` are asserted too (single-copy
``l <= z <= u`` and the difference rows ``dlo <= z' - z <= dhi``): they are implied, and
help z3 prune, as does the triangle relaxation of each undecided ReLU
(``h >= 0``, ``h >= z``, ``h (u - l) <= u (z - l)``).

Arithmetic is exact (linear real/integer arithmetic), so the ``label`` post-condition is
encoded with its true strict inequality ``z > 0 >= z'``; witnesses are still replayed in
float64 with a margin first, as in the MILP backend.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np


class SmtPairEncoding:
    def __init__(self, problem, bounds, mgr):
        self.problem = problem
        self.bounds = bounds
        self.mgr = mgr
        self.assertions = []
        self._build()

    def _build(self):
        p = self.problem
        m = self.mgr
        from pysmt.typing import INT, REAL

        R = lambda v: m.Real(Fraction(float(v)))           # noqa: E731 - exact float value
        self.R = R
        x_syms, x_terms = [], []
        for i in range(p.n):
            if p.integer[i]:
                s = m.Symbol(f"x{i}", INT)
                t = m.ToReal(s)
                self.assertions += [m.GE(s, m.Int(int(p.lo[i]))), m.LE(s, m.Int(int(p.hi[i])))]
            else:
                s = m.Symbol(f"x{i}", REAL)
                t = s
                self.assertions += [m.GE(s, R(p.lo[i])), m.LE(s, R(p.hi[i]))]
            x_syms.append(s)
            x_terms.append(t)
        xp_syms, xp_terms = list(x_syms), list(x_terms)
        varying = list(p.free) + [i for i, _ in p.relaxed]
        for i in varying:
            if p.integer[i]:
                s = m.Symbol(f"xp{i}", INT)
                t = m.ToReal(s)
                self.assertions += [m.GE(s, m.Int(int(p.lo[i]))), m.LE(s, m.Int(int(p.hi[i])))]
            else:
                s = m.Symbol(f"xp{i}", REAL)
                t = s
                self.assertions += [m.GE(s, R(p.lo[i])), m.LE(s, R(p.hi[i]))]
            xp_syms[i] = s
            xp_terms[i] = t
        for i, t in p.relaxed:
            d = m.Minus(xp_terms[i], x_terms[i])
            self.assertions += [m.LE(d, R(t)), m.GE(d, R(-t))]
        free = set(p.free)
        for g in p.onehot_groups:
            self.assertions.append(m.Equals(m.Plus([x_terms[i] for i in g]), m.Real(1)))
            if free.issuperset(g):
                self.assertions.append(m.Equals(m.Plus([xp_terms[i] for i in g]), m.Real(1)))
        if p.must_differ:
            self.assertions.append(m.Or([m.Not(m.Equals(x_terms[i], xp_terms[i])) for i in p.must_differ]))
        self.x_syms, self.xp_syms = x_syms, xp_syms

        sb = self.bounds.single
        b = self.bounds
        hin = [x_terms, xp_terms]
        zero = m.Real(0)
        for k, layer in enumerate(p.net.layers):
            outs = [[], []]
            for j in range(layer.n_out):
                w = layer.W[j]
                shared = b.dz_lo[k][j] == 0.0 and b.dz_hi[k][j] == 0.0
                zexpr = []
                for c in (0, 1):
                    if c == 1 and shared:
                        outs[1].append(outs[0][j])
                        zexpr.append(None)
                        continue
                    terms = [m.Times(R(wi), h) for h, wi in zip(hin[c], w) if h is not None and wi != 0.0]
                    terms.append(R(layer.b[j]))
                    z = m.Plus(terms)
                    zexpr.append(z)
                    l, u = float(sb.z_lo[k][j]), float(sb.z_hi[k][j])
                    if layer.relu and u <= 0:
                        outs[c].append(None)
                        continue
                    hv = m.Symbol(f"h{c}_{k}_{j}", REAL)
                    if not layer.relu or l >= 0:
                        self.assertions.append(m.Equals(hv, z))
                    else:
                        self.assertions.append(m.Equals(hv, m.Ite(m.GT(z, zero), z, zero)))
                        # the triangle relaxation, implied but a big help to z3's simplex:
                        # h >= 0, h >= z, h (u - l) <= u (z - l)
                        self.assertions.append(m.GE(hv, zero))
                        self.assertions.append(m.GE(hv, z))
                        # u - l as the exact rational difference of the two floats (not a float64 subtraction)
                        self.assertions.append(m.LE(m.Times(hv, m.Real(Fraction(u) - Fraction(l))),
                                                    m.Times(R(u), m.Minus(z, R(l)))))
                    outs[c].append(hv)
                if not shared and zexpr[0] is not None and zexpr[1] is not None:
                    dz = m.Minus(zexpr[1], zexpr[0])
                    self.assertions += [m.GE(dz, R(b.dz_lo[k][j])), m.LE(dz, R(b.dz_hi[k][j]))]
            hin = outs
        zs = []
        for c in (0, 1):
            v = hin[c][0]
            zs.append(zero if v is None else v)
        self.z = tuple(zs)

    def pair_from_model(self, solver):
        p = self.problem
        x = np.array([_num(solver.get_value(s)) for s in self.x_syms], dtype=np.float64)
        xp = np.array([_num(solver.get_value(s)) for s in self.xp_syms], dtype=np.float64)
        z = tuple(_num(solver.get_value(v)) if not v.is_constant() else float(v.constant_value())
                  for v in self.z)
        return x, xp, z


def _num(v) -> float:
    c = v.constant_value()
    return float(Fraction(c)) if not isinstance(c, (int, float)) else float(c)
