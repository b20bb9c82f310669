"""scikit-learn meta-estimators whose every row is computed alike in any batch: small domains decided on them.

fairspec reads a meta-estimator (VotingClassifier, BaggingClassifier, CalibratedClassifierCV, OneVsRestClassifier,
StackingClassifier, or a Pipeline ending in one) as an opaque runtime: its own predict_proba / decision_function /
predict, never a solver encoding. A non-tree scikit-learn runtime gets an *assumed* batch spread
(:func:`fairspec.models.batching.rounds_by_batch`), so on an enumerated domain every pair at a tie (``<= 0``, a
probability exactly at 1/2) was ``unknown``. :func:`row_fixed` says where no spread is needed: the meta-estimator
combines members that are themselves tree models (which compare and add in a fixed order per row; told by their
fitted attributes, :func:`tree_why_not`), by operations
that compute each row from that row alone in a fixed order, on one thread or in an order no thread changes
(scikit-learn 1.9.1's code, read and measured):

- VotingClassifier (soft): ``np.average`` over the members' predict_proba along axis 0 (the members' arrays
  added in their order, elementwise: measured equal in batches of 1 and of 500 for 3 to 130 members, with and
  without weights); no threads in predict (``n_jobs`` is fit's). Hard voting has no predict_proba: refused at load.
- BaggingClassifier: ``_partition_estimators`` groups the members by ``effective_n_jobs(n_jobs)``; each group adds
  its members' predict_proba in order, and the groups' sums are added in the group order (joblib returns results in
  order). The grouping, and so the rounding, depends on the number of jobs -- with ``n_jobs`` other than 1 / None
  on the CPU count or the joblib context of the machine that predicts -- so only ``n_jobs`` 1 / None is row-fixed.
- CalibratedClassifierCV (sigmoid / isotonic): each calibrated classifier maps its member's response by an
  elementwise calibrator (``expit(-(a T + b))``, ``np.interp``), ``p0 = 1 - p1`` or a per-row normalisation (a
  C-ordered row sum: measured batch-free), and the classifiers' probabilities are added in order and divided.
- OneVsRestClassifier: its predict_proba divides by ``np.sum(Y, axis=1)`` of a *transposed* (column-major) array:
  with 8 or more classes numpy sums one row pairwise and a batch of rows in order (measured: 193 of 500 rows differ
  between batches of 1 and of 500 for 8 columns), so only fewer than 8 members are row-fixed.
- StackingClassifier: the final estimator reads the members' outputs side by side (``np.hstack``); row-fixed when
  the final estimator and every member are.

Regressors (session 37; measured on scikit-learn 1.9.1: 500 rows predicted whole, one by one, in chunks of 7 and
reversed, tree members, bit for bit):

- BaggingRegressor: as BaggingClassifier (``sum`` of each group's members' predict, groups by ``n_jobs``): row-fixed
  with ``n_jobs`` 1 / None only.
- AdaBoostRegressor: the weighted median of its members' predictions (a per-row argsort, a per-row cumulative sum of
  the weights, one member's prediction selected): the value is a member's, whatever the order of tied members.
- VotingRegressor: ``np.average(..., axis=1)`` over a *transposed* array of the members' predictions: as
  OneVsRestClassifier's row sum, from 8 members numpy adds one row pairwise and a batch column by column (measured:
  165 of 500 rows differ alone for 9 members, none for 3 or 7, with or without weights): fewer than 8 only.
- StackingRegressor: as StackingClassifier.
- TransformedTargetRegressor: its regressor's predict, then its transformer's ``inverse_transform``: row-fixed when
  the regressor is and the transformer is the identity (no ``func`` / ``inverse_func``) or a scaler computing each
  cell alone (:data:`_CELLWISE_TARGET`); a ``func`` is numpy code fairspec does not read (a vectorised ``expm1``
  may round a value by its position in the batch).

A KNeighborsRegressor (its neighbours found by distances computed in chunks of the batch), an SVR or any other
model is not row-fixed here: its small domains are enumerated with the assumed spread, a tie ``unknown``.

A Pipeline *ending* in a meta-estimator is :func:`fairspec.models.batching.rounds_by_batch`'s (its steps cell-wise
when it is run whole); a Pipeline *among the members* is not read here (it keeps the assumed spread).
A forest among the members predicting on threads is :mod:`fairspec.models.forest_threads`' (unknown, naming
``n_jobs``), whatever this module says. :func:`why_not` is the sentence for the others, added to their unknowns.
"""

from __future__ import annotations

META = ("VotingClassifier", "BaggingClassifier", "CalibratedClassifierCV", "OneVsRestClassifier",
        "StackingClassifier", "VotingRegressor", "BaggingRegressor", "AdaBoostRegressor", "StackingRegressor",
        "TransformedTargetRegressor")
#: a TransformedTargetRegressor's transformers whose inverse_transform computes each cell from its own cell by
#: correctly rounded operations (``X *= scale_; X += mean_``, ...): the same value in any batch
_CELLWISE_TARGET = ("StandardScaler", "MinMaxScaler", "MaxAbsScaler")
#: OneVsRestClassifier's pairwise row sum starts at this many columns (numpy's pairwise summation)
OVR_PAIRWISE = 8


#: the DummyClassifier / DummyRegressor strategies whose prediction is one constant ("stratified" and
#: "uniform" draw at random)
CONSTANT_STRATEGIES = {"DummyClassifier": ("prior", "most_frequent", "constant"),
                       "DummyRegressor": ("mean", "median", "quantile", "constant")}


def constant_init(est) -> bool:
    """Whether ``est`` (a fitted GradientBoosting model) starts from a constant: ``init_`` is ``"zero"`` or
    a scikit-learn dummy estimator with a constant strategy."""
    init = getattr(est, "init_", "zero")
    if isinstance(init, str):
        return init == "zero"
    kind = type(init)
    return kind.__module__.startswith("sklearn.dummy") and getattr(init, "strategy", None) in \
        CONSTANT_STRATEGIES.get(kind.__name__, ())


#: tree models whose predict_proba / predict reads each row's leaves and adds or averages them elementwise, for any
#: number of classes (scikit-learn 1.9.1: ``tree_.predict``'s stored fractions, a forest's in-place sum and division;
#: measured equal whole, alone and in chunks of 7 for 2 to 12 classes)
PLAIN_TREES = ("DecisionTreeClassifier", "RandomForestClassifier", "ExtraTreesClassifier", "DecisionTreeRegressor",
               "RandomForestRegressor", "ExtraTreesRegressor")


def tree_why_not(est) -> str | None:
    """None when ``est`` is a fitted tree model whose every row is computed alike in any batch, decided by its fitted
    attributes and never by its class name alone; else what stands in the way (a phrase naming it):

    - a decision tree, random forest or extra trees (:data:`PLAIN_TREES`; a forest on threads is
      :mod:`fairspec.models.forest_threads`' unknown);
    - GradientBoosting (classifier or regressor) only with a constant ``init_``
      (:func:`constant_init`) or a plain tree one (its elementwise log-odds; measured row-fixed, 2 to 12 classes):
      any other init model's predictions enter every row's margin (a LogisticRegression fit on its float32 input:
      a float32 dot product that rounds by batch);
      its raw scores are C-ordered, so its softmax's row sum is one order per row (measured: 2 to 12 classes);
    - HistGradientBoosting with fewer than :data:`OVR_PAIRWISE` classes (its raw scores are column-major: from 8
      classes numpy sums one row's softmax pairwise and a batch column by column, an ulp apart on 20 of 81 rows);
    - an XGBClassifier on the tree booster (gbtree / dart) and an LGBMClassifier (per-row C++ loops; measured equal
      whole, alone and in chunks of 7: XGBoost for 2 to 12 classes, LightGBM for 2, 3, 8, 9 and 12)."""
    name = type(est).__name__
    if name in PLAIN_TREES:
        return None
    if name in ("GradientBoostingClassifier", "GradientBoostingRegressor"):
        init = getattr(est, "init_", None)
        if constant_init(est) or type(init).__name__ in PLAIN_TREES:    # a tree init: measured row-fixed, 2-12 classes
            return None
        return (f"its {name}'s init estimator ({type(getattr(est, 'init_', None)).__name__}), a model of its own "
                f"whose predictions enter every row's margin and may round by batch")
    if name in ("HistGradientBoostingClassifier", "HistGradientBoostingRegressor"):
        k = int(getattr(est, "n_trees_per_iteration_", 1) or 1)
        if k >= OVR_PAIRWISE:
            return (f"its {name} of {k} classes, whose softmax sums a row of its column-major scores in another order "
                    f"for one row than for many")
        return None
    if name == "XGBClassifier":
        booster = getattr(est, "booster", None)
        if booster not in (None, "gbtree", "dart"):
            return f"its XGBClassifier's booster {booster!r} (not trees)"
        return None
    if name == "LGBMClassifier":
        return None
    return f"its member {name} (not a tree model: its scores may round by batch)"


def float32_inside(est, depth: int = 0) -> bool:
    """Does a model inside ``est`` compute in float32 on scikit-learn's runtime? A GradientBoosting's init model that
    is not a constant nor a plain tree (:func:`tree_why_not`) is fit and run on GradientBoosting's float32 input (a
    LogisticRegression's float32 coefficients: a float32 dot product, ~1e-7 apart by batch), looked for in a
    Pipeline's steps and a meta-estimator's members too; the assumed batch spread is then float32's
    (:data:`fairspec.models.batching.ASSUMED_SPREAD`, read by ``LoadedModel.precision``)."""
    name = type(est).__name__
    if depth > 8:
        return True
    if name in ("GradientBoostingClassifier", "GradientBoostingRegressor"):
        return tree_why_not(est) is not None
    if name == "Pipeline":
        return any(float32_inside(t, depth + 1) for _, t in est.steps)
    if name == "FrozenEstimator":
        return float32_inside(getattr(est, "estimator", None), depth + 1)
    if name in META:
        return any(m is not None and float32_inside(m, depth + 1) for m in _members(est))
    return False


def _members(est) -> list:
    """The fitted members a meta-estimator combines (a Stacking's final estimator among them), or None when it
    is not one this module reads."""
    name = type(est).__name__
    if name == "CalibratedClassifierCV":
        return [c.estimator for c in (getattr(est, "calibrated_classifiers_", None) or ())]
    kids = [m for m in (getattr(est, "estimators_", None) or ()) if not isinstance(m, str)]
    if name in ("StackingClassifier", "StackingRegressor"):
        kids.append(getattr(est, "final_estimator_", None))
    if name == "TransformedTargetRegressor":
        kids = [getattr(est, "regressor_", None)]
    return kids


def why_not(est, depth: int = 0) -> str | None:
    """None when every row of the estimator's predict / predict_proba is computed alike in any batch and on
    any machine (see the module's notes); else what stands in the way, a phrase naming the estimator."""
    name = type(est).__name__
    if depth > 8:
        return f"a {name} nested too deep"
    if name == "FrozenEstimator":           # a prefit member of CalibratedClassifierCV
        return why_not(getattr(est, "estimator", None), depth + 1)
    if name == "Pipeline":
        return "a Pipeline among its members (its steps are not read here)"
    if name == "_ConstantPredictor":
        return None
    if name not in META:
        return tree_why_not(est)
    if name == "VotingClassifier" and getattr(est, "voting", None) != "soft":
        return "a hard VotingClassifier"
    if name in ("BaggingClassifier", "BaggingRegressor") and getattr(est, "n_jobs", None) not in (None, 1):
        return (f"its {name} groups its members by n_jobs = {est.n_jobs} (on the machine's CPU count for "
                f"a negative n_jobs), and the grouping changes the rounding of their sum")
    if name == "CalibratedClassifierCV":
        if getattr(est, "method", None) not in ("sigmoid", "isotonic"):
            return f"its CalibratedClassifierCV's method {getattr(est, 'method', None)!r}"
        for c in getattr(est, "calibrated_classifiers_", None) or ():
            for cal in getattr(c, "calibrators", None) or ():
                if type(cal).__name__ not in ("_SigmoidCalibration", "IsotonicRegression"):
                    return f"its calibrator {type(cal).__name__}"
    if name == "TransformedTargetRegressor":
        t = getattr(est, "transformer_", None)
        tn = type(t).__name__
        identity = tn == "FunctionTransformer" and getattr(t, "func", None) is None and \
            getattr(t, "inverse_func", None) is None
        if not identity and tn not in _CELLWISE_TARGET:
            return (f"its TransformedTargetRegressor's target transformer {tn} (its inverse_transform is code fairspec "
                    f"does not read, which may round a value by its place in the batch)")
    members = _members(est)
    if not members or any(m is None for m in members):
        return f"a {name} without fitted members"
    if name == "VotingRegressor" and len(members) >= OVR_PAIRWISE:
        return (f"its VotingRegressor averages {len(members)} members by a row sum numpy adds in another order for "
                f"one row than for many")
    if name == "OneVsRestClassifier" and len(members) >= OVR_PAIRWISE:
        return (f"its OneVsRestClassifier normalises {len(members)} columns by a row sum numpy adds in another "
                f"order for one row than for many")
    for m in members:
        why = why_not(m, depth + 1)
        if why is not None:
            return why
    return None


def row_fixed(est) -> bool:
    """Is ``est`` a meta-estimator (:data:`META`) whose every row is computed alike in any batch?"""
    return type(est).__name__ in META and why_not(est) is None


def hint(model) -> str | None:
    """For an ``unknown`` left by the assumed batch spread of a scikit-learn meta-estimator (a Pipeline's final
    one too), a neighbours model or a regressor: what stands in the way and what would let fairspec decide; None
    for any other model."""
    if getattr(model, "format", "") != "sklearn":
        return None
    est = getattr(model, "raw", None)
    final = est.steps[-1][1] if hasattr(est, "steps") else est
    if type(final).__name__ not in META:
        name = type(final).__name__
        if name.startswith("KNeighbors") or name.startswith("RadiusNeighbors"):
            return (f"the {name} is read as its own predict: its neighbours are found by distances computed in "
                    f"chunks of the batch, whose rounding -- and so the neighbours at a tie of distances -- may "
                    f"depend on the batch; fairspec decides a tie only where every row is shown computed alike")
        if name.endswith("Regressor") or name in ("SVR", "NuSVR", "KernelRidge"):
            return (f"the {name} is read as its own predict, which fairspec does not show computes every row alike "
                    f"in any batch (it does for tree models and their bagging, boosting, voting of fewer than "
                    f"{OVR_PAIRWISE}, stacking and a TransformedTargetRegressor with a scaler or no transformer)")
        return None
    why = why_not(final)
    if why is None:                 # row-fixed: the pipeline's own steps mix columns
        return None
    return (f"the {type(final).__name__} is read as its own predict_proba / predict, and {why}; fairspec decides a "
            f"tie on a meta-estimator only when it combines tree models row by row (a soft VotingClassifier, a "
            f"BaggingClassifier with n_jobs = 1, a sigmoid / isotonic CalibratedClassifierCV, a OneVsRestClassifier "
            f"of fewer than {OVR_PAIRWISE} classes, a StackingClassifier with a tree final estimator; a BaggingRegressor "
            f"with n_jobs = 1, an AdaBoostRegressor, a VotingRegressor of fewer than {OVR_PAIRWISE} members, a "
            f"StackingRegressor, a TransformedTargetRegressor with a scaler or no transformer), or a pair clear of the "
            f"threshold")


def no_score_hint(est) -> str:
    """What to do with a classifier that has only ``predict`` (refused at load: every property reads a score,
    and the data path's group metrics read the declared model through the same loader): a hard vote's."""
    if type(est).__name__ == "VotingClassifier" and getattr(est, "voting", None) == "hard":
        return (" (voting = 'hard': its predict is a vote of its members' labels, a decision with no score to read); "
                "refit it with voting = 'soft' (predict_proba: the members' averaged probabilities), or check its "
                "decisions on data as predictions (model m = predictions(d, decision = \"column\") over a column of "
                "its predict)")
    return ""
