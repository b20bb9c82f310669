"""The softmax branch and bound (certify.class_prob) closes an enumerated point leaf only where the runtime scores
its pairs so in EVERY batch (session 35, h7 round 3; /tmp/s35/h7/FOUND3.md).

A point leaf is reached where the box's certified bound (runtime error included) does not meet the claim; it was
closed by ONE batch's probabilities (a batch of four rows). torch on CPU rounds an input differently in batches of
other sizes (README, "Whatever the batch"): on a 4-6-3 float32 network with normal weights (seed 22), the pair
((0, 3, F), (0, 3, M)) moves class 0's probability by 0.16304704546928406 in batches of 1, 2 and 4 and by
0.16304713487625122 in a batch of 16 or the whole grid, and `|prob(m(x), 0) - prob(m(x'), 0)| <= 0.16304704546928406`
was `holds (proved)` (a softmax head; likewise the real softmax of a logit network's logits, eps 0.16304705). Now
the leaf is closed only where certify.exact_runtime.logits_in_every_order shows its rows exact in every order and
the probability a function of those logits alone; otherwise the verdict is unknown ("batched")."""

from __future__ import annotations

import itertools
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from fairspec.certify.class_prob import ClassProbQuery, bound_class_prob
from fairspec.certify.enumerate import compare_exact
from fairspec.certify.rounding import float_up


def _weights(seed=22):
    rng = np.random.default_rng(seed)
    W1 = rng.normal(size=(6, 4)).astype(np.float32)
    b1 = (rng.normal(size=6) * 0.5).astype(np.float32)
    W2 = rng.normal(size=(3, 6)).astype(np.float32)
    b2 = (rng.normal(size=3) * 0.5).astype(np.float32)
    return W1, b1, W2, b2


def _torch_net(tmp_path, head):
    torch = pytest.importorskip("torch")
    W1, b1, W2, b2 = _weights()
    l1, l2 = torch.nn.Linear(4, 6), torch.nn.Linear(6, 3)
    with torch.no_grad():
        for lin, W, b in ((l1, W1, b1), (l2, W2, b2)):
            lin.weight.copy_(torch.from_numpy(W))
            lin.bias.copy_(torch.from_numpy(b))
    mods = [l1, torch.nn.ReLU(), l2] + ([torch.nn.Softmax(dim=1)] if head else [])
    torch.jit.save(torch.jit.script(torch.nn.Sequential(*mods).eval()), str(tmp_path / "m.pt"))


SPEC = """features F {
  a : int in [0, 12]
  b : int in [0, 12]
  s : {F, M} protected
}
model m = torch("m.pt", score = SCORE)
encode F for m { a : raw  b : raw  s : onehot }
property q {
  forall x, x' : F
  require x.* == x'.* except {s}
  ensure |prob(m(x), 0) - prob(m(x'), 0)| <= EPS
  mode = prove
  timeout = 600s
}
"""


@pytest.mark.parametrize("score,head,eps", [("prob", True, "0.16304704546928406"), ("logit", False, "0.16304705")])
def test_a_point_leaf_fair_in_one_batch_proves_nothing(tmp_path, monkeypatch, score, head, eps):
    from fairspec import pipeline

    _torch_net(tmp_path, head)
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    (tmp_path / "s.fair").write_text(SPEC.replace("SCORE", score).replace("EPS", eps))
    v = pipeline.check(tmp_path / "s.fair").verdicts[0]
    # ((0, 3, F), (0, 3, M)) lies within the runtime's rounding of eps: fair in a batch of four, unfair in a batch of
    # 16 rows on this machine's torch; no proof may rest on one batch's probabilities of it
    assert v.status != "holds", (v.status, v.reason, v.details.get("per_class"))
    if v.status == "unknown":
        assert "batched" in v.reason, v.reason


def _query(layers, head, eps, precision="float32"):
    hi = np.array([12.0, 12.0, 1.0, 1.0])
    combos = np.array([[1.0, 0.0], [0.0, 1.0]])
    M = np.array([[False, True], [True, False]])
    return ClassProbQuery(layers, 0, None, precision, head, np.zeros(4), hi, np.ones(4, bool), ((2, 3),), (2, 3),
                          combos, M, (), eps, "<=")


def _probs(layers):
    def row(x):                       # float32 layers, fairspec's float64 softmax, one row at a time (so that this
        H = np.asarray(x, dtype=np.float32).reshape(1, -1)      # stand-in runtime gives one value whatever the batch)
        for W, b, relu in layers:
            H = H @ np.asarray(W, np.float32).T + np.asarray(b, np.float32)
            H = np.maximum(H, np.float32(0)) if relu else H
        y = H.astype(np.float64)
        e = np.exp(y - y.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def probs(X):
        return np.vstack([row(x) for x in np.asarray(X)])
    return probs


def _max_pair(probs):
    pts = np.array([(a, b, f, 1 - f) for a, b in itertools.product(range(13), range(13)) for f in (1, 0)], float)
    P = probs(pts)[:, 0]
    d = np.abs(P[0::2] - P[1::2])
    k = int(np.argmax(d))
    return P[2 * k], P[2 * k + 1]


def test_certify_leaves_a_batch_dependent_point_leaf_open():
    """certify alone (no torch): generic float32 weights, eps at the largest difference this runtime gives: the
    point leaf is fair in the batch scored, but no batch-independent evidence closes it -- open, never proved."""
    W1, b1, W2, b2 = (a.astype(np.float64) for a in _weights())
    layers = [(W1, b1, True), (W2, b2, False)]
    probs = _probs(layers)
    pa, pb = _max_pair(probs)
    eps = str(Decimal(float_up(abs(Fraction(float(pa)) - Fraction(float(pb))))))   # the float at or above the exact difference
    assert compare_exact(np.array([pa]), "<=", eps, minus=np.array([pb]))[0]
    r = bound_class_prob(_query(layers, "none", eps), probs)
    assert r.status == "open", (r.status, r.reason, r.stats)
    assert "batched" in r.reason
    # maximize: the certified bound is the leaf's bound (runtime error included), not one batch's value
    m = bound_class_prob(_query(layers, "none", eps), probs, mode="maximize")
    assert m.status != "proved" or m.bound > float(eps), (m.status, m.bound)


def test_certify_closes_a_point_leaf_exact_in_every_order():
    """dyadic weights and integer inputs: every partial sum exact, the leaf's probabilities are the same in every
    batch, and eps at the exact largest difference is proved."""
    W1 = np.array([[0.5, -0.25, 1.0, 0.0], [-0.5, 0.75, 0.0, 1.0], [0.25, 0.25, -1.0, 0.5]])
    b1 = np.array([0.25, 0.0, -0.5])
    W2 = np.array([[1.0, -0.5, 0.25], [-0.25, 0.5, 0.0], [0.0, 0.0, 0.0]])
    b2 = np.array([0.0, 0.125, 0.0])
    layers = [(W1, b1, True), (W2, b2, False)]
    probs = _probs(layers)
    pa, pb = _max_pair(probs)
    eps = str(Decimal(float_up(abs(Fraction(float(pa)) - Fraction(float(pb))))))   # the float at or above the exact difference
    r = bound_class_prob(_query(layers, "none", eps), probs)
    assert r.status == "proved", (r.status, r.reason, r.stats)
