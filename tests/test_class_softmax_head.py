"""``class(m(x)) == class(m(x'))`` of a network whose last layer is a softmax (torch, ONNX): the runtime's
class is the first largest of its float *probabilities*, which the class score of its logits decides
within the logits' runtime error bound plus ``mu = x / (1 - x)``, ``x = 2 K delta`` (delta the softmax's
assumed error; the derivation is certify.argmax's docstring). Before, every such property was unknown
("the class of a softmax output is ... outside the runtime error model").

Checked (1) the lemma itself on the runtimes' own softmax (torch, onnxruntime) at logits biased to ties
(equal columns, a few float32 ulps apart), (2) certify's pieces (the readout, the slack, the joined
proof refuses parts of two heads), (3) end to end with enumeration switched off, against brute force on
every grid point on the runtime's own outputs: never a wrong verdict; holds is proved."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from fairspec.certify.argmax import SOFTMAX_ABS_ERROR, class_readout, softmax_class_slack


def _softmax(runtime, Y):
    Y = np.asarray(Y, dtype=np.float32)
    if runtime == "torch":
        torch = pytest.importorskip("torch")
        return torch.softmax(torch.from_numpy(Y), dim=1).numpy()
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    K = Y.shape[1]
    g = helper.make_graph([helper.make_node("Softmax", ["y"], ["p"], axis=1)], "g",
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", K])],
                          [helper.make_tensor_value_info("p", TensorProto.FLOAT, ["N", K])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, {"y": Y})[0]


@pytest.mark.parametrize("runtime", ["torch", "onnx"])
@pytest.mark.parametrize("K", [3, 5])
def test_the_lemma_on_the_runtimes_softmax(runtime, K):
    """g_c > mu => the runtime picks c; the runtime picks c => g_c >= -mu (E = 0: the proof's logits
    are the runtime's), on logits with ties and near ties (a few ulps), at several magnitudes."""
    rng = np.random.default_rng(K)
    base = (rng.normal(size=(6000, 1)) * rng.choice([0.0, 1.0, 30.0, 80.0], size=(6000, 1))).astype(np.float32)
    Y = np.repeat(base, K, axis=1)
    ulps = rng.integers(-3, 4, size=Y.shape)
    Y = np.nextafter(Y, np.where(ulps > 0, np.inf, -np.inf).astype(np.float32)) * (ulps != 0) + Y * (ulps == 0)
    Y = Y.astype(np.float32)
    Y[::3] += rng.integers(-2, 3, size=(2000, K)).astype(np.float32) * np.float32(2.0 ** -20)
    Y[1::3, 1] = Y[1::3, 0]                                  # equal columns
    P = _softmax(runtime, Y)
    k = np.argmax(P, axis=1)
    mu = softmax_class_slack(K, "float32")
    Yd = Y.astype(np.float64)
    for c in range(K):
        g = np.min(Yd[:, [c]] - np.delete(Yd, c, axis=1), axis=1)     # min_j (y_c - y_j), exact in float64
        assert np.all(k[g > mu] == c)
        assert np.all(g[k == c] >= -mu)
    # the runtime's softmax does pick another class than its logits' argmax on hundreds of these rows
    assert np.sum(k != np.argmax(Y, axis=1)) > 100
    assert mu < 2.0 ** -12


def test_the_readout_and_the_slack():
    assert class_readout(("argmax", 2)) == (2, "none")
    assert class_readout(["argmax", 1, "softmax"]) == (1, "softmax")
    for bad in (("argmax", 1, "sigmoid"), ("argmax", True), ("argmax", 1.5), ("margin", 0, 1), None, ("argmax",)):
        assert class_readout(bad) is None
    x = 2 * 3 * SOFTMAX_ABS_ERROR["float32"]
    assert x / (1 - x) <= softmax_class_slack(3, "float32") <= x / (1 - x) * (1 + 2.0 ** -50)
    with pytest.raises(ValueError):
        softmax_class_slack(2 ** 17, "float32")                  # 2 K delta >= 1


def test_the_error_bound_carries_the_slack():
    from fairspec.certify.network import argmax_layers, runtime_error_bound

    rng = np.random.default_rng(0)
    layers = [(rng.integers(-4, 5, (4, 3)) / 4.0, rng.integers(-2, 3, 4) / 4.0, True),
              (rng.integers(-4, 5, (3, 4)) / 4.0, rng.integers(-2, 3, 3) / 4.0, False)]
    lo, hi = np.zeros(3), np.full(3, 4.0)
    for c in range(3):
        kw = dict(readout=("argmax", c), precision="float32", proof_net=argmax_layers(layers, c), base_net=layers)
        E = runtime_error_bound(layers, lo, hi, **kw)
        kw["readout"] = ("argmax", c, "softmax")
        Es = runtime_error_bound(layers, lo, hi, **kw)
        assert Es >= E + softmax_class_slack(3, "float32")
        with pytest.raises(ValueError):
            runtime_error_bound(layers, lo, hi, **{**kw, "readout": ("argmax", c, "sigmoid")})


def test_the_joined_proof_takes_one_head():
    from fairspec.certify.network import prove_class_stable
    from fairspec.certify.proof import _mint

    def part(r):
        return _mint("interval", "a part", readout=r)

    soft = {c: part(["argmax", c, "softmax"]) for c in range(3)}
    p = prove_class_stable(soft, 3)
    assert p is not None and "softmax probabilities" in p.claim and p.detail["head"] == "softmax"
    assert prove_class_stable({**soft, 1: part(["argmax", 1])}, 3) is None          # two heads: no proof
    assert prove_class_stable({**soft, 1: part(["argmax", 2, "softmax"])}, 3) is None
    plain = prove_class_stable({c: part(["argmax", c]) for c in range(3)}, 3)
    assert plain is not None and "head" not in plain.detail


# ------------------------------------------------------------------ end to end, enumeration switched off

SPEC = """features F {
  a : int in [0, 3]
  b : int in [0, 3]
  s : {F, M} protected
}
MODEL
encode F for m { a : raw  b : raw  s : onehot }
"""

PROP = """
property p_@B@ {
  forall x, x' : F
  require x.* == x'.* except {s}
  ensure class(m(x)) == class(m(x'))
  @USING@
  timeout = 600s
}
"""


def _grid():
    return np.array([[a, b, s == 0, s == 1] for a, b, s in itertools.product(range(4), range(4), range(2))],
                    dtype=np.float64)


def _layers(seed, gap, tie):
    rng = np.random.default_rng(seed)
    W1 = rng.integers(-4, 5, (4, 4)) / 4.0
    W1[:, 2:] = 0.0
    W1[0, 2:] = (gap, -gap)
    b1 = rng.integers(-2, 3, 4) / 4.0
    W2 = rng.integers(-4, 5, (3, 4)) / 4.0
    b2 = rng.integers(-2, 3, 3) / 4.0
    if tie == "equal":                   # classes 0 and 1: equal logits everywhere (the first wins)
        W2[1], b2[1] = W2[0], b2[0]
    elif tie == "near":                  # classes 0 and 1: logits 2**-20 apart, within the softmax's error
        W2[1], b2[1] = W2[0], b2[0] + 2.0 ** -20
    return [(W1, b1, True), (W2, b2, False)]


def _save(folder, runtime, layers):
    if runtime == "torch":
        torch = pytest.importorskip("torch")
        lins = [torch.nn.Linear(W.shape[1], W.shape[0]) for W, _, _ in layers]
        with torch.no_grad():
            for lin, (W, b, _) in zip(lins, layers):
                lin.weight.copy_(torch.from_numpy(W.astype(np.float32)))
                lin.bias.copy_(torch.from_numpy(b.astype(np.float32)))
        seq = torch.nn.Sequential(lins[0], torch.nn.ReLU(), lins[1], torch.nn.Softmax(dim=1)).eval()
        torch.jit.save(torch.jit.script(seq), str(folder / "m.pt"))

        def probs(X):
            with torch.no_grad():
                return seq(torch.from_numpy(np.asarray(X, dtype=np.float32))).numpy()
        return 'model m = torch("m.pt", score = prob)', probs
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx_nets import mlp_model

    m = mlp_model(layers, "Softmax", "y", batch="N")
    m.ir_version = 8
    onnx.save(m, str(folder / "m.onnx"))
    s = ort.InferenceSession(str(folder / "m.onnx"), providers=["CPUExecutionProvider"])
    return 'model m = onnx("m.onnx", output = "y", score = prob)', \
        lambda X: s.run(None, {"x": np.asarray(X, dtype=np.float32)})[0]


CASES = [(rt, seed, gap, tie) for rt in ("torch", "onnx") for seed, gap, tie in
         [(0, 0.0, "equal"), (1, 0.0, "near"), (2, 0.0, None), (3, 2.0, "equal"), (4, 0.0, "near"), (5, 1.0, None),
          (6, 0.0, None), (7, 0.0, "equal")]]


@pytest.mark.parametrize("runtime,seed,gap,tie", CASES)
def test_end_to_end_against_brute_force(tmp_path, monkeypatch, runtime, seed, gap, tie):
    from fairspec.pipeline import check
    from fairspec.report import to_json

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    model, probs = _save(tmp_path, runtime, _layers(seed, gap, tie))
    k = np.argmax(probs(_grid()), axis=1)
    flips = any(k[2 * i] != k[2 * i + 1] for i in range(16))
    props = "".join(PROP.replace("@B@", b).replace("@USING@", u)
                    for b, u in (("milp", "using milp"), ("smt", "using smt"), ("maxi", "mode = maximize")))
    (tmp_path / "spec.fair").write_text(SPEC.replace("MODEL", model) + props)
    out = {v["name"]: v for v in json.loads(to_json(check(tmp_path / "spec.fair")))["properties"]}
    unknown = 0
    for v in out.values():
        if flips:
            assert v["status"] == "violated", v
            w = v["witness"]
            kw = np.argmax(probs(np.array([w["x"], w["x_prime"]])), axis=1)
            assert kw[0] != kw[1], (v, kw)
        elif v["status"] == "unknown":
            # labelled: a tie another batch of the float runtime may round the other way, or (maximize) a class
            # score at its threshold; never the softmax head itself
            assert "softmax" not in v["reason"], (v["name"], v["reason"])
            unknown += 1
        else:
            assert v["status"] == "holds" and v["how"] == "proved", (v["name"], v["reason"], v.get("details"))
    assert unknown < len(out)
    if not flips:           # z3 on the class score, its thresholds moved by the logits' and the softmax's error
        assert out["p_smt"]["status"] == "holds", out["p_smt"]["reason"]
