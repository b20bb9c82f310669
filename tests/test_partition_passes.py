"""The order of solve_partitioned's passes on many partitions (issue 24, AC-11): after the first
decision pass, the attack runs again with many more points per box on what that pass left, before the
union pass and the per-partition solves; its rounds end at one that refutes none. Tiny networks biased
toward ties (dyadic weights); verdicts against brute force; no timing."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest

import fairspec.backends.milp.falsify as falsify
import fairspec.backends.milp.partition as part
from conftest import protected_weight_net
from fairspec.backends.milp.partition import fairify_partitions, solve_partitioned
from fairspec.backends.pair import PairProblem, PairResult, check_witness, is_violation
from fairspec.runtime.executor import SerialExecutor


def _problem(seed: int, weight: float = 1.0) -> PairProblem:
    net = protected_weight_net(seed, weight, True, False, name="passes")
    return PairProblem(net, lo=[0, 0, 0, 0], hi=[31, 31, 15, 1], integer=[True] * 4, free=(3,), post="label")


def _unfair_at(p, t) -> bool:
    """Is the individual ``t`` unfair, judged one pair at a time by check_witness (in both orders)?"""
    x, xp = np.array([*t, 0.0]), np.array([*t, 1.0])
    return check_witness(p, x, xp, p.net.forward) or check_witness(p, xp, x, p.net.forward)


#: the unfair grid of each problem, by what it depends on: the network's weights, the post and eps
_GRIDS: dict = {}


def _key(p: PairProblem) -> tuple:
    net = p.net
    return (tuple((L.W.tobytes(), L.W.shape, L.b.tobytes(), L.relu) for L in net.layers), net.output_index,
            net.final, p.post, p.eps, p.eps_strict, tuple(p.lo), tuple(p.hi))


def _unfair_grid(p) -> np.ndarray:
    """Every individual of the domain (32 x 32 x 16), unfair or not: the whole grid's forward in two
    batches. The pairs (t, 0), (t, 1) meet the pre-condition by construction (integral, in the domain,
    only the protected input differs), so what check_witness adds for them is the post, judged here by
    the same is_violation in both orders. Computed once per problem (``_key``: all it depends on), and
    then 300 random individuals and up to 100 unfair ones are re-judged by check_witness."""
    key = _key(p)
    if key not in _GRIDS:
        shape = tuple(int(p.hi[i]) - int(p.lo[i]) + 1 for i in range(3))
        T = np.array(list(itertools.product(*(range(int(p.lo[i]), int(p.hi[i]) + 1) for i in range(3)))),
                     dtype=np.float64)
        z0 = p.net.forward(np.hstack([T, np.zeros((len(T), 1))]))
        z1 = p.net.forward(np.hstack([T, np.ones((len(T), 1))]))
        bad = np.asarray(is_violation(p.post, p.eps, z0, z1, p.eps_strict)
                         | is_violation(p.post, p.eps, z1, z0, p.eps_strict), dtype=bool)
        rng = np.random.default_rng(0)
        sample = list(rng.choice(len(T), 300, replace=False)) + list(np.flatnonzero(bad)[:100])
        for i in sample:
            assert _unfair_at(p, tuple(int(v) for v in T[i])) == bad[i], T[i]
        _GRIDS[key] = bad.reshape(shape)
    return _GRIDS[key]


def _unfair(p, lo, hi) -> bool:
    """Does the box [lo, hi] (of the first three inputs) hold an unfair individual? (``_unfair_grid``)"""
    g, o = _unfair_grid(p), [int(v) for v in p.lo[:3]]
    return bool(g[tuple(slice(int(lo[i]) - o[i], int(hi[i]) - o[i] + 1) for i in range(3))].any())


def _weak_first_attack(monkeypatch, calls):
    """The first attack with the box centres only (so it leaves unfair partitions) and without its heavy
    round, the second as is; each call's keyword arguments recorded."""
    real = part._attack

    def attack(problem, mode, parts, deadline, executor=None, **kw):
        record = dict(kw)
        if not kw:
            kw = {"rounds": ((0, 0, 1),)}
        hit = real(problem, mode, parts, deadline, executor, **kw)
        calls.append((len(parts), record, [(tuple(parts[j][0]), tuple(parts[j][1])) for j in hit]))
        return hit

    monkeypatch.setattr(part, "_attack", attack)
    monkeypatch.setattr(part, "_attack_keys", lambda *a: {})


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6, 7, 8])
def test_second_attack_runs_on_what_the_first_pass_left_and_its_witnesses_are_true(monkeypatch, seed):
    p = _problem(seed)
    parts = fairify_partitions(p, threshold=8)                  # 4 x 4 x 2 = 32 partitions of 512 individuals
    calls, solved = [], []

    def stub(shared, item):
        solved.append(item[0])
        return PairResult("unknown", reason="stub")

    _weak_first_attack(monkeypatch, calls)
    monkeypatch.setattr(part, "_solve_part", stub)
    monkeypatch.setattr(part, "DECIDE_FIRST_MIN", 16)
    monkeypatch.setattr(part, "DECIDE_FIRST_BOXES", (1,))       # the bounds at the root only: many left
    monkeypatch.setattr(part, "AGAIN_MIN", 1)
    monkeypatch.setattr(part, "AGAIN_SECONDS", 3600.0)
    res = solve_partitioned(p, "prove", parts=parts, time_per_part=1.0, time_limit=3600.0, unions=False,
                            retries=(("bab", 1.0),), executor=SerialExecutor())
    again = res.stats["attack_again_refuted"]
    first = res.stats["refine_decided"]["passes"]["first"]
    assert calls[0][:2] == (32, {})
    if first["open"]:
        # the second attack: once, on exactly what the first pass left, with its own rounds
        assert len(calls) == 2 and calls[1][0] == first["open"]
        assert calls[1][1]["rounds"] == part.AGAIN_ROUNDS and calls[1][1]["until_none"]
        assert again == len(calls[1][2])
        # when it refuted some, the decision rounds again on what is left (their own counts)
        passes = res.stats["refine_decided"]["passes"]
        # (the first pass is one round here, so its last round decided some iff the pass did)
        assert ("after the second attack" in passes) == (again > 0 and first["open"] > again
                                                          and first["proved"] + first["refuted"] > 0)
    else:
        assert len(calls) == 1 and again is None
    index = {(tuple(lo), tuple(hi)): k for k, (lo, hi) in enumerate(parts)}
    by_again = {index[b] for b in (calls[1][2] if len(calls) > 1 else [])}
    status = [st for st, _ in res.coverage.parts]
    assert all(status[k] == "violated" for k in by_again)
    # the per-partition solves never see a partition the second attack refuted
    assert not by_again & set(solved)
    _verdicts_true(p, parts, status)
    # the timeline: in order, every decided partition counted once, the seconds within the run's
    phases = res.stats["phases"]
    names = [ph["phase"] for ph in phases]
    order = ["attack", "first decision rounds", "second attack", "decision rounds after the second attack"]
    seen = [n for n in names if n in order]
    assert seen == sorted(seen, key=order.index) and "first decision rounds" in names
    if "second attack" in names:
        assert len(calls) == 2
    assert sum(ph["decided"] for ph in phases) == sum(st != "unknown" for st in status)
    assert all(ph["seconds"] >= 0 and ph["decided"] >= 0 for ph in phases)
    assert sum(ph["seconds"] for ph in phases) <= res.seconds + 0.01


def _verdicts_true(p, parts, status):
    """Every partition proved holds no unfair individual, every one refuted holds one (brute force)."""
    for k, st in enumerate(status):
        lo, hi = parts[k]
        if st == "holds":
            assert not _unfair(p, lo, hi)
        elif st == "violated":
            assert _unfair(p, lo, hi)


def test_second_attack_refutes_partitions_the_first_left():
    """Over the seeds of the test above, the second attack does refute something (the test is not vacuous)."""
    found = 0
    for seed in range(1, 9):
        p = _problem(seed)
        parts = fairify_partitions(p, threshold=8)
        left = [k for k, w in enumerate(falsify.falsify_boxes(p, parts, rounds=((0, 0, 1),))) if w is None]
        wits = falsify.falsify_boxes(p, [parts[k] for k in left], rounds=part.AGAIN_ROUNDS[:1], seed=4,
                                     heavy_boxes=part.AGAIN_MAX, until_none=True)
        for k, w in zip(left, wits):
            if w is not None:
                found += 1
                lo, hi = parts[k]
                assert np.all(np.asarray(w.x) >= lo) and np.all(np.asarray(w.x) <= hi)
                assert check_witness(p, np.asarray(w.x), np.asarray(w.x_prime), p.net.forward)
    assert found > 0


def test_attack_rounds_end_at_one_that_refutes_none(monkeypatch):
    p = _problem(3, weight=0.0)                 # the protected input has no weight: every box is fair
    parts = fairify_partitions(p, threshold=8)
    ran = []
    real = falsify._falsify

    def spy(problem, parts_, samples, *a, **k):
        ran.append(samples)
        return real(problem, parts_, samples, *a, **k)

    monkeypatch.setattr(falsify, "_falsify", spy)
    rounds = ((4, 1, 1), (8, 1, 1), (16, 1, 1))
    assert not any(falsify.falsify_boxes(p, parts, rounds=rounds, until_none=True))
    assert ran == [4]
    ran.clear()
    assert not any(falsify.falsify_boxes(p, parts, rounds=rounds))
    assert ran == [4, 8, 16]


def test_no_second_attack_without_the_first_pass_or_with_too_many_left(monkeypatch):
    p = _problem(2)
    parts = fairify_partitions(p, threshold=8)
    calls = []
    _weak_first_attack(monkeypatch, calls)
    monkeypatch.setattr(part, "_solve_part", lambda shared, item: PairResult("unknown", reason="stub"))
    # fewer partitions than DECIDE_FIRST_MIN: no first pass, so no second attack
    res = solve_partitioned(p, "prove", parts=parts, time_per_part=1.0, time_limit=3600.0, unions=False,
                            retries=(("bab", 1.0),), executor=SerialExecutor())
    assert len(calls) == 1 and res.stats["attack_again_refuted"] is None
    calls.clear()
    monkeypatch.setattr(part, "DECIDE_FIRST_MIN", 16)
    monkeypatch.setattr(part, "DECIDE_FIRST_BOXES", (1,))
    monkeypatch.setattr(part, "AGAIN_MIN", 1)
    monkeypatch.setattr(part, "AGAIN_MAX", 0)
    monkeypatch.setattr(part, "AGAIN_PROBE_HITS", 2.0)     # more than the sample: the probe never pays
    res = solve_partitioned(p, "prove", parts=parts, time_per_part=1.0, time_limit=3600.0, unions=False,
                            retries=(("bab", 1.0),), executor=SerialExecutor())
    left = res.stats["refine_decided"]["passes"]["first"]["open"]
    if left:    # too many left: only the probe ran (its first round, on its sample)
        assert len(calls) == 2 and calls[1][1]["rounds"] == part.AGAIN_ROUNDS[:1]
        assert res.stats["attack_again_refuted"] == (len(calls[1][2]) or None)
    else:
        assert len(calls) == 1 and res.stats["attack_again_refuted"] is None
    # too few left (fewer than AGAIN_MIN): the union pass and the solves take them, no second attack
    calls.clear()
    monkeypatch.setattr(part, "AGAIN_MIN", 10 ** 6)
    monkeypatch.setattr(part, "AGAIN_MAX", 10 ** 7)
    res = solve_partitioned(p, "prove", parts=parts, time_per_part=1.0, time_limit=3600.0, unions=False,
                            retries=(("bab", 1.0),), executor=SerialExecutor())
    assert len(calls) == 1 and res.stats["attack_again_refuted"] is None
    # the same with AGAIN_MIN met: it runs
    calls.clear()
    monkeypatch.setattr(part, "AGAIN_MIN", 1)
    monkeypatch.setattr(part, "AGAIN_SECONDS", 3600.0)
    res = solve_partitioned(p, "prove", parts=parts, time_per_part=1.0, time_limit=3600.0, unions=False,
                            retries=(("bab", 1.0),), executor=SerialExecutor())
    left = res.stats["refine_decided"]["passes"]["first"]["open"]
    assert len(calls) == (2 if left else 1)


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6, 7, 8])
def test_a_probe_that_pays_lets_the_second_attack_run_on_more_than_again_max(monkeypatch, seed):
    """More than AGAIN_MAX left: a sample of AGAIN_PROBE gets the first round; when it refutes at least
    AGAIN_PROBE_HITS of them, the second attack runs on every partition still open (its own rounds), and
    every partition refuted on the way holds an unfair individual."""
    p = _problem(seed)
    parts = fairify_partitions(p, threshold=8)
    calls = []
    _weak_first_attack(monkeypatch, calls)
    monkeypatch.setattr(part, "_solve_part", lambda shared, item: PairResult("unknown", reason="stub"))
    monkeypatch.setattr(part, "DECIDE_FIRST_MIN", 16)
    monkeypatch.setattr(part, "DECIDE_FIRST_BOXES", (1,))
    monkeypatch.setattr(part, "AGAIN_MIN", 1)
    monkeypatch.setattr(part, "AGAIN_MAX", 0)
    monkeypatch.setattr(part, "AGAIN_PROBE", 4)
    monkeypatch.setattr(part, "AGAIN_PROBE_HITS", 0.0)    # any sample pays
    monkeypatch.setattr(part, "AGAIN_SECONDS", 3600.0)
    res = solve_partitioned(p, "prove", parts=parts, time_per_part=1.0, time_limit=3600.0, unions=False,
                            retries=(("bab", 1.0),), executor=SerialExecutor())
    first = res.stats["refine_decided"]["passes"]["first"]
    if not first["open"]:
        assert len(calls) == 1
        return
    probe, full = calls[1], calls[2]
    assert probe[0] == min(4, first["open"]) and probe[1]["rounds"] == part.AGAIN_ROUNDS[:1]
    assert full[0] == first["open"] - len(probe[2]) and full[1]["rounds"] == part.AGAIN_ROUNDS
    assert res.stats["attack_again_refuted"] == len(probe[2]) + len(full[2])
    _verdicts_true(p, parts, [st for st, _ in res.coverage.parts])


def _scripted(monkeypatch, first_script, again_refutes, again_script):
    """solve_partitioned with the passes stubbed out: the decision rounds decide ``script[cap]`` open
    partitions each (holds), the first attack nothing, the second ``again_refutes`` (violated, a pair at
    the box's corner); returns the caps the rounds ran with, in order, and the result."""
    from fairspec.backends.pair import Witness

    p = _problem(1)
    parts = fairify_partitions(p, threshold=4)                  # 8 x 8 x 4 = 256 partitions
    seen = []

    def decide(problem, mode, parts_, results, ex, deadline, share, stop, fresh=False, boxes_each=None, budget=None):
        if not fresh:
            return None
        script = again_script if any(s[0] == "again" for s in seen) else first_script
        seen.append(("round", boxes_each))
        left = [k for k, r in enumerate(results) if r is None]
        n = min(script.get(boxes_each, 0), len(left))
        for k in left[:n]:
            results[k] = PairResult("holds", "proved", reason="stub", engine="refine", mode=mode)
        return {"tried": len(left), "proved": n, "refuted": 0, "open": len(left) - n, "seconds": 0.0,
                "decided": left[:n]}

    def attack(problem, mode, parts_, deadline, executor=None, **kw):
        if not kw:
            return {}
        seen.append(("again", len(parts_)))
        return {j: PairResult("violated", None, 1.0, None, Witness(list(parts_[j][0]), list(parts_[j][0]), 1.0, -1.0),
                              "stub", engine="attack", mode=mode) for j in range(min(again_refutes, len(parts_)))}

    monkeypatch.setattr(part, "_decide_pass", decide)
    monkeypatch.setattr(part, "_attack", attack)
    monkeypatch.setattr(part, "_attack_keys", lambda *a: {})          # the first attack's heavy round
    monkeypatch.setattr(part, "_solve_part", lambda shared, item: PairResult("unknown", reason="stub"))
    monkeypatch.setattr(part, "AGAIN_MIN", 1)
    res = solve_partitioned(p, "prove", parts=parts, time_per_part=1.0, time_limit=3600.0, unions=False,
                            retries=(("bab", 1.0),), executor=SerialExecutor())
    return seen, res


def test_rounds_go_on_while_they_decide_and_stop_at_one_that_decides_none(monkeypatch):
    seen, res = _scripted(monkeypatch, {16: 50, 128: 5, 1024: 1}, 0, {})
    assert seen == [("round", 16), ("round", 128), ("round", 1024), ("again", 200)]
    seen, res = _scripted(monkeypatch, {16: 50, 128: 0, 1024: 9}, 0, {})
    assert seen == [("round", 16), ("round", 128), ("again", 206)]     # the 128 round decided none: no 1,024


def test_rounds_again_after_the_second_attack_only_when_it_refuted_some(monkeypatch):
    # it refuted 6: the rounds again (1,024, 4,096, 16,384) on the rest, while they decide
    seen, res = _scripted(monkeypatch, {16: 50, 128: 5, 1024: 1}, 6, {1024: 3, 4096: 2, 16384: 0})
    assert seen == [("round", 16), ("round", 128), ("round", 1024), ("again", 200),
                    ("round", 1024), ("round", 4096), ("round", 16384)]
    assert res.stats["attack_again_refuted"] == 6
    passes = res.stats["refine_decided"]["passes"]
    assert passes["after the second attack"]["proved"] == 5
    seen, res = _scripted(monkeypatch, {16: 50, 128: 5, 1024: 1}, 6, {1024: 0, 4096: 7})
    assert seen[-2:] == [("again", 200), ("round", 1024)]              # a round that decides none ends them
    # it refuted none: no rounds again
    seen, res = _scripted(monkeypatch, {16: 50, 128: 5, 1024: 1}, 0, {1024: 3})
    assert seen[-1] == ("again", 200) and res.stats["attack_again_refuted"] == 0


def test_no_rounds_again_when_the_first_pass_last_round_decided_none(monkeypatch):
    # the 128 round decided none (the first rounds stop there); the attack refutes 6; the rounds again do
    # not run: more sub-boxes did not help before the attack, they are not tried again (AC-9 race eps)
    seen, res = _scripted(monkeypatch, {16: 50, 128: 0}, 6, {1024: 3})
    assert seen == [("round", 16), ("round", 128), ("again", 206)]
    assert res.stats["attack_again_refuted"] == 6
    assert "after the second attack" not in res.stats["refine_decided"]["passes"]


def test_prob_first_pass_is_a_branch_and_bound_sweep_then_longer_ones(monkeypatch):
    """prob on a network: the first per-partition pass is the branch and bound with PROB_FIRST of the
    budget, the first retries the branch and bound with growing budgets, then the MILP engines
    (PROB_RETRIES); label keeps RETRIES after its MILP first pass."""
    net = protected_weight_net(2, 1.0, True, False, name="passes")
    calls = []

    def stub(shared, item):
        kw = shared[3]
        calls.append((kw.get("engine"), kw.get("time_limit")))
        return PairResult("unknown", reason="stub")

    class PassesTakeTime(SerialExecutor):
        """Every pass (one map over the partitions) takes time: the timeline records it."""

        def map(self, fn, items, *a, **k):
            time.sleep(0.01)
            return super().map(fn, items, *a, **k)

    monkeypatch.setattr(part, "_solve_part", stub)
    monkeypatch.setattr(part, "_attack", lambda *a, **k: {})
    for post, eps in (("prob", 0.05), ("label", 0.0)):
        calls.clear()
        p = PairProblem(net, lo=[0, 0, 0, 0], hi=[31, 31, 15, 1], integer=[True] * 4, free=(3,), post=post, eps=eps)
        parts = fairify_partitions(p, threshold=8)
        res = solve_partitioned(p, "prove", parts=parts, time_per_part=10.0, time_limit=3600.0, unions=False,
                                decide_share=0.0, executor=PassesTakeTime())
        n = len(parts)
        passes = [calls[j] for j in range(0, len(calls), n)]
        assert len(calls) % n == 0
        if post == "prob":
            assert passes[0] == ("bab", part.PROB_FIRST * 10.0)
            want = [(e, f * 10.0) for e, f in part.PROB_RETRIES if e != "max" or n <= part.MAX_LEFT]
            assert n > part.MAX_LEFT and passes[1:1 + len(want)] == want     # the falsifier skipped: too many
            babs = [t for e, t in passes if e == "bab"][:3]
            assert babs == sorted(babs) and len(set(babs)) == 3      # a sweep, then longer budgets
            # the two retries of the branch and bound are named by their budgets in the timeline
            assert {"retry, bab 0.3x", "retry, bab 1x"} <= {p["phase"] for p in res.stats["phases"]}
        else:
            assert passes[0][0] != "bab"
            assert passes[1:1 + len(part.RETRIES)] == [(e, f * 10.0) for e, f in part.RETRIES]


def test_prob_falsifier_pass_runs_when_few_partitions_are_left(monkeypatch):
    """prob: the best-first falsifier (``"max"``, PROB_RETRIES) runs after the branch and bound's first
    retry on what is left when at most MAX_LEFT partitions are open (GC-2 sex eps's partition 0), and
    a partition it refutes is not retried."""
    net = protected_weight_net(2, 1.0, True, False, name="passes")
    calls = []

    def stub(shared, item):
        kw = shared[3]
        calls.append((kw.get("engine"), item[0]))
        if kw.get("engine") == "max" and item[0] == 1:
            from fairspec.backends.pair.problem import Witness
            return PairResult("violated", None, 1.0, None, Witness([0, 0, 0, 0], [0, 0, 0, 1], 1.0, -1.0), "stub")
        return PairResult("unknown", reason="stub")

    monkeypatch.setattr(part, "_solve_part", stub)
    monkeypatch.setattr(part, "_attack", lambda *a, **k: {})
    p = PairProblem(net, lo=[0, 0, 0, 0], hi=[31, 31, 15, 1], integer=[True] * 4, free=(3,), post="prob", eps=0.05)
    parts = fairify_partitions(p, threshold=8)[:3]
    res = solve_partitioned(p, "prove", parts=parts, time_per_part=10.0, time_limit=3600.0, unions=False,
                            decide_share=0.0, executor=SerialExecutor())
    engines = [e for e, _ in calls]
    first_max = engines.index("max")
    assert engines[first_max - 3:first_max] == ["bab"] * 3 and engines[first_max:first_max + 3] == ["max"] * 3
    assert [k for e, k in calls[first_max + 3:] if k == 1] == []
    assert res.coverage.refuted == 1 and res.stats["retry_decided"].get("max") == 1
