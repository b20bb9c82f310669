"""Results read from model and data files, cached while the file is unchanged.

`fairspec lint` reads each file once and needs no cache; the editor server
(`fairspec lsp`) lints on every keystroke, so it turns the cache on: a model
header or data sample is read again only when its file's size or modification
time changes (or the file appears or disappears).
"""

from __future__ import annotations

import functools
import os

ENABLED = False
_CACHE: dict = {}
_MAX = 256


def enable() -> None:
    global ENABLED
    ENABLED = True


def clear() -> None:
    _CACHE.clear()


def _stamp(path) -> tuple | None:
    try:
        st = os.stat(path)
    except (OSError, TypeError, ValueError):
        return None
    return (os.path.realpath(path), st.st_mtime_ns, st.st_size, st.st_ino)


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
