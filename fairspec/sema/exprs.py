"""Lowering and type-checking expressions from the AST to the IR.

Three scopes: data expressions (``where``/``label`` over raw CSV columns),
feature expressions (groups, rules, PBA point selection: names are features),
and pair expressions (``x.age``, ``x'.sex`` inside individual-fairness
properties).  Categories are lowered to their index in the feature's
declared list, so run-time evaluation is purely numeric.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fairspec import ir
from fairspec.diagnostics import Sink
from fairspec.syntax import ast, literals


def closest(name: str, options) -> str | None:
    import difflib  # only when a name is unknown: lint of a correct spec never loads it

    close = difflib.get_close_matches(name, list(options), n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(name: str, options, spell=None) -> str | None:
    """``did you mean 'X'?`` with X the closest option as spec text that replaces the diagnostic's span
    (the editor's quick fix pastes it there): ``spell`` writes it (fairspec.syntax.literals: a column
    as ``col("...")``, a category quoted when the span is a string); the option itself by default."""
    close = closest(name, options)
    return f"did you mean '{spell(close) if spell else close}'?" if close else None


def column_hint(column: str, columns) -> str | None:
    """For a feature whose data column is not there: the closest column and the declaration that reads
    it (not a did-you-mean: the fix is in the feature's declaration, not at the diagnostic's span)."""
    close = closest(column, columns)
    if close is None:
        return None
    return f"the closest column is {literals.string(close)}: a feature reads it with column {literals.string(close)}"


def quoted(span, value: str) -> bool:
    """The token at ``span`` is a string literal: it is wider than the value it reads as (a name or a
    number is exactly as wide; a string adds its quotes). A suggestion for it keeps the quotes."""
    return span is not None and (span.end_line != span.line or span.end_column - span.column != len(value))


# model outputs in a pair expression (issue 25 added class and value; prob/logit take a class)
MODEL_OUTPUT_FNS = ("label", "prob", "logit", "class", "value")


class LowerError(Exception):
    """Raised after a diagnostic was reported, to abandon the current expression."""


@dataclass
class Scope:
    """What names mean in an expression."""

    kind: str  # "data" | "features" | "pair"
    columns: dict[str, str] = field(default_factory=dict)  # data: column -> "num" | "str"
    features: ir.FeatureSet | None = None
    pair_vars: tuple[str, ...] = ()
    models: dict[str, ir.Model] = field(default_factory=dict)
    env: dict[str, ast.Expr] = field(default_factory=dict)  # policy parameters
    class_var: str | None = None  # pair scope: the class variable of ``ensure forall c: ...``
    booleans: frozenset = frozenset()  # data: the Parquet boolean columns (text "True" / "False" there)
    texts: Any = None  # data: column -> the text values lint read (the hint of a text column compared otherwise)


_CMP_OPS = {"==", "!=", "<", "<=", ">", ">="}


def _text_column_hint(e: ast.Compare, s: Scope) -> str | None:
    """A data column of text compared with a number or a condition (``approved == 1`` / ``== true``):
    the hint says it is compared as text, a Parquet boolean column as "True" / "False"."""
    if s.kind != "data":
        return None
    for side in (e.left, e.right):
        if isinstance(side, ast.Name) and s.columns.get(side.id) == "str":
            if side.id in s.booleans:
                return (f"column '{side.id}' is a Parquet boolean column, read as the text \"True\" / \"False\": "
                        f"write {side.id} == \"True\"")
            held = _held_texts(s, side.id)
            if held == ["False", "True"]:   # a CSV of a bool column (a pandas frame given to the Python API)
                return (f"column '{side.id}' holds the text \"True\" / \"False\" (a column of booleans, as a CSV "
                        f"file writes them): write {side.id} == \"True\"")
            if held:
                return (f"column '{side.id}' holds text ({', '.join(literals.string(v) for v in held)} in the rows "
                        f"read): compare it with its text as the file writes it, in quotes")
            return f"column '{side.id}' holds text: compare it with its text as the file writes it, in quotes"
    return None


def _held_texts(s: Scope, column: str) -> list[str]:
    """The few (at most 6) distinct text values lint read in ``column``, sorted; [] when unknown or more."""
    try:
        held = s.texts[column] if s.texts is not None else ()
    except KeyError:
        return []
    held = sorted(v for v in held if isinstance(v, str))
    return held if 0 < len(held) <= 6 else []


class ExprLowerer:
    def __init__(self, sink: Sink, declared: dict | None = None):
        self.sink = sink
        self.declared = {} if declared is None else declared  # every declared name (the checker's symbols)
        # an import did not load (FS203, FS212, a syntax error in it: said at the import): a name that file
        # could declare is not reported unknown at each use as well (sema.check.Checker.run sets it)
        self.imports_failed = False

    def fail(self, code, msg, span, hint=None):
        self.sink.add(code, msg, span, hint=hint)
        raise LowerError()

    def unknown(self, code, msg, span, hint=None):
        """An unknown name an import could declare: FS201 / FS205, or silent when an import failed."""
        if self.imports_failed:
            raise LowerError()
        self.fail(code, msg, span, hint=hint)

    # The result of lowering: (ir expr, type) with type in num | str | bool | cat:<feature>
    def lower(self, e: ast.Expr, s: Scope):
        if isinstance(e, ast.Name) and e.id in s.env:
            return self.lower(s.env[e.id], Scope(s.kind, s.columns, s.features, s.pair_vars, s.models, {}, s.class_var))
        if isinstance(e, ast.Num):
            return ir.Const(e.value), "num"
        if isinstance(e, ast.Str):
            return ir.Const(e.value), "str"
        if isinstance(e, ast.BoolLit):
            return ir.Const(e.value), "bool"
        if isinstance(e, ast.Dur):
            return ir.Const(e.seconds), "num"
        if isinstance(e, ast.Name):
            return self._name(e, s)
        if isinstance(e, ast.Attr):
            return self._attr(e, s)
        if isinstance(e, ast.Call):
            return self._call(e, s)
        if isinstance(e, ast.Compare):
            return self._compare(e, s)
        if isinstance(e, ast.InSet):
            return self._in(e, s)
        if isinstance(e, ast.BoolOp):
            a = self.expect_bool(e.left, s)
            b = self.expect_bool(e.right, s)
            return ir.Logic(e.op, (a, b)), "bool"
        if isinstance(e, ast.Not):
            return ir.NotE(self.expect_bool(e.arg, s)), "bool"
        if isinstance(e, ast.Arith):  # booleans count as 0/1 (linear rules: P + Q - S >= 2)
            a = self.expect_num(e.left, s, allow_bool=True)
            b = self.expect_num(e.right, s, allow_bool=True)
            return ir.ArithE(e.op, a, b), "num"
        if isinstance(e, ast.Neg):
            a = self.expect_num(e.arg, s)
            if isinstance(a, ir.Const):
                return ir.Const(-a.value), "num"
            return ir.ArithE("-", ir.Const(0), a), "num"
        if isinstance(e, ast.Abs):
            return ir.AbsE(self.expect_num(e.arg, s)), "num"
        self.fail("FS301", f"this {type(e).__name__.lower()} cannot be used in an expression here", e.span)

    def expect_bool(self, e, s):
        x, t = self.lower(e, s)
        if t != "bool":
            self.fail("FS301", f"expected a condition (true/false), found a {_type_word(t)}", e.span)
        return x

    def expect_num(self, e, s, allow_bool: bool = False):
        x, t = self.lower(e, s)
        if t != "num" and not (allow_bool and t == "bool"):
            self.fail("FS301", f"expected a number, found a {_type_word(t)}", e.span)
        return x

    # ------------------------------------------------------------------ names
    def _name(self, e: ast.Name, s: Scope):
        if s.kind == "data":
            if e.id in s.columns:
                return ir.ColumnRef(e.id), s.columns[e.id]
            # y == True: the text a CSV file of a boolean column holds, unquoted
            boolean = (f"a text value is quoted: \"{e.id}\" (a column of booleans holds the text \"True\" / "
                       f"\"False\")") if e.id in ("True", "False") else None
            self.fail("FS207", f"unknown data column '{e.id}'", e.span,
                      hint=did_you_mean(e.id, s.columns, literals.column) or boolean
                      or "columns with other characters are written col(\"name-with-dash\")")
        if s.kind == "features":
            f = s.features.get(e.id) if s.features else None
            if f is not None:
                return ir.FeatureRef(f.name), _feature_type(f)
            opts = [x.name for x in s.features.features] if s.features else []
            self.fail("FS205", f"unknown feature '{e.id}'" + (f" in {s.features.name}" if s.features else ""),
                      e.span, hint=did_you_mean(e.id, opts))
        # pair scope: bare names are not allowed (which copy?)
        if e.id in s.pair_vars:
            self.fail("FS301", f"'{e.id}' is a whole input; name one of its features, e.g. {e.id}.age", e.span)
        self.unknown("FS201", f"unknown name '{e.id}'", e.span,
                  hint=f"inside a pair property refer to features as {s.pair_vars[0]}.feature" if s.pair_vars else None)

    def _attr(self, e: ast.Attr, s: Scope):
        if s.kind != "pair" or not isinstance(e.obj, ast.Name) or e.obj.id not in s.pair_vars:
            if isinstance(e.obj, ast.Name) and s.kind == "pair":
                self.fail("FS201", f"unknown pair variable '{e.obj.id}'", e.obj.span,
                          hint=f"the variables are {' and '.join(s.pair_vars)}")
            self.fail("FS301", "'.' selects a feature of a pair variable (x.age)", e.span)
        f = s.features.get(e.name.id)
        if f is None:
            self.fail("FS205", f"unknown feature '{e.name.id}' in {s.features.name}", e.name.span,
                      hint=did_you_mean(e.name.id, [x.name for x in s.features.features]))
        return ir.FeatureRef(f.name, e.obj.id), _feature_type(f)

    def _call(self, e: ast.Call, s: Scope):
        fn = e.fn.id
        if fn == "col" and s.kind == "data":
            args = e.positional()
            if len(args) != 1 or not isinstance(args[0], ast.Str):
                self.fail("FS305", "col(...) takes one string: the column name", e.span)
            name = args[0].value
            if name not in s.columns:
                self.fail("FS207", f"unknown data column {name!r}", args[0].span,
                          hint=did_you_mean(name, s.columns, literals.string))
            return ir.ColumnRef(name), s.columns[name]
        if fn in MODEL_OUTPUT_FNS and s.kind == "pair":
            args = e.positional()
            takes_class = fn in ("prob", "logit")
            if not args or not isinstance(args[0], ast.Call) or len(args) > (2 if takes_class else 1) \
                    or len(args) != len(e.args):
                form = f"{fn}(m(x)) or {fn}(m(x), c)" if takes_class else f"{fn}(m(x))"
                self.fail("FS305", f"{fn}(...) takes one model application{', and a class' if takes_class else ''}: "
                                   f"{form}", e.span)
            inner = args[0]
            mname = inner.fn.id
            if mname in s.env and isinstance(s.env[mname], ast.Name):
                mname = s.env[mname].id
            if mname not in s.models and isinstance(getattr(self.declared.get(mname), "node", None), ast.ModelDecl):
                raise LowerError()  # declared, but its own declaration failed (FS212, FS401...): already reported
            if mname not in s.models:
                self.unknown("FS201", f"unknown model '{mname}'", inner.fn.span, hint=did_you_mean(mname, s.models))
            iargs = inner.positional()
            if len(iargs) != 1 or not isinstance(iargs[0], ast.Name) or iargs[0].id not in s.pair_vars:
                self.fail("FS305", f"a model is applied to one pair variable: {mname}({s.pair_vars[0]})", inner.span)
            cls = self._class_arg(args[1], s) if len(args) == 2 else None
            from fairspec.sema.outputs import check_model_out

            mo = check_model_out(self, ir.ModelOut(fn, mname, iargs[0].id, cls), s.models[mname], e.span,
                                 args[1].span if len(args) == 2 else e.span)
            t = "bool" if fn == "label" else "num"
            return mo, t
        if fn == "abs":
            args = e.positional()
            if len(args) != 1:
                self.fail("FS305", "abs(...) takes one argument", e.span)
            return ir.AbsE(self.expect_num(args[0], s)), "num"
        known = {"data": ["col"], "pair": [*MODEL_OUTPUT_FNS, "abs"]}.get(s.kind, ["abs"])
        self.fail("FS209", f"unknown function '{fn}' in this expression", e.fn.span,
                  hint=did_you_mean(fn, known))

    def _class_arg(self, e: ast.Expr, s: Scope):
        """The class argument of prob/logit(m(x), c): a column (a whole number), a label (a string),
        or the class variable of ``ensure forall c: ...`` (every class)."""
        if isinstance(e, ast.Name) and e.id in s.env:
            return self._class_arg(s.env[e.id], s)
        if isinstance(e, ast.Num) and e.is_int:
            return int(e.value)
        if isinstance(e, ast.Str):
            return e.value
        if isinstance(e, ast.Name) and s.class_var is not None and e.id == s.class_var:
            return ir.EVERY_CLASS
        if isinstance(e, ast.Name):
            self.fail("FS201", f"unknown class name '{e.id}'", e.span,
                      hint=f"a class is a column (a whole number) or a label in quotes, e.g. \"{e.id}\""
                           + ("" if s.class_var is None else f", or the class variable {s.class_var}"))
        self.fail("FS301", "a class is a column (a whole number) or a label in quotes", e.span)

    # ------------------------------------------------------------------ comparisons
    def _compare(self, e: ast.Compare, s: Scope):
        a, ta = self.lower(e.left, s)
        b, tb = self._lower_against(e.right, ta, s)
        if ta.startswith("cat:") and isinstance(a, ir.FeatureRef) and tb == ta and e.op not in ("==", "!="):
            self.fail("FS301", "categories have no order: compare them with == or !=", e.span)
        if tb.startswith("cat:") and not ta.startswith("cat:"):
            a, ta = self._lower_against(e.left, tb, s)
        if _base(ta) != _base(tb):
            self.fail("FS301", f"cannot compare a {_type_word(ta)} with a {_type_word(tb)}", e.span,
                      hint=_text_column_hint(e, s) or _output_mix_hint(a, b))
        if ta in ("str", "bool") and e.op not in ("==", "!="):
            self.fail("FS301", f"a {_type_word(ta)} can only be compared with == or !=", e.span)
        return ir.Cmp(e.op, a, b), "bool"

    def _lower_against(self, e: ast.Expr, other_type: str, s: Scope):
        """Lower e; when compared to a categorical feature, a bare name or string is a category."""
        if other_type.startswith("cat:") and isinstance(e, ast.Neg) and isinstance(e.arg, ast.Num):
            e = ast.Num(e.span, -e.arg.value, e.arg.is_int)  # a negative numeric category: {-1, 0, 1}
        if other_type.startswith("cat:") and isinstance(e, (ast.Name, ast.Str, ast.Num)):
            if isinstance(e, ast.Name) and (e.id in s.env):
                return self._lower_against(s.env[e.id], other_type, s)
            fname = other_type[4:]
            f = s.features.get(fname)
            value = e.id if isinstance(e, ast.Name) else (e.value if isinstance(e, ast.Str) else _num_text(e))
            if isinstance(e, ast.Name) and s.features.get(e.id) is not None:
                return self.lower(e, s)
            cats = f.domain.categories
            if value not in cats:
                spell = literals.string if isinstance(e, ast.Str) else literals.category
                self.fail("FS206", f"'{value}' is not a category of {fname}", e.span,
                          hint=did_you_mean(str(value), cats, spell) or f"the categories are {literals.category_set(cats)}")
            return ir.Const(cats.index(value)), other_type
        if other_type == "bool" and isinstance(e, ast.Name) and e.id in ("true", "false"):
            return ir.Const(e.id == "true"), "bool"
        return self.lower(e, s)

    def _in(self, e: ast.InSet, s: Scope):
        a, ta = self.lower(e.item, s)
        if not isinstance(e.collection, (ast.SetLit, ast.ListLit)):
            self.fail("FS301", "'in' needs a set of values, e.g. x in {A, B}", e.collection.span)
        values = []
        for item in e.collection.items:
            v, tv = self._lower_against(item, ta, s)
            if not isinstance(v, ir.Const):
                self.fail("FS301", "the values after 'in' must be constants", item.span)
            if _base(tv) != _base(ta):
                self.fail("FS301", f"cannot test a {_type_word(ta)} against a {_type_word(tv)}", item.span)
            if v.value in values:  # as a category list says a category twice
                shown = item.id if isinstance(item, ast.Name) else item.value if isinstance(item, ast.Str) else (
                    str(v.value).lower() if isinstance(v.value, bool) else literals.number(v.value))  # (a category: its index)
                self.fail("FS304", f"'{shown}' is listed twice after 'in'", item.span, hint="list each value once")
            values.append(v.value)
        return ir.InSet(a, tuple(values), e.negated), "bool"


def _feature_type(f: ir.Feature) -> str:
    if isinstance(f.domain, ir.Categorical):
        return f"cat:{f.name}"
    if isinstance(f.domain, ir.Boolean):
        return "bool"
    return "num"


def _base(t: str) -> str:
    return "cat" if t.startswith("cat:") else t


def _type_word(t: str) -> str:
    if t.startswith("cat:"):
        return f"category of {t[4:]}"
    return {"num": "number", "str": "string", "bool": "condition"}.get(t, t)


def _num_text(e: ast.Num) -> str:
    return str(int(e.value)) if float(e.value).is_integer() else repr(float(e.value))  # as parser.category


def _output_mix_hint(a, b) -> str | None:
    """`prob(m(x)) == label(m(x'))`: a probability (a number) against a decision (a condition)."""
    if isinstance(a, ir.ModelOut) and isinstance(b, ir.ModelOut) and a.fn != b.fn:
        return (f"{a.fn}(...) and {b.fn}(...) are different readings of the model: compare the same one on both "
                "sides, label(m(x)) == label(m(x')) or |prob(m(x)) - prob(m(x'))| <= eps")
    return None
