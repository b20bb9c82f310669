"""A document's structure for the editor (fairspec.lsp.analysis): the outline, folding ranges, semantic
tokens and code lenses."""

from __future__ import annotations

import re

from .completion import MODEL_OUTPUTS, _KEYWORDS
from .index import Index, _same
from fairspec.diagnostics import Span, split_lines
from fairspec.syntax import ast


def outline(idx: Index) -> list[tuple[str, str, Span, Span, list]]:
    """(name, kind, span of the declaration, span of its name, children) for the root file."""
    root = idx.root_module()
    if root is None:
        return []
    out = []
    for d in root.decls:
        if isinstance(d, ast.Import):
            out.append((d.path, "import", d.span, d.span, []))
        elif isinstance(d, ast.EncodeDecl):
            out.append((f"{d.features.id} for {d.model.id}", "encode", d.span, d.features.span, []))
        elif isinstance(d, ast.ApplyDecl):
            n = d.alias or d.policy
            out.append((n.id, "apply", d.span, n.span, []))
        elif isinstance(d, ast.FeaturesDecl):
            kids = [(f.name.id, "feature", f.span, f.name.span, []) for f in d.features]
            out.append((d.name.id, "features", d.span, d.name.span, kids))
        elif isinstance(d, ast.PolicyDecl):
            kids = [(p.name.id, "property", p.span, p.name.span, []) for p in d.properties]
            out.append((d.name.id, "policy", d.span, d.name.span, kids))
        else:
            kind = {ast.ModelDecl: "model", ast.DataDecl: "data", ast.GroupDecl: "group",
                    ast.DistributionDecl: "distribution", ast.PropertyDecl: "property",
                    ast.RepairDecl: "repair"}.get(type(d), "declaration")
            out.append((d.name.id, kind, d.span, d.name.span, []))
    return out


def folding_ranges(idx: Index, file: str) -> list[tuple[int, int, str]]:
    """(first line, last line, kind) of every declaration spanning lines and of each run of comment
    lines (1-based, inclusive)."""
    out = []
    root = next((m for m in idx.modules if _same(m.file, file)), None)
    if root is not None:
        for d in root.decls:
            if d.span is not None and d.span.end_line > d.span.line:
                out.append((d.span.line, d.span.end_line, "region"))
            if isinstance(d, ast.PolicyDecl):
                out += [(p.span.line, p.span.end_line, "region") for p in d.properties
                        if p.span is not None and p.span.end_line > p.span.line]
    lines = split_lines(idx.texts.get(root.file if root else file, ""))
    start = None
    for i, text in enumerate(lines + [""], 1):
        if text.lstrip().startswith("#"):
            start = start or i
        else:
            if start is not None and i - 1 > start:
                out.append((start, i - 1, "comment"))
            start = None
    return sorted(out)


TOKEN_TYPES = ["keyword", "string", "number", "comment", "operator", "function", "class", "namespace", "type",
               "property", "variable", "parameter", "enumMember"]
TOKEN_MODIFIERS = ["declaration", "defaultLibrary"]
_KIND_TOKEN = {"model": "class", "data": "namespace", "features": "type", "feature": "property",
               "group": "variable", "distribution": "namespace", "property": "function", "policy": "function",
               "param": "parameter", "variable": "parameter", "apply": "function", "repair": "function"}


def semantic_tokens(idx: Index | None, text: str, file: str,
                    now=None) -> list[tuple[int, int, int, str, tuple[str, ...]]]:
    """(line, column, length, type, modifiers) of every token, 1-based, in order: the lexer's
    keywords, strings, numbers, comments and operators; names by what they name (the index);
    metrics as library functions. ``now`` moves a span of the index's text into ``text`` (None: not
    there any more), for an index of an older text; a name is classified only where its whole
    token was moved."""
    from fairspec.sema.properties import PROPERTY_FUNCTIONS

    out = []
    by_pos = {}
    if idx is not None:
        for o in idx.occurrences:
            span = now(o.span) if now is not None and _same(o.span.file, file) else o.span
            if span is not None and _same(span.file, file) and span.line == span.end_line:
                by_pos[(span.line, span.column)] = (o, span.end_column - span.column)
    for ln, line in enumerate(split_lines(text), 1):
        for m in _LEX.finditer(line):
            kind, word = m.lastgroup, m.group()
            col = m.start() + 1
            if kind == "comment":
                out.append((ln, col, len(word), "comment", ()))
            elif kind == "string":
                out.append((ln, col, len(word), "string", ()))
            elif kind == "number":
                out.append((ln, col, len(word), "number", ()))
            elif kind == "op":
                out.append((ln, col, len(word), "operator", ()))
            elif kind == "name":
                occ, length = by_pos.get((ln, col), (None, 0))
                if occ is not None and length == len(word):
                    mods = ("declaration",) if occ.is_declaration else ()
                    out.append((ln, col, len(word), _KIND_TOKEN.get(occ.symbol.kind, "variable"), mods))
                elif word in _KEYWORDS:
                    out.append((ln, col, len(word), "keyword", ()))
                elif word in PROPERTY_FUNCTIONS or word in ("col",) + tuple(MODEL_OUTPUTS):
                    out.append((ln, col, len(word), "function", ("defaultLibrary",)))
    return out


_LEX = re.compile(r'(?P<comment>#.*$)|(?P<string>"(?:[^"\\]|\\.)*")|(?P<number>\b\d+(?:\.\d+)?(?:[eE][-+]?\d+)?'
                  r'(?:ms|s|min|h)?\b)|(?P<name>[A-Za-z_][A-Za-z0-9_]*\'?)|(?P<op>==|!=|<=|>=|[<>=+\-*/|])')


def lenses(idx: Index, file: str) -> list[tuple[Span, str]]:
    """(span, property name) for each property and applied policy declared in the file: the editor
    shows 'check this property' above it."""
    out = []
    root = next((m for m in idx.modules if _same(m.file, file)), None)
    if root is None:
        return out
    spec = idx.result.spec if idx.result is not None else None
    applied = {}
    if spec is not None:
        for p in spec.properties:
            applied.setdefault(p.name.rsplit(".", 1)[0], []).append(p.name)
    for d in root.decls:
        if isinstance(d, ast.PropertyDecl):
            out.append((d.span, d.name.id))
        elif isinstance(d, ast.ApplyDecl):
            prefix = d.alias.id if d.alias else d.policy.id
            for name in applied.get(prefix, []):
                out.append((d.span, name))
    return out
