"""maximize of a label post on the solver path (audit s18/h3, finding 3): the value reported is one the
runtime reaches. A logit head: the replayed pair's min(z, -z') on the runtime. A probability head
(Sigmoid): the runtime outputs no logit, so no value and no interval, as the enumeration of the
runtime reports none (the solver's float64 logit is not a number the runtime computes)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

SPEC = """features F {
  a : int in [0, 3]
  b : int in [0, 3]
  s : {F, M} protected
}
model m = onnx("m.onnx"SCORE)
encode F for m {
  a, b : raw
  s : code
}
property mlab {
  forall x, x' : F
  require x.* == x'.* except {s}
  ensure label(m(x)) == label(m(x'))
  mode = maximize
  timeout = 60s
}
"""


@pytest.mark.parametrize("final", [None, "Sigmoid"])
def test_maximize_label_value_is_the_runtimes(tmp_path, monkeypatch, final):
    import onnx

    from fairspec.pipeline import check
    from onnx_nets import mlp_model

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    layers = [(np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]]), np.array([-1.0, 0.0]), True),
              (np.array([[1.0, 0.5]]), np.array([-1.3]), False)]          # z(a=1, b=0): -1.3 (F), 0.7 (M)
    onnx.save(mlp_model(layers, final, batch="N"), str(tmp_path / "m.onnx"))
    (tmp_path / ".git").mkdir()
    spec = tmp_path / "spec.fair"
    spec.write_text(SPEC.replace("SCORE", "" if final is None else ", score = prob"))
    (v,) = check(spec).verdicts
    assert v.status == "violated", v.reason
    z, zp = v.witness.outputs
    if final is None:
        assert v.value == max(min(z, -zp), min(zp, -z))         # the replayed runtime logits' measure
        assert v.bound[0] == v.value <= v.bound[1]
    else:
        assert v.value is None and v.bound is None, (v.value, v.bound)
        assert v.details["maximum"].startswith("no value")
