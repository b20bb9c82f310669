"""Golden fixtures: every spec under tests/fixtures/{ok,errors} lints to exactly its expected diagnostics.

Each fixture states what it expects in header comments:

    # expect: FS206 22:22                  code and line:col of the primary span, in this file
    # expect: FS204 lib/cycle_b.fair:3:1    ... or in a file it imports (relative to the fixture)

The SET of (code, file, line, col) of the error and warning diagnostics must
be exactly that set.  ok/ fixtures have no errors (warnings are listed like
errors); errors/ fixtures make one mistake each.  Every diagnostic is also
rendered in the three formats, whose shapes are checked.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import ERRORS, OK, diagnostic_key, error_fixtures, expectations, ok_fixtures
from fairspec.diagnostics import render, render_concise, render_full
from fairspec.diagnostics.codes import CODES
from fairspec.pipeline import lint

# Registered error codes that no spec can trigger today (no check emits them yet);
# the coverage test below fails when one starts being emitted without a fixture.
NOT_TRIGGERABLE = {
    "FS303": "value out of range: no check emits it yet",
}

JSON_KEYS = {"code", "severity", "message", "file", "line", "column", "end_line", "end_column", "hint"}
CONCISE = re.compile(r"^(?P<file>.+):(?P<line>\d+):(?P<col>\d+): (?P<code>FS\d{3}) (?P<sev>error|warning|note): (?P<msg>.+)$")

_cache: dict = {}


def _lint(path):
    if path not in _cache:
        _cache[path] = lint(path)
    return _cache[path]


def _keys(path):
    res = _lint(path)
    return {diagnostic_key(d, path) for d in res.diagnostics if d.severity in ("error", "warning")}


def _ids(paths):
    return [p.stem for p in paths]


# ------------------------------------------------------------------ the fixture sets themselves

def test_enough_fixtures():
    assert len(ok_fixtures()) >= 8
    assert len(error_fixtures()) >= 30


@pytest.mark.parametrize("path", ok_fixtures(), ids=_ids(ok_fixtures()))
def test_ok_fixture(path):
    text = path.read_text(encoding="utf-8")
    assert "# expect:" in text, f"{path.name} must state its expected diagnostics, e.g. '# expect: (no diagnostics)'"
    res = _lint(path)
    errors = [render_concise(d) for d in res.diagnostics if d.is_error]
    assert not errors, "\n".join(errors)
    assert res.spec is not None
    assert _keys(path) == expectations(path)


@pytest.mark.parametrize("path", error_fixtures(), ids=_ids(error_fixtures()))
def test_error_fixture(path):
    expected = expectations(path)
    assert expected, f"{path.name} states no '# expect: CODE line:col'"
    assert any(CODES[c].severity == "error" for c, *_ in expected), f"{path.name} expects no error"
    got = _keys(path)
    shown = "\n".join(render_concise(d) for d in _lint(path).diagnostics)
    assert got == expected, f"{path.name}\nexpected {sorted(expected)}\ngot      {sorted(got)}\n{shown}"


def test_every_error_code_has_a_fixture():
    seen = set()
    for p in error_fixtures():
        seen |= {c for c, *_ in expectations(p)}
    errors = {c for c, info in CODES.items() if info.severity == "error"}
    missing = errors - seen - set(NOT_TRIGGERABLE)
    assert not missing, f"error codes without a fixture in tests/fixtures/errors: {sorted(missing)}"
    now_covered = seen & set(NOT_TRIGGERABLE)
    assert not now_covered, f"these codes have fixtures now; remove them from NOT_TRIGGERABLE: {sorted(now_covered)}"


def test_every_warning_code_that_lint_emits_has_a_fixture():
    seen = set()
    for p in ok_fixtures() + error_fixtures():
        seen |= {c for c, *_ in expectations(p)}
    # FS504 (no backend decides the kind) has no fixture: every property kind has a backend now
    assert {"FS211", "FS410"} <= seen


def test_fixture_expectations_name_registered_codes():
    for p in ok_fixtures() + error_fixtures():
        for code, *_ in expectations(p):
            assert code in CODES, f"{p.name}: {code} is not a registered code"


# ------------------------------------------------------------------ rendering

def _all_diagnostics():
    out = []
    for p in ok_fixtures() + error_fixtures():
        out.extend((p, d) for d in _lint(p).diagnostics)
    return out


def test_render_full_has_header_location_and_caret():
    for path, d in _all_diagnostics():
        text = render_full(d)
        lines = text.splitlines()
        assert lines[0] == f"{d.severity}[{d.code}]: {d.message}", lines[0]
        if d.span is None:
            continue
        assert lines[1] == f"  --> {d.span.file}:{d.span.line}:{d.span.column}"
        gutter = re.compile(r"^ (\s*|\d+) \| ?")
        code_line = lines[3]
        caret_line = lines[4]
        assert code_line.startswith(f" {d.span.line} | "), text
        assert gutter.match(caret_line), text
        # the first caret sits under the span's first column
        prefix = caret_line.index("|") + 2
        first = caret_line.index("^")
        source = Path(d.span.file).read_text(encoding="utf-8", errors="replace").splitlines()[d.span.line - 1]
        if len(source.expandtabs(1)) <= 160:
            assert first - prefix == d.span.column - 1, f"{path.name}: caret misplaced\n{text}"
        else:  # a long line is shown as a window around the caret: the caret is under the same character
            assert code_line[first] == source.expandtabs(1)[d.span.column - 1], f"{path.name}: caret misplaced\n{text}"
        assert set(caret_line[first:].rstrip()) == {"^"}
        if d.hint:
            assert f"  = hint: {d.hint}" in lines


def test_render_concise_one_line_each():
    diags = [d for _, d in _all_diagnostics()]
    out = render(diags, "concise").splitlines()
    assert len(out) == len(diags)
    for line, d in zip(out, diags):
        m = CONCISE.match(line)
        assert m, line
        assert m["code"] == d.code and m["sev"] == d.severity
        assert (m["file"], int(m["line"]), int(m["col"])) == (d.span.file, d.span.line, d.span.column)


def test_render_json_shape():
    diags = [d for _, d in _all_diagnostics()]
    data = json.loads(render(diags, "json"))
    assert set(data) == {"diagnostics"}
    assert len(data["diagnostics"]) == len(diags)
    for j, d in zip(data["diagnostics"], diags):
        assert JSON_KEYS <= set(j), set(j)
        assert j["code"] == d.code and j["severity"] in ("error", "warning", "note")
        assert isinstance(j["message"], str) and j["message"]
        for k in ("line", "column", "end_line", "end_column"):
            assert isinstance(j[k], int) and j[k] >= 1
        assert (j["end_line"], j["end_column"]) >= (j["line"], j["column"])
        assert isinstance(j["file"], str)


def test_every_diagnostic_says_what_to_do():
    """A hint, distinct from the message: the person reading it learns how to fix the spec."""
    lacking = []
    for path, d in _all_diagnostics():
        if not d.hint or not d.hint.strip() or d.hint.strip() == d.message.strip():
            lacking.append(f"{path.name}: {d.code} {d.message}")
    assert not lacking, "diagnostics without a hint:\n" + "\n".join(lacking)


def test_every_registered_code_has_a_default_hint():
    assert [c for c, info in CODES.items() if not info.hint] == []


def test_error_spans_stay_inside_the_file():
    for path, d in _all_diagnostics():
        if d.span is None:
            continue
        lines = open(d.span.file, encoding="utf-8", errors="replace").read().splitlines() or [""]
        assert 1 <= d.span.line <= len(lines) + 1, (path.name, d)
        if d.span.line <= len(lines):
            assert 1 <= d.span.column <= len(lines[d.span.line - 1]) + 1, (path.name, d)


def test_import_diagnostics_point_into_the_imported_file():
    cyc = _lint(ERRORS / "import_cycle.fair")
    (d,) = [d for d in cyc.diagnostics if d.code == "FS204"]
    assert d.span.file.endswith("cycle_b.fair")
    assert "import_cycle.fair -> cycle_b.fair -> import_cycle.fair" in d.message
    syn = _lint(ERRORS / "import_syntax_error.fair")
    assert [x.span.file.endswith("bad_syntax.fair") for x in syn.diagnostics] == [True]


def test_ok_fixtures_build_every_property_kind():
    kinds = set()
    for p in ok_fixtures():
        kinds |= {prop.kind for prop in _lint(p).spec.properties}
    assert kinds == {"group_metric", "individual_fairness", "k_discrimination", "pba", "repair"}


def test_ok_fixtures_use_every_encoding_kind_fitted_and_given():
    seen = set()
    for p in ok_fixtures():
        for enc in _lint(p).spec.encodings:
            for c in enc.columns:
                seen.add((c.kind, c.fitted))
    assert {("raw", False), ("code", False), ("onehot", False), ("minmax", True), ("minmax", False),
            ("standard", True), ("standard", False)} <= seen


def test_ok_fixture_folder_has_only_fixtures_and_libraries():
    # imported helper files live in ok/lib and are linted through their importers
    assert {p.name for p in OK.iterdir() if p.is_dir()} <= {"lib"}
