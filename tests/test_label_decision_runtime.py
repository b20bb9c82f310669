"""A binary scikit-learn linear classifier's label is its ``predict``, ``decision_function(X) > 0``
(``LinearClassifierMixin.predict``'s own code): certify bounds the runtime of a ``label`` post by that
float64 logit's error (``fairspec.models.runtime_layers.predict_is_decision``), not by the logistic
``predict_proba`` rounds, so a decision a few ulps below 0 on rows the runtime computes exactly is
proved (bench/results/exact_ties_s25.md: seed-46 network-sklearn-solver 46000010 p6, 46000014 p2 / p3
/ p5). Every verdict is checked against brute force over every pair with the model's own ``predict``,
at the decision exactly 0 too (a flip there is violated; a tie that flips nothing is never violated).
The solvers decide: pair enumeration is off."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from conftest import LABEL_PAIR_PROP

import fairspec

HEAD = """features F {
  g : {A, B, C} protected
  f0 : int in [17, 20]
}
model m = sklearn("m.skops")
encode F for m {
  g : code
  f0 : raw
}
"""
PROP = LABEL_PAIR_PROP
# the certified branch and bound (partitions), exact smt and the plain milp path (HiGHS, SCIP: its tie handed
# to certify_tie since session 26, seed-46 46000010 p4) prove the near-tie
CASES = ["partitions = 3", "using smt", "using milp\n  partitions = 2", "using milp", "using milp\n  engine = scip"]
PROVES = (True, True, True, True, True)
GRID = np.array([[g, f] for g in range(3) for f in range(17, 21)], dtype=np.float64)


@pytest.mark.parametrize("intercept, truth", [
    (-38.5 - 2.0 ** -47, "holds"),        # the largest decision -7.1e-15: no pair at 0, E = 0 on the box
    (-36.75 - 2.0 ** -47, "violated"),    # -7.1e-15 at g + f0 = 21 against 1.75 - 7.1e-15 at 22
    (-38.5 + 2.0 ** -47, "violated"),     # +7.1e-15 at g + f0 = 22 against -1.75 at 21
    (-36.75, "violated"),                 # exactly 0 at g + f0 = 21 (label 0) against 1.75 at 22 (label 1)
    (-38.5, "tie"),                       # exactly 0 at g + f0 = 22 (label 0), below 0 elsewhere: no flip
])
def test_label_of_a_linear_classifier_near_and_at_zero(tmp_path, monkeypatch, intercept, truth):
    pytest.importorskip("sklearn")
    skio = pytest.importorskip("skops.io")
    from sklearn.linear_model import LogisticRegression

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    est = LogisticRegression().fit(np.array([[0.0, 17.0], [2.0, 20.0], [1.0, 18.0], [0.0, 20.0]]), [0, 1, 0, 1])
    est.coef_, est.intercept_ = np.array([[1.75, 1.75]]), np.array([intercept])
    skio.dump(est, tmp_path / "m.skops")
    lab = {tuple(r): int(p) for r, p in zip(GRID, est.predict(GRID))}
    flips = any(lab[a] != lab[b] for a, b in itertools.product(lab, lab) if a[1] == b[1] and a[0] != b[0])
    assert flips == (truth == "violated")
    if truth == "tie":
        assert 0.0 in est.decision_function(GRID)
    props = "".join(PROP.format(k=k, using=u) for k, u in enumerate(CASES))
    (tmp_path / "s.fair").write_text(HEAD + props)
    rep = fairspec.check(tmp_path / "s.fair")
    assert not [d for d in rep.diagnostics if d.severity == "error"], rep.diagnostics
    for k in range(len(CASES)):
        v = rep[f"p{k}"]
        if truth == "holds" and PROVES[k]:
            assert v.status == "holds" and v.how == "proved" and v.proof is not None, (CASES[k], v.reason)
        elif truth == "violated":
            assert v.status == "violated", (CASES[k], v.reason)
            w = v.witness
            assert lab[tuple(map(float, w.x))] != lab[tuple(map(float, w.x_prime))]
        else:       # a tie that flips nothing (or a path that cannot prove it): never violated; proved with a proof
            assert v.status in ("holds", "unknown"), (CASES[k], v.reason)
            assert v.status != "holds" or v.proof is not None
