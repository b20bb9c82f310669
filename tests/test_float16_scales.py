"""A float16 ONNX graph that scales by a power of two (a Mul or Div by a constant, a Gemm's alpha or
beta) is bounded, not refused: the runtime chain (``from_onnx(readout="chain")``, models.network
``_Chain.cut_scales``) makes the scale a layer of its own, so its rounding -- exact in float16 unless
the result is subnormal (below 2**-14) -- is that layer's error bound (certify.half: gamma(n+2) and
(n+2) eta16), and both the value before it and after it are range-checked below 65504. Brute force:
on small dyadic networks (ties on grid points) every threshold claim certify proves holds on every
point as onnxruntime computes it, including a scale that puts the outputs among float16 subnormals."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import helper, numpy_helper  # noqa: E402

from half_nets import forward64, half_layers, integer_grid, proofs_on_every_point  # noqa: E402
from pair_specs import first_verdict, pair_spec, runtime_gaps, ties_never_contradicted  # noqa: E402
from test_float16_runtime import _graph, _session  # noqa: E402


def _scaled(layers, how: str, at: int, k: int) -> onnx.ModelProto:
    """``layers``' float16 graph scaled by 2**k after layer ``at``'s product: ``how`` "mul" (Mul by
    2**k), "div" (Div by 2**-k), "alpha" (the Gemm's alpha = 2**k), "alpha_beta" (alpha = 2**k and
    beta = 2**k, the bias divided by 2**k: the same bias after the scale)."""
    m = onnx.load_from_string(_graph(layers, split_bias=how in ("mul", "div")))
    g = m.graph
    nodes = list(g.node)
    if how in ("mul", "div"):
        c = np.array([2.0 ** k if how == "mul" else 2.0 ** -k], dtype=np.float16)
        g.initializer.append(numpy_helper.from_array(c, "c"))
        i = next(j for j, n in enumerate(nodes) if n.output[0] == f"m{at}")     # the product, before its bias
        nodes[i + 1].input[0] = "s"
        nodes.insert(i + 1, helper.make_node("Mul" if how == "mul" else "Div", [f"m{at}", "c"], ["s"]))
        del g.node[:]
        g.node.extend(nodes)
        return m
    gemm = next(n for n in nodes if n.output[0] == f"z{at}")
    gemm.attribute.append(helper.make_attribute("alpha", 2.0 ** k))
    if how == "alpha_beta":
        gemm.attribute.append(helper.make_attribute("beta", 2.0 ** k))
        b = next(t for t in g.initializer if t.name == f"b{at}")
        b.CopyFrom(numpy_helper.from_array((numpy_helper.to_array(b).astype(np.float64) / 2.0 ** k).astype(np.float16),
                                           f"b{at}"))
    return m


def _chain(m):
    from fairspec.models.network import from_onnx

    return [(L.W, L.b, L.relu) for L in from_onnx(m, readout="chain").layers]


CASES = [("mul", 0, -1), ("div", 0, -3), ("alpha", 0, 2), ("alpha_beta", 1, -2), ("mul", 1, 4),
         ("mul", 1, -18), ("alpha", 1, -20), ("div", 1, -15)]


@pytest.mark.parametrize("how, at, k", CASES)
def test_every_proof_on_a_scaled_float16_graph_holds_on_every_point(how, at, k):
    rng = np.random.default_rng(300 + len(how) + 7 * at + k)
    layers = half_layers(rng, [3, 6, 1], dyadic=True)
    subnormal = at == 1 and k < -14
    if subnormal:      # no bias after the scale: the outputs themselves are scaled into the subnormals
        layers[1] = (layers[1][0], np.zeros(1), False)
    m = _scaled(layers, how, at, k)
    chain = _chain(m)
    assert len(chain) == len(layers) + 1            # the scale is a layer of the runtime chain
    X = integer_grid([7, 5, 9])
    y = _session(m.SerializeToString()).run(None, {"x": X.astype(np.float16)})[0].astype(np.float64)[:, 0]
    ex = forward64(chain, X)[:, 0]
    if subnormal:      # the outputs are float16 subnormals; by 2**-18 and less, rounded: not exact there
        assert np.any((np.abs(y) < 2.0 ** -14) & (y != 0)) and (k > -18 or np.any(y != ex))
    boxes = [(np.zeros(3), np.array([7.0, 5.0, 9.0]))] + [(X[i], X[i]) for i in rng.choice(len(X), 12, replace=False)]
    boxes += [(X[i], np.minimum(X[i] + 1, [7.0, 5.0, 9.0])) for i in rng.choice(len(X), 5, replace=False)]
    proved = proofs_on_every_point(chain, X, y, ex, boxes, ("logit", 0), step=2.0 ** -24 if subnormal else None)
    assert proved > 0


def test_a_scale_whose_operand_overflows_is_refused():
    """Scaled back below 65504 by 2**-4 after the product, the folded layer is in range; the product
    itself is not: the chain's range check refuses it (the folded bound alone would not)."""
    from fairspec.certify.network import runtime_error_bound

    layers = [(np.full((2, 3), 1024.0), np.zeros(2), True), (np.full((1, 2), 1.0), np.zeros(1), False)]
    chain = _chain(_scaled(layers, "mul", 0, -4))
    with pytest.raises(ValueError, match="65504"):
        runtime_error_bound(chain, [0, 0, 0], [30, 30, 30], readout=("logit", 0), precision="float16",
                            integer=[True] * 3)
    folded = [(layers[0][0] / 16, layers[0][1], True), layers[1]]
    runtime_error_bound(folded, [0, 0, 0], [30, 30, 30], readout=("logit", 0), precision="float16",
                        integer=[True] * 3)


@pytest.mark.parametrize("how, k", [("mul", -1), ("alpha", -2)])
def test_the_solvers_prove_and_refute_a_scaled_float16_graph_as_the_runtime_computes(tmp_path, monkeypatch, how, k):
    """End to end on the solvers (was unknown: 'the float16 graph scales a layer'): far above the
    runtime's largest gap holds (proved), below it violated, at the tie never contradicted."""
    rng = np.random.default_rng(5)
    layers = half_layers(rng, [3, 6, 1], dyadic=True)
    m = _scaled(layers, how, 0, k)
    onnx.save(m, str(tmp_path / "m.onnx"))
    sess = _session(m.SerializeToString())
    gaps, top, step = runtime_gaps(lambda X: sess.run(None, {"x": X.astype(np.float16)})[0].astype(np.float64)[:, 0])
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")

    def verdict(op, eps):
        return first_verdict(tmp_path, pair_spec('onnx("m.onnx", score = logit)', op, eps))

    far = verdict("<=", top + 0.5 + top / 4)
    assert far["status"] == "holds" and far["how"] == "proved", far
    below = verdict("<=", top - 4 * step)
    assert below["status"] == "violated" and below["witness"] is not None, below
    ties_never_contradicted(verdict, gaps, top, step)
