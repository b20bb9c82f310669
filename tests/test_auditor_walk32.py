"""Session 32's auditor walk: mistakes a fairness auditor plausibly makes writing a first spec, each a
diagnostic that says what was meant -- a threshold written as a percentage (`80%`), `=` where a comparison
`==` is meant (and `==` where an option's `=` is), a misspelt output function in a post-condition, an
ONNX output name the file does not have -- found by lint, not at check's load (or not at all)."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, people_decls
from fairspec.pipeline import lint

NET = ('model net = onnx("../models/people6.onnx", output = "logit")\n'
       "encode People for net { age : standard  sex : onehot  race : code  member, score : raw }\n")
IF = "forall x, x' : People\n  require x.* == x'.* except {sex}\n"


def _lint(tmp_path, body, net=NET):
    (tmp_path / "fairspec.toml").write_text("")
    for d in ("data", "models", "specs"):
        (tmp_path / d).mkdir(exist_ok=True)
    (tmp_path / "models" / "people6.onnx").write_bytes((FIXTURES / "models" / "people6.onnx").read_bytes())
    (tmp_path / "data" / "people.csv").write_bytes((FIXTURES / "data" / "people.csv").read_bytes())
    p = tmp_path / "specs" / "s.fair"
    p.write_text(people_decls() + net + body)
    return lint(p).diagnostics


def _one(diags, code):
    said = [d for d in diags if d.code == code]
    assert said, diags
    return said[0]


@pytest.mark.parametrize("claim, written, fraction", [
    ("disparate_impact(net, groups sex) >= 80%", "80%", "0.8"),
    ("statistical_parity(net, groups sex) <= 5 %", "5%", "0.05"),
    ("statistical_parity(net, groups sex) <= 12.5%", "12.5%", "0.125"),
])
def test_a_threshold_written_as_a_percentage_is_told_the_fraction(tmp_path, claim, written, fraction):
    d = _one(_lint(tmp_path, f"property p {{\n  {claim}\n}}\n"), "FS102")
    assert "'%'" in d.message
    assert written in d.hint and f"as {fraction}" in d.hint, d.hint


def test_a_tolerance_written_as_a_percentage_is_told_the_fraction(tmp_path):
    d = _one(_lint(tmp_path, f"property p {{\n  {IF}  ensure |prob(net(x)) - prob(net(x'))| <= 5%\n}}\n"), "FS102")
    assert "as 0.05" in d.hint, d.hint


@pytest.mark.parametrize("body, col", [
    ("group g = age = 40\n", 15),
    (f"property p {{\n  {IF}  ensure label(net(x)) = label(net(x'))\n}}\n", 24),
    ("property p {\n  forall x, x' : People\n  require x.* = x'.* except {sex}\n"
     "  ensure label(net(x)) == label(net(x'))\n}\n", 15),
])
def test_a_single_equals_where_a_comparison_is_expected_hints_double_equals(tmp_path, body, col):
    d = _one(_lint(tmp_path, body), "FS101")
    assert d.span.column == col and "==" in (d.hint or ""), (d.span, d.hint)


def test_an_option_compared_with_double_equals_hints_the_single_equals(tmp_path):
    d = _one(_lint(tmp_path, "property p {\n  disparate_impact(net, groups sex) >= 0.8\n  bootstrap == 100\n}\n"),
             "FS501")
    assert "bootstrap = 100" in (d.hint or ""), d.hint


def test_a_misspelt_output_function_in_a_post_condition_gets_did_you_mean(tmp_path):
    d = _one(_lint(tmp_path, f"property p {{\n  {IF}  ensure lable(net(x)) == label(net(x'))\n}}\n"), "FS209")
    assert d.hint == "did you mean 'label'?", d.hint


def test_an_onnx_output_name_the_file_lacks_is_fs413_at_lint(tmp_path):
    net = NET.replace('output = "logit"', 'output = "logits"')
    d = _one(_lint(tmp_path, "property p {\n  disparate_impact(net, groups sex) >= 0.8\n}\n", net), "FS413")
    assert "'logits'" in d.message and "'logit'" in d.message, d.message
    assert d.hint == 'the closest is output = "logit"', d.hint  # not a did-you-mean: the span is the declaration
