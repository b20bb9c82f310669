"""A tree model's outputs as its library computes them: ``label`` (its ``predict``), ``prob``,
``logit`` (its raw margin / decision function) of a binary model; ``class`` (the column of the
class its ``predict`` returns), ``class_prob`` (one class's probability, ``predict_proba`` or the
booster's ``multi:softprob`` / ``multiclass`` output) and ``value`` (a regression's ``predict``)
of any model (issue 25). Imports numpy only; the model is a loaded
:class:`fairspec.models.base.LoadedModel`."""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["runtime_outputs", "library_task"]


def _sk_positive(model):
    est = model.raw
    classes = list(getattr(est, "classes_", []))
    if getattr(model, "method", "predict_proba") == "predict_proba":
        idx = 1 if model.index is None else int(model.index)
    else:
        idx = 1
    return est, classes, idx


def library_task(model) -> tuple[str, int | None]:
    """What the library says the model is: ("binary" | "multiclass" | "regression", K classes or
    None), from scikit-learn's ``classes_`` (none: a regressor) and the boosters' objectives."""
    fmt = getattr(model, "format", "")
    raw = getattr(model, "raw", None)
    if fmt == "sklearn":
        classes = getattr(raw, "classes_", None)
        if classes is None:
            return "regression", None
        k = len(classes)
        return ("binary" if k == 2 else "multiclass"), k
    if fmt == "xgboost":
        import json

        try:
            learner = json.loads(raw.save_config())["learner"]
            obj = learner["objective"]["name"]
            k = int(learner.get("learner_model_param", {}).get("num_class", 0) or 0)
        except Exception:  # noqa: BLE001
            return "binary", 2
        if obj.startswith("multi:"):
            return "multiclass", k
        if obj.startswith("binary:") or obj == "reg:logistic":
            return "binary", 2
        return "regression", None
    if fmt == "lightgbm":
        try:
            obj = str(raw.dump_model(num_iteration=0).get("objective", "")).split()[:1]
        except Exception:  # noqa: BLE001
            return "binary", 2
        name = obj[0] if obj else ""
        if name in ("multiclass", "multiclassova", "softmax", "multiclass_ova", "ova", "ovr"):
            return "multiclass", int(raw.dump_model(num_iteration=0).get("num_class", 0) or 0)
        if name in ("binary", "cross_entropy", "xentropy"):
            return "binary", 2
        return "regression", None
    return "binary", 2


def _xgb_objective(model) -> str:
    import json

    try:
        return json.loads(model.raw.save_config())["learner"]["objective"]["name"]
    except Exception:  # noqa: BLE001
        return ""


def _booster_predict(model, X):
    if model.format == "xgboost":
        return np.asarray(model._predict(X, False))     # a dart booster's two predict paths checked (boosted.py)
    return np.asarray(model.raw.predict(X))


def _class_outputs(model, X: np.ndarray, what: str, klass: int | None):
    """``class`` (int64 column indices), ``class_prob`` (float64, column ``klass``) or ``value``
    (float64) as the library computes them; None when the library has no such output."""
    fmt = getattr(model, "format", "")
    task, _ = library_task(model)
    if fmt == "sklearn":
        est = model.raw
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if what == "value":
                return np.asarray(est.predict(X), dtype=np.float64).reshape(-1) if task == "regression" else None
            if task == "regression":
                return None
            if what == "class":
                pred = np.asarray(est.predict(X))
                col = {v: i for i, v in enumerate(est.classes_.tolist())}
                return np.array([col[v] for v in pred.tolist()], dtype=np.int64)
            if what == "class_prob" and callable(getattr(est, "predict_proba", None)):
                return np.asarray(est.predict_proba(X), dtype=np.float64)[:, int(klass)].copy()
            if what == "class_logit" and pipeline_booster(model):
                from fairspec.models.pipeline_boosters import own_margin

                z = own_margin(est, X)      # a pipeline's XGBClassifier / LGBMClassifier: its own margin(s)
                if z.ndim == 1:
                    return z.copy() if int(klass) == 1 else -z
                return z[:, int(klass)].copy()
            if what == "class_logit" and callable(getattr(est, "decision_function", None)):
                z = np.asarray(est.decision_function(X), dtype=np.float64)
                if z.ndim == 1:
                    return z.copy() if int(klass) == 1 else -z
                return z[:, int(klass)].copy()
            return None
    if fmt in ("xgboost", "lightgbm"):
        if what == "value":
            return _booster_predict(model, X).astype(np.float64).reshape(-1) if task == "regression" else None
        if task == "regression":
            return None
        if what == "class_logit":
            if fmt == "xgboost":
                z = np.asarray(model._predict(X, True), dtype=np.float64)
            else:
                z = np.asarray(model.raw.predict(X, raw_score=True), dtype=np.float64)
            if task == "binary":
                z = z.reshape(-1)
                return z.copy() if int(klass) == 1 else -z
            return z.reshape(len(X), -1)[:, int(klass)].copy()
        if task == "binary":
            if what == "class":
                y = np.asarray(model._predict(X, model.margin), dtype=np.float64).reshape(-1)
                return (y > model.predict_cut).astype(np.int64)     # class 1 iff its score is
            p = np.asarray(model._predict(X, False), dtype=np.float64).reshape(-1)
            return p if int(klass) == 1 else 1.0 - p
        y = _booster_predict(model, X)
        if fmt == "xgboost" and _xgb_objective(model) == "multi:softmax":
            # the library's own class (its argmax of the margins, the first on a tie); no probabilities
            return y.astype(np.int64).reshape(-1) if what == "class" else None
        y = np.asarray(y, dtype=np.float64).reshape(len(X), -1)
        if what == "class":
            return np.argmax(y, axis=1).astype(np.int64)     # XGBClassifier / LGBMClassifier.predict: the first maximal
        if what == "class_prob":
            return y[:, int(klass)].copy()
        return None
    try:
        if what == "class":
            return model.predict_class(X)
        if what == "class_prob":
            return model.class_probabilities(X)[:, int(klass)]
        if what == "class_logit":
            return model.readout.class_logit(model.outputs(X), int(klass))
        if what == "value":
            return model.value(X)
    except Exception:  # noqa: BLE001 - no such output
        return None
    return None


def _one_order(model) -> None:
    """A threaded forest's sums by thread order: AmbiguousRuntime (fairspec.models.forest_threads)."""
    check = getattr(model, "one_order", None)
    if callable(check):
        check()


def runtime_outputs(model, X: np.ndarray, what: str, klass: int | None = None) -> np.ndarray | None:
    """The library's own ``label`` (0/1 int64, its ``predict``), ``prob`` (the positive class's
    probability) or ``logit`` (its raw margin / decision function) of a tree model on the
    model-input rows X; ``class`` / ``class_prob`` (of column ``klass``) / ``value`` of any task
    (:func:`_class_outputs`); None when the library has no such output (a forest's logit)."""
    _one_order(model)
    fmt = getattr(model, "format", "")
    X = np.asarray(X, dtype=np.float64)
    if what in ("class", "class_prob", "class_logit", "value"):
        return _class_outputs(model, X, what, klass)
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
            from fairspec.models.runtime_layers import one_per_row    # a margin per class is no one logit

            if what == "logit" and pipeline_booster(model) and len(classes) == 2:
                from fairspec.models.pipeline_boosters import own_margin

                z = one_per_row(own_margin(est, X), X.shape[0])     # a pipeline's binary booster: its own margin
                return None if z is None else z if idx == 1 else -z
            if what == "logit":
                if not callable(getattr(est, "decision_function", None)) or len(classes) != 2:
                    return None
                z = one_per_row(est.decision_function(X), X.shape[0])
                return None if z is None else z if idx == 1 else -z
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



def pipeline_booster(model) -> bool:
    """Is ``model`` a folded scikit-learn pipeline whose final step, an XGBClassifier / LGBMClassifier, the
    tree paths read as its booster's trees (fairspec.models.pipeline_boosters) on the encoded columns it is
    handed? (Not one evaluated whole, nor one whose one-hot drop reads a subset of them.)"""
    from fairspec.models.pipeline_boosters import is_booster_classifier

    folded = getattr(model, "folded", None)
    return (getattr(model, "format", "") == "sklearn" and folded is not None and folded.keep is None
            and not getattr(model, "unfolded", False) and is_booster_classifier(getattr(model, "raw", None)))


def cell_ensemble(model):
    """Every tree of every output column of a tree model (:func:`fairspec.models.tree_columns.split_union`
    of the per-column ensembles, each checked against the library): what cuts the pair domain into
    cells for the ``class`` / ``class_prob`` / ``value`` posts. None when the model is not a tree
    model fairspec reads (or its trees do not reproduce the library's outputs)."""
    _one_order(model)
    cached = getattr(model, "_cell_ensemble", False)
    if cached is not False:
        return cached
    from fairspec.models import tree_columns as TC
    from fairspec.models import trees as T
    from fairspec.models.batching import rounds_by_batch
    from fairspec.models.network import UnsupportedModel

    fmt = getattr(model, "format", "")
    ens = None
    try:
        if fmt == "sklearn" and not getattr(model, "unfolded", False) and not rounds_by_batch(model):
            # (a model rounding by batch -- a HistGradientBoosting of 8 classes or more, a GradientBoosting with an
            # init model -- is no tree model here: its cells' outputs on one batch decide no tie)
            name = type(model.raw).__name__
            if name in T.SKLEARN_TREES + T.SKLEARN_REGRESSORS:
                ens = TC.split_union(TC.sklearn_columns(model.raw))
            elif pipeline_booster(model):
                from fairspec.models.pipeline_boosters import booster_columns

                ens = TC.split_union(booster_columns(model.raw))
        elif fmt == "xgboost":
            ens = TC.split_union(TC.xgboost_columns(model.raw, getattr(model, "category_domains", None)))
        elif fmt == "lightgbm":
            ens = TC.split_union(TC.lightgbm_columns(model.raw, getattr(model, "category_domains", None)))
    except (UnsupportedModel, ValueError, KeyError):
        ens = None
    try:
        model._cell_ensemble = ens
    except AttributeError:
        pass
    return ens
