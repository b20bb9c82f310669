"""Resolve `import` declarations into the list of modules a spec consists of."""

from __future__ import annotations

import os
from pathlib import Path

from fairspec import paths
from fairspec.diagnostics import DiagnosticError, Related, Sink
from fairspec.files import OutsideRoot, PathError, Roots, file_kind, real_path
from fairspec.syntax import ast
from fairspec.syntax.parser import parse_file, parse_text


def resolve_import(path: str, importer: Path, roots: Roots | None = None) -> Path:
    """`fairspec/...` names a shipped policy file; anything else is relative to the importer.

    With ``roots`` the result must lie inside them (raises fairspec.files.OutsideRoot)."""
    if path.startswith("fairspec/"):
        base, text = paths.specs_dir(), path[len("fairspec/"):]
    else:
        base, text = importer.parent, path
    if roots is None:
        p = Path(text)
        return p if p.is_absolute() else base / p
    return roots.resolve(text, base, "import", shown=path)


def load_modules(root: Path, sink: Sink, roots: Roots | None = None, sources: dict | None = None,
                 opened: list | None = None) -> list[ast.Module]:
    """Parse the root file and, depth first, everything it imports.

    Returns the modules with every import before its importer, each file once.
    Syntax errors, missing files, cycles and imports outside ``roots`` (default: the root
    file's project, fairspec.files.Roots) are reported to ``sink``; a file outside is never opened.
    ``sources`` maps paths to text that replaces the file's content (an editor's unsaved
    buffers, a formatter's output), or to its parsed Module.  ``opened`` collects every file read,
    also one that does not parse (no file fairspec writes may replace one of them).
    """
    if roots is None:
        roots = Roots.for_spec(root)
    sources = {real_path(k): v for k, v in (sources or {}).items()}

    def kind_of(p: Path) -> str:
        return "file" if real_path(p) in sources else file_kind(p)

    ordered: list[ast.Module] = []
    done: set[Path] = set()
    stack: list[tuple[Path, ast.Import | None]] = []
    on_stack: dict[Path, int] = {}  # key -> its place in stack: a chain of thousands is no quadratic search
    seen = set(opened) if opened is not None else set()

    def enter(path: Path, via: ast.Import | None) -> list | None:
        """Open one file: its frame [key, via, module, the index of its next declaration], or None
        when it is done already, closes a cycle or does not parse (each said to the sink)."""
        key = real_path(path)
        if opened is not None and key not in seen:
            seen.add(key)
            opened.append(key)
        if key in done:
            return None
        if key in on_stack:
            i = on_stack[key]
            chain = " -> ".join(p.name for p, _ in stack[i:]) + f" -> {path.name}"
            related = tuple(Related(imp.span, "imported here") for _, imp in stack[i + 1:] if imp)
            sink.add("FS204", f"import cycle: {chain}", via.span if via else None, related=related)
            return None
        try:
            src = sources.get(key)
            if isinstance(src, ast.Module):  # parsed already (the editor server parses only what changed)
                module = src
            else:
                module = parse_text(src, str(path)) if src is not None else parse_file(path)
        except DiagnosticError as e:
            for d in e.diagnostics:
                if d.code == "FS203" and via is not None:
                    sink.add("FS203", f"cannot import {via.path!r}: {d.message}", via.span)
                else:
                    sink.items.append(d)
            done.add(key)
            return None
        on_stack[key] = len(stack)
        stack.append((key, via))
        return [key, path, module, 0]

    def visit(root_path: Path) -> None:
        """Depth first, with a stack of its own: a chain of thousands of imports is no Python recursion."""
        frames = [f] if (f := enter(root_path, None)) is not None else []
        while frames:
            frame = frames[-1]
            key, path, module, i = frame
            decls = module.decls
            while i < len(decls) and not isinstance(decls[i], ast.Import):
                i += 1
            if i == len(decls):
                frames.pop()
                del on_stack[stack.pop()[0]]
                done.add(key)
                ordered.append(module)
                continue
            decl, frame[3] = decls[i], i + 1
            try:
                target = resolve_import(decl.path, path, roots)
                kind = kind_of(target)
            except PathError as e:
                sink.add("FS212" if isinstance(e, OutsideRoot) else "FS203", str(e), decl.span)
                continue
            if kind != "file":
                what = {"folder": "is a folder", "special": "is not a regular file"}.get(kind, "not found")
                sink.add("FS203", f"import {what}: {decl.path!r} (looked for {target})", decl.span)
                continue
            if decl.path.endswith(("/", "/.", os.sep)):  # pathlib drops a trailing '/': "lib.fair/" read lib.fair
                sink.add("FS203", f"import names a folder: {decl.path!r} ends with '/', but {target} is a file; "
                                  f"write the path without the trailing '/'", decl.span)
                continue
            if (f := enter(target, decl)) is not None:
                frames.append(f)

    from fairspec.diagnostics import Diagnostic

    try:
        root_kind = kind_of(root)
    except PathError as e:
        raise DiagnosticError(Diagnostic("FS203", str(e), None, hint="check the path given on the command line"))
    if root_kind == "special":
        raise DiagnosticError(Diagnostic("FS203", f"{root} is not a regular file (a device, pipe or socket)", None,
                                         hint="give the path of a .fair file"))
    if root_kind != "file":
        if root_kind == "folder":
            raise DiagnosticError(Diagnostic("FS203", f"{root} is a folder, not a spec file", None,
                                             hint="give the path of a .fair file"))
        raise DiagnosticError(Diagnostic("FS203", f"spec file not found: {root}", None,
                                         hint="check the path given on the command line"))
    visit(root)
    return ordered
