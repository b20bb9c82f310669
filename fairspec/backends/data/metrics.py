"""Group metrics on data with bootstrap confidence intervals.

The bootstrap resamples rows; since every metric here depends on the rows
only through the counts of (group, decision, label) cells, a replicate is
one multinomial draw of those cell counts, which makes 1000 replicates over
30,000 rows cost milliseconds.  The counts are accumulated over record
batches (``group_cells``), so a data set larger than memory is decided in one
streamed pass, bootstrap included, with the same verdict as in memory.
"""

from __future__ import annotations

import time

import numpy as np

from fairspec import ir
from fairspec.backends.data.groups import assign
from fairspec.verdict import Verdict, interval_status, unknown

DEFAULT_BOOTSTRAP = 1000  # resamples when the property sets no bootstrap = N


def decisions(ctx, model_name: str, values: dict, n: int) -> np.ndarray:
    model = ctx.model(model_name)
    if getattr(model, "format", None) == "rule":
        return model.decide_values(values, n)
    X = ctx.model_input(model_name, values, n)
    return model.decide(X)


def metric_from_counts(metric: str, cells: np.ndarray):
    """Metric value(s) from cell counts [..., G, 2 (decision), 2 (label)].

    Returns (value, rates, a, b): the metric, the per-group rate it compares,
    and the indices of the pair of groups that attain it.  Leading axes are
    bootstrap replicates.
    """
    n_g = cells.sum(axis=(-1, -2))
    with np.errstate(divide="ignore", invalid="ignore"):
        if metric in ("disparate_impact", "statistical_parity", "most_favoured", "least_favoured"):
            rates = cells[..., 1, :].sum(axis=-1) / n_g
            hi, lo = np.nanmax(rates, axis=-1), np.nanmin(rates, axis=-1)
            if metric in ("most_favoured", "least_favoured"):
                return (hi if metric == "most_favoured" else lo), rates
            value = lo / hi if metric == "disparate_impact" else hi - lo
            if metric == "disparate_impact":
                value = np.where(hi > 0, value, np.nan)
            return value, rates
        pos = cells[..., :, 1].sum(axis=-1)
        neg = cells[..., :, 0].sum(axis=-1)
        tpr = cells[..., 1, 1] / pos
        fpr = cells[..., 1, 0] / neg
        tpr_gap = np.nanmax(tpr, axis=-1) - np.nanmin(tpr, axis=-1)
        if metric == "equal_opportunity":
            return tpr_gap, tpr
        fpr_gap = np.nanmax(fpr, axis=-1) - np.nanmin(fpr, axis=-1)
        value = np.maximum(tpr_gap, fpr_gap)
        rates = np.where((tpr_gap >= fpr_gap)[..., None], tpr, fpr)
        return value, rates


def group_cells(prop: ir.GroupMetric, fs: ir.FeatureSet, ctx, batch_rows: int | None = None):
    """Counts of (group, decision, label) cells accumulated over record batches.

    The counts are sufficient statistics of every metric here and of its bootstrap (a
    resample of the rows is a multinomial draw of the cells), so one pass over the data in
    bounded memory decides the property: no row is kept after its batch.  Returns
    (cells [G, 2, 2], group names, rows counted).
    """
    cells, names, n = None, None, 0
    for rows in ctx.row_batches(fs.name, prop.data, batch_rows):
        values, k = rows.frame.values, rows.frame.n_rows
        d = decisions(ctx, prop.model, values, k)
        idx, names = assign(prop.groups, fs, values, k)
        y = rows.labels.astype(np.int64) if rows.labels is not None else np.zeros(k, dtype=np.int64)
        part = np.bincount(idx * 4 + d * 2 + y, minlength=len(names) * 4).reshape(len(names), 2, 2)
        cells = part.astype(np.float64) if cells is None else cells + part
        n += k
    return cells, names, n


def run_group_metric(prop: ir.GroupMetric, ctx) -> Verdict:
    t0 = time.perf_counter()
    if prop.data is None:
        # over a distribution: the distribution runner (ssat / dp; an empirical distribution comes back here)
        from fairspec.backends.distribution_runner import run

        return run(prop, ctx)
    if prop.metric == "path_specific":
        return unknown(prop, "path-specific causal fairness needs a distribution with a causal structure: "
                             "distribution = bayes(DATA), conditional(DATA) or a declared table", backend="data")
    fs = ctx.spec.feature_set(prop.features)
    cells, names, n = group_cells(prop, fs, ctx)
    G = len(names)
    sizes = cells.sum(axis=(1, 2)).astype(int)
    opts = prop.options
    eligible = sizes >= opts.min_group_size
    small = [(names[g], int(sizes[g])) for g in range(G) if 0 < sizes[g] < opts.min_group_size]
    empty = [names[g] for g in range(G) if sizes[g] == 0]
    details = {
        "groups": [{"group": names[g], "rows": int(sizes[g]),
                    "positive_rate": _r(cells[g, 1].sum() / sizes[g]) if sizes[g] else None,
                    "tpr": _r(cells[g, 1, 1] / cells[g, :, 1].sum()) if cells[g, :, 1].sum() else None,
                    "fpr": _r(cells[g, 1, 0] / cells[g, :, 0].sum()) if cells[g, :, 0].sum() else None,
                    "counted": bool(eligible[g])} for g in range(G)],
        "rows": int(n), "metric": prop.metric, "groups_label": prop.groups.label,
        "min_group_size": opts.min_group_size, "bootstrap": opts.bootstrap or DEFAULT_BOOTSTRAP, "confidence": opts.confidence,
    }
    if empty:
        details["empty_groups"] = empty
    if eligible.sum() < 2:
        return unknown(prop, f"fewer than two groups of {prop.groups.label} have at least {opts.min_group_size} rows "
                             f"(min_group_size)", backend="data", seconds=time.perf_counter() - t0, details=details)
    ec = cells[eligible]
    enames = [names[g] for g in range(G) if eligible[g]]
    value, rates = metric_from_counts(prop.metric, ec)
    value = float(value)
    if np.isnan(value):
        return unknown(prop, f"{prop.metric} is undefined here (no positive decision, or a group without "
                             f"positive/negative labels)", backend="data", seconds=time.perf_counter() - t0,
                       details=details)
    a, b = int(np.nanargmin(rates)), int(np.nanargmax(rates))
    details["worst_pair"] = {"low": enames[a], "low_rate": _r(rates[a]), "high": enames[b], "high_rate": _r(rates[b])}
    # bootstrap: multinomial redraws of the eligible cells
    rng = np.random.default_rng(opts.seed)
    flat = ec.reshape(-1)
    total = int(flat.sum())
    draws = rng.multinomial(total, flat / total, size=opts.bootstrap or DEFAULT_BOOTSTRAP).reshape(
        (opts.bootstrap or DEFAULT_BOOTSTRAP,) + ec.shape)
    boot, _ = metric_from_counts(prop.metric, draws.astype(np.float64))
    boot = boot[~np.isnan(boot)]
    alpha = 1.0 - opts.confidence
    lo, hi = (float(np.quantile(boot, alpha / 2)), float(np.quantile(boot, 1 - alpha / 2))) if boot.size else (value, value)
    lo, hi = min(lo, value), max(hi, value)
    seconds = time.perf_counter() - t0
    common = dict(value=_r(value), bound=(_r(lo), _r(hi)), backend="data", seconds=seconds, details=details)
    claim = f"{prop.metric} {prop.op} {prop.threshold:g}"
    status = interval_status(prop.op, prop.threshold, lo, hi)
    if status == "holds":
        if small:
            listed = ", ".join(f"{g} ({k} rows)" for g, k in small[:5])
            return Verdict(prop.name, prop.kind, "unknown", reason=f"{claim} holds on the groups with at least "
                           f"{opts.min_group_size} rows, but these are too small to judge: {listed}", **common)
        return Verdict(prop.name, prop.kind, "holds", how="estimated", **common)
    if status == "violated":
        return Verdict(prop.name, prop.kind, "violated",
                       reason=f"{claim} fails over the whole {opts.confidence:.0%} interval; lowest "
                              f"{enames[a]} ({rates[a]:.3f}), highest {enames[b]} ({rates[b]:.3f})", **common)
    return Verdict(prop.name, prop.kind, "unknown",
                   reason=f"the threshold {prop.threshold:g} lies inside the {opts.confidence:.0%} confidence "
                          f"interval [{lo:.4f}, {hi:.4f}]; more data would decide it", **common)


def _r(v) -> float:
    return round(float(v), 6)
