"""fairspec.certify: proofs only from checks, exact comparisons at ties, rigorous rounding bounds,
enumeration proofs (the comparisons made by certify on the runtime's outputs)."""

from __future__ import annotations

import dataclasses
import json
import math
import pickle
import random
from fractions import Fraction

import numpy as np
import pytest

from fairspec.certify import (Check, Proof, ProofRefused, by_enumeration, compare_exact, decide,
                              interval_decide, pair_checks, prove_exact, prove_exhaustive, threshold_of)
from fairspec.certify.rounding import (U32, dot_with_error, float_down, float_up, fraction, gamma,
                                       interval_matmul, matmul_with_error, sum_with_error)


# ---- Proof -------------------------------------------------------------------------------------

def test_a_proof_cannot_be_made_outside_certify():
    with pytest.raises(ProofRefused):
        Proof("enumeration", "anything", {})
    p = prove_exact(Fraction(41, 100), "<=", "0.41", claim="statistical parity <= 0.41")
    with pytest.raises(ProofRefused):
        dataclasses.replace(p, claim="something else")
    q = pickle.loads(pickle.dumps(p))             # executors ship proofs between processes
    assert q == p and q.method == "exact-arithmetic"


def test_proof_json_and_label():
    from fairspec.verdict import Verdict
    r = by_enumeration(Check(np.array([-1.0, 0.0, 0.5]), "<=", "0.5"), count=3, claim="all <= 0.5")
    v = Verdict("p", "individual_fairness", "holds", how="proved", proof=r.proof)
    assert v.label == "holds (proved: enumeration of 3 pairs)"
    js = json.loads(json.dumps(v.to_json()))
    assert js["proof"]["method"] == "enumeration" and js["proof"]["detail"]["count"] == 3
    assert Verdict("p", "k", "holds", how="proved").to_json()["proof"] is None
    big = by_enumeration(Check(np.zeros(4096), "<=", 0), count=4096, claim="x", unit="pairs").proof
    assert Verdict("p", "k", "holds", how="proved", proof=big).label == "holds (proved: enumeration of 4,096 pairs)"
    ex = prove_exact(Fraction(1, 3), "<", "0.34", claim="c", metric="sp")
    assert json.loads(json.dumps(ex.to_json()))["detail"]["value"] == "1/3"


def test_pair_result_carries_a_proof():
    from fairspec.backends.pair import PairResult
    p = by_enumeration(Check(np.zeros(2), "<=", 0), count=2, claim="c").proof
    assert PairResult("holds", "proved", proof=p).proof is p
    with pytest.raises(ValueError):
        PairResult("holds", "proved", proof="trust me")


# ---- exact comparisons -------------------------------------------------------------------------

def test_decimal_thresholds_are_exact():
    assert threshold_of("0.41") == Fraction(41, 100)
    assert threshold_of(0.41) == Fraction(41, 100)          # a parsed literal, read as its decimal
    assert threshold_of("41/100") == Fraction(41, 100)
    assert threshold_of("1e-3") == Fraction(1, 1000)
    assert decide(Fraction(41, 100), "<=", "0.41")
    assert decide(Fraction(41, 100), "<=", 0.41)
    assert not decide(Fraction(41, 100), "<", "0.41")
    assert decide(Fraction(41, 100), "==", 0.41)
    # the float 0.41 is not 41/100: a value computed in float64 is read bit for bit
    assert Fraction(0.41) != Fraction(41, 100)
    assert decide(0.41, ">", "0.41") is False and decide(0.41, "<", "0.41")   # 0.41 (float) < 41/100
    assert decide(0.1 + 0.2, ">", "0.3")


def test_strict_and_non_strict_at_equality():
    for v in (0, 0.0, Fraction(0), np.float32(0.0)):
        assert decide(v, "<=", 0) and not decide(v, "<", 0)
        assert decide(v, ">=", "0") and not decide(v, ">", "0")
    assert decide(math.inf, ">", 10 ** 30) and decide(-math.inf, "<", "-1e300")
    with pytest.raises(ValueError):
        decide(math.nan, "<", 0)


def test_interval_decide_honours_strictness():
    assert interval_decide(0.1, 0.5, "<=", "0.5") == "holds"
    assert interval_decide(0.1, 0.5, "<", 0.5) == "unknown"
    assert interval_decide(0.5, 0.5, "<", 0.5) == "violated"
    assert interval_decide(0.6, 0.9, "<=", 0.5) == "violated"
    assert interval_decide(0.5, 0.9, ">=", "0.5") == "holds"
    assert interval_decide(0.5, 0.9, ">", "0.5") == "unknown"
    assert interval_decide(-math.inf, 0.4, "<", "0.41") == "holds"
    assert interval_decide(Fraction(41, 100), Fraction(41, 100), "==", "0.41") == "holds"
    assert interval_decide(0.41, 0.41, "<=", "0.41") == "holds"        # the float 0.41 is below 41/100
    assert interval_decide(0.3, 0.5, "==", "0.41") == "unknown"
    with pytest.raises(ValueError):
        interval_decide(1, 0, "<", 0)


def test_exact_and_exhaustive_proofs_compare_themselves():
    assert prove_exact(Fraction(41, 100), "<=", "0.41", claim="c") is not None
    assert prove_exact(Fraction(41, 100), "<", "0.41", claim="c") is None
    with pytest.raises(TypeError):
        prove_exact(0.41, "<=", "0.41", claim="c")             # a float is no exact value
    p = prove_exhaustive(Fraction(41, 100), ">=", "0.41", rows=100, claim="c")
    assert p.method == "exhaustive-data" and p.summary == "exhaustive count of 100 rows"
    assert prove_exhaustive(Fraction(40, 100), ">=", "0.41", rows=100, claim="c") is None


# ---- enumeration -------------------------------------------------------------------------------

def test_compare_exact_against_fractions_on_random_ties():
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        a = rng.choice([-0.5, -0.25, 0.0, 0.25, 0.41, 0.5, 1e-30, -1e-30, 2.0 ** 60], size=400).astype(dtype)
        b = rng.choice([-0.5, 0.0, 0.16, 0.25, 0.41, 1e-30, 2.0 ** -60], size=400).astype(dtype)
        for thr in ("0", "0.25", "0.41", "0.16", 0.41, "1/3", "-1e-30"):
            T = threshold_of(thr)
            for op in ("<", "<=", ">", ">=", "==", "!="):
                got = compare_exact(a, op, thr, minus=b)
                want = [decide(Fraction(float(x)) - Fraction(float(y)), op, T) for x, y in zip(a, b)]
                assert got.tolist() == want, (dtype, thr, op)
                got1 = compare_exact(a, op, thr)
                assert got1.tolist() == [decide(Fraction(float(x)), op, T) for x in a]


def test_compare_exact_with_an_array_threshold_and_nan():
    a = np.array([1.0, np.nan, np.inf, 0.5])
    assert compare_exact(a, "<=", np.array([1.0, 1.0, 1.0, 0.25])).tolist() == [True, False, False, False]
    assert compare_exact(a, ">", 0).tolist() == [True, False, True, True]


def test_by_enumeration_finds_the_tie():
    z = np.array([0.0, 1.0, -1.0], dtype=np.float32)         # logit exactly 0: decision 0
    zp = np.array([-1.0, 0.0, 0.0], dtype=np.float32)          # pair 1: 1 > 0 and 0 <= 0, a flip
    r = by_enumeration(pair_checks("label", z, zp), count=3, claim="same decision")
    assert r.proof is None and r.index == 1 and r.violations == 1
    r = by_enumeration(pair_checks("label", np.array([0.0]), np.array([-1.0])), count=1, claim="c")
    assert r.proof is not None                                   # z == 0 is decision 0: no flip
    # logit: |z - z'| <= eps with the difference exact, eps as written
    z = np.array([0.41, 0.0])
    zp = np.array([0.0, 0.41])
    assert Fraction(0.41) < Fraction(41, 100)                   # the float 0.41 is just below 41/100
    assert by_enumeration(pair_checks("logit", z, zp, eps="0.41"), count=2, claim="c").proof is not None
    assert by_enumeration(pair_checks("logit", z, zp, eps=Fraction(0.41)), count=2, claim="c").proof is not None
    below = Fraction(0.41) - Fraction(1, 10 ** 30)
    r = by_enumeration(pair_checks("logit", z, zp, eps=below), count=2, claim="c")
    assert r.proof is None and r.index == 0
    z32 = np.array([0.5], dtype=np.float32)
    assert by_enumeration(pair_checks("prob", z32, np.array([0.25], np.float32), eps="0.25"), count=1,
                          claim="c").proof is not None     # 0.5 - 0.25 == 0.25 is fair (<= eps)
    with pytest.raises(ValueError):
        by_enumeration(Check(np.zeros(3), "<=", 0), count=4, claim="c")
    assert by_enumeration(Check(np.zeros(0), "<=", 0), count=0, claim="c").proof.detail["count"] == 0


# ---- rounding ----------------------------------------------------------------------------------

def test_gamma_and_float_rounding_against_fractions():
    assert Fraction(gamma(10)) >= Fraction(10) * Fraction(2) ** -53 / (1 - Fraction(10) * Fraction(2) ** -53)
    assert gamma(0) == 0.0
    with pytest.raises(ValueError):
        gamma(2 ** 23, U32)
    for q in (Fraction(1, 3), Fraction(41, 100), Fraction(-7, 10), Fraction(1, 2)):
        assert Fraction(float_down(q)) <= q <= Fraction(float_up(q))
        assert float_up(q) - float_down(q) <= 2 * math.ulp(float(q))
    assert float_up(Fraction(1, 2)) == float_down(Fraction(1, 2)) == 0.5
    assert fraction(np.float32(0.1)) == Fraction(float(np.float32(0.1)))
    assert fraction("0.1") == Fraction(1, 10)


def test_sum_and_dot_error_bounds_hold_on_random_data():
    rng = random.Random(1)
    nrng = np.random.default_rng(1)
    for _ in range(200):
        n = rng.randint(1, 60)
        scale = 10.0 ** rng.randint(-20, 20)
        a = nrng.standard_normal(n) * scale
        if rng.random() < 0.3:     # cancellation
            a = np.concatenate([a, -a[: n // 2] * (1 + 1e-12)])
        s, err = sum_with_error(a)
        exact = sum(Fraction(float(x)) for x in a)
        assert abs(Fraction(float(s)) - exact) <= Fraction(float(err))
        b = nrng.standard_normal(a.shape[0])
        d, e = dot_with_error(a, b)
        exact = sum(Fraction(float(x)) * Fraction(float(y)) for x, y in zip(a, b))
        assert abs(Fraction(float(d)) - exact) <= Fraction(float(e))
    A = nrng.standard_normal((5, 7))
    X = nrng.standard_normal((7, 3))
    Y, E = matmul_with_error(A, X)
    for i in range(5):
        for j in range(3):
            exact = sum(Fraction(float(A[i, k])) * Fraction(float(X[k, j])) for k in range(7))
            assert abs(Fraction(float(Y[i, j])) - exact) <= Fraction(float(E[i, j]))


def test_interval_matmul_encloses_every_corner():
    rng = np.random.default_rng(2)
    for _ in range(30):
        W = rng.standard_normal((4, 3))
        b = rng.standard_normal(4)
        lo = rng.standard_normal(3)
        hi = lo + rng.random(3)
        ylo, yhi = interval_matmul(W, b, lo, hi)
        for _ in range(20):
            x = [Fraction(float(l)) + (Fraction(float(h)) - Fraction(float(l))) * Fraction(int(rng.integers(0, 5)), 4)
                 for l, h in zip(lo, hi)]
            for i in range(4):
                v = sum(Fraction(float(W[i, k])) * x[k] for k in range(3)) + Fraction(float(b[i]))
                assert Fraction(float(ylo[i])) <= v <= Fraction(float(yhi[i]))


def test_sigmoid_bounds_enclose_the_logistic():
    from decimal import Decimal, getcontext
    from fairspec.certify.rounding import sigmoid_down, sigmoid_up
    getcontext().prec = 60
    rng = np.random.default_rng(0)
    for c in list(rng.uniform(-40, 40, 300)) + [0.0, 1e-300, -1e-300, 700.0, -700.0, 36.7]:
        d = Decimal(float(c))
        s = Decimal(1) / (Decimal(1) + (-d).exp())
        assert Decimal(sigmoid_down(float(c))) <= s <= Decimal(sigmoid_up(float(c)))
