"""The relational bound of certify.boxes on a float32 runtime (issue 24): the dyadic nets of
test_relational_bounds.py have E = 0; here the weights are float32 numbers that are not dyadic, so the
runtime's float32 logits differ from the exact ones and every proof rests on the error bound E. The
thresholds are set to differences the runtime actually computes (ties), so `<` and `<=` part. Every box
decide_boxes proves fair holds no unfair individual on the float32 runtime, every box it proves unfair
holds only unfair ones; brute force over every individual and protected value."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fairspec.certify.boxes import decide_boxes
from fairspec.certify.enumerate import count_individuals
from fairspec.certify.network import as_layers, runtime_error_bound
from fairspec.models.network import Layer, PLNet

CASES3 = [{3: 0.0}, {3: 1.0}, {3: 2.0}]
PAIRS3 = [(a, b) for a in range(3) for b in range(3) if a != b]
DOMAIN_LO, DOMAIN_HI = np.array([-4.0, -4, -4, 0]), np.array([6.0, 6, 6, 2])


def _net(seed: int) -> PLNet:
    """Float32 weights (standard normal, rounded to float32: not dyadic in general); the protected
    input (the last of four) feeds only every other first-layer neuron, with a small weight."""
    rng = np.random.default_rng(seed)
    layers, d = [], 4
    for k, h in enumerate((6, 5, 1)):
        W = rng.normal(size=(h, d))
        b = rng.normal(size=h) if h > 1 else np.array([0.25])
        if k == 0:
            W[::2, 3] = 0.0
            W[1::2, 3] *= 0.05
        layers.append(Layer(W.astype(np.float32).astype(np.float64), b.astype(np.float32).astype(np.float64), h > 1))
        d = h
    return PLNet(tuple(layers), 0, "sigmoid", f"f32-rel-{seed}")


def _runtime(net: PLNet, X) -> np.ndarray:
    """The float32 runtime: every layer in float32, as ONNX / torch compute it."""
    h = np.asarray(X, dtype=np.float32)
    for lay in net.layers:
        h = h @ lay.W.T.astype(np.float32) + lay.b.astype(np.float32)
        if lay.relu:
            h = np.maximum(h, np.float32(0))
    return h[:, 0].astype(np.float64)


def _points(lo, hi):
    return np.array(list(itertools.product(*(range(int(lo[j]), int(hi[j]) + 1) for j in range(3)))), dtype=float)


def _scores(net, lo, hi):
    pts = _points(lo, hi)
    return [_runtime(net, np.column_stack([pts, np.full(len(pts), c[3])])) for c in CASES3]


def _setup(seed: int, n: int = 40):
    """The net, its layers, the runtime error bound E per protected value over the domain, and n
    random boxes (the protected input spanning its three values)."""
    net = _net(seed)
    L = as_layers(net)
    errors = []
    for c in CASES3:
        lo, hi = DOMAIN_LO.copy(), DOMAIN_HI.copy()
        lo[3] = hi[3] = c[3]
        errors.append(runtime_error_bound(L, lo, hi, precision="float32", integer=[True] * 4))
    rng = np.random.default_rng(500 + seed)
    LO = rng.integers(-4, 4, size=(n, 4)).astype(float)
    HI = np.minimum(LO + rng.integers(0, 4, size=(n, 4)), 6.0)
    LO[:, 3], HI[:, 3] = 0, 2
    return net, L, errors, LO, HI


CASES = [(seed, post, strict) for seed in range(8) for post in ("logit", "prob") for strict in (False, True)]


@pytest.mark.parametrize("seed,post,strict", CASES)
def test_float32_runtime_boxes_decided_by_the_relational_bound_agree_with_brute_force(seed, post, strict):
    net, L, errors, LO, HI = _setup(seed)
    n = LO.shape[0]
    assert all(e > 0 for e in errors)                    # the proofs rest on E
    # a tie: eps is a difference the runtime computes on one of the boxes (logit), or the gap of two
    # logistic values there (prob: rounded to float, so only near a tie)
    S = _scores(net, LO[0], HI[0])
    d = np.abs(S[0] - S[1])
    if post == "prob":
        d = np.abs(1 / (1 + np.exp(-S[0])) - 1 / (1 + np.exp(-S[1])))
    eps = float(np.max(d))
    kw = dict(post=post, errors=errors, eps=eps, eps_strict=strict, readout=("logit", 0), integer=[True] * 4,
              precision="float32", complete=True, claim_fair="f", claim_unfair="u")
    dec = decide_boxes(L, LO, HI, CASES3, PAIRS3, **kw)
    scored = "prob-of-logit" if post == "prob" else post
    for k in range(n):
        if dec.status[k] == 0:
            continue
        res = count_individuals(_scores(net, LO[k], HI[k]), PAIRS3, scored, eps=eps, eps_strict=strict, claim="c")
        if dec.status[k] == 1:
            assert not res.unfair.any(), (seed, k, "a box proved fair holds an unfair individual")
        else:
            assert res.unfair.all(), (seed, k, "a box proved unfair holds a fair individual")


def test_the_float32_cases_exercise_the_relational_bound():
    """Summed over the cases above, the relational bound proves boxes the per-copy bounds cannot (so the
    test above checks it, not only the per-copy path)."""
    more = 0
    for seed in range(8):
        net, L, errors, LO, HI = _setup(seed)
        kw = dict(post="logit", errors=errors, eps=0.05, readout=("logit", 0), integer=[True] * 4,
                  precision="float32", complete=True, claim_fair="f", claim_unfair="u")
        rel = decide_boxes(L, LO, HI, CASES3, PAIRS3, **kw)
        per = decide_boxes(L, LO, HI, CASES3, PAIRS3, relational=False, **kw)
        assert np.all(rel.status[per.status == 1] == 1)
        more += int((rel.status == 1).sum() - (per.status == 1).sum())
    assert more > 0
