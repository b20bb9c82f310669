"""certify.network: interval bounds enclose every point; the runtime error bound E covers the
observed |runtime score - exact rational score| of real runtimes (onnxruntime, TorchScript,
scikit-learn) on many inputs, with and without an encoding and a folded proof network."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from fairspec.certify.network import (InputEncoding, as_layers, prob_error_to_logit, rigorous_ibp,
                                      runtime_error_bound)
from onnx_nets import mlp_model


def _exact_forward(layers, x):
    h = [Fraction(float(v)) for v in x]
    for W, b, relu in layers:
        y = []
        for j in range(W.shape[0]):
            s = Fraction(float(b[j]))
            for i, w in enumerate(W[j]):
                if w:
                    s += Fraction(float(w)) * h[i]
            y.append(max(s, Fraction(0)) if relu else s)
        h = y
    return h


def _sigmoid_q(z: Fraction) -> float:
    # accurate enough for comparisons at 1e-12 (float64 on the exact value rounded once)
    zf = float(z)
    return 1.0 / (1.0 + math.exp(-zf)) if zf >= 0 else math.exp(zf) / (1.0 + math.exp(zf))


def _random_layers(rng, sizes, dyadic=False, dtype=np.float32):
    layers = []
    for k in range(len(sizes) - 1):
        if dyadic:
            W = rng.integers(-4, 5, size=(sizes[k + 1], sizes[k])) / 4.0
            b = np.zeros(sizes[k + 1])
        else:
            W = rng.standard_normal((sizes[k + 1], sizes[k])) / math.sqrt(sizes[k])
            b = rng.standard_normal(sizes[k + 1]) * 0.3
        layers.append((W.astype(dtype).astype(np.float64), b.astype(dtype).astype(np.float64), k < len(sizes) - 2))
    return layers


def _onnx_session(layers, final=None):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    m = mlp_model(layers, final)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return lambda X: s.run(None, {"x": np.asarray(X, dtype=np.float32)})[0]


def test_ibp_encloses_every_point_with_onehot_groups_and_phases():
    rng = np.random.default_rng(0)
    layers = _random_layers(rng, [6, 5, 4, 1], dyadic=True)
    lo = np.array([0, 0, 0, -2, 0, 1.0])
    hi = np.array([1, 1, 1, 2, 3, 1.0])
    groups = [(0, 1, 2)]
    b = rigorous_ibp(layers, lo, hi, groups)
    pts = []
    for g in range(3):
        for a in (-2, -1, 0, 1, 2):
            for c in (0, 1.5, 3):
                x = [0, 0, 0, a, c, 1.0]
                x[g] = 1
                pts.append(x)
    for x in pts:
        h = [Fraction(v) for v in x]
        for k, (W, bb, relu) in enumerate(layers):
            pre = [sum((Fraction(float(W[j, i])) * h[i] for i in range(len(h))), Fraction(float(bb[j]))) for j in range(W.shape[0])]
            assert all(Fraction(float(b[k][0][j])) <= pre[j] <= Fraction(float(b[k][1][j])) for j in range(len(pre)))
            h = [max(p, 0) for p in pre] if relu else pre
    # the one-hot bound is tighter than the plain interval bound
    plain = rigorous_ibp(layers, lo, hi)
    assert np.all(b[0][1] <= plain[0][1]) and np.all(b[0][0] >= plain[0][0])
    # a phase fixes the sign of a neuron; an impossible phase empties the box
    k0 = rigorous_ibp(layers, lo, hi, groups, phases={(0, 0): 1})
    assert k0[0][0][0] >= 0
    assert rigorous_ibp(layers, lo, hi, [(0, 1, 2)], phases=None) is not None
    assert rigorous_ibp(layers, np.array([0, 0, 0, -2, 0, 1.0]), np.array([0, 0, 0, 2, 3, 1.0]), groups) is None


def _check_runtime(layers, run, X, readout, E, exact_score):
    worst = 0.0
    for x, y in zip(X, run(X)):
        s_rt = Fraction(float(_select(y, readout)))
        s_ex = exact_score(x)
        diff = abs(s_rt - s_ex)
        assert diff <= Fraction(E), (readout, float(diff), E)
        worst = max(worst, float(diff))
    return worst


def _select(y, readout):
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    if readout[0] in ("logit", "prob", "softmax"):
        return y[readout[1]]
    return y[readout[1]] - y[readout[2]]


@pytest.mark.parametrize("seed", range(4))
def test_onnxruntime_float32_within_the_bound(seed):
    rng = np.random.default_rng(10 + seed)
    sizes = [5, 16, 16, 2]
    layers = _random_layers(rng, sizes)
    lo, hi = -np.ones(5) * 3, np.ones(5) * 3
    X = rng.uniform(lo, hi, size=(300, 5)).astype(np.float32).astype(np.float64)
    ratios = []
    for readout, final in ((("logit", 0), None), (("margin", 1, 0), None), (("softmax", 1, 0), "Softmax"),
                           (("prob", 0), "Sigmoid")):
        run = _onnx_session(layers, final)
        E = runtime_error_bound(layers, lo, hi, readout=readout)

        def exact(x, readout=readout):
            y = _exact_forward(layers, x)
            if readout[0] == "logit":
                return y[readout[1]]
            if readout[0] == "margin":
                return y[1] - y[0]
            if readout[0] == "softmax":
                return Fraction(_sigmoid_q(y[1] - y[0]))
            return Fraction(_sigmoid_q(y[0]))

        tol = 1e-15 if readout[0] in ("softmax", "prob") else 0.0   # float64 sigmoid of the exact logit
        worst = _check_runtime(layers, run, X, readout, E + tol, exact)
        ratios.append(E / max(worst, 1e-30))
        assert E < 1e-3
    # not absurdly loose for the logits (a few hundred times the worst observed error at most)
    assert ratios[0] < 1e4, ratios


def test_encoding_and_folded_proof_network_are_covered():
    """Feature space v, minmax-encoded by fairspec's runtime (float64, then float32) and the proof's
    network folded (float64 products): E covers |runtime - folded network in exact arithmetic|."""
    rng = np.random.default_rng(3)
    layers = _random_layers(rng, [3, 8, 1])
    enc = [InputEncoding("minmax", 17.0, 90.0), InputEncoding("standard", 0.3, 1.7), InputEncoding("raw")]
    scale = np.array([1 / 73.0, 1 / 1.7, 1.0])
    shift = np.array([-17.0 / 73.0, -0.3 / 1.7, 0.0])
    W, b, r = layers[0]
    folded = [(W * scale[None, :], b + W @ shift, r)] + layers[1:]
    lo, hi = np.array([17.0, -5.0, 0.0]), np.array([90.0, 5.0, 7.0])
    integer = np.array([True, False, True])
    E = runtime_error_bound(layers, lo, hi, encoding=enc, proof_net=folded, integer=integer)
    run = _onnx_session(layers)
    V = np.column_stack([rng.integers(17, 91, 400), rng.uniform(-5, 5, 400), rng.integers(0, 8, 400)]).astype(np.float64)
    Xrt = np.column_stack([(V[:, 0] - 17.0) / (90.0 - 17.0), (V[:, 1] - 0.3) / 1.7, V[:, 2]])
    out = run(Xrt)[:, 0]
    worst = 0.0
    for v, y in zip(V, out):
        z = _exact_forward(folded, v)[0]
        d = abs(Fraction(float(y)) - z)
        assert d <= Fraction(E)
        worst = max(worst, float(d))
    assert E < 1e-3 and E / max(worst, 1e-30) < 1e5
    # without the folded network in the bound, the fold's own rounding is not covered: E is smaller
    assert runtime_error_bound(layers, lo, hi, encoding=enc, integer=integer) <= E


def test_torchscript_and_sklearn_within_the_bound(tmp_path):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    layers = _random_layers(rng, [4, 12, 6, 1])
    lo, hi = -np.ones(4) * 2, np.ones(4) * 2
    mods = []
    for W, b, relu in layers:
        lin = torch.nn.Linear(W.shape[1], W.shape[0])
        with torch.no_grad():
            lin.weight.copy_(torch.tensor(W, dtype=torch.float32))
            lin.bias.copy_(torch.tensor(b, dtype=torch.float32))
        mods.append(lin)
        if relu:
            mods.append(torch.nn.ReLU())
    m = torch.jit.script(torch.nn.Sequential(*mods).eval())
    X = rng.uniform(-2, 2, size=(300, 4)).astype(np.float32).astype(np.float64)
    E = runtime_error_bound(layers, lo, hi)
    with torch.no_grad():
        out = m(torch.tensor(X, dtype=torch.float32)).numpy()[:, 0]
    for x, y in zip(X, out):
        assert abs(Fraction(float(y)) - _exact_forward(layers, x)[0]) <= Fraction(E)
    # scikit-learn's MLP computes in float64
    from sklearn.neural_network import MLPClassifier
    Xt = rng.uniform(-2, 2, size=(60, 4))
    clf = MLPClassifier(hidden_layer_sizes=(7, 5), max_iter=50, random_state=0).fit(Xt, Xt[:, 0] > 0)
    sk_layers = [(W.T, b, k < len(clf.coefs_) - 1) for k, (W, b) in enumerate(zip(clf.coefs_, clf.intercepts_))]
    E64 = runtime_error_bound(sk_layers, lo, hi, precision="float64", readout=("prob", 0))
    El = runtime_error_bound(sk_layers, lo, hi, precision="float64")
    assert El < 1e-12
    p = clf.predict_proba(X)[:, 1]
    for x, pp in zip(X, p):
        z = _exact_forward(sk_layers, x)[0]
        assert abs(pp - _sigmoid_q(z)) <= E64 + 1e-16


def test_weights_not_of_the_runtime_are_refused_and_prob_margin():
    layers = [(np.array([[0.1]]), np.array([0.0]), False)]        # 0.1 is no float32 number
    with pytest.raises(ValueError):
        runtime_error_bound(layers, [0.0], [1.0])
    assert runtime_error_bound(layers, [0.0], [1.0], precision="float64") > 0
    assert prob_error_to_logit(0.0) == 0.0
    assert prob_error_to_logit(2.0 ** -20) >= 4 * 2.0 ** -20
    assert prob_error_to_logit(0.5) == math.inf
    assert as_layers(layers)[0][2] is False


def test_the_runtimes_logistic_is_within_the_assumed_error():
    """The assumption behind the prob readouts, measured: onnxruntime's Sigmoid / 2-class Softmax
    and torch.sigmoid in float32 against the logistic of the same float32 inputs."""
    from fairspec.certify.network import SIGMOID_ABS_ERROR
    rng = np.random.default_rng(0)
    z = np.concatenate([rng.uniform(-40, 40, 50000), rng.uniform(-1, 1, 50000), [0.0, -0.0, 88.0, -88.0, -104.0]])
    z = z.astype(np.float32).astype(np.float64)
    exact = np.where(z >= 0, 1 / (1 + np.exp(-np.abs(z))), np.exp(-np.abs(z)) / (1 + np.exp(-np.abs(z))))
    sig = _onnx_session([(np.eye(1), np.zeros(1), False)], "Sigmoid")(z[:, None])[:, 0]
    soft = _onnx_session([(np.eye(2), np.zeros(2), False)], "Softmax")(np.column_stack([np.zeros_like(z), z]))[:, 1]
    torch = pytest.importorskip("torch")
    ts = torch.sigmoid(torch.tensor(z, dtype=torch.float32)).numpy()
    for out in (sig, soft, ts):
        assert np.max(np.abs(out.astype(np.float64) - exact)) <= SIGMOID_ABS_ERROR["float32"] / 2
    assert sig[-5] == 0.5                                     # a tie is exactly 1/2 in float32


def test_interval_proofs_of_an_output_bound():
    from fairspec.certify.network import prove_output_bound
    layers = [(np.array([[1.0, -1.0]]), np.array([0.0]), False)]
    # z = x0 - x1 over [0, 1]^2 lies in [-1, 1]; with E > 0 the bound "z <= 1" is not provable
    # (the runtime's float error could push it over), "z < 1.5" is
    assert prove_output_bound(layers, [0, 0], [1, 1], "<=", 1, claim="c") is None
    p = prove_output_bound(layers, [0, 0], [1, 1], "<", "1.5", claim="z < 1.5")
    assert p is not None and p.method == "interval" and p.detail["runtime_error"] >= 0
    # probability readout: sigmoid(z) <= 0.75 since z <= 1 (sigmoid(1) = 0.731...)
    assert prove_output_bound(layers, [0, 0], [1, 1], "<=", "0.75", claim="c", readout=("prob", 0)) is not None
    assert prove_output_bound(layers, [0, 0], [1, 1], "<=", "0.7", claim="c", readout=("prob", 0)) is None


def test_lp_proofs_of_a_bound():
    from fairspec.certify.lp import LinearProgram, prove_bound
    lp = LinearProgram([1.0, 1.0], [[1.0, 1.0]], [1.0], None, None, [0, 0], [1, 1])
    assert prove_bound(lp, [1.0], None, "<", "1.0000001", claim="c").method == "lp-certificate"
    assert prove_bound(lp, [1.0], None, "<", 1, claim="c") is None          # the optimum is exactly 1
    assert prove_bound(lp, [0.5], None, "<=", 1.5, claim="c") is None        # a weak multiplier
    bad = LinearProgram([0.0, 0.0], [[1.0, 1.0], [-1.0, -1.0]], [1.0, -1.5], None, None, [0, 0], [5, 5])
    assert prove_bound(bad, [1.0, 1.0], None, "<", -100, claim="c").detail["infeasible"] is True
