"""Proof that a box of individuals is *unfair*: every individual in it has a counterfactual that
breaks the pair post-condition on the model's runtime (FairQuant's "falsified" region).

The counterfactuals are fixed: ``cases`` are assignments of the protected inputs (each a full
(lo, hi) box of model inputs: the individual's box with the protected inputs set to one value),
and ``pairs`` the (a, b) cases a pair may take (they differ where the pre-condition demands).
For each case certify bounds the runtime's score over the whole box (:func:`score_interval`:
outward-rounded intervals intersected with symbolic intervals, plus the runtime error bound E). The box is unfair when, for some
allowed (a, b), the bounds alone separate the two scores for every individual:

* ``label``: ``lower_a > t`` and ``upper_b < t`` (t = 0 on logits / margins, 1/2 on
  probabilities): the two decisions differ whichever way the runtime breaks a tie at ``t``;
* ``prob`` / ``logit``: ``lower_a - upper_b > eps`` (``>= eps`` when the spec writes
  ``|...| < eps``), compared exactly in rationals; probabilities from logits by rigorous sigmoid
  bounds.

A relaxed input (``|x_i - x'_i| <= t``) keeps the individual's own value in the counterfactual,
which every tolerance ``t >= 0`` allows; the caller builds the cases accordingly.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Sequence

__all__ = ["prove_box_unfair"]


def _prob(kind: str, lo: float, hi: float) -> tuple[float, float]:
    if kind in ("prob", "softmax"):
        return lo, hi
    from fairspec.certify.rounding import sigmoid_down, sigmoid_up

    return sigmoid_down(lo), sigmoid_up(hi)


def prove_box_unfair(runtime_net, cases: Sequence[tuple], pairs: Sequence[tuple[int, int]], *, post: str,
                     eps=0.0, eps_strict: bool = False, readout=("logit", 0), encoding=None,
                     precision: str = "float32", integer=None, onehot_groups: Sequence[Sequence[int]] = (),
                     error_boxes: Sequence[tuple] | None = None, claim: str, **detail):
    """An ``interval`` Proof that every individual of the box has a counterfactual violating the
    post-condition (see the module docstring), or None when the bounds do not show it.
    ``error_boxes``: one box per case containing it, over which the runtime error bound is computed
    (and remembered: the sub-boxes of one partition share it; see ``score_interval``)."""
    from fairspec.certify.network import score_interval
    from fairspec.certify.proof import _mint

    kind = readout[0]
    if post == "logit" and kind in ("prob", "softmax"):
        return None                          # the runtime reads probabilities; no logit bounds
    bounds = {}

    def bound(k):
        if k not in bounds:
            lo, hi = cases[k]
            bounds[k] = score_interval(runtime_net, lo, hi, readout=readout, encoding=encoding,
                                       precision=precision, integer=integer, onehot_groups=onehot_groups,
                                       symbolic=True, error_box=None if error_boxes is None else error_boxes[k])
        return bounds[k]

    for a, b in pairs:
        ra, rb = bound(a), bound(b)
        if ra is None or rb is None:
            return None                      # an empty box: nothing to prove
        (la, ha, ea), (lb, hb, eb) = ra, rb
        if post == "label":
            t = Fraction(1, 2) if kind in ("prob", "softmax") else Fraction(0)
            ok = Fraction(la) > t and Fraction(hb) < t
            margin = min(Fraction(la) - t, t - Fraction(hb))
        else:
            if post == "prob":
                la, ha = _prob(kind, la, ha)
                lb, hb = _prob(kind, lb, hb)
            gap = Fraction(la) - Fraction(hb)
            e = Fraction(float(eps))
            ok = gap >= e if eps_strict else gap > e
            margin = gap - e
        if ok:
            return _mint("interval", claim, case_a=a, case_b=b, lower_a=la, upper_b=hb, runtime_error=max(ea, eb),
                         post=post, margin=float(margin), readout=list(readout), precision=precision, **detail)
    return None
