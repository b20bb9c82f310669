"""A pipeline fitted on a frame whose column is named otherwise than the spec's feature (``gender`` for the
feature ``sex``): FS422 names the feature that reads no column of the pipeline and the hint says how to
connect them (``sex : ... column "gender"``), not only the closest feature set's name."""

from __future__ import annotations

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("skops")

from sklearn.compose import make_column_transformer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder  # noqa: E402

import fairspec  # noqa: E402

SPEC = """features A {{
  age : int in [18, 22]
  sex : {{F, M}} protected{column}
  region : {{east, north}}
}}
model clf = sklearn("clf.skops")
property ind {{
  forall x, x' : A
  require x.* == x'.* except {{sex}}
  ensure label(clf(x)) == label(clf(x'))
}}
"""


@pytest.fixture(scope="module")
def pipe():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"age": rng.integers(18, 23, 200), "gender": rng.choice(["F", "M"], 200),
                      "region": rng.choice(["east", "north"], 200)})
    y = (X.age + (X.gender == "M") * 2 > 21).astype(int)
    return make_pipeline(make_column_transformer((OneHotEncoder(), ["gender", "region"]), remainder="passthrough"),
                         LogisticRegression()).fit(X, y)


def test_the_feature_reading_no_column_is_named_with_the_declaration_that_connects_it(tmp_path, pipe):
    p = tmp_path / "s.fair"
    p.write_text(SPEC.format(column=""))
    (d,) = [d for d in fairspec.lint(p, models={"clf": pipe}) if d.is_error]
    assert d.code == "FS422" and "gender" in d.message and "feature sex names no column" in d.message, d.message
    assert 'sex : ... column "gender"' in d.hint, d.hint


def test_with_the_column_named_the_pipeline_is_checked(tmp_path, pipe):
    p = tmp_path / "s.fair"
    p.write_text(SPEC.format(column=' column "gender"'))
    rep = fairspec.check(p, models={"clf": pipe})
    grid = pd.DataFrame([(a, g, r) for a in range(18, 23) for g in "FM" for r in ("east", "north")],
                        columns=["age", "gender", "region"])
    flipped = grid.assign(gender=np.where(grid.gender == "F", "M", "F"))
    flips = int(np.sum(pipe.predict(grid) != pipe.predict(flipped)))
    assert rep["ind"].status == ("violated" if flips else "holds"), rep["ind"]
    if flips:
        assert rep["ind"].reason.startswith(f"{flips} of the 20 admissible ordered pairs"), rep["ind"].reason


def test_a_column_name_with_spaces_around_it_is_told_to_be_stripped(tmp_path):
    """" age" (pandas reading a header written ``age, sex``): fairspec reads header names stripped, so the
    declaration ``column " age"`` would find no column; the hint says to strip the names before fitting."""
    rng = np.random.default_rng(1)
    X = pd.DataFrame({" age": rng.integers(18, 23, 100), "sex": rng.choice(["F", "M"], 100),
                      "region": rng.choice(["east", "north"], 100)})
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["sex", "region"]), remainder="passthrough"),
                         LogisticRegression()).fit(X, (X[" age"] > 20).astype(int))
    p = tmp_path / "s.fair"
    p.write_text(SPEC.format(column=""))
    (d,) = [d for d in fairspec.lint(p, models={"clf": pipe}) if d.is_error]
    assert d.code == "FS422" and "str.strip" in d.hint and 'column " age"' not in d.hint, d.hint


@pytest.mark.parametrize("block", ["", "encode A for clf {\n  age : raw\n  sex, region : onehot\n}\n"])
def test_a_pipeline_fitted_on_an_array_is_told_to_be_fitted_on_a_frame(tmp_path, block):
    """A ColumnTransformer selecting columns by position, fitted on ``frame.to_numpy()``: the pipeline records no
    names (x0, x1, ... are positions); FS422 says so and how to fit it, not "feature set A declares the others"."""
    rng = np.random.default_rng(2)
    X = pd.DataFrame({"age": rng.integers(18, 23, 100), "sex": rng.choice(["F", "M"], 100),
                      "region": rng.choice(["east", "north"], 100)})
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), [1, 2]), remainder="passthrough"),
                         LogisticRegression()).fit(X.to_numpy(), (X.age > 20).astype(int))
    p = tmp_path / "s.fair"
    p.write_text(SPEC.format(column="").replace('model clf = sklearn("clf.skops")\n', 'model clf = sklearn("clf.skops")\n'
                                                + block))
    (d,) = [d for d in fairspec.lint(p, models={"clf": pipe}) if d.is_error]
    assert d.code == "FS422" and "fitted on an array" in d.message and "DataFrame" in d.hint, (d.message, d.hint)


def test_an_unseen_category_of_an_ignoring_one_hot_encoder_says_why_it_is_refused(tmp_path):
    """OneHotEncoder(handle_unknown="ignore") and a declared category it was not fitted on: FS422's hint says
    the encoder would write it as all zeros and fairspec folds the categories it knows."""
    rng = np.random.default_rng(3)
    X = pd.DataFrame({"age": rng.integers(18, 23, 100), "sex": rng.choice(["F", "M"], 100),
                      "region": rng.choice(["east"], 100)})
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["sex", "region"]),
                                                 remainder="passthrough"),
                         LogisticRegression()).fit(X, (X.age > 20).astype(int))
    p = tmp_path / "s.fair"
    p.write_text(SPEC.format(column=""))
    (d,) = [d for d in fairspec.lint(p, models={"clf": pipe}) if d.is_error]
    assert d.code == "FS422" and "north" in d.message and "handle_unknown='ignore'" in d.hint, (d.message, d.hint)
