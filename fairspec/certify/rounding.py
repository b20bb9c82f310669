"""Rigorous floating-point error bounds and outward rounding (the error model of certify).

Every float is an exact rational (:func:`fraction` reads it without rounding). An arithmetic
operation in round-to-nearest has relative error at most the unit roundoff ``u`` (``2**-53`` for
float64, ``2**-24`` for float32), so the next float toward +inf (:func:`up`) of a computed result is
a rigorous upper bound of the exact result (also in the subnormal range, where the absolute error
is at most half the smallest subnormal).

A sum of ``n`` terms computed in any order, with or without fused multiply-add, is within
``gamma(n) * sum |terms|`` of the exact sum (Higham, *Accuracy and Stability of Numerical
Algorithms*, 2nd ed., Sec. 3.1 and Lemma 3.1, ``gamma(n) = n u / (1 - n u)``); a dot product of
length ``n`` within ``gamma(n) * sum |a_i b_i|`` plus ``n * eta`` for underflow of the products
(``eta`` the smallest subnormal). These bounds hold for every summation order (pairwise, blocked,
vectorised) and for FMA, which only removes roundings.

Pure numpy and fractions: no solver, no model library.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import numpy as np

__all__ = [
    "U64", "U32", "ETA64", "ETA32", "fraction", "gamma", "up", "down", "float_up", "float_down",
    "sum_with_error", "dot_with_error", "matmul_with_error", "mul_up", "add_up", "sub_down",
    "interval_matmul", "sigmoid_down", "sigmoid_up", "reorder_error",
]

U64 = 2.0 ** -53          # unit roundoff of float64 (round to nearest)
U32 = 2.0 ** -24          # unit roundoff of float32
ETA64 = 2.0 ** -1074      # smallest positive float64 (subnormal)
ETA32 = 2.0 ** -149       # smallest positive float32 (subnormal)


def fraction(x) -> Fraction:
    """The exact rational value of an int, float (float64 or float32), numpy scalar or Fraction.
    A ``str`` is read as a decimal literal (``"0.41"`` is 41/100). NaN and infinities raise."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, (bool, np.bool_)):
        return Fraction(int(x))
    if isinstance(x, (int, np.integer)):
        return Fraction(int(x))
    if isinstance(x, str):
        return Fraction(x.strip())
    f = float(x)          # float32 -> float64 is exact
    if not math.isfinite(f):
        raise ValueError(f"{x!r} is not a finite number")
    return Fraction(f)


def float_up(q) -> float:
    """The smallest float64 >= the exact rational ``q``."""
    q = fraction(q)
    f = float(q)          # correctly rounded
    if Fraction(f) < q:
        f = math.nextafter(f, math.inf)
    return f


def float_down(q) -> float:
    """The largest float64 <= the exact rational ``q``."""
    q = fraction(q)
    f = float(q)
    if Fraction(f) > q:
        f = math.nextafter(f, -math.inf)
    return f


def gamma(n: int, u: float = U64) -> float:
    """``n u / (1 - n u)`` rounded up (the relative error bound of an n-term sum / dot product)."""
    return _gamma(int(n), float(u))


@lru_cache(maxsize=4096)
def _gamma(n: int, u: float) -> float:
    if n <= 0:
        return 0.0
    nu = Fraction(n) * Fraction(u)
    if nu >= Fraction(1, 2):
        raise ValueError(f"gamma({n}) is undefined for u = {u} (n u >= 1/2)")
    return float_up(nu / (1 - nu))


def up(x):
    """The next float toward +inf (a rigorous upper bound of a round-to-nearest result)."""
    return np.nextafter(x, np.inf)


def down(x):
    """The next float toward -inf."""
    return np.nextafter(x, -np.inf)


def add_up(a, b):
    return up(np.add(a, b))


def sub_down(a, b):
    return down(np.subtract(a, b))


def mul_up(a, b):
    """An upper bound of the exact product (for non-negative factors, or any factors when the
    rounded product is positive)."""
    return up(np.multiply(a, b))


@lru_cache(maxsize=4096)
def _neta(n: int, eta: float = ETA64) -> float:
    """``n * eta`` rounded up."""
    return float_up(Fraction(n) * Fraction(eta))


@lru_cache(maxsize=4096)
def _factor(n: int, u: float = U64) -> float:
    """c >= gamma(n) / (1 - gamma(n)): turns a float-computed sum of absolute values into a bound."""
    g = Fraction(gamma(n, u))
    if g >= Fraction(1, 2):
        raise ValueError("too many terms for a rigorous bound")
    return float_up(g / (1 - g))


def sum_with_error(a, axis=-1):
    """``(s, err)``: the float64 sum ``s`` of ``a`` along ``axis`` and a rigorous bound ``err`` on
    ``|s - exact sum|`` (any summation order)."""
    a = np.asarray(a, dtype=np.float64)
    n = a.shape[axis] if a.ndim else 1
    s = np.sum(a, axis=axis)
    S = np.sum(np.abs(a), axis=axis)
    # |s - sum| <= gamma(n-1) * sum|a| <= gamma(n) / (1 - gamma(n)) * fl(sum|a|)
    err = up(_factor(max(n, 1)) * S)
    return s, err


def dot_with_error(a, b):
    """``(d, err)``: the float64 dot product of 1-d ``a`` and ``b`` and a rigorous bound on its error."""
    a = np.asarray(a, dtype=np.float64).reshape(1, -1)
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    d, err = matmul_with_error(a, b)
    return d[0], err[0]


def matmul_with_error(A, x):
    """``(y, err)``: ``y = A @ x`` in float64 and a rigorous elementwise bound on ``|y - A x|``.

    ``x`` is a vector or a matrix (columns). With ``n = A.shape[1]``:
    ``|fl(A x) - A x| <= gamma(n) |A||x| + n eta`` and ``|A||x| <= (fl(|A||x|) + n eta) / (1 - gamma(n))``."""
    A = np.asarray(A, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    n = A.shape[1]
    y = A @ x
    T = np.abs(A) @ np.abs(x)
    neta = _neta(n)
    err = up(up(_factor(n) * up(T + neta)) + neta)
    return y, err


_PREP: dict = {}


def _prep(W, b):
    """[W+, W-, b] and its absolute value for the interval product (cached per weight array; the
    cache keeps the arrays alive, so an id is never reused while it is cached)."""
    key = (id(W), id(b))
    hit = _PREP.get(key)
    if hit is not None and hit[0] is W and hit[1] is b:
        return hit[2], hit[3]
    Wf = np.asarray(W, dtype=np.float64)
    bf = np.asarray(b, dtype=np.float64)
    M = np.hstack([np.maximum(Wf, 0.0), np.minimum(Wf, 0.0), bf.reshape(-1, 1)])
    A = np.abs(M)
    if len(_PREP) > 256:
        _PREP.clear()
    _PREP[key] = (W, b, M, A)
    return M, A


def interval_matmul(W, b, lo, hi):
    """Rigorous bounds ``[ylo, yhi]`` of ``W h + b`` over the box ``lo <= h <= hi`` (exact real
    arithmetic on the exact floats of W, b, lo, hi; results rounded outward). ``lo, hi`` may be
    vectors or matrices of columns (one box per column)."""
    M, A = _prep(W, b)
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    col = lo.ndim == 1
    k = 1 if col else lo.shape[1]          # boxes (columns); an empty W (no inputs) has width 0
    L2 = lo.reshape(lo.shape[0], k)
    H2 = hi.reshape(hi.shape[0], k)
    ones = np.ones((1, L2.shape[1]))
    XL = np.concatenate([L2, H2, ones])
    XH = np.concatenate([H2, L2, ones])
    n = M.shape[1]
    f, neta = _factor(n), _neta(n)
    ylo = M @ XL
    yhi = M @ XH
    elo = up(up(f * up(A @ np.abs(XL) + neta)) + neta)
    ehi = up(up(f * up(A @ np.abs(XH) + neta)) + neta)
    ylo = down(ylo - elo)
    yhi = up(yhi + ehi)
    if col:
        ylo, yhi = ylo[:, 0], yhi[:, 0]
    return ylo, yhi


def sigmoid_down(c: float) -> float:
    """A lower bound of the logistic function at the float c (libm exp within a few ulps; a
    relative margin of 2**-40 covers it)."""
    if c == -math.inf:
        return 0.0
    if c >= 0:
        s = 1.0 / (1.0 + math.exp(-c))
    else:
        e = math.exp(c)
        s = e / (1.0 + e)
    return max(0.0, s * (1.0 - 2.0 ** -40) - 2.0 ** -1000)


def sigmoid_up(c: float) -> float:
    """An upper bound of the logistic function at the float c (see :func:`sigmoid_down`)."""
    if c == math.inf:
        return 1.0
    if c >= 0:
        s = 1.0 / (1.0 + math.exp(-c))
    else:
        e = math.exp(c)
        s = e / (1.0 + e)
    return min(1.0, s * (1.0 + 2.0 ** -40) + 2.0 ** -1000)


def reorder_error(n: int, T: Fraction) -> Fraction:
    """A bound (a Fraction) on how far the float64 mean of ``n`` terms, added one after another in ANY order then
    divided once by ``n``, is from the same mean in any other order, the terms' magnitudes summing to at most ``T``:
    each order's sum is within gamma(n) T of the exact sum (Higham, Sec. 3.1) and the division rounds once (u, or
    eta below the normal range), so two orders differ by at most 2 (gamma(n) T + u (1 + gamma(n)) T) / n + 2 eta
    (a scikit-learn forest with n_jobs != 1 adds its trees in thread-finish order: kinds/forest_margin)."""
    g, u = fraction(gamma(n, U64)), fraction(U64)
    return 2 * (g * T + u * (1 + g) * T) / n + 2 * fraction(ETA64)



def robust_rows(P, E: Fraction, threshold) -> list[bool]:
    """Per row of the trees' order's outputs P (rows, K), each column within ``E`` of any other order's
    (:func:`reorder_error`): is every decision read from it the same in every order? Every two columns more
    than 2E apart (a predict's argmax, the first column at a tie) and every column more than E from the
    threshold (a label read as output > threshold; None: no threshold), exactly in rationals."""
    out = []
    for row in P:
        q = [fraction(float(v)) for v in row]
        gaps = all(abs(a - b) > 2 * E for i, a in enumerate(q) for b in q[i + 1:])
        cut = threshold is None or all(abs(a - fraction(float(threshold))) > E for a in q)
        out.append(gaps and cut)
    return out


def near_rows(P, E, threshold):
    """The rows of P (a numpy array (rows, K)) :func:`robust_rows` does not call robust, as a boolean mask: a
    row whose every float distance (two columns, a column and the threshold) exceeds 8 E is robust outright (a
    float difference is within a factor 1 +- u of the exact one), the others are checked exactly. ``E`` is one
    bound (a Fraction) or one float per row (certify.row_sums: a row's own bound, 0 for a row whose sum is the
    same in every order -- the caller treats those apart, since E = 0 still calls a tie near)."""
    P = np.asarray(P, dtype=np.float64)
    if P.ndim == 1:
        P = P[:, None]
    each = np.ndim(E) == 1
    if each:
        E = np.asarray(E, dtype=np.float64)
        far = np.nextafter(E * 8.0, np.inf)
    else:
        far = float(4 * E) * 2.0
    bad = ~np.isfinite(P).all(axis=1)          # no bound holds of a NaN / inf: near
    if each:
        bad |= ~np.isfinite(E)
    with np.errstate(invalid="ignore"):
        close = bad.copy()
        K = P.shape[1]
        for i in range(K):
            for j in range(i + 1, K):
                close |= ~(np.abs(P[:, i] - P[:, j]) > far)
            if threshold is not None:
                close |= ~(np.abs(P[:, i] - float(threshold)) > far)
    out = bad.copy()
    idx = np.flatnonzero(close & ~bad)
    if idx.size and each:
        out[idx] = [not robust_rows(P[i:i + 1], fraction(float(E[i])), threshold)[0] for i in idx]
    elif idx.size:
        out[idx] = ~np.array(robust_rows(P[idx], E, threshold), dtype=bool)
    return out
