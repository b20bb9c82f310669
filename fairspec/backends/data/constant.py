"""A label or a logged decision that is the same on every row a group metric uses.

``y == "maybe"`` over a column that never holds "maybe" is false on every row: every rate of the
label is then 0 or 0/0, and a difference of rates comes out 0 -- a ``holds`` that says nothing about
the groups. Over the rows the metric uses (its eligible groups together, not group by group: one
group with no positive is legitimate), a label that is false (or true) on every one of them, or a
logged decision (``predictions(DATA, ...)``) that is, makes the verdict ``unknown`` with this
reason instead of ``holds``: an auditor reads a rate of 0/0, or 0 everywhere, as not measured.
A ``violated`` stays (it is a fact about the rows as read), with the same note in its details.
A ``class = c`` / ``threshold = t`` metric on data with a target reads its truth from the target, not the
label: the sentence then names the target and the class (one the target never holds) or threshold."""

from __future__ import annotations

import numpy as np

from fairspec import ir
from fairspec.analyses.group_rates import METRICS, uses_label
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly
from fairspec.syntax.literals import shown as _shown


def constant_reason(prop: ir.GroupMetric, ctx, cells: np.ndarray, sizes: np.ndarray, eligible,
                    labelled: bool) -> str | None:
    """The sentence naming the label or logged decision that is constant over the eligible rows, or None.

    ``cells`` is [G, 2, 2] (group, decision, label) weighted counts, ``sizes`` the rows per group."""
    used = cells[np.asarray(eligible, dtype=bool)]
    rows = int(np.asarray(sizes)[np.asarray(eligible, dtype=bool)].sum())
    if rows == 0:
        return None
    mdef = METRICS[prop.metric]
    if labelled and uses_label(prop.metric):
        pos, neg = float(used[:, :, 1].sum()), float(used[:, :, 0].sum())
        if pos == 0 or neg == 0:
            which = "false" if pos == 0 else "true"
            target = _target_truth(prop, ctx)
            if target:
                return (f"{target} on {'none' if pos == 0 else 'every one'} of the {rows} rows {prop.metric} uses, "
                        f"so each of its rates is trivially 0, 1 or 0/0 and the verdict says nothing about the groups: check "
                        f"the target's values against the model's classes (or the threshold)")
            return (f"the label of data '{prop.data}' is {which} on every one of the {rows} rows {prop.metric} "
                    f"uses, so each of its rates is trivially 0, 1 or 0/0 and the verdict says nothing about the "
                    f"groups; a label comparing a column with a value it never holds (y == \"maybe\") is false "
                    f"on every row: check the label against the column's values")
    if not prop.model or prop.param("rate") == "scoring" or mdef.rates == ("base_rate",):
        return None
    m = ctx.spec.model(prop.model)
    if m is None or m.format != "predictions":
        return None
    pos, neg = float(used[:, 1, :].sum()), float(used[:, 0, :].sum())
    if pos == 0 or neg == 0:
        which = "negative" if pos == 0 else "positive"
        col = (f"column '{m.decision_column}'" if m.decision_column is not None
               else f"score column '{m.score_column}' > {_spec_number(m.threshold)}")
        return (f"the logged decision of model '{prop.model}' ({col}) is {which} on every one of the {rows} rows "
                f"{prop.metric} uses, so each of its rates is trivially 0, 1 or 0/0 and the verdict says nothing "
                f"about the groups; check the decision column and its positive value")
    return None


def _target_truth(prop: ir.GroupMetric, ctx) -> str | None:
    """The truth of a ``class = c`` / ``threshold = t`` metric when the data has a target (not the data's
    label), as the subject of the sentence above; None otherwise."""
    c, t = prop.param("class"), prop.param("threshold")
    data = ctx.spec.data(prop.data)
    if (c is None and t is None) or data is None or data.target is None:
        return None
    where = f"the target column '{data.target}' of data '{data.name}'"
    if c is None:
        return f"{where} (the truth) is >= {_spec_number(t)}"
    name = f"class {c}"
    try:
        classes = ctx.model(prop.model).readout.classes
        if classes is not None and isinstance(c, int) and 0 <= c < len(classes):
            name = f'class "{classes[c]}" (column {c})'
    except Exception:  # noqa: BLE001 - the sentence only; the model's own errors are reported where it is read
        pass
    return f"{where} (the truth) holds {name}"


def undefined_reason(prop: ir.GroupMetric, cells: np.ndarray, eligible, names, status: str) -> str | None:
    """The reason a ``holds`` or ``violated`` is not said when an eligible group's rate is 0/0, or None.

    A rate with no row (or no weight) in its denominator -- a group with no positive label for a TPR, a
    group of weight 0 -- is left out of the comparison (numpy's nanmax / nanmin), so the value is over
    the other groups alone. That reading is not the claim's: fairlearn (zero_division = 0) counts such a
    rate as 0, so a `holds` over the other groups alone is never said. A verdict every value of the
    left-out rates keeps (a difference or the highest rate only grows with another group, a ratio or
    the lowest rate only falls) stands: `<=` / `<` violated, `>=` / `>` holds of a difference."""
    from fairspec.analyses.group_rates import RATES, rate

    mdef = METRICS[prop.metric]
    if status not in ("holds", "violated") or mdef.form not in ("difference", "ratio", "average",
                                                                  "max_rate", "min_rate"):
        return None
    el = np.flatnonzero(np.asarray(eligible, dtype=bool))
    gone = [f"{names[g]} ({r}: {RATES[r][2]} has no row in its denominator)"
            for r in mdef.rates for g, v in zip(el, rate(cells[el], r)) if np.isnan(v)]
    if mdef.form == "ratio" and len(mdef.rates) > 1:     # one rate's ratio 0/0 (0 in every group), the other's kept
        gone += [f"every group ({r} is 0 in each, so its ratio is 0/0)" for r in mdef.rates
                 if not np.isnan(rate(cells[el], r)).all() and np.nanmax(rate(cells[el], r)) == 0]
    if not gone:
        return None
    grows = mdef.form in ("difference", "average", "max_rate")
    if (status == "violated") == (grows == (prop.op in ("<", "<="))):
        return None
    return (f"a rate {prop.metric} compares is 0/0 in {', '.join(gone)}: the value leaves it out, and what is "
            f"left out could decide the claim either way (fairlearn's zero_division = 0 counts such a rate as 0)")


def undefined_output_reason(prop: ir.GroupMetric, per, eligible, names, status: str) -> str | None:
    """:func:`undefined_reason` for the multiclass and regression metrics: an eligible group whose
    compared quantity is 0/0 where another group's is defined (a class its target never holds for
    ``multiclass_equalized_odds``, a group whose rows all weigh 0) is left out of the comparison."""
    mdef = METRICS[prop.metric]
    if status not in ("holds", "violated") or mdef.form == "ks_distance":
        return None
    el = np.flatnonzero(np.asarray(eligible, dtype=bool))
    pe = np.asarray(per, dtype=np.float64)[el].reshape(len(el), -1)
    nan = np.isnan(pe)
    partial = nan & ~nan.all(axis=0)[None, :]          # undefined here, defined in another group
    gone = [str(names[g]) for g, row in zip(el, partial) if row.any()]
    if not gone:
        return None
    grows = mdef.form != "output_ratio"
    if (status == "violated") == (grows == (prop.op in ("<", "<="))):
        return None
    return (f"a quantity {prop.metric} compares is 0/0 in {', '.join(gone)} (no row, or no weight, in its "
            f"denominator): the value is over the other groups alone, and the left-out quantity could decide "
            f"the claim either way")


def lost_replicates(per_reps, per, eligible, names) -> tuple[np.ndarray, list[str]]:
    """The bootstrap replicates [R] in which an eligible group's compared quantity is 0/0 where it is defined
    on the rows (the resample drew no row, or no weight, into its denominator: a group's only positive
    labels), and the groups it happened to. ``per_reps``: [R, G, ...] arrays (one per compared rate),
    ``per``: the matching [G, ...] arrays on the rows."""
    el = np.asarray(eligible, dtype=bool)
    lost_g = None
    for reps, orig in zip(per_reps, per):
        reps, orig = np.asarray(reps, dtype=np.float64)[:, el], np.asarray(orig, dtype=np.float64)[el]
        hit = (np.isnan(reps) & ~np.isnan(orig)[None]).reshape(reps.shape[0], reps.shape[1], -1).any(axis=-1)
        lost_g = hit if lost_g is None else lost_g | hit
    if lost_g is None:
        return np.zeros(0, dtype=bool), []
    return lost_g.any(axis=1), [str(names[g]) for g, x in zip(np.flatnonzero(el), lost_g.any(axis=0)) if x]


GROWS = ("difference", "average", "max_rate", "output_difference", "output_max", "class_distance", "class_odds",
         "ks_distance")           # another group only raises the value (a ratio, a lowest rate: only lowers it)
UNIT = ("difference", "average", "max_rate", "min_rate", "class_distance", "class_odds", "ks_distance", "ratio",
        "output_ratio")           # in [0, 1] (sema.metric_properties._RANGES; a ratio is lowest over highest)


def lost_reason(prop: ir.GroupMetric, status: str, boot, rest, groups, alpha: float, value: float) -> str | None:
    """The reason a ``holds`` / ``violated`` is not said because of the replicates :func:`lost_replicates`
    found, or None. Such a replicate's value is undefined: it is neither dropped (the interval would be
    conditional on a denominator the resample need not draw) nor taken as its value over the other groups
    alone (two groups: a gap of 0, a pull towards holds). It is counted against the verdict, on the side of
    the interval that decides it: at its value over the other groups where the left-out group can only
    move it away from that side (a gap's lower end: another group only widens it), else at the end of the
    metric's range (1 for a difference of rates), or infinity where it has none --
    the rule a left-out group follows on the rows (:func:`undefined_reason`). ``boot``: the complete
    replicates' values; ``rest``: the lost ones' over the other groups."""
    from fairspec.verdict import _CLAIM_OPS

    rest = np.asarray(rest, dtype=np.float64)
    k = int(rest.size)
    if k == 0 or status not in ("holds", "violated"):
        return None
    d = np.asarray(boot, dtype=np.float64)
    N = d.size + k
    upper = (status == "holds") == (prop.op in ("<", "<="))      # the end that decides the verdict
    q = (1 - alpha / 2) if upper else alpha / 2
    form = METRICS[prop.metric].form
    if (form in GROWS) != upper and not np.isnan(rest).any():
        worst = rest                                            # the left-out group moves it away from this end
    else:                                                       # else the end of the metric's range, if it has one
        lo_hi = (0.0, 1.0) if form in UNIT else (0.0, None) if form in ("output_difference", "output_max",
                                                                          "calibration") else (None, None)
        end = lo_hi[1] if upper else lo_hi[0]
        worst = None if end is None else np.full(k, end)
    if worst is None:
        d = np.sort(d)
        m, pos = d.size, q * (N - 1)
        at = pos if upper else pos - k                           # its place among the complete replicates
        end = None if (m == 0 or at < 0 or at > m - 1) else (float(np.quantile(d, at / (m - 1))) if m > 1
                                                              else float(d[0]))
    else:
        end = float(np.quantile(np.concatenate([d, worst]), q))
    if end is not None:
        end = max(end, value) if upper else min(end, value)
        if _CLAIM_OPS[prop.op](end, float(prop.threshold)) == (status == "holds"):
            return None
    # on its side of the threshold it is past (0.10004 against <= 0.1 read 'move it to 0.1000'), rounded outward
    where = "leave it open" if end is None else \
        f"move it to {_shown(end, (prop.threshold,), end='high' if upper else 'low', style='f')}"
    return (f"{k} of {N} bootstrap replicates drew no row into the denominator of a quantity {prop.metric} "
            f"compares in {', '.join(groups)} (defined on the rows): such a replicate's value is undefined, and "
            f"counted against the verdict they {where} at the interval's {'upper' if upper else 'lower'} end, "
            f"past the threshold {_spec_number(prop.threshold)}")
