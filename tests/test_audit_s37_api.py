"""Session 37 audit (h4, round 2): the Python API with the models teams ship, passed in memory. Each test
compares what the API says with what `fairspec check` says on the same objects saved, or with the library."""

from __future__ import annotations

import pytest

import fairspec

pd = pytest.importorskip("pandas")

SPEC = '''features P {
  a : int in [0, 3]
  g : {F, M} protected
}
model m = DECL
encode P for m { a : raw  g : code }
property f {
  forall x, x' : P
  require x.* == x'.* except {g}
  ensure label(m(x)) == label(m(x'))
}
'''


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm"])
def test_an_unfitted_booster_wrapper_is_one_sentence(tmp_path, lib):
    """An XGBClassifier / LGBMClassifier not fitted yet, passed in memory: one sentence saying so, as for an unfitted
    scikit-learn estimator (FS401 '... is not fitted (call its fit method ...)'). It was the library's own error
    from deep inside the writer: "AttributeError: 'LGBMClassifier' object has no attribute 'save_model'",
    "NotFittedError: need to call fit or load_model beforehand"."""
    if lib == "xgboost":
        xgb = pytest.importorskip("xgboost")
        obj, decl = xgb.XGBClassifier(), 'xgboost("m.json")'
    else:
        lgb = pytest.importorskip("lightgbm")
        obj, decl = lgb.LGBMClassifier(), 'lightgbm("m.txt")'
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC.replace("DECL", decl))
    with pytest.raises(fairspec.FairspecError) as err:
        fairspec.check(spec, models={"m": obj})
    assert str(err.value) == (f"model 'm': the {type(obj).__name__} given is not fitted (call its fit method on the "
                              f"training data first)")
    assert list(tmp_path.iterdir()) == [spec]
