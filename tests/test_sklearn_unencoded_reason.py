"""The solvers' reason for a scikit-learn estimator they do not encode names what they encode
(audit s19/h3): a ReLU MLPRegressor was refused as "not a ReLU MLP or logistic regression". Since
then a ReLU MLPRegressor is encoded (tests/test_sklearn_mlp_regressor.py); another estimator is
refused with the list (a LinearRegression, once refused here, is encoded too:
tests/test_sklearn_linear_regression.py)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")


def test_an_unencoded_estimator_is_told_what_the_encodings_take():
    from sklearn.svm import LinearSVR

    from fairspec.models.base import UnsupportedModel
    from fairspec.models.network_sklearn import from_sklearn

    X = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 1.0], [3.0, 0.0]])
    with pytest.raises(UnsupportedModel) as e:
        from_sklearn(LinearSVR().fit(X, X[:, 0]))
    msg = str(e.value)
    assert "LinearSVR" in msg and "not a ReLU" not in msg, msg
    assert "MLPClassifier" in msg and "MLPRegressor" in msg and "LogisticRegression" in msg, msg
    assert "LinearRegression" in msg and "Ridge" in msg and "Lasso" in msg, msg


def test_a_relu_mlp_regressor_is_encoded():
    from sklearn.neural_network import MLPRegressor

    from fairspec.models.network_sklearn import from_sklearn

    X = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 1.0], [3.0, 0.0]])
    est = MLPRegressor(hidden_layer_sizes=(3,), activation="relu", max_iter=20, random_state=0).fit(X, X[:, 0])
    np.testing.assert_allclose(from_sklearn(est).forward(X), est.predict(X), rtol=0, atol=1e-12)
