"""PBA (paper 004) on a tree ensemble: every point decided exactly by its leaf combinations.

A case is a point ``x``, its counterfactual ``x'`` and the offset box ``D`` of the moving
features (``x + D`` and ``x' + D`` move together). Over the box, each tree of each copy
reaches a set of leaves; the box is split at the offset where a tree's topmost straddling
split changes sides (on whole-number offsets exactly the last whole number that still goes
left) until every tree of both copies reaches one leaf. Each such *cell* has constant outputs,
so the case's questions are answered cell by cell with no relaxation:

* observed setting: ``sigma * (g(x + D) - g(x' + D)) > 0`` on every cell where both are
  classified as the true class (``sigma = +1`` for class 1, ``-1`` for class 0; ``g`` is the
  decision margin: ``S - 1/2`` for a probability-averaging forest, the logit ``S`` for a
  boosted model — the sign is what matters); refuted by a cell breaking it (its offset is the
  witness, replayed on the real model by the caller's ``replay``);
* flipped setting: the same with ``x`` and ``x'`` exchanged;
* robustness (RB) of ``x`` and of ``x'``: the decision is the true class on every cell.

A case with more than ``max_cells`` cells is ``unknown`` (a count, never a time).
"""

from __future__ import annotations

import time

import numpy as np

from fairspec.models.trees import Tree, TreeEnsemble

__all__ = ["analyse_trees", "cells"]


def _left(t: Tree, k: int, v: float) -> bool:
    if t.f32:
        v = float(np.float32(v))
    c = t.threshold[k]
    return v < c if t.strict else v <= c


def _reach(t: Tree, u: np.ndarray, pos: dict, s, dlo, dhi):
    """Leaves of tree t reachable from base input u over the offset box, and the topmost
    straddling split as (node, offset index) or None."""
    leaves, first = [], None
    stack = [0]
    L, R, F = t.left, t.right, t.feature
    while stack:
        k = stack.pop()
        if L[k] < 0:
            leaves.append(k)
            continue
        f = int(F[k])
        j = pos.get(f)
        if j is None:
            stack.append(int(L[k]) if _left(t, k, u[f]) else int(R[k]))
            continue
        gl = _left(t, k, u[f] + s[j] * dlo[j])
        gr = not _left(t, k, u[f] + s[j] * dhi[j])
        if gl and gr and first is None:
            first = (k, j)
        if gr:
            stack.append(int(R[k]))
        if gl:
            stack.append(int(L[k]))
    return leaves, first


def _cut(t: Tree, k: int, base: float, s: float, lo: float, hi: float, integer: bool) -> tuple[float, float]:
    """(largest offset still going left, smallest going right) inside [lo, hi]."""
    if integer:
        a, b = int(np.ceil(lo)), int(np.floor(hi))          # _left(a) true, _left(b) false
        while b - a > 1:
            mid = (a + b) // 2
            if _left(t, k, base + s * mid):
                a = mid
            else:
                b = mid
        return float(a), float(b)
    d = (t.threshold[k] - base) / s
    d = min(max(d, lo), hi)
    return d, float(np.nextafter(d, np.inf))


def cells(ens: TreeEnsemble, U: np.ndarray, Up: np.ndarray, cols, scale, lo, hi, integer, max_cells: int = 4096,
          walk=None, fixed=None):
    """Every cell of one case: a list of (offset point D, S(x + D), S(x' + D)); raises
    OverflowError past ``max_cells``. ``walk``: indices of the trees to walk (default all);
    ``fixed``: the leaf values of the others on x and on x' (two arrays over all trees)."""
    pos = {int(c): j for j, c in enumerate(cols)}
    s = np.asarray(scale, dtype=np.float64)
    walk = range(len(ens.trees)) if walk is None else walk
    base_vals = (np.zeros(len(ens.trees)), np.zeros(len(ens.trees))) if fixed is None else fixed
    out = []
    stack = [(np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64))]
    while stack:
        dlo, dhi = stack.pop()
        split = None
        sums = []
        for u, vals in ((U, base_vals[0]), (Up, base_vals[1])):
            vals = vals.copy()
            for ti in walk:
                t = ens.trees[ti]
                leaves, first = _reach(t, u, pos, s, dlo, dhi)
                if first is not None and split is None:
                    split = (t, first[0], first[1], u)
                vals[ti] = t.value[leaves[0]]
            sums.append(ens.combine(vals))
        sx, sp = sums
        if split is None:
            D = np.where(integer, np.ceil(dlo - 1e-9), (dlo + dhi) / 2.0)
            out.append((D, sx, sp))
            if len(out) > max_cells:
                raise OverflowError
            continue
        t, k, j, u = split
        a, b = _cut(t, k, float(u[int(t.feature[k])]), float(s[j]), dlo[j], dhi[j], bool(integer[j]))
        left_hi = dhi.copy()
        left_hi[j] = a
        right_lo = dlo.copy()
        right_lo[j] = b
        stack.append((right_lo, dhi))
        stack.append((dlo, left_hi))
    return out


def analyse_trees(cs, *, score, replay, max_cells: int = 4096, rb_rows=None):
    """The tree counterpart of :func:`fairspec.backends.pba.core.analyse` (same Analysis)."""
    from fairspec.backends.pba.core import Analysis, keep_replayed

    t0 = time.perf_counter()
    ens: TreeEnsemble = cs.net
    P, m = cs.P, len(cs.cols)
    c0 = ens.threshold
    g_x, g_p = score(cs.U), score(cs.Up)
    pred_x, pred_p = (g_x > 0).astype(int), (g_p > 0).astype(int)
    cls = np.asarray(cs.cls, dtype=int)
    eligible = (pred_x == cls) & (pred_p == cls)
    sigma = np.where(cls == 1, 1.0, -1.0)
    observed = np.full(P, "excluded", dtype=object)
    flipped = np.full(P, "excluded", dtype=object)
    stage_obs = np.full(P, "", dtype=object)
    stage_flip = np.full(P, "", dtype=object)
    f_obs = np.full(P, np.nan)
    rb_x = np.full(P, "refuted", dtype=object)
    rb_p = np.full(P, "refuted", dtype=object)
    wit_obs, wit_flip = {}, {}
    D_obs, D_flip = np.zeros((P, m)), np.zeros((P, m))
    too_many = 0
    integer = np.asarray(cs.integer, dtype=bool)
    # trees that read no moving input reach one leaf per copy: summed once for all cases
    moving = {int(c) for c in cs.cols}
    walk = [k for k, t in enumerate(ens.trees) if t.features() & moving]
    fx = np.stack([t.value[t.apply(cs.U)] for t in ens.trees], axis=1) if ens.trees else np.zeros((P, 0))
    fp = np.stack([t.value[t.apply(cs.Up)] for t in ens.trees], axis=1) if ens.trees else np.zeros((P, 0))
    for i in range(P):
        try:
            cl = cells(ens, cs.U[i], cs.Up[i], cs.cols, cs.scale, cs.lo[i], cs.hi[i], integer, max_cells,
                       walk=walk, fixed=(fx[i], fp[i]))
        except OverflowError:
            too_many += 1
            for arr in (observed, flipped):
                if eligible[i]:
                    arr[i] = "unknown"
            stage_obs[i] = stage_flip[i] = "cells"
            rb_x[i] = rb_p[i] = "unknown" if eligible[i] else "refuted"
            continue
        Sx = np.array([c[1] for c in cl])
        Sp = np.array([c[2] for c in cl])
        dx = ((Sx - c0) > 0).astype(int)
        dp = ((Sp - c0) > 0).astype(int)
        rb_x[i] = "proved" if np.all(dx == cls[i]) else "refuted"
        rb_p[i] = "proved" if np.all(dp == cls[i]) else "refuted"
        if not eligible[i]:
            continue
        valid = (dx == cls[i]) & (dp == cls[i])
        f = sigma[i] * (Sx - Sp)
        fv = np.where(valid, f, np.inf)
        k = int(np.argmin(fv))
        f_obs[i] = float(fv[k])
        if fv[k] > 0:
            observed[i], stage_obs[i] = "proved", "trees"
        else:
            observed[i], stage_obs[i] = "refuted", "trees"
            D_obs[i] = cl[k][0]
        gv = np.where(valid, f, -np.inf)
        k = int(np.argmax(gv))
        if gv[k] < 0:
            flipped[i], stage_flip[i] = "proved", "trees"
        else:
            flipped[i], stage_flip[i] = "refuted", "trees"
            D_flip[i] = cl[k][0]
    notes = []
    for side, status, stage, wit, D in ((1.0, observed, stage_obs, wit_obs, D_obs),
                                        (-1.0, flipped, stage_flip, wit_flip, D_flip)):
        idx = np.flatnonzero(status == "refuted")
        keep_replayed(cs, replay, side, idx, D[idx], status, stage, wit, notes)
    if too_many:
        notes.append(f"{too_many} points have more than {max_cells} leaf combinations in their neighbourhood "
                     "and were left unknown")
    if rb_rows is not None:                      # as analyse(): RB of x on the chosen rows only
        rb_x = rb_x[np.asarray(rb_rows, dtype=np.int64)]
    seconds = {"trees": round(time.perf_counter() - t0, 4), "total": round(time.perf_counter() - t0, 4)}
    counts = {"cases": P, "eligible": int(eligible.sum()), "stages": {"trees": int(eligible.sum())}}
    return Analysis(eligible, pred_x, pred_p, observed, flipped, stage_obs, stage_flip, wit_obs, wit_flip, f_obs,
                    rb_x, rb_p, seconds, counts, notes)
