"""The whole certified question for a pair problem about a model's runtime (:func:`certify_holds`): the
runtime error bound E, the claim moved outward by E, the branch and bound of :mod:`.engine` on it; a
``prob`` post at eps 0, and a ``label`` post at a tie with equal logits, asked as ``z - z' <= 0`` where
certify says equal runtime logits decide it (:func:`fairspec.certify.network.equal_logits_readout`)."""

from __future__ import annotations

import math
import time

import numpy as np

from fairspec.backends.bab.engine import BabResult, prove_below

__all__ = ["certify_holds"]


def certify_holds(problem, runtime_net, deadline: float, *, encoding=None, readout=("logit", 0),
                  precision: str = "float32", eps_strict: bool = False, start_bounds=None,
                  max_nodes: int = 1_000_000, base_net=None, fixed_head: bool = False) -> BabResult:
    """The whole certified question for a pair problem about a model's runtime: the runtime error
    bound E over the (sub-)box (:func:`fairspec.certify.network.runtime_error_bound`, with
    ``problem.net`` as the proof's network), the claim moved outward by E
    (:func:`fairspec.certify.pairlp.moved_threshold`; a label decision read from a probability
    through :func:`fairspec.certify.network.prob_error_to_logit`), then :func:`prove_below`.
    ``stats["runtime_error"]`` is E; a model outside the error model is ``gave-up`` with the reason.
    ``base_net``: the K-output network under a class readout ``("argmax", c)`` (``problem.net`` is
    then its class score, :func:`fairspec.certify.network.argmax_layers`, checked by certify).
    ``fixed_head``: the runtime's probability is one elementwise function of its logit's float (a prob
    post at eps 0 is then proved by equal logits where certify says so:
    :func:`fairspec.certify.network.equal_logits_readout`). A ``label`` post whose claim leaves a pair at the
    threshold with equal logits on the network (or a plateau of such ties) is asked that way too: equal
    runtime logits flip no label, whatever the runtime's rule at the threshold."""
    from fairspec.certify.claims import runtime_record
    from fairspec.certify.network import equal_logits_readout

    sub = problem.restrict(*start_bounds) if start_bounds is not None else problem

    def equal_logits():
        """|p - p'| <= 0, or no label flip, from z - z' <= 0 for every ordered pair, the runtime's logit
        difference the proof's exactly (certify says when); None where certify does not take it."""
        logit = equal_logits_readout(runtime_net, sub.lo, sub.hi, post=sub.post, eps=sub.eps, eps_strict=eps_strict,
                                     readout=readout, fixed_head=fixed_head, encoding=encoding, proof_net=problem.net,
                                     precision=precision, integer=sub.integer, onehot_groups=sub.onehot_groups)
        if logit is None:
            return None
        rec = dict(runtime_record(sub.eps, eps_strict, 0.0, readout, precision), via="equal logits",
                   logit_readout=list(logit))
        r = prove_below(sub.with_post("logit", 0.0), 0, False, deadline, max_nodes=max_nodes, runtime=rec)
        r.stats["runtime_error"] = 0.0
        return r

    if sub.post == "prob":
        r = equal_logits()
        if r is not None and (r.status == "proved" or time.monotonic() > deadline):
            return r
    r = _certify_claim(sub, problem, runtime_net, deadline, encoding, readout, precision, eps_strict, max_nodes,
                       base_net)
    tie = (r.status == "candidate" and _equal_on_net(problem, r.pair)) or (r.status == "gave-up" and r.stats.get("ties"))
    if sub.post == "label" and tie and time.monotonic() < deadline:
        # a label's pair at the threshold with z = z' (a real tie), or a plateau of them: the strict label claim
        # cannot close it, equal logits may (asked only then: where the logits differ it fails, after a search)
        eq = equal_logits()
        if eq is not None and eq.status == "proved":
            return eq
    return r


def _equal_on_net(problem, pair) -> bool:
    """Does the pair score the same on the problem's network (float64; a hint only)?"""
    if pair is None:
        return False
    try:
        z = np.asarray(problem.net.forward(np.vstack([np.asarray(pair[0], dtype=np.float64),
                                                      np.asarray(pair[1], dtype=np.float64)])), dtype=np.float64)
    except (ValueError, TypeError, AttributeError):
        return False
    return z.size == 2 and bool(z.reshape(-1)[0] == z.reshape(-1)[1])


def _certify_claim(sub, problem, runtime_net, deadline, encoding, readout, precision, eps_strict, max_nodes,
                   base_net) -> BabResult:
    """:func:`certify_holds`'s claim moved outward by the runtime error bound E, and its proof."""
    from fairspec.certify.claims import runtime_record
    from fairspec.certify.network import prob_error_to_logit, runtime_error_bound
    from fairspec.certify.pairlp import moved_threshold

    try:
        # a logit post reads z - z': E bounds half its error, a constant offset of the proof's output cancelling
        E = runtime_error_bound(runtime_net, sub.lo, sub.hi, encoding=encoding, readout=readout,
                                proof_net=problem.net, precision=precision, integer=sub.integer,
                                onehot_groups=sub.onehot_groups, base_net=base_net,
                                difference=sub.post == "logit" and readout[0] in ("logit", "margin"))
    except (ValueError, TypeError, AttributeError) as e:
        return BabResult("gave-up", reason=f"no runtime error bound for this model: {e}")
    prob_readout = readout[0] in ("prob", "softmax")
    if sub.post == "label" and prob_readout:
        E_used = prob_error_to_logit(E)
    elif sub.post == "prob" and not prob_readout:
        E_used = E / 4.0 * (1 + 2.0 ** -40) + 2.0 ** -1000     # sigmoid is 1/4-Lipschitz
    elif sub.post == "logit" and prob_readout:
        return BabResult("gave-up", reason="a logit post-condition on a model read as probabilities")
    else:
        E_used = E
    if not math.isfinite(E_used):       # a float16 probability error of 1/2 or more: no logit margin
        return BabResult("gave-up", reason=f"the runtime's rounding error bound ({E}) is too large for a proof "
                                           f"about this model's {precision} runtime")
    thr, strict = moved_threshold(sub.post, sub.eps, E_used, eps_strict)
    r = prove_below(sub, thr, strict, deadline, max_nodes=max_nodes,
                    runtime=runtime_record(sub.eps, eps_strict, E_used, readout, precision),
                    base_net=base_net if base_net is not None or readout[0] != "argmax" else runtime_net)
    r.stats["runtime_error"] = E_used
    return r
