"""Every writer prints a witness the way the spec writes values: the SARIF / GitHub message and a
pytest failure as the spec's map literal (``{age: 69, sex: M, married: true, status: "Never-married"}``,
not Python's ``{'age': 69, 'sex': 'M', 'married': True}``), the text and HTML tables cell by cell;
what they print parses through the grammar as the values it names. JSON keeps typed values."""

from __future__ import annotations

import io
import json
import re

from fairspec.syntax import ast
from fairspec.syntax.parser import parse_text
from fairspec.verdict import Verdict, Witness

X = {"age": 69, "sex": "M", "married": True, "status": "Never-married", "w": 0.1234567, "d": -2.5,
     "zip": "02134", "kind": "not", "big": 123456.5}
XP = {**X, "sex": "F", "married": False}


def _verdict(features=X, features_prime=XP):
    w = Witness(x=(1.0, 2.0), x_prime=(1.0, 3.0), features=features, features_prime=features_prime,
                outputs=(0.7, 0.2), replayed_by="onnxruntime")
    return Verdict(name="same", kind="individual", status="violated", witness=w)


def _read(e):
    """The value a parsed spec expression names (a category by its name)."""
    if isinstance(e, ast.Neg):
        return -_read(e.arg)
    if isinstance(e, ast.Num):
        return int(e.value) if e.is_int else e.value
    if isinstance(e, (ast.Str, ast.BoolLit)):
        return e.value
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.NoneLit):
        return None
    if isinstance(e, ast.SetLit):
        return {it.key.id: _read(it.value) for it in e.items}
    if isinstance(e, ast.ListLit):
        return [_read(it) for it in e.items]
    raise AssertionError(f"not a value: {e!r}")


def _parses_as(text: str):
    (decl,) = parse_text(f"group g = {text}\n").decls
    return _read(decl.expr)


def test_the_sarif_message_writes_the_witness_as_spec_text_that_parses_back():
    from fairspec.report.ci import _verdict_text

    msg = _verdict_text(_verdict())
    m = re.search(r"witness x = (\{.*?\}), x' = (\{.*?\})", msg)
    assert m, msg
    assert "'" not in m.group(1) and "True" not in msg and "False" not in msg, msg
    assert 'status: "Never-married"' in m.group(1) and "married: true" in m.group(1), msg
    assert "w: 0.1234567" in m.group(1) and "big: 123456.5" in m.group(1), msg   # not {:g}'s 0.123457
    assert _parses_as(m.group(1)) == X and _parses_as(m.group(2)) == XP


def test_a_witness_without_a_spec_reading_is_a_list_of_numbers_that_parses():
    from fairspec.report.ci import _verdict_text

    msg = _verdict_text(_verdict({}, {}))
    m = re.search(r"witness x = (\[.*?\]), x' = (\[.*?\])", msg)
    assert m and _parses_as(m.group(1)) == [1, 2] and _parses_as(m.group(2)) == [1, 3], msg


def test_the_github_annotation_and_pytest_failure_write_the_same_spec_text():
    from fairspec.pytest_plugin import describe
    from fairspec.report.ci import to_github

    out = to_github([], [_verdict()], {})
    assert "{age: 69, sex: M, married: true" in out and "'sex'" not in out, out
    text = describe(_verdict())
    m = re.search(r"witness x : (\{.*\})", text)
    assert m and _parses_as(m.group(1)) == X, text


def test_the_text_and_html_tables_write_each_value_as_the_spec_does():
    from fairspec.report import _print_witness, console
    from fairspec.report.html import _witness

    con = console(record=True, width=200, file=io.StringIO())
    _print_witness(_verdict().witness, con)
    cells = {ln.split("│")[1].strip(): (ln.split("│")[2].strip(), ln.split("│")[3].strip())
             for ln in con.export_text().splitlines() if ln.count("│") == 4}
    assert cells["married"] == ("true", "false") and cells["status"][0] == '"Never-married"', cells
    assert cells["zip"][0] == '"02134"' and cells["kind"][0] == '"not"' and cells["w"][0] == "0.1234567"
    assert {k: _parses_as(a) for k, (a, _) in cells.items() if k in X} == X
    page = _witness(_verdict().witness)
    assert "<td>true</td>" in page and "True" not in page and "&quot;Never-married&quot;" in page, page


def test_json_keeps_the_typed_values():
    d = _verdict().witness.to_json()
    assert d["features"]["married"] is True and d["features"]["age"] == 69 and json.dumps(d)
