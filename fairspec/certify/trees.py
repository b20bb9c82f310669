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

What certify trusts: the split tests it is given are the model's (the tree converters check
themselves against the library's predictions, ``fairspec.models.trees``) and the encoded values
are the runtime encoding's of the domain values (``fairspec.runtime.encoding.encode``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from fairspec.certify.enumerate import Check, Enumerated, by_enumeration

__all__ = ["SplitTest", "Factor", "check_cells", "by_cell_enumeration"]


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
