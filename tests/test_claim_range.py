"""A claim whose quantity's known range decides it before any model is read (sema.property_args.claim_range):
never met -- almost surely a typo, `> 1` for `>= 0.8` -- is the error FS507 at the threshold; always met is
the warning FS508 (it holds whatever the model decides). Where the language knows the range: a ratio metric
and a pba share in [0, 1], the repair goal's passing-rate ratio in [0, 1], k-discrimination's k >= 1, an
influence >= 0. A threshold outside the range itself stays FS307 (tests/fixtures/errors/threshold_out_of_range)."""

import pytest

from conftest import FIXTURES, people_decls
from fairspec.pipeline import lint

NET = ('model net = onnx("../models/people6.onnx", output = "logit")\n'
       "encode People for net { age : standard  sex : onehot  race : code  member, score : raw }\n"
       'model dt = sklearn("../models/people_dt.skops")\n'
       "encode People for dt { sex, race : onehot  age, member, score : raw }  # fairspec: ignore[FS427]\n")
DIST = "distribution d = independent(people)\n"
PBA = "pba(net, flip {sex}, delta {age: 0})"
KD = "k_discrimination(net, over {sex, race}, eps = 0.05)"
INF = "influence(net, groups sex, distribution d)"

CASES = [  # (claim, expected code or None)
    ("disparate_impact(net, groups sex) > 1", "FS507"),
    ("disparate_impact(net, groups sex) < 0", "FS507"),
    ("disparate_impact(net, groups sex) >= 0", "FS508"),
    ("disparate_impact(net, groups sex) <= 1", "FS508"),
    ("disparate_impact(net, groups sex) >= 1", None),
    ("disparate_impact(net, groups sex) < 1", None),
    ("disparate_impact(net, groups sex) > 0", None),
    ("disparate_impact(net, groups sex) <= 0", None),
    ("equal_opportunity_ratio(net, groups sex) > 1", "FS507"),
    ("statistical_parity(net, groups sex) <= 1", None),      # a difference: no range the language states
    (f"{PBA} > 1", "FS507"),
    (f"{PBA} >= 0", "FS508"),
    (f"{PBA} >= 1", None),
    (f"{PBA} <= 0", None),
    (f"{KD} < 1", "FS507"),
    (f"{KD} <= 1", None),
    (f"{INF} < 0", "FS507"),
    (f"{INF} >= 0", "FS508"),
    (f"{INF} <= 0", None),
    ("REPAIR > 1", "FS507"),
    ("REPAIR >= 1", None),
    ("REPAIR > 0.99", None),
]


def _lint(tmp_path, claim):
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


@pytest.mark.parametrize("claim, code", CASES, ids=[c for c, _ in CASES])
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
    assert d.hint and ("can never be met" if code == "FS507" else "holds whatever the model decides") in d.message


def test_repair_goal_above_one_says_why_and_what_to_write(tmp_path):
    _, diags = _lint(tmp_path, "REPAIR > 1")
    (d,) = [d for d in diags if d.code == "FS507"]
    assert d.message == ("a passing-rate ratio (the lowest passing rate over the highest) lies in [0, 1], so > 1 "
                         "can never be met")
    assert "write >= 1 for equal passing rates" in d.hint
    assert not [x for x in diags if x.code == "FS213"]      # the goal is the error; no option is said unread
