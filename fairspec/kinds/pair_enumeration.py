"""Small domains decided exactly: every admissible pair of an individual-fairness property
evaluated on the model's own runtime, every comparison made by certify.

When every feature the pair problem touches is discrete (int, bool, category) and the ordered
pairs to consider are few, there is no need for a solver: the domain's points are encoded as
fairspec's runtime encodes data (``fairspec.runtime.encoding.encode``), scored in batches by
the loaded model (``LoadedModel.score``: onnxruntime / torch in float32, scikit-learn's own
``predict_proba`` / ``decision_function``), and :func:`fairspec.certify.enumerate.by_enumeration`
decides every ordered pair exactly as the spec writes it (``<`` or ``<=``, decimal
tolerances read exactly, a ``prob`` of a logit model the real logistic of the runtime's
logit, or the library's own predict_proba where that is its float of the logit:
:func:`fairspec.kinds.pair_runtime.library_probability`). The result is ``holds (proved:
enumeration)`` or ``violated`` with the exact pair (a domain point by construction: one-hot
blocks, integers, bounds, codes of the encode block).

**The cut** (:data:`MAX_PAIRS`, :data:`MAX_POINTS`): with ``T`` combinations of the tied
features and ``V`` of the varying ones (free and relaxed), the points are ``T V`` and the
ordered pairs considered ``T V^2``; enumeration runs when ``T V^2 <= 4,000,000`` and
``T V <= 1,000,000``. Measured on this project's 2-core machine: a 13-50-50-1 ONNX net scores
10^6 points in about a second, and certify's comparisons of 4 * 10^6 pairs take about a second
(exact rationals only for the few pairs whose float difference lies within rounding of the
threshold). Larger domains go to the solvers. 

How far another batch size or order of the runtime may move a score, and the pairs it may decide otherwise, are
kinds/pair_spread.py.
"""

from __future__ import annotations

import math
import time

import numpy as np

from fairspec import ir
from fairspec.kinds.pair_spread import LOGISTIC_MARGIN, _rounded_apart, every_point_exact, runtime_spread
from fairspec.models.batching import ASSUMED_SPREAD, ASSUMED_SPREAD_OTHER  # noqa: F401 - re-exported
from fairspec.models.batching import batch_dependent

MAX_PAIRS = 4_000_000
MAX_POINTS = 1_000_000


def _max_pairs() -> int:
    """:data:`MAX_PAIRS`, or ``FAIRSPEC_ENUMERATE_PAIRS`` (0 sends every domain to the solvers:
    the differential harness's ``network-solver`` family tests them against enumeration that
    way; the same variable as for tree models, kinds/tree_pairs.py)."""
    import os

    v = os.environ.get("FAIRSPEC_ENUMERATE_PAIRS", "").strip()
    try:
        return int(float(v)) if v else MAX_PAIRS
    except ValueError:
        return MAX_PAIRS


def _values(f: ir.Feature):
    """Every value of a discrete feature (category indices, 0 / 1, the integers of its range), or None
    when it is continuous or has more values than an enumerated domain holds points (MAX_POINTS: an
    int in [0, 10^15] was materialised whole, a MemoryError and exit 4, before the cut was tried)."""
    d = f.domain
    if isinstance(d, ir.IntRange):
        if int(d.hi) - int(d.lo) + 1 > MAX_POINTS:
            return None
        return np.arange(int(d.lo), int(d.hi) + 1, dtype=np.float64)
    if isinstance(d, ir.Boolean):
        return np.array([0.0, 1.0])
    if isinstance(d, ir.Categorical):
        return np.arange(len(d.categories), dtype=np.float64)
    return None


def pair_space(prop: ir.IndividualFairness, fs: ir.FeatureSet, enc: ir.Encoding):
    """``(tied, varying, T, V)``: the features (name, values) of the enumeration, or None when a
    feature is continuous. ``varying`` are the free and the relaxed features."""
    names = []
    for c in enc.columns:
        if c.feature not in names:
            names.append(c.feature)
    from fairspec.kinds.pair_pre import pre_features

    for n in list(prop.free) + pre_features(prop):     # and the features a further pre-condition reads
        if n not in names:
            names.append(n)
    rel = dict(prop.relaxed)
    tied, varying = [], []
    for n in names:
        f = fs.get(n)
        if f is None:
            return None
        vals = _values(f)
        if vals is None:
            return None
        (varying if (n in prop.free or n in rel) else tied).append((n, vals))
    T = math.prod(len(v) for _, v in tied)
    V = math.prod(len(v) for _, v in varying)
    return tied, varying, T, V


def _grid(feats):
    """Every combination (row-major, the last feature fastest): {name: values}, count."""
    n = math.prod(len(v) for _, v in feats)
    out = {}
    rep = n
    for name, vals in feats:
        rep //= len(vals)
        out[name] = np.tile(np.repeat(vals, rep), n // (rep * len(vals)))
    return out, n


def admissible(prop: ir.IndividualFairness, varying, grid: dict, V: int) -> np.ndarray:
    """The V x V mask of admissible ordered pairs of varying parts: at least one free feature
    differs, every relaxed feature within its tolerance (exactly, ``<`` or ``<=`` as written)."""
    from fractions import Fraction

    from fairspec.certify.exact import threshold_of

    M = np.zeros((V, V), dtype=bool) if prop.free else np.ones((V, V), dtype=bool)
    for n in prop.free:
        M |= grid[n][:, None] != grid[n][None, :]
    for n, t in prop.relaxed:
        tt = threshold_of(t)
        strict = prop.relaxed_op(n) == "<"
        if n not in grid:   # read by neither the model nor the (relaxed) pre-condition: narrows no pair, or all
            M &= not any(x < 0 or x == 0 and strict for x in (tt, Fraction(t)))     # `< 0`, `<= -1/2`: none
            continue
        # integer (or category index) differences against the tolerance as written
        d = np.abs(grid[n][:, None] - grid[n][None, :]).astype(np.int64)
        limit = math.ceil(tt) - 1 if strict else math.floor(tt)      # the largest integer d with d op t
        M &= d <= limit
    return M


def _exact_maximum(sa: np.ndarray, sb: np.ndarray, m: np.ndarray, value: float) -> tuple[float, float]:
    """``(lo, hi)``: the floats at or below and at or above the exact maximum of ``sa - sb`` given their
    float differences ``m`` and its maximum ``value`` (rounding is monotone: the exact maximum is that of
    the pairs at ``value``, each ``value`` plus its TwoSum error term, exactly)."""
    from fractions import Fraction

    from fairspec.certify.rounding import float_down, float_up

    at = m == value
    x, y = sa[at], -sb[at]
    yv = value - x
    top = Fraction(value) + Fraction(float(np.max((x - (value - yv)) + (y - yv))))
    return float_down(top), float_up(top)


def _exact_at_max(sa: np.ndarray, sb: np.ndarray, m: np.ndarray, value: float) -> bool:
    """Is every float difference ``sa - sb`` equal to the float maximum ``value`` the exact difference
    (TwoSum's error term zero)? Then the exact maximum is ``value``: a pair whose float difference is
    below it has an exact one below it (rounding is monotone)."""
    if not math.isfinite(value):
        return False
    at = m == value
    x, y = sa[at], -sb[at]
    d = x + y
    yv = d - x
    err = (x - (d - yv)) + (y - yv)
    return bool(np.all(err == 0))


def decide_small(prop: ir.IndividualFairness, ctx, backend: str, mode: str, t0: float):
    """The verdict by enumeration, or None when the domain is not small and discrete (or the
    question is not one enumeration answers: a logit post on a model that outputs probabilities). A
    further pre-condition keeps the pairs it holds on, read exactly (kinds/pair_pre.py)."""
    from fairspec.certify.enumerate import (SigmoidCheck, by_enumeration, class_post, compared_kind, ordered_pairs,
                                            pair_checks)
    from fairspec.verdict import Verdict, Witness, unknown

    model = ctx.model(prop.model)
    if getattr(model, "format", None) == "rule":
        return None
    fs = ctx.spec.feature_set(prop.features)
    enc = ctx.encoding(prop.model)
    space = pair_space(prop, fs, enc)
    if space is None:
        return None
    tied, varying, T, V = space
    if T * V * V > _max_pairs() or T * V > MAX_POINTS:
        return None
    from fairspec.runtime.encoding import decode_row, encode

    vgrid, _ = _grid(varying)
    tgrid, _ = _grid(tied)
    N = T * V
    values = {n: np.repeat(v, V) for n, v in tgrid.items()} if tied else {}
    for n, v in vgrid.items():
        values[n] = np.tile(v, T)
    X = encode(enc, values, N)
    from fairspec.kinds.pair_fragile import batched_reason, lower_end, reproduced_pair, rounding_details
    from fairspec.kinds.pair_runtime import library_logistic, library_probability, post_scores, runtime_measure

    s, score_kind = post_scores(prop, model, X)
    if s is None:                   # a logit post on a runtime that computes no logit
        return None
    s_points = s
    M = admissible(prop, varying, vgrid, V)
    ia, ib = np.nonzero(M)
    base = (np.arange(T, dtype=np.int64) * V)[:, None]
    a = (base + ia[None, :]).reshape(-1)
    b = (base + ib[None, :]).reshape(-1)
    pairs, pre, adm = int(a.size), None, "admissible ordered pairs"
    if prop.pre:                    # the pairs meeting it, compared in both orders (the checks are directional)
        from fairspec.kinds.pair_pre import PairPre
        from fairspec.kinds.pre_readings import readings_maximum
        from fairspec.kinds.pre_relax import pre_words      # a relaxed run's: its kept conjuncts
        from fairspec.verdict import Unsupported

        try:
            pre = PairPre(prop, fs, values, readings=True)     # both readings of its constants: their union
            a, b, pairs = pre.closure(a, b)
            if pre.parted and mode == "maximize":       # each reading its own maximum: kinds/pre_readings.py
                return readings_maximum(lambda m: decide_small(prop, ctx, backend, m, t0), pre.parted)
        except Unsupported as e:
            return unknown(prop, f"{e}", backend=backend, seconds=time.perf_counter() - t0)
        adm = f"admissible ordered pairs meeting {pre_words()}" + (
            " in either reading of its constants (the float each is stored as, the decimal it is written as)"
            if pre.parted else "")
    count_pairs = ordered_pairs if pre is None else pre.ordered_pairs
    K = 1
    if s.ndim == 2:                 # forall c: one comparison per pair and class (point i of class c at c N + i)
        K = s.shape[1]
        s = s.T.reshape(-1)
        a = np.concatenate([a + c * N for c in range(K)])
        b = np.concatenate([b + c * N for c in range(K)])
    count = int(a.size)
    post = class_post(prop.post)
    kind = compared_kind(prop.post, score_kind)
    # prob the library computes from the logit (predict_proba): the runtime's own floats, compared exactly
    # (the logits stay what the batch rounding below is judged on: predict_proba is elementwise of them)
    P = library_probability(prop, model, X) if K == 1 else None

    def measure(i, j):              # maximize's measure of pairs (i, j): predict_proba's where it is read
        return P[i] - P[j] if P is not None else runtime_measure(post, score_kind, s[i], s[j])

    checks = pair_checks("prob" if P is not None else kind, (s if P is None else P)[a], (s if P is None else P)[b],
                         eps=prop.eps, decision_threshold=0.5 if score_kind == "label" else model.threshold,
                         eps_strict=prop.eps_strict, rounded=library_logistic(prop, model))
    from fairspec.kinds.pair_runtime import class_prob_check, interval_maximum, softmax_maximum

    rc = class_prob_check(prop, model, X, a, b, N)      # prob(m(x), c) of logits: the real softmax's bounds
    checks = checks if rc is None else [rc]
    op = "<" if prop.eps_strict else "<="
    if post == "label":
        claim = f"label(m(x)) == label(m(x')) for all {pairs:,} {adm}"
    elif post == "class":
        claim = (f"class(m(x)) == class(m(x')) (argmax, first largest column) for all {pairs:,} admissible "
                 f"ordered pairs")
    elif prop.post in ("class_prob", "class_logit") and K > 1:
        claim = (f"|{post}(m(x), c) - {post}(m(x'), c)| {op} {prop.eps!r} for each of the {K} classes c and all "
                 f"{pairs:,} {adm}")
    elif prop.post in ("class_prob", "class_logit"):
        claim = (f"|{post}(m(x), {prop.cls}) - {post}(m(x'), {prop.cls})| {op} {prop.eps!r} for all {pairs:,} "
                 f"{adm}")
    else:
        claim = f"|{post}(m(x)) - {post}(m(x'))| {op} {prop.eps!r} for all {pairs:,} {adm}"
    unit = "pairs" if K == 1 else "(class, pair) comparisons"
    if pre is not None:             # the comparisons are the pairs meeting it in either order, not those pairs
        from fairspec.kinds.pair_pre import EITHER      # the union of the readings' pairs, where they part

        unit = (f"{unit if K > 1 else 'comparisons'} (the {pairs:,} ordered pairs meeting {pre_words()}"
                f"{EITHER if pre.parted else ''}, both orders)")
    res = by_enumeration(checks, count=count, claim=claim, unit=unit, points=N,
                         **({"over": "predict_proba"} if P is not None else {}), **({"pairs": pairs} if pre else {}))
    seconds = time.perf_counter() - t0
    details = {"engine": "enumeration", "mode": mode, "points": N, "pairs": pairs,
               "cut": f"T*V^2 <= {MAX_PAIRS:,} ordered pairs", **({"pre_condition": adm} if pre else {})}
    value = bound = None
    wanted = (K == 1 or prop.post in ("class_logit", "class_prob")) and (
        mode == "maximize" and post != "class" or batch_dependent(model))
    # predict_proba is elementwise of the logits: another batch moves it only as it moves them, so their
    # error bound (decision_function's layers) is the one its pairs' rounding is judged by
    runtime = runtime_spread("logit" if P is not None else prop.post, prop.cls, model, X, score_kind) if wanted else (
        0.0, None, None, None)
    spread = runtime[0]
    moved = _rounded_apart(prop, model, X, s_points, s[a], s[b], a % N, b % N, kind, runtime)
    if moved:
        details["runtime_rounding"] = rounding_details(moved)
    elif runtime[2] == ("assumed",):            # every pair clear of the threshold by the assumed spread
        details["runtime_rounding"] = rounding_details({"near": 0, "moved": 0, "spread": spread, "assumed": True})
    if count and post != "class" and (post != "label" or score_kind == "logit"):
        m = measure(a, b)
        k = int(np.argmax(m))
        value = float(m[k])
        if mode == "maximize" and spread > 0 and every_point_exact(prop, model, X, s_points, a % N, b % N, runtime):
            spread = 0.0        # every batch scores every point of every pair alike: no other maximum
        # another evaluation of a point by the runtime (another batch size or order) may round its
        # score differently, by at most the runtime's error bound on each side: the upper end covers it
        if post == "label":
            # min(z, -z') of floats: exact
            lo, hi = value, (value if spread == 0 else math.nextafter(value + spread, math.inf))
        elif kind == "prob-of-logit":
            from fairspec.certify.enumerate import sigmoid_bounds
            from fairspec.kinds.pair_runtime import pair_measure

            # the best pair's real-logistic measure rounded down (m's lower bounds minus lower bounds may exceed it)
            pm = pair_measure(post, score_kind, s[a][k], s[b][k])
            lo = value if pm is None else min(value, pm)
            # the logistic's bounds of every logit another batch may give, which hold predict_proba's too
            hi = math.nextafter(max(float(np.max(sigmoid_bounds(s[a] + spread)[1] - sigmoid_bounds(s[b] - spread)[0])),
                                    value), math.inf)
            if P is not None:
                lo, exact_hi = _exact_maximum(P[a], P[b], m, value)
                hi = exact_hi if spread == 0 else hi    # every batch gives these predict_proba floats
        else:
            # the exact difference of two floats lies within one rounding of the float one, and
            # rounding is monotone: the float maximum is within one rounding of the exact one (and is
            # it when every pair at the float maximum was subtracted exactly: _exact_at_max)
            lo, hi = value, math.nextafter(value + 2 * spread, math.inf)
            if rc is not None:          # the real softmax: its bounds, the runtime's rounding on top; the
                _, hi = interval_maximum(rc)    # value: the exact maximum rounded down (not the float64 softmax's)
                hi = math.nextafter(hi + 2 * spread, math.inf) if spread else hi
                value = lo = softmax_maximum(prop, model, X, a, b, N, rc)
            elif _exact_at_max(s[a], s[b], m, value):
                hi = value if spread == 0 else hi
            else:
                # the nearest float of the best pair's exact difference may lie half an ulp above every
                # pair's (tree_pairs.exact_maximum's rule): the lower end is the float at or below it
                from fractions import Fraction

                from fairspec.certify.rounding import float_down

                lo = float_down(Fraction(float(s[a][k])) - Fraction(float(s[b][k])))
        if spread > 0 and batch_dependent(model) and not every_point_exact(prop, model, X, s_points, a[[k]] % N,
                                                                            b[[k]] % N, runtime):
            lo = lower_end(lo, spread, post, kind, LOGISTIC_MARGIN)     # lower in another batch, too
        bound = (lo, hi) if mode == "maximize" else None
    elif count == 0:
        value = -math.inf if mode == "maximize" else None
    # an unknown carries maximize's value (the measure its certified bound is about); in prove and find
    # modes the float largest difference over every comparison (the union's, where the readings part) is no
    # certified measure of anything the verdict decides: none is shown
    shown = value if mode == "maximize" else None
    if moved and moved.get("moved") and res.proof is not None:      # a pair another batch may break
        return unknown(prop, batched_reason(f"{moved['near']:,} of the {pairs:,} {adm} lie", moved, model),
                       backend=backend, seconds=seconds, details=details, value=shown, bound=bound)
    if res.proof is not None:
        return Verdict(prop.name, prop.kind, "holds", how="proved", value=value if mode == "maximize" else None,
                       bound=bound, backend=backend, seconds=seconds, details=details, proof=res.proof,
                       reason=f"every one of the {pairs:,} {adm} of the {N:,}-point domain "
                              f"was evaluated on the model's runtime")
    # the violating pairs certify can vouch for
    if rc is not None:
        ok, bad = rc.decide()
    elif kind == "prob-of-logit" and P is None:
        ok, bad = SigmoidCheck(s[a], op, prop.eps, s[b], library_logistic(prop, model)).decide()   # neither: undecided
    else:
        ok = np.zeros(count, dtype=bool)
        from fairspec.certify.enumerate import compare_exact

        for c in checks:
            ok |= compare_exact(c.lhs, c.op, c.rhs, c.minus)
        bad = ~ok
    from fairspec.kinds.pair_pre import READINGS, readings_witnesses, violating_words   # a witness: both readings

    bad, one = readings_witnesses(pre, a % N, b % N, bad)
    replayed = None
    if moved and moved.get("moved"):
        fragile = np.flatnonzero(bad & moved["unsure"])
        bad &= ~moved["unsure"]             # violations no batching rounds away
        if not bad.any():                   # else one a user reproduces: alone, as a pair and reversed
            replayed = reproduced_pair(prop, model, X, N, a, b, fragile, post, score_kind, s)
            if replayed is None:
                return unknown(prop, batched_reason("every violating pair lies", moved, model), backend=backend,
                               seconds=seconds, details=details, value=shown, bound=bound)
            details["runtime_rounding"] = rounding_details({**moved, "reproduced": True})
            bad[replayed[0]] = True
    idx = np.flatnonzero(bad)
    # ordered pairs (x, x'), as the denominator counts them: a comparison fails in one order of a pair that
    # breaks the (symmetric) post-condition, for one class or several (certify.enumerate.ordered_pairs)
    failing = count_pairs(a[~ok] % N, b[~ok] % N)
    if not idx.size:
        return unknown(prop, READINGS.format(at=pre.parted, n=count_pairs(a[one] % N, b[one] % N)) if one.any() else
                       f"{failing:,} of the {pairs:,} {adm} lie within the rounding of the "
                       f"{'softmax' if rc is not None else 'logistic function'} of the threshold {prop.eps!r}; "
                       "enumeration cannot decide them",
                       backend=backend, seconds=seconds, details=details, value=shown, bound=bound)
    if replayed is not None:
        j = replayed[0]
    elif post != "class" and (post != "label" or score_kind == "logit"):
        m = measure(a[idx], b[idx])
        j = int(idx[int(np.argmax(m))])
    else:
        j = int(idx[0])
    xa, xb = X[a[j] % N], X[b[j] % N]
    from fairspec.backends.data.flips import replayer_name

    runtime = "onnxruntime" if getattr(model, "format", "") == "onnx" else replayer_name(model)
    ia, ib = int(a[j] % N), int(b[j] % N)         # the points' own category indices (shared codes printed honestly)
    w = Witness(tuple(map(float, xa)), tuple(map(float, xb)), decode_row(enc, fs, xa, {k: v[ia] for k, v in values.items()}),
                decode_row(enc, fs, xb, {k: v[ib] for k, v in values.items()}),
                replayed[1] if replayed is not None else (float(s[a[j]]), float(s[b[j]])), replayed_by=runtime)
    if rc is not None:      # the real softmax: each probability exactly rounded, from the pair's logits
        from dataclasses import replace

        from fairspec.kinds.pair_runtime import softmax_class_values

        jc = prop.cls if isinstance(prop.cls, int) else int(a[j] // N)
        w = replace(w, outputs=softmax_class_values(prop, model, X[[a[j] % N, b[j] % N]], jc, w.outputs))
    violating = count_pairs(a[idx] % N, b[idx] % N) if pre is None else pre.ordered_pairs(a[idx] % N, b[idx] % N, False)
    details["violating_pairs"] = violating
    if value is not None and post != "class" and (post != "label" or score_kind == "logit"):
        # the witness's own measure (its replayed scores) is not the domain's largest difference when that
        # pair is one another batch may round away (or not vouched for): find reports the witness's, and
        # the details name both whenever they differ (maximize's value stays the domain's, with its bound)
        # reported: the pair's measure rounded down (pair_runtime.pair_measure, as a replayed solver pair's: the
        # nearest float of a difference may lie above the exact one); its float one says if it is the domain's
        from fairspec.kinds.pair_runtime import pair_measure

        if P is not None:           # predict_proba's own difference, in the batch the witness's scores come from
            Pw = P[[a[j], b[j]]] if replayed is None else library_probability(prop, model, X[[a[j] % N, b[j] % N]])
            near, wv = float(Pw[0] - Pw[1]), pair_measure("prob", "prob", Pw[0], Pw[1])
        elif rc is not None:        # the real softmax's exact measure of the witness's class, rounded down
            from fairspec.kinds.pair_runtime import softmax_pair_value

            near = wv = softmax_pair_value(prop, model, X[[a[j] % N, b[j] % N]], jc)
        else:
            near = float(runtime_measure(post, score_kind, *w.outputs))
            wv = pair_measure(post, score_kind, *w.outputs)
        wv = near if wv is None else wv     # a value that is not finite: its float difference, as it is
        if near != value:
            details["witness_value"], details["domain_maximum"] = wv, value
        if mode != "maximize":
            value = wv
    if pre is not None and pre.parted:      # of one population: the pairs meeting it in both readings
        failing = pre.ordered_pairs(a[~ok] % N, b[~ok] % N, False)
    if failing > violating:         # the others lie within the rounding of the threshold: not vouched for
        details["undecided_pairs"] = failing - violating
    if pre is not None:             # the features it reads that the model does not; the order that meets it
        w = pre.complete(w, a[j] % N, b[j] % N)
        w = pre.in_order(w, a[j] % N, b[j] % N)
    return Verdict(prop.name, prop.kind, "violated", value=value, bound=bound, witness=w, backend=backend,
                   seconds=seconds, details=details,
                   reason=f"{'at least ' if failing > violating else ''}{violating_words(pre, a % N, b % N, violating, pairs, adm)} "
                          f"violate it on the model's runtime (every pair of the {N:,}-point domain "
                          f"evaluated)")

