"""The loaded model's runtime as certify's runtime error model reads it: its layers (one per rounding),
the readout and the precision (:func:`runtime_layers`, for
:func:`fairspec.certify.network.runtime_error_bound`), and the logits a binary scikit-learn model's
own ``decision_function`` gives (:func:`logit_scores`). Shared by the pair kinds
(:mod:`fairspec.kinds.pair_runtime` and the pair enumeration) and the data backend's batching re-check
(:mod:`fairspec.models.batching`), which no kind module may be imported by."""

from __future__ import annotations

import numpy as np


def runtime_precision(model) -> str:
    """The arithmetic the model's runtime computes in (``LoadedModel.precision``): an ONNX graph its
    input's element type, a torch module its parameters' dtype, scikit-learn float64. Raises
    ValueError for one the runtime error model does not cover (bfloat16, mixed): a bound computed for
    another arithmetic would not hold for it. (A float16 graph's scales are layers of its runtime
    chain, each bounded: models.network._Chain's ``cut_scales``.)"""
    from fairspec.certify.network import precision_refusal

    precision = str(getattr(model, "precision", "float64"))
    why = precision_refusal(precision)
    if why:
        raise ValueError(why)
    return precision


def precision_refusal_of(model) -> str:
    """:func:`runtime_precision`'s refusal of the model as one sentence, "" when it has none."""
    try:
        runtime_precision(model)
    except ValueError as e:
        return str(e)
    return ""


def runtime_layers(model, post: str = "label"):
    """``(layers, readout, precision)`` of the model's runtime for
    :func:`fairspec.certify.network.runtime_error_bound`, or raises ValueError with the reason."""
    from fairspec.models import network

    fmt = getattr(model, "format", "")
    precision = runtime_precision(model)            # ValueError outside float32 / float64
    r = model.readout
    cols = r.columns or 1
    try:
        if fmt in ("onnx", "torch") and cols == 2:
            # two columns read by ``index``: their margin (logits), or the head's probability of one
            net = model.runtime_chain()
            if net.layers[-1].n_out != 2:
                raise ValueError("the output does not have two columns")
            if net.final == "none" and r.score == "logit":
                return net.layers, ("margin", r.index, 1 - r.index), precision
            if net.final == "sigmoid" and r.score == "prob":
                return net.layers, ("prob", r.index), precision
            if net.final == "softmax" and r.score == "prob":
                return net.layers, ("softmax", r.index, 1 - r.index), precision
            raise ValueError(f"a {net.final} head read as {r.score} is outside the runtime error model")
        pl = model.piecewise_linear()
        layers = pl.layers
        if fmt in ("onnx", "torch") or type(getattr(model, "raw", None)).__name__ in ("MLPClassifier", "MLPRegressor"):
            # one layer per rounding of the runtime (refuses an operator that rounds twice)
            chain = model.runtime_chain()
            if len(chain.layers) != len(pl.layers):
                layers = _read_out(chain, pl, _readout_row(model, chain.layers[-1].n_out))
    except network.UnsupportedModel as e:
        raise ValueError(str(e)) from None
    if pl.layers[-1].n_out != 1 or cols != 1 and fmt in ("onnx", "torch"):
        raise ValueError("a multi-column output is outside the runtime error model")
    if post == "logit" and fmt == "sklearn" and logit_scores(model, np.zeros((1, pl.n_inputs))) is not None:
        return layers, ("logit", 0), precision           # the library's decision_function
    if pl.final == "sigmoid" and model.score_kind == "prob":
        return layers, ("prob", 0), precision
    if pl.final == "none" and model.score_kind in ("logit", "value"):     # value: a regression's one output
        return layers, ("logit", 0), precision
    raise ValueError(f"a {pl.final} head read as {model.score_kind} is outside the runtime error model")


def predict_is_decision(model) -> bool:
    """A binary scikit-learn linear classifier (the estimator itself, not a pipeline): its ``predict``
    is ``classes_[decision_function(X) > 0]`` (``LinearClassifierMixin.predict``'s own code, the same
    call), so a ``label`` post's runtime is the sign of that float64 logit, with no logistic rounding:
    its error bound is the logit's (0 where the rows are exact), whatever score the spec reads
    (``Runtime.label_readout``, read by the certified branch and bound). Both
    tie rules (the positive class ``classes_[1]`` at ``> 0``, ``classes_[0]`` at ``<= 0``) are inside the
    label claim ``min(z, -z') < -E``, which excludes every pair with ``z >= -E`` and ``z' <= E``."""
    raw = getattr(model, "raw", None)
    if raw is None or getattr(getattr(model, "readout", None), "task", None) != "binary":
        return False
    from sklearn.linear_model._base import LinearClassifierMixin

    return isinstance(raw, LinearClassifierMixin) and len(getattr(raw, "classes_", ())) == 2


def _read_out(chain, pl, row):
    """The runtime's layers (``chain``: one per rounding, every column) with the readout ``pl`` (the
    solvers' folded network of one output) applies: the layers of ``pl`` themselves when no layer was
    folded from several roundings, else the chain with its last layer cut to the one row ``row = (r,
    sign)`` (:func:`_readout_row`: from the declaration and the layer structure), negated for sign -1
    (exact). certify.chains compares the folded layers with the chain's composites exactly, so a row
    that were not ``pl``'s would only loosen the bound, never make it wrong."""
    L = [(l.W, l.b, l.relu) for l in chain.layers]
    if len(L) == len(pl.layers):
        return pl.layers
    if pl.layers[-1].n_out != 1:
        raise ValueError("the readout is not one output of the network")
    r, sign = row
    W, b, relu = L[-1]
    if not 0 <= r < W.shape[0]:
        raise ValueError(f"the readout's row {r} is not one of the runtime's {W.shape[0]} outputs")
    return L[:-1] + [(sign * W[r:r + 1], sign * b[r:r + 1], relu)]


def _readout_row(model, k: int) -> tuple[int, float]:
    """``(row, sign)``: the row of the runtime's last layer (``k`` rows) that the model's one-output
    readout reads, and its sign, from the declaration: a one-column output is its row, negated for a
    scikit-learn binary classifier read as class 0 (its one logit, ``decision_function``, is
    ``classes_[1]``'s); of a multi-output regression the row ``index`` chooses. ValueError for any other
    readout (two columns read as their margin are the ``margin`` readout, not one row)."""
    r = model.readout
    i = r.index
    if k == 1:
        neg = getattr(model, "format", "") == "sklearn" and r.task == "binary" and i in (0, -2)
        return 0, (-1.0 if neg else 1.0)
    if r.task == "regression" and i is not None and -k <= i < k:
        return i % k, 1.0
    raise ValueError("the output the readout takes is not one row of the runtime's last layer")


def logit_scores(model, X):
    """The runtime's logits of a batch, or None when the runtime does not compute one: the score
    itself for a logit model; a binary scikit-learn model read as probabilities through its own
    ``decision_function`` (the logit of class 1; negated for index 0), where it is one number per row."""
    if model.score_kind in ("logit", "value"):         # value: a regression's output (post value = logit)
        return np.asarray(model.score(X), dtype=np.float64).reshape(-1)
    raw = getattr(model, "raw", None)
    if getattr(model, "format", "") != "sklearn" or not hasattr(raw, "decision_function") or \
            len(getattr(raw, "classes_", ())) != 2:
        return None
    import warnings

    X = np.asarray(X, dtype=np.float64)
    own = getattr(model, "own_decision", None)
    if own is not None:
        # the estimator its runtime calls on its own input (SklearnModel._runtime): a pipeline evaluated whole
        # on its data frame; a folded one's own estimator on the columns it reads, in the layout its
        # ColumnTransformer hands over (pipeline_layout; the widened copy ``raw`` row-major sums otherwise)
        z = one_per_row(own(X), X.shape[0])
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            z = one_per_row(raw.decision_function(X), X.shape[0])
    if z is None:
        return None
    return -z if model.readout.index == 0 else z


def one_per_row(z, n: int) -> np.ndarray | None:
    """A binary classifier's margin as one float64 per row of n, or None where the library gives a margin per
    class (an LGBMClassifier / XGBClassifier trained with objective "multiclass" / "multiclassova" and
    num_class = 2: (n, 2) raw scores, no one logit its predict thresholds; flattened, they were 2n numbers
    for n rows: an internal error)."""
    z = np.asarray(z, dtype=np.float64)
    if z.ndim == 2 and z.shape[1] == 1:
        z = z[:, 0]
    return z if z.shape == (n,) else None
