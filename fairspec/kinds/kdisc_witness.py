"""The witness of a k-discrimination violation found by enumeration, shared by the network
enumeration (:mod:`fairspec.kinds.k_discrimination`) and the tree-cell enumeration
(:mod:`fairspec.kinds.tree_kdisc`): an individual certify counted with too many clusters is
replayed on the model's independent evaluator and re-counted exactly; only a reproduced one
becomes ``violated``, with its lowest and highest counterfactual as the witness."""

from __future__ import annotations

import time

import numpy as np

from fairspec.verdict import Verdict, Witness
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly


def replayed_violation(prop, model, X, bad, K: int, logit: bool, claim: str, enc, fs, details: dict, t0: float,
                       replayed_by: str, how: str, replay=None, classes: bool = False, fragile: bool = False,
                       k=None):
    """The first of (up to five) individuals flagged in ``bad`` whose K counterfactuals (rows
    ``X[i K:(i + 1) K]``), replayed on the model's independent evaluator, still fall into more
    clusters than the claim allows: the violated Verdict (``details`` gains the counterfactuals;
    the reason starts with ``how``), or None when none reproduces. ``fragile``: the individuals may
    count otherwise in another batch of the runtime (kinds/kdisc_rounding.py): each must also reproduce
    with its counterfactuals scored alone and reversed, and the details say so. ``k``: each individual's
    count, to try the largest first (the enumeration knows max k: the value and the witness are an
    individual at it, not the first one past the claim)."""
    from fairspec.certify.enumerate import kdisc_by_enumeration
    from fairspec.runtime.encoding import decode_row

    flagged = np.flatnonzero(bad)
    if k is not None:
        flagged = flagged[np.argsort(-np.asarray(k)[flagged], kind="stable")]
    for i in flagged[:5]:
        U = X[i * K:(i + 1) * K]
        # ``replay``: the issue-25 outputs (a class, one class's probability) on the library's runtime
        replayed = np.asarray((replay or model.replay)(U), dtype=np.float64).reshape(-1)
        bounder = getattr(replay, "bounds", None)    # the real softmax of a logit network (kdisc_outputs)
        again = kdisc_by_enumeration(replayed, K=K, eps=prop.eps, op=prop.op, k=prop.k, logit=logit, claim=claim,
                                     classes=classes, bounds=bounder(U) if bounder is not None else None)
        if again.proof is not None:
            continue                 # the independent evaluator does not reproduce it: try another
        if fragile:
            from fairspec.kinds.kdisc_rounding import WITNESS_NOTE, breaks_claim, reproduces

            if not reproduces(replay or model.replay, U, breaks_claim(prop, K, logit, classes)):
                continue
            details.setdefault("runtime_rounding", {})["witness"] = WITNESS_NOTE
        kr = int(again.k_lo[0])
        probs = replayed if not logit else 1.0 / (1.0 + np.exp(-replayed))
        shown = getattr(replay, "nearest", None)        # a logit network's real softmax, exactly rounded
        if logit or shown is not None:                  # (the float64 logistic / softmax may lie an ulp off)
            from fairspec.certify.softmax_exact import nearest

            exact = shown(U) if shown is not None else np.array([np.nan if (e := nearest([z], 1)) is None else e
                                                                 for z in replayed])
            probs = np.where(np.isnan(exact), probs, exact)
        lo_i, hi_i = int(np.argmin(probs)), int(np.argmax(probs))
        details["counterfactuals"] = [{"features": {f: decode_row(enc, fs, u)[f] for f in prop.over},
                                       ("class" if classes else "prob"): (int(p) if classes else float(p))}
                                      for u, p in zip(U, probs)]
        w = Witness(tuple(map(float, U[lo_i])), tuple(map(float, U[hi_i])), decode_row(enc, fs, U[lo_i]),
                    decode_row(enc, fs, U[hi_i]), tuple(float((probs if shown is not None else replayed)[i])
                                                        for i in (lo_i, hi_i)),
                    replayed_by=replayed_by)
        return Verdict(prop.name, prop.kind, "violated", value=float(kr), witness=w, backend="search",
                       seconds=time.perf_counter() - t0, details=details,
                       reason=f"{how} {K} counterfactuals over {' x '.join(prop.over)} fall into k = {kr} "
                              + ("distinct predicted classes" if classes else f"clusters of width {_spec_number(prop.eps)}")
                              + f" (claim: k {prop.op} {prop.k})")
    return None


def uncertain_bucket(prop, X, K: int, res, bounds, enc, fs) -> str:
    """Why an enumeration that evaluated every individual leaves k undecided (``res``: certify's
    :class:`~fairspec.certify.enumerate.KEnumerated`, ``bounds``: every point's rigorous ``(lo, hi)`` probability):
    the bucket of a counterfactual is not certain -- one individual whose k bounds differ (the largest upper
    bound first), its counterfactual whose probability's bounds straddle a bucket boundary, and those bounds."""
    from fairspec.certify.enumerate import kdisc_buckets
    from fairspec.runtime.encoding import decode_row
    from fairspec.syntax.literals import point

    open_ = np.flatnonzero(np.asarray(res.k_lo) != np.asarray(res.k_hi))
    if not open_.size:
        return ("every individual's k is certain, but none counted past the claim reproduced when replayed on the "
                "model's evaluator (alone, or beyond its rounding)")
    if bounds is None:
        return "the bucket of a counterfactual is not certain (its probability within rounding of a bucket boundary)"
    i = int(open_[int(np.argmax(np.asarray(res.k_hi)[open_]))])
    lo, hi = (np.asarray(b, dtype=np.float64).reshape(-1)[i * K:(i + 1) * K] for b in bounds)
    blo, bhi = kdisc_buckets(np.nan_to_num(lo, nan=0.0), prop.eps), kdisc_buckets(np.nan_to_num(hi, nan=1.0), prop.eps)
    wide = np.flatnonzero((blo != bhi) | np.isnan(lo) | np.isnan(hi))
    j = int(wide[0]) if wide.size else 0
    row = decode_row(enc, fs, X[i * K])
    who = point({f: v for f, v in row.items() if f not in prop.over})
    cf = point({f: v for f, v in decode_row(enc, fs, X[i * K + j]).items() if f in prop.over})
    what = "the probability" if getattr(prop, "cls", None) is None else f"class {prop.cls}'s probability"
    from fractions import Fraction

    from fairspec.certify.exact import threshold_of

    edge = Fraction(int(bhi[j])) * threshold_of(prop.eps)
    return (f"the bucket of an individual's counterfactual is not certain: individual {who} has k in "
            f"[{int(res.k_lo[i])}, {int(res.k_hi[i])}]: at {cf} {what} lies in [{float(lo[j])!r}, {float(hi[j])!r}] "
            f"(certify's rigorous bounds), across the bucket boundary {_spec_number(float(edge))} (eps = "
            f"{_spec_number(prop.eps)})")
