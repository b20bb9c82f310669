"""A two-class LGBMClassifier trained with a multiclass objective (``objective="multiclass"`` or
``"multiclassova"``, ``num_class=2``) as a folded pipeline's final step: scikit-learn sees two classes, so
fairspec reads it as a binary classifier, but its raw margin is two columns per row. LightGBM 4.7's
``LGBMClassifier.decision_function`` returns them as an (n, 2) matrix, and ``runtime_layers.logit_scores``
flattened it to 2n numbers: on a domain too large to enumerate, the counterfactual flips on data of a
``label`` post (``using milp`` / ``using smt``, ``mode = find``) ended in an internal error ("operands could
not be broadcast together with shapes (600,) (300,)", a reviewer's "(720,) (360,)"), and a ``logit`` post
compared 2n margins with n rows ("minus has 3 entries, lhs 1"). Now a two-column margin is no logit of a
binary model: ``label`` is decided on the pipeline's own predict (checked here against it), ``logit`` is
``unknown`` saying why (no binary classifier's margin)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("lightgbm")

import fairspec  # noqa: E402

SPEC = """data d = csv("d.csv", label = y == 1)
features F from d {
  g : {n, y, z}  protected
  a : int in [0, 9]
  b : real in [0, 10]
}
model m = sklearn("m.skops")
"""


def _prop(name, ensure, tail=""):
    return f"property {name} {{\n  forall x, x' : F\n  require x.* == x'.* except {{g}}\n  ensure {ensure}\n{tail}}}\n"


def _pipe(objective):
    import lightgbm as lgb
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(3)
    n = 300
    frame = pd.DataFrame({"g": rng.choice(list("nyz"), n), "a": rng.integers(0, 10, n),
                          "b": (rng.random(n) * 10).round(3)})
    y = ((frame.a + 3 * (frame.g == "y") + rng.integers(0, 3, n)) > 6).astype(int)
    final = lgb.LGBMClassifier(objective=objective, num_class=2, n_estimators=5, num_leaves=8, min_child_samples=2,
                               verbose=-1, n_jobs=1, random_state=0)
    pre = ColumnTransformer([("oh", OneHotEncoder(sparse_output=False), ["g"]), ("p", "passthrough", ["a", "b"])])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Pipeline([("pre", pre), ("clf", final)]).fit(frame, y), frame.assign(y=y)


@pytest.mark.parametrize("objective", ["multiclass", "multiclassova"])
def test_a_two_class_multiclass_booster_label_and_logit_end_without_internal_error(tmp_path, objective):
    pipe, data = _pipe(objective)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.asarray(pipe[-1].predict(pipe[0].transform(data.head(4)), raw_score=True)).shape == (4, 2)
    body = (_prop("lab_milp", "label(m(x)) == label(m(x'))", "  using milp\n")
            + _prop("lab_smt", "label(m(x)) == label(m(x'))", "  using smt\n")
            + _prop("lab_find", "label(m(x)) == label(m(x'))", "  mode = find\n")
            + _prop("logit", "|logit(m(x)) - logit(m(x'))| <= 0.5", "  mode = find\n"))
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC + body)
    rep = fairspec.check(spec, models={"m": pipe}, data={"d": data})
    assert rep.exit_code != 4 and not rep.report.internal_errors, rep.report.internal_errors
    assert len(rep) == 4, rep.report.to_json()
    for name in ("lab_milp", "lab_smt", "lab_find"):
        v = rep[name]
        assert "internal error" not in (v.reason or ""), (name, v.reason)
        # the model reads g (y's labels do): the flips on data find a pair the pipeline's own predict splits
        assert v.status == "violated", (name, v.status, v.reason)
        pair = pd.DataFrame([v.witness.features, v.witness.features_prime])[["g", "a", "b"]]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lab = pipe.predict(pair.astype({"a": int, "b": float}))
        assert lab[0] != lab[1], (name, v.witness)
    v = rep["logit"]
    assert v.status == "unknown" and "internal error" not in (v.reason or ""), v.reason
    assert "logit" in v.reason or "binary" in v.reason, v.reason


def test_a_two_class_multi_softprob_xgb_final_predict_is_refused_in_one_true_sentence(tmp_path):
    """XGBClassifier(objective="multi:softprob", num_class=2).predict returns a 0 / 1 column per class (XGBoost's
    multi-label branch: two columns for two classes); fairspec reshaped it to 2n labels for n rows and said
    "output predict_proba[:, 1] has shape (n, 2)", which is not what is wrong. Now the sentence names predict."""
    xgb = pytest.importorskip("xgboost")
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    _, data = _pipe("multiclass")
    pre = ColumnTransformer([("oh", OneHotEncoder(sparse_output=False), ["g"]), ("p", "passthrough", ["a", "b"])])
    clf = xgb.XGBClassifier(objective="multi:softprob", num_class=2, n_estimators=3, max_depth=2, n_jobs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = Pipeline([("pre", pre), ("clf", clf)]).fit(data[["g", "a", "b"]], data["y"])
        assert np.asarray(pipe.predict(data.head(3)[["g", "a", "b"]])).shape == (3, 2)
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC + _prop("lab", "label(m(x)) == label(m(x'))", "  mode = find\n"))
    doc = fairspec.check(spec, models={"m": pipe}, data={"d": data}).to_dict()
    assert doc["exit_code"] == 2 and not doc["properties"], doc
    assert "its predict returns an array of shape (" in doc["error"] and "multi:softprob" in doc["error"], doc["error"]
    assert "\n" not in doc["error"] and "predict_proba" not in doc["error"], doc["error"]
