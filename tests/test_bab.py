"""The certified branch and bound against brute force on small random networks biased towards ties
(weights multiples of 1/4, zero biases, thresholds equal to the true optimum): `proved` only when
the truth holds, maximize's certified bound never below the true maximum, and check_tree refuses
tampered trees (a leaf removed, a split that does not cover, a wrong multiplier)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from fairspec.backends.bab import maximize, prove_below
from fairspec.backends.pair import PairProblem, brute_force, precondition_holds
from fairspec.certify.network import as_layers
from fairspec.certify.pairlp import Leaf, PairQuery, Split, Tighten, TreeBuilder, check_tree
from fairspec.models.network import Layer, PLNet

pytest.importorskip("highspy")


def _dyadic_net(rng, sizes):
    layers = []
    for k in range(len(sizes) - 1):
        W = rng.integers(-4, 5, size=(sizes[k + 1], sizes[k])) / 4.0
        b = np.zeros(sizes[k + 1]) if rng.random() < 0.7 else rng.integers(-2, 3, sizes[k + 1]) / 2.0
        layers.append(Layer(W, b, k < len(sizes) - 2))
    return PLNet(tuple(layers), 0, "sigmoid")


def _problem(rng, post, eps=0.0, onehot=False, relaxed=False):
    if onehot:        # inputs: a protected one-hot block of 2, a tied one-hot block of 3, two integers
        net = _dyadic_net(rng, [7, 4, 3, 1])
        lo, hi = np.zeros(7), np.array([1, 1, 1, 1, 1, 3, 2.0])
        return PairProblem(net, lo, hi, np.ones(7, bool), ((0, 1), (2, 3, 4)), (0, 1), None,
                           ((5, 1.0),) if relaxed else (), post, eps)
    net = _dyadic_net(rng, [3, 4, 3, 1])
    return PairProblem(net, np.zeros(3), np.array([1, 3, 3.0]), np.ones(3, bool), (), (0,), None,
                       ((2, 1.0),) if relaxed else (), post, eps)


def _claim_fails(post, thr, strict, z, zp):
    from fairspec.backends.pair import pair_measure
    m = float(pair_measure(post, z, zp))
    return m >= thr if strict else m > thr


@pytest.mark.parametrize("seed", range(15))
def test_never_a_wrong_proof_at_ties(seed):
    rng = np.random.default_rng(seed)
    post = ("label", "logit", "prob")[seed % 3]
    p = _problem(rng, post, eps={"label": 0.0, "logit": 0.5, "prob": 0.125}[post],
                 onehot=seed % 4 == 1, relaxed=seed % 5 == 2)
    bf = brute_force(p)
    truth_max = bf.value
    # a node budget, not a time budget: at an exact tie (a non-strict threshold at a true maximum
    # the network reaches everywhere) the search can split without end; 500 nodes are a fraction
    # of a second and the outcome does not depend on the machine's speed
    deadline = lambda: time.monotonic() + 3600
    # thresholds at the true optimum: strict must never be proved, non-strict may be
    for thr, strict in ((truth_max, True), (truth_max, False), (0.0, True), (p.eps, False)):
        r = prove_below(p, thr, strict, deadline(), max_nodes=500)
        assert r.status in ("proved", "candidate", "timeout", "gave-up")
        holds = (truth_max < thr) if strict else (truth_max <= thr)
        if r.status == "proved":
            assert holds, (seed, post, thr, strict, truth_max)
            assert r.proof.method == "bab-certificate" and r.proof.detail["leaves"] >= 1
        if r.status == "candidate":
            x, xp = r.pair
            assert precondition_holds(p, x, xp)[0]
            z = p.net.forward(np.vstack([x, xp]))
            if not _claim_fails(post, thr, strict, z[0], z[1]):
                # only a probability (not a rational) can sit within rounding of the threshold
                from fairspec.backends.pair import pair_measure
                assert post == "prob" and "rounding" in r.reason
                assert abs(float(pair_measure(post, z[0], z[1])) - thr) < 1e-9
    # maximize: the certified bound is never below the truth; the value is a real pair's
    m = maximize(p, deadline(), max_nodes=500)
    assert m.bound >= truth_max - 1e-12 and m.value <= truth_max + 1e-12
    if m.status == "proved":
        assert m.proof is not None and m.bound - truth_max < 1e-6


def test_proof_when_it_holds_and_the_tree_rechecks():
    rng = np.random.default_rng(7)
    found = 0
    for _ in range(12):
        p = _problem(rng, "logit")
        bf = brute_force(p)
        thr = bf.value + 0.25
        # a node budget, not a time budget: the outcome does not depend on the machine's speed
        r = prove_below(p, thr, True, time.monotonic() + 3600, max_nodes=3000)
        assert r.status in ("proved", "gave-up")
        found += r.status == "proved"
    assert found >= 10


def _lp_tree(seed=3):
    """A proved tree with at least one LP leaf (and its query)."""
    rng = np.random.default_rng(seed)
    for _ in range(50):
        p = _problem(rng, "logit")
        bf = brute_force(p)
        q = PairQuery.from_problem(p, bf.value + 1e-3, False)
        from fairspec.backends.bab.engine import _Search
        b = TreeBuilder(q)
        S = _Search(q, b, time.monotonic() + 30)
        ok = True
        for root in b.roots():
            stack = [root]
            while stack:
                node = stack.pop()
                st = b.state(node)
                if st.empty or st.interval_ok:
                    b.close(node)
                    continue
                out = S.solve(node)
                if S.try_close(node, out):
                    continue
                br = S.branch(node, out[1] if out[1] is not None else 0.5 * (st.box[0] + st.box[1]))
                if br is None:
                    ok = False
                    break
                stack += list(b.split(node, br[0], br[1]))
            if not ok:
                break
        if ok and b.counts["lp"] >= 1 and b.proof() is not None:
            return q, b.trees()
    pytest.skip("no tree with an LP leaf found")


def _leaves(t, path=()):
    if isinstance(t, Leaf):
        yield path, t
    else:
        yield from _leaves(t.low, path + ("low",))
        yield from _leaves(t.high, path + ("high",))




def test_check_tree_accepts_the_tree_and_refuses_tampering():
    q, trees = _lp_tree()
    ok = check_tree(q, trees)
    assert ok.proof is not None and ok.proof.method == "bab-certificate", ok.reason
    # a wrong multiplier: the LP leaf's multipliers zeroed / negated
    for case, t in enumerate(trees):
        for path, leaf in _leaves(t):
            if leaf.y_ub is None:
                continue
            for bad in (Leaf(np.zeros_like(leaf.y_ub), np.zeros_like(leaf.y_eq)), Leaf(-leaf.y_ub, leaf.y_eq),
                        Leaf(leaf.y_ub * 0.5, leaf.y_eq * 0.5), Leaf()):
                tampered = list(trees)
                tampered[case] = _put(t, path, bad)
                r = check_tree(q, tampered)
                # the tampered leaf may still be closable by chance (e.g. half the multipliers), never
                # by a wrong bound: when refused, the reason names the leaf
                if r.proof is None:
                    assert "leaf" in r.reason
            break
    # a leaf removed
    for case, t in enumerate(trees):
        if isinstance(t, Split):
            tampered = list(trees)
            tampered[case] = Split(t.var, t.at, t.low, None, t.high_at)
            assert check_tree(q, tampered).proof is None
            # a split that does not cover its parent (the high side starts past the gap)
            if t.var[0] in ("x", "xp"):
                tampered[case] = Split(t.var, t.at, t.low, t.high, (t.at if t.at is not None else 0) + 3)
                r = check_tree(q, tampered)
                assert r.proof is None and "cover" in r.reason
            break
    # a case missing
    assert check_tree(q, trees[:-1]).proof is None
    # a claim that does not hold: the same tree for a lower threshold is refused
    q2 = PairQuery(q.layers, q.lo, q.hi, q.integer, q.onehot_groups, q.free, q.must_differ, q.relaxed,
                   q.post, q.threshold - 1, q.strict)
    assert check_tree(q2, trees).proof is None


def test_zero_minimum_neurons_and_a_label_tie():
    """Neurons whose minimum over the domain is exactly 0 and a logit exactly 0 at a pair: the
    label claim min(z, -z') < 0 is not proved (a pair has z == 0), nothing breaks."""
    W1 = np.array([[1.0, 0.0], [0.0, 1.0]])      # relu(x0), relu(x1): minimum exactly 0
    W2 = np.array([[1.0, -1.0]])
    net = PLNet((Layer(W1, np.zeros(2), True), Layer(W2, np.zeros(1), False)), 0, "none")
    p = PairProblem(net, np.zeros(2), np.array([1.0, 2.0]), np.ones(2, bool), (), (0,), None, (), "label", 0.0)
    bf = brute_force(p)
    r = prove_below(p, 0.0, True, time.monotonic() + 30)
    assert bf.status == "violated" and r.status == "candidate"
    p2 = PairProblem(net, np.zeros(2), np.array([1.0, 0.0]), np.ones(2, bool), (), (0,), None, (), "logit", 1.0)
    assert brute_force(p2).value == 1.0
    assert prove_below(p2, 1.0, True, time.monotonic() + 30).status != "proved"      # |z - z'| == 1
    assert prove_below(p2, 1.0, False, time.monotonic() + 30).status in ("proved", "timeout")


def test_moved_threshold():
    from fractions import Fraction
    from fairspec.certify.pairlp import moved_threshold
    assert moved_threshold("label", 0, 0.25) == (Fraction(-1, 4), True)
    assert moved_threshold("logit", "0.1", 0.0) == (Fraction(1, 10), False)
    assert moved_threshold("prob", 0.05, 2.0 ** -20, eps_strict=True) == (Fraction(5, 100) - 2 * Fraction(2.0 ** -20), True)


def test_certify_holds_on_a_float32_runtime():
    """End to end: a network of float32 numbers, the runtime's E moved into the claim, the BaB
    proof; and a threshold exactly at the true maximum is never proved on a runtime that may round
    (float16 here), and is on one exact over the box (dyadic weights on integral inputs: E = 0)."""
    from fairspec.backends.bab import certify_holds
    rng = np.random.default_rng(11)
    net = _dyadic_net(rng, [3, 4, 1])
    p = PairProblem(net, np.zeros(3), np.array([1, 3, 3.0]), np.ones(3, bool), (), (0,), None, (), "logit", 2.0)
    truth = brute_force(p).value
    p = PairProblem(net, p.lo, p.hi, p.integer, (), (0,), None, (), "logit", truth + 0.5)
    r = certify_holds(p, net, time.monotonic() + 3600, max_nodes=5000, precision="float16")
    assert r.status == "proved" and r.stats["runtime_error"] > 0
    # exactly at the threshold: the runtime's rounding could break it, so no proof
    p = PairProblem(net, p.lo, p.hi, p.integer, (), (0,), None, (), "logit", truth)
    assert certify_holds(p, net, time.monotonic() + 3600, max_nodes=5000, precision="float16").status != "proved"
    # float32 computes every pair of this box exactly: the tie is proved, by exact single-pair leaves
    r = certify_holds(p, net, time.monotonic() + 3600, max_nodes=5000)
    assert r.status == "proved" and r.stats["runtime_error"] == 0.0


def test_certified_tightening_in_the_tree():
    """Trees with LP-tightened bounds (Tighten nodes) recheck; a bound tighter than its
    certificate proves is refused."""
    from fairspec.backends.bab import engine
    from fairspec.certify.pairlp import Tighten
    rng = np.random.default_rng(5)
    seen = 0
    for _ in range(40):
        net = _dyadic_net(rng, [3, 5, 4, 1])
        p = PairProblem(net, np.zeros(3), np.array([1, 4, 4.0]), np.ones(3, bool), (), (0,), None, (), "logit", 0.0)
        truth = brute_force(p).value
        r = prove_below(p, truth + 0.125, False, time.monotonic() + 3600, max_nodes=3000, keep_tree=True)
        if r.status != "proved" or not r.proof.detail["splits"].get("tighten"):
            continue
        seen += 1
        assert check_tree(r.query, r.trees).proof is not None
        for case, t in enumerate(r.trees):
            if isinstance(t, Tighten):
                (key, (lo, hi)), = list(t.bounds.items())[:1]
                bad = dict(t.bounds)
                bad[key] = (lo, hi - 1.0) if hi != float("inf") else (lo + 1.0, hi)
                tampered = list(r.trees)
                tampered[case] = Tighten(bad, t.certs, t.child)
                res = check_tree(r.query, tampered)
                assert res.proof is None and "certificate" in res.reason
                break
        if seen >= 2:
            break
    assert seen >= 1


def _band_split_paths(t, path=()):
    from fairspec.certify.pairlp.tree import Tighten

    if isinstance(t, Tighten):
        yield from _band_split_paths(t.child, path + ("child",))
    elif isinstance(t, Split):
        if t.var[0] == "out":
            yield path
        yield from _band_split_paths(t.low, path + ("low",))
        yield from _band_split_paths(t.high, path + ("high",))


def _put(t, path, new):
    """``t`` with the node at ``path`` (steps low / high / child) replaced by ``new``."""
    from fairspec.certify.pairlp.tree import Tighten

    if not path:
        return new
    if path[0] == "child":
        return Tighten(t.bounds, t.certs, _put(t.child, path[1:], new))
    if path[0] == "low":
        return Split(t.var, t.at, _put(t.low, path[1:], new), t.high, t.high_at)
    return Split(t.var, t.at, t.low, _put(t.high, path[1:], new), t.high_at)


@pytest.mark.parametrize("seed", range(12))
def test_band_splits_for_prob_never_a_wrong_proof_and_the_tree_rechecks(seed):
    """prob with the band split of x''s logit first (BAND_SPLIT): proved only when brute force agrees,
    at the true maximum (strict and not) and around it; every proved tree rechecks in check_tree, and
    a tree whose band split no longer covers its parent (the high band starting above the split) is
    refused. Node budgets, not time: the outcome does not depend on the machine."""
    from fairspec.backends.bab import engine

    assert engine.BAND_SPLIT is not None
    rng = np.random.default_rng(100 + seed)
    p = _problem(rng, "prob", eps=0.125, onehot=seed % 4 == 1)
    truth = brute_force(p).value
    bands = tightened = 0
    for thr, strict in ((truth, True), (truth, False), (truth + 1e-3, False), (0.0625, False), (0.25, True)):
        r = prove_below(p, thr, strict, time.monotonic() + 3600, max_nodes=20000, keep_tree=True)
        holds = truth < thr if strict else truth <= thr
        assert r.status in ("proved", "candidate", "gave-up"), r.reason
        if r.status != "proved":
            continue
        assert holds, (seed, thr, strict, truth)
        assert check_tree(r.query, r.trees).proof is not None
        for case, t in enumerate(r.trees):
            for path in _band_split_paths(t):
                bands += 1
                node = t
                for step in path:
                    node = getattr(node, step)
                gap = Split(node.var, node.at, node.low, node.high,
                            float(np.nextafter(node.high_at if node.high_at is not None else node.at, np.inf)) + 0.5)
                tampered = list(r.trees)
                tampered[case] = _put(t, path, gap)
                assert check_tree(r.query, tampered).proof is None
                break
            for path in _band_tighten_paths(t):
                # a Tighten below a band split (TIGHTEN_BAND_DEPTH): a bound moved past what its
                # certificate proves is refused
                tightened += 1
                node = t
                for step in path:
                    node = getattr(node, step)
                key, (lo, hi) = next((k, v) for k, v in node.bounds.items() if np.isfinite(v[1]))
                bad = Tighten({**node.bounds, key: (lo, hi - 0.5)}, node.certs, node.child)
                tampered = list(r.trees)
                tampered[case] = _put(t, path, bad)
                assert check_tree(r.query, tampered).proof is None
                break
    # (whether a seed's trees split bands depends on its net; over the seeds some do: the next test)
    _BANDS[seed] = bands
    _TIGHT[seed] = tightened


_BANDS: dict = {}
_TIGHT: dict = {}


def _band_tighten_paths(t, path=(), under_band=False):
    """The paths of the Tighten nodes right below a band split."""
    if isinstance(t, Tighten):
        if under_band and any(np.isfinite(v[1]) for v in t.bounds.values()):
            yield path
        yield from _band_tighten_paths(t.child, path + ("child",))
    elif isinstance(t, Split):
        band = t.var[0] == "out"
        yield from _band_tighten_paths(t.low, path + ("low",), band)
        yield from _band_tighten_paths(t.high, path + ("high",), band)


def test_band_splits_are_taken_on_some_seed():
    if len(_BANDS) < 12:
        for seed in range(12):
            if seed not in _BANDS:
                test_band_splits_for_prob_never_a_wrong_proof_and_the_tree_rechecks(seed)
    assert sum(_BANDS.values()) > 0
    # and the certified tightening below them (TIGHTEN_BAND_DEPTH), its trees rechecked above
    assert sum(_TIGHT.values()) > 0


def test_the_network_record_is_made_when_a_proof_records_it_and_is_the_network_as_given():
    """PairQuery hashes its network when a proof records it (``scope()``), not in every constructor
    (smt maximize's bisection builds queries it never records); the record is the network as given,
    without the identity layer a ReLU output gets."""
    from fairspec.certify.claims import net_fingerprint

    p = _problem(np.random.default_rng(5), "label")
    given = as_layers(p.net)
    relu_out = given[:-1] + [(given[-1][0], given[-1][1], True)]
    for layers in (given, relu_out):
        q = PairQuery(layers, p.lo, p.hi, p.integer, p.onehot_groups, p.free, p.must_differ, p.relaxed,
                      "label", 0, True)
        assert "net_sha" not in vars(q)
        assert len(q.layers) == len(layers) + bool(layers[-1][2])
        assert q.scope()["net"] == net_fingerprint(layers) == q.net_sha
    assert net_fingerprint(given) != net_fingerprint(relu_out)


@pytest.mark.parametrize("seed", range(4))
def test_maximize_past_its_deadline_solves_no_root_and_its_bound_still_holds(seed):
    """The deadline is looked at before each root (one per ordered pair of protected values), not only after
    all of them: a 0.05 s budget on a network with 11 protected values waited out 110 root LPs (~7 s). The
    roots the deadline leaves are closed with their interval bounds: a time-out, a certified (looser) bound."""
    rng = np.random.default_rng(seed)
    post = ("label", "logit", "prob", "logit")[seed]
    p = _problem(rng, post, onehot=seed % 2 == 1)
    truth = brute_force(p).value
    m = maximize(p, time.monotonic() - 1.0)
    assert m.status == "timeout" and m.stats["lp_solves"] == 0
    assert m.proof is not None and m.bound >= truth - 1e-12
