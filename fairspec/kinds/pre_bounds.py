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

from fairspec import ir
from fairspec.ir.affine import _comparisons, _solve, whole_bound


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


def _solved(op, left, right, prop, fs):
    """``left op right`` as whole-number bounds on its one tied int feature (both readings agreeing), or None."""
    got = whole_bound(op, left, right, prop, fs)
    if got is None:
        return None
    var, name, least, most = got
    fr = ir.FeatureRef(name, var)
    if least is not None and most is not None:
        return [ir.Cmp("==", fr, ir.Const(int(least)))] if least == most else None     # empty: ir.no_pair's
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
