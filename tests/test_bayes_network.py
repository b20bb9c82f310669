"""Distributions: validation errors, binning, estimation, hill climbing, sampling."""

import math
import re

import numpy as np
import pytest

from fairspec.analyses.distribution import (BayesNet, Bins, Categorical, Continuous, DistributionError,
                                            Variable, conditional, discretise, independent,
                                            justicia_epsilon0, learn_bayes_net, parent_marginal,
                                            ppv_error_bound)
from fairspec.analyses.group_metrics_exact import group_ppvs
from fairspec.backends.boolean import linear_rule

from fairspec.backends import dp as _dp, ssat as _ssat

ENGINES = {"ssat": _ssat, "dp": _dp, "brute": "brute"}  # the PPV engines the runner would pick


def err(fn, *words):
    with pytest.raises(DistributionError) as e:
        fn()
    msg = str(e.value)
    for w in words:
        assert w in msg, msg
    assert not re.search(r"[.;]\s+[A-Z]", msg) and "\n" not in msg   # one sentence
    return msg


# ---------------------------------------------------------------- validation


def test_probability_outside_unit_interval():
    err(lambda: BayesNet.boolean({"Q": 1.4}), "1.4", "outside [0, 1]")
    err(lambda: BayesNet([Variable("X", (0, 1, 2))], {}, {"X": [0.5, 0.7, -0.2]}), "outside [0, 1]", "'X'")


def test_cpt_rows_must_sum_to_one():
    a = Variable("A", (0, 1))
    x = Variable("X", ("lo", "mid", "hi"))
    msg = err(lambda: BayesNet([a, x], {"X": ["A"]}, {"A": [0.5, 0.5], "X": [[0.2, 0.3, 0.5], [0.2, 0.3, 0.4]]}),
              "'X'", "A=1", "sum to 0.9")
    assert "not 1" in msg


def test_cpt_shape_and_missing_tables():
    a = Variable("A", (0, 1))
    x = Variable("X", (0, 1))
    err(lambda: BayesNet([a, x], {"X": ["A"]}, {"A": [0.5, 0.5], "X": [0.2, 0.3, 0.5]}), "shape")
    err(lambda: BayesNet([a, x], {"X": ["A"]}, {"A": [0.5, 0.5]}), "no probability table", "'X'")
    err(lambda: BayesNet([a], {"A": ["B"]}, {"A": [0.5, 0.5]}), "parent 'B'")


def test_cycles_are_reported():
    a = Variable("A", (0, 1))
    b = Variable("B", (0, 1))
    err(lambda: BayesNet([a, b], {"A": ["B"], "B": ["A"]}, {"A": [[.5, .5], [.5, .5]], "B": [[.5, .5], [.5, .5]]}),
        "cycle")


def test_protected_attribute_with_parents_is_rejected():
    bn = BayesNet.boolean({"Q": 0.3}, parents={"P": ["Q"]}, cpts={"P": {(0,): 0.5, (1,): 0.2}})
    clf = linear_rule({"P": 1, "Q": 1}, 1)
    err(lambda: group_ppvs(clf, bn, ["P"]), "protected attribute 'P'", "no edges may point into it")


def test_classifier_feature_not_covered():
    bn = BayesNet.boolean({"Q": 0.3}, choice=["P"])
    clf = linear_rule({"P": 1, "Q": 1, "Z": 2}, 1)
    err(lambda: group_ppvs(clf, bn, ["P"]), "does not cover feature 'Z'")
    err(lambda: group_ppvs(clf, bn, ["P"], backend=ENGINES["ssat"]), "does not cover feature 'Z'")


def test_continuous_feature_without_bins():
    data = {"age": [20.5, 30.1, 40.0], "sex": ["F", "M", "F"]}
    err(lambda: discretise(data, {"age": Continuous(), "sex": Categorical()}), "'age'", "no bins")


def test_threshold_inside_a_bin():
    from fairspec.backends.boolean import DecisionTree, split
    data = discretise({"x": [0.1, 0.5, 0.9]}, {"x": Continuous([0.3, 0.7])})
    err(lambda: DecisionTree.from_nodes(split("x", 0.5, 1, 0), data.variables), "0.5", "inside the bin", "(0.3, 0.7]")


def test_unknown_category_and_missing_column():
    err(lambda: discretise({"c": ["a", "z"]}, {"c": Categorical(("a", "b"))}), "'z'")
    err(lambda: discretise({"c": ["a"]}, {"d": Categorical()}), "no column 'd'")


# ---------------------------------------------------------------- binning


def test_bins_right_closed_and_quantiles():
    b = Bins((1.0, 2.0))
    assert list(b.index([0.5, 1.0, 1.5, 2.0, 2.5])) == [0, 0, 1, 1, 2]
    assert b.labels() == ("(-inf, 1]", "(1, 2]", "(2, inf)")
    assert b.upper_index(2.0, "x") == 2          # x > 2  <=>  bin >= 2
    q = Bins.from_quantiles(np.arange(100.0), 4)
    assert q.k == 4 and len(q.means) == 4
    assert q.means[0] < q.means[1] < q.means[2] < q.means[3]
    with pytest.raises(DistributionError):
        Bins((2.0, 1.0))


def test_discretise_learned_bins_and_means():
    rng = np.random.default_rng(0)
    x = rng.normal(size=1000)
    d = discretise({"x": x}, {"x": Continuous(5)})
    v = d.variables["x"]
    assert v.k == 5 and v.bins.means is not None
    counts = np.bincount(d.codes["x"], minlength=5)
    assert counts.min() > 150          # quantile bins are balanced


# ---------------------------------------------------------------- estimation


def synthetic(n=20000, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)                      # protected
    x = (rng.random(n) < np.where(a == 1, 0.8, 0.2)).astype(int)     # A -> X
    y = (rng.random(n) < np.where(x == 1, 0.9, 0.1)).astype(int)     # X -> Y
    z = rng.integers(0, 3, n)                      # independent noise
    return discretise({"A": a, "X": x, "Y": y, "Z": z},
                      {"A": Categorical((0, 1)), "X": Categorical((0, 1)), "Y": Categorical((0, 1)),
                       "Z": Categorical((0, 1, 2))})


def test_independent_and_conditional_estimates():
    d = synthetic()
    ind = independent(d)
    assert ind.edges() == []
    assert ind.cpts["X"][1] == pytest.approx(0.5, abs=0.02)
    cond = conditional(d, ["A"])
    assert set(cond.parents["X"]) == {"A"} and cond.parents["A"] == ()
    assert cond.cpts["X"][1, 1] == pytest.approx(0.8, abs=0.02)
    assert cond.cpts["X"][0, 1] == pytest.approx(0.2, abs=0.02)
    assert cond.row_counts["X"].sum() == d.n_rows
    lab = conditional(d, ["A"], label="Y")
    assert lab.parents["X"] == ("A", "Y") and lab.parents["Y"] == ("A",)


@pytest.mark.parametrize("score", ["k2", "bic"])
def test_hill_climbing_recovers_the_chain_without_edges_into_protected(score):
    d = synthetic()
    bn = learn_bayes_net(d, protected=["A"], score=score, max_parents=2)
    edges = set(bn.edges())
    assert not any(c == "A" for _, c in edges)               # nothing points into A
    assert ("A", "X") in edges                                # the true dependence
    assert ("X", "Y") in edges or ("Y", "X") in edges
    assert not any("Z" in e for e in edges)                   # noise stays alone
    assert all(len(p) <= 2 for p in bn.parents.values())
    assert bn.kind == f"learned-{score}"


def test_max_in_degree_is_respected():
    rng = np.random.default_rng(1)
    n = 5000
    a, b, c = (rng.integers(0, 2, n) for _ in range(3))
    y = ((a + b + c) >= 2).astype(int)
    d = discretise({"a": a, "b": b, "c": c, "y": y}, {k: Categorical((0, 1)) for k in "abcy"})
    bn = learn_bayes_net(d, max_parents=1)
    assert max(len(p) for p in bn.parents.values()) <= 1
    bn0 = learn_bayes_net(d, max_parents=0)
    assert bn0.edges() == []


def test_sampling_follows_the_tables():
    bn = BayesNet.boolean({"P": 0.3}, parents={"Q": ["P"]}, cpts={"Q": {(1,): 0.9, (0,): 0.2}})
    s = bn.sample(200_000, rng=0)
    assert s["P"].mean() == pytest.approx(0.3, abs=0.005)
    assert s["Q"][s["P"] == 1].mean() == pytest.approx(0.9, abs=0.005)
    assert s["Q"][s["P"] == 0].mean() == pytest.approx(0.2, abs=0.005)


def test_transformations_for_fif_and_pcf():
    bn = BayesNet.boolean({"P": 0.5}, parents={"Q": ["P"], "R": ["Q"]},
                          cpts={"Q": {(1,): 0.9, (0,): 0.2}, "R": {(1,): 0.7, (0,): 0.1}})
    u = bn.with_uniform("Q")
    assert u.parents["Q"] == () and np.allclose(u.cpts["Q"], [0.5, 0.5])
    assert u.parents["R"] == ("Q~orig",)      # R keeps depending on the real Q
    f = bn.with_parent_fixed("Q", "P", 1)
    assert f.parents["Q"] == () and np.allclose(f.cpts["Q"], [0.1, 0.9])


# ---------------------------------------------------------------- error bounds


def test_justicia_epsilon0_shrinks_with_data():
    e1 = justicia_epsilon0(1000, 2, 20, 0.05)
    e2 = justicia_epsilon0(100_000, 2, 20, 0.05)
    assert e1 > e2 > 1.0
    assert e2 == pytest.approx(math.exp((2 + math.log(20)) * math.log(20) / 100_000))
    assert justicia_epsilon0(0, 1, 2) == math.inf


def test_hoeffding_bound_covers_the_estimation_error():
    true = BayesNet.boolean({"P": 0.5}, parents={"Q": ["P"], "R": ["P"]},
                            cpts={"Q": {(1,): 0.7, (0,): 0.2}, "R": {(1,): 0.4, (0,): 0.6}})
    clf = linear_rule({"Q": 1, "R": 1}, 2)
    exact = group_ppvs(clf, true, ["P"], backend=ENGINES["dp"])
    s = true.sample(2000, rng=3)
    d = discretise(s, {k: Categorical((0, 1)) for k in "PQR"})
    est = conditional(d, ["P"])
    r = group_ppvs(clf, est, ["P"], backend=ENGINES["dp"])
    assert r.bound is not None and r.bound.n_rows == 2000
    for (g, p), (_, q) in zip(r.per_group, exact.per_group):
        assert abs(p - q) <= r.bound.ppv_additive
    assert ppv_error_bound(true, ["Q", "R"]) is None    # declared: no sample


def _random_net(rng, names=("A", "B", "C", "D"), k=3):
    """A random network: each variable has up to two earlier variables as parents."""
    vs = [Variable(n, tuple(range(k))) for n in names]
    parents, cpts = {}, {}
    for i, n in enumerate(names):
        pa = tuple(sorted(rng.choice(names[:i], size=min(i, int(rng.integers(0, 3))), replace=False))) if i else ()
        parents[n] = pa
        cpts[n] = rng.dirichlet(np.ones(k), size=(k,) * len(pa))
    return BayesNet(vs, parents, cpts)


def test_parent_marginal_equals_brute_force():
    import itertools

    rng = np.random.default_rng(7)
    for _ in range(20):
        bn = _random_net(rng)
        ev = {"A": int(rng.integers(0, 3))}
        for n in bn.order:
            if not bn.parents[n]:
                continue
            want = np.zeros((3,) * len(bn.parents[n]))
            z = 0.0
            for assign in itertools.product(range(3), repeat=len(bn.order)):
                a = dict(zip(bn.order, assign))
                if a["A"] != ev["A"]:
                    continue
                p = bn.joint(a)
                z += p
                want[tuple(a[q] for q in bn.parents[n])] += p
            assert np.allclose(parent_marginal(bn, n, ev), want / z)


def test_error_bound_is_finite_when_a_table_row_has_no_data():
    """An empty CPT row weighs only what the estimate gives its parents: the bound stays below 1."""
    rng = np.random.default_rng(0)
    n = 4000
    data = {"P": rng.integers(0, 2, n), "Q": rng.integers(0, 2, n), "R": rng.integers(0, 2, n)}
    vs = [Variable("P", (0, 1)), Variable("Q", (0, 1, 2)), Variable("R", (0, 1))]
    parents = {"P": (), "Q": ("P",), "R": ("Q",)}
    cpts, counts = {}, {}
    for v in vs:
        pa = parents[v.name]
        c = np.zeros(tuple(len(data.get(q, ())) and next(w.k for w in vs if w.name == q) for q in pa) + (v.k,))
        np.add.at(c, tuple(data[q] for q in pa) + (data[v.name],), 1)
        rows = c.sum(-1, keepdims=True)
        cpts[v.name] = np.where(rows > 0, c / np.maximum(rows, 1), 1.0 / v.k)
        counts[v.name] = rows[..., 0]
    assert counts["R"][2] == 0                      # Q = 2 never occurs: R's row for it is empty
    bn = BayesNet(vs, parents, cpts, n_rows=n, row_counts=counts, kind="bayes")
    b = ppv_error_bound(bn, ["Q", "R"], 0.05, {"P": 0})
    assert 0 < b < 0.2
