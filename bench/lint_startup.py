"""Start-up cost of `fairspec lint` on the largest shipped spec (issue 26: at most 0.3 s on an idle machine).

In one run, alternating so that every command sees the same load, N fresh processes each of

    python -c pass                                  the bare interpreter
    python -c "import fairspec"                     the package's import (light: the API loads on use)
    python -m fairspec lint <largest shipped spec>  lint itself

and prints, for each, the median wall time and the median CPU time (user + system of the child, from
``os.wait4``), with the ratios to the bare interpreter.  The machine is shared and loaded: compare the
ratios and the CPU times of one run, not wall seconds across runs (the load average is printed).

The package's bytecode is compiled first (``compileall``), as ``pip install`` does for a regular install:
with PYTHONDONTWRITEBYTECODE set, an editable install would otherwise recompile fairspec on every run.

    python bench/lint_startup.py [--runs 15] [--out bench/results/lint_startup.md]
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def largest_spec() -> Path:
    """The largest `.fair` file the project ships (examples and policies), by size."""
    files = [p for d in ("examples", "fairspec") for p in (ROOT / d).rglob("*.fair")]
    return max(files, key=lambda p: (p.stat().st_size, str(p)))


def run(cmd: list[str], env: dict) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system) and exit status of one fresh process."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    return wall, ru.ru_utime + ru.ru_stime, p.returncode


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--out", default=None, help="also write the table (markdown) to this file")
    args = ap.parse_args()
    compileall.compile_dir(str(ROOT / "fairspec"), quiet=1)
    spec = largest_spec()
    rel = spec.relative_to(ROOT)
    env = dict(os.environ, PYTHONPATH=str(ROOT))  # this checkout's fairspec, whatever is installed
    cmds = {
        "python -c pass": [sys.executable, "-c", "pass"],
        'python -c "import fairspec"': [sys.executable, "-c", "import fairspec"],
        f"fairspec lint {rel}": [sys.executable, "-m", "fairspec", "lint", str(rel)],
    }
    for c in cmds.values():  # warm the file cache and Lark's grammar cache
        run(c, env)
    load_before = os.getloadavg()
    walls = {k: [] for k in cmds}
    cpus = {k: [] for k in cmds}
    codes = set()
    for _ in range(args.runs):
        for k, c in cmds.items():
            w, u, rc = run(c, env)
            walls[k].append(w)
            cpus[k].append(u)
            codes.add(rc)
    load_after = os.getloadavg()
    base_w = statistics.median(walls["python -c pass"])
    base_c = statistics.median(cpus["python -c pass"])
    lines = [
        f"`fairspec lint` start-up, {args.runs} fresh processes each, medians "
        f"(spec: {rel}, {spec.stat().st_size:,} bytes; Python {sys.version.split()[0]}; exit codes {sorted(codes)})",
        "",
        "| command | wall s | x bare | CPU s | x bare | lint - this (CPU s) |",
        "|---|---|---|---|---|---|",
    ]
    lint_c = statistics.median(cpus[list(cmds)[-1]])
    for k in cmds:
        w, c = statistics.median(walls[k]), statistics.median(cpus[k])
        lines.append(f"| `{k}` | {w:.3f} | {w / base_w:.2f} | {c:.3f} | {c / base_c:.2f} | {lint_c - c:.3f} |")
    lines += [
        "",
        f"load average {load_before[0]:.1f} / {load_before[1]:.1f} (1 / 5 min) before, "
        f"{load_after[0]:.1f} / {load_after[1]:.1f} after, on {os.cpu_count()} cores. "
        "Wall time grows with the load; CPU time (user + system of the process) much less: "
        "on an idle machine wall is about the CPU time.",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
