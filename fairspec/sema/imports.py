"""Resolve `import` declarations into the list of modules a spec consists of."""

from __future__ import annotations

from pathlib import Path

from fairspec import paths
from fairspec.diagnostics import DiagnosticError, Related, Sink
from fairspec.syntax import ast
from fairspec.syntax.parser import parse_file, parse_text


def resolve_import(path: str, importer: Path) -> Path:
    """`fairspec/...` names a shipped policy file; anything else is relative to the importer."""
    if path.startswith("fairspec/"):
        return paths.specs_dir() / path[len("fairspec/"):]
    p = Path(path)
    return p if p.is_absolute() else importer.parent / p


def load_modules(root: Path, sink: Sink, sources: dict | None = None) -> list[ast.Module]:
    """Parse the root file and, depth first, everything it imports.

    Returns the modules with every import before its importer, each file once.
    Syntax errors, missing files and cycles are reported to ``sink``.
    ``sources`` maps resolved paths to text that replaces the file's content
    (an editor's unsaved buffers, a formatter's output).
    """
    sources = {Path(k).resolve(): v for k, v in (sources or {}).items()}

    def exists(p: Path) -> bool:
        return p.resolve() in sources or p.is_file()

    ordered: list[ast.Module] = []
    done: set[Path] = set()
    stack: list[tuple[Path, ast.Import | None]] = []

    def visit(path: Path, via: ast.Import | None) -> None:
        key = path.resolve()
        if key in done:
            return
        on_stack = [p for p, _ in stack]
        if key in on_stack:
            i = on_stack.index(key)
            chain = " -> ".join(p.name for p in on_stack[i:]) + f" -> {path.name}"
            related = tuple(Related(imp.span, "imported here") for _, imp in stack[i + 1:] if imp)
            sink.add("FS204", f"import cycle: {chain}", via.span if via else None, related=related)
            return
        try:
            module = parse_text(sources[key], str(path)) if key in sources else parse_file(path)
        except DiagnosticError as e:
            for d in e.diagnostics:
                if d.code == "FS203" and via is not None:
                    sink.add("FS203", f"cannot import {via.path!r}: {d.message}", via.span)
                else:
                    sink.items.append(d)
            done.add(key)
            return
        stack.append((key, via))
        for decl in module.decls:
            if isinstance(decl, ast.Import):
                target = resolve_import(decl.path, path)
                if not exists(target):
                    sink.add("FS203", f"import not found: {decl.path!r} (looked for {target})", decl.span)
                    continue
                visit(target, decl)
        stack.pop()
        done.add(key)
        ordered.append(module)

    if not exists(root):
        from fairspec.diagnostics import Diagnostic

        if root.is_dir():
            raise DiagnosticError(Diagnostic("FS203", f"{root} is a folder, not a spec file", None,
                                             hint="give the path of a .fair file"))
        raise DiagnosticError(Diagnostic("FS203", f"spec file not found: {root}", None,
                                         hint="check the path given on the command line"))
    visit(root, None)
    return ordered
