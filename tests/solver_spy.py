"""A spy on the solver's start, for the tests that signal a running `fairspec check` (test_interrupt,
test_hostile_signals): the signal is sent once a solver runs, whatever the machine's load.

A fixed sleep before the signal either wasted seconds or, on a loaded machine, came before the proof
started (test_hostile_signals' Ctrl-C case failed 2 runs in 4 beside two CPU burners). Here the command
line is the real one (the installed console script or ``python -m fairspec.cli``, as the
test would run it) with one addition (:func:`env`) on ``PYTHONPATH``: ``tests/solver_spy_site/sitecustomize.py``, which
Python imports at start-up in that process and in every process it starts (the ``spawn`` worker pools
too), and which calls :func:`install` there. :func:`install` wraps
``fairspec.interrupt.solver_section`` (where every backend calls its solver) so that entering a solver
section, its cancel hook registered, appends a line to the file named by :data:`ENV`; the test waits for
that file (:func:`wait`) and then sends the signal: the solve is stopped by it from then on.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

ENV = "FAIRSPEC_TEST_SOLVER_MARK"
SITE = Path(__file__).resolve().parent / "solver_spy_site"


def install() -> None:
    """In a process started with :data:`ENV` set: entering a solver section appends ``pid`` to that file."""
    path = os.environ.get(ENV)
    if not path:
        return
    import contextlib

    from fairspec import interrupt

    real = interrupt.solver_section
    if getattr(real, "_spied", False):
        return

    @contextlib.contextmanager
    def spied(cancel=None):
        with real(cancel):  # its cancel hook registered: a signal from now on stops this solve
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, f"{os.getpid()}\n".encode())
            finally:
                os.close(fd)
            yield

    spied._spied = True
    interrupt.solver_section = spied


def env(mark: Path, base: dict | None = None) -> dict:
    """``base`` (default: this process's environment, without FAIRSPEC_DEBUG) with the spy switched on:
    solver starts are written to ``mark``."""
    out = dict(os.environ if base is None else base)
    out.pop("FAIRSPEC_DEBUG", None)
    out[ENV] = str(mark)
    out["PYTHONPATH"] = os.pathsep.join([str(SITE)] + [p for p in [out.get("PYTHONPATH")] if p])
    return out


def wait(p, mark: Path, guard: float | None = None) -> None:
    """Until a process of ``p``'s run entered a solver section (``mark`` written). Fails when ``p`` ended
    first; ``guard`` (seconds, None: none, the test's own timeout bounds the wait) against a hang only."""
    t0 = time.monotonic()
    while not (mark.exists() and mark.stat().st_size):
        assert p.poll() is None, ("the process ended before its solver started", p.returncode, *p.communicate())
        assert guard is None or time.monotonic() - t0 < guard, "the solver never started"
        time.sleep(0.02)
