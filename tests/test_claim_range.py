"""A claim whose quantity's known range decides it before any model is read (sema.property_args.claim_range):
never met -- almost surely a typo, `> 1` for `>= 0.8` -- is the error FS507 at the threshold; always met is
the warning FS508: it holds wherever the quantity is defined (a ratio with no positive rate in any group is
not, and check says unknown there). Where the language knows the range: a ratio metric and a pba share in
[0, 1], the repair goal's passing-rate ratio in [0, 1], k-discrimination's k >= 1, an influence >= 0. A
threshold past the end of the range is the same: never met (>= 1.25 on a ratio) FS507, always met (<= 1.5)
FS508 -- it was FS307 'can never be decided' for either (tests/fixtures/errors/threshold_out_of_range)."""

import pytest

from conftest import FIXTURES, people_decls
from fairspec.pipeline import check, lint

NET = ('model net = onnx("../models/people6.onnx", output = "logit")\n'
       "encode People for net { age : standard  sex : onehot  race : code  member, score : raw }\n"
       'model dt = sklearn("../models/people_dt.skops")\n'
       "encode People for dt { sex, race : onehot  age, member, score : raw }  # fairspec: ignore[FS427]\n")
DIST = "distribution d = independent(people)\n"
PBA = "pba(net, flip {sex}, delta {age: 0})"
KD = "k_discrimination(net, over {sex, race}, eps = 0.05)"
INF = "influence(net, groups sex, distribution d)"
IF = "forall x, x' : People\n  require x.* == x'.* except {sex}\n  ensure |prob(net(x)) - prob(net(x'))|"

CASES = [  # (claim, expected code or None)
    ("disparate_impact(net, groups sex) > 1", "FS507"),
    ("disparate_impact(net, groups sex) < 0", "FS507"),
    ("disparate_impact(net, groups sex) >= 0", "FS508"),
    ("disparate_impact(net, groups sex) <= 1", "FS508"),
    ("disparate_impact(net, groups sex) >= 1", None),
    ("disparate_impact(net, groups sex) < 1", None),
    ("disparate_impact(net, groups sex) > 0", None),
    ("disparate_impact(net, groups sex) <= 0", None),
    ("disparate_impact(net, groups sex) >= 1.25", "FS507"),     # past the range: FS307 before
    ("disparate_impact(net, groups sex) <= -0.5", "FS507"),
    ("disparate_impact(net, groups sex) <= 1.5", "FS508"),
    ("disparate_impact(net, groups sex) > -0.5", "FS508"),
    ("equal_opportunity_ratio(net, groups sex) > 1", "FS507"),
    ("statistical_parity(net, groups sex) <= 1", "FS508"),   # an absolute difference of rates, in [0, 1]
    ("statistical_parity(net, groups sex) < 0", "FS507"),
    ("statistical_parity(net, groups sex) <= 0", None),
    ("statistical_parity(net, groups sex) > 1", "FS507"),
    ("statistical_parity(net, groups sex) >= 1", None),
    ("statistical_parity(net, groups sex) >= 0", "FS508"),
    ("statistical_parity(net, groups sex) < 1.5", "FS508"),
    ("equal_opportunity(net, groups sex) <= -0.1", "FS507"),
    ("false_positive_rate_difference(net, groups sex) >= 1.2", "FS507"),
    ("average_odds_difference(net, groups sex) <= 1", "FS508"),
    ("most_favoured(net, groups sex) > 1", "FS507"),
    ("least_favoured(net, groups sex) >= 0", "FS508"),
    ("statistical_parity(net, groups sex, distribution d) < 0", "FS507"),
    ("statistical_parity(net, groups sex, distribution d) <= 1", "FS508"),
    ("statistical_parity(net, groups sex, distribution d) <= 0.1", None),
    ("generalized_entropy_index(net) <= 100", None),         # an inequality index: no range checked
    ("calibration_gap(net, groups sex) < 0", "FS507"),     # >= 0, no upper end stated (scores may lie outside [0, 1])
    ("calibration_gap(net, groups sex) <= 5", None),
    (f"{PBA} > 1", "FS507"),
    (f"{PBA} >= 0", "FS508"),
    (f"{PBA} >= 1", None),
    (f"{PBA} <= 0", None),
    (f"{PBA} >= 1.2", "FS507"),
    (f"{PBA} <= 1.2", "FS508"),
    (f"{PBA} < -0.1", "FS507"),
    (f"{KD} < 1", "FS507"),
    (f"{KD} <= 1", None),
    (f"{KD} <= 0", "FS507"),
    (f"{KD} <= -3", "FS507"),
    (f"{INF} < 0", "FS507"),
    (f"{INF} >= 0", "FS508"),
    (f"{INF} <= 0", None),
    (f"{INF} <= -0.1", "FS507"),
    (f"{INF} > -1", "FS508"),
    (f"{IF} < 0", "FS507"),          # an absolute difference is >= 0: FS307 before
    (f"{IF} <= -0.5", "FS507"),
    (f"{IF} < -1", "FS507"),
    (f"{IF} <= 0", None),
    (f"{IF} < 0.1", None),
    ("REPAIR > 1", "FS507"),
    ("REPAIR >= 1", None),
    ("REPAIR > 0.99", None),
    ("REPAIR > 0", None),            # some row passes in every group: a claim
    ("REPAIR >= 0", "FS508"),
    ("REPAIR >= -1", "FS508"),
    ("REPAIR >= 1.5", "FS507"),
]


def _lint(tmp_path, claim):
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "fairspec.toml").write_text("")
    for d in ("data", "models", "specs"):
        (tmp_path / d).mkdir()
    for m in ("people6.onnx", "people_dt.skops"):
        (tmp_path / "models" / m).write_bytes((FIXTURES / "models" / m).read_bytes())
    (tmp_path / "data" / "people.csv").write_bytes((FIXTURES / "data" / "people.csv").read_bytes())
    if claim.startswith("REPAIR"):
        block = f"repair fair for dt {{\n  goal passing_rate_ratio(groups sex) {claim.split(' ', 1)[1]}\n}}\n"
    else:
        block = f"property p {{\n  {claim}\n}}\n"
    p = tmp_path / "specs" / "s.fair"
    p.write_text(people_decls() + NET + DIST + block)
    return p, lint(p).diagnostics


@pytest.mark.parametrize("claim, code", CASES, ids=[c.rsplit("\n", 1)[-1] for c, _ in CASES])
def test_claim_against_its_range(tmp_path, claim, code):
    p, diags = _lint(tmp_path, claim)
    said = [d for d in diags if d.code in ("FS507", "FS508")]
    assert not [d for d in diags if d.is_error and d.code != "FS507"], diags
    if code is None:
        assert said == [], said
        return
    (d,) = said
    assert d.code == code and d.is_error == (code == "FS507"), d
    line = p.read_text().splitlines()[d.span.line - 1]
    threshold = claim.rsplit(" ", 1)[1]
    assert line[d.span.column - 1:].startswith(threshold), (line, d.span)      # the caret on the threshold
    assert d.hint and ("can never be met" if code == "FS507" else "wherever it is defined") in d.message


def test_repair_goal_above_one_says_why_and_what_to_write(tmp_path):
    _, diags = _lint(tmp_path, "REPAIR > 1")
    (d,) = [d for d in diags if d.code == "FS507"]
    assert d.message == ("a passing-rate ratio (the lowest passing rate over the highest) lies in [0, 1], so > 1 "
                         "can never be met")
    assert "write >= 1 for equal passing rates" in d.hint
    assert not [x for x in diags if x.code == "FS213"]      # the goal is the error; no option is said unread


def test_k_that_is_no_whole_number_is_still_fs307(tmp_path):
    """k is a count of buckets (the IR keeps an int): 2.5 is no k, whatever the comparison."""
    _, diags = _lint(tmp_path, f"{KD} <= 2.5")
    assert [(d.code, d.message) for d in diags if d.is_error] == [("FS307", "k must be a whole number")]


def test_ratio_always_met_is_unknown_where_undefined(tmp_path):
    """FS508 says a ratio <= 1 holds wherever it is defined, not whatever the model decides: a rule that
    decides nobody positive has no positive rate in any group, and the data backend reports the ratio
    undefined (unknown, no value) for <= 1 and <= 1.5 alike; where some row is positive it holds."""
    p, _ = _lint(tmp_path, "disparate_impact(net, groups sex) <= 1")
    p.write_text(p.read_text() + "model nobody = rule(age > 90)\nmodel old = rule(age >= 79)\n"
                 "property none1 { disparate_impact(nobody, groups sex) <= 1 }\n"
                 "property none15 { disparate_impact(nobody, groups sex x race) <= 1.5 }\n"
                 "property old1 { disparate_impact(old, groups sex) <= 1 }\n")
    lines = p.read_text().splitlines()
    (w,) = [d for d in lint(p).diagnostics if d.code == "FS508" and "none1 " in lines[d.span.line - 1]]
    assert w.message == ("disparate_impact is a ratio in [0, 1] (the lowest over the highest), so <= 1 holds "
                         "wherever it is defined")
    assert "undefined where no group has a positive rate" in w.hint
    rep = check(p)
    assert not rep.has_errors and not rep.internal_errors, (rep.error, rep.internal_errors)
    got = {v.name: v for v in rep.verdicts}
    for name in ("none1", "none15"):
        v = got[name]
        assert (v.status, v.value) == ("unknown", None), v
        assert "disparate_impact is undefined here" in v.reason and "no positive decision" in v.reason, v.reason
    assert got["old1"].status == "holds" and 0 < got["old1"].value < 1


def test_individual_fairness_tolerance_below_zero_says_what_to_write(tmp_path):
    """ensure |prob(m(x)) - prob(m(x'))| < 0 is never met by any pair: FS507 at the threshold (it was
    FS307 'the tolerance must be >= 0' / 'every pair would violate'), hinting <= 0 for equal outputs."""
    _, diags = _lint(tmp_path, f"{IF} < 0")
    (d,) = [d for d in diags if d.is_error]
    assert (d.code, d.message) == ("FS507", "the post-condition's |prob(...) - prob(...)| is an absolute "
                                            "difference, never below 0, so < 0 can never be met")
    assert d.hint == "write <= 0 for equal outputs, or < eps with eps > 0"


@pytest.mark.parametrize("pre", ["< 0", "<= -1"])
def test_individual_fairness_pre_condition_no_pair_meets_is_a_vacuous_holds(tmp_path, pre):
    """require |x.age - x'.age| < 0 admits no pair, so the property holds vacuously: the warning FS509 at
    the require line (it was the error FS307), and check says holds (proved) on certify's exact-arithmetic
    proof, reason 'no pair meets the pre-condition', a note saying why (tests/test_no_pair.py)."""
    claim = ("forall x, x' : People\n  require x.* == x'.* except {sex}\n  require |x.age - x'.age| " + pre +
             "\n  ensure |prob(net(x)) - prob(net(x'))| <= 0.1")
    p, diags = _lint(tmp_path, claim)
    assert not [d for d in diags if d.is_error], diags
    (d,) = [d for d in diags if d.code == "FS509"]
    assert d.message.startswith(f"|x.age - x'.age| {pre} holds for no pair"), d
    assert p.read_text().splitlines()[d.span.line - 1].strip() == f"require |x.age - x'.age| {pre}"
    (v,) = check(p).verdicts
    assert (v.status, v.how, v.reason, v.proof.method) == ("holds", "proved", "no pair meets the pre-condition",
                                                           "exact-arithmetic"), v


def test_the_message_repeats_the_threshold_as_written(tmp_path):
    """``{:g}`` printed 1.2345678 as 1.23457 and 0.10000001 as 0.1: the message named another claim
    than the spec's (an auditor comparing the two). Each threshold prints in the shortest form that reads back."""
    _, diags = _lint(tmp_path / "a", "disparate_impact(net, groups sex) > 1.2345678")
    (d,) = [d for d in diags if d.code == "FS507"]
    assert d.message.endswith("so > 1.2345678 can never be met"), d.message
    _, diags = _lint(tmp_path / "b", "statistical_parity(net, groups sex) <= 1.0000001")
    (d,) = [d for d in diags if d.code == "FS508"]
    assert "so <= 1.0000001 holds" in d.message, d.message
