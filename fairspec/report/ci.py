"""Machine formats for CI: SARIF 2.1.0 and GitHub workflow-command annotations.

Both take the same inputs for `lint` (diagnostics) and `check` (diagnostics,
then the properties that are violated or unknown, at the property's span).
`check --models NAME=FOLDER` (one report per model file): SARIF has one run per
model file (``automationDetails.id`` and the run's ``properties.model_file`` name
it); GitHub annotations name the model file in each verdict's title and message,
and the spec's diagnostics, the same for every file, once.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from urllib.parse import quote

from fairspec.diagnostics import Diagnostic, source_lines
from fairspec.diagnostics.codes import CODES
from fairspec.diagnostics.visible import visible, visible_value
from fairspec.files import real_path
from fairspec.report import bound_texts, value_text, verdict_notes, witness_text, worst_pair_text

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {"error": "error", "warning": "warning", "note": "note"}
# check's verdicts as SARIF rules: not diagnostic codes (the spec is fine), outcomes of checking it
_VERDICT_RULES = {
    "violated": ("error", "property violated",
                 "the witness in the message was replayed on the real model; fix the model or the requirement"),
    "unknown": ("warning", "property not decided",
                "the message gives the reason (a time-out, too few rows, a backend not available)"),
    "input": ("error", "input cannot be used",
              "the message names the model or data file (or the usage) that stopped the check"),
    "internal": ("error", "fairspec internal error",
                 "a bug in fairspec (the verdicts reported still stand); rerun with FAIRSPEC_DEBUG=1 for the "
                 "traceback and report it"),
}


def repository_root() -> Path:
    """The folder CI paths are relative to: the root of the git work tree the working directory lies
    in (the nearest folder above it with a ``.git``, a folder or a worktree's file), else the working
    directory. GitHub code scanning and workflow annotations read a relative path from the
    repository's root, so a check run from a sub-folder (``working-directory: fairness``) still
    places its findings in the repository's files."""
    cwd = real_path(Path.cwd())
    for d in (cwd, *cwd.parents):
        try:
            if (d / ".git").exists():
                return d
        except OSError:  # a folder above that cannot be looked at: no repository there
            break
    return cwd


def _relpath(file: str) -> str | None:
    """The path relative to the repository root (:func:`repository_root`) when it lies below it
    (what CI annotates)."""
    p = real_path(file)
    try:
        return p.relative_to(repository_root()).as_posix()
    except ValueError:
        return None


def _uri(file: str) -> str:
    rel = _relpath(file)
    return quote(rel, errors="surrogateescape") if rel is not None else real_path(file).as_uri()


def _location(span, spec: str | None = None) -> list[dict]:
    """Where a result is: its span, else line 1 of the spec file (an input error, a spec file that is
    not there: every result has a location with a start line, or GitHub code scanning refuses the log)."""
    if span is None:
        if spec is None:
            return []
        return [{"physicalLocation": {"artifactLocation": {"uri": _uri(spec)},
                                      "region": {"startLine": 1, "startColumn": 1}}}]
    return [{"physicalLocation": {"artifactLocation": {"uri": _uri(span.file)}, "region": _region(span)}}]


def _utf16(text: str) -> int:
    """The length of ``text`` in UTF-16 code units (a character past U+FFFF is two)."""
    return len(text) + sum(ord(c) > 0xFFFF for c in text)


def _region(span) -> dict:
    """The span as a SARIF region, its columns kept inside their lines: an error at the end of the file
    ends at the end of its (maybe empty) line, never past it.  A span's columns count code points; a
    region's count UTF-16 code units (SARIF's default ``columnKind``, which the run states, and the
    unit GitHub code scanning reads: it ignores ``columnKind``), so an emoji before an error counts 2."""
    line, col, end_line, end_col = span.line, span.column, span.end_line, span.end_column
    lines = source_lines(span.file)
    if lines is not None:
        if 1 <= line <= len(lines):
            text = lines[line - 1]
            col = _utf16(text[:max(1, min(col, len(text) + 1)) - 1]) + 1
        if 1 <= end_line <= len(lines):
            text = lines[end_line - 1]
            end_col = _utf16(text[:max(1, min(end_col, len(text) + 1)) - 1]) + 1
    region = {"startLine": line, "startColumn": col}
    if (end_line, end_col) > (line, col):
        region.update(endLine=end_line, endColumn=end_col)
    return region


def _verdict_message(v) -> str:
    """The finding's text: what was decided, then the verdict's notes (after '; ': the fingerprint
    reads only the text before the first ';', so a note never re-opens an alert)."""
    return "; ".join([_verdict_text(v), *(f"note: {n}" for n in verdict_notes(v))])


def _verdict_text(v) -> str:
    if v.status == "violated":
        parts = [f"property '{v.name}' is violated"]
        parts += _value_parts(v)
        if v.witness is not None:
            w = v.witness
            parts.append(f"witness x = {witness_text(w.features, w.x)}, x' = {witness_text(w.features_prime, w.x_prime)}"
                         + (f" (replayed by {w.replayed_by})" if w.replayed_by else ""))
            if w.outputs:
                a, b = w.output_texts()
                parts.append(f"model output {a} for x, {b} for x'")
        if v.reason:
            parts.append(v.reason)
        return "; ".join(parts)
    pair = worst_pair_text(v)  # after the value (the fingerprint reads the text before the first ';' only)
    return "; ".join([f"property '{v.name}' is unknown: {v.reason}", *_value_parts(v), *([pair] if pair else [])])


def _value_parts(v) -> list[str]:
    """The value and its interval as the text report's table shows them (an estimate is never shown
    without its bound: the reason names the confidence level, not the interval's ends)."""
    parts = []
    if v.value is not None:
        parts.append(f"value {value_text(v)}")
    if v.bound is not None:
        parts.append("interval [{}, {}]".format(*bound_texts(v)))
    return parts


def _verdict_results(verdicts, spans, error, policies=None, related: bool = False, error_span=None,
                     internal=()) -> list[tuple]:
    """(rule, level, message, span) for each violated or unknown property, the input error if any
    (at ``error_span``: the declaration or property it concerns; None: the spec file) and each
    ``internal`` error (a fairspec bug outside any property -- the HTML report's rendering -- at the
    spec file; a backend's bug is its property's unknown verdict).
    An applied policy's property is located at the user's `apply` (``spans`` says so) and its message
    names the policy and the property; with ``related``, a fifth item is the policy property's span."""
    policies = policies or {}
    out = [("input", "error", error, error_span) + ((None,) if related else ())] if error else []
    out += [("internal", "error", msg, None) + ((None,) if related else ()) for msg in internal]
    for v in verdicts:
        if v.status in _VERDICT_RULES:
            msg = _verdict_message(v)
            site = policies.get(v.name)
            if site is not None:
                msg += f" (policy '{site[1]}', property '{site[2]}', applied here)"
            item = (v.status, _VERDICT_RULES[v.status][0], msg, spans.get(v.name))
            out.append(item + ((site[0] if site else None,) if related else ()))
    return out


def _related(span, message: str, i: int) -> list[dict]:
    """A related location, only when it lies below the working directory (never a path into the
    installed package): code scanning shows it next to the finding."""
    if span is None or _relpath(span.file) is None:
        return []
    return [{**_location(span)[0], "id": i, "message": {"text": message}}]


# Where a rule's documentation lives: the README (the package index's project page shows it), under
# "Diagnostics" for the codes and "What a verdict means" for check's outcomes. FAIRSPEC_HELP_URL
# points the links at a copy of the README elsewhere (a fork, an internal mirror).
HELP_URL = "https://pypi.org/project/specfair/"
_CATEGORY = {"0": "command-line", "1": "syntax", "2": "names", "3": "types-and-values", "4": "models-and-data", "5": "properties-and-backends"}


def _help_url() -> str:
    import os

    return os.environ.get("FAIRSPEC_HELP_URL") or HELP_URL


def _rule(rid: str) -> dict:
    """A SARIF reportingDescriptor code scanning renders fully: short and full description, help as
    text and Markdown, a help link, tags, the default level."""
    if rid in CODES:
        c = CODES[rid]
        level, title = _LEVEL[c.severity], c.title
        full = f"{title[0].upper()}{title[1:]} ({c.severity} {rid}). {c.hint + '.' if c.hint else ''}".strip()
        text = c.hint or title
        md = (f"**{rid}: {title}** ({c.severity})\n\n{c.hint or ''}\n\nStable fairspec diagnostic code; "
              f"`fairspec lint` reports it with the file, line, column and a caret snippet. See the README's "
              f"Diagnostics section.")
        tags = ["fairspec", "diagnostic", _CATEGORY.get(rid[2], "other")]
        anchor = "#diagnostics"
    else:
        level, title, text = _VERDICT_RULES[rid]
        full = f"{title[0].upper()}{title[1:]}: {text}."
        md = (f"**{title}**\n\n{text}.\n\nA `violated` verdict carries a witness replayed on the real model; "
              f"an `unknown` one its reason. See the README's section *What a verdict means*.")
        tags = ["fairspec", "fairness", "verdict"]
        anchor = "#what-a-verdict-means"
    return {"id": rid, "name": title.replace(" ", "_"), "shortDescription": {"text": title},
            "fullDescription": {"text": full}, "help": {"text": text, "markdown": md},
            "helpUri": _help_url() + anchor, "defaultConfiguration": {"level": level},
            "properties": {"tags": tags}}


def _fingerprint(rid: str, span, msg: str, model_file=None) -> str:
    """A fingerprint that stays the same across runs while the finding does: the rule, the file (as
    code scanning names it) and the message without its numbers (lines move, values change), so an
    alert is tracked, not re-opened, when the spec is edited above it."""
    import re

    where = (_relpath(span.file) or Path(span.file).name) if span is not None else ""
    stable = re.sub(r"[-+]?\d[\d.,e+-]*", "#", msg.split(";")[0])
    key = "\x1f".join([rid, where, stable, Path(model_file).name if model_file else ""])
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


_ROLES = {"spec": "analysisTarget", "imported spec": "analysisTarget", "model": "analysisTarget",
          "data": "analysisTarget", "input": "analysisTarget", "written": "added"}


def _artifacts(provenance: dict | None) -> list[dict]:
    """The files the check read and wrote as SARIF artifacts with their SHA-256 and size (the
    provenance's, fairspec.report.provenance): the log names the evidence it was computed from. A
    file named relative to the repository root keeps that URI; one outside it a file: URI; an
    in-memory object (the API's data frame: no file, no hash) is left out."""
    out = []
    for f in (provenance or {}).get("files", ()):
        if not f.get("sha256"):
            continue
        name = f["file"]
        uri = Path(name).as_uri() if Path(name).is_absolute() else quote(name, errors="surrogateescape")
        art = {"location": {"uri": uri}, "hashes": {"sha-256": f["sha256"]}, "roles": [_ROLES.get(f["role"], "analysisTarget")]}
        if isinstance(f.get("bytes"), int):
            art["length"] = f["bytes"]
        out.append(art)
    return out


def _sarif_run(diagnostics, verdicts, spans, error, version, model_file=None, policies=None, spec=None,
               error_span=None, internal=(), suppressed=(), provenance=None) -> dict:
    how = {id(d): kind for d, kind in suppressed}  # a suppressed warning: a result with its suppression
    diagnostics = [*diagnostics, *(d for d, _ in suppressed)]
    findings = [(d.code, d.severity, d.message + (f" (hint: {d.hint})" if d.hint else ""), d.span, d, None)
                for d in diagnostics]
    findings += [(r, lvl, msg, sp, None, rel)
                 for r, lvl, msg, sp, rel in _verdict_results(verdicts, spans or {}, error, policies, related=True,
                                                              error_span=error_span, internal=internal)]
    rule_ids = sorted({f[0] for f in findings})
    rules = [_rule(rid) for rid in rule_ids]
    index = {r: i for i, r in enumerate(rule_ids)}
    results, seen, notes = [], {}, []
    for rid, sev, msg, span, d, policy_span in findings:
        if model_file is not None and d is None:
            msg = f"model file {model_file}: {msg}"
        if span is None and spec is None:  # no file to place it in (a usage error naming no spec): not a result
            notes.append({"level": _LEVEL[sev], "message": {"text": msg}, "descriptor": {"id": rid}})
            continue
        res = {"ruleId": rid, "ruleIndex": index[rid], "level": _LEVEL[sev], "message": {"text": msg},
               "locations": _location(span, spec)}
        key = _fingerprint(rid, span, msg, model_file)
        seen[key] = seen.get(key, 0) + 1  # the same finding twice in a file: told apart by its order
        res["partialFingerprints"] = {
            "fairspecFinding/v1": hashlib.sha256(f"{key}:{seen[key]}".encode("utf-8", "surrogatepass")).hexdigest()[:32]}
        related = [x for i, r in enumerate(d.related) for x in _related(r.span, r.message, i)] \
            if d is not None and d.related else _related(policy_span, "the policy's property", 0)
        if related:
            res["relatedLocations"] = related
        if d is not None and id(d) in how:  # SARIF's own suppression: code scanning shows it dismissed
            res["suppressions"] = [{"kind": how[id(d)], "justification": _JUSTIFICATION[how[id(d)]]}]
        results.append(res)
    run = {"tool": {"driver": {"name": "fairspec", "version": version, "rules": rules}}, "results": results,
           "columnKind": "utf16CodeUnits"}
    if _artifacts(provenance):
        run["artifacts"] = _artifacts(provenance)
    if notes:
        run["invocations"] = [{"executionSuccessful": False, "toolExecutionNotifications": notes}]
    if model_file is not None:
        run["automationDetails"] = {"id": f"fairspec/models/{Path(model_file).name}",
                                    "description": {"text": f"the spec checked with model file {model_file}"}}
        run["properties"] = {"model_file": str(model_file)}
    return run


_JUSTIFICATION = {"inSource": "a '# fairspec: ignore[...]' comment in the spec",
                  "external": "fairspec's --ignore option"}


def to_sarif(diagnostics: list[Diagnostic], verdicts=(), spans: dict | None = None,
             *, error: str | None = None, version: str = "0.1.0", policies: dict | None = None,
             spec: str | None = None, error_span=None, internal=(), suppressed=(), provenance=None) -> str:
    """One SARIF 2.1.0 log with one run: rules from the codes used, one result per finding; a finding
    with no span (the input ``error`` unless ``error_span`` places it, an ``internal`` error, a
    diagnostic such as FS203) is located at line 1 of ``spec``. ``suppressed``: (warning, "inSource" |
    "external") that ignore comments or --ignore suppressed, each a result with a ``suppressions`` entry;
    ``provenance`` (a check's): the files it read and wrote as the run's ``artifacts``, with their hashes."""
    log = {"$schema": SARIF_SCHEMA, "version": "2.1.0",
           "runs": [_sarif_run(diagnostics, verdicts, spans, error, version, policies=policies, spec=spec,
                               error_span=error_span, internal=internal, suppressed=suppressed,
                               provenance=provenance)]}
    return _dumps(log)


def to_sarif_models(reports, *, version: str = "0.1.0", internal=()) -> str:
    """``check --models``: one SARIF 2.1.0 log with one run per model file (in file order); the
    ``internal`` errors of the whole command (the HTML report) in each run, as a write error is, and each
    run's own (a backend's, which left its property unknown: exit 4 is never only a warning)."""
    runs = [_sarif_run(r.diagnostics, r.verdicts, r.property_spans, r.error, version, f, r.policy_sites, r.spec,
                       getattr(r, "error_span", None),
                       tuple(dict.fromkeys((*getattr(r, "internal_errors", ()), *internal))),
                       getattr(r, "suppressed", ()),
                       r.provenance() if getattr(r, "started", None) is not None else None)
            for f, r in reports]
    return _dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": runs})


def _dumps(log: dict) -> str:
    from fairspec.report import dumps  # strict JSON: a NaN or an infinity never becomes a bare token

    return dumps(log)


def _escape_data(s: str) -> str:
    s = visible(s)  # a terminal renders the CI log: no raw control character from a value
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _one_line(s: str) -> str:
    """A message (which quotes values: a category, a group name) on one line of the annotation: its
    line breaks and tabs shown as ``\\n`` and ``\\t``, as every text writer shows them; the annotation's
    own line breaks (before the hint) are fairspec's, written as ``%0A`` by :func:`_escape_data`."""
    return visible_value(s).replace("\t", "\\t")


def _with_hint(d) -> str:
    return _one_line(d.message) + (f"\nhint: {d.hint}" if d.hint else "")


def _escape_prop(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def to_github(diagnostics: list[Diagnostic], verdicts=(), spans: dict | None = None,
              *, error: str | None = None, policies: dict | None = None, error_span=None,
              spec: str | None = None, internal=()) -> str:
    """GitHub Actions workflow commands: one `::error file=...,line=...::message` line per finding; a
    finding with no span (an input error, an internal error, FS203) at line 1 of ``spec``, as in SARIF."""
    findings = [(d.code, d.severity, _with_hint(d), d.span) for d in diagnostics]
    findings += [(rid, sev, _one_line(msg), span)
                 for rid, sev, msg, span in _verdict_results(verdicts, spans or {}, error, policies,
                                                             error_span=error_span, internal=internal)]
    return "\n".join(_github_lines(findings, spec))


def to_github_models(reports, internal=()) -> str:
    """``check --models``: the spec's diagnostics once (they are the same for every model file), then
    each model file's violated and unknown properties, the file named in the title and the message;
    last, the ``internal`` errors of the whole command (the HTML report)."""
    lines, seen = [], set()
    for f, r in reports:
        for d in r.diagnostics:
            key = (d.code, d.message, d.span)
            if key not in seen:
                seen.add(key)
                lines += _github_lines([(d.code, d.severity, _with_hint(d), d.span)], r.spec)
        name = Path(f).name if f else "?"
        lines += _github_lines([(f"{rid} ({name})", sev, _one_line(f"model file {f}: {msg}"), span)
                                for rid, sev, msg, span in _verdict_results(
                                    r.verdicts, r.property_spans or {}, r.error, r.policy_sites,
                                    error_span=getattr(r, "error_span", None),
                                    internal=[e for e in getattr(r, "internal_errors", ()) if e not in internal])],
                               r.spec)
    spec = reports[0][1].spec if reports else None
    lines += _github_lines([("internal", "error", _one_line(msg), None) for msg in internal], spec)
    return "\n".join(lines)


def _github_lines(findings, spec: str | None = None) -> list[str]:
    lines = []
    for rid, sev, msg, span in findings:
        cmd = {"error": "error", "warning": "warning"}.get(sev, "notice")
        props = []
        if span is None and spec is not None:
            props += [f"file={_escape_prop(_relpath(spec) or str(spec))}", "line=1"]
        elif span is not None:
            props += [f"file={_escape_prop(_relpath(span.file) or span.file)}", f"line={span.line}", f"col={span.column}"]
            if span.end_line >= span.line:
                props += [f"endLine={span.end_line}"]
                if span.end_line == span.line:
                    props += [f"endColumn={span.end_column}"]
        props.append(f"title={_escape_prop(f'fairspec {rid}')}")
        lines.append(f"::{cmd} {','.join(props)}::{_escape_data(msg)}")
    return lines
