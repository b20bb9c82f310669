"""A rule model's decision per data row, exactly (README: "Rules: exact rational arithmetic").

The rule is evaluated in float64 over the columns first (runtime/evaluate). A comparison whose two sides are
within a generous bound of the float rounding (``1e-9`` of the sum of the magnitudes of their terms, which is
far above the few units in the last place that float64 can be off by) may be decided the wrong way by that
evaluation (``0.1 * a <= 0.3`` at a = 3: float64 says no); those rows, and only those, are decided again in
``fractions.Fraction``: each constant the decimal written (its shortest repr), and each data value the
decimal its float reads as (its shortest repr: a CSV cell "0.3" is 0.3, as the spec's 0.3 is; reading it as
its binary float, 0.2999999999999999889, would put it below the spec's 0.3 and turn ``score >= 0.3`` false on
it). A row the exact reading cannot decide (a missing value) keeps the float evaluation's answer; a rule
model dividing by zero on a row decides nothing there (:func:`decide_rule` refuses, as kinds/rule_pairs does).
Magnitudes below ``TINY`` (subnormal floats, products that underflow) carry an absolute error the relative band
cannot bound: such rows are always decided again. A comparison of plain numbers (a column against a column or a
constant, no arithmetic: :func:`_plain`) is never near a tie: its float answer is the exact reading's.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from fractions import Fraction

import numpy as np

from fairspec import ir
from fairspec.runtime.columnar import Coded
from fairspec.runtime.evaluate import evaluate

TINY = 1e-290       # below it float64 is off by an absolute amount (subnormals), not a relative one
REL = 1e-9          # the near-tie band, relative to the terms' magnitudes (float64 errs by ~1e-16 per operation)
_CMP = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


class NotExact(Exception):
    """The expression has no exact reading (its message says why: kinds/rule_pairs shows it)."""


def decide_rule(rule: ir.Expr, lookup, n: int) -> np.ndarray:
    """The rule's truth per row (bool), float64 away from ties and exact near them: each numeric comparison
    (or numeric set membership) is decided again in Fractions on the rows where it is near a tie (rows
    with the same values of its own leaves decided once), and the rule is evaluated with those answers."""
    zero: list = []
    out = np.asarray(evaluate_exact(rule, lookup, n, zero), dtype=bool).copy()
    for x in ir.subexpressions(rule) if n else ():
        if isinstance(x, ir.ArithE) and x.op == "/" and (b := _num(x.right, lookup, n)) is not None:
            zero.extend(np.flatnonzero(b[0] == 0)[:1].tolist())     # a float denominator of exactly 0
    if zero:
        from fairspec.verdict import Unsupported

        raise Unsupported(f"the rule divides by zero on data row {min(zero) + 1}: it decides nothing there "
                          f"(guarding it with `and` does not help: every part of a rule is read)")
    return out


def evaluate_exact(e: ir.Expr, lookup, n: int, zero: list | None = None):
    """``evaluate(e, lookup, n)`` with each numeric comparison inside ``e`` decided as ``decide_rule`` does
    (a spec predicate on data: a derived group, a data ``where`` / ``label``). Without a near tie it is
    exactly ``evaluate``'s answer (same values, same type). ``zero``: a list that receives the rows whose
    exact reading divides by zero (else those rows keep the float answer)."""
    fixed: dict = {}
    if n:
        for x in ir.subexpressions(e):
            if isinstance(x, (ir.Cmp, ir.InSet)) and x not in fixed:
                near = _near(x, lookup, n)
                if near.any():
                    fixed[x] = _redecide(x, lookup, n, np.flatnonzero(near), zero)
    if not fixed:
        return evaluate(e, lookup, n)
    names = {x: ir.FeatureRef(f"\0exact{k}") for k, x in enumerate(fixed)}
    answers = {names[x].feature: v for x, v in fixed.items()}

    def lookup2(x):
        return answers[x.feature] if isinstance(x, ir.FeatureRef) and x.feature in answers else lookup(x)
    return evaluate(_substitute(e, names), lookup2, n)


def _redecide(e: ir.Expr, lookup, n: int, idx: np.ndarray, zero: list | None = None) -> np.ndarray:
    ans = np.asarray(evaluate(e, lookup, n), dtype=bool).copy()
    leaves = {}
    for x in ir.subexpressions(e):
        if isinstance(x, (ir.FeatureRef, ir.ColumnRef, ir.ModelOut)) and x not in leaves:
            v = lookup(x)
            leaves[x] = v.strings() if isinstance(v, Coded) else np.asarray(v)
    cols = list(leaves.values())
    seen: dict = {}
    for i in idx:
        key = tuple(c[i] for c in cols)
        if key not in seen:
            try:
                seen[key] = bool(exact_value(e, lambda x, i=int(i): _data(leaves[x][i])))
            except ZeroDivisionError:
                if zero is not None:
                    zero.append(int(i))
                seen[key] = None
            except NotExact:
                seen[key] = None        # no exact reading of this row: the float evaluation's answer stays
        if seen[key] is not None:
            ans[i] = seen[key]
    return ans


def _substitute(e: ir.Expr, names: dict) -> ir.Expr:
    if e in names:
        return names[e]
    changes = {}
    for f in dataclasses.fields(e):
        v = getattr(e, f.name)
        if isinstance(v, ir.Expr):
            w = _substitute(v, names)
        elif isinstance(v, tuple) and any(isinstance(x, ir.Expr) for x in v):
            w = tuple(_substitute(x, names) if isinstance(x, ir.Expr) else x for x in v)
        else:
            continue
        if w is not v:
            changes[f.name] = w
    return dataclasses.replace(e, **changes) if changes else e


def _plain(e: ir.Expr, lookup) -> bool:
    """Is ``e`` a number the float evaluation reads exactly as the exact one orders it: a data leaf of a float
    column, or a float constant? Each reads as the shortest decimal of its float64 value (:func:`_data`,
    :func:`_const`), and that decimal is monotone and one-to-one in the float (two floats' shortest decimals are in
    their order, since rounding each back gives the float), so comparing the floats compares the decimals. An
    integer leaf or constant qualifies below 2**53 (beyond, its float is rounded)."""
    if isinstance(e, ir.Const):
        v = e.value
        if isinstance(v, (bool, np.bool_, str)):
            return False
        return isinstance(v, (float, np.floating)) or isinstance(v, (int, np.integer)) and abs(int(v)) < 2 ** 53
    if isinstance(e, (ir.FeatureRef, ir.ColumnRef, ir.ModelOut)):
        x = lookup(e)
        if isinstance(x, Coded):
            return False
        x = np.asarray(x)
        if x.dtype.kind == "f":
            return True
        if x.dtype.kind in "iu":
            return not x.size or int(np.abs(x.astype(np.float64)).max()) < 2 ** 53 - 1
    return False


def _near(e: ir.Expr, lookup, n: int) -> np.ndarray:
    """Rows where the numeric comparison (or numeric set membership) ``e`` is within the band of a tie. None where
    both sides are plain numbers (:func:`_plain`: a column against a column or a constant, ``score >= 0.3``,
    ``x.a <= x.b``): the float answer is the exact one (a missing or infinite value keeps it, as below), so no row
    is read a second time (review r8: ~25 s per million distinct rows of ``x.a <= x.b`` at a == b)."""
    near = np.zeros(n, dtype=bool)
    if isinstance(e, ir.Cmp) and _plain(e.left, lookup) and _plain(e.right, lookup) or \
            isinstance(e, ir.InSet) and _plain(e.item, lookup) and all(_plain(ir.Const(v), lookup) for v in e.values):
        return near
    if isinstance(e, ir.Cmp):
        a, b = _num(e.left, lookup, n), _num(e.right, lookup, n)
        if a is not None and b is not None:
            near |= _close(a, b)
    elif isinstance(e, ir.InSet):
        a = _num(e.item, lookup, n)
        if a is not None:
            for v in e.values:
                c = _num(ir.Const(v), lookup, n)
                if c is not None:
                    near |= _close(a, c)
    else:
        return near
    # a side that is not finite from finite data (an overflow: 10 * 1e300 * 1e16; a division by an exact or a
    # rounded zero) has an exact reading, or divides by zero (decide_rule refuses): decided again; a missing
    # value (NaN data) has none and keeps the float answer, not looked at a row at a time
    sides = [x for x in (getattr(e, "left", None), getattr(e, "right", None), getattr(e, "item", None)) if x is not None]
    vals = [_num(x, lookup, n) for x in sides]
    if all(v is not None for v in vals):
        inf = np.zeros(n, dtype=bool)
        for v in vals:
            inf |= ~np.isfinite(v[0])
        if inf.any():
            near |= inf & ~_missing(e, lookup, n)
    return near


def _missing(e: ir.Expr, lookup, n: int) -> np.ndarray:
    """Rows where a data value ``e`` reads is missing (NaN) or infinite: no exact reading."""
    out = np.zeros(n, dtype=bool)
    for x in ir.subexpressions(e):
        if isinstance(x, (ir.FeatureRef, ir.ColumnRef, ir.ModelOut)):
            v = lookup(x)
            if not isinstance(v, Coded):
                v = np.asarray(v)
                if v.dtype.kind == "f":
                    out |= ~np.isfinite(v)
    return out


def _close(a, b) -> np.ndarray:
    (va, ma, ea), (vb, mb, eb) = a, b
    with np.errstate(invalid="ignore", over="ignore"):
        far = np.abs(va - vb) > REL * (ma + mb) + 1e-300
    # both sides computed without rounding: the float answer is exact; a side not finite: see _near
    return ~far & ~(ea & eb) & np.isfinite(va) & np.isfinite(vb)


def _num(e: ir.Expr, lookup, n: int):
    """(float value, magnitude bound, the float value is the true one) per row, or None for a non-numeric expression.
    |true value - float value| <= (a few ulps) * magnitude, wherever the magnitude is finite."""
    with np.errstate(all="ignore"):
        if isinstance(e, ir.Const):
            v = e.value
            if isinstance(v, (bool, np.bool_)) or isinstance(v, str) or not isinstance(v, (int, float)):
                return None if isinstance(v, str) else _leaf(np.full(n, float(v)))
            exact = isinstance(v, int) or (math.isfinite(v) and Fraction(repr(v)) == Fraction(v))
            return np.full(n, float(v)), np.full(n, abs(float(v))), np.full(n, bool(exact))
        if isinstance(e, (ir.FeatureRef, ir.ColumnRef, ir.ModelOut)):
            x = lookup(e)
            if isinstance(x, Coded):
                return None
            x = np.asarray(x)
            if x.dtype == object or x.dtype.kind in "USO":
                return None
            return _leaf(x.astype(float))
        if isinstance(e, ir.ArithE):
            a, b = _num(e.left, lookup, n), _num(e.right, lookup, n)
            if a is None or b is None:
                return None
            (va, ma, ea), (vb, mb, eb) = a, b
            if e.op in ("+", "-"):
                v = va + vb if e.op == "+" else va - vb
                m = ma + mb
                return v, m, ea & eb & _integral(va) & _integral(vb) & (m < 2.0 ** 52)
            if e.op == "*":
                v, m = va * vb, _tiny(ma * mb, ma, mb)
                return v, m, ea & eb & _integral(va) & _integral(vb) & (m < 2.0 ** 52)
            if e.op == "/":
                v = va / vb
                m = 2 * (ma / np.abs(vb) + np.abs(va) * mb / (vb * vb)) + np.abs(v)
                m = np.where(np.abs(vb) > 1e-6 * mb, m, np.inf)   # a denominator near its own error: always exact
                m = _tiny(m, ma, ma)
                return v, m, np.zeros(n, dtype=bool)
            return None
        if isinstance(e, ir.AbsE):
            a = _num(e.arg, lookup, n)
            return None if a is None else (np.abs(a[0]), a[1], a[2])
        if isinstance(e, (ir.Cmp, ir.Logic, ir.NotE, ir.InSet)):
            # a truth read as a number (0 / 1): exact itself once its own comparisons are (they are walked too)
            return _leaf(np.asarray(evaluate(e, lookup, n), dtype=float))
    return None


def _leaf(x: np.ndarray):
    # a whole number is the value its float says; another data value is read as its shortest decimal
    return x, _tiny(np.abs(x), np.abs(x), np.abs(x)), _integral(x) & (np.abs(x) < 2.0 ** 53)


def _tiny(m, ma, mb):
    """``m``, or infinity where it fell below TINY from nonzero parts (a subnormal value, an underflowing product
    or quotient: its error is absolute, so no relative band holds it -- review r8: ``a * b * 1e300`` at
    a = 1e-160 was decided by float64 the wrong way)."""
    with np.errstate(invalid="ignore"):
        return np.where((m < TINY) & (ma > 0) & (mb > 0), np.inf, m)


def _integral(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.isfinite(x) & (x == np.floor(x))


def _const(v):
    if isinstance(v, (bool, np.bool_)) or isinstance(v, str):
        return bool(v) if isinstance(v, np.bool_) else v
    if isinstance(v, (int, np.integer)):
        return Fraction(int(v))
    if isinstance(v, (float, np.floating)):
        if not math.isfinite(v):
            raise NotExact(f"the rule holds the constant {v!r}")
        return Fraction(repr(float(v)))     # the decimal as written (its shortest repr)
    raise NotExact(f"the rule holds a constant of type {type(v).__name__}")


def _data(v):
    """A data value: the decimal its float reads as (its shortest repr: the cell a CSV writes, "0.3" for
    0.3, so that ``score >= 0.3`` holds on it as the spec writes it; a float computed elsewhere reads as
    the decimal closest to its binary value), exactly."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, str):
        return v
    if isinstance(v, (int, np.integer)):
        return Fraction(int(v))
    if isinstance(v, (float, np.floating)):
        if not math.isfinite(float(v)):
            raise NotExact(v)
        return Fraction(repr(float(v)))
    raise NotExact(v)


def _number(x):
    if isinstance(x, bool):
        return Fraction(int(x))
    if isinstance(x, Fraction):
        return x
    raise NotExact(f"the rule does arithmetic on {x!r}")


def truth(x, strict: bool = False) -> bool:
    """A value read as true or false: a bool; a number as the float evaluation reads a 0/1 column (non-zero),
    or with ``strict`` only 0 / 1 (a bool feature's value on a point of the domain)."""
    if isinstance(x, bool):
        return x
    if isinstance(x, Fraction) and (not strict or x in (0, 1)):
        return x != 0
    raise NotExact(f"the rule reads {x!r} as true or false")


def exact_value(e: ir.Expr, leaf, strict: bool = False):
    """The value of ``e`` in exact rationals: each constant the decimal written, each leaf (a feature,
    column or model output) ``leaf(expr)`` (a Fraction, a bool or a category name). ``strict`` (a rule on
    a point of its domain, kinds/rule_pairs): category names are only tested for equality and a truth
    is 0 / 1. Raises NotExact (saying why) where there is no exact reading, ZeroDivisionError on a division
    by zero. The one exact evaluator of expressions (runtime rows near a tie, rule pairs)."""
    def ev(x):
        return exact_value(x, leaf, strict)
    if isinstance(e, ir.Const):
        return _const(e.value)
    if isinstance(e, (ir.FeatureRef, ir.ColumnRef, ir.ModelOut)):
        return leaf(e)
    if isinstance(e, ir.Cmp):
        a, b = ev(e.left), ev(e.right)
        if isinstance(a, str) != isinstance(b, str):
            raise NotExact(f"the rule compares {a!r} with {b!r}")
        if isinstance(a, str):
            if strict and e.op not in ("==", "!="):
                raise NotExact(f"the rule orders category names ({e.op})")
            return bool(_CMP[e.op](a, b))
        return bool(_CMP[e.op](_number(a), _number(b)))
    if isinstance(e, ir.InSet):
        a = ev(e.item)
        hit = False
        for v in [_const(v) for v in e.values]:
            if isinstance(a, str) or isinstance(v, str):
                hit |= isinstance(a, str) and isinstance(v, str) and a == v
            else:
                hit |= _number(a) == _number(v)
        return hit != bool(e.negated)
    if isinstance(e, ir.Logic):
        parts = [truth(ev(x), strict) for x in e.args]
        return all(parts) if e.op == "and" else any(parts)
    if isinstance(e, ir.NotE):
        return not truth(ev(e.arg), strict)
    if isinstance(e, ir.ArithE):
        a, b = _number(ev(e.left)), _number(ev(e.right))
        if e.op == "/" and b == 0:
            raise ZeroDivisionError
        return _ARITH[e.op](a, b)
    if isinstance(e, ir.AbsE):
        return abs(_number(ev(e.arg)))
    raise NotExact(f"the rule uses a {type(e).__name__}")
