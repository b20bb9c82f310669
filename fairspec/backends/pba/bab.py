"""Branch and bound over the offset box, batched over every open case at once.

The neighbourhood has few dimensions (one per moving numerical feature), so splitting
the *input* box is the cheap way to tighten the relaxation: each round bounds all
current sub-boxes of all cases with the batched linear relaxation
(:mod:`fairspec.backends.pba.relax`, with the multipliers of Eq. (3)), then

* drops a sub-box whose lower bound is > 0 (that part is proved), or where a copy
  provably leaves the true class (``sup sigma g < 0``: outside Eq. (3)'s set);
* tries the sub-box's centre and the corner minimising the linear bound as witnesses
  (``f <= 0`` with both predictions kept);
* splits the rest along the dimension with the largest ``(|a| + |a0|) x width``, where
  ``a`` are the offsets' coefficients of the best bound and ``a0`` those of the bound of
  ``f`` alone (integral dimensions at whole numbers; a sub-box reduced to one integral
  point that is neither proved nor a witness is handed on).

A case is proved when no sub-box is left, refuted at its first witness, and handed on
(unknown) when it exceeds its sub-box budget or the time budget. Once no ReLU of a
sub-box is unstable its bound is exact, so on continuous boxes the search only stalls
where the minimum is 0 to within round-off or the prediction constraint cuts the box.

``objective="robust_x"`` / ``"robust_p"`` bounds ``sigma g`` of one copy instead (the
robustness accuracy of the RB metric; no prediction constraint).
"""

from __future__ import annotations

import time

import numpy as np

from fairspec.backends.pba.relax import LAMBDAS, copy_bounds, joint_lower, objective_lower
from fairspec.backends.pba.twin import TwinCases

__all__ = ["branch_and_bound"]

EPS = 1e-9
CHUNK = 4096


def _bounds(tc: TwinCases, case, lo, hi, objective, lambdas):
    """Per sub-box: lower bound, feasibility (sup sigma g >= 0 on both copies), the corner the
    bound points at, split weights (k, m)."""
    sub = TwinCases(tc.A, tc.C[case], tc.Cp[case], tc.relu0, tc.layers, lo, hi, tc.integer, tc.sigma[case],
                    tc.tau[case])
    if objective == "pba":
        bx = copy_bounds(sub, sub.C)
        bp = copy_bounds(sub, sub.Cp)
        lb, L, L0 = objective_lower(sub, bx, bp, lambdas=lambdas, with_coef=True)
        sup_x = np.where(sub.sigma > 0, bx.u[-1][:, 0], -bx.l[-1][:, 0])
        sup_p = np.where(sub.sigma > 0, bp.u[-1][:, 0], -bp.l[-1][:, 0])
        feasible = (sup_x >= 0) & (sup_p >= 0)
        weight = np.abs(L) + np.abs(L0)
    else:
        C = sub.C if objective == "robust_x" else sub.Cp
        b = copy_bounds(sub, C)
        one = TwinCases(sub.A, C, C, sub.relu0, sub.layers, lo, hi, sub.integer, sub.sigma, sub.tau)
        zero = np.zeros((len(case), 1))
        lbs, Ls = joint_lower(one, b, b, sub.sigma[:, None], zero)
        lb = np.maximum(lbs[:, 0], np.where(sub.sigma > 0, b.l[-1][:, 0], -b.u[-1][:, 0]))
        L = Ls[:, 0]
        feasible = np.ones(len(case), dtype=bool)
        weight = np.abs(L)
    corner = np.where(L > 0, lo, hi)
    return lb, feasible, corner, weight


def _witnesses(tc, case, cand, objective):
    """Which candidate offsets (k, m) are witnesses, with the objective value there."""
    c = tc.round_offsets(cand, case)
    cls1 = tc.sigma[case] > 0
    if objective == "pba":
        f, ax, ap = tc.pair(c, case)
        keep = np.where(cls1, (ax > 0) & (ap > 0), (ax >= 0) & (ap >= 0))
        return c, keep & (f <= 0), f
    C = tc.C if objective == "robust_x" else tc.Cp
    sg = tc.sigma[case] * tc.g(C[case], c)
    return c, np.where(cls1, sg <= 0, sg < 0), sg


def branch_and_bound(tc: TwinCases, idx, *, time_limit: float = 10.0, max_boxes: int = 4096,
                     deadline: float | None = None, objective: str = "pba", lambdas=LAMBDAS):
    """Decide cases ``idx`` of ``tc``: returns (status (k,) proved|refuted|unknown, offsets (k, m),
    objective at the witness (k,), sub-boxes used (k,))."""
    idx = np.asarray(idx, dtype=np.int64)
    k, m = len(idx), tc.m
    status = np.full(k, "unknown", dtype=object)
    D = np.full((k, m), np.nan)
    fw = np.full(k, np.nan)
    used = np.zeros(k, dtype=np.int64)
    if k == 0:
        return status, D, fw, used
    t_end = time.perf_counter() + time_limit
    if deadline is not None:
        t_end = min(t_end, deadline)
    own = np.arange(k)                      # the frontier: owner (position in idx) and box
    lo = tc.lo[idx].copy()
    hi = tc.hi[idx].copy()
    done = np.zeros(k, dtype=bool)          # refuted
    gave_up = np.zeros(k, dtype=bool)
    ints = tc.integer
    while len(own) and time.perf_counter() < t_end:
        case = idx[own]
        parts = [_bounds(tc, case[s:s + CHUNK], lo[s:s + CHUNK], hi[s:s + CHUNK], objective, lambdas)
                 for s in range(0, len(own), CHUNK)]
        lb, feasible, corner, weight = (np.concatenate([p[q] for p in parts]) for q in range(4))
        closed = ~feasible | (lb > EPS)
        for cand in ((lo + hi) / 2, corner):
            sel = np.flatnonzero(~closed & ~done[own])
            if not len(sel):
                break
            c, hit, f = _witnesses(tc, case[sel], cand[sel], objective)
            for j in np.flatnonzero(hit):
                o = own[sel[j]]
                if not done[o]:
                    status[o], D[o], fw[o], done[o] = "refuted", c[j], f[j], True
        alive = ~closed & ~done[own]
        width = hi - lo
        splittable = np.where(ints, width >= 1, width > 1e-12)
        point = ~splittable.any(axis=1)
        gave_up[own[alive & point]] = True   # an integral point neither proved nor a witness: hand it on
        alive &= ~point & ~gave_up[own]
        own, lo, hi, weight = own[alive], lo[alive], hi[alive], weight[alive]
        if not len(own):
            break
        used += np.bincount(own, minlength=k)
        over = used > max_boxes
        if over.any():
            gave_up |= over
            keep = ~over[own]
            own, lo, hi, weight = own[keep], lo[keep], hi[keep], weight[keep]
            if not len(own):
                break
        width = hi - lo
        score = np.where(np.where(ints, width >= 1, width > 1e-12), weight * width + 1e-12 * width, -1.0)
        dim = np.argmax(score, axis=1)
        r = np.arange(len(own))
        mid = (lo[r, dim] + hi[r, dim]) / 2
        mid = np.where(ints[dim], np.floor(mid), mid)
        lo2, hi2 = lo.copy(), hi.copy()
        hi[r, dim] = mid
        lo2[r, dim] = np.where(ints[dim], mid + 1, mid)
        own = np.concatenate([own, own])
        lo = np.concatenate([lo, lo2])
        hi = np.concatenate([hi, hi2])
    remaining = np.zeros(k, dtype=bool)
    remaining[np.unique(own)] = True
    proved = ~done & ~gave_up & ~remaining
    status[proved] = "proved"
    return status, D, fw, used
