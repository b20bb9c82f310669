"""Individual fairness of multiclass networks (issue 25): the class score g_c, its runtime error
bound, and the class post on MILP and exact SMT against brute force on tiny tie-biased models."""

import math

import numpy as np
import pytest

from fairspec.backends.pair import PairProblem
from fairspec.backends.pair.multiclass import ClassProblem, brute_force_class, class_net, solve_class
from fairspec.certify.network import argmax_class_score, argmax_layers, runtime_error_bound
from fairspec.certify.proof import Proof
from fairspec.models.network import Layer, PLNet
from onnx_nets import mlp_model


def _net(rng, n, h, K):
    W1 = rng.integers(-4, 5, (h, n)) / 4.0
    b1 = rng.integers(-2, 3, h) / 4.0
    W2 = rng.integers(-4, 5, (K, h)) / 4.0
    W2[rng.random(W2.shape) < 0.3] = 0.0
    b2 = rng.integers(-1, 2, K) / 4.0
    return PLNet((Layer(W1, b1, True), Layer(W2, b2, False)))


def _problem(net, hi=(2.0, 3.0, 1.0)):
    n = len(hi)
    pre = PairProblem(class_net(net, 0), np.zeros(n), np.array(hi), np.ones(n, bool), free=(n - 1,))
    return ClassProblem(net, pre)


@pytest.mark.parametrize("K", [2, 3, 4, 5])
def test_class_score_is_min_margin(K):
    rng = np.random.default_rng(K)
    net = _net(rng, 3, 5, K)
    X = rng.integers(0, 4, (200, 3)).astype(float)
    Y = net.forward_all(X)
    for c in range(K):
        g = class_net(net, c).forward(X)
        want = np.min(Y[:, [c]] - np.delete(Y, c, axis=1), axis=1)
        assert np.array_equal(g, want)       # dyadic weights: exact


def test_class_score_relu_output_layer():
    rng = np.random.default_rng(3)
    net = _net(rng, 3, 4, 3)
    net = PLNet(net.layers[:-1] + (Layer(net.layers[-1].W, net.layers[-1].b, True),))
    X = rng.integers(0, 4, (50, 3)).astype(float)
    Y = net.forward_all(X)
    g = class_net(net, 1).forward(X)
    assert np.array_equal(g, np.min(Y[:, [1]] - Y[:, [0, 2]], axis=1))


def test_argmax_class_score_ties_first_index():
    Y = np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 2.0], [3.0, 1.0, 2.0]])
    assert list(argmax_class_score(Y, 0) > 0) == [True, False, True]
    assert list(argmax_class_score(Y, 1) > 0) == [False, True, False]
    assert list(argmax_class_score(Y, 2) > 0) == [False, False, False]


def test_inexact_margin_refused():
    W = np.array([[1.0, 0.0], [2.0 ** -60, 1.0]])
    net = PLNet((Layer(np.eye(2), np.zeros(2), True), Layer(W, np.zeros(2), False)))
    with pytest.raises(ValueError):
        argmax_layers(net, 0)


def test_error_bound_checks_the_proof_net():
    rng = np.random.default_rng(5)
    net = _net(rng, 3, 4, 3)
    layers = [(L.W, L.b, L.relu) for L in net.layers]
    lo, hi = np.zeros(3), np.array([2.0, 3.0, 1.0])
    E = runtime_error_bound(layers, lo, hi, readout=("argmax", 1), proof_net=class_net(net, 1), base_net=net)
    assert 0 < E < 1e-4
    with pytest.raises(ValueError):       # the class score of another class is not this proof's network
        runtime_error_bound(layers, lo, hi, readout=("argmax", 1), proof_net=class_net(net, 2), base_net=net)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("engine", ["highs", "z3"])
def test_class_post_against_brute_force(seed, engine):
    rng = np.random.default_rng(100 + seed)
    net = _net(rng, 3, 4, int(rng.integers(2, 5)))
    cp = _problem(net)
    truth = brute_force_class(cp).status
    for mode in ("prove", "maximize") if seed < 2 and engine == "highs" else ("prove",):
        r = solve_class(cp, mode, engine, time_limit=30)
        assert r.status in (truth, "unknown"), (mode, r.status, truth, r.reason)
        if r.status == "holds":
            assert isinstance(r.proof, Proof) and r.proof.detail["classes"] == cp.K
        if r.status == "violated":
            w = r.witness
            k = np.argmax(net.forward_all(np.array([w.x, w.x_prime]), dtype=np.float32), axis=1)
            assert k[0] != k[1]
        if mode == "maximize" and r.bound is not None and r.value is not None and math.isfinite(r.bound):
            assert r.value <= r.bound + 1e-12


def test_class_prob_many_classes_is_unknown():
    rng = np.random.default_rng(1)
    cp = ClassProblem(_net(rng, 3, 4, 3), _problem(_net(rng, 3, 4, 3)).pre, post="class_prob", cls=0)
    r = solve_class(cp, "prove")
    assert r.status == "unknown" and "not piecewise linear" in r.reason


# ------------------------------------------------------------------ end to end (fairspec check)

def _mlp_onnx(path, layers, name="logits"):
    onnx = pytest.importorskip("onnx")
    m = mlp_model(layers, "Identity", name, batch="N")
    m.ir_version = 8
    onnx.save(m, str(path))


_SPEC = """\
data d = csv("d.csv", label = y == 1)
features F from d {
  a : int in [0, 3]
  b : int in [0, 49]
  sex : {F, M} protected
}
features G from d {
  a : int in [0, 3000]
  b : int in [0, 4000]
  sex : {F, M} protected
}
model gs = onnx("MODEL.onnx"SCORE)
encode F for gs { a : raw  b : raw  sex : onehot }
model gb = onnx("MODEL.onnx"SCORE)
encode G for gb { a : raw  b : raw  sex : onehot }
property small {
  forall x, x' : F
  require x.* == x'.* except {sex}
  ensure ENSURE_S
}
property big {
  forall x, x' : G
  require x.* == x'.* except {sex}
  ENSURE_B
  using BACKEND
}
"""


@pytest.fixture(scope="module")
def e2e(tmp_path_factory):
    d = tmp_path_factory.mktemp("mc")
    rng = np.random.default_rng(0)
    W1 = rng.integers(-4, 5, (6, 4)) / 4.0
    b1 = rng.integers(-2, 3, 6) / 4.0
    fair = W1.copy()
    fair[:, 2:] = 0.0                         # the one-hot sex columns read by no neuron
    W2 = rng.integers(-4, 5, (3, 6)) / 4.0
    _mlp_onnx(d / "grade.onnx", [(W1, b1, True), (W2, rng.integers(-1, 2, 3) / 4.0, False)])
    _mlp_onnx(d / "fairgrade.onnx", [(fair, b1, True), (W2, np.zeros(3), False)])
    _mlp_onnx(d / "salary.onnx", [(W1, b1, True), (rng.integers(-4, 5, (1, 6)) / 4.0, np.zeros(1), False)], "y")
    _mlp_onnx(d / "fairsalary.onnx", [(fair, b1, True), (rng.integers(-4, 5, (1, 6)) / 4.0, np.zeros(1), False)], "y")
    rows = [f"{rng.integers(0, 4)},{rng.integers(0, 50)},{'FM'[rng.integers(0, 2)]},{rng.integers(0, 3)}"
            for _ in range(60)]
    (d / "d.csv").write_text("a,b,sex,y\n" + "\n".join(rows) + "\n")
    return d


def _check(folder, model, ensure, backend="milp", mode="prove", score=""):
    from fairspec import pipeline

    body = ensure.replace("M(", "gs(")
    text = (_SPEC.replace("MODEL", model).replace("SCORE", score).replace("ENSURE_S", body)
            .replace("ENSURE_B", f"mode = {mode}\n  ensure " + ensure.replace("M(", "gb("))
            .replace("BACKEND", backend))
    p = folder / f"s_{model}_{backend}_{mode}.fair"
    p.write_text(text)
    rep = pipeline.check(p)
    return {v.name: v for v in rep.verdicts}


@pytest.mark.parametrize("backend", ["milp", "smt"])
def test_class_end_to_end(e2e, backend):
    v = _check(e2e, "grade", "class(M(x)) == class(M(x'))", backend)
    assert v["small"].status == "violated" and v["small"].proof is None
    assert v["big"].status == "violated", v["big"].reason
    w = v["big"].witness
    assert w.outputs[0] != w.outputs[1]                # the predicted classes, replayed on onnxruntime
    v = _check(e2e, "fairgrade", "class(M(x)) == class(M(x'))", backend)
    assert v["small"].status == "holds" and v["small"].proof.method == "enumeration"
    assert v["big"].status == "holds", v["big"].reason
    assert v["big"].proof is not None and v["big"].proof.detail["classes"] == 3


def test_value_end_to_end(e2e):
    v = _check(e2e, "salary", "|value(M(x)) - value(M(x'))| <= 0.5", score=", score = value")
    assert v["small"].status == "violated" and v["big"].status == "violated"
    v = _check(e2e, "fairsalary", "|value(M(x)) - value(M(x'))| <= 0.5", mode="maximize", score=", score = value")
    assert v["small"].status == "holds" and v["small"].proof.method == "enumeration"
    assert v["big"].status == "holds" and v["big"].proof is not None
    lo, hi = v["big"].bound
    assert lo == 0.0 and 0.0 <= hi < 0.05          # 2E: the runtime error bound over inputs up to 4000


def test_class_prob_small_domain(e2e):
    v = _check(e2e, "fairgrade", "|prob(M(x), 1) - prob(M(x'), 1)| <= 0.05")
    assert v["small"].status == "holds" and v["small"].proof.method == "enumeration"
    # beyond enumeration: certify's softmax branch and bound (the sex columns are read by no neuron:
    # the coupled margin differences are exactly 0, proved at the root)
    assert v["big"].status == "holds" and v["big"].proof.method == "bab-certificate", v["big"].reason
    v = _check(e2e, "grade", "|prob(M(x), 1) - prob(M(x'), 1)| <= 0.0001")
    assert v["small"].status == "violated" and v["big"].status == "violated"
    w = v["big"].witness
    assert abs(w.outputs[0] - w.outputs[1]) > 0.0001 and w.replayed_by == "onnxruntime"


def test_class_prob_every_class_small_domain(e2e):
    v = _check(e2e, "fairgrade", "forall c: |prob(M(x), c) - prob(M(x'), c)| <= 0.05")
    assert v["small"].status == "holds" and v["small"].proof.method == "enumeration"
    assert "each of the 3 classes" in v["small"].proof.claim
    v = _check(e2e, "grade", "forall c: |prob(M(x), c) - prob(M(x'), c)| < 0.01")
    assert v["small"].status == "violated"
    w = v["small"].witness
    assert w.features["sex"] != w.features_prime["sex"]


@pytest.mark.parametrize("seed", range(4))
def test_best_pair_is_a_domain_pair_below_the_maximum(seed):
    from fairspec.backends.milp.falsify import best_pair
    from fairspec.backends.pair import brute_force, pair_measure, precondition_holds

    rng = np.random.default_rng(seed)
    net = _net(rng, 3, 5, 1)
    pre = PairProblem(net, np.zeros(3), np.array([6.0, 5.0, 1.0]), np.ones(3, bool), free=(2,), post="logit")
    xa, xb = best_pair(pre, samples=64, steps=10, starts=4)
    assert precondition_holds(pre, xa, xb)[0]
    z = net.forward(np.array([xa, xb]))
    truth = brute_force(pre).value
    assert pair_measure("logit", z[0], z[1]) <= truth + 1e-12


def test_class_logit_small_domain(e2e):
    v = _check(e2e, "fairgrade", "|logit(M(x), 2) - logit(M(x'), 2)| <= 0")
    assert v["small"].status == "holds" and v["small"].proof.method == "enumeration"
    # beyond enumeration (session 34): the binary logit path on the network cut to logit column 2, certified
    assert v["big"].status == "holds" and v["big"].proof is not None, v["big"].reason
    assert v["big"].details["column"] == 2
    v = _check(e2e, "grade", "forall c: |logit(M(x), c) - logit(M(x'), c)| <= 0.25")
    assert v["small"].status == "violated"
