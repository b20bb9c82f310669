"""The subject's decision and score per row of a batch: a model's (as its runtime computes them, a
batch-rounding runtime's fragile rows and a thread-ordered forest's near rows noted for later), a logged
column's, or the label (the data set itself).  Moved out of :mod:`fairspec.backends.data.metrics`, unchanged;
:mod:`fairspec.backends.data.cell_counts` counts them per cell."""

from __future__ import annotations

import numpy as np

from fairspec import ir
from fairspec.backends.data import batching


def decisions(ctx, model_name: str, values: dict, n: int, memo: dict | None = None) -> np.ndarray:
    """The model's decision per row; ``memo`` (one dict per batch) keeps it for every property of
    a shared pass that asks for the same model on the same rows."""
    if memo is not None and ("decide", model_name) in memo:
        return memo[("decide", model_name)]
    model = ctx.model(model_name)
    if getattr(model, "format", None) == "rule":
        d = model.decide_values(values, n)
    elif memo is not None and batching.checked(model):
        # a runtime that rounds by batch: the rows near the threshold re-decided in other batchings
        X = model_input(ctx, model_name, values, n, memo)
        d, z, thr = batching.decide_and_score(model, X)
        memo[("fragile", model_name)] = batching.decision_fragile(model, X, d, z, thr)
    elif getattr(model, "order_problem", None) is not None:      # a forest adding its trees in thread order
        from fairspec.backends.data.forest_rows import decisions as forest_decisions

        d = forest_decisions(model, model_input(ctx, model_name, values, n, memo), memo, model_name)
    else:
        d = model.decide(model_input(ctx, model_name, values, n, memo))
    if memo is not None:
        memo[("decide", model_name)] = d
    return d


def model_input(ctx, model_name: str, values: dict, n: int, memo: dict | None = None) -> np.ndarray:
    """The encoded rows; models with the same fitted encoding share one matrix per batch."""
    if memo is None:
        return ctx.model_input(model_name, values, n)
    enc = ctx.encoding(model_name)
    key = ("input", enc.width, enc.columns)
    if key not in memo:
        memo[key] = ctx.model_input(model_name, values, n)
    return memo[key]


class NoScore(Exception):
    """The subject has no score (a rule, a table of logged decisions): one sentence why."""


def scores(ctx, model_name: str, rows, values: dict, n: int, memo: dict | None = None) -> np.ndarray:
    """The subject's score per row, as a probability in [0, 1] when it is a logit."""
    if memo is not None and ("score", model_name) in memo:
        return memo[("score", model_name)]
    s = _scores(ctx, model_name, rows, values, n, memo)
    if memo is not None:
        memo[("score", model_name)] = s
    return s


def _scores(ctx, model_name: str, rows, values: dict, n: int, memo: dict | None) -> np.ndarray:
    m = ctx.spec.model(model_name)
    if m.format == "predictions":
        if m.score_column is None:
            raise NoScore(f"model '{m.name}' is a column of logged decisions ({m.decision_column}) with no score")
        return rows.decided_numbers(m.score_column, f"read as the score of model '{m.name}'")
    model = ctx.model(model_name)
    if getattr(model, "format", None) == "rule":
        raise NoScore(f"model '{m.name}' is a rule: it decides, but has no score")
    if getattr(model, "order_problem", None) is not None:     # a forest adding its trees in thread order
        from fairspec.backends.data.forest_rows import score_refusal

        raise score_refusal(model)
    read, logit = model.prob_reader()          # a booster declared by its margin: its library's probability
    s = read(model_input(ctx, model_name, values, n, memo))
    if memo is not None:                       # what the runtime computed (batching's spread is about it)
        memo[("raw", model_name)] = np.asarray(s, dtype=np.float64)
    return 1.0 / (1.0 + np.exp(-s)) if logit else s


def subject_decisions(prop: ir.GroupMetric, ctx, rows, values: dict, n: int, y: np.ndarray,
                      median: float | None = None, memo: dict | None = None) -> np.ndarray:
    """The decision per row: the model's, a logged column's, or the label (the data set itself);
    with rate = scoring (NYC LL 144's scoring rate) a score above the sample's median score."""
    if not prop.model:
        return y
    m = ctx.spec.model(prop.model)
    if prop.param("rate") == "scoring":
        return (scores(ctx, prop.model, rows, values, n, memo) > median).astype(np.int64)
    if m.format == "predictions":
        if m.decision_column is not None:
            return rows.truthy(m.decision_column, m.positive)
        score = rows.decided_numbers(m.score_column, f"read as the score of model '{m.name}'")
        return (score > m.threshold).astype(np.int64)
    if prop.param("class") is not None or prop.param("threshold") is not None:   # issue 25
        from fairspec.backends.data.outputs import output_decisions

        return output_decisions(prop, ctx, model_input(ctx, prop.model, values, n, memo), memo)
    return decisions(ctx, prop.model, values, n, memo)

