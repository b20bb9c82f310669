"""A chain of linear layers with no activation between (a scikit-learn MLP with ``activation="identity"``,
a torch ``Linear`` after ``Linear``) is certified as its runtime computes it: one rounding per product
(``LoadedModel.runtime_chain``), and the solvers' folded layer compared with the chain's composite
exactly (``fairspec/certify/chains.py``). Before, the folded layer was refused as not the runtime's own
numbers ("several roundings") and every ``holds`` stayed unknown.

* the runtime error bound holds on the real runtime (torch float32) at sampled points of the box, against
  the folded network in exact rationals, and grows with a proof layer that is not the chain's fold;
* end to end, on small dyadic models (MLPClassifier and MLPRegressor with identity units, torch chains
  with and without a ReLU between), the verdicts agree with brute force on the library's own outputs:
  ``holds (proved)`` where no pair breaks the property, ``violated`` with a replayed witness where one
  does. Every domain goes to the solvers (``FAIRSPEC_ENUMERATE_PAIRS=0``)."""

from __future__ import annotations

import itertools
import json
import warnings
from fractions import Fraction

import numpy as np
import pytest

HEAD = """features F {
  a : int in [0, 3]
  b : int in [0, 3]
  s : {F, M} protected
}
model m = MODEL
encode F for m { a : raw  b : raw  s : onehot }
"""

PROP = """
property @NAME@ {
  forall x, x' : F
  require x.* == x'.* except {s}
  ensure @ENSURE@
  mode = prove
  timeout = 600s
}
"""


def _grid():
    return np.array([[a, b, s == "F", s == "M"] for a, b, s in itertools.product(range(4), range(4), ("F", "M"))],
                    dtype=np.float64)


def _pairs():
    X = _grid()
    return [(i, j) for i, j in itertools.permutations(range(len(X)), 2) if np.array_equal(X[i, :2], X[j, :2])]


def _check(folder, model, props) -> dict:
    from fairspec.pipeline import check
    from fairspec.report import to_json

    text = HEAD.replace("MODEL", model)
    for name, ensure in props:
        text += PROP.replace("@NAME@", name).replace("@ENSURE@", ensure)
    p = folder / "spec.fair"
    p.write_text(text)
    return {v["name"]: v for v in json.loads(to_json(check(p)))["properties"]}


def _dyadic(rng, shape, zeros=0.25):
    W = rng.integers(-4, 5, shape) / 4.0
    W[rng.random(shape) < zeros] = 0.0
    return W


def _gap_props(top):
    """|score(x) - score(x')| at, below and above the brute-force maximum ``top``."""
    top = float(top)
    return [("below", f"|SCORE(m(x)) - SCORE(m(x'))| <= {top - 0.125!r}"),
            ("lt_at", f"|SCORE(m(x)) - SCORE(m(x'))| < {top!r}"),
            ("above", f"|SCORE(m(x)) - SCORE(m(x'))| <= {top + 0.25!r}")]


def _assert_gaps(v, top):
    assert v["below"]["status"] == "violated", v["below"]
    assert v["lt_at"]["status"] == "violated", v["lt_at"]
    assert v["above"]["status"] == "holds" and v["above"]["how"] == "proved", v["above"]
    for name in ("below", "lt_at"):
        assert abs(abs(v[name]["witness"]["outputs"][0] - v[name]["witness"]["outputs"][1])) >= top - 0.125


# ------------------------------------------------------------------ the bound itself

def _torch_chain(rng, widths, relu_after=()):
    torch = pytest.importorskip("torch")
    mods = []
    for k in range(len(widths) - 1):
        lin = torch.nn.Linear(widths[k], widths[k + 1])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(rng.normal(size=(widths[k + 1], widths[k])).astype(np.float32)))
            lin.bias.copy_(torch.from_numpy(rng.normal(size=widths[k + 1]).astype(np.float32)))
        mods.append(lin)
        if k in relu_after:
            mods.append(torch.nn.ReLU())
    return torch.nn.Sequential(*mods).eval()


def _exact(layers, x):
    h = [Fraction(float(v)) for v in x]
    for W, b, relu in layers:
        h = [sum((Fraction(float(w)) * v for w, v in zip(row, h)), Fraction(float(c))) for row, c in zip(W, b)]
        if relu:
            h = [max(v, Fraction(0)) for v in h]
    return h[0]


@pytest.mark.parametrize("widths,relu_after", [((5, 7, 4, 1), ()), ((5, 6, 3, 4, 2, 1), (1,))])
def test_the_error_bound_of_a_chain_holds_on_torch(widths, relu_after):
    torch = pytest.importorskip("torch")
    from fairspec.certify.network import as_layers, runtime_error_bound
    from fairspec.models.network_torch import from_torch

    rng = np.random.default_rng(3)
    seq = _torch_chain(rng, widths, relu_after)
    folded, chain = from_torch(seq), from_torch(seq, readout="chain")
    assert len(chain.layers) == len(widths) - 1 and len(folded.layers) == len(relu_after) + 1
    lo, hi = -np.full(widths[0], 4.0), np.full(widths[0], 4.0)
    with pytest.raises(ValueError):           # the folded weights are not float32: no bound on them
        runtime_error_bound(folded, lo, hi, precision="float32")
    E = runtime_error_bound(chain, lo, hi, proof_net=folded, precision="float32")
    assert 0 < E < 1e-2
    X = rng.uniform(-4, 4, size=(300, widths[0])).astype(np.float32)
    with torch.no_grad():
        for rows in (X, X[:1]):
            y = seq(torch.from_numpy(rows)).double().numpy()[:, 0]
            for x, yv in zip(rows[:60], y[:60]):
                assert abs(Fraction(float(yv)) - _exact(as_layers(folded), x)) <= Fraction(E)
    # a proof layer that is not the chain's fold: the exact comparison sees it
    bad = [(W, b, r) for W, b, r in as_layers(folded)]
    bad[0] = (bad[0][0] + 0.01, bad[0][1], bad[0][2])
    assert runtime_error_bound(chain, lo, hi, proof_net=bad, precision="float32") > E + 1e-3


def test_the_error_bound_of_an_identity_mlp_holds_on_predict():
    """scikit-learn's predict (float64) of an identity MLPRegressor with random weights, at sampled points,
    against the folded network in exact rationals, through the readout runtime_layers takes."""
    from sklearn.neural_network import MLPRegressor

    from fairspec.certify.network import as_layers, runtime_error_bound
    from fairspec.models.runtime_layers import _read_out
    from fairspec.models.network_sklearn import from_sklearn

    rng = np.random.default_rng(7)
    X = rng.uniform(-3, 3, size=(200, 5))
    est = MLPRegressor(hidden_layer_sizes=(6, 4), activation="identity", max_iter=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, X @ rng.normal(size=(5, 2)))
    est.coefs_ = [rng.normal(size=W.shape) for W in est.coefs_]
    est.intercepts_ = [rng.normal(size=b.shape) for b in est.intercepts_]
    chain = from_sklearn(est, readout="chain")
    for col in (0, 1):
        folded = from_sklearn(est, index=col)
        layers = _read_out(chain, folded, (col, 1.0))
        assert len(layers) == 3 and len(folded.layers) == 1
        E = runtime_error_bound(layers, -np.full(5, 3.0), np.full(5, 3.0), proof_net=folded, precision="float64")
        assert 0 < E < 1e-10
        y = est.predict(X)[:, col]
        for x, yv in zip(X[:50], y[:50]):
            assert abs(Fraction(float(yv)) - _exact(as_layers(folded), x)) <= Fraction(E)


# ------------------------------------------------------------------ end to end

def _torch_file(folder, layers, relu_after=()):
    torch = pytest.importorskip("torch")
    mods = []
    for k, (W, b) in enumerate(layers):
        lin = torch.nn.Linear(W.shape[1], W.shape[0])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(W.astype(np.float32)))
            lin.bias.copy_(torch.from_numpy(b.astype(np.float32)))
        mods.append(lin)
        if k in relu_after:
            mods.append(torch.nn.ReLU())
    seq = torch.nn.Sequential(*mods).eval()
    torch.jit.save(torch.jit.script(seq), str(folder / "m.pt"))
    with torch.no_grad():
        y = seq(torch.from_numpy(_grid().astype(np.float32))).double().numpy()[:, 0]
    return 'torch("m.pt", score = logit)', y


def _onnx_file(folder, layers, relu_after=()):
    """Gemm nodes (a Relu after those of ``relu_after``), read as a logit; two outputs: their margin."""
    import sys
    from pathlib import Path

    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    sys.path.insert(0, str(Path(__file__).parent))
    from onnx_nets import mlp_model

    m = mlp_model([(W, b, k in relu_after) for k, (W, b) in enumerate(layers)], "Identity", "y", batch="N")
    m.ir_version = 8
    onnx.save(m, str(folder / "m.onnx"))
    y = ort.InferenceSession(str(folder / "m.onnx")).run(None, {"x": _grid().astype(np.float32)})[0].astype(np.float64)
    if y.shape[1] == 2:
        return 'onnx("m.onnx", output = "y", score = logit, index = 1)', y[:, 1] - y[:, 0]
    return 'onnx("m.onnx", output = "y", score = logit)', y[:, 0]


@pytest.mark.parametrize("save,outputs", [(_torch_file, 1), (_onnx_file, 1), (_onnx_file, 2)])
@pytest.mark.parametrize("seed,relu_after", [(0, ()), (4, ()), (5, ()), (3, (1,)), (4, (1,))])
def test_a_chain_of_linear_layers_agrees_with_brute_force(tmp_path, monkeypatch, seed, relu_after, save, outputs):
    """torch Linear after Linear, ONNX Gemm after Gemm (one output, or two read as their margin)."""
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    rng = np.random.default_rng(seed)
    widths = (4, 3, 3, outputs) if not relu_after else (4, 3, 4, 3, outputs)
    layers = [(_dyadic(rng, (widths[k + 1], widths[k])), rng.integers(-2, 3, widths[k + 1]) / 4.0)
              for k in range(len(widths) - 1)]
    model, y = save(tmp_path, layers, relu_after)
    top = max(abs(y[i] - y[j]) for i, j in _pairs())
    assert top >= 0.25                       # the premise: the model reads s
    props = [(n, e.replace("SCORE", "logit")) for n, e in _gap_props(top)]
    _assert_gaps(_check(tmp_path, model, props), top)


def _skops(folder, est):
    from fairspec.models.sklearn_model import import_skops_io

    import_skops_io().dump(est, str(folder / "m.skops"))
    return 'sklearn("m.skops")'


def _identity_mlp(cls, seed, hidden=(3,)):
    rng = np.random.default_rng(seed)
    X = _grid()
    y = (X[:, 0] > X[:, 1]).astype(int)
    est = cls(hidden_layer_sizes=hidden, activation="identity", max_iter=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y if cls.__name__ == "MLPClassifier" else y + 0.5)
    widths = (4,) + tuple(hidden) + (1,)
    est.coefs_ = [_dyadic(rng, (widths[k], widths[k + 1])) for k in range(len(widths) - 1)]
    # an odd multiple of 1/32 on the output: no logit is exactly 0 (no tie in the label)
    est.intercepts_ = [rng.integers(-2, 3, w) / 4.0 for w in widths[1:-1]] + [np.array([rng.integers(-8, 8) / 4.0 + 1 / 32])]
    return est


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 7])   # labels flip with 1 and 4 only
def test_an_identity_mlp_classifier_agrees_with_brute_force(tmp_path, monkeypatch, seed):
    pytest.importorskip("skops")
    from sklearn.neural_network import MLPClassifier

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    est = _identity_mlp(MLPClassifier, seed, (3, 2) if seed % 2 else (3,))
    X = _grid()
    labels, probs = est.predict(X), est.predict_proba(X)[:, 1]
    flips = any(labels[i] != labels[j] for i, j in _pairs())
    top = float(max(abs(probs[i] - probs[j]) for i, j in _pairs()))
    props = [("label", "label(m(x)) == label(m(x'))"),
             ("prob_above", f"|prob(m(x)) - prob(m(x'))| <= {top + 0.01!r}")]
    if top > 0.02:
        props.append(("prob_below", f"|prob(m(x)) - prob(m(x'))| <= {top - 0.01!r}"))
    v = _check(tmp_path, _skops(tmp_path, est), props)
    if flips:
        w = v["label"]["witness"]
        assert v["label"]["status"] == "violated", v["label"]
        assert est.predict(np.array([w["x"], w["x_prime"]]))[0] != est.predict(np.array([w["x"], w["x_prime"]]))[1]
    else:
        assert v["label"]["status"] == "holds" and v["label"]["how"] == "proved", v["label"]
    assert v["prob_above"]["status"] == "holds" and v["prob_above"]["how"] == "proved", v["prob_above"]
    if top > 0.02:
        assert v["prob_below"]["status"] == "violated", v["prob_below"]


@pytest.mark.parametrize("seed", [0, 1, 4])
def test_an_identity_mlp_regressor_agrees_with_brute_force(tmp_path, monkeypatch, seed):
    pytest.importorskip("skops")
    from sklearn.neural_network import MLPRegressor

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    est = _identity_mlp(MLPRegressor, seed, (3, 3))
    y = est.predict(_grid())
    top = max(abs(y[i] - y[j]) for i, j in _pairs())
    assert top >= 0.25                       # the premise: the model reads s
    props = [(n, e.replace("SCORE", "value")) for n, e in _gap_props(top)]
    _assert_gaps(_check(tmp_path, _skops(tmp_path, est), props), top)


def test_a_hidden_block_s_composition_error_is_counted(monkeypatch):
    # Linear-ReLU, Linear-Linear-ReLU, Linear: the middle block is two runtime layers folded into one proof
    # layer; its float64 composition error (``slack``) must enter the bound like the first and last blocks'
    pytest.importorskip("torch")
    import fairspec.certify.network as cn
    from fairspec.models.network_torch import from_torch

    seq = _torch_chain(np.random.default_rng(5), (3, 4, 4, 4, 1), relu_after=(0, 2))
    folded, chain = from_torch(seq), from_torch(seq, readout="chain")
    assert len(chain.layers) == 4 and len(folded.layers) == 3
    lo, hi = -np.full(3, 2.0), np.full(3, 2.0)
    E = cn.runtime_error_bound(chain, lo, hi, proof_net=folded, precision="float32")
    real = cn.runtime_blocks

    def inflated(layers, Hs, n_proof):
        R, H, slack = real(layers, Hs, n_proof)
        assert len(slack) == 3
        slack[1] = slack[1] + 1.0                      # a middle block's composition error, made visible
        return R, H, slack

    monkeypatch.setattr(cn, "runtime_blocks", inflated)
    E2 = cn.runtime_error_bound(chain, lo, hi, proof_net=folded, precision="float32")
    W_last = np.abs(cn.as_layers(folded)[-1][0])
    assert E2 >= E + 0.99 * float(W_last.sum())        # |W'| slack, at least, on top


# ------------------------------------------------------------------ which row of the chain the readout reads

def test_the_readout_row_is_the_declared_one_not_the_closest_fold(tmp_path, monkeypatch):
    """A two-output identity MLPRegressor whose two outputs fold to the same layer (they differ only on a
    hidden unit that is always 0): the chain's row is the one ``index`` names (runtime_layers._readout_row),
    not found by comparing folds -- which saw two rows and refused (unknown) before."""
    pytest.importorskip("skops")
    from sklearn.neural_network import MLPRegressor

    from fairspec.models.runtime_layers import _readout_row

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    X = _grid()
    est = MLPRegressor(hidden_layer_sizes=(3,), activation="identity", max_iter=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, np.stack([X[:, 0], X[:, 1]], axis=1))
    W1 = np.array([[0.0, 0.5, -0.25], [0.0, 0.25, 0.75], [0.0, 1.0, 0.0], [0.0, -0.5, 0.25]])
    W2 = np.array([[1.0, -2.0], [0.5, 0.5], [-0.75, -0.75]])     # rows 1, 2 equal: the outputs differ on unit 0 only
    est.coefs_ = [W1, W2]
    est.intercepts_ = [np.array([0.0, 0.25, -0.5]), np.array([0.125, 0.125])]
    y = est.predict(X)
    assert np.array_equal(y[:, 0], y[:, 1])
    model = _skops(tmp_path, est)[:-1] + ", index = 1)"
    top = float(max(abs(y[i, 1] - y[j, 1]) for i, j in _pairs()))
    assert top >= 0.25
    props = [(n, e.replace("SCORE", "value")) for n, e in _gap_props(top)]
    _assert_gaps(_check(tmp_path, model, props), top)

    class M:
        format = "sklearn"

        class readout:
            task, index = "regression", 1

    assert _readout_row(M, 2) == (1, 1.0)
    M.readout.task, M.readout.index = "binary", 0
    assert _readout_row(M, 1) == (0, -1.0)              # decision_function is classes_[1]'s: negated
    M.format = "torch"
    assert _readout_row(M, 1) == (0, 1.0)
    with pytest.raises(ValueError):
        _readout_row(M, 2)                               # two logits read as their margin: not one row


@pytest.mark.parametrize("seed", [1, 4])
def test_an_identity_mlp_classifier_read_as_class_0_agrees_with_brute_force(tmp_path, monkeypatch, seed):
    """index = 0: the readout is the chain's one logit row negated (exact)."""
    pytest.importorskip("skops")
    from sklearn.neural_network import MLPClassifier

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    est = _identity_mlp(MLPClassifier, seed, (3, 2))
    X = _grid()
    probs = est.predict_proba(X)[:, 0]
    top = float(max(abs(probs[i] - probs[j]) for i, j in _pairs()))
    props = [("prob_above", f"|prob(m(x)) - prob(m(x'))| <= {top + 0.01!r}")]
    if top > 0.02:
        props.append(("prob_below", f"|prob(m(x)) - prob(m(x'))| <= {top - 0.01!r}"))
    v = _check(tmp_path, _skops(tmp_path, est)[:-1] + ", index = 0)", props)
    assert v["prob_above"]["status"] == "holds" and v["prob_above"]["how"] == "proved", v["prob_above"]
    if top > 0.02:
        w = v["prob_below"]["witness"]
        assert v["prob_below"]["status"] == "violated", v["prob_below"]
        p = est.predict_proba(np.array([w["x"], w["x_prime"]]))[:, 0]
        assert abs(p[0] - p[1]) > top - 0.01
