"""Property blocks: recognise the five kinds, check them, build their IR.

The kinds, in the papers' terms:

* individual fairness (Fairify, HyFair 2-fairness): ``forall x, x' : F``,
  ``require x.* == x'.* except {...}``, ``ensure label(m(x)) == label(m(x'))``;
* k-discrimination (HyFair): ``k_discrimination(m, over {...}, eps = 0.05) < k``;
* PBA neighbourhoods: ``pba(m, flip sex, around data, delta {...})``;
* group metrics (Justicia, FVGM): ``disparate_impact(m, groups sex x race) >= 0.8``;
  FVGM's fairness influence functions ``influence(m, groups sex, distribution d,
  metric = statistical_parity, subsets = [{age}, {a, b}]) <= 0.05``;
* repair goals (FairRepair): ``repair NAME for model { goal ... bound ... write ... }``.
"""

from __future__ import annotations

from fairspec import ir
from fairspec.analyses.group_rates import COMPARE_MODES, METRICS as DATA_METRICS, uses_label
from fairspec.planning import BACKENDS, OPTIONS, plan
from fairspec.sema.exprs import LowerError, Scope, did_you_mean
from fairspec.syntax import ast

METRICS = {
    **{m.name: m.text for m in DATA_METRICS.values()},
    "path_specific": "path-specific causal effect of the group through the mediators",
    "influence": "fairness influence (FVGM): the largest |FIF(S)| = |Q(D) - Q(D_-S)| over feature subsets S, "
                 "where D_-S makes S uniform and independent and Q is statistical parity or disparate impact",
}
# the metrics whose influence ``influence(..., metric = ...)`` measures (the first is the default)
INFLUENCE_METRICS = ("statistical_parity", "disparate_impact")
PROPERTY_FUNCTIONS = set(METRICS) | {"k_discrimination", "pba"}
COMPARISONS = {"<", "<=", ">", ">="}


def _resolve(e, env):
    """A policy parameter's argument; the argument is written in the apply site's scope, so a
    name there is never looked up again (apply p(m, sex = sex) binds sex to the feature sex)."""
    if isinstance(e, ast.Name) and e.id in env:
        return env[e.id]
    return e


def _number(ck, e, env, what: str) -> float:
    e = _resolve(e, env)
    if isinstance(e, ast.Neg):
        return -_number(ck, e.arg, env, what)
    if isinstance(e, ast.Num):
        return float(e.value)
    ck.fail("FS307", f"{what} must be a number", e.span)


# ------------------------------------------------------------------ options

def parse_options(ck, stmts, env, kind: str) -> ir.Options:
    """The property's options, each value checked against its type and range (FS307) and each
    name against the options the language knows (FS208).  Whether the chosen backend takes
    them is checked once the property is planned (:func:`check_plan`)."""
    o: dict = {}
    for st in stmts:
        if st.kind == "using":
            b = st.args[0]
            if b.id not in BACKENDS:
                ck.fail("FS503", f"unknown backend '{b.id}'", b.span, hint=did_you_mean(b.id, BACKENDS)
                        or f"backends: {', '.join(BACKENDS)}")
            o["backend"] = b.id
        elif st.kind in ("search", "explain"):
            name = st.args[0]
            err = OPTIONS[st.kind].check(name.id)
            if err:
                what = "search strategy" if st.kind == "search" else "explanation"
                ck.fail("FS307", f"unknown {what} '{name.id}'", name.span,
                        hint=f"{st.kind} {OPTIONS[st.kind].range_text}: {OPTIONS[st.kind].doc}")
            o[st.kind] = name.id
            if st.kind == "search" and len(st.args) > 1:
                o["search_budget"] = _checked(ck, OPTIONS["timeout"], _seconds(ck, st.args[1], env), st.args[1])
        elif st.kind == "option":
            key, v = st.args[0].id, _resolve(st.args[1], env)
            opt = OPTIONS.get(key)
            if opt is None or opt.type == "statement":
                hint = did_you_mean(key, OPTIONS) or f"options are {', '.join(sorted(_VALUE_OPTIONS))}"
                if opt is not None:
                    hint = f"write it as a statement: {key} {opt.choices[0]}"
                ck.fail("FS208", f"unknown option '{key}'", st.args[0].span, hint=hint)
            if opt.type == "duration":
                value = _seconds(ck, v, env)
            elif opt.type in ("int", "real"):
                value = _number(ck, v, env, key)
                if opt.type == "int" and not float(value).is_integer():
                    ck.fail("FS307", f"{key} must be a whole number ({opt.range_text})", v.span)
            elif opt.type == "choice":
                if not isinstance(v, ast.Name):
                    ck.fail("FS307", f"{key} = {opt.range_text}", v.span)
                value = v.id
            elif opt.type == "column":
                if not isinstance(v, (ast.Name, ast.Str)):
                    ck.fail("FS307", f"{key} = COLUMN: {opt.doc}", v.span)
                value = v.id if isinstance(v, ast.Name) else v.value
            else:
                if not isinstance(v, ast.Str):
                    ck.fail("FS307", f"{key} is {opt.range_text}", v.span)
                value = v.value
            value = _checked(ck, opt, value, v)
            if opt.type == "path":
                _output_path(ck, key, value, v)
            o[key] = int(value) if opt.type == "int" else value
    return ir.Options(**o)


_VALUE_OPTIONS = [n for n, o in OPTIONS.items() if o.type != "statement"]


def _output_path(ck, key: str, text: str, node) -> None:
    """A path option (``chart = "FILE"``) is a file fairspec writes: relative to the spec's folder,
    no '..', inside the project, an image suffix, a regular file (or none yet) in a folder that
    exists -- checked now, before any work (fairspec.files.check_spec_output)."""
    from fairspec.files import CHART_SUFFIXES, OutsideRoot, PathError, check_spec_output

    try:
        check_spec_output(text, ck.root.parent, ck.roots, f"{key} file", suffixes=CHART_SUFFIXES)
    except OutsideRoot as e:
        ck.fail("FS212", str(e), node.span)
    except PathError as e:
        ck.fail("FS307", str(e), node.span, hint=f"{key} names an image file: {', '.join(CHART_SUFFIXES)}")


def _checked(ck, opt, value, node):
    err = opt.check(value)
    if err:
        if opt.type == "choice":
            ck.fail("FS307", f"{opt.name} = {opt.range_text}", node.span, hint=opt.doc)
        ck.fail("FS307", err, node.span, hint=opt.doc)
    return value


def check_plan(ck, prop, stmts, spec) -> bool:
    """Plan ``prop`` and check its options against the chosen backend's schema: FS502 when
    ``using`` names a backend that cannot decide it, FS208 for an option that backend does
    not take (the accepted names in the hint).  False when an error was reported."""
    p = plan(prop, spec)
    if p.error:
        using = next(s for s in stmts if s.kind == "using")
        ck.sink.add("FS502", p.error, using.args[0].span, hint=p.hint)
        return False
    caps = [BACKENDS[b].capability(prop.kind, "distribution" if "distribution" in p.needs else None)
            for b in (p.backend,) if b] or [BACKENDS[b].capability(prop.kind, "distribution") for b in p.candidates]
    if not caps:
        return True
    taken = {o.name: o for c in caps for o in c.options}
    who = p.backend or " / ".join(p.candidates)
    ok = True
    for st in stmts:
        if st.kind == "option" or st.kind in ("search", "explain"):
            name_node = st.args[0] if st.kind == "option" else None
            key = name_node.id if name_node is not None else st.kind
            opt = taken.get(key)
            if opt is not None and opt.check(getattr(prop.options, key)):  # this backend's own range
                ck.sink.add("FS307", f"{key} = {opt.range_text} on the {who} backend", st.args[-1].span,
                            hint=opt.doc)
                ok = False
            if opt is None:
                accepted = ", ".join(sorted(taken))
                where = f"{_kind_words(prop.kind)} on the {who} backend"
                ck.sink.add("FS208", f"{'option' if name_node else 'statement'} '{key}' does not apply to "
                                     f"{where}", (name_node or st).span,
                            hint=f"{where} takes: {accepted}")
                ok = False
    return ok


def _kind_words(kind):
    return {"group_metric": "a group metric", "individual_fairness": "individual fairness",
            "k_discrimination": "k-discrimination", "pba": "pba(...)", "repair": "repair"}.get(kind, kind)


def _seconds(ck, e, env) -> float:
    e = _resolve(e, env)
    if isinstance(e, ast.Dur):
        return e.seconds
    if isinstance(e, ast.Num):
        return float(e.value)
    ck.fail("FS307", "a time budget is a duration such as 60s, 500ms or 5min", e.span)


# ------------------------------------------------------------------ shared pieces

def _model_of(ck, e, env, table_ok: bool = False) -> ir.Model:
    e = _resolve(e, env)
    if not isinstance(e, ast.Name):
        ck.fail("FS301", "expected a model name", e.span)
    if e.id not in ck.models:
        d = ck.symbols.get(e.id)
        if d is not None and isinstance(d.node, ast.DataDecl) and e.id not in ck.datasets:
            raise LowerError()  # a data set whose own declaration failed (FS212, FS404): reported once there
        if d is not None and not isinstance(d.node, ast.ModelDecl):
            ck.fail("FS301", f"'{e.id}' is not a model", e.span)
        if d is not None:
            raise LowerError()
        ck.fail("FS201", f"unknown model '{e.id}'", e.span, hint=did_you_mean(e.id, ck.models))
    m = ck.models[e.id]
    if m.format == "predictions" and not table_ok:
        ck.fail("FS502", f"model '{m.name}' is a table of logged predictions: it cannot be evaluated at new "
                         f"inputs, so only group metrics on its data set can audit it", e.span,
                hint="state group metrics, e.g. disparate_impact(m, groups sex) >= 0.8")
    if m.features is None:
        if m.format == "rule" or m.name in ck.encoded_models:
            raise LowerError()  # its rule or its encode block was already reported
        ck.fail("FS501", f"model '{m.name}' has no encode block, so its inputs are unknown", e.span,
                hint=f"declare: encode FEATURES for {m.name} {{ ... }}")
    return m


def _feature_names(ck, e, env, fs: ir.FeatureSet, what: str) -> tuple[str, ...]:
    e = _resolve(e, env)
    items = e.items if isinstance(e, (ast.SetLit, ast.ListLit)) else (e,)
    out = []
    for it in items:
        it = _resolve(it, env)
        if not isinstance(it, ast.Name):
            ck.fail("FS301", f"{what} lists feature names", it.span)
        if fs.get(it.id) is None:
            ck.fail("FS205", f"unknown feature '{it.id}' in {fs.name}", it.span,
                    hint=did_you_mean(it.id, [f.name for f in fs.features]))
        out.append(it.id)
    return tuple(out)


def resolve_groups(ck, e, env, fs: ir.FeatureSet, enumerated: bool = True) -> ir.Groups:
    """The atoms of ``groups ...``.  ``enumerated``: the backend keeps a cell for every crossed
    group (a distribution's products, repair's boxes, PBA), so more than MAX_CROSSED_GROUPS cells
    are refused (FS308); on data only the cells some row falls in exist, so no cap applies."""
    e = _resolve(e, env)
    names = e.names if isinstance(e, ast.Compound) else (e,)
    atoms = []
    for n in names:
        n = _resolve(n, env)
        if isinstance(n, ast.Compound):
            atoms.extend(resolve_groups(ck, n, env, fs, enumerated).atoms)
            continue
        if not isinstance(n, ast.Name):
            ck.fail("FS308", "a group is a feature or group name, or several joined with x", n.span)
        f = fs.get(n.id)
        if f is not None:
            if not f.is_discrete:
                ck.fail("FS308", f"'{n.id}' is numeric; split it with a group declaration, e.g. group older = {n.id} >= 40",
                        n.span)
            values = f.domain.categories
            atoms.append(ir.GroupAtom(f.name, f.name, None, tuple(values)))
        elif n.id in ck.groups:
            g = ck.groups[n.id]
            node = ck.group_decls[n.id]
            # re-lower against this property's features: the group must read features it has
            pred = ck.lower.expect_bool(node.expr, Scope("features", features=fs))
            atoms.append(ir.GroupAtom(g.name, None, pred, g.values))
        else:
            d = ck.symbols.get(n.id)
            if n.id in ck.failed_features or (d is not None and isinstance(d.node, ast.GroupDecl)):
                raise LowerError()  # declared, but its declaration failed and was reported
            ck.fail("FS205", f"unknown feature or group '{n.id}'", n.span,
                    hint=did_you_mean(n.id, [f.name for f in fs.features] + list(ck.groups)))
    seen = set()
    cells = 1
    for a in atoms:
        if a.name in seen:
            ck.fail("FS308", f"group '{a.name}' appears twice", e.span)
        seen.add(a.name)
        cells *= max(1, len(a.values))
    if enumerated and cells > MAX_CROSSED_GROUPS:  # sized before anything is counted: a cell per group
        ck.fail("FS308", f"{' x '.join(a.name for a in atoms)} cross into {cells:,} groups; at most "
                         f"{MAX_CROSSED_GROUPS:,} crossed groups are counted", e.span,
                hint="cross fewer groups, or merge categories with a group declaration (group g = x in {...})")
    return ir.Groups(tuple(atoms))


MAX_CROSSED_GROUPS = 100_000  # crossed groups (cells) a property may name: 45 boolean groups are 2^45


def _dataset(ck, e, env, fs: ir.FeatureSet | None = None) -> ir.Data:
    e = _resolve(e, env)
    if not isinstance(e, ast.Name):
        ck.fail("FS301", "expected a data set name", e.span)
    data = ck._lookup(e, ast.DataDecl, "a data set", ck.datasets)
    if fs is not None and data.name != fs.data:
        # the rows are read as the feature set: every feature needs its column in this data set
        cols = ck.data_columns.get(data.name, {})
        for f in fs.features:
            if f.column not in cols:
                ck.fail("FS207", f"data set '{data.name}' has no column '{f.column}' for feature '{f.name}' "
                                 f"of {fs.name}", e.span,
                        hint=did_you_mean(f.column, cols) or f"pass a data set with the columns of {fs.name}")
    return data


def _distribution(ck, e, env, prop_name: str) -> str:
    e = _resolve(e, env)
    if isinstance(e, ast.Name):
        if e.id in ck.distributions:
            return e.id
        if e.id in ck.datasets:  # distribution = adult: the empirical distribution of the data set
            name = f"{prop_name}.empirical"
            ck.distributions[name] = ir.Distribution(name, "empirical", e.id, span=e.span)
            return name
        ck.fail("FS201", f"unknown distribution '{e.id}'", e.span, hint=did_you_mean(e.id, ck.distributions))
    if isinstance(e, ast.Call):
        name = f"{prop_name}.distribution"
        fake = ast.DistributionDecl(e.span, ast.Name(e.span, name), e.fn, e.args, ())
        ck.inline_distribution(fake)
        return name
    ck.fail("FS301", "distribution = a declared distribution, a data set, or bayes(DATA) / independent(DATA)", e.span)


def _classifier_reads(ck, model: ir.Model, fs: ir.FeatureSet) -> list[str] | None:
    """The features a model put in Boolean form reads: a rule's features, an sklearn model's
    encoded features; None for networks (they cannot be put in Boolean form)."""
    if model.format == "rule" and model.rule is not None:
        out: dict = {}

        def walk(x):
            if isinstance(x, ir.FeatureRef):
                out.setdefault(x.feature, None)
            elif isinstance(x, ir.Expr):
                for f in x.__dataclass_fields__:
                    v = getattr(x, f)
                    for y in (v if isinstance(v, tuple) else (v,)):
                        if isinstance(y, ir.Expr):
                            walk(y)

        walk(model.rule)
        return list(out)
    if model.format == "sklearn" and model.name in ck.encodings:
        return [c.feature for c in ck.encodings[model.name].columns]
    return None


def _check_distribution_use(ck, where, model: ir.Model, fs: ir.FeatureSet, dist: ir.Distribution,
                            groups: ir.Groups):
    """A distribution must cover what the classifier reads; data-estimated ones need bins for numbers."""
    shown = f"distribution '{dist.name}'" if "." not in dist.name else "the distribution"
    if dist.data is not None and dist.data != fs.data and dist.data in ck.data_columns:
        cols = ck.data_columns[dist.data]
        for f in fs.features:
            if f.column not in cols:
                ck.fail("FS207", f"data set '{dist.data}' of {shown} has no column '{f.column}' for feature "
                                 f"'{f.name}' of {fs.name}", where.span, hint=did_you_mean(f.column, cols))
    reads = _classifier_reads(ck, model, fs)
    if reads is None:
        return
    if dist.kind == "table":
        covered = {r.feature for r in dist.table} | {a.feature for a in groups.atoms if a.feature}
        for f in reads:
            if f not in covered:
                ck.fail("FS311", f"{shown} does not cover feature '{f}', which {model.name} reads", where.span,
                        hint=f"add p({f}) = ... (or rows p({f} | ...) = ...) to the distribution")
    elif dist.kind in ("independent", "conditional", "bayes"):
        if any(k == "bins" for k, _ in dist.params):
            return
        for name in reads:
            f = fs.get(name)
            if f is not None and f.domain.kind in ("int", "real") and f.bins is None:
                ck.fail("FS312", f"continuous feature '{name}', which {model.name} reads, has no bins, so "
                                 f"{shown} cannot discretise it", where.span,
                        hint=f"declare bin edges on the feature ({name} : ... bins [...]) or learn quantile "
                             f"bins: {dist.kind}({dist.data}, bins = 4)")


def _claim(ck, st, env):
    """Split a claim into (call, op, threshold_expr)."""
    e = st.args[0]
    if isinstance(e, ast.Compare) and isinstance(e.left, ast.Call):
        return e.left, e.op, e.right
    if isinstance(e, ast.Compare) and isinstance(e.right, ast.Call):
        flipped = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(e.op, e.op)
        return e.right, flipped, e.left
    if isinstance(e, ast.Call):
        return e, None, None
    ck.fail("FS501", "a property states one fairness claim, e.g. disparate_impact(m, groups sex) >= 0.8", e.span)


def _check_args(ck, call: ast.Call, allowed: set, n_pos: int):
    pos = call.positional()
    if len(pos) != n_pos:
        ck.fail("FS305", f"{call.fn.id}(...) takes {n_pos} positional argument{'s' if n_pos != 1 else ''} "
                         f"(the model), got {len(pos)}", call.span)
    for a in call.args:
        if a.kind == "trust":
            ck.fail("FS208", "'trust' applies to model files", a.span)
        if a.kind in ("kw", "clause") and a.name.id not in allowed:
            ck.fail("FS208", f"{call.fn.id}(...) has no argument '{a.name.id}'", a.name.span,
                    hint=did_you_mean(a.name.id, allowed) or f"arguments: {', '.join(sorted(allowed))}")


# ------------------------------------------------------------------ property kinds

def build_property(ck, node: ast.PropertyDecl, name: str, env: dict):
    stmts = node.stmts
    foralls = [s for s in stmts if s.kind == "forall"]
    claims = [s for s in stmts if s.kind == "claim"]
    if foralls:
        if claims:
            ck.fail("FS501", "an individual-fairness property states its claim with require/ensure, not a metric",
                    claims[0].span)
        return _individual_fairness(ck, node, name, env)
    if len(claims) != 1:
        span = claims[1].span if len(claims) > 1 else node.name.span
        ck.fail("FS501", f"property '{name}' must state exactly one claim (found {len(claims)})", span,
                hint="e.g. disparate_impact(m, groups sex) >= 0.8, or forall x, x' : F ... for individual fairness")
    bad = [s for s in stmts if s.kind in ("require", "ensure")]
    if bad:
        ck.fail("FS501", f"'{bad[0].kind}' belongs to individual-fairness properties (with forall x, x' : F)", bad[0].span)
    call, op, rhs = _claim(ck, claims[0], env)
    fn = call.fn.id
    if fn not in PROPERTY_FUNCTIONS:
        ck.fail("FS209", f"unknown property function '{fn}'", call.fn.span,
                hint=did_you_mean(fn, PROPERTY_FUNCTIONS) or f"functions: {', '.join(sorted(PROPERTY_FUNCTIONS))}")
    if op is not None and op not in COMPARISONS:
        ck.fail("FS501", f"compare a metric with <, <=, > or >=, not '{op}'", claims[0].span)
    if fn == "k_discrimination":
        return _kdisc(ck, node, name, env, call, op, rhs, stmts)
    if fn == "pba":
        return _pba(ck, node, name, env, call, op, rhs, stmts)
    if fn == "influence":
        return _influence(ck, node, name, env, call, op, rhs, stmts)
    return _metric(ck, node, name, env, call, op, rhs, stmts)


def _subject(ck, e, env):
    """The first argument of a group metric: a model (or a table of logged predictions), or a data
    set itself, whose labels are then the decisions (bias in the data, no model)."""
    r = _resolve(e, env)
    if isinstance(r, ast.Name) and r.id in ck.datasets:
        fss = [f for f in ck.feature_sets.values() if f.data == r.id]
        if len(fss) != 1:
            ck.fail("FS501", f"the groups of data set '{r.id}' come from the feature set declared 'from {r.id}', "
                             f"and there " + (f"are {len(fss)}: {', '.join(f.name for f in fss)}" if fss else
                                              "is none"), r.span,
                    hint=f"declare exactly one: features F from {r.id} {{ ... }}")
        if ck.datasets[r.id].label is None:
            ck.fail("FS501", f"measuring data set '{r.id}' itself compares its labels, so it needs a label = ... "
                             f"expression", r.span)
        return None, fss[0]
    model = _model_of(ck, e, env, table_ok=True)
    return model, ck.feature_sets[model.features]


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
    if mdef is not None and model is None and (mdef.rates != ("selection_rate",) and mdef.rates != ("base_rate",)):
        ck.fail("FS501", f"{fn} compares a model's decisions with the labels; a data set alone has only its "
                         f"labels", call.span,
                hint="on a data set: disparate_impact, statistical_parity, base_rate_ratio, base_rate_difference")
    if mdef is not None and mdef.form == "ratio" and not 0.0 <= threshold <= 1.0:
        ck.fail("FS307", f"{fn} is a ratio in [0, 1]; threshold {threshold} can never be decided", rhs.span)
    options = parse_options(ck, stmts, env, "group_metric")
    if dist is not None and any(options.get(k) is not None for k in ("compare", "weight", "exclude_below")):
        ck.fail("FS502", "compare, weight and exclude_below apply to metrics measured on data rows, not over a "
                         "distribution", d.span)
    w = options.get("weight")
    if w is not None:
        cols = ck.data_columns.get(data, {})
        if w not in cols:
            ck.fail("FS207", f"data set '{data}' has no weight column '{w}'", node.name.span,
                    hint=did_you_mean(w, cols))
        if cols[w] != "num":
            ck.fail("FS306", f"the weight column '{w}' of '{data}' does not hold numbers", node.name.span)
    return ir.GroupMetric(name, "group_metric", options, node.span, metric=fn, model=model.name if model else "",
                          features=fs.name, groups=groups, data=data, distribution=dist, mediators=mediators,
                          op=op, threshold=threshold, params=params)


def _output_params(ck, call, env, fn, model, mdef):
    """issue 25: class = c (a binary metric of a multiclass model, class c against the rest),
    threshold = t (a binary metric of a regression, positive where value >= t), loss = square |
    absolute (bounded_group_loss); and the output metrics' model kinds (FS415)."""
    from fairspec.sema.outputs import class_column, describe_kind

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
            if isinstance(v, ast.Num) and v.is_int:
                c = int(v.value)
            elif isinstance(v, ast.Str):
                c = v.value
            else:
                ck.fail("FS301", "class = a column (a whole number) or a label in quotes", v.span)
            from fairspec.models.readout import ReadoutError

            try:
                out.append(("class", class_column(model, c)))
            except ReadoutError as e:
                ck.fail("FS417", e.message, v.span, hint=e.hint)
        elif key == "threshold":
            if model.task is not None and not model.is_regression:
                ck.fail("FS415", f"threshold = ... reads a regression's value, but '{model.name}' is "
                                 f"{describe_kind(model)}", a.span,
                        hint="a multiclass model: class = c (that class against the rest)")
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
        if mdef.output == "regression" and model.task is not None and not model.is_regression:
            ck.fail("FS415", f"{fn} reads a regression's value, but '{model.name}' is {describe_kind(model)}",
                    call.span, hint="a classifier's metrics: the binary metrics, with class = c for a multiclass model")
        if mdef.output == "multiclass" and model.is_regression:
            ck.fail("FS415", f"{fn} reads a classifier's predicted class, but '{model.name}' is a regression model",
                    call.span, hint="a regression's metrics: mean_prediction_difference, ks_distance, ...")
    if mdef is not None and mdef.output and model is None:
        ck.fail("FS501", f"{fn} reads a model's {'class' if mdef.output == 'multiclass' else 'value'}; a data set "
                         f"alone has only its labels", call.span)
    return tuple(out)


def _require_binary(ck, model: ir.Model, what: str, span) -> None:
    """FS414 / FS418: ``what`` reads one binary decision, which a multiclass model without index and
    a regression do not have (fairspec.sema.outputs)."""
    from fairspec.sema.outputs import binary_decision_problem

    problem = binary_decision_problem(model, what)
    if problem is not None:
        ck.fail(problem[0], problem[1], span, hint=problem[2])


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
    if threshold < 0:
        ck.fail("FS307", f"an influence is measured as an absolute change of {quantity}, so a threshold below 0 "
                         f"({threshold:g}) can never be met", rhs.span)
    if threshold == 0 and op == "<":
        ck.fail("FS307", f"an influence is an absolute change of {quantity}, never < 0, so this claim can never "
                         f"be met", rhs.span, hint="write <= 0 for no influence at all")
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


def _kdisc(ck, node, name, env, call, op, rhs, stmts):
    _check_args(ck, call, {"over", "eps", "class"}, 1)
    model = _model_of(ck, call.positional()[0], env)
    output, cls = _kdisc_output(ck, model, call, env)
    if output == "score":
        _require_binary(ck, model, "k_discrimination(...)", call.span)
    fs = ck.feature_sets[model.features]
    over = call.keyword("over")
    if over is None:
        ck.fail("FS501", "k_discrimination(...) needs the protected features: over {sex, race}", call.span)
    names = _feature_names(ck, over.value, env, fs, "over")
    for n in names:
        f = fs.get(n)
        if f.is_discrete:
            continue
        if not f.bins:
            ck.fail("FS308", f"'{n}' is numeric: k-discrimination enumerates the values of discrete features, or "
                             f"the bands of a numeric one", over.span,
                    hint=f"declare bands on the feature, e.g. '{n} : int in [10, 100] bins [39]' for [10, 39] and "
                         f"[40, 100] (bins are right-closed); each counterfactual then takes a value in each band")
        if len(ir.numeric_bands(f)) < 2:
            ck.fail("FS307", f"the bins of '{n}' leave a single band inside its range, so there is nothing to "
                             "compare", f.span)
    eps_arg = call.keyword("eps")
    eps = _number(ck, eps_arg.value, env, "eps") if eps_arg else 0.05
    if eps < 0:
        ck.fail("FS307", "eps must be >= 0", eps_arg.span)
    if op not in ("<", "<="):
        ck.fail("FS501", "state the largest acceptable k: k_discrimination(...) < k", call.span)
    k = _number(ck, rhs, env, "k")
    if k != int(k) or k < 1:
        ck.fail("FS307", "k must be a whole number >= 1", rhs.span)
    options = parse_options(ck, stmts, env, "k_discrimination")
    return ir.KDiscrimination(name, "k_discrimination", options, node.span, model=model.name, features=fs.name,
                              over=names, eps=eps, op=op, k=int(k), output=output, cls=cls)


def _kdisc_output(ck, model: ir.Model, call, env) -> tuple[str, int | None]:
    """What k-discrimination counts (issue 25): the binary score in eps-buckets ("score"); a
    multiclass model's predicted class ("class": k distinct classes among the counterfactuals); or,
    with ``class = c``, class c's probability in eps-buckets ("class_prob")."""
    from fairspec.models.readout import ReadoutError
    from fairspec.sema.outputs import class_column, needs_index

    a = call.keyword("class")
    if a is None:
        if needs_index(model):
            if call.keyword("eps") is not None:
                ck.fail("FS208", f"k_discrimination of the multiclass model '{model.name}' counts its predicted "
                                 f"classes, so eps does not apply", call.keyword("eps").name.span,
                        hint="drop eps, or add class = c to bucket class c's probability by eps")
            return "class", None
        return "score", None
    if model.is_regression or (model.task is not None and model.task != "multiclass") or model.format in (
            "rule", "predictions"):
        ck.fail("FS208", "class = ... applies to k_discrimination of a multiclass model", a.name.span)
    v = _resolve(a.value, env)
    if isinstance(v, ast.Num) and v.is_int:
        c = int(v.value)
    elif isinstance(v, ast.Str):
        c = v.value
    else:
        ck.fail("FS301", "class = a column (a whole number) or a label in quotes", v.span)
    try:
        return "class_prob", class_column(model, c)
    except ReadoutError as e:
        ck.fail("FS417", e.message, v.span, hint=e.hint)


def _pba(ck, node, name, env, call, op, rhs, stmts):
    _check_args(ck, call, {"flip", "around", "delta", "given"}, 1)
    model = _model_of(ck, call.positional()[0], env)
    _require_binary(ck, model, "pba(...)", call.span)
    fs = ck.feature_sets[model.features]
    enc = ck.encodings.get(model.name)
    flip = call.keyword("flip")
    if flip is None:
        ck.fail("FS501", "pba(...) needs the sensitive attribute to flip: flip sex", call.span)
    flips = _feature_names(ck, flip.value, env, fs, "flip")
    for f in flips:
        feat = fs.get(f)
        col = enc.column(f) if enc else None
        binary = feat.is_discrete and len(feat.values()) == 2
        if not (binary or (col is not None and col.kind == "onehot")):
            ck.fail("FS308", f"a flipped attribute must be binary or one-hot encoded; '{f}' is neither", flip.span)
    around = call.keyword("around")
    data = _dataset(ck, around.value, env, fs).name if around else fs.data
    if data is None:
        ck.fail("FS501", "pba(...) selects its points from data: around DATA", call.span)
    delta = ()
    dl = call.keyword("delta")
    if dl is not None:
        v = _resolve(dl.value, env)
        if not isinstance(v, ast.SetLit) or not all(isinstance(i, ast.MapItem) for i in v.items):
            ck.fail("FS301", "delta {feature: amount, ...} in each feature's own units", v.span)
        out = []
        for it in v.items:
            f = fs.get(it.key.id)
            if f is None:
                ck.fail("FS205", f"unknown feature '{it.key.id}' in {fs.name}", it.key.span)
            if f.is_discrete:
                ck.fail("FS407", f"'{f.name}' is categorical: categorical features stay fixed in a PBA neighbourhood",
                        it.key.span)
            amount = _number(ck, it.value, env, "a delta")
            if amount < 0:
                ck.fail("FS307", "a delta must be >= 0", it.value.span)
            out.append((f.name, amount))
        delta = tuple(out)
    given = None
    gv = call.keyword("given")
    if gv is not None:
        given = ck.lower.expect_bool(gv.value, Scope("features", features=fs))
    report = next((s for s in stmts if s.kind == "report"), None)
    report_by = resolve_groups(ck, report.args[0], env, fs) if report else None
    threshold = None
    if op is not None:
        threshold = _number(ck, rhs, env, "the share of verified points")
        if not 0 <= threshold <= 1:
            ck.fail("FS307", "pba(...) is compared with a share of points in [0, 1]", rhs.span)
    options = parse_options(ck, stmts, env, "pba")
    return ir.PBA(name, "pba", options, node.span, model=model.name, features=fs.name, flip=flips, around=data,
                  given=given, delta=delta, report_by=report_by, op=op, threshold=threshold)


def _individual_fairness(ck, node, name, env):
    stmts = node.stmts
    fa = [s for s in stmts if s.kind == "forall"]
    if len(fa) > 1:
        ck.fail("FS501", "one forall per property", fa[1].span)
    var, var2, fs_name = fa[0].args
    if var2.id.rstrip("'") != var.id:
        ck.fail("FS501", f"the pair is written {var.id}, {var.id}'", var2.span)
    fs_name = _resolve(fs_name, env)
    fs = ck._lookup(fs_name, ast.FeaturesDecl, "a feature set", ck.feature_sets)
    scope = Scope("pair", features=fs, pair_vars=(var.id, var2.id), models=ck.models, env=env)
    free = None
    relaxed, relaxed_strict, pre = [], [], []
    for st in stmts:
        if st.kind != "require":
            continue
        e = _resolve(st.args[0], env)
        if isinstance(e, ast.EqualExcept):
            if free is not None:
                ck.fail("FS501", "one 'x.* == x'.* except {...}' per property", st.span)
            vars_ = [_resolve(e.left.var, env), _resolve(e.right.var, env)]
            if not all(isinstance(v, ast.Name) for v in vars_) or {v.id for v in vars_} != {var.id, var2.id}:
                ck.fail("FS501", f"compare the two inputs: {var.id}.* == {var2.id}.* except {{...}}", e.span)
            free = _feature_names(ck, e.excluded, env, fs, "except")
            continue
        rel = _relaxation(e, var.id, var2.id)
        if rel is not None:
            fname, tol_expr = rel
            if fs.get(fname) is None:
                ck.fail("FS205", f"unknown feature '{fname}' in {fs.name}", e.span)
            tol = _number(ck, tol_expr, env, "the tolerance")
            if tol < 0 or (tol == 0 and e.op == "<"):
                ck.fail("FS307", f"no pair differs by {e.op} {tol:g}, so no pair satisfies this pre-condition",
                        e.span, hint="a tolerance is >= 0 (<= 0 ties the feature; < t with t > 0 lets it move)")
            relaxed.append((fname, tol))
            if e.op == "<":
                relaxed_strict.append(fname)
            continue
        pre.append(ck.lower.expect_bool(e, scope))
    if free is None:
        ck.fail("FS501", f"an individual-fairness property needs 'require {var.id}.* == {var2.id}.* except {{...}}'",
                fa[0].span, hint="list the protected features that may differ between the two inputs")
    ensures = [s for s in stmts if s.kind == "ensure"]
    if len(ensures) != 1:
        ck.fail("FS501", "an individual-fairness property has exactly one 'ensure'", node.name.span,
                hint="ensure label(m(x)) == label(m(x')), or ensure |prob(m(x)) - prob(m(x'))| <= 0.05")
    class_var = ensures[0].args[1] if len(ensures[0].args) > 1 else None
    if class_var is not None:
        scope = Scope("pair", features=fs, pair_vars=(var.id, var2.id), models=ck.models, env=env,
                      class_var=class_var.id)
    post, eps, eps_op, model_name, cls = _post(ck, ensures[0].args[0], scope, env, var.id, var2.id, class_var)
    model = ck.models[model_name]
    if model.format == "predictions":
        ck.fail("FS502", f"model '{model_name}' is a table of logged predictions: it cannot be evaluated at new "
                         f"inputs, so only group metrics on its data set can audit it", ensures[0].span)
    if model.features != fs.name:
        ck.fail("FS301", f"model '{model_name}' reads feature set '{model.features}', not '{fs.name}'", ensures[0].span)
    for f, _ in relaxed:
        if f in free:
            ck.fail("FS501", f"'{f}' is already free to differ; a tolerance on it adds nothing", node.span)
    options = parse_options(ck, stmts, env, "individual_fairness")
    return ir.IndividualFairness(name, "individual_fairness", options, node.span, model=model_name, features=fs.name,
                                 var=var.id, var_prime=var2.id, free=free, relaxed=tuple(relaxed), pre=tuple(pre),
                                 post=post, eps=eps, eps_op=eps_op, relaxed_strict=tuple(relaxed_strict),
                                 cls=cls)


def _relaxation(e, v, v2):
    """|x.f - x'.f| <= t  ->  (f, t)"""
    if not (isinstance(e, ast.Compare) and e.op in ("<=", "<") and isinstance(e.left, ast.Abs)):
        return None
    a = e.left.arg
    if not (isinstance(a, ast.Arith) and a.op == "-" and isinstance(a.left, ast.Attr) and isinstance(a.right, ast.Attr)):
        return None
    if a.left.name.id != a.right.name.id:
        return None
    if not (isinstance(a.left.obj, ast.Name) and isinstance(a.right.obj, ast.Name)):
        return None
    if {a.left.obj.id, a.right.obj.id} != {v, v2}:
        return None
    return a.left.name.id, e.right


def _post(ck, e, scope, env, v, v2, class_var=None):
    """The post-condition of an individual-fairness property: (post, eps, eps_op, model, cls),
    post one of ir.BINARY_POSTS + ir.MULTI_POSTS (their meaning: ir.IndividualFairness)."""
    lowered = ck.lower.expect_bool(e, scope)
    found = None
    if isinstance(lowered, ir.Cmp) and lowered.op == "==" and isinstance(lowered.left, ir.ModelOut) \
            and isinstance(lowered.right, ir.ModelOut) and lowered.left.fn == lowered.right.fn \
            and lowered.left.fn in ("label", "class"):
        _same_model(ck, e, lowered.left, lowered.right, v, v2)
        found = (lowered.left.fn, 0.0, "<=", lowered.left.model, None)
    elif isinstance(lowered, ir.Cmp) and lowered.op in ("<=", "<") and isinstance(lowered.left, ir.AbsE) \
            and isinstance(lowered.left.arg, ir.ArithE) and lowered.left.arg.op == "-" \
            and isinstance(lowered.right, ir.Const):
        a, b = lowered.left.arg.left, lowered.left.arg.right
        if isinstance(a, ir.ModelOut) and isinstance(b, ir.ModelOut) and a.fn == b.fn \
                and a.fn in ("prob", "logit", "value"):
            _same_model(ck, e, a, b, v, v2)
            if a.cls != b.cls:
                ck.fail("FS501", "both sides of the post-condition must name the same class", e.span)
            eps = float(lowered.right.value)
            if eps < 0:
                ck.fail("FS307", "the tolerance must be >= 0", e.span)
            if eps == 0 and lowered.op == "<":
                ck.fail("FS307", "no difference is < 0, so every pair would violate this post-condition", e.span,
                        hint="write <= 0 for equal outputs, or < eps with eps > 0")
            post = a.fn if a.fn == "value" or a.cls is None else f"class_{a.fn}"
            found = (post, eps, lowered.op, a.model, a.cls)
    if found is None:
        ck.fail("FS501", "unsupported post-condition", e.span,
                hint=f"write ensure label(m({v})) == label(m({v2})), |prob(m({v})) - prob(m({v2}))| <= eps "
                     f"or |logit(m({v})) - logit(m({v2}))| <= d; for a multiclass model class(m({v})) == "
                     f"class(m({v2})) or |prob(m({v}), c) - prob(m({v2}), c)| <= eps; for a regression "
                     f"|value(m({v})) - value(m({v2}))| <= eps")
    if class_var is not None and found[4] != ir.EVERY_CLASS:
        ck.fail("FS501", f"'forall {class_var.id}:' ranges over the classes, but the post-condition does not "
                         f"read prob(m({v}), {class_var.id}) or logit(m({v}), {class_var.id})", class_var.span,
                hint=f"ensure forall {class_var.id}: |prob(m({v}), {class_var.id}) - prob(m({v2}), {class_var.id})| "
                     f"<= eps")
    return found


def _same_model(ck, e, a: ir.ModelOut, b: ir.ModelOut, v, v2):
    if a.model != b.model:
        ck.fail("FS501", "both sides of the post-condition must use the same model", e.span)
    if {a.var, b.var} != {v, v2}:
        ck.fail("FS501", f"the post-condition compares m({v}) with m({v2})", e.span)
    return "label"


# ------------------------------------------------------------------ repair

def build_repair(ck, node: ast.RepairDecl):
    name = node.name.id
    try:
        model = _model_of(ck, node.model, {})
        if model.is_regression or model.task == "multiclass":
            from fairspec.sema.outputs import describe_kind

            ck.fail("FS506", f"cannot repair model '{model.name}': repair is for binary classifiers, and "
                             f"'{model.name}' is {describe_kind(model)}", node.model.span,
                    hint="repair a binary DecisionTreeClassifier or RandomForestClassifier saved with skops")
        fs = ck.feature_sets[model.features]
        goals = [s for s in node.stmts if s.kind == "goal"]
        if len(goals) != 1:
            ck.fail("FS505", f"repair '{name}' needs exactly one goal", node.name.span,
                    hint="goal passing_rate_ratio(groups sex) >= 0.8")
        g = goals[0].args[0]
        if not (isinstance(g, ast.Compare) and isinstance(g.left, ast.Call) and g.left.fn.id == "passing_rate_ratio"
                and g.op in (">=", ">")):
            ck.fail("FS505", "the goal is passing_rate_ratio(groups ...) >= c", g.span)
        grp = g.left.keyword("groups")
        if grp is None:
            ck.fail("FS505", "passing_rate_ratio(...) needs groups", g.span)
        groups = resolve_groups(ck, grp.value, {}, fs)
        c = _number(ck, g.right, {}, "the fairness threshold c")
        if not 0 < c <= 1:
            ck.fail("FS307", f"the passing-rate ratio threshold must be in (0, 1], got {c}", g.right.span)
        alpha = 1.2
        for b in (s for s in node.stmts if s.kind == "bound"):
            e = b.args[0]
            ok = (isinstance(e, ast.Compare) and e.op == "<=" and isinstance(e.left, ast.Name)
                  and e.left.id == "semantic_difference")
            r = e.right if ok else None
            if ok and isinstance(r, ast.Arith) and r.op == "*" and isinstance(r.right, ast.Name) and r.right.id == "minimal":
                alpha = _number(ck, r.left, {}, "alpha")
            elif ok and isinstance(r, ast.Name) and r.id == "minimal":
                alpha = 1.0
            else:
                ck.fail("FS505", "the bound is semantic_difference <= alpha * minimal", e.span)
            if alpha < 1:
                ck.fail("FS307", "alpha must be >= 1 (no repair changes less than the minimal one)", e.span)
        write = None
        for w in (s for s in node.stmts if s.kind == "write"):
            out = ck.user_path(w.args[0], ck.root.parent, "output file")  # confined (fairspec.files)
            from fairspec.files import OutsideRoot, PathError, check_target

            if model.path and out.resolve() == __import__("pathlib").Path(model.path).resolve():
                ck.fail("FS505", "the repaired model must not overwrite the original model file", w.span)
            if out.is_symlink():
                ck.fail("FS505", f"the output file {w.args[0].value!r} is a symbolic link; name the file itself",
                        w.args[0].span)
            try:  # everything the writer checks at the end (fairspec.files.safe_write), checked now
                check_target(out, ck.roots, what="output file", suffixes=(".skops",))
            except OutsideRoot as e:
                ck.fail("FS212", str(e), w.args[0].span)
            except PathError as e:
                ck.fail("FS505", str(e), w.args[0].span)
            write = str(out)
        options = parse_options(ck, node.stmts, {}, "repair")
        if fs.data is None:
            ck.fail("FS505", f"repair counts path probabilities on data, but features '{fs.name}' name no data",
                    node.name.span, hint=f"declare `features {fs.name} from DATA`")
        if model.path and ck.peek_models:
            from fairspec.models.peek import repair_obstacle

            why = repair_obstacle(model.format, model.path)
            if why:
                ck.fail("FS506", f"cannot repair model '{model.name}': {why}", node.model.span,
                        hint="repair a DecisionTreeClassifier or RandomForestClassifier saved with skops")
        elif model.format == "rule":
            ck.fail("FS506", f"cannot repair model '{model.name}': repair supports scikit-learn "
                             f"DecisionTreeClassifier and RandomForestClassifier; this is a rule model", node.model.span)
        return ir.Repair(name, "repair", options, node.span, model=model.name, features=fs.name, groups=groups,
                         threshold=c, alpha=alpha, write=write, strict=g.op == ">")
    except LowerError:
        return None


def bind_policy_args(ck, pol: ast.PolicyDecl, app: ast.ApplyDecl) -> dict:
    params = list(pol.params)
    env: dict = {}
    pos = [a for a in app.args if a.kind == "pos"]
    if len(pos) > len(params):
        ck.fail("FS305", f"policy '{pol.name.id}' takes {len(params)} arguments, got {len(pos)}", app.span)
    for p, a in zip(params, pos):
        env[p.name.id] = a.value
    names = {p.name.id for p in params}
    for a in app.args:
        if a.kind in ("kw", "clause"):
            if a.name.id not in names:
                ck.fail("FS210", f"policy '{pol.name.id}' has no parameter '{a.name.id}'", a.name.span,
                        hint=did_you_mean(a.name.id, names) or f"parameters: {', '.join(p.name.id for p in params)}")
            if a.name.id in env:
                ck.fail("FS210", f"parameter '{a.name.id}' is given twice", a.span)
            env[a.name.id] = a.value
        elif a.kind == "trust":
            ck.fail("FS208", "'trust' applies to model files", a.span)
    for p in params:
        if p.name.id not in env:
            if p.default is None:
                ck.fail("FS210", f"policy '{pol.name.id}' needs an argument for '{p.name.id}'", app.span)
            env[p.name.id] = p.default
        _check_param_type(ck, p, env[p.name.id])
    return env


_PARAM_TYPES = ("model", "features", "groups", "set", "real", "int", "data", "duration")


def _check_param_type(ck, p: ast.Param, v):
    t = p.type.id
    if t not in _PARAM_TYPES:
        ck.fail("FS301", f"unknown parameter type '{t}'", p.type.span, hint=f"types: {', '.join(_PARAM_TYPES)}")
    ok = {
        "model": lambda: isinstance(v, ast.Name) and v.id in ck.models,
        "features": lambda: isinstance(v, ast.Name) and v.id in ck.feature_sets,
        "data": lambda: isinstance(v, ast.Name) and v.id in ck.datasets,
        "groups": lambda: isinstance(v, (ast.Name, ast.Compound)),
        "set": lambda: isinstance(v, (ast.SetLit, ast.Name)),
        "real": lambda: isinstance(v, ast.Num) or (isinstance(v, ast.Neg) and isinstance(v.arg, ast.Num)),
        "int": lambda: isinstance(v, ast.Num) and v.is_int,
        "duration": lambda: isinstance(v, (ast.Dur, ast.Num)),
    }[t]()
    if not ok:
        ck.fail("FS301", f"argument for '{p.name.id}' must be a {t}", v.span)
