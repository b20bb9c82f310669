"""The model loaders: ONNX, torch and scikit-learn behind one interface.

Every model is built in a temporary folder; the whole file runs in a few seconds.
"""

from __future__ import annotations

import os
import pathlib
import pickle
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from fairspec.models import LoadedModel, ModelLoadError, load_model, peek_input_width

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("sklearn")
sio = pytest.importorskip("skops.io")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.tree import DecisionTreeClassifier  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit.* in torch 2.13

REPO = pathlib.Path(__file__).resolve().parents[1]
AC1 = pathlib.Path("/work/shared/bench/fairify/models/AC-1.onnx")
WIDTH = 9


# --------------------------------------------------------------------------------------
# tiny models (module level so that pickles of them can be loaded back)
# --------------------------------------------------------------------------------------

class TwoHead(torch.nn.Module):
    """Returns (logits of 2 classes, probability of class 1)."""

    def __init__(self, width: int = WIDTH):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(width, 6), torch.nn.ReLU())
        self.head = torch.nn.Linear(6, 2)

    def forward(self, x):
        z = self.head(self.body(x))
        return z, torch.softmax(z, dim=1)[:, 1:2]


class NotAnEstimatorPart:
    """A type skops does not know: its presence must make the loader refuse the file."""

    def __init__(self):
        self.value = 3


def _net(width: int = WIDTH) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(width, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1)
    ).eval()


def _two() -> torch.nn.Module:
    torch.manual_seed(1)     # the same weights in the files and in each test, whatever ran before
    return TwoHead().eval()


def _data(n: int = 64, width: int = WIDTH, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, width))


@pytest.fixture(scope="module")
def d(tmp_path_factory) -> pathlib.Path:
    """Every model file the tests read, built once."""
    d = tmp_path_factory.mktemp("models")
    net = _net()
    two = _two()
    x0 = torch.zeros(1, WIDTH)
    dyn = {"x": {0: "N"}}
    torch.onnx.export(net, (x0,), str(d / "net.onnx"), input_names=["x"], output_names=["logit"],
                      dynamic_axes={"x": {0: "N"}, "logit": {0: "N"}}, dynamo=False)
    torch.onnx.export(two, (x0,), str(d / "two.onnx"), input_names=["x"], output_names=["logits", "prob"],
                      dynamic_axes={**dyn, "logits": {0: "N"}, "prob": {0: "N"}}, dynamo=False)
    # no dynamic axes: the graph pins the batch size to 1
    torch.onnx.export(net, (x0,), str(d / "fixed_batch.onnx"), input_names=["x"], output_names=["logit"],
                      dynamo=False)
    torch.jit.save(torch.jit.script(net), str(d / "net.pt"))
    torch.jit.save(torch.jit.script(two), str(d / "two.pt"))
    torch.jit.save(torch.jit.trace(net, x0), str(d / "traced.pt"))
    torch.save(net, str(d / "net_pickle.pt"))
    torch.save(two, str(d / "two_pickle.pt"))
    torch.save(net.state_dict(), str(d / "state_dict.pt"))

    X = _data(200)
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    lr = LogisticRegression().fit(X, y)
    dt = DecisionTreeClassifier(max_depth=4, random_state=0).fit(X, y)
    pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(X[:, :5], y)
    sio.dump(lr, d / "lr.skops")
    sio.dump(dt, d / "dt.skops")
    sio.dump(pipe, d / "pipe.skops")
    bad = LogisticRegression().fit(X, y)
    bad.extra_ = NotAnEstimatorPart()
    sio.dump(bad, d / "untrusted.skops")
    for name, est in (("lr.pkl", lr), ("dt.pickle", dt)):
        with open(d / name, "wb") as fh:
            pickle.dump(est, fh)
    import joblib

    joblib.dump(lr, d / "lr.joblib")

    # hand-built ONNX graphs: two inputs; an old-style model listing its initializers as inputs
    two_in = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["y"])], "g",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 3]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])])
    onnx.save(helper.make_model(two_in, opset_imports=[helper.make_opsetid("", 13)]), d / "two_inputs.onnx")
    W = np.arange(8, dtype=np.float32).reshape(4, 2) / 10
    old = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4]),
         helper.make_tensor_value_info("W", TensorProto.FLOAT, [4, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])],
        [numpy_helper.from_array(W, "W")])
    m = helper.make_model(old, opset_imports=[helper.make_opsetid("", 9)])
    m.ir_version = 3
    onnx.save(m, d / "old_style.onnx")

    rng = np.random.default_rng(7)
    for name in ("garbage.onnx", "garbage.skops", "garbage.pt", "garbage.pkl"):
        (d / name).write_bytes(rng.bytes(3000))
    (d / "empty.onnx").write_bytes(b"")
    (d / "text.onnx").write_text("this is not a model\n")
    with zipfile.ZipFile(d / "noschema.skops", "w") as zf:
        zf.writestr("hello.txt", "hi")
    (d / "lr.txt").write_bytes((d / "lr.skops").read_bytes())
    return d


def _torch_forward(module, X, pick=lambda y: y):
    with torch.no_grad():
        y = pick(module(torch.from_numpy(X).float()))
    return y.double().numpy()


def _ort(path, X, name):
    s = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return s.run([name], {s.get_inputs()[0].name: X.astype(np.float32)})[0]


def _raises(fn, *names: str) -> ModelLoadError:
    with pytest.raises(ModelLoadError) as info:
        fn()
    msg = str(info.value)
    assert "\n" not in msg and "Traceback" not in msg
    for n in names:
        assert n in msg, (n, msg)
    return info.value


# --------------------------------------------------------------------------------------
# import hygiene
# --------------------------------------------------------------------------------------

def test_import_is_light():
    code = (
        "import sys, fairspec.models as m\n"
        "w = m.peek_input_width\n"
        "heavy = [k for k in ('torch', 'onnx', 'onnxruntime', 'sklearn', 'skops', 'numpy') if k in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, check=True)
    assert out.stdout.strip() == "", out.stdout


def test_peek_imports_nothing_heavy(d):
    code = (
        "import sys, fairspec.models as m\n"
        f"m.peek_input_width('onnx', {str(d / 'net.onnx')!r})\n"
        f"m.peek_input_width('sklearn', {str(d / 'pipe.skops')!r})\n"
        f"m.peek_input_width('torch', {str(d / 'net.pt')!r})\n"
        f"m.peek_input_width('torch', {str(d / 'two_pickle.pt')!r})\n"
        "print(','.join(k for k in ('torch', 'onnx', 'onnxruntime', 'sklearn', 'skops', 'numpy') if k in sys.modules))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, check=True)
    assert out.stdout.strip() == "", out.stdout


# --------------------------------------------------------------------------------------
# ONNX
# --------------------------------------------------------------------------------------

def test_onnx_score_matches_onnxruntime_and_torch(d):
    X = _data()
    m = load_model("onnx", d / "net.onnx")
    assert isinstance(m, LoadedModel)
    assert (m.format, m.input_width, m.score_kind, m.threshold) == ("onnx", WIDTH, "logit", 0.0)
    s = m.score(X)
    assert s.dtype == np.float64 and s.shape == (len(X),)
    np.testing.assert_allclose(s, _ort(d / "net.onnx", X, "logit")[:, 0], atol=1e-5)
    np.testing.assert_allclose(s, _torch_forward(_net(), X)[:, 0], atol=1e-5)
    np.testing.assert_array_equal(m.decide(X), (s > 0).astype(np.int64))
    assert m.decide(X).dtype == np.int64
    assert m.describe() == f"onnx model {d / 'net.onnx'}, output 'logit' (logit), {WIDTH} inputs"


def test_onnx_replay_reference_agrees(d):
    X = _data(50)
    for name, out, index in (("net.onnx", "logit", None), ("two.onnx", "prob", None), ("two.onnx", "logits", 1)):
        m = load_model("onnx", d / name, output=out, index=index)
        np.testing.assert_allclose(m.replay_reference(X), m.score(X), atol=1e-5)
        np.testing.assert_allclose(m.replay(X), m.score(X), atol=1e-5)


def test_onnx_output_selection(d):
    X = _data()
    two = _two()
    by_name = load_model("onnx", d / "two.onnx", output="prob")
    assert by_name.score_kind == "prob" and by_name.threshold == 0.5
    np.testing.assert_allclose(by_name.score(X), _torch_forward(two, X, lambda y: y[1])[:, 0], atol=1e-5)
    by_pos = load_model("onnx", d / "two.onnx", output=1)
    np.testing.assert_allclose(by_pos.score(X), by_name.score(X), atol=0)
    col1 = load_model("onnx", d / "two.onnx", output="logits", index=1)
    assert col1.score_kind == "logit"
    Z = _ort(d / "two.onnx", X, "logits")
    # two logit columns: the score is the positive class's log-odds, the decision argmax
    np.testing.assert_allclose(col1.score(X), Z[:, 1] - Z[:, 0], atol=1e-5)
    np.testing.assert_array_equal(col1.decide(X), (Z[:, 1] > Z[:, 0]).astype(np.int64))
    forced = load_model("onnx", d / "two.onnx", output="logits", index=1, score_kind="prob")
    assert (forced.score_kind, forced.threshold) == ("prob", 0.5)


def test_onnx_fixed_batch_is_fed_in_chunks(d):
    X = _data(7)
    m = load_model("onnx", d / "fixed_batch.onnx")
    assert m.input_width == WIDTH
    np.testing.assert_allclose(m.score(X), _torch_forward(_net(), X)[:, 0], atol=1e-5)
    np.testing.assert_allclose(m.replay_reference(X), m.score(X), atol=1e-5)


def test_onnx_old_style_initializer_inputs(d):
    path = d / "old_style.onnx"
    assert peek_input_width("onnx", path) == 4
    m = load_model("onnx", path, index=1)
    X = _data(5, 4)
    W = np.arange(8, dtype=np.float32).reshape(4, 2) / 10
    Z = X.astype(np.float32) @ W
    np.testing.assert_allclose(m.score(X), Z[:, 1] - Z[:, 0], atol=1e-5)


def test_onnx_errors(d):
    net, two = d / "net.onnx", d / "two.onnx"
    _raises(lambda: load_model("onnx", d / "missing.onnx"), "missing.onnx", "does not exist")
    e = _raises(lambda: load_model("onnx", two, output="score"), "two.onnx", "'logits'", "'prob'")
    assert e.path == two
    _raises(lambda: load_model("onnx", two, output=5), "two.onnx", "out of range")
    _raises(lambda: load_model("onnx", two, output="logits", index=2), "two.onnx", "index 2")
    _raises(lambda: load_model("onnx", net, index=1), "net.onnx", "index 1")
    _raises(lambda: load_model("onnx", d / "two_inputs.onnx"), "two_inputs.onnx", "2 graph inputs")
    for bad in ("garbage.onnx", "empty.onnx", "text.onnx", "lr.skops"):
        _raises(lambda: load_model("onnx", d / bad), bad)
    _raises(lambda: load_model("onnx", net, score_kind="odds"), "net.onnx")
    _raises(lambda: load_model("keras", net), "keras")


def test_onnx_wrong_width_on_evaluation(d):
    m = load_model("onnx", d / "net.onnx")
    _raises(lambda: m.score(_data(3, WIDTH + 1)), "net.onnx", f"width {WIDTH}", f"width {WIDTH + 1}")
    _raises(lambda: m.replay_reference(_data(3, WIDTH - 1)), "net.onnx", f"width {WIDTH - 1}")
    _raises(lambda: m.score(np.zeros(WIDTH)), "net.onnx", "2-D")
    assert m.score(np.zeros((0, WIDTH))).shape == (0,)


def test_onnx_peek_agrees_with_onnx_load(d):
    for name in ("net.onnx", "two.onnx", "fixed_batch.onnx"):
        model = onnx.load(str(d / name))
        dims = model.graph.input[0].type.tensor_type.shape.dim
        assert peek_input_width("onnx", d / name) == dims[1].dim_value == WIDTH
    # two inputs of 3 columns each: check's loader refuses them, and lint's peek says the same sentence
    _raises(lambda: peek_input_width("onnx", d / "two_inputs.onnx"), "two_inputs.onnx", "2 graph inputs")
    for bad in ("garbage.onnx", "empty.onnx", "text.onnx", "missing.onnx"):
        _raises(lambda: peek_input_width("onnx", d / bad), bad)


@pytest.mark.skipif(not AC1.exists(), reason="the Fairify benchmark nets are not on this machine")
def test_fairify_ac1():
    assert peek_input_width("onnx", AC1) == 13
    model = onnx.load(str(AC1))
    assert model.graph.input[0].type.tensor_type.shape.dim[1].dim_value == 13
    X = np.random.default_rng(0).integers(0, 10, size=(20, 13)).astype(np.float64)
    logit = load_model("onnx", AC1, output="logit")
    prob = load_model("onnx", AC1, output="prob")
    assert (logit.score_kind, prob.score_kind, logit.input_width) == ("logit", "prob", 13)
    np.testing.assert_allclose(1 / (1 + np.exp(-logit.score(X))), prob.score(X), atol=1e-5)
    np.testing.assert_array_equal(logit.decide(X), prob.decide(X))
    np.testing.assert_allclose(prob.replay(X), prob.score(X), atol=1e-5)


# --------------------------------------------------------------------------------------
# torch
# --------------------------------------------------------------------------------------

def test_torchscript_matches_forward(d):
    X = _data()
    for name in ("net.pt", "traced.pt"):
        m = load_model("torch", d / name)
        assert (m.format, m.input_width, m.score_kind, m.threshold) == ("torch", WIDTH, "logit", 0.0)
        np.testing.assert_allclose(m.score(X), _torch_forward(_net(), X)[:, 0], atol=1e-5)
        np.testing.assert_allclose(m.replay(X), m.score(X), atol=0)
        assert name in m.describe()


def test_a_reversed_view_is_scored_as_its_rows(d):
    # one row of a reversed view counts as C-contiguous (np.ascontiguousarray keeps its negative
    # stride) and torch.from_numpy refused it: the data path's batching re-check failed that way
    X = _data()
    m = load_model("torch", d / "net.pt")
    rev = X[::-1]
    np.testing.assert_array_equal(m.score(rev), m.score(X.copy()[::-1].copy()))
    np.testing.assert_array_equal(m.score(X[::-1][:1]), m.score(X[-1:].copy()))


@pytest.mark.parametrize("head", ["Sigmoid", "Softmax", "nested"])
def test_a_sequential_ending_in_sigmoid_or_softmax_holds_probabilities(tmp_path, head):
    """torch.nn.Sequential(..., Sigmoid()) trained with BCELoss outputs probabilities: read as a
    logit, every point was class 1 (sigmoid > 0) and a label property proved trivially. The last
    layer of a Sequential (scripted or pickled) decides; another module keeps the logit default."""
    lin = torch.nn.Linear(2, 1 if head != "Softmax" else 2)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([[1.0, -1.0]] if head != "Softmax" else [[1.0, -1.0], [-1.0, 1.0]]))
        lin.bias.zero_()
    last = {"Sigmoid": torch.nn.Sigmoid(), "Softmax": torch.nn.Softmax(dim=1),
            "nested": torch.nn.Sequential(torch.nn.Identity(), torch.nn.Sigmoid())}[head]
    net = torch.nn.Sequential(lin, last).eval()
    torch.jit.save(torch.jit.script(net), str(tmp_path / "s.pt"))
    torch.save(net, str(tmp_path / "p.pt"))
    X = np.array([[2.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    for name, trust in (("s.pt", False), ("p.pt", True)):
        m = load_model("torch", tmp_path / name, trust_pickle=trust, index=0 if head == "Softmax" else None)
        assert m.score_kind == "prob", name
        # 1/2 exactly is not above 1/2; two softmax columns read with index = 0 decide by the argmax (s37 h2):
        # [0.5, 0.5] is class 0
        assert list(m.decide(X)) == ([1, 0, 1] if head == "Softmax" else [1, 0, 0])
    assert load_model("torch", tmp_path / "s.pt", score_kind="logit", index=0 if head == "Softmax" else None
                      ).score_kind == "logit"           # the declaration's word


def test_torch_tuple_outputs(d):
    X = _data()
    two = _two()
    for name, trust in (("two.pt", False), ("two_pickle.pt", True)):
        _raises(lambda: load_model("torch", d / name, trust_pickle=trust), name, "returns 2 outputs", "output = i")
        _raises(lambda: load_model("torch", d / name, index=0, trust_pickle=trust), name, "returns 2 outputs")
        _raises(lambda: load_model("torch", d / name, output=0, trust_pickle=trust), name, "2 columns", "index = 1")
        Z = _torch_forward(two, X, lambda y: y[0])
        m0 = load_model("torch", d / name, output=0, index=0, trust_pickle=trust)
        np.testing.assert_allclose(m0.score(X), Z[:, 0] - Z[:, 1], atol=1e-5)
        m1 = load_model("torch", d / name, output=0, index=1, trust_pickle=trust)
        np.testing.assert_allclose(m1.score(X), Z[:, 1] - Z[:, 0], atol=1e-5)
        mp = load_model("torch", d / name, output=1, score_kind="prob", trust_pickle=trust)
        assert mp.threshold == 0.5
        np.testing.assert_allclose(mp.score(X), _torch_forward(two, X, lambda y: y[1])[:, 0], atol=1e-5)
        _raises(lambda: load_model("torch", d / name, output=2, trust_pickle=trust), name, "output 2")
        _raises(lambda: load_model("torch", d / name, output=0, index=2, trust_pickle=trust), name, "index 2")


def test_torch_pickle_needs_trust(d):
    X = _data()
    _raises(lambda: load_model("torch", d / "net_pickle.pt"), "net_pickle.pt", "pickle", "trust pickle")
    m = load_model("torch", d / "net_pickle.pt", trust_pickle=True)
    assert m.input_width == WIDTH
    np.testing.assert_allclose(m.score(X), _torch_forward(_net(), X)[:, 0], atol=1e-5)
    _raises(lambda: load_model("torch", d / "state_dict.pt", trust_pickle=True), "state_dict.pt", "state_dict")


def test_torch_errors(d):
    _raises(lambda: load_model("torch", d / "missing.pt"), "missing.pt", "does not exist")
    for bad in ("garbage.pt", "net.onnx", "lr.skops"):
        _raises(lambda: load_model("torch", d / bad), bad)
        _raises(lambda: load_model("torch", d / bad, trust_pickle=True), bad)
    m = load_model("torch", d / "net.pt")
    _raises(lambda: m.score(_data(3, WIDTH + 2)), "net.pt", f"width {WIDTH}", f"width {WIDTH + 2}")
    _raises(lambda: load_model("torch", d / "net.pt", index=1), "net.pt", "index 1")


def test_torch_peek(d):
    for name in ("net.pt", "two.pt", "traced.pt", "net_pickle.pt", "two_pickle.pt"):
        assert peek_input_width("torch", d / name) == WIDTH, name
    for bad in ("garbage.pt", "net.onnx", "missing.pt"):
        _raises(lambda: peek_input_width("torch", d / bad), bad)


# --------------------------------------------------------------------------------------
# scikit-learn
# --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fitted(d):
    return {name: sio.load(d / name, trusted=sio.get_untrusted_types(file=d / name))
            for name in ("lr.skops", "dt.skops", "pipe.skops")}


def test_sklearn_skops_scores(d, fitted):
    X = _data()
    lr, dt = fitted["lr.skops"], fitted["dt.skops"]
    m = load_model("sklearn", d / "lr.skops")
    assert (m.format, m.input_width, m.score_kind, m.threshold) == ("sklearn", WIDTH, "prob", 0.5)
    np.testing.assert_allclose(m.score(X), lr.predict_proba(X)[:, 1], atol=1e-12)
    np.testing.assert_array_equal(m.decide(X), lr.predict(X))
    m0 = load_model("sklearn", d / "lr.skops", output="predict_proba", index=0)
    np.testing.assert_allclose(m0.score(X), lr.predict_proba(X)[:, 0], atol=1e-12)
    for out in ("decision_function", "logit"):
        md = load_model("sklearn", d / "lr.skops", output=out)
        assert (md.score_kind, md.threshold) == ("logit", 0.0)
        np.testing.assert_allclose(md.score(X), lr.decision_function(X), atol=1e-12)
        np.testing.assert_array_equal(md.decide(X), lr.predict(X))
    mt = load_model("sklearn", d / "dt.skops", output="prob")
    np.testing.assert_allclose(mt.score(X), dt.predict_proba(X)[:, 1], atol=1e-12)
    mp = load_model("sklearn", d / "pipe.skops")
    assert mp.input_width == 5
    np.testing.assert_allclose(mp.score(X[:, :5]), fitted["pipe.skops"].predict_proba(X[:, :5])[:, 1], atol=1e-12)
    assert "predict_proba[:, 1] (prob)" in m.describe()


def test_sklearn_pickles_need_trust(d, fitted):
    X = _data()
    for name, ref in (("lr.pkl", "lr.skops"), ("dt.pickle", "dt.skops"), ("lr.joblib", "lr.skops")):
        _raises(lambda: load_model("sklearn", d / name), name, "pickle", "trust pickle")
        m = load_model("sklearn", d / name, trust_pickle=True)
        np.testing.assert_allclose(m.score(X), fitted[ref].predict_proba(X)[:, 1], atol=1e-12)
        # read by the inert unpickler, without trust: nothing from the file runs
        assert peek_input_width("sklearn", d / name) in (fitted[ref].n_features_in_, None)


def test_sklearn_errors(d):
    _raises(lambda: load_model("sklearn", d / "missing.skops"), "missing.skops", "does not exist")
    e = _raises(lambda: load_model("sklearn", d / "untrusted.skops"), "untrusted.skops", "NotAnEstimatorPart", "skops refused")
    assert "test_models_loaders" in str(e)
    _raises(lambda: load_model("sklearn", d / "dt.skops", output="decision_function"), "dt.skops", "decision_function")
    _raises(lambda: load_model("sklearn", d / "lr.skops", index=2), "lr.skops", "out of range")
    _raises(lambda: load_model("sklearn", d / "lr.skops", output="predict"), "lr.skops", "predict_proba")
    _raises(lambda: load_model("sklearn", d / "lr.txt"), "lr.txt", "extension")
    for bad in ("garbage.skops", "noschema.skops", "net.onnx"):
        _raises(lambda: load_model("sklearn", d / bad), bad)
    _raises(lambda: load_model("sklearn", d / "garbage.pkl", trust_pickle=True), "garbage.pkl")
    m = load_model("sklearn", d / "lr.skops")
    _raises(lambda: m.score(_data(3, WIDTH - 1)), "lr.skops", f"width {WIDTH}", f"width {WIDTH - 1}")


def test_sklearn_peek(d):
    assert peek_input_width("sklearn", d / "lr.skops") == WIDTH
    assert peek_input_width("sklearn", d / "dt.skops") == WIDTH
    assert peek_input_width("sklearn", d / "pipe.skops") == 5
    for bad in ("garbage.skops", "noschema.skops", "missing.skops"):
        _raises(lambda: peek_input_width("sklearn", d / bad), bad)


def test_peek_answers_the_same_every_time(d):
    # how fast peeking is: bench/lint_startup.py (tests never time the machine)
    files = [("onnx", d / "net.onnx"), ("sklearn", d / "pipe.skops"), ("torch", d / "net.pt")]
    first = [peek_input_width(fmt, path) for fmt, path in files]
    for _ in range(3):
        assert [peek_input_width(fmt, path) for fmt, path in files] == first


class _RunsCode:
    def __init__(self, marker: pathlib.Path):
        self.marker = marker

    def __reduce__(self):
        return (pathlib.Path.touch, (self.marker,))


def test_torch_peek_runs_no_code_from_the_file(tmp_path):
    marker = tmp_path / "ran"
    evil = tmp_path / "evil.pt"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("evil/data.pkl", pickle.dumps({"weight": _RunsCode(marker)}, protocol=2))
        zf.writestr("evil/version", "3\n")
    assert peek_input_width("torch", evil) is None
    assert not marker.exists()
    _raises(lambda: load_model("torch", evil), "evil.pt", "trust pickle")
    assert not marker.exists()


_TRUSTED_LIST = """
import importlib, json, sys
from fairspec.models.sklearn_model import import_skops_io
import_skops_io()
from skops.io import _trusted_types as t
ours, torch_ours = sorted(t.SKLEARN_ESTIMATOR_TYPE_NAMES), "torch" in sys.modules
import sklearn.externals.array_api_compat.torch as a     # the adapter is still importable afterwards
importlib.reload(t)        # skops' own list again, now that nothing is skipped: what a plain import trusts
print(json.dumps([ours, torch_ours, a.__name__, sorted(t.SKLEARN_ESTIMATOR_TYPE_NAMES)]))
"""


def test_skops_import_without_torch_trusts_the_same_estimators():
    """fairspec imports skops.io without the torch adapter sklearn's estimator discovery pulls in;
    the estimator types skops trusts must be exactly those of a plain import. One fresh process (was
    two, the second a plain ``import skops.io`` that imported all of scikit-learn and torch once more):
    the plain list is skops' own module run again after the adapter is imported, so sklearn's discovery
    walks every module, the skipped ones included."""
    import json

    r = subprocess.run([sys.executable, "-c", _TRUSTED_LIST], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    ours, torch_ours, adapter, plain = json.loads(r.stdout.splitlines()[-1])
    assert ours == plain and len(ours) > 100
    assert torch_ours is False
    assert adapter == "sklearn.externals.array_api_compat.torch", adapter



_NO_TORCH = """
import json, sys
from pathlib import Path
import numpy as np
folder, how = Path(sys.argv[1]), sys.argv[2]
if how == "load":
    from fairspec.models import load_model
    m = load_model("sklearn", folder / "m.skops")
    X = np.load(folder / "X.npy")
    got = [m.score(X).tolist(), m.decide(X).tolist()]
else:       # the Python API with an in-memory estimator: it writes the object as a .skops file and loads that
    import fairspec
    from sklearn.tree import DecisionTreeClassifier
    est = DecisionTreeClassifier(max_depth=3, random_state=0).fit(np.load(folder / "Xfit.npy"), np.load(folder / "y.npy"))
    got = [(v.status, v.value) for v in fairspec.check(folder / "spec.fair", models={"m": est})]
print(json.dumps([got, "skops.io" in sys.modules, "torch" in sys.modules]))
"""


def test_a_skops_model_loads_without_importing_torch(tmp_path):
    """Loading a .skops file imports skops.io, whose trusted-type list runs scikit-learn's estimator
    discovery, which imports torch through sklearn's vendored array-API adapter (seconds per process).
    fairspec's loader and the Python API (an in-memory estimator, written as a .skops file) import
    skops.io without it: a fresh python loading a plain scikit-learn model has no torch, and the model
    reads as its own predict_proba / predict (the trusted list is the same: the test above). One fresh
    python each, at the same time: the first to import skops.io decides whether torch comes with it."""
    import json

    rng = np.random.default_rng(0)
    Xfit = rng.integers(0, 10, size=(300, 2)).astype(float)
    Xfit[:, 1] = Xfit[:, 1] % 2
    y = ((Xfit[:, 0] + 3 * Xfit[:, 1] + rng.normal(0, 2, 300)) > 6).astype(int)
    est = DecisionTreeClassifier(max_depth=3, random_state=0).fit(Xfit, y)
    sio.dump(est, tmp_path / "m.skops")
    np.save(tmp_path / "Xfit.npy", Xfit)
    np.save(tmp_path / "y.npy", y)
    X = rng.integers(0, 10, size=(50, 2)).astype(np.float32)
    X[:, 1] = X[:, 1] % 2
    np.save(tmp_path / "X.npy", X)
    (tmp_path / "d.csv").write_text("a,s,y\n" + "".join(f"{int(a)},{'MF'[int(s)]},{t}\n" for (a, s), t in zip(Xfit, y)))
    (tmp_path / "spec.fair").write_text("""data d = csv("d.csv", label = y == 1)
features P from d {
  a : int in [0, 9]
  s : {M, F} protected
}
model m = sklearn("m.skops")
encode P for m {
  a : raw
  s : code
}
property parity {
  disparate_impact(m, groups s, data = d) >= 0.8
}
""")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    procs = {how: subprocess.Popen([sys.executable, "-c", _NO_TORCH, str(tmp_path), how], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, env=env) for how in ("load", "api")}
    said = {}
    for how, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        said[how] = json.loads(out.splitlines()[-1])
    (score, decide), skops_loaded, torch_loaded = said["load"]
    assert score == est.predict_proba(X)[:, 1].tolist()
    assert decide == est.predict(X).tolist()
    assert skops_loaded and not torch_loaded
    verdicts, skops_loaded, torch_loaded = said["api"]
    assert len(verdicts) == 1 and verdicts[0][0] in ("holds (estimated)", "violated"), verdicts
    assert skops_loaded and not torch_loaded

def _bad_tree(est):
    """Point the root's left child far outside the node array (scikit-learn reads it unchecked)."""
    t = est.tree_
    st = t.__getstate__()
    nodes = st["nodes"].copy()
    nodes["left_child"][0] = 10**6
    t.__setstate__(dict(st, nodes=nodes))
    return est


@pytest.mark.parametrize("kind", ["tree", "forest"])
def test_a_tree_pointing_outside_itself_is_refused_not_a_crash(tmp_path, kind):
    """Such a file segfaults scikit-learn at predict time; the loader refuses it with one sentence."""
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y = X[:, 0] > 0
    if kind == "tree":
        est = _bad_tree(DecisionTreeClassifier(max_depth=4, random_state=0).fit(X, y))
    else:
        est = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(X, y)
        _bad_tree(est.estimators_[1])
    p = tmp_path / "bad.pkl"
    p.write_bytes(pickle.dumps(est))
    with pytest.raises(ModelLoadError) as e:
        load_model("sklearn", p, trust_pickle=True)
    assert "points outside" in str(e.value) or "point outside" in str(e.value)
    assert str(p) in str(e.value)
    ok = tmp_path / "ok.pkl"
    ok.write_bytes(pickle.dumps(RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(X, y)))
    assert load_model("sklearn", ok, trust_pickle=True) is not None


def test_a_histgradientboosting_with_categorical_features_loads_from_skops(tmp_path):
    """scikit-learn itself stores a functools.partial in a HistGradientBoosting* fitted with
    categorical_features (its _preprocessor's FunctionTransformer(partial(check_array, ...))): such a
    skops file was refused as holding 'types outside scikit-learn', with the hint to rebuild it from
    scikit-learn parts, which it is. A partial is trusted; what it wraps is still judged on its own."""
    import functools

    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.preprocessing import FunctionTransformer

    rng = np.random.default_rng(0)
    X = np.c_[rng.integers(0, 3, 200), rng.random(200)]
    y = (X[:, 0] == 1) ^ (X[:, 1] > 0.7)
    hgb = HistGradientBoostingClassifier(max_iter=5, categorical_features=[0], random_state=0).fit(X, y)
    sio.dump(hgb, tmp_path / "hgb.skops")
    assert "functools.partial" in sio.get_untrusted_types(file=str(tmp_path / "hgb.skops"))
    m = load_model("sklearn", tmp_path / "hgb.skops")
    np.testing.assert_array_equal(m.score(X), hgb.predict_proba(X)[:, 1])
    bad = FunctionTransformer(func=functools.partial(os.system, "true")).fit(np.zeros((3, 2)))
    sio.dump(bad, tmp_path / "bad.skops")
    e = _raises(lambda: load_model("sklearn", tmp_path / "bad.skops"), "bad.skops", "skops refused", "system")
    assert "functools.partial" not in str(e)
