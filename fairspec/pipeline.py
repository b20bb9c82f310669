"""The one check function behind the CLI, the tests and (later) the editor server.

    lint(path)   parse, resolve imports, type-check against model headers and data samples
    check(path)  lint, then load models and data and run every property on its backend
"""

from __future__ import annotations

import importlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from fairspec.diagnostics import Diagnostic, DiagnosticError, cap_per_file, sort_key
from fairspec.planning import plan
from fairspec.sema.check import CheckResult, check_file
from fairspec.verdict import Unsupported, Verdict, unknown


class InputError(Exception):
    """A model or data file could not be used: one sentence naming the file."""


@dataclass
class Report:
    spec: str
    diagnostics: list[Diagnostic]
    verdicts: list[Verdict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None  # a bad model/data file, as one sentence
    internal_errors: list[str] = field(default_factory=list)  # fairspec bugs met while checking
    seconds: float = 0.0
    loads: list[dict] = field(default_factory=list)  # model files and data tables, with their load times
    property_spans: dict = field(default_factory=dict)  # property name -> its span (for SARIF and annotations)
    inputs: tuple = ()  # the model and data files the spec reads (the HTML report never overwrites them)
    claims: dict = field(default_factory=dict)  # property name -> (op, threshold) of its claim (for the HTML report)
    interrupted: bool = False  # Ctrl-C: the verdicts decided before it are kept, the rest are unknown


    @property
    def has_errors(self) -> bool:
        return self.error is not None or any(d.is_error for d in self.diagnostics)

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return 130  # as a shell reports a process ended by SIGINT
        if self.has_errors:
            return 2
        if self.internal_errors:
            return 4
        if any(v.status == "violated" for v in self.verdicts):
            return 1
        if any(v.status == "unknown" for v in self.verdicts):
            return 3
        return 0

    def to_json(self) -> dict:
        out = {"spec": self.spec, "properties": [v.to_json() for v in self.verdicts],
               "diagnostics": [d.to_json() for d in self.diagnostics], "exit_code": self.exit_code,
               "seconds": round(self.seconds, 4)}
        if self.warnings:
            out["warnings"] = self.warnings
        if self.error:
            out["error"] = self.error
        if self.internal_errors:
            out["internal_errors"] = self.internal_errors
        if self.interrupted:
            out["interrupted"] = True
        if self.loads:
            out["loads"] = [{**x, "seconds": round(x["seconds"], 4)} for x in self.loads]
        return out


def lint(path, *, sources: dict | None = None, allow=()) -> CheckResult:
    """``allow``: folders outside the spec's project that its paths may name (--allow-path)."""
    res = check_file(Path(path), sources=sources, allow=allow)
    res.diagnostics.sort(key=sort_key)
    res.diagnostics = cap_per_file(res.diagnostics)
    return res


def check(path, *, only: str | None = None, progress=None, allow=()) -> Report:
    t0 = time.perf_counter()
    res = lint(path, allow=allow)
    report = Report(str(path), res.diagnostics)
    if report.has_errors or res.spec is None:
        report.seconds = time.perf_counter() - t0
        return report
    from fairspec.models import ModelLoadError
    from fairspec.runtime.context import Context
    from fairspec.runtime.data import DataError

    from fairspec.files import Roots

    ctx = Context(res.spec, roots=Roots.for_spec(Path(path), allow))
    props = [p for p in res.spec.properties if only is None or p.name == only]
    report.property_spans = {p.name: p.span for p in res.spec.properties if p.span is not None}
    report.inputs = tuple(x for x in [m.path for m in res.spec.models] + [d.path for d in res.spec.datasets] if x)
    report.claims = {p.name: (getattr(p, "op", None), getattr(p, "threshold", None)) for p in res.spec.properties}
    if only is not None and not props:
        names = ", ".join(p.name for p in res.spec.properties)
        report.error = f"no property named {only!r} in {path} (properties: {names})"
        return report
    if only is not None:        # --property NAME: the other properties' warnings are not this run's
        others = [p.span for p in res.spec.properties if p.name != only and p.span is not None]
        report.diagnostics = [d for d in report.diagnostics
                              if d.is_error or d.span is None or not any(_within(d.span, s) for s in others)]
    for prop in props:
        p = plan(prop, res.spec)
        backend = p.backend or "/".join(p.candidates) or None
        if report.interrupted:  # Ctrl-C earlier: the rest are not run
            report.verdicts.append(unknown(prop, "interrupted (Ctrl-C) before it ran", backend=backend))
            continue
        t1 = time.perf_counter()
        loaded = ctx.load_seconds
        from fairspec import interrupt

        try:
            if not p.runs:
                v = unknown(prop, p.why)
            else:
                module, _, fn = p.runner.partition(":")
                v = getattr(importlib.import_module(module), fn)(prop, ctx, progress)
        except KeyboardInterrupt:  # Ctrl-C: this property is unknown, the ones decided before stay
            report.interrupted = True
            v = unknown(prop, "interrupted (Ctrl-C) before it was decided", backend=backend)
        except (ModelLoadError, DataError) as e:
            report.error = str(e)
            break
        except Unsupported as e:  # a construct the backend cannot lower: unknown, with the reason
            v = unknown(prop, str(e), backend=backend, details=e.details)
        except DiagnosticError as e:    # a spec error only the loaded model reveals (FS402)
            report.diagnostics.extend(e.diagnostics)
            break
        except Exception as e:  # noqa: BLE001 - a bug in a backend: say so, keep the other verdicts
            if os.environ.get("FAIRSPEC_DEBUG"):
                raise
            report.internal_errors.append(f"{prop.name}: {type(e).__name__}: {e}")
            v = unknown(prop, f"internal error in the {backend} backend ({type(e).__name__}: {e}); "
                              "this is a fairspec bug", backend=backend)
        if interrupt.requested() and not report.interrupted:
            # Ctrl-C reached a solver, which stopped: only a replayed witness is still a verdict
            report.interrupted = True
            if v.status != "violated":
                v = unknown(prop, "interrupted (Ctrl-C) before it was decided", backend=backend)
        # a property's seconds are its own work: the files it loaded first are reported under loads
        v = _with_seconds(v, max(0.0, time.perf_counter() - t1 - (ctx.load_seconds - loaded)))
        report.verdicts.append(v)
    report.warnings = ctx.warnings
    report.loads = ctx.loads
    report.seconds = time.perf_counter() - t0
    return report


def _within(a, b) -> bool:
    """Span a lies inside span b (same file, lines and columns)."""
    return (a.file == b.file and (a.line, a.column) >= (b.line, b.column)
            and (a.end_line, a.end_column) <= (b.end_line, b.end_column))


def _with_seconds(v: Verdict, s: float) -> Verdict:
    from dataclasses import replace

    return replace(v, seconds=s)
