"""models/split_edges reads the splits of a meta-estimator's members (session 37 left every row of a meta-estimator
of trees behind a PCA "on an edge": a model no split can reach, or a row far from every threshold, was unknown).
A row is flagged where the steps' output lies on one of its members' thresholds on the column that member reads
(a bag's ``estimators_features_`` maps its members' columns); a Stacking that passes the raw columns to its final
estimator, and an XGBoost / LightGBM member, stay unread (every row flagged). Failed before: every row flagged."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
skops = pytest.importorskip("skops.io")

from sklearn.calibration import CalibratedClassifierCV  # noqa: E402
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.ensemble import (BaggingClassifier, GradientBoostingClassifier, HistGradientBoostingClassifier,  # noqa: E402
                              RandomForestClassifier, StackingClassifier, VotingClassifier)
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder  # noqa: E402
from sklearn.tree import DecisionTreeClassifier  # noqa: E402

from test_audit_s36_batches import EDGE_SPEC  # noqa: E402

COLS = ["a", "b", "c", "e"]


def _tree(depth=2):
    return DecisionTreeClassifier(max_depth=depth, random_state=0)


FINALS = {
    "soft vote of HGB and a tree": lambda: VotingClassifier(
        [("h", HistGradientBoostingClassifier(max_iter=2, max_depth=2)), ("t", _tree())], voting="soft"),
    "bag of one-column trees": lambda: BaggingClassifier(_tree(), n_estimators=3, max_features=1, random_state=0),
    "gradient boosting from a tree": lambda: GradientBoostingClassifier(n_estimators=2, max_depth=1,
                                                                        init=_tree(1), random_state=0),
    "calibrated tree": lambda: CalibratedClassifierCV(_tree(), cv=2),
    "gradient boosting from a forest": lambda: GradientBoostingClassifier(
        n_estimators=2, max_depth=1, init=RandomForestClassifier(3, max_depth=2, random_state=0), random_state=0),
}


def _members_splits(est, cols=None):
    """(column, threshold) of every split, walked here without fairspec (the test's own reading)."""
    name = type(est).__name__
    out = []
    if name == "VotingClassifier":
        for m in est.estimators_:
            out += _members_splits(m)
    elif name == "BaggingClassifier":
        for m, f in zip(est.estimators_, est.estimators_features_):
            out += _members_splits(m, np.asarray(f))
    elif name == "CalibratedClassifierCV":
        for c in est.calibrated_classifiers_:
            out += _members_splits(c.estimator)
    elif name == "GradientBoostingClassifier":
        for m in list(np.ravel(est.estimators_)) + [est.init_]:
            out += _members_splits(m)
    elif name.startswith("HistGradientBoosting"):
        for per in est._predictors:
            for p in per:
                n = p.nodes[p.nodes["is_leaf"] == 0]
                out += list(zip(n["feature_idx"].tolist(), n["num_threshold"].tolist()))
    elif name == "RandomForestClassifier":
        for m in est.estimators_:
            out += _members_splits(m)
    else:
        t = est.tree_
        out += [(int(f), float(v)) for f, v in zip(t.feature, t.threshold) if f >= 0]
    return [(int(cols[f]) if cols is not None else int(f), v) for f, v in out]


def _fit(final):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"g": rng.choice(["A", "B"], 400), **{k: rng.integers(0, 4, 400) for k in COLS}})
    y = ((df.a + df.b - df.c + (df.g == "B") + rng.normal(0, 1, 400)) > 3).astype(int)
    pre = ColumnTransformer([("oh", OneHotEncoder(), ["g"]), ("num", "passthrough", COLS)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Pipeline([("pre", pre), ("pca", PCA(2)), ("clf", final)]).fit(df, y)


def _loaded(tmp_path, pipe):
    from fairspec.models.sklearn_model import SklearnModel
    from fairspec.runtime.encoding import encode
    from fairspec.sema.check import check_file

    skops.dump(pipe, tmp_path / "m.skops")
    (tmp_path / "s.fair").write_text(EDGE_SPEC)
    spec = check_file(tmp_path / "s.fair").spec
    enc = spec.encoding_for("m")
    dom = pd.DataFrame([dict(g=g, **dict(zip(COLS, v))) for g in "AB" for v in itertools.product(range(4), repeat=4)])
    X = encode(enc, {"g": np.array(["AB".index(v) for v in dom.g]), **{k: dom[k].to_numpy() for k in COLS}},
               len(dom))
    m = SklearnModel(tmp_path / "m.skops")
    m.bind_encoding(enc, spec.feature_set(enc.features))
    return m, X, dom


@pytest.mark.parametrize("name", sorted(FINALS))
def test_a_meta_estimators_members_splits_flag_the_rows_on_them(tmp_path, name):
    from fairspec.models.split_edges import INPUT_SPREAD, at_split_edges

    pipe = _fit(FINALS[name]())
    m, X, dom = _loaded(tmp_path, pipe)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Z = pipe[:-1].transform(dom)
    splits = _members_splits(pipe[-1])
    assert splits, name
    # a member's threshold moved onto a domain row's value: that row must be flagged
    f0 = _first_split_column(pipe[-1])
    i = int(np.argmin(np.abs(Z[:, f0] - np.median(Z[:, f0]))))
    _set_first_threshold(pipe[-1], Z[i, f0])
    m, X, dom = _loaded(tmp_path, pipe)
    splits = _members_splits(pipe[-1])
    edges = at_split_edges(m, X)
    assert edges is not None and edges[i], name
    delta = INPUT_SPREAD * (1 + np.abs(Z).max())
    far = np.ones(len(dom), dtype=bool)
    for f, t in splits:
        far &= np.abs(Z[:, f] - t) > 1e-6 + delta
    assert far.any(), name                                   # rows clear of every threshold exist ...
    assert not edges[far].any(), name                        # ... and none of them is flagged (before: all were)


def _first_tree(est):
    """The member whose first split the test moves (a gradient boosting's init tree: read since session 38)."""
    name = type(est).__name__
    if name == "VotingClassifier":
        return est.estimators_[0]._predictors[0][0], None
    if name == "BaggingClassifier":
        return est.estimators_[0].tree_, np.asarray(est.estimators_features_[0])
    if name == "CalibratedClassifierCV":
        return est.calibrated_classifiers_[0].estimator.tree_, None
    init = est.init_
    return (init.tree_ if hasattr(init, "tree_") else init.estimators_[0].tree_), None


def _first_split_column(est) -> int:
    tree, cols = _first_tree(est)
    if hasattr(tree, "nodes"):
        return int(tree.nodes["feature_idx"][int(np.flatnonzero(tree.nodes["is_leaf"] == 0)[0])])
    f = int(tree.feature[int(np.flatnonzero(tree.feature >= 0)[0])])
    return int(cols[f]) if cols is not None else f


def _set_first_threshold(est, value):
    """Move that member's first split to ``value`` (float64; HGB compares float64 inputs, scikit-learn's trees
    float32 ones: the threshold is then the float32 value's float64 reading)."""
    tree, _ = _first_tree(est)
    if hasattr(tree, "nodes"):
        tree.nodes["num_threshold"][int(np.flatnonzero(tree.nodes["is_leaf"] == 0)[0])] = value
        return
    tree.threshold[int(np.flatnonzero(tree.feature >= 0)[0])] = float(np.float32(value))


def test_a_stacking_passing_the_columns_through_stays_unread(tmp_path):
    from fairspec.models.split_edges import at_split_edges

    pipe = _fit(StackingClassifier([("t", _tree())], final_estimator=_tree(1), passthrough=True, cv=2))
    m, X, _ = _loaded(tmp_path, pipe)
    edges = at_split_edges(m, X)
    assert edges is None or edges.all()


def test_a_histgradientboosting_that_reorders_its_columns_stays_unread():
    """HistGradientBoosting with categorical features from a frame's dtypes encodes them itself, categorical columns
    first: its nodes' feature_idx are not the columns it is given, so its splits are not read (every row flagged)."""
    from fairspec.models.split_edges import _splits

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.random(200), "c": pd.Categorical(rng.choice(["x", "y"], 200))})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h = HistGradientBoostingClassifier(max_iter=2, categorical_features="from_dtype").fit(df, df.a > 0.5)
    assert getattr(h, "_preprocessor", None) is not None and _splits(h) is None


def test_a_linear_final_is_no_tree_pipeline(tmp_path):
    from fairspec.models.split_edges import at_split_edges

    pipe = _fit(LogisticRegression())
    m, X, _ = _loaded(tmp_path, pipe)
    assert at_split_edges(m, X) is None
