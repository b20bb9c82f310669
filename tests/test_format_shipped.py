"""Every .fair file the project ships (examples, policies) is in the canonical layout: `fairspec fmt
--check` passes on them, as the pre-commit hook and CI run it. (Test fixtures are exempt: many are
malformed on purpose, and their tests assert line:col positions.)"""

from __future__ import annotations

from pathlib import Path

from fairspec.cli import main

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted([*(ROOT / "examples").rglob("*.fair"), *(ROOT / "specs").rglob("*.fair")])


def test_shipped_specs_are_formatted(capsys):
    assert len(SHIPPED) >= 13
    code = main(["fmt", "--check", *map(str, SHIPPED)])
    out = capsys.readouterr()
    assert code == 0, f"not formatted (run `fairspec fmt FILE`):\n{out.out}{out.err}"
