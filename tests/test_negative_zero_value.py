"""A reported value, bound or witness input is never negative zero (audit s19/h3): label's measure min(z, -z') of a pair whose
x' scores a logit of exactly 0 is -0.0 in float arithmetic, which the report printed as "-0" (text)
and -0.0 (JSON) -- the same number as 0, but a sign that says nothing the spec asked."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fairspec.verdict import Verdict

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

SPEC = """features F {
  a : int in [0, 3]
  b : int in [0, 1]
  s : {F, M} protected
}
model m = onnx("m.onnx")
encode F for m {
  a, b : raw
  s : code
}
property mlab {
  forall x, x' : F
  require x.* == x'.* except {s}
  ensure label(m(x)) == label(m(x'))
  mode = maximize
}
"""


def _positive_zero(v):
    return v is None or v != 0 or math.copysign(1.0, v) > 0


def test_a_verdict_keeps_no_negative_zero():
    v = Verdict("p", "individual_fairness", "violated", value=-0.0, bound=(-0.0, 2e-6))
    assert _positive_zero(v.value) and _positive_zero(v.bound[0]) and v.bound[1] == 2e-6
    assert '"value": -0.0' not in str(v.to_json()) and "-0.0" not in repr(v.to_json()["bound"])


@pytest.mark.parametrize("enumerate_pairs", [None, "0"])
def test_a_tie_at_logit_zero_reports_zero_not_minus_zero(tmp_path, monkeypatch, enumerate_pairs):
    import onnx

    from fairspec.pipeline import check
    from onnx_nets import mlp_model

    if enumerate_pairs is not None:
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", enumerate_pairs)
    # z = relu(0.5 a + 0.25 s - 1): exactly 0 at (a 2, s F), 0.25 at (a 2, s M); dyadic, exact in float32
    layers = [(np.array([[0.5, 0.0, 0.25]]), np.array([-1.0]), True), (np.array([[1.0]]), np.array([0.0]), False)]
    onnx.save(mlp_model(layers, batch="N"), str(tmp_path / "m.onnx"))
    (tmp_path / ".git").mkdir()
    spec = tmp_path / "spec.fair"
    spec.write_text(SPEC)
    (v,) = check(spec).verdicts
    assert v.status in ("violated", "unknown"), v.reason
    assert v.value == 0.0 and _positive_zero(v.value), (v.value, v.bound)
    if v.bound is not None:
        assert _positive_zero(v.bound[0]), v.bound


def test_a_witness_in_json_has_no_negative_zero():
    from fairspec.verdict import Witness

    w = Witness(x=(2.0, -0.0, 1.0), x_prime=(2.0, -0.0, 0.0), outputs=(0.25, -0.0))
    j = w.to_json()
    assert all(_positive_zero(v) for v in j["x"] + j["x_prime"] + j["outputs"]), j
    assert j["x"] == [2.0, 0.0, 1.0]
