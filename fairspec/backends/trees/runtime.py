"""A tree model's outputs as its library computes them: ``label`` (its ``predict``), ``prob``,
``logit`` (its raw margin / decision function). Imports numpy only; the model is a loaded
:class:`fairspec.models.base.LoadedModel`."""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["runtime_outputs"]


def _sk_positive(model):
    est = model.raw
    classes = list(getattr(est, "classes_", []))
    if getattr(model, "method", "predict_proba") == "predict_proba":
        idx = 1 if model.index is None else int(model.index)
    else:
        idx = 1
    return est, classes, idx


def runtime_outputs(model, X: np.ndarray, what: str) -> np.ndarray | None:
    """The library's own ``label`` (0/1 int64, its ``predict``), ``prob`` (the positive class's
    probability) or ``logit`` (its raw margin / decision function) of a tree model on the
    model-input rows X; None when the library has no such output (a forest's logit)."""
    fmt = getattr(model, "format", "")
    X = np.asarray(X, dtype=np.float64)
    if fmt == "sklearn":
        est, classes, idx = _sk_positive(model)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if what == "label":
                if len(classes) != 2:
                    return model.decide(X)
                pred = np.asarray(est.predict(X))
                return (pred == classes[idx]).astype(np.int64)
            if what == "prob":
                if not hasattr(est, "predict_proba"):
                    return None
                return np.asarray(est.predict_proba(X), dtype=np.float64)[:, idx].copy()
            if what == "logit":
                if not callable(getattr(est, "decision_function", None)) or len(classes) != 2:
                    return None
                z = np.asarray(est.decision_function(X), dtype=np.float64).reshape(-1)
                return z if idx == 1 else -z
        raise ValueError(what)
    if fmt in ("xgboost", "lightgbm"):
        if what == "label":
            return model.decide(X)
        margin = what == "logit"
        y = np.asarray(model._predict(X, margin), dtype=np.float64).reshape(-1)
        if model.index == 0:
            y = -y if margin else 1.0 - y
        return y
    if what == "label":
        return model.decide(X)
    if what == model.score_kind:
        return model.score(X)
    return None


