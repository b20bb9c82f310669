"""The edits the editor server proposes (fairspec.lsp.analysis): quick fixes for a diagnostic (its
"did you mean", an encode line) and renaming a declared name across the files of the project."""

from __future__ import annotations

import re

from .completion import _KEYWORDS
from .index import Index, Symbol, _contains, _same, _under
from .quickfixes import data_fixes
from fairspec.diagnostics import Diagnostic, Span, split_lines
from fairspec.files import real_path
from fairspec.syntax import ast


# the suggestion is spec text for the diagnostic's span (fairspec.sema.exprs.did_you_mean): a quoted
# category or col("...") may hold a quote of its own, so it runs to the last "'?"
_DID_YOU_MEAN = re.compile(r"did you mean '(.+)'\?")


def fixes(idx: Index, d: Diagnostic) -> list[tuple[str, Span, str]]:
    """(title, span to replace, new text) for a diagnostic whose hint names a fix."""
    if d.span is None:
        return []
    out = []
    m = _DID_YOU_MEAN.search(d.hint or "")
    if m:
        out.append((f"Change to '{m.group(1)}'", d.span, m.group(1)))
    if d.code == "FS211" and d.related:
        out += _encode_line_fix(idx, d)
    return out + data_fixes(idx, d)


def _encode_line_fix(idx: Index, d: Diagnostic) -> list[tuple[str, Span, str]]:
    """FS211: add the missing feature to the encode block, on a line of its own before the '}'."""
    m = re.search(r"feature '([^']+)' of (\S+) is not encoded for (\S+)", d.message)
    if not m:
        return []
    feat, fs_name, model = m.groups()
    sym = next((s for s in idx.symbols.get(feat, []) if s.kind == "feature" and s.container == fs_name), None)
    if sym is None:
        return []
    kind = "onehot" if sym.node.type.kind == "cat" else "raw"
    block = d.related[0].span
    text = idx.texts.get(block.file, "")
    lines = split_lines(text)  # a span's lines are the parser's
    close = lines[block.end_line - 1] if block.end_line - 1 < len(lines) else ""
    before = close[:block.end_column - 2]
    indent = "  "
    # the new line goes before the closing brace: on its own line when the brace has one
    if before.strip() == "":
        at = Span(block.file, block.end_line, 1, block.end_line, 1)
        new = f"{indent}{feat} : {kind}\n"
    else:  # after the last line's text (its blanks before the brace replaced: no trailing blank)
        at = Span(block.file, block.end_line, len(before.rstrip()) + 1, block.end_line, block.end_column - 1)
        new = f"\n{indent}{feat} : {kind}\n"
    return [(f"Encode '{feat}' for {model} ({kind})", at, new)]


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class RenameError(Exception):
    """Why a rename is refused (one sentence for the editor)."""


def rename_target(idx: Index, file: str, line: int, col: int) -> tuple[Symbol, Span] | None:
    """The symbol under the cursor and the span of the name there, if it can be renamed."""
    hits = [o for o in idx.occurrences if _contains(o.span, file, line, col)]
    if not hits:
        return None
    occ = min(hits, key=lambda o: (o.span.end_line - o.span.line, o.span.end_column - o.span.column))
    return occ.symbol, occ.span


def rename(idx: Index, file: str, line: int, col: int, new: str, root: str) -> list[tuple[Span, str]]:
    """The edits that rename the symbol under the cursor everywhere it is used (across imports):
    [(span, new text)]. A feature read from the data column of its own name keeps reading it
    (`column "old"` is added to its declaration). Refused (RenameError) for a name that is not an
    identifier or a keyword, one already declared, or a use in a file outside the project (a
    shipped policy): those files are not the user's to edit. A property's variables are its own: a
    declaration may take a variable's name, and a variable a declaration's, where no use changes
    meaning; the edited texts are linted again (:func:`_same_meaning`) and the rename refused when a use
    would mean another declaration or lint would say something else."""
    got = rename_target(idx, file, line, col)
    if got is None:
        raise RenameError("nothing to rename here: put the cursor on a declared name")
    sym, _ = got
    # `forall x, x' : S` is written as a pair (FS501): renaming either renames both, x' after x
    pair = sym.kind == "variable" and sym.node.kind == "forall"
    base = new[:-1] if pair and new.endswith("'") else new
    if not _IDENT.match(base) or base in _KEYWORDS:
        raise RenameError(f"{new!r} is not a name (letters, digits and _, not a keyword)")
    if new == sym.name:
        return []
    renames = [(sym, new)]
    if pair:
        renames = [(s, base + "'" * s.name.endswith("'")) for n in sym.node.args[:2]
                   for s in idx.symbols.get(n.id, []) if s.kind == "variable" and s.node is sym.node]
    spans = []
    for old, name in renames:
        clash = [s for s in idx.symbols.get(name, []) if _clashes(idx, s, old)]
        if clash:
            raise RenameError(f"{name!r} is already declared ({_describe(clash[0])[4:]} at line {clash[0].span.line})")
        spans += [(o.span, name) for o in idx.occurrences if o.symbol == old]
    outside = [s for s, _ in spans if not _under(s.file, root)]
    if outside:
        raise RenameError(f"{sym.name!r} is also used in {outside[0].file}, outside the project; rename it there first")
    edits = list(spans)
    node = sym.node
    if sym.kind == "feature" and isinstance(node, ast.FeatureDecl) and node.column is None:
        end = node.span
        edits.append((Span(end.file, end.end_line, end.end_column, end.end_line, end.end_column),
                      f' column "{sym.name}"'))
    if any(s.line != s.end_line for s, _ in edits):
        raise RenameError(f"{sym.name!r} is written across lines somewhere: rename it by hand")
    _same_meaning(idx, edits, sym, new)
    return edits


def _clashes(idx: Index, other: Symbol, sym: Symbol) -> bool:
    """Renaming ``sym`` to ``other``'s name is refused at once. Features, groups, models, ... share one
    namespace in expressions; a policy's parameters only its own body; a property's variables only that
    property, and in a policy not a parameter's name (sema reads the parameter there, whatever binds it).
    A declaration and a variable may share a name where the property does not use the declaration there
    (the variable would shadow it): that is for :func:`_same_meaning` to decide."""
    if other.node is sym.node:  # the other half of a forall pair, renamed with it
        return False
    if other.kind == "variable" and sym.kind == "variable":
        return other.container == sym.container
    if {other.kind, sym.kind} == {"variable", "param"}:  # sema reads a parameter's name as the parameter first
        var, param = (other, sym) if other.kind == "variable" else (sym, other)
        return any(p.name.id == var.container for s in idx.symbols.get(param.container, ())
                   if s.kind == "policy" for p in s.node.properties)
    if other.kind == "variable" or sym.kind == "variable":
        return False
    if other.kind == "param":
        return other.container == sym.container
    return True


def _same_meaning(idx: Index, edits: list[tuple[Span, str]], sym: Symbol, new: str) -> None:
    """The texts with ``edits`` applied are linted again: every name must mean what it meant (each use
    the same declaration, found at its moved place), and lint must say the same (codes at the moved
    places); else RenameError naming the first use whose meaning would change (a declaration renamed
    to a variable's name used where the property binds it, or a variable renamed over a name the
    property reads), or the first new diagnostic."""
    from .index import analyse

    by_file: dict[str, list[tuple[Span, str]]] = {}
    for span, text in edits:
        by_file.setdefault(span.file, []).append((span, text))
    texts = dict(idx.texts)
    for file, fe in by_file.items():
        if file not in texts:
            raise RenameError(f"{file} is not among the files this spec reads; rename there first")
        texts[file] = _applied(texts[file], fe)
    again = analyse(idx.path, texts)
    resolved: dict[str, str] = {}

    def real(file: str) -> str:  # each file resolved once (a realpath per occurrence: ~40% of a rename)
        if file not in resolved:
            resolved[file] = str(real_path(file))
        return resolved[file]

    def moved(span: Span) -> tuple:
        line, col = span.line, span.column
        shift = sum(len(text) - (e.end_column - e.column) for e, text in by_file.get(span.file, ())
                    if e.line == line and e.end_column <= col and (e.end_column < col or e.column < e.end_column))
        return (real(span.file), line, col + shift)

    def meaning(s: Symbol, old: bool) -> tuple:  # (a symbol is where it is declared)
        return (s.kind, moved(s.span) if old else (real(s.span.file), s.span.line, s.span.column))

    before = {moved(o.span): (meaning(o.symbol, True), o.symbol) for o in idx.occurrences}
    after = {(real(o.span.file), o.span.line, o.span.column): (meaning(o.symbol, False), o.symbol)
             for o in again.occurrences}
    for at in sorted(set(before) | set(after), key=lambda a: (a[0] != real(idx.path), a)):
        was, now = before.get(at), after.get(at)
        if (was and was[0]) != (now and now[0]):
            what = f"mean {_describe(now[1])}" if now else "no longer name anything"
            if was is None:
                what = f"now mean {_describe(now[1])}"
            raise RenameError(f"renaming {sym.name!r} to {new!r} would make the name at line {at[1]}"
                              f"{'' if _same(at[0], idx.path) else ' of ' + at[0]} {what}"
                              + (f" instead of {_describe(was[1])}" if was and now else "")
                              + "; choose another name")

    def said(d) -> tuple:  # (a diagnostic's column may move with the edit: a feature's new `column`)
        return (d.code, d.severity) + ((real(d.span.file), d.span.line) if d.span else ())

    old_d, new_d = sorted(map(said, idx.diagnostics)), sorted(map(said, again.diagnostics))
    if old_d != new_d:
        extra = next((d for d in again.diagnostics if said(d) not in old_d), None)
        why = f": {extra.code} {extra.message}" if extra is not None else ""
        raise RenameError(f"renaming {sym.name!r} to {new!r} would change what lint says of the spec{why}; "
                          f"choose another name")


def _describe(sym: Symbol) -> str:
    kind = {"param": "parameter"}.get(sym.kind, sym.kind)
    of = {"variable": " of property ", "param": " of policy ", "feature": " of "}.get(sym.kind, " of ")
    return f"the {kind} {sym.name}" + (f"{of}{sym.container}" if sym.container else "")


def _applied(text: str, edits: list[tuple[Span, str]]) -> str:
    """``text`` with one-line edits (fairspec spans: lines as the parser cuts them, code points) applied."""
    starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]  # (split_lines's line ends)
    for span, new in sorted(edits, key=lambda e: (e[0].line, e[0].column), reverse=True):
        base = starts[span.line - 1]
        text = text[:base + span.column - 1] + new + text[base + span.end_column - 1:]
    return text
