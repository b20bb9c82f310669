"""The one executor for independent jobs: partitions, PBA cases, bootstrap resamples, properties, models.

    ex.map(fn, items, shared=obj)   ->  [fn(obj, item) for item in items], in order

``fn`` must be a module-level function (picklable). ``shared`` is sent to each worker once
(pickled once to a file each worker of the pool reads once, or broadcast to a Dask cluster),
not with every item: the network and the problem travel once per worker. Alternatively ``init=(factory, args)`` builds
the shared state inside each worker, once per worker (e.g. loading the spec's models and data).
Results are returned in item order, so whatever executor runs them, the report is the same.

A job that raises is a failure, not a lost result: with ``on_error=lambda item, reason: ...``
its result is what ``on_error`` returns (callers make it an ``unknown`` verdict with the reason);
without it the error is raised as :class:`JobError`.

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

Many small items (more than ``CHUNKS_PER_WORKER`` per worker: 510 partitions of a few ms, PBA
case batches) go out in that many chunks per worker, item ``i`` in chunk ``i % chunks``, so the
per-job cost of a round trip through the pool is paid per chunk, not per item; results are put
back in item order.
* :class:`DaskExecutor` — a running ``dask.distributed`` scheduler (``--cluster tcp://host:8786``
  or ``FAIRSPEC_CLUSTER``): jobs are retried when their worker is lost (the scheduler
  reschedules them) or when they raise (``retries``); a job that fails for good comes back
  through ``on_error``, and so does a job the cluster cancels (its scattered data was lost with
  the worker holding it) and every job not done once the cluster has had no worker for
  ``lost_after`` seconds (FAIRSPEC_CLUSTER_TIMEOUT, default 20: the scheduler would hold it for a
  worker forever), as does every job of a map whose shared data finds no worker to go to in that
  time (e.g. the last worker was retired, see below). A job with a time budget (``budget=lambda item: seconds or None``: a property's
  own ``timeout``) is waited on for that long plus ``grace`` (FAIRSPEC_CLUSTER_GRACE seconds, default
  10, and a tenth of the budget) on the clock of :mod:`fairspec.runtime.job_clock`, which counts what
  a local run bounds: from the job's first time limit on, the loads apart, plus what is granted past
  the budget (nothing before its first limit, e.g. a data pre-pass, which a local run waits for);
  past it the job comes back through ``on_error`` with an :class:`Overrun` reason, its future is
  cancelled and its worker restarted (a hung thread would hold the worker's slot for ever; a worker
  without a nanny is retired instead, its results fetched first; one the scheduler keeps counts as none).
  Budgeted jobs go one item each and carry the shared state themselves (no scattered copy that
  the restart could take with it). The local executors leave the budget to the job itself (its
  solvers' time limits), as before.

``configure(workers, cluster)`` records the command line's ``--workers N`` / ``--cluster ADDR``;
``get_executor(n_items)`` returns the executor every backend uses.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

from fairspec.runtime import job_clock
from fairspec.runtime.job_clock import Overrun

__all__ = ["Executor", "SerialExecutor", "ProcessExecutor", "DaskExecutor", "JobError", "Overrun", "configure",
           "get_executor", "default_executor", "configured_workers", "process_pool", "shutdown_pools"]

CHUNKS_PER_WORKER = 4
SINGLE_THREAD_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                     "VECLIB_MAXIMUM_THREADS": "1", "NUMEXPR_NUM_THREADS": "1"}
# glibc's malloc in a fresh process hands every numpy temporary above ~128 KiB back to the kernel
# (mmap/munmap, heap trimming), so each one is page-faulted in again: measured on the bootstrap's
# resamples (30,162-row columns), a worker spent 1.4x the CPU of the same jobs in the parent.
# Workers keep up to these sizes in their heap instead (Dask's nanny even sets a 64 KiB trim threshold).
MALLOC_MMAP_THRESHOLD = 64 << 20
MALLOC_TRIM_THRESHOLD = 128 << 20
WORKER_ENV = {**SINGLE_THREAD_ENV, "MALLOC_MMAP_THRESHOLD_": str(MALLOC_MMAP_THRESHOLD),
              "MALLOC_TRIM_THRESHOLD_": str(MALLOC_TRIM_THRESHOLD)}

_SHARED: dict = {"token": None, "state": None}  # in a pool worker: the current shared state
_CONFIG: dict = {"workers": None, "cluster": None}
_DASK: dict = {}  # address -> DaskExecutor, kept for the process (a Client is costly to open)
_POOLS: dict = {}  # workers -> ProcessExecutor, kept for the process (worker start-up is paid once)


class JobError(RuntimeError):
    """A job failed and the caller gave no ``on_error``."""


@dataclass(frozen=True)
class _Failed:
    reason: str


class Executor(Protocol):
    workers: int

    def map(self, fn: Callable[[Any, Any], Any], items: Sequence[Any], shared: Any = None,
            init: tuple[Callable[..., Any], tuple] | None = None,
            on_error: Callable[[Any, str], Any] | None = None,
            budget: Callable[[Any], float | None] | None = None) -> list: ...

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
    return process_pool(workers)


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


def _chunked(n_items: int, workers: int) -> list[list[int]]:
    """Item indices per job: one item per job up to CHUNKS_PER_WORKER jobs per worker, else that
    many chunks, item i in chunk i % chunks (neighbouring items, often of similar cost, are
    spread over the chunks)."""
    chunks = CHUNKS_PER_WORKER * max(1, workers)
    if n_items <= chunks:
        return [[i] for i in range(n_items)]
    return [list(range(c, n_items, chunks)) for c in range(chunks)]


def _run_chunk(fn, state, items) -> list:
    return [_guarded(fn, state, it) for it in items]


def _unchunk(n_items: int, chunks: list[list[int]], outs: list) -> list:
    results: list = [None] * n_items
    for idx, out in zip(chunks, outs):
        if isinstance(out, _Failed):  # the whole chunk was lost (a worker died, a failing retry)
            out = [out] * len(idx)
        for i, r in zip(idx, out):
            results[i] = r
    return results


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


def _tune_malloc() -> None:
    """In a worker process: glibc keeps freed memory up to MALLOC_TRIM_THRESHOLD and serves blocks
    below MALLOC_MMAP_THRESHOLD from its heap (see WORKER_ENV); elsewhere nothing happens."""
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, MALLOC_MMAP_THRESHOLD)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, MALLOC_TRIM_THRESHOLD)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):  # not glibc: its own allocator's defaults stay
        pass


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
        return _Failed(_reason(e))
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
                    outs.append(_Failed("a worker process died (out of memory, or killed)"))
        except BaseException:  # Ctrl-C: end the workers now rather than wait for their items
            self.shutdown(wait=False)
            raise
        results = _unchunk(len(items), chunks, outs)
        if any(isinstance(r, _Failed) and r.reason.startswith("a worker process died") for r in results):
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


# ------------------------------------------------------------------ dask.distributed

_WORKER_STATE: dict = {}  # on a Dask worker: state key -> shared state, built once per worker process
def _dask_call(fn, key, init, shared, items, clock=None):
    with job_clock.running(clock):  # a budgeted job: the client's clock of it starts now
        if key not in _WORKER_STATE:
            configure(workers=1)
            _tune_malloc()
            _WORKER_STATE.clear()  # one state per worker at a time (a new spec or problem replaces it)
            with job_clock.loading():
                _WORKER_STATE[key] = _resolve_shared(shared, init)
        state = _WORKER_STATE[key]
        if len(items) == 1:  # one job: an exception goes to the scheduler, which retries it
            return [fn(state, items[0])]
        return _run_chunk(fn, state, items)


def _dask_reason(e: BaseException) -> str:
    from concurrent.futures import CancelledError

    if isinstance(e, CancelledError):  # distributed's FutureCancelledError: e.g. scattered data lost
        return (f"the Dask cluster cancelled the job (the data it needed was lost with the worker that held "
                f"it): {_reason(e)}")
    return _reason(e)


def _check_address(address: str) -> None:
    """Raise ValueError (or the backend's ImportError) for an address no Client could connect to:
    an unknown scheme, a missing or malformed port, an empty address."""
    from distributed.comm.addressing import parse_address
    from distributed.comm.registry import get_backend

    scheme, loc = parse_address(address)
    backend = get_backend(scheme)
    try:
        backend.get_address_host_port(loc)  # "missing port number in address 'garbage'"
    except NotImplementedError:  # inproc:// and the like have no host and port to check
        pass


class DaskExecutor:
    """Jobs on a running Dask scheduler; models and data are built once per worker (``init``)."""

    #: seconds between two looks at the cluster while a job's result is awaited
    POLL = 1.0
    #: seconds a budgeted job may run past its budget (and a tenth of the budget) before it is given up
    GRACE = 10.0
    #: seconds a worker's nanny is given to end a worker process running a job past its budget
    RESTART = 30.0
    RELEASE = 5.0  #: seconds the results a worker holds are given to leave it before it is retired

    def __init__(self, address: str, retries: int = 2, timeout: float | None = None,
                 lost_after: float | None = None):
        try:
            from distributed import Client
        except ImportError:
            raise JobError("--cluster needs dask.distributed: pip install 'specfair[cluster]'") from None
        if timeout is None:  # how long to try to connect (FAIRSPEC_CLUSTER_TIMEOUT seconds, default 20)
            try:
                timeout = float(os.environ.get("FAIRSPEC_CLUSTER_TIMEOUT", 20.0))
            except ValueError:
                timeout = 20.0
        # how long the cluster may have no worker at all before the jobs waiting on it fail (the
        # scheduler holds a job whose worker was lost until another worker comes: with none, forever)
        self.lost_after = timeout if lost_after is None else lost_after
        try:
            self.grace = float(os.environ.get("FAIRSPEC_CLUSTER_GRACE", self.GRACE))
        except ValueError:
            self.grace = self.GRACE
        try:
            # an unknown scheme or a malformed address ("garbage": no port) is refused before a
            # Client exists: a Client whose constructor failed still closes itself when collected,
            # which at exit prints a traceback after twice the time-out
            _check_address(address)
            self.client = Client(address, timeout=timeout, set_as_default=False)
        except Exception as e:  # noqa: BLE001 - refused, timed out, a malformed address: one sentence
            text = (str(e).splitlines() or [type(e).__name__])[0].rstrip(".")
            raise JobError(f"cannot reach the Dask scheduler at {address}: {text}") from None
        self.address, self.retries = address, retries
        info = self.client.scheduler_info()
        self.workers = max(1, sum(w.get("nthreads", 1) for w in info.get("workers", {}).values()))
        self._scattered: dict = {}

    def map(self, fn, items, shared=None, init=None, on_error=None, budget=None) -> list:
        import uuid

        items = list(items)
        if not items:
            return []
        limits = [budget(it) for it in items] if budget is not None else []
        budgeted = any(x is not None for x in limits)
        if init is not None:
            key, payload = ("init", init), None
        elif budgeted:
            # each budgeted job carries the state itself (a spec, not a network): a worker restarted for
            # a hung job then takes no data with it that the other jobs wait for (the cluster keeps a
            # broadcast state on one worker only, and lost, it cancels every job needing it)
            if self.__dict__.get("_carried", (None,))[0] is not shared:
                self._carried = (shared, uuid.uuid4().hex)
            key, payload = ("shared", self._carried[1]), shared
        else:
            sid = id(shared)
            if sid in self._scattered and self._scattered[sid][0].status != "finished":
                self._scattered = {}  # its data was lost with the workers that held it: sent again
            if sid not in self._scattered:
                # sent once to every worker; each worker keeps it for all of its jobs. Wrapped in a
                # list: scatter sends a dict value by value under the dict's own keys ("spec", ...),
                # and a key the cluster still holds keeps its old data (a second check then ran on
                # the first one's spec); a list's one element gets a fresh key.
                self._scattered = {}  # the old state goes first
                try:  # waits for a worker at most lost_after seconds (the Client's time-out otherwise)
                    (fut,) = self.client.scatter([shared], broadcast=True, hash=False, timeout=self.lost_after)
                except Exception as e:  # noqa: BLE001 - no worker to send it to, or the scheduler is gone
                    return _finish(items, [_Failed(self._unsent(e))] * len(items), on_error)
                self._scattered = {sid: (fut, shared, uuid.uuid4().hex)}
            fut, _, token = self._scattered[sid]
            key, payload = ("shared", token), fut
        if budgeted:  # budgeted jobs: one item each, each on its own clock
            chunks = [[i] for i in range(len(items))]
            clocks = self._clocks_for(limits)
        else:
            chunks, clocks = _chunked(len(items), self.workers), [None] * len(items)
        tokens = [None if c is None else uuid.uuid4().hex for c in clocks]
        with self._clock_lock:
            self._clocks.update((t, c) for t, c in zip(tokens, clocks) if c is not None)
        futures = [self.client.submit(_dask_call, fn, key, init, payload, [items[i] for i in idx], clock=token,
                                      pure=False, retries=self.retries) for idx, token in zip(chunks, tokens)]
        try:
            outs = self._results(futures, clocks)
        except BaseException:  # Ctrl-C / SIGTERM: the cluster drops the jobs not yet run
            try:
                self.client.cancel(futures)
            except Exception:  # noqa: BLE001
                pass
            raise
        finally:
            with self._clock_lock:
                for t in tokens:
                    self._clocks.pop(t, None)
        return _finish(items, _unchunk(len(items), chunks, outs), on_error)

    def _clocks_for(self, limits) -> list:
        """A clock per budgeted job; the first time, the client subscribes to the workers' clock events."""
        if not getattr(self, "_subscribed", False):
            self.client.subscribe_topic(job_clock.TOPIC, self._on_clock)
            self._subscribed = True
        return [None if x is None else job_clock.JobClock(x) for x in limits]

    @property
    def _clock_lock(self):
        if "_lock" not in self.__dict__:
            self._lock, self._clocks = threading.Lock(), {}
        return self._lock

    def _on_clock(self, event) -> None:
        """A worker's clock event (in the client's event loop): noted at this machine's time."""
        _, msg = event
        if not isinstance(msg, dict):
            return
        with self._clock_lock:
            c = self._clocks.get(msg.get("token"))
            if c is not None:
                c.note(msg.get("what"), msg.get("worker"), job_clock.now(), msg.get("seconds", 0.0))

    def _overrun(self, clock) -> Overrun | None:
        """The reason when ``clock``'s job has run past its budget and grace, else None."""
        if clock is None:
            return None
        grace = getattr(self, "grace", self.GRACE) + 0.1 * clock.budget
        with self._clock_lock:
            used, worker, extra = clock.used(job_clock.now()), clock.worker, clock.extra
        return Overrun.of(clock.budget, grace, worker, self.address) if used > clock.budget + extra + grace else None

    def _give_up_overruns(self, futures, clocks, first: int, given_up: dict) -> None:
        for j in range(first, len(futures)):
            f, clock = futures[j], clocks[j]
            over = None if j in given_up or f.done() else self._overrun(clock)
            if over is not None:
                fate = self._abandon(f, clock.worker, lambda: self._take_results(futures, first, given_up))
                over.restarted, over.retired, over.held = fate == "restarted", fate == "retired", fate == "held"
                given_up[j] = _Failed(over)

    def _take_results(self, futures, first: int, taken: dict) -> None:
        """Fetch the results of the jobs done (from ``first`` on: the others are) into ``taken`` and release
        them and the broadcast state: the scheduler retires no worker holding data no other can take."""
        done = []
        for j, f in enumerate(futures):
            if not f.done():
                continue
            if j >= first and j not in taken:
                try:
                    taken[j] = f.result(timeout=self.RESTART)
                except TimeoutError:  # no answer: left where it is, to the loop
                    continue
                except Exception as e:  # noqa: BLE001 - as the loop would say it
                    taken[j] = _Failed(_dask_reason(e))
            done.append(f)
        with contextlib.suppress(Exception):  # the scheduler gone: nothing to release
            self.client.cancel(done)  # a finished job's result is released, nothing else
        self._scattered = {}  # sent again to the workers left, when a map needs it

    def _abandon(self, future, worker: str | None, take_results=lambda: None) -> str:
        """Give up a job past its budget: cancel it and restart its worker (its nanny starts a fresh process):
        a hung thread cannot be stopped and holds the worker's slot, so the jobs queued behind it would
        never start (the scheduler reruns them). A worker without a nanny is retired from the cluster
        instead (left in place, the next jobs waited behind the hung thread for ever; its process is the
        owner's to restart). What became of the worker: "restarted", "retired", "held" (no nanny, the
        retirement refused: counted as no worker) or "" (gone, or its nanny did not answer)."""
        try:
            self.client.cancel([future])
        except Exception:  # noqa: BLE001 - the scheduler is gone: nothing to cancel
            pass
        if not worker:
            return ""
        import time

        try:
            nanny = self.client.scheduler_info(n_workers=-1)["workers"][worker].get("nanny")
        except Exception:  # noqa: BLE001 - gone already (lost): nothing to restart
            return ""
        if not nanny:  # the scheduler would end it for good: no process would take its place
            take_results()  # the done jobs' results, which a retired worker takes along
            deadline = time.monotonic() + self.RELEASE  # the scheduler keeps a worker holding data no other
            try:  # worker can take (the last one): the results released (_take_results) leave it first
                while time.monotonic() < deadline and self.client.has_what([worker]).get(worker):
                    time.sleep(0.05)
            except Exception:  # noqa: BLE001 - gone, or no answer: retired regardless
                pass
            try:
                retired = self.client.retire_workers([worker], close_workers=True)
            except Exception:  # noqa: BLE001 - the scheduler refused or did not answer
                retired = None
            fate = "retired" if worker in (retired or {}) else "held"
            self.__dict__.setdefault(f"_{fate}", []).append(worker)  # a held one counts as none (_has_workers)
            return fate
        try:  # the scheduler's own call: Client.restart_workers (distributed 2026.8) has no
            # wait_for_workers and waits until the cluster has as many workers as before, which may
            # never come true (another worker lost meanwhile: the whole RESTART timeout)
            done = self.client.sync(self.client.scheduler.restart_workers, workers=[worker], timeout=self.RESTART,
                                    wait_for_workers=False, on_error="return",
                                    stimulus_id=f"fairspec-job-past-its-budget-{time.time()}")
        except Exception:  # noqa: BLE001 - it did not answer: the job is given up regardless
            return ""
        return "restarted" if isinstance(done, dict) and done.get(worker) == "OK" else ""

    def _results(self, futures, clocks=None) -> list:
        """Each job's result, in order, or _Failed: a job that raised after its retries, one the
        cluster cancelled (its data was lost with the worker holding it), a budgeted job that ran
        past its budget and grace (``clocks``: an :class:`Overrun`), and every job not done
        once the cluster has had no worker for ``lost_after`` seconds (its worker was lost and none
        took it over: without this the wait never ended)."""
        import time

        outs: list = []
        lost: str | None = None
        alone_since: float | None = None
        given_up: dict = {}  # job index -> _Failed: past its budget (looked at while any job is awaited)
        clocks = clocks or [None] * len(futures)
        for i, f in enumerate(futures):
            while True:
                if i in given_up:
                    outs.append(given_up[i])
                    break
                if lost is not None and not f.done():
                    outs.append(_Failed(lost))
                    break
                try:
                    outs.append(f.result(timeout=self.POLL if lost is None else None))
                    break
                except TimeoutError:
                    alone_since = None if self._has_workers() else (alone_since or time.monotonic())
                    if alone_since is not None and time.monotonic() - alone_since >= self.lost_after:
                        lost = self._no_worker() or (
                            f"the Dask cluster at {self.address} has had no worker for {self.lost_after:g} s: the "
                            f"worker running the job was lost and no other took it over")
                    if lost is None:  # every job still awaited: one may hang on the worker this one waits for
                        self._give_up_overruns(futures, clocks, i, given_up)
                except Exception as e:  # noqa: BLE001 - the job failed for good (after retries, or lost workers)
                    outs.append(_Failed(_dask_reason(e)))
                    break
        return outs

    def _no_worker(self) -> str | None:
        """The reason when the cluster's last workers were retired or left held by a hung job (no nanny,
        and the scheduler kept them), a job past its budget each, and none joined since, else None."""
        retired, held = self.__dict__.get("_retired", []), self.__dict__.get("_held", [])
        if not (retired or held) or self._has_workers():
            return None
        said = []
        for ws, one, many in ((retired, "was retired", "were retired"), (held, "is", "are")):
            if ws:  # held: a hung job holds it and the scheduler did not retire it
                said.append(f"{', '.join(ws)} {one if len(ws) == 1 else many}" + (
                    " held by a hung job and could not be retired" if ws is held else ""))
        return (f"no worker left in the cluster at {self.address}: {' and '.join(said)} (a job ran past its budget "
                f"there, and it has no nanny to restart it) and no other worker joined within {self.lost_after:g} s")

    def _unsent(self, e: BaseException) -> str:  # the reason of a map's jobs whose shared data was not sent
        if self._has_workers():
            return f"the Dask cluster at {self.address} did not take the jobs' data: {_reason(e)}"
        return self._no_worker() or (f"no worker left in the cluster at {self.address}: none joined within "
                                     f"{self.lost_after:g} s to take the jobs' data")

    def _has_workers(self) -> bool:
        """Whether the cluster has a worker that can run a job (not one a hung job holds: see _abandon)."""
        try:
            workers = self.client.scheduler_info().get("workers") or {}
        except Exception:  # noqa: BLE001 - the scheduler itself is gone: no worker either
            return False
        return bool(set(workers) - set(self.__dict__.get("_held", ())))

    def close(self) -> None:  # the client stays open for the process; see shutdown()
        pass

    def shutdown(self) -> None:
        self._carried = (None,)
        self._scattered = {}  # release the broadcast state first: a cluster closed after us loses nothing
        self.client.close()
        _DASK.pop(self.address, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
