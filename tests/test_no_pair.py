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
