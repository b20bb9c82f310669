"""No module of the package is over 800 lines (issue 22 item 3): a module that grows past it is split
along a seam a reader would name (as sema/check.py into its declaration kinds, models/peek.py into
its file format families), not into part1/part2.  Lines as `wc -l` counts them."""

from __future__ import annotations

from pathlib import Path

import fairspec

PKG = Path(fairspec.__file__).resolve().parent
MAX_LINES = 800


def test_no_module_is_over_800_lines():
    sizes = {str(p.relative_to(PKG.parent)): p.read_bytes().count(b"\n") for p in PKG.rglob("*.py")}
    assert len(sizes) > 100  # the walk did find the package
    assert {m: n for m, n in sizes.items() if n > MAX_LINES} == {}
