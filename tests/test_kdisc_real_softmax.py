"""k-discrimination of ``prob(m(x), c)`` on a logit network buckets the REAL softmax of the runtime's logits
(certify's :func:`~fairspec.certify.enumerate.softmax_class_bounds`), never fairspec's float64 softmax
(session 33): logits (0, 0, -200) have p_0 = 1 / (2 + e**-200) = 0.5 - 7e-88, bucket 0 of eps = 0.5, which
the float64 softmax rounds onto the boundary 0.5 (bucket 1). With s moving logit 0 by 1 (p_0 = 0.73, bucket
1) the real k is 2, and ``k < 2`` was `holds (proved: enumeration)`."""

from __future__ import annotations

import numpy as np
import pytest

_SPEC = """features F {
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
property at {
  k_discrimination(m, over {s}, class = 0, eps = 0.5) <= 1
}
property quarter {
  k_discrimination(m, over {s}, class = 0, eps = 0.25) < 2
}
property two {
  k_discrimination(m, over {s}, class = 0, eps = 0.25) <= 2
}
"""


def _check(tmp_path, far: float):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    import onnx
    from onnx_nets import mlp_model

    from fairspec import pipeline

    W = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]])     # s moves logit 0 by 1; a moves nothing
    m = mlp_model([(W, np.array([0.0, 0.0, far]), False)], "Identity", "logit", batch="N")
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "m.onnx"))
    (tmp_path / "s.fair").write_text(_SPEC)
    return {v.name: v for v in pipeline.check(tmp_path / "s.fair").verdicts}


def test_a_tie_of_the_real_softmax_at_a_bucket_boundary_is_not_decided_by_float64(tmp_path):
    """(0, 0, -200) and (1, 0, -200): real buckets {0, 1} (eps 0.5) and {1, 2} (eps 0.25), k = 2 both; the float64
    softmax's 0.5 put both counterfactuals in one bucket (k = 1: `holds` for `k < 2`, wrong). Certify's bounds
    of 0.5 - 7e-88 straddle the boundary: unknown (never holds)."""
    got = _check(tmp_path, -200.0)
    for name in ("below", "at", "quarter"):
        assert got[name].status != "holds", (name, got[name].reason)      # the truth: k = 2, violated
        assert "internal error" not in got[name].reason
    assert got["two"].status == "holds", got["two"].reason                 # k <= 2: certain whatever the bucket


def test_an_uncertain_bucket_is_said_so(tmp_path):
    """Session 34: the unknown near a bucket boundary began "decided by enumeration ... too many individuals" (the
    domain has 10): it says the bucket is not certain, and names an individual, its k bounds, the counterfactual
    and its probability's bounds across the boundary."""
    got = _check(tmp_path, -200.0)
    why = got["below"].reason
    assert got["below"].status == "unknown", why
    assert "too many individuals" not in why, why
    assert why.startswith("the bucket of an individual's counterfactual is not certain: individual {a: "), why
    assert "has k in [1, 2]: at {s: false} class 0's probability lies in [0.4999" in why, why
    assert "across the bucket boundary 0.5 (eps = 0.5)" in why and "all 10 individuals" in why, why


def test_a_softmax_clear_of_the_boundary_is_still_decided(tmp_path):
    """(0, 0, -20): p_0 = 0.5 - 5e-10, certainly bucket 0 of eps 0.5 and 1 of eps 0.25: decided, as the truth."""
    got = _check(tmp_path, -20.0)
    assert got["below"].status == "violated", got["below"].reason
    assert got["at"].status == "violated", got["at"].reason
    assert got["quarter"].status == "violated", got["quarter"].reason
    assert got["two"].status == "holds", got["two"].reason


def test_kdisc_by_enumeration_buckets_the_bounds_not_the_floats():
    """certify: with ``bounds`` an individual's buckets are those of [lo, hi]; the float scores decide nothing."""
    from fairspec.certify.enumerate import kdisc_by_enumeration

    s = np.array([0.5, 0.7])                       # float64's view: one bucket of eps 0.5
    lo, hi = np.array([0.5 - 1e-12, 0.7]), np.array([0.5 - 1e-13, 0.7])     # the real value: below 0.5
    kw = dict(K=2, eps="0.5", op="<", k=2, logit=False, claim="c")
    assert kdisc_by_enumeration(s, **kw).proof is not None
    r = kdisc_by_enumeration(s, bounds=(lo, hi), **kw)
    assert r.proof is None and list(r.k_lo) == [2] and list(r.k_hi) == [2]
    r = kdisc_by_enumeration(s, bounds=(lo, np.array([0.5, 0.7])), **kw)        # straddles: undecided
    assert r.proof is None and list(r.k_lo) == [1] and list(r.k_hi) == [2]


_SWEEP = """features F {
  s : bool protected
  a : int in [0, 2]
}
model m = onnx("m.onnx", score = logit)
encode F for m {
  s : raw
  a : raw
}
"""


@pytest.mark.parametrize("far", [-200.0, -37.0, -20.0])
@pytest.mark.parametrize("ws", [1.0, 1e-7])
def test_every_decided_verdict_is_the_exact_real_softmaxs(tmp_path, far, ws):
    """Brute force: three logit columns (s * ws + 0.5 a, 0, far), every class, eps 0.5 / 0.25, k < 2, <= 1, <= 2:
    a decided verdict agrees with the buckets of onnxruntime's logits' exact softmax (mpmath, 2000 bits).
    Before: 84 of 1512 such verdicts (42 holds, 42 violated) were wrong; far = -37, ws = 1e-7 among them."""
    mpmath = pytest.importorskip("mpmath")
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    import onnx
    from fractions import Fraction

    from onnx_nets import mlp_model

    from fairspec import pipeline

    W = np.zeros((3, 2))
    W[0] = (ws, 0.5)
    m = mlp_model([(W, np.array([0.0, 0.0, far]), False)], "Identity", "logit", batch="N")
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "m.onnx"))
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    props = [(c, e, op, k) for c in range(3) for e in ("0.5", "0.25") for op, k in (("<", 2), ("<=", 1), ("<=", 2))]
    (tmp_path / "s.fair").write_text(_SWEEP + "".join(
        f"property p{i} {{\n  k_discrimination(m, over {{s}}, class = {c}, eps = {e}) {op} {k}\n}}\n"
        for i, (c, e, op, k) in enumerate(props)))
    got = {v.name: v for v in pipeline.check(tmp_path / "s.fair").verdicts}
    Y = {a: sess.run(None, {"x": np.array([[0, a], [1, a]], dtype=np.float32)})[0].astype(np.float64) for a in range(3)}
    for i, (c, e, op, k) in enumerate(props):
        eps, kmax = Fraction(e), 0
        for a in range(3):
            buckets = set()
            for row in Y[a]:
                with mpmath.workprec(2000):          # local: the bucket of a value 7e-88 below a boundary
                    p = 1 / sum(mpmath.exp(mpmath.mpf(float(v)) - mpmath.mpf(float(row[c]))) for v in row)
                    buckets.add(min(int(mpmath.floor(p * eps.denominator / eps.numerator)), int(1 / eps) - 1))
            kmax = max(kmax, len(buckets))
        truth = kmax < k if op == "<" else kmax <= k
        v = got[f"p{i}"]
        assert "internal error" not in v.reason
        if v.status == "holds":
            assert truth, (c, e, op, k, kmax, v.reason)
        if v.status == "violated":
            assert not truth, (c, e, op, k, kmax, v.reason)
