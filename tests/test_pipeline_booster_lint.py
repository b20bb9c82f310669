"""A Pipeline whose final step is an XGBClassifier / LGBMClassifier is a tree model to lint too
(session 29, the pipelines soundness family: seed 2000007): `using milp` / `using smt` on it was
FS506 ("XGBClassifier is not a ReLU MLP, ...") although check decides it through its booster's trees
(models.pipeline_boosters). Now lint lets the tree engines have it, and their verdict is the
pipeline's own predict, enumerated."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

SPEC = """data d = csv("d.csv", label = y == 1)
features F from d {
  g : {A, B, C}  protected
  n : int in [0, 4]
}
model m = sklearn("m.skops")
property p {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure label(m(x)) == label(m(x'))
  using BACKEND
}
"""


def _pipe(final: str):
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    rows = list(itertools.product("ABC", range(5)))
    frame = pd.DataFrame(rows, columns=["g", "n"])
    y = np.array([int((g == "B") ^ (n >= 2)) for g, n in rows])
    pre = ColumnTransformer([("g", OneHotEncoder(sparse_output=False), ["g"]), ("n", "passthrough", ["n"])])
    if final == "xgb":
        import xgboost as xgb

        clf = xgb.XGBClassifier(n_estimators=3, max_depth=2, n_jobs=1, random_state=0)
    else:
        import lightgbm as lgb

        clf = lgb.LGBMClassifier(n_estimators=3, max_depth=2, min_child_samples=2, num_leaves=4, verbose=-1,
                                 n_jobs=1, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = Pipeline([("pre", pre), ("clf", clf)]).fit(frame, y)
        labels = pipe.predict(frame)
    frame["y"] = y
    truth = "holds"
    for (i, (g, n)), (j, (g2, n2)) in itertools.product(enumerate(rows), repeat=2):
        if n == n2 and g != g2 and labels[i] != labels[j]:
            truth = "violated"
    return pipe, frame, truth


@pytest.mark.parametrize("final", ["xgb", "lgbm"])
@pytest.mark.parametrize("backend", ["milp", "smt"])
def test_booster_final_is_a_tree_model_to_lint(tmp_path, monkeypatch, final, backend):
    import fairspec

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")      # the solver, not enumeration
    pipe, frame, truth = _pipe(final)
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC.replace("BACKEND", backend))
    lint = fairspec.lint(spec, models={"m": pipe}, data={"d": frame})
    assert not [d for d in lint if d.code == "FS506"], [d.message for d in lint]
    doc = fairspec.check(spec, models={"m": pipe}, data={"d": frame}).to_dict()
    (prop,) = doc["properties"]
    assert prop["status"] in (truth, "unknown"), prop
    assert prop["status"] == truth, prop


_REFUSED = {"hinge": {"objective": "binary:hinge"}, "logitraw": {"objective": "binary:logitraw"},
            "missing": {"missing": 0.0}}


def _refused_pipe(how: str, labels: str):
    """The pipeline of _pipe with an XGBClassifier final pipeline_boosters refuses (``how``), fitted on
    labels that depend on the protected g (``unfair``) or on n alone (``fair``); its own predict on the
    15-point domain, and the truth of p by brute force on every pair with that predict as oracle."""
    import xgboost as xgb

    pipe, frame, _ = _pipe("xgb")
    rows = list(itertools.product("ABC", range(5)))
    y = np.array([int((g == "B") ^ (n >= 2)) if labels == "unfair" else int(n >= 2) for g, n in rows])
    frame["y"] = y
    X = pipe.named_steps["pre"].transform(frame[["g", "n"]])
    clf = xgb.XGBClassifier(n_estimators=10, max_depth=3, learning_rate=0.5, n_jobs=1, random_state=0,
                            **_REFUSED[how]).fit(X, y)
    pipe.steps[-1] = ("clf", clf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pred = pipe.predict(frame[["g", "n"]])
    bad = [(rows[i], rows[j]) for i, j in itertools.product(range(len(rows)), repeat=2)
           if rows[i][1] == rows[j][1] and rows[i][0] != rows[j][0] and pred[i] != pred[j]]
    return pipe, frame, rows, pred, bad


@pytest.mark.parametrize("labels", ["fair", "unfair"])
@pytest.mark.parametrize("how", sorted(_REFUSED))
def test_unreadable_booster_final_small_domain_is_enumerated(tmp_path, how, labels):
    """Session 29 (pipelines-52-p1, pipelines-46-p2): an XGBClassifier final whose trees pipeline_boosters
    refuses left a 15-point domain unknown ('the milp backend cannot encode this model'); it is enumerated
    on the pipeline's own predict, as a pipeline evaluated whole is, and a violation's witness is a pair
    the pipeline's own predict tells apart."""
    import pandas as pd

    import fairspec
    from fairspec.models.pipeline_boosters import booster_trees
    from fairspec.models.base import UnsupportedModel

    pipe, frame, rows, pred, bad = _refused_pipe(how, labels)
    with pytest.raises(UnsupportedModel):
        booster_trees(pipe.steps[-1][1], "predict_proba", 1)
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC.replace("  using BACKEND\n", ""))
    doc = fairspec.check(spec, models={"m": pipe}, data={"d": frame}).to_dict()
    (prop,) = doc["properties"]
    assert prop["status"] == ("violated" if bad else "holds"), prop
    if bad:
        w = prop["witness"]
        a, b = (pd.DataFrame([{"g": str(v["g"]), "n": int(v["n"])}]) for v in (w["features"], w["features_prime"]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert pipe.predict(a)[0] != pipe.predict(b)[0], w
        assert a["n"][0] == b["n"][0] and a["g"][0] != b["g"][0]


def test_unreadable_booster_final_beyond_a_small_domain_is_unknown_with_the_refusal(tmp_path):
    """Past enumeration's reach the refused booster stays unknown, naming why its trees were not read."""
    import fairspec

    pipe, frame, rows, pred, bad = _refused_pipe("hinge", "fair")
    assert not bad
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC.replace("  using BACKEND\n", "").replace("int in [0, 4]", "int in [0, 400000]"))
    doc = fairspec.check(spec, models={"m": pipe}, data={"d": frame}).to_dict()
    (prop,) = doc["properties"]
    assert prop["status"] == "unknown", prop
    assert "binary:hinge" in prop["reason"], prop["reason"]


def test_reg_logistic_is_binary_logistic_bit_for_bit():
    """XGBoost's reg:logistic in an XGBClassifier is binary:logistic under another name: the same margins,
    and predict_proba / predict bit for bit the same (float32) on 20,000 points, also with the trees of one
    run under the other objective. So pipeline_boosters reads its trees (it refused them: 'not the logistic
    of its margin', soundness pipelines-3000052-p0)."""
    import json

    import xgboost as xgb

    from fairspec.models.pipeline_boosters import booster_trees

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 5)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=3000) * 0.5 > 0).astype(int)
    reg, binary = (xgb.XGBClassifier(n_estimators=20, max_depth=3, objective=o, n_jobs=1, random_state=0).fit(X, y)
                   for o in ("reg:logistic", "binary:logistic"))
    T = (rng.normal(size=(20000, 5)) * 3).astype(np.float32)
    assert np.array_equal(reg.predict(T, output_margin=True), binary.predict(T, output_margin=True))
    pr, pb = reg.predict_proba(T), binary.predict_proba(T)
    assert pr.dtype == np.float32 and np.array_equal(pr.view(np.uint32), pb.view(np.uint32))
    assert np.array_equal(reg.predict(T), binary.predict(T))
    cfg = json.loads(binary.get_booster().save_raw("json"))
    cfg["learner"]["objective"]["name"] = "reg:logistic"
    swapped = xgb.Booster(model_file=bytearray(json.dumps(cfg).encode()))
    d = xgb.DMatrix(T)
    assert np.array_equal(swapped.predict(d).view(np.uint32), binary.get_booster().predict(d).view(np.uint32))
    assert booster_trees(reg, "predict_proba", 1) is not None


@pytest.mark.parametrize("child", [1.0, 0.0])            # min_child_weight 0: it reads g, and violates
@pytest.mark.parametrize("backend", ["milp", "enumeration"])
def test_reg_logistic_booster_final_is_read_as_trees(tmp_path, monkeypatch, backend, child):
    """A pipeline's reg:logistic XGBClassifier goes the tree paths; brute force on every pair with the
    pipeline's own predict as oracle."""
    import xgboost as xgb

    import fairspec

    if backend == "milp":
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")      # the tree engines, not enumeration
    pipe, frame, _ = _pipe("xgb")
    rows = list(itertools.product("ABC", range(5)))
    X = pipe.named_steps["pre"].transform(frame[["g", "n"]])
    clf = xgb.XGBClassifier(n_estimators=10, max_depth=3, learning_rate=0.5, objective="reg:logistic", n_jobs=1,
                            random_state=0, min_child_weight=child).fit(X, frame["y"])
    pipe.steps[-1] = ("clf", clf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pred = pipe.predict(frame[["g", "n"]])
    truth = "violated" if any(rows[i][1] == rows[j][1] and rows[i][0] != rows[j][0] and pred[i] != pred[j]
                              for i, j in itertools.product(range(len(rows)), repeat=2)) else "holds"
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC.replace("  using BACKEND\n", "  using milp\n" if backend == "milp" else ""))
    assert truth == ("violated" if child == 0.0 else "holds")
    doc = fairspec.check(spec, models={"m": pipe}, data={"d": frame}).to_dict()
    (prop,) = doc["properties"]
    assert prop["status"] == truth, prop
    if truth == "holds":       # decided on the tree paths (a violation may be found on the data rows first)
        assert "library's runtime" in (prop.get("reason") or ""), prop


@pytest.mark.parametrize("how", sorted(_REFUSED))
def test_refused_booster_final_prob_is_no_probability(tmp_path, how):
    """prob(m(x)) of a pipeline whose XGBClassifier is binary:hinge (predict_proba its 0 / 1 decision) or
    binary:logitraw (predict_proba its raw margin, e.g. -0.36) is no probability (it was enumerated on those
    numbers as probabilities): FS415 at lint since session 30, as the same booster saved alone (check said
    unknown, naming why, and lint nothing); missing = 0.0 has one."""
    import fairspec

    pipe, frame, rows, pred, bad = _refused_pipe(how, "unfair")
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC.replace("  using BACKEND\n", "").replace("label(m(x)) == label(m(x'))",
                                                                  "abs(prob(m(x)) - prob(m(x'))) <= 0.05"))
    doc = fairspec.check(spec, models={"m": pipe}, data={"d": frame}).to_dict()
    if how != "missing":
        assert doc["exit_code"] == 2 and not doc["properties"], doc
        (d,) = [d for d in doc["diagnostics"] if d["severity"] == "error"]
        assert d["code"] == "FS415" and f"binary:{how}" in d["message"] and "not a probability" in d["message"], d
        return
    (prop,) = doc["properties"]
    if how == "missing":
        P = pipe.predict_proba(frame[["g", "n"]])[:, 1]
        truth = any(rows[i][1] == rows[j][1] and abs(float(P[i]) - float(P[j])) > 0.05
                    for i, j in itertools.product(range(len(rows)), repeat=2))
        assert prop["status"] == ("violated" if truth else "holds"), prop
    else:
        assert prop["status"] == "unknown", prop
        assert f"binary:{how}" in prop["reason"] and "not a probability" in prop["reason"], prop["reason"]


@pytest.mark.parametrize("child", [0.0, 5.0])
@pytest.mark.parametrize("kw", [{"objective": "multi:softmax"}, {"missing": 0.0}], ids=["softmax", "missing"])
def test_unreadable_multiclass_booster_final_class_is_enumerated(tmp_path, kw, child):
    """class(m(x)) of a pipeline whose 3-class XGBClassifier booster_columns refuses (multi:softmax,
    missing = 0.0): every pair of the small domain on its own predict, against brute force with it."""
    import xgboost as xgb

    import fairspec

    pipe, frame, _ = _pipe("xgb")
    rows = list(itertools.product("ABC", range(5)))
    y = np.array([(int(g == "B") + n) % 3 for g, n in rows])
    frame["y"] = y
    X = pipe.named_steps["pre"].transform(frame[["g", "n"]])
    clf = xgb.XGBClassifier(n_estimators=10, max_depth=3, learning_rate=0.5, min_child_weight=child, n_jobs=1,
                            random_state=0, **kw).fit(X, y)
    pipe.steps[-1] = ("clf", clf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pred = pipe.predict(frame[["g", "n"]])
    truth = "violated" if any(rows[i][1] == rows[j][1] and rows[i][0] != rows[j][0] and pred[i] != pred[j]
                              for i, j in itertools.product(range(len(rows)), repeat=2)) else "holds"
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC.replace("  using BACKEND\n", "").replace("label(m(x)) == label(m(x'))",
                                                                  "class(m(x)) == class(m(x'))"))
    (prop,) = fairspec.check(spec, models={"m": pipe}, data={"d": frame}).to_dict()["properties"]
    assert prop["status"] == truth, prop
    assert "model's runtime" in prop["reason"], prop["reason"]
