"""The arithmetic a network's runtime computes in (``LoadedModel.precision``): an ONNX graph its
input's element type, a torch module its parameters' dtype, scikit-learn float64. Certify's runtime
error model covers float16 (its own bound, certify.half), float32 and float64, so a float16 runtime is
never proved on a float32 bound
(it was: a float16 ONNX network got `holds (proved)` where its runtime breaks the property), and a
float64 one is certified in float64 (it was `unknown`: its weights are not float32 numbers). Checked
against the enumeration of every pair on the runtime."""

from __future__ import annotations

import numpy as np
import pytest
from pair_specs import first_verdict, pair_spec


def _weights(seed: int):
    rng = np.random.default_rng(seed)
    W1 = rng.integers(-8, 9, (3, 6)) / 8.0 + rng.normal(0, 0.013, (3, 6))
    b1 = rng.integers(-4, 5, 6) / 4.0
    W2 = rng.integers(-8, 9, (6, 1)) / 8.0 + rng.normal(0, 0.017, (6, 1))
    return W1, b1, W2, np.array([0.25])


def _save_onnx(folder, dtype: str, seed: int, weights=None, sigmoid: bool = False):
    """A Gemm / Relu / Gemm network over (f0, g, f1) computing in ``dtype`` throughout (``weights``:
    W1, b1, W2, b2 instead of ``_weights(seed)``; ``sigmoid``: a Sigmoid head)."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    npdt = {"float16": np.float16, "float32": np.float32, "float64": np.float64}[dtype]
    tp = {"float16": TensorProto.FLOAT16, "float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE}[dtype]
    W1, b1, W2, b2 = (np.asarray(a).astype(npdt) for a in (weights or _weights(seed)))
    nodes = [helper.make_node("Gemm", ["x", "W1", "b1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "W2", "b2"], ["z" if sigmoid else "y"])]
    if sigmoid:
        nodes.append(helper.make_node("Sigmoid", ["z"], ["y"]))
    g = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", tp, [None, 3])], [helper.make_tensor_value_info("y", tp, [None, 1])],
        [numpy_helper.from_array(W1, "W1"), numpy_helper.from_array(b1, "b1"),
         numpy_helper.from_array(W2, "W2"), numpy_helper.from_array(b2, "b2")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(folder / "m.onnx"))
    return f'onnx("m.onnx", score = {"prob" if sigmoid else "logit"})'


def _save_torch(folder, dtype: str, seed: int):
    torch = pytest.importorskip("torch")
    W1, b1, W2, b2 = _weights(seed)
    mods = [torch.nn.Linear(3, 6), torch.nn.ReLU(), torch.nn.Linear(6, 1)]
    with torch.no_grad():
        for lin, W, b in ((mods[0], W1.T, b1), (mods[2], W2.T, b2)):
            lin.weight.copy_(torch.from_numpy(np.float32(W)))
            lin.bias.copy_(torch.from_numpy(np.float32(b)))
    net = torch.nn.Sequential(*mods).eval().to(getattr(torch, dtype))
    torch.jit.save(torch.jit.script(net), str(folder / "m.pt"))
    return 'torch("m.pt", score = logit)'


def _check(folder, model: str, op: str, eps: str, monkeypatch, solvers: bool, using: str = "", **shape) -> dict:
    """``shape``: pair_spec's domain / score / mode instead of f0 in [0, 200], f1 in [0, 50], logit, find."""
    if solvers:
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")     # the solvers, not the enumeration
    else:
        monkeypatch.delenv("FAIRSPEC_ENUMERATE_PAIRS", raising=False)
    text = pair_spec(model, op, eps, **{"f0": 200, "f1": 50, **shape}, tail=f"\n  using {using}" if using else "")
    return first_verdict(folder, text)


def _loaded(folder, name: str):
    from fairspec.models import load_model

    return load_model("onnx" if name.endswith(".onnx") else "torch", folder / name, score_kind="logit")


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_an_onnx_graph_computes_in_its_input_type(tmp_path, dtype):
    _save_onnx(tmp_path, dtype, 1)
    assert _loaded(tmp_path, "m.onnx").precision == dtype


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_a_torch_module_computes_in_its_parameters_type(tmp_path, dtype):
    _save_torch(tmp_path, dtype, 1)
    assert _loaded(tmp_path, "m.pt").precision == dtype


@pytest.mark.parametrize("using", ["", "smt"])
def test_a_float16_onnx_network_is_never_proved_on_a_float32_bound(tmp_path, monkeypatch, using):
    """eps = 0.65 lies between the largest |logit - logit'| in real arithmetic (0.614) and on the
    float16 runtime (0.6875): the enumeration finds the runtime's violating pairs; the solvers, whose
    certification bounded a float32 runtime, said holds (proved)."""
    model = _save_onnx(tmp_path, "float16", 1)
    truth = _check(tmp_path, model, "<=", "0.65", monkeypatch, solvers=False)
    assert truth["status"] == "violated" and truth["details"]["engine"] == "enumeration", truth
    v = _check(tmp_path, model, "<=", "0.65", monkeypatch, solvers=True, using=using)
    assert v["status"] in ("violated", "unknown"), v
    if v["status"] == "unknown":
        # the true reason, on every backend (smt said "not a plain Gemm/.../ReLU chain")
        assert "plain Gemm" not in v["reason"], v


@pytest.mark.parametrize("using", ["smt", "milp"])
@pytest.mark.parametrize("fmt", ["onnx", "torch"])
def test_a_float16_runtime_is_refuted_as_it_computes(tmp_path, monkeypatch, fmt, using):
    """A float16 ONNX graph and a float16 torch module have their error bound (certify.half; the torch
    module was refused for its arithmetic): the solvers find the runtime's violating pair (eps = 0.65 lies
    below the float16 runtime's largest gap, above the real-arithmetic one)."""
    model = _save_onnx(tmp_path, "float16", 1) if fmt == "onnx" else _save_torch(tmp_path, "float16", 1)
    v = _check(tmp_path, model, "<=", "0.65", monkeypatch, solvers=True, using=using)
    assert v["status"] == "violated" and v["witness"] is not None, v


def test_precision_refusal_names_the_arithmetic():
    from fairspec.certify.network import precision_refusal
    from fairspec.models.runtime_layers import runtime_precision

    assert precision_refusal("float32") == precision_refusal("float64") == precision_refusal("float16") == ""
    assert "bfloat16 arithmetic has no error bound in certify yet" in precision_refusal("bfloat16")
    assert "mixed (float16, float32)" in precision_refusal("mixed (float16, float32)")

    class M:
        precision = "bfloat16"

    with pytest.raises(ValueError, match="bfloat16 arithmetic has no error bound"):
        runtime_precision(M())
    M.precision = "float16"
    assert runtime_precision(M()) == "float16"


def test_a_half_precision_torch_network_is_never_proved(tmp_path, monkeypatch):
    model = _save_torch(tmp_path, "float16", 1)
    torch = pytest.importorskip("torch")
    m = torch.jit.load(str(tmp_path / "m.pt"))
    f0, f1 = np.meshgrid(np.arange(201), np.arange(51), indexing="ij")

    def z(g):
        X = np.stack([f0.ravel(), np.full(f0.size, g), f1.ravel()], 1)
        with torch.no_grad():
            return m(torch.from_numpy(X).to(torch.float16)).to(torch.float64).numpy().ravel()

    top = float(np.max(np.abs(z(0) - z(1))))
    for eps in (top, (top + 0.614) / 2):         # at the runtime's maximum and below it
        v = _check(tmp_path, model, "<=", repr(eps), monkeypatch, solvers=True)
        assert v["status"] != "holds", v
        if v["status"] == "unknown":             # a tie within the rounding, not its children's order
            assert "children in order" not in v["reason"], v


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_half_precision_torch_sequential_is_refused_for_its_precision(tmp_path, dtype):
    """audit s18/h3 finding 4: a plain Linear, ReLU, Linear Sequential in float16 was refused by the
    solvers with "forward() does not apply its children in order". A float16 one is read now (its
    agreement check within certify's float16 bound); a bfloat16 one is refused for its precision."""
    torch = pytest.importorskip("torch")
    from fairspec.models import load_model
    from fairspec.models.base import UnsupportedModel

    W1, b1, W2, b2 = _weights(1)
    seq = torch.nn.Sequential(torch.nn.Linear(3, 6), torch.nn.ReLU(), torch.nn.Linear(6, 1))
    with torch.no_grad():
        for lin, W, b in ((seq[0], W1, b1), (seq[2], W2, b2)):
            lin.weight.copy_(torch.tensor(W.T)); lin.bias.copy_(torch.tensor(b))
    torch.jit.save(torch.jit.script(seq.to(getattr(torch, dtype)).eval()), str(tmp_path / "m.pt"))
    m = load_model("torch", tmp_path / "m.pt", score_kind="logit")
    if dtype == "float16":
        assert len(m.piecewise_linear().layers) == 2 and m.precision == "float16"
        return
    with pytest.raises(UnsupportedModel, match=f"computes in {dtype}") as e:
        m.piecewise_linear()
    assert "children in order" not in str(e.value)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_float64_onnx_network_is_certified_in_float64(tmp_path, monkeypatch, seed):
    """Against every pair scored on the runtime (the truth): at eps clearly above the largest
    |logit - logit'| the solvers' holds is now certified (it was unknown: float64 weights are not
    float32 numbers), below it they find a replayed pair; at the maximum itself, on either side of it
    by one step, never a verdict the runtime's scores or the enumeration contradict (a float64 graph
    may round by batch, so the enumeration says unknown within the runtime's spread of the tie)."""
    model = _save_onnx(tmp_path, "float64", seed)
    ort = pytest.importorskip("onnxruntime")
    s = ort.InferenceSession(str(tmp_path / "m.onnx"))
    f0, f1 = np.meshgrid(np.arange(201), np.arange(51), indexing="ij")

    def z(g, alone=False):
        X = np.stack([f0.ravel(), np.full(f0.size, g), f1.ravel()], 1).astype(np.float64)
        if alone:
            return np.array([s.run(None, {"x": X[i:i + 1]})[0][0, 0] for i in range(len(X))])
        return s.run(None, {"x": X})[0].ravel()

    gaps = np.abs(z(0) - z(1))
    top = float(np.max(gaps))
    gaps_alone = np.abs(z(0, True) - z(1, True))     # another batching of the same points
    far = _check(tmp_path, model, "<=", repr(top + 0.01), monkeypatch, solvers=True)
    assert far["status"] == "holds" and far["how"] == "proved", far
    below = _check(tmp_path, model, "<=", repr(top - 0.01), monkeypatch, solvers=True)
    assert below["status"] == "violated" and below["witness"] is not None, below
    for eps in (np.nextafter(top, -1), top, np.nextafter(top, 2)):
        for op in ("<=", "<"):
            held = all(bool(np.all(g <= eps if op == "<=" else g < eps)) for g in (gaps, gaps_alone))
            enum = _check(tmp_path, model, op, repr(float(eps)), monkeypatch, solvers=False)
            v = _check(tmp_path, model, op, repr(float(eps)), monkeypatch, solvers=True)
            for r in (enum, v):
                # a holds must survive both batchings; a violated comes with a pair fairspec replayed
                # (alone, as a pair and reversed where near the tie): at the tie the runtime's own
                # batches may disagree, so one batching's scores cannot refute it
                assert r["status"] != "holds" or held, (op, eps, r)
                assert r["status"] != "violated" or r["witness"] is not None, (op, eps, r)


def _chain_onnx(folder, nodes_spec, dtype="float32"):
    """An ONNX graph over 3 inputs from ``nodes_spec``: (op, const array or None, attrs) in order, each
    on the previous tensor."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    npdt = np.dtype(dtype)
    tp = {"float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE}[dtype]
    nodes, inits, cur, width = [], [], "x", 3
    for k, (op, c, attrs) in enumerate(nodes_spec):
        out = f"t{k}"
        ins = [cur]
        if c is not None:
            inits.append(numpy_helper.from_array(np.asarray(c, dtype=npdt), f"c{k}"))
            ins.append(f"c{k}")
            if op in ("MatMul", "Gemm"):
                width = np.asarray(c).shape[1]
        if op == "Gemm" and "bias" in attrs:
            inits.append(numpy_helper.from_array(np.asarray(attrs["bias"], dtype=npdt), f"g{k}"))
            ins.append(f"g{k}")
        nodes.append(helper.make_node(op, ins, [out], **{a: v for a, v in attrs.items() if a != "bias"}))
        cur = out
    nodes.append(helper.make_node("Identity", [cur], ["y"]))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", tp, [None, 3])],
                          [helper.make_tensor_value_info("y", tp, [None, width])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(folder / "m.onnx"))


W3 = np.array([[0.5, -0.25], [0.75, 1.0], [-1.0, 0.5]])
W2 = np.array([[1.0], [-0.5]])


@pytest.mark.parametrize("chain,own", [
    ([("MatMul", W3, {}), ("Add", [0.25, -0.5], {}), ("Relu", None, {}), ("MatMul", W2, {})], True),
    ([("Gemm", W3, {"bias": [0.25, -0.5]}), ("Relu", None, {}), ("Gemm", W2, {"alpha": 0.5})], True),
    ([("MatMul", W3, {}), ("Mul", [2.0, -4.0], {}), ("Relu", None, {}), ("MatMul", W2, {})], True),
    # a diagonal weight is still one product (and its bias)
    ([("MatMul", np.diag([0.3, 0.7, 1.1]), {}), ("Add", [0.1, 0.2, 0.3], {}), ("Relu", None, {}),
      ("MatMul", W3, {}), ("Relu", None, {}), ("MatMul", W2, {})], True),
    # the runtime rounds twice where the folded layer has one rounding
    ([("MatMul", W3, {}), ("MatMul", np.array([[1.0, 0.5], [0.25, 1.0]]), {}), ("Relu", None, {}),
      ("MatMul", W2, {})], False),
    ([("MatMul", W3, {}), ("Mul", [0.1, 0.3], {}), ("Relu", None, {}), ("MatMul", W2, {})], False),
    ([("Add", [0.1, 0.2, 0.3], {}), ("MatMul", W3, {}), ("Relu", None, {}), ("MatMul", W2, {})], False),
    ([("Gemm", W3, {"alpha": 0.3}), ("Relu", None, {}), ("MatMul", W2, {})], False),
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_layer_the_runtime_computes_in_several_roundings_is_not_its_own(tmp_path, chain, own, dtype):
    """The runtime error bound is about fl(W h + b) with W and b the runtime's own numbers. A layer the
    graph computes as two products, a scale that is not a power of two, or a bias before the product
    folds into weights the runtime never rounds with (in float64 no representability check catches
    them): runtime_network refuses it. The certification's runtime_layers reads the runtime's chain cut
    at every rounding instead (runtime_chain: identity between two products), except for one operator
    that rounds twice (a Gemm scaled by alpha), which it refuses."""
    from fairspec.models.runtime_layers import runtime_layers
    from fairspec.models.network import UnsupportedModel

    _chain_onnx(tmp_path, chain, dtype)
    m = _loaded(tmp_path, "m.onnx")
    if own:
        assert m.runtime_network().layers
        assert len(runtime_layers(m, "logit")[0]) == len(m.piecewise_linear().layers)
    else:
        with pytest.raises(UnsupportedModel, match="several roundings"):
            m.runtime_network()
        if chain[0][0] == "Gemm":
            with pytest.raises(ValueError, match="several roundings"):
                runtime_layers(m, "logit")
        else:
            assert len(runtime_layers(m, "logit")[0]) > len(m.piecewise_linear().layers)
        m.piecewise_linear()                      # the solvers' network (real arithmetic) is still read


def test_composed_layers_of_torch_and_scikit_learn_are_not_their_own():
    torch = pytest.importorskip("torch")
    from sklearn.neural_network import MLPClassifier

    from fairspec.models.network import UnsupportedModel
    from fairspec.models.network_torch import from_torch
    from fairspec.models.network_sklearn import from_sklearn

    seq = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2), torch.nn.ReLU(), torch.nn.Linear(2, 1))
    with pytest.raises(UnsupportedModel, match="several roundings"):
        from_torch(seq.eval(), readout="raw")
    from_torch(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1)).eval(),
               readout="raw")
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), rng.integers(0, 2, 40)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ident = MLPClassifier((4,), activation="identity", max_iter=50, random_state=0).fit(X, y)
        relu = MLPClassifier((4,), activation="relu", max_iter=50, random_state=0).fit(X, y)
    with pytest.raises(UnsupportedModel, match="several roundings"):
        from_sklearn(ident, readout="raw")
    from_sklearn(relu, readout="raw")


# ------------------------------------------------------------------ batches on onnxruntime


def _graph_bytes(op: str, dtype: str, d: int, k: int, seed: int) -> bytes:
    from onnx import TensorProto, helper, numpy_helper

    tp = {"float16": TensorProto.FLOAT16, "float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE}[dtype]
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["m"]), helper.make_node("Add", ["m", "b"], ["z"])]
    nodes.append(helper.make_node("Softmax", ["z"], ["out"], axis=1) if op == "Softmax"
                 else helper.make_node(op, ["z"], ["out"]))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", tp, ["N", d])],
                          [helper.make_tensor_value_info("out", tp, ["N", k])],
                          [numpy_helper.from_array(rng.normal(size=(d, k)).astype(dtype), "W"),
                           numpy_helper.from_array(rng.normal(size=k).astype(dtype), "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_onnxruntime_scores_every_batch_alike_in_float32_and_float16(dtype):
    """The measured fact the enumeration rests on for float32 and float16 graphs (a tie there is
    decided on one batch's scores, pair_enumeration.batch_dependent): each point scored alone, in
    chunks of 2, 3, 7 and 64, and in one batch gives the same bits, for the ops of the networks
    fairspec reads and their heads, narrow and wide, on as many threads as onnxruntime takes."""
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(0)
    for op, d, k in (("Relu", 7, 16), ("Relu", 512, 64), ("Identity", 300, 64), ("Sigmoid", 13, 4),
                     ("Tanh", 13, 4), ("Softmax", 13, 3), ("Exp", 13, 4)):
        opts = ort.SessionOptions()
        opts.log_severity_level = 4
        s = ort.InferenceSession(_graph_bytes(op, dtype, d, k, 1), sess_options=opts,
                                 providers=["CPUExecutionProvider"])
        X = rng.normal(size=(130, d)).astype(dtype)
        full = s.run(None, {"x": X})[0]
        for c in (1, 2, 3, 7, 64):
            got = np.vstack([s.run(None, {"x": X[i:i + c]})[0] for i in range(0, len(X), c)])
            assert np.array_equal(got, full), (op, dtype, d, k, c)


def _blind_weights():
    """Weights of a network that never reads g (its row of W1 is zero): x and x' have the same logit."""
    rng = np.random.default_rng(3)
    W1 = rng.normal(0, 0.3, (3, 6))
    W1[1, :] = 0.0
    return W1, rng.normal(0, 0.3, 6), rng.normal(0, 0.5, (6, 1)), np.array([0.1])


@pytest.mark.parametrize("solvers", [False, True], ids=["enumeration", "solvers"])
def test_a_float64_onnx_probability_is_never_proved_at_a_batch_tie(tmp_path, monkeypatch, solvers):
    """onnxruntime's float64 Sigmoid rounds a value by its position in the batch: the network of
    _blind_weights gave x and x' (equal logits) probabilities one ulp apart as positions 0 and 4 of a
    batch of 5, so `|prob(m(x)) - prob(m(x'))| <= 0` holds in some batches and not in others. It was
    `holds (proved)` from the enumeration's one batch; now unknown (as on torch). Away from the tie,
    and on the float32 graph (which scores every batch alike), the enumeration still proves it."""
    pytest.importorskip("onnxruntime")
    def verdict(dtype, eps):
        model = _save_onnx(tmp_path, dtype, 0, weights=_blind_weights(), sigmoid=True)
        p = _check(tmp_path, model, "<=", eps, monkeypatch, solvers=solvers, f0=40, f1=10, score="prob",
                   mode=None)
        return p["status"], p["how"]

    assert verdict("float64", "0") == ("unknown", None)
    if not solvers:
        assert verdict("float64", "0.3") == ("holds", "proved")
        assert verdict("float32", "0") == ("holds", "proved")
