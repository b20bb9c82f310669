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


def _one_column_onnx(path, sigmoid: bool, name: str = "y"):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(5)
    W1, b1 = rng.normal(size=(4, 3)).astype(np.float32), rng.normal(size=4).astype(np.float32)
    w2, b2 = rng.normal(size=(1, 4)).astype(np.float32), np.float32([0.3])
    last = "z" if sigmoid else name
    nodes = [helper.make_node("Gemm", ["x", "W1", "b1"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "w2", "b2"], [last], transB=1)]
    if sigmoid:
        nodes.append(helper.make_node("Sigmoid", ["z"], [name]))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
                          [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["N", 1])],
                          [numpy_helper.from_array(a, n) for a, n in ((W1, "W1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))


@pytest.mark.parametrize("sigmoid, kind, name", [(False, "prob", "y"), (False, None, "prob"), (True, "logit", "y")])
def test_a_one_column_output_read_as_another_kind_than_its_final_is_refused(tmp_path, sigmoid, kind, name):
    """A linear output read as a probability is class 1 iff > 1/2 at the runtime, and a Sigmoid's output read
    as a logit iff > 0 (always): the network read them by the sign before its final (1,109 and 353 of 4,000
    random points decided otherwise); the MILP said 'no pair violates' a property the runtime violates."""
    pytest.importorskip("onnxruntime")
    from fairspec.models import load_model

    _one_column_onnx(tmp_path / "m.onnx", sigmoid, name)
    lm = load_model("onnx", tmp_path / "m.onnx", score_kind=kind)
    X = np.random.default_rng(0).normal(size=(4000, 3)) * 2
    assert lm.decide(X).tolist() != (lm.runtime_network().forward(X) > 0).astype(int).tolist()
    with pytest.raises(UnsupportedModel, match="read as a"):
        lm.piecewise_linear()


@pytest.mark.parametrize("sigmoid, kind", [(False, "logit"), (True, "prob"), (True, None), (False, None)])
def test_a_one_column_output_read_as_its_final_is_still_read(tmp_path, sigmoid, kind):
    pytest.importorskip("onnxruntime")
    from fairspec.models import load_model

    _one_column_onnx(tmp_path / "m.onnx", sigmoid)
    lm = load_model("onnx", tmp_path / "m.onnx", score_kind=kind)
    X = np.random.default_rng(0).normal(size=(4000, 3)) * 2
    assert np.array_equal(lm.piecewise_linear().decide(X), lm.decide(X))


def test_a_torch_linear_output_declared_prob_is_refused():
    torch = pytest.importorskip("torch")
    from fairspec.models.network_torch import from_torch
    from fairspec.models.readout import Readout

    torch.manual_seed(0)
    seq = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1)).eval()
    with pytest.raises(UnsupportedModel, match="read as a probability"):
        from_torch(seq, readout=Readout(score="prob", index=None, columns=1, task="binary", classes=None))
    assert from_torch(seq, readout=Readout(score="logit", index=None, columns=1, task="binary", classes=None))


def test_a_column_layout_matmul_by_a_vector_is_refused_not_an_internal_error(tmp_path):
    """``MatMul(v, r)`` of a 1-D weight on a [d, N] activation (a Transpose before) gives [N]: the reader
    took v as a matrix and failed with an IndexError ('internal error in the milp backend')."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    from fairspec.models.network import from_onnx

    W = np.float32([[1.0, 0.3], [0.5, -1.0]])
    v = np.float32([1.0, -0.5])
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0]), helper.make_node("MatMul", ["W", "xt"], ["h"]),
             helper.make_node("Relu", ["h"], ["r"]), helper.make_node("MatMul", ["v", "r"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N"])],
                          [numpy_helper.from_array(W, "W"), numpy_helper.from_array(v, "v")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    with pytest.raises(UnsupportedModel, match=r"MatMul with a weight of shape \(2,\)"):
        from_onnx(m)
