"""The data backend honours its option ``timeout`` (it was read by nobody: a group metric on data rows
ran however long it took, and the user who wrote ``timeout = 10s`` got no word of it).

The runner looks at the property's clock (``Context.remaining``, so on a Dask worker the cluster's
clock of the job starts) before each batch of rows and each chunk of bootstrap resamples; past the
budget the property is ``unknown`` with the reason, never ``holds`` on part of the rows. The clock is
the test's: the property's spent time jumps past any budget when the second batch of rows arrives,
so nothing here depends on the machine's speed."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, people_decls

SPEC = people_decls("people.csv", features="P") + '''model net = onnx("people6.onnx", output = "logit")
encode P for net { age : standard  sex : onehot  race : code  member, score : raw }
model value = onnx("people6.onnx", score = value)
encode P for value { age : standard  sex : onehot  race : code  member, score : raw }
property budgeted {
  statistical_parity(net, groups sex) <= 0.99
  TIMEOUT
}
property unbudgeted {
  statistical_parity(net, groups race) <= 0.99
}
property outputs {
  mean_prediction_difference(value, groups sex) <= 100
  TIMEOUT
}
'''


def _spec(tmp_path, timeout="timeout = 10s"):
    (tmp_path / "people.csv").write_bytes((FIXTURES / "data" / "people.csv").read_bytes())
    (tmp_path / "people6.onnx").write_bytes((FIXTURES / "models" / "people6.onnx").read_bytes())
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC.replace("TIMEOUT", timeout))
    return spec


@pytest.fixture
def late_second_batch(monkeypatch):
    """Rows in batches of 50; the property's clock reads 0 s until the second batch arrives, then a
    million seconds (each pass over the rows anew). Records each limit taken (``job_clock.limited``: the cluster's clock starts)."""
    from fairspec.runtime import columnar, job_clock
    from fairspec.runtime.context import Context

    state = {"late": False, "limited": 0}
    orig = Context.row_batches

    def row_batches(self, *a, **k):
        state["late"] = False           # each pass: its first batch in time, the second past any budget
        for i, rows in enumerate(orig(self, *a, **k)):
            state["late"] = i >= 1
            yield rows

    def limited():
        state["limited"] += 1

    monkeypatch.setattr(columnar, "BATCH_ROWS", 50)
    monkeypatch.setattr(Context, "row_batches", row_batches)
    monkeypatch.setattr(Context, "spent", lambda self: 1e6 if state["late"] else 0.0)
    monkeypatch.setattr(job_clock, "limited", limited)
    return state


def _verdicts(spec):
    from fairspec.pipeline import check

    rep = check(spec)
    assert not rep.has_errors and not rep.internal_errors, ([d.message for d in rep.diagnostics], rep.internal_errors)
    return {v.name: v for v in rep.verdicts}


def test_a_group_metric_past_its_budget_is_unknown_with_the_reason(tmp_path, late_second_batch):
    spec = _spec(tmp_path)
    got = _verdicts(spec)
    for name in ("budgeted", "outputs"):
        v = got[name]
        assert v.status == "unknown" and v.backend == "data", v
        assert v.reason.startswith("the time budget of 10s ran out after counting 50 rows;"), v.reason
        assert "no verdict" in v.reason and "timeout = " in v.reason, v.reason
    assert got["budgeted"].details["timed_out"] == {"budget": 10.0, "rows": 50, "resamples": None}
    assert late_second_batch["limited"] >= 2     # each budgeted property took its limit through the context


def test_a_mate_of_a_timed_out_pass_keeps_its_verdict(tmp_path, late_second_batch):
    """The budgeted property counts alone (its budget is its own work): the property after it, with no
    budget, counts every row itself and gets the verdict it gets with no budget anywhere."""
    late = _verdicts(_spec(tmp_path))["unbudgeted"]
    base = _verdicts(_spec(tmp_path, timeout=""))
    assert (late.status, late.value, late.bound) == (base["unbudgeted"].status, base["unbudgeted"].value,
                                                     base["unbudgeted"].bound)
    assert late.status != "unknown" and base["budgeted"].status != "unknown", base


def test_no_budget_no_limit(tmp_path, late_second_batch):
    """Without timeout the data backend takes no limit: the clock is never read, the rows all counted."""
    got = _verdicts(_spec(tmp_path, timeout=""))
    assert all(v.status != "unknown" for v in got.values()), got
    assert late_second_batch["limited"] == 0 and "timed_out" not in got["budgeted"].details


def test_an_expired_budget_before_the_first_batch(tmp_path, monkeypatch):
    """A budget spent before the first row (timeout = 0s, or preparation that used it all): unknown, no
    row counted."""
    from fairspec.runtime.context import Context

    monkeypatch.setattr(Context, "spent", lambda self: 1e6)
    v = _verdicts(_spec(tmp_path, timeout="timeout = 1s"))["budgeted"]
    assert v.status == "unknown" and v.reason.startswith("the time budget of 1s ran out after counting 0 rows"), v


FLIPS = people_decls("people.csv", features="P") + '''model net = onnx("people6.onnx", output = "logit")
encode P for net { age : standard  sex : onehot  race : code  member, score : raw }
property flips {
  forall x, x' : P
  require x.* == x'.* except {race}
  ensure |prob(net(x)) - prob(net(x'))| <= 0.999
  using data
  timeout = 10s
}
'''


def test_counterfactual_flips_take_their_budget_through_the_context(tmp_path, monkeypatch):
    """The flips of the data backend look at the property's clock (the cluster's clock starts): past the
    budget after the first combination of the free features, they stop there (never holds)."""
    from fairspec.runtime import job_clock
    from fairspec.runtime.context import Context

    limited = []
    monkeypatch.setattr(Context, "spent", lambda self: 1e6)
    monkeypatch.setattr(job_clock, "limited", lambda: limited.append(1))
    _spec(tmp_path)
    (tmp_path / "f.fair").write_text(FLIPS)
    v = _verdicts(tmp_path / "f.fair")["flips"]
    assert v.status != "holds" and v.details["timed_out_after_combinations"] == 1, v
    assert limited, "the flips never took their limit through the context"


@pytest.mark.parametrize("limit", [0.5, 59.5, 600, 550_000, 7 * 24 * 3600])
def test_the_suggested_timeout_is_spec_text_that_lints(tmp_path, limit):
    """The reason's example (``e.g. timeout = 120s``) pastes into the property as it is: it was
    ``{2 * limit:g}s``, ``timeout = 1.1e+06s`` for a budget of 550,000 s (FS101: no number), and past
    a week out of the option's range (FS307)."""
    import re

    from fairspec.backends.data.budget import OutOfTime
    from fairspec.pipeline import lint

    reason = OutOfTime(limit, 10).reason()
    (fragment,) = re.findall(r"e\.g\. (timeout = \S+?)\)", reason)
    spec = _spec(tmp_path, fragment)
    errors = [(d.code, d.message) for d in lint(spec).diagnostics if d.is_error]
    assert errors == [], (fragment, errors)
