"""Individual fairness of ``prob`` for exact linear classifiers declared by their decision_function
(LogisticRegression, LinearDiscriminantAnalysis, SGDClassifier's log loss), against brute force on
the library's own ``predict_proba`` (session 25).

The pair path reads the logit z and bounds the probability by certify's ``sigmoid_bounds`` (a relative
margin of 2**-40), which holds scipy's ``expit`` (predict_proba's class 1, a few ulps from the real
logistic) as well as the real logistic: a pair decided by the bounds is decided the same on predict_proba,
and at a tie (eps the largest predict_proba difference as written by repr, or one ulp either side) the
verdict is unknown, never wrong. Two things were wrong and are fixed:

* the strict-monotonicity shortcut of ``SigmoidCheck`` (z > z' so p > p') made ``|p - p'| <= 0``
  violated where expit rounds the two logits to one float (z = 20 and 20 + 2**-48): a witness whose
  predict_proba are equal. ``SigmoidCheck(rounded=True)`` (``pair_runtime.library_logistic``) decides
  only by the bounds and equal logits there;
* maximize's value, ``lo(z) - lo(z')`` of the bounds, lay above every pair's predict_proba difference
  where that is a few ulps (1.83e-15 against 1.776e-15): the enumeration reads predict_proba itself.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest

import fairspec
from fairspec.certify.enumerate import SigmoidCheck

N = 6
HEAD = f"""features F {{
  g : {{a, b}} protected
  x : int in [0, {N}]
}}
model m = sklearn("m.skops", output = "decision_function")
encode F for m {{
  g : code
  x : raw
}}
"""
PROP = """property p{k} {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  ensure |prob(m(x)) - prob(m(x'))| {op} {eps}
  {using}
  mode = {mode}
}}
"""
MODES = [("", "prove"), ("", "find"), ("", "maximize")]
SOLVERS = [("using milp", "prove"), ("using smt", "prove")]         # a LogisticRegression only (FS506 else)


def _model(kind, coef, intercept):
    pytest.importorskip("sklearn")
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.linear_model import LogisticRegression, SGDClassifier

    est = {"lr": LogisticRegression, "lda": LinearDiscriminantAnalysis,
           "sgd": lambda: SGDClassifier(loss="log_loss", max_iter=5)}[kind]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 2.0], [1.0, 3.0]]), [0, 1, 0, 1])
    est.coef_, est.intercept_ = np.array([coef], dtype=np.float64), np.array([intercept], dtype=np.float64)
    return est


def _truth(est):
    """The largest |predict_proba(x)[1] - predict_proba(x')[1]| over the domain, exactly, and whether the
    two codes' logits differ anywhere."""
    xs = np.arange(N + 1, dtype=np.float64)
    X = [np.column_stack([np.full_like(xs, g), xs]) for g in (0, 1)]
    P = [est.predict_proba(A)[:, 1] for A in X]
    D = max(abs(Fraction(float(p)) - Fraction(float(q))) for p, q in zip(*P))
    return D, bool(np.any(est.decision_function(X[0]) != est.decision_function(X[1])))


def _run(tmp_path, monkeypatch, est, cases, eps, solver_path):
    skio = pytest.importorskip("skops.io")
    skio.dump(est, tmp_path / "m.skops")
    if solver_path:
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    else:
        monkeypatch.delenv("FAIRSPEC_ENUMERATE_PAIRS", raising=False)
    (tmp_path / "s.fair").write_text(HEAD + "".join(PROP.format(k=k, op=op, eps=eps, using=u, mode=mo)
                                                    for k, (op, u, mo) in enumerate(cases)))
    rep = fairspec.check(tmp_path / "s.fair")
    assert not [d for d in rep.diagnostics if d.severity == "error"], rep.diagnostics
    return [rep[f"p{k}"] for k in range(len(cases))]


def _sound(est, cases, verdicts, T: Fraction, D: Fraction):
    """No verdict contradicts predict_proba: holds only where every pair satisfies it, violated only with
    a witness whose predict_proba break it; maximize's bound holds D."""
    for (op, _, mode), v in zip(cases, verdicts):
        truth = D <= T if op == "<=" else D < T
        if v.status == "holds":
            assert truth and v.how == "proved" and v.proof is not None, (op, mode, v.reason)
        if v.status == "violated":
            q = est.predict_proba(np.array([v.witness.x, v.witness.x_prime], dtype=np.float64))[:, 1]
            d = abs(Fraction(float(q[0])) - Fraction(float(q[1])))
            assert not truth and (d > T if op == "<=" else d >= T), (op, mode, d, T, D)
        if mode == "maximize" and v.bound is not None:
            lo, hi = v.bound
            assert Fraction(lo) <= D <= Fraction(hi), (v.bound, D)


MODELS = [("lr", (-0.125, 0.0), 1.0625), ("lr", (1.5, 0.25), -0.75), ("lda", (1.875, -0.9375), -1.4375),
          ("sgd", (-0.75, 0.3125), 0.5)]


@pytest.mark.parametrize("kind, coef, intercept", MODELS)
@pytest.mark.parametrize("solver_path", [False, True])
def test_ties_at_the_largest_predict_proba_difference(tmp_path, monkeypatch, kind, coef, intercept, solver_path):
    est = _model(kind, coef, intercept)
    D, _ = _truth(est)
    assert D > 0
    cases = [(op, u, mo) for op in ("<=", "<") for u, mo in MODES + (SOLVERS if kind == "lr" else [])]
    f = float(D)
    for tag, e in (("far-below", f * (1 - 2.0 ** -30)), ("below", float(np.nextafter(f, 0))), ("at", f),
                   ("above", float(np.nextafter(f, 1))), ("far-above", f * (1 + 2.0 ** -30))):
        eps = repr(e)
        out = _run(tmp_path, monkeypatch, est, cases, eps, solver_path)
        _sound(est, cases, out, Fraction(eps), D)
        if not solver_path and tag.startswith("far"):       # clear of the tie: the enumeration decides
            want = "holds" if tag == "far-above" else "violated"
            assert all(v.status == want for v in out), [(v.status, v.reason) for v in out]


@pytest.mark.parametrize("kind", ["lr", "lda", "sgd"])
def test_expit_rounds_distinct_logits_to_one_probability(tmp_path, monkeypatch, kind):
    """z = 20 + 0.125 x and z + 2**-48: the logits differ, predict_proba does not: ``<= 0`` is not violated."""
    est = _model(kind, (2.0 ** -48, 0.125), 20.0)
    D, logits_differ = _truth(est)
    assert D == 0 and logits_differ
    cases = [("<=", u, mo) for u, mo in MODES + (SOLVERS if kind == "lr" else [])]
    for solver_path in (False, True):
        out = _run(tmp_path, monkeypatch, est, cases, "0", solver_path)
        _sound(est, cases, out, Fraction(0), D)
        assert not [v for v in out if v.status == "violated"]


@pytest.mark.parametrize("coef, intercept", [((2.0 ** -47, 0.125), -0.75), ((2.0 ** -48, 0.125), -0.75),
                                             ((3 * 2.0 ** -46, 0.125), 1.0)])
def test_maximize_reads_predict_proba_where_differences_are_ulps(tmp_path, monkeypatch, coef, intercept):
    est = _model("lr", coef, intercept)
    D, _ = _truth(est)
    cases = [("<=", "", "maximize")]
    v = _run(tmp_path, monkeypatch, est, cases, "0", False)[0]
    _sound(est, cases, [v], Fraction(0), D)
    # a difference of a few ulps is within the bounds' margin: no violation certify vouches for (unknown),
    # and the value is predict_proba's largest difference, not above it
    assert v.status != "holds" and v.value == float(D) and Fraction(v.value) <= D, (v.status, v.value, D)


def test_rounded_sigmoid_check_decides_by_its_bounds_only():
    a, b = np.array([20.0 + 2.0 ** -48, 0.5, 3.0]), np.array([20.0, 0.5, -3.0])
    fair, bad = SigmoidCheck(a, "<=", 0, b).decide()                 # the real logistic: strictly increasing
    assert list(fair) == [False, True, False] and list(bad) == [True, False, True]
    fair, bad = SigmoidCheck(a, "<=", 0, b, True).decide()           # the library's float of it
    assert list(fair) == [False, True, False] and list(bad) == [False, False, True]
