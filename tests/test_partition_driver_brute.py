"""The whole partition driver against brute force (issue 24): ``solve_partitioned`` with every pass it
runs on many partitions (the attack, the first decision pass with its split at a hidden layer, the attack
again, the union pass, the per-partition solves, the decision passes after them), on tiny networks biased
toward ties and plateaus (weights and biases multiples of 1/4; the second hidden layer's biases pushed
down so that most of its neurons are dead on most partitions, where the output is constant). Every
partition proved fair holds no unfair individual, every refuted one holds one, the reported witness
replays, and the certified / falsified shares never exceed the true fair / unfair shares. Only the
verdicts are checked, never how many are decided in the budget (no timing)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from conftest import protected_weight_net
from fairspec.backends.milp.partition import fairify_partitions, solve_partitioned
from fairspec.backends.pair import PairProblem, check_witness, is_violation
from fairspec.models.network import Layer, PLNet
from fairspec.runtime.executor import SerialExecutor

LO, HI = [0, 0, 0, 0], [31, 31, 15, 1]          # three individual inputs, the protected one last


def _plateau_net(seed: int, weight: float, shift: float) -> PLNet:
    net = protected_weight_net(seed, weight, True, seed % 2 == 0, name="driver", hidden=(6, 5, 3))
    layers = list(net.layers)
    W, b, relu = layers[1].W, layers[1].b, layers[1].relu
    layers[1] = Layer(W, b - shift, relu)       # shift is a multiple of 1/4: the grid's ties stay
    return PLNet(tuple(layers), 0, net.final, f"driver-{seed}")


def _unfair(p: PairProblem, t) -> bool:
    x, xp = np.array([*t, 0.0]), np.array([*t, 1.0])
    return bool(check_witness(p, x, xp, p.net.forward) or check_witness(p, xp, x, p.net.forward))


def _pts(lo, hi):
    return itertools.product(*(range(int(lo[i]), int(hi[i]) + 1) for i in range(3)))


def _unfair_set(p: PairProblem) -> set:
    """Every unfair individual of the domain, the whole grid's forward in two batches: the pairs (t, 0),
    (t, 1) meet the pre-condition by construction (integral, in the domain, only the protected input
    differs), so what check_witness adds for them is the post, judged here by the same is_violation
    in both orders. A sample of individuals is re-judged one pair at a time by check_witness (_unfair)."""
    T = np.array(list(_pts(LO, HI)), dtype=np.float64)
    z0 = p.net.forward(np.hstack([T, np.zeros((len(T), 1))]))
    z1 = p.net.forward(np.hstack([T, np.ones((len(T), 1))]))
    bad = (is_violation(p.post, p.eps, z0, z1, p.eps_strict) | is_violation(p.post, p.eps, z1, z0, p.eps_strict))
    unfair = {tuple(int(v) for v in t) for t in T[np.asarray(bad, dtype=bool)]}
    rng = np.random.default_rng(0)
    sample = [tuple(int(v) for v in T[i]) for i in rng.choice(len(T), 300, replace=False)]
    sample += sorted(unfair)[:100]
    for t in sample:
        assert _unfair(p, t) == (t in unfair), t
    return unfair


#: the case whose attack keeps the shipped heavy round (HEAVY_BOXES): 132 of its 256 partitions refuted by the light
#: rounds, 124 left, so the heavy round's seeded sample (partition.HEAVY_PROBE boxes) goes first; it refutes none,
#: and the rest wait for the first decision pass (which decides them all)
HEAVY_CASE = (4, "prob")
CASES = [(seed, w, shift, post) for seed, w, shift in ((1, 0.25, 2.0), (3, 1.0, 4.0), (4, 3.0, 1.0))
         for post in ("label", "logit", "prob")]


@pytest.mark.parametrize("seed,weight,shift,post", CASES)
def test_every_decided_partition_and_share_agrees_with_brute_force(seed, weight, shift, post, monkeypatch):
    import fairspec.backends.milp.falsify as fz
    import fairspec.backends.milp.partition as part

    if (seed, post) != HEAVY_CASE:
        # the attack's heavy round (16,384 points x 200 steps per box, run while at most HEAVY_BOXES
        # boxes are left) is skipped (all but one case leave more than 64): its sample refutes none in
        # these cases and the first decision pass decides the rest (the same verdicts, measured); HEAVY_CASE
        # and the case below keep it, and test_partition_reach checks every round's witnesses per box
        monkeypatch.setattr(fz, "HEAVY_BOXES", 64)
    out = _against_brute_force(seed, weight, shift, post)
    if (seed, post) == HEAVY_CASE:  # the shipped path: the sample refutes none, the rest put off
        heavy = out.stats["attack_heavy"]
        assert heavy["probe"] == part.HEAVY_PROBE and heavy["probe_refuted"] == 0 and heavy["deferred"] > 0, heavy


#: a case whose heavy round's sample refutes some once the light rounds are cut to one tiny round
SAMPLE_REFUTES = (3, 1.0, 4.0, "label")


def test_a_sample_that_refutes_sends_the_rest_to_the_heavy_round_at_once_against_brute_force(monkeypatch):
    """The heavy round's other path: its sample refutes at least HEAVY_PROBE_HITS of itself, so every box the
    light rounds left gets the round before the first decision pass. The light rounds are cut to one round of
    4 points per box (unfair boxes are left to the heavy round) and the heavy round to 1,024 points x 30 steps
    (the path, not the round's size, is under test here; its cost on 252 boxes is not the check)."""
    import fairspec.backends.milp.falsify as fz
    import fairspec.backends.milp.partition as part

    monkeypatch.setattr(fz, "LIGHT_ROUNDS", ((4, 2, 1),))
    monkeypatch.setattr(fz, "HEAVY_ROUNDS", ((1024, 30, 16),))
    out = _against_brute_force(*SAMPLE_REFUTES)
    heavy = out.stats["attack_heavy"]
    assert heavy["probe"] == part.HEAVY_PROBE and heavy["probe_refuted"] >= part.HEAVY_PROBE_HITS * part.HEAVY_PROBE
    assert heavy["deferred"] == 0 and heavy["boxes"] > heavy["probe"] and heavy["refuted"] > heavy["probe_refuted"]


def _against_brute_force(seed, weight, shift, post):
    """solve_partitioned on 256 partitions, every decided partition, the verdict and the shares judged
    against brute force; the result."""
    p = PairProblem(_plateau_net(seed, weight, shift), lo=LO, hi=HI, integer=[True] * 4, free=(3,), post=post,
                    eps={"logit": 0.25, "prob": 0.0625}.get(post, 0.0), eps_strict=seed % 3 == 0)
    parts = fairify_partitions(p, threshold=4)     # 8 x 8 x 4 = 256 partitions of 64 individuals (then bounds, not
    #                                                  enumeration alone, decide them: refine.ENUM_POINTS)
    assert len(parts) >= 64                                # so the first decision pass runs
    unfair = _unfair_set(p)
    out = solve_partitioned(p, "prove", parts, time_per_part=5.0, time_limit=300.0, executor=SerialExecutor())
    statuses = [st for st, _ in out.coverage.parts]
    assert len(statuses) == len(parts)
    for (lo, hi), st in zip(parts, statuses):
        bad = [t for t in _pts(lo, hi) if t in unfair]
        if st == "holds":
            assert not bad, f"a partition proved fair holds unfair individuals {bad[:3]}"
        elif st == "violated":
            assert bad, "a refuted partition holds no unfair individual"
    if out.status == "violated":
        assert unfair and check_witness(p, np.asarray(out.witness.x), np.asarray(out.witness.x_prime), p.net.forward)
    elif out.status == "holds":
        assert not unfair
    sh = out.coverage.shares
    total = 32 * 32 * 16
    assert Fraction(sh.certified) <= Fraction(total - len(unfair), total)
    assert Fraction(sh.falsified) <= Fraction(len(unfair), total)
    return out
