"""The package imports without cycles: every module imports, and neither the module graph nor the
graph of the top-level folders (syntax, sema, ir, planning, kinds, backends, analyses, ...) has a
cycle.  Imports inside functions count: a lazy import is still a dependency."""

from __future__ import annotations

import ast
import functools
import importlib
import pkgutil
from pathlib import Path

import fairspec

ROOT = Path(fairspec.__file__).resolve().parent


@functools.lru_cache(maxsize=None)
def _tree(p: Path) -> ast.Module:
    """A module's syntax tree, parsed once for every test here (parsing the package took ~3.5 s CPU, and
    five tests parsed it: the graph three times, the names read twice)."""
    return ast.parse(p.read_text(encoding="utf-8"))


def _modules() -> dict[str, Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = list(p.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _graph() -> dict[str, set[str]]:
    """Module -> the fairspec modules it imports (computed once; a copy each call)."""
    return {m: set(deps) for m, deps in _graph_once().items()}


@functools.lru_cache(maxsize=None)
def _graph_once() -> dict[str, set[str]]:
    mods = _modules()

    def owner(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph = {m: set() for m in mods}
    for m, p in mods.items():
        package = m if p.name == "__init__.py" else m.rpartition(".")[0]
        for node in ast.walk(_tree(p)):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for t in targets:
                if t.startswith("fairspec"):
                    o = owner(t)
                    if o and o != m:
                        graph[m].add(o)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iteratively)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def _folder(module: str) -> str:
    return ".".join(module.split(".")[:2])


def test_every_module_imports():
    names = [m.name for m in pkgutil.walk_packages(fairspec.__path__, "fairspec.")]
    assert len(names) > 60
    for name in names:
        importlib.import_module(name)


def test_no_module_import_cycle():
    assert _cycles(_graph()) == []


def test_no_cycle_between_the_pipeline_folders():
    folders: dict[str, set[str]] = {}
    for m, deps in _graph().items():
        for d in deps:
            if _folder(m) != _folder(d) and d != "fairspec":
                folders.setdefault(_folder(m), set()).add(_folder(d))
    for f in list(folders):
        for d in folders[f]:
            folders.setdefault(d, set())
    assert _cycles(folders) == [], folders


def test_the_layers_point_down():
    """analyses/ holds analyses: it calls no backend, runner or planner; backends call no runner, no
    planner and nothing above them (pipeline, sema, cli, lsp, report, api); runtime/ (the executor, the
    run-time context) imports no backend, runner or planner;
    planning imports no backend (it names runners as strings); ir imports nothing of the pipeline."""
    graph = _graph()

    def reaches(src_folder, dst_folder):
        return sorted(m for m, deps in graph.items() if _folder(m) == src_folder
                      for d in deps if _folder(d) == dst_folder)

    for dst in ("fairspec.backends", "fairspec.kinds", "fairspec.planning", "fairspec.pipeline"):
        assert reaches("fairspec.analyses", dst) == [], dst
    for dst in ("fairspec.kinds", "fairspec.planning", "fairspec.pipeline", "fairspec.sema", "fairspec.cli",
                "fairspec.lsp", "fairspec.report", "fairspec.api"):
        assert reaches("fairspec.backends", dst) == [], dst  # a backend's runner in kinds/ passes its options in
    for dst in ("fairspec.backends", "fairspec.kinds", "fairspec.planning", "fairspec.pipeline", "fairspec.sema",
                "fairspec.cli"):
        assert reaches("fairspec.runtime", dst) == [], dst  # the executor and the run-time context run any job
    for dst in ("fairspec.backends", "fairspec.kinds", "fairspec.models", "fairspec.runtime", "fairspec.analyses"):
        assert reaches("fairspec.planning", dst) == [], dst
        assert reaches("fairspec.ir", dst) == [], dst


def test_certify_trusts_nothing_it_checks():
    """fairspec.certify (the certification spine) imports numpy, fractions and the standard library
    only: no solver, no model library, no backend, kind, loader or runtime (see ARCHITECTURE.md,
    "The certification spine")."""
    allowed_fairspec = {"fairspec", "fairspec.ir", "fairspec.certify"}
    forbidden_libs = {"highspy", "pyscipopt", "z3", "pysmt", "pysat", "scipy", "onnx", "onnxruntime",
                      "torch", "sklearn", "xgboost", "lightgbm", "skops", "pandas", "dask"}
    mods = _modules()
    bad = []
    for m, p in mods.items():
        if not (m == "fairspec.certify" or m.startswith("fairspec.certify.")):
            continue
        for node in ast.walk(_tree(p)):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = (["fairspec.certify"] if node.level else
                         [f"fairspec.{a.name}" for a in node.names] if node.module == "fairspec" else [node.module or ""])
            for name in names:
                top = name.split(".")[0]
                if top in forbidden_libs:
                    bad.append((m, name))
                elif top == "fairspec" and not any(name == a or name.startswith(a + ".") for a in allowed_fairspec - {"fairspec"}) \
                        and name != "fairspec":
                    bad.append((m, name))
    assert bad == [], bad
    assert any(m.startswith("fairspec.certify.") for m in mods)


@functools.lru_cache(maxsize=None)
def _imported_names(p: Path) -> frozenset[str]:
    """Every name a module imports from fairspec (``from X import name`` and ``import X``) and every
    attribute it reads, as written."""
    out = set()
    for node in ast.walk(_tree(p)):
        if isinstance(node, ast.ImportFrom):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.Name):
            out.add(node.id)
    return frozenset(out)


def test_only_certify_mints_a_proof_and_pair_certify_is_the_one_bridge():
    """A Proof is minted (``proof._mint``) only inside fairspec/certify; the certified branch and
    bound that turns a pair solver's ``holds`` into a proof (``bab.certify_holds``) is called from
    one place, backends/pair/certify.py (``certify_result``, ``certified_bound``), which the pair
    runners and the MILP modes call (ARCHITECTURE.md, "The certification spine")."""
    mods = _modules()
    minting = sorted(m for m, p in mods.items() if "_mint" in _imported_names(p)
                     and not (m == "fairspec.certify" or m.startswith("fairspec.certify.")))
    assert minting == []
    bridges = sorted(m for m, p in mods.items() if "certify_holds" in _imported_names(p)
                     and not m.startswith("fairspec.backends.bab"))
    assert bridges == ["fairspec.backends.pair.certify"]
    assert "certify_result" in _imported_names(mods["fairspec.kinds.individual_fairness"])
    assert "certify_result" in _imported_names(mods["fairspec.backends.milp.modes"])
