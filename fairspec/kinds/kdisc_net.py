"""k-discrimination proved where the search can only fail to find: the counting bound for every model
(:func:`fairspec.certify.kdisc_net.prove_by_counting`) and certify's branch and bound over a ReLU
network's individuals (:func:`fairspec.certify.kdisc_net.bound_kdisc`) on the runtime's layers as
certify's runtime error model reads them (:func:`fairspec.models.runtime_layers.runtime_layers`).
A violation the branch and bound finds is replayed on the loaded model before it is reported
(:func:`fairspec.kinds.kdisc_witness.replayed_violation`)."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np

from fairspec import ir
from fairspec.verdict import Verdict
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly

#: the branch and bound bounds each of the K counterfactuals per box: at most this many
MAX_COMBOS = 64


def counterfactuals(space) -> int:
    """K: the number of counterfactuals of an individual (the protected values' or bands' product)."""
    return math.prod(len(p.values) or len(p.bands) for p in space.protected)


def by_counting(prop: ir.KDiscrimination, K: int, t0: float) -> Verdict | None:
    """``holds (proved)`` when ``k <= min(K, ceil(1 / eps))`` meets the claim for every model, else None."""
    from fairspec.certify.kdisc_net import bucket_count, prove_by_counting

    claim = (f"k_discrimination over {{{', '.join(prop.over)}}} with eps = {prop.eps!r} is {prop.op} {prop.k}: "
             f"K = {K} counterfactuals fall into at most min(K, ceil(1 / eps)) buckets")
    proof = prove_by_counting(K, prop.eps, prop.op, prop.k, claim=claim)
    if proof is None:
        return None
    nb = bucket_count(prop.eps)
    bound = min(K, nb)
    why = f"{K} counterfactuals" if K <= nb else f"{nb} buckets of width {_spec_number(prop.eps)}"
    # value: the exact max k only (a bound is not one); the bound is in the details
    return Verdict(prop.name, prop.kind, "holds", how="proved", value=None, backend="search",
                   seconds=time.perf_counter() - t0, proof=proof,
                   details={"engine": "counting", "K": K, "buckets": nb, "max_k_bound": bound},
                   reason=f"no individual can reach more than k = {bound} (there are {why}; claim: k {prop.op} "
                          f"{prop.k}), whatever the model computes")


def _n(n: int, what: str) -> str:
    return f"{n:,} {what}" + ("" if n == 1 else "es" if what.endswith("x") else "s")


def applies(model) -> bool:
    """Is the model one the branch and bound bounds: a network file (ONNX, torch, a scikit-learn
    estimator that is no tree model) whose ``prob(m(x))`` is its declared score?"""
    from fairspec.models.network import UnsupportedModel

    if getattr(model, "format", "") not in ("onnx", "torch", "sklearn"):
        return False
    try:
        if model.tree_ensemble() is not None:
            return False
    except (UnsupportedModel, ValueError, TypeError):
        return False
    return model.prob_reader()[0] == model.score or _library_logistic(model)


def _library_logistic(model) -> bool:
    """A binary scikit-learn logistic declared by its decision_function, whose ``prob(m(x))`` is its
    predict_proba (``SklearnModel.prob_reader``): bounded on the logit, counted on predict_proba's floats."""
    return (bool(getattr(model, "reads_library_probability", False)) and getattr(model, "score_kind", "") == "logit"
            and not model.prob_reader()[1])


def by_branch_and_bound(prop: ir.KDiscrimination, ctx, model, low, enc, fs, t0: float, budget) -> Verdict | str:
    """certify's branch and bound over the network's individuals: ``holds (proved)``, a replayed
    ``violated``, or a note for the search's unknown (why it did not decide)."""
    from fairspec.backends.data.flips import replayer_name
    from fairspec.backends.smt.runtime import encode_like_runtime
    from fairspec.certify.kdisc_net import KDiscQuery, bound_kdisc
    from fairspec.certify.network import encoding_from_ir
    from fairspec.kinds import kdisc_rounding as kr
    from fairspec.kinds.pair_replay import codes_as_variables
    from fairspec.kinds.kdisc_witness import replayed_violation
    from fairspec.models.network import UnsupportedModel
    from fairspec.models.runtime_layers import runtime_layers

    if not applies(model):
        return ""
    read, logit = model.prob_reader()
    try:
        # a library logistic: its logit bounded, its predict_proba counted (KDiscQuery.library_prob)
        layers, readout, precision = runtime_layers(model, "logit" if _library_logistic(model) else "prob")
        encoding = encoding_from_ir(codes_as_variables(enc))
    except (ValueError, TypeError, UnsupportedModel) as e:
        return f"; no certified bound of this network ({e})"
    library = _library_logistic(model) and readout[0] == "logit"
    if (readout[0] in ("logit", "margin")) != bool(logit) and not library:
        return f"; the runtime's {readout[0]} readout is not what prob(m(x)) reads"
    combos = [tuple(v for part in c for v in part) for c in itertools.product(*low.protected_values)]
    if not combos or len(combos) > MAX_COMBOS:
        return f"; {len(combos):,} counterfactuals per individual are more than the branch and bound bounds"
    free = tuple(i for cols in low.protected_columns for i in cols)
    C = np.array(combos, dtype=np.float64).reshape(len(combos), len(free))
    q = KDiscQuery(layers, tuple(readout), encoding, precision, low.lo, low.hi, low.integer,
                   tuple(tuple(g) for g in low.onehot_groups), free, C, prop.eps, prop.op, int(prop.k),
                   library_prob=library)

    def evaluate(V):
        U = encode_like_runtime(enc, V)
        s = np.asarray(read(U), dtype=np.float64).reshape(-1)
        return s, kr.may_move(prop, model, U, s, False)

    deadline = None if budget is None else time.monotonic() + max(0.0, float(budget))
    try:
        r = bound_kdisc(q, evaluate, deadline=deadline)
    except (ValueError, TypeError, UnsupportedModel) as e:
        return f"; no certified bound of this network ({e})"
    details = {"engine": "kdisc-bab", "K": len(combos), "max_k_found": r.k_found, "max_k_bound": r.bound,
               **{k: r.stats.get(k) for k in ("nodes", "interval_leaves", "point_leaves", "seconds")}}
    if r.status == "proved":
        exact = r.k_found == r.bound          # an individual reaches the bound: the max k itself
        return Verdict(prop.name, prop.kind, "holds", how="proved", value=float(r.bound) if exact else None,
                       backend="search", seconds=time.perf_counter() - t0, details=details, proof=r.proof,
                       reason=f"certified branch and bound over the network's individuals ({_n(r.stats['nodes'], 'box')}; "
                              f"{_n(r.stats['point_leaves'], 'individual')} evaluated on the runtime): max k "
                              f"{'=' if exact else '<='} {r.bound} (claim: k {prop.op} {prop.k})")
    if r.status == "violated" and r.point is not None:
        if not in_domain(low, r.point):        # as the search's witness: a domain point or not reported
            return "; the branch and bound's violating individual is not a domain point (bounds, integers, one-hot blocks)"
        V = np.repeat(np.asarray(r.point, dtype=np.float64)[None, :], len(combos), axis=0)
        if free:
            V[:, list(free)] = C
        U = encode_like_runtime(enc, V)
        _, moved = evaluate(V)
        v = replayed_violation(prop, model, U, np.array([True]), len(combos), bool(logit), "the witness's k", enc, fs,
                               details, t0, replayer_name(model),
                               "certified branch and bound over the network's individuals: an individual whose",
                               replay=read if library else None, fragile=moved is not None and bool(np.any(moved)))
        if v is not None:
            return v
        return "; the branch and bound's violating individual does not replay on the loaded model"
    return f"; certified branch and bound: {r.reason}"


def in_domain(low, v) -> bool:
    """``v`` (feature space) is a domain point: within the bounds, integral where required, every
    one-hot block exactly one 1 (the protected coordinates are set per counterfactual)."""
    from fairspec.backends.search.space import Box

    v = np.asarray(v, dtype=np.float64)
    free = {i for cs in low.protected_columns for i in cs}
    keep = [i for i in range(v.shape[0]) if i not in free]
    groups = [tuple(keep.index(i) for i in g) for g in low.onehot_groups if not free.intersection(g)]
    box = Box.make(low.lo[keep], low.hi[keep], low.integer[keep], groups)
    return bool(box.contains(v[keep][None, :])[0])
