"""A scikit-learn model fitted on a plain array records no input names (no ``feature_names_in_``):
fairspec feeds it the encode block's columns in the block's order. That is legitimate but nothing
can check it, so it is never silent: lint (and check, which lints first) warns FS427 at the encode
block for a skops file, check warns the same sentence for a pickle (lint reads no pickle's names),
and the JSON report's load entry of every model says how its inputs were matched
(``"input_order": "declared"`` or ``"names"``). A model fitted on a data frame gets neither."""

from __future__ import annotations

import json
import pickle

import pytest

from conftest import FIXTURES, run_cli
from fairspec.pipeline import lint

np = pytest.importorskip("numpy")
pd = pytest.importorskip("pandas")
sio = pytest.importorskip("skops.io")

SPEC = '''data people = csv("people.csv", label = hired == "yes")
features P from people {
  age    : int in [18, 80]
  sex    : {F, M}  protected
  score  : real in [0, 1]
}
model lr = sklearn(MODEL)
encode P for lr { age : raw  sex : code  score : raw }
property parity {
  statistical_parity(lr, groups sex) <= 0.5
}
'''


def _project(tmp_path, frame: bool, suffix: str):
    from sklearn.linear_model import LogisticRegression

    (tmp_path / "people.csv").write_bytes((FIXTURES / "data" / "people.csv").read_bytes())
    d = pd.read_csv(tmp_path / "people.csv")
    X = pd.DataFrame({"age": d.age, "sex": (d.sex == "M").astype(int), "score": d.score})
    m = LogisticRegression().fit(X if frame else X.to_numpy(), d.hired == "yes")
    assert hasattr(m, "feature_names_in_") == frame
    if suffix == ".skops":
        sio.dump(m, tmp_path / "lr.skops")
        decl = '"lr.skops"'
    else:
        (tmp_path / "lr.pkl").write_bytes(pickle.dumps(m))
        decl = '"lr.pkl", trust pickle'
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC.replace("MODEL", decl))
    return spec


SAID = ("model 'lr' records no input names (scikit-learn keeps them only for a model fitted on a data frame: {path} "
        "has no feature_names_in_), so its 3 inputs are taken in the encode block's order: age, sex, score")


def _check_json(spec):
    r = run_cli("check", spec, "--format", "json", cwd=spec.parent)
    assert r.returncode in (0, 1, 3) and "Traceback" not in r.stderr, r.stdout + r.stderr
    return json.loads(r.stdout)


def test_a_skops_model_fitted_on_an_array_is_warned_by_lint_and_check(tmp_path):
    spec = _project(tmp_path, frame=False, suffix=".skops")
    ds = lint(spec).diagnostics
    assert [(d.code, d.severity, d.span.line) for d in ds] == [("FS427", "warning", 8)], ds
    assert ds[0].message == SAID.format(path=tmp_path / "lr.skops")
    assert "pandas DataFrame" in ds[0].hint and "order the model was fitted on" in ds[0].hint
    r = run_cli("lint", spec, cwd=tmp_path)
    assert r.returncode == 0 and "warning[FS427]" in r.stdout + r.stderr, r.stdout + r.stderr
    doc = _check_json(spec)
    assert [(d["code"], d["severity"], d["line"]) for d in doc["diagnostics"]] == [("FS427", "warning", 8)]
    (load,) = [x for x in doc["loads"] if x["what"] == "model"]
    assert load["input_order"] == "declared", load
    assert doc["properties"][0]["status"] == "holds"          # stated, not an error


def test_a_pickle_fitted_on_an_array_is_warned_by_check(tmp_path):
    spec = _project(tmp_path, frame=False, suffix=".pkl")
    assert [d.code for d in lint(spec).diagnostics] == []    # lint reads no pickle's names
    doc = _check_json(spec)
    assert doc["warnings"] == ["FS427: " + SAID.format(path=tmp_path / "lr.pkl")], doc.get("warnings")
    (load,) = [x for x in doc["loads"] if x["what"] == "model"]
    assert load["input_order"] == "declared", load


@pytest.mark.parametrize("suffix", [".skops", ".pkl"])
def test_a_model_fitted_on_a_data_frame_is_matched_by_name_silently(tmp_path, suffix):
    spec = _project(tmp_path, frame=True, suffix=suffix)
    assert [d.code for d in lint(spec).diagnostics] == []
    doc = _check_json(spec)
    assert not doc["diagnostics"] and not doc.get("warnings"), doc
    (load,) = [x for x in doc["loads"] if x["what"] == "model"]
    assert load["input_order"] == "names", load
