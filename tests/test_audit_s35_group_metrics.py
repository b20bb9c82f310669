"""Session 35 audit of what each group metric is, end to end (brief h5, round 2): fairspec's value and verdict
against the textbook definition (AIF360's / fairlearn's) computed on the same rows with plain numpy."""

from __future__ import annotations

import numpy as np
import pytest


def _check(tmp_path, rows: list[str], props: str, features: str = "race : {A, B, C} protected"):
    from fairspec.pipeline import check

    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    spec = tmp_path / "s.fair"
    spec.write_text(f'data d = csv("d.csv", label = y == 1)\nfeatures F from d {{\n  {features}\n}}\n'
                    f'model m = predictions(d, decision = "dec")\n{props}')
    rep = check(spec)
    assert not rep.has_errors and not rep.internal_errors, ([d.message for d in rep.diagnostics], rep.internal_errors)
    return {v.name: v for v in rep.verdicts}


def _between_ge(benefit_groups: list[tuple[int, float]], alpha: float) -> float:
    """AIF360's between-group GE: every row's benefit replaced by its group's mean, GE(alpha) over all rows."""
    b = np.concatenate([np.full(n, m, dtype=np.float64) for n, m in benefit_groups])
    r = b / b.mean()
    if alpha == 1:
        return float(np.mean(np.where(r > 0, r * np.log(np.where(r > 0, r, 1.0)), 0.0)))
    return float(np.mean(r ** alpha - 1) / (alpha * (alpha - 1)))


# race A: 30 rows of benefit 2 (decided 1, label 0); B: 30 rows of benefit 0 (decided 0, label 1);
# C: 29 rows of benefit 1 (decided 1, label 1) -- under min_group_size = 30
ROWS = ["race,dec,y"] + ["A,1,0"] * 30 + ["B,0,1"] * 30 + ["C,1,1"] * 29


@pytest.mark.parametrize("metric, alpha, threshold", [("between_group_generalized_entropy_index", 2, 0.4),
                                                      ("between_group_theil_index", 1, 0.5)])
def test_between_group_index_counts_a_group_under_min_group_size(tmp_path, metric, alpha, threshold):
    # the index replaces each benefit by its group's mean over ALL rows. It was taken over the groups of at
    # least min_group_size rows only (A and B: GE(2) 0.5, Theil ln 2), and `violated` stood on that value;
    # the index is not monotone in the groups (C sits at the mean and lowers it): the data's GE(2) is 0.337,
    # its Theil index 0.467, so `<= 0.4` / `<= 0.5` hold on the data. Failed before the fix (violated 0.5 / 0.693)
    truth = _between_ge([(30, 2.0), (30, 0.0), (29, 1.0)], alpha)
    assert truth <= threshold
    v = _check(tmp_path, ROWS, f"property p {{ {metric}(m, groups race) <= {threshold} }}\n"
                               f"property wide {{ {metric}(m, groups race) <= 1.5 }}\n")
    assert v["p"].status != "violated", (v["p"].status, v["p"].value, v["p"].reason)
    assert v["p"].value == pytest.approx(truth, abs=1e-9), (v["p"].value, truth)
    # C is under min_group_size: a holds is not said over it, even far from the threshold
    assert v["wide"].status == "unknown" and "too small to judge" in v["wide"].reason, v["wide"].reason


def test_between_group_index_with_every_group_large_enough_holds_and_violates_on_the_true_value(tmp_path):
    rows = ["race,dec,y"] + ["A,1,0"] * 30 + ["B,0,1"] * 30 + ["C,1,1"] * 30
    truth = _between_ge([(30, 2.0), (30, 0.0), (30, 1.0)], 2)
    v = _check(tmp_path, rows, "property lo { between_group_generalized_entropy_index(m, groups race) <= 0.4 }\n"
                               "property hi { between_group_generalized_entropy_index(m, groups race) <= 0.3 }\n")
    assert v["lo"].value == pytest.approx(truth, abs=1e-9) and v["hi"].value == pytest.approx(truth, abs=1e-9)
    assert v["lo"].status == "holds" and v["hi"].status == "violated", (v["lo"].reason, v["hi"].reason)
