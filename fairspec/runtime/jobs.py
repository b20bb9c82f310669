"""What every executor of :mod:`fairspec.runtime.executor` shares: the process-wide choice of workers
(``configure``), a failed job's reason (``_Failed``, ``JobError``), the chunking of many small items
and the putting back of their results in item order, and the environment of a worker process (one
BLAS/OpenMP thread, glibc's malloc thresholds). The executors themselves are in ``executor.py``
(serial, process pool) and ``dask_executor.py`` (a Dask cluster)."""

from __future__ import annotations

import os
from dataclasses import dataclass

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


_CONFIG: dict = {"workers": None, "cluster": None}


class JobError(RuntimeError):
    """A job failed and the caller gave no ``on_error``."""


class WorkerDied(RuntimeError):
    """A worker process of the pool died (killed, out of memory) while it held the job: a failure of the
    run, never an answer of the job's (so no JobError, which a backend may turn into an unknown). ``map``
    raises it, whatever ``on_error`` is, unless ``on_error`` says it takes it (``on_error.takes_death =
    True``: it is then called with a :class:`DeathReason`): the caller's property is an internal error
    (exit code 4), which ``fail-on-unknown: false`` and ``allow_unknown`` do not let pass, not an unknown."""


class JobCrashed(RuntimeError):
    """A job raised an exception that is no refusal of fairspec's (an IndexError, a library's error, a
    MemoryError): a bug or a crash of the run, never an answer of the job's, whatever executor ran it. As
    :class:`WorkerDied`, ``map`` raises it whatever ``on_error`` is, unless ``on_error.takes_death`` (then
    called with a :class:`DeathReason`): the caller's property is an internal error (exit code 4). A refusal
    -- an exception class fairspec defines (``Unsupported``, ``UnsupportedModel``, ``ModelLoadError``,
    ``DataError``, ``JobError``, a backend's budget or size limit, ``ProofRefused``) or a ``TimeoutError`` --
    still goes to ``on_error``, which makes it an unknown / undecided with the reason (:func:`_failed`)."""


class DeathReason(str):
    """The reason an ``on_error`` that takes a dead worker or a crashed job (``takes_death``) is called with."""


@dataclass(frozen=True)
class _Failed:
    reason: str
    died: bool = False  # the worker process holding the job died (ProcessExecutor: BrokenProcessPool)
    crashed: bool = False  # the job raised what is no refusal (JobCrashed): an internal error


def _is_refusal(e: BaseException) -> bool:
    """Whether a job's exception is a refusal its caller's ``on_error`` may turn into an unknown: a class
    fairspec defines (raised on purpose: Unsupported, a file's error, a budget...) or a time-out. A builtin's
    or a library's exception (IndexError, KeyError, a solver's error) is a crash: an internal error."""
    if isinstance(e, (JobCrashed, WorkerDied)):
        return False
    if isinstance(e, TimeoutError):
        return True
    return any((c.__module__ or "").split(".")[0] == "fairspec" for c in type(e).__mro__)


def _where(e: BaseException) -> str:
    """The innermost frame of ``e``'s traceback, as ' (at file.py:line)' ('' without one)."""
    import traceback

    frames = traceback.extract_tb(e.__traceback__) if e.__traceback__ is not None else []
    return f" (at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""


def _failed(e: BaseException) -> "_Failed":
    """A job's exception as its failure: a refusal's reason for ``on_error``, or a crash (``crashed``)."""
    if _is_refusal(e):
        return _Failed(_reason(e))
    return _Failed(f"a job raised {_reason(e)}{_where(e)}", crashed=True)



def configure(workers: int | None = None, cluster: str | None = None) -> None:
    """The process-wide choice: ``workers`` (None: the machine's cores) and a Dask scheduler address."""
    _CONFIG["workers"] = workers
    _CONFIG["cluster"] = cluster



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
            if r.died and not getattr(on_error, "takes_death", False):
                raise WorkerDied(r.reason)
            if r.crashed and not getattr(on_error, "takes_death", False):
                raise JobCrashed(r.reason)
            if on_error is None:
                raise JobError(r.reason)
            r = on_error(it, DeathReason(r.reason) if r.died or r.crashed else r.reason)
        out.append(r)
    return out


def _guarded(fn, state, item):
    try:
        return fn(state, item)
    except Exception as e:  # noqa: BLE001 - a failing job becomes a reason (or a crash), never a lost result
        if os.environ.get("FAIRSPEC_DEBUG"):
            raise
        return _failed(e)



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

