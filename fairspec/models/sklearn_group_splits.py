"""A tree model's splits on a grouped one-hot column rewritten as splits on its categories' columns (and on a
one-hot column a power-of-2 transformer weight scales, its threshold read for 0 / 1).

A ``OneHotEncoder`` grouping infrequent categories (``min_frequency`` / ``max_categories``) writes one column
for the group: 1 when the category is one of the group's, else 0. fairspec lays out one column per category
(exactly one of them 1 on every domain point), and the pipeline's estimator reads the group's column as the
sum of its members' columns (``Folded.merged``): 0s and one 1 at most, so 0 or 1. A split ``sum <= t`` on it
(the library compares ``float32(x) <= t``; 0 and 1 are exact in float32) is

- always right for ``t < 0`` and always left for ``t >= 1`` (the sum is 0 or 1): the node is its child;
- for ``0 <= t < 1``, left iff no member column is 1, i.e. iff every member's column is ``<= t`` (each is 0 or
  1): a chain of splits on the member columns, the same threshold, the first one above it sending the point
  right, the right subtree copied under each link;
- equally (the block holding exactly one 1) right iff every *other* column of the block is ``<= t``: a chain over
  the block's other columns with the left subtree copied under each link; :func:`regroup` takes whichever
  copies fewer nodes.

On every point whose block is one-hot (the domain fairspec's engines decide) each rewritten tree reaches the
leaf the pipeline's own tree reaches on the encoder's columns, so the leaf values and every score are the same
floats. Trees are rebuilt in preorder (parents before children, as fairspec's converters read them); a tree
grown past :data:`GROWTH` times its nodes (plus :data:`SLACK`) is not rewritten (:func:`regroup` returns None).
"""

from __future__ import annotations

import copy

import numpy as np

GROWTH = 16     # a rewritten tree holds at most GROWTH * n + SLACK nodes (n: the tree's own)
SLACK = 256


class _TooBig(Exception):
    pass


def _rewire(left, right, feature, threshold, keep, groups: dict, limit: int, ones: dict | None = None) -> list[list]:
    """Nodes in preorder as ``[source node, feature, threshold, left, right]`` (a leaf: feature None). ``ones``:
    for an estimator column of a one-hot block a transformer weight w scales (0 / w as it reads it), the number its
    split compares for a 1 (w, or float32(w) for a library that casts); the split's threshold becomes -0.5, 0.5 or
    1.5, the one sending 0 and 1 where t sends 0 and that number."""
    ones = ones or {}
    left, right = np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64)
    n = len(left)
    size = np.ones(n, dtype=np.int64)            # nodes of each subtree (children have larger ids in every
    order = _preorder(left, right)               # library; computed bottom-up from a preorder walk anyway)
    for v in reversed(order):
        if left[v] >= 0:
            size[v] = 1 + size[left[v]] + size[right[v]]
    out: list[list] = []

    def emit(v: int) -> int:
        if len(out) > limit:
            raise _TooBig
        if left[v] < 0:
            out.append([v, None, None, -1, -1])
            return len(out) - 1
        f, t = int(feature[v]), float(threshold[v])
        if f in ones:                            # 0 / w read as fairspec's 0 / 1 (w > 0)
            t = 1.5 if ones[f] <= t else 0.5 if 0.0 <= t else -0.5
        if f not in groups:
            i = len(out)
            out.append([v, int(keep[f]), t, -1, -1])
            out[i][3] = emit(int(left[v]))
            out[i][4] = emit(int(right[v]))
            return i
        members, others = groups[f]
        if t < 0.0:                              # 0 / 1 is never <= t
            return emit(int(right[v]))
        if t >= 1.0:                             # 0 / 1 always is
            return emit(int(left[v]))
        lo, hi = int(left[v]), int(right[v])
        # chain over S: every column of S <= t -> A, the first one above t -> B (B copied under each link)
        S, A, B = members, lo, hi
        if others is not None and (len(others) - 1) * size[lo] < (len(members) - 1) * size[hi]:
            S, A, B = others, hi, lo
        if not S:
            return emit(A)
        first = len(out)
        for k, col in enumerate(S):
            i = len(out)
            out.append([v, int(col), t, -1, -1])
            out[i][4] = emit(B)
            out[i][3] = emit(A) if k == len(S) - 1 else len(out)
        return first

    emit(0)
    if len(out) > limit:
        raise _TooBig
    return out


def _preorder(left, right) -> list[int]:
    out, stack = [], [0]
    while stack:
        v = stack.pop()
        out.append(v)
        if left[v] >= 0:
            stack.extend((int(right[v]), int(left[v])))
    return out


def _arrays(out):
    """:func:`_rewire`'s nodes as arrays: source node, inner (a split), feature, threshold, left, right."""
    src = np.fromiter((o[0] for o in out), dtype=np.int64, count=len(out))
    inner = np.fromiter((o[1] is not None for o in out), dtype=bool, count=len(out))
    f = np.fromiter((-2 if o[1] is None else o[1] for o in out), dtype=np.int64, count=len(out))
    t = np.fromiter((-2.0 if o[2] is None else o[2] for o in out), dtype=np.float64, count=len(out))
    lft = np.fromiter((o[3] for o in out), dtype=np.int64, count=len(out))
    rgt = np.fromiter((o[4] for o in out), dtype=np.int64, count=len(out))
    return src, inner, f, t, lft, rgt


def _depths(out) -> np.ndarray:
    d = np.zeros(len(out), dtype=np.int64)
    for i, (_, _, _, lft, rgt) in enumerate(out):
        if lft >= 0:
            d[lft] = d[rgt] = d[i] + 1
    return d


def _sk_tree(tree, keep, width: int, groups: dict, ones: dict):
    """A sklearn ``Tree`` reading the widened input, its group splits rewritten (:func:`_rewire`)."""
    from sklearn.tree._tree import Tree

    state = tree.__getstate__()
    nodes, values = state["nodes"], state["values"]
    out = _rewire(nodes["left_child"], nodes["right_child"], nodes["feature"], nodes["threshold"], keep, groups,
                  GROWTH * len(nodes) + SLACK, ones)
    src, inner, f, t, lft, rgt = _arrays(out)
    new = nodes[src].copy()
    new["feature"][inner], new["threshold"][inner] = f[inner], t[inner]
    new["left_child"], new["right_child"] = lft, rgt
    tree2 = Tree(width, np.asarray(tree.n_classes, dtype=np.intp), tree.n_outputs)
    tree2.__setstate__({**state, "nodes": new, "values": np.ascontiguousarray(values[src]),
                        "node_count": len(out), "max_depth": int(_depths(out).max())})
    return tree2


def _hist_nodes(nodes, keep, groups: dict, ones: dict):
    """A HistGradientBoosting predictor's nodes reading the widened input, its group splits rewritten."""
    leaf = nodes["is_leaf"].astype(bool)
    out = _rewire(np.where(leaf, -1, nodes["left"].astype(np.int64)), np.where(leaf, -1, nodes["right"].astype(np.int64)),
                  nodes["feature_idx"], nodes["num_threshold"], keep, groups, GROWTH * len(nodes) + SLACK, ones)
    src, inner, f, t, lft, rgt = _arrays(out)
    new = nodes[src].copy()
    new["feature_idx"][inner], new["num_threshold"][inner] = f[inner], t[inner]
    new["left"][inner], new["right"][inner] = lft[inner], rgt[inner]
    new["depth"] = _depths(out)
    return new


def regroup(final, keep, width: int, merged, others, family: str, scale=None):
    """A copy of tree model ``final`` (a decision tree, forest, extra trees, gradient boosting, histogram gradient
    boosting) reading fairspec's ``width`` columns, where ``final`` read column j as the sum of the columns
    ``merged[j]`` (``others[j]``: the rest of that one-hot block, or None): every split on a j of two or more columns
    rewritten as splits on its columns (module doc); None where a tree would grow past its bound or the model has
    categorical splits. ``family``: tree | forest | boosted | hist (sklearn_widen's lists of class names).
    ``scale`` (a one-hot block a power-of-2 transformer weight w scales: ``final`` read 0 / w where fairspec's
    column is 0 / 1): each split on such a column gets the threshold sending 0 and 1 where it sent 0 and w (as the
    library compares w: float32 for the trees that cast, float64 for histogram gradient boosting)."""
    keep = np.asarray(keep, dtype=np.int64)
    ones = {}
    for j, w in enumerate(scale if scale is not None else ()):
        if float(w) != 1.0:
            if not float(w) > 0.0:
                return None
            ones[j] = float(w) if family == "hist" else float(np.float32(w))
    groups = {j: (tuple(m), None if others is None or others[j] is None else tuple(others[j]))
              for j, m in enumerate(merged) if len(m) > 1}
    est = copy.deepcopy(final)
    try:
        if family in ("tree", "forest", "boosted"):
            trees = [est] if family == "tree" else list(est.estimators_) if family == "forest" else \
                list(np.ravel(est.estimators_))
            for t in trees:
                t.tree_ = _sk_tree(t.tree_, keep, width, groups, ones)
                t.n_features_in_ = width
        elif family == "hist":
            if getattr(est, "is_categorical_", None) is not None or getattr(est, "_preprocessor", None) is not None:
                return None
            for it in est._predictors:
                for p in it:
                    if np.any(p.nodes["is_categorical"][~p.nodes["is_leaf"].astype(bool)]):
                        return None
                    p.nodes = _hist_nodes(p.nodes, keep, groups, ones)
            bm = est._bin_mapper
            if getattr(bm, "is_categorical_", None) is not None:
                if np.any(bm.is_categorical_):
                    return None
                bm.is_categorical_ = np.zeros(width, dtype=bm.is_categorical_.dtype)
        else:
            return None
    except _TooBig:
        return None
    est.n_features_in_ = width
    return est
