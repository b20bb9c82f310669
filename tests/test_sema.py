"""Semantic analysis: names, types, policies, encodings and the IR it builds."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from conftest import FIXTURES, OK
from fairspec import ir
from fairspec.cli import main as cli_main
from fairspec.pipeline import lint

PEOPLE_CSV = FIXTURES / "data" / "people.csv"
PEOPLE_ONNX = FIXTURES / "models" / "people6.onnx"

BASE = f"""\
data people = csv("{PEOPLE_CSV}", label = hired == "yes")

features People from people {{
  age    : int in [18, 80]
  sex    : {{F, M}}  protected
  race   : {{A, B, C}}  protected
  member : bool
  score  : real in [0, 1]
}}

model net = onnx("{PEOPLE_ONNX}", output = "logit")

encode People for net {{
  age : standard
  sex : onehot
  race : code
  member, score : raw
}}
"""


def check(tmp_path: Path, body: str, *, base: str = BASE):
    p = tmp_path / "spec.fair"
    p.write_text(base + "\n" + body, encoding="utf-8")
    return lint(p)


def codes(res) -> list[str]:
    return [d.code for d in res.diagnostics]


def ok(res):
    errors = [f"{d.code} {d.span.line if d.span else ''}: {d.message}" for d in res.diagnostics if d.is_error]
    assert not errors, errors
    return res.spec


def prop(spec, name):
    (p,) = [p for p in spec.properties if p.name == name]
    return p


# ------------------------------------------------------------------ policies

def test_policy_expansion_names_and_arguments(tmp_path):
    spec = ok(check(tmp_path, """\
import "fairspec/policies/four_fifths.fair"
import "fairspec/policies/individual_fairness.fair"
apply four_fifths(net, groups = sex)
apply four_fifths(net, sex x race, 0.75, min_size = 5) as strict
apply close_scores(net, People, {sex, race}, eps = 0.01) as close
"""))
    names = [p.name for p in spec.properties]
    assert names == ["four_fifths.disparate_impact", "strict.disparate_impact", "close.close_scores"]
    d = prop(spec, "four_fifths.disparate_impact")
    assert (d.threshold, d.op, d.options.min_group_size) == (0.8, ">=", 30)  # the defaults
    assert d.groups.label == "sex"
    s = prop(spec, "strict.disparate_impact")
    assert (s.threshold, s.options.min_group_size, s.groups.label) == (0.75, 5, "sex x race")
    c = prop(spec, "close.close_scores")
    assert isinstance(c, ir.IndividualFairness)
    assert (c.post, c.eps, c.free, c.model) == ("prob", 0.01, ("sex", "race"), "net")


def test_policy_errors_point_at_the_apply_site(tmp_path):
    res = check(tmp_path, """\
policy p(m: model, g: groups) {
  property q { statistical_parity(m, groups g) <= 0.2 }
}
apply p(net, age) as bad
""")
    (d,) = res.diagnostics
    assert d.code == "FS308"
    assert d.span.line == 23  # the argument, on the apply line


def test_policy_body_findings_are_located_at_the_apply(tmp_path):
    res = check(tmp_path, """\
policy p(m: model) {
  property q {
    statistical_parity(m, groups sex) <= 0.2
    using nosuch
  }
}
apply p(net) as mine
""")
    (d,) = [x for x in res.diagnostics if x.is_error]
    # located at the apply (the user's line), the policy's body a related location (issue 26)
    assert d.span.line == 26 and "(in policy 'p', property 'q', applied here)" in d.message
    assert any(r.message == "in policy 'p', property 'q'" and r.span.line == 23 for r in d.related)


def test_policy_argument_errors(tmp_path):
    head = "policy p(m: model, t: real = 0.5) {\n  property q { statistical_parity(m, groups sex) <= t }\n}\n"
    assert codes(check(tmp_path, head + "apply p(net, 0.1, 0.2)\n")) == ["FS305"]
    assert codes(check(tmp_path, head + "apply p(net, m = net)\n")) == ["FS210"]
    assert codes(check(tmp_path, head + "apply p(t = 0.3)\n")) == ["FS210"]
    assert codes(check(tmp_path, head + "apply p(net, tt = 0.3)\n")) == ["FS210"]
    assert codes(check(tmp_path, head + 'apply p(net, "x")\n')) == ["FS301"]
    assert codes(check(tmp_path, head + "apply q(net)\n")) == ["FS201"]
    # the argument reaches the property: -0.5 is a difference's threshold no value meets (FS507 there)
    assert codes(check(tmp_path, head + "apply p(net, t = -0.5) as neg\n")) == ["FS507"]
    spec = ok(check(tmp_path, head + "apply p(net, t = 0.05) as small\n"))
    assert prop(spec, "small.q").threshold == 0.05


def test_policy_applied_twice_needs_names(tmp_path):
    head = "policy p(m: model) {\n  property q { statistical_parity(m, groups sex) <= 0.2 }\n}\n"
    res = check(tmp_path, head + "apply p(net)\napply p(net)\n")
    (d,) = res.diagnostics
    assert d.code == "FS202" and d.span.line == 24 and d.related[0].span.line == 23
    assert [p.name for p in ok(check(tmp_path, head + "apply p(net)\napply p(net) as other\n")).properties] == [
        "p.q", "other.q"]


# ------------------------------------------------------------------ individual fairness

def test_equal_except_relaxations_and_preconditions(tmp_path):
    spec = ok(check(tmp_path, """\
property f {
  forall u, u' : People
  require u'.* == u.* except {sex}
  require |u.age - u'.age| <= 3
  require |u.score - u'.score| < 0.1
  require u.race != C and u'.member
  ensure |logit(net(u)) - logit(net(u'))| <= 0.25
}
"""))
    f = prop(spec, "f")
    assert (f.var, f.var_prime, f.free, f.features, f.model) == ("u", "u'", ("sex",), "People", "net")
    assert f.relaxed == (("age", 3.0), ("score", 0.1))
    assert (f.post, f.eps) == ("logit", 0.25)
    # the operators as written: `<` is not `<=` (issue 20, class 3)
    assert f.relaxed_strict == ("score",)
    assert (f.relaxed_op("age"), f.relaxed_op("score")) == ("<=", "<")
    assert (f.eps_op, f.eps_strict) == ("<=", False)
    (pre,) = f.pre
    assert isinstance(pre, ir.Logic) and pre.op == "and"
    race = pre.args[0]
    assert race == ir.Cmp("!=", ir.FeatureRef("race", "u"), ir.Const(2))  # C is category 2
    assert pre.args[1] == ir.FeatureRef("member", "u'")


@pytest.mark.parametrize("body,code", [
    ("forall x, x' : People\n ensure label(net(x)) == label(net(x'))", "FS501"),                    # no except
    ("forall x, y' : People\n require x.* == y'.* except {sex}\n ensure label(net(x)) == label(net(y'))", "FS501"),
    ("forall x, x' : People\n require x.* == x'.* except {gender}\n ensure label(net(x)) == label(net(x'))", "FS205"),
    ("forall x, x' : People\n require x.* == x'.* except {sex}\n ensure label(net(x)) == label(lr(x'))", "FS201"),
    ("forall x, x' : People\n require x.* == x'.* except {sex}\n ensure prob(net(x)) == prob(net(x'))", "FS501"),
    ("forall x, x' : People\n require x.* == x'.* except {sex}\n ensure |prob(net(x)) - prob(net(x'))| <= -1", "FS507"),
    ("forall x, x' : People\n require x.* == x'.* except {sex}\n require |x.sex - x'.sex| <= 1\n"
     " ensure label(net(x)) == label(net(x'))", "FS501"),
    ("forall x, x' : People\n require x.* == x'.* except {sex}\n require x.age > 3\n"
     " statistical_parity(net, groups sex) <= 0.1\n ensure label(net(x)) == label(net(x'))", "FS501"),
    ("forall x, x' : People\n require x.* == x'.* except {sex}\n require age > 3\n"
     " ensure label(net(x)) == label(net(x'))", "FS201"),
    ("forall x, x' : People\n require x.* == x'.* except {sex}\n require z.age > 3\n"
     " ensure label(net(x)) == label(net(x'))", "FS201"),
    ("forall x, x' : People\n require x.* == x'.* except {sex}\n require x.sex == G\n"
     " ensure label(net(x)) == label(net(x'))", "FS206"),
])
def test_individual_fairness_errors(tmp_path, body, code):
    res = check(tmp_path, "property f {\n " + body + "\n}\n")
    assert codes(res) == [code], [(d.code, d.message) for d in res.diagnostics]


@pytest.mark.parametrize("ensure,post,op", [
    ("|prob(net(x)) - prob(net(x'))| < 0.05", "prob", "<"),
    ("|prob(net(x)) - prob(net(x'))| <= 0.05", "prob", "<="),
    ("|logit(net(x)) - logit(net(x'))| < 1", "logit", "<"),
    ("label(net(x)) == label(net(x'))", "label", "<="),
])
def test_post_condition_keeps_its_operator(tmp_path, ensure, post, op):
    spec = ok(check(tmp_path, f"""\
property f {{
  forall x, x' : People
  require x.* == x'.* except {{sex}}
  require |x.age - x'.age| < 2
  ensure {ensure}
}}
"""))
    f = prop(spec, "f")
    assert (f.post, f.eps_op, f.eps_strict) == (post, op, op == "<" and post != "label")
    assert f.relaxed == (("age", 2.0),) and f.relaxed_strict == ("age",)


@pytest.mark.parametrize("line", ["require |x.age - x'.age| < 0", "require |x.age - x'.age| <= -1",
                                  "ensure |prob(net(x)) - prob(net(x'))| < 0"])
def test_empty_comparisons_are_diagnosed(tmp_path, line):
    ensure = "" if line.startswith("ensure") else "  ensure label(net(x)) == label(net(x'))\n"
    res = check(tmp_path, f"property f {{\n  forall x, x' : People\n  require x.* == x'.* except {{sex}}\n"
                          f"  {line}\n{ensure}}}\n")
    # a pre-condition no pair meets: the warning FS509 (the property holds vacuously; it was FS307); a
    # post-condition no pair meets: FS507, a claim its quantity's range (an absolute difference, >= 0) never meets
    assert ("FS507" if line.startswith("ensure") else "FS509") in codes(res)


# ------------------------------------------------------------------ categories lower to codes

def test_category_lowering(tmp_path):
    spec = ok(check(tmp_path, """\
group b_or_c = race in {B, "C"}
group not_a = race != A
group women = "F" == sex
group members = member == true
group mixed = score * 2 + 1 > age / 40 and not member
"""))
    g = {a.name: a for a in spec.groups}
    assert g["b_or_c"].predicate == ir.InSet(ir.FeatureRef("race"), (1, 2), False)
    assert g["not_a"].predicate == ir.Cmp("!=", ir.FeatureRef("race"), ir.Const(0))
    assert g["women"].predicate == ir.Cmp("==", ir.Const(0), ir.FeatureRef("sex"))
    assert g["members"].predicate == ir.Cmp("==", ir.FeatureRef("member"), ir.Const(True))
    assert g["b_or_c"].values == ("not b_or_c", "b_or_c")
    assert isinstance(g["mixed"].predicate, ir.Logic)


def test_numeric_and_negative_categories(tmp_path):
    spec = ok(check(tmp_path, "", base="""\
features F {
  band : {-1, 0, 2.5}
  level : {1, 2, 3}
}
group low = band == -1
group mid = band not in {0, 2.5}
group two = level == 2 or level == "3"
"""))
    g = {a.name: a.predicate for a in spec.groups}
    assert g["low"] == ir.Cmp("==", ir.FeatureRef("band"), ir.Const(0))
    assert g["mid"] == ir.InSet(ir.FeatureRef("band"), (1, 2), True)
    assert g["two"] == ir.Logic("or", (ir.Cmp("==", ir.FeatureRef("level"), ir.Const(1)),
                                       ir.Cmp("==", ir.FeatureRef("level"), ir.Const(2))))


@pytest.mark.parametrize("expr,code", [
    ("race < B", "FS301"), ("race == D", "FS206"), ("race == 1", "FS206"), ("age == A", "FS205"),
    ("age + sex > 1", "FS301"), ("member and 1", "FS301"), ("race in B", "FS301"), ("nope > 1", "FS205"),
    ("score", "FS301"), ('sex == "f"', "FS206"),
])
def test_group_type_errors(tmp_path, expr, code):
    assert codes(check(tmp_path, f"group g = {expr}\n")) == [code]


# ------------------------------------------------------------------ groups in properties

def test_compound_and_derived_groups(tmp_path):
    spec = ok(check(tmp_path, """\
group older = age >= 50
property p { statistical_parity(net, groups sex x older x member) <= 0.3 }
"""))
    atoms = prop(spec, "p").groups.atoms
    assert [a.name for a in atoms] == ["sex", "older", "member"]
    assert atoms[0].feature == "sex" and atoms[0].values == ("F", "M")
    assert atoms[1].feature is None and atoms[1].predicate == ir.Cmp(">=", ir.FeatureRef("age"), ir.Const(50))
    assert atoms[2].feature == "member"


@pytest.mark.parametrize("groups,code", [("age", "FS308"), ("sex x sex", "FS308"), ("gender", "FS205"),
                                         ("net", "FS205")])
def test_bad_groups(tmp_path, groups, code):
    assert codes(check(tmp_path, f"property p {{ statistical_parity(net, groups {groups}) <= 0.3 }}\n")) == [code]


# ------------------------------------------------------------------ encodings

def test_fitted_and_given_encodings(tmp_path):
    res = check(tmp_path, f"""\
model lr = sklearn("{FIXTURES / 'models' / 'people6.pkl'}", trust pickle)
encode People for lr {{
  age : standard(mean = 50, std = 10)
  sex : code {{ F = 1, M = 0 }}
  race : onehot
  member : code
  score : minmax
}}
""")
    # lint reads the pickle's width inertly (nothing runs): 7 columns for a 6-input model is FS402
    errors = [(d.code, d.span.line) for d in res.diagnostics if d.is_error]
    assert [c for c, _ in errors] == ["FS402"]
    spec = res.spec
    net = spec.encoding_for("net")
    assert net.width == 6 and net.features == "People"
    age, sex, race, member, score = net.columns
    assert (age.kind, age.fitted, age.mean, age.std, age.offset) == ("standard", True, None, None, 0)
    assert (sex.kind, sex.offset, sex.width, sex.categories) == ("onehot", 1, 2, ("F", "M"))
    assert (race.kind, race.offset, race.codes) == ("code", 3, (0.0, 1.0, 2.0))
    assert (member.kind, member.offset, score.offset) == ("raw", 4, 5)
    lr = spec.encoding_for("lr")
    assert lr.width == 7
    age, sex, race, member, score = lr.columns
    assert (age.fitted, age.mean, age.std) == (False, 50.0, 10.0)
    assert sex.codes == (1.0, 0.0)
    assert (race.kind, race.width, race.offset) == ("onehot", 3, 2)
    assert (member.kind, member.categories, member.codes) == ("code", ("false", "true"), (0.0, 1.0))
    assert (score.kind, score.fitted, score.lo, score.hi) == ("minmax", True, None, None)
    m = spec.model("lr")
    assert (m.format, m.trust_pickle, m.features) == ("sklearn", True, "People")


@pytest.mark.parametrize("line,code", [
    ("age : minmax(lo = 5)", "FS307"), ("age : minmax(lo = 5, hi = 5)", "FS302"),
    ("age : standard(mean = 1, std = 0)", "FS307"), ("age : minmax(low = 1, hi = 2)", "FS208"),
    ("age : code", "FS407"), ("sex : raw", "FS407"), ("sex : minmax", "FS407"),
    ("sex : onehot(lo = 1)", "FS208"), ("race : code { A = 0, B = 1 }", "FS407"),
    ("race : onehot { A = 0 }", "FS407"), ("age : minmax(lo = x, hi = 2)", "FS301"),
])
def test_encoding_line_errors(tmp_path, line, code):
    """The encode block of BASE with the line for one feature replaced by `line`."""
    lines = {"age": "age : standard", "sex": "sex : onehot", "race": "race : code", "member": "member : raw",
             "score": "score : raw"}
    lines[line.split()[0]] = line
    block = "encode People for net {\n" + "".join(f"  {x}\n" for x in lines.values()) + "}\n"
    base = BASE[: BASE.index("encode People for net")] + block
    res = check(tmp_path, "", base=base)
    assert codes(res) == [code], [(d.code, d.message) for d in res.diagnostics]


def test_encoding_width_and_protected_checks(tmp_path):
    res = check(tmp_path, "", base=BASE.replace("  race : code\n", "  race : onehot\n"))
    (d,) = res.diagnostics
    assert d.code == "FS402" and "8 columns wide" in d.message and "6 inputs" in d.message
    res = check(tmp_path, "", base=BASE.replace("  member, score : raw\n", "  member, score : raw\n  extra : raw\n"))
    assert codes(res) == ["FS205"]  # the unknown line is reported, not a width that only echoes it


def test_unencoded_feature_warning(tmp_path):
    base = BASE.replace("  score  : real in [0, 1]\n", "  score  : real in [0, 1]\n  split  : {test, train}\n")
    res = check(tmp_path, "", base=base)
    (d,) = res.diagnostics
    assert (d.code, d.severity, d.span.line) == ("FS211", "warning", 9)
    assert "split" in d.message and d.hint
    # a protected feature that is not encoded is an error instead
    res = check(tmp_path, "", base=base.replace("  split  : {test, train}\n", "  split  : {test, train} protected\n"))
    assert codes(res) == ["FS403"]


def test_rule_model_binds_its_feature_set(tmp_path):
    spec = ok(check(tmp_path, "model r = rule(member and age > 30)\n"
                              "property p { statistical_parity(r, groups sex) <= 0.3 }\n"))
    r = spec.model("r")
    assert (r.format, r.path, r.features) == ("rule", None, "People")
    assert r.rule == ir.Logic("and", (ir.FeatureRef("member"), ir.Cmp(">", ir.FeatureRef("age"), ir.Const(30))))
    assert codes(check(tmp_path, "model r = rule(height > 3)\n")) == ["FS205"]


# ------------------------------------------------------------------ data declarations

def test_data_options_ir(tmp_path):
    spec = ok(check(tmp_path, f"""\
data semi = csv("{FIXTURES / 'data' / 'adult_head.ssv'}", sep = ";", missing = ["?", "NA"],
                where = col("education-num") >= 9 and sex == "Male", label = income == ">50K")
data named = csv("{PEOPLE_CSV}", header = true, columns = [a, s, r, m, sc, h, sp], categories = codes)
"""))
    semi = spec.data("semi")
    assert (semi.sep, semi.header, semi.columns, semi.missing, semi.categories) == (";", True, None, ("?", "NA"), "names")
    assert semi.where == ir.Logic("and", (ir.Cmp(">=", ir.ColumnRef("education-num"), ir.Const(9)),
                                          ir.Cmp("==", ir.ColumnRef("sex"), ir.Const("Male"))))
    assert semi.label == ir.Cmp("==", ir.ColumnRef("income"), ir.Const(">50K"))
    named = spec.data("named")
    assert named.columns == ("a", "s", "r", "m", "sc", "h", "sp") and named.categories == "codes"
    assert Path(named.path) == PEOPLE_CSV


@pytest.mark.parametrize("args,code", [
    ('sep = 1', "FS301"), ('header = "yes"', "FS301"), ('columns = age', "FS301"), ('columns = [a, a]', "FS202"),
    ('missing = [1]', "FS301"), ('categories = indices', "FS307"), ('label = score', "FS306"),
    ('label = nope == 1', "FS207"), ('where = score', "FS301"), ('label = hired == 1', "FS301"),
    ('trust pickle', "FS208"), ('encoding = "latin-1"', "FS208"),
])
def test_data_option_errors(tmp_path, args, code):
    body = f'data d = csv("{PEOPLE_CSV}", {args})\n'
    assert codes(check(tmp_path, body)) == [code]


@pytest.mark.parametrize("body, key, line, col", [
    (f'data d = csv("{PEOPLE_CSV}", label = hired == "yes", label = hired == "no")\n', "label", 1, -1),
    (f'model m = onnx("{PEOPLE_ONNX}", output = "logit", output = 0)\n', "output", 1, -1),
    ("property p {\n  statistical_parity(net, groups sex) <= 0.2\n  bootstrap = 10\n  bootstrap = 20\n}\n",
     "bootstrap", 4, 3),
    ("property p {\n  statistical_parity(net, groups sex) <= 0.2\n  using data\n  using data\n}\n", "using", 4, 3),
    ("property p {\n  statistical_parity(net, groups sex, groups race) <= 0.2\n}\n", "groups", 2, 39),
    ("property p {\n  calibration_gap(net, groups sex, bins = 5, bins = 10) <= 0.2\n}\n", "bins", 2, 46),
])
def test_an_option_given_twice_is_fs214_at_the_second(tmp_path, body, key, line, col):
    base_lines = BASE.count("\n") + 1  # check() joins BASE and the body with a blank line
    res = check(tmp_path, body)
    twice = [d for d in res.diagnostics if d.code == "FS214"]
    assert len(twice) == 1, codes(res)
    (d,) = twice
    assert d.is_error and f"'{key}' is given twice" in d.message and d.related and d.related[0].span.line <= d.span.line
    assert d.span.line == base_lines + line
    if col > 0:
        assert d.span.column == col
    else:  # the second of two keyword arguments on the declaration's line
        assert d.span.column == body.rindex(key + " = ") + 1


def test_repeated_encoding_parameters_are_fs214_and_policy_arguments_stay_fs210(tmp_path):
    enc = BASE.replace("age : standard", "age : minmax(lo = 18, lo = 20, hi = 80)")
    res = check(tmp_path, "property p { statistical_parity(net, groups sex) <= 0.2 }\n", base=enc)
    assert [d.code for d in res.diagnostics if d.is_error] == ["FS214"]
    head = "policy p(m: model, t: real = 0.5) {\n  property q { statistical_parity(m, groups sex) <= t }\n}\n"
    assert codes(check(tmp_path, head + "apply p(net, t = 0.1, t = 0.2)\n")) == ["FS210"]


@pytest.mark.parametrize("args,key,first,second", [("net, t = 0.1, t = 0.2", "t", 14, 23),
                                                   ("net, m = net", "m", 9, 14)])
def test_a_policy_argument_given_twice_is_fs210_said_as_fs214_is(tmp_path, args, key, first, second):
    """One check (sema.repeats.given_twice) for both: at the second, the first related; a parameter
    bound by position and then by name is given twice too."""
    head = "policy p(m: model, t: real = 0.5) {\n  property q { statistical_parity(m, groups sex) <= t }\n}\n"
    (d,) = [d for d in check(tmp_path, head + f"apply p({args})\n").diagnostics if d.is_error]
    assert d.code == "FS210" and f"'{key}' is given twice in p(...)" in d.message, d.message
    assert d.span.column == second and [(r.span.line, r.span.column) for r in d.related] == [(d.span.line, first)]


def test_a_weight_column_that_is_no_number_is_said_at_the_option(tmp_path):
    res = check(tmp_path, "property p {\n  statistical_parity(people, groups sex) <= 0.2\n  weight = sex\n}\n")
    (d,) = [d for d in res.diagnostics if d.is_error]
    assert d.code == "FS301" and "weight column 'sex'" in d.message and "label" not in d.hint
    assert (d.span.line, d.span.column) == (BASE.count("\n") + 4, 12)
    res = check(tmp_path, "property p {\n  statistical_parity(people, groups sex) <= 0.2\n  weight = scor\n}\n")
    (d,) = [d for d in res.diagnostics if d.is_error]
    assert d.code == "FS207" and (d.span.line, d.span.column) == (BASE.count("\n") + 4, 12) and "score" in d.hint


# ------------------------------------------------------------------ other property kinds

DT_BLOCK = f"""\
model dt = sklearn("{FIXTURES / 'models' / 'people_dt.skops'}")
encode People for dt {{
  sex, race : onehot
  age, member, score : raw
}}
"""


def test_kdisc_pba_repair_ir(tmp_path):
    spec = ok(check(tmp_path, """\
property k {
  k_discrimination(net, over {race, sex}, eps = 0.1) <= 4
  search knn for 2min
  explain tree
}
property b {
  pba(net, flip sex, around people, delta {age: 2, score: 0.1}, given member) >= 0.5
  report by race
}
""" + DT_BLOCK + """
repair r for dt {
  goal passing_rate_ratio(groups sex x race) >= 0.9
  bound semantic_difference <= 1.5 * minimal
  write "fixed.skops"
}
"""))
    k = prop(spec, "k")
    assert (k.over, k.eps, k.k, k.op) == (("race", "sex"), 0.1, 4, "<=")
    assert (k.options.search, k.options.search_budget, k.options.explain) == ("knn", 120.0, "tree")
    b = prop(spec, "b")
    assert (b.flip, b.around, b.delta, b.threshold) == (("sex",), "people", (("age", 2.0), ("score", 0.1)), 0.5)
    assert b.given == ir.FeatureRef("member") and b.report_by.label == "race"
    r = prop(spec, "r")
    assert (r.threshold, r.alpha, r.groups.label) == (0.9, 1.5, "sex x race")
    assert Path(r.write) == tmp_path / "fixed.skops" and not r.strict


def test_imported_files_contribute_declarations_only(tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "more.fair").write_text("group older = age > 60\n"
                                   "property theirs { statistical_parity(net, groups sex) <= 0.2 }\n"
                                   "repair r for net {\n goal passing_rate_ratio(groups sex) >= 0.8\n}\n")
    spec = ok(check(tmp_path, 'import "lib/more.fair"\nproperty mine { statistical_parity(net, groups older) <= 0.2 }\n'))
    assert [p.name for p in spec.properties] == ["mine"]
    assert [g.name for g in spec.groups] == ["older"]


def test_options(tmp_path):
    spec = ok(check(tmp_path, """\
property p {
  statistical_parity(net, groups sex) <= 0.2
  timeout = 1.5min
  seed = 7
  confidence = 0.9
  bootstrap = 20
  min_group_size = 3
  using data
}
property q {
  forall x, x' : People
  require x.* == x'.* except {sex}
  ensure label(net(x)) == label(net(x'))
  max_rows = 100
  using data
}
property r {
  pba(net, flip sex, around people)
  workers = 2
  engine = highs
}
"""))
    o = prop(spec, "p").options
    assert (o.timeout, o.seed, o.confidence, o.bootstrap, o.min_group_size, o.backend) == (
        90.0, 7, 0.9, 20, 3, "data")
    assert prop(spec, "q").options.max_rows == 100
    o = prop(spec, "r").options
    assert o.get("workers") == 2 and o.get("engine") == "highs"


@pytest.mark.parametrize("line,code,hint", [
    ("workers = 2", "FS208", "takes: bootstrap, compare, confidence, exclude_below, min_group_size, seed"),
    ("engine = highs", "FS208", "the data backend takes"),
    ("partitions = 5000", "FS307", "[1, 4096]"), ("bootstrap = 100000000", "FS307", "[1, 100_000]"),
    ("max_rows = 1e12", "FS307", ""), ("timeout = 1e400", "FS307", ""), ("seed = 1e30", "FS307", ""),
])
def test_options_checked_against_the_backend_schema(tmp_path, line, code, hint):
    body = f"property p {{\n  statistical_parity(net, groups sex) <= 0.2\n  {line}\n}}\n"
    res = check(tmp_path, body)
    assert codes(res) == [code]
    d = [d for d in res.diagnostics if d.is_error][0]
    text = open(d.span.file).read().splitlines()[d.span.line - 1]
    assert text.strip() == line    # at the option: its name (not taken) or its value (out of range)
    assert d.span.column == 3 + (len(line.split(" = ")[0]) + 3 if code == "FS307" else 0)
    assert hint in (d.hint or "") + d.message


@pytest.mark.parametrize("line,code", [
    ("using milp", "FS502"), ("using cplex", "FS503"), ("seed = -1", "FS307"), ("bootstrap = 0", "FS307"),
    ("confidence = 1", "FS307"), ("timeout = fast", "FS307"), ("mode = fastest", "FS307"),
    ("search sideways", "FS307"), ("explain graph", "FS307"), ("budget = 3", "FS208"),
])
def test_option_errors(tmp_path, line, code):
    body = f"property p {{\n  statistical_parity(net, groups sex) <= 0.2\n  {line}\n}}\n"
    assert codes(check(tmp_path, body)) == [code]


# ------------------------------------------------------------------ cascades stay quiet

def test_a_failed_declaration_is_reported_once(tmp_path):
    res = check(tmp_path, """\
group older = age > 50
property p { statistical_parity(net, groups sex x older) <= 0.2 }
property q {
  forall x, x' : People
  require x.* == x'.* except {sex}
  ensure label(net(x)) == label(net(x'))
}
""", base=BASE.replace(str(PEOPLE_CSV), str(PEOPLE_CSV) + ".missing"))
    assert codes(res) == ["FS404"]
    res = check(tmp_path, "property p { statistical_parity(net, groups sex x race) <= 0.2 }\n",
                base=BASE.replace("{A, B, C}", "{A, B, B}"))
    assert codes(res) == ["FS304"]
    res = check(tmp_path, "group bad = agee > 3\nproperty p { statistical_parity(net, groups bad) <= 0.2 }\n")
    (d,) = res.diagnostics
    assert d.code == "FS205" and "agee" in d.message and d.hint == "did you mean 'age'?"


def test_a_model_that_failed_to_load_is_reported_once(tmp_path):
    """A model whose file cannot be read (FS401) or whose pipeline disagrees with the features (FS422) is
    reported at the model; its properties add no FS301 "reads feature set 'None'" (nor "no encode block")."""
    pair = """\
property p { statistical_parity(net, groups sex) <= 0.2 }
property q {
  forall x, x' : People
  require x.* == x'.* except {sex}
  ensure label(net(x)) == label(net(x'))
}
"""
    bare = BASE[:BASE.index("encode People")]
    res = check(tmp_path, pair, base=bare.replace(str(PEOPLE_ONNX), str(FIXTURES / "models" / "garbage.onnx")))
    assert codes(res) == ["FS401"]
    skops = FIXTURES / "models" / "people_pipeline.skops"
    pipeline = bare.replace(f'onnx("{PEOPLE_ONNX}", output = "logit")', f'sklearn("{skops}")')
    pipeline = pipeline.replace("{A, B, C}", "{C, B, A}")         # the pipeline one-hot encodes A, B, C
    res = check(tmp_path, pair, base=pipeline)
    assert codes(res) == ["FS422"]
    # a readable model without an encode block: the same FS501 at both properties, no None
    res = check(tmp_path, pair, base=bare)
    assert codes(res) == ["FS501", "FS501"]
    assert all("has no encode block" in d.message for d in res.diagnostics)
    # a model on another feature set: FS301 names both
    res = check(tmp_path, pair.replace("x' : People", "x' : Other"), base=BASE + """
features Other from people {
  age : int in [18, 80]
  sex : {F, M} protected
}
""")
    (d,) = res.diagnostics
    assert d.code == "FS301" and d.message == "model 'net' reads feature set 'People', not 'Other'"


def test_explicit_data_must_have_the_feature_columns(tmp_path):
    res = check(tmp_path, f"""\
data other = csv("{FIXTURES / 'data' / 'adult_head.ssv'}", sep = ";")
property p {{ statistical_parity(net, groups sex, data = other) <= 0.2 }}
""")
    (d,) = res.diagnostics
    assert d.code == "FS207" and "member" in d.message and d.span.line == 21


def test_duplicate_names_across_files(tmp_path):
    (tmp_path / "other.fair").write_text("group older = age > 60\n")
    res = check(tmp_path, 'import "other.fair"\ngroup older = age > 50\n')
    (d,) = res.diagnostics
    assert d.code == "FS202" and d.span.line == 21
    assert d.related and d.related[0].span.file.endswith("other.fair")


# ------------------------------------------------------------------ lint JSON through the CLI

def _lint_json(path) -> tuple[int, dict]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = cli_main(["lint", str(path), "--format", "json"])
    return rc, json.loads(out.getvalue())


def test_lint_json_shape(tmp_path):
    rc, data = _lint_json(OK / "warnings.fair")
    assert rc == 0 and list(data) == ["diagnostics"] and len(data["diagnostics"]) == 4
    p = tmp_path / "bad.fair"
    p.write_text("group g = age > 1\nmodel m = onnx(\"nowhere.onnx\")\n")
    rc, data = _lint_json(p)
    assert rc == 2
    for d in data["diagnostics"]:
        assert {"code", "severity", "message", "file", "line", "column", "end_line", "end_column", "hint"} <= set(d)
        assert d["file"] == str(p) and d["severity"] == "error" and d["hint"]
    assert [(d["code"], d["line"], d["column"]) for d in data["diagnostics"]] == [("FS205", 1, 11), ("FS401", 2, 16)]
    assert data["diagnostics"][1]["end_column"] == 30
