"""The values fairspec REPORTS of ``prob(m(x), c)`` of a network whose runtime outputs logits (session 34): the
verdict is decided on certify's bounds of the REAL softmax (session 33); the numbers shown are the auditor's --
a witness's probability the float nearest the real softmax (exactly rounded), a measure ``|p_c(x) - p_c(x')|``
(a violated pair's value, maximize's lower end, the branch and bound's per-class value) the float at or below the
exact one (certify.softmax_exact), never fairspec's float64 softmax, which may lie an ulp above either. mpmath at
enough bits to see e**-spread beside 1 is the oracle."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

mpmath = pytest.importorskip("mpmath")


def _true_p(row, c) -> Fraction:
    row = [float(v) for v in np.atleast_1d(row)]
    if len(row) == 1:
        row = [0.0, row[0]]
    if all(v == row[c] for v in row):
        return Fraction(1, len(row))                 # exactly (mpmath would round 1/3)
    spread = max(row) - min(row)
    with mpmath.workprec(400 + int(3 * spread)):     # e**-spread beside 1 still seen (e < 2**1.45)
        den = sum(mpmath.exp(mpmath.mpf(v) - mpmath.mpf(row[c])) for v in row)
        man, exp = (1 / den).man_exp
        return Fraction(int(man)) * (Fraction(2) ** int(exp))


def _rows(rng, n, K):
    out = []
    for _ in range(n):
        base = rng.choice([0.0, 1.0, 20.0, 36.73, -36.73, 40.0, 700.0, -745.0, 3000.0])
        r = np.float32(base + rng.normal() * rng.choice([0, 1e-6, 1, 10]) +
                       rng.normal(size=K) * rng.choice([0.0, 1e-7, 0.02, 3.0, 900.0]))
        out.append(np.asarray(r, dtype=np.float64))
    return out


@pytest.mark.parametrize("K", [1, 2, 3, 5])
def test_nearest_and_differences_against_mpmath(K):
    from fairspec.certify.rounding import float_down
    from fairspec.certify.softmax_exact import difference_down, enclosure, measure_down, nearest

    rng = np.random.default_rng(100 + K)
    A, B = _rows(rng, 40, K), _rows(rng, 40, K)
    B[:5] = A[:5]
    B[5:10] = [a + 2.0 for a in A[5:10]]               # one shift apart: the same softmax
    for a, b in zip(A, B):
        for c in range(max(2, K)):
            ta, tb = _true_p(a, c), _true_p(b, c)
            lo, hi = enclosure(a, c)
            assert lo <= ta <= hi
            assert nearest(a, c) == float(ta), (a, c)                   # exactly rounded
            assert difference_down(a, b, c) == float_down(ta - tb), (a, b, c)
        m = max(abs(_true_p(a, c) - _true_p(b, c)) for c in range(max(2, K)))
        assert measure_down(a, b, range(max(2, K))) == float_down(m)


_SPEC = """features F {
  g : {A, B, C} protected
  s : bool protected
  a : int in [0, 9]
}
model m = onnx("m.onnx", score = logit, index = 1)
encode F for m {
  g : onehot
  s : raw
  a : raw
}
"""


def _prop(name, cls, eps, maximize):
    c = "c" if cls is None else str(cls)
    return (f"property {name} {{\n  forall x, x' : F\n  require x.* == x'.* except {{s}}\n  require x.a == 3\n"
            f"  ensure {'forall c: ' if cls is None else ''}|prob(m(x), {c}) - prob(m(x'), {c})| <= {eps}\n"
            + ("  mode = maximize\n" if maximize else "") + "}\n")


@pytest.mark.parametrize("enum", ["1", "0"])
def test_the_reviewers_network_reports_exact_values(tmp_path, monkeypatch, enum):
    """Logits (0, 36.73) and (0, 36.75): p_0 = 1.1177994163016945e-16 and 1.0956650033262366e-16 exactly rounded
    (float64's softmax: ...367e-16, an ulp above), |p_0 - p_0'| = 2.21344129754579488e-18, rounded down
    2.2134412975457946e-18 (float64's: ...7804e-18; maximize's lower end was the bounds' 2.21344129714e-18)."""
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    import onnx
    from onnx_nets import mlp_model

    from fairspec import pipeline
    from fairspec.certify.rounding import float_down

    m = mlp_model([(np.array([[0, 0, 0, 0, 0], [0, 0, 0, 0.02, 0]], dtype=np.float64), np.array([0.0, 36.73]),
                    False)], "Identity", "logit", batch="N")
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "m.onnx"))
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    Y = sess.run(None, {"x": np.array([[1, 0, 0, 0, 3], [1, 0, 0, 1, 3]], dtype=np.float32)})[0].astype(np.float64)
    p = {c: (_true_p(Y[0], c), _true_p(Y[1], c)) for c in (0, 1)}
    d = abs(p[0][0] - p[0][1])
    assert abs(d - abs(p[1][0] - p[1][1])) < d * Fraction(1, 2 ** 300)   # p_1 = 1 - p_0: the same measure
    (tmp_path / "s.fair").write_text(_SPEC + _prop("prove0", 0, "1e-18", False) + _prop("max0", 0, "1e-18", True)
                                     + _prop("every", None, "1e-18", False) + _prop("max1", 1, "1e-9", True))
    if enum == "0":
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    got = {v.name: v for v in pipeline.check(tmp_path / "s.fair").verdicts}
    for name in ("prove0", "max0", "every"):
        v = got[name]
        if enum == "0" and name == "every" and v.status == "unknown":
            continue
        assert v.status == "violated", (name, v.reason)
        assert v.value == float_down(d), (name, v.value, float(d))
        if name != "every":
            assert sorted(v.witness.outputs) == sorted(float(t) for t in p[0]), (name, v.witness.outputs)
    assert got["max0"].bound[0] == float_down(d), got["max0"].bound
    v = got["max1"]                                  # holds; class 1's probabilities near 1
    assert v.status == "holds", v.reason
    assert Fraction(v.value) <= d and v.bound[0] == v.value, (v.value, v.bound)


def test_kdisc_reports_the_real_softmax_exactly_rounded(tmp_path):
    """k-discrimination of class 0 of logits (s, 0, -20): p_0 = 0.4999999994847116 and 0.7310585782247575 exactly
    rounded (float64's softmax: ...163 and ...574): the counterfactuals' and the witness's probabilities."""
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    import onnx
    from onnx_nets import mlp_model

    from fairspec import pipeline

    W = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    m = mlp_model([(W, np.array([0.0, 0.0, -20.0]), False)], "Identity", "logit", batch="N")
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "m.onnx"))
    (tmp_path / "s.fair").write_text("""features F {
  s : bool protected
  a : int in [0, 9]
}
model m = onnx("m.onnx", score = logit)
encode F for m {
  s : raw
  a : raw
}
property below {
  k_discrimination(m, over {s}, class = 0, eps = 0.5) < 2
}
""")
    (v,) = pipeline.check(tmp_path / "s.fair").verdicts
    assert v.status == "violated", v.reason
    want = sorted(float(_true_p(np.float32([s, 0.0, -20.0]).astype(np.float64), 0)) for s in (0, 1))
    assert want == [0.4999999994847116, 0.7310585782247575]
    assert sorted(cf["prob"] for cf in v.details["counterfactuals"]) == want, v.details["counterfactuals"]
    assert sorted(v.witness.outputs) == want, v.witness.outputs
