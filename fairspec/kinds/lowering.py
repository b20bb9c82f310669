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
from dataclasses import dataclass

import numpy as np

from fairspec import ir
from fairspec.certify.network import code_progression
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

    def to_input(self, v) -> np.ndarray:
        return np.asarray(v, dtype=np.float64) * self.scale + self.shift

    def to_features(self, u) -> np.ndarray:
        u = np.asarray(u, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            v = np.where(self.scale != 0, (u - self.shift) / np.where(self.scale != 0, self.scale, 1), 0.0)
        return np.where(self.integer, np.round(v), v)


def lower_pair(prop: ir.IndividualFairness, fs: ir.FeatureSet, enc: ir.Encoding) -> PairLowering:
    narrowed = tied_int_bounds(prop, fs) if prop.pre else {}
    hull = RELAXED_HULL.get() or {}     # a relaxed pre-condition's closed hull of bounds on tied reals
    applied: set = set()
    n = enc.width
    lo, hi = np.zeros(n), np.zeros(n)
    integer = np.zeros(n, dtype=bool)
    scale, shift = np.ones(n), np.zeros(n)
    groups, free, relaxed = [], [], []
    pvalues, pcols = [], []
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
                raise Unsupported(f"the code table of {f.name} is not evenly spaced (sorted, first + step * i); "
                                  f"solver backends need such codes")
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
                        tuple(pvalues), tuple(pcols))


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
    step, first = code_progression(c.codes) or (1.0, 0.0)
    u = np.round(np.asarray(v, dtype=np.float64)) * step + first
    codes = np.asarray(c.codes, dtype=np.float64)
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
    numeric column (raw, minmax, standard): the tree engines' folded splits are decided on these
    (:func:`fairspec.backends.trees.space.fold`), not on ``scale * v + shift``."""
    from fairspec.backends.boolean.split_points import fed

    out = {}
    for c in enc.columns:
        if c.kind in ("raw", "minmax", "standard") and c.width == 1:
            out[c.offset] = (lambda col: (lambda v: fed(col, v)))(c)
    return out
