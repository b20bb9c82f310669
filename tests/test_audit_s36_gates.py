"""Session 36 audit of what CI and a test suite are told (brief h1): a gate that passes when it should not
is as bad as a wrong proof. Each test here failed before its fix.

* A spec that states no property (none of its own, and the policies it applies none) made `fairspec check`
  exit 0 in every format, the API's ``ok`` true and the pytest plugin collect no item (a suite passed that
  checked nothing of it): it is now exit 2, the report's error, one failing ``spec.fair::check`` item.
* Repair ratios, group table cells, the worst pair of an unknown, a reliability chart's ECE and a repair's
  minimal / achieved printed 4 (3) digits: 0.79996 against ``>= 0.8`` read 0.8000. They keep their side now.
* A pool's worker process that died (killed, out of memory) left its property ``unknown`` (exit 3): under
  ``fail-on-unknown: false`` / ``allow_unknown`` the run passed, checking nothing. It is an internal error
  (exit 4), as a backend's bug is.
* A job that raised (an IndexError in a partition's job) left its part undecided and the property unknown: it
  is an internal error naming the property, on every executor (JobCrashed); a refusal (a class fairspec
  defines) still leaves it undecided with the reason. On Dask, a job whose worker died each time (KilledWorker)
  is exit 4 as a dying pool worker is.
* The HTML group table's failing rows, the PBA table's percentages, a multiclass table's shares, the data
  backend's lost-replicate reason and k-discrimination's explanation print their numbers on their side."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from conftest import FIXTURES, people_decls, run_cli

# imported at collection, as test_distribution_exact does: an in-process pytester run (test_pytest_plugin) drops
# the modules it imported, and a rule read by a fresh fairspec.backends.boolean is no LinearRule of the old one
import fairspec.analyses.distribution_exact  # noqa: F401,E402
import fairspec.backends.boolean  # noqa: F401,E402
from fairspec.pipeline import check as _check  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PEOPLE = FIXTURES / "data" / "people.csv"
RULE = "model r = rule(score >= 0.5)\n"
EMPTY_POLICY = "policy empty(m: model) {\n}\napply empty(r)\n"


def _empty(tmp_path, body: str = EMPTY_POLICY) -> Path:
    (tmp_path / "fairspec.toml").write_text("")
    spec = tmp_path / "s.fair"
    spec.write_text(people_decls(PEOPLE) + RULE + body)
    return spec


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_a_check_of_a_spec_with_no_property_exits_2_in_every_format(tmp_path, fmt):
    spec = _empty(tmp_path)
    r = run_cli("check", spec, "--format", fmt, cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "no property to check" in r.stdout and "checks nothing does not pass" in r.stdout
    if fmt == "json":
        doc = json.loads(r.stdout)
        assert doc["exit_code"] == 2 and doc["properties"] == [] and "no property to check" in doc["error"]
    elif fmt == "sarif":
        results = json.loads(r.stdout)["runs"][0]["results"]
        assert any(x["level"] == "error" and "no property to check" in x["message"]["text"] for x in results)
    elif fmt == "github":
        assert any(line.startswith("::error ") and "no property to check" in line for line in r.stdout.splitlines())


def test_a_spec_of_declarations_only_exits_2_and_the_api_agrees(tmp_path):
    import fairspec

    spec = _empty(tmp_path, body="")
    assert run_cli("check", spec, cwd=tmp_path).returncode == 2
    rep = fairspec.check(spec)
    assert rep.exit_code == 2 and not rep.ok and "no property to check" in rep.to_dict()["error"]
    from fairspec.testing import assert_fair

    with pytest.raises(AssertionError, match="no property to check"):
        assert_fair(spec)


def test_a_spec_with_a_property_still_passes(tmp_path):
    spec = _empty(tmp_path, body=EMPTY_POLICY + "property q {\n  statistical_parity(r, groups sex) <= 0.99\n}\n")
    r = run_cli("check", spec, "--format", "json", cwd=tmp_path)
    assert r.returncode == 0 and "error" not in json.loads(r.stdout), (r.stdout, r.stderr)


def _plugin_args() -> list[str]:
    installed = any(ep.value == "fairspec.pytest_plugin" for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "fairspec.pytest_plugin"]


def test_the_pytest_plugin_fails_a_spec_with_no_property(tmp_path):
    """It collected no item of it: a suite with any other test passed, checking nothing of the spec. A
    library (declarations and policies, no apply: other specs import it) is still no item."""
    _empty(tmp_path)
    (tmp_path / "lib.fair").write_text(people_decls(PEOPLE) + RULE + "policy p(m: model) {\n  property q {"
                                       " statistical_parity(m, groups sex) <= 0.3 }\n}\n")
    (tmp_path / "test_other.py").write_text("def test_other():\n    pass\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([sys.executable, "-m", "pytest", "--fairspec", "-q", "-o", "addopts=", "-p", "no:cacheprovider",
                        *_plugin_args(), "s.fair", "lib.fair", "test_other.py"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "s.fair::check" in r.stdout and "no property to check" in r.stdout and "1 failed, 1 passed" in r.stdout


# --- 2. every number printed beside a threshold keeps its side (literals.shown) ------------------------------

def _text(verdict) -> str:
    import io

    from rich.console import Console

    from fairspec import report as rep
    from fairspec.report.check_report import Report

    buf = io.StringIO()
    rep.print_text(Report("s.fair", [], [verdict]), Console(file=buf, width=200, color_system=None, highlight=False))
    return buf.getvalue()


def _html(verdict) -> str:
    from fairspec.report import html
    from fairspec.report.check_report import Report

    return html.render(Report("s.fair", [], [verdict]))


def _repair(thresholds=(0.8,)):
    from fairspec.verdict import Verdict

    pair = {"groups": ["F", "M"], "ratio": 0.79996}
    return Verdict("fix", "repair", "violated", value=0.79996, backend="repair", thresholds=thresholds,
                   details={"c": 0.8, "alpha": 2, "groups_label": "sex", "pairs_before": [pair], "pairs_after": [pair],
                            "minimal": 0.012346, "achieved": 0.02469, "repaired": True, "rows_changed": 3,
                            "rows": 100, "solver": "highs", "solver_seconds": 0.5})


@pytest.mark.parametrize("thresholds", [(0.8,), ()])
def test_a_repair_ratio_just_under_its_goal_never_prints_as_the_goal(thresholds):
    """The pair table printed 0.79996 against c = 0.8 as 0.8000 (4 decimals): the goal looked met. (The
    pipeline gives a repair's verdict its goal as a threshold; without it the table still reads ``c``.)"""
    out = _text(_repair(thresholds))
    table = out[out.index("passing-rate ratio per"):]
    assert "0.79996" in table and "0.8000" not in table, out
    # achieved 0.02469 <= 2 x minimal 0.012346 = 0.024692, but 0.0247 > 2 x 0.0123: printed, it looked over
    assert "minimal (LP) 0.0123;" not in out and "achieved 0.0247 " not in out, out


def _group_verdict(kind_value: float, thresholds=(0.8,), **extra):
    from fairspec.verdict import Verdict

    rows = [{"group": "F", "rows": 50, "positives": 20, "positive_rate": 0.4, "impact_ratio": kind_value},
            {"group": "M", "rows": 50, "positives": 25, "positive_rate": 0.5, "impact_ratio": 1.0}]
    return Verdict("ir", "group_metric", "violated", value=kind_value, backend="data", thresholds=thresholds,
                   details={"groups": rows, "rates": ["positive_rate", "impact_ratio"], "groups_label": "sex",
                            "op": ">=", "threshold": 0.8, **extra})


def test_a_group_table_cell_keeps_its_side_of_the_threshold_in_text_and_html():
    v = _group_verdict(0.79996)
    for out in (_text(v), _html(v)):
        assert "0.79996" in out and "0.8000" not in out


def test_a_cell_at_the_threshold_prints_as_the_threshold():
    """A rate of exactly 4/5 (the float 0.8) beside `>= 0.8` is on it: read as its shortest decimal, not bit
    for bit (0.80000000000000004, which is above it)."""
    from fairspec.backends.data.outputs import _one
    from fairspec.report import cell_text

    assert cell_text(0.8, (0.8,)) == "0.8000" and cell_text(0.1, (0.1,)) == "0.1000" and _one(0.1, (0.1,)) == "0.100"
    assert cell_text(0.7999999999999999, (0.8,)) == "0.7999999999999999"


def test_the_worst_pair_of_an_unknown_prints_rates_whose_difference_keeps_its_side():
    """(lowest F 0.2000; highest M 0.3000) against `<= 0.1` read as a difference of exactly 0.1: it is 0.10004."""
    from fairspec.verdict import Verdict

    v = Verdict("dp", "group_metric", "unknown", reason="the interval straddles the threshold", backend="data",
                thresholds=(0.1,), details={"worst_pair": {"low": "F", "low_rate": 0.2, "high": "M",
                                                           "high_rate": 0.30004}})
    out = _text(v)
    assert "highest M 0.30004" in out and "lowest F 0.2000" in out, out


def test_a_reliability_chart_label_keeps_its_side_of_the_threshold():
    """A group's ECE in the chart's legend printed 3 decimals: 0.04996 against `<= 0.05` read 0.050."""
    from fairspec.verdict import Verdict

    bins = [{"mean_score": 0.3, "positive_share": 0.35}, {"mean_score": 0.7, "positive_share": 0.6}]
    rows = [{"group": "F", "rows": 50, "ece": 0.04996, "reliability": bins},
            {"group": "M", "rows": 50, "ece": 0.01, "reliability": bins}]
    v = Verdict("cal", "group_metric", "holds", how="estimated", value=0.03996, backend="data", thresholds=(0.05,),
                details={"groups": rows, "rates": ["ece"], "metric": "calibration_gap", "groups_label": "sex"})
    out = _html(v)
    assert "ECE 0.04996" in out and "ECE 0.050)" not in out


# --- 3. a worker process that dies is an internal error (exit 4), never an unknown the caller may allow ---

def _exit_in_worker(home_pid, item):
    if os.getpid() != home_pid:
        os._exit(9)
    return item


def test_a_dead_pool_worker_raises_worker_died_whatever_on_error_says():
    """ProcessExecutor handed a dead worker's items to on_error, which callers make an unknown / undecided."""
    from fairspec.runtime.executor import ProcessExecutor, WorkerDied

    ex = ProcessExecutor(workers=1)
    try:
        with pytest.raises(WorkerDied, match="worker process died"):
            ex.map(_exit_in_worker, [1, 2], shared=os.getpid(), on_error=lambda item, why: "undecided")
    finally:
        ex.shutdown(wait=False)


DYING = """import os

from sklearn.linear_model import LogisticRegression


class Dying(LogisticRegression):
    # predicts as LogisticRegression in the process that fitted it; any other process dies at once

    def fit(self, X, y):
        self.home_pid_ = os.getpid()
        return super().fit(X, y)

    def _die(self):
        if os.getpid() != self.home_pid_:
            os._exit(9)

    def predict(self, X):
        self._die()
        return super().predict(X)

    def predict_proba(self, X):
        self._die()
        return super().predict_proba(X)

    def decision_function(self, X):
        self._die()
        return super().decision_function(X)
"""


def test_a_property_whose_worker_died_is_an_internal_error_not_an_allowed_unknown(tmp_path, monkeypatch):
    """--workers 2: both properties' worker died; they were unknown ('the job failed: ...'), exit 3, and
    assert_fair(allow_unknown=True) passed. Now each is an internal error: exit 4, and the assertion fails."""
    import pickle

    import numpy as np

    import fairspec
    from fairspec.runtime import executor

    (tmp_path / "dying_model.py").write_text(DYING)
    monkeypatch.syspath_prepend(str(tmp_path))
    Dying = importlib.import_module("dying_model").Dying   # written above (no import statement: no library)

    rng = np.random.default_rng(0)
    a, s = rng.integers(0, 6, 200), rng.integers(0, 2, 200)
    y = ((a + 2 * s + rng.normal(0, 1.5, 200)) > 3.5).astype(int)
    (tmp_path / "d.csv").write_text("a,s,y\n" + "".join(f"{x},{'MF'[z]},{w}\n" for x, z, w in zip(a, s, y)))
    with open(tmp_path / "m.pkl", "wb") as f:
        pickle.dump(Dying().fit(np.column_stack([a, s]).astype(float), y), f)
    (tmp_path / "fairspec.toml").write_text("")
    spec = tmp_path / "s.fair"
    spec.write_text('data d = csv("d.csv", label = y == 1)\nfeatures P from d {\n  a : int in [0, 5]\n'
                    '  s : {M, F} protected\n}\nmodel m = sklearn("m.pkl", trust pickle)\n'
                    'encode P for m {  # fairspec: ignore[FS427]\n  a : raw\n  s : code\n}\n'
                    'property loose {\n  disparate_impact(m, groups s, data = d) >= 0.01\n}\n'
                    'property other {\n  statistical_parity(m, groups s, data = d) <= 0.99\n}\n')
    executor.shutdown_pools()  # fresh workers: they import the model's module from this sys.path
    try:
        rep = fairspec.check(spec, workers=2)
        assert rep.exit_code == 4 and not rep.ok, rep
        assert [v.status for v in rep] == ["unknown", "unknown"]
        assert all("worker process died" in v.reason and "internal error" in v.reason for v in rep)
        # an internal error is what assert_fair(allow_unknown=True) and the plugin never let pass
        assert len(rep.report.internal_errors) == 2 and rep.to_dict()["exit_code"] == 4
    finally:
        executor.shutdown_pools(wait=False)


def test_a_repair_reason_prints_its_ratios_and_differences_on_their_side():
    """The repair's reasons printed 4 decimals: 'ratio 0.8000 -> ...' for a ratio 0.79996 below its goal
    0.8, 'the best ratio within the bound is at most 0.8000' (an upper bound below c, rounded onto it)."""
    from fractions import Fraction

    from fairspec.backends.repair.runner import _f4
    from fairspec.syntax.literals import shown, shown_scaled

    assert _f4(0.79996, 0.8) == "0.79996" and _f4(0.5, 0.8) == "0.5000"
    assert _f4(0.8, 0.8, Fraction(4, 5)) == "0.8000" and _f4(None) == "undefined (no group passes)"
    assert shown(0.79996, (0.8,), end="high", style="f") == "0.79996"
    # 0.02469 <= 2 x 0.012346: printed 0.0247 and 0.0123 it looked over the bound
    assert shown_scaled(0.012346, 0.02469, 2) == ("0.01235", "0.02469")
    assert shown_scaled(0.25, 0.5, 2) == ("0.2500", "0.5000")


def test_a_violated_output_metric_reason_keeps_its_numbers_on_their_side():
    """A multiclass / regression metric's violated reason printed 3 decimals: farthest apart (0.100) for a
    distance of 0.10004 against `<= 0.1`, lowest 0.200 / highest 0.300 for rates 0.10004 apart."""
    from fairspec.backends.data.outputs import _one, _two
    from fairspec.syntax.literals import shown_pair

    assert _one(0.10004, (0.1,)) == "0.10004" and _one(0.25, (0.1,)) == "0.250"
    assert _two(0.2, 0.30004, (0.1,)) == ("0.20000", "0.30004")
    assert _two(0.30004, 0.2, (0.1,)) == ("0.30004", "0.20000")       # a group's and all rows', either order
    assert shown_pair(0.79996, 1.0, (0.8,)) == ("0.79996", "1.0000")   # a ratio of 0.79996 against >= 0.8


FVGM = """
features W {
  P : bool protected
  Q : bool
  R : bool
  S : bool
}
model clf = rule(P + Q + R - S >= 2)
distribution d {
  p(Q) = 0.4
  p(R) = 0.5
  p(S) = 0.3
}
"""


def test_a_violated_distribution_value_prints_on_its_side_and_a_tie_as_the_tie(tmp_path):
    """disparate_impact is exactly 14/55 = 0.254545...: against `<= 0.25454545` it is violated, and the reason
    said 'the value is 0.254545' (6 digits), below the threshold. At a tie (statistical_parity is exactly
    41/100, 0.41000000000000003 in float64) `< 0.41` is violated and the value prints as 0.41, the tie."""
    spec = tmp_path / "spec.fair"
    spec.write_text(FVGM + "property di {\n  disparate_impact(clf, groups P, distribution d) <= 0.25454545\n}\n"
                    "property lt {\n  statistical_parity(clf, groups P, distribution d) < 0.41\n}\n")
    v = {x.name: x for x in _check(spec).verdicts}
    assert v["di"].status == "violated" and "the value is 0.254545;" not in v["di"].reason, v["di"]
    assert "the value is 0.2545455;" in v["di"].reason, v["di"].reason
    assert v["lt"].status == "violated" and "the value is 0.41;" in v["lt"].reason, v["lt"].reason
    assert "(0.1400), most favoured P (0.5500)" in v["lt"].reason, v["lt"].reason   # the exact PPVs, 0.55 - 0.14


# --- 4. a job that raises what is no refusal is an internal error (exit 4), never an undecided part -----------

def _crash_on_3(shared, item):
    if item == 3:
        raise IndexError("index 7 is out of bounds for axis 0 with size 7")
    return item


def _refuse_on_3(shared, item):
    from fairspec.verdict import Unsupported

    if item == 3:
        raise Unsupported("this construct is refused")
    return item


def test_a_job_that_raises_a_bug_is_a_crash_and_a_refusal_is_a_reason():
    """A job's IndexError went to on_error, which the backends make an undecided partition / case / resample
    (the property unknown, exit 3, which fail-on-unknown: false lets pass). It raises JobCrashed now, on
    every executor, whatever on_error says; a refusal (a class fairspec defines) is still on_error's."""
    from fairspec.runtime.executor import JobCrashed, ProcessExecutor, SerialExecutor

    pool = ProcessExecutor(workers=1)
    try:
        for ex in (SerialExecutor(), pool):
            with pytest.raises(JobCrashed, match=r"a job raised IndexError: index 7 .*\(at test_audit_s36_gates.py:"):
                ex.map(_crash_on_3, [1, 3], on_error=lambda item, why: "undecided")
            assert ex.map(_refuse_on_3, [1, 3], on_error=lambda item, why: ("unknown", why)) == \
                [1, ("unknown", "Unsupported: this construct is refused")]
    finally:
        pool.shutdown(wait=False)


def test_a_partition_whose_job_raises_is_no_undecided_partition(monkeypatch):
    """solve_partitioned's _failed_part made a partition whose job raised 'unknown' (the property unknown)."""
    from conftest import protected_weight_net

    import fairspec.backends.milp.partition as part
    from fairspec.backends.pair import PairProblem
    from fairspec.runtime.executor import JobCrashed, SerialExecutor

    net = protected_weight_net(2, 1.0, True, False, name="crash")
    p = PairProblem(net, lo=[0, 0, 0, 0], hi=[31, 31, 15, 1], integer=[True] * 4, free=(3,), post="label")
    parts = part.fairify_partitions(p, threshold=8)

    def crash(shared, item):
        raise KeyError("a bug")

    monkeypatch.setattr(part, "_solve_part", crash)
    with pytest.raises(JobCrashed, match="KeyError"):
        part.solve_partitioned(p, "prove", parts=parts, time_per_part=1.0, time_limit=3600.0, unions=False,
                               falsify=False, retries=(), executor=SerialExecutor())


def test_a_property_whose_backend_job_crashed_is_an_internal_error_naming_it(tmp_path, monkeypatch):
    """The pipeline reads a backend's JobCrashed as the backend's own exception: exit 4, the property named."""
    import fairspec
    from fairspec.runtime.executor import SerialExecutor

    spec = _empty(tmp_path, body="property q {\n  statistical_parity(r, groups sex) <= 0.99\n}\n"
                                 "property k {\n  statistical_parity(r, groups sex) <= 0.999\n}\n")
    import fairspec.kinds.on_data as on_data

    real = on_data.run

    def crashing(prop, ctx, progress=None):
        if prop.name == "q":
            SerialExecutor().map(_crash_on_3, [3], on_error=lambda item, why: "undecided")
        return real(prop, ctx, progress)

    monkeypatch.setattr(on_data, "run", crashing)
    rep = fairspec.check(spec, workers=1)
    by = {v.name: v for v in rep}
    assert rep.exit_code == 4 and not rep.ok, rep
    assert by["q"].status == "unknown" and "internal error: a job raised IndexError" in by["q"].reason
    assert by["k"].status == "holds"
    assert rep.report.internal_errors == [f"q: a job raised IndexError: index 7 is out of bounds for axis 0 with "
                                          f"size 7 (at test_audit_s36_gates.py:{_crash_on_3.__code__.co_firstlineno + 2})"]


# --- 5. a Dask job whose worker died each time it ran it (KilledWorker) is an internal error, as locally -------

class _Raising:
    status = "finished"

    def __init__(self, e):
        self.e = e

    def done(self):
        return True

    def result(self, timeout=None):
        raise self.e


class _OneJobClient:
    def __init__(self, future):
        self.future = future

    def submit(self, *a, **kw):
        return self.future

    def scatter(self, data, **kw):
        return [_Raising(None)]

    def cancel(self, futures):
        pass


def _dask(future):
    from fairspec.runtime import executor as ex_mod

    ex = ex_mod.DaskExecutor.__new__(ex_mod.DaskExecutor)
    ex.client, ex.address, ex.retries, ex.workers = _OneJobClient(future), "tcp://10.0.0.1:8786", 2, 1
    ex.lost_after, ex._scattered, ex.POLL = 20.0, {}, 0.0
    return ex


def test_a_dask_job_whose_worker_was_killed_for_good_is_an_internal_error():
    """distributed's KilledWorker (the job's worker died allowed-failures times) made the property unknown
    ('the job failed: ...', exit 3); a dying pool worker is exit 4 (test above): so is this one now. A job's
    own IndexError raised back through the scheduler is a crash; a refusal and a cancellation keep their reason."""
    from types import SimpleNamespace

    pytest.importorskip("distributed")
    from distributed.client import FutureCancelledError
    from distributed.scheduler import KilledWorker

    from fairspec.pipeline import _failed_job
    from fairspec.runtime.executor import JobCrashed, WorkerDied
    from fairspec.verdict import Unsupported

    killed = KilledWorker("_dask_call-1", SimpleNamespace(address="tcp://10.0.0.2:40000"), 3)
    with pytest.raises(WorkerDied, match="died each time it ran it"):
        _dask(_Raising(killed)).map(_item, [1], shared={}, on_error=lambda item, why: "undecided")
    (out,) = _dask(_Raising(killed)).map(_item, [("k", "p", "group_metric")], shared={}, on_error=_failed_job)
    assert out["verdict"].status == "unknown" and out["internal"].startswith("p: the Dask worker running the job died")
    with pytest.raises(JobCrashed, match="IndexError"):
        _dask(_Raising(IndexError("a bug"))).map(_item, [1], shared={}, on_error=lambda item, why: "undecided")
    assert _dask(_Raising(Unsupported("refused"))).map(_item, [1], shared={}, on_error=lambda i, why: why) == \
        ["Unsupported: refused"]
    (why,) = _dask(_Raising(FutureCancelledError("_dask_call-1", reason="lost"))).map(
        _item, [1], shared={}, on_error=lambda i, why: why)
    assert "the Dask cluster cancelled the job" in why


def _item(shared, item):
    return item


# --- 6. the HTML group table prints the failing pair's rates as the text report prints a worst pair ----------

def test_the_html_failing_rows_print_their_pair_so_its_difference_keeps_its_side():
    """Statistical parity 0.10004 against `<= 0.1`, violated: the failing rows' cells read 0.2000 and 0.3000
    (4 decimals each, on no threshold of their own), a difference of exactly 0.1 -- the claim looked met."""
    from fairspec.verdict import Verdict

    rows = [{"group": "F", "rows": 50, "positives": 10, "positive_rate": 0.2},
            {"group": "M", "rows": 50, "positives": 15, "positive_rate": 0.30004}]
    v = Verdict("dp", "group_metric", "violated", value=0.10004, backend="data", thresholds=(0.1,),
                details={"groups": rows, "rates": ["positive_rate"], "groups_label": "sex", "op": "<=",
                         "threshold": 0.1, "worst_pair": {"low": "F", "low_rate": 0.2, "high": "M",
                                                          "high_rate": 0.30004}})
    out = _html(v)
    assert "<td class=num>0.20000" in out and "<td class=num>0.30004" in out, out
    assert "<td class=num>0.2000<" not in out and "<td class=num>0.3000<" not in out


# --- 7. the last numbers printed beside a threshold without the shared printer (literals.shown) --------------

def test_the_data_backends_move_it_to_keeps_its_side_of_the_threshold():
    """A lost replicate's reason said 'move it to 0.1000' for an interval end of 0.10004 past `<= 0.1`."""
    from types import SimpleNamespace

    import numpy as np

    from fairspec.backends.data.constant import lost_reason

    prop = SimpleNamespace(metric="statistical_parity", op="<=", threshold=0.1)
    boot = np.full(999, 0.10004)
    why = lost_reason(prop, "holds", boot, np.array([0.05]), ["F"], 0.05, 0.05)
    assert why is not None and "move it to 0.1001 " in why and "0.1000" not in why, why


def test_a_multiclass_tables_shares_keep_their_side_of_the_threshold():
    """The class shares' cell printed 3 decimals: a share of 0.10004 beside `<= 0.1` read 0.100."""
    from types import SimpleNamespace

    import numpy as np

    from fairspec.backends.data.outputs import _table

    n = 25000
    pred = np.zeros(n, dtype=np.int64)
    pred[:2501] = 1                                        # 2501 / 25000 = 0.10004
    g = np.zeros(n, dtype=np.int64)
    mdef = SimpleNamespace(output="multiclass", quantity="class_distance")
    model = SimpleNamespace(readout=SimpleNamespace(classes=None))
    (row,) = _table(mdef, ["all"], g, pred, None, None, np.array([n]), np.array([True]), np.array([False]), 2,
                    model, 1, None, np.ones(n), (0.1,))
    assert row["class_shares"] == "0 0.900, 1 0.10004", row


def test_a_pba_tables_percentages_keep_their_side_of_the_threshold():
    """The PBA table printed one decimal: a share of 0.89996 beside `pba(...) >= 0.9` read 90.0%."""
    from fairspec.backends.pba.aggregate import _pct, _pct_of

    assert _pct(0.89996, (0.9,)) == "89.996%" and _pct(0.9, (0.9,)) == "90.0%" and _pct(0.5, (0.9,)) == "50.0%"
    assert _pct(None) == "-" and _pct(0.123) == "12.3%"
    # a range's low end rounded down (outward): 89.9, not 90.0 on the threshold
    assert _pct_of({"sp": 0.5, "sp_range": [0.89996, 0.95]}, "sp", (0.9,)) == "89.9-95.0%"


def test_a_k_discrimination_explanation_keeps_its_numbers_on_their_side():
    """describe printed 2 decimals: a mean k of 1.996 against the high-k cut k >= 2 read 2.00, a path's
    difference of 0.1051 against delta 0.1055 read 0.11 (above it)."""
    from fairspec.backends.search.explain import Explanation, Path, describe

    path = Path((), mean_k=2.5, mean_k_negated=1.9949, diff=0.1051, support=10, high_share=0.5, volume=0.1)
    out = describe(Explanation((path,), (path,), kappa=2.0, high_rule=">=", n_samples=100, k_init=3, mean_k=1.996,
                               tree_accuracy=0.9, delta=0.1055))
    assert "mean k 1.996," in out and "2.00," not in out, out
    assert "vs 1.99 negated (diff 0.105)" in out, out


def test_a_job_crash_after_ctrl_c_is_the_interrupt_not_an_internal_error(tmp_path, monkeypatch):
    """A solver stopped by Ctrl-C may raise in its job: the property is interrupted (the signal's exit code),
    not an internal error."""
    import fairspec
    import fairspec.kinds.on_data as on_data
    from fairspec import interrupt
    from fairspec.runtime.executor import SerialExecutor

    spec = _empty(tmp_path, body="property q {\n  statistical_parity(r, groups sex) <= 0.99\n}\n")

    def crashing(prop, ctx, progress=None):
        monkeypatch.setattr(interrupt, "requested", lambda: True)
        SerialExecutor().map(_crash_on_3, [3], on_error=lambda item, why: "undecided")

    monkeypatch.setattr(on_data, "run", crashing)
    rep = fairspec.check(spec, workers=1)
    (v,) = list(rep)
    assert v.status == "unknown" and "interrupted" in v.reason and not rep.report.internal_errors, (v, rep)
    assert rep.report.interrupted
