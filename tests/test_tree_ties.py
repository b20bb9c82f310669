"""``TreeEnsemble.decide`` at an exact tie (S equal to the threshold) is the library's predict (h1 of s24).

It was ``S > threshold`` always, the strict side: the library's own tie rule read for the ensemble's
class disagreed there -- ``index = 0`` (class 0's ensemble) of a forest / tree, XGBoost, LightGBM and
HistGradientBoosting, which all call a tie class 0, and GradientBoosting's class 1, whose predict is
``decision_function >= 0``. No backend calls it (the tree engines read ``TreeEnsemble.threshold`` and
replay their pairs on the library; labels are the loaded model's ``decide``), but the tests of the
converters compare with it. Stumps with an exact tie, against the library's predict, both indices.
"""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pytest

X1 = np.array([[0.0], [0.0], [1.0], [1.0], [1.0], [0.0], [1.0], [0.0]])   # one input: 0 ties, 1 does not
Y1 = np.array([0, 1, 1, 1, 0, 0, 1, 0])                                    # 1 / 3 at 0, 3 / 1 at 1: balanced


def _expect(library_classes, index):
    """The declared class's label from the library's predicted class indices."""
    return (np.asarray(library_classes) == (0 if index == 0 else 1)).astype(np.int64)


def _tied(ens, X):
    s = ens.aggregate(X)
    assert (s == ens.threshold).any() and (s != ens.threshold).any(), (s, ens.threshold)


@pytest.mark.parametrize("index", [0, 1])
def test_a_decision_tree_and_a_forest_tie_as_predict(index):
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.tree import DecisionTreeClassifier

    from fairspec.models.trees import from_sklearn

    X, y = X1[:4], np.array([0, 1, 1, 1])                       # the leaf at 0 holds one of each class
    for est in (DecisionTreeClassifier(max_depth=1, random_state=0).fit(X, y),
                RandomForestClassifier(n_estimators=2, max_depth=1, bootstrap=False, random_state=0).fit(X, y)):
        assert est.predict_proba([[0.0]]).tolist() == [[0.5, 0.5]]
        ens = from_sklearn(est, index=index)
        _tied(ens, X)
        assert ens.decide(X).tolist() == _expect(est.predict(X), index).tolist(), (type(est).__name__, index)


@pytest.mark.parametrize("name", ["GradientBoostingClassifier", "HistGradientBoostingClassifier"])
@pytest.mark.parametrize("index", [0, 1])
def test_gradient_boosting_ties_as_predict(name, index):
    # a margin of exactly 0 at input 0 (balanced classes: the prior's log-odds is 0; the leaf set to 0):
    # GradientBoosting's predict calls it class 1, HistGradientBoosting's class 0
    import sklearn.ensemble

    from fairspec.models.trees import from_sklearn

    if name == "GradientBoostingClassifier":
        est = sklearn.ensemble.GradientBoostingClassifier(n_estimators=1, max_depth=1, random_state=0).fit(X1, Y1)
        tree = est.estimators_[0, 0].tree_
        tree.value[tree.apply(np.array([[0.0]], dtype=np.float32))[0]] = 0.0
    else:
        est = sklearn.ensemble.HistGradientBoostingClassifier(max_iter=1, max_depth=2, min_samples_leaf=1,
                                                               early_stopping=False).fit(X1, Y1)
        nodes = est._predictors[0][0].nodes
        leaf = np.flatnonzero(nodes["is_leaf"])
        nodes["value"][leaf[0]] = 0.0
    assert float(est._raw_predict(X1).ravel()[0] if name.startswith("Hist") else est.decision_function(X1)[0]) == 0.0
    ens = from_sklearn(est, index=index)
    _tied(ens, X1)
    assert ens.decide(X1).tolist() == _expect(est.predict(X1), index).tolist(), (name, index)


def _xgb_stump(tmp_path, objective, tie_margin):
    """A one-stump XGBoost booster (g < 0.5: margin ``tie_margin``; else ``tie_margin + 0.3``)."""
    xgb = pytest.importorskip("xgboost")
    X = np.array([[g] for g in (0.0, 1.0) for _ in range(4)])
    b = xgb.train({"objective": objective, "max_depth": 1, "nthread": 1, "base_score": 0.5, "min_child_weight": 0},
                  xgb.DMatrix(X, label=X[:, 0]), 1)
    doc = json.loads(b.save_raw("json"))
    doc["learner"]["learner_model_param"]["base_score"] = "5E-1" if objective == "binary:logistic" else "0E0"
    t = doc["learner"]["gradient_booster"]["model"]["trees"][0]
    assert t["left_children"][0] == 1
    t["split_conditions"][1], t["split_conditions"][2] = tie_margin, tie_margin + 0.3
    path = tmp_path / "tie.json"
    path.write_text(json.dumps(doc))
    clf = xgb.XGBClassifier()
    clf.load_model(str(path))
    return path, clf, X


@pytest.mark.parametrize("objective,decl,cut", [("binary:logistic", {}, 0.0),
                                                ("binary:logistic", {"output": "margin"}, 0.0),
                                                ("binary:logitraw", {"output": "predict"}, 0.5),
                                                ("binary:logitraw", {"output": "margin"}, 0.0)])
@pytest.mark.parametrize("index", [0, 1])
def test_xgboost_ties_as_predict(tmp_path, objective, decl, cut, index):
    import xgboost as xgb

    from fairspec.backends.trees.runtime import runtime_outputs
    from fairspec.models import load_model

    path, clf, X = _xgb_stump(tmp_path, objective, cut)
    margin = clf.get_booster().predict(xgb.DMatrix(X), output_margin=True)
    assert (margin == cut).sum() == 4
    library = (margin > cut).astype(np.int64)          # binary:logitraw by its margin rule: > 0
    if decl.get("output") != "margin":
        library = clf.predict(X)                       # XGBClassifier.predict: class 0 at the tie
    loaded = load_model("xgboost", path, index=index, **decl)
    ens = loaded.tree_ensemble()
    _tied(ens, X)
    want = _expect(library, index)
    assert runtime_outputs(loaded, X, "label").tolist() == want.tolist()
    assert ens.decide(X).tolist() == want.tolist(), (objective, decl, index)


@pytest.mark.parametrize("index", [0, 1])
def test_lightgbm_ties_as_predict(tmp_path, index):
    lgb = pytest.importorskip("lightgbm")
    from fairspec.backends.trees.runtime import runtime_outputs
    from fairspec.models import load_model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = lgb.train({"objective": "binary", "num_leaves": 2, "min_data_in_leaf": 1, "verbose": -1,
                       "num_threads": 1, "boost_from_average": False}, lgb.Dataset(X1, label=Y1), 1)
    text = re.sub(r"leaf_value=\S+ \S+", "leaf_value=0 0.25", b.model_to_string(), count=1)
    path = tmp_path / "tie.txt"
    path.write_text(text)
    booster = lgb.Booster(model_file=str(path))
    raw = booster.predict(X1, raw_score=True)
    assert (raw == 0).any() and (raw != 0).any(), raw
    p = booster.predict(X1)
    library = np.argmax(np.c_[1 - p, p], axis=1)       # LGBMClassifier.predict: the first largest
    loaded = load_model("lightgbm", path, index=index)
    ens = loaded.tree_ensemble()
    _tied(ens, X1)
    want = _expect(library, index)
    assert runtime_outputs(loaded, X1, "label").tolist() == want.tolist()
    assert ens.decide(X1).tolist() == want.tolist(), index
