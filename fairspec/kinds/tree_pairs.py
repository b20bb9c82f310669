"""Individual fairness of a tree model decided on the library's own runtime.

A tree model's outputs are those of its library (scikit-learn's ``predict`` / ``predict_proba`` /
``decision_function``, XGBoost's and LightGBM's ``Booster.predict``): float32 thresholds,
float32 comparisons, the library's own summation order, its logistic in float32, its tie rule
between classes. The pair problem's **small domains** are therefore decided by enumeration
(issue 20, item 3): every domain point of the encoded features is encoded as the runtime encodes
it (:func:`fairspec.runtime.encoding.encode`), evaluated in one batch by the library, and every
admissible ordered pair is compared by :func:`fairspec.certify.by_enumeration`, exactly and with
the spec's strictness (``<`` / ``<=`` of the post-condition and of each relaxed feature):

* ``holds (proved: enumeration of N pairs)``, or ``violated`` with the first violating pair
  (a domain point pair, replayed on the library) -- ``find`` / ``prove``;
* ``maximize``: the exact largest violation measure over all admissible pairs (``|s - s'|`` for
  ``prob`` / ``logit``, ``min(z, -z')`` in the library's logit for ``label``), reported as the
  interval ``[value, value]`` (its two float neighbours when the exact difference is not a float).

The **label** of a tree model is the library's ``predict`` (scikit-learn: the class
``predict`` returns -- GradientBoosting sends a raw score of exactly 0 to the positive class,
forests and HistGradientBoosting to the negative one); for XGBoost and LightGBM the declared
output compared with its threshold (``p > 0.5`` on the float32 probability, ``margin > 0``).

Cut: at most :data:`MAX_POINTS` domain points and :data:`MAX_PAIRS` ordered pairs (bounded above by
points times the size of the varying sub-grid; a few seconds of library calls and numpy); larger
domains, or a continuous encoded feature, go to the exact encodings (:mod:`fairspec.backends.trees`).
"""

from __future__ import annotations

import math
import time
import warnings
from fractions import Fraction

import numpy as np

from fairspec import ir

__all__ = ["MAX_POINTS", "MAX_PAIRS", "runtime_outputs", "pair_domain", "decide_by_enumeration"]

MAX_POINTS = 400_000
MAX_PAIRS = 4_000_000


def _max_pairs() -> int:
    """:data:`MAX_PAIRS`, or ``FAIRSPEC_ENUMERATE_PAIRS`` (0 sends every domain to the exact
    encodings: the differential harness tests them against enumeration that way)."""
    import os

    v = os.environ.get("FAIRSPEC_ENUMERATE_PAIRS", "").strip()
    try:
        return int(float(v)) if v else MAX_PAIRS
    except ValueError:
        return MAX_PAIRS


# ---------------------------------------------------------------------------------------------
# the library's outputs
# ---------------------------------------------------------------------------------------------

from fairspec.backends.trees.runtime import runtime_outputs  # noqa: E402  (the library's outputs)


# ---------------------------------------------------------------------------------------------
# the finite pair domain, in cells
# ---------------------------------------------------------------------------------------------

MAX_VALUES = 1 << 21          # values of one integer feature split into cells


class Factor:
    """One encoded feature: its domain values (as the runtime encoding reads them), their
    encoded columns, their cells, the representative value of each cell and its role."""

    def __init__(self, name, role, values, columns, U, cell):
        self.name, self.role = name, role
        self.values = values          # (k,)
        self.columns = columns
        self.U = U                    # (k, width)
        self.cell = cell              # (k,) ints 0..nc-1
        self.nc = int(cell.max()) + 1 if len(cell) else 0
        self.rep = np.array([int(np.flatnonzero(cell == c)[0]) for c in range(self.nc)], dtype=np.int64)
        self.size = np.bincount(cell, minlength=self.nc)
        self.intervals = False        # cells given by their two end values (a continuous or wide feature)

    def members(self, c: int) -> np.ndarray:
        return self.values[self.cell == c]


class PairDomain:
    """The product of the factors' cells (tied factors outermost: the points sharing the tied cells
    form consecutive blocks of ``m``) and the admissible ordered pairs (``I``, ``J``) of cell points."""

    def __init__(self, factors, n, m, I, J, tests, free_elsewhere, boxes=None, box_grid=None):
        self.factors = factors
        self.n, self.m = n, m
        self.I, self.J = I, J
        self.tests = tests            # the model's split tests (None: cells are single values)
        self.free_elsewhere = free_elsewhere
        self.points = (None if any(f.intervals for f in factors) else
                       int(np.prod([len(f.values) for f in factors], dtype=np.float64)) if factors else 1)
        self.boxes = boxes            # certify.trees.Boxes of the tied cells (None: their whole product)
        self.box_grid = box_grid

    def grid(self) -> list[np.ndarray]:
        """The cell index of every factor at every point (row-major, the last factor fastest)."""
        if self.box_grid is not None:
            return self.box_grid
        sizes = [f.nc for f in self.factors]
        if not sizes:
            return []
        g = np.meshgrid(*[np.arange(k) for k in sizes], indexing="ij")
        return [a.reshape(-1) for a in g]


def _feature_values(f: ir.Feature) -> np.ndarray | None:
    d = f.domain
    if isinstance(d, ir.Categorical):
        return np.arange(len(d.categories), dtype=np.float64)
    if isinstance(d, ir.Boolean):
        return np.array([0.0, 1.0])
    if isinstance(d, ir.IntRange):
        if d.hi - d.lo + 1 > MAX_VALUES:
            return None
        return np.arange(d.lo, d.hi + 1, dtype=np.float64)
    return None


def _has_two_values(f) -> bool:
    if f is None:
        return False
    d = f.domain
    if isinstance(d, (ir.IntRange, ir.RealRange)):
        return d.hi > d.lo
    if isinstance(d, ir.Categorical):
        return len(d.categories) >= 2
    return True


def _exact_ok(d: np.ndarray, op: str, tol) -> np.ndarray:
    """``d op tol`` for the few distinct values of d, exactly (tol read as the spec wrote it)."""
    from fairspec.certify.exact import decide

    out = np.zeros(d.shape, dtype=bool)
    for v in np.unique(d):
        out[d == v] = decide(float(v), op, tol)
    return out


def _split_tests(ens):
    from fairspec.certify.trees import SplitTest

    seen = {}
    for t in ens.trees:
        for k in np.flatnonzero(t.left >= 0):
            key = (int(t.feature[k]), float(t.threshold[k]), bool(t.strict), bool(t.f32))
            seen.setdefault(key, SplitTest(*key))
    return list(seen.values())


def _encode_one(enc, fs, name, vals):
    """The encoded columns of feature ``name`` at values ``vals`` (the runtime encoding)."""
    from fairspec.runtime.encoding import encode

    k = len(vals)
    values = {c.feature: np.zeros(k) for c in enc.columns}
    values[name] = vals
    X = encode(enc, values, k)
    c = enc.column(name)
    return tuple(range(c.offset, c.offset + c.width)), X[:, c.offset:c.offset + c.width]


def _interval_cells(enc, fs, f, c, tests) -> tuple[np.ndarray, np.ndarray]:
    """Cells of a continuous (or wide integer) feature read by ``tests``: the intervals between the
    values where a test's outcome changes, found by bisection (all tests at once) on the runtime
    encoding and the library's comparison (both monotone in the value), each cell given by its two
    end values."""
    lo, hi = float(f.domain.lo), float(f.domain.hi)
    integer = isinstance(f.domain, ir.IntRange)
    thr = np.array([t.threshold for t in tests], dtype=np.float64)
    strict = np.array([t.strict for t in tests], dtype=bool)
    f32 = np.array([t.f32 for t in tests], dtype=bool)

    def out(v):
        """Outcome of test i at value v[i] (vectors over the tests)."""
        _, U = _encode_one(enc, fs, f.name, np.asarray(v, dtype=np.float64))
        u = U[:, 0]
        u = np.where(f32, u.astype(np.float32).astype(np.float64), u)
        return np.where(strict, u < thr, u <= thr)

    n = len(tests)
    a_out, b_out = out(np.full(n, lo)), out(np.full(n, hi))
    change = a_out != b_out                            # monotone: otherwise one outcome over [lo, hi]
    if integer:
        ka, kb = np.full(n, int(lo), dtype=np.int64), np.full(n, int(hi), dtype=np.int64)
        to_val = lambda k: k.astype(np.float64)       # noqa: E731
    else:
        ka = np.full(n, _key64(lo), dtype=np.int64)
        kb = np.full(n, _key64(hi), dtype=np.int64)
        to_val = _from_key64
    for _ in range(130):
        open_ = change & (kb - ka > 1)
        if not open_.any():
            break
        mid = ka + (kb - ka) // 2
        same = out(to_val(np.where(open_, mid, ka))) == a_out
        ka = np.where(open_ & same, mid, ka)
        kb = np.where(open_ & ~same, mid, kb)
    cuts = sorted({float(x) for x in to_val(ka[change])})
    vals, cell = [], []
    start = lo
    for k, b in enumerate(cuts + [hi]):
        vals.append(start)
        cell.append(k)
        if b != start:
            vals.append(b)
            cell.append(k)
        start = b + 1.0 if integer else float(np.nextafter(b, np.inf))
    return np.array(vals, dtype=np.float64), np.array(cell, dtype=np.int64)


def _key64(x: float) -> int:
    """An int64 that orders float64 values as the reals they are (-0.0 and 0.0 alike)."""
    i = int(np.array([x], dtype=np.float64).view(np.int64)[0])
    return i if i >= 0 else -(i & 0x7FFFFFFFFFFFFFFF)


def _from_key64(k: np.ndarray) -> np.ndarray:
    k = np.asarray(k, dtype=np.int64)
    bits = np.where(k >= 0, k, (-k) | np.int64(-0x8000000000000000))
    return bits.astype(np.int64).view(np.float64)


def build_factor(enc: ir.Encoding, fs: ir.FeatureSet, c, f: ir.Feature, role: str, tests, read,
                 merge: bool = True) -> "Factor | str":
    """The factor of encoded feature ``f`` (column encoding ``c``): its values in cells of the
    split tests that read its columns (every value its own cell without ``tests`` or ``merge``);
    a sentence when it cannot be enumerated."""
    cols = set(range(c.offset, c.offset + c.width))
    vals = _feature_values(f)
    if vals is None:
        if not isinstance(f.domain, (ir.RealRange, ir.IntRange)) or role == "over" or read is None:
            return f"feature {f.name} is continuous or too wide to enumerate"
        if cols & read:
            if c.width != 1 or c.kind not in ("raw", "minmax", "standard") or not merge:
                return f"feature {f.name} is continuous or too wide to enumerate"
            mine = [t for t in tests if t.column in cols]
            vals, cell = _interval_cells(enc, fs, f, c, mine)
            columns, U = _encode_one(enc, fs, f.name, vals)
            fac = Factor(f.name, role, vals, columns, U, cell)
            fac.intervals = True
            return fac
        # never read: its bounds stand for every value (one cell)
        vals = np.array([float(f.domain.lo), float(f.domain.hi)])
        columns, U = _encode_one(enc, fs, f.name, vals)
        fac = Factor(f.name, role, vals, columns, U, np.zeros(2, dtype=np.int64))
        fac.intervals = True
        return fac
    columns, U = _encode_one(enc, fs, f.name, vals)
    if tests is None or not merge:
        cell = np.arange(len(vals), dtype=np.int64)
    else:
        mine = [t for t in tests if t.column in cols]
        if mine:
            sig = np.stack([t.left(U[:, t.column - c.offset]) for t in mine], axis=1)
            _, cell = np.unique(sig, axis=0, return_inverse=True)
            cell = np.asarray(cell, dtype=np.int64).reshape(-1)
            first = {}                        # cells numbered in order of their first value
            for v in cell:
                first.setdefault(int(v), len(first))
            cell = np.array([first[int(v)] for v in cell], dtype=np.int64)
        else:
            cell = np.zeros(len(vals), dtype=np.int64)
    return Factor(f.name, role, vals, columns, U, cell)


def pair_domain(prop: ir.IndividualFairness, fs: ir.FeatureSet, enc: ir.Encoding, ens=None
                ) -> tuple[PairDomain | None, str]:
    """The finite pair domain of ``prop`` in cells of the split tests of ``ens`` (a
    :class:`~fairspec.models.trees.TreeEnsemble` in model-input space; None: every value its own
    cell), or None with the reason when it is not small."""
    if prop.pre:
        return None, "a further pre-condition"
    tol = dict(prop.relaxed)
    tests = _split_tests(ens) if ens is not None else None
    read = {t.column for t in tests} if tests is not None else None
    factors = []
    for c in enc.columns:
        f = fs.get(c.feature)
        if f is None:
            return None, "an encoded feature outside the feature set"
        if f.name in prop.free and f.name in tol:
            return None, f"feature {f.name} is both protected and relaxed"
        role = "free" if f.name in prop.free else ("relaxed" if f.name in tol else "tied")
        fac = build_factor(enc, fs, c, f, role, tests, read)
        if isinstance(fac, str):
            return None, fac
        factors.append(fac)
    order = [f for f in factors if f.role == "tied"] + [f for f in factors if f.role != "tied"]
    varying = [f for f in order if f.role != "tied"]
    # a protected feature the model does not read, with two values or more, lets any pair differ there
    free_elsewhere = any(n not in [c.feature for c in enc.columns] and _has_two_values(fs.get(n)) for n in prop.free)
    n = int(np.prod([f.nc for f in order], dtype=np.float64)) if order else 1
    m = int(np.prod([f.nc for f in varying], dtype=np.float64)) if varying else 1
    if varying:
        sub = np.meshgrid(*[np.arange(f.nc) for f in varying], indexing="ij")
        V = [g.reshape(-1) for g in sub]
    else:
        V = []
    boxes = box_grid = None
    if n > MAX_POINTS or float(n) * m > _max_pairs():
        if tests is not None and m == 1:
            return Unread(varying, tests), ""
        if tests is None or ens is None or float(m) * m > _max_pairs() or m > MAX_POINTS:
            return None, f"{n:,} cells and up to {n * m:,} cell pairs"
        # the tied cells in leaf boxes (certify derives them): every varying combination is a
        # counterfactual whose trees each reach one leaf in a box
        from fairspec.certify.trees import Factor as CFactor, leaf_boxes

        tied = [f for f in order if f.role == "tied"]
        fixed = []
        for r in range(m):
            d = {}
            for f, a in zip(varying, V):
                for j, col in enumerate(f.columns):
                    d[col] = float(f.U[f.rep[a[r]], j])
            fixed.append(d)
        cap = max(1, min(MAX_POINTS // max(m, 1), int(_max_pairs() // max(float(m) * m, 1.0))))
        try:
            boxes = leaf_boxes([_tree_nodes(t) for t in ens.trees],
                               [CFactor(f.name, f.columns, f.U, f.cell) for f in tied], fixed, max_boxes=cap)
        except ValueError:
            boxes = None
        if boxes is None:
            return None, f"{n:,} cells and up to {n * m:,} cell pairs (more than {cap:,} leaf boxes)"
        nb = len(boxes)
        n = nb * m
        box_grid = [np.repeat(boxes.reps[:, i], m) for i in range(len(tied))] + [np.tile(a, nb) for a in V]
    ok = np.ones((m, m), dtype=bool)
    if not free_elsewhere:
        differs = np.zeros((m, m), dtype=bool)
        for f, a in zip(varying, V):
            if f.role == "free":
                same = a[:, None] == a[None, :]
                differs |= ~same | (same & (f.size[a] >= 2)[:, None])
        ok &= differs
    for f, a in zip(varying, V):
        if f.role == "relaxed":
            D = _min_distance(f)
            ok &= _exact_ok(D, prop.relaxed_op(f.name), tol[f.name])[a[:, None], a[None, :]]
    A, C = np.nonzero(ok)
    blocks = np.arange(n // m, dtype=np.int64) * m
    I = (blocks[:, None] + A[None, :]).reshape(-1)
    J = (blocks[:, None] + C[None, :]).reshape(-1)
    return PairDomain(order, n, m, I, J, tests, free_elsewhere, boxes, box_grid), ""


class Unread:
    """The domain is large but no split test tells two values of a varying feature apart."""

    def __init__(self, varying, tests):
        self.varying, self.tests = varying, tests


def _min_distance(f: Factor) -> np.ndarray:
    """(nc, nc): the smallest |a - b| over values a of one cell and b of another."""
    D = np.zeros((f.nc, f.nc))
    sorted_members = [np.sort(f.members(c)) for c in range(f.nc)]
    for a in range(f.nc):
        for b in range(f.nc):
            if a == b:
                D[a, b] = 0.0
                continue
            x, y = sorted_members[a], sorted_members[b]
            k = np.clip(np.searchsorted(y, x), 0, len(y) - 1)
            k0 = np.clip(k - 1, 0, len(y) - 1)
            D[a, b] = float(min(np.abs(x - y[k]).min(), np.abs(x - y[k0]).min()))
    return D


def _closest(f: Factor, a: int, b: int) -> tuple[float, float]:
    """Values of cells a and b at the smallest distance."""
    x, y = np.sort(f.members(a)), np.sort(f.members(b))
    if a == b:
        return float(x[0]), float(x[0])
    k = np.clip(np.searchsorted(y, x), 0, len(y) - 1)
    k0 = np.clip(k - 1, 0, len(y) - 1)
    d1, d0 = np.abs(x - y[k]), np.abs(x - y[k0])
    i1, i0 = int(np.argmin(d1)), int(np.argmin(d0))
    return (float(x[i1]), float(y[k[i1]])) if d1[i1] <= d0[i0] else (float(x[i0]), float(y[k0[i0]]))


def _witness_values(dom: PairDomain, gi: list, gj: list) -> tuple[dict, dict]:
    """Concrete domain values of the cell pair (gi, gj): the pre-condition satisfied."""
    vx, vy = {}, {}
    need_diff = not dom.free_elsewhere and not any(
        f.role == "free" and a != b for f, a, b in zip(dom.factors, gi, gj))
    for f, a, b in zip(dom.factors, gi, gj):
        if f.role == "relaxed":
            vx[f.name], vy[f.name] = _closest(f, a, b)
        elif f.role == "free" and a == b and need_diff and f.size[a] >= 2:
            mem = f.members(a)
            vx[f.name], vy[f.name] = float(mem[0]), float(mem[1])
            need_diff = False
        else:
            vx[f.name] = float(f.values[f.rep[a]])
            vy[f.name] = float(f.values[f.rep[b]])
    return vx, vy


# ---------------------------------------------------------------------------------------------
# the decision
# ---------------------------------------------------------------------------------------------

def _exact_max_diff(a: np.ndarray, b: np.ndarray) -> tuple[int, Fraction]:
    """The index and exact value of the largest ``a[k] - b[k]`` (rounding is monotone, so the
    exact maximum is among the largest float differences)."""
    d = a - b
    top = np.flatnonzero(d == d.max())
    best, arg = None, int(top[0])
    for k in top[:4096]:
        v = Fraction(float(a[k])) - Fraction(float(b[k]))
        if best is None or v > best:
            best, arg = v, int(k)
    return arg, best


def _interval(v: Fraction) -> tuple[float, float, float]:
    """(nearest float, float below or equal, float above or equal) of an exact rational."""
    from fairspec.certify.rounding import float_down, float_up

    return float(v), float_down(v), float_up(v)


def _ensemble(model):
    """The model's trees in model-input space (None when they cannot be read exactly)."""
    from fairspec.models.network import UnsupportedModel

    try:
        return model.tree_ensemble()
    except (UnsupportedModel, ValueError):
        return None


def decide_by_enumeration(prop: ir.IndividualFairness, ctx, mode: str, backend: str, t0: float):
    """The Verdict of ``prop`` by enumeration on the library's runtime, or None when the domain is
    not small (see the module docstring)."""
    from fairspec.certify import Check, by_enumeration
    from fairspec.certify.enumerate import compare_exact
    from fairspec.runtime.encoding import decode_row, encode
    from fairspec.verdict import Verdict, Witness, unknown

    fs = ctx.spec.feature_set(prop.features)
    enc = ctx.encoding(prop.model)
    model = ctx.model(prop.model)
    ens = _ensemble(model)
    dom, why = pair_domain(prop, fs, enc, ens)
    if dom is None and ens is not None:
        dom, why = pair_domain(prop, fs, enc, None)
    if dom is None:
        return None
    if isinstance(dom, Unread):
        from fairspec.certify.trees import Factor as CFactor, prove_unread

        proof = prove_unread(dom.tests, [CFactor(f.name, f.columns, f.U, f.cell) for f in dom.varying],
                             post=prop.post, op=prop.eps_op, eps=prop.eps)
        if proof is None:
            return None
        value = bound = None
        if mode == "maximize" and prop.post != "label":
            value, bound = 0.0, (0.0, 0.0)        # every pair's difference is exactly 0
        return Verdict(prop.name, prop.kind, "holds", how="proved", value=value, bound=bound, backend=backend,
                       seconds=time.perf_counter() - t0, proof=proof, details={"mode": mode},
                       reason="the model never reads the protected or relaxed features where its output can "
                              "change, so x and x' always reach the same leaves")
    details = {"mode": mode, "points": dom.points, "cells": dom.n, "pairs": int(dom.I.size),
               **({"leaf_boxes": len(dom.boxes)} if dom.boxes is not None else {}),
               "runtime": _runtime_name(model)}
    grid = dom.grid()
    rep_values = {f.name: f.values[f.rep[g]] for f, g in zip(dom.factors, grid)}
    X = encode(enc, rep_values, dom.n)
    post = prop.post
    I, J = dom.I, dom.J
    unit = "cell pairs" if dom.tests is not None else "pairs"

    def certified(checks, claim):
        if dom.tests is None:
            return by_enumeration(checks, count=int(I.size), claim=claim, unit="pairs", points=dom.points,
                                  runtime=details["runtime"])
        from fairspec.certify.trees import Factor as CFactor, by_box_enumeration, by_cell_enumeration

        if dom.boxes is not None:
            return by_box_enumeration(dom.boxes, checks, tests=dom.tests,
                                      varying=[CFactor(f.name, f.columns, f.U, f.cell) for f in dom.factors
                                               if f.role != "tied"], count=int(I.size), claim=claim, points=dom.points,
                                      runtime=details["runtime"])
        cf = [CFactor(f.name, f.columns, f.U, f.cell) for f in dom.factors]
        return by_cell_enumeration(dom.tests, cf, checks, count=int(I.size), claim=claim, points=dom.points,
                                   runtime=details["runtime"])

    if dom.I.size == 0:
        res = certified(Check(np.zeros(0), "<=", 0), "no pair of the domain satisfies the pre-condition")
        return Verdict(prop.name, prop.kind, "holds", how="proved", backend=backend,
                       seconds=time.perf_counter() - t0, details=details, proof=res.proof,
                       reason="no pair of the domain satisfies the pre-condition")
    if post == "label":
        L = runtime_outputs(model, X, "label")
        checks = [Check(L[I], "<=", 0), Check(L[J], ">", 0)]
        claim = (f"no two of the {_pts(dom)} domain points that the pre-condition pairs get different labels "
                 f"from the library's predict")
        measure = runtime_outputs(model, X, "logit") if mode == "maximize" else None
        if mode == "maximize" and measure is None:
            from fairspec.models.trees import agg_to_logit

            measure = agg_to_logit(runtime_outputs(model, X, "prob"), "identity")
    else:
        s = runtime_outputs(model, X, post)
        if s is None:
            return unknown(prop, f"the library of model '{prop.model}' has no {post} output", backend=backend,
                           seconds=time.perf_counter() - t0)
        checks = [Check(s[I], prop.eps_op, prop.eps, minus=s[J])]
        claim = (f"|{post}(x) - {post}(x')| {prop.eps_op} {prop.eps:g} for every pair of the {_pts(dom)} domain "
                 "points that the pre-condition pairs, on the library's runtime")
        measure = s
    try:
        res = certified(checks, claim)
    except ValueError as e:           # cells that are not sound: the converter disagrees with itself
        return unknown(prop, f"the enumeration was not certified: {e}", backend=backend,
                       seconds=time.perf_counter() - t0)
    value = bound = None
    best = None
    if mode == "maximize" and measure is not None:
        if post == "label":
            mm = np.minimum(measure[I], -measure[J])
            k = int(np.argmax(mm))
            v = float(mm[k])             # min and negation are exact: the float is the exact value
            value, bound, best = v, (v, v), k
        else:
            k, ex = _exact_max_diff(measure[I], measure[J])
            v, lo, hi = _interval(ex)
            value, bound, best = v, (lo, hi), k
        details["maximum"] = f"exact over every admissible pair (enumeration of {unit})"
    seconds = time.perf_counter() - t0
    if res.proof is not None:
        return Verdict(prop.name, prop.kind, "holds", how="proved", value=value, bound=bound, backend=backend,
                       seconds=seconds, details=details, proof=res.proof,
                       reason=f"enumeration of {int(I.size):,} {unit} on the library's runtime")
    k = res.index
    if mode == "maximize" and post != "label" and best is not None:
        k = best                          # the largest violation is a violation too
    elif mode == "maximize" and post == "label":
        bad = (L[I] == 1) & (L[J] == 0)
        mm = np.where(bad, np.minimum(measure[I], -measure[J]), -np.inf)
        k = int(np.argmax(mm))
    i, j = int(I[k]), int(J[k])
    vx, vy = _witness_values(dom, [g[i] for g in grid], [g[j] for g in grid])
    XW = encode(enc, {n: np.array([vx[n], vy[n]]) for n in vx}, 2)
    x, xp = XW[0], XW[1]
    out = model.replay(XW)
    # the concrete pair replayed: it must violate on the library too
    if post == "label":
        lw = runtime_outputs(model, XW, "label")
        again = bool(lw[0] == 1 and lw[1] == 0)
    else:
        sw = runtime_outputs(model, XW, post)
        again = not bool(compare_exact(sw[:1], prop.eps_op, prop.eps, minus=sw[1:])[0])
    if not again:
        return unknown(prop, "the violating cell pair did not reproduce on a concrete pair of the library's runtime",
                       backend=backend, seconds=seconds, details=details)
    w = Witness(tuple(map(float, x)), tuple(map(float, xp)), decode_row(enc, fs, x), decode_row(enc, fs, xp),
                (float(out[0]), float(out[1])), replayed_by=details["runtime"])
    if value is None and post != "label":
        value = float(Fraction(float(measure[i])) - Fraction(float(measure[j])))
    details["violating_pairs"] = res.violations
    return Verdict(prop.name, prop.kind, "violated", value=value, bound=bound, witness=w, backend=backend,
                   seconds=seconds, details=details,
                   reason=f"{res.violations:,} of {int(I.size):,} {unit} violate it on the library's runtime "
                          "(enumeration)")


def _pts(dom) -> str:
    return "(infinitely many)" if dom.points is None else f"{dom.points:,}"


def _runtime_name(model) -> str:
    from fairspec.backends.data.flips import replayer_name

    return replayer_name(model)


_ = math


# ---------------------------------------------------------------------------------------------
# the exact encodings' answers on large domains
# ---------------------------------------------------------------------------------------------

def tree_relaxed(prop: ir.IndividualFairness, enc: ir.Encoding, low) -> tuple:
    """The lowering's relaxed tolerances with the spec's strictness on integral inputs: ``|v - v'| < t``
    is ``|v - v'| <= ceil(t) - 1`` and ``<= t`` is ``<= floor(t)`` (continuous inputs keep t; their
    witnesses are re-checked exactly)."""
    from fairspec.certify.exact import threshold_of

    tol = dict(prop.relaxed)
    names = [c.feature for c in enc.columns if c.feature in tol]      # the lowering's order
    out = []
    for (col, tf), name in zip(low.relaxed, names):
        if bool(low.integer[col]):
            t = threshold_of(tol[name])
            lim = (math.ceil(t) - 1) if prop.relaxed_op(name) == "<" else math.floor(t)
            out.append((col, float(lim)))
        else:
            out.append((col, tf))
    return tuple(out)


def _feature_point(enc: ir.Encoding, v: np.ndarray) -> dict:
    """Feature values (as the runtime encoding reads them) of a feature-space vector of the lowering."""
    out = {}
    for c in enc.columns:
        seg = np.asarray(v[c.offset:c.offset + c.width], dtype=np.float64)
        out[c.feature] = float(np.argmax(seg)) if c.kind == "onehot" else float(seg[0])
    return out


def encode_features(enc: ir.Encoding, V: np.ndarray) -> np.ndarray:
    """Model-input rows of feature-space rows of the lowering, encoded as the runtime encodes them."""
    from fairspec.runtime.encoding import encode

    V = np.atleast_2d(np.asarray(V, dtype=np.float64))
    pts = [_feature_point(enc, v) for v in V]
    return encode(enc, {c.feature: np.array([p[c.feature] for p in pts]) for c in enc.columns}, V.shape[0])


def _certified_difference_bound(prop, ctx, model, enc) -> float | None:
    """certify.trees.difference_bound of the pair's output difference, for a ``logit`` of a boosted
    model or a ``prob`` of a probability-averaging forest (None otherwise)."""
    from fairspec.certify.trees import difference_bound

    ens = _ensemble(model)
    if ens is None or not ((prop.post == "logit" and ens.link == "logistic")
                           or (prop.post == "prob" and ens.link == "identity")):
        return None
    vary = set()
    for c in enc.columns:
        if c.feature in prop.free or c.feature in dict(prop.relaxed):
            vary |= set(range(c.offset, c.offset + c.width))
    leaves = [t.value[t.left < 0] for t in ens.trees]
    varying = [bool(t.features() & vary) for t in ens.trees]
    ub, _ = difference_bound(leaves, varying, divisor=ens.divisor, base=ens.base,
                             precision="float32" if ens.source == "xgboost" else "float64")
    return ub


def solver_verdict(prop: ir.IndividualFairness, ctx, res, backend: str, seconds: float, details: dict):
    """The Verdict of a tree engine's answer on a domain too large to enumerate: a violation only
    with a concrete domain pair that breaks the property on the library's runtime (pre-condition
    and post-condition checked exactly, strictness as written); a `holds` the engines cannot
    certify is `unknown` (a floating-point solver's word is no proof)."""
    from fairspec.certify.enumerate import compare_exact
    from fairspec.certify.exact import decide
    from fairspec.runtime.encoding import decode_row, encode
    from fairspec.verdict import Verdict, Witness, unknown

    mode = details.get("mode")
    if res.status == "holds":
        return unknown(prop, f"the {backend} tree encoding found no violating pair, but its answer is not certified "
                             "(the domain is too large to enumerate on the library's runtime, and a floating-point "
                             "solver's word is no proof)", backend=backend, seconds=seconds, details=details)
    if res.status != "violated" or res.witness is None:
        return unknown(prop, res.reason or f"the {backend} solver did not decide the property", backend=backend,
                       seconds=seconds, details=details)
    fs = ctx.spec.feature_set(prop.features)
    enc = ctx.encoding(prop.model)
    model = ctx.model(prop.model)
    px, py = _feature_point(enc, res.witness.x), _feature_point(enc, res.witness.x_prime)
    why = None
    for c in enc.columns:
        f = fs.get(c.feature)
        a, b = px[c.feature], py[c.feature]
        d = f.domain
        if isinstance(d, (ir.IntRange, ir.Boolean, ir.Categorical)):
            hi = d.hi if isinstance(d, ir.IntRange) else (1 if isinstance(d, ir.Boolean) else len(d.categories) - 1)
            lo = d.lo if isinstance(d, ir.IntRange) else 0
            if any(v != round(v) or not lo <= v <= hi for v in (a, b)):
                why = f"feature {f.name} is outside its domain"
        elif not (d.lo <= a <= d.hi and d.lo <= b <= d.hi):
            why = f"feature {f.name} is outside its domain"
        tol = dict(prop.relaxed)
        if f.name in tol and not decide(Fraction(a) - Fraction(b) if a >= b else Fraction(b) - Fraction(a),
                                        prop.relaxed_op(f.name), tol[f.name]):
            why = f"feature {f.name} differs beyond its tolerance"
        if f.name not in prop.free and f.name not in tol and a != b:
            why = f"feature {f.name} differs, which the pre-condition ties"
    if why is None and not any(px[n] != py[n] for n in prop.free if n in px) and \
            all(n in px for n in prop.free):
        why = "the pair does not differ in a protected feature"
    if why is None:
        XW = encode(enc, {n: np.array([px[n], py[n]]) for n in px}, 2)
        if prop.post == "label":
            lw = runtime_outputs(model, XW, "label")
            ok = bool(lw[0] != lw[1])
            if ok and lw[0] == 0:
                XW = XW[::-1].copy()
        else:
            sw = runtime_outputs(model, XW, prop.post)
            ok = sw is not None and not bool(compare_exact(sw[:1], prop.eps_op, prop.eps, minus=sw[1:])[0])
            if sw is not None and not ok:
                ok = not bool(compare_exact(sw[1:], prop.eps_op, prop.eps, minus=sw[:1])[0])
                XW = XW[::-1].copy()
        if not ok:
            why = "it does not break the property on the library's runtime"
    if why is not None:
        return unknown(prop, f"the {backend} solver's candidate pair was dropped ({why}); not reported as a violation",
                       backend=backend, seconds=seconds, details=details)
    out = model.replay(XW)
    x, xp = XW[0], XW[1]
    w = Witness(tuple(map(float, x)), tuple(map(float, xp)), decode_row(enc, fs, x), decode_row(enc, fs, xp),
                (float(out[0]), float(out[1])), replayed_by=_runtime_name(model))
    value = bound = None
    if prop.post != "label":
        sw = runtime_outputs(model, XW, prop.post)
        v = float(Fraction(float(sw[0])) - Fraction(float(sw[1])))
        if mode != "maximize":
            value = v
        else:
            ub = _certified_difference_bound(prop, ctx, model, enc)
            if ub is None and prop.post == "prob":
                ub = 1.0                         # a difference of probabilities is at most 1
            if ub is not None:
                value, bound = v, (v, max(v, ub))
                details = {**details, "maximum": "[best replayed pair, certified upper bound]"}
            else:
                details = {**details, "best_value": v, "maximum": "no certified upper bound"}
    return Verdict(prop.name, prop.kind, "violated", value=value, bound=bound, witness=w, backend=backend,
                   seconds=seconds, details=details,
                   reason=f"the {backend} solver found a pair that breaks it on the library's runtime")


# ---------------------------------------------------------------------------------------------
# k-discrimination in cells
# ---------------------------------------------------------------------------------------------

def _tree_nodes(t):
    from fairspec.certify.trees import SplitTest, TreeNodes

    tests = tuple(SplitTest(int(t.feature[k]), float(t.threshold[k]), bool(t.strict), bool(t.f32))
                  if t.left[k] >= 0 else None for k in range(t.n_nodes))
    return TreeNodes(tests, np.asarray(t.left), np.asarray(t.right))


def decide_kdisc(prop: ir.KDiscrimination, ctx, model, enc: ir.Encoding, fs: ir.FeatureSet, t0: float):
    """k-discrimination of a tree model by enumeration: every individual's cell (the features not in
    ``over`` grouped by the split tests that read them) with its K counterfactuals, scored by the
    library in one batch, every bucket counted exactly by certify
    (:func:`fairspec.certify.trees.kdisc_by_cell_enumeration`). A Verdict (holds with its proof and
    the exact max k, or violated with a replayed individual), or None when the cells are too many."""
    from fairspec.certify.trees import Factor as CFactor, kdisc_by_cell_enumeration
    from fairspec.verdict import Verdict, Witness

    if getattr(model, "score_kind", None) not in ("prob", "logit"):
        return None
    ens = _ensemble(model)
    if ens is None:
        return None
    tests = _split_tests(ens)
    read = {t.column for t in tests}
    others, overs = [], []
    for c in enc.columns:
        f = fs.get(c.feature)
        if f is None:
            return None
        role = "over" if f.name in prop.over else "tied"
        fac = build_factor(enc, fs, c, f, role, tests, read, merge=role != "over")
        if isinstance(fac, str):
            return None
        (overs if role == "over" else others).append(fac)
    T = int(np.prod([f.nc for f in others], dtype=np.float64)) if others else 1
    K = int(np.prod([f.nc for f in overs], dtype=np.float64)) if overs else 1
    if K < 1:
        return None
    kg = np.meshgrid(*[np.arange(f.nc) for f in overs], indexing="ij") if overs else []
    kg = [g.reshape(-1) for g in kg]
    boxes = None
    if T * K > MAX_POINTS:
        # too many cells: products of cells on which every tree reaches one leaf (certify derives them)
        from fairspec.certify.trees import leaf_boxes

        nodes = [_tree_nodes(t) for t in ens.trees]
        fixed = []
        for r in range(K):
            d = {}
            for f, g in zip(overs, kg):
                for j, col in enumerate(f.columns):
                    d[col] = float(f.U[f.rep[g[r]], j])
            fixed.append(d)
        try:
            boxes = leaf_boxes(nodes, [CFactor(f.name, f.columns, f.U, f.cell) for f in others], fixed,
                               max_boxes=max(1, MAX_POINTS // K))
        except ValueError:
            return None
        if boxes is None:
            return None
        T = len(boxes)
        tg = [boxes.reps[:, i] for i in range(len(others))]
    else:
        tg = np.meshgrid(*[np.arange(f.nc) for f in others], indexing="ij") if others else []
        tg = [g.reshape(-1) for g in tg]
    values = {f.name: np.repeat(f.values[f.rep[g]], K) for f, g in zip(others, tg)}
    for f, g in zip(overs, kg):
        values[f.name] = np.tile(f.values[f.rep[g]], T)
    from fairspec.runtime.encoding import decode_row, encode

    X = encode(enc, values, T * K)
    s = np.asarray(model.score(X), dtype=np.float64).reshape(-1)
    logit = model.score_kind == "logit"
    points = (None if any(f.intervals for f in others) else
              int(np.prod([len(f.values) for f in others], dtype=np.float64)) if others else 1)
    claim = (f"k_discrimination over {{{', '.join(prop.over)}}} with eps = {prop.eps!r} is {prop.op} {prop.k} "
             f"for all {'(infinitely many)' if points is None else f'{points:,}'} individuals ({T:,} cells of the model's "
             "split tests)")
    cf = [CFactor(f.name, f.columns, f.U, f.cell) for f in others + overs]
    try:
        if boxes is not None:
            from fairspec.certify.trees import kdisc_by_boxes

            res = kdisc_by_boxes(boxes, s, K=K, eps=prop.eps, op=prop.op, k=prop.k, logit=logit, claim=claim,
                                 points=points * K)
        else:
            res = kdisc_by_cell_enumeration(tests, cf, s, K=K, eps=prop.eps, op=prop.op, k=prop.k, logit=logit,
                                            claim=claim, points=None if points is None else points * K)
    except ValueError:
        return None
    seconds = time.perf_counter() - t0
    details = {"engine": "enumeration in cells" if boxes is None else "enumeration in leaf boxes",
               "individuals": points, "cells" if boxes is None else "boxes": T, "K": K,
               "max_k": int(res.k_hi.max()) if T else 0, "max_k_lower": int(res.k_lo.max()) if T else 0}
    if res.proof is not None:
        return Verdict(prop.name, prop.kind, "holds", how="proved", value=float(details["max_k"]), backend="search",
                       seconds=seconds, details=details, proof=res.proof,
                       reason=f"every individual (in {T:,} {'cells' if boxes is None else 'leaf boxes'} of the tree "
                              f"model's split tests) and its {K} "
                              f"counterfactuals evaluated on the library: max k = {details['max_k']} "
                              f"(claim: k {prop.op} {prop.k})")
    bad = res.k_lo >= prop.k if prop.op == "<" else res.k_lo > prop.k
    from fairspec.certify.enumerate import kdisc_by_enumeration

    for i in np.flatnonzero(bad)[:5]:
        U = X[i * K:(i + 1) * K]
        replayed = np.asarray(model.replay(U), dtype=np.float64).reshape(-1)
        again = kdisc_by_enumeration(replayed, K=K, eps=prop.eps, op=prop.op, k=prop.k, logit=logit, claim=claim)
        if again.proof is not None:
            continue
        kr = int(again.k_lo[0])
        probs = replayed if not logit else 1.0 / (1.0 + np.exp(-replayed))
        lo_i, hi_i = int(np.argmin(probs)), int(np.argmax(probs))
        details["counterfactuals"] = [{"features": {f: decode_row(enc, fs, u)[f] for f in prop.over},
                                       "prob": float(p)} for u, p in zip(U, probs)]
        w = Witness(tuple(map(float, U[lo_i])), tuple(map(float, U[hi_i])), decode_row(enc, fs, U[lo_i]),
                    decode_row(enc, fs, U[hi_i]), (float(replayed[lo_i]), float(replayed[hi_i])),
                    replayed_by=_runtime_name(model))
        return Verdict(prop.name, prop.kind, "violated", value=float(kr), witness=w, backend="search",
                       seconds=time.perf_counter() - t0, details=details,
                       reason=f"enumerating every individual in cells of the tree model's split tests: one whose "
                              f"{K} counterfactuals over {' x '.join(prop.over)} fall into k = {kr} clusters of "
                              f"width {prop.eps:g} (claim: k {prop.op} {prop.k})")
    return None
