"""Splits by category of XGBoost and LightGBM trees, rewritten as numeric thresholds over the
declared values of their input, so that every exact tree encoding reads them unchanged.

A split by category sends the values of a set S one way and every other value the other way.
What each library does with a value v (read from their sources, checked on the libraries in
tests/test_tree_categorical_rewrite.py at every point of small domains, negatives and values past
the last category included):

* XGBoost (``split_type`` 1; S is the node's ``categories``): v is a float32; a missing v takes the
  default child; v < 0 or v >= 2**24 is an invalid category and goes **left**; otherwise
  ``int(v)`` (truncation) in S goes **right**, any other (past the node's bit field too) left.
* LightGBM (``decision_type`` with bit 0 set; S is ``threshold`` "a||b||c" in ``dump_model``): NaN
  goes right; ``int(v)`` (truncation) < 0 goes right; ``int(v)`` in S goes **left**, any other right.

So on a whole number v with |v| < 2**22 both are: v in S (S holds no negative) takes the set's
child, every other v the other child. On a declared domain D of such numbers
(fairspec.models.base.category_domains) the node is the partition of sorted D into maximal runs of
members and non-members, and it becomes a balanced chain of threshold tests at the midpoints
between runs (exact in float32: |midpoint| < 2**22 is a multiple of 1/2), each run's leaf the
child it takes, copied (the encodings read trees, not graphs). The rewritten tree equals the
library's on D and says nothing elsewhere: its self-check probes D (fairspec.models.trees).
Values outside D, non-integer values, missing values are never fed to it; an input without such a
domain keeps the refusal (CategoricalSplit), as lint says (FS506).

A rewritten tree may pass :data:`MAX_NODES` (runs alternating in and out of the categories copy
subtrees, nested splits multiply): :func:`tree_size` counts its nodes from the original tree alone
(pure Python: lint imports this module, fairspec.models.peek_trees), and :func:`build` refuses such a
tree before writing a node, so lint (FS506) and check say the same sentence (:func:`too_large`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # annotations only: lint imports this module and no numpy
    import numpy as np


def runs(domain, members) -> list[tuple[int, int, bool]]:
    """The maximal runs (first, last index into sorted domain, member?) of the domain's values."""
    out: list[tuple[int, int, bool]] = []
    for i, v in enumerate(domain):
        m = v >= 0 and v in members
        if out and out[-1][2] == m:
            out[-1] = (out[-1][0], i, m)
        else:
            out.append((i, i, m))
    return out


MAX_NODES = 200_000           # nodes of one rewritten tree (each run copies its child's subtree)


def run_counts(domain, members, index: dict) -> tuple[int, int]:
    """(member runs, other runs) of :func:`runs` (domain, members), from the members alone:
    ``index`` is {value: its position in the sorted domain}."""
    pos = sorted(index[v] for v in members if v >= 0 and v in index)
    if not pos:
        return 0, 1 if len(domain) else 0
    gaps = sum(1 for a, b in zip(pos, pos[1:]) if b != a + 1)
    return gaps + 1, gaps + (pos[0] > 0) + (pos[-1] < len(domain) - 1)


def tree_size(root, node: Callable, domains: dict, missing: Callable | None = None, cap: int = MAX_NODES) -> int:
    """The number of nodes :func:`build` writes for this tree (``node`` as there), at most ``cap + 1``
    (saturated: nested splits multiply): a split by category over r runs (m of members) is r - 1
    threshold tests and m copies of its set child's subtree, r - m of the other's. Reads every node of
    the original tree once, no numpy; a split by category on an input without a domain calls
    ``missing`` / raises KeyError, as :func:`build` does, in the same (depth-first, left first) order."""
    index: dict = {}
    values: list[int] = []
    todo = [("node", root)]
    while todo:
        task = todo.pop()
        if task[0] == "sum":
            b, a = values.pop(), values.pop()
            values.append(min(cap + 1, task[1] + task[2] * a + task[3] * b))
            continue
        n = node(task[1])
        if n[0] == "leaf":
            values.append(1)
            continue
        if n[0] == "cat":
            _, f, members, inside, outside = n
            if f not in domains:
                if missing is not None:
                    missing(f)
                raise KeyError(f)
            dom = domains[f]
            if f not in index:
                index[f] = {v: i for i, v in enumerate(dom)}
            m, o = run_counts(dom, members, index[f])
            todo += [("sum", m + o - 1, m, o), ("node", outside), ("node", inside)]
            continue
        _, _, _, a, b = n
        todo += [("sum", 1, 1, 1), ("node", b), ("node", a)]
    return values[0]


class TooLarge(Exception):
    """A rewritten tree would pass :data:`MAX_NODES` (the converters report the model unsupported)."""


def too_large(tree) -> str:
    which = "a tree" if tree is None else f"tree {tree}"
    return (f"{which}, its splits by category written as thresholds over the declared values, would have more "
            f"than {MAX_NODES} nodes (the values alternate in and out of the categories too often)")


def build(root, node: Callable, domains: dict, missing: Callable | None = None):
    """The flat arrays (feature, threshold, left, right, value) of a tree read node by node, its
    splits by category rewritten over ``domains``. ``node(id)`` returns ``("leaf", value)``,
    ``("num", feature, threshold, left id, right id)`` or ``("cat", feature, S, set child id, other
    child id)``; ``missing(feature)`` is called (and raises; a KeyError without it) for a split by
    category on an input without a domain. Parents are numbered before their children; a tree that
    would pass :data:`MAX_NODES` raises :class:`TooLarge` (counted first: :func:`tree_size`)."""
    if tree_size(root, node, domains, missing) > MAX_NODES:
        raise TooLarge(MAX_NODES)
    feat, thr, left, right, val = [], [], [], [], []

    def new() -> int:
        if len(feat) >= MAX_NODES:
            raise TooLarge(MAX_NODES)
        feat.append(-1), thr.append(0.0), left.append(-1), right.append(-1), val.append(0.0)
        return len(feat) - 1

    def attach(k: int, slot) -> None:
        if slot is not None:
            (left if slot[1] == 0 else right)[slot[0]] = k

    todo = [("node", root, None)]           # a stack, not recursion: a hostile file's tree may be deep
    while todo:
        task = todo.pop()
        if task[0] == "chain":
            _, f, dom, rs, inside, outside, slot = task
            if len(rs) == 1:
                todo.append(("node", inside if rs[0][2] else outside, slot))
                continue
            mid = len(rs) // 2
            k = new()
            attach(k, slot)
            feat[k], thr[k] = f, (dom[rs[mid - 1][1]] + dom[rs[mid][0]]) / 2.0
            todo.append(("chain", f, dom, rs[mid:], inside, outside, (k, 1)))
            todo.append(("chain", f, dom, rs[:mid], inside, outside, (k, 0)))
            continue
        _, i, slot = task
        n = node(i)
        if n[0] == "cat":
            _, f, members, inside, outside = n
            if f not in domains:
                if missing is not None:
                    missing(f)
                raise KeyError(f)
            todo.append(("chain", f, domains[f], runs(domains[f], members), inside, outside, slot))
            continue
        k = new()
        attach(k, slot)
        if n[0] == "leaf":
            val[k] = n[1]
            continue
        _, f, t, a, b = n
        feat[k], thr[k] = f, t
        todo.append(("node", b, (k, 1)))
        todo.append(("node", a, (k, 0)))
    return feat, thr, left, right, val


def xgboost_node_reader(tj, cond):
    """``node`` for :func:`build` over one tree of an XGBoost JSON model (``cond``: its
    ``split_conditions`` as float32 numbers read in float64)."""
    left, right = tj["left_children"], tj["right_children"]
    types, idx = tj.get("split_type") or [0] * len(left), tj["split_indices"]
    cats = list(tj.get("categories") or ())
    where = {int(n): (int(s), int(z)) for n, s, z in zip(tj.get("categories_nodes") or (),
                                                            tj.get("categories_segments") or (),
                                                            tj.get("categories_sizes") or ())}

    def node(k):
        if int(left[k]) < 0:
            return ("leaf", float(cond[k]))
        if int(types[k]) == 0:
            return ("num", int(idx[k]), float(cond[k]), int(left[k]), int(right[k]))
        s, z = where[k]                 # a KeyError: a malformed file, refused by the caller
        return ("cat", int(idx[k]), frozenset(int(c) for c in cats[s:s + z]), int(right[k]), int(left[k]))

    return node


def lightgbm_members(threshold) -> frozenset:
    """S of a LightGBM split by category (``dump_model``'s threshold "2||3")."""
    return frozenset(int(v) for v in str(threshold).split("||") if v != "")


def has_categorical(tj) -> bool:
    return any(int(s) != 0 for s in tj.get("split_type") or ())


def domain_points(domains: dict, n_inputs: int) -> dict[int, np.ndarray]:
    """The domains as arrays, for the self-check's probes."""
    import numpy as np

    return {int(i): np.asarray(v, dtype=np.float64) for i, v in domains.items() if 0 <= int(i) < n_inputs}
