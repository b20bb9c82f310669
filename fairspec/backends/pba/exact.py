"""One case as a linear model: the paper's LP relaxation, or the exact MILP.

Variables: the offsets ``d`` (integral for int features in the MILP), and per copy
and ReLU layer the outputs ``h`` of the neurons the bounds leave alive (a neuron with
``u <= 0`` is the constant 0). Rows, with the pre-activation ``z = W h_prev + b``
(``z = C + A d`` in the first layer):

* stably active (or no ReLU): ``h = z``;
* unstable, LP (paper 004, App. A.2, after Ehlers 2017): ``h >= z``, ``h >= 0``,
  ``h <= u (z - l) / (u - l)``;
* unstable, MILP: the same plus a binary ``a`` with ``h <= z - l (1 - a)``,
  ``h <= u a`` (exact for ``l <= z <= u``).

The last layer is the expression ``g = w h + b`` of each copy. Objective: minimise
``f = tau sigma (g(x) - g(x'))``; Eq. (3) of the paper as ``sigma g >= 0`` on both
copies. The MILP adds ``f <= eps`` and stops at its first solution: infeasible means
``min f > eps`` (proved), a solution is a candidate witness.

Built on :class:`fairspec.backends.milp.model.LinModel` and solved by
``solve_highs`` / ``solve_scip``.
"""

from __future__ import annotations

import math

import numpy as np

from fairspec.backends.milp.model import ENGINES, LinModel
from fairspec.backends.pba.relax import CopyBounds
from fairspec.backends.pba.twin import TwinCases

__all__ = ["encode_case", "solve_case_lp", "solve_case_milp"]

INF = math.inf
CUT = 1e-6          # the MILP proves min f > CUT
LP_SLACK = 1e-6     # relative slack on an LP optimum before it counts as a bound


def _vars(lm: LinModel, lb, ub, integer=False, name="v") -> np.ndarray:
    start = lm.n_vars
    k = len(lb)
    lm.lb.extend(float(v) for v in lb)
    lm.ub.extend(float(v) for v in ub)
    lm.is_int.extend([bool(integer)] * k)
    lm.names.extend(f"{name}{i}" for i in range(k))
    return np.arange(start, start + k)


def _row(lm: LinModel, idx, vals, lo=-INF, hi=INF):
    """Append a row whose indices are already sorted and unique."""
    vals = np.asarray(vals, dtype=np.float64)
    keep = vals != 0
    lm.rows.append((np.asarray(idx, dtype=np.int64)[keep], vals[keep], float(lo), float(hi)))


def _copy(lm, tc: TwinCases, C, b: CopyBounds, i: int, dvars, milp: bool, tag: str):
    """Encode one copy; returns (index array, coefficient array, constant) of g."""
    pidx, pW_cols = dvars, None          # the previous layer's live variables
    for j in range(tc.depth):
        if j == 0:
            W, bias = tc.A, C[i]
        else:
            layer = tc.layers[j - 1]
            W, bias = layer.W, layer.b
        Wl = W[:, pW_cols] if pW_cols is not None else W
        if j == tc.depth - 1:                       # the output expression g (one row)
            return pidx, Wl[0].copy(), float(bias[0])
        l, u = b.l[j][i], b.u[j][i]
        relu = tc.layer_relu(j)
        if relu:
            alive = u > 0
        else:
            alive = np.ones(len(l), dtype=bool)
        rows_alive = np.flatnonzero(alive)
        lo_h = np.where(relu, np.maximum(l, 0.0), l)[rows_alive]
        hi_h = np.where(relu, np.maximum(u, 0.0), u)[rows_alive]
        h = _vars(lm, lo_h, hi_h, name=f"{tag}h{j}_")
        unstable = relu & (l < 0) & (u > 0)
        un_rows = [r for r in rows_alive if unstable[r]]
        a = _vars(lm, np.zeros(len(un_rows)), np.ones(len(un_rows)), integer=True, name=f"{tag}a{j}_") if milp else None
        k_un = 0
        for pos, r in enumerate(rows_alive):
            w = Wl[r]
            hv = h[pos]
            idx = np.append(pidx, hv)
            if not unstable[r]:
                _row(lm, idx, np.append(-w, 1.0), bias[r], bias[r])          # h = z
                continue
            lr, ur = l[r], u[r]
            _row(lm, idx, np.append(-w, 1.0), bias[r], INF)                  # h >= z
            s = ur / (ur - lr)
            _row(lm, idx, np.append(-s * w, 1.0), -INF, s * (bias[r] - lr))  # h <= u (z - l) / (u - l)
            if milp:
                av = a[k_un]
                _row(lm, np.append(idx, av), np.concatenate([-w, [1.0, -lr]]), -INF, bias[r] - lr)  # h <= z - l(1-a)
                _row(lm, [hv, av], [1.0, -ur], -INF, 0.0)                     # h <= u a
            k_un += 1
        pidx, pW_cols = h, rows_alive
    raise AssertionError("unreachable")


def encode_case(tc: TwinCases, i: int, bx: CopyBounds, bp: CopyBounds | None, *, milp: bool = False,
                objective: str = "pba", predictions: bool = True, cut: float | None = None):
    """The linear model of case i. ``objective``: ``"pba"`` (f over both copies),
    ``"robust_x"`` / ``"robust_p"`` (``sigma g`` of one copy alone, for robustness
    accuracy). Returns (model, offset variable indices)."""
    lm = LinModel()
    dvars = _vars(lm, tc.lo[i], tc.hi[i], name="d")
    if milp:
        for k in np.flatnonzero(tc.integer):
            lm.is_int[dvars[k]] = True
    sg = float(tc.sigma[i])
    if objective in ("robust_x", "robust_p"):
        C, b = (tc.C, bx) if objective == "robust_x" else (tc.Cp, bp)
        idx, w, c = _copy(lm, tc, C, b, i, dvars, milp, "x")
        lm.set_objective({int(k): sg * v for k, v in zip(idx, w)}, maximize=False, const=sg * c)
        if cut is not None:
            _row_sum(lm, [(idx, sg * w)], -INF, cut - sg * c)
        return lm, dvars
    gx = _copy(lm, tc, tc.C, bx, i, dvars, milp, "x")
    gp = _copy(lm, tc, tc.Cp, bp, i, dvars, milp, "p")
    coef = float(tc.tau[i]) * sg
    terms: dict[int, float] = {}
    for idx, w, sign in ((gx[0], gx[1], 1.0), (gp[0], gp[1], -1.0)):
        for k, v in zip(idx, w):
            terms[int(k)] = terms.get(int(k), 0.0) + coef * sign * v
    const = coef * (gx[2] - gp[2])
    lm.set_objective(terms, maximize=False, const=const)
    if predictions:
        for idx, w, c in (gx, gp):
            _row_sum(lm, [(idx, sg * w)], -sg * c, INF)
    if cut is not None:
        keys = np.array(sorted(terms), dtype=np.int64)
        _row(lm, keys, [terms[int(k)] for k in keys], -INF, cut - const)
    return lm, dvars


def _row_sum(lm, parts, lo, hi):
    idx = np.concatenate([np.asarray(p[0], dtype=np.int64) for p in parts])
    val = np.concatenate([np.asarray(p[1], dtype=np.float64) for p in parts])
    lm.row(idx, val, lo, hi)


def _offsets(x, dvars, tc: TwinCases, i: int):
    if x is None:
        return None
    d = np.asarray(x)[dvars]
    return tc.round_offsets(d[None, :], [i])[0]


def solve_case_lp(tc, i, bx, bp, *, objective="pba", engine="highs", time_limit=None):
    """LP relaxation: (sound lower bound of min f or None, the LP's offsets or None)."""
    lm, dvars = encode_case(tc, i, bx, bp, milp=False, objective=objective)
    out = ENGINES[engine](lm, time_limit=time_limit)
    if out.status != "optimal" or out.objective is None:
        return None, None, out
    v = float(out.objective)
    return v - LP_SLACK * (1.0 + abs(v)), _offsets(out.x, dvars, tc, i), out


def solve_case_milp(tc, i, bx, bp, *, objective="pba", engine="highs", time_limit=10.0, cut=CUT):
    """Exact: ('proved' | 'candidate' | 'timeout' | 'error', offsets or None, outcome)."""
    lm, dvars = encode_case(tc, i, bx, bp, milp=True, objective=objective, cut=cut)
    out = ENGINES[engine](lm, time_limit=time_limit, first_solution=True)
    if out.status == "infeasible":
        return "proved", None, out
    if out.x is not None:
        return "candidate", _offsets(out.x, dvars, tc, i), out
    if out.status == "timeout":
        return "timeout", None, out
    return "error", None, out
