"""FS506: lint reads a model file cheaply and says when the chosen backend cannot encode it."""

from pathlib import Path

from fairspec.models.peek import PL_ONNX_OPS, piecewise_linear_obstacle
from fairspec.pipeline import check, lint

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures"
TANH = (FIX / "errors" / "milp_tanh.fair").read_text()


def _spec(tmp_path, text):
    (tmp_path / "fairspec.toml").write_text("")  # the project: specs/ reads ../data and ../models
    (tmp_path / "data").mkdir()
    (tmp_path / "models").mkdir()
    (tmp_path / "data" / "people.csv").write_bytes((FIX / "data" / "people.csv").read_bytes())
    (tmp_path / "models" / "people6_tanh.onnx").write_bytes((FIX / "models" / "people6_tanh.onnx").read_bytes())
    (tmp_path / "models" / "people6.onnx").write_bytes((FIX / "models" / "people6.onnx").read_bytes())
    sub = tmp_path / "specs"
    sub.mkdir()
    p = sub / "s.fair"
    p.write_text(text)
    return p


def _codes(res):
    return [(d.code, d.severity) for d in res.diagnostics]


def test_default_backend_is_a_warning_and_check_still_falsifies_on_data(tmp_path):
    p = _spec(tmp_path, TANH.replace("  using milp\n", ""))
    assert _codes(lint(p)) == [("FS506", "warning")]
    (v,) = check(p).verdicts
    assert v.status in ("violated", "unknown")
    if v.status == "unknown":
        assert "Tanh" in v.reason


def test_data_backend_needs_no_network(tmp_path):
    p = _spec(tmp_path, TANH.replace("using milp", "using data"))
    assert _codes(lint(p)) == []


def test_relu_networks_and_logistic_models_pass():
    assert piecewise_linear_obstacle("onnx", FIX / "models" / "people6.onnx", "logit") is None
    assert piecewise_linear_obstacle("onnx", ROOT / "examples/adult/models/mlp.onnx", "logit") is None
    assert piecewise_linear_obstacle("sklearn", ROOT / "examples/adult/models/lr.skops") is None


def test_tree_and_tanh_are_named():
    why = piecewise_linear_obstacle("sklearn", ROOT / "examples/adult/models/dt.skops")
    assert "DecisionTreeClassifier" in why
    why = piecewise_linear_obstacle("onnx", FIX / "models" / "people6_tanh.onnx", "logit")
    assert "Tanh" in why and "hidden_tanh" in why


def test_unreadable_files_say_nothing_at_lint():
    assert piecewise_linear_obstacle("onnx", FIX / "models" / "garbage.onnx") is None
    assert piecewise_linear_obstacle("onnx", FIX / "models" / "missing.onnx") is None


def test_the_loader_refuses_exactly_what_lint_refuses():
    """Every operator outside PL_ONNX_OPS is refused by the converter, naming the operator and node."""
    import numpy as np
    import pytest
    from onnx import TensorProto, helper, numpy_helper

    from fairspec.models.network import UnsupportedModel, from_onnx

    for op in ("Tanh", "LeakyRelu", "Abs"):
        assert op not in PL_ONNX_OPS
        W = numpy_helper.from_array(np.ones((2, 1), dtype=np.float32), "W")
        g = helper.make_graph([helper.make_node("Gemm", ["x", "W"], ["z"], name="g"),
                               helper.make_node(op, ["z"], ["y"], name=f"act_{op}")], "t",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1])], [W])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        with pytest.raises(UnsupportedModel) as e:
            from_onnx(m)
        assert op in str(e.value) and f"act_{op}" in str(e.value)
