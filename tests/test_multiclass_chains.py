"""Multiclass chains of linear layers (torch ``Linear`` after ``Linear``, ONNX ``Gemm`` after ``Gemm``, a
scikit-learn ``MLPClassifier`` with ``activation="identity"``) on the ``class`` and ``class_prob`` posts:
the solvers encode the folded network (``LoadedModel.folded_network``) and certify bounds the runtime on
its own layers, one rounding each (``runtime_chain``; the folded layers compared with the chain's
composites exactly, ``fairspec/certify/chains.py``). Before, the folded layer was refused as not the
runtime's own numbers ("several roundings") and every such property beyond enumeration was unknown.

Against brute force on the library's own outputs over the whole (small) domain, every domain sent to the
solvers (``FAIRSPEC_ENUMERATE_PAIRS=0``): every ``holds`` is one where no pair breaks the property,
every ``violated`` witness replays on the library (its classes differ; a class probability moves by more
than eps). Dyadic weights; some seeds copy a class's row onto another's, so the two classes tie exactly
(argmax takes the first) on every input."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from test_linear_chain_certify import _dyadic, _grid, _pairs  # the same 4 x 4 x {F, M} grid and dyadic weights

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
  mode = prove@USING@
  timeout = 600s
}
"""

CLASS = "class(m(x)) == class(m(x'))"


def _check(folder, model, props) -> dict:
    from fairspec.pipeline import check
    from fairspec.report import to_json

    text = HEAD.replace("MODEL", model)
    for name, ensure, using in props:
        text += PROP.replace("@NAME@", name).replace("@ENSURE@", ensure).replace(
            "@USING@", f"\n  using {using}" if using else "")
    p = folder / "spec.fair"
    p.write_text(text)
    return {v["name"]: v for v in json.loads(to_json(check(p)))["properties"]}


def _layers(seed, widths, tie, gap):
    """Dyadic (W, b) layers reading s by one hidden unit only (its one-hot columns weighed ``gap`` apart:
    0, s changes nothing). The class biases' fractions (1/64, 2/64, ...) keep every margin off 0 (the
    hidden units are multiples of 1/16); ``tie``: the last layer's row 1 is row 0's instead (classes 0
    and 1 tie everywhere)."""
    rng = np.random.default_rng(seed)
    layers = [(_dyadic(rng, (widths[k + 1], widths[k])), rng.integers(-2, 3, widths[k + 1]) / 4.0)
              for k in range(len(widths) - 1)]
    layers[0][0][:, 2:] = 0.0
    layers[0][0][0, 2:] = (gap, -gap)
    layers[-1][1][:] += np.arange(1, widths[-1] + 1) / 64.0
    if tie:
        W, b = layers[-1]
        W[1], b[1] = W[0], b[0]
    return layers


def _flips(Y) -> bool:
    k = np.argmax(Y, axis=1)
    return any(k[i] != k[j] for i, j in _pairs())


def _softmax(Y):
    Z = np.exp(Y - Y.max(axis=1, keepdims=True))
    return Z / Z.sum(axis=1, keepdims=True)


def _top_prob(P) -> float:
    return float(max(abs(P[i, c] - P[j, c]) for i, j in _pairs() for c in range(P.shape[1])))


def _prob_props(top):
    props = [("prob_above", f"forall c: |prob(m(x), c) - prob(m(x'), c)| <= {top + 0.01!r}", None)]
    if top > 0.02:
        props.append(("prob_below", f"forall c: |prob(m(x), c) - prob(m(x'), c)| <= {top - 0.01!r}", None))
    return props


def _assert_class(v, Y, outputs_of):
    """``class`` agrees with brute force: holds (proved) only without a flip, violated only with a pair
    whose classes differ on the library; a tie-free model is decided."""
    flips = _flips(Y)
    if v["status"] == "holds":
        assert v["how"] == "proved" and not flips, v
    elif v["status"] == "violated":
        assert flips, v
        w = v["witness"]
        k = np.argmax(outputs_of(np.array([w["x"], w["x_prime"]])), axis=1)
        assert k[0] != k[1], (v, k)
    return v["status"]


def _assert_prob(v, top, probs_of):
    above = v["prob_above"]
    assert above["status"] == "holds" and above["how"] == "proved", above
    if "prob_below" in v:
        below = v["prob_below"]
        assert below["status"] == "violated", below
        w = below["witness"]
        P = probs_of(np.array([w["x"], w["x_prime"]]))
        assert float(np.max(np.abs(P[0] - P[1]))) > top - 0.01, (below, P)


# ------------------------------------------------------------------ torch: Linear after Linear, logits

def _torch_file(folder, layers):
    torch = pytest.importorskip("torch")
    mods = []
    for W, b in layers:
        lin = torch.nn.Linear(W.shape[1], W.shape[0])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(W.astype(np.float32)))
            lin.bias.copy_(torch.from_numpy(b.astype(np.float32)))
        mods.append(lin)
    seq = torch.nn.Sequential(*mods).eval()
    torch.jit.save(torch.jit.script(seq), str(folder / "m.pt"))

    def outputs_of(X):
        with torch.no_grad():
            return seq(torch.from_numpy(np.asarray(X, dtype=np.float32))).double().numpy()

    return 'torch("m.pt", score = logit)', outputs_of


@pytest.mark.parametrize("seed,tie,gap", [(0, False, 1.0), (1, False, 0.25), (2, False, 0.0), (6, False, 0.25),
                                          (8, False, 0.0), (3, True, 1.0), (5, True, 0.0)])
def test_a_torch_linear_chain_s_class_and_probabilities_agree_with_brute_force(tmp_path, monkeypatch, seed, tie, gap):
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    layers = _layers(seed, (4, 3, 3), tie, gap)
    model, outputs_of = _torch_file(tmp_path, layers)
    Y = outputs_of(_grid())
    top = _top_prob(_softmax(Y))
    v = _check(tmp_path, model, [("cls", CLASS, None), ("cls_smt", CLASS, "smt")] + _prob_props(top))
    decided = [_assert_class(v[n], Y, outputs_of) for n in ("cls", "cls_smt")]
    if not tie:
        assert "unknown" not in decided, v
    _assert_prob(v, top, lambda X: _softmax(outputs_of(X)))


# ------------------------------------------------------------------ ONNX: Gemm after Gemm, logits or a Softmax head

def _onnx_file(folder, layers, head):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx_nets import mlp_model

    m = mlp_model([(W, b, False) for W, b in layers], head, "y", batch="N")
    m.ir_version = 8
    onnx.save(m, str(folder / "m.onnx"))
    sess = ort.InferenceSession(str(folder / "m.onnx"))

    def outputs_of(X):
        return sess.run(None, {"x": np.asarray(X, dtype=np.float32)})[0].astype(np.float64)

    score = "prob" if head == "Softmax" else "logit"
    return f'onnx("m.onnx", output = "y", score = {score})', outputs_of


@pytest.mark.parametrize("seed,tie,gap,head", [(0, False, 1.0, "Identity"), (7, False, 0.25, "Identity"),
                                               (9, False, 0.0, "Identity"), (3, True, 0.0, "Identity"),
                                               (1, False, 0.25, "Softmax"), (4, True, 1.0, "Softmax")])
def test_an_onnx_gemm_chain_agrees_with_brute_force(tmp_path, monkeypatch, seed, tie, gap, head):
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    layers = _layers(seed, (4, 3, 2, 3), tie, gap)           # three products, no ReLU between
    model, outputs_of = _onnx_file(tmp_path, layers, head)
    Y = outputs_of(_grid())
    P = Y if head == "Softmax" else _softmax(Y)
    top = _top_prob(P)
    props = _prob_props(top) + ([("cls", CLASS, None)] if head == "Identity" else [])
    v = _check(tmp_path, model, props)
    if head == "Identity":
        st = _assert_class(v["cls"], Y, outputs_of)
        assert tie or st != "unknown", v["cls"]
    _assert_prob(v, top, (lambda X: outputs_of(X)) if head == "Softmax" else (lambda X: _softmax(outputs_of(X))))


# ------------------------------------------------------------------ scikit-learn: an identity MLPClassifier

@pytest.mark.parametrize("seed,tie,gap", [(0, False, 1.0), (2, True, 0.25), (4, False, 0.25), (8, False, 0.0)])
def test_an_identity_mlp_classifier_s_probabilities_agree_with_brute_force(tmp_path, monkeypatch, seed, tie, gap):
    pytest.importorskip("skops")
    from sklearn.neural_network import MLPClassifier

    from fairspec.models.sklearn_model import import_skops_io

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    X = _grid()
    est = MLPClassifier(hidden_layer_sizes=(3, 2), activation="identity", max_iter=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, (X[:, 0] + X[:, 1]).astype(int) % 3)
    layers = _layers(seed, (4, 3, 2, 3), tie, gap)
    est.coefs_ = [W.T.copy() for W, _ in layers]
    est.intercepts_ = [b.copy() for _, b in layers]
    import_skops_io().dump(est, str(tmp_path / "m.skops"))
    P = est.predict_proba(X)
    top = _top_prob(P)
    v = _check(tmp_path, 'sklearn("m.skops")', _prob_props(top))
    _assert_prob(v, top, est.predict_proba)


# ------------------------------------------------------------------ certify: the margin difference through a chain

def test_the_margin_difference_passes_through_a_layer_with_no_relu():
    """certify.class_prob's coupled bound of d(x) - d(x') through the runtime's chain (identity between two
    products) contains every real difference: before, it stopped at the first layer with no ReLU and
    returned that layer's difference as the margins'."""
    from fairspec.certify.class_prob import ClassProbQuery, _Bounder
    from fairspec.certify.network import InputEncoding

    layers = [(W, b, False) for W, b in _layers(11, (4, 3, 3), False, 1.0)]
    X = _grid()
    q = ClassProbQuery(layers, 0, tuple(InputEncoding("raw") for _ in range(4)), "float64", "none",
                       np.zeros(4), np.array([3.0, 3.0, 1.0, 1.0]), np.array([True] * 4), ((2, 3),), (2, 3),
                       np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[False, True], [True, False]]))
    B = _Bounder(q)
    din_lo, din_hi = B.input_difference(q.combos[0], q.combos[1])
    sa = B.side(np.array([0.0, 0.0, 1.0, 0.0]), np.array([3.0, 3.0, 1.0, 0.0]))
    sb = B.side(np.array([0.0, 0.0, 0.0, 1.0]), np.array([3.0, 3.0, 0.0, 1.0]))
    lo, hi = B.margin_difference(sa[4], sb[4], din_lo, din_hi)
    assert lo.shape == (2,)

    def margins(x):
        h = x
        for W, b, _ in layers:
            h = W @ h + b
        return h[[1, 2]] - h[0]

    for x in X[X[:, 2] == 1]:
        xp = x.copy()
        xp[2:] = (0.0, 1.0)
        d = margins(x) - margins(xp)
        assert np.all(lo <= d) and np.all(d <= hi), (x, d, lo, hi)


def test_partitions_a_class_post_does_not_read_are_said(tmp_path, monkeypatch):
    """The class post is solved on the whole domain, one sub-problem per class: a spec's partitions is
    a note of the verdict ("`partitions` has no effect here: ..."), not silently dropped."""
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    model, _ = _onnx_file(tmp_path, _layers(0, (4, 3, 2, 3), False, 1.0), "Identity")
    v = _check(tmp_path, model, [("cls", CLASS + "\n  partitions = 4", None)])["cls"]
    assert v["details"]["notes"] == ["`partitions` has no effect here: the class post is solved on the whole "
                                     "domain (one sub-problem per class)"], v
