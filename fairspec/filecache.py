"""Results read from model and data files, cached while the file is unchanged.

The editor server (`fairspec lsp`) lints on every keystroke, so it turns the cache on: a model
header or data sample is read again only when its file changes (its size, modification or
status-change time, inode: see :func:`_stamp`) or appears or disappears.

Apart from that, :func:`one_run` scopes a cache to one lint run (fairspec.sema.check.check_file):
a function decorated with :func:`per_run` (the ONNX signature, the XGBoost document, which lint's
checks each ask for) reads a file once in the run, and the next run reads it again -- no timestamp decides anything.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import time

ENABLED = False
_CACHE: dict = {}
_MAX = 256


def enable() -> None:
    global ENABLED
    ENABLED = True


def clear() -> None:
    _CACHE.clear()


def forget(paths) -> None:
    """Drop what was read from these files (the editor was told they changed: a rewrite that kept the
    size and modification time, `cp -p`, is read again). Safe beside a lint running in another thread."""
    real = {os.path.realpath(p) for p in paths}
    for key in list(_CACHE):
        stamp = key[-1]
        if isinstance(stamp, tuple) and stamp and stamp[0] in real:
            _CACHE.pop(key, None)


#: nanoseconds: a file whose status changed more recently than this is read again (not cached)
RECENT_NS = 2_000_000_000


def _stamp(path) -> tuple | None:
    """The file's state: its real path, modification and status-change times, size and inode, or None
    (read it, keep nothing) when it cannot be looked at or changed in the last RECENT_NS. A rewrite in
    place that keeps the size and modification time (`cp -p`, `touch -d`) still moves the status-change
    time, which no user can set; two rewrites within one tick of the file system's clock (a few ms, or
    seconds on a coarse one) would share it, so a file that changed that recently is not cached."""
    try:
        st = os.stat(path)
    except (OSError, TypeError, ValueError):
        return None
    if abs(time.time_ns() - st.st_ctime_ns) < RECENT_NS:
        return None
    return (os.path.realpath(path), st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_dev)


def by_file(path_of):
    """Cache a function's result per arguments and per state of the file `path_of(*args, **kw)` names."""

    def wrap(fn):
        @functools.wraps(fn)
        def cached(*args, **kw):
            if not ENABLED:
                return fn(*args, **kw)
            stamp = _stamp(path_of(*args, **kw))
            if stamp is None:
                return fn(*args, **kw)
            try:
                key = (fn.__module__, fn.__qualname__, args, tuple(sorted(kw.items())), stamp)
                hash(key)
            except TypeError:
                return fn(*args, **kw)
            if key in _CACHE:
                return _CACHE[key]
            out = fn(*args, **kw)
            if len(_CACHE) >= _MAX:
                _CACHE.pop(next(iter(_CACHE)))
            _CACHE[key] = out
            return out

        cached.uncached = fn
        return cached

    return wrap


_RUN: contextvars.ContextVar[dict | None] = contextvars.ContextVar("fairspec_filecache_run", default=None)


@contextlib.contextmanager
def one_run():
    """Within the block (one lint run, in this thread), :func:`per_run` results are kept; dropped at
    its end. A nested block shares the outer one's."""
    token = _RUN.set({} if _RUN.get() is None else _RUN.get())
    try:
        yield
    finally:
        _RUN.reset(token)


def per_run(fn):
    """Cache ``fn(path)`` by the file's real path inside :func:`one_run` (a raised error is not kept)."""

    @functools.wraps(fn)
    def cached(path):
        run = _RUN.get()
        if run is None:
            return fn(path)
        try:
            key = (fn.__module__, fn.__qualname__, os.path.realpath(path))
        except (OSError, TypeError, ValueError):
            return fn(path)
        if key not in run:
            run[key] = fn(path)
        return run[key]

    cached.uncached = fn
    return cached
