"""The index of a spec for the editor server (fairspec.lsp.analysis), without any protocol types.

:func:`analyse` lints a file (with the editor's unsaved buffers) and indexes
every name in it and in the files it imports: declarations, the features of
each feature set, policy parameters, and each place a name is used.  Hover,
definitions, references, completion, the outline and the quick fixes are
functions of that index; fairspec/lsp/server.py turns them into LSP messages.

Positions here are fairspec's: 1-based lines and columns (a Span).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path

from fairspec.diagnostics import Diagnostic, Span, file_text, split_lines
from fairspec.files import real_path
from fairspec.syntax import ast


# name fields that never refer to a declaration: formats, option and keyword names, encodings
# (a data declaration's arguments name the file's raw columns -- columns = [age, ...], where, label --
# never a feature of the same name: renaming a feature must not rename the column it reads)
_NOT_REFERENCES = {(ast.ModelDecl, "fmt"), (ast.DataDecl, "fmt"), (ast.DataDecl, "args"), (ast.DistributionDecl, "fn"),
                   (ast.EncLine, "kind"), (ast.Param, "type"), (ast.Arg, "name")}


@dataclass(frozen=True)
class Symbol:
    name: str
    kind: str            # model data features feature group distribution property policy param apply encode repair
                         # variable (a property's forall x, x', or its ensure forall c)
    span: Span           # the declaring name
    node: object         # the AST node declared (a variable's: the statement that binds it)
    container: str | None = None  # the feature set of a feature, the policy of a parameter, the property of a variable


@dataclass(frozen=True)
class Occurrence:
    span: Span
    symbol: Symbol
    is_declaration: bool


@dataclass
class Index:
    path: str
    result: object                                   # the lint CheckResult
    texts: dict[str, str] = field(default_factory=dict)  # file -> its text (for definitions shown in hover)
    symbols: dict[str, list[Symbol]] = field(default_factory=dict)
    occurrences: list[Occurrence] = field(default_factory=list)
    modules: list = field(default_factory=list)
    source: str | None = None                        # the text analysed, when it was given (an editor's buffer)
    # file -> (first, last) lines of the declarations left out because they do not parse (analyse(recover=True))
    broken: dict[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return self.result.diagnostics

    @property
    def ok(self) -> bool:
        """The file parsed (hover, completion and the outline have something to say)."""
        return any(_same(m.file, self.path) for m in self.modules)

    def in_broken(self, file: str, line: int) -> bool:
        """The line lies in a declaration left out because it does not parse (nothing is known there)."""
        return any(a <= line <= b for f, spans in self.broken.items() if _same(f, file) for a, b in spans)

    def root_module(self):
        return next((m for m in self.modules if _same(m.file, self.path)), None)


def _same(a: str, b: str) -> bool:
    # the same text is the same file without asking the file system (resolving: an lstat per
    # component, 80% of a half-typed walk's time when every occurrence was resolved per request)
    return a == b or real_path(a) == real_path(b)


def analyse(path, sources: dict | None = None, recover: bool = False) -> Index:
    """Lint `path` (reading `sources` instead of files where given) and index its names.

    With `recover`, each source is read without its declarations that do not parse
    (:func:`parse_recovering`): an index for navigating a text that does not parse, whose
    diagnostics are not the text's (they are never published) and whose `broken` lines answer
    nothing."""
    from fairspec.pipeline import lint

    path = str(real_path(path))
    broken: dict[str, tuple[tuple[int, int], ...]] = {}
    parsed = {}
    for k, v in (sources or {}).items():
        file = str(real_path(k))
        if recover and isinstance(v, str):
            parsed[k], broken[file] = parse_recovering(v, file)
        else:
            parsed[k] = parse_incremental(v, file) or v
    res = lint(path, sources=parsed)
    idx = Index(path, res, modules=list(getattr(res, "modules", [])),
                source=next((v for k, v in (sources or {}).items() if _same(k, path)), None),
                broken={k: v for k, v in broken.items() if v})
    by_real: dict = {}  # each source's resolved path, once (was: every source resolved again per module)
    for k, v in (sources or {}).items():
        by_real.setdefault(real_path(k), v)  # the first source of a file, as the search in order found it
    for m in idx.modules:
        if by_real and (r := real_path(m.file)) in by_real:
            idx.texts[m.file] = by_real[r]
        else:
            try:  # as the parser read it (no newline translation, no byte-order mark)
                idx.texts[m.file] = file_text(m.file)
            except OSError:
                idx.texts[m.file] = ""
    try:
        _declare(idx)
        _resolve(idx)
    except RecursionError:  # the diagnostics still go out; navigation waits for simpler text
        idx.symbols.clear()
        idx.occurrences.clear()
    return idx


_DECL_START = re.compile(r"^(?:import|model|data|features|encode|group|distribution|property|repair|policy|apply)\b",
                         re.M)
_CHUNKS: dict[str, dict[tuple[int, str], tuple]] = {}  # file -> (first line, text of a chunk) -> its declarations


def parse_incremental(text: str, file: str):
    """The Module of `text`, re-parsing only the declarations that changed since the last call for `file`.

    The text is cut before each line that starts (at column 0) with a declaration keyword; a chunk
    whose text and first line are unchanged keeps its declarations (spans included).  The grammar is
    `start: decl*`, so when every chunk parses, their declarations are those of the whole text.
    None when a chunk does not parse: the caller parses the whole text, for the right diagnostic.
    """
    module, broken = _parse_chunks(text, file, recover=False)
    return None if broken else module


def parse_recovering(text: str, file: str) -> tuple[ast.Module, tuple[tuple[int, int], ...]]:
    """The Module of `text` without the declarations that do not parse, and the (first, last) lines
    (1-based) of each chunk left out: what the editor navigates while a line is half typed.  Every
    span kept is a position in `text` (a chunk is parsed at its own lines); never used for the
    diagnostics, which come from parsing the whole text."""
    return _parse_chunks(text, file, recover=True)


def _parse_chunks(text: str, file: str, recover: bool):
    from fairspec.diagnostics import DiagnosticError
    from fairspec.syntax.parser import parse_text

    starts = [m.start() for m in _DECL_START.finditer(text)]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    old = _CHUNKS.get(file, {})
    new: dict[tuple[int, str], tuple] = {}
    decls: list = []
    ignores: list = []  # each chunk's `# fairspec: ignore[...]` comments
    broken: list[tuple[int, int]] = []
    line = 0
    prev = 0
    for a, b in zip(starts, starts[1:] + [len(text)]):
        line += text.count("\n", prev, a)
        prev = a
        key = (line, text[a:b])
        got = old.get(key)
        if got is None:
            try:
                m = parse_text("\n" * line + key[1], file)
            except DiagnosticError:
                if not recover:
                    return None, (_lines_of_chunk(line, key[1]),)
                kept, lost = _salvage(line, key[1], file)
                decls.extend(kept)
                broken.extend(lost)
                continue
            got = (m.decls, m.ignores)
        new[key] = got
        decls.extend(got[0])
        ignores.extend(got[1])
    _CHUNKS[file] = new
    lines = split_lines(text)
    module = ast.Module(Span(file, 1, 1, len(lines), len(lines[-1]) + 1), file, tuple(decls), tuple(ignores))
    return module, tuple(broken)


def _lines_of_chunk(line: int, chunk: str) -> tuple[int, int]:
    """The 1-based first and last lines of a chunk after `line` lines (the next chunk's first is not its)."""
    return line + 1, line + chunk.count("\n") + (not chunk.endswith("\n"))


_ANY_START = re.compile(r"^[A-Za-z_]", re.M)


def _salvage(line: int, chunk: str, file: str) -> tuple[list, list[tuple[int, int]]]:
    """The declarations of a chunk that does not parse, cut again before every line that starts with a
    name at column 0 (a keyword being typed, `prop`, ends the declaration above it), and the lines of
    the pieces that do not parse either."""
    from fairspec.diagnostics import DiagnosticError
    from fairspec.syntax.parser import parse_text

    cuts = [m.start() for m in _ANY_START.finditer(chunk)]
    if not cuts or cuts[0] != 0:
        cuts.insert(0, 0)
    if len(cuts) == 1:  # (it was parsed whole)
        return [], [_lines_of_chunk(line, chunk)]
    decls, broken = [], []
    for a, b in zip(cuts, cuts[1:] + [len(chunk)]):
        at = line + chunk.count("\n", 0, a)
        try:
            decls.extend(parse_text("\n" * at + chunk[a:b], file).decls)
        except DiagnosticError:
            broken.append(_lines_of_chunk(at, chunk[a:b]))
    return decls, broken


def _add(idx: Index, sym: Symbol) -> None:
    idx.symbols.setdefault(sym.name, []).append(sym)
    idx.occurrences.append(Occurrence(sym.span, sym, True))


def _declare(idx: Index) -> None:
    kinds = {ast.ModelDecl: "model", ast.DataDecl: "data", ast.FeaturesDecl: "features", ast.GroupDecl: "group",
             ast.DistributionDecl: "distribution", ast.PropertyDecl: "property", ast.PolicyDecl: "policy",
             ast.RepairDecl: "repair"}
    for m in idx.modules:
        for d in m.decls:
            kind = kinds.get(type(d))
            if kind:
                _add(idx, Symbol(d.name.id, kind, d.name.span, d))
            if isinstance(d, ast.ApplyDecl) and d.alias is not None:
                _add(idx, Symbol(d.alias.id, "apply", d.alias.span, d))
            if isinstance(d, ast.FeaturesDecl):
                for f in d.features:
                    _add(idx, Symbol(f.name.id, "feature", f.name.span, f, d.name.id))
            if isinstance(d, ast.PolicyDecl):
                for p in d.params:
                    _add(idx, Symbol(p.name.id, "param", p.name.span, p, d.name.id))


def _children(node) -> list:
    """The sub-nodes of an AST node that may hold references (left to right)."""
    if isinstance(node, tuple):
        return list(node)
    if not isinstance(node, ast.Node) or isinstance(node, ast.Name):
        return []
    out = []
    for f in dataclasses.fields(node):
        if f.name == "span" or (type(node), f.name) in _NOT_REFERENCES:
            continue
        v = getattr(node, f.name)
        if isinstance(node, ast.Stmt) and f.name == "args" and node.kind in ("using", "search", "explain", "option"):
            v = v[1:]  # the backend, strategy, explanation or option name is not a reference
        if isinstance(node, ast.EncLine) and f.name == "params" and v:
            v = tuple(e for _, e in v)
        if isinstance(node, ast.EncLine) and f.name == "codes":
            continue
        out.append(v)  # a MapItem's key (delta {age: 1}) is a feature: kept
    return out


def _walk(node) -> list:
    """Every node below `node`, in source order, without recursion (deeply nested text parses too)."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(reversed(_children(n)))
    return out


def _names(node, out: list) -> None:
    """Every ast.Name below node that may refer to a declaration."""
    out.extend(n for n in _walk(node) if isinstance(n, ast.Name))


def _declaring_names(d) -> set[int]:
    ids = set()
    for attr in ("name", "alias"):
        n = getattr(d, attr, None)
        if isinstance(n, ast.Name):
            ids.add(id(n))
    if isinstance(d, ast.FeaturesDecl):
        ids |= {id(f.name) for f in d.features}
    if isinstance(d, ast.PolicyDecl):
        ids |= {id(p.name) for p in d.params}
        ids |= {id(p.name) for p in d.properties}
    return ids


def lookup(idx: Index, name: str, *, policy: str | None = None) -> Symbol | None:
    """What `name` means: a parameter of the enclosing policy, a declaration, then a feature."""
    cands = idx.symbols.get(name, [])
    if policy:
        for s in cands:
            if s.kind == "param" and s.container == policy:
                return s
    for s in cands:
        if s.kind not in ("param", "feature", "variable"):  # (a variable is its property's: _bind)
            return s
    for s in cands:
        if s.kind == "feature":
            return s
    return None


def _bind(idx: Index, prop: ast.PropertyDecl) -> dict[int, Symbol]:
    """The variables a property binds, declared: `forall x, x' : S` (in the whole property) and the
    class variable of `ensure forall c : ...` (in that statement); {id of a name: its variable} for
    each declaring name and each use, which a variable shadows (a feature, group or parameter of the
    same name means nothing else there)."""
    out: dict[int, Symbol] = {}

    def declare(n: ast.Name, stmt: ast.Stmt) -> Symbol:
        sym = Symbol(n.id, "variable", n.span, stmt, prop.name.id)
        _add(idx, sym)
        out[id(n)] = sym
        return sym

    whole = {n.id: declare(n, st) for st in prop.stmts if isinstance(st, ast.Stmt) and st.kind == "forall"
             for n in st.args[:2] if isinstance(n, ast.Name)}
    for st in prop.stmts:
        scope = dict(whole)
        if isinstance(st, ast.Stmt) and st.kind == "ensure" and len(st.args) == 2 and isinstance(st.args[1], ast.Name):
            scope[st.args[1].id] = declare(st.args[1], st)
        if not (isinstance(st, ast.Stmt) and st.kind in ("forall", "require", "ensure")) or not scope:
            continue  # (an option, `using`, `report by G`: no variable there)
        nodes = _walk(st)
        other = _not_variables(st, nodes)
        for n in nodes:
            if isinstance(n, ast.Name) and id(n) not in out and n.id in scope and id(n) not in other:
                out[id(n)] = scope[n.id]
                idx.occurrences.append(Occurrence(n.span, scope[n.id], False))
    return out


def _not_variables(st: ast.Stmt, nodes: list) -> set[int]:
    """The names of a property's statement that never mean one of its variables, as sema reads them
    (fairspec.sema.individual_properties, exprs): a feature after `x.` and in `except {...}`, a called
    model or output (`prob(m(x))`), the feature set of `forall x, x' : S`."""
    out = {id(st.args[2])} if st.kind == "forall" and len(st.args) == 3 else set()
    for n in nodes:
        if isinstance(n, ast.Attr):
            out.add(id(n.name))
        elif isinstance(n, ast.Call):
            out.add(id(n.fn))
        elif isinstance(n, ast.EqualExcept):
            out |= {id(m) for m in _walk(n.excluded) if isinstance(m, ast.Name)}
    return out


def _resolve(idx: Index) -> None:
    for m in idx.modules:
        for d in m.decls:
            if isinstance(d, ast.Import):
                continue
            skip = _declaring_names(d)
            for prop in [d] if isinstance(d, ast.PropertyDecl) else d.properties if isinstance(d, ast.PolicyDecl) else ():
                skip |= set(_bind(idx, prop))
            policy = d.name.id if isinstance(d, ast.PolicyDecl) else None
            if isinstance(d, ast.ApplyDecl):  # `apply p(m, eps = 0.1)`: eps names p's parameter
                for a in d.args:
                    param = next((s for s in idx.symbols.get(a.name.id, ()) if s.kind == "param"
                                  and s.container == d.policy.id), None) if a.name is not None else None
                    if param is not None:
                        idx.occurrences.append(Occurrence(a.name.span, param, False))
            found: list = []
            _names(d, found)
            for n in found:
                if id(n) in skip:
                    continue
                sym = lookup(idx, n.id, policy=policy)
                if sym is not None and sym.span != n.span:
                    idx.occurrences.append(Occurrence(n.span, sym, False))


def _contains(span: Span, file: str, line: int, col: int) -> bool:
    # the position first: the file is compared (resolved when its text differs) only for a span around it
    return (span.line, span.column) <= (line, col) <= (span.end_line, span.end_column) and _same(span.file, file)


def symbol_at(idx: Index, file: str, line: int, col: int) -> Symbol | None:
    hits = [o for o in idx.occurrences if _contains(o.span, file, line, col)]
    if not hits:
        return None
    # the innermost (shortest) span wins
    return min(hits, key=lambda o: (o.span.end_line - o.span.line, o.span.end_column - o.span.column)).symbol


def import_at(idx: Index, file: str, line: int, col: int) -> Path | None:
    """The file an `import "..."` line under the cursor names."""
    from fairspec.sema.imports import resolve_import

    for m in idx.modules:
        if not _same(m.file, file):
            continue
        for d in m.decls:
            if isinstance(d, ast.Import) and _contains(d.span, file, line, col):
                return real_path(resolve_import(d.path, Path(m.file)))
    return None


def definition(idx: Index, file: str, line: int, col: int) -> Span | None:
    target = import_at(idx, file, line, col)
    if target is not None:  # an import of a FIFO, a device or a folder (FS203) is nothing to open: an editor
        return Span(str(target), 1, 1, 1, 1) if target.is_file() else None   # opening a FIFO blocks on it
    sym = symbol_at(idx, file, line, col)
    return sym.span if sym else None


def references(idx: Index, file: str, line: int, col: int, include_declaration: bool = True) -> list[Span]:
    sym = symbol_at(idx, file, line, col)
    if sym is None:
        return []
    return [o.span for o in idx.occurrences if o.symbol == sym and (include_declaration or not o.is_declaration)]


def _spec(idx: Index):
    return getattr(idx.result, "spec", None)


def _under(file: str, root: str) -> bool:
    """``file`` is the user's to edit with ``root``'s: under its folder or its project (fairspec.toml or
    .git), never a shipped policy (unless ``root`` is one)."""
    from fairspec import paths
    from fairspec.files import project_root

    f, spec = real_path(file), real_path(root)
    shipped = real_path(paths.specs_dir())
    if f.is_relative_to(shipped) and not spec.is_relative_to(shipped):
        return False
    return f.is_relative_to(spec.parent) or f.is_relative_to(project_root(spec))
