"""A rename across the specs that import the file a name is declared in (fairspec.lsp.server's rename).

:func:`fairspec.lsp.analysis.rename` edits what the document's own index reads: the document and
its imports. A policy library's parameter (passed by ``name = value``), its policy, a feature set
it declares... are also written in the specs that import it, which the library's index does not
read. Here every spec of the project (the open documents, and the .fair files under the workspace's
folders and the document's project) that imports the declaring file, perhaps indirectly, is indexed
and renamed too, each linted again with the edits applied (the same check as the document's); the
edits are merged into one WorkspaceEdit. When one cannot be renamed safely (it does not parse, a
use there would change meaning, two edits of one place disagree), the whole rename is refused with
a sentence naming that spec and the line importing the file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from fairspec.files import real_path
from fairspec.lsp import analysis as A
from fairspec.lsp.disk import disk_text

_IMPORT = re.compile(r'^[ \t]*import[ \t]+"([^"\n]*)"', re.M)
MAX_SPECS = 5000  # .fair files looked at for importers (a larger tree: the rename is refused, saying so)
MAX_DIRS = 20000  # folders walked for them (likewise)
MAX_DEPTH = 64  # imports followed from a spec, one inside the other, looking for the file (deeper: said, not followed)
_SKIP_DIRS = {"node_modules", "__pycache__", "venv", "site-packages", "build", "dist"}


def _key(p: str | Path) -> str:
    return str(real_path(p))


def project_specs(ls, path: str, target: str | None = None) -> list[str]:
    """The .fair files of the workspace's folders and of ``path``'s project, and the open documents; over
    :data:`MAX_SPECS` of them (or :data:`MAX_DIRS` folders), RenameError saying so (``target``: the file
    whose importers are looked for)."""
    from fairspec.files import project_root
    from fairspec.lsp.disk import UNSAVED

    roots = set() if Path(path).parent == UNSAVED else {_key(project_root(Path(path)))}
    for folder in list(getattr(ls.workspace, "folders", {}).values()):
        p = ls.path_of(folder.uri)
        if p:
            roots.add(_key(p))
    out = {_key(p) for p in (ls.path_of(u) for u in list(ls.workspace.text_documents)) if p}
    walked = 0
    for root in sorted(roots):
        for base, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS]
            out |= {_key(os.path.join(base, f)) for f in files if f.endswith(".fair")}
            walked += 1
            if len(out) > MAX_SPECS or walked > MAX_DIRS:
                many = f"{MAX_SPECS} .fair files" if len(out) > MAX_SPECS else f"{MAX_DIRS} folders"
                raise A.RenameError(f"the project ({root}) holds over {many}, too many to look through for the "
                                    f"specs importing {Path(target or path).name}: nothing was renamed; "
                                    f"rename by hand")
    return sorted(out)


def _text(ls, file: str) -> str | None:
    doc = ls.workspace.text_documents.get(ls.uri_of(file))
    return doc.source if doc is not None else disk_text(file)


def importing_line(ls, spec: str, target: str, cut: list | None = None) -> int | None:
    """The line of ``spec``'s first import that reads ``target`` (directly or through other imports);
    None when none does, or none was found within :data:`MAX_DEPTH` imports one inside the other: then
    ``spec`` is appended to ``cut`` when some chain of its imports went deeper (not followed)."""
    from fairspec.sema.imports import resolve_import

    memo: dict[str, bool] = {}
    deeper = False

    def resolved(text: str, importer: str) -> str | None:
        try:
            return _key(resolve_import(text, Path(importer)))
        except (OSError, ValueError, RuntimeError):
            return None

    def reaches(file: str, seen: frozenset) -> bool:
        nonlocal deeper
        if file == target:
            return True
        if file in seen:
            return False
        if len(seen) > MAX_DEPTH:
            deeper = True
            return False
        if file not in memo:
            memo[file] = any(reaches(r, seen | {file}) for m in _IMPORT.finditer(_text(ls, file) or "")
                             if (r := resolved(m.group(1), file)) is not None)
        return memo[file]

    text = _text(ls, spec) or ""
    for m in _IMPORT.finditer(text):
        r = resolved(m.group(1), spec)
        if r is not None and reaches(r, frozenset({spec})):
            return text.count("\n", 0, m.start()) + 1
    if deeper and cut is not None:
        cut.append(spec)
    return None


def _too_deep(cut: list, target: str, near: str, what: str) -> str:
    """The sentence for the specs whose imports went deeper than MAX_DEPTH before reaching ``target``."""
    names = ", ".join(_shown(c, near) for c in cut[:3]) + (f" and {len(cut) - 3} more" if len(cut) > 3 else "")
    many = len(cut) > 1
    return (f"{len(cut)} spec{'s' * many} ({names}) import{'' if many else 's'} through a chain of over {MAX_DEPTH} "
            f"imports, one inside the other, that was not followed to its end: if {'one' if many else 'it'} "
            f"imports {Path(target).name} there, {what}")


def across_importers(ls, idx: A.Index, sym: A.Symbol, new: str, edits: list, said: list | None = None) -> list[tuple]:
    """``edits`` (the document's rename, from ``idx``) with those of every other spec importing the file
    ``sym`` is declared in: [(span, new text, the index the span is of)]; A.RenameError when one of them
    cannot be renamed (naming it and its import line), or when two edits of one place disagree. A spec
    whose imports go deeper than MAX_DEPTH without reaching the file is not renamed: a sentence in ``said``."""
    out = [(span, text, idx) for span, text in edits]
    if sym.kind == "variable" or not edits:  # a property's variables are written in that property only
        return out
    target = _key(sym.span.file)
    here = _key(idx.path)
    read = {_key(m.file) for m in idx.modules}
    cut: list = []
    for spec in project_specs(ls, idx.path, target):
        if spec == here or spec in read:
            continue  # (every use in a file the document's index reads is in its edits already)
        line = importing_line(ls, spec, target, cut)
        if line is None:
            continue
        where = f"{_shown(spec, idx.path)}:{line}, which imports {Path(target).name}"
        imp = _index_of(ls, spec)
        if imp is None or not imp.ok:
            raise A.RenameError(f"{where}, does not parse (or cannot be read): fix it, then rename")
        if (imp.texts.get(sym.span.file) or next((v for k, v in imp.texts.items() if _key(k) == target), None)) \
                != idx.texts.get(sym.span.file):
            raise A.RenameError(f"{where}, reads another text of {Path(target).name}; save it, then rename")
        try:
            more = A.rename(imp, sym.span.file, sym.span.line, sym.span.column, new, spec)
        except A.RenameError as e:
            raise A.RenameError(f"{where}: {e}") from None
        out += [(span, text, imp) for span, text in more]
    if cut and said is not None:
        said.append(_too_deep(cut, target, idx.path, f"its uses of '{sym.name}' were not renamed"))
    return _merged(out)


def _index_of(ls, spec: str) -> A.Index | None:
    uri = ls.uri_of(spec)
    if uri in ls.workspace.text_documents:
        return ls.current_index(uri, build=True)
    with ls._lock:
        return A.analyse(spec, ls.sources())


def _merged(edits: list[tuple]) -> list[tuple]:
    """One edit per place; two that overlap and differ refuse the rename."""
    by_place: dict[tuple, tuple] = {}
    for span, text, idx in edits:
        key = (_key(span.file), span.line, span.column, span.end_line, span.end_column)
        if key in by_place and by_place[key][1] != text:
            raise A.RenameError(f"two specs would rename line {span.line} of {span.file} differently; "
                                f"rename by hand")
        by_place.setdefault(key, (span, text, idx))
    out = sorted(by_place.values(), key=lambda e: (_key(e[0].file), e[0].line, e[0].column))
    for a, b in zip(out, out[1:]):
        if _key(a[0].file) == _key(b[0].file) and a[0].line == b[0].line and b[0].column < a[0].end_column:
            raise A.RenameError(f"two specs would rename line {a[0].line} of {a[0].file} differently; "
                                f"rename by hand")
    return out


def _shown(spec: str, near: str) -> str:
    try:
        return os.path.relpath(spec, Path(near).parent)
    except ValueError:
        return spec


def importer_references(ls, idx: A.Index, sym: A.Symbol | None, include_declaration: bool,
                        analyse: bool = True) -> tuple[list[tuple], str | None]:
    """The uses of ``sym`` in the specs importing the file it is declared in (as a rename finds them, each
    reading the same text of that file; those that do not parse are passed over): [(span, the index it is
    of)], and a sentence when some were not searched: the project was too large to look through (then only
    the open specs are), or, without ``analyse`` (the lint thread holds the analysis lock), an importer
    that is not open. An open spec is searched in its last index (never built here)."""
    if sym is None or sym.kind == "variable":  # a property's variables are written in that property only
        return [], None
    target, here = _key(sym.span.file), _key(idx.path)
    read = {_key(m.file) for m in idx.modules}
    said = None
    try:
        specs = project_specs(ls, idx.path, target)
    except A.RenameError as e:
        specs = sorted({_key(p) for p in (ls.path_of(u) for u in list(ls.workspace.text_documents)) if p})
        said = str(e).replace("nothing was renamed; rename by hand", "only the open specs were searched")
    out, skipped, cut = [], 0, []
    for spec in specs:
        if spec == here or spec in read or importing_line(ls, spec, target, cut) is None:
            continue
        uri = ls.uri_of(spec)
        if uri in ls.workspace.text_documents:
            imp = ls.indexes.get(uri) or ls.good.get(uri)
        elif analyse:
            imp = A.analyse(spec, ls.sources())
        else:
            skipped += 1
            continue
        if imp is None or not imp.ok or (imp.texts.get(sym.span.file) or next(
                (v for k, v in imp.texts.items() if _key(k) == target), None)) != idx.texts.get(sym.span.file):
            continue
        out += [(s, imp) for s in A.references(imp, sym.span.file, sym.span.line, sym.span.column, include_declaration)
                if _key(s.file) == spec]
    if skipped and said is None:
        many = skipped > 1
        said = (f"{skipped} spec{'s' * many} importing {Path(target).name} that {'are' if many else 'is'} not open "
                f"{'were' if many else 'was'} not searched (a lint was running): ask again")
    if cut:
        deep = _too_deep(cut, target, idx.path, f"its uses of '{sym.name}' were not searched")
        said = deep if said is None else f"{said}; {deep}"
    return out, said
