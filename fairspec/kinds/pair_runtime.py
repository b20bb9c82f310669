"""The loaded model's runtime for the pair solvers: what certification needs to bound the
runtime's error (its layers, the readout, the precision, the input encoding) and the exact
replay of a candidate pair on the runtime (``LoadedModel.score``, every comparison by certify).

A pair found by a solver lives in feature space (one variable per raw value, one-hot columns,
category indices); it is mapped back to feature values and encoded exactly as the runtime
encodes data (``fairspec.runtime.encoding.encode``), then scored by the loaded model. A pair
violates when certify's exact comparisons say so, with the spec's strictness (``<`` / ``<=``
of the tolerance; ``prob`` of a logit model: the real logistic of the runtime's logits).
"""

from __future__ import annotations

import numpy as np

from fairspec import ir
from fairspec.models.runtime_layers import logit_scores


def class_networks(model):
    """``(net, runtime)`` of a K-output network for the ``class`` and ``class_prob`` posts, both with every
    column and no readout: the network the solvers encode, and the runtime's layers certify bounds. Where
    the runtime's layers are its own numbers (one rounding each) both are :meth:`runtime_network`; an
    identity MLP or a chain of linear layers is its folded network (``folded_network``) against the
    runtime's chain (``runtime_chain``: one layer per rounding, identity between), which
    :mod:`fairspec.certify.chains` compares exactly. Raises ``UnsupportedModel`` (the runtime network's
    refusal, or the chain's when an operator rounds twice)."""
    from fairspec.models.network import UnsupportedModel

    try:
        raw = model.runtime_network()
        return raw, raw
    except UnsupportedModel as refused:
        try:
            net = model.folded_network()
        except UnsupportedModel:
            raise refused from None
    return net, model.runtime_chain()


def feature_values(low, enc: ir.Encoding, V: np.ndarray) -> dict:
    """Feature values (categories as indices) of feature-space points V (k, n)."""
    V = np.atleast_2d(np.asarray(V, dtype=np.float64))
    out = {}
    for c in enc.columns:
        seg = V[:, c.offset:c.offset + c.width]
        if c.kind == "onehot":
            out[c.feature] = np.argmax(seg, axis=1).astype(np.float64)
        elif c.kind == "code":
            # the variable is the code's rank (lowering); the runtime's encode takes the category index
            from fairspec.kinds.lowering import code_index

            out[c.feature] = code_index(c, seg[:, 0])
        else:
            v = seg[:, 0]
            out[c.feature] = np.where(low.integer[c.offset], np.round(v), v)
    return out


def label_by_predict(model) -> bool:
    """The model's label is its library's own ``predict`` (a binary scikit-learn classifier), so a
    ``label`` post compares predict's 0/1 (kind ``"label"``, threshold 1/2), not the score."""
    return bool(getattr(model, "label_by_predict", False))


def label_by_argmax(model) -> bool:
    """The model's label is "column ``index`` is the largest" of K >= 2 logits (``Readout.argmax_decision``),
    the argmax's class at a tie (the first maximal column), which ``LoadedModel.decide`` reads: a ``label``
    post compares that decision as 0/1 (kind ``"label"``), not ``y_i - max_{j != i} y_j > 0`` (a tie is
    class i where i is the first maximal column). A scikit-learn model reads its own predict instead."""
    readout = getattr(model, "readout", None)
    return bool(getattr(readout, "argmax_decision", False)) and not label_by_predict(model)


def tie_unencoded(prop: ir.IndividualFairness, model) -> str | None:
    """Why the solvers cannot decide a ``label`` post of two logits read with ``index = 0``, or None: they encode
    class 0 as ``g = z_0 - z_1 > 0``, while the runtime's argmax (``label_by_argmax``) calls an exact tie class 0
    too, so a pair flipping only at a tie was no pair to them (an SMT `holds (proved)` broken on the runtime)."""
    readout = getattr(model, "readout", None)
    if prop.post != "label" or not label_by_argmax(model) or readout.columns != 2 or readout.index != 0:
        return None
    return ("the solvers encode class 0 of two logits as 'column 0 minus column 1 is > 0', but the runtime's "
            "argmax calls an exact tie class 0 too (the first largest column); declare index = 1 on the model, "
            "which asks the same label question (label(m(x)) == label(m(x')) does not depend on which class is 1)")


def label_is_decision(model) -> bool:
    """A ``label`` post compares the model's decisions as 0/1 (:func:`label_by_predict` or
    :func:`label_by_argmax`), not its score against the threshold."""
    return label_by_predict(model) or label_by_argmax(model)


def label_threshold(prop: ir.IndividualFairness, model):
    """The threshold a ``label`` post's scores are compared with (see ``post_scores``)."""
    return 0.5 if prop.post == "label" and label_is_decision(model) else model.threshold


def outputs_are_logits(model) -> bool:
    """Are the model's ``outputs`` (every column) logits, as ``logit(m(x), c)`` reads them (README: an output
    of logits only)? Its readout says so (``score = logit``, a booster's margins). A scikit-learn model read by
    predict_proba (a pipeline evaluated whole ending in an XGBClassifier) is not: its columns are
    probabilities, and comparing them as logits proved |logit(m(x), c) - logit(m(x'), c)| <= eps where the
    margins differ by more (review of session 29)."""
    return getattr(getattr(model, "readout", None), "score", None) == "logit"


def real_softmax(prop: ir.IndividualFairness, model) -> bool:
    """Is ``prob(m(x), c)`` the REAL softmax of the runtime's float logits (one column: the real logistic,
    ``[1 - p, p]``)? So for a ``class_prob`` post on a model whose outputs are logits (:func:`outputs_are_logits`)
    and whose library computes no probability of its own (a scikit-learn classifier read by predict_proba, a
    booster, whose tree engines read its predict_proba, are decided on those floats). fairspec's float64 softmax of them is only an approximation (1 / (1 + exp(-z))
    rounds z = 36.73 to 1 - 2**-52 and 36.75 to 1.0, 2.2e-16 apart, where the real logistic moves by 2.2e-18):
    a pair is decided by certify's rigorous bounds of it (:func:`class_prob_decide`), never by those floats."""
    return prop.post == "class_prob" and outputs_are_logits(model) and \
        not getattr(model, "reads_library_probability", False) and \
        getattr(model, "format", "") not in ("xgboost", "lightgbm")    # a booster's: its predict_proba (tree engines)


def class_prob_decide(prop: ir.IndividualFairness, model, Ya, Yb, cls=None) -> tuple[np.ndarray, np.ndarray]:
    """``(fair, violated)`` per pair of the REAL softmax's class ``cls`` (default ``prop.cls``; not a class
    index -- ``forall c`` -- every class, fair when each is, violated when one is) of the runtime's logit rows ``Ya``, ``Yb`` (k, K), in
    both orders, with the spec's ``<`` / ``<=`` (certify's :func:`~fairspec.certify.enumerate.softmax_check`):
    a pair in neither lies within the bounds' rounding of eps and is undecided. The one function every path
    that decides ``prob(m(x), c)`` of a logit network calls (enumeration, replays, the searches)."""
    from fairspec.certify.enumerate import softmax_check

    Ya = np.asarray(Ya, dtype=np.float64)
    Yb = np.asarray(Yb, dtype=np.float64)
    Ya = Ya.reshape(-1, 1) if Ya.ndim == 1 else Ya
    Yb = Yb.reshape(-1, 1) if Yb.ndim == 1 else Yb
    cls = prop.cls if cls is None else cls
    K = max(2, Ya.shape[1])
    classes = [int(cls)] if isinstance(cls, (int, np.integer)) else range(K)
    op = "<" if prop.eps_strict else "<="
    fair = np.ones(Ya.shape[0], dtype=bool)
    bad = np.zeros(Ya.shape[0], dtype=bool)
    for c in classes:
        for u, v in ((Ya, Yb), (Yb, Ya)):
            f, b = softmax_check(u, v, c, op, prop.eps).decide()
            fair &= f
            bad |= b
    return fair & ~bad, bad


def class_prob_check(prop: ir.IndividualFairness, model, X, a, b, N: int):
    """The enumeration's comparisons ``p_c(X[a % N]) - p_c(X[b % N]) op eps`` (class ``a // N`` under
    ``forall c``, else ``prop.cls``) of the REAL softmax of the runtime's logits of the points ``X`` (N rows),
    as one :class:`~fairspec.certify.enumerate.IntervalCheck` (certify's bounds: fair / violated only where
    certain); None where ``prob(m(x), c)`` is not that (:func:`real_softmax`)."""
    if not real_softmax(prop, model):
        return None
    from fairspec.certify.enumerate import IntervalCheck, softmax_check

    Y = np.asarray(model.outputs(X), dtype=np.float64)
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    op = "<" if prop.eps_strict else "<="
    cls = np.full(a.shape[0], int(prop.cls)) if isinstance(prop.cls, int) else a // N
    parts = [np.zeros(a.shape[0]) for _ in range(4)] + [np.zeros(a.shape[0], dtype=bool) for _ in range(3)]
    for c in np.unique(cls):
        k = np.flatnonzero(cls == c)
        ck = softmax_check(Y[a[k] % N], Y[b[k] % N], int(c), op, prop.eps)
        for part, v in zip(parts, (ck.lhs, ck.lhs_hi, ck.minus, ck.minus_hi, ck.same, ck.below, ck.above)):
            part[k] = v
    return IntervalCheck(parts[0], parts[1], op, prop.eps, parts[2], parts[3], *parts[4:])


def interval_maximum(check) -> tuple[float, float]:
    """``(lo, hi)`` around the largest real difference of an :class:`~fairspec.certify.enumerate.IntervalCheck`'s
    elements: the largest certain lower end, the largest upper end (both rounded outward)."""
    from fairspec.certify.rounding import down, up

    with np.errstate(invalid="ignore"):
        lo = down(np.asarray(check.lhs) - np.asarray(check.minus_hi))
        hi = up(np.asarray(check.lhs_hi) - np.asarray(check.minus))
    return float(np.nanmax(lo)), float(np.nanmax(hi))


def softmax_class_values(prop: ir.IndividualFairness, model, X2, c: int, floats) -> tuple:
    """The two probabilities a witness REPORTS of class ``c`` of the encoded pair ``X2`` (2 rows): where
    ``prob(m(x), c)`` is the real softmax of the runtime's logits (:func:`real_softmax`), each the float
    nearest it (exactly rounded, :func:`fairspec.certify.softmax_exact.nearest`; fairspec's float64 softmax
    ``floats`` may lie an ulp off), else ``floats`` as they are."""
    floats = tuple(float(v) for v in np.asarray(floats, dtype=np.float64).reshape(-1)[:2])
    if not real_softmax(prop, model) or X2 is None or len(floats) != 2:
        return floats
    from fairspec.certify.softmax_exact import nearest

    Y = np.asarray(model.outputs(np.atleast_2d(np.asarray(X2, dtype=np.float64))), dtype=np.float64)
    if Y.shape[0] != 2:
        return floats
    out = tuple(nearest(Y[i], int(c)) for i in range(2))
    return tuple(f if e is None else e for e, f in zip(out, floats))


def softmax_pair_value(prop: ir.IndividualFairness, model, X2, cls=None) -> float | None:
    """The measure of the encoded pair ``X2`` (2 rows) for ``prob(m(x), c)`` of the REAL softmax of the
    runtime's logits, rounded down: the larger over its two orders (and every class under ``forall c``;
    ``cls`` overrides ``prop.cls``) of the exact difference, as the float at or below it
    (:func:`fairspec.certify.softmax_exact.measure_down`); None where a logit is not finite."""
    from fairspec.certify.softmax_exact import measure_down

    Y = np.asarray(model.outputs(np.atleast_2d(np.asarray(X2, dtype=np.float64))), dtype=np.float64)
    Y = Y.reshape(-1, 1) if Y.ndim == 1 else Y
    if Y.shape[0] != 2:
        return None
    cls = prop.cls if cls is None else cls
    return measure_down(Y[0], Y[1], [int(cls)] if isinstance(cls, (int, np.integer)) else range(max(2, Y.shape[1])))


def softmax_maximum(prop: ir.IndividualFairness, model, X, a, b, N: int, check, limit: int = 512) -> float:
    """The enumeration's largest measure of ``prob(m(x), c)`` of a logit network, as the float at or below
    the exact maximum: the comparisons whose bounds (``check``, :func:`class_prob_check`) reach the largest
    certain lower end are measured exactly (:func:`fairspec.certify.softmax_exact.difference_down`, at most
    ``limit`` distinct ones; beyond, that certain lower end, which is also at or below it)."""
    from fairspec.certify.rounding import up
    from fairspec.certify.softmax_exact import difference_down

    lo, _ = interval_maximum(check)
    with np.errstate(invalid="ignore"):
        hi = up(np.asarray(check.lhs_hi) - np.asarray(check.minus))
    cand = np.flatnonzero(np.isfinite(hi) & (hi >= lo))
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    cls = np.full(a.shape[0], int(prop.cls)) if isinstance(prop.cls, (int, np.integer)) else a // N
    keys = {(int(a[i] % N), int(b[i] % N), int(cls[i])) for i in cand}
    if not keys or len(keys) > limit:
        return lo
    Y = np.asarray(model.outputs(X), dtype=np.float64)      # the batch the comparisons were decided in
    Y = Y.reshape(-1, 1) if Y.ndim == 1 else Y
    best = lo
    for ia, ib, c in keys:
        d = difference_down(Y[ia], Y[ib], c)
        best = best if d is None else max(best, d)
    return best


def post_scores(prop: ir.IndividualFairness, model, X):
    """``(scores, kind)`` the post-condition compares: logits for ``logit`` (None when the runtime has
    none); for ``label`` on a model whose label is its library's ``predict``, that decision as 0/1
    (kind ``"label"``); else the model's score (``kind`` its score kind)."""
    if prop.post == "label" and label_is_decision(model):
        return np.asarray(model.decide(X), dtype=np.float64).reshape(-1), "label"
    if prop.post == "logit":
        return logit_scores(model, X), "logit"
    if prop.post == "class":            # the predicted class (first largest column), as a number
        return np.asarray(model.predict_class(X), dtype=np.float64).reshape(-1), "class"
    if prop.post == "class_logit":       # logit column c (forall c: the whole matrix)
        if not outputs_are_logits(model):   # e.g. a pipeline's predict_proba: no logit to compare (None)
            return None, "logit"
        Y = np.asarray(model.outputs(X), dtype=np.float64)
        if Y.ndim == 2 and Y.shape[1] == 1:     # one column z: class 1's logit z, class 0's -z (readout.class_logit)
            Y = np.concatenate([-Y, Y], axis=1)
        return (Y[:, prop.cls].copy() if isinstance(prop.cls, int) else Y), "logit"
    if prop.post == "class_prob":        # every class (forall c): the whole matrix (n, K)
        P = np.asarray(model.class_probabilities(X), dtype=np.float64)
        return (P[:, prop.cls].copy() if isinstance(prop.cls, int) else P), "prob"
    if prop.post == "prob" and hasattr(model, "refuse_classless_prob"):
        model.refuse_classless_prob()       # K >= 3 probabilities read with index: the score is no probability
    return np.asarray(model.score(X), dtype=np.float64).reshape(-1), model.score_kind


def library_logistic(prop: ir.IndividualFairness, model) -> bool:
    """``prob`` of a logit read as the library's own float of it (a scikit-learn classifier declared by
    its decision_function whose predict_proba is expit of it: ``reads_library_probability``): certify's
    :class:`~fairspec.certify.enumerate.SigmoidCheck` then decides by its bounds, which hold that float
    too, and never by the sign of z - z' (expit rounds nearby logits to one float)."""
    return prop.post == "prob" and bool(getattr(model, "reads_library_probability", False))


def library_probability(prop: ir.IndividualFairness, model, X) -> np.ndarray | None:
    """The probabilities ``prob(m(x))`` reads of encoded rows ``X`` where that is the library's own float
    of the logit (:func:`library_logistic`, a binary classifier): predict_proba's class 1, float64 (n,);
    None elsewhere. The runtime itself, so a pair compared on these is decided exactly (certify's
    :class:`~fairspec.certify.enumerate.Check`), ties and saturated logits included, where the logistic's
    bounds leave it undecided; and the measure maximize reports of a pair is their difference."""
    if not library_logistic(prop, model):
        return None
    read, logit = model.prob_reader()
    if logit:
        return None
    P = np.asarray(read(X), dtype=np.float64).reshape(-1)
    return P if P.shape[0] == np.shape(X)[0] else None


def runtime_measure(post: str, score_kind: str, sa, sb) -> np.ndarray:
    """The violation measure of ordered pairs of runtime scores, in float64 (the value maximize reports):
    ``min(z, -z')`` for label (logit scores), else ``s - s'`` (prob of a logit model: the real logistic
    of each logit, rounded down within 2**-40)."""
    sa = np.asarray(sa, dtype=np.float64)
    sb = np.asarray(sb, dtype=np.float64)
    if post == "label":
        return np.minimum(sa, -sb)
    if post == "prob" and score_kind == "logit":
        from fairspec.certify.enumerate import sigmoid_bounds

        return sigmoid_bounds(sa)[0] - sigmoid_bounds(sb)[0]
    return sa - sb


def pair_measure(post: str, kind: str, sa, sb) -> float | None:
    """The measure of one pair, rounded down: the larger of its two orders of the runtime values ``sa``,
    ``sb`` (two floats: the post's scores, or predict_proba's probabilities read as ``("prob", "prob")``),
    as the float at or below its exact value. ``min(z, -z')`` for label (logit scores: exact in floats); the
    real logistic of each logit for ``prob`` of a logit model (``kind`` ``"logit"``: the lower bound of one
    minus the upper bound of the other, certify.enumerate.sigmoid_bounds); else ``|s - s'|`` taken exactly
    and rounded down (a float64 subtraction rounds to nearest, which may lie above the exact difference:
    0.5 - expit(-46) is 0.5). Every reported pair value (a witness's, maximize's lower end from a pair) is
    this one; None when a value is not finite (no measure to round)."""
    from fractions import Fraction

    from fairspec.certify.enumerate import sigmoid_bounds
    from fairspec.certify.rounding import float_down

    s = np.array([float(np.asarray(sa).reshape(-1)[0]), float(np.asarray(sb).reshape(-1)[0])], dtype=np.float64)
    if not np.all(np.isfinite(s)):
        return None
    if post == "label":             # min(z, -z'): exact in floats
        return float(max(min(s[0], -s[1]), min(s[1], -s[0])))
    if post == "prob" and kind == "logit":      # the real logistic of each logit: its lower end minus the other's upper
        lo, hi = (tuple(map(Fraction, map(float, b))) for b in sigmoid_bounds(s))
        return float_down(max(lo[0] - hi[1], lo[1] - hi[0]))
    return float_down(abs(Fraction(float(s[0])) - Fraction(float(s[1]))))


def runtime_pair_value(prop: ir.IndividualFairness, model, s, X2=None) -> float | None:
    """The measure of a replayed pair (runtime scores ``s`` of shape (2,)), the larger of its two
    orders, as the float at or below its exact value (:func:`pair_measure`): what maximize reports for a
    witness; None where the post-condition has no measure (class, or label decided by the library's
    predict). ``X2``: the pair's encoded rows, from which a ``prob`` the library computes from the logit is
    read (:func:`library_probability`: predict_proba's own difference, not the logistic's bounds of the
    logits, which may lie an ulp off it), and ``prob(m(x), c)`` of a logit network measured exactly on its
    logits (:func:`softmax_pair_value`, not fairspec's float64 softmax of them)."""
    from fairspec.certify.enumerate import class_post

    P = None if X2 is None else library_probability(prop, model, X2)
    if P is not None:
        return pair_measure("prob", "prob", P[0], P[1]) if P.shape == (2,) else None
    if X2 is not None and real_softmax(prop, model):   # the real softmax's exact measure, rounded down
        return softmax_pair_value(prop, model, X2)

    post = class_post(prop.post)
    kind = "logit" if post == "logit" else "prob" if prop.post == "class_prob" else model.score_kind
    if prop.post == "label" and kind == "logit" and label_by_argmax(model) and X2 is not None:
        # the argmax's label of K >= 2 logits: ``s`` holds 0/1 decisions, the measure is min(g, -g') of the
        # runtime's margins g = y_i - max_{j != i} y_j (model.score), never the solver's float64 network's
        # (network-solver-125000000-p2: 2.328345044401328 reported, the runtime's best pair 2.3283448815345764)
        g = np.asarray(model.score(np.asarray(X2)), dtype=np.float64).reshape(-1)
        return pair_measure("label", "logit", g[0], g[1]) if g.shape == (2,) else None
    if post not in ("label", "logit", "prob") or post == "label" and (kind != "logit" or label_is_decision(model)):
        return None
    s = np.asarray(s, dtype=np.float64).reshape(-1)
    return pair_measure(post, kind, s[0], s[1]) if s.shape == (2,) else None


def best_pair_value(prop: ir.IndividualFairness, model, replay_full, pair) -> float | None:
    """maximize's lower end from a solver's best ``pair`` (a Witness, or None): its measure as the
    runtime scores it (``replay_full(x, x') -> (ok, X2, scores)``, :func:`replayer`; the larger of its
    two orders, :func:`runtime_pair_value`), never the solver's float64 or real evaluation, which the
    runtime's rounding may put above every pair the runtime scores. None when the pair is no admissible
    pair of the domain, the runtime gives no finite scores, or the measure is no score it outputs."""
    if pair is None:
        return None
    _, X2, s = replay_full(np.asarray(pair.x, dtype=np.float64), np.asarray(pair.x_prime, dtype=np.float64))
    return None if s is None else runtime_pair_value(prop, model, s, X2)


def proved_threshold(post: str, eps) -> float:
    """The smallest float at or above the threshold a ``holds (proved)`` bounds every pair's measure by:
    0 for ``label`` / ``class`` (no pair flips: ``min(z, -z')`` is at most 0), else the spec's
    ``eps`` read exactly as written and rounded up (``0.3`` is 3/10, above the float 0.3)."""
    if post in ("label", "class"):
        return 0.0
    from fairspec.certify.exact import threshold_of
    from fairspec.certify.rounding import float_up

    return float_up(threshold_of(eps))


def threshold_interval(post: str, eps, strict: bool, lo, who: str = "the proof"):
    """maximize's interval when a ``holds (proved)`` has no certified bound of its own: ``(bound, note)``
    with the bound :func:`proved_threshold` (no pair exceeds it, in any batch: the proof's claim), the
    lower end ``lo`` (the best pair replayed on the runtime); ``(None, why)`` when ``lo`` is missing or
    lies beyond the threshold (a contradiction, reported as none)."""
    thr = proved_threshold(post, eps)
    if lo is None:
        return None, f"no value: {who} shows no pair exceeds the threshold, but the best pair gave no measure on the runtime"
    if lo > thr or lo == thr and strict and post not in ("label", "class"):
        return None, f"the best pair measures {lo!r} on the runtime, beyond the threshold {thr!r} {who} bounds it by"
    if lo == thr and (post in ("label", "class") or _exactly(eps, thr)):
        return thr, f"proved: a pair the runtime scores at the threshold, and {who} that no pair exceeds it"
    return thr, f"[best pair replayed on the runtime, the threshold {who} says no pair exceeds]"


def threshold_is_tighter(post: str, eps, bound) -> bool:
    """Whether a proved holds' threshold (:func:`proved_threshold`) is a tighter upper end than
    ``bound``, the certified bound maximize found (None: none; a branch and bound's bound a few ulps
    above the threshold at an exact tie)."""
    return bound is None or bound > proved_threshold(post, eps)


def _exactly(eps, x: float) -> bool:
    from fractions import Fraction

    from fairspec.certify.exact import threshold_of

    return threshold_of(eps) == Fraction(x)


def runtime_class_value(Y) -> float | None:
    """The ``class`` measure of a replayed pair from the runtime's logit rows ``Y`` (2, K): the larger
    over classes c and the pair's two orders of ``min(g_c(x), -g_c(x'))``, g_c the class score as
    certify reads the argmax (:func:`fairspec.certify.network.argmax_class_score`); what maximize
    bounds. None when the rows are not two finite rows of at least two columns."""
    from fairspec.certify.network import argmax_class_score

    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim != 2 or Y.shape[0] != 2 or Y.shape[1] < 2 or not np.all(np.isfinite(Y)):
        return None
    best = -np.inf
    for c in range(Y.shape[1]):
        g = argmax_class_score(Y, c)
        best = max(best, float(min(g[0], -g[1])), float(min(g[1], -g[0])))
    return best


def runtime_violates(prop: ir.IndividualFairness, model, sa, sb, pa=None, pb=None, X2=None) -> np.ndarray:
    """Per pair (either order): does the runtime's scores pair break the post-condition, decided
    exactly by certify? (prob of a logit model: only a certain violation counts). ``pa``, ``pb``: the
    pairs' probabilities where ``prob`` is the library's own float of the logit
    (:func:`library_probability`, read in the batch ``sa``, ``sb`` come from): a pair whose two are finite
    is decided on them exactly, with the spec's ``<`` / ``<=`` (the claim the enumeration proves against:
    predict_proba breaks it), ties and saturated logits included; the logistic's bounds of ``sa``, ``sb``
    decide the others, and every pair where none is given. ``X2``: the pairs' encoded rows (the k first
    points, then their k counterparts), from which ``prob(m(x), c)`` of a logit network is decided on the
    runtime's logits (:func:`real_softmax`, :func:`class_prob_decide`); without them no such pair counts."""
    from fairspec.certify.enumerate import SigmoidCheck, class_post

    sa = np.asarray(sa, dtype=np.float64).reshape(-1)
    sb = np.asarray(sb, dtype=np.float64).reshape(-1)
    if real_softmax(prop, model):
        if X2 is None:
            return np.zeros(sa.shape[0], dtype=bool)
        Y = np.asarray(model.outputs(np.atleast_2d(np.asarray(X2, dtype=np.float64))), dtype=np.float64)
        k = Y.shape[0] // 2
        if Y.shape[0] == 2 and not isinstance(prop.cls, int) and sa.shape[0] == max(2, Y.shape[1]):   # one pair, every class
            return np.array([class_prob_decide(prop, model, Y[:1], Y[1:], c)[1][0] for c in range(sa.shape[0])])
        if k != sa.shape[0] or Y.shape[0] != 2 * k:
            return np.zeros(sa.shape[0], dtype=bool)
        return class_prob_decide(prop, model, Y[:k], Y[k:])[1]
    if prop.post == "prob" and model.score_kind == "logit":
        op = "<" if prop.eps_strict else "<="
        r = library_logistic(prop, model)
        out = SigmoidCheck(sa, op, prop.eps, sb, r).decide()[1] | SigmoidCheck(sb, op, prop.eps, sa, r).decide()[1]
        if not r or pa is None or pb is None:
            return out
        pa = np.asarray(pa, dtype=np.float64).reshape(-1)
        pb = np.asarray(pb, dtype=np.float64).reshape(-1)
        if pa.shape != sa.shape or pb.shape != sb.shape:
            return out
        read = np.isfinite(pa) & np.isfinite(pb)
        return np.where(read, _breaks("prob", prop, model, pa, pb), out)
    return _breaks(class_post(prop.post), prop, model, sa, sb)


def _breaks(post: str, prop: ir.IndividualFairness, model, sa, sb) -> np.ndarray:
    """Per pair: ``post`` compared by certify exactly (:func:`fairspec.certify.enumerate.pair_checks`) fails
    in either order of the runtime's outputs ``sa``, ``sb`` (a NaN satisfies no check)."""
    from fairspec.certify.enumerate import compare_exact, pair_checks

    out = np.zeros(sa.shape[0], dtype=bool)
    for x, y in ((sa, sb), (sb, sa)):
        ok = np.zeros(sa.shape[0], dtype=bool)
        for c in pair_checks(post, x, y, eps=prop.eps, decision_threshold=label_threshold(prop, model),
                             eps_strict=prop.eps_strict):
            ok |= compare_exact(c.lhs, c.op, c.rhs, c.minus)
        out |= ~ok
    return out


def pair_probabilities(prop: ir.IndividualFairness, model, X2) -> tuple:
    """``(pa, pb)`` for :func:`runtime_violates` of the encoded pairs ``X2`` (2k rows: the k first
    points, then their k counterparts, scored in this one batch): the library's probabilities
    (:func:`library_probability`), or ``(None, None)`` where ``prob`` is not read so."""
    P = library_probability(prop, model, X2)
    if P is None or P.shape[0] % 2:
        return None, None
    k = P.shape[0] // 2
    return P[:k], P[k:]


def replayer(prop: ir.IndividualFairness, model, enc: ir.Encoding, low, problem_check, fragile=None):
    """``violates(x, x') -> (ok, X2, scores)``: the feature-space pair meets the pre-condition
    (``problem_check``, relaxed strictness included) and breaks the post-condition on the runtime;
    X2 the encoded pair (2, width) and its runtime scores. ``fragile(prop, model, X2)``
    (:func:`fairspec.kinds.pair_spread.fragile_pair`): on a runtime that may round a batch of two
    otherwise than other batches (torch, scikit-learn), a pair within that rounding of the threshold
    counts only when it also breaks it scored alone and reversed."""
    from fairspec.runtime.encoding import encode

    def violates(x, xp):
        if not problem_check(x, xp):
            return False, None, None
        vals = feature_values(low, enc, np.vstack([x, xp]))
        X = encode(enc, vals, 2)
        s, _ = post_scores(prop, model, X)
        if s is None or s.shape != (2,) or not np.all(np.isfinite(s)):
            return False, X, s
        if not runtime_violates(prop, model, s[:1], s[1:], *pair_probabilities(prop, model, X), X2=X)[0]:
            return False, X, s
        moved = fragile(prop, model, X) if fragile is not None else None
        return not (moved and not moved["reproduced"]), X, s

    return violates


def batch_replayer(prop: ir.IndividualFairness, model, enc: ir.Encoding, low, problem_check, violates, unsure=None):
    """``many(X, XP) -> bool array``: per row, what ``violates(X[i], XP[i])[0]`` (:func:`replayer`)
    gives, with the pairs scored in one batch of the runtime.

    Why it is the one-at-a-time answer: the pre-condition is ``problem_check``'s (its ``many`` on whole
    columns where it has one, :func:`pair_precondition`), and a pair's scores from this batch decide it
    as its own batch of two does unless another batch of the runtime may decide it otherwise -- ``unsure`` (:func:`fairspec.kinds.pair_spread.batch_unsure`,
    the criterion the refinement's count uses): a decision within the runtime's spread (twice its error
    bound over every point of this batch, so over any batch holding the point) of the threshold, with a
    point not shown exact. Outside it every batching decides the pair alike -- its batch of two, and the
    points alone and the pair reversed that :func:`fairspec.kinds.pair_spread.fragile_pair` replays
    -- so the replay's answer is this batch's. The unsure pairs, those with a non-finite score here, and
    every pair of a post-condition this does not cover (class columns) are replayed one at a time. On a
    runtime that scores every batch alike ``unsure`` is None and the batch decides every pair."""
    from fairspec.runtime.encoding import encode

    def one_by_one(X, XP, rows):
        return np.array([bool(violates(X[i], XP[i])[0]) for i in rows], dtype=bool)

    def many(X, XP) -> np.ndarray:
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        XP = np.atleast_2d(np.asarray(XP, dtype=np.float64))
        out = np.zeros(X.shape[0], dtype=bool)
        many_check = getattr(problem_check, "many", None)
        if many_check is not None:
            rows = np.flatnonzero(many_check(X, XP))
        else:
            rows = np.array([i for i in range(X.shape[0]) if problem_check(X[i], XP[i])], dtype=np.int64)
        k = rows.size
        if not k:
            return out
        if prop.post not in ("label", "prob", "logit"):
            out[rows] = one_by_one(X, XP, rows)
            return out
        V = np.concatenate([X[rows], XP[rows]])
        E = encode(enc, feature_values(low, enc, V), 2 * k)
        s, _ = post_scores(prop, model, E)
        if s is None or np.ndim(s) != 1 or s.shape[0] != 2 * k:
            out[rows] = one_by_one(X, XP, rows)
            return out
        s = np.asarray(s, dtype=np.float64)
        sa, sb = s[:k], s[k:]
        alone = ~(np.isfinite(sa) & np.isfinite(sb))
        if unsure is not None:
            alone |= np.asarray(unsure([X[rows], XP[rows]], [sa, sb], [(0, 1)]), dtype=bool)
        decided = rows[~alone]
        if decided.size:
            pa, pb = pair_probabilities(prop, model, E)     # predict_proba of this batch, as sa and sb
            out[decided] = runtime_violates(prop, model, sa[~alone], sb[~alone],
                                            None if pa is None else pa[~alone], None if pb is None else pb[~alone])
        if alone.any():
            out[rows[alone]] = one_by_one(X, XP, rows[alone])
        return out

    return many


def batch_scorer(prop: ir.IndividualFairness, model, enc: ir.Encoding, low, unsure=None):
    """The :class:`~fairspec.backends.pair.certify.BatchScorer` of the refinement's enumeration
    (backends/refine.py): ``fn(V)`` the runtime's scores of feature-space points V (k, n) as
    :func:`runtime_violates` compares them, with the post-condition and decision threshold of
    :func:`fairspec.certify.enumerate.pair_checks`; ``unsure``: which individuals another batch may
    decide otherwise (:func:`fairspec.kinds.pair_spread.batch_unsure`). None for a
    post-condition it does not cover."""
    from fairspec.backends.pair.certify import BatchScorer
    from fairspec.runtime.encoding import encode

    if prop.post not in ("label", "prob", "logit"):
        return None
    from fairspec.certify.enumerate import compared_kind

    post = compared_kind(prop.post, model.score_kind)

    def fn(V):
        V = np.atleast_2d(np.asarray(V, dtype=np.float64))
        X = encode(enc, feature_values(low, enc, V), V.shape[0])
        s, _ = post_scores(prop, model, X)
        if s is None:
            return np.full(V.shape[0], np.nan)
        return np.asarray(s, dtype=np.float64).reshape(-1)

    def prob(V):                        # predict_proba's own floats (library_probability), NaN where unread
        V = np.atleast_2d(np.asarray(V, dtype=np.float64))
        P = library_probability(prop, model, encode(enc, feature_values(low, enc, V), V.shape[0]))
        return np.full(V.shape[0], np.nan) if P is None else P

    reads = library_logistic(prop, model) and not model.prob_reader()[1]
    return BatchScorer(fn, post, label_threshold(prop, model), unsure, rounded=library_logistic(prop, model),
                       prob=prob if reads else None,
                       decisions=prop.post == "label" and post == "label" and label_is_decision(model))


def pair_precondition(prop: ir.IndividualFairness, enc: ir.Encoding, low, problem):
    """``pre(x, x') -> bool``: the problem-space pair meets ``problem``'s pre-condition exactly and
    every strict tolerance on a continuous feature (``|x.f - x'.f| < t``; the problem itself says
    ``<= t``); ``pre.many(X, X')``: the same of each row pair, as a bool array."""
    from fairspec.backends.pair import precondition_holds

    names = {c.offset: c.feature for c in enc.columns}
    strict_cont = [(i, t) for i, t in low.relaxed
                   if names.get(i) is not None and prop.relaxed_op(names[i]) == "<" and not low.integer[i]]

    def pre(x, xp) -> bool:
        ok, _ = precondition_holds(problem, x, xp, tol=0.0)
        return ok and all(abs(float(x[i]) - float(xp[i])) < t for i, t in strict_cont)

    def many(X, XP) -> np.ndarray:      # pre of each row pair, on whole columns
        from fairspec.backends.pair.problem import preconditions_hold

        ok = preconditions_hold(problem, X, XP, tol=0.0)
        for i, t in strict_cont:
            ok &= np.abs(np.asarray(X, dtype=np.float64)[:, i] - np.asarray(XP, dtype=np.float64)[:, i]) < t
        return ok

    pre.many = many
    return pre


def encoder(enc: ir.Encoding, low):
    """``encoded(V)``: problem-space rows (k, n) as the runtime's model inputs."""
    from fairspec.runtime.encoding import encode

    def encoded(V):
        V = np.atleast_2d(np.asarray(V, dtype=np.float64))
        return encode(enc, feature_values(low, enc, V), V.shape[0])

    return encoded


class Replay:
    """``(x, x') -> bool`` on the runtime (:func:`replayer`); ``full`` also gives the
    encoded pair and its scores, ``many(X, X')`` the same answers for many pairs scored in one batch
    (:func:`batch_replayer`)."""

    def __init__(self, fn, many=None):
        self.full = fn
        self.many = many

    def __call__(self, x, xp) -> bool:
        return self.full(x, xp)[0]
