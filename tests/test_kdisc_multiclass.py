"""k-discrimination over a multiclass model's outputs (issue 25, fairspec/kinds/kdisc_outputs.py):
k = the number of distinct predicted classes among an individual's counterfactuals, or class c's
probability in eps-buckets, decided by enumeration on the runtime and checked here by brute force
(forests whose votes tie, a 3-logit ONNX network)."""

from __future__ import annotations

import itertools
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

pytest.importorskip("skops")

FEATS = "  g : {g0, g1, g2, g3} protected\n  a : int in [0, 4]\n  b : int in [0, 3]"
ENC = "  g : code\n  a : raw\n  b : raw"


def _grid():
    return np.array(list(itertools.product(range(4), range(5), range(4))), dtype=float)


def _forest(seed=3):
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(seed)
    X = _grid()[rng.integers(0, 80, 120)]
    y = ((X[:, 0] + X[:, 1] + rng.integers(0, 2, 120)) % 3).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RandomForestClassifier(n_estimators=4, max_depth=3, random_state=seed).fit(X, y)


def _write(tmp_path, decl, body):
    p = tmp_path / "s.fair"
    p.write_text(f"features F {{\n{FEATS}\n}}\n{decl}\nencode F for m {{\n{ENC}\n}}\n" + body)
    return str(p)


def _verdicts(path):
    from fairspec.pipeline import check

    rep = check(path)
    assert not rep.has_errors, rep.diagnostics
    return {v.name: v for v in rep.verdicts}


def _brute_classes(cls):
    """max over individuals (a, b) of the distinct classes over g."""
    C = cls.reshape(4, 5, 4)
    return max(len(set(C[:, a, b].tolist())) for a in range(5) for b in range(4))


def _brute_buckets(p, eps: str):
    e = Fraction(eps)
    nb = math.ceil(1 / e)
    P = p.reshape(4, 5, 4)
    return max(len({min(nb - 1, math.floor(Fraction(float(v)) / e)) for v in P[:, a, b]}) for a in range(5)
               for b in range(4))


def test_tree_classes_and_buckets_against_brute_force(tmp_path):
    import skops.io as sio

    est = _forest()
    sio.dump(est, tmp_path / "m.skops")
    G = _grid()
    cls = np.searchsorted(est.classes_, est.predict(G))
    kmax = _brute_classes(cls)
    pb = _brute_buckets(est.predict_proba(G)[:, 1], "0.25")
    body = "".join(f"property {n} {{\n  {c}\n}}\n" for n, c in [
        ("classes_at", f"k_discrimination(m, over {{g}}) <= {kmax}"),
        ("classes_below", f"k_discrimination(m, over {{g}}) < {kmax}"),
        ("prob_at", f"k_discrimination(m, over {{g}}, class = 1, eps = 0.25) <= {pb}"),
        ("prob_below", f"k_discrimination(m, over {{g}}, class = 1, eps = 0.25) < {pb}")])
    v = _verdicts(_write(tmp_path, 'model m = sklearn("m.skops")', body))
    assert v["classes_at"].status == "holds" and v["classes_at"].proof is not None
    assert v["classes_at"].value == kmax
    assert v["classes_below"].status == "violated" and v["classes_below"].value == kmax
    cf = v["classes_below"].details["counterfactuals"]
    assert len({c["class"] for c in cf}) == kmax
    assert v["prob_at"].status == "holds" and v["prob_at"].value == pb
    assert v["prob_below"].status == "violated"


def test_network_classes_against_brute_force(tmp_path):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(4)
    W = (rng.integers(-4, 5, size=(3, 3)) / 4).astype(np.float32)
    b = np.zeros(3, dtype=np.float32)
    b[1] = np.float32(-(W[1] - W[0]) @ np.array([1.0, 2.0, 1.0], dtype=np.float32))   # a tie at one point
    g = helper.make_graph([helper.make_node("Gemm", ["x", "W", "b"], ["out"], transB=1)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [None, 3])],
                          [numpy_helper.from_array(W, "W"), numpy_helper.from_array(b, "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(m, tmp_path / "m.onnx")
    G = _grid().astype(np.float32)
    Y = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"]).run(None, {"x": G})[0]
    kmax = _brute_classes(np.argmax(Y, axis=1))
    body = (f"property at {{\n  k_discrimination(m, over {{g}}) <= {kmax}\n}}\n"
            f"property below {{\n  k_discrimination(m, over {{g}}) < {kmax}\n}}\n")
    v = _verdicts(_write(tmp_path, 'model m = onnx("m.onnx", output = "out")', body))
    assert v["at"].status == "holds" and v["at"].how == "proved" and v["at"].value == kmax
    assert (v["below"].status == "violated") == (kmax >= 1) and v["below"].value == kmax


def test_eps_does_not_apply_to_classes(tmp_path):
    import skops.io as sio

    from fairspec.pipeline import check

    sio.dump(_forest(), tmp_path / "m.skops")
    rep = check(_write(tmp_path, 'model m = sklearn("m.skops")',
                       "property p {\n  k_discrimination(m, over {g}, eps = 0.1) < 2\n}\n"))
    assert any(d.code == "FS208" for d in rep.diagnostics)


def test_tree_cells_on_a_continuous_feature(tmp_path):
    """A real feature: no finite domain, so the cells of the forest's split tests decide (its
    thresholds lie between the integers, so the integer grid meets every cell)."""
    import skops.io as sio

    est = _forest(5)
    sio.dump(est, tmp_path / "m.skops")
    cls = np.searchsorted(est.classes_, est.predict(_grid()))
    kmax = _brute_classes(cls)
    p = tmp_path / "s.fair"
    p.write_text(f"features F {{\n{FEATS.replace('a : int in [0, 4]', 'a : real in [0, 4]')}\n}}\n"
                 f'model m = sklearn("m.skops")\nencode F for m {{\n{ENC}\n}}\n'
                 f"property at {{\n  k_discrimination(m, over {{g}}) <= {kmax}\n}}\n"
                 f"property below {{\n  k_discrimination(m, over {{g}}) < {kmax}\n}}\n")
    v = _verdicts(str(p))
    assert v["at"].status == "holds" and v["at"].proof is not None and v["at"].value == kmax
    assert "cells" in v["at"].details.get("engine", "")
    assert v["below"].status == "violated" and v["below"].value == kmax
