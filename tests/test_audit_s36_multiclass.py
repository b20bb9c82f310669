"""Session 36 audit (h5): multiclass readouts and XGBoost multi-class boosters.

Truth here is brute force on the library's own runtime: scikit-learn's ``predict`` (the first largest column at a
tie), XGBoost's ``Booster.predict`` (its class for multi:softmax, its float32 probabilities for multi:softprob) and
``output_margin=True`` (the margins ``logit(m(x), c)`` reads)."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

GRID = np.array(list(itertools.product(range(4), range(2))), dtype=float)


def _pairs_differ(values) -> bool:
    """Does some pair (a, g=0) / (a, g=1) of GRID differ in ``values`` (one row per GRID point)?"""
    v = np.asarray(values)
    return any(not np.array_equal(v[i], v[i + 1]) for i in range(0, len(GRID), 2))


def _check(spec_path, enumerate_pairs, monkeypatch):
    from fairspec import api

    if enumerate_pairs == "0":
        monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")
    else:
        monkeypatch.delenv("FAIRSPEC_ENUMERATE_PAIRS", raising=False)
    return api.check(str(spec_path)).to_dict()


# ---- XGBoost multi:softmax: its booster computes no probability ------------------------------------------------

XGB_SPEC = """features F {{
  a : int in [0, 3]
  g : int in [0, 1] protected
}}
model m = xgboost("{file}")
encode F for m {{
  a : raw
  g : raw
}}
property pr {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  ensure {post}
}}
"""


def _softmax_booster(tmp_path, ext):
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = np.repeat(GRID, 30, axis=0)
    y = (X[:, 0] + X[:, 1] + rng.integers(0, 2, len(X))) % 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = xgb.train({"objective": "multi:softmax", "num_class": 3, "max_depth": 2, "nthread": 1},
                      xgb.DMatrix(X, label=y), num_boost_round=4)
    path = tmp_path / f"m.{ext}"
    b.save_model(str(path))
    loaded = xgb.Booster()
    loaded.load_model(str(path))
    return path, loaded


@pytest.mark.parametrize("ext", ["json", "ubj"])
def test_multi_softmax_prob_is_refused_in_one_sentence(tmp_path, monkeypatch, ext):
    """prob(m(x), c) of a multi:softmax booster: the booster's predict is the class and it computes no probability
    (the tree engines said so, `unknown`; the other paths read a float64 softmax of the margins, a number no runtime
    computes). Now FS415 at lint, with the hint to compare classes or margins. Failed before (no diagnostic)."""
    path, _ = _softmax_booster(tmp_path, ext)
    spec = tmp_path / "s.fair"
    spec.write_text(XGB_SPEC.format(file=path.name, post="|prob(m(x), 1) - prob(m(x'), 1)| <= 0.5"))
    rep = _check(spec, "", monkeypatch)
    errors = [d for d in rep["diagnostics"] if d["severity"] == "error"]
    assert [d["code"] for d in errors] == ["FS415"], errors
    assert "multi:softmax" in errors[0]["message"] and "multi:softprob" in errors[0]["hint"], errors[0]


@pytest.mark.parametrize("enumerate_pairs", ["", "0"])
@pytest.mark.parametrize("ext", ["json", "ubj"])
def test_multi_softmax_class_and_margin_agree_with_the_booster(tmp_path, monkeypatch, ext, enumerate_pairs):
    """class(m(x)) is Booster.predict (the class), logit(m(x), c) its output_margin column, on both file formats and
    both the enumeration and the solver paths: verdicts as brute force on the booster's own outputs."""
    xgb = pytest.importorskip("xgboost")
    path, b = _softmax_booster(tmp_path, ext)
    cls = b.predict(xgb.DMatrix(GRID))
    margin = b.predict(xgb.DMatrix(GRID), output_margin=True).astype(np.float64)
    for post, differ in (("class(m(x)) == class(m(x'))", _pairs_differ(cls)),
                         ("|logit(m(x), 2) - logit(m(x'), 2)| <= 0", _pairs_differ(margin[:, 2]))):
        spec = tmp_path / "s.fair"
        spec.write_text(XGB_SPEC.format(file=path.name, post=post))
        (p,) = _check(spec, enumerate_pairs, monkeypatch)["properties"]
        assert p["status"] == ("violated" if differ else "holds"), (post, p)
