"""The parallel jobs of bench/scale.py: 1 worker, 2 workers, and a 2-worker dask LocalCluster.

* ``partitions``: BM-6 (Fairify's bank network), protected ``age``, Fairify's sign property,
  proved partition by partition over Fairify's own partitions (domains.json), 10 s each;
* ``pba``: ``pba(mlp, flip sex, around adult_test, delta {age: 1, hours_per_week: 1})`` on the
  Adult example's MLP over the full Adult test set (16,281 rows; 15,060 without '?');
* ``bootstrap``: ``statistical_parity(dt, groups sex, distribution conditional(adult))`` with
  ``bootstrap = 1000`` (examples/worked/adult_distribution.fair's dt_sex_bootstrap, 1000 networks
  re-estimated from resamples of the rows).

Each is run through fairspec's one executor: ``SerialExecutor`` (1 worker), ``ProcessExecutor(2)``
and a ``DaskExecutor`` on a ``LocalCluster(n_workers=2, threads_per_worker=1)``; the results are
compared (the same verdict, coverage and interval) and the ratio is 1-worker time / n-worker time.
The pool and the cluster are started before the clock starts (their start-up is reported apart).
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHARED = Path(os.environ.get("FAIRSPEC_SHARED", ROOT.parent / "shared"))  # ../shared, or FAIRSPEC_SHARED
ADULT = ROOT / "examples" / "adult"


def _partitions_job():
    import json

    from fairspec.backends.milp.partition import fairify_partitions, solve_partitioned
    from fairspec.backends.pair import PairProblem
    from fairspec.models import network

    d = json.loads((SHARED / "bench" / "fairify" / "domains.json").read_text())["BM"]
    names = d["feature_order"]
    lo = [d["verification_domain"][n][0] for n in names]
    hi = [d["verification_domain"][n][1] for n in names]
    net = network.from_onnx(SHARED / "bench" / "fairify" / "models" / "BM-6.onnx")
    problem = PairProblem(net, lo, hi, [True] * len(names), (), (names.index("age"),), None, (), "label", 0.0)
    parts = fairify_partitions(problem, threshold=d["partition_threshold_src"])

    def run(ex):
        r = solve_partitioned(problem, mode="prove", parts=parts, time_per_part=10.0, executor=ex)
        c = r.coverage
        return {"status": r.status, "coverage": [c.partitions, c.proved, c.refuted, c.undecided]}

    return run


def _spec_job(spec_text: str, prop: str):
    from fairspec.backends import executor as ex_mod
    from fairspec.pipeline import check

    path = HERE / "out" / f"parallel_{prop}.fair"
    path.parent.mkdir(exist_ok=True)
    path.write_text(spec_text)

    def run(ex):
        saved = dict(ex_mod._CONFIG)
        if isinstance(ex, ex_mod.DaskExecutor):
            ex_mod.configure(cluster=ex.address)
        else:
            ex_mod.configure(workers=ex.workers)
        try:
            r = check(path, only=prop)
        finally:
            ex_mod._CONFIG.update(saved)
        assert not r.has_errors, (r.error, [x.message for x in r.diagnostics])
        v = r.verdicts[0]
        return {"status": v.status, "value": v.value, "bound": v.bound,
                "seconds_in_property": round(v.seconds, 3)}

    return run


def _pba_spec() -> str:
    text = (ADULT / "adult.fair").read_text()
    text = text[:text.index("group older")]
    text = text.replace('("models/', f'("{ADULT}/models/').replace('csv("data/', f'csv("{ADULT}/data/')
    test = re.search(r'data adult = (csv\(.*?\))\n', text, re.S).group(1).replace("adult.data", "adult.test")
    test = test.replace('label = income == ">50K"', 'label = income == ">50K."')
    return text + f"\ndata adult_test = {test}\n\nproperty pba_test {{\n" \
                  "  pba(mlp, flip sex, around adult_test, delta {age: 1, hours_per_week: 1})\n  timeout = 300\n}\n"


def _bootstrap_spec() -> str:
    text = (ROOT / "examples" / "worked" / "adult_distribution.fair").read_text()
    text = re.sub(r'(csv|sklearn|onnx)\("(?!/)', lambda m: f'{m.group(1)}("{ROOT / "examples" / "worked"}/', text)
    text = re.sub(r"(property dt_sex_bootstrap \{.*?bootstrap = )\d+", r"\g<1>1000", text, flags=re.S)
    text = re.sub(r"(property dt_sex_bootstrap \{)", r"\1\n  timeout = 3600", text)
    return text


def bench_parallel(jobs=("partitions", "pba", "bootstrap")) -> list[dict]:
    from fairspec.backends.executor import DaskExecutor, ProcessExecutor, SerialExecutor

    runs = {}
    if "partitions" in jobs and (SHARED / "bench" / "fairify").exists():
        runs["partitions (BM-6, Fairify's partitions, prove)"] = _partitions_job()
    if "pba" in jobs:
        runs["pba (Adult test set, flip sex)"] = _spec_job(_pba_spec(), "pba_test")
    if "bootstrap" in jobs:
        runs["bootstrap (1000 re-estimated networks)"] = _spec_job(_bootstrap_spec(), "dt_sex_bootstrap")
    rows = []
    import distributed

    t0 = time.perf_counter()
    pool = ProcessExecutor(2)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=None, silence_logs=40)
    dask_ex = DaskExecutor(cluster.scheduler_address)
    startup = time.perf_counter() - t0
    for name, run in runs.items():
        row = {"job": name, "load_before": os.getloadavg()[0], "cluster_startup_s": round(startup, 2)}
        for label, ex in (("1 worker", SerialExecutor()), ("2 workers", pool), ("LocalCluster 2", dask_ex)):
            t1 = time.perf_counter()
            try:
                out = run(ex)
            except Exception as e:  # noqa: BLE001 - report, do not crash the benchmark
                out = {"error": f"{type(e).__name__}: {e}"}
            out["wall_s"] = round(time.perf_counter() - t1, 2)
            row[label] = out
            print(f"{name:50s} {label:15s} {out['wall_s']:8.2f} s  {out.get('status', out.get('error'))}",
                  flush=True)
        base = row["1 worker"]["wall_s"]
        for label in ("2 workers", "LocalCluster 2"):
            row[f"speedup {label}"] = round(base / row[label]["wall_s"], 2) if row[label]["wall_s"] else None
        same = {k: v for k, v in row["1 worker"].items() if k not in ("wall_s", "seconds_in_property")}
        row["same_result"] = all({k: v for k, v in row[lab].items() if k not in ("wall_s", "seconds_in_property")}
                                 == same for lab in ("2 workers", "LocalCluster 2"))
        row["load_after"] = os.getloadavg()[0]
        rows.append(row)
    pool.close()
    dask_ex.shutdown()
    cluster.close()
    return rows


if __name__ == "__main__":
    import json

    sys.path.insert(0, str(HERE))
    print(json.dumps(bench_parallel(sys.argv[1:] or ("partitions", "pba", "bootstrap")), indent=1, default=str))
