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

Session 26: the enumeration (every pair of a small domain evaluated on the runtime) compares predict_proba's
own floats exactly (``pair_runtime.library_probability``), so a tie within the bounds' margin and saturated
logits (|z| >= 20, where the margin is most of a difference) are decided, not unknown, for a model whose
decision_function the runtime error model covers (every batch gives dyadic rows the same logits, so the same
predict_proba). A value (the witness's, a solver's best pair's) is predict_proba's own difference, not the
logistic's bounds'. Since LDA and SGDClassifier are networks too (models.network_sklearn.LINEAR_CLASSIFIERS)
the error model covers them and the solvers run on them: every kind is decided at a tie by enumeration,
and the solver path (milp, smt) is checked for them as for a LogisticRegression.
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
SOLVERS = [("using milp", "prove"), ("using smt", "prove")]


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
    a witness whose predict_proba break it (find / prove report that pair's predict_proba difference);
    maximize's bound holds D."""
    for (op, _, mode), v in zip(cases, verdicts):
        truth = D <= T if op == "<=" else D < T
        if v.status == "holds":
            assert truth and v.how == "proved" and v.proof is not None, (op, mode, v.reason)
        if v.status == "violated":
            q = est.predict_proba(np.array([v.witness.x, v.witness.x_prime], dtype=np.float64))[:, 1]
            d = abs(Fraction(float(q[0])) - Fraction(float(q[1])))
            assert not truth and (d > T if op == "<=" else d >= T), (op, mode, d, T, D)
            assert mode == "maximize" or v.value == float(d), (op, mode, v.value, float(d))
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
    cases = [(op, u, mo) for op in ("<=", "<") for u, mo in MODES + SOLVERS]
    f = float(D)
    for tag, e in (("far-below", f * (1 - 2.0 ** -30)), ("below", float(np.nextafter(f, 0))), ("at", f),
                   ("above", float(np.nextafter(f, 1))), ("far-above", f * (1 + 2.0 ** -30))):
        eps = repr(e)
        out = _run(tmp_path, monkeypatch, est, cases, eps, solver_path)
        _sound(est, cases, out, Fraction(eps), D)
        if not solver_path:
            # clear of the tie, and at it on predict_proba's own floats (dyadic rows are exact in every batch:
            # the runtime error model reads LDA's and SGD's decision_function too, as their network, since
            # session 26): the enumeration decides, and maximize's interval is D's floats
            assert all(v.status == ("holds" if (D <= Fraction(eps) if op == "<=" else D < Fraction(eps))
                                    else "violated") for (op, _, _), v in zip(cases, out)), \
                [(v.status, v.reason) for v in out]
            assert all(v.bound == (_down(D), _up(D)) for (_, _, mo), v in zip(cases, out) if mo == "maximize")


@pytest.mark.parametrize("kind", ["lr", "lda", "sgd"])
def test_expit_rounds_distinct_logits_to_one_probability(tmp_path, monkeypatch, kind):
    """z = 20 + 0.125 x and z + 2**-48: the logits differ, predict_proba does not: ``<= 0`` is not violated."""
    est = _model(kind, (2.0 ** -48, 0.125), 20.0)
    D, logits_differ = _truth(est)
    assert D == 0 and logits_differ
    cases = [("<=", u, mo) for u, mo in MODES + SOLVERS]
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
    # a difference of a few ulps is within the bounds' margin, not predict_proba's: violated on its floats,
    # and the value is predict_proba's largest difference, not above it
    assert v.status == "violated" and v.value == float(D) and v.bound == (_down(D), _up(D)), (v.status, v.value, D)


def test_rounded_sigmoid_check_decides_by_its_bounds_only():
    a, b = np.array([20.0 + 2.0 ** -48, 0.5, 3.0]), np.array([20.0, 0.5, -3.0])
    fair, bad = SigmoidCheck(a, "<=", 0, b).decide()                 # the real logistic: strictly increasing
    assert list(fair) == [False, True, False] and list(bad) == [True, False, True]
    fair, bad = SigmoidCheck(a, "<=", 0, b, True).decide()           # the library's float of it
    assert list(fair) == [False, True, False] and list(bad) == [False, False, True]


def _down(D: Fraction) -> float:
    from fairspec.certify.rounding import float_down

    return float_down(D)


def _up(D: Fraction) -> float:
    from fairspec.certify.rounding import float_up

    return float_up(D)


@pytest.mark.parametrize("coef, intercept", [((2.0 ** -48, 0.125), 20.0), ((0.5, 0.125), 20.0),
                                             ((0.0625, 0.125), -21.0), ((1.0, 0.125), 30.0)])
def test_saturated_logits_decided_on_predict_proba(tmp_path, monkeypatch, coef, intercept):
    """|z| >= 20: the logistic's relative 2**-40 margin is most of a pair's difference (unknown before);
    the enumeration decides every tolerance at D, an ulp either side, ``<=`` and ``<``, on predict_proba."""
    est = _model("lr", coef, intercept)
    D, _ = _truth(est)
    f = float(D)
    tols = [f] + ([float(np.nextafter(f, 0)), float(np.nextafter(f, 1))] if f > 0 else [])
    for e in tols:
        eps = repr(e)
        cases = [(op, u, mo) for op in ("<=", "<") if e > 0 or op == "<=" for u, mo in MODES]
        out = _run(tmp_path, monkeypatch, est, cases, eps, False)
        _sound(est, cases, out, Fraction(eps), D)
        assert all(v.status != "unknown" for v in out), [(v.status, v.reason) for v in out]
        assert all(v.bound == (_down(D), _up(D)) for (_, _, mo), v in zip(cases, out) if mo == "maximize")
        proved = [v for v in out if v.status == "holds"]
        assert all(v.proof.method == "enumeration" and v.proof.detail.get("over") == "predict_proba" for v in proved)


def test_a_replayed_pair_measures_its_predict_proba(tmp_path):
    """runtime_pair_value (a solver's witness, its best pair) reads predict_proba of the pair's rows: the
    logistic's bounds of the logits of z = 0.375 - 0.75 and that + 2**-48 measure 9.44e-16, above every
    pair's predict_proba difference (8.88e-16 at most); each pair measures its own predict_proba's."""
    from types import SimpleNamespace

    from fairspec.kinds.pair_runtime import runtime_pair_value
    from fairspec.models.sklearn_model import load_sklearn

    skio = pytest.importorskip("skops.io")
    est = _model("lr", (2.0 ** -48, 0.125), -0.75)
    D, _ = _truth(est)
    skio.dump(est, tmp_path / "m.skops")
    model = load_sklearn(tmp_path / "m.skops", output="decision_function")
    prop = SimpleNamespace(post="prob", cls=None)
    above = 0
    for x in range(N + 1):
        X2 = np.array([[0.0, x], [1.0, x]])
        s = np.asarray(model.score(X2), dtype=np.float64)
        q = est.predict_proba(X2)[:, 1]
        above += Fraction(runtime_pair_value(prop, model, s)) > D          # what the value was before session 32
        assert runtime_pair_value(prop, model, s, X2) == float(abs(q[0] - q[1])) <= float(D)
    # without the rows, the logistic's bounds of the logits measured 9.44e-16 (each logit's lower bound
    # subtracted); since session 32 the measure is one's lower bound minus the other's upper, rounded down: a
    # lower end of the real logistic's difference, at or below every pair's measure here
    assert not above


def test_count_individuals_decides_a_library_logistic_by_its_bounds():
    """The refinement's and the estimate's count (certify.enumerate.count_individuals) of a ``prob`` read as
    predict_proba (``rounded``): logits 20 + 2**-48 and 20 are one expit float, so ``<= 0`` is neither
    broken nor shown kept there (the bounds cannot tell); the real logistic's count calls it unfair. Since
    batch_unsure judges ``prob`` by the decision_function's error bound it is reached through a spec
    (test_partition_estimate_decides_eps_zero_on_the_logit_error_bound's lr at z = 20); pinned here too."""
    from fairspec.certify.enumerate import count_individuals

    S = [np.array([20.0 + 2.0 ** -48, 0.5, 3.0]), np.array([20.0, 0.5, -3.0])]
    pairs = [(0, 1), (1, 0)]
    real = count_individuals(S, pairs, "prob-of-logit", eps=0, claim="c")
    assert list(real.unfair) == [True, False, True] and list(real.fair) == [False, True, False]
    lib = count_individuals(S, pairs, "prob-of-logit", eps=0, claim="c", rounded=True)
    assert list(lib.unfair) == [False, False, True] and list(lib.fair) == [False, True, False]
    assert lib.proof.detail.get("logistic") == "library (bounds only)" and "logistic" not in real.proof.detail


def test_the_batch_scorer_of_a_library_logistic_is_rounded(tmp_path):
    """The refinement / estimate read ``rounded`` from the runtime's BatchScorer (pair_runtime.batch_scorer)."""
    from types import SimpleNamespace

    from fairspec.kinds.pair_runtime import batch_scorer
    from fairspec.models.sklearn_model import load_sklearn

    skio = pytest.importorskip("skops.io")
    skio.dump(_model("lr", (2.0 ** -48, 0.125), 20.0), tmp_path / "m.skops")
    model = load_sklearn(tmp_path / "m.skops", output="decision_function")
    assert batch_scorer(SimpleNamespace(post="prob"), model, None, None).rounded
    assert not batch_scorer(SimpleNamespace(post="logit"), model, None, None).rounded
    assert batch_scorer(SimpleNamespace(post="prob"), model, None, None).prob is not None
    assert batch_scorer(SimpleNamespace(post="logit"), model, None, None).prob is None


def test_the_count_compares_predict_proba_where_the_scorer_reads_it():
    """counterfactuals.counted_scores: a BatchScorer with ``prob`` (the library's probabilities) is counted on
    those floats exactly (post ``prob``, Proof detail over = predict_proba): logits 20 + 2**-48 and 20, one
    expit float, are fair at ``<= 0`` (the bounds left them neither), and an ulp of predict_proba apart unfair."""
    from fairspec.backends.counterfactuals import batch_scores, counted_scores
    from fairspec.backends.pair.certify import BatchScorer
    from fairspec.certify.enumerate import count_individuals
    from scipy.special import expit

    def fn(X):
        return 20.0 + X[:, 1] + 2.0 ** -48 * X[:, 0]

    cases, pairs = [{0: 0.0}, {0: 1.0}], [(0, 1), (1, 0)]
    X = np.array([[0.0, 0.0], [0.0, -20.0]])
    bounds = BatchScorer(fn, "prob-of-logit", 0.5, rounded=True)
    lib = bounds._replace(prob=lambda X: expit(fn(X)))
    S, unsure = batch_scores(lib, X, cases, pairs)
    C, post, opts = counted_scores(lib, X, cases, S)
    assert post == "prob" and opts == {"over": "predict_proba"}
    assert [list(c) for c in C] == [list(expit(fn(Xc))) for Xc in (X * [0, 1], X * [0, 1] + [1, 0])]
    res = count_individuals(C, pairs, post, eps=0, claim="c", **opts)
    assert list(res.fair) == [True, False] and list(res.unfair) == [False, True]   # expit(2**-48) > 0.5
    assert res.proof.detail.get("over") == "predict_proba"
    C, post, opts = counted_scores(bounds, X, cases, S)
    assert C is S and post == "prob-of-logit" and opts == {"rounded": True}
    res = count_individuals(C, pairs, post, eps=0, claim="c", **opts)
    assert list(res.fair) == [False, False] and list(res.unfair) == [False, False]


def _individual_truth(est, T: Fraction, op: str):
    """Per individual x (0..N): whether some counterfactual breaks ``|p - p'| op T`` on predict_proba."""
    xs = np.arange(N + 1, dtype=np.float64)
    P = [est.predict_proba(np.column_stack([np.full_like(xs, g), xs]))[:, 1] for g in (0, 1)]
    d = [abs(Fraction(float(p)) - Fraction(float(q))) for p, q in zip(*P)]
    return [not (v <= T if op == "<=" else v < T) for v in d]


@pytest.mark.parametrize("kind, coef, intercept", [("lr", (0.0, 0.125), 1.0), ("lr", (2.0 ** -48, 0.125), 20.0),
                                                   ("lr", (-0.125, 0.25), 1.0625), ("lda", (0.0, -0.5), 0.75),
                                                   ("sgd", (2.0 ** -47, 0.0625), -0.5)])
def test_partition_estimate_decides_eps_zero_on_the_logit_error_bound(tmp_path, monkeypatch, kind, coef, intercept):
    """The partitions' estimate (the refinement's count, certify.enumerate.count_individuals, through
    pair_spread.batch_unsure) judges another batch's rounding of predict_proba by the decision_function's
    error bound, as the enumeration does: an assumed spread for ``prob`` made every individual at eps 0
    'may move', so none was decided; and the partitions read the decision_function's layers for ``prob`` (they
    had no runtime error bound: a sigmoid head read as logit), so boxes are certified and the refinement runs.
    Brute force on predict_proba per individual, with and without ``refine``: every individual certified,
    enumerated or sampled fair is fair and every one unfair is unfair (0 wrong); where the logits of a pair are
    equal (protected coefficient 0) or its probabilities clear of the tolerance by far more than the bounds'
    margin, it is decided."""
    import json

    from fairspec.pipeline import check
    from fairspec.report import to_json

    est = _model(kind, coef, intercept)
    D, _ = _truth(est)
    f = float(D)
    skio = pytest.importorskip("skops.io")
    skio.dump(est, tmp_path / "m.skops")
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    runs = [("0", "<=")] + ([(repr(f), "<="), (repr(f), "<"), (repr(float(np.nextafter(f, 0))), "<="),
                             (repr(float(np.nextafter(f, 1))), "<")] if f > 0 else [])
    for (eps, op), using in ((r, u) for r in runs for u in ("partitions = 2", "partitions = 2\n  refine = 60s")):
        (tmp_path / "s.fair").write_text(HEAD + PROP.format(k=0, op=op, eps=eps, using=using, mode="prove"))
        v = json.loads(to_json(check(tmp_path / "s.fair")))["properties"][0]
        bad = _individual_truth(est, Fraction(eps), op)
        assert v["status"] != "holds" or not any(bad), v
        assert v["status"] != "violated" or any(bad), v
        sh = v["details"]["coverage"]["shares"]
        fair, unfair, left = (int(Fraction(sh[k]) * (N + 1)) for k in ("certified", "falsified", "undecided"))
        est_ = sh.get("estimate")
        n = est_["samples"] if est_ else 0
        if est_ and est_.get("estimated") and left:
            # the undecided individuals are drawn alike (about n / left each, +-3 sigma well inside one of
            # them): how many the count called unfair / fair is the nearest integer
            fair += round(left * est_["sampled_fair"] / n)
            unfair += round(left * est_["sampled_unfair"] / n)
        # none of them wrong on predict_proba
        assert unfair <= sum(bad) and fair <= N + 1 - sum(bad), (eps, op, sh)
        if coef[0] == 0.0 or not any(bad):      # equal logits / probabilities: every individual fair, decided
            # (the count compares predict_proba's floats: z = 20 + 2**-48 and 20 are one float, fair at eps 0)
            assert fair == N + 1, (eps, op, sh)
        if eps == "0" and abs(coef[0]) >= 2.0 ** -8:    # clear of 0 by far more than the bounds' margin
            assert unfair == N + 1, (eps, op, sh)
