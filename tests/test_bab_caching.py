"""The branch and bound's per-query caches compute what the uncached code computes: the first layer's
difference box per protected case (``node_state``, no relaxed inputs), the tied-input mask, the node
state and LP a TreeBuilder already holds when it checks a Tighten node, and ``abs`` of a SparseRows."""

from __future__ import annotations

import time

import numpy as np
import pytest

from fairspec.backends.bab import prove_below
from fairspec.certify.lp import SparseRows, upper_bound
from fairspec.certify.pairlp import Leaf, PairQuery, Split, Tighten, TreeBuilder
from fairspec.certify.pairlp import nodes as pairlp_nodes
from fairspec.certify.pairlp.tree import _children, _tightened

pytest.importorskip("highspy")


def _band_problem(seed):
    from test_bab import _problem

    return _problem(np.random.default_rng(100 + seed), "prob", eps=0.125, onehot=seed % 4 == 1)


def _arrays(v):
    if isinstance(v, np.ndarray):
        return [v]
    return [a for w in v for a in _arrays(w)]


def _same_state(a, b):
    assert a.empty == b.empty and a.interval_ok == b.interval_ok
    assert a.measure_ub == b.measure_ub and a.target == b.target
    if a.empty:
        return
    for part_a, part_b in ((a.box, b.box), (a.ibp, b.ibp), (a.diff, b.diff), (a.pdiff, b.pdiff)):
        xs, ys = _arrays(part_a), _arrays(part_b)
        assert len(xs) == len(ys) and all(np.array_equal(x, y) for x, y in zip(xs, ys))


@pytest.mark.parametrize("seed", [4, 8])
def test_every_node_state_of_a_proof_tree_is_the_uncached_one(seed):
    """Walk a proved band-split tree (prob, Tighten nodes below the bands) and compare each node's state
    computed with the query's caches filled against one computed on a query with empty caches."""
    p = _band_problem(seed)
    r = prove_below(p, 0.0625, False, time.monotonic() + 3600, max_nodes=20000, keep_tree=True)
    assert r.status == "proved"
    q = r.query
    fresh = PairQuery.from_problem(p, q.threshold, q.strict)
    seen = 0
    for case, tree in enumerate(r.trees):
        stack = [(tree, pairlp_nodes.Decisions())]
        while stack:
            node, dec = stack.pop()
            cached = pairlp_nodes.node_state(q, case, dec)
            fresh._cache.clear()
            _same_state(cached, pairlp_nodes.node_state(fresh, case, dec))
            seen += 1
            if isinstance(node, Split):
                kids, why = _children(q, dec, node)
                stack += [(node.low, kids[0]), (node.high, kids[1])]
            elif isinstance(node, Tighten):
                child, why = _tightened(q, case, dec, node)
                assert child is not None, why
                stack.append((node.child, child))
            else:
                assert isinstance(node, Leaf)
    assert seen > 10 and any(k[0] == "d0" for k in q._cache if isinstance(k, tuple))


def test_a_builder_checks_a_tighten_on_the_state_and_lp_it_holds(monkeypatch):
    """TreeBuilder.tighten checks the certificates on the node's state and LP it computed already (one
    node_state for the node, not a second one), and still refuses a bound its certificate does not prove."""
    p = _band_problem(4)
    q = PairQuery.from_problem(p, 0.0625, False)
    b = TreeBuilder(q)
    root = b.roots()[0]
    st, lp = b.state(root), b.lp(root)
    assert not st.empty and lp is not None
    calls = []
    real = pairlp_nodes.node_state
    monkeypatch.setattr("fairspec.certify.pairlp.tree.node_state",
                        lambda *a, **k: calls.append(a) or real(*a, **k))
    from fairspec.backends.bab.engine import _Highs

    hs = _Highs(q, lp)
    L = q.layout
    col = int(L.p[0][0][0])
    obj = np.zeros(lp.n)
    obj[col] = 1.0
    status, _, _, y_ub, y_eq = hs.solve(lp, obj)
    assert status == "optimal"
    proved = upper_bound(lp, y_ub, y_eq, c=obj)
    with pytest.raises(ValueError):
        b.tighten(root, {(0, 0, 0): (-np.inf, float(proved) - 0.5)}, {(0, 0, 0, "hi"): (y_ub, y_eq)})
    b.tighten(root, {(0, 0, 0): (-np.inf, float(proved))}, {(0, 0, 0, "hi"): (y_ub, y_eq)})
    assert calls == []


def test_abs_of_sparse_rows_is_the_same_matrix_with_absolute_values():
    A = SparseRows((2, 3), [0, 1, 1], [2, 0, 2], [-1.5, 2.0, -0.25])
    B = abs(A)
    assert isinstance(B, SparseRows) and B.shape == A.shape
    assert np.array_equal(B.row, A.row) and np.array_equal(B.col, A.col)
    assert np.array_equal(B.val, [1.5, 2.0, 0.25]) and np.array_equal(A.val, [-1.5, 2.0, -0.25])
    assert np.array_equal(B.todense(), np.abs(A.todense()))


def test_interval_bounds_reuse_their_product_matrices_and_give_the_same_numbers():
    """rigorous_ibp's interval products find their cached [W+, W-, b] on every call (as_layers passes a
    float64 bias on as the same object, the one-hot first layer's columns are one array per W): a second
    call adds nothing to the cache and returns the same bounds."""
    from fairspec.certify import rounding
    from fairspec.certify.chains import as_layers
    from fairspec.certify.network import rigorous_ibp

    rng = np.random.default_rng(3)
    W1, b1 = rng.normal(size=(4, 6)), rng.normal(size=4)
    W2, b2 = rng.normal(size=(1, 4)), rng.normal(size=1)
    net = [(W1, b1, True), (W2, b2, False)]
    assert as_layers(net)[0][1] is b1 and as_layers(net)[1][1] is b2
    lo, hi = np.zeros(6), np.array([1, 1, 1, 2.0, 1, 1])
    groups = ((0, 1, 2),)
    first = rigorous_ibp(net, lo, hi, groups)
    size = len(rounding._PREP)
    for _ in range(3):
        again = rigorous_ibp(net, lo, hi, groups)
        assert all(np.array_equal(a, c) and np.array_equal(b, d) for (a, b), (c, d) in zip(first, again))
    assert len(rounding._PREP) == size
