"""``class`` of a softmax runtime (its class is the argmax of its float probabilities) on the smt backend:
the attack the MILP path runs first (a pair whose class changes, replayed on the runtime) decides a
violated property; before, smt refused it outright ("the smt backend cannot bound this model's runtime
arithmetic"). A property that holds was unknown with that reason; since the class score's error bound
carries the softmax's (certify.argmax), z3 proves it (tests/test_class_softmax_head.py has more).

Against brute force on the library's own outputs over the whole (small) domain (``FAIRSPEC_ENUMERATE_PAIRS=0``);
dyadic weights, and a seed whose classes 0 and 1 tie (argmax takes the first)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

SPEC = """features F {
  a : int in [0, 3]
  b : int in [0, 3]
  s : {F, M} protected
}
model m = torch("m.pt", score = prob)
encode F for m { a : raw  b : raw  s : onehot }
"""

PROP = """
property p_@MODE@ {
  forall x, x' : F
  require x.* == x'.* except {s}
  ensure class(m(x)) == class(m(x'))
  mode = @MODE@
  using smt
  timeout = 600s
}
"""


def _grid():
    return np.array([[a, b, s == 0, s == 1] for a, b, s in itertools.product(range(4), range(4), range(2))],
                    dtype=np.float64)


def _model(folder, seed, gap, tie):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    W1 = rng.integers(-4, 5, (4, 4)) / 4.0
    W1[:, 2:] = 0.0
    W1[0, 2:] = (gap, -gap)
    b1 = rng.integers(-2, 3, 4) / 4.0
    W2 = rng.integers(-4, 5, (3, 4)) / 4.0
    b2 = rng.integers(-2, 3, 3) / 4.0 + np.arange(1, 4) / 64.0
    if tie:
        W2[1], b2[1] = W2[0], b2[0]
    l1, l2 = torch.nn.Linear(4, 4), torch.nn.Linear(4, 3)
    with torch.no_grad():
        for lin, W, b in ((l1, W1, b1), (l2, W2, b2)):
            lin.weight.copy_(torch.from_numpy(W.astype(np.float32)))
            lin.bias.copy_(torch.from_numpy(b.astype(np.float32)))
    seq = torch.nn.Sequential(l1, torch.nn.ReLU(), l2, torch.nn.Softmax(dim=1)).eval()
    torch.jit.save(torch.jit.script(seq), str(folder / "m.pt"))

    def probs(X):
        with torch.no_grad():
            return seq(torch.from_numpy(np.asarray(X, dtype=np.float32))).numpy()

    return probs


@pytest.mark.parametrize("seed,gap,tie", [(0, 2.0, False), (1, 1.0, False), (2, 2.0, True), (3, 0.0, False),
                                          (4, 0.0, True)])
def test_smt_class_of_a_softmax_runtime_agrees_with_brute_force(tmp_path, monkeypatch, seed, gap, tie):
    from fairspec.pipeline import check
    from fairspec.report import to_json

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    probs = _model(tmp_path, seed, gap, tie)
    k = np.argmax(probs(_grid()), axis=1)
    flips = any(k[2 * i] != k[2 * i + 1] for i in range(16))
    (tmp_path / "spec.fair").write_text(SPEC + "".join(PROP.replace("@MODE@", m) for m in ("find", "prove", "maximize")))
    out = {v["name"]: v for v in json.loads(to_json(check(tmp_path / "spec.fair")))["properties"]}
    if gap == 0.0:
        assert not flips
    for v in out.values():
        if flips:
            # the attack samples a 32-point domain: it finds a flip when there is one
            assert v["status"] == "violated", v
            w = v["witness"]
            kw = np.argmax(probs(np.array([w["x"], w["x_prime"]])), axis=1)
            assert kw[0] != kw[1], (v, kw)
        else:
            assert v["status"] == "holds" and v["how"] == "proved", v
