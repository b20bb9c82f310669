"""The soundness harness's session-32 constructs (instance seeds >= 85,000,000): the truths and judgements
the generators add for compare = to_overall / exclude_below / min_group_size and multiclass / regression
models on data (data_metrics), max_rows on flips (data_batched), independent / conditional distributions
from data (distributions) and the partitions' estimate (network_wide). Pure functions and fabricated
verdicts: no fairspec check runs here (bench/soundness.py --seed 85 runs them)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from differential import data_batched, data_metrics, distributions, judge, network_wide
from differential.core import Feature


def test_to_overall_compares_each_group_with_all_rows():
    rates = {("F",): {"sel": Fraction(1, 4)}, ("M",): {"sel": Fraction(3, 4)}}
    over = {"sel": Fraction(1, 2)}
    assert data_metrics._to_overall("statistical_parity", rates, over) == Fraction(1, 4)
    assert data_metrics._to_overall("disparate_impact", rates, over) == Fraction(1, 2)      # min(1/4 / 1/2, ...)
    zero = {("F",): {"sel": Fraction(0)}, ("M",): {"sel": Fraction(0)}}
    assert data_metrics._to_overall("disparate_impact", zero, {"sel": Fraction(0)}) == 1     # 0 against 0
    assert data_metrics._to_overall("statistical_parity", {("F",): {"sel": None}}, over) is None


def test_new_properties_only_from_seed_85_000_000():
    old, new = data_metrics.generate(84_999_999), data_metrics.generate(85_000_000)
    assert [p.name for p in old.props] == [f"d{k}" for k in range(6)]
    assert len(new.props) == 14 and new.judge is not None
    assert any("compare = to_overall" in p.text for p in new.props)


def _outcome(name, status):
    return judge.Outcome(family="x", seed=1, name=name, klass="correct", status=status)


def test_a_holds_with_a_group_too_small_is_wrong(monkeypatch):
    inst = data_metrics.generate(85_000_002)
    small = [p for p in inst.props if p.meta.get("small")]
    assert small, "instance 85000002 has properties with a group under min_group_size"
    monkeypatch.setattr(judge, "_check_group", lambda spec, props, base: [_outcome(p.name, "holds") for p in props])
    outs = {o.name: o for o in data_metrics._judge(None, inst.props, {})}
    assert all(outs[p.name].klass == "wrong" and outs[p.name].defect == "small-group-holds" for p in small)
    assert all(o.klass == "correct" for n, o in outs.items() if n not in {p.name for p in small})


def test_a_holds_from_a_sample_of_rows_is_wrong(monkeypatch):
    props = [type("P", (), {"name": "flips_s0", "meta": {"max_rows": 3, "sampled": True}})(),
             type("P", (), {"name": "flips_s1", "meta": {"max_rows": 500, "sampled": False}})()]
    outs = [_outcome("flips_s0", "holds"), _outcome("flips_s1", "unknown")]
    outs[1].reason = "no counterfactual flip among 501 data rows (501 pairs); ..."
    monkeypatch.setattr(judge, "_check_group", lambda spec, ps, base: outs)
    got = {o.name: o for o in data_batched._judge(None, props, {})}
    assert got["flips_s0"].defect == "sample-holds"
    assert got["flips_s1"].defect == "sample-size"          # 501 rows counted under max_rows = 500


def test_independent_and_conditional_fitted_to_a_joint():
    fs = [Feature("P", "bool", protected=True), Feature("B", "bool")]
    P = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    J = [Fraction(1, 8), Fraction(3, 8), Fraction(3, 8), Fraction(1, 8)]
    decided = np.array([False, True, False, True])                       # the decision is B
    cond = distributions._model_ppvs("conditional", fs, P, decided, J)
    ind = distributions._model_ppvs("independent", fs, P, decided, J)
    assert cond == {(0,): Fraction(3, 4), (1,): Fraction(1, 4)}
    assert ind == {(0,): Fraction(1, 2), (1,): Fraction(1, 2)}            # Pr[B] whatever the group
    assert distributions._model_ppvs("conditional", fs, P, decided, [0, 0, Fraction(1, 2), Fraction(1, 2)]) is None


def test_the_partitions_estimate_is_judged():
    shares = {"certified": "1/2", "falsified": "1/4", "undecided": "1/4"}
    truth = (5, 5, 10)                    # half the individuals fair, half unfair
    ok = {"undecided": "1/4", "sampled_unfair": 3, "sampled_fair": 1,
          "estimated_unfair_in_undecided": {"interval_percent": [20.0, 25.0]},
          "estimated_fair_in_undecided": {"interval_percent": [0.0, 5.0]}}
    assert network_wide._estimate_wrong(ok, truth, shares, 0.999999) is None
    # the true unfair share of the undecided part is 1/2 - 1/4 = 25%: an interval below it is wrong when sure
    low = {**ok, "estimated_unfair_in_undecided": {"interval_percent": [10.0, 20.0]}}
    assert "excludes" in network_wide._estimate_wrong(low, truth, shares, 0.999999)
    assert network_wide._estimate_wrong(low, truth, shares, 0.95) is None       # only counted below SURE
    assert "no individual is unfair" in network_wide._estimate_wrong(ok, (10, 0, 10), shares, 0.5)
    assert "not the shares'" in network_wide._estimate_wrong({**ok, "undecided": "1/3"}, truth, shares, 0.5)


def test_a_learned_structure_fitted_to_a_joint():
    fs = [Feature("P", "bool", protected=True), Feature("B", "bool")]
    P = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    J = [Fraction(1, 8), Fraction(3, 8), Fraction(3, 8), Fraction(1, 8)]
    decided = np.array([False, True, False, True])
    # no edge: the independent network; P -> B: the conditional one
    assert distributions._structure_ppvs(fs, P, decided, J, {}) == \
        distributions._model_ppvs("independent", fs, P, decided, J)
    assert distributions._structure_ppvs(fs, P, decided, J, {"B": ["P"]}) == \
        distributions._model_ppvs("conditional", fs, P, decided, J)
