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
