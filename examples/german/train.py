"""Train the three-grade credit model of the German credit example, reproducibly.

Run from anywhere:  python examples/german/train.py

Reads data/german.data (the UCI Statlog German credit file, 1,000 applicants, coded values
A11, A12, ...), writes data/german.csv (readable names, one row per applicant, plus the grade)
and models/grades.skops.

The grade is taken from the data, not invented: the UCI label says whether the credit was repaid
("good") or not ("bad"), and the size of what was lent (duration and amount) separates the good
ones into two grades:

  A  repaid, duration <= 18 months and amount <= 2,500 DM   (313 applicants)
  B  repaid, a longer or larger credit                       (387)
  C  not repaid                                              (300)

The model: scikit-learn RandomForestClassifier(n_estimators=8, max_depth=3,
min_samples_leaf=20, random_state=0) over nine features in this order (the encoding of
grades.fair): checking, duration, history, amount, savings, employment, age, sex, housing.
Categorical features are integer codes, the position of the category in the sorted list below
(the order grades.fair declares them in, so its `code` encoding is the same). ``sex`` comes from
the file's "personal status and sex" attribute (A92, A95 female; A91, A93, A94 male).
classes_ is ["A", "B", "C"]: predict_proba's columns in that order, predict the first class
of largest probability. It is fitted on a DataFrame whose columns are named as the features, so
it records them (feature_names_in_).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
RAW = HERE / "data" / "german.data"
CSV = HERE / "data" / "german.csv"
MODEL = HERE / "models" / "grades.skops"

SEED = 0

CHECKING = {"A11": "below_0", "A12": "below_200", "A13": "200_or_more", "A14": "none"}
HISTORY = {"A30": "no_credits", "A31": "paid_here", "A32": "paying", "A33": "delayed", "A34": "critical"}
SAVINGS = {"A61": "below_100", "A62": "below_500", "A63": "below_1000", "A64": "1000_or_more", "A65": "unknown"}
EMPLOYMENT = {"A71": "unemployed", "A72": "below_1", "A73": "below_4", "A74": "below_7", "A75": "7_or_more"}
SEX = {"A91": "male", "A92": "female", "A93": "male", "A94": "male", "A95": "female"}
STATUS = {"A91": "divorced", "A92": "divorced_or_married", "A93": "single", "A94": "married", "A95": "single"}
HOUSING = {"A151": "rent", "A152": "own", "A153": "free"}

FEATURES = ["checking", "duration", "history", "amount", "savings", "employment", "age", "sex", "housing"]
CATEGORIES = {
    "checking": sorted(CHECKING.values()),
    "history": sorted(HISTORY.values()),
    "savings": sorted(SAVINGS.values()),
    "employment": sorted(EMPLOYMENT.values()),
    "sex": sorted(set(SEX.values())),
    "housing": sorted(HOUSING.values()),
}


def grade(repaid: bool, duration: int, amount: int) -> str:
    if not repaid:
        return "C"
    return "A" if duration <= 18 and amount <= 2500 else "B"


def read_rows() -> list[dict]:
    rows = []
    for line in RAW.read_text().splitlines():
        a = line.split()
        if not a:
            continue
        assert len(a) == 21, line
        duration, amount, age = int(a[1]), int(a[4]), int(a[12])
        repaid = a[20] == "1"
        rows.append({
            "checking": CHECKING[a[0]], "duration": duration, "history": HISTORY[a[2]], "amount": amount,
            "savings": SAVINGS[a[5]], "employment": EMPLOYMENT[a[6]], "age": age, "sex": SEX[a[8]],
            "personal_status": STATUS[a[8]], "housing": HOUSING[a[14]],
            "credit": "good" if repaid else "bad", "grade": grade(repaid, duration, amount),
        })
    assert len(rows) == 1000, len(rows)
    return rows


def matrix(rows: list[dict]) -> np.ndarray:
    X = np.zeros((len(rows), len(FEATURES)))
    for i, r in enumerate(rows):
        for j, f in enumerate(FEATURES):
            X[i, j] = CATEGORIES[f].index(r[f]) if f in CATEGORIES else r[f]
    return X


def main() -> None:
    from sklearn.ensemble import RandomForestClassifier
    import skops.io as sio

    rows = read_rows()
    with CSV.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    # the matrix with its columns named as the features: the forest records them (feature_names_in_)
    # and fairspec checks grades.fair's encode block against them; the fit is the array's, bit for bit
    X = pd.DataFrame(matrix(rows), columns=FEATURES)
    y = np.array([r["grade"] for r in rows])
    clf = RandomForestClassifier(n_estimators=8, max_depth=3, min_samples_leaf=20, random_state=SEED)
    clf.fit(X, y)
    MODEL.parent.mkdir(exist_ok=True)
    sio.dump(clf, MODEL)
    acc = float((clf.predict(X) == y).mean())
    counts = {g: int((y == g).sum()) for g in clf.classes_}
    print(f"wrote {CSV.name} ({len(rows)} rows, grades {counts}) and {MODEL.name}: "
          f"classes {list(clf.classes_)}, training accuracy {acc:.3f}")


if __name__ == "__main__":
    main()
