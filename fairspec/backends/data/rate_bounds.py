"""A simultaneous Clopper-Pearson interval of a group metric on counted rows (session 36, h7).

The bootstrap percentile interval of :mod:`fairspec.backends.data.metrics` is not a valid confidence bound
where it matters most: a group whose rate is 0 or 1 on the rows (every one of its 30 positives decided 1)
resamples to that rate in every replicate, so the interval of a gap collapses to a point, and a true gap of
0.06 was `holds (estimated)` of `equal_opportunity <= 0.05` in 16% of 120-row samples at confidence 0.95
(bench/estimate_coverage.py). This module bounds the metric from the counts themselves: every compared rate
of every eligible group (and the overall rate of ``compare = to_overall``) gets an exact Clopper-Pearson
interval at confidence ``1 - alpha / K`` (K the number of intervals: a union bound across groups, rates and
the overall rate), so with probability at least ``1 - alpha`` every true rate lies in its interval at once;
the metric's interval is then its range over that box of rates (a difference: its largest gap and its
smallest; a ratio: lowest over highest at the box's ends -- numerator and denominator both move). A rate
with no row in its denominator is anywhere in [0, 1]. The data backend widens the bootstrap's interval to
contain this one, so the printed bound is valid at the stated confidence whatever the bootstrap did.

Only for rows counted one by one (no ``weight``: a weighted rate is not a binomial proportion) and the rate
forms (difference, ratio, average, max_rate, min_rate) with a decision fixed per row (not ``rate =
scoring``, whose decision depends on the sample's median); None otherwise (the bootstrap alone, as before).
"""

from __future__ import annotations

import numpy as np

from fairspec.analyses.group_rates import BETWEEN, METRICS, RATES

FORMS = ("difference", "ratio", "average", "max_rate", "min_rate")


def applies(prop, c) -> bool:
    """Whether :func:`box_interval` bounds this property's metric (counted rows, a rate form)."""
    m = METRICS.get(prop.metric)
    return (m is not None and m.form in FORMS and not m.output and not c.weighted
            and prop.param("rate") != "scoring")


def clopper_pearson(k, n, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact two-sided (1 - alpha) intervals of binomial proportions, k successes of n (arrays; n > 0)."""
    from scipy.stats import beta

    k, n = np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(k > 0, beta.ppf(alpha / 2, k, n - k + 1), 0.0)
        hi = np.where(k < n, beta.ppf(1 - alpha / 2, k + 1, n - k), 1.0)
    return np.nan_to_num(lo, nan=0.0), np.nan_to_num(hi, nan=1.0)


def _num_den(cells, name: str):
    num_c, den_c, _ = RATES[name]
    return (sum(cells[..., d, y] for d, y in num_c), sum(cells[..., d, y] for d, y in den_c))


def box_interval(prop, cells, eligible, confidence: float) -> tuple[float, float] | None:
    """[lo, hi] containing the metric of the true rates with probability >= ``confidence``; None when the
    counts are not whole numbers. ``cells`` [G, 2, 2] counts of every group, ``eligible`` the compared ones."""
    m = METRICS[prop.metric]
    cells = np.asarray(cells, dtype=np.float64)
    if not np.all(cells == np.round(cells)):
        return None
    el = np.asarray(eligible, dtype=bool)
    mode = prop.options.get("compare", BETWEEN)
    overall = mode != BETWEEN and m.form not in ("max_rate", "min_rate")
    parts = []
    for r in m.rates:
        num, den = _num_den(cells[el], r)
        parts.append((num, den) + _num_den(cells.sum(axis=0), r))
    K = sum(int((den > 0).sum()) + (1 if overall and oden > 0 else 0) for _, den, _, oden in parts)
    a = (1.0 - confidence) / max(K, 1)
    per = []
    for num, den, onum, oden in parts:
        lo, hi = clopper_pearson(num, np.maximum(den, 1), a)
        lo, hi = np.where(den > 0, lo, 0.0), np.where(den > 0, hi, 1.0)
        if overall:
            olo, ohi = (clopper_pearson(onum, oden, a) if oden > 0 else (np.float64(0.0), np.float64(1.0)))
            per.append(_to_overall(lo, hi, float(olo), float(ohi), m.form))
        else:
            per.append(_between(lo, hi, m.form))
    los, his = [p[0] for p in per], [p[1] for p in per]
    if m.form == "average":
        return float(np.mean(los)), float(np.mean(his))
    if m.form == "ratio":           # the smaller of the rates' ratios
        return float(min(los)), float(min(his))
    return float(max(los)), float(max(his))        # a difference: the larger gap; one rate's max / min rate


def _between(lo, hi, form: str) -> tuple[float, float]:
    """The range of one rate's comparison between groups over the box [lo_g, hi_g]."""
    if form == "max_rate":
        return float(lo.max()), float(hi.max())
    if form == "min_rate":
        return float(lo.min()), float(hi.min())
    G = lo.size
    if G < 2:                       # one group: a gap of 0, a ratio of 1
        return (1.0, 1.0) if form == "ratio" else (0.0, 0.0)
    off = ~np.eye(G, dtype=bool)    # pairs of two different groups: one group is never at both ends of the box
    if form == "ratio":             # min over pairs g != h of p_g / p_h
        with np.errstate(divide="ignore", invalid="ignore"):
            low = np.where(hi[None, :] > 0, lo[:, None] / np.where(hi[None, :] > 0, hi[None, :], 1.0), np.inf)
            high = np.where(lo[None, :] > 0, hi[:, None] / np.where(lo[None, :] > 0, lo[None, :], 1.0), np.inf)
        low_v, high_v = float(low[off].min()), float(high[off].min())
        return (0.0 if not np.isfinite(low_v) else min(1.0, low_v)), min(1.0, high_v)
    gap_hi = hi[:, None] - lo[None, :]             # max over pairs of p_g - p_h
    gap_lo = lo[:, None] - hi[None, :]
    return max(0.0, float(gap_lo[off].max())), max(0.0, float(gap_hi[off].max()))


def _to_overall(lo, hi, olo: float, ohi: float, form: str) -> tuple[float, float]:
    """The range of one rate compared with the overall rate (in [olo, ohi]) over the box."""
    if form == "ratio":             # min_g min(p / o, o / p)
        with np.errstate(divide="ignore", invalid="ignore"):
            low = min(float((lo / ohi).min()) if ohi > 0 else 0.0,
                      float(np.where(hi > 0, olo / np.where(hi > 0, hi, 1.0), np.inf).min()))
            up = np.minimum(np.where(olo > 0, hi / max(olo, 1e-300), np.inf), np.where(lo > 0, ohi / lo, np.inf))
        return max(0.0, low), float(min(1.0, np.min(up)))
    gap_hi = np.maximum(hi - olo, ohi - lo)
    gap_lo = np.maximum(0.0, np.maximum(lo - ohi, olo - hi))
    return float(gap_lo.max()), float(gap_hi.max())                                # max_g |p - o|
