"""Individual fairness of multiclass networks (issue 25): the class score g_c, its runtime error
bound, and the class post on MILP and exact SMT against brute force on tiny tie-biased models."""

import math

import numpy as np
import pytest

from fairspec.backends.pair import PairProblem
from fairspec.backends.pair.multiclass import ClassProblem, brute_force_class, class_net, solve_class
from fairspec.certify.network import argmax_class_score, argmax_layers, runtime_error_bound
from fairspec.certify.proof import Proof
from fairspec.models.network import Layer, PLNet


def _net(rng, n, h, K):
    W1 = rng.integers(-4, 5, (h, n)) / 4.0
    b1 = rng.integers(-2, 3, h) / 4.0
    W2 = rng.integers(-4, 5, (K, h)) / 4.0
    W2[rng.random(W2.shape) < 0.3] = 0.0
    b2 = rng.integers(-1, 2, K) / 4.0
    return PLNet((Layer(W1, b1, True), Layer(W2, b2, False)))


def _problem(net, hi=(2.0, 3.0, 1.0)):
    n = len(hi)
    pre = PairProblem(class_net(net, 0), np.zeros(n), np.array(hi), np.ones(n, bool), free=(n - 1,))
    return ClassProblem(net, pre)


@pytest.mark.parametrize("K", [2, 3, 4, 5])
def test_class_score_is_min_margin(K):
    rng = np.random.default_rng(K)
    net = _net(rng, 3, 5, K)
    X = rng.integers(0, 4, (200, 3)).astype(float)
    Y = net.forward_all(X)
    for c in range(K):
        g = class_net(net, c).forward(X)
        want = np.min(Y[:, [c]] - np.delete(Y, c, axis=1), axis=1)
        assert np.array_equal(g, want)       # dyadic weights: exact


def test_class_score_relu_output_layer():
    rng = np.random.default_rng(3)
    net = _net(rng, 3, 4, 3)
    net = PLNet(net.layers[:-1] + (Layer(net.layers[-1].W, net.layers[-1].b, True),))
    X = rng.integers(0, 4, (50, 3)).astype(float)
    Y = net.forward_all(X)
    g = class_net(net, 1).forward(X)
    assert np.array_equal(g, np.min(Y[:, [1]] - Y[:, [0, 2]], axis=1))


def test_argmax_class_score_ties_first_index():
    Y = np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 2.0], [3.0, 1.0, 2.0]])
    assert list(argmax_class_score(Y, 0) > 0) == [True, False, True]
    assert list(argmax_class_score(Y, 1) > 0) == [False, True, False]
    assert list(argmax_class_score(Y, 2) > 0) == [False, False, False]


def test_inexact_margin_refused():
    W = np.array([[1.0, 0.0], [2.0 ** -60, 1.0]])
    net = PLNet((Layer(np.eye(2), np.zeros(2), True), Layer(W, np.zeros(2), False)))
    with pytest.raises(ValueError):
        argmax_layers(net, 0)


def test_error_bound_checks_the_proof_net():
    rng = np.random.default_rng(5)
    net = _net(rng, 3, 4, 3)
    layers = [(L.W, L.b, L.relu) for L in net.layers]
    lo, hi = np.zeros(3), np.array([2.0, 3.0, 1.0])
    E = runtime_error_bound(layers, lo, hi, readout=("argmax", 1), proof_net=class_net(net, 1), base_net=net)
    assert 0 < E < 1e-4
    with pytest.raises(ValueError):       # the class score of another class is not this proof's network
        runtime_error_bound(layers, lo, hi, readout=("argmax", 1), proof_net=class_net(net, 2), base_net=net)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("engine", ["highs", "z3"])
def test_class_post_against_brute_force(seed, engine):
    rng = np.random.default_rng(100 + seed)
    net = _net(rng, 3, 4, int(rng.integers(2, 5)))
    cp = _problem(net)
    truth = brute_force_class(cp).status
    for mode in ("prove", "maximize") if seed < 2 and engine == "highs" else ("prove",):
        r = solve_class(cp, mode, engine, time_limit=30)
        assert r.status in (truth, "unknown"), (mode, r.status, truth, r.reason)
        if r.status == "holds":
            assert isinstance(r.proof, Proof) and r.proof.detail["classes"] == cp.K
        if r.status == "violated":
            w = r.witness
            k = np.argmax(net.forward_all(np.array([w.x, w.x_prime]), dtype=np.float32), axis=1)
            assert k[0] != k[1]
        if mode == "maximize" and r.bound is not None and r.value is not None and math.isfinite(r.bound):
            assert r.value <= r.bound + 1e-12


def test_class_prob_many_classes_is_unknown():
    rng = np.random.default_rng(1)
    cp = ClassProblem(_net(rng, 3, 4, 3), _problem(_net(rng, 3, 4, 3)).pre, post="class_prob", cls=0)
    r = solve_class(cp, "prove")
    assert r.status == "unknown" and "not piecewise linear" in r.reason
