"""Ctrl-C (SIGINT) and SIGTERM during `fairspec check`: stop the solver, keep the verdicts decided so far.

While :func:`installed` is active (the CLI's check), SIGINT and SIGTERM (a CI cancel, ``timeout``,
``kill``) are handled alike:

* a flag is set that solver callbacks poll (HiGHS's interrupt callbacks, a SCIP event handler)
  and every registered cancel hook is called (z3's ``Context.interrupt``);
* outside a solver (Python loops: searches, bounds, data metrics) KeyboardInterrupt is raised;
* inside :func:`solver_section` nothing is raised (an exception inside a solver's C callback
  would not stop it cleanly); the section raises KeyboardInterrupt when the solver returns.

A watcher thread reads the signal from a wake-up pipe, so a solver that runs with the GIL released
(HiGHS, z3) is cancelled at once even though Python's own handler only runs between bytecodes. A
second signal ends the process at once (the worker pools are killed first: no orphans). The
pipeline turns KeyboardInterrupt into ``unknown (interrupted)`` for the property it stopped and
every property after it; the exit code is 128 + the signal's number, as a shell reports a process
the signal ended: 130 for SIGINT, 143 for SIGTERM (:func:`exit_code`).

Worker processes ignore both signals (:func:`worker_init`: a Ctrl-C in a terminal or a SIGTERM to
the process group reaches them too); the parent ends them (:func:`kill_pool`). A worker whose parent
died without ending the pool (SIGKILL, an out-of-memory kill, a SIGTERM to a program that embeds
fairspec without the CLI's handler) ends itself (:func:`watch_parent`): nothing else would stop it
before its job's budget ran out.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time

_requested = threading.Event()
_hooks: list = []
_depth = 0
_lock = threading.RLock()  # re-entrant: the signal handler (_cancel) takes it in the main thread, which may hold it
_signals = 0
_signum = 0  # the first signal received (SIGINT or SIGTERM); 0: none
_defer = False  # installed(defer=True): a signal is recorded, never raised (the report is being written)
_exit_hooks: list = []  # called before a second signal ends the process (kill the worker pools)
_interrupted_once = False  # a signal was received at some point of this process (never reset)
HANDLED = (signal.SIGINT, signal.SIGTERM)
_NAMES = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM"}


def requested() -> bool:
    return _requested.is_set()


def reset() -> None:
    global _signals, _signum
    _requested.clear()
    _signals = 0
    _signum = 0


def signal_number() -> int:
    """The signal that interrupted the run (SIGINT when none was recorded: a KeyboardInterrupt)."""
    return _signum or int(signal.SIGINT)


def exit_code() -> int:
    """128 + the signal's number: 130 for SIGINT (Ctrl-C), 143 for SIGTERM."""
    return 128 + signal_number()


def what() -> str:
    """How the run was interrupted, for a reason text: ``Ctrl-C`` or ``SIGTERM``."""
    return _NAMES.get(signal_number(), f"signal {signal_number()}")


def on_hard_exit(fn) -> None:
    """``fn()`` runs (in the watcher thread) before a second signal ends the process."""
    if fn not in _exit_hooks:
        _exit_hooks.append(fn)


def check() -> None:
    """Raise KeyboardInterrupt when an interrupt was requested."""
    if _requested.is_set():
        raise KeyboardInterrupt


def request() -> None:
    """A solver caught the Ctrl-C itself (SCIP does): treat it as ours."""
    _cancel(signal.SIGINT)


def _cancel(signum=signal.SIGINT) -> None:
    global _signum, _interrupted_once
    _interrupted_once = True
    if not _signum:
        _signum = int(signum)
    _requested.set()
    _call_hooks()
    _keep_cancelling()


def _call_hooks() -> int:
    """Call every registered cancel hook; the solver sections open."""
    with _lock:
        hooks, depth = list(_hooks), _depth
    for h in hooks:
        try:
            h()
        except Exception:  # noqa: BLE001 - a solver that cannot be cancelled stops at its own limit
            pass
    return depth


_keeper: list = []  # the thread of _keep_cancelling, while it runs


def _keep_cancelling() -> None:
    """Call the cancel hooks again every 50 ms while a solver section is open after a signal. A cancel that
    came before the solver's own call started was lost (z3 clears an interrupt when its check begins: a
    Ctrl-C between the section's start and z3's check was ignored until the proof's budget ran out)."""
    with _lock:
        if _keeper and _keeper[0].is_alive():
            return

        def run():
            while _requested.is_set() and _call_hooks():
                time.sleep(0.05)

        t = threading.Thread(target=run, name="fairspec-cancel", daemon=True)
        _keeper[:] = [t]
    t.start()


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
    if cancel is not None and _requested.is_set():  # a signal between check() and the hook's registration
        _keep_cancelling()
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
    _cancel(signum)
    if _depth == 0 and not _defer:
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
        got = [b for b in data if b in HANDLED]
        if not got:
            continue
        _signals += len(got)
        if _signals >= 2:  # a second signal: the user (or the CI) wants out now
            code = 128 + (_signum or got[-1])
            try:
                for h in list(_exit_hooks):
                    try:
                        h()
                    except Exception:  # noqa: BLE001 - exiting regardless
                        pass
                sys.stderr.write("fairspec: interrupted twice; exiting\n")
                sys.stderr.flush()
            finally:
                os._exit(code)
        _cancel(got[0])


def _unraisable(args) -> None:
    """``sys.unraisablehook`` while (and after) :func:`installed` ran: once the run was interrupted,
    an error in a finaliser is dropped. The KeyboardInterrupt can land in a library's constructor
    (z3's ``Context.__init__`` before it set ``owner``), and the half-built object's ``__del__`` then
    fails; Python would print that as "Exception ignored in ..." with a traceback on the user's
    stderr, after the run's own "interrupted" line. Before any signal, the previous hook reports as
    usual (a finaliser failing in a normal run is a bug to see)."""
    if _interrupted_once:
        return
    _previous_unraisable(args)


_previous_unraisable = sys.unraisablehook


@contextlib.contextmanager
def installed(*, defer: bool = False, fresh: bool = True):
    """Handle SIGINT and SIGTERM as described above (main thread only; otherwise a no-op).

    ``defer=True`` (while the report is printed and written): a signal is only recorded
    (:func:`requested`, :func:`exit_code`), so the report is finished; a second one still exits
    at once. ``fresh=False`` keeps a signal recorded before. Nested, the inner one's handlers and
    ``defer`` last for its block, the outer's come back after it."""
    global _defer, _previous_unraisable
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if fresh:
        reset()
    outer_defer = _defer  # nested (the CLI's check inside its recording block): the outer's, restored
    _defer = defer
    r, w = os.pipe()
    os.set_blocking(w, False)
    old_handlers = {sig: signal.signal(sig, _handler) for sig in HANDLED}
    if sys.unraisablehook is not _unraisable:  # kept after the run: a finaliser may run at exit
        _previous_unraisable = sys.unraisablehook
        sys.unraisablehook = _unraisable
    old_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    t = threading.Thread(target=_watch, args=(r,), daemon=True, name="fairspec-interrupt")
    t.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(old_fd)
        for sig, old in old_handlers.items():
            signal.signal(sig, old)
        _defer = outer_defer
        os.close(w)
        t.join(timeout=1)
        try:
            os.close(r)
        except OSError:
            pass


def worker_init() -> None:
    """In a pool's worker: ignore SIGINT and SIGTERM (a terminal's Ctrl-C and a CI's SIGTERM reach the
    whole process group; the parent decides, and ends the pool with :func:`kill_pool`), and end when
    the parent is gone (:func:`watch_parent`)."""
    for sig in HANDLED:
        signal.signal(sig, signal.SIG_IGN)
    watch_parent()


def watch_parent() -> None:
    """In a multiprocessing child: a daemon thread that ends this process (``os._exit``) when its
    parent dies (it waits on multiprocessing's parent sentinel, a pipe the parent holds open, so a
    parent that died before this worker started counts too). A worker ignores SIGTERM, so a parent
    killed before it could end the pool would otherwise leave it computing, an orphan, until its job
    ended (minutes of a solver's budget). The thread runs whenever the job releases the GIL (numpy,
    the solvers' C code, every few milliseconds of Python)."""
    import multiprocessing

    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch():
        parent.join()
        os._exit(1)

    threading.Thread(target=watch, name="fairspec-parent-watch", daemon=True).start()


def kill_pool(pool) -> None:
    """End a concurrent.futures process pool now: cancel what is queued, kill the workers (they
    ignore SIGTERM, see :func:`worker_init`) and wait for them, so none outlives the parent."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    try:
        pool.shutdown(wait=False, cancel_futures=True)
    except Exception:  # noqa: BLE001
        pass
    for p in procs:
        try:
            p.kill()
        except Exception:  # noqa: BLE001
            pass
    for p in procs:
        try:
            p.join(timeout=5)
        except Exception:  # noqa: BLE001
            pass
    # the pool's manager thread drops its queues as it ends, and their named semaphores' finalizers
    # then unlink and unregister them in that thread: wait for it (2 s at most), so they are gone
    # before the process leaves without teardown (the resource tracker would unlink them otherwise)
    thread = getattr(pool, "_executor_manager_thread", None)
    if thread is not None:
        try:
            thread.join(timeout=2)
        except Exception:  # noqa: BLE001
            pass


def quiet_resource_tracker() -> None:
    """Start multiprocessing's resource tracker, if it is not running, with its stderr on the null
    device (under ``FAIRSPEC_DEBUG`` it keeps the terminal's). Called before a pool is created, so
    the tracker that pool registers its semaphores with is this one.

    The tracker only reports on the pools' own semaphores, which it unlinks itself: after an
    interrupt kills the workers and the process leaves without teardown it may call one "leaked",
    and its loop prints a traceback for a message it cannot match. Neither is about the user's run
    (a fresh-clone CI run failed on such a traceback after SIGTERM with two workers). It is not
    stopped on an interrupt: it ignores SIGINT and SIGTERM and ends by itself, unlinking what is
    left, once every process holding its pipe has exited (the workers are killed first, then this
    process). Stopping it earlier raced the pool's thread still finalising its queues: a late
    unregister started a second tracker, or wrote to the closed pipe."""
    try:
        from multiprocessing import resource_tracker
    except Exception:  # noqa: BLE001 - a Python without one
        return
    rt = getattr(resource_tracker, "_resource_tracker", None)
    if os.environ.get("FAIRSPEC_DEBUG") or rt is None or getattr(rt, "_fd", 0) is not None:
        return
    try:
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)  # the tracker inherits fd 2; a few milliseconds, while it is spawned
        resource_tracker.ensure_running()
    except Exception:  # noqa: BLE001 - the pool starts one itself then, on the terminal
        pass
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)
