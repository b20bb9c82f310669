"""Multiclass and regression models on data rows (issue 25).

* ``class = c`` / ``threshold = t`` on a binary group metric: the decision of a row is "the
  predicted class is c" (one class against the rest) / "the value is >= t"; the truth is the
  data's ``target`` column read the same way (the true class is c / the true value is >= t), or,
  without a target, the data's ``label`` condition. Every binary metric, its intervals and its
  exact decision then apply unchanged (``cell_counts.count``).
* the output metrics of ``group_rates`` (``output`` set: class distribution distance, mean
  prediction, errors, bounded group loss, KS distance) are computed from per-row arrays by
  ``fairspec.analyses.output_metrics`` with a bootstrap over rows for the interval; a multiclass
  report carries each group's confusion matrix when the data has a target.
"""

from __future__ import annotations

import time

import numpy as np

from fairspec.syntax.literals import percent as _level  # a confidence level as the spec writes it
from fairspec import ir
from fairspec.analyses.group_rates import BETWEEN, METRICS
from fairspec.backends.data import batching
from fairspec.backends.data.budget import WEIGHT_TOTAL
from fairspec.backends.data.constant import lost_reason, lost_replicates, undefined_output_reason
from fairspec.backends.data.estimate_bounds import note
from fairspec.backends.data.groups import GroupCells, estimated_holds, missing_rows, small_undo_reason
from fairspec.verdict import Unsupported, Verdict, interval_status, unknown
from fairspec.syntax.literals import interval as _interval
from fairspec.syntax.literals import shown as _shown
from fairspec.syntax.literals import shown_pair as _shown_pair
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly


def _readout_call(fn):
    from fairspec.models.readout import ReadoutError

    try:
        return fn()
    except ReadoutError as e:
        raise Unsupported(e.message + (f" ({e.hint})" if e.hint else "")) from None


def predicted_classes(ctx, model_name: str, X) -> np.ndarray:
    """``class(m(x))`` per row: the model's own (a scikit-learn classifier's ``predict``)."""
    return _readout_call(lambda: ctx.model(model_name).predict_class(X))


def values(ctx, model_name: str, X) -> np.ndarray:
    model = ctx.model(model_name)
    return _readout_call(lambda: model.readout.value(model.outputs(X)))


def output_decisions(prop: ir.GroupMetric, ctx, X, memo: dict | None = None) -> np.ndarray | None:
    """The one-against-the-rest (``class = c``) or thresholded (``threshold = t``) decision per row;
    None when the metric has neither. On a runtime that rounds by batch (``batching.checked``), with a
    ``memo``, the rows another batching may decide otherwise are re-decided there
    (:func:`output_fragile`, kept in the memo under :func:`fragile_key` for the property's counter)."""
    c, t = prop.param("class"), prop.param("threshold")
    if c is None and t is None:
        return None
    model = ctx.model(prop.model)
    if c is not None:
        _class_in_range(model, c)
    key = ("outputs", prop.model)
    if memo is not None and key in memo:
        Y = memo[key]
    else:
        Y = _readout_call(lambda: model.outputs(X))
        if memo is not None:
            memo[key] = Y
    d = _decide_outputs(model, Y, c, t, X)
    if memo is not None and batching.checked(model) and fragile_key(prop) not in memo:
        memo[fragile_key(prop)] = output_fragile(model, X, Y, d, c, t)
    return d


def _class_in_range(model, c) -> None:
    """``class = c`` of a model whose width only the loaded file tells (a TorchScript net: lint cannot say
    FS417): a column past the last is :class:`~fairspec.verdict.Unsupported`, never "predicted on no row"."""
    _readout_call(lambda: model.readout.class_index(c))
    K = model.readout.n_classes
    if K is not None and isinstance(c, int) and not isinstance(c, bool) and c >= K:
        raise Unsupported(f"class {c} is out of range: the model has {K} classes (columns 0 .. {K - 1})")

def fragile_key(prop: ir.GroupMetric) -> tuple:
    return ("fragile", prop.model, "class", prop.param("class"), "threshold", prop.param("threshold"))


def _decide_outputs(model, Y, c, t, X=None) -> np.ndarray:
    """The decision per row from the outputs Y of the model-input rows X: the model's own class
    (``predict_class``: a scikit-learn classifier's ``predict``; the readout of Y without X), or the value >= t."""
    if c is not None:
        if X is None:
            return (_readout_call(lambda: model.readout.predicted_class(Y)) == c).astype(np.int64)
        return (_readout_call(lambda: model.predict_class(X, Y)) == c).astype(np.int64)
    return (_readout_call(lambda: model.readout.value(Y)) >= value_cut(t)).astype(np.int64)


def value_cut(t) -> float:
    """The smallest float64 at or above the decimal ``t`` the spec writes: a float value is >= t (exactly, as
    README's "Ties exactly as written" reads a threshold) iff it is >= this float. float(0.3) lies below the
    decimal 0.3, so a model's value float(0.3) is not >= 0.3."""
    from fairspec.certify.exact import threshold_of
    from fairspec.certify.rounding import float_up

    return float_up(threshold_of(t))


def output_fragile(model, X, Y, d, c, t) -> dict:
    """:func:`fairspec.backends.data.batching.fragile_rows` of a ``class = c`` / ``threshold = t``
    decision: near where the value lies within the spread of t, or where the predicted class could change
    (one column: the score within the spread of its threshold; K columns: the two largest within twice the
    spread of each other, each column moving by at most the spread)."""
    Y = np.asarray(Y, dtype=np.float64)
    M = Y.reshape(Y.shape[0], -1)
    with np.errstate(invalid="ignore"):
        if c is not None and M.shape[1] >= 2:
            width, bound = batching.spread(model, X, M.reshape(-1), columns=True)
            top2 = np.sort(M, axis=1)[:, -2:]
            gap, width = top2[:, 1] - top2[:, 0], 2.0 * width
        else:
            z = M[:, 0] if c is not None else np.asarray(model.readout.value(Y), dtype=np.float64)
            width, bound = batching.spread(model, X, z)
            gap = np.abs(z - (float(model.readout.threshold) if c is not None else float(t)))
    return batching.fragile_rows(X, d, gap, width, bound,
                                 lambda Xs: _decide_outputs(model, _readout_call(lambda: model.outputs(Xs)), c, t, Xs))


def true_classes(rows, target: str, model, strict: bool = True) -> np.ndarray:
    """The target column as class columns of ``model`` (int64), read by :func:`_class_columns`. With ``strict``
    (a metric that compares with the truth; without, -1 for such a value: a report's confusion matrix), a value that
    is no class of the model -- 3 for a network whose classes are its columns 0 .. 2 (an off-by-one), "a" for a
    label "A" -- is :class:`~fairspec.verdict.Unsupported` (the property's ``unknown``) naming the values and
    their rows: read as "not class c" it would be a verdict about another truth."""
    out = _class_columns(rows, target, model)
    bad = out < 0
    if strict and bad.any():
        num = rows.numeric(target)
        if num is not None:
            vals = [str(int(v)) if float(v).is_integer() else str(v) for v in num[bad]]
        else:
            codes, cats = rows.table.coded(target)
            names = list(map(str, cats)) + [""]
            vals = [names[k] for k in codes[rows.index][bad]]
        uniq, counts = np.unique(np.asarray(vals, dtype=object).astype(str), return_counts=True)
        shown = ", ".join(f"{str(u) if num is not None else repr(str(u))} ({c} rows)"
                          for u, c in list(zip(uniq, counts))[:4]) + \
            (f" and {len(uniq) - 4} more" if len(uniq) > 4 else "")
        classes = model.readout.classes
        K = model.readout.n_classes or 0
        what = (f"its classes are {', '.join(repr(str(x)) for x in classes)}" if classes is not None else
                f"it records no class labels, so its classes are its output columns 0 .. {max(K - 1, 0)}")
        raise Unsupported(f"the target column '{target}' holds {shown}, which no class of the model is ({what}); "
                          f"recode the target to the model's classes, or leave those rows out with where = ...")
    return out


def _class_columns(rows, target: str, model) -> np.ndarray:
    """The target column as class columns of ``model`` (int64, -1 where the value is no class):
    the model's recorded labels matched by value when they and the column are numbers (a float label 1.0 is
    the target 1), as text otherwise; without labels, whole numbers 0 .. K-1 as columns. A Parquet
    boolean target is its text "True" / "False" (as lint reads it; it was its number 1 / 0, no class of
    a model fitted on booleans, so every row's truth was "no class"), and a 1 / 0 target matches the
    classes False / True of such a model. A value that is a class in another case ("MID" where the
    class is "mid") is refused (Unsupported): it would silently count as no class."""
    classes = model.readout.classes
    K = model.readout.n_classes or 0
    if classes is not None:
        by_text = {str(lab): i for i, lab in reversed(list(enumerate(classes)))}
        if all(isinstance(lab, (bool, np.bool_)) for lab in classes):   # a model fitted on booleans
            by_text.update({str(int(bool(lab))): i for i, lab in enumerate(classes)})
        num = rows.numeric(target)
        if num is not None and target in rows.table.booleans:
            num = None                  # read as its text "True" / "False" below
        if num is not None and all(isinstance(lab, (int, float)) and not isinstance(lab, bool) for lab in classes):
            out = np.full(num.shape[0], -1, dtype=np.int64)     # number labels (1, or 1.0 of a float column)
            for i, lab in reversed(list(enumerate(classes))):    # matched by value: 1 and 1.0 alike
                out[num == float(lab)] = i
            return out
        if num is not None:          # numbers written as 1.0 for a label 1
            return np.array([by_text.get(str(int(v)) if float(v).is_integer() else str(v), -1) for v in num],
                            dtype=np.int64)
        if target in rows.table.booleans:
            values = rows.table.numeric(target)
            codes, cats = (values == 1).astype(np.int64), np.array(["False", "True"], dtype=object)
        else:
            codes, cats = rows.table.coded(target)
        lut = np.array([by_text.get(str(cv), -1) for cv in cats] + [-1], dtype=np.int64)
        out = lut[codes[rows.index]]
        _other_case(rows, target, model, by_text, cats, codes, lut)
        return out
    num = rows.numeric(target)
    if num is None:
        raise Unsupported(f"the target column '{target}' holds text, and the model file records no class labels: "
                          f"its classes are columns 0 .. {max(K - 1, 0)}, so the target must hold those numbers")
    ok = (num == np.round(num)) & (num >= 0) & ((num < K) if K else True)
    return np.where(ok, num, -1).astype(np.int64)


def _other_case(rows, target: str, model, by_text: dict, cats, codes, lut) -> None:
    """Unsupported when a value of the target the rows hold is no class but a class in another case."""
    used = np.unique(codes[rows.index])
    folded = {k.strip().lower(): k for k in by_text}
    for k in used:
        v = str(cats[k])
        if lut[k] < 0 and v.strip().lower() in folded:
            cls = folded[v.strip().lower()]
            shown = ", ".join(f'"{c}"' for c in model.readout.classes[:6])
            raise Unsupported(f"the target column '{target}' holds \"{v}\" where the model's class is \"{cls}\" "
                              f"(its classes: {shown}): text is compared as written, so those rows would count as "
                              f"no class of the model; write the target's values as the model's classes")


def output_truth(prop: ir.GroupMetric, ctx, rows) -> np.ndarray | None:
    """The truth a one-against-the-rest / thresholded metric compares with (0/1 per row), from the
    target column; None when the data has no target (the label condition is the truth)."""
    c, t = prop.param("class"), prop.param("threshold")
    data = ctx.spec.data(prop.data)
    if (c is None and t is None) or data.target is None:
        return None
    if c is not None:
        from fairspec.analyses.group_rates import uses_label

        return (true_classes(rows, data.target, ctx.model(prop.model), strict=uses_label(prop.metric)) == c
                ).astype(np.int64)
    v = rows.decided_numbers(data.target, "read as the target")   # NaN >= t was a negative truth: a DataError
    if v is None:
        raise Unsupported(f"the target column '{data.target}' of '{data.name}' does not hold numbers")
    return (v >= t).astype(np.int64)


def decision_words(prop: ir.GroupMetric, ctx) -> dict:
    """What a ``class = c`` / ``threshold = t`` metric's decision and truth are, for its report (JSON
    ``details.decision`` / ``details.truth``; the per-group table's column titles): {} for a binary metric."""
    c, t = prop.param("class"), prop.param("threshold")
    if c is None and t is None:
        return {}
    data = ctx.spec.data(prop.data)
    target = data.target if data is not None else None
    if c is not None:
        classes = ctx.model(prop.model).readout.classes
        name = f'"{classes[c]}"' if classes is not None and isinstance(c, int) and 0 <= c < len(classes) else \
            f"class {c}"
        return {"decision": f"predicted {name}", "truth": f"{target} is {name}" if target else "label"}
    return {"decision": f"value >= {_spec_number(t)}", "truth": f"{target} >= {_spec_number(t)}" if target else "label"}

def confusion_by_group(prop: ir.GroupMetric, ctx, names: list[str]) -> list[dict]:
    """Each group's confusion matrix (rows: the target's class, columns: the predicted class; rows
    counted, a target that is no class of the model left out), in the order of ``names``, for the
    report of a one-against-the-rest metric (``class = c``)."""
    fs = ctx.spec.feature_set(prop.features)
    data = ctx.spec.data(prop.data)
    model = ctx.model(prop.model)
    ids = GroupCells(prop.groups, fs)
    K = model.readout.n_classes
    parts = []
    for rows in ctx.row_batches(fs.name, prop.data):
        vals, n = rows.frame.values, rows.frame.n_rows
        cls = predicted_classes(ctx, prop.model, ctx.model_input(prop.model, vals, n))
        parts.append((ids.index(vals, n), true_classes(rows, data.target, model, strict=False), cls))
    if not parts:
        return [{} for _ in names]
    g, truth, pred = (np.concatenate([p[i] for p in parts]) for i in range(3))
    K = K or int(max(pred.max(initial=0), truth.max(initial=0))) + 1
    G = len(ids)
    if not ids.dense:
        order = ids.order()
        remap = np.empty(len(order), dtype=np.int64)
        remap[order] = np.arange(len(order))
        g = remap[g]
    ok = truth >= 0
    cm = np.bincount((g[ok] * K + truth[ok]) * K + pred[ok], minlength=G * K * K).reshape(G, K, K)
    labels = [str(x) for x in model.readout.classes] if model.readout.classes else [str(k) for k in range(K)]
    return [{"classes": labels, "matrix": cm[k].tolist()} for k in range(min(G, len(names)))]


# ------------------------------------------------------------------ output metrics

def run_output_metric(prop: ir.GroupMetric, ctx, *, resamples: int, budget=None) -> Verdict:
    """``resamples``: the option ``bootstrap``, which the runner (:mod:`fairspec.kinds.on_data`) resolved;
    ``budget``: the property's time budget (:class:`fairspec.backends.data.budget.Budget`), looked at before
    each batch of rows."""
    from fairspec.backends.data.budget import NONE

    budget = budget or NONE
    t0 = time.perf_counter()
    mdef = METRICS[prop.metric]
    opts = prop.options
    wcol = opts.get("weight")
    fs = ctx.spec.feature_set(prop.features)
    data = ctx.spec.data(prop.data)
    model = ctx.model(prop.model)
    ids = GroupCells(prop.groups, fs)
    gs, preds, targets, truths, weights = [], [], [], [], []
    multiclass = mdef.output == "multiclass"
    seen = 0
    for rows in ctx.row_batches(fs.name, prop.data):
        budget.check(seen)
        vals, n = rows.frame.values, rows.frame.n_rows
        seen += n
        X = ctx.model_input(prop.model, vals, n)
        gs.append(ids.index(vals, n))
        if wcol:
            w = rows.numeric(wcol)
            if w is None or not np.isfinite(w).all() or (w < 0).any():
                from fairspec.runtime.data import DataError

                raise DataError(f"data file {data.path} column {wcol!r} (weight) must hold non-negative numbers",
                                data.path)
            weights.append(w)
        preds.append(predicted_classes(ctx, prop.model, X) if multiclass else values(ctx, prop.model, X))
        if data.target is not None:
            if multiclass:
                truths.append(true_classes(rows, data.target, model, strict=mdef.quantity == "class_odds"))
            else:
                v = rows.decided_numbers(data.target, "read as the target")   # a NaN: a DataError
                if v is None:
                    return unknown(prop, f"the target column '{data.target}' of '{data.name}' does not hold numbers",
                                   backend="data")
                targets.append(v)
    if weights and not sum(float(w.sum()) for w in weights) <= WEIGHT_TOTAL:    # inf / inf: a NaN mean
        from fairspec.runtime.data import DataError

        raise DataError(f"data file {data.path} column {wcol!r} (weight): the weights sum past {WEIGHT_TOTAL:g}, where "
                        f"float sums overflow; rescale them (a mean is the same under a common factor)", data.path)
    g = np.concatenate(gs) if gs else np.zeros(0, dtype=np.int64)
    pred = np.concatenate(preds) if preds else np.zeros(0)
    target = np.concatenate(targets) if targets else None
    truth = np.concatenate(truths) if truths else None
    if ids.dense:
        names, order = ids.names(), None
    else:
        order = ids.order()
        names = ids.names(order)
        remap = np.empty(len(order), dtype=np.int64)
        remap[order] = np.arange(len(order))
        g = remap[g]
    G, n = len(names), int(g.size)
    if mdef.quantity in ("mean_error", "mae", "rmse", "loss") and target is None:
        return unknown(prop, f"{prop.metric} compares predictions with the true value: data set '{data.name}' needs "
                             f"target = COLUMN", backend="data")
    if mdef.form == "output_ratio" and (pred < 0).any():
        neg = pred < 0
        return unknown(prop, f"{prop.metric} is the lowest over the highest mean prediction, for predictions >= 0, "
                             f"and model '{prop.model}' predicts below 0 on {int(neg.sum())} rows (the lowest "
                             f"{float(pred[neg].min()):.4g}): a ratio of means of either sign says nothing; compare "
                             f"them with mean_prediction_difference", backend="data", seconds=time.perf_counter() - t0)
    K = (model.readout.n_classes or (int(pred.max()) + 1 if n else 1)) if multiclass else None
    sizes = np.bincount(g, minlength=G)
    share = float(opts.get("exclude_below", 0.0))
    excluded = (sizes < share * n) & (sizes > 0) if share > 0 else np.zeros(G, dtype=bool)
    eligible = (sizes >= opts.min_group_size) & ~excluded
    mode = opts.get("compare", BETWEEN)
    loss = prop.param("loss", "square")
    details = {"rows": n, "metric": prop.metric, "groups_label": prop.groups.label or "all rows", "compare": mode,
               "min_group_size": opts.min_group_size, "confidence": opts.confidence, "output": mdef.output}
    if mdef.quantity == "loss":
        details["loss"] = loss
    details.update(missing_rows(ctx, prop.data, prop.features))
    w1 = np.concatenate(weights) if weights else np.ones(n)
    if wcol:
        details["weight"] = wcol
    if mdef.quantity == "class_odds":
        if truth is None:
            return unknown(prop, f"{prop.metric} compares predicted classes with the true class: data set "
                                 f"'{data.name}' needs target = COLUMN", backend="data")
        target = truth                     # the true class per row (-1: no class of the model)
    value, per = _metric(mdef, g, pred, target, w1, eligible, G, mode, loss, K)
    ts = (prop.threshold,)
    details["groups"] = _table(mdef, names, g, pred, target, truth, sizes, eligible, excluded, K, model, G, loss,
                               w1, ts)
    details["overall"] = {k: x for k, x in _table(mdef, ["all rows"], np.zeros_like(g), pred, target, truth,
                                                  np.array([n]), np.array([True]), np.array([False]), K, model, 1,
                                                  loss, w1, ts)[0].items() if k not in ("group", "counted")}
    details["rates"] = ((["class_shares", "confusion_matrix"] + (["class_tprs", "class_fprs"] if mdef.quantity ==
                                                                  "class_odds" else [])) if multiclass else
                        ["mean_prediction", "mean_error", "mae", "rmse"] + (["loss"] if mdef.quantity == "loss" else []))
    small = [(names[k], int(sizes[k])) for k in range(G) if 0 < sizes[k] < opts.min_group_size and not excluded[k]]
    need = 1 if mdef.form == "output_max" else 2
    if eligible.sum() < need:
        return unknown(prop, f"fewer than {need} group{'s' if need > 1 else ''} of {prop.groups.label or 'all rows'} "
                             f"have at least {opts.min_group_size} rows (min_group_size)", backend="data",
                       seconds=time.perf_counter() - t0, details=details)
    if np.isnan(value):
        zero = [str(names[k]) for k in np.flatnonzero(eligible) if per[k] == 0]
        why = (f"{prop.metric} is 0/0 here: the mean prediction is 0 in every group ({', '.join(zero)})"
               if mdef.form == "output_ratio" and zero else f"{prop.metric} is undefined here")
        return unknown(prop, why, backend="data", seconds=time.perf_counter() - t0, details=details)
    R = resamples
    rng = np.random.default_rng(opts.seed)
    boot, per_r = [], []
    for _ in range(R):
        m = rng.multinomial(n, np.full(n, 1.0 / n)).astype(np.float64) * w1
        sizes_r = np.bincount(g, weights=m, minlength=G)
        b, p = _metric(mdef, g, pred, target, m, eligible & (sizes_r > 0), G, mode, loss, K)
        boot.append(b)
        per_r.append(np.where((sizes_r > 0).reshape((G,) + (1,) * (np.ndim(p) - 1)), p, np.nan))
    lost, lost_in = lost_replicates([np.asarray(per_r)], [per], eligible, names) if R else \
        (np.zeros(0, dtype=bool), [])
    boot = np.asarray(boot)
    rest, boot = boot[lost], boot[~np.isnan(boot) & ~lost]
    alpha = 1.0 - opts.confidence
    lo, hi = (float(np.quantile(boot, alpha / 2)), float(np.quantile(boot, 1 - alpha / 2))) if boot.size \
        else (value, value)
    lo_b, hi_b = min(lo, value), max(hi, value)
    details["bootstrap"] = R
    lo, hi = _joined(prop, mdef, (g, pred, target), bool(wcol), eligible, mode, K, lo_b, hi_b, details)
    common = dict(value=float(value), bound=(lo, hi), backend="data", seconds=time.perf_counter() - t0,
                  details=details)
    claim = f"{prop.metric} {prop.op} {_spec_number(prop.threshold)}"      # as written: 0.1234567, not 0.123457
    status = interval_status(prop.op, prop.threshold, lo_b, hi_b)      # the bootstrap's (its reasons first)
    why = undefined_output_reason(prop, per, eligible, names, status) or \
        lost_reason(prop, status, boot, rest, lost_in, alpha, value) or \
        small_undo_reason(prop, claim, small, opts.min_group_size, status, mdef.form != "output_ratio")
    if why:
        return Verdict(prop.name, prop.kind, "unknown", reason=why, **common)
    if status != "unknown" and interval_status(prop.op, prop.threshold, lo, hi) == "unknown":
        return Verdict(prop.name, prop.kind, "unknown", reason=(
            f"the threshold {_spec_number(prop.threshold)} lies inside the {_level(opts.confidence)} interval "
            f"{_interval(lo, hi, (prop.threshold,))} that bounds {prop.metric} ({details['interval']['method']}), "
            f"though not inside the bootstrap's {_interval(lo_b, hi_b, (prop.threshold,))}: a group's value on few "
            f"rows is not known to the bootstrap's precision; more data would decide it"), **common)
    if status == "holds":
        return estimated_holds(prop, claim, small, opts.min_group_size, common, opts.confidence)
    if status == "violated":
        labels = [str(x) for x in model.readout.classes] if multiclass and model.readout.classes else None
        ts = (prop.threshold,)          # the reason's numbers keep their side of it (literals.shown)
        where = _worst_groups(mdef, per, names, eligible, mode, (g, pred, w1), labels, ts) if mode == BETWEEN else \
            _farthest_from_all(mdef, per, names, eligible, details["overall"], (g, pred, w1), labels, ts)
        return Verdict(prop.name, prop.kind, "violated",
                       reason=f"{claim} fails over the whole {_level(opts.confidence)} interval{note(details)}{where}",
                       **common)
    return Verdict(prop.name, prop.kind, "unknown",
                   reason=f"the threshold {_spec_number(prop.threshold)} lies inside the {_level(opts.confidence)} confidence "
                          f"interval {_interval(lo, hi, (prop.threshold,))}; more data would decide it", **common)


def _joined(prop, mdef, rows, weighted: bool, eligible, mode: str, K, lo: float, hi: float,
            details: dict) -> tuple[float, float]:
    """The bootstrap's [lo, hi] joined with a valid interval of the metric where one is simple
    (:mod:`.estimate_bounds`); elsewhere ``details["interval"]`` names it an approximation and says why."""
    from fairspec.backends.data import estimate_bounds

    g, pred, target = rows
    box = estimate_bounds.output_interval(mdef, g, pred, target, weighted, eligible, mode, K,
                                          prop.options.confidence)
    if box is None:
        details["interval"] = {"bootstrap": [lo, hi], "method": "bootstrap (approximate)",
                               "approximate": estimate_bounds.approximate_reason(prop, weighted)}
        return lo, hi
    method = "dkw" if mdef.form == "ks_distance" else "clopper_pearson"
    details["interval"] = {"bootstrap": [lo, hi], method: [box[0], box[1]],
                           "method": f"bootstrap joined with {method} (valid, union bound)"}
    return min(lo, box[0]), max(hi, box[1])


def _one(x, ts) -> str:
    """A number of a violated metric's reason: 3 decimals, more where 3 would move it across or onto ``ts``."""
    return _shown(float(x), ts, digits=3, style="f", exact=repr(float(x)))  # read as its shortest decimal


def _two(a, b, ts) -> tuple[str, str]:
    """Two numbers compared in a violated metric's reason (lowest and highest, a group's and all rows'):
    3 decimals, more where their printed difference or ratio would cross or meet ``ts`` (literals.shown_pair)."""
    lo, hi = sorted((float(a), float(b)))
    texts = _shown_pair(lo, hi, ts, digits=3)
    return texts if float(a) <= float(b) else texts[::-1]


def _worst_groups(mdef, per, names, eligible, mode, rows, labels, ts=()) -> str:
    """The groups a violated metric's value comes from, as a binary metric's reason names its lowest and
    highest rate: the lowest and highest group of a difference or ratio between groups, the group of
    the largest loss, the two groups whose class distributions are farthest apart, the two groups
    whose prediction ECDFs are farthest apart (KS), the lowest and highest group of the class and
    rate of multiclass equalized odds' largest gap. '' against all rows (no pair makes the value)."""
    ks = [k for k in range(len(eligible)) if eligible[k]]
    if mdef.form == "output_max":
        vals = [(per[k], k) for k in ks if not np.isnan(per[k])]
        if not vals:
            return ""
        v, k = max(vals)
        return f"; highest {names[k]} ({_one(v, ts)})"
    if mode != BETWEEN:
        return ""
    if mdef.form in ("output_difference", "output_ratio"):
        vals = [(per[k], k) for k in ks if not np.isnan(per[k])]
        if len(vals) < 2:
            return ""
        (lv, a), (hv, b) = min(vals), max(vals)
        lt, ht = _two(lv, hv, ts)
        return f"; lowest {names[a]} ({lt}), highest {names[b]} ({ht})"
    if mdef.form == "class_distance" and len(ks) >= 2:
        sh = per[ks]
        d = np.abs(sh[:, None, :] - sh[None, :, :]).sum(axis=-1) / 2.0
        if np.isnan(d).all():
            return ""
        i, j = np.unravel_index(int(np.nanargmax(d)), d.shape)
        a, b = ks[min(i, j)], ks[max(i, j)]
        return f"; farthest apart {names[a]} and {names[b]} ({_one(d[i, j], ts)})"
    if mdef.form == "class_odds" and len(ks) >= 2:
        sub = per[ks]                                   # [groups, K, (TPR, FPR)]
        with np.errstate(invalid="ignore"), __import__("warnings").catch_warnings():
            __import__("warnings").simplefilter("ignore", RuntimeWarning)
            gap = np.nanmax(sub, axis=0) - np.nanmin(sub, axis=0)
        if np.isnan(gap).all():
            return ""
        c, r = np.unravel_index(int(np.nanargmax(gap)), gap.shape)
        col = sub[:, c, r]
        a, b = int(np.nanargmin(col)), int(np.nanargmax(col))
        cls = f'"{labels[c]}"' if labels else str(int(c))
        lt, ht = _two(col[a], col[b], ts)
        return (f"; class {cls} {'TPR' if r == 0 else 'FPR'}: lowest {names[ks[a]]} ({lt}), "
                f"highest {names[ks[b]]} ({ht})")
    if mdef.form == "ks_distance" and len(ks) >= 2:
        g, pred, w = rows
        order = np.argsort(pred, kind="stable")
        gg, ww = g[order], w[order]
        last = np.append(pred[order][1:] != pred[order][:-1], True)
        curves, who = [], []
        for k in ks:                                    # the ECDFs ks_distance compares
            wk = np.where(gg == k, ww, 0.0)
            if wk.sum() > 0:
                curves.append(np.cumsum(wk)[last] / wk.sum())
                who.append(k)
        if len(curves) < 2:
            return ""
        C = np.stack(curves)
        x = int(np.argmax(C.max(axis=0) - C.min(axis=0)))
        a, b = int(np.argmin(C[:, x])), int(np.argmax(C[:, x]))
        return (f"; farthest apart {names[who[min(a, b)]]} and {names[who[max(a, b)]]} "
                f"({_one(C[b, x] - C[a, x], ts)})")
    return ""


def _farthest_from_all(mdef, per, names, eligible, overall: dict, rows, labels, ts=()) -> str:
    """A violated ``compare = to_overall`` metric: the group whose quantity is farthest from all rows' (the
    ``all rows`` line of the table), as the reason of a difference or ratio between groups names its
    lowest and highest group; '' where no group has the quantity."""
    ks = [k for k in range(len(eligible)) if eligible[k]]
    if mdef.form in ("output_difference", "output_ratio"):
        key = {"mean_prediction": "mean_prediction", "mean_error": "mean_error", "mae": "mae",
               "rmse": "rmse"}.get(mdef.quantity)
        ref = overall.get(key) if key else None
        vals = [(abs(per[k] - ref) if mdef.form == "output_difference" else
                 -min(per[k] / ref, ref / per[k]) if per[k] and ref else 0.0, k)
                for k in ks if ref is not None and not np.isnan(per[k])]
        if not vals:
            return ""
        _, k = max(vals)
        gt, rt = _two(per[k], ref, ts)
        return f"; farthest from all rows {names[k]} ({gt}; all rows {rt})"
    if mdef.form == "class_distance":
        shares = overall.get("class_share") or {}
        ref = np.array([np.nan if x is None else x for x in shares.values()], dtype=np.float64)
        d = [(float(np.abs(per[k] - ref).sum() / 2.0), k) for k in ks if not np.isnan(per[k]).any()]
        if not d or np.isnan(ref).any():
            return ""
        v, k = max(d)
        return f"; farthest from all rows {names[k]} ({_one(v, ts)})"
    if mdef.form == "class_odds":
        tpr, fpr = overall.get("class_tpr") or {}, overall.get("class_fpr") or {}
        ref = np.array([[np.nan if tpr.get(c) is None else tpr[c], np.nan if fpr.get(c) is None else fpr[c]]
                        for c in tpr], dtype=np.float64)
        if ref.size == 0:
            return ""
        best = None
        for k in ks:
            gap = np.abs(per[k] - ref)
            if np.isnan(gap).all():
                continue
            c, r = np.unravel_index(int(np.nanargmax(gap)), gap.shape)
            if best is None or gap[c, r] > best[0]:
                best = (float(gap[c, r]), k, int(c), int(r))
        if best is None:
            return ""
        v, k, c, r = best
        cls = f'"{labels[c]}"' if labels else str(c)
        gt, rt = _two(per[k][c, r], ref[c, r], ts)
        return f"; class {cls} {'TPR' if r == 0 else 'FPR'}: farthest from all rows {names[k]} ({gt}; all rows {rt})"
    if mdef.form == "ks_distance":
        from fairspec.analyses.output_metrics import ks_distance

        g, pred, w = rows
        d = [(ks_distance(g, pred, w, [k], "to_overall"), k) for k in ks]
        d = [x for x in d if not np.isnan(x[0])]
        if not d:
            return ""
        v, k = max(d)
        return f"; farthest from all rows {names[k]} ({_one(v, ts)})"
    return ""


def _metric(mdef, g, pred, target, w, eligible, G, mode, loss, K):
    from fairspec.analyses.output_metrics import metric_from_rows

    return metric_from_rows(mdef, g, pred, target, w, eligible, G, mode, loss, K)


def _table(mdef, names, g, pred, target, truth, sizes, eligible, excluded, K, model, G, loss, w, ts=()) -> list[dict]:
    """Per group: rows, and what the metric compares (class shares; mean prediction, mean error,
    MAE, RMSE); a multiclass model's confusion matrix (rows: true class, columns: predicted) when
    the data has a target. The shares' and odds' texts print each number on its side of the claim's
    ``ts`` (:func:`_one`: 0.10004 against ``<= 0.1`` read 0.100)."""
    from fairspec.analyses.output_metrics import class_shares, group_means

    out = []
    if mdef.output == "multiclass":
        shares, _ = class_shares(g, pred, w, G, K)
        labels = [str(x) for x in model.readout.classes] if model.readout.classes else [str(k) for k in range(K)]
        for k, name in enumerate(names):
            r = {"group": name, "rows": int(sizes[k]), "counted": bool(eligible[k]),
                 "class_share": {labels[j]: (None if np.isnan(shares[k, j]) else float(shares[k, j]))
                                 for j in range(K)}}
            r["class_shares"] = ", ".join(f"{labels[j]} {_one(shares[k, j], ts)}" for j in range(K)) \
                if sizes[k] else None
            if mdef.quantity == "class_odds" and truth is not None:
                from fairspec.analyses.output_metrics import class_odds

                odds, _ = class_odds(g, pred, truth, w, G, K)
                r["class_tpr"] = {labels[j]: (None if np.isnan(odds[k, j, 0]) else float(odds[k, j, 0]))
                                  for j in range(K)}
                r["class_fpr"] = {labels[j]: (None if np.isnan(odds[k, j, 1]) else float(odds[k, j, 1]))
                                  for j in range(K)}
                for key, col in (("class_tprs", 0), ("class_fprs", 1)):
                    r[key] = ", ".join(f"{labels[j]} {'-' if np.isnan(odds[k, j, col]) else _one(odds[k, j, col], ts)}"
                                       for j in range(K)) if sizes[k] else None
            if truth is not None:
                sel = (g == k) & (truth >= 0)
                cm = np.bincount(truth[sel] * K + pred[sel], minlength=K * K).reshape(K, K)   # rows, unweighted
                r["confusion"] = {"classes": labels, "matrix": cm.tolist()}
                r["confusion_matrix"] = str(cm.tolist())
            if excluded[k]:
                r["excluded"] = True
            out.append(r)
        return out
    means, _ = group_means(g, pred, w, G)
    stats = {"mean_prediction": means}
    if target is not None:
        err = pred - target
        stats["mean_error"] = group_means(g, err, w, G)[0]
        stats["mae"] = group_means(g, np.abs(err), w, G)[0]
        stats["rmse"] = np.sqrt(group_means(g, err * err, w, G)[0])
        if mdef.quantity == "loss":
            stats["loss"] = group_means(g, np.abs(err) if loss == "absolute" else err * err, w, G)[0]
    for k, name in enumerate(names):
        r = {"group": name, "rows": int(sizes[k]), "counted": bool(eligible[k])}
        for key, v in stats.items():
            r[key] = None if np.isnan(v[k]) else float(v[k])
        if excluded[k]:
            r["excluded"] = True
        out.append(r)
    return out
