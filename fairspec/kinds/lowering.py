"""Lowering an individual-fairness property to the solver-neutral pair problem.

Solvers work in *feature space*: one variable per raw feature value (an
integer for int features and category codes, one 0/1 variable per category
of a one-hot block).  The encoding's scaling is affine per column, so it is
folded into the network's first layer: with model input ``u = scale * v +
shift``, the first layer ``W u + b`` becomes ``(W diag(scale)) v + (W shift +
b)``.  Integrality and domains then stay exact, and a witness found in
feature space maps back to model-input space with :meth:`PairLowering.to_input`.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, replace

import numpy as np

from fairspec import ir
from fairspec.certify.network import code_progression
from fairspec.runtime.encoding import code_at_rank
from fairspec.verdict import Unsupported




#: feature -> (least, most): the closed hull of a relaxed pre-condition's bounds on tied reals, which
#: kinds/pre_relax sets while it decides the relaxation (None: none)
RELAXED_HULL: contextvars.ContextVar = contextvars.ContextVar("fairspec_relaxed_hull", default=None)


@dataclass(frozen=True, eq=False)
class PairLowering:
    lo: np.ndarray
    hi: np.ndarray
    integer: np.ndarray
    onehot_groups: tuple[tuple[int, ...], ...]
    free: tuple[int, ...]
    relaxed: tuple[tuple[int, float], ...]
    scale: np.ndarray  # model input u = scale * v + shift
    shift: np.ndarray
    protected_values: tuple  # per free feature: the list of its value vectors over its columns
    protected_columns: tuple[tuple[int, ...], ...]
    #: (column, its codes sorted) per code column whose table is no progression (``lower_pair(any_codes=True)``, a
    #: tree model's): its variable is the code's rank, its model input the code read from the table (its
    #: scale and shift only a guess); a tree reads it through ``encoder_feeds``, never ``scale * v + shift``
    tables: tuple = ()

    def to_input(self, v) -> np.ndarray:
        u = np.asarray(v, dtype=np.float64) * self.scale + self.shift
        for col, codes in self.tables:
            u[..., col] = code_at_rank(codes, np.asarray(v, dtype=np.float64)[..., col])
        return u

    def to_features(self, u) -> np.ndarray:
        u = np.asarray(u, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            v = np.where(self.scale != 0, (u - self.shift) / np.where(self.scale != 0, self.scale, 1), 0.0)
        for col, codes in self.tables:      # the rank of the nearest code (a data row's input is one exactly)
            v[..., col] = np.argmin(np.abs(np.asarray(codes)[None, :] - np.atleast_1d(u[..., col])[:, None]),
                                    axis=1).reshape(np.shape(u[..., col]))
        return np.where(self.integer, np.round(v), v)




def lower_pair(prop: ir.IndividualFairness, fs: ir.FeatureSet, enc: ir.Encoding, any_codes: bool = False) -> PairLowering:
    """The pair problem in feature space. ``any_codes``: the model is a tree ensemble read through
    ``encoder_feeds`` (each split decided on the code the runtime feeds), so a code table need not be a
    progression: its variable is the code's rank all the same (``PairLowering.tables``)."""
    narrowed = tied_int_bounds(prop, fs) if prop.pre else {}
    hull = RELAXED_HULL.get() or {}     # a relaxed pre-condition's closed hull of bounds on tied reals
    applied: set = set()
    n = enc.width
    lo, hi = np.zeros(n), np.zeros(n)
    integer = np.zeros(n, dtype=bool)
    scale, shift = np.ones(n), np.zeros(n)
    groups, free, relaxed = [], [], []
    pvalues, pcols, tables = [], [], []
    tol = dict(prop.relaxed)
    for c in enc.columns:
        f = fs.get(c.feature)
        dom = f.domain
        cols = tuple(range(c.offset, c.offset + c.width))
        if c.kind == "onehot":
            lo[list(cols)], hi[list(cols)] = 0.0, 1.0
            integer[list(cols)] = True
            groups.append(cols)
            values = [tuple(1.0 if j == k else 0.0 for j in range(c.width)) for k in range(c.width)]
        elif c.kind == "code":
            k = len(c.codes)
            p = code_progression(c.codes)
            if p is None:
                p = _any_table(f.name, c.codes, any_codes)
                tables.append((c.offset, tuple(sorted(float(x) for x in c.codes))))
            # v is the rank of the code in the sorted table (the code itself for codes 0..k-1 in any
            # order); the model's input is first + step * v, computed exactly (code_progression), and
            # x.f == x'.f iff their ranks are equal; code_index maps a rank back to the table's position
            lo[c.offset], hi[c.offset], integer[c.offset] = 0.0, k - 1.0, True
            scale[c.offset], shift[c.offset] = p
            values = [(float(i),) for i in range(k)]
        else:
            if isinstance(dom, ir.Boolean):
                vlo, vhi, is_int = 0.0, 1.0, True
            else:
                vlo, vhi, is_int = float(dom.lo), float(dom.hi), isinstance(dom, ir.IntRange)
            if f.name in narrowed:      # a tied int feature's bounds (x.f == x'.f): one box for both
                vlo, vhi = max(vlo, float(narrowed[f.name][0])), min(vhi, float(narrowed[f.name][1]))
                applied.add(f.name)
            if f.name in hull and not is_int:
                vlo, vhi = max(vlo, hull[f.name][0]), min(vhi, hull[f.name][1])
                if vlo > vhi:
                    raise Unsupported(f"no value of {f.name} meets the pre-condition's bounds")
            lo[c.offset], hi[c.offset], integer[c.offset] = vlo, vhi, is_int
            if c.kind == "minmax" and c.scale is not None:
                scale[c.offset], shift[c.offset] = c.scale, c.shift
            elif c.kind == "minmax":
                span = (c.hi - c.lo) or 1.0
                scale[c.offset], shift[c.offset] = 1.0 / span, -c.lo / span
            elif c.kind == "standard":
                s = c.std or 1.0
                scale[c.offset], shift[c.offset] = 1.0 / s, -c.mean / s
            values = [(float(v),) for v in f.values()] if (f.is_discrete or is_int and vhi - vlo < 64) else None
        if f.name in prop.free:
            free.extend(cols)
            if values is None:
                raise Unsupported(f"protected feature {f.name} has too many values to enumerate counterfactuals")
            pvalues.append(tuple(values))
            pcols.append(cols)
        if f.name in tol:
            if c.kind in ("onehot", "code"):
                raise Unsupported(f"a tolerance on categorical feature {f.name} has no meaning")
            relaxed.append((c.offset, float(tol[f.name])))
    missed = {c.feature for c in enc.columns} & set(narrowed) - applied
    if missed:                  # encoded as no single number (never for an int feature today): not ignored
        raise Unsupported(f"the pre-condition's bound on {sorted(missed)[0]} has no column of the lowering to narrow")
    return PairLowering(lo, hi, integer, tuple(groups), tuple(free), tuple(relaxed), scale, shift,
                        tuple(pvalues), tuple(pcols), tuple(tables))


def _any_table(name: str, codes, any_codes: bool) -> tuple[float, float]:
    """(scale, shift), a guess only, of a code table that is no progression, which a tree model's lowering
    reads by rank (``any_codes``); Unsupported, saying why, where the lowering cannot."""
    q = sorted(float(x) for x in codes)
    if not any_codes:
        raise Unsupported(f"the code table of {name} is not evenly spaced (sorted, first + step * i): the solver "
                          f"backends read a network's input as first + step * rank, exactly, and need such codes "
                          f"(a tree model's take any table of distinct finite codes)")
    if not all(np.isfinite(q)) or len(set(q)) < len(q):
        raise Unsupported(f"the code table of {name} gives two categories one code or has a code that is not a "
                          f"finite number: the solver backends read one variable per code, the code's rank")
    step = (q[-1] - q[0]) / max(len(q) - 1, 1)
    return (step if np.isfinite(step) and step > 0 else 1.0), q[0]


#: why the solvers refuse a further pre-condition they cannot read as a box
PRE_REFUSED = ("is decided by enumeration on a small discrete domain only (at most 4,000,000 ordered pairs, every "
               "feature it reads encoded); the solver backends take a further pre-condition only as bounds "
               "`x.f op c` (or x'.f) on int features the pair ties, joined by `and`")


def tied_int_bounds(prop: ir.IndividualFairness, fs: ir.FeatureSet) -> dict:
    """The further pre-condition as one box shared by x and x': feature -> (least, most) whole number, exact,
    for ``x.f op c`` / ``x'.f op c`` / ``c op x.f`` joined by ``and``, f an int feature the pair ties (neither
    protected nor relaxed: x.f == x'.f, so a bound on either input bounds both). The constant is read as the
    float it is stored as and as the decimal it is written as (fairspec.ir.no_pair); the two must give the
    same whole-number bound. Anything else raises Unsupported (:data:`PRE_REFUSED`)."""
    import math

    from fairspec.ir.no_pair import _as_decimal, _as_float, _bound, _conjuncts

    tied = {f.name for f in fs.features} - set(prop.free) - {f for f, _ in prop.relaxed}
    out: dict = {}
    for e in prop.pre:
        for atom in _conjuncts(e):
            b = _bound(atom)
            feat = fs.get(b[1]) if b is not None else None
            if b is None or b[0] not in (prop.var, prop.var_prime) or feat is None or b[1] not in tied \
                    or not isinstance(feat.domain, ir.IntRange):
                raise Unsupported(f"this pre-condition {PRE_REFUSED}")
            _, name, op, c = b
            got = set()
            for read in (_as_float, _as_decimal):
                p, q = read(c)
                fl, ce = p // q, -(-p // q)                 # floor and ceiling of c, exactly
                got.add({">": (fl + 1, None), ">=": (ce, None), "<": (None, ce - 1), "<=": (None, fl),
                         "==": (ce, fl)}[op])
            if len(got) != 1:
                raise Unsupported(f"the constant {c!r} of the pre-condition gives another whole-number bound as the "
                                  f"float it is stored as than as the decimal it is written as")
            (least, most), = got
            cur = out.get(name, (-math.inf, math.inf))
            out[name] = (cur[0] if least is None else max(cur[0], least), cur[1] if most is None else min(cur[1], most))
    for name, (least, most) in out.items():
        dom = fs.get(name).domain
        if max(least, dom.lo) > min(most, dom.hi):
            raise Unsupported(f"no whole number of {name} meets the pre-condition's bounds")
    return out


def pair_relaxed(prop: ir.IndividualFairness, enc: ir.Encoding, low: PairLowering) -> tuple:
    """The relaxed tolerances of the pair problem: ``|d| < t`` on an integral input is ``|d| <= ceil(t) - 1``;
    on a continuous one the closure ``<= t`` (its witnesses are checked against ``< t`` on replay). An
    integral input whose tolerance admits no difference (``< 1``, ``<= 0.5``) is tied: the same pairs, and
    the refinement's enumeration takes it as part of the individual whatever its number of values."""
    import math

    from fairspec.certify.exact import threshold_of

    names = {c.offset: c.feature for c in enc.columns}
    out = []
    for i, t in low.relaxed:
        f = names.get(i)
        strict_int = f is not None and prop.relaxed_op(f) == "<" and low.integer[i]
        r = (i, float(math.ceil(threshold_of(t)) - 1)) if strict_int else (i, t)
        if not (low.integer[i] and threshold_of(r[1]) < 1):
            out.append(r)
    return tuple(out)


def code_index(c: ir.ColumnEncoding, v) -> np.ndarray:
    """The category index (position in the code table) of a code column's lowering variable ``v``
    (the rank of its code, :func:`lower_pair`); NaN where ``v`` is no code's rank."""
    p = code_progression(c.codes)
    codes = np.asarray(c.codes, dtype=np.float64)
    # a progression's sorted codes are first + step * rank exactly (code_progression); any other table is read
    u = np.round(np.asarray(v, dtype=np.float64)) * p[0] + p[1] if p is not None else code_at_rank(np.sort(codes), v)
    eq = np.atleast_1d(u)[:, None] == codes[None, :]          # NaN equals none
    return np.where(eq.any(axis=1), np.argmax(eq, axis=1), np.nan).reshape(np.shape(u))


def fold_scaling(net, lowering: PairLowering):
    """The network over feature space: the encoding's affine scaling folded into layer 1."""
    from fairspec.models.network import Layer, PLNet

    first = net.layers[0]
    W = first.W * lowering.scale[None, :]
    b = first.b + first.W @ lowering.shift
    return PLNet((Layer(W, b, first.relu),) + tuple(net.layers[1:]), net.output_index, net.final, net.source)


def encoder_feeds(enc: ir.Encoding) -> dict:
    """Model input -> (feature values -> the model inputs the runtime's encoder gives them) for every
    numeric column (raw, minmax, standard), and for every code column (the lowering's variable, the code's rank
    -> the code the runtime's encoder feeds for its category): the tree engines' folded splits are decided on
    these (:func:`fairspec.backends.trees.space.fold`), not on ``scale * v + shift``."""
    from fairspec.backends.boolean.split_points import fed

    out = {}
    for c in enc.columns:
        if c.kind in ("raw", "minmax", "standard") and c.width == 1:
            out[c.offset] = (lambda col: (lambda v: fed(col, v)))(c)
        elif c.kind == "code" and c.width == 1:
            out[c.offset] = (lambda col: (lambda v: _fed_code(col, v)))(c)
    return out


def _fed_code(c: ir.ColumnEncoding, v) -> np.ndarray:
    """The model inputs the runtime's encoder gives the categories of code ranks ``v`` (NaN for no rank)."""
    from fairspec.runtime.encoding import encode

    idx = np.atleast_1d(code_index(c, v)).astype(np.float64)
    ok = np.isfinite(idx)
    one = ir.Encoding(features="", model="", columns=(replace(c, offset=0, width=1),), width=1)
    out = encode(one, {c.feature: np.where(ok, idx, 0.0)}, idx.size)[:, 0]
    return np.where(ok, out, np.nan)
