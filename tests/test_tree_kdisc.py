"""Exact k-discrimination on tree ensembles: branch and bound over leaf combinations vs
enumerating every individual, and the Adult tree proved from the spec."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

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


# ------------------------------------------------------------------ the library's buckets (XGBoost float32)

def _xgb_model(tmp_path, stem, X, y, rounds=1, depth=1, leaves=None):
    """An XGBoost binary:logistic model fit on (X, y), its leaves optionally set by hand (tree 0's
    split_conditions at leaf nodes), loaded by fairspec."""
    import json

    xgb = pytest.importorskip("xgboost")
    from fairspec.models.boosted import XGBoostModel

    b = xgb.train({"objective": "binary:logistic", "max_depth": depth, "nthread": 1, "base_score": 0.5,
                   "eta": 0.7}, xgb.DMatrix(X, label=y), rounds)
    doc = json.loads(b.save_raw("json"))
    for node, v in (leaves or {}).items():
        doc["learner"]["gradient_booster"]["model"]["trees"][0]["split_conditions"][node] = v
    path = tmp_path / f"{stem}.json"
    path.write_text(json.dumps(doc))
    return XGBoostModel(path), path


def _counterfactual_max_k(model, path, values, xs, eps, evaluate=True):
    """(max_k on the model's trees -- with the library's buckets when ``evaluate`` --, max k by brute
    force on XGBClassifier.predict_proba over every individual, counted as the verdict counts)."""
    xgb = pytest.importorskip("xgboost")
    lo, hi = np.array([min(values), min(xs)], float), np.array([max(values), max(xs)], float)
    integer = np.ones(2, bool)
    ens = model.tree_ensemble()
    E = []
    for g in values:
        a, b = lo.copy(), hi.copy()
        a[0] = b[0] = g
        E.append(fold(ens, a, b, integer))

    def library(x):
        return model.score(np.array([[g, x[1]] for g in values], float))

    r = max_k(E, lo, hi, integer, (), eps, evaluate=library if evaluate else None)
    clf = xgb.XGBClassifier()
    clf.load_model(str(path))
    P = np.stack([clf.predict_proba(np.array([[g, x] for x in xs], float))[:, 1] for g in values], axis=1)
    return r, _exact_k(P.astype(np.float64), eps)


def _exact_k(P, eps) -> int:
    """max k over the rows of P in the buckets the verdict counts (certify: exact floor(p / eps), eps
    as written -- a float eps is its shortest decimal)."""
    from fairspec.certify.enumerate import kdisc_by_enumeration

    r = kdisc_by_enumeration(P.reshape(-1), K=P.shape[1], eps=eps, op="<=", k=P.shape[1], logit=False, claim="")
    assert np.array_equal(r.k_lo, r.k_hi)
    return int(r.k_lo.max())


def test_max_k_buckets_the_library_float32_probability_at_a_bucket_boundary(tmp_path):
    # g = a: the margin is the float32 just below ln 3, whose float32 logistic is 0.75 exactly (bucket 3
    # of eps = 0.25) and whose real logistic is 0.74999998 (bucket 2); g = b: 0.599 (bucket 2). The
    # library's k is 2; the float64 logistic of the tree sum made it 1, proved "exact"
    X = np.array([[g, x] for g in (0, 1) for x in range(8)], float)
    below_ln3 = float(np.nextafter(np.float32(np.log(3.0)), np.float32(0)))
    model, path = _xgb_model(tmp_path, "edge", X, (X[:, 0] == 1).astype(int), leaves={1: below_ln3, 2: 0.4})
    r64, brute = _counterfactual_max_k(model, path, (0.0, 1.0), range(8), 0.25, evaluate=False)
    assert brute == 2 and r64.best_k == 1          # the float64 buckets (what max_k read before)
    r, brute = _counterfactual_max_k(model, path, (0.0, 1.0), range(8), 0.25)
    assert r.exact and r.best_k == r.upper == brute == 2


def test_max_k_equals_brute_force_on_the_library_with_eps_on_its_probabilities(tmp_path):
    # tiny XGBoost models, eps placed so that a bucket boundary is exactly a probability the library
    # computes (eps = p / 2 and p / 3 for every float32 probability p of the model)
    rng = np.random.default_rng(3)
    xs = range(6)
    X = np.array([[g, x] for g in (0, 1, 2) for x in xs], float)
    differ = 0
    for seed in range(6):
        y = rng.integers(0, 2, len(X))
        model, path = _xgb_model(tmp_path, f"m{seed}", X, y, rounds=int(rng.integers(1, 4)),
                                 depth=int(rng.integers(1, 3)))
        for p in sorted(set(model.score(X).tolist())):
            for j in (2, 3):
                r, brute = _counterfactual_max_k(model, path, (0.0, 1.0, 2.0), xs, p / j)
                assert r.exact and r.best_k == r.upper == brute, (seed, p / j, r, brute)
                differ += _counterfactual_max_k(model, path, (0.0, 1.0, 2.0), xs, p / j, False)[0].best_k != brute
    assert differ      # the float64 logistic of the tree sums disagreed with the library somewhere


def test_the_spec_tree_bound_reports_the_library_k_at_a_bucket_boundary(tmp_path, monkeypatch):
    # the edge model above through a spec, on the trees' branch and bound (cells and enumeration off):
    # max k = 2 on the library, found by the bound itself (it once proved max k = 1 "exactly")
    import fairspec.kinds.tree_kdisc as tk
    from fairspec.pipeline import check

    X = np.array([[g, x] for g in (0, 1) for x in range(8)], float)
    below_ln3 = float(np.nextafter(np.float32(np.log(3.0)), np.float32(0)))
    _xgb_model(tmp_path, "edge", X, (X[:, 0] == 1).astype(int), leaves={1: below_ln3, 2: 0.4})
    (tmp_path / "k.fair").write_text('''features F {
  g : {a, b} protected
  x : int in [0, 7]
}
model m = xgboost("edge.json")
encode F for m {
  g : code
  x : raw
}
property kd {
  k_discrimination(m, over {g}, eps = 0.25) < 2
}
''')
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    monkeypatch.setattr(tk, "decide_kdisc", lambda *a, **k: None)
    (v,) = check(tmp_path / "k.fair").verdicts
    assert v.status == "violated" and v.value == 2, v.reason
    assert "leaf combinations" in v.reason and v.details["max_k"] == 2 and v.details["exact"]
    assert sorted(c["prob"] for c in v.details["counterfactuals"]) == pytest.approx([0.5986876, 0.75], abs=1e-7)


def test_max_k_counts_the_buckets_the_verdict_counts_within_1e_12_of_a_boundary(tmp_path):
    # eps = 0.25 (1 + 1e-13): the library's probability 0.75 is 2.9999999999997 eps, bucket 2 in exact
    # arithmetic (certify, eps as written) with 0.599 (bucket 2): k = 1. floor(p / eps + 1e-12) put 0.75
    # in bucket 3 and the branch and bound reported max k = 2 "exactly"
    X = np.array([[g, x] for g in (0, 1) for x in range(8)], float)
    below_ln3 = float(np.nextafter(np.float32(np.log(3.0)), np.float32(0)))
    model, path = _xgb_model(tmp_path, "edge", X, (X[:, 0] == 1).astype(int), leaves={1: below_ln3, 2: 0.4})
    eps = 0.25 * (1 + 1e-13)
    assert int(k_of(np.array([[0.75, 0.5986876]]), eps)[0]) == 2          # the approximate buckets
    r, brute = _counterfactual_max_k(model, path, (0.0, 1.0), range(8), eps)
    assert brute == 1 and r.exact and r.best_k == r.upper == 1


def test_slack_is_infinite_past_its_derivation():
    from fairspec.backends.trees.kdisc import _slack
    from dataclasses import replace

    ens = random_ensemble(0, 2, 3, 2, "logistic", np.zeros(2), np.full(2, 6.0))
    assert np.isfinite(_slack(ens)[0])
    big = replace(ens, trees=ens.trees * 3000, source="xgboost")
    assert _slack(big)[0] == float("inf")
