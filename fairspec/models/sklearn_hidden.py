"""What a scikit-learn gradient booster computes beside the trees fairspec reads from it.

fairspec reads a booster as its trees plus one constant (``fairspec.models.trees._with_base``) and checks
the reading against the library's own predictions at probe points, within a tolerance (``_self_check``:
rtol / atol 1e-5). A part of the prediction that the trees do not show and that moves it by less than that
tolerance would pass unseen, and a proof resting on which inputs the trees read (the cells, ``prove_unread``)
would then be about another model. So two such parts are refused outright (the model is then evaluated whole
on its own ``predict``; the solvers say ``unknown``):

* ``GradientBoostingClassifier`` / ``GradientBoostingRegressor`` start every prediction from ``init_``'s
  (its log-odds, or its value): only ``"zero"`` or a ``DummyClassifier`` / ``DummyRegressor`` with a
  deterministic strategy (the default, ``init=None``, is one) is a constant;
* ``HistGradientBoostingClassifier`` / ``HistGradientBoostingRegressor`` with categorical features run the
  input through a fitted ``_preprocessor`` that puts the categorical columns first, so the predictors'
  ``feature_idx`` number the reordered columns, not the model's inputs.

A LightGBM booster with linear trees (``linear_tree=True``) adds in each leaf ``leaf_coeff . x[leaf_features]``
to the leaf's constant: a model file says ``is_linear=1`` and its loader refuses it (fairspec.models.treefile, FS401),
but a booster read in memory (an LGBMClassifier ending a pipeline: fairspec.models.pipeline_boosters) is refused
here (:func:`check_lightgbm_sum`). So is a LightGBM random forest (``boosting_type="rf"``; ``average_output``):
its ``predict(raw_score=True)`` is the trees' sum but its probability the logistic of their *mean* (measured:
predict_proba 0.31 from the logistic of the raw score, 5 trees), so the sum is not the margin its probability is of.
"""

from __future__ import annotations

from fairspec.models.base import UnsupportedModel
# (kept in meta_estimators, which models.base reads for a model's precision: no import cycle)
from fairspec.models.meta_estimators import CONSTANT_STRATEGIES, constant_init  # noqa: F401 - re-exported


def check_constant_init(est) -> None:
    """Raise :class:`UnsupportedModel` unless :func:`constant_init`."""
    if constant_init(est):
        return
    kind = type(getattr(est, "init_", None))
    raise UnsupportedModel(type(est).__name__, "init", f"its init estimator ({kind.__name__}) is a model of its "
                           "own whose predictions enter the margin beside the trees, so it is not read as trees")


def check_inputs_in_order(est) -> None:
    """Raise :class:`UnsupportedModel` when a fitted HistGradientBoosting model feeds its trees other columns
    than its inputs in their order (a ``_preprocessor``: categorical features, moved first)."""
    if getattr(est, "_preprocessor", None) is not None:
        raise UnsupportedModel(type(est).__name__, "_preprocessor", "it has categorical features, which its own "
                               "preprocessor moves before the others, so its trees' feature numbers are not its "
                               "inputs' and it is not read as trees")


def check_lightgbm_sum(dump) -> None:
    """Raise :class:`UnsupportedModel` unless a LightGBM ``dump_model()``'s prediction is the logistic (or softmax)
    of its trees' summed leaf values: not for a random forest (``average_output``: the mean) nor for a leaf with a
    linear part (a linear tree's ``leaf_coeff`` / ``leaf_features``: its prediction there is not its value)."""
    if dump.get("average_output"):
        raise UnsupportedModel("LightGBM", "average_output", "it is a random forest (boosting_type='rf'): its "
                               "probability is the logistic of its trees' mean, while its raw score is their sum, "
                               "so it is not read as trees")
    for t, info in enumerate(dump.get("tree_info", [])):
        stack = [info.get("tree_structure", {})]
        while stack:
            nd = stack.pop()
            if "split_feature" in nd:
                stack += [nd["left_child"], nd["right_child"]]
            elif nd.get("leaf_coeff") or nd.get("leaf_features"):
                raise UnsupportedModel("LightGBM", "linear_tree", f"tree {int(info.get('tree_index', t))} is a "
                                       "linear tree (linear_tree=True): a leaf adds a linear function of the inputs "
                                       "to its value, which the tree encodings do not model, so it is not read as "
                                       "trees")
