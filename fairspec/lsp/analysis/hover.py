"""What the editor server shows at a position (fairspec.lsp.analysis): hover text for a declaration, a
feature, a model, a property or a metric, and the signature help of a property function."""

from __future__ import annotations

import math
import re
from pathlib import Path

from .completion import CLAUSES, DATA_FORMATS, ENCODINGS, MODEL_FORMATS, MODEL_OUTPUTS
from .index import Index, Symbol, _contains, _same, _spec, _walk, symbol_at
from fairspec.diagnostics import Span, split_lines
from fairspec.syntax import ast


def _text_of(idx: Index, span: Span) -> str:
    text = idx.texts.get(span.file)
    if text is None:
        return ""
    lines = split_lines(text)  # a span's lines are the parser's
    if span.line == span.end_line:
        return lines[span.line - 1][span.column - 1:span.end_column - 1]
    out = [lines[span.line - 1][span.column - 1:]] + lines[span.line:span.end_line - 1]
    out.append(lines[span.end_line - 1][:span.end_column - 1])
    return " ".join(x.strip() for x in out)


def code(text) -> str:
    """``text`` as one Markdown code span whatever it holds: control characters and line breaks shown as escapes
    (fairspec.diagnostics.visible), a fence of one backtick more than its longest run, padded where it begins or
    ends with a backtick or a space.  A category ``"`[x](http://e)`"`` in single backticks closed the span and
    was drawn as a live link; ``"a`b, c"`` read as two categories."""
    from fairspec.diagnostics.visible import visible_value

    t = visible_value("" if text is None else str(text))
    fence = "`" * (max((len(r) for r in re.findall(r"`+", t)), default=0) + 1)
    pad = " " if not t or t[0] in "` " or t[-1] in "` " else ""
    return f"{fence}{pad}{t}{pad}{fence}"


def _domain(dom) -> str:
    """A feature's domain as the spec writes it (categories quoted where the grammar needs it)."""
    from fairspec.syntax.literals import value

    k = getattr(dom, "kind", "")
    if k in ("int", "real"):
        return f"{k} in [{_number(dom.lo)}, {_number(dom.hi)}]"
    if k == "cat":
        return "{" + ", ".join(value(c) for c in dom.categories) + "}"
    return k


def hover(idx: Index, file: str, line: int, col: int, importers: list[Index] = ()) -> str | None:
    """Markdown for what is under the cursor (``importers``: the indexes of open specs importing the file,
    which tell where a library's policy is applied)."""
    metric = (_metric_at(idx, file, line, col) or _statement_at(idx, file, line, col)
              or _word_at(idx, file, line, col) or _column_at(idx, file, line, col)
              or _policy_property_at(idx, file, line, col, importers) or _file_at(idx, file, line, col))
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
        return f"**data** `{sym.name}`: {d.format} file {code(d.path)}{cols}"
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
        return f"**apply** {code(_text_of(idx, sym.node.span))}"
    if sym.kind == "variable":
        if sym.node.kind == "forall":
            x, x2, fs = (n.id for n in sym.node.args)
            return (f"**variable** `{sym.name}` of property `{sym.container}`: `forall {x}, {x2} : {fs}`, "
                    f"a pair of individuals of `{fs}`")
        return (f"**class variable** `{sym.name}` of property `{sym.container}`: `ensure forall {sym.name} :` "
                f"holds for every class of the model")
    return f"**{sym.kind}** `{sym.name}`"


def _hover_feature(idx: Index, sym: Symbol, spec) -> str:
    fs = next((x for x in (spec.feature_sets if spec else ()) if x.name == sym.container), None)
    f = next((x for x in (fs.features if fs else ()) if x.name == sym.name), None)
    if f is None:
        return f"**feature** `{sym.name}` of `{sym.container}`"
    out = [f"**feature** `{sym.name}` of `{sym.container}`: {code(_domain(f.domain))}"
           + (" — **protected**" if f.protected else "")]
    if f.column != f.name:
        out.append(f"read from column {code(f.column)}")
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
                    extra = f" (lo = {_number(c.lo)}, hi = {_number(c.hi)}{', fitted on the data' if c.fitted else ''})"
                elif c.kind == "standard" and c.mean is not None:
                    extra = f" (mean = {_number(c.mean)}, std = {_number(c.std)})"
                out.append(f"- `{enc.model}`: {c.kind}, {cols} of {enc.width}{extra}")
    return "\n\n".join(out[:1]) + ("\n\n" + "\n".join(out[1:]) if len(out) > 1 else "")


def _hover_model(idx: Index, sym: Symbol, spec) -> str:
    m = next((x for x in (spec.models if spec else ()) if x.name == sym.name), None)
    if m is None:
        return f"**model** `{sym.name}`"
    width = getattr(idx.result, "model_widths", {}).get(sym.name)
    lines = [f"**model** `{sym.name}`: {m.format}" + (f" file {code(m.path)}" if m.path else "")]
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
            out.append(code(f"{o.name} = {v}") + (" (default)" if v == o.default else ""))
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
        if c.fn.id in MODEL_OUTPUTS and _contains(c.fn.span, file, line, col):
            return f"**{c.fn.id}**: {MODEL_OUTPUTS[c.fn.id]}"
        if c.fn.id in ("k_discrimination", "pba") and _contains(c.fn.span, file, line, col):
            return {"k_discrimination": "**k_discrimination**: the number of clusters of width eps the K "
                                        "counterfactual outputs of one input fall into (HyFair)",
                    "pba": "**pba**: persistent-bias-aware fairness over delta-neighbourhoods of the data rows"}[c.fn.id]
    return None


def _statement_at(idx: Index, file: str, line: int, col: int) -> str | None:
    """An option's name (`bootstrap = 500`) or a backend's (`using milp`) in a property: what it means,
    and for an option its bounds and the default of the backend planned for the property."""
    from fairspec.planning import BACKENDS, OPTIONS, plan

    root = next((m for m in idx.modules if _same(m.file, file)), None)
    spec = _spec(idx)
    # a property's, or one of a policy's (planned only once applied: the option's own doc there)
    props = [(d, True) for d in (root.decls if root is not None else ()) if isinstance(d, ast.PropertyDecl)]
    props += [(p, False) for d in (root.decls if root is not None else ()) if isinstance(d, ast.PolicyDecl)
              for p in d.properties]
    for d, planned in props:
        for st in d.stmts:
            word = st.args[0] if st.kind in ("option", "using") and st.args else None
            if not isinstance(word, ast.Name) or not _contains(word.span, file, line, col):
                continue
            if st.kind == "using":
                b = BACKENDS.get(word.id)
                return f"**backend** `{word.id}`: {b.doc}" if b else None
            prop = next((p for p in (spec.properties if spec and planned else ()) if p.name == d.name.id), None)
            cap = plan(prop, spec).capability() if prop is not None else None
            o = next((o for o in (cap.options if cap else ()) if o.name == word.id), None) or OPTIONS.get(word.id)
            if o is None:
                return None
            out = f"**option** `{o.name}`: {o.doc}"
            if o.lo is not None or o.hi is not None:
                lo, hi = ("-inf" if o.lo is None else _number(o.lo)), ("inf" if o.hi is None else _number(o.hi))
                out += f"\n- {o.type} in {o.bounds[0]}{lo}, {hi}{o.bounds[1]}"
            elif o.choices:
                out += "\n- one of " + ", ".join(f"`{c}`" for c in o.choices)
            if cap is not None and o in cap.options:
                out += f"\n- default for this property's backend: `{o.default}`" if o.default is not None else ""
            elif cap is not None:
                out += "\n- not an option of the backend planned for this property"
            return out
    return None


def _word_at(idx: Index, file: str, line: int, col: int) -> str | None:
    """A model or data format (onnx, csv), an encoding (minmax) or a call's clause (groups, over): what it is."""
    root = next((m for m in idx.modules if _same(m.file, file)), None)
    for d in (root.decls if root is not None else ()):
        if isinstance(d, (ast.ModelDecl, ast.DataDecl)) and _contains(d.fmt.span, file, line, col):
            formats = MODEL_FORMATS if isinstance(d, ast.ModelDecl) else DATA_FORMATS
            doc = formats.get(d.fmt.id)
            return f"**{'model' if formats is MODEL_FORMATS else 'data'} format** `{d.fmt.id}`: {doc}" if doc else None
        for e in (d.lines if isinstance(d, ast.EncodeDecl) else ()):
            if _contains(e.kind.span, file, line, col):
                doc = ENCODINGS.get(e.kind.id)
                return f"**encoding** `{e.kind.id}`: {doc}" if doc else None
    for c in (n for n in _walk(root.decls if root is not None else ()) if isinstance(n, ast.Call)):
        for a in c.args:
            if a.kind == "clause" and a.name is not None and _contains(a.name.span, file, line, col):
                doc = CLAUSES.get(a.name.id)
                return f"**{a.name.id}** (a clause of `{c.fn.id}(...)`): {doc}" if doc else None
    return None


def _column_at(idx: Index, file: str, line: int, col: int) -> str | None:
    """A column named in a data declaration (columns = [...], label = ..., where = ..., missing = {...})
    or by a feature (`column "x"` in a features block `from` a data set): its values in the first rows
    of the file, as lint reads them (fairspec.runtime.data.column_names: at most 200 rows, cached while
    the file is unchanged; never the whole file), a Parquet column's type in the file's schema, and
    for a feature's column the type the feature reads it as."""
    root = next((m for m in idx.modules if _same(m.file, file)), None)
    for d in (root.decls if root is not None else ()):
        if isinstance(d, ast.FeaturesDecl) and _contains(d.span, file, line, col):
            f = next((f for f in d.features if f.column is not None and _contains(f.column.span, file, line, col)),
                     None)
            if f is not None and d.source is None:
                return _fromless_column(idx, d, f)
            text = _column_text(idx, d.source.id, f.column.value) if f is not None else None
            if text is None:
                return None
            return f"{text}\n- read by feature `{f.name.id}` of `{d.name.id}`{_read_as(_spec(idx), d.name.id, f)}"
        if not (isinstance(d, ast.DataDecl) and _contains(d.span, file, line, col)):
            continue
        for a in d.args:
            named = [n for n in _walk(a.value) if isinstance(n, ast.Name)
                     or (isinstance(n, ast.Str) and a.name is not None and a.name.id == "columns")]
            hit = next((n for n in named if _contains(n.span, file, line, col)), None)
            if hit is not None:
                return _column_text(idx, d.name.id, hit.id if isinstance(hit, ast.Name) else hit.value)
    return None


def _read_as(spec, fs_name: str, f: ast.FeatureDecl) -> str:
    fs = next((x for x in (spec.feature_sets if spec else ()) if x.name == fs_name), None)
    feat = fs.get(f.name.id) if fs is not None else None
    return f" as {code(_domain(feat.domain))}" if feat is not None else ""


def _fromless_column(idx: Index, d: ast.FeaturesDecl, f: ast.FeatureDecl) -> str | None:
    """A feature's `column "x"` in a features block without `from`: the rows are those of the data set a
    property passes (`data = D`); with one data set declared that is the one, else which is not guessed."""
    spec = _spec(idx)
    declared = sorted((s for ss in idx.symbols.values() for s in ss if s.kind == "data"),
                      key=lambda s: (s.span.file != d.span.file, s.span.file, s.span.line))
    names = list(dict.fromkeys(s.name for s in declared))  # (also one lint could not read)
    col, fs = f.column.value, d.name.id
    if len(names) == 1:
        text = _column_text(idx, names[0], col)
        if text is not None:
            return (f"{text}\n- read by feature `{f.name.id}` of `{fs}`{_read_as(spec, fs, f)} (no `from`: "
                    f"`{names[0]}` is the only data set declared)")
    head = f"**column** {code(col)}, read by feature `{f.name.id}` of `{fs}`"
    if not names:
        return f"{head}: `{fs}` has no `from` and no data set is declared"
    if len(names) == 1:
        from fairspec.runtime.data import DataError, column_names

        data = next((x for x in (spec.datasets if spec else ()) if x.name == names[0]), None)
        try:
            why = "has no such column" if data is not None and column_names(data) else "cannot be read"
        except (DataError, OSError, ValueError):
            why = "cannot be read"
        return f"{head}: `{fs}` has no `from`; `{names[0]}`, the only data set declared, {why}"
    shown = ", ".join(f"`{n}`" for n in names[:8]) + (", ..." if len(names) > 8 else "")
    return (f"{head}: `{fs}` has no `from`, so the data set is the one a property passes (`data = ...`); "
            f"{len(names)} are declared: {shown}")


def _column_text(idx: Index, data: str, name: str) -> str | None:
    from fairspec.runtime.data import DataError, column_names, is_number, parquet_types

    spec = _spec(idx)
    d = next((x for x in (spec.datasets if spec else ()) if x.name == data), None)
    if d is None:
        return None
    try:
        names, rows = column_names(d)
    except (DataError, OSError, ValueError):
        return None
    if name not in names:
        return None
    j = names.index(name)
    markers = set(d.markers(name))
    cells = [r[j].strip() if r[j] is not None else None for r in rows if len(r) > j]
    values = [c for c in cells if c is not None and c != "" and c not in markers]
    missing = len(cells) - len(values)
    head = f"**column** {code(name)} of `{data}` (column {j + 1} of {len(names)})"
    seen = f"in the first {len(cells)} rows" + (f" ({missing} missing)" if missing else "")
    dtype = parquet_types(d).get(name) if d.format == "parquet" else None
    typ = f"\n- type in the Parquet file: `{dtype}`" if dtype else ""
    nums = [float(v) for v in values if is_number(v) and math.isfinite(float(v))]
    if nums and all(is_number(v) for v in values):
        whole = all(x.is_integer() for x in nums)
        return (f"{head}\n- {'whole numbers' if whole else 'numbers'} {seen}: "
                f"{_number(min(nums))} .. {_number(max(nums))}{typ}")
    distinct = list(dict.fromkeys(values))
    shown = ", ".join(code(v) for v in distinct[:8]) + (", ..." if len(distinct) > 8 else "")
    return (f"{head}\n- text {seen}: {len(distinct)} distinct: {shown}" if values else f"{head}\n- no value {seen}") + typ


def _policy_property_at(idx: Index, file: str, line: int, col: int, importers: list[Index] = ()) -> str | None:
    """A property's name in a policy: the metrics it checks, and each place the spec (or an open spec
    importing the library, reading its text as it is) applies the policy, the property as planned there;
    applied nowhere, it says so."""
    from fairspec.planning import plan
    from fairspec.sema.properties import METRICS

    root = next((m for m in idx.modules if _same(m.file, file)), None)
    for pol in (d for d in (root.decls if root is not None else ()) if isinstance(d, ast.PolicyDecl)):
        prop = next((p for p in pol.properties if _contains(p.name.span, file, line, col)), None)
        if prop is None:
            continue
        name, out = prop.name.id, []
        calls = list(dict.fromkeys(n.fn.id for n in _walk(prop.stmts) if isinstance(n, ast.Call) and n.fn.id in METRICS))
        head = f"**property** `{name}` of policy `{pol.name.id}`" + (f": {', '.join(calls)}" if calls else "")
        here = _text_file(idx, file)
        for ix in [idx] + [i for i in importers if i is not idx and _text_file(i, file) == here]:
            spec = _spec(ix)
            prefixes = [(a.alias or a.policy).id for m in ix.modules for a in m.decls
                        if isinstance(a, ast.ApplyDecl) and a.policy.id == pol.name.id]
            where = "" if ix is idx else f" in {Path(ix.path).name}"
            for pre in prefixes:
                p = next((q for q in (spec.properties if spec else ()) if q.name == f"{pre}.{name}"), None)
                if p is not None:
                    out.append(f"- applied as `{p.name}`{where}: {p.kind.replace('_', ' ')}, planned backend: "
                               f"{plan(p, spec).describe()}")
        if not out:
            out.append(f"- checked where a spec applies `{pol.name.id}` (none open does): "
                       f"`apply {pol.name.id}(...) as NAME` makes it `NAME.{name}`")
        return "\n".join([head] + list(dict.fromkeys(out)))
    return None


def _text_file(idx: Index, file: str) -> str | None:
    return next((v for k, v in idx.texts.items() if _same(k, file)), None)


def _file_at(idx: Index, file: str, line: int, col: int) -> str | None:
    """A model's or a data set's file path: the file's format as fairspec reads it and its size; for a
    model what lint read from it (its input width, the input names the file records, the output and
    its classes: the spec's, from lint's peeks -- nothing is unpickled or loaded here), for a data set
    its columns from the first rows (cached while the file is unchanged); a missing file says so."""
    import os

    root = next((m for m in idx.modules if _same(m.file, file)), None)
    for d in (root.decls if root is not None else ()):
        if not isinstance(d, (ast.ModelDecl, ast.DataDecl)):
            continue
        arg = next((a for a in d.args if a.name is None and isinstance(a.value, ast.Str)
                    and _contains(a.value.span, file, line, col)), None)
        if arg is None:
            continue
        is_model, spec = isinstance(d, ast.ModelDecl), _spec(idx)
        decl = next((x for x in ((spec.models if is_model else spec.datasets) if spec else ())
                     if x.name == d.name.id), None)
        path = Path(decl.path) if decl is not None and getattr(decl, "path", None) else Path(root.file).parent / arg.value.value
        head = f"**{'model' if is_model else 'data'} file** {code(arg.value.value)}"
        try:
            size = os.stat(path).st_size
        except (OSError, ValueError):
            return f"{head}: no such file ({path})"
        if not path.is_file():
            return f"{head}: not a file ({path})"
        if is_model:
            return head + _model_file(idx, d, decl, path, size)
        return head + _data_file(decl, d.fmt.id, size)
    return None


def _size(n: int) -> str:
    return f"{n} bytes" if n < 10 << 10 else f"{n / (1 << 10):.0f} KiB" if n < 10 << 20 else f"{n / (1 << 20):.1f} MiB"


def _model_file(idx: Index, d, decl, path, size: int) -> str:
    from fairspec.models.base import ModelLoadError, normalize_format

    try:
        fmt = normalize_format(d.fmt.id, path)
    except ModelLoadError:
        return f": {_size(size)}, not a model format fairspec reads (`{d.fmt.id}`)"
    how = {"onnx": "an ONNX graph", "torch": "a PyTorch file", "xgboost": "an XGBoost model",
           "lightgbm": "a LightGBM model"}.get(fmt, "")
    if fmt == "sklearn":
        how = ("a scikit-learn skops file (read without unpickling)" if path.suffix.lower() == ".skops"
               else "a scikit-learn pickle (loaded only under `trust pickle`; lint reads it inertly)")
    lines = [f": {how or fmt}, {_size(size)}"]
    width = getattr(idx.result, "model_widths", {}).get(d.name.id)
    if width is not None:
        from fairspec.models.peek import peek_input_names

        try:
            names = peek_input_names(fmt, path)
        except Exception:  # noqa: BLE001 - a hover never fails: the names are lint's to report
            names = None
        shown = f": {', '.join(names[:8])}{', ...' if len(names) > 8 else ''}" if names else ""
        lines.append(f"- inputs: {width} columns{shown}")
    if decl is not None:
        out = decl.output if decl.output is not None else "the first output"
        lines.append(f"- output: {out}" + (f", a {decl.score_kind}" if decl.score_kind else ""))
        if decl.task is not None:
            from fairspec.sema.outputs import describe_kind

            kind = describe_kind(decl)
            lines.append(f"- {kind}" + (": classes " + ", ".join(str(c) for c in decl.classes) if decl.classes else ""))
    return "\n".join(lines)


def _data_file(decl, fmt: str, size: int) -> str:
    from fairspec.runtime.data import DataError, column_names

    line = f": {DATA_FORMATS.get(fmt, fmt).split(':')[0]}, {_size(size)}"
    if decl is None:
        return line
    try:
        names, rows = column_names(decl)
    except (DataError, OSError, ValueError) as e:
        return f"{line}\n- cannot be read: {e}"
    shown = ", ".join(f"`{n}`" for n in names[:12]) + (", ..." if len(names) > 12 else "")
    return f"{line}\n- {len(names)} columns: {shown} (its first rows only are read here)"


def _number(v) -> str:
    """A number a user may copy into a spec (a fitted scaler's mean, a domain's bound): the shortest
    text that reads back exactly (``{:g}`` printed a fitted mean 38.58164675532078 as 38.5816)."""
    from fairspec.syntax.literals import number

    return number(v)


def signature_at(idx: Index | None, text: str, line: int, col: int) -> tuple[str, str, list[str], int] | None:
    """Inside `metric(` or `apply policy(`: (label, documentation, parameter labels, active index)."""
    from fairspec.sema.properties import METRICS

    lines = split_lines(text)
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
