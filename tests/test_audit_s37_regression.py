"""Session 37 audit (h7): regression models read by fairspec, compared with the library's own predict.

Truth here is brute force (or a concrete pair) on the library's runtime: LightGBM's ``Booster.predict``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

SQRT_SPEC = """features F {{
  a : int in [0, 2000]
  b : int in [0, 2000]
  g : int in [0, 1] protected
}}
model m = lightgbm("m.txt")
encode F for m {{ a : raw  b : raw  g : raw }}
property pr {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  ensure |value(m(x)) - value(m(x'))| <= {eps}
  timeout = 60
}}
"""


def _sqrt_booster(tmp_path, sqrt: bool):
    """A LightGBM regression trained with ``reg_sqrt`` (its file says ``objective=regression sqrt``): the library
    predicts sign(r) r**2 of the raw score r, which its leaves sum; its raw score moves with g by at most 0.05,
    its prediction by up to 0.9 (r near 10 at a = 537)."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    n = 20000
    a = rng.choice([0, 536, 537, 538, 2000], n)
    X = np.c_[a, rng.integers(0, 2001, n), rng.integers(0, 2, n)].astype(float)
    r = 10.0 * (X[:, 0] == 537) + 0.01 * X[:, 2] + 0.05 * np.floor(X[:, 1] / 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = lgb.train(dict(objective="regression", reg_sqrt=sqrt, verbose=-1, num_leaves=63, min_data_in_leaf=1,
                           learning_rate=1.0, boost_from_average=False, max_bin=1023, num_threads=1),
                      lgb.Dataset(X, r ** 2 if sqrt else r), num_boost_round=6)
    b.save_model(str(tmp_path / "m.txt"))
    return lgb.Booster(model_file=str(tmp_path / "m.txt"))


@pytest.mark.parametrize("sqrt", [True, False])
def test_lightgbm_reg_sqrt_is_not_bounded_by_its_raw_score(tmp_path, monkeypatch, sqrt):
    """The certified branch and bound over leaf boxes bounded a LightGBM regression's value by its summed leaves
    (objective "regression", the first word of "regression sqrt"): a reg_sqrt model's value difference of 0.91
    was `holds (proved)` for eps 0.5 (its raw score's difference is at most 0.05). Now the boxes read no reg_sqrt model
    (`unknown` past enumeration); enumeration, on the library's predict, still decides small domains. A reg_sqrt
    model's pair (a = 537) violates on the library. Failed before the fix (holds proved)."""
    from fairspec import api

    booster = _sqrt_booster(tmp_path, sqrt)
    G = np.array([[a, b, g] for a in (536, 537, 538) for b in range(2001) for g in (0, 1)], dtype=float)
    p = booster.predict(G)
    worst = float(np.abs(p[0::2] - p[1::2]).max())
    assert (worst > 5) == sqrt, worst
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")          # the domain to the boxes, as past 400,000 cells
    (tmp_path / "s.fair").write_text(SQRT_SPEC.format(eps=5))
    (v,) = api.check(str(tmp_path / "s.fair")).to_dict()["properties"]
    if sqrt:
        assert not v["status"].startswith("holds"), v
    else:
        assert v["status"].startswith("holds") or v["status"].startswith("unknown"), v
