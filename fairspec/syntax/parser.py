"""Parse .fair text into the AST with Lark (LALR, contextual lexer).

Lark's exceptions never leave this module: they become FS1xx diagnostics.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from functools import lru_cache

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedInput, VisitError

from fairspec import paths
from fairspec import filecache
from fairspec.diagnostics import Diagnostic, DiagnosticError, Span, register_source, split_lines
from fairspec.syntax import ast, lexical
from fairspec.syntax.literals import RESERVED
from fairspec.syntax.parse_errors import syntax_diagnostic


class _Comments(threading.local):
    """The comment tokens the lexer skips during one parse (per thread: the editor server's)."""

    def __init__(self) -> None:
        self.items: list = []

    def __call__(self, tok: Token) -> Token:
        self.items.append(tok)
        return tok


_COMMENTS = _Comments()


@lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = paths.grammar_file().read_text(encoding="utf-8")
    # cache=True keeps the compiled LALR tables in the temp folder: lint starts faster.
    # The comments are collected (ignore comments: fairspec.diagnostics.ignores).
    return Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=True, cache=True,
                lexer_callbacks={"COMMENT": _COMMENTS})


def _ignores(file: str, text: str, comments) -> tuple:
    """The ``# fairspec: ignore[...]`` comments among the comment tokens, as Ignores."""
    from fairspec.diagnostics.ignores import from_comment

    out = []
    for tok in comments:
        if "fairspec" not in tok:
            continue
        before = text[text.rfind("\n", 0, tok.start_pos) + 1: tok.start_pos]
        ig = from_comment(file, str(tok), tok.line, tok.column, not before.strip())
        if ig is not None:
            out.append(ig)
    return tuple(out)


# The largest spec file parsed: 512 KiB (bytes of UTF-8; characters for a text given directly).
# Parsing is lark's LALR parser in pure Python, about 4 s of CPU per MB, and lint about 6.5 s per
# MB (bench/lint_size.py): a larger file (a generated or hostile one; real specs are a few KB) is
# FS107 at once instead of minutes of work (a 5 MB file took 132 s).
MAX_SPEC_BYTES = 512 << 10
MAX_NUMBER = 1e15  # the largest magnitude of a number literal (floats hold every whole number up to ~9e15)
_DURATION = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(ms|s|min|h)$")
_UNIT = {"ms": 0.001, "s": 1.0, "min": 60.0, "h": 3600.0}




class _ToAst(Transformer):
    def __init__(self, file: str):
        super().__init__(visit_tokens=False)
        self.file = file

    # spans ------------------------------------------------------------
    def _tok_span(self, t: Token) -> Span:
        return Span(self.file, t.line, t.column, t.end_line or t.line, t.end_column or t.column + len(t))

    def _meta_span(self, meta, children=()) -> Span:
        if not getattr(meta, "empty", True):
            return Span(self.file, meta.line, meta.column, meta.end_line, meta.end_column)
        for c in children:
            if isinstance(c, Token):
                return self._tok_span(c)
            if isinstance(c, ast.Node):
                return c.span
        return Span.point(self.file)

    def _number_value(self, tok: Token) -> tuple[int | float, bool]:
        """The literal's value; FS307 at its span when it lies outside +-MAX_NUMBER (a 400-digit
        number, 1e999): every later float() or int() of it then stays finite."""
        text = str(tok)
        is_int = re.fullmatch(r"[0-9]+", text) is not None
        if is_int:
            if len(text.lstrip("0")) > 16:  # before int(): Python refuses to convert > 4300 digits
                self._too_large(tok)
            value = int(text.lstrip("0") or "0")  # leading zeros do not count against Python's digit limit
        else:
            value = float(text)
        if not abs(value) <= MAX_NUMBER:  # also catches inf and nan
            self._too_large(tok)
        problem = lexical.number_problem(text, value)  # more than 17 significant digits, 1e-400
        if problem is not None:
            raise DiagnosticError(Diagnostic("FS307", problem[0], self._tok_span(tok), hint=problem[1]))
        return value, is_int

    def _too_large(self, tok: Token):
        shown = lexical._shown(str(tok))
        raise DiagnosticError(Diagnostic("FS307", f"the number {shown} is too large: numbers in a spec lie within "
                                                  f"-1e15 .. 1e15", self._tok_span(tok),
                                         hint="write a number of at most 15 digits"))

    def _str(self, tok: Token) -> str:
        """A STRING token's value; FS102 at an unknown escape (fairspec.syntax.lexical.unescape)."""
        value, bad = lexical.unescape(str(tok), self._tok_span(tok))
        if bad is not None:
            raise DiagnosticError(bad)
        return value

    def _name(self, t: Token) -> ast.Name:
        return ast.Name(self._tok_span(t), str(t))

    # module -----------------------------------------------------------
    @v_args(meta=True)
    def start(self, meta, c):
        return ast.Module(self._meta_span(meta, c), self.file, tuple(c))

    @v_args(meta=True)
    def import_decl(self, meta, c):
        return ast.Import(self._meta_span(meta, c), self._str(c[0]))

    @v_args(meta=True)
    def model_decl(self, meta, c):
        return ast.ModelDecl(self._meta_span(meta, c), self._name(c[0]), self._name(c[1]), c[2] or ())

    @v_args(meta=True)
    def data_decl(self, meta, c):
        return ast.DataDecl(self._meta_span(meta, c), self._name(c[0]), self._name(c[1]), c[2] or ())

    # features -------------------------------------------------------------
    @v_args(meta=True)
    def features_decl(self, meta, c):
        name = self._name(c[0])
        rest = c[1:]
        source = None
        if rest and isinstance(rest[0], Token):
            source = self._name(rest[0])
            rest = rest[1:]
        return ast.FeaturesDecl(self._meta_span(meta, c), name, source, tuple(rest))

    @v_args(meta=True)
    def feature(self, meta, c):
        name, typ, *mods = c
        protected, column, bins, bins_span = False, None, None, None
        for m in mods:
            if m[0] == "protected":
                protected = True
            elif m[0] == "column":
                column = m[1]
            elif m[0] == "bins":
                bins, bins_span = m[1], m[2]
        return ast.FeatureDecl(self._meta_span(meta, c), self._name(name), typ, protected, column, bins, bins_span)

    @v_args(meta=True)
    def int_type(self, meta, c):
        return ast.TypeNode(self._meta_span(meta, c), "int", c[0].value, c[1].value)

    @v_args(meta=True)
    def real_type(self, meta, c):
        return ast.TypeNode(self._meta_span(meta, c), "real", c[0].value, c[1].value)

    @v_args(meta=True)
    def bool_type(self, meta, c):
        return ast.TypeNode(self._meta_span(meta, c), "bool")

    @v_args(meta=True)
    def cat_type(self, meta, c):
        return ast.TypeNode(self._meta_span(meta, c), "cat", categories=tuple(c))

    @v_args(meta=True)
    def category(self, meta, c):
        (v,) = c
        if isinstance(v, ast.Num):
            # as a numeric data column's value reads (runtime.data.Table.coded): 1.0 and -0 are 1 and 0
            text = str(int(v.value)) if float(v.value).is_integer() else repr(float(v.value))
            return ast.Category(v.span, text)
        if v.type == "STRING":
            return ast.Category(self._tok_span(v), self._str(v))
        return ast.Category(self._tok_span(v), str(v))

    def protected_mod(self, c):
        return ("protected",)

    def column_mod(self, c):
        return ("column", ast.Str(self._tok_span(c[0]), self._str(c[0])))

    @v_args(meta=True)
    def bins_mod(self, meta, c):
        return ("bins", tuple(x.value for x in c), self._meta_span(meta, c))

    @v_args(meta=True)
    def signed(self, meta, c):
        neg = len(c) == 2
        tok = c[-1]
        value, is_int = self._number_value(tok)
        return ast.Num(self._meta_span(meta, c), -value if neg else value, is_int)

    # encoding ------------------------------------------------------------
    @v_args(meta=True)
    def encode_decl(self, meta, c):
        return ast.EncodeDecl(self._meta_span(meta, c), self._name(c[0]), self._name(c[1]), tuple(c[2:]))

    @v_args(meta=True)
    def enc_line(self, meta, c):
        names, kind, *rest = c
        params = codes = None
        if rest:
            tag, items = rest[0]
            if tag == "kw":
                params = items
            else:
                codes = items
        return ast.EncLine(self._meta_span(meta, c), names, self._name(kind), params, codes)

    def enc_kw(self, c):
        return ("kw", tuple(c))

    def enc_codes(self, c):
        return ("codes", tuple(c))

    def kw_item(self, c):
        return (self._name(c[0]), c[1])

    def code_item(self, c):
        return (c[0], c[1].value)

    def name_list(self, c):
        return tuple(self._name(t) for t in c)

    @v_args(meta=True)
    def group_decl(self, meta, c):
        return ast.GroupDecl(self._meta_span(meta, c), self._name(c[0]), c[1])

    # distributions -------------------------------------------------------------
    @v_args(meta=True)
    def distribution_call(self, meta, c):
        return ast.DistributionDecl(self._meta_span(meta, c), self._name(c[0]), self._name(c[1]), c[2] or (), ())

    @v_args(meta=True)
    def distribution_table(self, meta, c):
        return ast.DistributionDecl(self._meta_span(meta, c), self._name(c[0]), None, (), tuple(c[1:]))

    @v_args(meta=True)
    def cpt_entry(self, meta, c):
        *events, prob = c
        return ast.CptEntry(self._meta_span(meta, c), events[0], tuple(events[1:]), float(prob.value))

    def event_true(self, c):
        return ast.Event(self._tok_span(c[0]), self._name(c[0]), True)

    def event_false(self, c):
        return ast.Event(self._tok_span(c[0]), self._name(c[0]), False)

    def event_eq(self, c):
        return ast.Event(self._tok_span(c[0]), self._name(c[0]), c[1].value)

    # properties -----------------------------------------------------------
    @v_args(meta=True)
    def property_decl(self, meta, c):
        return ast.PropertyDecl(self._meta_span(meta, c), self._name(c[0]), tuple(c[1:]))

    def _stmt(self, kind, meta, c, args):
        return ast.Stmt(self._meta_span(meta, c), kind, tuple(args))

    @v_args(meta=True)
    def forall_stmt(self, meta, c):
        return self._stmt("forall", meta, c, [self._name(t) for t in c])

    @v_args(meta=True)
    def require_stmt(self, meta, c):
        return self._stmt("require", meta, c, c)

    @v_args(meta=True)
    def ensure_stmt(self, meta, c):
        return self._stmt("ensure", meta, c, c)

    @v_args(meta=True)
    def ensure_forall_stmt(self, meta, c):
        # args[0] is the condition, as in every ensure; args[1] the class variable it binds
        return self._stmt("ensure", meta, c, [c[1], self._name(c[0])])

    @v_args(meta=True)
    def using_stmt(self, meta, c):
        return self._stmt("using", meta, c, [self._name(c[0])])

    @v_args(meta=True)
    def search_stmt(self, meta, c):
        return self._stmt("search", meta, c, [self._name(c[0])] + list(c[1:]))

    @v_args(meta=True)
    def explain_stmt(self, meta, c):
        return self._stmt("explain", meta, c, [self._name(c[0])])

    @v_args(meta=True)
    def report_stmt(self, meta, c):
        return self._stmt("report", meta, c, c)

    @v_args(meta=True)
    def option_stmt(self, meta, c):
        return self._stmt("option", meta, c, [self._name(c[0]), c[1]])

    @v_args(meta=True)
    def claim_stmt(self, meta, c):
        return self._stmt("claim", meta, c, c)

    @v_args(meta=True)
    def goal_stmt(self, meta, c):
        return self._stmt("goal", meta, c, c)

    @v_args(meta=True)
    def bound_stmt(self, meta, c):
        return self._stmt("bound", meta, c, c)

    @v_args(meta=True)
    def write_stmt(self, meta, c):
        return self._stmt("write", meta, c, [ast.Str(self._tok_span(c[0]), self._str(c[0]))])

    @v_args(meta=True)
    def repair_decl(self, meta, c):
        return ast.RepairDecl(self._meta_span(meta, c), self._name(c[0]), self._name(c[1]), tuple(c[2:]))

    # policies ---------------------------------------------------------------
    @v_args(meta=True)
    def policy_decl(self, meta, c):
        name = self._name(c[0])
        params = tuple(x for x in c[1:] if isinstance(x, ast.Param))
        props = tuple(x for x in c[1:] if isinstance(x, ast.PropertyDecl))
        return ast.PolicyDecl(self._meta_span(meta, c), name, params, props)

    @v_args(meta=True)
    def param(self, meta, c):
        default = c[2] if len(c) > 2 else None
        return ast.Param(self._meta_span(meta, c), self._name(c[0]), self._name(c[1]), default)

    @v_args(meta=True)
    def apply_decl(self, meta, c):
        alias = self._name(c[2]) if len(c) > 2 and c[2] is not None else None
        return ast.ApplyDecl(self._meta_span(meta, c), self._name(c[0]), c[1] or (), alias)

    # calls -----------------------------------------------------------------
    def call_args(self, c):
        return tuple(c)

    @v_args(meta=True)
    def pos_arg(self, meta, c):
        return ast.Arg(self._meta_span(meta, c), None, c[0], "pos")

    @v_args(meta=True)
    def kw_arg(self, meta, c):
        return ast.Arg(self._meta_span(meta, c), self._name(c[0]), c[1], "kw")

    @v_args(meta=True)
    def clause_arg(self, meta, c):
        return ast.Arg(self._meta_span(meta, c), self._name(c[0]), c[1], "clause")

    @v_args(meta=True)
    def trust_arg(self, meta, c):
        return ast.Arg(self._meta_span(meta, c), self._name(c[1]), None, "trust")

    # expressions ------------------------------------------------------------
    @v_args(meta=True)
    def or_op(self, meta, c):
        return ast.BoolOp(self._meta_span(meta, c), "or", c[0], c[1])

    @v_args(meta=True)
    def and_op(self, meta, c):
        return ast.BoolOp(self._meta_span(meta, c), "and", c[0], c[1])

    @v_args(meta=True)
    def not_op(self, meta, c):
        return ast.Not(self._meta_span(meta, c), c[0])

    @v_args(meta=True)
    def compare(self, meta, c):
        return ast.Compare(self._meta_span(meta, c), str(c[1]), c[0], c[2])

    @v_args(meta=True)
    def in_op(self, meta, c):
        return ast.InSet(self._meta_span(meta, c), c[0], c[1], False)

    @v_args(meta=True)
    def not_in_op(self, meta, c):
        return ast.InSet(self._meta_span(meta, c), c[0], c[1], True)

    @v_args(meta=True)
    def equal_except(self, meta, c):
        left, op, right, excluded = c
        if str(op) != "==":
            raise DiagnosticError(Diagnostic(
                "FS101", f"'{op}' cannot compare whole inputs; write x.* == x'.* except {{...}}",
                self._tok_span(op), hint="only == relates x.* and x'.*"))
        return ast.EqualExcept(self._meta_span(meta, c), left, right, excluded)

    @v_args(meta=True)
    def star_ref(self, meta, c):
        return ast.StarRef(self._meta_span(meta, c), c[0])

    @v_args(meta=True)
    def arith(self, meta, c):
        return ast.Arith(self._meta_span(meta, c), str(c[1]), c[0], c[2])

    @v_args(meta=True)
    def neg(self, meta, c):
        return ast.Neg(self._meta_span(meta, c), c[1])

    @v_args(meta=True)
    def number(self, meta, c):
        value, is_int = self._number_value(c[0])
        return ast.Num(self._tok_span(c[0]), value, is_int)

    @v_args(meta=True)
    def duration(self, meta, c):
        m = _DURATION.match(str(c[0]))
        seconds = float(m.group(1)) * _UNIT[m.group(2)]
        if not seconds <= MAX_NUMBER:
            self._too_large(c[0])
        return ast.Dur(self._tok_span(c[0]), seconds, str(c[0]))

    @v_args(meta=True)
    def string(self, meta, c):
        return ast.Str(self._tok_span(c[0]), self._str(c[0]))

    @v_args(meta=True)
    def true(self, meta, c):
        return ast.BoolLit(self._tok_span(c[0]), True)

    @v_args(meta=True)
    def false(self, meta, c):
        return ast.BoolLit(self._tok_span(c[0]), False)

    @v_args(meta=True)
    def none(self, meta, c):
        return ast.NoneLit(self._tok_span(c[0]))

    @v_args(meta=True)
    def name(self, meta, c):
        return self._name(c[0])

    @v_args(meta=True)
    def compound(self, meta, c):
        names = tuple(self._name(t) for t in c if t.type != "X_OP")
        return ast.Compound(self._meta_span(meta, c), names)

    @v_args(meta=True)
    def attr(self, meta, c):
        return ast.Attr(self._meta_span(meta, c), c[0], self._name(c[1]))

    @v_args(meta=True)
    def call(self, meta, c):
        return ast.Call(self._meta_span(meta, c), self._name(c[0]), c[1] or ())

    @v_args(meta=True)
    def abs(self, meta, c):
        return ast.Abs(self._meta_span(meta, c), c[0])

    @v_args(meta=True)
    def set_lit(self, meta, c):
        return ast.SetLit(self._meta_span(meta, c), tuple(x for x in c if x is not None))

    @v_args(meta=True)
    def map_item(self, meta, c):
        return ast.MapItem(self._meta_span(meta, c), self._name(c[0]), c[1])

    @v_args(meta=True)
    def list_lit(self, meta, c):
        return ast.ListLit(self._meta_span(meta, c), tuple(x for x in c if x is not None))


# The deepest syntax tree accepted (a chain of 1,000 `and`s, `not not ...` or `- - -1` nests that
# deep). Every later phase (the AST builder, name binding, type checking, IR lowering, the
# solvers' encoders) walks the tree recursively; this bound keeps them all far from Python's
# recursion limit. Parentheses do not nest the tree: ((((x)))) is x.
MAX_DEPTH = 100


def _chain_op(t) -> str | None:
    """The associative operator a node applies (and, or, +, *), or None."""
    from lark import Tree

    if not isinstance(t, Tree):
        return None
    if t.data in ("and_op", "or_op"):
        return t.data
    if t.data == "arith" and str(t.children[1]) in ("+", "*"):
        return "arith" + str(t.children[1])
    return None


def _balance_chains(tree) -> None:
    """Rebuild every chain of one associative operator (a and b and c ..., a + b + c ...) as a
    balanced tree, in place and without recursion: 1,000 terms nest 10 deep instead of 1,000.
    The operands keep their order; `-` and `/` chains are left as written. A run of `not` or of
    unary `-` keeps one or two of them (the same parity)."""
    from lark import Tree
    from lark.tree import Meta

    def meta(first, last):
        m = Meta()
        m.empty = False
        m.line, m.column, m.start_pos = first.meta.line, first.meta.column, first.meta.start_pos
        m.end_line, m.end_column, m.end_pos = last.meta.end_line, last.meta.end_column, last.meta.end_pos
        return m

    def build(node, leaves, lo, hi):  # depth log2(hi - lo): recursion is fine here
        if hi - lo == 1:
            return leaves[lo]
        mid = (lo + hi) // 2
        left, right = build(node, leaves, lo, mid), build(node, leaves, mid, hi)
        kids = [left, node.children[1], right] if node.data == "arith" else [left, right]
        return Tree(node.data, kids, meta(left, right))

    todo = [tree]
    while todo:
        t = todo.pop()
        if isinstance(t, Tree) and t.data in ("not_op", "neg"):  # not not not x == not x; - - -1 == -1
            at = 0 if t.data == "not_op" else 1
            run, inner = 1, t.children[at]
            while isinstance(inner, Tree) and inner.data == t.data:
                run, inner = run + 1, inner.children[at]
            if run > 2:  # keep one (odd) or two (even: so a type error inside is still found)
                if run % 2:
                    t.children[at] = inner
                else:
                    t.children[at].children[at] = inner
            todo.append(inner)
            continue
        op = _chain_op(t)
        if op is None:
            todo.extend(c for c in t.children if isinstance(c, Tree))
            continue
        leaves, stack = [], [t]
        while stack:  # the operands in source order
            n = stack.pop()
            if _chain_op(n) == op:
                stack.extend(reversed([n.children[0], n.children[-1]]))
            else:
                leaves.append(n)
        if len(leaves) > 2 and all(not getattr(x, "meta", None) or not x.meta.empty for x in leaves):
            top = build(t, leaves, 0, len(leaves))
            t.children = top.children
        todo.extend(x for x in leaves if isinstance(x, Tree))


def _too_deep(tree):
    """The first node (depth first) deeper than MAX_DEPTH, found without recursion; None if none is."""
    from lark import Tree

    stack = [(tree, 1)]
    while stack:
        t, d = stack.pop()
        if d > MAX_DEPTH:
            return t
        stack.extend((ch, d + 1) for ch in t.children if isinstance(ch, Tree))
    return None


def _too_large(file: str, size: int) -> DiagnosticError:
    return DiagnosticError(Diagnostic(
        "FS107", f"{file} is {size / (1 << 20):.1f} MiB; fairspec reads spec files up to "
                 f"{MAX_SPEC_BYTES / (1 << 20):g} MiB", Span(str(file), 1, 1, 1, 1),
        hint="split it into files joined with import (the limit is per file)"))


# a carriage return not followed by a line feed: a line end, as editors and LSP count it (lark's lines,
# comments and spans cut at \n alone, so a file of \r line ends was one line, its first comment running
# to the end); fairspec.lsp.positions cuts fairspec's lines at the same places
LONE_CR = re.compile(r"\r(?!\n)")


def parse_text(text: str, file: str = "<string>") -> ast.Module:
    """Parse text; raise DiagnosticError with one FS1xx diagnostic on a syntax error (FS107 for a
    text over MAX_SPEC_BYTES characters, before any work)."""
    if len(text) > MAX_SPEC_BYTES:
        raise _too_large(file, len(text.encode("utf-8", "surrogatepass")))
    text = LONE_CR.sub("\n", text)  # a lone \r ends a line (old Mac files): one character for one, offsets kept
    register_source(file, text)
    run_in = lexical.run_in_numbers(file, text, RESERVED)  # 1_0, 0x10: one malformed number, not two tokens
    _COMMENTS.items = []
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as e:
        _COMMENTS.items = []
        d = syntax_diagnostic(file, text, e)  # the first of the two mistakes is said (an unclosed string first)
        if run_in and (run_in[0].span.line, run_in[0].span.column) <= (d.span.line, d.span.column):
            d = run_in[0]
        raise DiagnosticError(d) from None
    comments, _COMMENTS.items = _COMMENTS.items, []
    if run_in:
        raise DiagnosticError(run_in)
    _balance_chains(tree)
    deep = _too_deep(tree)
    if deep is not None:
        m = deep.meta
        span = Span(file, m.line, m.column, m.end_line, m.end_column) if not m.empty else Span.point(file)
        raise DiagnosticError(Diagnostic(
            "FS105", f"this expression is nested more than {MAX_DEPTH} levels deep", span,
            hint="split it: name parts with 'group NAME = ...', and write long and/or chains as fewer, "
                 "shorter conditions"))
    try:
        module = _ToAst(file).transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, DiagnosticError):
            raise e.orig_exc from None
        raise
    ignores = _ignores(file, text, comments)
    return dataclasses.replace(module, ignores=ignores) if ignores else module


def _wide_text(data: bytes) -> str | None:
    """'UTF-32' / 'UTF-16' (with its byte-order mark, or without one: ASCII text with a NUL beside every
    character) for text in those encodings, else None. UTF-32's mark begins as UTF-16's does."""
    if data[:4] in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff"):
        return "UTF-32"
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "UTF-16"
    head = data[:4096]
    if len(head) >= 8 and len(head) % 2 == 0:
        for odd in (0, 1):                               # big-endian: the NULs come first
            if head[odd::2].count(0) == len(head) // 2 and 0 not in head[1 - odd::2]:
                return "UTF-16"
    return None


def _position_after(before: str) -> tuple[int, int]:
    """The 1-based line and column (in characters) of the character just after ``before``, lines cut as
    the parser cuts them (split_lines: a lone '\\r' ends a line too, LONE_CR), so read_source's own
    FS104 / FS102 point where the parser's diagnostics would (a file of '\\r' line ends is not one line)."""
    lines = split_lines(before)
    return len(lines), len(lines[-1]) + 1


def read_source(path) -> str:
    """A spec file's text; DiagnosticError (FS104, FS102, FS203) when it is not UTF-8 text or cannot be read."""
    from pathlib import Path

    p = Path(path)
    try:
        with open(p, "rb") as f:  # a size bound before reading: a huge file is FS107, not memory
            data = f.read(MAX_SPEC_BYTES + 4)
    except OSError as e:
        from fairspec.files import os_error

        raise DiagnosticError(Diagnostic("FS203", f"cannot read the spec: {os_error(p, e)}", None)) from None
    if len(data) > MAX_SPEC_BYTES + 3:  # + 3: a UTF-8 byte-order mark is not counted
        try:
            size = p.stat().st_size
        except OSError:
            size = len(data)
        raise _too_large(str(p), max(size, len(data)))
    wide = _wide_text(data)
    if wide is not None:
        raise DiagnosticError(Diagnostic("FS104", f"{p} is {wide} text, not UTF-8", Span(str(p), 1, 1, 1, 2),
                                         hint="save the spec as UTF-8 (without a byte-order mark)"))
    if data[:3] == b"\xef\xbb\xbf":  # a UTF-8 byte-order mark (Windows editors): harmless
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line, col = _position_after(data[: e.start].decode("utf-8"))    # the bytes before it are UTF-8
        raise DiagnosticError(Diagnostic("FS104", f"{p} is not valid UTF-8 (byte 0x{data[e.start]:02x})",
                                         Span(str(p), line, col, line, col + 1))) from None
    if "\x00" in text:
        line, col = _position_after(text[: text.index("\x00")])
        raise DiagnosticError(Diagnostic("FS102", "unexpected NUL character (is this a binary file?)",
                                         Span(str(p), line, col, line, col + 1)))
    return text


@filecache.by_file(lambda path: path)
def parse_file(path) -> ast.Module:
    return parse_text(read_source(path), str(path))
