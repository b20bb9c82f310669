"""When FVGM's rounded rule of a scikit-learn linear model stands for the model over a distribution.

A scikit-learn linear model is decided through FVGM's rule, its weights rounded to integers; a verdict
about the rule is one about the model only where the two decide alike. ``backends/boolean/support.py``
runs the model's own ``predict`` and the rule on every point of a discrete support
(``classifier.support_agreement``); :func:`rule_matches` lets the rule stand when no point is left open,
or when the declared distribution gives every open point probability exactly 0 (in exact rationals, as
the exact re-check weighs the points); :func:`model_or_unknown` turns any other verdict on the rule into
``unknown`` with :func:`rule_gap`, how far the two are known to be apart, in its reason.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from fairspec.kinds.distribution_problem import Problem
from fairspec.verdict import Verdict

__all__ = ["rule_matches", "rule_gap", "model_or_unknown"]

#: metrics whose value weighs points the declared distribution does not: influence redraws features
#: uniformly (D_-S), path_specific fixes a mediator's parent -- a point of probability 0 may count there
_REWEIGHING = ("influence", "path_specific")


#: seconds of Fraction arithmetic spent finding the open points of probability 0 (then: none excluded)
ZERO_TIME_LIMIT = 20.0


def rule_matches(prop, pb: Problem) -> None:
    """When the rule decides as the model's own ``predict`` on every point of a discrete support
    (``support_agreement``), the rule's decisions are the model's there: it stands for the model.
    So it does when every point where the two may differ (``disagree``: a differing point, or a score at
    a tie that is not exact) has probability exactly 0 under the declared distribution -- no group's
    PPV weighs it (``analyses.distribution_exact.exact_point_weighed``, the tables as written, in
    Fractions), so the model's PPVs are the rule's. Never over a distribution estimated from data (a
    probability 0 there is the sample's, not the population's), nor for influence and path_specific."""
    c = pb.details.get("classifier") or {}
    s = c.get("support_agreement") or {}
    if pb.exact_classifier or s.get("points") is None:
        return
    if s.get("disagree") == 0:
        pb.exact_classifier = True
        c["note"] = f"the rounded rule agrees with the model's predict on all {s['points']} points of the support"
        return
    zero = _zero_probability(prop, pb)
    if zero is None or not zero.any():
        return
    s["zero_probability"] = int(zero.sum())
    if zero.all():
        pb.exact_classifier = True
        c["note"] = (f"the rounded rule agrees with the model's predict on every point of the support the "
                     f"distribution gives a positive probability: every point where the two may differ "
                     f"({s['disagree']} of the {s['points']}) has probability 0")
        return
    from fairspec.backends.boolean.support import example_of

    op = pb.clf.support_open                     # the example: a point of positive probability
    live = np.flatnonzero(~zero)
    apart = [int(i) for i in live if op["model"][i] != op["rule"][i]]
    s.update(example_of(op, apart[0] if apart else int(live[0])))


def _zero_probability(prop, pb: Problem):
    """Which of the rule's open support points (``rule.support_open``) the declared distribution gives
    probability exactly 0 (a bool array), or None when that is not known exactly."""
    net = getattr(pb.bn, "exact_tables", None)
    op = getattr(pb.clf, "support_open", None)
    if net is None or op is None or prop.metric in _REWEIGHING:
        return None
    from fairspec.analyses.distribution import DistributionError, all_groups
    from fairspec.analyses.distribution_exact import ExactUnavailable, exact_point_weighed

    try:
        weighed = exact_point_weighed(net, pb.protected, all_groups(pb.bn, pb.protected), op["features"],
                                      op["codes"], time_limit=ZERO_TIME_LIMIT)
    except (ExactUnavailable, DistributionError, ArithmeticError, ValueError, MemoryError):
        return None         # not known exactly: nothing is excluded (the conservative reading)
    return ~weighed


def rule_gap(pb: Problem) -> str:
    """How far the rounded rule is known to be from the model: its support check, and its agreement
    on the data rows when there are some."""
    c = pb.details.get("classifier") or {}
    s = c.get("support_agreement") or {}
    if s.get("points") is None:
        text = s.get("why") or "the support cannot be enumerated"
    else:
        tie = s.get("at_tie", 0)
        text = (f"the rule decides unlike the model's predict on {s['disagree'] - tie} of the {s['points']} points "
                f"of the support")
        if tie:
            text += (f", and on {tie} the model's decision score lies within its rounding of 0 (predict may "
                     f"decide it either way by batch)")
        if s.get("zero_probability"):
            text += (f"; {s['zero_probability']} of these {s['disagree']} points have probability 0 under the "
                     f"distribution, the others not")
        ex = s.get("example")
        if ex:
            at = ", ".join(f"{k} = {v}" for k, v in ex.items())
            text += (f" (at {at} the model's score is at a tie; the rule decides {int(s['example_rule'])})"
                     if s.get("example_at_tie") else
                     f" (at {at} the model decides {int(s['example_model'])}, the rule {int(s['example_rule'])})")
    if c.get("agreement") is not None:
        text += f"; on the data rows the two decide alike on {c['agreement']:.2%} of them"
    return text


def model_or_unknown(prop, pb: Problem, v: Verdict) -> Verdict:
    """A verdict on the rounded rule of a linear model the rule does not match on the whole support:
    its bound covers the distribution's estimate, not the gap between the rule and the model, so it
    is ``unknown`` with the rule's value and how far the two are apart in its reason."""
    if pb.exact_classifier:
        return v
    rule = (v.details.get("classifier") or {}).get("rule")
    if v.status == "unknown":                  # undecided anyway: say too that the value is the rule's
        if v.value is None or not v.reason or "linear approximation" in v.reason:
            return v
        return dataclasses.replace(v, reason=f"{v.reason}; and the value is the model's linear approximation's"
                                             f"{f' ({rule})' if rule else ''}, not the model's: {rule_gap(pb)}")
    value = "undefined" if v.value is None else f"{v.value:.6g}"
    was = f"{v.status}{f' ({v.how})' if v.how else ''}"
    return dataclasses.replace(
        v, status="unknown", how=None, proof=None, witness=None,
        reason=f"{prop.metric} = {value} for the model's linear approximation{f' ({rule})' if rule else ''}, its "
               f"weights rounded to integers ({was} for it), not for the model: {rule_gap(pb)}, so nothing bounds "
               f"how far the model's value is from the rule's")
