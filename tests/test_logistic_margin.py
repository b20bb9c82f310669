"""The batch-rounding margin of a library logistic's ``prob`` pair (``pair_spread.LOGISTIC_MARGIN``,
2**-38 beyond the logits' spread) checked against adversarial inputs, term by term as its docstring derives
it: (1) the decision_function's float64 logit of n inputs (n up to 4,096) in every summation order tried --
scikit-learn's BLAS on the batch, each row alone, the batch reversed, the columns permuted, and pure
sequential sums in the orders that round worst (all positive products first, then the negative ones; by
decreasing and increasing magnitude; the intercept first or last) -- lies within E = spread / 2 of the exact
logit (Fractions), on sums that cancel (|w . x| tiny against |w| . |x|); (2-3) predict_proba's float is within
2**-40 of the exact logistic (mpmath, 80 digits) and fairspec's sigmoid within 2**-50, at ties, saturation and
underflow; and end to end, every pair's difference D' in any of those evaluations lies within
spread + 2**-38 of the d the enumeration judges.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest


def _load(tmp_path, coef, intercept):
    pytest.importorskip("sklearn")
    skio = pytest.importorskip("skops.io")
    from sklearn.linear_model import LogisticRegression

    from fairspec.models.sklearn_model import load_sklearn

    n = coef.shape[0]
    est = LogisticRegression()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(np.vstack([np.zeros(n), np.ones(n)]), [0, 1])
    est.coef_, est.intercept_ = coef[None, :].astype(np.float64), np.array([intercept], dtype=np.float64)
    path = tmp_path / f"m{n}.skops"
    skio.dump(est, path)
    return est, load_sklearn(path, output="decision_function")


def _cancelling(n, rng):
    """Weights of up to 2**30 with full 53-bit significands and integer inputs in [-1000, 1000] whose
    products cancel in pairs but for a small rest: |w . x| ~ 1 against |w| . |x| ~ n 2**39."""
    half = n // 2
    w1 = rng.uniform(1.0, 2.0, half) * 2.0 ** rng.integers(0, 31, half) * rng.choice([-1.0, 1.0], half)
    w2 = -w1 * (1.0 + rng.uniform(-2.0 ** -40, 2.0 ** -40, half))
    w = np.empty(n)
    w[0::2][:half], w[1::2][:half] = w1, w2
    if n % 2:
        w[-1] = rng.uniform(-1.0, 1.0)
    rows = []
    for _ in range(6):
        x = rng.integers(-1000, 1001, n).astype(np.float64)
        x[1::2][:half] = x[0::2][:half]              # the pair's products cancel
        rows.append(x)
    X = np.array(rows)
    X[-1] = X[-2]
    X[-1, :2] += 1.0                                 # a pair of rows one apart in one cancelling pair of inputs
    return w, X


def _exact(w, x, b) -> Fraction:
    return sum((Fraction(float(wi)) * Fraction(float(xi)) for wi, xi in zip(w, x)), Fraction(float(b)))


def _sequential(terms) -> float:
    acc = 0.0
    for t in terms:
        acc += t
    return acc


def _orders(w, x, b):
    """The logit of one row summed sequentially in orders chosen to round worst."""
    p = w * x                                        # each product rounded once, as BLAS's are
    pos, neg = p[p > 0], p[p <= 0]
    by_mag = p[np.argsort(-np.abs(p))]
    yield _sequential(np.concatenate([pos, neg, [b]]))
    yield _sequential(np.concatenate([[b], np.sort(pos)[::-1], np.sort(neg)]))
    yield _sequential(np.concatenate([by_mag, [b]]))
    yield _sequential(np.concatenate([[b], by_mag[::-1]]))
    yield float(np.sum(np.concatenate([p, [b]])))   # numpy's pairwise sum


@pytest.mark.parametrize("n", [1, 2, 63, 512, 4096])
def test_logit_and_pair_margin_against_adversarial_orders(tmp_path, n):
    from scipy.special import expit

    from fairspec.kinds.pair_spread import LOGISTIC_MARGIN, runtime_spread
    from fairspec.models.network import sigmoid

    rng = np.random.default_rng(n)
    w, X = _cancelling(n, rng)
    b = float(rng.uniform(-4.0, 4.0))
    est, model = _load(tmp_path, w, b)
    spread = runtime_spread("logit", None, model, X, "logit")[0]
    assert spread > 0
    E = spread / 2
    z = np.asarray(model.score(X), dtype=np.float64)
    perm = rng.permutation(n)
    (tmp_path / "p").mkdir()
    est_p, _ = _load(tmp_path / "p", w[perm], b)
    variants = [z, np.concatenate([est.decision_function(X[i:i + 1]) for i in range(len(X))]),
                est.decision_function(np.ascontiguousarray(X[::-1]))[::-1], est_p.decision_function(X[:, perm])]
    seq = np.array([list(_orders(w, x, b)) for x in X])           # rows x orders
    variants += [seq[:, j] for j in range(seq.shape[1])]
    exact = [_exact(w, x, b) for x in X]
    for v in variants:
        for zi, ex in zip(v, exact):
            err = abs(Fraction(float(zi)) - ex)
            assert err <= Fraction(E), (n, float(err), E)
        assert np.all(np.abs(v - z) <= spread)
    # the sums cancel: the exact logits are tiny against the |w| . |x| their bound grows with
    if n > 2:
        assert max(abs(float(e)) for e in exact) < 1e-9 * float(np.abs(w) @ np.abs(X[0]))
    # end to end: every pair's D' (predict_proba's floats of any evaluation) within spread + margin of d
    pairs = [(i, j) for i in range(len(X)) for j in range(len(X)) if i < j]
    d = {p: abs(float(sigmoid(z[[p[0]]])[0]) - float(sigmoid(z[[p[1]]])[0])) for p in pairs}
    probs = [est.predict_proba(X)[:, 1], est_p.predict_proba(X[:, perm])[:, 1],
             np.concatenate([est.predict_proba(X[i:i + 1])[:, 1] for i in range(len(X))])]
    probs += [expit(seq[:, j]) for j in range(seq.shape[1])]
    for q in probs:
        for (i, j), dd in d.items():
            assert abs(abs(q[i] - q[j]) - dd) <= spread + LOGISTIC_MARGIN


ZS = [0.0, 2.0 ** -21, -(2.0 ** -21), 1e-10, 0.5, -0.5, 1.0, 2.0, -3.25, 10.0, -17.5, 30.0, 30.125, 36.7, -36.7,
      -40.0, 100.0, -100.0, -700.0, -744.5, -745.2, -800.0, 709.0, 800.0]


def test_library_and_fairspec_logistic_within_their_terms(tmp_path):
    """Terms 2-3: predict_proba (scipy's expit) within 2**-40 of the exact logistic, relative where it is
    normal; fairspec's sigmoid within 2**-50 absolute; at ties, saturation and underflow."""
    mpmath = pytest.importorskip("mpmath")
    from fairspec.models.network import sigmoid

    est, _ = _load(tmp_path, np.array([1.0]), 0.0)
    rng = np.random.default_rng(0)
    zs = np.array(ZS + list(rng.uniform(-40, 40, 200)) + list(rng.uniform(-1, 1, 100) * 2.0 ** -20))
    f = est.predict_proba(zs[:, None])[:, 1]
    assert np.array_equal(np.asarray(est.decision_function(zs[:, None])), zs)
    ours = sigmoid(zs)
    mpmath.mp.dps = 80
    for zi, fi, oi in zip(zs, f, ours):
        s = 1 / (1 + mpmath.exp(-mpmath.mpf(float(zi))))
        assert abs(mpmath.mpf(float(fi)) - s) <= mpmath.mpf(2) ** -40 * s + mpmath.mpf(2) ** -1000, zi
        assert abs(mpmath.mpf(float(oi)) - s) <= mpmath.mpf(2) ** -50, zi
