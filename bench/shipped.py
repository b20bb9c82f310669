"""Models as teams ship them, checked end to end on Adult (issue 23 items 1-2, issue 20 item 6).

    python bench/shipped.py [--rows N] [--timeout 30s]

Each shape is fit on Adult as a pandas data frame and saved the way a team saves it:

* skops Pipeline(ColumnTransformer(OneHotEncoder, StandardScaler, MinMaxScaler, passthrough, drop),
  LogisticRegression / HistGradientBoosting / RandomForest), checked with no encode block, and the
  final estimator alone with the hand-written block a user would otherwise write;
* the LogisticRegression pipeline converted with skl2onnx (one graph input per column);
* XGBoost and LightGBM fit on the data frame (recorded feature names), with an encode block in
  another order than the model's (mapped by name).

For each: lint diagnostics, each property's verdict, value and seconds, and whether the values
equal the hand-written block's. Prints a Markdown table (bench/results/shipped.md).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT / "examples" / "adult" / "data" / "adult.data"
COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
           "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
           "income"]
RACES = ["Amer-Indian-Eskimo", "Asian-Pac-Islander", "Black", "Other", "White"]
RELS = ["Husband", "Not-in-family", "Other-relative", "Own-child", "Unmarried", "Wife"]


def frame(rows: int | None):
    df = pd.read_csv(ADULT, header=None, names=COLUMNS, skipinitialspace=True, na_values=["?"])
    df = df.dropna().reset_index(drop=True)
    if rows:
        df = df.iloc[:rows]
    y = (df["income"] == ">50K").astype(int)
    X = df[["age", "education-num", "hours-per-week", "relationship", "race", "sex", "fnlwgt"]]
    return df, X, y


FEATURES = f'''data adult = csv("adult.csv", label = income == ">50K")
features A from adult {{
  age            : int in [17, 90]
  education_num  : int in [1, 16]  column "education-num"
  hours_per_week : int in [1, 99]  column "hours-per-week"
  relationship   : {{{", ".join(f'"{r}"' for r in RELS)}}}
  race           : {{{", ".join(f'"{r}"' for r in RACES)}}} protected
  sex            : {{Female, Male}} protected
}}
'''

PROPS = '''
property parity {
  statistical_parity(m, groups sex) <= 0.1
}
property odds {
  equalized_odds(m, groups race) <= 0.2
}
property same_sex {
  forall x, x' : A
  require x.* == x'.* except {sex}
  ensure label(m(x)) == label(m(x'))
  timeout = TIMEOUT
}
property close_sex {
  forall x, x' : A
  require x.* == x'.* except {sex}
  ensure |prob(m(x)) - prob(m(x'))| <= 0.3
  timeout = TIMEOUT
}
'''


def fairspec(args, cwd):
    cmd = [sys.executable, "-m", "fairspec", *args]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    return p, time.perf_counter() - t0


def run(spec: Path):
    lint, _ = fairspec(["lint", spec.name, "--format", "json"], spec.parent)
    try:
        diags = [d["code"] for d in json.loads(lint.stdout)["diagnostics"]]
    except Exception:  # noqa: BLE001
        diags = [lint.stdout.strip()[:80] or lint.stderr.strip()[:80]]
    p, secs = fairspec(["check", spec.name, "--format", "json"], spec.parent)
    try:
        props = json.loads(p.stdout)["properties"]
    except Exception:  # noqa: BLE001
        return diags, None, secs, (p.stdout + p.stderr).strip()[-200:]
    return diags, {q["name"]: q for q in props}, secs, None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=None, help="use the first N complete rows of Adult")
    ap.add_argument("--timeout", default="30s", help="budget of each individual-fairness property")
    ap.add_argument("--out", default=None, help="also write the Markdown table here")
    a = ap.parse_args()

    import skops.io as sio
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import MinMaxScaler, OneHotEncoder, StandardScaler

    df, X, y = frame(a.rows)
    work = Path(tempfile.mkdtemp(prefix="fairspec-shipped-"))
    df.to_csv(work / "adult.csv", index=False)
    props = PROPS.replace("TIMEOUT", a.timeout)

    def pre():
        return ColumnTransformer([("oh", OneHotEncoder(categories=[RELS, RACES, ["Female", "Male"]]),
                                   ["relationship", "race", "sex"]),
                                  ("sc", StandardScaler(), ["age"]), ("mm", MinMaxScaler(), ["hours-per-week"]),
                                  ("keep", "passthrough", ["education-num"]), ("d", "drop", ["fnlwgt"])])

    finals = {"LogisticRegression": LogisticRegression(max_iter=2000),
              "HistGradientBoosting": HistGradientBoostingClassifier(max_iter=20, max_depth=3, random_state=0),
              "RandomForest": RandomForestClassifier(n_estimators=10, max_depth=4, random_state=0)}
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, est in finals.items():
            pipe = Pipeline([("pre", pre()), ("clf", est)]).fit(X, y)
            sio.dump(pipe, str(work / f"{name}.skops"))
            sio.dump(pipe.steps[-1][1], str(work / f"{name}_final.skops"))
            ct = pipe.steps[0][1]
            sc, mm = ct.named_transformers_["sc"], ct.named_transformers_["mm"]
            block = ("encode A for m {\n  relationship, race, sex : onehot\n"
                     f"  age : standard(mean = {float(sc.mean_[0])!r}, std = {float(sc.scale_[0])!r})\n"
                     f"  hours_per_week : minmax(lo = {float(mm.data_min_[0])!r}, hi = {float(mm.data_max_[0])!r})\n"
                     "  education_num : raw\n}\n")
            (work / f"{name}.fair").write_text(FEATURES + f'model m = sklearn("{name}.skops")\n' + props)
            (work / f"{name}_hand.fair").write_text(FEATURES + f'model m = sklearn("{name}_final.skops")\n' + block
                                                    + props)
            rows.append((f"skops Pipeline + {name}, no encode block", work / f"{name}.fair",
                         work / f"{name}_hand.fair"))
            if name == "LogisticRegression":
                try:
                    from skl2onnx import convert_sklearn
                    from skl2onnx.common.data_types import FloatTensorType, Int64TensorType, StringTensorType

                    types = [("age", Int64TensorType([None, 1])), ("education-num", Int64TensorType([None, 1])),
                             ("hours-per-week", Int64TensorType([None, 1])),
                             ("relationship", StringTensorType([None, 1])), ("race", StringTensorType([None, 1])),
                             ("sex", StringTensorType([None, 1])), ("fnlwgt", FloatTensorType([None, 1]))]
                    onx = convert_sklearn(pipe, initial_types=types, options={id(est): {"zipmap": False}})
                    (work / "lr.onnx").write_bytes(onx.SerializeToString())
                    (work / "onnx.fair").write_text(
                        FEATURES + 'model m = onnx("lr.onnx", output = "probabilities", index = 1, score = prob)\n'
                        + props.replace("education_num  : int", "education_num  : int"))
                    rows.append(("skl2onnx multi-input ONNX (LogisticRegression pipeline)", work / "onnx.fair",
                                 None))
                except ImportError:
                    pass
        try:
            import xgboost as xgb

            Xd = pd.get_dummies(X.drop(columns=["fnlwgt"]), columns=["relationship", "race", "sex"], dtype=float)
            Xd = Xd[["age", "education-num", "hours-per-week"] + [f"relationship_{r}" for r in RELS]
                    + [f"race_{r}" for r in RACES] + ["sex_Female", "sex_Male"]]
            xgb.XGBClassifier(n_estimators=30, max_depth=3, random_state=0, n_jobs=1).fit(Xd, y) \
                .get_booster().save_model(str(work / "xgb.json"))
            block = ("encode A for m {\n  age, education_num, hours_per_week : raw\n  relationship : onehot\n"
                     "  sex, race : onehot\n}\n")        # sex before race: the model records race first
            (work / "xgb.fair").write_text(FEATURES + 'model m = xgboost("xgb.json")\n' + block + props)
            rows.append(("XGBoost fit on a DataFrame, block in another order", work / "xgb.fair", None))
        except ImportError:
            pass

    out = ["| shape | lint | parity | odds | same_sex | close_sex | same values as hand block | check s |",
           "|---|---|---|---|---|---|---|---|"]

    def cell(q):
        if q is None:
            return "-"
        v = q.get("value")
        how = f" ({q['how']})" if q.get("how") else ""
        return f"{q['status']}{how}" + (f" {v:.4g}" if isinstance(v, (int, float)) else "")

    for label, spec, hand in rows:
        diags, props_got, secs, err = run(spec)
        if props_got is None:
            out.append(f"| {label} | {', '.join(diags) or '-'} | failed: {err} | | | | | {secs:.1f} |")
            continue
        same = "-"
        if hand is not None:
            _, hp, _, _ = run(hand)
            key = lambda d: {k: (q["status"], q.get("how"), q.get("value")) for k, q in d.items()}  # noqa: E731
            same = "yes" if hp is not None and key(hp) == key(props_got) else "NO"
        out.append(f"| {label} | {', '.join(diags) or '-'} | " + " | ".join(
            cell(props_got.get(k)) for k in ("parity", "odds", "same_sex", "close_sex")) + f" | {same} | {secs:.1f} |")
        print(out[-1], flush=True)
    text = "\n".join(out)
    print()
    print(text)
    if a.out:
        Path(a.out).write_text(f"Adult ({len(df)} complete rows), individual fairness timeout {a.timeout}\n\n"
                               + text + "\n")
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    raise SystemExit(main())
