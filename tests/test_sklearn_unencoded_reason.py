"""The solvers' reason for a scikit-learn estimator they do not encode names what they encode
(audit s19/h3): a ReLU MLPRegressor was refused as "not a ReLU MLP or logistic regression"."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")


def test_a_relu_mlp_regressor_is_not_called_a_non_relu_network():
    from sklearn.neural_network import MLPRegressor

    from fairspec.models.base import UnsupportedModel
    from fairspec.models.network import from_sklearn

    X = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 1.0], [3.0, 0.0]])
    est = MLPRegressor(hidden_layer_sizes=(3,), activation="relu", max_iter=20, random_state=0).fit(X, X[:, 0])
    with pytest.raises(UnsupportedModel) as e:
        from_sklearn(est)
    msg = str(e.value)
    assert "MLPRegressor" in msg and "not a ReLU" not in msg, msg
    assert "MLPClassifier" in msg and "LogisticRegression" in msg, msg
