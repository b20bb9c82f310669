"""A job that hangs on a living Dask worker ends at its property's budget, instead of hanging the run.

Only a worker lost for good had a limit (FAIRSPEC_CLUSTER_TIMEOUT): a worker that stayed up while
its job hung (a solver ignoring its time limit, a deadlock) was waited on for ever, so a `--cluster`
check never ended. Now the client keeps a clock per budgeted job (started when the job takes its
first time limit on its worker, as a local run bounds nothing before: its data pre-pass, say; stopped
while that worker loads files) and gives the job up past its budget and grace:
the property is `unknown` with the reason, the future is cancelled, the worker restarted, and the
other properties keep their verdicts.

The hanging job waits on an Event nobody sets (it hangs for ever, however fast the machine is); it
is injected into the workers by the test (``client.run``), never by a switch of fairspec. The waits
are guards, never speed requirements: the tests assert only verdicts, reasons and exit codes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import FIXTURES, people_decls, run_cli
from fairspec.runtime import executor as ex_mod

ROOT = Path(__file__).resolve().parent.parent
GUARD = 300.0  # seconds: a map or check still waiting by then fails the test instead of hanging it


def _answer_unless_hang(shared, item):
    if item == "hang":
        from fairspec.runtime import job_clock

        job_clock.limited()  # it takes a time limit (the clock starts), as a solver does, and ignores it:
        threading.Event().wait()  # never set: this job hangs for ever on a living worker
    return item * 2


def _hang_property_on_worker(name: str) -> None:
    """On a worker: the data backend's runner hangs for ever on property ``name`` (a test's stand-in
    for a solver that ignores its time limit); the other properties run as they are."""
    import fairspec.kinds.on_data as on_data

    orig = getattr(on_data.run, "__wrapped__", on_data.run)

    def run(prop, ctx, progress=None):
        if prop.name == name:
            ctx.remaining(1.0)  # it takes its 1 s limit, as a solver does, and ignores it
            threading.Event().wait()
        return orig(prop, ctx, progress)

    run.__wrapped__ = orig
    on_data.run = run


def _guarded(call):
    out: dict = {}
    t = threading.Thread(target=lambda: out.setdefault("got", call()), daemon=True)
    t.start()
    t.join(GUARD)
    assert not t.is_alive(), "still waiting for a job that hangs on a living worker"
    return out["got"]


@pytest.fixture(scope="module")
def serial(tmp_path_factory) -> dict:
    """The verdicts of a local run of ROOMY (`hangs` holds when nothing hangs, however slow the machine):
    the reference of the cluster checks, computed once for the module."""
    from fairspec.pipeline import check

    spec = _project(tmp_path_factory.mktemp("serial"))
    spec.write_text(ROOMY)
    ex_mod.configure()
    got = {v.name: (v.status, v.how, v.value) for v in check(spec).verdicts}
    assert set(got) == {"parity", "hangs", "odds"} and got["hangs"][0] == "holds", got
    return got


def _bare_worker(address: str) -> subprocess.Popen:
    """A one-thread worker process without a nanny (nothing restarts it), which can import this module and
    the project (a job's function is pickled by reference)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests"),
                                                       os.environ.get("PYTHONPATH", "")]))
    return subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--no-nanny",
                             "--nthreads", "1"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_a_worker_without_a_nanny_is_retired_and_the_next_jobs_run_elsewhere(tmp_path):
    """Without a nanny the worker cannot be restarted, and left in place its one slot stays held by
    the hung thread while the scheduler keeps sending it jobs, which then waited for ever (seen: the
    next map never ended). It is retired from the cluster: the hung job is given up, the reason says
    what became of the worker, and the next map runs on the other worker."""
    distributed = pytest.importorskip("distributed")
    import cloudpickle

    from fairspec.pipeline import _failed_job

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    with distributed.LocalCluster(n_workers=0, host="127.0.0.1", dashboard_address=None, silence_logs=50) as lc:
        workers = [_bare_worker(lc.scheduler_address) for _ in range(2)]
        try:
            ex = ex_mod.DaskExecutor(lc.scheduler_address, timeout=GUARD)
            ex.client.wait_for_workers(2, timeout=GUARD)
            ex.grace = 0.0
            (got,) = _guarded(lambda: ex.map(_answer_unless_hang, ["hang"], shared={"k": 1},
                                             budget=lambda item: 1.0, on_error=lambda item, why: why))
            assert isinstance(got, ex_mod.Overrun) and got.retired and not got.restarted and not got.held, got
            assert got.worker not in ex._worker_info()
            why = _failed_job(("key", "p", "group_metric"), got)["verdict"].reason
            assert why.endswith("its job was cancelled and the worker retired from the cluster (it has no nanny "
                                "to restart it, and the hung job holds its slot)"), why
            assert _guarded(lambda: ex.map(_answer_unless_hang, list(range(6)))) == [2 * i for i in range(6)]
            ex.shutdown()
        finally:
            for w in workers:
                w.kill()
                w.wait()


@pytest.mark.parametrize("refused", [False, True])
def test_the_last_worker_retired_the_next_jobs_end_with_the_reason(refused):
    """One worker, no nanny: a job past its budget has it retired, and the cluster has no worker left.
    The next map's shared data was scattered with the Client's time-out (the connection's: 300 s here,
    FAIRSPEC_CLUSTER_TIMEOUT) as its wait for a worker, and its TimeoutError came out of ``map`` past
    ``on_error`` (an internal error); now every job of a map ends through ``on_error`` once the cluster
    has had no worker for ``lost_after`` seconds (a wait for a worker that never comes: no speed
    requirement), the reason naming the cluster and the retired worker. ``refused``: the scheduler keeps
    the worker (retire_workers answers without it): held by the hung job, it counts as no worker."""
    distributed = pytest.importorskip("distributed")
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    with distributed.LocalCluster(n_workers=0, host="127.0.0.1", dashboard_address=None, silence_logs=50) as lc:
        worker = _bare_worker(lc.scheduler_address)
        try:
            ex = ex_mod.DaskExecutor(lc.scheduler_address, timeout=GUARD, lost_after=1.0)
            ex.client.wait_for_workers(1, timeout=GUARD)
            ex.grace = 0.0
            # how often a map looks at the cluster while it waits (1 s): no outcome here depends on it, as no job
            # ends on its own (one hangs, the others never get a worker)
            ex.POLL = 0.2
            if refused:
                ex.client.retire_workers = lambda workers, **kw: {}
            (got,) = _guarded(lambda: ex.map(_answer_unless_hang, ["hang"], shared={"k": 1},
                                             budget=lambda item: 1.0, on_error=lambda item, why: why))
            assert isinstance(got, ex_mod.Overrun) and (got.held if refused else got.retired), got
            assert not got.moved, "the held worker was the only one: no job was moved anywhere"
            fate = "is held by a hung job and could not be retired" if refused else "was retired"
            expected = (f"no worker left in the cluster at {lc.scheduler_address}: {got.worker} {fate} (a job ran "
                        f"past its budget there, and it has no nanny to restart it) and no other worker joined "
                        f"within 1 s")
            # unbudgeted: the shared data is broadcast to the workers first
            unbudgeted = _guarded(lambda: ex.map(_answer_unless_hang, [1, 2, 3], shared={"k": 2},
                                                 on_error=lambda item, why: (item, why)))
            assert unbudgeted == [(i, expected) for i in (1, 2, 3)], unbudgeted

            def without_on_error():
                try:
                    return ex.map(_answer_unless_hang, [1], shared={"k": 3})
                except ex_mod.JobError as e:
                    return f"JobError: {e}"

            assert _guarded(without_on_error) == f"JobError: {expected}"
            # budgeted: each job carries the state and waits for a worker
            budgeted = _guarded(lambda: ex.map(_answer_unless_hang, [1, 2], shared={"k": 2},
                                               budget=lambda item: GUARD, on_error=lambda item, why: (item, why)))
            assert budgeted == [(i, expected) for i in (1, 2)], budgeted
            ex.shutdown()
        finally:
            worker.kill()
            worker.wait()


def _gated(shared, item):
    """A job of the held-worker test: "hang" as above, "gate:PATH" waits until the test makes PATH (at most
    GUARD seconds), the others answer at once."""
    import time

    if isinstance(item, str) and item.startswith("gate:"):
        deadline = time.monotonic() + GUARD
        while not os.path.exists(item[5:]) and time.monotonic() < deadline:
            time.sleep(0.05)
        return "opened"
    return _answer_unless_hang(shared, item)


def _queuing() -> bool:
    import dask

    return float(dask.config.get("distributed.scheduler.worker-saturation")) != float("inf")


def test_jobs_queued_on_a_held_worker_move_to_the_other_one(tmp_path):
    """Two workers without a nanny; the one whose job hangs past its budget cannot be retired (the scheduler
    refuses): it stays in the cluster, held by the hung thread. The scheduler, the hung job cancelled, counted
    its one slot free and sent it the next jobs, which waited behind the thread for ever while the other
    worker idled (seen: the map never ended, and neither did the next). Now the jobs it has or may get are
    moved to the other worker, in that map and the next ones. The gate job keeps the map's other jobs
    waiting until the executor has first looked for jobs to move (which it does once the worker is held,
    whichever worker the gate lands on), so some are still to run then. The hung job's reason counts the
    jobs actually moved -- every job whose future _move_off_held replaced, seen by a spy -- (it said 'the
    run's other jobs were moved' whenever the cluster had another worker, moved or not); every wait is
    bounded by GUARD, none is a speed requirement."""
    distributed = pytest.importorskip("distributed")
    import cloudpickle
    import time

    from fairspec.pipeline import _failed_job

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    gate = tmp_path / "gate"
    with distributed.LocalCluster(n_workers=0, host="127.0.0.1", dashboard_address=None, silence_logs=50) as lc:
        workers = [_bare_worker(lc.scheduler_address) for _ in range(2)]
        try:
            ex = ex_mod.DaskExecutor(lc.scheduler_address, timeout=GUARD)
            ex.client.wait_for_workers(2, timeout=GUARD)
            ex.grace = 0.0
            ex.client.retire_workers = lambda workers, **kw: {}  # the scheduler keeps the worker
            orig, replaced, looked = ex._move_off_held, set(), threading.Event()

            def spy(futures, first, given_up, submit, placed):
                before = list(futures)
                out = orig(futures, first, given_up, submit, placed)
                replaced.update(j for j, (a, b) in enumerate(zip(before, futures)) if a is not b)
                looked.set()
                return out

            ex._move_off_held = spy
            items = ["hang", f"gate:{gate}", *range(1, 7)]
            out: dict = {}
            run = threading.Thread(target=lambda: out.setdefault("got", ex.map(
                _gated, items, shared={"k": 1}, budget=lambda item: 1.0 if item == "hang" else GUARD,
                on_error=lambda item, why: why)), daemon=True)
            run.start()
            deadline = time.monotonic() + GUARD
            while not looked.is_set() and run.is_alive() and time.monotonic() < deadline:
                time.sleep(0.05)
            gate.touch()  # the other jobs may run now
            run.join(GUARD)
            assert not run.is_alive(), "jobs still queued behind the hung job on the held worker"
            got = out["got"]
            assert got[1:] == ["opened", *(2 * i for i in range(1, 7))], got
            assert isinstance(got[0], ex_mod.Overrun) and got[0].held and not got[0].retired, got[0]
            why = _failed_job(("key", "hang", "group_metric"), got[0])["verdict"].reason
            # none of the 7 other jobs had run when the executor first looked (one worker hung, the other on
            # the gate or idle with the gate queued behind the hang); with the scheduler's queuing (its
            # default worker-saturation) the free worker holds at most two of them, so the rest were moved
            n = len(replaced)
            assert got[0].moved == n and (n >= 1 or not _queuing()), (got[0].moved, replaced)
            said = f"; {n} other job{'s' if n != 1 else ''} of the run {'was' if n == 1 else 'were'} moved to the " \
                   f"other workers" if n else ""
            assert why.endswith("nor retired: the hung job holds its slot until the worker is restarted" + said), why
            assert got[0].worker in ex._worker_info()  # held: still in the cluster
            # the next maps go to the other worker from the start (unbudgeted, chunked: the state broadcast)
            assert _guarded(lambda: ex.map(_answer_unless_hang, list(range(8)), shared={"k": 2})) == \
                [2 * i for i in range(8)]
            assert _guarded(lambda: ex.map(_answer_unless_hang, [1, 2, 3], shared={"k": 3},
                                           budget=lambda item: GUARD)) == [2, 4, 6]
            ex.shutdown()
        finally:
            for w in workers:
                w.kill()
                w.wait()


SPEC = people_decls("people.csv", features="P") + '''model net = onnx("people6.onnx", output = "logit")
encode P for net { age : standard  sex : onehot  race : code  member, score : raw }
property parity {
  statistical_parity(net, groups sex) <= 0.99
}
property hangs {
  statistical_parity(net, groups race) <= 0.99
  timeout = 1s
}
property odds {
  equalized_odds(net, groups sex) <= 0.99
}
'''


# `hangs` with a budget no real work has to fit (the guard's): the verdicts a run gets when nothing hangs
ROOMY = SPEC.replace("timeout = 1s", f"timeout = {GUARD:g}s")


def _project(tmp_path) -> Path:
    (tmp_path / "fairspec.toml").write_text("")
    (tmp_path / "people.csv").write_bytes((FIXTURES / "data" / "people.csv").read_bytes())
    (tmp_path / "people6.onnx").write_bytes((FIXTURES / "models" / "people6.onnx").read_bytes())
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC)
    return spec


def test_a_check_whose_only_worker_is_retired_ends_with_the_reason(serial, tmp_path, monkeypatch):
    """The check's side of test_a_property_hanging_on_the_cluster_..._kept (below): one worker without a
    nanny, `hangs` overruns and has it retired; a property whose job was queued behind it is `unknown`
    with the reason once the cluster has had no worker for ``lost_after`` seconds (FAIRSPEC_CLUSTER_TIMEOUT
    unless told; one that ran before `hangs` keeps its verdict: the scheduler picks the order), and the
    check ends. Seen before: the worker held
    the result of a job done before `hangs`, which no other worker could take, so the scheduler refused
    to retire it, and the jobs queued behind the hung one were waited on for ever (the test's guard of
    300 s ran out). The wait for a worker is 2 s here (it was FAIRSPEC_CLUSTER_TIMEOUT=20: 20 s of the
    test's time): no worker ever joins, however slow the machine, so it is no speed requirement; the
    connection keeps the guard's time-out."""
    distributed = pytest.importorskip("distributed")
    import cloudpickle
    from distributed import Client

    from fairspec.pipeline import check

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    spec = _project(tmp_path)
    monkeypatch.setenv("FAIRSPEC_CLUSTER_GRACE", "0")
    monkeypatch.setenv("FAIRSPEC_CLUSTER_TIMEOUT", str(GUARD))
    with distributed.LocalCluster(n_workers=0, host="127.0.0.1", dashboard_address=None, silence_logs=50) as lc:
        worker = _bare_worker(lc.scheduler_address)
        try:
            with Client(lc.scheduler_address, set_as_default=False) as admin:
                admin.wait_for_workers(1, timeout=GUARD)
                admin.run(_hang_property_on_worker, "hangs")
            ex_mod.configure(cluster=lc.scheduler_address)
            ex = ex_mod.get_executor()  # the executor the check gets, connected within FAIRSPEC_CLUSTER_TIMEOUT
            assert ex.lost_after == GUARD, ex.lost_after  # which is its wait for a worker too, unless told
            ex.lost_after = 2.0
            report = _guarded(lambda: check(spec, parallel=True))
        finally:
            ex_mod.configure()
            for e in list(ex_mod._DASK.values()):
                e.shutdown()
            worker.kill()
            worker.wait()
    got = {v.name: v for v in report.verdicts}
    assert got["hangs"].status == "unknown" and got["hangs"].reason.endswith("the worker retired from the cluster (it "
                                                                             "has no nanny to restart it, and the hung "
                                                                             "job holds its slot)"), got["hangs"]
    left = f"no worker left in the cluster at {lc.scheduler_address}: tcp://127.0.0.1:"
    for name in ("parity", "odds"):
        v = got[name]
        assert (v.status, v.how, v.value) == serial[name] or (v.status == "unknown" and left in v.reason and
                                                              "no other worker joined within 2 s" in v.reason), v
    assert not report.internal_errors


def test_a_budget_never_makes_a_holds_and_needs_a_cluster_only():
    """The reason a property gets when its job is given up, and the local executors' indifference to
    budgets (they leave it to the job's own solvers, as before)."""
    from fairspec.pipeline import _failed_job

    over = ex_mod.Overrun.of(30.0, 13.0, "tcp://10.0.0.2:4000", "tcp://10.0.0.1:8786")
    over.restarted = True
    v = _failed_job(("key", "parity", "group_metric"), over)["verdict"]
    assert v.status == "unknown", v
    assert v.reason == ("no answer from the cluster worker tcp://10.0.0.2:4000 within the property's 30 s budget "
                        "(and 13 s of grace): its job was cancelled and the worker restarted"), v.reason
    over.restarted, over.held = False, True
    v = _failed_job(("key", "parity", "group_metric"), over)["verdict"]
    assert v.reason.endswith("its job was cancelled; the worker could not be restarted (it has no nanny) nor "
                             "retired: the hung job holds its slot until the worker is restarted"), v.reason
    for moved, said in ((1, "1 other job of the run was"), (3, "3 other jobs of the run were")):
        over.moved = moved  # how many of the run's other jobs went to the other workers
        v = _failed_job(("key", "parity", "group_metric"), over)["verdict"]
        assert v.reason.endswith(f"the hung job holds its slot until the worker is restarted; {said} moved to the "
                                 f"other workers"), v.reason
    assert ex_mod.SerialExecutor().map(_answer_unless_hang, [1, 2], budget=lambda item: 0.001) == [2, 4]


def test_the_clock_counts_what_a_local_run_bounds(monkeypatch):
    """Worker side: a job's clock starts at its first time limit (Context.remaining), once; a floor
    granted past the budget extends it; no limit, no event. Client side: nothing counts before the
    first limit, loads never count, extensions add to the budget."""
    from fairspec.runtime import job_clock
    from fairspec.runtime.context import Context

    sent: list = []
    monkeypatch.setattr(job_clock, "_clock_event", lambda what, seconds=0.0: sent.append((what, seconds)))
    ctx = Context.__new__(Context)
    ctx.loads = []
    ctx.begin_property()
    assert ctx.remaining(5.0) <= 5.0 and sent == []  # not in a budgeted job: nothing to tell
    with job_clock.running("tok"):
        assert ctx.remaining(None) is None
        with job_clock.loading():
            pass
        ctx.remaining(5.0)
        ctx.remaining(5.0)
        assert ctx.remaining_at_least(5.0, 100.0) == 100.0
        assert ctx.remaining_at_least(5.0, 0.0) <= 5.0
    whats = [w for w, _ in sent]
    assert whats == ["start", "pause", "resume", "limit", "extend"], sent
    assert 95.0 <= sent[-1][1] <= 100.0, sent

    c = job_clock.JobClock(2.0)
    c.note("start", "w", 0.0)
    c.note("pause", "w", 1.0)
    c.note("resume", "w", 50.0)  # a load before the first limit: nothing is on the clock yet
    assert c.used(60.0) == 0.0
    c.note("limit", "w", 60.0)
    c.note("limit", "w", 70.0)  # only the first starts the clock
    c.note("pause", "w", 61.0)
    c.note("resume", "w", 80.0)
    assert c.used(81.0) == 2.0
    c.note("extend", "w", 81.0, 3.0)
    assert c.extra == 3.0
    c.note("start", "w2", 90.0)  # rerun elsewhere: afresh
    assert c.used(95.0) == 0.0 and c.extra == 0.0 and c.worker == "w2"


PAIR = SPEC.split("property parity")[0] + '''property pair {
  forall x, x' : P
  require x.* == x'.* except {sex}
  ensure label(net(x)) == label(net(x'))
  using milp
}
'''


def test_the_data_pre_pass_of_a_pair_property_is_off_the_clock(tmp_path, monkeypatch):
    """A pair property on the MILP (a 60 s budget on the cluster) first flips its data rows, which a local
    run does not bound: its job takes its first time limit (the cluster's clock of it starts) after the
    pre-pass, when the solver's limit is worked out, not before."""
    import fairspec.backends.data.flips as flips
    from fairspec.files import Roots
    from fairspec.pipeline import _budgets, _job_state, _property_job, lint
    from fairspec.runtime import job_clock
    from fairspec.verdict import unknown

    spec = _project(tmp_path)
    spec.write_text(PAIR)
    res = lint(spec)
    (prop,) = res.spec.properties
    assert _budgets([prop], res.spec)((None, "pair", prop.kind)) == 60.0
    sent: list = []
    seen: list = []

    def event(what, seconds=0.0):
        sent.append(what)
        if what == "limit":
            raise RuntimeError("the clock starts")  # the test's end of the job (an internal error, unknown)

    def pre_pass(prop, ctx, progress=None, **kw):
        seen.append(list(sent))
        return unknown(prop, "no flip found", backend="data")

    monkeypatch.setattr(job_clock, "_clock_event", event)
    monkeypatch.setattr(flips, "run_flips", pre_pass)
    state = _job_state(res.spec, Roots.for_spec(spec, ()))
    with job_clock.running("tok"):
        out = _property_job(state, ((), "pair", prop.kind))
    assert seen and seen[0][0] == "start" and "limit" not in seen[0], (seen, out)
    assert sent[-1] == "limit" and "the clock starts" in out["verdict"].reason, (sent, out)


# ------------------------------------------------------------- on the module's 2-worker LocalCluster (nannies)
# These tests come last, together: the cluster is started for the first and closed after the module, and
# an idle LocalCluster costs CPU (its ticks and heartbeats: ~3.7 s a 30 s on this machine).


@pytest.fixture(scope="module")
def _local_cluster():
    """One 2-worker LocalCluster (processes, with nannies) for the module: starting one per test cost
    two worker processes' start-up and the cluster's close each time (see ``cluster``). A worker its
    nanny restarts (a hung job's) that has not rejoined within distributed.deploy.lost-worker-timeout
    (15 s) is closed for good by the LocalCluster, nanny and all: on a loaded machine a restart takes
    that long (seen: the next wait for 2 workers ran out), so the time-out is the guard's here."""
    distributed = pytest.importorskip("distributed")
    import cloudpickle
    import dask

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the job functions above travel by value
    # the workers import this tree; prepended once a process: a PYTHONPATH changed again (the other
    # module's cluster set it already) restarted run_cli's fork server (tests/cli_forkserver.py)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(ROOT) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + paths)
    with dask.config.set({"distributed.deploy.lost-worker-timeout": f"{GUARD:g}s"}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                     dashboard_address=None, silence_logs=50) as lc:
        yield lc


def _unpatch_worker(dask_worker) -> int:
    """On a worker: an earlier test's stand-in for the data runner (_hang_property_on_worker,
    _block_property_on_worker) undone; the number of jobs its threads still run (a hung one counts)."""
    on_data = sys.modules.get("fairspec.kinds.on_data")
    if on_data is not None:
        on_data.run = getattr(on_data.run, "__wrapped__", on_data.run)
    return dask_worker.state.executing_count


@pytest.fixture
def cluster(_local_cluster):
    """The module's cluster as a fresh one for each test: both workers up (a test leaves one restarted,
    which rejoins in its own time; one lost for good is started again), none running a job (a worker an
    earlier test left a hung thread on is restarted: none should have), none patched; the test's
    executors shut down after it."""
    from distributed import Client

    _local_cluster.scale(2)  # a worker the cluster closed is started again (none, unless one failed to start)
    address = _local_cluster.scheduler_address
    with Client(address, set_as_default=False) as c:
        c.wait_for_workers(2, timeout=GUARD)
        busy = [w for w, n in c.run(_unpatch_worker).items() if n]
        if busy:
            c.restart_workers(busy, timeout=GUARD)
            c.wait_for_workers(2, timeout=GUARD)
    yield address
    ex_mod.configure()
    for e in list(ex_mod._DASK.values()):
        e.shutdown()


def test_a_job_hanging_on_a_living_worker_is_given_up_at_its_budget(cluster):
    ex = ex_mod.DaskExecutor(cluster, timeout=GUARD)
    ex.grace = 0.0
    items = ["a", "hang", "b", "c"]
    # the others' budget is the guard: a busy machine never makes a job that answers too late
    got = _guarded(lambda: ex.map(_answer_unless_hang, items, shared={"k": 1},
                                  budget=lambda item: 1.0 if item == "hang" else GUARD,
                                  on_error=lambda item, why: ("unknown", item, why)))
    assert got[0] == "aa" and got[2:] == ["bb", "cc"], got
    assert got[1][:2] == ("unknown", "hang"), got
    why = got[1][2]
    assert isinstance(why, ex_mod.Overrun) and why.budget == 1.0, why
    assert why.startswith("no answer from the cluster worker tcp://127.0.0.1:"), why
    assert "within the job's 1 s budget and 0.1 s of grace: the job was cancelled" in why, why
    assert why.restarted, "the worker holding the hung job was not restarted"
    # the restarted worker serves the next map; unbudgeted jobs are chunked as before
    assert _guarded(lambda: ex.map(_answer_unless_hang, list(range(10)))) == [2 * i for i in range(10)]


def test_a_property_hanging_on_the_cluster_is_unknown_at_its_budget_the_others_kept(cluster, serial, tmp_path,
                                                                                     monkeypatch):
    from distributed import Client

    from fairspec.pipeline import check

    spec = _project(tmp_path)  # on the cluster `hangs` takes its 1 s limit and hangs: no real work has to fit it

    monkeypatch.setenv("FAIRSPEC_CLUSTER_GRACE", "0")
    with Client(cluster, set_as_default=False) as admin:
        admin.run(_hang_property_on_worker, "hangs")
        ex_mod.configure(cluster=cluster)
        try:
            report = _guarded(lambda: check(spec, parallel=True))
        finally:
            ex_mod.configure()
    got = {v.name: v for v in report.verdicts}
    hung = got["hangs"]
    assert hung.status == "unknown", hung
    assert hung.reason.startswith("no answer from the cluster worker tcp://127.0.0.1:"), hung.reason
    assert "within the property's 1 s budget (and 0.1 s of grace): its job was cancelled" in hung.reason
    assert {n: (v.status, v.how, v.value) for n, v in got.items() if n != "hangs"} == \
        {n: s for n, s in serial.items() if n != "hangs"}
    assert not report.internal_errors and report.exit_code == (1 if any(
        s[0] == "violated" for s in serial.values()) else 3)

    # the command line: the same verdict, the usual exit code, nothing but the JSON on stdout
    with Client(cluster, set_as_default=False) as admin:
        admin.wait_for_workers(2, timeout=GUARD)
        admin.run(_hang_property_on_worker, "hangs")
    r = run_cli("check", spec, "--cluster", cluster, "--format", "json", timeout=GUARD,
                env={"FAIRSPEC_CLUSTER_GRACE": "0", "FAIRSPEC_CLUSTER_TIMEOUT": str(GUARD)})
    doc = json.loads(r.stdout)
    props = {p["name"]: p for p in doc["properties"]}
    assert r.returncode == report.exit_code == doc["exit_code"], (r.returncode, r.stderr[-2000:])
    assert props["hangs"]["status"] == "unknown" and "within the property's 1 s budget" in props["hangs"]["reason"]
    assert {n: p["status"] for n, p in props.items() if n != "hangs"} == \
        {n: s[0] for n, s in serial.items() if n != "hangs"}


def _block_property_on_worker(name: str) -> None:
    """On a worker: the data backend's runner of property ``name`` says it started (``name``-entered) and
    waits for the test to release it (``name``-release) -- a stand-in for work before the property's
    first time limit, which a local run does not bound however long it takes -- then starts the
    property's own clock anew (the wait is not its budgeted work) and counts the rows as it is,
    under its budget (the data backend takes its ``timeout``)."""
    import fairspec.kinds.on_data as on_data

    orig = getattr(on_data.run, "__wrapped__", on_data.run)

    def run(prop, ctx, progress=None):
        if prop.name == name:
            from distributed import Event

            Event(f"{name}-entered").set()
            Event(f"{name}-release").wait()
            ctx.begin_property()
        return orig(prop, ctx, progress)

    run.__wrapped__ = orig
    on_data.run = run


def test_a_phase_a_local_run_does_not_bound_is_not_bounded_on_the_cluster_either(cluster, serial, tmp_path,
                                                                                monkeypatch):
    """`hangs` has a budget (the guard's, which its real work never has to race), taken only once its
    runner is released: a local run waits for what comes before however long it takes. While that
    pass is held, the client's clock of the jobs jumps far past the budget and grace, and the client
    looks at it twice (the old clock, started with the job, gave the job up then): it still gets its
    local verdict. No wait here is a speed requirement."""
    from distributed import Client, Event

    from fairspec.pipeline import check
    from fairspec.runtime import job_clock

    spec = _project(tmp_path)
    spec.write_text(ROOMY)
    jump, looks, looked = [0.0], [0], threading.Event()
    real_now = job_clock.now

    def now():
        if jump[0]:
            looks[0] += 1
            if looks[0] >= 2:
                looked.set()
        return real_now() + jump[0]

    monkeypatch.setattr(job_clock, "now", now)
    monkeypatch.setenv("FAIRSPEC_CLUSTER_GRACE", "0")
    with Client(cluster, set_as_default=False) as admin:
        admin.run(_block_property_on_worker, "hangs")
        ex_mod.configure(cluster=cluster)
        try:
            out: dict = {}
            # the run ending also ends the wait (a client that gives the held job up looks no more)
            t = threading.Thread(target=lambda: (out.setdefault("report", check(spec, parallel=True)), looked.set()),
                                 daemon=True)
            t.start()
            assert Event("hangs-entered", client=admin).wait(GUARD), "the data pass never started"
            jump[0] = 10 * GUARD  # past the budget and its grace (a tenth of it), in the client's eyes
            assert looked.wait(GUARD), "the client never looked at the clock of the held job"
            Event("hangs-release", client=admin).set()
            t.join(GUARD)
            assert not t.is_alive(), "still waiting after the data pass was released"
        finally:
            ex_mod.configure()
    got = {v.name: (v.status, v.how, v.value) for v in out["report"].verdicts}
    assert got == serial, (got, serial)
