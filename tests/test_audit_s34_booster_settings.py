"""Session 34 audit (h6, round 2): booster settings that change the library's predict but not the trees fairspec reads.

fairspec reads a LightGBM booster as its trees' leaf values and checks the reading against the library's raw score at
probe points within 1e-5 (fairspec.models.trees._self_check). A LightGBM *linear tree* (``linear_tree=True``; the file
says ``is_linear=1``) adds, in each leaf, ``sum(leaf_coeff[i] * x[leaf_features[i]])`` to ``leaf_const``: a part of the
prediction that the leaf values do not show. With coefficients small enough to pass the self-check, a proof resting on
which inputs the trees read was about another model. Truth here: brute force on the library's own predict."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")

SPEC = """features F {
  a : int in [0, 3]
  g : {A, B} protected
}
model m = lightgbm("m.txt")
encode F for m {
  a : raw
  g : code {A = 0, B = 1}
}
property pr {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure |prob(m(x)) - prob(m(x'))| <= 0
}
"""
GRID = np.array(list(itertools.product(range(4), range(2))), dtype=float)


def _linear_file(tmp_path, coeff: float, g: int = 1):
    """A LightGBM file of three trees splitting on a only, made linear trees whose every leaf adds ``coeff * g``
    (``is_linear=1``, ``leaf_const`` its leaf value, ``leaf_features`` g, ``leaf_coeff`` coeff)."""
    rng = np.random.default_rng(0)
    X = np.c_[rng.integers(0, 4, 400), rng.integers(0, 2, 400)].astype(float)
    y = ((X[:, 0] + rng.normal(0, 1, 400)) > 1.5).astype(int)
    X = X if g == 1 else X[:, ::-1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = lgb.LGBMClassifier(n_estimators=3, num_leaves=3, verbose=-1, min_child_samples=5).fit(X, y)
    out = []
    for line in m.booster_.model_to_string().splitlines():
        if line.startswith(("tree_sizes=", "is_linear=")):
            continue      # written below; the blocks change size: LightGBM then reads them in turn
        assert not (line.startswith("split_feature=") and str(g) in line.split("=")[1].split()), line
        if line.startswith("leaf_value="):
            values = line.split("=", 1)[1].split()
        out.append(line)
        if line.startswith("internal_count="):
            n = len(values)
            out += ["is_linear=1", "leaf_const=" + " ".join(values), "num_features=" + " ".join(["1"] * n),
                    "leaf_features=" + " ".join([str(g)] * n) + " ", "leaf_coeff=" + " ".join([repr(coeff)] * n) + " "]
    path = tmp_path / "m.txt"
    path.write_text("\n".join(out) + "\n")
    return path, m


@pytest.mark.parametrize("enumerate_pairs", ["1", "0"])
@pytest.mark.parametrize("coeff", [1e-7, 0.0])
def test_lightgbm_linear_tree_is_not_read_as_its_leaf_values(tmp_path, monkeypatch, coeff, enumerate_pairs):
    from fairspec.pipeline import check

    if enumerate_pairs == "0":
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    path, _ = _linear_file(tmp_path, coeff)
    p = lgb.Booster(model_file=str(path)).predict(GRID)
    truth = "holds" if all(p[i] == p[i + 1] for i in range(0, len(GRID), 2)) else "violated"
    assert truth == ("violated" if coeff else "holds")
    (tmp_path / "s.fair").write_text(SPEC)
    rep = check(str(tmp_path / "s.fair"))           # a model file: treefile refuses it at load (FS401)
    assert [d.code for d in rep.diagnostics if d.severity == "error"] == ["FS401"], rep.diagnostics
    assert "linear-leaf" in rep.diagnostics[0].message


PIPE_SPEC = """data d = csv("d.csv", label = y == 1)
features F from d {
  g : {A, B} protected
  a : int in [0, 3]
}
model m = sklearn("m.skops")
property pr {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure |prob(m(x)) - prob(m(x'))| <= 0
}
"""


@pytest.mark.parametrize("enumerate_pairs", ["1", "0"])
def test_pipeline_lgbm_linear_tree_is_not_read_as_its_leaf_values(tmp_path, monkeypatch, enumerate_pairs):
    """The same linear trees as the final LGBMClassifier of a folded pipeline (fairspec.models.pipeline_boosters,
    which reads the booster in memory, not through the file loader): before, `holds (proved)` while the pipeline's
    own predict_proba differs between g = A and g = B by 3e-8."""
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OrdinalEncoder

    import fairspec

    if enumerate_pairs == "0":
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    path, clf = _linear_file(tmp_path, 1e-7, g=0)
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"g": rng.choice(["A", "B"], 200), "a": rng.integers(0, 4, 200)})
    pre = ColumnTransformer([("g", OrdinalEncoder(categories=[["A", "B"]]), ["g"]), ("a", "passthrough", ["a"])])
    pipe = Pipeline([("pre", pre), ("clf", clf)]).fit(frame, rng.integers(0, 2, 200))
    clf._Booster = lgb.Booster(model_file=str(path))        # the linear trees (fit above refits clf: put back)
    grid = pd.DataFrame([{"g": g, "a": a} for a in range(4) for g in "AB"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = pipe.predict_proba(grid)[:, 1]
    assert any(p[i] != p[i + 1] for i in range(0, len(grid), 2))       # truth: violated
    (tmp_path / "s.fair").write_text(PIPE_SPEC)
    rep = fairspec.check(tmp_path / "s.fair", models={"m": pipe}, data={"d": frame.assign(y=0)})
    assert rep.exit_code != 4 and not rep.report.internal_errors, rep.report.internal_errors
    v = rep["pr"]
    status = v.status.value if hasattr(v.status, "value") else str(v.status)
    assert status in ("violated", "unknown"), (status, v.reason)


def _early_stop_model():
    rng = np.random.default_rng(0)
    X = np.c_[rng.integers(0, 4, 400), rng.integers(0, 2, 400)].astype(float)
    y = ((X[:, 0] + X[:, 1] + rng.normal(0, 1, 400)) > 2).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = lgb.LGBMClassifier(n_estimators=20, verbose=-1, pred_early_stop=True, pred_early_stop_margin=0.01,
                               pred_early_stop_freq=1).fit(X, y)
        assert np.abs(m.predict_proba(X)[:, 1] - m.booster_.predict(X)).max() > 0.1   # another model than the trees
    return m


def test_api_lgbm_with_pred_early_stop_is_refused(tmp_path):
    """The API writes an LGBMClassifier as its booster's text file (save_model), which does not record
    pred_early_stop: fairspec checked the booster, whose predict_proba is 0.4 away from the object's own."""
    import fairspec

    (tmp_path / "s.fair").write_text(SPEC)
    with pytest.raises(fairspec.FairspecError, match=r"^model 'm': the LightGBM model given predicts with "
                                                     r"pred_early_stop=True"):
        fairspec.check(tmp_path / "s.fair", models={"m": _early_stop_model()})


def test_pipeline_lgbm_with_pred_early_stop_is_not_read_as_trees():
    from fairspec.models.base import UnsupportedModel
    from fairspec.models.pipeline_boosters import booster_columns, booster_trees

    m = _early_stop_model()
    for read in (lambda: booster_trees(m, "predict_proba", 1), lambda: booster_columns(m)):
        with pytest.raises(UnsupportedModel) as e:
            read()
        assert e.value.node_name == "pred_early_stop"
    m.set_params(pred_early_stop=False)
    assert booster_trees(m, "predict_proba", 1).n_inputs == 2


@pytest.mark.parametrize("boosting", ["rf", "gbdt"])
def test_lightgbm_random_forest_is_not_read_as_trees(boosting):
    """A LightGBM random forest: predict(raw_score=True) is its trees' sum (what the self-check compares), but its
    probability is the logistic of their mean; read as trees, prob(m(x)) was the logistic of the sum (0.31 off)."""
    from scipy.special import expit

    from fairspec.models import tree_columns as TC
    from fairspec.models import trees as T
    from fairspec.models.base import UnsupportedModel

    rng = np.random.default_rng(0)
    X = np.c_[rng.integers(0, 4, 600), rng.integers(0, 2, 600)].astype(float)
    y = ((X[:, 0] + 0.7 * X[:, 1] + rng.normal(0, 0.5, 600)) > 1.5).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = lgb.LGBMClassifier(n_estimators=5, verbose=-1, boosting_type=boosting, subsample=0.5, subsample_freq=1,
                               min_child_samples=5).fit(X, y)
        p = m.predict_proba(GRID)[:, 1]
    r = m.booster_.predict(GRID, raw_score=True)
    if boosting == "rf":
        assert np.abs(p - expit(r)).max() > 0.1 and np.allclose(p, expit(r / 5))
        for read in (lambda: T.from_lightgbm(m.booster_), lambda: TC.lightgbm_columns(m.booster_)):
            with pytest.raises(UnsupportedModel) as e:
                read()
            assert e.value.node_name == "average_output"
    else:
        assert np.allclose(expit(T.from_lightgbm(m.booster_).aggregate(GRID)), p, rtol=0, atol=1e-12)
