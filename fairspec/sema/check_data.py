"""Semantic analysis, the data declarations (part of fairspec.sema.check's Checker): a data file's
format and options, its header and sampled rows (lint only samples), and which columns a spec reads."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from fairspec import ir
from fairspec.sema.decl import Decl
from fairspec.runtime.label_text import columns_read, compared_text, other_case
from fairspec.sema.exprs import Scope, did_you_mean
from fairspec.syntax import ast, literals

PARQUET_HINT = "paths are relative to the spec file; check that the file exists and is a Parquet file with rows"


class PerColumn(Mapping):
    """{column: value} over a data set's columns, each value computed (``compute(index, name)``) when first
    asked for: lint of a file of 60,000 columns, a handful of which the spec reads, types a handful."""

    def __init__(self, names, compute, skip=()):
        # (a name given twice: its last column, as a dict had it)
        self._index = {n: j for j, n in enumerate(names) if n not in skip}
        self._compute = compute
        self._done: dict = {}

    def __getitem__(self, name):
        if name not in self._done:
            self._done[name] = self._compute(self._index[name], name)  # KeyError: no such column
        return self._done[name]

    def __contains__(self, name) -> bool:
        return name in self._index

    def __iter__(self):
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)


def _complete_rows(rows: list, names: list, data: ir.Data, types) -> list:
    """The sampled rows (their cells stripped) that miss no value in any column: no Parquet null, no missing
    marker, no empty cell in a number column (only the columns with an empty cell are typed)."""
    marks = set(data.missing)
    own = [(j, set(data.markers(n))) for j, n in enumerate(names) if n in dict(data.missing_by_column)]
    out = []
    for r in rows:
        if len(r) < len(names):
            continue
        cells = set(r)
        if None in cells or cells & marks or any(r[j] in m for j, m in own):
            continue
        if "" in cells and any(c == "" and types[n] == "num" for c, n in zip(r, names)):
            continue
        out.append(r)
    return out


class DataChecks:
    """The Checker's data part: `data NAME = csv(...) | parquet(...)` declarations."""

    def _data(self, d: Decl) -> None:
        node: ast.DataDecl = d.node
        fmt = node.fmt.id
        if fmt not in ("csv", "parquet"):
            self.fail("FS412", f"unknown data format '{fmt}'", node.fmt.span, hint="data formats are csv and parquet")
        pos = [a for a in node.args if a.kind == "pos"]
        if len(pos) != 1 or not isinstance(pos[0].value, ast.Str):
            self.fail("FS305", f"{fmt}(...) takes the file path as its one positional argument", node.span)
        path_arg = pos[0].value
        kw = {}
        for a in node.args:
            if a.kind == "pos":
                continue
            if a.kind == "trust":
                self.fail("FS208", "'trust' applies to model files, not data", a.span)
            kw[a.name.id] = a
        allowed = {"sep", "header", "columns", "missing", "where", "label", "categories", "target"}
        if fmt == "parquet":  # the file has typed columns and their names
            allowed -= {"sep", "header"}
        for k, a in kw.items():
            if k not in allowed:
                self.fail("FS208", f"unknown {fmt} option '{k}'", a.name.span,
                          hint=did_you_mean(k, allowed) or f"options are {', '.join(sorted(allowed))}")
        sep = self._const(kw.get("sep"), str, ",")
        if len(sep) != 1 or sep in '"\r\n':
            self.fail("FS307", f"sep must be one character other than a quote or a line break, got {sep!r}",
                      kw["sep"].value.span)
        header = self._const(kw.get("header"), bool, None)
        columns = None
        if "columns" in kw:
            v = kw["columns"].value
            if not isinstance(v, ast.ListLit):
                self.fail("FS301", "columns = [...] lists the column names", v.span)
            columns = tuple(x.id if isinstance(x, ast.Name) else x.value for x in v.items
                            if isinstance(x, (ast.Name, ast.Str)))
            if len(columns) != len(v.items):
                self.fail("FS301", "column names are names or strings", v.span)
            dup = {c for c in columns if columns.count(c) > 1}
            if dup:
                self.fail("FS202", f"column {sorted(dup)[0]!r} is listed twice", v.span)
        if header is None:
            header = columns is None
        missing, by_column = (), ()
        if "missing" in kw:
            v = kw["missing"].value
            if isinstance(v, ast.SetLit) and v.items and all(isinstance(x, ast.MapItem) for x in v.items):
                by_column = tuple(self._missing_markers(x) for x in v.items)  # {column: ["?", ""], ...}
            else:
                items = v.items if isinstance(v, ast.ListLit) else (v,)
                if not all(isinstance(x, ast.Str) for x in items):
                    self.fail("FS301", "missing = [\"?\", ...] lists strings that mark a missing value, or "
                                       "missing = {column: [\"?\"], ...} per column", v.span)
                missing = tuple(x.value for x in items)
        categories = "names"
        if "categories" in kw:
            v = kw["categories"].value
            if not isinstance(v, ast.Name) or v.id not in ("names", "codes"):
                self.fail("FS307", "categories = names | codes (codes: the file holds each category's index)", v.span)
            categories = v.id
        path = self.substitutes.get(("data", node.name.id)) or self.user_path(path_arg, d.base, "data file")
        if self.substitutes.get(("missing", node.name.id)):
            # the Python API's marker of a data frame's null cells (NaN, None, pd.NA) in a text column,
            # which an empty cell would not mark (it is missing in a number column only)
            missing = missing + (self.substitutes[("missing", node.name.id)],)
        if fmt == "parquet":
            header = True
        data = ir.Data(node.name.id, fmt, str(path), sep, header, columns, missing, categories, span=node.span,
                       missing_by_column=by_column)
        from fairspec.runtime.data import (DataError, column_names, header_renames, is_number, other_separator,
                                           parquet_booleans, parquet_empty, parquet_nested,
                                           ragged_row)

        try:
            names, sample = column_names(data)
            if "sep" not in kw and (other := other_separator(data, names, sample)) is not None:
                self.fail("FS404", f"data file {path_arg.value} reads as one column, {names[0]!r}: its header and "
                                   f"rows are separated by {other!r}, not by commas", path_arg.span,
                          hint=f"write sep = {literals.string(other)} in csv(...) (or sep = \",\" if the file is one "
                               "column)")
            renames = header_renames(data)
            if (ragged := ragged_row(data, len(names))) is not None:  # check refuses the file with it
                raise ragged
        except DataError as e:  # (FS404's own hint says "UTF-8 CSV": a Parquet file is told its own)
            self.fail("FS404", str(e), path_arg.span, hint=PARQUET_HINT if fmt == "parquet" else None)
        if renames:  # FS430 once the columns the spec reads are known (_header_renames)
            # the file read: a data frame the Python API wrote is then named as the frame given, not the declared path
            shown = str(path) if ("data", node.name.id) in self.substitutes else path_arg.value
            self.header_renames[node.name.id] = (renames, path_arg, shown)
        nested = parquet_nested(data)
        if nested:  # FS404 once the columns the spec reads are known (_nested_columns); never sampled (FS410)
            self.nested_columns[node.name.id] = (nested, path_arg)
        empty = parquet_empty(data)
        if fmt == "csv" and 0 < len(sample) < 200:  # lint read the whole file: a column of missing markers only
            empty = ({n: len(sample) for j, n in enumerate(names) if data.markers(n) and all(
                j < len(r) and r[j] is not None and r[j].strip() in data.markers(n) for r in sample)}, len(sample))
        if empty[0]:  # FS404 once the columns the spec reads are known (_nested_columns): check has no rows
            self.empty_columns[node.name.id] = (*empty, path_arg)
        self.data_booleans[node.name.id] = parquet_booleans(data)  # from the schema: sampled or not (where)
        for k, (col, _) in enumerate(by_column):
            if col not in names:  # at the key; a key is a name, so only a column that is a name can replace it
                self.fail("FS207", f"data set '{node.name.id}' has no column '{col}' (in missing = {{...}})",
                          kw["missing"].value.items[k].key.span,
                          hint=did_you_mean(col, [n for n in names if literals.name_or_string(n) == n]))
        # each column typed from the sampled rows when first asked for (a file of 60,000 columns the spec
        # reads a handful of is typed a handful of times): "num" or "str", and the values it holds
        rows = [[None if c is None else c.strip() for c in r] for r in sample]  # None: a Parquet null

        def typed(j: int, n: str) -> tuple[str, set]:
            marks = data.markers(n)
            # an empty cell is a missing value in a number column (it is no category of a text column
            # either, but there it is kept as written)
            vals = [r[j] for r in rows if j < len(r) and r[j] is not None and r[j] not in marks]
            filled = [v for v in vals if v != ""]
            kind = "num" if filled and all(is_number(v) for v in filled) else "str"
            return kind, set(filled if kind == "num" else vals)

        typings = PerColumn(names, typed)
        types = PerColumn(names, lambda j, n: typings[n][0])
        values = PerColumn(names, lambda j, n: typings[n][1])
        self.data_values[node.name.id] = values
        self.data_rows[node.name.id] = len(sample)
        self.data_columns[node.name.id] = types
        complete = _complete_rows(rows, names, data, types)
        shown = str(path) if ("data", node.name.id) in self.substitutes else path_arg.value  # the file read
        self.data_samples[node.name.id] = None if "where" in kw else (
            shown, PerColumn(names, lambda j, n: [r[j] for r in complete], skip=nested), categories)
        scope = Scope("data", columns=types, booleans=frozenset(self.data_booleans[node.name.id]), texts=values)
        where = label = None
        said: tuple[str, ...] = ()
        if "where" in kw:
            where = self.lower.expect_bool(kw["where"].value, scope)
            self._text_held(node.name.id, "where", where, kw["where"].value.span, values, len(sample))
        if "label" in kw:
            x, t = self.lower.lower(kw["label"].value, scope)
            if t != "bool":
                v = kw["label"].value
                boolean = isinstance(v, ast.Name) and v.id in self.data_booleans[node.name.id]
                # a CSV of a bool column (a pandas frame given to the Python API): its text True / False
                written = isinstance(v, ast.Name) and t == "str" and v.id in values and values[v.id] == {"True", "False"}
                self.fail("FS306", f"the label must be a condition, found a {'number' if t == 'num' else 'string'}",
                          v.span, hint=(f"column '{v.id}' is a Parquet boolean column, read as the text \"True\" / "
                                        f"\"False\": write label = {v.id} == \"True\"") if boolean else
                          (f"column '{v.id}' holds the text \"True\" / \"False\" (a column of booleans, as a CSV "
                           f"file writes them): write label = {v.id} == \"True\"") if written else None)
            label = x
            self._text_held(node.name.id, "label", label, kw["label"].value.span, values, len(sample))
            if self._empty_labels(node.name.id, label, kw["label"].value.span, types, values):
                said += ("FS433",)
            if sample and len(sample) < 200 and not nested:      # column_names read the whole file
                self._constant_label(node.name.id, label, kw["label"].value.span, types, values,
                                     sum(1 for r in sample if r and any(c is None or c.strip() for c in r)), shown)
        target = None
        if "target" in kw:      # issue 25: the true class (multiclass) or true value (regression)
            v = kw["target"].value
            if not isinstance(v, (ast.Name, ast.Str)):
                self.fail("FS301", "target = COLUMN: the column holding the true class or the true value", v.span)
            target = v.id if isinstance(v, ast.Name) else v.value
            if target not in types:
                self.fail("FS207", f"data set '{node.name.id}' has no column '{target}'", v.span,
                          hint=did_you_mean(target, types, literals.string if isinstance(v, ast.Str)
                                            else literals.name_or_string))
            if types.get(target) == "str" and "" in values.get(target, ()):
                said += ("FS433:target",)
                self.sink.add("FS433", f"column '{target}' of '{node.name.id}' has empty cells in the rows lint read, "
                                       f"and the target reads them as the text \"\", a class no model has: a row "
                                       f"without its true class counts as not of class c", v.span,
                              hint=f"list it as missing to drop those rows: missing = "
                                   f"{{{literals.name_or_string(target)}: [\"\"]}}")
        self.datasets[node.name.id] = dataclasses.replace(
            data, where=where, label=label, target=target, lint_said=said,
            label_span=kw["label"].value.span if "label" in kw else None,
            target_span=kw["target"].value.span if "target" in kw else None,
            where_span=kw["where"].value.span if "where" in kw else None)

    def _text_held(self, data: str, what: str, x, span, values: dict, rows: int) -> None:
        """FS432: the label or where compares a column with text it never holds as written, where it holds
        the same text in another case: a Parquet boolean column is "True" / "False" (certain, from the
        schema), a CSV column what its sampled rows show ("yes" where the file says "Yes"). Text is
        compared as written, so such a label is false on every row: each group's base rate 0. From a
        sample (the first rows of a larger file) the message says so; an ``in {...}`` writing both cases
        (y in {"yes", "Yes"}) is no mistake; check says the same of rows lint did not read
        (fairspec.runtime.label_text)."""
        booleans = self.data_booleans.get(data, set())
        for col, text, others in compared_text(x):
            held = {"True", "False"} if col in booleans else values.get(col, set())
            if text in held or not held:
                continue
            same = other_case(text, held, others)
            if col in booleans:
                if not other_case(text, held, ()) or same:    # an in {...} with True / False as well: no error
                    self.fail("FS432", f"column '{col}' of '{data}' is a Parquet boolean column, read as the text "
                                       f"\"True\" / \"False\", so the {what} never meets {literals.string(text)}",
                              span, hint=f"write {literals.name_or_string(col)} == \"True\" (or \"False\")")
                continue
            if same:
                seen = "the rows lint read" if rows < 200 else f"the first {rows} rows lint read"
                self.fail("FS432", f"column '{col}' of '{data}' holds {' and '.join(map(literals.string, same))} in "
                                   f"{seen}, never {literals.string(text)}: text is compared as written, so the "
                                   f"{what} never meets it", span,
                          hint=f"write {literals.string(same[0])}" if len(same) == 1 else
                          f"write the one you mean of {', '.join(map(literals.string, same))} (the file holds each)")

    def _empty_labels(self, data: str, label, span, types: dict, values: dict) -> bool:
        """FS433 (warning): the label reads a text column with empty cells in the rows lint read that no
        missing marker names. Such a cell is the text "", so ``y == "True"`` is false there: a missing
        label counted as a negative one, where a Parquet null (or the API's frame null) drops the row."""
        cols = sorted({c for c in columns_read(label) if types.get(c) == "str" and "" in values.get(c, ())})
        if not cols:
            return False
        c = cols[0]
        self.sink.add("FS433", f"column '{c}' of '{data}' has empty cells in the rows lint read, and the label "
                               f"reads them as the text \"\" (false for {c} == \"...\"), not as a missing "
                               f"value", span,
                      hint=f"list it as missing to drop those rows: missing = {{{literals.name_or_string(c)}: "
                           f"[\"\"]}}; or, if an empty cell is a negative label, say so with "
                           f"# fairspec: ignore[FS433]")
        return True

    def _constant_label(self, data: str, label, span, types: dict, values: dict, rows: int, path: str) -> None:
        """FS434 (warning): lint read the whole file (fewer rows than it samples) and the label, one
        comparison of a column with a constant, has the same value on every row: ``y == "maybe"`` over a
        column that never holds "maybe" is false everywhere, so every rate of the label is 0 or 0/0 (check
        reports such a group metric unknown). Only where the whole column is seen: never on rare positives."""
        booleans = self.data_booleans.get(data, set())
        col, held = None, ()
        if isinstance(label, ir.Cmp):
            for a, b, op in ((label.left, label.right, label.op), (label.right, label.left, _FLIP.get(label.op))):
                if isinstance(a, ir.ColumnRef) and isinstance(b, ir.Const) and op is not None:
                    col, test = a.column, _const_test(op, b.value, types.get(a.column))
                    break
        elif isinstance(label, ir.InSet) and isinstance(label.item, ir.ColumnRef) and \
                types.get(label.item.column) == "str" and all(isinstance(v, str) for v in label.values):
            col, allowed = label.item.column, set(label.values)
            test = (lambda v: v not in allowed) if label.negated else (lambda v: v in allowed)
        if col is None or test is None or col in booleans:
            return
        held = sorted(values.get(col, ()))
        outcomes = {test(v) for v in held}
        if len(outcomes) != 1:
            return
        which = "true" if outcomes.pop() else "false"
        shown = ", ".join(literals.string(v) for v in held[:6]) + (", ..." if len(held) > 6 else "")
        self.constant_labels[data] = (     # warned when a group metric reads the label (check._constant_labels)
            f"the label of '{data}' is {which} on every one of the {rows} rows of {path} (column '{col}' holds only "
            f"{shown}): each rate of the label is 0 or 0/0, and check reports no group metric reading it as "
            f"holding (unknown)", span, "compare the column with a value it holds, as the file writes it")

    def _missing_markers(self, item) -> tuple[str, tuple[str, ...]]:
        """One ``column: ["?", ...]`` of ``missing = {...}``."""
        k, v = item.key, item.value
        if not isinstance(k, (ast.Name, ast.Str)):
            self.fail("FS301", "missing = {column: [\"?\"], ...}: the keys are column names", item.span)
        vals = v.items if isinstance(v, ast.ListLit) else (v,)
        if not all(isinstance(x, ast.Str) for x in vals):
            self.fail("FS301", "each column's markers are strings, as in missing = {age: [\"?\", \"\"]}", v.span)
        return (k.id if isinstance(k, ast.Name) else k.value, tuple(x.value for x in vals))

    def _const(self, arg, typ, default):
        if arg is None:
            return default
        v = arg.value
        if typ is str and isinstance(v, ast.Str):
            return v.value
        if typ is bool and isinstance(v, ast.BoolLit):
            return v.value
        if typ in (int, float) and isinstance(v, ast.Num) and (typ is float or v.is_int):
            return typ(v.value)
        word = {str: "a string", bool: "true or false", int: "a whole number", float: "a number"}[typ]
        self.fail("FS301", f"'{arg.name.id}' must be {word}", v.span)


_FLIP = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _const_test(op: str, value, typ: str | None):
    """The test ``cell OP value`` on a cell's text as the runtime compares it (text as written, a number
    column by value), or None when this column and constant are not compared so."""
    import operator

    fn = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
          ">=": operator.ge}.get(op)
    if fn is None or isinstance(value, bool):
        return None
    if typ == "str" and isinstance(value, str) and op in ("==", "!="):
        return lambda v: fn(v, value)
    if typ == "num" and isinstance(value, (int, float)):
        return lambda v: fn(float(v), float(value))
    return None


def used_columns(spec: ir.Spec) -> tuple:
    """The data sets with ``used`` set: the columns the spec reads from each (the features' columns,
    and every column a label, where, weight, logged-decision or other expression names). A row is
    dropped for a missing value only in these (issue 23: an empty cell in a column no property
    reads keeps the row). Over-approximated: a column name read anywhere counts for every data set
    that has it."""
    named: set[str] = set()

    def walk(n, depth=0):
        if depth > 200:
            return
        if isinstance(n, (tuple, list)):
            for x in n:
                walk(x, depth + 1)
            return
        if not dataclasses.is_dataclass(n) or isinstance(n, type):
            return
        if isinstance(n, ir.ColumnRef):
            named.add(n.column)
        for f in dataclasses.fields(n):
            v = getattr(n, f.name)
            if isinstance(v, str) and (f.name == "column" or f.name.endswith("_column") or f.name == "weight"):
                named.add(v)
            elif isinstance(v, (tuple, list)) or dataclasses.is_dataclass(v):
                walk(v, depth + 1)

    walk((spec.models, spec.feature_sets, spec.groups, spec.distributions, spec.properties,
          tuple((d.where, d.label, ir.ColumnRef(d.target) if d.target else None) for d in spec.datasets)))
    out = []
    for d in spec.datasets:
        cols = {f.column for fs in spec.feature_sets if fs.data == d.name for f in fs.features}
        from fairspec.runtime.data import DataError, column_names

        try:
            names = column_names(d)[0]
        except DataError:
            out.append(d)
            continue
        cols |= named & set(names)
        out.append(dataclasses.replace(d, used=tuple(n for n in names if n in cols)))
    return tuple(out)
