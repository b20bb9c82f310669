"""FairQuant's refinement inside undecided and refuted partitions (fairspec.backends.refine), against
brute force on tiny networks with small integer domains biased toward ties (dyadic weights, zero
logits): where the refinement finishes, the shares are the exact counts of fair and unfair
individuals; a sub-box proved fair holds no unfair individual, one proved unfair no fair one."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from fairspec.backends.pair import PairProblem, check_witness
from fairspec.backends.refine import refinable, refine_partitions
from fairspec.backends.quantify import count_shares, measure
from conftest import protected_weight_net
from fairspec.models.network import Layer, PLNet, random_net

LO, HI = [0, 0, 0, 0], [7, 6, 5, 1]      # three individual inputs, the protected one last


def _net(seed: int, weight: float, ties: bool, zero_bias: bool = False) -> PLNet:
    """A small ReLU net, the protected input's first-layer weights scaled by ``weight``; with ``ties``
    every weight and bias a multiple of 1/4 (many logits exactly 0 on the integer grid)."""
    return protected_weight_net(seed, weight, ties, zero_bias, name="refine-test")


def _points(lo, hi):
    return itertools.product(*(range(int(lo[i]), int(hi[i]) + 1) for i in range(3)))


def _unfair(p: PairProblem, t) -> bool:
    """Is the individual ``t`` unfair: does some ordered pair of its counterfactuals break the post?"""
    x, xp = np.array([*t, 0.0]), np.array([*t, 1.0])
    return bool(check_witness(p, x, xp, p.net.forward) or check_witness(p, xp, x, p.net.forward))


CASES = [(seed, w, ties, post) for seed in (1, 2, 3, 4, 5, 6) for w, ties in ((1.0, True), (3.0, True), (3.0, False), (8.0, False))
         for post in ("label", "logit", "prob")]


@pytest.mark.parametrize("seed,weight,ties,post", CASES)
def test_refined_shares_are_the_exact_counts(seed, weight, ties, post):
    p = PairProblem(_net(seed, weight, ties, zero_bias=seed % 2 == 0), lo=LO, hi=HI, integer=[True] * 4,
                    free=(3,), post=post, eps={"logit": 0.25, "prob": 0.0625}.get(post, 0.0), eps_strict=seed % 3 == 0)
    assert refinable(p) == ""
    truth = {t: _unfair(p, t) for t in _points(LO, HI)}
    total, bad = len(truth), sum(truth.values())
    parts = [(p.lo.copy(), p.hi.copy())]
    # small batches and enumeration only of tiny boxes, so that bounds, splits and enumeration all run
    ref = refine_partitions(p, parts, [None], seconds=3600, batch=4, enum_points=4)
    assert ref.reason == "" and ref.stats["left"] == 0
    n_f = n_u = 0
    for k, kind, lo, hi, nf, nu, proof in ref.decided:
        assert k == 0 and proof is not None
        pts = list(_points(lo, hi))
        if kind == "fair":
            assert proof.method == "interval"
            assert not any(truth[t] for t in pts), "a sub-box proved fair holds an unfair individual"
            n_f += len(pts)
        elif kind == "unfair":
            assert all(truth[t] for t in pts), "a sub-box proved unfair holds a fair individual"
            n_u += len(pts)
        else:
            assert proof.method == "enumeration"
            assert (nf, nu) == (sum(not truth[t] for t in pts), sum(truth[t] for t in pts))
            n_f, n_u = n_f + nf, n_u + nu
    assert n_f + n_u == total
    sh = count_shares(p, parts, [None], refined=ref.decided)
    assert sh.undecided == 0
    assert (sh.certified, sh.falsified) == (Fraction(total - bad, total), Fraction(bad, total))


def test_sub_boxes_are_disjoint_and_cover_the_partitions():
    p = PairProblem(_net(3, 3.0, True), lo=LO, hi=HI, integer=[True] * 4, free=(3,), post="label")
    from fairspec.backends.milp.partition import split_widest

    parts = split_widest(p, 3)
    ref = refine_partitions(p, parts, [None] * len(parts), seconds=3600, batch=2, enum_points=2)
    seen = {}
    for k, kind, lo, hi, *_ in ref.decided:
        for t in _points(lo, hi):
            assert t not in seen, "two sub-boxes share an individual"
            seen[t] = k
            plo, phi = parts[k]
            assert all(plo[i] <= t[i] <= phi[i] for i in range(3))
    assert len(seen) == measure(p)


def test_a_box_count_stops_the_refinement_and_leaves_the_rest_undecided():
    p = PairProblem(_net(1, 3.0, True), lo=LO, hi=HI, integer=[True] * 4, free=(3,), post="label")
    ref = refine_partitions(p, [(p.lo, p.hi)], [None], seconds=3600, max_boxes=3, batch=1, enum_points=0)
    assert ref.stats["boxes"] == 3
    sh = count_shares(p, [(p.lo, p.hi)], [None], refined=ref.decided)
    assert sh.certified + sh.falsified + sh.undecided == 1


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_spec_option_refine_gives_the_exact_shares_on_the_float32_runtime(tmp_path, monkeypatch, seed):
    """End to end (encoding, one-hot protected input, onnxruntime's float32): with ``refine`` the
    refinement finishes on the 60 individuals and the shares are exactly the true fair / unfair ones."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("highspy")
    from test_quantify import E2E_SPEC, _onnx_net

    from fairspec.pipeline import check

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    W1, b1, W2, b2 = (w.astype(np.float64) for w in _onnx_net(tmp_path / "net.onnx", seed))
    (tmp_path / "spec.fair").write_text(E2E_SPEC.replace("  timeout = 1h\n", "  timeout = 1h\n  refine = 1h\n"))
    v = check(tmp_path / "spec.fair").verdicts[0]
    sh = v.details["coverage"]["shares"]

    def f(X):
        return (np.maximum(np.array(X, dtype=np.float32) @ W1.T.astype(np.float32) + b1.astype(np.float32), 0)
                @ W2.T.astype(np.float32) + b2.astype(np.float32))[:, 0]

    unfair = 0
    for a, b, c in itertools.product(range(5), range(4), range(3)):
        z, zp = f([[a / 4, b, 1, 0, c]]), f([[a / 4, b, 0, 1, c]])
        unfair += bool((z[0] > 0) != (zp[0] > 0))
    cert, fals, und = (Fraction(sh[k]) for k in ("certified", "falsified", "undecided"))
    assert sh["domain"] == "60" and und == 0, sh
    assert (cert, fals) == (Fraction(60 - unfair, 60), Fraction(unfair, 60))


def test_box_bounds_contain_the_network_on_every_box():
    """certify.boxes.box_bounds (intervals and back-substituted linear bounds, a batch of boxes) holds
    every sampled point and corner of each box, on nets of one to three hidden layers."""
    from fairspec.certify.boxes import box_bounds
    from fairspec.certify.network import as_layers

    rng = np.random.default_rng(0)
    for seed in range(24):
        hidden = [(6,), (5, 4), (4, 6, 3)][seed % 3]
        net = random_net(seed, 4, hidden)
        if seed % 2:
            net = PLNet(tuple(Layer(np.round(4 * L.W) / 4, np.round(4 * L.b) / 4, L.relu) for L in net.layers),
                        0, net.final, "dyadic")
        LO = rng.integers(-4, 3, size=(16, 4)).astype(float)
        HI = LO + rng.integers(0, 5, size=(16, 4))
        lo, hi, infl = box_bounds(as_layers(net), LO, HI)
        assert infl.shape == LO.shape and np.all(infl >= 0)
        for k in range(16):
            X = np.vstack([rng.uniform(LO[k], HI[k], size=(300, 4)),
                           np.array(list(itertools.product(*zip(LO[k], HI[k]))))])
            z = net.forward(X)
            assert np.all(z >= lo[k, 0]) and np.all(z <= hi[k, 0]), (seed, k)


def test_a_witness_inside_an_enumerated_sub_box_counts_once_and_grown_boxes_give_way():
    """The refinement's sub-boxes replace a refined partition's grown unfair boxes (they may overlap),
    and a counterexample point inside an enumerated sub-box is counted by the enumeration only."""
    from fairspec.backends.pair import PairResult, Witness

    p = PairProblem(_net(1, 1.0, False), lo=[0, 0, 0, 0], hi=[9, 0, 0, 1], integer=[True] * 4, free=(3,))
    r = PairResult("violated", witness=Witness([3.0, 0, 0, 0], [3.0, 0, 0, 1]))
    lo, hi = p.lo.copy(), p.hi.copy()
    a_hi = hi.copy()
    a_hi[0] = 4
    b_lo = lo.copy()
    b_lo[0] = 5
    from fairspec.certify.proof import _mint

    proof = _mint("interval", "test fixture")
    refined = [(0, "count", lo, a_hi, 4, 1, proof), (0, "fair", b_lo, hi, 5, 0, proof)]
    grown = [(0, lo, a_hi)]
    sh = count_shares(p, [(p.lo, p.hi)], [r], unfair=grown, replay=lambda a, b: True, refined=refined)
    assert (sh.certified, sh.falsified, sh.undecided) == (Fraction(9, 10), Fraction(1, 10), 0)
    assert sh.counterexample_points == 0 and sh.fair_subboxes == 1 and sh.enumerated == 5
    # without a proof a decision counts for nothing
    sh = count_shares(p, [(p.lo, p.hi)], [r], replay=lambda a, b: True,
                      refined=[(0, "fair", b_lo, hi, 5, 0, None)])
    assert sh.certified == 0 and sh.falsified == Fraction(1, 10)


def _dyadic_net(seed: int, n_in: int, hidden, prot: int, weight: float) -> PLNet:
    """Weights and biases multiples of 1/4 (float64 evaluation exact on integer inputs: many scores
    exactly 0), the protected input's first-layer weights scaled by ``weight``."""
    net = random_net(seed, n_in, hidden)
    layers = []
    for k, lay in enumerate(net.layers):
        W, b = lay.W.copy(), lay.b.copy()
        if k == 0:
            W[:, prot] *= weight
        layers.append(Layer(np.round(4 * W) / 4, np.round(4 * b) / 4, lay.relu))
    return PLNet(tuple(layers), 0, net.final, f"cut-test-{seed}")


@pytest.mark.parametrize("seed", range(12))
def test_cut_slices_hold_only_what_they_claim(seed):
    """certify.boxes.decide_boxes(cuts=True): every slice cut from an undecided box as fair holds no
    unfair individual, every slice cut as unfair no fair one (brute force on dyadic nets whose float64
    forward is exact, so E = 0 and ties at a score of exactly 0 decide; a protected input of three
    values, every ordered pair allowed)."""
    from fairspec.certify.boxes import decide_boxes
    from fairspec.certify.network import as_layers

    rng = np.random.default_rng(seed)
    hidden = [(6,), (5, 4), ()][seed % 3]
    net = _dyadic_net(seed, 4, hidden, 3, [1.0, 3.0, 8.0][seed % 3])
    cases = [{3: 0.0}, {3: 1.0}, {3: 2.0}]
    pairs = [(a, b) for a in range(3) for b in range(3) if a != b]
    LO = rng.integers(-6, 3, size=(64, 4)).astype(float)
    HI = LO + rng.integers(0, 9, size=(64, 4))
    LO[:, 3], HI[:, 3] = 0, 2
    dec = decide_boxes(as_layers(net), LO, HI, cases, pairs, post="label", errors=[0.0] * 3, readout=("logit", 0),
                       integer=[True] * 4, precision="float64", complete=True, claim_fair="f", claim_unfair="u",
                       cuts=True)
    assert dec.cut is not None
    for k in range(64):
        i, first, last, kind = dec.cut[k].tolist()
        if kind == 0:
            continue
        assert dec.status[k] == 0 and i != 3 and LO[k, i] <= first <= last <= HI[k, i]
        assert (dec.cut_fair_proof if kind == 1 else dec.cut_unfair_proof) is not None
        lo, hi = LO[k].copy(), HI[k].copy()
        lo[i], hi[i] = first, last
        pts = np.array(list(itertools.product(*(range(int(lo[j]), int(hi[j]) + 1) for j in range(3)))), dtype=float)
        S = []
        for c in cases:
            S.append(net.forward(np.column_stack([pts, np.full(len(pts), c[3])])).reshape(-1))
        unfair = np.zeros(len(pts), dtype=bool)
        for a, b in pairs:
            unfair |= (S[a] > 0) & ~(S[b] > 0)
        if kind == 1:
            assert not unfair.any(), (seed, k, "a slice cut as fair holds an unfair individual")
        else:
            assert unfair.all(), (seed, k, "a slice cut as unfair holds a fair individual")


def test_the_refinement_cuts_and_still_counts_exactly():
    """With cuts (the default) the refinement decides slices of boxes and, where it finishes, the
    shares are still the exact counts (nets biased toward ties, a wider domain so that slices pay)."""
    lo, hi = [0, 0, 0, 0], [23, 17, 11, 1]
    cuts = 0
    for seed in range(4):
        p = PairProblem(_net(seed, 3.0, True), lo=lo, hi=hi, integer=[True] * 4, free=(3,), post="label")
        truth = {t: _unfair(p, t) for t in _points(lo, hi)}
        ref = refine_partitions(p, [(p.lo.copy(), p.hi.copy())], [None], seconds=3600, batch=8, enum_points=4)
        assert ref.stats["left"] == 0
        cuts += ref.stats["cut_fair"] + ref.stats["cut_unfair"]
        for _, kind, blo, bhi, nf, nu, proof in ref.decided:
            pts = list(_points(blo, bhi))
            if kind == "fair":
                assert not any(truth[t] for t in pts)
            elif kind == "unfair":
                assert all(truth[t] for t in pts)
        sh = count_shares(p, [(p.lo, p.hi)], [None], refined=ref.decided)
        bad = sum(truth.values())
        assert sh.undecided == 0 and sh.falsified == Fraction(bad, len(truth))
    assert cuts > 0
