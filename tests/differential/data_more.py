"""Session 33: group metrics on data rows that no other generator writes (the ``data`` family's instances from
instance seed ``data_metrics.MORE_METRICS_FROM`` on):

* :func:`more_metric_props` -- the binary metrics of the logged decisions / rule not written before (ratios and
  differences of the error, accuracy, FDR, FOR, FNR, FPR and PPV rates, ``base_rate_ratio``, ``impact_ratio``,
  ``most_favoured`` / ``least_favoured``, ``equalized_odds_ratio``, ``average_odds_difference``), over a derived
  group (``group older = age >= A``), sometimes ``compare = to_overall``; and, on unweighted rows, the inequality
  indices over individuals (``theil_index``, ``generalized_entropy_index`` with ``alpha``) and over the groups'
  mean benefits (``between_group_*``);
* :func:`more_output_props` -- the regression tree's ``mean_absolute_error_difference``,
  ``root_mean_squared_error_difference``, ``bounded_group_loss`` (``loss = square | absolute``),
  ``mean_prediction_ratio`` and ``ks_distance``; the multiclass tree's ``multiclass_equalized_odds``.

Every truth is exact (Fractions of the rows as read; a square root or a logarithm decided against the threshold
exactly where it can be: sqrt(q) op t as q op t^2, the Theil index to 60 digits).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .core import Prop, Truth, claim_holds, decimal_text
from .data_metrics import CLASSES, FAMILY, _rates


# ------------------------------------------------------------------ session 33: the other binary metrics, derived groups

#: metric -> (rate, form): form diff (highest - lowest), ratio (lowest / highest), max, min
MORE = {"error_rate_difference": ("err", "diff"), "accuracy_ratio": ("acc", "ratio"),
        "predictive_parity_ratio": ("ppv", "ratio"), "false_negative_rate_ratio": ("fnr", "ratio"),
        "false_positive_rate_ratio": ("fpr", "ratio"), "false_discovery_rate_difference": ("fdr", "diff"),
        "false_discovery_rate_ratio": ("fdr", "ratio"), "false_omission_rate_difference": ("for", "diff"),
        "false_omission_rate_ratio": ("for", "ratio"), "base_rate_ratio": ("base", "ratio"),
        "impact_ratio": ("sel", "ratio"), "most_favoured": ("sel", "max"), "least_favoured": ("sel", "min"),
        "equalized_odds_ratio": (("tpr", "fpr"), "ratio"), "average_odds_difference": (("tpr", "fpr"), "mean")}


def _more_rates(df, dec, w, groups):
    """``_rates`` and the false discovery / omission rates (FP / predicted positive, FN / predicted negative)."""
    out = _rates(df, dec, w, groups)
    for key, g in df.groupby(groups, sort=True):
        d, y, ww = dec[g.index], g["__y"].to_numpy(), w[g.index]
        npos = sum((a for a, b in zip(ww, d) if b), Fraction(0))
        nneg = sum((a for a, b in zip(ww, d) if not b), Fraction(0))
        fp = sum((a for a, b, c in zip(ww, d, y) if b and not c), Fraction(0))
        fn = sum((a for a, b, c in zip(ww, d, y) if not b and c), Fraction(0))
        r = out[key if isinstance(key, tuple) else (key,)]
        r["fdr"], r["for"] = (fp / npos if npos else None), (fn / nneg if nneg else None)
    return out


def _more_value(metric, rates, over=None):
    """The metric over the groups' rates (``over``: all rows' rates, ``compare = to_overall``); None where a rate
    is undefined or a ratio's highest rate is 0."""
    rate, form = MORE[metric]
    if isinstance(rate, tuple):
        parts = [_more_value(f"{form}:{r}", rates, over) for r in rate]
        if None in parts:
            return None
        return min(parts) if form == "ratio" else (parts[0] + parts[1]) / 2
    v = [r[rate] for r in rates.values()]
    if any(x is None for x in v):
        return None
    if form == "max":
        return max(v)
    if form == "min":
        return min(v)
    if over is not None:
        o = over[rate]
        if o is None:
            return None
        if form == "diff" or form == "mean":
            return max(abs(x - o) for x in v)
        return min(Fraction(1) if x == 0 and o == 0 else Fraction(0) if x == 0 or o == 0 else min(x / o, o / x)
                   for x in v)
    if form in ("diff", "mean"):
        return max(v) - min(v)
    return None if max(v) == 0 else min(v) / max(v)


for _r in ("tpr", "fpr"):
    MORE[f"ratio:{_r}"], MORE[f"mean:{_r}"] = (_r, "ratio"), (_r, "diff")


def more_metric_props(seed, df, decided, w, weighted, props, spec, count=4):
    """``count`` properties of the metrics in :data:`MORE` (the data set ``d`` for the base-rate ratio, else the
    model), over sex, sex x race or sex x older (``group older = age >= A``), sometimes ``compare = to_overall``;
    the truth as ``generate``'s: exact Fractions of the rows as read."""
    rng = np.random.default_rng([25, seed, 91])
    a = int(rng.integers(25, 70))
    df = df.assign(older=np.where(df["age"].astype(int) >= a, "yes", "no"))
    spec += f"group older = age >= {a}\n"
    unit = np.array([Fraction(1)] * len(df), dtype=object)
    names = sorted(k for k in MORE if ":" not in k)
    k0 = len(props)
    for k in range(k0, k0 + count):
        groups = [["sex"], ["sex", "race"], ["sex", "older"], ["older"]][int(rng.integers(0, 4))]
        metric = str(rng.choice(names))
        rate, form = MORE[metric]
        compare = "to_overall" if form in ("diff", "ratio", "mean") and rng.random() < 0.4 else None
        ww = unit if metric == "base_rate_ratio" else w
        rates = _more_rates(df, decided, ww, groups)
        over = _more_rates(df.assign(__all="all"), decided, ww, ["__all"])[("all",)] if compare else None
        value = _more_value(metric, rates, over)
        if value is None:
            metric, compare = "most_favoured", None
            value = _more_value(metric, rates)
        lower = form in ("diff", "mean") or (form in ("max", "min") and rng.random() < 0.5)
        op = ("<=" if rng.random() < 0.5 else "<") if lower else (">=" if rng.random() < 0.5 else ">")
        t = decimal_text(value)
        thr = t if t is not None and rng.random() < 0.4 else \
            f"{float(value) + float(rng.choice([-0.2, -0.05, 0.05, 0.2])):.6g}"
        if thr.startswith("-") or "e" in thr:
            thr = "0"
        if Fraction(thr) > 1:
            thr = "1"
        if op == ">" and Fraction(thr) >= 1:
            op = ">="
        if op == "<" and Fraction(thr) <= 0:
            op = "<="
        target = "d" if metric == "base_rate_ratio" else "m"
        lines = [f"{metric}({target}, groups {' x '.join(groups)}) {op} {thr}"]
        if weighted and target == "m":
            lines.append("weight = w")
        if compare:
            lines.append(f"compare = {compare}")
        lines += [f"bootstrap = {int(rng.choice([100, 200]))}", f"seed = {k}", "min_group_size = 1"]
        name = f"d{k}"
        body = f"property {name} {{\n  " + "\n  ".join(lines) + "\n}"
        status = "holds" if claim_holds(value, op, thr) else "violated"
        truth = Truth(status, value=float(value), value_kind="metric", domain=-1, exact=value,
                      note=f"exact value {value} over {len(df)} rows, groups {groups} (older: age >= {a})")
        props.append(Prop(name, FAMILY, body, truth, {"metric": metric, "op": op, "threshold": thr, "compare": compare,
                                                      "groups": "x".join(groups), "weighted": weighted,
                                                      "point_value": True}, 60))
    if not weighted:
        entropy_props(seed, df, decided, props)
    return spec


# ------------------------------------------------------------------ the inequality indices (unweighted rows)

ENTROPY = ("theil_index", "generalized_entropy_index", "between_group_theil_index",
           "between_group_generalized_entropy_index")


def _ge(b: list, alpha) -> Fraction | float:
    """GE(alpha) of the benefits b (README: sum((b/mu)^alpha - 1) / (n alpha (alpha - 1)); alpha 1 is Theil's
    mean of (b/mu) ln(b/mu), 0 ln 0 = 0, computed to 60 digits)."""
    n = len(b)
    mu = sum(b, Fraction(0)) / n
    if alpha == 1:
        import mpmath

        mpmath.mp.dps = 60
        tot = mpmath.mpf(0)
        for x in b:
            if x:
                r = mpmath.mpf(x.numerator) / x.denominator / (mpmath.mpf(mu.numerator) / mu.denominator)
                tot += r * mpmath.log(r)
        return tot / n
    return sum(((x / mu) ** alpha - 1 for x in b), Fraction(0)) / (n * alpha * (alpha - 1))


def entropy_props(seed, df, decided, props, count=2):
    """``count`` inequality-index properties (unweighted rows): over individuals (groups only split the table,
    sometimes none), or each benefit b = decision - label + 1 replaced by its group's mean."""
    rng = np.random.default_rng([25, seed, 92])
    y = df["__y"].to_numpy()
    b = [Fraction(int(bool(d)) - int(bool(v)) + 1) for d, v in zip(decided, y)]
    k0 = len(props)
    for k in range(k0, k0 + count):
        metric = str(rng.choice(ENTROPY))
        theil = "theil" in metric
        alpha = 1 if theil else int(rng.choice([2, 2, 3]))
        groups = [["sex"], ["sex", "race"], ["race"]][int(rng.integers(0, 3))]
        if metric.startswith("between"):
            keys = [tuple(r) for r in df[groups].to_numpy()]
            means = {}
            for kk in set(keys):
                idx = [i for i, x in enumerate(keys) if x == kk]
                means[kk] = sum((b[i] for i in idx), Fraction(0)) / len(idx)
            value = _ge([means[kk] for kk in keys], alpha)
        else:
            value = _ge(b, alpha)
        fv = float(value)
        dt = decimal_text(value) if isinstance(value, Fraction) else None
        thr = dt if dt is not None and rng.random() < 0.4 else f"{fv + float(rng.choice([-0.05, -0.01, 0.01, 0.05])):.6g}"
        if thr.startswith("-") or "e" in thr:
            thr = "0"
        op = str(rng.choice(["<=", "<", ">=", ">"]))
        if op == "<" and Fraction(thr) <= 0:
            op = "<="
        arg = "" if (not metric.startswith("between") and rng.random() < 0.3) else f", groups {' x '.join(groups)}"
        if not theil and (alpha != 2 or rng.random() < 0.5):
            arg += f", alpha = {alpha}"
        name = f"d{k}"
        body = (f"property {name} {{\n  {metric}(m{arg}) {op} {thr}\n  bootstrap = 100\n  seed = {k}\n"
                + ("  min_group_size = 1\n" if metric.startswith("between") else "") + "}")
        import mpmath

        exact_v = value if isinstance(value, Fraction) else None
        if exact_v is None:         # Theil: irrational; decided against the threshold at 60 digits
            t = mpmath.mpf(Fraction(thr).numerator) / Fraction(thr).denominator
            holds = {"<=": value <= t, "<": value < t, ">=": value >= t, ">": value > t}[op]
            status = "holds" if holds else "violated"
            exact_v = Fraction(str(mpmath.nstr(value, 40)))
        else:
            status = "holds" if claim_holds(value, op, thr) else "violated"
        truth = Truth(status, value=fv, value_kind="metric", domain=-1, exact=exact_v,
                      note=f"{metric} (alpha {alpha}) = {fv!r} over {len(df)} rows")
        props.append(Prop(name, FAMILY, body, truth, {"metric": metric, "op": op, "threshold": thr, "alpha": alpha,
                                                      "groups": arg, "point_value": True}, 60))


# ------------------------------------------------------------------ the regression / multiclass tree's other metrics


def more_output_props(seed, df, pred, truth_col, regression, k0, count=2):
    """The tree of ``data_metrics._output_props`` (``t``, target ``g``): a regression's MAE / RMSE differences,
    bounded group loss (square or absolute), mean-prediction ratio and KS distance; a classifier's
    multiclass equalized odds (the largest over classes c of the larger one-vs-rest TPR / FPR gap between groups,
    a group whose rate has no denominator left out of that gap)."""
    rng = np.random.default_rng([25, seed, 93])
    out = []
    for k in range(k0, k0 + count):
        groups = ["sex", "race"] if rng.random() < 0.4 else ["sex"]
        keys = [tuple(r) for r in df[groups].to_numpy()]
        members = [[i for i, kk in enumerate(keys) if kk == gn] for gn in sorted(set(keys))]
        arg, squared = "", False
        if regression:
            metric = str(rng.choice(["mean_absolute_error_difference", "root_mean_squared_error_difference",
                                     "bounded_group_loss", "mean_prediction_ratio", "ks_distance"]))
            p = [Fraction(float(v)) for v in pred]
            t = [Fraction(v) for v in truth_col]
            if metric == "mean_absolute_error_difference":
                per = [sum((abs(p[i] - t[i]) for i in idx), Fraction(0)) / len(idx) for idx in members]
                value = max(per) - min(per)
            elif metric == "root_mean_squared_error_difference":
                per = [sum(((p[i] - t[i]) ** 2 for i in idx), Fraction(0)) / len(idx) for idx in members]
                squared = True          # sqrt(max) - sqrt(min): decided at 60 digits
                value = (max(per), min(per))
            elif metric == "bounded_group_loss":
                loss = str(rng.choice(["square", "absolute"]))
                arg = f", loss = {loss}" if loss == "absolute" or rng.random() < 0.5 else ""
                f = (lambda d: d * d) if loss == "square" else abs
                value = max(sum((f(p[i] - t[i]) for i in idx), Fraction(0)) / len(idx) for idx in members)
            elif metric == "mean_prediction_ratio":
                per = [sum((p[i] for i in idx), Fraction(0)) / len(idx) for idx in members]
                if max(per) == 0:
                    metric, value = "mean_absolute_error_difference", None
                else:
                    value = min(per) / max(per)
                if value is None:
                    per = [sum((abs(p[i] - t[i]) for i in idx), Fraction(0)) / len(idx) for idx in members]
                    value = max(per) - min(per)
            else:
                vals = sorted(set(p))
                cdf = [[Fraction(sum(p[i] <= v for i in idx), len(idx)) for v in vals] for idx in members]
                value = max(max(a[j] for a in cdf) - min(a[j] for a in cdf) for j in range(len(vals)))
        else:
            metric = "multiclass_equalized_odds"
            gaps = []
            for c in CLASSES:
                tprs, fprs = [], []
                for idx in members:
                    pos = [i for i in idx if truth_col[i] == c]
                    neg = [i for i in idx if truth_col[i] != c]
                    if pos:
                        tprs.append(Fraction(sum(pred[i] == c for i in pos), len(pos)))
                    if neg:
                        fprs.append(Fraction(sum(pred[i] == c for i in neg), len(neg)))
                for r in (tprs, fprs):
                    if r:
                        gaps.append(max(r) - min(r))
            value = max(gaps) if gaps else Fraction(0)
        if squared:
            import mpmath

            mpmath.mp.dps = 60
            hi, lo = value
            mv = mpmath.sqrt(mpmath.mpf(hi.numerator) / hi.denominator) - mpmath.sqrt(mpmath.mpf(lo.numerator) / lo.denominator)
            fv = float(mv)
        else:
            fv = float(value)
        lower = metric != "mean_prediction_ratio"
        op = ("<=" if rng.random() < 0.5 else "<") if lower else (">=" if rng.random() < 0.5 else ">")
        dt = decimal_text(value) if not squared else None
        thr = dt if dt is not None and rng.random() < 0.4 else f"{fv + float(rng.choice([-0.2, -0.05, 0.05, 0.2])):.6g}"
        if thr.startswith("-") or "e" in thr:
            thr = "0"
        bounded01 = metric in ("mean_prediction_ratio", "ks_distance", "multiclass_equalized_odds")
        if bounded01 and Fraction(thr) > 1:
            thr = "1"
        if op == ">" and Fraction(thr) >= 1 and bounded01:
            op = ">="
        if op == "<" and Fraction(thr) <= 0:
            op = "<="
        name = f"d{k}"
        body = (f"property {name} {{\n  {metric}(t, groups {' x '.join(groups)}{arg}) {op} {thr}\n"
                f"  bootstrap = 100\n  seed = {k}\n  min_group_size = 1\n}}")
        if squared:
            t_ = mpmath.mpf(Fraction(thr).numerator) / Fraction(thr).denominator
            status = "holds" if {"<=": mv <= t_, "<": mv < t_}[op] else "violated"
            exact_v = Fraction(str(mpmath.nstr(mv, 40)))
        else:
            status = "holds" if claim_holds(value, op, thr) else "violated"
            exact_v = value
        truth = Truth(status, value=fv, value_kind="metric", domain=-1, exact=exact_v,
                      note=f"{metric} = {fv!r} of the tree's predict over {len(df)} rows")
        out.append(Prop(name, FAMILY, body, truth, {"metric": metric, "op": op, "threshold": thr,
                                                    "model": "regression" if regression else "multiclass",
                                                    "arg": arg.strip(", "), "crossed": len(groups) > 1,
                                                    "point_value": True}, 60))
    return out


# ------------------------------------------------------------------ how the data file says it

YES = ("1", "yes", "Yes", "YES", "y", "Y", "true", "True", "TRUE", "t", "T", "1.0")
NO = ("0", "no", "No", "NO", "n", "N", "false", "False", "FALSE", "f", "F", "0.0")


def spell_decisions(seed, cols) -> str | None:
    """The logged decision column ``dec`` (1 / 0) spelt another way (README 'Audits without a model file'): 1/0 as
    they are, yes/no, true/false, t/f, y/n in any case (each row its own spelling), or values that need
    ``positive = ...``: approve / deny, -1 / 1 (positive "1"), 2 / 1 (positive "2"). Returns the positive value
    the declaration must name, or None."""
    rng = np.random.default_rng([25, seed, 94])
    how = str(rng.choice(["as-is", "words", "words", "approve", "minus", "two"]))
    dec = cols["dec"]
    if how == "as-is":
        return None
    if how == "words":
        cols["dec"] = [str(rng.choice(YES)) if v == "1" else str(rng.choice(NO)) for v in dec]
        return None
    pos, neg = {"approve": ("approve", "deny"), "minus": ("1", "-1"), "two": ("2", "1")}[how]
    cols["dec"] = [pos if v == "1" else neg for v in dec]
    return pos


def decided_from(col, positive) -> np.ndarray:
    """The decisions of the column as read: the positive value named, else the words of :data:`YES`."""
    if positive is not None:
        return (col == positive).to_numpy()
    return col.isin(YES).to_numpy()


def headerless(seed, files, spec) -> str:
    """A third of the instances write ``d.csv`` without its header line and name the columns in the declaration
    (``header = false, columns = [...]``)."""
    rng = np.random.default_rng([25, seed, 95])
    if rng.random() >= 1 / 3:
        return spec
    head, _, body = files["d.csv"].decode().partition("\n")
    files["d.csv"] = body.encode()
    return spec.replace('csv("d.csv", ', f'csv("d.csv", header = false, columns = [{", ".join(head.split(","))}], ', 1)
