"""Train the demo models of the Adult example, reproducibly.

Run from anywhere:  python examples/adult/train.py

Reads data/adult.data (next to this script), encodes it into ONE shared
46-column matrix (layout below, also written to models/encoding.json) and
writes into models/:

  lr.skops       sklearn LogisticRegression          (skops.io)
  dt.skops       sklearn DecisionTreeClassifier(max_depth=6, random_state=0)
                 both fitted on a DataFrame whose columns are the layout's
                 names below ("age", ..., "workclass=Federal-gov", ...), so
                 they record them (feature_names_in_) and fairspec checks
                 the encode blocks against them
  mlp.onnx       ReLU MLP 46-16-8-1; input "x" float32 [N,46];
                 outputs "logit" [N,1] and "prob" = sigmoid(logit) [N,1]
  mlp.pt         the same MLP as TorchScript; forward(x) -> logit [N,1]
  encoding.json  fitted min/max values and the exact column layout

What a rerun reproduces:
  encoding.json, lr.skops, dt.skops  bit for bit: a rerun rewrites the
                 committed files byte-identically (the sklearn fits are exact
                 on any machine; dump_skops fixes ids and timestamps)
  mlp.onnx, mlp.pt  NOT the committed files. The MLP is trained with fixed
                 seeds, deterministic algorithms and one thread, so a rerun on
                 one machine and torch build rewrites its own files
                 byte-identically; but float32 training takes the CPU's
                 kernels (MKL, ATen's AVX2/AVX512 paths), which round
                 differently: on torch 2.13 (AVX512) the weights differ from
                 the committed ones by up to 1.6e-5, and forcing
                 ATEN_CPU_CAPABILITY=avx2/default or MKL_CBWR gives yet other
                 weights, none the committed ones. The tests and the README's
                 verdicts are about the committed MLP: do not commit a rerun's.

Encoded layout (46 columns):
  0..4   age, education-num, hours-per-week, capital-gain, capital-loss,
         each (v - min) / (max - min), min/max fitted on the 30162 rows
         (float64 arithmetic; cast to float32 only for torch/onnx)
  5..45  one-hot blocks, categories in Python sorted() order:
         workclass (7), marital-status (7), occupation (14),
         relationship (6), race (5), sex (2)
"""

from __future__ import annotations

import json
import os
import random
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "adult.data"
OUT = HERE / "models"

SEED = 0

COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num",
    "marital-status", "occupation", "relationship", "race", "sex",
    "capital-gain", "capital-loss", "hours-per-week", "native-country",
    "income",
]
NUMERIC = ["age", "education-num", "hours-per-week", "capital-gain", "capital-loss"]
CATEGORICAL = ["workclass", "marital-status", "occupation", "relationship", "race", "sex"]
EXPECTED_SIZES = {
    "workclass": 7, "marital-status": 7, "occupation": 14,
    "relationship": 6, "race": 5, "sex": 2,
}
N_FEATURES = 46
N_ROWS = 30162


def load_rows() -> pd.DataFrame:
    df = pd.read_csv(DATA, header=None, names=COLUMNS, dtype=str,
                     keep_default_na=False, skip_blank_lines=True)
    df = df.apply(lambda col: col.str.strip())
    df = df[~(df == "?").any(axis=1)].reset_index(drop=True)
    for c in NUMERIC + ["fnlwgt"]:
        df[c] = df[c].astype(np.int64)
    assert len(df) == N_ROWS, len(df)
    return df


def fit_encoding(df: pd.DataFrame) -> dict:
    numeric = [{"column": c, "min": int(df[c].min()), "max": int(df[c].max())}
               for c in NUMERIC]
    categorical = []
    for c in CATEGORICAL:
        cats = sorted(df[c].unique().tolist())
        assert len(cats) == EXPECTED_SIZES[c], (c, cats)
        categorical.append({"column": c, "categories": cats})
    layout = []
    for n in numeric:
        layout.append({"index": len(layout), "name": n["column"], "kind": "minmax",
                       "source": n["column"], "min": n["min"], "max": n["max"]})
    for block in categorical:
        for cat in block["categories"]:
            layout.append({"index": len(layout), "name": f"{block['column']}={cat}",
                           "kind": "onehot", "source": block["column"], "category": cat})
    assert len(layout) == N_FEATURES, len(layout)
    return {
        "source": "data/adult.data",
        "rows": "no header; whitespace stripped around every value; "
                "rows with '?' in any column dropped",
        "n_rows": int(len(df)),
        "label": {"column": "income", "positive": ">50K"},
        "n_features": N_FEATURES,
        "minmax": "(v - min) / (max - min) in float64; min/max fitted on the n_rows rows",
        "onehot": "categories in Python sorted() order",
        "numeric": numeric,
        "categorical": categorical,
        "columns": layout,
    }


def encode(df: pd.DataFrame, enc: dict) -> np.ndarray:
    parts = []
    for n in enc["numeric"]:
        v = df[n["column"]].to_numpy(dtype=np.float64)
        parts.append(((v - n["min"]) / (n["max"] - n["min"]))[:, None])
    for block in enc["categorical"]:
        v = df[block["column"]].to_numpy()
        parts.append(np.stack([(v == cat) for cat in block["categories"]], axis=1)
                     .astype(np.float64))
    X = np.concatenate(parts, axis=1)
    assert X.shape == (len(df), N_FEATURES), X.shape
    assert (X.sum(axis=1)[:, None] > 0).all()
    return X


def dump_skops(model, path: Path, X: pd.DataFrame) -> None:
    """skops.io.dump, made byte-reproducible.

    skops names array members and numbers nodes by id(), and stamps the zip
    members with the current time; renumber the ids in order of appearance and
    use a fixed timestamp so that rerunning the script gives identical files.
    """
    import io
    import re
    import zipfile

    import skops.io as sio

    src = zipfile.ZipFile(io.BytesIO(sio.dumps(model)))
    schema = src.read("schema.json").decode()
    pat = re.compile(r'("__id__": )(\d+)|"(\d+)\.npy"')
    ids: dict[str, str] = {}
    for m in pat.finditer(schema):
        ids.setdefault(m.group(2) or m.group(3), str(len(ids) + 1))

    def sub(m: re.Match) -> str:
        if m.group(2):
            return m.group(1) + ids[m.group(2)]
        return f'"{ids[m.group(3)]}.npy"'

    new_schema = pat.sub(sub, schema)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            name = info.filename
            if name == "schema.json":
                data = new_schema.encode()
            else:
                name = ids[name[: -len(".npy")]] + ".npy"
            zi = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            zi.compress_type = info.compress_type
            zi.external_attr = info.external_attr
            dst.writestr(zi, data)
    path.write_bytes(buf.getvalue())
    # The rewritten file must load back to the same model (we wrote it: trust it).
    back = sio.load(path, trusted=sio.get_untrusted_types(file=path))
    assert np.array_equal(back.predict_proba(X), model.predict_proba(X))


def seed_everything(seed: int) -> None:
    import torch

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)


def train_sklearn(X: pd.DataFrame, y: np.ndarray):
    from sklearn.linear_model import LogisticRegression
    from sklearn.tree import DecisionTreeClassifier

    lr = LogisticRegression(max_iter=10_000, random_state=SEED).fit(X, y)
    assert lr.n_iter_.max() < 10_000, "LogisticRegression did not converge"
    dt = DecisionTreeClassifier(max_depth=6, random_state=0).fit(X, y)
    return lr, dt


def train_mlp(X: np.ndarray, y: np.ndarray, epochs: int = 10, batch: int = 128):
    import torch
    from torch import nn

    torch.manual_seed(SEED)
    mlp = nn.Sequential(
        nn.Linear(N_FEATURES, 16), nn.ReLU(),
        nn.Linear(16, 8), nn.ReLU(),
        nn.Linear(8, 1),
    )
    xt = torch.from_numpy(X.astype(np.float32))
    yt = torch.from_numpy(y.astype(np.float32))[:, None]
    opt = torch.optim.Adam(mlp.parameters(), lr=1e-3)
    loss_fn = nn.BCEWithLogitsLoss()
    gen = torch.Generator().manual_seed(SEED)
    mlp.train()
    for _ in range(epochs):
        perm = torch.randperm(len(xt), generator=gen)
        for i in range(0, len(xt), batch):
            idx = perm[i:i + batch]
            opt.zero_grad()
            loss = loss_fn(mlp(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
    mlp.eval()
    return mlp


def export_mlp(mlp, onnx_path: Path, pt_path: Path) -> None:
    import torch
    from torch import nn

    class WithProb(nn.Module):
        def __init__(self, net: nn.Module):
            super().__init__()
            self.net = net

        def forward(self, x):
            logit = self.net(x)
            return logit, torch.sigmoid(logit)

    dummy = torch.zeros(2, N_FEATURES, dtype=torch.float32)
    with warnings.catch_warnings():
        # dynamo=False (the TorchScript-based exporter) is deliberate: it gives
        # a plain Gemm/Relu/Sigmoid graph.
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(
            WithProb(mlp).eval(), (dummy,), str(onnx_path),
            dynamo=False, opset_version=17, do_constant_folding=True,
            input_names=["x"], output_names=["logit", "prob"],
            dynamic_axes={"x": {0: "N"}, "logit": {0: "N"}, "prob": {0: "N"}},
        )
    import onnx

    model = onnx.load(str(onnx_path))
    onnx.checker.check_model(model)
    ops = {n.op_type for n in model.graph.node}
    assert ops <= {"Gemm", "MatMul", "Add", "Relu", "Sigmoid", "Identity", "Flatten"}, ops

    scripted = torch.jit.script(mlp)
    scripted.save(str(pt_path))


def main() -> None:
    seed_everything(SEED)
    import torch

    df = load_rows()
    enc = fit_encoding(df)
    X = encode(df, enc)
    y = (df["income"] == ">50K").to_numpy().astype(np.int64)

    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "encoding.json").write_text(json.dumps(enc, indent=2) + "\n")

    # The same matrix, its columns named as the layout: the fitted numbers are
    # those of a fit on X itself (bit for bit), and the models keep the names.
    Xdf = pd.DataFrame(X, columns=[c["name"] for c in enc["columns"]])
    lr, dt = train_sklearn(Xdf, y)
    dump_skops(lr, OUT / "lr.skops", Xdf)
    dump_skops(dt, OUT / "dt.skops", Xdf)

    mlp = train_mlp(X, y)
    export_mlp(mlp, OUT / "mlp.onnx", OUT / "mlp.pt")
    with torch.no_grad():
        logit = mlp(torch.from_numpy(X.astype(np.float32))).numpy()[:, 0]

    print(f"rows {len(df)}, features {X.shape[1]}, positive rate {y.mean():.4f}")
    for n in enc["numeric"]:
        print(f"  {n['column']}: min {n['min']} max {n['max']}")
    print(f"train accuracy  lr  {(lr.predict(Xdf) == y).mean():.4f}")
    print(f"train accuracy  dt  {(dt.predict(Xdf) == y).mean():.4f}")
    print(f"train accuracy  mlp {((logit > 0).astype(np.int64) == y).mean():.4f}")
    for f in sorted(OUT.iterdir()):
        print(f"  wrote {f.relative_to(HERE)} ({f.stat().st_size} bytes)")


if __name__ == "__main__":
    # TorchScript's saved code (constant order, serialization id) depends on
    # Python's string hashing: fix it so that reruns on one machine give
    # identical files (the MLP's weights differ across CPUs: see the top).
    if os.environ.get("PYTHONHASHSEED") != "0":
        env = dict(os.environ, PYTHONHASHSEED="0")
        os.execve(sys.executable, [sys.executable, str(Path(__file__).resolve()), *sys.argv[1:]], env)
    main()
