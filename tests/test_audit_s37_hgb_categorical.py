"""Session 37 (h5, found by the soundness family model-readings): a multiclass HistGradientBoostingClassifier with
categorical_features on a small domain.

Its categorical splits are not read as trees, nor is it a network, so the class / prob(m(x), c) posts fell through
to "the post-condition 'class' (issue 25) is not yet decided by the milp backend" -- `unknown` on 8 points, where the
same model without categorical_features was decided by enumeration. Now the small domain is enumerated on the
model's own predict / predict_proba (kinds/individual_fairness._small_domain). Truth: brute force on the model."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

pytest.importorskip("sklearn")

SPEC = """features F {
  a : int in [0, 3]
  g : {A, B} protected
}
model m = sklearn("m.skops")
encode F for m {
  a : raw
  g : code
}
property p {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure ENSURE
}
"""
GRID = np.array(list(itertools.product(range(4), range(2))), dtype=float)


def _model():
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(0)
    R = GRID[rng.integers(0, 8, 200)]
    y = (R[:, 0] + R[:, 1] + rng.normal(0, 1, 200)).round().clip(0, 2).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return HistGradientBoostingClassifier(max_iter=3, categorical_features=[False, True], random_state=0).fit(R, y)


@pytest.mark.parametrize("ensure", ["class(m(x)) == class(m(x'))", "|prob(m(x), 1) - prob(m(x'), 1)| <= 0.05",
                                    "|prob(m(x), 0) - prob(m(x'), 0)| <= 0.9"])
def test_categorical_hgb_multiclass_is_enumerated(tmp_path, ensure):
    """Decided, and as brute force says (failed before: unknown, 'not yet decided by the milp backend')."""
    import fairspec

    est = _model()
    k, P = est.predict(GRID), est.predict_proba(GRID)
    pairs = range(0, len(GRID), 2)
    if ensure.startswith("class"):
        truth = "holds" if all(k[i] == k[i + 1] for i in pairs) else "violated"
    else:
        c, eps = int(ensure.split(",")[1].split(")")[0]), float(ensure.rsplit(" ", 1)[1])
        truth = "holds" if all(abs(P[i, c] - P[i + 1, c]) <= eps for i in pairs) else "violated"
    (tmp_path / "s.fair").write_text(SPEC.replace("ENSURE", ensure))
    rep = fairspec.check(tmp_path / "s.fair", models={"m": est})
    assert rep.exit_code != 4 and not rep.report.internal_errors, rep.report.internal_errors
    v = rep.to_dict()["properties"][0]
    assert v["status"] == truth, v
    if truth == "holds":
        assert v["how"] == "proved" and v.get("proof"), v


def test_a_value_post_on_an_unread_regression_booster_is_not_an_internal_error(tmp_path):
    """Review r5: an XGBoost gblinear regressor (no trees read) with a `value` post went to the new small-domain
    branch, whose enumeration has no `value` post: an internal error (exit 4) where main said unknown (exit 3)."""
    xgb = pytest.importorskip("xgboost")
    import fairspec

    spec = SPEC.replace('sklearn("m.skops")', 'xgboost("m.json")').replace(
        "ENSURE", "|value(m(x)) - value(m(x'))| <= 0.5")
    rng = np.random.default_rng(0)
    R = GRID[rng.integers(0, 8, 200)]
    y = R[:, 0] * 0.3 + R[:, 1] * 0.7 + rng.normal(0, 0.2, 200)
    est = xgb.XGBRegressor(n_estimators=3, booster="gblinear", n_jobs=1, random_state=0).fit(R, y)
    (tmp_path / "s.fair").write_text(spec)
    rep = fairspec.check(str(tmp_path / "s.fair"), models={"m": est})
    assert not rep.report.internal_errors
    v = rep.to_dict()["properties"][0]
    # |diff| max on the runtime is 0.315 (<= 0.5 holds): any verdict but a wrong one, and no crash
    assert v["status"] in ("holds", "unknown"), v
    assert rep.exit_code in (0, 3)
