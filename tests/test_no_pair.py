"""An individual-fairness pre-condition no pair meets (fairspec.ir.no_pair): the property holds vacuously.
Lint warns FS509 at the require line; check reports `holds (proved)` on certify's exact-arithmetic proof
(fairspec.certify.no_pair), reason 'no pair meets the pre-condition', before any backend runs. Decided from
the spec's constants and the declared ranges, compared as written: a tolerance below 0; bounds on one
feature of one input (a tied feature is one value in both) that leave no value of its range (whole
numbers for an int feature). What the rules cannot show empty is left to the backends."""

import pytest

from conftest import people_decls
from fairspec import ir
from fairspec.ir.no_pair import no_pair_reason
from fairspec.pipeline import check, lint

NET = ('model net = onnx("../models/people6.onnx", output = "logit")\n'
       "encode People for net { age : standard  sex : onehot  race : code  member, score : raw }\n")

CASES = [  # (require lines after the except line, empty?)
    ("require |x.age - x'.age| < 0", True),
    ("require |x.age - x'.age| <= -0.5", True),
    ("require |x.age - x'.age| <= 0", False),          # ties age: a claim
    ("require x.age > 50\n  require x.age < 30", True),
    ("require x.age > 50\n  require x'.age < 30", True),   # age tied: x.age == x'.age
    ("require x.age > 50 and x.age < 51", True),         # an int: no whole number strictly between
    ("require x.age >= 50 and x.age <= 50", False),
    ("require x.age > 50.5 and x.age < 51", True),       # no whole number in (50.5, 51)
    ("require x.age > 50.5 and x.age <= 51", False),
    ("require x.age > 79", False),                       # 80 is in [18, 80]
    ("require x.age > 80", True),                        # past the declared range
    ("require 80 < x.age", True),                        # the constant on the left
    ("require x.age == 100", True),
    ("require x.score > 1", True),                       # real in [0, 1]
    ("require x.score >= 1", False),                     # 1 itself
    ("require x.score > 0.5 and x.score < 0.5", True),
    ("require x.score >= 0.5 and x.score <= 0.5", False),
    ("require x.age > 90 or x.age < 10", False),         # empty, but an or is not read: left to the backends
    ("require x.age > 50\n  require x'.age < 30\n  require |x.age - x'.age| <= 100", False),  # relaxed: two values
    ("require x.sex == F\n  require x'.sex == M", False),  # categories: not read (and sex is free)
    # a relaxed feature whose two inputs' bounds lie further apart than its tolerance
    ("require |x.age - x'.age| <= 5\n  require x.age < 30 and x'.age > 40", True),
    ("require |x.age - x'.age| <= 5\n  require x'.age < 30 and x.age > 40", True),   # the sides swapped
    ("require |x.age - x'.age| <= 5\n  require x.age < 30 and x'.age < 40", False),  # overlapping
    ("require |x.age - x'.age| <= 5\n  require x.age <= 29.5 and x'.age >= 35", True),  # at most 29: 6 apart
    ("require |x.age - x'.age| <= 5\n  require x.age <= 29.5 and x'.age >= 34", False),  # 29 and 34: exactly 5
    ("require |x.age - x'.age| < 5\n  require x.age <= 29.5 and x'.age >= 34", True),    # < 5: 5 is not below 5
    ("require |x.age - x'.age| <= 5\n  require x.age < 30 and x'.age >= 35", True),      # at most 29
    ("require |x.age - x'.age| <= 5\n  require x.age <= 30 and x'.age >= 35", False),
    ("require |x.age - x'.age| <= 5.5\n  require x.age <= 30 and x'.age > 35.5", True),  # 30 and 36
    ("require |x.score - x'.score| <= 0.25\n  require x.score <= 0.25 and x'.score >= 0.5", False),
    ("require |x.score - x'.score| < 0.25\n  require x.score <= 0.25 and x'.score >= 0.5", True),
    # exactly, x.score < 0.25 leaves every pair more than 0.25 apart; but the float below 0.25 is 0.25 - 2^-55,
    # and 0.5 minus it rounds to 0.25 in float64 (a tie, to even): replayed, that pair meets <= 0.25
    ("require |x.score - x'.score| <= 0.25\n  require x.score < 0.25 and x'.score >= 0.5", False),
    ("require |x.score - x'.score| <= 0.25\n  require x.score <= 0.25 and x'.score > 0.5", True),
    ("require |x.score - x'.score| < 0.1\n  require x.score <= 0.2 and x'.score >= 0.3", False),  # decimals: 0.1
    # apart; the floats 0.3 - 0.2 < 0.1: a pair meets it as the floats are stored, so not claimed
    ("require |x.score - x'.score| <= 0.3\n  require x.score <= 0.1 and x'.score >= 0.4", False),  # the floats
    # lie further apart than 0.3, the decimals exactly 0.3: not claimed
    ("require |x.score - x'.score| <= 0.25\n  require x'.score > 0.5 and x.score < 0.25 and x.score >= 0", True),
    # (review) exactly, 0.49 - 0.17 lies above 0.31999999999999995 as floats and as decimals, but the runtime's
    # float64 subtraction gives 0.31999999999999995: the pair (0.17, 0.49) meets it when replayed, so not claimed
    ("require |x.score - x'.score| <= 0.31999999999999995\n  require x.score <= 0.17 and x'.score >= 0.49", False),
    ("require |x.score - x'.score| < 0.31999999999999995\n  require x.score <= 0.17 and x'.score >= 0.49", True),
]


def _spec(tmp_path, require: str, name="p") -> str:
    from conftest import FIXTURES

    for d in ("data", "models", "specs"):
        (tmp_path / d).mkdir(exist_ok=True)
    (tmp_path / "fairspec.toml").write_text("")
    (tmp_path / "models" / "people6.onnx").write_bytes((FIXTURES / "models" / "people6.onnx").read_bytes())
    (tmp_path / "data" / "people.csv").write_bytes((FIXTURES / "data" / "people.csv").read_bytes())
    p = tmp_path / "specs" / "s.fair"
    p.write_text(people_decls() + NET + f"property {name} {{\n  forall x, x' : People\n  require x.* == x'.* except "
                 f"{{sex}}\n  {require}\n  ensure label(net(x)) == label(net(x'))\n}}\n")
    return p


@pytest.mark.parametrize("require, empty", CASES, ids=[c.replace("\n  ", "; ") for c, _ in CASES])
def test_lint_warns_exactly_when_no_pair_meets_it(tmp_path, require, empty):
    p = _spec(tmp_path, require)
    res = lint(p)
    assert not [d for d in res.diagnostics if d.is_error], res.diagnostics
    said = [d for d in res.diagnostics if d.code == "FS509"]
    assert bool(said) == empty, said
    (prop,) = res.spec.properties
    assert (no_pair_reason(prop, res.spec.feature_sets[0]) is not None) == empty
    if empty:
        (d,) = said
        assert not d.is_error and d.hint and "holds vacuously" in d.message
        assert p.read_text().splitlines()[d.span.line - 1].strip().startswith("require ")


def test_check_says_holds_proved_with_the_reason_and_a_note(tmp_path):
    p = _spec(tmp_path, "require x.age > 50\n  require x'.age < 30")
    (v,) = check(p).verdicts
    assert (v.status, v.how, v.reason) == ("holds", "proved", "no pair meets the pre-condition")
    assert v.proof.method == "exact-arithmetic" and "x.age > 50 and x'.age < 30" in v.proof.claim
    (note,) = v.details["notes"]
    assert note.startswith("the property holds vacuously: no value of age (the pair ties x.age == x'.age), a whole "
                           "number, meets x.age > 50 and x'.age < 30")


def test_the_gap_of_a_relaxed_feature_is_said_at_its_require_line(tmp_path):
    p = _spec(tmp_path, "require |x.age - x'.age| <= 5\n  require x.age <= 29.5 and x'.age >= 35")
    res = lint(p)
    (d,) = [d for d in res.diagnostics if d.code == "FS509"]
    assert d.message.startswith("x.age <= 29.5 and x'.age >= 35, whole numbers, keep x.age and x'.age more than 5 "
                                "apart, so |x.age - x'.age| <= 5 holds for no pair, so 'p' holds vacuously")
    assert p.read_text().splitlines()[d.span.line - 1].strip() == "require x.age <= 29.5 and x'.age >= 35"
    assert "tolerance must reach across the gap" in d.hint
    (v,) = check(p).verdicts
    assert (v.status, v.how, v.backend) == ("holds", "proved", "certify (pre-condition)")


def test_every_format_names_what_decided_the_vacuous_verdict(tmp_path, monkeypatch, capsys):
    """The backend column / field: certify, from the pre-condition alone (it was empty: JSON null)."""
    import json

    from fairspec.cli import main

    p = _spec(tmp_path, "require x.age > 50\n  require x'.age < 30")
    monkeypatch.chdir(p.parent)
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("FAIRSPEC_DEBUG", raising=False)
    outs = {}
    for fmt in ("json", "sarif", "text"):
        capsys.readouterr()
        args = ["check", p.name, "--format", fmt] + (["--html", "r.html"] if fmt == "text" else [])
        assert main(args) == 0
        outs[fmt] = capsys.readouterr().out
    (prop,) = json.loads(outs["json"])["properties"]
    assert (prop["status"], prop["how"], prop["backend"]) == ("holds", "proved", "certify (pre-condition)")
    row = next(line for line in outs["text"].splitlines() if line.startswith("│ p "))
    assert "holds (proved: exact arithmetic)" in row and "certify (pre-condition)" in row
    html = (p.parent / "r.html").read_text()
    assert "<td>certify (pre-condition)</td>" in html and "backend certify (pre-condition)" in html
    (run,) = json.loads(outs["sarif"])["runs"]      # a property that holds is no SARIF result; the warning is
    assert [r["ruleId"] for r in run["results"]] == ["FS509"]


def test_a_pre_condition_that_leaves_pairs_is_left_to_the_backends(tmp_path):
    p = _spec(tmp_path, "require |x.age - x'.age| <= 0")
    (v,) = check(p).verdicts
    assert v.reason != "no pair meets the pre-condition" and "vacuous" not in (v.details or {})


def test_the_decision_compares_the_numbers_as_written():
    """No arithmetic on the constants: 0.1 + 0.2 is not formed, 0.30000000000000004 > 0.3 is exact."""
    fs = ir.FeatureSet("F", (ir.Feature("s", ir.RealRange(0.0, 1.0), False, "s"),
                             ir.Feature("g", ir.Categorical(("a", "b")), True, "g")), None)
    ref = ir.FeatureRef("s", "x")

    def prop(*pre):
        return ir.IndividualFairness("p", "individual_fairness", ir.Options(), None, free=("g",), pre=pre)

    assert no_pair_reason(prop(ir.Cmp(">", ref, ir.Const(0.30000000000000004)), ir.Cmp("<=", ref, ir.Const(0.3))),
                          fs) == ("no value of s (the pair ties x.s == x'.s) meets x.s > 0.30000000000000004 and "
                                  "x.s <= 0.3")
    assert no_pair_reason(prop(ir.Cmp(">=", ref, ir.Const(0.3)), ir.Cmp("<=", ref, ir.Const(0.3))), fs) is None
    assert no_pair_reason(prop(ir.Cmp(">", ref, ir.Const(True))), fs) is None      # a bool is no bound


def _relaxed_prop(t, op, pre):
    return ir.IndividualFairness("p", "individual_fairness", ir.Options(), None, free=("g",), pre=tuple(pre),
                                 relaxed=(("v", t),), relaxed_strict=("v",) if op == "<" else ())


_OPS = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
        "==": lambda a, b: a == b}


@pytest.mark.parametrize("integer", [True, False], ids=["int", "dyadic real"])
def test_the_decision_agrees_with_brute_force(integer):
    """Random bounds on x.v and x'.v of a relaxed feature v, |x.v - x'.v| < t or <= t: 'no pair' exactly when
    no pair of the domain meets them. int in [0, 10] with constants in halves (every whole pair tried); real in
    [0, 2] with constants in quarters, exact as floats and as decimals (every pair of the 1/32 grid tried:
    the set is a polygon whose corners lie on the quarter grid, so when it is not empty it holds a grid point)."""
    import random

    rng = random.Random(509)
    scale = 1 if integer else 32
    dom = ir.IntRange(0, 10) if integer else ir.RealRange(0.0, 2.0)
    fs = ir.FeatureSet("F", (ir.Feature("v", dom, False, "v"), ir.Feature("g", ir.Categorical(("a", "b")), True, "g")),
                       None)
    grid = range(0, 10 * scale + 1) if integer else range(0, 2 * scale + 1)
    step = 2 if integer else 4                      # constants: halves, quarters
    empties = 0
    for _ in range(600):
        t = rng.randrange(0, 7 * step if integer else 3 * step) / step
        op = rng.choice(["<", "<="])
        pre = []
        for var in ("x", "x'"):
            for _ in range(rng.randrange(0, 3)):
                c = rng.randrange(-step, 11 * step if integer else 2 * step + step) / step
                if integer and rng.random() < 0.5:
                    c = float(round(c))
                pre.append((var, rng.choice(list(_OPS)), c))
        exprs = [ir.Cmp(o, ir.FeatureRef("v", var), ir.Const(c)) for var, o, c in pre]
        meets = any(all(_OPS[o](a if var == "x" else b, c * scale) for var, o, c in pre)
                    and _OPS[op](abs(a - b), t * scale) for a in grid for b in grid)
        said = no_pair_reason(_relaxed_prop(t, op, [ir.Logic("and", tuple(exprs))] if exprs else []), fs)
        assert (said is not None) == (not meets), (pre, op, t, said)
        empties += not meets
    assert 100 < empties < 500          # both answers well tried


def test_a_gap_is_claimed_only_where_floats_and_decimals_both_say_empty():
    """x.s <= a, x'.s >= b, |x.s - x'.s| op t over tenths: the decimals as written and the floats as stored
    can disagree about b - a against t (0.3 - 0.2 vs 0.1); empty is claimed exactly where both say so."""
    from fractions import Fraction

    fs = ir.FeatureSet("F", (ir.Feature("v", ir.RealRange(0.0, 1.0), False, "v"),
                             ir.Feature("g", ir.Categorical(("a", "b")), True, "g")), None)
    tenths = [i / 10 for i in range(11)]
    disagree = 0
    for a in tenths:
        for b in tenths:
            for t in tenths:
                for op in ("<", "<="):
                    if not a < b or (t == 0 and op == "<"):
                        continue
                    empty = [g > T or (g == T and op == "<") for g, T in
                             ((Fraction(b) - Fraction(a), Fraction(t)),
                              (Fraction(str(b)) - Fraction(str(a)), Fraction(str(t))))]
                    disagree += empty[0] != empty[1]
                    pre = [ir.Cmp("<=", ir.FeatureRef("v", "x"), ir.Const(a)),
                           ir.Cmp(">=", ir.FeatureRef("v", "x'"), ir.Const(b))]
                    assert (no_pair_reason(_relaxed_prop(t, op, pre), fs) is not None) == all(empty), (a, b, t, op)
    assert disagree > 10
