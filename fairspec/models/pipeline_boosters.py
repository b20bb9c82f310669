"""An XGBClassifier / LGBMClassifier as the final step of a folded scikit-learn pipeline, read as trees.

A folded pipeline (fairspec.models.sklearn_pipeline) hands its final estimator the encoded columns;
when that estimator is a binary XGBoost or LightGBM classifier, its booster's trees over those columns
are the model's trees, exactly as for a scikit-learn tree model (fairspec.models.trees.from_sklearn):
the tree engines read them with the folded encoding in front. Read only where the classifier's own
predict is its booster's: the rounds it predicts with (XGBoost's ``best_iteration``, LightGBM's
``best_iteration_``), no ``missing`` value other than NaN (XGBoost sends such a value down the default
branch, which a threshold on the trees does not say), the plain logistic of the margin as its
probability (``binary:logistic`` or its twin ``reg:logistic``; LightGBM ``binary`` with ``sigmoid`` 1). The ensemble is then checked
against the classifier's own margin (``predict(X, output_margin / raw_score = True)``) at points on both
sides of every threshold; anything else is :class:`UnsupportedModel` (the property's ``unknown``).
:func:`booster_columns` reads every class's trees the same way (XGBoost ``multi:softprob``, LightGBM
``multiclass``: the softmax of the K margins) for the class / class_prob posts and k-discrimination.
"""

from __future__ import annotations

import math

from .base import UnsupportedModel, unnamed_inputs

BOOSTER_CLASSIFIERS = ("XGBClassifier", "LGBMClassifier")


def is_booster_classifier(est) -> bool:
    return type(est).__name__ in BOOSTER_CLASSIFIERS


def booster_trees(est, method: str, index):
    """The trees of a binary XGBClassifier / LGBMClassifier (``est``), the declared class
    ``predict_proba[:, index]``'s margin (fairspec.models.trees.from_xgboost / from_lightgbm)."""
    import numpy as np

    from . import trees as T

    name = type(est).__name__
    if method != "predict_proba":
        raise UnsupportedModel(name, method, f"the tree encodings read an {name}'s predict_proba")
    if len(list(getattr(est, "classes_", []))) != 2:
        raise UnsupportedModel(name, "classes_", "the exact tree encodings read binary classifiers")
    booster = _booster(est, binary=True)
    if name == "XGBClassifier":
        ens = T.from_xgboost(booster, index=index)
    else:
        ens = T.from_lightgbm(booster, index=index)
        if ens.margin_scale != 1.0:
            raise UnsupportedModel(name, "sigmoid", "its probability is the logistic of its raw score times "
                                   f"{ens.margin_scale:g}, not of the raw score")
    X = T._probe_points(ens, k=256, seed=2)
    want = own_margin(est, X).reshape(-1)
    want = -want if index == 0 else want
    got = ens.aggregate(X)
    if want.shape != got.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-5):
        raise UnsupportedModel(name, "trees", "the trees read from its booster do not reproduce its own "
                               "margin, so they are not encoded")
    return ens


def booster_columns(est):
    """Every output column of an XGBClassifier / LGBMClassifier (``est``) of any number of classes as trees
    (fairspec.models.tree_columns.xgboost_columns / lightgbm_columns: one group of trees per class, a binary
    model's one margin), for the class / class_prob / class_logit posts and k-discrimination of classes
    (fairspec.backends.trees.runtime.cell_ensemble, kinds/tree_boxes.output_scores): read under the same
    conditions as :func:`booster_trees` (the rounds its predict uses, NaN as its missing value, its
    probability the logistic of its margin or, for K classes, the softmax of its K margins: XGBoost
    ``multi:softprob``, LightGBM ``multiclass``), each column checked against the classifier's own margin
    (``predict(output_margin / raw_score = True)``) on 256 points straddling every threshold."""
    import numpy as np

    from . import tree_columns as TC
    from . import trees as T

    name = type(est).__name__
    booster = _booster(est, binary=len(list(getattr(est, "classes_", []))) == 2)
    cols = TC.xgboost_columns(booster) if name == "XGBClassifier" else TC.lightgbm_columns(booster)
    X = T._probe_points(TC.split_union(cols), k=256, seed=2)
    want = own_margin(est, X).reshape(len(X), -1)
    got = np.stack([c.aggregate(X) for c in cols], axis=1)
    if want.shape != got.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-5):
        raise UnsupportedModel(name, "trees", "the trees read from its booster do not reproduce its own "
                               "margins, so they are not encoded")
    return cols


def own_margin(est, X):
    """The classifier's own margin on the encoded rows X: (n,) for two classes, (n, K) for K."""
    import numpy as np

    with unnamed_inputs():
        if type(est).__name__ == "XGBClassifier":
            return np.asarray(est.predict(X, output_margin=True), dtype=np.float64)
        return np.asarray(est.predict(X, raw_score=True), dtype=np.float64)


def _booster(est, binary: bool):
    """The booster whose trees ``est``'s predict reads, or UnsupportedModel where its predict or
    predict_proba is not a function of those trees' margins that the tree paths read."""
    name = type(est).__name__
    if name == "XGBClassifier":
        missing = getattr(est, "missing", math.nan)
        if missing is not None and not (isinstance(missing, float) and math.isnan(missing)):
            raise UnsupportedModel(name, "missing", f"its predict sends missing = {missing!r} down the default "
                                   f"branches, which its split thresholds do not say")
        booster = est.get_booster()
        best = getattr(est, "best_iteration", None) if _has_best(est) else None
        if best is not None:
            booster = booster[0:int(best) + 1]      # the rounds XGBClassifier.predict uses
        obj = _xgb_objective(booster) or str(getattr(est, "objective", "") or "")
        # reg:logistic is XGBoost's binary:logistic under another name (the same sigmoid of the same margin;
        # measured bit for bit equal in float32: margins, predict_proba and predict, 20,000 points)
        want = ("binary:logistic", "reg:logistic") if binary else ("multi:softprob",)
        if obj not in want:
            raise UnsupportedModel(name, "objective", f"objective {obj!r}: its probability is not the "
                                   f"{'logistic' if binary else 'softmax'} of its margin"
                                   f"{'' if binary else 's'}")
        return booster
    if lightgbm_early_stop(est):
        raise UnsupportedModel(name, "pred_early_stop", "its predict stops adding trees once a row's margin is "
                               "large (pred_early_stop=True), which its trees do not say")
    booster = est.booster_
    if not binary:
        obj = str(booster.dump_model(num_iteration=0).get("objective", "")).split()[:1]
        if (obj[0] if obj else "") not in ("multiclass", "softmax"):
            raise UnsupportedModel(name, "objective", f"objective {obj[0] if obj else ''!r}: its probabilities "
                                   f"are not the softmax of its raw scores")
    return booster


def lightgbm_early_stop(est) -> bool:
    """Does a LightGBM scikit-learn model (LGBMClassifier, ...) predict with ``pred_early_stop`` on? Its own
    ``predict`` / ``predict_proba`` pass its parameters to the booster, which then stops adding a row's trees once
    its margin passes ``pred_early_stop_margin`` (measured: predict_proba 0.43 from the booster's own predict);
    a saved model file does not record it."""
    try:
        v = est.get_params().get("pred_early_stop", False)
    except Exception:  # noqa: BLE001 - not a scikit-learn model
        return False
    return str(v).strip().lower() not in ("false", "0", "none", "")


def _xgb_objective(booster) -> str:
    import json

    try:
        return str(json.loads(booster.save_config())["learner"]["objective"]["name"])
    except Exception:  # noqa: BLE001
        return ""


def _has_best(est) -> bool:
    try:
        return getattr(est, "best_iteration", None) is not None
    except AttributeError:
        return False


def no_probability(est, name: str = "its final XGBClassifier") -> str | None:
    """Why an XGBClassifier's predict_proba is no class probability (fairspec.models.boosted.XGB_NO_PROBABILITY:
    binary:hinge, its 0 / 1 decision; binary:logitraw, its raw margin), as the clause after "but" of the
    refusal (check's ``prob_problem``; lint's FS415, sema/check_models reading the pipeline it loads, as for
    the same objectives saved alone), ``name`` its subject; None for another estimator or objective."""
    if type(est).__name__ != "XGBClassifier":
        return None
    from .boosted import no_probability as why

    try:
        obj = _xgb_objective(est.get_booster())
    except Exception:  # noqa: BLE001 - not fitted: its load fails elsewhere
        return None
    obj = obj or str(getattr(est, "objective", "") or "")
    if obj.split()[:1] == ["multi:softmax"]:
        return None     # XGBClassifier.predict_proba is its softmax of the margins: the runtime read
    return why("xgboost", obj, name)

