"""A tree ensemble's decision compiled into one decision tree (its Boolean form) for the
distribution backends: the same decision everywhere, and a small boosted model decided over
a distribution from the spec."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fairspec.backends.trees.compile import TooLarge, compile_decision
from fairspec.models.trees import random_ensemble


def _predict(tree, X):
    t = tree.tree_
    node = np.zeros(len(X), dtype=int)
    for _ in range(t.node_count):
        inner = t.children_left[node] >= 0
        if not inner.any():
            break
        f = t.feature[node]
        go = X[np.arange(len(X)), np.where(inner, f, 0)] <= t.threshold[node]
        node = np.where(inner, np.where(go, t.children_left[node], t.children_right[node]), node)
    return t.value[node, 0, :].argmax(axis=1)


@pytest.mark.parametrize("strict", [False, True])
def test_the_compiled_tree_decides_as_the_ensemble(strict):
    for seed in range(30):
        n = 3
        lo, hi = np.zeros(n), np.full(n, 5.0)
        ens = random_ensemble(seed, n, 1 + seed % 6, 3, ["identity", "logistic"][seed % 2], lo, hi, strict=strict)
        tree = compile_decision(ens, lo - 0.5, hi)
        grid = np.array(list(itertools.product(*[np.arange(0, 6)] * n)), dtype=float)
        grid = np.vstack([grid, grid + 0.25])
        assert np.array_equal(_predict(tree, grid), ens.decide(grid)), seed


def test_a_large_ensemble_gives_up_after_a_count_of_walks():
    ens = random_ensemble(1, 6, 60, 4, "logistic", np.zeros(6), np.full(6, 50.0))
    with pytest.raises(TooLarge):
        compile_decision(ens, np.full(6, -0.5), np.full(6, 50.0), max_leaves=50, max_walks=20_000)


def test_boosted_model_over_a_distribution_from_the_spec(tmp_path):
    xgb = pytest.importorskip("xgboost")
    from fairspec.pipeline import check

    rng = np.random.default_rng(0)
    n = 400
    a = rng.integers(0, 10, n)
    s = rng.integers(0, 2, n)
    yv = ((a + 3 * s + rng.normal(0, 2, n)) > 6).astype(int)
    (tmp_path / "d.csv").write_text("a,s,y\n" + "".join(f"{x},{'MF'[z]},{w}\n" for x, z, w in zip(a, s, yv)))
    X = np.column_stack([a, s]).astype(float)
    xgb.XGBClassifier(n_estimators=4, max_depth=2, random_state=0, n_jobs=1).fit(X, yv).get_booster() \
        .save_model(str(tmp_path / "m.json"))
    spec = tmp_path / "dist.fair"
    spec.write_text('''
data d = csv("d.csv", label = y == 1)
features P from d {
  a : int in [0, 9]   bins [3, 6]
  s : {M, F} protected
}
model m = xgboost("m.json")
encode P for m {
  a : raw
  s : code
}
property di {
  disparate_impact(m, groups s, distribution independent(d)) >= 0.8
}
''')
    (v,) = check(spec).verdicts
    assert v.backend in ("ssat", "elimination"), (v.backend, v.reason)
    assert v.status in ("violated", "holds", "unknown") and v.value is not None
    assert "compiled into one decision tree" in str(v.details)
