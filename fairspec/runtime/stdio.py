"""What C libraries print: flushing libc's buffers, and a HiGHS that prints nothing; and the
command line's standard streams (:func:`guarded_streams`), whose writes never raise.

HiGHS (highspy 1.16) writes its banner ("Running HiGHS ...") to file descriptor 1 the first time
a ``Highs`` object is made in a process, before any option can be set. The command line already
points fd 1 at stderr while it checks (so ``--format json`` keeps stdout clean), but a user of the
Python API, the pytest plugin or a text report would still see the banner. :func:`new_highs` makes
every ``Highs`` object; the first one per process is made with fd 1 on ``os.devnull``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import threading

_LOCK = threading.Lock()
_BANNER = {"done": False}


def flush_c_stdio() -> None:
    """fflush(NULL): text a C library left in its stdio buffer goes out now (wherever fd 1 points)."""
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except Exception:  # noqa: BLE001 - no libc to flush (not a POSIX system): nothing buffered there
        pass


_QUIET_LOCK = threading.Lock()
_QUIET = {"depth": 0, "saved": None}


def quiet(fn):
    """``fn`` run with file descriptor 1 on ``os.devnull`` (a solver call: ``quiet(milp)(c, constraints=...)``):
    scipy's HiGHS (1.x bundled in scipy) prints "HighsMipSolverData::transformNewIntegerFeasibleSolution
    tmpSolver.run();" with a bare printf during some MIP solves, whatever ``disp`` / ``output_flag`` say, and a
    Python API caller would see it on its own stdout (the command line points fd 1 at stderr while it checks).
    Python's buffered stdout is flushed first, so nothing written before is lost; text another thread prints
    while the solve runs goes to devnull too. Nested and concurrent calls share one redirect (the last one out
    gives fd 1 back).

    A Ctrl-C / SIGTERM at any moment gives fd 1 back (tests/test_interrupt_windows.py): every step that moves
    fd 1 runs inside the ``try`` whose ``finally`` moves it back, and the fd to restore from is recorded before
    fd 1 moves. (A ``with`` block cannot promise that: an interrupt as its ``__enter__`` returns skips
    ``__exit__``, so there is no context-manager form.)"""
    def run(*args, **kwargs):
        counted = False
        try:
            with _QUIET_LOCK:
                _QUIET["depth"] += 1
                counted = True
                if _QUIET["depth"] == 1:
                    try:
                        sys.stdout.flush()
                    except (AttributeError, ValueError, OSError):
                        pass
                    flush_c_stdio()
                    try:
                        _QUIET["saved"] = os.dup(1)
                    except OSError:  # no real file descriptors (an embedding host): nothing to silence
                        _QUIET["saved"] = None
                    if _QUIET["saved"] is not None:
                        try:            # no devnull to point at: fn runs unsilenced, as with no fd 1
                            null = os.open(os.devnull, os.O_WRONLY)
                        except OSError:
                            null = None
                        if null is not None:
                            try:
                                os.dup2(null, 1)
                            except OSError:
                                pass
                            finally:
                                os.close(null)
            return fn(*args, **kwargs)
        finally:
            if counted:
                with _QUIET_LOCK:
                    _QUIET["depth"] -= 1
                    if _QUIET["depth"] == 0 and _QUIET["saved"] is not None:
                        saved, _QUIET["saved"] = _QUIET["saved"], None
                        try:
                            try:
                                flush_c_stdio()   # the solver's text leaves libc's buffer while fd 1 is devnull
                            finally:
                                os.dup2(saved, 1)
                        finally:
                            os.close(saved)
    return run


def new_highs():
    """A ``highspy.Highs`` with its output off; the process's first one prints no banner."""
    import highspy

    with _LOCK:
        if _BANNER["done"]:
            h = highspy.Highs()
        else:
            h = quiet(highspy.Highs)()
            _BANNER["done"] = True
    h.setOptionValue("output_flag", False)
    return h


# ------------------------------------------------------------------ the command line's stdout and stderr

_NAMES = {"stdout": "standard output", "stderr": "standard error"}


class _Guarded:
    """``sys.stdout`` or ``sys.stderr`` while the command line runs: a write or flush that fails is
    recorded and never raises (rich, print and argparse all write through it), and every later write
    is dropped. A reader that closed the pipe (EPIPE) is the reader's choice, not an error; any other
    failure (a closed stream, a full disk) is :attr:`Streams.failed`. The stream's file descriptor is
    pointed at ``os.devnull`` at the first failure, so what is still buffered (here or in a C library)
    drains without a second error at exit."""

    def __init__(self, inner, name: str, streams: "Streams"):
        self._inner, self._name, self._streams = inner, name, streams
        self._dead = False

    def write(self, text):
        if not self._dead:
            try:
                return self._inner.write(text)
            except (OSError, ValueError, AttributeError) as e:  # ValueError: closed; AttributeError: None
                self._fail(e)
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        if not self._dead:
            try:
                self._inner.flush()
            except (OSError, ValueError, AttributeError) as e:
                self._fail(e)

    def _fail(self, e: Exception) -> None:
        self._dead = True
        code = getattr(e, "errno", None)
        if code != errno.EPIPE:
            closed = self._name in self._streams.closed or code == errno.EBADF or isinstance(e, ValueError)
            what = _NAMES[self._name]
            self._streams.failed.setdefault(self._name, f"{what} is closed" if closed else
                                            f"cannot write to {what}: {getattr(e, 'strerror', None) or e}")
        try:
            fd = self._inner.fileno()
            kept = os.dup(fd)           # given back when the block ends (an in-process caller keeps its stream)
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, fd)
            finally:
                os.close(null)
            if self._name in self._streams.closed:   # closed at start: it stays on os.devnull
                os.close(kept)
            else:
                self._streams.silenced.append((fd, kept))
        except (OSError, ValueError, AttributeError):  # no file descriptor (an in-process caller's stream)
            pass

    def __getattr__(self, name):  # isatty, fileno, encoding, buffer, ...: the real stream's
        return getattr(self._inner, name)


class Streams:
    """What :func:`guarded_streams` saw: the streams closed at start and the writes that failed."""

    def __init__(self):
        self.closed: set[str] = set()
        self.failed: dict[str, str] = {}
        self.silenced: list[tuple[int, int]] = []   # (descriptor pointed at os.devnull, its original)

    def exit_code(self, code: int) -> int:
        """``code``, or 2 when stdout or stderr could not be written (the environment's error, said in
        one sentence on stderr when stderr still works). A Ctrl-C, a SIGTERM or an internal error
        keeps its own code; a reader that closed the pipe early changes nothing."""
        for s in (sys.stdout, sys.stderr):
            try:
                s.flush()
            except (AttributeError, OSError, ValueError):  # replaced by something that is not a stream
                pass
        if not self.failed or code in (4, 130, 143):
            return code
        if "stderr" not in self.failed:
            print(f"fairspec: {self.failed['stdout']}; the output is lost", file=sys.stderr, flush=True)
        return 2


def _occupy(fd: int, name: str, streams: Streams) -> None:
    """A stream closed when the process started (``>&-``): its descriptor gets ``os.devnull`` opened
    read-only, so no file fairspec or a library opens later takes that number (a solver's banner
    would land in it) and every write to it fails (EBADF: "closed")."""
    if getattr(sys, name) is not None:
        return
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        setattr(sys, name, open(fd, "w", encoding="utf-8", errors="backslashreplace", closefd=False))
    except OSError:
        return
    streams.closed.add(name)


@contextlib.contextmanager
def guarded_streams():
    """``sys.stdout`` and ``sys.stderr`` wrapped in :class:`_Guarded` for the block (restored after);
    yields the :class:`Streams` whose :meth:`Streams.exit_code` turns a lost output into exit 2."""
    streams = Streams()
    _occupy(1, "stdout", streams)
    _occupy(2, "stderr", streams)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Guarded(saved[0], "stdout", streams), _Guarded(saved[1], "stderr", streams)
    try:
        yield streams
    finally:
        sys.stdout, sys.stderr = saved
        for fd, kept in reversed(streams.silenced):
            try:
                os.dup2(kept, fd)
                os.close(kept)
            except OSError:
                pass
