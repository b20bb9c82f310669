"""Vectorised evaluation of IR expressions over columns of values."""

from __future__ import annotations

import operator
from typing import Callable

import numpy as np

from fairspec import ir
from fairspec.runtime.columnar import Coded

_CMP = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_ARITH = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}


def evaluate(expr: ir.Expr, lookup: Callable[[ir.Expr], np.ndarray], n: int) -> np.ndarray:
    """Evaluate ``expr`` for n rows; ``lookup`` resolves ColumnRef/FeatureRef/ModelOut leaves.

    A leaf may be a ``Coded`` text column (codes into distinct strings): comparing it with a
    constant or a set is decided once per distinct string and looked up per row.
    """

    def ev(e: ir.Expr):
        v = ev_coded(e)
        return v.strings() if isinstance(v, Coded) else v

    def ev_coded(e: ir.Expr):
        if isinstance(e, ir.Cmp) and isinstance(e.right, ir.Const) and not isinstance(e.left, ir.Const):
            a = ev_coded(e.left)
            if isinstance(a, Coded):
                with np.errstate(invalid="ignore"):
                    per = np.asarray(_CMP[e.op](a.categories, e.right.value), dtype=bool)
                return per[a.codes]
        if isinstance(e, ir.Cmp) and isinstance(e.left, ir.Const) and not isinstance(e.right, ir.Const):
            b = ev_coded(e.right)
            if isinstance(b, Coded):
                with np.errstate(invalid="ignore"):
                    per = np.asarray(_CMP[e.op](e.left.value, b.categories), dtype=bool)
                return per[b.codes]
        if isinstance(e, ir.InSet):
            a = ev_coded(e.item)
            if isinstance(a, Coded):
                per = np.isin(a.categories, np.array(list(e.values), dtype=object))
                m = per[a.codes]
                return ~m if e.negated else m
        if isinstance(e, (ir.ColumnRef, ir.FeatureRef, ir.ModelOut)):
            return lookup(e)
        return ev_plain(e)

    def ev_plain(e: ir.Expr):
        if isinstance(e, ir.Const):
            return np.full(n, e.value, dtype=object if isinstance(e.value, str) else None)
        if isinstance(e, (ir.ColumnRef, ir.FeatureRef, ir.ModelOut)):
            return lookup(e)
        if isinstance(e, ir.Cmp):
            a, b = ev(e.left), ev(e.right)
            with np.errstate(invalid="ignore"):
                return np.asarray(_CMP[e.op](a, b), dtype=bool)
        if isinstance(e, ir.InSet):
            a = ev(e.item)
            m = np.isin(a, np.array(list(e.values), dtype=a.dtype if a.dtype != object else object))
            return ~m if e.negated else m
        if isinstance(e, ir.Logic):
            parts = [ev(x).astype(bool) for x in e.args]  # a bool feature's column is 0/1
            out = parts[0]
            for p in parts[1:]:
                out = (out & p) if e.op == "and" else (out | p)
            return out
        if isinstance(e, ir.NotE):
            return ~ev(e.arg).astype(bool)
        if isinstance(e, ir.ArithE):
            with np.errstate(divide="ignore", invalid="ignore"):
                return _ARITH[e.op](ev(e.left).astype(float), ev(e.right).astype(float))
        if isinstance(e, ir.AbsE):
            return np.abs(ev(e.arg).astype(float))
        raise TypeError(f"cannot evaluate {type(e).__name__}")

    return ev(expr)
