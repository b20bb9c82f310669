"""k-discrimination from the spec: search, replayed witness, explanation as a guardrail fragment."""

from pathlib import Path

from fairspec.pipeline import check, lint

AC1 = Path(__file__).resolve().parent.parent / "examples/fairify/ac1.fair"


def test_kdisc_on_ac1_replays_and_explains(tmp_path):
    spec = tmp_path / "kd.fair"
    spec.write_text(f'''import "{AC1.as_posix()}"
property clusters {{
  k_discrimination(ac1, over {{race, sex}}, eps = 0.05) < 3
  search annealing for 5s
  explain tree
}}
''')
    rep = check(spec)
    (v,) = rep.verdicts
    assert v.status == "violated" and v.value >= 3
    assert v.details["K"] == 10
    w = v.witness
    changed = {k for k in w.features if w.features[k] != w.features_prime[k]}
    assert changed <= {"race", "sex"} and changed
    assert abs(w.outputs[0] - w.outputs[1]) > 0  # replayed scores of the two extreme counterfactuals
    # the explanation is a usable guardrail: paste it into an individual-fairness property
    guard = v.details.get("guardrail", "")
    guarded = tmp_path / "guarded.fair"
    guarded.write_text(f'''import "{AC1.as_posix()}"
property guarded {{
  forall x, x' : Adult
  require x.* == x'.* except {{race, sex}}
  {guard}
  ensure |prob(ac1(x)) - prob(ac1(x'))| <= 0.05
}}
''')
    res = lint(guarded)
    assert not [d for d in res.diagnostics if d.is_error], [d.message for d in res.diagnostics]


def test_kdisc_claim_that_survives_search_is_proved_by_certify_not_by_the_search(tmp_path):
    """The search never says holds: AC-1 over {sex} stays below 0.99 everywhere, which certify's branch
    and bound over the network's individuals proves (fairspec.certify.kdisc_net); over age's bands (a value
    the search picks in each) nothing proves it, and the search's claim stays unknown."""
    spec = tmp_path / "kd.fair"
    spec.write_text(f'''import "{AC1.as_posix()}"
property loose {{
  k_discrimination(ac1, over {{sex}}, eps = 0.99) < 2
  search random for 1s
}}
property banded {{
  k_discrimination(ac1, over {{age, sex}}, eps = 0.99) < 2
  search random for 1s
}}
''')
    v = {x.name: x for x in check(spec).verdicts}
    assert v["loose"].status == "holds" and v["loose"].how == "proved", v["loose"].reason
    assert v["loose"].proof.method == "bab-certificate" and v["loose"].details["engine"] == "kdisc-bab"
    assert v["banded"].status == "unknown" and "cannot prove" in v["banded"].reason


def test_kdisc_with_age_bands_has_K_20(tmp_path):
    """HyFair's K = 20 on AC-1: age is declared with bins [39] in ac1.fair, so each counterfactual
    takes an age in [10, 39] or [40, 100] (a value the search picks), times race x sex."""
    spec = tmp_path / "kd.fair"
    spec.write_text(f'''import "{AC1.as_posix()}"
property k20 {{
  k_discrimination(ac1, over {{age, race, sex}}, eps = 0.05) < 8
  search annealing for 5s
}}
''')
    (v,) = check(spec).verdicts
    assert v.details["K"] == 20
    assert v.status == "violated" and v.value >= 8
    ages = [c["features"]["age"] for c in v.details["counterfactuals"]]
    assert len(ages) == 20 and len(set(ages)) == 2
    assert sorted(set(ages))[0] <= 39 < sorted(set(ages))[1]
    assert all(10 <= a <= 100 and float(a).is_integer() for a in ages)


def test_numeric_feature_without_bins_is_refused_with_a_hint(tmp_path):
    spec = tmp_path / "kd.fair"
    spec.write_text(f'''import "{AC1.as_posix()}"
property k {{
  k_discrimination(ac1, over {{hours_per_week, sex}}, eps = 0.05) < 3
}}
''')
    (d,) = [d for d in lint(spec).diagnostics if d.is_error]
    assert d.code == "FS308" and "bins" in d.hint


def _watch_the_search(monkeypatch):
    """The runner's search calls ((budget seconds, iterations per restart)) and branch-and-bound calls,
    recorded; every search capped at 30 iterations per restart and the branch and bound answering at
    once, so that a claim that waited for its budget would fail the test, not take the budget's time."""
    import fairspec.backends.search.kdisc as search
    from fairspec.kinds import kdisc_net

    calls, babs = [], []
    real = search.kdisc_restarts

    def capped(*a, **kw):
        calls.append((kw.get("budget_seconds"), kw.get("max_iters")))
        return real(*a, **dict(kw, max_iters=min(kw.get("max_iters") or 30, 30)))

    monkeypatch.setattr(search, "kdisc_restarts", capped)
    monkeypatch.setattr(kdisc_net, "by_branch_and_bound", lambda *a, **kw: babs.append(a[-1]) or "; not run here")
    return calls, babs


def test_a_violated_claim_without_a_search_budget_is_reported_from_the_first_iterations(tmp_path, monkeypatch):
    """timeout = 600s and no `search ... for`: the search's first iterations find k >= 3 on AC-1 (its
    first individuals do), the witness is replayed and reported at once -- not after a tenth of the timeout
    of branch and bound (10 s) nor the search's half of it (300 s)."""
    from fairspec.kinds.k_discrimination import EARLY_SEARCH_ITERATIONS, EARLY_SEARCH_SECONDS

    calls, babs = _watch_the_search(monkeypatch)
    spec = tmp_path / "kd.fair"
    spec.write_text(f'''import "{AC1.as_posix()}"
property clusters {{
  k_discrimination(ac1, over {{race, sex}}, eps = 0.05) < 3
  timeout = 600s
}}
''')
    (v,) = check(spec, allow=[AC1.parent]).verdicts
    assert v.status == "violated" and v.value >= 3 and v.witness is not None, v.reason
    assert v.witness.replayed_by                                     # replayed as any search witness
    assert len(calls) == 1 and calls[0][1] == EARLY_SEARCH_ITERATIONS and calls[0][0] <= EARLY_SEARCH_SECONDS
    assert babs == []                                                # no branch and bound before it
    assert v.details["max_iterations"] == EARLY_SEARCH_ITERATIONS and v.details["budget_seconds"] <= 5


def test_a_claim_the_first_iterations_do_not_break_goes_on_as_before(tmp_path, monkeypatch):
    """Over {sex} with eps = 0.99 AC-1 never reaches k = 2: the first iterations find nothing, then the
    early branch and bound (a tenth of the timeout), the search (up to half of it), the branch and bound."""
    from fairspec.kinds.k_discrimination import EARLY_SEARCH_ITERATIONS

    calls, babs = _watch_the_search(monkeypatch)
    spec = tmp_path / "kd.fair"
    spec.write_text(f'''import "{AC1.as_posix()}"
property loose {{
  k_discrimination(ac1, over {{sex}}, eps = 0.99) < 2
  timeout = 600s
}}
''')
    (v,) = check(spec, allow=[AC1.parent]).verdicts
    assert v.status == "unknown"                                     # the branch and bound did not run here
    assert "timeout" not in v.reason                                 # it was not spent
    assert [it for _, it in calls] == [EARLY_SEARCH_ITERATIONS, None] and calls[1][0] <= 300
    assert len(babs) == 2 and babs[0] <= 10


def test_a_search_shorter_than_the_pools_start_runs_in_this_process(tmp_path, monkeypatch):
    """Two workers configured: a search of a few seconds (timeout = 6s, no `search ... for`: half of it)
    runs its restarts in this process, as its first iterations do -- starting the worker processes (each
    loads the model, the data, scikit-learn for knn) took longer than the whole timeout (kdisc-solver
    61000012 k1, timeout = 4s: 8-12 s, its search 0.2-0.5 s); a long one (timeout = 600s) uses the pool."""
    import fairspec.backends.search.kdisc as search
    from fairspec.kinds import kdisc_net
    from fairspec.runtime import executor as ex_mod

    pool = ex_mod.SerialExecutor()            # stands for the process pool: no worker started here
    monkeypatch.setattr(ex_mod, "configured_workers", lambda: 2)
    monkeypatch.setattr(ex_mod, "get_executor", lambda n=2: pool)
    used, real = [], search.kdisc_restarts

    def watched(*a, **kw):
        used.append((kw.get("max_iters"), kw.get("executor") is pool))
        return real(*a, **dict(kw, executor=ex_mod.SerialExecutor(), init=None, max_iters=min(kw.get("max_iters") or 30, 30)))

    monkeypatch.setattr(search, "kdisc_restarts", watched)
    monkeypatch.setattr(kdisc_net, "by_branch_and_bound", lambda *a, **kw: "; not run here")
    for timeout, pooled in ((6, False), (600, True)):
        used.clear()
        spec = tmp_path / f"kd{timeout}.fair"
        spec.write_text(f'''import "{AC1.as_posix()}"
property loose {{
  k_discrimination(ac1, over {{sex}}, eps = 0.99) < 2
  timeout = {timeout}s
}}
''')
        (v,) = check(spec, allow=[AC1.parent]).verdicts
        assert v.status == "unknown", v.reason
        assert used == [(5, False), (None, pooled)], (timeout, used)


def test_an_unknown_after_the_timeout_is_spent_says_so(tmp_path, monkeypatch):
    """timeout = 2s spent before the branch and bound had a node (a slow machine: the search made to take
    it all here): the unknown names the timeout, so the user knows a longer one may decide the claim (the
    reason said only "the search (sa+knn, 0s) ... the budget ended after 0 nodes")."""
    import time

    calls, _ = _watch_the_search(monkeypatch)
    import fairspec.backends.search.kdisc as search

    capped = search.kdisc_restarts

    def slow(*a, **kw):
        r = capped(*a, **kw)
        if kw.get("max_iters") is None:
            time.sleep(2.2)
        return r

    monkeypatch.setattr(search, "kdisc_restarts", slow)
    spec = tmp_path / "kd.fair"
    spec.write_text(f'''import "{AC1.as_posix()}"
property loose {{
  k_discrimination(ac1, over {{sex}}, eps = 0.99) < 2
  timeout = 2s
}}
''')
    (v,) = check(spec, allow=[AC1.parent]).verdicts
    assert v.status == "unknown" and "the timeout (2s) is spent" in v.reason, v.reason


def test_kdisc_over_bands_on_a_small_domain_is_decided_by_enumeration(tmp_path):
    """A banded int attribute (n : int in [0, 3] bins [1]: bands [0, 1] and [2, 3]) on a small domain: every
    choice of one value per band is enumerated (session 32; before, the search alone: unknown). p = 1/8 + n/4
    (exact in float32) puts each n in a bucket of its own at eps = 1/4, so every choice gives k = 2 (two
    bands), never the 4 of all four values at once: `< 3` is proved, `< 2` violated by a pair across bands."""
    import numpy as np
    import pytest

    pytest.importorskip("onnx")
    import onnx

    from onnx_nets import mlp_model

    W = np.array([[0.0, 0.25, 0.0]], dtype=np.float32)          # inputs g, n, a
    onnx.save(mlp_model([(W, np.array([0.125], dtype=np.float32), False)], name="y"), str(tmp_path / "m.onnx"))
    spec = tmp_path / "kd.fair"
    spec.write_text('''features F {
  g : bool  protected
  n : int in [0, 3] bins [1]
  a : int in [0, 2]
}
model m = onnx("m.onnx", score = prob)
encode F for m {
  g : raw
  n : raw
  a : raw
}
property fine {
  k_discrimination(m, over {g, n}, eps = 0.25) < 3
  search random for 1s
}
property tight {
  k_discrimination(m, over {g, n}, eps = 0.25) < 2
  search random for 1s
}
''')
    v = {x.name: x for x in check(spec).verdicts}
    fine, tight = v["fine"], v["tight"]
    assert fine.status == "holds" and fine.how == "proved", fine.reason
    assert fine.value == 2 and fine.details["K"] == 4 and fine.proof.method == "enumeration"
    assert "4 choices of one value per band" in fine.reason     # 2 x 2 representatives, 3 values of a
    assert tight.status == "violated" and tight.value == 2, tight.reason
    ns = sorted({tight.witness.features["n"], tight.witness.features_prime["n"]})
    assert ns[0] <= 1 < ns[1]
