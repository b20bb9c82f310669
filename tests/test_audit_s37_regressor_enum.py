"""Session 37 audit (h7): scikit-learn regression meta-estimators on a small domain, at a tie.

A BaggingRegressor, AdaBoostRegressor, VotingRegressor, StackingRegressor or TransformedTargetRegressor of tree models
got the *assumed* batch spread of an opaque scikit-learn runtime: on a 24-point domain whose largest pair difference
is exactly eps, ``<= eps`` was ``unknown`` ("depends on how the model is batched"). Their fitted attributes now show
every row computed alike in any batch (models/meta_estimators: members, n_jobs, fewer than 8 voters, the target
transformer), so enumeration decides the tie. A KNeighborsRegressor and a VotingRegressor of 9 members stay unknown,
the reason saying why. Truth: brute force on the library's predict, row by row and as one batch, exact Fractions."""

from __future__ import annotations

import itertools
import warnings
from fractions import Fraction

import numpy as np
import pytest

SPEC = """features F {{
  a : int in [0, 3]
  b : int in [0, 2]
  g : int in [0, 1] protected
}}
model m = sklearn("m.skops"{decl})
encode F for m {{ a : raw  b : raw  g : raw }}
property pr {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  ensure |value(m(x)) - value(m(x'))| {op} {eps}
}}
"""
GRID = np.array(list(itertools.product(range(4), range(3), range(2))), dtype=float)


def _model(kind):
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.ensemble import AdaBoostRegressor, BaggingRegressor, StackingRegressor, VotingRegressor
    from sklearn.neighbors import KNeighborsRegressor
    from sklearn.preprocessing import MaxAbsScaler
    from sklearn.tree import DecisionTreeRegressor

    X = np.repeat(GRID, 5, axis=0)
    y = 0.5 * X[:, 0] + 0.25 * X[:, 1] * X[:, 2] + 0.125 * X[:, 1]       # dyadic: pure leaves, exact sums
    tree = lambda s=0: DecisionTreeRegressor(random_state=s)  # noqa: E731
    m = {"bag": lambda: BaggingRegressor(tree(), n_estimators=4, random_state=0),
         "bag2": lambda: BaggingRegressor(tree(), n_estimators=4, n_jobs=2, random_state=0),
         "ada": lambda: AdaBoostRegressor(tree(), n_estimators=4, random_state=0),
         "vote": lambda: VotingRegressor([(f"t{i}", tree(i)) for i in range(3)]),
         "vote9": lambda: VotingRegressor([(f"t{i}", tree(i)) for i in range(9)]),
         "stack": lambda: StackingRegressor([(f"t{i}", tree(i)) for i in range(2)], final_estimator=tree()),
         "ttr": lambda: TransformedTargetRegressor(regressor=tree()),
         "ttr_scaled": lambda: TransformedTargetRegressor(regressor=tree(), transformer=MaxAbsScaler()),
         "knn": lambda: KNeighborsRegressor(1),
         "multi": lambda: tree()}[kind]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return m.fit(X, np.c_[-y, y] if kind == "multi" else y)


def _check(tmp_path, model, op, eps):
    import skops.io as sio

    from fairspec import api

    sio.dump(model, tmp_path / "m.skops")
    multi = getattr(model, "n_outputs_", 1) > 1
    (tmp_path / "s.fair").write_text(SPEC.format(op=op, eps=eps, decl=", index = 1" if multi else ""))
    (v,) = api.check(str(tmp_path / "s.fair")).to_dict()["properties"]
    return v


def _truth(model):
    col = (lambda p: p[:, 1]) if getattr(model, "n_outputs_", 1) > 1 else (lambda p: p)    # index = 1
    whole = col(model.predict(GRID))
    alone = np.concatenate([col(model.predict(GRID[i:i + 1])) for i in range(len(GRID))])
    assert np.array_equal(whole, alone)                     # scored row by row as in one batch
    return max(abs(Fraction(float(whole[i])) - Fraction(float(whole[i + 1]))) for i in range(0, len(GRID), 2))


@pytest.mark.parametrize("kind", ["bag", "ada", "vote", "stack", "ttr", "ttr_scaled", "multi"])
def test_row_fixed_regressor_decides_a_tie_at_eps(tmp_path, kind):
    """Failed before (bag, ada, vote, stack, ttr, ttr_scaled): `<= eps` unknown at the tie. A multi-output
    DecisionTreeRegressor read with index = 1 (its column 1): a guard, decided before."""
    model = _model(kind)
    best = _truth(model)
    eps = repr(float(best))
    assert Fraction(eps) == best and best > 0
    v = _check(tmp_path, model, "<=", eps)
    assert (v["status"], v["how"]) == ("holds", "proved"), v
    v = _check(tmp_path, model, "<", eps)
    assert v["status"] == "violated" and v["value"] == float(best), v


@pytest.mark.parametrize("kind,why", [("knn", "neighbours are found by distances"),
                                      ("vote9", "VotingRegressor averages 9 members"),
                                      ("bag2", "groups its members by n_jobs = 2")])
def test_not_shown_row_fixed_stays_unknown_saying_why(tmp_path, kind, why):
    model = _model(kind)
    best = _truth(model)
    eps = repr(float(best))
    assert Fraction(eps) == best and best > 0
    v = _check(tmp_path, model, "<=", eps)
    assert v["status"] == "unknown" and why in v["reason"] and "batched" in v["reason"], v
