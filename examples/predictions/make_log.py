"""Write decisions.csv: the logged decisions of a screening service, to audit without its model.

The "service" is the Adult example's MLP (examples/adult/models/mlp.onnx) run on the
first 4,000 complete rows of adult.test; each row keeps the applicant's protected
attributes, age, the sample weight (fnlwgt), the logged score (rounded to 4 decimals),
the logged decision (score > 0.5) and the outcome later observed (income > 50K).
Deterministic: a rerun rewrites the same file.

    python examples/predictions/make_log.py
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import onnxruntime as ort

HERE = Path(__file__).resolve().parent
ADULT = HERE.parent / "adult"
COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
           "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
           "income"]


def main() -> None:
    enc = json.loads((ADULT / "models" / "encoding.json").read_text())
    rows = []
    with open(ADULT / "data" / "adult.test", newline="") as f:
        for r in csv.reader(f, skipinitialspace=True):
            if len(r) != len(COLUMNS) or any(v.strip() == "?" for v in r):
                continue
            rows.append(dict(zip(COLUMNS, (v.strip() for v in r))))
            if len(rows) == 4000:
                break
    X = []
    for r in rows:
        x = [(float(r[c["column"]]) - c["min"]) / (c["max"] - c["min"]) for c in enc["numeric"]]
        for c in enc["categorical"]:
            x += [1.0 if r[c["column"]] == k else 0.0 for k in c["categories"]]
        X.append(x)
    sess = ort.InferenceSession(str(ADULT / "models" / "mlp.onnx"), providers=["CPUExecutionProvider"])
    prob = sess.run(["prob"], {"x": np.asarray(X, dtype=np.float32)})[0].reshape(-1)
    with open(HERE / "decisions.csv", "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["applicant", "age", "sex", "race", "weight", "score", "approved", "outcome"])
        for i, (r, p) in enumerate(zip(rows, prob)):
            score = round(float(p), 4)
            w.writerow([f"A{i + 1:05d}", r["age"], r["sex"], r["race"], r["fnlwgt"], f"{score:.4f}",
                        "yes" if score > 0.5 else "no", "1" if r["income"].startswith(">50K") else "0"])


if __name__ == "__main__":
    main()
