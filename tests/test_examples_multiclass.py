"""The issue-25 examples: a three-grade credit model on German credit (examples/german) and a
risk-score regression on COMPAS (examples/compas/score.fair) run with fairspec check, and their
verdicts agree with brute force on the shipped models. The group metrics' thresholds are ones the rows
decide on the valid (Clopper-Pearson, union bound) interval: a shipped example shows decided verdicts."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT / "examples" / "adult"
GERMAN = ROOT / "examples" / "german"
COMPAS = ROOT / "examples" / "compas"

pytest.importorskip("skops")


def _verdicts(path):
    from fairspec.pipeline import check

    rep = check(str(path))
    assert not rep.has_errors, rep.diagnostics
    return {v.name: v for v in rep.verdicts}


def test_german_grades_come_from_the_data():
    """german.csv is german.data with readable names, and each grade follows train.py's rule."""
    rows = list(csv.DictReader((GERMAN / "data" / "german.csv").open()))
    raw = [line.split() for line in (GERMAN / "data" / "german.data").read_text().splitlines() if line.strip()]
    assert len(rows) == len(raw) == 1000
    counts = {"A": 0, "B": 0, "C": 0}
    for r, a in zip(rows, raw):
        assert int(r["duration"]) == int(a[1]) and int(r["amount"]) == int(a[4]) and int(r["age"]) == int(a[12])
        repaid = a[20] == "1"
        want = "C" if not repaid else ("A" if int(a[1]) <= 18 and int(a[4]) <= 2500 else "B")
        assert r["grade"] == want
        counts[want] += 1
    assert counts == {"A": 313, "B": 387, "C": 300}


def test_german_grades_example():
    v = _verdicts(GERMAN / "grades.fair")
    same = v["same_grade_by_sex"]
    assert same.status == "violated"
    w = same.witness
    assert w.features["sex"] != w.features_prime["sex"]
    assert {k: x for k, x in w.features.items() if k != "sex"} == \
        {k: x for k, x in w.features_prime.items() if k != "sex"}
    # the witness replayed on the shipped forest: its predict gives two different grades
    import skops.io as sio

    path = GERMAN / "models" / "grades.skops"
    est = sio.load(path, trusted=sio.get_untrusted_types(file=path))
    pred = est.predict(np.array([w.x, w.x_prime]))
    assert pred[0] != pred[1] and [float(list(est.classes_).index(p)) for p in pred] == list(w.outputs)
    probs = v["grade_probabilities_by_sex"]
    assert probs.status == "holds" and probs.how == "proved" and probs.proof is not None
    c = v["grade_c_by_sex"]
    assert c.status == "holds" and c.how == "proved" and c.value == pytest.approx(0.0368, abs=1e-4)
    assert c.bound[0] <= c.value <= c.bound[1]
    # group metrics on the 1,000 rows, recomputed from the forest's predict
    import importlib.util

    spec = importlib.util.spec_from_file_location("german_train", GERMAN / "train.py")
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    rows = train.read_rows()
    pred = est.predict(train.matrix(rows))
    sex = np.array([r["sex"] for r in rows])
    share = {s: {g: float(np.mean(pred[sex == s] == g)) for g in "ABC"} for s in ("female", "male")}
    assert v["grade_a_parity"].status == "holds" and v["grade_a_parity"].bound[1] <= 0.2
    assert v["grade_a_parity"].value == pytest.approx(abs(share["female"]["A"] - share["male"]["A"]), abs=1e-12)
    tv = 0.5 * sum(abs(share["female"][g] - share["male"][g]) for g in "ABC")
    assert v["grade_distribution"].status == "violated" and v["grade_distribution"].value == pytest.approx(tv, abs=1e-12)
    assert v["grade_distribution"].bound[0] > 0.01
    assert v["grade_c_odds"].status == "holds" and v["grade_c_odds"].bound[1] <= 0.4
    # every grade one-vs-rest: the largest TPR / FPR gap between women and men over the grades
    truth = np.array([r["grade"] for r in rows])
    gaps = []
    for g in "ABC":
        rates = {s: (np.mean(pred[(sex == s) & (truth == g)] == g), np.mean(pred[(sex == s) & (truth != g)] == g))
                 for s in ("female", "male")}
        gaps += [abs(rates["female"][0] - rates["male"][0]), abs(rates["female"][1] - rates["male"][1])]
    assert v["grade_odds"].value == pytest.approx(max(gaps), abs=1e-12)
    assert v["grade_odds"].value >= v["grade_c_odds"].value
    assert v["grade_odds"].status == "holds" and v["grade_odds"].bound[1] <= 0.4
    # k-discrimination over the grade: brute force over every individual of the domain (amount, duration
    # and age on the forest's own thresholds) would be 10^9 points; the cells give the exact max k
    kd = v["grade_clusters"]
    assert kd.status == "holds" and kd.proof is not None and kd.value == 2.0


def test_compas_score_example():
    xgb = pytest.importorskip("xgboost")
    v = _verdicts(COMPAS / "score.fair")
    race = v["race_moves_score"]
    assert race.status == "violated"
    most = v["race_moves_score_most"]
    assert most.status == "violated" and most.bound[0] <= most.value <= most.bound[1]
    # brute force: every defendant of the domain, every race, on the booster's own predict
    b = xgb.Booster()
    b.load_model(str(COMPAS / "models" / "score.json"))
    g = np.meshgrid(np.arange(18, 97), np.arange(0, 39), np.arange(0, 21), [0, 1], np.arange(6), [0, 1],
                    indexing="ij")
    X = np.stack([a.reshape(-1) for a in g], 1).astype(float)
    p = np.asarray(b.predict(xgb.DMatrix(X, feature_names=b.feature_names)), dtype=np.float64)
    p = p.reshape(79, 39, 21, 2, 6, 2)
    race_max = float((p.max(axis=4) - p.min(axis=4)).max())
    sex_max = float((p.max(axis=3) - p.min(axis=3)).max())
    assert most.value == pytest.approx(race_max, rel=1e-12)
    assert v["sex_moves_score_most"].value == pytest.approx(sex_max, rel=1e-12)
    w = most.witness
    assert w.features["race"] != w.features_prime["race"]
    assert abs(w.outputs[0] - w.outputs[1]) == pytest.approx(race_max, rel=1e-12)
    assert v["mean_score_by_race"].status == "violated" and v["loss_by_race"].status == "violated"
    high = v["high_risk_by_sex"]
    assert high.status == "holds" and high.how == "estimated" and high.bound[0] >= 0.65


def test_adult_equalized_odds_example_is_decided():
    """adult.fair's mlp_equalized_odds (gap 0.37 by race; Amer-Indian-Eskimo and Other have 34 and 21 positive
    rows): its threshold lies below the whole valid interval, so the shipped example shows a violation."""
    from fairspec.pipeline import check

    rep = check(str(ADULT / "adult.fair"), only="mlp_equalized_odds")
    assert not rep.has_errors, rep.diagnostics
    (v,) = rep.verdicts
    assert v.status == "violated" and v.bound[0] > 0.05 and v.value == pytest.approx(0.3739, abs=1e-4)


@pytest.mark.parametrize("spec", [GERMAN / "grades.fair", COMPAS / "score.fair"], ids=["german", "compas"])
def test_examples_are_formatted(spec):
    r = run_cli("fmt", "--check", spec)
    assert r.returncode == 0, r.stdout + r.stderr
