"""Per row, a sum of terms added in an unknown order (a scikit-learn forest's trees on n_jobs threads): is it
the same float in every order, and if not, how far can two orders be apart?

A forest with ``n_jobs`` != 1 adds its trees' predict_proba into a zero array in the order its threads finish
(sklearn.ensemble._forest's ``_accumulate_prediction``), then divides once by the number of trees. For one row
and one output column, the terms are the ``n`` values its trees give that row.

**Exact in every order** (:meth:`RowSums.exact`). If every term of the row is an integer multiple of ``2**-k``
(``k <= 1074``) and the sum of their magnitudes ``S`` is below ``2**(53 - k)``, then every partial sum, in any
order, is exact. Proof: a partial sum is the sum of a subset of the terms, so its exact value is ``m 2**-k``
with ``m`` an integer and ``|m| 2**-k <= S < 2**(53 - k)``, i.e. ``|m| < 2**53``; every such number (``k <=
1074``) is a float64, so the addition that produces it (whose operands are, by induction from the zero the
forest starts with, exact too) returns it without rounding. Every order thus ends at the same float (the exact
sum), and the one division by ``n`` that follows is the same operation on the same operands: the row's
output is one number, bit for bit, in every order, and so is every decision read from it (an argmax at an exact
tie, a comparison with a threshold) -- it is the decision of the trees' own order (``n_jobs = 1``). The
condition is only sufficient (a sum can be exact without it); a row failing it gets the bound below.

**Otherwise** (:meth:`RowSums.errors`), every order's mean is within ``gamma(n) S`` (Higham Sec. 3.1) plus
the division's rounding of the exact one, with the row's own ``S`` (the sum of ITS terms' magnitudes, at most
the forest-wide ``T`` of :func:`fairspec.certify.rounding.reorder_error`): the row's bound is
``reorder_error(n, S)``, rounded up to a float.

``S`` is accumulated in floats (the terms' magnitudes are non-negative, so their float sum ``s`` satisfies
``S <= s / (1 - gamma(n))``); the bound used is ``s (1 + 2 gamma(n))`` rounded up, and for an exact row
(all its terms multiples of ``2**-k`` with ``S < 2**(53-k)``) the float sum is exact anyway.

Pure numpy and fractions: no solver, no model library.
"""

from __future__ import annotations

import numpy as np

from .rounding import ETA64, U64, float_up, fraction, gamma

#: the exponent given to a zero term (a multiple of every 2**-k)
_ZERO = -(2 ** 20)
#: the exponent given to a term that is not a finite float (never exact)
_BAD = 2 ** 20


def dyadic_exponent(a) -> np.ndarray:
    """Elementwise, the least ``k`` with ``a`` an integer multiple of ``2**-k`` (an int64 array; a large
    negative number for 0, a large positive one for NaN / inf)."""
    a = np.asarray(a, dtype=np.float64)
    out = np.full(a.shape, _ZERO, dtype=np.int64)
    bad = ~np.isfinite(a)
    nz = (a != 0) & ~bad
    if nz.any():
        m, e = np.frexp(np.abs(a[nz]))                 # |a| = m 2**e, 0.5 <= m < 1 (subnormals too)
        M = np.ldexp(m, 53).astype(np.int64)           # an integer < 2**53, exactly
        low = M & -M                                    # its lowest set bit, a power of two
        tz = np.frexp(low.astype(np.float64))[1] - 1    # its trailing zeros
        out[nz] = 53 - e.astype(np.int64) - tz          # |a| = (M >> tz) 2**(e - 53 + tz), M >> tz odd
    out[bad] = _BAD
    return out


class RowSums:
    """The terms of each row's sum, fed one term per row at a time (:meth:`add`, shape (rows, K): K output
    columns summed separately); then :meth:`exact` and :meth:`errors` per row."""

    def __init__(self) -> None:
        self.n = 0
        self.k = None           # (rows,) the largest dyadic exponent of the row's terms, all columns
        self.s = None           # (rows, K) float sums of the terms' magnitudes

    def add(self, t) -> None:
        t = np.asarray(t, dtype=np.float64)
        if t.ndim == 1:
            t = t[:, None]
        k = dyadic_exponent(t).max(axis=1) if t.shape[1] else np.full(t.shape[0], _ZERO, dtype=np.int64)
        with np.errstate(invalid="ignore", over="ignore"):
            a = np.abs(t)
        if self.k is None:
            self.k, self.s = k, a.copy()
        else:
            if self.s.shape != a.shape:
                raise ValueError(f"a term of shape {a.shape} added to sums of shape {self.s.shape}")
            self.k = np.maximum(self.k, k)
            self.s += a
        self.n += 1

    def _upper(self) -> np.ndarray:
        """(rows,) an upper bound of each row's largest (over columns) exact sum of magnitudes (inf if not
        finite)."""
        s = self.s.max(axis=1) if self.s.shape[1] else np.zeros(self.s.shape[0])
        s = np.where(np.isfinite(s), s, np.inf)
        f = float_up(1 + 2 * fraction(gamma(max(self.n, 1), U64)))
        return np.nextafter(s * f, np.inf)

    def exact(self) -> np.ndarray:
        """(rows,) bool: the row's every column sums to the same float in every order (module docstring)."""
        if self.k is None:
            return np.zeros(0, dtype=bool)
        S = self._upper()
        k = self.k
        ok = np.isfinite(S) & (k <= 1074)
        zero = S == 0
        with np.errstate(over="ignore"):
            scaled = np.ldexp(S, np.clip(k, -1100, 1100).astype(np.int32))
        return zero | (ok & (scaled < 2.0 ** 53))

    def errors(self) -> np.ndarray:
        """(rows,) float64: per row, an upper bound on how far any order's mean (sum / n) is from any other's:
        0 where :meth:`exact`, else ``reorder_error(n, S_row)`` rounded up (inf where a term is not finite)."""
        if self.k is None:
            return np.zeros(0)
        n = max(self.n, 1)
        g, u = fraction(gamma(n, U64)), fraction(U64)
        c = float_up(2 * (g + u * (1 + g)) / n)
        e0 = float_up(2 * fraction(ETA64))
        with np.errstate(over="ignore", invalid="ignore"):
            E = np.nextafter(np.nextafter(self._upper() * c, np.inf) + e0, np.inf)
        return np.where(self.exact(), 0.0, E)
