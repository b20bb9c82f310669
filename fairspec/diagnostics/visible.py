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

GitHub's runner also reads the legacy form ``##[command]data`` ANYWHERE in a line of a step's
output (``ActionCommand.TryParse``: ``IndexOf("##[")``), and still acts on it: ``stop-commands``,
``add-mask``, ``set-output``, ``save-state``, ``add-matcher``, ``error``/``warning``/``notice``,
``group``, ``echo`` (bench/results/audits_s19/github_legacy.md). So :func:`visible` also writes a
``##[`` in any text as ``##\\[``: the bracket escaped as a fairspec string escapes it (``\\[`` reads
``[``, fairspec.syntax.lexical), so a value shown inside a string literal of a hint still parses to
the same string. :func:`joined` keeps that true where pieces escaped one by one are put side by
side (a snippet's caret split); :func:`json_text` writes it as ``##\\u005b`` in a JSON document,
which every JSON reader reads back as the same ``[``.
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


LEGACY = "##["  # the prefix of GitHub's legacy workflow commands, read anywhere in a line
_LEGACY_AT = re.compile(r"(?<=##)\[")


def visible(text, newlines: bool = True) -> str:
    """``text`` (any object: str() of it) with every control character shown as an escape;
    line breaks kept when ``newlines`` (prose), shown as ``\\n`` otherwise (a cell, a value);
    ``##[`` shown as ``##\\[`` (a CI log's legacy workflow command)."""
    s = text if isinstance(text, str) else str(text)
    s = (_KEEP_LINES if newlines else _ONE_LINE).sub(_escape, s)
    return s.replace(LEGACY, "##\\[") if LEGACY in s else s


def joined(*parts: str) -> list[str]:
    """``parts`` (each already :func:`visible`) with a ``##[`` their joins form escaped too (a backslash
    before its bracket, in the part that holds the bracket): ``"".join`` of the result has no ``##[``."""
    text = "".join(parts)
    if LEGACY not in text:
        return list(parts)
    at = {m.start() for m in _LEGACY_AT.finditer(text)}
    out, start = [], 0
    for part in parts:
        out.append("".join("\\" + c if start + i in at else c for i, c in enumerate(part)))
        start += len(part)
    return out


def json_text(text: str) -> str:
    """A JSON document's text with each ``##[`` written ``##\\u005b``: the same document to a JSON reader
    (``#`` and ``[`` after it occur only inside strings), no legacy workflow command to a CI log."""
    return text.replace(LEGACY, "##\\u005b") if LEGACY in text else text


def visible_value(text) -> str:
    """A value on one line: :func:`visible` with line breaks shown as ``\\n`` too."""
    return visible(text, newlines=False)
