"""examples/notebook/check_in_memory.ipynb runs top to bottom (issue 23): it fits a scikit-learn
Pipeline in memory, checks it with fairspec.check (the report displays as HTML), saves it where the
spec declares it, and the CLI path gives the same verdicts. Executed cell by cell, as a kernel
would, in a copy of the example folder (the notebook writes clf.skops)."""

from __future__ import annotations

import ast
import json
import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run_cells(nb_path: Path) -> list:
    ns: dict = {"__name__": "__main__"}
    shown = []
    for cell in json.loads(nb_path.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        tree = ast.parse("".join(cell["source"]))
        last = tree.body[-1] if tree.body else None
        if isinstance(last, ast.Expr):
            exec(compile(ast.Module(tree.body[:-1], []), "cell", "exec"), ns)
            shown.append(eval(compile(ast.Expression(last.value), "cell", "eval"), ns))
        else:
            exec(compile(tree, "cell", "exec"), ns)
            shown.append(None)
    return shown, ns


def test_notebook_checks_an_in_memory_pipeline(tmp_path, monkeypatch):
    pytest.importorskip("pandas")
    pytest.importorskip("skops")
    shutil.copytree(ROOT / "examples" / "notebook", tmp_path / "notebook", ignore=shutil.ignore_patterns("clf.skops"))
    (tmp_path / "adult").mkdir()
    os.symlink(ROOT / "examples" / "adult" / "data", tmp_path / "adult" / "data")
    monkeypatch.chdir(tmp_path / "notebook")
    shown, ns = _run_cells(tmp_path / "notebook" / "check_in_memory.ipynb")
    report = ns["report"]
    html = report._repr_html_()
    assert "by_sex.disparate_impact" in html and "same_decision_sex" in html
    in_memory = {v.name: (v.status, v.how, v.value) for v in report}
    assert set(in_memory) == {"by_sex.disparate_impact", "odds_by_race", "same_decision_sex"}
    assert all(status in ("holds", "violated", "unknown") for status, _, _ in in_memory.values())
    assert (tmp_path / "notebook" / "clf.skops").is_file()
    import fairspec

    from_file = {v.name: (v.status, v.how, v.value) for v in fairspec.check("adult_pipeline.fair")}
    assert from_file == in_memory
