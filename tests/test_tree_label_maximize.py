"""maximize of a ``label`` post on tree models, on the solver path (audit s18/h3 finding 5): the value is
``min(z, -z')`` of a replayed pair in the library's margin (the solver's largest-margin pair when the
runtime confirms it), the interval's upper end certify's bound on ``z - z'`` halved; a forest whose
runtime has no margin reports no value (its logit of a probability would be fairspec's number, not the
runtime's), on both paths, as a network whose runtime outputs no logit. Against brute force over every
admissible pair, and against the enumeration path's exact value."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

GRID = np.array(list(itertools.product(range(3), range(5), range(4))), dtype=float)   # g, a, b
SPEC = """features F {
  g : int in [0, 2] protected
  a : int in [0, 4]
  b : int in [0, 3]
}
model m = %s
encode F for m {
  g : raw
  a : raw
  b : raw
}
property mlab {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure label(m(x)) == label(m(x'))
  mode = maximize
}
"""


def _data():
    rng = np.random.default_rng(7)
    X = GRID[rng.integers(0, len(GRID), 300)]
    y = ((X[:, 1] + 0.7 * X[:, 0] - 0.5 * X[:, 2] + rng.normal(0, 0.8, len(X))) > 2.5).astype(int)
    return X, y


def _truth(z):
    """the exact largest min(z(x), -z(x')) over the admissible ordered pairs whose labels differ (x: label 1)."""
    best = -np.inf
    for i, j in itertools.product(range(len(GRID)), repeat=2):
        if GRID[i, 0] != GRID[j, 0] and (GRID[i, 1:] == GRID[j, 1:]).all() and z[i] > 0 >= z[j]:
            best = max(best, min(float(z[i]), -float(z[j])))
    return best


def _models(tmp_path):
    X, y = _data()
    out = []
    xgb = pytest.importorskip("xgboost")
    b = xgb.XGBClassifier(n_estimators=6, max_depth=3, random_state=0, n_jobs=1).fit(X, y).get_booster()
    b.save_model(str(tmp_path / "m.json"))
    out.append(('xgboost("m.json")', lambda G: b.predict(xgb.DMatrix(G), output_margin=True)))
    lgb = pytest.importorskip("lightgbm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lb = lgb.train({"objective": "binary", "num_leaves": 4, "min_data_in_leaf": 5, "verbose": -1,
                        "num_threads": 1}, lgb.Dataset(X, label=y), 6)
    lb.save_model(str(tmp_path / "m.txt"))
    out.append(('lightgbm("m.txt")', lambda G: lb.predict(G, raw_score=True)))
    return out


def _check(tmp_path, decl):
    from fairspec.pipeline import check

    (tmp_path / "s.fair").write_text(SPEC % decl)
    rep = check(str(tmp_path / "s.fair"))
    assert not rep.has_errors, rep.diagnostics
    return rep.verdicts[0]


def test_boosted_label_maximize_on_the_solver_path(tmp_path, monkeypatch):
    for decl, margin in _models(tmp_path):
        z = np.asarray(margin(GRID), dtype=np.float64)
        truth = _truth(z)
        assert truth > 0, decl                       # a violation exists: the property is violated
        enumerated = _check(tmp_path, decl)
        assert enumerated.status == "violated" and enumerated.value == truth and enumerated.bound == (truth, truth)
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
        v = _check(tmp_path, decl)
        monkeypatch.delenv("FAIRSPEC_ENUMERATE_PAIRS")
        assert v.status == "violated", (decl, v.reason)
        w = v.witness
        zw = np.asarray(margin(np.array([w.x, w.x_prime])), dtype=np.float64)
        assert v.value == min(zw[0], -zw[1]) > 0                 # reached by the runtime, on the witness
        assert v.bound[0] == v.value <= truth <= v.bound[1], (decl, v.bound, truth)
        assert v.details["maximum"] == "[best replayed pair, certified upper bound]"


@pytest.mark.parametrize("forest", ["RandomForestClassifier", "ExtraTreesClassifier"])
def test_forest_label_maximize_reports_no_value_on_either_path(tmp_path, monkeypatch, forest):
    import skops.io as sio
    import sklearn.ensemble

    from fairspec.kinds.tree_pairs import NO_MARGIN

    X, y = _data()
    rf = getattr(sklearn.ensemble, forest)(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    sio.dump(rf, tmp_path / "m.skops")
    lab = rf.predict(GRID)
    enumerated = _check(tmp_path, 'sklearn("m.skops")')
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    solved = _check(tmp_path, 'sklearn("m.skops")')
    for v in (enumerated, solved):
        assert v.status == "violated", v.reason
        assert v.value is None and v.bound is None
        assert v.details["maximum"] == NO_MARGIN and "best_value" not in v.details
        w = v.witness                           # the pair reported breaks the property on the library
        assert rf.predict(np.array([w.x, w.x_prime])).tolist() == [1, 0]
    assert "enumeration" in enumerated.reason and "solver" in solved.reason
    assert (lab == 1).any() and (lab == 0).any()


def test_a_forest_that_holds_gets_no_value_and_a_boosted_sklearn_model_keeps_its_value(tmp_path, monkeypatch):
    import skops.io as sio
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier

    from fairspec.kinds.tree_pairs import NO_MARGIN

    X, y = _data()
    # a forest that never reads g: every pair keeps its label (holds, proved by enumeration), and still no value
    rf = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(np.c_[X[:, :1] * 0, X[:, 1:]], y)
    sio.dump(rf, tmp_path / "m.skops")
    v = _check(tmp_path, 'sklearn("m.skops")')
    assert v.status == "holds" and v.how == "proved", v.reason
    assert v.value is None and v.bound is None and v.details["maximum"] == NO_MARGIN
    # GradientBoosting has a margin (decision_function): its value stays, exact by enumeration, an interval
    # by the solver
    gb = GradientBoostingClassifier(n_estimators=5, max_depth=2, random_state=0).fit(X, y)
    sio.dump(gb, tmp_path / "m.skops")
    truth = _truth(gb.decision_function(GRID))
    assert truth > 0
    v = _check(tmp_path, 'sklearn("m.skops")')
    assert v.status == "violated" and v.value == truth and v.bound == (truth, truth)
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    v = _check(tmp_path, 'sklearn("m.skops")')
    assert v.status == "violated" and v.bound[0] == v.value <= truth <= v.bound[1]
    assert v.details["maximum"] == "[best replayed pair, certified upper bound]"
