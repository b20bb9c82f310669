"""Lexical checks the grammar does not state: number literals and string escapes.

- A number keeps at most :data:`MAX_DIGITS` significant digits (17: the most a float needs to be
  written back exactly, so Python's ``repr`` of any float -- a fitted scaler's mean -- is accepted, and
  a longer literal's extra digits could not tell floats apart), a literal of 16 or 17 digits is the shortest
  form of its float (``0.23105857863000489`` is read as the float whose shortest form is ``0.2310585786300049``,
  another number: a threshold would be compared with a value the spec does not write), and a nonzero number is
  not so small that a float reads it as 0 or as a subnormal number (``1e-400``): FS307 at the literal.
- A number run into a name (``1_0``, ``0x10``, ``1e``, ``60sec``) is not two tokens but a malformed
  literal: FS101 at it (the lexer would read ``1`` and a name ``_0``, and the spec a second claim).
- A string knows the escapes ``\\"``, ``\\\\``, ``\\n``, ``\\t`` and ``\\[`` (a ``[``: fairspec writes a
  value's ``##[`` as ``##\\[``, which a CI log does not read as a legacy workflow command, and the hint
  still parses to the value; fairspec.diagnostics.visible); any other (``\\u``, a Windows path's
  ``\\d``) is FS102 at the backslash instead of silently losing it.
"""

from __future__ import annotations

import re
import sys

from fairspec.diagnostics import Diagnostic, Span

MAX_DIGITS = 17
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\", "[": "["}

# strings and comments are skipped whole; a number starts at a digit no name or number runs into
_SCAN = re.compile(r'"(?:[^"\\\n]|\\.)*"|#[^\n]*|(?<![A-Za-z0-9_.\'])[0-9]')
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")  # the grammar's NUMBER, as greedy as the lexer
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_UNITS = {"ms", "s", "min", "h"}


def _shown(text: str) -> str:
    return text if len(text) <= 24 else f"{text[:12]}...{text[-6:]} ({len(text)} characters)"


def significant_digits(text: str) -> int:
    """The significant digits of a NUMBER literal: its mantissa without leading and trailing zeros."""
    mantissa = re.split(r"[eE]", text, maxsplit=1)[0]
    return len(mantissa.replace(".", "").strip("0"))


def _not_shortest(text: str, value: float) -> bool:
    """Whether ``text`` is another number than the shortest form of its float (lint imports no
    `fractions` unless a literal has 16 or 17 digits)."""
    from fractions import Fraction

    return Fraction(repr(value)) != Fraction(text)


def number_problem(text: str, value: float) -> tuple[str, str] | None:
    """(message, hint) of FS307 for a literal ``text`` read as ``value`` (already within +-1e15), or None."""
    n = significant_digits(text)
    if n > MAX_DIGITS:
        return (f"the number {_shown(text)} has {n} significant digits; a number in a spec has at most "
                f"{MAX_DIGITS} (the most a float needs; more cannot tell two floats apart)",
                f"round it to at most {MAX_DIGITS} significant digits")
    if isinstance(value, float) and n > 15 and _not_shortest(text, value):
        # a threshold is compared as written (certify.exact.threshold_of reads a parsed float through its
        # shortest repr): a 16-17 digit literal that is not that shortest form would be read as another number
        return (f"the number {_shown(text)} is not read exactly: the nearest float reads back as {value!r}, "
                f"a different number, and a threshold is compared as written",
                f"write {value!r} (the number it would be read as), or round to at most 15 significant digits")
    if n and abs(value) < sys.float_info.min:  # nonzero as written, 0 or subnormal as a float
        return (f"the number {_shown(text)} is too close to 0: a float would read it as "
                f"{'0' if value == 0 else 'a subnormal number, with fewer digits'} (the smallest is about 2.2e-308)",
                "write 0 if zero is meant")
    return None


def run_in_numbers(file: str, text: str, keywords=frozenset()) -> list[Diagnostic]:
    """FS101 at every number run into a name (``1_0``, ``0x10``, ``1e``, ``60sec``); a keyword right
    after a number (``18and``) is left to the grammar, which reads it as two tokens."""
    out, pos = [], 0
    while (m := _SCAN.search(text, pos)) is not None:
        pos = m.end()
        if m.group(0)[0] in '"#':
            continue
        num = _NUMBER.match(text, m.start())
        rest = _NAME.match(text, num.end())
        pos = num.end()
        if rest is None:
            continue
        pos = rest.end()
        if rest.group(0) in keywords or (rest.group(0) in _UNITS and not re.search(r"[eE]", num.group(0))):
            continue  # 18and (two tokens), a duration (60s; 1e3s is not one)
        word = text[num.start():rest.end()]
        start = num.start()
        line = text.count("\n", 0, start) + 1
        col = start - (text.rfind("\n", 0, start) + 1) + 1
        out.append(Diagnostic(
            "FS101", f"'{_shown(word)}' is not a number: a number is digits with an optional fraction and "
                     f"exponent (10000, 0.5, 2e-3), a duration a number and a unit (60s, 5min)",
            Span(file, line, col, line, col + len(word)),
            hint="write digits only (10000, not 10_000; 16, not 0x10) and put a space between a number and a name"))
    return out


def unescape(token: str, span: Span) -> tuple[str, Diagnostic | None]:
    """A STRING token's value (quotes dropped, escapes read), and FS102 at its first unknown escape."""
    body = token[1:-1]
    out, i, bad = [], 0, None
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt not in _ESCAPES and bad is None:
                col = span.column + 1 + i
                bad = Diagnostic("FS102", f"unknown escape '\\{nxt}' in a string", Span(span.file, span.line, col,
                                                                                       span.line, col + 2),
                                 hint='a string knows \\" \\\\ \\n \\r \\t and \\[; write \\\\ for a backslash '
                                      '(or / in a path)')
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out), bad
