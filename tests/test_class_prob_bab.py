"""|prob(m(x), c) - prob(m(x'), c)| op eps with K > 2 beyond enumeration (issue 25): certify's softmax
branch and bound (fairspec.certify.class_prob) against brute force on tiny K = 3 networks biased to
ties (dyadic weights, equal logits, eps equal to the exact largest difference), and end to end with
enumeration switched off (FAIRSPEC_ENUMERATE_PAIRS=0)."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from fairspec.certify.class_prob import ClassProbQuery, bound_class_prob, softmax_bounds
from fairspec.certify.enumerate import compare_exact


def _net(rng, n, h, K, tie=False):
    W1 = rng.integers(-4, 5, (h, n)) / 4.0
    b1 = rng.integers(-2, 3, h) / 4.0
    W2 = rng.integers(-4, 5, (K, h)) / 4.0
    W2[rng.random(W2.shape) < 0.3] = 0.0
    b2 = rng.integers(-1, 2, K) / 4.0
    if tie:                                  # two classes with equal logits everywhere
        W2[1], b2[1] = W2[0], b2[0]
    return [(W1, b1, True), (W2, b2, False)]


def _runtime(layers):
    """float32 layers (any order of summation: numpy's), then fairspec's float64 softmax."""
    def probs(X):
        H = np.asarray(X, dtype=np.float32)
        for W, b, relu in layers:
            H = H @ W.T.astype(np.float32) + b.astype(np.float32)
            if relu:
                H = np.maximum(H, np.float32(0))
        y = H.astype(np.float64)
        z = y - y.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)
    return probs


def _truth(probs, hi, c, free, relaxed, eps, op):
    """(holds, exact largest p_c(x) - p_c(x')) over every admissible ordered pair of the integer box."""
    pts = np.array(list(itertools.product(*[range(int(h) + 1) for h in hi])), dtype=np.float64)
    P = probs(pts)[:, c]
    n = pts.shape[1]
    tied = [i for i in range(n) if i not in free and i not in dict(relaxed)]
    ok = np.all(pts[:, None, tied] == pts[None, :, tied], axis=2)
    ok &= np.any(pts[:, None, free] != pts[None, :, free], axis=2)
    for i, t in relaxed:
        ok &= np.abs(pts[:, None, i] - pts[None, :, i]) <= t
    a, b = np.nonzero(ok)
    fair = compare_exact(P[a], op, eps, minus=P[b])
    best = max((Fraction(float(P[i])) - Fraction(float(P[j])) for i, j in zip(a, b)), default=None)
    return bool(np.all(fair)), best


def _query(layers, hi, c, free, relaxed, eps, op):
    n = len(hi)
    combos = np.array(list(itertools.product(*[range(int(hi[i]) + 1) for i in free])), dtype=np.float64)
    M = np.any(combos[:, None, :] != combos[None, :, :], axis=2)
    return ClassProbQuery(layers, c, None, "float32", "none", np.zeros(n), np.array(hi, dtype=np.float64),
                          np.ones(n, bool), (), tuple(free), combos, M, tuple(relaxed), eps, op)


CASES = [(seed, tie, rel) for seed in range(10) for tie in (False, True) for rel in (False, True)]


@pytest.mark.parametrize("seed,tie,rel", CASES)
def test_against_brute_force(seed, tie, rel):
    rng = np.random.default_rng(seed)
    layers = _net(rng, 3, 4, 3, tie)
    hi = [3.0, 4.0, 1.0]
    free = (2,)
    relaxed = ((0, 1.0),) if rel else ()
    probs = _runtime(layers)
    c = int(rng.integers(0, 3))
    _, best = _truth(probs, hi, c, free, relaxed, "0", "<=")
    choices = ["0", "0.25", "0.01"]
    if best is not None:
        choices.append(best)                        # the tie: eps equal to the exact largest difference
    for eps in choices:
        for op in ("<=", "<"):
            holds, _ = _truth(probs, hi, c, free, relaxed, eps, op)
            q = _query(layers, hi, c, free, relaxed, eps, op)
            r = bound_class_prob(q, probs, mode="prove", max_nodes=5000)
            if r.status == "proved":
                assert holds, (eps, op)
                assert r.proof is not None and r.proof.method == "bab-certificate"
            elif r.status == "violated":
                assert not holds, (eps, op)
                x, xp = r.pair
                P = probs(np.vstack([x, xp]))[:, c]
                assert not compare_exact(P[:1], op, eps, minus=P[1:])[0]
            else:
                pytest.fail(f"undecided on a tiny integer domain: {r.reason}")
            m = bound_class_prob(q, probs, mode="maximize", max_nodes=5000)
            assert m.bound is not None and best is not None
            assert Fraction(m.value) <= best + Fraction(2.0 ** -50) and best <= Fraction(m.bound)
            if m.status == "proved":
                assert holds
            if m.status == "violated":
                assert not holds


def test_fair_network_proved_on_a_large_domain():
    """The protected column read by no neuron: the coupled margin differences are 0, proved at once
    at the root without looking at a point (the bound is the runtime's float32 error of both sides)."""
    rng = np.random.default_rng(3)
    layers = _net(rng, 3, 6, 4)
    layers[0][0][:, 2] = 0.0
    hi = [100.0, 100.0, 1.0]
    q = _query(layers, hi, 2, (2,), (), "0.001", "<")
    r = bound_class_prob(q, _runtime(layers), max_nodes=200)
    assert r.status == "proved", r.reason
    assert r.bound < 0.001 and r.stats["nodes"] == 1 and r.stats["probes"] == 0


def test_softmax_bounds_enclose():
    rng = np.random.default_rng(0)
    for _ in range(200):
        d = rng.normal(size=3) * 5
        w = np.abs(rng.normal(size=3))
        lo, hi = softmax_bounds(d - w, d + w)
        for _ in range(5):
            x = d - w + 2 * w * rng.random(3)
            p = 1.0 / (1.0 + math.fsum(math.exp(v) for v in x))
            assert lo <= p <= hi
    assert softmax_bounds([800.0], [800.0])[0] == 0.0
    assert softmax_bounds([-800.0, -900.0], [-800.0, -900.0])[1] == 1.0


@pytest.mark.parametrize("runtime", ["onnx", "torch"])
def test_runtime_softmax_within_assumed_error(runtime):
    """The float32 softmax of onnxruntime / torch against the exact softmax of its float32 inputs:
    within SOFTMAX_ABS_ERROR['float32'] (2**-18) with a wide margin."""
    from fairspec.certify.class_prob import SOFTMAX_ABS_ERROR

    rng = np.random.default_rng(1)
    Y = (rng.normal(size=(4000, 5)) * rng.choice([0.1, 1, 10, 40], size=(4000, 1))).astype(np.float32)
    if runtime == "onnx":
        ort = pytest.importorskip("onnxruntime")
        onnx = pytest.importorskip("onnx")
        from onnx import TensorProto, helper

        g = helper.make_graph([helper.make_node("Softmax", ["y"], ["p"], axis=1)], "g",
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])],
                              [helper.make_tensor_value_info("p", TensorProto.FLOAT, ["N", 5])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        P = s.run(None, {"y": Y})[0].astype(np.float64)
    else:
        torch = pytest.importorskip("torch")
        P = torch.softmax(torch.from_numpy(Y), dim=1).numpy().astype(np.float64)
    Yd = Y.astype(np.float64)
    ex = np.exp(Yd - Yd.max(axis=1, keepdims=True))
    exact = ex / ex.sum(axis=1, keepdims=True)         # float64: within 2**-50 of the exact softmax
    err = float(np.max(np.abs(P - exact)))
    assert err < SOFTMAX_ABS_ERROR["float32"] / 8, err


# ------------------------------------------------------------------ end to end, enumeration switched off

_E2E = """\
features F {
  a : int in [0, 3]
  b : int in [0, 4]
  sex : {F, M} protected
}
model m = onnx("m.onnx", output = "y", score = SCORE)
encode F for m { a : raw  b : raw  sex : onehot }
"""


def _e2e_props(c, eps_list):
    out = []
    for k, (cls, op, eps, mode) in enumerate(eps_list):
        head = "forall c: " if cls is None else ""
        cc = "c" if cls is None else str(cls)
        out.append(f"property p{k} {{\n  forall x, x' : F\n  require x.* == x'.* except {{sex}}\n"
                   f"  ensure {head}|prob(m(x), {cc}) - prob(m(x'), {cc})| {op} {eps}\n  mode = {mode}\n}}\n")
    return "".join(out)


@pytest.mark.parametrize("seed", range(6))
def test_end_to_end_agrees_with_enumeration(tmp_path, seed, monkeypatch):
    """The same spec checked with enumeration (the truth on these tiny domains) and with
    FAIRSPEC_ENUMERATE_PAIRS=0 (the attack and the softmax branch and bound): never a different
    decision; maximize's [best, bound] contains the enumerated maximum."""
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from fairspec import pipeline
    from onnx_nets import mlp_model

    rng = np.random.default_rng(100 + seed)
    layers = _net(rng, 4, 4, 3, tie=seed % 2 == 1)
    head = "Softmax" if seed % 3 == 2 else "Identity"
    m = mlp_model(layers, head, "y", batch="N")
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "m.onnx"))
    cases = [(0, "<=", "0.05", "prove"), (1, "<", "0.25", "find"), (None, "<=", "0.1", "prove"),
             (2, "<=", "0.05", "maximize"), (None, "<", "0.5", "maximize")]
    spec = tmp_path / "s.fair"
    spec.write_text(_E2E.replace("SCORE", "prob" if head == "Softmax" else "logit") + _e2e_props(0, cases))
    monkeypatch.delenv("FAIRSPEC_ENUMERATE_PAIRS", raising=False)
    truth = {v.name: v for v in pipeline.check(spec).verdicts}
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    got = {v.name: v for v in pipeline.check(spec).verdicts}
    for name, t in truth.items():
        g = got[name]
        assert t.status in ("holds", "violated"), t.reason
        assert g.details.get("engine") == "softmax-bab", g.details
        assert g.status == t.status, (name, g.reason, t.reason)      # tiny integral domains: always decided
        if g.status == "holds":
            assert g.proof is not None and g.proof.method == "bab-certificate"
        if g.status == "violated":
            w = g.witness
            assert w.features["sex"] != w.features_prime["sex"] and w.replayed_by == "onnxruntime"
        if t.bound is not None and g.bound is not None:
            assert g.bound[0] <= t.bound[1] + 1e-15 and t.bound[0] <= g.bound[1] + 1e-15, (name, g.bound, t.bound)


def test_a_holds_without_a_certified_bound_gives_the_threshold(tmp_path, monkeypatch):
    """The softmax branch and bound's per-class bound stubbed away (certify bounded no maximum, only
    proved the claim): a maximize that holds (proved) reports [best replayed, eps], eps the upper end
    its proof gives (no pair moves a probability beyond it), not called the maximum."""
    from dataclasses import replace

    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    import fairspec.certify.class_prob as ccp
    from fairspec import pipeline
    from onnx_nets import mlp_model

    layers = _net(np.random.default_rng(100), 4, 4, 3)
    m = mlp_model(layers, "Identity", "y", batch="N")
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "m.onnx"))
    spec = tmp_path / "s.fair"
    spec.write_text(_E2E.replace("SCORE", "logit") + _e2e_props(0, [(None, "<", "0.5", "maximize"),
                                                                     (1, "<=", "0.3", "maximize")]))
    real = ccp.bound_class_prob
    monkeypatch.setattr(ccp, "bound_class_prob", lambda *a, **k: replace(real(*a, **k), bound=None))
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    got = [v for v in pipeline.check(spec).verdicts if v.status == "holds"]
    assert got, "a maximize that holds"
    for v in got:
        lo, hi = v.bound
        assert v.how == "proved" and lo == v.value and hi in (0.5, float.fromhex("0x1.3333333333334p-2")), v.bound
        assert "threshold" in v.details["maximum"], v.details


def test_partitions_the_branch_and_bound_does_not_read_are_said(tmp_path, monkeypatch):
    """The softmax branch and bound splits the domain itself: a spec's partitions is a note of the
    verdict ("`partitions` has no effect here: ..."), not silently dropped."""
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from fairspec import pipeline
    from onnx_nets import mlp_model

    m = mlp_model(_net(np.random.default_rng(100), 4, 4, 3), "Identity", "y", batch="N")
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "m.onnx"))
    spec = tmp_path / "s.fair"
    spec.write_text(_E2E.replace("SCORE", "logit") + _e2e_props(0, [(0, "<=", "0.05", "prove")]).replace(
        "  mode = prove\n", "  mode = prove\n  partitions = 4\n"))
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    rep = pipeline.check(spec)
    assert not rep.has_errors, rep.diagnostics
    (v,) = rep.verdicts
    assert v.details.get("engine") == "softmax-bab", v.details
    assert v.details["notes"] == ["`partitions` has no effect here: the softmax branch and bound splits the domain "
                                  "itself"], v.details
