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


# race A: 60 rows, half decided 1; B: 60 rows, none decided 1; C: 5 rows (under min_group_size), all decided 1
SMALL = ["race,dec,y"] + ["A,1,0", "A,0,1"] * 30 + ["B,0,1"] * 60 + ["C,1,1"] * 5


# the mirror: A and B both select half their rows, C (5 rows) none
SMALL_LOW = ["race,dec,y"] + ["A,1,0", "A,0,1"] * 30 + ["B,1,1", "B,0,0"] * 30 + ["C,0,1"] * 5


@pytest.mark.parametrize("rows, claim", [(SMALL, "statistical_parity(m, groups race) >= 0.8"),
                                         (SMALL, "statistical_parity(m, groups race) > 0.6   compare = to_overall"),
                                         (SMALL, "most_favoured(m, groups race) >= 0.8"),
                                         (SMALL_LOW, "disparate_impact(m, groups race) <= 0.5"),
                                         (SMALL_LOW, "least_favoured(m, groups race) <= 0.2")])
def test_a_violated_the_small_groups_could_undo_is_unknown(tmp_path, rows, claim):
    # the value is over the groups of min_group_size rows (A, B); the 5 rows of C are left out. A difference
    # or the highest rate only grows with another group (a ratio or the lowest rate only falls), so `<=`
    # violated of a difference stands; but a `>=` of it violated over A and B alone can be undone by C: on
    # every row statistical_parity is 1 >= 0.8 (and disparate_impact 0 <= 0.5). Failed before the fix (violated)
    v = _check(tmp_path, rows, f"property p {{ {claim} }}\n")["p"]
    assert v.status == "unknown", (claim, v.status, v.value, v.reason)
    assert "race=C (5 rows)" in v.reason, v.reason


def test_a_violated_the_small_groups_cannot_undo_stands(tmp_path):
    v = _check(tmp_path, SMALL, "property sp { statistical_parity(m, groups race) <= 0.1 }\n"
                                "property di { disparate_impact(m, groups race) >= 0.5 }\n")
    assert v["sp"].status == "violated" and v["di"].status == "violated", (v["sp"].reason, v["di"].reason)


def test_a_regression_metric_violated_the_small_groups_could_undo_is_unknown(tmp_path):
    # value(m(x)) = a: A and B predict 1 (mean prediction gap 0 over the large groups), C's 5 rows predict 3:
    # on every row the gap is 2 >= 1. Failed before the fix (violated at 0)
    import pickle

    from sklearn.linear_model import LinearRegression

    from fairspec.pipeline import check

    m = LinearRegression().fit(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), np.array([0.0, 1.0, 0.0]))
    m.coef_, m.intercept_ = np.array([1.0, 0.0]), 0.0
    (tmp_path / "m.pkl").write_bytes(pickle.dumps(m))
    (tmp_path / "d.csv").write_text("\n".join(["race,a,t"] + ["A,1,1", "B,1,1"] * 40 + ["C,3,3"] * 5) + "\n")
    spec = tmp_path / "s.fair"
    spec.write_text('data d = csv("d.csv", target = t)\nfeatures F from d {\n  a : int in [0, 3]\n'
                    '  race : {A, B, C} protected\n}\nmodel m = sklearn("m.pkl", trust pickle)\n'
                    'encode F for m {\n  a : raw\n  race : code\n}\n'
                    'property ge { mean_prediction_difference(m, groups race) >= 1 }\n'
                    'property le { mean_prediction_difference(m, groups race) <= 1 }\n')
    rep = check(spec)
    assert not rep.has_errors and not rep.internal_errors, ([d.message for d in rep.diagnostics], rep.internal_errors)
    v = {x.name: x for x in rep.verdicts}
    assert v["ge"].status == "unknown" and "race=C (5 rows)" in v["ge"].reason, (v["ge"].status, v["ge"].reason)
    assert v["le"].status == "unknown" and "too small to judge" in v["le"].reason, (v["le"].status, v["le"].reason)


def test_calibration_gap_to_overall_compares_with_every_row(tmp_path):
    # one bin (bins = 1... 2: every score 0.6 is in the upper one). A: 30 rows labelled 0 (ECE 0.6), B: 30
    # labelled 1 (ECE 0.4), C: 25 rows labelled 0 (ECE 0.6, under min_group_size). All rows: |51 - 30| / 85
    # = 0.247, so the largest |ECE - overall| is 0.353 <= 0.4 on the data. The overall was the large groups'
    # ECE alone (|36 - 30| / 60 = 0.1: 0.5, violated). Failed before the fix (violated 0.5)
    rows = ["race,s,y"] + ["A,0.6,0"] * 30 + ["B,0.6,1"] * 30 + ["C,0.6,0"] * 25
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    from fairspec.pipeline import check

    spec = tmp_path / "s.fair"
    spec.write_text('data d = csv("d.csv", label = y == 1)\nfeatures F from d {\n  race : {A, B, C} protected\n}\n'
                    'model m = predictions(d, score = "s", threshold = 0.5)\n'
                    'property p { calibration_gap(m, groups race, bins = 2) <= 0.4   compare = to_overall }\n')
    rep = check(spec)
    assert not rep.has_errors and not rep.internal_errors, ([d.message for d in rep.diagnostics], rep.internal_errors)
    (v,) = rep.verdicts
    assert v.value == pytest.approx(0.6 - 21 / 85, abs=1e-9), (v.status, v.value, v.reason)
    assert v.status == "unknown", (v.status, v.reason)


def test_class_distribution_distance_to_overall_with_every_group_small_is_unknown_not_an_internal_error(tmp_path):
    # every group under min_group_size: the to_overall total variation took the largest of no group
    # (numpy: "zero-size array to reduction operation fmax") -- an internal error before the fix
    import pickle

    from sklearn.tree import DecisionTreeClassifier

    from fairspec.pipeline import check

    m = DecisionTreeClassifier().fit(np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 1.0]]), np.array([0, 1, 2]))
    (tmp_path / "m.pkl").write_bytes(pickle.dumps(m))
    (tmp_path / "d.csv").write_text("\n".join(["race,a,k"] + ["A,0,0", "B,1,1", "A,2,2"] * 5) + "\n")
    spec = tmp_path / "s.fair"
    spec.write_text('data d = csv("d.csv", target = k)\nfeatures F from d {\n  a : int in [0, 2]\n'
                    '  race : {A, B} protected\n}\nmodel m = sklearn("m.pkl", trust pickle)\n'
                    'encode F for m {\n  a : raw\n  race : code\n}\n'
                    'property p { class_distribution_distance(m, groups race) <= 0.5   compare = to_overall }\n')
    rep = check(spec)
    assert not rep.internal_errors, rep.internal_errors
    (v,) = rep.verdicts
    assert v.status == "unknown" and "min_group_size" in v.reason, v.reason
