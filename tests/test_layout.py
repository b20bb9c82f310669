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


def test_every_module_compiles_with_warnings_as_errors():
    """An invalid escape in a string ('\\[' in a docstring) is a DeprecationWarning when Python compiles
    the module (a SyntaxWarning from 3.12): under -W error or pytest's filterwarnings = error, common in
    CI, importing it is a SyntaxError. fairspec.diagnostics.visible had one: with no cached bytecode,
    `python -W error -m fairspec` and a plugin run under filterwarnings = error failed on import."""
    import warnings

    bad = {}
    for p in PKG.rglob("*.py"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                compile(p.read_bytes(), str(p), "exec")
            except SyntaxError as e:
                bad[str(p.relative_to(PKG.parent))] = f"line {e.lineno}: {e.msg}"
    assert bad == {}
