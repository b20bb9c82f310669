"""The relational split at a hidden layer for the eps posts (certify.relsplit, issue 24: AC-9's open eps
partitions, one live first-layer neuron): boxes proved fair by tiling one copy's live pre-activations and
shifting the other copy's by the pair's difference bounds, against brute force on tiny networks biased
toward ties and plateaus (dyadic weights whose float64 forward is exact, so E = 0; a first layer with one
live neuron; a deeper layer with dead neurons; eps on grid points, strict and non-strict; float32
non-dyadic weights with the float32 runtime and its error bound E), and tampered certificates (a live
neuron called dead, a tile missing, a too-small shift) refused."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

from conftest import protected_weight_net
from fairspec.backends.layer_splits import relational_split_plans
from fairspec.certify.boxes import decide_boxes
from fairspec.certify.enumerate import count_individuals
from fairspec.certify.network import as_layers
from fairspec.certify.relsplit import prove_relational_split
from fairspec.models.network import Layer, PLNet
from test_layer_split import CASES3, PAIRS3, _boxes, _errors, _points  # the same tiny boxes and E

def _net(seed: int, f32: bool = False, one_live: bool = True) -> PLNet:
    """Four inputs (the protected one last, three values), hidden (6, 5, 3), one logit. Dyadic weights
    (multiples of 1/4) unless ``f32``. ``one_live``: every first-layer neuron but neuron 0 dead on the
    tests' boxes (bias -64), so the network is a function of that one scalar (a plateau where it is
    inactive); else three of the second hidden layer's five neurons dead."""
    net = protected_weight_net(seed, [0.25, 0.5][seed % 2], not f32, False, name="relsplit-test", hidden=(6, 5, 3))
    layers = []
    for k, lay in enumerate(net.layers):
        W, b = lay.W.copy(), lay.b.copy()
        if k == 0 and one_live:
            b[1:] = -64.0
            if W[0, 3] == 0:
                W[0, 3] = 0.25
        if k == 1 and not one_live:
            b[[0, 2, 4]] = -64.0
        if f32:
            W = (W * 1.1).astype(np.float32).astype(np.float64)
            b = (b * 1.1).astype(np.float32).astype(np.float64)
        layers.append(Layer(W, b, lay.relu))
    return PLNet(tuple(layers), 0, net.final, net.source)


def _all_fair(net, lo, hi, dtype, post, eps, strict):
    pts = _points(lo, hi)
    S = [net.forward(np.column_stack([pts, np.full(len(pts), c[3])]), dtype=dtype).reshape(-1) for c in CASES3]
    res = count_individuals(S, PAIRS3, "prob-of-logit" if post == "prob" else "logit", eps=eps, eps_strict=strict,
                            claim="c")
    return bool(res.fair.all())


def _kw(L, f32, post, eps, strict):
    return dict(errors=_errors(L, f32), post=post, eps=eps, eps_strict=strict, readout=("logit", 0),
                integer=[True] * 4, precision="float32" if f32 else "float64", complete=True, claim="fair",
                keep_boxes=True)


def _plans(L, LO, HI, f32, post, eps, strict, **kw):
    return relational_split_plans(L, LO, HI, CASES3, PAIRS3, _errors(L, f32), ("logit", 0), post=post, eps=eps,
                                  eps_strict=strict, **kw)


#: eps on grid points of the dyadic logits (ties where < and <= part), and for prob
SETTINGS = [("logit", 0.25, False), ("logit", 0.5, True), ("logit", 1.0, False), ("prob", 0.0625, False),
            ("prob", 0.125, True), ("prob", 0.05, False)]


@functools.lru_cache(maxsize=None)
def _decided(seed, f32, one_live, post, eps, strict):
    """(net, layers, boxes LO / HI, plans, the split's decision) of one net and setting: computed once,
    read by the tests below (none mutates them; the tampering tests build their own plans)."""
    net = _net(seed, f32, one_live)
    L = as_layers(net)
    LO, HI = _boxes(np.random.default_rng(seed), 30)
    plans = _plans(L, LO, HI, f32, post, eps, strict, max_live=4, max_tiles=32)
    dec = prove_relational_split(L, LO, HI, CASES3, PAIRS3, plans, **_kw(L, f32, post, eps, strict))
    return net, L, LO, HI, plans, dec


@pytest.mark.parametrize("seed,f32,one_live", [(s, f, o) for s in range(6) for f in (False, True)
                                               for o in (True, False)])
def test_every_box_the_split_proves_holds_no_unfair_individual(seed, f32, one_live):
    """Every box the check accepts holds only fair individuals (every integer individual under every
    protected value, every pair, on the runtime: float64 for the dyadic nets, float32 for the others)."""
    dtype = np.float32 if f32 else np.float64
    for post, eps, strict in SETTINGS:
        net, L, LO, HI, plans, dec = _decided(seed, f32, one_live, post, eps, strict)
        for k in np.flatnonzero(dec.status == 1):
            assert _all_fair(net, LO[k], HI[k], dtype, post, eps, strict), (seed, post, eps, strict, k)
        assert all(dec.why[k] == "" for k in range(len(plans)) if plans[k] is not None)
        if dec.proof is not None:
            assert dec.proof.method == "interval" and dec.proof.detail["side"] == "fair"
            assert dec.proof.detail["boxes"] == int(dec.status.sum())


def test_the_split_proves_boxes_the_per_copy_and_relational_bounds_cannot():
    """Summed over the nets, the split proves boxes fair that decide_boxes (per-copy and relational
    bounds) leaves, on dyadic and float32 nets (so the test above exercises it)."""
    more = {False: 0, True: 0}
    for seed, f32, (post, eps, strict) in itertools.product(range(6), (False, True), SETTINGS):
        _, L, LO, HI, plans, dec = _decided(seed, f32, True, post, eps, strict)
        kw = _kw(L, f32, post, eps, strict)
        per = decide_boxes(L, LO, HI, CASES3, PAIRS3, post=post, eps=eps, eps_strict=strict, errors=kw["errors"],
                           readout=("logit", 0), integer=kw["integer"], precision=kw["precision"], complete=True,
                           claim_fair="f", claim_unfair="u")
        more[f32] += int(((dec.status == 1) & (per.status != 1)).sum())
    assert more[False] > 0 and more[True] > 0, more


def _one_proved(tiles_at_least=1, live_at_least=1, f32=False):
    """A (net, layers, box, plan, setting) the check accepts, with a pair of at least ``tiles_at_least``
    tiles over at least ``live_at_least`` live neurons."""
    for seed, (post, eps, strict) in itertools.product(range(40), SETTINGS):
        net, L, LO, HI, plans, dec = _decided(seed, f32, True, post, eps, strict)
        for k in np.flatnonzero(dec.status == 1):
            if any(len(t[1]) >= tiles_at_least and len(t[0]) >= live_at_least for t in plans[k][1]):
                return net, L, LO[k:k + 1], HI[k:k + 1], plans[k], (post, eps, strict)
    raise AssertionError("no box to tamper with")


def _check(L, lo, hi, plan, setting):
    return prove_relational_split(L, lo, hi, CASES3, PAIRS3, [plan], **_kw(L, False, *setting))


def test_a_live_neuron_called_dead_is_refused():
    net, L, lo, hi, (layer, per), st = _one_proved(live_at_least=1)
    assert _check(L, lo, hi, (layer, per), st).status[0] == 1
    p = next(i for i, t in enumerate(per) if len(t[0]) >= 1)
    live, A, B, dl, dh = per[p]
    bad = list(per)
    bad[p] = (live[1:], A[:, 1:], B[:, 1:], dl[1:], dh[1:])      # the first live neuron dropped: "dead"
    dec = _check(L, lo, hi, (layer, bad), st)
    assert dec.status[0] == 0 and "dead" in dec.why[0] and dec.proof is None


def test_a_missing_tile_is_refused():
    net, L, lo, hi, (layer, per), st = _one_proved(tiles_at_least=2)
    p = next(i for i, t in enumerate(per) if len(t[1]) >= 2)
    live, A, B, dl, dh = per[p]
    for j in range(len(A)):
        bad = list(per)
        keep = np.arange(len(A)) != j
        bad[p] = (live, A[keep], B[keep], dl, dh)
        dec = _check(L, lo, hi, (layer, bad), st)
        assert dec.status[0] == 0 and "cover" in dec.why[0], j


def test_a_too_small_shift_is_refused():
    net, L, lo, hi, (layer, per), st = _one_proved(live_at_least=1)
    p = next(i for i, t in enumerate(per) if len(t[0]) >= 1 and np.any(t[3] != 0))
    live, A, B, dl, dh = per[p]
    for lo_side in (True, False):
        bad = list(per)
        if lo_side:
            bad[p] = (live, A, B, dl + np.where(dl < 0, 1e-9 + 1e-6 * np.abs(dl), 0.0), dh)
        else:
            bad[p] = (live, A, B, dl, dh - np.where(dh > 0, 1e-9 + 1e-6 * np.abs(dh), 0.0))
        if all(np.array_equal(x, y) for x, y in zip(bad[p][3:], per[p][3:])):
            continue
        dec = _check(L, lo, hi, (layer, bad), st)
        assert dec.status[0] == 0 and "shift" in dec.why[0]
    # a shift of 0 (the copies taken as equal) is refused too
    bad = list(per)
    bad[p] = (live, A, B, np.zeros_like(dl), np.zeros_like(dh))
    assert _check(L, lo, hi, (layer, bad), st).status[0] == 0
    # another layer, a non-ReLU one, or a pair missing: refused too
    assert _check(L, lo, hi, (len(L) - 1, per), st).status[0] == 0
    assert _check(L, lo, hi, (layer, per[:3]), st).status[0] == 0


def test_an_incomplete_list_of_protected_values_or_the_label_post_proves_nothing():
    net, L, lo, hi, plan, st = _one_proved()
    kw = _kw(L, False, *st)
    kw["complete"] = False
    assert prove_relational_split(L, lo, hi, CASES3, PAIRS3, [plan], **kw).status[0] == 0
    kw = _kw(L, False, *st)
    kw["post"] = "label"
    assert prove_relational_split(L, lo, hi, CASES3, PAIRS3, [plan], **kw).status[0] == 0


def test_the_proof_is_a_tile_for_prove_tiled():
    from fairspec.certify.tiling import prove_tiled

    net, L, lo, hi, plan, st = _one_proved()
    dec = _check(L, lo, hi, plan, st)
    pr = prove_tiled(lo[0], hi[0], [True] * 4, [(lo, hi, dec.proof)], claim="c")
    assert pr is not None and pr.method == "interval"


@pytest.mark.parametrize("post,eps,strict", [("logit", 2.0, False), ("prob", 0.125, True), ("prob", 0.0625, False)])
def test_decide_partitions_proves_partitions_by_the_relational_split(post, eps, strict):
    """The decision pass by refinement (backends.refine.decide_partitions) tries the relational split on the
    boxes the bounds leave for the eps posts: with one sub-box per partition (the root) it proves partitions
    the bounds cannot, each through prove_tiled, and every partition it calls fair holds only fair
    individuals."""
    from fairspec.backends.pair import PairProblem
    from fairspec.backends.refine import decide_partitions

    gained = 0
    for seed in range(6):
        net = _net(seed)
        P = PairProblem(net, [-4, -4, -4, 0], [6, 6, 6, 2], [True] * 4, (), (3,), None, (), post, eps, strict)
        LO, HI = _boxes(np.random.default_rng(seed), 24)
        parts = list(zip(LO, HI))
        got = {}
        for split in (False, True):
            got[split] = decide_partitions(P, parts, seconds=1e6, max_boxes=len(parts), enum_points=0, split=split)
        for k, d in enumerate(got[True]):
            if d.status == "fair":
                assert d.proof is not None and _all_fair(net, LO[k], HI[k], np.float32, post, eps, strict), (seed, k)
        gained += sum(a.status == "fair" and b.status != "fair" for a, b in zip(got[True], got[False]))
    assert gained > 0
