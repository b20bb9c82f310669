"""Session 37 (h3): a threaded forest's rows read once (models/forest_rows.decide_rows). Its decisions were a
second pass of the forest (``model.decide``: scikit-learn's predict) beside the recorded predict_proba; a
single-output ForestClassifier's predict is ``classes_.take(argmax(predict_proba))`` in scikit-learn's own code,
so the decisions are now read from that one recorded P (``decisions_of``) -- the same as model.decide on one
thread, ties included (the first largest column), for ``index = 0``, a multiclass ``index`` and a Pipeline
ending in the forest; a subclass overriding predict keeps the second call."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("sklearn")
pytest.importorskip("skops")

SPEC = """features F {
  a : int in [0, 3]
  b : int in [0, 3]
}
model m = sklearn("m.skops"INDEX)
encode F for m { a : raw  b : raw }
"""


def _tied_forest(n_classes: int, n_jobs: int = 2, cls=None):
    """Six trees over (a, b); every leaf's class probabilities set so that many rows tie exactly (1/2 and 1/2,
    thirds) or nearly (sums of 0.1, 0.2, 0.7 ... in the trees' order)."""
    from sklearn.ensemble import RandomForestClassifier

    cls = cls or RandomForestClassifier
    X = np.array([[a, b] for a in range(4) for b in range(4)], dtype=float)
    y = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3]) % n_classes     # many leaves, every class
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rf = cls(n_estimators=6, bootstrap=False, max_features=None, random_state=0, n_jobs=n_jobs).fit(
            np.repeat(X, 2, 0), np.repeat(y, 2))
    rng = np.random.default_rng(n_classes)
    menu = [0.1, 0.2, 0.7, 0.3, 0.5, 1 / 3, 0.0, 1.0]
    for t in rf.estimators_:
        for leaf in np.flatnonzero(t.tree_.children_left == -1):
            if n_classes == 2:
                p = menu[rng.integers(len(menu))]
                t.tree_.value[leaf, 0, :] = [1.0 - p, p]
            else:
                v = np.array([menu[rng.integers(len(menu))] for _ in range(n_classes)]) + 1e-3
                t.tree_.value[leaf, 0, :] = v / v.sum() if rng.random() < 0.7 else np.full(n_classes, 1 / n_classes)
        for row in X[::7]:                  # these rows tie exactly in every tree: predict takes the first column
            t.tree_.value[int(t.apply(row[None, :])[0]), 0, :] = np.full(n_classes, 1 / n_classes) \
                if n_classes > 2 else [0.5, 0.5]
    return rf, X


def _model(tmp_path, est, index: str = ""):
    import skops.io as sio

    from fairspec.pipeline import lint
    from fairspec.runtime.context import Context

    sio.dump(est, tmp_path / "m.skops")
    (tmp_path / "s.fair").write_text(SPEC.replace("INDEX", index))
    sp = lint(tmp_path / "s.fair").spec
    return Context(sp, roots=[tmp_path]).model("m")


@pytest.mark.parametrize("n_classes,index", [(2, ""), (2, ", index = 0"), (3, ", index = 1"), (3, ", index = 2")])
def test_decisions_read_from_the_recorded_probabilities_are_predict_s(tmp_path, monkeypatch, n_classes, index):
    from fairspec.models import forest_rows as FR

    rf, X = _tied_forest(n_classes)
    X = np.repeat(X, 3, 0)
    m = _model(tmp_path, rf, index)
    assert m.order_problem is not None
    r = FR.decide_rows(m, X)
    assert r is not None
    forests = FR.own_forests(m)
    with FR.one_thread(m, forests):
        own = np.asarray(m.decide(X), dtype=np.int64)
        P = np.asarray(m.library_probabilities(X))
    read = FR.decisions_of(m, forests, P)
    assert read is not None, "the decisions are predict's argmax of predict_proba: read from P"
    assert np.array_equal(read, own) and np.array_equal(r[0], own)
    ties = (np.sort(P, axis=1)[:, -1] == np.sort(P, axis=1)[:, -2]).sum()
    assert ties > 0, "no exact tie: the first-largest-column reading is not exercised"
    calls = []
    real = type(m).decide
    monkeypatch.setattr(type(m), "decide", lambda self, X: calls.append(1) or real(self, X))
    r2 = FR.decide_rows(m, X)
    assert not calls and np.array_equal(r2[0], own) and np.array_equal(r2[1], r[1])   # one pass of the forest


def test_a_pipeline_ending_in_the_forest_reads_its_decisions_from_p_too(tmp_path):
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import FunctionTransformer

    from fairspec.models import forest_rows as FR

    rf, X = _tied_forest(2)
    pipe = Pipeline([("id", FunctionTransformer(None)), ("rf", rf)])
    m = _model(tmp_path, pipe)
    forests = FR.own_forests(m)
    if forests is None or m.order_problem is None:
        pytest.skip("this pipeline is not read as a threaded forest's own output")
    with FR.one_thread(m, forests):
        own = np.asarray(m.decide(X), dtype=np.int64)
        P = np.asarray(m.library_probabilities(X))
    read = FR.decisions_of(m, forests, P)
    assert read is not None and np.array_equal(read, own)
    assert np.array_equal(FR.decide_rows(m, X)[0], own)


def test_a_forest_whose_predict_is_its_own_keeps_the_second_call(tmp_path, monkeypatch):
    from sklearn.ensemble import RandomForestClassifier

    from fairspec.models import forest_rows as FR

    rf, X = _tied_forest(2)
    m = _model(tmp_path, rf)
    forests = FR.own_forests(m)
    with FR.one_thread(m, forests):
        P = np.asarray(m.library_probabilities(X))
    assert FR.decisions_of(m, forests, P) is not None

    class Odd(RandomForestClassifier):
        def predict(self, X):
            return self.classes_.take(np.argmin(self.predict_proba(X), axis=1))

    with monkeypatch.context() as mp:
        mp.setattr(forests[0], "__class__", Odd)
        assert FR.decisions_of(m, forests, P) is None
    with FR.one_thread(m, forests):
        own = np.asarray(m.decide(X), dtype=np.int64)
    calls = []
    real = type(m).decide
    monkeypatch.setattr(type(m), "decide", lambda self, X: calls.append(1) or real(self, X))
    monkeypatch.setattr(FR, "_predict_is_argmax", lambda model, forests: False)
    assert np.array_equal(FR.decide_rows(m, X)[0], own) and calls == [1]     # the model's own decision, called
