"""Where the suite's CPU goes, per test, in a whole run (session 34): with ``FAIRSPEC_SUITE_PROFILE=DIR`` set,
each pytest process (an xdist worker, or the one process without ``-n``) appends a line per test to
``DIR/<worker>.jsonl``: its node id, the wall time of its setup + call + teardown, and the CPU seconds spent in
that time by

* ``own``: the pytest process itself (every thread);
* ``reaped``: the children it waited for (``subprocess.run``, a pool's workers, ...);
* ``tree``: its other descendants, alive at the start or the end of the test (the warm fork server of
  tests/cli_forkserver.py and the ``fairspec`` children it forks and reaps, language servers, dask clusters):
  user + system time and the children they reaped (``/proc/PID/stat`` fields 14-17), less what they had at
  the test's start; a descendant gone by the end (reaped by the worker, so in ``reaped``) is left out.

A descendant alive at the test's start and gone by its end (a fork server the test ends or replaces) is
reaped whole, all it spent since it started: what it had at the start was billed to the tests before, and is
taken off ``reaped`` (a child of the worker) or ``tree`` (a descendant's child, in its parent's reaped time).
Session 34's table billed a fork server's whole life to the test that restarted it (54.6 CPU s for a
2.6 s test of test_lsp_positions.py, 2.0 CPU s alone).

``python bench/suite_profile_report.py DIR`` sums it per file and per worker. Unset (the default), nothing is loaded and
nothing is measured. Linux only (``/proc``): elsewhere ``tree`` is 0. A test's own cost is what it adds while it
runs; a module fixture is billed to the test that set it up and the one it was torn down after, as pytest runs
them (the ``--durations`` convention)."""

from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path

import pytest

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _own() -> tuple[float, float]:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out


def _cpu(pid: int) -> float | None:
    """utime + stime + cutime + cstime of a live process, in seconds (None when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return sum(int(v) for v in fields[11:15]) / _TICK     # fields 14-17 of stat, after the pid and (comm)


def _tree() -> dict[int, tuple[float, bool]]:
    """CPU seconds of every descendant of this process, by pid, and whether it is a child of this process."""
    seen: dict[int, tuple[float, bool]] = {}
    me = os.getpid()
    todo = [(pid, True) for pid in _children(me)]
    while todo:
        pid, direct = todo.pop()
        if pid in seen:
            continue
        cpu = _cpu(pid)
        if cpu is not None:
            seen[pid] = (cpu, direct)
            todo += [(c, False) for c in _children(pid)]
    return seen


class SuiteProfile:
    def __init__(self, folder: Path, worker: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.out = open(folder / f"{worker}.jsonl", "a", encoding="utf-8")   # noqa: SIM115 - closed at unconfigure
        self.worker = worker

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        at, t0, (own0, reaped0), tree0 = time.time(), time.perf_counter(), _own(), _tree()
        yield
        t1, (own1, reaped1), tree1 = time.perf_counter(), _own(), _tree()
        tree = sum(c - tree0.get(pid, (0.0, False))[0] for pid, (c, _) in tree1.items())
        # a descendant gone since the start was reaped whole: what it had then was billed before
        gone = [tree0[pid] for pid in tree0.keys() - tree1.keys()]
        reaped = (reaped1 - reaped0) - sum(c for c, direct in gone if direct)
        tree -= sum(c for c, direct in gone if not direct)
        self.out.write(json.dumps({"test": item.nodeid, "file": item.nodeid.split("::", 1)[0], "worker": self.worker,
                                   "start": round(at, 3), "wall": round(t1 - t0, 4), "own": round(own1 - own0, 4),
                                   "reaped": round(max(reaped, 0.0), 4), "tree": round(max(tree, 0.0), 4)}) + "\n")
        self.out.flush()

    def close(self) -> None:
        self.out.close()


def register(config) -> None:
    """Load the profiler into this pytest process when FAIRSPEC_SUITE_PROFILE names a folder (not in an xdist
    controller: its workers run the tests)."""
    folder = os.environ.get("FAIRSPEC_SUITE_PROFILE")
    controller = not hasattr(config, "workerinput") and getattr(config.option, "dist", "no") != "no"
    if not folder or controller:
        return
    worker = getattr(config, "workerinput", {}).get("workerid", "main")
    prof = SuiteProfile(Path(folder), worker)
    config.pluginmanager.register(prof, "fairspec-suite-profile")
    config.add_cleanup(prof.close)
