"""The first attack's heavy round (16,384 points x 200 steps per box) and the first decision pass: which
boxes the heavy round attacks (issue 24, session 31). When the first decision pass is to run, the heavy
round goes first only to a seeded sample of HEAVY_PROBE boxes; when the sample refutes none, the rest wait
for the pass, and only what the pass leaves is attacked (GC-2 sex / GC-5 age eps: 13-15 CPU s of the round
on 201 boxes refuting none, where the pass proves 200 in a second). Counts of boxes attacked, never
timing; verdicts against brute force."""

from __future__ import annotations

import numpy as np

import fairspec.backends.milp.falsify as falsify
import fairspec.backends.milp.partition as part
from fairspec.backends.milp.partition import fairify_partitions, solve_partitioned
from fairspec.backends.pair import PairProblem, PairResult
from fairspec.runtime.executor import SerialExecutor
from test_partition_passes import _problem, _verdicts_true


def _spy(monkeypatch) -> list:
    """(points per box, boxes) of every round the attack runs."""
    ran = []
    real = falsify._falsify

    def spy(problem, parts_, samples, *a, **k):
        ran.append((samples, len(parts_)))
        return real(problem, parts_, samples, *a, **k)

    monkeypatch.setattr(falsify, "_falsify", spy)
    return ran


def _heavy(ran) -> int:
    return sum(n for s, n in ran if s > falsify.HEAVY_SAMPLES)


def test_boxes_the_bounds_prove_are_not_given_the_heavy_round(monkeypatch):
    p = _problem(3, weight=0.0)                 # the protected input has no weight: every box is fair
    parts = fairify_partitions(p, threshold=4)  # 8 x 8 x 4 = 256 partitions: at most HEAVY_BOXES, at least
    assert part.DECIDE_FIRST_MIN <= len(parts) <= falsify.HEAVY_BOXES     # DECIDE_FIRST_MIN
    ran = _spy(monkeypatch)
    res = solve_partitioned(p, "prove", parts=parts, time_per_part=5.0, time_limit=600.0,
                            executor=SerialExecutor())
    assert res.status == "holds" and res.how == "proved"
    # the light rounds refuted none; the heavy round went to its sample only, and the first decision pass
    # proved every other box before it could reach them (before: all 256)
    assert _heavy(ran) == part.HEAVY_PROBE
    heavy = res.stats["attack_heavy"]
    assert heavy["probe"] == part.HEAVY_PROBE and heavy["probe_refuted"] == 0
    assert heavy["deferred"] == len(parts) - part.HEAVY_PROBE and heavy.get("after", 0) == 0
    assert res.stats["refine_decided"]["passes"]["first"]["proved"] == len(parts)


def _weak_light_rounds(monkeypatch):
    """The light rounds with the box centres only (so they leave unfair boxes to the heavy round)."""
    monkeypatch.setattr(falsify, "LIGHT_ROUNDS", ((0, 0, 1),))


def test_a_sample_that_refutes_lets_the_heavy_round_run_before_the_first_pass(monkeypatch):
    """AC-4 race eps: the heavy round refutes 92 of the 191 boxes the light rounds leave; a sample that
    refutes runs it on every box left, before the first decision pass, as before."""
    checked = 0
    for seed in (1, 2, 4, 5):
        p = _problem(seed)
        parts = fairify_partitions(p, threshold=8)                  # 4 x 4 x 2 = 32 partitions
        _weak_light_rounds(monkeypatch)
        monkeypatch.setattr(part, "DECIDE_FIRST_MIN", 16)
        monkeypatch.setattr(part, "HEAVY_PROBE", 4)
        monkeypatch.setattr(part, "_solve_part", lambda shared, item: PairResult("unknown", reason="stub"))
        ran = _spy(monkeypatch)
        res = solve_partitioned(p, "prove", parts=parts, time_per_part=1.0, time_limit=600.0, unions=False,
                                retries=(("bab", 1.0),), executor=SerialExecutor())
        heavy = res.stats["attack_heavy"]
        _verdicts_true(p, parts, [st for st, _ in res.coverage.parts])
        if heavy is None or "probe" not in heavy:
            continue                                                # the centres left too few for a sample
        left = heavy["boxes"] if heavy["probe_refuted"] else heavy["probe"] + heavy["deferred"]
        if heavy["probe_refuted"]:
            # it paid: the sample, then every other box left, before the first decision pass
            assert heavy["deferred"] == 0 and "after" not in heavy
            assert [n for s, n in ran if s > falsify.HEAVY_SAMPLES] == [4, left - 4]
            checked += 1
        else:
            assert heavy["deferred"] == left - 4
    assert checked       # not vacuous: some seed's sample refutes


def test_without_the_first_pass_the_heavy_round_runs_on_every_box_left(monkeypatch):
    """Fewer boxes left than DECIDE_FIRST_MIN (GC-1 age sign: 3): no first decision pass, so the heavy
    round attacks every box left at once (the streams of one attack: the witnesses are as before)."""
    p = _problem(2)
    parts = fairify_partitions(p, threshold=8)                      # 32 partitions, fewer than DECIDE_FIRST_MIN
    _weak_light_rounds(monkeypatch)
    monkeypatch.setattr(part, "_solve_part", lambda shared, item: PairResult("unknown", reason="stub"))
    ran = _spy(monkeypatch)
    res = solve_partitioned(p, "prove", parts=parts, time_per_part=1.0, time_limit=600.0, unions=False,
                            retries=(("bab", 1.0),), executor=SerialExecutor())
    heavy = res.stats["attack_heavy"]
    light = [k for k, w in enumerate(falsify.falsify_boxes(p, parts, rounds=((0, 0, 1),))) if w is None]
    assert heavy == {"boxes": len(light), "refuted": heavy["refuted"]} and "probe" not in heavy
    assert [n for s, n in ran if s > falsify.HEAVY_SAMPLES] == [len(light)]
    # the same witnesses as one attack whose heavy round follows its light rounds (seed + round)
    one = falsify.falsify_boxes(p, parts, rounds=((0, 0, 1),) + falsify.HEAVY_ROUNDS)
    assert heavy["refuted"] == sum(w is not None for w in one) - (len(parts) - len(light))
    for k, w in enumerate(one):
        r = res.coverage.parts[k][0]
        if w is not None:
            assert r == "violated"
    _verdicts_true(p, parts, [st for st, _ in res.coverage.parts])
    assert np.isfinite(res.seconds)


def test_a_tree_ensemble_has_no_heavy_round():
    """A tree ensemble's partitions are not attacked (falsify works on networks): no heavy round, None."""
    from fairspec.backends.milp.partition import split_widest
    from fairspec.backends.trees.space import fold
    from fairspec.models.trees import random_ensemble

    lo, hi = np.zeros(3), np.full(3, 12.0)
    ens = random_ensemble(1, 3, 3, 3, "identity", lo, hi)
    prob = PairProblem(fold(ens, lo, hi, np.ones(3, bool)), lo, hi, np.ones(3, bool), (), (0,))
    res = solve_partitioned(prob, "prove", split_widest(prob, 4), time_per_part=None, executor=SerialExecutor())
    assert res.stats["attack_heavy"] is None and res.stats["attack_refuted"] == 0
