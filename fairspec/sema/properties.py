"""Property blocks: recognise the five kinds, check them, build their IR.

This module recognises the kind (build_property), builds repair goals and binds a policy's
parameters; each family of kinds has its module (individual_properties: individual fairness,
k-discrimination, PBA; metric_properties: group metrics and influence), beside the arguments
they share (property_args) and the options and plan check (options).

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
from fairspec.sema.exprs import LowerError, did_you_mean
from fairspec.sema.individual_properties import _individual_fairness, _kdisc, _pba
from fairspec.sema.metric_properties import METRICS, _influence, _metric
from fairspec.sema.options import parse_options
from fairspec.sema.property_args import _claim, _model_of, _number, claim_range, resolve_groups
from fairspec.sema.repeats import given_twice
from fairspec.syntax import ast


PROPERTY_FUNCTIONS = set(METRICS) | {"k_discrimination", "pba"}
COMPARISONS = {"<", "<=", ">", ">="}


def _option_compared(st) -> str | None:
    """The hint for an option compared rather than given (`bootstrap == 100`): a claim to the parser."""
    from fairspec.diagnostics import source_lines
    from fairspec.planning import OPTIONS

    e = st.args[0] if st.args else None
    if not (isinstance(e, ast.Compare) and e.op == "==" and isinstance(e.left, ast.Name) and e.left.id in OPTIONS):
        return None
    r, lines = e.right.span, source_lines(e.right.span.file)
    value = "..."
    if lines and r.line == r.end_line and r.line <= len(lines):
        value = lines[r.line - 1][r.column - 1:r.end_column - 1] or value
    return f"an option takes its value with a single '=': {e.left.id} = {value}"


_STATEMENTS = ("using", "search", "explain", "report", "require", "ensure", "forall")


def _misspelt_statement(claims) -> str | None:
    """`usng milp` reads as two claims (`usng`, `milp`): the keyword it misspells."""
    from fairspec.sema.exprs import closest

    for st in claims:
        e = st.args[0] if st.args else None
        if isinstance(e, ast.Name) and (near := closest(e.id, _STATEMENTS)) is not None:
            return f"'{e.id}' is no statement: the closest is '{near}'"
    return None


def build_property(ck, node: ast.PropertyDecl, name: str, env: dict):
    stmts = node.stmts
    foralls = [s for s in stmts if s.kind == "forall"]
    claims = [s for s in stmts if s.kind == "claim"]
    if foralls:
        if claims:
            ck.fail("FS501", "an individual-fairness property states its claim with require/ensure, not a metric",
                    claims[0].span, hint=_option_compared(claims[0]))
        return _individual_fairness(ck, node, name, env)
    if len(claims) != 1:
        span = claims[1].span if len(claims) > 1 else node.name.span
        ck.fail("FS501", f"property '{name}' must state exactly one claim (found {len(claims)})", span,
                hint=next((h for h in map(_option_compared, claims) if h), None) or _misspelt_statement(claims)
                or "e.g. disparate_impact(m, groups sex) >= 0.8, or forall x, x' : F ... for individual fairness")
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
        claim_range(ck, g.op, c, 0.0, 1.0, g.right.span, "a passing-rate ratio (the lowest passing rate over the "
                    "highest) lies in [0, 1]", never_hint="write >= 1 for equal passing rates, or a c below 1 such "
                                                          "as > 0.8",
                    undefined="where no row passes (0 / 0) the repair still makes some pass", verb="is met")
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
            from fairspec.files import OutsideRoot, PathError, check_target, real_path

            if model.path and real_path(out) == real_path(model.path):
                ck.fail("FS505", "the repaired model must not overwrite the original model file", w.span)
            read = ck.read_by_spec(out)  # another model, a data file, the spec or an import: never replaced
            if read:
                ck.fail("FS505", f"the output file {w.args[0].value!r} is {read}; the repaired model must not "
                                 "replace it", w.args[0].span,
                        hint="write the repaired model to a new .skops file; fairspec never replaces the spec, a file "
                             "it imports, or a model or data file it reads")
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
            env[a.name.id] = a.value
        elif a.kind == "trust":
            ck.fail("FS208", "'trust' applies to model files", a.span)
    named = ((a.name.id, a.span) for a in app.args if a.kind in ("kw", "clause"))
    if given_twice([*((p.name.id, a.span) for p, a in zip(params, pos)), *named], f"{pol.name.id}(...)", ck.sink,
                   code="FS210"):  # by position then by name, or by name twice
        raise LowerError()
    for p in params:
        if p.name.id not in env:
            if p.default is None:
                ck.fail("FS210", f"policy '{pol.name.id}' needs an argument for '{p.name.id}'", app.span)
            env[p.name.id] = p.default
        _check_param_type(ck, p, env[p.name.id])
    return env


# a parameter type that names a declaration: its kind, and what an unknown name of it is called
_DECLARED = {"model": (ast.ModelDecl, "model"), "features": (ast.FeaturesDecl, "feature set"),
             "data": (ast.DataDecl, "data set")}
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
    if not ok and t in _DECLARED and isinstance(v, ast.Name):
        d = ck.symbols.get(v.id)
        if d is None:  # no declaration: unknown (silent when an import failed: it may have declared it)
            table = {"model": ck.models, "features": ck.feature_sets, "data": ck.datasets}[t]
            ck.unknown("FS201", f"unknown {_DECLARED[t][1]} '{v.id}'", v.span, hint=did_you_mean(v.id, table))
        if isinstance(d.node, _DECLARED[t][0]):  # declared, but its declaration failed (reported there)
            raise LowerError()
    if not ok:
        ck.fail("FS301", f"argument for '{p.name.id}' must be a {t}", v.span)
