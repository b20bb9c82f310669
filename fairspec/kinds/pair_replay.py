"""The pair solvers' view of the loaded model's runtime, and the replay of their witnesses on it
(for :mod:`fairspec.kinds.individual_fairness`): what certification needs about the runtime
(:func:`solver_runtime`: its layers, readout, precision, input encoding), the runtime with the
replay of pairs and the batch scorer (:func:`with_replay`, built from
:mod:`fairspec.kinds.pair_runtime`), and the exact replay of a data flip's witness
(:func:`flip_replays`)."""

from __future__ import annotations

import numpy as np


def flip_replays(prop, model, verdict, tree: bool) -> bool:
    """A data flip's witness breaks the property on the model's runtime, decided exactly (the flips
    compare in floats and read `<` as `<=`). ``tree``: the model is a tree model the tree backends read
    (``individual_fairness.is_tree_model``)."""
    from fairspec.kinds.pair_runtime import pair_probabilities, runtime_violates

    w = verdict.witness
    if w is None:
        return False
    from fairspec.kinds.pair_runtime import post_scores

    X = np.array([w.x, w.x_prime], dtype=np.float64)
    if tree and prop.post in ("label", "prob", "logit"):
        # a tree model's outputs are its library's own, as its enumeration and every tree engine's replay
        # read them (backends/trees/runtime.runtime_outputs): `prob` is the library's probability
        # whatever the declared output, not the logistic of a margin (binary:hinge predicts 0 / 1)
        from fairspec.backends.trees.runtime import runtime_outputs
        from fairspec.certify.enumerate import compare_exact

        if prop.post == "label":
            lab = runtime_outputs(model, X, "label")
            return lab is not None and bool(lab[0] != lab[1])
        sw = runtime_outputs(model, X, prop.post)
        return sw is not None and not bool(compare_exact(sw[:1], prop.eps_op, prop.eps, minus=sw[1:])[0]
                                           and compare_exact(sw[1:], prop.eps_op, prop.eps, minus=sw[:1])[0])
    s, _ = post_scores(prop, model, X)
    # prob the library computes from the logit: decided on predict_proba's own floats (pair_probabilities)
    return s is not None and bool(runtime_violates(prop, model, s[:1], s[1:], *pair_probabilities(prop, model, X),
                                                   X2=X)[0])


def solver_runtime(prop, model, enc):
    """What certification needs about the model's runtime (fairspec.backends.pair.certify.Runtime)."""
    from fairspec.backends.pair.certify import Runtime
    from fairspec.certify.network import encoding_from_ir
    from fairspec.kinds.pair_runtime import library_logistic
    from fairspec.models.batching import elementwise_sigmoid_head
    from fairspec.models.runtime_layers import predict_is_decision, runtime_layers

    try:       # prob of a library logistic: its decision_function's layers (predict_proba is expit of them)
        layers, readout, precision = runtime_layers(model, "logit" if library_logistic(prop, model) else prop.post)
        encoding = encoding_from_ir(codes_as_variables(enc))
    except (ValueError, TypeError) as e:
        return Runtime(None, why_not=f"no runtime error bound for this model ({e})")
    return Runtime(layers, encoding, readout, precision, fixed_head=elementwise_sigmoid_head(model) is not None,
                   label_readout=("logit", 0) if prop.post == "label" and predict_is_decision(model) else None)


def codes_as_variables(enc):
    """The encoding with every code table written 0..k-1 in order: the pair problem's variable of a
    code column is the code itself (kinds/lowering.py), an exact identity whatever the table's order."""
    from dataclasses import replace as dc_replace

    cols = []
    for c in enc.columns:
        if c.kind == "code" and sorted(float(x) for x in c.codes) == [float(i) for i in range(len(c.codes))]:
            c = dc_replace(c, codes=tuple(type(x)(i) for i, x in enumerate(c.codes)))
        cols.append(c)
    return dc_replace(enc, columns=tuple(cols))


def with_replay(runtime, prop, model, enc, low, problem):
    """``runtime`` with the replay of pairs on the model's runtime (one pair, and many in one batch with the
    pairs another batch may decide otherwise replayed alone) and the batch scorer."""
    from dataclasses import replace as dc_replace

    from fairspec.kinds.pair_runtime import (Replay, batch_replayer, batch_scorer, encoder, pair_precondition,
                                             replayer)
    from fairspec.kinds.pair_spread import batch_unsure, fragile_pair

    pre = pair_precondition(prop, enc, low, problem)
    one = replayer(prop, model, enc, low, pre, fragile=fragile_pair)
    unsure = batch_unsure(prop, model, encoder(enc, low))
    return dc_replace(runtime, replay=Replay(one, batch_replayer(prop, model, enc, low, pre, one, unsure)),
                      scores=batch_scorer(prop, model, enc, low, unsure=unsure))
