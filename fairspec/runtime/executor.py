"""The one executor for independent jobs: partitions, PBA cases, bootstrap resamples, properties, models.

    ex.map(fn, items, shared=obj)   ->  [fn(obj, item) for item in items], in order

``fn`` must be a module-level function (picklable). ``shared`` is sent to each worker once
(pickled once to a file each worker of the pool reads once, or broadcast to a Dask cluster),
not with every item: the network and the problem travel once per worker. Alternatively ``init=(factory, args)`` builds
the shared state inside each worker, once per worker (e.g. loading the spec's models and data).
Results are returned in item order, so whatever executor runs them, the report is the same.

A job that raises a refusal (an exception class fairspec defines: Unsupported, a file's error, a budget) is
a failure, not a lost result: with ``on_error=lambda item, reason: ...`` its result is what ``on_error``
returns (callers make it an ``unknown`` verdict with the reason); without it the error is raised as
:class:`JobError`. A job that raises anything else (IndexError, a library's error: a bug, a crash) is the
run's failure: ``map`` raises :class:`JobCrashed` (an internal error, exit code 4) as for a dead worker. A pool's worker process that dies (killed, out of
memory) is no job's failure but the run's: ``map`` raises :class:`WorkerDied` (an internal error, exit
code 4), unless ``on_error`` takes it (``on_error.takes_death``: the properties' map of the pipeline,
which keeps the other properties' verdicts).

* :class:`SerialExecutor` — in-process, for tests, one worker and single-core machines.
* :class:`ProcessExecutor` — a ``concurrent.futures`` process pool (``spawn`` by default:
  solver libraries and thread pools do not survive ``fork`` reliably). Its processes are kept
  between ``map`` calls, also when the shared state changes (a new state is a new file the
  workers read once), so the start-up of the workers (about a second each: Python, numpy, the
  solver libraries) is paid once: ``get_executor`` hands out one pool per process, which
  ``close()`` leaves running (``shutdown()`` or the end of the process ends it). Workers run
  BLAS/OpenMP with one thread each (two workers on two cores must not each start a thread per
  core), and keep freed memory in their heap (``WORKER_ENV``: without it a fresh worker
  page-faults every numpy temporary in again; Dask workers get the same through ``mallopt``).
* :class:`DaskExecutor` — a running ``dask.distributed`` scheduler (``--cluster tcp://host:8786``
  or ``FAIRSPEC_CLUSTER``), in :mod:`fairspec.runtime.dask_executor` (what it retries, gives up and
  waits for is told there).

Many small items (more than ``CHUNKS_PER_WORKER`` per worker: 510 partitions of a few ms, PBA
case batches) go out in that many chunks per worker, item ``i`` in chunk ``i % chunks``, so the
per-job cost of a round trip through the pool is paid per chunk, not per item; results are put
back in item order.

``configure(workers, cluster)`` records the command line's ``--workers N`` / ``--cluster ADDR``;
``get_executor(n_items)`` returns the executor every backend uses.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
from typing import Any, Callable, Protocol, Sequence

from fairspec.runtime.dask_executor import _DASK, DaskExecutor
from fairspec.runtime.job_clock import Overrun
from fairspec.runtime.jobs import (_CONFIG, SINGLE_THREAD_ENV, WORKER_ENV, JobCrashed, JobError, WorkerDied, _chunked,
                                   _Failed, _failed, _finish, _guarded, _resolve_shared, _run_chunk, _tune_malloc,
                                   _unchunk, configure)

__all__ = ["Executor", "SerialExecutor", "ProcessExecutor", "DaskExecutor", "JobError", "WorkerDied", "JobCrashed",
           "Overrun",
           "configure",
           "get_executor", "default_executor", "configured_workers", "process_pool", "shutdown_pools"]

_SHARED: dict = {"token": None, "state": None}  # in a pool worker: the current shared state
_POOLS: dict = {}  # workers -> ProcessExecutor, kept for the process (worker start-up is paid once)


class Executor(Protocol):
    workers: int

    def map(self, fn: Callable[[Any, Any], Any], items: Sequence[Any], shared: Any = None,
            init: tuple[Callable[..., Any], tuple] | None = None,
            on_error: Callable[[Any, str], Any] | None = None,
            budget: Callable[[Any], float | None] | None = None) -> list: ...

    def close(self) -> None: ...


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
    if n_items <= 1 or workers <= 1 or unguarded_main():
        return SerialExecutor()
    return process_pool(workers)


def unguarded_main() -> bool:
    """Whether fairspec was called from the top level of the main script outside an ``if __name__ ==
    "__main__":`` block. A spawned worker imports the main script again, so there it would run the check again
    and fail to start its own workers ("bootstrapping phase", an internal error): such a call runs its jobs in
    this process instead (serially), as one without the guard can only be."""
    import sys

    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if not path or not str(path).endswith(".py"):
        return False
    frame = sys._getframe(1)
    while frame is not None and not (frame.f_globals is vars(main) and frame.f_code.co_name == "<module>"):
        frame = frame.f_back
    if frame is None:                   # not called from the script's top level (a thread, a callback)
        return False
    return not _in_main_guard(str(path), frame.f_lineno)


@functools.lru_cache(maxsize=16)
def _in_main_guard(path: str, line: int) -> bool:
    """Whether ``line`` of the script ``path`` lies inside an ``if __name__ == "__main__":`` block (an
    unreadable script: taken as guarded, the old behaviour)."""
    import ast

    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test) and node.body and \
                node.body[0].lineno <= line <= max(getattr(n, "end_lineno", n.lineno) for n in node.body):
            return True
    return False


def process_pool(workers: int) -> "ProcessExecutor":
    """The process-wide pool of ``workers`` processes (started on first use, kept until exit)."""
    pool = _POOLS.get(workers)
    if pool is None:
        pool = _POOLS[workers] = ProcessExecutor(workers, keep=True)
    return pool


def shutdown_pools(wait: bool = True) -> None:
    """End the process-wide pools (also run at exit); ``wait=False`` kills their workers now (an
    interrupt). multiprocessing's resource tracker is left running: it ends by itself when this
    process does (it holds no pipe of the user's, see :func:`fairspec.interrupt.quiet_resource_tracker`),
    so no process of the run outlives it, and a semaphore finalised late still finds it."""
    for pool in list(_POOLS.values()):
        pool.shutdown(wait)
    _POOLS.clear()
    import multiprocessing as mp

    if not wait and not mp.active_children():  # an interrupt: the process exits next, without teardown
        from multiprocessing import util

        # the pools' named semaphores are unlinked and unregistered now, as the interpreter's exit
        # would (the tracker would otherwise unlink them itself, and say so)
        try:
            util._run_finalizers(0)
        except Exception:  # noqa: BLE001 - exiting regardless
            pass


def _kill_pools() -> None:
    for pool in list(_POOLS.values()):
        if pool._pool is not None:
            from fairspec.interrupt import kill_pool

            kill_pool(pool._pool)


def _register_hard_exit() -> None:
    from fairspec.interrupt import on_hard_exit

    on_hard_exit(_kill_pools)  # a second Ctrl-C / SIGTERM ends the process at once: the workers first


atexit.register(shutdown_pools)
_register_hard_exit()

def default_executor(n_items: int = 2) -> "Executor":
    """The configured executor (kept under its old name)."""
    return get_executor(n_items)

class SerialExecutor:
    """Runs every job in this process, in order."""

    workers = 1

    def __init__(self):
        self._key = None
        self._state = None

    def map(self, fn, items, shared=None, init=None, on_error=None, budget=None) -> list:
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

def _worker_init():
    os.environ.update(SINGLE_THREAD_ENV)  # before numpy and the solvers load their thread pools
    _tune_malloc()
    from fairspec.interrupt import worker_init

    worker_init()  # Ctrl-C is the parent's to handle: it ends the pool
    configure(workers=1)  # a job inside a worker runs its own sub-jobs serially: no pools in pools


@contextlib.contextmanager
def _worker_env():
    """Worker processes start (on submit) with WORKER_ENV: one BLAS/OpenMP thread each and glibc's
    malloc thresholds. The environment is read when the libraries load, which for a spawned worker
    can be while it imports the main module, before its initializer runs."""
    saved = {k: os.environ.get(k) for k in WORKER_ENV}
    os.environ.update(WORKER_ENV)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _worker_noop(_):
    return os.getpid()


def _load_shared(token, payload):
    """The shared state of ``token`` in this worker: read once (from the file the parent wrote,
    or built by the ``init`` factory), kept until a job brings another token."""
    if _SHARED["token"] != token:
        _SHARED["token"], _SHARED["state"] = None, None  # the old state goes before the new one loads
        how, what = payload
        if how == "file":
            import pickle

            with open(what, "rb") as f:
                state = pickle.load(f)
        else:
            state = _resolve_shared(None, what)
        _SHARED["token"], _SHARED["state"] = token, state
    return _SHARED["state"]


def _worker_call(job):
    fn, items, token, payload = job
    try:
        state = _load_shared(token, payload)
    except Exception as e:  # noqa: BLE001 - the shared state cannot be built: every item fails with the reason
        if os.environ.get("FAIRSPEC_DEBUG"):
            raise
        return _failed(e)
    return _run_chunk(fn, state, items)


class ProcessExecutor:
    """A process pool; workers read each shared state once (see the module docstring).

    ``keep=True`` (the pools of :func:`get_executor`): ``close()`` leaves the processes running
    for the next ``map``; ``shutdown()`` ends them."""

    def __init__(self, workers: int | None = None, start_method: str = "spawn", keep: bool = False):
        self.workers = max(1, workers or (os.cpu_count() or 1))
        self.start_method = start_method
        self.keep = keep
        self._pool = None
        self._key = None
        self._token = None
        self._payload = None
        self._shared_ref = None
        self._file = None

    def _ensure(self):
        import concurrent.futures as cf
        import multiprocessing as mp

        if self._pool is None:
            from fairspec.interrupt import quiet_resource_tracker

            quiet_resource_tracker()  # its reports on the pool's semaphores are not the user's
            ctx = mp.get_context(self.start_method)
            self._pool = cf.ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx,
                                                initializer=_worker_init)
        return self._pool

    def start(self) -> "ProcessExecutor":
        """Start every worker process now (a benchmark starts the pool before its clock)."""
        pool = self._ensure()
        with _worker_env():
            futures = [pool.submit(_worker_noop, k) for k in range(self.workers)]
        for f in futures:
            f.result()
        return self

    def _publish(self, shared, init):
        """The token and payload of this shared state: pickled once to a file (or the small
        ``init`` factory itself), which each worker reads once."""
        key = (id(shared), init)
        if init is None and self._key == key:  # an init factory (a spec's files) is run anew per map
            return self._token, self._payload
        self._drop_file()
        import uuid

        token = uuid.uuid4().hex
        if init is not None:
            payload = ("init", init)
        else:
            import pickle
            import tempfile

            fd, path = tempfile.mkstemp(prefix="fairspec-shared-", suffix=".pickle")
            with os.fdopen(fd, "wb") as f:
                pickle.dump(shared, f, protocol=pickle.HIGHEST_PROTOCOL)
            self._file = path
            payload = ("file", path)
        self._key, self._token, self._payload = key, token, payload
        self._shared_ref = shared          # keep alive so id() stays unique
        return token, payload

    def _drop_file(self):
        if self._file is not None:
            try:
                os.unlink(self._file)
            except OSError:
                pass
        self._file = None
        self._key = self._token = self._payload = self._shared_ref = None

    def map(self, fn, items, shared=None, init=None, on_error=None, budget=None) -> list:
        from concurrent.futures.process import BrokenProcessPool

        items = list(items)
        if not items:
            return []
        token, payload = self._publish(shared, init)
        pool = self._ensure()
        chunks = _chunked(len(items), self.workers)
        with _worker_env():  # processes are spawned by the first submits
            futures = [pool.submit(_worker_call, (fn, [items[i] for i in idx], token, payload)) for idx in chunks]
        outs = []
        try:
            for f in futures:
                try:
                    outs.append(f.result())
                except BrokenProcessPool:
                    outs.append(_Failed("a worker process died (out of memory, or killed)", died=True))
        except BaseException:  # Ctrl-C: end the workers now rather than wait for their items
            self.shutdown(wait=False)
            raise
        results = _unchunk(len(items), chunks, outs)
        if any(isinstance(r, _Failed) and r.died for r in results):
            self.shutdown(wait=False)
        return _finish(items, results, on_error)

    def close(self, wait: bool = True) -> None:
        """End the pool, unless it is a kept one (``keep=True``): then it stays for the next map."""
        if not self.keep:
            self.shutdown(wait)

    def shutdown(self, wait: bool = True) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            if wait:
                pool.shutdown(wait=True, cancel_futures=True)
            else:  # interrupted or broken: do not wait for running solver calls
                from fairspec.interrupt import kill_pool

                kill_pool(pool)
        self._drop_file()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close(wait=exc[0] is None)

    def __del__(self):
        try:
            self.shutdown(wait=False)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
