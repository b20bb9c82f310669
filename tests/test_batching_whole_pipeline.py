"""A tree model adds in a fixed order per row, so its predictions do not depend on the batch -- once its input
does not. A pipeline evaluated whole runs its own steps first; a step summing over columns (PCA) rounds a value
by batch (a review of session 29 measured 3,170 of 9,000 PCA values differing, up to 2.3e-13), which can move it
across a split threshold. Such a pipeline is batch dependent; steps computing each cell alone are not."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from fairspec.models.batching import rounds_by_batch


def _fit(pre):
    from sklearn.decomposition import PCA
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import MinMaxScaler, StandardScaler
    from sklearn.tree import DecisionTreeClassifier

    steps = {"pca": [("s", StandardScaler()), ("pca", PCA(n_components=2))],
             "scalers": [("s", StandardScaler()), ("m", MinMaxScaler())]}[pre]
    X = np.random.default_rng(0).normal(size=(40, 3))
    return Pipeline(steps + [("t", DecisionTreeClassifier(max_depth=2))]).fit(X, (X[:, 0] > 0).astype(int))


@pytest.mark.parametrize("pre, unfolded, expected", [("pca", True, True), ("scalers", True, False),
                                                     ("pca", False, False)])
def test_a_tree_behind_steps_that_sum_over_columns_is_batch_dependent(pre, unfolded, expected):
    model = SimpleNamespace(format="sklearn", raw=_fit(pre), unfolded=unfolded)
    assert rounds_by_batch(model) is expected
