"""An XGBClassifier / LGBMClassifier as the final step of a folded scikit-learn pipeline, read as trees.

A folded pipeline (fairspec.models.sklearn_pipeline) hands its final estimator the encoded columns;
when that estimator is a binary XGBoost or LightGBM classifier, its booster's trees over those columns
are the model's trees, exactly as for a scikit-learn tree model (fairspec.models.trees.from_sklearn):
the tree engines read them with the folded encoding in front. Read only where the classifier's own
predict is its booster's: the rounds it predicts with (XGBoost's ``best_iteration``, LightGBM's
``best_iteration_``), no ``missing`` value other than NaN (XGBoost sends such a value down the default
branch, which a threshold on the trees does not say), the plain logistic of the margin as its
probability (``binary:logistic``; LightGBM ``binary`` with ``sigmoid`` 1). The ensemble is then checked
against the classifier's own margin (``predict(X, output_margin / raw_score = True)``) at points on both
sides of every threshold; anything else is :class:`UnsupportedModel` (the property's ``unknown``).
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
    if name == "XGBClassifier":
        missing = getattr(est, "missing", math.nan)
        if missing is not None and not (isinstance(missing, float) and math.isnan(missing)):
            raise UnsupportedModel(name, "missing", f"its predict sends missing = {missing!r} down the default "
                                   f"branches, which its split thresholds do not say")
        booster = est.get_booster()
        best = getattr(est, "best_iteration", None) if _has_best(est) else None
        if best is not None:
            booster = booster[0:int(best) + 1]      # the rounds XGBClassifier.predict uses
        obj = str(getattr(est, "objective", "") or "binary:logistic")
        if obj != "binary:logistic":
            raise UnsupportedModel(name, "objective", f"objective {obj!r}: its probability is not the logistic "
                                   f"of its margin")
        ens = T.from_xgboost(booster, index=index)

        def margin(X):
            return est.predict(X, output_margin=True)
    else:
        ens = T.from_lightgbm(est.booster_, index=index)
        if ens.margin_scale != 1.0:
            raise UnsupportedModel(name, "sigmoid", "its probability is the logistic of its raw score times "
                                   f"{ens.margin_scale:g}, not of the raw score")

        def margin(X):
            return est.predict(X, raw_score=True)
    X = T._probe_points(ens, k=256, seed=2)
    with unnamed_inputs():
        want = np.asarray(margin(X), dtype=np.float64).reshape(-1)
    want = -want if index == 0 else want
    got = ens.aggregate(X)
    if want.shape != got.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-5):
        raise UnsupportedModel(name, "trees", "the trees read from its booster do not reproduce its own "
                               "margin, so they are not encoded")
    return ens


def _has_best(est) -> bool:
    try:
        return getattr(est, "best_iteration", None) is not None
    except AttributeError:
        return False
