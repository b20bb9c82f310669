"""Why a Fairify partition stays open (issue 24, reach): for given partitions of one row, the network's
shape, the ReLUs the interval bounds leave unstable over the partition (per protected value), the
sampled logit margin (how close the outputs come to 0) and unfair share, and the refinement's
undecided share of the partition over time (refine_partitions on that partition alone).

    python bench/diag/reach_open.py --shared /work/shared GC-5 age sign 17,18 --seconds 120

An estimate for diagnosis (samples), not a verdict; one process.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main():
    from fairify import EPS

    from fairspec.backends.pair.bounds import interval_bounds
    from rows import fairify_row, sampled_logits
    from fairspec.backends.refine import refine_partitions

    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("protected")
    ap.add_argument("prop", choices=("sign", "eps"))
    ap.add_argument("indices", type=lambda s: [int(v) for v in s.split(",")])
    ap.add_argument("--shared", type=Path, default=Path("../shared"))
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--samples", type=int, default=20000)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    p, parts, names, idx = fairify_row(a.shared, a.model, a.protected, "label" if a.prop == "sign" else "prob",
                                       0.0 if a.prop == "sign" else EPS)
    net = p.net
    arch = [int(l.W.shape[0]) for l in net.layers]
    rng = np.random.default_rng(0)
    vals = np.arange(int(p.lo[idx]), int(p.hi[idx]) + 1)
    out = {"model": a.model, "protected": a.protected, "prop": a.prop, "arch": arch, "partitions": len(parts),
           "rows": []}
    for k in a.indices:
        plo, phi = parts[k]
        row = {"index": k, "box": {names[i]: [float(plo[i]), float(phi[i])] for i in range(len(names))
                                   if plo[i] != p.lo[i] or phi[i] != p.hi[i]}}
        unst = []
        for v in vals:
            clo, chi = plo.copy(), phi.copy()
            clo[idx] = chi[idx] = v
            unst.append(interval_bounds(net, clo, chi).unstable(net))
        row["unstable_relus"] = {"min": min(unst), "max": max(unst), "of": int(sum(arch[:-1]))}
        X, Z = sampled_logits(net, plo, phi, idx, vals, a.samples, rng)
        if a.prop == "sign":
            pos = Z > 0
            unfair = pos.any(axis=0) & (~pos).any(axis=0)
            row["margin"] = {"min_abs_logit": float(np.abs(Z).min()), "median_abs_logit": float(np.median(np.abs(Z))),
                             "share_abs_logit_below_0.01": float((np.abs(Z).min(axis=0) < 0.01).mean())}
        else:
            P = 1 / (1 + np.exp(-Z))
            gap = P.max(axis=0) - P.min(axis=0)
            unfair = gap > EPS
            row["margin"] = {"max_prob_gap": float(gap.max()), "share_gap_above_0.04": float((gap > 0.04).mean())}
        row["sampled_unfair"] = float(unfair.mean())
        t0 = time.perf_counter()
        ref = refine_partitions(p, [(plo, phi)], [None], seconds=a.seconds)
        st = ref.stats
        row["refine"] = {"seconds": round(time.perf_counter() - t0, 1), "boxes": st["boxes"],
                         "fair_boxes": st["fair_boxes"], "unfair_boxes": st["unfair_boxes"],
                         "enumerated_unfair": st["enumerated_unfair"], "trajectory": st.get("trajectory")}
        print(json.dumps(row), flush=True)
        out["rows"].append(row)
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
