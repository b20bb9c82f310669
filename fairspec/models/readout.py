"""The one place that decides which output column a model's decision reads, and by which rule.

A model file's chosen output (``output = ...``) is a vector ``y`` per row: one column, or
one column per class. The spec's ``index = i`` names the positive class's column and
``score = logit | prob`` says what the columns are. From these, :func:`resolve_readout`
fixes a :class:`Readout`; every backend reads the model through it -- the loaded model's
``score``/``decide`` (data, search, k-discrimination, distribution) and the piecewise-linear
network the solvers encode (MILP, SMT, PBA; :func:`fairspec.models.network.apply_readout`):

==========================  ==============================  ======================================
output                      score                           class 1 iff
==========================  ==============================  ======================================
one column, logit           ``y``                           ``y > 0``
one column, prob            ``y``                           ``y > 1/2``
K >= 2 columns, logit       ``y[i] - max_{j != i} y[j]``    column i is the largest (argmax); for
                                                            two columns the score is the log-odds
                                                            ``y[i] - y[1-i]`` a softmax would give
two columns, prob           ``y[i]``                        ``y[i] > 1/2``
==========================  ==============================  ======================================

An output with more than one column and no ``index`` is ambiguous: it is an error (lint
FS413), never silently column 0. Nothing here imports numpy at module import time.
"""

from __future__ import annotations

from dataclasses import dataclass

SCORE_KINDS = ("logit", "prob")

INDEX_HINT = "add index = 1 to the model declaration for the positive class (the second column), or index = 0 for the first"


class ReadoutError(Exception):
    """The declared output/index/score do not fix one binary decision; ``hint`` says what to write."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint


@dataclass(frozen=True)
class Readout:
    """How a model's output becomes one score and one decision.

    score:   "logit" | "prob": what the chosen column is.
    index:   the positive class's column of a multi-column output; None for a one-column output.
    columns: the output's column count when known (None: one column, or not known before a run).
    """

    score: str
    index: int | None = None
    columns: int | None = None

    @property
    def threshold(self) -> float:
        """Class 1 iff the score is above this: 0 for logits (and logit margins), 1/2 for probabilities."""
        return 0.0 if self.score == "logit" else 0.5

    def describe(self) -> str:
        if self.index is None:
            return f"the {self.score} > {self.threshold:g}"
        if self.score == "logit":
            return f"column {self.index} is the largest (score: column {self.index} minus the largest other column)"
        return f"the probability in column {self.index} > 0.5"

    def select(self, y, what: str = "the model's output"):
        """The score vector (n,) of an output batch y of shape (n,) or (n, K)."""
        import numpy as np

        y = np.asarray(y, dtype=np.float64)
        if y.ndim == 1 or (y.ndim == 2 and y.shape[1] == 1):
            if self.index not in (None, 0):
                raise ReadoutError(f"{what} has one column, so index {self.index} is out of range",
                                   "drop index = ..., or choose another output")
            return y.reshape(-1) if y.ndim == 2 else y
        if y.ndim != 2:
            raise ReadoutError(f"{what} has {y.ndim} dimensions; fairspec reads outputs of shape [N] or [N, K]")
        k = y.shape[1]
        r = resolve_readout(k, self.index, self.score, what)
        i = r.index
        if r.score == "prob":
            return y[:, i].copy()
        others = np.delete(y, i, axis=1)
        return y[:, i] - others.max(axis=1)


def resolve_readout(columns: int | None, index, score: str | None, what: str = "the model's output") -> Readout:
    """Check ``index``/``score`` against an output of ``columns`` columns (None: not known).

    Raises ReadoutError for an ambiguous or impossible choice. ``score`` None means "not
    given" (lint, before the loader guesses it from the output's name): only the column
    checks run.
    """
    if index is not None and (isinstance(index, bool) or not isinstance(index, int)):
        raise ReadoutError(f"the index {index!r} chosen for {what} is not a whole number")
    if index is not None and index < 0:
        raise ReadoutError(f"the index {index} chosen for {what} is negative", "columns count from 0")
    if score is not None and score not in SCORE_KINDS:
        raise ReadoutError(f"the score kind {score!r} given for {what} is not one of 'logit' or 'prob'",
                           "score = logit | prob")
    kind = score or "logit"
    if columns is None:
        return Readout(kind, index, None)
    if columns <= 1:
        if index not in (None, 0):
            raise ReadoutError(f"{what} has one column, so index {index} is out of range",
                               "drop index = ..., or choose another output")
        return Readout(kind, None, 1)
    if index is None:
        raise ReadoutError(f"{what} has {columns} columns, one per class, and the spec does not say which "
                           f"is the positive class", INDEX_HINT)
    if index >= columns:
        raise ReadoutError(f"{what} has {columns} columns, so index {index} is out of range",
                           f"columns count from 0: index = 0 .. {columns - 1}")
    if score == "prob" and columns > 2:
        raise ReadoutError(f"{what} has {columns} columns of probabilities: 'probability of column {index} > 0.5' "
                           f"is not the model's decision (argmax) for more than two classes",
                           "read the logits instead (score = logit): class 1 is then 'column index is the largest'")
    return Readout(kind, index, columns)
