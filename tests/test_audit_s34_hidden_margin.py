"""Session 34 audit (h6): parts of a scikit-learn booster's prediction its trees do not show (models/sklearn_hidden.py).

A GradientBoosting model whose `init` estimator is a model of its own
(`init=LogisticRegression()`) adds that model's log-odds to the trees' sum. fairspec read the trees alone and
folded the init's contribution into one constant (`_with_base`, the median at 8 probe points); a dependence on
the protected feature smaller than the self-check's tolerance (rtol 1e-5) went unseen, and a pair property was
`holds (proved)` -- by the cell enumeration (the protected feature split by no tree: one cell) and, on the
solver path, by `prove_unread` ("the model never reads the protected ... features") -- while the model's own
predict_proba / decision_function differ between x and x'. Truth here: brute force on the model itself."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

pytest.importorskip("skops")

SPEC = """features F {
  a : int in [0, 3]
  g : {A, B} protected
}
model m = sklearn("m.skops")
# fairspec: ignore[FS427]
encode F for m {
  a : raw
  g : code {A = 0, B = 1}
}
property pr {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure |prob(m(x)) - prob(m(x'))| <= 0
}
property lg {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure |logit(m(x)) - logit(m(x'))| <= 0.00000001
}
"""


def _model(kind: str):
    from sklearn.dummy import DummyClassifier
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = np.c_[rng.integers(0, 4, 300), rng.integers(0, 2, 300)].astype(float)
    y = ((X[:, 0] + rng.normal(0, 1, 300)) > 1.5).astype(int)
    init = {"lr": LogisticRegression(), "dummy": DummyClassifier(strategy="prior"), "none": None}[kind]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = GradientBoostingClassifier(n_estimators=3, max_depth=1, init=init, random_state=0).fit(X, y)
    if kind == "lr":
        m.init_.coef_ = np.array([[0.0, 1e-7]])      # g moves the margin by 1e-7, below the self-check's rtol
    return m


def _truth(m) -> dict:
    P = np.array(list(itertools.product(range(4), range(2))), dtype=float)
    p, z = m.predict_proba(P)[:, 1], m.decision_function(P)
    pairs = [(2 * i, 2 * i + 1) for i in range(4)]
    return {"pr": "holds" if all(p[i] == p[j] for i, j in pairs) else "violated",
            "lg": "holds" if all(abs(z[i] - z[j]) <= 1e-8 for i, j in pairs) else "violated"}


@pytest.mark.parametrize("enumerate_pairs", ["1", "0"])
@pytest.mark.parametrize("kind", ["lr", "dummy", "none"])
def test_gb_init_estimator_is_read_or_refused(tmp_path, monkeypatch, kind, enumerate_pairs):
    import skops.io as sio

    from fairspec.pipeline import check

    if enumerate_pairs == "0":
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    m = _model(kind)
    sio.dump(m, tmp_path / "m.skops")
    (tmp_path / "s.fair").write_text(SPEC)
    truth = _truth(m)
    if kind == "lr":
        assert truth == {"pr": "violated", "lg": "violated"}
    rep = check(str(tmp_path / "s.fair"))
    assert not rep.has_errors, rep.diagnostics
    for v in rep.verdicts:
        status = v.status.value if hasattr(v.status, "value") else str(v.status)
        assert status in (truth[v.name], "unknown"), (v.name, status, truth[v.name], v.reason)
        if kind != "lr":                             # a constant init is still read as trees and decided
            assert status == truth[v.name], (v.name, status, v.reason)


HGB_SPEC = """features F {
  a : int in [0, 3]
  g : {A, B} protected
  b : int in [0, 2]
}
model m = sklearn("m.skops")
# fairspec: ignore[FS427]
encode F for m {
  a : raw
  g : code {A = 0, B = 1}
  b : raw
}
property pa {
  forall x, x' : F
  require x.* == x'.* except {a}
  ensure |prob(m(x)) - prob(m(x'))| <= 0
}
"""


@pytest.mark.parametrize("enumerate_pairs", ["1", "0"])
def test_hgb_categorical_columns_reordered(tmp_path, monkeypatch, enumerate_pairs):
    """A HistGradientBoosting model fitted with categorical_features=[1] on an array: its `_preprocessor`
    puts column 1 first, so its predictors' feature_idx 1 is input 0 (a). Its leaves set to multiples of
    1e-7 (below the self-check's tolerance): fairspec read the splits on a as splits on g and proved
    `except {a}` by 'never reads' while the model's own predict_proba differs by 2e-7."""
    import skops.io as sio
    from sklearn.ensemble import HistGradientBoostingClassifier

    from fairspec.pipeline import check

    if enumerate_pairs == "0":
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    rng = np.random.default_rng(0)
    X = np.c_[rng.integers(0, 4, 400), rng.integers(0, 2, 400), rng.integers(0, 3, 400)].astype(float)
    y = ((X[:, 0] + X[:, 2] + rng.normal(0, 0.5, 400)) > 2.5).astype(int)
    m = HistGradientBoostingClassifier(max_iter=3, max_depth=2, categorical_features=[1]).fit(X, y)
    for it in m._predictors:
        nodes = it[0].nodes
        leaf = nodes["is_leaf"].astype(bool)
        nodes["value"][leaf] = 1e-7 * np.arange(leaf.sum())
    P = np.array(list(itertools.product(range(4), range(2), range(3))), dtype=float)
    p = m.predict_proba(P)[:, 1]
    truth = "holds" if all(p[i] == p[j] for i in range(len(P)) for j in range(len(P))
                           if P[i, 1] == P[j, 1] and P[i, 2] == P[j, 2]) else "violated"
    assert truth == "violated"
    sio.dump(m, tmp_path / "m.skops")
    (tmp_path / "s.fair").write_text(HGB_SPEC)
    rep = check(str(tmp_path / "s.fair"))
    assert not rep.has_errors, rep.diagnostics
    (v,) = rep.verdicts
    assert v.status in (truth, "unknown"), (v.status, v.reason)


def test_folded_pipeline_gb_with_model_init_is_not_widened(tmp_path):
    """A Pipeline(ColumnTransformer(OneHotEncoder(drop="first"), passthrough), GradientBoosting(init=
    LogisticRegression())): widening the booster's trees to the dropped category's column left its init_
    reading the narrower columns, and the small-domain enumeration crashed (exit 4, "X has 3 features, but
    LogisticRegression is expecting 2"). Now it is not widened: the pipeline is evaluated whole (FS423)."""
    import pandas as pd
    import skops.io as sio
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    from fairspec.pipeline import check

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.integers(0, 4, 300), "g": rng.choice(["A", "B"], 300)})
    y = ((df.a + (df.g == "B") * 0.5 + rng.normal(0, 0.5, 300)) > 1.6).astype(int)
    ct = ColumnTransformer([("c", OneHotEncoder(drop="first"), ["g"]), ("p", "passthrough", ["a"])])
    pipe = Pipeline([("ct", ct), ("gb", GradientBoostingClassifier(n_estimators=2, max_depth=1,
                                                                   init=LogisticRegression()))]).fit(df, y)
    sio.dump(pipe, tmp_path / "p.skops")
    P = pd.DataFrame(list(itertools.product(range(4), ["A", "B"])), columns=["a", "g"])
    p = pipe.predict_proba(P)[:, 1]
    truth = "holds" if max(abs(p[2 * i] - p[2 * i + 1]) for i in range(4)) <= 0.01 else "violated"
    (tmp_path / "s.fair").write_text(
        'features P {\n  a : int in [0, 3]\n  g : {A, B} protected\n}\nmodel m = sklearn("p.skops")\n'
        "property pr {\n  forall x, x' : P\n  require x.* == x'.* except {g}\n"
        "  ensure |prob(m(x)) - prob(m(x'))| <= 0.01\n}\n")
    rep = check(str(tmp_path / "s.fair"))
    (v,) = rep.verdicts
    assert "internal error" not in (v.reason or ""), v.reason
    assert v.status == truth == "violated", (v.status, v.reason)


def test_xgboost_vector_leaf_model_says_how_to_train_it(tmp_path):
    """An XGBClassifier trained with multi_strategy="multi_output_tree" (vector leaves) was refused with
    "fairspec reads binary classifiers", though multiclass XGBoost models are read: the sentence now names the
    vector leaf and the default multi_strategy fairspec reads."""
    xgb = pytest.importorskip("xgboost")
    from fairspec.models.base import ModelLoadError
    from fairspec.models.treefile import check_xgboost

    rng = np.random.default_rng(0)
    X = rng.integers(0, 4, (120, 2)).astype(float)
    y = (X[:, 0].astype(int) + X[:, 1].astype(int)) % 3
    m = xgb.XGBClassifier(n_estimators=2, max_depth=2, tree_method="hist", multi_strategy="multi_output_tree")
    m.fit(X, y)
    m.save_model(tmp_path / "m.json")
    with pytest.raises(ModelLoadError) as e:
        check_xgboost(tmp_path / "m.json")
    msg = str(e.value)
    assert "binary" not in msg and "multi_output_tree" in msg and "one_output_per_tree" in msg, msg
