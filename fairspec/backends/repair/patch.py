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
    """A copy of the sklearn ``Tree`` with leaves replaced: patches maps leaf -> [(box, value vector)]."""
    from sklearn.tree._tree import Tree

    st = tree.__getstate__()
    nodes, values = st["nodes"], st["values"]
    new_nodes, new_values = [], []

    def emit(old: int, depth: int) -> tuple[int, int]:
        idx = len(new_nodes)
        rec = nodes[old].copy()
        new_nodes.append(rec)
        new_values.append(values[old].copy())
        if rec["left_child"] == -1:
            if old not in patches:
                return idx, depth
            sub: list = []
            _subtree(patches[old], values[old][0], {}, sub)
            return _emit_sub(sub, 0, idx, rec, depth)
        lidx, d1 = emit(int(rec["left_child"]), depth + 1)
        ridx, d2 = emit(int(rec["right_child"]), depth + 1)
        new_nodes[idx]["left_child"], new_nodes[idx]["right_child"] = lidx, ridx
        return idx, max(d1, d2)

    def _emit_sub(sub, i, idx, template, depth) -> tuple[int, int]:
        node = sub[i]
        rec = new_nodes[idx]
        if node[0] == "leaf":
            rec["left_child"] = rec["right_child"] = -1
            rec["feature"], rec["threshold"] = -2, -2.0
            new_values[idx] = np.asarray(node[1], dtype=values.dtype).reshape(values[0].shape)
            return idx, depth
        _, col, thr, left, right = node
        rec["feature"], rec["threshold"] = col, thr
        if "missing_go_to_left" in rec.dtype.names:
            rec["missing_go_to_left"] = 1
        out = []
        d = depth
        for child in (left, right):
            cidx = len(new_nodes)
            new_nodes.append(template.copy())
            new_values.append(values_template.copy())
            _, dd = _emit_sub(sub, child, cidx, template, depth + 1)
            out.append(cidx)
            d = max(d, dd)
        new_nodes[idx]["left_child"], new_nodes[idx]["right_child"] = out
        return idx, d

    values_template = values[0].copy()
    _, depth = emit(0, 0)
    arr = np.array(new_nodes, dtype=nodes.dtype)
    vals = np.ascontiguousarray(np.array(new_values, dtype=values.dtype))
    t = Tree(n_features, np.asarray(tree.n_classes, dtype=np.intp), int(tree.n_outputs))
    t.__setstate__({"max_depth": int(depth), "node_count": len(arr), "nodes": arr, "values": vals})
    return t


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
