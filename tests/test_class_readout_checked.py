"""A per-class proof part names the class it bounds only where certify checked it (the closing note of
the per-class readout work): an exact-SMT part's readout ``("argmax", c)`` is refused unless the query's
network is exactly the class score ``argmax_layers(net, c)`` of the K-output network given, and an
enumeration part reads the class from the runtime's K outputs itself (the first largest column), so a
tiling of scores that name no class is refused for a class property. Plus brute force: small 3-class
dyadic networks with exact ties between classes, every ``holds (proved)`` of the class post true on the
runtime's argmax (numpy's tie rule, the first largest column)."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pytest

from fairspec.backends.pair import PairProblem
from fairspec.backends.pair.multiclass import ClassProblem, brute_force_class, class_net, solve_class
from fairspec.models.network import Layer, PLNet


def _net(seed: int, tie: bool = True) -> PLNet:
    """A dyadic 2-4-3 ReLU network over (a, s); with ``tie``, class 2 a copy of class 0 shifted by a
    dyadic constant (0: an exact tie everywhere, broken for class 0)."""
    rng = np.random.default_rng(seed)
    W1 = rng.integers(-4, 5, (4, 2)) / 4.0
    b1 = rng.integers(-2, 3, 4) / 4.0
    W2 = rng.integers(-4, 5, (3, 4)) / 4.0
    b2 = rng.integers(-2, 3, 3) / 4.0
    if tie:
        W2[2], b2[2] = W2[0], b2[0] + 0.25 * rng.integers(-1, 2)
    return PLNet((Layer(W1, b1, True), Layer(W2, b2, False)), 0, "none", "test")


def _pre(net: PLNet, top: int = 6) -> PairProblem:
    return PairProblem(class_net(net, 0), np.array([0.0, 0.0]), np.array([float(top), 1.0]),
                       np.array([True, True]), (), (1,), None, (), "label")


# ---------------------------------------------------------------------------------------------
# exact SMT: the readout is the query's, or refused
# ---------------------------------------------------------------------------------------------

def _query(net: PLNet, c: int):
    from fairspec.certify.network import argmax_layers
    from fairspec.certify.pairlp import PairQuery

    return PairQuery(argmax_layers(net, c), np.array([0.0, 0.0]), np.array([6.0, 1.0]), np.array([True, True]),
                     free=(1,), post="label", threshold=0, strict=True)


def test_smt_class_part_readout_is_checked_against_the_query():
    from fairspec.certify.smt import prove_unsat, smtlib

    net, other = _net(3), _net(4)
    for c in range(3):
        q = _query(net, c)
        text = smtlib(q)
        ok = prove_unsat(q, text, "unsat", solver="test", readout=("argmax", c), base_net=net)
        assert ok is not None and ok.detail["readout"] == ["argmax", c] and ok.detail["base_net"]
        for d in range(3):             # a query of class c handed with the readout of another class
            if d != c:
                assert prove_unsat(q, text, "unsat", solver="test", readout=("argmax", d), base_net=net) is None
        # no K-output network to check against, or another one: refused
        assert prove_unsat(q, text, "unsat", solver="test", readout=("argmax", c)) is None
        assert prove_unsat(q, text, "unsat", solver="test", readout=("argmax", c), base_net=other) is None
        assert prove_unsat(q, text, "unsat", solver="test", readout=("argmax", True), base_net=net) is None
    # a non-class readout is unchanged (no base network needed)
    q = _query(net, 0)
    assert prove_unsat(q, smtlib(q), "unsat", solver="test", readout=("logit", 0)) is not None


def test_class_parts_of_two_networks_do_not_join():
    from fairspec.certify.network import prove_class_stable
    from fairspec.certify.smt import prove_unsat, smtlib

    a, b = _net(3), _net(4)

    def part(net, c):
        q = _query(net, c)
        return prove_unsat(q, smtlib(q), "unsat", solver="test", readout=("argmax", c), base_net=net)

    same = {c: part(a, c) for c in range(3)}
    assert prove_class_stable(same, 3) is not None
    assert prove_class_stable({**same, 1: part(b, 1)}, 3) is None
    assert prove_class_stable({0: same[1], 1: same[0], 2: same[2]}, 3) is None


def _blind(seed: int) -> PLNet:
    """A dyadic 2-4-3 network that never reads s (every class part holds), no ties on the grid."""
    net = _net(seed, tie=False)
    W1 = net.layers[0].W.copy()
    W1[:, 1] = 0.0
    return PLNet((Layer(W1, net.layers[0].b, True), net.layers[1]), 0, "none", "test")


def _bab_part(net: PLNet, c: int, base_net="same"):
    from fairspec.backends.bab import certify_holds

    sub = ClassProblem(net, _pre(net)).sub(c)
    base = net if base_net == "same" else base_net
    return certify_holds(sub, sub.runtime.layers, 1e12, readout=("argmax", c), precision="float64",
                         base_net=base, max_nodes=5000)


def test_bab_class_part_records_its_network_where_minted():
    """A bab-certificate of class c records the K-output network certify checked the query against
    (TreeBuilder: the query's network must be exactly argmax_layers(base_net, c)); prove_class_stable
    refuses bab parts of two networks, or a bab part with the network stripped."""
    from fairspec.certify.claims import net_fingerprint, runtime_record
    from fairspec.certify.network import argmax_layers, as_layers, prove_class_stable
    from fairspec.certify.pairlp import PairQuery, TreeBuilder
    from fairspec.certify.proof import _mint

    parts = []
    for net in (_blind(s) for s in range(12)):
        rs = [_bab_part(net, c) for c in range(3)]
        if all(r.proof is not None for r in rs):
            parts.append((net, {c: rs[c].proof for c in range(3)}))
        if len(parts) == 2:
            break
    assert len(parts) == 2, "two networks whose every class part the branch and bound proves"
    (a, pa), (b, pb) = parts
    for net, p in parts:
        assert all(p[c].method == "bab-certificate" and p[c].detail["readout"] == ["argmax", c] for c in range(3))
        assert {p[c].detail["base_net"] for c in range(3)} == {net_fingerprint(as_layers(net))}
        assert prove_class_stable(p, 3) is not None
    assert pa[0].detail["base_net"] != pb[0].detail["base_net"]
    assert prove_class_stable({**pa, 1: pb[1]}, 3) is None                 # parts of two networks
    bare = _mint(pa[2].method, pa[2].claim, **{k: v for k, v in pa[2].detail.items() if k != "base_net"})
    assert prove_class_stable({**pa, 2: bare}, 3) is None                  # a bab part that names no network
    # the builder checks the network where it mints: another K-output network, none, another class
    rec = lambda c: runtime_record(0, False, 0.0, ("argmax", c), "float64")       # noqa: E731
    q = PairQuery(argmax_layers(a, 1), np.array([0.0, 0.0]), np.array([6.0, 1.0]), np.array([True, True]),
                  free=(1,), post="label", threshold=0, strict=True)
    assert TreeBuilder(q, runtime=rec(1), base_net=a).base_sha == net_fingerprint(as_layers(a))
    for bad in (dict(runtime=rec(1), base_net=b), dict(runtime=rec(1)), dict(runtime=rec(0), base_net=a)):
        with pytest.raises(ValueError):
            TreeBuilder(q, **bad)
    assert TreeBuilder(q, runtime=runtime_record(0, False, 0.0, ("logit", 0), "float64")).base_sha is None
    # and through the engine: the wrong network is no proof (gave up, with the reason)
    r = _bab_part(a, 1, base_net=b)
    assert r.proof is None and r.status == "gave-up"


# ---------------------------------------------------------------------------------------------
# enumeration: certify reads the class from the runtime's outputs
# ---------------------------------------------------------------------------------------------

def test_count_individuals_reads_the_class_itself():
    from fairspec.certify.enumerate import class_scores_of, count_individuals

    Y0 = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [2.0, 0.0, 2.0]])     # ties: class 0, 1, 0
    Y1 = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])     # class 0, 1, 2
    g = class_scores_of([Y0, Y1], ("argmax", 0))
    assert [list(v > 0) for v in g] == [[True, False, True], [True, False, False]]
    r = count_individuals([Y0, Y1], [(0, 1), (1, 0)], "label", claim="t", readout=("argmax", 0))
    assert list(r.fair) == [True, True, False] and list(r.unfair) == [False, False, True]
    assert r.proof.detail["readout"] == ["argmax", 0] and r.proof.detail["record"]["readout"] == ["argmax", 0]
    for bad in (dict(readout=("argmax", 3)), dict(readout=("logit", 0)), dict(readout=("argmax", 0), post="logit")):
        kw = {"post": "label", **bad}
        with pytest.raises(ValueError):
            count_individuals([Y0, Y1], [(0, 1)], kw.pop("post"), claim="t", **kw)
    with pytest.raises(ValueError):                   # one score per row: not the runtime's outputs
        count_individuals([Y0[:, 0], Y1[:, 0]], [(0, 1)], "label", claim="t", readout=("argmax", 0))


def _tiling(net: PLNet, c: int):
    """The refinement's tiling of class c's sub-problem over the whole domain (enumerated: the ties leave
    the bounds undecided)."""
    from fairspec.backends.refine import decide_partitions

    sub = ClassProblem(net, _pre(net)).sub(c)
    whole = [(sub.lo.copy(), sub.hi.copy())]
    (d,) = decide_partitions(sub, whole, seconds=600.0, max_boxes=256, split=False)
    return sub, whole, d


def test_an_enumerated_class_part_must_name_its_class():
    from fairspec.certify.partitions import combine_partitions, whole_claim
    from fairspec.certify.proof import _mint

    net = _net(0)
    W2 = net.layers[1].W.copy()
    b2 = net.layers[1].b.copy()
    W2[2], b2[2] = W2[0], b2[0]                         # class 2 ties class 0 everywhere: never predicted
    W2[1], b2[1] = -W2[0], b2[0] - 64.0                 # class 1 never largest
    net = PLNet((net.layers[0], Layer(W2, b2, False)), 0, "none", "test")
    for c in (1, 2):
        sub, whole, d = _tiling(net, c)
        assert d.status == "fair" and d.proof is not None, d.reason
        assert d.proof.method == "enumeration"
        recs = d.proof.detail["records"]
        assert recs and all(r.get("readout") == ["argmax", c] for r in recs)
        ok = combine_partitions([d.proof], whole, sub.lo, sub.hi, sub.integer, claim="t",
                                expect=whole_claim(sub, readout=("argmax", c), precision="float64"))
        assert ok is not None and ok.detail["readout"] == ["argmax", c]
        # the same tiling offered as another class's part, or with records naming no class: refused
        other = 2 if c == 1 else 1
        assert combine_partitions([d.proof], whole, sub.lo, sub.hi, sub.integer, claim="t",
                                  expect=whole_claim(sub, readout=("argmax", other), precision="float64")) is None
        bare = [{k: v for k, v in r.items() if k != "readout"} for r in recs]
        stripped = _mint(d.proof.method, d.proof.claim, **{**d.proof.detail, "records": bare})
        assert combine_partitions([stripped], whole, sub.lo, sub.hi, sub.integer, claim="t",
                                  expect=whole_claim(sub, readout=("argmax", c), precision="float64")) is None


# ---------------------------------------------------------------------------------------------
# brute force: every holds (proved) of the class post is true on the runtime's argmax
# ---------------------------------------------------------------------------------------------

def _at_tie(sub, r, seconds):
    from fairspec.kinds.pair_ties import decide_at_a_tie

    return decide_at_a_tie(SimpleNamespace(name="p"), sub, r, seconds)


def _tie_net(seed: int, kind: str) -> PLNet:
    """A dyadic 2-4-3 ReLU network over (a, s) whose classes tie exactly on the grid: h2 = s / 4,
    h3 = (1 - s) / 4, the rest random. ``same``: class 2 a copy of class 0 (ties everywhere, class 2
    never predicted); ``tiechange``: (base + h3, base + 1/4, base + h2) -- class 0 for s = 0, 1 for
    s = 1, only through ties (violated); ``tiehold``: (base + 1/4, base + h3, base + h2 - 1/4) -- a tie
    0 = 1 at s = 0 broken for class 0 (holds; the other tie rule would violate); ``tieflip``:
    (base + h3, base + 1/4, base - 1) -- class 0 at s = 0 by the tie, 1 at s = 1 (violated)."""
    rng = np.random.default_rng(seed)
    W1 = np.zeros((4, 2))
    b1 = np.zeros(4)
    W1[:2] = rng.integers(-4, 5, (2, 2)) / 4.0
    b1[:2] = rng.integers(-2, 3, 2) / 4.0
    W1[2], W1[3], b1[3] = (0.0, 0.25), (0.0, -0.25), 0.25
    base = np.concatenate([rng.integers(-4, 5, 2) / 4.0, [0.0, 0.0]])
    c0 = float(rng.integers(-2, 3)) / 4.0
    e2, e3 = np.eye(4)[2], np.eye(4)[3]
    if kind == "same":
        W2 = np.stack([base, rng.integers(-4, 5, 4) / 4.0, base])
        W2[0, 2:] = W2[2, 2:] = rng.integers(-2, 3, 2) / 4.0
        b2 = np.array([c0, float(rng.integers(-2, 3)) / 4.0, c0])
    elif kind == "tiechange":
        W2, b2 = np.stack([base + e3, base, base + e2]), np.array([c0, c0 + 0.25, c0])
    elif kind == "tiehold":
        W2, b2 = np.stack([base, base + e3, base + e2]), np.array([c0 + 0.25, c0, c0 - 0.25])
    else:
        W2, b2 = np.stack([base + e3, base, base]), np.array([c0, c0 + 0.25, c0 - 1.0])
    return PLNet((Layer(W1, b1, True), Layer(W2, b2, False)), 0, "none", "test")


@pytest.mark.parametrize("engine", ["highs", "z3"])
@pytest.mark.parametrize("kind", ["same", "tiechange", "tiehold", "tieflip"])
def test_class_holds_proved_agrees_with_brute_force_at_ties(monkeypatch, engine, kind):
    """The solvers and the tie fallback alone (the attack off), on the network's float64 forward as the
    runtime: ``holds`` only with a Proof and only where brute force over every pair holds; ``violated``
    only with a pair whose argmax differs."""
    if engine == "z3":
        pytest.importorskip("z3")
    monkeypatch.setattr("fairspec.backends.pair.multiclass.attack_class", lambda *a, **k: None)
    grid = np.array(list(itertools.product(range(7), range(2))), dtype=np.float64)
    seen = set()
    for seed in range(4):
        net = _tie_net(seed, kind)
        cp = ClassProblem(net, _pre(net))
        Y = net.forward_all(grid)
        assert any(np.any(Y[:, i] == Y[:, j]) for i, j in ((0, 1), (0, 2), (1, 2))), "exact ties"
        truth = brute_force_class(cp)
        res = solve_class(cp, "prove", engine, time_limit=120.0, at_tie=_at_tie)
        seen.add(res.status)
        if res.status == "holds":
            assert res.how == "proved" and res.proof is not None
            assert [p["detail"]["readout"] for p in res.proof.to_json()["detail"]["cases"]] == \
                [["argmax", c] for c in range(3)]
            assert truth.status == "holds", (seed, Y)
        elif res.status == "violated":
            w = res.witness
            k = np.argmax(net.forward_all(np.vstack([w.x, w.x_prime])), axis=1)
            assert k[0] != k[1] and truth.status == "violated", seed
        else:
            assert truth.status in ("holds", "violated")
    if kind in ("tiechange", "tieflip"):
        assert seen == {"violated"}
    if kind == "tiehold":
        assert seen == {"holds"}


def test_refinement_counts_an_individual_unsure_where_argmax_and_predict_differ():
    """A scikit-learn classifier's class is its predict; at a softmax tie (outputs (1/3, 1/3, 1/3), the
    first largest column 0) predict may say class 1. The refinement's count of class c reads the outputs'
    argmax, so an individual whose "class is c" differs from predict in some case is unsure, never fair:
    here predict gives class 1 for s = 0 and class 0 for s = 1 (a flip), the argmax 0 for both (fair)."""
    from fairspec.backends.counterfactuals import batch_scores, compared_scores
    from fairspec.certify.enumerate import count_individuals

    net = _net(3, tie=False)
    tie = lambda V: np.full((np.atleast_2d(V).shape[0], 3), 1.0 / 3.0)          # noqa: E731
    predict = lambda V: np.where(np.atleast_2d(V)[:, 1] == 0, 1, 0)              # noqa: E731
    X = np.array([[2.0, 0.0], [3.0, 0.0]])
    cases, pairs = [{1: 0.0}, {1: 1.0}], [(0, 1), (1, 0)]
    for c in (0, 1):
        plain = ClassProblem(net, _pre(net), outputs=tie).class_scores(c)
        S, uns = batch_scores(plain, X, cases, pairs)
        assert uns is None and count_individuals(S, pairs, "label", claim="t", readout=("argmax", c)).fair.all()
        scorer = ClassProblem(net, _pre(net), outputs=tie, predict=predict).class_scores(c)
        S, uns = batch_scores(scorer, X, cases, pairs)
        assert uns.all()
        r = count_individuals(S, pairs, "label", claim="t", unsure=uns, readout=("argmax", c))
        assert not r.fair.any() and not r.unfair.any()
    # class 2: argmax and predict agree (never class 2): counted as before, fair
    scorer = ClassProblem(net, _pre(net), outputs=tie, predict=predict).class_scores(2)
    S, uns = batch_scores(scorer, X, cases, pairs)
    assert not uns.any()
    assert count_individuals(S, pairs, "label", claim="t", unsure=uns, readout=("argmax", 2)).fair.all()
    assert compared_scores(scorer, S)[0].shape == (2,)


def test_a_scikit_learn_class_problem_counts_by_predict(monkeypatch, tmp_path):
    """kinds/multi_pairs gives the ClassProblem of a scikit-learn classifier its predict: a multinomial
    LogisticRegression whose predict_proba rounds classes 0 and 1 to one probability (logits 2**-57 apart)
    at a = 500, b = 0, where predict says class 1 for sex F and 0 for M; the argmax of the outputs 0 for
    both. The refinement's scorer of class 1 counts that individual unsure, not fair."""
    skops_io = pytest.importorskip("skops.io")
    from sklearn.linear_model import LogisticRegression

    import fairspec.backends.pair.multiclass as mc
    from fairspec import pipeline
    from fairspec.backends.counterfactuals import batch_scores
    from fairspec.certify.enumerate import count_individuals

    rng = np.random.default_rng(0)
    X = np.c_[rng.integers(0, 1001, 300), rng.integers(0, 100, 300), rng.integers(0, 2, 300)].astype(float)
    lr = LogisticRegression(max_iter=500).fit(X, np.array(["hi", "lo", "mid"])[rng.integers(0, 3, 300)])
    lr.coef_ = np.array([[0.0, 0.0, 0.0], [2.0**-50, 0.0, -2.0**-56], [0.0, 0.0, 0.0]])
    lr.intercept_ = np.array([0.0, 2.0**-57 - 500 * 2.0**-50, -2.0**-30])
    skops_io.dump(lr, tmp_path / "m.skops")
    (tmp_path / "s.fair").write_text(
        "features F {\n  a : int in [0, 1000]\n  b : int in [0, 99999]\n  sex : {F, M} protected\n}\n"
        'model m = sklearn("m.skops")\nencode F for m { a : raw  b : raw  sex : code }\n'
        "property same { forall x, x' : F  require x.* == x'.* except {sex}  ensure class(m(x)) == class(m(x'))\n"
        "  using milp\n}\n")
    seen, solve = [], mc.solve_class

    def capture(cp, *a, **k):
        seen.append(cp)
        return solve(cp, *a, **k)

    monkeypatch.setattr(mc, "solve_class", capture)
    v, = pipeline.check(tmp_path / "s.fair").verdicts
    assert v.status == "violated"           # the attack's pair, replayed on predict
    cp, = seen
    assert cp.predict is not None
    scorer = cp.class_scores(1)
    cases, pairs = [{2: 0.0}, {2: 1.0}], [(0, 1), (1, 0)]
    S, uns = batch_scores(scorer, np.array([[500.0, 0.0, 0.0]]), cases, pairs)
    assert uns.tolist() == [True]
    r = count_individuals(S, pairs, "label", claim="t", unsure=uns, readout=("argmax", 1))
    assert not r.fair.any()
