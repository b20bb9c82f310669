"""The split at a hidden layer (certify.layersplit, issue 24: AC-7 race's fair sign partitions):
boxes proved fair by tiling the few live neurons of a hidden layer, against brute force on tiny
networks biased toward ties (dyadic weights whose float64 forward is exact, so E = 0, and logits
exactly 0 on the integer grid; a hidden layer with dead neurons; exact zero protected weights;
float32 non-dyadic weights with the float32 runtime and its error bound E), and tampered
certificates (a live neuron called dead, a tile missing, a too-small live box) refused."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from conftest import protected_weight_net
from fairspec.backends.layer_splits import layer_split_plans
from fairspec.certify.boxes import decide_boxes
from fairspec.certify.enumerate import count_individuals
from fairspec.certify.layersplit import prove_layer_split, tiles_cover
from fairspec.certify.network import as_layers, runtime_error_bound
from fairspec.models.network import Layer, PLNet

CASES3 = [{3: 0.0}, {3: 1.0}, {3: 2.0}]
PAIRS3 = [(a, b) for a in range(3) for b in range(3) if a != b]


def _net(seed: int, f32: bool = False) -> PLNet:
    """Four inputs (the protected one last, three values), hidden (6, 5, 3), one logit. Dyadic weights
    (multiples of 1/4) unless ``f32`` (then float32 numbers that are not dyadic at that grid); the
    protected input's first-layer weight exactly 0 on every other neuron; three of the second hidden
    layer's five neurons dead on every box of the tests (bias -64); the output bias moved so that
    many boxes keep one sign with a few live neurons."""
    net = protected_weight_net(seed, [0.25, 1.0][seed % 2], not f32, False, name="split-test", hidden=(6, 5, 3))
    layers = []
    for k, lay in enumerate(net.layers):
        W, b = lay.W.copy(), lay.b.copy()
        if k == 0:
            W[::2, 3] = 0.0
        if k == 1:
            b[[0, 2, 4]] = -64.0
        if k == len(net.layers) - 1:
            b = b + [0.5, 1.0, 2.0, -0.25][seed % 4]
        if f32:
            W = (W * 1.1).astype(np.float32).astype(np.float64)
            b = (b * 1.1).astype(np.float32).astype(np.float64)
        layers.append(Layer(W, b, lay.relu))
    return PLNet(tuple(layers), 0, net.final, net.source)


def _boxes(rng, n):
    LO = rng.integers(-4, 3, size=(n, 4)).astype(float)
    HI = LO + rng.integers(0, 4, size=(n, 4))
    LO[:, 3], HI[:, 3] = 0, 2
    return LO, HI


def _points(lo, hi):
    return np.array(list(itertools.product(*(range(int(lo[j]), int(hi[j]) + 1) for j in range(3)))), dtype=float)


def _unfair_count(net, lo, hi, dtype):
    pts = _points(lo, hi)
    S = [net.forward(np.column_stack([pts, np.full(len(pts), c[3])]), dtype=dtype).reshape(-1) for c in CASES3]
    return int(count_individuals(S, PAIRS3, "label", decision_threshold=0, claim="c").unfair.sum())


def _errors(L, f32):
    if not f32:
        return [0.0] * 3                 # dyadic weights, small integers: the float64 forward is exact
    lo, hi = np.array([-4.0, -4, -4, 0]), np.array([6.0, 6, 6, 2])
    out = []
    for c in CASES3:
        a, b = lo.copy(), hi.copy()
        a[3] = b[3] = c[3]
        out.append(runtime_error_bound(L, a, b, precision="float32"))
    return out


def _kw(L, f32, **extra):
    return dict(errors=_errors(L, f32), readout=("logit", 0), integer=[True] * 4,
                precision="float32" if f32 else "float64", complete=True, claim="fair", keep_boxes=True, **extra)


def _plans(L, LO, HI, f32, **kw):
    return layer_split_plans(L, LO, HI, CASES3, _errors(L, f32), ("logit", 0), integer=[True] * 4,
                             precision="float32" if f32 else "float64", **kw)


@pytest.mark.parametrize("seed,f32", [(s, f) for s in range(12) for f in (False, True)])
def test_every_box_the_split_proves_holds_no_unfair_individual(seed, f32):
    """Every box the check accepts holds no unfair individual (every integer individual under every
    protected value, on the runtime: float64 for the dyadic nets, float32 for the others)."""
    net = _net(seed, f32)
    L = as_layers(net)
    LO, HI = _boxes(np.random.default_rng(seed), 40)
    plans = _plans(L, LO, HI, f32, max_live=5, max_tiles=32)
    dec = prove_layer_split(L, LO, HI, CASES3, PAIRS3, plans, **_kw(L, f32))
    dtype = np.float32 if f32 else np.float64
    for k in np.flatnonzero(dec.status == 1):
        assert _unfair_count(net, LO[k], HI[k], dtype) == 0, (seed, k)
    assert all(dec.why[k] == "" for k in range(len(plans)) if plans[k] is not None)
    if dec.proof is not None:
        assert dec.proof.method == "interval" and dec.proof.detail["side"] == "fair"
        assert dec.proof.detail["boxes"] == int(dec.status.sum())
        assert dec.proof.detail["_boxes"][0].shape[0] == int(dec.status.sum())


def test_the_split_proves_boxes_the_per_copy_bounds_cannot():
    """Summed over the nets, the split proves boxes fair that decide_boxes' per-copy bounds leave (so the
    test above exercises it), on dyadic and float32 nets."""
    more = {False: 0, True: 0}
    for seed, f32 in itertools.product(range(12), (False, True)):
        L = as_layers(_net(seed, f32))
        LO, HI = _boxes(np.random.default_rng(seed), 40)
        plans = _plans(L, LO, HI, f32, max_live=5, max_tiles=32)
        dec = prove_layer_split(L, LO, HI, CASES3, PAIRS3, plans, **_kw(L, f32))
        kw = _kw(L, f32)
        per = decide_boxes(L, LO, HI, CASES3, PAIRS3, post="label", errors=kw["errors"], readout=("logit", 0),
                           integer=kw["integer"], precision=kw["precision"], complete=True, claim_fair="f",
                           claim_unfair="u")
        more[f32] += int(((dec.status == 1) & (per.status != 1)).sum())
    assert more[False] > 0 and more[True] > 0, more


def _one_proved(f32=False, tiles_at_least=2, live_at_least=1):
    """A (net, layers, box, plan) the check accepts, with a case of at least ``tiles_at_least`` tiles."""
    for seed in range(40):
        net = _net(seed, f32)
        L = as_layers(net)
        LO, HI = _boxes(np.random.default_rng(seed), 40)
        plans = _plans(L, LO, HI, f32, max_live=5, max_tiles=32)
        dec = prove_layer_split(L, LO, HI, CASES3, PAIRS3, plans, **_kw(L, f32))
        for k in np.flatnonzero(dec.status == 1):
            per = plans[k][1]
            if any(len(t[1]) >= tiles_at_least and len(t[0]) >= live_at_least for t in per):
                return net, L, LO[k:k + 1], HI[k:k + 1], plans[k]
    raise AssertionError("no box to tamper with")


def _check(L, lo, hi, plan, f32=False):
    return prove_layer_split(L, lo, hi, CASES3, PAIRS3, [plan], **_kw(L, f32))


def test_a_live_neuron_called_dead_is_refused():
    net, L, lo, hi, (layer, per) = _one_proved(tiles_at_least=1, live_at_least=1)
    assert _check(L, lo, hi, (layer, per)).status[0] == 1
    c = next(i for i, t in enumerate(per) if len(t[0]) >= 1)
    live, A, B = per[c]
    bad = list(per)
    bad[c] = (live[1:], A[:, 1:], B[:, 1:])      # the first live neuron dropped: "dead"
    dec = _check(L, lo, hi, (layer, bad))
    assert dec.status[0] == 0 and "dead" in dec.why[0]
    assert dec.proof is None


def test_a_missing_tile_is_refused():
    net, L, lo, hi, (layer, per) = _one_proved(tiles_at_least=2)
    c = next(i for i, t in enumerate(per) if len(t[1]) >= 2)
    live, A, B = per[c]
    for j in range(len(A)):
        bad = list(per)
        keep = np.arange(len(A)) != j
        bad[c] = (live, A[keep], B[keep])
        dec = _check(L, lo, hi, (layer, bad))
        assert dec.status[0] == 0 and "cover" in dec.why[0], j


def test_a_too_small_live_box_is_refused():
    net, L, lo, hi, (layer, per) = _one_proved(tiles_at_least=1, live_at_least=1)
    c = next(i for i, t in enumerate(per) if len(t[0]) >= 1)
    live, A, B = per[c]
    top = B.max(axis=0)
    assert np.all(top > 0)
    bad = list(per)
    B2 = np.where(B >= top, top * 0.999, B)      # every tile stops short of the live box's upper face
    bad[c] = (live, A, B2)
    dec = _check(L, lo, hi, (layer, bad))
    assert dec.status[0] == 0 and "cover" in dec.why[0]
    # another layer, a non-ReLU one, or a case missing: refused too
    assert _check(L, lo, hi, (len(L) - 1, per)).status[0] == 0
    assert _check(L, lo, hi, (layer, per[:2])).status[0] == 0


def test_an_incomplete_list_of_protected_values_proves_nothing():
    net, L, lo, hi, plan = _one_proved(tiles_at_least=1)
    kw = _kw(L, False)
    kw["complete"] = False
    assert prove_layer_split(L, lo, hi, CASES3, PAIRS3, [plan], **kw).status[0] == 0


def test_the_proof_is_a_tile_for_prove_tiled():
    """The Proof lists the boxes it proved: certify's tiling check takes a proved box as a tile of
    itself, and refuses a box the Proof did not prove."""
    from fairspec.certify.tiling import prove_tiled

    net, L, lo, hi, plan = _one_proved(tiles_at_least=1)
    dec = _check(L, lo, hi, plan)
    pr = prove_tiled(lo[0], hi[0], [True] * 4, [(lo, hi, dec.proof)], claim="c")
    assert pr is not None and pr.method == "interval"
    wider = hi.copy()
    wider[0, 0] += 1
    assert prove_tiled(lo[0], wider[0], [True] * 4, [(lo, wider, dec.proof)], claim="c") is None


def _covered_brute(lo, hi, TL, TH):
    """Every point of the closed box in the closed tiles? The coverage of closed boxes changes only at
    their faces: the faces and the midpoints between consecutive faces decide it."""
    axes = []
    for d in range(len(lo)):
        f = np.unique(np.concatenate([[lo[d], hi[d]], TL[:, d], TH[:, d]]))
        f = f[(f >= lo[d]) & (f <= hi[d])]
        axes.append(np.unique(np.concatenate([f, (f[:-1] + f[1:]) / 2])))
    for p in itertools.product(*axes):
        p = np.array(p)
        if not np.any(np.all((TL <= p) & (TH >= p), axis=1)):
            return False
    return True


@pytest.mark.parametrize("seed", range(6))
def test_tiles_cover_against_brute_force(seed):
    """tiles_cover agrees with a brute-force check on random tilings in 1-3 dimensions: grid tilings
    (covered), with a tile removed, shrunk or shifted, overlapping tiles and tiles reaching outside."""
    rng = np.random.default_rng(seed)
    agree = {True: 0, False: 0}
    for trial in range(60):
        d = int(rng.integers(1, 4))
        lo = rng.integers(0, 3, size=d).astype(float) / 2
        hi = lo + rng.integers(0, 4, size=d).astype(float) / 2
        cuts = [np.unique(np.concatenate([[lo[i], hi[i]], rng.uniform(lo[i], hi[i], size=int(rng.integers(0, 3)))]))
                for i in range(d)]
        cells = list(itertools.product(*[list(zip(c[:-1], c[1:])) or [(c[0], c[0])] for c in cuts]))
        TL = np.array([[a for a, _ in cell] for cell in cells])
        TH = np.array([[b for _, b in cell] for cell in cells])
        mode = trial % 5
        if mode == 1 and len(TL) > 1:
            j = int(rng.integers(len(TL)))
            TL, TH = np.delete(TL, j, axis=0), np.delete(TH, j, axis=0)
        elif mode == 2:
            j = int(rng.integers(len(TL)))
            TH = TH.copy()
            TH[j, int(rng.integers(d))] -= 0.25
        elif mode == 3:
            TL = np.concatenate([TL - 0.25, TL[:1]])
            TH = np.concatenate([TH + 0.25, TH[:1]])
        elif mode == 4:
            TL = TL + rng.choice([0.0, 0.125], size=TL.shape)
        got = tiles_cover(lo, hi, TL, TH)
        assert got == _covered_brute(lo, hi, TL, TH), (seed, trial, mode)
        agree[got] += 1
    assert agree[True] and agree[False]


def _plateau_net(seed: int, sign: float, bias: float) -> PLNet:
    """The dyadic net of :func:`_net` with the output ``sign * |W| h + bias``: its logit is exactly
    ``bias`` wherever the last hidden layer is 0 (a plateau, as AC-7's), of one sign beyond it."""
    net = _net(seed)
    layers = list(net.layers)
    W, b = layers[-1].W, layers[-1].b
    layers[-1] = Layer(sign * np.abs(W), np.full_like(b, bias), False)
    return PLNet(tuple(layers), 0, net.final, net.source)


PLATEAUS = [(-1.0, 0.0), (1.0, 0.0), (-1.0, -2.0 ** -20), (1.0, 2.0 ** -20)]


@pytest.mark.parametrize("seed,sign,bias", [(s, g, b) for s in range(8) for g, b in PLATEAUS])
def test_plateaus_at_and_beside_the_threshold(seed, sign, bias):
    """A plateau exactly at the threshold (logit 0: not positive, so an individual with 0 under one value
    and > 0 under another is unfair) and one an ulp-scale step beside it: every box proved holds no
    unfair individual; no box with a logit of exactly 0 is proved 'positive'; the plateaus beside 0
    (every logit surely on one side) are proved on some boxes. (A plateau exactly at 0 on the ``<= 0``
    side is not proved: outward rounding cannot give an upper bound of exactly 0; it stays open.)"""
    net = _plateau_net(seed, sign, bias)
    L = as_layers(net)
    LO, HI = _boxes(np.random.default_rng(50 + seed), 40)
    plans = _plans(L, LO, HI, False, max_live=5, max_tiles=32)
    dec = prove_layer_split(L, LO, HI, CASES3, PAIRS3, plans, **_kw(L, False))
    for k in np.flatnonzero(dec.status == 1):
        assert _unfair_count(net, LO[k], HI[k], np.float64) == 0, (seed, k)
        pts = _points(LO[k], HI[k])
        Z = np.concatenate([net.forward(np.column_stack([pts, np.full(len(pts), c[3])])) for c in CASES3])
        assert not (sign > 0 and np.any(Z == 0)), (seed, k, "a logit of exactly 0 proved positive")
    if bias != 0:
        assert dec.status.sum() > 0


def test_decide_partitions_proves_partitions_by_the_split():
    """The decision pass by refinement (backends.refine.decide_partitions) tries the split on the boxes
    the bounds leave: with one sub-box per partition (the root) it proves partitions the per-copy bounds
    cannot, each through prove_tiled, and every partition it calls fair holds no unfair individual."""
    from fairspec.backends.pair import PairProblem
    from fairspec.backends.refine import decide_partitions

    gained = 0
    for seed in range(6):
        net = _net(seed)
        P = PairProblem(net, [-4, -4, -4, 0], [6, 6, 6, 2], [True] * 4, (), (3,), None, (), "label", 0.0)
        LO, HI = _boxes(np.random.default_rng(seed), 24)
        parts = list(zip(LO, HI))
        got = {}
        for split in (False, True):
            got[split] = decide_partitions(P, parts, seconds=1e6, max_boxes=len(parts), enum_points=0,
                                           split=split)
        for k, d in enumerate(got[True]):
            if d.status == "fair":
                assert d.proof is not None and _unfair_count(net, LO[k], HI[k], np.float64) == 0, (seed, k)
        gained += sum(a.status == "fair" and b.status != "fair" for a, b in zip(got[True], got[False]))
    assert gained > 0
