"""A scikit-learn gradient booster's ``init``: the part of its margin that is not its trees.

``GradientBoostingClassifier`` / ``GradientBoostingRegressor`` start every prediction from ``init_``'s
(its log-odds, or its value) and add the trees' sum. fairspec reads the trees and one constant for the
rest (``fairspec.models.trees._with_base``), so only an ``init_`` that predicts one constant whatever the
input may be read that way: ``"zero"`` or a ``DummyClassifier`` / ``DummyRegressor`` with a deterministic
strategy (the default, ``init=None``, is one). Any other ``init`` -- a model of its own, whose dependence on
an input the trees never split on can be far below the trees' self-check -- makes the model refused as a
tree model (it is then evaluated whole on its own ``predict``)."""

from __future__ import annotations

from fairspec.models.base import UnsupportedModel

#: the DummyClassifier / DummyRegressor strategies whose prediction is one constant ("stratified" and
#: "uniform" draw at random)
CONSTANT_STRATEGIES = {"DummyClassifier": ("prior", "most_frequent", "constant"),
                       "DummyRegressor": ("mean", "median", "quantile", "constant")}


def check_constant_init(est) -> None:
    """Raise :class:`UnsupportedModel` unless ``est`` (a fitted GradientBoosting model) starts from a
    constant: ``init_`` is ``"zero"`` or a scikit-learn dummy estimator with a constant strategy."""
    init = getattr(est, "init_", "zero")
    if isinstance(init, str) and init == "zero":
        return
    kind = type(init)
    if kind.__module__.startswith("sklearn.dummy") and getattr(init, "strategy", None) in CONSTANT_STRATEGIES.get(
            kind.__name__, ()):
        return
    raise UnsupportedModel(type(est).__name__, "init", f"its init estimator ({kind.__name__}) is a model of its "
                           "own whose predictions enter the margin beside the trees, so it is not read as trees")
