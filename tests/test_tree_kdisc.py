"""Exact k-discrimination on tree ensembles: branch and bound over leaf combinations vs
enumerating every individual, and the Adult tree proved from the spec."""

from __future__ import annotations

import itertools

import numpy as np

from fairspec.backends.search.kdisc import k_of
from fairspec.backends.trees.kdisc import max_k
from fairspec.backends.trees.space import fold
from fairspec.models.network import sigmoid
from fairspec.models.trees import random_ensemble


def test_max_k_equals_enumeration_on_60_random_ensembles():
    for seed in range(60):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(3, 5))
        link = ["identity", "logistic"][seed % 2]
        lo = np.zeros(n)
        hi = rng.integers(1, 4, size=n).astype(float)
        hi[0] = 3.0                                   # protected input 0 takes 4 values: K = 4
        ens = random_ensemble(seed, n, int(rng.integers(1, 6)), int(rng.integers(1, 4)), link, lo, hi)
        eps = float(rng.choice([0.05, 0.1, 0.25]))
        integer = np.ones(n, bool)
        combos = [0.0, 1.0, 2.0, 3.0]
        ensembles = []
        for v in combos:
            a, b = lo.copy(), hi.copy()
            a[0] = b[0] = v
            ensembles.append(fold(ens, a, b, integer))
        r = max_k(ensembles, lo, hi, integer, (), eps)
        # enumeration over the shared inputs
        grid = np.array(list(itertools.product(*[np.arange(lo[i], hi[i] + 1) for i in range(1, n)])))
        P = []
        for v in combos:
            X = np.column_stack([np.full(len(grid), v), grid])
            s = ens.aggregate(X)
            P.append(s if link == "identity" else sigmoid(s))
        want = int(k_of(np.clip(np.stack(P, axis=1), 0, 1), eps).max())
        assert r.exact and r.best_k == want == r.upper, (seed, r, want)
        if r.point is not None:
            x = r.point.copy()
            got = []
            for v in combos:
                x[0] = v
                s = ens.aggregate(x[None])
                got.append(s if link == "identity" else sigmoid(s))
            assert int(k_of(np.clip(np.array(got).reshape(1, -1), 0, 1), eps)[0]) == want


def test_a_box_budget_gives_a_proved_upper_bound():
    ens = random_ensemble(7, 4, 6, 3, "logistic", np.zeros(4), np.full(4, 3.0))
    integer = np.ones(4, bool)
    ensembles = []
    for v in range(4):
        a, b = np.zeros(4), np.full(4, 3.0)
        a[0] = b[0] = v
        ensembles.append(fold(ens, a, b, integer))
    full = max_k(ensembles, np.zeros(4), np.full(4, 3.0), integer, (), 0.05)
    cut = max_k(ensembles, np.zeros(4), np.full(4, 3.0), integer, (), 0.05, max_boxes=2)
    assert cut.best_k <= full.best_k <= cut.upper


def test_adult_tree_k_discrimination_is_proved_from_the_spec(tmp_path):
    from test_tree_pairs import _adult_spec

    from fairspec.pipeline import check

    p = _adult_spec(tmp_path, '''
property dt_k {
  k_discrimination(dt, over {sex, race}, eps = 0.05) < 2
}
''')
    (v,) = check(p).verdicts
    assert v.status == "holds" and v.how == "proved" and v.value == 1
    # certified: every individual's leaf box (derived by certify) evaluated on scikit-learn
    assert v.proof is not None and v.proof.method == "enumeration"
    assert v.details["boxes"] < 1000 and v.details["max_k"] == 1
