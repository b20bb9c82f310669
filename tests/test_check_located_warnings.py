"""Check's warnings about the spec -- FS433 / FS435 of the rows lint did not read, FS427 of a pickle whose
input names only check can read -- were plain report text without a file:line. They are diagnostics
like lint's: the same code and hint, at the label / the target / the model / the encode block, with a
caret snippet in text, a location in JSON and a region in SARIF (a suppressed one with its suppression)."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from fairspec import api

pytest.importorskip("pandas")

from test_label_cells_check import frame, late_empty, project  # noqa: E402 - after the skip: it needs pandas


@pytest.fixture
def late(tmp_path):
    """A spec whose label column and logged decision column have empty cells only past lint's 200 rows."""
    df = frame()
    late_empty(df, "y")
    late_empty(df, "d", seed=3)
    return project(tmp_path, df)


def test_text_has_the_location_the_caret_and_the_hint(late, tmp_path):
    r = run_cli("check", late, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "warning[FS433]: column 'y' of 'log' has an empty cell in" in out
    label = out[out.index("warning[FS433]"):out.index("warning[FS435]")].splitlines()
    assert label[1].strip().startswith("--> ") and label[1].endswith("s.fair:1:33"), label
    assert label[3].strip() == '1 | data log = csv("t.csv", label = y == "True")'
    assert label[4].index("^") == label[3].index("y ==") and label[4].count("^") == len('y == "True"'), label
    assert label[5].strip().startswith('= hint: list it as missing to drop those rows: missing = {y: [""]}')
    model = out[out.index("warning[FS435]"):].splitlines()
    assert model[1].strip().endswith("s.fair:6:1") and "model m = predictions(" in model[3], model
    assert "warning: FS43" not in out                # no longer a plain report warning as well


@pytest.mark.parametrize("workers", ["1", "2"])
def test_json_has_the_location(late, tmp_path, workers):
    r = run_cli("check", late, "--format", "json", "--workers", workers, cwd=tmp_path)
    doc = json.loads(r.stdout)
    got = {d["code"]: d for d in doc["diagnostics"]}
    assert sorted(got) == ["FS433", "FS435"] and not doc.get("warnings"), doc["diagnostics"]
    assert (got["FS433"]["line"], got["FS433"]["column"], got["FS433"]["end_column"]) == (1, 33, 44)
    assert (got["FS435"]["line"], got["FS435"]["column"], got["FS435"]["severity"]) == (6, 1, "warning")
    assert all(d["file"].endswith("s.fair") and d["hint"] for d in got.values())


def test_sarif_has_the_region_and_the_suppression(late, tmp_path):
    r = run_cli("check", late, "--format", "sarif", "--ignore", "FS435", cwd=tmp_path)
    run = json.loads(r.stdout)["runs"][0]
    got = {x["ruleId"]: x for x in run["results"] if x["ruleId"].startswith("FS4")}
    region = got["FS433"]["locations"][0]["physicalLocation"]["region"]
    assert (got["FS433"]["level"], region["startLine"], region["startColumn"]) == ("warning", 1, 33)
    assert 'hint: list it as missing' in got["FS433"]["message"]["text"]
    sup = got["FS435"]
    assert sup["locations"][0]["physicalLocation"]["region"]["startLine"] == 6
    assert sup["suppressions"] == [{"kind": "external", "justification": "fairspec's --ignore option"}]
    assert {"FS433", "FS435"} <= {rule["id"] for rule in run["tool"]["driver"]["rules"]}


def test_the_code_span_and_hint_are_lints(tmp_path):
    """The same empty cells in lint's rows and past them: lint's diagnostic and check's share the code,
    the span and the hint (only the message counts the rows each read)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    df = frame()
    df.loc[[3], "y"] = ""
    [early] = api.lint(project(tmp_path / "a", df))
    df = frame()
    late_empty(df, "y")
    [said] = [d for d in api.check(project(tmp_path / "b", df)).diagnostics if d.code == "FS433"]
    assert (said.code, said.severity, said.hint) == (early.code, early.severity, early.hint)
    assert (said.span.line, said.span.column, said.span.end_column) == \
        (early.span.line, early.span.column, early.span.end_column)
