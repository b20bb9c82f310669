"""DP (both solvers), SSAT (batched, per group, learning) and brute-force
enumeration agree on random small instances: Bayesian networks with
multi-valued variables, protected attributes with children, deterministic
table entries, label-style evidence; linear rules, trees and CNF rules."""

import math

import numpy as np
import pytest

from fairspec.analyses.distribution import BayesNet, Variable
from fairspec.analyses.group_metrics_exact import brute_force_ppvs
from fairspec.backends import dp, ssat
from fairspec.backends.boolean import CNFRule, DecisionTree, LinearRule, Test

TOL = 1e-9


def random_net(rng, n_prot=None, n_feat=None, max_parents=2):
    n_prot = int(rng.integers(1, 3)) if n_prot is None else n_prot
    n_feat = int(rng.integers(1, 5)) if n_feat is None else n_feat
    vs, parents, cpts = [], {}, {}
    names = []
    for i in range(n_prot):
        k = int(rng.choice([2, 3]))
        v = Variable(f"A{i}", tuple(range(k)))
        vs.append(v)
        parents[v.name] = ()
        cpts[v.name] = rng.dirichlet(np.ones(k))
        names.append(v.name)
    for i in range(n_feat):
        k = int(rng.choice([2, 3, 4]))
        v = Variable(f"X{i}", tuple(f"v{j}" for j in range(k)))
        m = int(rng.integers(0, min(max_parents, len(names)) + 1))
        pa = tuple(rng.choice(names, size=m, replace=False)) if m else ()
        shape = tuple(next(x.k for x in vs if x.name == p) for p in pa) + (k,)
        t = rng.dirichlet(np.ones(k) * 0.7, size=int(np.prod(shape[:-1])) if pa else 1).reshape(shape)
        if rng.random() < 0.3:
            # deterministic entries: zero out a value in some rows and renormalise
            t = t.copy()
            flat = t.reshape(-1, k)
            r = int(rng.integers(0, flat.shape[0]))
            flat[r, int(rng.integers(0, k))] = 0.0
            flat[r] /= flat[r].sum()
            t = flat.reshape(shape)
        vs.append(v)
        parents[v.name] = pa
        cpts[v.name] = t if pa else t.reshape(k)
        names.append(v.name)
    bn = BayesNet(vs, parents, cpts)
    prot = [f"A{i}" for i in range(n_prot)]
    return bn, prot


def random_linear(rng, bn, prot, use_protected=True):
    weights = {}
    for n, v in bn.variables.items():
        if n in prot and (not use_protected or rng.random() < 0.5):
            continue
        weights[n] = rng.integers(-3, 4, size=v.k)
    lo = sum(int(w.min()) for w in weights.values())
    hi = sum(int(w.max()) for w in weights.values())
    thr = int(rng.integers(lo, hi + 2))
    return LinearRule(weights, thr, bn.variables)


def random_test(rng, bn, names):
    n = str(rng.choice(names))
    k = bn.variables[n].k
    size = int(rng.integers(1, k))
    vals = frozenset(int(x) for x in rng.choice(k, size=size, replace=False))
    return Test(n, vals)


def random_tree(rng, bn, names, depth=3):
    nodes = []

    def build(d):
        i = len(nodes)
        nodes.append(None)
        if d == 0 or rng.random() < 0.25:
            nodes[i] = ("leaf", int(rng.integers(0, 2)))
            return i
        t = random_test(rng, bn, names)
        a = build(d - 1)
        b = build(d - 1)
        nodes[i] = ("test", t, a, b)
        return i

    build(depth)
    return DecisionTree(nodes, 0, bn.variables)


def random_cnf(rng, bn, names):
    clauses = []
    for _ in range(int(rng.integers(1, 4))):
        clauses.append([(random_test(rng, bn, names), bool(rng.random() < 0.6))
                        for _ in range(int(rng.integers(1, 4)))])
    return CNFRule(clauses, bn.variables)


def random_evidence(rng, bn, prot):
    feats = [n for n in bn.variables if n not in prot]
    n = str(rng.choice(feats))
    k = bn.variables[n].k
    vals = sorted(int(x) for x in rng.choice(k, size=int(rng.integers(1, k)), replace=False))
    return {n: vals}


def same(a: dict, b: dict, tol=TOL):
    assert set(a) == set(b)
    for g in a:
        if math.isnan(a[g]) or math.isnan(b[g]):
            assert math.isnan(a[g]) and math.isnan(b[g]), (g, a[g], b[g])
        else:
            assert abs(a[g] - b[g]) < tol, (g, a[g], b[g])


def test_linear_dp_ssat_brute_agree_on_200_random_instances():
    rng = np.random.default_rng(20261122)
    checked = 0
    for it in range(200):
        bn, prot = random_net(rng)
        clf = random_linear(rng, bn, prot)
        ev = random_evidence(rng, bn, prot) if rng.random() < 0.25 else None
        ref = brute_force_ppvs(bn, clf, prot, evidence=ev).per_group
        same(dp.ppv_per_group(bn, clf, prot, evidence=ev).per_group, ref)
        same(dp.ppv_per_group(bn, clf, prot, evidence=ev, method="recursive").per_group, ref)
        same(ssat.ppv_per_group(bn, clf, prot, evidence=ev).per_group, ref)
        if it % 4 == 0:
            same(ssat.ppv_per_group(bn, clf, prot, evidence=ev, batch=False).per_group, ref)
        if it % 3 == 0:
            # python-sat's pseudo-Boolean encodings (auxiliaries as inner existentials)
            enc = ("best", "bdd", "seqcounter", "totalizer", "sortnetwrk", "binmerge")[(it // 3) % 6]
            same(ssat.ppv_per_group(bn, clf, prot, evidence=ev, pb_encoding=enc).per_group, ref)
        if ev is None:
            vals = [v for v in ref.values() if not math.isnan(v)]
            for r in (dp.ppv_extremes(bn, clf, prot), dp.ppv_extremes(bn, clf, prot, method="recursive"),
                      ssat.ppv_extremes(bn, clf, prot)):
                assert abs(r.best[1] - max(vals)) < TOL and abs(r.worst[1] - min(vals)) < TOL
                # the learned groups really have those PPVs
                assert abs(ref[r.best[0]] - r.best[1]) < TOL and abs(ref[r.worst[0]] - r.worst[1]) < TOL
            if it % 5 == 0:
                u = ssat.ppv_extremes(bn, clf, prot, least="universal")
                assert abs(u.worst[1] - min(vals)) < TOL and abs(ref[u.worst[0]] - u.worst[1]) < TOL
        checked += 1
    assert checked == 200


@pytest.mark.parametrize("kind", ["tree", "cnf"])
def test_ssat_trees_and_cnf_agree_with_brute_force(kind):
    rng = np.random.default_rng(7 if kind == "tree" else 8)
    for it in range(60):
        bn, prot = random_net(rng)
        names = [n for n in bn.variables if n not in prot or rng.random() < 0.3]
        clf = random_tree(rng, bn, names) if kind == "tree" else random_cnf(rng, bn, names)
        if not clf.features:
            continue
        ev = random_evidence(rng, bn, prot) if rng.random() < 0.25 else None
        ref = brute_force_ppvs(bn, clf, prot, evidence=ev).per_group
        same(ssat.ppv_per_group(bn, clf, prot, evidence=ev).per_group, ref)
        same(ssat.ppv_per_group(bn, clf, prot, evidence=ev, batch=False).per_group, ref)
        if ev is None:
            vals = list(ref.values())
            r = ssat.ppv_extremes(bn, clf, prot)
            assert abs(r.best[1] - max(vals)) < TOL and abs(r.worst[1] - min(vals)) < TOL
            assert abs(ref[r.best[0]] - r.best[1]) < TOL and abs(ref[r.worst[0]] - r.worst[1]) < TOL
            if it % 3 == 0:   # UR-SSAT directly (log-encoded groups) agrees with the negation route
                u = ssat.ppv_extremes(bn, clf, prot, least="universal")
                assert abs(u.worst[1] - min(vals)) < TOL and abs(ref[u.worst[0]] - u.worst[1]) < TOL


def test_dp_budget_gives_unknown_not_a_number():
    rng = np.random.default_rng(3)
    bn, prot = random_net(rng, 1, 4)
    clf = random_linear(rng, bn, prot)
    r = dp.ppv_extremes(bn, clf, prot, method="recursive", max_nodes=1)
    assert r.status == "unknown" and r.best is None and "budget" in r.reason
    r = dp.ppv_per_group(bn, clf, prot, max_nodes=0)
    assert r.status == "unknown" and not r.per_group


def test_dp_rejects_non_linear_classifiers():
    from fairspec.analyses.distribution import DistributionError
    rng = np.random.default_rng(4)
    bn, prot = random_net(rng, 1, 2)
    tree = random_tree(rng, bn, [n for n in bn.variables if n not in prot])
    with pytest.raises(DistributionError):
        dp.ppv_per_group(bn, tree, prot)


def test_fvgm_ordering_heuristic_does_not_change_the_value():
    from fairspec.backends.dp import build_s3p, solve_recursive, solve_vector
    rng = np.random.default_rng(11)
    for _ in range(30):
        bn, prot = random_net(rng)
        clf = random_linear(rng, bn, prot)
        a = build_s3p(bn, clf, prot, "E", order="fvgm")
        b = build_s3p(bn, clf, prot, "E", order="topological")
        ra, rb = solve_recursive(a), solve_recursive(b)
        assert abs(ra.probability - rb.probability) < TOL
        assert abs(solve_vector(a).probability - ra.probability) < TOL
