"""Tree models: enumeration over cells of the domain on which every split test agrees.

A tree model's output depends on its input only through the outcomes of its split tests
``x[col] <= t`` (``x[col] < t`` for XGBoost), compared as the library compares them: after a
cast of the input to float32 for scikit-learn's trees and XGBoost, in float64 for LightGBM and
HistGradientBoosting. Two domain values of a feature on which every test of the model agrees
reach the same leaves, so the model gives them the same output bit for bit. A **cell** is a set
of such values of one feature (one factor of the domain); a pair problem over the product of
cells is then decided by enumerating cell representatives on the library's own runtime.

:func:`check_cells` re-evaluates every split test on every encoded value of every cell, exactly
(numpy float32 casts and float comparisons are exact operations), and :func:`by_cell_enumeration`
mints the ``enumeration`` proof only when the cells are sound and every enumerated pair of
representatives satisfies the property (:func:`fairspec.certify.enumerate.by_enumeration`).

A cell of a continuous (or wide integer) feature may be given by its two end values: the runtime
encoding (``(v - lo) / span``, ``(v - mean) / std`` in float64) and the library's comparison are
monotone in the value, so a test that agrees on both ends agrees on every value between them.

What certify trusts: the split tests it is given are the model's (the tree converters check
themselves against the library's predictions, ``fairspec.models.trees``) and the encoded values
are the runtime encoding's of the domain values (``fairspec.runtime.encoding.encode``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from fairspec.certify.enumerate import Check, Enumerated, by_enumeration

__all__ = ["SplitTest", "Factor", "check_cells", "by_cell_enumeration", "kdisc_by_cell_enumeration", "prove_unread"]


@dataclass(frozen=True)
class SplitTest:
    """One split test: goes left when ``x[column] <= threshold`` (``<`` with ``strict``), the
    input cast to float32 first with ``f32``."""

    column: int
    threshold: float
    strict: bool = False
    f32: bool = False

    def left(self, u: np.ndarray) -> np.ndarray:
        u = np.asarray(u, dtype=np.float64)
        if self.f32:
            u = u.astype(np.float32).astype(np.float64)
        return u < self.threshold if self.strict else u <= self.threshold


@dataclass(frozen=True, eq=False)
class Factor:
    """One feature of the domain: its model-input ``columns``, the encoded value of each of its
    domain values (``U``: values x columns) and each value's cell (``cell``: ints)."""

    name: str
    columns: tuple[int, ...]
    U: np.ndarray
    cell: np.ndarray


def check_cells(tests: Sequence[SplitTest], factors: Sequence[Factor]) -> str | None:
    """None when every test gives one outcome on each cell of the factor that owns its column
    (and every column a test reads belongs to a factor); else the sentence why not."""
    owner = {}
    for fi, f in enumerate(factors):
        U = np.asarray(f.U, dtype=np.float64)
        cell = np.asarray(f.cell)
        if U.ndim != 2 or U.shape[1] != len(f.columns) or cell.shape != (U.shape[0],):
            return f"factor {f.name}: {U.shape} encoded values for {len(f.columns)} columns and {cell.shape} cells"
        for j, c in enumerate(f.columns):
            if c in owner:
                return f"column {c} belongs to two factors"
            owner[c] = (fi, j)
    for t in tests:
        if t.column not in owner:
            return f"a split test reads column {t.column}, which no factor of the domain encodes"
        fi, j = owner[t.column]
        f = factors[fi]
        out = t.left(np.asarray(f.U, dtype=np.float64)[:, j])
        cell = np.asarray(f.cell)
        ids, inv = np.unique(cell, return_inverse=True)
        lo = np.ones(len(ids), dtype=bool)
        hi = np.zeros(len(ids), dtype=bool)
        np.logical_and.at(lo, inv, out)
        np.logical_or.at(hi, inv, out)
        if np.any(lo != hi):
            bad = int(ids[int(np.flatnonzero(lo != hi)[0])])
            return (f"the split test x[{t.column}] {'<' if t.strict else '<='} {t.threshold!r} does not agree on "
                    f"cell {bad} of {f.name}")
    return None


def by_cell_enumeration(tests: Sequence[SplitTest], factors: Sequence[Factor], fair_when: Check | Sequence[Check], *,
                        count: int, claim: str, **detail) -> Enumerated:
    """The ``enumeration`` proof over cell pairs (see the module docstring). Raises ValueError
    when the cells are not sound (a caller's error: nothing is proved)."""
    why = check_cells(tests, factors)
    if why is not None:
        raise ValueError(f"the cells are not sound: {why}")
    cells = {f.name: int(len(np.unique(np.asarray(f.cell)))) for f in factors}
    return by_enumeration(fair_when, count=count, claim=claim, unit="cell pairs", cells=cells,
                          split_tests=len(tests), **detail)


def prove_unread(tests: Sequence[SplitTest], varying: Sequence[Factor], *, post: str, op: str = "<=", eps=0,
                 claim: str = "", **detail):
    """The proof that every admissible pair gets the same output bit for bit: no split test tells
    apart two values of a varying (protected or relaxed) feature (each test is constant over every
    encoded value of each varying factor; a continuous factor is given by the encoded values of its
    bounds, and the runtime encoding is monotone), so x and x' reach the same leaves and
    ``|out(x) - out(x')| = 0``. None when a test does tell them apart, or when 0 does not satisfy
    the post-condition's ``op eps``."""
    from fairspec.certify.exact import decide
    from fairspec.certify.proof import _mint

    one = [Factor(f.name, f.columns, f.U, np.zeros(np.asarray(f.U).shape[0], dtype=np.int64)) for f in varying]
    cols = {c for f in one for c in f.columns}
    mine = [t for t in tests if t.column in cols]
    if check_cells(mine, one) is not None:
        return None
    if post != "label" and not decide(0, op, eps):
        return None
    what = "the same label" if post == "label" else f"|{post}(x) - {post}(x')| = 0 {op} {eps}"
    return _mint("exact-arithmetic", claim or f"no split test of the model tells the protected or relaxed values "
                 f"apart: every admissible pair reaches the same leaves ({what})", value=0, op=op, threshold=eps,
                 split_tests=len(tests), varying=[f.name for f in varying], **detail)


def kdisc_by_cell_enumeration(tests: Sequence[SplitTest], factors: Sequence[Factor], scores, *, K: int, eps, op: str,
                              k: int, logit: bool, claim: str, **detail):
    """:func:`fairspec.certify.enumerate.kdisc_by_enumeration` over one representative individual per
    cell (the cells checked first, as in :func:`by_cell_enumeration`). Raises ValueError when the
    cells are not sound."""
    from fairspec.certify.enumerate import kdisc_by_enumeration

    why = check_cells(tests, factors)
    if why is not None:
        raise ValueError(f"the cells are not sound: {why}")
    cells = {f.name: int(len(np.unique(np.asarray(f.cell)))) for f in factors}
    return kdisc_by_enumeration(scores, K=K, eps=eps, op=op, k=k, logit=logit, claim=claim, cells=cells,
                                split_tests=len(tests), **detail)


# ---------------------------------------------------------------------------------------------
# leaf boxes: products of cells on which every tree reaches one leaf
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class TreeNodes:
    """One tree's nodes: ``tests[k]`` the split test of node k (None at a leaf), its children."""

    tests: tuple
    left: np.ndarray
    right: np.ndarray


class Boxes:
    """Products of cells (one mask over each factor's cells per box) that cover the factors'
    domain and on which every tree of every counterfactual reaches one leaf. Made only by
    :func:`leaf_boxes`, which derived them itself."""

    def __init__(self, masks, reps, n_cells, token):
        if token is not _TOKEN:
            raise TypeError("Boxes are made by certify.trees.leaf_boxes only")
        self.masks = masks          # list of boxes: list (per factor) of bool (nc,)
        self.reps = reps            # (n_boxes, n_factors) the representative cell of each factor
        self.n_cells = n_cells

    def __len__(self):
        return len(self.masks)


_TOKEN = object()


def leaf_boxes(trees: Sequence[TreeNodes], factors: Sequence[Factor], fixed: Sequence[dict], *,
               max_boxes: int = 100_000) -> Boxes | None:
    """Split the product of the factors' cells until, in every box and for every counterfactual
    (``fixed``: K dicts {column: encoded value} of the columns the counterfactuals set), every tree
    reaches a single leaf; each split partitions one factor's cells by a split test's outcome.
    None when more than ``max_boxes`` boxes would be needed. Raises ValueError when the cells are
    not sound or a test reads a column neither a factor nor a counterfactual sets."""
    all_tests = {t for tr in trees for t in tr.tests if t is not None}
    fixed_cols = set().union(*[set(d) for d in fixed]) if fixed else set()
    owner = {}
    for fi, f in enumerate(factors):
        for j, c in enumerate(f.columns):
            owner[c] = (fi, j)
    why = check_cells([t for t in all_tests if t.column in owner], factors)
    if why is not None:
        raise ValueError(f"the cells are not sound: {why}")
    if any(t.column not in owner and t.column not in fixed_cols for t in all_tests):
        raise ValueError("a split test reads a column that neither a factor nor a counterfactual sets")
    ncs = [int(np.asarray(f.cell).max()) + 1 for f in factors]
    first = [np.array([int(np.flatnonzero(np.asarray(f.cell) == c)[0]) for c in range(n)]) for f, n in zip(factors, ncs)]
    outcome = {}

    def cell_out(t: SplitTest):
        o = outcome.get(id(t))            # by identity: a dataclass hash per node visit is slow
        if o is None:
            fi, j = owner[t.column]
            o = t.left(np.asarray(factors[fi].U, dtype=np.float64)[first[fi], j])
            outcome[id(t)] = o
        return o

    def straddle(masks):
        """(factor index, test) of the first split that a box still straddles, or None."""
        for d in fixed:
            for tr in trees:
                stack = [0]
                while stack:
                    k = stack.pop()
                    t = tr.tests[k]
                    if t is None:
                        continue
                    if t.column in d:
                        go = bool(t.left(np.array([d[t.column]]))[0])
                        stack.append(int(tr.left[k] if go else tr.right[k]))
                        continue
                    fi, _ = owner[t.column]
                    o = cell_out(t)[masks[fi]]
                    if o.all():
                        stack.append(int(tr.left[k]))
                    elif not o.any():
                        stack.append(int(tr.right[k]))
                    else:
                        return fi, t
        return None

    done = []
    todo = [[np.ones(n, dtype=bool) for n in ncs]]
    while todo:
        masks = todo.pop()
        s = straddle(masks)
        if s is None:
            done.append(masks)
            if len(done) > max_boxes:
                return None
            continue
        fi, t = s
        o = cell_out(t)
        for part in (masks[fi] & o, masks[fi] & ~o):
            m2 = list(masks)
            m2[fi] = part
            todo.append(m2)
        if len(todo) + len(done) > 4 * max_boxes:
            return None
    reps = np.array([[int(np.flatnonzero(m)[0]) for m in masks] for masks in done], dtype=np.int64).reshape(
        len(done), len(factors))
    return Boxes(done, reps, int(np.prod(ncs, dtype=np.float64)), _TOKEN)


def kdisc_by_boxes(boxes: Boxes, scores, *, K: int, eps, op: str, k: int, logit: bool, claim: str, **detail):
    """:func:`fairspec.certify.enumerate.kdisc_by_enumeration` over one representative individual per
    leaf box (``scores``: box-major, K counterfactuals each, evaluated on the runtime)."""
    from fairspec.certify.enumerate import kdisc_by_enumeration

    if not isinstance(boxes, Boxes):
        raise TypeError("boxes must come from certify.trees.leaf_boxes")
    return kdisc_by_enumeration(scores, K=K, eps=eps, op=op, k=k, logit=logit, claim=claim, boxes=len(boxes),
                                cells=boxes.n_cells, **detail)


def by_box_enumeration(boxes: Boxes, fair_when, *, tests: Sequence[SplitTest], varying: Sequence[Factor], count: int,
                       claim: str, **detail):
    """:func:`fairspec.certify.enumerate.by_enumeration` over pairs of representatives of leaf boxes
    (each box with every combination of the ``varying`` features' cells -- checked here -- evaluated
    on the runtime)."""
    if not isinstance(boxes, Boxes):
        raise TypeError("boxes must come from certify.trees.leaf_boxes")
    cols = {c for f in varying for c in f.columns}
    why = check_cells([t for t in tests if t.column in cols], varying)
    if why is not None:
        raise ValueError(f"the cells are not sound: {why}")
    return by_enumeration(fair_when, count=count, claim=claim, unit="cell pairs", boxes=len(boxes),
                          cells=boxes.n_cells, **detail)


# ---------------------------------------------------------------------------------------------
# a certified upper bound on a pair's output difference (maximize beyond enumeration)
# ---------------------------------------------------------------------------------------------

def difference_bound(leaf_values: Sequence[np.ndarray], varying: Sequence[bool], *, divisor: float = 1.0,
                     base: float = 0.0, precision: str = "float64"):
    """An upper bound (a float, rounded up) on ``S(x) - S(x')`` as the runtime computes S: the
    trees that read a varying input contribute at most their largest minus their smallest leaf
    (exactly, in rationals), the others the same leaf to both; each runtime sum of n leaf values and
    the base, in any order, then divided by ``divisor``, is within ``2 gamma(n + 2) (|base| +
    sum max |leaf|) / divisor`` of the exact one (``precision``: the runtime's float32 / float64)."""
    from fractions import Fraction

    from fairspec.certify.proof import _mint
    from fairspec.certify.rounding import U32, U64, float_up, fraction, gamma

    u = U32 if precision == "float32" else U64
    n = len(leaf_values)
    d = Fraction(0)
    mag = abs(fraction(base))
    for v, vary in zip(leaf_values, varying):
        v = np.asarray(v, dtype=np.float64)
        if v.size == 0:
            continue
        mag += max(abs(fraction(float(v.max()))), abs(fraction(float(v.min()))))
        if vary:
            d += fraction(float(v.max())) - fraction(float(v.min()))
    div = fraction(divisor)
    E = fraction(gamma(n + 2, u)) * mag / div
    bound = d / div + 2 * E
    return float_up(bound), _mint("interval", "S(x) - S(x') <= the bound for every pair, on the runtime",
                                  upper=bound, runtime_error=E, trees=n, varying=int(sum(bool(x) for x in varying)))
