"""SMT (z3 on certify's exact query) pair backend: agrees with brute force and with the MILP
backend; proofs are certify's (exact-smt), ties decided exactly, tampered queries refused."""

from __future__ import annotations

import numpy as np
import pytest

from fairspec.backends.pair import PairProblem, brute_force, check_witness
from fairspec.models.network import random_net

pytest.importorskip("pysmt")
pytest.importorskip("z3")

from fairspec.backends import smt  # noqa: E402

POSTS = (("label", 0.0), ("logit", 0.5), ("prob", 0.05))


def _problem(seed, post, eps, hidden=(4,)):
    net = random_net(seed, 3, hidden)
    return PairProblem(net, lo=[0, 0, 0], hi=[4, 3, 1], integer=[True] * 3, free=(2,), post=post, eps=eps)


@pytest.mark.parametrize("post,eps", POSTS)
@pytest.mark.parametrize("seed", [0, 1, 3])
def test_smt_agrees_with_brute_force_and_milp(seed, post, eps):
    p = _problem(seed, post, eps)
    truth = brute_force(p)
    # budgets that cannot run out on a sane machine (a 40-individual domain; the whole test takes seconds):
    # a time-out is a failure, not a silent pass that checked nothing (it returned early here before)
    f = smt.find(p, time_limit=300)
    assert not _timed_out(f), f.reason
    assert f.status == truth.status
    if f.status == "violated":
        assert check_witness(p, f.witness.x, f.witness.x_prime, p.net.forward)
    else:
        assert f.how == "proved"
    m = smt.maximize(p, time_limit=300)
    assert not _timed_out(m), m.reason
    # the interval [best replayed, certified upper bound] holds the maximum; "the maximum" only
    # when the two meet
    assert m.status == truth.status
    assert m.value <= truth.value + 1e-12 and m.bound >= truth.value
    if m.how == "proved":
        assert m.bound - m.value <= 1e-6
    if post != "prob":
        assert m.how == "proved" and abs(m.value - truth.value) <= 1e-6
    pytest.importorskip("highspy")
    from fairspec.backends import milp

    mm = milp.maximize(p, time_limit=300)
    assert not _timed_out(mm), mm.reason
    assert mm.status == m.status


def _timed_out(r) -> bool:
    return r.status == "unknown" and "time" in (r.reason or "").lower()


def test_verdicts_cover_both_outcomes():
    assert {brute_force(_problem(s, post, eps)).status for s in (0, 1, 3) for post, eps in POSTS} == {"violated", "holds"}


def test_smt_onehot_group():
    net = random_net(4, 5, (4,))
    p = PairProblem(net, lo=[0] * 5, hi=[1, 2, 1, 1, 1], integer=[True] * 5, onehot_groups=((2, 3, 4),),
                    free=(2, 3, 4), post="logit", eps=0.3)
    truth = brute_force(p)
    res = smt.maximize(p, time_limit=30)
    assert res.status == truth.status and abs(res.value - truth.value) <= 1e-6 and res.bound >= truth.value
    w = res.best
    assert sum(w.x[2:]) == 1 and sum(w.x_prime[2:]) == 1 and w.x[2:] != w.x_prime[2:]
    # the best pair's float32 measure lies above every real pair's, so the first query at it is
    # unsat: the search then bisects from below (it asked the same query 60 times, ~28 s, before)
    assert res.stats["checks"] <= 10, res.stats


def test_smt_prove_and_time_out():
    p = _problem(1, "label", 0.0)
    assert smt.prove(p, time_limit=30).status == brute_force(p).status
    big = PairProblem(random_net(5, 13, (48, 24)), lo=[0] * 13, hi=[10] * 13, integer=[True] * 13,
                      free=(12,), post="logit", eps=5.0)
    res = smt.prove(big, time_limit=0.3)
    assert res.status != "holds"
    if res.status == "unknown":
        assert res.how is None and "time" in res.reason


# ---------------------------------------------------------------------------------------------
# Ties: dyadic weights, zero biases, thresholds exactly at the true optimum (brute force)
# ---------------------------------------------------------------------------------------------

def _dyadic_net(rng, sizes):
    from fairspec.models.network import Layer, PLNet

    layers = []
    for k in range(len(sizes) - 1):
        W = rng.integers(-4, 5, size=(sizes[k + 1], sizes[k])) / 4.0
        b = np.zeros(sizes[k + 1]) if rng.random() < 0.7 else rng.integers(-2, 3, sizes[k + 1]) / 2.0
        layers.append(Layer(W, b, k < len(sizes) - 2))
    return PLNet(tuple(layers), 0, "sigmoid")


def _truth(p, eps_strict):
    """Brute force with the spec's strictness: (violated?, max measure)."""
    from fractions import Fraction

    from fairspec.backends.pair import enumerate_domain, precondition_holds

    pts = [np.asarray(v, dtype=np.float64) for v in enumerate_domain(p)]
    z = p.net.forward(np.array(pts))
    best, viol = -np.inf, False
    for i, a in enumerate(pts):
        for j, b in enumerate(pts):
            if i == j or not precondition_holds(p, a, b)[0]:
                continue
            za, zb = Fraction(float(z[i])), Fraction(float(z[j]))
            if p.post == "label":
                viol |= za > 0 >= zb
                best = max(best, float(min(za, -zb)))
            else:
                d = za - zb
                viol |= (d >= Fraction(p.eps)) if eps_strict else (d > Fraction(p.eps))
                best = max(best, float(d))
    return viol, best


@pytest.mark.parametrize("seed", range(6))
def test_ties_decided_exactly_against_brute_force(seed):
    """logit thresholds exactly at the maximal difference (``<=``: holds, ``<``: violated) and
    label flips at an exact zero: the verdict is brute force's; every holds carries certify's
    exact-smt proof; every witness replays."""
    rng = np.random.default_rng(100 + seed)
    net = _dyadic_net(rng, [3, 4, 3, 1])
    base = PairProblem(net, np.zeros(3), np.array([1, 3, 2.0]), np.ones(3, bool), (), (0,), None, (), "logit", 0.0)
    _, D = _truth(base, False)
    cases = [("logit", max(D, 0.0), False), ("logit", max(D, 0.0), True), ("label", 0.0, False)]
    for post, eps, strict in cases:
        if strict and eps == 0:
            continue
        p = PairProblem(net, base.lo, base.hi, base.integer, (), (0,), None, (), post, eps)
        viol, best = _truth(p, strict)
        r = smt.prove(p, time_limit=60, eps_strict=strict)
        assert r.status == ("violated" if viol else "holds"), (post, eps, strict, r.reason)
        if r.status == "holds":
            assert r.proof is not None and r.proof.method == "exact-smt"
        else:
            assert smt.exact.replays(p, smt.exact.default_runtime(p), r.witness, strict)
        m = smt.maximize(p, time_limit=60, eps_strict=strict)
        assert m.status == r.status
        assert m.value <= best + 1e-12 and m.bound >= best


def test_certify_refuses_a_tampered_query():
    """certify mints exact-smt only for its own text, an unsat answer, and excluded pairs that
    are fair on the runtime."""
    from fractions import Fraction

    from fairspec.certify.pairlp import PairQuery
    from fairspec.certify.smt import prove_unsat, smtlib

    rng = np.random.default_rng(3)
    net = _dyadic_net(rng, [3, 4, 1])
    p = PairProblem(net, np.zeros(3), np.array([1, 2, 2.0]), np.ones(3, bool), (), (0,), None, (), "logit", 1.0)
    q = PairQuery.from_problem(p, Fraction(1), False)
    text = smtlib(q)
    assert prove_unsat(q, text, "unsat", solver="z3").method == "exact-smt"
    assert prove_unsat(q, text, "sat", solver="z3") is None
    assert prove_unsat(q, text.replace("(assert", "(assert true) (assert", 1), "unsat", solver="z3") is None
    assert prove_unsat(q, smtlib(PairQuery.from_problem(p, Fraction(2), False)), "unsat", solver="z3") is None
    # an excluded pair that violates on the runtime (scores 3 and 1: difference 2 > eps 1) is refused; one fair
    # is accepted only with the runtime's network showing its scores exact in every batch (dyadic: the pair's
    # logits are exactly 0 and 0)
    rt = dict(runtime_net=net, readout=("logit", 0), precision="float32")
    pair = ([0, 0, 0], [1, 0, 0])
    t2 = smtlib(q, excluded=[pair])
    assert prove_unsat(q, t2, "unsat", solver="z3", excluded=[(*pair, (3.0, 1.0))], post="logit", eps=1, **rt) is None
    assert prove_unsat(q, t2, "unsat", solver="z3", excluded=[(*pair, (0.0, 0.0))], post="logit", eps=1, **rt) \
        is not None
    assert prove_unsat(q, t2, "unsat", solver="z3", excluded=[(*pair, (0.0, 0.0))], post="logit", eps=1) is None
    assert prove_unsat(q, t2, "unsat", solver="z3", excluded=[(*pair, (2.0, 1.0))], post="logit", eps=1, **rt) \
        is None                                                 # fair scores, but not the runtime's
    assert prove_unsat(q, t2, "unsat", solver="z3", excluded=[(*pair, (0.0, 0.0))], post="logit", eps=0,
                       eps_strict=True, **rt) is None
    # label: a point excluded as x must not be positive on the runtime, one excluded as x' must be
    ql = PairQuery.from_problem(p.with_post("label"), Fraction(0), True)
    t3 = smtlib(ql, excluded=[([0, 0, 0], None)])
    assert prove_unsat(ql, t3, "unsat", solver="z3", excluded=[([0, 0, 0], None, (0.0, float("nan")))],
                       post="label", **rt) is not None
    assert prove_unsat(ql, t3, "unsat", solver="z3", excluded=[([0, 0, 0], None, (1e-30, float("nan")))],
                       post="label", **rt) is None
    t4 = smtlib(ql, excluded=[(None, [0, 0, 0])])
    assert prove_unsat(ql, t4, "unsat", solver="z3", excluded=[(None, [0, 0, 0], (float("nan"), 0.0))],
                       post="label", **rt) is None


def test_exact_constants_in_the_query():
    """Every constant is the exact rational of its float: a float32 weight 0.1f appears as its
    own rational, the triangle's u - l is exact, no float64 rounding between."""
    from fractions import Fraction

    from fairspec.certify.pairlp import PairQuery
    from fairspec.certify.smt import lit, smtlib
    from fairspec.models.network import Layer, PLNet

    w = float(np.float32(0.1))
    net = PLNet((Layer(np.array([[w, -1.0], [1.0, w]]), np.array([0.0, -0.5]), True),
                 Layer(np.array([[1.0, -1.0]]), np.zeros(1), False)), 0, "none")
    p = PairProblem(net, np.zeros(2), np.array([3.0, 1.0]), np.array([False, True]), (), (1,), None, (), "logit", 0.5)
    text = smtlib(PairQuery.from_problem(p, Fraction(1, 2), False))
    assert lit(w) in text and lit(Fraction(w)) == f"(/ {Fraction(w).numerator}.0 {Fraction(w).denominator}.0)"
    import re

    assert not re.search(r"\d[eE][-+]?\d", text) and "0.1 " not in text


def test_partition_proofs_combine_only_over_a_cover():
    """certify combines per-box exact-smt proofs only when the boxes cover the domain exactly once."""
    from fractions import Fraction

    from fairspec.certify.pairlp import PairQuery
    from fairspec.certify.smt import prove_unsat, smtlib

    rng = np.random.default_rng(4)
    net = _dyadic_net(rng, [3, 4, 1])
    p = PairProblem(net, np.zeros(3), np.array([1, 3, 2.0]), np.ones(3, bool), (), (0,), None, (), "logit", 50.0)

    from fairspec.certify.partitions import combine_partitions, whole_claim

    def proof(lo, hi):
        # the claim of the whole property (eps 50, runtime error 0: the float64 network) on the box
        q = PairQuery.from_problem(p.restrict(lo, hi), Fraction(50), False)
        return prove_unsat(q, smtlib(q), "unsat", solver="z3", post="logit", eps=50.0, runtime_error=0.0,
                           readout=("logit", 0), precision="float64")

    expect = whole_claim(p, readout=("logit", 0), precision="float64")
    a = (np.zeros(3), np.array([1, 1, 2.0]))
    b = (np.array([0, 2, 0.0]), np.array([1, 3, 2.0]))
    c = (np.array([0, 1, 0.0]), np.array([1, 3, 2.0]))           # overlaps a at x1 = 1
    full = [proof(*a), proof(*b)]
    kw = dict(claim="c", expect=expect)

    def prove_partitioned(proofs, boxes, lo, hi, integer, **kw):
        return combine_partitions(proofs, boxes, lo, hi, integer, methods=("exact-smt",), **kw)
    assert prove_partitioned(full, [a, b], p.lo, p.hi, p.integer, **kw).method == "exact-smt"
    assert prove_partitioned(full[:1], [a], p.lo, p.hi, p.integer, **kw) is None          # a gap
    assert prove_partitioned([proof(*a), proof(*c)], [a, c], p.lo, p.hi, p.integer, **kw) is None
    assert prove_partitioned([full[1], full[0]], [a, b], p.lo, p.hi, p.integer, **kw) is None   # boxes swapped
