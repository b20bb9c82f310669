"""An XGBClassifier / LGBMClassifier as the final step of a folded scikit-learn pipeline is read as
trees (fairspec.models.pipeline_boosters): its booster's trees with the folded encoding in front, as a
scikit-learn tree in the same pipeline. Before, on a large domain the solvers said ``unknown`` ("the milp
backend cannot encode this model"). Each verdict is checked against the pipeline's own predict /
predict_proba: on an enumerable domain against every point, on a continuous one a holds must be proved
(and no pair of a dense grid breaks it) and a violation's witness must break it on the pipeline."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("xgboost")
pytest.importorskip("lightgbm")

import fairspec  # noqa: E402

SPEC = """data d = csv("d.csv", label = y == 1)
features F from d {
  g : {n, y}  protected
  f0 : DOM
  f1 : {a, b, c}
}
model m = sklearn("m.skops")

property p {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure ENSURE
}
"""

DOMS = {"small": "int in [0, 100]", "large": "real in [0, 100]"}


def _pipe(lib, fair, **kw):
    import lightgbm as lgb
    import xgboost as xgb
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(0)
    n = 400
    frame = pd.DataFrame({"g": rng.choice(["n", "y"], n), "f0": rng.uniform(0, 100, n).round(2),
                          "f1": rng.choice(list("abc"), n)})
    y = (frame.f0 > 40) ^ (frame.f1 == "b")
    if not fair:
        y = y ^ ((frame.g == "y") & (frame.f0 > 70))
    y = y.astype(int)
    final = xgb.XGBClassifier(n_estimators=5, max_depth=3, n_jobs=1, random_state=0, **kw) if lib == "xgb" else \
        lgb.LGBMClassifier(n_estimators=5, num_leaves=6, min_child_samples=5, verbose=-1, n_jobs=1, **kw)
    pre = ColumnTransformer([("oh", OneHotEncoder(), ["g", "f1"]), ("sc", StandardScaler(), ["f0"])])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Pipeline([("pre", pre), ("clf", final)]).fit(frame, y), frame.assign(y=y)


def _grid(dom):
    f0 = np.arange(0, 101, dtype=np.float64) if dom == "small" else np.linspace(0.0, 100.0, 20001)
    rows = [{"g": g, "f0": v, "f1": f} for g in "ny" for f in "abc" for v in f0]
    return pd.DataFrame(rows)


def _breaks(pipe, ensure, frame) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v = pipe.predict(frame) if ensure.startswith("label") else pipe.predict_proba(frame)[:, 1]
    a, b = np.asarray(v).reshape(2, -1)
    return bool(np.any(a != b)) if ensure.startswith("label") else bool(np.any(np.abs(a - b) > 0.01))


def _exact(pipe, ensure, pair, x) -> bool:
    """Does the pipeline's own predict break the property at an f0 within 64 ulps of the witness's shown
    one (the report rounds f0 to a short decimal: 69.89 for 69.89000000000001) that the pipeline encodes
    as the witness's x, read in float32 as XGBoost reads it (LightGBM's float64 x is one of these)?"""
    v = float(pair.f0[0])
    want = np.asarray(x, dtype=np.float32)
    for k in sorted(range(-64, 65), key=abs):
        vv = v
        for _ in range(abs(k)):
            vv = float(np.nextafter(vv, np.inf if k > 0 else -np.inf))
        p = pair.assign(f0=vv)
        if np.array_equal(pipe[0].transform(p)[0].astype(np.float32), want) and _breaks(pipe, ensure, p):
            return True
    return False


ENSURES = ["label(m(x)) == label(m(x'))", "|prob(m(x)) - prob(m(x'))| <= 0.01"]


@pytest.mark.parametrize("lib", ["xgb", "lgb"])
@pytest.mark.parametrize("dom", ["small", "large"])
@pytest.mark.parametrize("fair", [True, False])
@pytest.mark.parametrize("ensure", ENSURES)
def test_a_pipelines_booster_is_decided_as_trees(tmp_path, lib, dom, fair, ensure):
    pipe, data = _pipe(lib, fair)
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC.replace("DOM", DOMS[dom]).replace("ENSURE", ensure))
    rep = fairspec.check(spec, models={"m": pipe}, data={"d": data})
    assert rep.exit_code != 4 and not rep.report.internal_errors, rep.report.internal_errors
    v = rep["p"]
    broken = _breaks(pipe, ensure, _grid(dom))
    if v.status == "holds":
        assert v.how is not None and v.how.startswith("proved"), v.how
        assert not broken
    else:
        assert v.status == "violated", (v.status, v.reason)
        w = v.witness
        pair = pd.DataFrame([w.features, w.features_prime])
        if dom == "small":
            pair = pair.astype({"f0": int})
            assert _breaks(pipe, ensure, pair)
        else:
            assert _exact(pipe, ensure, pair, w.x)
    if dom == "small":
        assert (v.status == "violated") == broken
    assert fair == (v.status == "holds"), (v.status, v.reason)


def test_a_booster_whose_predict_its_trees_do_not_say_is_not_read_as_trees():
    # XGBClassifier(missing=0.0) sends 0 down the default branches: its thresholds do not say its predict
    from fairspec.models.base import UnsupportedModel
    from fairspec.models.pipeline_boosters import booster_trees

    pipe, _ = _pipe("xgb", True, missing=0.0)
    with pytest.raises(UnsupportedModel, match="missing"):
        booster_trees(pipe[-1], "predict_proba", 1)
    ens = booster_trees(_pipe("xgb", True)[0][-1], "predict_proba", 1)
    assert ens.source == "xgboost" and len(ens.trees) == 5


def test_an_early_stopped_xgbclassifier_is_read_with_the_rounds_its_predict_uses(tmp_path):
    # XGBClassifier.predict uses rounds 0 .. best_iteration; its booster holds every round
    import xgboost as xgb
    from sklearn.pipeline import Pipeline

    from fairspec.models.pipeline_boosters import booster_trees

    pipe, data = _pipe("xgb", False)
    X = pipe[0].transform(data.drop(columns="y"))
    y = data.y.to_numpy()
    flipped = np.where(np.arange(len(y)) % 3 == 0, 1 - y, y)      # later rounds fit noise the eval set lacks
    clf = xgb.XGBClassifier(n_estimators=40, max_depth=3, n_jobs=1, random_state=0, learning_rate=0.5,
                            early_stopping_rounds=3).fit(X, flipped, eval_set=[(X, y)], verbose=False)
    best = int(clf.best_iteration)
    assert best + 1 < 40
    ens = booster_trees(clf, "predict_proba", 1)
    assert len(ens.trees) == best + 1
    pipe = Pipeline([("pre", pipe[0]), ("clf", clf)])
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC.replace("DOM", DOMS["small"]).replace("ENSURE", ENSURES[0]))
    v = fairspec.check(spec, models={"m": pipe}, data={"d": data})["p"]
    assert (v.status == "violated") == _breaks(pipe, ENSURES[0], _grid("small")), (v.status, v.reason)
    assert v.status in ("holds", "violated"), v.reason


SPARSE_SPEC = """data d = csv("d.csv", label = y == 1)
features F from d {
  g : {n, y}  protected
  p : {a, b, c, d, e}
  q : {a, b, c, d, e}
  r : {a, b, c, d, e}
}
model m = sklearn("m.skops")

property p {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure ENSURE
}
"""


@pytest.mark.parametrize("ensure", ENSURES)
def test_a_sparse_column_transformer_before_xgboost_is_evaluated_whole(tmp_path, ensure):
    # a ColumnTransformer whose output is sparse (one-hot columns at density < sparse_threshold 0.3) hands
    # XGBoost a CSR matrix, whose absent entries -- the one-hot zeros -- XGBoost reads as missing (the default
    # branch), not as 0: folded, the booster was evaluated on the dense encoding, another model (holds (proved)
    # where the pipeline's own predict is violated); now it is evaluated whole, by its own predict
    import itertools

    import xgboost as xgb
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    from fairspec.models.sklearn_pipeline import fold

    rng = np.random.default_rng(0)
    n = 600
    frame = pd.DataFrame({c: rng.choice(list("abcde"), n) for c in "pqr"}).assign(g=rng.choice(["n", "y"], n))
    y = ((frame.p == "a") | ((frame.g == "y") & (frame.q == "b"))).astype(int)
    pre = ColumnTransformer([("oh", OneHotEncoder(), ["g", "p", "q", "r"])])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = Pipeline([("pre", pre), ("clf", xgb.XGBClassifier(n_estimators=5, max_depth=3, n_jobs=1))]).fit(frame, y)
    assert pre.sparse_output_
    assert any("sparse matrix" in u for u in fold(pipe).unfoldable)
    dense = Pipeline([("pre", ColumnTransformer([("oh", OneHotEncoder(), ["g", "p", "q", "r"])], sparse_threshold=0)),
                      ("clf", xgb.XGBClassifier(n_estimators=5, max_depth=3, n_jobs=1))]).fit(frame, y)
    assert not fold(dense).unfoldable
    spec = tmp_path / "s.fair"
    spec.write_text(SPARSE_SPEC.replace("ENSURE", ensure))
    v = fairspec.check(spec, models={"m": pipe}, data={"d": frame.assign(y=y)})["p"]
    rows = pd.DataFrame([dict(zip("pqr", t)) for t in itertools.product("abcde", repeat=3)])
    grid = pd.concat([rows.assign(g="n"), rows.assign(g="y")])[["p", "q", "r", "g"]]
    broken = _breaks(pipe, ensure, grid)
    assert broken
    assert v.status == "violated", (v.status, v.reason)
    pair = pd.DataFrame([v.witness.features, v.witness.features_prime])[["p", "q", "r", "g"]]
    assert _breaks(pipe, ensure, pair)
