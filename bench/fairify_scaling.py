"""Scaling of one Fairify row (issue 24): 1 worker, 2 workers, a 2-worker Dask LocalCluster, one process.

The row (default AC-1, protected ``sex``, Fairify's ``sign`` property on Fairify's own partitions,
as ``bench/fairify.py --partitions fairify --prove 1800`` proves it) is decided three times through
fairspec's one executor: ``SerialExecutor`` (what ``--workers 1`` gives), the process-wide pool of
2 workers (``--workers 2``) and a ``DaskExecutor`` on ``LocalCluster(n_workers=2,
threads_per_worker=1)`` (``--cluster local:2``). The pool and the cluster are started, and every
executor runs the first partitions once untimed (imports, solver start-up), before the clocks. Each
run records wall time, CPU time of the coordinator and of every worker (``/proc``,
``Client.run``), the coverage (proved / refuted / undecided partitions) and the load average; the
ratio is 1-worker wall time / n-worker wall time (near 2 is near-linear), and the CPU speedup
(1-worker CPU over coordinator + busiest worker) is what the run would give with a core per
process, which a loaded machine does not hide.

    python bench/fairify_scaling.py --shared /work/shared      # -> bench/results/fairify_scaling.{md,json}

Not a test: it reports, it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from parallel_jobs import _timed  # noqa: E402  (wall + coordinator/worker CPU of one run)

COMMAND = "python bench/fairify_scaling.py --shared /work/shared"


def _problem(shared: Path, model: str, attr: str, prop: str):
    from fairspec.backends.milp.partition import fairify_partitions
    from fairspec.backends.pair import PairProblem
    from fairspec.models import network

    d = json.loads((shared / "bench" / "fairify" / "domains.json").read_text())[model.split("-")[0]]
    names = d["feature_order"]
    lo = [d["verification_domain"][n][0] for n in names]
    hi = [d["verification_domain"][n][1] for n in names]
    net = network.from_onnx(shared / "bench" / "fairify" / "models" / f"{model}.onnx")
    problem = PairProblem(net, lo, hi, [True] * len(names), (), (names.index(attr),), None, (),
                          "label" if prop == "sign" else "prob", 0.0 if prop == "sign" else 0.05)
    return problem, fairify_partitions(problem, threshold=d["partition_threshold_src"])


def _job(problem, parts, prove: float, part_seconds: float):
    from fairspec.backends.milp.partition import solve_partitioned

    def run(ex):
        r = solve_partitioned(problem, mode="prove", parts=parts, time_per_part=part_seconds, time_limit=prove,
                              executor=ex)
        c = r.coverage
        return {"status": r.status, "coverage": [c.partitions, c.proved, c.refuted, c.undecided],
                "attack_refuted": r.stats.get("attack_refuted")}

    return run


def bench(args) -> dict:
    import distributed

    from fairspec.runtime import executor as ex_mod
    from fairspec.runtime.executor import DaskExecutor, SerialExecutor

    problem, parts = _problem(args.shared, args.model, args.protected, args.prop)
    run = _job(problem, parts, args.prove, args.part_seconds)
    warm = _job(problem, parts[:8], args.prove, args.part_seconds)
    res = {"command": "python bench/fairify_scaling.py " + " ".join(sys.argv[1:]) if sys.argv[1:] else COMMAND,
           "row": f"{args.model} {args.protected} {args.prop}", "partitions": len(parts),
           "cpus": os.cpu_count(), "load_start": list(os.getloadavg()), "runs": {}}

    def measure(label, ex):
        warm(ex)                                   # untimed: imports and solver start-up in the workers
        load0 = os.getloadavg()
        out = _timed(run, ex)
        out["load_start"], out["load_end"] = [round(x, 2) for x in load0], [round(x, 2) for x in os.getloadavg()]
        res["runs"][label] = out
        print(f"{label:16s} {out['wall_s']:8.1f} s  cpu {out['cpu']}  {out.get('coverage', out.get('error'))}  "
              f"load {out['load_start'][0]} -> {out['load_end'][0]}", flush=True)

    measure("1 worker", SerialExecutor())
    pool = ex_mod.process_pool(2).start()
    measure("2 workers", pool)
    ex_mod.shutdown_pools()
    t0 = time.perf_counter()
    # the pool workers' environment (one BLAS/OpenMP thread, glibc's malloc thresholds), set by the nanny
    # and without the workers' statistical profiler (AC-1 sex, 4,000 partitions, load 19: 4.5 instead of 4.9 CPU s
    # per worker; the 2-worker pool's: 3.8)
    import dask

    with dask.config.set({"distributed.worker.profile.enabled": False}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                           dashboard_address=None, silence_logs=40, env=dict(ex_mod.WORKER_ENV))
    dask_ex = DaskExecutor(cluster.scheduler_address)
    res["cluster_startup_s"] = round(time.perf_counter() - t0, 2)
    try:
        measure("LocalCluster 2", dask_ex)
    finally:
        dask_ex.shutdown()
        cluster.close()
    base = res["runs"]["1 worker"]
    for label in ("2 workers", "LocalCluster 2"):
        r = res["runs"][label]
        if "wall_s" in base and r.get("wall_s"):
            r["speedup"] = round(base["wall_s"] / r["wall_s"], 2)
            c = r["cpu"]
            busiest = c["coordinator_s"] + (c["workers_s"][0] if c["workers_s"] else 0.0)
            r["cpu_speedup"] = round(base["cpu"]["total_s"] / busiest, 2) if busiest else None
            r["cpu_overhead"] = round(c["total_s"] / base["cpu"]["total_s"], 2) if base["cpu"]["total_s"] else None
        r["same_coverage"] = r.get("coverage") == base.get("coverage")
    res["load_end"] = list(os.getloadavg())
    return res


def table(res: dict) -> str:
    out = ["# Fairify scaling: one row on 1 worker, 2 workers, a 2-worker Dask LocalCluster (issue 24)", "",
           f"    {res['command']}", "",
           f"Row: {res['row']}, Fairify's {res['partitions']:,} partitions, `solve_partitioned(mode=\"prove\")` as "
           f"`bench/fairify.py --partitions fairify --prove 1800` runs it. Commit {res.get('commit', '?')}; "
           f"{res['cpus']} cores; load average at the start "
           f"{', '.join(f'{x:.1f}' for x in res['load_start'])}, at the end "
           f"{', '.join(f'{x:.1f}' for x in res['load_end'])}. The pool and the cluster were started "
           f"(cluster: {res.get('cluster_startup_s', '-')} s) and each executor solved 8 partitions untimed "
           "before its clock started.", "",
           "| executor | wall s | ratio to 1 worker | CPU: coordinator / workers | CPU speedup | CPU overhead "
           "| coverage (partitions, proved, refuted, undecided) | same coverage | load start / end |",
           "|:---|---:|---:|---:|---:|---:|:---|:---:|---:|"]
    for label, r in res["runs"].items():
        c = r.get("cpu", {})
        cpu = f"{c.get('coordinator_s', 0):.1f} / {' + '.join(f'{v:.1f}' for v in c.get('workers_s', [])) or '-'}"
        out.append(f"| {label} | {r.get('wall_s', '-')} | {r.get('speedup', '1.0' if label == '1 worker' else '-')} | "
                   f"{cpu} | {r.get('cpu_speedup', '-')} | {r.get('cpu_overhead', '-')} | "
                   f"{r.get('coverage', r.get('error'))} | {'-' if label == '1 worker' else 'yes' if r.get('same_coverage') else 'no'} | "
                   f"{r['load_start'][0]} / {r['load_end'][0]} |")
    out += ["", "The ratio is wall time, which on a loaded machine measures the other jobs too; the CPU speedup "
                "(1-worker CPU over coordinator + busiest worker) is the speedup with a core per process. From "
                "commit 7321811 the batched attack that refutes most refuted partitions runs its chunks of boxes "
                "on the workers too (before, it ran in the coordinator: 11 of AC-1 sex's 27 CPU seconds)."]
    if res.get("note"):
        out += ["", res["note"]]
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=Path(os.environ.get("FAIRSPEC_SHARED", ROOT.parent / "shared")))
    ap.add_argument("--model", default="AC-1")
    ap.add_argument("--protected", default="sex")
    ap.add_argument("--prop", choices=("sign", "eps"), default="sign")
    ap.add_argument("--prove", type=float, default=1800.0, help="seconds for the row (as bench/fairify.py)")
    ap.add_argument("--part-seconds", type=float, default=10.0)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "fairify_scaling")
    ap.add_argument("--table", action="store_true", help="rewrite the .md from the .json")
    args = ap.parse_args(argv)
    if args.table:
        res = json.loads(args.out.with_suffix(".json").read_text())
    else:
        args.shared = args.shared.resolve()
        if not (args.shared / "bench" / "fairify" / "domains.json").exists():
            raise SystemExit(f"no Fairify benchmark at {args.shared / 'bench' / 'fairify'} (use --shared DIR)")
        import subprocess

        res = bench(args)
        r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        res["commit"] = os.environ.get("FAIRSPEC_BENCH_COMMIT") or r.stdout.strip() or None
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(res, indent=1))
    text = table(res)
    args.out.with_suffix(".md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
