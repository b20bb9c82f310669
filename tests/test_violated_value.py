"""A ``violated`` verdict's ``value`` is the reported witness's measure as the model's runtime computed
it, not the solver's evaluation of the pair (audit s19 engines #5): a float32 torch network ending in a
Sigmoid, its probabilities compared, gave ``violated`` with the float64 sigmoid of the solver's logits
(0.1243530017...) -- below the threshold -- while the replayed outputs differ by 0.1243530213... .
The solvers' path is forced (FAIRSPEC_ENUMERATE_PAIRS=0)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from pair_specs import first_verdict, pair_spec


W, B = (0.375, 0.5, -0.125), -0.25          # dyadic: the logits are exact in float32 and float64


def _sigmoid_net(folder):
    """Linear(3, 1) then Sigmoid in float32; the largest |p - p'| on the runtime and in float64."""
    torch = pytest.importorskip("torch")
    net = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Sigmoid())
    with torch.no_grad():
        net[0].weight.copy_(torch.tensor([W]))
        net[0].bias.copy_(torch.tensor([B]))
    net = net.eval()
    torch.jit.save(torch.jit.script(net), str(folder / "m.pt"))
    f0, f1 = (a.ravel() for a in np.meshgrid(np.arange(6), np.arange(6), indexing="ij"))

    def runtime(g):
        X = np.stack([f0, np.full(f0.size, g), f1], 1).astype(np.float32)
        with torch.no_grad():
            return net(torch.from_numpy(X)).double().numpy().ravel()

    def real(g):
        z = W[0] * f0 + W[1] * g + W[2] * f1 + B
        return 1.0 / (1.0 + np.exp(-z))

    return float(np.max(np.abs(runtime(1) - runtime(0)))), float(np.max(np.abs(real(1) - real(0))))


def _check(folder, monkeypatch, op, eps, mode="find", engine=""):
    """``engine``: "" (the default), a MILP engine (highs, scip, portfolio), or smt (``using smt``)."""
    line = "" if not engine else "\n  using smt" if engine == "smt" else f"\n  engine = {engine}"
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    return first_verdict(folder, pair_spec('torch("m.pt", score = prob)', op, repr(eps), f0=5, f1=5, score="prob",
                                           mode=mode, tail=line))


def _replayed(v) -> float:
    a, b = v["witness"]["outputs"]
    return float(abs(Fraction(a) - Fraction(b)))


@pytest.mark.parametrize("engine", ["", "portfolio", "scip", "smt"])
@pytest.mark.parametrize("op, at", [("<=", "between"), ("<", "between"), ("<", "top")])
def test_a_violated_value_is_the_replayed_pairs_runtime_measure(tmp_path, monkeypatch, op, at, engine):
    """eps between the float64 sigmoid's largest difference and the runtime's (the value was below
    it), or at the runtime's for `<` (the value was below it, the pair breaks `<` at equality)."""
    top, real = _sigmoid_net(tmp_path)
    assert real < top                       # the float64 sigmoid of the logits is below the runtime's
    eps = (real + top) / 2 if at == "between" else top
    v = _check(tmp_path, monkeypatch, op, eps, engine=engine)
    assert v["status"] == "violated", v
    assert v["details"]["engine"] != "enumeration", v
    assert v["value"] == _replayed(v) == top, v
    assert v["value"] > eps if at == "between" else v["value"] == eps, v


@pytest.mark.parametrize("mode", ["prove", "maximize"])
def test_prove_and_maximize_report_the_runtime_measure_too(tmp_path, monkeypatch, mode):
    top, real = _sigmoid_net(tmp_path)
    v = _check(tmp_path, monkeypatch, "<=", (real + top) / 2, mode=mode, engine="portfolio")
    assert v["status"] == "violated", v
    if mode == "prove":
        assert v["value"] == _replayed(v) == top, v
    else:
        # maximize: a value only with its certified interval; else the best value, in the details
        best = v["value"] if v["value"] is not None else v["details"]["best_value"]
        assert best == _replayed(v) == top and not math.isnan(best), v


# ------------------------------------------------------------------ a K-output network's class / class_prob

_MULTI = """features F {{
  a : int in [0, 30]
  b : int in [0, 40]
  sex : {{F, M}} protected
}}
model m = onnx("m.onnx", output = "y", score = logit)
encode F for m {{ a : raw  b : raw  sex : onehot }}
property p {{
  forall x, x' : F
  require x.* == x'.* except {{sex}}
  ensure {ensure}
  mode = find
}}
"""


def _multi(folder, monkeypatch, ensure):
    """A float32 4-6-3 ONNX network whose weights are not dyadic (its float32 logits are not the
    solver's float64 ones), checked with the enumeration switched off."""
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from onnx_nets import mlp_model

    from fairspec.pipeline import check

    rng = np.random.default_rng(3)
    W1 = rng.normal(0, 1, (6, 4))
    W1[:, :2] /= 20.0                       # a and b span tens: the one-hot sex columns matter
    layers = [(W1, rng.normal(0, 0.5, 6), True), (rng.normal(0, 1, (3, 6)), rng.normal(0, 0.5, 3), False)]
    m = mlp_model(layers, "Identity", "y", batch="N")
    m.ir_version = 8
    onnx.save(m, str(folder / "m.onnx"))
    (folder / "s.fair").write_text(_MULTI.format(ensure=ensure))
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    return check(folder / "s.fair").verdicts[0]


def _logits(folder, v):
    import onnxruntime as ort

    s = ort.InferenceSession(str(folder / "m.onnx"), providers=["CPUExecutionProvider"])
    X = np.array([v.witness.x, v.witness.x_prime], dtype=np.float32)
    return s.run(None, {"x": X})[0].astype(np.float64)


def test_a_class_violation_reports_the_runtimes_class_measure(tmp_path, monkeypatch):
    """class: max over c and the two orders of min(g_c(x), -g_c(x')), g_c = y_c - max_{j != c} y_j of
    the runtime's float32 logits (the solver's float64 value before)."""
    v = _multi(tmp_path, monkeypatch, "class(m(x)) == class(m(x'))")
    assert v.status == "violated" and v.details["engine"] != "enumeration", v.reason
    Y = _logits(tmp_path, v)

    def g(i, c):
        return Y[i, c] - max(Y[i, j] for j in range(3) if j != c)

    g = [max(min(g(0, c), -g(1, c)), min(g(1, c), -g(0, c))) for c in range(3)]
    assert v.value == max(g) > 0, (v.value, g)


@pytest.mark.parametrize("eps", ["0.05", "0.2"])
def test_a_class_prob_violation_reports_the_replayed_difference(tmp_path, monkeypatch, eps):
    """class_prob (the attack or the softmax branch and bound): the value was None."""
    v = _multi(tmp_path, monkeypatch, f"|prob(m(x), 1) - prob(m(x'), 1)| <= {eps}")
    assert v.status == "violated" and v.details["engine"] == "softmax-bab", v.reason
    a, b = v.witness.outputs
    assert v.value == float(abs(Fraction(a) - Fraction(b))) > float(eps), v
