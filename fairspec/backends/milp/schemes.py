"""Schemes of input partitions: boxes over a pair problem's tied inputs (so every pair lies inside one box).

Fairify's scheme (:func:`fairify_partitions`, :func:`default_partitions`), a grid
(:func:`grid_partitions`) and repeated halving of the widest input (:func:`split_widest`); each returns
``[(lo, hi)]`` boxes over the whole domain, which :func:`fairspec.backends.milp.partition.solve_partitioned`
decides one by one.
"""

from __future__ import annotations

import itertools
import math
from typing import Sequence

import numpy as np

from fairspec.backends.pair import PairProblem

__all__ = ["fairify_partitions", "default_partitions", "split_widest", "grid_partitions"]


def _check_features(problem: PairProblem, features: Sequence[int]):
    tied = set(problem.tied)
    in_group = {i for g in problem.onehot_groups for i in g}
    for i in features:
        if i not in tied:
            raise ValueError(f"input {i} is not shared by x and x'; only tied inputs can be partitioned")
        if i in in_group:
            raise ValueError(f"input {i} belongs to a one-hot group; partition on ordinary inputs")


def grid_partitions(problem: PairProblem, splits: dict[int, int]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Cut input ``i`` into ``splits[i]`` near-equal ranges (integer ranges for integral inputs)."""
    _check_features(problem, splits)
    axes = []
    for i, k in sorted(splits.items()):
        lo, hi = problem.lo[i], problem.hi[i]
        if problem.integer[i]:
            vals = np.arange(lo, hi + 0.5)
            k = max(1, min(int(k), len(vals)))
            chunks = np.array_split(vals, k)
            axes.append([(i, float(c[0]), float(c[-1])) for c in chunks])
        else:
            edges = np.linspace(lo, hi, int(k) + 1)
            axes.append([(i, float(a), float(b)) for a, b in zip(edges[:-1], edges[1:])])
    return _boxes(problem, axes)


def fairify_partitions(problem: PairProblem, threshold: int = 10,
                       features: Sequence[int] | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """Fairify's scheme: every tied integral input with more than ``threshold`` values is cut
    into ranges of ``threshold`` values (AC with Fairify's domains: 16,000 partitions)."""
    feats = [i for i in (problem.tied if features is None else features)
             if problem.integer[i] and not any(i in g for g in problem.onehot_groups)]
    splits = {}
    for i in feats:
        size = int(problem.hi[i] - problem.lo[i] + 1)
        if size > threshold:
            splits[i] = math.ceil(size / threshold)
    return _grid_fixed_width(problem, splits, threshold)


def default_partitions(problem: PairProblem, max_parts: int = 1024) -> list[tuple[np.ndarray, np.ndarray]]:
    """Fairify's scheme with the smallest threshold in 10, 20, 40, ... that gives at most
    ``max_parts`` partitions (Fairify's own thresholds: 10 for AC, 100 for BM and GC)."""
    threshold = 10
    feats = [i for i in problem.tied
             if problem.integer[i] and not any(i in g for g in problem.onehot_groups)]
    while True:
        count = 1
        for i in feats:
            size = int(problem.hi[i] - problem.lo[i] + 1)
            if size > threshold:
                count *= math.ceil(size / threshold)
        if count <= max_parts:
            return fairify_partitions(problem, threshold)
        threshold *= 2


def _boxes(problem: PairProblem, axes) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every combination of one (input, lo, hi) range per axis, as a box over the whole domain."""
    parts = []
    for combo in itertools.product(*axes):
        lo = problem.lo.copy()
        hi = problem.hi.copy()
        for i, a, b in combo:
            lo[i], hi[i] = a, b
        parts.append((lo, hi))
    return parts


def _grid_fixed_width(problem, splits, width):
    _check_features(problem, splits)
    axes = []
    for i in sorted(splits):
        lo, hi = int(problem.lo[i]), int(problem.hi[i])
        axes.append([(i, float(a), float(min(a + width - 1, hi))) for a in range(lo, hi + 1, width)])
    return _boxes(problem, axes)


def split_widest(problem: PairProblem, n_parts: int,
                 features: Sequence[int] | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """Halve the widest tied input (by number of values) until there are >= n_parts boxes."""
    feats = [i for i in (problem.tied if features is None else features)
             if not any(i in g for g in problem.onehot_groups)]
    _check_features(problem, feats)
    boxes = [(problem.lo.copy(), problem.hi.copy())]
    while len(boxes) < n_parts:
        lo, hi = boxes[0]
        size = np.array([(hi[i] - lo[i] + (1 if problem.integer[i] else 0)) for i in feats])
        if not feats or size.max() <= 1:
            break
        k = feats[int(np.argmax(size))]
        boxes.pop(0)
        if problem.integer[k]:
            mid = math.floor((lo[k] + hi[k]) / 2)
            a, b = (lo.copy(), hi.copy()), (lo.copy(), hi.copy())
            a[1][k], b[0][k] = mid, mid + 1
        else:
            mid = 0.5 * (lo[k] + hi[k])
            a, b = (lo.copy(), hi.copy()), (lo.copy(), hi.copy())
            a[1][k], b[0][k] = mid, mid
        boxes.extend([a, b])
        boxes.sort(key=lambda bx: -max((bx[1][i] - bx[0][i]) for i in feats))
    boxes.sort(key=lambda bx: tuple(bx[0]) + tuple(bx[1]))
    return boxes
