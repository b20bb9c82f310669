"""The one check function behind the CLI, the tests and (later) the editor server.

    lint(path)   parse, resolve imports, type-check against model headers and data samples
    check(path)  lint, then load models and data and run every property on its backend
"""

from __future__ import annotations

import importlib
import os
import time
from pathlib import Path

from fairspec.diagnostics import DiagnosticError, cap_per_file, sort_key
from fairspec.files import Roots, _real
from fairspec.planning import plan
from fairspec.report.check_report import Report
from fairspec.sema.check import CheckResult, check_file
from fairspec.verdict import Unsupported, Verdict, unknown


def nothing_to_check(path) -> str:
    """The sentence of a check whose spec states no property (none of its own, and the policies it applies,
    if any, none): exit code 2, as a spec error, in every format, the API and the pytest plugin."""
    return (f"no property to check in {path} (the spec and the policies it applies state none): a check that "
            f"checks nothing does not pass; state a property, or apply a policy that states one")


class InputError(Exception):
    """A model or data file could not be used: one sentence naming the file."""


def lint(path, *, sources: dict | None = None, allow=(), substitutes: dict | None = None,
         ignore=()) -> CheckResult:
    """``allow``: folders outside the spec's project that its paths may name (--allow-path);
    ``substitutes``: {("model" | "data", name): file} read instead of the declared files (fairspec.api);
    ``ignore``: warning codes suppressed everywhere (--ignore). The spec's ``# fairspec: ignore[...]``
    comments suppress theirs where they stand (fairspec.diagnostics.ignores): those warnings move to
    ``suppressed``, and the spec carries them for what check finds later (``ir.Spec.ignored``)."""
    from fairspec.diagnostics import ignores

    res = check_file(Path(path), sources=sources, allow=allow, substitutes=substitutes)
    comments = [ig for m in (res.modules or ()) for ig in getattr(m, "ignores", ())]
    flags = ignores.flag_codes(ignore)
    if comments or flags:
        from dataclasses import replace

        late = ignores.check_time(res.spec) if res.spec is not None else {}  # check judges those (FS216)
        res.diagnostics, res.suppressed = ignores.apply(res.diagnostics, comments, flags, file=str(path),
                                                        defer=late)
        if res.spec is not None:
            res.spec = replace(res.spec, ignored=ignores.ignored_places(comments, flags))
    res.diagnostics.sort(key=sort_key)
    res.diagnostics = cap_per_file(res.diagnostics)
    return res


def check(path, *, only: str | None = None, progress=None, models: dict[str, str] | None = None,
          parallel: bool = False, allow=(), substitutes: dict | None = None, before=None, ignore=()) -> Report:
    """Lint, then decide every property (or ``only``) on its backend.

    models:   {model name: file} replaces model files declared in the spec: each is linted in place of
              the declared one (its names matched to the encode block), as ``--models``' files are.
              A name the spec declares no model by raises fairspec.errors.FairspecError (the API's).
    parallel: the properties are independent jobs through the executor (``--workers N`` > 1 or
              ``--cluster``); models and data are loaded once per worker; the verdicts come
              back in the spec's order, the same as a serial run.
    before:   called with every file the spec reads (Report.reads) once lint is done, before any
              model or data is loaded (the command line checks --html FILE there); what it raises
              propagates.
    ignore:   warning codes suppressed everywhere (--ignore), as in :func:`lint`.
    """
    t0 = time.perf_counter()
    # a file given for a model is linted in place of the declared one, as --models' files are: its
    # input names are matched to the encode block (FS420, FS421, FS427 name it), never only swapped in
    subs = {**(substitutes or {}), **{("model", n): Path(f) for n, f in (models or {}).items()}}
    res = lint(path, allow=allow, substitutes=subs or None, ignore=ignore)
    _refuse_undeclared(path, res, models)
    report = Report(str(path), res.diagnostics, suppressed=list(res.suppressed))
    report.reads = tuple(dict.fromkeys((*res.inputs, *(str(f) for f in (models or {}).values()))))
    if before is not None:
        before(report.reads)
    report.started, report.invocation = _now(), _invocation(only, ignore, allow)
    if report.has_errors or res.spec is None:
        report.seconds = time.perf_counter() - t0
        return report
    spec = _with_models(res.spec, models)
    props = [p for p in spec.properties if only is None or p.name == only]
    report.property_spans, report.policy_sites = _sites(res)
    report.inputs = tuple(x for x in [m.path for m in spec.models] + [d.path for d in spec.datasets] if x)
    report.input_kinds = {**{m.path: "model" for m in spec.models if m.path},
                          **{d.path: "data" for d in spec.datasets if d.path}}
    report.imports = tuple(str(m.file) for m in (res.modules or ()) if str(m.file) != str(res.spec.file))
    report.claims = {p.name: (getattr(p, "op", None), getattr(p, "threshold", None)) for p in spec.properties}
    if not spec.properties:  # a gate that checks nothing must not pass (exit 2: assert_fair and the plugin fail it too)
        report.error = nothing_to_check(path)
        report.seconds = time.perf_counter() - t0
        return report
    if only is not None and not props:
        names = ", ".join(p.name for p in spec.properties)
        report.error = f"no property named {only!r} in {path} (properties: {names})"
        return report
    if only is not None:        # --property NAME: the other properties' warnings are not this run's
        mine = report.property_spans.get(only)
        others = [s for name, s in report.property_spans.items() if name != only and s != mine]
        report.diagnostics = [d for d in report.diagnostics
                              if d.is_error or d.span is None or not any(_within(d.span, s) for s in others)]
        report.suppressed = [x for x in report.suppressed
                             if x[0].span is None or not any(_within(x[0].span, s) for s in others)]
    cluster_error = _cluster_error() if parallel else None
    if cluster_error:
        report.error = cluster_error
        report.seconds = time.perf_counter() - t0
        return report
    if parallel and len(props) > 1:
        from fairspec.runtime.executor import get_executor

        key = _models_key(models)
        jobs = [(key, p.name, p.kind) for p in props]
        ex = get_executor(len(props))
        try:
            outs = ex.map(_property_job, jobs, shared=_job_state(res.spec, Roots.for_spec(Path(path), allow)),
                          on_error=_failed_job, budget=_budgets(props, spec))
        except KeyboardInterrupt:  # Ctrl-C / SIGTERM: the workers are ended; nothing was decided
            _mark_interrupted(report)
            outs = [{"verdict": unknown(p, _interrupted("before it was decided"))} for p in props]
        finally:
            ex.close()
        for prop, out in zip(props, outs):
            if _merge_out(report, prop, out, spec):
                break
    else:
        from fairspec.runtime.context import Context

        ctx = Context(spec, roots=Roots.for_spec(Path(path), allow))
        ctx.pass_mates = _pass_mates(props, spec)  # the data backend counts these in one pass per data set
        for prop in props:
            if report.interrupted:  # Ctrl-C earlier: the rest are not run
                report.verdicts.append(unknown(prop, _interrupted("before it ran")))
                continue
            if _merge_out(report, prop, _run_property(prop, ctx, progress), spec):
                break
    _unused_at_check(report, res, spec)
    report.seconds = time.perf_counter() - t0
    return report


def _unused_at_check(report: Report, res, spec) -> None:
    """FS216 for an ``ignore[FS427]`` comment at a scikit-learn pickle's encode block when the model,
    loaded, records its input names (so check said no FS427): lint leaves those comments to check
    (fairspec.diagnostics.ignores.check_time). A model no property loaded is not judged."""
    from fairspec.diagnostics import ignores

    late = ignores.check_time(spec)
    order = {x.get("name"): x.get("input_order") for x in report.loads if x.get("what") == "model"}
    for m in (res.modules or ()) if late else ():
        for ig in getattr(m, "ignores", ()):
            for code, span in ig.codes:
                if order.get(late.get((ig.file, ig.line, code))) == "names":
                    d = ignores.unused(ig, code, span)
                    if spec.ignores("FS216", span):  # acknowledged: ignore[FS216] there, or --ignore FS216
                        external = (None, None, "FS216") in spec.ignored
                        report.suppressed.append((d, "external" if external else "inSource"))
                    else:
                        report.diagnostics.append(d)



def _pass_mates(props, spec) -> tuple:
    """The group metrics of this run the planner gives the data backend, each with its resamples (the
    ``bootstrap`` option, else the data backend's default): the data backend counts those over the
    same rows in one pass (``fairspec.backends.data.cell_counts.count``), and asks no planner itself."""
    from fairspec.kinds.on_data import RUNNER
    from fairspec.planning import plan, setting

    return tuple((p, setting(p, "bootstrap", "data")) for p in props
                 if p.kind == "group_metric" and plan(p, spec).runner == RUNNER)


def _now():
    import datetime

    return datetime.datetime.now(datetime.timezone.utc)


def _sites(res) -> tuple[dict, dict]:
    """(property name -> the span its findings are located at, applied property name -> (the policy
    property's span, policy name, property name)): an applied policy's property is located at the
    user's `apply` line, never in the policy file (which may be inside the installed package)."""
    sites = getattr(res, "apply_sites", {}) or {}
    spans = {}
    for p in res.spec.properties:
        span = sites[p.name][0] if p.name in sites else p.span
        if span is not None:
            spans[p.name] = span
    return spans, {name: (pspan, pol, prop) for name, (_, pspan, pol, prop) in sites.items()}


def _within(a, b) -> bool:
    """Span a lies inside span b (same file, lines and columns)."""
    return (a.file == b.file and (a.line, a.column) >= (b.line, b.column)
            and (a.end_line, a.end_column) <= (b.end_line, b.end_column))


def check_models(path, name: str | None, folder, *, only: str | None = None, parallel: bool = False, allow=(),
                 before=None, ignore=()):
    """The spec applied to each model file in ``folder`` in place of model ``name``: [(file, Report)].

    Every (model file, property) pair is one job through the executor, so candidate models are
    compared in parallel; the reports come back in file order.  A file of the folder whose real
    location is outside the project, the allowed folders and the folder itself (a symbolic link
    leading out) is refused in its report, as a declared model path there is (FS212), and never opened.
    ``before``: as in :func:`check`, with the model files of the folder too.
    """
    from fairspec.runtime.executor import SerialExecutor, get_executor

    res = lint(path, allow=allow, ignore=ignore)
    if res.spec is None or any(d.is_error for d in res.diagnostics):
        return [(None, check(path, only=only, allow=allow, before=before, ignore=ignore))]
    cluster_error = _cluster_error() if parallel else None
    if cluster_error:
        raise InputError(cluster_error)
    files = [m for m in res.spec.models if m.path is not None]
    if name is None:
        if len(files) != 1:
            names = ", ".join(m.name for m in files)
            raise InputError(f"{path} declares {len(files)} model files ({names}): say which one the folder "
                             f"replaces, as --models NAME=FOLDER")
        name = files[0].name
    decl = next((m for m in files if m.name == name), None)
    if decl is None:
        raise InputError(f"{path} declares no model file named {name!r}")
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"model folder {folder} is not a folder")
    exts = {"onnx": (".onnx",), "torch": (".pt", ".pth"), "sklearn": (".skops", ".pkl", ".joblib")}
    # every entry with a model file's name: a pipe, device, folder or dangling link so named is no model
    # file, and its report says so in one sentence (lint's FS401, nothing opened) rather than leaving it out
    suffixes = exts.get(decl.format, (Path(decl.path).suffix,))
    cands = sorted(str(p) for p in folder.iterdir() if p.suffix.lower() in suffixes)
    if not cands:
        raise InputError(f"model folder {folder} holds no {decl.format} model file "
                         f"({', '.join(exts.get(decl.format, ()))})")
    refused = _confine_candidates(folder, cands, Roots.for_spec(Path(path), allow))
    if before is not None:
        before(tuple(dict.fromkeys((*res.inputs, *cands))))
    props = [p for p in res.spec.properties if only is None or p.name == only]
    # Each file is linted in place of the declared one: what lint reads from a model file (its input
    # names, matched to the encode block -- FS420, FS421, FS427 --, its width, its readout) is that
    # file's, and the diagnostics name it. A file with an error gets its diagnostics, no verdicts.
    # A file whose link leads out is never opened: its lint is that one FS212 at the model's path.
    linted = {f: lint(path, allow=allow, substitutes={("model", name): Path(f), ("refused", name): refused.get(f)},
                      ignore=ignore) for f in cands}
    good = [f for f in cands if linted[f].spec is not None and not any(d.is_error for d in linted[f].diagnostics)]
    jobs = [(_models_key({name: f}), p.name, p.kind) for f in good for p in props]
    state = _job_state(res.spec, Roots.for_spec(Path(path), allow),
                       {_models_key({name: f}): linted[f].spec for f in good})
    ex = get_executor(len(jobs)) if parallel else SerialExecutor()
    try:
        outs = ex.map(_property_job, jobs, shared=state, on_error=_failed_job,
                      budget=_budgets(props, res.spec)) if jobs else []
    except KeyboardInterrupt:  # Ctrl-C / SIGTERM: the workers are ended; every report says so
        outs = [{"verdict": unknown(p, _interrupted("before it was decided")), "interrupted": True}
                for _ in good for p in props]
    finally:
        ex.close()
    reports = []
    for f in cands:
        t0 = time.perf_counter()
        report = Report(str(path), list(linted[f].diagnostics), suppressed=list(linted[f].suppressed))
        report.started, report.invocation = _now(), _invocation(only, ignore, allow, name, folder)
        report.property_spans, report.policy_sites = _sites(res)
        report.inputs = tuple(x for x in [m.path for m in res.spec.models] + [d.path for d in res.spec.datasets]
                              if x) + (f,)
        report.reads = tuple(dict.fromkeys((*res.inputs, f)))
        report.input_kinds = {**{m.path: "model" for m in res.spec.models if m.path},
                              **{d.path: "data" for d in res.spec.datasets if d.path}, f: "model"}
        report.imports = tuple(str(m.file) for m in (res.modules or ()) if str(m.file) != str(res.spec.file))
        report.claims = {p.name: (getattr(p, "op", None), getattr(p, "threshold", None)) for p in res.spec.properties}
        k = good.index(f) if f in good else None
        for prop, out in zip(props, outs[k * len(props):(k + 1) * len(props)] if k is not None else ()):
            if _merge_out(report, prop, out, res.spec, (f, decl.span)):
                break
        report.seconds = time.perf_counter() - t0
        reports.append((f, report))
    return reports


def _invocation(only, ignore, allow, name=None, folder=None) -> dict:
    """What the caller asked beside the spec (provenance: the run replays with the same): the one
    property run (--property), the warnings suppressed everywhere (--ignore), the folders allowed
    (--allow-path); for --models, the model name and folder."""
    from fairspec.diagnostics.ignores import flag_codes

    out = {"property": only, "ignore": sorted(flag_codes(ignore)),
           "allow_path": [str(a) for a in allow or ()]}
    if folder is not None:
        out["models"] = {"name": name, "folder": str(folder)}
    return out


def _confine_candidates(folder: Path, cands: list[str], roots: Roots) -> dict[str, str]:
    """{file: sentence} for each file of the ``--models`` folder that lies, symbolic links followed,
    outside the project, the allowed folders and the folder itself (named on the command line, the
    folder may be anywhere); such a file is refused (FS212 in its report) and never opened, the others
    are checked. InputError when the folder itself is a link inside the project that leads out."""
    from fairspec.files import _real

    if roots.leads_out(folder):
        raise InputError(f"model folder {folder} is a symbolic link (or lies below one) that leads out of the "
                         f"project {roots.project}; name the folder itself")
    mine = Roots(roots.project, (*roots.extra, _real(folder)))
    return {c: f"model file {c} is a symbolic link to a file outside the project {roots.project} and the folder "
               f"{folder}; it is not opened" for c in cands if not mine.contains(Path(c))}


def _refuse_undeclared(path, res, models: dict | None) -> None:
    """FairspecError for a name of ``models`` the spec (its files, imports included) declares no model
    by: the file given for it would be read by nothing, and the declared one checked in its place. The
    API's sentence (fairspec.api refuses the same names). A spec that does not parse says nothing here:
    its diagnostics are the report."""
    if not models or not res.modules:
        return
    from fairspec.errors import undeclared
    from fairspec.syntax import ast

    declared = list(dict.fromkeys(d.name.id for m in res.modules for d in m.decls if isinstance(d, ast.ModelDecl)))
    for name in models:
        if name not in declared:
            raise undeclared(path, "model", "models", name, declared)


def _with_models(spec, models: dict[str, str] | None):
    if not models:
        return spec
    from dataclasses import replace

    return replace(spec, models=tuple(replace(m, path=models[m.name]) if m.name in models else m
                                      for m in spec.models))


def _class_in_range(prop, ctx) -> None:
    """Lint's FS417 (a class past the model's last column) at check time, for a model whose number of classes
    only the loaded file tells (a TorchScript net, an ONNX output of unknown width): a DiagnosticError at the
    property, never a backend indexing past the output (an internal error) or a class predicted on no row."""
    from fairspec import ir

    c = prop.param("class") if isinstance(prop, ir.GroupMetric) else getattr(prop, "cls", None)
    name = getattr(prop, "model", "")
    if not name or not isinstance(c, int) or isinstance(c, bool):
        return
    m = ctx.spec.model(name)
    if m is None or m.format in ("rule", "predictions") or m.n_classes is not None:
        return                          # lint checked it against the classes it read
    loaded = ctx.model(name)
    K = getattr(getattr(loaded, "readout", None), "n_classes", None)
    if K is None and getattr(getattr(loaded, "readout", None), "task", None) != "regression":
        K = _columns_run(prop, ctx, loaded)
    if K is not None and c >= K:
        from fairspec.diagnostics import Sink

        raise DiagnosticError(Sink().add("FS417", f"class {c} is out of range: model '{name}' has {K} classes "
                                                  f"(its output columns, known once {m.path} is loaded)", prop.span,
                                         hint=f"classes are columns counted from 0: 0 .. {K - 1}"))

def _columns_run(prop, ctx, model) -> int | None:
    """The classes of a model whose output width the file leaves symbolic (an ONNX ``[N, "K"]``): its columns
    on one encoded row (one column: a binary score, classes 0 and 1); None where it cannot be run so."""
    try:
        import numpy as np

        Y = model.outputs(np.zeros((1, ctx.encoding(prop.model).width)))
    except Exception:               # the backend reports whatever this model cannot do
        return None
    return max(2, int(np.shape(Y)[1])) if np.ndim(Y) == 2 else None


def _vacuous(prop, spec):
    from fairspec.kinds.no_pair import vacuous

    return vacuous(prop, spec) if prop.kind == "individual_fairness" else None


def _run_property(prop, ctx, progress=None) -> dict:
    """Decide one property: {"verdict"} or {"error"} (a bad model/data file), with what it loaded."""
    from fairspec.models import ModelLoadError
    from fairspec.runtime.data import DataError
    from fairspec.runtime.jobs import JobCrashed, WorkerDied

    p = plan(prop, ctx.spec)
    backend = p.backend or "/".join(p.candidates) or None
    t1 = time.perf_counter()
    loaded, n_loads, n_warn, n_sup = ctx.load_seconds, len(ctx.loads), len(ctx.warnings), len(ctx.suppressed)
    n_at, n_at_sup = len(ctx.located), len(ctx.located_suppressed)
    ctx.begin_property()  # the property's time budget runs from here (fairspec.runtime.context.remaining)
    out: dict = {}
    try:
        if (vacuous := _vacuous(prop, ctx.spec)) is not None:     # no pair meets the pre-condition (FS509)
            v = vacuous
        elif not p.runs:
            v = unknown(prop, p.why)
        else:
            _class_in_range(prop, ctx)      # FS417 where only the loaded model tells its classes (a torch net)
            module, _, fn = p.runner.partition(":")
            v = getattr(importlib.import_module(module), fn)(prop, ctx, progress)
    except KeyboardInterrupt:  # Ctrl-C / SIGTERM: this property is unknown, the ones decided before stay
        out["interrupted"] = True
        v = unknown(prop, _interrupted("before it was decided"), backend=backend)
    except (ModelLoadError, DataError) as e:
        v = None
        out["error"] = str(e)
        if e.path is not None:  # the file it names: the error is located at its declaration
            out["error_path"] = str(e.path)
    except Unsupported as e:  # a construct the backend cannot lower: unknown, with the reason
        v = unknown(prop, str(e), backend=backend, details=e.details)
    except DiagnosticError as e:    # a spec error only the loaded model reveals (FS402)
        v = None
        out["diagnostics"] = list(e.diagnostics)
    except WorkerDied as e:  # a pool's worker died under the backend (killed, out of memory): the run failed
        out["internal"] = f"{prop.name}: {e}"
        v = unknown(prop, f"internal error: {e} while the {backend} backend ran; nothing was decided",
                    backend=backend)
    except JobCrashed as e:  # a job of the backend's raised what is no refusal (a bug, a crash): as if it raised here
        from fairspec import interrupt

        if os.environ.get("FAIRSPEC_DEBUG"):
            raise
        if interrupt.requested():  # a solver stopped by Ctrl-C raised in its job: the signal's, not a bug
            out["interrupted"] = True
            v = unknown(prop, _interrupted("before it was decided"), backend=backend)
        else:
            out["internal"] = f"{prop.name}: {e}"
            v = unknown(prop, f"internal error: {e} while the {backend} backend ran; nothing was decided "
                              "(this is a fairspec bug)", backend=backend)
    except Exception as e:  # noqa: BLE001 - a bug in a backend: say so, keep the other verdicts
        if os.environ.get("FAIRSPEC_DEBUG"):
            raise
        out["internal"] = f"{prop.name}: {type(e).__name__}: {e}"
        v = unknown(prop, f"internal error in the {backend} backend ({type(e).__name__}: {e}); "
                          "this is a fairspec bug", backend=backend)
    from fairspec import interrupt

    if interrupt.requested() and not out.get("interrupted"):
        # Ctrl-C reached a solver, which stopped: only a replayed witness is still a verdict. A model or data
        # file's error after the signal is the signal's (a library that turned the KeyboardInterrupt into its
        # own exception): the property is unknown, the report's exit code the signal's (it said 2 while the
        # process exited 130)
        out["interrupted"] = True
        if "error" in out:
            out.pop("error")
            out.pop("error_path", None)
            v = unknown(prop, _interrupted("before it was decided"), backend=backend)
        elif v is not None and v.status != "violated":
            v = unknown(prop, _interrupted("before it was decided"), backend=backend)
    from fairspec.runtime.label_agreement import judge

    judge(ctx, prop)    # FS439: an ONNX classifier's own label against the declared output, on what it evaluated
    if v is not None:
        v = _class_labels(prop, ctx, v)
        # a property's seconds are its own work: the files it loaded first are reported under loads
        out["verdict"] = _with_seconds(v, max(0.0, time.perf_counter() - t1 - (ctx.load_seconds - loaded)))
    out["loads"] = ctx.loads[n_loads:]
    out["warnings"] = ctx.warnings[n_warn:]
    out["suppressed"] = ctx.suppressed[n_sup:]
    out["located"] = ctx.located[n_at:]     # check's warnings about the spec, at their span (FS427, FS433, FS435, FS439)
    out["located_suppressed"] = ctx.located_suppressed[n_at_sup:]
    return out


def _declared_at(path, spec, substitute=None):
    """The span of the declaration of the model or data file ``path`` (the same file: real paths
    compared, never one path's text found inside another's), or of the declaration a --models file
    ``substitute`` = (file, span) replaces; None for a file no declaration names."""
    if not path:
        return None
    real = _real(Path(path))
    decls = ([substitute] if substitute else []) + [(x.path, x.span) for x in
                                                    (*getattr(spec, "datasets", ()), *getattr(spec, "models", ()))]
    return next((span for p, span in decls if p and span is not None and _real(Path(p)) == real), None)


def claim_thresholds(prop) -> tuple:
    """The numbers a property's claim compares with: a metric's threshold, a pair property's eps (a
    report prints a value near one with the digits that keep it on its side: literals.shown)."""
    found = [getattr(prop, "threshold", None)]
    if getattr(prop, "post", "label") not in ("label", "class"):
        found.append(getattr(prop, "eps", None))
    return tuple(t for t in found if isinstance(t, (int, float)) and not isinstance(t, bool))


def _load_key(x: dict) -> str:
    return repr(sorted((k, repr(v)) for k, v in x.items() if k != "seconds"))


def _merge_out(report: Report, prop, out: dict, spec=None, substitute=None) -> bool:
    """Add one property's outcome to the report; True when a bad input file stops the run (located at
    the declaration of the file the error names -- ``substitute``: (a --models file, the declaration
    it replaces) -- else at the property)."""
    # each worker process loads the files its properties need: a file is listed once (its first load), as a
    # serial run lists it, so the report does not depend on how many processes ran the check
    for x in out.get("loads", ()):
        if all(_load_key(x) != _load_key(y) for y in report.loads):
            report.loads.append(x)
    report.warnings.extend(w for w in out.get("warnings", ()) if w not in report.warnings)
    report.suppressed_warnings.extend(w for w in out.get("suppressed", ()) if w not in report.suppressed_warnings)
    report.diagnostics.extend(d for d in dict.fromkeys(out.get("located", ())) if d not in report.diagnostics)
    said = [*dict.fromkeys(out.get("located", ())), *out.get("warnings", ())]
    if said:
        report.property_warnings.setdefault(prop.name, []).extend(said)
    report.suppressed.extend(x for x in out.get("located_suppressed", ()) if all(x[0] != y[0] for y in report.suppressed))
    if "internal" in out:
        report.internal_errors.append(out["internal"])
    if out.get("interrupted"):
        _mark_interrupted(report)
    if "diagnostics" in out:
        report.diagnostics.extend(out["diagnostics"])
        return True
    if "error" in out:
        report.error = out["error"]
        report.error_span = (_declared_at(out.get("error_path"), spec, substitute)
                             or report.property_spans.get(prop.name))
        return True
    v, warning = certified(out["verdict"])
    if warning and warning not in report.warnings:
        report.warnings.append(warning)
    from dataclasses import replace

    report.verdicts.append(replace(v, thresholds=claim_thresholds(prop)))
    try:  # provenance: what the verdict was decided with (never a reason to lose the verdict)
        from fairspec.planning import settings

        report.options[v.name] = settings(prop, spec, v.backend)
    except Exception:  # noqa: BLE001 - a property the planner cannot place: no options recorded
        pass
    return False


def _class_labels(prop, ctx, v: Verdict) -> Verdict:
    """``v`` with its witness's predicted classes named by the labels the model records (a `class`
    post's outputs, and a multiclass k-discrimination's, are columns: "1" and "2" say nothing to a reader of a model whose classes are
    "high", "low", "mid"). Unchanged when the model records none or the outputs are no columns."""
    w = getattr(v, "witness", None)
    classes = getattr(prop, "post", None) == "class" or getattr(prop, "output", None) == "class"  # k-discrimination's
    if not classes or w is None or not w.outputs or w.output_labels is not None:
        return v
    try:
        readout = getattr(ctx.model(prop.model), "readout", None)
    except Exception:  # noqa: BLE001 - a model that does not load: its error is reported elsewhere
        return v
    # a binary model's class is its decision (index = 0 makes 1 the first label): columns only of K >= 3
    labels = getattr(readout, "classes", None) if getattr(readout, "task", None) == "multiclass" else None
    if not labels or not all(float(o).is_integer() and 0 <= o < len(labels) for o in w.outputs):
        return v
    from dataclasses import replace

    return replace(v, witness=replace(w, output_labels=tuple(labels[int(o)] for o in w.outputs)))


#: The final gate (issue 20): what becomes of a ``holds (proved)`` that reaches the report without a
#: ``fairspec.certify.Proof``. "enforce": ``unknown`` with the reason "the backend's answer was not
#: certified"; "warn": kept, recorded in ``details["uncertified"]`` and as a report warning.
CERTIFY_GATE = "enforce"

#: Property kinds some of whose ``holds (proved)`` paths carry no certify proof yet: for these the
#: gate only warns (``details["uncertified"]`` and a warning in the JSON report) until their
#: owners supply the proofs; remove a kind here once every one of its paths is certified.
PENDING: dict = {}

UNCERTIFIED = "the backend's answer was not certified"


def certified(v: Verdict, gate: str | None = None) -> tuple[Verdict, str | None]:
    """The one place that refuses a ``holds (proved)`` without a certify Proof (every verdict of
    ``check`` and ``check --models`` passes here): ``(verdict, warning or None)``. Never raises."""
    from fairspec.certify.proof import Proof

    if v is None or v.status != "holds" or v.how != "proved" or isinstance(v.proof, Proof):
        return v, None
    gate = gate or ("warn" if v.kind in PENDING else CERTIFY_GATE)
    note = {"how": "proved", "reason": v.reason, "backend": v.backend}
    details = {**(v.details or {}), "uncertified": note}
    if gate == "warn":
        from dataclasses import replace

        return replace(v, details=details), (f"{v.name}: holds (proved) without a certify proof "
                                             f"(backend {v.backend or '?'}): {UNCERTIFIED}")
    reason = UNCERTIFIED + (f" (the {v.backend} backend said: {v.reason})" if v.reason else
                            (f" (the {v.backend} backend said it holds)" if v.backend else ""))
    return Verdict(v.name, v.kind, "unknown", reason=reason, value=v.value, bound=v.bound, backend=v.backend,
                   seconds=v.seconds, details=details), None


def _cluster_error() -> str | None:
    """With a Dask scheduler configured (--cluster, FAIRSPEC_CLUSTER): None when it answers, else the
    one sentence saying why it cannot be used (a bad address, nothing listening): a usage error."""
    from fairspec.runtime import executor

    if not executor.cluster_address():
        return None
    try:
        executor.get_executor(2)
    except executor.JobError as e:
        return str(e)
    return None


def _models_key(models: dict | None) -> tuple:
    """--models' replacement files as absolute paths: a worker's working folder may be another one."""
    return tuple(sorted((k, os.path.abspath(v)) for k, v in (models or {}).items()))


class JobState:
    """What every worker gets once: the linted spec with every path made absolute (a worker may run
    in another folder, or on another machine; nothing is linted or resolved again there) and the
    project roots. Each worker keeps one Context per set of model files (loaded once) in ``contexts``,
    which never travels: a Dask worker holds the state it was sent and hands that same object to a
    worker that lacks it (the cluster drops broadcast replicas and moves jobs), and a loaded model
    (an onnxruntime session) cannot be pickled, so a state carrying its contexts could not be sent
    on and the job waiting for it never ran."""

    def __init__(self, spec, roots, specs=None):
        self.spec, self.roots, self.specs, self.contexts = spec, roots, dict(specs or {}), {}

    def __getstate__(self):
        return {"spec": self.spec, "roots": self.roots, "specs": self.specs}

    def __setstate__(self, state):
        self.spec, self.roots, self.specs, self.contexts = state["spec"], state["roots"], state["specs"], {}


def _job_state(spec, roots, specs=None) -> JobState:
    """``specs``: {models key: the spec linted with those model files} (``--models``: each file's own
    encodings, matched to the names it records); a key without one runs on ``spec`` with its files."""
    return JobState(_absolute(spec), roots, {k: _absolute(s) for k, s in (specs or {}).items()})


def _absolute(spec):
    from dataclasses import replace

    return replace(spec, file=_abspath(spec.file),
                   models=tuple(replace(m, path=_abspath(m.path)) if m.path else m for m in spec.models),
                   datasets=tuple(replace(d, path=_abspath(d.path)) for d in spec.datasets))


def _abspath(p: str) -> str:
    """``p`` made absolute without normalising it (os.path.abspath drops `x/..`): a worker's report names a file
    as a serial run does (`loads`), and `link/..` still means what the file system makes of it."""
    return p if os.path.isabs(p) else os.path.join(os.getcwd(), p)


def _interrupted(when: str) -> str:
    from fairspec import interrupt

    return f"interrupted ({interrupt.what()}) {when}"


def _mark_interrupted(report: Report) -> None:
    from fairspec import interrupt

    report.interrupted = True
    report.signal = interrupt.signal_number()


def _property_job(state: JobState, job) -> dict:
    from fairspec import interrupt
    from fairspec.runtime.context import Context

    key, name = job[0], job[1]
    if interrupt.requested():  # serial --models: after Ctrl-C / SIGTERM the remaining jobs do not run
        prop = next(p for p in state.spec.properties if p.name == name)
        return {"verdict": unknown(prop, _interrupted("before it ran")), "interrupted": True}
    if key not in state.contexts:
        state.contexts[key] = Context(state.specs.get(key) or _with_models(state.spec, dict(key)), roots=state.roots)
    ctx = state.contexts[key]
    prop = next(p for p in ctx.spec.properties if p.name == name)
    return _run_property(prop, ctx)


def _failed_job(job, reason: str) -> dict:
    """A property whose job failed for good (its worker lost more than the retries allow), or that
    the cluster gave no answer for within its budget (an Overrun): unknown, never holds."""
    from fairspec.runtime.executor import Overrun
    from fairspec.runtime.jobs import DeathReason
    from fairspec.verdict import Verdict

    if isinstance(reason, Overrun):
        why = (f"no answer from the cluster worker {reason.worker or '?'} within the property's "
               f"{reason.budget:g} s budget (and {reason.grace:g} s of grace): its job was cancelled"
               + (" and the worker restarted" if reason.restarted else
                  " and the worker retired from the cluster (it has no nanny to restart it, and the hung job holds "
                  "its slot)" if reason.retired else
                  "; the worker could not be restarted (it has no nanny) nor retired: the hung job holds its slot "
                  "until the worker is restarted" + _moved_clause(reason.moved) if reason.held else ""))
    else:
        why = f"the job failed: {reason}"
    if isinstance(reason, DeathReason):  # the worker process running it died: the run failed (exit code 4)
        return {"verdict": Verdict(job[1], job[2], "unknown", reason=f"internal error: {reason} while it was "
                                   f"decided; nothing was decided"), "internal": f"{job[1]}: {reason}"}
    return {"verdict": Verdict(job[1], job[2], "unknown", reason=why)}


_failed_job.takes_death = True  # a dead worker is this property's internal error; the others' verdicts stay


def _moved_clause(n: int) -> str:
    """What became of the run's other jobs when a hung job held its worker: the number moved to the cluster's
    other workers (DaskExecutor._move_off_held), said only when some were."""
    if not n:
        return ""
    jobs = "1 other job of the run was" if n == 1 else f"{n} other jobs of the run were"
    return f"; {jobs} moved to the other workers"


def _budgets(props, spec):
    """job -> the time budget of its property in seconds (None: none), which the cluster enforces from
    outside (fairspec.runtime.dask_executor.DaskExecutor): ``timeout`` (the spec's, else its backend's
    default), k-discrimination's ``search`` budget, plus the ``refine`` pass that runs after it."""
    from fairspec.planning import setting

    budgets = {}
    for p in props:
        pl = plan(p, spec)
        limit = setting(p, "timeout", pl.backend) if pl.runs else None
        if p.kind == "k_discrimination":
            limit = getattr(p.options, "search_budget", None) or limit
        refine = p.options.get("refine")
        budgets[p.name] = None if limit is None else float(limit) + float(refine or 0.0)
    return lambda job: budgets.get(job[1])


def _with_seconds(v: Verdict, s: float) -> Verdict:
    from dataclasses import replace

    return replace(v, seconds=s)
