"""Valid simultaneous intervals of the data metrics the bootstrap alone estimated (session 36, h7 round 2).

The bootstrap percentile interval is an approximation, not a bound: on few rows, or a rate near 0 or 1, it
is too narrow (a 16% rate of wrong `holds (estimated)` at confidence 0.95, bench/estimate_coverage.py). The
data backend joins it (the union) with a valid interval wherever one is simple, so the printed bound holds at
the stated confidence whatever the bootstrap did; the union bound spends ``1 - confidence`` over every interval
it takes (groups, classes, rates, the whole population). Rows are counted one by one (no ``weight``), and the
rows of a group are taken as independent draws from that group's population (the group sizes given):

* the binary rate forms: a Clopper-Pearson box of the rates (:mod:`.rate_bounds`);
* ``calibration_gap`` (the ECE over fixed equal-width bins, scores in [0, 1]): a group's empirical ECE
  f = sum_b |(1/n) sum_i (s_i - y_i) [s_i in b]| moves by at most 2/n when one row changes, so McDiarmid gives
  f <= E f + t, t = sqrt(2 ln(1/d) / n) and the reverse; E f >= ECE (Jensen) and E f <= ECE + sum_b
  sqrt(Var / n) <= ECE + sqrt(B / n) (Cauchy-Schwarz: the bins' second moments sum to at most 1). So
  ECE lies in [f - t - sqrt(B / n), f + t];
* ``class_distribution_distance`` and ``multiclass_equalized_odds``: Clopper-Pearson intervals of every
  group's class shares / one-vs-rest TPR and FPR, the distance's range over that box;
* ``ks_distance``: the Dvoretzky-Kiefer-Wolfowitz inequality (Massart's constant) per group, so every
  pair's KS distance moves by at most eps_g + eps_h.

Elsewhere (weighted rows: a weighted rate is not a binomial proportion; ``rate = scoring``: a decision by the
sample's median; the inequality indices; a regression's means, whose outputs have no declared bounds) there is
no simple valid bound: :func:`approximate_reason` says so, and the verdict's text and JSON name the interval a
bootstrap approximation (``details["interval"]["method"]``).
"""

from __future__ import annotations

import math

import numpy as np

from fairspec.analyses.group_rates import BETWEEN, METRICS


def approximate_reason(prop, weighted: bool) -> str:
    """Why a metric's interval is the bootstrap's alone (no valid bound computed): the words of the verdict."""
    m = METRICS[prop.metric]
    if weighted:
        return "a weighted rate or mean is not a count of independent rows"
    if prop.param("rate") == "scoring":
        return "rate = scoring decides each row by the sample's own median score"
    if m.form in ("inequality", "between_inequality"):
        return "no simple bound of a generalized entropy index"
    if m.output == "regression":
        return "a regression's outputs have no declared bounds"
    return "no simple bound of this metric"


def note(details: dict) -> str:
    """The words appended to a decided verdict whose interval is the bootstrap's alone ('' otherwise)."""
    why = (details.get("interval") or {}).get("approximate")
    return f" (a bootstrap percentile interval, an approximation: {why})" if why else ""


def ece_interval(prop, c, eligible, confidence: float) -> tuple[float, float] | None:
    """[lo, hi] containing the true calibration_gap with probability >= ``confidence`` (module docstring);
    None for weighted rows."""
    from fairspec.backends.data.rate_bounds import _between, _to_overall

    bins, sums = np.asarray(c.bins, dtype=np.float64), np.asarray(c.score_sums, dtype=np.float64)
    if c.weighted or not np.all(bins == np.round(bins)):
        return None
    el = np.asarray(eligible, dtype=bool)
    B = bins.shape[-2]
    overall = prop.options.get("compare", BETWEEN) != BETWEEN
    K = int(el.sum()) + (1 if overall else 0)
    d = (1.0 - confidence) / (2.0 * max(K, 1))             # each side of each interval

    def one(b, s) -> tuple[float, float]:
        n = float(b.sum())
        if n <= 0:
            return 0.0, 1.0
        f = float(np.abs(s - b[..., 1]).sum()) / n
        t = math.sqrt(2.0 * math.log(1.0 / d) / n)
        return max(0.0, f - t - math.sqrt(B / n)), min(1.0, f + t)

    per = [one(bins[g], sums[g]) for g in np.flatnonzero(el)]
    lo, hi = np.array([p[0] for p in per]), np.array([p[1] for p in per])
    if overall:
        olo, ohi = one(bins.sum(axis=0), sums.sum(axis=0))
        return _to_overall(lo, hi, olo, ohi, "difference")
    return _between(lo, hi, "difference")


def output_interval(mdef, g, pred, target, weighted: bool, eligible, mode: str, K, confidence: float):
    """[lo, hi] containing a multiclass metric or the KS distance with probability >= ``confidence``, or None
    (weighted rows; a metric of means). ``g`` the group per row, ``pred`` the predicted class / value,
    ``target`` the true class (-1: none of the model's) for class_odds."""
    from fairspec.backends.data.rate_bounds import _between, _to_overall, clopper_pearson

    if weighted or mdef.form not in ("class_distance", "class_odds", "ks_distance"):
        return None
    el = np.flatnonzero(np.asarray(eligible, dtype=bool))
    G = len(eligible)                   # groups past the last row's (no row) too
    overall = mode != BETWEEN
    if len(el) < (1 if overall else 2):   # no pair of groups (no group): the metric is 0 (as _between's)
        return 0.0, 0.0
    a = 1.0 - confidence
    if mdef.form == "ks_distance":
        n_g = np.array([int((g == k).sum()) for k in el])
        n_all = int(g.size)
        eps = np.sqrt(np.log(2.0 * (len(el) + overall) / a) / (2.0 * np.maximum(n_g, 1)))
        e_all = math.sqrt(math.log(2.0 * (len(el) + 1) / a) / (2.0 * max(n_all, 1)))
        from fairspec.analyses.output_metrics import ks_distance

        w = np.ones(g.size)
        lo = hi = 0.0
        if overall:
            for i, k in enumerate(el):
                ks = ks_distance(g, pred, w, [k], mode)
                lo, hi = max(lo, ks - eps[i] - e_all), max(hi, ks + eps[i] + e_all)
        else:
            for i in range(len(el)):
                for j in range(i + 1, len(el)):
                    ks = ks_distance(g, pred, w, [el[i], el[j]], BETWEEN)
                    lo, hi = max(lo, ks - eps[i] - eps[j]), max(hi, ks + eps[i] + eps[j])
        return float(max(0.0, lo)), float(min(1.0, hi))           # plain floats (ks_distance's are numpy's)
    K, g, pred = int(K), np.asarray(g, dtype=np.int64), np.asarray(pred, dtype=np.int64)
    target = None if target is None else np.asarray(target, dtype=np.int64)
    if mdef.form == "class_distance":
        cnt = np.bincount(g * K + pred, minlength=G * K).reshape(G, K)[el]
        num, den = cnt, np.repeat(cnt.sum(axis=1, keepdims=True), K, axis=1)
        onum, oden = np.bincount(pred, minlength=K), np.full(K, g.size)      # every row, small groups' too
        parts = [(num, den, onum, oden)]
    else:
        ok = target >= 0
        gg, cls, tr = g[ok], pred[ok], target[ok]
        H = np.bincount((gg * K + tr) * K + cls, minlength=G * K * K).reshape(G, K, K)[el]
        Ho = np.bincount(tr * K + cls, minlength=K * K).reshape(K, K)

        def rates(H):
            diag = np.diagonal(H, axis1=-2, axis2=-1)
            pos, predc = H.sum(axis=-1), H.sum(axis=-2)
            tot = H.sum(axis=(-2, -1))[..., None]
            return [(diag, pos), (predc - diag, tot - pos)]        # TPR, FPR of every class

        parts = [(x[0], x[1], y[0], y[1]) for x, y in zip(rates(H), rates(Ho))]
    n_int = sum(int((den > 0).sum()) + (int((oden > 0).sum()) if overall else 0) for _, den, _, oden in parts)
    d = a / max(n_int, 1)
    boxes = []
    for num, den, onum, oden in parts:
        lo, hi = clopper_pearson(num, np.maximum(den, 1), d)
        lo, hi = np.where(den > 0, lo, 0.0), np.where(den > 0, hi, 1.0)
        olo, ohi = clopper_pearson(onum, np.maximum(oden, 1), d)
        olo, ohi = np.where(oden > 0, olo, 0.0), np.where(oden > 0, ohi, 1.0)
        boxes.append((lo, hi, olo, ohi))
    if mdef.form == "class_distance":
        lo, hi, olo, ohi = boxes[0]                               # [G, K], [K]
        if overall:
            up = 0.5 * np.maximum(hi - olo[None], ohi[None] - lo).sum(axis=1)
            down = 0.5 * np.maximum(0.0, np.maximum(lo - ohi[None], olo[None] - hi)).sum(axis=1)
        else:
            up = 0.5 * np.maximum(hi[:, None] - lo[None], hi[None] - lo[:, None]).sum(axis=-1)
            down = 0.5 * np.maximum(0.0, np.maximum(lo[:, None] - hi[None], lo[None] - hi[:, None])).sum(axis=-1)
            off = ~np.eye(len(el), dtype=bool)
            up, down = up[off], down[off]
        return float(min(1.0, down.max())), float(min(1.0, up.max()))
    ends = []
    for lo, hi, olo, ohi in boxes:                                 # every class of TPR, then of FPR
        for k in range(K):          # a rate no row of a group measures: anywhere in [0, 1]
            ends.append(_to_overall(lo[:, k], hi[:, k], float(olo[k]), float(ohi[k]), "difference") if overall
                        else _between(lo[:, k], hi[:, k], "difference"))
    return (max(e[0] for e in ends), max(e[1] for e in ends)) if ends else None
