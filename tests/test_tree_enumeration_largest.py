"""A tree model's `violated` by enumeration (prove / find) reports the largest violation over the domain, as a
network's enumeration does: `value` of `|prob(m(x)) - prob(m(x'))| <= eps` is the same number -- the largest
difference -- whichever library the team ships (it was the first violating cell pair's for trees: 0.24 where
the largest is 0.40 on this XGBoost pipeline)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
xgb = pytest.importorskip("xgboost")

from sklearn.compose import make_column_transformer  # noqa: E402
from sklearn.ensemble import RandomForestClassifier  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder  # noqa: E402

import fairspec  # noqa: E402

SPEC = """features A {{
  age : int in [18, 22]
  income : int in [1, 4]
  sex : {{F, M}} protected
  region : {{east, north, south}}
}}
model clf = sklearn("clf.skops")
property ind {{
  forall x, x' : A
  require x.* == x'.* except {{sex}}
  ensure |prob(clf(x)) - prob(clf(x'))| <= 0.05
  mode = {mode}
}}
"""


def _frame():
    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame({"age": rng.integers(18, 23, n), "income": rng.integers(1, 5, n),
                       "sex": rng.choice(["F", "M"], n), "region": rng.choice(["east", "north", "south"], n)})
    z = 0.8 * (df.age - 20) + 0.7 * (df.income - 2.5) + 0.9 * (df.sex == "M") - 0.6 * (df.region == "south")
    return df, (rng.random(n) < 1 / (1 + np.exp(-z))).astype(int)


@pytest.mark.parametrize("est", [lambda: xgb.XGBClassifier(n_estimators=20, max_depth=3),
                                 lambda: RandomForestClassifier(n_estimators=10, random_state=0)], ids=["xgb", "rf"])
@pytest.mark.parametrize("mode", ["prove", "find"])
def test_the_value_of_a_tree_models_violation_is_the_largest_difference(tmp_path, est, mode):
    X, y = _frame()
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["sex", "region"]), remainder="passthrough",
                                                 sparse_threshold=0), est()).fit(X, y)
    grid = pd.DataFrame(list(itertools.product(range(18, 23), range(1, 5), "FM", ("east", "north", "south"))),
                        columns=["age", "income", "sex", "region"])
    a = pipe.predict_proba(grid)[:, 1]
    b = pipe.predict_proba(grid.assign(sex=np.where(grid.sex == "F", "M", "F")))[:, 1]
    largest = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
    p = tmp_path / "s.fair"
    p.write_text(SPEC.format(mode=mode))
    v = fairspec.check(p, models={"clf": pipe})["ind"]
    assert v.status == "violated", v
    assert v.value == pytest.approx(largest, abs=1e-12), (v.value, largest)
    assert abs(v.witness.outputs[0] - v.witness.outputs[1]) == pytest.approx(largest, abs=1e-12)
