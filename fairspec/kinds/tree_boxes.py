"""Individual fairness of a tree model's class / prob(c) / value on a domain too large to enumerate
(issue 25): the certified branch and bound over leaf boxes of :mod:`fairspec.certify.treeboxes`.

The model's output columns (:func:`output_scores`: every class's ``predict_proba`` column of a
forest, every class's margin of a boosted model, a regression's value; each column's trees
checked against the library by their converters) become one :class:`~fairspec.certify.treeboxes.Scores`
(a tree shared by several columns -- a forest's -- is one unit whose leaves hold a value per
column). The pair domain is cut as for enumeration (:mod:`fairspec.kinds.tree_pairs`): the tied
features in cells of the split tests, the protected and relaxed features' cell combinations
enumerated (at most :data:`MAX_COMBOS`), and certify splits the tied cells into boxes until
bounds decide each (box, pair) or every tree reaches one leaf, where the library's own ``predict``
/ ``predict_proba`` / booster output at one concrete pair decides it exactly (its float32 / float64
arithmetic, summation order and first-maximal tie rule between classes).

Answers: ``holds (proved: branch and bound, N certified leaves)``; ``violated`` with a concrete
domain pair replayed on the library; ``maximize``: the exact largest difference when the search
closes, else ``[best replayed, certified upper bound]``; ``unknown`` when the box cap or the time
limit is reached first. Posts: ``class`` (any classifier), ``prob(m(x), c)`` (one class or every
class) of forests, binary ones too (linear in their leaves), of boosted multiclass models
(softmax of the margins) and of binary boosters whose probability is the plain sigmoid of the
margin (the softmax of the columns (0, z): XGBoost, LightGBM, scikit-learn's log-loss boosters) or of
twice it (GradientBoosting's exponential loss, ``expit(2 z)``: the columns (0, 2 z), exact),
``logit(m(x), c)`` of boosted models with K >= 3 (the margin column) and a binary booster's class 1
(z: scikit-learn's ``decision_function``), ``value`` of regressors whose prediction is
their margin (no log link).
"""

from __future__ import annotations

import time

import numpy as np

from fairspec import ir

__all__ = ["output_scores", "decide_by_boxes", "MAX_COMBOS", "MAX_BOXES"]

MAX_COMBOS = 2048            # cell combinations of the protected and relaxed features
MAX_PAIRS = 200_000          # admissible ordered pairs of them
MAX_BOXES = 200_000          # boxes the branch and bound examines before it gives up
SEEDS = 512                  # sampled concrete pairs evaluated on the library before the search

_XGB_IDENTITY = ("reg:squarederror", "reg:absoluteerror", "reg:pseudohubererror", "reg:quantileerror",
                 "reg:linear")
_LGB_IDENTITY = ("regression", "regression_l2", "l2", "mean_squared_error", "mse", "l2_root", "root_mean_squared_error",
                 "rmse", "regression_l1", "l1", "mean_absolute_error", "mae", "huber", "fair", "quantile", "mape",
                 "mean_absolute_percentage_error")


def output_scores(model, margin: bool = False):
    """(Scores, probabilities readable) of a tree model's output columns, or None when they are not
    read (an unsupported estimator or objective, columns that disagree on their divisor). ``margin``:
    a binary booster's columns as (0, z), its margin, also where its probability is the sigmoid of
    f z with f != 1 (then not readable as probabilities): what a ``logit`` post compares."""
    from fairspec.backends.trees.runtime import _one_order

    _one_order(model)       # a forest adding its trees in thread order: AmbiguousRuntime (forest_threads)
    cache = getattr(model, "_box_scores", None)
    if not isinstance(cache, dict):
        cache = {}
    if margin in cache:
        return cache[margin]
    out = None
    try:
        out = _output_scores(model, margin)
    except Exception:  # noqa: BLE001 - an unreadable model: not decided this way
        out = None
    cache[margin] = out
    try:
        model._box_scores = cache
    except AttributeError:
        pass
    return out


def _output_scores(model, margin: bool = False):
    from fairspec.backends.trees.runtime import _xgb_objective, library_task, pipeline_booster
    from fairspec.certify.treeboxes import Scores
    from fairspec.kinds.tree_cells import tree_nodes
    from fairspec.models import tree_columns as TC
    from fairspec.models import trees as T

    fmt = getattr(model, "format", "")
    task, k = library_task(model)
    probs = True
    obj = ""
    booster = pipeline_booster(model)      # a folded pipeline's XGBClassifier / LGBMClassifier
    if booster:
        from fairspec.models.pipeline_boosters import booster_columns

        cols = booster_columns(model.raw)      # checked: its rounds, objective, missing, own margins
        linear = False
        fmt = "xgboost" if type(model.raw).__name__ == "XGBClassifier" else "lightgbm"
    elif fmt == "sklearn":
        if getattr(model, "unfolded", False):
            return None
        est = model.raw
        name = type(est).__name__
        if name not in T.SKLEARN_TREES + T.SKLEARN_REGRESSORS:
            return None
        from fairspec.models.batching import rounds_by_batch

        if rounds_by_batch(model):      # by its fitted attributes (8+ classes of HistGradientBoosting, an init
            return None                 # model): its columns on one batch decide no tie (tree_why_not)
        if name == "HistGradientBoostingRegressor" and str(getattr(est, "loss", "")) not in (
                "squared_error", "absolute_error", "quantile"):
            return None
        cols = TC.sklearn_columns(est)
        linear = name in ("DecisionTreeClassifier", "RandomForestClassifier", "ExtraTreesClassifier") or \
            task == "regression"
    elif fmt == "xgboost":
        obj = _xgb_objective(model)
        if task == "regression" and obj not in _XGB_IDENTITY:
            return None
        cols = TC.xgboost_columns(model.raw, getattr(model, "category_domains", None))
        linear = task == "regression"
        probs = obj == "multi:softprob"
    elif fmt == "lightgbm":
        words = str(model.raw.dump_model(num_iteration=0).get("objective", "")).split()
        obj = words[0] if words else ""
        # reg_sqrt=True ("regression sqrt", "quantile sqrt", ...): its predict is sign(r) r**2 of the summed
        # leaves r, no margin the boxes bound linearly
        if task == "regression" and (obj not in _LGB_IDENTITY or "sqrt" in words[1:]):
            return None
        if task == "multiclass" and obj not in ("multiclass", "softmax"):
            return None
        cols = TC.lightgbm_columns(model.raw, getattr(model, "category_domains", None))
        linear = task == "regression"
    else:
        return None
    if not cols or len({float(c.divisor) for c in cols}) != 1:
        return None
    zero = not linear and len(cols) == 1            # a binary margin: columns (0, f z)
    factor = 1.0
    if zero:
        # softmax(0, f z) = (1 - sigmoid(f z), sigmoid(f z)): the probability where the library's is
        # the plain sigmoid of the margin (f = 1: XGBoost binary:logistic, float32; LightGBM binary with
        # sigmoid:1 and cross_entropy, float64; scikit-learn's binary log-loss boosters, scipy's
        # expit in float64) or of twice it (f = 2: GradientBoosting's exponential loss, expit(2 z),
        # 2 z exact), each within SOFTMAX_TOL of the exact one
        factor = _sigmoid_factor(model, fmt)
        probs = factor is not None
        factor = factor or 1.0
        if margin and factor != 1.0:
            probs, factor = False, 1.0
    K = len(cols) + (1 if zero else 0)
    units: dict = {}
    order: list = []
    for ci, ens in enumerate(cols):
        c = ci + (1 if zero else 0)
        for t in ens.trees:
            key = (t.feature.tobytes(), t.threshold.tobytes(), t.left.tobytes(), t.right.tobytes(), t.strict, t.f32)
            if key not in units:
                units[key] = (t, np.zeros((t.n_nodes, K)))
                order.append(key)
            units[key][1][:, c] += factor * np.asarray(t.value, dtype=np.float64)
    # column 0 of a binary margin is the constant the library's class compares the margin with: the
    # model's own rule, _Boosted.decision_margin (0; an XGBoost binary:logitraw model's declared cut on
    # its predict, the margin itself: 1/2 read by XGBClassifier.predict, 0 declared score = logit), the
    # one place the tree encodings read it too (TreeEnsemble.cut): argmax(cut, z) is class 1 iff
    # z > cut, a tie class 0 as the library's
    cut = float(getattr(model, "decision_margin", 0.0) or 0.0) if zero else 0.0
    # every column times the factor (a power of two: the library's sums and products scaled exactly),
    # the cut too: argmax(f cut, f z) is argmax(cut, z)
    base = ([factor * cut] if zero else []) + [factor * float(e.base) for e in cols]
    sc = Scores(tuple(tree_nodes(units[k][0]) for k in order), tuple(units[k][1] for k in order), tuple(base),
                float(cols[0].divisor), "linear" if linear else "softmax",
                "float32" if fmt == "xgboost" else "float64")
    # a binary forest's two probability columns are linear in its leaves as a multiclass forest's are
    # (the same predict_proba); a binary boosted model's one margin column is read as a probability
    # only through the plain sigmoid above
    return sc, probs and (task != "binary" or linear or zero)


def _binary_margin(model, sc, cls) -> bool:
    """Is column ``cls`` of a binary booster's (0, z) scores its margin z (``cls`` 1)? XGBoost's and
    LightGBM's margin, scikit-learn's binary gradient boosting's ``decision_function`` (its forests'
    columns are linear, never (0, z); ``sc`` read with ``margin``, so (0, z), not (0, 2 z), for
    GradientBoosting's exponential loss, :func:`_sigmoid_factor`)."""
    from fairspec.backends.trees.runtime import library_task

    return (getattr(model, "format", "") in ("xgboost", "lightgbm", "sklearn") and sc.readout == "softmax"
            and sc.K == 2 and library_task(model)[0] == "binary" and cls == 1)


def _sigmoid_factor(model, fmt: str) -> float | None:
    """f where a binary booster's probability is the plain sigmoid 1 / (1 + exp(-f z)) of its margin z
    times f (1: :func:`_plain_sigmoid`; 2: scikit-learn's GradientBoosting with the exponential loss,
    ``ExponentialLoss.predict_proba``: class 1 ``HalfLogitLink.inverse`` = ``expit(2 * raw)`` in float64,
    2 * raw exact, class 0 ``1 -`` that: :func:`fairspec.models.trees.sklearn_link_factor`); None otherwise."""
    from fairspec.backends.trees.runtime import pipeline_booster

    if pipeline_booster(model):
        # a pipeline's XGBClassifier is binary:logistic / reg:logistic (pipeline_boosters refuses another); an
        # LGBMClassifier's booster says its sigmoid
        est = model.raw
        return 1.0 if type(est).__name__ == "XGBClassifier" or _lightgbm_plain(est.booster_) else None
    if fmt == "sklearn":
        from fairspec.models.trees import sklearn_link_factor

        return sklearn_link_factor(getattr(model, "raw", None))
    return 1.0 if _plain_sigmoid(model, fmt) else None


def _plain_sigmoid(model, fmt: str) -> bool:
    """Whether a binary booster's probability is the plain sigmoid 1 / (1 + exp(-z)) of its margin z
    (what ``predict`` without ``output_margin`` / ``raw_score`` returns): XGBoost ``binary:logistic``;
    LightGBM ``binary`` whose ``sigmoid`` parameter is 1 (another scales the margin first), and
    LightGBM ``cross_entropy`` (alias ``xentropy``), whose predict is ``1 / (1 + exp(-raw))`` in
    float64 as ``binary`` with ``sigmoid:1`` computes it, bit for bit (measured on the same trees, raw
    0 included: tests/test_binary_booster_boxes.py); scikit-learn's binary ``HistGradientBoostingClassifier``
    / ``GradientBoostingClassifier`` with the log loss: ``predict_proba`` is ``HalfBinomialLoss.predict_proba``
    of ``decision_function``, class 1 ``LogitLink.inverse`` = ``scipy.special.expit`` in float64 (a few
    ulps of the exact sigmoid), class 0 ``1 - `` that. Not ``binary:logitraw`` (the margin itself),
    ``binary:hinge`` (0 / 1), ``cross_entropy_lambda`` (``log(1 + exp(raw))``, refused at load) or
    scikit-learn's exponential loss (``expit(2 z)``: factor 2, :func:`_sigmoid_factor`)."""
    if fmt == "sklearn":
        from fairspec.models.trees import sklearn_link_factor

        return sklearn_link_factor(getattr(model, "raw", None)) == 1.0
    if fmt == "xgboost":
        from fairspec.backends.trees.runtime import _xgb_objective

        return _xgb_objective(model) == "binary:logistic"
    if fmt == "lightgbm":
        return _lightgbm_plain(model.raw)
    return False


def _lightgbm_plain(booster) -> bool:
    words = str(booster.dump_model(num_iteration=0).get("objective", "")).split()
    if words[:1] in (["cross_entropy"], ["xentropy"]):
        return True
    if words[:1] != ["binary"]:
        return False
    sig = [w.split(":", 1)[1] for w in words[1:] if w.startswith("sigmoid:")]
    try:
        return len(sig) == 1 and float(sig[0]) == 1.0
    except ValueError:
        return False


class _Dom:
    """What :func:`fairspec.kinds.tree_pairs._witness_values` reads of a domain."""

    def __init__(self, factors, free_elsewhere):
        self.factors, self.free_elsewhere = factors, free_elsewhere


def box_domain(prop: ir.IndividualFairness, fs, enc, ens):
    """(tied factors, varying factors, combos, pairs, free_elsewhere) of the pair problem in cells of
    the split tests of ``ens``, or a sentence why not."""
    from fairspec.kinds.tree_cells import build_factor, has_two_values, split_tests
    from fairspec.kinds.tree_pairs import admissible_cell_pairs

    if prop.pre:
        return "a further pre-condition"
    tol = dict(prop.relaxed)
    tests = split_tests(ens)
    read = {t.column for t in tests}
    tied, varying = [], []
    for c in enc.columns:
        f = fs.get(c.feature)
        if f is None:
            return "an encoded feature outside the feature set"
        if f.name in prop.free and f.name in tol:
            return f"feature {f.name} is both protected and relaxed"
        role = "free" if f.name in prop.free else ("relaxed" if f.name in tol else "tied")
        fac = build_factor(enc, fs, c, f, role, tests, read)
        if isinstance(fac, str):
            return fac
        (tied if role == "tied" else varying).append(fac)
    free_elsewhere = any(n not in [c.feature for c in enc.columns] and has_two_values(fs.get(n)) for n in prop.free)
    m = int(np.prod([f.nc for f in varying], dtype=np.float64)) if varying else 1
    if m > MAX_COMBOS:
        return f"{m:,} cell combinations of the protected and relaxed features (at most {MAX_COMBOS:,})"
    if varying:
        V = [g.reshape(-1) for g in np.meshgrid(*[np.arange(f.nc) for f in varying], indexing="ij")]
    else:
        V = []
    ok = admissible_cell_pairs(prop, varying, V, m, free_elsewhere, tol)
    A, B = np.nonzero(ok)
    if A.size > MAX_PAIRS:
        return f"{A.size:,} admissible pairs of cell combinations (at most {MAX_PAIRS:,})"
    combos = np.stack(V, axis=1) if V else np.zeros((1, 0), dtype=np.int64)
    return tied, varying, combos, np.stack([A, B], axis=1), free_elsewhere


def decide_by_boxes(prop: ir.IndividualFairness, ctx, mode: str, backend: str, t0: float, ens, model):
    """The Verdict by the certified branch and bound (see the module docstring), or None when it does
    not apply (the reason is then the second element: ``(None, why)``)."""
    from fairspec.backends.trees.runtime import runtime_outputs
    from fairspec.certify.trees import Factor as CFactor
    from fairspec.certify.treeboxes import decide_pairs
    from fairspec.kinds.tree_cells import runtime_name
    from fairspec.kinds.tree_pairs import _interval, _witness_values
    from fairspec.planning import setting
    from fairspec.runtime.encoding import decode_row, encode
    from fairspec.verdict import Verdict, Witness

    post, cls = prop.post, prop.cls
    got = output_scores(model, margin=post == "class_logit")
    if got is None:
        return None, "its output columns are not read as trees with a linear or softmax readout"
    sc, probs = got
    if post == "class_logit" and (sc.readout != "softmax" or sc.K < 3) and not _binary_margin(model, sc, cls):
        # a forest has no margins; a binary margin's columns here are (0, z), not (-z, z): its
        # column 1 is the margin z (a binary post's logit, read as class 1's), column 0 is no logit
        return None, "a class's logit is decided this way only for boosted models with three classes or more"
    if post == "class_prob" and not probs:
        return None, ("its class probabilities are not read as trees (a binary boosted model whose probability "
                      "is not the plain sigmoid of its margin, or a multi:softmax model, which has none)")
    if post == "value" and sc.K != 1:
        return None, "a classifier has no value"
    fs = ctx.spec.feature_set(prop.features)
    enc = ctx.encoding(prop.model)
    dom = box_domain(prop, fs, enc, ens)
    if isinstance(dom, str):
        return None, dom
    tied, varying, combos, pairs, free_elsewhere = dom
    wdom = _Dom(tied + varying, free_elsewhere)
    if post == "class":
        kind, cols = "class", []
    elif post == "value":
        kind, cols = "diff", [0]
    else:
        # class_logit: the margin column itself (linear in the leaves); class_prob: the column (a
        # forest's probability) or the softmax of the margins
        kind = "diff" if sc.readout == "linear" or post == "class_logit" else "softmax-diff"
        cols = list(range(sc.K)) if cls == ir.EVERY_CLASS else [int(cls)]
        if any(c >= sc.K for c in cols):
            return None, f"the model has {sc.K} classes"
    what = "class" if post == "class" else ("value" if post == "value" else post)

    def concrete(points):
        vx, vy = [], []
        for tc, a, b in points:
            gi = list(tc) + [int(v) for v in combos[a]]
            gj = list(tc) + [int(v) for v in combos[b]]
            x, y = _witness_values(wdom, gi, gj)
            vx.append(x)
            vy.append(y)
        names = list(vx[0]) if vx else []
        n = len(points)
        vals = {nm: np.array([d[nm] for d in vx] + [d[nm] for d in vy], dtype=np.float64) for nm in names}
        return encode(enc, vals, 2 * n)

    def outputs(X):
        n = X.shape[0] // 2
        if what == "class":
            o = np.asarray(runtime_outputs(model, X, "class"))
            return np.stack([o[:n], o[n:]], axis=1)
        res = np.zeros((n, 2, len(cols)))
        for j, c in enumerate(cols):
            o = runtime_outputs(model, X, what, None if what == "value" else c)
            if o is None:
                raise LookupError(what)
            res[:, 0, j], res[:, 1, j] = o[:n], o[n:]
        return res

    def evaluate(points):
        return outputs(concrete(points))

    # a sample of concrete pairs first (seeded): a violation among them ends the search at once
    rng = np.random.default_rng(int(setting(prop, "seed", backend) or 0))
    n_seed = min(SEEDS, len(pairs) * max(1, int(np.prod([f.nc for f in tied], dtype=np.float64))) if tied else
                 len(pairs))
    seeds = []
    for _ in range(n_seed):
        pi = int(rng.integers(len(pairs)))
        seeds.append((tuple(int(rng.integers(f.nc)) for f in tied), int(pairs[pi, 0]), int(pairs[pi, 1])))
    left = ctx.remaining(setting(prop, "timeout", backend))
    deadline = None if left is None or not np.isfinite(left) else time.perf_counter() + float(left)
    claim = (f"every admissible pair of the domain (a branch and bound over boxes of the tied features' cells, "
             f"each box decided by sound bounds on the trees' leaves or, where every tree reaches one leaf, by the "
             f"library's runtime) satisfies the post-condition")
    try:
        ans = decide_pairs(sc, [CFactor(f.name, f.columns, f.U, f.cell) for f in tied],
                           [CFactor(f.name, f.columns, f.U, f.cell) for f in varying], combos, pairs, post=kind,
                           columns=cols, op=prop.eps_op, eps=prop.eps, evaluate=evaluate,
                           maximize=mode == "maximize" and post != "class", max_boxes=MAX_BOXES, deadline=deadline,
                           claim=claim, seeds=seeds)
    except LookupError:
        return None, f"the library has no {what} output"
    except ValueError as e:
        return None, f"the branch and bound was not certified: {e}"
    details = {"mode": mode, "post": post, "runtime": runtime_name(model), "combinations": int(len(combos)),
               "pairs_of_combinations": int(len(pairs)), **{f"bab_{k}": v for k, v in ans.stats.items()}}
    seconds = time.perf_counter() - t0
    maxi = mode == "maximize" and post != "class"
    value = bound = None
    if maxi and ans.best is not None:
        v, lo, hi = _interval(ans.best)
        value = v
        closed = "open_boxes" not in getattr(ans.proof, "detail", {}) and ans.status != "unknown"
        if not closed:
            bound = (lo, max(ans.upper, hi)) if ans.upper is not None else None
        else:
            bound = (lo, hi)
        details["maximum"] = ("exact over every admissible pair (branch and bound closed)" if closed
                              else "[best replayed pair, certified upper bound of the open boxes]")
    if ans.status == "holds":
        return Verdict(prop.name, prop.kind, "holds", how="proved", value=value, bound=bound, backend=backend,
                       seconds=seconds, details=details, proof=ans.proof,
                       reason="branch and bound over leaf boxes on the library's runtime"), ""
    point = ans.point
    if ans.status == "unknown":
        from fairspec.certify.exact import threshold_of

        t_eps = threshold_of(prop.eps)
        if maxi and ans.best is not None and ans.best_point is not None and not (
                ans.best < t_eps if prop.eps_op == "<" else ans.best <= t_eps):
            point = ans.best_point[0]          # the best pair found already breaks the property
        else:
            why = ans.reason
            if maxi and ans.best is not None:
                why += (f"; the largest difference found is {float(ans.best):.6g}"
                        + (f", at most {ans.upper:.6g} over every admissible pair" if ans.upper is not None else ""))
            return None, why
    XW = concrete([point])
    out = outputs(XW)[0]
    if what == "class":
        again = bool(out[0] != out[1])
        j = 0
    else:
        from fairspec.certify.enumerate import compare_exact

        bad = ~compare_exact(out[0], prop.eps_op, prop.eps, minus=out[1])
        again = bool(bad.any())
        j = int(np.flatnonzero(bad)[0]) if again else 0
        if again and value is None and len(cols) > 1:     # forall c: the pair's largest class difference
            from fairspec.certify.enumerate import largest_class

            j = largest_class(np.stack([out[0], out[1]], axis=1), j)
        if len(cols) > 1:
            details["class"] = cols[j]
    if not again:
        return None, "the violating box did not reproduce on a concrete pair of the library's runtime"
    sw = (out[0], out[1]) if what == "class" else (out[0][j], out[1][j])
    w = Witness(tuple(map(float, XW[0])), tuple(map(float, XW[1])), decode_row(enc, fs, XW[0]),
                decode_row(enc, fs, XW[1]), (float(sw[0]), float(sw[1])), replayed_by=details["runtime"])
    if value is None and what != "class":      # the pair's measure rounded down (the nearest may lie above it)
        from fairspec.kinds.pair_runtime import pair_measure

        value = pair_measure("value", "", sw[0], sw[1])
    return Verdict(prop.name, prop.kind, "violated", value=value, bound=bound, witness=w, backend=backend,
                   seconds=seconds, details=details,
                   reason="a pair found by branch and bound over leaf boxes breaks it on the library's runtime"), ""
