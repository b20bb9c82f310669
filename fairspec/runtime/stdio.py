"""What C libraries print: flushing libc's buffers, and a HiGHS that prints nothing.

HiGHS (highspy 1.16) writes its banner ("Running HiGHS ...") to file descriptor 1 the first time
a ``Highs`` object is made in a process, before any option can be set. The command line already
points fd 1 at stderr while it checks (so ``--format json`` keeps stdout clean), but a user of the
Python API, the pytest plugin or a text report would still see the banner. :func:`new_highs` makes
every ``Highs`` object; the first one per process is made with fd 1 on ``os.devnull``.
"""

from __future__ import annotations

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


def _with_fd1_on_devnull(make):
    try:
        sys.stdout.flush()
    except (AttributeError, ValueError, OSError):
        pass
    flush_c_stdio()
    try:
        saved = os.dup(1)
    except OSError:  # no real file descriptors (an embedding host): nothing to silence
        return make()
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, 1)
            try:
                return make()
            finally:
                flush_c_stdio()           # the banner leaves libc's buffer while fd 1 is still devnull
                os.dup2(saved, 1)
        finally:
            os.close(null)
    finally:
        os.close(saved)


def new_highs():
    """A ``highspy.Highs`` with its output off; the process's first one prints no banner."""
    import highspy

    with _LOCK:
        if _BANNER["done"]:
            h = highspy.Highs()
        else:
            h = _with_fd1_on_devnull(highspy.Highs)
            _BANNER["done"] = True
    h.setOptionValue("output_flag", False)
    return h
