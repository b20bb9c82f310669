"""maximize by enumeration past 4,096 points: the exact maximum is reported as [v, v] only when
certify's exact_runtime shows every point of every admissible pair scored exactly in every order,
which it checked for at most 4,096 points (pair_spread.MAX_EXACT_POINTS); beyond, the value
came with the interval [v, v + 2E] (sound, and labelled an interval, never the exact maximum).
exact_points is now a matrix product (its lowest bits a min-plus product of the weights' and the
inputs' tables) and the limit 65,536 points and 2**25 points times weights, so an 8,192-point
domain of a small dyadic network reports its exact maximum; past the limit the interval stays.
Every maximum is checked against the exact maximum computed in rationals over every pair."""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

SPEC = """features F {
  a : int in [0, 1023]
  b : int in [0, 3]
  s : {F, M}  protected
}
model m = MODEL
encode F for m {
  a : raw
  b : raw
  s : code
}

property mx {
  forall x, x' : F
  require x.* == x'.* except {s}
  ensure |logit(m(x)) - logit(m(x'))| <= EPS
  mode = maximize
}
"""

#: z = relu(0.25 a - 0.5 b + 0.75 s - 3) - relu(1 - 0.125 a): every product and sum exact in float32
DYADIC = [(np.array([[0.25, -0.5, 0.75], [-0.125, 0.0, 0.0]]), np.array([-3.0, 1.0]), True),
          (np.array([[1.0, -1.0]]), np.array([0.0]), False)]


def _z(layers, x) -> Fraction:
    h = [Fraction(float(v)) for v in x]
    for W, b, relu in layers:
        h = [sum((Fraction(float(w)) * v for w, v in zip(row, h)), Fraction(float(c))) for row, c in zip(W, b)]
        h = [max(v, Fraction(0)) for v in h] if relu else h
    return h[0]


def _truth(layers) -> Fraction:
    """max |z(x) - z(x')| over every admissible pair (x, x' differ in s only), in rationals."""
    return max(abs(_z(layers, (a, b, 1)) - _z(layers, (a, b, 0))) for a in range(1024) for b in range(4))


def _onnx(folder: Path, layers) -> str:
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    sys.path.insert(0, str(Path(__file__).parent))
    from onnx_nets import mlp_model

    m = mlp_model(layers, "Identity", "y", batch="N")
    m.ir_version = 8
    onnx.save(m, str(folder / "m.onnx"))
    return 'onnx("m.onnx", output = "y", score = logit)'


def _check(folder: Path, eps: str) -> dict:
    from fairspec.pipeline import check
    from fairspec.report import to_json

    (folder / "spec.fair").write_text(SPEC.replace("MODEL", _onnx(folder, DYADIC)).replace("EPS", eps))
    return json.loads(to_json(check(folder / "spec.fair")))["properties"][0]


def test_8192_points_report_the_exact_maximum(tmp_path):
    """8,192 points (2,048 more than the old limit checked): every one exact, so [0.75, 0.75], the
    maximum in rationals; before, [0.75, 0.7506]."""
    truth = _truth(DYADIC)
    for eps, status in (("0.5", "violated"), ("1.0", "holds")):
        v = _check(tmp_path, eps)
        assert v["details"]["engine"] == "enumeration" and v["details"]["points"] == 8192, v
        assert v["status"] == status, v
        assert Fraction(v["value"]) == truth and [Fraction(x) for x in v["bound"]] == [truth, truth], (v, truth)


@pytest.mark.parametrize("limit", ["MAX_EXACT_POINTS", "MAX_EXACT_WORK"])
def test_past_the_limit_the_value_is_an_interval(tmp_path, monkeypatch, limit):
    """A domain past the limit (simulated: the limit at 4,096 points, or the work at 4,096 points of
    this net's 8 weights) is no longer shown exact: the value is the float maximum, the upper end above
    it by the runtime's spread, the exact maximum inside; the property's verdict is unchanged."""
    import fairspec.kinds.pair_spread as ps

    monkeypatch.setattr(ps, limit, 4096 if limit == "MAX_EXACT_POINTS" else 4096 * 8)
    truth = _truth(DYADIC)
    for eps, status in (("0.5", "violated"), ("1.0", "holds")):
        v = _check(tmp_path, eps)
        lo, hi = (Fraction(x) for x in v["bound"])
        assert v["status"] == status and v["details"]["points"] == 8192, v
        assert Fraction(v["value"]) == lo == truth < hi, (v, truth)


def test_exact_points_against_rationals():
    """exact_points' ok rows: every product and every partial sum of every neuron, in two orders,
    is a float32 number, and its outputs are the network's in rationals (random dyadic and decimal
    networks, integer and fractional inputs; float64 runtimes by the per-product check)."""
    from fairspec.certify.exact_runtime import exact_points

    rng = np.random.default_rng(7)
    seen = {True: 0, False: 0}
    for trial in range(40):
        sizes = [int(rng.integers(1, 5)) for _ in range(int(rng.integers(2, 4)))]
        den = 10.0 if trial % 4 == 0 else 2.0 ** int(rng.integers(0, 10))
        layers = []
        for i in range(len(sizes) - 1):
            W = (rng.integers(-2 ** 12, 2 ** 12, (sizes[i + 1], sizes[i])) / den).astype(np.float32).astype(np.float64)
            b = (rng.integers(-64, 64, sizes[i + 1]) / den).astype(np.float32).astype(np.float64)
            layers.append((W, b, i < len(sizes) - 2))
        X = (rng.integers(-2 ** 14, 2 ** 14, (30, sizes[0])) / 2.0 ** int(rng.integers(0, 4))).astype(np.float32)
        for precision in ("float32", "float64"):
            ok, out = exact_points(layers, X, precision)
            dt = np.float32 if precision == "float32" else np.float64
            for x, good, y in zip(X, ok, out):
                seen[bool(good)] += 1
                if not good:
                    continue
                h = [Fraction(float(v)) for v in x]
                for W, b, relu in layers:
                    nxt = []
                    for row, c in zip(W, b):
                        terms = [Fraction(float(w)) * v for w, v in zip(row, h)] + [Fraction(float(c))]
                        for order in (terms, terms[::-1]):
                            acc = Fraction(0)
                            for t in order:
                                acc += t
                                assert Fraction(float(dt(float(t)))) == t and Fraction(float(dt(float(acc)))) == acc
                        nxt.append(sum(terms, Fraction(0)))
                    h = [max(v, Fraction(0)) for v in nxt] if relu else nxt
                assert [Fraction(float(v)) for v in y] == h
    assert seen[True] and seen[False], seen          # both kinds of rows met


def test_tree_exact_maximum_over_every_tied_pair():
    """kinds.tree_pairs.exact_maximum looked for the exact maximum among the first 4,096 pairs at the
    largest float difference only: with 5,000 pairs at float difference 1.0, the first 4,096 exactly
    1 - 2**-60 and one later 1 + 2**-60, it reported [1 - 2**-53, 1], below the true maximum. Now every
    tied pair counts (TwoSum's exact error term); brute force against rationals on random ties."""
    from fairspec.kinds.tree_pairs import exact_maximum

    def truth(a, b):
        return max(Fraction(float(x)) - Fraction(float(y)) for x, y in zip(a, b))

    a = np.ones(5000)
    b = np.full(5000, 2.0 ** -60)
    b[4500] = -2.0 ** -60
    v, (lo, hi), k = exact_maximum(a, b)
    assert k == 4500 and Fraction(lo) <= truth(a, b) <= Fraction(hi) and lo < hi, (v, lo, hi, k)
    rng = np.random.default_rng(3)
    for _ in range(30):
        n = int(rng.integers(1, 9000))
        a = rng.choice([1.0, 0.5, 3.0], n) + rng.integers(-4, 5, n) * 2.0 ** -int(rng.integers(50, 70))
        b = rng.choice([0.0, 0.5], n) + rng.integers(-4, 5, n) * 2.0 ** -int(rng.integers(50, 70))
        v, (lo, hi), k = exact_maximum(a, b)
        t = truth(a, b)
        assert Fraction(float(a[k])) - Fraction(float(b[k])) == t and Fraction(lo) <= t <= Fraction(hi) and v == float(t)
