"""k-discrimination over a multiclass model's outputs (issue 25).

``k_discrimination(m, over {...}) < k`` on a multiclass model counts, for every individual, the
**distinct predicted classes** among its K counterfactuals (the runtime's own class: the library's
``predict`` for tree models, the first largest column otherwise); with ``class = c`` it buckets
class c's probability by eps as HyFair buckets a binary model's probability. Both are decided by
enumeration on the model's runtime, counted exactly by certify
(:func:`fairspec.certify.enumerate.kdisc_by_enumeration`, ``classes=True`` for the class):

* a small discrete domain (any model): every individual and its counterfactuals
  (``k_discrimination._decide_small``, passed in by the runner);
* a tree model: one individual per cell of the split tests of every class's trees
  (:func:`fairspec.kinds.tree_kdisc.decide_kdisc`).

``holds (proved: enumeration)`` with the exact max k, or ``violated`` with an individual whose
counterfactuals, replayed on the runtime, reach k; otherwise ``unknown`` with the reason (the
search, which reads one binary score, does not run on these outputs).
"""

from __future__ import annotations

import time

import numpy as np

from fairspec import ir
from fairspec.verdict import Verdict, unknown


def evaluator(prop: ir.KDiscrimination, model):
    """(X -> the runtime's classes or class ``prop.cls``'s probabilities, classes?, the tree
    ensemble of every output column or None)."""
    from fairspec.backends.trees.runtime import cell_ensemble, runtime_outputs

    classes = prop.output == "class"
    ens = cell_ensemble(model)
    if ens is not None:
        if classes:
            return (lambda X: runtime_outputs(model, X, "class")), True, ens
        return (lambda X: runtime_outputs(model, X, "class_prob", int(prop.cls))), False, ens
    if classes:
        return model.predict_class, True, None
    c = int(prop.cls)

    def probability(X):
        return np.asarray(model.class_probabilities(X), dtype=np.float64)[:, c]

    from fairspec.kinds.pair_runtime import outputs_are_logits

    if outputs_are_logits(model) and not getattr(model, "reads_library_probability", False):
        # a logit network: prob(m(x), c) is the REAL softmax of the runtime's float logits, bucketed by certify's
        # rigorous bounds of it (the float64 softmax, for the witness's display only, rounds (0, 0, -200)'s
        # 0.5 - 7e-88 onto the boundary 0.5: a second bucket, or one too few, decided by rounding)
        def bounds(X):
            from fairspec.certify.enumerate import softmax_class_bounds

            return softmax_class_bounds(np.asarray(model.outputs(X), dtype=np.float64), c)

        def nearest(X):     # the reported probabilities: each the float nearest the real softmax (exactly rounded)
            from fairspec.certify.softmax_exact import nearest as exact

            Y = np.asarray(model.outputs(X), dtype=np.float64)
            return np.array([np.nan if (e := exact(y, c)) is None else e for y in Y.reshape(Y.shape[0], -1)])

        probability.bounds = bounds
        probability.nearest = nearest
    return probability, False, None


def run_outputs(prop: ir.KDiscrimination, ctx, t0: float, decide_small) -> Verdict:
    """``decide_small``: :func:`fairspec.kinds.k_discrimination._decide_small` (passed in by its
    runner: this module imports no runner)."""
    fs = ctx.spec.feature_set(prop.features)
    enc = ctx.encoding(prop.model)
    model = ctx.model(prop.model)
    evaluate, classes, ens = evaluator(prop, model)
    if not classes and ens is not None:
        probe = evaluate(np.zeros((1, enc.width)))
        if probe is None:
            return unknown(prop, f"the library of model '{prop.model}' has no class probabilities (XGBoost's "
                                 "multi:softmax predicts the class only)", backend="search",
                           seconds=time.perf_counter() - t0)
    what = "predicted classes" if classes else f"class {prop.cls}'s probability"
    small = decide_small(prop, ctx, model, enc, fs, t0, outputs=(evaluate, classes))
    if isinstance(small, Verdict):
        return small
    note = small or ""
    if ens is not None and all(fs.get(n) is not None and fs.get(n).is_discrete for n in prop.over):
        from fairspec.kinds.tree_kdisc import decide_kdisc

        try:
            cells = decide_kdisc(prop, ctx, model, enc, fs, t0, outputs=(ens, evaluate, classes))
        except MemoryError:
            cells = None
        if isinstance(cells, Verdict):
            return cells
    counted = _by_counting(prop, fs, classes, t0)
    if counted is not None:
        return counted
    return unknown(prop, f"k-discrimination over the {what} is decided by enumeration of the domain (or of the "
                         f"cells of a tree model's split tests), and this one has too many individuals (or a banded "
                         f"numeric attribute in over){note}; the search reads one binary score", backend="search",
                   seconds=time.perf_counter() - t0)


def _by_counting(prop: ir.KDiscrimination, fs, classes: bool, t0: float):
    """``holds (proved: exact arithmetic)`` when no model can break the claim: an individual's K
    counterfactuals (the product of the categorical / boolean `over` features' values) have at most K
    distinct classes, and at most min(K, ceil(1 / eps)) buckets of class c's probability; else None."""
    import math

    from fairspec.certify.kdisc_net import bucket_count, prove_by_counterfactuals, prove_by_counting
    from fairspec.syntax.literals import number as _spec_number

    feats = [fs.get(n) for n in prop.over]
    if any(f is None or not isinstance(f.domain, (ir.Categorical, ir.Boolean)) for f in feats):
        return None
    if not classes and prop.eps is None:
        return None
    K = math.prod(len(f.values()) for f in feats)
    claim = f"k_discrimination over {{{', '.join(prop.over)}}} is {prop.op} {prop.k}"
    if classes:
        proof = prove_by_counterfactuals(K, prop.op, prop.k, claim=claim + f": K = {K} counterfactuals have at most "
                                                                          f"K distinct predicted classes")
        bound, why = K, f"{K} counterfactuals"
        details = {"engine": "counting", "K": K, "max_k_bound": K}
    else:
        proof = prove_by_counting(K, prop.eps, prop.op, prop.k,
                                  claim=claim + f" with eps = {prop.eps!r}: K = {K} counterfactuals fall into at "
                                                f"most min(K, ceil(1 / eps)) buckets")
        nb = bucket_count(prop.eps)
        bound = min(K, nb)
        why = f"{K} counterfactuals" if K <= nb else f"{nb} buckets of width {_spec_number(prop.eps)}"
        details = {"engine": "counting", "K": K, "buckets": nb, "max_k_bound": bound}
    if proof is None:
        return None
    return Verdict(prop.name, prop.kind, "holds", how="proved", value=None, backend="search",
                   seconds=time.perf_counter() - t0, proof=proof, details=details,
                   reason=f"no individual can reach more than k = {bound} (there are {why}; claim: k {prop.op} "
                          f"{prop.k}), whatever the model computes")
