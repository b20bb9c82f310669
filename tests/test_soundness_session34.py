"""The soundness harness's session-34 constructs (instance seeds >= 103,000,000) and the multiclass family's exact
truth of ``prob(m(x), c)`` of logits: influence / path_specific over a declared network (dist_causal),
calibration_gap and Parquet (data_calib), ``where =`` (data_where), shipped policies (data_policy), explanations
(kdisc_explain) (the real softmax: test_soundness_kdisc_softmax). Pure functions and generators: no fairspec check runs here
(bench/soundness.py --seed 104 runs them)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from differential import core, data_calib, data_metrics, dist_causal, distributions, kdisc_explain
from differential.core import Feature


def _world():
    """tests/test_distribution_runner.py's network: P protected; p(Q | P) = 0.6, p(Q | not P) = 0.3, p(R) = 0.5,
    p(S) = 0.3; the rule P + Q + R - S >= 2."""
    fs = [Feature("P", "bool", protected=True), Feature("Q", "bool"), Feature("R", "bool"), Feature("S", "bool")]
    F = Fraction
    cpts = {1: ((0,), {(0,): [F(7, 10), F(3, 10)], (1,): [F(2, 5), F(3, 5)]}),
            2: ((), {(): [F(1, 2), F(1, 2)]}), 3: ((), {(): [F(7, 10), F(3, 10)]})}
    P = core.grid(fs)
    decided = np.array([x[0] + x[1] + x[2] - x[3] >= 2 for x in P])
    return fs, cpts, P, decided


def test_path_specific_of_the_runner_example():
    fs, cpts, P, decided = _world()
    # Q drawn as for the most favoured group P: PPV(not P) = 0.6 * 0.5 * 0.7 = 0.21, PPV(P) = 0.65
    assert dist_causal.path_specific_values(fs, cpts, P, decided, [1]) == {(1,): Fraction(65, 100) - Fraction(21, 100)}


def test_influence_from_the_definition():
    fs, cpts, P, decided = _world()
    value, each = dist_causal.influence_value(fs, cpts, P, decided, "statistical_parity", [[1], [2], [3]])
    # SP(D): P: 1 - p(not Q, not R or S ...) -- recomputed by hand from the rule: P needs Q + R - S >= 1
    ppv_p = Fraction(3, 5) * (1 - Fraction(1, 2) * Fraction(3, 10)) + Fraction(2, 5) * Fraction(1, 2) * Fraction(7, 10)
    ppv_n = Fraction(3, 10) * Fraction(1, 2) * Fraction(7, 10)
    # D_-{Q}: Q uniform whatever P
    ppv_pq = Fraction(1, 2) * (1 - Fraction(1, 2) * Fraction(3, 10)) + Fraction(1, 2) * Fraction(1, 2) * Fraction(7, 10)
    ppv_nq = Fraction(1, 2) * Fraction(1, 2) * Fraction(7, 10)
    assert each[(1,)] == (ppv_p - ppv_n) - (ppv_pq - ppv_nq)
    assert value == max(abs(v) for v in each.values())


def test_session_34_properties_only_from_seed_103_000_000():
    old, new = distributions.generate(102_999_999), distributions.generate(103_000_000)
    assert not any(p.meta.get("metric") in ("influence", "path_specific") for p in old.props)
    assert any(p.meta.get("metric") in ("influence", "path_specific") for p in new.props)
    old, new = data_metrics.generate(102_999_999), data_metrics.generate(103_000_021)
    assert not any(p.meta.get("where") or p.meta.get("metric") in ("policy", "calibration_gap") for p in old.props)
    assert any(p.meta.get("where") for p in new.props) and any(p.meta.get("metric") == "policy" for p in new.props)
    assert any(p.meta.get("parquet") for p in new.props) and "d.parquet" in new.files


def test_calibration_gap_by_hand():
    df = pd.DataFrame({"sex": ["F", "F", "M", "M"], "s": ["0.25", "0.75", "0.5", "0.5"], "__y": [0, 1, 1, 0]})
    w = np.array([Fraction(1)] * 4, dtype=object)
    # bins = 2: F's bins {0: 0.25 vs 0 positives, 1: 0.75 vs 1} -> (0.25 + 0.25) / 2; M's bin 1: |1 - 1| = 0
    gap, per = data_calib.ece_gap(df, w, ["sex"], 2)
    assert per == {("F",): Fraction(1, 4), ("M",): Fraction(0)} and gap == Fraction(1, 4)
    over, _ = data_calib.ece_gap(df, w, ["sex"], 2, "to_overall")
    assert over == Fraction(1, 8)          # overall: (|0.25 - 0| + |1.75 - 2|) / 4 = 1/8


@pytest.mark.parametrize("cond, want", [("x.n >= 2", [0, 0, 1, 1]), ("x.c == v1 and x.n <= 2", [0, 0, 1, 0]),
                                        ("x.c in {v0}", [1, 0, 1, 0]), ("x.c not in {v0}", [0, 1, 0, 1])])
def test_explanation_conditions_read(cond, want):
    fs = [Feature("n", "int", lo=1, hi=3), Feature("c", "cat", cats=("v0", "v1"))]
    P = np.array([[1, 0], [1, 1], [2, 0], [3, 1]])
    if cond.startswith("x.c == v1"):
        want = [0, 1, 0, 0]
    assert kdisc_explain._mask(cond, fs, P).astype(int).tolist() == want
    assert kdisc_explain._mask("x.zz >= 1", fs, P) is None
