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
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def largest_spec() -> Path:
    """The largest `.fair` file the project ships (examples and policies), by size."""
    files = [p for d in ("examples", "fairspec") for p in (ROOT / d).rglob("*.fair")]
    return max(files, key=lambda p: (p.stat().st_size, str(p)))


def run(cmd: list[str], env: dict) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system) and exit status of one fresh process, run in the folder
    its PYTHONPATH names (``-m`` puts the working folder first on sys.path)."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=env["PYTHONPATH"],
                         env=env)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    return wall, ru.ru_utime + ru.ru_stime, p.returncode


# One fresh process: the CPU time of each phase of `fairspec lint` (the same imports, in the order lint
# makes them), printed as JSON.  The AST and IR modules are dataclasses lint builds (parse and sema).
_PHASES = r"""
import json, sys, time
c = time.process_time
out = {}
t = c(); import fairspec.cli; out["fairspec.cli (argparse, diagnostics, dataclasses)"] = c() - t
t = c(); import fairspec.syntax.ast; out["fairspec.syntax.ast (45 dataclasses)"] = c() - t
t = c(); import fairspec.ir; out["fairspec.ir (33 dataclasses)"] = c() - t
t = c(); import lark; out["import lark"] = c() - t
t = c(); import fairspec.pipeline; out["fairspec.pipeline: the rest (sema, planning, files, verdict)"] = c() - t
t = c(); from fairspec.syntax import parser; parser._parser(); out["the LALR parser from Lark's cache"] = c() - t
t = c(); from fairspec.pipeline import lint; lint(sys.argv[1]); out["lint: parse (lexers built), sema, models peeked, data sampled"] = c() - t
t = c(); lint(sys.argv[1]); out["(lint again in the same process)"] = c() - t
print(json.dumps(out))
"""


def phases(spec: Path, env: dict, runs: int) -> dict[str, float]:
    """Median CPU seconds of each phase over ``runs`` fresh processes."""
    import json

    got: dict[str, list[float]] = {}
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", _PHASES, str(spec)], capture_output=True, text=True,
                             cwd=ROOT, env=env, check=True).stdout
        for k, v in json.loads(out.strip().splitlines()[-1]).items():
            got.setdefault(k, []).append(v)
    return {k: statistics.median(v) for k, v in got.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--out", default=None, help="also write the table (markdown) to this file")
    args = ap.parse_args()
    compileall.compile_dir(str(ROOT / "fairspec"), quiet=1)
    spec = largest_spec()
    rel = spec.relative_to(ROOT)
    env = dict(os.environ, PYTHONPATH=str(ROOT))  # this checkout's fairspec, whatever is installed
    # fairspec's sources without bytecode, never written (an editable install under PYTHONDONTWRITEBYTECODE,
    # as on the team's machines): every run compiles every module it imports.
    raw = Path(tempfile.mkdtemp(prefix="lint_startup_"))
    for d in ("fairspec", "grammar", "specs"):
        shutil.copytree(ROOT / d, raw / d, ignore=shutil.ignore_patterns("__pycache__"))
    env_raw = dict(env, PYTHONPATH=str(raw), PYTHONDONTWRITEBYTECODE="1")
    lint_cmd = [sys.executable, "-m", "fairspec", "lint", str(spec)]
    cmds = {
        "python -c pass": ([sys.executable, "-c", "pass"], env),
        'python -c "import fairspec"': ([sys.executable, "-c", "import fairspec"], env),
        f"fairspec lint {rel}, not byte-compiled": (lint_cmd, env_raw),
        f"fairspec lint {rel}": (lint_cmd, env),
    }
    for c, e in cmds.values():  # warm the file cache and Lark's grammar cache
        run(c, e)
    load_before = os.getloadavg()
    walls = {k: [] for k in cmds}
    cpus = {k: [] for k in cmds}
    codes = set()
    for _ in range(args.runs):
        for k, (c, e) in cmds.items():
            w, u, rc = run(c, e)
            walls[k].append(w)
            cpus[k].append(u)
            codes.add(rc)
    load_after = os.getloadavg()
    shutil.rmtree(raw, ignore_errors=True)
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
    lines += ["", "Where lint's CPU time goes (medians, each phase in a fresh process, in lint's import order):", "",
              "| phase | CPU s |", "|---|---|"]
    lines += [f"| {k} | {v:.3f} |" for k, v in phases(rel, env, args.runs).items()]
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
