"""tests/suite_profile.py (FAIRSPEC_SUITE_PROFILE): each test's CPU counted where it is spent -- the pytest
process, the children it reaps, and descendants still alive (a fork server's children) -- and
bench/suite_profile_report.py's sums per file and per worker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import suite_profile

ROOT = Path(__file__).resolve().parents[1]
SPIN = "import time;t = time.process_time();while time.process_time() - t < {s}: pass"   # ';' a line break


def _bench():
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_suite_profile", ROOT / "bench" / "suite_profile_report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reaped_and_live_descendants_are_counted(tmp_path):
    """A child the test waits for counts as reaped; a grandchild reaped by a child still alive at the test's end
    (the fork server's pattern) counts in the tree, and what that child had before the test does not."""
    if not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"):
        pytest.skip("no /proc/PID/task/TID/children here (Linux with CONFIG_PROC_CHILDREN): the tree is not measured")
    serve = ("import subprocess, sys\nfor line in sys.stdin:\n"
             "    subprocess.run([sys.executable, '-c', line.replace(';', '\\n')])\n    print('done', flush=True)\n")
    server = subprocess.Popen([sys.executable, "-c", serve], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        server.stdin.write(SPIN.format(s=0.6) + "\n")           # 0.6 s in a child it reaped before the test
        server.stdin.flush()
        assert server.stdout.readline() == "done\n"

        class Item:
            nodeid = "tests/test_x.py::test_y"

        prof = suite_profile.SuiteProfile(tmp_path, "gw9")
        gen = prof.pytest_runtest_protocol(Item(), None)
        next(gen)
        subprocess.run([sys.executable, "-c", SPIN.format(s=0.2).replace(";", "\n")], check=True)
        server.stdin.write(SPIN.format(s=0.2) + "\n")
        server.stdin.flush()
        assert server.stdout.readline() == "done\n"
        time.sleep(0.05)
        try:
            next(gen)
        except StopIteration:
            pass
        prof.close()
    finally:
        server.stdin.close()
        server.wait(timeout=60)
    (row,) = [json.loads(line) for line in (tmp_path / "gw9.jsonl").read_text().splitlines()]
    assert row["test"] == Item.nodeid and row["file"] == "tests/test_x.py" and row["worker"] == "gw9"
    assert 0.2 <= row["reaped"] < 0.6, row               # the child's spin and its start
    assert 0.2 <= row["tree"] < 0.6, row  # the grandchild, reaped by the live child, not the 0.6 s before
    bench = _bench()
    text = bench.report(bench.load(tmp_path))
    assert "| tests/test_x.py | 1 |" in text and "| gw9 | 1 |" in text


def _profiled(tmp_path, during):
    """The row the profiler writes for one test whose body is ``during()``."""
    class Item:
        nodeid = "tests/test_x.py::test_y"

    prof = suite_profile.SuiteProfile(tmp_path, "gw9")
    gen = prof.pytest_runtest_protocol(Item(), None)
    next(gen)
    during()
    try:
        next(gen)
    except StopIteration:
        pass
    prof.close()
    (row,) = [json.loads(line) for line in (tmp_path / "gw9.jsonl").read_text().splitlines()]
    return row


def test_a_server_alive_before_the_test_and_ended_in_it_is_billed_only_what_it_spent_since(tmp_path):
    """A fork server the test ends (or replaces: tests/cli_forkserver.py's restart) is reaped whole: the 0.6 s it
    and its reaped child spent before the test were the tests' before (session 34's table billed a server's whole
    life, 54.6 CPU s, to a 2.6 s test)."""
    if not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"):
        pytest.skip("no /proc/PID/task/TID/children here (Linux with CONFIG_PROC_CHILDREN): the tree is not measured")
    serve = ("import subprocess, sys\nfor line in sys.stdin:\n"
             "    subprocess.run([sys.executable, '-c', line.replace(';', '\\n')])\n    print('done', flush=True)\n")
    server = subprocess.Popen([sys.executable, "-c", serve], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        server.stdin.write(SPIN.format(s=0.6) + "\n")
        server.stdin.flush()
        assert server.stdout.readline() == "done\n"
        row = _profiled(tmp_path, lambda: (server.stdin.close(), server.wait(timeout=60)))
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert row["reaped"] + row["tree"] < 0.3, row


def test_unset_nothing_is_registered():
    class Config:
        class option:
            dist = "no"

        class pluginmanager:
            registered = []

            @classmethod
            def register(cls, plugin, name):
                cls.registered.append(name)

    saved = os.environ.pop("FAIRSPEC_SUITE_PROFILE", None)
    try:
        suite_profile.register(Config)
    finally:
        if saved is not None:
            os.environ["FAIRSPEC_SUITE_PROFILE"] = saved
    assert Config.pluginmanager.registered == []
