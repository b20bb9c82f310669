"""maximize of a ``label`` post measures from the cut the library's label flips at (h1 of s24).

``min(z - c, c - z')`` over the admissible pairs (x labelled 1), z the library's margin: c is 0 for
every tree model but an XGBoost ``binary:logitraw`` model read by its predict (``output = "predict"``
or ``score = prob``), which ``XGBClassifier.predict`` calls class 1 where its margin is > 1/2
(``_Boosted.label_cut``, the cut every tree engine reads: ``TreeEnsemble.cut``). The measure was
``min(z, -z')`` whatever the rule, so on the booster below (margins 0.5625 / -1 at x = 0, 1.5 / 0.25 at
x = 1 for g = 0 / 1) read by its predict the enumeration reported 0.5625, the pair at x = 0 (the
margin rule's), and the solver path with ``index = 0`` -0.25, a violation's measure below 0; the
largest is 0.25 at x = 1. On the second booster (0.375 / -0.125 at x = 0: across 0, not 1/2) the
predict rule holds and the enumeration reported 0.125, a positive measure for a property that holds.
Against brute force over every admissible pair on the library, on both paths; the witness replays on
the loaded model and on the library itself.
"""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

import numpy as np
import pytest

GRID = np.array([[g, x] for g in (0.0, 1.0) for x in (0.0, 1.0)])
# margins at (g, x): one violates under both rules with different largest pairs; one holds by predict only
WITNESS = {(0, 0): 0.5625, (1, 0): -1.0, (0, 1): 1.5, (1, 1): 0.25}
HOLDS = {(0, 0): 0.375, (1, 0): -0.125, (0, 1): 0.25, (1, 1): 0.125}
SPEC = """features F {
  g : int in [0, 1] protected
  x : int in [0, 1]
}
model m = xgboost("m.json", %s)
encode F for m {
  g : raw
  x : raw
}
property mlab {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure label(m(x)) == label(m(x'))
  mode = maximize
}
"""
DECLS = ['output = "predict"', "score = prob", 'output = "predict", index = 0', 'output = "margin"',
         "score = logit", 'output = "margin", index = 0']


def _booster(path, leaves):
    """A binary:logitraw booster of one depth-2 tree (g < 0.5 at the root, x < 0.5 below), base score 0:
    its margin at (g, x) is ``leaves[g, x]``."""
    xgb = pytest.importorskip("xgboost")
    X = np.repeat(np.array([[0.0, 0.0], [1.0, 1.0]]), 5, axis=0)
    b = xgb.train({"objective": "binary:logitraw", "max_depth": 1, "nthread": 1, "base_score": 0.0,
                   "min_child_weight": 0, "eta": 1}, xgb.DMatrix(X, label=X[:, 0]), 1)
    doc = json.loads(b.save_raw("json"))
    doc["learner"]["learner_model_param"]["base_score"] = "0E0"
    t = doc["learner"]["gradient_booster"]["model"]["trees"][0]
    vals = [0.0, 0.0, 0.0] + [float(leaves[k]) for k in ((0, 0), (0, 1), (1, 0), (1, 1))]
    t.update(left_children=[1, 3, 5, -1, -1, -1, -1], right_children=[2, 4, 6, -1, -1, -1, -1],
             parents=[2147483647, 0, 0, 1, 1, 2, 2], split_indices=[0, 1, 1, 0, 0, 0, 0],
             split_conditions=[0.5, 0.5, 0.5] + vals[3:], default_left=[0] * 7, split_type=[0] * 7,
             base_weights=vals, loss_changes=[1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0],
             sum_hessian=[4.0, 2.0, 2.0, 1.0, 1.0, 1.0, 1.0])
    t["tree_param"]["num_nodes"] = "7"
    path.write_text(json.dumps(doc))
    clf = xgb.XGBClassifier()
    clf.load_model(str(path))
    margin = np.asarray(clf.get_booster().predict(xgb.DMatrix(GRID), output_margin=True), dtype=np.float64)
    assert margin.tolist() == [leaves[0, 0], leaves[0, 1], leaves[1, 0], leaves[1, 1]]
    return clf


def _library(clf, X, decl):
    """(labels, margins z as the declared class reads them, the cut c on z) by the library alone."""
    import xgboost as xgb

    m = np.asarray(clf.get_booster().predict(xgb.DMatrix(X), output_margin=True), dtype=np.float64)
    by_predict = "predict" in decl or "prob" in decl
    lab = clf.predict(X).astype(np.int64) if by_predict else (m > 0).astype(np.int64)
    c = 0.5 if by_predict else 0.0
    if "index = 0" in decl:
        return 1 - lab, -m, -c
    return lab, m, c


def _measure(z, zp, c) -> Fraction:
    return min(Fraction(z) - Fraction(c), Fraction(c) - Fraction(zp))


def _truth(clf, decl):
    """(does a pair flip, the exact largest min(z - c, c - z') over the admissible ordered pairs)."""
    lab, z, c = _library(clf, GRID, decl)
    flips, best = False, None
    for i, j in itertools.product(range(len(GRID)), repeat=2):
        if GRID[i, 0] != GRID[j, 0] and GRID[i, 1] == GRID[j, 1]:
            flips |= bool(lab[i] == 1 and lab[j] == 0)
            v = _measure(z[i], z[j], c)
            best = v if best is None else max(best, v)
    return flips, best


def _check(tmp_path, decl):
    from fairspec.pipeline import check

    (tmp_path / "s.fair").write_text(SPEC % decl)
    rep = check(str(tmp_path / "s.fair"))
    assert not rep.has_errors, rep.diagnostics
    return rep.verdicts[0]


@pytest.mark.parametrize("leaves", [WITNESS, HOLDS], ids=["witness", "holds"])
@pytest.mark.parametrize("decl", DECLS)
@pytest.mark.parametrize("path", ["enumeration", "solver"])
def test_label_maximize_measures_from_the_librarys_cut(tmp_path, monkeypatch, leaves, decl, path):
    from fairspec.backends.trees.runtime import runtime_outputs
    from fairspec.models import load_model

    clf = _booster(tmp_path / "m.json", leaves)
    flips, truth = _truth(clf, decl)
    if path == "solver":
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    v = _check(tmp_path, decl)
    if not flips:
        assert v.status == "holds" and v.how == "proved" and v.proof is not None, v.reason
        if path == "enumeration":            # every pair's measure is <= 0, and the largest is exact
            assert truth <= 0 and v.value == float(truth) and v.bound == (float(truth), float(truth))
        return
    assert v.status == "violated", v.reason
    w = np.array([v.witness.x, v.witness.x_prime])
    lab, z, c = _library(clf, w, decl)
    assert lab.tolist() == [1, 0]                                   # the library breaks it on the witness
    kw = {"index": 0} if "index = 0" in decl else {}
    out = {"output": "margin"} if "margin" in decl else {"output": "predict"} if "predict" in decl else \
        {"score_kind": decl.rsplit("= ", 1)[1]}
    loaded = load_model("xgboost", tmp_path / "m.json", **kw, **out)
    assert runtime_outputs(loaded, w, "label").tolist() == [1, 0]   # and the loaded model replays it
    reached = _measure(z[0], z[1], c)
    assert truth > 0 and v.value == float(reached)                  # a value the runtime reaches, on the witness
    if path == "enumeration":
        assert reached == truth and v.bound == (float(truth), float(truth))
    else:
        assert v.bound[0] == v.value <= truth <= v.bound[1], (v.bound, truth)


def test_the_predict_rule_and_the_margin_rule_disagree_on_these_boosters(tmp_path):
    # each case above tells the two cuts apart: the witness booster's largest pair differs between them,
    # the holds booster flips by the margin rule only
    clf = _booster(tmp_path / "m.json", WITNESS)
    assert _truth(clf, 'output = "predict"') == (True, Fraction(1, 4))
    assert _truth(clf, 'output = "margin"') == (True, Fraction(9, 16))
    clf = _booster(tmp_path / "m.json", HOLDS)
    assert _truth(clf, 'output = "predict"') == (False, Fraction(-1, 8))
    assert _truth(clf, 'output = "margin"') == (True, Fraction(1, 8))


def test_label_maximum_is_exact_where_the_differences_round():
    # float32 margins of every scale against cuts whose differences with them are not floats: the
    # index and value against Fractions over every element (and under a mask)
    from fairspec.kinds.tree_pairs import label_maximum

    rng = np.random.default_rng(3)
    for trial in range(300):
        n = int(rng.integers(1, 40))
        scale = 2.0 ** rng.integers(-70, 8, size=n)
        z = (rng.choice([-1, 1], n) * scale * rng.random(n)).astype(np.float32).astype(np.float64)
        zp = (rng.choice([-1, 1], n) * scale * rng.random(n)).astype(np.float32).astype(np.float64)
        if trial % 3 == 0:                      # many equal floats whose exact values differ
            z[:] = z[0]
            zp = z[0] - 2.0 ** -60 * rng.integers(0, 4, n)
        cut = [0.0, 0.5, -0.5, 0.1, 1 / 3, 2.0 ** -30, float(z[0])][trial % 7]
        mask = rng.random(n) < 0.7 if trial % 2 else None
        if mask is not None and not mask.any():
            mask[0] = True
        exact = [_measure(a, b, cut) if mask is None or mask[k] else None for k, (a, b) in enumerate(zip(z, zp))]
        want = max(e for e in exact if e is not None)
        k, got = label_maximum(z, zp, cut, mask=mask)
        assert got == want and exact[k] == want, (trial, cut)
