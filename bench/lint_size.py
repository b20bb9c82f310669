"""`fairspec lint` on generated specs of growing size, up to 5 MB (issue 21 target: a 5 MB spec under 5 s).

    python bench/lint_size.py [--out bench/results/lint_size.md]

The spec is examples/predictions/decisions.fair followed by blocks of a group and two properties
(about 250 bytes each) until the size is reached. Each size is linted in a fresh process (`python -m
fairspec lint`); the table gives wall and CPU (user + system) seconds of the process and its exit
code. Files over fairspec.syntax.parser.MAX_SPEC_BYTES are FS107 before they are parsed.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SIZES = [64_000, 128_000, 256_000, 500_000, 5_000_000]


def spec(n_bytes: int) -> str:
    head = (REPO / "examples/predictions/decisions.fair").read_text()
    parts, size, i = [head], len(head), 0
    while size < n_bytes:
        b = (f"\ngroup older{i} = age >= {i % 70 + 18}\n\n"
             f"property parity{i} {{  # block {i}\n  statistical_parity(service, groups sex x older{i}) <= 0.15\n}}\n\n"
             f"property fnr{i} {{\n  false_negative_rate_difference(service, groups race) <= 0.1\n"
             f"  compare = to_overall\n  weight = weight\n}}\n")
        parts.append(b)
        size += len(b)
        i += 1
    return "".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        shutil.copy(REPO / "examples/predictions/decisions.csv", d)
        (d / "fairspec.toml").write_text("")
        for n in SIZES:
            f = d / f"s{n}.fair"
            f.write_text(spec(n))
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            p = subprocess.run([sys.executable, "-m", "fairspec", "lint", f.name, "--format", "concise"], cwd=d,
                               capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
            wall = time.perf_counter() - t
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            codes = sorted(set(re.findall(r"FS\d{3}", p.stdout)))
            rows.append(f"| {f.stat().st_size:,} | {wall:.2f} | {cpu:.2f} | {p.returncode} | {', '.join(codes)} |")
            print(rows[-1], flush=True)
    load = os.getloadavg()
    text = ("| bytes | wall s | CPU s | exit | codes |\n|---|---|---|---|---|\n" + "\n".join(rows)
            + f"\n\nload average {load[0]:.1f} / {load[1]:.1f} (1 / 5 min) on {os.cpu_count()} cores "
              f"(wall time depends on the load; CPU time much less).\n")
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
