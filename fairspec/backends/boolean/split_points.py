"""Which raw values of a numeric feature a compiled split sends right -- decided on the floats the runtime feeds.

A tree ensemble compiled into one decision tree (:mod:`fairspec.backends.trees.compile`) tests a model input
``x > c``, ``c`` the largest float64 input the library sends left. The distribution backends read the test on
the feature's raw values (a bin edge; for a whole-number feature, an integer). Mapping ``c`` back as
``c * std + mean`` rounds: with ``standard(mean = 37.3, std = 13.7)`` and ``c`` the float just below
(60 - 37.3) / 13.7, the runtime feeds 60 as a float above ``c`` (right) while the rounded image is 60.0 (60 > 60
is false: left). Here every raw value is instead pushed through the runtime's own encoder
(:func:`fairspec.runtime.encoding.encode`, one column) and the feeds compared with ``c``: the encoder is monotone
(a subtraction and a division by a positive number, or a product by a positive scale and a sum, each rounded to
nearest), so the values sent left are exactly those up to one raw float (``raw_cut``), found by bisection over
float64 values (integers for a whole-number feature) -- never a rounded inverse image.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from fairspec import ir
from fairspec.models.trees import last_left
from fairspec.verdict import Unsupported

__all__ = ["fed", "raw_cut", "box"]


def fed(col: ir.ColumnEncoding, values) -> np.ndarray:
    """The model inputs the runtime's encoder gives raw ``values`` of one numeric column (float64)."""
    from fairspec.runtime.encoding import encode

    v = np.asarray(values, dtype=np.float64).reshape(-1)
    one = ir.Encoding(features="", model="", columns=(dataclasses.replace(col, offset=0, width=1),), width=1)
    with np.errstate(over="ignore", invalid="ignore"):     # a domain end near the largest float: inf, as the runtime
        return encode(one, {col.feature: v}, v.size)[:, 0]


def _check_monotone(col, f, a: float, b: float) -> None:
    fa, fb = fed(col, [a, b])
    if not (fa <= fb):
        raise Unsupported(f"the encoding of '{f.name}' ({col.kind}) does not map its domain [{a!r}, {b!r}] onto "
                          f"increasing model inputs ({fa!r}, {fb!r}); the Boolean form reads numeric "
                          f"columns whose scale is positive")


def box(col: ir.ColumnEncoding, f: ir.Feature) -> tuple[float, float]:
    """(lo, hi): the half-open box ``(lo, hi]`` of model inputs the feature's domain is fed as."""
    a, b = float(f.domain.lo), float(f.domain.hi)
    _check_monotone(col, f, a, b)
    fa, fb = fed(col, [a, b])
    return float(np.nextafter(fa, -np.inf)), float(fb)


def raw_cut(col: ir.ColumnEncoding, f: ir.Feature, c: float) -> float:
    """The largest raw value of the feature's domain fed as an input ``<= c`` (an integer for an int feature);
    one below the domain (``lo - 1`` or the float below ``lo``) when every value is fed above ``c``. The raw test
    ``x > raw_cut`` then holds on the domain exactly where the runtime's ``fed(x) > c`` does."""
    a, b = float(f.domain.lo), float(f.domain.hi)
    _check_monotone(col, f, a, b)
    left = lambda x: bool(fed(col, [x])[0] <= c)          # noqa: E731
    if isinstance(f.domain, ir.IntRange):
        lo, hi = int(f.domain.lo), int(f.domain.hi)
        if not left(float(lo)):
            return float(lo - 1)
        if left(float(hi)):
            return float(hi)
        while hi - lo > 1:                                  # left(lo), not left(hi)
            mid = (lo + hi) // 2
            if left(float(mid)):
                lo = mid
            else:
                hi = mid
        return float(lo)
    if not left(a):
        return float(np.nextafter(a, -np.inf))
    if left(b):
        return b
    return last_left(a, b, left)   # left(a), not left(b): bisect the float64 values


def _numeric(enc: ir.Encoding, fs: ir.FeatureSet, i: int):
    """(encoding column, feature) of model input i when it is a numeric feature's one column, else None."""
    for c in enc.columns:
        if c.offset <= i < c.offset + c.width and c.kind in ("raw", "minmax", "standard"):
            f = fs.get(c.feature)
            if f is not None and isinstance(f.domain, (ir.IntRange, ir.RealRange)):
                return c, f
    return None


def boxes(enc: ir.Encoding, fs: ir.FeatureSet, width: int) -> dict[int, tuple[float, float]]:
    """Model input -> its box (``box``) for every numeric feature's column."""
    out = {}
    for i in range(width):
        hit = _numeric(enc, fs, i)
        if hit is not None:
            out[i] = box(*hit)
    return out


def in_raw_units(est, cols, enc: ir.Encoding, fs: ir.FeatureSet):
    """A compiled tree (:func:`fairspec.backends.trees.compile.compile_decision`: ``x <= c`` goes left, ``c`` a
    float64 input) with every numeric feature's cut replaced by its ``raw_cut``, and the columns with those
    features read raw (offset 0, scale 1): the tree's tests are then the runtime's, value by value."""
    from types import SimpleNamespace

    t = est.tree_
    thr = np.array(t.threshold, dtype=np.float64, copy=True)
    out_cols = list(cols)
    for k in range(t.node_count):
        if t.children_left[k] == -1:
            continue
        i = int(t.feature[k])
        hit = _numeric(enc, fs, i)
        if hit is not None:
            thr[k] = raw_cut(hit[0], hit[1], float(thr[k]))
    for i in range(len(out_cols)):
        if _numeric(enc, fs, i) is not None:
            out_cols[i] = dataclasses.replace(out_cols[i], offset=0.0, scale=1.0)
    tree = SimpleNamespace(**{**vars(t), "threshold": thr})
    return SimpleNamespace(**{**vars(est), "tree_": tree}), out_cols
