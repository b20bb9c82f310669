"""The long fuzzing run (issue 10): >= 100,000 grammar-generated and mutated specs linted in-process.

    nice python bench/fuzz.py [--cases 100000] [--seed 10] [--out bench/results/fuzz.md]

Half the cases are random derivations of grammar/fairspec.lark, half mutations of the shipped
examples, fixtures and policies (tests/spec_fuzz.py). Each case is linted and its diagnostics
rendered in every format; an exception is a finding. A case slower than --slow seconds is
reported too. Prints progress, and writes the count, the rate, the load and every distinct
finding (with the case that found it) to --out.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]
os.environ.setdefault("FAIRSPEC_ALLOW_PATH", str(REPO))  # mutants name the repository's data by absolute path

from spec_fuzz import SpecFuzzer, run_case  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=10)
    ap.add_argument("--slow", type=float, default=20.0)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "fuzz.md"))
    args = ap.parse_args()
    sys.setrecursionlimit(1000)  # the interpreter's default: what the CLI runs with
    fz = SpecFuzzer()
    rnd = random.Random(args.seed)
    findings: dict[str, tuple[int, str, str]] = {}
    slow: list[tuple[int, float, str]] = []
    kinds = {"grammar": 0, "mutant": 0}
    t0 = time.perf_counter()
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "case.fair"
        for i in range(args.cases):
            kind, text = fz.case(rnd)
            kinds[kind] += 1
            t1 = time.perf_counter()
            err = run_case(text, path)
            dt = time.perf_counter() - t1
            if err:
                key = err.splitlines()[0][:120]
                if key not in findings:
                    findings[key] = (i, err, text[:3000])
                    print(f"case {i}: {key}", flush=True)
            if dt > args.slow:
                slow.append((i, dt, text[:300]))
            if (i + 1) % 5000 == 0:
                el = time.perf_counter() - t0
                print(f"{i + 1} cases, {el:.0f} s, {len(findings)} findings, load {os.getloadavg()[0]:.1f}", flush=True)
    el = time.perf_counter() - t0
    lines = [
        "# Spec fuzzing (bench/fuzz.py)",
        "",
        f"- cases: {args.cases} ({kinds['grammar']} generated from the grammar, {kinds['mutant']} mutated shipped specs), "
        f"seed {args.seed}",
        f"- time: {el:.0f} s ({args.cases / el:.0f} cases/s), load average at start {load0[0]:.1f}, "
        f"at end {os.getloadavg()[0]:.1f} (2 cores shared)",
        f"- internal errors (distinct): {len(findings)}",
        f"- cases slower than {args.slow:.0f} s: {len(slow)}",
        "",
    ]
    for key, (i, err, text) in findings.items():
        lines += [f"## case {i}: {key}", "", "```", err.rstrip(), "```", "", "spec (first 3000 characters):", "",
                  "```", text.rstrip(), "```", ""]
    for i, dt, text in slow:
        lines += [f"## slow case {i}: {dt:.1f} s", "", "```", text.rstrip(), "```", ""]
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines[:7]))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
