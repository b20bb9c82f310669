"""Small domains decided exactly (issue 20 item 3): certify's sigmoid comparisons and the
admissible pairs of the enumeration, strictness as written."""

from __future__ import annotations

import numpy as np
import pytest

from fairspec.certify.enumerate import SigmoidCheck, by_enumeration, pair_checks, sigmoid_bounds


def test_sigmoid_bounds_contain_the_logistic():
    import mpmath

    z = np.array([-40.0, -3.5, -1e-9, 0.0, 0.25, 2.0, 37.0])
    lo, hi = sigmoid_bounds(z)
    for v, a, b in zip(z, lo, hi):
        exact = 1 / (1 + mpmath.exp(-mpmath.mpf(v)))
        assert a <= exact <= b


def test_sigmoid_check_decides_only_what_it_can():
    z = np.array([1.0, 0.0, 0.0, 2.0])
    zp = np.array([-1.0, 0.0, 0.0, 2.0])
    fair, bad = SigmoidCheck(z, "<=", "0.5", zp).decide()
    assert fair.all() and not bad.any()                     # 0.4621... <= 0.5, and zeros
    fair, bad = SigmoidCheck(z, "<=", "0.4", zp).decide()
    assert list(fair) == [False, True, True, True] and list(bad) == [True, False, False, False]
    # a difference of exactly 0 against `< 0` is a violation; `<= 0` is fair
    fair, bad = SigmoidCheck(z[1:], "<", 0, zp[1:]).decide()
    assert not fair.any() and bad.all()
    assert by_enumeration(pair_checks("prob-of-logit", z, zp, eps="0.5"), count=4, claim="c").proof is not None
    r = by_enumeration(pair_checks("prob-of-logit", z, zp, eps="0.4"), count=4, claim="c")
    assert r.proof is None and r.index == 0 and r.violations == 1


def test_strict_tolerance_in_pair_checks():
    z = np.array([0.75, 0.5])
    zp = np.array([0.5, 0.75])
    assert by_enumeration(pair_checks("logit", z, zp, eps="0.25"), count=2, claim="c").proof is not None
    assert by_enumeration(pair_checks("logit", z, zp, eps="0.25", eps_strict=True), count=2, claim="c").proof is None


def test_admissible_pairs_honour_relaxed_strictness():
    from fairspec import ir
    from fairspec.kinds.pair_enumeration import _grid, admissible

    g = ("g", np.array([0.0, 1.0]))
    a = ("a", np.arange(0.0, 4.0))
    grid, V = _grid([g, a])
    for op, t, want in (("<=", 1.0, 1), ("<", 1.0, 0), ("<", 2.0, 1), ("<=", 0.5, 0), ("<", 1.5, 1)):
        prop = ir.IndividualFairness("p", "individual_fairness", None, free=("g",), relaxed=(("a", t),),
                                     relaxed_strict=("a",) if op == "<" else ())
        M = admissible(prop, None, grid, V)
        ia, ib = np.nonzero(M)
        assert (grid["g"][ia] != grid["g"][ib]).all()
        assert np.abs(grid["a"][ia] - grid["a"][ib]).max() == want, (op, t)


def test_interval_matmul_without_inputs():
    """Every input in a one-hot group: the first layer's remaining matrix has no columns."""
    from fairspec.certify.rounding import interval_matmul

    lo, hi = interval_matmul(np.zeros((3, 0)), np.array([0.5, -1.0, 0.0]), np.zeros(0), np.zeros(0))
    assert np.all(lo <= [0.5, -1.0, 0.0]) and np.all(hi >= [0.5, -1.0, 0.0]) and lo.shape == (3,)


def test_sigmoid_check_at_eps_zero_uses_monotonicity():
    """|sigmoid(z) - sigmoid(z')| <= 0 is broken by any z != z', however close (the logistic is
    strictly increasing), and `<` 0 by every pair."""
    z = np.array([1.0, 1.0, np.nextafter(1.0, 2.0)])
    zp = np.array([np.nextafter(1.0, 2.0), 1.0, 1.0])
    fair, bad = SigmoidCheck(z, "<=", 0, zp).decide()
    assert list(fair) == [True, True, False] and list(bad) == [False, False, True]
    fair, bad = SigmoidCheck(z, "<=", "0.25", zp).decide()
    assert fair.all()


def test_find_reports_the_witness_measure_not_the_domain_maximum(tmp_path, monkeypatch):
    """A violated verdict's value is its witness's measure: when the pair of the domain's largest difference
    is one another batch of the runtime may round away (``_rounded_apart``'s ``unsure``, simulated here on
    the largest pair), the witness is the largest pair every batch violates alike and the value is its
    measure, with ``details.witness_value`` / ``details.domain_maximum`` naming both. It reported the
    domain's maximum, a pair that is not the witness."""
    import json

    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from onnx_nets import relu_net

    import fairspec.kinds.pair_enumeration as pe
    import fairspec.kinds.pair_spread as ps
    from fairspec.pipeline import check
    from fairspec.report import to_json

    relu_net(tmp_path / "m.onnx", 3, heavy=(0, 1, 2, 3))
    seen = {}

    def rounded_apart(prop, model, X, s_points, sa, sb, ia, ib, kind, runtime):
        m = np.asarray(sa, dtype=np.float64) - np.asarray(sb, dtype=np.float64)
        seen["max"] = float(m.max())
        unsure = m == m.max()
        return {"near": int(unsure.sum()), "moved": int(unsure.sum()), "spread": 2.0 ** -20, "unsure": unsure}

    monkeypatch.setattr(pe, "_rounded_apart", rounded_apart)     # the enumeration's own calls
    monkeypatch.setattr(ps, "_rounded_apart", rounded_apart)     # fragile_pair's and batch_unsure's
    (tmp_path / "s.fair").write_text(
        "features F {\n  g : {A, B, C} protected\n  s : bool protected\n  a : int in [0, 9]\n}\n"
        'model m = onnx("m.onnx", score = logit)\n'
        "encode F for m {\n  g : onehot\n  s : raw\n  a : raw\n}\n"
        "property p {\n  forall x, x' : F\n  require x.* == x'.* except {s}\n"
        "  ensure |logit(m(x)) - logit(m(x'))| < 0.01\n}\n")
    (v,) = json.loads(to_json(check(tmp_path / "s.fair")))["properties"]
    assert v["status"] == "violated" and v["details"]["engine"] == "enumeration", v
    z, zp = v["witness"]["outputs"]
    assert v["value"] == z - zp < seen["max"]
    assert v["details"]["witness_value"] == v["value"] and v["details"]["domain_maximum"] == seen["max"]
