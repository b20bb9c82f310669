"""Individual fairness of a forest that adds its trees in thread order, decided by a margin (forest_threads).

A RandomForest / ExtraTrees with ``n_jobs`` != 1 whose sums are not exact in every order
(:func:`fairspec.models.forest_threads.order_problem`) has no one output; a call returns some order's sum ``r(x)``.
Against the trees' own order ``v(x)`` (what ``n_jobs = 1`` computes, bit for bit), for every order:

    |r(x) - v(x)| <= E = 2 (gamma(n) T + u (1 + gamma(n)) T) / n + 2 eta

(n trees, T the sum over trees of their largest |leaf value|, u = 2**-53, eta the smallest subnormal: a sum of n
terms in any order is within gamma(n) sum |terms| of the exact sum, Higham Sec. 3.1; the division by n rounds
once; both r and v are such sums: :func:`fairspec.certify.rounding.reorder_error`, the bound's arithmetic in
certify; this module reads T off the trees). So for ``|out(x) - out(x')| <= eps`` (or ``< eps``), ``out`` one of the
forest's outputs (``prob``, ``prob(m(x), c)``, ``value``):

- proved on ``v`` with eps - 2E: every pair, every two orders, is within eps: ``holds (proved)``;
- a witness on ``v`` violating eps + 2E violates eps in every two orders: ``violated``;
- else ``unknown`` naming n_jobs (at eps = 0 always, unless the pair is violated by more than 2E).

Only where the forest itself is the model's estimator (alone, or a folded pipeline's last step): its output is the
forest's own. Any other post or placement is left to the AmbiguousRuntime refusal (unknown).
"""

from __future__ import annotations

import math
from dataclasses import replace

from fairspec.certify.rounding import robust_rows  # noqa: F401 - the per-row rule (certify), read here too
from fairspec.models.forest_rows import forests_of as _forests, is_own as _own, leaf_total as _leaf_total, \
    one_thread, probabilities_near, reorder_bound  # noqa: F401 - E, the one-thread reading: shared with data metrics

POSTS = ("prob", "class_prob", "value")
LABELS = ("label", "class")


def _largest(forest):
    """T / n (a Fraction): the largest |output| the trees' exact mean can take."""
    return _leaf_total(forest) / len(forest.estimators_)


def decide(prop, ctx, run):
    """The verdict by the margin above, or None when the model has no order problem (decided as usual).
    ``run(prop)`` decides a property on the model as fairspec reads it."""
    from fairspec.certify.rounding import U64, float_down, float_up, fraction
    from fairspec.verdict import unknown, with_note

    try:
        model = ctx.model(prop.model)
    except Exception:  # noqa: BLE001 - a load error is reported by the path that needs the model
        return None
    problem = getattr(model, "order_problem", None)
    if problem is None:
        return None
    forests = _forests(model)
    # the output compared is the forest's own column (not a logistic of it: a probability declared a logit)
    if prop.post in LABELS and getattr(model, "task", None) != "regression" and forests and \
            all(_own(model, f) for f in forests):
        return _labels(prop, model, forests, problem, run)
    regression = getattr(model, "task", None) == "regression"
    own = prop.post in POSTS and (prop.post == "value") == regression and \
        (regression or getattr(model, "score_kind", None) != "logit")
    if not own or not forests or not all(_own(model, f) for f in forests):
        return unknown(prop, f"{model.path.name}: {problem}")
    E = max(reorder_bound(f) for f in forests)      # a folded pipeline's runtime copy: the same trees
    eps = fraction(prop.eps)
    # and the rounding of a difference |v(x) - v(x')| (outputs at most M = T / n + E), were it computed in floats
    E += fraction(U64) * (2 * _largest(forests[0]) + E + eps)
    n_jobs = forests[0].n_jobs
    said = (f"{model.path.name} adds its {len(forests[0].estimators_)} trees in the order its n_jobs = {n_jobs} "
            f"threads finish: any order's output is within {float(float_up(E)):.3g} of the trees' order's")
    with one_thread(model, forests):
        if eps > 2 * E:
            tight = float_down(eps - 2 * E)
            v = run(replace(prop, eps=tight))
            if v.status == "holds" and v.how == "proved":
                v = _every_order(v, E)
                return with_note(v, f"{said}, so this was proved with {prop.eps_op} {tight!r} (eps - 2 x that, and a "
                                    f"rounding) in the trees' order: it holds in every order")
        loose = float_up(eps + 2 * E)
        v = run(replace(prop, eps=loose))
        if v.status == "violated":
            v = _every_order(v, E)
            return with_note(v, f"{said}, so its pair breaks {prop.eps_op} {loose!r} (eps + 2 x that, and a rounding) "
                                f"in the trees' order: it breaks eps in every order")
    inner = f"; in the trees' order it is unknown too: {v.reason}" if v.status == "unknown" else ""
    return unknown(prop, f"{model.path.name}: {problem} (its outputs in two orders differ by up to "
                         f"{float(float_up(2 * E)):.3g}, and the property is decided by no margin larger than that"
                         f"{inner})")


def _every_order(v, E):
    """A maximize verdict decided in the trees' order, about every order: each output within E of the trees' order's
    (E holds the difference's rounding too), so every order's largest difference is at most the trees' order's upper
    end + 2E (the upper end rounded up); the lower end, reached in the trees' order, stays. Found by the soundness
    family model-readings (session 37): the upper end was the trees' order's maximum, one float below another order's."""
    from fairspec.certify.rounding import float_up, fraction

    if v.bound is None or (v.details or {}).get("mode") != "maximize":
        return v
    lo, hi = v.bound
    if hi is None or not math.isfinite(hi):
        return v
    up = float(float_up(fraction(hi) + 2 * E))
    said = (f"at least {lo!r}, reached in the trees' own order; another order of the trees' sums may reach up to "
            f"{up!r} (the trees' order's upper end + 2 x {float(float_up(E)):.3g})")
    return replace(v, bound=(lo, up), details={**v.details, "maximum": said})


def _labels(prop, model, forests, problem, run):
    """``label`` / ``class`` posts: violated where the trees' order's witness decides both its inputs by more
    than any reordering can move (:func:`robust_rows` against each input's own bound, or exact in every order:
    :func:`probabilities_near`): every order gives the witness's labels; else unknown (a
    holds would need every input of the domain that far from a tie: not attempted)."""
    import numpy as np

    from fairspec.verdict import unknown, with_note

    E = max(reorder_bound(f) for f in forests)
    with one_thread(model, forests):
        v = run(prop)
        if v.status == "violated" and v.witness is not None:
            try:       # each input against its own bound; one exact in every order is never near (row_sums)
                P, near = probabilities_near(model, forests, np.array([v.witness.x, v.witness.x_prime], dtype=float),
                                             E)
            except Exception:  # noqa: BLE001 - no probabilities to read a margin from: not decided this way
                P = None
            if P is not None and P.ndim == 2 and not near.any():
                n_jobs = forests[0].n_jobs
                return with_note(v, f"{model.path.name} adds its {len(forests[0].estimators_)} trees in the order its "
                                    f"n_jobs = {n_jobs} threads finish, and the witness's two inputs are decided by "
                                    f"more than any order moves their probabilities: its labels are the same in "
                                    f"every order")
    return unknown(prop, f"{model.path.name}: {problem} (a label is decided the same in every order only away from a "
                         f"tie, and this property is not decided that way)")
