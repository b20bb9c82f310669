"""PBA on tree ensembles: the exact per-point decision vs enumerating every offset."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fairspec.backends.pba.core import CaseSet
from fairspec.backends.trees.pba import analyse_trees
from fairspec.models.trees import random_ensemble


def _brute(ens, cs, i):
    """(observed, flipped, rb_x, rb_p) of case i by enumerating the integer offsets."""
    c0 = ens.threshold
    offs = list(itertools.product(*[range(int(a), int(b) + 1) for a, b in zip(cs.lo[i], cs.hi[i])]))
    D = np.array(offs, dtype=float).reshape(len(offs), -1)
    X, Xp = cs.inputs(np.full(len(D), i), D)
    sx, sp = ens.aggregate(X), ens.aggregate(Xp)
    dx, dp = (sx - c0 > 0).astype(int), (sp - c0 > 0).astype(int)
    c = cs.cls[i]
    sigma = 1.0 if c == 1 else -1.0
    valid = (dx == c) & (dp == c)
    f = sigma * (sx - sp)
    obs = "proved" if np.all(f[valid] > 0) else "refuted"
    flip = "proved" if np.all(f[valid] < 0) else "refuted"
    return obs, flip, "proved" if np.all(dx == c) else "refuted", "proved" if np.all(dp == c) else "refuted"


def test_tree_pba_equals_enumeration_on_random_ensembles():
    checked = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        n = 4
        link = ["identity", "logistic"][seed % 2]
        ens = random_ensemble(seed, n, int(rng.integers(1, 6)), int(rng.integers(1, 4)), link,
                              np.zeros(n), np.full(n, 6.0), strict=bool(seed % 3 == 0))
        P = 12
        U = rng.integers(0, 7, size=(P, n)).astype(float)
        Up = U.copy()
        Up[:, 0] = 6 - U[:, 0]                         # input 0 is flipped
        cols = np.array([1, 2])
        lo = -rng.integers(0, 3, size=(P, 2)).astype(float)
        hi = rng.integers(0, 3, size=(P, 2)).astype(float)
        cls = (ens.aggregate(U) > ens.threshold).astype(int)
        cs = CaseSet(ens, U, Up, cols, np.ones(2), lo, hi, np.ones(2, bool), cls)

        def g(X):
            return ens.aggregate(X) - ens.threshold

        res = analyse_trees(cs, score=g, replay=g)
        for i in range(P):
            obs, flip, rbx, rbp = _brute(ens, cs, i)
            assert res.rb_x[i] == rbx and res.rb_p[i] == rbp, (seed, i)
            if not res.eligible[i]:
                assert res.observed[i] == "excluded"
                continue
            assert (res.observed[i], res.flipped[i]) == (obs, flip), (seed, i)
            if obs == "refuted":
                x, xp = res.witness_obs[i]
                assert (g(x) > 0) == (cls[i] == 1) and (g(xp) > 0) == (cls[i] == 1)
            checked += 1
    assert checked > 100


def test_adult_tree_pba_from_the_spec(tmp_path):
    """The Adult tree never reads sex: x and x' always get the same confidence, so no point
    is persistently more confident than its counterfactual (f = 0 refutes, as for networks)."""
    from test_tree_pairs import _adult_spec

    from fairspec.pipeline import check

    p = _adult_spec(tmp_path, '''
property dt_pba {
  pba(dt, flip sex, around adult, delta {age: 1, hours_per_week: 1})
  points = 60
  seed = 1
}
''')
    (v,) = check(p).verdicts
    pts = v.details["points"]
    assert v.status == "violated" and pts["unknown"] == 0 and pts["refuted"] == pts["eligible"] > 0
    assert v.witness.replayed_by == "scikit-learn"
    assert v.witness.outputs[0] == v.witness.outputs[1]


# ------------------------------------------------------------------ the library's own arithmetic
# A tree PBA verdict is the library's: its decisions (predict, with its tie rule) and its scores as it
# computes them (XGBoost's float32 sum and logistic, a forest's averaged probabilities), compared as
# they are. Hand-made XGBoost models put a probability at exactly 1/2 or two probabilities below
# 2**-31 (where ``p - 1/2`` in float64 is one number); every answer is checked against brute force on
# XGBClassifier / scikit-learn over the whole neighbourhood.

def _xgb_tree(path, leaves, rounds=1):
    """An XGBoost binary:logistic model of ``rounds`` depth-2 trees on (g, x): root ``g < 0.5``, both
    children ``x < 3.5``; tree r's leaves (g = 0, x <= 3), (g = 0, x >= 4), (g = 1, x <= 3), (g = 1,
    x >= 4) are ``leaves[4 r: 4 r + 4]``."""
    import json

    xgb = pytest.importorskip("xgboost")
    X = np.array([[g, x] for g in (0, 1) for x in range(8)], float)
    b = xgb.train({"objective": "binary:logistic", "max_depth": 2, "nthread": 1, "base_score": 0.5},
                  xgb.DMatrix(X, label=(X[:, 1] > 3).astype(float)), rounds)
    doc = json.loads(b.save_raw("json"))
    doc["learner"]["learner_model_param"]["base_score"] = "5E-1"
    for r, t in enumerate(doc["learner"]["gradient_booster"]["model"]["trees"]):
        t.update({"left_children": [1, 3, 5, -1, -1, -1, -1], "right_children": [2, 4, 6, -1, -1, -1, -1],
                  "parents": [2147483647, 0, 0, 1, 1, 2, 2], "split_indices": [0, 1, 1, 0, 0, 0, 0],
                  "split_conditions": [0.5, 3.5, 3.5] + [float(v) for v in leaves[4 * r:4 * r + 4]],
                  "default_left": [0] * 7, "split_type": [0] * 7, "base_weights": [0.0] * 7,
                  "loss_changes": [0.0] * 7, "sum_hessian": [0.0] * 7, "categories": [], "categories_nodes": [],
                  "categories_segments": [], "categories_sizes": []})
        t["tree_param"]["num_nodes"] = "7"
    path.write_text(json.dumps(doc))
    clf = xgb.XGBClassifier()
    clf.load_model(str(path))
    return clf


def _library_brute(label, prob, U, Up, lo, hi, cls):
    """(observed, flipped, rb_x, rb_p) per case by every integer offset of input 1 on the library:
    ``label(X)`` its 0/1 decision, ``prob(X)`` its score."""
    out = []
    for i in range(len(U)):
        D = np.arange(int(lo[i]), int(hi[i]) + 1, dtype=float)
        X, Xp = np.repeat(U[i:i + 1], len(D), 0), np.repeat(Up[i:i + 1], len(D), 0)
        X[:, 1] += D
        Xp[:, 1] += D
        dx, dp, sx, sp = label(X), label(Xp), prob(X), prob(Xp)
        c = cls[i]
        valid = (dx == c) & (dp == c)
        better, worse = (sx > sp, sx < sp) if c == 1 else (sp > sx, sp < sx)
        z = list(D).index(0.0)
        eligible = dx[z] == c and dp[z] == c
        out.append((("proved" if np.all(better[valid]) else "refuted") if eligible else "excluded",
                    ("proved" if np.all(worse[valid]) else "refuted") if eligible else "excluded",
                    "proved" if np.all(dx == c) else "refuted", "proved" if np.all(dp == c) else "refuted"))
    return out


def _cases_of(ens_or_model, rng, P=16):
    U = np.column_stack([rng.integers(0, 2, P), rng.integers(0, 8, P)]).astype(float)
    Up = U.copy()
    Up[:, 0] = 1 - U[:, 0]
    lo = -np.minimum(U[:, 1], rng.integers(0, 3, P)).reshape(P, 1).astype(float)
    hi = np.minimum(7 - U[:, 1], rng.integers(0, 3, P)).reshape(P, 1).astype(float)
    return U, Up, lo, hi


def _check_against_library(model, label, prob, rng):
    ens = model.tree_ensemble()
    U, Up, lo, hi = _cases_of(model, rng)
    cls = rng.integers(0, 2, len(U))
    cs = CaseSet(ens, U, Up, np.array([1]), np.ones(1), lo, hi, np.ones(1, bool), cls)
    res = analyse_trees(cs, score=model.score, replay=model.replay, decide=model.decide)
    want = _library_brute(label, prob, U, Up, lo[:, 0], hi[:, 0], cls)
    got = list(zip(res.observed, res.flipped, res.rb_x, res.rb_p))
    assert got == want
    for i, (x, xp) in res.witness_obs.items():      # every witness is one on the library
        assert label(x)[0] == label(xp)[0] == cls[i]
        assert (prob(x)[0] <= prob(xp)[0]) if cls[i] == 1 else (prob(xp)[0] <= prob(x)[0])
    return sum(s != "excluded" for s in res.observed)


@pytest.mark.parametrize("index", [1, 0])
def test_tree_pba_equals_the_library_at_ties_and_tiny_probabilities(tmp_path, index):
    # leaves that put XGBoost's probability at exactly 1/2 (a margin of 0, or one whose float32 logistic
    # is 1/2), at distinct probabilities below 2**-31, or at float32 sums that round differently
    from fairspec.models import load_model

    rng = np.random.default_rng(7 + index)
    pool = [0.0, 0.0, 1e-9, -1e-9, 2.0 ** -26, -40.0, -39.0, -41.5, 40.0, 39.0, 0.5, -0.5, 1.0, -1.0]
    eligible = 0
    for k in range(8):
        rounds = 1 + k % 2
        leaves = rng.choice(pool, 4 * rounds)
        path = tmp_path / f"m{k}.json"
        clf = _xgb_tree(path, leaves, rounds)
        model = load_model("xgboost", path, index=index)
        label = lambda X: (clf.predict(X) == index).astype(int)                        # noqa: E731
        prob = lambda X: clf.predict_proba(X)[:, index].astype(np.float64)            # noqa: E731
        eligible += _check_against_library(model, label, prob, rng)
    assert eligible > 20


def test_tree_pba_of_a_forest_whose_averaged_probability_is_one_half(tmp_path):
    # leaves set by hand to shares 1/4, 1/2, 3/4, 0, 1: the average of two or three trees is often
    # exactly 1/2, which scikit-learn's predict calls class 0 (argmax's first column)
    import pickle

    from sklearn.ensemble import RandomForestClassifier

    from fairspec.models import load_model

    X = np.array([[g, x] for g in (0, 1) for x in range(8) for _ in range(4)], float)
    rng = np.random.default_rng(2)
    y = ((X[:, 1] + 3 * X[:, 0] + rng.normal(0, 2, len(X))) > 5).astype(int)
    grid = np.array([[g, x] for g in (0, 1) for x in range(8)], float)
    ties = eligible = 0
    for k in range(6):
        rf = RandomForestClassifier(n_estimators=2 + k % 2, max_depth=3, random_state=k).fit(X, y)
        for est in rf.estimators_:
            v = est.tree_.value
            share = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], v.shape[0])
            v[:, 0, 0], v[:, 0, 1] = 1.0 - share, share
        path = tmp_path / f"rf{k}.pkl"
        path.write_bytes(pickle.dumps(rf))
        ties += int(np.sum(rf.predict_proba(grid)[:, 1] == 0.5))
        for index in (1, 0):
            model = load_model("sklearn", path, index=index, trust_pickle=True)
            label = lambda X: (rf.predict(X) == index).astype(int)                     # noqa: E731
            prob = lambda X: rf.predict_proba(X)[:, index]                             # noqa: E731
            eligible += _check_against_library(model, label, prob, np.random.default_rng(10 * k + index))
    assert ties and eligible > 20


_PBA_SPEC = '''data d = csv("d.csv", label = y == "yes")
features F from d {{
  g : {{a, b}} protected
  x : int in [0, 7]
}}
model m = {decl}
encode F for m {{
  g : code
  x : raw
}}
property bias {{
  pba(m, flip g, around d, delta {{x: 1}})
}}
'''


@pytest.mark.parametrize("leaves, decl, y, want", [
    # index = 0: (a, 4)'s probability is exactly 1/2, which XGBClassifier.predict calls class 0 (the
    # declared positive) and where x is less confident than x' (0.5 < 0.525): violated. Decided as
    # ``1 - p - 1/2 > 0`` it was no class-0 decision, the offset was skipped: holds (proved)
    ([-3, 0, -1, -0.1], 'xgboost("t.json", index = 0)', "yes", "violated"),
    # class 0 at margins -40 / -39: p(x) = 4.2e-18 < p(x') = 1.2e-17 on every offset, PBA-verified;
    # ``p - 1/2`` is -0.5 for both in float64, which refuted it: violated
    ([-40, -40, -39, -39], 'xgboost("t.json")', "no", "holds"),
])
def test_pba_verdict_on_the_library_at_a_tie_and_at_tiny_probabilities(tmp_path, leaves, decl, y, want):
    from fairspec.pipeline import check

    clf = _xgb_tree(tmp_path / "t.json", leaves)
    (tmp_path / "d.csv").write_text(f"g,x,y\na,3,{y}\n")
    (tmp_path / "s.fair").write_text(_PBA_SPEC.format(decl=decl))
    (v,) = check(tmp_path / "s.fair").verdicts
    index = 0 if "index = 0" in decl else 1
    label = lambda X: (clf.predict(X) == index).astype(int)                             # noqa: E731
    prob = lambda X: clf.predict_proba(X)[:, index].astype(np.float64)                 # noqa: E731
    (brute,) = _library_brute(label, prob, np.array([[0.0, 3.0]]), np.array([[1.0, 3.0]]), [-1], [1],
                              [1 if y == "yes" else 0])
    assert brute[0] == ("proved" if want == "holds" else "refuted")
    assert v.status == want, v.reason
    if want == "holds":
        assert v.how == "proved" and v.proof is not None
    else:
        x, xp = v.witness.x, v.witness.x_prime
        assert label(np.array([x]))[0] == label(np.array([xp]))[0] == (1 if y == "yes" else 0)
