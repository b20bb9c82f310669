"""``prob(m(x), c)`` of a network whose runtime outputs logits is the REAL softmax of its float logits (one
column: the real logistic, ``[1 - p, p]``), decided only where certify's rigorous bounds are certain
(session 33, review 4: fairspec's float64 ``1 / (1 + exp(-z))`` rounds z = 36.73 to 1 - 2**-52 and 36.75 to
1.0, 2.2e-16 apart, where the real logistic moves by 2.2e-18; ``<= 1e-16`` was called violated)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

mpmath = pytest.importorskip("mpmath")
PREC = 4000                    # bits: e**-745 apart at the ends of float64's range, exact enough for any pair here


def _exact(x) -> Fraction:
    man, exp = mpmath.mpf(x).man_exp
    return Fraction(int(man)) * (Fraction(2) ** int(exp))


def _true_p(row, c) -> Fraction:
    row = [float(v) for v in np.atleast_1d(row)]
    if len(row) == 1:
        row = [0.0, row[0]]
    with mpmath.workprec(PREC):    # local: another test module may set mpmath's global precision
        den = sum(mpmath.exp(mpmath.mpf(v) - mpmath.mpf(row[c])) for v in row)
        return _exact(1 / den)


def _rows(rng, n, K):
    """Logit rows biased to saturation, to ties and to neighbouring floats."""
    out = []
    for _ in range(n):
        base = rng.choice([0.0, 1.0, 20.0, 36.73, -36.73, 40.0, 700.0]) + rng.normal() * rng.choice([0, 1e-6, 1, 10])
        r = np.float32(base + rng.normal(size=K) * rng.choice([0.0, 1e-7, 0.02, 3.0]))
        out.append(np.asarray(r, dtype=np.float64))
    return np.array(out)


@pytest.mark.parametrize("K", [1, 2, 3])
def test_bounds_hold_the_real_softmax(K):
    from fairspec.certify.enumerate import softmax_class_bounds

    rng = np.random.default_rng(K)
    Y = _rows(rng, 60, K)
    for c in range(max(2, K)):
        lo, hi = softmax_class_bounds(Y, c)
        for i in range(Y.shape[0]):
            t = _true_p(Y[i], c)
            assert Fraction(float(lo[i])) <= t <= Fraction(float(hi[i])), (Y[i], c, lo[i], hi[i], float(t))


@pytest.mark.parametrize("K", [1, 2, 3])
@pytest.mark.parametrize("op", ["<", "<="])
def test_check_never_contradicts_the_truth(K, op):
    """Pairs biased to ties at eps (eps the true difference, a float near it, or 0): a decided pair is
    decided as the exact real softmax decides it."""
    from fairspec.certify.enumerate import softmax_check

    rng = np.random.default_rng(10 + K + (op == "<"))
    A, B = _rows(rng, 40, K), _rows(rng, 40, K)
    B[:10] = A[:10]                                            # equal rows: a difference of exactly 0
    B[10:20] = np.float32(A[10:20] + rng.choice([0.0, 0.02, 1e-6], size=(10, K)))
    decided = 0
    for c in range(max(2, K)):
        for i in range(A.shape[0]):
            d = _true_p(A[i], c) - _true_p(B[i], c)
            for eps in (abs(d), Fraction(float(abs(d))), Fraction(0), Fraction(1, 10 ** 16)):
                t = str(eps.numerator) + "/" + str(eps.denominator) if eps else "0"
                fair, bad = softmax_check(A[i:i + 1], B[i:i + 1], c, op, Fraction(eps)).decide()
                truth = d < eps if op == "<" else d <= eps
                assert not (fair[0] and bad[0])
                if fair[0]:
                    assert truth, (A[i], B[i], c, op, t)
                if bad[0]:
                    assert not truth, (A[i], B[i], c, op, t)
                decided += bool(fair[0] or bad[0])
    assert decided > 0


_SPEC = """features F {
  g : {A, B, C} protected
  s : bool protected
  a : int in [0, 9]
}
model m = onnx("MODEL", score = logit INDEX)
encode F for m {
  g : onehot
  s : raw
  a : raw
}
"""


def _prop(name, cls, op, eps):
    post = "forall c: " if cls is None else ""
    c = "c" if cls is None else str(cls)
    return (f"property {name} {{\n  forall x, x' : F\n  require x.* == x'.* except {{s}}\n  require x.a == 3\n"
            f"  ensure {post}|prob(m(x), {c}) - prob(m(x'), {c})| {op} {eps}\n  using milp\n}}\n")


@pytest.mark.parametrize("columns", [1, 2])
def test_logit_network_near_the_logistics_rounding(tmp_path, monkeypatch, columns):
    """The reviewer's networks (one column z = 36.73 + 0.02 s; two columns (0, z)): no `violated` where the real
    softmax's difference (2.2e-18) meets eps, by enumeration and by the search; every decided verdict agrees
    with the exact real softmax of onnxruntime's logits."""
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx_nets import mlp_model

    from fairspec import pipeline

    if columns == 1:
        W, b = np.array([[0, 0, 0, 0.02, 0]]), np.array([36.73])
    else:
        W, b = np.array([[0, 0, 0, 0, 0], [0, 0, 0, 0.02, 0]]), np.array([0.0, 36.73])
    m = mlp_model([(W, b, False)], "Identity", "logit", batch="N")
    m.ir_version = 8
    import onnx

    onnx.save(m, str(tmp_path / "m.onnx"))
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    X = np.array([[1, 0, 0, 0, 3], [1, 0, 0, 1, 3]], dtype=np.float32)
    Y = sess.run(None, {"x": X})[0].astype(np.float64)
    true_d = {c: abs(_true_p(Y[0], c) - _true_p(Y[1], c)) for c in (0, 1)}
    cases = [(c, op, e) for c, op, e in itertools.product([0, 1, None], ["<", "<="], ["1e-16", "1e-17", "3e-18", "0"])
             if (op, e) != ("<", "0")]          # FS507: never met
    text = _SPEC.replace("MODEL", "m.onnx").replace("INDEX", ", index = 1" if columns == 2 else "")
    text += "".join(_prop(f"p{i}", c, op, eps) for i, (c, op, eps) in enumerate(cases))
    spec = tmp_path / "s.fair"
    spec.write_text(text)
    for enum in ("1", "0"):
        if enum == "0":
            monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
        got = {v.name: v for v in pipeline.check(spec).verdicts}
        for i, (c, op, eps) in enumerate(cases):
            v = got[f"p{i}"]
            assert "internal error" not in v.reason, v.reason
            d = max(true_d.values()) if c is None else true_d[c]
            e = Fraction(eps)
            truth = d < e if op == "<" else d <= e
            if v.status == "violated":
                assert not truth, (enum, c, op, eps, v.reason)
            if v.status == "holds":
                assert truth, (enum, c, op, eps, v.reason)
        assert got[f"p{cases.index((0, '<=', '1e-16'))}"].status != "violated"    # class 0: 2.2e-18 apart
        assert got[f"p{cases.index((1, '<=', '1e-16'))}"].status != "violated"    # class 1: the reviewer's case


def _save(tmp_path, W, b, name="logit", symbolic=False):
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from onnx_nets import mlp_model

    m = mlp_model([(np.asarray(W, dtype=np.float64), np.asarray(b, dtype=np.float64), False)], "Identity", name,
                  batch="N")
    m.ir_version = 8
    if symbolic:                    # the output's width left symbolic: [N, "K"]
        d = m.graph.output[0].type.tensor_type.shape.dim[1]
        d.ClearField("dim_value")
        d.dim_param = "K"
    onnx.save(m, str(tmp_path / "m.onnx"))


@pytest.mark.parametrize("post", ["prob", "logit"])
def test_a_class_past_a_symbolic_width_is_fs417_at_check(tmp_path, post):
    """Review 4: an ONNX output of width [N, "K"] (lint cannot say FS417) and a class past its last column: the
    located FS417 at check time, not an internal error (exit 4)."""
    from fairspec import pipeline

    rng = np.random.default_rng(0)
    _save(tmp_path, rng.normal(size=(3, 5)), rng.normal(size=3), "y", symbolic=True)
    spec = tmp_path / "s.fair"
    spec.write_text(_SPEC.replace("MODEL", "m.onnx").replace(", score = logit INDEX", "") +
                    _prop("p", 5, "<=", "0.01").replace("x.a == 3", "x.a >= 0").replace("prob(", post + "("))
    rep = pipeline.check(spec)
    assert [d.code for d in rep.diagnostics] == ["FS417"], (rep.diagnostics, [v.reason for v in rep.verdicts])
    assert rep.diagnostics[0].span.line == 12
    assert "0 .. 2" in rep.diagnostics[0].hint


def test_logit_of_a_one_column_logit_network(tmp_path, monkeypatch):
    """Review 4: logit(m(x), c) of a one-column logit network z is z for c = 1 and -z for c = 0 (readout.class_logit,
    as prob(m(x), c) is [1 - p, p]), enumerated without an internal error; the solvers decide one class c and forall c."""
    from fairspec import pipeline

    _save(tmp_path, [[0, 0, 0, 0.5, 0]], [1.0])
    spec = tmp_path / "s.fair"
    text = _SPEC.replace("MODEL", "m.onnx").replace("INDEX", "")
    for i, (c, eps) in enumerate([(1, "0.5"), (0, "0.5"), (1, "0.25"), (None, "0.5"), (None, "0.25")]):
        text += _prop(f"p{i}", c, "<=", eps).replace("prob(", "logit(")
    spec.write_text(text)
    got = {v.name: v for v in pipeline.check(spec).verdicts}
    assert [got[f"p{i}"].status for i in range(5)] == ["holds", "holds", "violated", "holds", "violated"], \
        [v.reason for v in got.values()]
    assert sorted(map(abs, got["p2"].witness.outputs)) == [1.0, 1.5]
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    # the solvers (session 34): one class c is the binary logit post of z (|-z + z'| = |z - z'|), decided as the
    # enumeration decides it, a witness's outputs being column c's logits; forall c (session 35): both columns move
    # by |z - z'|, the logit post run once, its witness replayed with the post as written
    again = {v.name: v for v in pipeline.check(spec).verdicts}
    assert [again[f"p{i}"].status for i in range(5)] == ["holds", "holds", "violated", "holds", "violated"], \
        [v.reason for v in again.values()]
    assert again["p3"].proof is not None and again["p4"].details["class"] == 1
    assert sorted(map(abs, again["p4"].witness.outputs)) == [1.0, 1.5]
    assert all("internal error" not in (v.reason or "") for v in again.values())
    assert again["p0"].proof is not None and again["p1"].proof is not None
    w = again["p2"].witness
    assert sorted(map(abs, w.outputs)) == [1.0, 1.5]


def test_enumerated_maximum_is_no_more_than_the_real_one(tmp_path):
    """Session 34 (h1, the multiclass family's exact truth, multiclass-104000002-p7): maximize by enumeration of a
    logit network's ``|prob(m(x), c) - prob(m(x'), c)|`` reported as ``value`` the float64 softmax's largest
    difference, above the real softmax's (logits 36.73 and 36.75 beside two zeros: 2.2e-16 in float64 where the
    real difference is about 4.4e-18). The value is now the real softmax bounds' certain lower end, as the
    softmax branch and bound's: at most the exact maximum, the bound's upper end at least it."""
    pytest.importorskip("onnxruntime")
    import onnxruntime as ort

    from fairspec import pipeline

    _save(tmp_path, [[0, 0, 0, 0, 0], [0, 0, 0, 0.02, 0], [0, 0, 0, 0, 0]], [0.0, 36.73, 0.0])
    sess = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    X = np.array([[1, 0, 0, 0, 3], [1, 0, 0, 1, 3]], dtype=np.float32)
    Y = sess.run(None, {"x": X})[0].astype(np.float64)
    text = _SPEC.replace("MODEL", "m.onnx").replace("INDEX", "")
    text += _prop("p", 1, "<=", "1").replace("using milp", "mode = maximize")
    (tmp_path / "s.fair").write_text(text)
    v = {v.name: v for v in pipeline.check(tmp_path / "s.fair").verdicts}["p"]
    true_max = abs(_true_p(Y[0], 1) - _true_p(Y[1], 1))
    assert v.status == "holds" and v.details.get("engine") == "enumeration", (v.status, v.reason, v.details)
    assert Fraction(v.value) <= true_max, (v.value, float(true_max))
    assert Fraction(v.bound[0]) <= true_max <= Fraction(v.bound[1]), (v.bound, float(true_max))
