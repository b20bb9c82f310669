"""The diagnostic of a syntax error: lark's exception as one FS101 (an unexpected token), FS102 (an
unexpected character) or FS103 (an unexpected end of file), with the expected tokens in words and a
hint for the common slips (a misspelt keyword, '=' for '==', 'group' for 'groups', '80%', single
quotes). Moved out of :mod:`fairspec.syntax.parser` (which calls :func:`syntax_diagnostic`), unchanged.
"""

from __future__ import annotations

import re

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from fairspec.diagnostics import Diagnostic, Span, split_lines


_TOKEN_WORDS = {
    "NAME": "a name", "PRIMED_NAME": "a primed name like x'", "NUMBER": "a number", "STRING": "a string",
    "DURATION": "a duration like 60s", "COMP_OP": "a comparison (==, <=, ...)", "LPAR": "'('", "RPAR": "')'",
    "LBRACE": "'{'", "RBRACE": "'}'", "LSQB": "'['", "RSQB": "']'", "COMMA": "','", "COLON": "':'",
    "EQUAL": "'='", "DOT": "'.'", "VBAR": "'|'", "MINUS": "'-'", "PLUS": "'+'", "STAR": "'*'",
    "SLASH": "'/'", "X_OP": "'x'", "CLAUSE": "a clause (groups, over, flip, ...)", "TRUST": "'trust'",
    "$END": "the end of the file",
}


def _describe_expected(expected) -> str:
    words = []
    for e in sorted(expected):
        if e in _TOKEN_WORDS:
            words.append(_TOKEN_WORDS[e])
        elif e.isupper():
            words.append(f"'{e.lower()}'")
        else:
            words.append(e)
    words = sorted(set(words))
    if len(words) > 8:
        return ", ".join(words[:8]) + ", ..."
    return ", ".join(words)


def _describe_token(tok: Token) -> str:
    if tok.type == "$END":
        return "the end of the file"
    return f"'{tok}'"


def _keyword_hint(tok: Token, expected) -> str | None:
    """'did you mean 'property'?' for a misspelt keyword where a keyword is expected."""
    import difflib

    if tok.type != "NAME":
        return None
    words = [e.lower() for e in expected if e.isupper() and e.isalpha() and e not in _TOKEN_WORDS]
    close = difflib.get_close_matches(str(tok), words, n=1, cutoff=0.75)
    return f"did you mean '{close[0]}'?" if close else None


def _equals_hint(tok: Token, expected) -> str | None:
    """A single '=' where a comparison may stand (`group g = age = 40`, `ensure label(m(x)) = ...`)."""
    if tok.type == "EQUAL" and "COMP_OP" in expected:
        return "compare with '=='; a single '=' gives an option or a declaration its value"
    return None


def _groups_hint(text: str, tok: Token) -> str | None:
    """`disparate_impact(m, group sex)`: the clause is `groups` (`group` declares a group)."""
    start = getattr(tok, "start_pos", None)
    if start is None or not re.search(r"[(,]\s*group\s+$", text[max(0, start - 60):start]):
        return None
    return "a metric names its groups with 'groups' (groups sex x race); 'group' declares one (group older = age >= 40)"


def _percent_hint(text: str, pos: int) -> str | None:
    """`>= 80%`: a threshold is a number, a share a fraction -- the hint writes it (80% as 0.8)."""
    from decimal import Decimal, InvalidOperation

    m = re.search(r"(\d+(?:\.\d*)?|\.\d+)[ \t]*$", text[max(0, pos - 40):pos])
    if m is None:
        return "a threshold is a number: write a share as a fraction between 0 and 1"
    try:
        frac = Decimal(m.group(1)) / 100
    except InvalidOperation:  # pragma: no cover - the pattern reads decimals only
        return None
    written = format(frac.normalize(), "f")
    return f"a threshold is a number, not a percentage: write {m.group(1)}% as {written}"


def syntax_diagnostic(file: str, text: str, e: UnexpectedInput) -> Diagnostic:
    line = getattr(e, "line", None) or 1
    col = getattr(e, "column", None) or 1
    if isinstance(e, UnexpectedEOF) or (isinstance(e, UnexpectedToken) and e.token.type == "$END"):
        lines = split_lines(text)  # numbered as the parser numbers them (a form feed starts no line)
        if len(lines) > 1 and lines[-1] == "":
            lines.pop()  # at the end of the last line, not on the empty one after its newline
        line, col = len(lines), len(lines[-1]) + 1
        exp = _describe_expected(e.expected)
        return Diagnostic("FS103", f"unexpected end of file; expected {exp}", Span(file, line, col, line, col + 1))
    if isinstance(e, UnexpectedToken):
        tok = e.token
        span = Span(file, tok.line, tok.column, tok.end_line or tok.line, tok.end_column or tok.column + 1)
        exp = _describe_expected(e.expected)
        return Diagnostic("FS101", f"unexpected {_describe_token(tok)}; expected {exp}", span,
                          hint=_keyword_hint(tok, e.expected) or _equals_hint(tok, e.expected)
                          or _groups_hint(text, tok)
                          or ("x.* == x'.* names the features a pair may differ in after except: "
                              "x.* == x'.* except {sex}" if "EXCEPT" in e.expected else None))
    assert isinstance(e, UnexpectedCharacters)
    ch = text[e.pos_in_stream] if 0 <= e.pos_in_stream < len(text) else "?"
    hint = None
    if ch == "'":
        hint = "strings use double quotes; a prime (') only follows a pair variable, as in x'"
    elif ch == "%":
        hint = _percent_hint(text, e.pos_in_stream)
    return Diagnostic("FS102", f"unexpected character {ch!r}", Span(file, line, col, line, col + 1),
                      hint=hint or "strings use double quotes; names are letters, digits and _")
