"""The abstract syntax tree of a .fair file.

Plain dataclasses with a :class:`~fairspec.diagnostics.Span` on every node and
no Lark types in them, so later phases never see the parser.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fairspec.diagnostics import Span


@dataclass(frozen=True)
class Node:
    span: Span = field(compare=False, repr=False)


# ------------------------------------------------------------------ expressions

@dataclass(frozen=True)
class Expr(Node):
    pass


@dataclass(frozen=True)
class Num(Expr):
    value: float
    is_int: bool


@dataclass(frozen=True)
class Dur(Expr):
    seconds: float
    text: str


@dataclass(frozen=True)
class Str(Expr):
    value: str


@dataclass(frozen=True)
class BoolLit(Expr):
    value: bool


@dataclass(frozen=True)
class NoneLit(Expr):
    pass


@dataclass(frozen=True)
class Name(Expr):
    id: str


@dataclass(frozen=True)
class Attr(Expr):
    obj: Expr
    name: Name


@dataclass(frozen=True)
class Arg(Node):
    """A call argument: positional (name None), keyword (name=value) or clause (groups sex x race)."""

    name: Name | None
    value: Expr | None
    kind: str = "pos"  # "pos" | "kw" | "clause" | "trust"


@dataclass(frozen=True)
class Call(Expr):
    fn: Name
    args: tuple[Arg, ...]

    def positional(self) -> list[Expr]:
        return [a.value for a in self.args if a.kind == "pos"]

    def keyword(self, name: str) -> Arg | None:
        for a in self.args:
            if a.kind in ("kw", "clause") and a.name and a.name.id == name:
                return a
        return None


@dataclass(frozen=True)
class Compare(Expr):
    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class InSet(Expr):
    item: Expr
    collection: Expr
    negated: bool


@dataclass(frozen=True)
class BoolOp(Expr):
    op: str  # "and" | "or"
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Not(Expr):
    arg: Expr


@dataclass(frozen=True)
class Arith(Expr):
    op: str  # + - * /
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Neg(Expr):
    arg: Expr


@dataclass(frozen=True)
class Abs(Expr):
    arg: Expr


@dataclass(frozen=True)
class MapItem(Expr):
    key: Name
    value: Expr


@dataclass(frozen=True)
class SetLit(Expr):
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class ListLit(Expr):
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Compound(Expr):
    """``sex x race``: the product of groups."""

    names: tuple[Name, ...]


@dataclass(frozen=True)
class StarRef(Expr):
    """``x.*``: every feature of a pair variable."""

    var: Expr


@dataclass(frozen=True)
class EqualExcept(Expr):
    """``x.* == x'.* except {sex, race}``."""

    left: StarRef
    right: StarRef
    excluded: Expr


# ------------------------------------------------------------------ declarations

@dataclass(frozen=True)
class Decl(Node):
    pass


@dataclass(frozen=True)
class Import(Decl):
    path: str


@dataclass(frozen=True)
class ModelDecl(Decl):
    name: Name
    fmt: Name
    args: tuple[Arg, ...]


@dataclass(frozen=True)
class DataDecl(Decl):
    name: Name
    fmt: Name
    args: tuple[Arg, ...]


@dataclass(frozen=True)
class Category(Node):
    value: str


@dataclass(frozen=True)
class TypeNode(Node):
    kind: str  # "int" | "real" | "bool" | "cat"
    lo: float | None = None
    hi: float | None = None
    categories: tuple[Category, ...] = ()


@dataclass(frozen=True)
class FeatureDecl(Node):
    name: Name
    type: TypeNode
    protected: bool
    column: Str | None
    bins: tuple[float, ...] | None
    bins_span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class FeaturesDecl(Decl):
    name: Name
    source: Name | None
    features: tuple[FeatureDecl, ...]


@dataclass(frozen=True)
class EncLine(Node):
    names: tuple[Name, ...]
    kind: Name
    params: tuple[tuple[Name, Expr], ...] | None
    codes: tuple[tuple[Category, float], ...] | None


@dataclass(frozen=True)
class EncodeDecl(Decl):
    features: Name
    model: Name
    lines: tuple[EncLine, ...]


@dataclass(frozen=True)
class GroupDecl(Decl):
    name: Name
    expr: Expr


@dataclass(frozen=True)
class Event(Node):
    feature: Name
    value: str | bool  # True/False for boolean features, a category otherwise


@dataclass(frozen=True)
class CptEntry(Node):
    target: Event
    given: tuple[Event, ...]
    prob: float


@dataclass(frozen=True)
class DistributionDecl(Decl):
    name: Name
    fn: Name | None  # bayes / independent / conditional ...; None for a table
    args: tuple[Arg, ...]
    entries: tuple[CptEntry, ...]


@dataclass(frozen=True)
class Stmt(Node):
    kind: str  # forall require ensure using search explain report option claim goal bound write
    args: tuple = ()


@dataclass(frozen=True)
class PropertyDecl(Decl):
    name: Name
    stmts: tuple[Stmt, ...]


@dataclass(frozen=True)
class RepairDecl(Decl):
    name: Name
    model: Name
    stmts: tuple[Stmt, ...]


@dataclass(frozen=True)
class Param(Node):
    name: Name
    type: Name
    default: Expr | None


@dataclass(frozen=True)
class PolicyDecl(Decl):
    name: Name
    params: tuple[Param, ...]
    properties: tuple[PropertyDecl, ...]


@dataclass(frozen=True)
class ApplyDecl(Decl):
    policy: Name
    args: tuple[Arg, ...]
    alias: Name | None


@dataclass(frozen=True)
class Module(Node):
    file: str
    decls: tuple[Decl, ...]
    # the `# fairspec: ignore[...]` comments (fairspec.diagnostics.ignores.Ignore), in file order
    ignores: tuple = field(default=(), compare=False)
