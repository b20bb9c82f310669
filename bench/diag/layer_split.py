"""The split at a hidden layer on one Fairify sign row (issue 24, engineer ac7): per partition, every
hidden layer's live neurons (pre-activation upper bound > 0 over the partition, per protected value),
the layer the search picks, its tiles per value, and whether certify's check proves the partition
(``layer_splits.layer_split_plans`` then ``certify.layersplit.prove_layer_split``, at the root: no input split).

    python bench/diag/layer_split.py --shared /work/shared AC-7 race --indices 11903,11543,778
    python bench/diag/layer_split.py --shared /work/shared AC-7 race --sample 2000 --json out.json

One process, one BLAS thread; the per-copy bounds' lower bound at the root printed beside (``decide_boxes``'s).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main():
    from threadpoolctl import threadpool_limits

    from fairspec.backends.pair.certify import runtime_of
    from fairspec.backends.layer_splits import layer_split_plans
    from fairspec.backends.counterfactuals import protected_cases_of
    from fairspec.backends.refine import case_errors
    from fairspec.certify.boxes import box_bounds
    from fairspec.certify.layersplit import prove_layer_split
    from fairspec.certify.network import as_layers
    from rows import fairify_row

    threadpool_limits(1)
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("protected")
    ap.add_argument("--shared", type=Path, default=Path("../shared"))
    ap.add_argument("--indices", type=lambda s: [int(v) for v in s.split(",")], default=None)
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    p, parts, names, idx = fairify_row(a.shared, a.model, a.protected)
    rt = runtime_of(p)
    layers = as_layers(rt.layers)
    cases = protected_cases_of(p)
    pairs = [(i, j) for i in range(len(cases)) for j in range(len(cases)) if i != j]
    errors = case_errors(p, rt, cases)
    sel = a.indices if a.indices is not None else \
        np.random.default_rng(a.seed).choice(len(parts), min(a.sample, len(parts)), replace=False).tolist()
    LO = np.array([parts[k][0] for k in sel], dtype=np.float64)
    HI = np.array([parts[k][1] for k in sel], dtype=np.float64)
    kw = dict(encoding=rt.encoding, integer=p.integer, precision=rt.precision)
    t0 = time.perf_counter()
    plans = layer_split_plans(layers, LO, HI, cases, errors, rt.readout, **kw)
    t1 = time.perf_counter()
    dec = prove_layer_split(layers, LO, HI, cases, pairs, plans, errors=errors, readout=rt.readout, complete=True,
                            claim="diag", **kw)
    t2 = time.perf_counter()
    rows = []
    for j, k in enumerate(sel):
        live, root = [], []
        for c in cases:
            clo, chi = LO[j:j + 1].copy(), HI[j:j + 1].copy()
            for i, v in c.items():
                clo[:, i] = chi[:, i] = v
            keep = []
            plo, _, _ = box_bounds(layers, clo, chi, keep=keep)
            live.append([int((ph[0] > 0).sum()) for _, ph in keep[:-1]])
            root.append(float(plo[0, rt.readout[1]]))
        pl = plans[j]
        rows.append({"index": int(k), "live_per_layer": live, "root_lower": root,
                     "layer": None if pl is None else int(pl[0]),
                     "live_at_layer": None if pl is None else [len(t[0]) for t in pl[1]],
                     "tiles": None if pl is None else [len(t[1]) for t in pl[1]], "proved": bool(dec.status[j] == 1),
                     "why": dec.why[j]})
    for r in rows[:40]:
        print(r["index"], "live", r["live_per_layer"][0], "root lower", round(min(r["root_lower"]), 3), "layer",
              r["layer"], "tiles", r["tiles"], "proved" if r["proved"] else "-")
    out = {"model": a.model, "protected": a.protected, "partitions": len(sel), "proved": int(dec.status.sum()),
           "planned": sum(pl is not None for pl in plans), "search_seconds": round(t1 - t0, 2),
           "check_seconds": round(t2 - t1, 2), "layers": dict(Counter(str(r["layer"]) for r in rows if r["proved"])),
           "tiles_per_value": dict(Counter(str(t) for r in rows if r["proved"] for t in r["tiles"])), "rows": rows}
    print({k: v for k, v in out.items() if k != "rows"})
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
