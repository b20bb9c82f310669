"""A wheel built from the checkout carries the grammar and the shipped policies."""

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_carries_grammar_and_policies(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
                        "-w", str(tmp_path), "-q"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    (wheel,) = tmp_path.glob("fairspec-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "fairspec/grammar/fairspec.lark" in names
    shipped = {p.relative_to(ROOT).as_posix() for p in (ROOT / "specs").rglob("*.fair")}
    assert shipped and {f"fairspec/{s}" for s in shipped} <= names
    assert "fairspec/cli.py" in names
