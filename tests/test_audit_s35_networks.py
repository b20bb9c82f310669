"""Session 35 audit (h4): how fairspec reads an ONNX graph or a torch module as a network (models/network.py,
network_torch.py), against the file's own runtime. Each test here failed before its fix."""

from __future__ import annotations

import numpy as np
import pytest

from fairspec.models.network import UnsupportedModel

pytest.importorskip("onnx")


def _model(nodes, inits, in_shape=("N", 3), opset=17):
    from onnx import TensorProto, helper, numpy_helper

    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(in_shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1])],
                          [numpy_helper.from_array(np.asarray(a), n) for n, a in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


_W = dict(W1=np.float32([[1, -1, 0], [-1, 1, 0]]), b1=np.float32([0.5, 0.5]), w2=np.float32([[1, -1]]),
          b2=np.float32([0]))


def _layers(first="x"):
    from onnx import helper

    return [helper.make_node("Gemm", [first, "W1", "b1"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["r"]),
            helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], transB=1)]


@pytest.mark.parametrize("ratio, refused", [(0.5, True), (0.0, False)])
def test_a_dropout_in_training_mode_is_refused_not_read_as_identity(ratio, refused):
    """Dropout(h, ratio, training_mode = true) drops units at random (onnx's reference evaluator does, and
    onnxruntime without its graph optimisations): it was read as the identity, and a pair property of a
    network whose output is random was 'holds (proved)'."""
    from onnx import helper

    from fairspec.models.network import from_onnx

    nodes = _layers()
    nodes[1:1] = [helper.make_node("Dropout", ["h", "ratio", "tm"], ["hd"])]
    nodes[2] = helper.make_node("Relu", ["hd"], ["r"])
    m = _model(nodes, dict(_W, ratio=np.float32(ratio), tm=np.array(True)))
    if refused:
        with pytest.raises(UnsupportedModel, match="training_mode"):
            from_onnx(m)
    else:
        assert from_onnx(m).n_inputs == 3
    off = _model(nodes, dict(_W, ratio=np.float32(0.5), tm=np.array(False)))
    assert from_onnx(off).n_inputs == 3


@pytest.mark.parametrize("first", ["Add", "Relu", "Sigmoid"])
def test_an_input_of_unfixed_width_before_any_weight_is_refused_not_an_internal_error(first):
    """An input of shape [N, ?] fed to Add (a scalar) or Relu before any weight fixes its width: a TypeError
    or ValueError ('internal error in the milp backend ... this is a fairspec bug')."""
    from onnx import helper

    from fairspec.models.network import from_onnx

    op = helper.make_node(first, ["x", "c"] if first == "Add" else ["x"], ["xa"])
    m = _model([op] + _layers("xa"), dict(_W, c=np.float32(0.0)), in_shape=("N", "k"))
    with pytest.raises(UnsupportedModel, match="width is not fixed"):
        from_onnx(m)
    assert from_onnx(_model(_layers(), _W, in_shape=("N", "k"))).n_inputs == 3   # a Gemm first fixes it


def test_a_gemm_whose_computed_operand_is_its_bias_is_refused_not_a_key_error():
    """Gemm(A, B, x) with constants A and B and the activation as C: a KeyError (internal error)."""
    from onnx import helper

    from fairspec.models.network import from_onnx

    g = helper.make_node("Gemm", ["A", "B", "x"], ["z"], transB=1)
    m = _model([g] + _layers("z"), dict(_W, A=np.float32([[0.0]]), B=np.float32([[0.0], [0], [0]])), in_shape=(1, 3))
    with pytest.raises(UnsupportedModel, match="its bias C"):
        from_onnx(m)
