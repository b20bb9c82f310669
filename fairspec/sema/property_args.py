"""Property blocks, the arguments the kinds share (fairspec.sema.properties recognises the kinds): the
model and its subject ``m(x)``, feature names, groups (crossed, at most MAX_CROSSED_GROUPS cells), a data
set or a distribution and whether the model reads what it samples, the claim's comparison, and the
arguments a property function accepts. A policy parameter's argument is resolved first (_resolve)."""

from __future__ import annotations

from fairspec import ir
from fairspec.sema.exprs import LowerError, Scope, column_hint, did_you_mean
from fairspec.syntax import ast
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly


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
        ck.unknown("FS201", f"unknown model '{e.id}'", e.span, hint=did_you_mean(e.id, ck.models))
    m = ck.models[e.id]
    if m.format == "predictions" and not table_ok:
        ck.fail("FS502", f"model '{m.name}' is a table of logged predictions: it cannot be evaluated at new "
                         f"inputs, so only group metrics on its data set can audit it", e.span,
                hint="state group metrics, e.g. disparate_impact(m, groups sex) >= 0.8")
    _inputs_known(ck, m, e.span)
    return m


def _inputs_known(ck, m: ir.Model, span) -> None:
    """FS501 when nothing tells the inputs of model ``m`` (no encode block, no pipeline that gives
    them); silent (LowerError) when the reason was reported at the model: its rule, its encode block
    or its pipeline failed (FS422, ...), or its file could not be read (FS401)."""
    if m.features is not None:
        return
    if m.format == "rule" or m.name in ck.encoded_models or m.name in ck.failed_models:
        raise LowerError()  # its rule, its encode block or its file was already reported
    hint = f"declare: encode FEATURES for {m.name} {{ ... }}"
    if m.format == "sklearn" and str(m.path).lower().endswith(".skops"):
        from fairspec.models.peek_sklearn import skops_top_class

        cls = skops_top_class(m.path) or ""
        if cls.endswith("SearchCV"):    # its pipeline is its best_estimator_, which the file holds inside
            hint = (f"the file holds a {cls}, whose fitted pipeline or estimator is its best_estimator_: save that "
                    f"(skops.io.dump(search.best_estimator_, ...)) and declare it, or " + hint)
    ck.fail("FS501", f"model '{m.name}' has no encode block, so its inputs are unknown", span, hint=hint)


def _feature_names(ck, e, env, fs: ir.FeatureSet, what: str, empty: str | None = None) -> tuple[str, ...]:
    """The features a set names; FS501 for one named twice (`except {sex, sex}`) and, where ``empty`` says
    why, for a set that names none (`except {}` compared no pair, and check ended `unknown`)."""
    e = _resolve(e, env)
    items = e.items if isinstance(e, (ast.SetLit, ast.ListLit)) else (e,)
    if not items and empty is not None:
        ck.fail("FS501", empty, e.span, hint="name the protected features: {sex} or {sex, race}")
    out = []
    for it in items:
        it = _resolve(it, env)
        if not isinstance(it, ast.Name):
            ck.fail("FS301", f"{what} lists feature names", it.span)
        if fs.get(it.id) is None:
            ck.fail("FS205", f"unknown feature '{it.id}' in {fs.name}", it.span,
                    hint=did_you_mean(it.id, [f.name for f in fs.features]))
        if it.id in out:
            ck.fail("FS501", f"'{it.id}' is listed twice in {what} {{...}}", it.span, hint="list each feature once")
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
            ck.unknown("FS205", f"unknown feature or group '{n.id}'", n.span,
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
                        hint=column_hint(f.column, cols) or f"pass a data set with the columns of {fs.name}")
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
        ck.unknown("FS201", f"unknown distribution '{e.id}'", e.span, hint=did_you_mean(e.id, ck.distributions))
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
        return list(dict.fromkeys(x.feature for x in ir.subexpressions(model.rule) if isinstance(x, ir.FeatureRef)))
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
                                 f"'{f.name}' of {fs.name}", where.span, hint=column_hint(f.column, cols))
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
                    hint=did_you_mean(a.name.id, allowed) or _option_as_argument(a.name.id)
                    or f"arguments: {', '.join(sorted(allowed))}")


def _option_as_argument(name: str) -> str | None:
    """`statistical_parity(m, groups sex, bootstrap = 100)`: an option of the property, not of the call."""
    from fairspec.planning import OPTIONS

    if name in OPTIONS:
        return f"{name} is an option of the property: give it on a line of its own after the claim ({name} = ...)"
    return None


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


def _require_binary(ck, model: ir.Model, what: str, span) -> None:
    """FS414 / FS418: ``what`` reads one binary decision, which a multiclass model without index and
    a regression do not have (fairspec.sema.outputs)."""
    from fairspec.sema.outputs import binary_decision_problem

    problem = binary_decision_problem(model, what)
    if problem is not None:
        ck.fail(problem[0], problem[1], span, hint=problem[2])


def _require_decision(ck, model: ir.Model, what: str, span) -> None:
    """FS426: ``what`` reads the model's binary decisions, whose rule its declaration leaves open
    (fairspec.sema.outputs.decision_problem)."""
    from fairspec.sema.outputs import decision_problem

    problem = decision_problem(model, what)
    if problem is not None:
        ck.fail(problem[0], problem[1], span, hint=problem[2])


def claim_range(ck, op: str, t: float, lo: float | None, hi: float | None, span, what: str,
                never_hint: str | None = None, undefined: str = "", verb: str = "holds",
                below_hint: str | None = None) -> None:
    """A claim ``QUANTITY op t`` on a quantity the language knows lies in [lo, hi] (None: unbounded on
    that side), t inside the range or not: FS507 (an error) when no value there meets it, since such
    a claim is almost surely a typo (> 1 for >= 0.8, >= 1.25 on a ratio); FS508 (a warning) when every
    value does (<= 1.5 on a ratio).  Such a claim still holds only where the quantity is defined (a
    ratio with no positive rate in any group is not), so FS508 says so and ``undefined`` says when
    it is not and what check then does.  Caret on the threshold ``span``; ``never_hint`` for a claim
    above the range, ``below_hint`` for one below it (by default told to check the comparison's
    direction); ``verb`` for a repair goal ("is met")."""
    above = hi is not None and ((op == ">" and t >= hi) or (op == ">=" and t > hi))
    below = lo is not None and ((op == "<" and t <= lo) or (op == "<=" and t < lo))
    always = (lo is not None and ((op == ">=" and t <= lo) or (op == ">" and t < lo))) or \
        (hi is not None and ((op == "<=" and t >= hi) or (op == "<" and t > hi)))
    percent = (f"a percentage? {_spec_number(t)}% is {_spec_number(t / 100)}: "
               if hi == 1 and lo is not None and lo >= 0 and 1 < t <= 100 else "")   # 80 for 80%, 10 for 10%
    if above or below:
        hint = percent + (never_hint or "") if above and (never_hint or percent) else never_hint if above else (below_hint or f"nothing lies below {_spec_number(lo)}: write <= {_spec_number(lo)} for the lowest "
                                                       f"value, or check the direction of the comparison")
        ck.fail("FS507", f"{what}, so {op} {_spec_number(t)} can never be met", span, hint=hint)
    if always:
        where = f"; {undefined}" if undefined else ""
        ck.sink.add("FS508", f"{what}, so {op} {_spec_number(t)} {verb} wherever it is defined", span,
                    hint=percent + f"a bound at or past the end of the range states nothing{where}: tighten the "
                                   f"threshold, or drop the property")
