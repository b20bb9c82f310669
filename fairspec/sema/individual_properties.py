"""Property blocks, the individual-level kinds: individual fairness (Fairify, HyFair 2-fairness:
``forall x, x' : F``, ``require x.* == x'.* except {...}``, ``ensure label(m(x)) == label(m(x'))``, with its
relaxation and the post of the model's output it compares), k-discrimination (HyFair:
``k_discrimination(m, over {...}, eps = 0.05) < k``) and PBA neighbourhoods
(``pba(m, flip sex, around data, delta {...})``)."""

from __future__ import annotations

from fairspec import ir
from fairspec.sema.exprs import Scope, did_you_mean
from fairspec.sema.options import parse_options
from fairspec.sema.property_args import (_check_args, _dataset, _feature_names, _inputs_known, _model_of, _number,
                                         _require_binary, _require_decision, _resolve,
                                         claim_range, resolve_groups)
from fairspec.syntax import ast
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly



# the smallest k-discrimination eps: ceil(1 / eps) buckets, and floor(p / eps), fit a 64-bit integer
KDISC_MIN_EPS = 2.0 ** -62

def _named_features(ck, call, key: str, env, fs, missing: str):
    """The ``key {a, b}`` argument a property needs and the feature names it lists (FS501 with
    ``missing`` when it is absent)."""
    arg = call.keyword(key)
    if arg is None:
        ck.fail("FS501", missing, call.span)
    return arg, _feature_names(ck, arg.value, env, fs, key,
                               empty={"over": "over {} names no feature, so no individual has a counterfactual",
                                      "flip": "flip {} names no feature, so there is nothing to flip"}.get(key))


def _kdisc(ck, node, name, env, call, op, rhs, stmts):
    _check_args(ck, call, {"over", "eps", "class"}, 1)
    model = _model_of(ck, call.positional()[0], env)
    output, cls = _kdisc_output(ck, model, call, env)
    if output == "score":
        _require_binary(ck, model, "k_discrimination(...)", call.span)
        if model.no_probability:        # its buckets are of the class probability
            from fairspec.sema.outputs import no_probability_hint

            ck.fail("FS415", f"k_discrimination(...) buckets the class probability, but {model.no_probability}",
                    call.span, hint=no_probability_hint(model))
    fs = ck.feature_sets[model.features]
    over, names = _named_features(ck, call, "over", env, fs,
                                  "k_discrimination(...) needs the protected features: over {sex, race}")
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
    # the buckets floor(p / eps) of a probability p in [0, 1], ceil(1 / eps) of them: eps 0 has none and
    # eps >= 1 one (every k is 1; the search refuses both), and certify counts them in 64-bit integers
    # (eps = 0 and eps = 1e-300 were accepted here and ended in exit 4 on a tree model)
    if not 0 < eps < 1:
        ck.fail("FS307", f"eps = {_spec_number(eps)} is not a bucket width: k-discrimination puts each probability p in the "
                         f"bucket floor(p / eps), so eps must lie in (0, 1)", eps_arg.span,
                hint="eps = 0.05 compares probabilities in buckets of width 0.05")
    if eps < KDISC_MIN_EPS:
        ck.fail("FS307", f"eps = {_spec_number(eps)} is below 2^-62 (about 2.2e-19), the smallest bucket width fairspec counts "
                         f"(its ceil(1 / eps) buckets are counted in 64-bit integers)", eps_arg.span)
    if op not in ("<", "<="):
        ck.fail("FS501", "state the largest acceptable k: k_discrimination(...) < k", call.span)
    k = _number(ck, rhs, env, "k")
    if k != int(k):     # a bucket count: the IR keeps k as an int (below 1 is FS507 just after)
        ck.fail("FS307", "k must be a whole number", rhs.span)
    claim_range(ck, op, k, 1.0, None, rhs.span, "k_discrimination(...) counts the distinct buckets of a point's "
                "counterfactuals, at least 1")
    options = parse_options(ck, stmts, env, "k_discrimination")
    return ir.KDiscrimination(name, "k_discrimination", options, node.span, model=model.name, features=fs.name,
                              over=names, eps=eps, op=op, k=int(k), output=output, cls=cls)


def _kdisc_output(ck, model: ir.Model, call, env) -> tuple[str, int | None]:
    """What k-discrimination counts (issue 25): the binary score in eps-buckets ("score"); a
    multiclass model's predicted class ("class": k distinct classes among the counterfactuals); or,
    with ``class = c``, class c's probability in eps-buckets ("class_prob")."""
    from fairspec.sema.outputs import class_arg, needs_index

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
    return "class_prob", class_arg(ck, model, _resolve(a.value, env))


def _pba(ck, node, name, env, call, op, rhs, stmts):
    _check_args(ck, call, {"flip", "around", "delta", "given"}, 1)
    model = _model_of(ck, call.positional()[0], env)
    _require_binary(ck, model, "pba(...)", call.span)
    _require_decision(ck, model, "pba(...)", call.span)
    fs = ck.feature_sets[model.features]
    enc = ck.encodings.get(model.name)
    flip, flips = _named_features(ck, call, "flip", env, fs, "pba(...) needs the sensitive attribute to flip: flip sex")
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
                ck.fail("FS205", f"unknown feature '{it.key.id}' in {fs.name}", it.key.span,
                        hint=did_you_mean(it.key.id, [x.name for x in fs.features]))
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
        claim_range(ck, op, threshold, 0.0, 1.0, rhs.span, "pba(...) is a share of points in [0, 1]",
                    undefined="with no point selected check reports it unknown",
                    never_hint="write >= 1 for every point, or a share below 1 such as >= 0.9")
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
            free = _feature_names(ck, e.excluded, env, fs, "except",
                                  empty="except {} lets no feature differ, so no pair of inputs is ever compared")
            continue
        rel = _relaxation(e, var.id, var2.id)
        if rel is not None:
            fname, tol_expr = rel
            if fs.get(fname) is None:
                ck.fail("FS205", f"unknown feature '{fname}' in {fs.name}", e.span)
            tol = _number(ck, tol_expr, env, "the tolerance")
            strict = e.op == "<"
            before = dict(relaxed)
            if fname in before:
                # two tolerances on one feature are both required: the tighter one (the strict one at an
                # equal bound) is what the pair must meet (each backend reads one tolerance per feature)
                t0, s0 = before[fname], fname in relaxed_strict
                if (tol, not strict) >= (t0, not s0):
                    continue
                relaxed = [(f, t) for f, t in relaxed if f != fname]
                relaxed_strict = [f for f in relaxed_strict if f != fname]
            relaxed.append((fname, tol))
            if strict:
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
    _inputs_known(ck, model, ensures[0].span)       # a model that failed to load: reported there, no FS301
    if model.features != fs.name:
        ck.fail("FS301", f"model '{model_name}' reads feature set '{model.features}', not '{fs.name}'", ensures[0].span)
    for f, _ in relaxed:
        if f in free:
            ck.fail("FS501", f"'{f}' is already free to differ; a tolerance on it adds nothing", node.span)
    options = parse_options(ck, stmts, env, "individual_fairness")
    prop = ir.IndividualFairness(name, "individual_fairness", options, node.span, model=model_name, features=fs.name,
                                 var=var.id, var_prime=var2.id, free=free, relaxed=tuple(relaxed), pre=tuple(pre),
                                 post=post, eps=eps, eps_op=eps_op, relaxed_strict=tuple(relaxed_strict),
                                 cls=cls)
    _no_pair(ck, prop, fs, [s for s in stmts if s.kind == "require"], node)
    return prop


def _no_pair(ck, prop: ir.IndividualFairness, fs: ir.FeatureSet, requires, node) -> None:
    """FS509 (a warning): no pair meets the pre-condition (fairspec.ir.no_pair: a tolerance below 0,
    bounds on one feature that no value of its domain meets, a relaxed feature's two inputs bounded
    further apart than its tolerance), so the property holds vacuously, and
    check says so, ``holds (proved)`` on certify's proof (fairspec.kinds.no_pair). It was the error
    FS307 for a tolerance below 0; a vacuous claim is legal, though almost surely not what was meant."""
    from fairspec.ir.no_pair import no_pair_reason

    why = no_pair_reason(prop, fs)
    if why is None:
        return
    span = requires[-1].span if requires else node.name.span
    for st in requires:         # the last require line reading a feature the sentence names
        if any(f"{v}.{f}" in why for v in (prop.var, prop.var_prime) for f in _names(st.args[0])):
            span = st.span
    ck.sink.add("FS509", f"{why}, so '{prop.name}' holds vacuously: check reports holds (proved) and says "
                         f"nothing about the model", span,
                hint=_NO_PAIR_HINTS["|" if why.startswith("|") else "no" if why.startswith("no value")
                                    else "tie" if why.startswith("the pre-condition ties") else "apart"])


_NO_PAIR_HINTS = {
    "|": "a tolerance is >= 0 (<= 0 ties the feature; < t with t > 0 lets it move)",
    "no": "bounds on one feature must leave a value of its declared range (a feature the pair ties is one value in "
          "both inputs)",
    "tie": "the features after except are the ones a pair differs in: tie one only when another may differ "
           "(except {sex, race} with x.sex == x'.sex compares pairs that differ in race)",
    "apart": "a relaxed feature's tolerance must reach across the gap its bounds leave between the two inputs (or "
             "the bounds must meet)"}


def _names(e) -> set[str]:
    """The feature names an ast expression reads as VAR.NAME."""
    import dataclasses

    out, stack = set(), [e]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Attr) and isinstance(n.name, ast.Name):
            out.add(n.name.id)
        if dataclasses.is_dataclass(n):
            for f in dataclasses.fields(n):
                v = getattr(n, f.name)
                stack.extend(v if isinstance(v, (list, tuple)) else [v])
    return out


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
            # |d| >= 0: < 0 or <= -0.5 is never met, every pair with the pre-condition breaks it (FS507)
            # and of probabilities at most 1: <= 1 (or <= 5, a percentage) holds for every pair (FS508)
            claim_range(ck, lowered.op, eps, 0.0, 1.0 if a.fn == "prob" else None, getattr(e, "right", e).span,
                        f"the post-condition's |{a.fn}(...) - {a.fn}(...)| is an absolute difference"
                        + (" of probabilities, at most 1" if a.fn == "prob" and eps > 0 else ", never below 0"),
                        below_hint=f"write <= 0 for equal outputs, or {lowered.op} eps with eps > 0",
                        undefined="every pair meets it, so check proves nothing about the model")
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
