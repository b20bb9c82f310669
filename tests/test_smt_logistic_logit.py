"""``logit(m(x))`` of a scikit-learn logistic regression under ``using smt``: its decision_function.

The enumeration and the MILP path read a logistic regression's logit as its ``decision_function``
(models.runtime_layers); the SMT backend's runtime read it as predict_proba's probability and gave up
('a logit post-condition on a model read as probabilities': 3 of the api-solver family's unknowns at
seed 39 x 120). Now its runtime is the decision_function, as for a ``label`` post, and a witness's
scores and maximize's value are that function's. Each verdict is compared with brute force over the
domain on ``decision_function`` (``FAIRSPEC_ENUMERATE_PAIRS=0`` sends the small domain to the solver).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import fairspec

SPEC = """features F {{
  g : {{A, B, C}} protected
  f0 : int in [17, 19]
}}
model m = sklearn("m.skops")
encode F for m {{
  g : code {{A = 0.0, B = 0.5, C = 1.0}}
  f0 : standard(mean = 17, std = 1.0)
}}
property p {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  ensure |logit(m(x)) - logit(m(x'))| <= {eps}
  using smt
  mode = {mode}
}}
"""


def _model():
    from sklearn.linear_model import LogisticRegression

    X = np.array([[0.0, 0.0], [1.0, 1.0], [0.5, 2.0], [0.0, 1.0]])
    est = LogisticRegression().fit(X, [0, 1, 0, 1])
    est.coef_, est.intercept_ = np.array([[-1.75, -0.75]]), np.array([0.25])     # dyadic: exact decisions
    return est


def _brute(est):
    pts = np.array([[g, f - 17.0] for g in (0.0, 0.5, 1.0) for f in (17, 18, 19)])
    z = est.decision_function(pts)
    return max(abs(Fraction(float(z[i])) - Fraction(float(z[j]))) for i in range(9) for j in range(9)
               if pts[i, 1] == pts[j, 1] and pts[i, 0] != pts[j, 0])


@pytest.mark.parametrize("mode", ["prove", "maximize"])
@pytest.mark.parametrize("above", [True, False])
def test_logit_is_the_decision_function(tmp_path, monkeypatch, mode, above):
    pytest.importorskip("sklearn")
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    est = _model()
    top = _brute(est)                   # 1.75: g from A to C
    eps = float(top) * (1.25 if above else 0.5)
    (tmp_path / "s.fair").write_text(SPEC.format(eps=eps, mode=mode))
    v = fairspec.check(tmp_path / "s.fair", models={"m": est})["p"]
    assert v.backend == "smt"
    if above:
        assert v.status == "holds" and v.how == "proved" and v.proof is not None, v.reason
    else:
        assert v.status == "violated", v.reason
        z = est.decision_function(np.array([v.witness.x, v.witness.x_prime]))
        assert abs(Fraction(float(z[0])) - Fraction(float(z[1]))) > Fraction(eps)
        assert tuple(v.witness.outputs) == (float(z[0]), float(z[1]))       # the logits, not probabilities
        if mode == "maximize":
            assert Fraction(v.value) == top and Fraction(v.bound[0]) <= top <= Fraction(v.bound[1])
