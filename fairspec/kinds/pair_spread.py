"""Another batch size or order of the runtime (README, "Whatever the batch"): how far it may move a point's score
(:func:`runtime_spread`: twice the runtime's rigorous error bound over the points' box, or an assumed spread for a
runtime outside the error model), the points shown computed exactly in every order (:func:`points_exact`,
:func:`every_point_exact`), and the pairs whose decision lies within that spread of the threshold with a point not
shown exact (:func:`_rounded_apart`; per individual of the refinement, :func:`batch_unsure`; a replayed witness,
:func:`fragile_pair`). Read by the small-domain enumeration (kinds/pair_enumeration.py) and by every runner that
replays a pair on such a runtime. Moved out of kinds/pair_enumeration.py, unchanged."""

from __future__ import annotations

import numpy as np

from fairspec import ir
from fairspec.models.batching import (ASSUMED_SPREAD, ASSUMED_SPREAD_OTHER, argmax_gap, batch_dependent,
                                        elementwise_sigmoid_head, two_probability_argmax)
from fairspec.models.batching import rounds_by_batch as _batched_without_bound

#: at most this many points are checked for an exact runtime score (:func:`points_exact`: the points near a
#: tie, :func:`_rounded_apart`; every point of maximize's pairs, :func:`every_point_exact`), and at most
#: :data:`MAX_EXACT_WORK` points times weights (about 0.7 s on this project's 2-core machine: 10,000 points
#: of a 13-50-50-1 net, 65,536 of a net of up to 512 weights); beyond, no point is shown exact
MAX_EXACT_POINTS = 65_536
MAX_EXACT_WORK = 2 ** 25


def _assumed_spread(model, X: np.ndarray):
    """:func:`runtime_spread` of a model the runtime error model does not cover: an assumed spread
    (:data:`ASSUMED_SPREAD`), no layers (so no point is shown exact), readout ``("assumed",)``."""
    with np.errstate(over="ignore", invalid="ignore"):
        try:
            Y = np.asarray(model.outputs(X), dtype=np.float64)
        except Exception:  # noqa: BLE001 - a pipeline evaluated by its own predict_proba has no raw outputs
            Y = np.asarray(model.score(X), dtype=np.float64)
        z = _predict_decision(model, X)[0] if getattr(model, "label_by_predict", False) else None
        if z is not None:                       # the decision predict thresholds, too
            Y = np.concatenate([Y.reshape(len(X), -1), np.asarray(z, dtype=np.float64).reshape(len(X), 1)], axis=1)
    top = float(np.nanmax(np.abs(Y))) if Y.size else 0.0
    if not np.isfinite(top):
        top = 0.0
    precision = str(getattr(model, "precision", "float32"))
    rel = ASSUMED_SPREAD.get(precision, ASSUMED_SPREAD_OTHER)
    from fairspec.models.split_edges import spread_over_edges     # trees behind a PCA: a jump, not a rounding

    return spread_over_edges(model, X, float(np.nextafter(2.0 * rel * (1.0 + top), np.inf)), top), None, \
        ("assumed",), precision


def runtime_spread(post: str, cls, model, X: np.ndarray, score_kind: str):
    """``(spread, layers, readout, precision)``: how far apart two evaluations of one point by the
    runtime can be (twice its rigorous error bound over the box of the encoded points X), with the
    runtime's layers. Float runtimes round a point's score differently in batches of other sizes or
    orders (torch on CPU does: :mod:`fairspec.certify.exact_runtime`). ``post`` and ``cls``: the
    post-condition read (as an individual-fairness property writes it) and its class column.
    ``(0, None, None, None)`` for a model outside the runtime error model that scores every batch alike
    (trees compare and add in a fixed order) and for scores the bound is not about; a torch module
    outside it, and a scikit-learn model that is not a tree model, get an assumed spread
    (:func:`_assumed_spread`)."""
    out = _bounded_spread(post, cls, model, X, score_kind)
    if out[1] is None and _batched_without_bound(model):
        return _assumed_spread(model, X)
    return out


def _bounded_spread(post: str, cls, model, X: np.ndarray, score_kind: str):
    """:func:`runtime_spread` from the runtime error bound, or ``(0, None, None, None)``."""
    from fairspec.certify.network import runtime_error_bound
    from fairspec.models.runtime_layers import runtime_layers

    none = (0.0, None, None, None)
    if post == "label" and score_kind == "label" and two_probability_argmax(model):
        # the argmax of two probability columns (two sigmoids, a softmax over two): its decision is made on
        # p_i - p_j (_predict_decision), which moves by at most twice either column's move: the columns' bound,
        # the near check's 2 x spread. Readout "argmax-gap": no point is shown exact through the head
        from fairspec.models.batching import columns_error_bound

        V = np.asarray(X, dtype=np.float64)
        got = columns_error_bound(model, V.min(axis=0), V.max(axis=0), [0, 1], softmax_ok=True, sigmoid_ok=True)
        if got is None:
            return none
        return float(np.nextafter(2.0 * got[0], np.inf)), got[1], ("argmax-gap", [0, 1]), got[2]
    if post == "label" and score_kind == "label":
        # the library's own predict (kinds/pair_runtime.label_by_predict): the decision it thresholds,
        # decision_function against 0 where the model has one (the "logit" readout), else the
        # probability against 1/2 (as _predict_decision reads them)
        try:
            layers, readout, precision = runtime_layers(model, "logit")
        except ValueError:
            return none
        if readout[0] not in ("logit", "prob"):
            return none
        reads = [readout]
    elif post in ("class_logit", "class_prob", "class"):
        # the columns of a K-output network (class: their argmax; class_prob: their softmax, which moves no
        # coordinate by more than half the largest move of a logit): the largest error bound over them
        # (models.batching.columns_error_bound, which the data path's batch re-check reads too)
        from fairspec.models.batching import columns_error_bound

        V = np.asarray(X, dtype=np.float64)
        cols = [int(cls)] if post == "class_logit" and isinstance(cls, int) else None
        got = columns_error_bound(model, V.min(axis=0), V.max(axis=0), cols, softmax_ok=post in ("class_prob", "class"))
        if got is None:
            return none
        E, layers, precision = got
        cols = cols if cols is not None else list(range(layers[-1].n_out))
        return float(np.nextafter(2.0 * E, np.inf)), layers, ("columns", cols), precision
    else:
        try:
            layers, readout, precision = runtime_layers(model, post)
        except ValueError:
            return none
        reads = [readout]
    if not (readout[0] in ("logit", "margin") and score_kind == "logit" or readout[0] == "prob" and score_kind == "prob"
            or score_kind == "label"):
        return none
    dt = {"float16": np.float16, "float32": np.float32}.get(precision, np.float64)
    V = np.asarray(X, dtype=dt).astype(np.float64)
    try:
        E = max(runtime_error_bound(layers, V.min(axis=0), V.max(axis=0), readout=r, precision=precision)
                for r in reads)
    except ValueError:
        return none
    return float(np.nextafter(2.0 * E, np.inf)), layers, readout, precision


#: The margin, beyond the logits' ``spread``, within which a library logistic's ``prob`` pair
#: (``kinds.pair_runtime.library_logistic``: a scikit-learn LogisticRegression / LDA / SGD log-loss binary
#: classifier declared by its decision_function, ``prob`` read off predict_proba) may fall on the other side
#: of eps in another batch (:func:`_rounded_apart`, ``prob-of-logit``). The error analysis, for a pair
#: a, b with this batch's float logits za, zb, fairspec's ``d = |sigmoid(za) - sigmoid(zb)|`` and another
#: batch's ``D' = |f(za') - f(zb')|`` (f: the library's float logistic, predict_proba's class 1; z': that
#: batch's float logits):
#:
#: 1. the logit ``z = x . w + b`` of n encoded inputs in float64, in any BLAS summation order, blocked or
#:    not, with or without FMA, the intercept one more term: ``|fl(z) - z| <= gamma(n+1) (|w| . |x| + |b|)
#:    + (n+1) eta`` (``certify.network.runtime_error_bound``, E, over the box of the batch's points; 0 for a
#:    row ``certify.exact_runtime`` shows exact). ``|w| . |x|``, not ``|w . x|``: a cancelling sum keeps
#:    its full bound. Two batches' logits of one point are within ``2 E <= spread``, so ``|za' - za| <=
#:    spread``; this is the only term that grows with n, and ``spread`` carries it;
#: 2. the logistic is 1/4-Lipschitz: ``|sigmoid(za') - sigmoid(za)| <= spread / 4``, the difference of
#:    two such ``spread / 2``;
#: 3. the library's float of the logistic is within relative 2**-40 of it (``certify.enumerate.
#:    sigmoid_bounds``' assumption; scipy's expit, which predict_proba applies, is within an ulp or two),
#:    absolute 2**-40 as it is at most 1: 2**-39 for a difference;
#: 4. fairspec's own ``models.network.sigmoid`` (numpy's exp, an add, a divide) within 2**-50 of it per
#:    point, the float subtraction and ``abs`` of d, eps read to a float (``eps <= 1`` where it matters:
#:    d never exceeds 1) and ``d - eps``: 2 * 2**-50 + 3 * 2**-53 together.
#:
#: So ``|D' - d| <= spread / 2 + 2**-39 + 2**-49 + 3 * 2**-53 < spread + 2**-38`` whatever n: a pair
#: with ``|d - eps| > spread + LOGISTIC_MARGIN`` is decided alike by every batch (D' is not eps and lies
#: on d's side of it). ``tests/test_logistic_margin.py`` checks terms 1-3 against adversarial inputs
#: (cancelling sums of up to 4,096 terms in orders chosen to round worst).
LOGISTIC_MARGIN = 2.0 ** -38


def _rounded_apart(prop, model, X, s_points, sa, sb, ia, ib, kind: str, runtime) -> dict | None:
    """The pairs whose decision lies within the runtime's spread (:func:`runtime_spread`) of the
    threshold, and how many of their points the runtime may score differently in another batch:
    those :func:`fairspec.certify.exact_runtime.exact_points` does not show exact (a sigmoid or
    softmax head never is). None when no pair is that close; else ``{"near", "moved", "spread"}``
    and, when some moved, ``unsure`` (over the pairs: near, with a point that may move; not for the
    JSON details). Where each point is decided apart (a label, a class) only its points near the
    threshold must be shown exact: a point farther from it than the spread is on its side in every
    batch, exact or not (an MLP's tie point beside points whose logits round)."""
    from fairspec.certify.exact import threshold_of
    from fairspec.kinds.pair_runtime import label_is_decision, library_logistic

    spread, layers, readout, precision = runtime
    if spread <= 0 or not batch_dependent(model):
        return None
    Y = decision = None
    with np.errstate(over="ignore", invalid="ignore"):
        if kind == "class":
            # a point whose two largest logits lie within the spread may change its predicted class
            Y = np.asarray(model.outputs(X), dtype=np.float64)
            top2 = np.sort(Y, axis=1)[:, -2:]
            close = top2[:, 1] - top2[:, 0] <= 2 * spread
            ca, cb = close[ia], close[ib]
        elif kind == "label" and prop.post == "label" and label_is_decision(model):
            # predict's 0 / 1: near where the decision it thresholds is (exactness is checked on it)
            decision, thr = _predict_decision(model, X)
            if decision is None:
                return None
            close = np.abs(decision - thr) <= 2 * spread
            ca, cb = close[ia], close[ib]
        elif kind == "label":
            thr = float(model.threshold)
            ca, cb = np.abs(sa - thr) <= 2 * spread, np.abs(sb - thr) <= 2 * spread
        else:
            eps = float(threshold_of(prop.eps))
            if kind == "prob-of-logit":
                from fairspec.models.network import sigmoid

                d = np.abs(sigmoid(sa) - sigmoid(sb))
                # the library's float of the logistic (pair_runtime.library_logistic): LOGISTIC_MARGIN's analysis
                near = np.abs(d - eps) <= spread + (LOGISTIC_MARGIN if library_logistic(prop, model) else 1e-12)
            else:
                near = np.abs(np.abs(sa - sb) - eps) <= 2 * spread + 1e-12 * max(1.0, eps)
            ca = cb = near                      # a difference: both points of a near pair
        if kind in ("class", "label"):
            near = ca | cb
    if not np.any(near):
        return None
    ca, cb = ca & near, cb & near
    P = np.unique(np.concatenate([ia[ca], ib[cb]]))
    if readout[0] == "columns":                 # the runtime's logit rows
        seen = Y[P] if Y is not None else np.asarray(model.outputs(X[P]), dtype=np.float64)
    else:
        seen = (decision if decision is not None else np.asarray(s_points, dtype=np.float64))[P].reshape(-1)
    ok = points_exact(runtime, X, P, seen, elementwise_sigmoid_head(model))
    from fairspec.certify.enumerate import ordered_pairs

    # the ordered pairs near (with their reverses, whatever the classes: certify.enumerate.ordered_pairs)
    res = {"near": ordered_pairs(ia[near], ib[near]), "moved": int(np.count_nonzero(~ok)), "spread": spread}
    if readout[0] == "assumed":                 # no error bound for this runtime: the spread is assumed
        res["assumed"] = True
    if res["moved"]:
        moved = P[~ok]
        res["unsure"] = (ca & np.isin(ia, moved)) | (cb & np.isin(ib, moved))
    return res


def points_exact(runtime, X: np.ndarray, P: np.ndarray, seen: np.ndarray, head=None) -> np.ndarray:
    """Per point ``X[P]``: does :func:`fairspec.certify.exact_runtime.exact_points` show the runtime
    (``runtime``: :func:`runtime_spread`'s result) computes it exactly in every order, with the value it
    gave (``seen``: the logit rows of a ``columns`` readout, else the read value per point)? False for
    readouts it does not cover and beyond :data:`MAX_EXACT_POINTS` points or :data:`MAX_EXACT_WORK`
    points times weights. A sigmoid head (``prob``) is covered only with ``head``
    (:func:`fairspec.models.batching.elementwise_sigmoid_head`: the runtime's own elementwise logistic,
    one float per float whatever the batch): its pre-activation exact in every order, the probability
    is then one float in every batch, and it must be the one this batch gave (``head`` of the exact
    pre-activation equal to ``seen``: a class-0 probability ``1 - p`` is not, so it stays unsure)."""
    from fairspec.certify.exact_runtime import exact_points

    _, layers, readout, precision = runtime
    ok = np.zeros(P.size, dtype=bool)
    covered = ("logit", "margin", "columns") + (("prob",) if head is not None and precision == "float64" else ())
    if (not P.size or P.size > MAX_EXACT_POINTS or readout[0] not in covered
            or P.size * _weights(layers) > MAX_EXACT_WORK):
        return ok
    dt = {"float16": np.float16, "float32": np.float32}.get(precision, np.float64)
    ok, out = exact_points(layers, np.asarray(X[P], dtype=dt), precision)
    seen = np.asarray(seen, dtype=np.float64)
    if readout[0] == "columns":
        return ok & np.all(out[:, readout[1]] == seen[:, readout[1]], axis=1)
    if readout[0] == "prob":
        with np.errstate(all="ignore"):
            p = np.asarray(head(np.where(ok, out[:, readout[1]], 0.0).astype(np.float64)), dtype=np.float64)
        return ok & (p == seen.reshape(-1))
    return ok & (out[:, readout[1]] - (out[:, readout[2]] if readout[0] == "margin" else 0.0) == seen.reshape(-1))


def _weights(layers) -> int:
    from fairspec.certify.network import as_layers

    return sum(W.size for W, _, _ in as_layers(layers))


def every_point_exact(prop, model, X: np.ndarray, s_points, ia: np.ndarray, ib: np.ndarray, runtime) -> bool:
    """Does :func:`points_exact` show every point of every pair (``X[ia]``, ``X[ib]``) scored exactly in
    every order, with the value this batch gave (``s_points``: the post's score per point, or its rows)?
    Then no batch size or order scores any pair otherwise, and maximize's maximum over all of them is
    this batch's. Only for scores read off the runtime's layers as they are (a logit, a margin of two
    logits, logit columns): a probability goes through a head :func:`points_exact` never shows exact."""
    _, layers, readout, _ = runtime
    if layers is None or not (readout[0] in ("logit", "margin")
                              or readout[0] == "columns" and prop.post == "class_logit"):
        return False
    P = np.unique(np.concatenate([ia, ib]))
    if readout[0] == "columns":                 # the logit rows of this batch, as _rounded_apart reads them
        rows = s_points if np.ndim(s_points) == 2 else model.outputs(X)
        seen = np.asarray(rows, dtype=np.float64)[P]
    else:
        seen = np.asarray(s_points, dtype=np.float64).reshape(-1)[P]
    return bool(P.size) and bool(points_exact(runtime, X, P, seen).all())


def batch_unsure(prop: ir.IndividualFairness, model, encoded):
    """``unsure(points, scores, pairs)`` of a :class:`~fairspec.backends.pair.certify.BatchScorer`: per
    individual, whether one of its allowed pairs of counterfactuals lies within the runtime's spread of
    the threshold (:func:`runtime_spread`) with a point :func:`points_exact` cannot show exact, so that
    another batch size or order may decide it otherwise (``points[c]``: the feature-space individuals
    under case c, ``encoded`` maps them to model inputs; ``scores[c]``: the runtime's scores of them as
    the post-condition compares them). None on a runtime that scores every batch alike: the
    refinement's count then decides every individual on its one batch."""
    from fairspec.certify.enumerate import compared_kind
    from fairspec.kinds.pair_runtime import label_is_decision, library_logistic

    if not batch_dependent(model):
        return None
    logistic = library_logistic(prop, model) and not model.prob_reader()[1]

    def unsure(points, scores, pairs) -> np.ndarray:
        n = int(np.asarray(scores[0]).shape[0])
        if not n or not pairs:
            return np.zeros(n, dtype=bool)
        X = np.concatenate([encoded(P) for P in points])
        s = np.concatenate([np.asarray(v, dtype=np.float64).reshape(-1) for v in scores])
        base = np.arange(n, dtype=np.int64)
        ia = np.concatenate([a * n + base for a, _ in pairs])
        ib = np.concatenate([b * n + base for _, b in pairs])
        score_kind = "label" if prop.post == "label" and label_is_decision(model) else (
            "logit" if prop.post == "logit" else model.score_kind)
        kind = compared_kind(prop.post, score_kind)
        # predict_proba is elementwise of the logits the scorer reads (as the enumeration judges it): their
        # error bound is the one another batch moves it by, not an assumed spread flagging every eps-0 pair
        moved = _rounded_apart(prop, model, X, s, s[ia], s[ib], ia, ib, kind,
                               runtime_spread("logit" if logistic else prop.post, prop.cls, model, X, score_kind))
        if not (moved and moved.get("moved")):
            return np.zeros(n, dtype=bool)
        return moved["unsure"].reshape(len(pairs), n).any(axis=0)

    return unsure


def fragile_pair(prop: ir.IndividualFairness, model, X2: np.ndarray) -> dict | None:
    """A witness pair (X2: its two encoded rows) whose violation another batch size or order of the
    runtime may round away: its decision lies within the runtime's spread of the threshold and
    :func:`_rounded_apart` cannot show its points exact. ``{"near", "moved", "spread", "reproduced"}``
    then, ``reproduced`` telling whether it violates in the batchings a user replays it in (each
    point alone, the pair, the pair reversed: :func:`reproduces`); None for a pair every batch
    violates alike (and on runtimes that score every batch alike)."""
    from fairspec.certify.enumerate import compared_kind
    from fairspec.kinds.pair_fragile import reproduces
    from fairspec.kinds.pair_runtime import library_logistic, post_scores

    if not batch_dependent(model):
        return None
    X2 = np.atleast_2d(np.asarray(X2, dtype=np.float64))
    s, score_kind = post_scores(prop, model, X2)
    if s is None:
        return None
    points = s
    a, b = np.array([0]), np.array([1])
    if s.ndim == 2:                 # forall c: the pair's comparison in every class column
        a = 2 * np.arange(s.shape[1])
        b = a + 1
        s = s.T.reshape(-1)
    kind = compared_kind(prop.post, score_kind)
    # predict_proba of a library logistic is elementwise of the logits: their error bound is the one another
    # batch moves it by (as batch_unsure and the enumeration judge it), not an assumed spread
    logistic = library_logistic(prop, model) and not model.prob_reader()[1]
    moved = _rounded_apart(prop, model, X2, points, s[a], s[b], a % 2, b % 2, kind,
                           runtime_spread("logit" if logistic else prop.post, prop.cls, model, X2, score_kind))
    if not (moved and moved.get("moved")):
        return None
    moved.pop("unsure", None)
    moved["reproduced"] = bool(reproduces(prop, model, X2))
    return moved


def _predict_decision(model, X):
    """``(values, threshold)`` scikit-learn's predict thresholds for a binary model whose label is its
    predict: decision_function against 0 where it has one (the logit of the declared class), else the
    declared class's probability against 1/2; ``(None, None)`` for neither. The argmax of two probability
    columns (``models.batching.two_probability_argmax``) is decided on ``p_i - p_j`` against 0, not ``p_i``
    against 1/2 (two sigmoids tie where p_i is far from 1/2)."""
    from fairspec.models.runtime_layers import logit_scores

    if two_probability_argmax(model):
        return argmax_gap(model, X), 0.0

    try:
        z = logit_scores(model, X)
    except ValueError:                  # a pipeline it cannot fold takes no encoded columns: its probability
        z = None
    if z is not None:
        return np.asarray(z, dtype=np.float64).reshape(-1), 0.0
    if getattr(model, "score_kind", "") == "prob":   # 0.5; 0 for y_i - max_{j != i} y_j (K >= 3 columns, index i)
        return np.asarray(model.score(X), dtype=np.float64).reshape(-1), float(model.threshold)
    return None, None
