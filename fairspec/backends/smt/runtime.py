"""The loaded model's runtime as a :class:`fairspec.backends.smt.exact.Runtime`: its own layers
(the numbers in the file, every output column), how fairspec reads its score (the readout), its
precision, and a replay of problem-space pairs through fairspec's runtime encoding
(``(v - lo) / span``, as ``fairspec/runtime/encoding.py`` computes it) and the loaded model's own
runtime (``score``: onnxruntime, torch, scikit-learn -- not the independent reference evaluator of
``replay``, whose float32 rounding differs at ties).

``runtime_of`` returns None when the model is not one the runtime error bound describes (the
caller then cannot certify a proof about it and says so)."""

from __future__ import annotations

import numpy as np

__all__ = ["runtime_of", "encode_like_runtime"]


def encode_like_runtime(enc, V) -> np.ndarray:
    """Model inputs of problem-space rows ``V`` (k, width) exactly as fairspec's runtime encodes the
    feature values: minmax ``(v - lo) / span``, standard ``(v - mean) / std`` in float64; one-hot
    columns and raw values unchanged; a code column's variable is its code's rank in the sorted table
    (the lowering: ``first + step * rank``, the code itself for codes 0..k-1; any other table -- a tree
    model's lowering, ``PairLowering.tables`` -- read at the rank: NaN where the variable is no rank)."""
    from fairspec.certify.network import code_progression

    V = np.asarray(V, dtype=np.float64)
    X = V.copy()
    for c in enc.columns:
        if c.kind == "code" and (p := code_progression(c.codes)) is None:
            from fairspec.runtime.encoding import code_at_rank

            X[:, c.offset] = code_at_rank(sorted(float(x) for x in c.codes), V[:, c.offset])
        elif c.kind == "code" and p != (1.0, 0.0):
            X[:, c.offset] = V[:, c.offset] * p[0] + p[1]
        if c.kind == "minmax" and c.scale is not None:
            X[:, c.offset] = V[:, c.offset] * c.scale + c.shift
        elif c.kind == "minmax":
            span = (c.hi - c.lo) or 1.0
            X[:, c.offset] = (V[:, c.offset] - c.lo) / span
        elif c.kind == "standard":
            X[:, c.offset] = (V[:, c.offset] - c.mean) / (c.std or 1.0)
    return X


def _encoding(enc) -> tuple:
    """One certify InputEncoding per model input (certify.network.encoding_from_ir: a code column's
    problem variable is its code's rank in the sorted table)."""
    from fairspec.certify.network import encoding_from_ir

    return tuple(encoding_from_ir(enc))


def _readout(raw, readout):
    """The certify readout tuple of a raw network read through a model's Readout, or None."""
    n_out = raw.layers[-1].n_out
    i = readout.index
    if n_out == 1:
        if i not in (None, 0):
            return None
        if raw.final == "none" and readout.score in ("logit", "value"):     # value: a regression
            return ("logit", 0)
        if raw.final == "sigmoid" and readout.score == "prob":
            return ("prob", 0)
        return None
    if raw.final == "none" and readout.score == "value" and i is not None and 0 <= i < n_out:
        return ("logit", i)                          # the column index chooses of a multi-output regression
    if n_out == 2 and i in (0, 1):
        if raw.final == "softmax" and readout.score == "prob":
            return ("softmax", i, 1 - i)
        if raw.final == "none" and readout.score == "logit":
            return ("margin", i, 1 - i)
        if raw.final == "sigmoid" and readout.score == "prob":
            return ("prob", i)
    return None


def _decision(model, X) -> np.ndarray:
    """A binary scikit-learn linear model's decision_function (the logit of classes_[1]), as its runtime
    computes it: a folded pipeline's own estimator on the columns it reads, in the layout its
    ColumnTransformer hands over (``SklearnModel.own_decision``; the widened copy ``model.raw`` row-major
    summed otherwise in the last bit)."""
    import warnings

    X = np.asarray(X, dtype=np.float64)
    own = getattr(model, "own_decision", None)
    if own is not None:
        return np.asarray(own(X), dtype=np.float64).reshape(-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(model.raw.decision_function(X), dtype=np.float64).reshape(-1)


def _library_probability(model, enc):
    """``prob(V)``: predict_proba's class 1 of problem-space rows V where ``prob`` of the declared logit is
    the library's own float of it (``reads_library_probability``, as kinds.pair_runtime.library_probability
    reads it); None elsewhere."""
    if not getattr(model, "reads_library_probability", False):
        return None
    read, logit = model.prob_reader()
    if logit:
        return None
    return lambda V: np.asarray(read(encode_like_runtime(enc, V)), dtype=np.float64).reshape(-1)


def runtime_of(model, enc, post: str | None = None):
    """The Runtime of a loaded network model (ONNX, TorchScript / torch, scikit-learn MLP or
    logistic regression) under encoding ``enc``, or None when it is not one certify can bound.

    A ``label`` or ``logit`` post (``post``) on a scikit-learn logistic regression reads its logit,
    ``decision_function``: its ``predict`` is ``decision_function > 0`` (not ``predict_proba > 1/2``,
    which is 1/2 exactly for a decision in (0, ~2e-16]), a label's violation is measured in logits,
    as the certified bound is, and ``logit(m(x))`` is that decision_function (what the enumeration
    and the MILP path's runtime read: models.runtime_layers), not a logit of predict_proba."""
    from fairspec.backends.smt.exact import Runtime

    fmt = str(getattr(model, "format", ""))
    try:
        # the arithmetic the runtime computes in (LoadedModel.precision); float16, float32 and float64
        # are bounded (a float16 graph's scales: layers of its runtime chain, network._Chain.cut_scales)
        from fairspec.certify.network import BOUNDED_PRECISIONS

        precision = str(getattr(model, "precision", "float64"))
        if precision not in BOUNDED_PRECISIONS:
            return None
        if fmt in ("onnx", "torch"):
            raw = model.runtime_chain()
        elif fmt == "sklearn":
            raw = model.runtime_chain()
            precision = "float64"
            from fairspec.models.network_sklearn import LINEAR_CLASSIFIERS

            if type(model.raw).__name__ == "LogisticRegression" or raw.final == "sigmoid":
                # predict_proba's class-1 column of a binary model: the sigmoid of the one logit
                if getattr(model.readout, "index", None) not in (None, 1):
                    return None
                ro = ("prob", 0) if model.readout.score == "prob" else ("logit", 0)
                if post in ("label", "logit") and type(model.raw).__name__ in LINEAR_CLASSIFIERS and ro[0] == "prob":
                    return Runtime(raw, _encoding(enc), ("logit", 0), precision,
                                   lambda V: _decision(model, encode_like_runtime(enc, V)), "logit",
                                   f"sklearn {type(model.raw).__name__} decision_function (float64)")
                from fairspec.models.batching import elementwise_sigmoid_head

                return Runtime(raw, _encoding(enc), ro, precision,
                               lambda V: model.score(encode_like_runtime(enc, V)), model.score_kind,
                               f"sklearn {type(model.raw).__name__} (float64)",
                               fixed_head=ro[0] == "prob" and elementwise_sigmoid_head(model) is not None,
                               prob=_library_probability(model, enc) if post == "prob" and ro[0] == "logit" else None)
        else:
            return None
        ro = _readout(raw, model.readout)
        if ro is None:
            return None
        encoding = _encoding(enc)
    except Exception:   # noqa: BLE001 - any model certify's error model does not cover: no runtime
        return None
    return Runtime(raw, encoding, ro, precision, lambda V: model.score(encode_like_runtime(enc, V)),
                   model.score_kind, f"{fmt} runtime ({precision})",
                   prob=_library_probability(model, enc) if post == "prob" and ro[0] == "logit" else None)
