"""k-discrimination's enumeration on a runtime that scores one point differently in batches of other
sizes or orders (torch and scikit-learn on CPU: :mod:`fairspec.kinds.pair_enumeration`, "Whatever the
batch" in the README).

The enumeration counts each individual's buckets (or predicted classes) from one batch's scores. A
counterfactual whose score lies within the runtime's spread of a bucket boundary (or whose two largest
logits lie within it) may fall into the neighbouring bucket (class) in another batch, unless
:func:`fairspec.certify.exact_runtime.exact_points` shows the runtime computes it exactly in every
order. Moving one counterfactual changes an individual's count of distinct buckets by at most one
either way, so with ``m`` such counterfactuals the count lies in ``[k - m, k + m]`` over every batch:

* ``holds`` stands only when ``k + m`` meets the claim for every individual, else ``unknown``;
* a violation with ``k - m`` still breaking the claim is one every batch shows; any other is reported
  only when it also reproduces with each counterfactual scored alone and the batch reversed
  (:func:`reproduces`), with a note.
"""

from __future__ import annotations

import numpy as np

from fairspec import ir


def may_move(prop: ir.KDiscrimination, model, X: np.ndarray, s: np.ndarray, classes: bool) -> np.ndarray | None:
    """Per point of X (scored ``s`` by the enumeration's batch): may another batch put it into another
    bucket (or class)? None when the runtime scores every batch alike, or is outside the runtime
    error model (as for individual fairness: the verdict rests on its scores then)."""
    from fairspec.certify.enumerate import _buckets_exact, sigmoid_bounds
    from fairspec.certify.exact import threshold_of
    from fairspec.kinds.pair_spread import points_exact, runtime_spread
    from fairspec.models.batching import batch_dependent, elementwise_sigmoid_head

    if not batch_dependent(model):
        return None
    if classes:
        post, cls, score_kind = "class", None, "class"
    elif prop.output == "class_prob":
        post, cls, score_kind = "class_prob", int(prop.cls), "prob"
    else:
        score_kind = getattr(model, "score_kind", "")
        post, cls = score_kind, None
        if score_kind not in ("prob", "logit"):
            return None
    runtime = runtime_spread(post, cls, model, X, score_kind)
    spread = runtime[0]
    if spread <= 0:
        return None
    s = np.asarray(s, dtype=np.float64).reshape(-1)
    Y = z = None
    if score_kind == "logit" and post != "class_prob" and not classes and not model.prob_reader()[1]:
        # s is the library's own probability of the declared logit (a scikit-learn logistic's
        # predict_proba: SklearnModel.prob_reader), not a logit: another batch moves the logit it is
        # elementwise of by at most the spread, so its bucket is bounded from that logit (sigmoid_bounds
        # covers the library's float of the logistic), and exactness is shown on the logit
        z = np.asarray(model.score(X), dtype=np.float64).reshape(-1)
    with np.errstate(over="ignore", invalid="ignore"):
        if classes or post == "class_prob":
            Y = np.asarray(model.outputs(X), dtype=np.float64)
        if classes:
            top2 = np.sort(Y, axis=1)[:, -2:]
            near = top2[:, 1] - top2[:, 0] <= 2 * spread
        else:
            e = threshold_of(prop.eps)
            inv = 1 / e
            nb = inv.numerator // inv.denominator + (inv.denominator != 1)
            if z is not None:
                lo, hi = sigmoid_bounds(z - spread)[0], sigmoid_bounds(z + spread)[1]
            elif score_kind == "logit" and post != "class_prob":
                lo, hi = sigmoid_bounds(s - spread)[0], sigmoid_bounds(s + spread)[1]
            else:
                # a probability read off the runtime (a sigmoid head) or a softmax coordinate: each logit
                # moves by at most the spread, the coordinate by at most expm1(2 spread)
                d = spread if post != "class_prob" else float(np.expm1(2 * spread))
                lo, hi = np.clip(s - 2 * d, 0.0, 1.0), np.clip(s + 2 * d, 0.0, 1.0)
            near = _buckets_exact(lo, e, nb) != _buckets_exact(hi, e, nb)
    near = near | np.isnan(s) | (np.isnan(z) if z is not None else False)
    moved = near.copy()
    P = np.flatnonzero(near)
    if P.size:
        seen = Y[P] if runtime[2][0] == "columns" else (z if z is not None else s)[P]
        moved[P[points_exact(runtime, X, P, seen,
                             elementwise_sigmoid_head(model))]] = False
    return moved


def reproduces(evaluate, U: np.ndarray, count) -> bool:
    """Does the individual's counterfactuals U still break the claim with each scored alone and the
    batch reversed? ``count(scores) -> bool`` says whether scores break it."""
    alone = np.concatenate([np.asarray(evaluate(U[i:i + 1]), dtype=np.float64).reshape(-1)
                            for i in range(U.shape[0])])
    rev = np.asarray(evaluate(np.ascontiguousarray(U[::-1])), dtype=np.float64).reshape(-1)[::-1]
    return count(alone) and count(rev)


def breaks_claim(prop: ir.KDiscrimination, K: int, logit: bool, classes: bool = False):
    """``breaks(scores) -> bool``: one individual's K scores surely break the claim (certify's lower k)."""
    from fairspec.certify.enumerate import kdisc_by_enumeration

    at = prop.k if prop.op == "<" else prop.k + 1

    def breaks(scores) -> bool:
        return int(kdisc_by_enumeration(scores, K=K, eps=prop.eps, op=prop.op, k=prop.k, logit=logit,
                                        claim="the witness's k", classes=classes).k_lo[0]) >= at

    return breaks


WITNESS_NOTE = ("within the runtime's rounding of a bucket boundary; it reaches k scored alone, in one batch and "
                "reversed, but another batch size or order may round it away")


def batched_reason(individuals: int, points: int) -> str:
    from fairspec.models.batching import BATCHED

    return (f"{individuals:,} individual(s) have counterfactuals within the runtime's rounding of a bucket "
            f"boundary, and the runtime may round {points:,} of them differently in another batch size or "
            f"order: {BATCHED}")
