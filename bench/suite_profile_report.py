"""Sum a profiled test run per file and per worker (tests/suite_profile.py writes it).

    FAIRSPEC_SUITE_PROFILE=/tmp/prof python -m pytest -n 2 --dist loadfile     # the run, profiled
    python bench/suite_profile_report.py /tmp/prof [--top 40] [--tests 20]

Per file: tests, wall (the sum of its tests' setup + call + teardown), CPU (the worker, its reaped children and
its live descendants: the fork server's `fairspec` children, language servers, dask clusters), CPU / wall.
Per worker: tests, busy wall, CPU, and when it started and ended its last test (the run's balance: the
gap between the two ends is the time one core had nothing to do at the end)."""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path


def load(folder: Path) -> list[dict]:
    rows = []
    for f in sorted(folder.glob("*.jsonl")):
        rows += [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows


def cpu(r: dict) -> float:
    return r["own"] + r["reaped"] + r["tree"]


def report(rows: list[dict], top: int = 40, tests: int = 20) -> str:
    files: dict[str, list[dict]] = defaultdict(list)
    workers: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        files[r["file"]].append(r)
        workers[r["worker"]].append(r)
    total_cpu, total_wall = sum(map(cpu, rows)), sum(r["wall"] for r in rows)
    out = [f"{len(rows)} tests in {len(files)} files: {total_wall:.0f} s of test wall, {total_cpu:.0f} CPU s", "",
           "| file | tests | wall s | CPU s | share of CPU | CPU/wall |", "|---|---:|---:|---:|---:|---:|"]
    ranked = sorted(files.items(), key=lambda kv: -sum(map(cpu, kv[1])))
    for name, rs in ranked[:top]:
        c, w = sum(map(cpu, rs)), sum(r["wall"] for r in rs)
        out.append(f"| {name} | {len(rs)} | {w:.1f} | {c:.1f} | {100 * c / max(total_cpu, 1e-9):.1f} % | "
                   f"{c / max(w, 1e-9):.2f} |")
    rest = ranked[top:]
    if rest:
        c, w = sum(cpu(r) for _, rs in rest for r in rs), sum(r["wall"] for _, rs in rest for r in rs)
        out.append(f"| {len(rest)} other files | {sum(len(rs) for _, rs in rest)} | {w:.1f} | {c:.1f} | "
                   f"{100 * c / max(total_cpu, 1e-9):.1f} % | |")
    out += ["", "| worker | tests | busy wall s | CPU s | first start | last end |", "|---|---:|---:|---:|---:|---:|"]
    t0 = min(r["start"] for r in rows)
    for name, rs in sorted(workers.items()):
        end = max(r["start"] + r["wall"] for r in rs)
        out.append(f"| {name} | {len(rs)} | {sum(r['wall'] for r in rs):.1f} | {sum(map(cpu, rs)):.1f} | "
                   f"{min(r['start'] for r in rs) - t0:.1f} | {end - t0:.1f} |")
    out += ["", "| test | wall s | CPU s |", "|---|---:|---:|"]
    for r in sorted(rows, key=lambda r: -cpu(r))[:tests]:
        out.append(f"| {r['test'][:150]} | {r['wall']:.1f} | {cpu(r):.1f} |")
    return "\n".join(out)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--top", type=int, default=40, help="files listed (by CPU)")
    ap.add_argument("--tests", type=int, default=20, help="tests listed (by CPU)")
    a = ap.parse_args(argv)
    print(report(load(a.folder), a.top, a.tests))


if __name__ == "__main__":
    main()
