"""Proof path: ``certify.trees.prove_unread`` (``holds (proved)`` because no split test of the tree
model tells the protected values apart, so x and x' reach the same leaves), reached from
``kinds/tree_pairs.decide_by_enumeration`` on the solver path (FAIRSPEC_ENUMERATE_PAIRS=0), against
brute force on the library's own ``predict`` / ``predict_proba`` over every pair: scikit-learn (``x <= t``
after a float32 cast) and XGBoost (``x < t``: a threshold exactly on a value of g reads it, the next
float32 above it does not).

Biased to ties: the one split on the protected g has its threshold moved onto and around the grid of
g's values (exactly a value, a float32 rounding away from it, outside the range), where the tree's
float32 cast of the input decides whether the test is constant on g's values; the posts ``label`` and
``|prob(m(x)) - prob(m(x'))| <= 0`` / ``< 0.5`` / ``<= 0.5`` (the brute-force largest difference is
exactly 0.5 when the test reads g)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

pytest.importorskip("skops")

GV = range(4)          # g : int in [0, 3] protected
XV = range(8)          # x : int in [0, 7]


def _tree():
    """x <= 3.5 ? (g <= 1.5 ? 1/4 : 3/4) : 1: a tree that reads g on one side."""
    from sklearn.tree import DecisionTreeClassifier

    X, y = [], []
    for g, x in itertools.product(GV, XV):
        for r in range(4):
            X.append([g, x])
            y.append(1 if x > 3 else int(r < (1 if g <= 1 else 3)))
    est = DecisionTreeClassifier(max_depth=2, random_state=0).fit(np.array(X, float), np.array(y))
    t = est.tree_
    g_nodes = [i for i in range(t.node_count) if t.children_left[i] != -1 and t.feature[i] == 0]
    assert len(g_nodes) == 1
    return est, g_nodes[0]


def _brute(est):
    """(some pair's label differs, the largest |prob difference|) over every pair with x = x'."""
    X = np.array([[g, x] for x in XV for g in GV], float)
    lab = est.predict(X).reshape(len(XV), len(GV))
    P = est.predict_proba(X)[:, 1].reshape(len(XV), len(GV))
    return bool(np.any(lab != lab[:, :1])), float(np.max(P.max(axis=1) - P.min(axis=1)))


SPEC = """features F {
  g : int in [0, 3] protected
  x : int in [0, 7]
}
model m = sklearn("m.skops")
encode F for m {
  g : raw
  x : raw
}
"""

POSTS = {"lab": ("label(m(x)) == label(m(x'))", None, None), "p0": ("|prob(m(x)) - prob(m(x'))| <= 0", "<=", 0.0),
         "plt": ("|prob(m(x)) - prob(m(x'))| < 0.5", "<", 0.5), "ple": ("|prob(m(x)) - prob(m(x'))| <= 0.5", "<=", 0.5)}


@pytest.mark.parametrize("threshold", [3.0, 2.9999999, float(np.nextafter(np.float32(3), np.float32(0))),
                                       3.0000001, -0.5, 0.0, -0.0, 1.5, 7.5])
def test_unread_protected_split_agrees_with_brute_force(tmp_path, monkeypatch, threshold):
    import skops.io as sio

    from fairspec.pipeline import check

    est, node = _tree()
    est.tree_.threshold[node] = threshold
    assert est.tree_.threshold[node] == threshold
    sio.dump(est, tmp_path / "m.skops")
    body = "".join(f"property {n} {{\n  forall x, x' : F\n  require x.* == x'.* except {{g}}\n  ensure {e}\n}}\n"
                   for n, (e, _, _) in POSTS.items())
    (tmp_path / "s.fair").write_text(SPEC + body)
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    rep = check(tmp_path / "s.fair")
    assert not rep.has_errors, rep.diagnostics
    differs, gap = _brute(est)
    reads = gap > 0
    for v in rep.verdicts:
        _, op, eps = POSTS[v.name]
        truth = (not differs) if op is None else (gap < eps if op == "<" else gap <= eps)
        if v.status == "holds":
            assert truth, (threshold, v.name, gap, v.reason)
            assert v.how == "proved" and v.proof is not None
            if not reads:
                assert v.proof.method == "exact-arithmetic" and "same leaves" in v.reason, v.reason
        elif v.status == "violated":
            assert not truth, (threshold, v.name, gap, v.reason)
            w = v.witness
            a, b = est.predict_proba(np.array([w.x, w.x_prime], float))[:, 1]
            la, lb = est.predict(np.array([w.x, w.x_prime], float))
            assert w.x[1] == w.x_prime[1]
            assert (la != lb) if op is None else not (abs(a - b) < eps if op == "<" else abs(a - b) <= eps)
        else:
            assert reads, (threshold, v.name, v.reason)      # an unread model is decided by the proof


def _xgb(tmp_path, threshold):
    """An XGBoost binary:logistic model (x then g, as above), the split on g moved to ``threshold``
    (XGBoost: left when float32(x) < threshold); its own XGBClassifier for brute force."""
    import json

    xgb = pytest.importorskip("xgboost")
    X = np.array([[g, x] for g in GV for x in XV for _ in range(4)], float)
    y = np.array([1 if x > 3 else int(r < (1 if g <= 1 else 3))
                  for g in GV for x in XV for r in range(4)])
    b = xgb.train({"objective": "binary:logistic", "max_depth": 2, "nthread": 1, "base_score": 0.5, "eta": 1.0},
                  xgb.DMatrix(X, label=y), 1)
    doc = json.loads(b.save_raw("json"))
    t = doc["learner"]["gradient_booster"]["model"]["trees"][0]
    g_nodes = [i for i, (l, f) in enumerate(zip(t["left_children"], t["split_indices"])) if l != -1 and f == 0]
    assert len(g_nodes) == 1
    t["split_conditions"][g_nodes[0]] = threshold
    (tmp_path / "m.json").write_text(json.dumps(doc))
    clf = xgb.XGBClassifier()
    clf.load_model(str(tmp_path / "m.json"))
    return clf


@pytest.mark.parametrize("threshold", [3.0, float(np.nextafter(np.float32(3), np.float32(4))), 0.0, -0.0,
                                       float(np.nextafter(np.float32(0), np.float32(1))), 4.0, 2.5])
def test_unread_xgboost_strict_split_agrees_with_brute_force(tmp_path, monkeypatch, threshold):
    from fairspec.pipeline import check

    clf = _xgb(tmp_path, threshold)
    body = "".join(f"property {n} {{\n  forall x, x' : F\n  require x.* == x'.* except {{g}}\n  ensure {e}\n}}\n"
                   for n, (e, _, _) in POSTS.items())
    (tmp_path / "s.fair").write_text(SPEC.replace('sklearn("m.skops")', 'xgboost("m.json")') + body)
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    rep = check(tmp_path / "s.fair")
    assert not rep.has_errors, rep.diagnostics
    X = np.array([[g, x] for x in XV for g in GV], float)
    lab = clf.predict(X).reshape(len(XV), len(GV))
    P = clf.predict_proba(X)[:, 1].astype(np.float64).reshape(len(XV), len(GV))
    differs, gap = bool(np.any(lab != lab[:, :1])), float(np.max(P.max(axis=1) - P.min(axis=1)))
    for v in rep.verdicts:
        _, op, eps = POSTS[v.name]
        truth = (not differs) if op is None else (gap < eps if op == "<" else gap <= eps)
        assert v.status != "holds" or truth, (threshold, v.name, gap, v.reason)
        assert v.status != "violated" or not truth, (threshold, v.name, gap, v.reason)
        if v.status == "violated":
            w = v.witness
            a, b = clf.predict_proba(np.array([w.x, w.x_prime], float))[:, 1]
            la, lb = clf.predict(np.array([w.x, w.x_prime], float))
            assert (la != lb) if op is None else not (abs(a - b) < eps if op == "<" else abs(a - b) <= eps)
        if gap == 0 and not differs:
            assert v.status == "holds", (threshold, v.name, v.reason)
