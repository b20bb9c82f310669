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


def _split(entries, region):
    """Pick a test (column, threshold) from the first entry's box not implied by the region."""
    box = entries[0][0]
    for col, (lo, hi) in box.items():
        rlo, rhi = region.get(col, (-INF, INF))
        if hi < rhi:
            return col, hi
        if lo > rlo:
            return col, lo
    return None


def _subtree(entries, default_value, region, out: list):
    """Append nodes for a subtree to ``out``; returns the index of its root.
    entries: [(box, value vector)], disjoint; default_value: the old leaf's value vector."""
    live = []
    for box, v in entries:
        b = intersect(box, region)
        if b is not None:
            live.append((b, v))
    k = len(out)
    if not live:
        out.append(("leaf", default_value))
        return k
    s = _split(live, region)
    if s is None:  # the first box covers the whole region (boxes are disjoint: it is alone here)
        out.append(("leaf", live[0][1]))
        return k
    col, thr = s
    out.append(None)
    lo, hi = region.get(col, (-INF, INF))
    left = _subtree(live, default_value, {**region, col: (lo, min(hi, thr))}, out)
    right = _subtree(live, default_value, {**region, col: (max(lo, thr), hi)}, out)
    out[k] = ("split", col, thr, left, right)
    return k


def patched_tree(tree, patches: dict[int, list], n_features: int):
    """A copy of the sklearn ``Tree`` with leaves replaced: patches maps leaf -> [(box, value vector)].
    The old nodes keep their places; a patched leaf becomes the root of its subtree, whose other
    nodes are appended (scikit-learn follows child indices, so any order of nodes is a valid tree)."""
    from sklearn.tree._tree import Tree

    st = tree.__getstate__()
    nodes, values = st["nodes"], st["values"]
    n0 = len(nodes)
    extra_nodes, extra_values = [], []
    depth_of = _node_depths(nodes) if patches else None
    max_depth = int(st["max_depth"])
    new_nodes = nodes.copy()
    new_values = values.copy()
    template = nodes[0].copy()

    def put(i, rec, val):
        if i < n0:
            new_nodes[i] = rec
            if val is not None:
                new_values[i] = val
        else:
            extra_nodes[i - n0] = rec
            if val is not None:
                extra_values[i - n0] = val

    for leaf, entries in patches.items():
        leaf = int(leaf)
        sub: list = []
        _subtree(entries, values[leaf][0], {}, sub)
        # place sub[0] at the leaf, the others after every node so far
        where = [leaf] + [n0 + len(extra_nodes) + k for k in range(len(sub) - 1)]
        for _ in range(len(sub) - 1):
            extra_nodes.append(template.copy())
            extra_values.append(values[leaf].copy())
        depth = {0: int(depth_of[leaf])}
        for k, node in enumerate(sub):
            rec = (nodes[leaf] if k == 0 else template).copy()
            d = depth[k]
            max_depth = max(max_depth, d)
            if node[0] == "leaf":
                rec["left_child"] = rec["right_child"] = -1
                rec["feature"], rec["threshold"] = -2, -2.0
                if "missing_go_to_left" in rec.dtype.names:
                    rec["missing_go_to_left"] = 0
                val = np.asarray(node[1], dtype=values.dtype).reshape(values[0].shape)
            else:
                _, col, thr, left, right = node
                rec["feature"], rec["threshold"] = col, thr
                rec["left_child"], rec["right_child"] = where[left], where[right]
                if "missing_go_to_left" in rec.dtype.names:
                    rec["missing_go_to_left"] = 1
                depth[left] = depth[right] = d + 1
                val = values[leaf]
            put(where[k], rec, val)
    if extra_nodes:
        arr = np.concatenate([new_nodes, np.array(extra_nodes, dtype=nodes.dtype)])
        vals = np.concatenate([new_values, np.array(extra_values, dtype=values.dtype)])
    else:
        arr, vals = new_nodes, new_values
    t = Tree(n_features, np.asarray(tree.n_classes, dtype=np.intp), int(tree.n_outputs))
    t.__setstate__({"max_depth": int(max_depth), "node_count": len(arr), "nodes": arr,
                    "values": np.ascontiguousarray(vals)})
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
