"""The pre-condition search's answers on a runtime that rounds by batch (README, "Whatever the batch"), kept out
of kinds/pre_search.py (near its size limit).

kinds/pre_search measures its pair in one batch (the pair's two rows). maximize reports [that measure, the
relaxation's certified upper bound]; another batch size or order may score the pair's points otherwise and the
maximum over the pairs meeting the pre-condition lie below it: a torch network of normal weights, the region one
pair, gave 1.9273276329040527 scored as the pair and 1.9273271560668945 with each point scored alone (session 36).
:func:`lower_end` widens the lower end down by the runtime's spread (kinds/pair_fragile.lower_end, as the
small-domain enumeration does), unless every point of the pair is shown computed exactly in every order."""

from __future__ import annotations

import numpy as np


def lower_end(prop, model, X2, low: float, tree: bool) -> float:
    """The lower end of maximize's interval from the searched pair ``X2`` (its two encoded rows) whose measure in
    one batch is ``low`` (a float at or below it): widened down by the runtime's spread on a network runtime that
    rounds by batch, unless both points are exact in every order; as is elsewhere (a tree model's library, a
    runtime that scores every batch alike)."""
    from fairspec.certify.enumerate import class_post, compared_kind
    from fairspec.kinds.pair_fragile import lower_end as widened
    from fairspec.kinds.pair_runtime import library_logistic, post_scores
    from fairspec.kinds.pair_spread import LOGISTIC_MARGIN, every_point_exact, runtime_spread
    from fairspec.models.batching import batch_dependent

    if tree or low is None or not np.isfinite(low) or not batch_dependent(model):
        return low
    X2 = np.atleast_2d(np.asarray(X2, dtype=np.float64))
    s, score_kind = post_scores(prop, model, X2)
    if s is None:
        return low
    # predict_proba of a library logistic is elementwise of its logits: their error bound is how far another
    # batch moves it (as kinds/pair_spread.fragile_pair reads it)
    read = "logit" if library_logistic(prop, model) and not model.prob_reader()[1] else prop.post
    runtime = runtime_spread(read, prop.cls, model, X2, score_kind)
    spread = float(runtime[0])
    if spread <= 0 or every_point_exact(prop, model, X2, s, np.array([0]), np.array([1]), runtime):
        return low
    return widened(float(low), spread, class_post(prop.post), compared_kind(prop.post, score_kind), LOGISTIC_MARGIN)


def pair_lower_end(prop, model, X2, low: float) -> float:
    """:func:`lower_end` of a network's (or any non-tree model's) replayed witness pair: a solver's violated
    maximize interval is [its measure, the certified bound] (kinds/individual_fairness), and its measure was taken
    in one batch too (a torch 5-8-1 network: the milp witness measured 4.6219799518585205 as a pair, the whole
    domain's batch giving 4.621979475021362 for every pair, session 36). A tree model's runtime has no spread
    (kinds/pair_spread.runtime_spread gives 0): as it is."""
    return lower_end(prop, model, X2, low, False)


def best_pair_low(prop, model, replay_full, pair) -> float | None:
    """maximize's lower end from a solver's best ``pair`` where no witness is reported (holds, unknown:
    kinds/individual_fairness._replayed_lower_end): its measure on the runtime
    (kinds/pair_runtime.best_pair_value's, in the batch of the pair), widened by :func:`pair_lower_end`.
    A holds (proved) of milp on the torch net of :func:`pair_lower_end` gave [4.6219799518585205, ...] there."""
    from fairspec.kinds.pair_runtime import runtime_pair_value

    if pair is None:
        return None
    _, X2, s = replay_full(np.asarray(pair.x, dtype=np.float64), np.asarray(pair.x_prime, dtype=np.float64))
    rv = None if s is None else runtime_pair_value(prop, model, s, X2)
    return rv if rv is None else pair_lower_end(prop, model, X2, rv)


def every_batch(checked, prop, model, tree: bool):
    """kinds/pre_search._verified's ``(Found, None)`` with its ``lower`` (maximize's lower end) widened by
    :func:`lower_end` and its :func:`rounding_note`; ``(None, why)`` as it is."""
    got, why = checked
    if got is not None and got.witness is not None:
        got.lower = lower_end(prop, model, [got.witness.x, got.witness.x_prime], got.low, tree)
        rounding_note(got, prop, model, tree)
    return got, why


def rounding_note(got, prop, model, tree: bool) -> None:
    """A network's searched pair within the runtime's rounding of the threshold that kinds/pre_search kept (it
    breaks the post scored alone, as the pair and reversed: kinds/pair_spread.fragile_pair) carries the note
    every such witness does (README, "Whatever the batch"): ``details.runtime_rounding``, another batch size or order
    may round it away."""
    from dataclasses import replace

    from fairspec.kinds.pair_fragile import rounding_details
    from fairspec.kinds.pair_spread import fragile_pair

    if tree or got.witness is None or prop.post not in ("label", "prob", "logit", "class", "class_prob", "class_logit"):
        return
    c = got.extra.get("class")
    moved = fragile_pair(prop if c is None else replace(prop, cls=int(c)), model,
                         np.array([got.witness.x, got.witness.x_prime], dtype=np.float64))
    if moved and moved.get("reproduced"):
        got.extra["runtime_rounding"] = rounding_details(moved)
