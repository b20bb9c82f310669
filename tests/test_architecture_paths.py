"""ARCHITECTURE.md names only what exists (issue 22 item 5): every `fairspec/...` path, every file or
folder path in backticks (`models/peek.py`, `pair/`, `bench/lint_startup.py`) and every dotted name in
backticks that starts at a module of the package (`fairspec.certify.Proof`, `pair.drivers`,
`certify.network.argmax_layers`) resolves to a file, a folder, a module or a name defined at the top of
that module.  Read from the files as text (ast), nothing is imported."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from conftest import checkout_paths

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "fairspec"
DOC = ROOT / "ARCHITECTURE.md"

_FAIRSPEC_PATH = re.compile(r"(?<![\w./])fairspec/[\w/.-]*[\w/]")
_TICKED = re.compile(r"`([^`\n]+)`")
_FILE = re.compile(r"^[\w.-]+(/[\w.-]+)*(\.(py|lark|md|toml|yml|yaml|json|txt|sh)|/)$")
_DOTTED = re.compile(r"^[a-z_]\w*(\.[A-Za-z_]\w*)+$")
# the how-to sections' placeholders: fairspec/backends/NAME/, kinds/KIND.py, peek_NAME.py
_PLACEHOLDER = re.compile(r"(?<![A-Za-z])(NAME|KIND)(?![A-Za-z])")


def _all_paths(root: Path = ROOT) -> list[str]:
    return [p.relative_to(root).as_posix() + ("/" if p.is_dir() else "") for p in checkout_paths(root)]


@functools.lru_cache(maxsize=None)
def _top_names(path: Path) -> frozenset[str]:
    """Names bound at the top of a module (defs, classes, assignments, imports; under if/try too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()

    def visit(body):
        for n in body:
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(n.name)
            elif isinstance(n, ast.Assign):
                names.update(t.id for t in n.targets if isinstance(t, ast.Name))
            elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
                names.add(n.target.id)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in n.names)
            elif isinstance(n, (ast.If, ast.Try)):
                visit(n.body)
                visit(getattr(n, "orelse", []))
                for h in getattr(n, "handlers", []):
                    visit(h.body)
    visit(tree.body)
    if path.name == "__init__.py":  # a package's lazy names (module __getattr__ over a table of strings)
        names.update(c.value for c in ast.walk(tree) if isinstance(c, ast.Constant) and isinstance(c.value, str)
                     and c.value.isidentifier())
    return frozenset(names)


def _resolves(base: Path, rest: list[str]) -> bool:
    """Does ``rest`` (dotted parts) resolve from the module or package at ``base``?"""
    if not rest:
        return True
    head, tail = rest[0], rest[1:]
    if base.is_dir():
        if (base / head).is_dir() and (base / head / "__init__.py").is_file():
            return _resolves(base / head, tail)
        if (base / f"{head}.py").is_file():
            return _resolves(base / f"{head}.py", tail)
        init = base / "__init__.py"
        return init.is_file() and head in _top_names(init)      # a name of the package; attributes not checked
    return head in _top_names(base)                            # a module: its top-level name


def _module_bases(first: str) -> list[Path]:
    """Every module or package of fairspec whose name is ``first`` (``pair`` is backends/pair/)."""
    if first == "fairspec":
        return [PKG]
    out = [p for p in PKG.rglob(first) if p.is_dir() and (p / "__init__.py").is_file()]
    out += [p for p in PKG.rglob(f"{first}.py") if "__pycache__" not in p.parts]
    return out


def _problems() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    paths = _all_paths()
    bad = []
    for m in _FAIRSPEC_PATH.finditer(text):
        p = m.group(0).rstrip(".")
        if _PLACEHOLDER.search(p):
            continue
        if not (ROOT / p).exists():
            bad.append(f"{p} (does not exist)")
    for m in _TICKED.finditer(text):
        tok = m.group(1).strip()
        if _PLACEHOLDER.search(tok):
            continue
        if _FILE.match(tok) and "/" in tok or re.match(r"^[\w-]+\.py$", tok):
            if not any(q == tok or q.endswith("/" + tok) for q in paths):
                bad.append(f"`{tok}` (no such file or folder)")
        elif _DOTTED.match(tok) and not re.search(r"\.(py|md|toml|lark|json|fair)$", tok):
            first, *rest = tok.split(".")
            bases = _module_bases(first)
            if bases and not any(_resolves(b, rest) for b in bases):
                bad.append(f"`{tok}` (no such module or name)")
    return sorted(set(bad))


def test_every_path_and_module_architecture_names_exists():
    assert _problems() == []


def test_the_paths_a_name_may_match_are_the_checkouts_not_a_virtual_environments(tmp_path):
    """.ci/run builds its virtual environment inside the checkout (.venv-ci): its ~46,000 files were
    listed too, so a backticked `utils.py` resolved to some library's file (and each name was matched
    against all of them: 3.4 -> 9.9 s for this file's test with one in place)."""
    for rel in ("fairspec/a.py", "tests/b.py", ".venv-ci/lib/site/utils.py", ".venv/lib/c.py", ".git/HEAD",
                "fairspec/__pycache__/a.pyc"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    for venv in (".venv-ci", ".venv"):
        (tmp_path / venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert sorted(_all_paths(tmp_path)) == ["fairspec/", "fairspec/a.py", "tests/", "tests/b.py"]
