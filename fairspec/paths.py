"""Where fairspec finds its grammar and its shipped policy files."""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent
_ROOT = _PKG.parent


def _first_existing(*candidates: Path) -> Path:
    for c in candidates:
        if c.exists():
            return c
    return candidates[0]


def grammar_file() -> Path:
    # In a source checkout or editable install the grammar lives at the top
    # level; a wheel carries a copy inside the package (see pyproject).
    return _first_existing(_ROOT / "grammar" / "fairspec.lark", _PKG / "grammar" / "fairspec.lark")


def specs_dir() -> Path:
    """The shipped policy files: `import "fairspec/..."` resolves here."""
    return _first_existing(_ROOT / "specs", _PKG / "specs")
