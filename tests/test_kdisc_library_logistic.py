"""k-discrimination of ``prob`` on a binary scikit-learn logistic declared by its decision_function
(session 27). Its buckets are counted on predict_proba's own floats (``SklearnModel.prob_reader``); the
check for counterfactuals another batch may move into the next bucket (``kinds.kdisc_rounding.may_move``)
read those probabilities as if they were logits, so probabilities far from every bucket boundary (z = -40:
p = 4e-18, read as a logit, lies at sigmoid(4e-18) = 1/2, a boundary of eps = 0.25) made the enumeration
say ``unknown`` ("within the runtime's rounding of a bucket boundary"), where a model declared by
predict_proba proved the same claim. Now the move is bounded from the decision_function's logit the
probability is elementwise of. Every verdict is checked against brute force on predict_proba (buckets
floor(p / eps) in exact arithmetic, the last closed); the coefficients are dyadic, so the ties are exact
(predict_proba(z = 2**-21) is 0.5 + 2**-23).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import fairspec
from conftest import hand_set_logistic

TIE = "1.1920928955078125e-07"          # 2**-23


_model = hand_set_logistic     # a LogisticRegression on (g, x), coefficients set by hand


def _spec(lo, hi, eps, op, k, output):
    return f"""features F {{
  g : {{a, b}} protected
  x : int in [{lo}, {hi}]
}}
model m = sklearn("m.skops", output = "{output}")
encode F for m {{
  g : code
  x : raw
}}
property p {{
  k_discrimination(m, over {{g}}, eps = {eps}) {op} {k}
}}
"""


def _max_k(est, lo, hi, eps) -> int:
    e = Fraction(eps)
    nb = math.ceil(1 / e)
    xs = np.arange(lo, hi + 1, dtype=np.float64)
    P = [est.predict_proba(np.column_stack([np.full_like(xs, g), xs]))[:, 1] for g in (0.0, 1.0)]
    best = 0
    for i in range(xs.size):
        buckets = {min(nb - 1, math.floor(Fraction(float(p[i])) / e)) for p in P}
        best = max(best, len(buckets))
    return best


# (coef of g, coef of x), intercept, eps, claim, domain: probabilities far below a boundary (z = -40); an exact
# tie on a boundary (k = 2 at x = 0 only); saturated logits (z >= 30); a boundary at 1/2 (z = 0 exactly)
CASES = [((0.5, 0.25), -40.0, "0.25", ("<", 2), (0, 3)),
         ((0.5, 0.25), -40.0, "0.5", ("<=", 1), (-4, 4)),
         ((2.0 ** -21, 0.25), 0.0, TIE, ("<", 2), (0, 1)),
         ((2.0 ** -21, 0.25), 0.0, TIE, ("<=", 1), (0, 1)),
         ((2.0 ** -22, 0.25), 0.0, TIE, ("<", 2), (0, 1)),
         ((0.5, 0.125), 30.0, "1e-14", ("<", 2), (0, 8)),
         ((0.5, 0.125), 30.0, "0.25", ("<", 2), (0, 8)),
         ((0.25, 0.5), 0.0, "0.5", ("<", 2), (-3, 3))]


@pytest.mark.parametrize("coef, intercept, eps, claim, domain", CASES)
@pytest.mark.parametrize("output", ["decision_function", "predict_proba"])
def test_enumeration_against_predict_proba(tmp_path, coef, intercept, eps, claim, domain, output):
    skio = pytest.importorskip("skops.io")
    est = _model(coef, intercept)
    skio.dump(est, tmp_path / "m.skops")
    op, k = claim
    (tmp_path / "s.fair").write_text(_spec(*domain, eps, op, k, output))
    rep = fairspec.check(tmp_path / "s.fair")
    assert not [d for d in rep.diagnostics if d.severity == "error"], rep.diagnostics
    v = rep["p"]
    kk = _max_k(est, *domain, eps)
    truth = kk < k if op == "<" else kk <= k
    assert v.status == ("holds" if truth else "violated"), (v.status, v.reason, kk)
    if truth:
        assert v.how == "proved" and v.proof is not None
    else:
        assert v.value == kk


def test_may_move_reads_a_library_probability_by_its_logit(tmp_path):
    """may_move on predict_proba's floats (what the enumeration counts): 4e-18 is no logit near 0."""
    from fairspec.kinds.kdisc_rounding import may_move
    from fairspec.models.sklearn_model import load_sklearn

    skio = pytest.importorskip("skops.io")
    skio.dump(_model((0.5, 0.25), -40.0), tmp_path / "m.skops")
    model = load_sklearn(tmp_path / "m.skops", output="decision_function")
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 3.0], [1.0, 3.0]])
    read, logit = model.prob_reader()
    assert not logit
    s = np.asarray(read(X), dtype=np.float64)
    assert np.all(s < 1e-16)
    from types import SimpleNamespace

    prop = SimpleNamespace(output="prob", eps="0.25", cls=None)
    moved = may_move(prop, model, X, s, False)
    assert moved is None or not moved.any()


def _spec3(lo, hi, eps, op, k, values):
    return _spec(lo, hi, eps, op, k, "decision_function").replace("g : {a, b} protected",
                                                                  f"g : {{{', '.join(values)}}} protected").replace(
        f"{op} {k}\n}}", f"{op} {k}\n  timeout = 600s\n  search annealing for 1s\n}}")


def _max_k_values(est, lo, hi, eps, G) -> int:
    e = Fraction(eps)
    nb = math.ceil(1 / e)
    xs = np.arange(lo, hi + 1, dtype=np.float64)
    P = [est.predict_proba(np.column_stack([np.full_like(xs, g), xs]))[:, 1] for g in range(G)]
    if xs.size > 1000:           # the claims below are decided by their extremes; count exactly near them
        B = np.stack([np.minimum(nb - 1, np.floor(p / float(e))) for p in P])
        cand = np.flatnonzero((np.sort(B, axis=0)[1:] != np.sort(B, axis=0)[:-1]).sum(axis=0) + 1 >= G)
        xs_idx = cand[:200]
    else:
        xs_idx = range(xs.size)
    best = 1
    for i in xs_idx:
        best = max(best, len({min(nb - 1, math.floor(Fraction(float(p[i])) / e)) for p in P}))
    return best


# the branch and bound on the logit, its individuals counted on predict_proba: (coef of g, coef of x), intercept,
# eps, claim, domain, g's values. Three counterfactuals 0.5 apart in the logit never span 3 buckets of 0.25 (the
# logistic rises by < 0.245 over 1); 2 apart they do; at x = 0 predict_proba is 0.5 + 2**-23 (a boundary of
# eps = 2**-23, which the logistic's bounds straddle) and 0.5 + 3 * 2**-24: one bucket, k = 1
BAB = [((0.5, 0.001), 0.0, "0.25", ("<", 3), (-3_000_000, 3_000_000), ("a", "b", "c")),
       ((2.0, 0.001), 0.0, "0.25", ("<", 3), (-3_000_000, 3_000_000), ("a", "b", "c")),
       ((2.0 ** -22, 0.0), 2.0 ** -21, TIE, ("<", 2), (0, 1), ("a", "b")),
       ((2.0 ** -21, 0.0), 0.0, TIE, ("<", 2), (0, 1), ("a", "b"))]


@pytest.mark.parametrize("coef, intercept, eps, claim, domain, values", BAB)
def test_branch_and_bound_on_a_library_logistic(tmp_path, monkeypatch, coef, intercept, eps, claim, domain, values):
    """Declared by its decision_function, the branch and bound did not apply (prob(m(x)) is predict_proba,
    not the declared score): the search's unknown on a claim the same model declared by predict_proba
    proves in 0.1 s. Now it bounds the logit and counts enumerated individuals on predict_proba."""
    skio = pytest.importorskip("skops.io")
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    est = _model(coef, intercept)
    skio.dump(est, tmp_path / "m.skops")
    op, k = claim
    (tmp_path / "s.fair").write_text(_spec3(*domain, eps, op, k, values))
    rep = fairspec.check(tmp_path / "s.fair")
    assert not [d for d in rep.diagnostics if d.severity == "error"], rep.diagnostics
    v = rep["p"]
    kk = _max_k_values(est, *domain, eps, len(values))
    truth = kk < k if op == "<" else kk <= k
    assert v.status == ("holds" if truth else "violated"), (v.status, v.reason, kk)
    if truth:
        assert v.how == "proved" and v.proof is not None and v.details.get("engine") == "kdisc-bab", v.details


def test_a_domain_of_one_individual_is_no_internal_error(tmp_path, monkeypatch):
    """Session 27: with enumeration off, a domain whose shared coordinates are all fixed (x in [0, 0]) gave
    `unknown` "internal error in the search backend (ValueError: nothing to search ...)": the search's space
    refused it. It is now an unknown saying why, and enumeration (on by default) decides it."""
    skio = pytest.importorskip("skops.io")
    skio.dump(_model((0.5, 0.25), 0.0), tmp_path / "m.skops")
    (tmp_path / "s.fair").write_text(_spec(0, 0, "0.25", "<", 2, "decision_function"))
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    (v,) = fairspec.check(tmp_path / "s.fair")
    assert v.status == "unknown" and "internal error" not in v.reason and "nothing to vary" in v.reason, v.reason
    monkeypatch.delenv("FAIRSPEC_ENUMERATE_PAIRS")
    (v,) = fairspec.check(tmp_path / "s.fair")
    assert v.status == "holds" and v.how == "proved", v.reason


def test_a_claim_the_branch_and_bound_proves_does_not_wait_for_the_search(tmp_path, monkeypatch):
    """Without `search ... for`, the search took half of the timeout before the branch and bound: with
    `timeout = 600s`, 300 s for a claim the branch and bound proves in a second. A short branch and bound
    (a tenth of the timeout, at most EARLY_BAB_SECONDS) now comes first; the search does not run when it proves
    the claim. (EARLY_BAB_SECONDS raised here so that a loaded machine cannot push the proof past it.)"""
    skio = pytest.importorskip("skops.io")
    from fairspec.kinds import k_discrimination

    monkeypatch.setattr(k_discrimination, "EARLY_BAB_SECONDS", 6000.0)
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    coef, intercept, eps, (op, k), domain, values = BAB[0]
    skio.dump(_model(coef, intercept), tmp_path / "m.skops")
    spec = _spec3(*domain, eps, op, k, values).replace("  timeout = 600s\n  search annealing for 1s\n",
                                                       "  timeout = 60000s\n")
    (tmp_path / "s.fair").write_text(spec)
    v = fairspec.check(tmp_path / "s.fair")["p"]
    assert v.status == "holds" and v.how == "proved" and v.details.get("engine") == "kdisc-bab", (v.status, v.reason)
    assert not any(key.startswith("search_") for key in v.details), v.details
