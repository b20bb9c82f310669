"""The certified branch and bound alone on a sample of the partitions a Fairify row left undecided
(issue 24, reach), under variants of the engine's constants: what a change to the branch and bound
would buy on what the pipeline leaves, before a 15-minute row is run.

    python bench/diag/bab_sample.py --shared /work/shared \\
        --row bench/results/fairify_all_s10_eps_AC-4_sex.json --sample 16 --seconds 30 \\
        --variant base --variant COUPLING_PROVE=True --variant "BAND_SPLIT=0.5;TIGHTEN_CHAIN=0"

A variant is ``base`` or ``NAME=VALUE`` pairs joined by ``;``, each a module constant of
``fairspec.backends.bab.engine`` (a Python literal). Every variant runs the same partitions in its own
pool of ``--workers`` processes (one BLAS thread each), one partition per task, through
``decide_by_bab`` as the pipeline runs it (the runtime's error moved into the claim; a candidate pair counts
as refuted only once it replays on the runtime). Prints a table per variant and a summary; ``--json`` keeps them.
Seconds are wall clock per partition: run it alone on an idle machine.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

_G: dict = {}


def _parse_variant(text: str) -> dict:
    if text == "base":
        return {}
    out = {}
    for item in text.split(";"):
        name, _, value = item.partition("=")
        if not name.strip() or not value.strip():
            raise SystemExit(f"bab_sample: a variant is 'base' or NAME=VALUE pairs joined by ';', not {text!r}")
        try:
            out[name.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            raise SystemExit(f"bab_sample: {value.strip()!r} in {text!r} is not a Python literal") from None
    return out


def _init(shared, model, protected, prop, variant):
    from threadpoolctl import threadpool_limits

    import fairspec.backends.bab.engine as engine
    from fairify import EPS
    from rows import fairify_row

    threadpool_limits(1)
    for name, value in variant.items():
        if not hasattr(engine, name):
            raise SystemExit(f"bab_sample: fairspec.backends.bab.engine has no constant {name}")
        setattr(engine, name, value)
    p, parts, _, _ = fairify_row(Path(shared), model, protected, "label" if prop == "sign" else "prob",
                                 0.0 if prop == "sign" else EPS)
    _G.update(problem=p, parts=parts)


def _one(args):
    from fairspec.backends.pair.certify import decide_by_bab

    k, seconds = args
    lo, hi = _G["parts"][k]
    r = decide_by_bab(_G["problem"].restrict(lo, hi), "prove", seconds)
    st = r.stats or {}
    return {"partition": k, "status": {"holds": "proved", "violated": "refuted"}.get(r.status, "open"),
            "seconds": round(r.seconds, 2), "nodes": st.get("certify_nodes"), "lps": st.get("certify_lps"),
            "tighten_lps": st.get("certify_tighten_lps", 0), "lp_seconds": round(st.get("certify_lp_seconds") or 0.0, 2),
            "leaves": st.get("certify_leaves")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=Path("../shared"))
    ap.add_argument("--row", type=Path, required=True, help="a bench/fairify.py JSON with one row")
    ap.add_argument("--indices", type=lambda s: [int(v) for v in s.split(",")], default=None,
                    help="partitions to run (default: a sample of the row's undecided ones)")
    ap.add_argument("--sample", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=30.0, help="the branch and bound's budget per partition")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--variant", action="append", default=None)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    row = json.loads(a.row.read_text())["rows"][0]
    und = row.get("undecided_parts") or []
    ks = a.indices or sorted(random.Random(a.seed).sample(und, min(a.sample, len(und))))
    variants = a.variant or ["base"]
    out = {"row": str(a.row), "model": row["model"], "protected": row["protected"], "property": row["property"],
           "seconds": a.seconds, "workers": a.workers, "partitions": ks, "variants": []}
    print(f"{row['model']} {row['protected']} {row['property']}: {len(ks)} partitions, {a.seconds:g} s each, "
          f"{a.workers} workers")
    for text in variants:
        var = _parse_variant(text)
        t0 = time.perf_counter()
        with ProcessPoolExecutor(a.workers, initializer=_init,
                                 initargs=(str(a.shared), row["model"], row["protected"], row["property"], var)) as ex:
            res = list(ex.map(_one, [(k, a.seconds) for k in ks]))
        wall = time.perf_counter() - t0
        print(f"\n## {text}\n")
        print("| partition | status | s | nodes | LPs | tighten LPs | LP s | leaves |")
        print("|---:|---|---:|---:|---:|---:|---:|---:|")
        for r in res:
            print(f"| {r['partition']} | {r['status']} | {r['seconds']} | {r['nodes']} | {r['lps']} | "
                  f"{r['tighten_lps']} | {r['lp_seconds']} | {r['leaves'] if r['leaves'] is not None else ''} |")
        summary = {"variant": text, "proved": sum(r["status"] == "proved" for r in res),
                   "refuted": sum(r["status"] == "refuted" for r in res),
                   "open": sum(r["status"] == "open" for r in res),
                   "partition_seconds": round(sum(r["seconds"] for r in res), 2), "wall": round(wall, 2)}
        print(f"\n{text}: proved {summary['proved']}, refuted {summary['refuted']}, open {summary['open']}; "
              f"{summary['partition_seconds']} s over the partitions, {summary['wall']} s wall")
        out["variants"].append({**summary, "rows": res})
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
