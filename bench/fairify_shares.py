"""Where the undecided share of a Fairify network's domain is, and why (issue 24; results in
bench/results/fairify_shares2.md). Two diagnoses on one network and protected attribute, sign property:

``grow``: draw 20,000 uniform individuals, keep the unfair ones (a pair of protected values gives
opposite signs on the runtime); around each of the first N grow a box greedily in integer steps
(each input, each side, steps doubling per round) while ``certify.boxes.decide_boxes`` proves it
unfair, and again while 512 uniform points of the box are all unfair (a *sampled* oracle: an
estimate of the geometry, not a proof). Equal sizes mean the bounds are not what limits unfair
boxes; the sizes against the domain say how many boxes proving the unfair share would take.

``ab``: the refinement (``backends.refine``) on the whole domain, no partition decisions, for a
number of sub-boxes (``--boxes``, machine-independent) or seconds, with cuts (``--cut-min``) or
without (``--cut-min none``): the certified / falsified / undecided shares and the process CPU time.

``enum``: after ``--boxes`` sub-boxes, how large the undecided sub-boxes are, and how fast exact
enumeration runs on one core (the runtime under every protected value on a million uniform
individuals, ``count_individuals`` on them): whether enumerating larger boxes could pay.

    python bench/fairify_shares.py grow GC-1 age --n 100
    python bench/fairify_shares.py ab GC-1 age --boxes 100000 --cut-min none
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def problem_of(shared: Path, model: str, attr: str):
    from fairspec.backends.pair import PairProblem
    from fairspec.models import network

    d = json.loads((shared / "domains.json").read_text())[model.split("-")[0]]
    names = d["feature_order"]
    lo = [d["verification_domain"][n][0] for n in names]
    hi = [d["verification_domain"][n][1] for n in names]
    net = network.from_onnx(shared / "models" / f"{model}.onnx")
    return PairProblem(net, lo, hi, [True] * len(names), (), (names.index(attr),), None, (), "label", 0.0)


def grow(args, p):
    from fairspec.backends.pair.certify import runtime_of
    from fairspec.backends.counterfactuals import case_scores, protected_cases_of, runtime_scorer
    from fairspec.certify.boxes import decide_boxes
    from fairspec.certify.network import runtime_error_bound

    lo, hi = p.lo.copy(), p.hi.copy()
    idx = p.free[0]
    rt = runtime_of(p)
    cases = protected_cases_of(p)
    pairs = [(a, b) for a in range(len(cases)) for b in range(len(cases)) if a != b]
    errors = []
    for c in cases:
        clo, chi = lo.copy(), hi.copy()
        for i, v in c.items():
            clo[i] = chi[i] = v
        errors.append(runtime_error_bound(rt.layers, clo, chi, encoding=rt.encoding, readout=rt.readout,
                                          precision=rt.precision, integer=p.integer, onehot_groups=()))
    score = runtime_scorer(p)[0]
    rng = np.random.default_rng(args.seed)

    def scores(X):
        return np.stack(case_scores(score, X, cases))

    X = rng.integers(lo.astype(int), hi.astype(int) + 1, size=(20000, len(lo))).astype(float)
    Z = scores(X)
    pos = Z > 0
    bad = pos.any(0) & ~pos.all(0)
    print(f"E per case {errors}; sampled unfair {100 * bad.mean():.2f}% of 20,000")
    ZB = Z[:, bad]
    for a, b in pairs:
        print(f"  pair {cases[a]} positive, {cases[b]} not: {100 * ((ZB[a] > 0) & (ZB[b] <= 0)).mean():.1f}% of them")
    print(f"  median score gap of the unfair individuals: {np.median(ZB.max(0) - ZB.min(0)):.4f}")

    def certified(L, H):
        return decide_boxes(rt.layers, L[None], H[None], cases, pairs, post="label", errors=errors,
                            readout=rt.readout, encoding=rt.encoding, integer=p.integer, precision=rt.precision,
                            complete=True, claim_fair="-", claim_unfair="-").status[0] == -1

    def sampled(L, H, n=512):
        P = rng.integers(L.astype(int), H.astype(int) + 1, size=(n, len(L))).astype(float)
        S = scores(P) > 0
        return bool((S.any(0) & ~S.all(0)).all())

    dims = [i for i in range(len(lo)) if i != idx]

    def grown(x, oracle):
        L, H = x.copy(), x.copy()
        step = dict.fromkeys(dims, 1)
        for rnd in range(40):
            moved = False
            for i in dims:
                for side in (0, 1):
                    L2, H2 = L.copy(), H.copy()
                    if side == 0 and L[i] > lo[i]:
                        L2[i] = max(lo[i], L[i] - step[i])
                    elif side == 1 and H[i] < hi[i]:
                        H2[i] = min(hi[i], H[i] + step[i])
                    else:
                        continue
                    if oracle(L2, H2):
                        L, H, moved = L2, H2, True
            for i in dims:
                step[i] *= 2
            if not moved and rnd > 2:
                break
        return L, H

    def log_count(L, H):
        return float(np.sum([np.log10(H[i] - L[i] + 1) for i in dims]))

    rows = []
    for x in X[bad][: args.n]:
        if not certified(x, x):
            rows.append(None)
            continue
        Lc, Hc = grown(x, certified)
        Ls, Hs = grown(x, sampled)
        rows.append((log_count(Lc, Hc), log_count(Ls, Hs), [Hc[i] - Lc[i] + 1 for i in dims],
                     [Hs[i] - Ls[i] + 1 for i in dims]))
    ok = [r for r in rows if r is not None]
    print(f"single individuals proved unfair: {len(ok)} of {len(rows)}")
    c, s = np.array([r[0] for r in ok]), np.array([r[1] for r in ok])
    print(f"log10 individuals in the box grown while proved unfair: median {np.median(c):.2f}, mean {c.mean():.2f}, "
          f"max {c.max():.2f}")
    print(f"log10 individuals in the box grown while sampled unfair: median {np.median(s):.2f}, mean {s.mean():.2f}, "
          f"max {s.max():.2f}")
    wc, ws = np.median([r[2] for r in ok], axis=0), np.median([r[3] for r in ok], axis=0)
    print(f"median widths, proved:  {wc.tolist()}\nmedian widths, sampled: {ws.tolist()}")
    print(f"inputs of median width 1: proved {int((wc == 1).sum())}, sampled {int((ws == 1).sum())} of {len(dims)}")
    print(f"log10 individuals of the domain: {log_count(lo, hi):.2f}; domain widths "
          f"{[int(hi[i] - lo[i] + 1) for i in dims]}")


def ab(args, p):
    from fairspec.backends.quantify import measure
    from fairspec.backends.refine import refine_partitions

    M = measure(p)
    cut = None if args.cut_min == "none" else float(args.cut_min)
    l0 = os.getloadavg()[0]
    c0 = time.process_time()
    ref = refine_partitions(p, [(p.lo.copy(), p.hi.copy())], [None], seconds=args.seconds, max_boxes=args.boxes,
                            cut_min=cut)
    cpu = time.process_time() - c0
    fair = sum(t[4] for t in ref.decided)
    unfair = sum(t[5] for t in ref.decided)
    st = ref.stats
    print(f"{args.model} {args.attr} cut_min={cut} load {l0:.1f}->{os.getloadavg()[0]:.1f}: {st['boxes']:,} sub-boxes, "
          f"wall {st['seconds']:.1f} s, CPU {cpu:.1f} s; certified {100 * fair / M:.2f}%, falsified "
          f"{100 * unfair / M:.2e}%, undecided {100 * (1 - (fair + unfair) / M):.2f}%; proved fair {st['fair_boxes']:,}, "
          f"cut fair {st['cut_fair']:,}, proved unfair {st['unfair_boxes']:,}, cut unfair {st['cut_unfair']:,}, "
          f"enumerated {st['enumerated']:,}")


def enum(args, p):
    from fairspec.backends.counterfactuals import case_scores, protected_cases_of, runtime_scorer
    from fairspec.backends.refine import refine_partitions
    from fairspec.certify.enumerate import count_individuals

    ref = refine_partitions(p, [(p.lo.copy(), p.hi.copy())], [None], seconds=args.seconds,
                            max_boxes=args.boxes or 200000)
    m = np.sort(np.array([float(u[3]) for u in ref.undecided]))
    w = m / m.sum()
    med = m[np.searchsorted(np.cumsum(w), 0.5)]
    print(f"after {ref.stats['boxes']:,} sub-boxes: {len(m):,} undecided, log10 individuals: smallest "
          f"{np.log10(m[0]):.1f}, measure-weighted median {np.log10(med):.1f}; share of the undecided measure "
          f"in sub-boxes of <= 1e4 individuals {w[m <= 1e4].sum():.1e}, <= 1e6 {w[m <= 1e6].sum():.1e}")
    sc = runtime_scorer(p)
    score, post, thr = sc.fn, sc.post, sc.threshold
    cases = protected_cases_of(p)
    pairs = [(a, b) for a in range(len(cases)) for b in range(len(cases)) if a != b]
    X = np.random.default_rng(args.seed).integers(p.lo.astype(int), p.hi.astype(int) + 1,
                                                  size=(1_000_000, len(p.lo))).astype(float)
    c0 = time.process_time()
    S = case_scores(score, X, cases)
    c1 = time.process_time()
    count_individuals(S, pairs, post, eps=0.0, decision_threshold=thr, eps_strict=False, claim="-", boxes=1)
    c2 = time.process_time()
    print(f"runtime under every protected value {1 / (c1 - c0):.2f} M individuals/s/core; count_individuals "
          f"{1 / (c2 - c1):.1f} M/s")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("grow", "ab", "enum"))
    ap.add_argument("model")
    ap.add_argument("attr")
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    ap.add_argument("--n", type=int, default=100, help="grow: unfair individuals to grow boxes around")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--boxes", type=int, default=None, help="ab: sub-boxes (machine-independent)")
    ap.add_argument("--seconds", type=float, default=3600.0, help="ab: wall seconds")
    ap.add_argument("--cut-min", default="0.03", help="ab: refine's cut_min, or none")
    args = ap.parse_args(argv)
    shared = args.shared / "bench" / "fairify"
    if not (shared / "domains.json").exists():
        raise SystemExit(f"no Fairify benchmark at {shared} (use --shared DIR)")
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        {"grow": grow, "ab": ab, "enum": enum}[args.what](args, problem_of(shared, args.model, args.attr))


if __name__ == "__main__":
    main()
