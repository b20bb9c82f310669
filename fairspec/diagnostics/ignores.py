"""Acknowledged warnings: ``# fairspec: ignore[FS427]`` in a spec, ``--ignore FS427`` on the command line.

A comment ``# fairspec: ignore[CODE, ...]`` at the end of a line acts on that line; alone on its line,
on the next one. It suppresses the warnings of those codes located there (a diagnostic's first line);
``--ignore CODE`` (lint, check) suppresses a warning code everywhere. Only warnings: an error is never
suppressed, and an ignore naming an error code, an unknown code or no code is itself warning FS215 at
the code (so a CI that treats warnings as errors still stops on it). A comment's code that suppresses
nothing (the warning was fixed, or the comment is on the wrong line) is warning FS216 at the code, as
ruff's RUF100: lint's, and check's for FS427 at a pickle's encode block (only check loads the pickle). A suppressed warning is not
dropped silently: the reports count it (``"suppressed": N`` in JSON) and SARIF keeps it as a result
with a ``suppressions`` entry (``inSource`` for a comment, ``external`` for the flag).

The syntax layer finds the comments (:func:`from_comment`, for each comment token the lexer skips);
:func:`apply` is called once per lint (fairspec.pipeline.lint), the only place diagnostics are filtered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fairspec.diagnostics import Diagnostic, Span
from fairspec.diagnostics.codes import CODES

_IGNORE = re.compile(r"#\s*fairspec\s*:\s*ignore\b")
_CODES = re.compile(r"\s*\[([^\]\n]*)\]")


@dataclass(frozen=True)
class Ignore:
    """One ignore comment: the line it acts on and the codes it names (each with its span)."""

    file: str
    line: int
    codes: tuple[tuple[str, Span], ...]
    span: Span  # the comment


def from_comment(file: str, text: str, line: int, column: int, own_line: bool) -> Ignore | None:
    """The Ignore a comment token is (``text`` from ``#``, at ``line``:``column``), or None for another
    comment. ``own_line``: nothing but blanks before it on its line (it then acts on the next line)."""
    m = _IGNORE.match(text)
    if m is None:
        return None
    span = Span(file, line, column, line, column + len(text.rstrip()))
    codes = []
    b = _CODES.match(text, m.end())
    if b is not None:
        start = b.start(1)
        for part in b.group(1).split(","):
            code = part.strip()
            if code:
                at = start + part.index(code)
                codes.append((code, Span(file, line, column + at, line, column + at + len(code))))
            start += len(part) + 1
    return Ignore(file, line + 1 if own_line else line, tuple(codes), span)


def flag_codes(values) -> tuple[str, ...]:
    """``--ignore`` values (repeatable, each possibly ``A,B``) as codes, upper-cased, in order."""
    out = []
    for v in values or ():
        out.extend(c.strip().upper() for c in str(v).split(",") if c.strip())
    return tuple(dict.fromkeys(out))


def _unusable(code: str) -> tuple[str, str] | None:
    """(why, hint) when ``code`` cannot be ignored, else None."""
    known = CODES.get(code)
    if known is None:
        return (f"'{code}' is not a fairspec diagnostic code, so nothing is ignored by it",
                "name the code a warning shows in brackets, e.g. # fairspec: ignore[FS427] (the codes are "
                "listed in fairspec/diagnostics/codes.py)")
    if known.severity != "warning":
        what = "an error" if known.severity == "error" else f"a {known.severity}"
        return (f"{code} is {what}, which cannot be ignored: only warnings can",
                f"errors are never suppressible (a spec with one is not checked): fix what {code} says; "
                f"ignore comments and --ignore acknowledge warnings only")
    return None


def apply(diagnostics: list[Diagnostic], ignores, flags=(), file: str | None = None, defer=()
          ) -> tuple[list[Diagnostic], list[tuple[Diagnostic, str]]]:
    """(the diagnostics kept, with FS215 for each ignore that cannot act and FS216 for each comment's
    code that suppresses nothing; the suppressed ones, each with ``"inSource"`` (a comment) or
    ``"external"`` (``flags``: the --ignore codes)). ``file``: where an FS215 about a flag is located
    (the spec; None: no place). ``defer``: (file, line, code) of comments check judges (:func:`check_time`).
    No FS216 when an error was found (a check that did not run may have had the warning), nor for a
    flag: ``--ignore`` of a code that did not occur is fine."""
    extra: list[Diagnostic] = []
    at: dict[tuple[str, int], set[str]] = {}
    for ig in ignores:
        if not ig.codes:
            extra.append(Diagnostic("FS215", "this ignore comment names no code, so it ignores nothing", ig.span,
                                    "warning", hint="name the warnings' codes in brackets: "
                                                    "# fairspec: ignore[FS427] (several: ignore[FS421, FS427])"))
        for code, span in ig.codes:
            bad = _unusable(code)
            if bad is not None:
                extra.append(Diagnostic("FS215", bad[0], span, "warning", hint=bad[1]))
            else:
                at.setdefault((ig.file, ig.line), set()).add(code)
    usable = set()
    for code in flags:
        bad = _unusable(code)
        if bad is not None:
            extra.append(Diagnostic("FS215", f"--ignore {code}: {bad[0]}", Span.point(file) if file else None,
                                    "warning", hint=bad[1]))
        else:
            usable.add(code)
    kept, suppressed = _split([*diagnostics, *extra], at, usable)
    if not any(d.is_error for d in kept):  # with an error some checks did not run: their warnings may yet come
        for pass_ in ("others", "FS216"):  # an FS216 is a warning too: ignore[FS216] or --ignore FS216 acts on it
            used = {(d.span.file, d.span.line, d.code) for d, how in suppressed if how == "inSource"}
            idle = [unused(ig, code, span) for ig in ignores for code, span in ig.codes
                    if _unusable(code) is None and (code == "FS216") == (pass_ == "FS216")
                    and (ig.file, ig.line, code) not in used and (ig.file, ig.line, code) not in defer]
            k2, s2 = _split(idle, at if pass_ == "others" else {}, usable)
            kept += k2
            suppressed += s2
    return kept, suppressed


def unused(ig: Ignore, code: str, span: Span) -> Diagnostic:
    """FS216 at ``code`` in the comment ``ig``: no ``code`` warning is on the line it acts on."""
    where = "this line" if ig.line == ig.span.line else f"line {ig.line}, the line below it"
    return Diagnostic("FS216", f"this ignore comment suppresses nothing: there is no {code} warning on {where}",
                      span, "warning", hint="remove it (or, if the warning is elsewhere, put the comment at "
                                            "the end of the warning's line or alone on the line above it)")


def _split(diagnostics, at, usable) -> tuple[list[Diagnostic], list[tuple[Diagnostic, str]]]:
    kept, suppressed = [], []
    for d in diagnostics:
        if d.severity == "warning" and d.span is not None and d.code in at.get((d.span.file, d.span.line), ()):
            suppressed.append((d, "inSource"))
        elif d.severity == "warning" and d.code in usable:
            suppressed.append((d, "external"))
        else:
            kept.append(d)
    return kept, suppressed


def check_time(spec) -> dict[tuple[str, int, str], str]:
    """{(file, line, "FS427"): model name} for each comment place lint cannot judge: the encode block of a
    scikit-learn pickle, whose FS427 check says once it has loaded the model (fairspec.runtime.context);
    and a label's FS433 / a logged decision's FS435 about rows past lint's sample ("data NAME" / "model
    NAME": never judged unused, as check reads no more than a metric needs)."""
    out = {}
    for m in getattr(spec, "models", ()):
        enc = spec.encoding_for(m.name)
        if m.format == "sklearn" and not str(m.path).lower().endswith(".skops") and enc is not None \
                and enc.span is not None:
            out[(enc.span.file, enc.span.line, "FS427")] = m.name
    # a label's empty cells (FS433) and a logged decision column's under positive = v (FS435) past the
    # rows lint reads are check's to say (fairspec.runtime.label_text): a comment there waits for it
    for d in getattr(spec, "datasets", ()):
        span = getattr(d, "label_span", None)
        if span is not None and "FS433" not in d.lint_said:
            out[(span.file, span.line, "FS433")] = f"data {d.name}"
        span = getattr(d, "target_span", None)
        if span is not None and "FS433:target" not in d.lint_said:
            out[(span.file, span.line, "FS433")] = f"data {d.name}"
    for m in getattr(spec, "models", ()):
        if m.format == "predictions" and m.positive is not None and m.span is not None:
            out[(m.span.file, m.span.line, "FS435")] = f"model {m.name}"
        # an ONNX classifier's own label against its declared output, on the inputs a property evaluates
        # (fairspec.runtime.label_agreement): check's to say, never judged unused
        if m.format == "onnx" and m.span is not None:
            out[(m.span.file, m.span.line, "FS439")] = f"model {m.name}"
    return out


def ignored_places(ignores, flags=()) -> tuple[tuple[str | None, int | None, str], ...]:
    """(file, line, code) of every warning the comments and flags suppress ((None, None, code): the flag,
    everywhere), for what check says later (``ir.Spec.ignored``: a warning found once a model is loaded)."""
    out = [(ig.file, ig.line, c) for ig in ignores for c, _ in ig.codes if _unusable(c) is None]
    out += [(None, None, c) for c in flags if _unusable(c) is None]
    return tuple(dict.fromkeys(out))
