"""Certified branch and bound over leaf boxes: a tree model's K output columns on a pair domain too
large to enumerate (issue 25: ``class``, one or every class's ``prob``, a regression's ``value``).

The pair domain is the one of :mod:`fairspec.certify.trees`: **tied** factors (x and x' share
their value) given in cells of the model's split tests, **varying** factors (protected, relaxed)
whose cell combinations ``combos`` are enumerated, and the admissible ordered ``pairs`` (a, b) of
combinations. A **box** is a product of sets of cells of the tied factors (one mask per factor,
the whole domain at the start). For a box and a combination, each tree of the model (a
:class:`Scores` unit: its nodes and the values its leaves add to each of the K columns) reaches a
set of leaves; summing each tree's smallest / largest reachable leaf value bounds every column
(and every difference of two columns, tree by tree) over the box. A box and an open pair (a, b)
is then

* **fair by bounds** when the bounds leave no doubt (``class``: one class is certain for x and
  for x' and it is the same; ``value`` / linear ``prob``: the largest ``S(x) - S(x')`` -- a tree
  reading no varying input reaches the same leaf for both and adds 0 -- is below ``eps``;
  ``prob`` of a softmax model: the softmax bounds of the margins);
* **evaluated** when every tree reaches a single leaf for x and for x' (a *leaf box*): the model's
  outputs are then the same at every point of the box, so the caller's ``evaluate`` (the library's
  own runtime at one concrete pair of the box) decides it exactly, with its float32/float64
  arithmetic, its summation order and its tie rule between classes (certify compares the outputs
  exactly, as the spec writes ``<`` / ``<=``);
* **violated by bounds** when every pair of the box breaks it (then one is evaluated as witness);
* otherwise **split** in two by the outcome of one split test the box straddles.

With every (box, pair) closed the property holds: a ``bab-certificate`` whose leaves are the
closed boxes (certify derived the splits itself, so they cover the domain). ``maximize`` keeps
the exact largest evaluated difference and closes a box whose upper bound does not exceed it:
the answer is ``[best, max(best, open bounds)]``.

Bounds are sound for the library's runtime with a guard: every column's runtime value is within
``E = 2 gamma(2n + 8, u) * (|base| + (sum of the largest |leaf| of each tree) / divisor)`` of the
exact sum of the leaves it reached (any summation order; ``u`` of the runtime's float32 / float64), plus
the tolerance to which the tree converters reproduce the library (:data:`CONVERTER_TOL`,
absolute and relative, what :func:`fairspec.models.trees._self_check` checks); a softmax in
float32 adds :data:`SOFTMAX_TOL` per probability. Only decisions farther than the guard from the
threshold are taken by bounds; closer ones are split to leaf boxes and evaluated on the runtime.

What certify trusts (as for the enumeration proofs): the split tests and leaf values it is given
are the model's (each converter checked against the library), and ``evaluate`` returns the
library's outputs at the concrete pair it was asked about. Only numpy and certify's own modules.
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Sequence

import numpy as np

from fairspec.certify.enumerate import compare_exact
from fairspec.certify.exact import threshold_of
from fairspec.certify.proof import _mint
from fairspec.certify.rounding import U32, U64, float_up, gamma
from fairspec.certify.trees import Factor, SplitTest, check_cells

__all__ = ["Scores", "BoxAnswer", "decide_pairs", "CONVERTER_TOL", "SOFTMAX_TOL"]

CONVERTER_TOL = 1e-5          # absolute and relative: the converters' self-check tolerance
SOFTMAX_TOL = 2.0 ** -16      # a float32 softmax probability is within this of the exact one (K < 100)


@dataclass(frozen=True, eq=False)
class Scores:
    """A tree model's K output columns: ``trees[i]`` adds ``values[i][leaf, c]`` to column c, each
    column is ``base[c] + (sum of the leaves' values) / divisor``. ``readout``: ``"linear"`` (the
    columns are the outputs: a forest's class probabilities, a regression's value) or
    ``"softmax"`` (the columns are margins; a class's probability is their softmax). ``precision``:
    the runtime's summation (``"float32"`` for XGBoost, ``"float64"`` otherwise)."""

    trees: tuple
    values: tuple
    base: tuple
    divisor: float = 1.0
    readout: str = "linear"
    precision: str = "float64"

    @property
    def K(self) -> int:
        return len(self.base)


@dataclass
class BoxAnswer:
    """``holds`` (with ``proof``), ``violated`` (``point`` = (tied cells, a, b) and the runtime's
    ``outputs`` there) or ``unknown`` (``reason``); ``best`` / ``upper`` for maximize (the exact
    largest evaluated difference and a certified upper bound on every admissible pair's)."""

    status: str
    proof: object = None
    reason: str = ""
    point: tuple | None = None
    outputs: object = None
    best: Fraction | None = None
    best_point: tuple | None = None
    upper: float | None = None
    stats: dict = field(default_factory=dict)


def _guards(sc: Scores) -> tuple[float, float]:
    """(the runtime error of one column, of a softmax probability) -- see the module docstring. A
    column is ``base + (sum of n leaf values) / divisor``: in any summation order its runtime value
    is within ``gamma(n + 3, u) * out`` of the exact one, ``out = |base| + (sum of each tree's largest
    |leaf|) / divisor`` bounding |column|; doubled (and gamma(2n + 8)) for slack, plus the
    converters' self-check tolerance ``CONVERTER_TOL * (1 + out)``."""
    n = len(sc.trees)
    u = U32 if sc.precision == "float32" else U64
    b = float(np.abs(np.asarray(sc.base, dtype=np.float64)).max()) if len(sc.base) else 0.0
    msum = 0.0
    for v in sc.values:
        a = np.abs(np.asarray(v, dtype=np.float64))
        msum += float(a.max()) if a.size else 0.0
    out = b + msum / float(sc.divisor)
    e = 2.0 * gamma(2 * n + 8, u) * out + CONVERTER_TOL * (1.0 + out)
    return float(np.nextafter(e, np.inf)), (SOFTMAX_TOL if sc.readout == "softmax" else 0.0)


def decide_pairs(sc: Scores, tied: Sequence[Factor], varying: Sequence[Factor], combos: np.ndarray,
                 pairs: np.ndarray, *, post: str, columns: Sequence[int] = (), op: str = "<=", eps=0,
                 evaluate: Callable, maximize: bool = False, max_boxes: int = 200_000,
                 deadline: float | None = None, claim: str = "", batch: int = 128, seeds=()) -> BoxAnswer:
    """The branch and bound of the module docstring. ``post``: ``"class"`` (fair when x and x' get
    the same class), ``"diff"`` (``out_c(x) - out_c(x') op eps`` for every c in ``columns``) or
    ``"softmax-diff"`` (the same on softmax probabilities of margin columns). ``combos``: (m,
    len(varying)) cell indices; ``pairs``: (P, 2) admissible ordered pairs of combos (closed under
    swapping, so one direction of the difference suffices). ``evaluate(points)``: for a list of
    (tied cell tuple, a, b) the runtime's outputs at one concrete pair of each -- ``class``: (n, 2)
    class indices; otherwise (n, 2, len(columns)) floats. ``seeds``: such points evaluated before the
    search. Raises ValueError when the cells are not sound or a split test reads a column no factor
    sets."""
    t_start = time.perf_counter()
    if post not in ("class", "diff", "softmax-diff"):
        raise ValueError(post)
    if maximize and post == "class":
        raise ValueError("a class has no difference to maximize")
    if len(sc.trees) != len(sc.values):
        raise ValueError("one value matrix per tree")
    K = sc.K
    if sc.readout == "softmax" and K >= 100:
        raise ValueError("a softmax over 100 classes or more is beyond SOFTMAX_TOL's float32 error bound")
    cols = list(columns)
    all_tests = {t for tr in sc.trees for t in tr.tests if t is not None}
    factors = list(tied) + list(varying)
    why = check_cells(list(all_tests), factors)
    if why is not None:
        raise ValueError(f"the cells are not sound: {why}")
    combos = np.asarray(combos, dtype=np.int64).reshape(-1, len(varying))
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    owner = {}
    for fi, f in enumerate(factors):
        for j, c in enumerate(f.columns):
            owner[c] = (fi, j)
    nt = len(tied)
    ncs = [int(np.asarray(f.cell).max()) + 1 for f in factors]
    first = [np.array([int(np.flatnonzero(np.asarray(f.cell) == c)[0]) for c in range(n)])
             for f, n in zip(factors, ncs)]
    outcome: dict = {}

    def bits(o) -> int:
        """A bool array over cells as an int (bit c: cell c goes left)."""
        return int.from_bytes(np.packbits(np.asarray(o, dtype=bool)[::-1]).tobytes(), "big") >> (
            (-len(o)) % 8) if len(o) else 0

    def cell_out(t: SplitTest) -> tuple[int, int]:
        """(factor, bitset of its cells that go left) of a split test (each cell read at its first
        value: check_cells made sure every value of a cell goes the same way)."""
        o = outcome.get(t)
        if o is None:
            fi, j = owner[t.column]
            o = (fi, bits(t.left(np.asarray(factors[fi].U, dtype=np.float64)[first[fi], j])))
            outcome[t] = o
        return o

    # every tree's nodes as plain lists: (factor, left-cells bitset) per split node, children
    nodes = []
    for tr in sc.trees:
        fac, obits = [], []
        for t in tr.tests:
            if t is None:
                fac.append(-1)
                obits.append(0)
            else:
                fi, ob = cell_out(t)
                fac.append(fi)
                obits.append(ob)
        nodes.append((fac, obits, [int(v) for v in tr.left], [int(v) for v in tr.right], tr.tests))

    G, Gp = _guards(sc)
    t_eps = threshold_of(eps)
    vcols = {c for f in varying for c in f.columns}
    reads_varying = [any(t is not None and t.column in vcols for t in tr.tests) for tr in sc.trees]
    V = [np.asarray(v, dtype=np.float64).reshape(len(tr.tests), K) for tr, v in zip(sc.trees, sc.values)]
    base = np.asarray(sc.base, dtype=np.float64)
    div = float(sc.divisor)

    # ---- one (box, combination): the leaves each tree reaches ---------------------------------
    def walk(masks, a, starts):
        """Per tree: (reachable leaves, frontier to restart from in a sub-box, first straddled test)."""
        ca = [int(v) for v in combos[a]]
        out = []
        for ti in range(len(nodes)):
            fac, obits, L, Rt, tests = nodes[ti]
            leaves, front, split = [], [], None
            stack = [(k, False) for k in starts[ti]]
            while stack:
                k, under = stack.pop()
                fi = fac[k]
                if fi < 0:
                    leaves.append(k)
                    if not under:
                        front.append(k)
                    continue
                ob = obits[k]
                if fi >= nt:
                    stack.append((L[k] if (ob >> ca[fi - nt]) & 1 else Rt[k], under))
                    continue
                m = masks[fi]
                if m & ob == m:
                    stack.append((L[k], under))
                elif m & ob == 0:
                    stack.append((Rt[k], under))
                else:
                    if not under:
                        front.append(k)
                        if split is None:
                            split = tests[k]
                    stack.append((Rt[k], True))
                    stack.append((L[k], True))
            st = starts[ti]
            # the parent's frontier object when unchanged (open boxes share it: bounded memory)
            out.append((np.array(leaves, dtype=np.int64), st if len(front) == len(st) and set(front) == set(st)
                        else tuple(front), split))
        return out

    vtrees = [i for i in range(len(sc.trees)) if reads_varying[i]]
    # every tree's K x K column differences of its nodes, stacked (Reach.diffs reduces them per tree
    # in a few numpy calls instead of four per tree: a 102-tree booster spent half its time there)
    offsets = np.cumsum([0] + [len(v) for v in V])
    DALL = np.concatenate([(v[:, :, None] - v[:, None, :]).reshape(len(v), K * K) for v in V]) if V else \
        np.zeros((0, K * K))
    VARY = np.array(reads_varying, dtype=bool)
    FD = {}
    last_joint: dict = {}

    def reach_from(ti, k, cc, masks):
        fac, obits, L, Rt, _ = nodes[ti]
        leaves, stack = [], [k]
        while stack:
            k = stack.pop()
            fi = fac[k]
            if fi < 0:
                leaves.append(k)
                continue
            ob = obits[k]
            if fi >= nt:
                stack.append(L[k] if (ob >> cc[fi - nt]) & 1 else Rt[k])
                continue
            m = masks[fi]
            if m & ob == m:
                stack.append(L[k])
            elif m & ob == 0:
                stack.append(Rt[k])
            else:
                stack.append(Rt[k])
                stack.append(L[k])
        return leaves

    def joint(masks, a, b, what: str):
        """Bounds (lo, hi) of sum over the trees reading a varying input of F[leaf of x] - F[leaf of
        x'] over the box, the two copies walked together: while they sit at the same node they take
        the same branch of a tied test (they share the tied values), so only leaf pairs a single
        tied point reaches are compared. ``what``: ``"V"`` (F = the leaf values, q = K) or ``"D"``
        (F = the differences of two columns' values, q = K * K)."""
        ca = [int(v) for v in combos[a]]
        cb = [int(v) for v in combos[b]]
        q = K if what == "V" else K * K
        lo_t, hi_t = np.zeros(q), np.zeros(q)
        zero = np.zeros(q)
        per_tree = {}
        for ti in vtrees:
            fac, obits, L, Rt, _ = nodes[ti]
            if what == "V":
                Fi = V[ti]
            else:
                Fi = FD.get(ti)
                if Fi is None:
                    Fi = (V[ti][:, :, None] - V[ti][:, None, :]).reshape(len(V[ti]), K * K)
                    FD[ti] = Fi
            memo = {}

            def indep(k, cc, side):
                r = memo.get((k, side))
                if r is None:
                    vals = Fi[reach_from(ti, k, cc, masks)]
                    r = (vals.min(axis=0), vals.max(axis=0))
                    memo[(k, side)] = r
                return r

            def rec(ka, kb):
                if ka != kb:
                    mina, maxa = indep(ka, ca, 0)
                    minb, maxb = indep(kb, cb, 1)
                    return mina - maxb, maxa - minb
                fi = fac[ka]
                if fi < 0:
                    return zero, zero
                ob = obits[ka]
                if fi >= nt:
                    return rec(L[ka] if (ob >> ca[fi - nt]) & 1 else Rt[ka], L[ka] if (ob >> cb[fi - nt]) & 1 else Rt[ka])
                m = masks[fi]
                if m & ob == m:
                    return rec(L[ka], L[ka])
                if m & ob == 0:
                    return rec(Rt[ka], Rt[ka])
                l1, h1 = rec(L[ka], L[ka])
                l2, h2 = rec(Rt[ka], Rt[ka])
                return np.minimum(l1, l2), np.maximum(h1, h2)

            lo, hi = rec(0, 0)
            lo_t += lo
            hi_t += hi
            per_tree[ti] = float((hi - lo).max())
        last_joint["per_tree"] = per_tree
        return lo_t / div, hi_t / div

    class Reach:
        __slots__ = ("trees", "single", "dlo", "dhi", "vlo", "vhi")

        def __init__(self, w):
            self.trees = w
            self.single = all(len(r[0]) == 1 for r in w)
            self.dlo = self.dhi = self.vlo = self.vhi = None

        def width(self, i) -> float:
            """How far apart tree i's reachable leaf values lie (summed over the columns)."""
            vals = V[i][self.trees[i][0]]
            return float((vals.max(axis=0) - vals.min(axis=0)).sum())

        def diffs(self):
            """(K, K) bounds of column c minus column d over the box, tree by tree (``dlo``, ``dhi``),
            and of the part the trees reading a varying input add (``vlo``, ``vhi``, no base)."""
            if self.dlo is None:
                # per tree the least and largest difference over its reachable leaves, then summed
                # tree after tree (np.add.accumulate: the same additions, in the same order, as a loop)
                sizes = [len(r[0]) for r in self.trees]
                rows = DALL[np.concatenate([r[0] + offsets[i] for i, r in enumerate(self.trees)])] if sizes else \
                    np.zeros((0, K * K))
                starts = np.cumsum([0] + sizes[:-1])
                mn = np.minimum.reduceat(rows, starts, axis=0) if sizes else np.zeros((1, K * K))
                mx = np.maximum.reduceat(rows, starts, axis=0) if sizes else np.zeros((1, K * K))
                zero = np.zeros((1, K * K))

                def total(a):
                    return np.add.accumulate(np.concatenate([zero, a]), axis=0)[-1].reshape(K, K)

                dlo, dhi = total(mn), total(mx)
                vlo, vhi = total(np.where(VARY[:, None], mn, 0.0)), total(np.where(VARY[:, None], mx, 0.0))
                self.dlo = base[:, None] - base[None, :] + dlo / div
                self.dhi = base[:, None] - base[None, :] + dhi / div
                self.vlo, self.vhi = vlo / div, vhi / div
            return self.dlo, self.dhi

    def certain_class(r: Reach):
        dlo, _ = r.diffs()
        need = 2.0 * G + 3.0 * Gp
        for c in range(K):
            if all(dlo[c, d] > need for d in range(K) if d != c):
                return c
        return None

    def class_fair(ra: Reach, rb: Reach, masks, a, b) -> bool:
        """No point of the box gives x class c and x' class d != c: for each (c, d) x cannot be c,
        or x' cannot be d, or the varying trees cannot move column c against d from x' to x by
        the at least -4G - 6Gp that x -> c, x' -> d needs (the other trees add the same to both)."""
        dlo_a, dhi_a = ra.diffs()
        dlo_b, dhi_b = rb.diffs()
        one = 2.0 * G + 3.0 * Gp
        can_a = [all(dhi_a[c, d] >= -one for d in range(K) if d != c) for c in range(K)]
        can_b = [all(dhi_b[c, d] >= -one for d in range(K) if d != c) for c in range(K)]
        jhi = None
        for c in range(K):
            if not can_a[c]:
                continue
            for d in range(K):
                if d == c or not can_b[d]:
                    continue
                if jhi is None:
                    jhi = joint(masks, a, b, "D")[1]
                if jhi[c * K + d] >= -2.0 * one:
                    return False
        return True

    def diff_bounds(ra: Reach, rb: Reach, c: int, jv=None) -> tuple[float, float]:
        """Bounds of out_c(x) - out_c(x') over the box (guard included); ``jv``: the joint bounds of
        the varying trees (the others reach the same leaf for x and x' and add the same)."""
        if post == "diff":
            return float(jv[0][c]) - 2.0 * G, float(jv[1][c]) + 2.0 * G

        def pbounds(r: Reach):
            dlo, dhi = r.diffs()      # dlo[d, c]: bounds of z_d - z_c
            slo = shi = 0.0
            for d in range(K):
                if d != c:
                    slo += math.exp(min(700.0, dlo[d, c] - 2.0 * G))
                    shi += math.exp(min(700.0, dhi[d, c] + 2.0 * G))
            return 1.0 / (1.0 + shi), 1.0 / (1.0 + slo)

        alo, ahi = pbounds(ra)
        blo, bhi = pbounds(rb)
        slack = 2.0 * Gp + 1e-12
        lb, ub = alo - bhi - slack, ahi - blo + slack
        if jv is not None:
            # the mean value theorem: p_c(x) - p_c(x') = -sum_d p_c p_d (xi) (w_d(x) - w_d(x')) with
            # w_d = z_d - z_c; the weights p_c p_d are >= 0 and sum to p_c (1 - p_c) <= 1/4, so the sum
            # is at most 1/4 of the largest of its terms' bounds (not 1/4 of each: K - 1 times looser);
            # w_d(x) - w_d(x') is the varying trees' joint bound of (V_d - V_c)(leaf of x) -
            # (V_d - V_c)(leaf of x') (each runtime margin within G)
            jlo, jhi = jv
            up_ = lo_ = 0.0
            for d in range(K):
                if d != c:
                    up_ = max(up_, 0.25 * max(0.0, -(float(jlo[d * K + c]) - 4.0 * G)))
                    lo_ = min(lo_, -0.25 * max(0.0, float(jhi[d * K + c]) + 4.0 * G))
            ub = min(ub, up_ + slack)
            lb = max(lb, lo_ - slack)
        return lb, ub

    def fair_by_bound(ub: float) -> bool:
        return (Fraction(ub) < t_eps) if op == "<" else (Fraction(ub) <= t_eps)

    def bad_by_bound(lb: float) -> bool:
        return Fraction(lb) > t_eps

    # ---- the search ---------------------------------------------------------------------------
    roots = [(0,) for _ in sc.trees]
    start_masks = [(1 << ncs[fi]) - 1 for fi in range(nt)]
    counter = 0
    # an entry: (priority, id, masks, open pairs, per-combo frontier starts)
    heap: list = []
    heapq.heappush(heap, (0.0, counter, start_masks, list(range(len(pairs))), {}))
    boxes = closed = evaluated = 0
    best: Fraction | None = None
    best_point = None
    pending: list = []          # (point, pair index) waiting for the runtime
    open_upper: list[float] = []
    stats = {"boxes": 0, "evaluated": 0, "closed_by_bounds": 0}

    def rep(masks):
        return tuple((m & -m).bit_length() - 1 for m in masks)

    def violated(point, outs, reason="") -> BoxAnswer:
        stats.update(boxes=boxes, evaluated=evaluated, seconds=round(time.perf_counter() - t_start, 3))
        return BoxAnswer("violated", point=point, outputs=outs, reason=reason, best=best, best_point=best_point,
                         stats=stats)

    def flush():
        """Evaluate the pending leaf-box pairs on the runtime; a violation (decide) or None."""
        nonlocal evaluated, best, best_point
        if not pending:
            return None
        pts = [p for p, _ in pending]
        out = np.asarray(evaluate(pts))
        evaluated += len(pts)
        pending.clear()
        if post == "class":
            out = out.reshape(len(pts), 2)
            bad = np.flatnonzero(out[:, 0] != out[:, 1])
            if bad.size:
                return violated(pts[int(bad[0])], out[int(bad[0])])
            return None
        out = out.reshape(len(pts), 2, len(cols))
        x, xp = out[:, 0, :].reshape(-1), out[:, 1, :].reshape(-1)
        ok = compare_exact(x, op, t_eps, minus=xp).reshape(len(pts), len(cols)).all(axis=1)
        if maximize:
            for i in range(len(pts)):
                for j in range(len(cols)):
                    v = Fraction(float(out[i, 0, j])) - Fraction(float(out[i, 1, j]))
                    if best is None or v > best:
                        best, best_point = v, (pts[i], out[i])
            return None
        bad = np.flatnonzero(~ok)
        if bad.size:
            return violated(pts[int(bad[0])], out[int(bad[0])])
        return None

    if seeds:
        # concrete pairs the caller chose (e.g. sampled): evaluated first, a violation among them
        # ends the search, and under maximize the best of them prunes boxes from the start
        pending.extend((tuple(p), -1) for p in seeds)
        ans = flush()
        if ans is not None and not maximize:
            return ans
    while heap:
        if boxes >= max_boxes or (deadline is not None and time.perf_counter() > deadline):
            break
        prio, _, masks, open_pairs, starts = heapq.heappop(heap)
        if maximize and best is not None and prio != 0.0 and Fraction(-prio) <= best:
            # every pair of this box is bounded by the best evaluated difference: closed
            continue
        boxes += 1
        reach: dict[int, Reach] = {}

        def R(a):
            r = reach.get(a)
            if r is None:
                r = Reach(walk(masks, a, starts.get(a, roots)))
                reach[a] = r
            return r

        still, split_choice, split_key, box_upper = [], None, None, -math.inf
        jw = None
        for pi in open_pairs:
            a, b = int(pairs[pi, 0]), int(pairs[pi, 1])
            ra, rb = R(a), R(b)
            if post == "class":
                ca = certain_class(ra)
                cb = certain_class(rb) if ca is not None else None
                if (ca is not None and ca == cb) or (cb is None and class_fair(ra, rb, masks, a, b)):
                    closed += 1
                    stats["closed_by_bounds"] += 1
                    continue
                if ca is not None and cb is not None:
                    # every pair of the box gets two different classes: one is the witness
                    pending.append(((rep(masks), a, b), pi))
                    ans = flush()
                    if ans is not None:
                        return ans
                    stats.update(boxes=boxes)
                    return BoxAnswer("unknown", reason="the runtime disagreed with the trees' certain classes at a "
                                     "pair of a box (the converted trees do not reproduce the library)", stats=stats)
            else:
                jv = joint(masks, a, b, "V") if post == "diff" else (
                    joint(masks, a, b, "D") if post == "softmax-diff" else None)
                jw = last_joint.get("per_tree") if post == "diff" else None
                lbs, ubs = zip(*[diff_bounds(ra, rb, c, jv) for c in range(K) if c in cols]) if cols else ((), ())
                ub = max(ubs)
                if all(fair_by_bound(u) for u in ubs) and not maximize:
                    closed += 1
                    stats["closed_by_bounds"] += 1
                    continue
                if maximize and best is not None and Fraction(ub) <= best:
                    closed += 1
                    stats["closed_by_bounds"] += 1
                    continue
                if not maximize and any(bad_by_bound(lb) for lb in lbs):
                    pending.append(((rep(masks), a, b), pi))
                    ans = flush()
                    if ans is not None:
                        return ans
                    stats.update(boxes=boxes)
                    return BoxAnswer("unknown", reason="the runtime disagreed with the trees' bounds at a pair of a "
                                     "box (the converted trees do not reproduce the library)", stats=stats)
                box_upper = max(box_upper, ub)
            if ra.single and rb.single:
                pending.append(((rep(masks), a, b), pi))       # a leaf box: the runtime decides it
                closed += 1
                continue
            still.append(pi)
            if maximize:
                pending.append(((rep(masks), a, b), -1))       # a probe: raises the best, closes nothing
            # the split: a straddled test of the widest tree of this pair
            for r in (ra, rb):
                for i, (leaves, _, sp) in enumerate(r.trees):
                    if sp is None:
                        continue
                    # diff: the varying tree whose joint interval is widest (it holds the bound up)
                    w = jw.get(i, 0.0) if jw is not None else r.width(i)
                    key = (post == "class" or reads_varying[i], w)
                    if split_key is None or key > split_key:
                        split_key, split_choice = key, sp
        if len(pending) >= (min(batch, 16) if maximize else batch) or (not still and not heap):
            ans = flush()
            if ans is not None and not maximize:
                return ans
        if not still:
            continue
        if split_choice is None:           # cannot happen: an undecided pair without a leaf box straddles
            stats.update(boxes=boxes)
            return BoxAnswer("unknown", reason="a box could not be split further", stats=stats)
        fi, o = cell_out(split_choice)
        new_starts = {a: [r[1] for r in reach[a].trees] for a in reach}
        for part in (masks[fi] & o, masks[fi] & ~o):
            if not part:
                continue
            m2 = list(masks)
            m2[fi] = part
            counter += 1
            pr = -box_upper if maximize and math.isfinite(box_upper) else 0.0
            if not maximize:
                pr = -float(counter)           # depth first: a violation surfaces early
            heapq.heappush(heap, (pr, counter, m2, list(still), new_starts))
    ans = flush()
    if ans is not None and not maximize:
        return ans
    seconds = time.perf_counter() - t_start
    stats.update(boxes=boxes, evaluated=evaluated, seconds=round(seconds, 3), closed=closed)
    if heap:
        open_ub = None
        if maximize:
            # every open box's bound was computed when it was split (its priority); a box never
            # examined inherits its parent's
            open_ub = max(-p for p, *_ in heap)
        reason = (f"the branch and bound over leaf boxes stopped after {boxes:,} boxes "
                  f"({'time limit' if deadline is not None and time.perf_counter() > deadline else 'box cap'}) "
                  f"with {len(heap):,} open")
        upper = None
        if maximize and open_ub is not None:
            ub = max(open_ub, float(best) if best is not None else -math.inf)
            upper = float_up(Fraction(ub)) if math.isfinite(ub) else None
            if upper is not None and best is not None and fair_by_bound(upper):
                # every open box's bound (its runtime guard included) and every closed pair's value is
                # within the tolerance: the property holds, the maximum lies in [best, upper]
                proof = _mint("bab-certificate", claim, leaves=closed, boxes=boxes, open_boxes=len(heap),
                              evaluated=evaluated, guard=G, upper=upper, maximum_at_least=str(best))
                return BoxAnswer("holds", proof=proof, reason=reason, best=best, best_point=best_point, upper=upper,
                                 stats=stats)
        return BoxAnswer("unknown", reason=reason, best=best, best_point=best_point, upper=upper, stats=stats)
    if maximize:
        if best is None:
            # no pair was evaluated: every pair closed by bounds before any best existed (cannot
            # happen: without a best nothing closes) -- no pairs at all
            return BoxAnswer("holds", proof=_mint("bab-certificate", claim or "no admissible pair", leaves=0,
                                                  boxes=boxes), upper=None, stats=stats)
        upper = float_up(best)
        if not ((best < t_eps) if op == "<" else (best <= t_eps)):
            return BoxAnswer("violated", point=best_point[0], outputs=best_point[1], best=best, best_point=best_point,
                             upper=upper, stats=stats)
        proof = _mint("bab-certificate", claim, leaves=closed, boxes=boxes, evaluated=evaluated, guard=G,
                      maximum=str(best))
        return BoxAnswer("holds", proof=proof, best=best, best_point=best_point, upper=upper, stats=stats)
    proof = _mint("bab-certificate", claim, leaves=closed, boxes=boxes, evaluated=evaluated, guard=G,
                  closed_by_bounds=stats["closed_by_bounds"])
    return BoxAnswer("holds", proof=proof, stats=stats)
