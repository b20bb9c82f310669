"""Wall-clock of `fairspec lint` and `fairspec check` on the shipped examples.

Runs each command N times in fresh processes and prints the median, with
the time split between loading (model files and data tables, the report's
``loads``) and the data-backend properties themselves (their ``seconds``).
Targets (issue 2): lint <= 0.3 s, check of the data-backend properties <= 2 s.

Baselines measured in the same run: a bare interpreter, and the third-party
imports the example's model files need (``import skops.io`` alone imports all
of scikit-learn, and with it torch, through sklearn's estimator discovery).

The package's bytecode is compiled first (``compileall``), as ``pip install``
does for a regular install: with PYTHONDONTWRITEBYTECODE set, as on these
machines, an editable install would otherwise recompile fairspec's modules on
every run (~45 ms).

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

    import compileall

    compileall.compile_dir(str(ROOT / "fairspec"), quiet=1)
    exe = [sys.executable, "-m", "fairspec.cli"]
    table = Table(title=f"fairspec CLI wall time, median of {args.runs} runs")
    for c in ("spec", "command", "median wall s", "loading s", "properties s", "target s", "ratio to target"):
        table.add_column(c, justify="right" if c != "spec" and c != "command" else "left")
    for spec in SPECS:
        lint = [timed(exe + ["lint", str(spec)])[0] for _ in range(args.runs)]
        m = statistics.median(lint)
        table.add_row(spec.name, "lint", f"{m:.3f}", "", "", "0.3", f"{m / 0.3:.2f}")
        walls, props, loads = [], [], []
        for _ in range(args.runs):
            w, out = timed(exe + ["check", str(spec), "--format", "json"])
            walls.append(w)
            rep = json.loads(out)
            props.append(sum(p["seconds"] for p in rep["properties"] if (p["backend"] or "").startswith("data")))
            loads.append(sum(x["seconds"] for x in rep.get("loads", [])))
        m, pm, lm = statistics.median(walls), statistics.median(props), statistics.median(loads)
        table.add_row(spec.name, "check", f"{m:.3f}", f"{lm:.3f}", f"{pm:.3f}", "2.0", f"{pm / 2.0:.2f} (wall {m / 2.0:.2f})")
    for label, code in (("python -c pass", "pass"), ("import numpy, onnx", "import numpy, onnx"),
                        ("import sklearn.base", "import sklearn.base"), ("import skops.io", "import skops.io"),
                        ("fairspec's skops import", "from fairspec.models.sklearn_model import import_skops_io; "
                                                    "import_skops_io()")):
        w = statistics.median(timed([sys.executable, "-c", code])[0] for _ in range(args.runs))
        table.add_row("(baseline)", label, f"{w:.3f}", "", "", "", "")
    Console(width=150).print(table)
    print("loading s: model files and data tables (the report's loads; the skops files import scikit-learn); "
          "properties s: the data-backend properties' own time; the rest of the wall time is interpreter "
          "start-up, parsing and checking. Ratio: properties / target (wall / target in brackets).")


if __name__ == "__main__":
    main()
