"""The backend registry and plan(): one place chooses, and what it advertises runs."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from fairspec import ir
from fairspec.planning import BACKENDS, OPTIONS, PREFERENCE, Plan, plan, setting
from fairspec.verdict import Unsupported

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"
KINDS = ("individual_fairness", "k_discrimination", "pba", "group_metric", "repair")


def _prop(kind, backend=None, **kw):
    opts = ir.Options(backend=backend)
    if kind == "group_metric":
        return ir.GroupMetric("p", kind, opts, None, metric=kw.get("metric", "statistical_parity"), model="m",
                              features="F", groups=ir.Groups(()), data=kw.get("data"),
                              distribution=kw.get("distribution"), op="<=", threshold=0.1)
    cls = {"individual_fairness": ir.IndividualFairness, "k_discrimination": ir.KDiscrimination, "pba": ir.PBA,
           "repair": ir.Repair}[kind]
    return cls("p", kind, opts, None)


SPEC = ir.Spec("s.fair", (), (), (), (), (), (ir.Distribution("d", "bayes", "people"),
                                               ir.Distribution("e", "empirical", "people")), ())


def _cases():
    for kind in KINDS:
        if kind == "group_metric":
            for where in ({"data": "people"}, {"distribution": "d"}, {"distribution": "e"}):
                for metric in ("statistical_parity", "influence"):
                    if metric == "influence" and "data" in where:
                        continue
                    yield kind, {**where, "metric": metric}
        else:
            yield kind, {}


@pytest.mark.parametrize("kind,kw", list(_cases()))
def test_fs502_and_fs504_never_disagree(kind, kw):
    """`using B` either is refused (FS502) or runs: never accepted and then reported unknown (FS504)."""
    for b in BACKENDS:
        p = plan(_prop(kind, b, **kw), SPEC)
        assert (p.error is None) == p.runs, (b, kind, kw, p)
        if p.error:
            assert p.hint
    auto = plan(_prop(kind, **kw), SPEC)
    assert auto.error is None
    assert auto.runs or auto.why


def test_every_runner_in_the_registry_resolves():
    for b in BACKENDS.values():
        assert b.capabilities, b.name
        for c in b.capabilities:
            module, _, fn = c.runner.partition(":")
            assert callable(getattr(importlib.import_module(module), fn)), c.runner
            assert "timeout" in {o.name for o in c.options}, (b.name, c.kind)
    for kind, order in PREFERENCE.items():
        assert all(b in BACKENDS for b in order), kind


def test_the_plan_says_what_runs():
    assert plan(_prop("individual_fairness"), SPEC).backend == "milp"
    assert plan(_prop("individual_fairness"), SPEC).needs == ("relu_network",)
    assert plan(_prop("k_discrimination"), SPEC).backend == "search"
    assert plan(_prop("pba"), SPEC).backend == "milp"
    assert plan(_prop("group_metric", data="people"), SPEC).backend == "data"
    assert plan(_prop("repair"), SPEC).backend == "repair"
    # the empirical distribution of a data set is its rows
    assert plan(_prop("group_metric", distribution="e"), SPEC).backend == "data"
    # over a distribution the choice waits for the classifier's Boolean form ...
    p = plan(_prop("group_metric", distribution="d"), SPEC)
    assert p.backend is None and p.runs and set(p.candidates) == {"dp", "ssat", "elimination"}
    assert "chosen from the classifier's Boolean form" in p.describe()
    # ... and the runner asks again with the facts
    for form, edges, want in (("linear", False, "dp"), ("tree", True, "elimination"), ("tree", False, "ssat"),
                              ("cnf", True, "ssat"), ("linear", True, "dp")):
        got = plan(_prop("group_metric", distribution="d"), SPEC, {"form": form, "feature_edges": edges})
        assert got.backend == want, (form, edges)
    forced = plan(_prop("group_metric", "dp", distribution="d"), SPEC, {"form": "tree", "feature_edges": False})
    assert not forced.runs and "dp backend handles linear classifiers only" in forced.why
    assert plan(_prop("group_metric", "ssat", distribution="d"), SPEC, {"form": "tree", "feature_edges": True}
                ).backend == "ssat"
    assert plan(_prop("group_metric", "data", metric="influence", distribution="d"), SPEC).error.startswith(
        "the data backend measures group metrics on data rows; fairness influence needs a distribution")


def test_one_default_per_backend():
    assert setting(_prop("individual_fairness"), "timeout") == 60.0
    assert setting(_prop("individual_fairness", "smt"), "timeout") == 60.0
    assert setting(_prop("pba"), "timeout") == 120.0
    assert setting(_prop("k_discrimination"), "timeout") == 60.0
    assert setting(_prop("group_metric", data="people"), "timeout") is None
    assert setting(_prop("group_metric", data="people"), "bootstrap") == 1000
    assert setting(_prop("group_metric", distribution="d"), "bootstrap") is None
    assert setting(_prop("individual_fairness"), "mode") == "prove"
    assert setting(_prop("individual_fairness"), "engine") == "highs"


def test_option_ranges():
    assert OPTIONS["bootstrap"].check(100_000) is None and OPTIONS["bootstrap"].check(100_001)
    assert OPTIONS["partitions"].check(4096) is None and OPTIONS["partitions"].check(10**9)
    assert OPTIONS["max_rows"].check(10**12) and OPTIONS["seed"].check(-1) and OPTIONS["seed"].check(2**32)
    assert OPTIONS["timeout"].check(float("inf")) and OPTIONS["timeout"].check(0) and OPTIONS["timeout"].check(1e9)
    assert OPTIONS["confidence"].check(1.0) and OPTIONS["confidence"].check(0.5) is None
    assert OPTIONS["max_rows"].check(float("nan"))


def test_readme_documents_every_option_with_its_range():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for name, o in OPTIONS.items():
        assert f"| `{name}`" in text, name
        assert o.range_text.replace(" | ", " \\| ") in text, (name, o.range_text)
    for b in BACKENDS:
        assert f"`{b}`" in text, b


def test_an_unsupported_construct_is_unknown_with_its_reason(monkeypatch):
    from fairspec import pipeline

    def runner(prop, ctx, progress=None):
        raise Unsupported("this backend cannot lower that construct", {"where": "here"})

    monkeypatch.setattr(pipeline, "plan", lambda prop, spec=None, facts=None: Plan(
        prop.kind, "fake", runner=f"{__name__}:_fake_runner"))
    monkeypatch.setitem(globals(), "_fake_runner", runner)
    report = pipeline.check(FIXTURES / "ok" / "pba_repair_dist.fair", only="pba_plain")
    assert not report.internal_errors and report.error is None
    v = report.verdicts[0]
    assert v.status == "unknown" and v.reason == "this backend cannot lower that construct"
    assert v.backend == "fake" and v.details == {"where": "here"}


def test_data_metric_options_match_the_analysis():
    from fairspec.analyses.group_rates import COMPARE_MODES

    assert OPTIONS["compare"].choices == COMPARE_MODES
    assert OPTIONS["exclude_below"].check(0.0) is None and OPTIONS["exclude_below"].check(1.0)
