"""Benchmark: what certifying the sign property costs on Fairify's networks.

For a sample of Fairify's input partitions (``domains.json``: ``partition_threshold_src``; AC: 16,000
partitions) of AC-1 and BM-1 and the sign property (x, x' equal but for the protected attribute,
both in the verification domain; violated by logits of opposite sign), in the same process:

* ``milp``: HiGHS's MILP alone (the drivers' ``prove`` on a ``MilpEngine``: its "infeasible" is
  evidence only);
* ``shipped``: ``fairspec.backends.milp.prove`` as fairspec runs it -- the MILP, then every "holds"
  certified by ``bab.certify_holds`` on the float32 runtime (``backends/pair/certify.py``), so a
  "holds" the BaB cannot certify in the budget is ``unknown``;
* ``bab``:  the certified branch and bound (``fairspec.backends.bab.prove_below``) of the claim
  ``min(z, -z') < -E`` over the real-arithmetic network, E the rigorous float32 runtime error bound
  of the partition (``fairspec.certify.network.runtime_error_bound``); every leaf checked by certify
  as the tree grows (a ``bab-certificate``); a candidate pair is replayed on onnxruntime.

Printed per model: partitions, decided by each, agreement, seconds of each, their ratio (bab / milp:
the BaB as the only engine, including finding violations, which the MILP does faster), the same on
the partitions the MILP proves, ``certify_overhead`` (BaB seconds on the MILP's "holds" partitions
over the MILP's seconds on all: the extra cost of the flow "MILP first, then certify its holds"), the
tree sizes and the largest runtime error bound E.

    python bench/certify.py [--models AC-1,BM-1] [--sample 400] [--seconds 20] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_SHARED = Path(os.environ.get("FAIRSPEC_SHARED") or ROOT.parent / "shared")


def load(shared: Path, model: str):
    d_all = json.loads((shared / "bench" / "fairify" / "domains.json").read_text())
    ds = model.split("-")[0]
    d = d_all[ds]
    names = d["feature_order"]
    lo = np.array([d["verification_domain"][n][0] for n in names], dtype=np.float64)
    hi = np.array([d["verification_domain"][n][1] for n in names], dtype=np.float64)
    prot = d["protected"]["src(main)"][0]
    return shared / "bench" / "fairify" / "models" / f"{model}.onnx", lo, hi, int(prot[1]), prot[0], d


def run_model(model: str, shared: Path, sample: int, seconds: float) -> dict:
    import onnxruntime as ort

    from fairspec.backends import milp
    from fairspec.backends.pair import drivers as pair_drivers
    from fairspec.backends.bab import prove_below
    from fairspec.backends.milp.modes import MilpEngine
    from fairspec.backends.pair.certify import Runtime
    from fairspec.backends.milp.partition import fairify_partitions
    from fairspec.backends.pair import PairProblem, check_witness
    from fairspec.certify.network import as_layers, runtime_error_bound
    from fairspec.models import network

    path, lo, hi, idx, pname, d = load(shared, model)
    net = network.from_onnx(path)
    n = len(lo)
    problem = PairProblem(net, lo, hi, [True] * n, (), (idx,), None, (), "label", 0.0)
    parts = fairify_partitions(problem, threshold=d["partition_threshold_src"])
    rng = np.random.default_rng(0)
    pick = sorted(rng.choice(len(parts), size=min(sample, len(parts)), replace=False))
    chosen = [parts[k] for k in pick]
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    out_name = "logit"

    def logits(X):
        return sess.run([out_name], {"x": np.asarray(X, dtype=np.float32)})[0].reshape(-1).astype(np.float64)

    layers = as_layers(net)
    rt = Runtime(layers, None, ("logit", 0), "float32")
    rows = []
    t_milp = t_bab = t_ship = 0.0
    for lo_p, hi_p in chosen:
        sub = problem.restrict(lo_p, hi_p)
        t0 = time.perf_counter()
        rm = pair_drivers.prove(MilpEngine(sub, time_limit=seconds))
        tm = time.perf_counter() - t0
        t0 = time.perf_counter()
        rs = milp.prove(replace(sub, runtime=rt), time_limit=seconds)
        ts = time.perf_counter() - t0
        t_ship += ts
        t0 = time.perf_counter()
        E = runtime_error_bound(layers, lo_p, hi_p, integer=np.ones(n, bool))
        rb = prove_below(sub, -E, True, time.monotonic() + seconds)
        status = {"proved": "holds", "candidate": "candidate"}.get(rb.status, "unknown")
        if rb.status == "candidate":
            x, xp = rb.pair
            ok = check_witness(sub, x, xp, logits, "logit")
            status = "violated" if ok else "unknown"
        tb = time.perf_counter() - t0
        t_milp += tm
        t_bab += tb
        rows.append({"milp": rm.status, "bab": status, "shipped": rs.status, "shipped_s": ts,
                     "milp_s": tm, "bab_s": tb, "E": E,
                     "nodes": rb.stats.get("nodes", 0), "leaves": rb.stats.get("leaves", 0),
                     "lp_solves": rb.stats.get("lp_solves", 0)})
    agree = sum(r["milp"] == r["bab"] for r in rows)
    hold_rows = [r for r in rows if r["milp"] == "holds"]
    t_milp_h = sum(r["milp_s"] for r in hold_rows)
    t_bab_h = sum(r["bab_s"] for r in hold_rows)
    certified = sum(r["bab"] == "holds" for r in rows)
    milp_holds = sum(r["milp"] == "holds" for r in rows)
    return {
        "model": model, "protected": pname, "partitions_total": len(parts), "sampled": len(rows),
        "milp_holds": milp_holds, "milp_violated": sum(r["milp"] == "violated" for r in rows),
        "milp_unknown": sum(r["milp"] == "unknown" for r in rows),
        "bab_holds": certified, "bab_violated": sum(r["bab"] == "violated" for r in rows),
        "bab_unknown": sum(r["bab"] == "unknown" for r in rows),
        "certified_of_milp_holds": sum(r["milp"] == "holds" and r["bab"] == "holds" for r in rows),
        "agree": agree, "milp_seconds": round(t_milp, 3), "bab_seconds": round(t_bab, 3),
        "ratio": round(t_bab / t_milp, 3) if t_milp else None,
        "milp_seconds_on_holds": round(t_milp_h, 3), "bab_seconds_on_holds": round(t_bab_h, 3),
        "ratio_on_holds": round(t_bab_h / t_milp_h, 3) if t_milp_h else None,
        # the flow MILP first, then the BaB certifies each MILP "holds": its extra cost
        "certify_overhead": round(t_bab_h / t_milp, 3) if t_milp else None,
        # the shipped flow (MILP, then certify_holds on its holds) against the MILP alone
        "shipped_holds": sum(r["shipped"] == "holds" for r in rows),
        "shipped_violated": sum(r["shipped"] == "violated" for r in rows),
        "shipped_unknown": sum(r["shipped"] == "unknown" for r in rows),
        "shipped_seconds": round(t_ship, 3),
        "shipped_over_milp": round(t_ship / t_milp, 3) if t_milp else None,
        "mean_nodes": round(float(np.mean([r["nodes"] for r in rows])), 2),
        "max_nodes": int(max(r["nodes"] for r in rows)),
        "max_E": float(max(r["E"] for r in rows)),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="AC-1,BM-1")
    ap.add_argument("--sample", type=int, default=400, help="partitions per model (evenly spaced)")
    ap.add_argument("--seconds", type=float, default=20.0, help="budget per partition for each engine")
    ap.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    out = []
    for m in args.models.split(","):
        out.append(run_model(m.strip(), args.shared, args.sample, args.seconds))
    cols = ["model", "sampled", "partitions_total", "milp_holds", "milp_violated", "milp_unknown", "bab_holds",
            "bab_violated", "bab_unknown", "certified_of_milp_holds", "agree", "milp_seconds", "bab_seconds",
            "ratio", "milp_seconds_on_holds", "bab_seconds_on_holds", "ratio_on_holds", "certify_overhead", "shipped_holds", "shipped_violated", "shipped_unknown",
            "shipped_seconds", "shipped_over_milp", "mean_nodes", "max_nodes", "max_E"]
    lines = [" | ".join(cols)] + [" | ".join(str(r[c]) for c in cols) for r in out]
    import platform
    lines.append(f"(load average at the end: {os.getloadavg()[0]:.1f}; {platform.python_version()}; "
                 f"sample {args.sample}, {args.seconds:g} s per partition per engine)")
    print("\n".join(lines))
    if args.json:
        args.json.with_suffix(".txt").write_text("\n".join(lines) + "\n")
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "rows": out}, indent=2))


if __name__ == "__main__":
    main()
