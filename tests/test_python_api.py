"""The Python API (fairspec.check / fairspec.lint): in-memory models and data frames give the
verdicts the CLI gives on the same files; the user's files are only read."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fairspec
from conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT / "examples" / "adult"
COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
           "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
           "income"]


def _digest(folder: Path) -> dict:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _cli_json(spec: Path, prop: str) -> dict:
    out = run_cli("check", spec, "--format", "json", "--property", prop, cwd=spec.parent, timeout=900)
    assert out.returncode in (0, 1, 3), out.stderr
    return json.loads(out.stdout)


def _key(props) -> list:
    return [(p["name"], p["status"], p["how"], p["value"], p["bound"]) for p in props]


def test_in_memory_pipeline_and_frame_match_the_cli(tmp_path):
    pd = pytest.importorskip("pandas")
    sio = pytest.importorskip("skops.io")
    project = tmp_path / "adult"
    shutil.copytree(ADULT, project, ignore=shutil.ignore_patterns("train.py", "README.md"))
    before = _digest(project)
    model_file = project / "models" / "lr.skops"
    est = sio.load(model_file, trusted=sio.get_untrusted_types(file=str(model_file)))
    df = pd.read_csv(project / "data" / "adult.data", header=None, names=COLUMNS, dtype=str, keep_default_na=False)
    prop = "lr_sex_race.disparate_impact"

    rep = fairspec.check(project / "adult.fair", models={"lr": est}, data={"adult": df}, property=prop)
    cli = _cli_json(project / "adult.fair", prop)

    assert isinstance(rep, fairspec.CheckReport)
    assert _key(rep.to_dict()["properties"]) == _key(cli["properties"])
    assert rep.exit_code == cli["exit_code"]
    assert rep[prop].status == cli["properties"][0]["status"]
    assert _digest(project) == before  # the user's files are only read


def test_report_faces(tmp_path):
    spec = _tiny_project(tmp_path)
    rep = fairspec.check(spec)
    assert len(rep) == 1 and [v.name for v in rep] == ["parity"]
    html = rep._repr_html_()
    assert "parity" in html and html.lstrip().lower().startswith("<!doctype html")
    assert "parity" in str(rep) and "exit code" in repr(rep)
    assert json.loads(rep.to_json())["properties"][0]["name"] == "parity"
    with pytest.raises(KeyError, match="no property named"):
        rep["nope"]


def _tiny_project(tmp_path, rows=None):
    rng = np.random.default_rng(0)
    n = 400
    a = rng.integers(0, 10, n)
    s = rng.integers(0, 2, n)
    y = ((a + 3 * s + rng.normal(0, 2, n)) > 6).astype(int)
    (tmp_path / "d.csv").write_text("a,s,y\n" + "".join(f"{x},{'MF'[z]},{w}\n" for x, z, w in zip(a, s, y)))
    spec = tmp_path / "spec.fair"
    spec.write_text('''data d = csv("d.csv", label = y == 1)
features P from d {
  a : int in [0, 9]
  s : {M, F} protected
}
model m = xgboost("m.json")
encode P for m {
  a : raw
  s : code
}
property parity {
  disparate_impact(m, groups s, data = d) >= 0.8
}
''')
    xgb = pytest.importorskip("xgboost")
    X = np.column_stack([a, s]).astype(float)
    clf = xgb.XGBClassifier(n_estimators=4, max_depth=2, random_state=0, n_jobs=1).fit(X, y)
    clf.get_booster().save_model(str(tmp_path / "m.json"))
    return spec


def test_in_memory_xgboost_and_lightgbm_and_data_frame(tmp_path):
    pd = pytest.importorskip("pandas")
    xgb = pytest.importorskip("xgboost")
    lgb = pytest.importorskip("lightgbm")
    spec = _tiny_project(tmp_path)
    df = pd.read_csv(tmp_path / "d.csv")
    X = np.column_stack([df["a"], (df["s"] == "F").astype(int)]).astype(float)
    file_rep = fairspec.check(spec)
    clf = xgb.XGBClassifier()
    clf.load_model(str(tmp_path / "m.json"))
    mem = fairspec.check(spec, models={"m": clf}, data={"d": df})
    assert _key(mem.to_dict()["properties"]) == _key(file_rep.to_dict()["properties"])

    # LightGBM: the same spec with the model declared lightgbm(...)
    booster = lgb.LGBMClassifier(n_estimators=5, num_leaves=4, min_child_samples=5, verbose=-1).fit(X, df["y"])
    booster.booster_.save_model(str(tmp_path / "m.txt"))
    lspec = tmp_path / "lgb.fair"
    lspec.write_text(spec.read_text().replace('xgboost("m.json")', 'lightgbm("m.txt")'))
    assert _key(fairspec.check(lspec, models={"m": booster}).to_dict()["properties"]) == \
        _key(fairspec.check(lspec).to_dict()["properties"])


def test_in_memory_torch_module(tmp_path):
    torch = pytest.importorskip("torch")
    spec = _tiny_project(tmp_path)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    torch.jit.save(torch.jit.script(net), str(tmp_path / "net.pt"))
    tspec = tmp_path / "torch.fair"
    tspec.write_text(spec.read_text().replace('xgboost("m.json")', 'torch("net.pt", score = logit)'))
    net.train()                                      # a module in training: given back in training
    assert _key(fairspec.check(tspec, models={"m": net}).to_dict()["properties"]) == \
        _key(fairspec.check(tspec).to_dict()["properties"])
    assert net.training and all(m.training for m in net.modules())


def test_errors_are_sentences_or_diagnostics(tmp_path):
    spec = _tiny_project(tmp_path)
    with pytest.raises(fairspec.FairspecError, match="declares no model named 'other'"):
        fairspec.check(spec, models={"other": object()})
    with pytest.raises(fairspec.FairspecError, match="declares no data set named"):
        fairspec.check(spec, data={"nope": object()})
    with pytest.raises(fairspec.FairspecError, match="pass a pandas or polars DataFrame"):
        fairspec.check(spec, data={"d": [1, 2, 3]})
    with pytest.raises(fairspec.FairspecError, match="spec file .* does not exist"):
        fairspec.check(tmp_path / "missing.fair")
    bad = tmp_path / "bad.fair"
    bad.write_text("property {\n")
    rep = fairspec.check(bad, models={"m": object()})
    assert rep.exit_code == 2 and rep.diagnostics and not rep.ok
    assert fairspec.lint(spec) == []


def test_python_dash_m_fairspec_runs():  # a fresh `python -m fairspec`: the module's own entry point
    out = subprocess.run([sys.executable, "-m", "fairspec", "--version"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip()


def _headerless_project(tmp_path, header=False):
    """A headerless CSV read by `columns = [...]` (the label `y` and another 0/1 column `z` that
    disagrees with it) and a rule model: accuracy_difference depends on which column is the label."""
    rng = np.random.default_rng(1)
    n = 300
    a = rng.integers(0, 10, n)
    s = rng.integers(0, 2, n)
    y = ((a + 3 * s + rng.normal(0, 2, n)) > 6).astype(int)
    z = (rng.random(n) < 0.5).astype(int)
    lines = "".join(f"{x},{'MF'[k]},{w},{v}\n" for x, k, w, v in zip(a, s, y, z))
    (tmp_path / "d.csv").write_text(("junk,junk,junk,junk\n" if header else "") + lines)
    spec = tmp_path / "spec.fair"
    spec.write_text(f'''data d = csv("d.csv", header = {str(header).lower()}, columns = [a, s, y, z], label = y == 1)
features P from d {{
  a : int in [0, 9]
  s : {{M, F}} protected
}}
model m = rule(a >= 5)
property acc {{
  accuracy_difference(m, groups s) <= 0.5 bootstrap = 20
}}
''')
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": a, "s": [("MF")[k] for k in s], "y": y, "z": z})
    return spec, frame


def test_a_named_frame_is_matched_to_the_declared_columns_by_name(tmp_path):
    """`columns = [...]` reads a file by position; a data frame's columns are matched by name, so a
    frame in another order gives the file's verdict (it was written by position: the label came
    from `z`). A frame with pandas' default labels 0..n-1 stays positional."""
    spec, frame = _headerless_project(tmp_path)
    want = fairspec.check(spec)["acc"].value
    assert fairspec.check(spec, data={"d": frame[["z", "y", "s", "a"]]})["acc"].value == want
    positional = frame[["a", "s", "z", "y"]].T.reset_index(drop=True).T   # labels 0..3: z read as the label
    assert fairspec.check(spec, data={"d": positional})["acc"].value != want
    assert fairspec.check(spec, data={"d": frame.T.reset_index(drop=True).T})["acc"].value == want


def test_header_true_with_columns_keeps_the_first_row(tmp_path):
    """`header = true, columns = [...]`: the file's first line is skipped as a header, so the frame is
    written with one (it was written without, and its first row was lost)."""
    spec, frame = _headerless_project(tmp_path, header=True)
    assert fairspec.lint(spec, data={"d": frame}) == fairspec.lint(spec)
    assert fairspec.check(spec, data={"d": frame})["acc"].value == fairspec.check(spec)["acc"].value


def test_a_frame_without_a_declared_column_is_refused(tmp_path, monkeypatch):
    import tempfile

    spec, frame = _headerless_project(tmp_path)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))     # where the API's folder is made
    with pytest.raises(fairspec.FairspecError, match=r"^the data frame given for 'd' has no column 'y', which the "
                                                     r"declaration of data set 'd' lists in columns = \[a, s, y, z\]"):
        fairspec.check(spec, data={"d": frame.rename(columns={"y": "label"}).drop(columns="label")})
    with pytest.raises(fairspec.FairspecError, match="has no columns 'y' and 'z'"):
        fairspec.check(spec, data={"d": frame[["a", "s"]]})
    with pytest.raises(fairspec.FairspecError, match="has the column 'extra', which the declaration of data set 'd' "
                                                     "does not list"):
        fairspec.check(spec, data={"d": frame.assign(extra=0)})
    with pytest.raises(fairspec.FairspecError, match="has 3 unnamed columns, and the declaration of data set 'd' "
                                                     "lists 4 in"):
        fairspec.check(spec, data={"d": frame[["a", "s", "y"]].T.reset_index(drop=True).T})
    assert list(scratch.iterdir()) == []                           # the folder is removed on a refusal too


def test_errors_name_the_in_memory_object_not_a_temporary_file(tmp_path):
    """A data frame and a model are written to a temporary folder that is gone when the call
    returns: what the report says about them names them as given."""
    spec, frame = _headerless_project(tmp_path)
    bad = frame.T.reset_index(drop=True).T[[1, 0, 2, 3]].T.reset_index(drop=True).T   # s where a is declared
    rep = fairspec.check(spec, data={"d": bad})
    refused = [d.message for d in rep.report.diagnostics if d.code == "FS404"]   # lint's, in check's sentence
    assert rep.exit_code == 2 and refused == ["column 'a' of the data frame given for 'd' should be numeric for "
                                              "feature 'a' but holds 'M'"], rep.report.diagnostics
    empty = fairspec.lint(spec, data={"d": frame.iloc[:0]})
    assert [d.message for d in empty if d.is_error] == ["the data frame given for 'd' has no rows"]
    wide = fairspec.lint(spec, data={"d": frame.assign(a=frame.a.where(frame.index != 3, 50))})
    assert [d.message.split(" complete rows of ")[1].split(" have ")[0] for d in wide if d.code == "FS410"] == \
        ["the data frame given for 'd'"]                               # not the declared d.csv
    texts = refused + [d.message for d in empty + wide]
    assert not any("fairspec-api-" in t for t in texts), texts


def test_allow_is_folders_never_characters_and_arguments_are_checked(tmp_path):
    """allow = "/some/dir" is one folder: tuple("/some/dir") allowed "/", so a spec read a file
    outside its project (an audit's case). Wrong argument types are one FairspecError sentence,
    not a TypeError from deep inside."""
    project, outside = tmp_path / "p", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (project / "fairspec.toml").write_text("")
    (outside / "d.csv").write_text("a,y\n1,1\n2,0\n")
    spec = project / "s.fair"
    spec.write_text(f'data d = csv("{outside / "d.csv"}", label = y == 1)\n')
    assert [d.code for d in fairspec.lint(spec)] == ["FS212"]
    assert [d.code for d in fairspec.lint(spec, allow=str(tmp_path / "elsewhere"))] == ["FS212"]
    assert fairspec.lint(spec, allow=str(outside)) == [] == fairspec.lint(spec, allow=[outside])
    for bad, words in ((5, "not a int"), ([""], "empty path"), ("", "empty path"), ([3], "is not a path")):
        with pytest.raises(fairspec.FairspecError, match=words):
            fairspec.lint(spec, allow=bad)
    for kw, words in (({"workers": 0}, "workers"), ({"workers": "2"}, "workers"), ({"property": 3}, "property"),
                      ({"models": ["m"]}, "models maps"), ({"data": "d.csv"}, "data maps")):
        with pytest.raises(fairspec.FairspecError, match=words):
            fairspec.check(spec, **kw)
    with pytest.raises(fairspec.FairspecError, match="is a folder"):
        fairspec.check(project)
    with pytest.raises(fairspec.FairspecError, match="path of a .fair file"):
        fairspec.lint(None)


def test_provenance_and_loads_name_the_in_memory_objects(tmp_path):
    """The report's provenance is hashed while the in-memory objects' files exist, and its files
    and load times name the objects, not the temporary folder that is gone after the call."""
    pd = pytest.importorskip("pandas")
    spec = _tiny_project(tmp_path)
    rep = fairspec.check(spec, data={"d": pd.read_csv(tmp_path / "d.csv")})
    doc = json.loads(rep.to_json())
    text = json.dumps(doc)
    assert "fairspec-api-" not in text
    data = [f for f in doc["provenance"]["files"] if f["file"] == "the data frame given for 'd'"]
    assert len(data) == 1 and data[0]["sha256"] and data[0]["bytes"]
    assert any(x.get("file") == "the data frame given for 'd'" for x in doc.get("loads", []))


def test_pipeline_check_refuses_a_model_name_the_spec_does_not_declare(tmp_path):
    """pipeline.check(models={name: file}) ignored a name the spec does not declare (the declared file was
    checked, nothing said so); fairspec.check refused it. Now both raise FairspecError, the same sentence:
    the unknown name and the declared ones."""
    from fairspec import pipeline

    spec = _tiny_project(tmp_path)
    with pytest.raises(fairspec.FairspecError) as api:
        fairspec.check(spec, models={"other": str(tmp_path / "m.json")})
    with pytest.raises(fairspec.FairspecError) as direct:
        pipeline.check(spec, models={"other": str(tmp_path / "m.json")})
    assert str(direct.value) == str(api.value) == f"the spec {spec} declares no model named 'other' (models: m)"
    assert pipeline.check(spec, models={"m": str(tmp_path / "m.json")}).verdicts  # a declared name still works


def test_a_histgradientboosting_on_pandas_categoricals_is_refused_in_one_sentence(tmp_path):
    """A HistGradientBoosting model fitted on a frame whose text columns are pandas categoricals
    (native categorical support, scikit-learn's default categorical_features="from_dtype") reads them
    by category name through its own fitted encoder; fairspec feeds numbers, and the check ended in
    "evaluating the model ... failed: ufunc 'isnan' not supported for the input types". The error
    names the columns and two ways to ship such a model that fairspec reads."""
    pd = pytest.importorskip("pandas")
    ens = pytest.importorskip("sklearn.ensemble")
    rng = np.random.default_rng(0)
    n = 300
    frame = pd.DataFrame({"age": rng.integers(18, 70, n), "sex": rng.choice(["F", "M"], n),
                          "y": rng.integers(0, 2, n)})
    X = frame[["age", "sex"]].astype({"sex": "category"})
    clf = ens.HistGradientBoostingClassifier(max_iter=5).fit(X, frame.y)
    (tmp_path / "s.fair").write_text(
        'data d = csv("d.csv", label = y == 1)\nfeatures P from d {\n  age : int in [18, 69]\n'
        '  sex : {F, M} protected\n}\nmodel m = sklearn("m.skops")\nencode P for m { age : raw  sex : code }\n'
        'property di { disparate_impact(m, groups sex) >= 0.8 }\n')
    rep = fairspec.check(tmp_path / "s.fair", models={"m": clf}, data={"d": frame})
    assert rep.exit_code == 2 and not rep.verdicts
    assert rep.report.error.startswith("the model given for 'm': the HistGradientBoostingClassifier was fitted on a "
                                       "data frame whose column 'sex' is a pandas categorical"), rep.report.error
    assert "isnan" not in rep.report.error and "OrdinalEncoder" in rep.report.error
    # codes on an array: read as before
    codes = ens.HistGradientBoostingClassifier(max_iter=5, categorical_features=[1]).fit(
        np.c_[frame.age, frame.sex == "M"].astype(float), frame.y)
    assert fairspec.check(tmp_path / "s.fair", models={"m": codes}, data={"d": frame}).exit_code in (0, 1, 3)
