"""Soundness case network-solver-125000000-p2 (session 37, h2): `mode = maximize` of a `label` post on an ONNX
network of two logit columns read with `score = logit, index = 1` (the label is the argmax's class,
Readout.argmax_decision). The milp path reported [2.328345044401328, ...]: the lower end was its best pair's
measure min(z, -z') on fairspec's float64 network, because kinds/pair_runtime.runtime_pair_value gave no runtime
measure for an argmax label (the replay's scores are 0/1 decisions) and the solver's value stayed. On
onnxruntime that pair -- and every pair of the 96-point domain -- measures at most 2.3283448815345764
(z = y1 - y0 of the runtime's float32 outputs): a lower end above the true maximum. Now the replayed pair's
runtime margins y_i - max_{j != i} y_j (model.score) give the value. Failed before the fix (2.328345044401328).

Re-run: ``python bench/soundness.py --case network-solver-125000000-p2``."""

from __future__ import annotations

import base64
import itertools

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")

# the case's 5-6-2 ReLU network (m.onnx of the case folder, 356 bytes)
MODEL = ("CAg62QIKFQoBeAoCVzAKAmIwEgJoMCIER2VtbQoOCgJoMBICcjAiBFJlbHUKFAoCcjAKA3R3bxIEcjB4MiIDTXVsChYKBHIweDIKAlcxEgJt"
         "MSIGTWF0TXVsChAKAm0xCgJiMRIBeiIDQWRkChIKAXoSA291dCIISWRlbnRpdHkSA25ldCpICAUIAxABQgJXMEo8wORBvP2U9D4/9hg/B0Gy"
         "vVOxfr7wzAc+aN+9PgM14z/WgtM/tXrivuRkeT8c6iU/UmOQPgmEBz4Qa8m+KhYIAxABQgJiMEoMpb0YPpOy976Yclu/Kg0QAUIDdHdvSgQA"
         "AABAKiQIAwgCEAFCAlcxShjLefm+/olVv9pmrL3jJEu/lrwcPz8RSz4qEggCEAFCAmIxSggD5wc+CnOsQFoUCgF4Eg8KDQgBEgkKAxIBTgoC"
         "CAViFgoDb3V0Eg8KDQgBEgkKAxIBTgoCCAJCBAoAEBE=")

SPEC = """features F {
  g : int in [0, 2]  protected
  f0 : bool
  f1 : {c0, c1}
  f2 : int in [0, 7]
}
model m = onnx("m.onnx", output = "out", index = 1, score = logit)
encode F for m {
  g : standard(mean = 0, std = 0.5)
  f0 : raw
  f1 : onehot
  f2 : standard(mean = 0, std = 1.5)
}

property p2 {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure label(m(x)) == label(m(x'))
  mode = maximize
  timeout = 20s
}
"""


def _true_maximum(data: bytes) -> float:
    """min(z, -z') over every pair of the domain differing in g only, z = y1 - y0 on onnxruntime."""
    s = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    pts = list(itertools.product(range(3), range(2), range(2), range(8)))
    X = np.array([[g / 0.5, f0, f1 == 0, f1 == 1, f2 / 1.5] for g, f0, f1, f2 in pts], dtype=np.float32)
    Y = s.run(None, {"x": X})[0].astype(np.float64)
    z = Y[:, 1] - Y[:, 0]
    return max(min(z[i], -z[j]) for i, p in enumerate(pts) for j, q in enumerate(pts)
               if p[1:] == q[1:] and p[0] != q[0])


def test_argmax_label_maximize_lower_end_is_the_runtime_measure(tmp_path, monkeypatch):
    from fairspec.pipeline import check

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")       # the solver path, as the campaign ran it
    data = base64.b64decode(MODEL)
    (tmp_path / "m.onnx").write_bytes(data)
    (tmp_path / "s.fair").write_text(SPEC)
    truth = _true_maximum(data)
    assert truth == 2.3283448815345764
    rep = check(str(tmp_path / "s.fair"))
    assert not rep.has_errors, rep.diagnostics
    (v,) = rep.verdicts
    status = v.status.value if hasattr(v.status, "value") else str(v.status)
    assert status == "violated", (status, v.reason)
    assert v.value is not None and v.value <= truth, (v.value, truth)     # 2.328345044401328 before the fix
    if v.bound is not None:
        assert v.bound[0] <= truth <= v.bound[1], (v.bound, truth)
