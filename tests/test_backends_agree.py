"""Spec-level cross-check: the MILP and SMT backends agree with each other and with
brute force over the whole (small) feature domain, on random ReLU networks read from
ONNX files through the spec's encoding (min-max scaling, one-hot, codes, raw).

The instances are tiny (60 inputs) and always decided, but z3's proof of close_prob for
seed 4 takes 80 s on a loaded 2-core machine: the budget is 1 h so that the test never
depends on the machine's speed (a time-out would make the verdict unknown and the
cross-check fail), and it still demands a decided verdict from both backends."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fairspec.pipeline import check
from onnx_nets import relu_net

onnx = pytest.importorskip("onnx")

SPEC = """
features F {{
  a : int in [0, 4]
  b : int in [0, 3]
  s : {{F, M}} protected
  c : {{X, Y, Z}}
}}
model net = onnx("net.onnx", output = "logit")
encode F for net {{
  a : minmax(lo = 0, hi = 4)
  b : raw
  s : onehot
  c : code
}}
property same_label {{
  forall x, x' : F
  require x.* == x'.* except {{s}}
  ensure label(net(x)) == label(net(x'))
  using {backend}
  timeout = 1h
}}
property close_prob {{
  forall x, x' : F
  require x.* == x'.* except {{s}}
  ensure |prob(net(x)) - prob(net(x'))| <= {eps}
  using {backend}
  timeout = 1h
}}
"""


def _net(path, seed):
    return relu_net(path, seed)


def _brute(weights, eps):
    """Ground truth over the whole domain: is there a label flip / a prob gap > eps?"""
    W1, b1, W2, b2 = (w.astype(np.float64) for w in weights)
    X, Xp = [], []
    for a, b, c in itertools.product(range(5), range(4), range(3)):
        X.append([a / 4, b, 1, 0, c])
        Xp.append([a / 4, b, 0, 1, c])
    f = lambda X: (np.maximum(np.array(X) @ W1.T + b1, 0) @ W2.T + b2)[:, 0]  # noqa: E731
    z, zp = f(X), f(Xp)
    p, pp = 1 / (1 + np.exp(-z)), 1 / (1 + np.exp(-zp))
    return bool(np.any((z > 0) != (zp > 0))), bool(np.any(np.abs(p - pp) > eps)), float(np.max(np.abs(p - pp)))


@pytest.mark.parametrize("seed", range(6))
def test_milp_smt_and_brute_force_agree(tmp_path, seed):
    weights = _net(tmp_path / "net.onnx", seed)
    flip, _, gap = _brute(weights, 0)
    eps = round(gap * (0.8 if seed % 2 else 1.25), 6)  # on either side of the true maximal gap
    _, gap_violated, _ = _brute(weights, eps)
    verdicts = {}
    for backend in ("milp", "smt"):
        (tmp_path / f"{backend}.fair").write_text(SPEC.format(backend=backend, eps=eps))
        rep = check(tmp_path / f"{backend}.fair")
        assert not rep.has_errors, rep.diagnostics
        verdicts[backend] = {v.name: v for v in rep.verdicts}
    for backend, by in verdicts.items():
        for name, truth in (("same_label", flip), ("close_prob", gap_violated)):
            v = by[name]
            expected = "violated" if truth else "holds"
            assert v.status == expected, (backend, name, v)
            if v.status == "holds":
                assert v.how == "proved"
            else:  # a replayed witness that differs only in s
                w = v.witness
                assert w is not None and w.features["s"] != w.features_prime["s"]
                assert {k for k in w.features if w.features[k] != w.features_prime[k]} == {"s"}
