"""A fitted final estimator widened to read every one-hot column (``OneHotEncoder(drop=...)``).

A one-hot block with a dropped category writes k - 1 columns: the dropped category is the block of
all zeros. fairspec encodes the feature as the full one-hot block (k columns, exactly one of them 1),
so the pipeline's estimator reads the columns ``keep`` of fairspec's encoding (the dropped column
left out). :func:`widen` returns a copy of the estimator whose input is fairspec's whole encoding and
which never reads a dropped column: the same computation on ``X[:, keep]``. Trees (a decision tree,
forests, extra trees, gradient boosting, histogram gradient boosting without categorical splits) get
their split features renumbered, exactly the same comparisons; linear models and MLPs get a zero
weight for each dropped column (a product 0 * v = 0 joins their sums; the runtime itself, the
pipeline's ``predict``, is what ``SklearnModel`` evaluates, on ``X[:, keep]``). A OneHotEncoder grouping
infrequent categories writes one column for the group: the estimator reads it as the sum of the group's
columns (``merged``), a linear model's / MLP's weights on it copied to each member (on a one-hot point one
product w * 1, the others 0: exactly the same sum of products, and certify's rounding bound, for every
summation order, only widens with more terms), a tree's splits on a group rewritten as splits on its members'
columns (sklearn_group_splits). Any other
estimator: None (the pipeline is then evaluated whole, as before).
"""

from __future__ import annotations

import copy

import numpy as np

TREES = ("DecisionTreeClassifier", "DecisionTreeRegressor", "ExtraTreeClassifier", "ExtraTreeRegressor")
FORESTS = ("RandomForestClassifier", "RandomForestRegressor", "ExtraTreesClassifier", "ExtraTreesRegressor")
BOOSTED = ("GradientBoostingClassifier", "GradientBoostingRegressor")
HIST = ("HistGradientBoostingClassifier", "HistGradientBoostingRegressor")
LINEAR = ("LogisticRegression", "LinearRegression", "Ridge", "RidgeClassifier", "LinearSVC", "SGDClassifier",
          "SGDRegressor", "Lasso", "ElasticNet")
MLP = ("MLPClassifier", "MLPRegressor")


def _tree(tree, keep: np.ndarray, width: int):
    """A sklearn ``Tree`` whose split features index the widened input."""
    from sklearn.tree._tree import Tree

    state = tree.__getstate__()
    nodes = state["nodes"].copy()
    split = nodes["left_child"] != -1
    nodes["feature"] = np.where(split, keep[np.where(split, nodes["feature"], 0)], nodes["feature"])
    new = Tree(width, np.asarray(tree.n_classes, dtype=np.intp), tree.n_outputs)
    new.__setstate__({**state, "nodes": nodes})
    return new


def _decision_tree(est, keep, width):
    est.tree_ = _tree(est.tree_, keep, width)
    est.n_features_in_ = width
    return est


def widen(final, keep, width: int, scale=None, merged=None, others=None):
    """A copy of ``final`` reading ``width`` inputs, column ``keep[j]`` where ``final`` read column
    j; None for an estimator this cannot widen exactly. ``scale`` (a transformer weight on a one-hot block,
    a power of 2): ``final`` read ``scale[j]`` times column ``keep[j]`` (0 / w for 0 / 1); only a linear
    model or an MLP, its weights times ``scale[j]`` -- each product ``x * coef`` then the same float, FMA or
    not, as long as no weight times a power of 2 loses a bit (checked) --; a tree model, each split on such a
    column sending 0 and 1 where it sent 0 and w (sklearn_group_splits). ``merged`` (a one-hot
    block grouping infrequent categories): ``final`` read column j as the sum of the columns ``merged[j]``
    (one-hot: 0 or one 1 among them); a linear model or an MLP gets its weights on j copied to each of them
    (on a one-hot point the same products, one of them w * 1, the others w * 0 = 0); a tree only when no
    split reads a j of two or more columns, or with those splits rewritten as splits on the columns ``merged[j]``
    (``others[j]``: the rest of j's one-hot block; sklearn_group_splits), else None."""
    keep = np.asarray(keep, dtype=np.int64)
    if type(final).__name__ in BOOSTED:
        from fairspec.models.sklearn_hidden import constant_init

        if not constant_init(final):    # its init_ reads the pipeline's columns and is no tree to widen or rewrite
            return None
    if merged is not None:
        return _merged(final, keep, width, scale, merged, others)
    if scale is not None:
        return _scaled(final, keep, width, np.asarray(scale, dtype=np.float64))
    name = type(final).__name__
    n = getattr(final, "n_features_in_", None)
    if n is None or int(n) != keep.size or getattr(final, "feature_names_in_", None) is not None:
        return None
    est = copy.deepcopy(final)
    if name in TREES:
        return _decision_tree(est, keep, width)
    if name in FORESTS:
        est.estimators_ = [_decision_tree(t, keep, width) for t in est.estimators_]
        est.n_features_in_ = width
        return est
    if name in BOOSTED:                 # a constant init_ (checked above)
        for t in np.ravel(est.estimators_):
            _decision_tree(t, keep, width)
        est.n_features_in_ = width
        return est
    if name in HIST:
        if getattr(est, "is_categorical_", None) is not None or getattr(est, "_preprocessor", None) is not None:
            return None
        for it in est._predictors:
            for p in it:
                nodes = p.nodes.copy()
                split = ~nodes["is_leaf"].astype(bool)
                nodes["feature_idx"] = np.where(split, keep[np.where(split, nodes["feature_idx"], 0)],
                                                nodes["feature_idx"])
                p.nodes = nodes
        bm = est._bin_mapper
        if getattr(bm, "is_categorical_", None) is not None:
            if np.any(bm.is_categorical_):
                return None
            bm.is_categorical_ = np.zeros(width, dtype=bm.is_categorical_.dtype)
        est.n_features_in_ = width
        return est
    if name in LINEAR:
        coef = np.asarray(est.coef_)
        wide = np.zeros(coef.shape[:-1] + (width,), dtype=coef.dtype)
        wide[..., keep] = coef
        est.coef_ = wide
        est.n_features_in_ = width
        return est
    if name in MLP:
        w0 = np.asarray(est.coefs_[0])
        wide = np.zeros((width, w0.shape[1]), dtype=w0.dtype)
        wide[keep, :] = w0
        est.coefs_ = [wide] + list(est.coefs_[1:])
        est.n_features_in_ = width
        return est
    return None


def _scaled(final, keep, width: int, scale: np.ndarray):
    """:func:`widen` with each kept column's weights times ``scale`` (linear models and MLPs only)."""
    name = type(final).__name__
    if name in TREES + FORESTS + BOOSTED + HIST:
        return _tree_regrouped(final, keep, width, None, None, scale)
    if name not in LINEAR + MLP:
        return None
    wide = widen(final, keep, width)
    if wide is None:
        return None
    col = np.ones(width)
    col[keep] = scale
    if name in LINEAR:
        coef = np.asarray(wide.coef_)
        new = coef * col
        if not (np.all(np.isfinite(new)) and np.array_equal(new / col, coef)):
            return None
        wide.coef_ = new.astype(coef.dtype)
        return wide
    w0 = np.asarray(wide.coefs_[0])
    new = w0 * col[:, None]
    if not (np.all(np.isfinite(new)) and np.array_equal(new / col[:, None], w0)):
        return None
    wide.coefs_ = [new.astype(w0.dtype)] + list(wide.coefs_[1:])
    return wide


def _split_features(est) -> set:
    """Every input column a split of tree model ``est`` reads (trees, forests, gradient boosting, histogram
    gradient boosting)."""
    name = type(est).__name__
    trees = [est] if name in TREES else list(est.estimators_) if name in FORESTS else \
        list(np.ravel(est.estimators_)) if name in BOOSTED else []
    out = set()
    for t in trees:
        nodes = t.tree_
        out |= {int(f) for f, left in zip(nodes.feature, nodes.children_left) if left != -1}
    if name in HIST:
        for it in est._predictors:
            for p in it:
                out |= {int(f) for f, leaf in zip(p.nodes["feature_idx"], p.nodes["is_leaf"]) if not leaf}
    return out


def _tree_regrouped(final, keep, width: int, merged, others, scale):
    """A tree model reading grouped one-hot columns as sums, or weighted one-hot columns as 0 / w (power-of-2 w):
    its splits rewritten on fairspec's 0 / 1 columns (sklearn_group_splits.regroup)."""
    name = type(final).__name__
    n = getattr(final, "n_features_in_", None)
    if n is None or int(n) != keep.size or getattr(final, "feature_names_in_", None) is not None:
        return None
    from .sklearn_group_splits import regroup

    family = "tree" if name in TREES else "forest" if name in FORESTS else "boosted" if name in BOOSTED else "hist"
    return regroup(final, keep, width, merged if merged is not None else tuple((int(k),) for k in keep), others,
                   family, scale)


def _merged(final, keep, width: int, scale, merged, others=None):
    """:func:`widen` of an estimator reading some columns as sums of fairspec's (``merged``)."""
    name = type(final).__name__
    many = {j for j, m in enumerate(merged) if len(m) > 1}
    if name in TREES + FORESTS + BOOSTED + HIST:
        if scale is None and not _split_features(final) & many:
            return widen(final, keep, width)
        return _tree_regrouped(final, keep, width, merged, others, scale)
    if name not in LINEAR + MLP:
        return None
    wide = widen(final, keep, width) if scale is None else _scaled(final, keep, width, np.asarray(scale, dtype=np.float64))
    if wide is None:
        return None
    if name in LINEAR:
        coef = np.asarray(wide.coef_).copy()
        for j in many:
            coef[..., list(merged[j])] = coef[..., [keep[j]]]
        wide.coef_ = coef
        return wide
    w0 = np.asarray(wide.coefs_[0]).copy()
    for j in many:
        w0[list(merged[j]), :] = w0[[keep[j]], :]
    wide.coefs_ = [w0] + list(wide.coefs_[1:])
    return wide
