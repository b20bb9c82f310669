"""Property blocks, the options and the plan check (fairspec.sema.properties recognises the kinds): the
statements after a property's claim (``using milp``, ``timeout 10s``, ``samples 1000``, output paths, ...)
against the planning registry's declared options (fairspec.planning.OPTIONS), and whether the chosen
or default backend can decide the property (check_plan)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

from fairspec import ir
from fairspec.planning import BACKENDS, OPTIONS, plan
from fairspec.sema.exprs import did_you_mean
from fairspec.sema.property_args import _number, _resolve
from fairspec.syntax import ast


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
                        hint=did_you_mean(name.id, OPTIONS[st.kind].choices)
                        or f"{st.kind} {OPTIONS[st.kind].range_text}: {OPTIONS[st.kind].doc}")
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
    # an option the registry declares without a field of its own (max_cells, max_boxes) is carried in
    # extra, where Options.get finds it (it was passed as a keyword: a TypeError, an internal error)
    fields = ir.Options.__dataclass_fields__
    extra = tuple((k, o.pop(k)) for k in [k for k in o if k not in fields])
    return ir.Options(**o, extra=extra)


_VALUE_OPTIONS = [n for n, o in OPTIONS.items() if o.type != "statement"]


def _output_path(ck, key: str, text: str, node) -> None:
    """A path option (``chart = "FILE"``) is a file fairspec writes: relative to the spec's folder,
    no '..', inside the project, an image suffix, a regular file (or none yet) in a folder that
    exists -- checked now, before any work (fairspec.files.check_spec_output)."""
    from fairspec.files import CHART_SUFFIXES, OutsideRoot, PathError, check_spec_output

    try:
        check_spec_output(text, ck.root.parent, ck.roots, f"{key} file", suffixes=CHART_SUFFIXES,
                          protect=tuple(ck.reads))  # never over the spec, an import, a model or data file
    except OutsideRoot as e:
        ck.fail("FS212", str(e), node.span)
    except PathError as e:
        ck.fail("FS307", str(e), node.span, hint=f"{key} names an image file: {', '.join(CHART_SUFFIXES)}")


def _checked(ck, opt, value, node):
    err = opt.check(value)
    if err:
        if opt.type == "choice":
            ck.fail("FS307", f"{opt.name} = {opt.range_text}", node.span,
                    hint=(did_you_mean(value, opt.choices) if isinstance(value, str) else None) or opt.doc)
        from fairspec.planning.registry import percent_hint

        ck.fail("FS307", err, node.span, hint=percent_hint(opt, value) or opt.doc)
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
            if opt is not None and opt.check(prop.options.get(key)):  # this backend's own range
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
            else:
                at = _At(ck, prop, p, spec, key)
                rule = next((r for r in UNREAD if key in r.keys and r.when(at)), None)
                if rule is not None:
                    ck.sink.add("FS213", f"option '{key}' has no effect {rule.lead}: {rule.why(at)}", name_node.span,
                                hint=rule.hint(at) if rule.hint else f"drop '{key}'")
    return ok


def _no_pre_pass(ck, prop) -> str | None:
    """Why a pair property on a solver backend is not falsified on its data rows first (the only
    reader of max_rows there), when the spec alone says so; else None."""
    if prop.kind != "individual_fairness":
        return None
    fs = ck.feature_sets.get(prop.features)
    decl = ck.models.get(prop.model)
    return no_pre_pass(prop, fs is None or fs.data is not None, getattr(decl, "format", None), output_columns(decl))


def output_columns(decl) -> int | None:
    """A network's output column count as lint reads it: an ONNX model's (models.peek.peek_output_columns), a
    torch nn.Sequential's (models.peek_torch.torch_output_columns: any other module's forward may compute
    anything); None for any other format or where the file does not say. The loaded model's verdict notes
    read the same."""
    fmt = getattr(decl, "format", None)
    if fmt not in ("onnx", "torch") or getattr(decl, "path", None) is None:
        return None
    if fmt == "torch":
        from fairspec.models.peek_torch import torch_output_columns

        return torch_output_columns(decl.path, getattr(decl, "output", None))
    from fairspec.models.peek import peek_output_columns

    return peek_output_columns("onnx", decl.path, getattr(decl, "output", None))


def no_pre_pass(prop, has_data: bool, fmt: str | None, columns: int | None = None) -> str | None:
    """:func:`_no_pre_pass` on what it reads: whether the feature set has data rows, the model's format, its
    output's column count (:func:`output_columns`; None: not known)."""
    if not has_data:
        return f"feature set '{prop.features}' has no data rows to flip before the solver runs"
    if getattr(prop.options, "mode", None) == "maximize":
        return "a maximize run flips no data rows first (a flip found on data is no maximum)"
    if prop.pre:  # kinds/individual_fairness flips data rows only without one (and kinds/tree_outputs)
        return "its further require condition keeps the data rows from being flipped before the solver runs"
    if prop.post == "class_prob" and fmt in ("onnx", "torch"):
        # kinds/multi_pairs and kinds/class_prob: enumeration, the solvers; no flips (a tree model's are
        # kinds/tree_outputs', which read max_rows; logit(m(x), c) beyond small domains is the logit post of
        # column c -- forall c: of each column --, kinds/logit_column, whose data rows are flipped first as
        # logit(m(x))'s). A one-output network's positive class 1 is prob(m(x)) (kinds/class_prob's
        # _binary_column), whose data rows are flipped first: nothing said where the class may be that one
        if prop.cls == 1 and columns in (None, 1):
            return None
        if columns == 1:
            return ("a one-output network's prob(m(x), c) is decided without flipping data rows first, except "
                    "for its positive class 1 (decided as prob(m(x)), its data rows flipped first)")
        if columns is None:
            return ("a network's prob(m(x), c) is decided without flipping data rows first (but for a one-output "
                    "network's positive class 1, decided as prob(m(x)))")
        return "a network's prob(m(x), c) is decided without flipping data rows first"
    return None


def _seed_unread(ck, prop, backend: str | None) -> str | None:
    fs = ck.feature_sets.get(prop.features)
    decl = ck.models.get(prop.model)
    return seed_unread(prop, backend, fs is None or fs.data is not None, getattr(decl, "format", None),
                       output_columns(decl))


def seed_unread(prop, backend: str | None, has_data: bool, fmt: str | None,
                columns: int | None = None) -> str | None:
    """Why ``seed`` draws nothing for a pair property, when the spec alone says so (lint's FS213; the
    verdict notes of kinds.individual_fairness.unread_by_enumeration say it when it does not); else None.
    Its readers there: the seeded sample of ``max_rows`` data rows flipped first
    (fairspec.backends.data.flips.sample_rows), the partitions' estimate, a network's prob(m(x), c)
    attack (kinds.class_prob) and a tree model's branch and bound over leaf boxes (kinds.tree_boxes,
    whose model lint does not tell from a network: only ONNX and torch models are surely networks).
    The solvers (HiGHS, SCIP, z3) run with a fixed seed of their own: the same answer every run."""
    if prop.kind != "individual_fairness":
        return None
    flips = prop.options.max_rows is not None and (backend == "data" or
                                                        no_pre_pass(prop, has_data, fmt, columns) is None)
    if flips:
        return None
    if backend == "data":
        return "the data backend flips every data row, with no random choice (seed draws only the sample of max_rows rows)"
    if backend not in ("milp", "smt") or fmt not in ("onnx", "torch") or prop.post == "class_prob":
        return None
    estimate = prop.options.estimate if prop.options.estimate is not None else 1
    if (prop.options.partitions or 0) > 1 and estimate > 0:
        return None
    what = "HiGHS and SCIP run with fixed seeds of their own" if backend == "milp" else \
        "z3 runs with a fixed seed of its own"
    return (f"{what}, and a network's pair property makes no other random choice here (seed draws the sample of "
            "max_rows data rows flipped first and the partitions' estimate)")


def _no_compare(prop) -> str | None:
    """Why ``compare`` (between_groups | to_overall) changes nothing in the group metric, else None."""
    from fairspec.analyses.group_rates import METRICS, reads_compare

    m = METRICS.get(getattr(prop, "metric", None) or "")
    if m is None or reads_compare(m.name):
        return None
    return {"max_rate": f"{m.name} is the highest group's rate, compared with no other group or the whole population",
            "min_rate": f"{m.name} is the lowest group's rate, compared with no other group or the whole population",
            "inequality": f"{m.name} is an inequality index over individuals, with no rate compared between groups",
            "between_inequality": f"{m.name} is an inequality index over the groups' mean benefits, with no rate "
                                  "compared between groups",
            }.get(m.form, f"{m.name} is the largest group's value, compared with no other group or the whole "
                          "population")


def _individual_index(prop) -> bool:
    """The metric is an inequality index over individuals (theil_index, generalized_entropy_index): its
    value reads no group, so no group is too small (min_group_size) or left out (exclude_below)."""
    from fairspec.analyses.group_rates import METRICS

    m = METRICS.get(getattr(prop, "metric", None) or "")
    return m is not None and m.form == "inequality"


def _declared(prop, spec) -> str | None:
    """The name of the distribution a group metric is computed over when it is declared with its
    probabilities (a table: no data rows, so no bootstrap and no estimation error), else None."""
    name = getattr(prop, "distribution", None) if prop.kind == "group_metric" else None
    d = next((d for d in getattr(spec, "distributions", ()) if d.name == name), None) if name else None
    return name if d is not None and d.kind == "table" else None


# group metrics over a distribution that read no `method` (kinds.distribution._compute drops it)
_NO_METHOD = ("equalized_odds", "equal_opportunity")
# (option, kind) -> (the model family that does not read it, why): each read for the other family only
FAMILY_ONLY = {
    ("max_cells", "pba"): ("network", "it bounds a tree model's leaf combinations per point, and model '{m}' is a "
                                      "network (its neighbourhoods are bounded, then solved by LP or MILP)"),
    ("max_boxes", "k_discrimination"): ("network", "it bounds the boxes of a tree model's leaf combinations, and "
                                                   "model '{m}' is a network (searched, never split into boxes)"),
    ("engine", "pba"): ("trees", "model '{m}' is a tree model, whose neighbourhoods are decided exactly over its leaf "
                                 "combinations, by no LP or MILP solver"),
    ("workers", "pba"): ("trees", "model '{m}' is a tree model, whose neighbourhoods are decided over its leaf "
                                  "combinations in this process"),
}


def _family(ck, prop) -> str | None:
    """'network' (an ONNX or torch model), 'trees' (XGBoost, LightGBM, a scikit-learn tree model read
    cheaply from its file), or None when lint does not know."""
    m = ck.models.get(getattr(prop, "model", ""))
    fmt = getattr(m, "format", None)
    if fmt in ("onnx", "torch"):
        return "network"
    if fmt in ("xgboost", "lightgbm"):
        return "trees"
    if fmt == "sklearn" and ck.peek_models and getattr(m, "path", None):
        from fairspec.models.peek import is_tree_file

        try:
            return "trees" if is_tree_file(fmt, m.path) else None
        except Exception:  # noqa: BLE001 - an unreadable file is the loader's to report
            return None
    return None


# options that act on the input-space partitions only (a warning when partitions is not set)
PARTITION_ONLY = {"part_timeout": "it is each partition's time budget",
                  "refine": "it refines the partitions left without a proof",
                  "estimate": "it samples the share of the domain the partitions leave undecided",
                  "confidence": "it is the confidence of the partitions' estimate of the undecided share"}


class _At(NamedTuple):
    """What an FS213 rule reads: the checker, the property, its plan, the spec and the option's name."""
    ck: object
    prop: object
    plan: object
    spec: object
    key: str


@dataclass(frozen=True)
class Unread:
    """One FS213 rule: an option of ``keys`` that the planned backend takes but reads nowhere when
    ``when`` holds.  Said as "option 'KEY' has no effect LEAD: WHY" with ``hint`` (default: drop it)."""
    name: str
    keys: frozenset
    when: Callable[[_At], object]
    why: Callable[[_At], str]
    hint: Callable[[_At], str] | None = None
    lead: str = "here"


def _rule(name, keys, when, why, hint=None, lead="here") -> Unread:
    return Unread(name, frozenset(keys), when, why, hint, lead)


_MAX_ROWS_HINT = "max_rows bounds the data rows flipped before the solver runs; drop it"
_SEED_HINT = ("seed draws the random choices of a run (a sample of data rows, the partitions' estimate); this one "
              "makes none: drop it")


def _no_method_why(a: _At) -> str:
    if a.plan.backend == "elimination":
        return "elimination sums over the tree's paths, with no PPV search to enumerate or learn"
    return f"{a.prop.metric} reads every group's PPV given the label, enumerated whatever the method"


def _family_rule(a: _At) -> bool:
    rule = FAMILY_ONLY.get((a.key, a.prop.kind))
    return rule is not None and _family(a.ck, a.prop) == rule[0]


# FS213, option taken but read nowhere here: the first rule whose keys hold the option and whose
# predicate holds is said (at most one warning per option); tests/test_unread_options.py fires each
UNREAD: tuple[Unread, ...] = (
    _rule("partitions_only", PARTITION_ONLY,
          lambda a: a.prop.kind == "individual_fairness" and not (getattr(a.prop.options, "partitions", None) or 0) > 1,
          lambda a: PARTITION_ONLY[a.key],
          lambda a: "add a line such as partitions = 16 (the input space cut into 16 boxes, each decided on its "
                    f"own), or drop '{a.key}'",
          lead="without partitions"),
    _rule("max_rows_no_flips", ("max_rows",),
          lambda a: "data" not in (a.plan.backend, *a.plan.candidates) and _no_pre_pass(a.ck, a.prop),
          lambda a: _no_pre_pass(a.ck, a.prop), lambda a: _MAX_ROWS_HINT),
    _rule("other_model_family", {k for k, _ in FAMILY_ONLY}, _family_rule,
          lambda a: FAMILY_ONLY[a.key, a.prop.kind][1].format(m=a.prop.model)),
    _rule("method_no_ppv_search", ("method",),
          lambda a: a.prop.kind == "group_metric" and (
              a.plan.backend == "elimination" or getattr(a.prop, "metric", None) in _NO_METHOD),
          _no_method_why),
    _rule("compare_nothing", ("compare",),
          lambda a: a.prop.kind == "group_metric" and _no_compare(a.prop), lambda a: _no_compare(a.prop)),
    _rule("individual_index_groups", ("min_group_size", "exclude_below"),
          lambda a: a.prop.kind == "group_metric" and _individual_index(a.prop),
          lambda a: f"{a.prop.metric} is an inequality index over individuals: every data row counts, whatever "
                    "the size of its group (the groups only split the table)"),
    _rule("declared_distribution", ("seed", "bootstrap", "confidence"),
          lambda a: _declared(a.prop, a.spec) is not None,
          lambda a: f"distribution '{_declared(a.prop, a.spec)}' is declared with its probabilities, not estimated "
                    "from data rows: there is no estimate to resample (bootstrap, seed) or bound (confidence)"),
    _rule("seed_tree_pba", ("seed",),
          lambda a: a.prop.kind == "pba" and _family(a.ck, a.prop) == "trees" and
          a.prop.options.get("points") is None and a.prop.options.max_rows is None,
          lambda a: f"model '{a.prop.model}' is a tree model, whose neighbourhoods are decided exactly, with no "
                    "random choice (seed draws only the sample of points or max_rows rows)"),
    _rule("seed_pair_draws_nothing", ("seed",),
          lambda a: _seed_unread(a.ck, a.prop, a.plan.backend),
          lambda a: _seed_unread(a.ck, a.prop, a.plan.backend), lambda a: _SEED_HINT),
)


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
