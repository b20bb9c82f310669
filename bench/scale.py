"""Scale: group metrics on Adult repeated 1x..1000x (Parquet), and the parallel jobs on 1 / 2 workers.

    nice python bench/scale.py groups   [--copies 1,10,100,1000] [--no-fairlearn]
    nice python bench/scale.py parallel                  # = bench/parallel_jobs.py
    nice python bench/scale.py all [--skip-parallel]
    nice python bench/scale.py recheck [--rows 1000000]   # the batch-tie re-check's cost, printed

The lead's re-run (1x, 10x, 100x with fairlearn; under 2 minutes at load 3 on 2 cores,
most of it fairlearn at 100x) rewrites bench/results/scale.{md,json}:

    nice python bench/scale.py groups --copies 1,10,100

``groups``: the four group-metric properties of examples/adult/adult.fair (mlp_sex and
lr_sex_race disparate impact, dt_parity_by_age statistical parity, mlp_equalized_odds), each
with its bootstrap interval (500 or 1000 resamples), read from Adult's 32,561 rows repeated k
times as Parquet (generated under bench/out/, not committed).  Each run is its own process,
so wall time and peak memory (ru_maxrss) are that run's alone; the libraries both sides use
(onnxruntime, skops, pyarrow) are imported before either clock starts.  The same rows and models go
through fairlearn (MetricFrame; point values only, no bootstrap: fairlearn's row bootstrap at
millions of rows does not fit the budget) where they fit in memory (up to 100x).

``recheck``: the cost of the data backend's batch-tie re-check (fairspec/backends/data/batching.py) on
scikit-learn models whose label is their predict (a runtime that rounds by batch): statistical parity
(bootstrap = 100) and counterfactual flips of g (a label post: predict and the score per counterfactual)
over a synthetic Parquet file of ``--rows`` rows with the re-check off, on, and for an
MLPClassifier also on with the decision taken by predict beside the score (two evaluations per batch, what
the re-check did before an MLP's label was read off its score); the ratio is against the re-check off. A third
model, an MLPClassifier whose output layer is zeroed (every row's probability exactly 1/2, every row near the
threshold: the re-check's worst case), also runs without the re-scoring in batches of other sizes (session 40).

``parallel``: the independent jobs through fairspec's one executor with 1 worker, 2 workers and a
2-worker dask ``LocalCluster``: BM-6's partitions in prove mode (the Fairify network of
REFERENCE.md), PBA over the full Adult test set, and a 1000-resample bootstrap over a
distribution estimated from data.  Ratios are against the 1-worker run of the same process.

The group metrics go to bench/results/scale.{json,md} with the load average; the parallel jobs
are bench/parallel_jobs.py's, which writes bench/results/parallel_jobs.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
ADULT = ROOT / "examples" / "adult"
RESULTS = HERE / "results" / "scale.json"
NAMES = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
         "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
         "income"]
GROUP_PROPS = ["mlp_sex.disparate_impact", "lr_sex_race.disparate_impact", "dt_parity_by_age", "mlp_equalized_odds"]


# ------------------------------------------------------------------ data and spec

def make_parquet(k: int) -> Path:
    """Adult's rows (as text, '?' kept) repeated k times, written batch by batch (bounded memory)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    path = OUT / f"adult_x{k}.parquet"
    if path.exists():
        return path
    OUT.mkdir(exist_ok=True)
    t = pcsv.read_csv(ADULT / "data" / "adult.data", read_options=pcsv.ReadOptions(column_names=NAMES),
                      convert_options=pcsv.ConvertOptions(null_values=[], strings_can_be_null=False,
                                                          column_types={c: pa.string() for c in NAMES}))
    import pyarrow.compute as pc

    cols = {}
    for c in NAMES:
        v = pc.utf8_trim_whitespace(t.column(c))
        cols[c] = pc.cast(v, pa.int64()) if c in ("fnlwgt",) else v
    t = pa.table(cols)
    tmp = path.with_suffix(".tmp")
    with pq.ParquetWriter(tmp, t.schema) as w:
        for _ in range(k):
            w.write_table(t, row_group_size=1 << 17)
    tmp.rename(path)
    return path


def make_spec(k: int) -> Path:
    text = (ADULT / "adult.fair").read_text()
    text = text[:text.index("# Individual fairness")]
    text = re.sub(r'data adult = csv\(.*?missing = \["\?"\],', f'data adult = parquet("{make_parquet(k)}",\n  missing = ["?"],',
                  text, flags=re.S)
    text = text.replace('("models/', f'("{ADULT}/models/')
    path = OUT / f"adult_groups_x{k}.fair"
    path.write_text(text)
    return path


# ------------------------------------------------------------------ one measured run per process

def _preimport() -> None:
    """The libraries both sides use, imported before either clock starts (skops alone takes
    seconds to import: it lists every scikit-learn estimator)."""
    import onnxruntime  # noqa: F401
    import pyarrow.parquet  # noqa: F401
    import skops.io  # noqa: F401


def _child_fairspec(spec: str) -> dict:
    from fairspec.pipeline import check

    _preimport()
    t0 = time.perf_counter()
    r = check(spec)
    wall = time.perf_counter() - t0
    assert not r.has_errors, (r.error, [d.message for d in r.diagnostics])
    return {"wall_s": wall, "verdicts": {v.name: [v.status, v.value, v.bound] for v in r.verdicts},
            "rows": max(v.details.get("rows", 0) for v in r.verdicts if v.details),
            "loads": r.loads}


def _child_fairlearn(parquet: str) -> dict:
    import numpy as np
    import onnxruntime as ort
    import pandas as pd
    import skops.io as sio
    from fairlearn.metrics import (MetricFrame, demographic_parity_difference, demographic_parity_ratio,
                                   equalized_odds_difference, selection_rate)

    _preimport()
    t0 = time.perf_counter()
    import pyarrow.parquet as pq

    # text columns as pandas categoricals (as pyarrow stores them): fairlearn's fastest input
    text = [f.name for f in pq.read_schema(parquet) if str(f.type) in ("string", "large_string")]
    df = pq.read_table(parquet, read_dictionary=text).to_pandas()
    df = df[~(df == "?").any(axis=1)].reset_index(drop=True)
    for c in ("age", "education-num", "hours-per-week", "capital-gain", "capital-loss"):
        df[c] = df[c].astype(np.int64)
    enc = json.loads((ADULT / "models" / "encoding.json").read_text())
    X = np.zeros((len(df), enc["n_features"]), dtype=np.float32)
    for col in enc["columns"]:
        v = df[col["source"]]
        if col["kind"] == "minmax":
            X[:, col["index"]] = (v.to_numpy(np.float64) - col["min"]) / (col["max"] - col["min"])
        else:
            X[:, col["index"]] = (v == col["category"]).to_numpy(np.float32)
    y = (df["income"] == ">50K").to_numpy(np.int64)
    sess = ort.InferenceSession(str(ADULT / "models" / "mlp.onnx"), providers=["CPUExecutionProvider"])
    pred = {"mlp": (sess.run(["logit"], {sess.get_inputs()[0].name: X})[0][:, 0] > 0).astype(np.int64)}
    for name in ("lr", "dt"):
        p = ADULT / "models" / f"{name}.skops"
        pred[name] = sio.load(p, trusted=sio.get_untrusted_types(file=p)).predict(X).astype(np.int64)
    older = np.where(df["age"] >= 40, "older", "not older")
    values = {
        "mlp_sex.disparate_impact": demographic_parity_ratio(y, pred["mlp"], sensitive_features=df["sex"]),
        "lr_sex_race.disparate_impact": MetricFrame(metrics=selection_rate, y_true=y, y_pred=pred["lr"],
                                                    sensitive_features=df[["sex", "race"]]).ratio(),
        "dt_parity_by_age": demographic_parity_difference(y, pred["dt"], sensitive_features=pd.DataFrame(
            {"sex": df["sex"], "older": older})),
        "mlp_equalized_odds": equalized_odds_difference(y, pred["mlp"], sensitive_features=df["race"]),
    }
    return {"wall_s": time.perf_counter() - t0, "values": {k: float(v) for k, v in values.items()}, "rows": len(df)}


def _run_child(kind: str, arg: str, env: dict | None = None) -> dict:
    code = (f"import json, resource, sys; sys.path.insert(0, {str(HERE)!r}); import scale; "
            f"r = scale._child_{kind}({arg!r}); "
            f"r['peak_mib'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024; "
            f"print('@@' + json.dumps(r, default=str))")
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, cwd=ROOT)
    line = next((x for x in p.stdout.splitlines() if x.startswith("@@")), None)
    if line is None:
        return {"error": (p.stderr or p.stdout)[-800:]}
    return json.loads(line[2:])


def bench_groups(copies: list[int], fairlearn: bool) -> list[dict]:
    rows = []
    for k in copies:
        spec = make_spec(k)
        row = {"copies": k, "load_before": os.getloadavg()[0]}
        fs = _run_child("fairspec", str(spec))
        row["fairspec"] = fs
        print(f"  fairspec x{k}: " + json.dumps({x: fs.get(x) for x in ("wall_s", "peak_mib", "rows", "error")}),
              flush=True)
        if fairlearn and k <= 100:
            fl = _run_child("fairlearn", str(OUT / f"adult_x{k}.parquet"))
            row["fairlearn"] = fl
            if "wall_s" in fl and "wall_s" in fs:
                row["time_ratio_fairspec_over_fairlearn"] = round(fs["wall_s"] / fl["wall_s"], 3)
                row["values_agree"] = all(abs(fs["verdicts"][n][1] - fl["values"][n]) < 1e-6 for n in GROUP_PROPS)
        rows.append(row)
        _print_group_row(row)
    return rows


def _print_group_row(row: dict) -> None:
    fs, fl = row["fairspec"], row.get("fairlearn", {})
    if "error" in fs:
        print(f"{row['copies']:>5}x  fairspec error: {fs['error']}", flush=True)
        return
    status = " ".join(v[0][:4] for v in fs["verdicts"].values())
    fl_txt = f"fairlearn {fl['wall_s']:7.2f} s {fl['peak_mib']:7.0f} MiB  ratio {row.get('time_ratio_fairspec_over_fairlearn')}" \
        if "wall_s" in fl else ("fairlearn " + fl["error"][-200:] if fl else "")
    print(f"{row['copies']:>5}x {fs['rows']:>10} rows  fairspec {fs['wall_s']:7.2f} s {fs['peak_mib']:7.0f} MiB  "
          f"[{status}]  {fl_txt}  (load {row['load_before']:.1f})", flush=True)


# ------------------------------------------------------------------ the batch-tie re-check's cost

RECHECK_SPEC = """data d = parquet("{data}", label = y == 1)
features F from d {{
  g : {{a, b}} protected
  x1 : int in [0, 99]
  x2 : int in [0, 99]
}}
model m = sklearn("{model}")
encode F for m {{
  g : code
  x1 : raw
  x2 : raw
}}
property sp {{
  statistical_parity(m, groups g) <= 0.9
  bootstrap = 100
}}
property flips {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  ensure label(m(x)) == label(m(x'))
  using data
}}
"""
#: the properties measured, each in its own check (``--property``): its name, and what the table calls it
RECHECK_PROPS = (("sp", "statistical parity"), ("flips", "counterfactual flips"))


def bench_recheck(n: int) -> list[dict]:
    """Wall time of one group metric over n rows per model and re-check mode (in this process, each
    mode once after a warm-up run)."""
    import warnings

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    import skops.io as sio
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neural_network import MLPClassifier

    from fairspec.backends.data import batching
    from fairspec.pipeline import check

    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    g, x1, x2 = rng.integers(0, 2, n), rng.integers(0, 100, n), rng.integers(0, 100, n)
    y = ((x1 + x2 + 30 * g + rng.normal(0, 20, n)) > 115).astype(np.int64)
    data = OUT / f"recheck_{n}.parquet"
    pq.write_table(pa.table({"g": np.where(g == 1, "b", "a"), "x1": x1, "x2": x2, "y": y}), data)
    X = np.c_[g, x1, x2][:5000].astype(np.float64)
    rows = []
    tie = MLPClassifier((16,), max_iter=300, random_state=0)
    for est, name in ((MLPClassifier((16,), max_iter=300, random_state=0), "MLPClassifier"), (GaussianNB(), "GaussianNB"),
                      (tie, "MLPClassifier at a tie")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y[:5000])
        if est is tie:            # output weights and bias 0: every row's probability exactly 1/2, every row near
            est.coefs_[-1][:] = 0.0
            est.intercepts_[-1][:] = 0.0
        stem = name.replace(" ", "_")
        model = OUT / f"recheck_{stem}.skops"
        sio.dump(est, model)
        spec = OUT / f"recheck_{stem}.fair"
        spec.write_text(RECHECK_SPEC.format(data=data, model=model))
        modes = [("off", {"checked": lambda m: False}), ("on", {})]
        if name == "MLPClassifier":
            modes.append(("on, predict + score", {"_predict_is_score": lambda m: False}))
        if est is tie:            # the re-scoring in batches of other sizes (session 40) switched off
            modes.append(("on, no other batch sizes", {"_other_sizes": lambda P, d, a: np.zeros(len(P), dtype=bool)}))
        for prop, what in RECHECK_PROPS:
            check(spec, only=prop)                           # warm-up: imports, the model's load
            base = None
            for mode, patch in modes:
                saved = {k: getattr(batching, k) for k in patch}
                for k, f in patch.items():
                    setattr(batching, k, f)
                try:
                    t0 = time.perf_counter()
                    r = check(spec, only=prop)
                    wall = time.perf_counter() - t0
                finally:
                    for k, f in saved.items():
                        setattr(batching, k, f)
                v = r.verdicts[0]
                base = wall if base is None else base
                b = v.details.get("batching") or {} if v.details else {}
                row = {"model": name, "property": what, "rows": n, "mode": mode, "wall_s": round(wall, 3),
                       "ratio": round(wall / base, 3), "status": v.status,
                       "near": b.get("near_threshold", b.get("candidates_batch_dependent", 0)),
                       "load": os.getloadavg()[0]}
                rows.append(row)
                print(f"  {name:<14} {what:<21} {n:>9,} rows  re-check {mode:<20} {wall:7.2f} s  "
                      f"x{row['ratio']:.2f}  [{v.status}, {row['near']} near]  (load {row['load']:.1f})", flush=True)
    return rows


def recheck_table(rows: list[dict]) -> list[str]:
    out = ["## The batch-tie re-check's cost: statistical parity and counterfactual flips on scikit-learn models "
           "whose label is predict", "",
           "| model | property | rows | re-check | s | ratio to off | verdict | rows near the threshold "
           "(flips: candidates batch-dependent) | load |",
           "|:---|:---|---:|:---|---:|---:|:---|---:|---:|"]
    for r in rows:
        out.append(f"| {r['model']} | {r.get('property', 'statistical parity')} | {r['rows']:,} | {r['mode']} | "
                   f"{r['wall_s']:.2f} | {r['ratio']:.2f} | {r['status']} | {r['near']} | {r['load']:.1f} |")
    return out + ["", "Counterfactual flips: `label(m(x)) == label(m(x'))` over every row with g flipped (one "
                      "counterfactual a row); where the label is predict and not the score (GaussianNB; the MLP "
                      "with predict + score) each side is evaluated twice, predict and the score it thresholds. "
                      "Re-run: `nice python bench/scale.py recheck --rows 1000000` (prints this table; one run per "
                      "property and mode after a warm-up, in one process)."]


# ------------------------------------------------------------------ the committed table

def table(res: dict) -> str:
    """bench/results/scale.md from bench/results/scale.json."""
    m = res.get("machine", {})
    out = ["# bench/scale.py results", "",
           f"{m.get('cpus')} cores shared with other jobs; load average at the start "
           f"{', '.join(f'{x:.1f}' for x in m.get('load_average_start', []))}, at the end "
           f"{', '.join(f'{x:.1f}' for x in m.get('load_average_end', []))} (of the last run). Each row's load "
           "average when it started is in its last column; where it is above the number of cores, read the "
           "times as upper bounds and the ratio within the row as the comparison.", "",
           "## Group metrics: the four properties of examples/adult (bootstrap intervals), Adult repeated as Parquet",
           "", "| copies | rows | fairspec s | fairspec peak MiB | fairlearn s (point values) | fairlearn peak MiB "
               "| fairspec / fairlearn time | values agree | verdicts | load |",
           "|---:|---:|---:|---:|---:|---:|---:|:---:|:---|---:|"]
    for row in res.get("groups", []):
        fs, fl = row["fairspec"], row.get("fairlearn", {})
        verdicts = ", ".join(v[0] for v in fs.get("verdicts", {}).values())
        out.append(f"| {row['copies']}x | {fs.get('rows', 0):,} | {fs.get('wall_s', float('nan')):.1f} | "
                   f"{fs.get('peak_mib', float('nan')):.0f} | "
                   + (f"{fl['wall_s']:.1f} | {fl['peak_mib']:.0f} | {row.get('time_ratio_fairspec_over_fairlearn')} | "
                      f"{'yes' if row.get('values_agree') else 'no'}" if "wall_s" in fl else "- | - | - | -")
                   + f" | {verdicts} | {row.get('load_before', 0):.1f} |")
    out += ["", "fairspec counts the four properties in one streamed pass of the Parquet file (plus one pass that "
                "fits the models' min-max scaling); fairlearn reads the same rows with pandas (text as categoricals), "
                "encodes them the same way and computes point values with MetricFrame. Re-run: "
                "`nice python bench/scale.py groups --copies 1,10,100` (about 2 minutes on a quiet machine, most of it fairlearn at 100x; "
                "add 1000 for 30 M rows, fairspec only)."]
    if res.get("recheck"):
        out += [""] + recheck_table(res["recheck"])
    out += ["", "The parallel jobs (1 worker, 2 workers, a 2-worker LocalCluster) are bench/parallel_jobs.py's: "
                "bench/results/parallel_jobs.md."]
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ main

def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("groups", "parallel", "all", "table", "recheck"))
    ap.add_argument("--rows", type=int, default=1_000_000, help="with recheck: the data set's rows")
    ap.add_argument("--copies", default="1,10,100,1000")
    ap.add_argument("--no-fairlearn", action="store_true")
    ap.add_argument("--skip-parallel", action="store_true", help="with all: the group metrics only")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args()
    res = json.loads(Path(args.out).read_text()) if Path(args.out).exists() else {}
    if args.what == "table":
        Path(args.out).with_suffix(".md").write_text(table(res))
        print(table(res))
        return
    if args.what == "parallel":
        subprocess.run([sys.executable, str(HERE / "parallel_jobs.py")], check=False)  # its own results files
        return
    if args.what == "recheck":
        res["recheck"] = bench_recheck(args.rows)
        print("\n".join(recheck_table(res["recheck"])))
        Path(args.out).write_text(json.dumps(res, indent=1, default=str) + "\n")
        Path(args.out).with_suffix(".md").write_text(table(res))
        return
    res["machine"] = {"cpus": os.cpu_count(), "load_average_start": os.getloadavg()}
    if args.what in ("groups", "all"):
        copies = [int(x) for x in args.copies.split(",")]
        kept = [r for r in res.get("groups", []) if r["copies"] not in copies]  # rows of sizes not re-run
        res["groups"] = sorted(kept + bench_groups(copies, not args.no_fairlearn), key=lambda r: r["copies"])
    if args.what == "all" and not args.skip_parallel:
        subprocess.run([sys.executable, str(HERE / "parallel_jobs.py")], check=False)  # its own results files
    res["machine"]["load_average_end"] = os.getloadavg()
    Path(args.out).write_text(json.dumps(res, indent=1, default=str) + "\n")
    Path(args.out).with_suffix(".md").write_text(table(res))
    print(table(res))


if __name__ == "__main__":
    main()
