"""The example models under examples/ exist, load and agree with each other."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT / "examples" / "adult"
FAIRIFY = ROOT / "examples" / "fairify"

ADULT_FILES = [
    "data/adult.data", "data/adult.test", "data/adult.names",
    "models/lr.skops", "models/dt.skops", "models/mlp.onnx", "models/mlp.pt",
    "models/encoding.json", "train.py", "README.md",
]
FAIRIFY_FILES = ["models/AC-1.onnx", "data/AC.csv", "domains_AC.json", "README.md"]

COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num",
    "marital-status", "occupation", "relationship", "race", "sex",
    "capital-gain", "capital-loss", "hours-per-week", "native-country",
    "income",
]


@pytest.mark.parametrize("rel", ADULT_FILES)
def test_adult_file_exists(rel):
    assert (ADULT / rel).is_file()


@pytest.mark.parametrize("rel", FAIRIFY_FILES)
def test_fairify_file_exists(rel):
    assert (FAIRIFY / rel).is_file()


def test_adult_models_small():
    total = sum(p.stat().st_size for p in (ADULT / "models").iterdir())
    assert total < 1_000_000


def _adult_rows(n: int) -> list[dict[str, str]]:
    """The first n rows of adult.data without '?', as stripped strings."""
    rows = []
    with open(ADULT / "data" / "adult.data") as f:
        for line in f:
            vals = [v.strip() for v in line.split(",")]
            if len(vals) != len(COLUMNS) or "?" in vals:
                continue
            rows.append(dict(zip(COLUMNS, vals)))
            if len(rows) == n:
                break
    return rows


def _encode(rows: list[dict[str, str]], enc: dict) -> np.ndarray:
    """Encode rows following encoding.json's column layout (float64)."""
    cols = enc["columns"]
    X = np.zeros((len(rows), len(cols)), dtype=np.float64)
    for i, row in enumerate(rows):
        for c in cols:
            if c["kind"] == "minmax":
                v = float(row[c["source"]])
                X[i, c["index"]] = (v - c["min"]) / (c["max"] - c["min"])
            else:
                assert c["kind"] == "onehot"
                X[i, c["index"]] = 1.0 if row[c["source"]] == c["category"] else 0.0
    return X


@pytest.fixture(scope="module")
def encoding() -> dict:
    return json.loads((ADULT / "models" / "encoding.json").read_text())


@pytest.fixture(scope="module")
def adult_X(encoding) -> np.ndarray:
    return _encode(_adult_rows(200), encoding)


def test_encoding_layout(encoding, adult_X):
    cols = encoding["columns"]
    assert len(cols) == encoding["n_features"] == 46
    assert [c["index"] for c in cols] == list(range(46))
    assert [c["name"] for c in cols[:5]] == [
        "age", "education-num", "hours-per-week", "capital-gain", "capital-loss"]
    blocks = [c["source"] for c in cols[5:]]
    assert list(dict.fromkeys(blocks)) == [
        "workclass", "marital-status", "occupation", "relationship", "race", "sex"]
    for b in set(blocks):
        cats = [c["category"] for c in cols[5:] if c["source"] == b]
        assert cats == sorted(cats)
    assert adult_X.shape == (200, 46)
    # exactly one hot per block (6 blocks), scaled values in [0, 1]
    assert np.all(adult_X[:, 5:].sum(axis=1) == 6)
    assert np.all((adult_X[:, :5] >= 0) & (adult_X[:, :5] <= 1))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit.load
def test_onnx_mlp_matches_torchscript(adult_X):
    ort = pytest.importorskip("onnxruntime")
    torch = pytest.importorskip("torch")
    x = adult_X.astype(np.float32)

    sess = ort.InferenceSession(str(ADULT / "models" / "mlp.onnx"),
                                providers=["CPUExecutionProvider"])
    assert [i.name for i in sess.get_inputs()] == ["x"]
    assert [o.name for o in sess.get_outputs()] == ["logit", "prob"]
    logit, prob = sess.run(["logit", "prob"], {"x": x})
    assert logit.shape == prob.shape == (200, 1)
    np.testing.assert_allclose(prob, 1.0 / (1.0 + np.exp(-logit.astype(np.float64))),
                               atol=1e-6)

    module = torch.jit.load(str(ADULT / "models" / "mlp.pt"))
    module.eval()
    with torch.no_grad():
        ts = module(torch.from_numpy(x)).numpy()
    assert ts.shape == (200, 1)
    np.testing.assert_allclose(logit, ts, atol=1e-5, rtol=0)


def test_onnx_mlp_ops():
    onnx = pytest.importorskip("onnx")
    model = onnx.load(str(ADULT / "models" / "mlp.onnx"))
    ops = {n.op_type for n in model.graph.node}
    assert ops <= {"Gemm", "MatMul", "Add", "Relu", "Sigmoid", "Identity", "Flatten"}


def _load_skops(path: Path):
    sio = pytest.importorskip("skops.io")
    untrusted = sio.get_untrusted_types(file=path)
    bad = [t for t in untrusted if not t.startswith(("sklearn.", "numpy."))]
    assert not bad, bad
    return sio.load(path, trusted=untrusted)


@pytest.mark.parametrize("name,cls", [("lr", "LogisticRegression"),
                                      ("dt", "DecisionTreeClassifier")])
def test_sklearn_models_load(name, cls, adult_X):
    model = _load_skops(ADULT / "models" / f"{name}.skops")
    assert type(model).__name__ == cls
    assert model.n_features_in_ == 46
    assert list(model.classes_) == [0, 1]
    pred = model.predict(adult_X)
    assert pred.shape == (200,)
    if name == "dt":
        assert model.get_depth() <= 6


def test_fairify_ac1_accuracy():
    ort = pytest.importorskip("onnxruntime")
    pd = pytest.importorskip("pandas")
    df = pd.read_csv(FAIRIFY / "data" / "AC.csv")
    domains = json.loads((FAIRIFY / "domains_AC.json").read_text())
    features = domains["feature_order"]
    assert len(features) == 13
    test = df[df["split"] == "test"]
    assert len(test) == domains["n_test"]
    x = test[features].to_numpy(dtype=np.float32)
    sess = ort.InferenceSession(str(FAIRIFY / "models" / "AC-1.onnx"),
                                providers=["CPUExecutionProvider"])
    logit = sess.run(["logit"], {"x": x})[0][:, 0]
    acc = float(((logit > 0).astype(int) == test["label"].to_numpy()).mean())
    assert round(acc, 4) == 0.8524
