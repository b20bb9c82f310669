"""Exact ties on runtimes that compute exactly: certify.exact_runtime.exact_rows / input_grid let
``runtime_error_bound`` be 0 where every product and partial sum of a layer is a multiple of ``2**q``
below ``2**(p + q)`` over the whole box (dyadic weights on integral inputs), and the pair solvers'
ties (a maximum equal to the threshold within solver tolerance) go to certify, whose point leaves are
exact rationals. Against brute force: onnxruntime's float32 scores equal the exact rational scores
wherever E = 0 is claimed (in a batch, alone and permuted); at eps exactly the maximum ``<=`` holds
(proved) and ``<`` is violated with a witness that replays; a runtime that may round is never 0."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

import numpy as np
import pytest

from fairspec.certify.exact_runtime import exact_rows, input_grid
from fairspec.certify.network import InputEncoding, runtime_error_bound


def _dyadic_net(rng, sizes, scale=8):
    layers = []
    for k, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        W = rng.integers(-scale, scale + 1, size=(b, a)) / 4.0
        bias = rng.integers(-scale, scale + 1, size=b) / 4.0
        layers.append((W, bias, k < len(sizes) - 2))
    return layers


def _exact_scores(layers, X):
    out = []
    for x in X:
        h = [Fraction(float(v)) for v in x]
        for W, b, relu in layers:
            h = [sum((Fraction(float(W[j, i])) * h[i] for i in range(len(h))), Fraction(float(b[j])))
                 for j in range(W.shape[0])]
            if relu:
                h = [max(v, Fraction(0)) for v in h]
        out.append(h)
    return out


def test_exact_rows_fits_and_refuses():
    W = np.array([[0.25, -1.5], [0.1, 1.0]])
    ok, g = exact_rows(W, np.array([0.5, 0.0]), np.array([0.0, 0.0]), np.array([10.0, 10.0]), "float32")
    assert ok.tolist() == [True, False] and g[0] == -2 and g[1] == -np.inf   # 0.1 has 27 low bits
    # the same row beyond 2**(24 + q): not exact
    ok, _ = exact_rows(W[:1], np.zeros(1), np.array([0.0, 0.0]), np.array([2.0 ** 23]), "float32")
    assert not ok[0]
    ok, _ = exact_rows(W[:1], np.zeros(1), np.array([0.0, 0.0]), np.array([2.0 ** 23]), "float64")
    assert ok[0]
    # an input with no grid (it may carry rounding) makes every row reading it inexact
    ok, _ = exact_rows(W, np.zeros(2), np.array([-np.inf, 0.0]), np.array([1.0, 1.0]), "float64")
    assert not ok.any()


def test_input_grid_of_encodings():
    lo, hi = np.array([0.0, 17.0, 0.0, 0.0, 3.0]), np.array([5.0, 18.0, 3.0, 1.0, 9.0])
    enc = [InputEncoding("raw"), InputEncoding("minmax", 17.0, 19.0), InputEncoding("codes", 0.5, 1.0),
           InputEncoding("onehot"), InputEncoding("minmax", 0.0, 10.0)]
    g = input_grid(enc, lo, hi, np.ones(5, dtype=bool), "float32")
    assert g.tolist() == [0.0, -1.0, -1.0, 0.0, -np.inf]          # (v - 0) / 10 rounds
    assert np.all(input_grid(enc, lo, hi, np.zeros(5, dtype=bool), "float32") == -np.inf)   # real variables
    assert np.all(input_grid(enc, lo, hi, np.ones(5, dtype=bool), "float16") == -np.inf)
    big = input_grid(None, np.array([0.0]), np.array([2.0 ** 25]), np.ones(1, dtype=bool), "float32")
    assert big[0] == -np.inf                                        # a cast that rounds


@pytest.mark.parametrize("seed", range(6))
def test_zero_error_bound_agrees_with_onnxruntime(tmp_path, seed):
    """E = 0 claimed -> onnxruntime's float32 scores are the exact ones, in every batch and order."""
    pytest.importorskip("onnxruntime")
    import onnx
    import onnxruntime as ort

    from onnx_nets import mlp_model

    rng = np.random.default_rng([7, seed])
    layers = _dyadic_net(rng, [3, 5, 4, 2])
    lo, hi = np.zeros(3), np.array([7.0, 3.0, 1.0])
    integer = np.ones(3, dtype=bool)
    for readout in (("logit", 0), ("margin", 0, 1)):
        assert runtime_error_bound(layers, lo, hi, readout=readout, precision="float32", integer=integer) == 0.0
    X = np.array(list(itertools.product(range(8), range(4), range(2))), dtype=np.float64)
    exact = _exact_scores(layers, X)
    path = tmp_path / "m.onnx"
    onnx.save(mlp_model([(W.astype(np.float32), b.astype(np.float32), r) for W, b, r in layers], batch="N"),
              str(path))
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    perm = rng.permutation(X.shape[0])
    batch = sess.run(None, {name: X.astype(np.float32)})[0]
    permuted = np.empty_like(batch)
    permuted[perm] = sess.run(None, {name: X[perm].astype(np.float32)})[0]
    for i in range(0, X.shape[0], 7):
        alone = sess.run(None, {name: X[i:i + 1].astype(np.float32)})[0][0]
        assert [Fraction(float(v)) for v in alone] == exact[i]
    assert all([Fraction(float(v)) for v in batch[i]] == exact[i] for i in range(X.shape[0]))
    assert np.array_equal(batch, permuted)


def test_rounding_runtimes_keep_their_error_bound():
    rng = np.random.default_rng(3)
    layers = _dyadic_net(rng, [3, 4, 1])
    lo, hi = np.zeros(3), np.array([7.0, 3.0, 1.0])
    assert runtime_error_bound(layers, lo, hi, precision="float32", integer=np.ones(3, dtype=bool)) == 0.0
    # real variables, a weight of many bits, a scaling that rounds, a float16 runtime: E > 0
    assert runtime_error_bound(layers, lo, hi, precision="float32", integer=np.zeros(3, dtype=bool)) > 0
    W0 = layers[0][0].copy()
    W0[0, 0] = float(np.float32(0.1))
    assert runtime_error_bound([(W0,) + layers[0][1:]] + layers[1:], lo, hi, precision="float32",
                               integer=np.ones(3, dtype=bool)) > 0
    enc = [InputEncoding("minmax", 0.0, 10.0), InputEncoding("raw"), InputEncoding("raw")]
    assert runtime_error_bound(layers, lo, hi, encoding=enc, precision="float32", integer=np.ones(3, dtype=bool)) > 0
    assert runtime_error_bound(layers, lo, hi, precision="float16", integer=np.ones(3, dtype=bool)) > 0
    # a probability head: its sigmoid is assumed to round
    assert runtime_error_bound(layers, lo, hi, readout=("prob", 0), precision="float32",
                               integer=np.ones(3, dtype=bool)) > 0


N = 7
SPEC = f"""features F {{
  a : int in [0, {N}]
  b : int in [0, 3]
  s : {{F, M}} protected
}}
model m = onnx("m.onnx", score = logit)
encode F for m {{ a : raw  b : raw  s : onehot }}
"""
PROP = """
property p_@K@ {
  forall x, x' : F
  require x.* == x'.* except {s}
  ensure |logit(m(x)) - logit(m(x'))| @OP@ @EPS@
  using @B@
  mode = @MODE@
  timeout = 20s
}
"""


def _decimal(q: Fraction) -> str:
    from decimal import Decimal, getcontext

    getcontext().prec = 60
    return format(Decimal(q.numerator) / Decimal(q.denominator), "f")


@pytest.mark.parametrize("seed", range(3))
def test_logit_at_an_exact_tie_agrees_with_brute_force(tmp_path, monkeypatch, seed):
    """eps exactly the maximal |z - z'|: `<=` holds (proved, never violated), `<` is violated with a pair
    that replays; the solvers decide (no small-domain enumeration)."""
    pytest.importorskip("onnxruntime")
    import onnx

    from fairspec.pipeline import check
    from fairspec.report import to_json
    from onnx_nets import mlp_model

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    rng = np.random.default_rng([11, seed])
    layers = _dyadic_net(rng, [4, 4, 1])
    onnx.save(mlp_model([(W.astype(np.float32), b.astype(np.float32), r) for W, b, r in layers]),
              str(tmp_path / "m.onnx"))
    P = np.array([(a, b, 1 - s, s) for a in range(N + 1) for b in range(4) for s in (0, 1)], dtype=np.float64)
    z = [v[0] for v in _exact_scores(layers, P)]
    best = max(abs(z[i] - z[i + 1]) for i in range(0, len(z), 2))
    eps = _decimal(best)
    props = "".join(PROP.replace("@K@", f"{k}").replace("@OP@", op).replace("@EPS@", eps).replace("@B@", be)
                    .replace("@MODE@", mode)
                    for k, (op, be, mode) in enumerate([("<=", "milp", "maximize"), ("<=", "milp", "prove"),
                                                        ("<=", "smt", "prove"), ("<", "milp", "prove")]))
    (tmp_path / "spec.fair").write_text(SPEC + props)
    out = json.loads(to_json(check(tmp_path / "spec.fair")))["properties"]
    for v in out[:3]:
        assert v["status"] in ("holds", "unknown"), v
        if v["status"] == "holds":
            assert v["how"] == "proved", v
    assert out[0]["status"] == "holds", out[0]          # the tie decided: maximize at the threshold
    assert out[3]["status"] in ("violated", "unknown"), out[3]
    if out[3]["status"] == "violated":
        w = out[3]["witness"]
        za, zb = (v[0] for v in _exact_scores(layers, np.array([w["x"], w["x_prime"]], dtype=np.float64)))
        assert abs(za - zb) >= best, (w, za, zb, best)
