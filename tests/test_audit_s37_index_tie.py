"""Session 37 (h2): ``index = 0`` of a two-column output is the argmax's class, column 0 at an exact tie.

Truth is brute force on the runtime (onnxruntime / torch): ``np.argmax`` of the output row, the first largest column
winning an exact tie (``class(m(x))``, scikit-learn's predict). A softmax over two logits that tie exactly gives
[0.5, 0.5]: class 0. Before, two probability columns read with ``index = 0`` meant ``p0 > 0.5`` (the tie "not class
0"), and the solvers refused two logits (or a two-class softmax) read with ``index = 0`` (they encode class 0 as
``z0 - z1 > 0``); they now decide it as the negation of ``index = 1`` (``z1 - z0 > 0``)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

GRID = np.array(list(itertools.product(range(4), range(2))), dtype=float)


def _pairs_differ(values) -> bool:
    v = np.asarray(values)
    return any(not np.array_equal(v[i], v[i + 1]) for i in range(0, len(GRID), 2))


def _check(spec_path, enumerate_pairs, monkeypatch):
    from fairspec import api

    if enumerate_pairs == "0":
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    else:
        monkeypatch.delenv("FAIRSPEC_ENUMERATE_PAIRS", raising=False)
    return api.check(str(spec_path)).to_dict()


def _onnx(path, W, b, softmax: bool):
    """x (2 features) -> Gemm -> [Softmax]: dyadic weights, so the logits tie exactly where the spec's points say."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    out = "probabilities" if softmax else "logits"
    nodes = [helper.make_node("Gemm", ["x", "W", "b"], ["z" if softmax else out])]
    if softmax:
        nodes.append(helper.make_node("Softmax", ["z"], [out], axis=1))
    X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 2])
    Y = helper.make_tensor_value_info(out, TensorProto.FLOAT, [None, 2])
    graph = helper.make_graph(nodes, "g", [X], [Y], [numpy_helper.from_array(W.astype(np.float32), "W"),
                                                     numpy_helper.from_array(b.astype(np.float32), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))


def _run(path):
    ort = pytest.importorskip("onnxruntime")
    return ort.InferenceSession(str(path)).run(None, {"x": GRID.astype(np.float32)})[0]


SPEC = """features F {{
  a : int in [0, 3]
  g : int in [0, 1] protected
}}
model m = onnx("m.onnx", index = {index})
encode F for m {{
  a : raw
  g : raw
}}
property lb {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  ensure label(m(x)) == label(m(x'))
{using}}}
"""

# logits [a, 1 + g/4]: at (a, g) = (1, 0) an exact tie (softmax [0.5, 0.5]: class 0), at (1, 1) class 1 -> violated.
# logits [a, 1 + g/2] - ... with b = [0, 1.5]: (1, 0) gives [1, 1.5] and (1, 1) [1, 2]: no tie at a = 1; at a = 2 the
# rows are [2, 1.5] / [2, 2]: the tie is (2, 1), class 0 like (2, 0) -> label holds for index 0 and 1 alike.
MODELS = {"tie_flips": (np.array([[1.0, 0.0], [0.0, 0.25]]), np.array([0.0, 1.0])),
          "tie_keeps": (np.array([[1.0, 0.0], [0.0, 0.5]]), np.array([0.0, 1.5]))}


def _truth(y, index):
    return "violated" if _pairs_differ(np.argmax(y, axis=1) == index) else "holds"


@pytest.mark.parametrize("using", ["", "  using milp\n", "  using smt\n"])
@pytest.mark.parametrize("enumerate_pairs", ["", "0"])
@pytest.mark.parametrize("index", [0, 1])
@pytest.mark.parametrize("softmax", [True, False])
@pytest.mark.parametrize("which", sorted(MODELS))
def test_two_columns_index_is_the_argmax_on_every_pair_path(tmp_path, monkeypatch, which, softmax, index,
                                                            enumerate_pairs, using):
    """Before: a softmax read with index = 0 was `p0 > 0.5` (tie_flips: `holds`, truth violated, on the enumeration);
    two logits / a softmax with index = 0 on the solvers were `unknown` (refused, hint index = 1). Now every path
    gives the brute-force truth."""
    if using and enumerate_pairs == "":
        pytest.skip("the enumeration decides small domains whatever the backend")
    if "smt" in using:
        pytest.importorskip("z3")
    W, b = MODELS[which]
    _onnx(tmp_path / "m.onnx", W, b, softmax)
    y = _run(tmp_path / "m.onnx")
    truth = _truth(y, index)
    assert truth == ("violated" if which == "tie_flips" else "holds")
    (tmp_path / "s.fair").write_text(SPEC.format(index=index, using=using))
    (p,) = _check(tmp_path / "s.fair", enumerate_pairs, monkeypatch)["properties"]
    # tie_keeps on MILP stops at the tie (2, 1); the refinement decides the whole domain on the runtime's own 0/1
    # decisions at 1/2, which certify now accepts for a two-logit ("margin") readout (it was unknown before)
    assert p["status"] == truth, p
    if truth == "holds":
        assert p["how"] == "proved", p
    if truth == "violated":
        w = p["witness"]
        X2 = np.array([w["x"], w["x_prime"]], dtype=np.float32)
        ort = pytest.importorskip("onnxruntime")
        yy = ort.InferenceSession(str(tmp_path / "m.onnx")).run(None, {"x": X2})[0]
        assert (np.argmax(yy[0]) == index) != (np.argmax(yy[1]) == index), (p, yy)


def test_softmax_index_0_decision_is_the_argmax():
    """The loaded model's decision of [0.5, 0.5] read with index = 0 is class 0 (it was 0: `p0 > 0.5`)."""
    from fairspec.models.readout import resolve_readout

    r = resolve_readout(2, 0, "prob")
    assert r.argmax_decision
    y = np.array([[0.5, 0.5], [0.25, 0.75], [0.75, 0.25]])
    assert list(r.predicted_class(y) == 0) == [True, False, True]
    r1 = resolve_readout(2, 1, "prob")
    assert list(r1.predicted_class(y) == 1) == [False, True, False]


DATA_SPEC = """data d = csv("d.csv", label = y == 1)
features F from d {
  a : int in [0, 3]
  g : int in [0, 1] protected
}
model m = onnx("m.onnx", index = 0)
encode F for m { a : raw  g : raw }
group g1 = g >= 1
property sp { statistical_parity(m, groups g1) <= 0.1
  min_group_size = 1 }
"""


def test_group_metric_reads_softmax_index_0_by_the_argmax(tmp_path, monkeypatch):
    """Softmax of [a, 1 + g/4], index = 0, 50 rows per domain point: the argmax says class 0 at (1, 0) ([0.5, 0.5]),
    so the positives (class 0) are 100 (g = 0: a = 1, 2, 3 minus ... a >= 1) -- counted by brute force below. Before,
    `p0 > 0.5` left the tie rows out of class 0."""
    W, b = MODELS["tie_flips"]
    _onnx(tmp_path / "m.onnx", W, b, True)
    y = _run(tmp_path / "m.onnx")
    rows = np.repeat(GRID, 50, axis=0)
    cls0 = np.repeat(np.argmax(y, axis=1) == 0, 50)
    want = sorted(int(cls0[rows[:, 1] == g].sum()) for g in (0, 1))
    (tmp_path / "d.csv").write_text("a,g,y\n" + "".join(f"{int(a)},{int(g)},{i % 2}\n" for i, (a, g) in enumerate(rows)))
    (tmp_path / "s.fair").write_text(DATA_SPEC)
    (p,) = _check(tmp_path / "s.fair", "", monkeypatch)["properties"]
    assert sorted(g["positives"] for g in p["details"]["groups"]) == want, p


FLIP_SPEC = """data d = csv("d.csv", label = y == 1)
features F from d {
  a : int in [0, 3]
  g : int in [0, 1] protected
}
model m = onnx("m.onnx", index = 0)
encode F for m { a : raw  g : raw }
property lb {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure label(m(x)) == label(m(x'))
  using data
}
"""


def test_data_flips_read_softmax_index_0_by_the_argmax(tmp_path, monkeypatch):
    """Softmax of [a, 1.5 + g/2], index = 0, data = the 8 domain points: (2, 0) gives [2, 1.5] and (2, 1) the exact tie
    [0.5, 0.5], class 0 both, so no row flips. Before, `p0 > 0.5` called the tie "not class 0": `violated`."""
    W, b = MODELS["tie_keeps"]
    _onnx(tmp_path / "m.onnx", W, b, True)
    assert not _pairs_differ(np.argmax(_run(tmp_path / "m.onnx"), axis=1) == 0)
    (tmp_path / "d.csv").write_text("a,g,y\n" + "".join(f"{int(a)},{int(g)},{int(a) % 2}\n" for a, g in GRID))
    (tmp_path / "s.fair").write_text(FLIP_SPEC)
    (p,) = _check(tmp_path / "s.fair", "", monkeypatch)["properties"]
    assert p["status"] != "violated", p


def test_two_independent_sigmoids_are_refused_by_the_solvers(tmp_path, monkeypatch):
    """A network ending in a Sigmoid over two columns, read as probabilities with index = 1: the decision is their
    argmax, which the solvers' z[1] > 0 (p1 > 1/2) is not. Logits [a, 1 + g/4] -> [sigmoid(a), sigmoid(1 + g/4)]: at
    (1, 0) the two probabilities tie (class 0), at (1, 1) class 1: violated. Before, p1 > 1/2 everywhere: `holds
    (proved)`. Now the enumeration gives the truth and the solvers say unknown (apply_readout refuses the head)."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    W, b = np.array([[1.0, 0.0], [0.0, 0.25]]), np.array([0.0, 1.0])
    nodes = [helper.make_node("Gemm", ["x", "W", "b"], ["z"]), helper.make_node("Sigmoid", ["z"], ["probabilities"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 2])],
                              [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 2])],
                              [numpy_helper.from_array(W.astype(np.float32), "W"),
                               numpy_helper.from_array(b.astype(np.float32), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "m.onnx"))
    y = _run(tmp_path / "m.onnx")
    truth = _truth(y, 1)
    assert truth == "violated"      # (1, 0): sigmoid(1) twice, a tie -> class 0; (1, 1): class 1
    (tmp_path / "s.fair").write_text(SPEC.format(index=1, using="  using milp\n"))
    (p,) = _check(tmp_path / "s.fair", "0", monkeypatch)["properties"]
    assert p["status"] in ("unknown", truth), p
    (p,) = _check(tmp_path / "s.fair", "", monkeypatch)["properties"]
    assert p["status"] == truth, p


@pytest.mark.parametrize("which", sorted(MODELS))
def test_index_0_on_partitions_is_decided_as_index_1(tmp_path, monkeypatch, which):
    """The flipped reading (kinds/index_flip) through the MILP's partitions (each part certified, a witness replayed
    on the model as declared): the brute-force truth. Before: unknown (two logits) or the `p0 > 0.5` verdict."""
    W, b = MODELS[which]
    _onnx(tmp_path / "m.onnx", W, b, True)
    truth = _truth(_run(tmp_path / "m.onnx"), 0)
    (tmp_path / "s.fair").write_text(SPEC.format(index=0, using="  using milp\n  partitions = 2\n"))
    (p,) = _check(tmp_path / "s.fair", "0", monkeypatch)["properties"]
    assert p["status"] == truth, p
    assert "index = 1" in p["details"]["decided_as"], p
