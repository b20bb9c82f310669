"""A whole-domain solver's ``unknown`` at a tie (its only candidate pairs lie on the post-condition's boundary
within its tolerance or the runtime's rounding), decided by the refinement over the whole domain as one partition:
find / prove (:func:`decide_at_a_tie`) and maximize (:func:`maximum_at_a_tie`). Moved out of
kinds/individual_fairness.py (its runner calls them after the MILP / SMT backends; kinds/multi_pairs.py on the
class-c sub-problem); a ``holds`` here is certify's Proof of the refinement's tiling."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np


#: sub-boxes the refinement may cut the whole domain into after the solvers stopped at a tie (a count: the
#: extra work is bounded without timing the machine; the property's time budget bounds it too)
TIE_BOXES = 4096


def decide_at_a_tie(prop, problem, res, seconds, situation: str = "the solver's only candidate pairs lay on the "
                     "post-condition's boundary within its tolerance"):
    """The whole-domain solvers' ``unknown`` at a tie -- their only candidate pairs lie on the
    post-condition's boundary within their tolerance or the runtime's rounding (audit s19 engines #6:
    dyadic weights, a logit exactly 0 or a largest difference exactly eps at grid points) -- decided by
    the refinement over the whole domain as one partition (:func:`fairspec.backends.refine.decide_partitions`,
    the partitions' decision pass: sub-boxes proved fair by bounds or enumerated exactly on the runtime,
    where ``<`` is not ``<=``), within :data:`TIE_BOXES` sub-boxes and ``seconds``: ``holds`` with certify's
    Proof (the tiling, checked as the one part covering the domain by certify.partitions), ``violated``
    with a pair that replays on the runtime (run_pair replays it again), else ``res`` with why not."""
    from fairspec.backends.pair import PairResult, pair_measure
    from fairspec.backends.pair.certify import runtime_of
    from fairspec.backends.pair.problem import make_witness
    from fairspec.backends.refine import decide_partitions
    from fairspec.certify.partitions import combine_partitions, whole_claim

    if seconds is not None and seconds <= 0:
        return res
    t0 = time.perf_counter()
    whole = [(np.asarray(problem.lo, dtype=np.float64), np.asarray(problem.hi, dtype=np.float64))]
    (d,) = decide_partitions(problem, whole, seconds=3600.0 if seconds is None else float(seconds),
                             max_boxes=TIE_BOXES)
    took = time.perf_counter() - t0
    stats = {**(res.stats or {}), "at_a_tie": {"decided_by": "refinement", "seconds": round(took, 4),
                                               "boxes": d.stats.get("boxes"), "tiles": d.stats.get("tiles")}}
    why = d.reason or "the refinement's tiling was not certified"
    if d.status == "fair" and d.proof is not None:
        rt = runtime_of(problem)
        try:
            expect = whole_claim(problem, readout=rt.readout, precision=rt.precision)
        except (ValueError, TypeError, AttributeError):
            expect = None
        claim = (f"no pair violates {prop.name} on the model's runtime: the whole domain's sub-boxes, each proved "
                 "fair by bounds or enumerated")
        proof = None if expect is None else combine_partitions([d.proof], whole, problem.lo, problem.hi,
                                                               problem.integer, expect=expect, claim=claim)
        if proof is not None:
            return PairResult("holds", "proved", reason=f"{situation} (a tie); the refinement over the whole domain "
                              f"proves it: {proof.summary}", seconds=res.seconds + took, engine=res.engine,
                              mode=res.mode, stats=stats, proof=proof)
        why = "certify did not accept the refinement's tiling as a proof of the whole domain"
    elif d.status == "unfair" and d.pair is not None:
        w = make_witness(problem, *d.pair)
        if w.z < w.z_prime:
            w = make_witness(problem, d.pair[1], d.pair[0])
        return PairResult("violated", None, float(pair_measure(problem.post, w.z, w.z_prime)), None, w,
                          f"{situation} (a tie); the refinement over the whole domain found an unfair individual, "
                          "whose pair replays",
                          res.seconds + took, engine=res.engine, mode=res.mode, best=w, stats=stats)
    return replace(res, reason=f"{res.reason}; the refinement over the whole domain did not decide it either ({why})",
                   seconds=res.seconds + took, stats=stats)


def maximum_at_a_tie(prop, problem, res, seconds, model, runtime):
    """maximize's ``unknown`` at a tie (the largest measure equals the threshold within the solver's
    tolerance or the runtime's rounding: audit s19 engines #6, t2 ``mx`` / ``ml``) decided as find and
    prove are, by :func:`decide_at_a_tie` (the refinement over the whole domain, exact on the runtime):

    * ``holds``: certify's Proof that no pair breaks the post-condition on the runtime, in any batch
      size or order (the refinement leaves open an individual another batch may decide otherwise), so
      the threshold bounds the largest measure of every evaluation; the lower end is the solver's best
      pair replayed on the runtime (its measure in that batch, widened down by the runtime's spread where
      another batch may score it lower: kinds/pre_search_batches.best_pair_low). The interval is ``[v, v]`` when that pair scores exactly the threshold, else
      ``[v, threshold]``; no value when the pair does not replay or its measure is no score the runtime
      gives (label on a probability); a replayed measure beyond the proved threshold is a contradiction
      kept ``unknown``;
    * ``violated``: the refinement's pair (replayed again by run_pair, which reports its runtime
      measure), the certified upper bound kept as the interval's upper end (milp.maximize's ``bound``:
      certify's, or None), not proved;
    * else ``res`` with why the refinement did not decide it."""
    from fairspec.kinds.pair_runtime import threshold_interval
    from fairspec.kinds.pre_search_batches import best_pair_low

    tie = decide_at_a_tie(prop, problem, res, seconds, situation="the largest measure lay at the threshold within "
                           "the solver's tolerance or the runtime's rounding")
    if tie.status == "violated":
        return replace(tie, bound=None if res.bound is None else max(float(res.bound), float(tie.value)))
    if tie.status != "holds":
        return tie
    # the best pair's measure in its own batch, widened by a batch-rounding runtime's spread (another batch's
    # maximum may lie below it: kinds/pre_search_batches.best_pair_low, as every solver's lower end)
    lo = best_pair_low(prop, model, runtime.replay.full, res.best)
    thr, note = threshold_interval(problem.post, prop.eps, problem.eps_strict, lo, "the refinement's proof")
    if thr is None and lo is not None:
        return replace(res, reason=f"{res.reason}; the refinement proves the property, but {note}: not reported")
    return replace(tie, value=lo if thr is not None else None, bound=thr, best=res.best,
                   stats={**tie.stats, "maximum": note})
