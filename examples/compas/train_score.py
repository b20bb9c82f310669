"""Train the risk-score regression model of the COMPAS example, reproducibly.

Run from anywhere:  python examples/compas/train_score.py

Reads data/compas-scores-two-years.csv with ProPublica's filter (the 6,172 rows compas.fair
reads) and fits an XGBoost regressor (objective reg:squarederror, 40 trees of depth 3,
learning rate 0.3, seed 0, one thread) that predicts COMPAS's decile score (1..10) from six
columns, in this order (the encoding of score.fair):

  age, priors_count, juv_fel_count, sex, race, c_charge_degree

age and the counts are the raw numbers; sex, race and the charge degree are integer codes, the
position of the value in the sorted lists below (the order score.fair declares them in). The
model reads race on purpose: it learns from COMPAS's own scores, and score.fair asks how much
changing race alone moves the predicted score. Writes models/score.json (XGBoost's JSON format).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "compas-scores-two-years.csv"
MODEL = HERE / "models" / "score.json"

SEED = 0
FEATURES = ["age", "priors_count", "juv_fel_count", "sex", "race", "c_charge_degree"]
CATEGORIES = {
    "sex": ["Female", "Male"],
    "race": ["African-American", "Asian", "Caucasian", "Hispanic", "Native American", "Other"],
    "c_charge_degree": ["F", "M"],
}


def load():
    import pandas as pd

    df = pd.read_csv(DATA)
    df = df[(df.days_b_screening_arrest <= 30) & (df.days_b_screening_arrest >= -30) & (df.is_recid != -1)
            & (df.c_charge_degree != "O") & (df.score_text != "N/A")].reset_index(drop=True)
    assert len(df) == 6172, len(df)
    X = np.zeros((len(df), len(FEATURES)))
    for j, f in enumerate(FEATURES):
        if f in CATEGORIES:
            X[:, j] = df[f].map({c: i for i, c in enumerate(CATEGORIES[f])}).to_numpy(dtype=np.float64)
        else:
            X[:, j] = df[f].to_numpy(dtype=np.float64)
    return X, df["decile_score"].to_numpy(dtype=np.float64)


def main() -> None:
    import xgboost as xgb

    X, y = load()
    booster = xgb.train({"objective": "reg:squarederror", "max_depth": 3, "eta": 0.3, "seed": SEED,
                         "nthread": 1, "base_score": 4.5},
                        xgb.DMatrix(X, label=y, feature_names=FEATURES), num_boost_round=40)
    MODEL.parent.mkdir(exist_ok=True)
    booster.save_model(str(MODEL))
    pred = booster.predict(xgb.DMatrix(X, feature_names=FEATURES))
    mae = float(np.abs(pred - y).mean())
    print(f"wrote {MODEL.name}: {len(y)} rows, MAE {mae:.3f} deciles, predictions in [{pred.min():.2f}, {pred.max():.2f}]")


if __name__ == "__main__":
    main()
