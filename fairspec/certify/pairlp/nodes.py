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
