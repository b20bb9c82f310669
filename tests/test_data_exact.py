"""Group metrics on data rows compared at the threshold in exact rationals (issue 20, classes 3
and 6): group_rates.exact_metric_value agrees with the float definitions, and a value exactly
on the threshold is decided as the spec writes `<` / `<=`."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from fairspec.analyses.group_rates import BETWEEN, METRICS, OVERALL, exact_metric_value, metric_value

EXACT_FORMS = ("difference", "ratio", "average", "max_rate", "min_rate")


@pytest.mark.parametrize("mode", [BETWEEN, OVERALL])
def test_exact_value_matches_the_float_definitions(mode):
    rng = np.random.default_rng(3)
    names = [m for m, d in METRICS.items() if d.form in EXACT_FORMS]
    assert "statistical_parity" in names and "equalized_odds" in names
    for trial in range(300):
        G = int(rng.integers(2, 5))
        cells = rng.integers(0, 4, size=(G, 2, 2)) * (rng.random((G, 2, 2)) < 0.8)
        for m in names:
            f, _ = metric_value(m, cells.astype(np.float64), mode)
            x = exact_metric_value(m, cells.tolist(), mode)
            if x is None:
                assert math.isnan(float(f)), (m, cells.tolist(), f)
            else:
                assert abs(float(x) - float(f)) <= 1e-12, (m, mode, cells.tolist(), x, f)


def test_exact_value_at_a_tie():
    # 3/10 selected against 1/10: statistical parity is exactly 1/5 (0.19999999999999998 in floats)
    cells = [[[7, 0], [3, 0]], [[9, 0], [1, 0]]]
    f, _ = metric_value("statistical_parity", np.array(cells, dtype=np.float64))
    assert float(f) != 0.2
    assert exact_metric_value("statistical_parity", cells) == Fraction(1, 5)
    from fairspec.certify.exact import interval_decide
    v = exact_metric_value("statistical_parity", cells)
    assert interval_decide(v, v, ">=", 0.2) == "holds"
    assert interval_decide(v, v, ">", 0.2) == "violated"


# ---------------------------------------------------------------- on data rows, end to end

TIE = """\
data log = csv("{csv}", label = outcome == 1)

features P from log {{
  sex : {{F, M}}  protected
}}

model logged = predictions(log, decision = "decision")

property di {{ disparate_impact(logged, groups sex) >= 0.8  min_group_size = 1 }}
property ir {{ impact_ratio(logged, groups sex) >= 0.8  min_group_size = 1 }}
property whole {{ disparate_impact(logged, groups sex) >= 0.8  min_group_size = 1  weight = w }}
"""


def _tie_verdicts(tmp_path):
    from fairspec.pipeline import check

    # F: 7 of 10 selected, M: 7 of 8 -- the ratio is exactly 4/5 (0.7 / 0.875 = 0.7999999999999999)
    rows = [("F", "yes" if i < 7 else "no") for i in range(10)] + [("M", "yes" if i < 7 else "no") for i in range(8)]
    csv = tmp_path / "log.csv"
    csv.write_text("sex,decision,outcome,w\n" + "".join(f"{s},{d},{i % 2},3\n" for i, (s, d) in enumerate(rows)))
    spec = tmp_path / "tie.fair"
    spec.write_text(TIE.format(csv=csv))
    rep = check(spec)
    assert not rep.has_errors and not rep.internal_errors, ([d.message for d in rep.diagnostics], rep.internal_errors)
    return {v.name: v for v in rep.verdicts}


def test_value_at_a_tie_is_the_exact_ratio_rounded_once(tmp_path):
    v = _tie_verdicts(tmp_path)
    for name in ("di", "ir", "whole"):       # whole-number weights: exact sums, decided the same way
        assert v[name].details["exact_value"] == "4/5", name
        assert v[name].value == 0.8, (name, v[name].value)
        lo, hi = v[name].bound
        assert lo <= 0.8 <= hi, (name, v[name].bound)
    assert {g["group"]: g["impact_ratio"] for g in v["ir"].details["groups"]} == {"sex=F": 0.8, "sex=M": 1.0}


def test_a_tie_on_the_threshold_is_decided_as_written():
    """The decision maps a bootstrap end point equal to the float value (0.7999999999999999) to the
    exact 4/5: >= 0.8 holds and > 0.8 is violated when the whole interval is that value."""
    from types import SimpleNamespace

    from fairspec.backends.data.cell_counts import Counts
    from fairspec.backends.data.metrics import _decide

    f = 0.7 / 0.875
    c = Counts(np.zeros((2, 2, 2)), np.array([10, 8]), ["F", "M"])
    for op, want in ((">=", "holds"), (">", "violated"), ("<=", "holds"), ("<", "violated")):
        prop = SimpleNamespace(op=op, threshold=0.8, metric="disparate_impact")
        assert _decide(prop, c, Fraction(4, 5), f, f, f, 18, {}) == (want, None), op
