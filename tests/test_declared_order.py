"""A scikit-learn model fitted on a plain array records no input names (no ``feature_names_in_``):
fairspec feeds it the encode block's columns in the block's order. That is legitimate but nothing
can check it, so it is never silent: lint (and check, which lints first) warns FS427 at the encode
block for a skops file, check warns the same sentence for a pickle (lint reads no pickle's names),
and the JSON report's load entry of every model says how its inputs were matched
(``"input_order": "declared"`` or ``"names"``). A model fitted on a data frame gets neither."""

from __future__ import annotations

import json
from pathlib import Path
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
    # at the encode block, as lint's of a skops file: code, line, message and hint the same
    [d] = doc["diagnostics"]
    assert (d["code"], d["severity"], d["line"]) == ("FS427", "warning", 8), d
    assert d["message"] == SAID.format(path=tmp_path / "lr.pkl") and d["hint"] and not doc.get("warnings")
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


def _fit(tmp_path, frame: bool, columns=("age", "sex", "score")):
    from sklearn.linear_model import LogisticRegression

    d = pd.read_csv(tmp_path / "people.csv")
    X = pd.DataFrame({"age": d.age, "sex": (d.sex == "M").astype(int), "score": d.score})[list(columns)]
    return LogisticRegression().fit(X if frame else X.to_numpy(), d.hired == "yes")


def test_under_models_fs427_names_each_file_of_the_folder(tmp_path):
    """--models: each file of the folder is linted in place of the declared one, so FS427 names the
    file that records no names (not the declared file), and a file that records them gets none."""
    from fairspec.pipeline import check_models

    spec = _project(tmp_path, frame=False, suffix=".skops")        # the declared lr.skops: no names
    cands = tmp_path / "cands"
    cands.mkdir()
    sio.dump(_fit(tmp_path, frame=False), cands / "a_array.skops")
    sio.dump(_fit(tmp_path, frame=True), cands / "b_frame.skops")
    got = {Path(f).name: r for f, r in check_models(spec, "lr", cands)}
    assert list(got) == ["a_array.skops", "b_frame.skops"]
    (d,) = got["a_array.skops"].diagnostics
    assert d.code == "FS427" and d.message == SAID.format(path=cands / "a_array.skops"), d.message
    assert got["b_frame.skops"].diagnostics == []
    assert [v.status for r in got.values() for v in r.verdicts] == ["holds", "holds"]
    r = run_cli("check", spec, "--format", "json", "--models", f"lr={cands}", cwd=tmp_path)
    doc = json.loads(r.stdout)
    assert [[x["message"] for x in m["diagnostics"]] for m in doc["models"]] == [
        [SAID.format(path=cands / "a_array.skops")], []]
    assert [m["loads"][0]["input_order"] for m in doc["models"]] == ["declared", "names"]


def test_under_models_a_file_recording_its_names_in_another_order_is_read_by_them(tmp_path):
    """The names a file of the folder records are matched as a declared file's are: one fitted on
    (score, age, sex) is fed score, age, sex (FS421 says the block's order differs), and scores
    exactly as the model on its own frame; one naming an input the spec lacks is FS420, no verdict."""
    from fairspec.pipeline import check_models

    spec = _project(tmp_path, frame=True, suffix=".skops")
    cands = tmp_path / "cands"
    cands.mkdir()
    moved = _fit(tmp_path, frame=True, columns=("score", "age", "sex"))
    sio.dump(moved, cands / "a_moved.skops")
    d = pd.read_csv(tmp_path / "people.csv")
    X = pd.DataFrame({"age": d.age, "sex": (d.sex == "M").astype(int), "score": d.score}).rename(columns={"score": "grade"})
    from sklearn.linear_model import LogisticRegression

    sio.dump(LogisticRegression().fit(X, d.hired == "yes"), cands / "b_other.skops")
    (a, ra), (b, rb) = check_models(spec, "lr", cands)
    assert [x.code for x in ra.diagnostics] == ["FS421"] and ra.verdicts[0].status in ("holds", "violated")
    from fairspec.pipeline import _job_state, _models_key, _property_job, lint
    from fairspec.runtime.context import Context

    s = lint(spec, substitutes={("model", "lr"): Path(a)}).spec
    assert {c.feature: c.offset for c in s.encoding_for("lr").columns} == {"score": 0, "age": 1, "sex": 2}
    # the run itself reads the file's own encoding: its context's spec is that one
    state = _job_state(lint(spec).spec, None, {_models_key({"lr": a}): s})
    _property_job(state, (_models_key({"lr": a}), "parity", "group_metric"))
    (ctx,) = state.contexts.values()
    assert isinstance(ctx, Context) and ctx.spec.encoding_for("lr") == s.encoding_for("lr")
    assert [x.code for x in rb.diagnostics] == ["FS420"] and rb.verdicts == [] and rb.has_errors


# ----------------------------------------------------------------- the Python API's substitutes

TWO = SPEC.replace("property parity {", "property parity2 {\n  statistical_parity(lr, groups sex) <= 0.6\n}\nproperty parity {")


def _truth(model, columns):
    d = pd.read_csv(FIXTURES / "data" / "people.csv")
    X = pd.DataFrame({"age": d.age, "sex": (d.sex == "M").astype(int), "score": d.score})[list(columns)]
    p = model.predict(X)
    return abs(p[X.sex == 1].mean() - p[X.sex == 0].mean())


def _moved_project(tmp_path, spec_text=SPEC):
    spec = _project(tmp_path, frame=True, suffix=".skops")
    spec.write_text(spec_text.replace("MODEL", '"lr.skops"'))
    moved = _fit(tmp_path, frame=True, columns=("score", "age", "sex"))
    sio.dump(moved, tmp_path / "moved.skops")
    return spec, moved


def test_pipeline_check_models_lints_the_given_file(tmp_path):
    """pipeline.check(models={name: file}) linted the declared file and only swapped the path in: a
    file fitted on (score, age, sex) was fed age, sex, score (parity 0.0, no FS421). Now the file is
    linted in place of the declared one, as --models' files are."""
    from fairspec.pipeline import check

    spec, moved = _moved_project(tmp_path)
    rep = check(spec, models={"lr": str(tmp_path / "moved.skops")})
    assert [d.code for d in rep.diagnostics] == ["FS421"]
    assert rep.verdicts[0].value == pytest.approx(_truth(moved, ("score", "age", "sex")), abs=1e-12)
    d = pd.read_csv(tmp_path / "people.csv")
    X = pd.DataFrame({"age": d.age, "sex": (d.sex == "M").astype(int), "score": d.score})
    sio.dump(LogisticRegression_fit(X.rename(columns={"score": "grade"}), d.hired == "yes"), tmp_path / "other.skops")
    rep = check(spec, models={"lr": str(tmp_path / "other.skops")})
    assert [x.code for x in rep.diagnostics] == ["FS420"] and rep.verdicts == []
    sio.dump(_fit(tmp_path, frame=False), tmp_path / "array.skops")
    rep = check(spec, models={"lr": str(tmp_path / "array.skops")})
    assert [(x.code, x.message) for x in rep.diagnostics] == [("FS427", SAID.format(path=tmp_path / "array.skops"))]


def LogisticRegression_fit(X, y):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression().fit(X, y)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("given", ["object", "path"])
def test_api_check_matches_the_given_models_names(tmp_path, given, workers):
    """fairspec.check(models=...) (an object or a path; serially or in worker processes): the given
    model's names are matched to the encode block, its diagnostics name it, a lint error gives no verdict."""
    import fairspec

    spec, moved = _moved_project(tmp_path, TWO)
    obj = moved if given == "object" else str(tmp_path / "moved.skops")
    rep = fairspec.check(spec, models={"lr": obj}, workers=workers)
    assert [d.code for d in rep.diagnostics] == ["FS421"]
    assert [v.value for v in rep] == [pytest.approx(_truth(moved, ("score", "age", "sex")), abs=1e-12)] * 2
    d = pd.read_csv(tmp_path / "people.csv")
    X = pd.DataFrame({"age": d.age, "sex": (d.sex == "M").astype(int), "score": d.score})
    other = LogisticRegression_fit(X.rename(columns={"score": "grade"}), d.hired == "yes")
    rep = fairspec.check(spec, models={"lr": other}, workers=workers)
    assert [x.code for x in rep.diagnostics] == ["FS420"] and rep.verdicts == [] and rep.exit_code == 2
    assert "model 'lr' records no input named 'score'" in rep.diagnostics[0].message
    array = _fit(tmp_path, frame=False)
    (w,) = fairspec.lint(spec, models={"lr": array})
    assert w.code == "FS427" and "the model given for 'lr' has no feature_names_in_" in w.message, w.message


def test_assert_fair_matches_the_given_models_names(tmp_path):
    from fairspec.testing import assert_fair

    spec, moved = _moved_project(tmp_path)
    rep = assert_fair(spec, models={"lr": moved})
    assert [d.code for d in rep.diagnostics] == ["FS421"]
    assert rep["parity"].value == pytest.approx(_truth(moved, ("score", "age", "sex")), abs=1e-12)
    d = pd.read_csv(tmp_path / "people.csv")
    X = pd.DataFrame({"age": d.age, "sex": (d.sex == "M").astype(int), "score": d.score})
    with pytest.raises(AssertionError, match="FS420"):
        assert_fair(spec, models={"lr": LogisticRegression_fit(X.rename(columns={"score": "grade"}), d.hired == "yes")})


PIPE_SPEC = '''data people = csv("people.csv", label = hired == "yes")
features P from people {
  age    : int in [18, 80]
  sex    : {F, M}  protected
  score  : real in [0, 1]
}
model lr = sklearn(MODEL)
ENCODE
property parity {
  statistical_parity(lr, groups sex) <= 0.5
}
'''


@pytest.mark.parametrize("suffix", [".skops", ".pkl"])
@pytest.mark.parametrize("block", [False, True])
def test_a_pipeline_fitted_on_a_data_frame_is_matched_by_its_column_names(tmp_path, suffix, block):
    """A Pipeline(ColumnTransformer, LogisticRegression) fitted on a data frame: its final estimator
    records no names (the transformer hands it an array), but the pipeline selects its columns by
    name and fairspec reads (or checks an encode block against, FS422) its fitted transformers. So
    no FS427 -- whose sentence claimed the file 'has no feature_names_in_' and an order nothing
    checks -- at lint for a skops file nor at check for a pickle, and the load entry says "names"."""
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    (tmp_path / "people.csv").write_bytes((FIXTURES / "data" / "people.csv").read_bytes())
    d = pd.read_csv(tmp_path / "people.csv")
    ct = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), ["sex"]),
                            ("num", StandardScaler(), ["age"]), ("keep", "passthrough", ["score"])])
    pipe = Pipeline([("prep", ct), ("clf", LogisticRegression())]).fit(d[["age", "sex", "score"]], d.hired == "yes")
    assert hasattr(pipe, "feature_names_in_") and not hasattr(pipe[-1], "feature_names_in_")
    if suffix == ".skops":
        sio.dump(pipe, tmp_path / "lr.skops")
        decl = '"lr.skops"'
    else:
        (tmp_path / "lr.pkl").write_bytes(pickle.dumps(pipe))
        decl = '"lr.pkl", trust pickle'
    enc = "encode P for lr { sex : onehot  age : standard  score : raw }" if block else ""
    spec = tmp_path / "s.fair"
    spec.write_text(PIPE_SPEC.replace("MODEL", decl).replace("ENCODE", enc))
    assert [d.code for d in lint(spec).diagnostics] == []
    doc = _check_json(spec)
    assert doc["diagnostics"] == [] and not [w for w in doc.get("warnings", ()) if "FS427" in w], doc.get("warnings")
    (load,) = [x for x in doc["loads"] if x["what"] == "model"]
    assert load["input_order"] == "names", load
