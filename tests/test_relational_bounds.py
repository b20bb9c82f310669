"""The relational bound of certify.boxes (issue 24, "tight"): both copies of an individual propagated at
once (ReluDiff's interval rule), so a box is proved fair for the logit / prob posts where the per-copy
bounds cannot. Against brute force on tiny networks biased toward ties (dyadic weights, whose float64
forward is exact so E = 0; protected first-layer weights exactly zero on some neurons; a three-valued
protected input); and the first decision pass of solve_partitioned (before any per-partition solve)
against brute force with the solvers stubbed out."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from conftest import protected_weight_net
from fairspec.certify.boxes import box_bounds, decide_boxes, relational_bounds
from fairspec.certify.enumerate import count_individuals
from fairspec.certify.network import as_layers
from fairspec.models.network import Layer, PLNet

CASES3 = [{3: 0.0}, {3: 1.0}, {3: 2.0}]
PAIRS3 = [(a, b) for a in range(3) for b in range(3) if a != b]


def _net(seed: int, weight: float) -> PLNet:
    """Dyadic weights (multiples of 1/4); the protected input (the last of four) with its first-layer
    weights scaled by ``weight`` and set to exactly zero on every other neuron."""
    net = protected_weight_net(seed, weight, True, False, name="rel-test", hidden=(6, 5))
    layers = list(net.layers)
    W = layers[0].W.copy()
    W[::2, 3] = 0.0
    layers[0] = Layer(W, layers[0].b, True)
    return PLNet(tuple(layers), 0, net.final, net.source)


def _points(lo, hi):
    return np.array(list(itertools.product(*(range(int(lo[j]), int(hi[j]) + 1) for j in range(3)))), dtype=float)


def _boxes(rng, n):
    LO = rng.integers(-4, 3, size=(n, 4)).astype(float)
    HI = LO + rng.integers(0, 5, size=(n, 4))
    LO[:, 3], HI[:, 3] = 0, 2
    return LO, HI


def _per_case(L, LO, HI):
    """Each protected value's per-layer pre-activation bounds over the boxes (box_bounds' ``keep``)."""
    per = []
    for c in CASES3:
        lo, hi = LO.copy(), HI.copy()
        lo[:, 3] = hi[:, 3] = c[3]
        keep = []
        box_bounds(L, lo, hi, keep=keep)
        per.append(keep)
    return per


@pytest.mark.parametrize("seed", range(8))
def test_relational_bounds_hold_every_individual(seed):
    """Every individual's exact difference of the two copies' outputs lies in the relational bounds."""
    rng = np.random.default_rng(seed)
    net = _net(seed, [0.25, 1.0, 3.0][seed % 3])
    L = as_layers(net)
    LO, HI = _boxes(rng, 24)
    per = _per_case(L, LO, HI)
    for a, b in PAIRS3:
        dlo = np.zeros_like(LO)
        dlo[:, 3] = CASES3[b][3] - CASES3[a][3]
        dl, du = relational_bounds(L, per[a], per[b], dlo, dlo.copy())
        for k in range(LO.shape[0]):
            pts = _points(LO[k], HI[k])
            za = net.forward(np.column_stack([pts, np.full(len(pts), CASES3[a][3])])).reshape(-1)
            zb = net.forward(np.column_stack([pts, np.full(len(pts), CASES3[b][3])])).reshape(-1)
            d = zb - za                                  # exact: dyadic weights, small integers
            assert np.all(d >= dl[k, 0]) and np.all(d <= du[k, 0]), (seed, a, b, k)


CASES = [(seed, post, strict) for seed in range(10) for post in ("logit", "prob") for strict in (False, True)]


@pytest.mark.parametrize("seed,post,strict", CASES)
def test_boxes_proved_fair_with_the_relational_bound_hold_no_unfair_individual(seed, post, strict):
    """decide_boxes with the relational bound: every box it proves fair holds no unfair individual
    (every individual under every protected value counted exactly by certify's enumeration); it proves
    every box the per-copy bounds prove, and on these nets more of them."""
    _decided(seed, post, strict)


def _decided(seed, post, strict):
    rng = np.random.default_rng(100 + seed)
    net = _net(seed, [0.25, 1.0, 3.0][seed % 3])
    L = as_layers(net)
    LO, HI = _boxes(rng, 48)
    eps = {"logit": 0.5, "prob": 0.125}[post]
    kw = dict(post=post, errors=[0.0] * 3, eps=eps, eps_strict=strict, readout=("logit", 0), integer=[True] * 4,
              precision="float64", complete=True, claim_fair="f", claim_unfair="u", keep_boxes=True)
    rel = decide_boxes(L, LO, HI, CASES3, PAIRS3, **kw)
    per = decide_boxes(L, LO, HI, CASES3, PAIRS3, relational=False, **kw)
    assert np.all(rel.status[per.status == 1] == 1)
    scored = "prob-of-logit" if post == "prob" else post
    for k in np.flatnonzero(rel.status == 1):
        pts = _points(LO[k], HI[k])
        S = [net.forward(np.column_stack([pts, np.full(len(pts), c[3])])).reshape(-1) for c in CASES3]
        res = count_individuals(S, PAIRS3, scored, eps=eps, eps_strict=strict, claim="c")
        assert not res.unfair.any(), (seed, k, "a box proved fair holds an unfair individual")
    assert rel.fair_proof is None or rel.fair_proof.detail["boxes"] == int((rel.status == 1).sum())
    return int((rel.status == 1).sum()), int((per.status == 1).sum())


def test_the_relational_bound_proves_boxes_per_copy_bounds_cannot():
    """Summed over the nets above, the relational bound proves strictly more boxes fair (so the tests
    above exercise it), and a protected input that feeds no neuron gives a difference of exactly 0."""
    more = 0
    for seed, post, strict in CASES:
        r, p = _decided(seed, post, strict)
        more += r - p
    assert more > 0
    net = _net(3, 0.0)                                   # the protected weights all 0
    L = as_layers(net)
    LO, HI = np.array([[0.0, 0, 0, 0]]), np.array([[7.0, 6, 5, 2]])
    per = _per_case(L, LO, HI)
    dlo = np.zeros_like(LO)
    dlo[:, 3] = 2.0
    dl, du = relational_bounds(L, per[0], per[2], dlo, dlo)
    assert dl[0, 0] <= 0 <= du[0, 0] and du[0, 0] - dl[0, 0] < 1e-12


def test_a_tile_the_relational_proof_did_not_prove_is_refused():
    """certify's tiling check takes a relational fair Proof only for the boxes it lists: a tile it did
    not prove (or a box widened after the proof) is refused."""
    from fairspec.certify.tiling import prove_tiled

    net = _net(1, 0.25)
    L = as_layers(net)
    LO = np.array([[0.0, 0, 0, 0], [4.0, 0, 0, 0]])
    HI = np.array([[3.0, 1, 1, 2], [7.0, 1, 1, 2]])
    kw = dict(post="logit", errors=[0.0] * 3, eps=8.0, readout=("logit", 0), integer=[True] * 4,
              precision="float64", complete=True, claim_fair="f", claim_unfair="u", keep_boxes=True)
    dec = decide_boxes(L, LO, HI, CASES3, PAIRS3, **kw)
    assert list(dec.status) == [1, 1]
    lo, hi = np.array([0.0, 0, 0, 0]), np.array([7.0, 1, 1, 2])
    ok = prove_tiled(lo, hi, [True] * 4, [(LO, HI, dec.fair_proof)], claim="c", individual=[0, 1, 2])
    assert ok is not None and ok.method == "interval"
    wide = HI.copy()
    wide[1, 1] = 2.0                                       # a tile the proof never saw
    assert prove_tiled(np.array([0.0, 0, 0, 0]), np.array([7.0, 2, 1, 2]), [True] * 4,
                       [(LO, wide, dec.fair_proof)], claim="c", individual=[0, 1, 2]) is None


def test_first_decision_pass_decides_before_any_solve(monkeypatch):
    """With many partitions, the first decision pass (before the union pass and the per-partition
    solves) decides them by bounds / enumeration; the stubbed solver sees only what it left; every
    verdict matches brute force."""
    import fairspec.backends.milp.partition as part
    from fairspec.backends.milp.partition import fairify_partitions, solve_partitioned
    from fairspec.backends.pair import PairProblem, PairResult, check_witness
    from fairspec.runtime.executor import SerialExecutor

    calls = []

    def stub(shared, item):
        calls.append(item[0])
        return PairResult("unknown", reason="stub")

    monkeypatch.setattr(part, "_solve_part", stub)
    net = protected_weight_net(7, 1.0, True, False, name="first-pass")
    p = PairProblem(net, lo=[0, 0, 0, 0], hi=[7, 6, 5, 1], integer=[True] * 4, free=(3,), post="label")
    parts = fairify_partitions(p, threshold=2)                # 4 x 4 x 3 = 48 partitions
    monkeypatch.setattr(part, "DECIDE_FIRST_MIN", 16)
    res = solve_partitioned(p, "prove", parts=parts, time_per_part=1.0, time_limit=3600.0, falsify=False,
                            unions=False, retries=(("bab", 1.0),), executor=SerialExecutor())
    counts = res.stats["refine_decided"]
    first = counts["passes"]["first"]
    assert first["tried"] == len(parts) and first["proved"] + first["refuted"] > 0
    assert not set(calls) & set(counts["decided"][:first["proved"] + first["refuted"]])

    def unfair(t):
        x, xp = np.array([*t, 0.0]), np.array([*t, 1.0])
        return bool(check_witness(p, x, xp, p.net.forward) or check_witness(p, xp, x, p.net.forward))

    for (lo, hi), (st, _) in zip(parts, res.coverage.parts):
        bad = any(unfair(t) for t in itertools.product(*(range(int(lo[i]), int(hi[i]) + 1) for i in range(3))))
        if st == "holds":
            assert not bad
        elif st == "violated":
            assert bad
