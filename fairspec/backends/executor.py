"""The one executor for independent jobs: partitions, PBA cases, bootstrap resamples, properties, models.

    ex.map(fn, items, shared=obj)   ->  [fn(obj, item) for item in items], in order

``fn`` must be a module-level function (picklable). ``shared`` is sent to each worker once
(through the pool's initializer, or broadcast to a Dask cluster), not with every item: the
network and the problem travel once per worker. Alternatively ``init=(factory, args)`` builds
the shared state inside each worker, once per worker (e.g. loading the spec's models and data).
Results are returned in item order, so whatever executor runs them, the report is the same.

A job that raises is a failure, not a lost result: with ``on_error=lambda item, reason: ...``
its result is what ``on_error`` returns (callers make it an ``unknown`` verdict with the reason);
without it the error is raised as :class:`JobError`.

* :class:`SerialExecutor` — in-process, for tests, one worker and single-core machines.
* :class:`ProcessExecutor` — a ``concurrent.futures`` process pool (``spawn`` by default:
  solver libraries and thread pools do not survive ``fork`` reliably). The pool is kept
  between ``map`` calls with the same shared state; use it as a context manager or ``close()``.
* :class:`DaskExecutor` — a running ``dask.distributed`` scheduler (``--cluster tcp://host:8786``
  or ``FAIRSPEC_CLUSTER``): jobs are retried when their worker is lost (the scheduler
  reschedules them) or when they raise (``retries``); a job that fails for good comes back
  through ``on_error``.

``configure(workers, cluster)`` records the command line's ``--workers N`` / ``--cluster ADDR``;
``get_executor(n_items)`` returns the executor every backend uses.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

__all__ = ["Executor", "SerialExecutor", "ProcessExecutor", "DaskExecutor", "JobError", "configure",
           "get_executor", "default_executor", "configured_workers"]

_SHARED: Any = None
_CONFIG: dict = {"workers": None, "cluster": None}
_DASK: dict = {}  # address -> DaskExecutor, kept for the process (a Client is costly to open)


class JobError(RuntimeError):
    """A job failed and the caller gave no ``on_error``."""


@dataclass(frozen=True)
class _Failed:
    reason: str


class Executor(Protocol):
    workers: int

    def map(self, fn: Callable[[Any, Any], Any], items: Sequence[Any], shared: Any = None,
            init: tuple[Callable[..., Any], tuple] | None = None,
            on_error: Callable[[Any, str], Any] | None = None) -> list: ...

    def close(self) -> None: ...


def configure(workers: int | None = None, cluster: str | None = None) -> None:
    """The process-wide choice: ``workers`` (None: the machine's cores) and a Dask scheduler address."""
    _CONFIG["workers"] = workers
    _CONFIG["cluster"] = cluster


def cluster_address() -> str | None:
    return _CONFIG["cluster"] or os.environ.get("FAIRSPEC_CLUSTER") or None


def configured_workers() -> int:
    """How many jobs may run at once: the cluster's workers, ``--workers`` or the cores."""
    if cluster_address():
        return get_executor(2).workers
    return max(1, _CONFIG["workers"] or (os.cpu_count() or 1))


def get_executor(n_items: int = 2) -> "Executor":
    """The configured executor for ``n_items`` independent jobs (serial for one job or one worker)."""
    addr = cluster_address()
    if addr:
        if addr not in _DASK:
            _DASK[addr] = DaskExecutor(addr)
        return _DASK[addr]
    workers = max(1, _CONFIG["workers"] or (os.cpu_count() or 1))
    if n_items <= 1 or workers <= 1:
        return SerialExecutor()
    return ProcessExecutor(min(workers, n_items))


def default_executor(n_items: int = 2) -> "Executor":
    """The configured executor (kept under its old name)."""
    return get_executor(n_items)


def _resolve_shared(shared, init):
    if init is not None:
        factory, args = init
        return factory(*args)
    return shared


def _reason(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def _finish(items, results, on_error):
    out = []
    for it, r in zip(items, results):
        if isinstance(r, _Failed):
            if on_error is None:
                raise JobError(r.reason)
            r = on_error(it, r.reason)
        out.append(r)
    return out


def _guarded(fn, state, item):
    try:
        return fn(state, item)
    except Exception as e:  # noqa: BLE001 - a failing job becomes a reason, never a lost result
        if os.environ.get("FAIRSPEC_DEBUG"):
            raise
        return _Failed(_reason(e))


class SerialExecutor:
    """Runs every job in this process, in order."""

    workers = 1

    def __init__(self):
        self._key = None
        self._state = None

    def map(self, fn, items, shared=None, init=None, on_error=None) -> list:
        items = list(items)
        key = (id(shared), init)
        if init is not None:
            if self._key != key:
                self._state = _resolve_shared(shared, init)
                self._key = key
            state = self._state
        else:
            state = shared
        return _finish(items, [_guarded(fn, state, it) for it in items], on_error)

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
    configure(workers=1)  # a job inside a worker runs its own sub-jobs serially: no pools in pools
    _SHARED = _resolve_shared(shared, init)


def _worker_call(job):
    fn, item = job
    return _guarded(fn, _SHARED, item)


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

    def map(self, fn, items, shared=None, init=None, on_error=None) -> list:
        from concurrent.futures.process import BrokenProcessPool

        items = list(items)
        if not items:
            return []
        pool = self._ensure(shared, init)
        futures = [pool.submit(_worker_call, (fn, it)) for it in items]
        results = []
        try:
            for f in futures:
                try:
                    results.append(f.result())
                except BrokenProcessPool:
                    results.append(_Failed("a worker process died (out of memory, or killed)"))
        except BaseException:  # Ctrl-C: end the workers now rather than wait for their items
            self.close(wait=False)
            raise
        if any(isinstance(r, _Failed) and r.reason.startswith("a worker process died") for r in results):
            self.close(wait=False)
        return _finish(items, results, on_error)

    def close(self, wait: bool = True) -> None:
        if self._pool is not None:
            pool, self._pool, self._key = self._pool, None, None
            if wait:
                pool.shutdown(wait=True, cancel_futures=True)
            else:  # interrupted or broken: do not wait for running solver calls
                from fairspec.interrupt import kill_pool

                kill_pool(pool)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close(wait=exc[0] is None)

    def __del__(self):
        try:
            self.close(wait=False)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


# ------------------------------------------------------------------ dask.distributed

_WORKER_STATE: dict = {}  # on a Dask worker: state key -> shared state, built once per worker process


def _dask_call(fn, key, init, shared, item):
    if key not in _WORKER_STATE:
        configure(workers=1)
        _WORKER_STATE.clear()  # one state per worker at a time (a new spec or problem replaces it)
        _WORKER_STATE[key] = _resolve_shared(shared, init)
    return fn(_WORKER_STATE[key], item)


class DaskExecutor:
    """Jobs on a running Dask scheduler; models and data are built once per worker (``init``)."""

    def __init__(self, address: str, retries: int = 2, timeout: float = 20.0):
        try:
            from distributed import Client
        except ImportError:
            raise JobError("--cluster needs dask.distributed: pip install 'fairspec[cluster]'") from None
        try:
            self.client = Client(address, timeout=timeout, set_as_default=False)
        except OSError as e:
            raise JobError(f"cannot reach the Dask scheduler at {address}: {e}") from None
        self.address = address
        self.retries = retries
        info = self.client.scheduler_info()
        self.workers = max(1, sum(w.get("nthreads", 1) for w in info.get("workers", {}).values()))
        self._scattered: dict = {}

    def map(self, fn, items, shared=None, init=None, on_error=None) -> list:
        import uuid

        items = list(items)
        if not items:
            return []
        if init is not None:
            key, payload = ("init", init), None
        else:
            sid = id(shared)
            if sid not in self._scattered:
                # sent once to every worker; each worker keeps it for all of its jobs
                self._scattered = {sid: (self.client.scatter(shared, broadcast=True, hash=False), shared,
                                         uuid.uuid4().hex)}
            fut, _, token = self._scattered[sid]
            key, payload = ("shared", token), fut
        futures = [self.client.submit(_dask_call, fn, key, init, payload, it, pure=False, retries=self.retries)
                   for it in items]
        results = []
        for f in futures:
            try:
                results.append(f.result())
            except Exception as e:  # noqa: BLE001 - the job failed for good (after retries, or lost workers)
                results.append(_Failed(_reason(e)))
        return _finish(items, results, on_error)

    def close(self) -> None:  # the client stays open for the process; see shutdown()
        pass

    def shutdown(self) -> None:
        self.client.close()
        _DASK.pop(self.address, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
