"""Pair ties on runtimes that compute exactly, three more ways (session 25):

* **a shared offset cancels in z - z'**: ``runtime_error_bound(difference=True)`` leaves out the proof
  network's constant offset from the runtime's exact output row (a bias folded in float64 from a minmax
  encoding's offset), the same number in both copies; each score's own rounding and anything behind a
  ReLU stay in E;
* **partial sums of both signs**: ``exact_rows`` reads :func:`partial_sums_bound`, ``max(sum p, sum n)``
  over the box, not the sum of magnitudes: a large intercept against large products (a scikit-learn
  logistic regression, network-sklearn-solver 46000010 p5) is exact;
* **point differences** in the pair nodes (``certify.pairlp.nodes``): a row whose every term has one exact
  difference between the copies is that exact number, so a plateau of tied pairs closes at the root;
* **prob at eps 0 by equal logits** (``certify.network.equal_logits_readout``): the runtime's logits equal
  as floats and its probability one fixed function of that float (the real logistic of a logit readout;
  scipy's expit of a scikit-learn model) give ``|p - p'| = 0`` exactly.

Verdicts against brute force on the object's own decision_function / predict_proba, the solver path
(``FAIRSPEC_ENUMERATE_PAIRS=0``, a domain too large for the refinement's fallback): ``<=`` at the largest
difference holds (proved), ``<`` is violated with a pair that replays.
"""

from __future__ import annotations

import itertools
import warnings
from fractions import Fraction

import numpy as np
import pytest

import fairspec
from fairspec.certify.exact_runtime import exact_rows, partial_sums_bound
from fairspec.certify.network import InputEncoding, equal_logits_readout, runtime_error_bound


# ------------------------------------------------------------------------------------------------
# certify's bounds, by brute force
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(5))
def test_partial_sums_bound_covers_every_subset_sum(seed):
    rng = np.random.default_rng([25, seed])
    W = rng.integers(-8, 9, size=(3, 4)) / 4.0
    b = rng.integers(-40, 41, size=3) / 2.0
    lo = rng.integers(-5, 3, size=4).astype(float)
    hi = lo + rng.integers(0, 6, size=4)
    B = partial_sums_bound(W, b, lo, hi)
    S = np.abs(W) @ np.maximum(np.abs(lo), np.abs(hi)) + np.abs(b)
    assert np.all(B <= S * (1 + 2.0 ** -40))                          # never looser than the magnitudes
    for h in itertools.product(*[range(int(a), int(c) + 1) for a, c in zip(lo, hi)]):
        for j in range(3):
            terms = [Fraction(float(W[j, i])) * h[i] for i in range(4)] + [Fraction(float(b[j]))]
            for r in range(1, 6):
                for sub in itertools.combinations(terms, r):
                    assert abs(sum(sub)) <= Fraction(float(B[j]))


def test_a_large_intercept_against_large_products_is_exact():
    # z = 1.75 g + 1.75 f - 38.50000000000001 (g in 0..2, f in 17..20): the intercept's lowest bit is 2**-47,
    # so partial sums must stay below 2**6; the magnitudes sum to 77, but no partial sum exceeds 38.5
    W, b = np.array([[1.75, 1.75]]), np.array([-38.50000000000001])
    lo, hi = np.array([0.0, 17.0]), np.array([2.0, 20.0])
    mag = np.abs(W) @ np.maximum(np.abs(lo), np.abs(hi)) + np.abs(b)
    assert not exact_rows(W, b, np.zeros(2), mag, "float64")[0][0]
    assert exact_rows(W, b, np.zeros(2), partial_sums_bound(W, b, lo, hi), "float64")[0][0]
    assert runtime_error_bound([(W, b, False)], lo, hi, precision="float64", integer=np.ones(2, dtype=bool)) == 0.0
    X = np.array([[g, f] for g in range(3) for f in range(17, 21)], dtype=np.float64)
    for order in (X, X[::-1], X[[5, 0, 11, 3, 7, 1, 9, 2, 10, 4, 8, 6]]):
        z = order @ W[0] + b[0]
        assert all(Fraction(float(v)) == sum(Fraction(float(W[0, i])) * Fraction(float(x[i])) for i in range(2))
                   + Fraction(float(b[0])) for v, x in zip(z, order))


def _shifted(layers, k, delta):
    out = [(W.copy(), b.copy(), r) for W, b, r in layers]
    out[k][1][0] += delta
    return out


def test_difference_bound_drops_only_the_output_rows_offset():
    one = [(np.array([[0.75, -1.25]]), np.array([0.5]), False)]
    two = [(np.array([[1.0, -0.5], [0.25, 1.0]]), np.array([0.5, -1.0]), True),
           (np.array([[1.5, -0.75]]), np.array([0.25]), False)]
    lo, hi, ints = np.zeros(2), np.array([3.0, 5.0]), np.ones(2, dtype=bool)
    d = 2.0 ** -40
    for net, k in ((one, 0), (two, 1)):
        proof = _shifted(net, k, d)
        assert runtime_error_bound(net, lo, hi, proof_net=proof, precision="float64", integer=ints) >= d
        assert runtime_error_bound(net, lo, hi, proof_net=proof, precision="float64", integer=ints,
                                   difference=True) == 0.0
        # brute force: the difference of every two points is the proof's exactly
        pts = list(itertools.product(range(4), range(6)))
        z = [_exact(net, p) for p in pts]
        zp = [_exact(proof, p) for p in pts]
        assert all(z[i] - z[j] == zp[i] - zp[j] for i in range(len(pts)) for j in range(len(pts)))
    # behind a ReLU an offset is no offset of the output; a rounding runtime keeps its rounding
    assert runtime_error_bound(two, lo, hi, proof_net=_shifted(two, 0, d), precision="float64", integer=ints,
                               difference=True) > 0
    assert runtime_error_bound(one, lo, hi, proof_net=_shifted(one, 0, d), precision="float64",
                               integer=np.zeros(2, dtype=bool), difference=True) > 0
    with pytest.raises(ValueError):
        runtime_error_bound(one, lo, hi, readout=("prob", 0), precision="float64", difference=True)


def _exact(layers, x):
    h = [Fraction(v) for v in x]
    for W, b, relu in layers:
        h = [sum((Fraction(float(W[j, i])) * h[i] for i in range(len(h))), Fraction(float(b[j])))
             for j in range(W.shape[0])]
        h = [max(v, Fraction(0)) for v in h] if relu else h
    return h[0]


def test_equal_logits_readout_only_where_it_follows():
    net = [(np.array([[0.0, 1.0]]), np.array([-3.0]), False)]
    lo, hi = np.zeros(2), np.array([1.0, 7.0])
    kw = dict(precision="float64", integer=np.ones(2, dtype=bool))
    assert equal_logits_readout(net, lo, hi, post="prob", eps="0", eps_strict=False, readout=("logit", 0),
                                **kw) == ("logit", 0)
    assert equal_logits_readout(net, lo, hi, post="prob", eps="0.0", eps_strict=False, readout=("prob", 0),
                                fixed_head=True, **kw) == ("logit", 0)
    # a vectorised logistic (torch, onnxruntime): not a fixed function of one float
    assert equal_logits_readout(net, lo, hi, post="prob", eps="0", eps_strict=False, readout=("prob", 0), **kw) is None
    for post, eps, strict in (("prob", "0.25", False), ("logit", "0", False), ("prob", "0", True)):
        assert equal_logits_readout(net, lo, hi, post=post, eps=eps, eps_strict=strict, readout=("logit", 0),
                                    **kw) is None
    # a runtime that may round: no
    assert equal_logits_readout(net, lo, hi, post="prob", eps="0", eps_strict=False, readout=("logit", 0),
                                precision="float64", integer=np.zeros(2, dtype=bool)) is None
    assert equal_logits_readout(net, lo, hi, post="prob", eps="0", eps_strict=False, readout=("logit", 0),
                                encoding=[InputEncoding("raw"), InputEncoding("minmax", 0.0, 10.0)], **kw) is None


# ------------------------------------------------------------------------------------------------
# end to end, against brute force
# ------------------------------------------------------------------------------------------------

A, SPAN = 2 ** 30, 2 ** 20          # minmax over [A, A + SPAN]: exact on the runtime; the fold of A / SPAN
# into the proof's bias rounds in float64 (a constant offset of ~1e-15 the per-copy bound counted)
LOGISTIC = f"""features F {{
  g : {{A, B, C}} protected
  w : int in [{A}, {A + SPAN}]
}}
model m = sklearn("m.skops")
encode F for m {{
  g : code
  w : minmax(lo = {A}, hi = {A + SPAN})
}}
"""
PROP = """property p{k} {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  ensure |{post}(m(x)) - {post}(m(x'))| {op} {eps}
  {using}
  mode = {mode}
}}
"""
CASES = [("<=", "using milp", "prove"), ("<=", "using smt", "prove"), ("<=", "", "maximize"), ("<", "", "find")]


def _spec(tmp_path, head, post, eps, cases=CASES):
    props = "".join(PROP.format(k=k, post=post, op=op, eps=eps, using=u, mode=m) for k, (op, u, m) in enumerate(cases))
    (tmp_path / "s.fair").write_text(head + props)
    rep = fairspec.check(tmp_path / "s.fair")
    assert not [d for d in rep.diagnostics if d.severity == "error"], rep.diagnostics
    return [rep[f"p{k}"] for k in range(len(cases))]


def _decide(out, truth_le: bool, truth_lt: bool, replay_diff, eps: Fraction):
    for v, (op, _, _) in zip(out, CASES):
        truth = truth_le if op == "<=" else truth_lt
        if truth:
            assert v.status == "holds" and v.how == "proved" and v.proof is not None, v.reason
            assert v.proof.method in ("bab-certificate", "exact-smt"), v.proof.method   # not the refinement's
        else:
            assert v.status == "violated", v.reason
            d = replay_diff(v.witness.x, v.witness.x_prime)
            assert (d > eps) if op == "<=" else (d >= eps), (d, eps)


@pytest.mark.parametrize("coef, intercept", [((0.75, -1.25), 1 + 2.0 ** -49), ((-0.5, 2.5), -3 - 2.0 ** -48)])
def test_logit_tie_with_a_folded_offset(tmp_path, monkeypatch, coef, intercept):
    pytest.importorskip("sklearn")
    skio = pytest.importorskip("skops.io")
    from sklearn.linear_model import LogisticRegression

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    est = LogisticRegression().fit(np.array([[0.0, 0.0], [1.0, 1.0], [0.5, 0.2], [0.0, 1.0]]), [0, 1, 0, 1])
    est.coef_, est.intercept_ = np.array([coef]), np.array([intercept])
    skio.dump(est, tmp_path / "m.skops")
    # brute force on decision_function: every w, every two codes (x = (w - A) / SPAN exactly)
    x = (np.arange(SPAN + 1, dtype=np.float64)) / SPAN
    z = [est.decision_function(np.column_stack([np.full_like(x, g), x])) for g in range(3)]
    top = max(Fraction(float(np.max(np.abs(z[a] - z[c])))) for a in range(3) for c in range(3))
    assert top == 2 * abs(Fraction(coef[0]))                  # the runtime's differences, exact on this grid
    eps = top

    def diff(xa, xb):
        s = est.decision_function(np.array([[xa[0], (xa[1] - A) / SPAN], [xb[0], (xb[1] - A) / SPAN]]))
        return abs(Fraction(float(s[0])) - Fraction(float(s[1])))

    out = _spec(tmp_path, LOGISTIC, "logit", str(float(eps)))
    _decide(out, True, False, diff, eps)


MLP = """features F {
  g : {a, b} protected
  x : int in [0, 200000]
}
model m = sklearn("m.skops")
encode F for m {
  g : code
  x : raw
}
"""


@pytest.mark.parametrize("blind", [True, False])
def test_prob_at_eps_0_by_equal_logits(tmp_path, monkeypatch, blind):
    """An MLP whose probability is scipy's expit of an exact logit: blind to g (every pair's logits equal):
    ``<= 0`` holds (proved); reading g: violated with a pair whose predict_proba differ."""
    pytest.importorskip("sklearn")
    skio = pytest.importorskip("skops.io")
    from sklearn.neural_network import MLPClassifier

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = MLPClassifier(hidden_layer_sizes=(2,), activation="relu", max_iter=5, random_state=0).fit(
            np.array([[0, 0], [1, 7], [0, 3], [1, 5]], float), [0, 1, 0, 1])
    m.coefs_ = [np.array([[0.0, 0.0 if blind else 10.0], [1.0, -1.0]]), np.array([[1.0], [-0.5]])]
    m.intercepts_ = [np.array([0.0, -7.0]), np.array([-3.0])]
    skio.dump(m, tmp_path / "m.skops")
    xs = np.arange(200001, dtype=np.float64)
    p = [m.predict_proba(np.column_stack([np.full_like(xs, g), xs]))[:, 1] for g in (0, 1)]
    truth = bool(np.array_equal(p[0], p[1]))
    assert truth == blind

    def diff(xa, xb):
        q = m.predict_proba(np.array([xa, xb], dtype=np.float64))[:, 1]
        return abs(Fraction(float(q[0])) - Fraction(float(q[1])))

    out = _spec(tmp_path, MLP, "prob", "0", CASES[:3])         # `< 0` is met by no pair (FS507)
    _decide(out, truth, False, diff, Fraction(0))
