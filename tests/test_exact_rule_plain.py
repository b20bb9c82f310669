"""runtime/exact_rule: a comparison of plain numbers (a data column against a column or a constant) is decided by
its float answer, without reading any row again in Fractions (review r8 of session 37: ``x.a <= x.b`` on a million
distinct rows with a == b took ~25 s). The float answer is the exact one there because every data value and every
constant reads as the shortest decimal of its float64 value, which keeps the floats' order. Checked here against
the row-by-row exact reading (the fast path switched off) on columns built to tie: equal values of float64 and
float32 columns, -0.0, values one ulp apart, integers near 2**53, NaN and infinities, decimal constants that are
not their float (0.1, 0.3) and ones that are (0.5, 3)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fairspec import ir
from fairspec.runtime import exact_rule


def _columns(seed: int, n: int = 400) -> dict:
    rng = np.random.default_rng(seed)
    pool64 = np.array([0.1, 0.3, 0.5, 3.0, -0.0, 0.0, 1e-300, 2.0 ** 53, 2.0 ** 53 + 2, np.nextafter(0.3, 1),
                       np.nextafter(0.3, 0), 0.1 + 0.2, 1 / 3, float(np.float32(0.1)), np.nan, np.inf, -np.inf])
    a = rng.choice(pool64, n)
    b = np.where(rng.random(n) < 0.5, a, rng.choice(pool64, n))
    f32 = rng.choice(np.array([0.1, 0.3, 0.5, 1 / 3], dtype=np.float32), n)
    ints = rng.choice(np.array([0, 3, 2 ** 52, 2 ** 53 - 3, -5], dtype=np.int64), n)
    big = rng.choice(np.array([2 ** 53, 2 ** 53 + 1, 2 ** 60], dtype=np.int64), n)
    return {"a": a, "b": b, "f": f32, "i": ints, "big": big}


SIDES = [ir.FeatureRef("a"), ir.FeatureRef("b"), ir.FeatureRef("f"), ir.FeatureRef("i"), ir.FeatureRef("big"),
         ir.Const(0.3), ir.Const(0.1), ir.Const(0.5), ir.Const(3), ir.Const(2 ** 53 + 1), ir.Const(float(np.float32(0.1)))]


@pytest.mark.parametrize("seed", [0, 1])
def test_plain_comparisons_decide_as_the_exact_reading(seed, monkeypatch):
    cols = _columns(seed)
    n = len(cols["a"])

    def lookup(x):
        return cols[x.feature]

    exprs = [ir.Cmp(op, l, r) for op in ("<", "<=", "==", "!=", ">=", ">")
             for l, r in itertools.product(SIDES, SIDES) if not (isinstance(l, ir.Const) and isinstance(r, ir.Const))]
    exprs += [ir.InSet(ir.FeatureRef(c), vals, neg) for c in ("a", "b", "f", "i")
              for vals in ((0.3, 0.5), (0.1,), (3, 2 ** 53 + 1)) for neg in (False, True)]
    fast = [np.asarray(exact_rule.decide_rule(e, lookup, n)) for e in exprs]
    monkeypatch.setattr(exact_rule, "_plain", lambda e, lookup: False)
    slow = [np.asarray(exact_rule.decide_rule(e, lookup, n)) for e in exprs]
    for e, x, y in zip(exprs, fast, slow):
        assert np.array_equal(x, y), (e, np.flatnonzero(x != y)[:5])


def test_a_plain_comparison_reads_no_row_again(monkeypatch):
    """``x.a <= x.b`` at a == b on every row: the fast path reads no row in Fractions (before: every distinct row)."""
    a = np.arange(1, 2001) / 7.0
    cols = {"a": a, "b": a.copy()}
    calls = []
    real = exact_rule.exact_value
    monkeypatch.setattr(exact_rule, "exact_value", lambda *a, **k: calls.append(1) or real(*a, **k))
    got = exact_rule.decide_rule(ir.Cmp("<=", ir.FeatureRef("a"), ir.FeatureRef("b")), lambda x: cols[x.feature],
                                 len(a))
    assert np.asarray(got).all() and not calls
    # arithmetic on a side is not plain: 0.1 * a <= 0.3 still goes row by row near its tie
    cols = {"a": np.full(5, 3.0)}
    got = exact_rule.decide_rule(ir.Cmp("<=", ir.ArithE("*", ir.Const(0.1), ir.FeatureRef("a")), ir.Const(0.3)),
                                 lambda x: cols[x.feature], 5)
    assert np.asarray(got).all() and calls
