"""A wheel built from the checkout carries the grammar and the shipped policies."""

import subprocess
import sys
import zipfile
from pathlib import Path

from conftest import checkout_paths

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_carries_grammar_and_policies(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
                        "-w", str(tmp_path), "-q"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    (wheel,) = tmp_path.glob("specfair-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "fairspec/grammar/fairspec.lark" in names
    shipped = {p.relative_to(ROOT).as_posix() for p in (ROOT / "specs").rglob("*.fair")}
    assert shipped and {f"fairspec/{s}" for s in shipped} <= names
    assert "fairspec/cli.py" in names


def _declared_distributions() -> set[str]:
    """Every distribution pyproject.toml declares: core dependencies and every extra."""
    import re
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        reqs.extend(extra)
    names = set()
    for r in reqs:
        name = re.match(r"[A-Za-z0-9_.\-]+", r).group(0)
        if name.lower() != "specfair":  # the extras that name other extras of this distribution
            names.add(re.sub(r"[-_.]+", "-", name).lower())
            # dask[distributed] declares the distributed distribution too
            extras = re.match(r"[A-Za-z0-9_.\-]+\[([^\]]*)\]", r)
            if extras:
                names.update(re.sub(r"[-_.]+", "-", x.strip()).lower() for x in extras.group(1).split(","))
    return names


def _imports(src: str) -> set[str]:
    """The absolute imports of a source. An import is a statement, so the walk descends only into statement
    lists (bodies, else and finally blocks, handlers, match cases), not into the expressions that are nine
    nodes in ten of the tree (ast.walk over every node was a third of this scan's CPU)."""
    import ast

    out, todo = set(), [ast.parse(src)]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                out.add(node.module)
        else:
            for _, value in ast.iter_fields(node):
                if isinstance(value, list):
                    todo.extend(v for v in value if isinstance(v, (ast.stmt, ast.excepthandler, ast.match_case)))
    return out


def _third_party_imports(folders) -> dict[str, str]:
    """Top-level module -> one file importing it, for every import that is not the standard library,
    fairspec itself, or a module of the test-suite."""
    import gc

    local = {"fairspec", "setup"} | {p.stem for p in checkout_paths(ROOT) if p.suffix == ".py"} \
        | {p.parent.name for p in (ROOT / "tests").rglob("__init__.py")}   # the suite's own packages
    out = {}
    enabled = gc.isenabled()
    gc.disable()   # a syntax tree is a million acyclic objects, freed by their counts: the collector only rescans them
    try:
        for folder in folders:
            for path in sorted((ROOT / folder).rglob("*.py")):
                for m in sorted(_imports(path.read_text(encoding="utf-8"))):
                    top = m.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in local:
                        out.setdefault(top, str(path.relative_to(ROOT)))
    finally:
        if enabled:
            gc.enable()
    return out


def test_the_import_scan_finds_every_import_statement():
    """`_imports` finds what ast.walk over every node finds: lazy, nested, guarded, dead and relative imports,
    in every kind of block, and nothing that only a string mentions."""
    import ast

    def every_node(src):
        out = set()
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Import):
                out.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                out.add(node.module)
        return out

    cases = {
        "import os, json.decoder as d\nfrom collections import abc\n": {"os", "json.decoder", "collections"},
        "def f():\n    import numpy\n    class C:\n        from scipy import sparse\n": {"numpy", "scipy"},
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\nelse:\n    import onnx\n":
            {"typing", "torch", "onnx"},
        "if False:\n    import dead_module\n": {"dead_module"},
        "x = 1; import a1\nfor i in x:\n    import a2\nelse:\n    import a3\nwhile x:\n    import a4\n":
            {"a1", "a2", "a3", "a4"},
        "try:\n    import b1\nexcept ImportError:\n    import b2\nelse:\n    import b3\nfinally:\n    import b4\n":
            {"b1", "b2", "b3", "b4"},
        "with a:\n    import c1\nmatch x:\n    case 1:\n        import c2\n": {"c1", "c2"},
        "async def g():\n    import z3\n    async with a:\n        import pyscipopt\n    async for i in a:\n"
        "        import pandas\n": {"z3", "pyscipopt", "pandas"},
        "from . import sibling\nfrom .pkg import thing\nfrom .. import up\n": set(),
        '"""Text that says import torch."""\nS = "import xgboost"\nf = lambda: __import__("os")\n': set(),
        "@decorator\nclass K(Base):\n    import d1\n    def m(self):\n        if x:\n            import d2\n":
            {"d1", "d2"},
    }
    for src, mods in cases.items():
        assert _imports(src) == every_node(src) == mods, src


def test_every_imported_library_is_declared():
    """What fairspec or its tests import is in pyproject.toml (a fresh venv installs nothing else)."""
    from importlib.metadata import packages_distributions

    dists = packages_distributions()
    declared = _declared_distributions()
    missing = {}
    for mod, where in _third_party_imports(["fairspec", "tests"]).items():
        # a module of a distribution not installed here (an optional extra): judged by its own name
        owners = {d.lower().replace("_", "-") for d in dists.get(mod, [])} or {mod.lower().replace("_", "-")}
        if not owners & declared:
            missing[mod] = (where, sorted(owners))
    assert not missing, f"imported but declared in no extra of pyproject.toml: {missing}"


def test_ci_runs_in_a_fresh_virtual_environment():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "-m venv" in ci and "pip install -e '.[dev]'" in ci
    assert ci.index("-m venv") < ci.index("pip install")
    assert "/.venv-ci/" in (ROOT / ".gitignore").read_text().splitlines()


def _readme_block() -> list[str]:
    """The commands of the README's "From a checkout" block."""
    text = (ROOT / "README.md").read_text()
    block = text[text.index("From a checkout"):]
    block = block[block.index("```sh") + 5:]
    return [ln.strip() for ln in block[:block.index("```")].splitlines() if ln.strip()]


def test_ci_runs_exactly_the_readmes_commands_in_order():
    """.ci/run runs the README's checkout commands, in the README's order (torch's CPU build first)."""
    ci = (ROOT / ".ci" / "run").read_text()
    cmds = _readme_block()
    assert cmds[0] == "pip install torch==2.13.0" and cmds[1] == "pip install -e '.[dev]'"
    where = [ci.index(c) for c in cmds]
    assert where == sorted(where), cmds


def test_distribution_name_and_extras():
    """The distribution is specfair (the index's "fairspec" is another project); the command and the
    import name stay fairspec; extras have lower bounds only (never replace a user's torch)."""
    import re
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == "specfair"
    assert project["scripts"]["fairspec"] == "fairspec.cli:main"
    from fairspec import DISTRIBUTION

    assert DISTRIBUTION == project["name"]
    for extra, reqs in project["optional-dependencies"].items():
        for r in reqs:
            assert "==" not in r and "<" not in r, (extra, r)
            name = re.match(r"[A-Za-z0-9_.\-]+", r).group(0)
            assert name.lower() != "fairspec", (extra, r)
    assert project["optional-dependencies"]["torch"] == ["torch>=2.1"]
    readme = (ROOT / "README.md").read_text()
    assert "pip install 'specfair[all]'" in readme


def test_install_hints_name_the_distribution():
    """Every "pip install '...[extra]'" a message or document shows installs this distribution."""
    import re

    for path in [*ROOT.joinpath("fairspec").rglob("*.py"), ROOT / "README.md", *ROOT.joinpath("editors").rglob("*.md")]:
        for m in re.finditer(r"pip install '([A-Za-z0-9_.-]+)\[", path.read_text(encoding="utf-8")):
            assert m.group(1) == "specfair", (path, m.group(0))


def test_python_dash_m_fairspec_runs_the_command_line():
    r = subprocess.run([sys.executable, "-m", "fairspec", "--help"], capture_output=True, text=True, timeout=60,
                       cwd=ROOT)
    assert r.returncode == 0 and "usage: fairspec" in r.stdout, r.stderr


def test_ci_writes_bytecode():
    """.ci/run unsets PYTHONDONTWRITEBYTECODE before its pytest line (and sets it nowhere): on a machine that
    sets it, every process of the suite compiled fairspec's modules again and every pytest-xdist worker
    rewrote every test module (bench/results/suite_time.md, session 33)."""
    lines = [ln.split("#")[0].strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()]
    (at,) = [i for i, ln in enumerate(lines) if ln.startswith("python -m pytest")]
    assert "unset PYTHONDONTWRITEBYTECODE" in lines[:at]
    assert not any("PYTHONDONTWRITEBYTECODE=" in ln or ln.startswith("export PYTHONDONTWRITEBYTECODE")
                   for ln in lines), lines


def test_ci_fails_when_no_test_ran():
    """pytest exits 5 when it collected no test: .ci/run must turn that into a red run. Its pytest line is
    a plain command under `set -e` (no `||`, `;`, `&&`, pipe or `if` around it, no `set +e` before it),
    and pytest really exits 5 on an empty run (also with the README's options)."""
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    (at,) = [i for i, ln in enumerate(lines) if ln.strip().startswith("python -m pytest")]
    cmd = lines[at].strip()
    assert not any(op in cmd for op in ("||", "&&", ";", "|", "$(")), cmd
    before = [ln.split("#")[0].strip() for ln in lines[:at]]
    sets = [ln for ln in before if ln.startswith("set ")]
    assert sets and "-e" in sets[-1].split()[1] and "+e" not in sets[-1], sets
    assert not any(ln.startswith(("if ", "while ", "until ")) or ln.endswith("\\") for ln in before[-3:]), before[-3:]
    assert cmd in _readme_block()
    args = cmd.split()[3:]  # the README's options
    empty = Path(__file__).resolve().parent / "fixtures"  # no test_*.py below: nothing to collect
    r = subprocess.run([sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider", "-q", str(empty / "ok")],
                       capture_output=True, text=True, timeout=300, cwd=empty)
    assert r.returncode == 5, r.stdout[-2000:] + r.stderr[-2000:]
