"""The one executor: serial, process pool and a real dask LocalCluster give the same results in order."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from conftest import run_cli

from fairspec.runtime import executor as ex_mod
from fairspec.runtime.executor import JobError, ProcessExecutor, SerialExecutor

ROOT = Path(__file__).resolve().parent.parent
ADULT = ROOT / "examples" / "adult" / "adult.fair"


def _square(shared, item):
    return shared["k"] * item * item


def _fails_on_3(shared, item):
    from fairspec.verdict import Unsupported

    if item == 3:  # a refusal: on_error's (a ValueError would be a crash, JobCrashed: test_audit_s36_gates)
        raise Unsupported("three is not allowed")
    return item


def _die_once(marker, item):
    """Kills its worker process the first time it sees item 3 (a lost worker mid-run)."""
    if item == 3 and not os.path.exists(marker):
        Path(marker).write_text("died")
        os._exit(1)
    return item * 10


@pytest.fixture(scope="module")
def pool():
    """One 2-process pool for the module's tests (its processes kept between maps, as get_executor's
    pools are, also when the shared state changes): a pool per test started two Python processes
    (numpy, fairspec, this module) each time."""
    ex = ProcessExecutor(2, keep=True)
    yield ex
    ex.shutdown()


def test_serial_and_process_pool_agree_in_order(pool):
    items = list(range(12))
    want = [2 * i * i for i in items]
    assert SerialExecutor().map(_square, items, shared={"k": 2}) == want
    with pool as ex:
        assert ex.map(_square, items, shared={"k": 2}) == want


def test_failing_job_is_a_reason_not_a_lost_result(pool):
    for ex in (SerialExecutor(), pool):
        with ex:
            got = ex.map(_fails_on_3, [1, 2, 3, 4], on_error=lambda item, why: f"failed {item}: {why}")
            assert got[:2] == [1, 2] and got[3] == 4
            assert got[2] == "failed 3: Unsupported: three is not allowed"
            with pytest.raises(JobError, match="three is not allowed"):
                ex.map(_fails_on_3, [3, 4])


def test_cli_workers_flag_is_validated(capsys):
    from fairspec.cli import main

    with pytest.raises(SystemExit) as e:
        main(["check", str(ADULT), "--workers", "0"])
    assert e.value.code == 2
    assert "workers" in capsys.readouterr().err


def test_a_property_job_leaves_its_state_picklable():
    """The pipeline's job state after a job ran on it (contexts with loaded models) pickles, without
    them: each worker builds its own."""
    import pickle

    from fairspec.files import Roots
    from fairspec.pipeline import _job_state, _property_job, lint

    res = lint(ADULT)
    state = _job_state(res.spec, Roots.for_spec(ADULT, ()))
    prop = next(p for p in res.spec.properties if p.kind == "individual_fairness")
    out = _property_job(state, (tuple(), prop.name, prop.kind))
    assert out["verdict"].status in ("holds", "violated", "unknown") and state.contexts
    back = pickle.loads(pickle.dumps(state))
    assert back.contexts == {} and back.spec == state.spec


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:1", "nonsense-scheme://nowhere", "garbage", "tcp://h:port"])
def test_unreachable_scheduler_is_one_sentence_and_exit_2(address):
    """A malformed address (no port: "garbage") is refused before a Client exists: a half-built Client
    closes itself when collected, a traceback ("Exception ignored in Client.__del__") after 2 x the time-out.
    The time-out is the wait for a scheduler that never answers (nothing listens on port 1): 0.5 s, not
    2 s a command line (no speed requirement: a slow machine only makes the connection fail later)."""
    for extra in ([], ["--format", "json"], ["--models", f"lr={ROOT / 'examples/adult/models'}"]):
        r = run_cli("check", ROOT / "examples/predictions/decisions.fair", "--cluster", address, *extra,
                    env={"FAIRSPEC_CLUSTER_TIMEOUT": "0.5"})
        assert r.returncode == 2, (extra, r.stdout, r.stderr)
        assert "cannot reach the Dask scheduler at " + address in r.stdout + r.stderr
        assert "Traceback" not in r.stderr and "internal error" not in r.stderr
        assert "Exception ignored" not in r.stderr and len(r.stderr.strip().splitlines()) <= 1, r.stderr


def test_models_folder_one_report_per_file_same_as_each_alone(tmp_path):
    from fairspec.pipeline import check, check_models

    folder = tmp_path / "candidates"
    folder.mkdir()
    for name in ("a_lr.skops", "b_dt.skops"):
        src = ROOT / "examples/adult/models" / ("lr.skops" if "lr" in name else "dt.skops")
        (folder / name).write_bytes(src.read_bytes())
    reports = check_models(ADULT, "dt", folder, only="dt_parity_by_age", parallel=False)
    assert [Path(f).name for f, _ in reports] == ["a_lr.skops", "b_dt.skops"]
    alone = check(ADULT, only="dt_parity_by_age")
    assert [(v.status, v.value) for v in reports[1][1].verdicts] == [(v.status, v.value) for v in alone.verdicts]
    assert reports[0][1].verdicts[0].value != alone.verdicts[0].value  # the lr file was really used


# ------------------------------------------------------------------ k-discrimination restarts

def _first_output(net, X):
    return net.forward(X)[:, 0]


def _kdisc_state():
    import functools

    from test_kdisc_search import known_k_net, kspace

    return (functools.partial(_first_output, known_k_net()), kspace(),
            {"eps": 0.05, "scores": "logit", "method": "sa", "data": None, "stop_at_k": None})


def _restart_key(r):
    w = r.witness
    return (r.max_k, r.ids, r.candidates, r.evaluations, r.iterations, r.seed,
            None if w is None else (w.x.tolist(), w.scores.tolist()),
            [(t.k, t.x.tolist()) for t in r.top])


def test_kdisc_restart_reaching_the_claim_stops_the_others():
    from fairspec.backends.search.kdisc import kdisc_restarts

    evaluate, space, kwargs = _kdisc_state()
    state = (evaluate, space, dict(kwargs, stop_at_k=1))  # every point reaches k = 1 at once
    res = kdisc_restarts(state, executor=SerialExecutor(), seed=0, chains=8, budget_seconds=3600.0)
    assert res.max_k >= 1 and res.iterations == 0  # no restart ran an iteration past the claim


def test_kdisc_a_found_claim_stops_the_restarts_in_the_worker_processes(pool, tmp_path):
    """The restarts in a 2-process pool see another restart's find (the ``found`` file) at their first
    iteration: an hour's budget and a k no individual reaches (so only the stop can end them) end at
    once. Capped at 200 iterations a restart, so a stop that did not reach them fails here, not in an hour."""
    from fairspec.backends.search.kdisc import restart_job

    evaluate, space, kwargs = _kdisc_state()
    found = tmp_path / "kdisc.found"
    found.touch()
    items = [{"seed": s, "chains": 4, "budget_seconds": 3600.0, "max_iters": 200, "found": str(found)}
             for s in range(4)]
    outs = pool.map(restart_job, items, shared=(evaluate, space, dict(kwargs, stop_at_k=99)))
    assert [r.iterations for r in outs] == [0, 0, 0, 0] and all(r.max_k < 99 for r in outs)


# ------------------------------------------------------------------ a real dask.distributed LocalCluster
# (these tests come last, together: the module's cluster is closed after the module, and an idle
# LocalCluster costs CPU: its ticks and heartbeats, ~3.7 s a 30 s on this machine)

@pytest.fixture(scope="module")
def cluster():
    """A worker its nanny restarts (test_dask_map's killed one) that has not rejoined within
    distributed.deploy.lost-worker-timeout (15 s, a loaded machine's restart) is closed for good by the
    LocalCluster, and the later waits for 2 workers ran out: the time-out is 600 s here (theirs)."""
    distributed = pytest.importorskip("distributed")
    import cloudpickle
    import dask

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the job functions above travel by value
    # the workers import this tree; prepended once a process: a PYTHONPATH changed again (the other
    # module's cluster set it already) restarted run_cli's fork server (tests/cli_forkserver.py)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(ROOT) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + paths)
    with dask.config.set({"distributed.deploy.lost-worker-timeout": "600s"}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                     dashboard_address=None, silence_logs=40) as lc:
        yield lc.scheduler_address
    ex_mod.configure()
    for e in list(ex_mod._DASK.values()):
        e.shutdown()


def test_dask_map_in_order_with_failures_and_a_lost_worker(cluster, tmp_path):
    ex = ex_mod.DaskExecutor(cluster, retries=1)
    assert ex.workers == 2
    assert ex.map(_square, list(range(10)), shared={"k": 3}) == [3 * i * i for i in range(10)]
    got = ex.map(_fails_on_3, [1, 3, 5], on_error=lambda item, why: ("unknown", why))
    assert got[0] == 1 and got[2] == 5 and got[1][0] == "unknown" and "three is not allowed" in got[1][1]
    marker = str(tmp_path / "died")
    assert ex.map(_die_once, list(range(6)), shared=marker) == [i * 10 for i in range(6)]
    assert os.path.exists(marker)  # a worker did die, and its job was run again elsewhere
    ex.shutdown()


def test_dask_a_new_shared_dict_with_the_same_keys_is_the_new_state(cluster):
    """A dict given to ``client.scatter`` is scattered value by value under its own keys ("spec",
    "ctx", ...): a second check's state then reused the first one's data still held under those
    keys, and a worker looked the second spec's properties up in the first (StopIteration ->
    unknown). The shared state is one object under a fresh key, whatever its type."""
    ex = ex_mod.DaskExecutor(cluster)
    first = {"k": 3}
    assert ex.map(_square, [1, 2], shared=first) == [3, 12]
    held = ex._scattered  # the first state is still referenced while the second is sent
    second = {"k": 5}
    assert ex.map(_square, [1, 2], shared=second) == [5, 20]
    assert ex.map(_square, [1, 2], shared={"k": 7}) == [7, 28]
    del held
    ex.shutdown()


def test_check_on_a_local_cluster_gives_the_serial_verdicts(cluster):
    from fairspec.pipeline import check

    ex_mod.configure()
    serial = check(ADULT)
    ex_mod.configure(cluster=cluster)
    try:
        dist = check(ADULT, parallel=True)
    finally:
        ex_mod.configure()

    def key(r):
        return [(v.name, v.status, v.how, v.value, v.bound, v.reason) for v in r.verdicts]

    assert not dist.has_errors and key(dist) == key(serial)
    # models and data are loaded once per worker, not once per property
    model_loads = [x for x in dist.loads if x["what"] == "model"]
    assert len(model_loads) <= 2 * 3
    _worker_data_travels(cluster)


def _unpicklable_worker_data(dask_worker) -> list:
    import pickle

    import cloudpickle

    bad = []
    for k, v in list(dask_worker.data.items()):
        try:
            cloudpickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:  # noqa: BLE001
            bad.append(f"{k}: {type(e).__name__}: {e}")
    return bad


def _worker_data_travels(address) -> None:
    """Everything the workers hold can still be sent to another worker. The cluster drops broadcast
    replicas and moves queued jobs between workers, so a job may need the shared state from a worker
    that has run jobs on it: when a job had stored a loaded model in it (an onnxruntime session),
    the transfer failed and the moved job waited for ever (a fresh-clone CI run stalled so)."""
    from distributed import Client

    with Client(address, set_as_default=False) as c:
        # (not compared with scheduler_info()'s workers: the client's periodic update may empty that
        # cache in between, dask_executor._worker_info)
        held = c.run(_unpicklable_worker_data)
        assert held and all(bad == [] for bad in held.values()), held


def test_partitions_on_a_local_cluster_give_the_serial_verdict(cluster, tmp_path, monkeypatch):
    """One property's partitions as the cluster's jobs (the shared problem broadcast, the jobs
    spread by the scheduler): the serial verdict and shares, and the workers' data still travels."""
    pytest.importorskip("onnxruntime")
    from onnx_nets import relu_net
    from test_quantify import E2E_SPEC

    from fairspec.pipeline import check

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")  # the solvers decide each partition
    relu_net(tmp_path / "net.onnx", 1, heavy=(2, 3))
    (tmp_path / "spec.fair").write_text(E2E_SPEC)
    ex_mod.configure()
    serial = check(tmp_path / "spec.fair").verdicts[0]
    ex_mod.configure(cluster=cluster)
    try:
        dist = check(tmp_path / "spec.fair").verdicts[0]
    finally:
        ex_mod.configure()
    assert (dist.status, dist.how) == (serial.status, serial.how)
    assert dist.details["coverage"]["shares"] == serial.details["coverage"]["shares"]
    _worker_data_travels(cluster)


def test_cluster_with_a_relative_spec_path_from_another_folder(cluster, tmp_path, monkeypatch):
    """The spec, its data and models are resolved before they are shipped: the workers (started in
    another working folder) get absolute paths, so a relative spec path gives the serial verdicts."""
    import shutil

    from fairspec.pipeline import check

    shutil.copytree(ROOT / "examples/predictions", tmp_path / "predictions")
    monkeypatch.chdir(tmp_path / "predictions")
    ex_mod.configure()
    serial = check("decisions.fair")
    ex_mod.configure(cluster=cluster)
    try:
        dist = check("decisions.fair", parallel=True)
    finally:
        ex_mod.configure()
    assert not dist.has_errors and len(dist.verdicts) == len(serial.verdicts) >= 2
    assert [(v.name, v.status, v.value) for v in dist.verdicts] == [(v.name, v.status, v.value)
                                                                    for v in serial.verdicts]
    assert not any("failed" in (v.reason or "") for v in dist.verdicts), [v.reason for v in dist.verdicts]


def test_kdisc_restarts_identical_on_1_and_2_workers_and_a_local_cluster(cluster, pool):
    """The restarts are executor jobs with their own seeds (fixed per restart, not per process),
    merged in restart order: with a budget in iterations, 1 worker, a 2-process pool and a
    2-worker LocalCluster give the same max k, witness and best individuals."""
    from fairspec.backends.search.kdisc import RESTARTS, kdisc_restarts, restart_seeds

    state = _kdisc_state()
    kw = dict(seed=5, chains=16, budget_seconds=None, max_iters=12)
    serial = kdisc_restarts(state, executor=SerialExecutor(), **kw)
    pooled = kdisc_restarts(state, executor=pool, **kw)
    dask = kdisc_restarts(state, executor=ex_mod.DaskExecutor(cluster), **kw)
    _worker_data_travels(cluster)
    assert _restart_key(serial) == _restart_key(pooled) == _restart_key(dask)
    assert serial.max_k == 4 and serial.witness is not None and serial.witness.k == 4  # the known max k
    assert len(set(restart_seeds(5))) == RESTARTS and restart_seeds(5) == restart_seeds(5)
    assert kdisc_restarts(state, executor=SerialExecutor(), **dict(kw, seed=6)).seed == 6


@pytest.fixture
def dask_maps(cluster, monkeypatch):
    """The names of the job functions the Dask executor ran, in order (a test shows its work reached
    the cluster, not a serial fallback)."""
    from distributed import Client

    with Client(cluster, set_as_default=False) as c:   # a worker an earlier test killed is back
        c.wait_for_workers(2, timeout=600)
    for e in list(ex_mod._DASK.values()):               # an executor keeps the worker count it connected with
        e.shutdown()
    ran: list[str] = []
    orig = ex_mod.DaskExecutor.map

    def counted(self, fn, items, *a, **kw):
        ran.append(fn.__name__)
        return orig(self, fn, items, *a, **kw)

    monkeypatch.setattr(ex_mod.DaskExecutor, "map", counted)
    return ran


def test_pba_cases_on_a_local_cluster_give_the_one_process_answers(cluster, dask_maps):
    """PBA's branch and bound (interleaved chunks of cases) and its exact stage (batches of cases,
    one MILP each) as the cluster's jobs: the same status, stage and witness as one process, and the
    workers' data still travels."""
    import numpy as np
    from test_pba_core import _cases

    from fairspec.backends.pba import decide, make_cases

    net, U, Up, cols, scale, lo, hi, ints, cls = _cases(5, P=40, m=3, box=2.0, integer=True, sc=0.2)
    tc = make_cases(net, U, Up, cols, scale, lo, hi, ints, np.where(cls == 1, 1.0, -1.0))
    f0, _, _ = tc.pair(np.zeros((tc.P, tc.m)))
    tc.tau = np.where(f0 > 0, 1.0, -1.0)
    runs = [(tc, {}), (tc.subset(np.arange(8)), {"bab_boxes": 0})]
    ex_mod.configure()
    one = [decide(t, time_limit=3600, case_limit=3600, search=False, workers=1, **kw) for t, kw in runs]
    assert dask_maps == []
    ex_mod.configure(cluster=cluster)
    try:
        dist = [decide(t, time_limit=3600, case_limit=3600, search=False, workers=2, **kw) for t, kw in runs]
    finally:
        ex_mod.configure()
    assert {"_bab_chunk", "_case_batch"} <= set(dask_maps)
    for a, b in zip(one, dist):
        assert list(a.status) == list(b.status) and list(a.stage) == list(b.stage)
        assert np.array_equal(np.nan_to_num(a.D, nan=1e9), np.nan_to_num(b.D, nan=1e9))
    _worker_data_travels(cluster)


def test_bootstrap_on_a_local_cluster_gives_the_serial_interval(cluster, dask_maps, tmp_path):
    """bootstrap = N's resamples as the cluster's jobs (each from its own seed): the serial interval,
    and the workers' data still travels."""
    from test_distribution_runner import DATA_SPEC, spec, verdicts, write_csv

    csv = write_csv(tmp_path / "d.csv")
    claim = "statistical_parity(r, groups grp, distribution conditional(people)) <= 0.5\n  bootstrap = 40"
    path = spec(tmp_path, DATA_SPEC.format(csv=csv, rule="age >= 40 and score > 0.5 and member", claim=claim))
    ex_mod.configure()
    serial = verdicts(path)["p"]
    ex_mod.configure(cluster=cluster)
    try:
        dist = verdicts(path)["p"]
    finally:
        ex_mod.configure()
    assert "_bootstrap_batch" in dask_maps
    assert serial.details["bootstrap"]["resamples"] == 40
    assert (dist.status, dist.how, dist.value, dist.bound) == (serial.status, serial.how, serial.value, serial.bound)
    _worker_data_travels(cluster)
