"""The falsifier on helper 3a's PairProblem, seeds, and the distinct-ID counter."""

import numpy as np

from fairspec.backends.search import Box, Post, Protected, Space, falsify
from fairspec.backends.search.falsify import IdCounter


def test_id_counter_counts_distinct_keys():
    c = IdCounter()
    assert c.add(np.array([3, 1, 3], dtype=np.uint64)) == 2
    assert c.add(np.array([1, 2], dtype=np.uint64)) == 1
    big = np.arange(100_000, dtype=np.uint64)
    assert c.add(big) == 100_000 - 3
    assert len(c) == 100_000


def test_hash_keys_ignore_protected_coordinates():
    sp = Space(Box.make([0, 0, 0], [9, 1, 9], integer=True), [Protected.label(1, [0, 1])])
    S = sp.from_inputs(np.array([[1, 0, 2], [1, 1, 2], [2, 0, 1]], dtype=float))
    h = sp.hash_keys(S)
    assert h[0] == h[1] and h[0] != h[2]


def test_seeds_are_searched_first():
    sp = Space(Box.make([0] * 4, [1000, 1000, 1000, 1], integer=True), [Protected.label(3, [0, 1])])
    f = lambda X: np.where((np.asarray(X)[:, 0] == 417) & (np.asarray(X)[:, 1] == 12), np.asarray(X)[:, 3] - 0.5, -1.0)  # noqa: E731
    res = falsify(f, sp, Post.label(), seeds=[(np.array([417, 12, 5, 0.0]), np.array([417, 12, 5, 1.0]))],
                  max_rounds=0, budget_seconds=None, random_init=0)
    assert res.status == "violated" and res.ids_by_source == {"seed": 1}


def test_falsify_problem_witnesses_pass_check_witness():
    from fairspec.backends.pair import PairProblem, check_witness
    from fairspec.backends.search.bridge import falsify_problem
    from fairspec.models.network import Layer, PLNet

    # logit = x0 + 3 * [race == second category] - 5.5, race one-hot over inputs 1..3 (protected)
    W1 = np.array([[1.0, 0, 0, 0], [0, 0, 3.0, 0]])
    net = PLNet((Layer(W1, np.array([0.0, 0.0]), True), Layer(np.array([[1.0, 1.0]]), np.array([-5.5]), False)))
    problem = PairProblem(net, [0, 0, 0, 0], [10, 1, 1, 1], [True] * 4, ((1, 2, 3),), (1, 2, 3), None, (),
                          "label", 0.0)
    res = falsify_problem(problem, max_rounds=20, budget_seconds=None, seed=0)
    assert res.status == "violated"
    for w in res.witnesses:
        assert check_witness(problem, w.x, w.x_prime, net.forward)
        assert 3 <= w.x[0] <= 5
