"""Session 35 audit (h4): how fairspec reads an ONNX graph or a torch module as a network (models/network.py,
network_torch.py), against the file's own runtime. Each test here failed before its fix."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from fairspec.models.network import UnsupportedModel

pytest.importorskip("onnx")
try:        # torch imported at collection: a pickle another file's test loads before torch is first imported makes
    importlib.import_module("torch")  # fairspec refuse torch models in that process (models/torch_own.py), by design
except ImportError:
    pass


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


SPEC = """features F {
  a : int in [0, 3]
  b : int in [0, 3]
  g : {A, B} protected
}
model m = onnx("m.onnx", score = logit)
encode F for m {
  a : raw
  b : raw
  g : code {A = 0, B = 1}
}
property lab {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure label(m(x)) == label(m(x'))
}
"""


def _permuting_function(domain: str):
    """x -> a node ``Identity`` of ``domain`` that a model-local function defines as x @ P (P swaps a and g)
    -> a ReLU net reading a and b only."""
    from onnx import TensorProto, helper, numpy_helper

    P = np.float32([[0, 0, 1], [0, 1, 0], [1, 0, 0]])
    body = [helper.make_node("Constant", [], ["P"], value=numpy_helper.from_array(P)),
            helper.make_node("MatMul", ["X", "P"], ["Y"])]
    nodes = [helper.make_node("Identity", ["x"], ["xp"], domain=domain)] + _layers("xp")
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1])],
                          [numpy_helper.from_array(a, n) for n, a in _W.items()])
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    f = helper.make_function(domain, "Identity", ["X"], ["Y"], body, [helper.make_opsetid("", 17)])
    m = helper.make_model(g, opset_imports=opsets, functions=[f])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("enumerate_pairs", ["1", "0"])
def test_a_node_of_another_domain_named_as_an_onnx_operator_is_not_read_as_it(tmp_path, monkeypatch, enumerate_pairs):
    """A node 'my'::Identity, defined by a model-local function as a column permutation (onnxruntime runs the
    function's body), was read by its op_type alone as ONNX's Identity: the net read never reads g, and
    `label(m(x)) == label(m(x'))` except {g} was 'holds (proved)' while onnxruntime's decisions differ."""
    pytest.importorskip("onnxruntime")
    import itertools

    import onnx

    from fairspec.models import load_model
    from fairspec.pipeline import check

    if enumerate_pairs == "0":
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    onnx.save(_permuting_function("my"), str(tmp_path / "m.onnx"))
    (tmp_path / "s.fair").write_text(SPEC)
    P = np.array(list(itertools.product(range(4), range(4), range(2))), dtype=float)
    dec = load_model("onnx", tmp_path / "m.onnx", score_kind="logit").decide(P)
    assert any(dec[i] != dec[i + 1] for i in range(0, len(P), 2))          # the truth: violated
    rep = check(str(tmp_path / "s.fair"))
    assert not rep.has_errors, rep.diagnostics
    (v,) = rep.verdicts
    assert getattr(v.status, "value", v.status) in ("violated", "unknown"), (v.status, v.reason)


@pytest.mark.parametrize("domain", ["my", ""])
def test_a_node_a_model_local_function_defines_is_refused(domain):
    from fairspec.models.network import from_onnx

    with pytest.raises(UnsupportedModel, match="domain 'my'|defines a function"):
        from_onnx(_permuting_function(domain))


def _weight_norm_traced(path):
    torch = pytest.importorskip("torch")
    from torch.nn.utils.parametrizations import weight_norm

    torch.manual_seed(0)
    seq = torch.nn.Sequential(weight_norm(torch.nn.Linear(3, 2)), torch.nn.ReLU(), torch.nn.Linear(2, 1)).eval()
    torch.jit.save(torch.jit.trace(seq, torch.zeros(4, 3)), str(path))


def test_a_traced_weight_norm_first_layer_is_not_read_as_the_next_layers_width(tmp_path):
    """A traced Sequential whose first Linear is parametrized (weight_norm): lint read the width of the first
    plain torch Linear, the second layer's (2): FS402 'the model takes 2 inputs' for a model of 3."""
    from fairspec.models.peek_torch import torch_input_width

    _weight_norm_traced(tmp_path / "m.pt")
    assert torch_input_width(tmp_path / "m.pt") in (None, 3)


def test_a_traced_weight_norm_module_is_refused_not_an_internal_error(tmp_path):
    """Its 'parametrizations' holder has no forward: `hasattr(sub, "graph")` raised torch's RuntimeError
    ('Method forward is not defined'), an internal error in the milp backend."""
    from fairspec.models import load_model

    _weight_norm_traced(tmp_path / "m.pt")
    m = load_model("torch", tmp_path / "m.pt", score_kind="logit")
    with pytest.raises(UnsupportedModel, match="not a plain chain"):
        m.piecewise_linear()


def test_a_features_first_input_is_refused_not_fed_rows_as_its_columns(tmp_path):
    """An input of shape [3, N] (features first, then a Transpose): the loader took 3 as a fixed batch and fed
    chunks of 3 rows, which the graph reads as 3 features of 3 samples, each score mixing other rows: a net with
    no weight on g was 'violated' (8 of 32 pairs, replayed under the same feeding)."""
    pytest.importorskip("onnxruntime")
    import onnx
    from onnx import helper

    from fairspec.pipeline import check

    m = _model([helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0])] + _layers("xt"), _W, in_shape=(3, "N"))
    onnx.save(m, str(tmp_path / "m.onnx"))
    (tmp_path / "s.fair").write_text(SPEC)
    rep = check(str(tmp_path / "s.fair"))
    assert rep.has_errors and any("features-first" in d.message for d in rep.diagnostics), rep.verdicts
    assert not [v for v in rep.verdicts if getattr(v.status, "value", v.status) == "violated"]


def test_an_onnx_softmax_over_the_batch_is_refused_at_load(tmp_path):
    """Softmax(axis = 0) normalises over the batch: a row's probability depends on the rows scored with it
    (1.0 alone, about 1/8 in a batch of 8). The solvers refused it, but the enumeration scored the whole domain
    in one batch and said `holds (proved)` of a decision that flips with the batch."""
    pytest.importorskip("onnxruntime")
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from fairspec.models import ModelLoadError, load_model

    W2, B2 = np.float32([[1, -1], [-1, 1]]), np.float32([0, 0])
    nodes = _layers()[:2] + [helper.make_node("Gemm", ["r", "W2", "B2"], ["z"], transB=1)]
    for axis, bad in ((0, True), (1, False)):
        g = helper.make_graph(nodes + [helper.make_node("Softmax", ["z"], ["y"], axis=axis)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])],
                              [numpy_helper.from_array(a, n) for n, a in dict(_W, W2=W2, B2=B2).items()])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        onnx.save(m, str(tmp_path / f"m{axis}.onnx"))
        if bad:
            with pytest.raises(ModelLoadError, match="other rows of its batch"):
                load_model("onnx", tmp_path / f"m{axis}.onnx", index=1, score_kind="prob")
        else:
            assert load_model("onnx", tmp_path / f"m{axis}.onnx", index=1, score_kind="prob").input_width == 3


def test_a_torch_softmax_over_dim_0_is_refused_at_load(tmp_path):
    torch = pytest.importorskip("torch")
    from fairspec.models import ModelLoadError, load_model

    torch.manual_seed(0)
    for dim, bad in ((0, True), (1, False)):
        seq = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU(), torch.nn.Linear(2, 2),
                                  torch.nn.Softmax(dim=dim)).eval()
        torch.jit.save(torch.jit.script(seq), str(tmp_path / f"m{dim}.pt"))
        if bad:
            with pytest.raises(ModelLoadError, match="other rows of its batch"):
                load_model("torch", tmp_path / f"m{dim}.pt", index=1, score_kind="prob")
        else:
            assert load_model("torch", tmp_path / f"m{dim}.pt", index=1, score_kind="prob").input_width == 3
