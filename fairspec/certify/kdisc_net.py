"""k-discrimination (HyFair) proved beyond enumeration: by counting, and for a ReLU network by a
certified branch and bound over its individuals.

k is the number of distinct buckets ``floor(p / eps)`` (the last of the ``ceil(1 / eps)`` buckets
closed; :func:`fairspec.certify.enumerate.kdisc_by_enumeration`) among an individual's K
counterfactuals. Two bounds need no model:

* :func:`prove_by_counting`: ``k <= min(K, ceil(1 / eps))`` for every individual of every model
  (K values fall into at most K buckets, and there are no more buckets than that): a claim this
  bound meets is proved in exact arithmetic;

and one that needs the network (:func:`bound_kdisc`, the branch and bound runs **here**, so that
the Proof is minted by the code that computed every bound, as in :mod:`fairspec.certify.class_prob`):

* a node is a box of the feature space's shared (non-protected) columns; for each of the K
  combinations of the protected columns certify bounds the score **as the runtime computes it** over
  the box (:func:`fairspec.certify.network.score_interval`: outward-rounded intervals intersected
  with symbolic bounds, widened by the runtime error bound over the whole domain), a logit through
  rigorous sigmoid bounds, and so the buckets counterfactual j can take: an interval
  ``[b_lo_j, b_hi_j]`` (the bucket is monotone in p). The most distinct buckets the K counterfactuals
  can take is the largest matching of the K intervals to bucket numbers (greedy by right end, exact);
  a node whose matching meets the claim is a proved leaf;
* a node whose shared columns are a single point is an **enumerated leaf**: the caller's ``evaluate``
  (the model's runtime, as for enumeration) scores its K counterfactuals and certify counts the
  buckets exactly (a counterfactual the runtime may round into another bucket in another batch,
  which ``evaluate`` reports, widens the count by one each); a leaf whose certain count breaks the
  claim is returned as a violation for the caller to replay on the loaded model;
* any other node is split (its widest weighted shared column; an integer range at its middle, a
  one-hot group's allowed columns in halves).

Pure numpy and fractions: no solver, no model library.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from fairspec.certify.exact import threshold_of

__all__ = ["bucket_count", "prove_by_counting", "KDiscQuery", "KDiscResult", "bound_kdisc", "max_distinct"]


def bucket_count(eps) -> int:
    """The number of buckets, ``ceil(1 / eps)`` (eps as written)."""
    e = threshold_of(eps)
    if e <= 0:
        raise ValueError("eps must be > 0")
    inv = 1 / e
    return inv.numerator // inv.denominator + (inv.denominator != 1)


def _meets(k_hi: int, op: str, k: int) -> bool:
    if op not in ("<", "<="):
        raise ValueError(f"k-discrimination claims are k < c or k <= c, not {op!r}")
    return k_hi < k if op == "<" else k_hi <= k


def prove_by_counting(K: int, eps, op: str, k: int, *, claim: str):
    """An ``exact-arithmetic`` Proof that every individual's k meets ``k op k_claim`` because
    ``k <= min(K, ceil(1 / eps))`` whatever the model computes, or None when that bound does not meet it."""
    from fairspec.certify.proof import _mint

    K = int(K)
    if K < 1:
        return None
    nb = bucket_count(eps)
    bound = min(K, nb)
    if not _meets(bound, op, int(k)):
        return None
    return _mint("exact-arithmetic", claim, bound=bound, counterfactuals=K, buckets=nb, eps=threshold_of(eps),
                 op=op, k=int(k), method_note="k <= min(K, ceil(1 / eps)) for every model")


def prove_by_counterfactuals(K: int, op: str, k: int, *, claim: str):
    """An ``exact-arithmetic`` Proof that every individual's k meets ``k op k_claim`` because its K
    counterfactuals have at most K distinct outputs (predicted classes) whatever the model computes,
    or None when K does not meet it."""
    from fairspec.certify.proof import _mint

    K = int(K)
    if K < 1 or not _meets(K, op, int(k)):
        return None
    return _mint("exact-arithmetic", claim, bound=K, counterfactuals=K, op=op, k=int(k),
                 method_note="k <= K for every model")


def max_distinct(ranges) -> int:
    """The most distinct integers one can pick, one from each closed interval ``(a, b)`` of ``ranges``
    (a maximum matching of intervals to integers: greedy by right end, the smallest free integer >= a)."""
    used: set = set()
    n = 0
    for a, b in sorted(((int(a), int(b)) for a, b in ranges), key=lambda r: (r[1], r[0])):
        v = a
        while v in used and v <= b:
            v += 1
        if v <= b:
            used.add(v)
            n += 1
    return n


@dataclass(frozen=True, eq=False)
class KDiscQuery:
    """k-discrimination of a network in feature space.

    layers, readout, precision, encoding: the runtime as :func:`fairspec.certify.network.score_interval`
                 reads it (readout ``logit`` / ``margin``: a logit, its probability the real logistic;
                 ``prob`` / ``softmax``: the probability).
    lo, hi, integer, onehot_groups: the domain (feature space).
    free:        the protected columns; ``combos`` (K, len(free)) the values of the K counterfactuals.
    eps, op, k:  the claim ``k op k_claim`` for every individual.
    """

    layers: list
    readout: tuple
    encoding: object
    precision: str
    lo: np.ndarray
    hi: np.ndarray
    integer: np.ndarray
    onehot_groups: tuple
    free: tuple
    combos: np.ndarray
    eps: object
    op: str
    k: int
    #: a logit readout whose probability the caller's ``evaluate`` reads as the library's own float of its
    #: logistic (a scikit-learn logistic's predict_proba): enumerated leaves count those floats as
    #: probabilities; an interval's buckets take the logistic's bounds widened by the library float's
    #: relative 2**-40 more (``kinds.pair_spread.LOGISTIC_MARGIN``, term 3)
    library_prob: bool = False

    @property
    def logit(self) -> bool:
        return self.readout[0] in ("logit", "margin")


@dataclass
class KDiscResult:
    status: str                      # proved | violated | open
    proof: object = None
    point: np.ndarray | None = None  # violated: a feature-space individual whose count breaks the claim
    k_found: int = 0                 # the largest certain count of an enumerated leaf (max k >= k_found)
    bound: int | None = None         # the certified bound of max k so far (None: none)
    reason: str = ""
    stats: dict = field(default_factory=dict)


class _Node:
    """Bucket ranges of the K counterfactuals over boxes of the shared columns."""

    def __init__(self, q: KDiscQuery):
        from fairspec.certify.network import as_layers

        self.q = q
        self.layers = as_layers(q.layers)
        self.free = list(q.free)
        self.nb = bucket_count(q.eps)
        self.lo = np.asarray(q.lo, dtype=np.float64).copy()
        self.hi = np.asarray(q.hi, dtype=np.float64).copy()
        self.err_boxes = [self._fix(self.lo, self.hi, j) for j in range(q.combos.shape[0])]

    def _fix(self, lo, hi, j):
        lo, hi = lo.copy(), hi.copy()
        if self.free:
            lo[self.free] = self.q.combos[j]
            hi[self.free] = self.q.combos[j]
        return lo, hi

    def ranges(self, lo, hi):
        """Per counterfactual the buckets it can take over the box: [(b_lo, b_hi)], or None (an empty box)."""
        from fairspec.certify.enumerate import kdisc_buckets
        from fairspec.certify.network import score_interval
        from fairspec.certify.rounding import sigmoid_down, sigmoid_up

        q = self.q
        out = []
        for j in range(q.combos.shape[0]):
            l, h = self._fix(lo, hi, j)
            r = score_interval(q.layers, l, h, readout=q.readout, encoding=q.encoding, precision=q.precision,
                               integer=q.integer, onehot_groups=q.onehot_groups, symbolic=True,
                               error_box=self.err_boxes[j])
            if r is None:
                return None
            s_lo, s_hi, _ = r
            if not (math.isfinite(s_lo) and math.isfinite(s_hi)):
                out.append((0, self.nb - 1))
                continue
            if q.logit:
                s_lo, s_hi = sigmoid_down(s_lo), sigmoid_up(s_hi)
                if q.library_prob:
                    s_lo, s_hi = max(0.0, s_lo * (1.0 - 2.0 ** -40)), min(1.0, s_hi * (1.0 + 2.0 ** -40))
            b = kdisc_buckets(np.array([s_lo, s_hi], dtype=np.float64), q.eps)
            out.append((int(b[0]), int(b[1])))
        return out


def _weights(q: KDiscQuery, layers) -> np.ndarray:
    n = np.asarray(q.lo).shape[0]
    W1 = np.abs(np.asarray(layers[0][0], dtype=np.float64))
    if W1.shape[1] != n:
        return np.ones(n)
    col = W1.sum(axis=0)
    if q.encoding is not None and len(q.encoding) == n:
        col = col * np.array([abs(float(e.exact()[0])) for e in q.encoding])
    return col + 1e-12


def bound_kdisc(q: KDiscQuery, evaluate: Callable, *, deadline: float | None = None,
                max_nodes: int = 200_000) -> KDiscResult:
    """The certified branch and bound (module docstring). ``evaluate(points) -> (scores, moved)``: the
    runtime's scores of feature-space points (what ``prob(m(x))`` reads: the logit of a logit readout)
    and, per point, whether another batch of the runtime may put it into another bucket (None: none
    may). ``deadline``: a ``time.monotonic()`` instant. Returns ``proved`` (with the Proof),
    ``violated`` (an individual whose certain count breaks the claim on the runtime; the caller
    replays it) or ``open`` (the budget ended, or a leaf certify cannot decide)."""
    from fairspec.certify.class_prob import _centre, _children, _choose_split, _is_point
    from fairspec.certify.enumerate import kdisc_by_enumeration
    from fairspec.certify.proof import _mint

    t0 = time.monotonic()
    if q.op not in ("<", "<="):
        raise ValueError(f"k-discrimination claims are k < c or k <= c, not {q.op!r}")
    N = _Node(q)
    K = int(q.combos.shape[0])
    at = q.k if q.op == "<" else q.k + 1          # the smallest k that breaks the claim
    free = set(q.free)
    n = N.lo.shape[0]
    grouped = {i for g in q.onehot_groups for i in g}
    shared_groups = [tuple(g) for g in q.onehot_groups if not free.intersection(g)]
    shared_scalar = [i for i in range(n) if i not in free and i not in grouped]
    w = _weights(q, N.layers)
    stats = {"nodes": 0, "interval_leaves": 0, "point_leaves": 0, "empty": 0, "undecided": 0}
    k_found, bound_max, undecided = 0, 0, None
    stack = [(N.lo.copy(), N.hi.copy())]

    def done(status, **kw):
        stats["seconds"] = round(time.monotonic() - t0, 4)
        return KDiscResult(status, stats=stats, k_found=k_found, **kw)

    while stack:
        if (deadline is not None and time.monotonic() > deadline) or stats["nodes"] >= max_nodes:
            return done("open", reason=f"the budget ended after {stats['nodes']:,} nodes of the branch and bound "
                                       f"({len(stack):,} boxes left open)")
        lo, hi = stack.pop()
        stats["nodes"] += 1
        ranges = N.ranges(lo, hi)
        if ranges is None:
            stats["empty"] += 1
            continue
        b = max_distinct(ranges)
        if b < at:
            stats["interval_leaves"] += 1
            bound_max = max(bound_max, b)
            continue
        if _is_point(q, lo, hi, shared_scalar, shared_groups):
            x = _centre(q, lo, hi, shared_scalar, shared_groups)
            V = np.repeat(x[None, :], K, axis=0)
            if q.free:
                V[:, list(q.free)] = q.combos
            scores, moved = evaluate(V)
            scores = np.asarray(scores, dtype=np.float64).reshape(-1)
            m = 0 if moved is None else int(np.count_nonzero(moved))
            r = kdisc_by_enumeration(scores, K=K, eps=q.eps, op=q.op, k=q.k, logit=q.logit and not q.library_prob,
                                     claim="one individual")
            k_lo, k_hi = int(r.k_lo[0]), int(r.k_hi[0])
            stats["point_leaves"] += 1
            if m == 0:
                k_found = max(k_found, k_lo)      # a count every batch of the runtime gives
            if k_hi + m < at:
                bound_max = max(bound_max, k_hi + m)
                continue
            if k_lo >= at:
                return done("violated", point=x, reason=f"an individual's counterfactuals fall into k = {k_lo} "
                                                        "buckets on the runtime")
            stats["undecided"] += 1
            if undecided is None:
                undecided = x
            bound_max = max(bound_max, min(K, k_hi + m))
            continue
        arg = _choose_split(q, lo, hi, w, shared_scalar, shared_groups)
        kids = _children(q, lo, hi, arg, shared_groups) if arg is not None else []
        if not kids:
            return done("open", reason="a box too narrow to split further keeps a bound of "
                                       f"k = {b} buckets (claim: k {q.op} {q.k})")
        stack.extend(reversed(kids))
    if undecided is not None:
        return done("open", point=undecided, bound=bound_max,
                    reason=f"{stats['undecided']:,} individual(s) have a counterfactual within rounding of a bucket "
                           "boundary (the runtime's logistic, or another batch of the runtime)")
    proof = _mint("bab-certificate", f"k {q.op} {q.k} for every individual (K = {K} counterfactuals, eps = {q.eps!s})",
                  leaves=stats["interval_leaves"] + stats["point_leaves"] + stats["empty"],
                  interval_leaves=stats["interval_leaves"], enumerated_leaves=stats["point_leaves"],
                  bound=bound_max, counterfactuals=K, buckets=N.nb, readout=list(q.readout), precision=q.precision)
    return done("proved", proof=proof, bound=bound_max)
