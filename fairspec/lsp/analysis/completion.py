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


def _in_comment(text: str, line: int, col: int) -> bool:
    """The cursor is in a comment (after a `#` that is not inside a string)."""
    lines = split_lines(text)
    raw = lines[line - 1][:col - 1] if 0 < line <= len(lines) else ""
    return any(m.group(0).startswith("#") for m in re.finditer(r'"(?:[^"\\\n]|\\.)*"?|#[^\n]*', raw))


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
            # (a policy's header may hold a parameter's default: `policy p(t: real = 0.8) {`)
            last = list(re.finditer(r"\b(features|encode|property|repair|distribution|policy)\b[^{}=]*$"
                                    r"|\b(policy)\s+\w+\s*\([^(){}]*\)\s*$", head))
            if last and not re.search(r"[:,(]\s*$", head):
                stack.append((last[0].group(1) or last[0].group(2), last[0].start()))
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
                index_line: int | None = 0, space: bool = False, importers=()) -> list[tuple[str, str, str]]:
    """(label, kind, detail): keywords in place, names in scope, metrics, options, encodings.
    ``index_line`` is the cursor's line in the index's text when that is an older text (None: it
    changed since; 0, the default: the index's text is ``text``).  ``space``: the editor asks
    because a space was typed; then only where the next word comes from a short known list (see
    ``_CLOSED``), else nothing (a space inside an expression is not a request for 80 names).
    ``importers``: the indexes of other open documents that import this one (their applies tell the
    sets passed to a policy declared here)."""
    from fairspec.planning import OPTIONS
    from fairspec.sema.properties import METRICS

    from fairspec.sema.check_features import ENCODING_KINDS

    if _in_comment(text, line, col):
        return []  # (prose: nothing to complete)
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
        inside = _top_arguments(idx, text, line, col, names)
        return inside if inside is not None else _expression_items(names, METRICS)
    if block == "features":
        if ":" in head:
            return of("keyword", FEATURE_TYPES + FEATURE_MODIFIERS)
        return []
    if block == "encode":
        enc = re.search(r":.*\b(minmax|standard)\s*\(([^()]*)$", head)
        if enc:  # its parameters, not another encoding
            given = set(re.findall(r"(\w+)\s*=", enc.group(2)))
            if re.search(r"=\s*$", enc.group(2)):
                return []
            return [(f"{a} = ", "property", f"{enc.group(1)} parameter") for a in
                    {"minmax": ("lo", "hi"), "standard": ("mean", "std")}[enc.group(1)] if a not in given]
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
                # x : F, F a parameter of the policy: the features of the sets its applies pass as F (here
                # or in an open document importing this one), of F's default set, those the policy reads
                # from F's individuals (a library applies nothing: any set passed must have them)
                policy, param = _policy_at(text, line, col), fs.group(1)
                at = line if index_line == 0 else index_line
                items = {f: "feature of " + ", ".join(sets) for f, sets in
                         _passed_features(idx, policy, param, importers).items()}
                for f, why in _known_features(idx, policy, param, at).items():
                    items.setdefault(f, why)
                return ([(f, "field", why) for f, why in items.items()]
                        + [("*", "field", f"every feature of the set passed as {param}")])
        if re.search(r"\bexcept\s*\{[^{}]*$", head):  # the features that may differ: of x's set
            sets = {m.group(1) for _, w in bound_variables(text, line, col) if (m := re.search(r" : (\w+)$", w))}
            feats = sorted({n for n, syms in (idx.symbols.items() if idx is not None else ())
                            for sym in syms if sym.kind == "feature" and sym.container in sets})
            if feats:
                return of("field", feats, "feature of " + ", ".join(sorted(sets)))
        call = _metric_call(idx, text, line, col, names)
        if call is not None:
            return call
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


_DATA_ARGUMENTS = ("header", "sep", "columns", "missing", "where", "label", "target", "categories")


def _top_arguments(idx: Index | None, text: str, line: int, col: int, names: dict) -> list | None:
    """Inside a top-level declaration that is no block: what it takes there, not a metric's name.
    `apply p(`: p's parameters not given yet (`name = `), then what an argument names (models, feature
    sets, groups, features, data); after `name = ` those only. `data d = csv(`: its arguments' names at an
    argument's start, the data's columns after `label =`, `where =`, `target =`, `missing =`; nothing in
    `columns = [...]` (names being declared). `group g = `: features and groups. None elsewhere."""
    clean = _before(text, line, col)
    starts = list(re.finditer(r"^(apply|data|group|model)\b", clean, re.M))
    if not starts:
        return None
    kw, rest = starts[-1].group(1), clean[starts[-1].start():]
    if re.search(r"\n[A-Za-z_]", rest):  # (another declaration began after it)
        return None
    depth = rest.count("(") - rest.count(")")
    before = rest[:len(rest) - len(re.search(r"\w*$", rest).group(0))].rstrip()
    values = (of_kind(names, "model") + [(n, "struct", "feature set") for n in names["features"]]
              + of_kind(names, "group") + of_kind(names, "feature"))
    if kw == "group":
        return [v for v in values if v[2] in ("feature", "group")] if re.match(r"group\s+\w+\s*=", rest) else None
    if kw == "model":
        m = re.match(r"model\s+\w+\s*=\s*(\w+)\s*\(", rest)
        if m is None or depth < 1:
            return None
        if before.endswith("(") or before.endswith(","):
            args = (("decision", "score", "threshold") if m.group(1) == "predictions"
                    else ("output", "index", "score", "rounds"))
            given = set(re.findall(r"(\w+)\s*=", rest))
            return [(f"{a} = ", "property", "argument") for a in args if a not in given]
        choice = re.search(r"\b(score|rounds)\s*=$", before)
        if choice and m.group(1) != "predictions":
            return [(c, "enum", choice.group(1)) for c in {"score": ("logit", "prob", "value"),
                                                            "rounds": ("best", "all")}[choice.group(1)]]
        return []
    if kw == "apply":
        m = re.match(r"apply\s+(\w+)\s*\(", rest)
        if m is None or depth < 1:
            return None
        values += [(n, "file", "data") for n in names["data"]]
        args = _split_args(rest[m.end():])
        if rest.count("{") > rest.count("}"):  # a set: features
            return [v for v in values if v[2] == "feature"]
        if "=" in args[-1]:
            return values
        if args[-1].strip():
            return []
        decl = _policy_decl(idx, m.group(1))
        npos = sum(1 for a in args[:-1] if not re.match(r"\s*\w+\s*=", a))
        given = set(re.findall(r"(\w+)\s*=", rest))
        params = [(f"{p.name.id} = ", "property", f"parameter {p.name.id}: {p.type.id}") for p in
                  (decl.params[npos:] if decl is not None else ()) if p.name.id not in given]
        return params + values
    m = re.match(r"data\s+(\w+)\s*=\s*\w+\s*\(", rest)
    if m is None or depth < 1:
        return None
    if before.endswith("(") or before.endswith(","):
        if rest.count("[") > rest.count("]") or rest.count("{") > rest.count("}"):
            return _data_columns(idx, m.group(1)) if re.search(r"missing\s*=\s*[[{][^]}]*$", rest) else []
        given = set(re.findall(r"(\w+)\s*=", rest))
        return [(f"{a} = ", "property", "argument") for a in _DATA_ARGUMENTS if a not in given]
    if re.search(r"\b(?:label|where|target)\s*=[^,]*$", before) or before.endswith("missing ="):
        return _data_columns(idx, m.group(1))
    if before.endswith("header ="):
        return [("true", "keyword", "a header line names the columns"), ("false", "keyword", "no header line")]
    return []


def _metric_call(idx: Index | None, text: str, line: int, col: int, names: dict) -> list | None:
    """Inside a metric's call in a property (`equalized_odds(`): models as its first argument, features and
    groups after `groups` (and `x`), feature sets' features in `over {`, the data sets after `data =`,
    the distributions after `distribution =`; None elsewhere (the usual items)."""
    from fairspec.sema.properties import METRICS

    clean = _before(text, line, col)
    depth, braces, i = 0, 0, len(clean) - 1
    while i >= 0 and not (clean[i] == "(" and depth == 0):
        depth += {")": 1, "(": -1}.get(clean[i], 0)
        braces += {"}": 1, "{": -1}.get(clean[i], 0)
        if braces < 0 and depth == 0 and not re.search(r"\b(?:over|flip)\s*$", clean[:i]):
            return None  # the property's own brace: no call open
        i -= 1
    fn = re.search(r"(\w+)\s*$", clean[:max(i, 0)])
    if i < 0 or fn is None or fn.group(1) not in (*METRICS, "k_discrimination", "pba"):
        return None
    args = _split_args(clean[i + 1:])
    params = [(n, "variable", f"parameter: {t}") for n, t in _policy_params(text, line, col)]
    cur = args[-1].strip()
    if len(args) == 1 and not cur:
        return of_kind(names, "model") + [p for p in params if p[2].endswith("model")]
    if re.fullmatch(r"groups\s+(?:.*\bx\s+)?", args[-1].lstrip()):  # (groups sex x ...)
        return of_kind(names, "feature") + of_kind(names, "group") + [p for p in params if p[2].endswith("groups")]
    if re.fullmatch(r"(?:over|flip)\s*\{?[^}]*", cur) and ("{" in cur or cur.startswith("flip")):
        return of_kind(names, "feature")
    if re.fullmatch(r"data\s*=", cur) or re.fullmatch(r"around", cur):
        return of_kind(names, "data") + [p for p in params if p[2].endswith("data")]
    if re.fullmatch(r"distribution\s*=", cur):
        return of_kind(names, "distribution")
    return None


def of_kind(names: dict, kind: str) -> list[tuple[str, str, str]]:
    label = {"feature": "field", "group": "variable", "model": "class", "data": "file", "distribution": "value"}[kind]
    return [(n, label, kind) for n in names[kind]]


def _split_args(inside: str) -> list[str]:
    """The arguments of a call's text after its `(`, cut at its own commas (the last: the one being typed,
    without the word at the cursor)."""
    out, depth, cur = [], 0, ""
    for ch in re.sub(r"\w*$", "", inside):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return out + [cur]


def _data_columns(idx: Index | None, data: str) -> list[tuple[str, str, str]]:
    """The columns of a declared data set: the spec's `columns = [...]`, else its file's header (the
    first rows lint reads, cached); none when unknown."""
    from fairspec.runtime.data import DataError, column_names

    d = next((x for x in (getattr(_spec(idx), "datasets", ()) if idx is not None else ()) if x.name == data), None)
    if d is None:
        return []
    try:
        cols = list(d.columns) if d.columns is not None else column_names(d)[0]
    except (DataError, OSError, ValueError):
        return []
    return [(c if re.fullmatch(r"[A-Za-z_]\w*", c) else f'col("{c}")', "field", f"column of {data}") for c in cols]


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


def _policy_decl(idx: Index | None, policy: str | None, file: str | None = None):
    """The declaration of ``policy`` in ``idx`` (in ``file`` when given: the document's own policy)."""
    return next((s.node for s in (idx.symbols.get(policy, ()) if idx is not None and policy else ())
                 if s.kind == "policy" and (file is None or _same(s.span.file, file))), None)


def _passed_features(idx: Index | None, policy: str, param: str, importers=()) -> dict[str, list[str]]:
    """feature -> the feature sets holding it, over the sets the applies of ``policy`` pass as its
    parameter ``param`` (positional or by name), in the index and in ``importers`` (indexes of open
    documents importing the index's file: their applies of the policy declared there); empty when the
    policy is not applied in any."""
    from fairspec.syntax import ast

    out: dict[str, list[str]] = {}
    for i, ix in enumerate([idx, *importers] if idx is not None else ()):
        decl = _policy_decl(ix, policy, None if i == 0 else idx.path)
        if decl is None:
            continue
        names = [p.name.id for p in decl.params]
        sets: list[str] = []
        for m in ix.modules:
            for d in m.decls:
                if not (isinstance(d, ast.ApplyDecl) and d.policy.id == policy):
                    continue
                for k, a in enumerate(d.args):
                    to = a.name.id if a.name is not None else (names[k] if k < len(names) else None)
                    if to == param and isinstance(a.value, ast.Name) and a.value.id not in sets:
                        sets.append(a.value.id)
        for fs in sets:
            for name, syms in sorted(ix.symbols.items()):
                if any(sym.kind == "feature" and sym.container == fs for sym in syms) and fs not in out.get(name, []):
                    out.setdefault(name, []).append(fs)
    return dict(sorted(out.items()))


def _known_features(idx: Index | None, policy: str | None, param: str, line: int | None) -> dict[str, str]:
    """feature -> why it is offered, for an individual of the policy's ``features`` parameter ``param``
    where no apply tells the set: the features of its default set (`F: features = S`), then those the
    policy reads from any individual of F (`x.age` in one of its properties, not on the cursor's ``line``
    of the index's text: the name being typed): a set passed as F must have them."""
    from fairspec.syntax import ast

    from .index import _walk

    decl = _policy_decl(idx, policy, idx.path if idx is not None else None)
    if decl is None:
        return {}
    out: dict[str, str] = {}
    p = next((p for p in decl.params if p.name.id == param), None)
    if p is not None and isinstance(p.default, ast.Name):
        for name, syms in sorted(idx.symbols.items()):
            if any(s.kind == "feature" and s.container == p.default.id for s in syms):
                out[name] = f"feature of {p.default.id} ({param}'s default)"
    read: set[str] = set()
    for prop in decl.properties:
        xs = {n.id for st in prop.stmts if isinstance(st, ast.Stmt) and st.kind == "forall" and len(st.args) == 3
              and isinstance(st.args[2], ast.Name) and st.args[2].id == param
              for n in st.args[:2] if isinstance(n, ast.Name)}
        read |= {n.name.id for n in _walk(prop) if isinstance(n, ast.Attr) and isinstance(n.obj, ast.Name)
                 and n.obj.id in xs and n.obj.span.line != line and n.name.id not in _KEYWORDS}
    for name in sorted(read - set(out)):
        out[name] = f"feature {policy} reads from {param}"
    return out


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
