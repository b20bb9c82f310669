"""PBA's per-point table statuses on the network path (robustness accuracy of x and of x', the flipped
setting) are the model's own decisions, not ``g > 0``: a scikit-learn MLP declared ``index = 0`` calls
its first class (the declared positive) at a probability of exactly 1/2 (``predict`` picks
``classes_[1]`` only above 1/2), where ``g = p0 - 1/2 = 0`` read "not positive". Dyadic weights put a
logit of exactly 0 inside the neighbourhoods; the truth is the library's ``predict`` and
``predict_proba`` on every offset."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

SPEC = """data d = csv("d.csv", label = y == 0)
features F from d {
  g : {a, b} protected
  x : int in [0, 7]
}
model m = sklearn("m.skops", index = 0)
encode F for m {
  g : code
  x : raw
}
property bias {
  pba(m, flip g, around d, delta {x: 1})
}
"""


def _mlp(path):
    """logit(class 1) z = x - 3 - relu(10 g - x - 7) / 2: for g = a, z = x - 3; for g = b, 1.5 (x - 3) below
    x = 3 and x - 3 above; exactly 0 (a probability of exactly 1/2) at x = 3 for both."""
    pytest.importorskip("sklearn")
    skio = pytest.importorskip("skops.io")
    from sklearn.neural_network import MLPClassifier

    X, y = np.array([[0, 0], [1, 7], [0, 3], [1, 5]], float), np.array([0, 1, 0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = MLPClassifier(hidden_layer_sizes=(2,), activation="relu", max_iter=5, random_state=0).fit(X, y)
    m.coefs_ = [np.array([[0.0, 10.0], [1.0, -1.0]]), np.array([[1.0], [-0.5]])]
    m.intercepts_ = [np.array([0.0, -7.0]), np.array([-3.0])]
    skio.dump(m, path)
    return m


def _truth(m, g, x, cls):
    """(rb of x, rb of x', flipped status) of the case (g, x) -> (1 - g, x), true class ``cls`` (1: the
    declared positive, classes_[0]), on every offset of x in {-1, 0, 1}, by the library."""
    X = np.array([[g, x + d] for d in (-1, 0, 1)], float)
    Xp = np.array([[1 - g, x + d] for d in (-1, 0, 1)], float)
    lx, lp = (m.predict(X) == 0).astype(int), (m.predict(Xp) == 0).astype(int)
    px, pp = m.predict_proba(X)[:, 0], m.predict_proba(Xp)[:, 0]
    sigma = 1 if cls == 1 else -1
    keep = (lx == cls) & (lp == cls)
    flipped = "proved" if np.all(~keep | (sigma * (pp - px) > 0)) else "refuted"
    assert np.any(px == 0.5) or np.any(pp == 0.5), "the neighbourhood holds an exact tie"
    return bool(np.all(lx == cls)), bool(np.all(lp == cls)), flipped


@pytest.mark.parametrize("x,y", [(2, 0), (4, 1)])
def test_pba_table_statuses_use_the_models_rule_at_an_exact_tie(tmp_path, x, y):
    from fairspec.pipeline import check
    from fairspec.report import to_json

    m = _mlp(tmp_path / "m.skops")
    (tmp_path / "d.csv").write_text(f"g,x,y\na,{x},{y}\n")
    (tmp_path / "s.fair").write_text(SPEC)
    (v,) = json.loads(to_json(check(tmp_path / "s.fair")))["properties"]
    rows = {r["group"]: r for r in v["details"]["table"]["rows"]}
    cls = 1 if y == 0 else 0
    rb_x, rb_p, flipped = _truth(m, 0, x, cls)
    assert rows["g=a"]["observed_counts"]["eligible"] == 1
    # the case's own row (group a) and its counterfactual presented as b
    assert rows["g=a"]["rb_observed"] == (1.0 if rb_x else 0.0), rows
    assert rows["g=b"]["rb_flipped"] == (1.0 if rb_p else 0.0), rows
    fc = rows["g=b"]["flipped_counts"]
    assert fc["eligible"] == 1 and fc[flipped] == 1, fc
    # g > 0 disagrees with the model's rule on each of these cases
    assert (rb_x, rb_p) == ((True, True) if x == 2 else (False, False))
