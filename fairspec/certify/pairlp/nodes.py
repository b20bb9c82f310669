"""One node of a branch-and-bound tree over a :class:`~fairspec.certify.pairlp.query.PairQuery`:
its branching decisions, certify's own boxes and interval bounds (:func:`node_state`; with
:func:`prob_threshold_low` for ``prob``), and its LP (:func:`node_lp`) with both copies of the
network, the ReLU triangles rounded outward and the violated post-condition as the objective."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from fairspec.certify.exact import decide
from fairspec.certify.lp import LinearProgram, SparseRows
from fairspec.certify.boxes import relu_difference
from fairspec.certify.network import rigorous_ibp
from fairspec.certify.rounding import down, float_down, float_up, interval_matmul, up
from fairspec.certify.rounding import sigmoid_down as _sigmoid_low, sigmoid_up as _sigmoid_high
from fairspec.certify.pairlp.query import PairQuery


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
    pdiff: list | None = None    # per layer: (e_lo, e_hi) of p - p' (pre-activation difference)


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
    pdiffs = []
    for k, (W, b, relu) in enumerate(q.layers):
        if k == 0 and not q.relaxed:
            # without relaxed inputs the first layer's difference box is the case's alone (the free
            # inputs' a - a', 0 elsewhere): computed once per case, the same numbers every node
            got = q._cache.get(("d0", case))
            if got is None:
                got = q._cache[("d0", case)] = _layer_difference(W, q._zeros[k], dlo, dhi)
            Dlo, Dhi = got
        else:
            Dlo, Dhi = _layer_difference(W, q._zeros[k], dlo, dhi)
        (l0, u0), (l1, u1) = ibps[0][k], ibps[1][k]
        Dlo = np.maximum(Dlo, down(l0 - u1))
        Dhi = np.minimum(Dhi, up(u0 - l1))
        pdiffs.append((Dlo, Dhi))
        if relu:            # copy 0 minus copy 1: copy 0 is relu_difference's b, copy 1 its a
            dlo, dhi = relu_difference(Dlo, Dhi, l1, u1, l0, u0)
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
    tied = q._cache.get("tied_mask")
    if tied is None:                    # which inputs are tied: a constant of the query, computed once
        tied = q._cache["tied_mask"] = np.isin(np.arange(n), q.tied)
    vlo[L.xp], vhi[L.xp] = np.where(tied, xlo, plo), np.where(tied, xhi, phi)
    for c in (0, 1):
        for k, (W, b, relu) in enumerate(q.layers):
            l, u = ibps[c][k]
            vlo[L.p[c][k]], vhi[L.p[c][k]] = l, u
            if relu:
                vlo[L.h[c][k]], vhi[L.h[c][k]] = np.maximum(l, 0.0), np.maximum(u, 0.0)
    if L.t is not None:
        vlo[L.t], vhi[L.t] = min(z0l, -z1h), min(z0h, -z1l)
    return NodeState(False, (vlo, vhi), tuple(ibps), diffs, m, target, ok, pdiffs)


def _layer_difference(W, zeros, dlo, dhi):
    """Bounds of ``W d`` over the box ``[dlo, dhi]`` of ``d`` (interval product, its point rows exact)."""
    Dlo, Dhi = interval_matmul(W, zeros, dlo, dhi)
    _point_differences(W, dlo, dhi, Dlo, Dhi)
    return Dlo, Dhi


def _point_differences(W, dlo, dhi, Dlo, Dhi) -> None:
    """Rows of ``W d`` whose every term has a point difference (``dlo_i == dhi_i``, or weight 0) are one exact
    number, ``sum W_ji d_i`` in rationals, rounded outward in place of the interval's few ulps (exactly 0 when
    no term moves; exact itself when representable): a claim at a tie on a plateau (eps 0, or eps the largest
    difference a linear model's protected weight gives every pair) closes without splitting to points."""
    point = dlo == dhi
    rows = np.flatnonzero(~np.any((W != 0) & ~point[None, :], axis=1))
    if rows.size == 0:
        return
    moved = np.flatnonzero(point & (dlo != 0))          # the free inputs, typically one or two
    for j in rows:
        v = sum((Fraction(float(W[j, i])) * Fraction(float(dlo[i])) for i in moved if W[j, i] != 0), Fraction(0))
        Dlo[j], Dhi[j] = max(Dlo[j], float_down(v)), min(Dhi[j], float_up(v))


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


def _slopes(lo, hi):
    """``(s, r)`` with ``relu(e) <= s e + r`` for every ``e`` in ``[lo, hi]`` (rounded outward)."""
    s = np.zeros(len(lo))
    r = np.zeros(len(lo))
    s[lo >= 0] = 1.0
    uns = (lo < 0) & (hi > 0)
    if np.any(uns):
        su = up(hi[uns] / down(hi[uns] - lo[uns]))
        s[uns] = su
        r[uns] = up(-(su * lo[uns]))
    return s, r


def _first_shift(q: PairQuery, case: int):
    """``(d_lo, d_hi)``: float bounds of ``d = W[:, free] (a - a')`` (exact in Fractions, then rounded
    outward), the constant with ``p' = p - d`` in the first layer."""
    key = ("shift", case)
    got = q._cache.get(key)
    if got is None:
        a, ap = q.cases[case]
        W = q.layers[0][0]
        da = [(i, Fraction(float(a[k])) - Fraction(float(ap[k]))) for k, i in enumerate(q.free)]
        d = [sum((Fraction(float(W[j, i])) * v for i, v in da if v), Fraction(0)) for j in range(W.shape[0])]
        got = (np.array([float_down(v) for v in d]), np.array([float_up(v) for v in d]))
        q._cache[key] = got
    return got


def _hull_facets(l, u, dlo, dhi):
    """Two facets ``a p + b h + c h' <= r`` per neuron of the convex hull of
    ``{(p, relu(p), relu(p - d))}``, ``p`` in ``[l, u]``, ``d`` in ``[dlo, dhi]`` (its float
    enclosure), where the curve has four breakpoints (``l < min(0, d)``, ``u > max(0, d)``, ``d``
    of one sign): ``(n, r, ok)`` with ``n`` of shape (2, m, 3). The coefficients are any floats
    (the planes through ``(l, mid, u)`` for each middle breakpoint ``mid``, from float points); ``r``
    is a rigorous upper bound of ``n . P`` over the four breakpoints ``P`` (their coordinates
    enclosed in intervals, products and sums rounded up), so each row holds on the whole curve (the
    left side is linear on each piece). Rows where ``ok`` is False are unused."""
    l, u = np.asarray(l, float), np.asarray(u, float)
    ok = ((dlo > 0) | (dhi < 0)) & (l < np.minimum(dlo, 0.0)) & (u > np.maximum(dhi, 0.0))
    m = len(l)
    d = np.where(dlo > 0, dlo, dhi)
    z = np.zeros(m)
    pos = dlo > 0
    # the breakpoints' enclosures [lo, hi] per coordinate (p, h, h'), shape (4, m, 3)
    lo = np.empty((4, m, 3))
    hi = np.empty((4, m, 3))
    lo[0] = hi[0] = np.stack([l, z, z], axis=1)                            # p = l: (l, 0, 0)
    # p = 0: (0, 0, relu(-d)); p = d: (d, relu(d), 0)
    lo[1] = np.stack([z, z, np.where(pos, 0.0, -dhi)], axis=1)
    hi[1] = np.stack([z, z, np.where(pos, 0.0, -dlo)], axis=1)
    lo[2] = np.stack([dlo, np.where(pos, dlo, 0.0), z], axis=1)
    hi[2] = np.stack([dhi, np.where(pos, dhi, 0.0), z], axis=1)
    lo[3] = np.stack([u, u, down(u - dhi)], axis=1)                       # p = u: (u, u, u - d)
    hi[3] = np.stack([u, u, up(u - dlo)], axis=1)
    mid = 0.5 * (lo + hi)
    # middle breakpoints in order of p: d < 0 -> (d, 0), d > 0 -> (0, d)
    first = np.where(pos[:, None], mid[1], mid[2])
    second = np.where(pos[:, None], mid[2], mid[1])
    ns = []
    for a_, b_ in ((first, second), (second, first)):
        n = np.cross(a_ - mid[0], mid[3] - mid[0])
        flip = np.einsum("ij,ij->i", n, b_ - mid[0]) > 0
        n[flip] = -n[flip]
        sc = np.max(np.abs(n), axis=1)
        good = np.isfinite(sc) & (sc > 0)
        n = np.where(good[:, None], n / np.where(good, sc, 1.0)[:, None], 0.0)
        ok = ok & good
        ns.append(n)
    n = np.stack(ns)                                                       # (2, m, 3)
    t = up(np.maximum(n[:, None] * lo[None], n[:, None] * hi[None]))      # (2, 4, m, 3)
    r = up(up(t[..., 0] + t[..., 1]) + t[..., 2]).max(axis=1)             # (2, m)
    ok = ok & np.all(np.isfinite(r), axis=0)
    return n, r, ok


def _coupling(q: PairQuery, case: int, st: NodeState, uv: np.ndarray, b_ub: np.ndarray) -> None:
    """The coefficients and right-hand sides of the coupling rows of a node (see ``_Layout``)."""
    L = q.layout
    for k, r1, r2, s1_at, s2_at in L.coupling_rows:
        el, eu = st.pdiff[k]
        s1, t1 = _slopes(el, eu)                 # relu(e) <= s1 e + t1
        s2, t2 = _slopes(-eu, -el)               # relu(-e) <= -s2 e + t2
        m = len(el)
        uv[s1_at[:m]] = -s1
        uv[s1_at[m:]] = s1
        b_ub[r1] = t1
        uv[s2_at[:m]] = s2
        uv[s2_at[m:]] = -s2
        b_ub[r2] = t2
    if L.hull_rows is not None:
        rows, (pa, ha, hpa) = L.hull_rows
        dlo, dhi = _first_shift(q, case)
        (l0, u0), (l1, u1) = st.ibp[0][0], st.ibp[1][0]
        # p ranges over copy 0's bounds and over copy 1's shifted back by d (outward)
        lo = np.maximum(l0, down(l1 + dlo))
        hi = np.minimum(u0, up(u1 + dhi))
        n, r, ok = _hull_facets(lo, hi, dlo, dhi)
        m = len(lo)
        for t in (0, 1):
            sel = np.flatnonzero(ok)
            i = t * m + sel
            uv[pa[i]], uv[ha[i]], uv[hpa[i]] = n[t, sel, 0], n[t, sel, 1], n[t, sel, 2]
            b_ub[rows[i]] = r[t, sel]


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
    if q.coupling:
        _coupling(q, case, st, uv, b_ub)
    Dlo, Dhi = st.diff[-1]
    b_ub[L.zdiff_rows[0]] = Dhi[0]
    b_ub[L.zdiff_rows[1]] = -Dlo[0]
    m_eq, er, ec, ev = L.eq
    lp = LinearProgram(L.c, SparseRows((m_ub, L.n_vars), ur, uc, uv), b_ub,
                       SparseRows((m_eq, L.n_vars), er, ec, ev), L.b_eq, vlo, vhi)
    return lp, st
