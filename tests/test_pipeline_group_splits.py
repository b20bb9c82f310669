"""A tree model after a OneHotEncoder grouping infrequent categories, whose splits read the group's column
(session 34; refused before, "a tree only when no split reads a group"): the splits are rewritten as splits on the
group's categories' columns (fairspec.models.sklearn_group_splits). Checked bit for bit against the pipeline's own
predict_proba on every domain point (the widened estimator the tree engines read, and the runtime's scores), and
the verdicts against brute force over every pair, with replaying witnesses (enumeration, milp, smt)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("skops")

from sklearn.ensemble import (  # noqa: E402
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor  # noqa: E402

from fairspec.models.sklearn_group_splits import _rewire  # noqa: E402
from fairspec.models.sklearn_pipeline import fold  # noqa: E402
from fairspec.models.sklearn_widen import _split_features  # noqa: E402

from test_pipeline_fold_maps import CATS, _domain, _encoding, _grouped_pipe  # noqa: E402

ESTIMATORS = {
    "tree": lambda: DecisionTreeClassifier(random_state=0),
    "forest": lambda: RandomForestClassifier(7, random_state=0),
    "extra trees": lambda: ExtraTreesClassifier(7, random_state=0),
    "gradient boosting": lambda: GradientBoostingClassifier(n_estimators=6, random_state=0),
    "hist gradient boosting": lambda: HistGradientBoostingClassifier(max_iter=6, min_samples_leaf=5),
}
GROUPINGS = {"three grouped": dict(max_categories=3), "four grouped": dict(max_categories=2),
             "three grouped, drop first": dict(max_categories=3, drop="first"),
             "four grouped, sparse": dict(max_categories=2, sparse_output=True)}


def _y(fr):         # the group (b, c, e under max_categories=3) moves the label, and so does n
    return (fr.g.isin(["b", "c", "e"]) ^ (fr.n > 1)).to_numpy().astype(int)


def _layout(folded, dom):
    """fairspec's columns of every domain point: one per category of g (its fitted order), then n, k."""
    g = folded.columns[0]
    X = np.zeros((len(dom), folded.width))
    X[np.arange(len(dom)), [g.values.index(v) for v in dom.g]] = 1.0
    X[:, g.width], X[:, g.width + 1] = dom.n, dom.k
    return X


@pytest.mark.parametrize("weight", [None, {"o": 0.5}, {"o": 4.0}])
@pytest.mark.parametrize("grouping", sorted(GROUPINGS))
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_a_tree_splitting_on_a_grouped_column_folds_bit_for_bit(tmp_path, name, grouping, weight):
    from fairspec.models.sklearn_model import SklearnModel
    from fairspec.runtime.encoding import encode

    pipe = _grouped_pipe(GROUPINGS[grouping], ESTIMATORS[name](), y=_y, weight=weight)
    folded = fold(pipe)
    many = {j for j, m in enumerate(folded.merged) if len(m) > 1}
    assert _split_features(pipe[-1]) & many                 # the case refused before
    assert folded.unfoldable == ()
    dom = _domain()
    X = _layout(folded, dom)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = pipe.predict_proba(dom)
        assert np.array_equal(folded.final.predict_proba(X).view(np.int64), theirs.view(np.int64))
        assert np.array_equal(folded.final.predict(X), pipe.predict(dom))
        enc, features = _encoding(tmp_path, pipe, with_features=True)
        Xe = encode(enc, {"g": np.array([CATS.index(v) for v in dom.g]), "n": dom.n.to_numpy(),
                          "k": dom.k.to_numpy()}, len(dom))
        m = SklearnModel(tmp_path / "m.skops")
        m.bind_encoding(enc, features)
        assert not m.unfolded
        assert np.array_equal(m.score(Xe).view(np.int64), theirs[:, 1].view(np.int64))


def test_a_regressor_tree_splitting_on_a_group_folds_bit_for_bit():
    pipe = _grouped_pipe(dict(max_categories=3), DecisionTreeRegressor(random_state=0),
                         y=lambda fr: _y(fr) * 1.5 + fr.k.to_numpy() / 3)
    folded = fold(pipe)
    assert folded.unfoldable == ()
    dom = _domain()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.array_equal(folded.final.predict(_layout(folded, dom)).view(np.int64),
                              pipe.predict(dom).view(np.int64))


def _walk(out, x):
    """The source leaf a rewired tree (``_rewire``'s nodes) reaches on x (float32 compare, as the library)."""
    i = 0
    while out[i][1] is not None:
        i = out[i][3] if np.float32(x[out[i][1]]) <= out[i][2] else out[i][4]
    return out[i][0]


@pytest.mark.parametrize("t", [-0.5, 0.0, 0.5, 0.999, 1.0, 3.0])
@pytest.mark.parametrize("members", [(0,), (0, 1), (1, 2, 3), (0, 1, 2, 3), (0, 2, 3, 4)])
def test_the_rewired_splits_reach_the_leaf_the_sum_does_on_every_one_hot_point(t, members):
    """A tree on (group column, other): node 0 splits the group at t, node 1 (left) splits 'other' at 0.5. The
    rewired tree on fairspec's columns (a block of 5 categories, then 'other') reaches, on every one-hot point,
    the leaf the original reaches on the sum; either chain (members, or the block's other columns) as it is
    cheaper, and no node at all for a threshold the sum 0 / 1 never or always meets."""
    # nodes: 0 split(f0 <= t) -> 1 / 4; 1 split(f1 <= 0.5) -> 2 / 3; 2, 3, 4 leaves
    left, right = [1, 2, -1, -1, -1], [4, 3, -1, -1, -1]
    feature, threshold = [0, 1, -2, -2, -2], [t, 0.5, -2.0, -2.0, -2.0]
    keep = [members[0], 5]
    others = tuple(i for i in range(5) if i not in members)
    for rest in (others, None):
        out = _rewire(left, right, feature, threshold, keep, {0: (members, rest)}, 1000)
        if t < 0 or t >= 1:
            assert all(o[1] != m for o in out for m in members + others)       # the node is gone
        for cat in range(5):
            for other in (0.0, 1.0):
                x = np.zeros(6)
                x[cat], x[5] = 1.0, other
                s = float(cat in members)
                want = (2 if other <= 0.5 else 3) if s <= t else 4
                assert _walk(out, x) == want, (members, rest, t, cat, other)
    # with the block's other columns offered, the chain is the cheaper one: 4 members, 1 other -> over the other
    if members == (0, 1, 2, 3) and 0 <= t < 1:
        out = _rewire(left, right, feature, threshold, keep, {0: (members, others)}, 1000)
        assert [o[1] for o in out if o[1] is not None and o[1] < 5] == [4]


def test_a_rewrite_past_its_bound_is_refused_saying_why(monkeypatch):
    from fairspec.models import sklearn_group_splits as G

    monkeypatch.setattr(G, "GROWTH", 0)
    monkeypatch.setattr(G, "SLACK", 1)
    pipe = _grouped_pipe(dict(max_categories=2), DecisionTreeClassifier(random_state=0), y=_y)
    (why,) = fold(pipe).unfoldable
    assert "rewriting the splits of DecisionTreeClassifier on it grows a tree past 0 times its nodes" in why, why


@pytest.mark.parametrize("backend", ["enumeration", "milp", "smt"])
@pytest.mark.parametrize("name", ["tree", "hist gradient boosting", "forest"])
def test_a_grouped_tree_pipeline_is_decided_as_its_own_predict_with_a_replaying_witness(tmp_path, monkeypatch,
                                                                                       backend, name):
    """The verdict is the brute force's over every pair of the domain on the pipeline's own predict (solvers: holds
    proved, or violated); a witness differs in g and flips on the pipeline as printed."""
    import fairspec

    if backend != "enumeration":
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    seen = set()
    ys = [lambda fr: (fr.n.to_numpy() >= 1).astype(int), _y,
          lambda fr: fr.g.isin(["b", "c", "e"]).to_numpy().astype(int)]
    for seed, y in enumerate(ys):
        pipe = _grouped_pipe(dict(max_categories=3), ESTIMATORS[name](), y=y, weight={"o": 0.5} if seed == 1 else None)
        assert fold(pipe).unfoldable == ()
        _encoding(tmp_path, pipe)
        if backend != "enumeration":
            text = (tmp_path / "s.fair").read_text().replace("property same {", "property same {\n  using " + backend)
            (tmp_path / "s.fair").write_text(text)
        v = fairspec.check(tmp_path / "s.fair")["same"]
        dom = _domain()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lab = pipe.predict(dom).reshape(len(CATS), -1)
        truth = not all(np.array_equal(lab[0], r) for r in lab)
        assert v.status == ("violated" if truth else "holds"), (seed, v.status, v.reason)
        if v.status == "holds":
            assert v.how == "proved", v.reason
        else:
            one = lambda f: pd.DataFrame([{k: f[k] for k in ("g", "n", "k")}])  # noqa: E731
            assert v.witness.features["g"] != v.witness.features_prime["g"]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                assert pipe.predict(one(v.witness.features))[0] != pipe.predict(one(v.witness.features_prime))[0]
        seen.add(v.status)
    assert seen == {"holds", "violated"}, seen


@pytest.mark.parametrize("weight", [None, {"o": 4.0}])
@pytest.mark.parametrize("init", ["logistic", "tree"])
def test_gradient_boosting_with_an_init_model_after_a_grouped_or_weighted_block_stays_whole(tmp_path, init, weight):
    """The review of h3 (session 34): the rewrite changed the boosted trees' splits but not ``init_`` -- a model of
    its own reading the pipeline's columns -- so a grouped block gave an internal error (init_ reading 8 columns
    where it was fitted on 5) and a weighted one a model whose init_ never moved (holds proved, where the pipeline
    violates). Such a pipeline is not folded; it is evaluated whole on its own predict, the verdict the brute force's."""
    from sklearn.linear_model import LogisticRegression

    import fairspec

    est = GradientBoostingClassifier(n_estimators=3, random_state=0,
                                     init=LogisticRegression() if init == "logistic" else
                                     DecisionTreeClassifier(max_depth=1, random_state=0))
    kw = dict(max_categories=3) if weight is None else {}
    pipe = _grouped_pipe(kw, est, y=lambda fr: fr.g.isin(["b", "c", "e"]).to_numpy().astype(int), weight=weight)
    assert fold(pipe).unfoldable != ()
    _encoding(tmp_path, pipe)
    v = fairspec.check(tmp_path / "s.fair")["same"]
    dom = _domain()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lab = pipe.predict(dom).reshape(len(CATS), -1)
    truth = not all(np.array_equal(lab[0], r) for r in lab)
    assert "internal error" not in (v.reason or "")
    assert v.status in ("violated" if truth else "holds", "unknown"), (v.status, v.reason)
    assert truth and v.status == "violated", (truth, v.status, v.reason)
