"""``class(m(x))`` of a scikit-learn classifier is the class its own ``predict`` returns (README: "scikit-learn's
``predict``"), never fairspec's argmax of the declared output where the two differ:

* an SVC's ``predict`` votes one-vs-one while its ``predict_proba`` is Platt scaling: on German credit grades
  (three classes) they disagree on 1 row in 12, and a ``class = c`` metric or the class distribution distance
  was computed on the argmax of predict_proba (0.257 where fairlearn on ``predict`` says 0.227);
* a LogisticRegression predicts from its decision function, whose softmax rounds two nearly equal classes to one
  probability: at the tie the argmax took the first column, predict the larger decision.

Both against fairlearn on the model's own ``predict``, on the data backend (group metrics) and on the loaded
model (``predict_class``, which the individual-fairness paths read)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from fairspec import pipeline

fm = pytest.importorskip("fairlearn.metrics")
sio = pytest.importorskip("skops.io")
pytest.importorskip("sklearn")

TOL = 1e-12

SPEC = """\
data d = csv("d.csv", target = grade)
features F from d {{
  a : int in [0, 9]
  b : int in [0, 9]
  sex : {{F, M}} protected
}}
model m = sklearn("m.skops")
encode F for m {{ a, b : raw  sex : code }}
property sp {{ statistical_parity(m, groups sex, class = "{c}") <= 1   bootstrap = 10 }}
property eo {{ equalized_odds(m, groups sex, class = "{c}") <= 1   bootstrap = 10 }}
property tv {{ class_distribution_distance(m, groups sex) <= 1   bootstrap = 10 }}
property meo {{ multiclass_equalized_odds(m, groups sex) <= 1   bootstrap = 10 }}
"""


def _data(n=600, seed=4, noise=12):
    rng = np.random.default_rng(seed)
    a, b, s = rng.integers(0, 10, n), rng.integers(0, 10, n), rng.integers(0, 2, n)
    grade = np.array(["hi", "lo", "mid"])[np.clip((a + b + rng.integers(-noise, noise + 1, n)) // 7, 0, 2)]
    X = np.stack([a, b, s], axis=1).astype(np.float64)
    return X, grade


def _run(tmp_path, est, X, grade, c):
    sio.dump(est, tmp_path / "m.skops")
    sex = np.array(["F", "M"])[X[:, 2].astype(int)]
    (tmp_path / "d.csv").write_text("a,b,sex,grade\n" + "\n".join(
        f"{int(X[i, 0])},{int(X[i, 1])},{sex[i]},{grade[i]}" for i in range(len(X))) + "\n")
    (tmp_path / "s.fair").write_text(SPEC.format(c=c))
    rep = pipeline.check(tmp_path / "s.fair")
    assert not [d for d in rep.diagnostics if d.severity == "error"], rep.diagnostics
    return {v.name: v for v in rep.verdicts}, sex


def _expected(pred, grade, sex, classes, c):
    P = np.array([[np.mean(pred[sex == s] == k) for k in classes] for s in ("F", "M")])
    return {"sp": fm.demographic_parity_difference(grade == c, pred == c, sensitive_features=sex),
            "eo": fm.equalized_odds_difference(grade == c, pred == c, sensitive_features=sex),
            "tv": float(np.abs(P[0] - P[1]).sum() / 2),
            "meo": max(fm.equalized_odds_difference(grade == k, pred == k, sensitive_features=sex) for k in classes)}


def _check(v, pred, grade, sex, classes, c):
    for name, ref in _expected(pred, grade, sex, classes, c).items():
        assert abs(v[name].value - ref) <= TOL, (name, v[name].value, ref)


def test_svc_class_is_its_predict(tmp_path):
    from sklearn.svm import SVC

    X, grade = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                 # probability = True is deprecated in scikit-learn 1.9
        svc = SVC(probability=True, random_state=0).fit(X, grade)
    pred = svc.predict(X)
    argmax = svc.classes_[svc.predict_proba(X).argmax(axis=1)]
    assert (pred != argmax).sum() >= 10            # the fixture: predict and predict_proba's argmax disagree
    v, sex = _run(tmp_path, svc, X, grade, "mid")
    _check(v, pred, grade, sex, list(svc.classes_), "mid")
    from fairspec.models.sklearn_model import load_sklearn

    model = load_sklearn(tmp_path / "m.skops")
    assert np.array_equal(svc.classes_[model.predict_class(X)], pred)


def test_tie_in_predict_proba_goes_to_predict(tmp_path):
    """decision_function [0, 1e-17, -1 + a/2]: predict_proba rounds classes hi and lo to one probability
    (softmax of logits 1e-17 apart), so its argmax says hi (the first column) where predict says lo."""
    from sklearn.linear_model import LogisticRegression

    X, grade = _data()
    lr = LogisticRegression(max_iter=500).fit(X, grade)
    lr.coef_ = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.5, 0.0, 0.0]])
    lr.intercept_ = np.array([0.0, 1e-17, -3.0])
    pred = lr.predict(X)
    P = lr.predict_proba(X)
    assert (P[:, 0] == P[:, 1]).any() and (pred == "lo").any()      # an exact tie in predict_proba ...
    assert (lr.classes_[P.argmax(axis=1)] != pred).any()            # ... which predict breaks the other way
    v, sex = _run(tmp_path, lr, X, grade, "lo")
    _check(v, pred, grade, sex, list(lr.classes_), "lo")



def test_individual_fairness_counts_predict_flips(tmp_path):
    """class(m(x)) == class(m(x')) enumerated on a small domain counts the pairs whose predict differs (6 points
    of the 100 flip with sex: 12 ordered pairs), not those of the argmax of predict_proba (7 points)."""
    import itertools

    from sklearn.svm import SVC

    rng = np.random.default_rng(4)
    n = 600
    a, b, s = rng.integers(0, 10, n), rng.integers(0, 10, n), rng.integers(0, 2, n)
    grade = np.array(["hi", "lo", "mid"])[np.clip((a + b + 2 * s + rng.integers(-12, 13, n)) // 7, 0, 2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        svc = SVC(probability=True, random_state=0).fit(np.stack([a, b, s], axis=1).astype(np.float64), grade)
    sio.dump(svc, tmp_path / "m.skops")
    G = np.array(list(itertools.product(range(10), range(10))), dtype=np.float64)
    F, M = np.c_[G, np.zeros(len(G))], np.c_[G, np.ones(len(G))]
    flips = int((svc.predict(F) != svc.predict(M)).sum())

    def by_proba(Z):
        return svc.classes_[svc.predict_proba(Z).argmax(axis=1)]

    assert flips != int((by_proba(F) != by_proba(M)).sum())        # the fixture: the two readings differ
    (tmp_path / "s.fair").write_text(
        "features F {\n  a : int in [0, 9]\n  b : int in [0, 9]\n  sex : {F, M} protected\n}\n"
        'model m = sklearn("m.skops")\nencode F for m { a, b : raw  sex : code }\n'
        "property same { forall x, x' : F  require x.* == x'.* except {sex}  ensure class(m(x)) == class(m(x')) }\n")
    (v,) = pipeline.check(tmp_path / "s.fair").verdicts
    assert v.status == "violated" and f"{2 * flips} of the 200 admissible ordered pairs" in v.reason, v.reason
