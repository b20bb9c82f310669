"""`fairspec lint` loads only what lint uses (issue 26: lint's start-up was two thirds imports).

A fresh process runs the command line's lint on the largest shipped spec, in every output format,
and lists the modules it loaded: no solver, model library, backend, certificate checker, report
renderer or numeric library.  About the import set only, never about time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "examples" / "worked" / "adult_distribution.fair"

# Module prefixes lint never needs: the backends and what they drive, the model libraries, the
# certificate checkers (a Proof is only checked when a verdict carries one), the HTML report, the LSP.
HEAVY = ("numpy", "scipy", "pandas", "polars", "pyarrow", "torch", "onnx", "onnxruntime", "sklearn", "skops",
         "xgboost", "lightgbm", "z3", "pysmt", "pyscipopt", "highspy", "dask", "distributed", "rich",
         "matplotlib", "jinja2", "pygls", "lsprotocol", "fractions", "difflib", "urllib.request",
         "fairspec.backends", "fairspec.kinds", "fairspec.certify", "fairspec.runtime.context",
         "fairspec.runtime.evaluate", "fairspec.report.html", "fairspec.report.provenance", "fairspec.lsp",
         "fairspec.api")

_PROBE = """
import contextlib, io, json, sys
from fairspec.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["lint", sys.argv[1], "--format", sys.argv[2]])  # argv given: main returns (no CLI exit)
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _lint_modules(fmt: str) -> tuple[int, list[str]]:
    out = subprocess.run([sys.executable, "-c", _PROBE, str(SPEC), fmt], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    doc = json.loads(out.strip().splitlines()[-1])
    return doc["code"], doc["modules"]


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_lint_loads_no_heavy_module(fmt):
    assert SPEC.is_file()
    code, modules = _lint_modules(fmt)
    assert code == 0  # the spec is clean: lint did its whole work (models peeked, data sampled)
    loaded = [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert loaded == []
    assert "fairspec.sema.check" in modules and "lark" in modules  # the probe did run lint


# A spec whose model is a scikit-learn Pipeline: sema folds the pipeline's preprocessing into feature space
# (sema/pipelines.py), which loads the file through skops and so scikit-learn, numpy and pandas.
_LOADS_ITS_MODEL = {"examples/notebook/adult_pipeline.fair"}

_PROBE_ALL = """
import contextlib, io, json, sys
from fairspec.pipeline import lint
out = {}
for spec in sys.argv[1:]:
    before = set(sys.modules)
    with contextlib.redirect_stdout(io.StringIO()):
        res = lint(spec)
    out[spec] = {"errors": [d.code for d in res.diagnostics if d.severity == "error"],
                 "new": sorted(set(sys.modules) - before)}
print(json.dumps(out))
"""


def test_lint_of_every_shipped_spec_loads_no_heavy_module():
    """One process lints every shipped spec in turn (examples and policies) and records what each loads."""
    specs = sorted(str(p.relative_to(ROOT)) for d in ("examples", "specs") for p in (ROOT / d).rglob("*.fair"))
    specs = [s for s in specs if s not in _LOADS_ITS_MODEL]
    assert len(specs) >= 10
    out = subprocess.run([sys.executable, "-c", _PROBE_ALL, *specs], capture_output=True, text=True, cwd=ROOT,
                         check=True).stdout
    got = json.loads(out.strip().splitlines()[-1])
    heavy = {s: [m for m in r["new"] if any(m == h or m.startswith(h + ".") for h in HEAVY)] for s, r in got.items()}
    assert {s: h for s, h in heavy.items() if h} == {}
    assert {s: r["errors"] for s, r in got.items() if r["errors"]} == {}  # each was linted to the end


def test_import_fairspec_is_light():
    out = subprocess.run([sys.executable, "-c", "import fairspec, sys; print(sorted(sys.modules))"],
                         capture_output=True, text=True, cwd=ROOT, check=True).stdout
    modules = eval(out)  # noqa: S307 - a list of names printed by the child above
    # the API, the parser and the IR load on first use (fairspec.meta, the name and version, may load)
    light = ("lark", "dataclasses", "fairspec.api", "fairspec.cli", "fairspec.pipeline", "fairspec.syntax",
             "fairspec.ir", "fairspec.sema") + HEAVY
    assert [m for m in modules if any(m == h or m.startswith(h + ".") for h in light)] == []


def test_a_verdict_still_checks_its_proof_type():
    """The Proof class is imported where it is checked (not at import of fairspec.verdict): a verdict
    carrying anything else still fails its check."""
    from fairspec.verdict import Verdict

    with pytest.raises(AssertionError, match="fairspec.certify.Proof"):
        Verdict("p", "group_fairness", "holds", how="proved", proof=object())
