"""An individual-fairness pre-condition no pair meets: the property holds vacuously.

Decided from the spec's constants and the features' declared domains alone, exactly:

* a tolerance below 0, ``|x.f - x'.f| < 0`` or ``<= -1``: an absolute difference is never below 0;
* bounds on one feature of one input, ``require x.age > 50`` with ``require x.age < 30`` (or past
  the declared range, ``x.age > 90`` for ``age : int in [18, 80]``; an int feature takes whole
  numbers only, so ``x.age > 50 and x.age < 51`` is empty too). A feature the pair ties
  (neither in ``except {...}`` nor relaxed) is one value: ``x.age > 50`` with ``x'.age < 30`` is
  empty. Conjunctions only: an ``or``, a category test is left out, which can only make the set
  larger, so "empty" stays true; arithmetic or ``not`` on ONE int feature the pair ties (``x.a * 2 == 3``,
  ``not (x.a < 3)``) is read as the whole numbers it leaves that feature where both readings of its
  constants give the same ones (fairspec.ir.affine.whole_bound; session 35), else left out too;
* a relaxed feature whose two inputs' bounds lie further apart than its tolerance:
  ``|x.age - x'.age| <= 5`` with ``x.age < 30`` and ``x'.age > 40`` (an int feature: ``x.age <= 29.5``
  is ``x.age <= 29``); ``< t`` with a gap of exactly ``t`` too;
* every feature after ``except`` tied by the pre-condition (``x.sex == x'.sex`` with ``except {sex}``):
  an admissible pair differs in at least one of them.

The arithmetic is exact, on integers: a constant is read twice, as the float it is stored as
(``float.as_integer_ratio``) and as the decimal its shortest repr writes (``0.1`` is 1/10), and "empty"
is claimed only where both readings say so (``x.s <= 0.2``, ``x'.s >= 0.3`` and ``< 0.1``: the
decimals lie exactly 0.1 apart, the floats a little less). Comparing two constants gives the same
answer in both readings; a difference need not. A gap is claimed only where, in addition, the runtime's
float64 subtraction of the nearest floats the bounds allow leaves it (0.49 - 0.17 rounds to
0.31999999999999995: ``<= 0.31999999999999995`` is met by that pair when replayed). sema's warning FS509 and certify's proof
(fairspec.certify.no_pair) read this one decision. Standard library only (lint imports it)."""

from __future__ import annotations

import math

from fairspec import ir
from fairspec.ir.affine import _as_decimal, _as_float, _norm  # noqa: F401  (the readings, read from here too)

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}


def no_pair_reason(prop: ir.IndividualFairness, fs: ir.FeatureSet) -> str | None:
    """Why no pair of ``fs``'s domain meets ``prop``'s pre-condition (one clause), or None when the
    rules above do not show it empty."""
    v, v2 = prop.var, prop.var_prime
    for f, t in prop.relaxed:
        op = prop.relaxed_op(f)
        if t < 0 or (t == 0 and op == "<"):
            return f"|{v}.{f} - {v2}.{f}| {op} {_text(t)} holds for no pair: an absolute difference is never below 0"
    if (why := _free_tied(prop)) is not None:
        return why
    tied = {f.name for f in fs.features} - set(prop.free) - {f for f, _ in prop.relaxed}
    # key -> [lo, lo strict, lo as written, hi, hi strict, hi as written]
    bounds: dict[str, list] = {}
    for e in prop.pre:
        for atom in _conjuncts(e):
            b = _bound(atom)
            # a bound as written, else arithmetic / `not` on one tied int solved for it (both readings agreeing)
            for var, name, op, c, said in [(*b, None)] if b is not None else _whole_bounds(atom, prop, fs):
                why = _add(bounds, tied, var, name, op, c, said, fs, prop)
                if why is not None:
                    return why
    for f, t in prop.relaxed:
        why = _apart(f, t, prop.relaxed_op(f), v, v2, bounds, fs)
        if why is not None:
            return why
    return None


def _whole_bounds(atom, prop, fs) -> list:
    """Arithmetic or ``not`` on one tied int feature (``x.a * 2 >= 7``, ``not (x.a < 30)``; an ``and`` of such):
    each part's whole-number bounds where both readings of its constants give the same ones
    (:func:`fairspec.ir.affine.whole_bound`), as ``(var, name, op, whole number, what it was said as)``. A part that
    is none is left out (the conjunct's set is inside what the others leave)."""
    from fairspec.ir.affine import _comparisons, whole_bound

    out = []
    for op, left, right in _comparisons(atom, False) or ():
        got = whole_bound(op, left, right, prop, fs)
        if got is None:
            continue
        var, name, least, most = got
        said = f"a require with arithmetic or not on {var}.{name}"
        if least is not None:
            out.append((var, name, ">=", int(least), f"{var}.{name} >= {int(least)} ({said}, both readings)"))
        if most is not None:
            out.append((var, name, "<=", int(most), f"{var}.{name} <= {int(most)} ({said}, both readings)"))
    return out


def _add(bounds: dict, tied, var, name, op, c, said, fs, prop) -> str | None:
    """The bound ``var.name op c`` added to ``bounds``; why no value meets them now, or None."""
    v, v2 = prop.var, prop.var_prime
    feat = fs.get(name)
    if not _finite_range(feat):
        return None
    dom = feat.domain
    key = name if name in tied else f"{var}.{name}"
    declared = f"{name} in [{_text(dom.lo)}, {_text(dom.hi)}] as declared"
    cur = bounds.setdefault(key, [dom.lo, False, declared, dom.hi, False, declared])
    said = said or f"{var}.{name} {op} {_text(c)}"
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


def _free_tied(prop: ir.IndividualFairness) -> str | None:
    """Why no pair differs in a feature after ``except`` -- every one of them tied by a top-level conjunct,
    ``x.sex == x'.sex``, or both inputs' ``== c`` the same constant (``x.sex == F and x'.sex == F``) -- as
    an admissible pair must (one that differs only in relaxed features is not compared); else None."""
    v, v2 = prop.var, prop.var_prime
    if not prop.free:
        return None
    pair, const = set(), {}
    for e in prop.pre:
        for atom in _conjuncts(e):
            if not (isinstance(atom, ir.Cmp) and atom.op == "=="):
                continue
            left, right = atom.left, atom.right
            if isinstance(right, ir.FeatureRef) and isinstance(left, ir.Const):
                left, right = right, left
            if isinstance(left, ir.FeatureRef) and isinstance(right, ir.FeatureRef) \
                    and left.feature == right.feature and {left.var, right.var} == {v, v2}:
                pair.add(left.feature)
            elif isinstance(left, ir.FeatureRef) and left.var in (v, v2) and isinstance(right, ir.Const) \
                    and not isinstance(right.value, float):      # a category's code, a bool, a whole number
                const.setdefault((left.feature, left.var), set()).add((type(right.value), right.value))
    said = []
    for f in prop.free:
        if f in pair:
            said.append(f"{v}.{f} == {v2}.{f}")
        elif const.get((f, v), set()) & const.get((f, v2), set()):
            said.append(f"{v}.{f} and {v2}.{f} set to one value")
        else:
            return None
    one = len(prop.free) == 1
    what = f"{prop.free[0]}, the feature after except" if one else f"each of {', '.join(prop.free)}, the features after except"
    return (f"the pre-condition ties {what} ({'; '.join(said)}), and a pair is compared only where it differs in "
            f"{'it' if one else 'one of them'}")


def _apart(f: str, t, op: str, v: str, v2: str, bounds: dict, fs: ir.FeatureSet) -> str | None:
    """Why the relaxed feature ``f`` (``|v.f - v2.f| op t``) admits no pair: the two inputs' bounds
    lie more than ``t`` apart (at least ``t`` for ``<``) in both readings of the constants and as the runtime
    subtracts the nearest floats (:func:`_float_apart`), else None."""
    feat = fs.get(f)
    if not (_finite_range(feat) and math.isfinite(t)):
        return None
    integer = isinstance(feat.domain, ir.IntRange)
    declared = f"{f} in [{_text(feat.domain.lo)}, {_text(feat.domain.hi)}] as declared"
    a, b = (bounds.get(k, [feat.domain.lo, False, declared, feat.domain.hi, False, declared])
            for k in (f"{v}.{f}", f"{v2}.{f}"))
    below = None
    for read in (_as_float, _as_decimal):
        i, j = _interval(a, integer, read), _interval(b, integer, read)
        if _gap(i, j, read(t), op) is not None:
            side = (a, b)
        elif _gap(j, i, read(t), op) is not None:
            side = (b, a)
        else:
            return None
        below = below or side
    lo, hi = below
    if not _float_apart(_interval(lo, integer, _as_float), _interval(hi, integer, _as_float), float(t), op):
        return None
    whole = ", whole numbers," if integer else ""
    return (f"{lo[5]} and {hi[2]}{whole} keep {v}.{f} and {v2}.{f} {'at least' if op == '<' else 'more than'} "
            f"{_text(t)} apart, so |{v}.{f} - {v2}.{f}| {op} {_text(t)} holds for no pair")


def _finite_range(feat) -> bool:
    return feat is not None and isinstance(feat.domain, (ir.IntRange, ir.RealRange)) \
        and math.isfinite(feat.domain.lo) and math.isfinite(feat.domain.hi)


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
    """No value meets the bounds ``cur``, in both readings of the constants."""
    for read in (_as_float, _as_decimal):
        lo, lo_strict, hi, hi_strict = _interval(cur, integer, read)
        if not (_lt(hi, lo) or (hi == lo and (lo_strict or hi_strict))):
            return False
    return True


def _interval(cur: list, integer: bool, read):
    """``cur``'s ends as exact fractions (numerator, denominator > 0), with their strictness; for an
    int feature the least and the most whole number the bounds leave, both non-strict."""
    lo, lo_strict, _, hi, hi_strict, _ = cur
    lo, hi = read(lo), read(hi)
    if not integer:
        return lo, lo_strict, hi, hi_strict
    least = lo[0] // lo[1] + 1 if lo_strict else -(-lo[0] // lo[1])
    most = -(-hi[0] // hi[1]) - 1 if hi_strict else hi[0] // hi[1]
    return (least, 1), False, (most, 1), False


def _gap(i, j, t, op: str):
    """The gap from interval ``i`` up to interval ``j`` when it leaves no pair with ``|d| op t``, else None."""
    _, _, hi, hi_strict = i
    lo, lo_strict, _, _ = j
    if not (_lt(hi, lo) or (hi == lo and (hi_strict or lo_strict))):
        return None
    gap = (lo[0] * hi[1] - hi[0] * lo[1], lo[1] * hi[1])
    gap = _norm(gap)
    if _lt(t, gap) or (gap == _norm(t) and (op == "<" or hi_strict or lo_strict)):
        return gap
    return None


def _float_apart(i, j, t: float, op: str) -> bool:
    """The third reading, the runtime's: a replayed pair's ``|x.f - x'.f|`` is a float64 subtraction, which
    rounds (0.49 - 0.17 is 0.31999999999999995). Rounding is monotone, so no pair's float difference is
    below that of the two nearest floats the ends allow (a strict end: the next float inside); it must
    still leave no pair with ``|d| op t``."""
    hi, lo = i[2][0] / i[2][1], j[0][0] / j[0][1]    # each end is a float (or a whole number) exactly
    if i[3]:
        hi = math.nextafter(hi, -math.inf)
    if j[1]:
        lo = math.nextafter(lo, math.inf)
    d = lo - hi
    return d > t or (d == t and op == "<")


def _lt(a, b) -> bool:
    return a[0] * b[1] < b[0] * a[1]


_NEGATE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def group_one_sided(pred: ir.Expr, fs: ir.FeatureSet) -> str | None:
    """Why a group's condition splits no population over ``fs``'s declared domain -- no value meets it
    (``age > 200`` for ``age : int in [17, 90]``; bounds on one feature that leave no value between them)
    or every value does (one bound, ``age >= 17``: the group's complement is empty) -- else None. Read
    exactly as a pre-condition's bounds are (fairspec.ir.no_pair: both readings of a constant agree)."""
    why = _no_value(list(_conjuncts(pred)), fs)
    if why is not None:
        return f"no value of {why[0]} meets {why[1]}"
    if isinstance(pred, ir.Cmp) and pred.op in _NEGATE:
        why = _no_value([ir.Cmp(_NEGATE[pred.op], pred.left, pred.right)], fs)
        if why is not None:
            return f"every value of {why[0]} meets it, so the rows outside the group are none"
    return None


def _no_value(atoms, fs: ir.FeatureSet) -> tuple[str, str] | None:
    """(the feature's declared range, the bounds) when the conjunction ``atoms`` of bounds on one feature
    (of a row, not a pair) leaves no value of its declared range, in both readings of the constants."""
    bounds: dict[str, list] = {}
    for atom in atoms:
        if not (isinstance(atom, ir.Cmp) and atom.op in _FLIP):
            continue
        left, op, right = atom.left, atom.op, atom.right
        if isinstance(right, ir.FeatureRef) and _number(left) is not None:
            left, op, right = right, _FLIP[op], left
        c = _number(right)
        if not (isinstance(left, ir.FeatureRef) and left.var is None and c is not None):
            continue
        feat = fs.get(left.feature)
        if not _finite_range(feat):
            continue
        dom = feat.domain
        cur = bounds.setdefault(feat.name, [dom.lo, False, None, dom.hi, False, None])
        said = f"{feat.name} {op} {_text(c)}"
        if op in (">", ">=", "==") and (c > cur[0] or (c == cur[0] and op == ">" and not cur[1])):
            cur[0:3] = [c, op == ">", said]
        if op in ("<", "<=", "==") and (c < cur[3] or (c == cur[3] and op == "<" and not cur[4])):
            cur[3:6] = [c, op == "<", said]
        if _empty(cur, isinstance(dom, ir.IntRange)):
            kind = "int" if isinstance(dom, ir.IntRange) else "real"
            said = [w for w in dict.fromkeys((cur[2], cur[5])) if w is not None]
            return f"{feat.name} : {kind} in [{_text(dom.lo)}, {_text(dom.hi)}]", " and ".join(said)
    return None
