"""A tree ensemble's decision compiled into one decision tree (its Boolean form), when small.

Group metrics over a distribution (SSAT, elimination) take a classifier in Boolean form; a
single decision tree is one. The decision ``S(x) > c`` of a forest or a boosted model is
compiled into an equivalent decision tree by splitting the input box: in a box where the
smallest and largest reachable outputs (each tree's smallest / largest reachable leaf) are
on one side of ``c`` the box is a leaf; otherwise it is split at the topmost straddling
split of the first undecided tree (at most ``max_walks`` tree walks in all: a count, so a
large ensemble gives up in a bounded time). Boxes are half-open, ``(lo, hi]``, matching ``x <= t``; each
cut is the largest float64 input the library sends left (its ``<`` or ``<=``, after its cast to
float32: scikit-learn's ``float32(x) <= t`` sends some x above t left, XGBoost's ``x < t`` is
``x <= t'`` with ``t'`` below ``t``). A box whose output bounds lie within :data:`MARGIN` of the
threshold is split until every tree reaches one leaf; ``decide`` (the library's own decision at a
point of the box) then classes it. Two sibling leaves of the same class merge. More than ``max_leaves`` leaves: :class:`TooLarge`.

The result looks like a fitted scikit-learn ``DecisionTreeClassifier`` (``tree_`` arrays,
``classes_ = [0, 1]``, class 1 = the declared output above its threshold), so the
distribution backends read it as they read a tree.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from fairspec.models.trees import TreeEnsemble, last_left

__all__ = ["TooLarge", "compile_decision"]


class TooLarge(Exception):
    pass


def _cut(t, k) -> float:
    """The largest float64 input that goes left at node k, as the library compares it (``<`` or
    ``<=``, after a cast to float32 where the library casts): the box boundary that sends every
    input exactly where the library sends it."""
    c = float(t.threshold[k])

    def left(x):
        return bool(t.go_left(k, np.array([x]))[0])

    span = max(abs(c), 1e-300) * 2.0 ** -20 + 1e-300
    a, b = c - span, c + span                      # float32 rounding moves the boundary far less
    if not left(a) or left(b):                     # never: the boundary lies within a float32 ulp
        return float(np.nextafter(c, -np.inf)) if t.strict else c
    return last_left(a, b, left)   # left(a), not left(b): bisect the float64 values


#: a bound decides a box only this far from the decision threshold (relative to the largest
#: possible |output|): closer boxes are split until every tree has one leaf and, with ``decide``,
#: the library itself decides them (its float32 logistic, summation order and tie rule)
MARGIN = 1e-6


def compile_decision(ens: TreeEnsemble, lo, hi, max_leaves: int = 4096, max_walks: int = 400_000, decide=None):
    """The decision of ``ens`` on the box ``(lo, hi]`` as a tree-like estimator (see module).
    ``decide``: the library's own decision (model-input rows -> 0/1) for boxes in which every tree
    reaches one leaf and the summed output lies within :data:`MARGIN` of the threshold."""
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    c0 = ens.threshold
    scale = 1.0 + sum(float(np.abs(t.value[t.left < 0]).max()) for t in ens.trees) / ens.divisor + abs(ens.base)
    tol = MARGIN * scale if decide is not None else 0.0
    cuts = [np.array([_cut(t, k) if t.left[k] >= 0 else 0.0 for k in range(t.n_nodes)]) for t in ens.trees]
    F, T, L, R, V = [], [], [], [], []
    leaves = 0
    walks = 0

    def reach(ti, blo, bhi):
        t = ens.trees[ti]
        vmin, vmax, first = np.inf, -np.inf, None
        stack = [0]
        while stack:
            k = stack.pop()
            if t.left[k] < 0:
                v = t.value[k]
                vmin, vmax = min(vmin, v), max(vmax, v)
                continue
            f = t.feature[k]
            c = cuts[ti][k]
            gl, gr = blo[f] < c, bhi[f] > c
            if gl and gr and first is None:
                first = (int(f), c)
            if gr:
                stack.append(int(t.right[k]))
            if gl:
                stack.append(int(t.left[k]))
        return vmin, vmax, first

    def build(blo, bhi) -> tuple[int, int | None]:
        """(node index, class when the subtree is one leaf)."""
        nonlocal leaves, walks
        walks += len(ens.trees)
        if walks > max_walks:
            raise TooLarge
        mins, maxs, split = [], [], None
        for ti in range(len(ens.trees)):
            a, b, first = reach(ti, blo, bhi)
            mins.append(a)
            maxs.append(b)
            if first is not None and split is None:
                split = first
        smin, smax = ens.combine(mins), ens.combine(maxs)
        k = len(F)
        F.append(-2), T.append(-2.0), L.append(-1), R.append(-1), V.append(None)
        if smax <= c0 - tol or smin > c0 + tol or split is None:
            if split is None and decide is not None and abs(smin - c0) <= tol:
                # one leaf per tree, at the threshold: a point of the box, decided by the library
                pt = np.where(np.isfinite(bhi), bhi, np.where(np.isfinite(blo), blo + 1.0, 0.0))
                cls = int(np.asarray(decide(pt[None, :])).reshape(-1)[0])
            else:
                cls = int(smin > c0)
            V[k] = cls
            leaves += 1
            if leaves > max_leaves:
                raise TooLarge
            return k, cls
        f, c = split
        a_hi = bhi.copy()
        a_hi[f] = c
        b_lo = blo.copy()
        b_lo[f] = c
        left, lc = build(blo, a_hi)
        right, rc = build(b_lo, bhi)
        if lc is not None and lc == rc:
            del F[k:], T[k:], L[k:], R[k:], V[k:]
            F.append(-2), T.append(-2.0), L.append(-1), R.append(-1), V.append(lc)
            leaves -= 1
            return k, lc
        F[k], T[k], L[k], R[k] = f, c, left, right
        return k, None

    build(lo.copy(), hi.copy())
    value = np.zeros((len(F), 1, 2))
    for k, v in enumerate(V):
        if v is not None:
            value[k, 0, v] = 1.0
    tree = SimpleNamespace(children_left=np.array(L), children_right=np.array(R), feature=np.array(F),
                           threshold=np.array(T, dtype=np.float64), value=value, node_count=len(F),
                           n_features=ens.n_inputs, n_leaves=leaves)
    return SimpleNamespace(tree_=tree, classes_=np.array([0, 1]), n_features_in_=ens.n_inputs)
