"""How long `fairspec check` takes to exit after Ctrl-C / SIGTERM while a long proof runs (issue 21, class 9).

    python bench/interrupt_latency.py [--repeat 5] [--out bench/results/interrupt_latency.md]

For each solver (HiGHS, SCIP, z3), serial and with ``--workers 2``, and each signal sent to the
whole process group (as a terminal's Ctrl-C does; SIGTERM as a CI cancel does): start the check of
the long-proof spec of tests/test_interrupt.py, wait until it handles SIGTERM (the check runs) and
DELAY more seconds (the proof runs), send the signal, and time until the process has exited and
its group is empty. Prints a markdown table (median and max seconds) and the machine's load.
Not a test: tests assert only that the run ends with 130 / 143.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "tests"), str(REPO)]

from test_hostile_signals import _caught, _children, _group, _project  # noqa: E402
from test_interrupt import SPEC  # noqa: E402


DELAY = 8.0  # seconds after the check starts: the proof runs by then (the first property takes ~1 s)


def one(cwd: Path, backend: str, engine: str, sig: int, workers: int) -> tuple[float, int]:
    (cwd / "spec.fair").write_text(SPEC.format(backend=backend, engine=engine))
    cmd = [sys.executable, "-m", "fairspec", "check", "spec.fair", "--format", "json"]
    if workers:
        cmd += ["--workers", str(workers)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                         start_new_session=True)
    while not _caught(p.pid) & (1 << (signal.SIGTERM - 1)):
        time.sleep(0.02)
    while workers and len(_children(p.pid)) < workers:
        time.sleep(0.02)
    time.sleep(DELAY)
    t0 = time.monotonic()
    os.killpg(p.pid, sig)
    p.wait()
    while _group(p.pid):
        time.sleep(0.005)
    return time.monotonic() - t0, p.returncode


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        cwd = _project(Path(d))
        for name, backend, engine in (("HiGHS", "milp", ""), ("SCIP", "milp", "engine = scip"), ("z3", "smt", "")):
            for workers in (0, 2):
                for sig in (signal.SIGINT, signal.SIGTERM):
                    runs = [one(cwd, backend, engine, sig, workers) for _ in range(args.repeat)]
                    secs = [t for t, _ in runs]
                    codes = sorted({c for _, c in runs})
                    rows.append(f"| {name} | {workers or 'serial'} | {sig.name} | {statistics.median(secs):.2f} | "
                                f"{max(secs):.2f} | {codes} |")
                    print(rows[-1], flush=True)
    load = os.getloadavg()
    text = ("| solver | workers | signal | median s | max s | exit codes |\n|---|---|---|---|---|---|\n"
            + "\n".join(rows) + f"\n\n{args.repeat} runs each; load average {load[0]:.1f} / {load[1]:.1f} "
            f"(1 / 5 min) on {os.cpu_count()} cores; time from the signal to the process group being empty.\n")
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
