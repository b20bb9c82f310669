"""The per-group table of a group metric's verdict (what the text, JSON and HTML reports show).

Per group: rows, weight, positives, label positives, the rates the metric uses (and each one's
Clopper-Pearson interval on counted rows, else its bootstrap interval, named approximate), benefit, ECE with
its reliability bins, impact ratios from exact counts when the cells are whole numbers (:func:`exact_cells`);
the same for the whole population.
Moved out of :mod:`fairspec.backends.data.metrics` (which counts, resamples and decides), unchanged;
``c`` is its :class:`~fairspec.backends.data.cell_counts.Counts` (not imported: metrics imports this module).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from fairspec import ir
from fairspec.analyses.group_rates import METRICS, benefit_mean, ece, rate, uses_label

def exact_cells(c) -> bool:
    """The cells are exact integers: rows counted, or whole-number weights whose sums stay below
    2^53 (every partial float sum of them is then exact)."""
    cells = c.cells
    return ((not c.weighted or c.whole_weights) and bool(np.all(cells == np.round(cells)))
            and bool(np.all(np.abs(cells) < 2.0 ** 53)) and float(np.abs(cells).sum()) < 2.0 ** 53)


def table_rates(prop: ir.GroupMetric, labelled: bool) -> list[str]:
    """The rates a group's row of the table shows: the positive rate, and the rates the metric uses."""
    out = ["selection_rate"]
    if labelled:
        out += ["base_rate", "tpr", "fpr"]
    for r in METRICS[prop.metric].rates:
        if r not in out:
            out.append(r)
    return out


def rate_intervals(details: dict, prop: ir.GroupMetric, per_rate: dict, confidence: float) -> None:
    """Each group's interval of the rates its metric compares (``<rate>_interval``, for the report's bars) and
    how it was made (``details["rate_intervals"]``): the exact Clopper-Pearson interval :func:`group_table` put
    there (counted rows), else the percentile interval of the same bootstrap replicates as the metric's own
    interval -- an approximation ([1, 1] for a group whose positives are all approved)."""
    alpha = 1.0 - confidence
    exact = any(f"{'positive_rate' if r == 'selection_rate' else r}_interval" in row
                for row in details["groups"] for r in METRICS[prop.metric].rates)
    if METRICS[prop.metric].rates:
        details["rate_intervals"] = (
            {"method": "clopper_pearson (each rate alone, not simultaneous)", "confidence": confidence} if exact
            else {"method": "bootstrap percentile (approximate)", "confidence": confidence})
    if exact:
        return
    for r in METRICS[prop.metric].rates:
        per = per_rate[r]  # [R, G]
        key = "positive_rate" if r == "selection_rate" else r
        full = ~np.isnan(per).any(axis=0)  # groups with the rate in every replicate: one vectorised quantile
        q = np.quantile(per[:, full], [alpha / 2, 1 - alpha / 2], axis=0) if full.any() else None
        at = np.cumsum(full) - 1
        for g, row in enumerate(details["groups"]):
            if row.get(key) is None:
                continue
            if full[g]:
                row[f"{key}_interval"] = [_r(q[0, at[g]]), _r(q[1, at[g]])]
                continue
            col = per[:, g][~np.isnan(per[:, g])]
            if col.size:
                row[f"{key}_interval"] = [_r(np.quantile(col, alpha / 2)), _r(np.quantile(col, 1 - alpha / 2))]


def metric_columns(prop: ir.GroupMetric) -> list[str]:
    """The keys of the per-group table the metric itself compares (what the text and HTML reports show)."""
    mdef = METRICS[prop.metric]
    out = ["positive_rate" if r == "selection_rate" else r for r in mdef.rates]
    if uses_label(prop.metric) or not prop.model:
        out.insert(0, "label_positives")
    if mdef.form in ("inequality", "between_inequality"):
        out.append("benefit")
    if mdef.form == "calibration":
        out.append("ece")
    if prop.metric == "impact_ratio":
        out.append("impact_ratio")
    return out


def group_table(prop: ir.GroupMetric, c, eligible, excluded) -> tuple[list[dict], dict]:
    """Per group: rows, (weight), positives, label positives and the rates the metric uses, so a
    number can be traced to its counts; the same for the whole population."""
    labelled = c.labelled
    shown = table_rates(prop, labelled)
    mdef = METRICS[prop.metric]

    def row(cells, size, bins=None, sums=None) -> dict:
        out = {"rows": int(size)}
        if c.weighted:
            out["weight"] = float(cells.sum())
        out["positives"] = float(cells[1].sum()) if c.weighted else int(round(cells[1].sum()))
        if labelled:
            out["label_positives"] = float(cells[:, 1].sum()) if c.weighted else int(round(cells[:, 1].sum()))
        for r in shown:
            v = rate(cells[None], r)[0]
            out["positive_rate" if r == "selection_rate" else r] = None if np.isnan(v) else _r(v)
        if mdef.form in ("inequality", "between_inequality"):
            b = benefit_mean(cells[None])[0][0]  # NaN when the group weighs nothing (every weight 0)
            out["benefit"] = None if np.isnan(b) else _r(b)
        if bins is not None:
            per, _ = ece(bins[None], sums[None])
            out["ece"] = None if np.isnan(per[0]) else _r(per[0])
            B = bins.shape[0]
            out["reliability"] = [
                {"bin": [i / B, (i + 1) / B], "weight": float(bins[i].sum()),
                 "mean_score": _r(sums[i] / bins[i].sum()) if bins[i].sum() else None,
                 "positive_share": _r(bins[i, 1] / bins[i].sum()) if bins[i].sum() else None} for i in range(B)]
        return out

    groups = []
    for g, name in enumerate(c.names):
        r = {"group": name, **row(c.cells[g], c.sizes[g], *((c.bins[g], c.score_sums[g]) if c.bins is not None
                                                              else ()))}
        r["counted"] = bool(eligible[g])
        if excluded[g]:
            r["excluded"] = True
        groups.append(r)
    if prop.metric == "impact_ratio":  # each category's rate over the most selected counted category's
        top = max((g["positive_rate"] for g, e in zip(groups, eligible) if e and g["positive_rate"] is not None),
                  default=None)
        # unweighted: the ratio of exact counts rounded once (7/10 over 7/8 is 0.8, not 0.7999999999999999)
        whole = exact_cells(c)      # once: it scans every cell
        sel = [None if not whole or g["positive_rate"] is None else
               Fraction(int(round(c.cells[k][1].sum())), int(round(c.cells[k].sum()))) for k, g in enumerate(groups)]
        top_x = max((x for x, e in zip(sel, eligible) if e and x is not None), default=None)
        for k, g in enumerate(groups):  # an excluded category is left out of the impact ratios (LL 144: under 2%)
            ok = top and g["positive_rate"] is not None and not g.get("excluded")
            exact = ok and sel[k] is not None and top_x
            g["impact_ratio"] = (_r(float(sel[k] / top_x)) if exact else _r(g["positive_rate"] / top)) if ok else None
    _exact_rate_intervals(prop, c, groups)
    overall = row(c.cells.sum(axis=0), c.sizes.sum(), *((c.bins.sum(axis=0), c.score_sums.sum(axis=0))
                                                         if c.bins is not None else ()))
    return groups, overall


def _valid_rates(prop: ir.GroupMetric, c) -> bool:
    """Each group's compared rates are binomial proportions (rows counted one by one, a decision fixed per
    row): their Clopper-Pearson intervals are valid (not ``weight``; not ``rate = scoring``, decided by the
    sample's own median)."""
    return not c.weighted and prop.param("rate") != "scoring" and bool(np.all(c.cells == np.round(c.cells)))


def _exact_rate_intervals(prop: ir.GroupMetric, c, groups: list[dict]) -> None:
    """Each group's exact Clopper-Pearson interval of each rate its metric compares (``<rate>_interval``), at
    the stated confidence for that rate alone (not simultaneous: the verdict's own box spends 1 - confidence
    over every rate at once, :mod:`.rate_bounds`). A bootstrap percentile interval is [1, 1] for a group whose
    positives are all approved; this one is not. Weighted or ``rate = scoring`` rows keep the bootstrap's
    (:func:`rate_intervals`, which names it approximate)."""
    if not _valid_rates(prop, c):
        return
    from fairspec.backends.data.rate_bounds import _num_den, clopper_pearson

    alpha = 1.0 - prop.options.confidence
    cells = np.asarray(c.cells, dtype=np.float64)
    for r in METRICS[prop.metric].rates:
        key = "positive_rate" if r == "selection_rate" else r
        num, den = _num_den(cells, r)
        lo, hi = clopper_pearson(num, np.maximum(den, 1), alpha)
        for g, row in enumerate(groups):
            if row.get(key) is not None and den[g] > 0:
                row[f"{key}_interval"] = [_r(lo[g]), _r(hi[g])]


def report_number(v) -> float:
    """A value for the report: full precision (JSON carries it as is; only the text report rounds)."""
    return float(v)


_r = report_number
