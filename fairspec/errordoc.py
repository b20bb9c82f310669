"""The document an error prints under a machine format (``--format json | sarif | github``).

Under a machine format stdout holds the document and nothing else, on errors too. Most input errors
(a missing spec, an unknown ``--property``, an unreachable cluster) come back from the pipeline as a
report with its ``error`` sentence; the ones the command line finds before any check runs (``--html``'s
target, ``--models``' folder or model name) and argparse's usage errors (``--workers 0``, an unknown
option) print the same shape here: a report with no property, the sentence as its ``error`` and exit
code 2 -- under ``--models`` in the ``{"models": [...], "exit_code"}`` wrapper, one entry with no
model file. A usage error of ``lint`` prints lint's own shape instead (``{"diagnostics": [...]}``, the
SARIF and GitHub forms of its diagnostics): one FS001 error, so a reader of lint's document sees the
failure where it looks for one, with no check fields (``properties``, ``exit_code``) it never has.
"""

from __future__ import annotations

MACHINE = ("json", "sarif", "github")


def error_report(spec: str | None, message: str):
    """A report of a run stopped by ``message`` before any property ran (exit code 2)."""
    import datetime

    from fairspec.pipeline import Report

    report = Report(spec, [], error=message)
    if spec is not None:  # provenance names the spec (its hash, when it is there)
        report.started = datetime.datetime.now(datetime.timezone.utc)
    return report


def document(fmt: str, spec: str | None, message: str, *, models: bool = False, version: str = "0.1.0") -> str:
    """The ``fmt`` document of an error found before any check ran (``models``: ``check --models``)."""
    from fairspec import report as rep
    from fairspec.report import ci

    report = error_report(spec, message)
    if fmt == "json":
        doc = report.to_json()
        return rep.dumps({"models": [{"model_file": None, **doc}], "exit_code": 2} if models else doc)
    if fmt == "sarif":
        return ci.to_sarif_models([(None, report)], version=version) if models else \
            ci.to_sarif([], error=message, version=version, spec=spec)
    return ci.to_github([], error=message, spec=spec)


def lint_document(fmt: str, spec: str | None, message: str, *, version: str = "0.1.0") -> str:
    """``lint``'s ``fmt`` document of a usage error: one FS001 diagnostic with no place in a file (at
    line 1 of ``spec`` in SARIF and GitHub when one was named, as FS203; with none, a SARIF tool
    execution notification and an annotation with no file)."""
    from fairspec.diagnostics import Diagnostic, render

    d = Diagnostic("FS001", f"bad usage: {message}", None, hint="see fairspec lint --help")
    if fmt == "json":
        return render([d], "json")
    from fairspec.report import ci

    return ci.to_sarif([d], version=version, spec=spec) if fmt == "sarif" else ci.to_github([d], spec=spec)


def usage_error(commands: dict, argv: list[str], message: str, *, version: str) -> str | None:
    """The document of argparse's usage ``message`` when ``argv`` asks ``check`` or ``lint`` for a machine
    format, else None. argparse stops before it returns anything, so the format and the spec are read
    from ``argv`` as it reads them: ``commands`` (name -> sub-parser) says which options take a value
    (that value is not the spec), ``--opt=value`` and unique prefixes (``--form json``) included. After
    an ambiguous prefix (``check --h x s.fair``: --help, or --html and its value?) argparse stopped
    without deciding what the next word is: the spec is the one named before it, else none."""
    if not argv or argv[0] not in commands:
        return None
    options = {o: a.nargs != 0 for a in commands[argv[0]]._actions for o in a.option_strings}
    fmt = spec = None
    rest, i, given, unsure = argv[1:], 0, set(), False
    while i < len(rest):
        tok = rest[i]
        if tok == "--":
            spec = spec if spec is not None or unsure or i + 1 >= len(rest) else rest[i + 1]
            break
        if tok.startswith("-") and len(tok) > 1:
            name, eq, value = tok.partition("=")
            known = [name] if name in options else [o for o in options if o.startswith(name) and o.startswith("--")]
            opt = known[0] if len(known) == 1 else None
            given.add(opt)
            takes = {options[o] for o in known}  # whether the option (each it may be) takes a value
            if takes == {True} and not eq:
                value, i = (rest[i + 1] if i + 1 < len(rest) else None), i + 1
            unsure = unsure or (len(takes) > 1 and not eq)
            if opt == "--format":
                fmt = value
        elif spec is None and not unsure:
            spec = tok
        i += 1
    if fmt not in MACHINE:
        return None
    if argv[0] == "lint":
        return lint_document(fmt, spec, message, version=version)
    return document(fmt, spec, f"bad usage: {message} (see fairspec {argv[0]} --help)",
                    models="--models" in given, version=version)
