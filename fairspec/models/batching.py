"""Which runtimes round one point's score differently in batches of other sizes or orders (torch on
CPU, scikit-learn's float64 predict_proba, onnxruntime computing in float64), and how far apart two such
evaluations are assumed to be when no error bound covers the model. Shared by the pair properties
(:mod:`fairspec.kinds.pair_enumeration`, k-discrimination) and the group metrics on data rows
(:mod:`fairspec.backends.data.batching`), which no kind module may be imported by."""

from __future__ import annotations

import weakref

#: runtimes that score one point differently in batches of other sizes or orders (measured: torch on
#: CPU, up to 1e-6 on a 7-4-1 network, and scikit-learn's float64 predict_proba, one ulp for a third of
#: 500 points, alone against one batch); onnxruntime too when it computes in float64 (see
#: :func:`batch_dependent`)
BATCH_DEPENDENT = ("torch", "sklearn")

#: a torch module or a scikit-learn model outside the runtime error model (a Tanh layer, a bfloat16 module,
#: a kernel SVM, ...; not a tree model, which adds in a fixed order): how far apart two evaluations of one
#: point may be, *assumed* (no bound), per unit of the largest output magnitude over the batch
#: (1 + max |y|), by the type it computes in; measured on Tanh MLPs (7-16-16-1): 2e-8 in float32
ASSUMED_SPREAD = {"float64": 2.0 ** -40, "float32": 2.0 ** -12}
#: ... for the types not listed (float16, bfloat16, mixed)
ASSUMED_SPREAD_OTHER = 2.0 ** -4

#: how every "depends on the batch" unknown ends (pairs, k-discrimination's individuals, group metrics
#: on data rows; the soundness harness sets these unknowns apart by it)
BATCHED = "whether the property holds depends on how the model is batched"


def batch_dependent(model) -> bool:
    """Does the runtime score one point differently in other batches? torch and scikit-learn
    (:data:`BATCH_DEPENDENT`), and onnxruntime computing in float64: its float64 Sigmoid, Tanh,
    Softmax and Exp round a value by its position in the batch (a few ulps; a network blind to the
    protected input gave x and x' probabilities one ulp apart as positions 0 and 4 of a batch of 5),
    and its multithreaded float64 Gemm sums by the batch's size (a 512-wide layer). In float32 and
    float16 it scored every graph tried alike alone, in chunks of 1-64 and in one batch (Gemm and
    MatMul up to 1,000 inputs wide, Relu, Sigmoid, Tanh, Softmax, Exp, threaded or not; the Fairify
    networks; ``tests/test_runtime_precision.py`` keeps measuring it), so a tie there is decided on
    its scores."""
    fmt = getattr(model, "format", "")
    return fmt in BATCH_DEPENDENT or fmt == "onnx" and str(getattr(model, "precision", "")) == "float64"


def rounds_by_batch(model) -> bool:
    """Does the runtime round a point differently in other batches, with no error bound of its own? A
    torch module, a float64 ONNX graph (:func:`batch_dependent`), or a scikit-learn model whose final
    estimator is not a tree model computing each row alike in any batch, told by its fitted attributes
    (:func:`fairspec.models.meta_estimators.tree_why_not`: not a GradientBoosting with an init model, nor a
    HistGradientBoosting of 8 classes or more) nor a meta-estimator of such models combined row by row
    (:func:`fairspec.models.meta_estimators.row_fixed`)."""
    fmt = getattr(model, "format", "")
    if fmt == "torch":
        return True
    if fmt == "onnx":                           # a float64 graph the error model does not cover
        return batch_dependent(model)
    if fmt != "sklearn":
        return False
    from fairspec.models.meta_estimators import row_fixed, tree_why_not

    est = getattr(model, "raw", None)
    final = est.steps[-1][1] if hasattr(est, "steps") else est
    # a tree model whose fitted attributes show it computes every row alike in any batch (a GradientBoosting
    # with a constant init, a HistGradientBoosting of fewer than 8 classes, ...: tree_why_not), or a
    # meta-estimator of such models combined row by row in a fixed order (a soft vote, a bag on one job, a
    # calibration, one-vs-rest of fewer than 8 classes, a stack: row_fixed); a pipeline's XGBClassifier /
    # LGBMClassifier adds its trees per row in a fixed order, as the same booster loaded from its own file
    # (format xgboost / lightgbm, not batch dependent) does
    if tree_why_not(final) is not None and not row_fixed(final):
        return True
    # ... once its input is: a pipeline evaluated whole runs its own steps before the trees, and a step
    # that sums over columns (PCA: 3,170 of 9,000 values differed by batch, up to 2.3e-13, in a review of
    # session 29) may move a value across a split threshold by batch; steps computing each cell alone
    # (IEEE operations, correctly rounded wherever the row sits) cannot
    return bool(getattr(model, "unfolded", False)) and hasattr(est, "steps") and not _cellwise(est.steps[:-1])


#: scikit-learn transformers whose output cell is computed from one input cell by correctly rounded
#: operations (the same value in any batch)
_CELLWISE = frozenset({"OneHotEncoder", "OrdinalEncoder", "StandardScaler", "MinMaxScaler", "MaxAbsScaler",
                       "SimpleImputer", "LabelEncoder"})


def _cellwise(steps) -> bool:
    """Do the pipeline steps ``(name, transformer)`` (ColumnTransformers and nested pipelines looked into)
    compute every output cell from its own input cell alone?"""
    for _, t in steps:
        if t is None or t in ("passthrough", "drop"):
            continue
        name = type(t).__name__
        if name == "Pipeline":
            if not _cellwise(t.steps):
                return False
        elif name == "ColumnTransformer":
            parts = list(getattr(t, "transformers_", None) or t.transformers)
            if not _cellwise([(n, tr) for n, tr, _ in parts]):
                return False
        elif name not in _CELLWISE:
            return False
    return True


def certified_spread(model, X, *, by_predict: bool = False, columns: bool = False) -> float | None:
    """How far apart two evaluations of the same point by the runtime can be, *bounded*: twice certify's
    runtime error bound (:func:`fairspec.certify.network.runtime_error_bound`: every evaluation, in any
    batch size or order, lies within E of the exact value) over the box of the encoded rows X, of the
    score the decision compares (``by_predict``: the quantity a binary scikit-learn model's predict
    thresholds, its ``decision_function`` or its probability; ``columns``: every output column of a
    K-output network, the largest of their spreads, :func:`columns_error_bound`); None where the error
    model does not cover the model (a Tanh layer, bfloat16, a kernel SVM, ...)."""
    import numpy as np

    X = np.asarray(X)
    if X.ndim != 2 or X.shape[0] == 0:
        return None
    with np.errstate(invalid="ignore"):
        lo, hi = X.min(axis=0), X.max(axis=0)       # rounding to float32 is monotone: cast after
    key = (by_predict, columns, lo.tobytes(), hi.tobytes())  # the batches of one data set share their box
    try:
        memo = _BOUNDS.setdefault(model, {})
    except TypeError:                               # not weakly referenceable: no memo
        memo = {}
    if key not in memo:
        memo[key] = _columns_spread(model, lo, hi) if columns else _certified_spread(model, lo, hi, by_predict)
    return memo[key]


#: certified_spread per model and box
_BOUNDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _certified_spread(model, lo, hi, by_predict: bool) -> float | None:
    import numpy as np

    from fairspec.certify.network import runtime_error_bound
    from fairspec.models.runtime_layers import runtime_layers

    try:
        layers, readout, precision = runtime_layers(model, "logit" if by_predict else "label")
    except ValueError:
        return None
    kind = getattr(model, "score_kind", "")
    if by_predict:
        ok = readout[0] in ("logit", "prob")
    else:
        ok = readout[0] in ("logit", "margin") and kind in ("logit", "value") or readout[0] == "prob" and kind == "prob"
    if not ok:
        return None
    dt = {"float32": np.float32, "float16": np.float16}.get(precision, np.float64)   # the runtime's own cast
    lo, hi = (np.asarray(v, dtype=dt).astype(np.float64) for v in (lo, hi))
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        return None
    try:
        E = float(runtime_error_bound(layers, lo, hi, readout=readout, precision=precision))
    except ValueError:
        return None
    return float(np.nextafter(2.0 * E, np.inf)) if np.isfinite(E) else None


def columns_error_bound(model, lo, hi, cols=None, *, softmax_ok: bool = True, sigmoid_ok: bool = False):
    """``(E, layers, precision)``: a bound E on how far each output column ``cols`` (default every one) of a
    K-output network's runtime lies from its exact value over the box [lo, hi] of the encoded inputs (as
    the runtime reads them: cast here to its type), in any batch size or order; None where the error model
    does not cover it. The columns are the runtime chain's own (``LoadedModel.runtime_chain``: one layer per
    rounding, every column): a logit column is :func:`fairspec.certify.network.runtime_error_bound`'s
    readout ``("logit", j)``; a softmax head (``softmax_ok``) moves each probability by at most half the
    largest move of a logit (the softmax's Jacobian rows sum to ``2 p (1 - p) <= 1/2`` in absolute value),
    plus the head's own rounding, *assumed* as a sigmoid head's (``SIGMOID_ABS_ERROR``, per 8 columns);
    a head of elementwise sigmoids (``sigmoid_ok``) is each column's readout ``("prob", j)`` (the one-sigmoid
    bound: a quarter of the logit's move plus the head's assumed rounding). Shared by the pair enumeration's spread (``kinds.pair_enumeration``) and the data path's batch re-check."""
    import numpy as np

    from fairspec.certify.network import SIGMOID_ABS_ERROR, runtime_error_bound
    from fairspec.certify.rounding import up
    from fairspec.models.network import UnsupportedModel
    from fairspec.models.runtime_layers import runtime_precision

    try:
        net = model.runtime_chain()
        precision = runtime_precision(model)
    except (UnsupportedModel, ValueError, AttributeError):
        return None
    if not (net.final == "none" or net.final == "softmax" and softmax_ok or net.final == "sigmoid" and sigmoid_ok):
        return None
    K = net.layers[-1].n_out
    if K < 2:
        return None
    cols = list(range(K)) if cols is None else list(cols)
    dt = {"float16": np.float16, "float32": np.float32}.get(precision, np.float64)   # the runtime's own cast
    lo, hi = (np.asarray(v, dtype=dt).astype(np.float64) for v in (lo, hi))
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        return None
    try:
        head = "prob" if net.final == "sigmoid" else "logit"
        E = max(float(runtime_error_bound(net.layers, lo, hi, readout=(head, j), precision=precision))
                for j in cols)
    except ValueError:
        return None
    if net.final == "softmax":
        E = float(up(E / 2.0 + SIGMOID_ABS_ERROR[precision] * max(1.0, K / 8.0)))   # K / 8: exact
    return (E, net.layers, precision) if np.isfinite(E) else None


def _columns_spread(model, lo, hi) -> float | None:
    import numpy as np

    got = columns_error_bound(model, lo, hi, sigmoid_ok=True)
    return None if got is None else float(np.nextafter(2.0 * got[0], np.inf))


#: scikit-learn estimators whose binary probability is an elementwise function of one pre-activation per
#: row, computed by value alone: MLPClassifier's logistic output (``scipy.special.expit`` in place, then
#: ``1 - p`` for class 0) and LogisticRegression's predict_proba (``expit`` of decision_function, the
#: same; LinearDiscriminantAnalysis's ``_expit`` of it and SGDClassifier's log loss ``_predict_proba_lr``,
#: scikit-learn 1.9.1). scipy's expit is a scalar loop (no vector kernel, no lane or position dependence, unlike
#: onnxruntime's float64 Sigmoid): one float in, one float out, whatever the batch
ELEMENTWISE_SIGMOID = ("MLPClassifier", "LogisticRegression", "LogisticRegressionCV", "LinearDiscriminantAnalysis",
                       "SGDClassifier")


def elementwise_sigmoid_head(model):
    """``scipy.special.expit`` when the model's runtime probability is that elementwise logistic of its
    last layer's one output (``ELEMENTWISE_SIGMOID``, a scikit-learn estimator or the final step of a
    pipeline of one): a point whose pre-activation is exact in every batch then has one probability in
    every batch (:func:`fairspec.kinds.pair_spread.points_exact`). None otherwise."""
    if getattr(model, "format", "") != "sklearn":
        return None
    est = getattr(model, "raw", None)
    final = est.steps[-1][1] if hasattr(est, "steps") else est
    if type(final).__name__ not in ELEMENTWISE_SIGMOID:
        return None
    if type(final).__name__ == "MLPClassifier" and getattr(final, "out_activation_", None) != "logistic":
        return None
    if type(final).__name__ == "SGDClassifier" and getattr(final, "loss", None) not in ("log_loss", "log"):
        return None
    from scipy.special import expit

    return expit


def rows_mixed(run, width: int, what: str, tol: float = 1e-3) -> str | None:
    """The sentence when a network's output for one row depends on the other rows of its batch (a Softmax
    or a normalisation over the batch axis, BatchNorm in training mode traced so, a graph reading its input
    features-first), else None. ``run`` maps a float64 (n, width) array to the runtime's raw outputs (one
    row each); 8 random rows are scored in one batch and in batches of 2. Batching may move a score by
    rounding (see :func:`batch_dependent`); this looks for far more: a difference above ``tol`` of the
    outputs' scale (1e-3; the loaders pass 0.1 for a float16 or bfloat16 runtime, whose ulp is ~1e-3 and
    ~1e-2). A probe that fails or gives non-finite outputs says nothing (None): scoring reports it."""
    import numpy as np

    X = np.random.default_rng(0).normal(size=(8, width)) * 2.0
    try:
        full = np.asarray(run(X), dtype=np.float64).reshape(8, -1)
        parts = np.concatenate([np.asarray(run(X[i:i + 2]), dtype=np.float64).reshape(2, -1)
                                for i in range(0, 8, 2)])
    except Exception:  # noqa: BLE001 - a probe only; scoring raises the runtime's own error
        return None
    if full.shape != parts.shape or not (np.all(np.isfinite(full)) and np.all(np.isfinite(parts))):
        return None
    gap = np.abs(full - parts).max(axis=1)
    row = int(np.argmax(gap))
    if gap[row] <= tol * (1.0 + float(np.abs(full).max())):
        return None
    return (f"{what} depends on the other rows of its batch: one point scored in a batch of 8 and in a batch "
            f"of 2 gives outputs {gap[row]:.3g} apart (a Softmax or a normalisation over the batch axis, "
            f"BatchNorm in training mode, a features-first input, or a random layer such as Dropout in training "
            f"mode?); fairspec scores every row on its own")


def two_probability_argmax(model) -> bool:
    """Is the model's decision the argmax of two probability columns read with ``index = i`` (an ONNX / torch
    output of two sigmoids or a softmax over two: ``Readout.argmax_decision``, class i iff ``p_i > p_j``, class 0
    at a tie), not its library's predict? Its score is ``p_i`` (against 1/2), but the decision is made on
    :func:`argmax_gap`: a batch-rounding check measuring ``p_i`` against 1/2 measures the wrong quantity (two
    sigmoids tie where ``p_i`` is far from 1/2, and ``p_i`` may be 1/2 exactly where the argmax is clear)."""
    r = getattr(model, "readout", None)
    return (bool(getattr(r, "argmax_decision", False)) and getattr(r, "score", None) == "prob"
            and getattr(r, "columns", None) == 2 and not getattr(model, "label_by_predict", False))


def argmax_gap(model, X):
    """``p_i - p_j`` per row of one batch (X encoded) of a :func:`two_probability_argmax` model: what its decision
    is made on (class i iff > 0; for ``index = 0`` iff >= 0). Two evaluations of a row whose columns each move by
    at most a spread move it by at most twice that spread."""
    import numpy as np

    Y = np.asarray(model.outputs(X), dtype=np.float64).reshape(np.asarray(X).shape[0], -1)
    i = int(model.readout.index)
    return Y[:, i] - Y[:, 1 - i]
