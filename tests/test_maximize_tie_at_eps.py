"""``mode = maximize`` of ``|prob(m(x)) - prob(m(x'))| <= eps`` (and ``logit``) where the largest difference
over the domain is exactly eps, enumeration off (FAIRSPEC_ENUMERATE_PAIRS=0): with ``<=`` the verdict is
``holds (proved)`` or ``unknown``, never violated; with ``<`` it is ``violated`` with a witness that replays
on the runtime and breaks eps there, its value the witness's measure and the interval ``[value, certified
upper bound]`` holding the true maximum -- all against brute force on onnxruntime (exact fractions).

Seen before (session 31): the Sigmoid network below, ``<`` under the MILP (also SCIP and ``partitions``):
violated with a replayed witness but no value and no interval. The MILP's float64 sigmoid puts the
pair of logits (0, 20) just below 1/2 (1 - sigmoid(20) is not 0 in float64; float32 rounds sigmoid(20) to 1),
so the MILP said "holds"; certify's branch and bound then found the pair on the runtime, and the
maximize driver returned its violated without the certified upper bound it had computed: the reported
value needs that bound (individual_fairness._value), so only ``details.best_value`` said 0.5."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

import numpy as np
import pytest

SPEC = """features F {{
  a : int in [0, 3]
  b : int in [0, 3]
  g : int in [0, {g_hi}] protected
}}
model m = onnx("m.onnx", output = "y", score = {score})
encode F for m {{
  a : raw
  b : raw
  g : raw
}}
property p {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  ensure |{post}(m(x)) - {post}(m(x'))| {op} {eps}
  mode = maximize{extra}
  timeout = 30s
}}
"""

#: name -> (layers ((W, b, relu) each), final node, protected values' top, post)
NETS = {
    # logit 20 a + 20 g - 60 after a ReLU: 0 (prob 1/2) for g = 0, 20 (float32 prob exactly 1) for a = 3, g = 1:
    # the largest |p - p'| is exactly 1/2, reached only where a = 3
    "prob-saturated": ([(np.array([[20.0, 0.0, 20.0], [0.25, -0.5, 1.0]]), np.array([-60.0, -1.0]), True),
                        (np.array([[1.0, 0.5]]), np.array([0.0]), False)], "Sigmoid", 1, "prob"),
    # dyadic weights (multiples of 1/4): float32 logits exact, the largest |z - z'| on the grid
    "logit-dyadic": ([(np.random.default_rng(0).integers(-8, 9, size=(4, 3)) / 4,
                       np.random.default_rng(1).integers(-4, 5, size=4) / 4, True),
                      (np.random.default_rng(2).integers(-8, 9, size=(1, 4)) / 4,
                       np.random.default_rng(3).integers(-4, 5, size=1) / 4, False)], "Identity", 2, "logit"),
}

SETTINGS = {"milp": "", "partitions": "\n  partitions = 4", "smt": "\n  using smt"}


def _save(folder, name):
    """The network's file, and per individual (a, b) its outputs under each protected value (onnxruntime)."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx_nets import mlp_model

    layers, final, g_hi, post = NETS[name]
    m = mlp_model(layers, final, "y", batch="N")
    m.ir_version = 8
    onnx.save(m, str(folder / "m.onnx"))
    s = ort.InferenceSession(str(folder / "m.onnx"), providers=["CPUExecutionProvider"])
    X = np.array(list(itertools.product(range(4), range(4), range(g_hi + 1))), dtype=np.float32)
    Y = s.run(None, {"x": X})[0].astype(np.float64).ravel()
    return s, {tuple(x): y for x, y in zip(X.tolist(), Y.tolist())}


def _largest(out, g_hi):
    """The exact largest |s(a, b, g) - s(a, b, g')| over the domain."""
    return max(abs(Fraction(out[(a, b, g)]) - Fraction(out[(a, b, h)]))
               for a in range(4) for b in range(4) for g in range(g_hi + 1) for h in range(g_hi + 1))


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("op", ["<=", "<"])
@pytest.mark.parametrize("name", list(NETS))
def test_a_maximum_exactly_at_eps(tmp_path, monkeypatch, name, op, setting):
    from fairspec.pipeline import check
    from fairspec.report import to_json

    _, final, g_hi, post = NETS[name]
    sess, out = _save(tmp_path, name)
    top = _largest(out, g_hi)
    eps = str(float(top))
    assert Fraction(eps) == top and top > 0                     # the threshold is the exact maximum
    (tmp_path / "s.fair").write_text(SPEC.format(g_hi=g_hi, score="prob" if post == "prob" else "logit", post=post,
                                                 op=op, eps=eps, extra=SETTINGS[setting]))
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    v = json.loads(to_json(check(tmp_path / "s.fair")))["properties"][0]
    assert v["details"].get("engine") != "enumeration", v
    bound = v.get("bound")
    if bound is not None and None not in bound:
        assert Fraction(bound[1]) >= top, v                      # a certified upper end holds the maximum
    if op == "<=":
        assert v["status"] in ("holds", "unknown"), v
        if v["status"] == "holds":
            assert v["how"] == "proved" and v.get("proof"), v
        return
    # `<`: the maximum breaks it; violated, with a witness that replays and its measure as the value
    assert v["status"] == "violated", v
    w = v["witness"]
    ys = sess.run(None, {"x": np.array([w["x"], w["x_prime"]], dtype=np.float32)})[0].astype(np.float64).ravel()
    measure = abs(Fraction(ys[0]) - Fraction(ys[1]))
    assert measure >= Fraction(eps), (measure, v)
    assert v["value"] is not None and Fraction(v["value"]) == measure, v
    assert bound is not None and Fraction(bound[0]) == measure <= Fraction(bound[1]), v
