"""Group metrics as functions of per-group weighted counts.

Every metric on data is defined from sums of sample weight over cells, never
from per-row arrays, so any way of accumulating the cells (one table, record
batches, a bootstrap replicate) reuses the definitions unchanged:

* ``cells[..., G, 2, 2]``: the weight of the rows of group g with decision d
  (axis -2) and true label y (axis -1);
* for calibration, ``bins[..., G, B, 2]`` (weight per group, score bin and
  label) and ``score_sums[..., G, B]`` (the weighted sum of scores per bin).

Leading axes are bootstrap replicates.  A rate is a ratio of two sums of
(decision, label) cells; a metric compares one or more rates across groups
(``between_groups``: highest against lowest) or each group with the whole
population (``to_overall``).  Names follow fairlearn and AIF360 where one of
them has the metric (see ``METRICS``).

numpy is imported inside the functions: sema reads ``METRICS`` during lint.
"""

from __future__ import annotations

from dataclasses import dataclass

ALL = ((0, 0), (0, 1), (1, 0), (1, 1))

# rate -> (numerator cells, denominator cells) over (decision, label), and its words
RATES: dict[str, tuple[tuple, tuple, str]] = {
    "selection_rate": (((1, 0), (1, 1)), ALL, "Pr[decision = 1]"),
    "base_rate": (((0, 1), (1, 1)), ALL, "Pr[label = 1]"),
    "tpr": (((1, 1),), ((0, 1), (1, 1)), "Pr[decision = 1 | label = 1]"),
    "fpr": (((1, 0),), ((0, 0), (1, 0)), "Pr[decision = 1 | label = 0]"),
    "fnr": (((0, 1),), ((0, 1), (1, 1)), "Pr[decision = 0 | label = 1]"),
    "tnr": (((0, 0),), ((0, 0), (1, 0)), "Pr[decision = 0 | label = 0]"),
    "ppv": (((1, 1),), ((1, 0), (1, 1)), "Pr[label = 1 | decision = 1]"),
    "fdr": (((1, 0),), ((1, 0), (1, 1)), "Pr[label = 0 | decision = 1]"),
    "npv": (((0, 0),), ((0, 0), (0, 1)), "Pr[label = 0 | decision = 0]"),
    "for": (((0, 1),), ((0, 0), (0, 1)), "Pr[label = 1 | decision = 0]"),
    "error_rate": (((0, 1), (1, 0)), ALL, "Pr[decision != label]"),
    "accuracy": (((0, 0), (1, 1)), ALL, "Pr[decision = label]"),
}
RATE_TITLES = {"selection_rate": "selection rate", "base_rate": "base rate", "tpr": "TPR", "fpr": "FPR",
               "fnr": "FNR", "tnr": "TNR", "ppv": "PPV", "fdr": "FDR", "npv": "NPV", "for": "FOR",
               "error_rate": "error rate", "accuracy": "accuracy", "ece": "ECE", "benefit": "mean benefit",
               "impact_ratio": "impact ratio"}

BETWEEN, OVERALL = "between_groups", "to_overall"
COMPARE_MODES = (BETWEEN, OVERALL)


@dataclass(frozen=True)
class MetricDef:
    name: str
    rates: tuple[str, ...]  # the per-group rates compared
    form: str  # difference | ratio | average | max_rate | min_rate | inequality | between_inequality | calibration
    text: str  # one line for the README and the hints
    fairlearn: str = ""
    aif360: str = ""
    needs_label: bool = True
    needs_score: bool = False
    distribution: bool = False  # the distribution backends evaluate it too
    groups_optional: bool = False  # an individual-level index: groups only split the table
    # issue 25: a metric of a multiclass model's predicted class or a regression's value
    # (fairspec.analyses.output_metrics); "" for the binary metrics (which read class = c / threshold = t)
    output: str = ""  # "" | "multiclass" | "regression"
    quantity: str = ""  # output metrics: what is compared per group (output_metrics.QUANTITIES)


def _pair(rate: str, stem: str, words: str, fl="", aif="") -> list[MetricDef]:
    """The _difference and _ratio forms of one rate; library names as a stem or a (difference, ratio) pair."""
    def names(x):
        return x if isinstance(x, tuple) else ((f"{x}_difference", f"{x}_ratio") if x else ("", ""))

    (fd, fr), (ad, ar) = names(fl), names(aif)
    return [MetricDef(f"{stem}_difference", (rate,), "difference", f"largest difference of {words} between groups",
                      fairlearn=fd, aif360=ad),
            MetricDef(f"{stem}_ratio", (rate,), "ratio", f"lowest over highest {words}", fairlearn=fr, aif360=ar)]


_DEFS: list[MetricDef] = [
    MetricDef("disparate_impact", ("selection_rate",), "ratio", "ratio of the lowest to the highest positive rate "
              "over groups", "demographic_parity_ratio", "disparate_impact", needs_label=False, distribution=True),
    MetricDef("statistical_parity", ("selection_rate",), "difference", "largest difference of positive rates between "
              "groups", "demographic_parity_difference", "statistical_parity_difference", needs_label=False,
              distribution=True),
    MetricDef("impact_ratio", ("selection_rate",), "ratio", "NYC Local Law 144's impact ratio: each category's "
              "selection (or scoring) rate over the most selected category's; the value is the lowest",
              "demographic_parity_ratio", "disparate_impact", needs_label=False),
    MetricDef("equalized_odds", ("tpr", "fpr"), "difference", "largest gap in true-positive or false-positive rate "
              "between groups", "equalized_odds_difference", distribution=True),
    MetricDef("equalized_odds_ratio", ("tpr", "fpr"), "ratio", "the smaller of the TPR ratio and the FPR ratio "
              "(lowest over highest)", "equalized_odds_ratio"),
    MetricDef("equal_opportunity", ("tpr",), "difference", "largest gap in true-positive rate between groups",
              "equal_opportunity_difference", "equal_opportunity_difference (signed)", distribution=True),
    MetricDef("equal_opportunity_ratio", ("tpr",), "ratio", "lowest over highest true-positive rate",
              "equal_opportunity_ratio"),
    MetricDef("average_odds_difference", ("tpr", "fpr"), "average", "mean of the TPR gap and the FPR gap",
              "equalized_odds_difference(agg='mean')", "average_abs_odds_difference"),
    *_pair("ppv", "predictive_parity", "positive predictive value (precision)",
           ("MetricFrame(precision_score).difference()", "MetricFrame(precision_score).ratio()"),
           ("positive_predictive_value per group",) * 2),
    *_pair("fdr", "false_discovery_rate", "false discovery rate", "", "false_discovery_rate"),
    *_pair("for", "false_omission_rate", "false omission rate", "", "false_omission_rate"),
    *_pair("fnr", "false_negative_rate", "false negative rate", "false_negative_rate", "false_negative_rate"),
    *_pair("fpr", "false_positive_rate", "false positive rate", "false_positive_rate", "false_positive_rate"),
    *_pair("error_rate", "error_rate", "error rate (1 - accuracy)", "zero_one_loss", "error_rate"),
    *_pair("accuracy", "accuracy", "accuracy", "accuracy_score", ("accuracy per group",) * 2),
    MetricDef("base_rate_difference", ("base_rate",), "difference", "largest difference of the label's base rate "
              "between groups (bias in the data, no model needed)", "", "statistical_parity_difference on the "
              "data set"),
    MetricDef("base_rate_ratio", ("base_rate",), "ratio", "lowest over highest base rate of the label (label "
              "disparate impact)", "", "disparate_impact on the data set"),
    MetricDef("most_favoured", ("selection_rate",), "max_rate", "selection rate P(decision = 1 | group) of the "
              "most favoured group (Justicia's 'PPV')",
              needs_label=False, distribution=True),
    MetricDef("least_favoured", ("selection_rate",), "min_rate", "selection rate P(decision = 1 | group) of the "
              "least favoured group (Justicia's 'PPV')",
              needs_label=False, distribution=True),
    MetricDef("generalized_entropy_index", (), "inequality", "GE(alpha) of the benefit b = decision - label + 1 over "
              "individuals: sum((b/mu)^alpha - 1) / (n alpha (alpha - 1))", "", "generalized_entropy_index",
              groups_optional=True),
    MetricDef("theil_index", (), "inequality", "GE(1): mean of (b/mu) ln(b/mu) over individuals", "",
              "theil_index", groups_optional=True),
    MetricDef("between_group_generalized_entropy_index", (), "between_inequality", "GE(alpha) with each benefit "
              "replaced by its group's mean", "", "between_group_generalized_entropy_index"),
    MetricDef("between_group_theil_index", (), "between_inequality", "GE(1) with each benefit replaced by its "
              "group's mean", "", "between_group_theil_index"),
    # ---- issue 25: multiclass and regression models (fairspec.analyses.output_metrics)
    MetricDef("class_distribution_distance", (), "class_distance", "total variation distance between the groups' "
              "distributions of the predicted class (largest over pairs of groups): demographic parity of the "
              "predicted class", "MetricFrame(selection_rate of each class): half the summed absolute differences",
              needs_label=False, output="multiclass", quantity="class_share"),
    MetricDef("multiclass_equalized_odds", (), "class_odds", "largest over the classes c of the one-vs-rest "
              "equalized-odds difference (the larger of the TPR gap and the FPR gap of 'class = c' against 'target "
              "= c' between groups)", "max over c of equalized_odds_difference(y_true == c, y_pred == c)",
              output="multiclass", quantity="class_odds"),
    MetricDef("mean_prediction_difference", (), "output_difference", "largest difference of the mean prediction "
              "between groups", "MetricFrame(mean_prediction).difference()", needs_label=False, output="regression",
              quantity="mean_prediction"),
    MetricDef("mean_prediction_ratio", (), "output_ratio", "lowest over highest mean prediction (predictions >= 0)",
              "MetricFrame(mean_prediction).ratio()", needs_label=False, output="regression",
              quantity="mean_prediction"),
    MetricDef("mean_error_difference", (), "output_difference", "largest difference of the mean error (prediction "
              "- target) between groups", "MetricFrame(mean of y_pred - y_true).difference()", output="regression",
              quantity="mean_error"),
    MetricDef("mean_absolute_error_difference", (), "output_difference", "largest difference of the mean absolute "
              "error between groups", "MetricFrame(mean_absolute_error).difference()", output="regression",
              quantity="mae"),
    MetricDef("root_mean_squared_error_difference", (), "output_difference", "largest difference of the root mean "
              "squared error between groups", "MetricFrame(root_mean_squared_error).difference()",
              output="regression", quantity="rmse"),
    MetricDef("bounded_group_loss", (), "output_max", "the largest mean loss of a group (loss = square, the default, "
              "or absolute): fairlearn's bounded group loss", "BoundedGroupLoss / MetricFrame(loss).group_max()",
              output="regression", quantity="loss"),
    MetricDef("ks_distance", (), "ks_distance", "Kolmogorov-Smirnov distance between the groups' distributions of "
              "the prediction (largest over pairs of groups)", "scipy.stats.ks_2samp statistic", needs_label=False,
              output="regression", quantity="prediction"),
    MetricDef("calibration_gap", (), "calibration", "gap in expected calibration error (ECE, equal-width score "
              "bins) between groups; each group's reliability table is reported", needs_score=True),
]
METRICS: dict[str, MetricDef] = {m.name: m for m in _DEFS}


def uses_label(metric: str) -> bool:
    m = METRICS[metric]
    return m.needs_label or m.form in ("inequality", "between_inequality")


# the forms that compare no rate between groups or to the whole population: the most / least favoured
# group's rate, the inequality indices (over individuals, or over the groups' mean benefits), the largest
# group loss (metric_value, output_metrics.compare_values): the option ``compare`` reads nothing there
NO_COMPARE_FORMS = frozenset({"max_rate", "min_rate", "inequality", "between_inequality", "output_max"})


def reads_compare(metric: str) -> bool:
    """Whether the option ``compare`` (between_groups | to_overall) changes ``metric``'s value."""
    return METRICS[metric].form not in NO_COMPARE_FORMS


def alpha_of(metric: str, alpha: float) -> float:
    return 1.0 if "theil" in metric else alpha


# ------------------------------------------------------------------ rates

def rate(cells, name: str):
    """Per-group rate [..., G] from cells [..., G, 2, 2]; nan where the denominator is 0."""
    import numpy as np

    num_c, den_c, _ = RATES[name]
    num = sum(cells[..., d, y] for d, y in num_c)
    den = sum(cells[..., d, y] for d, y in den_c)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def compare(rates, overall, form: str, mode: str):
    """Compare per-group rates [..., G] (overall [...]): a difference (>= 0) or a ratio in [0, 1]."""
    import numpy as np

    with np.errstate(divide="ignore", invalid="ignore"), _quiet_nan():
        if mode == BETWEEN:
            hi, lo = np.nanmax(rates, axis=-1), np.nanmin(rates, axis=-1)
            if form == "ratio":
                return np.where(hi > 0, lo / np.where(hi > 0, hi, 1.0), np.nan)
            return hi - lo
        o = np.asarray(overall)[..., None]
        if form == "ratio":
            r = np.minimum(rates / o, o / rates)
            r = np.where(o == 0, np.nan, r)       # the overall rate 0: every group's is 0 or 0/0, the ratio 0/0
            return np.where(np.isnan(rates).all(axis=-1), np.nan, np.nanmin(r, axis=-1))
        return np.nanmax(np.abs(rates - o), axis=-1)


class _quiet_nan:
    """numpy warns 'All-NaN slice' where a group has no row of a kind; the value is then nan (undefined)."""

    def __enter__(self):
        import warnings

        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):
        return self._w.__exit__(*exc)


def benefit_mean(cells):
    """Mean benefit b = decision - label + 1 per group [..., G] and overall [...] (AIF360's benefit)."""
    import numpy as np

    b = np.array([[1.0, 0.0], [2.0, 1.0]])  # b[d, y]
    tot = (cells * b).sum(axis=(-1, -2))
    n = cells.sum(axis=(-1, -2))
    with np.errstate(divide="ignore", invalid="ignore"):
        return tot / n, tot.sum(axis=-1) / n.sum(axis=-1)


def generalized_entropy(weights, values, alpha: float):
    """GE(alpha) of a population where weight w_k holds value v_k: weights, values [..., K]."""
    import numpy as np

    n = weights.sum(axis=-1)
    mu = (weights * values).sum(axis=-1) / n
    with np.errstate(divide="ignore", invalid="ignore"):
        x = values / mu[..., None]
        if alpha == 1.0:
            terms = np.where(x > 0, x * np.log(np.where(x > 0, x, 1.0)), 0.0)
            return (weights * terms).sum(axis=-1) / n
        if alpha == 0.0:
            return -(weights * np.log(x)).sum(axis=-1) / n
        return (weights * (x ** alpha - 1.0)).sum(axis=-1) / (n * alpha * (alpha - 1.0))


def ece(bins, score_sums):
    """Expected calibration error per group [..., G] and overall [...]:
    sum over bins of |weighted score sum - weighted positives| / group weight."""
    import numpy as np

    pos = bins[..., 1]
    n_g = bins.sum(axis=(-1, -2))
    gap = np.abs(score_sums - pos).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(n_g > 0, gap / np.where(n_g > 0, n_g, 1.0), np.nan)
        tot = np.abs(score_sums.sum(axis=-2) - pos.sum(axis=-2)).sum(axis=-1) / n_g.sum(axis=-1)
    return per, tot


def metric_value(metric: str, cells, mode: str = BETWEEN, *, alpha: float = 2.0, bins=None, score_sums=None,
                 overall_cells=None, overall_bins=None, overall_sums=None):
    """The metric [...] and the per-group quantity it compares [..., G] (for the table and the worst pair).

    ``overall_cells`` [..., 2, 2]: the whole population (all groups, also those too small to count);
    by default the sum of ``cells`` over groups. ``overall_bins`` / ``overall_sums``: the same for
    calibration, the bins and score sums of every group [..., G_all, B, ...] (by default ``bins``')."""
    import numpy as np

    m = METRICS[metric]
    if overall_cells is None:
        overall_cells = cells.sum(axis=-3)
    if m.form == "calibration":
        per, tot = ece(bins, score_sums)
        if overall_bins is not None:           # to_overall: the ECE of every row, small groups' too
            tot = ece(overall_bins, overall_sums)[1]
        return compare(per, tot, "difference", mode), per
    if m.form in ("inequality", "between_inequality"):
        a = alpha_of(metric, alpha)
        mean_g, _ = benefit_mean(cells)
        if m.form == "inequality":
            w = overall_cells.reshape(overall_cells.shape[:-2] + (4,))
            vals = np.broadcast_to(np.array([1.0, 0.0, 2.0, 1.0]), w.shape)  # b for (0,0), (0,1), (1,0), (1,1)
            return generalized_entropy(w, vals, a), mean_g
        n_g = cells.sum(axis=(-1, -2))
        return generalized_entropy(n_g, np.nan_to_num(mean_g), a), mean_g
    per = [rate(cells, r) for r in m.rates]
    if m.form in ("max_rate", "min_rate"):
        with _quiet_nan():
            f = np.nanmax if m.form == "max_rate" else np.nanmin
            return f(per[0], axis=-1), per[0]
    form = "ratio" if m.form == "ratio" else "difference"
    vals = [compare(p, rate(overall_cells[..., None, :, :], r)[..., 0], form, mode) for p, r in zip(per, m.rates)]
    if len(vals) == 1:
        return vals[0], per[0]
    stacked = np.stack(vals, axis=0)
    if m.form == "average":
        value = stacked.mean(axis=0)
    else:
        with _quiet_nan():
            value = (np.nanmin if form == "ratio" else np.nanmax)(stacked, axis=0)
    # the rate that decides the value (for the table's worst pair): the one with the widest gap
    pick = np.argmin(stacked, axis=0) if form == "ratio" else np.argmax(np.nan_to_num(stacked, nan=-1), axis=0)
    chosen = np.where(np.asarray(pick)[..., None] == 0, per[0], per[1])
    return value, chosen


# ------------------------------------------------------------------ exact values (issue 20, class 6)

def exact_metric_value(metric: str, cells, mode: str = BETWEEN, overall_cells=None):
    """The metric of one table of counts in exact rationals: ``cells`` [G, 2, 2] of ints /
    Fractions (the eligible groups), ``overall_cells`` [2, 2] (default: their sum). The same
    definitions as :func:`metric_value` (rates, difference / ratio / average / max_rate /
    min_rate, between groups or to the overall rate); None when the value is undefined (nan
    there) or the form has no exact evaluation here (inequality indices, calibration)."""
    from fractions import Fraction

    m = METRICS[metric]
    if m.form not in ("difference", "ratio", "average", "max_rate", "min_rate"):
        return None
    G = len(cells)
    cell = [[[Fraction(cells[g][d][y]) for y in (0, 1)] for d in (0, 1)] for g in range(G)]
    if overall_cells is None:
        over = [[sum((cell[g][d][y] for g in range(G)), Fraction(0)) for y in (0, 1)] for d in (0, 1)]
    else:
        over = [[Fraction(overall_cells[d][y]) for y in (0, 1)] for d in (0, 1)]

    def rate_of(c, name):
        num_c, den_c, _ = RATES[name]
        num = sum((c[d][y] for d, y in num_c), Fraction(0))
        den = sum((c[d][y] for d, y in den_c), Fraction(0))
        return num / den if den > 0 else None

    per = [[rate_of(cell[g], r) for g in range(G)] for r in m.rates]
    if m.form in ("max_rate", "min_rate"):
        vals = [p for p in per[0] if p is not None]
        if not vals:
            return None
        return max(vals) if m.form == "max_rate" else min(vals)
    form = "ratio" if m.form == "ratio" else "difference"
    out = []
    for p, r in zip(per, m.rates):
        vals = [x for x in p if x is not None]
        if not vals:
            out.append(None)
            continue
        if mode == BETWEEN:
            hi, lo = max(vals), min(vals)
            out.append((lo / hi if hi > 0 else None) if form == "ratio" else hi - lo)
            continue
        o = rate_of(over, r)
        if o is None:
            out.append(None)
            continue
        if form == "ratio":
            # as the float path: the overall rate 0 -> 0/0 (undefined, as between groups), a group's 0 -> 0
            if o == 0:
                out.append(None)
                continue
            out.append(min(Fraction(0) if x == 0 else min(x / o, o / x) for x in vals))
        else:
            out.append(max(abs(x - o) for x in vals))
    if len(out) == 1:
        return out[0]
    if m.form == "average":
        return None if any(x is None for x in out) else sum(out, Fraction(0)) / len(out)
    vals = [x for x in out if x is not None]
    if not vals:
        return None
    return min(vals) if form == "ratio" else max(vals)
