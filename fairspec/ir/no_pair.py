"""An individual-fairness pre-condition no pair meets: the property holds vacuously.

Decided from the spec's constants and the features' declared domains alone, by comparing the numbers
as written (two floats compare exactly; no arithmetic is done on them, so no rounding enters):

* a tolerance below 0, ``|x.f - x'.f| < 0`` or ``<= -1``: an absolute difference is never below 0;
* bounds on one feature of one input, ``require x.age > 50`` with ``require x.age < 30`` (or past
  the declared range, ``x.age > 90`` for ``age : int in [18, 80]``; an int feature takes whole
  numbers only, so ``x.age > 50 and x.age < 51`` is empty too). A feature the pair ties
  (neither in ``except {...}`` nor relaxed) is one value: ``x.age > 50`` with ``x'.age < 30`` is
  empty. Conjunctions only: an ``or``, a ``not``, arithmetic or a category test is left out, which
  can only make the set larger, so "empty" stays true.

sema's warning FS509 and certify's proof (fairspec.certify.no_pair) read this one decision. Standard
library only (lint imports it)."""

from __future__ import annotations

import math

from fairspec import ir

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}


def no_pair_reason(prop: ir.IndividualFairness, fs: ir.FeatureSet) -> str | None:
    """Why no pair of ``fs``'s domain meets ``prop``'s pre-condition (one clause), or None when the
    rules above do not show it empty."""
    v, v2 = prop.var, prop.var_prime
    for f, t in prop.relaxed:
        op = prop.relaxed_op(f)
        if t < 0 or (t == 0 and op == "<"):
            return f"|{v}.{f} - {v2}.{f}| {op} {t:g} holds for no pair: an absolute difference is never below 0"
    tied = {f.name for f in fs.features} - set(prop.free) - {f for f, _ in prop.relaxed}
    # key -> [lo, lo strict, lo as written, hi, hi strict, hi as written]
    bounds: dict[str, list] = {}
    for e in prop.pre:
        for atom in _conjuncts(e):
            b = _bound(atom)
            if b is None:
                continue
            var, name, op, c = b
            feat = fs.get(name)
            if feat is None or not isinstance(feat.domain, (ir.IntRange, ir.RealRange)):
                continue
            dom = feat.domain
            key = name if name in tied else f"{var}.{name}"
            declared = f"{name} in [{_text(dom.lo)}, {_text(dom.hi)}] as declared"
            cur = bounds.setdefault(key, [dom.lo, False, declared, dom.hi, False, declared])
            said = f"{var}.{name} {op} {_text(c)}"
            if op in (">", ">=", "==") and (c > cur[0] or (c == cur[0] and op == ">" and not cur[1])):
                cur[0:3] = [c, op == ">", said]
            if op in ("<", "<=", "==") and (c < cur[3] or (c == cur[3] and op == "<" and not cur[4])):
                cur[3:6] = [c, op == "<", said]
            if _empty(cur, isinstance(dom, ir.IntRange)):
                what = f"{name} (the pair ties {v}.{name} == {v2}.{name})" if key == name else key
                whole = ", a whole number," if isinstance(dom, ir.IntRange) else ""
                both = cur[2] if cur[2] == cur[5] else f"{cur[2]} and {cur[5]}"
                return f"no value of {what}{whole} meets {both}"
    return None


def _text(c) -> str:
    """A number as short as it reads back exactly (``{:g}`` would round 0.1234567 to 0.123457)."""
    return f"{c:g}" if float(f"{c:g}") == c else repr(c)


def _conjuncts(e: ir.Expr):
    if isinstance(e, ir.Logic) and e.op == "and":
        for a in e.args:
            yield from _conjuncts(a)
    else:
        yield e


def _number(e) -> float | None:
    if isinstance(e, ir.Const) and isinstance(e.value, (int, float)) and not isinstance(e.value, bool) \
            and math.isfinite(e.value):
        return e.value
    return None


def _bound(e: ir.Expr):
    """(var, feature, op, constant) for ``x.f op c`` or ``c op x.f`` (turned round), else None."""
    if not (isinstance(e, ir.Cmp) and e.op in _FLIP):
        return None
    left, op, right = e.left, e.op, e.right
    if isinstance(right, ir.FeatureRef) and _number(left) is not None:
        left, op, right = right, _FLIP[op], left
    c = _number(right)
    if not (isinstance(left, ir.FeatureRef) and left.var is not None and c is not None):
        return None
    return left.var, left.feature, op, c


def _empty(cur: list, integer: bool) -> bool:
    lo, lo_strict, _, hi, hi_strict, _ = cur
    if integer:
        least = math.floor(lo) + 1 if lo_strict and lo == math.floor(lo) else math.ceil(lo)
        most = math.ceil(hi) - 1 if hi_strict and hi == math.ceil(hi) else math.floor(hi)
        return least > most
    return lo > hi or (lo == hi and (lo_strict or hi_strict))
