"""Session 37 audit (h7): a rule model decided on data rows in exact rationals.

A rule (``model m = rule(0.1 * a <= 0.3)``) means exact arithmetic, each constant the decimal written (README),
but the data backend decided each row in float64 (runtime/evaluate): at a = 3, 0.1 * 3 = 0.30000000000000004 >
0.3, so every such row was counted negative and a statistical parity that holds on the data was reported
``violated``. runtime/exact_rule re-decides the rows near a tie in Fractions (each data value the decimal its
float reads as: a CSV cell 0.3 is the spec's 0.3). Truth here is brute force: every row in Fractions. Each
test failed before the fix but test_a_data_value_is_the_decimal_the_data_writes (it guards that reading)."""

from __future__ import annotations

import json
from fractions import Fraction as Fr

import numpy as np
import pytest
from conftest import run_cli

from fairspec import ir

C, F = ir.Const, ir.FeatureRef


def _arith(op, a, b):
    return ir.ArithE(op, a, b)


# (the rule in IR, the same rule over Fractions: a, b the data values as exact binary floats)
RULES = [
    (ir.Cmp("<=", _arith("*", C(0.1), F("a")), C(0.3)), lambda a, b: Fr("0.1") * a <= Fr("0.3")),
    (ir.Cmp(">", _arith("+", _arith("*", C(0.1), F("a")), _arith("*", C(0.2), F("b"))), C(0.3)),
     lambda a, b: Fr("0.1") * a + Fr("0.2") * b > Fr("0.3")),
    (ir.Cmp("==", _arith("+", _arith("*", C(0.1), F("a")), _arith("*", C(0.2), F("b"))), C(0.3)),
     lambda a, b: Fr("0.1") * a + Fr("0.2") * b == Fr("0.3")),
    (ir.Cmp("!=", _arith("*", C(0.7), F("a")), _arith("*", C(0.1), F("b"))),
     lambda a, b: Fr("0.7") * a != Fr("0.1") * b),
    (ir.Logic("or", (ir.Cmp(">=", _arith("/", F("a"), C(0.3)), C(10)), ir.Cmp("<", ir.AbsE(_arith("-", F("b"), C(0.6))), C(0.3)))),
     lambda a, b: a / Fr("0.3") >= 10 or abs(b - Fr("0.6")) < Fr("0.3")),
    (ir.InSet(_arith("*", C(0.1), F("a")), (0.3, 0.7)), lambda a, b: Fr("0.1") * a in (Fr("0.3"), Fr("0.7"))),
    (ir.Cmp("==", _arith("+", F("a"), C(0.2)), C(0.3)), lambda a, b: a + Fr("0.2") == Fr("0.3")),
    (ir.Cmp(">=", F("a"), C(0.3)), lambda a, b: a >= Fr("0.3")),
]


@pytest.mark.parametrize("k", range(len(RULES)))
def test_rule_rows_decided_exactly(k):
    from fairspec.runtime.rule import RuleModel

    rule, truth = RULES[k]
    rng = np.random.default_rng(k)
    a = np.concatenate([np.arange(0, 8, dtype=float), rng.integers(0, 8, 200).astype(float), [0.3, 0.9, 3.0, 0.1,
                                                                                                0.1 + 0.2]])
    b = np.concatenate([np.arange(8, dtype=float)[::-1], rng.integers(0, 4, 200).astype(float), [0.9, 0.3, 0.0, 1.0,
                                                                                                 0.5]])
    model = RuleModel(ir.Model(name="m", format="rule", path=None, rule=rule), None)
    got = model.decide_values({"a": a, "b": b}, len(a))
    want = np.array([int(bool(truth(Fr(repr(float(x))), Fr(repr(float(y)))))) for x, y in zip(a, b)])
    assert (got == want).all(), np.flatnonzero(got != want)


def test_float_and_exact_disagree_on_these_rows():
    """The cases above are real: float64 decides some of their rows the other way."""
    from fairspec.runtime.evaluate import evaluate

    a, b = np.array([3.0, 1.0]), np.array([0.0, 1.0])
    lookup = lambda e: {"a": a, "b": b}[e.feature]
    assert not evaluate(RULES[0][0], lookup, 2)[0] and RULES[0][1](Fr(3), Fr(0))
    assert evaluate(RULES[1][0], lookup, 2)[1] and not RULES[1][1](Fr(1), Fr(1))
    assert not evaluate(RULES[2][0], lookup, 2)[1] and RULES[2][1](Fr(1), Fr(1))


SPEC = """data d = csv("d.csv", label = y == 1)
features P from d {
  a : int in [0, 5]
  g : {F, M} protected
}
model m = rule(RULE)
property q { statistical_parity(m, groups g) <= 0.1 }
"""


@pytest.mark.parametrize("rule, pos_f, pos_m", [("0.1 * a <= 0.3", 300, 300),
                                                ("0.1 * a - 0.2 == 0.1 or g == M", 300, 300),
                                                ("0.1 * a - 0.2 != 0.1 and g == F", 0, 0)])
def test_group_metric_on_a_rule_counts_rows_exactly(tmp_path, rule, pos_f, pos_m):
    """float64 counted the F rows the other way: every one of these was ``violated`` (parity 1)."""
    # every F row has a = 3 (exactly on the tie), every M row a = 1
    rows = ["a,g,y"] + [f"3,F,{i % 2}" for i in range(300)] + [f"1,M,{i % 2}" for i in range(300)]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "fairspec.toml").write_text("")
    (tmp_path / "s.fair").write_text(SPEC.replace("RULE", rule))
    r = run_cli("check", tmp_path / "s.fair", "--format", "json", cwd=tmp_path)
    (v,) = json.loads(r.stdout)["properties"]
    groups = {g["group"]: g for g in v["details"]["groups"]}
    assert groups["g=F"]["positives"] == pos_f, v
    assert groups["g=M"]["positives"] == pos_m, v
    assert v["status"] == "holds", v


def test_a_data_value_is_the_decimal_the_data_writes(tmp_path):
    """A CSV cell 0.3 against the spec's 0.3: ``score >= 0.3`` holds on it (as float64 also says); read as its
    binary float (0.29999999999999998890) every such row would turn negative."""
    rows = ["a,s,g,y"] + [f"1,0.3,F,{i % 2}" for i in range(300)] + [f"1,0.7,M,{i % 2}" for i in range(300)]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "fairspec.toml").write_text("")
    spec = SPEC.replace("  g : {F, M}", "  s : real in [0, 1]\n  g : {F, M}").replace("RULE", "s >= 0.3 and s + 0.2 >= 0.5")
    (tmp_path / "s.fair").write_text(spec)
    r = run_cli("check", tmp_path / "s.fair", "--format", "json", cwd=tmp_path)
    (v,) = json.loads(r.stdout)["properties"]
    groups = {g["group"]: g for g in v["details"]["groups"]}
    assert groups["g=F"]["positives"] == 300 and groups["g=M"]["positives"] == 300, v
    assert v["status"] == "holds", v


def test_an_underflowing_product_is_decided_exactly():
    """Review r8: a product that underflows (1e-160 * 1.0001e-160 keeps ~11 bits in a subnormal) carries an
    absolute error the relative band cannot bound; multiplied back up by 1e300 it decided ``>=`` the wrong way on
    4 of 8 rows. Such rows are now always decided again (failed before: fairspec 0, exact 1)."""
    from fairspec.runtime.rule import RuleModel

    prod = _arith("*", _arith("*", F("a"), F("b")), C(1e300))
    a = np.full(8, 1e-160)
    b = np.repeat([1.23456789e-160, 1.2345e-160, 3.7e-160, 1.0001e-160], 2)
    for op in (">=", "<="):
        for k in range(0, 8, 2):
            c = float(repr(float(b[k])).replace("e-160", "e-20"))
            model = RuleModel(ir.Model(name="m", format="rule", path=None, rule=ir.Cmp(op, prod, C(c))), None)
            got = model.decide_values({"a": a[k:k + 1], "b": b[k:k + 1]}, 1)
            lhs = Fr(repr(float(a[k]))) * Fr(repr(float(b[k]))) * Fr("1e300")
            want = lhs >= Fr(repr(c)) if op == ">=" else lhs <= Fr(repr(c))
            assert int(got[0]) == int(want), (op, b[k])


def test_a_rule_dividing_by_zero_on_a_data_row_decides_nothing(tmp_path):
    """Review r8: ``1 / (0.1 * a - 0.3)`` at a = 3 is a division by zero read exactly (float64: 1.8e16); the data
    verdict kept the float answer (violated, parity 1) where the same spec's pair property says the rule decides
    nothing there. Now unknown with that reason (failed before: violated)."""
    rows = ["a,g,y"] + [f"{a},{g},1" for a in range(6) for g in "FM" for _ in range(5)]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "s.fair").write_text(
        'data d = csv("d.csv", label = y == 1)\n'
        "features P from d {\n  a : int in [0, 5]\n  g : {F, M} protected\n}\n"
        "model m = rule((1 / (0.1 * a - 0.3) < 0 and g == F) or g == M)\n"
        "property q { statistical_parity(m, groups g) <= 0.1 }\n")
    (tmp_path / "fairspec.toml").write_text("")
    r = run_cli("check", tmp_path / "s.fair", "--format", "json", cwd=tmp_path)
    v = json.loads(r.stdout)["properties"][0]
    assert v["status"] == "unknown", v
    assert "divides by zero" in v["reason"]


def test_an_overflowing_side_is_decided_exactly():
    """Lead's re-run of review r8's fuzzer after h7's last change: a side that overflows to inf (10 * 1e300 * 1e16)
    was taken as having no exact reading and kept float64's answer (inf <= inf: true; exactly 1e317 <= 1e316:
    false). Only a missing data value keeps the float answer now (failed before: got 1)."""
    from fairspec.runtime.rule import RuleModel

    abc = _arith("*", F("c"), _arith("*", F("a"), F("b")))
    rule = ir.Cmp("<=", ir.AbsE(abc), ir.AbsE(_arith("*", F("a"), F("b"))))
    model = RuleModel(ir.Model(name="m", format="rule", path=None, rule=rule), None)
    vals = {"a": np.array([1e300, 1e300, np.nan]), "b": np.array([1e16, 1e-16, 1.0]), "c": np.array([10.0, 0.5, 1.0])}
    got = model.decide_values(vals, 3)
    assert got[:2].tolist() == [0, 1]
