"""Wall-clock of `fairspec lint` and `fairspec check` on the shipped examples.

Runs each command N times in fresh processes and prints the median, with
the time split between start-up/loading and the properties themselves
(from the JSON report).  Targets (issue 2): lint <= 0.3 s, check of the
data-backend properties <= 2 s.

    python bench/cli_speed.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPECS = [ROOT / "examples/adult/adult.fair", ROOT / "examples/fairify/ac1.fair"]


def timed(cmd: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    return time.perf_counter() - t, p.stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    from rich.console import Console
    from rich.table import Table

    exe = [sys.executable, "-m", "fairspec.cli"]
    table = Table(title=f"fairspec CLI wall time, median of {args.runs} runs")
    for c in ("spec", "command", "median wall s", "properties s", "target s", "ratio to target"):
        table.add_column(c, justify="right" if c != "spec" and c != "command" else "left")
    for spec in SPECS:
        lint = [timed(exe + ["lint", str(spec)])[0] for _ in range(args.runs)]
        m = statistics.median(lint)
        table.add_row(spec.name, "lint", f"{m:.3f}", "", "0.3", f"{m / 0.3:.2f}")
        walls, props = [], []
        for _ in range(args.runs):
            w, out = timed(exe + ["check", str(spec), "--format", "json"])
            walls.append(w)
            rep = json.loads(out)
            props.append(sum(p["seconds"] for p in rep["properties"] if p["backend"] == "data"))
        m, pm = statistics.median(walls), statistics.median(props)
        table.add_row(spec.name, "check", f"{m:.3f}", f"{pm:.3f}", "2.0", f"{m / 2.0:.2f}")
    Console().print(table)
    print("properties s: time inside the data-backend properties (model files load on first use and are "
          "counted there); the rest of the wall time is interpreter start-up and imports.")


if __name__ == "__main__":
    main()
