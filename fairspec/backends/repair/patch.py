"""Writing a repair into scikit-learn trees: each patched leaf becomes a small subtree.

A patch is (box, decision): inside the box the leaf returns the new decision, elsewhere the leaf's
old value.  Boxes patched into one leaf are disjoint (different groups, cells or refined parts).
The result is a scikit-learn ``Tree`` of the same shape of arrays scikit-learn writes itself, so
the repaired estimator is an ordinary ``DecisionTreeClassifier`` / ``RandomForestClassifier``.
"""

from __future__ import annotations

import copy

import numpy as np

from fairspec.backends.repair.hypercubes import INF, intersect


def _split(entries, region, start: int = 0):
    """Pick a test (column, threshold, position) from the first entry's box not implied by the
    region, looking at its columns from ``start`` on (those before are implied already)."""
    items = entries[0][2]
    for i in range(start, len(items)):
        col, (lo, hi) = items[i]
        rlo, rhi = region.get(col, (-INF, INF))
        if hi < rhi:
            return col, hi, i
        if lo > rlo:
            return col, lo, i
    return None


def _subtree(entries, default_value, region, out: list, live=None, start: int = 0):
    """Append nodes for a subtree to ``out``; returns the index of its root.
    entries: [(box, value vector)], disjoint; default_value: the old leaf's value vector.
    ``live``: the entries meeting ``region`` (computed once at the root; a split on one column only
    needs that column checked, so each child keeps the entries whose interval on it meets its side).
    ``start``: the first live entry's columns before it are implied by the region."""
    if live is None:
        live = [(box, v, list(box.items())) for box, v in entries if intersect(box, region) is not None]
    k = len(out)
    if not live:
        out.append(("leaf", default_value))
        return k
    s = _split(live, region, start)
    if s is None:  # the first box covers the whole region (boxes are disjoint: it is alone here)
        out.append(("leaf", live[0][1]))
        return k
    col, thr, pos = s
    out.append(None)
    lo, hi = region.get(col, (-INF, INF))
    # left: lo < x <= min(hi, thr); right: max(lo, thr) < x <= hi (live boxes already meet region)
    go_left = [e for e in live if e[0].get(col, (-INF, INF))[0] < thr]
    go_right = [e for e in live if e[0].get(col, (-INF, INF))[1] > thr]
    left = _subtree(entries, default_value, {**region, col: (lo, min(hi, thr))}, out, go_left,
                    pos if go_left and go_left[0] is live[0] else 0)
    right = _subtree(entries, default_value, {**region, col: (max(lo, thr), hi)}, out, go_right,
                     pos if go_right and go_right[0] is live[0] else 0)
    out[k] = ("split", col, thr, left, right)
    return k


def patched_tree(tree, patches: dict[int, list], n_features: int):
    """A copy of the sklearn ``Tree`` with leaves replaced: patches maps leaf -> [(box, value vector)].
    The old nodes keep their places; a patched leaf becomes the root of its subtree, whose other
    nodes are appended (scikit-learn follows child indices, so any order of nodes is a valid tree;
    the appended nodes carry the patched leaf's sample counts)."""
    from sklearn.tree._tree import Tree

    st = tree.__getstate__()
    nodes, values = st["nodes"], st["values"]
    n0 = len(nodes)
    max_depth = int(st["max_depth"])
    depth_of = _node_depths(nodes) if patches else None
    at, src, feat, thr, lch, rch, vals = [], [], [], [], [], [], []   # one entry per written node
    n_extra = 0
    for leaf, entries in patches.items():
        leaf = int(leaf)
        sub: list = []
        _subtree(entries, values[leaf][0], {}, sub)
        where = [leaf] + list(range(n0 + n_extra, n0 + n_extra + len(sub) - 1))
        n_extra += len(sub) - 1
        depth = {0: int(depth_of[leaf])}
        for k, node in enumerate(sub):
            max_depth = max(max_depth, depth[k])
            at.append(where[k]); src.append(leaf)
            if node[0] == "leaf":
                feat.append(-2); thr.append(-2.0); lch.append(-1); rch.append(-1)
                vals.append(np.asarray(node[1], dtype=values.dtype).reshape(values[0].shape))
            else:
                _, col, t, left, right = node
                feat.append(col); thr.append(t); lch.append(where[left]); rch.append(where[right])
                vals.append(values[leaf])
                depth[left] = depth[right] = depth[k] + 1
    if not at:
        arr, new_values = nodes.copy(), values.copy()
    else:
        at_a, src_a = np.array(at), np.array(src)
        arr = np.concatenate([nodes, np.zeros(n_extra, dtype=nodes.dtype)])
        new_values = np.concatenate([values, np.zeros((n_extra,) + values.shape[1:], dtype=values.dtype)])
        for name in nodes.dtype.names:          # statistics: those of the patched leaf
            arr[name][n0:] = nodes[name][src_a[at_a >= n0]][np.argsort(at_a[at_a >= n0])]
        arr["feature"][at_a] = feat
        arr["threshold"][at_a] = thr
        arr["left_child"][at_a] = lch
        arr["right_child"][at_a] = rch
        if "missing_go_to_left" in nodes.dtype.names:
            arr["missing_go_to_left"][at_a] = np.where(np.array(lch) >= 0, 1, 0)
        new_values[at_a] = np.array(vals, dtype=values.dtype)
    t = Tree(n_features, np.asarray(tree.n_classes, dtype=np.intp), int(tree.n_outputs))
    t.__setstate__({"max_depth": int(max_depth), "node_count": len(arr), "nodes": arr,
                    "values": np.ascontiguousarray(new_values)})
    return t


def _node_depths(nodes) -> np.ndarray:
    """Depth of every node (the root at 0), walking the child indices level by level."""
    depth = np.zeros(len(nodes), dtype=np.int64)
    frontier = np.array([0])
    d = 0
    left, right = nodes["left_child"], nodes["right_child"]
    while len(frontier):
        depth[frontier] = d
        kids = np.concatenate([left[frontier], right[frontier]])
        frontier = kids[kids >= 0]
        d += 1
    return depth


def leaf_value(decision: int, positive: int, n_classes: int = 2) -> np.ndarray:
    """A pure leaf value that decides ``decision`` (1: the positive class)."""
    v = np.zeros(n_classes)
    v[positive if decision else 1 - positive] = 1.0
    return v


def repaired_estimator(est, patches_per_tree: list[dict[int, list]]):
    """A deep copy of ``est`` (a tree or a forest) with each tree's leaves patched."""
    new = copy.deepcopy(est)
    trees = [new] if hasattr(new, "tree_") else list(new.estimators_)
    for sub, patches in zip(trees, patches_per_tree):
        if patches:
            sub.tree_ = patched_tree(sub.tree_, patches, int(sub.tree_.n_features))
    return new
