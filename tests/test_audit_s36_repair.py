"""Session 36 audit of FairRepair's arithmetic (backends/repair): the rows a repair may change,
floor(alpha x minimal x N), was a float (HiGHS's LP optimum) times alpha with a slack of 1e-9 rows.
With alpha written with 10 decimals, alpha x minimal x N is 4.99999999968 rows exactly and the slack
took it as 5: a repair changing 5 rows was ``holds (proved)`` though the spec's bound allows fewer
than 5 (no repair within it exists: the truth is ``violated``). The bound is now decided exactly (the
LP of a ``>= c`` goal in closed form, checked against HiGHS; a strict goal near a whole row refused).

The path hypercubes, group boxes, refinement thresholds and patched trees were audited against
scikit-learn's own predict of the written model (float32 data values on and beside thresholds,
standard / code / one-hot encodings, compound groups, forests): no wrong claim found there."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

pytest.importorskip("skops")

SPEC = """\
data d = csv("d.csv", label = y == 1)
features P from d {
  a : int in [0, 29]
  s : {F, M} protected
}
model m = sklearn("m.skops")
encode P for m {
  a : raw
  s : code
}
repair q for m {
  goal passing_rate_ratio(groups s) >= 0.8
  bound semantic_difference <= 1.0537790697 * minimal
  write "r.skops"
}
"""


def test_bound_a_hair_below_a_whole_row_is_not_rounded_up(tmp_path):
    from sklearn.tree import DecisionTreeClassifier

    from fairspec.models.sklearn_model import import_skops_io
    from fairspec.pipeline import check

    # F: 8 of 21 pass, M: 22 of 29 (ratio 0.50); the LP's minimal is 688/145 rows of 50 exactly
    rows = [(i, 0, int(i < 8)) for i in range(21)] + [(i, 1, int(i < 22)) for i in range(29)]
    X = np.array([[a, s] for a, s, _ in rows], dtype=float)
    y = np.array([r[2] for r in rows])
    est = DecisionTreeClassifier(random_state=0).fit(X, y)
    assert (est.predict(X) == y).all()
    import_skops_io().dump(est, tmp_path / "m.skops")
    (tmp_path / "d.csv").write_text("a,s,y\n" + "".join(f"{a},{'M' if s else 'F'},{v}\n" for a, s, v in rows))
    (tmp_path / "fairspec.toml").write_text("")
    (tmp_path / "spec.fair").write_text(SPEC)
    minimal_rows = Fraction(688, 145)
    bound = Fraction("1.0537790697") * minimal_rows
    assert 5 - bound == Fraction(8, 25000000000)            # 4.99999999968 rows: at most 4 may change
    # brute force on counts: the fewest rows any repair changes to reach F/M >= 4/5 is 5 (> 4)
    fewest = min(abs(pf - 8) + abs(pm - 22) for pf in range(22) for pm in range(30)
                 if pm and Fraction(pf, 21) / Fraction(pm, 29) >= Fraction(4, 5)
                 and Fraction(pm, 29) / max(Fraction(pf, 21), Fraction(1, 10**9)) >= Fraction(4, 5))
    assert fewest == 5
    v = check(tmp_path / "spec.fair").verdicts[0]
    assert v.status == "violated", v.reason          # was holds (proved), 5 rows changed
    assert "(4 rows)" in v.reason


def test_exact_minimal_is_highs_optimum():
    from fairspec.backends.repair.optimise import exact_minimal, minimal_change

    rng = np.random.default_rng(7)
    seen = 0
    for _ in range(150):
        G = int(rng.integers(2, 6))
        sizes = rng.integers(1, 40, G)
        passing = np.array([rng.integers(0, s + 1) for s in sizes])
        if passing.sum() == 0:
            continue
        c = float(rng.choice([0.5, 0.75, 0.8, 0.9, 1.0]))
        m = exact_minimal(passing, sizes, c)
        if m is None:
            continue
        seen += 1
        assert abs(float(m) - minimal_change(passing / sizes, sizes, c).minimal) <= 1e-9
    assert seen > 100
    # 'some row passes' binds (F 8/13, M 0/38, c 0.5): the closed form steps aside
    assert exact_minimal([8, 0], [13, 38], 0.5) is None


def test_row_budget_exact_and_strict_refusal():
    from fairspec.backends.repair.optimise import row_budget

    budget, m, why = row_budget(1.0537790697, [8, 22], [21, 29], 0.8, False, 688 / 145 / 50)
    assert (budget, m, why) == (4, Fraction(688, 145 * 50), "")
    budget, m, why = row_budget(2.0, [2, 2], [5, 5], 0.8, False, 0.0)      # met already: 0 rows
    assert budget == 0 and why == ""
    # a strict goal of two groups is exact too: F 4/10, M 5/10, > 0.8 needs 1/500 more of F's rate
    assert row_budget(50.0, [4, 5], [10, 10], 0.8, True, 0.001) == (1, Fraction(1, 1000), "")
    # more groups keep HiGHS's float: a bound within 1e-6 of a whole row is refused, not rounded
    _, m, why = row_budget(1.0, [4, 5, 5], [10, 10, 10], 0.8, True, 1 / 30)
    assert m is None and "cannot be decided exactly" in why
    assert row_budget(1.2, [4, 5, 5], [10, 10, 10], 0.8, True, 0.11)[:2] == (3, None)     # 3.96 rows


def test_row_budget_when_no_row_passes():
    from fairspec.backends.repair.optimise import minimal_change, row_budget

    # no row passes: 'some row passes' binds, minimal is 1 / N exactly, alpha x it x N = alpha rows
    for sizes, c, strict, alpha in [([10, 10, 5], 0.8, False, 50.0), ([10, 10], 0.8, True, 1.0), ([10, 20, 30], 0.5, True, 3.0)]:
        lp = minimal_change(np.zeros(len(sizes)), np.array(sizes), c, strict)
        assert row_budget(alpha, [0] * len(sizes), sizes, c, strict, lp.minimal) == \
            (int(alpha), Fraction(1, sum(sizes)), "")
