"""k-discrimination of a tree model in cells: every individual's cell of the model's split tests
(:mod:`fairspec.kinds.tree_cells`) with its K counterfactuals, scored by the library in one batch,
every bucket counted exactly by certify; a violation is replayed on the independent evaluator
(:func:`fairspec.kinds.kdisc_witness.replayed_violation`)."""

from __future__ import annotations

import time

import numpy as np

from fairspec import ir
from fairspec.kinds.kdisc_witness import replayed_violation
from fairspec.kinds.tree_cells import (MAX_POINTS, build_factor, fixed_columns, runtime_name, split_tests, tree_ensemble,
                                       tree_nodes)


def decide_kdisc(prop: ir.KDiscrimination, ctx, model, enc: ir.Encoding, fs: ir.FeatureSet, t0: float,
                 outputs=None):
    """k-discrimination of a tree model by enumeration: every individual's cell (the features not in
    ``over`` grouped by the split tests that read them) with its K counterfactuals, scored by the
    library in one batch, every bucket counted exactly by certify
    (:func:`fairspec.certify.trees.kdisc_by_cell_enumeration`). A Verdict (holds with its proof and
    the exact max k, or violated with a replayed individual), or None when the cells are too many."""
    from fairspec.certify.trees import Factor as CFactor, kdisc_by_cell_enumeration
    from fairspec.verdict import Verdict

    classes = False
    if outputs is not None:
        # issue 25: (the trees of every output column, X -> the library's classes or one class's
        # probabilities, classes?) -- fairspec.kinds.kdisc_outputs
        ens, evaluate, classes = outputs
    elif getattr(model, "score_kind", None) not in ("prob", "logit"):
        return None
    else:
        ens = tree_ensemble(model)
        evaluate = model.score
        if model.prob_reader()[0] != model.score:
            # a margin-declared booster: its library's probability, read and replayed as an output
            outputs = (ens, model.prob_reader()[0], False)
            evaluate = outputs[1]
    if ens is None:
        return None
    tests = split_tests(ens)
    read = {t.column for t in tests}
    others, overs = [], []
    for c in enc.columns:
        f = fs.get(c.feature)
        if f is None:
            return None
        role = "over" if f.name in prop.over else "tied"
        fac = build_factor(enc, fs, c, f, role, tests, read, merge=role != "over")
        if isinstance(fac, str):
            return None
        (overs if role == "over" else others).append(fac)
    T = int(np.prod([f.nc for f in others], dtype=np.float64)) if others else 1
    K = int(np.prod([f.nc for f in overs], dtype=np.float64)) if overs else 1
    if K < 1:
        return None
    kg = np.meshgrid(*[np.arange(f.nc) for f in overs], indexing="ij") if overs else []
    kg = [g.reshape(-1) for g in kg]
    boxes = None
    if T * K > MAX_POINTS:
        # too many cells: products of cells on which every tree reaches one leaf (certify derives them)
        from fairspec.certify.trees import leaf_boxes

        nodes = [tree_nodes(t) for t in ens.trees]
        fixed = fixed_columns(overs, kg, K)
        try:
            boxes = leaf_boxes(nodes, [CFactor(f.name, f.columns, f.U, f.cell) for f in others], fixed,
                               max_boxes=max(1, MAX_POINTS // K))
        except ValueError:
            return None
        if boxes is None:
            return None
        T = len(boxes)
        tg = [boxes.reps[:, i] for i in range(len(others))]
    else:
        tg = np.meshgrid(*[np.arange(f.nc) for f in others], indexing="ij") if others else []
        tg = [g.reshape(-1) for g in tg]
    values = {f.name: np.repeat(f.values[f.rep[g]], K) for f, g in zip(others, tg)}
    for f, g in zip(overs, kg):
        values[f.name] = np.tile(f.values[f.rep[g]], T)
    from fairspec.runtime.encoding import encode

    X = encode(enc, values, T * K)
    s = np.asarray(evaluate(X), dtype=np.float64).reshape(-1)
    logit = outputs is None and model.score_kind == "logit"
    points = (None if any(f.intervals for f in others) else
              int(np.prod([len(f.values) for f in others], dtype=np.float64)) if others else 1)
    claim = (f"k_discrimination over {{{', '.join(prop.over)}}} with eps = {prop.eps!r} is {prop.op} {prop.k} "
             f"for all {'(infinitely many)' if points is None else f'{points:,}'} individuals ({T:,} cells of the model's "
             "split tests)")
    cf = [CFactor(f.name, f.columns, f.U, f.cell) for f in others + overs]
    try:
        if boxes is not None:
            from fairspec.certify.trees import kdisc_by_boxes

            res = kdisc_by_boxes(boxes, s, K=K, eps=prop.eps, op=prop.op, k=prop.k, logit=logit, claim=claim,
                                 points=None if points is None else points * K, classes=classes)
        else:
            res = kdisc_by_cell_enumeration(tests, cf, s, K=K, eps=prop.eps, op=prop.op, k=prop.k, logit=logit,
                                            claim=claim, points=None if points is None else points * K,
                                            classes=classes)
    except ValueError:
        return None
    seconds = time.perf_counter() - t0
    details = {"engine": "enumeration in cells" if boxes is None else "enumeration in leaf boxes",
               "individuals": points, "cells" if boxes is None else "boxes": T, "K": K,
               "max_k": int(res.k_hi.max()) if T else 0, "max_k_lower": int(res.k_lo.max()) if T else 0}
    if res.proof is not None:
        return Verdict(prop.name, prop.kind, "holds", how="proved", value=float(details["max_k"]), backend="search",
                       seconds=seconds, details=details, proof=res.proof,
                       reason=f"every individual (in {T:,} {'cells' if boxes is None else 'leaf boxes'} of the tree "
                              f"model's split tests) and its {K} "
                              f"counterfactuals evaluated on the library: max k = {details['max_k']} "
                              f"(claim: k {prop.op} {prop.k})")
    bad = res.k_lo >= prop.k if prop.op == "<" else res.k_lo > prop.k
    return replayed_violation(prop, model, X, bad, K, logit, claim, enc, fs, details, t0, runtime_name(model),
                              "enumerating every individual in cells of the tree model's split tests: one whose",
                              replay=evaluate if outputs is not None else None, classes=classes, k=res.k_lo)
