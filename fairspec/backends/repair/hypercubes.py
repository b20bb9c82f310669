"""Path hypercubes split by sensitive groups, and their path probabilities on the data (FairRepair IV-B, IV-C).

A *cell* is a path hypercube intersected with one sensitive group: for a decision tree the rows
that reach one leaf and belong to one group; for a forest the rows that reach the same leaf in
every tree (the intersections I_d of section V-A) and belong to one group.  Its path probability
is its row count over the data's size.  Boxes are {input column: (lo, hi)}, meaning
lo < x[col] <= hi, in the model's (encoded) input space, as scikit-learn's tests are.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

INF = float("inf")
Box = dict  # {column: (lo, hi)}


@dataclass
class Cells:
    """Rows grouped into cells: (path hypercube or intersection) x sensitive group."""

    keys: np.ndarray      # (C, T) leaf of each tree (T = 1 for a decision tree)
    group: np.ndarray     # (C,) sensitive group index
    decision: np.ndarray  # (C,) the model's decision (0/1), constant on a cell
    size: np.ndarray      # (C,) rows in the cell
    of_row: np.ndarray    # (n,) the cell of each row

    def __len__(self) -> int:
        return len(self.size)

    def rows(self, c: int) -> np.ndarray:
        return np.flatnonzero(self.of_row == c)


def make_cells(leaves: np.ndarray, group: np.ndarray, decision: np.ndarray) -> Cells:
    """leaves: (n, T) leaf index per tree; group: (n,); decision: (n,) 0/1."""
    leaves = np.asarray(leaves, dtype=np.int64).reshape(len(group), -1)
    key = np.column_stack([leaves, group])
    uniq, first, inv = np.unique(key, axis=0, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    dec = np.asarray(decision)[first]
    size = np.bincount(inv, minlength=len(uniq))
    # a cell's decision is constant: every row in it reaches the same leaves
    if np.any(np.asarray(decision) != dec[inv]):
        raise ValueError("rows in one path hypercube received different decisions")
    return Cells(uniq[:, :-1], uniq[:, -1], dec.astype(np.int64), size.astype(np.int64), inv)


def intersect(a: Box, b: Box) -> Box | None:
    """The intersection of two boxes, or None when it is empty."""
    out = dict(a)
    for col, (lo, hi) in b.items():
        lo0, hi0 = out.get(col, (-INF, INF))
        lo1, hi1 = max(lo0, lo), min(hi0, hi)
        if lo1 >= hi1:
            return None
        out[col] = (lo1, hi1)
    return out


def contains(box: Box, X: np.ndarray) -> np.ndarray:
    ok = np.ones(X.shape[0], dtype=bool)
    for col, (lo, hi) in box.items():
        ok &= (X[:, col] > lo) & (X[:, col] <= hi)
    return ok


def _mid(a: float, b: float) -> float:
    return float(a) + (float(b) - float(a)) / 2.0


def subset_boxes(points: np.ndarray, mask: np.ndarray) -> list[Box]:
    """Disjoint boxes holding exactly the selected ``points`` (distinct rows in lexicographic
    order) and none of the others: the refinement of a hypercube down to single points where
    needed (thresholds on its columns; on one-hot columns, subsets of categories)."""
    out: list[Box] = []

    def rec(P: np.ndarray, m: np.ndarray, col: int, box: Box):
        if m.all():
            out.append(box)
            return
        if not m.any():
            return
        vals = P[:, col]
        cuts = np.flatnonzero(np.diff(vals)) + 1
        starts, stops = np.r_[0, cuts], np.r_[cuts, len(P)]
        k, G = 0, len(starts)
        while k < G:
            a, b = starts[k], stops[k]
            if m[a:b].all():          # a run of value groups wholly selected: one interval
                k2 = k
                while k2 + 1 < G and m[starts[k2 + 1]:stops[k2 + 1]].all():
                    k2 += 1
                lo = _mid(vals[a - 1], vals[a]) if a > 0 else None
                hi = _mid(vals[stops[k2] - 1], vals[stops[k2]]) if stops[k2] < len(P) else None
                out.append({**box, col: _narrow(box, col, lo=lo, hi=hi)})
                k = k2 + 1
                continue
            if m[a:b].any():
                lo = _mid(vals[a - 1], vals[a]) if a > 0 else None
                hi = _mid(vals[b - 1], vals[b]) if b < len(P) else None
                rec(P[a:b], m[a:b], col + 1, {**box, col: _narrow(box, col, lo=lo, hi=hi)})
            k += 1

    rec(points, np.asarray(mask, dtype=bool), 0, {})
    return out


def _narrow(box: Box, col: int, lo=None, hi=None) -> tuple[float, float]:
    lo0, hi0 = box.get(col, (-INF, INF))
    return (lo0 if lo is None else max(lo0, lo), hi0 if hi is None else min(hi0, hi))


def lex_points(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct rows of X in lexicographic order, their multiplicities, and each row's index."""
    uniq, inv, counts = np.unique(X, axis=0, return_inverse=True, return_counts=True)
    return uniq, counts, inv.reshape(-1)
