"""OneHotEncoder(drop=...) in a scikit-learn pipeline is folded (session 22): fairspec encodes the
feature as the whole one-hot block (the dropped category is the block of all zeros in the pipeline)
and widens the final estimator to read it (fairspec/models/sklearn_widen.py). Checked against brute
force through the pipeline's own predict: every `holds (proved)` of the solver paths is true, every
`violated` witness changes the pipeline's own decision, and the loaded model scores every domain
point as the pipeline does."""

from __future__ import annotations

import warnings
from itertools import product

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("skops")

import fairspec  # noqa: E402
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.ensemble import (ExtraTreesClassifier, GradientBoostingClassifier,  # noqa: E402
                              HistGradientBoostingClassifier, RandomForestClassifier)
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.neural_network import MLPClassifier  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder, StandardScaler  # noqa: E402
from sklearn.svm import SVC  # noqa: E402
from sklearn.tree import DecisionTreeClassifier  # noqa: E402

SPEC = """features F {
  g : {n, y}  protected
  f0 : int in [0, 2]
  f1 : {a, b, c}
}
model m = sklearn("m.skops")

property same {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure label(m(x)) == label(m(x'))
  using BACKEND
}
"""

DOMAIN = pd.DataFrame([{"g": g, "f0": f0, "f1": f1} for g, f0, f1 in product("ny", range(3), "abc")])

FINALS = {
    "lr": lambda: LogisticRegression(),
    "tree": lambda: DecisionTreeClassifier(max_depth=4, random_state=0),
    "rf": lambda: RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0),
    "et": lambda: ExtraTreesClassifier(n_estimators=4, max_depth=3, random_state=0),
    "gb": lambda: GradientBoostingClassifier(n_estimators=4, max_depth=2, random_state=0),
    "hgb": lambda: HistGradientBoostingClassifier(max_iter=4, max_depth=3, min_samples_leaf=2),
    "mlp": lambda: MLPClassifier(hidden_layer_sizes=(4,), max_iter=300, random_state=0),
}
DROPS = {"first": "first", "if_binary": "if_binary", "list": ["y", "b"]}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Fits and predictions of 54 rows on one thread: HistGradientBoosting's OpenMP pool spins on a
    loaded box (its first fits took ~3 s of CPU; on one thread 0.1 s). Results are the same."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


def _pipe(final, drop, seed=0):
    pre = ColumnTransformer([("oh", OneHotEncoder(drop=drop), ["g", "f1"]), ("sc", StandardScaler(), ["f0"])])
    frame = pd.concat([DOMAIN] * 3, ignore_index=True)
    y = np.random.default_rng(seed).integers(0, 2, len(frame))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Pipeline([("pre", pre), ("clf", final)]).fit(frame, y)


@pytest.mark.parametrize("drop", list(DROPS))
@pytest.mark.parametrize("name", list(FINALS))
def test_the_widened_estimator_scores_every_point_as_the_pipeline(tmp_path, name, drop):
    from fairspec.models.sklearn_model import SklearnModel, import_skops_io

    pipe = _pipe(FINALS[name](), DROPS[drop])
    import_skops_io().dump(pipe, str(tmp_path / "m.skops"))
    m = SklearnModel(tmp_path / "m.skops")
    assert not m.unfolded and m.folded.keep is not None
    g, f1 = (m.folded.column(c) for c in ("g", "f1"))
    assert (g.width, f1.width, m.input_width) == (2, 3, 6)
    X = np.zeros((len(DOMAIN), 6))
    for i, row in DOMAIN.iterrows():
        X[i, g.offset + "ny".index(row.g)] = 1.0
        X[i, f1.offset + "abc".index(row.f1)] = 1.0
        sc = m.folded.column("f0")
        X[i, sc.offset] = (row.f0 - sc.mean) / sc.std
    want = pipe.predict_proba(DOMAIN)[:, 1]
    assert np.array_equal(m.score(X), want)
    m._integral = frozenset({"f0"})         # what bind_encoding sets from the spec (an int feature)
    assert np.array_equal(m.replay(X), want)  # the witness path: back to a frame, the pipeline's own predict
    if name != "lr" and name != "mlp":        # trees: the widened copy compares the same values
        assert np.array_equal(m.raw.predict_proba(X)[:, 1], want)
    else:
        assert np.allclose(m.raw.predict_proba(X)[:, 1], want, rtol=0, atol=1e-12)


# The solver paths on one estimator of each kind the widening handles differently (a tree ensemble:
# split features renumbered; a linear model and an MLP: a zero weight per dropped column) under MILP,
# and one under SMT; every drop among them (a first, a middle and a last category dropped, and
# 'if_binary', which drops in g only). The seeds give each case one proved and one violated verdict
# (on scikit-learn 1.x as installed); the scoring test above covers every estimator x drop.
SOLVER_CASES = [("gb", "list", "milp", (0, 3)), ("lr", "if_binary", "milp", (0, 3)),
                ("mlp", "list", "milp", (0, 1)), ("gb", "first", "smt", (0, 1))]


@pytest.mark.parametrize(("name", "drop", "backend", "seeds"), SOLVER_CASES)
def test_solver_verdicts_agree_with_brute_force_through_the_pipeline(tmp_path, monkeypatch, name, drop, backend,
                                                                     seeds):
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")      # the solver paths, not enumeration
    for seed in seeds:
        pipe = _pipe(FINALS[name](), DROPS[drop], seed)
        lab = pipe.predict(DOMAIN).reshape(2, -1)
        spec = tmp_path / "s.fair"
        spec.write_text(SPEC.replace("BACKEND", backend))
        v = fairspec.check(spec, models={"m": pipe}).report.verdicts[0]
        assert v.status in ("holds", "violated"), v.reason
        if v.status == "holds":
            assert v.how == "proved" and np.array_equal(lab[0], lab[1]), v.reason
        else:
            w = v.witness
            one = lambda f: pd.DataFrame([{k: f[k] for k in ("g", "f0", "f1")}])  # noqa: E731
            assert pipe.predict(one(w.features))[0] != pipe.predict(one(w.features_prime))[0]


def test_an_estimator_it_cannot_widen_keeps_the_pipeline_whole_and_says_so(tmp_path):
    from fairspec.models.sklearn_model import SklearnModel, import_skops_io

    pipe = _pipe(SVC(probability=True, random_state=0), "first")
    import_skops_io().dump(pipe, str(tmp_path / "m.skops"))
    m = SklearnModel(tmp_path / "m.skops")
    assert m.unfolded and m.folded.keep is None
    assert m.folded.unfoldable == ("OneHotEncoder 'oh' (drop=...: its dropped category's column is read back "
                                   "only into the final estimators fairspec can widen, and SVC is not one)",)


def test_repair_refuses_a_pipeline_whose_one_hot_drops_a_category(tmp_path):
    """repair patches the estimator it reads, here the widened copy: not the pipeline's own, so it
    says so instead of writing a pipeline that would not run."""
    pipe = _pipe(DecisionTreeClassifier(max_depth=4, random_state=0), "first")
    frame = pd.concat([DOMAIN] * 3, ignore_index=True)
    spec = tmp_path / "r.fair"
    spec.write_text(SPEC.split("property same")[0].replace("features F {", 'data d = csv("d.csv", label = y == 1)\n'
                                                           "features F from d {")
                    + 'repair r for m {\n  goal  passing_rate_ratio(groups g) >= 0.8\n'
                      '  bound semantic_difference <= 1.2 * minimal\n  write "fixed.skops"\n}\n')
    (v,) = fairspec.check(spec, models={"m": pipe}, data={"d": frame.assign(y=np.arange(len(frame)) % 2)}).report.verdicts
    assert v.status == "unknown" and "drops a category" in v.reason, v.reason
    assert not (tmp_path / "fixed.skops").exists()
