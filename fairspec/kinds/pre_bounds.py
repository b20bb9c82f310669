"""Whole-number bounds a relaxation keeps from arithmetic and ``not`` in a pre-condition (session 34).

kinds/pre_relax keeps the conjuncts of a further pre-condition the lowering reads exactly (``x.f op c``, f a tied
int) and drops the others whole. ``x.age * 2 <= 130`` or ``not (x.age < 30)`` was dropped: the relaxed problem
ranged over every age, and a violation outside the pre-condition's ages left the property ``unknown`` where the
bound would prove it. Here such a conjunct is read as the whole-number bounds it is equivalent to, where it is
exactly one:

* ``not`` turned into the comparison it negates (``not (x.a < 30)``: ``x.a >= 30``; ``not (A or B)``: ``not A``
  and ``not B``); ``not (x.a == c)`` is no box and gives none;
* an affine form of ONE int feature the pair ties (``x.a * 2 + 1``, ``(x.a - 3) / 4``, ``130 >= 2 * x'.a``) solved
  for it: ``α·a + β op c`` is ``a op' (c - β) / α`` (``op'`` turned round where α < 0), read with Fractions;
* each constant read both as the float it is stored as and as the decimal it is written as (as
  kinds/pair_pre.PairPre reads the pre-condition, one reading at a time); a bound is derived only where both
  readings give the same whole-number bound (``x.a * 0.1 <= 0.3``: a <= 2 in floats, a <= 3 in decimals: none).
  ``<`` stays strict: ``x.a * 2 < 8`` is ``x.a <= 3``.

The bounds are then exactly the conjunct's set of whole numbers in either reading; the relaxation keeps them (the
lowering reads them: ``x.a <= 65``) and still reads every witness against the whole pre-condition
(pre_relax.finish)."""

from __future__ import annotations

from fractions import Fraction

from fairspec import ir

_NEG = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
_TURN = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}


def derived_bounds(atom, prop: ir.IndividualFairness, fs: ir.FeatureSet) -> tuple:
    """The bounds ``x.f >= m`` / ``x.f <= n`` / ``x.f == k`` (whole-number constants, f a tied int) the conjunct
    ``atom`` is equivalent to in both readings of its constants (the module's rules), or () where it is none."""
    cmps = _comparisons(atom, False)
    if not cmps:
        return ()
    out = []
    for op, left, right in cmps:
        got = _solved(op, left, right, prop, fs)
        if got is None:
            return ()          # a part is no bound: the conjunct (an `and` of them) is not exactly their box
        out.extend(got)
    return tuple(out)


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
    from fairspec.ir.no_pair import _as_decimal, _as_float

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


def _solved(op, left, right, prop, fs):
    """``left op right`` as whole-number bounds on its one tied int feature (both readings agreeing), or None."""
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
    fr = ir.FeatureRef(name, var)
    if least is not None and most is not None:
        return [ir.Cmp("==", fr, ir.Const(int(least)))] if least == most else None     # empty: not said here
    return [ir.Cmp(">=", fr, ir.Const(int(least)))] if least is not None else [ir.Cmp("<=", fr, ir.Const(int(most)))]


def real_bounds(atom, prop: ir.IndividualFairness, fs: ir.FeatureSet) -> list:
    """A conjunct with arithmetic or ``not`` on one tied real (kinds/pre_relax.real_hull's closed hull reads
    them): [(name, op, (value in the float reading, value in the decimal reading))] it implies, exact Fractions
    (``x.r * 2 <= 1``: r <= 1/2 in both), or [] where it is none (a bound already written ``x.r op c`` is
    real_hull's own)."""
    from fairspec.ir.no_pair import _bound

    if _bound(atom) is not None:
        return []
    cmps = _comparisons(atom, False)
    tied = {f.name for f in fs.features} - set(prop.free) - {f for f, _ in prop.relaxed}
    out = []
    for op, left, right in cmps or ():
        got = _solve(op, left, right)
        if got is None:
            continue        # a part that is no bound: the others still hold on every pair meeting the conjunct
        (var, name), per = got
        f = fs.get(name)
        if var not in (prop.var, prop.var_prime) or name not in tied or f is None or \
                not isinstance(f.domain, ir.RealRange) or len({o for o, _ in per}) != 1:
            continue
        out.append((name, per[0][0], (per[0][1], per[1][1])))
    return out


def _affine(e, read):
    """``e`` as (feature ref (var, name) or None, its coefficient, the constant term), Fractions in the reading
    ``read`` of each constant; None where it is no affine form of at most one feature."""
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
