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
  ``prob`` / ``logit``, ``min(z - c, c - z')`` in the library's margin for ``label``, c the margin its
  label cuts at: 0, or an XGBoost binary:logitraw model's 1/2 read by its predict; over the flipping
  pairs of a violation, :func:`label_meaning`), reported as the
  interval ``[value, value]`` (its two float neighbours when the exact difference is not a float);
  a ``label`` on a model whose library outputs no margin (a probability-averaging forest) gets no
  value (:data:`NO_MARGIN`), as a network whose runtime outputs no logit gets none.

The **label** of a tree model is the library's ``predict`` (scikit-learn: the class
``predict`` returns -- GradientBoosting sends a raw score of exactly 0 to the positive class,
forests and HistGradientBoosting to the negative one); for XGBoost and LightGBM the declared
output compared with its threshold (``p > 0.5`` on the float32 probability, ``margin > 0``).

Cut: at most :data:`MAX_POINTS` domain points and :data:`MAX_PAIRS` ordered pairs (bounded above by
points times the size of the varying sub-grid; a few seconds of library calls and numpy); larger
domains, or a continuous encoded feature, go to the exact encodings (:mod:`fairspec.backends.trees`).
"""

from __future__ import annotations

import time
from fractions import Fraction

import numpy as np

from fairspec import ir
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly
from fairspec.kinds.tree_cells import (MAX_POINTS, Factor, build_factor, exact_ok, fixed_columns, has_two_values,
                                       refuse_two_logits, runtime_name, split_tests, tree_ensemble, tree_nodes)

__all__ = ["MAX_POINTS", "MAX_PAIRS", "runtime_outputs", "pair_domain", "decide_by_enumeration"]

MAX_PAIRS = 4_000_000
#: ``details["maximum"]`` of a label post's maximize on a model whose library outputs no margin (a
#: probability-averaging forest: scikit-learn's RandomForest, ExtraTrees, DecisionTree): min(z, -z')
#: would be a logit of the averaged probability computed by fairspec, not a value the runtime computes
NO_MARGIN = ("no value: label's measure min(z, -z') is a logit, and the model's runtime outputs a probability "
             "and no margin; maximize the prob post for a value")
#: tree walks the leaf boxes of a large domain may take (each box walks every tree for each varying
#: combination): a 100-tree forest gets at most 2,500 boxes, so a domain it cannot cover in that many
#: fails in seconds and goes to the exact encodings / the branch and bound (kinds/tree_boxes.py)
MAX_LEAF_WALKS = 1_000_000


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


def pair_domain(prop: ir.IndividualFairness, fs: ir.FeatureSet, enc: ir.Encoding, ens=None, with_boxes: bool = True
                ) -> tuple[PairDomain | None, str]:
    """The finite pair domain of ``prop`` in cells of the split tests of ``ens`` (a
    :class:`~fairspec.models.trees.TreeEnsemble` in model-input space; None: every value its own
    cell), or None with the reason when it is not small. ``with_boxes=False``: no leaf boxes of the tied
    cells (the caller has the branch and bound of kinds/tree_boxes.py, which finds them lazily)."""
    if prop.pre:                # read on values, not on the split tests' cells (kinds/pair_pre.py)
        from fairspec.kinds.pair_pre import pre_features

        if ens is not None:
            return None, "a further pre-condition: every value its own cell"
        if set(pre_features(prop)) - {c.feature for c in enc.columns}:
            return None, "a further pre-condition on a feature the model does not read"
    tol = dict(prop.relaxed)
    tests = split_tests(ens) if ens is not None else None
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
    free_elsewhere = any(n not in [c.feature for c in enc.columns] and has_two_values(fs.get(n)) for n in prop.free)
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
        if tests is None or ens is None or float(m) * m > _max_pairs() or m > MAX_POINTS or not with_boxes:
            return None, f"{n:,} cells and up to {n * m:,} cell pairs"
        # the tied cells in leaf boxes (certify derives them): every varying combination is a
        # counterfactual whose trees each reach one leaf in a box
        from fairspec.certify.trees import Factor as CFactor, leaf_boxes

        tied = [f for f in order if f.role == "tied"]
        fixed = fixed_columns(varying, V, m)
        cap = max(1, min(MAX_POINTS // max(m, 1), int(_max_pairs() // max(float(m) * m, 1.0)),
                         MAX_LEAF_WALKS // (2 * m * max(len(ens.trees), 1))))
        try:
            boxes = leaf_boxes([tree_nodes(t) for t in ens.trees],
                               [CFactor(f.name, f.columns, f.U, f.cell) for f in tied], fixed, max_boxes=cap)
        except ValueError:
            boxes = None
        if boxes is None:
            return None, f"{n:,} cells and up to {n * m:,} cell pairs (more than {cap:,} leaf boxes)"
        nb = len(boxes)
        n = nb * m
        box_grid = [np.repeat(boxes.reps[:, i], m) for i in range(len(tied))] + [np.tile(a, nb) for a in V]
    ok = admissible_cell_pairs(prop, varying, V, m, free_elsewhere, tol)
    A, C = np.nonzero(ok)
    blocks = np.arange(n // m, dtype=np.int64) * m
    I = (blocks[:, None] + A[None, :]).reshape(-1)
    J = (blocks[:, None] + C[None, :]).reshape(-1)
    return PairDomain(order, n, m, I, J, tests, free_elsewhere, boxes, box_grid), ""


class Unread:
    """The domain is large but no split test tells two values of a varying feature apart."""

    def __init__(self, varying, tests):
        self.varying, self.tests = varying, tests


def admissible_cell_pairs(prop: ir.IndividualFairness, varying, V, m: int, free_elsewhere: bool, tol) -> np.ndarray:
    """(m, m): may a pair take the varying factors' cell combinations (i, j)? A protected (free)
    factor must differ somewhere -- another cell, or the same cell holding two values -- unless a
    free feature outside the cells differs anyway (``free_elsewhere``); a relaxed factor's cells
    must be within its tolerance (the spec's ``<`` / ``<=``, exactly)."""
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
            ok &= exact_ok(_min_distance(f), prop.relaxed_op(f.name), tol[f.name])[a[:, None], a[None, :]]
    return ok


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
    exact maximum is among the largest float differences; among those, all of them, the largest
    TwoSum error term, exact in float64, is the largest exact difference)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    d = a - b
    top = np.flatnonzero(d == d.max())
    x, y = a[top], -b[top]
    if np.all(np.isfinite(x)) and np.all(np.isfinite(y)) and np.all(np.isfinite(d[top])):
        s = x + y
        yv = s - x
        err = (x - (s - yv)) + (y - yv)                 # a[k] - b[k] == s + err exactly; s the same for all
        if np.all(np.isfinite(err)):
            top = top[err == err.max()][:1]             # each one's exact difference is the maximum
    best, arg = None, int(top[0])
    for k in top:
        v = Fraction(float(a[k])) - Fraction(float(b[k]))
        if best is None or v > best:
            best, arg = v, int(k)
    return arg, best


def _interval(v: Fraction) -> tuple[float, float, float]:
    """(nearest float, float below or equal, float above or equal) of an exact rational."""
    from fairspec.certify.rounding import float_down, float_up

    return float(v), float_down(v), float_up(v)


def exact_maximum(a: np.ndarray, b: np.ndarray) -> tuple[float, tuple[float, float], int]:
    """(value, bound, index) of the largest ``a[k] - b[k]``: the nearest float to the exact maximum,
    the floats below and above it, and the pair's index."""
    k, ex = _exact_max_diff(a, b)
    v, lo, hi = _interval(ex)
    return v, (lo, hi), k


def certify_pairs(dom: PairDomain, checks, count: int, claim: str, runtime: str, unit: str = "pairs", **detail):
    """The enumeration certificate of ``checks`` (``count`` elements) over the domain's pairs: plain
    pairs without cells (``unit``: what they are), else leaf boxes or cell pairs; ValueError when the
    cells are not sound."""
    from fairspec.certify import by_enumeration

    if dom.tests is None:
        return by_enumeration(checks, count=count, claim=claim, unit=unit, points=dom.points, runtime=runtime,
                              **detail)
    from fairspec.certify.trees import Factor as CFactor, by_box_enumeration, by_cell_enumeration

    if dom.boxes is not None:
        return by_box_enumeration(dom.boxes, checks, tests=dom.tests,
                                  varying=[CFactor(f.name, f.columns, f.U, f.cell) for f in dom.factors
                                           if f.role != "tied"], count=count, claim=claim, points=dom.points,
                                  runtime=runtime)
    cf = [CFactor(f.name, f.columns, f.U, f.cell) for f in dom.factors]
    return by_cell_enumeration(dom.tests, cf, checks, count=count, claim=claim, points=dom.points, runtime=runtime)


def proved_by_enumeration(prop, res, pairs: int, unit: str, value, bound, backend: str, seconds: float,
                          details: dict):
    """The ``holds (proved)`` Verdict of an enumeration over ``pairs`` pairs whose certificate
    ``res`` carries the Proof."""
    from fairspec.verdict import Verdict

    return Verdict(prop.name, prop.kind, "holds", how="proved", value=value, bound=bound, backend=backend,
                   seconds=seconds, details=details, proof=res.proof,
                   reason=f"enumeration of {pairs:,} {unit} on the library's runtime")


def decide_by_enumeration(prop: ir.IndividualFairness, ctx, mode: str, backend: str, t0: float):
    """The Verdict of ``prop`` by enumeration on the library's runtime, or None when the domain is
    not small (see the module docstring)."""
    from fairspec.certify import Check
    from fairspec.certify.enumerate import compare_exact
    from fairspec.runtime.encoding import decode_row, encode
    from fairspec.verdict import Verdict, Witness, unknown

    fs = ctx.spec.feature_set(prop.features)
    enc = ctx.encoding(prop.model)
    model = ctx.model(prop.model)
    refuse_two_logits(model, prop.post)
    ens = tree_ensemble(model)
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
    from fairspec.kinds.pair_pre import restrict_domain

    from fairspec.kinds.pre_relax import pre_words

    pc = pre_words()                  # inside a relaxed run (kinds/pre_relax), the relaxed one it reads
    pre, meeting, extra = restrict_domain(prop, fs, dom, pc, readings=True)
    if pre is not None and pre.parted:      # each reading admits its own pairs: proved over their union (pair_pre)
        from fairspec.kinds.pair_pre import EITHER
        from fairspec.kinds.pre_readings import readings_maximum
        if mode == "maximize":          # each reading its own maximum: kinds/pre_readings.py
            return readings_maximum(lambda m: decide_by_enumeration(prop, ctx, m, backend, t0), pre.parted)
        pc = f"{pc}{EITHER}"
    details = {"mode": mode, "points": dom.points, "cells": dom.n, "pairs": meeting,
               **({"leaf_boxes": len(dom.boxes)} if dom.boxes is not None else {}),
               "runtime": runtime_name(model)}
    grid = dom.grid()
    rep_values = {f.name: f.values[f.rep[g]] for f, g in zip(dom.factors, grid)}
    X = encode(enc, rep_values, dom.n)
    post = prop.post
    I, J = dom.I, dom.J
    unit = "cell pairs" if dom.tests is not None else "pairs"
    if pre is not None:
        details["pre_condition"] = f"admissible ordered pairs meeting {pc}"
        unit = f"ordered pairs meeting {pc}"

    def certified(checks, claim):
        return certify_pairs(dom, checks, int(I.size), claim, details["runtime"], **extra)

    if dom.I.size == 0:
        res = certified(Check(np.zeros(0), "<=", 0), f"no pair of the domain satisfies {pc}")
        return Verdict(prop.name, prop.kind, "holds", how="proved", backend=backend,
                       seconds=time.perf_counter() - t0, details=details, proof=res.proof,
                       reason=f"no pair of the domain satisfies {pc}")
    if post == "label":
        L = runtime_outputs(model, X, "label")
        checks = [Check(L[I], "<=", 0), Check(L[J], ">", 0)]
        claim = (f"no two of the {_pts(dom)} domain points that {pc} pairs get different labels "
                 f"from the library's predict")
        measure, margin, cut = _label_measure(model, X) if mode == "maximize" else (None, False, 0.0)
    else:
        s = runtime_outputs(model, X, post)
        if s is None:
            return unknown(prop, f"the library of model '{prop.model}' has no {post} output", backend=backend,
                           seconds=time.perf_counter() - t0)
        checks = [Check(s[I], prop.eps_op, prop.eps, minus=s[J])]
        claim = (f"|{post}(x) - {post}(x')| {prop.eps_op} {_spec_number(prop.eps)} for every pair of the {_pts(dom)} domain "
                 f"points that {pc} pairs, on the library's runtime")
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
            # min(z - c, c - z') over the pairs the verdict is about (LABEL_MAXIMUM): the flipping pairs
            # (x labelled 1, x' 0) of a violation, every pair of a holds; exact with the cut c = 0 (min
            # and negation), else its float neighbours when the exact value is not a float
            flips = None if res.proof is not None else (L[I] == 1) & (L[J] == 0)
            best, ex = label_maximum(measure[I], measure[J], cut, mask=flips)
            if not margin:
                details["maximum"] = NO_MARGIN   # the measure only picks the witness below
            else:
                value, lo, hi = _interval(ex)
                bound = (lo, hi)
                details["maximum"] = label_meaning(res.proof is not None, cut, f"enumeration of {unit}")
        else:
            value, bound, best = exact_maximum(measure[I], measure[J])
            details["maximum"] = f"exact over every admissible pair (enumeration of {unit})"
    seconds = time.perf_counter() - t0
    if res.proof is not None:
        return proved_by_enumeration(prop, res, meeting, unit, value, bound, backend, seconds, details)
    from fairspec.kinds.pair_pre import READINGS, readings_witness

    k = readings_witness(pre, I[res.bad], J[res.bad], res.bad)    # res.index, or the first violation both readings admit
    if k is None:
        return unknown(prop, READINGS.format(at=pre.parted, n=pre.ordered_pairs(I[res.bad], J[res.bad])),
                       backend=backend, seconds=seconds, details=details)
    if mode == "maximize" and best is not None:
        k = best                          # the largest violation is a violation too
    elif post != "label" and pre is None:
        # every pair is evaluated: the witness is the largest violation, as a network's enumeration reports it
        # (the largest |s - s'| breaks the bound if any pair does), so `value` means the same for every model
        k = exact_maximum(measure[I], measure[J])[2]
    i, j = int(I[k]), int(J[k])
    vx, vy = _witness_values(dom, [g[i] for g in grid], [g[j] for g in grid])
    XW = encode(enc, {n: np.array([vx[n], vy[n]]) for n in vx}, 2)
    x, xp = XW[0], XW[1]
    # the concrete pair replayed: it must violate on the library too; the witness shows what the post
    # reads (the library's labels, probabilities or margins), as the leaf boxes' and the class posts' do
    out = runtime_outputs(model, XW, post)
    if post == "label":
        again = bool(out[0] == 1 and out[1] == 0)
    else:
        again = not bool(compare_exact(out[:1], prop.eps_op, prop.eps, minus=out[1:])[0])
    if not again:
        return unknown(prop, "the violating cell pair did not reproduce on a concrete pair of the library's runtime",
                       backend=backend, seconds=seconds, details=details)
    w = Witness(tuple(map(float, x)), tuple(map(float, xp)), decode_row(enc, fs, x, vx), decode_row(enc, fs, xp, vy),
                (float(out[0]), float(out[1])), replayed_by=details["runtime"])
    if value is None and post != "label":      # the pair's measure rounded down (the nearest may lie above it)
        from fairspec.kinds.pair_runtime import pair_measure

        value = pair_measure("value", "", measure[i], measure[j])
    from fairspec.certify.enumerate import ordered_pairs

    # ordered pairs, as I and J hold them: a label comparison fails in one order of a pair with two labels
    details["violating_pairs"] = violating = (ordered_pairs(I[res.bad], J[res.bad]) if pre is None else
                                              pre.ordered_pairs(I[res.bad], J[res.bad], False))   # both readings'
    from fairspec.kinds.pair_pre import violating_words     # both readings' pairs over both readings' pairs

    if pre is not None:
        w = pre.in_order(w, i, j)   # the order of the pair that meets the pre-condition (both readings)
    return Verdict(prop.name, prop.kind, "violated", value=value, bound=bound, witness=w, backend=backend,
                   seconds=seconds, details=details,
                   reason=f"{violating_words(pre, I, J, violating, meeting, 'admissible ordered ' * (pre is None) + unit)} violate it on the library's "
                          "runtime (enumeration)")


def _pts(dom) -> str:
    return "(infinitely many)" if dom.points is None else f"{dom.points:,}"


# ---------------------------------------------------------------------------------------------
# a label post's measure: the library's margin, read exactly
# ---------------------------------------------------------------------------------------------

def _label_measure(model, X) -> tuple[np.ndarray, bool, float]:
    """(the logit z a ``label`` post's maximize measures, ``min(z - c, c - z')``; whether it is the
    library's own margin; the cut c on it where the library's label flips): the margin and the cut
    every tree engine reads (``_Boosted.label_cut``, ``TreeEnsemble.cut``: 0, or an XGBoost
    binary:logitraw model's declared rule, 1/2 read by its predict), or the logit of the library's
    probability computed here for a model with none (a probability-averaging forest: False, cut 0)."""
    measure = runtime_outputs(model, X, "logit")
    if measure is not None:
        return measure, True, float(getattr(model, "label_cut", 0.0) or 0.0)
    from fairspec.models.trees import agg_to_logit

    return agg_to_logit(runtime_outputs(model, X, "prob"), "identity"), False, 0.0


def label_meaning(holds: bool, cut: float, how: str) -> str:
    """``details["maximum"]`` of a ``label`` post's exact maximize value: what the number is, so that a
    0 (a pair at the cut) or a value of either sign inside the band where the library's probability
    rounds to 1/2 (XGBoost's float32 ``p > 0.5``) reads one way. The value is the largest
    ``min(z - c, c - z')`` in the library's margin z over the pairs the verdict is about -- the flipping
    pairs (x labelled 1, x' 0) of a ``violated``, every admissible pair of a ``holds`` (none flips) --
    as a network's is (there every flipping pair measures >= 0 and every other <= 0, so the maximum
    over every pair is the flipping pairs' when one flips); its sign is not the verdict."""
    c = f"c = {_spec_number(cut)}"
    if holds:
        return (f"exact over every admissible pair ({how}): the largest min(z - c, c - z'), {c}, in the library's "
                f"margin z; no pair's labels differ -- the verdict says so, not the value's sign (0: a pair at the "
                f"cut; above 0: margins on both sides of c whose probabilities the library rounds alike)")
    return (f"exact over the admissible pairs whose labels differ, x labelled 1 and x' 0 ({how}): the largest "
            f"min(z - c, c - z'), {c}, in the library's margin z (0: a flipping pair at the cut; below 0: one whose "
            f"probabilities the library rounds apart on one side of c)")


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(a + b rounded, its error): a + b == s + e exactly when both are finite."""
    s = a + b
    bv = s - a
    return s, (a - (s - bv)) + (b - bv)


def label_maximum(z: np.ndarray, zp: np.ndarray, cut: float, mask: np.ndarray | None = None) -> tuple[int, Fraction]:
    """The index and exact value of the largest ``min(z[k] - cut, cut - zp[k])`` (over ``mask``): the
    float minimum of the rounded differences is the rounded exact minimum (rounding is monotone), so
    the exact maximum is among the largest floats; among those each one's exact value is that float
    plus the TwoSum error of the difference(s) rounding to it, exact in float64."""
    z = np.asarray(z, dtype=np.float64)
    zp = np.asarray(zp, dtype=np.float64)
    c = np.full_like(z, float(cut))
    s1, e1 = _two_sum(z, -c)
    s2, e2 = _two_sum(c, -zp)
    mm = np.minimum(s1, s2)
    if mask is not None:
        mm = np.where(mask, mm, -np.inf)
    top = np.flatnonzero(mm == mm.max())
    v = mm[top[0]]
    if np.isfinite(v) and np.all(np.isfinite(e1[top])) and np.all(np.isfinite(e2[top])):
        e = np.minimum(np.where(s1[top] == v, e1[top], np.inf), np.where(s2[top] == v, e2[top], np.inf))
        top = top[e == e.max()][:1]
    ex = Fraction(float(cut))
    best, arg = None, int(top[0])
    for k in top:
        val = min(Fraction(float(z[k])) - ex, ex - Fraction(float(zp[k])))
        if best is None or val > best:
            best, arg = val, int(k)
    return arg, best
