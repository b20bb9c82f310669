"""The batched falsifier: planted violations, determinism, relaxed pre-conditions, replay."""

import numpy as np
import pytest

from fairspec.backends.search import Box, Post, Protected, Space, falsify, pair_scores, replay


def relu(z):
    return np.maximum(z, 0.0)


def planted(X):
    """logit -1 everywhere except near (x1, x2) = (70, 30), where protected p = 1 lifts it to +1."""
    X = np.asarray(X, dtype=np.float64)
    bump = relu(1.0 - np.abs(X[:, 1] - 70) / 10 - np.abs(X[:, 2] - 30) / 10)
    return -1.0 + 2.0 * X[:, 4] * bump * 1.5 + 0.001 * X[:, 0]


def space5():
    box = Box.make([0] * 5, [100, 100, 100, 100, 1], integer=True)
    return Space(box, [Protected.label(4, [0, 1], "sex")])


def test_search_finds_planted_violation():
    sp = space5()
    res = falsify(planted, sp, Post.label(), seed=1, max_rounds=200, budget_seconds=None)
    assert res.status == "violated"
    assert res.ids >= 1 and res.seconds_to_first is not None
    w = res.witnesses[0]
    assert abs(w.x[1] - 70) + abs(w.x[2] - 30) < 7
    assert w.x[4] != w.x_prime[4]
    same = np.delete(np.arange(5), 4)
    assert np.array_equal(w.x[same], w.x_prime[same])
    # the witnesses replay on an independent evaluation and are sorted by violation
    assert len(replay(res.witnesses, lambda X: planted(np.asarray(X)), Post.label(), sp)) == len(res.witnesses)
    v = [w.violation for w in res.witnesses]
    assert v == sorted(v, reverse=True)


def test_stop_at_first_and_data_phase():
    sp = space5()
    data = np.array([[0, 70, 30, 5, 0], [1, 2, 3, 4, 1]], dtype=float)
    res = falsify(planted, sp, Post.label(), data=data, seed=0, stop_at_first=True, budget_seconds=5)
    assert res.status == "violated"
    assert res.ids_by_source.get("data", 0) == 1
    assert res.rounds == 0


def test_no_violation_is_unknown_never_holds():
    sp = space5()
    res = falsify(lambda X: np.asarray(X)[:, 0] - 50.5, sp, Post.label(), seed=0, max_rounds=20,
                  budget_seconds=None)
    assert res.status == "unknown" and res.ids == 0 and not res.witnesses
    assert res.best_objective <= 0 and "no violation" in res.reason


def test_deterministic_under_seed():
    sp = space5()
    post = Post.prob(0.2)
    a = falsify(planted, sp, post, seed=7, max_rounds=30, budget_seconds=None)
    b = falsify(planted, sp, post, seed=7, max_rounds=30, budget_seconds=None)
    assert a.ids == b.ids and a.evaluations == b.evaluations
    assert [tuple(w.x) for w in a.witnesses] == [tuple(w.x) for w in b.witnesses]
    assert a.best_objective == b.best_objective


def test_relaxed_precondition_opens_pairs():
    box = Box.make([0, 0, 0], [10, 10, 1], integer=True)
    f = lambda X: np.asarray(X)[:, 0] - 5.5  # noqa: E731 - the protected coordinate is ignored
    strict = falsify(f, Space(box, [Protected.label(2, [0, 1])]), Post.label(), seed=0, max_rounds=20,
                     budget_seconds=None)
    assert strict.status == "unknown"
    sp = Space(box, [Protected.label(2, [0, 1])], relaxed={0: 1})
    res = falsify(f, sp, Post.label(), seed=0, max_rounds=20, budget_seconds=None)
    assert res.status == "violated"
    w = res.witnesses[0]
    assert abs(w.x[0] - w.x_prime[0]) <= 1 and w.x[2] != w.x_prime[2]
    assert {w.x[0], w.x_prime[0]} == {5.0, 6.0}


def test_onehot_protected_and_prob_post():
    # inputs: x0 in [0, 10], one-hot race (3 coords); score depends on race 2 only when x0 > 7
    box = Box.make([0, 0, 0, 0], [10, 1, 1, 1], integer=True, onehot_groups=[(1, 2, 3)])
    sp = Space(box, [Protected.onehot([1, 2, 3], "race")])
    assert sp.K == 3
    f = lambda X: 3.0 * np.asarray(X)[:, 3] * relu(np.asarray(X)[:, 0] - 7)  # noqa: E731
    res = falsify(f, sp, Post.prob(0.3), seed=0, max_rounds=30, budget_seconds=None)
    assert res.status == "violated"
    for w in res.witnesses:
        assert w.x[0] >= 8 and box.contains(np.vstack([w.x, w.x_prime])).all()
        assert w.x[1:].sum() == 1 and w.x_prime[1:].sum() == 1


def test_pair_scores_best_pair_and_objective_sign():
    sp = Space(Box.make([0, 0], [10, 4], integer=True), [Protected.label(1, range(5))])
    S = sp.from_inputs(np.array([[3.0, 0.0]]))
    ps = pair_scores(lambda X: np.asarray(X)[:, 1] - 1.5, sp, Post.label(), S)
    assert ps.viol[0] and ps.i[0] == 4 and ps.j[0] == 0
    assert ps.obj[0] == pytest.approx(1.5)


def test_space_expand_and_project():
    box = Box.make([0, 0], [5, 1], integer=True)
    sp = Space(box, [Protected.banded(0, [(0, 2), (3, 5)], "age"), Protected.label(1, [0, 1])])
    assert sp.K == 4 and sp.width == 4
    S = sp.from_inputs(np.array([[4.4, 7.0]]))
    assert S[0, 0] == 4 and S[0, 1] == 1 and S[0, 2] == 2 and S[0, 3] == 4
    X = sp.expand(S)[0]
    assert X.tolist() == [[2, 0], [2, 1], [4, 0], [4, 1]]
