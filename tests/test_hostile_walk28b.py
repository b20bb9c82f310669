"""Session 28's hostile-input walk, second part: each test says what was seen before its fix.

* ``--html -`` wrote the report to a file named '-' in the current folder (a user means stdout, as many
  tools do). stdout holds the text report or the ``--format`` document, never HTML, so '-' is a usage
  error naming ``./-`` for the file.
* ``import "lib.fair/"`` read lib.fair (pathlib drops a trailing '/'): a path naming a folder used for a
  file is FS203.
* Categories ``{1, 1.0}`` were two categories while ``{0, -0}`` was FS304 (and ``{1.0, 1e0}`` too): the
  parser kept an integer as its digits and any other number as Python's float text, so a category
  written 1.0 also matched no cell of a numeric data column (read as 1). One rule now: a category written
  as a number is that number, as a numeric column's value is, and numbers equal as numbers are one
  category (FS304).
* ``race : code {A = 0, B = 1, C = 1}`` linted clean: the model cannot tell B from C, so a counterfactual
  between them compares one input with itself. It is warning FS438 at the second. ``code {A = 0, A = 1,
  ...}`` kept the later code silently: FS304.
* A policy whose body states no property, applied, added nothing and said so nowhere (the check report
  listed the spec's other properties): warning FS217 at the apply.
"""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, people_decls, run_cli
from fairspec.pipeline import lint

PEOPLE = FIXTURES / "data" / "people.csv"
RULE = 'model r = rule(score >= 0.5)\n'


def _diagnostics(spec):
    return [(d.code, d.severity.name.lower() if hasattr(d.severity, "name") else str(d.severity), d.message,
             d.span.line, d.span.column) for d in lint(spec).diagnostics]


def _project(tmp_path, body):
    (tmp_path / "fairspec.toml").write_text("")
    (tmp_path / "people.csv").write_bytes(PEOPLE.read_bytes())
    spec = tmp_path / "s.fair"
    spec.write_text(people_decls("people.csv") + RULE + body)
    return spec


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_html_dash_is_a_usage_error_not_a_file_named_dash(tmp_path, fmt):
    spec = _project(tmp_path, "property p { statistical_parity(r, groups sex) <= 0.99 }\n")
    r = run_cli("check", spec, "--html", "-", "--format", fmt, cwd=tmp_path)
    assert r.returncode == 2 and "--html -" in r.stderr and "./-" in r.stderr, r.stderr
    assert not (tmp_path / "-").exists()
    if fmt == "json":
        json.loads(r.stdout)
    r = run_cli("check", spec, "--html", "./-", cwd=tmp_path)
    assert r.returncode == 0 and (tmp_path / "-").is_file(), r.stderr


@pytest.mark.parametrize("path", ["lib.fair/", "lib.fair/."])
def test_an_import_of_a_file_with_a_trailing_slash_is_fs203(tmp_path, path):
    (tmp_path / "lib.fair").write_text("group older = age >= 40\n")
    spec = _project(tmp_path, "property p { statistical_parity(r, groups older) <= 0.99 }\n")
    spec.write_text(f'import "{path}"\n' + spec.read_text())
    errors = [(c, m, line, col) for c, s, m, line, col in _diagnostics(spec) if s == "error"]
    assert [(c, line, col) for c, _, line, col in errors][:1] == [("FS203", 1, 1)], errors
    assert "ends with '/'" in errors[0][1], errors
    spec.write_text(spec.read_text().replace(f'"{path}"', '"lib.fair"'))
    assert [d for d in _diagnostics(spec) if d[1] == "error"] == []


@pytest.mark.parametrize("cats, second", [("{1, 1.0}", "1"), ("{0, -0}", "0"), ("{1.0, 1e0}", "1"),
                                          ("{2, 2.00}", "2"), ("{-1, -1.0}", "-1")])
def test_categories_equal_as_numbers_are_one_category(tmp_path, cats, second):
    spec = tmp_path / "s.fair"
    spec.write_text(f"features F {{\n  g : {cats}\n  age : int in [0, 9]\n}}\n")
    errors = [(c, m, line) for c, s, m, line, col in _diagnostics(spec) if s == "error"]
    assert [(c, line) for c, _, line in errors] == [("FS304", 2)], errors
    assert f"'{second}' is listed twice" in errors[0][1], errors
    spec.write_text("features F {\n  g : {1, 2, 1.5, -1}\n  age : int in [0, 9]\n}\n")
    assert [d for d in _diagnostics(spec) if d[1] == "error"] == []


def test_a_category_written_1_0_matches_a_numeric_column_read_as_1(tmp_path):
    (tmp_path / "fairspec.toml").write_text("")
    (tmp_path / "d.csv").write_text("grade,score,hired\n" + "".join(
        f"{1 + i % 2},{(i % 10) / 10},{'yes' if i % 3 else 'no'}\n" for i in range(60)))
    spec = tmp_path / "s.fair"
    spec.write_text('data d = csv("d.csv", label = hired == "yes")\n'
                    "features F from d {\n  grade : {1.0, 2.0}  protected\n  score : real in [0, 1]\n}\n"
                    + RULE + "property p { statistical_parity(r, groups grade) <= 1 }\n")
    r = run_cli("check", spec, "--format", "json", cwd=tmp_path)
    doc = json.loads(r.stdout)
    assert r.returncode == 0, (r.stdout[-1500:], r.stderr)
    assert "outside its declared domain" not in r.stdout + r.stderr, r.stdout[-1500:]
    assert [v["status"] for v in doc["properties"]] == ["holds"], doc["properties"]    # <= 1 over 60 rows


ENCODE = ('model risk = onnx("{models}/people6.onnx")\n'
          "encode People for risk {{\n  age : standard\n  sex : onehot\n  race : code {table}\n  member, score : raw\n}}\n"
          "property p {{ statistical_parity(risk, groups race) <= 0.9 }}\n")


@pytest.mark.parametrize("table, want", [("{A = 0, B = 1, C = 1}", [("FS438", "warning", 13, 30)]),
                                         ("{A = 2, B = 1, C = 2.0}", [("FS438", "warning", 13, 30)]),
                                         ("{A = 0, A = 1, B = 1, C = 2}", [("FS304", "error", 13, 23)]),
                                         ("{A = 0, B = 1, C = 2}", [])])
def test_a_code_table_giving_two_categories_one_code_is_said(tmp_path, table, want):
    spec = tmp_path / "s.fair"
    spec.write_text(people_decls(PEOPLE) + ENCODE.format(models=FIXTURES / "models", table=table))
    got = [(c, s, line, col) for c, s, m, line, col in _diagnostics(spec) if s in ("error", "warning")]
    assert got == want, _diagnostics(spec)


def test_applying_a_policy_that_states_no_property_is_fs217(tmp_path):
    spec = tmp_path / "s.fair"
    spec.write_text(people_decls(PEOPLE) + RULE + "policy empty(m: model) {\n}\napply empty(r)\n"
                    "property p { statistical_parity(r, groups sex) <= 0.9 }\n")
    got = [(c, s, line, col) for c, s, m, line, col in _diagnostics(spec) if s in ("error", "warning")]
    assert got == [("FS217", "warning", 12, 1)], _diagnostics(spec)
    spec.write_text(spec.read_text().replace("{\n}\napply empty(r)", "{\n  property q { statistical_parity(m, "
                                             "groups sex) <= 0.9 }\n}\napply empty(r)"))
    assert [d for d in _diagnostics(spec) if d[1] in ("error", "warning")] == []
