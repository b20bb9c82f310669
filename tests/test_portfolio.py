"""The MILP portfolio (engine = portfolio, issue 24): HiGHS and SCIP raced per query, the first
decision wins. It must agree with each engine and with brute force on tiny networks biased toward
ties; no timing is asserted (which engine wins depends on the machine's load)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import tie_net

from fairspec.backends.pair import PairProblem, brute_force, check_witness
from fairspec.models.network import random_net

pytest.importorskip("highspy")
pytest.importorskip("pyscipopt")

from fairspec.backends import milp  # noqa: E402
from fairspec.backends.milp import model as M  # noqa: E402

POSTS = (("label", 0.0), ("logit", 1.0), ("prob", 0.05))




def _problem(seed, post, eps):
    net = tie_net(seed, 4, (5, 3)) if seed % 2 else random_net(seed, 4, (6, 4))
    return PairProblem(net, lo=[0, 0, 0, 0], hi=[4, 3, 4, 1], integer=[True] * 4, free=(3,), post=post, eps=eps)


def _agrees(res, truth, p, value):
    assert res.status == truth.status, (res, truth)
    if res.status == "violated":
        assert check_witness(p, res.witness.x, res.witness.x_prime, p.net.forward)
    if res.status == "holds":
        assert res.how == "proved" and res.proof is not None          # certified, as every holds
    if value:
        assert res.how == "proved" and abs(res.value - truth.value) <= 1e-6, (res.value, truth.value)


def _certified_bound_once(monkeypatch) -> list:
    """maximize's certified bound (the certified branch and bound on the runtime, no engine's MILP in it,
    no time limit here: deterministic) computed once per problem, not once per engine. Returns the calls."""
    from fairspec.backends.pair import certify

    real, cache, calls = certify.certified_bound, {}, []

    def certified_bound(problem, seconds):
        calls.append(seconds)
        if seconds is not None:                     # a budget: not the same search every time
            return real(problem, seconds)
        if id(problem) not in cache:
            cache[id(problem)] = (problem, real(problem, seconds))
        return cache[id(problem)][1]

    monkeypatch.setattr(certify, "certified_bound", certified_bound)
    return calls


@pytest.mark.parametrize("seed", (0, 1, 3))
@pytest.mark.parametrize("post,eps", POSTS)
def test_portfolio_agrees_with_brute_force_and_each_engine(seed, post, eps, monkeypatch):
    p = _problem(seed, post, eps)
    truth = brute_force(p)
    # SCIP from the start, so both engines really race on these tiny models
    monkeypatch.setattr(M, "PORTFOLIO_STAGGER", 0.0)
    # the three engines' maximize share the one certified bound of p (what differs is their MILP)
    bound_calls = _certified_bound_once(monkeypatch)
    for mode, value in (("find", False), ("prove", False), ("maximize", True)):
        got = getattr(milp, mode)(p, engine="portfolio", time_limit=None)
        _agrees(got, truth, p, value)
        assert got.engine == "portfolio"
        assert sum(got.stats["answered_by"].values()) == got.stats["solves"]
        for engine in ("highs", "scip"):
            one = getattr(milp, mode)(p, engine=engine, time_limit=None)
            assert one.status == got.status
            if value:
                assert abs(one.value - got.value) <= 1e-6
    assert bound_calls == [None] * 3                  # each engine's maximize asked for it, without a budget


def _encoded(seed=1):
    from fairspec.backends.milp.modes import MilpEngine

    eng = MilpEngine(_problem(seed, "logit", 0.0), "highs")
    z, zp = eng.enc.z
    return eng, z, zp


@pytest.mark.parametrize("stagger", (0.0, 1.0, 1e9))
def test_the_race_decides_as_a_single_engine_does(stagger):
    eng, z, zp = _encoded()
    opt = eng.enc.model.copy()
    opt.set_objective({z: 1.0, zp: -1.0}, maximize=True)
    best = M.solve_highs(opt).objective
    out = M.solve_portfolio(opt, time_limit=None, stagger=stagger)
    assert out.status == "optimal" and out.engine in ("highs", "scip")
    assert abs(out.objective - best) <= 1e-6 * max(1.0, abs(best))
    assert out.bound >= best - 1e-6
    if stagger == 1e9:
        assert out.engine == "highs"                              # SCIP never started
    # a threshold above the optimum: infeasible, decided by whichever engine proves it first
    far = eng.enc.model.copy()
    far.row([z, zp], [1.0, -1.0], best + 1.0, M.INF)
    far.set_objective({}, maximize=True)
    assert M.solve_portfolio(far, time_limit=None, first_solution=True, stagger=stagger).status == "infeasible"
    # just below it: a first solution decides, and it reaches the threshold
    near = eng.enc.model.copy()
    near.row([z, zp], [1.0, -1.0], best - 0.5, M.INF)
    near.set_objective({}, maximize=True)
    out = M.solve_portfolio(near, time_limit=None, first_solution=True, stagger=stagger)
    assert out.status in ("feasible", "optimal") and out.x[z] - out.x[zp] >= best - 0.5 - 1e-6


def test_a_time_out_of_both_is_never_a_decision():
    net = random_net(5, 13, (64, 32))
    p = PairProblem(net, lo=[0] * 13, hi=[10] * 13, integer=[True] * 13, free=(12,), post="logit", eps=5.0)
    res = milp.prove(p, engine="portfolio", time_limit=0.05)
    assert res.status != "holds"


def test_decisive_and_merge():
    d = M.decisive
    assert d(M.SolveOutcome("optimal")) and d(M.SolveOutcome("infeasible"))
    assert not d(M.SolveOutcome("feasible")) and not d(M.SolveOutcome("timeout")) and not d(M.SolveOutcome("error"))
    assert d(M.SolveOutcome("feasible"), first_solution=True) and d(M.SolveOutcome("feasible"), objective_target=1.0)
    x = np.zeros(2)
    a = M.SolveOutcome("feasible", x, 1.0, 5.0, engine="highs")
    b = M.SolveOutcome("feasible", x + 1, 2.0, 7.0, engine="scip")
    m = M._merge([a, b], maximize=True)
    assert m.status == "feasible" and m.objective == 2.0 and m.bound == 5.0 and m.engine == "scip"
    m = M._merge([a, b], maximize=False)
    assert m.objective == 1.0 and m.bound == 7.0
    t = M.SolveOutcome("timeout", bound=3.0, engine="highs")
    e = M.SolveOutcome("error", raw_status="boom", engine="scip")
    assert M._merge([t, e], True).status == "timeout" and M._merge([t, e], True).bound == 3.0
    assert M._merge([e, M.SolveOutcome("error", engine="highs")], True).status == "error"


@pytest.mark.parametrize("seed", range(3))
def test_partitions_with_the_portfolio_match_brute_force_per_box(seed):
    from fairspec.runtime.executor import SerialExecutor

    for post, eps in (("label", 0.0), ("logit", 1.0)):
        p = PairProblem(tie_net(seed, 4, (5, 3)) if seed % 2 else random_net(seed, 4, (6, 4)),
                        lo=[0, 0, 0, 0], hi=[5, 4, 3, 1], integer=[True] * 4, free=(3,), post=post, eps=eps)
        parts = milp.split_widest(p, 6)
        truth = [brute_force(p.restrict(lo, hi)).status for lo, hi in parts]
        res = milp.solve_partitioned(p, "prove", parts, time_per_part=30, executor=SerialExecutor(),
                                     engine="portfolio", falsify=False)
        got = [s for s, _ in res.coverage.parts]
        highs = milp.solve_partitioned(p, "prove", parts, time_per_part=30, executor=SerialExecutor(),
                                       falsify=False)
        # a box whose maximal violation is exactly the threshold (a tie: logit difference == eps on
        # integer weights) is unknown for every engine; never a wrong verdict
        for g, t, h in zip(got, truth, [s for s, _ in highs.coverage.parts]):
            assert g == t or (g == "unknown" and h == "unknown"), (got, truth)
        assert sum(g == t for g, t in zip(got, truth)) >= len(parts) - 1
        if res.status == "violated":
            assert check_witness(p, res.witness.x, res.witness.x_prime, p.net.forward)


def test_the_retry_pass_of_a_portfolio_run_is_the_portfolio():
    """A first pass with no time leaves every box undecided; the portfolio's own retry pass (the race
    with 6x the budget) decides them, as brute force says."""
    from fairspec.backends.milp.partition import PORTFOLIO_RETRIES
    from fairspec.runtime.executor import SerialExecutor

    assert PORTFOLIO_RETRIES[0][0] == "portfolio"
    p = PairProblem(tie_net(1, 4, (5, 3)), lo=[0, 0, 0, 0], hi=[5, 4, 3, 1], integer=[True] * 4, free=(3,))
    parts = milp.split_widest(p, 4)
    truth = [brute_force(p.restrict(lo, hi)).status for lo, hi in parts]
    res = milp.solve_partitioned(p, "prove", parts, time_per_part=1e-9, executor=SerialExecutor(), falsify=False,
                                 engine="portfolio", retries=(("portfolio", 3e10),))
    assert [s for s, _ in res.coverage.parts] == truth
    assert sum(res.stats["retry_decided"].values()) == len(parts)


def _project(tmp_path, engine_line, prop="plain_flip"):
    from pathlib import Path

    fix = Path(__file__).resolve().parent / "fixtures"
    tmp_path.mkdir()
    (tmp_path / "fairspec.toml").write_text("")
    for sub in ("data", "models", "specs"):
        (tmp_path / sub).mkdir()
    (tmp_path / "data" / "people.csv").write_bytes((fix / "data" / "people.csv").read_bytes())
    for m in ("people6.onnx", "people6.pkl"):
        (tmp_path / "models" / m).write_bytes((fix / "models" / m).read_bytes())
    text = (fix / "ok" / "encodings.fair").read_text()
    assert "  using milp\n}" in text
    spec = tmp_path / "specs" / "s.fair"
    spec.write_text(text.replace("  using milp\n}", f"  using milp\n  {engine_line}\n}}"))
    return spec


def test_lint_accepts_the_portfolio_and_names_a_misspelt_engine(tmp_path):
    from fairspec.pipeline import lint

    ok = lint(_project(tmp_path / "a", "engine = portfolio"))
    assert not [d for d in ok.diagnostics if d.severity == "error"], [d.message for d in ok.diagnostics]
    bad = lint(_project(tmp_path / "b", "engine = portfolyo"))
    errs = [d for d in bad.diagnostics if d.severity == "error"]
    assert errs and any("portfolio" in d.message for d in errs), [d.message for d in errs]


def test_tree_models_keep_their_own_engines_under_the_portfolio():
    """engine = portfolio on a tree ensemble is the tree engines' own portfolio (z3 first, then HiGHS):
    partitioned proofs agree with brute force."""
    from fairspec.backends.trees.space import fold
    from fairspec.models.trees import random_ensemble
    from fairspec.runtime.executor import SerialExecutor

    for seed in range(6):
        lo, hi = np.zeros(3), np.full(3, 12.0)
        ens = random_ensemble(seed, 3, 3, 3, ["identity", "logistic"][seed % 2], lo, hi)
        prob = PairProblem(fold(ens, lo, hi, np.ones(3, bool)), lo, hi, np.ones(3, bool), (), (0,))
        want = "violated" if brute_force(prob, ens.forward).status == "violated" else "holds"
        res = milp.solve_partitioned(prob, "prove", milp.split_widest(prob, 4), time_per_part=None,
                                     executor=SerialExecutor(), engine="portfolio")
        assert res.status == want, (seed, res.status, want)
