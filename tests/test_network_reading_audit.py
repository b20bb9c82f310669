"""Networks read as the runtime computes them, or refused (session 34's audit of the readers): a
multi-label MLPClassifier (one independent logistic output per label) was read as a two-column
classifier whose 'column 1' was row 0 of its output layer -- the first label's logit whatever index."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from fairspec.models.network import UnsupportedModel
from fairspec.models.network_sklearn import from_sklearn


def _multilabel_mlp(k: int):
    from sklearn.neural_network import MLPClassifier

    rng = np.random.default_rng(3)
    X = rng.uniform(-3, 3, size=(300, 3))
    Y = np.c_[X[:, 1] + X[:, 2] > 0, X[:, 0] > 0, X[:, 1] > 0][:, :k].astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return MLPClassifier(hidden_layer_sizes=(6,), max_iter=300, random_state=0).fit(X, Y)


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("index", [None, 0, 1])
def test_a_multilabel_mlp_classifier_is_refused_not_read_as_one_label(k, index):
    pytest.importorskip("sklearn")
    from fairspec.models.readout import Readout

    est = _multilabel_mlp(k)
    assert est.out_activation_ == "logistic" and est.coefs_[-1].shape[1] == k
    with pytest.raises(UnsupportedModel, match="multi-label"):
        from_sklearn(est, index=index)
    with pytest.raises(UnsupportedModel, match="multi-label"):
        from_sklearn(est, readout=Readout(score="prob", index=1 if index is None else index, columns=k,
                                          task="binary", classes=(0, 1)))


def test_a_binary_mlp_classifier_is_still_read():
    pytest.importorskip("sklearn")
    from sklearn.neural_network import MLPClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] > X[:, 1]).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = MLPClassifier(hidden_layer_sizes=(5,), max_iter=300, random_state=0).fit(X, y)
    net = from_sklearn(est)
    Xt = rng.normal(size=(500, 3)) * 2
    assert np.array_equal(net.decide(Xt), est.predict(Xt))
