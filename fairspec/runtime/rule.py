"""A classifier written in the spec itself: `model m = rule(P + Q + R - S >= 2)`.

It reads human-level feature values (a frame), not a model-input vector.
"""

from __future__ import annotations

import numpy as np

from fairspec import ir
from fairspec.runtime.evaluate import evaluate


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

        return evaluate(self.model.rule, lookup, n).astype(np.int64)

    def describe(self) -> str:
        return f"rule model {self.model.name}"
