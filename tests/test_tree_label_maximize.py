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


# ---- what the value means (the verdict decides; the value is measured over the pairs it is about) ----

_BAND = """features F {
  g : {a, b} protected
  w : int in [0, 1]
}
model m = xgboost("m.json")
encode F for m {
  g : code
  w : raw
}
property p {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure label(m(x)) == label(m(x'))
  mode = maximize
}
"""
_POINTS = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])      # (g, w)


def _xgb_margins(tmp_path, margins):
    """An XGBoost binary:logistic model (base score 1/2: margin 0) whose one tree sends each of the four
    (g, w) points to its own leaf, valued ``margins`` (in the order of _POINTS): (booster, predict on them)."""
    import json

    xgb = pytest.importorskip("xgboost")
    X = np.repeat(_POINTS, 10, axis=0)
    y = np.concatenate([np.zeros(10), np.ones(10), np.r_[np.ones(7), np.zeros(3)], np.r_[np.ones(2), np.zeros(8)]])
    b = xgb.train({"objective": "binary:logistic", "max_depth": 2, "eta": 1.0, "base_score": 0.5, "nthread": 1,
                   "lambda": 0, "min_child_weight": 0}, xgb.DMatrix(X, label=y), 1)
    leaf = b.predict(xgb.DMatrix(_POINTS), pred_leaf=True).reshape(-1).astype(int)
    assert len(set(leaf.tolist())) == 4
    doc = json.loads(b.save_raw("json"))
    t = doc["learner"]["gradient_booster"]["model"]["trees"][0]
    for node, v in zip(leaf, margins):
        t["split_conditions"][int(node)] = t["base_weights"][int(node)] = float(v)
    c = xgb.Booster()
    c.load_model(bytearray(json.dumps(doc).encode()))
    c.save_model(str(tmp_path / "m.json"))
    z = np.asarray(c.predict(xgb.DMatrix(_POINTS), output_margin=True), np.float64)
    assert z.tolist() == [float(np.float32(v)) for v in margins]
    return c, np.asarray(c.predict(xgb.DMatrix(_POINTS)), np.float64)


def _band_check(tmp_path):
    from fairspec.pipeline import check

    (tmp_path / "s.fair").write_text(_BAND)
    rep = check(str(tmp_path / "s.fair"))
    assert not rep.has_errors, rep.diagnostics
    return rep.verdicts[0]


T = 2.0 ** -30          # a margin whose float32 probability is 1/2 exactly (XGBoost's p > 0.5 calls it class 0)


@pytest.mark.parametrize("margins, status, value", [
    # holds: g never changes the label, though one pair's margins straddle 0 inside the band (value > 0)
    ((T, -T, 0.5, 0.5), "holds", T),
    # holds at the cut: a margin of exactly 0 is class 0 (value 0)
    ((0.0, -0.5, 0.0, 0.0), "holds", 0.0),
    # violated at the cut: a flipping pair whose x' is exactly at 0 (value 0)
    ((0.5, 0.0, -1.0, -1.0), "violated", 0.0),
    # violated only in group w = 0, by a pair whose x' is class 0 inside the band (measure -2^-25); group
    # w = 1 keeps its labels but straddles 0 (T): the value is the flipping pairs' (the witness's), not T
    ((2.0 ** -23, 2.0 ** -25, T, -T), "violated", -(2.0 ** -25)),
])
def test_label_maximize_value_is_measured_over_the_pairs_the_verdict_is_about(tmp_path, margins, status, value):
    b, p = _xgb_margins(tmp_path, margins)
    v = _band_check(tmp_path)
    assert v.status == status, v.reason
    assert v.value == value and v.bound == (value, value), (v.value, v.bound)
    said = v.details["maximum"]
    if status == "holds":
        assert v.how == "proved" and "no pair's labels differ" in said and "not the value's sign" in said, said
    else:
        assert "pairs whose labels differ, x labelled 1 and x' 0" in said, said
        xgb = pytest.importorskip("xgboost")
        w = np.array([v.witness.x, v.witness.x_prime])
        zw = np.asarray(b.predict(xgb.DMatrix(w), output_margin=True), np.float64)
        pw = np.asarray(b.predict(xgb.DMatrix(w)), np.float64)
        assert pw[0] > 0.5 >= pw[1] and min(zw[0], -zw[1]) == value      # the witness is the value's pair
