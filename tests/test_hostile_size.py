"""Hostile input, size (issue 21 target: lint of a 5 MB spec under 5 s): a spec file over
fairspec.syntax.parser.MAX_SPEC_BYTES is FS107 before it is parsed (pure-Python LALR parsing costs
about 4 s of CPU per MB; bench/lint_size.py measures it). No timing assertion: the behaviour is the
diagnostic, the exit code and that nothing is parsed."""

from __future__ import annotations

import pytest

from conftest import run_cli
from fairspec.diagnostics import DiagnosticError
from fairspec.syntax import parser as P

HEAD = "group g = x >= 1\n"


def _padded(size: int) -> str:
    line = "# " + "x" * 76 + "\n"
    return HEAD + line * ((size - len(HEAD)) // len(line) + 1)


def test_a_spec_over_the_limit_is_fs107_and_not_parsed(tmp_path, monkeypatch):
    big = tmp_path / "big.fair"
    big.write_text(_padded(5 * 10**6))
    (tmp_path / "fairspec.toml").write_text("")
    monkeypatch.setattr(P, "_parser", lambda: pytest.fail("a file over the limit was parsed"))
    with pytest.raises(DiagnosticError) as e:
        P.parse_file(big)
    (d,) = e.value.diagnostics
    assert d.code == "FS107" and "MiB" in d.message and (d.span.line, d.span.column) == (1, 1)
    with pytest.raises(DiagnosticError) as e:
        P.parse_text(big.read_text(), str(big))
    assert e.value.diagnostics[0].code == "FS107"


def test_lint_cli_of_a_5_mb_spec_and_of_an_import_over_the_limit(tmp_path):
    (tmp_path / "fairspec.toml").write_text("")
    (tmp_path / "big.fair").write_text(_padded(5 * 10**6))
    r = run_cli("lint", tmp_path / "big.fair", cwd=tmp_path)
    assert r.returncode == 2 and "FS107" in r.stdout and "Traceback" not in r.stderr, r.stdout + r.stderr
    (tmp_path / "main.fair").write_text('import "big.fair"\n')
    r = run_cli("lint", tmp_path / "main.fair", "--format", "json", cwd=tmp_path)
    assert r.returncode == 2 and "FS107" in r.stdout and "Traceback" not in r.stderr, r.stdout + r.stderr


def test_a_spec_just_under_the_limit_is_parsed(tmp_path):
    text = _padded(P.MAX_SPEC_BYTES - 200)
    assert len(text.encode()) <= P.MAX_SPEC_BYTES
    f = tmp_path / "under.fair"
    f.write_text(text)
    m = P.parse_file(f)
    assert len(m.decls) == 1
