"""k-discrimination: C_eps, a hand-built network with a known max k, Algorithm 1's variants."""

import numpy as np
import pytest

from fairspec.backends.search.kdisc import cluster_labels, k_of, k_of_inputs, kdisc_search
from fairspec.backends.search import Box, Protected, Space
from fairspec.backends.search.evaluators import NumpyMLP

TARGET = [0.12, 0.13, 0.37, 0.62, 0.87]   # probabilities at x = 5 for z = 0..4: buckets 2,2,7,12,17
KNOWN_K = 4


def logit(p):
    return np.log(p / (1 - p))


def known_k_net(M: float = 100.0) -> NumpyMLP:
    """Inputs (x in 0..10, z in 0..4). At x = 5 the logits are logit(TARGET[z]); at every other
    integer x the output is the same for all z (k = 1). So the max k is exactly 4."""
    L = logit(np.array(TARGET))
    b = L[0]
    g = L - b                         # g(0) = 0, increasing
    s = np.diff(g)                    # slopes between integers
    c = np.concatenate(([s[0]], np.diff(s)))  # g(z) = sum_j c_j relu(z - j)
    K = len(TARGET)
    # layer 1: relu(z - j) for j < K-1, relu(x - 5), relu(5 - x)
    W1 = np.zeros((2, K + 1))
    b1 = np.zeros(K + 1)
    for j in range(K - 1):
        W1[1, j] = 1.0
        b1[j] = -j
    W1[0, K - 1], b1[K - 1] = 1.0, -5.0
    W1[0, K], b1[K] = -1.0, 5.0
    # layer 2: relu(g(z) - M * |x - 5|)
    W2 = np.zeros((K + 1, 1))
    W2[: K - 1, 0] = c
    W2[K - 1, 0] = W2[K, 0] = -M
    b2 = np.zeros(1)
    # output: b + h
    W3, b3 = np.ones((1, 1)), np.array([b])
    return NumpyMLP([(W1, b1, True), (W2, b2, True), (W3, b3, False)], dtype=np.float64)


def evaluator(net):
    return lambda X: net.forward(X)[:, 0]


def kspace():
    return Space(Box.make([0, 0], [10, 4], integer=True), [Protected.label(1, range(5), "z")])


def test_c_eps_buckets_and_gaps():
    P = np.array([[0.12, 0.13, 0.37, 0.62, 0.87], [0.5, 0.5, 0.5, 0.5, 0.5], [0.0, 0.049, 0.05, 0.999, 1.0]])
    assert k_of(P, 0.05).tolist() == [4, 1, 3]
    assert k_of(P, 0.05, "gaps").tolist() == [4, 1, 2]
    assert cluster_labels(P[0], 0.05).tolist() == [0, 0, 1, 2, 3]
    assert cluster_labels(np.array([0.9, 0.1, 0.12]), 0.05, "gaps").tolist() == [1, 0, 0]


def test_hand_built_network_has_known_k():
    net, sp = known_k_net(), kspace()
    X = np.array([[x, 0] for x in range(11)], dtype=float)
    ks = k_of_inputs(evaluator(net), sp, X)
    assert ks.tolist() == [1] * 5 + [KNOWN_K] + [1] * 5   # brute force over the whole domain


@pytest.mark.parametrize("method", ["sa", "rw", "sa+knn"])
def test_search_reaches_the_known_max_k(method):
    net, sp = known_k_net(), kspace()
    data = np.array([[x, z] for x in (0, 1, 2, 8, 9, 10) for z in range(5)], dtype=float)
    res = kdisc_search(evaluator(net), sp, method=method, data=data, seed=3, max_iters=60,
                       budget_seconds=None, chains=16)
    assert res.max_k == KNOWN_K and res.K == 5
    w = res.witness
    assert w is not None and w.x[0] == 5 and w.k == KNOWN_K
    assert np.allclose(1 / (1 + np.exp(-evaluator(net)(w.inputs))), w.scores)
    assert np.allclose(w.scores, TARGET)
    assert len(set(w.clusters.tolist())) == KNOWN_K
    assert res.ids >= 1 and 0 < res.success_rate <= 1 and res.seconds_to_max_k is not None


def test_kdisc_deterministic_and_reseeded_by_witnesses():
    net, sp = known_k_net(), kspace()
    kw = dict(method="sa", seed=11, max_iters=15, budget_seconds=None, chains=8)
    a = kdisc_search(evaluator(net), sp, **kw)
    b = kdisc_search(evaluator(net), sp, **kw)
    assert (a.max_k, a.ids, a.candidates, a.evaluations) == (b.max_k, b.ids, b.candidates, b.evaluations)
    # a solver witness at the peak gives max k at once
    c = kdisc_search(evaluator(net), sp, seeds=[np.array([5.0, 0.0])], max_iters=1, budget_seconds=None,
                     chains=4)
    assert c.max_k == KNOWN_K


def test_external_solver_is_called():
    net, sp = known_k_net(), kspace()
    calls = []

    def solver(X):
        calls.append(X.shape[0])
        out = X.copy()
        out[:, 0] = 5.0
        return out

    res = kdisc_search(evaluator(net), sp, solver=solver, max_iters=3, budget_seconds=None, chains=4, seed=0)
    assert calls and res.max_k == KNOWN_K


def test_banded_protected_attribute_counts_combinations():
    box = Box.make([0, 0, 0], [100, 1, 10], integer=True)
    sp = Space(box, [Protected.banded(0, [(10, 39), (40, 100)], "age"), Protected.label(1, [0, 1], "sex")])
    assert sp.K == 4
    f = lambda X: (np.asarray(X)[:, 0] - 40) / 10 + np.asarray(X)[:, 1]  # noqa: E731
    res = kdisc_search(f, sp, max_iters=20, budget_seconds=None, chains=8, seed=0)
    assert 2 <= res.max_k <= 4
    ages = res.witness.inputs[:, 0]
    assert ages.min() >= 10 and ages.max() <= 100


def test_milp_solver_reseeds_the_search():
    pytest.importorskip("highspy")
    from fairspec.backends.search.kdisc import milp_solver
    from fairspec.backends.pair import PairProblem
    from fairspec.models.network import Layer, PLNet

    net = known_k_net()
    pl = PLNet(tuple(Layer(W.T.astype(float), b.astype(float), r) for W, b, r in net.layers))
    problem = PairProblem(pl, [0, 0], [10, 4], [True, True], (), (1,), None, (), "prob", 0.05)
    solver = milp_solver(problem, radius=1.0, time_limit=10.0)
    got = solver(np.array([[0.0, 0.0]]))
    assert got[0, 0] == 5.0                     # the only 2-discriminants sit at x = 5
    res = kdisc_search(evaluator(net), kspace(), solver=solver, max_iters=2, budget_seconds=None, chains=2,
                       seed=0, data=np.array([[0.0, 0.0]]))
    assert res.max_k == KNOWN_K


def test_mutations_are_domain_points():
    # issue 20, class 5: a row that draws the same one-hot gene twice must still switch on one
    # category of the block (two ones is no domain point)
    box = Box.make([0] * 7, [1] * 7, integer=True, onehot_groups=[(2, 3), (4, 5, 6)])
    space = Space(box, [Protected.label(0, [0, 1], "g")])
    rng = np.random.default_rng(0)
    S = space.sample(rng, 50)
    assert box.contains(S[:, : space.d]).all()
    for _ in range(20):
        S = space.mutate(rng, S, 4, max_genes=3)
        assert box.contains(S[:, : space.d]).all()
        S = S[rng.integers(0, S.shape[0], 50)]


def _brute_k(p, eps):
    from fractions import Fraction
    e = Fraction(eps)
    inv = 1 / e
    nb = inv.numerator // inv.denominator + (inv.denominator != 1)
    bs = set()
    for x in p:
        q = Fraction(float(x))
        b = (q / e).__floor__() if q > 0 else 0
        bs.add(min(max(int(b), 0), nb - 1))
    return len(bs)


@pytest.mark.parametrize("eps", ["0.1", "0.25", "0.3", "0.05"])
def test_kdisc_enumeration_counts_buckets_exactly(eps):
    # issue 20: probabilities on bucket boundaries (0.1, 0.3, 0.25, 0.5, 1.0 as floats) decided exactly
    from fairspec.certify.enumerate import kdisc_by_enumeration

    rng = np.random.default_rng(7)
    grid = np.array([0.0, 0.05, 0.1, 0.2, 0.25, 0.3, 0.5, 0.6, 0.75, 0.9, 1.0, 0.30000000000000004])
    K = 3
    P = np.where(rng.random((400, K)) < 0.7, rng.choice(grid, (400, K)), rng.random((400, K)))
    want = np.array([_brute_k(row, eps) for row in P])
    for k in (1, 2, 3, 4):
        for op in ("<", "<="):
            r = kdisc_by_enumeration(P.reshape(-1), K=K, eps=eps, op=op, k=k, logit=False, claim="c")
            assert (r.k_lo == want).all() and (r.k_hi == want).all()
            holds = (want < k).all() if op == "<" else (want <= k).all()
            assert (r.proof is not None) == holds


def test_kdisc_enumeration_logit_at_zero_is_one_half():
    from fairspec.certify.enumerate import kdisc_by_enumeration

    # sigmoid(0) = 1/2 exactly: bucket 5 of eps = 0.1 (not 4); sigmoid(-1e-300) is undecided there
    r = kdisc_by_enumeration(np.array([0.0, 0.0]), K=2, eps="0.1", op="<", k=2, logit=True, claim="c")
    assert r.proof is not None and r.k_hi[0] == 1
    r = kdisc_by_enumeration(np.array([0.0, -1e-300]), K=2, eps="0.1", op="<", k=2, logit=True, claim="c")
    assert r.proof is None and r.k_lo[0] == 1 and r.k_hi[0] == 2
