"""The clock of a budgeted job on a Dask cluster (:class:`fairspec.runtime.dask_executor.DaskExecutor`).

The cluster budgets what a local run budgets, no more: a local run bounds a property's work only from
the first time limit it takes (``Context.remaining``: the solvers' and searches' limits; what comes
before -- lowering, enumerating a small domain, a data pre-pass when the spec sets no timeout -- a local run waits for however
long it takes). A worker says when it starts a budgeted job (:func:`running`), when that job first
takes a time limit (:func:`limited`: the clock starts), when a phase is granted time past the budget
(:func:`extend`, as ``Context.remaining_at_least`` grants it locally) and when it loads a model or
data file (:func:`loading`: not on the clock, as locally); the client notes each event at its own
time in the job's :class:`JobClock` and gives the job up once the clock passes the budget and grace
(:class:`Overrun`, the reason ``on_error`` gets). Outside a budgeted job on a Dask worker, these do
nothing. Imports nothing of fairspec.
"""

from __future__ import annotations

import contextlib
import threading
import time

__all__ = ["Overrun", "JobClock", "loading", "limited", "extend", "running", "TOPIC"]


class Overrun(str):
    """The reason of a job the Dask cluster gave no answer for within its time budget and grace (a
    string, as every reason ``on_error`` gets): ``budget`` and ``grace`` in seconds, the ``worker``."""

    budget: float = 0.0
    grace: float = 0.0
    worker: str = ""
    restarted: bool = False  # the worker was restarted (its nanny started a fresh process)
    retired: bool = False  # no nanny: the worker was retired from the cluster (no job is sent to it any more)
    held: bool = False  # no nanny, and it could not be retired: the hung job holds its slot
    moved: int = 0  # held: how many of the map's other jobs were then moved to the cluster's other workers

    @classmethod
    def of(cls, budget: float, grace: float, worker: str | None, address: str) -> "Overrun":
        r = cls(f"no answer from the cluster worker {worker or '?'} (scheduler {address}) within the job's "
                f"{budget:g} s budget and {grace:g} s of grace: the job was cancelled")
        r.budget, r.grace, r.worker = budget, grace, worker or ""
        return r


def now() -> float:
    """The client's time of the job clocks (the executor notes events and looks at budgets with it; a
    test moves it, instead of waiting for a budget to pass in real time)."""
    return time.monotonic()


_CLOCK = threading.local()  # on a Dask worker: the budgeted job this thread runs (token, loads in progress)
TOPIC = "fairspec-job-clock"  # the events a worker sends the client about a budgeted job's clock


def _clock_event(what: str, seconds: float = 0.0) -> None:
    try:
        from distributed import get_worker

        w = get_worker()
        w.log_event(TOPIC, {"token": _CLOCK.token, "what": what, "worker": w.address, "seconds": seconds})
    except Exception:  # noqa: BLE001 - not on a worker, or the worker is closing: nobody to tell
        pass


@contextlib.contextmanager
def loading():
    """Around loading a model or data file (or a job's shared state): on a Dask worker running a
    budgeted job, the client's clock of that job stops meanwhile (a property's budget is its own
    work, the files it loads apart, as locally); anywhere else this does nothing."""
    if getattr(_CLOCK, "token", None) is None:
        yield
        return
    _CLOCK.depth = getattr(_CLOCK, "depth", 0) + 1
    if _CLOCK.depth == 1:
        _clock_event("pause")
    try:
        yield
    finally:
        _CLOCK.depth -= 1
        if _CLOCK.depth == 0:
            _clock_event("resume")


def limited() -> None:
    """The job takes a time limit (``Context.remaining``): on a Dask worker running a budgeted job, the
    client's clock of it starts now, the first time (a local run bounds nothing before)."""
    if getattr(_CLOCK, "token", None) is not None and not _CLOCK.limited:
        _CLOCK.limited = True
        _clock_event("limit")


def extend(seconds: float) -> None:
    """A phase is granted ``seconds`` past the budget (as a local run grants it): on a Dask worker running
    a budgeted job, the client's budget of it grows by as much."""
    if getattr(_CLOCK, "token", None) is not None and seconds > 0:
        _clock_event("extend", float(seconds))


@contextlib.contextmanager
def running(token: str | None):
    """On a Dask worker, around a job: a budgeted one (``token``) tells the client it starts now."""
    if token is None:
        yield
        return
    _CLOCK.token, _CLOCK.depth, _CLOCK.limited = token, 0, False
    _clock_event("start")
    try:
        yield
    finally:
        _CLOCK.token = None


class JobClock:
    """The client's view of one budgeted job: which worker said it started it (a rerun elsewhere starts
    it afresh), when the job first took a time limit there (the clock starts), how long it spent
    loading files since, and the time granted past the budget (``extra``)."""

    def __init__(self, budget: float):
        self.budget, self.started, self.worker, self.paused_at, self.paused = float(budget), None, None, None, 0.0
        self.extra = 0.0

    def note(self, what: str, worker: str | None, now: float, seconds: float = 0.0) -> None:
        if what == "start":
            self.started, self.worker, self.paused_at, self.paused, self.extra = None, worker, None, 0.0, 0.0
        elif what == "limit" and self.started is None:
            self.started = now
        elif what == "extend":
            self.extra += max(0.0, float(seconds or 0.0))
        elif what == "pause" and self.started is not None and self.paused_at is None:
            self.paused_at = now
        elif what == "resume" and self.paused_at is not None:
            self.paused, self.paused_at = self.paused + now - self.paused_at, None

    def used(self, now: float) -> float:
        """Seconds of the job's own work on the clock so far (0 before it took its first time limit)."""
        if self.started is None:
            return 0.0
        return max(0.0, (self.paused_at if self.paused_at is not None else now) - self.started - self.paused)
