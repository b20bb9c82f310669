"""Piecewise-linear networks: the form every MILP / SMT encoding works on.

A :class:`PLNet` is a chain of affine layers, each optionally followed by a
ReLU (``h = max(W x + b, 0)``, the "computation equations" of HyFair Sec. III,
after Fischetti & Jo), and a final squashing function that is *not* encoded
(``"none"``, ``"sigmoid"`` or ``"softmax"``). The encodings reason about the
**logit** (the pre-squash score of the chosen output); the decision is
``logit > 0`` (class 1 iff the logit is positive, as in Fairify), which is the
same as ``sigmoid(logit) > 1/2``.

Converters
----------
* :func:`from_onnx` — Gemm (transA/transB/alpha/beta), MatMul, Add/Sub with a constant, Mul/Div by
  a constant, Relu, Identity, Dropout, Flatten, Transpose (2-D), and a final Sigmoid or Softmax.
  Weights are read with ``onnx.numpy_helper`` and kept in float64. Only ai.onnx's own operators are read
  (a node of another domain, or one a model-local function defines, is refused whatever its name), and a
  Dropout with ``training_mode`` true is refused (it masks at random).
* ``fairspec.models.network_torch.from_torch`` — ``nn.Sequential`` / ``nn.Linear`` / ``nn.ReLU`` /
  ``Identity`` / ``Flatten`` / ``Dropout`` and a final ``Sigmoid``/``Softmax``; TorchScript modules by
  walking ``named_children``. A module whose children are not applied in order is caught by comparing
  the converted net with the module (its declared output) on random inputs.
* ``fairspec.models.network_sklearn.from_sklearn`` — ``MLPClassifier``, ``MLPRegressor`` (relu or
  identity hidden layers) and ``LogisticRegression``.

A binary softmax over two logits ``[a, b]`` is rewritten exactly as ``sigmoid(b - a)`` (one output
logit), so every binary classifier ends up with a single logit whose sign is the decision. Anything
else raises :class:`UnsupportedModel` naming the operator and the node.

Only numpy is imported at module level; onnx / torch / sklearn are imported
inside the converter that needs them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from fairspec.models.peek_onnx import PL_ONNX_OPS
from fairspec.models.base import UnsupportedModel  # noqa: F401 - raised here, imported from here by many

__all__ = ["Layer", "PLNet", "UnsupportedModel", "from_onnx", "sigmoid", "random_net"]

FINALS = ("none", "sigmoid", "softmax")


def sigmoid(z: np.ndarray) -> np.ndarray:
    """Numerically stable logistic function."""
    z = np.asarray(z, dtype=np.float64)
    out = np.empty_like(z)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
    ez = np.exp(z[~pos])
    out[~pos] = ez / (1.0 + ez)
    return out


@dataclass(frozen=True, eq=False)
class Layer:
    """One affine map ``z = W h + b`` (W: float64 [out, in]), then ``max(z, 0)`` if ``relu``."""

    W: np.ndarray
    b: np.ndarray
    relu: bool

    def __post_init__(self):
        W = np.array(self.W, dtype=np.float64, copy=True)
        b = np.array(self.b, dtype=np.float64, copy=True).reshape(-1)
        if W.ndim != 2 or b.shape != (W.shape[0],):
            raise ValueError(f"layer shapes do not fit: W {W.shape}, b {b.shape}")
        W.setflags(write=False)
        b.setflags(write=False)
        object.__setattr__(self, "W", W)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "relu", bool(self.relu))

    @property
    def n_in(self) -> int:
        return self.W.shape[1]

    @property
    def n_out(self) -> int:
        return self.W.shape[0]


@dataclass(frozen=True, eq=False)
class PLNet:
    """A feed-forward ReLU network (piecewise-linear) with one chosen output logit.

    Attributes:
        layers:       the affine(+ReLU) layers, first to last.
        output_index: the row of the last layer that is the logit.
        final:        ``"none"`` | ``"sigmoid"`` | ``"softmax"``: what turns the last layer into
                      probabilities (never encoded in a solver; ``"softmax"`` only remains for
                      more than two classes).
    """

    layers: tuple[Layer, ...]
    output_index: int = 0
    final: str = "none"
    source: str = field(default="", compare=False)

    def __post_init__(self):
        layers = tuple(self.layers)
        if not layers:
            raise ValueError("a network needs at least one layer")
        for a, b in zip(layers, layers[1:]):
            if a.n_out != b.n_in:
                raise ValueError(f"layer widths do not chain: {a.n_out} outputs into {b.n_in} inputs")
        if self.final not in FINALS:
            raise ValueError(f"final must be one of {FINALS}, not {self.final!r}")
        if not 0 <= self.output_index < layers[-1].n_out:
            raise ValueError(f"output_index {self.output_index} out of range for {layers[-1].n_out} outputs")
        object.__setattr__(self, "layers", layers)

    # ---- shape -----------------------------------------------------------------------------
    @property
    def n_inputs(self) -> int:
        return self.layers[0].n_in

    @property
    def widths(self) -> tuple[int, ...]:
        return tuple(l.n_out for l in self.layers)

    @property
    def n_relus(self) -> int:
        return sum(l.n_out for l in self.layers if l.relu)

    def describe(self) -> str:
        arch = "-".join(str(w) for w in self.widths)
        return f"PLNet {self.n_inputs}->{arch} (output {self.output_index}, final {self.final})"

    # ---- evaluation ------------------------------------------------------------------------
    def forward_all(self, X, dtype=np.float64) -> np.ndarray:
        """All outputs of the last layer (before the final squash): (n, n_out).

        ``dtype=np.float32`` evaluates in single precision, a proxy for the float32 model
        files (used to tell robust witnesses from ones within rounding of the boundary)."""
        H = np.asarray(X, dtype=dtype)
        if H.ndim == 1:
            H = H[None, :]
        if H.shape[1] != self.n_inputs:
            raise ValueError(f"network expects {self.n_inputs} inputs, got {H.shape[1]}")
        for layer in self.layers:
            if dtype == np.float64:
                H = H @ layer.W.T + layer.b
            else:
                H = H @ layer.W.T.astype(dtype) + layer.b.astype(dtype)
            if layer.relu:
                H = np.maximum(H, 0.0)
        return H

    def forward(self, X, dtype=np.float64) -> np.ndarray:
        """The chosen logit for a batch: (n,), float64 unless ``dtype`` says otherwise."""
        return self.forward_all(X, dtype)[:, self.output_index].astype(np.float64)

    def prob(self, X) -> np.ndarray:
        """The chosen output's probability: sigmoid of the logit, or the softmax column."""
        if self.final == "softmax":
            Z = self.forward_all(X)
            Z = Z - Z.max(axis=1, keepdims=True)
            E = np.exp(Z)
            return E[:, self.output_index] / E.sum(axis=1)
        if self.final == "none":
            return sigmoid(self.forward(X))
        return sigmoid(self.forward(X))

    def decide(self, X) -> np.ndarray:
        """Class 1 iff the logit is > 0 (int64 (n,)); for a multi-class softmax: argmax == output."""
        if self.final == "softmax":
            return (self.forward_all(X).argmax(axis=1) == self.output_index).astype(np.int64)
        return (self.forward(X) > 0).astype(np.int64)

    # ---- rewriting ---------------------------------------------------------------------------
    def single_output(self) -> "PLNet":
        """The same net with the last layer cut to the chosen row (a 2-class softmax is already one)."""
        if self.final == "softmax":
            raise UnsupportedModel("Softmax", "final", "a softmax over more than two classes has no single logit")
        last = self.layers[-1]
        i = self.output_index
        new_last = Layer(last.W[i:i + 1], last.b[i:i + 1], last.relu)
        return PLNet(self.layers[:-1] + (new_last,), 0, self.final, self.source)

    def __getstate__(self):
        return {"layers": [(l.W, l.b, l.relu) for l in self.layers], "output_index": self.output_index,
                "final": self.final, "source": self.source}

    def __setstate__(self, state):
        object.__setattr__(self, "layers", tuple(Layer(W, b, r) for W, b, r in state["layers"]))
        object.__setattr__(self, "output_index", state["output_index"])
        object.__setattr__(self, "final", state["final"])
        object.__setattr__(self, "source", state["source"])


# ---------------------------------------------------------------------------------------------
# Building a chain of affine maps and ReLUs, then folding it into layers
# ---------------------------------------------------------------------------------------------

def _power_of_two(v) -> bool:
    """Every entry a (signed) power of two: scaling by it is exact in floating point."""
    v = np.abs(np.asarray(v, dtype=np.float64))
    if not np.all(np.isfinite(v)) or np.any(v == 0):
        return False
    m, _ = np.frexp(v)
    return bool(np.all(m == 0.5))


#: the roundings a layer of the runtime may be made of, for its folded weights to be its own numbers
#: (what certify.network.runtime_error_bound bounds: fl(W h + b), any order of its n + 1 terms): one
#: matrix product, its bias, or both in that order
OWN_LAYER = ((), ("bias",), ("matmul",), ("matmul", "bias"))


class _Chain:
    """Accumulates ops: affine maps compose; a ReLU closes the current layer. ``foreign``: why a layer
    composed from several roundings of the runtime (two matrix products, a bias before the product, a
    scale that is not a power of two) is not the runtime's own numbers ("" when every layer is).
    ``own``: the same chain cut at every rounding instead (:meth:`runtime_chain`): one layer per
    product (with its bias), identity between where no ReLU, the numbers the runtime rounds with.
    ``cut_scales`` (a float16 graph): a power-of-two scale is a layer of ``own`` too, not folded into its
    neighbour as exact: in float16 it rounds where its result is subnormal and its operand may overflow
    where the scaled value does not, so the scale gets its own layer bound (the subnormal error) and its
    input and output their range checks (certify.half)."""

    def __init__(self, n_in: int | None, cut_scales: bool = False):
        self.layers: list[Layer] = []
        self.W: np.ndarray | None = None if n_in is None else np.eye(n_in)
        self.b: np.ndarray | None = None if n_in is None else np.zeros(n_in)
        self.n_in = n_in
        self.relu_pending_ok = False
        self.ops: list[str] = []
        self.foreign = ""
        self.own: list[Layer] = []
        self.own_seg: tuple | None = None      # (W, b, ops) of the runtime layer being built
        self.own_foreign = ""
        self.cut_scales = cut_scales

    @staticmethod
    def _kind(W: np.ndarray, b: np.ndarray) -> str:
        """How the runtime computes ``W h + b``: "exact" (a permutation-free scale by powers of two),
        "bias" (+- h plus a vector), "scale" (a diagonal scale that rounds), "matmul" (a product)."""
        if W.shape[0] == W.shape[1] and np.array_equal(W, np.diag(np.diag(W))):
            d = np.diag(W)
            if np.all(np.abs(d) == 1):
                return "bias" if np.any(b) else "exact"
            if _power_of_two(d) and not np.any(b):
                return "exact"
            return "scale"
        return "matmul"

    def _close(self):
        ops = tuple(o for o in self.ops if o != "exact")
        if ops not in OWN_LAYER and not self.foreign:
            self.foreign = (f"layer {len(self.layers) + 1} is computed in several roundings ({' then '.join(ops)}): "
                            f"its folded weights are not the runtime's own numbers")
        self.ops = []

    def _ensure(self, width: int):
        if self.W is None:
            self.W = np.eye(width)
            self.b = np.zeros(width)
            self.n_in = width

    @property
    def width(self) -> int | None:
        return None if self.W is None else self.W.shape[0]

    def affine(self, W: np.ndarray, b: np.ndarray, kind: str | None = None):
        """Apply y = W h + b after the current state (``kind``: how the runtime computes it, see
        :meth:`_kind`; by default read off W and b)."""
        W = np.asarray(W, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64).reshape(-1)
        self._ensure(W.shape[1])
        if W.shape[1] != self.W.shape[0]:
            raise ValueError(f"affine map of input width {W.shape[1]} after width {self.W.shape[0]}")
        kind = kind or self._kind(W, b)
        self.ops.append(kind)
        if kind == "exact" and self.cut_scales and not np.all(np.abs(np.diag(W)) == 1):
            self._own_affine(W, b, "scale")          # its own layer of the runtime chain
        else:
            self._own_affine(W, b, kind)
        self.b = W @ self.b + b
        self.W = W @ self.W
        self.relu_pending_ok = True

    def scaled_product(self, W: np.ndarray, alpha: float, bias: np.ndarray, beta: float):
        """A Gemm's ``alpha (W h) + bias`` (``bias`` beta C) with power-of-two alpha and beta: one layer
        folded; with ``cut_scales`` and a scale other than 1, two in the runtime chain: the product,
        then the scale with the bias."""
        if not self.cut_scales or alpha == 1.0 and (beta == 1.0 or not np.any(bias)):
            return self.affine(alpha * W, bias, "matmul")
        self._ensure(W.shape[1])
        if W.shape[1] != self.W.shape[0]:
            raise ValueError(f"affine map of input width {W.shape[1]} after width {self.W.shape[0]}")
        self.ops.append("matmul")
        self._own_affine(W, np.zeros(W.shape[0]), "matmul")
        self._own_affine(alpha * np.eye(W.shape[0]), bias, "scale")
        self.b = alpha * (W @ self.b) + bias
        self.W = alpha * W @ self.W
        self.relu_pending_ok = True

    def relu(self):
        if self.W is None:
            raise ValueError("ReLU on the raw input")
        if not self.relu_pending_ok and self.layers and self.layers[-1].relu and _is_identity(self.W, self.b):
            return                                        # ReLU(ReLU(x)) == ReLU(x)
        self._close()
        self.layers.append(Layer(self.W, self.b, True))
        self._own_close(True)
        n = self.W.shape[0]
        self.W, self.b = np.eye(n), np.zeros(n)
        self.relu_pending_ok = False

    def finish(self) -> list[Layer]:
        if self.W is None:
            raise ValueError("empty network")
        self._close()
        if not self.layers or not _is_identity(self.W, self.b):
            self.layers.append(Layer(self.W, self.b, False))
        if not self.own or self.own_seg is not None and not _is_identity(*self.own_seg[:2]):
            self._own_close(False)
        return self.layers

    # ---- the runtime's own layers, one rounding each ------------------------------------------
    def _own_affine(self, W, b, kind):
        """Add ``y = W h + b`` to the runtime layer being built while the layer stays one rounding of
        the runtime (:data:`OWN_LAYER`; a rounding diagonal scale counts as a product: ``fl(d h + b)`` is
        one order of the sum), else close it (no ReLU) and start the next with it."""
        if kind == "matmul+scale" and not self.own_foreign:      # alpha (A B) + beta C: two roundings
            self.own_foreign = (f"layer {len(self.own) + 1} is computed in several roundings (a product, then "
                                f"a scale that is not a power of two) in one operator")
        op = "matmul" if kind in ("scale", "matmul+scale") else kind
        if self.own_seg is None:
            self.own_seg = (np.eye(W.shape[1]), np.zeros(W.shape[1]), ())
        oW, ob, ops = self.own_seg
        if tuple(o for o in ops + (op,) if o != "exact") not in OWN_LAYER:
            self._own_close(False)
            oW, ob, ops = np.eye(W.shape[1]), np.zeros(W.shape[1]), ()
        self.own_seg = (W @ oW, W @ ob + b, ops + (op,))

    def _own_close(self, relu: bool):
        oW, ob, _ = self.own_seg if self.own_seg is not None else (np.eye(self.width), np.zeros(self.width), ())
        self.own.append(Layer(oW, ob, relu))
        self.own_seg = None

    def runtime_chain(self, final: str, source: str, op: str) -> PLNet:
        """After :meth:`finish`: the runtime's own layers, every output column (``readout="chain"``)."""
        if self.own_foreign:
            raise UnsupportedModel(op, "layers", self.own_foreign)
        return PLNet(tuple(self.own), 0, final, source)


def _is_identity(W, b) -> bool:
    return W.shape[0] == W.shape[1] and np.array_equal(W, np.eye(W.shape[0])) and not np.any(b)


def _binary_softmax_to_sigmoid(layers: list[Layer], index: int) -> list[Layer]:
    """softmax([a, b])[1] == sigmoid(b - a): replace the last two rows by their difference."""
    last = layers[-1]
    if last.relu:
        raise ValueError("relu before softmax is handled by an identity layer")
    other = 1 - index
    W = (last.W[index] - last.W[other])[None, :]
    b = np.array([last.b[index] - last.b[other]])
    return layers[:-1] + [Layer(W, b, False)]


def _make_net(layers: list[Layer], index: int | None, final: str, source: str, where: str) -> PLNet:
    n_out = layers[-1].n_out
    if index is None:
        if n_out == 1:
            index = 0
        elif final == "softmax" and n_out == 2:
            index = 1
        else:
            raise UnsupportedModel("Output", where, f"the network has {n_out} outputs; choose one with index=")
    if index < 0:
        index += n_out
    if not 0 <= index < n_out:
        raise UnsupportedModel("Output", where, f"output index {index} is out of range for {n_out} outputs")
    if final == "softmax" and n_out == 2:
        if layers[-1].relu:
            layers = layers + [Layer(np.eye(2), np.zeros(2), False)]
        layers = _binary_softmax_to_sigmoid(layers, index)
        return PLNet(tuple(layers), 0, "sigmoid", source)
    if final == "softmax" and n_out == 1:
        raise UnsupportedModel("Softmax", where, "a softmax over a single output is constant 1")
    return PLNet(tuple(layers), index, final, source)


def apply_readout(net: PLNet, readout) -> PLNet:
    """The network of a model's decision as its Readout (fairspec.models.readout) defines it:
    one output ``g``, class 1 iff ``g > 0``, read from all of ``net``'s outputs.

    * one output: ``g`` is it (the logit; before a final sigmoid, ``sigmoid(g) > 1/2``);
    * two outputs, logits or a softmax over two: ``g = z[i] - z[1-i]`` (argmax, and the
      log-odds a softmax gives);
    * two independent sigmoids read as probabilities: refused (their argmax ties where both round alike).
    Anything else (argmax over more than two classes, a linear output read as a
    probability) raises :class:`UnsupportedModel`.
    """
    layers = list(net.layers)
    n_out = layers[-1].n_out
    i = readout.index
    where = "output"
    if n_out == 1:
        if i not in (None, 0):
            raise UnsupportedModel("Output", where, f"the network has one output, so it has no column {i}")
        if net.final == "softmax":
            raise UnsupportedModel("Softmax", where, "a softmax over a single output is constant 1")
        # the decision is the runtime's output against the readout's threshold, the network's one
        # against 0 before its final: they agree only when the output's kind is the final's
        if readout.score == "prob" and net.final == "none":
            raise UnsupportedModel("Output", where, "the output has no final Sigmoid but is read as a probability "
                                                    "(class 1 iff it is > 1/2), which is not the sign of the "
                                                    "network's output; declare score = logit if it is one")
        if readout.score == "value" and net.final == "sigmoid":
            raise UnsupportedModel("Sigmoid", where, "the output is a final Sigmoid's, read as a value: value(m(x)) "
                                                      "is the sigmoid of the last layer, which is not piecewise-linear")
        if readout.score == "logit" and net.final == "sigmoid":
            raise UnsupportedModel("Output", where, "the output is a final Sigmoid's probability but is read as a "
                                                    "logit (class 1 iff it is > 0, which a probability nearly "
                                                    "always is); declare score = prob")
        return PLNet(tuple(layers), 0, net.final, net.source)
    if i is None:
        raise UnsupportedModel("Output", where, f"the network has {n_out} outputs; say which is the positive "
                                                f"class with index = 1 (or 0) on the model")
    if not 0 <= i < n_out:
        raise UnsupportedModel("Output", where, f"output index {i} is out of range for {n_out} outputs")
    if n_out == 2 and (net.final == "softmax" or (net.final == "none" and readout.score == "logit")):
        if layers[-1].relu:
            layers = layers + [Layer(np.eye(2), np.zeros(2), False)]
        return PLNet(tuple(_binary_softmax_to_sigmoid(layers, i)), 0,
                     "sigmoid" if net.final == "softmax" else "none", net.source)
    if n_out == 2 and net.final == "sigmoid" and readout.score == "prob":
        # two independent sigmoids: the decision is their argmax (column 0 at a tie, readout.argmax_decision), which
        # neither z[i] > 0 nor z[i] - z[1-i] > 0 is where both round to one float32 probability (both saturate at 1)
        raise UnsupportedModel("Sigmoid", where, "two independent sigmoids read as probabilities decide by their "
                                                 "argmax (column 0 where the two floats tie, e.g. both 1.0), which is "
                                                 "no sign of one piecewise-linear output; small domains and data are "
                                                 "decided on the runtime (or read one column: a one-output model)")
    if n_out > 2:
        raise UnsupportedModel("Output", where, f"a binary classifier has one logit, but the decision 'column {i} "
                                                f"is the largest of {n_out}' (argmax over {n_out} classes) has none")
    raise UnsupportedModel("Output", where, f"reading {n_out} outputs after a final {net.final} as "
                                            f"{readout.score}s is not a piecewise-linear decision")


# ---------------------------------------------------------------------------------------------
# ONNX
# ---------------------------------------------------------------------------------------------

def from_onnx(path_or_model, output: str | int | None = None, index: int | None = None, readout=None) -> PLNet:
    """Read an ONNX Gemm/MatMul/Add/Relu chain as a :class:`PLNet`.

    output: the graph output (name or position; default the first). The chain from the
            single graph input to that output must be a straight line of supported ops.
    index:  the column of a 2-D output (default 0 for one column; for a two-class
            softmax the column of the class whose probability is wanted, default 1).
    readout: a loaded model's Readout (fairspec.models.readout), which then decides the
            output instead of ``index`` (see :func:`apply_readout`).
            ``readout="raw"``: the runtime's own layers with every output column (no readout applied;
            the runtime error bound of fairspec.certify.network reads them); ``readout="chain"``: the
            same cut at every rounding (identity between two products with no ReLU between);
            ``readout="folded"``: every column, products with no ReLU between folded into one layer
            even where the runtime rounds each (the solvers' network; certify compares it with the chain).
    """
    import onnx
    from onnx import numpy_helper

    if isinstance(path_or_model, onnx.ModelProto):
        model = path_or_model
        source = "onnx model"
    else:
        model = onnx.load(str(path_or_model))
        source = str(path_or_model)
    graph = model.graph

    consts: dict[str, np.ndarray] = {t.name: numpy_helper.to_array(t).astype(np.float64)
                                     for t in graph.initializer}
    producers: dict[str, Any] = {}
    local = {(f.domain, f.name) for f in model.functions}      # model-local functions: their own bodies
    for node in graph.node:
        if node.op_type == "Constant" and not _foreign_node(node, local):
            for a in node.attribute:
                if a.name == "value":
                    consts[node.output[0]] = numpy_helper.to_array(a.t).astype(np.float64)
                elif a.name in ("value_float", "value_floats", "value_int", "value_ints"):
                    consts[node.output[0]] = np.asarray(onnx.helper.get_attribute_value(a), dtype=np.float64)
                else:
                    raise UnsupportedModel("Constant", node.name or node.output[0],
                                           f"constant attribute {a.name!r} is not numeric")
            continue
        for o in node.output:
            producers[o] = node
    inputs = [i.name for i in graph.input if i.name not in consts]
    if len(inputs) != 1:
        raise UnsupportedModel("Graph", graph.name or "graph",
                               f"the graph has {len(inputs)} non-constant inputs; one [N, width] input is needed")
    x_name = inputs[0]
    n_in = _onnx_input_width(graph.input, x_name)

    outs = [o.name for o in graph.output]
    if output is None:
        out_name = outs[0]
    elif isinstance(output, int) and not isinstance(output, bool):
        out_name = outs[output]
    else:
        if output not in outs:
            raise UnsupportedModel("Output", str(output), f"the graph has no output {output!r}; it has {outs}")
        out_name = output

    # Walk back from the output to the input along the non-constant operand.
    chain = []
    name = out_name
    seen = set()
    while name != x_name:
        if name in seen:
            raise UnsupportedModel("Graph", name, "the graph has a cycle")
        seen.add(name)
        node = producers.get(name)
        if node is None:
            raise UnsupportedModel("Graph", name, f"tensor {name!r} is neither produced by a node nor the input")
        dyn = [i for i in node.input if i and i not in consts]
        if len(dyn) != 1:
            raise UnsupportedModel(node.op_type, node.name or node.output[0],
                                   f"{node.op_type} combines {len(dyn)} computed tensors; only chains of "
                                   f"single-input layers are supported")
        chain.append(node)
        name = dyn[0]
    chain.reverse()

    x_type = next((i.type.tensor_type.elem_type for i in graph.input if i.name == x_name), 0)
    ch = _Chain(n_in, cut_scales=x_type == onnx.TensorProto.FLOAT16)
    rows = True             # activation layout: rows [N, d] (True) or columns [d, N]
    final = "none"
    for pos, node in enumerate(chain):
        nname = node.name or node.output[0]
        op = node.op_type
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        is_last = pos == len(chain) - 1
        if final != "none":
            raise UnsupportedModel(op, nname, f"{op} after the final {final.capitalize()} is not supported")
        if op in PL_ONNX_OPS and (why := _foreign_node(node, local)):    # a name ONNX's own ops have
            raise UnsupportedModel(op, nname, why)
        if op not in PL_ONNX_OPS:      # the same list lint checks (fairspec.models.peek)
            raise UnsupportedModel(op, nname, f"operator {op} is not piecewise-linear or not supported "
                                              f"(supported: Gemm, MatMul, Add, Sub, Mul, Div, Relu, Identity, "
                                              f"Dropout, Flatten, Transpose, and a final Sigmoid or Softmax)")
        if op == "Dropout" and (why := _dropout_trains(node, consts, attrs)):
            raise UnsupportedModel(op, nname, why)
        if op in ("Identity", "Dropout"):
            continue
        if op == "Flatten":
            axis = attrs.get("axis", 1)
            if axis not in (1, -1) and not (axis == 0 and not rows):
                raise UnsupportedModel(op, nname, f"Flatten with axis={axis} changes the batch layout")
            continue
        if op == "Transpose":
            perm = list(attrs.get("perm", [1, 0]))
            if perm != [1, 0]:
                raise UnsupportedModel(op, nname, f"Transpose with perm={perm} is not a 2-D transpose")
            rows = not rows
            continue
        if ch.width is None and op not in ("Flatten", "Transpose", "Identity", "Dropout", "Gemm", "MatMul"):
            raise UnsupportedModel(op, nname, "the graph input's width is not fixed in the file (shape [N, ?]) "
                                              "and no weight before this operator fixes it; export the model "
                                              "with a fixed number of columns")
        if op == "Relu":
            ch.relu()
            continue
        if op == "Sigmoid":
            if not is_last:
                raise UnsupportedModel(op, nname, "Sigmoid is only supported as the final operation "
                                                  "(a hidden sigmoid is not piecewise-linear)")
            final = "sigmoid"
            continue
        if op == "Softmax":
            axis = attrs.get("axis", -1)
            if not is_last:
                raise UnsupportedModel(op, nname, "Softmax is only supported as the final operation")
            if (rows and axis not in (1, -1)) or (not rows and axis not in (0, -2)):
                raise UnsupportedModel(op, nname, f"Softmax over axis {axis} is not over the classes")
            final = "softmax"
            continue
        if op == "Gemm":
            alpha = float(attrs.get("alpha", 1.0))
            beta = float(attrs.get("beta", 1.0))
            tA, tB = int(attrs.get("transA", 0)), int(attrs.get("transB", 0))
            A, B = node.input[0], node.input[1]
            C = node.input[2] if len(node.input) > 2 and node.input[2] else None
            width = ch.width
            if A in consts and B in consts:
                raise UnsupportedModel(op, nname, "Gemm whose computed operand is its bias C (alpha A B + beta C "
                                                  "with A and B constants) is not a layer fairspec reads")
            if A not in consts:       # activation is A: A' = act (rows) → Y = act @ B' (rows)
                act_rows = rows != bool(tA)          # A' in rows layout?
                if not act_rows:
                    raise UnsupportedModel(op, nname, "Gemm with the activation transposed against its layout")
                Bm = consts[B].T if tB else consts[B]
                W = Bm.T                                  # [out, in], times alpha
                bias = _bias(consts, C, beta, W.shape[0], rows_out=True, op=op, nname=nname)
                rows = True
            else:                     # activation is B: Y = A' @ B' (columns layout)
                act_cols = (not rows) != bool(tB)
                if not act_cols:
                    raise UnsupportedModel(op, nname, "Gemm with the activation transposed against its layout")
                Am = consts[A].T if tA else consts[A]
                W = Am
                bias = _bias(consts, C, beta, W.shape[0], rows_out=False, op=op, nname=nname)
                rows = False
            if width is not None and W.shape[1] != width:
                raise UnsupportedModel(op, nname, f"weight of input width {W.shape[1]} after width {width}")
            # alpha (A B) + beta C: a scale that is not a power of two rounds apart from the product
            exact = _power_of_two([alpha]) and (C is None or beta == 0 or _power_of_two([beta]))
            if exact:
                ch.scaled_product(W, alpha, bias, beta)
            else:
                ch.affine(alpha * W, bias, "matmul+scale")
            continue
        if op == "MatMul":
            A, B = node.input[0], node.input[1]
            if A not in consts:
                if not rows:
                    raise UnsupportedModel(op, nname, "MatMul on a transposed activation")
                M = consts[B]
                if M.ndim != 2:
                    raise UnsupportedModel(op, nname, f"MatMul with a weight of shape {M.shape}")
                ch.affine(M.T, np.zeros(M.shape[1]), "matmul")
            else:
                if rows:
                    raise UnsupportedModel(op, nname, "MatMul with the weight on the left of a row-layout batch")
                M = consts[A]
                if M.ndim != 2:
                    raise UnsupportedModel(op, nname, f"MatMul with a weight of shape {M.shape}")
                ch.affine(M, np.zeros(M.shape[0]), "matmul")
            continue
        if op in ("Add", "Sub", "Mul", "Div"):
            cname = node.input[0] if node.input[0] in consts else node.input[1]
            const_first = node.input[0] in consts
            c = consts[cname]
            width = ch.width if ch.width is not None else n_in
            vec = _broadcast_vec(c, width, rows, op, nname)
            if op == "Add":
                ch.affine(np.eye(width), vec)
            elif op == "Sub":
                if const_first:
                    ch.affine(-np.eye(width), vec)
                else:
                    ch.affine(np.eye(width), -vec)
            elif op == "Mul":
                ch.affine(np.diag(vec), np.zeros(width))
            else:
                if const_first:
                    raise UnsupportedModel(op, nname, "division by the activation is not linear")
                if np.any(vec == 0):
                    raise UnsupportedModel(op, nname, "division by zero")
                ch.affine(np.diag(1.0 / vec), np.zeros(width))
            continue
        raise UnsupportedModel(op, nname, f"operator {op} is not piecewise-linear or not supported "
                                          f"(supported: Gemm, MatMul, Add, Sub, Mul, Div, Relu, Identity, "
                                          f"Dropout, Flatten, Transpose, and a final Sigmoid or Softmax)")
    if not rows:
        # the output is [d, N]: the column layout only changes the index meaning, not the math
        pass
    layers = ch.finish()
    if isinstance(readout, str) and readout == "chain":   # one layer per rounding of the runtime
        return ch.runtime_chain(final, source, "ONNX")
    if isinstance(readout, str) and readout in ("raw", "folded"):   # every column (raw: the runtime's own)
        if ch.foreign and readout == "raw":
            raise UnsupportedModel("ONNX", "layers", ch.foreign)
        return PLNet(tuple(layers), 0, final, source)
    if readout is not None:
        return apply_readout(PLNet(tuple(layers), 0, final, source), readout)
    return _make_net(layers, index, final, source, out_name)


def _foreign_node(node, local) -> str:
    """Why a node is not ONNX's own operator of its name ("" when it is): a node of another domain than
    ai.onnx (a custom operator, or a model-local function of that name: onnxruntime runs its body), or
    one a function of the model defines."""
    if node.domain not in ("", "ai.onnx"):
        return (f"node of domain {node.domain!r}: {node.op_type} there is not ONNX's operator of that name "
                f"(onnxruntime runs that domain's own definition)")
    if (node.domain, node.op_type) in local or ("ai.onnx" if not node.domain else "", node.op_type) in local:
        return f"the model defines a function {node.op_type!r} of its own, whose body is not read"
    return ""


def _dropout_trains(node, consts, attrs) -> str:
    """Why a Dropout node is not the identity at inference ("" when it is): a ``training_mode`` input
    that is true (opset 12+: the runtime may mask at random; onnx's reference evaluator does) with a
    ratio that is not 0, or an ``is_test`` of 0 (opset < 7)."""
    if attrs.get("is_test", 1) == 0:
        return "Dropout with is_test = 0 drops units at random (training mode); export the model in eval mode"
    if len(node.input) > 2 and node.input[2]:
        ratio = consts.get(node.input[1]) if len(node.input) > 1 and node.input[1] else np.float64(0.5)
        if bool(np.any(consts[node.input[2]])) and (ratio is None or bool(np.any(ratio))):
            return ("Dropout with training_mode = true drops units at random; the model's output is not a "
                    "function of its input (export the model in eval mode)")
    return ""


def _onnx_input_width(inputs, name) -> int | None:
    for vi in inputs:
        if vi.name == name:
            dims = vi.type.tensor_type.shape.dim
            if len(dims) == 2 and dims[1].HasField("dim_value"):
                return int(dims[1].dim_value)
            if len(dims) == 2 and dims[0].HasField("dim_value") and not dims[1].HasField("dim_value"):
                return int(dims[0].dim_value)        # a column-layout input [d, N]
    return None


def _bias(consts, C, beta, n_out, rows_out, op, nname) -> np.ndarray:
    if C is None:
        return np.zeros(n_out)
    c = consts[C] * beta
    if c.size == 1:
        return np.full(n_out, float(c.reshape(-1)[0]))
    if rows_out and c.shape in ((n_out,), (1, n_out)):
        return c.reshape(-1)
    if not rows_out and c.shape in ((n_out, 1),):
        return c.reshape(-1)
    raise UnsupportedModel(op, nname, f"bias of shape {c.shape} does not broadcast per output unit")


def _broadcast_vec(c: np.ndarray, width: int, rows: bool, op: str, nname: str) -> np.ndarray:
    if c.size == 1:
        return np.full(width, float(c.reshape(-1)[0]))
    if rows and c.shape in ((width,), (1, width)):
        return c.reshape(-1).astype(np.float64)
    if not rows and c.shape == (width, 1):
        return c.reshape(-1).astype(np.float64)
    raise UnsupportedModel(op, nname, f"constant of shape {c.shape} does not broadcast per unit")


def random_net(seed: int, n_inputs: int, hidden: Sequence[int], final: str = "sigmoid",
               bias_scale: float = 1.0) -> PLNet:
    """A small random ReLU network (standard normal weights), for tests and benchmarks."""
    rng = np.random.default_rng(seed)
    layers = []
    d = n_inputs
    for h in hidden:
        layers.append(Layer(rng.normal(size=(h, d)), bias_scale * rng.normal(size=h), True))
        d = h
    layers.append(Layer(rng.normal(size=(1, d)), 0.5 * bias_scale * rng.normal(size=1), False))
    return PLNet(tuple(layers), 0, final, f"random_net(seed={seed})")
