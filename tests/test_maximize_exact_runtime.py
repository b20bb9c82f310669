"""maximize by enumeration on a runtime shown exact (audit s19 engines #7): when certify's
exact_runtime shows every point of every admissible pair scored exactly in every order (dyadic
weights), no batch size or order gives another maximum, so the interval is [v, v]; one point it
cannot show exact anywhere in the domain -- not only at the maximum's pair -- keeps the widening by
the runtime's spread."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

SPEC = """features F {
  a : int in [0, 5]
  b : int in [0, 3]
  s : {F, M}  protected
}
model m = MODEL
encode F for m {
  a : raw
  b : raw
  s : code
}

property mx {
  forall x, x' : F
  require x.* == x'.* except {s}
  ensure |logit(m(x)) - logit(m(x'))| <= 0.0
  mode = maximize
}

property ml {
  forall x, x' : F
  require x.* == x'.* except {s}
  ensure label(m(x)) == label(m(x'))
  mode = maximize
}
"""

#: z = relu(0.5 a - 0.25 b + 0.25 s - 1) - relu(0.5 - 0.5 a): every product and sum exact in float32
DYADIC = [(np.array([[0.5, -0.25, 0.25], [-0.5, 0.0, 0.0]]), np.array([-1.0, 0.5])),
          (np.array([[1.0, -1.0]]), np.array([0.0]))]


def _torch(folder: Path, layers) -> str:
    torch = pytest.importorskip("torch")
    mods = []
    for k, (W, b) in enumerate(layers):
        lin = torch.nn.Linear(W.shape[1], W.shape[0])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(W.astype(np.float32)))
            lin.bias.copy_(torch.from_numpy(b.astype(np.float32)))
        mods += [lin] + ([torch.nn.ReLU()] if k < len(layers) - 1 else [])
    torch.jit.save(torch.jit.script(torch.nn.Sequential(*mods).eval()), str(folder / "m.pt"))
    return 'torch("m.pt", score = logit)'


def _onnx(folder: Path, layers) -> str:
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    sys.path.insert(0, str(Path(__file__).parent))
    from onnx_nets import mlp_model

    m = mlp_model([(W, b, k < len(layers) - 1) for k, (W, b) in enumerate(layers)], "Identity", "y", batch="N")
    m.ir_version = 8
    onnx.save(m, str(folder / "m.onnx"))
    return 'onnx("m.onnx", output = "y", score = logit)'


def _check(folder: Path, model: str) -> dict:
    from fairspec.pipeline import check
    from fairspec.report import to_json

    (folder / "spec.fair").write_text(SPEC.replace("MODEL", model))
    return {p["name"]: p for p in json.loads(to_json(check(folder / "spec.fair")))["properties"]}


@pytest.mark.parametrize("save", [_torch, _onnx])
def test_a_dyadic_network_reports_the_exact_maximum(tmp_path, save):
    """The audit's network: every point is exact (points_not_exact 0), so the maxima are [0.25, 0.25]
    and [0, 0] (they were [0.25, 0.25 + 2e-5] and [0, 5.1e-6] on torch)."""
    got = _check(tmp_path, save(tmp_path, DYADIC))
    mx, ml = got["mx"], got["ml"]
    assert mx["details"]["engine"] == "enumeration" and ml["details"]["engine"] == "enumeration", got
    assert mx["bound"] == [0.25, 0.25], mx
    assert ml["bound"] == [0.0, 0.0], ml
    for v in (mx, ml):
        assert v["details"].get("runtime_rounding", {}).get("points_not_exact", 0) == 0, v


def test_a_float_network_keeps_the_spread(tmp_path):
    """The same network with weights off the dyadic grid: torch may round its points differently in
    another batch, so the upper end stays above the maximum."""
    layers = [(W + np.where(W != 0, 0.013, 0.0), b + 0.007) for W, b in DYADIC]
    got = _check(tmp_path, _torch(tmp_path, layers))
    for name in ("mx", "ml"):
        lo, hi = got[name]["bound"]
        assert hi > lo, got[name]


def test_one_inexact_point_away_from_the_maximum_keeps_the_spread(tmp_path):
    """The maximum's pairs are exact but other pairs are not: z = relu(0.5 s - 0.5 b) - relu(0.1 b).
    The maximum 0.5 comes from the pairs at b = 0, whose points are exact (0.1 * 0 is); so are b = 1, 2
    (0.1f times a power of two), but not b = 3 (0.1f * 3 rounds), and another batch may score those
    points otherwise: the interval is not collapsed on the maximum's pairs' exactness alone."""
    from fairspec.certify.exact_runtime import exact_points

    layers = [(np.array([[0.0, -0.5, 0.5], [0.0, 0.1, 0.0]]), np.array([0.0, 0.0])),
              (np.array([[1.0, -1.0]]), np.array([0.0]))]
    X = np.array([[a, b, s] for a in range(6) for b in range(4) for s in (0, 1)], dtype=np.float32)
    ok, _ = exact_points([(np.float32(W).astype(np.float64), np.float32(c).astype(np.float64), k == 0)
                          for k, (W, c) in enumerate(layers)], X)
    assert ok[X[:, 1] == 0].all() and not ok[X[:, 1] == 3].any()      # the premise
    mx = _check(tmp_path, _torch(tmp_path, layers))["mx"]
    lo, hi = mx["bound"]
    assert lo == 0.5 and hi > lo, mx
