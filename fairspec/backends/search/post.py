"""Post-conditions of pair properties, as numbers the search can climb.

The evaluator returns one score per input row: a logit (``scores="logit"``) or a
probability (``scores="prob"``). The post-condition says when a pair (x, x')
violates the property:

* ``label``: the decisions differ: (s > t) != (s' > t), t the threshold
  (default 0 on logits, 1/2 on probabilities);
* ``prob``:  |p - p'| > eps, with p = sigmoid(s) when the scores are logits;
* ``logit``: |s - s'| > eps (the scores must be logits).

``objective(a, b)`` is continuous and > 0 exactly where the pair is violated
(up to ties at the threshold), so a greedy search can climb it:
label: max(min(a - t, t - b), min(b - t, t - a)); prob/logit: |a - b| - eps
(on transformed scores). ``violation(a, b)`` is the reported size of a
violation: the smaller distance to the threshold (label) or |a - b|.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairspec.models.network import sigmoid  # noqa: F401 - re-exported for the search modules
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly

POST_KINDS = ("label", "prob", "logit")




@dataclass(frozen=True)
class Post:
    kind: str = "label"
    eps: float = 0.0
    threshold: float | None = None
    scores: str = "logit"

    def __post_init__(self):
        if self.kind not in POST_KINDS:
            raise ValueError(f"post-condition kind {self.kind!r} is not one of {POST_KINDS}")
        if self.scores not in ("logit", "prob"):
            raise ValueError(f"scores must be 'logit' or 'prob', not {self.scores!r}")
        if self.kind == "logit" and self.scores != "logit":
            raise ValueError("a logit post-condition needs an evaluator that returns logits")
        if self.eps < 0:
            raise ValueError("eps must be >= 0")

    # convenience constructors ------------------------------------------------
    @staticmethod
    def label(threshold: float | None = None, scores: str = "logit") -> "Post":
        return Post("label", 0.0, threshold, scores)

    @staticmethod
    def prob(eps: float, scores: str = "logit") -> "Post":
        return Post("prob", float(eps), None, scores)

    @staticmethod
    def logit(eps: float) -> "Post":
        return Post("logit", float(eps), None, "logit")

    # ---------------------------------------------------------------------------
    @property
    def t(self) -> float:
        if self.threshold is not None:
            return float(self.threshold)
        return 0.0 if self.scores == "logit" else 0.5

    def transform(self, s: np.ndarray) -> np.ndarray:
        """The scores the post-condition compares (probabilities for ``prob`` on logits)."""
        if self.kind == "prob" and self.scores == "logit":
            return sigmoid(s)
        return np.asarray(s, dtype=np.float64)

    def objective(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """On transformed scores; > 0 where violated."""
        if self.kind == "label":
            t = self.t
            return np.maximum(np.minimum(a - t, t - b), np.minimum(b - t, t - a))
        return np.abs(a - b) - self.eps

    def violated(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """On transformed scores: the exact post-condition failure."""
        if self.kind == "label":
            t = self.t
            return (a > t) != (b > t)
        return np.abs(a - b) > self.eps

    def violation(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if self.kind == "label":
            t = self.t
            return np.minimum(np.abs(a - t), np.abs(b - t))
        return np.abs(a - b)

    def describe(self) -> str:
        if self.kind == "label":
            return f"label(score > {_spec_number(self.t)}) differs"
        if self.kind == "prob":
            return f"|prob - prob'| > {_spec_number(self.eps)}"
        return f"|logit - logit'| > {_spec_number(self.eps)}"
