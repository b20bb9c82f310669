"""Every output column of a tree model (issue 25): multiclass classifiers and regressions.

One :class:`~fairspec.models.trees.TreeEnsemble` per output column (:func:`sklearn_columns`,
:func:`xgboost_columns`, :func:`lightgbm_columns`), each checked against the library's own column
(:func:`fairspec.models.trees._self_check`), and :func:`split_union`, every tree once with its
values dropped: the split tests that cut a pair domain's cells. Moved out of
:mod:`fairspec.models.trees` (the single-output converters and the ensemble itself), unchanged.
Only numpy is imported at module level.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Sequence

import numpy as np

from fairspec.models.network import UnsupportedModel
from fairspec.models.sklearn_hidden import check_constant_init, check_inputs_in_order
from fairspec.models.trees import (
    SKLEARN_REGRESSORS, SKLEARN_TREES, Tree, TreeEnsemble, _lightgbm_probed, _lightgbm_trees, _probed,
    _self_check, _sk_tree, _with_base, _xgb_categorical, _xgb_tree, from_sklearn, xgb_matrix,
)


def _check_column(ens: TreeEnsemble, reference, what: str, domains=None) -> TreeEnsemble:
    return _self_check(_with_base(ens, reference, domains) if ens.link == "logistic" else ens, reference, what,
                       domains=domains)


def sklearn_columns(est) -> list[TreeEnsemble]:
    """One :class:`TreeEnsemble` per output column of a fitted scikit-learn tree model: each class's
    ``predict_proba`` column (trees and forests: the same trees, each class's shares) or
    ``decision_function`` column (gradient boosting: one tree per class and stage; a binary model's
    one column), or a regressor's ``predict``. Each is checked against the library's own column
    (:func:`_self_check`). Their aggregates are the columns; only their split tests (and, for a
    binary model, :func:`from_sklearn`) mean anything beyond that: they are not binary scores."""
    name = type(est).__name__
    width = int(getattr(est, "n_features_in_", 0) or 0)
    classes = list(getattr(est, "classes_", []))
    if getattr(est, "n_outputs_", 1) != 1:
        raise UnsupportedModel(name, "n_outputs_", "multi-output trees are not supported")
    if name in ("DecisionTreeClassifier", "RandomForestClassifier", "ExtraTreesClassifier"):
        return [from_sklearn(est, "predict_proba", c) for c in range(len(classes))]
    if name in ("DecisionTreeRegressor", "RandomForestRegressor", "ExtraTreesRegressor"):
        members = [est] if name == "DecisionTreeRegressor" else list(est.estimators_)
        trees = [_sk_tree(m.tree_, np.asarray(m.tree_.value, dtype=np.float64)[:, 0, 0]) for m in members]
        ens = TreeEnsemble(tuple(trees), width, 0.0, "identity", name, divisor=float(len(members)))
        return [_self_check(ens, lambda X: est.predict(X), name)]
    if name in ("GradientBoostingClassifier", "GradientBoostingRegressor"):
        check_constant_init(est)
        lr = float(est.learning_rate)
        k = est.estimators_.shape[1]
        raw = (lambda X: est.decision_function(X)) if name.endswith("Classifier") else (lambda X: est.predict(X))
        out = []
        for c in range(k):
            trees = [_sk_tree(s[c].tree_, lr * np.asarray(s[c].tree_.value, dtype=np.float64)[:, 0, 0])
                     for s in est.estimators_]
            col = (lambda X, c=c: np.asarray(raw(X)).reshape(len(X), -1)[:, c])
            out.append(_check_column(TreeEnsemble(tuple(trees), width, 0.0, "logistic", name), col, name))
        return out
    if name in ("HistGradientBoostingClassifier", "HistGradientBoostingRegressor"):
        check_inputs_in_order(est)
        k = len(est._predictors[0]) if est._predictors else 1
        raw = (lambda X: est.decision_function(X)) if name.endswith("Classifier") else (lambda X: est.predict(X))
        out = []
        for c in range(k):
            trees = []
            for it in est._predictors:
                nodes = it[c].nodes
                leaf = nodes["is_leaf"].astype(bool)
                if np.any(nodes["is_categorical"][~leaf]):
                    raise UnsupportedModel(name, "is_categorical", "categorical splits are not supported")
                trees.append(Tree(np.where(leaf, -1, nodes["feature_idx"].astype(np.int64)),
                                  np.where(leaf, 0.0, nodes["num_threshold"]),
                                  np.where(leaf, -1, nodes["left"].astype(np.int64)),
                                  np.where(leaf, -1, nodes["right"].astype(np.int64)),
                                  np.where(leaf, nodes["value"], 0.0)))
            col = (lambda X, c=c: np.asarray(raw(X)).reshape(len(X), -1)[:, c])
            out.append(_check_column(TreeEnsemble(tuple(trees), width, 0.0, "logistic", name), col, name))
        return out
    raise UnsupportedModel(name, "estimator", f"estimator {name} is not a tree model "
                           f"(supported: {', '.join(SKLEARN_TREES + SKLEARN_REGRESSORS)})")


def xgboost_columns(booster, domains=None) -> list[TreeEnsemble]:
    """One ensemble per output column of an XGBoost ``gbtree`` booster of any objective (each
    class's margin for ``multi:softprob`` / ``multi:softmax``, the one margin of ``binary:`` and
    ``reg:`` objectives), each checked against ``predict(output_margin=True)``."""
    import xgboost as xgb

    cfg = json.loads(booster.save_config())
    learner = cfg.get("learner", {})
    gb = learner.get("gradient_booster", {}).get("name", "gbtree")
    if gb != "gbtree":
        raise UnsupportedModel("XGBoost", gb, f"booster {gb!r} is not supported (only gbtree)")
    model = json.loads(booster.save_raw("json"))
    gbm = model["learner"]["gradient_booster"]["model"]
    trees_json = gbm["trees"]
    info = [int(v) for v in gbm.get("tree_info", [0] * len(trees_json))]
    k = max(info, default=0) + 1
    width = int(booster.num_features())
    groups: list[list[Tree]] = [[] for _ in range(k)]
    for t, (tj, g) in enumerate(zip(trees_json, info)):
        _xgb_categorical(booster, tj, t, domains)
        if int(tj.get("tree_param", {}).get("size_leaf_vector", 1) or 1) > 1:
            raise UnsupportedModel("XGBoost", "size_leaf_vector", "multi-target trees are not supported")
        groups[g].append(_xgb_tree(booster, tj, t, domains))
    probe = _probed(trees_json, domains, width)

    def margin(X, c):
        y = np.asarray(booster.predict(xgb_matrix(xgb, booster, X), output_margin=True), dtype=np.float64)
        return y.reshape(len(X), -1)[:, c]

    return [_check_column(TreeEnsemble(tuple(groups[c]), width, 0.0, "logistic", "xgboost"),
                          lambda X, c=c: margin(X, c), "XGBoost", probe) for c in range(k)]


def lightgbm_columns(booster, domains=None) -> list[TreeEnsemble]:
    """One ensemble per output column of a LightGBM booster (``num_tree_per_iteration`` classes of a
    ``multiclass`` model, tree i in class i mod K; one column otherwise), each checked against
    ``predict(raw_score=True)``."""
    dump = booster.dump_model()
    k = int(dump.get("num_tree_per_iteration", 1) or 1)
    width = int(dump.get("max_feature_idx", booster.num_feature() - 1)) + 1
    groups: list[list[Tree]] = [[] for _ in range(k)]
    for i, tree in enumerate(_lightgbm_trees(dump, 1.0, domains)):
        groups[i % k].append(tree)

    def raw(X, c):
        y = np.asarray(booster.predict(X, raw_score=True), dtype=np.float64)
        return y.reshape(len(X), -1)[:, c]

    probe = _lightgbm_probed(booster, dump, domains)
    return [_check_column(TreeEnsemble(tuple(groups[c]), width, 0.0, "logistic", "lightgbm"),
                          lambda X, c=c: raw(X, c), "LightGBM", probe) for c in range(k)]


def split_union(columns: Sequence[TreeEnsemble]) -> TreeEnsemble:
    """Every tree of every column, once (the same tree object shared by columns counts once), in
    one ensemble whose leaf values are 0: what the cells of a pair domain are cut by (its split
    tests and leaf boxes). Its aggregate means nothing: it is never a score."""
    seen, trees = set(), []
    for ens in columns:
        for t in ens.trees:
            key = (t.feature.tobytes(), t.threshold.tobytes(), t.left.tobytes(), t.right.tobytes(), t.strict, t.f32)
            if key in seen:
                continue
            seen.add(key)
            trees.append(replace(t, value=np.zeros(t.n_nodes)))
    width = max((e.n_inputs for e in columns), default=0)
    return TreeEnsemble(tuple(trees), width, 0.0, "identity", "split tests of every output column")
