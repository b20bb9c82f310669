"""PBA's shares printed beside a threshold: a range's ends rounded outward from the exact ratio (the printed
range contains it), a share kept on its side of the threshold -- read from the exact count ratio, not from the
float's shortest decimal (0.3333333333333333 is below 1/3)."""

from fractions import Fraction

import numpy as np
import pytest

from fairspec.backends.pba.aggregate import _pct, _pct_of, _range, _put

THIRD = 1 / 3
THRESHOLDS = [(), (0.5,), (0.3333333333333333,), ("0.33333333333333334",), (0.334,), (0.333,)]


def _ends(text: str):
    lo, hi = text.rstrip("%").split("-")
    return Fraction(lo) / 100, Fraction(hi) / 100


@pytest.mark.parametrize("ts", THRESHOLDS)
def test_a_range_of_one_third_contains_one_third(ts):
    """Before: beside 0.3333333333333333 the range [1/3, 1/3] printed '33.33333333333333-33.33333333333333%',
    which leaves 1/3 out."""
    r = {"sp": THIRD}
    _range(r, "sp", np.array([1, 0, 0], bool), np.array([1, 0, 0], bool), np.ones(3, bool))   # [0, 1/3]
    lo, hi = _ends(_pct_of(r, "sp", ts))
    assert lo <= 0 and hi >= Fraction(1, 3), _pct_of(r, "sp", ts)
    r = {"sp": THIRD, "sp_range": [THIRD, 2 / 3], "exact": {"sp_range": ["1/3", "2/3"]}}
    lo, hi = _ends(_pct_of(r, "sp", ts + (0.6666666666666666,)))
    assert lo <= Fraction(1, 3) and hi >= Fraction(2, 3), _pct_of(r, "sp", ts)
    r = {"sp": THIRD, "sp_range": [THIRD, THIRD], "exact": {"sp_range": ["1/3", "1/3"]}}
    lo, hi = _ends(_pct_of(r, "sp", ts))
    assert lo <= Fraction(1, 3) <= hi, _pct_of(r, "sp", ts)


def test_range_records_its_exact_ends():
    r = {}
    _range(r, "tpr", np.array([1, 0, 0]), np.array([0, 1, 0]), np.ones(3, bool))
    assert r["exact"]["tpr_range"] == ["1/3", "2/3"]


def test_a_share_of_one_third_keeps_its_side_of_the_threshold():
    """1/3 > 0.3333333333333333: printed above it, never on it (before: '33.33333333333333%')."""
    r = {}
    _put(r, "pba_observed", 1, 3)
    assert r["exact"]["pba_observed"] == "1/3" and r["pba_observed"] == THIRD
    text = _pct(r["pba_observed"], (0.3333333333333333,), exact=r["exact"]["pba_observed"])
    assert Fraction(text.rstrip("%")) / 100 > Fraction("0.3333333333333333"), text
    _put(r, "none", 0, 0)
    assert r["none"] is None and "none" not in r["exact"]


@pytest.mark.parametrize("ts", [(0.3333333333333333, 0.6666666666666666), ("0.66666666666666665",)])
def test_the_verdicts_bound_contains_the_exact_shares(ts):
    """The verdict's interval [1/3, 2/3] (as a PBA verdict's details.exact_bound records it) beside thresholds
    next to its ends: the printed ends contain 1/3 and 2/3. Before: beside 0.66666666666666665 (between the
    float 2/3 and 2/3) the upper end printed 0.6666666666666666, from the float."""
    from fairspec.report import bound_texts
    from fairspec.verdict import Verdict

    v = Verdict("p", "pba", "unknown", value=THIRD, reason="depends on the unknown points", bound=(THIRD, 2 / 3),
                details={"exact_value": "1/3", "exact_bound": ["1/3", "2/3"]}, thresholds=ts)
    lo, hi = map(Fraction, bound_texts(v))
    assert lo <= Fraction(1, 3) and hi >= Fraction(2, 3), bound_texts(v)
