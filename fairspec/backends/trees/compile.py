"""A tree ensemble's decision compiled into one decision tree (its Boolean form), when small.

Group metrics over a distribution (SSAT, elimination) take a classifier in Boolean form; a
single decision tree is one. The decision ``S(x) > c`` of a forest or a boosted model is
compiled into an equivalent decision tree by splitting the input box: in a box where the
smallest and largest reachable outputs (each tree's smallest / largest reachable leaf) are
on one side of ``c`` the box is a leaf; otherwise it is split at the topmost straddling
split of the first undecided tree (at most ``max_walks`` tree walks in all: a count, so a
large ensemble gives up in a bounded time). Boxes are half-open, ``(lo, hi]``, matching ``x <= t``
(an XGBoost ``x < t`` is ``x <= t'`` with ``t'`` the float below ``t``). Two sibling leaves
of the same class merge. More than ``max_leaves`` leaves: :class:`TooLarge`.

The result looks like a fitted scikit-learn ``DecisionTreeClassifier`` (``tree_`` arrays,
``classes_ = [0, 1]``, class 1 = the declared output above its threshold), so the
distribution backends read it as they read a tree.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from fairspec.models.trees import TreeEnsemble

__all__ = ["TooLarge", "compile_decision"]


class TooLarge(Exception):
    pass


def _cut(t, k) -> float:
    c = float(t.threshold[k])
    return float(np.nextafter(c, -np.inf)) if t.strict else c


def compile_decision(ens: TreeEnsemble, lo, hi, max_leaves: int = 4096, max_walks: int = 400_000):
    """The decision of ``ens`` on the box ``(lo, hi]`` as a tree-like estimator (see module)."""
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    c0 = ens.threshold
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
        if smax <= c0 or smin > c0 or split is None:
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
