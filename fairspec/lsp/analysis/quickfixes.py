"""Quick fixes for the data diagnostics whose hint names one edit (fairspec.lsp.analysis.edits.fixes):

* FS419: the data set's option ``target = COLUMN``, the column its label compares (each class's truth
  is then read from it);
* FS432: the label's or where's text written as the file holds it (the one literal the hint rewrites);
* FS433: ``missing = {COLUMN: [""]}`` in a data declaration that has no ``missing`` yet;
* a warning whose hint names ``# fairspec: ignore[CODE]`` (FS429, FS433): that comment at the end of
  the warning's first line, where the line holds no ``#`` yet.

Where the edit is not certain (the case variant the file holds is not one, the declaration already
has a ``missing``, a comment is on the line), nothing is offered: the hint says what to do.
"""

from __future__ import annotations

import re

from .index import Index, _same, _under
from fairspec.diagnostics import Diagnostic, Span, split_lines
from fairspec.syntax import ast, literals

_STRING = r'"(?:[^"\\\n]|\\.)*"'


def data_fixes(idx: Index, d: Diagnostic) -> list[tuple[str, Span, str]]:
    out = []
    if d.code == "FS419":
        m = re.search(r"the option target = (.+?) of data set '([^']+)' \(each class", d.hint or "")
        if m:
            out += _add_option(idx, m.group(2), "target", literals.name_or_string(m.group(1)))
    elif d.code == "FS432":
        out += _rewrite_text(idx, d)
    elif d.code == "FS433":
        m = re.match(r"column '(.+)' of '([^']+)' has empty cells", d.message)
        if m:
            col = literals.name_or_string(m.group(1))
            out += [(f'List "" as missing for {col}', at, text)
                    for _, at, text in _add_option(idx, m.group(2), "missing", f'{{{col}: [""]}}')]
    if d.severity == "warning" and f"# fairspec: ignore[{d.code}]" in (d.hint or ""):
        out += _ignore(idx, d)
    return out


def _data_decl(idx: Index, name: str) -> ast.DataDecl | None:
    for m in idx.modules:
        for decl in m.decls:
            if isinstance(decl, ast.DataDecl) and decl.name.id == name:
                return decl if _under(decl.span.file, idx.path) else None  # never a shipped file
    return None


def _add_option(idx: Index, data: str, option: str, value: str) -> list[tuple[str, Span, str]]:
    """``, option = value`` after the last argument of data set ``data``'s declaration (none when it has
    that option already)."""
    decl = _data_decl(idx, data)
    if decl is None or not decl.args or any(a.name is not None and a.name.id == option for a in decl.args):
        return []
    end = decl.args[-1].span
    return [(f"Add {option} = {value} to data set '{data}'",
             Span(end.file, end.end_line, end.end_column, end.end_line, end.end_column), f", {option} = {value}")]


def _rewrite_text(idx: Index, d: Diagnostic) -> list[tuple[str, Span, str]]:
    """FS432 (the case the file holds): the one literal ``"Yes"`` in the label or where, as ``"yes"``."""
    new = re.fullmatch(f"write ({_STRING})", d.hint or "")
    old = re.search(f", (?:not|never) ({_STRING}): text is compared as written", d.message)
    text = idx.texts.get(d.span.file) if d.span is not None else None
    if not (new and old and text is not None):
        return []
    lines = split_lines(text)
    hits = []
    for n in range(d.span.line, d.span.end_line + 1):
        line = lines[n - 1] if n <= len(lines) else ""
        lo = d.span.column - 1 if n == d.span.line else 0
        hi = d.span.end_column - 1 if n == d.span.end_line else len(line)
        hits += [(n, lo + m.start()) for m in re.finditer(_STRING, line[lo:hi]) if m.group() == old.group(1)]
    if len(hits) != 1:
        return []
    n, at = hits[0]
    return [(f"Write {new.group(1)}", Span(d.span.file, n, at + 1, n, at + 1 + len(old.group(1))), new.group(1))]


def _ignore(idx: Index, d: Diagnostic) -> list[tuple[str, Span, str]]:
    if d.span is None or not _same(d.span.file, idx.path):
        return []
    text = idx.texts.get(d.span.file)
    lines = split_lines(text) if text is not None else []
    if d.span.line > len(lines) or "#" in lines[d.span.line - 1]:
        return []
    line = lines[d.span.line - 1]
    end = len(line.rstrip()) + 1
    return [(f"Ignore {d.code} on this line", Span(d.span.file, d.span.line, end, d.span.line, len(line) + 1),
             f"  # fairspec: ignore[{d.code}]")]
