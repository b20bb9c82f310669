"""A ``label`` post on a scikit-learn LogisticRegression read by its predict_proba, with ``partitions``, at a
tie (decision_function exactly 0 at grid points: predict says class 0 there, predict_proba 1/2), and a
relaxed integral input whose tolerance admits no difference (``|x.w - x'.w| < 1`` or ``<= 0.5``) with more
values than the refinement enumerates as counterfactual cases (seed 46 network-sklearn-solver 46000000 p3).

Two things left it unknown (session 27):

* such a relaxed input was a relaxed input to the pair problem, so the partitions' decision pass refused the
  problem ("the relaxed inputs are not all integral with at most 16 values each"): it is now tied
  (``kinds.lowering.pair_relaxed``: the same pairs);
* the partitions' proofs mixed a branch-and-bound certificate through the label's own readout (predict is the
  sign of decision_function: ``Runtime.label_readout``, ``("logit", 0)``) with enumerations against the
  declared readout (predict_proba, 1/2), and ``certify.partitions.combine_partitions`` accepted only the
  declared one: ``whole_claim(label_readout=...)`` names the other readout of the same decision.

Every verdict is checked against brute force on the library's own predict over every pair.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import fairspec

HEAD = """features F {
  g : {A, B} protected
  x : int in [0, 5]
  w : int in [0, 40]
}
model m = sklearn("m.skops")
encode F for m {
  g : onehot
  x : raw
  w : raw
}
"""
PROP = """property p{k} {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  require |x.w - x'.w| {tol}
  ensure label(m(x)) == label(m(x'))
  using milp
  {using}
}}
"""
CASES = [("< 1", "partitions = 3"), ("<= 0.5", "partitions = 2"), ("< 1", "mode = find\n  partitions = 2"),
         ("< 1", "mode = maximize\n  partitions = 2"), ("<= 0.5", "mode = prove")]
GRID = np.array([[g, x, w] for g in range(2) for x in range(6) for w in range(41)], dtype=np.float64)


def _lr(ca: float, cb: float, b: float, cw: float = 0.25):
    pytest.importorskip("sklearn")
    from sklearn.linear_model import LogisticRegression

    X = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 5.0, 40.0]])
    est = LogisticRegression()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, [0, 1])
    est.coef_ = np.array([[ca, cb, 1.0, cw]])
    est.intercept_ = np.array([b])
    return est


def _encoded(P: np.ndarray) -> np.ndarray:
    return np.column_stack([P[:, 0] == 0, P[:, 0] == 1, P[:, 1], P[:, 2]]).astype(np.float64)


def _point(u) -> tuple:
    """A witness's model inputs (g one-hot, x, w) as a grid point (g index, x, w)."""
    return float(np.argmax(u[:2])), float(u[2]), float(u[3])


def _labels(est) -> dict:
    lab = est.predict(_encoded(GRID)) == est.classes_[1]
    return {tuple(r): bool(v) for r, v in zip(GRID, lab)}


def _flips(lab: dict) -> bool:
    return any(lab[a] != lab[b] for a, b in itertools.product(lab, lab) if a[1:] == b[1:] and a[0] != b[0])


@pytest.mark.parametrize("ca, cb, b, cw, exact", [
    (0.5, 0.5, -4.0, 0.25, True),       # z = 0 exactly at x + w / 4 = 3.5: class 0 for both codes, holds
    (0.5, 0.25, -4.0, 0.25, True),      # z = 0.25 against 0 at x + w / 4 = 3.75: a flip, violated
    (0.5, 0.5, -4.0 + 2.0 ** -48, 0.25, True),  # z = 2**-48 > 0: class 1 for both, holds
    # z = 2**-50: exact in the order scikit-learn adds, but certify's exactness bound (the terms' absolute
    # sum, 8: a grid of 2**-49) does not show it for every order: unknown allowed, never wrong
    (0.5, 0.5, -4.0 + 2.0 ** -50, 0.25, False),
    (0.5, 0.5 - 2.0 ** -50, -4.0, 0.25, False),  # the codes' logits 2**-50 apart at z = 0: class 0 for both
    # the codes' logits 1/4 apart, on a grid of 1/2: (0, -1/4) class 0 for both, (1/2, 1/4) class 1: holds, the
    # branch and bound proves the partitions away from z = 0, the enumeration the one at it (the proofs combine
    # through the label's two readouts)
    (0.5, 0.25, -4.0, 0.5, True),
    (0.5, 0.0, -4.0, 0.5, True),        # 1/2 apart: (1/2, 0) is a flip, violated
])
def test_label_tie_with_partitions_against_predict(tmp_path, monkeypatch, ca, cb, b, cw, exact):
    skio = pytest.importorskip("skops.io")
    est = _lr(ca, cb, b, cw)
    skio.dump(est, tmp_path / "m.skops")
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    lab = _labels(est)
    flips = _flips(lab)
    (tmp_path / "s.fair").write_text(HEAD + "".join(PROP.format(k=k, tol=t, using=u) for k, (t, u) in enumerate(CASES)))
    rep = fairspec.check(tmp_path / "s.fair")
    assert not [d for d in rep.diagnostics if d.severity == "error"], rep.diagnostics
    for k, (tol, using) in enumerate(CASES):
        v = rep[f"p{k}"]
        case = f"{tol} / {using}"
        if v.status == "violated":
            assert flips, (case, v.reason)
            assert lab[_point(v.witness.x)] != lab[_point(v.witness.x_prime)], case
        if v.status == "holds":
            assert not flips and v.how == "proved" and v.proof is not None, (case, v.reason)
        if exact:           # every logit near 0 is exact in any batch: the enumeration decides
            assert v.status == ("violated" if flips else "holds"), (case, v.status, v.reason)


def test_a_tolerance_below_one_on_an_integer_ties_it():
    from types import SimpleNamespace

    from fairspec.kinds.lowering import pair_relaxed

    enc = SimpleNamespace(columns=[SimpleNamespace(offset=0, feature="w"), SimpleNamespace(offset=1, feature="v"),
                                   SimpleNamespace(offset=2, feature="r")])
    ops = {"w": "<", "v": "<=", "r": "<="}
    prop = SimpleNamespace(relaxed_op=lambda f: ops[f])
    low = SimpleNamespace(relaxed=((0, 1.0), (1, 0.5), (2, 0.5)), integer=np.array([True, True, False]))
    assert pair_relaxed(prop, enc, low) == ((2, 0.5),)          # a real input keeps its tolerance
    low = SimpleNamespace(relaxed=((0, 1.5), (1, 1.0), (2, 2.0)), integer=np.array([True, True, False]))
    assert pair_relaxed(prop, enc, low) == ((0, 1.0), (1, 1.0), (2, 2.0))
