"""Benchmark: PBA fairness (paper 004) on Adult (sex, race), COMPAS (sex), German (age).

For each data set the paper's preprocessing (Sec. 3.1): rows with missing values
dropped, husband/wife renamed to spouse (Adult), categorical features one-hot,
numerical ones min-max scaled to [0, 1], an 80/20 split (seeded). The paper's three
fairness-agnostic architectures (Sec. 3.2, App. A.3: hidden (100, 50), (200, 100),
(500, 100), two output logits, Adam lr 1e-3, cross-entropy) are trained with torch
and exported to ONNX (``bench/out/pba/<data>_<arch>.onnx``, one logit per class;
retrained only when missing or with ``--retrain``).

The PBA points are the test rows. The neighbourhood (Sec. 3.3): every numerical
feature moves by delta units *jointly* in x and x' (1 unit = 1 for counts, ages,
months, hours; 100 for money: Adult capital gain/loss, German credit amount), clipped
to the feature's range in the data; categorical features are fixed; the sensitive
attribute is flipped in x'. The neighbourhood is continuous, as in the paper's LP
(``--integer`` makes integer-valued features move in whole units).

Per (data, attribute, architecture, delta):

* the PBA table (per group: SP, TPR, CFA, RB observed/flipped, PBA observed/flipped
  with desirable/undesirable parts), as in Tables 1-3 and Figs. 2-3;
* points per second of the full procedure (bounds, search, LP, exact MILP) with
  ``--workers`` processes for the LP/MILP stage, RB excluded (it is reported apart);
* unknown points of the plain LP relaxation (the paper's method: one LP per point, with
  the same neuron bounds) against ours with the exact mode;
* a soundness check: every refuted point's witness replayed with onnxruntime and
  onnx's reference evaluator (done by the procedure), every proved point sampled at
  random points and corners of its neighbourhood (any f <= 0 with both predictions
  kept would be a wrong proof).

    python bench/pba.py --data german --arch 100,50 --delta 1
    python bench/pba.py --data adult --attr sex --points 500 --json out.json
    python bench/pba.py                      # everything (long: Adult has ~9,000 test points)

``--json FILE``: for one configuration the object ``{"onnx", "points_per_second",
"points": [{"status", "class", "group", "witness": {"x", "x_prime"} | null}]}``
(statuses of the observed setting, witnesses as model-input vectors); for several,
``{"runs": [{"config": {...}, "result": <that object>}]}``.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_SHARED = ROOT.parent / "shared"
ARCHS = [(100, 50), (200, 100), (500, 100)]
ATTRS = {"adult": ("sex", "race"), "compas": ("sex",), "german": ("age",)}

# The paper's published PBA observed shares at delta 1, fairness-agnostic models (Tables 1-3),
# per architecture: {group: share}. Printed beside ours for orientation (different training runs).
PAPER_PBA_OBS_D1 = {
    ("adult", "sex"): {(100, 50): {"Female": 0.295, "Male": 0.632}, (200, 100): {"Female": 0.374, "Male": 0.547},
                       (500, 100): {"Female": 0.317, "Male": 0.620}},
    ("adult", "race"): {(100, 50): {"Black": 0.592, "White": 0.334}, (200, 100): {"Black": 0.783, "White": 0.222},
                        (500, 100): {"Black": 0.758, "White": 0.231}},
    ("compas", "sex"): {(100, 50): {"Female": 0.478, "Male": 0.410}, (200, 100): {"Female": 0.586, "Male": 0.344},
                        (500, 100): {"Female": 0.714, "Male": 0.124}},
    ("german", "age"): {(100, 50): {"Junior": 0.217, "Senior": 0.800}, (200, 100): {"Junior": 0.455, "Senior": 0.569},
                        (500, 100): {"Junior": 0.480, "Senior": 0.574}},
}


# ------------------------------------------------------------------ data

@dataclass
class Dataset:
    name: str
    X: np.ndarray                 # (n, width) model inputs, scaled to [0, 1]
    y: np.ndarray                 # (n,) 0/1, 1 = desirable outcome
    columns: list                 # input column names
    numeric: list                 # (name, column, unit, lo, hi) in the feature's own units
    sensitive: dict               # attr -> (column of value 0, column of value 1, (name0, name1))
    raw: dict                     # numeric feature -> raw values (n,)


def _onehot(values, name):
    cats = sorted(set(values))
    idx = {c: i for i, c in enumerate(cats)}
    M = np.zeros((len(values), len(cats)))
    M[np.arange(len(values)), [idx[v] for v in values]] = 1.0
    return M, [f"{name}={c}" for c in cats], cats


def _build(name, rows, numeric, categorical, sensitive, label, units) -> Dataset:
    blocks, cols, num_meta, sens, raw = [], [], [], {}, {}
    for f in numeric:
        v = np.array([float(r[f]) for r in rows])
        lo, hi = float(v.min()), float(v.max())
        blocks.append(((v - lo) / ((hi - lo) or 1.0))[:, None])
        num_meta.append((f, len(cols), units.get(f, 1.0), lo, hi))
        raw[f] = v
        cols.append(f)
    for f in categorical:
        M, names, cats = _onehot([r[f] for r in rows], f)
        if f in sensitive:
            if len(cats) != 2:
                raise ValueError(f"sensitive attribute {f} has {len(cats)} values, not 2")
            sens[f] = (len(cols), len(cols) + 1, tuple(cats))
        blocks.append(M)
        cols.extend(names)
    X = np.concatenate(blocks, axis=1)
    y = np.array([label(r) for r in rows], dtype=np.int64)
    return Dataset(name, X, y, cols, num_meta, sens, raw)


def load_adult(shared: Path) -> Dataset:
    names = ["age", "workclass", "fnlwgt", "education", "education_num", "marital_status", "occupation",
             "relationship", "race", "sex", "capital_gain", "capital_loss", "hours_per_week", "native_country",
             "income"]
    rows = []
    for fname, skip in (("adult.data", 0), ("adult.test", 1)):
        with open(shared / "data" / "adult" / fname) as fh:
            for k, line in enumerate(fh):
                if k < skip or not line.strip():
                    continue
                parts = [p.strip() for p in line.strip().rstrip(".").split(",")]
                if len(parts) != len(names) or "?" in parts:
                    continue
                r = dict(zip(names, parts))
                if r["race"] not in ("White", "Black"):   # the paper's race groups: Black and White
                    continue
                if r["relationship"] in ("Husband", "Wife"):
                    r["relationship"] = "Spouse"
                rows.append(r)
    return _build("adult", rows, ["age", "education_num", "capital_gain", "capital_loss", "hours_per_week"],
                  ["workclass", "marital_status", "occupation", "relationship", "race", "sex", "native_country"],
                  {"sex", "race"}, lambda r: r["income"].startswith(">50K"),
                  {"capital_gain": 100.0, "capital_loss": 100.0})


def load_compas(shared: Path) -> Dataset:
    rows = []
    with open(shared / "data" / "compas" / "compas-scores-two-years.csv") as fh:
        rd = csv.reader(fh)
        header = next(rd)
        first = {}
        for i, h in enumerate(header):
            first.setdefault(h, i)
        for rec in rd:
            r = {h: rec[i] for h, i in first.items()}
            try:
                d = int(r["days_b_screening_arrest"])
            except ValueError:
                continue
            if not -30 <= d <= 30 or r["is_recid"] == "-1" or r["c_charge_degree"] == "O" or r["score_text"] == "N/A":
                continue
            rows.append(r)
    return _build("compas", rows, ["age", "juv_fel_count", "juv_misd_count", "juv_other_count", "priors_count"],
                  ["sex", "race", "c_charge_degree"], {"sex"}, lambda r: r["two_year_recid"] == "0", {})


def load_german(shared: Path) -> Dataset:
    names = ["status", "duration", "credit_history", "purpose", "credit_amount", "savings", "employment",
             "installment_rate", "personal_status", "other_debtors", "residence_since", "property", "age_years",
             "other_plans", "housing", "existing_credits", "job", "people_liable", "telephone", "foreign_worker",
             "label"]
    rows = []
    with open(shared / "data" / "german" / "german.data") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) != len(names):
                continue
            r = dict(zip(names, parts))
            r["age"] = "Senior" if int(r["age_years"]) >= 25 else "Junior"
            rows.append(r)
    return _build("german", rows, ["duration", "credit_amount", "installment_rate", "residence_since",
                                   "existing_credits", "people_liable"],
                  ["status", "credit_history", "purpose", "savings", "employment", "personal_status",
                   "other_debtors", "property", "other_plans", "housing", "job", "telephone", "foreign_worker",
                   "age"], {"age"}, lambda r: r["label"] == "1", {"credit_amount": 100.0})


LOADERS = {"adult": load_adult, "compas": load_compas, "german": load_german}


def split(n: int, seed: int):
    perm = np.random.default_rng(seed).permutation(n)
    k = int(round(0.8 * n))
    return np.sort(perm[:k]), np.sort(perm[k:])


# ------------------------------------------------------------------ models

def train_onnx(ds: Dataset, arch, train_idx, path: Path, seed: int, epochs: int) -> dict:
    import torch
    from torch import nn

    torch.manual_seed(seed)
    layers, prev = [], ds.X.shape[1]
    for w in arch:
        layers += [nn.Linear(prev, w), nn.ReLU()]
        prev = w
    layers.append(nn.Linear(prev, 2))
    model = nn.Sequential(*layers)
    X = torch.tensor(ds.X[train_idx], dtype=torch.float32)
    y = torch.tensor(ds.y[train_idx], dtype=torch.long)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    lossf = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(seed)
    t0 = time.perf_counter()
    for _ in range(epochs):
        perm = torch.randperm(len(X), generator=g)
        for s in range(0, len(X), 128):
            b = perm[s:s + 128]
            opt.zero_grad()
            loss = lossf(model(X[b]), y[b])
            loss.backward()
            opt.step()
    model.eval()
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(model, torch.zeros(1, ds.X.shape[1]), str(path), input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "N"}, "logits": {0: "N"}}, dynamo=False)
    return {"train_seconds": round(time.perf_counter() - t0, 2)}


# ------------------------------------------------------------------ one run

def cases(ds: Dataset, attr: str, idx, delta: float, integer: bool):
    """Centres, counterfactuals and the offset box of the points idx."""
    c0, c1, names = ds.sensitive[attr]
    U = ds.X[idx]
    Up = U.copy()
    Up[:, [c0, c1]] = U[:, [c1, c0]]
    cols = np.array([c for _, c, *_ in ds.numeric])
    scale = np.array([1.0 / ((hi - lo) or 1.0) for *_, lo, hi in ds.numeric])
    lo = np.zeros((len(idx), len(cols)))
    hi = np.zeros((len(idx), len(cols)))
    ints = np.zeros(len(cols), dtype=bool)
    for k, (f, _, unit, flo, fhi) in enumerate(ds.numeric):
        v = ds.raw[f][idx]
        a = np.maximum(v - delta * unit, flo)
        b = np.minimum(v + delta * unit, fhi)
        if integer and np.all(ds.raw[f] == np.round(ds.raw[f])):
            a, b = np.ceil(a - 1e-9), np.floor(b + 1e-9)
            ints[k] = True
        lo[:, k], hi[:, k] = np.minimum(a - v, 0), np.maximum(b - v, 0)
    group = U[:, c1].astype(int)            # 0 -> names[0], 1 -> names[1]
    return U, Up, cols, scale, lo, hi, ints, group, list(names)


def sampled_soundness(cs, analysis, score, samples: int = 64, seed: int = 0) -> dict:
    """Sample every proved point's neighbourhood (random points and, for m <= 6, all corners)
    on the real model: a feasible point with f <= 0 would contradict the proof."""
    rng = np.random.default_rng(seed)
    bad = 0
    checked = 0
    m = len(cs.cols)
    corners = None
    if 0 < m <= 6:
        corners = np.array(np.meshgrid(*[[0, 1]] * m)).reshape(m, -1).T
    for side, status in ((1.0, analysis.observed), (-1.0, analysis.flipped)):
        idx = np.flatnonzero(status == "proved")
        if len(idx) == 0:
            continue
        lo, hi = cs.lo[idx], cs.hi[idx]
        Ds = [lo + rng.random((samples,) + lo.shape) * (hi - lo)]
        if corners is not None:
            Ds += [lo + c * (hi - lo) for c in corners]
        for D in (Ds[0][s] for s in range(samples)):
            bad += _violations(cs, idx, D, side, score)
        for D in Ds[1:]:
            bad += _violations(cs, idx, D, side, score)
        checked += len(idx)
    return {"proved_points_checked": checked, "sampled_counterexamples": int(bad)}


def _violations(cs, idx, D, side, score) -> int:
    X, Xp = cs.inputs(idx, D)
    g = score(np.concatenate([X, Xp]))
    gx, gp = g[:len(idx)], g[len(idx):]
    c = cs.cls[idx]
    sg = np.where(c == 1, 1.0, -1.0)
    keep = ((gx > 0).astype(int) == c) & ((gp > 0).astype(int) == c)
    f = side * sg * (gx - gp)
    return int((keep & (f <= -1e-5)).sum())


def run_one(ds, attr, arch, delta, args, onnx_path, test_idx, console):
    from fairspec.backends.pba import CaseSet, aggregate, analyse, logit_difference_net, render_table, write_chart
    from fairspec.models import load_model
    from fairspec.models.network import from_onnx

    net = logit_difference_net(from_onnx(onnx_path, output="logits", index=0), positive=1)
    cols_m = [load_model("onnx", onnx_path, output="logits", index=i, score_kind="logit") for i in (1, 0)]

    def score(X):
        return cols_m[0].score(X) - cols_m[1].score(X)

    def replay(X):
        return cols_m[0].replay(X) - cols_m[1].replay(X)

    idx = test_idx
    if args.points and len(idx) > args.points:
        idx = np.sort(np.random.default_rng(args.seed).choice(idx, args.points, replace=False))
    U, Up, cols, scale, lo, hi, ints, group, gnames = cases(ds, attr, idx, delta, args.integer)
    cs = CaseSet(net, U, Up, cols, scale, lo, hi, ints, ds.y[idx])
    res = analyse(cs, score=score, replay=replay, mode="exact", engine=args.engine, time_limit=args.time_limit,
                  case_limit=args.case_limit, workers=args.workers, rb=not args.no_rb, rb_time=args.time_limit / 4)
    pba_seconds = res.seconds["total"] - res.seconds.get("rb", 0.0)
    pps = int(res.eligible.sum()) / max(pba_seconds, 1e-9)     # the points PBA verifies
    lp = None
    if not args.no_lp_baseline:
        lp = analyse(cs, score=score, mode="lp", engine="highs", time_limit=args.time_limit, workers=args.workers,
                     rb=False)
    sound = sampled_soundness(cs, res, score, samples=args.samples, seed=args.seed)
    gp = 1 - group
    rb_p = res.rb_p if res.rb_p is not None else None
    agg = aggregate(gnames, row_group=group, row_label=ds.y[idx].astype(bool), row_pred=res.pred_x,
                    case_row=np.arange(len(idx)), case_group_x=group, case_group_p=gp, case_class=ds.y[idx],
                    case_eligible=res.eligible, case_same=res.pred_x == res.pred_p, obs_status=res.observed,
                    flip_status=res.flipped, rb_x=res.rb_x, rb_p=rb_p)
    title = f"{ds.name} / {attr} / {arch} / delta {delta:g}"
    if console is not None:
        render_table(agg, console, title=title)
    if args.chart:
        out = Path(args.out) / f"{ds.name}_{attr}_{'-'.join(map(str, arch))}_d{delta:g}.png"
        write_chart(agg, out, title=title)
    unk = int(((res.observed == "unknown") | (res.flipped == "unknown")).sum())
    unk_lp = None if lp is None else int(((lp.observed == "unknown") | (lp.flipped == "unknown")).sum())
    points = []
    for k in np.flatnonzero(res.eligible):      # misclassified points are not PBA points (Eq. 3)
        st = res.observed[k]
        w = res.witness_obs.get(int(k))
        points.append({"status": st, "class": int(ds.y[idx][k]), "group": gnames[group[k]],
                       "witness": None if w is None else {"x": [float(v) for v in w[0][0]],
                                                          "x_prime": [float(v) for v in w[1][0]]}})
    summary = {"data": ds.name, "attr": attr, "arch": list(arch), "delta": delta, "points": len(idx),
               "eligible": int(res.eligible.sum()), "points_per_second": round(pps, 2),
               "pba_seconds": round(pba_seconds, 3), "rb_seconds": res.seconds.get("rb"),
               "unknown_exact": unk, "unknown_lp_only": unk_lp,
               "lp_only_seconds": None if lp is None else lp.seconds["total"],
               "stages": res.counts.get("stages"), "seconds": res.seconds, "soundness": sound,
               "overall": agg.overall, "table": agg.to_json()["rows"], "notes": res.notes}
    paper = PAPER_PBA_OBS_D1.get((ds.name, attr), {}).get(tuple(arch))
    if paper and delta == 1:
        summary["paper_pba_observed_d1"] = paper
    result = {"onnx": str(onnx_path), "points_per_second": round(pps, 2), "points": points}
    return summary, result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="adult,compas,german")
    ap.add_argument("--attr", default=None, help="sensitive attribute(s), e.g. sex or race (Adult)")
    ap.add_argument("--arch", default=None, help="e.g. 100,50 (default: all three)")
    ap.add_argument("--delta", default="1,2,3")
    ap.add_argument("--points", type=int, default=None, help="a seeded subset of the test points")
    ap.add_argument("--json", default=None)
    ap.add_argument("--shared", default=str(DEFAULT_SHARED))
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "pba"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--retrain", action="store_true")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--engine", default="highs", choices=("highs", "scip"))
    ap.add_argument("--time-limit", type=float, default=600.0, help="budget of the LP/MILP stage per run (s)")
    ap.add_argument("--case-limit", type=float, default=10.0, help="MILP time limit per point (s)")
    ap.add_argument("--integer", action="store_true", help="integer-valued features move in whole units")
    ap.add_argument("--no-lp-baseline", action="store_true")
    ap.add_argument("--no-rb", action="store_true")
    ap.add_argument("--samples", type=int, default=64, help="random samples per proved point (soundness check)")
    ap.add_argument("--chart", action="store_true", help="write a bar chart per run into --out")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)

    from rich.console import Console

    console = None if args.quiet else Console()
    shared = Path(args.shared)
    archs = [tuple(int(v) for v in args.arch.split(","))] if args.arch else ARCHS
    deltas = [float(v) for v in args.delta.split(",")]
    out_dir = Path(args.out)
    summaries, results = [], []
    for dname in args.data.split(","):
        ds = LOADERS[dname](shared)
        train_idx, test_idx = split(len(ds.y), args.seed)
        attrs = ATTRS[dname] if args.attr is None else [a for a in args.attr.split(",") if a in ATTRS[dname]]
        for arch in archs:
            onnx_path = out_dir / f"{dname}_{'-'.join(map(str, arch))}_s{args.seed}.onnx"
            info = {}
            if args.retrain or not onnx_path.exists():
                info = train_onnx(ds, arch, train_idx, onnx_path, args.seed, args.epochs)
            from fairspec.models import load_model

            m1 = load_model("onnx", onnx_path, output="logits", index=1, score_kind="logit")
            m0 = load_model("onnx", onnx_path, output="logits", index=0, score_kind="logit")
            acc = float(((m1.score(ds.X[test_idx]) > m0.score(ds.X[test_idx])).astype(int) == ds.y[test_idx]).mean())
            for attr in attrs:
                for delta in deltas:
                    s, r = run_one(ds, attr, arch, delta, args, onnx_path, test_idx, console)
                    s.update({"test_accuracy": round(acc, 4), **info})
                    summaries.append(s)
                    results.append(({"data": dname, "attr": attr, "arch": list(arch), "delta": delta}, r))
                    out_dir.mkdir(parents=True, exist_ok=True)
                    (out_dir / "summary.json").write_text(json.dumps(summaries, indent=1, default=str))
                    print(f"{dname}/{attr} {arch} delta {delta:g}: {s['points_per_second']} points/s, unknown "
                          f"{s['unknown_exact']} (plain LP {s['unknown_lp_only']})", file=sys.stderr, flush=True)
                    if console is not None:
                        console.print(
                            f"[bold]{dname}/{attr} {arch} delta {delta:g}[/]: {s['points']} points "
                            f"({s['eligible']} eligible), {s['points_per_second']} points/s, unknown "
                            f"{s['unknown_exact']} (plain LP: {s['unknown_lp_only']}), stages {s['stages']}, "
                            f"sampled counterexamples to proofs: {s['soundness']['sampled_counterexamples']}, "
                            f"accuracy {acc:.3f}")
                        if "paper_pba_observed_d1" in s:
                            ours = {r['group']: r['pba_observed'] for r in s['table']}
                            console.print(f"   PBA observed, ours {ours} / paper {s['paper_pba_observed_d1']}")
    if args.json:
        if len(results) == 1:
            payload = results[0][1]
        else:
            payload = {"runs": [{"config": c, "result": r} for c, r in results]}
        Path(args.json).write_text(json.dumps(payload))
    summary_path = out_dir / "summary.json"
    out_dir.mkdir(parents=True, exist_ok=True)
    summary_path.write_text(json.dumps(summaries, indent=1, default=str))
    if console is not None:
        console.print(f"summary: {summary_path}")
    return summaries


if __name__ == "__main__":
    main()
