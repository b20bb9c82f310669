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
        if name.lower() != "fairspec":
            names.add(re.sub(r"[-_.]+", "-", name).lower())
            # dask[distributed] declares the distributed distribution too
            extras = re.match(r"[A-Za-z0-9_.\-]+\[([^\]]*)\]", r)
            if extras:
                names.update(re.sub(r"[-_.]+", "-", x.strip()).lower() for x in extras.group(1).split(","))
    return names


def _third_party_imports(folders) -> dict[str, str]:
    """Top-level module -> one file importing it, for every import that is not the standard library,
    fairspec itself, or a module of the test-suite."""
    import ast

    local = {"fairspec", "setup"} | {p.stem for p in ROOT.rglob("*.py") if ".venv" not in p.as_posix()}
    out = {}
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    mods = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    mods = [node.module]
                else:
                    continue
                for m in mods:
                    top = m.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in local:
                        out.setdefault(top, str(path.relative_to(ROOT)))
    return out


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
