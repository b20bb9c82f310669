"""Why a fair Fairify partition stays open (issue 24, engineer "tight"): classify sampled partitions of
one sign row that look fair (no unfair individual in ``--samples`` uniform integer samples) into

* ``proved``  -- the per-copy box bounds (``certify.boxes.decide_boxes``) already prove the whole box;
* ``const``   -- no protected value's logit changes sign over the box (sampled, and no real-valued point
                 of the other sign found by gradient search): the per-copy bounds are only too loose
                 (class iii of the brief);
* ``slab``    -- some protected value's boundary crosses the box and a *real-valued* unfair pair exists
                 (gradient search over the continuous box), none among the integer samples: only integer
                 reasoning can prove it (class ii);
* ``noeffect``-- the boundary crosses the box but no real-valued unfair point is found: the protected
                 input does not move the logit where it crosses 0 (class i: a relational bound);

with, per partition, the ReLUs unstable under interval bounds (per protected value), the sampled
|f(x, a) - f(x, b)| near the boundary and overall, the first layer's protected weights, and what the
refinement (``refine_partitions``) leaves undecided of the box after ``--seconds``.

    python bench/diag/tight_open.py --shared /work/shared AC-7 race --n 30 --seconds 5 --json out.json

An estimate for diagnosis (samples, a local search), not a verdict; one process, one BLAS thread.
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
    import torch
    from threadpoolctl import threadpool_limits

    from fairspec.backends.pair.bounds import interval_bounds
    from rows import fairify_row, sampled_logits
    from fairspec.backends.refine import refine_partitions

    torch.set_num_threads(1)
    threadpool_limits(1)
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("protected")
    ap.add_argument("--shared", type=Path, default=Path("../shared"))
    ap.add_argument("--n", type=int, default=30, help="fair-looking partitions to classify")
    ap.add_argument("--indices", type=lambda s: [int(v) for v in s.split(",")], default=None)
    ap.add_argument("--samples", type=int, default=4000)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    p, parts, names, idx = fairify_row(a.shared, a.model, a.protected)
    net = p.net
    vals = np.arange(int(p.lo[idx]), int(p.hi[idx]) + 1)
    pairs = [(i, j) for i in range(len(vals)) for j in range(len(vals)) if i != j]
    arch = [int(l.W.shape[0]) for l in net.layers]
    Ws = [torch.tensor(np.asarray(l.W, dtype=np.float64)) for l in net.layers]
    bs = [torch.tensor(np.asarray(l.b, dtype=np.float64)) for l in net.layers]
    relus = [l.relu for l in net.layers]

    def f(X):                         # float64 logits of a (.., n) tensor
        h = X
        for W, b, r in zip(Ws, bs, relus):
            h = h @ W.T + b
            if r:
                h = torch.relu(h)
        return h[..., net.output_index]

    rng = np.random.default_rng(a.seed)
    order = a.indices if a.indices is not None else rng.permutation(len(parts)).tolist()
    out = {"model": a.model, "protected": a.protected, "arch": arch, "partitions": len(parts), "rows": [],
           "protected_weights_zero": int((np.asarray(net.layers[0].W)[:, idx] == 0).sum()),
           "first_layer": arch[0]}
    seen = unfair_seen = 0
    t_all = time.perf_counter()
    for k in order:
        if len(out["rows"]) >= a.n:
            break
        plo, phi = parts[k]
        seen += 1
        X, Z = sampled_logits(net, plo, phi, idx, vals, a.samples, rng)
        pos = Z > 0
        if (pos.any(axis=0) & (~pos).any(axis=0)).any():
            unfair_seen += 1
            continue
        row = {"index": k}
        # per-copy bounds over the whole box, and the unstable ReLUs per protected value
        unst, sides = [], []
        for v in vals:
            clo, chi = plo.copy(), phi.copy()
            clo[idx] = chi[idx] = v
            ib = interval_bounds(net, clo, chi)
            unst.append(int(ib.unstable(net)))
        from fairspec.certify.boxes import box_bounds
        from fairspec.certify.network import as_layers

        L = as_layers(net)
        CL = np.repeat(plo[None], len(vals), 0)
        CH = np.repeat(phi[None], len(vals), 0)
        CL[:, idx] = CH[:, idx] = vals
        olo, ohi, _ = box_bounds(L, CL, CH)
        olo, ohi = olo[:, net.output_index], ohi[:, net.output_index]
        row["unstable_relus"] = {"min": min(unst), "max": max(unst), "of": int(sum(arch[:-1]))}
        row["case_bounds"] = [[round(float(x), 3), round(float(y), 3)] for x, y in zip(olo, ohi)]
        bound_const = [(y <= 0) or (x > 0) for x, y in zip(olo, ohi)]
        row["sampled_sign"] = ["+" if pos[c].all() else "-" if (~pos[c]).all() else "+-" for c in range(len(vals))]
        D = np.abs(Z[:, None, :] - Z[None, :, :]).max(axis=(0, 1))
        near = np.abs(Z).min(axis=0)
        row["sampled_abs_logit_min"] = float(near.min())
        row["sampled_diff_max"] = float(D.max())
        q = np.argsort(near)[:50]
        row["diff_near_boundary_max"] = float(D[q].max())
        # real-valued search: for each case, the other sign; for each pair, an unfair real point
        tlo, thi = torch.tensor(plo), torch.tensor(phi)
        starts = torch.tensor(plo + rng.random((256, len(names))) * (phi - plo))

        def climb(obj, x0, steps=150):
            x = x0.clone().requires_grad_(True)
            span = (thi - tlo)
            for s in range(steps):
                val = obj(x)
                g, = torch.autograd.grad(val.sum(), x)
                with torch.no_grad():
                    x += (0.02 * (1 - s / steps) + 0.002) * span * torch.sign(g)
                    x.copy_(torch.max(torch.min(x, thi), tlo))
            with torch.no_grad():
                return obj(x).max().item()

        def at(x, v):
            y = x.clone()
            y[..., idx] = float(v)
            return y

        crosses = []
        for c, v in enumerate(vals):
            s = row["sampled_sign"][c]
            if s == "+-" or not bound_const[c] and climb(lambda x: -f(at(x, v)) if s == "+" else f(at(x, v)), starts) > 0:
                crosses.append(c)
        row["cases_crossing"] = crosses
        best = -np.inf
        if crosses:
            for i, j in pairs:
                if i not in crosses and j not in crosses:
                    continue
                best = max(best, climb(lambda x: torch.minimum(f(at(x, vals[i])), -f(at(x, vals[j]))), starts))
        row["real_unfair_margin"] = None if best == -np.inf else float(best)
        dec = None
        if all(bound_const):
            signs = {bool(x > 0) for x, y in zip(olo, ohi)}
            dec = "proved" if len(signs) == 1 else "unfair-box"
        if dec is None:
            if not crosses:
                dec = "const"
            elif best > 1e-9:
                dec = "slab"
            else:
                dec = "noeffect"
        row["class"] = dec
        # first-layer neurons the protected input feeds that are not dead over the box for some value
        W0 = np.asarray(net.layers[0].W, dtype=np.float64)
        live = 0
        for v in vals:
            clo, chi = plo.copy(), phi.copy()
            clo[idx] = chi[idx] = v
            ib = interval_bounds(net, clo, chi)
            u = np.asarray(ib.z_hi[0]).reshape(-1)
            live = max(live, int(((W0[:, idx] != 0) & (u > 0)).sum()))
        row["protected_live_first_layer"] = live
        t0 = time.perf_counter()
        ref = refine_partitions(p, [(plo, phi)], [None], seconds=a.seconds)
        st = ref.stats
        tr = st.get("trajectory") or [[0, 0, 1.0]]
        row["refine"] = {"seconds": round(time.perf_counter() - t0, 1), "boxes": st["boxes"],
                         "undecided_share": round(tr[-1][2], 4), "fair_boxes": st["fair_boxes"],
                         "cut_fair": st["cut_fair"], "enumerated": st["enumerated"],
                         "unfair": st["unfair_boxes"] + st["enumerated_unfair"] + st["cut_unfair"]}
        print(json.dumps(row), flush=True)
        out["rows"].append(row)
    out["scanned"] = seen
    out["sampled_unfair_skipped"] = unfair_seen
    counts = {}
    for r in out["rows"]:
        counts[r["class"]] = counts.get(r["class"], 0) + 1
    out["classes"] = counts
    out["seconds"] = round(time.perf_counter() - t_all, 1)
    print(json.dumps({"classes": counts, "scanned": seen, "skipped_unfair": unfair_seen, "seconds": out["seconds"]}))
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
