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
