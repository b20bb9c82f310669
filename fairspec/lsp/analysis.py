"""What the editor server knows about a spec, without any protocol types.

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

from fairspec.diagnostics import Diagnostic, Span
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
    span: Span           # the declaring name
    node: object         # the AST node declared
    container: str | None = None  # the feature set of a feature, the policy of a parameter


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

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return self.result.diagnostics

    @property
    def ok(self) -> bool:
        """The file parsed (hover, completion and the outline have something to say)."""
        return any(_same(m.file, self.path) for m in self.modules)

    def root_module(self):
        return next((m for m in self.modules if _same(m.file, self.path)), None)


def _same(a: str, b: str) -> bool:
    return Path(a).resolve() == Path(b).resolve()


def analyse(path, sources: dict | None = None) -> Index:
    """Lint `path` (reading `sources` instead of files where given) and index its names."""
    from fairspec.pipeline import lint

    path = str(Path(path).resolve())
    parsed = {k: parse_incremental(v, str(Path(k).resolve())) or v for k, v in (sources or {}).items()}
    res = lint(path, sources=parsed)
    idx = Index(path, res, modules=list(getattr(res, "modules", [])))
    for m in idx.modules:
        if sources and Path(m.file).resolve() in {Path(k).resolve() for k in sources}:
            idx.texts[m.file] = next(v for k, v in sources.items() if _same(k, m.file))
        else:
            try:
                idx.texts[m.file] = Path(m.file).read_text(encoding="utf-8")
            except OSError:
                idx.texts[m.file] = ""
    try:
        _declare(idx)
        _resolve(idx)
    except RecursionError:  # the diagnostics still go out; navigation waits for simpler text
        idx.symbols.clear()
        idx.occurrences.clear()
    return idx


# ------------------------------------------------------------------ incremental parsing

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
    from fairspec.diagnostics import DiagnosticError
    from fairspec.syntax.parser import parse_text

    starts = [m.start() for m in _DECL_START.finditer(text)]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    old = _CHUNKS.get(file, {})
    new: dict[tuple[int, str], tuple] = {}
    decls: list = []
    line = 0
    prev = 0
    for a, b in zip(starts, starts[1:] + [len(text)]):
        line += text.count("\n", prev, a)
        prev = a
        key = (line, text[a:b])
        got = old.get(key)
        if got is None:
            try:
                got = parse_text("\n" * line + key[1], file).decls
            except DiagnosticError:
                return None
        new[key] = got
        decls.extend(got)
    _CHUNKS[file] = new
    lines = text.split("\n")
    return ast.Module(Span(file, 1, 1, len(lines), len(lines[-1]) + 1), file, tuple(decls))


# ------------------------------------------------------------------ the index

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
        if s.kind not in ("param", "feature"):
            return s
    for s in cands:
        if s.kind == "feature":
            return s
    return None


def _resolve(idx: Index) -> None:
    for m in idx.modules:
        for d in m.decls:
            if isinstance(d, ast.Import):
                continue
            skip = _declaring_names(d)
            policy = d.name.id if isinstance(d, ast.PolicyDecl) else None
            found: list = []
            _names(d, found)
            for n in found:
                if id(n) in skip:
                    continue
                sym = lookup(idx, n.id, policy=policy)
                if sym is not None and sym.span != n.span:
                    idx.occurrences.append(Occurrence(n.span, sym, False))


def _contains(span: Span, file: str, line: int, col: int) -> bool:
    if not _same(span.file, file):
        return False
    start = (span.line, span.column)
    end = (span.end_line, span.end_column)
    return start <= (line, col) <= end


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
                return resolve_import(d.path, Path(m.file)).resolve()
    return None


def definition(idx: Index, file: str, line: int, col: int) -> Span | None:
    target = import_at(idx, file, line, col)
    if target is not None:
        return Span(str(target), 1, 1, 1, 1)
    sym = symbol_at(idx, file, line, col)
    return sym.span if sym else None


def references(idx: Index, file: str, line: int, col: int, include_declaration: bool = True) -> list[Span]:
    sym = symbol_at(idx, file, line, col)
    if sym is None:
        return []
    return [o.span for o in idx.occurrences if o.symbol == sym and (include_declaration or not o.is_declaration)]


# ------------------------------------------------------------------ hover

def _text_of(idx: Index, span: Span) -> str:
    text = idx.texts.get(span.file)
    if text is None:
        return ""
    lines = text.splitlines()
    if span.line == span.end_line:
        return lines[span.line - 1][span.column - 1:span.end_column - 1]
    out = [lines[span.line - 1][span.column - 1:]] + lines[span.line:span.end_line - 1]
    out.append(lines[span.end_line - 1][:span.end_column - 1])
    return " ".join(x.strip() for x in out)


def _domain(dom) -> str:
    k = getattr(dom, "kind", "")
    if k in ("int", "real"):
        return f"{k} in [{dom.lo:g}, {dom.hi:g}]"
    if k == "cat":
        return "{" + ", ".join(dom.categories) + "}"
    return k


def _spec(idx: Index):
    return getattr(idx.result, "spec", None)


def hover(idx: Index, file: str, line: int, col: int) -> str | None:
    """Markdown for what is under the cursor."""
    metric = _metric_at(idx, file, line, col)
    if metric:
        return metric
    sym = symbol_at(idx, file, line, col)
    if sym is None:
        return None
    spec = _spec(idx)
    if sym.kind == "feature":
        return _hover_feature(idx, sym, spec)
    if sym.kind == "model":
        return _hover_model(idx, sym, spec)
    if sym.kind == "group":
        text = _text_of(idx, sym.node.expr.span)
        return f"**group** `{sym.name}` = `{text if len(text) <= 200 else text[:200] + ' ...'}`"
    if sym.kind == "property":
        return _hover_property(idx, sym, spec)
    if sym.kind == "data":
        d = next((x for x in (spec.datasets if spec else ()) if x.name == sym.name), None)
        if d is None:
            return f"**data** `{sym.name}`"
        cols = f", columns {', '.join(d.columns)}" if d.columns else ""
        return f"**data** `{sym.name}`: {d.format} file `{d.path}`{cols}"
    if sym.kind == "features":
        names = ", ".join(f.name.id for f in sym.node.features)
        src = f" from `{sym.node.source.id}`" if sym.node.source else ""
        return f"**features** `{sym.name}`{src}: {names}"
    if sym.kind == "distribution":
        how = f"`{sym.node.fn.id}(...)`" if sym.node.fn else f"a table of {len(sym.node.entries)} probabilities"
        return f"**distribution** `{sym.name}`: {how}"
    if sym.kind == "policy":
        params = ", ".join(_text_of(idx, p.span) for p in sym.node.params)
        return f"**policy** `{sym.name}({params})`: " + ", ".join(p.name.id for p in sym.node.properties)
    if sym.kind == "param":
        return f"**parameter** `{_text_of(idx, sym.node.span)}` of policy `{sym.container}`"
    if sym.kind == "apply":
        return f"**apply** `{_text_of(idx, sym.node.span)}`"
    return f"**{sym.kind}** `{sym.name}`"


def _hover_feature(idx: Index, sym: Symbol, spec) -> str:
    fs = next((x for x in (spec.feature_sets if spec else ()) if x.name == sym.container), None)
    f = next((x for x in (fs.features if fs else ()) if x.name == sym.name), None)
    if f is None:
        return f"**feature** `{sym.name}` of `{sym.container}`"
    out = [f"**feature** `{sym.name}` of `{sym.container}`: `{_domain(f.domain)}`"
           + (" — **protected**" if f.protected else "")]
    if f.column != f.name:
        out.append(f"read from column `{f.column}`")
    if f.bins:
        out.append(f"bins {list(f.bins)}")
    for enc in (spec.encodings if spec else ()):
        if enc.features != sym.container:
            continue
        for c in enc.columns:
            if c.feature == sym.name:
                cols = f"column {c.offset}" if c.width == 1 else f"columns {c.offset}..{c.offset + c.width - 1}"
                extra = ""
                if c.kind in ("minmax",) and c.lo is not None:
                    extra = f" (lo = {c.lo:g}, hi = {c.hi:g}{', fitted on the data' if c.fitted else ''})"
                elif c.kind == "standard" and c.mean is not None:
                    extra = f" (mean = {c.mean:g}, std = {c.std:g})"
                out.append(f"- `{enc.model}`: {c.kind}, {cols} of {enc.width}{extra}")
    return "\n\n".join(out[:1]) + ("\n\n" + "\n".join(out[1:]) if len(out) > 1 else "")


def _hover_model(idx: Index, sym: Symbol, spec) -> str:
    m = next((x for x in (spec.models if spec else ()) if x.name == sym.name), None)
    if m is None:
        return f"**model** `{sym.name}`"
    width = getattr(idx.result, "model_widths", {}).get(sym.name)
    lines = [f"**model** `{sym.name}`: {m.format}" + (f" file `{m.path}`" if m.path else "")]
    if width is not None:
        lines.append(f"- input width: {width}")
    enc = next((e for e in spec.encodings if e.model == sym.name), None)
    if enc is not None:
        lines.append(f"- encoding of `{enc.features}`: {enc.width} columns")
    out = m.output if m.output is not None else "the first output"
    lines.append(f"- output: {out}" + (f" (index {m.index})" if m.index is not None else "")
                 + (f", a {m.score_kind}" if m.score_kind else ""))
    if m.task is not None or m.score_kind == "value":
        from fairspec.sema.outputs import describe_kind

        kind = describe_kind(m)
        if m.classes:
            kind += ": " + ", ".join(str(c) for c in m.classes)
        lines.append(f"- {kind}")
    return "\n".join(lines)


def _hover_property(idx: Index, sym: Symbol, spec) -> str:
    props = [p for p in (spec.properties if spec else ()) if p.name == sym.name]
    if not props:
        return f"**property** `{sym.name}`"
    from fairspec.planning import plan

    p = props[0]
    pl = plan(p, spec)
    lines = [f"**property** `{p.name}`: {p.kind.replace('_', ' ')}", f"- planned backend: {pl.describe()}"]
    cap = pl.capability()
    if cap is not None:
        lines.append("- options: " + ", ".join(_options(p, cap)))
    return "\n".join(lines)


def _options(prop, cap) -> list[str]:
    """The options of the planned backend: the spec's value, else the default (or the backend's own behaviour)."""
    out = []
    for o in cap.options:
        v = getattr(prop.options, o.name, None)
        if v is None:
            v = prop.options.get(o.name)
        if v is not None:
            out.append(f"`{o.name} = {v}`" + (" (default)" if v == o.default else ""))
        elif o.default is not None:
            out.append(f"`{o.name} = {o.default}` (default)")
        else:
            out.append(f"`{o.name}` (not set)")
    return out


def _metric_at(idx: Index, file: str, line: int, col: int) -> str | None:
    from fairspec.sema.properties import METRICS

    root = next((m for m in idx.modules if _same(m.file, file)), None)
    if root is None:
        return None
    calls = [n for n in _walk(root.decls) if isinstance(n, ast.Call)]
    for c in calls:
        if c.fn.id in METRICS and _contains(c.fn.span, file, line, col):
            return f"**{c.fn.id}**: {METRICS[c.fn.id]}"
        if c.fn.id in ("k_discrimination", "pba") and _contains(c.fn.span, file, line, col):
            return {"k_discrimination": "**k_discrimination**: the number of clusters of width eps the K "
                                        "counterfactual outputs of one input fall into (HyFair)",
                    "pba": "**pba**: persistent-bias-aware fairness over delta-neighbourhoods of the data rows"}[c.fn.id]
    return None


# ------------------------------------------------------------------ outline

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


# ------------------------------------------------------------------ quick fixes

_DID_YOU_MEAN = re.compile(r"did you mean '([^']+)'\?")


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
    return out


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
    lines = text.splitlines()
    close = lines[block.end_line - 1] if block.end_line - 1 < len(lines) else ""
    before = close[:block.end_column - 2]
    indent = "  "
    # the new line goes before the closing brace: on its own line when the brace has one
    if before.strip() == "":
        at = Span(block.file, block.end_line, 1, block.end_line, 1)
        new = f"{indent}{feat} : {kind}\n"
    else:
        at = Span(block.file, block.end_line, block.end_column - 1, block.end_line, block.end_column - 1)
        new = f"\n{indent}{feat} : {kind}\n"
    return [(f"Encode '{feat}' for {model} ({kind})", at, new)]


# ------------------------------------------------------------------ completion

KEYWORDS_TOP = ("import", "model", "data", "features", "encode", "group", "distribution", "property", "repair",
                "policy", "apply")
KEYWORDS_PROPERTY = ("forall", "require", "ensure", "using", "search", "explain", "report by")
KEYWORDS_REPAIR = ("goal", "bound", "write", "using")
FEATURE_TYPES = ("int in [", "real in [", "bool", "{")
FEATURE_MODIFIERS = ("protected", "column", "bins")
MODEL_FORMATS = ("onnx", "torch", "sklearn", "rule")
# what a pair property reads from a model (fairspec.models.readout; issue 25 added class, value and the class argument)
MODEL_OUTPUTS = {"label": "the binary decision: label(m(x))",
                 "prob": "a probability: prob(m(x)) (binary) or prob(m(x), c), class c's (a column or a label)",
                 "logit": "a logit: logit(m(x)) (binary) or logit(m(x), c), logit column c",
                 "class": "the predicted class: class(m(x)), the argmax column (the first on a tie)",
                 "value": "a regression's output: value(m(x))"}



def _strip(text: str) -> str:
    """Strings and comments blanked out (same length), so brackets can be counted."""
    return re.sub(r'"(?:[^"\\\n]|\\.)*"?|#[^\n]*', lambda m: " " * len(m.group(0)), text)


def context_at(text: str, line: int, col: int) -> tuple[str, str]:
    """(the block the cursor is in: top features encode property repair distribution policy,
    the text of the current statement before the cursor)."""
    lines = text.split("\n")
    before = "\n".join(lines[:line - 1] + [lines[line - 1][:col - 1] if line - 1 < len(lines) else ""])
    clean = _strip(before)
    stack: list[str] = []
    for m in re.finditer(r"[{}]|\b(features|encode|property|repair|distribution|policy)\b", clean):
        tok = m.group(0)
        if tok == "{":
            # a block opens when the '{' follows its header; other braces are sets
            head = clean[:m.start()].rstrip()
            last = re.findall(r"\b(features|encode|property|repair|distribution|policy)\b[^{}=]*$", head)
            stack.append(last[0] if last and not re.search(r"[:,(]\s*$", head) else "set")
        elif tok == "}":
            if stack:
                stack.pop()
    blocks = [b for b in stack if b != "set"]
    block = blocks[-1] if blocks else "top"
    current = clean.rsplit("\n", 1)[-1]
    return block, current


def completions(idx: Index | None, text: str, line: int, col: int) -> list[tuple[str, str, str]]:
    """(label, kind, detail): keywords in place, names in scope, metrics, options, encodings."""
    from fairspec.planning import OPTIONS
    from fairspec.sema.properties import METRICS

    from fairspec.sema.check_features import ENCODING_KINDS

    block, current = context_at(text, line, col)
    stmt = current.lstrip()
    word = re.search(r"[A-Za-z_][A-Za-z0-9_]*$", current)
    head = stmt[: len(stmt) - len(word.group(0))] if word else stmt
    names = _names_in_scope(idx)

    def of(kind, labels, detail=""):
        return [(lbl, kind, detail) for lbl in labels]

    if block == "top":
        if re.fullmatch(r"model\s+\w+\s*=\s*", head):
            return of("function", MODEL_FORMATS, "model format")
        if re.fullmatch(r"encode\s+\w+\s+for\s+", head):
            return of("class", names["model"], "model")
        if re.fullmatch(r"encode\s+", head):
            return of("struct", names["features"], "feature set")
        if head.strip() == "":
            return of("keyword", KEYWORDS_TOP)
        return _expression_items(names, METRICS)
    if block == "features":
        if ":" in head:
            return of("keyword", FEATURE_TYPES + FEATURE_MODIFIERS)
        return []
    if block == "encode":
        if ":" in head:
            return of("enum", ENCODING_KINDS, "encoding")
        return of("field", names["feature"], "feature")
    if block in ("property", "repair", "policy"):
        if re.fullmatch(r"using\s+", head):
            from fairspec.planning import BACKENDS

            return [(b.name, "module", b.doc) for b in BACKENDS.values()]
        if re.fullmatch(r"search\s+", head):
            from fairspec.planning import OPTIONS

            return of("enum", OPTIONS["search"].choices, "search strategy")
        if head.strip() == "":
            kw = KEYWORDS_PROPERTY if block != "repair" else KEYWORDS_REPAIR
            opts = sorted(_option_names(idx, line) or [o.name for o in OPTIONS.values() if o.type != "statement"])
            return (of("keyword", kw) + of("property", [f"{o} = " for o in opts], "option")
                    + _expression_items(names, METRICS))
        return _expression_items(names, METRICS)
    return _expression_items(names, METRICS)


def _expression_items(names: dict, metrics: dict) -> list[tuple[str, str, str]]:
    out = [(m, "function", d) for m, d in metrics.items()]
    out += [("k_discrimination", "function", "HyFair k-discrimination"), ("pba", "function", "PBA neighbourhoods")]
    out += [(f, "function", d) for f, d in MODEL_OUTPUTS.items()]
    for kind, label in (("feature", "field"), ("group", "variable"), ("model", "class"), ("data", "file"),
                        ("distribution", "value"), ("param", "variable")):
        out += [(n, label, kind) for n in names[kind]]
    out += [(c, "keyword", "clause") for c in ("groups", "over", "flip", "around", "distribution", "mediators",
                                                "delta", "given")]
    return out


def _names_in_scope(idx: Index | None) -> dict[str, list[str]]:
    kinds = ("model", "data", "features", "feature", "group", "distribution", "property", "policy", "param", "apply")
    out: dict[str, list[str]] = {k: [] for k in kinds}
    if idx is None:
        return out
    for name, syms in idx.symbols.items():
        for s in syms:
            if s.kind in out and name not in out[s.kind]:
                out[s.kind].append(name)
    for k in out:
        out[k].sort()
    return out


def _option_names(idx: Index | None, line: int) -> list[str]:
    """The option names of the backend planned for the property the cursor is in (empty: not known)."""
    if idx is None:
        return []
    spec = _spec(idx)
    for p in (spec.properties if spec else ()):
        s = p.span
        if s is not None and _same(s.file, idx.path) and s.line <= line <= s.end_line:
            from fairspec.planning import plan

            cap = plan(p, spec).capability()
            return [o.name for o in cap.options if o.type != "statement"] if cap else []
    return []


# ------------------------------------------------------------------ rename

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
    shipped policy): those files are not the user's to edit."""
    got = rename_target(idx, file, line, col)
    if got is None:
        raise RenameError("nothing to rename here: put the cursor on a declared name")
    sym, _ = got
    if not _IDENT.match(new) or new in _KEYWORDS:
        raise RenameError(f"{new!r} is not a name (letters, digits and _, not a keyword)")
    if new == sym.name:
        return []
    # features, groups, models, ... share one namespace in expressions; a policy's parameters only
    # its own body
    clash = [s for s in idx.symbols.get(new, []) if s.kind != "param" or s.container == sym.container]
    if clash:
        raise RenameError(f"{new!r} is already declared ({clash[0].kind} at line {clash[0].span.line})")
    spans = [o.span for o in idx.occurrences if o.symbol == sym]
    outside = [s for s in spans if not _under(s.file, root)]
    if outside:
        raise RenameError(f"{sym.name!r} is also used in {outside[0].file}, outside the project; rename it there first")
    edits = [(s, new) for s in spans]
    node = sym.node
    if sym.kind == "feature" and isinstance(node, ast.FeatureDecl) and node.column is None:
        end = node.span
        edits.append((Span(end.file, end.end_line, end.end_column, end.end_line, end.end_column),
                      f' column "{sym.name}"'))
    return edits


def _under(file: str, root: str) -> bool:
    try:
        Path(file).resolve().relative_to(Path(root).resolve().parent)
        return True
    except ValueError:
        return False


_KEYWORDS = {"import", "model", "data", "features", "encode", "group", "distribution", "property", "repair",
             "policy", "apply", "forall", "require", "ensure", "using", "search", "explain", "report", "by",
             "goal", "bound", "write", "for", "from", "as", "except", "in", "column", "bins", "protected", "trust",
             "int", "real", "bool", "groups", "over", "flip", "around", "mediators", "delta", "given", "and", "or",
             "not", "true", "false", "none", "x"}


# ------------------------------------------------------------------ folding

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
    lines = idx.texts.get(root.file if root else file, "").split("\n")
    start = None
    for i, text in enumerate(lines + [""], 1):
        if text.lstrip().startswith("#"):
            start = start or i
        else:
            if start is not None and i - 1 > start:
                out.append((start, i - 1, "comment"))
            start = None
    return sorted(out)


# ------------------------------------------------------------------ semantic tokens

TOKEN_TYPES = ["keyword", "string", "number", "comment", "operator", "function", "class", "namespace", "type",
               "property", "variable", "parameter", "enumMember"]
TOKEN_MODIFIERS = ["declaration", "defaultLibrary"]
_KIND_TOKEN = {"model": "class", "data": "namespace", "features": "type", "feature": "property",
               "group": "variable", "distribution": "namespace", "property": "function", "policy": "function",
               "param": "parameter", "apply": "function", "repair": "function"}


def semantic_tokens(idx: Index | None, text: str, file: str) -> list[tuple[int, int, int, str, tuple[str, ...]]]:
    """(line, column, length, type, modifiers) of every token, 1-based, in order: the lexer's
    keywords, strings, numbers, comments and operators; names by what they name (the index);
    metrics as library functions."""
    from fairspec.sema.properties import PROPERTY_FUNCTIONS

    out = []
    by_pos = {}
    if idx is not None:
        for o in idx.occurrences:
            if _same(o.span.file, file) and o.span.line == o.span.end_line:
                by_pos[(o.span.line, o.span.column)] = o
    for ln, line in enumerate(text.split("\n"), 1):
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
                occ = by_pos.get((ln, col))
                if occ is not None:
                    mods = ("declaration",) if occ.is_declaration else ()
                    out.append((ln, col, len(word), _KIND_TOKEN.get(occ.symbol.kind, "variable"), mods))
                elif word in _KEYWORDS:
                    out.append((ln, col, len(word), "keyword", ()))
                elif word in PROPERTY_FUNCTIONS or word in ("col",) + tuple(MODEL_OUTPUTS):
                    out.append((ln, col, len(word), "function", ("defaultLibrary",)))
    return out


_LEX = re.compile(r'(?P<comment>#.*$)|(?P<string>"(?:[^"\\]|\\.)*")|(?P<number>\b\d+(?:\.\d+)?(?:[eE][-+]?\d+)?'
                  r'(?:ms|s|min|h)?\b)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>==|!=|<=|>=|[<>=+\-*/|])')


# ------------------------------------------------------------------ signature help

def signature_at(idx: Index | None, text: str, line: int, col: int) -> tuple[str, str, list[str], int] | None:
    """Inside `metric(` or `apply policy(`: (label, documentation, parameter labels, active index)."""
    from fairspec.sema.properties import METRICS

    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return None
    before = "\n".join(lines[:line - 1] + [lines[line - 1][:col - 1]])
    depth, i = 0, len(before) - 1
    commas = 0
    while i >= 0:
        ch = before[i]
        if ch == ")":
            depth += 1
        elif ch == "(":
            if depth == 0:
                break
            depth -= 1
        elif ch == "," and depth == 0:
            commas += 1
        elif ch in "{}" and depth == 0:
            return None
        i -= 1
    if i < 0:
        return None
    m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*$", before[:i])
    if not m:
        return None
    fn = m.group(1)
    if fn in METRICS:
        params = ["MODEL", "groups G [x G2 ...]", "data = DATA | distribution = NAME"]
        return (f"{fn}(MODEL, groups G, data = DATA | distribution = NAME)", METRICS[fn], params,
                min(commas, len(params) - 1))
    if idx is not None:
        pol = next((s for s in idx.symbols.get(fn, []) if s.kind == "policy"), None)
        if pol is not None:
            params = [f"{p.name.id}: {p.type.id}" + (" = ..." if p.default is not None else "") for p in pol.node.params]
            doc = f"policy {fn}: properties " + ", ".join(p.name.id for p in pol.node.properties)
            return (f"{fn}({', '.join(params)})", doc, params, min(commas, max(len(params) - 1, 0)))
    return None


# ------------------------------------------------------------------ code lens

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
