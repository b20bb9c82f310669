"""Vectorised evaluation of IR expressions over columns of values."""

from __future__ import annotations

import operator
from typing import Callable

import numpy as np

from fairspec import ir

_CMP = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_ARITH = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}


def evaluate(expr: ir.Expr, lookup: Callable[[ir.Expr], np.ndarray], n: int) -> np.ndarray:
    """Evaluate ``expr`` for n rows; ``lookup`` resolves ColumnRef/FeatureRef/ModelOut leaves."""

    def ev(e: ir.Expr):
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
