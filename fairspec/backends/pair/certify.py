"""Certification of a pair solver's answers about a network (issue 20 item 2): no ``holds``
from a floating-point solver alone, and ``maximize`` as [best replayed value, certified bound].

* :func:`certify_result`: a ``holds`` the MILP (HiGHS / SCIP) reached is re-decided by the
  certified branch and bound (:func:`fairspec.backends.bab.certify_holds`: the runtime's error
  bound E moved outward into the claim, then ``prove_below``). ``proved`` -> the result keeps
  ``holds`` with the bab-certificate as its :class:`~fairspec.certify.Proof`; a candidate pair
  that breaks the moved claim is replayed on the runtime (``violated`` when it does, else
  ``unknown``: a pair within the runtime's rounding of the threshold); a time-out or a model
  outside the error model -> ``unknown`` with the reason ("the MILP says no pair violates it,
  but the answer could not be certified in T s").
* :func:`certified_bound`: a certified upper bound on the maximal violation measure of the
  runtime (the bab's bound over the real-arithmetic network, plus E in the measure's units).

The runtime (:class:`Runtime`) comes with the problem (``PairProblem.runtime``); without one,
the network's own float64 ``forward`` is the runtime (precision float64, no encoding).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, replace
from typing import Callable, NamedTuple

import numpy as np

from fairspec.backends.pair.problem import PairProblem, PairResult, Witness, check_witness, make_witness

__all__ = ["BatchScorer", "Runtime", "certify_first", "certify_result", "certify_tie", "certified_bound", "decide_by_bab", "refute_by_max",
           "replays_many", "runtime_of"]


class BatchScorer(NamedTuple):
    """The runtime's scores of many individuals at once, for the refinement's enumeration
    (backends/refine.py) and the undecided share's estimate (backends/estimate.py).

    fn:        ``fn(X)``: the runtime's scores of feature-space points X (k, n), as the post-condition
               compares them;
    post:      the post-condition and ``threshold`` its decision threshold, for
               ``certify.enumerate.pair_checks``;
    unsure:    ``unsure(points, scores, pairs)``: per individual, whether another batch size or order of
               the runtime may decide one of its pairs otherwise (``points[c]`` / ``scores[c]``: the
               individuals and their scores under counterfactual case c, ``pairs`` the allowed (a, b));
               None for a runtime that scores every batch alike;
    readout:   None, or ``("argmax", c)``: ``fn`` gives the runtime's K outputs (rows (k, K)) and
               certify reads class c from them itself (``certify.enumerate.class_scores_of``; ``unsure``
               is given those class scores);
    rounded:   ``post`` ``prob-of-logit`` where the probability is the library's own float of the logit
               (``kinds.pair_runtime.library_logistic``: scikit-learn's predict_proba, expit of
               decision_function), which ``certify.enumerate.count_individuals`` decides by the logistic's
               bounds only (expit rounds distinct logits to one float);
    prob:      None, or ``prob(X)``: the library's own probabilities of feature-space points X (k,)
               where ``rounded`` (``kinds.pair_runtime.library_probability``, predict_proba's class 1):
               the count compares these floats exactly (``post`` ``prob``,
               :func:`fairspec.backends.counterfactuals.counted_scores`), ties within the bounds' margin
               included, while ``fn``'s logits stay what ``unsure`` judges another batch by (predict_proba
               is elementwise of them)."""

    fn: Callable
    post: str
    threshold: float
    unsure: Callable | None = None
    readout: tuple | None = None
    rounded: bool = False
    prob: Callable | None = None
    decisions: bool = False             # fn gives the model's own 0/1 decisions (a label at 1/2)


@dataclass(frozen=True, eq=False)
class Runtime:
    """The model's runtime for certification.

    layers:    the runtime's layers (``certify.network.as_layers``), or None when the model is
               outside the error model (``why_not`` says why).
    encoding:  one ``certify.network.InputEncoding`` per model input (None: raw inputs).
    readout:   ``("logit", i)`` | ``("margin", i, j)`` | ``("prob", i)`` | ``("softmax", i, j)`` |
               ``("argmax", c)`` (the class score of a K-output network, :mod:`.multiclass`).
    precision: "float32" (ONNX, torch) | "float64".
    replay:    ``(x, x') -> bool``: the feature-space pair meets the pre-condition and breaks the
               post-condition on the runtime, decided exactly (None: ``check_witness`` on
               ``net.forward``).
    """

    layers: object = None
    encoding: object = None
    readout: tuple = ("logit", 0)
    precision: str = "float32"
    why_not: str = ""
    replay: Callable | None = None
    base_net: object = None          # readout ("argmax", c): the K-output network (feature space)
    #: the runtime's batch scores for the refinement's enumeration (:class:`BatchScorer`); None: not available
    scores: BatchScorer | None = None
    #: readout ("prob", i): the probability is one elementwise function of the logit's float
    #: (:func:`fairspec.models.batching.elementwise_sigmoid_head`; certify.network.equal_logits_readout)
    fixed_head: bool = False
    #: a ``label`` post's readout for the certified branch and bound where the library's predict is the
    #: sign of a logit the readout does not read (a scikit-learn linear classifier's decision_function:
    #: ``models.runtime_layers.predict_is_decision``); None: ``readout``
    label_readout: tuple | None = None

    def bab_readout(self, post: str) -> tuple:
        """The readout the certified branch and bound bounds the runtime of ``post`` through."""
        return self.label_readout if post == "label" and self.label_readout is not None else self.readout

    def __getstate__(self):          # a partition's worker gets no replay (the loaded model stays here)
        return {**self.__dict__, "replay": None, "scores": None}

    def __setstate__(self, state):
        self.__dict__.update(state)


def runtime_of(problem: PairProblem) -> Runtime:
    rt = problem.runtime
    if rt is None:
        return Runtime(problem.net, None, ("logit", 0), "float64")
    return rt


def replays(problem: PairProblem, x, xp) -> bool:
    """Does the feature-space pair violate the property on the runtime?"""
    rt = runtime_of(problem)
    if rt.replay is not None:
        return bool(rt.replay(x, xp))
    return check_witness(problem, x, xp, problem.net.forward)


def replays_many(problem: PairProblem, X, XP) -> np.ndarray:
    """:func:`replays` of each row pair (``X[i]``, ``XP[i]``): in one batch of the runtime where its
    replay has one (``replay.many``, :func:`fairspec.kinds.pair_runtime.batch_replayer`, which gives
    the one-at-a-time answers), else pair by pair."""
    rt = runtime_of(problem)
    many = getattr(rt.replay, "many", None)
    if many is not None:
        return np.asarray(many(X, XP), dtype=bool)
    return np.array([replays(problem, x, xp) for x, xp in zip(X, XP)], dtype=bool)


def _replayed_witness(problem: PairProblem, x, xp, orient: bool = True) -> Witness | None:
    """The pair as a witness when it replays on the runtime (None when it does not); ``orient``: with
    ``z >= z'`` (the pair swapped when needed)."""
    if not replays(problem, x, xp):
        return None
    w = make_witness(problem, x, xp)
    return make_witness(problem, xp, x) if orient and w.z < w.z_prime else w


def _is_network(problem: PairProblem) -> bool:
    from fairspec.models.network import PLNet

    return isinstance(problem.net, PLNet)


def certify_result(problem: PairProblem, res: PairResult, seconds: float | None, solver: str = "the MILP") -> PairResult:
    """``res`` with its ``holds`` certified (see the module docstring); other results unchanged.
    ``seconds``: the budget of the certification (None: one hour)."""
    if res.status != "holds" or res.proof is not None or not _is_network(problem):
        return res
    if os.environ.get("FAIRSPEC_BENCH_UNCERTIFIED") == "1":
        # bench/fairify.py --certify-cost only: the solver's "holds" is returned without a Proof, to
        # time the run without certification; the gate (pipeline.certified) still turns any such
        # "holds" into unknown, so this can never make a verdict "proved"
        return res
    from fairspec.backends.bab import certify_holds

    rt = runtime_of(problem)
    t0 = time.perf_counter()

    def unknown(why: str, **kw) -> PairResult:
        st = dict(res.stats, certify_seconds=round(time.perf_counter() - t0, 4))
        return PairResult("unknown", None, res.value, res.bound, None, why, res.seconds + time.perf_counter() - t0,
                          res.coverage, res.engine, res.mode, res.best, st, **kw)

    if rt.layers is None:
        return unknown(f"{solver} says no pair violates it, but the answer could not be certified: {rt.why_not}")
    budget = 3600.0 if seconds is None else max(0.0, float(seconds))
    r = certify_holds(problem, rt.layers, time.monotonic() + budget, encoding=rt.encoding,
                      readout=rt.bab_readout(problem.post),
                      precision=rt.precision, eps_strict=problem.eps_strict, base_net=rt.base_net,
                      fixed_head=rt.fixed_head)
    took = time.perf_counter() - t0
    st = dict(res.stats, certify_seconds=round(took, 4), certify_nodes=r.stats.get("nodes"),
              runtime_error=r.stats.get("runtime_error"))
    if r.status == "proved":
        return replace(res, proof=r.proof, seconds=res.seconds + took, stats=st,
                       reason=(res.reason + "; " if res.reason else "") + "certified: " + r.proof.summary)
    if r.status == "candidate" and r.pair is not None:
        w = _replayed_witness(problem, *r.pair, orient=problem.post != "label")
        if w is not None:
            return PairResult("violated", None, r.value, None, w, "the certified branch and bound found a pair "
                              "the solver missed", res.seconds + took, res.coverage, res.engine, res.mode, w, st)
        return unknown(f"{solver} says no pair violates it, but a pair lies within the runtime's rounding of the "
                       f"threshold (runtime error bound {r.stats.get('runtime_error', float('nan')):.3g}); not certified")
    return unknown(f"{solver} says no pair violates it, but the answer could not be certified in {took:.1f} s "
                   f"({r.reason or r.status})")


TIE_REASON = "a tie or a near-tie (the solver's maximum at the threshold within its tolerance or rounding); "


def certify_tie(problem: PairProblem, res: PairResult, seconds: float | None,
                solver: str = "the MILP") -> PairResult | None:
    """A result left ``unknown`` at the threshold (a maximum equal to it within solver tolerance, a pair
    violating it on the float64 network but not on the runtime) asked of certify as a ``holds``
    (:func:`certify_result`): its point leaves are exact rationals and, on a runtime exact over the box
    (:func:`fairspec.certify.exact_runtime.exact_rows`), its error bound 0, so an exact tie may be
    proved. ``holds`` only with its Proof, ``violated`` only with a pair that replays; None otherwise
    (the caller keeps its own unknown)."""
    if not _is_network(problem):
        return None
    out = certify_result(problem, replace(res, status="holds", how="proved", witness=None, proof=None), seconds,
                         solver)
    if out.status == "holds" and out.proof is not None:
        # the solver saw its maximum at the threshold only within its tolerance or the runtime's rounding:
        # the proof says no pair is past it, not that one lies exactly on it
        return replace(out, reason=TIE_REASON + out.reason)
    return out if out.status == "violated" and out.witness is not None else None


def certified_bound(problem: PairProblem, seconds: float | None):
    """``(bound, proof, best)``: a certified upper bound on the maximal violation measure of the
    runtime (``math.inf`` and None when there is none), and the best float64 pair the search saw."""
    if not _is_network(problem):
        return math.inf, None, None
    from fairspec.backends.bab import maximize as bab_max
    from fairspec.certify.network import prob_error_to_logit, runtime_error_bound

    rt = runtime_of(problem)
    if rt.layers is None:
        return math.inf, None, None
    readout = rt.bab_readout(problem.post)       # a linear classifier's label: its decision_function's E
    try:
        E = runtime_error_bound(rt.layers, problem.lo, problem.hi, encoding=rt.encoding, readout=readout,
                                proof_net=problem.net, precision=rt.precision, integer=problem.integer,
                                onehot_groups=problem.onehot_groups, base_net=rt.base_net,
                                difference=problem.post == "logit" and readout[0] in ("logit", "margin"))
    except (ValueError, TypeError, AttributeError):
        return math.inf, None, None
    prob_readout = readout[0] in ("prob", "softmax")
    if problem.post == "label":
        Eu = prob_error_to_logit(E) if prob_readout else E
    elif problem.post == "prob":
        Eu = E if prob_readout else E / 4.0 * (1 + 2.0 ** -40) + 2.0 ** -1000
        Eu = 2 * Eu
    else:
        if prob_readout:
            return math.inf, None, None
        Eu = 2 * E
    budget = 3600.0 if seconds is None else max(0.0, float(seconds))
    r = bab_max(problem, time.monotonic() + budget)
    if r.proof is None or r.bound is None:
        return math.inf, None, r.pair
    # the runtime's measure is within Eu of the real one (label: min(z, -z') moves by E)
    b = math.nextafter(float(r.bound) + Eu, math.inf)
    return b + abs(b) * 2.0 ** -50, r.proof, r.pair


def decide_by_bab(sub: PairProblem, mode: str, time_limit: float | None, max_nodes: int = 1_000_000) -> PairResult:
    """The certified branch and bound as the engine of one partition (the partitions' retry pass,
    backends/milp/partition.py) (:func:`fairspec.backends.bab.certify_holds`:
    the runtime's error moved into the claim; it splits inputs and ReLU phases inside the box):
    ``holds`` with its bab-certificate, ``violated`` with a candidate pair that replays on the
    runtime, else ``unknown``."""
    from fairspec.backends.bab import certify_holds

    t0 = time.perf_counter()
    rt = runtime_of(sub)
    if rt.layers is None:
        return PairResult("unknown", reason=f"no certified branch and bound for this model: {rt.why_not}",
                          engine="bab", mode=mode)
    budget = 3600.0 if time_limit is None else max(0.0, float(time_limit))
    r = certify_holds(sub, rt.layers, time.monotonic() + budget, encoding=rt.encoding, readout=rt.bab_readout(sub.post),
                      precision=rt.precision, eps_strict=sub.eps_strict, base_net=rt.base_net,
                      max_nodes=max_nodes, fixed_head=rt.fixed_head)
    took = time.perf_counter() - t0
    st = {"certify_seconds": round(took, 4), "certify_nodes": r.stats.get("nodes"),
          "runtime_error": r.stats.get("runtime_error"), "certify_lps": r.stats.get("lp_solves"),
          "certify_tighten_lps": r.stats.get("tighten_lps", 0), "certify_lp_seconds": r.stats.get("lp_seconds"),
          "certify_leaves": r.stats.get("leaves")}
    if r.status == "proved":
        return PairResult("holds", "proved", reason="certified: " + r.proof.summary, seconds=took, engine="bab",
                          mode=mode, stats=st, proof=r.proof)
    w = _replayed_witness(sub, *r.pair) if r.status == "candidate" and r.pair is not None else None
    if w is not None:
        return PairResult("violated", None, r.value, None, w, "the certified branch and bound found a pair that "
                          "replays", took, engine="bab", mode=mode, best=w, stats=st)
    if r.status == "candidate" and r.pair is not None:
        # its pair does not break the property on the runtime: a tie with the threshold (audit s18/h3 finding
        # 6), which the proof cannot close, as it must leave the runtime's rounding on the safe side
        # (the error bound in stats: one sentence for every partition, merged in the partitions' reason)
        why = ("a pair lies within the runtime's rounding of the threshold and does not break it on the runtime: "
               "a tie (or near-tie) the certified branch and bound, which leaves room for that rounding, cannot prove")
    else:
        why = f"the certified branch and bound did not decide it in {took:.1f} s ({r.reason or r.status})"
    return PairResult("unknown", reason=why, seconds=took, engine="bab", mode=mode, stats=st)


def refute_by_max(sub: PairProblem, mode: str, time_limit: float | None) -> PairResult:
    """A falsifier for one partition: the best-first search for the largest violation measure
    (:func:`fairspec.backends.bab.maximize`, whose greedy polish of LP points finds pairs the attack's
    samples and the proof's depth-first search miss); ``violated`` when its best pair replays on the
    runtime, else ``unknown``. It proves nothing: no ``holds`` comes from here."""
    t0 = time.perf_counter()
    if not _is_network(sub):
        return PairResult("unknown", reason="the best-first search needs a network", engine="max", mode=mode)
    from fairspec.backends.bab import maximize

    budget = 3600.0 if time_limit is None else max(0.0, float(time_limit))
    r = maximize(sub, time.monotonic() + budget)
    took = time.perf_counter() - t0
    st = {"max_seconds": round(took, 4), "max_nodes": r.stats.get("nodes"), "max_value": r.value}
    w = _replayed_witness(sub, *r.pair) if r.pair is not None else None
    if w is not None:
        return PairResult("violated", None, r.value, None, w, "the best-first search found a pair that replays",
                          took, engine="max", mode=mode, best=w, stats=st)
    largest = "" if r.value is None else f" (largest measure {r.value:.6g})"
    return PairResult("unknown", reason=f"the best-first search found no pair that replays in {took:.1f} s{largest}",
                      seconds=took, engine="max", mode=mode, stats=st)


#: nodes of the certified branch and bound tried before a partition's MILP (:func:`certify_first`)
FIRST_NODES = 6
#: ... and for the ``prob`` post, whose proofs split the logit of x' into bands first (the branch and
#: bound's BAND_SPLIT: AC-8 sex's open eps partitions took 128-3,308 nodes, 0.3-4.4 s on a loaded machine);
#: the time cap of certify_first still holds
FIRST_NODES_PROB = 4096


def certify_first(problem: PairProblem, mode: str, max_nodes: int | None = None,
                  seconds: float = 2.0) -> PairResult | None:
    """A partition proved by the certified branch and bound (:func:`decide_by_bab`) within
    ``max_nodes`` nodes (default :data:`FIRST_NODES`, :data:`FIRST_NODES_PROB` for prob), before any MILP: ``holds`` with its bab-certificate, or None (the MILP
    decides it, and its "holds" is certified by :func:`certify_result` as ever). On networks whose
    partitions the interval and LP bounds already decide this skips the MILP whose answer the same
    certificate would then check (measured on AC-1: bench/results/certify_cost.md)."""
    if not _is_network(problem) or os.environ.get("FAIRSPEC_BENCH_UNCERTIFIED") == "1":
        return None
    if max_nodes is None:
        max_nodes = FIRST_NODES_PROB if problem.post == "prob" else FIRST_NODES
    r = decide_by_bab(problem, mode, seconds, max_nodes=max_nodes)
    return r if r.status == "holds" and r.proof is not None else None
