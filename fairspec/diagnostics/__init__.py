"""Diagnostics: what fairspec tells a person about their spec.

A :class:`Diagnostic` has a stable code (see :mod:`fairspec.diagnostics.codes`),
a severity, a message, a primary :class:`Span`, optional related spans and a
hint.  Renderers turn them into full text with a caret snippet, one concise
line per diagnostic (``file:line:col: CODE message``) or JSON.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from fairspec.diagnostics.codes import CODES
from fairspec.diagnostics.visible import json_text, joined, visible_value


MAX_MESSAGE = 400  # characters of a message; longer ones are cut in the middle
MAX_PER_FILE = 100  # diagnostics shown per file; the rest are counted in one note (FS100)
SNIPPET_WIDTH = 160  # characters of a source line shown around the caret


def _cut_middle(text: str, limit: int) -> str:
    keep = (limit - 30) // 2
    return f"{text[:keep]} ...({len(text) - 2 * keep} characters)... {text[-keep:]}"


@dataclass(frozen=True)
class Span:
    """A region of a source file; lines and columns are 1-based, end exclusive."""

    file: str
    line: int
    column: int
    end_line: int
    end_column: int

    @staticmethod
    def point(file: str, line: int = 1, column: int = 1) -> "Span":
        return Span(file, line, column, line, column + 1)


@dataclass(frozen=True)
class Related:
    span: Span
    message: str


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    span: Span | None
    severity: str = "error"  # "error" | "warning" | "note"
    hint: str | None = None
    related: tuple[Related, ...] = ()

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"unregistered diagnostic code {self.code}")
        if self.severity not in ("error", "warning", "note"):
            raise ValueError(f"bad severity {self.severity}")
        if not self.hint:  # every diagnostic says what to do: fall back to the code's own hint
            object.__setattr__(self, "hint", CODES[self.code].hint)
        if len(self.message) > MAX_MESSAGE:  # a message that quotes a 60,000-character token
            object.__setattr__(self, "message", _cut_middle(self.message, MAX_MESSAGE))

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def to_json(self) -> dict:
        s = self.span
        return {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "file": s.file if s else None,
            "line": s.line if s else None,
            "column": s.column if s else None,
            "end_line": s.end_line if s else None,
            "end_column": s.end_column if s else None,
            "hint": self.hint,
            "related": [
                {"file": r.span.file, "line": r.span.line, "column": r.span.column, "message": r.message}
                for r in self.related
            ],
        }


class DiagnosticError(Exception):
    """Raised to abort a phase; carries the diagnostics collected so far."""

    def __init__(self, diagnostics: list[Diagnostic] | Diagnostic):
        if isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics = list(diagnostics)
        super().__init__("; ".join(d.message for d in self.diagnostics))


@dataclass
class Sink:
    """Collects diagnostics during a phase."""

    items: list[Diagnostic] = field(default_factory=list)

    def add(self, code: str, message: str, span: Span | None, *, hint: str | None = None,
            severity: str | None = None, related: tuple[Related, ...] = ()) -> Diagnostic:
        sev = severity or CODES[code].severity
        d = Diagnostic(code, message, span, sev, hint if hint is not None else CODES[code].hint, related)
        self.items.append(d)
        return d

    def extend(self, ds) -> None:
        self.items.extend(ds)

    @property
    def has_errors(self) -> bool:
        return any(d.is_error for d in self.items)


# ------------------------------------------------------------------ rendering

_source_cache: dict[str, list[str]] = {}


def split_lines(text: str) -> list[str]:
    """The lines as the parser numbers them: split at '\\n', '\\r\\n' and a lone '\\r' (the parser reads a
    lone '\\r' as '\\n': fairspec.syntax.parser.LONE_CR), nothing else (a form feed or U+2028 in a comment
    starts no line), the empty line after a final line end kept."""
    return _LINE_END.split(text)


_LINE_END = re.compile(r"\r\n|\r|\n")


def register_source(file: str, text: str) -> None:
    """Remember a file's text (as parsed) so snippets and SARIF regions need not re-read it."""
    _source_cache[file] = split_lines(text)


def file_text(file: str) -> str:
    """A spec file's text as the parser reads it (fairspec.syntax.parser.read_source): its bytes, a
    UTF-8 byte-order mark dropped, no newline translated (a lone '\r' stays, where Python's text mode
    makes it a line too: split_lines cuts there, as the parser does); a byte that is not UTF-8 replaced, where the parser refuses the file. OSError
    when it cannot be read."""
    return Path(file).read_bytes().decode("utf-8-sig", errors="replace")


def source_lines(file: str) -> list[str] | None:
    """The lines of a file a span points into (fairspec.report.ci keeps SARIF regions inside them):
    the text the parser read, else the file read once; None when it cannot be read."""
    if file in _source_cache:
        return _source_cache[file]
    try:
        lines = split_lines(file_text(file))
    except (OSError, ValueError):
        return None
    _source_cache[file] = lines
    return lines


def cell_len(text: str) -> int:
    """The cells ``text`` takes on a terminal: two for a wide or full-width character (an emoji, CJK),
    none for a combining mark or a zero-width format character, one otherwise; what rich.cells.cell_len
    counts for such text, from the standard library (lint loads no rich)."""
    import unicodedata

    n = 0
    for c in text:
        if c.isascii():
            n += 1
        elif unicodedata.category(c) in ("Mn", "Me", "Cf"):
            continue
        else:
            n += 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1
    return n


def _snippet(span: Span) -> list[str]:
    lines = source_lines(span.file)
    if lines and lines[-1] == "":
        lines = lines[:-1]  # an error at the end of the file: no snippet of the empty line after it
    if not lines or span.line < 1 or span.line > len(lines):
        return []
    text = lines[span.line - 1].expandtabs(1)
    width = len(str(span.line))
    end = span.end_column if span.end_line == span.line else len(text) + 1
    col = max(1, span.column)
    carets = max(1, end - col)
    if len(text) > SNIPPET_WIDTH:  # a long line: a window around the caret, cut ends marked with ...
        lo = max(0, col - 1 - SNIPPET_WIDTH // 3)
        hi = min(len(text), lo + SNIPPET_WIDTH)
        lo = max(0, min(lo, hi - SNIPPET_WIDTH))
        head, tail = ("..." if lo > 0 else ""), ("..." if hi < len(text) else "")
        text = head + text[lo:hi] + tail
        carets = max(1, min(carets, hi - (col - 1)))
        col = col - lo + len(head)
    # control characters shown as escapes (fairspec.diagnostics.visible), the caret moved with them;
    # the caret placed and sized in terminal cells, not characters (see cell_len)
    pre, mark, post = text[:col - 1], text[col - 1:col - 1 + carets], text[col - 1 + carets:]
    pre, mark, post = joined(visible_value(pre), visible_value(mark), visible_value(post))  # no ##[ at a join
    text, indent, carets = pre + mark + post, cell_len(pre), max(1, cell_len(mark)) if mark else carets
    gutter = " " * width
    return [
        f" {gutter} |",
        f" {span.line} | {text}",
        f" {gutter} | {' ' * indent}{'^' * carets}",
    ]


def render_full(d: Diagnostic) -> str:
    """The diagnostic for a terminal: every text from the spec or its files through
    :func:`~fairspec.diagnostics.visible.visible` (no raw control character reaches the terminal).
    The message and the hint (sentences that may quote a value) are one line each, their line breaks
    shown as ``\\n``:
    a category ``"a\\n::error file=x::..."`` cannot start a line of its own, which a CI log would
    read as a workflow command."""
    out = [f"{d.severity}[{d.code}]: {visible_value(d.message)}"]
    if d.span:
        out.append(f"  --> {visible_value(d.span.file)}:{d.span.line}:{d.span.column}")
        out.extend(_snippet(d.span))
    for r in d.related:
        out.append(f"  note: {visible_value(r.message)} ({visible_value(r.span.file)}:{r.span.line}:{r.span.column})")
        out.extend(_snippet(r.span))
    if d.hint:                                  # one line too: a hint may quote a category or a data value
        out.append(f"  = hint: {visible_value(d.hint)}")
    return "\n".join(out)


def render_concise(d: Diagnostic, spec: str | None = None) -> str:
    """``file:line:col: CODE severity: message``, every line (a tool splits on the first three colons):
    a diagnostic with no span (FS203, a spec file that is not there) is at 1:1 of ``spec``, the path
    as given on the command line."""
    s = d.span or (Span.point(str(spec)) if spec is not None else None)
    where = f"{visible_value(s.file)}:{s.line}:{s.column}" if s else "<no location>"
    return f"{where}: {d.code} {d.severity}: {visible_value(d.message)}"


def render(diagnostics: list[Diagnostic], fmt: str, spec: str | None = None, suppressed: int = 0) -> str:
    """``suppressed``: how many warnings ignore comments or --ignore suppressed (JSON counts them)."""
    import json

    if fmt == "json":
        doc = {"diagnostics": [d.to_json() for d in diagnostics]}
        if suppressed:
            doc["suppressed"] = suppressed
        return json_text(json.dumps(doc, indent=2))
    if fmt == "concise":
        return "\n".join(render_concise(d, spec) for d in diagnostics)
    return "\n\n".join(render_full(d) for d in diagnostics)


def cap_per_file(diagnostics: list[Diagnostic], limit: int = MAX_PER_FILE) -> list[Diagnostic]:
    """The first ``limit`` diagnostics of each file (in the given order), then one FS100 note per
    file counting the rest: 20,000 errors on one line print 100 and a count, not 1.8 GB."""
    seen: dict[str | None, int] = {}
    out = []
    for d in diagnostics:
        f = d.span.file if d.span else None
        seen[f] = seen.get(f, 0) + 1
        if seen[f] <= limit:
            out.append(d)
    for f, n in seen.items():
        if n > limit:
            out.append(Diagnostic("FS100", f"{n - limit} more diagnostics in {f or 'the spec'} are not shown "
                                           f"(the first {limit} are)", Span.point(f) if f else None, "note"))
    return out


def sort_key(d: Diagnostic):
    s = d.span
    return (s.file if s else "", s.line if s else 0, s.column if s else 0, d.code)
