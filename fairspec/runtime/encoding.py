"""The input encoding: human-level feature values <-> the model's input vector."""

from __future__ import annotations

import dataclasses

import numpy as np

from fairspec import ir


def fit(enc: ir.Encoding, values: dict[str, np.ndarray]) -> ir.Encoding:
    """Fill in scaling parameters that the spec asks to fit on the data (rows in memory): the same
    parameters as ``fit_batches`` gives the same rows in any batches (see ``batch_stats``)."""
    feats = {c.feature for c in enc.columns if c.fitted}
    return fit_batches(enc, stats=batch_stats(feats, [values]))


def fit_batches(enc: ir.Encoding, batches=None, stats: dict | None = None) -> ir.Encoding:
    """``fit`` from streamed statistics (``batch_stats`` over batches of feature values).

    ``minmax``: the least and largest value. ``standard``: scikit-learn's StandardScaler -- the mean and
    the population variance, here each the exact value of the rows correctly rounded (so independent of
    how the rows were batched; StandardScaler's float sums agree to rounding), and the scale sqrt(var),
    or 1 where StandardScaler calls the column constant (``_is_constant_feature``: var <= n eps var +
    (n mean eps)^2, eps = 2^-52). A near-constant column (values 1e8 + k ulp) has a variance below
    that bound: StandardScaler scales it by 1, where numpy's std (2e-8) fed the model inputs of +-1."""
    if stats is None:
        stats = batch_stats({c.feature for c in enc.columns if c.fitted}, batches)
    cols = []
    for c in enc.columns:
        if c.fitted and c.feature in stats:
            lo, hi, n, s, q, e = stats[c.feature]
            if c.kind == "minmax":
                c = dataclasses.replace(c, lo=lo, hi=hi)
            elif c.kind == "standard":
                mean, std = _standard_scale(n, s, q, e)
                c = dataclasses.replace(c, mean=mean, std=std)
        cols.append(c)
    return dataclasses.replace(enc, columns=tuple(cols))


def _standard_scale(n: int, s, q, e: int) -> tuple[float, float]:
    """(mean_, scale_) of scikit-learn's StandardScaler from exact sums: the sum of the values is
    s * 2^e and of their squares q * 2^(2e) (Python ints; None where a value is not finite)."""
    if not n or s is None:
        return float("nan"), float("nan")
    mean = _ratio(s, n, e)                                  # correctly rounded: int / int is
    var = _ratio(n * q - s * s, n * n, 2 * e)               # exact n^2 var = n q - s^2 >= 0
    eps = float(np.finfo(np.float64).eps)
    if var == np.inf:                                       # beyond float64, as numpy's std
        return mean, var
    if var <= n * eps * var + (n * mean * eps) ** 2:        # sklearn.preprocessing._data._is_constant_feature
        return mean, 1.0                                    # _handle_zeros_in_scale: a constant's scale is 1
    return mean, float(np.sqrt(var))


def _ratio(num: int, den: int, e: int) -> float:
    """num * 2^e / den, correctly rounded to a float (inf beyond the largest)."""
    try:
        return (num << e) / den if e >= 0 else num / (den << -e)
    except OverflowError:
        return float("inf") if num > 0 else float("-inf")


_SPLIT = 1 << 16        # rows summed at once in int64: each term is below 2^37, so these cannot overflow


def _moments(v: np.ndarray):
    """(s, q, e): the exact sum of the values is s * 2^e and of their squares q * 2^(2e) (Python ints);
    (None, None, 0) when a value is not finite. Every float is M * 2^x with |M| < 2^53 an integer:
    the rows are grouped by x, and each group's M (and M^2) summed exactly in int64 pieces."""
    v = np.asarray(v, dtype=np.float64).ravel()
    if not np.isfinite(v).all():
        return None, None, 0
    s = q = 0
    e = None
    for k in range(0, v.size, _SPLIT):
        m, x = np.frexp(v[k:k + _SPLIT])
        M = np.ldexp(m, 53).astype(np.int64)
        x = x.astype(np.int64) - 53
        order = np.argsort(x, kind="stable")
        M, x = M[order], x[order]
        starts = np.flatnonzero(np.r_[True, x[1:] != x[:-1]])
        A = np.abs(M)
        a, b, c = A >> 36, (A >> 18) & ((1 << 18) - 1), A & ((1 << 18) - 1)
        parts_s = ((M >> 26, 26), (M & ((1 << 26) - 1), 0))
        parts_q = ((a * a, 72), (2 * a * b, 54), (2 * a * c + b * b, 36), (2 * b * c, 18), (c * c, 0))
        sums_s = [(np.add.reduceat(t, starts).tolist(), sh) for t, sh in parts_s]
        sums_q = [(np.add.reduceat(t, starts).tolist(), sh) for t, sh in parts_q]
        for g, i in enumerate(starts.tolist()):
            xg = int(x[i])
            if e is None or xg < e:                          # rebase what is summed so far
                if e is not None:
                    s, q = s << (e - xg), q << (2 * (e - xg))
                e = xg
            d = xg - e
            s += sum(int(t[g]) << sh for t, sh in sums_s) << d
            q += sum(int(t[g]) << sh for t, sh in sums_q) << (2 * d)
    return s, q, (e or 0)


def batch_stats(feats, batches) -> dict:
    """{feature: (min, max, count, s, q, e)} over batches of feature values, in one pass: the sum of the
    values is exactly s * 2^e and of their squares q * 2^(2e) (``_moments``), so the statistics are the
    same however the rows are batched -- in memory or streamed. (Float sums are not: numpy's mean and
    std of the rows in memory and the batches' combined pairwise differed in the last bits, and for a
    near-constant column in the std itself: 2.0e-8 against 1.9e-8 for values 1e8 + k ulp.)"""
    out: dict = {}
    for values in batches:
        for f in feats:
            v = np.asarray(values[f], dtype=np.float64)
            if not v.size:
                continue
            sb, qb, eb = _moments(v)
            lo, hi, n, s, q, e = out.get(f, (np.inf, -np.inf, 0, 0, 0, eb))
            if s is None or sb is None:
                s = q = None
            else:
                m = min(e, eb)
                s = (s << (e - m)) + (sb << (eb - m))
                q = (q << (2 * (e - m))) + (qb << (2 * (eb - m)))
                e = m
            out[f] = (min(lo, float(v.min())), max(hi, float(v.max())), n + v.size, s, q, e)
    return out


def needs_fit(enc: ir.Encoding) -> bool:
    return any(c.fitted and (c.lo is None and c.mean is None) for c in enc.columns)


def code_at_rank(codes, v) -> np.ndarray:
    """The code of rank ``v`` in a sorted code table (a pair problem's variable of a code column: the
    lowering's ``PairLowering.tables``) (``codes[v]``; NaN where ``v`` is no rank)."""
    codes = np.asarray(codes, dtype=np.float64)
    r = np.round(np.asarray(v, dtype=np.float64))
    ok = np.isfinite(r) & (r >= 0) & (r <= codes.size - 1)
    return np.where(ok, codes[np.where(ok, r, 0).astype(np.int64)], np.nan)


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
            v = raw_of_input(c, float(seg[0]))
            if f is not None and isinstance(f.domain, ir.Boolean):
                value = bool(round(v))
            elif f is not None and isinstance(f.domain, ir.IntRange):
                value = int(round(v)) if abs(v - round(v)) < 1e-6 else round(v, 6)
            else:
                value = _spec_real(c, float(seg[0]), v, f)
        out[c.feature] = value
    rank = {f.name: i for i, f in enumerate(fs.features)}
    return dict(sorted(out.items(), key=lambda kv: rank.get(kv[0], len(rank))))


def raw_of_input(c, x: float) -> float:
    """The raw value a numeric column's model input ``x`` stands for: the encoding's formula inverted in float64
    (an estimate: the runtime's encoder need not give ``x`` back for it; callers check on the encoder)."""
    if c.kind == "minmax" and c.scale is not None:
        return (x - c.shift) / c.scale
    if c.kind == "minmax":
        return x * ((c.hi - c.lo) or 1.0) + c.lo
    if c.kind == "standard":
        return x * (c.std or 1.0) + c.mean
    return x


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
