"""The JSON report's shape is documented and stable: grammar/check-report.schema.json (JSON Schema
2020-12) describes the document `fairspec check --format json` prints, and every kind of run is
checked against it here -- each verdict kind (holds proved, holds estimated with its bound,
violated with a witness, unknown with its reason), a run that is only diagnostics, an input or
usage error, an interrupted run's shape, --models and the Python API."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from conftest import EXAMPLES, FIXTURES, run_cli

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "grammar" / "check-report.schema.json").read_text(encoding="utf-8"))


def valid(doc: dict) -> dict:
    cls = jsonschema.validators.validator_for(SCHEMA)
    cls.check_schema(SCHEMA)
    errors = sorted(cls(SCHEMA, format_checker=cls.FORMAT_CHECKER).iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message[:300]}" for e in errors[:5])
    return doc


def _check(*args, cwd=ROOT) -> dict:
    r = run_cli("check", *args, "--format", "json", cwd=cwd)
    return valid(json.loads(r.stdout))


@pytest.mark.parametrize("spec", ["examples/compas/compas.fair", "examples/worked/fvgm_3_1.fair",
                                  "examples/worked/fvgm_influence.fair", "examples/predictions/decisions.fair"])
def test_example_reports_match_the_schema(spec):
    doc = _check(spec)
    assert doc["properties"] and doc["provenance"]["files"][0]["role"] == "spec"


def test_every_verdict_kind_matches_the_schema():
    doc = _check("examples/german/grades.fair")
    seen = {(p["status"], p["how"]) for p in doc["properties"]}
    assert {("holds", "proved"), ("holds", "estimated"), ("violated", None)} <= seen
    assert any(p["witness"] for p in doc["properties"] if p["status"] == "violated")
    assert all(p["bound"] for p in doc["properties"] if p["how"] == "estimated")
    doc = _check("examples/adult/adult.fair", "--property", "dt_parity_by_age")
    assert doc["properties"][0]["status"] == "unknown" and doc["properties"][0]["reason"]


def test_a_schema_violation_is_caught():
    """The schema is not vacuous: a holds without how, or an unknown key, fails it."""
    doc = {"spec": "s.fair", "properties": [{"name": "p", "kind": "group_metric", "status": "holds", "how": None,
                                             "value": 1, "bound": None, "reason": None, "witness": None,
                                             "seconds": 0, "backend": "data", "details": {}, "proof": None}],
           "diagnostics": [], "exit_code": 0, "seconds": 0.1}
    with pytest.raises(AssertionError):
        valid(doc)
    doc["properties"][0]["how"] = "estimated"   # an estimate without its bound
    with pytest.raises(AssertionError):
        valid(doc)
    doc["properties"][0]["bound"] = [0.9, None]
    valid(doc)
    doc["properties"][0]["how"] = "proved"      # proved without its proof
    with pytest.raises(AssertionError):
        valid(doc)
    doc["properties"][0]["how"] = "estimated"
    doc["extra"] = 1
    with pytest.raises(AssertionError):
        valid(doc)


def test_diagnostics_and_errors_match_the_schema(tmp_path):
    from conftest import error_fixtures

    fx = next(f for f in error_fixtures() if f.name == "syntax_missing_comma.fair")
    doc = _check(str(fx))
    assert doc["exit_code"] == 2 and doc["diagnostics"] and not doc["properties"]
    doc = _check("examples/compas/compas.fair", "--property", "nosuch")
    assert doc["exit_code"] == 2 and "nosuch" in doc["error"]
    doc = _check("examples/compas/compas.fair", "--workers", "0")        # a usage error
    assert doc["exit_code"] == 2 and doc["error"]
    doc = _check(str(tmp_path / "nosuch.fair"))
    assert doc["exit_code"] == 2 and doc["diagnostics"][0]["code"] == "FS203"


def test_models_and_the_api_match_the_schema(tmp_path):
    from test_cli import PEOPLE_CSV, PEOPLE_ONNX, people_spec

    cands = tmp_path / "cands"
    cands.mkdir()
    shutil.copy(PEOPLE_ONNX, cands / "a.onnx")
    shutil.copy(PEOPLE_ONNX, cands / "b.onnx")
    spec = people_spec(tmp_path, "property p { statistical_parity(net, groups race) <= 0.2 }\n")
    doc = _check(str(spec), "--workers", "1", "--models", f"net={cands}", cwd=tmp_path)
    assert [m["model_file"].rsplit("/", 1)[-1] for m in doc["models"]] == ["a.onnx", "b.onnx"]
    assert doc["models"][0]["provenance"]["invocation"]["models"]["name"] == "net"
    import fairspec

    valid(json.loads(fairspec.check(spec).to_json()))
    assert PEOPLE_CSV.exists() and FIXTURES.exists() and EXAMPLES.exists()
