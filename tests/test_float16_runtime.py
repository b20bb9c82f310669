"""The float16 runtime error model (fairspec.certify.half) against the runtimes themselves.

Measured where this was first written (and reported here, not asserted: on an AMD EPYC one output of 900
is a float16 step off): onnxruntime's CPU provider computes a float16 graph's MatMul /
Gemm / Add / Relu / Sigmoid / Softmax in float32 and casts the output to float16 once; torch's half
Linear and sigmoid give the bits of their float32 computation rounded once. The bound certify uses
does not rest on that (it holds for float16 rounding at every operation too); these tests check it
against the runtimes: every output of random float16 networks within the bound, the sigmoid of every
float16 input, and on small integer domains every `holds (proved)` against the runtime's outputs
enumerated on every point (dyadic weights, exact zeros, thresholds on grid points).
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from fairspec.certify.network import (SIGMOID_ABS_ERROR, precision_refusal, prove_output_bound,  # noqa: E402
                                      runtime_error_bound, score_interval)
from half_nets import forward64, half_layers, integer_grid, proofs_on_every_point  # noqa: E402
from pair_specs import first_verdict, pair_spec, runtime_gaps, ties_never_contradicted  # noqa: E402


def _graph(layers, head: str = "", split_bias: bool = False) -> bytes:
    """A float16 ONNX graph of ``layers`` ([(W [out, in], b, relu)]): Gemm (or MatMul then Add) per
    layer, Relu where marked, then ``head`` ("", "Sigmoid", "Softmax")."""
    nodes, inits, cur = [], [], "x"
    for k, (W, b, relu) in enumerate(layers):
        inits += [numpy_helper.from_array(np.asarray(W, dtype=np.float16).T.copy(), f"W{k}"),
                  numpy_helper.from_array(np.asarray(b, dtype=np.float16), f"b{k}")]
        if split_bias:
            nodes += [helper.make_node("MatMul", [cur, f"W{k}"], [f"m{k}"]),
                      helper.make_node("Add", [f"m{k}", f"b{k}"], [f"z{k}"])]
        else:
            nodes.append(helper.make_node("Gemm", [cur, f"W{k}", f"b{k}"], [f"z{k}"]))
        cur = f"z{k}"
        if relu:
            nodes.append(helper.make_node("Relu", [cur], [f"r{k}"]))
            cur = f"r{k}"
    if head:
        nodes.append(helper.make_node(head, [cur], ["head"], **({"axis": 1} if head == "Softmax" else {})))
        cur = "head"
    nodes.append(helper.make_node("Identity", [cur], ["y"]))
    d, k = np.asarray(layers[0][0]).shape[1], np.asarray(layers[-1][0]).shape[0]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, ["N", d])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, ["N", k])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def _session(data: bytes, level=None):
    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    if level is not None:
        opts.graph_optimization_level = level
    return ort.InferenceSession(data, sess_options=opts, providers=["CPUExecutionProvider"])


def _run(layers, X, head="", split_bias=False, level=None) -> np.ndarray:
    s = _session(_graph(layers, head, split_bias), level)
    return s.run(None, {"x": np.asarray(X, dtype=np.float16)})[0].astype(np.float64)


def _f32_once(layers, X):
    H = np.asarray(X, dtype=np.float16).astype(np.float32)
    for W, b, relu in layers:
        H = H @ W.T.astype(np.float32) + b.astype(np.float32)
        if relu:
            H = np.maximum(H, np.float32(0))
    return H.astype(np.float16).astype(np.float64)


# ------------------------------------------------------------------ how the runtimes compute float16


@pytest.mark.parametrize("split_bias", [False, True], ids=["Gemm", "MatMul+Add"])
def test_onnxruntime_computes_a_float16_chain_in_float32_and_rounds_once(split_bias, capsys):
    """onnxruntime's float16 chain, with the graph optimised and without, against certify's float16 bound on every
    output. Where this was first measured the outputs were the float32 computation's cast to float16 once (bitwise);
    on an AMD EPYC (session 38) a few are a float16 step off it (another kernel). The bound never rested on that
    fact (it holds for float16 rounding at every operation too), so the bound is asserted and the fact reported."""
    rng = np.random.default_rng(0)
    layers = half_layers(rng, [40, 24, 24, 3], dyadic=False)
    X = rng.normal(0, 2, (300, 40))
    X16 = np.asarray(X, dtype=np.float16).astype(np.float64)
    lo, hi = X16.min(axis=0), X16.max(axis=0)
    ref = forward64(layers, X16)           # float64: within ~1e-13 of the exact network, far below E
    E = [runtime_error_bound(layers, lo, hi, readout=("logit", j), precision="float16") for j in range(3)]
    for level in (None, ort.GraphOptimizationLevel.ORT_DISABLE_ALL):
        got = _run(layers, X, split_bias=split_bias, level=level)
        for j in range(3):
            assert np.all(np.abs(got[:, j] - ref[:, j]) <= E[j] + 1e-9), (level, j, E[j])
        once = _f32_once(layers, X)
        with capsys.disabled():
            print(f"\nonnxruntime float16 chain ({'MatMul+Add' if split_bias else 'Gemm'}, level {level}): "
                  f"{int(np.sum(got != once))} of {got.size} outputs differ from float32 cast once")


def test_torch_half_linear_and_sigmoid_lie_within_the_float16_bound():
    """torch's CPU half Linear and sigmoid against certify's float16 model (certify/half.py). Where this was
    first measured they gave the bits of the float32 computation cast once; on an AMD EPYC (session 27) a
    64-input Linear does not (another kernel: float16 partial sums). The bound never rested on that fact: it
    holds for any order of float16 or float32 roundings. So what is asserted is the bound, on every output;
    the float32-once fact is measured and only reported."""
    torch = pytest.importorskip("torch")
    from fairspec.certify.half import SIGMOID_ABS_ERROR16

    rng = np.random.default_rng(1)
    once = {}
    for d in (8, 64, 300):
        lin = torch.nn.Linear(d, 8).half()
        W, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
        X = rng.normal(size=(200, d)).astype(np.float16)
        with torch.no_grad():
            y = lin(torch.from_numpy(X)).numpy().astype(np.float64)
        f32 = (X.astype(np.float32) @ W.T.astype(np.float32) + b.astype(np.float32)).astype(np.float16)
        once[d] = bool(np.array_equal(y, f32.astype(np.float64)))
        X64 = X.astype(np.float64)
        exact = X64 @ W.astype(np.float64).T + b.astype(np.float64)    # exact: products of float16 numbers
        layers = [(W.astype(np.float64), b.astype(np.float64), False)]
        lo, hi = X64.min(axis=0), X64.max(axis=0)
        for j in range(8):
            E = runtime_error_bound(layers, lo, hi, readout=("logit", j), precision="float16")
            assert np.all(np.abs(y[:, j] - exact[:, j]) <= E), (d, j)
    h = _every_float16()
    with torch.no_grad():
        got = torch.sigmoid(torch.from_numpy(h)).numpy().astype(np.float64)
    with np.errstate(over="ignore"):
        logistic = 1.0 / (1.0 + np.exp(-h.astype(np.float64)))
    assert np.all(np.abs(got - logistic) <= SIGMOID_ABS_ERROR16)
    print(f"torch half Linear gives the float32 result cast once: {once}")


# ------------------------------------------------------------------ the bound against the runtimes


@pytest.mark.parametrize("seed", range(6))
def test_every_float16_output_lies_within_the_bound(seed):
    """Random networks (wide, deep, dyadic or not, a MatMul + Add or a Gemm per layer) over a box;
    every output onnxruntime computes on points of the box (its corners among them) lies within
    score_interval, and the runtime's distance to the exact network within runtime_error_bound. The
    float32-arithmetic bound is too small for some of them."""
    rng = np.random.default_rng(seed)
    widths = [[5, 8, 1], [30, 64, 16, 1], [200, 32, 1], [7, 7, 7, 7, 1], [12, 40, 1], [3, 300, 1]][seed]
    layers = half_layers(rng, widths, dyadic=seed % 2 == 0)
    lo = rng.uniform(-4, 0, widths[0]).astype(np.float16).astype(np.float64)
    hi = lo + rng.uniform(0, 4, widths[0]).astype(np.float16).astype(np.float64)
    X = rng.uniform(lo, hi, (4000, widths[0]))
    X[:2] = (lo, hi)
    X = X.astype(np.float16).astype(np.float64)             # the runtime's inputs: cast by fairspec
    y = _run(layers, X, split_bias=seed % 3 == 1)[:, 0]
    E = runtime_error_bound(layers, lo, hi, precision="float16")
    assert np.all(np.abs(y - forward64(layers, X)[:, 0]) <= E)
    s_lo, s_hi, _ = score_interval(layers, lo, hi, precision="float16")
    assert s_lo <= y.min() and y.max() <= s_hi
    assert E > runtime_error_bound(layers, lo, hi, precision="float32") * 1000


def test_float16_sigmoid_and_softmax_heads_are_within_their_assumed_error():
    """Sigmoid on every finite float16 input (exhaustive), a 2- and a 5-column Softmax on random
    float16 logits, onnxruntime and torch: within SIGMOID_ABS_ERROR["float16"] / class_prob's
    SOFTMAX_ABS_ERROR["float16"] of the exact function of the float16 inputs."""
    from fairspec.certify.class_prob import SOFTMAX_ABS_ERROR

    h = _every_float16()
    x = h.astype(np.float64)
    with np.errstate(over="ignore"):
        exact = 1.0 / (1.0 + np.exp(-x))
    g = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT16, ["N"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, ["N"])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    got = _session(m.SerializeToString()).run(None, {"x": h})[0].astype(np.float64)
    assert np.max(np.abs(got - exact)) <= SIGMOID_ABS_ERROR["float16"]
    torch = pytest.importorskip("torch")
    with torch.no_grad():
        t = torch.sigmoid(torch.from_numpy(h)).numpy().astype(np.float64)
    assert np.max(np.abs(t - exact)) <= SIGMOID_ABS_ERROR["float16"]
    rng = np.random.default_rng(2)
    for k, bound in ((2, SIGMOID_ABS_ERROR["float16"]), (5, SOFTMAX_ABS_ERROR["float16"])):
        Z = (rng.normal(0, 6, (20000, k)) * rng.choice([0.01, 1.0, 3.0], (20000, 1))).astype(np.float16)
        g = helper.make_graph([helper.make_node("Softmax", ["x"], ["y"], axis=1)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT16, ["N", k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, ["N", k])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        got = _session(m.SerializeToString()).run(None, {"x": Z})[0].astype(np.float64)
        z = Z.astype(np.float64)
        e = np.exp(z - z.max(axis=1, keepdims=True))
        assert np.max(np.abs(got - e / e.sum(axis=1, keepdims=True))) <= bound, k


def _every_float16() -> np.ndarray:
    h = np.arange(65536, dtype=np.uint16).view(np.float16)
    return h[np.isfinite(h)]


# ------------------------------------------------------------------ refusals


def test_an_overflow_or_a_weight_that_is_not_a_float16_number_is_refused():
    W = np.array([[300.0, 200.0]])
    b = np.array([0.5])
    lo, hi = np.zeros(2), np.full(2, 140.0)
    with pytest.raises(ValueError, match="65504"):
        runtime_error_bound([(W, b, False)], lo, hi, precision="float16")       # 300*140 + 200*140 > 65504
    assert runtime_error_bound([(W, b, False)], lo, hi, precision="float32") > 0
    with pytest.raises(ValueError, match="65504"):                              # an input beyond the range
        runtime_error_bound([(np.ones((1, 1)), np.zeros(1), False)], [0.0], [70000.0], precision="float16")
    with pytest.raises(ValueError, match="not float16 numbers"):
        runtime_error_bound([(np.array([[0.1]]), np.zeros(1), False)], [0.0], [1.0], precision="float16")
    # an integer input above 2**11 is not cast exactly: its rounding (about 2049 u16) is counted
    one = [(np.ones((1, 1)), np.zeros(1), False)]
    e2048 = runtime_error_bound(one, [0.0], [2048.0], precision="float16", integer=[True])
    assert runtime_error_bound(one, [0.0], [2049.0], precision="float16", integer=[True]) > e2048 + 1.0
    assert precision_refusal("bfloat16") and precision_refusal("mixed (float16, float32)")


# ------------------------------------------------------------------ brute force on small domains


@pytest.mark.parametrize("seed", range(8))
def test_every_float16_interval_proof_holds_on_every_point(seed):
    """Small float16 networks with dyadic weights (ties: outputs on grid points, exact zeros) and a
    sigmoid head for half of them, over a small integer box (one input up to 2100: integers above 2048
    are not float16 numbers). The truth: onnxruntime on every point. Every threshold claim certify
    proves (``<=``, ``<``, ``>=``, ``>``, at the runtime's extremes, one float16 step either side, the
    real-arithmetic extremes and looser ones) holds there; a claim the runtime breaks is never proved
    (a bound too small is refused); some are proved."""
    rng = np.random.default_rng(100 + seed)
    n = 3
    sig = seed % 2 == 1
    layers = half_layers(rng, [n, 6, 1], dyadic=True)
    lo = np.zeros(n)
    hi = np.array([7.0, 5.0, 2100.0 if seed % 4 == 0 else 9.0])
    X = lo + integer_grid(hi.astype(int))
    if seed % 4 == 0:
        layers[0][0][:, 2] = layers[0][0][:, 2] / 64.0          # keep the large input's terms small
    y = _run(layers, X, head="Sigmoid" if sig else "")[:, 0]
    ex = forward64(layers, X)[:, 0]
    if sig:
        ex = 1.0 / (1.0 + np.exp(-ex))
    readout = ("prob", 0) if sig else ("logit", 0)
    # the whole box, and sub-boxes: single points (where the interval is the point's exact value and
    # the error bound is all the slack) and small boxes around random points
    boxes = [(lo, hi)] + [(X[i], X[i]) for i in rng.choice(len(X), 12, replace=False)]
    for i in rng.choice(len(X), 6, replace=False):
        boxes.append((X[i], np.minimum(X[i] + 1, hi)))
    assert proofs_on_every_point(layers, X, y, ex, boxes, readout) > 0


def test_a_float32_bound_is_too_small_for_a_float16_runtime_and_refused_on_float16():
    """A claim between the real-arithmetic maximum and the float16 runtime's: the float32 bound would
    prove it (it is false on the runtime); the float16 bound refuses it."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        layers = half_layers(rng, [3, 8, 1], dyadic=False)
        X = integer_grid([40, 30, 20])
        y = _run(layers, X)[:, 0]
        ex_max = float(forward64(layers, X)[:, 0].max())
        if y.max() <= ex_max + 1e-3:
            continue
        t = (ex_max + float(y.max())) / 2                 # the runtime breaks `score <= t`
        # the real network's interval over a tiny box around the runtime's worst point
        i = int(np.argmax(y))
        box = (X[i], X[i])
        p32 = prove_output_bound(layers, *box, "<=", t, claim="t", precision="float32", integer=[True] * 3)
        p16 = prove_output_bound(layers, *box, "<=", t, claim="t", precision="float16", integer=[True] * 3)
        assert p16 is None
        assert p32 is not None           # the float32 error model would have proved a false claim
        return
    pytest.fail("no network whose float16 runtime exceeds its real maximum by 1e-3")


# ------------------------------------------------------------------ end to end


MODEL = 'onnx("m.onnx", score = logit)'


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_solvers_prove_and_refute_float16_graphs_as_the_runtime_computes(tmp_path, monkeypatch, seed):
    """End to end (FAIRSPEC_ENUMERATE_PAIRS=0: the MILP / branch and bound path) against every pair
    scored on onnxruntime: clearly above the runtime's largest |logit - logit'| holds (proved), below
    it violated with a replayed witness, and at the tie and one float16 step either side never a
    verdict the runtime's scores contradict."""
    rng = np.random.default_rng(seed)
    layers = half_layers(rng, [3, 6, 1], dyadic=seed == 0)
    (tmp_path / "m.onnx").write_bytes(_graph(layers))
    gaps, top, step = runtime_gaps(lambda X: _run(layers, X)[:, 0])
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")

    def verdict(op, eps):
        return first_verdict(tmp_path, pair_spec(MODEL, op, eps))

    far = verdict("<=", top + 0.5 + top / 4)
    assert far["status"] == "holds" and far["how"] == "proved", far
    below = verdict("<=", top - 4 * step)
    assert below["status"] == "violated" and below["witness"] is not None, below
    ties_never_contradicted(verdict, gaps, top, step)


def test_a_float16_graph_that_scales_a_layer_is_proved_by_the_solvers(tmp_path, monkeypatch):
    """A Mul by 1/2 the network reader folds into the layer as exact is not exact in float16 where its
    result is subnormal, and its operand may pass 65504 where the folded layer's values do not: the
    runtime chain makes it a layer of its own (tests/test_float16_scales.py), so the solvers prove it
    (was unknown: 'the float16 graph scales a layer'), as the enumeration does on the runtime."""
    rng = np.random.default_rng(3)
    layers = half_layers(rng, [3, 6, 1], dyadic=True)
    data = onnx.load_from_string(_graph(layers, split_bias=True))
    half = numpy_helper.from_array(np.array([0.5], dtype=np.float16), "half")
    data.graph.initializer.append(half)
    nodes = list(data.graph.node)
    k = next(i for i, n in enumerate(nodes) if n.op_type == "Relu")
    nodes[k].input[0] = "scaled"
    nodes.insert(k, helper.make_node("Mul", ["z0", "half"], ["scaled"]))
    del data.graph.node[:]
    data.graph.node.extend(nodes)
    onnx.save(data, str(tmp_path / "m.onnx"))
    text = pair_spec(MODEL, "<=", "100")
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    v = first_verdict(tmp_path, text)
    assert v["status"] == "holds" and v["how"] == "proved", v
    monkeypatch.delenv("FAIRSPEC_ENUMERATE_PAIRS")
    v = first_verdict(tmp_path, text)
    assert v["status"] == "holds" and v["how"] == "proved", v


def test_the_batch_spread_of_a_float16_runtime_bounds_the_inputs_as_the_runtime_casts_them(monkeypatch):
    """models.batching.certified_spread bounds the box of the rows as the runtime reads them: 2051 is
    2052 in float16 (rounded up), so the bounded box must reach 2052, not stop at the float64 value."""
    import fairspec.certify.network as network
    import fairspec.models.runtime_layers as runtime_layers
    from fairspec.models import batching

    seen = {}

    def bound(layers, lo, hi, **kw):
        seen["lo"], seen["hi"] = lo, hi
        return 0.0

    class M:
        score_kind = "logit"

    monkeypatch.setattr(runtime_layers, "runtime_layers",
                        lambda model, post: ([(np.ones((1, 1)), np.zeros(1), False)], ("logit", 0), "float16"))
    monkeypatch.setattr(network, "runtime_error_bound", bound)
    assert batching.certified_spread(M(), np.array([[3.0], [2051.0]])) is not None
    assert seen["hi"][0] >= 2052.0 and seen["lo"][0] == 3.0
