"""Group metrics on data with bootstrap confidence intervals.

Every metric is a function of weighted cell counts (fairspec.analyses.group_rates):
the sum of sample weight per (group, decision, label) cell, and for calibration
per (group, score bin, label) with the bins' score sums.  The bootstrap
resamples rows; when every row weighs 1 a replicate is one multinomial draw of
the cell counts (1000 replicates over 30,000 rows cost milliseconds), otherwise
(weights, scores) each row enters each replicate with a Poisson(1) multiplicity.
The counts, and those replicates, are accumulated over record batches
(``count``, :mod:`fairspec.backends.data.cell_counts`, from the decisions and scores per row of
:mod:`fairspec.backends.data.row_decisions`), so a data set larger than memory is decided in one
streamed pass, bootstrap included, with the same verdict as in memory.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from fairspec.syntax.literals import percent as _level  # a confidence level as the spec writes it
from fairspec import ir
from fairspec.analyses.group_rates import BETWEEN, METRICS, metric_value, rate
from fairspec.backends.data import batching
from fairspec.backends.data.budget import NONE as NO_LIMIT, Budget, OutOfTime
from fairspec.backends.data.cell_counts import Counts, count, poisson_multiplicities
from fairspec.backends.data.constant import constant_reason, lost_reason, lost_replicates, undefined_reason
from fairspec.backends.data.group_table import exact_cells, group_table, metric_columns, rate_intervals, \
    report_number as _r
from fairspec.backends.data.estimate_bounds import note
from fairspec.backends.data.groups import estimated_holds, missing_rows, small_undo_reason
from fairspec.backends.data.row_decisions import NoScore
from fairspec.syntax.literals import interval as _interval
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly
from fairspec.verdict import Verdict, interval_status, unknown


BOOT_CHUNK_CELLS = 4_000_000  # resampled cells evaluated at a time (32 MB of float64)


def bootstrap(prop: ir.GroupMetric, c: Counts, R: int, rng, eligible,
              budget: Budget = NO_LIMIT) -> tuple[np.ndarray, dict]:
    """The metric over R bootstrap replicates [R], and each compared rate per group [R, G].

    Multinomial replicates are drawn and evaluated a chunk of resamples at a time (the same
    draws as all at once: the generator fills replicate after replicate), so memory is R x G
    rates, not R x G x 4 counts, however many cells the groups occupy."""
    rates = METRICS[prop.metric].rates
    if c.boot_cells is not None:  # Poisson replicates, counted with the rows (sized before the pass)
        boot, _ = evaluate_counts(prop, c.boot_cells, eligible, c.boot_bins, c.boot_sums)
        return boot, {r: rate(c.boot_cells, r) for r in rates}
    flat = c.cells.reshape(-1)
    total = int(flat.sum())
    k = max(1, min(R, BOOT_CHUNK_CELLS // max(1, flat.size)))
    boots, per = [], {r: [] for r in rates}
    for r0 in range(0, R, k):
        budget.check(int(c.sizes.sum()), r0)
        cells = rng.multinomial(total, flat / total, size=min(k, R - r0)).reshape((-1,) + c.cells.shape) \
            .astype(np.float64)
        boots.append(evaluate_counts(prop, cells, eligible)[0])
        for r in rates:
            per[r].append(rate(cells, r))
    return np.concatenate(boots), {r: np.concatenate(v) for r, v in per.items()}


def evaluate_counts(prop: ir.GroupMetric, cells, eligible, bins=None, score_sums=None):
    """The metric over the eligible groups (the whole population for overall rates) [...], and the
    per-group quantity it compares [..., G_eligible]."""
    mode = prop.options.get("compare", BETWEEN)
    kw = dict(alpha=float(prop.param("alpha", 2.0)), overall_cells=cells.sum(axis=-3))
    if bins is not None:
        kw.update(bins=bins[..., eligible, :, :], score_sums=score_sums[..., eligible, :], overall_bins=bins,
                  overall_sums=score_sums)
    return metric_value(prop.metric, cells[..., eligible, :, :], mode, **kw)


def run_group_metric(prop: ir.GroupMetric, ctx, *, resamples: int, timeout: float | None = None,
                     why: str | None = None) -> Verdict:
    """A group metric measured on data rows. Its runner (:mod:`fairspec.kinds.on_data`) passes in what
    it asked the planner: ``resamples``, the option ``bootstrap`` (the spec's, else the schema's default),
    ``timeout``, the option (None: no limit; past it the verdict is unknown, see :mod:`.budget`), and
    ``why``, the planner's reason for a property over a distribution that is not the data's."""
    t0 = time.perf_counter()
    try:
        v = _run_group_metric(prop, ctx, resamples, Budget(ctx, timeout), why, t0)
        note = ((v.details or {}).get("forest_threads") or {}).get("note")
        if note and v.status in ("holds", "violated"):       # decided in every order of a threaded forest
            from fairspec.verdict import with_note

            v = with_note(v, note)
        return v
    except OutOfTime as e:
        return unknown(prop, e.reason(), backend="data", seconds=time.perf_counter() - t0,
                       details={"timed_out": {"budget": e.limit, "rows": e.rows, "resamples": e.resamples}})


def _run_group_metric(prop: ir.GroupMetric, ctx, resamples: int, budget: Budget, why: str | None,
                      t0: float) -> Verdict:
    if prop.data is None:
        dist = next((d for d in ctx.spec.distributions if d.name == prop.distribution), None)
        if dist is not None and dist.kind == "empirical" and prop.metric != "influence":
            return run_empirical(prop, ctx, dist, resamples=resamples, timeout=budget.limit)
        why = why or (f"the data backend measures group metrics on data rows, and this one is "
                      f"over distribution '{prop.distribution}' (dp, ssat or elimination)")
        return unknown(prop, why, backend="data")
    if prop.metric == "path_specific":
        return unknown(prop, "path-specific causal fairness needs a distribution with a causal structure: "
                             "distribution = bayes(DATA), conditional(DATA) or a declared table", backend="data")
    if METRICS[prop.metric].output:              # issue 25: multiclass and regression metrics
        from fairspec.backends.data.outputs import run_output_metric

        return run_output_metric(prop, ctx, resamples=resamples, budget=budget)
    R = resamples  # the option bootstrap (the schema's default when not set)
    rng = np.random.default_rng(prop.options.seed)
    try:
        c = count(prop, ctx, R, budget)
    except NoScore as e:
        return unknown(prop, f"{prop.metric} needs a score: {e}", backend="data")
    mdef = METRICS[prop.metric]
    opts = prop.options
    cells, sizes, names = c.cells, c.sizes, c.names
    G, n = len(names), int(sizes.sum())
    # an inequality index over individuals (theil_index, generalized_entropy_index) is one value of every
    # row, whatever its group: groups only split the table, so none is too small or left out
    individual = mdef.form == "inequality"
    share = 0.0 if individual else float(opts.get("exclude_below", 0.0))
    excluded = (sizes < share * n) & (sizes > 0) if share > 0 else np.zeros(G, dtype=bool)
    eligible = sizes > 0 if individual else (sizes >= opts.min_group_size) & ~excluded
    large = int(eligible.sum())
    if mdef.form == "between_inequality":   # every row's benefit is its group's mean, over ALL the rows: a small
        eligible = (sizes > 0) & ~excluded  # group is in the index (not monotone in the groups), keeps holds unknown
    small = [] if individual else [(names[g], int(sizes[g])) for g in range(G)
                                   if 0 < sizes[g] < opts.min_group_size and not excluded[g]]
    empty = [names[g] for g in range(G) if sizes[g] == 0]
    details = {
        "rows": n, "metric": prop.metric, "groups_label": prop.groups.label or "all rows",
        "compare": opts.get("compare", BETWEEN), "bootstrap": R, "confidence": opts.confidence,
    }
    if not individual:
        details["min_group_size"] = opts.min_group_size
    if opts.get("weight"):
        details["weight"] = opts.get("weight")
    details.update(missing_rows(ctx, prop.data, prop.features))
    if empty:
        details["empty_groups"] = empty
    if c.combinations is not None:  # sparse cells: the groups no row falls in are not listed one by one
        details["empty_groups_count"] = c.combinations - G
    if share > 0:
        details["exclude_below"] = share
    if excluded.any():
        details["excluded_groups"] = [{"group": names[g], "rows": int(sizes[g]), "share": sizes[g] / n}
                                      for g in range(G) if excluded[g]]
    details["groups"], details["overall"] = group_table(prop, c, eligible, excluded)
    if prop.model and (prop.param("class") is not None or prop.param("threshold") is not None):
        from fairspec.backends.data.outputs import decision_words
        details.update(decision_words(prop, ctx))       # 'predicted "C"' / 'grade is "C"' for the report
    if prop.param("class") is not None and ctx.spec.data(prop.data).target is not None:
        from fairspec.backends.data.outputs import confusion_by_group   # issue 25: the whole confusion matrix

        for row, cm in zip(details["groups"], confusion_by_group(prop, ctx, names)):
            row["confusion"] = cm
            row["confusion_matrix"] = str(cm.get("matrix"))      # the text and HTML tables' column
    details["rates"] = metric_columns(prop)
    if any("confusion" in r for r in details["groups"]):
        details["rates"].append("confusion_matrix")
    if prop.metric == "impact_ratio":
        details["rate"] = prop.param("rate", "selection")
    if individual and n == 0:
        return unknown(prop, f"{prop.metric} has no data rows to measure", backend="data",
                       seconds=time.perf_counter() - t0, details=details)
    if large < 2 and not individual:
        return unknown(prop, f"fewer than two groups of {prop.groups.label} have at least {opts.min_group_size} rows "
                             f"(min_group_size)", backend="data", seconds=time.perf_counter() - t0, details=details)
    enames = [names[g] for g in range(G) if eligible[g]]
    value, rates = evaluate_counts(prop, cells, eligible, c.bins, c.score_sums)
    value = float(value)
    constant = constant_reason(prop, ctx, cells, sizes, eligible, c.labelled)   # y == "maybe": never holds
    if constant:
        details["constant"] = constant
    if np.isnan(value):
        return unknown(prop, constant or f"{prop.metric} is undefined here (a rate it compares has no rows in its "
                       f"denominator in every group, e.g. no positive decision)", backend="data",
                       seconds=time.perf_counter() - t0, details=details)
    a = b = None
    if not np.isnan(rates).all() and mdef.form != "inequality":
        a, b = int(np.nanargmin(rates)), int(np.nanargmax(rates))
        details["worst_pair"] = {"low": enames[a], "low_rate": _r(rates[a]), "high": enames[b],
                                 "high_rate": _r(rates[b])}
    boot, per_rate = bootstrap(prop, c, R, rng, eligible, budget)
    rate_intervals(details, prop, per_rate, opts.confidence)
    lost, lost_in = lost_replicates([per_rate[r] for r in mdef.rates], [rate(cells, r) for r in mdef.rates],
                                    eligible, names)
    boot_all, boot = boot, boot[~np.isnan(boot) & ~(lost if lost.size else False)]
    alpha = 1.0 - opts.confidence
    lo, hi = (float(np.quantile(boot, alpha / 2)), float(np.quantile(boot, 1 - alpha / 2))) if boot.size else (value, value)
    lo_b, hi_b = min(lo, value), max(hi, value)                 # the bootstrap's (its reasons come first)
    lo, hi = _with_box(prop, c, eligible, lo_b, hi_b, details)   # widened to a valid bound (rate_bounds)
    exact = _exact(prop, c, eligible)
    # reported: the exact value rounded once (7/10 : 7/8 is 0.8, not 0.7999999999999999), and an end
    # point equal to the float value stands for it, as in the decision
    shown = float(exact) if exact is not None else value
    seconds = time.perf_counter() - t0
    common = dict(value=_r(shown), bound=(_r(shown if lo == value else lo), _r(shown if hi == value else hi)),
                  backend="data", seconds=seconds, details=details)
    claim = f"{prop.metric} {prop.op} {_spec_number(prop.threshold)}"      # as written: 0.1234567, not 0.123457
    status, why_unknown = _decide(prop, c, exact, value, lo_b, hi_b, n, details)
    if c.fragile is not None:       # rows another batching decides otherwise: the verdict under their decisions
        batched = _batched(prop, c, eligible, R, n, "unknown" if why_unknown else status, shown, details, ctx, small)
        if batched:
            return Verdict(prop.name, prop.kind, "unknown", reason=batched, **common)
    if c.edges is not None:         # calibration: scores another batching moves, rows to a neighbouring bin
        batched, details["batching"] = batching.calibration_decide(
            prop, c, c.edges, eligible, value, boot_all if c.boot_bins is not None else None,
            "unknown" if why_unknown else status, lambda lo2, hi2: _decide(prop, c, None, value, lo2, hi2, n, {})[0],
            poisson_multiplicities)
        if batched:
            return Verdict(prop.name, prop.kind, "unknown", reason=batched, **common)
    if c.forest is not None:        # a forest adding its trees in thread order: its rows within E of a threshold
        from fairspec.backends.data.forest_rows import decide as forest_decide

        threaded, details["forest_threads"] = forest_decide(
            prop, c, c.forest, "unknown" if why_unknown else status, shown,
            lambda c2: _status_of(prop, c2, eligible, R, n, ctx, small), prop.data)
        if threaded:
            return Verdict(prop.name, prop.kind, "unknown", reason=threaded, **common)
    why_unknown = (why_unknown or undefined_reason(prop, cells, eligible, names, status)
                   or (None if mdef.form == "between_inequality" else small_undo_reason(
                       prop, claim, small, opts.min_group_size, status, mdef.form not in ("ratio", "min_rate")))
                   or lost_reason(prop, status, boot, boot_all[lost] if lost.size else [], lost_in, alpha, value))
    if why_unknown:
        return Verdict(prop.name, prop.kind, "unknown", reason=why_unknown, **common)
    if status != "unknown" and (lo, hi) != (lo_b, hi_b) and _decide(prop, c, exact, value, lo, hi, n, {})[0] != status:
        return Verdict(prop.name, prop.kind, "unknown", reason=(
            f"the threshold {_spec_number(prop.threshold)} lies inside the {_level(opts.confidence)} interval "
            f"{_interval(lo, hi, (prop.threshold,), exact=exact)} that bounds "
            f"{_METHOD_WORDS.get(details['interval'].get('method', ''), 'the metric (union bound)')}, though not inside "
            f"the bootstrap's {_interval(lo_b, hi_b, (prop.threshold,))}: a group's value on few rows (a rate near 0 or "
            f"1) is not known to the bootstrap's precision; more data "
            f"would decide it"),
            **common)
    if status == "holds" and constant:
        return Verdict(prop.name, prop.kind, "unknown", reason=constant, **common)
    if status == "holds":
        return estimated_holds(prop, claim, small, opts.min_group_size, common, opts.confidence)
    if status == "violated":
        where = (f"; lowest {enames[a]} ({rates[a]:.3f}), highest {enames[b]} ({rates[b]:.3f})"
                 if a is not None else "")
        return Verdict(prop.name, prop.kind, "violated",
                       reason=f"{claim} fails over the whole {_level(opts.confidence)} interval{note(details)}{where}",
                       **common)
    return Verdict(prop.name, prop.kind, "unknown",
                   reason=f"the threshold {_spec_number(prop.threshold)} lies inside the {_level(opts.confidence)} confidence "
                          f"interval {_interval(lo, hi, (prop.threshold,), exact=exact)}; more data would decide it", **common)


_METHOD_WORDS = {"bootstrap joined with clopper_pearson (valid, union bound)":
                 "every compared rate of every group at once (Clopper-Pearson, union bound)",
                 "bootstrap joined with mcdiarmid (valid, union bound)":
                 "every compared group's ECE at once (McDiarmid, union bound)"}


def _batched(prop: ir.GroupMetric, c: Counts, eligible, R: int, n: int, status: str, value: float,
             details: dict, ctx=None, small=()) -> str | None:
    """The reason of an ``unknown`` when the verdict changes with the decisions of the rows another
    batching of the runtime decides otherwise (:mod:`fairspec.backends.data.batching`), else None; the
    rows and the metric's range go to ``details["batching"]`` either way."""
    reason, details["batching"] = batching.decide(prop, c, c.fragile, status, value,
                                                  lambda c2: _status_of(prop, c2, eligible, R, n, ctx, small), prop.data,
                                                  poisson_multiplicities)
    return reason


def _status_of(prop: ir.GroupMetric, c2: Counts, eligible, R: int, n: int, ctx=None, small=()):
    """(status, value) of other counts (another batching's or another summation order's decisions), decided as
    the metric's own decision is, refusals included: a rate 0/0 in an eligible group (undefined_reason), the
    replicates that lost a group's denominator (lost_replicates / lost_reason), the small groups that could
    undo a violated, the simultaneous interval and a constant label (review r3, session 36: a count vector with
    no positive decision in a group made its PPV 0/0 and was decided over the other group alone)."""
    mdef = METRICS[prop.metric]
    v2 = float(evaluate_counts(prop, c2.cells, eligible, c2.bins, c2.score_sums)[0])
    if np.isnan(v2):
        return "unknown", v2
    b2, per_rate = bootstrap(prop, c2, R, np.random.default_rng(prop.options.seed), eligible)
    lost, lost_in = lost_replicates([per_rate[r] for r in mdef.rates], [rate(c2.cells, r) for r in mdef.rates],
                                    eligible, c2.names)
    b2_all, b2 = b2, b2[~np.isnan(b2) & ~(lost if lost.size else False)]
    a = 1.0 - prop.options.confidence
    lo2, hi2 = (float(np.quantile(b2, a / 2)), float(np.quantile(b2, 1 - a / 2))) if b2.size else (v2, v2)
    x2 = _exact(prop, c2, eligible)
    value = float(x2) if x2 is not None else v2
    lo_b, hi_b = min(lo2, v2), max(hi2, v2)
    st, why = _decide(prop, c2, x2, v2, lo_b, hi_b, n, {})
    claim = f"{prop.metric} {prop.op} {_spec_number(prop.threshold)}"
    why = (why or undefined_reason(prop, c2.cells, eligible, c2.names, st)
           or (None if mdef.form == "between_inequality" else small_undo_reason(
               prop, claim, list(small), prop.options.min_group_size, st, mdef.form not in ("ratio", "min_rate")))
           or lost_reason(prop, st, b2, b2_all[lost] if lost.size else [], lost_in, a, v2))
    if why or st == "unknown":
        return "unknown", value
    lo, hi = _with_box(prop, c2, eligible, lo_b, hi_b, {})
    if (lo, hi) != (lo_b, hi_b) and _decide(prop, c2, x2, v2, lo, hi, n, {})[0] != st:
        return "unknown", value
    if st == "holds" and ctx is not None and constant_reason(prop, ctx, c2.cells, c2.sizes, eligible, c2.labelled):
        return "unknown", value
    return st, value


def _with_box(prop: ir.GroupMetric, c: Counts, eligible, lo: float, hi: float, details: dict) -> tuple[float, float]:
    """[lo, hi] (the bootstrap's, the value inside) widened to contain a valid simultaneous interval where one
    is simple (:mod:`.rate_bounds`, :mod:`.estimate_bounds`): the printed bound is then valid at the stated
    confidence. Elsewhere ``details["interval"]`` names the bootstrap's an approximation, and says why."""
    from fairspec.backends.data import estimate_bounds, rate_bounds

    conf = prop.options.confidence
    method, box = "clopper_pearson", None
    if rate_bounds.applies(prop, c):
        box = rate_bounds.box_interval(prop, c.cells, eligible, conf)
    elif METRICS[prop.metric].form == "calibration" and c.bins is not None:
        method, box = "mcdiarmid", estimate_bounds.ece_interval(prop, c, eligible, conf)
    if box is None:
        details["interval"] = {"bootstrap": [_r(lo), _r(hi)], "method": "bootstrap (approximate)",
                               "approximate": estimate_bounds.approximate_reason(prop, c.weighted)}
        return lo, hi
    details["interval"] = {"bootstrap": [_r(lo), _r(hi)], method: [_r(box[0]), _r(box[1])],
                           "method": f"bootstrap joined with {method} (valid, union bound)"}
    return min(lo, box[0]), max(hi, box[1])


def _exact(prop: ir.GroupMetric, c: Counts, eligible):
    """Rows counted (or whole-number weights, ``exact_cells``): the metric recomputed from the exact
    counts in rationals (``group_rates.exact_metric_value``); None for fractional weights or a
    form without an exact value."""
    from fairspec.analyses.group_rates import exact_metric_value

    cells = c.cells
    if not exact_cells(c):
        return None
    ints = cells.astype(np.int64)
    return exact_metric_value(prop.metric, ints[eligible].tolist(), prop.options.get("compare", BETWEEN),
                              ints.sum(axis=-3).tolist())


def _decide(prop: ir.GroupMetric, c: Counts, exact, value: float, lo: float, hi: float, n: int,
            details: dict) -> tuple[str, str | None]:
    """The status of ``[lo, hi]`` (``value`` inside) against the threshold as written, ``<`` vs ``<=``.

    Rows counted or whole-number weights: ``exact`` (``_exact``), the value in rationals, stands for
    every end point equal to the float value, so a value exactly on the threshold is decided as the
    spec writes the comparison. Fractional weights (rounded float sums): an end point within the
    sums' rounding bound of the threshold gives unknown."""
    from fairspec.certify import exact as cx

    if exact is not None:
        details["exact_value"] = str(exact)
        lo_x = exact if lo == value else cx.exact_value(lo)
        hi_x = exact if hi == value else cx.exact_value(hi)
        return cx.interval_decide(min(lo_x, exact), max(hi_x, exact), prop.op, prop.threshold), None
    status = interval_status(prop.op, prop.threshold, lo, hi)
    if status != "unknown" and c.weighted:
        # each cell a float sum of <= n + 1 non-negative terms: relative error <= gamma(n + 1) each;
        # a rate or a difference / ratio of two rates then moves by at most 8 (n + 2) u
        tol = 8.0 * (n + 2) * 2.0 ** -53
        t = float(prop.threshold)
        if min(abs(lo - t), abs(hi - t)) <= tol * max(1.0, abs(t)):
            return "unknown", (f"{prop.metric} = {value:.12g} lies within the rounding of the weighted sums "
                               f"({tol:.2g}) of the threshold {_spec_number(t)}; the comparison cannot be decided")
    return status, None


def run_empirical(prop, ctx, dist: ir.Distribution, *, resamples: int, timeout: float | None = None) -> Verdict:
    """The empirical distribution of a data set is the data: measure it there (``resamples``: the data
    backend's resamples for ``prop``)."""
    if prop.metric == "path_specific":
        return unknown(prop, "path-specific causal fairness needs a distribution with a causal structure: "
                             "distribution = bayes(DATA) or conditional(DATA), or a declared table",
                       backend="data")
    v = run_group_metric(dataclasses.replace(prop, data=dist.data, distribution=None), ctx, resamples=resamples,
                         timeout=timeout)
    return dataclasses.replace(v, details={**v.details, "distribution": {"name": dist.name, "kind": "empirical",
                                                                       "data": dist.data}})

