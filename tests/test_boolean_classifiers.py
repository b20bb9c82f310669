"""Classifiers in Boolean form: sklearn trees and linear models, threshold
implications, CNF rules; the SSAT value of a tree against the empirical PPV of
a large sample from the same distribution."""

import numpy as np
import pytest

from fairspec.analyses.distribution import (BayesNet, Bins, Categorical, Continuous, DistributionError,
                                            Variable, discretise, learn_bayes_net)
from fairspec.analyses.group_metrics_exact import empirical_ppvs
from fairspec.backends import ssat
from fairspec.backends.boolean import (Column, DecisionTree, cnf_rule, is_, linear_from_sklearn, linear_rule,
                                       split, tree_from_sklearn, tree_split_points)


def mixed_data(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    sex = rng.choice(["F", "M"], n)
    race = rng.choice(["a", "b", "c"], n, p=[0.6, 0.3, 0.1])
    age = rng.normal(40, 12, n) + (sex == "M") * 3
    hours = rng.normal(40, 8, n) - (race == "c") * 5
    job = rng.choice(["x", "y", "z", "w"], n)
    logit = 0.08 * (age - 40) + 0.1 * (hours - 40) + (job == "y") * 1.0 - (sex == "F") * 0.7
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    return {"sex": sex, "race": race, "age": age, "hours": hours, "job": job, "y": y}


def matrix(raw, scale=None):
    scale = scale or {}
    cols, parts = [], []
    for c in ("age", "hours"):
        mu, sd = scale.get(c, (0.0, 1.0))
        parts.append((raw[c] - mu) / sd)
        cols.append(Column(c, None, mu, sd))
    for c, vals in (("sex", ("F", "M")), ("race", ("a", "b", "c")), ("job", ("w", "x", "y", "z"))):
        for v in vals:
            parts.append((raw[c] == v).astype(float))
            cols.append(Column(c, v))
    return np.stack(parts, 1), cols


def specs(bins):
    return {"sex": Categorical(("F", "M")), "race": Categorical(("a", "b", "c")),
            "job": Categorical(("w", "x", "y", "z")), "age": Continuous(bins.get("age", [])),
            "hours": Continuous(bins.get("hours", [])), "y": Categorical((0, 1))}


def test_sklearn_tree_conversion_is_exact_on_data():
    from sklearn.tree import DecisionTreeClassifier
    raw = mixed_data()
    X, cols = matrix(raw, {"age": (40.0, 12.0)})         # scaled column: thresholds map back to raw units
    dt = DecisionTreeClassifier(max_depth=5, random_state=0).fit(X, raw["y"])
    th = tree_split_points(dt, cols)
    assert "age" in th and all(isinstance(t, float) for t in th["age"])
    data = discretise(raw, specs(th))
    tree = tree_from_sklearn(dt, cols, data.variables)
    assert np.array_equal(tree.predict(data.codes), dt.predict(X).astype(bool))
    # every threshold test is an order literal: nested per feature
    lits = tree.threshold_literals()
    for (f1, t1, j1), (f2, t2, j2) in zip(lits, lits[1:]):
        if f1 == f2:
            assert t1 < t2 and j1 < j2


def test_threshold_implications_are_kept():
    """x > 0.7 implies x > 0.3: with independent literals the PPV would be wrong."""
    data = discretise({"x": np.linspace(0, 1, 11)}, {"x": Continuous([0.3, 0.7])})
    x = data.variables["x"]
    bn = BayesNet([Variable("A", (0, 1)), x], {}, {"A": [0.5, 0.5], "x": [0.3, 0.4, 0.3]})
    # positive iff (x > 0.7) or not (x > 0.3): bins 0 and 2
    tree = DecisionTree.from_nodes(split("x", 0.7, 1, split("x", 0.3, 0, 1)), bn.variables)
    r = ssat.ppv_per_group(bn, tree, ["A"])
    assert r.per_group[(0,)] == pytest.approx(0.6)
    # the same tree with the two literals as independent coins (Pr[x > 0.3] = 0.7,
    # Pr[x > 0.7] = 0.3): 1 - 0.7 * 0.7 = 0.51, not 0.6
    naive = BayesNet.boolean({"gt3": 0.7, "gt7": 0.3}, choice=["A"])
    cnf = cnf_rule([["gt7", "-gt3"]])
    assert ssat.ppv_per_group(naive, cnf, ["A"]).per_group[(0,)] == pytest.approx(0.51)


def test_tree_built_by_hand_and_categorical_tests():
    data = discretise({"c": ["u", "v", "w", "u"], "x": [1.0, 2.0, 3.0, 4.0]},
                      {"c": Categorical(("u", "v", "w")), "x": Continuous([2.5])})
    t = DecisionTree.from_nodes(is_("c", "v", 1, split("x", 2.5, 1, 0)), data.variables)
    assert list(t.predict(data.codes)) == [False, True, True, True]
    with pytest.raises(DistributionError):
        DecisionTree.from_nodes(split("missing", 1.0, 1, 0), data.variables)
    with pytest.raises(DistributionError):
        DecisionTree.from_nodes(split("x", 2.5, 1, 3), data.variables)


def test_linear_model_on_bins_reports_agreement():
    from sklearn.linear_model import LogisticRegression
    raw = mixed_data(6000, 1)
    scale = {c: (float(raw[c].mean()), float(raw[c].std())) for c in ("age", "hours")}
    X, cols = matrix(raw, scale)
    lr = LogisticRegression(max_iter=2000).fit(X, raw["y"])
    bins = {c: Bins.from_quantiles(raw[c], 10).edges for c in ("age", "hours")}
    data = discretise(raw, specs(bins))
    rule = linear_from_sklearn(lr, cols, data.variables, X=X, codes=data.codes, grid=range(1, 61))
    assert 1 <= rule.multiplier <= 60
    assert rule.agreement > 0.9
    assert np.mean(rule.predict(data.codes) == lr.predict(X).astype(bool)) == pytest.approx(rule.agreement)
    with pytest.raises(DistributionError):
        linear_from_sklearn(lr, cols, data.variables)          # no multiplier, no data


def test_a_linear_model_fitted_on_a_data_frame_is_read_without_the_feature_names_warning():
    """The agreement is measured with the model's predict on the model-input array: scikit-learn's
    "X does not have valid feature names" is silenced there, and the rule is the array-fitted one's."""
    import warnings

    from sklearn.linear_model import LogisticRegression

    pd = pytest.importorskip("pandas")
    raw = mixed_data(2000, 1)
    scale = {c: (float(raw[c].mean()), float(raw[c].std())) for c in ("age", "hours")}
    X, cols = matrix(raw, scale)
    data = discretise(raw, specs({c: Bins.from_quantiles(raw[c], 10).edges for c in ("age", "hours")}))
    named = LogisticRegression(max_iter=2000).fit(pd.DataFrame(X, columns=[f"c{i}" for i in range(X.shape[1])]),
                                                  raw["y"])
    plain = LogisticRegression(max_iter=2000).fit(X, raw["y"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rule = linear_from_sklearn(named, cols, data.variables, X=X, codes=data.codes, grid=range(1, 21))
    assert not [w for w in caught if "feature names" in str(w.message)]
    same = linear_from_sklearn(plain, cols, data.variables, X=X, codes=data.codes, grid=range(1, 21))
    assert (rule.multiplier, rule.agreement) == (same.multiplier, same.agreement)


def test_linear_rule_and_cnf_parsing():
    r = linear_rule({"P": 1, "Q": 1, "R": 1, "S": -1}, 2)
    assert r.features == ("P", "Q", "R", "S")
    codes = {"P": np.array([1, 0]), "Q": np.array([1, 1]), "R": np.array([0, 1]), "S": np.array([1, 0])}
    assert list(r.predict(codes)) == [False, True]
    assert list(r.negated().predict(codes)) == [True, False]
    c = cnf_rule([["-F", "I"], ["F", "not J"]])
    assert [[(t.feature, sorted(t.values), p) for t, p in cl] for cl in c.clauses] == [
        [("F", [1], False), ("I", [1], True)], [("F", [1], True), ("J", [1], False)]]
    with pytest.raises(DistributionError):
        linear_rule({"P": 1}, 1.5)


def test_ssat_on_a_learned_tree_matches_a_large_sample():
    """Distribution -> sample 300k rows -> empirical PPV per group ~ exact SSAT PPV."""
    from sklearn.tree import DecisionTreeClassifier
    raw = mixed_data(5000, 2)
    X, cols = matrix(raw)
    dt = DecisionTreeClassifier(max_depth=4, random_state=0).fit(X, raw["y"])
    data = discretise(raw, specs(tree_split_points(dt, cols)))
    tree = tree_from_sklearn(dt, cols, data.variables)
    bn = learn_bayes_net(data, protected=["sex", "race"], names=["sex", "race", "age", "hours", "job"], max_parents=2)
    exact = ssat.ppv_per_group(bn, tree, ["sex", "race"])
    assert exact.status == "ok"
    sample = bn.sample(300_000, rng=5)
    emp = empirical_ppvs(tree, sample, ["sex", "race"])
    for g, p in exact.per_group.items():
        n_g = np.sum((sample["sex"] == g[0]) & (sample["race"] == g[1]))
        tol = 4 * np.sqrt(0.25 / n_g) + 1e-3
        assert abs(emp[g] - p) < tol, (g, emp[g], p)
    learned = ssat.ppv_extremes(bn, tree, ["sex", "race"])
    assert learned.best[1] == pytest.approx(max(exact.per_group.values()), abs=1e-9)
    assert learned.worst[1] == pytest.approx(min(exact.per_group.values()), abs=1e-9)
