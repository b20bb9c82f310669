"""Tree models with K classes or a regression objective (issue 25): every output column read as
the library computes it, the trees of every column (checked against the library), and the
library's own class / class probability / value."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from fairspec.backends.trees.runtime import cell_ensemble, library_task, runtime_outputs
from fairspec.models import tree_columns as TC
from fairspec.models import trees as T


def _data(seed=0, n=240):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 5, size=(n, 3)).astype(float)
    y3 = (X[:, 0] + X[:, 1] + rng.integers(0, 2, n)) % 3
    yr = 1.5 * X[:, 0] - X[:, 2] + rng.normal(0, 0.3, n)
    return X, y3, yr


def _grid():
    g = np.meshgrid(*[np.arange(-1, 6, dtype=float)] * 3, indexing="ij")
    return np.stack([a.reshape(-1) for a in g], axis=1)


SKLEARN = [
    ("DecisionTreeClassifier", dict(max_depth=3), "y3"),
    ("RandomForestClassifier", dict(n_estimators=4, max_depth=3, random_state=0), "y3"),
    ("GradientBoostingClassifier", dict(n_estimators=4, max_depth=2, random_state=0), "y3"),
    ("HistGradientBoostingClassifier", dict(max_iter=4, max_depth=2), "y3"),
    ("DecisionTreeRegressor", dict(max_depth=3), "yr"),
    ("RandomForestRegressor", dict(n_estimators=4, max_depth=3, random_state=0), "yr"),
    ("GradientBoostingRegressor", dict(n_estimators=4, max_depth=2, random_state=0), "yr"),
    ("HistGradientBoostingRegressor", dict(max_iter=4, max_depth=2), "yr"),
]


def _sk(name, kw, target):
    import sklearn.ensemble as E
    import sklearn.tree as Tr

    X, y3, yr = _data()
    cls = getattr(E, name, None) or getattr(Tr, name)
    est = cls(**kw).fit(X, y3 if target == "y3" else yr)
    return est


def _cells_agree(ens, X, out):
    """Rows that reach the same leaves in every tree of the union get the same output, bit for bit."""
    leaves = ens.leaves(X)
    seen = {}
    for row, o in zip(map(tuple, leaves), out):
        assert seen.setdefault(row, o) == o


@pytest.mark.parametrize("name,kw,target", SKLEARN, ids=[s[0] for s in SKLEARN])
def test_sklearn_columns_and_runtime(name, kw, target):
    est = _sk(name, kw, target)
    model = SimpleNamespace(format="sklearn", raw=est)
    X = _grid()
    cols = TC.sklearn_columns(est)
    task, k = library_task(model)
    union = cell_ensemble(model)
    assert union is not None and union.features() <= {0, 1, 2}
    if target == "y3":
        assert task == "multiclass" and k == 3 and len(cols) == 3
        c = runtime_outputs(model, X, "class")
        want = np.searchsorted(est.classes_, est.predict(X))
        assert c.dtype == np.int64 and np.array_equal(c, want)
        for j in range(3):
            p = runtime_outputs(model, X, "class_prob", j)
            assert np.array_equal(p, est.predict_proba(X)[:, j])
            _cells_agree(union, X, p)
        assert runtime_outputs(model, X, "value") is None
        _cells_agree(union, X, c)
    else:
        assert task == "regression" and k is None and len(cols) == 1
        v = runtime_outputs(model, X, "value")
        assert np.array_equal(v, est.predict(X))
        assert np.allclose(cols[0].aggregate(X), v, atol=1e-9)
        assert runtime_outputs(model, X, "class") is None
        _cells_agree(union, X, v)


def test_forest_columns_share_their_trees():
    est = _sk(*SKLEARN[1])
    cols = TC.sklearn_columns(est)
    assert len(TC.split_union(cols).trees) == len(est.estimators_)
    X = _grid()
    assert np.allclose(sum(c.aggregate(X) for c in cols), 1.0)


BOOSTERS = [("multi:softprob", "y3"), ("multi:softmax", "y3"), ("reg:squarederror", "yr"), ("reg:absoluteerror", "yr")]


@pytest.mark.parametrize("objective,target", BOOSTERS)
def test_xgboost_columns(objective, target):
    xgb = pytest.importorskip("xgboost")
    X0, y3, yr = _data(1)
    extra = {"num_class": 3} if objective.startswith("multi") else {}
    b = xgb.train({"objective": objective, "max_depth": 2, "nthread": 1, **extra},
                  xgb.DMatrix(X0, label=y3 if target == "y3" else yr), 5)
    cols = TC.xgboost_columns(b)
    X = _grid()
    margins = np.asarray(b.predict(xgb.DMatrix(X), output_margin=True), dtype=np.float64).reshape(len(X), -1)
    assert len(cols) == margins.shape[1] == (3 if target == "y3" else 1)
    for j, c in enumerate(cols):
        assert np.allclose(c.aggregate(X), margins[:, j], atol=1e-5)
    union = TC.split_union(cols)
    _cells_agree(union, X, [tuple(r) for r in margins])


@pytest.mark.parametrize("objective,target", [("multiclass", "y3"), ("regression", "yr")])
def test_lightgbm_columns(objective, target):
    lgb = pytest.importorskip("lightgbm")
    X0, y3, yr = _data(2)
    extra = {"num_class": 3} if objective == "multiclass" else {}
    b = lgb.train({"objective": objective, "num_leaves": 4, "verbose": -1, "min_data_in_leaf": 5, "num_threads": 1,
                   **extra}, lgb.Dataset(X0, label=y3 if target == "y3" else yr), 4)
    cols = TC.lightgbm_columns(b)
    X = _grid()
    raw = np.asarray(b.predict(X, raw_score=True), dtype=np.float64).reshape(len(X), -1)
    assert len(cols) == raw.shape[1]
    for j, c in enumerate(cols):
        assert np.allclose(c.aggregate(X), raw[:, j], atol=1e-9)
    _cells_agree(TC.split_union(cols), X, [tuple(r) for r in raw])


@pytest.mark.parametrize("objective,target", BOOSTERS + [("rank:pairwise", "yr")])
def test_xgboost_loader_reads_the_task(tmp_path, objective, target):
    xgb = pytest.importorskip("xgboost")
    from fairspec.models.base import ModelLoadError
    from fairspec.models.boosted import load_xgboost

    X0, y3, yr = _data(1)
    extra = {"num_class": 3} if objective.startswith("multi") else {}
    b = xgb.train({"objective": objective, "max_depth": 2, "nthread": 1, **extra},
                  xgb.DMatrix(X0, label=y3 if target == "y3" else yr), 3)
    b.save_model(str(tmp_path / "m.json"))
    if objective.startswith("rank:"):
        with pytest.raises(ModelLoadError, match="objective 'rank:pairwise'"):
            load_xgboost(tmp_path / "m.json")
        return
    m = load_xgboost(tmp_path / "m.json")
    X = _grid()
    if target == "y3":
        assert m.task == "multiclass" and m.readout.columns == 3
        margins = np.asarray(b.predict(xgb.DMatrix(X), output_margin=True), dtype=np.float64)
        want = np.argmax(margins, axis=1)
        assert np.array_equal(m.predict_class(X), want)
        assert np.array_equal(runtime_outputs(m, X, "class"), want)
        if objective == "multi:softprob":
            assert np.array_equal(m.outputs(X), np.asarray(b.predict(xgb.DMatrix(X)), dtype=np.float64))
            assert np.array_equal(runtime_outputs(m, X, "class_prob", 1), m.outputs(X)[:, 1])
        else:   # softmax: the library predicts the class; fairspec reads its margins
            assert np.array_equal(np.asarray(b.predict(xgb.DMatrix(X))).astype(int), want)
            assert runtime_outputs(m, X, "class_prob", 1) is None
        with pytest.raises(Exception, match="no one binary score|has no"):
            m.score(X)
        with pytest.raises(Exception):
            m.tree_ensemble()
    else:
        assert m.task == "regression"
        v = np.asarray(b.predict(xgb.DMatrix(X)), dtype=np.float64)
        assert np.array_equal(m.value(X), v) and np.array_equal(runtime_outputs(m, X, "value"), v)


@pytest.mark.parametrize("objective,target", [("multiclass", "y3"), ("regression", "yr"), ("lambdarank", "y3")])
def test_lightgbm_loader_reads_the_task(tmp_path, objective, target):
    lgb = pytest.importorskip("lightgbm")
    from fairspec.models.base import ModelLoadError
    from fairspec.models.boosted import load_lightgbm

    X0, y3, yr = _data(2)
    extra = {"num_class": 3} if objective == "multiclass" else {}
    ds = lgb.Dataset(X0, label=y3 if target == "y3" else yr, group=[len(X0)] if objective == "lambdarank" else None)
    b = lgb.train({"objective": objective, "num_leaves": 4, "verbose": -1, "min_data_in_leaf": 5, "num_threads": 1,
                   **extra}, ds, 3)
    b.save_model(str(tmp_path / "m.txt"))
    if objective == "lambdarank":
        with pytest.raises(ModelLoadError, match="objective"):
            load_lightgbm(tmp_path / "m.txt")
        return
    m = load_lightgbm(tmp_path / "m.txt")
    X = _grid()
    if target == "y3":
        P = np.asarray(b.predict(X), dtype=np.float64)
        assert m.task == "multiclass" and np.array_equal(m.outputs(X), P)
        assert np.array_equal(m.predict_class(X), np.argmax(P, axis=1))
        assert np.array_equal(runtime_outputs(m, X, "class"), np.argmax(P, axis=1))
    else:
        assert m.task == "regression" and np.array_equal(m.value(X), np.asarray(b.predict(X), dtype=np.float64))


def test_xgboost_thresholds_are_the_float32_the_library_compares():
    """XGBoost writes its float32 thresholds as the shortest decimal ("0.44444445"); read as float64
    that decimal is another number, and an input whose float32 is the threshold would go left in
    fairspec's cells and right in XGBoost (found by the trees-regression family, seed 1000088)."""
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(3)
    X = np.round(rng.random((200, 2)) * 9) / 9           # grid points k/9, thresholds between or on them
    y = X[:, 0] * 3 + (X[:, 1] > 4 / 9) + rng.normal(0, 0.1, 200)
    b = xgb.train({"objective": "reg:squarederror", "max_depth": 3, "nthread": 1}, xgb.DMatrix(X, label=y), 4)
    for ens in (TC.xgboost_columns(b)[0], T.from_xgboost(xgb.train({"objective": "binary:logistic", "max_depth": 2,
                                                                     "nthread": 1},
                                                                    xgb.DMatrix(X, label=(y > 2).astype(float)), 3))):
        for t in ens.trees:
            inner = t.left >= 0
            assert np.all(t.threshold[inner] == t.threshold[inner].astype(np.float32).astype(np.float64))
    G = np.array([[a / 9, c / 9] for a in range(10) for c in range(10)])
    cols = TC.xgboost_columns(b)
    _cells_agree(TC.split_union(cols), G, np.asarray(b.predict(xgb.DMatrix(G)), dtype=np.float64))
