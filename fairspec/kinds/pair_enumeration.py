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
"""

from __future__ import annotations

import math
import time

import numpy as np

from fairspec import ir
from fairspec.models.batching import (ASSUMED_SPREAD, ASSUMED_SPREAD_OTHER,  # noqa: F401 - re-exported
                                        batch_dependent, elementwise_sigmoid_head)
from fairspec.models.batching import rounds_by_batch as _batched_without_bound

MAX_PAIRS = 4_000_000
MAX_POINTS = 1_000_000
#: at most this many points are checked for an exact runtime score (:func:`points_exact`: the points near a
#: tie, :func:`_rounded_apart`; every point of maximize's pairs, :func:`every_point_exact`), and at most
#: :data:`MAX_EXACT_WORK` points times weights (about 0.7 s on this project's 2-core machine: 10,000 points
#: of a 13-50-50-1 net, 65,536 of a net of up to 512 weights); beyond, no point is shown exact
MAX_EXACT_POINTS = 65_536
MAX_EXACT_WORK = 2 ** 25


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
    declared class's probability against 1/2; ``(None, None)`` for neither."""
    from fairspec.models.runtime_layers import logit_scores

    try:
        z = logit_scores(model, X)
    except ValueError:                  # a pipeline it cannot fold takes no encoded columns: its probability
        z = None
    if z is not None:
        return np.asarray(z, dtype=np.float64).reshape(-1), 0.0
    if getattr(model, "score_kind", "") == "prob":   # 0.5; 0 for y_i - max_{j != i} y_j (K >= 3 columns, index i)
        return np.asarray(model.score(X), dtype=np.float64).reshape(-1), float(model.threshold)
    return None, None


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

