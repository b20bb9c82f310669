"""The coupling rows of the pair LPs (``PairQuery(coupling=True)``, issue 25's regression maximize):
``relu(p) - relu(p') <= relu(p - p')`` (and its mirror) per ReLU neuron, and two facets of the hull
of ``{(p, relu(p), relu(p - d))}`` in the first layer. Every admissible pair of small dyadic
networks (biased to ties: exact zeros, quarter weights) satisfies every row of every node LP,
checked in exact rationals; maximize's certified bound is never below the brute-force maximum and
its value is a real pair's; a proof with the rows is re-checked by check_tree."""

from __future__ import annotations

import itertools
import time
from fractions import Fraction

import numpy as np
import pytest

from fairspec.backends.pair import PairProblem, brute_force
from fairspec.certify.pairlp import PairQuery, TreeBuilder, check_tree, node_lp
from fairspec.certify.pairlp.nodes import _hull_facets
from fairspec.models.network import Layer, PLNet

pytest.importorskip("highspy")


def _net(rng, sizes, out_bias=True):
    layers = []
    for k in range(len(sizes) - 1):
        W = rng.integers(-4, 5, size=(sizes[k + 1], sizes[k])) / 4.0
        W[rng.random(W.shape) < 0.2] = 0.0
        b = np.zeros(sizes[k + 1]) if rng.random() < 0.5 else rng.integers(-2, 3, sizes[k + 1]) / 2.0
        layers.append(Layer(W, b, k < len(sizes) - 2))
    return PLNet(tuple(layers))


def _problem(rng, onehot=False):
    """A regression pair problem (``logit`` post on the one output): a protected 0/1 input (or a
    one-hot block of 2) and small integral tied inputs."""
    if onehot:
        net = _net(rng, [5, 4, 3, 1])
        return PairProblem(net, np.zeros(5), np.array([1, 1, 2, 3, 1.0]), np.ones(5, bool), ((0, 1),), (0, 1),
                           post="logit")
    net = _net(rng, [3, 5, 4, 1])
    return PairProblem(net, np.zeros(3), np.array([1, 3, 2.0]), np.ones(3, bool), (), (0,), post="logit")


def _pairs(p):
    tied = [i for i in range(p.n) if i not in p.free]
    grids = [range(int(p.lo[i]), int(p.hi[i]) + 1) for i in tied]
    for vals in itertools.product(*grids):
        x = np.zeros(p.n)
        x[tied] = vals
        yield x


def _exact_point(q, case, x):
    """The LP point of a real pair of the case, in Fractions (every layer's p and h, both copies)."""
    L = q.layout
    a, ap = q.cases[case]
    xs = [x.copy(), x.copy()]
    xs[0][list(q.free)] = a
    xs[1][list(q.free)] = ap
    v = [Fraction(0)] * L.n_vars
    for c in (0, 1):
        cols = L.x if c == 0 else L.xp
        h = [Fraction(float(t)) for t in xs[c]]
        for i, col in enumerate(cols):
            v[col] = h[i]
        for k, (W, b, relu) in enumerate(q.layers):
            pre = [Fraction(float(b[j])) + sum(Fraction(float(W[j, i])) * h[i] for i in range(len(h)))
                   for j in range(W.shape[0])]
            for j, col in enumerate(L.p[c][k]):
                v[col] = pre[j]
            h = [max(t, Fraction(0)) for t in pre] if relu else pre
            if relu:
                for j, col in enumerate(L.h[c][k]):
                    v[col] = h[j]
    return v, xs


def _rows_hold(lp, v):
    A = lp.A_ub
    lhs = [Fraction(0)] * A.shape[0]
    for r, c, val in zip(A.row, A.col, A.val):
        lhs[r] += Fraction(float(val)) * v[c]
    return [r for r in range(A.shape[0]) if lhs[r] > Fraction(float(lp.b_ub[r]))]


def test_hull_facets_hold_on_the_curve_and_touch_it():
    rng = np.random.default_rng(0)
    for _ in range(200):
        d = float(rng.choice([-1, 1]) * rng.integers(1, 9) / 8.0)
        l = float(min(0.0, d) - rng.integers(1, 17) / 8.0)
        u = float(max(0.0, d) + rng.integers(1, 17) / 8.0)
        n, r, ok = _hull_facets(np.array([l]), np.array([u]), np.array([d]), np.array([d]))
        assert ok[0]
        dq = Fraction(d)
        ps = [Fraction(l), Fraction(0), dq, Fraction(u)] + [Fraction(l) + (Fraction(u) - Fraction(l)) * k / 64
                                                           for k in range(65)]
        for t in (0, 1):
            vals = [sum(Fraction(float(c)) * w for c, w in zip(n[t, 0], (p_, max(p_, 0), max(p_ - dq, 0))))
                    for p_ in ps]
            assert max(vals) <= Fraction(float(r[t, 0]))
            # a facet: tight (up to rounding) at three of the four breakpoints
            assert sum(Fraction(float(r[t, 0])) - w < Fraction(1, 2 ** 40) for w in vals[:4]) >= 3
    # no facet where the curve has fewer than four breakpoints
    _, _, ok = _hull_facets(np.array([0.5, -1.0]), np.array([2.0, 0.25]), np.array([1.0, 1.0]), np.array([1.0, 1.0]))
    assert not ok.any()


@pytest.mark.parametrize("seed", range(8))
def test_every_pair_satisfies_every_node_lp(seed):
    rng = np.random.default_rng(seed)
    p = _problem(rng, onehot=seed % 2 == 1)
    q = PairQuery.from_problem(p, 0, False, coupling=True)
    assert q.layout.coupling_rows and q.first_shift
    B = TreeBuilder(q, bound_mode=True)
    nodes = list(B.roots())
    # and some children: a split on a first-layer neuron of each copy and on an input
    for root in list(nodes):
        lo_, hi_ = B.split(root, ("relu", 0, 0, 0))
        a, b = B.split(hi_, ("relu", 1, 0, 1))
        c, d = B.split(lo_, ("x", p.n - 1), 0.0)
        nodes += [a, b, c, d]
    for node in nodes:
        st = B.state(node)
        if st.empty:
            continue
        case = B.case(node)
        lp, _ = node_lp(q, case, B.decisions(node), st)
        vlo, vhi = st.box
        for x in _pairs(p):
            v, xs = _exact_point(q, case, x)
            inside = all(Fraction(float(vlo[i])) <= v[i] <= Fraction(float(vhi[i])) for i in range(len(v)))
            dec = B.decisions(node)
            if not inside:
                continue              # not a pair of this node (its phases or box exclude it)
            assert _rows_hold(lp, v) == [], (seed, node)
            del dec


@pytest.mark.parametrize("seed", range(10))
def test_maximize_with_coupling_against_brute_force(seed):
    from fairspec.backends.bab import maximize

    rng = np.random.default_rng(100 + seed)
    p = _problem(rng, onehot=seed % 3 == 2)
    truth = brute_force(p).value
    m = maximize(p, time.monotonic() + 3600, max_nodes=4000)
    assert m.proof is not None and m.proof.method == "bab-certificate"
    assert m.bound >= truth - 1e-12 and m.value <= truth + 1e-12
    if m.status == "proved":
        assert m.bound - truth < 1e-6


def test_a_proof_with_coupling_rows_rechecks(monkeypatch):
    import fairspec.backends.bab.engine as E

    monkeypatch.setattr(E, "COUPLING_PROVE", True)
    rng = np.random.default_rng(5)
    done = 0
    for _ in range(6):
        p = _problem(rng)
        truth = brute_force(p).value
        r = E.prove_below(p, truth + 0.125, False, time.monotonic() + 3600, max_nodes=3000, keep_tree=True)
        if r.status != "proved":
            continue
        assert r.query.coupling
        assert check_tree(r.query, r.trees).proof is not None
        # the same tree without the rows' query is another claim: its leaves need not check
        done += 1
    assert done >= 4
