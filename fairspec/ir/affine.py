"""Affine comparisons of one feature in a pre-condition, solved for it exactly (session 35, from kinds/pre_bounds).

``x.a * 2 + 1 <= 9``, ``not (x.a < 30)``, ``130 >= 2 * x'.a``: a comparison of an affine form of ONE feature with
a constant, or an ``and`` of them under ``not`` pushed inward, solved for the feature with Fractions, each
constant read both as the float it is stored as and as the decimal it is written as
(:func:`_as_float`, :func:`_as_decimal`, moved here from fairspec.ir.no_pair; kinds/pair_pre.PairPre reads the pre-condition so).
:func:`whole_bound` is the whole-number bound such a comparison puts on a tied int feature where both readings
give the same one: kinds/pre_bounds keeps it in a relaxation, and :mod:`fairspec.ir.no_pair` reads it to find a
pre-condition no pair meets (``x.a * 2 == 3``: no whole number, in either reading). Standard library only
(fractions imported where a comparison is solved: lint loads this module)."""

from __future__ import annotations

import math
import re

from fairspec import ir

_NEG = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
_TURN = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}


def _comparisons(e, neg: bool):
    """``e`` (negated where ``neg``) as an ``and`` of comparisons (op, left, right), or None."""
    if isinstance(e, ir.NotE):
        return _comparisons(e.arg, not neg)
    if isinstance(e, ir.Logic) and (e.op == "and") != neg:
        out = []
        for a in e.args:
            got = _comparisons(a, neg)
            if got is None:
                return None
            out.extend(got)
        return out
    if isinstance(e, ir.Cmp) and e.op in _NEG:
        op = _NEG[e.op] if neg else e.op
        return None if op == "!=" else [(op, e.left, e.right)]
    return None


def _solve(op, left, right):
    """``left op right`` solved for its one feature: ((var, name), [(op', value)] per reading -- float, decimal)
    with values Fractions, or None where it is no affine comparison of one feature."""
    out, ref = [], None
    for read in (_as_float, _as_decimal):
        a, b = _affine(left, read), _affine(right, read)
        if a is None or b is None:
            return None
        (ra, ka, ca), (rb, kb, cb) = a, b
        r = ra or rb
        if r is None or (ra is not None and rb is not None and ra != rb):
            return None
        k, c = ka - kb, cb - ca                          # k·f op c
        if k == 0:
            return None
        out.append((op if k > 0 else _TURN[op], c / k))
        ref = r
    return ref, out


def _affine(e, read):
    """``e`` as (feature ref (var, name) or None, its coefficient, the constant term), Fractions in the reading
    ``read`` of each constant; None where it is no affine form of at most one feature."""
    from fractions import Fraction      # (lint imports ir.no_pair, and so this module: fractions stays unloaded)

    if isinstance(e, ir.Const):
        v = e.value
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):
            return None
        p, q = read(v)
        return None, Fraction(0), Fraction(p, q)
    if isinstance(e, ir.FeatureRef):
        return ((e.var, e.feature), Fraction(1), Fraction(0)) if e.var is not None else None
    if isinstance(e, ir.ArithE) and e.op in ("+", "-", "*", "/"):
        a, b = _affine(e.left, read), _affine(e.right, read)
        if a is None or b is None:
            return None
        (ra, ka, ca), (rb, kb, cb) = a, b
        if e.op in ("+", "-"):
            if ra is not None and rb is not None and ra != rb:
                return None
            s = 1 if e.op == "+" else -1
            return ra or rb, ka + s * kb, ca + s * cb
        if e.op == "*":
            if ra is not None and rb is not None:
                return None
            return (ra, ka * cb, ca * cb) if rb is None else (rb, kb * ca, cb * ca)
        if rb is not None or cb == 0:                    # a division by the feature or by zero: none
            return None
        return ra, ka / cb, ca / cb
    return None


def whole_bound(op, left, right, prop: ir.IndividualFairness, fs: ir.FeatureSet):
    """``left op right`` as the whole numbers it leaves its one tied int feature: ``(var, name, least, most)``
    (``least`` / ``most`` None where unbounded; ``least > most``: none), where both readings of its constants
    give the same ones; else None (no affine comparison of one tied int, or the readings differ)."""
    got_ = _solve(op, left, right)
    if got_ is None:
        return None
    ref, per = got_
    got = set()
    for o, v in per:
        fl, ce = v.numerator // v.denominator, -(-v.numerator // v.denominator)
        got.add({">": (fl + 1, None), ">=": (ce, None), "<": (None, ce - 1), "<=": (None, fl), "==": (ce, fl)}[o])
    if len(got) != 1:
        return None
    var, name = ref
    tied = {f.name for f in fs.features} - set(prop.free) - {f for f, _ in prop.relaxed}
    f = fs.get(name)
    if var not in (prop.var, prop.var_prime) or name not in tied or f is None or not isinstance(f.domain, ir.IntRange):
        return None
    (least, most), = got
    return var, name, least, most


def _norm(a):
    g = math.gcd(a[0], a[1])
    return a[0] // g, a[1] // g


def _as_float(c) -> tuple[int, int]:
    """The number a constant is stored as, exactly."""
    return (c, 1) if isinstance(c, int) else _norm(float(c).as_integer_ratio())


_DECIMAL = re.compile(r"(-?)(\d+)(?:\.(\d*))?(?:e([+-]?\d+))?")


def _as_decimal(c) -> tuple[int, int]:
    """The decimal the constant's shortest repr writes (``0.1`` is 1/10), exactly."""
    if isinstance(c, int):
        return c, 1
    m = _DECIMAL.fullmatch(repr(float(c)))
    sign, whole, frac, exp = m.groups()
    frac = frac or ""
    n = int(whole + frac) * (-1 if sign else 1)
    e = int(exp or 0) - len(frac)
    return _norm((n * 10 ** e, 1) if e >= 0 else (n, 10 ** -e))
