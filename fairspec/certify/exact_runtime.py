"""Points a float runtime scores exactly, in every batch size and summation order.

A float runtime may round one input's score differently from call to call: torch on CPU picks
other kernels for other batch sizes and row positions (measured: a 7-4-1 network, one point in six
moved by up to 1e-6 between a batch of 48 and the points alone, and eight of 48 when the batch was
permuted). A verdict decided on one batch's scores is then about that batch only where a pair lies
within rounding of the threshold. :func:`exact_points` says which points cannot move: every product
and every partial sum of every layer is representable in the runtime's precision, so any order of
the additions (FMA or not, blocked or not) gives the exact real value. Networks with dyadic weights
(the tie-biased tests' networks, quantised models) pass; generic float weights do not.

The test, per neuron: the terms ``w_j h_j`` and the bias are multiples of ``2**q`` (``q`` the lowest
set bit over them) and the sum of their magnitudes is below ``2**(p + q)`` (``p`` = 24 bits for
float32, 53 for float64, 11 for float16, where also ``q >= -24`` and the sum below 65504: no partial
sum underflows or overflows, and exact in float16 it is exact in float32 too); every partial sum is
then an integer multiple of ``2**q`` of magnitude below ``2**(p + q)``, hence representable. Products of float32 numbers are exact in float64; the
check runs in float64 and refuses float64 runtimes whose products would not be (p = 53 needs exact
products: only inputs and weights with few significant bits pass).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

__all__ = ["exact_points", "exact_rows", "input_grid", "logits_in_every_order", "partial_sums_bound",
           "scored_in_every_order"]

_P = {"float16": 11, "float32": 24, "float64": 53}


def _low_bit(v: np.ndarray) -> np.ndarray:
    """The exponent of the lowest set bit of each nonzero float64 (``v = odd * 2**e``); +inf for 0."""
    f, e = np.frexp(np.abs(v))
    m = np.ldexp(f, 53).astype(np.int64)          # the 53-bit significand as an integer (exact)
    low = m & -m
    tz = np.where(m > 0, np.log2(np.where(low > 0, low, 1)).astype(np.int64), 0)
    return np.where(v != 0, (e - 53 + tz).astype(np.float64), np.inf)


def _bits(v: np.ndarray) -> np.ndarray:
    """Significant bits of each float64 (0 for 0)."""
    _, e = np.frexp(np.abs(v))
    low = _low_bit(v)
    return np.where(v != 0, e - np.where(np.isinf(low), 0, low), 0)


def exact_points(layers, X: np.ndarray, precision: str = "float32", chunk: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """``(ok, out)``: per row of ``X`` (the runtime's inputs, already in its precision), whether every
    layer's pre-activations are computed exactly in any order, and the exact outputs of the last
    layer (meaningful where ``ok``). ``layers``: ``[(W, b, relu), ...]`` holding the runtime's numbers.

    float32 and float16: a product ``w h`` of a weight and an input of a point still exact (at most
    24 significant bits each, 11 in float16) is exact in float64, and its lowest set bit is
    ``low(w) + low(h)`` (odd significands multiply to an odd one), so ``q`` is a min-plus product of
    the two tables of lowest bits; ``sum |w h| + |b|`` and the pre-activations are matrix products
    (the sum raised above its relative ``(n + 1) 2**-52`` rounding in any order; the pre-activations
    exact wherever the partial sums fit, in float16 also above its subnormal grid and below 65504).
    Rows already not exact may compute anything: they stay not exact."""
    from fairspec.certify.chains import as_layers

    layers = as_layers(layers)
    p = _P[precision]
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    widest = max(np.asarray(W).size for W, _, _ in layers)
    chunk = max(1, min(chunk, 2_000_000 // max(widest, 1)))     # (chunk, out, in) tables: <= 16 MB
    oks, outs = [], []
    for start in range(0, X.shape[0], chunk):
        H = X[start:start + chunk]
        ok = np.ones(H.shape[0], dtype=bool)
        for W, b, relu in layers:
            W = np.asarray(W, dtype=np.float64)
            b = np.asarray(b, dtype=np.float64).reshape(-1)
            if precision == "float64":
                T = H[:, None, :] * W[None, :, :]                   # (n, out, in)
                # a float64 product is exact when its factors carry at most 53 significant bits together
                bits = _bits(H)[:, None, :] + _bits(W)[None, :, :]
                ok &= ~np.any((bits > 53) & (T != 0), axis=(1, 2))
                q = np.minimum(_low_bit(T).min(axis=2), _low_bit(b)[None, :])
            else:
                q = np.minimum((_low_bit(H)[:, None, :] + _low_bit(W)[None, :, :]).min(axis=2), _low_bit(b)[None, :])
            # S as a matrix product rounds at most a relative (n + 1) 2**-52 in any order: raised above it
            S = (np.abs(H) @ np.abs(W).T + np.abs(b)[None, :]) * (1.0 + (W.shape[1] + 1) * 2.0 ** -51)
            fits = np.where(np.isinf(q), True, S * (1.0 + 2.0 ** -40) < np.ldexp(1.0, np.where(np.isinf(q), 0, q + p).astype(np.int64)))
            if precision == "float16":      # and no partial sum below float16's subnormal grid or beyond its range
                fits &= (q >= -24) & (S * (1.0 + 2.0 ** -40) < 65504.0)
            ok &= fits.all(axis=1)
            Z = H @ W.T + b[None, :]                                 # exact wherever fits (any order)
            H = np.maximum(Z, 0.0) if relu else Z
        oks.append(ok)
        outs.append(H)
    return np.concatenate(oks), np.concatenate(outs, axis=0)


# --------------------------------------------------------------------------------------------
# The same argument over a whole box (runtime_error_bound: layers exact for every input of it)
# --------------------------------------------------------------------------------------------

#: the exponent of the smallest subnormal: every multiple of 2**q, q at least this, below 2**(p + q)
#: is a number of the precision
_EMIN = {"float32": -149, "float64": -1074}
_EMAX = {"float32": 127, "float64": 1023}


def _dyadic_low(q) -> float:
    """The exponent of the lowest set bit of a Fraction whose denominator is a power of two
    (``q = odd * 2**e``); +inf for 0, -inf when ``q`` is not dyadic (no grid)."""
    if q == 0:
        return np.inf
    num, den = abs(q.numerator), q.denominator
    if den & (den - 1):
        return -np.inf
    return float((num & -num).bit_length() - 1 - (den.bit_length() - 1))


def _fits(M, g, p: int, emin: int) -> bool:
    """Is every multiple of ``2**g`` of magnitude at most ``M`` (a Fraction) a number of ``p`` bits?"""
    if g == np.inf:
        return True
    return bool(np.isfinite(g)) and g >= emin and M < Fraction(2) ** int(p + g)


def _encoded_grid(e, vlo: float, vhi: float, precision: str) -> float:
    """The grid exponent of one integral variable's encoded values on ``[vlo, vhi]`` when the runtime's
    encoding (``fairspec.runtime.encoding.encode``, float64, then the cast to ``precision``) computes every
    one of them exactly; ``-inf`` otherwise."""
    p, emin = _P[precision], _EMIN[precision]
    V = max(abs(Fraction(vlo)), abs(Fraction(vhi)))
    kind = e.kind if e is not None else "raw"
    if kind in ("raw", "onehot", "code"):
        return 0.0 if _fits(V, 0, p, emin) else -np.inf
    s, t = e.exact()
    if kind == "codes":                  # the runtime reads the table (each code a number of the precision)
        return min(_dyadic_low(s), _dyadic_low(t))
    if kind == "scaled":                 # fl(fl(v * s) + t): exact when the product and the sum fit
        g = min(_dyadic_low(s), _dyadic_low(t))
        ok = (_fits(V * abs(s), _dyadic_low(s), 53, -1074) and _fits(V * abs(s) + abs(t), g, 53, -1074)
              and _fits(V * abs(s) + abs(t), g, p, emin))
        return g if ok else -np.inf
    if kind in ("minmax", "standard"):   # fl(fl(v - a) / span), span = fl(b - a) (minmax) or b (standard)
        a = Fraction(float(e.a))
        span = Fraction(float(e.b)) - a if kind == "minmax" else Fraction(float(e.b))
        if kind == "minmax" and Fraction(float(span)) != span:
            return -np.inf
        span = span or Fraction(1)                      # "or 1.0" as the runtime reads a zero span
        k = _dyadic_low(span)
        if span < 0 or not np.isfinite(k) or span != Fraction(2) ** int(k):
            return -np.inf                              # a division that may round
        m = min(0.0, _dyadic_low(a))
        D = max(abs(Fraction(vlo) - a), abs(Fraction(vhi) - a))
        ok = _fits(D, m, 53, -1074) and _fits(D / span, m - k, 53, -1074) and _fits(D / span, m - k, p, emin)
        return m - k if ok else -np.inf
    return -np.inf


def input_grid(encoding, lo, hi, integer, precision: str) -> np.ndarray:
    """Per model input, the exponent ``g`` of a grid ``2**g`` every value of it over the box ``[lo, hi]``
    of the proof's variables lies on, *exactly* as the runtime receives it (:func:`_encoded_grid`: an
    integral variable read raw / onehot / code below ``2**p``; a dyadic code table; an affine scaling
    by a power of two of a dyadic offset, or by dyadic factors, when no step of it rounds). ``-inf``:
    no grid (a real variable, a scaling that may round, a float16 runtime). ``encoding``:
    :class:`fairspec.certify.network.InputEncoding` per input, or None (raw)."""
    n = len(lo)
    g = np.full(n, -np.inf)
    if precision not in _EMIN or integer is None:
        return g
    for i in range(n):
        if bool(integer[i]) and np.isfinite(lo[i]) and np.isfinite(hi[i]):
            g[i] = _encoded_grid(encoding[i] if encoding is not None else None, float(lo[i]), float(hi[i]),
                                 precision)
    return g


def partial_sums_bound(W: np.ndarray, b: np.ndarray, hlo: np.ndarray, hhi: np.ndarray) -> np.ndarray:
    """Per row of ``W h + b`` over the box ``hlo <= h <= hhi``: an upper bound (rounded up) on the
    magnitude of every sum of a subset of the row's terms ``W_ji h_i`` and ``b_j`` -- every product and
    every partial sum of any summation order (an FMA's result included) is one. Each term lies in
    ``[-n_i, p_i]`` (``p_i = max(0, W_ji hlo_i, W_ji hhi_i)``, ``n_i`` likewise of ``-W_ji h_i``), so a
    subset's sum lies in ``[-sum n, sum p]``: the bound is ``max(sum p, sum n)``, at most the sum of the
    magnitudes (terms of both signs, e.g. a large bias against large products, are not added up)."""
    W = np.asarray(W, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    lo = np.asarray(hlo, dtype=np.float64).reshape(1, -1)
    hi = np.asarray(hhi, dtype=np.float64).reshape(1, -1)
    with np.errstate(invalid="ignore", over="ignore"):
        A, B = W * lo, W * hi                       # each within a relative 2**-53 of the exact product
        P = np.maximum(np.maximum(A, B), 0.0).sum(axis=1) + np.maximum(b, 0.0)
        N = np.maximum(np.maximum(-A, -B), 0.0).sum(axis=1) + np.maximum(-b, 0.0)
    # n + 1 non-negative terms, each product and each addition rounded by at most a relative 2**-53 (a
    # product that underflows by at most 2**-1074 absolute)
    out = np.maximum(P, N) * (1.0 + (W.shape[1] + 2) * 2.0 ** -51) + (W.shape[1] + 1) * 2.0 ** -1074
    return np.where(np.isfinite(out), np.nextafter(out, np.inf), np.inf)


def exact_rows(W: np.ndarray, b: np.ndarray, grid: np.ndarray, mag: np.ndarray, precision: str):
    """``(exact, out_grid)`` for one affine layer ``W h + b`` over a box whose inputs ``h_i`` lie on
    ``2**grid[i]`` (``-inf``: no grid, the input may carry rounding) and where ``mag`` bounds, per row,
    the magnitude of every product and partial sum the runtime may form (the sum of the terms'
    magnitudes ``sum |W_ji| |h_i| + |b_j|`` rounded up, or :func:`partial_sums_bound`): a row is computed
    *exactly* by the runtime, in every summation order, with or without FMA, for every input of the box,
    when every product and partial sum is an integer multiple of ``2**q`` (``q`` the lowest set bit over
    the terms) of magnitude below ``2**(p + q)`` (the module docstring's argument: each is then a number
    of the precision). ``out_grid[j]``: the row's ``q`` where exact (a ReLU keeps it: 0 or the value),
    else ``-inf``."""
    if precision not in _EMIN:          # float16: its mixed-precision error model, no exact rows
        return np.zeros(np.shape(W)[0], dtype=bool), np.full(np.shape(W)[0], -np.inf)
    p, emin, emax = _P[precision], _EMIN[precision], _EMAX[precision]
    W = np.asarray(W, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    with np.errstate(invalid="ignore"):
        T = np.where(W != 0, _low_bit(W) + grid[None, :], np.inf)       # W != 0, no grid: -inf
    q = np.minimum(T.min(axis=1) if W.shape[1] else np.full(W.shape[0], np.inf), _low_bit(b))
    ok = np.isinf(q) & (q > 0)                                          # no term at all: exactly 0
    fin = np.isfinite(q)
    e = np.where(fin, q + p, 0).astype(np.int64)
    fits = fin & (q >= emin) & (e <= emax) & (np.asarray(mag, dtype=np.float64) < np.ldexp(1.0, e))
    ok |= fits
    return ok, np.where(ok, q, -np.inf)


# --------------------------------------------------------------------------------------------
# Points a proof leaves out because the runtime scored them fair (exact-smt's excluded pairs)
# --------------------------------------------------------------------------------------------

def encoded_inputs(encoding, V) -> np.ndarray:
    """The model inputs of problem points ``V`` (k, n) as the runtime is fed them: each input's
    encoding (:class:`fairspec.certify.network.InputEncoding`; None: the variables are the inputs)
    computed in float64, elementwise (one float per float whatever the batch)."""
    X = np.array(V, dtype=np.float64, ndmin=2)
    for i, e in enumerate(encoding or ()):
        if e.kind in ("scaled", "codes"):
            X[:, i] = X[:, i] * e.a + e.b
        elif e.kind == "minmax":
            X[:, i] = (X[:, i] - e.a) / ((e.b - e.a) or 1.0)
        elif e.kind == "standard":
            X[:, i] = (X[:, i] - e.a) / (e.b or 1.0)
    return X


def scored_in_every_order(net, encoding, precision: str, readout, V, scores, fixed_head: bool = False) -> bool:
    """Does the runtime give problem points ``V`` the scores ``scores`` (one per point, as one batch
    gave them) in EVERY batch size and order? Only where :func:`exact_points` shows each point's
    layers exact in every order (then the runtime's logits are the exact ones whatever the batch) and
    the score read off them is one float per float: a logit (equal to the exact one), a margin of
    two logits (their float64 difference), a class ``("argmax", c)`` (decided by the exact logits),
    or a probability of an elementwise head (``fixed_head``: the runtime's own logistic of the
    logit, :func:`fairspec.certify.network.equal_logits_readout`'s condition). A softmax of several
    columns, or a probability of another head, is never shown so (its value may depend on the
    point's place in the batch: README, "Whatever the batch")."""
    if precision not in _P or readout is None:
        return False
    kind = readout[0]
    if kind == "softmax" or (kind == "prob" and not fixed_head) or kind not in ("logit", "margin", "argmax", "prob"):
        return False
    out = logits_in_every_order(net, encoding, precision, V)
    if out is None:
        return False
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    if s.size != out.shape[0]:
        return False
    if kind == "logit":
        return bool(np.all(out[:, readout[1]] == s))
    if kind == "margin":
        return bool(np.all(out[:, readout[1]] - out[:, readout[2]] == s))
    return True              # argmax / an elementwise head of exact logits: one value in every batch


def logits_in_every_order(net, encoding, precision: str, V) -> np.ndarray | None:
    """The runtime's output rows (k, K) of problem points ``V`` (k, n) when :func:`exact_points` shows
    every point's layers exact in every batch size and order (then every batch gives these exact
    values, and any function of a row alone -- a margin, an argmax, a softmax fairspec computes of the
    row -- one value); None otherwise (a batch may round a point otherwise: README, "Whatever the
    batch"). ``encoding``: as :func:`encoded_inputs`, then the cast to ``precision``."""
    if precision not in _P:
        return None
    dt = {"float16": np.float16, "float32": np.float32}.get(precision, np.float64)
    X = encoded_inputs(encoding, V).astype(dt).astype(np.float64)
    if not np.all(np.isfinite(X)):
        return None
    ok, out = exact_points(net, X, precision)
    return out if bool(np.all(ok)) else None
