"""Ctrl-C (SIGINT) during `fairspec check`: stop the solver, keep the verdicts decided so far.

While :func:`installed` is active (the CLI's check), SIGINT:

* sets a flag that solver callbacks poll (HiGHS's interrupt callbacks, a SCIP event handler)
  and calls every registered cancel hook (z3's ``Context.interrupt``);
* outside a solver (Python loops: searches, bounds, data metrics) raises KeyboardInterrupt as usual;
* inside :func:`solver_section` it raises nothing (an exception inside a solver's C callback
  would not stop it cleanly); the section raises KeyboardInterrupt when the solver returns.

A watcher thread reads the signal from a wake-up pipe, so a solver that runs with the GIL released
(HiGHS, z3) is cancelled at once even though Python's own handler only runs between bytecodes. A
second Ctrl-C ends the process at once (exit 130). The pipeline turns KeyboardInterrupt into
``unknown (interrupted)`` for the property it stopped and every property after it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

_requested = threading.Event()
_hooks: list = []
_depth = 0
_lock = threading.Lock()
_signals = 0


def requested() -> bool:
    return _requested.is_set()


def reset() -> None:
    global _signals
    _requested.clear()
    _signals = 0


def check() -> None:
    """Raise KeyboardInterrupt when an interrupt was requested."""
    if _requested.is_set():
        raise KeyboardInterrupt


def request() -> None:
    """A solver caught the Ctrl-C itself (SCIP does): treat it as ours."""
    _cancel()


def _cancel() -> None:
    _requested.set()
    with _lock:
        hooks = list(_hooks)
    for h in hooks:
        try:
            h()
        except Exception:  # noqa: BLE001 - a solver that cannot be cancelled stops at its own limit
            pass


@contextlib.contextmanager
def solver_section(cancel=None):
    """Around a call into a solver: SIGINT cancels it (``cancel()``, and the polled flag) instead of
    raising inside it; KeyboardInterrupt is raised before the call or once it returns."""
    global _depth
    check()
    with _lock:
        _depth += 1
        if cancel is not None:
            _hooks.append(cancel)
    try:
        yield
    except Exception:  # a solver that reports its cancellation as an error: the interrupt it is
        if _requested.is_set():
            raise KeyboardInterrupt from None
        raise
    finally:
        with _lock:
            _depth -= 1
            if cancel is not None:
                _hooks.remove(cancel)
    check()


def _handler(signum, frame):  # noqa: ARG001
    _cancel()
    if _depth == 0:
        raise KeyboardInterrupt


def _watch(fd: int) -> None:
    global _signals
    while True:
        try:
            data = os.read(fd, 64)
        except OSError:
            return
        if not data:
            return
        n = data.count(bytes([signal.SIGINT]))
        if not n:
            continue
        _signals += n
        if _signals >= 2:  # a second Ctrl-C: the user wants out now
            try:
                sys.stderr.write("fairspec: interrupted twice; exiting\n")
                sys.stderr.flush()
            finally:
                os._exit(130)
        _cancel()


@contextlib.contextmanager
def installed():
    """Handle SIGINT as described above (main thread only; otherwise a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    reset()
    r, w = os.pipe()
    os.set_blocking(w, False)
    old_handler = signal.signal(signal.SIGINT, _handler)
    old_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    t = threading.Thread(target=_watch, args=(r,), daemon=True, name="fairspec-interrupt")
    t.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(old_fd)
        signal.signal(signal.SIGINT, old_handler)
        os.close(w)
        t.join(timeout=1)
        try:
            os.close(r)
        except OSError:
            pass


def worker_init() -> None:
    """In a pool's worker: ignore SIGINT (the parent decides, and ends the pool)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def kill_pool(pool) -> None:
    """End a concurrent.futures process pool now: cancel what is queued, terminate the workers."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    try:
        pool.shutdown(wait=False, cancel_futures=True)
    except Exception:  # noqa: BLE001
        pass
    for p in procs:
        try:
            p.terminate()
        except Exception:  # noqa: BLE001
            pass
    for p in procs:
        try:
            p.join(timeout=1)
        except Exception:  # noqa: BLE001
            pass
