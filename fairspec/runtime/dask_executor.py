""":class:`DaskExecutor`: the jobs of :mod:`fairspec.runtime.executor` (its ``map`` contract, results in
item order) on a running ``dask.distributed`` scheduler (``--cluster tcp://host:8786`` or
``FAIRSPEC_CLUSTER``), which ``get_executor`` hands out when one is configured. Jobs are retried when their worker is lost (the scheduler
reschedules them) or when they raise (``retries``); a job that fails for good comes back
through ``on_error`` (unless its worker died each time it ran it, or it raised what is no refusal: then it is
an internal error, as locally: :func:`_dask_failed`), and so does a job the cluster cancels (its scattered data was lost with
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
without a nanny is retired instead, its results fetched first; one the scheduler keeps counts as none,
and the jobs it has queued or would be sent go to the other workers: :meth:`DaskExecutor._move_off_held`).
Budgeted jobs go one item each and carry the shared state themselves (no scattered copy that
the restart could take with it). The local executors leave the budget to the job itself (its
solvers' time limits), as before.
"""

from __future__ import annotations

import contextlib
import os
import threading

from fairspec.runtime import job_clock
from fairspec.runtime.job_clock import Overrun
from fairspec.runtime.jobs import (JobError, _chunked, _Failed, _failed, _finish, _reason, _resolve_shared,
                                   _run_chunk, _tune_malloc, _unchunk, configure)

__all__ = ["DaskExecutor"]

_DASK: dict = {}  # address -> DaskExecutor, kept for the process (a Client is costly to open)
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


def _count_moved(given_up: dict, moved: list[int]) -> None:
    """Count the jobs just moved off held workers (``moved``: their indices) into the reason of every job of
    the map given up on a held worker so far (``Overrun.moved``: how many distinct jobs moved since; a job
    moved twice counts once), so the reason says the run's other jobs were moved only when some were."""
    for failed in given_up.values():
        over = failed.reason
        if isinstance(over, Overrun) and over.held and moved:
            seen = over.__dict__.setdefault("moved_jobs", set())
            seen.update(moved)
            over.moved = len(seen)


def _dask_reason(e: BaseException) -> str:
    from concurrent.futures import CancelledError

    if isinstance(e, CancelledError):  # distributed's FutureCancelledError: e.g. scattered data lost
        return (f"the Dask cluster cancelled the job (the data it needed was lost with the worker that held "
                f"it): {_reason(e)}")
    return _reason(e)


def _dask_failed(e: BaseException) -> _Failed:
    """A job that failed for good on the cluster (``future.result()`` raised ``e``): its worker died each time
    it ran it (distributed's KilledWorker, after the scheduler's allowed failures) is the run's failure, an
    internal error (exit code 4) as a dead pool worker is locally (``died``); a job the cluster cancelled or
    could not reach keeps its reason (unknown); an exception the job itself raised is read as a local job's
    is (:func:`fairspec.runtime.jobs._failed`: a refusal is a reason, anything else a crash)."""
    from concurrent.futures import CancelledError

    if type(e).__name__ == "KilledWorker":
        try:
            said = f": {_reason(e)}"
        except Exception:  # noqa: BLE001 - its message reads attributes a pickled copy may lack
            said = ""
        return _Failed(f"the Dask worker running the job died each time it ran it (killed, out of memory)"
                       f"{said}", died=True)
    if isinstance(e, (CancelledError, OSError)) or \
            (type(e).__module__ or "").split(".")[0] in ("distributed", "tornado", "dask"):
        return _Failed(_dask_reason(e))          # the cluster's failure to run it, not the job's answer
    return _failed(e)


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
        self.workers = max(1, sum(w.get("nthreads", 1) for w in self._worker_info().values()))
        self._scattered: dict = {}

    def map(self, fn, items, shared=None, init=None, on_error=None, budget=None) -> list:
        import uuid

        items = list(items)
        if not items:
            return []
        limits = [budget(it) for it in items] if budget is not None else []
        budgeted = any(x is not None for x in limits)
        if init is not None:
            # built anew per map, as the local pool does: the factory reads files (a spec's model and data),
            # which may have changed since an equal init last ran on these long-lived workers
            key, payload = ("init", uuid.uuid4().hex), None
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

        def submit(j: int, workers: list | None):  # job j; ``workers``: where it may run (None: anywhere)
            return self.client.submit(_dask_call, fn, key, init, payload, [items[i] for i in chunks[j]],
                                      clock=tokens[j], pure=False, retries=self.retries, workers=workers)

        usable = self._usable_workers()  # not a worker a hung job holds (see _move_off_held)
        futures = [submit(j, usable) for j in range(len(chunks))]
        try:
            outs = self._results(futures, clocks, submit, [usable] * len(futures))
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
                # held: the jobs _move_off_held moves from now on are counted into over.moved (_results)
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
                    taken[j] = _dask_failed(e)
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
            nanny = self._worker_info()[worker].get("nanny")
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

    def _results(self, futures, clocks=None, submit=None, placed=None) -> list:
        """Each job's result, in order, or _Failed: a job that raised after its retries, one the
        cluster cancelled (its data was lost with the worker holding it), a budgeted job that ran
        past its budget and grace (``clocks``: an :class:`Overrun`), and every job not done
        once the cluster has had no worker for ``lost_after`` seconds (its worker was lost and none
        took it over: without this the wait never ended). While a worker is held by a hung job, the
        jobs it has or may get are moved to the others (``submit``, ``placed``: see _move_off_held)."""
        import time

        outs: list = []
        lost: str | None = None
        alone_since: float | None = None
        given_up: dict = {}  # job index -> _Failed: past its budget (looked at while any job is awaited)
        clocks = clocks or [None] * len(futures)
        placed = list(placed or [None] * len(futures))
        for i in range(len(futures)):
            while True:
                f = futures[i]  # a job moved off a held worker is a new future
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
                    if lost is None and submit is not None and self.__dict__.get("_held"):
                        moved = self._move_off_held(futures, i, given_up, submit, placed)
                        _count_moved(given_up, moved)
                except Exception as e:  # noqa: BLE001 - the job failed for good (after retries, or lost workers)
                    outs.append(_dask_failed(e))
                    break
        return outs

    def _usable_workers(self) -> list | None:
        """The workers a job may go to while a hung job holds some (``_held``): the others; None (anywhere)
        when none is held, or when only held ones are left (the jobs then wait for a worker as when the
        cluster has none, and end after ``lost_after``: _no_worker)."""
        held = self.__dict__.get("_held")
        if not held:
            return None
        try:
            workers = self._worker_info()
        except Exception:  # noqa: BLE001 - the scheduler is gone: the wait ends as for no worker
            return None
        return sorted(set(workers) - set(held)) or None

    def _move_off_held(self, futures, first: int, given_up: dict, submit, placed: list) -> list[int]:
        """Move the jobs not done (from ``first`` on) that a held worker has or may get to the other workers.
        A held worker (no nanny, its retirement refused: _abandon) stays in the cluster with its one slot
        taken by the hung thread, but the scheduler, the hung job cancelled, counts the slot free and sends it
        the next jobs, which then waited behind the thread for ever while the other workers idled. So every
        job not running or queued on a usable worker is cancelled and submitted again restricted to the
        usable ones (``placed[j]``: where job j may run, None: anywhere), and so is a job restricted to
        workers all gone since; a job is pure, so one that had just started elsewhere only runs twice.
        Returns the indices of the jobs moved (submitted again), for the reason of the held job."""
        usable = self._usable_workers()
        if usable is None:
            return []
        try:
            processing = self.client.processing()
        except Exception:  # noqa: BLE001 - no answer: looked at again at the next poll
            return []
        moved = []
        on_usable = {k for w in usable for k in processing.get(w, ())}
        for j in range(first, len(futures)):
            f = futures[j]
            if j in given_up or f.done() or f.key in on_usable:
                continue
            if placed[j] is not None and set(placed[j]) & set(usable):
                continue  # restricted to a usable worker already: waiting for its slot there
            with contextlib.suppress(Exception):  # the scheduler gone: the loop says so
                self.client.cancel([f])
            futures[j], placed[j] = submit(j, usable), usable
            moved.append(j)
        return moved

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

    def _worker_info(self) -> dict:
        """The cluster's workers now (address -> the scheduler's info), asked of the scheduler itself.
        ``Client.scheduler_info()`` fetches them into the client's cache and returns the cache, which the
        client's own periodic update (every 2 s, its workers left out) may overwrite in between: a cluster
        with workers then looked empty (measured: 2 calls in 34,621 on a loaded machine), and a worker past
        its budget was neither restarted nor retired (its nanny "not found") nor counted as there."""
        return self.client.sync(self.client.scheduler.identity, n_workers=-1).get("workers") or {}

    def _has_workers(self) -> bool:
        """Whether the cluster has a worker that can run a job (not one a hung job holds: see _abandon)."""
        try:
            workers = self._worker_info()
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
