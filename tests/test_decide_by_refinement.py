"""The decision pass by refinement (fairspec.backends.refine.decide_partitions, issue 24): partitions
the MILP passes left open, decided by sub-boxes proved fair / enumerated (holds with one certify Proof
that the sub-boxes tile the partition) or by an unfair individual whose pair replays (violated).
Against brute force on tiny networks biased toward ties (dyadic weights, zero logits); and certify's
tiling check (fairspec.certify.tiling) refuses a gap, an overlap, a tile outside, a wrong Proof."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fairspec.backends.milp.partition import fairify_partitions, solve_partitioned
from fairspec.backends.pair import PairProblem, check_witness
from fairspec.backends.refine import decide_partitions
from fairspec.certify.tiling import prove_tiled, prove_tiled_many, tiles_partition
from conftest import protected_weight_net
from fairspec.models.network import PLNet

LO, HI = [0, 0, 0, 0], [7, 6, 5, 1]      # three individual inputs, the protected one last


def _net(seed: int, weight: float, zero_bias: bool) -> PLNet:
    """Weights and biases multiples of 1/4 (many logits exactly 0 on the integer grid), the protected
    input's first-layer weights scaled by ``weight``."""
    return protected_weight_net(seed, weight, True, zero_bias, name="decide-test")


def _unfair(p: PairProblem, t) -> bool:
    x, xp = np.array([*t, 0.0]), np.array([*t, 1.0])
    return bool(check_witness(p, x, xp, p.net.forward) or check_witness(p, xp, x, p.net.forward))


def _pts(lo, hi):
    return itertools.product(*(range(int(lo[i]), int(hi[i]) + 1) for i in range(3)))


CASES = [(seed, w, post) for seed in (1, 2, 3, 4, 5, 6) for w in (0.25, 1.0, 3.0) for post in ("label", "logit", "prob")]


@pytest.mark.parametrize("seed,weight,post", CASES)
def test_decided_partitions_agree_with_brute_force(seed, weight, post):
    p = PairProblem(_net(seed, weight, zero_bias=seed % 2 == 0), lo=LO, hi=HI, integer=[True] * 4, free=(3,),
                    post=post, eps={"logit": 0.25, "prob": 0.0625}.get(post, 0.0), eps_strict=seed % 3 == 0)
    parts = fairify_partitions(p, threshold=3)          # 3 x 3 x 2 = 18 partitions
    # tiny batches and enumeration only of tiny boxes: bounds, splits and enumeration all run
    decs = decide_partitions(p, parts, seconds=3600, batch=4, enum_points=4)
    assert len(decs) == len(parts)
    for (lo, hi), d in zip(parts, decs):
        bad = [t for t in _pts(lo, hi) if _unfair(p, t)]
        assert d.status != "open", d.reason              # no budget limit: every partition is decided
        if d.status == "fair":
            assert not bad, "a partition proved fair holds an unfair individual"
            assert d.proof is not None and d.proof.method in ("interval", "enumeration")
            assert d.proof.detail["points"] == len(list(_pts(lo, hi)))
        else:
            assert bad, "a partition refuted holds no unfair individual"
            x, xp = d.pair
            assert np.all(x >= lo) and np.all(x <= hi) and np.all(xp >= lo) and np.all(xp <= hi)
            assert check_witness(p, x, xp, p.net.forward), "the refuting pair does not replay"


def _flagged_runtime(p: PairProblem, flag):
    """``p`` with a runtime whose batch scorer is the network's float64 forward and whose ``unsure``
    flags the individuals ``flag(t)`` says (feature-space points: what a float runtime may score
    otherwise in another batch)."""
    from dataclasses import replace

    from fairspec.backends.pair.certify import BatchScorer, Runtime

    def fn(X):
        return np.asarray(p.net.forward(X), dtype=np.float64).reshape(-1)

    def unsure(points, scores, pairs):
        return np.array([flag(tuple(x[:3])) for x in points[0]], dtype=bool)

    post = "prob-of-logit" if p.post == "prob" else p.post
    return replace(p, runtime=Runtime(p.net, None, ("logit", 0), "float64", scores=BatchScorer(fn, post, 0, unsure)))


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_an_individual_another_batch_may_decide_otherwise_is_neither_fair_nor_unfair(seed):
    """The enumeration's count on a float runtime (torch, scikit-learn): an individual whose pair lies
    within the runtime's rounding of the threshold (``BatchScorer.unsure``) proves nothing, so a
    partition holding one is never proved fair; it is refuted by it only when its pair replays. Here
    the flagged individuals are those at the logit difference's maximum, eps set to it: ``<=`` leaves
    their partitions open, ``<`` refutes them with a replayed pair at the tie; the other partitions
    are decided as brute force says."""
    base = PairProblem(_net(seed, 1.0, zero_bias=True), lo=LO, hi=HI, integer=[True] * 4, free=(3,), post="logit",
                       eps=1000.0)

    def diff(t):
        return abs(float(base.net.forward(np.array([[*t, 0.0]]))[0]) - float(base.net.forward(np.array([[*t, 1.0]]))[0]))

    top = max(diff(t) for t in _pts(LO, HI))
    tied = {t for t in _pts(LO, HI) if diff(t) == top}
    for strict in (False, True):
        p = _flagged_runtime(PairProblem(base.net, lo=LO, hi=HI, integer=[True] * 4, free=(3,), post="logit",
                                         eps=top, eps_strict=strict), lambda t: t in tied)
        parts = fairify_partitions(p, threshold=3)
        decs = decide_partitions(p, parts, seconds=3600, batch=4, enum_points=4)
        for (lo, hi), d in zip(parts, decs):
            inside = [t for t in _pts(lo, hi) if t in tied]
            bad = [t for t in _pts(lo, hi) if _unfair(p, t)]
            if not strict:
                assert not bad
                assert d.status == ("open" if inside else "fair"), (lo, hi, d)
            elif bad and not set(bad) <= tied:
                assert d.status == "unfair"
            elif bad:
                # only tied individuals break it: refuted by one of them, its pair replayed
                assert d.status == "unfair", (lo, hi, d)
                assert tuple(d.pair[0][:3]) in tied and check_witness(p, *d.pair, p.net.forward)
            else:
                assert d.status == "fair"


def test_pass_in_solve_partitioned_flips_open_partitions(monkeypatch):
    """Partitions every MILP pass leaves open (a stub in place of the solvers, whatever the machine's
    speed) are decided by the pass; the verdicts match brute force."""
    import fairspec.backends.milp.partition as part
    from fairspec.backends.pair import PairResult

    monkeypatch.setattr(part, "_solve_part", lambda shared, item: PairResult("unknown", reason="stub"))
    p = PairProblem(_net(7, 1.0, zero_bias=False), lo=LO, hi=HI, integer=[True] * 4, free=(3,), post="label")
    parts = fairify_partitions(p, threshold=4)        # 8 partitions, 2 of them hold an unfair individual
    res = solve_partitioned(p, "prove", parts=parts, time_per_part=1.0, time_limit=3600.0, falsify=False,
                            unions=False, decide_share=0.0, executor=_serial())
    assert res.stats["refine_decided"] == {} and res.coverage.undecided == len(parts)
    res = solve_partitioned(p, "prove", parts=parts, time_per_part=1.0, time_limit=3600.0, falsify=False,
                            unions=False, retries=(("bab", 1.0),), decide_share=0.5, executor=_serial())
    counts = res.stats["refine_decided"]
    assert counts["tried"] == len(parts) and counts["open"] == 0 and counts["decided"] == list(range(len(parts)))
    truth = [any(_unfair(p, t) for t in _pts(lo, hi)) for lo, hi in parts]
    assert any(truth) and not all(truth)
    for (st, _), bad in zip(res.coverage.parts, truth):
        assert st == ("violated" if bad else "holds")
    assert res.status == "violated" and check_witness(p, *res.witness, p.net.forward)


def _serial():
    from fairspec.runtime.executor import SerialExecutor

    return SerialExecutor()


# ----------------------------------------------------------------------------------------------
# certify's tiling check
# ----------------------------------------------------------------------------------------------

def _fair_proof(LO_, HI_):
    """A real interval Proof of decide_boxes over boxes a network with zero weights proves fair."""
    from fairspec.certify.boxes import decide_boxes

    layers = [(np.zeros((2, 3)), np.zeros(2), True), (np.zeros((1, 2)), -np.ones(1), False)]
    dec = decide_boxes(layers, LO_, HI_, [{2: 0.0}, {2: 1.0}], [(0, 1), (1, 0)], post="label", errors=[0.0, 0.0],
                       complete=True, claim_fair="fair", claim_unfair="unfair", keep_boxes=True,
                       integer=np.array([True] * 3), precision="float64")
    assert np.all(dec.status == 1)
    return dec.fair_proof


def test_tiling_check_accepts_a_guillotine_tiling_and_refuses_gaps_and_overlaps():
    lo, hi = np.array([0.0, 0.0, 0.0]), np.array([7.0, 3.0, 1.0])
    good = (np.array([[0, 0, 0], [4, 0, 0], [4, 2, 0]], float), np.array([[3, 3, 1], [7, 1, 1], [7, 3, 1]], float))
    assert tiles_partition(lo, hi, *good)
    pr = _fair_proof(*good)
    assert prove_tiled(lo, hi, [True] * 3, [(good[0], good[1], pr)], claim="c") is not None
    gap = (good[0][:2], good[1][:2])
    assert not tiles_partition(lo, hi, *gap)
    assert prove_tiled(lo, hi, [True] * 3, [(gap[0], gap[1], _fair_proof(*gap))], claim="c") is None
    # an overlap: the second tile grown by one value into the first (the count too large)
    over = (np.array([[0, 0, 0], [3, 0, 0], [4, 2, 0]], float), good[1])
    assert not tiles_partition(lo, hi, *over)
    assert prove_tiled(lo, hi, [True] * 3, [(over[0], over[1], _fair_proof(*over))], claim="c") is None
    # an overlap that keeps the count: one tile twice, another left out
    dup = (np.array([[0, 0, 0], [0, 0, 0], [4, 2, 0]], float), np.array([[3, 3, 1], [3, 3, 1], [7, 3, 1]], float))
    assert not tiles_partition(lo, hi, *dup)
    # a tile outside the box
    out = (np.array([[0, 0, 0], [4, 0, 0], [4, 2, 0]], float), np.array([[3, 3, 1], [7, 1, 1], [8, 3, 1]], float))
    assert not tiles_partition(lo, hi, *out)
    # a non-guillotine (pinwheel) tiling is refused, never accepted wrongly
    pin_lo = np.array([[0, 0, 0], [2, 0, 0], [1, 2, 0], [0, 1, 0], [1, 1, 0]], float)
    pin_hi = np.array([[1, 0, 1], [2, 1, 1], [2, 2, 1], [0, 2, 1], [1, 1, 1]], float)
    assert not tiles_partition(np.array([0.0, 0.0, 0.0]), np.array([2.0, 2.0, 1.0]), pin_lo, pin_hi)


def test_tiling_check_refuses_tiles_its_proof_does_not_cover():
    lo, hi = np.array([0.0, 0.0, 0.0]), np.array([7.0, 3.0, 1.0])
    a = (np.array([[0, 0, 0]], float), np.array([[3, 3, 1]], float))
    b = (np.array([[4, 0, 0]], float), np.array([[7, 3, 1]], float))
    pa, pb = _fair_proof(*a), _fair_proof(*b)
    assert prove_tiled(lo, hi, [True] * 3, [(a[0], a[1], pa), (b[0], b[1], pb)], claim="c") is not None
    # b's tile under a's proof: refused
    assert prove_tiled(lo, hi, [True] * 3, [(a[0], a[1], pa), (b[0], b[1], pa)], claim="c") is None
    # an unfair-side proof, or no Proof at all: refused
    assert prove_tiled(lo, hi, [True] * 3, [(a[0], a[1], pa), (b[0], b[1], "proof")], claim="c") is None


def test_tiling_check_of_many_boxes_reads_a_shared_proof_once_and_checks_each_box_alone():
    """prove_tiled_many (the decision pass's one call for all its partitions, one batch Proof shared
    by many of them): the same answer as prove_tiled box by box -- a box whose tiles the shared Proof
    covers is proved, a box with a tile it does not cover, a gap, or another Proof's tile is refused,
    whatever the boxes before it were."""
    lo, hi = np.array([0.0, 0.0, 0.0]), np.array([7.0, 3.0, 1.0])
    a = (np.array([[0, 0, 0]], float), np.array([[3, 3, 1]], float))
    b = (np.array([[4, 0, 0]], float), np.array([[7, 3, 1]], float))
    shared = _fair_proof(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))   # one batch, both tiles
    other = _fair_proof(*a)
    items = [(a[0][0], a[1][0], [(a[0], a[1], shared)]),               # box = tile a: proved
             (b[0][0], b[1][0], [(b[0], b[1], shared)]),               # box = tile b: proved
             (lo, hi, [(a[0], a[1], shared), (b[0], b[1], shared)]),   # both tiles: proved
             (lo, hi, [(a[0], a[1], shared)]),                         # a gap: refused
             (b[0][0], b[1][0], [(b[0], b[1], other)]),                # b under a Proof of a only: refused
             (lo, hi, [(a[0], a[1], shared), (b[0], b[1], other)])]    # the same inside a tiling: refused
    many = prove_tiled_many(items, [True] * 3, claim="c")
    one = [prove_tiled(l, h, [True] * 3, g, claim="c") for l, h, g in items]
    assert [m is not None for m in many] == [o is not None for o in one] == [True, True, True, False, False, False]
    assert all(m.method == "interval" and m.detail["tiles"] == o.detail["tiles"] for m, o in zip(many, one) if m)
    assert prove_tiled_many([], [True] * 3, claim="c") == []


def test_tiling_check_reads_enumeration_counts():
    from fairspec.certify.enumerate import count_individuals

    lo, hi = np.array([0.0, 0.0, 0.0]), np.array([1.0, 1.0, 1.0])
    L, H = np.array([[0, 0, 0], [1, 0, 0]], float), np.array([[0, 1, 1], [1, 1, 1]], float)
    s = np.zeros(4)
    ok = count_individuals([s, s], [(0, 1), (1, 0)], "logit", eps=0.5, claim="c", _boxes=(L, H)).proof
    assert prove_tiled(lo, hi, [True] * 3, [(L, H, ok)], claim="c", individual=(0, 1)) is not None
    # counted over every input (8 points) the enumeration's 4 individuals do not add up: refused
    assert prove_tiled(lo, hi, [True] * 3, [(L, H, ok)], claim="c") is None
    bad = count_individuals([s, np.array([0, 0, 0, 1.0])], [(0, 1), (1, 0)], "logit", eps=0.5, claim="c",
                            _boxes=(L, H)).proof
    assert prove_tiled(lo, hi, [True] * 3, [(L, H, bad)], claim="c", individual=(0, 1)) is None   # one unfair
