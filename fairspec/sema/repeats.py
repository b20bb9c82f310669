"""FS214: an option given twice in one place, which would otherwise be last-wins without a word.

The places: a call's keyword arguments and clauses (``csv(..., label = a, label = b)``, ``model m =
sklearn(..., trust pickle, trust pickle)``, ``calibration_gap(m, groups sex, groups race)``), a
property's or a repair's options (``bootstrap = 10`` then ``bootstrap = 20``; ``using`` twice), and an
encoding's parameters (``minmax(lo = 0, lo = 1)``). A policy application's arguments are FS210's
(sema/properties.py binds them, by position or by name, and reports a repeat through
:func:`given_twice` too). The diagnostic is at the second occurrence, the first one related.
"""

from __future__ import annotations

import dataclasses

from fairspec.diagnostics import Related, Sink, Span
from fairspec.syntax import ast


def repeated_options(decls, sink: Sink) -> None:
    """FS214 for every option given twice in ``decls`` (sema.decl.Decl or AST declarations)."""
    for d in decls:
        _walk(getattr(d, "node", d), sink)


def _walk(node, sink: Sink) -> None:
    if isinstance(node, tuple):
        for x in node:
            _walk(x, sink)
        return
    if not isinstance(node, ast.Node):
        return
    if isinstance(node, (ast.Call, ast.ModelDecl, ast.DataDecl, ast.DistributionDecl)):
        callee = node.fn if isinstance(node, (ast.Call, ast.DistributionDecl)) else node.fmt
        where = f"{callee.id}(...)" if callee is not None else f"'{node.name.id}'"
        given_twice(((_arg_key(a), a.span) for a in node.args if a.kind != "pos"), where, sink)
    elif isinstance(node, (ast.PropertyDecl, ast.RepairDecl)):
        what = "property" if isinstance(node, ast.PropertyDecl) else "repair"
        given_twice(((_stmt_key(s), s.span) for s in node.stmts), f"{what} '{node.name.id}'", sink)
    elif isinstance(node, ast.EncLine) and node.params:
        given_twice(((n.id, _join(n.span, v.span)) for n, v in node.params), f"{node.kind.id}(...)", sink)
    for f in dataclasses.fields(node):
        if f.name != "span" and not (isinstance(node, ast.ApplyDecl) and f.name == "args"):
            _walk(getattr(node, f.name), sink)
    if isinstance(node, ast.ApplyDecl):  # its arguments are FS210's; calls inside them are ours
        _walk(tuple(a.value for a in node.args), sink)


def _arg_key(a: ast.Arg) -> str | None:
    if a.name is None:
        return None
    return f"trust {a.name.id}" if a.kind == "trust" else a.name.id


def _stmt_key(s: ast.Stmt) -> str | None:
    if s.kind == "option" and s.args and isinstance(s.args[0], ast.Name):
        return s.args[0].id
    return "using" if s.kind == "using" else None


def _join(a: Span, b: Span) -> Span:
    return Span(a.file, a.line, a.column, b.end_line, b.end_column)


def given_twice(items, where: str, sink: Sink, code: str = "FS214") -> bool:
    """``code`` at the second of two ``(key, span)`` items with the same key (None keys skipped), the
    first one related; True when there was one."""
    first: dict[str, Span] = {}
    found = False
    for key, span in items:
        if key is None:
            continue
        if key in first:
            sink.add(code, f"'{key}' is given twice in {where}; the second would replace the first", span,
                     related=(Related(first[key], "first given here"),))
            found = True
        else:
            first[key] = span
    return found
