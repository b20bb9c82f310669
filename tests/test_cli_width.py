"""Piped or redirected, the text report honours COLUMNS: it was always 120 columns off a terminal,
so ``COLUMNS=60 fairspec check s.fair | less`` printed the 120-column summary table."""

from __future__ import annotations

from conftest import run_cli

SPEC = ('data d = csv("d.csv", label = y == 1)\n'
        'features W from d {\n  s : {F, M} protected\n  age : int in [18, 80]\n}\n'
        'model clf = rule(age >= 40)\nproperty p { statistical_parity(clf, groups s) <= 0.9 }\n')


def _project(tmp_path):
    (tmp_path / "d.csv").write_text("s,age,y\n" + "".join(f"{'FM'[i % 2]},{20 + i},{i % 2}\n" for i in range(40)))
    (tmp_path / "s.fair").write_text(SPEC)
    return tmp_path / "s.fair"


def test_a_piped_report_fits_the_columns_it_is_given(tmp_path):
    spec = _project(tmp_path)
    narrow = run_cli("check", spec, cwd=tmp_path, env={"COLUMNS": "60"})
    assert narrow.returncode == 3, narrow.stdout + narrow.stderr
    tables = [ln for ln in narrow.stdout.splitlines() if ln[:1] in "┏┃┡│└"]
    assert tables and max(len(ln) for ln in tables) <= 60, narrow.stdout
    assert "┃ property ┃" not in narrow.stdout, narrow.stdout    # the narrow layout: a card per property
    wide = run_cli("check", spec, cwd=tmp_path, env={"COLUMNS": "200"})
    assert "┃ property ┃" in wide.stdout, wide.stdout


def test_the_width_off_a_terminal(monkeypatch):
    import io

    from fairspec import cli

    monkeypatch.setattr("sys.stdout", io.StringIO())
    for value, width in (("150", 150), ("60", 60), ("5", 20), ("", 120), ("wide", 120), ("0", 120)):
        monkeypatch.setenv("COLUMNS", value)
        assert cli._stdout_width() == width, value
    monkeypatch.delenv("COLUMNS")
    assert cli._stdout_width() == 120
