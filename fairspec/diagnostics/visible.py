"""The one sanitiser for text fairspec shows on a terminal: control characters made visible.

A category in a CSV cell, a name in a spec or a string inside a model file may hold an ESC
sequence (a colour change, an OSC window title, a cleared screen, a hidden hyperlink), a
carriage return that overwrites a line, or a bidirectional override that reorders it.  Every
writer whose output a terminal renders (the text report, lint's messages and snippets, the
``--format github`` annotations, the one-sentence errors on stderr) passes the text it did not
write itself through :func:`visible`: each such character is shown as a Python-style escape
(``\\x1b``, ``\\r``, ``\\u202e``), so it can neither act on the terminal nor hide itself.

``newlines=False`` (a table cell, a name, a value, and a sentence that may quote one: a reason, an
error, a diagnostic's message and hint) also shows line breaks as ``\\n``, so a value cannot start a
line of its own (a CI log reads a line starting ``::`` as a workflow command); text whose line breaks
are fairspec's own (spec text it prints: an explanation, a guardrail) keeps them.
JSON and SARIF escape by their own rules (json.dumps) and keep values exactly; the HTML report
passes its text through here before html.escape (a bidi override would reorder a line of the page).
"""

from __future__ import annotations

import re

# C0 controls but tab and line feed, DEL, the C1 controls (0x9b is a one-byte CSI), the
# bidirectional embeddings, overrides and isolates, the line and paragraph separators, and lone
# surrogates (a file name's undecodable bytes: printing one to a strict UTF-8 stream would fail)
_CONTROL = ("\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
            "\ud800-\udfff")
_KEEP_LINES = re.compile(f"[{_CONTROL}]")
_ONE_LINE = re.compile(f"[{_CONTROL}\n]")


def _escape(m: re.Match) -> str:
    c = m.group(0)
    if c == "\n":
        return "\\n"
    if c == "\r":
        return "\\r"
    o = ord(c)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"


def visible(text, newlines: bool = True) -> str:
    """``text`` (any object: str() of it) with every control character shown as an escape;
    line breaks kept when ``newlines`` (prose), shown as ``\\n`` otherwise (a cell, a value)."""
    s = text if isinstance(text, str) else str(text)
    return (_KEEP_LINES if newlines else _ONE_LINE).sub(_escape, s)


def visible_value(text) -> str:
    """A value on one line: :func:`visible` with line breaks shown as ``\\n`` too."""
    return visible(text, newlines=False)
