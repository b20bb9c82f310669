"""The SMT encoding of a tree ensemble's pair problem (z3, exact rational arithmetic).

Inputs are ``Int`` (integral) or ``Real`` constants, tied inputs one constant shared by both
copies, with the same pre-condition as the ReLU encoding (domain, one-hot groups, relaxed
distances, some protected input differs). Each tree is the nested term
``If(v_i <= c, left, right)`` over its leaves' values as exact rationals of the float64
numbers; ``S = base + (sum of the trees) / divisor``. A tree reading only tied inputs is one shared term.
Arithmetic is exact, so strict post-conditions (``S > c >= S'``) are asserted as such.
z3 is imported here only.
"""

from __future__ import annotations

import time
from fractions import Fraction

import numpy as np

__all__ = ["SmtTreeEngine"]


def _q(v: float):
    import z3

    f = Fraction(float(v))
    return z3.RealVal(f"{f.numerator}/{f.denominator}")


class SmtTreeEngine:
    exact = True
    name = "z3"

    def __init__(self, problem):
        import z3

        p = problem
        ens = p.net
        self.threshold = ens.threshold
        cons = []
        xs, xts = [], []

        def mk(name, i):
            if p.integer[i]:
                s = z3.Int(name)
                cons.extend([s >= int(p.lo[i]), s <= int(p.hi[i])])
                return s, z3.ToReal(s)
            s = z3.Real(name)
            cons.extend([s >= _q(p.lo[i]), s <= _q(p.hi[i])])
            return s, s

        for i in range(p.n):
            s, t = mk(f"x{i}", i)
            xs.append(s)
            xts.append(t)
        xps, xpts = list(xs), list(xts)
        for i in list(p.free) + [i for i, _ in p.relaxed]:
            xps[i], xpts[i] = mk(f"xp{i}", i)
        for i, t in p.relaxed:
            cons.extend([xpts[i] - xts[i] <= _q(t), xts[i] - xpts[i] <= _q(t)])
        free = set(p.free)
        for g in p.onehot_groups:
            cons.append(z3.Sum([xts[i] for i in g]) == 1)
            if free.issuperset(g):
                cons.append(z3.Sum([xpts[i] for i in g]) == 1)
        if p.must_differ:
            cons.append(z3.Or([xts[i] != xpts[i] for i in p.must_differ]))

        def term(t, node, vt):
            if t.left[node] < 0:
                return _q(t.value[node])
            c = _q(t.threshold[node])
            return z3.If(vt[int(t.feature[node])] <= c, term(t, int(t.left[node]), vt),
                         term(t, int(t.right[node]), vt))

        parts: list[list] = [[], []]
        for t in ens.trees:
            a = term(t, 0, xts)
            parts[0].append(a)
            shared = all(xps[i] is xs[i] for i in t.features())
            parts[1].append(a if shared else term(t, 0, xpts))
        self.S = _q(ens.base) + z3.Sum(parts[0]) / _q(ens.divisor)
        self.Sp = _q(ens.base) + z3.Sum(parts[1]) / _q(ens.divisor)
        self.cons = cons
        self.xs, self.xps = xs, xps
        self.stats = {"engine": "z3", "assertions": len(cons), "checks": 0, "solver_seconds": 0.0}

    def _rows(self, rows):
        out = []
        for r in rows:
            k = r[0]
            if k == "S>=":
                out.append(self.S >= _q(r[1]))
            elif k == "S>":
                out.append(self.S > _q(r[1]))
            elif k == "Sp<=":
                out.append(self.Sp <= _q(r[1]))
            elif k == "diff>=":
                out.append(self.S - self.Sp >= _q(r[1]))
            elif k == "diff>":
                out.append(self.S - self.Sp > _q(r[1]))
            elif k == "cut":
                out.append(self.S >= _q(r[1]) * self.Sp + _q(r[2]))
            else:
                raise ValueError(r)
        return out

    def _pair(self, model):
        def val(s):
            v = model.eval(s, model_completion=True)
            if v.is_int():
                return float(v.as_long())
            return float(Fraction(v.as_fraction()))
        return (np.array([val(s) for s in self.xs]), np.array([val(s) for s in self.xps]))

    def query(self, rows, objective: str | None, deadline: float | None, first: bool = False):
        """Same contract as :meth:`MilpTreeEngine.query` (plus the strict rows ``"S>"`` and
        ``"diff>"``); ``bound`` is exact when ``optimal``."""
        import z3

        left = None if deadline is None else deadline - time.perf_counter()
        if left is not None and left <= 0:
            return "timeout", None, None, None
        t0 = time.perf_counter()
        if objective is None:
            s = z3.Solver()
        else:
            s = z3.Optimize()
        if left is not None:
            s.set("timeout", max(1, int(left * 1000)))
        s.add(*self.cons, *self._rows(rows))
        h = None
        if objective == "S":
            obj = self.S
        elif objective == "diff":
            obj = self.S - self.Sp
        elif objective == "margin":
            c = _q(self.threshold)
            tv = z3.Real("t_margin")
            s.add(tv <= self.S - c, tv <= c - self.Sp)
            obj = tv
        else:
            obj = None
        if obj is not None:
            h = s.maximize(obj)
        from fairspec import interrupt

        with interrupt.solver_section(s.ctx.interrupt):  # Ctrl-C: z3 stops
            res = s.check()
        self.stats["checks"] += 1
        self.stats["solver_seconds"] = round(self.stats["solver_seconds"] + time.perf_counter() - t0, 4)
        if res == z3.unsat:
            return "infeasible", None, None, None
        if res != z3.sat:
            return "timeout", None, None, None
        m = s.model()
        pair = self._pair(m)
        if obj is None:
            return "feasible", pair, None, None
        v = m.eval(obj, model_completion=True)
        val = float(Fraction(v.as_fraction()))
        up = h.upper()
        try:
            bound = float(Fraction(up.as_fraction()))
        except Exception:  # noqa: BLE001 - unbounded/epsilon values: fall back to the model's value
            bound = val
        return "optimal", pair, val, bound
