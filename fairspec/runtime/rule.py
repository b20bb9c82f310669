"""A classifier written in the spec itself: `model m = rule(P + Q + R - S >= 2)`.

It reads human-level feature values (a frame), not a model-input vector.
"""

from __future__ import annotations

import numpy as np

from fairspec import ir
from fairspec.verdict import Unsupported


class RuleModel:
    format = "rule"
    score_kind = "prob"
    threshold = 0.5

    def piecewise_linear(self):
        from fairspec.models.base import UnsupportedModel

        raise UnsupportedModel("rule", self.model.name, "a rule model is not a network")

    def __init__(self, model: ir.Model, features: ir.FeatureSet):
        self.model = model
        self.features = features

    def decide_values(self, values: dict, n: int) -> np.ndarray:
        def lookup(e):
            if isinstance(e, ir.FeatureRef):
                return values[e.feature]
            raise TypeError(type(e).__name__)

        from fairspec.runtime.exact_rule import decide_rule       # exact rationals near a tie (README)

        return decide_rule(self.model.rule, lookup, n).astype(np.int64)

    def describe(self) -> str:
        return f"rule model {self.model.name}"

    def tree_ensemble(self):
        return None

    def __getattr__(self, name: str):
        # Every other part of the model-file interface (score and decide on encoded inputs, the
        # network, replay, ...) does not exist for a rule: a backend that needs it reports the
        # property unknown with this reason (and hasattr() is False, as for any missing attribute).
        if name.startswith("__"):
            raise AttributeError(name)
        raise RuleNotSupported(f"this backend evaluates model files on encoded inputs; '{self.model.name}' is a "
                               f"rule over feature values (it has no {name.replace('_', ' ')})", name, self)


class RuleNotSupported(Unsupported, AttributeError):
    def __init__(self, reason: str, name: str, obj):
        Unsupported.__init__(self, reason)
        self.name, self.obj = name, obj
