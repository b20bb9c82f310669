"""A scikit-learn MLP's (or logistic regression's) probability is ``scipy.special.expit`` of its last
pre-activation, an elementwise function of one float: where that pre-activation is exact in every
summation order (fairspec.certify.exact_runtime: dyadic weights), the probability is one float in every
batch, so a pair at a tie (a logit of exactly 0: predict's 1/2; |p - p'| exactly eps) is decided on the
batch's scores. It was left unknown ("another batch size or order may decide it otherwise"): the
sigmoid head kept every point unsure (api-solver 40000027 p0 / p3, 39000019 p0 / p2 / p5). Truth:
brute force over the domain on the object's own predict / predict_proba, compared exactly."""

from __future__ import annotations

import decimal
import warnings
from fractions import Fraction

import numpy as np
import pytest

import fairspec

SPEC = """features F {{
  g : {{a, b}} protected
  x : int in [0, 7]
}}
model m = sklearn("m.skops")
encode F for m {{
  g : code
  x : raw
}}
property p {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  ensure {ensure}
  mode = {mode}
}}
"""
DOMAIN = np.array([[g, x] for g in (0, 1) for x in range(8)], float)


def _mlp(path, shift: float = 0.0, blind: bool = False):
    """logit(class 1) z = x - 3 - relu(10 g - x - 7) / 2 + shift (dyadic): for g = a, z = x - 3; for
    g = b, 1.5 (x - 3) below x = 3; with shift 0 exactly 0 (a probability of exactly 1/2, predict's
    class 0) at x = 3 for both. ``blind``: g's weight 0 (z = x - 3 - relu(-x - 7) / 2 = x - 3)."""
    pytest.importorskip("sklearn")
    skio = pytest.importorskip("skops.io")
    from sklearn.neural_network import MLPClassifier

    X, y = np.array([[0, 0], [1, 7], [0, 3], [1, 5]], float), np.array([0, 1, 0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = MLPClassifier(hidden_layer_sizes=(2,), activation="relu", max_iter=5, random_state=0).fit(X, y)
    m.coefs_ = [np.array([[0.0, 0.0 if blind else 10.0], [1.0, -1.0]]), np.array([[1.0], [-0.5]])]
    m.intercepts_ = [np.array([0.0, -7.0]), np.array([-3.0 + shift])]
    skio.dump(m, path)
    return m


def _check(tmp_path, monkeypatch, ensure, mode, enumerate_pairs):
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", enumerate_pairs)
    (tmp_path / "s.fair").write_text(SPEC.format(ensure=ensure, mode=mode))
    rep = fairspec.check(tmp_path / "s.fair")
    assert not [d for d in rep.diagnostics if d.severity == "error"], rep.diagnostics
    return rep["p"]


def test_the_probabilities_are_one_float_in_every_batch(tmp_path):
    # what the verdicts below rest on, measured: each point alone, the batch reversed and shuffled
    m = _mlp(tmp_path / "m.skops")
    p = m.predict_proba(DOMAIN)[:, 1]
    alone = np.array([m.predict_proba(DOMAIN[i:i + 1])[0, 1] for i in range(len(DOMAIN))])
    order = np.random.default_rng(0).permutation(len(DOMAIN))
    assert np.array_equal(p, alone) and np.array_equal(p, m.predict_proba(DOMAIN[::-1])[::-1, 1])
    assert np.array_equal(p[order], m.predict_proba(DOMAIN[order])[:, 1])
    assert np.count_nonzero(p == 0.5) == 2


@pytest.mark.parametrize("enumerate_pairs", ["0", "1"])
@pytest.mark.parametrize("shift", [0.0, 1.0, 1.25])
@pytest.mark.parametrize("mode", ["prove", "find"])
def test_label_at_a_logit_of_zero(tmp_path, monkeypatch, enumerate_pairs, shift, mode):
    # shift 0: both inputs of x = 3 at z = 0 exactly, p = 1/2, class 0 (holds, at a tie); shift 1:
    # x = 2 at z = 0 for g = a, -1/2 for g = b (holds, at a tie); shift 5/4: x = 2 at z = 1/4 and
    # -1/4 (violated). The truth is predict's
    m = _mlp(tmp_path / "m.skops", shift)
    lab = m.predict(DOMAIN)
    truth = bool(np.all(lab[:8] == lab[8:]))
    v = _check(tmp_path, monkeypatch, "label(m(x)) == label(m(x'))", mode, enumerate_pairs)
    if truth:
        assert v.status == "holds" and v.how == "proved" and v.proof is not None, v.reason
    else:
        assert v.status == "violated", v.reason
        w = m.predict(np.array([v.witness.x, v.witness.x_prime]))
        assert w[0] != w[1]


@pytest.mark.parametrize("enumerate_pairs", ["0", "1"])
@pytest.mark.parametrize("at", ["blind", "zero", "top", "below"])
def test_prob_at_a_tie(tmp_path, monkeypatch, enumerate_pairs, at):
    # blind: g's weight 0, every pair at |p - p'| = 0 exactly, eps 0 (holds, every pair at the tie);
    # zero: eps 0 on the model that reads g (violated); top / below: eps the float of the largest
    # difference (exact: Sterbenz) and the float below it, written as its shortest decimal, which
    # lies within 1e-17 of it (within the runtime's rounding either way); truth exactly as written
    m = _mlp(tmp_path / "m.skops", blind=at == "blind")
    p = m.predict_proba(DOMAIN)[:, 1]
    d = np.abs(p[:8] - p[8:])
    top = float(d.max())
    text = {"blind": "0", "zero": "0", "top": repr(top), "below": repr(float(np.nextafter(top, 0.0)))}[at]
    eps = Fraction(decimal.Decimal(text))
    exact = [abs(Fraction(float(a)) - Fraction(float(b))) for a, b in zip(p[:8], p[8:])]
    truth = all(e <= eps for e in exact)
    assert truth == (at == "blind") or at in ("top", "below")     # top / below: as the decimal falls
    v = _check(tmp_path, monkeypatch, f"|prob(m(x)) - prob(m(x'))| <= {text}", "prove", enumerate_pairs)
    if truth:
        assert v.status == "holds" and v.how == "proved" and v.proof is not None, v.reason
    else:
        assert v.status == "violated", v.reason
        q = m.predict_proba(np.array([v.witness.x, v.witness.x_prime]))[:, 1]
        assert abs(Fraction(float(q[0])) - Fraction(float(q[1]))) > eps


def test_k_discrimination_on_a_bucket_boundary(tmp_path):
    # g has no weight: an individual's counterfactuals share one exact logit; at x = 3 it is 0, p = 1/2
    # on the boundary of eps = 0.5's buckets. Exact in every batch, k = 1 for everyone (by the object's
    # predict_proba): holds, proved (it was unknown: the sigmoid head kept the point unsure)
    m = _mlp(tmp_path / "m.skops", blind=True)
    p = m.predict_proba(DOMAIN)[:, 1]
    assert np.array_equal(p[:8], p[8:]) and 0.5 in p
    (tmp_path / "s.fair").write_text(SPEC.format(ensure="", mode="").split("property")[0] +
                                     "property p {\n  k_discrimination(m, over {g}, eps = 0.5) <= 1\n}\n")
    rep = fairspec.check(tmp_path / "s.fair")
    assert not [d for d in rep.diagnostics if d.severity == "error"], rep.diagnostics
    v = rep["p"]
    assert v.status == "holds" and v.how == "proved", v.reason
