"""Exact comparisons: ``value op threshold`` decided on exact rationals, strictness as written.

* :func:`exact_value` reads an int / float / numpy scalar / Fraction as the exact rational it is
  (``0.41`` as a float is 0.409999999999999975575093458246556110680103302001953125).
* :func:`threshold_of` reads a threshold **as the spec writes it**: a decimal literal ``"0.41"`` is
  41/100; a float that came from parsing a decimal literal is read through its shortest repr
  (``threshold_of(0.41) == Fraction(41, 100)``), which is the literal whenever it had at most 15
  significant digits.
* :func:`decide` and :func:`interval_decide` honour ``<`` vs ``<=`` exactly.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

from fairspec.certify.rounding import fraction

__all__ = ["OPS", "exact_value", "threshold_of", "decide", "interval_decide", "negate"]

OPS = ("<", "<=", ">", ">=", "==", "!=")

_NEG = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


def negate(op: str) -> str:
    """The comparison that holds exactly when ``op`` does not (``<`` -> ``>=``)."""
    return _NEG[op]


def exact_value(x) -> Fraction:
    """The exact rational of a number (a float is read bit for bit; a str as a decimal)."""
    if isinstance(x, Decimal):
        if not x.is_finite():
            raise ValueError(f"{x} is not finite")
        return Fraction(x)
    return fraction(x)


def threshold_of(literal) -> Fraction:
    """A spec threshold as an exact rational, as written.

    ``"0.41"`` / ``"41/100"`` / ``"1e-3"`` / ``Decimal("0.41")`` are read exactly. A Python float is
    taken to be the parse of a decimal literal and read through ``repr`` (the shortest decimal that
    round-trips): ``0.41`` -> 41/100. Use :func:`exact_value` for a float computed by a model."""
    if isinstance(literal, str):
        s = literal.strip().replace("_", "")
        if not s:
            raise ValueError("an empty threshold")
        return Fraction(s)
    if isinstance(literal, float) or type(literal).__name__ in ("float64", "float32"):
        f = float(literal)
        if not math.isfinite(f):
            raise ValueError(f"{literal!r} is not a finite threshold")
        return Fraction(repr(f))
    return exact_value(literal)


def _cmp(a: Fraction, op: str, b: Fraction) -> bool:
    if op == "<":
        return a < b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    if op == ">=":
        return a >= b
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    raise ValueError(f"unknown comparison {op!r}; one of {OPS}")


def decide(value, op: str, threshold) -> bool:
    """``value op threshold`` on exact rationals. ``value`` is read exactly (a float bit for bit);
    ``threshold`` as :func:`threshold_of` reads it (a str or float literal as its decimal).
    Infinite floats compare as the extended reals; NaN raises."""
    a = _extended(value, exact_value)
    b = _extended(threshold, threshold_of)
    return _cmp(a, op, b)      # Fraction against +-inf compares as in the extended reals


def _extended(x, reader):
    if isinstance(x, (float, int)) or hasattr(x, "dtype"):
        try:
            f = float(x)
        except (TypeError, OverflowError):
            f = 0.0
        if math.isnan(f):
            raise ValueError("NaN cannot be compared")
        if math.isinf(f) and not isinstance(x, int):
            return f
    return reader(x)


def interval_decide(lo, hi, op: str, threshold) -> str:
    """Decide ``v op threshold`` for a value known only to lie in the closed interval [lo, hi].

    ``"holds"`` when every v in [lo, hi] satisfies it, ``"violated"`` when none does, ``"unknown"``
    otherwise. Bounds are read exactly (floats bit for bit, may be infinite); the threshold as
    :func:`threshold_of` reads it. Strictness is honoured: with ``hi == threshold``, ``<`` is
    unknown (or violated when lo == hi) and ``<=`` holds."""
    if decide(lo, ">", hi):
        raise ValueError(f"empty interval [{lo}, {hi}]")
    if op == "==":
        every = decide(lo, "==", threshold) and decide(hi, "==", threshold)
        none = decide(threshold, "<", lo) or decide(threshold, ">", hi)
    elif op == "!=":
        every = decide(threshold, "<", lo) or decide(threshold, ">", hi)
        none = decide(lo, "==", threshold) and decide(hi, "==", threshold)
    else:      # a half-line: every / none of [lo, hi] iff both / neither end point
        every = decide(lo, op, threshold) and decide(hi, op, threshold)
        none = not decide(lo, op, threshold) and not decide(hi, op, threshold)
    if every:
        return "holds"
    if none:
        return "violated"
    return "unknown"


# ---------------------------------------------------------------------------------------------
# Minting: exact-arithmetic and exhaustive-data proofs
# ---------------------------------------------------------------------------------------------

def _exact_only(value, what: str) -> Fraction:
    if isinstance(value, (float,)) or type(value).__name__ in ("float64", "float32", "float16"):
        raise TypeError(f"{what} must be an exact rational (Fraction or int), not a float: "
                        "a value computed in floating point is no exact-arithmetic proof")
    if isinstance(value, (bool,)):
        return Fraction(int(value))
    if isinstance(value, Decimal):
        return exact_value(value)
    if isinstance(value, (int, Fraction)) or type(value).__name__.startswith(("int", "uint")):
        return Fraction(value) if not isinstance(value, Fraction) else value
    raise TypeError(f"{what} must be a Fraction or an int, not {type(value).__name__}")


def prove_exact(value, op: str, threshold, *, claim: str, **detail):
    """An ``exact-arithmetic`` Proof that ``value op threshold``, or None when it does not hold.

    ``value`` must be an exact rational (Fraction / int: computed in exact arithmetic, e.g. from the
    declared decimals of a distribution); ``threshold`` is read as the spec writes it
    (:func:`threshold_of`). The comparison is made here, exactly."""
    from fairspec.certify.proof import _mint
    v = _exact_only(value, "value")
    t = threshold_of(threshold)
    if not _cmp(v, op, t):
        return None
    return _mint("exact-arithmetic", claim, value=v, op=op, threshold=t, margin=abs(v - t), **detail)


def prove_exhaustive(value, op: str, threshold, *, rows: int, claim: str, **detail):
    """An ``exhaustive-data`` Proof that ``value op threshold`` where ``value`` is a ratio of exact
    counts over all ``rows`` data rows (Fraction / int, never a float), or None when it fails."""
    from fairspec.certify.proof import _mint
    v = _exact_only(value, "value")
    if int(rows) < 0:
        raise ValueError("rows must be >= 0")
    t = threshold_of(threshold)
    if not _cmp(v, op, t):
        return None
    return _mint("exhaustive-data", claim, value=v, op=op, threshold=t, rows=int(rows), **detail)
