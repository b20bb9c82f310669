"""The union pass of the partitions (issue 24, reach): neighbouring partitions merged and proved
together by the certified branch and bound. Against brute force per box on tiny networks biased
toward ties; no timing."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import tie_net

from fairspec.backends.pair import PairProblem, brute_force, check_witness
from fairspec.models.network import Layer, PLNet, random_net

pytest.importorskip("highspy")

from fairspec.backends import milp  # noqa: E402
from fairspec.backends.milp.unions import union_boxes  # noqa: E402




def test_unions_are_exact_unions_of_neighbouring_boxes():
    p = PairProblem(random_net(0, 4, (4,)), lo=[0, 0, 0, 0], hi=[9, 7, 3, 1], integer=[True] * 4, free=(3,))
    parts = milp.grid_partitions(p, {0: 5, 1: 4})
    keys = [k for k in range(len(parts)) if k % 3 != 1]          # holes: not every box takes part
    us = union_boxes(parts, keys, p.integer, max_members=4)
    seen = set()
    for members, lo, hi in us:
        assert 2 <= len(members) <= 4 and not (set(members) & seen) and set(members) <= set(keys)
        seen |= set(members)
        # the union box holds exactly its members' lattice points
        assert p.volume(lo, hi) == sum(p.volume(*parts[k]) for k in members)
        for k in members:
            assert np.all(parts[k][0] >= lo) and np.all(parts[k][1] <= hi)
    assert seen, "nothing merged"


@pytest.mark.parametrize("seed", range(6))
def test_partitions_with_unions_match_brute_force_per_box(seed):
    from fairspec.certify import Proof
    from fairspec.runtime.executor import SerialExecutor

    net = tie_net(seed, 4, (5, 3)) if seed % 2 else random_net(seed, 4, (6, 4))
    for post, eps in (("label", 0.0), ("logit", 1.0)):
        p = PairProblem(net, lo=[0, 0, 0, 0], hi=[7, 5, 3, 1], integer=[True] * 4, free=(3,), post=post, eps=eps)
        parts = milp.split_widest(p, 12)
        truth = [brute_force(p.restrict(lo, hi)).status for lo, hi in parts]
        on = milp.solve_partitioned(p, "prove", parts, time_per_part=30, executor=SerialExecutor(), falsify=False)
        off = milp.solve_partitioned(p, "prove", parts, time_per_part=30, executor=SerialExecutor(), falsify=False,
                                     unions=False)
        got = [s for s, _ in on.coverage.parts]
        ref = [s for s, _ in off.coverage.parts]
        for g, t, o in zip(got, truth, ref):
            # a box whose maximal violation is exactly the threshold is unknown (as without unions)
            assert g == t or (g == "unknown" and o == "unknown"), (got, truth, ref)
        for g, proof in zip(got, on.stats["part_proofs"]):
            if g == "holds":
                assert isinstance(proof, Proof)
        if on.status == "violated":
            assert check_witness(p, on.witness.x, on.witness.x_prime, p.net.forward)
        if post == "label":
            assert on.stats["union_decided"] > 0


def test_a_union_witness_refutes_only_the_box_that_holds_it():
    """z = x_0 - 6.5 + x_3: only boxes reaching x_0 = 6 or 7 flip; a union with such a box finds a pair,
    which refutes that box alone."""
    from fairspec.backends.milp.unions import member_results
    from fairspec.backends.pair.certify import decide_by_bab

    net = PLNet((Layer(np.array([[1.0, 0.0, 0.0, 1.0]]), np.array([-6.5]), False),), 0, "sigmoid")
    p = PairProblem(net, lo=[0, 0, 0, 0], hi=[7, 5, 3, 1], integer=[True] * 4, free=(3,))
    parts = [(np.array([a, 0, 0, 0.0]), np.array([a + 1, 5, 3, 1.0])) for a in (0, 2, 4, 6)]
    (u,) = union_boxes(parts, range(4), p.integer)
    r = decide_by_bab(p.restrict(u[1], u[2]), "prove", 30)
    assert r.status == "violated"
    got = member_results(p, parts, u, r)
    assert list(got) == [3] and got[3].status == "violated"
    w = got[3].witness
    assert check_witness(p.restrict(*parts[3]), w.x, w.x_prime, p.net.forward)


def test_what_the_retries_leave_gets_doubling_budgets_while_the_total_lasts(monkeypatch):
    """Every pass with (almost) no time leaves every box open; with a total budget, the passes after the
    retries double the budget until the boxes are decided, as brute force says (never wrongly). A box
    given less than 0.05 s is left open here whatever the machine's speed (a fast machine decides these
    tiny boxes in a millisecond)."""
    from fairspec.backends.milp import partition
    from fairspec.backends.pair import PairResult
    from fairspec.runtime.executor import SerialExecutor

    real = partition._solve_part

    def slow_machine(shared, item):
        problem, mode, backend, kw = shared[:4]
        if kw.get("time_limit") is not None and kw["time_limit"] < 0.05:
            return PairResult("unknown", reason="time limit", engine=kw.get("engine", backend), mode=mode)
        return real(shared, item)

    monkeypatch.setattr(partition, "_solve_part", slow_machine)
    p = PairProblem(tie_net(3, 4, (5, 3)), lo=[0, 0, 0, 0], hi=[5, 4, 3, 1], integer=[True] * 4, free=(3,))
    parts = milp.split_widest(p, 4)
    truth = [brute_force(p.restrict(lo, hi)).status for lo, hi in parts]
    # decide_share=0: no decision pass by refinement between the retries and the doubling passes (it would
    # decide these tiny boxes first; tests/test_decide_by_refinement.py tests it)
    kw = dict(time_per_part=1e-3, executor=SerialExecutor(), falsify=False, unions=False, retries=(("bab", 1.0),),
              decide_share=0.0)
    none = milp.solve_partitioned(p, "prove", parts, **kw)
    assert none.coverage.undecided == len(parts)
    res = milp.solve_partitioned(p, "prove", parts, time_limit=600, **kw)
    got = [s for s, _ in res.coverage.parts]
    assert all(g in (t, "unknown") for g, t in zip(got, truth)) and sum(g == t for g, t in zip(got, truth)) >= 3
    assert any(" " in label for label in res.stats["retry_decided"])      # decided by a pass after the retries


@pytest.mark.parametrize("decides", [False, True])
def test_union_rounds_end_at_one_that_decides_none(monkeypatch, decides):
    """The union pass's rounds of halving size (16, 8, 4, 2): a round that decides none ends them."""
    from fairspec.backends.milp import unions
    from fairspec.backends.pair import PairResult
    from fairspec.runtime.executor import SerialExecutor

    p = PairProblem(random_net(0, 4, (4,)), lo=[0, 0, 0, 0], hi=[31, 31, 3, 1], integer=[True] * 4, free=(3,))
    parts = milp.grid_partitions(p, {0: 8, 1: 8})
    sizes = []

    def union(shared, item):
        sizes.append(len(item[3]))
        return PairResult("unknown", reason="stub")

    real = unions.member_results

    def members(problem, parts_, u, r):
        # the first member of each union of 16 counted as decided (as a pair refuting it would), when asked to
        if decides and len(u[0]) == 16:
            return {u[0][0]: PairResult("unknown", reason="stub: counted as decided")}
        return real(problem, parts_, u, r)

    monkeypatch.setattr(unions, "decide_union", union)
    monkeypatch.setattr(unions, "member_results", members)
    results = [None] * len(parts)
    items = [(k, lo, hi, None) for k, (lo, hi) in enumerate(parts)]
    shared = (p, "prove", "milp", {"time_limit": 1.0}, None, 0)
    n = unions.union_pass(p, parts, items, results, SerialExecutor(), shared, lambda item, why: None)
    rounds = sorted(set(sizes), reverse=True)
    if decides:
        assert n == 64 // 16 and rounds[0] == 16 and len(rounds) > 1
    else:
        assert n == 0 and rounds == [16]


def test_the_union_pass_takes_its_share_of_the_budget_left(monkeypatch):
    """The union pass's jobs get a deadline UNION_SHARE of the way to the total one (as the attack has its
    share): they cannot take the time of the per-partition pass that follows."""
    import time

    from fairspec.backends.milp import unions
    from fairspec.backends.pair import PairResult
    from fairspec.runtime.executor import SerialExecutor

    p = PairProblem(random_net(0, 4, (4,)), lo=[0, 0, 0, 0], hi=[31, 31, 3, 1], integer=[True] * 4, free=(3,))
    parts = milp.grid_partitions(p, {0: 8, 1: 8})
    seen = []

    def union(shared, item):
        seen.append(shared[4])
        return PairResult("unknown", reason="stub")

    monkeypatch.setattr(unions, "decide_union", union)
    results = [None] * len(parts)
    items = [(k, lo, hi, None) for k, (lo, hi) in enumerate(parts)]
    t0 = time.time()
    total = t0 + 1000.0
    unions.union_pass(p, parts, items, results, SerialExecutor(), (p, "prove", "milp", {}, total, 0),
                      lambda item, why: None)
    t1 = time.time()
    assert seen and all(t0 + unions.UNION_SHARE * (total - t1) <= d <= t1 + unions.UNION_SHARE * (total - t0)
                        for d in seen)
    assert unions.UNION_SHARE < 1
