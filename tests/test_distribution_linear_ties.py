"""The support check of a scikit-learn linear model over a distribution (backends/boolean/support.py,
kinds/distribution_rule.py) at exact ties and at points of probability 0.

* A point whose decision score is within the dot product's rounding of 0 never counts as agreeing
  (fe9b0d7: predict may decide it either way by batch) -- unless the score is an exact tie: dyadic
  weights and points where every product and partial sum is representable, so predict computes the
  exact rational score in every order and decides it as the rational's sign (0 -> classes_[0]).
  Checked by brute force against predict run point by point and in batches of several orders.
* A point the declared distribution gives probability exactly 0 weighs in no group's rate: the rule
  may decide it unlike the model. A tiny but nonzero probability still makes the verdict unknown.
"""

from __future__ import annotations

import itertools
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from test_distribution_exact import _verdicts  # the same spec-to-verdicts helper

skops_io = pytest.importorskip("skops.io")
from test_distribution_linear_support import _model, parity_gap  # noqa: E402  - a LogisticRegression with set weights

NAMES = "PQRS"
GRID = np.array(list(itertools.product((0, 1), repeat=4)), dtype=float)


def _exact_score(coef, intercept, x) -> Fraction:
    return sum((Fraction(float(a)) * Fraction(float(w)) for a, w in zip(x, coef)), Fraction(0)) + Fraction(intercept)


HEAD = """features W {
  P : bool protected
  Q : bool
  R : bool
  S : bool
}
model m = sklearn("lr.skops")
encode W for m {
  P, Q, R, S : raw
}
"""


def _dist(pq: str, pr: tuple, ps: tuple) -> str:
    return (f"distribution d {{\n  p(Q) = {pq}\n  p(R | P) = {pr[1]}\n  p(R | not P) = {pr[0]}\n"
            f"  p(S | Q) = {ps[1]}\n  p(S | not Q) = {ps[0]}\n}}\n")


def _brute_parity(model, pq: str, pr: tuple, ps: tuple) -> Fraction:
    """statistical_parity by brute force over the 16 points: predict run on each point alone, the
    probabilities the decimals as written."""
    q1, r, s = Fraction(pq), [Fraction(x) for x in pr], [Fraction(x) for x in ps]
    rate = {0: Fraction(0), 1: Fraction(0)}
    for x in GRID:
        p, q, rr, ss = (int(a) for a in x)
        yhat = int(model.predict(x.reshape(1, -1))[0] == model.classes_[1])
        w = (q1 if q else 1 - q1) * (r[p] if rr else 1 - r[p]) * (s[q] if ss else 1 - s[q])
        rate[p] += yhat * w
    return abs(rate[1] - rate[0])


def _batches_agree_at_zero(model, coef, intercept) -> int:
    """At every point whose exact score is 0, predict decides classes_[0] alone and in batches of the
    whole grid in three orders (and a Fortran-ordered copy). Returns how many such points."""
    zero = [i for i, x in enumerate(GRID) if _exact_score(coef, intercept, x) == 0]
    batches = [model.predict(GRID), model.predict(GRID[::-1])[::-1], model.predict(np.asfortranarray(GRID))]
    perm = np.random.default_rng(1).permutation(len(GRID))
    got = np.empty(len(GRID), dtype=model.classes_.dtype)
    got[perm] = model.predict(GRID[perm])
    batches.append(got)
    for i in zero:
        alone = model.predict(GRID[i:i + 1])[0]
        assert alone == model.classes_[0], (coef, intercept, GRID[i])
        assert all(b[i] == alone for b in batches), (coef, intercept, GRID[i])
    return len(zero)


def test_exact_ties_are_decided_as_predict_decides_them_alone_and_in_every_batch(tmp_path):
    """Tie-biased brute force: dyadic weights over four bool features, many points scoring exactly 0.
    Every such point is an exact tie (none left at_tie); where the rounded rule then agrees with
    predict on the whole support the verdict is proved and its exact value is the brute-force one
    with predict point by point (before: unknown, every exact tie taken as a disagreement)."""
    rng = np.random.default_rng(2029)
    weights = [-2.0, -1.0, -0.5, 0.5, 1.0, 2.0]
    probs = ["0.5", "0.25", "0.4", "0.75", "0.2"]
    decided = tied_cases = 0
    for _ in range(14):
        coef = [float(rng.choice(weights)) for _ in NAMES]
        intercept = float(rng.choice([-1.5, -1.0, -0.5, 0.0, 0.5, 1.0]))
        model = _model(tmp_path, coef, intercept)
        zeros = _batches_agree_at_zero(model, coef, intercept)
        pq, pr, ps = str(rng.choice(probs)), tuple(rng.choice(probs, 2)), tuple(rng.choice(probs, 2))
        want = _brute_parity(model, pq, pr, ps)
        t = Decimal(want.numerator) / Decimal(want.denominator)
        assert Fraction(t) == want
        no = f"property no {{ statistical_parity(m, groups P, distribution d) < {t} }}\n" if want else ""
        v = _verdicts(tmp_path, HEAD + _dist(pq, pr, ps)
                      + f"property ok {{ statistical_parity(m, groups P, distribution d) <= {t} }}\n" + no)
        s = v["ok"].details["classifier"]["support_agreement"]
        assert s["points"] == 16 and "at_tie" not in s, (coef, intercept, s)
        assert s.get("exact_ties", 0) == zeros, (coef, intercept, s, zeros)
        tied_cases += zeros > 0
        if s["disagree"] == 0:
            decided += zeros > 0
            assert v["ok"].status == "holds" and v["ok"].how == "proved", (coef, intercept, v["ok"].reason)
            assert Fraction(v["ok"].details["exact_value"]) == want, (coef, intercept)
            assert not want or v["no"].status == "violated", (coef, intercept, v["no"].reason)
        else:                                  # the rounded rule decides some point unlike predict
            ex = s["example"]
            x = np.array([[float(ex[n]) for n in NAMES]])
            assert bool(model.predict(x)[0] == model.classes_[1]) == s["example_model"] != s["example_rule"]
            for name in v:
                assert v[name].status == "unknown", (coef, intercept, v[name].status, v[name].reason)
    assert tied_cases >= 8 and decided >= 4, (tied_cases, decided)


def test_an_exact_tie_the_rule_decides_the_other_way_is_a_disagreement(tmp_path):
    # (2, 2, -1, -3) . (1, 1, 1, 1) = 0 exactly: predict says classes_[0]; the rule +67 +67 -33 -100 >= 1
    # (the weights scaled by 3 and rounded) says 1 -- a real disagreement, not a tie
    coef, intercept = [2.0, 2.0, -1.0, -3.0], 0.0
    model = _model(tmp_path, coef, intercept)
    assert _batches_agree_at_zero(model, coef, intercept) >= 1
    v = _verdicts(tmp_path, HEAD + _dist("0.5", ("0.5", "0.5"), ("0.5", "0.5"))
                  + "property a { statistical_parity(m, groups P, distribution d) <= 0.9 }\n")["a"]
    s = v.details["classifier"]["support_agreement"]
    assert "at_tie" not in s and s["exact_ties"] >= 1 and s["disagree"] >= 1, s
    assert v.status == "unknown" and "the rule decides unlike the model's predict" in v.reason, v.reason
    assert {n: bool(s["example"][n]) for n in NAMES} == dict(zip(NAMES, (True,) * 4)), s
    assert s["example_model"] is False and s["example_rule"] is True and s["example_at_tie"] is False


def test_a_non_dyadic_tie_near_zero_stays_unknown(tmp_path):
    # 0.1 + 0.2 - 0.3 is 5.55e-17 in float64 left to right, 0 in decimals: not an exact tie
    coef, intercept = [0.1, 0.2, -0.3, 0.5], 0.0
    _model(tmp_path, coef, intercept)
    v = _verdicts(tmp_path, HEAD + _dist("0.5", ("0.5", "0.5"), ("0.5", "0.5"))
                  + "property a { statistical_parity(m, groups P, distribution d) <= 0.9 }\n")["a"]
    s = v.details["classifier"]["support_agreement"]
    assert s.get("at_tie", 0) >= 1, s
    assert v.status == "unknown" and "within its rounding of 0" in v.reason, (v.status, v.reason)


def test_exact_decisions_against_predict_and_its_limits():
    from sklearn.linear_model import LogisticRegression, RidgeClassifier
    from sklearn.svm import LinearSVC

    from fairspec.backends.boolean.support import at_tie, exact_decisions

    rng = np.random.default_rng(7)
    X = rng.integers(0, 2, size=(100, 4)).astype(float)
    y = (X[:, 0] > 0.5).astype(int)
    for cls in (LogisticRegression, LinearSVC, RidgeClassifier):
        for _ in range(20):
            m = cls().fit(X, y)
            m.coef_ = (rng.integers(-8, 9, size=(1, 4)) / 4.0).astype(float)
            m.intercept_ = np.array([rng.integers(-8, 9) / 4.0]) if cls is not RidgeClassifier \
                else float(rng.integers(-8, 9) / 4.0)
            tied = np.flatnonzero(at_tie(m, GRID))
            got = exact_decisions(m, GRID, tied)
            batch = m.predict(GRID)
            for i in tied:
                assert got[i] is not None and got[i] == batch[i] == m.predict(GRID[i:i + 1])[0]
                assert _exact_score(m.coef_[0], float(np.ravel(m.intercept_)[0]), GRID[i]) == 0
    # the terms 2^53, 1 and -2^53 are integers, but 2^53 + 1 is not a float64: the exact score 1 may
    # be computed as 0 in one order -- not an exact tie
    m = LogisticRegression().fit(X[:, :3], y)
    m.coef_, m.intercept_ = np.array([[2.0 ** 53, 1.0, -(2.0 ** 53)]]), np.array([0.0])
    x = np.ones((1, 3))
    assert at_tie(m, x)[0] and exact_decisions(m, x, [0]) == {0: None}
    # a float32 model is computed in float64 (X is float64): its dyadic ties are exact too
    m.coef_, m.intercept_ = np.array([[0.5, -0.25, -0.25]], dtype=np.float32), np.array([0.0], dtype=np.float32)
    assert exact_decisions(m, x, [0]) == {0: m.classes_[0]} and m.predict(x)[0] == m.classes_[0]
    # a subnormal weight is never taken as exact (a flush-to-zero mode may read it as 0)
    m.coef_, m.intercept_ = np.array([[2.0 ** -1070, 0.0, 0.0]]), np.array([0.0])
    assert exact_decisions(m, x, [0]) == {0: None}


ZERO_HEAD = """features W {
  P : bool protected
  Q : bool
  S : bool
}
model m = sklearn("lr.skops")
encode W for m {
  P, Q, S : raw
}
"""


def test_a_disagreeing_point_of_probability_zero_does_not_make_it_unknown(tmp_path):
    """The rule decides (P, Q, S) = (0, 1, 0) unlike the model (its score is +5e-5); with p(S | Q) = 1
    that point has probability 0 and weighs in neither group's rate: the verdict is proved, its value
    the brute-force one with predict. With p(S | Q) = 0.999999 it is unknown; influence (which
    redraws Q uniformly) stays unknown either way."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(200, 3)).astype(float)
    m = LogisticRegression().fit(X, (X[:, 0] + X[:, 1] > 0.5).astype(int))
    m.coef_, m.intercept_ = np.array([[1.0, 1.0001, -3.0]]), np.array([-1.00005])
    skops_io.dump(m, tmp_path / "lr.skops")
    for ps, zero in (("1", True), ("0.999999", False)):
        q1, s1 = Fraction(2, 5), {1: Fraction(ps), 0: Fraction(3, 10)}
        rate = {0: Fraction(0), 1: Fraction(0)}
        for p, q, s in itertools.product((0, 1), repeat=3):
            yhat = int(m.predict(np.array([[p, q, s]], dtype=float))[0])
            rate[p] += yhat * (q1 if q else 1 - q1) * (s1[q] if s else 1 - s1[q])
        want = abs(rate[1] - rate[0])
        t = Decimal(want.numerator) / Decimal(want.denominator)
        text = (ZERO_HEAD + f"distribution d {{\n  p(Q) = 0.4\n  p(S | Q) = {ps}\n  p(S | not Q) = 0.3\n}}\n"
                f"property a {{ statistical_parity(m, groups P, distribution d) <= {t} }}\n"
                "property i { influence(m, groups P, distribution d, subsets = [{Q}]) <= 0.9 }\n")
        v = _verdicts(tmp_path, text)
        s = v["a"].details["classifier"]["support_agreement"]
        assert s["disagree"] == 1 and s["example"] == {"P": False, "Q": True, "S": False}, s
        if zero:
            assert s["zero_probability"] == 1, s
            assert v["a"].status == "holds" and v["a"].how == "proved", (v["a"].status, v["a"].reason)
            assert Fraction(v["a"].details["exact_value"]) == want
            assert "(1 of the 8) has probability 0" in v["a"].details["classifier"]["note"]
        else:
            assert "zero_probability" not in s, s
            assert v["a"].status == "unknown" and "linear approximation" in v["a"].reason, v["a"].reason
        assert v["i"].status == "unknown" and "linear approximation" in v["i"].reason, v["i"].reason


def test_a_category_of_weight_zero_leaves_its_points_out(tmp_path):
    """C = c has probability 0: the rule may decide its points unlike the model. Here C = c scores
    +5e-5 beside the bias (the rule, its weights rounded, says 0, the model 1), and C = b is exactly
    at a dyadic tie; the verdict is proved with the brute-force value. With p(C = c) = 0.001 it is
    unknown, the example a point of positive probability."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = np.zeros((200, 5))
    X[:, :2] = rng.integers(0, 2, size=(200, 2))
    X[np.arange(200), 2 + rng.integers(0, 3, 200)] = 1
    m = LogisticRegression().fit(X, (X[:, 0] > 0.5).astype(int))
    m.coef_ = np.array([[2.0, 1.0, -1.0, 0.0, 1.00005]])          # P, Q, C = a, b, c
    m.intercept_ = np.array([-1.0])
    skops_io.dump(m, tmp_path / "lr.skops")
    for pc_b, pc_c, zero in (("0.5", "0", True), ("0.499", "0.001", False)):
        want, t = parity_gap(m, {0: Fraction(1, 2), 1: Fraction(pc_b), 2: Fraction(pc_c)}, Fraction(2, 5))
        text = ("features W {\n  P : bool protected\n  Q : bool\n  C : {a, b, c}\n}\n"
                'model m = sklearn("lr.skops")\nencode W for m {\n  P, Q : raw\n  C : onehot\n}\n'
                f"distribution d {{\n  p(Q) = 0.4\n  p(C = a) = 0.5\n  p(C = b) = {pc_b}\n  p(C = c) = {pc_c}\n}}\n"
                f"property ok {{ statistical_parity(m, groups P, distribution d) <= {t} }}\n")
        v = _verdicts(tmp_path, text)["ok"]
        s = v.details["classifier"]["support_agreement"]
        assert s["points"] == 12 and s.get("exact_ties", 0) >= 1 and "at_tie" not in s, s
        if zero:
            assert s["zero_probability"] == s["disagree"] >= 1, s
            assert v.status == "holds" and v.how == "proved", (v.status, v.reason)
            assert Fraction(v.details["exact_value"]) == want
        else:
            assert v.status == "unknown", (v.status, v.reason)


def test_a_point_of_probability_zero_in_one_group_only_still_counts(tmp_path):
    """The model does not read P: its support is (Q, S), and (Q, S) = (1, 0), where the rule decides 0
    and the model 1, has probability 0 in group P (p(S | P) = 1) but not in group not P: it weighs in
    that group's rate, so the verdict stays unknown. With p(S | not P) = 1 too it weighs in none."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(200, 3)).astype(float)
    m = LogisticRegression().fit(X, (X[:, 0] + X[:, 1] > 0.5).astype(int))
    m.coef_, m.intercept_ = np.array([[0.0, 1.0001, -3.0]]), np.array([-1.00005])
    skops_io.dump(m, tmp_path / "lr.skops")
    for s_not_p, zero in (("0.3", False), ("1", True)):
        text = (ZERO_HEAD + f"distribution d {{\n  p(Q) = 0.4\n  p(S | P) = 1\n  p(S | not P) = {s_not_p}\n}}\n"
                "property a { statistical_parity(m, groups P, distribution d) <= 0.5 }\n")
        v = _verdicts(tmp_path, text)["a"]
        s = v.details["classifier"]["support_agreement"]
        assert s["points"] == 4 and s["disagree"] == 1 and s["example"] == {"Q": True, "S": False}, s
        if zero:
            assert s["zero_probability"] == 1 and v.status == "holds" and v.how == "proved", (s, v.reason)
        else:
            assert "zero_probability" not in s and v.status == "unknown", (s, v.status, v.reason)
