"""MILP pair encoding against brute force over small integral domains (the ground truth)."""

from __future__ import annotations

import itertools
import sys

import numpy as np
import pytest

from fairspec.backends.pair import (PairProblem, brute_force, check_witness, enumerate_domain,
                                    precondition_holds)
from fairspec.models.network import random_net

pytest.importorskip("highspy")
pytest.importorskip("pyscipopt")

from fairspec.backends import milp  # noqa: E402
from fairspec.backends.pair.bounds import interval_bounds, lp_tighten, pair_bounds  # noqa: E402

ENGINES = ("highs", "scip")
POSTS = (("label", 0.0), ("logit", 1.0), ("prob", 0.05))


def _problem(seed, post, eps, hidden=(6, 4)):
    net = random_net(seed, 4, hidden)
    return PairProblem(net, lo=[0, 0, 0, 0], hi=[4, 3, 4, 1], integer=[True] * 4, free=(3,), post=post, eps=eps)


def _assert_agrees(res, truth, problem, value=True):
    assert res.status == truth.status, (res, truth)
    if res.status == "violated":
        w = res.witness
        assert check_witness(problem, w.x, w.x_prime, problem.net.forward)
    if value:
        assert res.how == "proved"
        assert abs(res.value - truth.value) <= 1e-6, (res.value, truth.value)


def test_import_does_not_load_solvers():
    import subprocess

    code = ("import sys, fairspec.backends.pair, fairspec.backends.pair.bounds, fairspec.backends.milp, "
            "fairspec.backends.smt, fairspec.runtime.executor; "
            "bad = [m for m in ('pyscipopt', 'highspy', 'pysmt', 'z3', 'torch', 'onnx') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


# HiGHS on every net; SCIP (slower here) on two of them, to keep the suite fast
CASES = [(seed, post, eps, "highs") for seed in (0, 1, 3) for post, eps in POSTS] + \
        [(seed, post, eps, "scip") for seed in (0, 1) for post, eps in POSTS]


@pytest.mark.parametrize("seed,post,eps,engine", CASES)
def test_find_and_maximize_agree_with_brute_force(seed, post, eps, engine):
    p = _problem(seed, post, eps)
    truth = brute_force(p)
    f = milp.find(p, engine=engine, time_limit=None)
    _assert_agrees(f, truth, p, value=False)
    if truth.status == "holds":
        assert f.how == "proved"
    m = milp.maximize(p, engine=engine, time_limit=None)
    _assert_agrees(m, truth, p)
    pr = milp.prove(p, engine=engine, time_limit=None)
    _assert_agrees(pr, truth, p, value=False)


def test_both_verdicts_occur_in_the_fixture_set():
    verdicts = {brute_force(_problem(s, post, eps)).status for s in (0, 1, 3) for post, eps in POSTS}
    assert verdicts == {"violated", "holds"}


@pytest.mark.parametrize("post,eps", POSTS)
def test_onehot_protected_group_and_relaxed_input(post, eps):
    # inputs: 0..1 ordinary ints, 2..4 a one-hot protected group (race), 5 a relaxed int
    net = random_net(7, 6, (6, 4))
    p = PairProblem(net, lo=[0, 0, 0, 0, 0, 0], hi=[3, 2, 1, 1, 1, 3], integer=[True] * 6,
                    onehot_groups=((2, 3, 4),), free=(2, 3, 4), relaxed=((5, 1.0),), post=post, eps=eps)
    truth = brute_force(p)
    for engine in ENGINES:
        m = milp.maximize(p, engine=engine, time_limit=None)
        _assert_agrees(m, truth, p)
        for w in filter(None, (m.witness, m.best)):
            for v in (w.x, w.x_prime):
                assert sum(v[2:5]) == 1 and set(v[2:5]) <= {0.0, 1.0}
            assert abs(w.x[5] - w.x_prime[5]) <= 1.0
            assert w.x[:2] == w.x_prime[:2]


def test_must_differ_over_two_integer_inputs():
    net = random_net(11, 4, (5, 3))
    p = PairProblem(net, lo=[0, 0, 0, 0], hi=[3, 3, 2, 2], integer=[True] * 4, free=(2, 3),
                    post="logit", eps=0.5)
    truth = brute_force(p)
    for engine in ENGINES:
        _assert_agrees(milp.maximize(p, engine=engine, time_limit=None), truth, p)


def test_forged_witnesses_are_rejected():
    p = _problem(1, "label", 0.0)
    res = milp.find(p, time_limit=None)
    assert res.status == "violated"
    x, xp = list(res.witness.x), list(res.witness.x_prime)
    f = p.net.forward
    assert check_witness(p, x, xp, f) and check_witness(p, xp, x, f)
    tampered = list(xp); tampered[0] = (tampered[0] + 1) % 5           # a tied input changed
    assert not check_witness(p, x, tampered, f)
    assert not check_witness(p, x, list(x), f)                         # protected input equal
    outside = list(x); outside[1] = 9.0
    assert not check_witness(p, outside, xp, f)                        # outside the domain
    frac = list(x); frac[2] += 0.5
    assert not check_witness(p, frac, [*xp[:2], frac[2], xp[3]], f)    # non-integral
    assert not check_witness(p, x, xp, lambda X: np.array([1.0, 2.0])) # same label: no violation
    # replaying with probabilities (score_kind="prob") gives the same answer
    assert check_witness(p, x, xp, lambda X: 1 / (1 + np.exp(-f(X))), score_kind="prob")


def test_partitioned_prove_matches_and_coverage_sums_to_one():
    from fairspec.runtime.executor import ProcessExecutor, SerialExecutor

    for seed, post, eps in ((0, "label", 0.0), (1, "label", 0.0)):
        p = _problem(seed, post, eps)
        whole = milp.prove(p, time_limit=None)
        parts = milp.split_widest(p, 4)
        assert len(parts) == 4
        res = milp.solve_partitioned(p, "prove", parts, time_per_part=30, executor=SerialExecutor())
        assert res.status == whole.status == brute_force(p).status
        c = res.coverage
        assert c.partitions == 4 and c.proved + c.refuted + c.undecided == 4
        assert abs(c.volume_proved + c.volume_refuted + c.volume_undecided - 1.0) < 1e-12
        if res.status == "holds":
            assert res.how == "proved" and c.proved == 4
        else:
            assert check_witness(p, res.witness.x, res.witness.x_prime, p.net.forward)
    # the process pool gives the identical report
    p = _problem(1, "label", 0.0)
    parts = milp.split_widest(p, 4)
    serial = milp.solve_partitioned(p, "prove", parts, time_per_part=30, executor=SerialExecutor())
    with ProcessExecutor(2) as ex:
        pooled = milp.solve_partitioned(p, "prove", parts, time_per_part=30, executor=ex)
    assert [s for s, _ in serial.coverage.parts] == [s for s, _ in pooled.coverage.parts]
    assert serial.status == pooled.status and serial.witness == pooled.witness


def test_fairify_partitions_cover_the_box():
    p = PairProblem(random_net(0, 3, (4,)), lo=[10, 0, 0], hi=[100, 19, 1], integer=[True] * 3, free=(2,))
    parts = milp.fairify_partitions(p, threshold=10)
    assert len(parts) == 10 * 2
    total = sum(p.volume(lo, hi) for lo, hi in parts)
    assert total == p.volume()


def test_time_out_is_unknown_never_holds():
    net = random_net(5, 13, (64, 32))
    # a binary protected input: maximize's certified branch and bound evaluates one root per ordered
    # pair of protected values before it looks at its deadline (11 values: 110 roots, seconds of work
    # after the 0.05 s budget); 2 values keep the MILP undecided in 0.05 s without waiting that out
    p = PairProblem(net, lo=[0] * 13, hi=[10] * 12 + [1], integer=[True] * 13, free=(12,), post="logit", eps=5.0)
    for engine in ENGINES:
        res = milp.prove(p, engine=engine, time_limit=0.05)
        assert res.status != "holds"
        if res.status == "unknown":
            assert res.how is None and "time" in res.reason
        m = milp.maximize(p, engine=engine, time_limit=0.05)
        assert m.status != "holds" and m.how is None


def test_pair_bounds_are_sound_and_lp_tightens():
    p = _problem(3, "logit", 1.0)
    ib = pair_bounds(p)
    lb = pair_bounds(p, lp=True)
    X = enumerate_domain(p)
    H = X
    for k, layer in enumerate(p.net.layers):
        Z = H @ layer.W.T + layer.b
        for b in (ib, lb):
            assert np.all(Z >= b.single.z_lo[k] - 1e-9) and np.all(Z <= b.single.z_hi[k] + 1e-9)
        assert np.all(lb.single.z_lo[k] >= ib.single.z_lo[k] - 1e-9)
        assert np.all(lb.dz_hi[k] <= ib.dz_hi[k] + 1e-9)
        H = np.maximum(Z, 0) if layer.relu else Z
    # difference bounds over every pair differing only in the protected input
    Xp = X.copy(); Xp[:, 3] = 1 - Xp[:, 3]
    Ha, Hb = X, Xp
    for k, layer in enumerate(p.net.layers):
        Za, Zb = Ha @ layer.W.T + layer.b, Hb @ layer.W.T + layer.b
        for b in (ib, lb):
            assert np.all(Zb - Za >= b.dz_lo[k] - 1e-9) and np.all(Zb - Za <= b.dz_hi[k] + 1e-9)
        Ha = np.maximum(Za, 0) if layer.relu else Za
        Hb = np.maximum(Zb, 0) if layer.relu else Zb
    # the difference is much tighter than the intervals apart
    assert np.all(ib.dz_hi[-1] <= ib.single.z_hi[-1] - ib.single.z_lo[-1] + 1e-9)
    assert milp.maximize(p, lp_bounds=True, time_limit=None).value == pytest.approx(brute_force(p).value, abs=1e-6)


def test_warm_start_and_precondition_helper():
    p = _problem(0, "logit", 1.0)
    truth = brute_force(p)
    res = milp.maximize(p, start=(truth.best.x, truth.best.x_prime), time_limit=None)
    assert abs(res.value - truth.value) <= 1e-6
    ok, why = precondition_holds(p, [0, 0, 0, 0], [0, 0, 0, 0])
    assert not ok and "differs" in why
