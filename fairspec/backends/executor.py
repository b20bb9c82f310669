"""One small executor interface for independent jobs (input-space partitions).

    ex.map(fn, items, shared=obj)   ->  [fn(obj, item) for item in items], in order

``fn`` must be a module-level function (picklable). ``shared`` is sent to each worker once
(through the pool's initializer), not with every item: the network and the problem travel
once per worker. Alternatively ``init=(factory, args)`` builds the shared state inside each
worker (e.g. loading a model file once per worker). Results are returned in item order, so
whatever executor runs, the aggregated report is the same.

* :class:`SerialExecutor` — in-process, for tests and single-core machines.
* :class:`ProcessExecutor` — a ``concurrent.futures`` process pool (``spawn`` by default:
  solver libraries and thread pools do not survive ``fork`` reliably). The pool is kept
  between ``map`` calls with the same shared state; use it as a context manager or call
  ``close()``.

A distributed engine (dask, ray) plugs in by implementing ``map`` with the same contract.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Protocol, Sequence

__all__ = ["Executor", "SerialExecutor", "ProcessExecutor", "default_executor"]

_SHARED: Any = None


class Executor(Protocol):
    workers: int

    def map(self, fn: Callable[[Any, Any], Any], items: Sequence[Any], shared: Any = None,
            init: tuple[Callable[..., Any], tuple] | None = None) -> list: ...

    def close(self) -> None: ...


def _resolve_shared(shared, init):
    if init is not None:
        factory, args = init
        return factory(*args)
    return shared


class SerialExecutor:
    """Runs every job in this process, in order."""

    workers = 1

    def __init__(self):
        self._key = None
        self._state = None

    def map(self, fn, items, shared=None, init=None) -> list:
        key = (id(shared), init)
        if init is not None:
            if self._key != key:
                self._state = _resolve_shared(shared, init)
                self._key = key
            state = self._state
        else:
            state = shared
        return [fn(state, it) for it in items]

    def close(self) -> None:
        self._state = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _worker_init(shared, init):
    from fairspec.interrupt import worker_init

    worker_init()  # Ctrl-C is the parent's to handle: it ends the pool
    global _SHARED
    _SHARED = _resolve_shared(shared, init)


def _worker_call(job):
    fn, item = job
    return fn(_SHARED, item)


class ProcessExecutor:
    """A process pool; workers receive the shared state once via the pool initializer."""

    def __init__(self, workers: int | None = None, start_method: str = "spawn"):
        self.workers = max(1, workers or (os.cpu_count() or 1))
        self.start_method = start_method
        self._pool = None
        self._key = None

    def _ensure(self, shared, init):
        import concurrent.futures as cf
        import multiprocessing as mp

        key = (id(shared), init)
        if self._pool is not None and self._key == key:
            return self._pool
        self.close()
        ctx = mp.get_context(self.start_method)
        self._pool = cf.ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx,
                                            initializer=_worker_init, initargs=(shared, init))
        self._key = key
        self._shared_ref = shared          # keep alive so id() stays unique
        return self._pool

    def map(self, fn, items, shared=None, init=None) -> list:
        items = list(items)
        if not items:
            return []
        pool = self._ensure(shared, init)
        try:
            return list(pool.map(_worker_call, [(fn, it) for it in items]))
        except KeyboardInterrupt:  # Ctrl-C: end the workers now rather than wait for their items
            from fairspec.interrupt import kill_pool

            kill_pool(pool)
            self._pool = None
            self._key = None
            raise

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
            self._key = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def default_executor(n_items: int = 2) -> "Executor":
    """A process pool over the machine's cores when there is more than one job and core."""
    cores = os.cpu_count() or 1
    if n_items <= 1 or cores <= 1:
        return SerialExecutor()
    return ProcessExecutor(min(cores, n_items))
