"""The pair query of individual fairness as linear programs certify builds itself, and the check
of a branch-and-bound tree over it (``bab-certificate``).

A :class:`PairQuery` is a pure description (numpy only): the network the proof reasons about
(``(W, b, relu)`` layers ending in one logit ``z``), the box ``[lo, hi]`` of its inputs, the
integral inputs, the one-hot groups, the inputs that are tied (one variable for both copies),
free (the protected ones: fixed per *case*) and relaxed (``|x_i - x'_i| <= t``), the
post-condition and its threshold, exact and already moved outward by the runtime's error:

=======  ===================================  ==============================================
post     the claim proved for every pair       with the runtime (error E, see network.py)
=======  ===================================  ==============================================
label    ``min(z, -z') < T`` (strict)          T = -E: no pair with ``z > -E`` and ``z' <= E``
logit    ``z - z' <= T``                       T = eps - 2E
prob     ``sigmoid(z) - sigmoid(z') <= T``     T = eps - 2E (E in probability units)
=======  ===================================  ==============================================

(or ``<`` / ``<=`` as ``strict`` says). The *cases* are every ordered pair ``(a, a')`` of values
of the free inputs that differ on ``must_differ``: certify enumerates them itself from the box.

The LP of a node (:func:`node_lp`) has both copies: the inputs (tied inputs one variable; free
inputs fixed to the case; relaxed pairs within ``t``), for every layer the pre-activations ``p``
(``p - W h = b``, the network's own float numbers: exact rows) and the post-activations ``h``
with ``h >= p``, ``h >= 0`` and the triangle ``h <= s (p - l)`` (``s`` rounded up, so the row
contains the true graph of the ReLU on ``[l, u]``), every variable boxed by certify's own rigorous
interval bounds under the node's decisions, the rigorous difference bounds between the copies
(``h - h'``), and the violated post-condition as the objective. Every constant is computed here:
nothing from the caller is trusted but the multipliers, and a wrong multiplier only weakens the
bound.

:func:`check_tree` re-derives every node's box and phases from the splits, checks that each
split covers its parent (integral inputs may skip the open gap between k and k+1), and checks
every leaf: an empty box, an interval bound below the threshold, or an LP certificate
(:func:`fairspec.certify.lp.upper_bound`) below it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import NamedTuple, Sequence

import numpy as np

from fairspec.certify.exact import decide, threshold_of
from fairspec.certify.lp import LinearProgram, SparseRows, upper_bound
from fairspec.certify.network import as_layers, rigorous_ibp
from fairspec.certify.proof import Proof, _mint
from fairspec.certify.rounding import down, float_down, float_up, interval_matmul, up
from fairspec.certify.rounding import sigmoid_down as _sigmoid_low, sigmoid_up as _sigmoid_high

__all__ = ["PairQuery", "Decisions", "NodeState", "Split", "Tighten", "Leaf", "Checked", "node_state", "node_lp",
           "check_tree", "POSTS", "prob_threshold_low", "TreeBuilder", "moved_threshold"]

POSTS = ("label", "logit", "prob")


# ---------------------------------------------------------------------------------------------
# The query
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class PairQuery:
    """A pair query (see the module docstring). ``threshold`` is read exactly (a Fraction, an int,
    a float bit for bit or a decimal str); ``relaxed`` tolerances as the spec writes them (a float
    through its shortest decimal, then rounded up: the LP's set is never smaller than the spec's)."""

    layers: tuple
    lo: np.ndarray
    hi: np.ndarray
    integer: np.ndarray | None = None
    onehot_groups: tuple = ()
    free: tuple = ()
    must_differ: tuple | None = None
    relaxed: tuple = ()
    post: str = "label"
    threshold: object = 0
    strict: bool = True
    max_cases: int = 100_000

    def __post_init__(self):
        layers = as_layers(self.layers)
        if layers[-1][0].shape[0] != 1:
            raise ValueError("the network must end in one logit (one output)")
        if layers[-1][2]:
            layers = layers + [(np.ones((1, 1)), np.zeros(1), False)]
        n = layers[0][0].shape[1]
        lo = np.array(self.lo, dtype=np.float64).reshape(-1)
        hi = np.array(self.hi, dtype=np.float64).reshape(-1)
        if lo.shape != (n,) or hi.shape != (n,):
            raise ValueError(f"the box must have {n} sides")
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
            raise ValueError("a pair query needs a finite box")
        integer = np.zeros(n, dtype=bool) if self.integer is None else np.array(self.integer, dtype=bool).reshape(-1)
        groups = tuple(tuple(int(i) for i in g) for g in self.onehot_groups)
        for g in groups:
            for i in g:
                integer[i] = True
                lo[i], hi[i] = max(lo[i], 0.0), min(hi[i], 1.0)
        lo = np.where(integer, np.ceil(lo), lo)
        hi = np.where(integer, np.floor(hi), hi)
        free = tuple(sorted({int(i) for i in self.free}))
        must = free if self.must_differ is None else tuple(sorted({int(i) for i in self.must_differ}))
        if not set(must) <= set(free):
            raise ValueError("must_differ must be a subset of the free inputs (cases are enumerated over them)")
        relaxed = tuple(sorted((int(i), float_up(threshold_of(t))) for i, t in self.relaxed))
        rset = {i for i, _ in relaxed}
        if rset & set(free):
            raise ValueError("an input is both free and relaxed")
        for g in groups:
            if set(g) & set(free) and not set(g) <= set(free):
                raise ValueError(f"one-hot group {g} is partly free")
            if set(g) & rset:
                raise ValueError(f"one-hot group {g} cannot be relaxed")
        for i in free:
            if not integer[i]:
                raise ValueError(f"free input {i} is continuous: its cases cannot be enumerated")
        if self.post not in POSTS:
            raise ValueError(f"post must be one of {POSTS}")
        thr = threshold_of(self.threshold) if isinstance(self.threshold, str) else _exact(self.threshold)
        for name, v in (("layers", tuple(layers)), ("lo", lo), ("hi", hi), ("integer", integer),
                        ("onehot_groups", groups), ("free", free), ("must_differ", must),
                        ("relaxed", relaxed), ("threshold", thr), ("strict", bool(self.strict))):
            object.__setattr__(self, name, v)
        object.__setattr__(self, "_zeros", [np.zeros(W.shape[0]) for W, _, _ in layers])
        object.__setattr__(self, "cases", self._cases())
        object.__setattr__(self, "layout", _Layout(self))

    # -- derived -------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return self.layers[0][0].shape[1]

    @property
    def tied(self) -> tuple[int, ...]:
        other = set(self.free) | {i for i, _ in self.relaxed}
        return tuple(i for i in range(self.n) if i not in other)

    @property
    def tied_groups(self) -> tuple:
        fs = set(self.free)
        return tuple(g for g in self.onehot_groups if not set(g) & fs)

    @property
    def free_groups(self) -> tuple:
        fs = set(self.free)
        return tuple(g for g in self.onehot_groups if set(g) & fs)

    def _cases(self) -> tuple:
        """Every ordered (a, a') of free-input values (vectors over ``free``) differing on must_differ."""
        if not self.free:
            return ((np.zeros(0), np.zeros(0)),)
        pos = {i: k for k, i in enumerate(self.free)}
        factors = []
        in_group = set()
        for g in self.free_groups:
            in_group.update(g)
            allowed = [i for i in g if self.hi[i] >= 1]
            fixed = [i for i in g if self.lo[i] >= 1]
            if fixed:
                allowed = fixed[:1] if len(fixed) == 1 else []
            factors.append([(tuple(pos[j] for j in g), tuple(1.0 if j == i else 0.0 for j in g)) for i in allowed])
        for i in self.free:
            if i in in_group:
                continue
            vals = np.arange(self.lo[i], self.hi[i] + 0.5)
            factors.append([((pos[i],), (float(v),)) for v in vals])
        count = math.prod(len(f) for f in factors)
        if count * count > self.max_cases * 4:
            raise ValueError(f"{count} values of the free inputs: too many cases")
        vecs = [np.zeros(len(self.free))]
        for f in factors:
            nxt = []
            for v in vecs:
                for idx, val in f:
                    w = v.copy()
                    w[list(idx)] = val
                    nxt.append(w)
            vecs = nxt
        mpos = [pos[i] for i in self.must_differ]
        cases = [(a, b) for a in vecs for b in vecs if not mpos or np.any(a[mpos] != b[mpos])]
        if len(cases) > self.max_cases:
            raise ValueError(f"{len(cases)} protected cases exceed {self.max_cases}")
        return tuple(cases)

    def describe(self) -> str:
        op = "<" if self.strict else "<="
        m = {"label": "min(z, -z')", "logit": "z - z'", "prob": "sigmoid(z) - sigmoid(z')"}[self.post]
        return f"{m} {op} {self.threshold} for every pair of the box ({len(self.cases)} protected cases)"

    @classmethod
    def from_problem(cls, problem, threshold, strict: bool, post: str | None = None) -> "PairQuery":
        """From a :class:`fairspec.backends.pair.PairProblem` (read by duck typing)."""
        return cls(as_layers(problem.net), problem.lo, problem.hi, problem.integer, problem.onehot_groups,
                   problem.free, problem.must_differ, problem.relaxed, post or problem.post, threshold, strict)


def _exact(v) -> Fraction:
    if isinstance(v, Fraction):
        return v
    if isinstance(v, (int, np.integer)):
        return Fraction(int(v))
    f = float(v)
    if not math.isfinite(f):
        raise ValueError("the threshold must be finite")
    return Fraction(f)


class _Layout:
    """Variable and row indices of the node LPs of a query (the same for every node and case)."""

    def __init__(self, q: PairQuery):
        n = q.n
        tied = set(q.tied)
        self.x = np.arange(n)
        xp = np.arange(n)
        nxt = n
        for i in range(n):
            if i not in tied:
                xp[i] = nxt
                nxt += 1
        self.xp = xp
        self.p = [[], []]
        self.h = [[], []]
        for c in (0, 1):
            for W, b, relu in q.layers:
                k = W.shape[0]
                self.p[c].append(np.arange(nxt, nxt + k))
                nxt += k
                if relu:
                    self.h[c].append(np.arange(nxt, nxt + k))
                    nxt += k
                else:
                    self.h[c].append(None)
        self.z = (int(self.p[0][-1][0]), int(self.p[1][-1][0]))
        self.t = None
        if q.post == "label":
            self.t = nxt
            nxt += 1
        self.n_vars = nxt
        # ---- equality rows: p - W h_prev = b (both copies), one-hot sums of tied groups
        er, ec, ev, eb = [], [], [], []
        row = 0
        for c in (0, 1):
            prev = self.x if c == 0 else self.xp
            for k, (W, b, relu) in enumerate(q.layers):
                P = self.p[c][k]
                nz_r, nz_c = np.nonzero(W)
                rows = row + np.arange(W.shape[0])
                er += [rows, rows[nz_r]]
                ec += [P, prev[nz_c]]
                ev += [np.ones(W.shape[0]), -W[nz_r, nz_c]]
                eb.append(b)
                row += W.shape[0]
                prev = self.h[c][k] if relu else P
        for g in q.tied_groups:
            er.append(np.full(len(g), row))
            ec.append(np.asarray(g))
            ev.append(np.ones(len(g)))
            eb.append(np.ones(1))
            row += 1
        self.eq = (row, np.concatenate(er), np.concatenate(ec), np.concatenate(ev))
        self.b_eq = np.concatenate(eb)
        # ---- inequality rows
        ur, uc, uv = [], [], []
        row = 0
        self.relu_rows = [[], []]      # per copy per relu layer: (row of h >= p, row of triangle, index of s in uv)
        nv = 0
        for c in (0, 1):
            for k, (W, b, relu) in enumerate(q.layers):
                if not relu:
                    self.relu_rows[c].append(None)
                    continue
                P, H = self.p[c][k], self.h[c][k]
                m = len(P)
                ra = row + np.arange(m)                  # p - h <= 0
                rb = row + m + np.arange(m)              # h - s p <= r
                ur += [ra, ra, rb, rb]
                uc += [P, H, H, P]
                uv += [np.ones(m), -np.ones(m), np.ones(m), np.zeros(m)]
                s_at = nv + 3 * m + np.arange(m)         # where the -s coefficients sit in the value list
                nv += 4 * m
                self.relu_rows[c].append((ra, rb, s_at))
                row += 2 * m
        self.rel_rows = []
        for i, t in q.relaxed:
            ur += [np.array([row, row]), np.array([row + 1, row + 1])]
            uc += [np.array([self.x[i], self.xp[i]]), np.array([self.xp[i], self.x[i]])]
            uv += [np.array([1.0, -1.0]), np.array([1.0, -1.0])]
            nv += 4
            self.rel_rows.append((row, t))
            row += 2
        self.diff_rows = []                              # per relu layer: rows h - h' <= DU, h' - h <= -DL
        for k, (W, b, relu) in enumerate(q.layers):
            if not relu:
                continue
            H0, H1 = self.h[0][k], self.h[1][k]
            m = len(H0)
            r1 = row + np.arange(m)
            r2 = row + m + np.arange(m)
            ur += [r1, r1, r2, r2]
            uc += [H0, H1, H1, H0]
            uv += [np.ones(m), -np.ones(m), np.ones(m), -np.ones(m)]
            nv += 4 * m
            self.diff_rows.append((k, r1, r2))
            row += 2 * m
        z0, z1 = self.z
        self.zdiff_rows = (row, row + 1)
        ur += [np.array([row, row]), np.array([row + 1, row + 1])]
        uc += [np.array([z0, z1]), np.array([z1, z0])]
        uv += [np.array([1.0, -1.0]), np.array([1.0, -1.0])]
        nv += 4
        row += 2
        self.label_rows = None
        if q.post == "label":
            self.label_rows = (row, row + 1)               # t - z <= 0 ; t + z' <= 0
            ur += [np.array([row, row]), np.array([row + 1, row + 1])]
            uc += [np.array([self.t, z0]), np.array([self.t, z1])]
            uv += [np.array([1.0, -1.0]), np.array([1.0, 1.0])]
            nv += 4
            row += 2
        self.ub = (row, np.concatenate(ur), np.concatenate(uc), np.concatenate(uv))
        c = np.zeros(self.n_vars)
        if q.post == "label":
            c[self.t] = 1.0
        elif q.post == "logit":
            c[z0], c[z1] = 1.0, -1.0
        else:
            c[z0] = 1.0
        self.c = c


# ---------------------------------------------------------------------------------------------
# Nodes
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Decisions:
    """The branching decisions of a node: input bounds (var ``("x", i)`` / ``("xp", i)`` ->
    (lo, hi)), ReLU phases (``(copy, layer, neuron)`` -> 0 | 1) and output bounds (copy -> (lo, hi))."""

    inputs: dict = field(default_factory=dict)
    phases: dict = field(default_factory=dict)
    out: dict = field(default_factory=dict)
    pre: dict = field(default_factory=dict)      # (copy, layer, neuron) -> (lo, hi) proved by LP certificates


class NodeState(NamedTuple):
    empty: bool
    box: tuple | None            # (lo, hi) of every LP variable
    ibp: tuple | None            # per copy: [(pre_lo, pre_hi), ...]
    diff: list | None            # per layer: (D_lo, D_hi) of h - h' (post-activation) / z - z'
    measure_ub: float            # a rigorous upper bound of the measure by intervals
    target: Fraction | float     # the node's threshold for the LP objective (prob: g_low(z' lower bound))
    interval_ok: bool            # the interval bound proves the node


def _norm_var(q: PairQuery, var):
    kind = var[0]
    if kind == "xp" and int(var[1]) in set(q.tied):
        return ("x", int(var[1]))
    if kind in ("x", "xp"):
        return (kind, int(var[1]))
    if kind == "relu":
        return ("relu", int(var[1]), int(var[2]), int(var[3]))
    if kind == "out":
        return ("out", int(var[1]))
    raise ValueError(f"unknown split variable {var!r}")


def prob_threshold_low(c_lo: float, eps: Fraction) -> float:
    """A lower bound g of ``logit(sigmoid(c_lo) + eps)``: with ``z' >= c_lo``, a pair with
    ``sigmoid(z) - sigmoid(z') > eps`` has ``z > g``. ``+inf`` when ``sigmoid(c_lo) + eps >= 1``
    (no violation possible)."""
    s = _sigmoid_low(c_lo)
    e = float_down(eps)
    q = float(down(s + e))
    if q >= 1.0:
        return math.inf
    if q <= 0.0:
        return -math.inf
    a = math.log(q)                  # < 0
    b = math.log1p(-q)               # < 0
    m = 2.0 ** -40
    g = (a - abs(a) * m) - (b + abs(b) * m)
    return float(down(down(g) - 2.0 ** -1000))


def node_state(q: PairQuery, case: int, dec: Decisions) -> NodeState:
    """Boxes, interval bounds and the interval verdict of a node (certify's own computation)."""
    L = q.layout
    a, ap = q.cases[case]
    n = q.n
    xlo, xhi = q.lo.copy(), q.hi.copy()
    fpos = list(q.free)
    if fpos:
        xlo[fpos] = a
        xhi[fpos] = a
    for (kind, *rest), (l, h) in dec.inputs.items():
        if kind == "x":
            i = rest[0]
            xlo[i], xhi[i] = max(xlo[i], l), min(xhi[i], h)
    xlo = np.where(q.integer, np.ceil(xlo), xlo)
    xhi = np.where(q.integer, np.floor(xhi), xhi)
    plo, phi = xlo.copy(), xhi.copy()
    if fpos:
        plo[fpos] = ap
        phi[fpos] = ap
    for i, t in q.relaxed:
        plo[i], phi[i] = q.lo[i], q.hi[i]
        if ("xp", i) in dec.inputs:
            l, h = dec.inputs[("xp", i)]
            plo[i], phi[i] = max(plo[i], l), min(phi[i], h)
        plo[i] = max(plo[i], float(down(xlo[i] - t)))
        phi[i] = min(phi[i], float(up(xhi[i] + t)))
        xlo[i] = max(xlo[i], float(down(plo[i] - t)))
        xhi[i] = min(xhi[i], float(up(phi[i] + t)))
    plo = np.where(q.integer, np.ceil(plo), plo)
    phi = np.where(q.integer, np.floor(phi), phi)
    if np.any(xlo > xhi) or np.any(plo > phi):
        return _empty()
    ibps = []
    for c, (blo, bhi) in enumerate(((xlo, xhi), (plo, phi))):
        ph = {(k, j): v for (cc, k, j), v in dec.phases.items() if cc == c}
        cl = {(k, j): v for (cc, k, j), v in dec.pre.items() if cc == c}
        groups = q.onehot_groups
        r = rigorous_ibp(q.layers, blo, bhi, groups, ph, cl)
        if r is None:
            return _empty()
        r = [(lo_.copy(), hi_.copy()) for lo_, hi_ in r]
        if c in dec.out:
            ol, oh = dec.out[c]
            r[-1] = (np.maximum(r[-1][0], ol), np.minimum(r[-1][1], oh))
            if r[-1][0][0] > r[-1][1][0]:
                return _empty()
        ibps.append(r)
    # difference bounds between the copies (real arithmetic, rounded outward)
    dlo = np.zeros(n)
    dhi = np.zeros(n)
    if fpos:
        for k, i in enumerate(fpos):
            dq = Fraction(float(a[k])) - Fraction(float(ap[k]))
            dlo[i], dhi[i] = float_down(dq), float_up(dq)
    for i, t in q.relaxed:
        dlo[i] = max(-t, float(down(xlo[i] - phi[i])))
        dhi[i] = min(t, float(up(xhi[i] - plo[i])))
    diffs = []
    hlo0 = hhi0 = None
    for k, (W, b, relu) in enumerate(q.layers):
        Dlo, Dhi = interval_matmul(W, q._zeros[k], dlo, dhi)
        (l0, u0), (l1, u1) = ibps[0][k], ibps[1][k]
        Dlo = np.maximum(Dlo, down(l0 - u1))
        Dhi = np.minimum(Dhi, up(u0 - l1))
        if relu:
            act = (l0 >= 0) & (l1 >= 0)
            ina = (u0 <= 0) & (u1 <= 0)
            Hlo = np.where(act, Dlo, np.where(ina, 0.0, np.minimum(Dlo, 0.0)))
            Hhi = np.where(act, Dhi, np.where(ina, 0.0, np.maximum(Dhi, 0.0)))
            h0l, h0h = np.maximum(l0, 0), np.maximum(u0, 0)
            h1l, h1h = np.maximum(l1, 0), np.maximum(u1, 0)
            Hlo = np.maximum(Hlo, down(h0l - h1h))
            Hhi = np.minimum(Hhi, up(h0h - h1l))
            dlo, dhi = Hlo, Hhi
        else:
            dlo, dhi = Dlo, Dhi
        if np.any(dlo > dhi):
            return _empty()
        diffs.append((dlo, dhi))
    z0l, z0h = float(ibps[0][-1][0][0]), float(ibps[0][-1][1][0])
    z1l, z1h = float(ibps[1][-1][0][0]), float(ibps[1][-1][1][0])
    Dz_hi = float(diffs[-1][1][0])
    T = q.threshold
    if q.post == "label":
        # min(z, -z') <= (z - z') / 2 <= Dz_hi / 2 as well
        m = min(z0h, -z1l, float(up(Dz_hi / 2.0)))
        target = T
    elif q.post == "logit":
        m = min(float(up(z0h - z1l)), Dz_hi)
        target = T
    else:
        target = prob_threshold_low(z1l, T)
        m = z0h
        # sigmoid is 1/4-Lipschitz: sigmoid(z) - sigmoid(z') <= max(z - z', 0) / 4
        if _holds(float(up(max(Dz_hi, 0.0) / 4.0)), q.strict, T):
            target = math.inf
    ok = target == math.inf or _holds(m, q.strict, target)
    if not ok and np.all(xlo == xhi) and np.all(plo == phi):
        # a single pair: evaluate it in exact rational arithmetic and decide exactly (ties included)
        za, zb = _exact_logit(q.layers, xlo), _exact_logit(q.layers, plo)
        if q.post == "label":
            mq = min(za, -zb)
            ok = mq < T if q.strict else mq <= T
            m = float_up(mq)
        elif q.post == "logit":
            mq = za - zb
            ok = mq < T if q.strict else mq <= T
            m = float_up(mq)
        else:
            hi_ = float(up(_sigmoid_high(float_up(za)) - _sigmoid_low(float_down(zb))))
            ok = _holds(hi_, q.strict, T)
            if ok:
                target = math.inf
    # the box of every LP variable
    nv = L.n_vars
    vlo, vhi = np.zeros(nv), np.zeros(nv)
    vlo[L.x], vhi[L.x] = xlo, xhi
    vlo[L.xp], vhi[L.xp] = np.where(np.isin(np.arange(n), q.tied), xlo, plo), np.where(np.isin(np.arange(n), q.tied), xhi, phi)
    for c in (0, 1):
        for k, (W, b, relu) in enumerate(q.layers):
            l, u = ibps[c][k]
            vlo[L.p[c][k]], vhi[L.p[c][k]] = l, u
            if relu:
                vlo[L.h[c][k]], vhi[L.h[c][k]] = np.maximum(l, 0.0), np.maximum(u, 0.0)
    if L.t is not None:
        vlo[L.t], vhi[L.t] = min(z0l, -z1h), min(z0h, -z1l)
    return NodeState(False, (vlo, vhi), tuple(ibps), diffs, m, target, ok)


def _exact_logit(layers, x) -> Fraction:
    """The network's logit at one point in exact rational arithmetic."""
    h = [Fraction(float(v)) for v in x]
    for W, b, relu in layers:
        out = []
        for j in range(W.shape[0]):
            acc = Fraction(float(b[j]))
            row = W[j]
            for i in np.flatnonzero(row):
                if h[i]:
                    acc += Fraction(float(row[i])) * h[i]
            out.append(max(acc, Fraction(0)) if relu else acc)
        h = out
    return h[0]


def _empty() -> NodeState:
    return NodeState(True, None, None, None, -math.inf, math.inf, True)


def _holds(bound, strict: bool, target) -> bool:
    """Is ``bound < target`` (strict) / ``bound <= target``, exactly? (floats read bit for bit)"""
    if isinstance(target, float) and math.isfinite(target):
        target = Fraction(target)
    if target == math.inf:
        return bound != math.inf
    if bound == -math.inf:
        return True
    if bound == math.inf or (isinstance(target, float) and target == -math.inf) or math.isnan(bound):
        return False
    return decide(bound, "<" if strict else "<=", target)


def node_lp(q: PairQuery, case: int, dec: Decisions, state: NodeState | None = None) -> tuple[LinearProgram | None, NodeState]:
    """The LP of a node (see the module docstring) and its state; None for an empty node."""
    st = node_state(q, case, dec) if state is None else state
    if st.empty:
        return None, st
    L = q.layout
    vlo, vhi = st.box
    m_ub, ur, uc, uv = L.ub
    uv = uv.copy()
    b_ub = np.zeros(m_ub)
    for c in (0, 1):
        for k, (W, b, relu) in enumerate(q.layers):
            if not relu:
                continue
            ra, rb, s_at = L.relu_rows[c][k]
            l, u = st.ibp[c][k]
            # h - s p <= r: active (l >= 0): s = 1, r = 0 (with h >= p: h = p); inactive (u <= 0):
            # s = 0, r = 0 (h is boxed to 0); unstable: s = u / (u - l) rounded up, r = up(-s l)
            s = np.zeros(len(l))
            r = np.zeros(len(l))
            act = l >= 0
            uns = (l < 0) & (u > 0)
            s[act] = 1.0
            if np.any(uns):
                # s+ >= u / (u - l): divide by a lower bound of u - l and round up
                d_lo = down(u[uns] - l[uns])
                su = up(u[uns] / d_lo)
                s[uns] = su
                r[uns] = up(-(su * l[uns]))
            uv[s_at] = -s
            b_ub[rb] = r
    for row, t in L.rel_rows:
        b_ub[row] = t
        b_ub[row + 1] = t
    di = 0
    for k, (W, b, relu) in enumerate(q.layers):
        if not relu:
            continue
        kk, r1, r2 = L.diff_rows[di]
        di += 1
        Dlo, Dhi = st.diff[k]
        b_ub[r1] = Dhi
        b_ub[r2] = -Dlo
    Dlo, Dhi = st.diff[-1]
    b_ub[L.zdiff_rows[0]] = Dhi[0]
    b_ub[L.zdiff_rows[1]] = -Dlo[0]
    m_eq, er, ec, ev = L.eq
    lp = LinearProgram(L.c, SparseRows((m_ub, L.n_vars), ur, uc, uv), b_ub,
                       SparseRows((m_eq, L.n_vars), er, ec, ev), L.b_eq, vlo, vhi)
    return lp, st


# ---------------------------------------------------------------------------------------------
# Trees
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Split:
    """A binary split of a node. ``var``: ``("x", i)`` / ``("xp", i)`` (an input of copy 1 / 2; at
    ``at``: low ``<= at``, high ``>= high_at``, default ``at``, or ``floor(at) + 1`` for an integral
    input), ``("relu", copy, layer, neuron)`` (low: inactive ``p <= 0``, high: active ``p >= 0``) or
    ``("out", copy)`` (the logit of a copy: low ``<= at``, high ``>= high_at``)."""

    var: tuple
    at: float | None = None
    low: object = None
    high: object = None
    high_at: float | None = None


@dataclass(frozen=True, eq=False)
class Tighten:
    """Bounds on pre-activations proved by LP certificates over the node's own LP: ``bounds``
    ``{(copy, layer, neuron): (lo, hi)}`` and ``certs`` ``{(copy, layer, neuron, "lo" | "hi"):
    (y_ub, y_eq)}`` (multipliers of the node LP with objective ``-p`` / ``p``); every point of the
    node satisfies them, so the one ``child`` with the bounds added covers it."""

    bounds: dict
    certs: dict
    child: object = None


@dataclass(frozen=True, eq=False)
class Leaf:
    """A leaf: multipliers of its node LP (``y_ub``, ``y_eq``), or none when the node is empty or
    its interval bound already proves it."""

    y_ub: np.ndarray | None = None
    y_eq: np.ndarray | None = None


class Checked(NamedTuple):
    proof: Proof | None
    reason: str


def _children(q: PairQuery, dec: Decisions, s: Split):
    """The decisions of the two children of a split, or a reason why the split does not cover."""
    try:
        var = _norm_var(q, s.var)
    except (ValueError, IndexError, TypeError) as e:
        return None, f"bad split variable {s.var!r}: {e}"
    kind = var[0]
    if kind == "relu":
        _, c, k, j = var
        if c not in (0, 1) or not 0 <= k < len(q.layers) or not q.layers[k][2] or not 0 <= j < q.layers[k][0].shape[0]:
            return None, f"split on a neuron that is no ReLU: {var}"
        if s.at is not None or s.high_at is not None:
            return None, "a ReLU split has no split point"
        lo_d = Decisions(dec.inputs, {**dec.phases, (c, k, j): 0}, dec.out, dec.pre)
        hi_d = Decisions(dec.inputs, {**dec.phases, (c, k, j): 1}, dec.out, dec.pre)
        return (lo_d, hi_d), ""
    if s.at is None:
        return None, "a split needs a split point"
    at = float(s.at)
    if not math.isfinite(at):
        return None, f"split point {s.at!r} is not finite"
    if kind in ("x", "xp"):
        i = var[1]
        if not 0 <= i < q.n:
            return None, f"split on input {i} out of range"
        if kind == "xp" and i not in {j for j, _ in q.relaxed} and i not in q.free:
            return None, f"split on x'[{i}] of a tied input"
        integral = bool(q.integer[i])
        lo_end = math.floor(at) if integral else at
        allowed = lo_end + 1 if integral else at
        high_at = allowed if s.high_at is None else float(s.high_at)
        if not high_at <= allowed:
            return None, (f"the split of {var} at {at} does not cover its parent: the high side starts at "
                          f"{high_at} > {allowed}")
        cur = dec.inputs.get(var, (-math.inf, math.inf))
        lo_d = Decisions({**dec.inputs, var: (cur[0], min(cur[1], lo_end))}, dec.phases, dec.out, dec.pre)
        hi_d = Decisions({**dec.inputs, var: (max(cur[0], high_at), cur[1])}, dec.phases, dec.out, dec.pre)
        return (lo_d, hi_d), ""
    if kind == "out":
        c = var[1]
        if c not in (0, 1):
            return None, f"output split on copy {c}"
        high_at = at if s.high_at is None else float(s.high_at)
        if not high_at <= at:
            return None, f"the output split at {at} does not cover its parent (high side from {high_at})"
        cur = dec.out.get(c, (-math.inf, math.inf))
        lo_d = Decisions(dec.inputs, dec.phases, {**dec.out, c: (cur[0], min(cur[1], at))}, dec.pre)
        hi_d = Decisions(dec.inputs, dec.phases, {**dec.out, c: (max(cur[0], high_at), cur[1])}, dec.pre)
        return (lo_d, hi_d), ""
    return None, f"unknown split {var!r}"


def _tightened(q: PairQuery, case: int, dec: Decisions, t: Tighten):
    """The child decisions of a Tighten node, or a reason why its certificates fail."""
    st = node_state(q, case, dec)
    if st.empty:
        return Decisions(dec.inputs, dec.phases, dec.out, {**dec.pre, **{k: v for k, v in t.bounds.items()}}), ""
    lp, _ = node_lp(q, case, dec, st)
    L = q.layout
    new = dict(dec.pre)
    for key, (blo, bhi) in t.bounds.items():
        try:
            c, k, j = (int(v) for v in key)
            col = int(L.p[c][k][j])
        except (ValueError, TypeError, IndexError):
            return None, f"bad bound key {key!r}"
        blo, bhi = float(blo), float(bhi)
        cur = new.get((c, k, j), (-math.inf, math.inf))
        for side, val, sign in (("hi", bhi, 1.0), ("lo", blo, -1.0)):
            if (side == "hi" and val == math.inf) or (side == "lo" and val == -math.inf):
                continue
            cert = t.certs.get((c, k, j, side))
            if cert is None:
                return None, f"no certificate for the {side} bound of neuron {(c, k, j)}"
            obj = np.zeros(lp.n)
            obj[col] = sign
            ub = upper_bound(lp, cert[0], cert[1], c=obj)
            if not _holds(ub, False, Fraction(sign * val)):
                return None, f"the certificate bounds neuron {(c, k, j)} by {sign * ub}, not {val}"
        new[(c, k, j)] = (max(cur[0], blo), min(cur[1], bhi))
    return Decisions(dec.inputs, dec.phases, dec.out, new), ""


def check_leaf(q: PairQuery, case: int, dec: Decisions, leaf: Leaf) -> tuple[str | None, str]:
    """("empty" | "interval" | "lp", "") when the leaf is certified, else (None, reason)."""
    st = node_state(q, case, dec)
    if st.empty:
        return "empty", ""
    if st.interval_ok:
        return "interval", ""
    if leaf.y_ub is None and leaf.y_eq is None:
        return None, "a leaf with neither an empty box, an interval proof nor LP multipliers"
    lp, _ = node_lp(q, case, dec, st)
    try:
        ub = upper_bound(lp, leaf.y_ub, leaf.y_eq)
    except ValueError as e:
        return None, f"bad multipliers: {e}"
    if _holds(ub, q.strict, st.target):
        return "lp", ""
    # the same multipliers may prove the node's LP infeasible (a Farkas certificate)
    if upper_bound(lp, leaf.y_ub, leaf.y_eq, c=np.zeros(lp.n)) < 0:
        return "lp", ""
    return None, f"the LP certificate bounds the measure by {ub}, not {'<' if q.strict else '<='} {st.target}"


def check_tree(q: PairQuery, trees: Sequence, deadline: float | None = None) -> Checked:
    """Check a branch-and-bound tree per protected case (``trees[i]`` for ``q.cases[i]``); a
    ``bab-certificate`` Proof when every split covers its parent and every leaf is certified."""
    import time

    if len(trees) != len(q.cases):
        return Checked(None, f"{len(trees)} trees for {len(q.cases)} protected cases")
    counts = {"empty": 0, "interval": 0, "lp": 0}
    splits = {"x": 0, "xp": 0, "relu": 0, "out": 0}
    depth = 0
    for case, tree in enumerate(trees):
        stack = [(tree, Decisions(), 0)]
        while stack:
            if deadline is not None and time.monotonic() > deadline:
                return Checked(None, "the certificate check ran out of time")
            node, dec, d = stack.pop()
            depth = max(depth, d)
            if isinstance(node, Split):
                kids, why = _children(q, dec, node)
                if kids is None:
                    return Checked(None, f"case {case}: {why}")
                if node.low is None or node.high is None:
                    return Checked(None, f"case {case}: a split with a missing child does not cover its parent")
                splits[_norm_var(q, node.var)[0]] += 1
                stack.append((node.low, kids[0], d + 1))
                stack.append((node.high, kids[1], d + 1))
            elif isinstance(node, Tighten):
                child, why = _tightened(q, case, dec, node)
                if child is None:
                    return Checked(None, f"case {case}: {why}")
                if node.child is None:
                    return Checked(None, f"case {case}: a tightening without a child")
                splits["tighten"] = splits.get("tighten", 0) + 1
                stack.append((node.child, child, d + 1))
            elif isinstance(node, Leaf):
                kind, why = check_leaf(q, case, dec, node)
                if kind is None:
                    return Checked(None, f"case {case}, leaf at depth {d}: {why}")
                counts[kind] += 1
            else:
                return Checked(None, f"case {case}: {type(node).__name__} is neither a Split nor a Leaf")
    leaves = sum(counts.values())
    proof = _mint("bab-certificate", q.describe(), leaves=leaves, depth=depth, cases=len(q.cases),
                  lp_leaves=counts["lp"], interval_leaves=counts["interval"], empty_leaves=counts["empty"],
                  splits=splits, post=q.post, threshold=q.threshold, strict=q.strict)
    return Checked(proof, "")


# ---------------------------------------------------------------------------------------------
# Incremental certification: certify keeps the tree while an engine grows it
# ---------------------------------------------------------------------------------------------

class TreeBuilder:
    """A branch-and-bound tree certify keeps and checks as an engine grows it.

    The engine asks for the root of each case (:meth:`root`), for a node's state and LP
    (:meth:`state`, :meth:`lp`: certify's own), splits nodes (:meth:`split`: certify derives the
    children and checks coverage) and closes leaves (:meth:`close`: certify checks the leaf at
    once, with the engine's multipliers). :meth:`proof` mints a ``bab-certificate`` when every
    node of every case is closed. The finished tree (:meth:`trees`) can be re-checked from
    scratch with :func:`check_tree`.

    ``q.threshold`` None is *bound mode* (maximize): every leaf is closed with the bound its
    certificate gives, and the proof states that the measure is at most the largest of them."""

    def __init__(self, q: PairQuery, bound_mode: bool = False):
        self.q = q
        self.bound_mode = bound_mode
        self._nodes: dict[int, list] = {}      # id -> [case, decisions, depth, state, tree node or None]
        self._roots: list[int] = []
        self._open: set[int] = set()
        self._next = 0
        self._trees: dict[int, object] = {}
        self._links: dict[int, tuple] = {}     # id -> (parent id, side)
        self._kids: dict[int, tuple] = {}      # split id -> (low id, high id)
        self.counts = {"empty": 0, "interval": 0, "lp": 0}
        self.depth = 0
        self.bound = -math.inf                 # bound mode: the largest certified leaf bound
        for case in range(len(q.cases)):
            self._roots.append(self._new(case, Decisions(), 0, None))

    def _new(self, case, dec, depth, link) -> int:
        i = self._next
        self._next += 1
        self._nodes[i] = [case, dec, depth, None]
        self._open.add(i)
        if link is not None:
            self._links[i] = link
        self.depth = max(self.depth, depth)
        return i

    def roots(self) -> list[int]:
        return list(self._roots)

    def case(self, node: int) -> int:
        return self._nodes[node][0]

    def decisions(self, node: int) -> Decisions:
        return self._nodes[node][1]

    def state(self, node: int) -> NodeState:
        rec = self._nodes[node]
        if rec[3] is None:
            rec[3] = node_state(self.q, rec[0], rec[1])
        return rec[3]

    def lp(self, node: int) -> LinearProgram | None:
        rec = self._nodes[node]
        if len(rec) < 5:
            lp, _ = node_lp(self.q, rec[0], rec[1], self.state(node))
            rec.append(lp)
        return rec[4]

    def split(self, node: int, var, at=None, high_at=None) -> tuple[int, int]:
        if node not in self._open:
            raise ValueError(f"node {node} is not open")
        case, dec, depth = self._nodes[node][:3]
        s = Split(var, at, None, None, high_at)
        kids, why = _children(self.q, dec, s)
        if kids is None:
            raise ValueError(why)
        self._open.discard(node)
        self._trees[node] = s
        lo = self._new(case, kids[0], depth + 1, (node, 0))
        hi = self._new(case, kids[1], depth + 1, (node, 1))
        self._kids[node] = (lo, hi)
        del self._nodes[node][3:]              # free the parent's state and LP
        self._nodes[node].append(None)
        return lo, hi

    def tighten(self, node: int, bounds: dict, certs: dict) -> int:
        """Replace an open node by one child with pre-activation bounds its LP certificates prove
        (see :class:`Tighten`); raises ValueError when a certificate fails."""
        if node not in self._open:
            raise ValueError(f"node {node} is not open")
        case, dec, depth = self._nodes[node][:3]
        t = Tighten(dict(bounds), dict(certs))
        child_dec, why = _tightened(self.q, case, dec, t)
        if child_dec is None:
            raise ValueError(why)
        self._open.discard(node)
        self._trees[node] = t
        kid = self._new(case, child_dec, depth + 1, (node, 0))
        self._kids[node] = (kid,)
        del self._nodes[node][3:]
        self._nodes[node].append(None)
        return kid

    def leaf_bound(self, node: int, y_ub=None, y_eq=None, farkas: bool = False) -> float:
        """Bound mode: the certified upper bound of the measure over a node (``-inf`` if empty or
        if ``farkas`` and the multipliers prove its LP infeasible)."""
        st = self.state(node)
        if st.empty:
            return -math.inf
        b = _interval_measure(self.q, st)
        if y_ub is not None or y_eq is not None:
            lp = self.lp(node)
            if farkas:
                if upper_bound(lp, y_ub, y_eq, c=np.zeros(lp.n)) < 0:
                    return -math.inf
                return b
            b = min(b, _lp_measure(self.q, st, upper_bound(lp, y_ub, y_eq)))
        return b

    def close(self, node: int, y_ub=None, y_eq=None, farkas: bool | None = None) -> bool:
        """Close a node as a leaf: True when certify accepts it (empty, interval proof, or LP
        certificate with the multipliers), False (and the node stays open) otherwise.
        ``farkas``: try the multipliers as a bound (False), as a Farkas certificate (True) or
        both (None)."""
        if node not in self._open:
            raise ValueError(f"node {node} is not open")
        case, dec, depth = self._nodes[node][:3]
        leaf = Leaf(None if y_ub is None else np.asarray(y_ub, dtype=np.float64),
                    None if y_eq is None else np.asarray(y_eq, dtype=np.float64))
        if self.bound_mode:
            b = self.leaf_bound(node, leaf.y_ub, leaf.y_eq)
            if b != -math.inf and (leaf.y_ub is not None or leaf.y_eq is not None):
                b = min(b, self.leaf_bound(node, leaf.y_ub, leaf.y_eq, farkas=True))
            kind = "empty" if b == -math.inf else ("lp" if leaf.y_ub is not None or leaf.y_eq is not None else "interval")
            self.bound = max(self.bound, b)
        else:
            st = self.state(node)
            if st.empty:
                kind = "empty"
            elif st.interval_ok:
                kind = "interval"
            elif leaf.y_ub is None and leaf.y_eq is None:
                return False
            else:
                lp = self.lp(node)
                if farkas is not True and _holds(upper_bound(lp, leaf.y_ub, leaf.y_eq), self.q.strict, st.target):
                    kind = "lp"
                elif farkas is not False and upper_bound(lp, leaf.y_ub, leaf.y_eq, c=np.zeros(lp.n)) < 0:
                    kind = "lp"
                else:
                    return False
        self.counts[kind] += 1
        self._open.discard(node)
        self._trees[node] = leaf
        del self._nodes[node][3:]
        self._nodes[node].append(None)
        return True

    @property
    def open_nodes(self) -> set[int]:
        return set(self._open)

    def proof(self) -> Proof | None:
        """The ``bab-certificate`` when every node is closed (None otherwise)."""
        if self._open:
            return None
        splits = {"x": 0, "xp": 0, "relu": 0, "out": 0, "tighten": 0}
        for t in self._trees.values():
            if isinstance(t, Split):
                splits[_norm_var(self.q, t.var)[0]] += 1
            elif isinstance(t, Tighten):
                splits["tighten"] += 1
        leaves = sum(self.counts.values())
        detail = dict(leaves=leaves, depth=self.depth, cases=len(self.q.cases), lp_leaves=self.counts["lp"],
                      interval_leaves=self.counts["interval"], empty_leaves=self.counts["empty"], splits=splits,
                      post=self.q.post, strict=self.q.strict)
        if self.bound_mode:
            m = {"label": "min(z, -z')", "logit": "z - z'", "prob": "sigmoid(z) - sigmoid(z')"}[self.q.post]
            return _mint("bab-certificate", f"{m} <= {self.bound} for every pair of the box "
                                            f"({len(self.q.cases)} protected cases)", bound=self.bound, **detail)
        return _mint("bab-certificate", self.q.describe(), threshold=self.q.threshold, **detail)

    def trees(self) -> list:
        """The finished trees (one per case), as :class:`Split` / :class:`Leaf` objects."""
        def build(i):
            t = self._trees.get(i)
            if isinstance(t, Split):
                lo, hi = self._kids[i]
                return Split(t.var, t.at, build(lo), build(hi), t.high_at)
            if isinstance(t, Tighten):
                return Tighten(t.bounds, t.certs, build(self._kids[i][0]))
            return t
        import sys
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, 10 * self.depth + 1000))
        try:
            return [build(r) for r in self._roots]
        finally:
            sys.setrecursionlimit(old)


def _interval_measure(q: PairQuery, st: NodeState) -> float:
    """A rigorous upper bound of the measure over a node from its intervals."""
    if q.post in ("label", "logit"):
        return st.measure_ub
    z1l = float(st.ibp[1][-1][0][0])
    Dz = float(st.diff[-1][1][0])
    a = float(up(_sigmoid_high(st.measure_ub) - _sigmoid_low(z1l)))
    return min(a, float(up(max(Dz, 0.0) / 4.0)))


def _lp_measure(q: PairQuery, st: NodeState, ub: float) -> float:
    """The measure bound an LP bound gives (prob: ``sigmoid(max z) - sigmoid(min z')``)."""
    if q.post in ("label", "logit"):
        return ub
    z1l = float(st.ibp[1][-1][0][0])
    return float(up(_sigmoid_high(ub) - _sigmoid_low(z1l)))


def moved_threshold(post: str, eps, E: float, eps_strict: bool = False) -> tuple[Fraction, bool]:
    """The claim a proof about the real-arithmetic network must make so that the runtime (within
    E of it, see :func:`fairspec.certify.network.runtime_error_bound`) is fair, as
    ``(threshold, strict)`` for :class:`PairQuery` / ``prove_below``:

    * label (runtime violation ``z > 0 >= z'``): ``min(z, -z') < -E``;
    * logit / prob, fair when ``|out - out'| <= eps`` (``eps_strict``: ``< eps``): a violation has
      ``out - out' > eps`` (``>= eps``), so the claim is ``measure <= eps - 2E`` (``< eps - 2E``).

    ``eps`` is read as the spec writes it (:func:`fairspec.certify.exact.threshold_of`)."""
    e = Fraction(float(E))
    if e < 0:
        raise ValueError("E must be >= 0")
    if post == "label":
        return -e, True
    if post in ("logit", "prob"):
        return threshold_of(eps) - 2 * e, bool(eps_strict)
    raise ValueError(f"unknown post-condition {post!r}")
