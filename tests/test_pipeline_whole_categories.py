"""A pipeline evaluated whole (FS423: here an imputer of the value 0) against the categories its
encoders were fitted on (session 29, the pipelines soundness family, seed 1000005): a declared
category the encoder does not know is FS422 at lint, as when it folds (was: no diagnostic, then check
failed with an uncoded sentence from the pipeline's own transform); categories it knows that the
feature leaves out are warning FS437 (was silent: the properties ranged over fewer categories than
the model was fitted on), the verdict still the pipeline's own predict enumerated."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

SPEC = """data d = csv("d.csv", label = y == 1)
features F from d {
  g : DECL  protected
  n : int in [0, 2]
}
model m = sklearn("m.skops")
property p {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure label(m(x)) == label(m(x'))
}
"""


def _case(encoder: str, known, declared):
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

    rows = list(itertools.product("AB", range(3)))
    frame = pd.DataFrame(rows, columns=["g", "n"])
    frame["y"] = np.arange(len(frame)) % 2
    enc = OneHotEncoder(categories=[known]) if encoder == "onehot" else OrdinalEncoder(categories=[known])
    pre = ColumnTransformer([("g", enc, ["g"]), ("n", SimpleImputer(missing_values=0, strategy="mean"), ["n"])])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = Pipeline([("pre", pre), ("clf", LogisticRegression())]).fit(frame[["g", "n"]], frame["y"])
    return pipe, frame, SPEC.replace("DECL", "{" + ", ".join(declared) + "}")


@pytest.mark.parametrize("encoder", ["onehot", "ordinal"])
def test_declared_category_unknown_to_a_whole_pipeline_is_fs422(tmp_path, encoder):
    import fairspec

    pipe, frame, spec = _case(encoder, ["A", "B"], ["A", "B", "C"])
    path = tmp_path / "s.fair"
    path.write_text(spec)
    lint = fairspec.lint(path, models={"m": pipe}, data={"d": frame})
    assert [d.code for d in lint if d.is_error] == ["FS422"]
    assert "C of 'g'" in next(d.message for d in lint if d.code == "FS422")
    rep = fairspec.check(path, models={"m": pipe}, data={"d": frame})
    assert rep.exit_code == 2 and not rep.to_dict()["properties"]


@pytest.mark.parametrize("encoder", ["onehot", "ordinal"])
def test_categories_a_whole_pipeline_knows_beyond_the_declared_are_fs437(tmp_path, encoder):
    import pandas as pd

    import fairspec

    pipe, frame, spec = _case(encoder, ["A", "B", "Z"], ["A", "B"])
    path = tmp_path / "s.fair"
    path.write_text(spec)
    lint = fairspec.lint(path, models={"m": pipe}, data={"d": frame})
    assert not [d for d in lint if d.is_error]
    assert "Z" in next(d.message for d in lint if d.code == "FS437")
    doc = fairspec.check(path, models={"m": pipe}, data={"d": frame}).to_dict()
    dom = pd.DataFrame(list(itertools.product("AB", range(3))), columns=["g", "n"])
    lab = pipe.predict(dom)
    truth = "violated" if any(lab[i] != lab[i + 3] for i in range(3)) else "holds"
    assert doc["properties"][0]["status"] == truth


def test_an_encoder_that_ignores_unknown_categories_is_not_fs422(tmp_path):
    import fairspec

    pipe, frame, spec = _case("onehot", ["A", "B"], ["A", "B", "C"])
    pipe.named_steps["pre"].transformers_[0][1].handle_unknown = "ignore"
    path = tmp_path / "s.fair"
    path.write_text(spec)
    lint = fairspec.lint(path, models={"m": pipe}, data={"d": frame})
    assert not [d for d in lint if d.is_error], [d.message for d in lint]   # C is all zeros, as it computes
