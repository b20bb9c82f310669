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
                if v.size and v.min() == v.max():    # a constant column: numpy's mean of n copies of 1/3 is
                    c = dataclasses.replace(c, mean=float(v[0]), std=0.0)   # an ulp off, its std 5.6e-17, not 0
        cols.append(c)
    return dataclasses.replace(enc, columns=tuple(cols))


def fit_batches(enc: ir.Encoding, batches=None, stats: dict | None = None) -> ir.Encoding:
    """``fit`` from streamed statistics (``batch_stats`` over batches of feature values)."""
    if stats is None:
        stats = batch_stats({c.feature for c in enc.columns if c.fitted}, batches)
    cols = []
    for c in enc.columns:
        if c.fitted and c.feature in stats:
            lo, hi, mean, m2, n = stats[c.feature]
            if c.kind == "minmax":
                c = dataclasses.replace(c, lo=lo, hi=hi)
            elif c.kind == "standard" and lo == hi:   # a constant column (see fit)
                c = dataclasses.replace(c, mean=float(lo), std=0.0)
            elif c.kind == "standard":
                c = dataclasses.replace(c, mean=float(mean), std=float(np.sqrt(max(0.0, m2 / n))))
        cols.append(c)
    return dataclasses.replace(enc, columns=tuple(cols))


def batch_stats(feats, batches) -> dict:
    """{feature: (min, max, mean, sum of squared deviations from the mean, count)} over batches of feature
    values, in one pass: each batch's mean and squared deviations computed two-pass, as ``fit``'s numpy
    mean and std are, and the batches combined by Chan et al.'s pairwise update. (The sum of squares less
    n mean^2 loses every digit of a feature whose spread is small beside its mean: values 10^8 .. 10^8 + 3
    gave std 0, a proof about another model than the one ``fit`` reads from the same rows in memory.)"""
    out: dict = {}
    for values in batches:
        for f in feats:
            v = np.asarray(values[f], dtype=np.float64)
            if not v.size:
                continue
            mb = float(v.mean())
            m2b = float(np.square(v - mb).sum())
            lo, hi, mean, m2, n = out.get(f, (np.inf, -np.inf, 0.0, 0.0, 0))
            nb = v.size
            tot = n + nb
            delta = mb - mean
            mean = mb if n == 0 else mean + delta * (nb / tot)
            m2 = m2b if n == 0 else m2 + m2b + delta * delta * (n * nb / tot)
            out[f] = (min(lo, float(v.min())), max(hi, float(v.max())), mean, m2, tot)
    return out


def needs_fit(enc: ir.Encoding) -> bool:
    return any(c.fitted and (c.lo is None and c.mean is None) for c in enc.columns)


def encode(enc: ir.Encoding, values: dict[str, np.ndarray], n: int) -> np.ndarray:
    """Model-input matrix (n, width) from feature values (categories as indices)."""
    X = np.zeros((n, enc.width), dtype=np.float64)
    flat, row0 = X.reshape(-1), None  # one-hot blocks are set through the flat view: one index per row
    for c in enc.columns:
        v = np.asarray(values[c.feature], dtype=np.float64)
        if c.kind == "raw":
            X[:, c.offset] = v
        elif c.kind == "code":
            X[:, c.offset] = np.asarray(c.codes, dtype=np.float64)[v.astype(np.int64)]
        elif c.kind == "onehot":
            if row0 is None:
                row0 = np.arange(n, dtype=np.int64) * enc.width
            flat[row0 + (c.offset + v.astype(np.int64))] = 1.0
        elif c.kind == "minmax" and c.scale is not None:
            X[:, c.offset] = v * c.scale + c.shift      # scikit-learn's MinMaxScaler: X *= scale_; X += min_
        elif c.kind == "minmax":
            span = (c.hi - c.lo) or 1.0
            X[:, c.offset] = (v - c.lo) / span
        elif c.kind == "standard":
            X[:, c.offset] = (v - c.mean) / (c.std or 1.0)
        else:  # pragma: no cover - sema rejects other kinds
            raise ValueError(c.kind)
    return X


def decode_row(enc: ir.Encoding, fs: ir.FeatureSet, x, known: dict | None = None) -> dict[str, object]:
    """Spec-level feature values (category names, unscaled numbers) of one model-input vector, in the
    feature set's order (a witness is read against the spec; a scikit-learn ColumnTransformer's
    column order is the model's, not the user's). ``known``: feature -> the category index the point
    was encoded from (an enumeration's, a data row's), printed for a code column where its code is the
    input (a table giving several categories one code: otherwise the first of them, kinds/shared_codes)."""
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
            k = None if known is None or c.feature not in known else int(round(float(known[c.feature])))
            if k is not None and 0 <= k < len(c.codes) and float(c.codes[k]) == float(seg[0]):
                value = c.categories[k]
        else:
            v = float(seg[0])
            if c.kind == "minmax" and c.scale is not None:
                v = (v - c.shift) / c.scale
            elif c.kind == "minmax":
                v = v * ((c.hi - c.lo) or 1.0) + c.lo
            elif c.kind == "standard":
                v = v * (c.std or 1.0) + c.mean
            if f is not None and isinstance(f.domain, ir.Boolean):
                value = bool(round(v))
            elif f is not None and isinstance(f.domain, ir.IntRange):
                value = int(round(v)) if abs(v - round(v)) < 1e-6 else round(v, 6)
            else:
                value = _spec_real(c, float(seg[0]), v, f)
        out[c.feature] = value
    rank = {f.name: i for i, f in enumerate(fs.features)}
    return dict(sorted(out.items(), key=lambda kv: rank.get(kv[0], len(rank))))


def _column_value(c, v: float) -> float:
    """One real value through one numeric column, exactly as :func:`encode` computes it."""
    a = np.array([v], dtype=np.float64)
    if c.kind == "raw":
        return float(a[0])
    if c.kind == "minmax" and c.scale is not None:
        return float((a * c.scale + c.shift)[0])
    if c.kind == "minmax":
        return float(((a - c.lo) / ((c.hi - c.lo) or 1.0))[0])
    return float(((a - c.mean) / (c.std or 1.0))[0])


def _spec_real(c, x: float, v: float, f) -> float:
    """The spec-level value a witness prints for a real feature: the shortest number (as Python writes
    it) that encodes to the model input ``x`` exactly, so the printed witness replays as reported
    (rounding to 6 places printed 69.89 for 69.89000000000001, a pair that no longer broke the claim);
    ``v`` (the column's inverse) where no nearby number does."""
    lo = hi = None
    if f is not None and isinstance(f.domain, ir.RealRange):
        lo, hi = f.domain.lo, f.domain.hi
    cands = {round(v, k) for k in (2, 4, 6, 9, 12, 15)} | {v}
    w = v
    for _ in range(4):
        w = float(np.nextafter(w, np.inf))
        cands.add(w)
    w = v
    for _ in range(4):
        w = float(np.nextafter(w, -np.inf))
        cands.add(w)
    for cand in sorted(cands, key=lambda t: (len(repr(t)), abs(t - v))):
        if (lo is None or lo <= cand) and (hi is None or cand <= hi) and _column_value(c, cand) == x:
            return cand
    return v
