"""certify's box bounds of a network with a layer without a ReLU before the last (a runtime chain of
linear layers: torch Linear -> Linear -> ReLU -> Linear, models.network._Chain.own): box_bounds passes
that layer's interval on unclipped, the back-substitution takes it as the identity (slope 1) and
relational_bounds passes the difference straight through. Against brute force on small chains with
dyadic weights (multiples of 1/8, biases of 1/4: their float64 forward on small integers is exact, so
the runtime error E is 0): every interval holds every point of its box, every box proved fair holds no
unfair individual and every box proved unfair only unfair ones; and end to end, the torch chain that
reached these bounds at a tie (an 'IndexError', then a ValueError) is decided at the tie and either side."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from fairspec.certify.boxes import box_bounds, decide_boxes, relational_bounds
from fairspec.certify.enumerate import count_individuals
from fairspec.certify.layersplit import layer_bounds
from fairspec.certify.relsplit import layer_pair_bounds

#: which layers have a ReLU (the last never): linear layers first, in the middle, twice in a row
PATTERNS = [(False, True, False), (True, False, True, False), (False, False, True, False), (True, False, False),
            (False, False)]
CASES3 = [{2: 0.0}, {2: 1.0}, {2: 2.0}]
PAIRS3 = [(a, b) for a in range(3) for b in range(3) if a != b]


def _chain(seed, pattern, n=3):
    rng = np.random.default_rng(seed)
    widths = [n] + [int(rng.integers(2, 5)) for _ in pattern[:-1]] + [1]
    out = []
    for (a, b), relu in zip(zip(widths[:-1], widths[1:]), pattern):
        W = rng.integers(-12, 13, (b, a)) / 8.0
        W[rng.random((b, a)) < 0.2] = 0.0
        out.append((W, rng.integers(-6, 7, b) / 4.0, relu))
    return out


def _forward(layers, X):
    """Every layer's pre-activations of the points X (rows): exact (dyadic numbers, small integers)."""
    pre, H = [], np.asarray(X, dtype=np.float64)
    for W, b, relu in layers:
        P = H @ W.T + b
        pre.append(P)
        H = np.maximum(P, 0.0) if relu else P
    return pre


def _boxes(rng, N, n=3):
    LO = rng.integers(-3, 3, (N, n)).astype(float)
    return LO, LO + rng.integers(0, 4, (N, n))


def _points(lo, hi):
    return np.array(list(itertools.product(*(range(int(a), int(b) + 1) for a, b in zip(lo, hi)))), dtype=float)


CHAINS = [(seed, p) for p in PATTERNS for seed in range(4)]


@pytest.mark.parametrize("seed,pattern", CHAINS)
def test_every_interval_holds_every_point(seed, pattern):
    """Each layer's interval (box_bounds' ``keep``) and the output's holds every point of the box, and
    the output's linear bounds (``linear=True``, what decide_boxes cuts a box with) hold exactly."""
    layers = _chain(seed, pattern)
    LO, HI = _boxes(np.random.default_rng(50 + seed), 12)
    keep = []
    plo, phi, infl, (low, g, nlow, ng) = box_bounds(layers, LO, HI, linear=True, keep=keep)
    assert len(keep) == len(layers) and np.all(np.isfinite(infl))
    for k in range(LO.shape[0]):
        X = _points(LO[k], HI[k])
        pre = _forward(layers, X)
        for j, P in enumerate(pre):
            assert np.all(P >= keep[j][0][k]) and np.all(P <= keep[j][1][k]), (seed, pattern, k, j)
        y = pre[-1][:, 0]
        assert np.all(y >= plo[k, 0]) and np.all(y <= phi[k, 0])
        for lo_, g_, sign in ((low, g, 1), (nlow, ng, -1)):
            gk = [Fraction(float(v)) for v in g_[k, 0]]
            base = Fraction(float(lo_[k, 0])) - sum(min(gi * Fraction(a), gi * Fraction(b))
                                                    for gi, a, b in zip(gk, LO[k], HI[k]))
            for x, v in zip(X, y):
                assert sign * Fraction(float(v)) >= base + sum(gi * Fraction(xi) for gi, xi in zip(gk, x))


def test_a_linear_layer_is_not_clipped():
    """The chain of the round-3 finding (6 units in [0, 3] read as the output, truly in [0, 9]) and a
    negated input through two linear layers (its values negative: a ReLU's clip would give [0, 0])."""
    L = [(np.ones((6, 3)), np.zeros(6), False), (0.5 * np.eye(6), np.zeros(6), True),
         (np.ones((1, 6)), np.zeros(1), False)]
    plo, phi, _ = box_bounds(L, np.zeros((1, 3)), np.ones((1, 3)))
    assert plo[0, 0] <= 0.0 and 9.0 <= phi[0, 0] < 9.0 + 1e-9
    neg = [(-np.eye(2), np.zeros(2), False), (np.eye(2), np.zeros(2), False), (np.ones((1, 2)), np.zeros(1), False)]
    plo, phi, _ = box_bounds(neg, np.array([[1.0, 2.0]]), np.array([[3.0, 4.0]]))
    assert -7.0 - 1e-9 < plo[0, 0] <= -7.0 and -3.0 <= phi[0, 0] < -3.0 + 1e-9
    with pytest.raises(ValueError, match="last layer"):
        box_bounds(L[:2], np.zeros((1, 3)), np.ones((1, 3)))


def _per_case(layers, LO, HI):
    per = []
    for c in CASES3:
        lo, hi = LO.copy(), HI.copy()
        lo[:, 2] = hi[:, 2] = c[2]
        keep = []
        box_bounds(layers, lo, hi, keep=keep)
        per.append(keep)
    return per


def _protected_boxes(seed, N):
    LO, HI = _boxes(np.random.default_rng(70 + seed), N)
    LO[:, 2], HI[:, 2] = 0, 2
    return LO, HI


@pytest.mark.parametrize("seed,pattern", CHAINS)
def test_relational_bounds_hold_every_individual(seed, pattern):
    """Every individual's difference of the two copies' outputs (and, through layer_pair_bounds, of
    every hidden ReLU layer's pre-activations) lies in the relational bounds."""
    layers = _chain(seed, pattern)
    LO, HI = _protected_boxes(seed, 10)
    per = _per_case(layers, LO, HI)
    hidden = [L for L in range(len(layers) - 1) if layers[L][2]]
    for a, b in PAIRS3:
        dlo = np.zeros_like(LO)
        dlo[:, 2] = CASES3[b][2] - CASES3[a][2]
        dl, du = relational_bounds(layers, per[a], per[b], dlo, dlo.copy())
        XA_lo, XA_hi, XB_lo, XB_hi = LO.copy(), HI.copy(), LO.copy(), HI.copy()
        XA_lo[:, 2] = XA_hi[:, 2] = CASES3[a][2]
        XB_lo[:, 2] = XB_hi[:, 2] = CASES3[b][2]
        split = {L: layer_pair_bounds(layers, L, XA_lo, XA_hi, XB_lo, XB_hi, [2]) for L in hidden}
        for k in range(LO.shape[0]):
            X = _points(LO[k, :2], HI[k, :2])
            pa = _forward(layers, np.column_stack([X, np.full(len(X), CASES3[a][2])]))
            pb = _forward(layers, np.column_stack([X, np.full(len(X), CASES3[b][2])]))
            d = pb[-1][:, 0] - pa[-1][:, 0]
            assert np.all(d >= dl[k, 0]) and np.all(d <= du[k, 0]), (seed, pattern, a, b, k)
            for L, (la, ua, lb, ub, sl, sh) in split.items():
                assert np.all(pa[L] >= la[k]) and np.all(pa[L] <= ua[k])
                assert np.all(pb[L] >= lb[k]) and np.all(pb[L] <= ub[k])
                assert np.all(pb[L] - pa[L] >= sl[k]) and np.all(pb[L] - pa[L] <= sh[k])
        for L in hidden:
            # the same bounds, up to the order the BLAS sums in: layer_pair_bounds bounds both copies in one
            # batch of 2N boxes, layer_bounds N (bitwise equal on an Intel Xeon, an ulp apart on an AMD EPYC)
            plo, phi = layer_bounds(layers, L, XA_lo, XA_hi)
            for mine, theirs in ((plo, split[L][0]), (phi, split[L][1])):
                assert np.all(np.abs(mine - theirs) <= 1e-12 * (1.0 + np.abs(mine))), (seed, pattern, a, b, L)


POSTS = [("label", None, False), ("logit", 1.0, False), ("logit", 1.0, True), ("prob", 0.25, False)]


def _decided(seed, pattern, post, eps, strict):
    layers = _chain(seed, pattern)
    LO, HI = _protected_boxes(seed, 16)
    kw = dict(post=post, errors=[0.0] * 3, eps=eps or 0.0, eps_strict=strict, readout=("logit", 0),
              integer=[True] * 3, precision="float64", complete=True, claim_fair="f", claim_unfair="u",
              cuts=post == "label")
    dec = decide_boxes(layers, LO, HI, CASES3, PAIRS3, **kw)
    scored = "prob-of-logit" if post == "prob" else post
    cut = dec.cut if dec.cut is not None else np.zeros((LO.shape[0], 4), dtype=np.int64)
    for k in range(LO.shape[0]):
        lo, hi = LO[k, :2].copy(), HI[k, :2].copy()
        if dec.status[k] == 0 and cut[k, 3] != 0:          # the slice the box's own linear bounds decided
            lo[cut[k, 0]], hi[cut[k, 0]] = cut[k, 1], cut[k, 2]
        elif dec.status[k] == 0:
            continue
        X = _points(lo, hi)
        S = [_forward(layers, np.column_stack([X, np.full(len(X), c[2])]))[-1][:, 0] for c in CASES3]
        if layers[-1][2]:           # a final ReLU: the network's output is the clipped value
            S = [np.maximum(v, 0.0) for v in S]
        res = count_individuals(S, PAIRS3, scored, eps=eps or 0.0, eps_strict=strict, claim="c")
        if dec.status[k] == 1 or cut[k, 3] == 1:
            assert not res.unfair.any(), (seed, pattern, post, k, "proved fair, holds an unfair individual")
        else:
            assert res.unfair.all(), (seed, pattern, post, k, "proved unfair, holds a fair individual")
    return int((dec.status == 1).sum() + (cut[:, 3] == 1).sum()), int((dec.status == -1).sum() + (cut[:, 3] == -1).sum())


@pytest.mark.parametrize("post,eps,strict", POSTS)
def test_every_proved_claim_is_true(post, eps, strict):
    """decide_boxes (per-copy and relational bounds; the label post's cuts) on the chains: every box or
    slice proved fair holds no unfair individual, every one proved unfair only unfair ones; some are
    proved either way (the check is not empty)."""
    fair = unfair = 0
    for seed, pattern in CHAINS:
        f, u = _decided(seed, pattern, post, eps, strict)
        fair, unfair = fair + f, unfair + u
    assert fair > 0 and (post == "prob" or unfair > 0), (fair, unfair)


@pytest.mark.parametrize("post,eps,strict", POSTS)
def test_a_final_relu_is_read_as_a_hidden_layer(post, eps, strict):
    """A chain whose LAST layer has a ReLU (a graph ending in Relu): decide_boxes reads it through an exact
    identity layer (certify.boxes.linear_output; it raised "it must have no ReLU", an internal error at the
    tie refinement), and every box it proves fair or unfair is so on every individual, the output the
    clipped value."""
    from fairspec.certify.boxes import linear_output

    fair = unfair = 0
    for seed in range(4):
        for pattern in ((True, True), (True, False, True), (False, True, True)):
            assert len(linear_output(_chain(seed, pattern))) == len(pattern) + 1
            f, u = _decided(seed, pattern, post, eps, strict)
            fair, unfair = fair + f, unfair + u
    assert fair > 0, (fair, unfair)


def test_the_torch_chain_is_decided_at_its_tie(tmp_path, monkeypatch):
    """torch Linear -> Linear -> ReLU -> Linear (float32) over the pair spec: at the runtime's largest gap
    and one step either side, `<=` and `<`, holds only where every gap meets the claim and violated only
    where one does not; at the tie it is decided (the refinement reached the box bounds with the linear
    layer inside: 'unknown', a ValueError, before)."""
    torch = pytest.importorskip("torch")
    from half_nets import half_layers
    from pair_specs import first_verdict, pair_spec, runtime_gaps, ties_never_contradicted

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    layers = half_layers(np.random.default_rng(5), [3, 6, 1], dyadic=True)
    mods = [torch.nn.Linear(3, 6), torch.nn.Linear(6, 6), torch.nn.ReLU(), torch.nn.Linear(6, 1)]
    with torch.no_grad():
        mods[0].weight.copy_(torch.tensor(layers[0][0]))
        mods[0].bias.copy_(torch.tensor(layers[0][1]))
        mods[1].weight.copy_(torch.eye(6) * 0.5)
        mods[1].bias.zero_()
        mods[3].weight.copy_(torch.tensor(layers[1][0]))
        mods[3].bias.copy_(torch.tensor(layers[1][1]))
    m = torch.nn.Sequential(*mods).eval()
    torch.jit.save(torch.jit.script(m), str(tmp_path / "m.pt"))

    def run(X):
        with torch.no_grad():
            return m(torch.from_numpy(X.astype(np.float32))).double().numpy()[:, 0]

    gaps, top, step = runtime_gaps(run)
    seen = {}

    def verdict(op, eps):
        seen[(op, eps)] = v = first_verdict(tmp_path, pair_spec('torch("m.pt", score = logit)', op, eps))
        return v

    ties_never_contradicted(verdict, gaps, top, step)
    assert seen[("<=", top)]["status"] == "holds" and seen[("<", top)]["status"] == "violated", seen
