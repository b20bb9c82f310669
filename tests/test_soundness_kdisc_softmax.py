"""The soundness harness's k-discrimination truth of ``prob(m(x), c)`` on a logit network (session 34): the REAL
softmax of the runtime's logits (tests/differential/softmax_real.py, mpmath intervals), bucketed exactly -- not the
float64 softmax, which rounds 0.5 - 7e-88 up to the bucket boundary 0.5. Pure functions: no fairspec check runs."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from differential import multiclass, softmax_real
from differential.core import Feature
from differential.tree_outputs import _kdisc_prop


def test_real_softmax_buckets():
    # p_0 of (0, 0, -200) is 1 / (2 + e**-200): below 0.5, the float64 softmax says 0.5 exactly
    row = np.array([0.0, 0.0, -200.0])
    assert multiclass._probabilities(row[None, :], "logit2")[0, 0] == 0.5
    assert softmax_real.bucket(row, 0, Fraction(1, 2)) == 0
    assert softmax_real.enclose(row, 0, 200)[1] == Fraction(1, 2)      # e**-200 is below 200 bits: refined
    lo, hi = softmax_real.enclose(row, 0, 800)
    assert lo <= hi < Fraction(1, 2)
    # logits 1000 apart: e**-1000 needs more than 800 bits
    assert softmax_real.bucket([0.0, 0.0, -1000.0], 0, Fraction(1, 2)) == 0
    # every logit equal: p = 1/4 exactly, on the boundary of eps = 0.25 (the bucket above it), and of 0.5 (below)
    assert softmax_real.bucket([1.5] * 4, 2, Fraction(1, 4)) == 1
    assert softmax_real.bucket([1.5] * 4, 2, Fraction(1, 2)) == 0
    # p = 1 (the last bucket is closed) and p near 0
    assert softmax_real.bucket([0.0, -2000.0, -2000.0], 0, Fraction(1, 10)) == 9
    assert softmax_real.bucket([0.0, 50.0, 50.0], 0, Fraction(1, 10)) == 0
    # e / (e + 2) = 0.5761...
    assert softmax_real.bucket([1.0, 0.0, 0.0], 0, Fraction(1, 5)) == 2


class _Draws:
    """A stand-in for the generator's random stream: the draws _kdisc_prop makes, in order."""

    def __init__(self, random, integers):
        self._r, self._i = list(random), list(integers)

    def random(self):
        return self._r.pop(0)

    def integers(self, lo, hi=None):
        return self._i.pop(0)

    def choice(self, options):
        return "0.5"


def test_kdisc_truth_buckets_the_real_softmax_of_logits():
    fs = [Feature("s", "bool", protected=True)]
    P = np.array([[0], [1]])
    Y = np.array([[0.0, 0.0, -200.0],      # p_0 = 0.5 - 7e-88: bucket 0 (float64: 0.5, bucket 1)
                  [1.0, 0.0, 0.0]])        # p_0 = 0.576: bucket 1
    Pr = multiclass._probabilities(Y, "logit2")
    k = np.argmax(Y, axis=1)
    # class_prob (0.7 >= 0.6), class 0, eps 0.5, op '<=' (0.2 < 0.5), claim = float64 max k 1 + 0
    args = (fs, P, P.astype(float), [0], k, Pr, 2, "onnx")
    float_prop = _kdisc_prop(_Draws([0.7, 0.2], [0, 0]), "p0", "multiclass", *args)
    real_prop = _kdisc_prop(_Draws([0.7, 0.2], [0, 0]), "p0", "multiclass", *args, logits=Y)
    # the spec is the same (the claim is drawn around the float64 max k); the truth is the real softmax's
    assert real_prop.text == float_prop.text
    assert "class = 0, eps = 0.5) <= 1" in real_prop.text
    assert float_prop.truth.status == "holds"
    assert real_prop.truth.status == "violated"
    w = {"features": {"s": False}, "features_prime": {"s": True}}
    assert real_prop.truth.check_witness(w) is None


def test_kdisc_truth_of_a_softmax_head_is_its_columns():
    fs = [Feature("s", "bool", protected=True)]
    P = np.array([[0], [1]])
    Pr = np.array([[0.5, 0.25, 0.25], [0.6, 0.2, 0.2]])
    args = (fs, P, P.astype(float), [0], np.argmax(Pr, axis=1), Pr, 2, "onnx")
    prop = _kdisc_prop(_Draws([0.7, 0.2], [0, 0]), "p0", "multiclass", *args)
    assert prop.truth.status == "holds" and prop.truth.value == 1.0


def test_prob_truth_of_logits_is_the_real_softmax():
    """multiclass-111000004-p7: the float64 softmax put the largest |p_0 - p_0'| one ulp below the real one
    (0.5060915466739162; real 0.506091546673916316...), so fairspec's value, the float at or below the real
    maximum (0.5060915466739163), was judged 'above the true maximum'. The truth is now the real softmax's."""
    from differential.networks import PairSpec

    fs = [Feature("g", "bool", protected=True)]
    P = np.array([[0], [1]])
    Y = np.array([[1.5, 0.0, 0.0], [2.59375, 1.4375, 4.0]])
    Pr = multiclass._probabilities(Y, "logit2")
    ps = PairSpec((0,), (), ())
    assert float(multiclass._diff_truth(Pr[:, 0], P, ps, "<", "0.625")[1][0]) == 0.5060915466739162
    status, top, slack, check = multiclass._real_softmax_truth(fs, P, ps, Y, Pr, [0], "<", "0.625", [], "holds")
    assert status == "holds" and float(top) == 0.5060915466739163 and 0 <= slack < Fraction(1, 2 ** 150)
    assert Fraction(0.5060915466739163) <= top
    # eps between the float64 and the real maximum: violated on the real softmax, with its witness accepted
    eps = "0.50609154667391625"
    assert Fraction(0.5060915466739162) < Fraction(eps) < top
    status, _, _, check = multiclass._real_softmax_truth(fs, P, ps, Y, Pr, [0], "<=", eps, [], "holds")
    assert status == "violated"
    assert check({"features": {"g": False}, "features_prime": {"g": True}}) is None
    status, _, _, check = multiclass._real_softmax_truth(fs, P, ps, Y, Pr, [0], "<=", "0.6", [], "holds")
    assert status == "holds" and check({"features": {"g": False}, "features_prime": {"g": True}}) is not None
