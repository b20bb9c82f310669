"""Metrics over a distribution: DI, SP, equalized odds, path-specific causal
fairness, fairness influence functions, unknown status, JSON form."""

import json


import numpy as np
import pytest

from fairspec.analyses.distribution import BayesNet, Categorical, DistributionError, conditional, discretise
from fairspec.analyses.group_metrics_exact import (brute_force_ppvs, disparate_impact, equalized_odds,
                                                   fairness_influence, group_ppvs,
                                                   path_specific_causal_fairness, statistical_parity)
from fairspec.backends.boolean import cnf_rule, linear_rule

from fairspec.backends import dp as _dp, ssat as _ssat

ENGINES = {"ssat": _ssat, "dp": _dp, "brute": "brute"}  # the PPV engines the runner would pick


def hiring_net():
    """FVGM Example B.1 in miniature: gender G -> college C (mediator), experience E, label Y."""
    return BayesNet.boolean(
        {"E": 0.5}, parents={"C": ["G"], "Y": ["C", "E"]},
        cpts={"C": {(1,): 0.7, (0,): 0.3},
              "Y": {(0, 0): 0.1, (0, 1): 0.5, (1, 0): 0.4, (1, 1): 0.9}},
        choice=["G"])


@pytest.mark.parametrize("backend", ["dp", "ssat"])
def test_di_sp_on_linear_rule(backend):
    bn = hiring_net()
    clf = linear_rule({"G": 1, "C": 2, "E": 1}, 3)
    ref = brute_force_ppvs(bn, clf, ["G"]).per_group
    di = disparate_impact(clf, bn, ["G"], backend=ENGINES[backend])
    sp = statistical_parity(clf, bn, ["G"], backend=ENGINES[backend])
    hi, lo = max(ref.values()), min(ref.values())
    assert di.value == pytest.approx(lo / hi) and sp.value == pytest.approx(hi - lo)
    assert di.most_favoured == (("G", 1),) and di.least_favoured == (("G", 0),)
    json.dumps(di.as_dict())


@pytest.mark.parametrize("backend", ["dp", "ssat"])
def test_equalized_odds_conditions_on_the_label(backend):
    bn = hiring_net()
    clf = linear_rule({"C": 2, "E": 1}, 2)
    eo = equalized_odds(clf, bn, ["G"], label="Y", positive=1, backend=ENGINES[backend])
    tpr = brute_force_ppvs(bn, clf, ["G"], evidence={"Y": [1]}).per_group
    fpr = brute_force_ppvs(bn, clf, ["G"], evidence={"Y": [0]}).per_group
    want = max(max(tpr.values()) - min(tpr.values()), max(fpr.values()) - min(fpr.values()))
    assert eo.value == pytest.approx(want, abs=1e-12)
    assert eo.details["tpr_spread"] == pytest.approx(max(tpr.values()) - min(tpr.values()))
    with pytest.raises(DistributionError):
        equalized_odds(clf, bn, ["G"], label="nope", backend=ENGINES["dp"])


def test_equalized_odds_from_data_matches_justicia_recipe():
    """Conditioning a label-aware conditional distribution on Y = y equals estimating
    the features' distribution on the rows with Y = y (Justicia 3.1)."""
    rng = np.random.default_rng(0)
    n = 5000
    a = rng.integers(0, 2, n)
    y = (rng.random(n) < 0.3 + 0.3 * a).astype(int)
    x = (rng.random(n) < 0.2 + 0.5 * y + 0.1 * a).astype(int)
    z = (rng.random(n) < 0.5).astype(int)
    d = discretise({"a": a, "y": y, "x": x, "z": z}, {k: Categorical((0, 1)) for k in "ayxz"})
    clf = cnf_rule([["x", "z"]])
    bn = conditional(d, ["a"], label="y")
    eo = equalized_odds(clf, bn, ["a"], label="y", backend=ENGINES["ssat"])
    for yy, key in ((1, "tpr"), (0, "fpr")):
        sub = d.subset(d.codes["y"] == yy)
        bn_y = conditional(sub, ["a"], names=["x", "z"])
        r = group_ppvs(clf, bn_y, ["a"], backend=ENGINES["ssat"])
        got = {g["a"]: p for g, p in eo.details[key]}
        for g, p in r.per_group:
            assert got[dict(g)["a"]] == pytest.approx(p, abs=1e-12)


def test_path_specific_causal_fairness():
    bn = hiring_net()
    clf = linear_rule({"G": 1, "C": 2, "E": 1}, 3)
    pcf = path_specific_causal_fairness(clf, bn, ["G"], mediators=["C"], backend=ENGINES["ssat"])
    # the mediator C is drawn as for the most favoured group G = 1 in both groups
    bn1 = bn.with_parent_fixed("C", "G", 1)
    ref = brute_force_ppvs(bn1, clf, ["G"]).per_group
    assert pcf.details["a_max"] == {"G": 1}
    assert pcf.value == pytest.approx(max(ref.values()) - min(ref.values()))
    # only the direct weight of G is left: P(C=1)=0.7 in both; PPV(1) - PPV(0) = Pr[2C + E = 2] = 0.7*0.5
    assert pcf.value == pytest.approx(0.35)
    sp = statistical_parity(clf, bn, ["G"], backend=ENGINES["dp"])
    assert pcf.value < sp.value
    with pytest.raises(DistributionError):
        path_specific_causal_fairness(clf, bn, ["G"], mediators=["G"], backend=ENGINES["dp"])


def test_fairness_influence_functions():
    bn = hiring_net()
    clf = linear_rule({"C": 1, "E": 1}, 2)        # C and E both needed
    fif = fairness_influence(clf, bn, ["G"], quantity="ppv", group={"G": 1}, backend=ENGINES["dp"])
    base = 0.7 * 0.5
    assert fif.base == pytest.approx(base)
    infl = dict(fif.influence)
    assert infl[("C",)] == pytest.approx(base - 0.5 * 0.5)   # C replaced by a fair coin
    assert infl[("E",)] == pytest.approx(0.0)                 # E already uniform
    sp = fairness_influence(clf, bn, ["G"], subsets=[("C",), ("C", "E")], quantity="statistical_parity",
                            backend=ENGINES["dp"])
    # replacing the mediator removes all disparity: influence = SP itself
    assert dict(sp.influence)[("C",)] == pytest.approx(sp.base)
    with pytest.raises(DistributionError):
        fairness_influence(clf, bn, ["G"], quantity="ppv", backend=ENGINES["dp"])  # PPV needs a group


def test_unknown_status_is_propagated_without_a_value():
    bn = hiring_net()
    clf = cnf_rule([["C", "E"], ["-C", "G"]])
    r = disparate_impact(clf, bn, ["G"], backend=ENGINES["ssat"], max_nodes=0)
    assert r.status == "unknown" and r.value is None and "budget" in r.reason
    assert json.loads(json.dumps(r.as_dict()))["status"] == "unknown"


def test_learn_and_enumerate_agree_on_compound_groups():
    rng = np.random.default_rng(1)
    n = 3000
    s = rng.integers(0, 2, n)
    r = rng.integers(0, 3, n)
    x = (rng.random(n) < 0.2 + 0.2 * s + 0.15 * r).astype(int)
    w = rng.integers(0, 4, n)
    d = discretise({"s": s, "r": r, "x": x, "w": w},
                   {"s": Categorical((0, 1)), "r": Categorical((0, 1, 2)), "x": Categorical((0, 1)),
                    "w": Categorical((0, 1, 2, 3))})
    bn = conditional(d, ["s", "r"])
    clf = linear_rule({"x": [0, 2], "w": [0, 1, 1, 2], "r": [0, 1, 0]}, 3, d.variables)
    for backend in ("dp", "ssat"):
        e = group_ppvs(clf, bn, ["s", "r"], backend=ENGINES[backend])
        l = group_ppvs(clf, bn, ["s", "r"], backend=ENGINES[backend], method="learn")
        assert len(e.per_group) == 6
        assert l.most_favoured == e.most_favoured and l.least_favoured == e.least_favoured
        assert l.most_favoured_ppv == pytest.approx(e.most_favoured_ppv, abs=1e-12)
        assert e.bound is not None and e.bound.ppv_additive > 0 and e.bound.epsilon0 > 1
