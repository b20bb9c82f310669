"""The outcome of a lint or a check (``fairspec.pipeline.lint`` / ``check`` return it; ``fairspec.pipeline``
re-exports it): the diagnostics, the verdicts, what stopped the run (a bad model or data file, a fairspec bug,
an interruption) and what the reports read (spans, policy sites, provenance, claims, options); its exit code
(2 errors, 4 internal errors, 1 violated, 3 unknown, 0, 128 + N interrupted) and its JSON document."""

from __future__ import annotations

from dataclasses import dataclass, field

from fairspec.diagnostics import Diagnostic
from fairspec.verdict import Verdict


@dataclass
class Report:
    spec: str
    diagnostics: list[Diagnostic]
    verdicts: list[Verdict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None  # a bad model/data file, as one sentence
    # where the error is located (SARIF, annotations): the declaration of the file it names, else the
    # property it stopped; None: the spec file itself
    error_span: object = None
    internal_errors: list[str] = field(default_factory=list)  # fairspec bugs met while checking
    seconds: float = 0.0
    loads: list[dict] = field(default_factory=list)  # model files and data tables, with their load times
    property_spans: dict = field(default_factory=dict)  # property name -> its span (for SARIF and annotations)
    # applied property name -> (the policy property's span, policy name, property name)
    policy_sites: dict = field(default_factory=dict)
    input_kinds: dict = field(default_factory=dict)  # input file -> "model" | "data" (provenance)
    imports: tuple = ()  # the imported spec files (provenance)
    started: object = None  # when the check began (UTC datetime; provenance)
    inputs: tuple = ()  # the model and data files the spec reads (the HTML report never overwrites them)
    # every file the spec reads or names to read (itself, its imports, models, data), also when lint
    # failed: the HTML report never replaces one of them (inputs is what provenance hashes)
    reads: tuple = ()
    # property name -> the warnings its check said (Diagnostics at their span: FS427, FS433, FS435, FS439; and
    # text): the pytest plugin shows them with the property's item, as the text report shows them above the table
    property_warnings: dict = field(default_factory=dict)
    claims: dict = field(default_factory=dict)  # property name -> (op, threshold) of its claim (for the HTML report)
    options: dict = field(default_factory=dict)  # property name -> the options its backend ran with (planning.settings)
    invocation: dict = field(default_factory=dict)  # what the caller asked (--property, --ignore, --allow-path)
    interrupted: bool = False  # Ctrl-C / SIGTERM: the verdicts decided before it are kept, the rest are unknown
    signal: int = 2  # the signal that interrupted the run (SIGINT 2, SIGTERM 15): exit code 128 + it
    # warnings an ignore comment or --ignore suppressed (fairspec.diagnostics.ignores): lint's, as
    # (Diagnostic, "inSource" | "external"), and check's report warnings (a pickle's FS427) as text
    suppressed: list = field(default_factory=list)
    suppressed_warnings: list[str] = field(default_factory=list)


    def _located(self, j: dict) -> dict:
        """A verdict's JSON with where it is written: ``location`` (the user's file; an applied
        policy's property at its `apply`) and, for those, ``policy`` (its name and property)."""
        from fairspec.report.ci import _relpath

        span = self.property_spans.get(j["name"])
        if span is not None:
            j["location"] = {"file": _relpath(span.file) or span.file, "line": span.line, "column": span.column}
        if j["name"] in self.options:
            j["options"] = self.options[j["name"]]
        site = self.policy_sites.get(j["name"])
        if site is not None:
            pspan, policy, prop = site
            j["policy"] = {"name": policy, "property": prop}
            if pspan is not None and _relpath(pspan.file) is not None:
                j["policy"].update(file=_relpath(pspan.file), line=pspan.line)
        return j

    @property
    def n_suppressed(self) -> int:
        """How many warnings were suppressed (ignore comments, --ignore): counted, never silently dropped."""
        return len(self.suppressed) + len(self.suppressed_warnings)

    @property
    def has_errors(self) -> bool:
        return self.error is not None or any(d.is_error for d in self.diagnostics)

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return 128 + self.signal  # as a shell reports a process the signal ended: 130 SIGINT, 143 SIGTERM
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
        out = {"spec": self.spec, "properties": [self._located(v.to_json()) for v in self.verdicts],
               "diagnostics": [d.to_json() for d in self.diagnostics], "exit_code": self.exit_code,
               "seconds": round(self.seconds, 4)}
        if self.warnings:
            out["warnings"] = self.warnings
        if self.n_suppressed:
            out["suppressed"] = self.n_suppressed
        if self.error:
            out["error"] = self.error
        if self.internal_errors:
            out["internal_errors"] = self.internal_errors
        if self.interrupted:
            out["interrupted"] = True
        if self.loads:
            out["loads"] = [{**x, "seconds": round(x["seconds"], 4)} for x in self.loads]
        if self.started is not None:
            out["provenance"] = self.provenance()
        return out

    def provenance(self) -> dict:
        """What was checked (SHA-256 of the spec, its imports, models and data), with what versions,
        and when (fairspec.report.provenance); computed once per report."""
        if getattr(self, "_provenance", None) is None:
            from fairspec.report.provenance import collect

            self._provenance = collect(self, self.started)
        return self._provenance
