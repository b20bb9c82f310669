"""Property blocks, the group metrics (Justicia, FVGM): ``disparate_impact(m, groups sex x race) >= 0.8``
and the other data metrics of fairspec.analyses.group_rates, with their parameters, data or distribution;
FVGM's fairness influence functions ``influence(m, groups sex, distribution d, metric = ..., subsets = [...])``."""

from __future__ import annotations

from fairspec import ir
from fairspec.analyses.group_rates import METRICS as DATA_METRICS, uses_label
from fairspec.sema.exprs import did_you_mean
from fairspec.sema.options import parse_options
from fairspec.sema.property_args import (_check_args, _check_distribution_use, _classifier_reads, _dataset,
                                         _distribution, _feature_names, _model_of, _number, _require_binary,
                                         _require_decision, _resolve, _subject, claim_range, resolve_groups)
from fairspec.syntax import ast, literals
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly


METRICS = {
    **{m.name: m.text for m in DATA_METRICS.values()},
    "path_specific": "path-specific causal effect of the group through the mediators",
    "influence": "fairness influence (FVGM): the largest |FIF(S)| = |Q(D) - Q(D_-S)| over feature subsets S, "
                 "where D_-S makes S uniform and independent and Q is statistical parity or disparate impact",
}
# the metrics whose influence ``influence(..., metric = ...)`` measures (the first is the default)
INFLUENCE_METRICS = ("statistical_parity", "disparate_impact")


def _metric(ck, node, name, env, call, op, rhs, stmts):
    if op is None:
        ck.fail("FS501", f"{call.fn.id}(...) must be compared with a threshold, e.g. >= 0.8", call.span)
    fn = call.fn.id
    mdef = DATA_METRICS.get(fn)
    _check_args(ck, call, {"groups", "data", "around", "distribution", "mediators", "alpha", "bins", "rate",
                           "class", "threshold", "loss"}, 1)
    model, fs = _subject(ck, call.positional()[0], env)
    g = call.keyword("groups")
    if g is None and not (mdef and mdef.groups_optional):
        ck.fail("FS501", f"{fn}(...) needs the groups it compares: groups sex x race", call.span)
    # measured on data (no distribution): the data backend materialises only the occupied cells
    on_data = call.keyword("distribution") is None
    groups = resolve_groups(ck, g.value, env, fs, enumerated=not on_data) if g is not None else ir.Groups(())
    threshold = _number(ck, rhs, env, "the threshold")
    data = dist = None
    d = call.keyword("distribution")
    if d is not None:
        if model is None or model.format == "predictions":
            ck.fail("FS501", "a distribution is evaluated through a model; logged decisions and labels are measured "
                             "on their data set", d.span)
        if mdef is not None and not mdef.distribution:
            ck.fail("FS502", f"{fn} is measured on data rows; over a distribution the metrics are "
                             f"{', '.join(m for m, x in DATA_METRICS.items() if x.distribution)} and path_specific",
                    d.span, hint="drop distribution = ... to measure it on the data set")
        dist = _distribution(ck, d.value, env, name)
    dd = call.keyword("data") or call.keyword("around")
    if dd is not None:
        data = _dataset(ck, dd.value, env, fs).name
    if data is None and dist is None:
        if fs.data is None:
            ck.fail("FS501", f"{fn}(...) needs data: declare 'features {fs.name} from DATA' or pass data = DATA",
                    call.span)
        data = fs.data
    if model is not None and model.format == "predictions" and data != model.data:
        ck.fail("FS501", f"model '{model.name}' is the logged predictions of data set '{model.data}', so it is "
                         f"measured on '{model.data}', not '{data}'", (dd or call).span)
    if model is None and data != fs.data:
        ck.fail("FS501", "a data set measured itself is its own data: drop data = ...", (dd or call).span)
    mediators = ()
    med = call.keyword("mediators")
    if fn == "path_specific":
        if med is None:
            ck.fail("FS501", "path_specific(...) needs its mediators: mediators {feature, ...}", call.span)
        mediators = _feature_names(ck, med.value, env, fs, "mediators")
    elif med is not None:
        ck.fail("FS208", "mediators apply to path_specific(...) only", med.span)
    params = _metric_params(ck, call, env, fn, model)
    params += _output_params(ck, call, env, fn, model, mdef)
    pd = dict(params)
    if model is not None and mdef is not None and not mdef.output and "class" not in pd and "threshold" not in pd:
        _require_binary(ck, model, f"{fn}(...)", call.span)
    if model is not None and mdef is not None and not mdef.output and "threshold" not in pd and \
            mdef.form not in ("calibration", "ks_distance"):       # those two read scores, not decisions
        _require_decision(ck, model, f"{fn}(...)", call.span)
    if dist is not None and ("class" in pd or "threshold" in pd):
        ck.sink.add("FS504", f"{fn}(..., {'class' if 'class' in pd else 'threshold'} = ...) is measured on data rows; "
                             f"over a distribution check reports it unknown (the distribution backends read a "
                             f"binary classifier only)", d.span)
    if dist is not None:
        _check_distribution_use(ck, d.value, model, fs, ck.distributions[dist], groups)
    target_ok = ck.datasets[data].target is not None if data is not None else False
    if mdef is not None and mdef.output and data is not None and mdef.needs_label and not target_ok:
        ck.fail("FS501", f"{fn} compares predictions with the true value, so data set '{data}' needs "
                         f"target = COLUMN (the column of the true value)", call.span)
    if mdef is not None and not mdef.output and data is not None and uses_label(fn) \
            and ck.datasets[data].label is None and not (target_ok and ("class" in pd or "threshold" in pd)):
        ck.fail("FS501", f"{fn} compares decisions with the true label, so data set '{data}' needs a label = ... "
                         f"expression", call.span)
    if mdef is not None and not mdef.output and data is not None and uses_label(fn) and "class" in pd \
            and not target_ok and ck.datasets[data].label is not None:
        _label_of_class(ck, call, fn, model, pd["class"], data)
    if model is not None and data is not None and target_ok and model.classes is not None and \
            ("class" in pd or (mdef is not None and mdef.output == "multiclass")):
        _target_case(ck, call, model, data)
    if mdef is not None and not mdef.output and data is not None and uses_label(fn) and "threshold" in pd \
            and not target_ok and ck.datasets[data].label is not None:
        _label_of_threshold(ck, call, fn, pd["threshold"], data)
    if mdef is not None and model is None and (mdef.rates != ("selection_rate",) and mdef.rates != ("base_rate",)):
        ck.fail("FS501", f"{fn} compares a model's decisions with the labels; a data set alone has only its "
                         f"labels", call.span,
                hint="on a data set: disparate_impact, statistical_parity, base_rate_ratio, base_rate_difference")
    if mdef is not None and mdef.form == "ratio":
        claim_range(ck, op, threshold, 0.0, 1.0, rhs.span, f"{fn} is a ratio in [0, 1] (the lowest over the highest)",
                    never_hint="a ratio of 1 is parity: write >= 1 for it, or a bound below 1 such as >= 0.8",
                    undefined="the ratio is undefined where no group has a positive rate (on data check then "
                              "reports unknown)")
    else:
        _difference_range(ck, fn, mdef, op, threshold, rhs.span)
    options = parse_options(ck, stmts, env, "group_metric")
    if dist is not None and any(options.get(k) is not None for k in ("compare", "weight", "exclude_below")):
        ck.fail("FS502", "compare, weight and exclude_below apply to metrics measured on data rows, not over a "
                         "distribution", d.span)
    w = options.get("weight")
    if w is not None:
        cols = ck.data_columns.get(data, {})
        at = next((st.args[1].span for st in reversed(stmts) if st.kind == "option" and st.args[0].id == "weight"),
                  node.name.span)  # the weight = COLUMN option's value
        if w not in cols:
            ck.fail("FS207", f"data set '{data}' has no weight column '{w}'", at, hint=did_you_mean(w, cols))
        if cols[w] != "num":
            ck.fail("FS301", f"the weight column '{w}' of '{data}' does not hold numbers", at,
                    hint=f"weight = COLUMN names a column of '{data}' that holds each row's sample weight, a number")
    return ir.GroupMetric(name, "group_metric", options, node.span, metric=fn, model=model.name if model else "",
                          features=fs.name, groups=groups, data=data, distribution=dist, mediators=mediators,
                          op=op, threshold=threshold, params=params)


# the group metrics that are no ratio and whose range the language states exactly, by form: (low, high, what
# the metric is); the others (the inequality indices, mean_prediction_ratio over predictions that may be
# negative) stay unchecked.  Sample weights are >= 0, so every rate is in [0, 1].
_RATE_DIFF = "an absolute difference of rates, in [0, 1]"
_RANGES = {
    "difference": (0.0, 1.0, _RATE_DIFF),
    "average": (0.0, 1.0, "the mean of two absolute differences of rates, in [0, 1]"),
    "max_rate": (0.0, 1.0, "a rate, in [0, 1]"),
    "min_rate": (0.0, 1.0, "a rate, in [0, 1]"),
    "class_distance": (0.0, 1.0, "a total variation distance, in [0, 1]"),
    "class_odds": (0.0, 1.0, _RATE_DIFF),
    "ks_distance": (0.0, 1.0, "a Kolmogorov-Smirnov distance, in [0, 1]"),
    "output_difference": (0.0, None, "an absolute difference, never below 0"),
    "output_max": (0.0, None, "a mean loss, never below 0"),
    "calibration": (0.0, None, "an absolute difference of calibration errors, never below 0"),
}


def _difference_range(ck, fn: str, mdef, op: str, threshold: float, span) -> None:
    """FS507 / FS508 (claim_range) for a difference, a rate or a distance whose range is exact: an absolute
    difference of rates is in [0, 1] (statistical_parity <= 1 always holds, < 0 never does)."""
    rng = (0.0, 1.0, _RATE_DIFF) if fn == "path_specific" else _RANGES.get(mdef.form) if mdef is not None else None
    if rng is None:
        return
    lo, hi, what = rng
    claim_range(ck, op, threshold, lo, hi, span, f"{fn} is {what}",
                never_hint=None if hi is None else f"{fn} is at most {_spec_number(hi)}: check the threshold and the direction "
                                                   f"of the comparison",
                below_hint="nothing lies below 0: write <= 0 for no gap at all, or < eps with eps > 0"
                if "rate," not in what and "loss" not in what else None,
                undefined=f"{fn} is undefined where no group has a row it counts (check then reports unknown)")


def _label_of_class(ck, call, fn, model, c, data):
    """FS419 / FS429: ``class = c`` of a metric comparing decisions with the truth, on a data set
    without ``target``: its ``label`` is read as "the true class is c". A label ``COLUMN == v`` of
    another class is an error (a metric of class "mid" judged against "is high"); a label that names
    no class of the model (a Boolean column, a range, a value no class has) a warning."""
    from fairspec.sema.outputs import class_shown, label_class

    at = call.keyword("class").span
    cs = class_shown(model, c)
    read = label_class(model, ck.datasets[data].label)
    if read is not None and read[2] == c:
        return
    if read is not None and read[2] is not None:
        col, v, k = read
        ck.fail("FS419", f"{fn}(..., class = {cs}) compares decisions with the truth 'the true class is {cs}', "
                         f"but data set '{data}' has no target, so its label {col} == {v} (the truth of class "
                         f"{class_shown(model, k)}) would be read as that truth", at,
                hint=f"name the true class column with the option target = {col} of data set '{data}' (each "
                     f"class's truth is then read from it), or write label = {col} == {cs} if class {cs} is the "
                     f"truth you mean")
    what = f"{read[0]} == {read[1]}, which is no class of '{model.name}'," if read is not None else \
        "condition, which names no class of the model,"
    ck.sink.add("FS429", f"{fn}(..., class = {cs}) compares decisions with the truth 'the true class is {cs}'; "
                         f"data set '{data}' has no target, so its label {what} is read as that truth", at,
                hint=f"name the true class column with the option target = COLUMN of data set '{data}', or write "
                     f"the label as COLUMN == {cs}; if the label is that truth, say so with # fairspec: ignore[FS429]")


def _target_case(ck, call, model, data: str) -> None:
    """FS432: the target column holds, in the rows lint read, a value that is a class of the model in another
    case only ("HI" where the class is "hi"): matched as text, such a row's truth is no class (check
    reports the metric unknown for it, fairspec.backends.data.outputs.true_classes)."""
    d = ck.datasets[data]
    classes = [str(c) for c in model.classes]
    if all(isinstance(c, bool) or type(c).__name__ == "bool_" for c in model.classes):
        classes += ["1", "0"]
    folded = {c.lower(): c for c in classes}
    for v in sorted(ck.data_values.get(data, {}).get(d.target, ())):
        if v not in classes and v.lower() in folded:
            ck.fail("FS432", f"column '{d.target}' of '{data}' (its target) holds {literals.string(v)} in the rows "
                             f"lint read, where the class of '{model.name}' is {literals.string(folded[v.lower()])}: "
                             f"text is compared as written, so those rows' truth would be no class",
                    call.span, hint=f"write the target's values as the model's classes ({literals.string(folded[v.lower()])})")


_MIRROR = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def _label_of_threshold(ck, call, fn, t: float, data: str) -> None:
    """FS436 (warning): ``threshold = t`` of a regression's metric that compares decisions with the truth,
    on a data set without ``target``: its decision is "the value is >= t" and its truth the ``label``;
    a label cutting a column elsewhere (salary >= 60000 beside threshold = 50000), or the other way
    (salary < 60000), or with the other tie (salary > 50000) compares two different cuts. It may be meant
    (a decision cut below the truth's): a warning, acknowledged with an ignore comment."""
    label = ck.datasets[data].label
    if not isinstance(label, ir.Cmp) or label.op not in ("<", "<=", ">", ">="):
        return
    col, lit, op = label.left, label.right, label.op
    if isinstance(col, ir.Const):
        col, lit, op = lit, col, _MIRROR[op]
    if not (isinstance(col, ir.ColumnRef) and isinstance(lit, ir.Const)) or isinstance(lit.value, (bool, str)):
        return
    v = float(lit.value)
    if op == ">=" and v == float(t):
        return
    written = f"{col.column} {op} {_spec_number(v)}"
    why = ("the other way round: the label is true below the cut, the decision above it" if op in ("<", "<=") else
           f"a cut at {_spec_number(v)}, not at the threshold {_spec_number(float(t))}" if v != float(t) else
           f"the same cut with the other tie: a value of exactly {_spec_number(v)} is a positive decision and a negative label")
    ck.sink.add("FS436", f"{fn}(..., threshold = {_spec_number(float(t))}) compares the decision 'the value is >= {_spec_number(float(t))}' "
                         f"with the label {written} of data set '{data}', {why}", call.keyword("threshold").span,
                hint=f"name the true value's column with the option target = {col.column} of data set '{data}' "
                     f"(its truth is then the value >= the threshold), or write the label as {col.column} >= "
                     f"{_spec_number(float(t))}; if the two cuts are meant, say so with # fairspec: ignore[FS436]")


def _output_params(ck, call, env, fn, model, mdef):
    """issue 25: class = c (a binary metric of a multiclass model, class c against the rest),
    threshold = t (a binary metric of a regression, positive where value >= t), loss = square |
    absolute (bounded_group_loss); and the output metrics' model kinds (FS415)."""
    from fairspec.sema.outputs import class_arg, describe_kind, undeclared_value

    out = []
    binary = mdef is not None and not mdef.output
    for key in ("class", "threshold", "loss"):
        a = call.keyword(key)
        if a is None:
            continue
        if key in ("class", "threshold") and (not binary or model is None or model.format in ("rule", "predictions")):
            ck.fail("FS208", f"{key} = ... applies to a binary group metric of a model file, not to {fn}(...)"
                             + ("" if model is not None else " of a data set"), a.name.span)
        if key == "loss" and fn != "bounded_group_loss":
            ck.fail("FS208", f"loss = ... applies to bounded_group_loss(...), not to {fn}(...)", a.name.span)
        v = _resolve(a.value, env)
        if key == "class":
            if model.is_regression:
                ck.fail("FS415", f"class = ... names a class, but '{model.name}' is a regression model", a.span,
                        hint="threshold its value instead: threshold = t (positive where value >= t)")
            out.append(("class", class_arg(ck, model, v)))
        elif key == "threshold":
            if (model.task is not None or undeclared_value(model)) and not model.is_regression:
                ck.fail("FS415", f"threshold = ... reads a regression's value, but '{model.name}' is "
                                 f"{describe_kind(model)}", a.span,
                        hint="a multiclass model: class = c (that class against the rest); a one-column ONNX or "
                             "torch regression says score = value in its declaration")
            out.append(("threshold", _number(ck, v, env, "the threshold")))
        else:
            if not (isinstance(v, ast.Name) and v.id in ("square", "absolute")):
                ck.fail("FS307", "loss = square | absolute", v.span)
            out.append(("loss", v.id))
    if "class" in dict(out) and "threshold" in dict(out):
        ck.fail("FS501", "class = ... and threshold = ... are two readings of one model: give one", call.span)
    if mdef is not None and mdef.output and model is not None:
        if model.format in ("rule", "predictions"):
            ck.fail("FS501", f"{fn} reads a model file's {'class' if mdef.output == 'multiclass' else 'value'}",
                    call.span)
        if mdef.output == "regression" and (model.task is not None or undeclared_value(model)) \
                and not model.is_regression:
            ck.fail("FS415", f"{fn} reads a regression's value, but '{model.name}' is {describe_kind(model)}",
                    call.span, hint="a classifier's metrics: the binary metrics, with class = c for a multiclass model")
        if mdef.output == "multiclass" and model.is_regression:
            ck.fail("FS415", f"{fn} reads a classifier's predicted class, but '{model.name}' is a regression model",
                    call.span, hint="a regression's metrics: mean_prediction_difference, ks_distance, ...")
    if fn == "calibration_gap" and model is not None and model.no_probability:
        from fairspec.sema.outputs import no_probability_hint

        ck.fail("FS415", f"calibration_gap reads class probabilities, but {model.no_probability}", call.span,
                hint=no_probability_hint(model))
    if mdef is not None and mdef.output and model is None:
        ck.fail("FS501", f"{fn} reads a model's {'class' if mdef.output == 'multiclass' else 'value'}; a data set "
                         f"alone has only its labels", call.span)
    return tuple(out)


def _metric_params(ck, call, env, fn, model):
    """alpha (generalised entropy), bins (calibration), rate = selection | scoring (impact ratio)."""
    out = []
    for key, ok in (("alpha", fn == "generalized_entropy_index" or fn == "between_group_generalized_entropy_index"),
                    ("bins", fn == "calibration_gap"), ("rate", fn == "impact_ratio")):
        a = call.keyword(key)
        if a is None:
            continue
        if not ok:
            ck.fail("FS208", f"{key} does not apply to {fn}(...)", a.name.span)
        if key == "rate":
            v = _resolve(a.value, env)
            if not (isinstance(v, ast.Name) and v.id in ("selection", "scoring")):
                ck.fail("FS307", "rate = selection (the decisions) | scoring (a score above the median score)",
                        a.value.span)
            out.append((key, v.id))
            continue
        x = _number(ck, a.value, env, key)
        if key == "alpha" and x <= 0:
            ck.fail("FS307", "alpha must be > 0 (alpha = 1 is the Theil index)", a.value.span)
        if key == "bins" and (x != int(x) or x < 2):
            ck.fail("FS307", "bins must be a whole number >= 2", a.value.span)
        out.append((key, int(x) if key == "bins" else x))
    if DATA_METRICS.get(fn) is not None and (DATA_METRICS[fn].needs_score or dict(out).get("rate") == "scoring"):
        if model is None or model.format == "rule" or (model.format == "predictions" and model.score_column is None):
            what = ("a data set" if model is None else "a rule" if model.format == "rule" else
                    "a column of logged decisions")
            ck.fail("FS501", f"{fn} needs a score, and its subject is {what}", call.span,
                    hint='give a model file, or predictions(DATA, score = "column", threshold = ...)')
    return tuple(out)


def _influence(ck, node, name, env, call, op, rhs, stmts):
    """FVGM's fairness influence functions: FIF(S) = Q(D) - Q(D_-S), where D_-S gives the
    classifier independent uniform values for the features S; the claim bounds max_S |FIF(S)|."""
    if op is None:
        ck.fail("FS501", "influence(...) must be compared with a threshold, e.g. <= 0.05", call.span)
    d = call.keyword("distribution")
    if d is None:
        ck.fail("FS501", "influence(...) needs a distribution: the influence of features S compares the metric "
                         "over D with the metric over D_-S, where S is redrawn uniformly, and data rows alone "
                         "cannot be redrawn", call.span,
                hint="pass distribution = bayes(DATA) (or independent(DATA), conditional(DATA), or a declared "
                     "distribution d { p(...) = ... })")
    _check_args(ck, call, {"groups", "distribution", "metric", "subsets"}, 1)
    model = _model_of(ck, call.positional()[0], env)
    fs = ck.feature_sets[model.features]
    g = call.keyword("groups")
    if g is None:
        ck.fail("FS501", "influence(...) needs the groups its metric compares: groups sex x race", call.span)
    groups = resolve_groups(ck, g.value, env, fs)
    quantity = INFLUENCE_METRICS[0]
    m = call.keyword("metric")
    if m is not None:
        v = _resolve(m.value, env)
        if not isinstance(v, ast.Name) or v.id not in INFLUENCE_METRICS:
            shown = f"'{v.id}'" if isinstance(v, ast.Name) else "this value"
            close = did_you_mean(v.id, INFLUENCE_METRICS) if isinstance(v, ast.Name) else None
            hint = f"metrics: {', '.join(INFLUENCE_METRICS)} (the default is {INFLUENCE_METRICS[0]})"
            ck.fail("FS307", f"influence(...) cannot measure the metric {shown}", v.span,
                    hint=f"{close} {hint}" if close else hint)
        quantity = v.id
    dist = _distribution(ck, d.value, env, name)
    ir_dist = ck.distributions[dist]
    if ir_dist.kind == "empirical":
        ck.fail("FS501", f"influence(...) redraws features, so it needs a distribution with probabilities; the "
                         f"empirical distribution of '{ir_dist.data}' is the data rows themselves", d.value.span,
                hint=f"estimate one: distribution = bayes({ir_dist.data}) (or independent({ir_dist.data}), "
                     f"conditional({ir_dist.data}))")
    _check_distribution_use(ck, d.value, model, fs, ir_dist, groups)
    subsets = _influence_subsets(ck, call.keyword("subsets"), env, model, fs, groups)
    threshold = _number(ck, rhs, env, "the threshold")
    claim_range(ck, op, threshold, 0.0, None, rhs.span, f"an influence is an absolute change of {quantity}, "
                "never below 0", undefined=f"where {quantity} is undefined (no group has a positive decision, or a "
                                          f"group has probability 0) check reports unknown")
    options = parse_options(ck, stmts, env, "group_metric")
    return ir.GroupMetric(name, "group_metric", options, node.span, metric="influence", model=model.name,
                          features=fs.name, groups=groups, data=None, distribution=dist, op=op,
                          threshold=threshold, influence_metric=quantity, subsets=subsets)


def _influence_subsets(ck, arg, env, model: ir.Model, fs: ir.FeatureSet, groups: ir.Groups):
    """``subsets = [{age}, {occupation, education_num}]``: non-empty sets of non-protected
    features the classifier reads; () when not given (each feature it reads, alone)."""
    if arg is None:
        return ()
    v = _resolve(arg.value, env)
    if not isinstance(v, ast.ListLit):
        ck.fail("FS301", "subsets is a list of feature sets: subsets = [{age}, {occupation, education_num}]", v.span)
    if not v.items:
        ck.fail("FS501", "subsets = [] names no feature subset", v.span,
                hint="list at least one subset, or drop subsets = ... to measure each feature the classifier "
                     "reads, alone")
    reads = _classifier_reads(ck, model, fs)
    protected = {f.name for f in fs.features if f.protected} | {a.feature for a in groups.atoms if a.feature}
    out = []
    for item in v.items:
        item = _resolve(item, env)
        if isinstance(item, ast.SetLit) and not item.items:
            ck.fail("FS501", "an empty subset makes no feature uniform, so its influence is 0 by definition",
                    item.span, hint="name at least one feature in each subset: {age}")
        if not isinstance(item, (ast.SetLit, ast.Name)):
            ck.fail("FS301", "each subset is a set of feature names: {age} or {occupation, education_num}", item.span)
        names = _feature_names(ck, item, env, fs, "a subset")
        elems = item.items if isinstance(item, ast.SetLit) else (item,)
        for n, e in zip(names, elems):
            if n in protected:
                ck.fail("FS501", f"'{n}' is a protected feature; the influence subsets name the other features",
                        _resolve(e, env).span,
                        hint="the groups are chosen, not drawn, so a protected feature cannot be made uniform; "
                             "drop it from the subset")
            if reads is not None and n not in reads:
                ck.fail("FS501", f"{model.name} does not read '{n}', so making it uniform cannot change the metric",
                        _resolve(e, env).span,
                        hint=f"features {model.name} reads: {', '.join(r for r in reads if r not in protected)}")
        if len(set(names)) != len(names):
            ck.fail("FS501", "a feature appears twice in this subset", item.span)
        key = tuple(names)
        if any(set(key) == set(o) for o in out):
            ck.fail("FS501", "this subset is listed twice", item.span)
        out.append(key)
    return tuple(out)
