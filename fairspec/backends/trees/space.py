"""Tree ensembles in feature space, pruned, and the proof that needs no solver.

:func:`fold` is the tree counterpart of :func:`fairspec.kinds.lowering.fold_scaling`: the
encoding's affine scaling ``u = scale * v + shift`` is folded into every split, so the
ensemble reads feature-space values ``v`` directly. On an integral input the split becomes
``v <= c`` with the integer ``c`` found by evaluating the split itself (the same float32 cast
and comparison as the library), so it is exact; on a continuous input ``c = (t - shift) /
scale``. While folding, every tree is **pruned** along its paths: a split whose outcome the
path (and the domain ``[lo, hi]``) already fixes is replaced by the child taken, and a
split whose two subtrees compute the same function is replaced by one of them. What is left
reads an input only where the outcome can change.

:func:`instant_verdict` then decides a pair problem before any solver when

* no tree reads a protected (free) or relaxed input: ``S(x) == S(x')`` for every pair;
* the post-condition is ``label`` and the decision is the same on the whole domain;
* for ``prob``/``logit``: the trees that do read them cannot move the output by more than
  ``eps`` (the sum over those trees of their largest minus smallest leaf value).
"""

from __future__ import annotations

import math

import numpy as np

from fairspec.models.network import sigmoid
from fairspec.models.trees import Tree, TreeEnsemble, last_left
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly

__all__ = ["fold", "prune", "instant_verdict", "cuts_by_feature", "vary_trees"]


def _int_cut(tree: Tree, node: int, scale: float, shift: float, lo: float, hi: float, feed=None) -> float:
    """The largest integer v with ``go_left(scale * v + shift)`` (lo - 1 if none, hi if all); with ``feed``
    (value -> the model input the runtime's encoder gives it), ``go_left(feed(v))``."""
    t = tree.threshold[node]

    def left(v):
        u = feed(np.array([float(v)])) if feed is not None else np.array([v * scale + shift])
        return bool(tree.go_left(node, u)[0])

    if feed is not None and np.isfinite(lo) and np.isfinite(hi):
        # the feed is monotone in v (a numeric column's encoder; a code column's sorted codes by rank), the
        # comparison too: bisect the integers (a code table's guess from scale and shift may be far off)
        a, b = int(lo), int(hi)
        if not left(a):
            return float(a - 1)
        if left(b):
            return float(b)
        while b - a > 1:                    # left(a), not left(b)
            mid = (a + b) // 2
            if left(mid):
                a = mid
            else:
                b = mid
        return float(a)
    guess = math.floor((t - shift) / scale) if scale != 0 else lo
    guess = min(max(guess, lo - 1), hi)
    c = guess
    # walk to the exact boundary (float rounding makes the guess off by at most one or two)
    while c >= lo and not left(c):
        c -= 1
    while c + 1 <= hi and left(c + 1):
        c += 1
    return float(max(c, lo - 1))


def _real_cut(tree: Tree, node: int, feed, lo: float, hi: float) -> float:
    """The largest float64 v in [lo, hi] with ``go_left(feed(v))`` (the float below lo if none, hi if all):
    the encoder and the library's comparison are monotone in v, so a bisection over the floats finds it."""
    def left(v):
        return bool(tree.go_left(node, feed(np.array([v])))[0])

    if not left(lo):
        return float(np.nextafter(lo, -np.inf))
    if left(hi):
        return float(hi)
    return last_left(lo, hi, left)   # left(lo), not left(hi): bisect the float64 values


def fold(ens: TreeEnsemble, lo, hi, integer, scale=None, shift=None, feeds=None) -> TreeEnsemble:
    """The ensemble over feature space ``v`` (model input ``u = scale * v + shift``), pruned. ``feeds``:
    input -> (values -> the model inputs the runtime's encoder gives them); such an input's splits are
    decided on those feeds (``c`` the largest value sent left), not on ``scale * v + shift`` nor on the
    rounded inverse ``(t - shift) / scale``: ``standard(mean = 37.3, std = 13.7)`` feeds 60 as
    (60 - 37.3) / 13.7, which a threshold one float below sends right, where 60 / 13.7 - 37.3 / 13.7 did not."""
    feeds = feeds or {}
    n = ens.n_inputs
    scale = np.ones(n) if scale is None else np.asarray(scale, dtype=np.float64)
    shift = np.zeros(n) if shift is None else np.asarray(shift, dtype=np.float64)
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    integer = np.asarray(integer, dtype=bool)
    trees = []
    for t in ens.trees:
        feat, thr, strict = t.feature.copy(), t.threshold.copy(), np.zeros(t.n_nodes, dtype=bool)
        for k in np.nonzero(t.left >= 0)[0]:
            f = int(t.feature[k])
            if scale[f] < 0:
                from fairspec.models.network import UnsupportedModel

                raise UnsupportedModel("scaling", f"input {f}", "a decreasing scaling of a tree's input is not supported")
            if integer[f] or scale[f] == 0:
                thr[k] = _int_cut(t, k, scale[f], shift[f], lo[f], hi[f], feeds.get(f)) if scale[f] != 0 else \
                    (hi[f] if t.go_left(k, np.array([shift[f]]))[0] else lo[f] - 1)
            elif f in feeds and np.isfinite(lo[f]) and np.isfinite(hi[f]):
                thr[k] = _real_cut(t, k, feeds[f], float(lo[f]), float(hi[f]))
            else:
                thr[k] = (t.threshold[k] - shift[f]) / scale[f]
                strict[k] = t.strict
        trees.append((feat, thr, strict, t))
    out = []
    for feat, thr, strict, t in trees:
        out.append(_prune_one(feat, thr, strict, t, lo, hi, integer))
    return TreeEnsemble(tuple(out), n, ens.base, ens.link, ens.source, ens.divisor, margin_scale=ens.margin_scale,
                        cut=ens.cut, tie=ens.tie)


def prune(ens: TreeEnsemble, lo, hi, integer) -> TreeEnsemble:
    """Prune an ensemble already in feature space (see the module docstring)."""
    return fold(ens, lo, hi, integer)


def _prune_one(feat, thr, strict, t: Tree, lo, hi, integer) -> Tree:
    """One tree restricted to the box [lo, hi], unreachable branches and splits between equal
    subtrees removed; strict splits (continuous inputs only, after folding) become ``v <= c'``
    with ``c'`` the float just below ``c``."""

    def build(node, a, b):
        """The canonical key of the subtree at ``node`` restricted to the box [a, b]."""
        if t.left[node] < 0:
            return ("L", float(t.value[node]))
        f = int(feat[node])
        c = float(thr[node])
        if strict[node]:
            c = float(np.nextafter(c, -np.inf))
        if not b[f] > c:
            return build(int(t.left[node]), a, b)
        if not a[f] <= c:
            return build(int(t.right[node]), a, b)
        b2 = b.copy()
        b2[f] = c
        a2 = a.copy()
        a2[f] = c + 1.0 if integer[f] else float(np.nextafter(c, np.inf))
        kl = build(int(t.left[node]), a, b2)
        kr = build(int(t.right[node]), a2, b)
        return kl if kl == kr else ("N", f, c, kl, kr)

    key = build(0, np.array(lo, dtype=np.float64), np.array(hi, dtype=np.float64))
    F, T, L, R, V = [], [], [], [], []

    def place(key):                                   # pre-order: parents precede children
        k = len(F)
        F.append(-1), T.append(0.0), L.append(-1), R.append(-1), V.append(0.0)
        if key[0] == "L":
            V[k] = key[1]
        else:
            F[k], T[k] = key[1], key[2]
            L[k] = place(key[3])
            R[k] = place(key[4])
        return k

    place(key)
    return Tree(F, T, L, R, V)


# ---------------------------------------------------------------------------------------------

def vary_trees(ens: TreeEnsemble, vary) -> list[int]:
    """Indices of the trees that read any of the inputs in ``vary``."""
    vs = set(int(i) for i in vary)
    return [k for k, t in enumerate(ens.trees) if t.features() & vs]


def cuts_by_feature(ens: TreeEnsemble) -> dict[int, list[float]]:
    """Sorted distinct split values per input."""
    out: dict[int, set] = {}
    for t in ens.trees:
        for f, c, l in zip(t.feature, t.threshold, t.left):
            if l >= 0:
                out.setdefault(int(f), set()).add(float(c))
    return {f: sorted(v) for f, v in out.items()}


def _leaf_range(t: Tree) -> tuple[float, float]:
    v = t.value[t.left < 0]
    return float(v.min()), float(v.max())


def instant_verdict(problem) -> tuple[str, str] | None:
    """``("holds", reason)`` when the pair problem (its ``net`` a folded, pruned
    :class:`TreeEnsemble`) is decided without a solver; otherwise None."""
    ens: TreeEnsemble = problem.net
    vary = set(problem.free) | {i for i, _ in problem.relaxed}
    vt = vary_trees(ens, vary)
    if not vt:
        names = "protected or relaxed inputs"
        return "holds", (f"the model never reads the {names} where its output can change, so x and x' "
                         "always reach the same leaves")
    lo_s = ens.base + sum(_leaf_range(t)[0] for t in ens.trees) / ens.divisor
    hi_s = ens.base + sum(_leaf_range(t)[1] for t in ens.trees) / ens.divisor
    thr = ens.threshold
    if problem.post == "label":
        # strict: at S = thr the side is the library's, which this ensemble does not record (index 0's S is
        # the negated margin, and the library's class 0 is margin <= cut: S = thr is index 0's positive)
        if hi_s < thr:
            return "holds", f"every input is decided negative (the output is at most {hi_s:.6g} < {_spec_number(thr)})"
        if lo_s > thr:
            return "holds", f"every input is decided positive (the output is at least {lo_s:.6g} > {_spec_number(thr)})"
        return None
    d = sum(_leaf_range(ens.trees[k])[1] - _leaf_range(ens.trees[k])[0] for k in vt) / ens.divisor
    if problem.post == "prob":
        bound = d if ens.link == "identity" else float(2.0 * sigmoid(np.array([d / 2.0]))[0] - 1.0)
    elif ens.link == "logistic":
        bound = d
    else:
        return None
    # `<` is not `<=`: a strict eps the trees can reach exactly is no holds (nor is any of these a proof:
    # leaf values summed in float64, where XGBoost sums float32; the tree engines' holds is never kept,
    # kinds.tree_engine_answers.solver_verdict)
    strict = bool(getattr(problem, "eps_strict", False))
    if bound < problem.eps or (bound == problem.eps and not strict):
        return "holds", (f"the {len(vt)} tree(s) reading the protected or relaxed inputs move the "
                         f"{'probability' if problem.post == 'prob' else 'logit'} by at most {bound:.6g} "
                         f"{'<' if strict else '<='} {_spec_number(problem.eps)}")
    return None
