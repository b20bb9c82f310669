"""Group metrics of multiclass and regression models (issue 25) agree with fairlearn's MetricFrame
(and scipy's ks_2samp) on the same predictions, to 1e-9: one class against the rest
(class = c), a regression above a threshold (threshold = t), the class distribution distance,
mean prediction, errors, bounded group loss and the KS distance. The models are tiny ONNX graphs
built here; the predictions fairlearn sees are onnxruntime's on the same encoded rows."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import run_cli
from fairspec import pipeline
from onnx_nets import gemm_onnx

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
fm = pytest.importorskip("fairlearn.metrics")
skm = pytest.importorskip("sklearn.metrics")

TOL = 1e-9
N = 400


def _onnx(path, k, name, seed):
    gemm_onnx(path, k, 6, name, seed)


HEAD = """\
data d = csv("d.csv", label = y == 1, target = y)
data r = csv("d.csv", target = v)
features F from d {
  a : int in [0, 3]
  sex : {F, M} protected
  race : {A, B, C} protected
}
features FR from r {
  a : int in [0, 3]
  sex : {F, M} protected
  race : {A, B, C} protected
}
model grade = onnx("grade.onnx")
encode F for grade { a : raw  sex, race : onehot }
model salary = onnx("salary.onnx", score = value)
encode FR for salary { a : raw  sex, race : onehot }
"""

PROPS = {
    # name: (claim, fairlearn's value)
    "sp_class": "statistical_parity(grade, groups race, class = 2) <= 1",
    "eo_class": "equalized_odds(grade, groups sex, class = 1) <= 1",
    "tpr_class": "equal_opportunity(grade, groups race, class = 0) <= 1",
    "di_threshold": "disparate_impact(salary, groups race, threshold = 0.5) >= 0",
    "tv": "class_distribution_distance(grade, groups race) <= 1",
    "tv_overall": "class_distribution_distance(grade, groups race) <= 1   compare = to_overall",
    "mean_diff": "mean_prediction_difference(salary, groups race) <= 100",
    "mean_overall": "mean_prediction_difference(salary, groups race) <= 100   compare = to_overall",
    "mean_error": "mean_error_difference(salary, groups sex) <= 100",
    "mae": "mean_absolute_error_difference(salary, groups race) <= 100",
    "rmse": "root_mean_squared_error_difference(salary, groups race) <= 100",
    "bgl_square": "bounded_group_loss(salary, groups race) <= 1000",
    "bgl_abs": "bounded_group_loss(salary, groups sex, loss = absolute) <= 1000",
    "ks": "ks_distance(salary, groups sex) <= 1",
    "ks_race": "ks_distance(salary, groups race) <= 1",
    # sample weights (weight = COLUMN) as fairlearn's sample_params
    "w_mean": "mean_prediction_difference(salary, groups race) <= 100   weight = w",
    "w_mae": "mean_absolute_error_difference(salary, groups sex) <= 100   weight = w",
    "w_tv": "class_distribution_distance(grade, groups sex) <= 1   weight = w",
    # the largest over classes of the one-vs-rest equalized-odds difference
    "meo": "multiclass_equalized_odds(grade, groups race) <= 1",
    "meo_overall": "multiclass_equalized_odds(grade, groups race) <= 1   compare = to_overall",
    "w_meo": "multiclass_equalized_odds(grade, groups sex) <= 1   weight = w",
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("outputs")
    _onnx(folder / "grade.onnx", 3, "logits", 3)
    _onnx(folder / "salary.onnx", 1, "y", 4)
    rng = np.random.default_rng(5)
    a = rng.integers(0, 4, N)
    sex = np.array(["F", "M"])[rng.integers(0, 2, N)]
    race = np.array(["A", "B", "C"])[rng.integers(0, 3, N)]
    y = rng.integers(0, 3, N)
    v = np.round(rng.normal(size=N), 3)
    wt = rng.integers(1, 5, N)
    lines = ["a,sex,race,y,v,w"] + [f"{a[i]},{sex[i]},{race[i]},{y[i]},{v[i]},{wt[i]}" for i in range(N)]
    (folder / "d.csv").write_text("\n".join(lines) + "\n")
    text = HEAD + "".join(f"property {k} {{ {c}   bootstrap = 20   min_group_size = 1 }}\n" for k, c in PROPS.items())
    (folder / "s.fair").write_text(text)
    rep = pipeline.check(folder / "s.fair")
    assert not [d for d in rep.diagnostics if d.severity == "error"], rep.diagnostics
    X = np.stack([a, sex == "F", sex == "M", race == "A", race == "B", race == "C"], axis=1).astype(np.float32)
    logits = ort.InferenceSession(str(folder / "grade.onnx"), providers=["CPUExecutionProvider"]).run(
        ["logits"], {"x": X})[0]
    value = ort.InferenceSession(str(folder / "salary.onnx"), providers=["CPUExecutionProvider"]).run(
        ["y"], {"x": X})[0][:, 0].astype(np.float64)
    return {"verdicts": {x.name: x for x in rep.verdicts}, "sex": sex, "race": race, "y": y, "v": v, "w": wt,
            "cls": np.argmax(logits, axis=1), "value": value}


def _frame(metric, run, y_true, y_pred, by):
    return fm.MetricFrame(metrics=metric, y_true=y_true, y_pred=y_pred, sensitive_features=run[by])


def _tv(run, by, overall=False):
    shares = {k: (lambda k: lambda yt, yp: float(np.mean(yp == k)))(k) for k in range(3)}
    mf = _frame(shares, run, run["y"], run["cls"], by)
    P = mf.by_group.to_numpy()
    if overall:
        return float(np.max(np.abs(P - mf.overall.to_numpy()[None, :]).sum(axis=1) / 2))
    return float(max(np.abs(P[i] - P[j]).sum() / 2 for i in range(len(P)) for j in range(len(P))))


def expected(name, run):
    y, cls, val, v = run["y"], run["cls"], run["value"], run["v"]
    if name == "sp_class":
        return fm.demographic_parity_difference(y == 2, cls == 2, sensitive_features=run["race"])
    if name == "eo_class":
        return fm.equalized_odds_difference(y == 1, cls == 1, sensitive_features=run["sex"])
    if name == "tpr_class":
        return _frame(fm.true_positive_rate, run, y == 0, cls == 0, "race").difference()
    if name == "di_threshold":
        return fm.demographic_parity_ratio(v >= 0.5, val >= 0.5, sensitive_features=run["race"])
    if name == "tv":
        return _tv(run, "race")
    if name == "tv_overall":
        return _tv(run, "race", overall=True)
    if name == "mean_diff":
        return _frame(fm.mean_prediction, run, v, val, "race").difference()
    if name == "mean_overall":
        return _frame(fm.mean_prediction, run, v, val, "race").difference(method="to_overall")
    if name == "mean_error":
        return _frame(lambda yt, yp: float(np.mean(yp - yt)), run, v, val, "sex").difference()
    if name == "mae":
        return _frame(skm.mean_absolute_error, run, v, val, "race").difference()
    if name == "rmse":
        return _frame(lambda yt, yp: float(np.sqrt(skm.mean_squared_error(yt, yp))), run, v, val, "race").difference()
    if name == "bgl_square":
        return _frame(skm.mean_squared_error, run, v, val, "race").group_max()
    if name == "bgl_abs":
        return _frame(skm.mean_absolute_error, run, v, val, "sex").group_max()
    sw = {"sample_weight": run["w"]}
    if name in ("meo", "meo_overall", "w_meo"):
        by = "sex" if name == "w_meo" else "race"
        kw = {"method": "to_overall"} if name == "meo_overall" else {}
        if name == "w_meo":
            kw["sample_weight"] = run["w"]
        return max(fm.equalized_odds_difference(y == c, cls == c, sensitive_features=run[by], **kw)
                   for c in range(3))
    if name == "w_mean":
        return fm.MetricFrame(metrics=fm.mean_prediction, y_true=v, y_pred=val, sensitive_features=run["race"],
                              sample_params=sw).difference()
    if name == "w_mae":
        return fm.MetricFrame(metrics=skm.mean_absolute_error, y_true=v, y_pred=val, sensitive_features=run["sex"],
                              sample_params=sw).difference()
    if name == "w_tv":
        shares = {k: (lambda k: lambda yt, yp, sample_weight: float(np.average(yp == k, weights=sample_weight)))(k)
                  for k in range(3)}
        P = fm.MetricFrame(metrics=shares, y_true=y, y_pred=cls, sensitive_features=run["sex"],
                           sample_params={k: sw for k in shares}).by_group.to_numpy()
        return float(np.abs(P[0] - P[1]).sum() / 2)
    stats = pytest.importorskip("scipy.stats")
    by = "sex" if name == "ks" else "race"
    groups = sorted(set(run[by]))
    return max(stats.ks_2samp(val[run[by] == a], val[run[by] == b]).statistic for a in groups for b in groups if a < b)


@pytest.mark.parametrize("name", list(PROPS))
def test_agrees_with_fairlearn(run, name):
    v = run["verdicts"][name]
    assert v.status in ("holds", "violated", "unknown") and v.value is not None, v
    assert abs(v.value - float(expected(name, run))) <= TOL, (name, v.value, expected(name, run))
    lo, hi = v.bound
    assert lo <= v.value <= hi


def test_report_tables(run):
    tv = run["verdicts"]["tv"]
    rows = tv.details["groups"]
    assert {r["group"] for r in rows} == {"race=A", "race=B", "race=C"}
    for r in rows:                                  # a confusion matrix per group (true x predicted)
        m = np.array(r["confusion"]["matrix"])
        assert m.shape == (3, 3) and m.sum() == r["rows"]
        assert abs(sum(r["class_share"].values()) - 1) < 1e-12
    meo = run["verdicts"]["meo"]
    for r in meo.details["groups"]:                 # per class TPR / FPR of each group in the table
        assert set(r["class_tpr"]) == set(r["class_fpr"]) == {"0", "1", "2"}
    mae = run["verdicts"]["mae"]
    assert {"mean_prediction", "mean_error", "mae", "rmse"} <= set(mae.details["groups"][0])


def test_over_a_distribution_and_in_json(tmp_path):
    """class = c over a distribution: lint warns FS504 and check says unknown with the reason; the
    JSON report on stdout is only the JSON document, confusion matrices included."""
    import json

    _onnx(tmp_path / "grade.onnx", 3, "logits", 3)
    _onnx(tmp_path / "salary.onnx", 1, "y", 4)
    rng = np.random.default_rng(1)
    lines = ["a,sex,race,y,v,w"] + [f"{rng.integers(0, 4)},{'FM'[rng.integers(0, 2)]},{'ABC'[rng.integers(0, 3)]},"
                                    f"{rng.integers(0, 3)},0.5,1" for _ in range(120)]
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    spec = tmp_path / "s.fair"
    spec.write_text(HEAD + "distribution u = independent(d)\n"
                    "property over { statistical_parity(grade, groups sex, class = 1, distribution u) <= 0.5 }\n"
                    "property tv { class_distribution_distance(grade, groups sex) <= 0.999   bootstrap = 10 }\n")
    res = pipeline.lint(spec)
    assert [d.code for d in res.diagnostics if d.severity != "note"] == ["FS504"], res.diagnostics
    out = run_cli("check", spec, "--format", "json", cwd=tmp_path, timeout=600)
    doc = json.loads(out.stdout)
    props = {p["name"]: p for p in doc["properties"]}
    assert props["over"]["status"] == "unknown" and "data rows" in props["over"]["reason"]
    assert props["tv"]["details"]["groups"][0]["confusion"]["matrix"]


def test_class_labels_of_a_scikit_learn_model(tmp_path):
    """class = "mid" on a scikit-learn classifier with text labels: the decision is predict() == "mid",
    the truth the target column's text; equal to fairlearn on the model's own predict."""
    lm = pytest.importorskip("sklearn.linear_model")
    sio = pytest.importorskip("skops.io")
    rng = np.random.default_rng(7)
    n = 300
    a, b = rng.integers(0, 4, n), rng.integers(0, 2, n)
    sex = np.array(["F", "M"])[rng.integers(0, 2, n)]
    grade = np.array(["lo", "mid", "hi"])[np.clip(a + rng.integers(-1, 2, n), 0, 2)]
    X = np.stack([a, b, sex == "F", sex == "M"], axis=1).astype(float)
    lr = lm.LogisticRegression(max_iter=500).fit(X, grade)
    sio.dump(lr, tmp_path / "lr.skops")
    (tmp_path / "d.csv").write_text("a,b,sex,grade\n" + "\n".join(f"{a[i]},{b[i]},{sex[i]},{grade[i]}"
                                                                  for i in range(n)) + "\n")
    spec = tmp_path / "s.fair"
    spec.write_text('data d = csv("d.csv", target = grade)\nfeatures F from d {\n  a : int in [0, 3]\n'
                    '  b : int in [0, 1]\n  sex : {F, M} protected\n}\nmodel lr = sklearn("lr.skops")\n'
                    'encode F for lr { a, b : raw  sex : onehot }\n'
                    'property sp { statistical_parity(lr, groups sex, class = "mid") <= 1   bootstrap = 10 }\n'
                    'property eo { equalized_odds(lr, groups sex, class = "hi") <= 1   bootstrap = 10 }\n'
                    'property tv { class_distribution_distance(lr, groups sex) <= 1   bootstrap = 10 }\n')
    rep = pipeline.check(spec)
    assert not [d for d in rep.diagnostics if d.severity == "error"], rep.diagnostics
    v = {x.name: x for x in rep.verdicts}
    pred = lr.predict(X)
    assert abs(v["sp"].value - fm.demographic_parity_difference(grade == "mid", pred == "mid",
                                                                sensitive_features=sex)) <= TOL
    assert abs(v["eo"].value - fm.equalized_odds_difference(grade == "hi", pred == "hi",
                                                            sensitive_features=sex)) <= TOL
    P = {s: np.array([np.mean(pred[sex == s] == c) for c in lr.classes_]) for s in ("F", "M")}
    assert abs(v["tv"].value - np.abs(P["F"] - P["M"]).sum() / 2) <= TOL
    for prop in ("tv", "sp"):                       # a confusion matrix per group, with class = c too
        cm = {r["group"]: r["confusion"] for r in v[prop].details["groups"]}
        assert cm["sex=F"]["classes"] == list(lr.classes_)
        for s in ("F", "M"):
            assert np.array_equal(np.array(cm[f"sex={s}"]["matrix"]),
                                  skm.confusion_matrix(grade[sex == s], pred[sex == s], labels=lr.classes_))
