"""Benchmark: individual fairness and k-discrimination of Fairify's 25 ReLU networks.

The networks, domains and data are read at run time from ``../shared/bench/fairify``
(relative to the repository; ``--shared DIR`` points at another ``shared``), never
copied. For every network and every protected attribute of ``domains.json``
(``src(main)``, ``src(alt)``):

* ``sign``: Fairify's property: x, x' equal except the protected attribute, which
  differs, both inside the verification domain; violated by logits of opposite sign;
* ``eps``: HyFair's property: |prob - prob'| > 0.05;

both by the batched falsifier (``fairspec.backends.search``) for ``--budget`` seconds
(data rows with every counterfactual, then a greedy population search). And
k-discrimination (``fairspec.backends.search.kdisc``, simulated annealing) with K = every
combination of the protected values: AC race x sex (K = 10) and a HyFair-like K = 20
with two age bands ([10, 39], [40, 100]: the search picks an age inside each band); BM
sees age only as 0/1 (K = 2); GC age x sex (K = 4). These rows are ``eps`` rows over
the combined attribute (an ID there is a 2-discriminant of the same property).

Every witness is replayed with onnxruntime on the ONNX file (the ``logit`` output for
``sign``, ``prob`` for ``eps``) and its pre-condition re-checked before it is counted;
a row is ``violated`` only with a replayed witness, otherwise ``unknown`` (a search
proves nothing) unless the MILP proves it (``--prove SECONDS``, helper 3a's backend).

With ``--prove``, every partitioned row also gets FairQuant's shares of the domain of
individuals (``fairspec.backends.quantify``): certified (partitions proved fair, with a
certify Proof), falsified (boxes proved unfair around each refuted partition's witness,
``--unfair-nodes``, grown after every partition is decided: ``quantify_seconds`` apart from
``decide_seconds``), plus the counterexample points) and undecided, exact fractions of the
domain's integer points in the JSON (``shares``) and percentages in the table; beside them an
estimate of the unfair share from ``--sample-unfair`` uniform individuals (Clopper-Pearson 95%).
``--refine S``: then S seconds of FairQuant's refinement inside the partitions left without a proof
(``fairspec.backends.refine``: sub-boxes proved fair / unfair, small ones enumerated; counted in the
shares; the row's ``refine`` has its counts and ``undecided_where``, an estimate of how much of the
undecided mass sits in sub-boxes that hold an unfair individual). ``--estimate N`` (default
10,000; 0: none): N individuals drawn uniformly from the *undecided* part (each undecided box by
its measure, seeded by ``--seed``), decided on the runtime: the row's ``estimate``
(``fairspec.backends.estimate``) and the column "undecided and unfair, estimated (95%)": the
undecided-and-unfair share of the domain with its Clopper-Pearson interval, and the unfair share of
the undecided part -- an estimate beside the exact shares, never added to them.

Beside our numbers: Fairify's published verdict counts over its input partitions
(``published_results.csv``, experiment ``src``: SAT / UNSAT / UNK) and HyFair's
Table I (MILP: #ID, time to first ID, max #K) and Table II (simulated annealing,
4-hour searches: Max.K, T.maxK). HyFair's K (20 for AC, 9 for BM) is not fully
stated, so its max k is printed beside ours, not compared.

    python bench/fairify.py [--models AC-1,BM-6] [--budget 10] [--json FILE]
    python bench/fairify.py --compare-kdisc 120,600 --models AC-1,AC-2   # max k: short vs long run
    python bench/fairify.py --models BM-6,GC-4 --prove 1800 --partitions fairify   # Fairify's partitions
    python bench/fairify.py --models BM-1 --props sign --no-kdisc --prove 1800 --partitions fairify \
        --unfair-nodes 12 --json bench/results/fairify_shares_BM-1.json           # with the shares
    python bench/fairify.py --shared /work/shared --partitions fairify --no-kdisc --props sign --prove 1800 \
        --workers 2 --json run.json          # the sweep of issue 24 (--cluster tcp://host:8786 or local:2)
    python bench/fairify.py --render-md run.json [more.json] --md bench/results/fairify_all.md

Every row records its wall time, its peak resident memory (the bench process and its child
processes, the high-water mark reset per row through /proc/PID/clear_refs; Dask workers asked
through the client), and the load average at its start and end; the JSON is rewritten after every
row (with the command, the commit and the loads), so a run that is stopped keeps its rows; a row
that leaves at most 50 partitions undecided lists them (``undecided_partitions``: index, box).
``--render-md`` numbers the runs by their start; a row run again in a later run is shown as
superseded and the per-network summary (the attributes' wall times summed against the 30 minutes
per network) counts the newest run's row once.
``bench/fairify_scaling.py`` runs one row on 1 worker, 2 workers and a 2-worker Dask cluster.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_SHARED = ROOT.parent / "shared"
EPS = 0.05
ENGINE = "highs"     # --engine: the MILP engine of the partitions' first pass (portfolio: its retries too)
UNIONS = True        # --no-unions: no union pass (neighbouring partitions proved together) before the first
AGE_BANDS = [(10, 39), (40, 100)]

# HyFair (paper 000_*), Table I, "HyFair (MILP)" columns, means of 10 runs:
# #ID, T.1st (s), #K.1st, Num. Clusters (#K). None = N/A (no ID found).
HYFAIR_TABLE1 = {
    "AC-1": (23.2, 0.5, 17.6, 18.6), "AC-2": (18.6, 2.7, 15.8, 17.8), "AC-3": (12.6, 3.4, 11.4, 16.0),
    "AC-4": (0.4, 106.2, 8.5, 8.5), "AC-5": (4.0, 25.1, 10.2, 15.0), "AC-6": (25.0, 0.3, 11.8, 16.6),
    "AC-7": (2.0, 73.8, 15.2, 17.2), "AC-8": (25.0, 0.2, 15.8, 17.2), "AC-9": (23.6, 0.2, 14.8, 16.0),
    "AC-10": (23.4, 0.43, 15.0, 17.6), "AC-11": (0.8, 64.2, 8.5, 9.0), "AC-12": (13.2, 3.8, 15.2, 18.8),
    "BM-1": (37.8, 2.4, 7.8, 9.0), "BM-2": (33.2, 5.3, 7.4, 9.0), "BM-3": (58.8, 2.3, 7.6, 9.0),
    "BM-4": (0.0, None, None, None), "BM-5": (43.2, 1.6, 7.8, 9.0), "BM-6": (59.8, 3.5, 4.0, 5.8),
    "BM-7": (0.0, None, None, None), "BM-8": (1.6, 63.7, 4.6, 4.8),
}
# HyFair Table II, "SA" rows (4-hour searches), means: Iter (x1K), Max.K, Avg.K, T.1st (s),
# #ID, Succ.rate (%), #ID.maxK, T.maxK (s). BM4 and BM7 are not in the table (certified).
HYFAIR_TABLE2_SA = {
    "AC-1": (3.6, 20.0, 9.3, 1, 1927, 53.3, 2.7, 1162), "AC-2": (2.6, 19.0, 14.0, 2, 2245, 87.7, 3.8, 4769),
    "AC-3": (3.2, 20.0, 14.1, 4, 1846, 58.6, 170.4, 86), "AC-4": (0.2, 20.0, 17.1, 127, 125, 91.0, 13.2, 1262),
    "AC-5": (1.6, 18.3, 13.0, 3, 1545, 97.7, 9.6, 2209), "AC-6": (2.9, 20.0, 13.8, 1, 2623, 91.5, 108.4, 93),
    "AC-7": (4.3, 16.5, 14.3, 1602, 18, 0.4, 2.6, 3646), "AC-8": (3.8, 16.9, 12.3, 1, 2072, 57.0, 9.2, 2569),
    "AC-9": (3.1, 19.0, 13.7, 1, 2430, 77.6, 51.0, 443), "AC-10": (3.5, 16.9, 11.3, 3, 1838, 51.6, 5.8, 3778),
    "AC-11": (1.3, 20.0, 15.0, 8, 987, 73.8, 29.9, 471), "AC-12": (2.4, 20.0, 15.7, 1, 1662, 70.8, 60.6, 203),
    "BM-1": (9.1, 9.0, 5.2, 1, 5135, 57.3, 26.3, 420), "BM-2": (11.3, 9.0, 4.6, 8, 726, 6.4, 17.3, 936),
    "BM-3": (11.3, 9.0, 6.5, 2, 2984, 26.5, 419.1, 24), "BM-5": (10.2, 6.0, 3.7, 3, 1605, 15.9, 25.4, 464),
    "BM-6": (11.3, 8.0, 3.4, 1.6, 2315, 20.5, 21.5, 137), "BM-8": (0.3, 8.0, 4.8, 394, 42, 16.5, 1.2, 4570),
}
HYFAIR_K = {"AC": 20, "BM": 9}


# --------------------------------------------------------------------------- inputs
class Bench:
    def __init__(self, shared: Path):
        self.dir = shared / "bench" / "fairify"
        if not (self.dir / "domains.json").exists():
            raise SystemExit(f"no Fairify benchmark at {self.dir} (use --shared DIR)")
        self.domains = json.loads((self.dir / "domains.json").read_text())
        self._data: dict[str, np.ndarray] = {}
        self.published = self._published()

    def models(self) -> list[str]:
        names = [p.stem for p in (self.dir / "models").glob("*.onnx")]
        return sorted(names, key=lambda m: (m.split("-")[0], int(m.split("-")[1])))

    def onnx(self, model: str) -> Path:
        return self.dir / "models" / f"{model}.onnx"

    def data(self, ds: str) -> np.ndarray:
        if ds not in self._data:
            names = self.domains[ds]["feature_order"]
            with open(self.dir / f"{ds}.csv", newline="") as fh:
                rows = list(csv.DictReader(fh))
            self._data[ds] = np.array([[float(r[n]) for n in names] for r in rows], dtype=np.float64)
        return self._data[ds]

    def box(self, ds: str):
        from fairspec.backends.search import Box

        d = self.domains[ds]
        names = d["feature_order"]
        lo = [d["verification_domain"][n][0] for n in names]
        hi = [d["verification_domain"][n][1] for n in names]
        return Box.make(lo, hi, True)

    def protected(self, ds: str) -> list[tuple[str, int]]:
        d = self.domains[ds]["protected"]
        out = []
        for key in ("src(main)", "src(alt)"):
            for name, idx in d.get(key, []):
                out.append((name, int(idx)))
        return out

    def attr(self, ds: str, name: str):
        from fairspec.backends.search import Protected

        d = self.domains[ds]
        idx = d["feature_order"].index(name)
        lo, hi = d["verification_domain"][name]
        return Protected.label(idx, range(int(lo), int(hi) + 1), name)

    def _published(self) -> dict:
        out = {}
        path = self.dir / "published_results.csv"
        with open(path, newline="") as fh:
            for r in csv.DictReader(fh):
                if r["experiment"] != "src":
                    continue
                m = r["model"]
                model = f"{m[:2]}-{m[2:]}"
                out[(model, r["query"])] = (int(r["SAT"]), int(r["UNSAT"]), int(r["UNK"]))
        return out


def kdisc_spaces(bench: Bench, ds: str, box, pairs_done: bool = False) -> list[tuple[str, object]]:
    """The combined protected attributes of k-discrimination for a data set."""
    from fairspec.backends.search import Protected, Space

    if ds == "AC":
        race, sex = bench.attr(ds, "race"), bench.attr(ds, "sex")
        age = bench.domains[ds]["feature_order"].index("age")
        return [("race*sex", Space(box, [race, sex])),
                ("age2*race*sex", Space(box, [Protected.banded(age, AGE_BANDS, "age"), race, sex]))]
    if ds == "BM":  # K = 2 (age 0/1): the "eps" row of the attribute already gives max k
        return [("age", Space(box, [bench.attr(ds, "age")]))] if not pairs_done else []
    if ds == "GC":
        return [("age*sex", Space(box, [bench.attr(ds, "age"), bench.attr(ds, "sex")]))]
    return []



# --------------------------------------------------------------------------- resources
def _proc_kib(pid, field: str) -> int | None:
    """A ``/proc/PID/status`` field in KiB (Linux), None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _children(pid=None) -> list[int]:
    """The bench's worker processes (every descendant), empty without psutil."""
    try:
        import psutil

        return [c.pid for c in psutil.Process(pid).children(recursive=True)]
    except Exception:  # noqa: BLE001 - psutil absent or a child gone
        return []


def _reset_peak(pid) -> bool:
    """Start a new peak-RSS window for a process (Linux >= 4.0: ``5`` > clear_refs resets VmHWM)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _dask_worker_peak(reset: bool = False) -> tuple[int, int | None]:
    """On a Dask worker: its pid and peak RSS in KiB (and a new window with ``reset``)."""
    pid = os.getpid()
    kib = _proc_kib(pid, "VmHWM")
    if reset:
        _reset_peak(pid)
    return pid, kib


class PeakMemory:
    """Peak resident memory of one row: the bench process and its workers (pool processes, or the
    Dask workers, asked through the client). Per row where Linux lets the high-water mark be reset
    (``/proc/PID/clear_refs``), else the high-water mark since the process started; getrusage
    (RUSAGE_SELF, RUSAGE_CHILDREN: finished children only) where /proc is absent."""

    def __init__(self, client=None):
        self.client = client
        self.per_row = True

    def start(self) -> None:
        pids = [os.getpid(), *_children()]
        self.per_row = all([_reset_peak(pid) for pid in pids]) if _proc_kib(os.getpid(), "VmHWM") else False
        if self.client is not None:
            try:
                self.client.run(_dask_worker_peak, True)
            except Exception:  # noqa: BLE001
                self.per_row = False

    def stop(self) -> dict:
        import resource

        out: dict = {}
        me = _proc_kib(os.getpid(), "VmHWM")
        if me is None:
            me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        dask_pids: set = set()
        if self.client is not None:
            try:
                peaks = list(self.client.run(_dask_worker_peak).values())
                dask_pids = {pid for pid, _ in peaks}
                out["dask_workers_mib"] = [round(v / 1024, 1) for _, v in peaks if v is not None]
            except Exception as e:  # noqa: BLE001
                out["dask_workers_mib"] = f"not asked ({type(e).__name__})"
        # a LocalCluster's workers are children too: counted once, as Dask workers
        kids = [k for k in (_proc_kib(pid, "VmHWM") for pid in _children() if pid not in dask_pids) if k is not None]
        done = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        out["bench_mib"] = round(me / 1024, 1)
        out["workers_mib"] = [round(k / 1024, 1) for k in kids]
        allw = out["workers_mib"] + (out["dask_workers_mib"] if isinstance(out.get("dask_workers_mib"), list) else [])
        out["max_worker_mib"] = max(allw) if allw else (round(done / 1024, 1) if done else None)
        out["total_mib"] = round(out["bench_mib"] + sum(allw), 1)
        out["per_row"] = self.per_row
        return out


def loadavg() -> list[float] | None:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return None


def git_commit() -> str | None:
    """The commit the bench runs (``FAIRSPEC_BENCH_COMMIT`` for a run from an exported snapshot)."""
    import subprocess

    if os.environ.get("FAIRSPEC_BENCH_COMMIT"):
        return os.environ["FAIRSPEC_BENCH_COMMIT"]
    try:
        r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                           text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return r.stdout.strip() + ("+dirty" if dirty else "") if r.returncode == 0 else None
    except Exception:  # noqa: BLE001
        return None


def start_cluster(spec: str | None):
    """``--cluster local:N``: a dask.distributed LocalCluster of N single-threaded worker processes
    started here (closed at exit); any other value is a scheduler address. Returns (address, cluster)."""
    if not spec:
        return None, None
    if spec.startswith("local:"):
        from distributed import LocalCluster

        from fairspec.runtime.executor import WORKER_ENV

        n = int(spec.split(":", 1)[1])
        # the pool workers' environment (one BLAS/OpenMP thread, glibc's malloc thresholds), set by the nanny
        # and without the workers' statistical profiler (a thread sampling every task's stack every 10 ms)
        import dask

        with dask.config.set({"distributed.worker.profile.enabled": False}):
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                                   env=dict(WORKER_ENV))
        return cluster.scheduler_address, cluster
    return spec, None


def dask_client():
    """The Dask client fairspec's executor opened (None without ``--cluster``)."""
    from fairspec.runtime import executor

    addr = executor.cluster_address()
    return executor.get_executor(2).client if addr else None


# --------------------------------------------------------------------------- replay
class Replayer:
    """onnxruntime on the ONNX file: the independent check of every witness."""

    def __init__(self, path: Path):
        from fairspec.backends.search.evaluators import ort_evaluator

        self.logit = ort_evaluator(path, "logit")
        self.prob = ort_evaluator(path, "prob")

    def check(self, space, prop: str, pairs: list[tuple[np.ndarray, np.ndarray]]) -> list[dict]:
        if not pairs:
            return []
        X = np.vstack([p[0] for p in pairs])
        Xp = np.vstack([p[1] for p in pairs])
        if prop == "sign":
            a, b = self.logit(X), self.logit(Xp)
            bad = (a > 0) != (b > 0)
        else:
            a, b = self.prob(X), self.prob(Xp)
            bad = np.abs(a - b) > EPS
        box = space.box
        inside = box.contains(X) & box.contains(Xp)
        shared = np.all(X[:, space.shared_mask] == Xp[:, space.shared_mask], axis=1)
        differ = np.any(X[:, space.protected_cols] != Xp[:, space.protected_cols], axis=1)
        ok = bad & inside & shared & differ
        return [{"x": [float(v) for v in X[i]], "x_prime": [float(v) for v in Xp[i]],
                 "out": float(a[i]), "out_prime": float(b[i])} for i in np.flatnonzero(ok)]


# --------------------------------------------------------------------------- one row
def base_row(model, protected, prop, K):
    return {"model": model, "protected": protected, "property": prop, "K": K, "status": "unknown",
            "how": None, "seconds_to_first": None, "ids": 0, "max_k": None, "seconds_to_max_k": None,
            "coverage": "not attempted", "reason": "", "witnesses": []}


def run_pair_row(model, ds, name, prop, bench, evaluate, replayer, box, budget, seed, kdisc_budget):
    from fairspec.backends.search.kdisc import kdisc_search
    from fairspec.backends.search import Post, Space, falsify

    space = Space(box, [bench.attr(ds, name)])
    post = Post.label() if prop == "sign" else Post.prob(EPS)
    row = base_row(model, name, prop, space.K)
    res = falsify(evaluate, space, post, data=bench.data(ds), budget_seconds=budget, seed=seed,
                  max_witnesses=32)
    cands = list(res.witnesses)
    if res.first_witness is not None:
        cands.append(res.first_witness)
    good = replayer.check(space, prop, [(w.x, w.x_prime) for w in cands])
    row.update(ids=res.ids, search_seconds=round(res.seconds, 3), evaluations=res.evaluations,
               best_objective=res.best_objective)
    if good:
        # time to the first witness that replays: the first one found, else the earliest kept one
        ok = {(tuple(g["x"]), tuple(g["x_prime"])) for g in good}
        first = min(w.seconds for w in cands if (tuple(map(float, w.x)), tuple(map(float, w.x_prime))) in ok)
        row.update(status="violated", how="search", seconds_to_first=round(first, 4), witnesses=good[:10],
                   reason="replayed witness (onnxruntime)")
    else:
        row["reason"] = res.reason or "witnesses did not replay"
    if prop == "eps":
        if space.K == 2:  # two counterfactuals more than eps apart lie in two buckets
            row["max_k"] = 2 if good else None
            row["seconds_to_max_k"] = row["seconds_to_first"]
        elif kdisc_budget > 0:
            kr = kdisc_search(evaluate, space, eps=EPS, data=bench.data(ds), budget_seconds=kdisc_budget,
                              seed=seed, method="sa")
            row["max_k"], row["seconds_to_max_k"] = kr.max_k, _r(kr.seconds_to_max_k)
    return row


def run_kdisc_row(model, ds, label, space, bench, evaluate, replayer, budget, seed, method="sa"):
    from fairspec.backends.search.kdisc import kdisc_search

    row = base_row(model, label, "eps", space.K)
    kr = kdisc_search(evaluate, space, eps=EPS, data=bench.data(ds), budget_seconds=budget, seed=seed,
                      method=method)
    pairs = []
    for w in kr.top:
        i, j = int(np.argmax(w.scores)), int(np.argmin(w.scores))
        if w.scores[i] - w.scores[j] > EPS:
            pairs.append((w.inputs[i], w.inputs[j]))
    good = replayer.check(space, "eps", pairs)
    row.update(ids=kr.ids, max_k=kr.max_k, seconds_to_max_k=_r(kr.seconds_to_max_k),
               avg_k=round(kr.avg_k, 2), success_rate=round(kr.success_rate, 4), ids_at_max_k=kr.ids_at_max_k,
               iterations=kr.iterations, search_seconds=round(kr.seconds, 3),
               history=[[round(a, 3), b] for a, b in kr.history])
    if kr.witness is not None:
        row["k_witness"] = kr.witness.to_dict()
    if good:
        row.update(status="violated", how="search", seconds_to_first=_r(kr.seconds_to_first_id),
                   witnesses=good[:10], reason="replayed witness (onnxruntime)")
    else:
        row["reason"] = "no 2-discriminant found" if not kr.ids else "witnesses did not replay"
    return row


def try_prove(row, model, ds, name, bench, prove_seconds, partitions="default", part_seconds=10.0, unfair_nodes=0,
              refine=0.0, estimate=0, seed=0):
    """Helper 3a's MILP: partitioned proof when available, else one proof over the domain
    for rows the search left unknown."""
    try:
        from fairspec.backends import milp
        from fairspec.backends.pair import PairProblem
        from fairspec.models import network
    except Exception as e:  # noqa: BLE001 - backend absent
        row["coverage"] = f"not attempted ({type(e).__name__})"
        return
    d = bench.domains[ds]
    names = d["feature_order"]
    lo = [d["verification_domain"][n][0] for n in names]
    hi = [d["verification_domain"][n][1] for n in names]
    idx = names.index(name)
    parts = None
    net = network.from_onnx(bench.onnx(model))
    problem = PairProblem(net, lo, hi, [True] * len(names), (), (idx,), None, (),
                          "label" if row["property"] == "sign" else "prob", 0.0 if row["property"] == "sign" else EPS)
    part = getattr(milp, "solve_partitioned", None)
    t_prove = time.perf_counter()
    try:
        if part is not None and partitions == "fairify":
            # Fairify's own partitions (domains.json: partition_threshold_src), every one decided or
            # left undecided after its per-partition budget; the coverage counts them
            from fairspec.backends.milp.partition import fairify_partitions

            parts = fairify_partitions(problem, threshold=d["partition_threshold_src"])
            res = part(problem, mode="prove", parts=parts, time_per_part=part_seconds, time_limit=prove_seconds,
                       unfair_nodes=unfair_nodes, engine=ENGINE, unions=UNIONS,
                       **({"refine": refine} if refine else {}), **_estimate_kw(estimate, seed))
        elif part is not None:
            res = part(problem, mode="prove", time_limit=prove_seconds, unfair_nodes=unfair_nodes, engine=ENGINE,
                       unions=UNIONS,
                       **({"refine": refine} if refine else {}), **_estimate_kw(estimate, seed))
        elif row["status"] == "unknown":
            res = milp.prove(problem, time_limit=prove_seconds)
        else:
            row["coverage"] = "n/a (search refuted; no partitioned prover yet)"
            return
    except Exception as e:  # noqa: BLE001 - report, do not crash the benchmark
        row["coverage"] = f"error: {type(e).__name__}: {e}"
        return
    row["prove_seconds"] = _r(time.perf_counter() - t_prove, 2)
    row["engine"] = ENGINE
    row["unions"] = UNIONS
    st = getattr(res, "stats", None) or {}
    if "attack_refuted" in st:
        # partitions refuted by the batched attack before any solver, and decided by each retry pass
        row["attack_refuted"] = st["attack_refuted"]
        # the second attack, on what the first decision pass left (None: it did not run)
        row["attack_again_refuted"] = st.get("attack_again_refuted")
        # the first attack's heavy round: boxes, refuted, and when the first decision pass was to run its
        # sample's counts and the boxes put off until after that pass (None: it did not run)
        row["attack_heavy"] = st.get("attack_heavy")
        row["retry_decided"] = st.get("retry_decided", {})
        row["union_decided"] = st.get("union_decided", 0)
        # the decision pass by refinement (after the retry passes): partitions tried / proved / refuted / open
        row["refine_decided"] = st.get("refine_decided", {})
        # where the time went: each pass's seconds and the partitions it decided
        row["phases"] = st.get("phases", [])
    if "refine" in st:
        # FairQuant's refinement of the partitions without a proof (its own budget, after the decisions)
        row["refine"] = dict(st["refine"])
        if st.get("refine_undecided"):
            row["refine"]["undecided_where"] = undecided_where(net, problem, idx, st["refine_undecided"])
    q = (getattr(res, "stats", None) or {}).get("quantify_seconds")
    if q is not None:
        # the boxes proved unfair are grown after every partition is decided: the decisions' own time
        # is comparable with runs before the shares
        row["quantify_seconds"] = _r(q, 2)
        row["decide_seconds"] = _r(row["prove_seconds"] - q, 2)
    cov = getattr(res, "coverage", None)
    if cov is not None:
        row["coverage"] = {"partitions": cov.partitions, "proved": cov.proved, "refuted": cov.refuted,
                           "undecided": cov.undecided}
        if getattr(cov, "uncertified", 0):
            row["coverage"]["uncertified"] = cov.uncertified     # holds on a solver's word, no Proof
        if getattr(cov, "parts", None):
            # which partitions are left undecided (their indices in Fairify's order), for diagnosis
            row["undecided_parts"] = [k for k, (st, *_) in enumerate(cov.parts) if st == "unknown"]
        if getattr(cov, "shares", None) is not None:
            # FairQuant's shares of the domain of individuals, exact ("p/q") and in percent
            row["shares"] = cov.shares.to_json()
        if getattr(cov, "estimate", None) is not None:
            # the undecided share's estimated unfair / fair split (sampled from the undecided boxes,
            # Clopper-Pearson): an estimate beside the shares (fairspec.backends.estimate)
            row["estimate"] = cov.estimate.to_json()
            if "estimate_seconds" in st:
                row["estimate_seconds"] = _r(st["estimate_seconds"], 2)
        und = undecided_partitions(cov, parts, names)
        if und is not None:
            row["undecided_partitions"] = und
    else:
        row["coverage"] = {"partitions": 1, "proved": int(res.status == "holds"),
                           "refuted": int(res.status == "violated"), "undecided": int(res.status == "unknown")}
    if res.status == "holds" and res.how == "proved" and row["status"] == "unknown":
        row.update(status="holds", how="proved", reason=res.reason or "MILP proof")
    elif res.status == "violated" and row["status"] == "unknown" and res.witness is not None:
        row["milp_witness"] = {"x": list(res.witness.x), "x_prime": list(res.witness.x_prime)}


def _estimate_kw(estimate, seed) -> dict:
    """``solve_partitioned``'s estimate arguments (none when 0: the call stays as before)."""
    return {"estimate": int(estimate), "seed": int(seed)} if estimate else {}


def estimate_cell(row) -> str:
    """The undecided share's estimated unfair part, in percent of the domain with its interval, and
    as a share of the undecided part: ``9.20 [8.85, 9.56] (20.7% of undecided)``; "-" for a row
    without one (older runs' JSON) and the reason's first words when there is no estimate."""
    e = row.get("estimate")
    if not isinstance(e, dict):
        return "-"
    if not e.get("estimated"):
        return "none: " + str(e.get("reason", "?"))[:40]
    u = e["estimated_unfair_in_undecided"]
    of = e["estimated_unfair_of_undecided"]["estimate_percent"]

    def f(x):
        return f"{x:.2f}" if x == 0 or abs(x) >= 0.1 else f"{x:.2g}"

    return (f"{f(u['estimate_percent'])} [{f(u['interval_percent'][0])}, {f(u['interval_percent'][1])}] "
            f"({f(of)}% of undecided)")


#: a row with at most this many undecided partitions lists them (index, box) in its JSON
UNDECIDED_LIST_MAX = 50


def undecided_partitions(cov, parts, names, limit: int = UNDECIDED_LIST_MAX) -> list[dict] | None:
    """The partitions a row left undecided, when they are few (1..``limit``): each one's index in
    ``parts`` (Fairify's partitions, in ``fairify_partitions``'s order), its status (``unknown``: its
    budget ran out; ``skipped``: the row's budget ran out before it) and its box on the partitioned
    inputs (``cov.features``; the other inputs span the domain), by input name."""
    if parts is None or not cov.undecided or cov.undecided > limit or len(cov.parts) != len(parts):
        return None
    out = []
    for k, ((st, sec), (lo, hi)) in enumerate(zip(cov.parts, parts)):
        if st in ("holds", "violated"):
            continue
        out.append({"index": k, "status": st, "seconds": sec,
                    "box": {names[i]: [float(lo[i]), float(hi[i])] for i in cov.features}})
    return out


def undecided_where(net, problem, idx, und, per_box: int = 256) -> dict:
    """An *estimate* of where the refinement's undecided mass is: in each sampled undecided sub-box
    (the 400 largest, 400 more drawn by measure) ``per_box`` uniform individuals, every protected
    value on the network: a box holding an unfair individual is *mixed* (only finer boxes, or points,
    can decide it); one whose sampled signs never change is *loose* (tighter bounds would prove it
    fair); else one protected value's sign changes inside it (*boundary*). Shares by measure."""
    rng = np.random.default_rng(0)
    mass = {"mixed": 0, "boundary": 0, "loose": 0}
    count = dict.fromkeys(mass, 0)
    vals = range(int(problem.lo[idx]), int(problem.hi[idx]) + 1)
    for _, L, H, m in und["boxes"]:
        X = rng.integers(L.astype(np.int64), H.astype(np.int64) + 1, size=(per_box, len(L))).astype(np.float64)
        Z = []
        for v in vals:
            Xv = X.copy()
            Xv[:, idx] = v
            Z.append(np.asarray(net.forward(Xv)) > 0 if problem.post == "label" else np.asarray(net.forward(Xv)))
        Z = np.stack(Z)
        if problem.post == "label":
            unfair = np.any(Z != Z[0], axis=0).any()
            change = any(z.any() and not z.all() for z in Z)
        else:
            P = 1 / (1 + np.exp(-Z))
            unfair = bool(np.any(P.max(axis=0) - P.min(axis=0) > problem.eps))
            change = False
        c = "mixed" if unfair else ("boundary" if change else "loose")
        mass[c] += float(m)
        count[c] += 1
    tot = sum(mass.values()) or 1.0
    return {"sampled_boxes": len(und["boxes"]), "undecided_measure": str(und["measure"]), "boxes": count,
            "share_of_sampled_measure": {c: round(v / tot, 4) for c, v in mass.items()},
            "note": "an estimate from uniform points in sampled undecided sub-boxes, not a proof"}


def sample_unfair(bench, ds, name, prop, replayer, n: int, seed: int) -> dict:
    """An *estimate* beside the proved shares: the share of individuals with a counterfactual that
    breaks the property, from ``n`` individuals drawn uniformly from the domain's integer points
    (onnxruntime, every value of the protected attribute), with its exact 95% interval."""
    d = bench.domains[ds]
    names = d["feature_order"]
    lo = np.array([d["verification_domain"][f][0] for f in names], dtype=np.int64)
    hi = np.array([d["verification_domain"][f][1] for f in names], dtype=np.int64)
    idx = names.index(name)
    rng = np.random.default_rng(seed)
    X = rng.integers(lo, hi + 1, size=(n, len(names))).astype(np.float64)
    outs = []
    for v in range(int(lo[idx]), int(hi[idx]) + 1):
        Xv = X.copy()
        Xv[:, idx] = v
        outs.append(replayer.logit(Xv) if prop == "sign" else replayer.prob(Xv))
    O = np.stack(outs)
    if prop == "sign":
        pos = O > 0
        bad = pos.any(axis=0) & ~pos.all(axis=0)
    else:
        bad = (O.max(axis=0) - O.min(axis=0)) > EPS
    from scipy.stats import binomtest

    k = int(bad.sum())
    ci = binomtest(k, n).proportion_ci(0.95, method="exact")
    return {"n": int(n), "unfair": k, "unfair_percent": 100 * k / n,
            "ci95_percent": [100 * float(ci.low), 100 * float(ci.high)],
            "note": "an estimate from uniform samples (Clopper-Pearson 95%), not a proof"}


def certify_cost(row, model, ds, name, bench, args):
    """``--certify-cost``: the row's partitioned proof twice in this process, first with every
    solver "holds" taken as it is (``FAIRSPEC_BENCH_UNCERTIFIED=1``, which the pipeline's gate would
    turn into unknown), then as fairspec ships it (every "holds" certified on the float32 runtime);
    the process pool is restarted between the two so its workers see the switch."""
    from fairspec.runtime.executor import shutdown_pools

    os.environ["FAIRSPEC_BENCH_UNCERTIFIED"] = "1"
    shutdown_pools()
    try:
        try_prove(row, model, ds, name, bench, args.prove, args.partitions, args.part_seconds, args.unfair_nodes)
    finally:
        os.environ.pop("FAIRSPEC_BENCH_UNCERTIFIED", None)
        shutdown_pools()
    bare = {"prove_seconds": row.pop("prove_seconds", None), "coverage": row.pop("coverage", None),
            "shares": row.pop("shares", None)}
    if row.get("how") == "proved":          # the uncertified run's verdict is not kept
        row.update(status="unknown", how=None, reason=None)
    try_prove(row, model, ds, name, bench, args.prove, args.partitions, args.part_seconds, args.unfair_nodes)
    row["uncertified"] = bare
    a, b = bare["prove_seconds"], row.get("prove_seconds")
    row["certify_cost"] = None if not a or b is None else _r(b / a - 1.0, 3)


def render_certify_cost(rows, console):
    from rich.table import Table

    def cov(c):
        return f"{c['proved']}/{c['refuted']}/{c['undecided']} of {c['partitions']}" if isinstance(c, dict) else str(c)

    t = Table(title="certification cost (same process; proved/refuted/undecided partitions)")
    for c in ("model", "protected", "property", "uncertified s", "uncertified", "certified s", "certified", "cost"):
        t.add_column(c)
    for r in rows:
        if "uncertified" not in r:
            continue
        u = r["uncertified"]
        cost = r.get("certify_cost")
        t.add_row(r["model"], r["protected"], r["property"], str(u["prove_seconds"]), cov(u["coverage"]),
                  str(r.get("prove_seconds")), cov(r.get("coverage")), "-" if cost is None else f"{cost:+.1%}")
    console.print(t)


def _r(v, nd=4):
    return None if v is None else round(float(v), nd)


# --------------------------------------------------------------------------- table
def published_cols(bench, row):
    model = row["model"]
    pub = bench.published.get((model, row["protected"]))
    t1 = HYFAIR_TABLE1.get(model)
    t2 = HYFAIR_TABLE2_SA.get(model)
    return pub, t1, t2


def share_cells(row) -> list[str]:
    """The certified / falsified / undecided shares of the domain (FairQuant), in percent: exact
    fractions in the JSON; here a non-zero share never prints as 0 and a share below 1 never as 100."""
    from fractions import Fraction

    from fairspec.backends.quantify import fmt_percent

    sh = row.get("shares")
    if not sh:
        return ["-", "-", "-"]
    return [fmt_percent(Fraction(sh[k])) for k in ("certified", "falsified", "undecided")]


def render(rows, bench, console):
    from rich.table import Table

    t = Table(title="Fairify networks: falsification and k-discrimination", show_lines=False)
    for c in ("model", "protected", "prop", "K", "status", "t first (s)", "#ID", "max k", "t max k (s)",
              "coverage (proved/refuted/undecided)", "certified %", "falsified %", "undecided %",
              "unfair % (sampled)", "undecided & unfair %, estimated",
              "Fairify S/U/K", "HyFair T.I #ID/T.1st/#K", "HyFair T.II SA Max.K/T.maxK"):
        t.add_column(c, overflow="fold")
    for row in rows:
        pub, t1, t2 = published_cols(bench, row)
        cov = row["coverage"]
        if isinstance(cov, dict):
            cov = f"{cov['proved']}/{cov['refuted']}/{cov['undecided']} of {cov['partitions']}"
            if row.get("prove_seconds") is not None:
                cov += f" in {row['prove_seconds']:g} s"
        style = {"violated": "red", "holds": "green"}.get(row["status"], "yellow")
        t.add_row(row["model"], row["protected"], row["property"], str(row["K"]),
                  f"[{style}]{row['status']}[/{style}]",
                  "-" if row["seconds_to_first"] is None else f"{row['seconds_to_first']:.3f}",
                  str(row["ids"]), "-" if row["max_k"] is None else str(row["max_k"]),
                  "-" if row["seconds_to_max_k"] is None else f"{row['seconds_to_max_k']:.2f}",
                  str(cov), *share_cells(row),
                  "-" if not row.get("sampled_unfair") else
                  "{:.2f} [{:.2f}, {:.2f}]".format(row["sampled_unfair"]["unfair_percent"],
                                                   *row["sampled_unfair"]["ci95_percent"]),
                  estimate_cell(row),
                  "-" if pub is None else "/".join(map(str, pub)),
                  "-" if t1 is None or row["property"] != "eps" else
                  f"{t1[0]} / {t1[1] if t1[1] is not None else 'N/A'} / {t1[3] if t1[3] is not None else 'N/A'}",
                  "-" if t2 is None or row["property"] != "eps" or row["K"] < 10 and row["model"].startswith("AC")
                  else f"{t2[1]} / {t2[7]}")
    console.print(t)


def summary(rows, bench) -> dict:
    """The issue-3 targets over the measured rows."""
    sat = []
    for row in rows:
        if row["property"] != "sign":
            continue
        pub = bench.published.get((row["model"], row["protected"]))
        if pub is not None and pub[0] > 0:
            sat.append(row)
    holds_wrong = [r for r in sat if r["status"] == "holds"]
    refuted = [r for r in sat if r["status"] == "violated" and r["seconds_to_first"] is not None
               and r["seconds_to_first"] <= 60]
    times = [r["seconds_to_first"] for r in sat if r["seconds_to_first"] is not None]
    return {
        "fairify_sat_pairs": len(sat),
        "holds_where_fairify_sat": len(holds_wrong),
        "refuted_within_60s": len(refuted),
        "median_seconds_to_first": statistics.median(times) if times else None,
        "max_seconds_to_first": max(times) if times else None,
        "unknown_where_fairify_sat": [f"{r['model']}/{r['protected']}" for r in sat if r["status"] != "violated"],
    }


def _net_key(model: str):
    fam, n = model.split("-")
    return ({"GC": 0, "BM": 1, "AC": 2}.get(fam, 3), int(n))


def _peak_cell(row) -> str:
    pm = row.get("peak_memory")
    if not isinstance(pm, dict):
        return "-"
    w = pm.get("workers_mib") or []
    if isinstance(pm.get("dask_workers_mib"), list):
        w = w + pm["dask_workers_mib"]
    return f"{pm['bench_mib']:.0f}" + (" + " + " + ".join(f"{x:.0f}" for x in w) if w else "")


def _load_cell(row) -> str:
    a, b = row.get("load_start"), row.get("load_end")
    return "-" if not a or not b else f"{a[0]:.1f} / {b[0]:.1f}"


#: the protected attributes of Fairify's src experiment per data set (domains.json: src(main), src(alt))
FAIRIFY_ATTRIBUTES = {"AC": ("sex", "race"), "BM": ("age",), "GC": ("age", "sex")}
FAIRIFY_NETWORKS = [f"GC-{i}" for i in range(1, 6)] + [f"BM-{i}" for i in range(1, 9)] + \
    [f"AC-{i}" for i in range(1, 13)]


def newest_rows(rows) -> list[dict]:
    """One row per (network, attribute, property): when several runs hold the same row (a re-run with
    another budget or code), the newest run's (``_run``: the run's order by start, set by
    ``render_md``; else the later in the list). The per-network summary counts only these."""
    best: dict = {}
    for i, r in enumerate(rows):
        key = (r["model"], r["protected"], r["property"])
        rank = (r.get("_run", -1), i)
        if key not in best or rank > best[key][0]:
            best[key] = (rank, r)
    keep = {id(r) for _, r in best.values()}
    return [r for r in rows if id(r) in keep]


def network_summary(rows) -> list[dict]:
    """Per network and property: partitions decided over its attributes, the worst undecided share,
    and the network's wall time (the sum of its attributes' rows, one after another, as the issue's
    "30 minutes per network"); a row run twice counts once, the newest run's (``newest_rows``)."""
    out: dict = {}
    for r in newest_rows(rows):
        cov = r.get("coverage")
        if not isinstance(cov, dict):
            continue
        key = (r["model"], r["property"])
        n = out.setdefault(key, {"model": r["model"], "property": r["property"], "attributes": [], "partitions": 0,
                                 "decided": 0, "undecided": 0, "wall_seconds": 0.0, "max_undecided_percent": 0.0,
                                 "loads": []})
        n["attributes"].append(r["protected"])
        n["partitions"] += cov["partitions"]
        n["decided"] += cov["proved"] + cov["refuted"]
        n["undecided"] += cov["undecided"]
        n["wall_seconds"] = round(n["wall_seconds"] + (r.get("wall_seconds") or 0.0), 1)
        sh = r.get("shares") or {}
        n["max_undecided_percent"] = max(n["max_undecided_percent"], sh.get("undecided_percent", 100.0))
        if sh.get("undecided") is not None:
            from fractions import Fraction

            n["max_undecided"] = str(max(Fraction(sh["undecided"]), Fraction(n.get("max_undecided", "0"))))
        for ld in (r.get("load_start"), r.get("load_end")):
            if ld:
                n["loads"].append(ld[0])
    return sorted(out.values(), key=lambda n: (n["property"] != "sign", n["property"], _net_key(n["model"])))


def render_md(docs: list[dict], notes: str | None = None) -> str:
    """The committed table (``--render-md``): every row with Fairify's published counts beside it,
    the shares, wall / decide seconds, peak memory and the loads; then a summary per network."""
    from fractions import Fraction

    from fairspec.backends.quantify import fmt_percent

    lines = ["# All 25 Fairify networks on Fairify's partitions (issue 24)", ""]
    rows = []
    # runs numbered by their start (the "run" column); a row run again in a later run is superseded
    order = sorted(range(len(docs)), key=lambda i: (docs[i].get("run", {}).get("started_utc") or "", i))
    for num, i in enumerate(order, 1):
        doc = docs[i]
        run = doc.get("run", {})
        for r in doc.get("rows", []):
            rows.append(dict(r, _run=num, _prove=run.get("prove")))
        lines.append(f"Run {num}:")
        lines.append("")
        lines.append(f"    {run.get('command', '?')}")
        lines.append("")
        lines.append(f"Commit {run.get('commit', '?')}, started {run.get('started_utc', '?')}, "
                     f"{run.get('seconds', '?')} s, workers {run.get('workers')}, cluster {run.get('cluster')}, "
                     f"{run.get('cpus', '?')} cores, load average at the start "
                     f"{', '.join(map(str, run.get('load_start') or []))}, at the end "
                     f"{', '.join(map(str, run.get('load_end') or []))}"
                     f"{'' if run.get('finished') else ' (stopped or still running: the rows so far)'}. "
                     f"{len(doc.get('rows', []))} rows.")
        lines.append("")
    newest = {id(r) for r in newest_rows(rows)}
    lines += ["| network | attr | prop | proved / refuted / undecided of partitions | decided | certified | "
              "falsified | undecided | unfair, sampled (95%) | undecided and unfair, estimated (95%) | wall s | decide s | peak MiB (bench + child processes) | "
              "load start / end | Fairify SAT (unfair) / UNSAT (fair) / UNK (30 min) | run (--prove s per row) |",
              "|:---|:---|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---|"]
    for r in sorted(rows, key=lambda r: (r["property"], _net_key(r["model"]), r["protected"], r["_run"])):
        cov = r.get("coverage")
        if isinstance(cov, dict):
            c = f"{cov['proved']:,} / {cov['refuted']:,} / {cov['undecided']:,} of {cov['partitions']:,}"
            dec = fmt_percent(Fraction(cov["proved"] + cov["refuted"], cov["partitions"]))
        else:
            c, dec = str(cov), "-"
        sh = r.get("shares")
        shares = [fmt_percent(Fraction(sh[k])) for k in ("certified", "falsified", "undecided")] if sh else ["-"] * 3
        su = r.get("sampled_unfair")
        sampled = "-" if not su else "{:.2f} [{:.2f}, {:.2f}]".format(su["unfair_percent"], *su["ci95_percent"])
        pub = r.get("fairify_published")
        # Fairify verified its sign property only: beside an eps row its counts are those of sign
        pubc = "-" if not pub else f"{pub['SAT']} / {pub['UNSAT']} / {pub['UNK']}" + (
            " (sign)" if r["property"] != "sign" else "")
        runc = f"{r['_run']} ({r['_prove']:g})" if isinstance(r.get("_prove"), (int, float)) else f"{r['_run']}"
        if id(r) not in newest:
            runc += ", superseded"
        lines.append(f"| {r['model']} | {r['protected']} | {r['property']} | {c} | {dec} | {' | '.join(shares)} | "
                     f"{sampled} | {estimate_cell(r)} | {r.get('wall_seconds', '-')} | {r.get('decide_seconds', r.get('prove_seconds', '-'))} | "
                     f"{_peak_cell(r)} | {_load_cell(r)} | {pubc} | {runc} |")
    lines += ["", "Per network (its attributes one after another: wall s is the sum of its attributes' rows, "
                  "a row run twice counted once, the newest run's; the target: every partition decided within "
                  "30 minutes per network, the undecided share of the domain below 1%):", "",
              "| network | prop | attributes | decided partitions | undecided | wall s | max undecided share | "
              "load range | 100% decided within 1800 s |", "|:---|:---|:---|---:|---:|---:|---:|---:|:---:|"]
    for n in network_summary(rows):
        ok = n["undecided"] == 0 and n["wall_seconds"] <= 1800
        ok = ok if all(a in n["attributes"] for a in FAIRIFY_ATTRIBUTES.get(n["model"].split("-")[0], ())) else None
        lo, hi = (min(n["loads"]), max(n["loads"])) if n["loads"] else (0, 0)
        missing = [a for a in FAIRIFY_ATTRIBUTES.get(n["model"].split("-")[0], ()) if a not in n["attributes"]]
        attrs = ", ".join(n["attributes"]) + (f" ({', '.join(missing)}: not run)" if missing else "")
        lines.append(f"| {n['model']} | {n['property']} | {attrs} | "
                     f"{n['decided']:,} of {n['partitions']:,} | {n['undecided']:,} | {n['wall_seconds']} | "
                     f"{fmt_percent(Fraction(n['max_undecided'])) if 'max_undecided' in n else '-'} | "
                     f"{lo:.1f}-{hi:.1f} | {'yes' if ok else 'not all run' if ok is None else 'no'} |")
    nets = network_summary(rows)
    for prop in sorted({n["property"] for n in nets}, key=lambda p: (p != "sign", p)):
        ns = [n for n in nets if n["property"] == prop]
        parts, decided = sum(n["partitions"] for n in ns), sum(n["decided"] for n in ns)
        full = [n for n in ns if all(a in n["attributes"] for a in FAIRIFY_ATTRIBUTES.get(n["model"][:2], ()))]
        lines.append("")
        lines.append(f"{prop}: {len(full)} networks with every attribute run (and {len(ns) - len(full)} in part); "
                     f"every partition decided on {sum(n['undecided'] == 0 for n in full)} of them, within 1800 s "
                     f"on {sum(n['undecided'] == 0 and n['wall_seconds'] <= 1800 for n in full)}; over every row "
                     f"run (the newest run of a row run twice), {decided:,} of {parts:,} partitions decided ({fmt_percent(Fraction(decided, parts))}).")
    for prop in sorted({n["property"] for n in nets}, key=lambda p: (p != "sign", p)):
        seen = {n["model"] for n in nets if n["property"] == prop}
        left = [m for m in FAIRIFY_NETWORKS if m not in seen]
        if left:
            lines.append("")
            lines.append(f"{prop}: not run: {', '.join(left)}.")
    if notes:
        lines += ["", notes.rstrip()]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- main runs
def run_all(args, bench, console, on_row=None):
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from fairspec.backends.search.evaluators import onnx_evaluator

    models = args.models or bench.models()
    jobs = []
    for model in models:
        ds = model.split("-")[0]
        for name, _ in bench.protected(ds):
            if args.protected and name not in args.protected:
                continue
            for prop in args.props:
                jobs.append(("pair", model, ds, name, prop))
        if not args.no_kdisc:
            for label, _ in kdisc_spaces(bench, ds, bench.box(ds), pairs_done=True):
                jobs.append(("kdisc", model, ds, label, "eps"))
    rows = []
    cache = {}
    peak = PeakMemory(dask_client())
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=console, transient=False) as progress:
        task = progress.add_task("starting", total=len(jobs))
        for kind, model, ds, name, prop in jobs:
            progress.update(task, description=f"{model} {name} {prop}")
            if model not in cache:
                cache.clear()
                cache[model] = (onnx_evaluator(bench.onnx(model)), Replayer(bench.onnx(model)))
            evaluate, replayer = cache[model]
            box = bench.box(ds)
            load0 = loadavg()
            peak.start()
            t_row = time.perf_counter()
            if kind == "pair":
                row = run_pair_row(model, ds, name, prop, bench, evaluate, replayer, box, args.budget, args.seed,
                                   args.kdisc_budget if args.kdisc_budget is not None else args.budget)
                if args.prove and args.certify_cost:
                    certify_cost(row, model, ds, name, bench, args)
                elif args.prove:
                    try_prove(row, model, ds, name, bench, args.prove, args.partitions, args.part_seconds,
                              args.unfair_nodes, args.refine, args.estimate, args.seed)
                if args.prove and args.sample_unfair and row.get("shares"):
                    row["sampled_unfair"] = sample_unfair(bench, ds, name, prop, replayer, args.sample_unfair,
                                                          args.seed)
            else:
                space = dict(kdisc_spaces(bench, ds, box))[name]
                row = run_kdisc_row(model, ds, name, space, bench, evaluate, replayer,
                                    args.kdisc_budget if args.kdisc_budget is not None else args.budget, args.seed)
            row["wall_seconds"] = _r(time.perf_counter() - t_row, 2)
            row["peak_memory"] = peak.stop()
            row["load_start"], row["load_end"] = load0, loadavg()
            pub, t1, t2 = published_cols(bench, row)
            row["fairify_published"] = None if pub is None else dict(zip(("SAT", "UNSAT", "UNK"), pub))
            if row["property"] == "eps" and t1 is not None:
                row["hyfair_table1"] = dict(zip(("ids", "seconds_to_first", "k_first", "max_k"), t1))
            if row["property"] == "eps" and t2 is not None:
                row["hyfair_table2_sa"] = dict(zip(("iters_k", "max_k", "avg_k", "seconds_to_first", "ids",
                                                    "success_rate", "ids_at_max_k", "seconds_to_max_k"), t2))
            rows.append(row)
            if on_row is not None:
                on_row(rows)
            progress.advance(task)
            if not console.is_terminal:
                print(f"{model} {row['protected']} {row['property']}: {row['status']} first={row['seconds_to_first']} "
                      f"ids={row['ids']} max_k={row['max_k']} coverage={row['coverage']} wall={row['wall_seconds']} "
                      f"load={row['load_start']}->{row['load_end']}", file=sys.stderr, flush=True)
    return rows


def compare_kdisc(args, bench, console):
    """Max k of a short run against a long run (the issue-3 target compares 120 s with 30 min).

    One run per network with the longest budget; the shorter budgets are read from its
    history (the search is deterministic given the seed, so a shorter run with the same
    seed follows the same trajectory and stops earlier)."""
    from rich.table import Table

    from fairspec.backends.search.kdisc import kdisc_search
    from fairspec.backends.search.evaluators import onnx_evaluator

    budgets = sorted(float(b) for b in args.compare_kdisc.split(","))
    models = args.models or [m for m in bench.models() if m in HYFAIR_TABLE2_SA]
    rows = []
    t = Table(title=f"k-discrimination: max k after {' vs '.join(f'{b:g} s' for b in budgets)} (seed {args.seed})")
    for c in ["model", "protected", "K"] + [f"max k @ {b:g}s" for b in budgets] + ["t max k (s)", "equal",
                                                                                   "HyFair SA Max.K (their K)"]:
        t.add_column(c)
    for model in models:
        ds = model.split("-")[0]
        ev = onnx_evaluator(bench.onnx(model))
        for label, space in kdisc_spaces(bench, ds, bench.box(ds)):
            if args.kdisc_labels and label not in args.kdisc_labels:
                continue
            kr = kdisc_search(ev, space, eps=EPS, data=bench.data(ds), budget_seconds=budgets[-1], seed=args.seed,
                              stop_at_k=space.K)
            ks = [max([k for sec, k in kr.history if sec <= b], default=0) for b in budgets]
            row = {"model": model, "protected": label, "K": space.K, "budgets": budgets, "max_k": ks,
                   "seconds_to_max_k": _r(kr.seconds_to_max_k), "history": [[round(a, 2), k] for a, k in kr.history],
                   "iterations": kr.iterations, "equal": len(set(ks)) == 1}
            rows.append(row)
            t2 = HYFAIR_TABLE2_SA.get(model)
            t.add_row(model, label, str(space.K), *[str(k) for k in ks], f"{kr.seconds_to_max_k or 0:.1f}",
                      "yes" if row["equal"] else "NO", "-" if t2 is None else f"{t2[1]} ({HYFAIR_K.get(ds)})")
            print(f"{model} {label}: {ks} history {row['history']}", file=sys.stderr, flush=True)
    console.print(t)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=DEFAULT_SHARED, help="the shared folder (default ../shared)")
    ap.add_argument("--models", type=lambda s: [m.strip() for m in s.split(",") if m.strip()], default=None)
    ap.add_argument("--budget", type=float, default=10.0, help="seconds per search (default 10)")
    ap.add_argument("--kdisc-budget", type=float, default=None, help="seconds per k-discrimination search")
    ap.add_argument("--no-kdisc", action="store_true", help="skip the combined-attribute k-discrimination rows")
    ap.add_argument("--prove", type=float, default=0.0, help="MILP seconds per row (0: no proofs)")
    ap.add_argument("--partitions", choices=("default", "fairify"), default="default",
                    help="with --prove: partitions of the domain (fairify: Fairify's own, from domains.json)")
    ap.add_argument("--part-seconds", type=float, default=10.0, help="with --prove: seconds per partition")
    ap.add_argument("--unfair-nodes", type=int, default=0,
                    help="with --prove: proof attempts to grow a box proved unfair around each refuted partition's "
                         "witness (FairQuant's falsified share; default 0: counterexample points only; 12 as a "
                         "spec's partitions do: on AC-1 it added 790 s to 934 s of decisions at load 25)")
    ap.add_argument("--refine", type=float, default=0.0,
                    help="with --prove: seconds per row of FairQuant's refinement inside the partitions left "
                         "without a proof (sub-boxes proved fair / unfair or enumerated; counted in the shares)")
    ap.add_argument("--sample-unfair", type=int, default=20000,
                    help="with --prove: individuals drawn uniformly to estimate the unfair share beside the "
                         "proved shares (0: none)")
    ap.add_argument("--estimate", type=int, default=10000,
                    help="with --prove: individuals drawn uniformly from the undecided share (seeded by --seed) "
                         "for its estimated unfair / fair split with Clopper-Pearson 95%% intervals, beside the "
                         "proved shares (fairspec.backends.estimate; 0: none)")
    ap.add_argument("--props", type=lambda s: [p.strip() for p in s.split(",") if p.strip()], default=["sign", "eps"],
                    help="pair properties (default sign,eps)")
    ap.add_argument("--protected", type=lambda s: [p.strip() for p in s.split(",") if p.strip()], default=None,
                    help="only these protected attributes (e.g. sex)")
    ap.add_argument("--certify-cost", action="store_true",
                    help="with --prove: prove each row twice in this process, without and with certification")
    ap.add_argument("--workers", type=int, default=None,
                    help="worker processes for the partitions (default: the machine's cores)")
    ap.add_argument("--cluster", default=None,
                    help="a Dask scheduler address (tcp://host:8786), or local:N to start a LocalCluster of N "
                         "single-threaded worker processes in this run")
    ap.add_argument("--render-md", type=Path, nargs="+", default=None, metavar="JSON",
                    help="write the markdown table of these runs' JSON files (to --md) and exit")
    ap.add_argument("--md", type=Path, default=None, help="with --render-md: the markdown file (default stdout)")
    ap.add_argument("--notes", type=Path, default=None, help="with --render-md: markdown appended (what it says)")
    ap.add_argument("--engine", choices=("highs", "scip", "portfolio"), default="highs",
                    help="with --prove: the MILP engine per partition (portfolio: HiGHS and SCIP raced, and the "
                         "retry passes race them again)")
    ap.add_argument("--no-unions", action="store_true",
                    help="with --prove: no union pass (neighbouring partitions proved together by the certified "
                         "branch and bound before the per-partition pass)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--compare-kdisc", default=None, help="budgets, e.g. 120,600: max k of each (own runs)")
    ap.add_argument("--kdisc-labels", type=lambda s: s.split(","), default=None,
                    help="with --compare-kdisc: only these attribute sets (e.g. age2*race*sex)")
    args = ap.parse_args(argv)
    global ENGINE, UNIONS
    ENGINE = args.engine
    UNIONS = not args.no_unions

    if args.render_md:
        text = render_md([json.loads(p.read_text()) for p in args.render_md],
                         args.notes.read_text() if args.notes else None)
        if args.md:
            args.md.write_text(text)
        else:
            sys.stdout.write(text)
        return
    from rich.console import Console

    console = Console(width=None if sys.stdout.isatty() else 200)
    bench = Bench(args.shared.resolve())
    if args.models:
        unknown = [m for m in args.models if m not in bench.models()]
        if unknown:
            raise SystemExit(f"unknown models: {', '.join(unknown)}")
    from fairspec.runtime import executor

    address, local_cluster = start_cluster(args.cluster)
    executor.configure(args.workers, address)
    t0 = time.perf_counter()
    run = {"command": "python bench/fairify.py " + " ".join(sys.argv[1:] if argv is None else argv),
           "commit": git_commit(), "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "load_start": loadavg(), "cpus": os.cpu_count(), "workers": args.workers, "cluster": args.cluster,
           "budget": args.budget}
    if args.prove:
        run.update(prove=args.prove, part_seconds=args.part_seconds, unfair_nodes=args.unfair_nodes,
                   sample_unfair=args.sample_unfair, estimate=args.estimate)

    def write(out):
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            tmp = args.json.with_suffix(args.json.suffix + ".tmp")
            tmp.write_text(json.dumps(out, indent=1, default=float))
            os.replace(tmp, args.json)          # a run stopped mid-write keeps the previous rows

    def partial(rows):
        write({"rows": rows, "run": {**run, "seconds": round(time.perf_counter() - t0, 1), "load_end": loadavg(),
                                     "finished": False}, **{k: v for k, v in run.items() if k == "budget"}})

    try:
        if args.compare_kdisc:
            rows = compare_kdisc(args, bench, console)
            out = {"compare_kdisc": rows, "equal": sum(r["equal"] for r in rows), "of": len(rows)}
        else:
            rows = run_all(args, bench, console, on_row=partial)
            render(rows, bench, console)
            out = {"rows": rows, "summary": summary(rows, bench)}
            console.print(out["summary"])
            if args.certify_cost:
                render_certify_cost(rows, console)
    finally:
        if local_cluster is not None and address in executor._DASK:
            executor._DASK[address].shutdown()
    out["seconds"] = round(time.perf_counter() - t0, 1)
    out["budget"] = args.budget
    out["run"] = {**run, "seconds": out["seconds"], "load_end": loadavg(), "finished": True}
    if args.prove:
        out["unfair_nodes"] = args.unfair_nodes
        out["sample_unfair"] = args.sample_unfair
    if args.json:
        write(out)
        console.print(f"wrote {args.json}")
    if local_cluster is not None:
        local_cluster.close()


if __name__ == "__main__":
    main()
