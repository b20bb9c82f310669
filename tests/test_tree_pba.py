"""PBA on tree ensembles: the exact per-point decision vs enumerating every offset."""

from __future__ import annotations

import itertools

import numpy as np

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
