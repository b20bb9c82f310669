"""The input encoding: human-level feature values <-> the model's input vector."""

from __future__ import annotations

import dataclasses

import numpy as np

from fairspec import ir


def fit(enc: ir.Encoding, values: dict[str, np.ndarray]) -> ir.Encoding:
    """Fill in scaling parameters that the spec asks to fit on the data."""
    cols = []
    for c in enc.columns:
        if c.fitted:
            v = values[c.feature].astype(np.float64)
            if c.kind == "minmax":
                c = dataclasses.replace(c, lo=float(v.min()), hi=float(v.max()))
            elif c.kind == "standard":
                c = dataclasses.replace(c, mean=float(v.mean()), std=float(v.std()))
        cols.append(c)
    return dataclasses.replace(enc, columns=tuple(cols))


def fit_batches(enc: ir.Encoding, batches) -> ir.Encoding:
    """``fit`` over batches of feature values (one streamed pass): min, max, mean and std."""
    feats = {c.feature for c in enc.columns if c.fitted}
    lo, hi, s1, s2, n = {}, {}, {}, {}, 0
    for values in batches:
        for f in feats:
            v = np.asarray(values[f], dtype=np.float64)
            if not v.size:
                continue
            lo[f] = min(lo.get(f, np.inf), float(v.min()))
            hi[f] = max(hi.get(f, -np.inf), float(v.max()))
            s1[f] = s1.get(f, 0.0) + float(v.sum())
            s2[f] = s2.get(f, 0.0) + float(np.square(v).sum())
        n += len(next(iter(values.values()))) if values else 0
    cols = []
    for c in enc.columns:
        if c.fitted and c.feature in lo:
            if c.kind == "minmax":
                c = dataclasses.replace(c, lo=lo[c.feature], hi=hi[c.feature])
            elif c.kind == "standard":
                mean = s1[c.feature] / n
                c = dataclasses.replace(c, mean=mean, std=float(np.sqrt(max(0.0, s2[c.feature] / n - mean * mean))))
        cols.append(c)
    return dataclasses.replace(enc, columns=tuple(cols))


def needs_fit(enc: ir.Encoding) -> bool:
    return any(c.fitted and (c.lo is None and c.mean is None) for c in enc.columns)


def encode(enc: ir.Encoding, values: dict[str, np.ndarray], n: int) -> np.ndarray:
    """Model-input matrix (n, width) from feature values (categories as indices)."""
    X = np.zeros((n, enc.width), dtype=np.float64)
    for c in enc.columns:
        v = np.asarray(values[c.feature], dtype=np.float64)
        if c.kind == "raw":
            X[:, c.offset] = v
        elif c.kind == "code":
            X[:, c.offset] = np.asarray(c.codes, dtype=np.float64)[v.astype(np.int64)]
        elif c.kind == "onehot":
            X[np.arange(n), c.offset + v.astype(np.int64)] = 1.0
        elif c.kind == "minmax":
            span = (c.hi - c.lo) or 1.0
            X[:, c.offset] = (v - c.lo) / span
        elif c.kind == "standard":
            X[:, c.offset] = (v - c.mean) / (c.std or 1.0)
        else:  # pragma: no cover - sema rejects other kinds
            raise ValueError(c.kind)
    return X


def decode_row(enc: ir.Encoding, fs: ir.FeatureSet, x) -> dict[str, object]:
    """Spec-level feature values (category names, unscaled numbers) of one model-input vector."""
    x = np.asarray(x, dtype=np.float64)
    out: dict[str, object] = {}
    for c in enc.columns:
        f = fs.get(c.feature)
        seg = x[c.offset:c.offset + c.width]
        if c.kind == "onehot":
            value = c.categories[int(np.argmax(seg))]
        elif c.kind == "code":
            codes = np.asarray(c.codes)
            value = c.categories[int(np.argmin(np.abs(codes - seg[0])))]
        else:
            v = float(seg[0])
            if c.kind == "minmax":
                v = v * ((c.hi - c.lo) or 1.0) + c.lo
            elif c.kind == "standard":
                v = v * (c.std or 1.0) + c.mean
            if f is not None and isinstance(f.domain, ir.Boolean):
                value = bool(round(v))
            elif f is not None and isinstance(f.domain, ir.IntRange):
                value = int(round(v)) if abs(v - round(v)) < 1e-6 else round(v, 6)
            else:
                value = round(v, 6)
        out[c.feature] = value
    return out
