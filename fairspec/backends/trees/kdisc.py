"""Exact k-discrimination (HyFair's max k) on a tree ensemble, by branch and bound over boxes.

The K counterfactuals of an individual set the protected features to each combination of
their values; with those fixed, each counterfactual's ensemble is folded and pruned
(:func:`~fairspec.backends.trees.space.fold`) and reads only the shared features. The K
outputs are then constant on every box of shared features in which each tree of each
counterfactual reaches a single leaf (a *leaf combination*). Starting from the whole domain,
a box in which some tree still reaches two leaves is split at that tree's topmost straddling
threshold; a box is dropped when an upper bound on its k (the eps-buckets met by the K
output ranges, each the sum of its trees' smallest and largest reachable leaves) cannot beat
the best k found. A box is feasible when it holds a point meeting the one-hot groups.

Buckets are the ones the verdict counts (certify's exact ``floor(p / eps)``, eps as written), each
output's probability bracketed by the library's rounding (:func:`_slack`, derived there), the
library asked where a bracket straddles a boundary. When every box is decided, the best k is
**exact** (max k; evidence for the verdict, which counts the witness's buckets again in certify,
not a Proof). When the box budget
(a count, never a time) or the deadline runs out, the largest bound over the open boxes is
still a proved upper bound on max k, and the best k met at a point of any box examined (each
undecided box also contributes its k at one of its points) is a witness. Imports numpy (and
certify's exact bucket function) only.
"""

from __future__ import annotations

import heapq
import itertools
import time
from dataclasses import dataclass

import numpy as np

from fairspec.backends.search.kdisc import k_of
from fairspec.models.trees import Tree, TreeEnsemble
from fairspec.models.network import sigmoid

__all__ = ["KResult", "max_k"]


@dataclass
class KResult:
    best_k: int
    point: np.ndarray | None        # feature-space point whose counterfactuals give best_k
    upper: int                       # proved: no individual reaches more than this
    exact: bool                      # every box decided: best_k == upper is max k
    boxes: int
    probs: np.ndarray | None = None


def _reach(t: Tree, lo: np.ndarray, hi: np.ndarray):
    """Reachable leaves of tree t in the box, and its topmost straddling split (node or -1)."""
    leaves = []
    first = -1
    stack = [0]
    while stack:
        k = stack.pop()
        if t.left[k] < 0:
            leaves.append(k)
            continue
        f = t.feature[k]
        c = t.threshold[k]
        go_l = lo[f] <= c
        go_r = hi[f] > c
        if go_l and go_r and first < 0:
            first = k
        if go_r:
            stack.append(int(t.right[k]))
        if go_l:
            stack.append(int(t.left[k]))
    return leaves, first


def _feasible_point(lo, hi, integer, groups) -> np.ndarray | None:
    """A point of the box meeting the one-hot groups, or None."""
    x = np.where(integer, np.ceil(lo - 1e-9), (lo + hi) / 2.0)
    if np.any(x > hi + 1e-9):
        return None
    for g in groups:
        g = list(g)
        pick = next((i for i in g if hi[i] >= 1.0 and all(lo[j] <= 0.0 for j in g if j != i)), None)
        if pick is None:
            return None
        x[g] = 0.0
        x[pick] = 1.0
    return x


def _prob(s: np.ndarray, link: str) -> np.ndarray:
    return np.clip(s, 0.0, 1.0) if link == "identity" else sigmoid(s)


def _slack(ens: TreeEnsemble) -> tuple[float, float]:
    """(output slack, probability slack): bounds on how far the library's output on a leaf
    combination is from the float64 sum here, and its probability from the logistic of that.

    Output. The library sums n + 1 terms (n leaves and its base; a forest divides the sum by the
    number of trees, one more rounding), each leaf exactly as here (XGBoost's leaves are float32
    numbers, read exactly; a term here that is a float64 product -- LightGBM's sigmoid factor, a
    learning rate -- is within ``2**-53 |t|`` of the library's). Summed in any order with unit
    roundoff ``u`` its error is at most ``gamma_n M = n u / (1 - n u) M``, ``M = |base| + sum over
    trees of the largest |leaf|`` (>= the sum of |terms| of every combination; Higham, Accuracy
    and Stability, Eq. 4.4): ``u = 2**-24`` for XGBoost (float32), ``2**-53`` for the others.
    ``ens.base`` is the library's output minus the float64 leaf sum at probe points
    (``models.trees._with_base``), so it carries one more ``gamma_n M``. Here float64: ``(n + 2)
    2**-53 M``. In all, ``|library - here| <= (2 n u / (1 - n u) + (n + 4) 2**-53) M``. For XGBoost
    with ``n (n + 2) u <= 1`` (n <= ~4000 trees) that is ``< 2 u (n + 1) M + 2 u M = (n + 2) 2**-23
    M``, the output slack (``max(M, 1)``); past it the slack is infinite (no box is pruned by it,
    every boundary asks the library). For the float64 libraries the slack ``(n + 2) 2**-50 M`` is
    over 4 times the bound.

    Probability. XGBoost's logistic is float32 ``1 / (expf(-x) + 1 + 1e-16)`` (the 1e-16 vanishes
    in float32): ``expf`` within 1 ulp (glibc; relative ``2u``), one rounding for the sum and one
    for the quotient, so the library's probability is within ``(2u + u + u) p <= 4u = 2**-22`` of
    the real logistic of its float32 margin; the float64 logistic here is within ``2**-52`` of the
    real one. The probability slack ``2**-21`` covers both with room. The float64 libraries
    (LightGBM's ``1 / (1 + exp(-factor x))``, scikit-learn's ``expit``, a forest's averaged
    shares -- the identity link) are within a few ``2**-53``: ``2**-50``. With the output slack
    applied first (the logistic is monotone), the library's probability on every combination
    whose float64 outputs lie in ``[smin, smax]`` lies in ``prob_range(smin, smax)``.

    What this rests on besides arithmetic: that the library routes each input as the converted
    trees do (the converters check it against the library's own prediction,
    :mod:`fairspec.models.trees`), as every tree engine does."""
    mag = abs(float(ens.base)) + sum(float(np.abs(t.value[t.left < 0]).max(initial=0.0)) for t in ens.trees) / \
        float(ens.divisor or 1.0)
    f32 = ens.source == "xgboost"
    unit = 2.0 ** -23 if f32 else 2.0 ** -50
    n = len(ens.trees)
    if n * (n + 2) * (unit / 2.0) > 1.0:
        return float("inf"), 1.0
    return (len(ens.trees) + 2) * unit * max(mag, 1.0), (2.0 ** -21 if f32 else 2.0 ** -50)


def max_k(ensembles: list[TreeEnsemble], lo, hi, integer, groups, eps: float, *, stop_at: int | None = None,
          max_boxes: int = 200_000, deadline: float | None = None, evaluate=None) -> KResult:
    """Max k over the shared box ``[lo, hi]`` of the K counterfactual ensembles (already
    folded with their protected features fixed). ``stop_at``: stop once a k this large is
    found (the answer is then a witness, not the maximum).

    ``evaluate`` (a feature-space point -> its K counterfactuals' probabilities as the library
    computes them, ``LoadedModel.prob_reader``): the buckets are the library's, not those of the
    float64 logistic of the tree sums here. The two differ only within rounding (:func:`_slack`), so
    every bound here covers the library's values within that slack, and the library is asked only
    at a point whose k could beat the best found and whose probabilities lie within the slack of
    a bucket boundary (a decided box's leaves give the library one output on the whole box)."""
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    integer = np.asarray(integer, dtype=bool)
    K = len(ensembles)
    link = ensembles[0].link
    nb_cap = K
    slack = np.array([_slack(e) for e in ensembles])          # (K, 2)
    s_out, s_prob = slack[:, 0], slack[:, 1]

    def prob_range(smin, smax):
        """The probabilities the library may give for outputs in [smin, smax] (per counterfactual)."""
        return (np.clip(_prob(np.asarray(smin) - s_out, link) - s_prob, 0.0, 1.0),
                np.clip(_prob(np.asarray(smax) + s_out, link) + s_prob, 0.0, 1.0))

    from fairspec.certify.enumerate import kdisc_buckets

    def n_buckets(plo, phi) -> int:
        """An upper bound on k over probabilities in [plo, phi] (per counterfactual): the buckets
        certify counts (exact ``floor(p / eps)``, eps as written) are monotone in p."""
        b0, b1 = kdisc_buckets(plo, eps), kdisc_buckets(phi, eps)
        return min(nb_cap, len({b for a, c in zip(b0, b1) for b in range(int(a), int(c) + 1)}))

    def point_k(outs, x, best):
        """(k, probabilities) of the individual at x whose K outputs (float64 sums) are ``outs``.
        With ``evaluate``, k is the library's, counted in certify's exact buckets: decided by the
        slack when no bucket boundary lies within it, else by the library's probabilities (asked
        only when that k could beat ``best``)."""
        probs = _prob(outs, link)
        if evaluate is None:
            return int(k_of(probs[None, :], eps)[0]), probs
        plo, phi = prob_range(outs, outs)
        b0, b1 = kdisc_buckets(plo, eps), kdisc_buckets(phi, eps)
        if np.array_equal(b0, b1):
            return len(set(b0.tolist())), probs      # no boundary within rounding: the library's buckets
        if n_buckets(plo, phi) <= best:
            return 1, probs                          # no k above the best here (1: a lower bound)
        lib = np.asarray(evaluate(x), dtype=np.float64).reshape(-1)
        return len(set(kdisc_buckets(lib, eps).tolist())), lib

    def bound(blo, bhi):
        """(upper bound on k, (c, t, node) of a split to make, or None when decided, outputs)"""
        split = None
        outs = np.zeros(K)
        smax_all = np.zeros(K)
        for c, ens in enumerate(ensembles):
            vmin, vmax = [], []
            for ti, t in enumerate(ens.trees):
                leaves, first = _reach(t, blo, bhi)
                v = t.value[leaves]
                vmin.append(float(v.min()))
                vmax.append(float(v.max()))
                if first >= 0 and split is None:
                    split = (c, ti, first)
            outs[c], smax_all[c] = ens.combine(vmin), ens.combine(vmax)
        return n_buckets(*prob_range(outs, smax_all)), split, outs

    best_k, best_pt, best_probs = 0, None, None
    heap: list = []
    counter = itertools.count()
    ub0, split0, outs0 = bound(lo, hi)
    heapq.heappush(heap, (-ub0, next(counter), lo, hi, split0, outs0))
    boxes = 0
    while heap:
        neg_ub, _, blo, bhi, split, outs = heapq.heappop(heap)
        ub = -neg_ub
        if ub <= best_k:
            heap.clear()
            break
        if split is None:
            x = _feasible_point(blo, bhi, integer, groups)
            if x is None:
                continue
            k, probs = point_k(outs, x, best_k)
            if k > best_k:
                best_k, best_pt, best_probs = k, x, probs
                if stop_at is not None and best_k >= stop_at:
                    break
            continue
        # a point of the undecided box is an individual too: its k is a lower bound found early
        x = _feasible_point(blo, bhi, integer, groups)
        if x is not None:
            k, probs = point_k(np.array([e.aggregate(x[None])[0] for e in ensembles]), x, best_k)
            if k > best_k:
                best_k, best_pt, best_probs = k, x, probs
                if stop_at is not None and best_k >= stop_at:
                    heapq.heappush(heap, (neg_ub, next(counter), blo, bhi, split, outs))
                    break
                if ub <= best_k:
                    continue
        boxes += 1
        if boxes > max_boxes or (deadline is not None and time.perf_counter() > deadline):
            heapq.heappush(heap, (neg_ub, next(counter), blo, bhi, split, outs))
            break
        c, ti, node = split
        t = ensembles[c].trees[ti]
        f = int(t.feature[node])
        thr = float(t.threshold[node])
        left_hi = bhi.copy()
        left_hi[f] = thr
        right_lo = blo.copy()
        right_lo[f] = thr + 1.0 if integer[f] else float(np.nextafter(thr, np.inf))
        for a, b in ((blo, left_hi), (right_lo, bhi)):
            if np.any(a > b):
                continue
            u, sp, o = bound(a, b)
            if u > best_k:
                heapq.heappush(heap, (-u, next(counter), a, b, sp, o))
    upper = max([best_k] + [-h[0] for h in heap])
    exact = not heap and (stop_at is None or best_k < stop_at)
    return KResult(best_k, best_pt, upper if not exact else best_k, exact, boxes, best_probs)

