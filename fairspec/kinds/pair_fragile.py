"""The pairs of a small-domain enumeration that another batch size or order of the runtime may round away
(kinds/pair_spread.fragile_pair, _rounded_apart): the first of them that reproduces scored alone, as a pair
and reversed (:func:`reproduced_pair`), and the words of the verdicts and details that name them. Moved out of
kinds/pair_enumeration.py."""

from __future__ import annotations

import numpy as np

from fairspec import ir
from fairspec.models.batching import BATCHED

#: the note of a verdict that rests on :data:`~fairspec.models.batching.ASSUMED_SPREAD`
SPREAD_ASSUMED = ("the runtime error model does not cover this model: how far another batch may round a score "
                  "is assumed (pair_enumeration.ASSUMED_SPREAD), not bounded")


def reproduces(prop: ir.IndividualFairness, model, X2: np.ndarray) -> list[int]:
    """The columns in which the pair X2 breaks the post-condition on the runtime scored each point
    alone, as the pair and as the pair reversed ([0] for a one-column post; empty: it does not
    reproduce). How a user replays a witness; another batch may still round it away."""
    from dataclasses import replace

    from fairspec.kinds.pair_runtime import library_probability, post_scores, runtime_violates

    X2 = np.atleast_2d(np.asarray(X2, dtype=np.float64))
    from fairspec.kinds.pair_runtime import class_prob_decide, real_softmax

    if real_softmax(prop, model):       # the real softmax of each run's logit rows, by certify's bounds
        out = lambda A: np.asarray(model.outputs(A), dtype=np.float64)
        runs = [np.vstack([out(X2[:1]), out(X2[1:])]), out(X2), out(np.ascontiguousarray(X2[::-1]))[::-1]]
        cols = [prop.cls] if isinstance(prop.cls, int) else range(max(2, runs[0].shape[1]))
        return [0 if isinstance(prop.cls, int) else c for c in cols
                if all(class_prob_decide(prop, model, R[:1], R[1:], c)[1][0] for R in runs)]
    alone = [post_scores(prop, model, X2[i:i + 1])[0] for i in range(2)]
    pair = post_scores(prop, model, X2)[0]
    rev = post_scores(prop, model, np.ascontiguousarray(X2[::-1]))[0]
    if pair is None or rev is None or any(v is None for v in alone):
        return []
    runs = [np.concatenate([np.asarray(v, dtype=np.float64) for v in alone], axis=0),
            np.asarray(pair, dtype=np.float64), np.asarray(rev, dtype=np.float64)[::-1]]
    if runs[1].ndim == 1:
        # prob the library computes from the logit: predict_proba of each run, decided on its floats
        P = [library_probability(prop, model, X2[i:i + 1]) for i in range(2)]
        P = [None if any(p is None for p in P) else np.concatenate(P), library_probability(prop, model, X2),
             library_probability(prop, model, np.ascontiguousarray(X2[::-1]))]
        P = [(None, None) if p is None else (p[:1], p[1:]) if i < 2 else (p[1:], p[:1]) for i, p in enumerate(P)]
        return [0] if all(runtime_violates(prop, model, S[:1], S[1:], *p)[0] for S, p in zip(runs, P)) else []
    return [c for c in range(runs[1].shape[1])          # forall c: the columns that break it in every run
            if all(runtime_violates(replace(prop, cls=c), model, S[:1, c], S[1:, c])[0] for S in runs)]


def reproduced_pair(prop, model, X, N: int, a, b, fragile, post: str, score_kind: str, s, tries: int = 8):
    """``(j, scores)``: the first of the violating pairs ``fragile`` (indices into a, b; the largest
    measure first) that :func:`reproduces` alone, as a pair and reversed, with its scores as a pair
    (the column compared, for forall c); or None."""
    from fairspec.kinds.pair_runtime import post_scores, runtime_measure

    order = fragile
    if post != "class" and (post != "label" or score_kind == "logit"):
        order = fragile[np.argsort(-runtime_measure(post, score_kind, s[a[fragile]], s[b[fragile]]), kind="stable")]
    for j in order[:tries]:
        X2 = X[[a[j] % N, b[j] % N]]
        cols = reproduces(prop, model, X2)
        if cols:
            sc = np.asarray(post_scores(prop, model, X2)[0], dtype=np.float64)
            if sc.ndim == 2:        # the pair's scores in a column it breaks (not necessarily a[j]'s)
                sc = sc[:, cols[0]]
            return int(j), (float(sc[0]), float(sc[1]))
    return None


def rounding_details(moved: dict) -> dict:
    """The JSON details of :func:`~fairspec.kinds.pair_spread._rounded_apart` / :func:`~fairspec.kinds.pair_spread.fragile_pair`'s result."""
    out = {"pairs_near_threshold": moved["near"], "points_not_exact": moved["moved"], "spread": moved["spread"]}
    if moved.get("assumed"):
        out["spread_assumed"] = SPREAD_ASSUMED
    if moved.get("reproduced"):
        out["witness"] = ("within the runtime's rounding of the threshold; it violates the property scored alone, "
                          "as a pair and reversed, but another batch size or order may round it away")
    return out


def batched_reason(which: str, moved: dict, model=None) -> str:
    """The reason of an ``unknown`` left by :func:`~fairspec.kinds.pair_spread._rounded_apart`; of a
    scikit-learn meta-estimator, what would let fairspec decide (:func:`fairspec.models.meta_estimators.hint`)."""
    from fairspec.models.meta_estimators import hint

    rounding = "an assumed bound of the runtime's rounding" if moved.get("assumed") else "the runtime's rounding"
    why = hint(model) if moved.get("assumed") and model is not None else None
    return (f"{which} within {rounding} of the threshold, and the runtime may round {moved['moved']:,} "
            f"of their points differently in another batch size or order" + (f" ({why})" if why else "") +
            f": {BATCHED}")


def lower_end(lo: float, spread: float, post: str, kind: str, margin: float) -> float:
    """maximize's lower end on a runtime that rounds by batch (``spread``: how far apart two evaluations of
    one point may be, :func:`fairspec.kinds.pair_spread.runtime_spread`): another batch size or order
    may score every pair's points otherwise, and its maximum lie below this batch's by as much as a pair's
    measure moves -- ``spread`` for a label's ``min(z, -z')``, twice it for a difference of two scores,
    plus ``margin``, the library logistic's own rounding, for a ``prob`` of logits (pair_spread's
    ``LOGISTIC_MARGIN``). Not
    where the best pair's points are exact in every order (its measure, this batch's maximum, is every
    batch's). A torch network of normal weights gave a maximum in batches of 1 below the whole domain's
    (session 35)."""
    import math

    move = spread if post == "label" else 2.0 * spread + (margin if kind == "prob-of-logit" else 0.0)
    return math.nextafter(lo - move, -math.inf) if math.isfinite(lo) else lo
