"""Tiny ONNX networks the tests (and bench/multiclass.py) build: one random Gemm layer, or a
Gemm/Relu stack from (W, b, relu) layers. onnx is imported inside, after the caller's importorskip."""

from __future__ import annotations

import numpy as np


def gemm_onnx(path, k: int, n_in: int, name: str, seed: int) -> None:
    """Save a one-Gemm network (``n_in`` inputs, ``k`` outputs named ``name``, random weights of
    ``seed``) to ``path``."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    W = rng.normal(size=(k, n_in)).astype(np.float32)
    b = rng.normal(size=k).astype(np.float32)
    g = helper.make_graph([helper.make_node("Gemm", ["x", "W", "b"], [name], transB=1)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", n_in])],
                          [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["N", k])],
                          [numpy_helper.from_array(W, "W"), numpy_helper.from_array(b, "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))


def mlp_model(layers, final: str | None = None, name: str = "y", batch: str | None = None):
    """The ONNX model of ``layers`` ((W, b, relu) each, W of shape (out, in)): Gemm, then Relu where
    asked; ``final`` (e.g. "Identity", "Sigmoid", "Softmax" on axis 1) adds a last node whose output
    is ``name``, else the last layer's output is the graph's. ``batch`` names the batch dimension."""
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits, cur = [], [], "x"
    for k, (W, b, relu) in enumerate(layers):
        inits += [numpy_helper.from_array(W.T.astype(np.float32), f"W{k}"),
                  numpy_helper.from_array(b.astype(np.float32), f"b{k}")]
        nodes.append(helper.make_node("Gemm", [cur, f"W{k}", f"b{k}"], [f"g{k}"]))
        cur = f"g{k}"
        if relu:
            nodes.append(helper.make_node("Relu", [cur], [f"r{k}"]))
            cur = f"r{k}"
    if final:
        nodes.append(helper.make_node(final, [cur], [name], **({"axis": 1} if final == "Softmax" else {})))
        cur = name
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, layers[0][0].shape[1]])],
                          [helper.make_tensor_value_info(cur, TensorProto.FLOAT, [batch, layers[-1][0].shape[0]])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def relu_net(path, seed: int, heavy: tuple = ()):
    """Save a 5-6-1 ReLU network (Gemm, Relu, Gemm to ``logit``; random weights of ``seed``, the
    first layer's columns ``heavy`` weighing 3 times more) to ``path``; its (W1, b1, W2, b2)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    W1 = rng.normal(size=(6, 5)).astype(np.float32)
    if heavy:
        W1[:, list(heavy)] *= 3
    b1 = rng.normal(size=6).astype(np.float32) * 0.5
    W2 = rng.normal(size=(1, 6)).astype(np.float32)
    b2 = np.array([rng.normal() * 0.5], dtype=np.float32)
    inits = [numpy_helper.from_array(W1, "W1"), numpy_helper.from_array(b1, "b1"),
             numpy_helper.from_array(W2, "W2"), numpy_helper.from_array(b2, "b2")]
    nodes = [helper.make_node("Gemm", ["x", "W1", "b1"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "W2", "b2"], ["logit"], transB=1)]
    g = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 5])],
                          [helper.make_tensor_value_info("logit", TensorProto.FLOAT, ["N", 1])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return W1, b1, W2, b2
