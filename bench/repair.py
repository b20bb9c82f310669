"""FairRepair benchmark: repair goals on Adult, German and COMPAS, decision trees and 30-tree forests.

    nice python bench/repair.py [--datasets adult,german,compas] [--models tree,forest]
                                [--sensitive sex,race,"sex x race"] [--c 0.7,0.8,0.9] [--alpha 1.05,1.2]
                                [--timeout 300] [--solvers] [--out bench/results/repair.json]

A subset (e.g. `--models forest --data adult --sensitive sex`) replaces only its own rows of the
results file (same data, model, groups, c, alpha); the other rows, and the findings written
under "## Findings" in the .md, are kept.  `--fresh` starts the file anew.

For each data set a spec is generated (data, features, one-hot / min-max encoding); a
DecisionTreeClassifier and a 30-tree RandomForestClassifier are trained on an 80% split (the
paper's 80/20) through fairspec's own encoding and saved with skops; then `fairspec check` runs
one `repair` block per (sensitive groups, c in {0.7, 0.8, 0.9}, alpha in {1.05, 1.2}) over the
whole data set (the paper repairs on the data it trains on), writing each repaired model, loading
it back and re-verifying the goal.  The table gives time, achieved / minimal semantic difference,
the accuracy change, and the paper's figures beside.  `--solvers` also times the exact optimiser
(HiGHS MILP, SCIP MILP, z3 Optimize as the paper's MaxSMT, python-sat RC2) on the same flip
instances (HiGHS in its aggregated form, one count per class of interchangeable cells, as fairspec
runs it; the others with one binary per cell).  Data are read from ../shared/data (relative to the repository).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
if not SHARED.exists():
    SHARED = Path("/work/shared/data")
sys.path.insert(0, str(REPO))

RUN_STARTED = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
C_VALUES = (0.7, 0.8, 0.9)
ALPHAS = (1.05, 1.2)
PAPER = {  # FairRepair (the paper, section VIII): average repair times
    ("adult", "tree"): "under 5 min on average (full Adult, 48,842 rows)",
    ("adult", "forest"): "about 30 min (30 trees, full Adult)",
    ("german", "tree"): "seconds (1,000 rows)",
    ("german", "forest"): "-",
    ("compas", "tree"): "- (not in the paper)",
    ("compas", "forest"): "- (not in the paper)",
}


# ------------------------------------------------------------------ the data sets, cleaned to a CSV

def adult() -> tuple[pd.DataFrame, dict]:
    cols = ["age", "workclass", "fnlwgt", "education", "education_num", "marital_status", "occupation",
            "relationship", "race", "sex", "capital_gain", "capital_loss", "hours_per_week", "native_country",
            "income"]
    df = pd.read_csv(SHARED / "adult" / "adult.data", header=None, names=cols, skipinitialspace=True, dtype=str)
    df = df.replace("?", np.nan).dropna()
    df["label"] = np.where(df.income.str.strip() == ">50K", "yes", "no")
    num = ["age", "education_num", "hours_per_week", "capital_gain", "capital_loss"]
    cat = ["workclass", "marital_status", "occupation", "relationship", "race", "sex"]
    return df[num + cat + ["label"]], {"num": num, "cat": cat, "groups": {"sex": "sex", "race": "race",
                                                                         "sex x race": "sex x race"}}


def german() -> tuple[pd.DataFrame, dict]:
    cols = ["checking", "duration", "history", "purpose", "amount", "savings", "employment", "rate",
            "personal_status", "debtors", "residence", "property", "age", "plans", "housing", "credits", "job",
            "liable", "telephone", "foreign_worker", "label"]
    df = pd.read_csv(SHARED / "german" / "german.data", sep=" ", header=None, names=cols, dtype=str)
    df["label"] = np.where(df.label == "1", "yes", "no")
    num = ["duration", "amount", "rate", "residence", "age", "credits", "liable"]
    cat = [c for c in cols if c not in num and c != "label"]
    # the paper's sensitive attributes: personal status and sex (4 groups), foreign worker (2)
    return df[num + cat + ["label"]], {"num": num, "cat": cat, "groups": {
        "sex": "personal_status", "race": "foreign_worker", "sex x race": "personal_status x foreign_worker"}}


def compas() -> tuple[pd.DataFrame, dict]:
    df = pd.read_csv(SHARED / "compas" / "compas-scores-two-years.csv")
    # the usual ProPublica filter
    df = df[(df.days_b_screening_arrest <= 30) & (df.days_b_screening_arrest >= -30) & (df.is_recid != -1)
            & (df.c_charge_degree != "O") & (df.score_text != "N/A")]
    df = df.assign(label=np.where(df.two_year_recid == 0, "yes", "no"))   # favourable: no recidivism
    num = ["age", "juv_fel_count", "juv_misd_count", "juv_other_count", "priors_count"]
    cat = ["c_charge_degree", "race", "sex"]
    out = df[num + cat + ["label"]].copy()
    for c in num:
        out[c] = out[c].astype(int).astype(str)
    return out, {"num": num, "cat": cat, "groups": {"sex": "sex", "race": "race", "sex x race": "sex x race"}}


DATASETS = {"adult": adult, "german": german, "compas": compas}


def _q(v: str) -> str:
    return json.dumps(str(v))


def write_spec(name: str, df: pd.DataFrame, meta: dict, work: Path, model_file: Path, blocks: str) -> Path:
    csv = work / f"{name}.csv"
    if not csv.exists():
        df.to_csv(csv, index=False)
    lines = [f'data {name} = csv({_q(csv)}, label = label == "yes")', "", f"features F from {name} {{"]
    prot = {a.strip() for g in meta["groups"].values() for a in g.split(" x ")}
    for c in meta["num"]:
        v = df[c].astype(float)
        lines.append(f"  {c} : int in [{int(v.min())}, {int(v.max())}]")
    for c in meta["cat"]:
        cats = sorted(df[c].astype(str).unique())
        lines.append(f"  {c} : {{{', '.join(_q(x) for x in cats)}}}" + ("  protected" if c in prot else ""))
    lines += ["}", "", f"model m = sklearn({_q(model_file)})", "", "encode F for m {",
              f"  {', '.join(meta['num'])} : minmax", f"  {', '.join(meta['cat'])} : onehot", "}", "", blocks]
    p = work / f"{name}_{model_file.stem}.fair"
    p.write_text("\n".join(lines))
    return p


def train(name, df, meta, work: Path, kind: str, seed: int = 0) -> tuple[Path, float]:
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.tree import DecisionTreeClassifier

    from fairspec.models.sklearn_model import import_skops_io
    from fairspec.runtime.context import Context
    from fairspec.sema.check import check_file

    sio = import_skops_io()
    model = work / f"{name}_{kind}.skops"
    sio.dump(DecisionTreeClassifier().fit([[0.0], [1.0]], [0, 1]), model)   # placeholder to read the encoding
    spec = write_spec(name, df, meta, work, model, "")
    ctx = Context(check_file(spec, peek_models=False).spec)
    rows = ctx.rows("F", name)
    X = ctx.model_input("m", rows.frame.values, rows.frame.n_rows)
    y = rows.labels.astype(int)
    rng = np.random.default_rng(seed)
    tr = rng.random(len(y)) < 0.8
    est = (DecisionTreeClassifier(random_state=seed, min_samples_leaf=5) if kind == "tree"
           else RandomForestClassifier(n_estimators=30, random_state=seed, min_samples_leaf=5, n_jobs=1))
    est.fit(X[tr], y[tr])
    sio.dump(est, model)
    return model, float((est.predict(X[~tr]) == y[~tr]).mean())


def repair_blocks(meta, timeout: float, out_dir: Path, tag: str, c_values=C_VALUES, alphas=ALPHAS,
                  sensitive=None) -> tuple[str, list[dict]]:
    blocks, rows = [], []
    for gname, groups in meta["groups"].items():
        if sensitive is not None and gname not in sensitive:
            continue
        for c in c_values:
            for a in alphas:
                pname = f"r_{gname.replace(' x ', '_x_')}_{int(c * 100)}_{int(a * 100)}"
                out = out_dir / f"{tag}_{pname}.skops"
                blocks.append(f"repair {pname} for m {{\n  goal passing_rate_ratio(groups {groups}) >= {c}\n"
                              f"  bound semantic_difference <= {a} * minimal\n  write {_q(out)}\n"
                              f"  timeout = {int(timeout)}s\n}}\n")
                rows.append({"property": pname, "groups": gname, "attrs": groups, "c": c, "alpha": a})
    return "\n".join(blocks), rows


def run_dataset(name: str, kinds, timeout: float, work: Path, results: list, solvers: bool, sink,
                compare_timeout: float = 30.0, c_values=C_VALUES, alphas=ALPHAS, sensitive=None) -> None:
    from fairspec.pipeline import check

    df, meta = DATASETS[name]()
    for kind in kinds:
        t0 = time.perf_counter()
        model, test_acc = train(name, df, meta, work, kind)
        train_s = time.perf_counter() - t0
        blocks, rows = repair_blocks(meta, timeout, work, f"{name}_{kind}", c_values, alphas, sensitive)
        if not rows:
            continue
        spec = write_spec(name, df, meta, work, model, blocks)
        for r in rows:
            t1 = time.perf_counter()
            rep = check(spec, only=r["property"])
            wall = time.perf_counter() - t1
            if rep.error:
                r.update(status="error", reason=rep.error)
            else:
                v = rep.verdicts[0]
                d = v.details
                r.update(status=v.label, seconds=round(v.seconds, 3), wall=round(wall, 3),
                         solver_seconds=d.get("solver_seconds"), minimal=d.get("minimal"), achieved=d.get("achieved"),
                         rows=d.get("rows"), rows_changed=d.get("rows_changed"), stage=d.get("stage"),
                         paths_flipped=d.get("paths_flipped"), paths_refined=d.get("paths_refined"),
                         leaves_patched=d.get("leaves_patched"), paths_optimal=d.get("paths_optimal"),
                         accuracy_before=d.get("accuracy_before"), accuracy_after=d.get("accuracy_after"),
                         ratio_before=min((p["ratio"] or 0) for p in d["pairs_before"]) if d.get("pairs_before") else None,
                         ratio_after=min((p["ratio"] or 0) for p in d["pairs_after"]) if d.get("pairs_after") else None,
                         reverified=d.get("reverified"), written=d.get("written"), reason=v.reason)
            r.update(dataset=name, model=kind, test_accuracy=round(test_acc, 4), train_seconds=round(train_s, 2),
                     load=[round(x, 2) for x in os.getloadavg()], run=RUN_STARTED)
            results.append(r)
            sink(r)
        if solvers:
            results.extend(solver_comparison(name, df, meta, model, kind, compare_timeout, sink))


def solver_comparison(name, df, meta, model_path, kind, timeout, sink) -> list[dict]:
    """The flip stage (and, where flips alone cannot, the refinement over the picked cells) of the
    same instances solved by each exact optimiser."""
    from fairspec.backends.data.groups import assign
    from fairspec.backends.repair.hypercubes import make_cells
    from fairspec.backends.repair.optimise import Options, choose, minimal_change
    from fairspec.models import load_model
    from fairspec.runtime.context import Context
    from fairspec.sema.check import check_file

    spec = check_file(write_spec(name, df, meta, model_path.parent, model_path, ""), peek_models=False).spec
    ctx = Context(spec)
    rows = ctx.rows("F", name)
    X = ctx.model_input("m", rows.frame.values, rows.frame.n_rows).astype(np.float32).astype(np.float64)
    est = load_model("sklearn", model_path).raw
    trees = [est] if hasattr(est, "tree_") else list(est.estimators_)
    dec = (est.predict_proba(X)[:, 1] > 0.5).astype(np.int64)
    leaves = np.column_stack([t.apply(X.astype(np.float32)) for t in trees])
    fs = spec.feature_set("F")
    out = []
    for gname, groups in meta["groups"].items():
        from fairspec.sema.check import check_file as _cf

        g_ir = next(p for p in _cf(write_spec(name, df, meta, model_path.parent, model_path,
                                              f"repair q for m {{ goal passing_rate_ratio(groups {groups}) >= 0.8 }}"),
                                   peek_models=False).spec.properties)
        group, names = assign(g_ir.groups, fs, rows.frame.values, rows.frame.n_rows)
        G = len(names)
        sizes = np.bincount(group, minlength=G).astype(np.int64)
        base = np.bincount(group, weights=dec, minlength=G).astype(np.int64)
        cells = make_cells(leaves, group, dec)
        for c in (0.9,):
            for a in (1.2,):
                lp = minimal_change(base / sizes, sizes, c)
                budget = int(np.floor(a * lp.minimal * len(dec) + 1e-9))
                sign = np.where(cells.decision == 1, -1, 1)
                opts = Options(np.arange(len(cells)), cells.group, sign * cells.size, cells.size.copy(),
                               np.zeros(len(cells), int))
                stage = "flips"
                probe = choose(opts, base, sizes, c, False, budget, "highs", timeout)
                if probe.status == "optimal" and len(probe.chosen) == 0:
                    continue                              # already fair: nothing to compare
                if probe.status != "optimal":
                    continue                              # refinement runs on HiGHS only: compare the flip stage
                for solver in ("highs", "scip", "z3", "rc2"):
                    t0 = time.perf_counter()
                    res = _in_child(choose, (opts, base, sizes, c, False, budget, solver, timeout), timeout)
                    r = {"dataset": name, "model": kind, "groups": gname, "c": c, "alpha": a, "solver": solver,
                         "stage": stage, "options": int(len(opts.cell)), "seconds": round(time.perf_counter() - t0, 3),
                         **res, "comparison": True}
                    out.append(r)
                    sink(r)
    return out


def _in_child(fn, args, timeout: float) -> dict:
    """Run one solver in a forked process, killed after ``timeout`` (RC2's pseudo-Boolean encoding
    and search have no time limit of their own)."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    q = ctx.Queue()

    def target():
        try:
            ch = fn(*args)
            q.put({"status": ch.status, "paths": int(len(ch.chosen))})
        except Exception as e:  # noqa: BLE001 - an encoding too large for a solver is a result here
            q.put({"status": f"failed: {type(e).__name__}: {str(e)[:80]}", "paths": None})

    p = ctx.Process(target=target)
    p.start()
    p.join(timeout + 5)
    if p.is_alive():
        p.kill()
        p.join()
        return {"status": f"time-out ({timeout:g} s)", "paths": None}
    return q.get() if not q.empty() else {"status": "failed (no answer)", "paths": None}


def table(results: list[dict]) -> str:
    rep = [r for r in results if not r.get("comparison")]
    lines = ["| data | model | groups | c | alpha | verdict | time (s) | minimal | achieved | achieved/minimal | "
             "rows changed | paths flipped / refined | accuracy before -> after | ratio before -> after | "
             "re-verified | load | paper |",
             "|" + "---|" * 17]
    for r in rep:
        ach, mn = r.get("achieved"), r.get("minimal")
        ratio = f"{ach / mn:.3f}" if ach is not None and mn else ""
        acc = (f"{r['accuracy_before']:.4f} -> {r['accuracy_after']:.4f}" if r.get("accuracy_after") is not None
               else (f"{r['accuracy_before']:.4f}" if r.get("accuracy_before") is not None else ""))
        rat = (f"{r['ratio_before']:.3f} -> {r['ratio_after']:.3f}" if r.get("ratio_after") is not None
               else (f"{r['ratio_before']:.3f}" if r.get("ratio_before") is not None else ""))
        lines.append(f"| {r['dataset']} | {r['model']} | {r['groups']} | {r['c']} | {r['alpha']} | {r['status']} | "
                     f"{r.get('seconds', '')} | {mn if mn is not None else ''} | {ach if ach is not None else ''} | "
                     f"{ratio} | {r.get('rows_changed', '')} | {r.get('paths_flipped', '')} / {r.get('paths_refined', '')} | "
                     f"{acc} | {rat} | {r.get('reverified', '')} | {_fmt_load(r.get('load'))} | "
                     f"{PAPER[(r['dataset'], r['model'])]} |")
    comp = [r for r in results if r.get("comparison")]
    if comp:
        lines += ["", "| data | model | groups | c | alpha | stage | options | solver | status | paths | seconds | "
                      "x HiGHS |", "|" + "---|" * 12]
        base = {(r["dataset"], r["model"], r["groups"], r["alpha"]): r["seconds"] for r in comp if r["solver"] == "highs"}
        for r in comp:
            b = base.get((r["dataset"], r["model"], r["groups"], r["alpha"])) if r["seconds"] is not None else None
            lines.append(f"| {r['dataset']} | {r['model']} | {r['groups']} | {r['c']} | {r['alpha']} | {r['stage']} | "
                         f"{r['options']} | {r['solver']} | {r['status']} | {r['paths']} | {r['seconds']} |"
                         + (f"{(r['seconds'] / b):.1f} |" if b else " |"))
    return "\n".join(lines)


def _key(r: dict) -> tuple:
    return (r.get("dataset"), r.get("model"), r.get("groups"), r.get("c"), r.get("alpha"), r.get("solver"),
            bool(r.get("comparison")))


def _merge(old: list[dict], new: list[dict]) -> list[dict]:
    """The old rows with those re-run replaced in place, then the rows new to the file."""
    fresh = {_key(r): r for r in new}
    out = [fresh.pop(_key(r), r) for r in old]
    return out + [r for r in new if _key(r) in fresh]


def _order(results: list[dict]) -> list[dict]:
    ds = {d: i for i, d in enumerate(DATASETS)}
    mo = {"tree": 0, "forest": 1}
    gr = {"sex": 0, "race": 1, "sex x race": 2}
    return sorted(results, key=lambda r: (bool(r.get("comparison")), ds.get(r.get("dataset"), 9),
                                          mo.get(r.get("model"), 9), gr.get(r.get("groups"), 9), r.get("c") or 0,
                                          r.get("alpha") or 0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", "--data", default="adult,german,compas")
    ap.add_argument("--models", default="tree,forest")
    ap.add_argument("--sensitive", default=None, help='comma-separated among sex, race, "sex x race" (default: all)')
    ap.add_argument("--c", default=",".join(map(str, C_VALUES)), help="comma-separated ratios c")
    ap.add_argument("--alpha", default=",".join(map(str, ALPHAS)), help="comma-separated alphas")
    ap.add_argument("--timeout", type=float, default=300.0, help="per repair (the spec's timeout)")
    ap.add_argument("--solvers", action="store_true", help="also time HiGHS, SCIP, z3 and RC2 on the same instances")
    ap.add_argument("--compare-timeout", type=float, default=30.0, help="per solver in the comparison")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "repair.json"))
    ap.add_argument("--fresh", action="store_true", help="do not keep the rows of the existing results file")
    args = ap.parse_args()
    c_values = tuple(float(x) for x in args.c.split(","))
    alphas = tuple(float(x) for x in args.alpha.split(","))
    sensitive = None if args.sensitive is None else {x.strip() for x in args.sensitive.split(",")}
    results: list[dict] = []
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    md = out.with_suffix(".md")
    old_rows, old_runs, findings = [], [], ""
    if not args.fresh and out.exists():
        prev = json.loads(out.read_text())
        old_rows = prev.get("results", [])
        old_runs = prev.get("runs") or [
            dict(v, argv=[f"--datasets {k[:-4]} (earlier run, stopped at a deadline)"])
            for k, v in (prev.get("meta") or {}).items() if k.endswith("_run")]
    if not args.fresh and md.exists() and "## Findings" in md.read_text():
        findings = md.read_text()[md.read_text().index("## Findings"):]
    meta = {"load_before": os.getloadavg(), "python": platform.python_version(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "timeout": args.timeout, "argv": sys.argv[1:], "started": RUN_STARTED}

    def save(rows):
        merged = _order(_merge(old_rows, rows))
        used = {r.get("run") for r in merged}
        # a run stays listed while some row is from it (rows of the earliest runs carry no run field)
        runs = [m for m in old_runs + [meta] if m.get("started") in used or
                ("earlier run" in " ".join(m.get("argv") or []) and None in used)]
        out.write_text(json.dumps({"runs": runs, "results": merged}, indent=1))

    def sink(r):
        print(json.dumps(r), flush=True)
        save(results + ([r] if r not in results else []))

    with tempfile.TemporaryDirectory(prefix="fairspec-repair-bench-") as work:
        for name in args.datasets.split(","):
            run_dataset(name, args.models.split(","), args.timeout, Path(work), results, args.solvers, sink,
                        args.compare_timeout, c_values, alphas, sensitive)
    meta["load_after"] = os.getloadavg()
    meta["finished"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    save(results)
    write_md(out, findings)
    print(table(results))


def write_md(out: Path, findings: str) -> None:
    merged = json.loads(out.read_text())
    runs = "\n".join(f"- {m.get('started', '?')}: `{' '.join(m.get('argv') or []) or '(all)'}`, load average "
                     f"{_fmt_load(m.get('load_before'))} before, {_fmt_load(m.get('load_after'))} after "
                     f"({m.get('cpus')} cpus), per-repair timeout {m.get('timeout')} s" for m in merged["runs"])
    out.with_suffix(".md").write_text(
        "# bench/repair.py\n\nRuns whose rows are in this file (each row's `load` is the load average when it "
        "finished):\n\n" + runs + "\n\n" + table(merged["results"]) + "\n" + ("\n" + findings if findings else ""))


def _fmt_load(v) -> str:
    return "?" if not v else "/".join(f"{x:.1f}" for x in v)


if __name__ == "__main__":
    main()
