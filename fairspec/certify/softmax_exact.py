"""The REAL softmax of float logits to any precision: the values fairspec REPORTS of ``prob(m(x), c)`` of a
network whose runtime outputs logits (README; :func:`fairspec.kinds.pair_runtime.real_softmax`).

Verdicts are decided on :func:`fairspec.certify.enumerate.softmax_class_bounds` (relative width about
2**-40, vectorised); a reported number is an auditor's: a witness's probability is the float NEAREST the
real softmax (exactly rounded), a measure ``|p_c(x) - p_c(x')|`` the float AT OR BELOW the exact one. Both
come from :func:`enclosure`, exact rationals around ``p_c`` of relative width 10**(3 - digits): the
differences ``y_j - y_c`` of the logits are exact (:mod:`decimal` keeps every operand exact and rounds only
the result), ``exp`` is :mod:`decimal`'s, correctly rounded to ``digits`` significant digits (so within a
relative 10**(1 - digits), widened here to 10**(3 - digits)), and the sum and division are exact fractions.
Where both ends of the enclosure round to one float that float is the exactly rounded value; the precision
is raised until they do (a real softmax is a midpoint of two floats only at rational points, ``1 / K``,
which are none). Standard library only.
"""

from __future__ import annotations

import decimal
import math
from fractions import Fraction

__all__ = ["enclosure", "nearest", "difference_down", "measure_down"]

#: |y_j - y_c| beyond this: exp of it is past every float (e**-1000 < 2**-1075), bounded by [0, e**-1000]
_FAR = 1000
_DIGITS = (40, 120, 400)
#: the difference of two floats within _FAR of each other, exactly (at most about 1,080 digits; inexact raises)
_EXACT = decimal.Context(prec=2000, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN, traps=[decimal.Inexact])


def _row(row) -> list[float]:
    vals = [float(v) for v in (row if hasattr(row, "__len__") else [row])]
    return [0.0, vals[0]] if len(vals) == 1 else vals           # one column z: the logistic, [1 - p, p]


def enclosure(row, c: int, digits: int = _DIGITS[0]) -> tuple[Fraction, Fraction] | None:
    """Exact rationals ``lo <= p_c <= hi`` of the real softmax of the float logit ``row`` (one column: the
    logistic, the row ``[0, z]``), ``hi / lo - 1`` about 10**(3 - digits) (``lo`` 0 where ``p_c`` is below
    e**-1000). None when a logit is not finite."""
    y = _row(row)
    if not all(math.isfinite(v) for v in y) or not 0 <= int(c) < len(y):
        return None
    ctx = decimal.Context(prec=digits, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
    rel = Fraction(1, 10 ** (digits - 3))
    s_lo = s_hi = Fraction(0)
    zero_lo = False
    for j, v in enumerate(y):
        if j == c:
            continue
        d = Fraction(v) - Fraction(y[c])            # exact
        if d > _FAR:                                # p_c < e**-1000: below every float; hi from exp(_FAR)
            zero_lo = True
            e = Fraction(ctx.exp(decimal.Decimal(_FAR)))
            s_lo += e * (1 - rel)
            continue
        if d < -_FAR:                               # a term in [0, e**-1000]
            e = Fraction(ctx.exp(decimal.Decimal(-_FAR)))
            s_hi += e * (1 + rel)
            continue
        if d == 0:                                  # exp(0) = 1 exactly (1 / K is exact, and so is 1/2)
            s_lo, s_hi = s_lo + 1, s_hi + 1
            continue
        e = Fraction(ctx.exp(_EXACT.subtract(decimal.Decimal(v), decimal.Decimal(y[c]))))
        s_lo += e * (1 - rel)
        s_hi += e * (1 + rel)
    lo = Fraction(0) if zero_lo else 1 / (1 + s_hi)
    return lo, 1 / (1 + s_lo)


def nearest(row, c: int) -> float | None:
    """The float64 nearest the real softmax's ``p_c`` of the logit ``row`` (ties to even: exactly rounded);
    None when a logit is not finite, or (never seen) the enclosure at the highest precision straddles a
    midpoint."""
    for digits in _DIGITS:
        e = enclosure(row, c, digits)
        if e is None:
            return None
        a, b = float(e[0]), float(e[1])             # Fraction -> float: correctly rounded
        if a == b:
            return a
    return None


def difference_down(row_a, row_b, c: int) -> float | None:
    """The float at or below ``p_c(row_a) - p_c(row_b)`` of the real softmax (within 10**-37 relative of
    each probability, so the float at or below the difference, or the one below that when it lies that close
    to a float; 0 where the rows' order says the difference is at least 0 and it is below every float); None
    when a logit is not finite."""
    from fairspec.certify.rounding import float_down

    ea, eb = enclosure(row_a, c), enclosure(row_b, c)
    if ea is None or eb is None:
        return None
    ya, yb = _row(row_a), _row(row_b)
    if len(ya) != len(yb):
        return float_down(ea[0] - eb[1])
    da = [Fraction(u) - Fraction(ya[c]) for u in ya]
    db = [Fraction(v) - Fraction(yb[c]) for v in yb]
    if da == db:
        return 0.0                                  # rows one shift apart (or equal): the same softmax, exactly 0
    low = float_down(ea[0] - eb[1])
    # p_c falls as each y_j - y_c rises: no d_j of row_a above row_b's puts p_c(row_a) at or above p_c(row_b)
    return max(0.0, low) if all(u <= v for u, v in zip(da, db)) else low


def measure_down(row_a, row_b, classes) -> float | None:
    """The float at or below ``max_c |p_c(row_a) - p_c(row_b)|`` over ``classes`` (the violation measure
    of ``prob(m(x), c)``; ``forall c``: every class): the larger of each class's two orders'
    :func:`difference_down`, and at least 0 (an absolute value). None when a logit is not finite."""
    best = 0.0
    for c in classes:
        for u, v in ((row_a, row_b), (row_b, row_a)):
            d = difference_down(u, v, int(c))
            if d is None:
                return None
            best = max(best, d)
    return best
