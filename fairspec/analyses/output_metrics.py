"""Group metrics of multiclass and regression models (issue 25), from per-row arrays.

The binary metrics (``group_rates``) read one decision and one label per row; a multiclass model
reads them one class against the rest (``class = c``) and a regression above a threshold
(``threshold = t``), so every binary metric applies unchanged. The metrics here compare what a
binary decision cannot say:

* ``class_share``  -- per group, the share of rows predicted as each class ([G, K]); the
  value is the total variation distance 1/2 sum_k |P_a(k) - P_b(k)|, largest over pairs of
  groups (or each group against all rows, ``compare = to_overall``);
* ``mean_prediction``, ``mean_error`` (prediction - target), ``mae``, ``rmse``, ``loss``
  (mean squared or absolute error) -- per group weighted means; compared as the largest
  difference, the lowest over the highest (ratio) or the largest group value (bounded group
  loss, as fairlearn's ``BoundedGroupLoss`` bounds every group's mean loss);
* ``class_odds`` -- per group and class c, the one-vs-rest TPR ``Pr[pred = c | true = c]`` and FPR
  ``Pr[pred = c | true != c]`` ([G, K, 2]); the value is the largest over c of the equalized-odds
  difference (the larger of the TPR and FPR gaps between groups, or against all rows), as fairlearn's
  ``equalized_odds_difference`` on ``y_true == c, y_pred == c`` (a rate whose denominator is 0 in a
  group is left out of that gap);
* ``prediction`` -- the Kolmogorov-Smirnov distance between groups' weighted empirical
  distributions of the prediction, largest over pairs (scipy's ``ks_2samp`` statistic).

Every function takes per-row weights ``w`` (multiplicities of a bootstrap replicate, sample
weights, or ones), so the value and its bootstrap replicates share one definition. numpy is
imported inside the functions.
"""

from __future__ import annotations

from fairspec.analyses.group_rates import BETWEEN

QUANTITIES = ("class_share", "class_odds", "mean_prediction", "mean_error", "mae", "rmse", "loss", "prediction")


def group_means(g, v, w, G: int):
    """Weighted mean of v per group [G] (nan for a group of weight 0) and overall."""
    import numpy as np

    tot = np.bincount(g, weights=w, minlength=G)
    s = np.bincount(g, weights=w * v, minlength=G)
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(tot > 0, s / np.where(tot > 0, tot, 1.0), np.nan)
    all_w = w.sum()
    return per, (float((w * v).sum() / all_w) if all_w > 0 else float("nan"))


def per_group(quantity: str, g, pred, target, w, G: int, loss: str = "square", K: int | None = None):
    """The per-group quantity [G] (``class_share``: [G, K] with pred the class columns) and the
    whole population's."""
    import numpy as np

    if quantity == "class_share":
        if K is None:
            K = int(pred.max()) + 1 if pred.size else 1
        return class_shares(g, pred, w, G, K)
    if quantity == "class_odds":
        if K is None:
            K = int(max(pred.max(initial=0), target.max(initial=0))) + 1
        return class_odds(g, pred, target, w, G, K)
    if quantity == "mean_prediction":
        return group_means(g, pred, w, G)
    err = pred - target if target is not None else None
    if quantity == "mean_error":
        return group_means(g, err, w, G)
    if quantity == "mae" or (quantity == "loss" and loss == "absolute"):
        return group_means(g, np.abs(err), w, G)
    if quantity == "loss":
        return group_means(g, err * err, w, G)
    if quantity == "rmse":
        per, tot = group_means(g, err * err, w, G)
        return np.sqrt(per), float(np.sqrt(tot))
    raise ValueError(quantity)


def class_shares(g, cls, w, G: int, K: int):
    """[G, K] weighted share of each predicted class per group (nan rows for empty groups), and [K] overall."""
    import numpy as np

    counts = np.bincount(g * K + cls, weights=w, minlength=G * K).reshape(G, K)
    tot = counts.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(tot > 0, counts / np.where(tot > 0, tot, 1.0), np.nan)
    allc = counts.sum(axis=0)
    return per, allc / allc.sum() if allc.sum() > 0 else np.full(K, np.nan)


def class_odds(g, cls, truth, w, G: int, K: int):
    """[G, K, 2] weighted one-vs-rest (TPR, FPR) of each class per group (nan where a rate has no rows),
    and [K, 2] over all rows. ``truth``: the true class per row (-1: no class of the model, left out)."""
    import numpy as np

    ok = truth >= 0
    g, cls, truth, w = g[ok], cls[ok], truth[ok], w[ok]
    hit = np.bincount((g * K + truth) * K + cls, weights=w, minlength=G * K * K).reshape(G, K, K)

    def rates(H):                       # H [..., K(true), K(pred)]
        diag = np.diagonal(H, axis1=-2, axis2=-1)
        pos = H.sum(axis=-1)                          # rows whose true class is c
        pred_c = H.sum(axis=-2)                       # rows predicted c
        tot = H.sum(axis=(-2, -1))[..., None]
        neg = tot - pos
        with np.errstate(divide="ignore", invalid="ignore"):
            tpr = np.where(pos > 0, diag / np.where(pos > 0, pos, 1.0), np.nan)
            fpr = np.where(neg > 0, (pred_c - diag) / np.where(neg > 0, neg, 1.0), np.nan)
        return np.stack([tpr, fpr], axis=-1)

    return rates(hit), rates(hit.sum(axis=0))


def odds_distance(per, overall, mode: str = BETWEEN) -> float:
    """The largest over classes of the larger TPR / FPR gap: between groups (highest - lowest over the
    groups with that rate) or against all rows; per [G, K, 2] of eligible groups."""
    import numpy as np

    if per.size == 0:
        return float("nan")
    with np.errstate(invalid="ignore"), __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("ignore", RuntimeWarning)
        if mode == BETWEEN:
            gap = np.nanmax(per, axis=0) - np.nanmin(per, axis=0)
        else:
            gap = np.nanmax(np.abs(per - overall[None, :, :]), axis=0)
        return float(np.nanmax(gap)) if np.any(~np.isnan(gap)) else float("nan")


def total_variation(shares, overall, mode: str = BETWEEN) -> float:
    """Largest total variation distance between two groups' class distributions (``between_groups``),
    or between a group's and the whole population's (``to_overall``); shares [G, K] of eligible groups."""
    import numpy as np

    if mode == BETWEEN:
        diff = np.abs(shares[:, None, :] - shares[None, :, :]).sum(axis=-1) / 2.0
        return float(np.nanmax(diff)) if diff.size else float("nan")
    if shares.shape[0] == 0:               # no eligible group: nothing to compare (as between groups)
        return float("nan")
    return float(np.nanmax(np.abs(shares - overall[None, :]).sum(axis=-1) / 2.0))


def compare_values(per, overall: float, form: str, mode: str = BETWEEN) -> float:
    """A per-group quantity [G] compared: difference (largest gap), ratio (lowest / highest; 0/0 -- every
    mean 0 -- is undefined, nan, as a binary ratio of rates 0 everywhere and fairlearn's ratio()) or max
    (the largest group value)."""
    import numpy as np

    per = per[~np.isnan(per)]
    if per.size == 0:
        return float("nan")
    if form == "output_max":
        return float(per.max())
    if mode == BETWEEN:
        hi, lo = per.max(), per.min()
        if form == "output_ratio":
            return float(lo / hi) if hi > 0 else float("nan")
        return float(hi - lo)
    if form == "output_ratio":
        if overall == 0:                   # every group's mean 0 (predictions >= 0): 0/0
            return float("nan")
        r = [0.0 if x == 0 else min(x / overall, overall / x) for x in per]
        return float(min(r))
    return float(np.abs(per - overall).max())


def ks_distance(g, pred, w, groups, mode: str = BETWEEN) -> float:
    """Largest Kolmogorov-Smirnov distance between the weighted empirical distributions of
    ``pred`` in two of ``groups`` (``between_groups``), or of a group and all rows (``to_overall``)."""
    import numpy as np

    order = np.argsort(pred, kind="stable")
    p, gg, ww = pred[order], g[order], w[order]
    last = np.append(p[1:] != p[:-1], True)          # the ECDF is read after the last of tied values
    curves = []
    for k in groups:
        wk = np.where(gg == k, ww, 0.0)
        tot = wk.sum()
        if tot > 0:
            curves.append(np.cumsum(wk)[last] / tot)
    if len(curves) < (2 if mode == BETWEEN else 1):
        return float("nan")
    C = np.stack(curves)
    if mode == BETWEEN:
        return float((C.max(axis=0) - C.min(axis=0)).max())
    allc = np.cumsum(ww)[last] / ww.sum()
    return float(np.abs(C - allc[None, :]).max())


def metric_from_rows(mdef, g, pred, target, w, eligible_groups, G: int, mode: str = BETWEEN,
                     loss: str = "square", K: int | None = None):
    """The metric's value over the eligible groups, and the per-group quantity [G] (shares [G, K]).
    ``pred``: the predicted class column (multiclass) or the value (regression)."""
    import numpy as np

    elig = np.asarray(eligible_groups)
    if mdef.form == "ks_distance":
        per, _ = group_means(g, pred, w, G)
        return ks_distance(g, pred, w, np.flatnonzero(elig), mode), per
    per, overall = per_group(mdef.quantity, g, pred, target, w, G, loss, K)
    if mdef.form == "class_distance":
        return total_variation(per[elig], overall, mode), per
    if mdef.form == "class_odds":
        return odds_distance(per[elig], overall, mode), per
    return compare_values(per[elig], overall, mdef.form, mode), per
