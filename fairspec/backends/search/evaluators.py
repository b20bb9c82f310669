"""Batched evaluators: anything that maps a float64 (n, d) batch to float64 (n,) scores.

The search takes a plain callable. These helpers build one from what the rest of
the project has:

* ``as_evaluator(obj)``: a callable, a ``LoadedModel`` (``.score``), or a PLNet
  (``.forward``; column 0 of its logits);
* ``onnx_evaluator(path)``: the logits of a Gemm/ReLU ONNX network: the loaded
  model's piecewise-linear network (the same net the MILP encodes), else
  onnxruntime itself;
* ``ort_evaluator(path, output)``: onnxruntime, the independent replay path.

``chunked(f, size)`` splits big batches so memory stays bounded.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

Evaluator = Callable[[np.ndarray], np.ndarray]


def chunked(f: Evaluator, size: int = 65536) -> Evaluator:
    def g(X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.shape[0] <= size:
            return np.asarray(f(X), dtype=np.float64).reshape(-1)
        return np.concatenate([np.asarray(f(X[i:i + size]), dtype=np.float64).reshape(-1)
                               for i in range(0, X.shape[0], size)])
    return g


def as_evaluator(obj) -> Evaluator:
    """A callable (n, d) -> (n,) from a callable, a LoadedModel, or a PLNet."""
    if hasattr(obj, "score") and callable(obj.score):
        return lambda X: np.asarray(obj.score(X), dtype=np.float64).reshape(-1)
    if hasattr(obj, "forward") and callable(obj.forward):
        def f(X):
            out = np.asarray(obj.forward(np.asarray(X, dtype=np.float64)), dtype=np.float64)
            return out[:, 0] if out.ndim == 2 else out.reshape(-1)
        return f
    if callable(obj):
        return lambda X: np.asarray(obj(X), dtype=np.float64).reshape(-1)
    raise TypeError(f"cannot evaluate {type(obj).__name__}: give a callable, a LoadedModel or a PLNet")


class NumpyMLP:
    """A Gemm/MatMul/Add/Relu chain read from an ONNX graph, evaluated with numpy.

    ``forward(X)`` returns the pre-activation output of the last affine layer (the
    logits), shape (n, out). Raises ValueError on any other operator."""

    def __init__(self, layers, dtype=np.float32):
        self.layers = [(W.astype(dtype), b.astype(dtype), relu) for W, b, relu in layers]
        self.dtype = dtype

    @staticmethod
    def from_plnet(net, dtype=np.float32) -> "NumpyMLP":
        """The chosen logit of a PLNet (fairspec.models.network) with contiguous weights."""
        layers = [(np.ascontiguousarray(l.W.T), l.b, l.relu) for l in net.layers]
        W, b, r = layers[-1]
        i = getattr(net, "output_index", 0)
        layers[-1] = (np.ascontiguousarray(W[:, i:i + 1]), b[i:i + 1], r)
        return NumpyMLP(layers, dtype)

    def forward(self, X: np.ndarray) -> np.ndarray:
        h = np.asarray(X, dtype=self.dtype)
        for W, b, relu in self.layers:
            h = h @ W + b
            if relu:
                np.maximum(h, 0, out=h)
        return h.astype(np.float64)


def plnet_evaluator(net, dtype=np.float32) -> Evaluator:
    """A PLNet's logit, evaluated with contiguous weights in ``dtype`` (float32: about 5x
    faster than ``PLNet.forward`` in float64, and the arithmetic of onnxruntime)."""
    if dtype is None:
        return chunked(as_evaluator(net))
    return chunked(as_evaluator(NumpyMLP.from_plnet(net, dtype)))


def onnx_evaluator(path, prefer: str = "auto", dtype=np.float32, output: str | int = "logit") -> Evaluator:
    """Logits (graph output ``output``) of a Gemm/ReLU ONNX network as a fast batched evaluator.

    prefer: "auto" (the model's piecewise-linear network -- ``LoadedModel.piecewise_linear``,
    the same network the MILP encodes -- else onnxruntime), "plnet", "ort".  dtype: the
    arithmetic of the network (None = PLNet.forward's float64)."""
    if prefer in ("auto", "plnet"):
        from fairspec.models import ModelLoadError, load_model
        from fairspec.verdict import Unsupported

        try:
            return plnet_evaluator(load_model("onnx", path, output=output).piecewise_linear(), dtype)
        except (Unsupported, ModelLoadError):
            if prefer == "plnet":
                raise
    return chunked(ort_evaluator(path, output))


def ort_evaluator(path, output: str | int = 0) -> Evaluator:
    """onnxruntime on the ONNX file: output by name or position, column 0."""
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    dtype = {"tensor(double)": np.float64, "tensor(float16)": np.float16}.get(inp.type, np.float32)
    outs = [o.name for o in sess.get_outputs()]
    name = output if isinstance(output, str) else outs[output]

    def f(X: np.ndarray) -> np.ndarray:
        out = sess.run([name], {inp.name: np.asarray(X, dtype=dtype)})[0]
        out = np.asarray(out, dtype=np.float64)
        return out[:, 0] if out.ndim == 2 else out.reshape(-1)

    return f
