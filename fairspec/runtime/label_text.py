"""What a label reads from a data file, judged over the rows check reads (lint samples the first 200).

Lint says FS432 (a label comparing a column with text it holds only in another case: ``y == "yes"``
over Yes / No) and FS433 (a label reading a text column's empty cells as the text "", a missing label
counted as negative) from the rows it samples. A file whose first such row lies past them gave a
silently wrong group metric at check. Check says the same codes once it has read the rows a metric
uses: FS432 is an error (the run stops, as lint's does), FS433 a warning (acknowledged as lint's is,
with ``# fairspec: ignore[FS433]`` at the label, or ``missing = {y: [""]}`` drops those rows).
A logged decision column's empty cells under ``positive = v`` are the warning FS435, said the same way.
The walks over a data expression (the columns it reads, the text it compares them with) are shared
with lint (fairspec.sema.check_data)."""

from __future__ import annotations

import dataclasses

from fairspec import ir
from fairspec.syntax import literals
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly


def columns_read(x, depth: int = 0):
    """The columns a data expression reads."""
    if depth > 200 or not dataclasses.is_dataclass(x) or isinstance(x, type):
        return
    if isinstance(x, ir.ColumnRef):
        yield x.column
    for f in dataclasses.fields(x):
        v = getattr(x, f.name)
        for c in (v if isinstance(v, tuple) else (v,)):
            yield from columns_read(c, depth + 1)


def compared_text(x, depth: int = 0):
    """(column, text, others) for each ``column == "text"`` / ``!=`` / ``in {...}`` of a data expression;
    ``others``: the other texts of the same ``in {...}`` (``y in {"yes", "Yes"}`` writes both cases)."""
    if depth > 200 or x is None:
        return
    if isinstance(x, ir.Cmp) and x.op in ("==", "!="):
        for a, b in ((x.left, x.right), (x.right, x.left)):
            if isinstance(a, ir.ColumnRef) and isinstance(b, ir.Const) and isinstance(b.value, str):
                yield a.column, b.value, ()
    elif isinstance(x, ir.InSet) and isinstance(x.item, ir.ColumnRef):
        texts = tuple(v for v in x.values if isinstance(v, str))
        for v in texts:
            yield x.item.column, v, texts
    for f in dataclasses.fields(x) if dataclasses.is_dataclass(x) else ():
        v = getattr(x, f.name)
        for c in (v if isinstance(v, tuple) else (v,)):
            if dataclasses.is_dataclass(c) and not isinstance(c, type):
                yield from compared_text(c, depth + 1)


def other_case(text: str, held, others=()) -> list[str]:
    """The values of ``held`` that are ``text`` in another case, when ``text`` itself is never held and no
    other text of the same ``in {...}`` is that value (the spec wrote both cases); else []."""
    if text in held:
        return []
    key = text.strip().lower()
    return sorted(h for h in held if h.strip().lower() == key and h not in others)


def held_text(t, column: str, index) -> set[str] | None:
    """The distinct values of a text column over the rows ``index`` of table ``t``, or None for a column
    of numbers (or a Parquet boolean one, whose text True / False lint knows from the schema)."""
    import numpy as np

    if column not in t.columns or column in t.booleans or t.numeric(column) is not None:
        return None
    codes, cats = t.coded(column)
    used = np.unique(codes[index]) if index is not None else np.unique(codes)
    return {str(cats[k]) for k in used}


def empty_cells(t, column: str, index) -> int:
    """How many of the rows ``index`` hold an empty cell in a text column of ``t`` (0 for numbers)."""
    import numpy as np

    if column not in t.columns or t.numeric(column) is not None:
        return 0
    codes, cats = t.coded(column)
    hit = np.array([str(c) == "" for c in cats], dtype=bool)
    if not hit.any():
        return 0
    return int(hit[codes[index] if index is not None else codes].sum())


def case_error(d: ir.Data, what: str, x, held: dict, rows: int, span):
    """FS432 (a DiagnosticError) when ``x`` (the label or the where) compares a column with text that
    ``held`` (column -> the values of the ``rows`` rows read) holds only in another case; else None."""
    for col, text, others in compared_text(x):
        same = other_case(text, held.get(col, ()), others)
        if same:
            from fairspec.diagnostics import DiagnosticError, Sink

            return DiagnosticError(Sink().add(
                "FS432", f"column '{col}' of '{d.name}' holds {literals.string(same[0])} in the {rows} rows "
                         f"check read from {d.path}, never {literals.string(text)}: text is compared as "
                         f"written, so the {what} never meets it", span or d.span,
                hint=f"write {literals.string(same[0])}"))
    return None


class WhereText:
    """The text the where's compared columns hold over every row read, before the where filters them
    (several batches: summed); ``check`` raises FS432 as lint does of its first rows."""

    def __init__(self, d: ir.Data):
        self.data, self.held, self.rows = d, {}, 0
        self.columns = tuple(dict.fromkeys(c for c, _, _ in compared_text(d.where))) if d.where is not None else ()

    def add(self, t) -> None:
        self.rows += t.n_rows
        for col in self.columns:
            h = held_text(t, col, None)
            if h is not None:
                self.held.setdefault(col, set()).update(h)

    def check(self) -> None:
        if self.columns:
            err = case_error(self.data, "where", self.data.where, self.held, self.rows, self.data.where_span)
            if err is not None:
                raise err


@dataclasses.dataclass
class LabelCells:
    """What the rows of one data set read so far show about its label and its logged decision columns
    (several batches: summed). ``models``: the spec's logged-decision models over the data set."""

    data: ir.Data
    models: tuple = ()
    held: dict = dataclasses.field(default_factory=dict)      # column -> distinct text values
    empty: dict = dataclasses.field(default_factory=dict)     # column -> rows with an empty cell (label)
    empty_decisions: dict = dataclasses.field(default_factory=dict)   # model name -> rows with an empty cell
    empty_target: int = 0                                     # rows with an empty cell in a text target
    rows: int = 0

    @classmethod
    def of(cls, spec: ir.Spec, d: ir.Data) -> "LabelCells":
        models = tuple(m for m in spec.models if m.format == "predictions" and m.data == d.name
                       and m.decision_column is not None and m.positive is not None
                       and f"FS435:{m.decision_column}" not in d.lint_said)
        return cls(d, models)

    def add(self, t, index) -> None:
        d = self.data
        self.rows += len(index) if index is not None else t.n_rows
        if d.label is not None:
            for col, _, _ in compared_text(d.label):
                h = held_text(t, col, index)
                if h is not None:
                    self.held.setdefault(col, set()).update(h)
            for col in dict.fromkeys(columns_read(d.label)) if "FS433" not in d.lint_said else ():
                if k := empty_cells(t, col, index):
                    self.empty[col] = self.empty.get(col, 0) + k
        if d.target is not None and "FS433:target" not in d.lint_said and (k := empty_cells(t, d.target, index)):
            self.empty_target += k
        for m in self.models:
            if k := empty_cells(t, m.decision_column, index):
                self.empty_decisions[m.name] = self.empty_decisions.get(m.name, 0) + k

    def case_error(self):
        """FS432 (a DiagnosticError) when the label compares a column with text the rows read hold only in
        another case; None otherwise."""
        return case_error(self.data, "label", self.data.label, self.held, self.rows, self.data.label_span)

    def warnings(self) -> list[tuple[str, object, str, str]]:
        """(code, span, message, hint) of FS433 (the label or the target read empty cells of a text column:
        at the label / the target) and FS435 (a logged decision column read with ``positive = v`` has empty
        cells: at the model), for rows lint did not read; the hint is lint's."""
        d, out = self.data, []
        if self.empty:
            col = sorted(self.empty)[0]
            out.append(("FS433", d.label_span or d.span, (
                f"column '{col}' of '{d.name}' has an empty cell in {self.empty[col]} of the {self.rows} rows check "
                f"read from {d.path}, and the label reads it as the text \"\" (false for {col} == \"...\"), not as "
                f"a missing value"),
                f"list it as missing to drop those rows: missing = {{{literals.name_or_string(col)}: [\"\"]}}; or, "
                f"if an empty cell is a negative label, say so with # fairspec: ignore[FS433]"))
        if self.empty_target:
            col = d.target
            out.append(("FS433", d.target_span or d.span, (
                f"column '{col}' of '{d.name}' has an empty cell in {self.empty_target} of the {self.rows} rows "
                f"check read from {d.path}, and the target reads it as the text \"\", a class no model has: a row "
                f"without its true class counts as not of class c"),
                f"list it as missing to drop those rows: missing = {{{literals.name_or_string(col)}: [\"\"]}}"))
        for m in self.models:
            if n := self.empty_decisions.get(m.name):
                col = m.decision_column
                out.append(("FS435", m.span, (
                    f"the decision column '{col}' of '{d.name}' has an empty cell in {n} of the {self.rows} rows "
                    f"check read from {d.path}, and positive = {literals.string(m.positive)} counts each as a "
                    f"negative decision of model '{m.name}', not as a missing one"),
                    f"list it as missing to drop those rows: missing = {{{literals.name_or_string(col)}: [\"\"]}} "
                    f"in the data declaration; or, if an empty cell is a negative decision, say so with "
                    f"# fairspec: ignore[FS435]"))
        return out


def numbers_read(x, depth: int = 0):
    """(column, constant or None) for each column a data expression reads as a number: compared with a
    number (``s > 0.5``), tested against a set of numbers (``y in {1, 2}``: the first) or inside arithmetic
    (``a + b > 3``)."""
    if depth > 200 or not dataclasses.is_dataclass(x) or isinstance(x, type):
        return
    if isinstance(x, ir.Cmp):
        for a, b in ((x.left, x.right), (x.right, x.left)):
            number = (isinstance(b, ir.Const) and isinstance(b.value, (int, float)) and not isinstance(b.value, bool)) \
                or isinstance(b, (ir.ArithE, ir.AbsE))
            if number and isinstance(a, ir.ColumnRef):
                yield a.column, b.value if isinstance(b, ir.Const) else None
    if isinstance(x, ir.InSet) and isinstance(x.item, ir.ColumnRef):      # y in {1, 2}: a number set
        nums = [v for v in x.values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if nums:
            yield x.item.column, nums[0]
    if isinstance(x, (ir.ArithE, ir.AbsE)):
        for c in ((x.left, x.right) if isinstance(x, ir.ArithE) else (x.arg,)):
            if isinstance(c, ir.ColumnRef):
                yield c.column, None
    for f in dataclasses.fields(x):
        v = getattr(x, f.name)
        for c in (v if isinstance(v, tuple) else (v,)):
            yield from numbers_read(c, depth + 1)


def text_as_number(d: ir.Data, what: str, x, t):
    """A DataError when ``x`` (the label or the where) reads as a number a column of ``t`` that holds
    text: lint typed the column from its first rows (numbers only), and check read a value that is no
    number past them ("n/a"). Compared as it is, it was an internal error (text > 0.5) or false on every
    row (text == 1); None otherwise."""
    from fairspec.runtime.data import DataError, is_number

    for col, v in dict.fromkeys(numbers_read(x)):
        if col not in t.columns or col in t.booleans or t.numeric(col) is not None:
            continue
        codes, cats = t.coded(col)
        import numpy as np

        bad = [str(cats[k]) for k in np.unique(codes) if not is_number(str(cats[k]))][:3]
        shown = ", ".join(literals.string(b) for b in bad)
        against = f"compares it with the number {_spec_number(v)}" if v is not None else "computes with it"
        return DataError(f"data file {d.path} column {col!r} holds text ({shown}) where the {what} {against}: list "
                         f"such a value as missing, missing = {{{literals.name_or_string(col)}: "
                         f"[{literals.string(bad[0]) if bad else '...'}]}}, or correct the file", d.path)
    return None


def nan_as_number(d: ir.Data, what: str, x, t, index=None):
    """A DataError when ``x`` (the label or the where) reads as a number a column of ``t`` holding NaN on one
    of the rows ``index`` (all when None): a CSV cell "nan" / "NaN", a Parquet NaN. Compared, it made the row
    a negative label (NaN == 1 is false; an empty cell is a missing value and drops the row), where pandas
    reads each as the same missing value; None otherwise."""
    for col, v in dict.fromkeys(numbers_read(x)):
        if col in t.columns and col not in t.booleans and (err := nan_cells(t, col, index, d.path, (
                f"the {what} reads, where the {what} " +
                (f"compares it with the number {_spec_number(v)}" if v is not None else "computes with it")))):
            return err
    return None


def nan_cells(t, col: str, index, path, where: str):
    """The DataError for a number column ``col`` of ``t`` holding NaN on one of the rows ``index`` (all when
    None): ``where`` says what reads it ("the label reads, where ..."); None when it holds none (or is text)."""
    import numpy as np

    from fairspec.runtime.data import DataError

    num = t.numeric(col)
    if num is None:
        return None
    nan = np.isnan(num if index is None else num[index])
    if not nan.any():
        return None
    c = t.columns[col]
    shown, texts = "NaN", ["nan"]                 # a number column's NaN: "nan" lists it as missing
    if not isinstance(c, np.ndarray):   # a CSV column: the cells' own text, each listed as written
        texts = sorted({str(s) for s in c.categories if _is_nan_text(str(s))}) or texts
        shown = "NaN (" + ", ".join(literals.string(s) for s in texts[:3]) + ")"
    return DataError(f"data file {path} column {col!r} holds {shown} in {int(nan.sum())} of the rows {where}: a "
                     f"NaN is a missing value (pandas reads it as one), not a value to compare or count, so list "
                     f"it as missing, missing = {{{literals.name_or_string(col)}: "
                     f"[{', '.join(literals.string(s) for s in texts[:3])}]}}, or correct the file", path)


def _is_nan_text(s: str) -> bool:
    try:
        return float(s) != float(s)
    except ValueError:
        return False
