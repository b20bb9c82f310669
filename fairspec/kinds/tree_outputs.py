"""Individual fairness of a tree model with K classes or a regression objective (issue 25).

The posts ``class`` (``class(m(x)) == class(m(x'))``), ``class_prob`` (``|prob(m(x), c) -
prob(m(x'), c)| <= eps``, one class or every class), ``class_logit`` (a class's margin) and
``value`` (``|value(m(x)) - value(m(x'))| <= eps``) are decided as :mod:`fairspec.kinds.tree_pairs`
decides the binary ones on small domains: the domain is cut into **cells** on which every split
test of every tree agrees -- here the trees of *every* output column
(:func:`fairspec.backends.trees.runtime.cell_ensemble`: each class's ensemble checked against the
library), so that every output column is constant on a cell -- one representative per cell is
evaluated by the library itself (scikit-learn's ``predict`` / ``predict_proba``, the booster's
``predict``: its float32 arithmetic, its tie rule between classes), and certify compares every
admissible ordered pair exactly, with the spec's ``<`` / ``<=``
(:func:`fairspec.certify.trees.by_cell_enumeration`):

* ``holds (proved: enumeration of N cell pairs)``, or ``violated`` with a concrete domain pair
  replayed on the library;
* ``maximize`` (``class_prob`` / ``class_logit`` / ``value``): the exact largest difference over
  every admissible pair, as the interval ``[value, value]`` (its float neighbours when the exact
  difference is not a float).

"Every class" (``ensure forall c: ...``) is one enumeration over (class, pair) elements: the pair
is fair when every class's difference is.

Where the domain is not small, the data rows' counterfactual flips run first (a violation replayed
on the library), then the certified branch and bound over leaf boxes of
:mod:`fairspec.kinds.tree_boxes` (``holds (proved)``, a replayed violation, maximize as [best,
certified bound]); ``unknown`` with the reasons when neither decides. Only numpy at module level.
"""

from __future__ import annotations

import time

import numpy as np

from fairspec import ir
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly

__all__ = ["decide_outputs", "reads_trees"]


def reads_trees(model) -> bool:
    """Is the loaded model a tree model whose every output column fairspec reads as trees?"""
    from fairspec.backends.trees.runtime import cell_ensemble

    return cell_ensemble(model) is not None


def _outputs(model, X, post: str, cls):
    """The library's outputs for the post: (n,) or, for every class, (K, n); None when it has none."""
    from fairspec.backends.trees.runtime import library_task, runtime_outputs

    if post == "class":
        return runtime_outputs(model, X, "class")
    if post == "value":
        return runtime_outputs(model, X, "value")
    what = "class_prob" if post == "class_prob" else "class_logit"
    if cls == ir.EVERY_CLASS:
        _, k = library_task(model)
        cols = [runtime_outputs(model, X, what, c) for c in range(int(k or 0))]
        if not cols or any(c is None for c in cols):
            return None
        return np.stack(cols)
    return runtime_outputs(model, X, what, int(cls))


def _post_text(prop) -> str:
    if prop.post == "class":
        return "class(m(x)) == class(m(x'))"
    if prop.post == "value":
        return f"|value(m(x)) - value(m(x'))| {prop.eps_op} {_spec_number(prop.eps)}"
    fn = "prob" if prop.post == "class_prob" else "logit"
    c = "c, for every class c" if prop.cls == ir.EVERY_CLASS else str(prop.cls)
    return f"|{fn}(m(x), {c}) - {fn}(m(x'), {c})| {prop.eps_op} {_spec_number(prop.eps)}"


def decide_outputs(prop: ir.IndividualFairness, ctx, mode: str, backend: str, t0: float):
    """The Verdict of ``prop`` (a post of :data:`fairspec.ir.MULTI_POSTS`) on a tree model, by
    enumeration of cells on the library's runtime; ``unknown`` with the reason when the domain is
    not small or the library has no such output. A ``max_rows`` that only the data rows' flips on a
    large domain read (:func:`_flip_on_data`) is said to have no effect in the verdict's notes when it
    is unread for a reason lint cannot know (it loads no model): relaxed features, a small domain."""
    seen: dict = {}
    v = _decide_outputs(prop, ctx, mode, backend, t0, seen)
    if seen.get("small") == "cells":      # enumerated: the declared features it left out named (kinds/enum_unread)
        from fairspec.kinds.enum_unread import with_not_enumerated
        v = with_not_enumerated(v, prop, ctx)
    fs = ctx.spec.feature_set(prop.features)
    if prop.options.max_rows is None or "small" not in seen or fs.data is None or prop.pre or mode == "maximize":
        return v  # not set, the trees unread, or lint's FS213 said it (no data, require, maximize)
    if seen["small"] == "unread":
        why = ("the split tests alone prove it (no output column reads the protected or relaxed features), with no "
               "data rows flipped")
    elif seen["small"]:
        why = "the small domain is decided whole (every cell pair on the library's runtime), with no data rows flipped"
    elif prop.relaxed:
        why = (f"a tree model's {prop.post} post with relaxed features is not falsified on data rows first (a flip "
               "sets the protected features only)")
    else:
        return v
    from fairspec.verdict import with_note

    return with_note(v, f"`max_rows` has no effect here: {why}")


def _decide_outputs(prop: ir.IndividualFairness, ctx, mode: str, backend: str, t0: float, seen: dict):
    from fairspec.backends.trees.runtime import cell_ensemble
    from fairspec.certify import Check
    from fairspec.certify.enumerate import compare_exact
    from fairspec.kinds.tree_pairs import (Unread, _pts, _witness_values, certify_pairs, exact_maximum, pair_domain,
                                           proved_by_enumeration, runtime_name)
    from fairspec.runtime.encoding import decode_row, encode
    from fairspec.verdict import Verdict, Witness, unknown

    def gone(why: str):
        return unknown(prop, why, backend=backend, seconds=time.perf_counter() - t0)

    fs = ctx.spec.feature_set(prop.features)
    enc = ctx.encoding(prop.model)
    model = ctx.model(prop.model)
    from fairspec.kinds.tree_cells import refuse_two_logits

    refuse_two_logits(model, prop.post)             # decide_outputs' caller says it as unknown
    ens = cell_ensemble(model)
    if ens is None:
        return gone(f"the trees of model '{prop.model}' could not be read for every output column, so its "
                    f"{prop.post} output is not decided by enumeration of cells")
    # a further pre-condition is read on values (kinds/pair_pre.py): every value its own cell
    dom, why = pair_domain(prop, fs, enc, None if prop.pre else ens, with_boxes=False)
    seen["small"] = None if dom is None else "unread" if isinstance(dom, Unread) else "cells"
    if dom is None:
        # a large domain: the data rows' counterfactual flips first (cheap, a real row as witness),
        # then the certified branch and bound over leaf boxes (kinds/tree_boxes)
        from fairspec.kinds.tree_boxes import decide_by_boxes

        flip = _flip_on_data(prop, ctx, model, fs, enc, mode, backend, t0,
                             f"the domain is not small ({why})")
        if flip is not None:
            return flip
        v, why_boxes = decide_by_boxes(prop, ctx, mode, backend, t0, ens, model)
        if v is not None:
            return v
        return gone(f"the domain is not small ({why}) and the branch and bound over leaf boxes did not decide it "
                    f"({why_boxes}); no data row's counterfactual flip breaks it")
    post, cls = prop.post, prop.cls
    if isinstance(dom, Unread):
        from fairspec.certify.trees import Factor as CFactor, prove_unread

        proof = prove_unread(dom.tests, [CFactor(f.name, f.columns, f.U, f.cell) for f in dom.varying],
                             post="label" if post == "class" else post, op=prop.eps_op, eps=prop.eps,
                             claim=f"no split test of any output column tells the protected or relaxed values "
                                   f"apart: every admissible pair reaches the same leaves, so {_post_text(prop)}")
        if proof is None:
            return gone("the domain is not small, and a difference of 0 does not satisfy the post-condition")
        value = bound = None
        if mode == "maximize" and post != "class":
            value, bound = 0.0, (0.0, 0.0)
        return Verdict(prop.name, prop.kind, "holds", how="proved", value=value, bound=bound, backend=backend,
                       seconds=time.perf_counter() - t0, proof=proof, details={"mode": mode},
                       reason="the model never reads the protected or relaxed features where an output can "
                              "change, so x and x' always reach the same leaves")
    from fairspec.kinds.pair_pre import restrict_domain

    from fairspec.kinds.pre_relax import pre_words

    pc = pre_words()                  # inside a relaxed run (kinds/pre_relax), the relaxed one it reads
    pre, meeting, extra = restrict_domain(prop, fs, dom, pc, readings=True)
    if pre is not None and pre.parted:      # each reading admits its own pairs: proved over their union (pair_pre)
        from fairspec.kinds.pair_pre import EITHER
        from fairspec.kinds.pre_readings import readings_maximum
        if mode == "maximize":          # each reading its own maximum: kinds/pre_readings.py
            return readings_maximum(lambda m: _decide_outputs(prop, ctx, m, backend, t0, seen), pre.parted)
        pc = f"{pc}{EITHER}"
    details = {"mode": mode, "points": dom.points, "cells": dom.n, "pairs": meeting,
               **({"leaf_boxes": len(dom.boxes)} if dom.boxes is not None else {}),
               "runtime": runtime_name(model), "post": post,
               **({"pre_condition": f"admissible ordered pairs meeting {pc}"} if pre else {})}
    grid = dom.grid()
    X = encode(enc, {f.name: f.values[f.rep[g]] for f, g in zip(dom.factors, grid)}, dom.n)
    I, J = dom.I, dom.J
    unit = "cell pairs" if dom.tests is not None else "pairs" if pre is None else f"ordered pairs meeting {pc}"
    claim = (f"{_post_text(prop)} for every pair of the {_pts(dom)} domain points that {pc} pairs, "
             "on the library's runtime")

    def certified(checks, count):
        return certify_pairs(dom, checks, count, claim, details["runtime"], **extra)

    if I.size == 0:
        claim = f"no pair of the domain satisfies {pc}"
        res = certified(Check(np.zeros(0), "<=", 0), 0)
        return Verdict(prop.name, prop.kind, "holds", how="proved", backend=backend,
                       seconds=time.perf_counter() - t0, details=details, proof=res.proof, reason=claim)
    s = _outputs(model, X, post, cls)
    if s is None:
        return gone(f"the library of model '{prop.model}' has no {post} output"
                    + (" (XGBoost's multi:softmax predicts the class only)" if post == "class_prob" else ""))
    every = s.ndim == 2
    if post == "class":
        checks = Check(s[I], "==", 0, minus=s[J])
        count = int(I.size)
    elif every:
        # (class, pair) elements, class outermost: the pair is fair when every class's difference is
        checks = Check(s[:, I].reshape(-1), prop.eps_op, prop.eps, minus=s[:, J].reshape(-1))
        count = int(I.size) * s.shape[0]
    else:
        checks = Check(s[I], prop.eps_op, prop.eps, minus=s[J])
        count = int(I.size)
    try:
        res = certified(checks, count)
    except ValueError as e:
        return gone(f"the enumeration was not certified: {e}")
    value = bound = None
    best = None
    if mode == "maximize" and post != "class":
        a = s[:, I].reshape(-1) if every else s[I]
        b = s[:, J].reshape(-1) if every else s[J]
        value, bound, best = exact_maximum(a, b)
        details["maximum"] = f"exact over every admissible pair (enumeration of {unit})"
    seconds = time.perf_counter() - t0
    if res.proof is not None:
        return proved_by_enumeration(prop, res, meeting, unit, value, bound, backend, seconds, details)
    from fairspec.kinds.pair_pre import READINGS, readings_witness

    n_ij = int(I.size)                  # forall c: comparison k is pair k % n_ij of class k // n_ij
    k = readings_witness(pre, I[res.bad % n_ij], J[res.bad % n_ij], res.bad)
    if k is None:                       # res.index, or the first violation both readings admit
        return gone(READINGS.format(at=pre.parted, n=pre.ordered_pairs(I[res.bad % n_ij], J[res.bad % n_ij])))
    k = best if best is not None else k
    col = None
    if every:
        col, k = divmod(int(k), int(I.size))
        details["class"] = col
    i, j = int(I[k]), int(J[k])
    vx, vy = _witness_values(dom, [g[i] for g in grid], [g[j] for g in grid])
    XW = encode(enc, {n: np.array([vx[n], vy[n]]) for n in vx}, 2)
    sw = every_sw = _outputs(model, XW, post, cls)
    if every:
        sw = sw[col]
    if post == "class":
        again = bool(sw[0] != sw[1])
    else:
        again = not bool(compare_exact(sw[:1], prop.eps_op, prop.eps, minus=sw[1:])[0])
    if not again:
        return gone("the violating cell pair did not reproduce on a concrete pair of the library's runtime")
    if every and value is None:     # forall c: the pair's measure is its largest class difference, not the
        from fairspec.certify.enumerate import largest_class

        col = largest_class(every_sw, col)     # first class that breaks the claim (class 0 before class 1)
        details["class"], sw = col, every_sw[col]
    w = Witness(tuple(map(float, XW[0])), tuple(map(float, XW[1])), decode_row(enc, fs, XW[0]),
                decode_row(enc, fs, XW[1]), (float(sw[0]), float(sw[1])), replayed_by=details["runtime"])
    if value is None and post != "class":      # the pair's measure rounded down (the nearest may lie above it)
        from fairspec.kinds.pair_runtime import pair_measure

        value = pair_measure("value", "", sw[0], sw[1])
    from fairspec.certify.enumerate import ordered_pairs

    # ordered pairs, as I and J hold them (a difference fails in one order of a pair, in one class or several)
    kb = res.bad % int(I.size)
    details["violating_pairs"] = violating = ordered_pairs(I[kb], J[kb]) if pre is None else pre.ordered_pairs(I[kb], J[kb], False)
    from fairspec.kinds.pair_pre import violating_words     # both readings' pairs over both readings' pairs
    if pre is not None:
        w = pre.in_order(w, i, j)   # the order of the pair that meets the pre-condition
    return Verdict(prop.name, prop.kind, "violated", value=value, bound=bound, witness=w, backend=backend,
                   seconds=seconds, details=details,
                   reason=f"{violating_words(pre, I, J, violating, meeting, 'admissible ordered ' * (pre is None) + unit)} violate it on the library's "
                          "runtime (enumeration)")


MAX_FLIPS = 512



def _flip_on_data(prop, ctx, model, fs, enc, mode: str, backend: str, t0: float, why: str):
    """On a domain too large to enumerate: every data row (a seeded sample of ``max_rows`` of them when
    the property says so) with its protected features set to each
    combination of their values (counterfactual flips), scored by the library; the first pair that
    breaks the post-condition, replayed on the library and compared exactly, is ``violated`` (data
    rows are domain points: the frame keeps only rows inside the declared domains). None when no
    flip breaks it, or the property is not a plain "except {protected}" one (relaxed features,
    further pre-conditions, maximize: a flip is no maximum)."""
    import itertools

    from fairspec.backends.data.flips import _value_lists, sample_rows
    from fairspec.certify.enumerate import compare_exact
    from fairspec.kinds.tree_pairs import runtime_name
    from fairspec.runtime.encoding import decode_row, encode
    from fairspec.verdict import Verdict, Witness

    from fairspec.kinds.pre_relax import relaxing

    if fs.data is None or prop.pre or relaxing() or prop.relaxed or mode == "maximize":
        return None
    try:
        rows = ctx.rows(fs.name, fs.data)
    except Exception:  # noqa: BLE001 - the data's own errors are reported where the data is read
        return None
    values, n = sample_rows(rows.frame.values, rows.frame.n_rows, prop.options)  # max_rows, as run_flips
    if n == 0 or any(f not in values for f in prop.free):
        return None
    combos = list(itertools.product(*_value_lists(fs, prop.free, values)))
    if not combos or len(combos) > MAX_FLIPS:
        return None
    X = encode(enc, values, n)
    s0 = _outputs(model, X, prop.post, prop.cls)
    if s0 is None:
        return None

    def breaks(a, b):
        if prop.post == "class":
            return a != b
        a2 = a.reshape(-1, n) if a.ndim == 2 else a[None]
        b2 = b.reshape(-1, n) if b.ndim == 2 else b[None]
        bad = np.zeros(n, dtype=bool)
        for x, y in zip(a2, b2):
            bad |= ~(compare_exact(x, prop.eps_op, prop.eps, minus=y) & compare_exact(y, prop.eps_op, prop.eps, minus=x))
        return bad

    for combo in combos:
        v2 = dict(values)
        differs = np.zeros(n, dtype=bool)
        for name, val in zip(prop.free, combo):
            v2[name] = np.full(n, val, dtype=np.float64)
            differs |= np.asarray(values[name], dtype=np.float64) != val
        if not differs.any():
            continue
        X2 = encode(enc, v2, n)
        s2 = _outputs(model, X2, prop.post, prop.cls)
        bad = breaks(s0, s2) & differs
        for i in np.flatnonzero(bad)[:5]:
            XW = np.stack([X[i], X2[i]])
            sw = _outputs(model, XW, prop.post, prop.cls)        # replayed on the library
            if sw.ndim == 2:
                cols = [c for c, r in enumerate(sw)
                        if not (compare_exact(r[:1], prop.eps_op, prop.eps, minus=r[1:])[0]
                                and compare_exact(r[1:], prop.eps_op, prop.eps, minus=r[:1])[0])]
                if not cols:
                    continue
                from fairspec.certify.enumerate import largest_class

                sw = sw[largest_class(sw, cols[0])]
            elif prop.post == "class":
                if sw[0] == sw[1]:
                    continue
            elif compare_exact(sw[:1], prop.eps_op, prop.eps, minus=sw[1:])[0] and \
                    compare_exact(sw[1:], prop.eps_op, prop.eps, minus=sw[:1])[0]:
                continue
            from fairspec.kinds.pair_runtime import pair_measure

            fx, fxp = decode_row(enc, fs, XW[0]), decode_row(enc, fs, XW[1])
            w = Witness(tuple(map(float, XW[0])), tuple(map(float, XW[1])), fx, fxp, (float(sw[0]), float(sw[1])),
                        replayed_by=runtime_name(model))
            value = None if prop.post == "class" else pair_measure("value", "", sw[0], sw[1])     # rounded down
            return Verdict(prop.name, prop.kind, "violated", value=value, witness=w,
                           backend=f"{backend} (falsified on data)", seconds=time.perf_counter() - t0,
                           details={"mode": mode, "rows": int(n), "flips": len(combos), "post": prop.post},
                           reason=f"a data row ({int(i) + 1} of the {int(n):,} in the domain) with its protected "
                                  f"features flipped breaks it on the library's runtime (replayed); "
                                  + why.replace("the domain is not small", "its domain is too large to prove it"))
    return None
