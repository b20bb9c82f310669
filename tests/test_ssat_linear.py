"""SSAT on linear classifiers of realistic size (logistic regression on Adult /
German: ~10 multi-valued features, a label every feature depends on) agrees
with FVGM's dynamic program and stays within the node budget."""

from __future__ import annotations

import numpy as np
import pytest

from fairspec.analyses.distribution import BayesNet, Variable
from fairspec.backends import dp, ssat
from fairspec.backends.boolean import LinearRule
from fairspec.backends.ssat import solver as ssat_solver

TOL = 1e-9


def justicia_net(rng, n_feat=12, ks=(3, 4, 5, 6, 7, 8, 10)):
    """Justicia's distribution: protected attributes, a label conditional on
    them, every feature conditional on (protected, label)."""
    vs, parents, cpts = [], {}, {}
    prot = []
    for name, k in (("sex", 2), ("race", 3)):
        vs.append(Variable(name, tuple(range(k))))
        parents[name] = ()
        cpts[name] = rng.dirichlet(np.ones(k))
        prot.append(name)
    vs.append(Variable("y", (0, 1)))
    parents["y"] = ("sex", "race")
    cpts["y"] = rng.dirichlet(np.ones(2), size=6).reshape(2, 3, 2)
    for i in range(n_feat):
        k = int(rng.choice(ks))
        vs.append(Variable(f"X{i}", tuple(range(k))))
        parents[f"X{i}"] = ("sex", "race", "y")
        cpts[f"X{i}"] = rng.dirichlet(np.ones(k), size=12).reshape(2, 3, 2, k)
    return BayesNet(vs, parents, cpts), prot


def lr_rule(rng, bn, prot, scale=10, unit=20):
    """Integer weights in [-scale, scale] times ``unit`` (hundreds, the way a
    multiplier scales rounded logistic-regression weights)."""
    weights = {}
    for n, v in bn.variables.items():
        if n == "y":
            continue
        if n in prot:
            weights[n] = rng.integers(-scale // 4, scale // 4 + 1, size=v.k)
        elif rng.random() < 0.5:
            # a binned numeric feature: monotone weights
            weights[n] = np.sort(rng.integers(-scale, scale + 1, size=v.k)) * (1 if rng.random() < 0.5 else -1)
        else:
            weights[n] = rng.integers(-scale, scale + 1, size=v.k)
    lo = sum(int(w.min()) for w in weights.values())
    hi = sum(int(w.max()) for w in weights.values())
    thr = int(lo + (hi - lo) * rng.uniform(0.35, 0.65))
    weights = {n: w * unit for n, w in weights.items()}
    return LinearRule(weights, thr * unit + int(rng.integers(0, unit)), bn.variables)


def _same(a, b):
    da, db = dict(a), dict(b)
    assert da.keys() == db.keys()
    for g in da:
        assert abs(da[g] - db[g]) < TOL, (g, da[g], db[g])


def test_linear_rule_of_realistic_size_matches_dp():
    # 10 features with 3..8 values, 2 protected attributes (6 groups), weights
    # up to 200: a diagram of ~1,100 nodes (Adult's logistic regression: ~2,200)
    rng = np.random.default_rng(20260501)
    bn, prot = justicia_net(rng, n_feat=10, ks=(3, 4, 5, 6, 8))
    rule = lr_rule(rng, bn, prot, scale=10, unit=20)
    ref = dp.ppv_per_group(bn, rule, prot)
    r = ssat.ppv_per_group(bn, rule, prot, time_limit=600)
    assert r.status == "ok", r.reason
    _same(r.per_group, ref.per_group)
    # the default budget is 2,000,000 nodes; the search needs about two per
    # diagram node (one per label value) -- before the fix it never finished
    assert r.stats["nodes"] < 20_000


def test_linear_rule_with_evidence_and_per_group_calls():
    rng = np.random.default_rng(7)
    bn, prot = justicia_net(rng, n_feat=6, ks=(3, 4, 6))
    rule = lr_rule(rng, bn, prot, scale=6, unit=10)
    for ev in (None, {"y": [1]}):
        ref = dp.ppv_per_group(bn, rule, prot, evidence=ev)
        _same(ssat.ppv_per_group(bn, rule, prot, evidence=ev, time_limit=600).per_group, ref.per_group)
        _same(ssat.ppv_per_group(bn, rule, prot, evidence=ev, batch=False, time_limit=600).per_group,
              ref.per_group)


def test_linear_learn_matches_dp_extremes():
    rng = np.random.default_rng(11)
    bn, prot = justicia_net(rng, n_feat=8, ks=(3, 4, 5))
    rule = lr_rule(rng, bn, prot, scale=5, unit=10)
    ref = dp.ppv_per_group(bn, rule, prot)
    vals = dict(ref.per_group).values()
    r = ssat.ppv_extremes(bn, rule, prot, time_limit=600)
    assert r.status == "ok", r.reason
    assert abs(r.best[1] - max(vals)) < TOL and abs(r.worst[1] - min(vals)) < TOL


@pytest.mark.parametrize("outer", ["", "E", "A"])
def test_indexed_path_on_random_formulas(monkeypatch, outer):
    """Force the indexed propagation / component path on every component and
    compare with the brute-force semantics."""
    monkeypatch.setattr(ssat_solver, "INDEXED_MIN", 0)
    from fairspec.backends.ssat import SSATFormula, brute_force_ssat
    rng = np.random.default_rng(5 + len(outer))
    for _ in range(150):
        f = SSATFormula()
        n = int(rng.integers(3, 10))
        for i in range(n):
            r = rng.random()
            if outer and r < 0.25:
                f.new_var(outer)
            elif r < 0.65:
                f.new_var("R", float(rng.choice([0.0, 0.3, 0.5, 0.8, 1.0])))
            else:
                f.new_var("I")
        for _ in range(int(rng.integers(1, 3 * n))):
            m = int(rng.integers(1, 4))
            vs = rng.choice(np.arange(1, n + 1), size=min(m, n), replace=False)
            f.add([int(v) if rng.random() < 0.5 else -int(v) for v in vs])
        r = ssat_solver.SSATSolver(f).solve()
        assert r.status == "ok"
        assert r.probability == pytest.approx(brute_force_ssat(f), abs=1e-9)
