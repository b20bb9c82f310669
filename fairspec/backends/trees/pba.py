"""PBA (paper 004) on a tree ensemble: every point decided by its leaf combinations, each
combination's outputs the library's own.

A case is a point ``x``, its counterfactual ``x'`` and the offset box ``D`` of the moving
features (``x + D`` and ``x' + D`` move together). Over the box, each tree of each copy
reaches a set of leaves; the box is split at the offset where a tree's topmost straddling
split changes sides (on whole-number offsets exactly the last whole number that still goes
left) until every tree of both copies reaches one leaf. Each such *cell* reaches one leaf per
tree, so the library computes one output on it: each cell's is the library's at the cell's
representative point (``score``: its score as it computes it -- XGBoost's float32 sum and
logistic, a forest's averaged probabilities --, ``decide``: its predict, with its tie rule), the
point's leaves checked to be the cell's. The float64 sums of the leaves here are not used to
decide: they differ from the library's within rounding, and a margin of ~1e-9 or a probability
of exactly 1/2 decides differently. The case's questions are then answered cell by cell:

* observed setting: ``sigma * (s(x + D) - s(x' + D)) > 0`` on every cell where both are
  decided as the true class (``sigma = +1`` for class 1, ``-1`` for class 0; ``s`` the score,
  compared as the library gives it); refuted by a cell breaking it (its offset is the
  witness, replayed on the real model by the caller's ``replay`` and ``decide``);
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


def _reach(t: Tree, u: np.ndarray, pos: dict, s, dlo, dhi, at=None):
    """Leaves of tree t reachable from base input u over the offset box, and the topmost
    straddling split as (node, offset index) or None. ``at(j, d)``: moving column j's input at
    offset d (the encoder's feed of x + d); default ``u + s * d``."""
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
        gl = _left(t, k, u[f] + s[j] * dlo[j] if at is None else at(j, dlo[j]))
        gr = not _left(t, k, u[f] + s[j] * dhi[j] if at is None else at(j, dhi[j]))
        if gl and gr and first is None:
            first = (k, j)
        if gr:
            stack.append(int(R[k]))
        if gl:
            stack.append(int(L[k]))
    return leaves, first


def _cut(t: Tree, k: int, base: float, s: float, lo: float, hi: float, integer: bool, at=None) -> tuple[float, float]:
    """(largest offset still going left, smallest going right) inside [lo, hi]; ``at(d)``: the input at
    offset d (default ``base + s * d``)."""
    if at is not None:
        def go(d):
            return _left(t, k, at(d))
        a, b = (int(np.ceil(lo)), int(np.floor(hi))) if integer else (float(lo), float(hi))
        if not integer:
            d = min(max((t.threshold[k] - base) / s, a), b)
            a, b = (d, b) if go(d) else (a, d)
        while (b - a > 1) if integer else (a < a + (b - a) / 2.0 < b):
            mid = (a + b) // 2 if integer else a + (b - a) / 2.0
            if go(mid):
                a = mid
            else:
                b = mid
        return float(a), float(b)
    if integer:
        a, b = int(np.ceil(lo)), int(np.floor(hi))          # _left(a) true, _left(b) false
        while b - a > 1:
            mid = (a + b) // 2
            if _left(t, k, base + s * mid):
                a = mid
            else:
                b = mid
        return float(a), float(b)
    # the analytic offset is a first guess only: base + s * d rounds (in float64, then to float32 on a
    # float32 tree) to either side of the threshold, and a cut one float64 ulp off leaves a box that
    # still straddles it (split again by one ulp at a time, past max_cells); bisect on _left instead
    a, b = float(lo), float(hi)                              # _left(a) true, _left(b) false (a straddle)
    d = min(max((t.threshold[k] - base) / s, a), b)
    if _left(t, k, base + s * d):
        a = d
    else:
        b = d
    while True:
        mid = a + (b - a) / 2.0
        if not a < mid < b:
            break
        if _left(t, k, base + s * mid):
            a = mid
        else:
            b = mid
    return a, b


def cells(ens: TreeEnsemble, U: np.ndarray, Up: np.ndarray, cols, scale, lo, hi, integer, max_cells: int = 4096,
          walk=None, fixed=None, leaves: bool = False, at=None):
    """Every cell of one case: a list of (offset point D, S(x + D), S(x' + D)) -- S the float64 sum
    of the leaves, not the library's --, with ``leaves`` also the leaf of each walked tree on x + D
    and on x' + D; raises OverflowError past ``max_cells``. ``walk``: indices of the trees to walk
    (default all); ``fixed``: the leaf values of the others on x and on x' (two arrays over all trees)."""
    pos = {int(c): j for j, c in enumerate(cols)}
    s = np.asarray(scale, dtype=np.float64)
    walk = range(len(ens.trees)) if walk is None else walk
    base_vals = (np.zeros(len(ens.trees)), np.zeros(len(ens.trees))) if fixed is None else fixed
    out = []
    stack = [(np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64))]
    while stack:
        dlo, dhi = stack.pop()
        split = None
        sums, reached = [], []
        for u, vals in ((U, base_vals[0]), (Up, base_vals[1])):
            vals = vals.copy()
            got = []
            for ti in walk:
                t = ens.trees[ti]
                lv, first = _reach(t, u, pos, s, dlo, dhi, at)
                if first is not None and split is None:
                    split = (t, first[0], first[1], u)
                vals[ti] = t.value[lv[0]]
                got.append(lv[0])
            sums.append(ens.combine(vals))
            reached.append(np.array(got, dtype=np.int64))
        sx, sp = sums
        if split is None:
            D = np.where(integer, np.ceil(dlo - 1e-9), (dlo + dhi) / 2.0)
            out.append((D, sx, sp, reached[0], reached[1]) if leaves else (D, sx, sp))
            if len(out) > max_cells:
                raise OverflowError
            continue
        t, k, j, u = split
        a, b = _cut(t, k, float(u[int(t.feature[k])]), float(s[j]), dlo[j], dhi[j], bool(integer[j]),
                    None if at is None else (lambda d, j=j: at(j, d)))
        left_hi = dhi.copy()
        left_hi[j] = a
        right_lo = dlo.copy()
        right_lo[j] = b
        stack.append((right_lo, dhi))
        stack.append((dlo, left_hi))
    return out


def _library(fn, X, chunk: int = 65536) -> np.ndarray:
    """fn over the rows of X in chunks, float64 (n,)."""
    if len(X) == 0:
        return np.zeros(0)
    return np.concatenate([np.asarray(fn(X[k:k + chunk]), dtype=np.float64).reshape(-1)
                           for k in range(0, len(X), chunk)])


def analyse_trees(cs, *, score, replay, max_cells: int = 4096, rb_rows=None, decide=None, encode_at=None):
    """The tree counterpart of :func:`fairspec.backends.pba.core.analyse` (same Analysis).

    ``score``: X -> the model's score as its library computes it; ``decide``: X -> its 0/1
    decisions (its predict); ``replay``: the score on the independent evaluator (witnesses).
    Without ``decide``, ``score`` and ``replay`` are ``g`` (class 1 iff ``g > 0``). ``encode_at``:
    (cases, offsets D) -> the model inputs (x + D, x' + D) as the runtime encodes the moved feature
    values (default ``cs.inputs``: ``u0 + scale * D`` on the encoded input, which no feature value may
    encode to -- ``standard(mean = 1000000.5, std = 1)`` feeds inputs near 0 in steps of 2^-33, so a
    cell between two thresholds 2e-11 apart holds no point of the domain): each cell's representative
    is then a domain point, and a cell whose representative reaches other leaves leaves its case unknown."""
    from fairspec.backends.pba.core import Analysis, keep_replayed

    t0 = time.perf_counter()
    ens: TreeEnsemble = cs.net
    P, m = cs.P, len(cs.cols)
    if decide is None:
        decide = lambda X: (np.asarray(score(X), dtype=np.float64).reshape(-1) > 0).astype(np.int64)  # noqa: E731
    pred_x = _library(decide, cs.U).astype(int)
    pred_p = _library(decide, cs.Up).astype(int)
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
    too_many = strays = 0
    integer = np.asarray(cs.integer, dtype=bool)
    # trees that read no moving input reach one leaf per copy: summed once for all cases
    moving = {int(c) for c in cs.cols}
    walk = [k for k, t in enumerate(ens.trees) if t.features() & moving]
    fx = np.stack([t.value[t.apply(cs.U)] for t in ens.trees], axis=1) if ens.trees else np.zeros((P, 0))
    fp = np.stack([t.value[t.apply(cs.Up)] for t in ens.trees], axis=1) if ens.trees else np.zeros((P, 0))
    # every case's cells (offset, leaves of the walked trees on x + D and x' + D); None past max_cells
    per_case, reps = [], []
    for i in range(P):
        try:
            cl = cells(ens, cs.U[i], cs.Up[i], cs.cols, cs.scale, cs.lo[i], cs.hi[i], integer, max_cells,
                       walk=walk, fixed=(fx[i], fp[i]), leaves=True,
                       at=None if cs.feeds is None else (lambda j, d, i=i: cs.at(i, j, d)))
        except OverflowError:
            per_case.append(None)
            continue
        D = np.array([c[0] for c in cl], dtype=np.float64).reshape(len(cl), m)
        per_case.append((D, np.array([c[3] for c in cl]).reshape(len(cl), len(walk)),
                         np.array([c[4] for c in cl]).reshape(len(cl), len(walk))))
        reps.append(np.column_stack([np.full(len(cl), i), np.arange(len(cl))]))
    # the library at every cell's representative point, in one batch per copy
    idx = np.concatenate(reps) if reps else np.zeros((0, 2), dtype=np.int64)
    Dall = (np.concatenate([pc[0] for pc in per_case if pc is not None]) if reps else np.zeros((0, m)))
    at_inputs = cs.inputs if encode_at is None else encode_at
    X, Xp = at_inputs(idx[:, 0].astype(np.int64), Dall) if len(idx) else (cs.U[:0], cs.Up[:0])
    both = np.concatenate([X, Xp])
    s_all, d_all = _library(score, both), _library(decide, both).astype(int)
    trees = [ens.trees[k] for k in walk]
    lv = np.stack([t.apply(both) for t in trees], axis=1) if trees else np.zeros((len(both), 0), dtype=np.int64)
    n_all, at = len(X), 0
    for i in range(P):
        pc = per_case[i]
        if pc is None:
            too_many += 1
            for arr in (observed, flipped):
                if eligible[i]:
                    arr[i] = "unknown"
            stage_obs[i] = stage_flip[i] = "cells"
            rb_x[i] = rb_p[i] = "unknown" if eligible[i] else "refuted"
            continue
        D, lx, lp = pc
        k = len(D)
        sl = slice(at, at + k)
        sl_p = slice(n_all + at, n_all + at + k)
        at += k
        if not (np.array_equal(lv[sl], lx) and np.array_equal(lv[sl_p], lp)):
            # a representative point off its cell's leaves: the library's value there is not the cell's
            strays += 1
            if eligible[i]:
                observed[i] = flipped[i] = "unknown"
            stage_obs[i] = stage_flip[i] = "cells"
            rb_x[i] = rb_p[i] = "unknown"
            continue
        Sx, Sp = s_all[sl], s_all[sl_p]
        dx, dp = d_all[sl], d_all[sl_p]
        rb_x[i] = "proved" if np.all(dx == cls[i]) else "refuted"
        rb_p[i] = "proved" if np.all(dp == cls[i]) else "refuted"
        if not eligible[i]:
            continue
        valid = (dx == cls[i]) & (dp == cls[i])
        # x more confident than x' on a cell: Sx > Sp for class 1, Sp > Sx for class 0, compared
        # exactly as the library gives them (no difference is rounded to 0 before it is compared)
        better = np.where(cls[i] == 1, Sx > Sp, Sp > Sx)
        worse = np.where(cls[i] == 1, Sx < Sp, Sp < Sx)
        f = sigma[i] * (Sx - Sp)
        bad = np.flatnonzero(valid & ~better)
        if not len(bad):
            observed[i], stage_obs[i] = "proved", "trees"
            f_obs[i] = float(np.min(np.where(valid, f, np.inf)))
        else:
            j = int(bad[np.argmin(f[bad])])
            observed[i], stage_obs[i] = "refuted", "trees"
            f_obs[i] = float(f[j])
            D_obs[i] = D[j]
        bad = np.flatnonzero(valid & ~worse)
        if not len(bad):
            flipped[i], stage_flip[i] = "proved", "trees"
        else:
            flipped[i], stage_flip[i] = "refuted", "trees"
            D_flip[i] = D[int(bad[np.argmax(f[bad])])]
    notes = []
    for side, status, stage, wit, D in ((1.0, observed, stage_obs, wit_obs, D_obs),
                                        (-1.0, flipped, stage_flip, wit_flip, D_flip)):
        idx = np.flatnonzero(status == "refuted")
        keep_replayed(cs, replay, side, idx, D[idx], status, stage, wit, notes, decide)
    if strays:
        notes.append(f"{strays} points had a cell whose representative point reached other leaves and were left "
                     "unknown")
    if too_many:
        notes.append(f"{too_many} points have more than {max_cells} leaf combinations in their neighbourhood "
                     "and were left unknown")
    if rb_rows is not None:                      # as analyse(): RB of x on the chosen rows only
        rb_x = rb_x[np.asarray(rb_rows, dtype=np.int64)]
    seconds = {"trees": round(time.perf_counter() - t0, 4), "total": round(time.perf_counter() - t0, 4)}
    counts = {"cases": P, "eligible": int(eligible.sum()), "stages": {"trees": int(eligible.sum())}}
    return Analysis(eligible, pred_x, pred_p, observed, flipped, stage_obs, stage_flip, wit_obs, wit_flip, f_obs,
                    rb_x, rb_p, seconds, counts, notes)
