"""The replay of a witness of ``prob`` on a binary scikit-learn linear classifier declared by its
decision_function (``pair_runtime.library_logistic``) decides on predict_proba's own floats (session 27).

The small-domain enumeration already compared predict_proba exactly (``pair_runtime.library_probability``),
but every replay of a solver's, the refinement's, the estimate's or a data flip's pair decided by the
logistic's bounds of the logits (certify.enumerate.SigmoidCheck, a relative margin of 2**-40): a pair
that IS unfair on predict_proba by less than that margin (a tie at eps with ``<``, a difference of 2**-50
at eps 0, saturated logits |z| >= 30) never replayed, so the solver path said ``unknown`` where the truth
is ``violated``. Now ``pair_runtime.runtime_violates`` takes the pair's probabilities (read in the batch
its logits come from) and compares them exactly with the spec's ``<`` / ``<=``; the bounds decide only
where predict_proba is not read. The smt backend's judge (``backends.smt.exact``, ``Runtime.prob``) takes a
pair predict_proba breaks as a violation too; the pairs it excludes as fair stay the bounds' (its proof
re-checks them so). Every verdict here is checked against brute force on predict_proba over
the whole domain; the models are LogisticRegressions with dyadic coefficients set by hand, where a tie is
exact (expit(2**-21) is 0.5 + 2**-23 exactly, a difference a spec can write as 1.1920928955078125e-07).
"""

from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest

import fairspec
from conftest import hand_set_logistic

TIE = "1.1920928955078125e-07"          # 2**-23: predict_proba(z = 2**-21) - predict_proba(z = 0), exactly


_model = hand_set_logistic     # a LogisticRegression on (g, x), coefficients set by hand


def _spec(lo, hi, op, eps, using):
    return f"""features F {{
  g : {{a, b}} protected
  x : int in [{lo}, {hi}]
}}
model m = sklearn("m.skops", output = "decision_function")
encode F for m {{
  g : code
  x : raw
}}
property p {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  ensure |prob(m(x)) - prob(m(x'))| {op} {eps}
  {using}
}}
"""


def _largest(est, lo, hi) -> Fraction:
    """The largest |predict_proba(x)[1] - predict_proba(x')[1]| over the domain's pairs, exactly (the two
    probabilities of a pair lie within a factor 2 of each other here: their float difference is exact)."""
    xs = np.arange(lo, hi + 1, dtype=np.float64)
    P = [est.predict_proba(np.column_stack([np.full_like(xs, g), xs]))[:, 1] for g in (0.0, 1.0)]
    d = np.abs(P[0] - P[1])
    k = int(np.argmax(d))
    assert Fraction(float(d[k])) == abs(Fraction(float(P[0][k])) - Fraction(float(P[1][k])))
    return Fraction(float(d[k]))


def _breaks(est, w, op, eps) -> bool:
    q = est.predict_proba(np.array([w.x, w.x_prime], dtype=np.float64))[:, 1]
    d = abs(Fraction(float(q[0])) - Fraction(float(q[1])))
    return not (d <= Fraction(eps) if op == "<=" else d < Fraction(eps))


# (coef of g, coef of x), intercept, eps, op: a tie (`<` broken, `<=` kept), a difference of 2**-50 at eps 0,
# saturated logits (z = 30 + 0.125 x and z + 0.5: predict_proba 3.7e-14 apart, the bounds' margin 9e-13)
CASES = [((2.0 ** -21, 0.25), 0.0, TIE, "<"), ((2.0 ** -21, 0.25), 0.0, TIE, "<="),
         ((2.0 ** -48, 0.25), 0.0, "0", "<="), ((0.5, 0.125), 30.0, "1e-14", "<="), ((0.5, 0.125), 30.0, "0", "<=")]
# the solver path on a small domain (enumeration off): milp, its partitions with the refinement, smt; and a
# domain beyond the enumeration's limit (4.4 million points)
PATHS = [(-8, 8, True, ""), (-8, 8, True, "partitions = 2\n  refine = 60s"), (-8, 8, True, "using smt"),
         (-1_100_000, 1_100_000, False, "")]


@pytest.mark.parametrize("coef, intercept, eps, op", CASES)
@pytest.mark.parametrize("lo, hi, solver_path, using", PATHS)
def test_solver_path_verdicts_against_predict_proba(tmp_path, monkeypatch, coef, intercept, eps, op, lo, hi,
                                                    solver_path, using):
    skio = pytest.importorskip("skops.io")
    est = _model(coef, intercept)
    skio.dump(est, tmp_path / "m.skops")
    if solver_path:
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    else:
        monkeypatch.delenv("FAIRSPEC_ENUMERATE_PAIRS", raising=False)
    (tmp_path / "s.fair").write_text(_spec(lo, hi, op, eps, using))
    rep = fairspec.check(tmp_path / "s.fair")
    assert not [d for d in rep.diagnostics if d.severity == "error"], rep.diagnostics
    v = rep["p"]
    D = _largest(est, lo, hi)
    truth = D <= Fraction(eps) if op == "<=" else D < Fraction(eps)
    assert "internal error" not in (v.reason or ""), v.reason
    if v.status == "holds":
        assert truth and v.how == "proved" and v.proof is not None, v.reason
    if v.status == "violated":
        assert not truth and v.witness is not None and _breaks(est, v.witness, op, eps), v.reason
    # decided wherever predict_proba decides it: unknown before (the witness never replayed on the bounds),
    # but for the 2**-50 difference on the large domain, where the certified bab's candidate pair is not
    # the one predict_proba breaks (the runtime's error bound there, 2.3e-11, is far above 2**-50), and the
    # smt backend's holds at the tie (its proof excludes a fair pair only on the logistic's bounds)
    if not (lo < -8 and eps == "0" and coef[0] < 2.0 ** -40) and not (truth and "smt" in using):
        assert v.status == ("holds" if truth else "violated"), (v.status, v.reason)


def _loaded(tmp_path, est):
    from fairspec.models.sklearn_model import load_sklearn

    skio = pytest.importorskip("skops.io")
    skio.dump(est, tmp_path / "m.skops")
    return load_sklearn(tmp_path / "m.skops", output="decision_function")


def test_runtime_violates_compares_predict_proba_exactly(tmp_path):
    """A pair at the tie: on predict_proba ``< 2**-23`` is broken and ``<= 2**-23`` kept, in either order;
    the logistic's bounds alone (no probabilities given) decide neither."""
    from fairspec.kinds.pair_runtime import pair_probabilities, runtime_violates

    est = _model((2.0 ** -21, 0.25), 0.0)
    model = _loaded(tmp_path, est)
    X2 = np.array([[0.0, 0.0], [1.0, 0.0]])
    s = np.asarray(model.score(X2), dtype=np.float64)
    pa, pb = pair_probabilities(SimpleNamespace(post="prob"), model, X2)
    assert Fraction(float(pb[0])) - Fraction(float(pa[0])) == Fraction(TIE)
    for strict, broken in ((True, True), (False, False)):
        prop = SimpleNamespace(post="prob", eps=TIE, eps_strict=strict, cls=None)
        assert bool(runtime_violates(prop, model, s[:1], s[1:], pa, pb)[0]) is broken
        assert bool(runtime_violates(prop, model, s[1:], s[:1], pb, pa)[0]) is broken
        assert not runtime_violates(prop, model, s[:1], s[1:])[0]          # the bounds: undecided
    # a NaN probability is not read: the bounds decide that pair (not broken)
    prop = SimpleNamespace(post="prob", eps=TIE, eps_strict=True, cls=None)
    assert not runtime_violates(prop, model, s[:1], s[1:], np.array([np.nan]), pb)[0]


def test_a_data_flip_and_a_reproduced_pair_replay_on_predict_proba(tmp_path):
    """flip_replays (a data flip's witness) and reproduces (alone, as a pair, reversed) decide the tie on
    predict_proba: z = 0 and 2**-21 break ``< 2**-23``, not ``<= 2**-23``."""
    from fairspec.kinds.pair_fragile import reproduces
    from fairspec.kinds.pair_replay import flip_replays

    model = _loaded(tmp_path, _model((2.0 ** -21, 0.25), 0.0))
    X2 = np.array([[0.0, 0.0], [1.0, 0.0]])
    flip = SimpleNamespace(witness=SimpleNamespace(x=tuple(X2[0]), x_prime=tuple(X2[1])))
    for strict in (True, False):
        prop = SimpleNamespace(post="prob", eps=TIE, eps_strict=strict, cls=None)
        assert flip_replays(prop, model, flip, False) is strict
        assert reproduces(prop, model, X2) == ([0] if strict else [])


def test_prob_cut_at_an_underflowed_sigmoid_is_none():
    """eps 0 at a logit whose sigmoid underflows to 0 (z = -137500 on the large domain above): no tangent
    (g is undefined there), not a ZeroDivisionError (an internal error of the milp backend before)."""
    from fairspec.backends.pair.problem import prob_cut

    assert prob_cut(-137500.0, 0.0) is None and prob_cut(-800.0, 0.0) is None
    assert prob_cut(0.0, 0.0) is not None and prob_cut(-800.0, 0.125) is not None
