"""Completion in the editor (fairspec.lsp.analysis): the context at the cursor (top level, a property,
a repair, a feature type, an expression, an option) and the keywords, names and metrics it offers."""

from __future__ import annotations

import re

from .index import Index, _same, _spec
from fairspec.diagnostics import split_lines


KEYWORDS_TOP = ("import", "model", "data", "features", "encode", "group", "distribution", "property", "repair",
                "policy", "apply")
KEYWORDS_PROPERTY = ("forall", "require", "ensure", "using", "search", "explain", "report by")
KEYWORDS_REPAIR = ("goal", "bound", "write", "using")
FEATURE_TYPES = ("int in [", "real in [", "bool", "{")
FEATURE_MODIFIERS = ("protected", "column", "bins")
# what a word of the language names (completion's details, hover's text): model and data formats,
# encodings, a call's clauses
MODEL_FORMATS = {
    "onnx": "an ONNX model file: onnx(\"m.onnx\", output = ..., index = ..., score = logit | prob | value)",
    "torch": "a PyTorch model (TorchScript, or a trusted pickle): torch(\"net.pt\")",
    "sklearn": "a scikit-learn estimator (skops, or a trusted pickle), read through its own predict: "
               "sklearn(\"lr.skops\")",
    "xgboost": "an XGBoost model (JSON or UBJSON): xgboost(\"gbm.json\", rounds = best | all)",
    "lightgbm": "a LightGBM model (text): lightgbm(\"gbm.txt\")",
    "rule": "a decision rule written in the spec over the features: rule(P + Q + R - S >= 2)",
    "predictions": "logged decisions of a data set, no model file: predictions(DATA, decision = \"col\") "
                   "(1/0, yes/no, true/false; else positive = \"approve\") "
                   "or predictions(DATA, score = \"col\", threshold = 0.5)"}
DATA_FORMATS = {"csv": "a CSV file: csv(\"f.csv\", header = ..., columns = [...], missing = ..., where = ..., "
                       "label = ...)",
                "parquet": "a Parquet file (names and types from the file; a null is a missing value): "
                           "parquet(\"f.parquet\", where = ..., label = ...)"}
ENCODINGS = {"raw": "the feature's value as it is, one column",
             "code": "one column: the category's index in declared order, or code {A = 1, B = 0}",
             "onehot": "one column per category, in declared order: 1 for the feature's, 0 elsewhere",
             "minmax": "one column: (v - lo) / (hi - lo), lo and hi fitted on the data or given: minmax(lo = 17, "
                       "hi = 90)",
             "standard": "one column: (v - mean) / std, fitted on the data or given: standard(mean = ..., std = ...)"}
CLAUSES = {"groups": "the groups compared: a protected feature (one group per value), a group, or G1 x G2 "
                     "(their intersections): groups sex x race",
           "over": "k_discrimination: the protected features whose combinations the K counterfactuals of an "
                   "input take: over {race, sex}",
           "flip": "pba: the sensitive attribute flipped (binary or one-hot encoded): flip sex",
           "around": "the points looked at: around DATA (pba: the neighbourhoods of its rows)",
           "delta": "pba: each numeric feature's half-width of the neighbourhood, in its own units: delta {age: 1}",
           "given": "pba: only the points where this condition over the features holds",
           "mediators": "path_specific: the features the effect goes through: mediators {feature, ...}",
           "distribution": "the population as a declared distribution instead of a data set"}
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
    clean = _before(text, line, col)
    blocks = [b for b, _ in _open_blocks(clean) if b != "set"]
    block = blocks[-1] if blocks else "top"
    current = clean.rsplit("\n", 1)[-1]
    return block, current


def _before(text: str, line: int, col: int) -> str:
    """The text before the cursor, strings and comments blanked out."""
    lines = split_lines(text)
    return _strip("\n".join(lines[:line - 1] + [lines[line - 1][:col - 1] if line - 1 < len(lines) else ""]))


def _open_blocks(clean: str) -> list[tuple[str, int]]:
    """The blocks open at the end of `clean`, outermost first: (kind or "set", offset of the header)."""
    stack: list[tuple[str, int]] = []
    for m in re.finditer(r"[{}]|\b(features|encode|property|repair|distribution|policy)\b", clean):
        tok = m.group(0)
        if tok == "{":
            # a block opens when the '{' follows its header; other braces are sets
            head = clean[:m.start()].rstrip()
            last = list(re.finditer(r"\b(features|encode|property|repair|distribution|policy)\b[^{}=]*$", head))
            if last and not re.search(r"[:,(]\s*$", head):
                stack.append((last[0].group(1), last[0].start()))
            else:
                stack.append(("set", m.start()))
        elif tok == "}":
            if stack:
                stack.pop()
    return stack


_STMT_START = re.compile(r"^[ \t]*(?:(?:forall|require|ensure|using|search|explain|report)\b|[A-Za-z_]\w*[ \t]*=(?!=)|})",
                         re.M)


def bound_variables(text: str, line: int, col: int) -> list[tuple[str, str]]:
    """(name, what binds it) for the variables in scope at the cursor: those of the enclosing
    property's `forall x, x' : S` (anywhere in it, before or after the cursor), and the class
    variable of an `ensure forall c :` the cursor is in.  Read from the text (it need not parse);
    nothing outside a property."""
    clean = _before(text, line, col)
    blocks = [(b, at) for b, at in _open_blocks(clean) if b != "set"]
    if not blocks or blocks[-1][0] != "property":
        return []
    start = blocks[-1][1]
    whole = _strip("\n".join(split_lines(text)))  # (offsets as in `clean`'s)
    # the property's text: to its closing brace, or (not closed yet) to the next declaration at column 0
    depth, end = 0, len(whole)
    for m in re.finditer(r"[{}]|\n(?=[A-Za-z_])", whole[start:]):
        tok = m.group(0)
        if tok == "\n":
            if start + m.start() >= len(clean):
                end = start + m.start()
                break
            continue
        depth += 1 if tok == "{" else -1
        if depth == 0:
            end = start + m.end()
            break
    block = whole[start:end]
    out: list[tuple[str, str]] = []
    for m in re.finditer(r"\bforall\s+([A-Za-z_]\w*)(?:\s*,\s*([A-Za-z_]\w*'))?(?:\s*:\s*([A-Za-z_]\w*))?", block):
        head = block[:m.start()].rsplit("\n", 1)[-1]
        if re.search(r"\bensure\s*$", head):  # ensure forall c : ... -- c only in that statement
            here = len(clean) - start
            if not (m.end() <= here and not _STMT_START.search(block, m.end(), here)):
                continue
            out.append((m.group(1), "class variable: ensure forall " + m.group(1)))
            continue
        of = f" : {m.group(3)}" if m.group(3) else ""
        for v in (m.group(1), m.group(2)):
            if v and v not in [n for n, _ in out]:
                out.append((v, f"forall {', '.join(x for x in m.group(1, 2) if x)}{of}"))
    return out


def completions(idx: Index | None, text: str, line: int, col: int,
                index_line: int | None = 0, space: bool = False) -> list[tuple[str, str, str]]:
    """(label, kind, detail): keywords in place, names in scope, metrics, options, encodings.
    ``index_line`` is the cursor's line in the index's text when that is an older text (None: it
    changed since; 0, the default: the index's text is ``text``).  ``space``: the editor asks
    because a space was typed; then only where the next word comes from a short known list (see
    ``_CLOSED``), else nothing (a space inside an expression is not a request for 80 names)."""
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

    if _NEW_NAME.fullmatch(head) or _BLOCK_OPENED.fullmatch(head):
        return []  # a name being declared, or a block's `{` just typed (a newline comes next): nothing fits
    option = re.fullmatch(r"(\w+)\s*=\s*", head)
    if space and (not _CLOSED[block if block in _CLOSED else "property"].fullmatch(head)
                  or (option and block != "top" and getattr(OPTIONS.get(option.group(1)), "type", "") != "choice")):
        return []
    if block == "top":
        if re.fullmatch(r"features\s+\w+\s+from\s+", head):
            return of("file", names["data"], "data")
        if re.fullmatch(r"repair\s+\w+\s+for\s+", head):
            return of("class", names["model"], "model")
        if re.fullmatch(r"apply\s+", head):
            return of("function", names["policy"], "policy")
        if re.fullmatch(r"model\s+\w+\s*=\s*", head):
            return [(f, "function", d) for f, d in MODEL_FORMATS.items()]
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
            return [(k, "enum", ENCODINGS.get(k, "encoding")) for k in ENCODING_KINDS]
        return of("field", names["feature"], "feature")
    if block in ("property", "repair", "policy") and option and option.group(1) in OPTIONS:
        # an option's value: its choices (as the backend planned for the property takes it: engine's differ)
        opt = next((o for o in _planned_options(idx, line if index_line == 0 else index_line) or ()
                    if o.name == option.group(1)), OPTIONS[option.group(1)])
        params = of("variable", sorted(n for n, _ in _policy_params(text, line, col)), "parameter")
        return (of("enum", opt.choices, f"{opt.name}: {opt.doc}") if opt.type == "choice" else []) + params
    if block == "property":
        if re.fullmatch(r"forall\s+\w+\s*,\s*\w+'\s*:\s*", head):
            sets = [n for n, t in _policy_params(text, line, col) if t == "features"]  # (the enclosing policy's)
            return of("struct", names["features"], "feature set") + of("variable", sets, "parameter")
        member = re.search(r"(?<![\w'])([A-Za-z_]\w*'?)\.$", head)
        if member:  # x.: the features of x's feature set, and x.* (all of them)
            of_set = dict(bound_variables(text, line, col)).get(member.group(1), "")
            fs = re.search(r" : (\w+)$", of_set)
            feats = sorted({n for n, syms in (idx.symbols.items() if idx is not None and fs else ())
                            for sym in syms if sym.kind == "feature" and sym.container == fs.group(1)})
            if feats:
                return of("field", feats, f"feature of {fs.group(1)}") + [("*", "field", "every feature")]
            if fs and (fs.group(1), "features") in _policy_params(text, line, col):
                # x : F, F a parameter of the policy: the features of the sets its applies pass as F
                passed = _passed_features(idx, _policy_at(text, line, col), fs.group(1))
                return ([(f, "field", "feature of " + ", ".join(sets)) for f, sets in passed.items()]
                        + [("*", "field", f"every feature of the set passed as {fs.group(1)}")])
        bound = [(v, "variable", what) for v, what in bound_variables(text, line, col)]
        if re.fullmatch(r"(?:using|search)\s+", head) or head.strip() == "":
            bound = []  # (a statement's start: a keyword or an option name)
        if bound:
            return bound + _expression_items(names, METRICS)
    if block in ("property", "repair", "policy"):
        if re.fullmatch(r"using\s+", head):
            from fairspec.planning import BACKENDS

            return [(b.name, "module", b.doc) for b in BACKENDS.values()]
        if re.fullmatch(r"search\s+", head):
            from fairspec.planning import OPTIONS

            return of("enum", OPTIONS["search"].choices, "search strategy")
        if head.strip() == "":
            kw = KEYWORDS_PROPERTY if block != "repair" else KEYWORDS_REPAIR
            opts = sorted(_option_names(idx, line if index_line == 0 else index_line) or [o.name for o in OPTIONS.values() if o.type != "statement"])
            return (of("keyword", kw) + of("property", [f"{o} = " for o in opts], "option")
                    + _expression_items(names, METRICS))
        return _expression_items(names, METRICS)
    return _expression_items(names, METRICS)


# where a new name is typed: a declaration's, an `apply ... as`, a property's forall variables
_NEW_NAME = re.compile(r"(?:(?:model|data|features|group|distribution|property|repair|policy)\s+"
                       r"|apply\s.*\)\s*as\s+|forall\s+|forall\s+\w+\s*,\s*|ensure\s+forall\s+)")

# where a space-triggered completion answers: the next word comes from a short known list (a data set,
# a model, a policy, a model format, a feature set, a feature type or modifier, an encoding, a backend,
# a search strategy, an option's choices)
_CLOSED = {"top": re.compile(r"features\s+\w+\s+from\s+|repair\s+\w+\s+for\s+|apply\s+|model\s+\w+\s*=\s*"
                             r"|encode\s+(?:\w+\s+for\s+)?"),
           # a type after `:`, a modifier after a whole type (not inside `int in [17, ` nor `{A, `)
           "features": re.compile(r"[^:]*:\s*|[^:]*:.*(?:[]}\"]|\bbool|\bprotected)\s+"),
           "encode": re.compile(r"[^:]*:\s*"),
           "distribution": re.compile(r"(?!)"),
           "property": re.compile(r"(?:using|search)\s+|\w+\s*=\s*|forall\s+\w+\s*,\s*\w+'\s*:\s*")}

_BLOCK_OPENED = re.compile(r"(?:features|encode|property|repair|distribution|policy)\b[^{}]*\{[ \t]*")


def _expression_items(names: dict, metrics: dict) -> list[tuple[str, str, str]]:
    out = [(m, "function", d) for m, d in metrics.items()]
    out += [("k_discrimination", "function", "HyFair k-discrimination"), ("pba", "function", "PBA neighbourhoods")]
    out += [(f, "function", d) for f, d in MODEL_OUTPUTS.items()]
    for kind, label in (("feature", "field"), ("group", "variable"), ("model", "class"), ("data", "file"),
                        ("distribution", "value"), ("param", "variable")):
        out += [(n, label, kind) for n in names[kind]]
    out += [(c, "keyword", "clause: " + d) for c, d in CLAUSES.items()]
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


def _policy_at(text: str, line: int, col: int) -> str | None:
    """The name of the policy the cursor is in (from the text), or None."""
    clean = _before(text, line, col)
    at = [o for b, o in _open_blocks(clean) if b == "policy"]
    m = re.match(r"policy\s+(\w+)", clean[at[-1]:]) if at else None
    return m.group(1) if m else None


def _policy_params(text: str, line: int, col: int) -> list[tuple[str, str]]:
    """(name, type) of the parameters of the policy the cursor is in, read from its header's text."""
    clean = _before(text, line, col)
    at = [o for b, o in _open_blocks(clean) if b == "policy"]
    m = re.match(r"policy\s+\w+\s*\(([^()]*)\)", clean[at[-1]:]) if at else None
    return re.findall(r"([A-Za-z_]\w*)\s*:\s*([A-Za-z_]\w*)", m.group(1)) if m else []


def _passed_features(idx: Index | None, policy: str, param: str) -> dict[str, list[str]]:
    """feature -> the feature sets holding it, over the sets the index's applies of ``policy`` pass as
    its parameter ``param`` (positional or by name); empty when the policy is not applied there."""
    from fairspec.syntax import ast

    decl = next((s.node for s in (idx.symbols.get(policy, ()) if idx is not None else ())
                 if s.kind == "policy"), None)
    if decl is None:
        return {}
    names = [p.name.id for p in decl.params]
    sets: list[str] = []
    for m in idx.modules:
        for d in m.decls:
            if not (isinstance(d, ast.ApplyDecl) and d.policy.id == policy):
                continue
            for i, a in enumerate(d.args):
                to = a.name.id if a.name is not None else (names[i] if i < len(names) else None)
                if to == param and isinstance(a.value, ast.Name) and a.value.id not in sets:
                    sets.append(a.value.id)
    out: dict[str, list[str]] = {}
    for fs in sets:
        for name, syms in sorted(idx.symbols.items()):
            if any(sym.kind == "feature" and sym.container == fs for sym in syms):
                out.setdefault(name, []).append(fs)
    return dict(sorted(out.items()))


def _option_names(idx: Index | None, line: int | None) -> list[str]:
    """The option names of the backend planned for the property the cursor is in (empty: not known)."""
    return [o.name for o in _planned_options(idx, line) or () if o.type != "statement"]


def _planned_options(idx: Index | None, line: int | None) -> tuple | None:
    """The options of the backend planned for the property the cursor is in (None: not known)."""
    if idx is None or line is None:
        return None
    spec = _spec(idx)
    for p in (spec.properties if spec else ()):
        s = p.span
        if s is not None and _same(s.file, idx.path) and s.line <= line <= s.end_line:
            from fairspec.planning import plan

            cap = plan(p, spec).capability()
            return tuple(cap.options) if cap else None
    return None


_KEYWORDS = {"import", "model", "data", "features", "encode", "group", "distribution", "property", "repair",
             "policy", "apply", "forall", "require", "ensure", "using", "search", "explain", "report", "by",
             "goal", "bound", "write", "for", "from", "as", "except", "in", "column", "bins", "protected", "trust",
             "int", "real", "bool", "groups", "over", "flip", "around", "mediators", "delta", "given", "and", "or",
             "not", "true", "false", "none", "x"}
