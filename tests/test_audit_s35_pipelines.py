"""Session 35 audit (h1): how fairspec reads a scikit-learn Pipeline's preprocessing (models/sklearn_pipeline.py and
the modules around it). Each test builds a pipeline the soundness harness never builds and compares fairspec's
verdict with the pipeline's own predict on the same rows."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("skops")


def _int_category_frame(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    g = rng.choice(["A", "B"], n)
    df = pd.DataFrame({"a": rng.integers(0, 4, n), "g": g,
                       "b": np.where(g == "B", rng.integers(1, 3, n), rng.integers(0, 2, n))})
    y = ((df.a + 2 * df.b + rng.normal(0, 1, n)) > 3.5).astype(int)
    return df, y


INT_CATEGORY_SPEC = """data people = csv("d.csv", label = y == 1)
features F from people {
  a : int in [0, 3]
  g : {A, B} protected
  b : {0, 1, 2}
}
model m = sklearn("m.skops")
property sp {
  statistical_parity(m, groups g) <= 0.4
}
"""


@pytest.mark.parametrize("encoder", ["onehot_ignore", "onehot_error", "target"])
def test_whole_pipeline_reads_number_categories_as_numbers(tmp_path, encoder):
    """A pipeline fairspec cannot fold (a RobustScaler) is evaluated whole on a data frame. Its encoder of b was
    fitted on int64 0 / 1 / 2 (pandas reading the CSV) and the spec declares b : {0, 1, 2}: fairspec's frame held
    the TEXT "0", "1", "2", unknown to the encoder -- all zeros with handle_unknown='ignore' (statistical parity
    0.006, `holds` for <= 0.4 over its whole interval, while the pipeline's own predict on the CSV gives 0.50),
    the overall target mean for a TargetEncoder, an evaluation failure with handle_unknown='error'. Now the frame
    holds the encoder's own category objects."""
    import skops.io as sio
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, RobustScaler, TargetEncoder

    from fairspec.pipeline import check

    df, y = _int_category_frame()
    enc = {"onehot_ignore": lambda: OneHotEncoder(handle_unknown="ignore"),
           "onehot_error": lambda: OneHotEncoder(), "target": lambda: TargetEncoder(random_state=0)}[encoder]()
    pre = ColumnTransformer([("oh", OneHotEncoder(), ["g"]), ("b", enc, ["b"]), ("sc", RobustScaler(), ["a"])])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = Pipeline([("pre", pre), ("clf", LogisticRegression())]).fit(df, y)
    df.assign(y=y).to_csv(tmp_path / "d.csv", index=False)
    back = pd.read_csv(tmp_path / "d.csv")
    pred = pipe.predict(back)
    truth = abs(pred[back.g == "A"].mean() - pred[back.g == "B"].mean())
    assert truth > 0.45                                   # far above the claim's 0.4: violated
    sio.dump(pipe, tmp_path / "m.skops")
    (tmp_path / "s.fair").write_text(INT_CATEGORY_SPEC)
    rep = check(str(tmp_path / "s.fair"))
    assert rep.error is None, rep.error
    (v,) = rep.verdicts
    assert v.status == "violated", (v.status, v.value, v.reason)
    assert v.value == pytest.approx(truth, abs=1e-12)


FLOAT32_SPEC = """features F {
  g : {A, B} protected
  c : {p, q}
}
model m = sklearn("m.skops")
property lb {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure label(m(x)) == label(m(x'))
}
"""


def _float32_pipeline(final):
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"g": rng.choice(["A", "B"], 200), "c": rng.choice(["p", "q"], 200)})
    y = ((df.c == "q") ^ (rng.random(200) < 0.2)).astype(int)
    pre = ColumnTransformer([("oh", OneHotEncoder(dtype=np.float32), ["g", "c"])])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Pipeline([("pre", pre), ("clf", final)]).fit(df, y)


@pytest.mark.parametrize("enumerate_pairs", ["1", "0"])
def test_float32_column_transformer_output_is_not_scored_in_float64(tmp_path, monkeypatch, enumerate_pairs):
    """Every output of the ColumnTransformer float32 (OneHotEncoder(dtype=np.float32)): np.hstack keeps float32,
    the LogisticRegression is fitted on float32 (coef_ float32) and computes its decision in float32. Weights on
    (gA, gB, cp, cq) 2^-25, 2^-23, 1, 5 and intercept -1: at c = p, in float64 the decision is 2^-25 (g = A) and
    2^-23 (g = B), label 1 both, and fairspec said `holds (proved)` (enumeration and solvers); in float32
    1 + 2^-25 rounds to 1 (in any order: two nonzero terms), so it is 0 (A: label 0) and 2^-23 (B: label 1):
    violated. Now the pipeline is evaluated whole (its own predict), not folded."""
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    from fairspec.pipeline import check

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", enumerate_pairs)
    pipe = _float32_pipeline(LogisticRegression())
    lr = pipe.steps[-1][1]
    lr.coef_[0, :] = [2.0 ** -25, 2.0 ** -23, 1.0, 5.0]
    lr.intercept_[:] = -1.0
    frame = pd.DataFrame({"g": ["A", "B"], "c": ["p", "p"]})
    assert list(pipe.predict(frame)) == [0, 1]                       # the runtime: violated
    assert pipe.decision_function(frame).dtype == np.float32
    sio.dump(pipe, tmp_path / "m.skops")
    (tmp_path / "s.fair").write_text(FLOAT32_SPEC)
    rep = check(str(tmp_path / "s.fair"))
    (v,) = rep.verdicts
    assert v.status in ("violated", "unknown"), (v.status, v.reason)


def test_float32_column_transformer_output_before_a_tree_still_folds():
    """A tree model compares float32 values anyway: one-hot 0 / 1 handed as float32 are the same numbers, and the
    pipeline stays folded (its trees read by the tree backends)."""
    from sklearn.tree import DecisionTreeClassifier

    from fairspec.models.pipeline_layout import narrow_handoff
    from fairspec.models.sklearn_pipeline import fold

    pipe = _float32_pipeline(DecisionTreeClassifier(max_depth=2, random_state=0))
    assert narrow_handoff(pipe, fold(pipe)).unfoldable == ()


WEIGHTED_CODE_SPEC = """features F {
  g : {A, B} protected
  b : int in [0, 2]
}
model m = sklearn("m.skops")
property lb {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure label(m(x)) == label(m(x'))
}
"""


@pytest.mark.parametrize("enumerate_pairs", ["1", "0"])
def test_float32_codes_times_a_transformer_weight_are_read_in_float32(tmp_path, monkeypatch, enumerate_pairs):
    """OrdinalEncoder(dtype=np.float32) under transformer_weights 0.1: the ColumnTransformer computes code * 0.1 in
    float32 (a float32 array times a Python float stays float32), B's code 1 * 0.1 = float32(0.1) =
    0.10000000149..., widened exactly in the float64 output (a StandardScaler beside it). fairspec's code table
    said 0.1. With the LR's weight 1 on the code and intercept -0.100000001: fairspec's decision at B was
    negative like A's (`holds (proved)`), the pipeline's own positive: violated."""
    import skops.io as sio
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OrdinalEncoder, StandardScaler

    from fairspec.pipeline import check

    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", enumerate_pairs)
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"g": rng.choice(list("AB"), 200), "b": rng.integers(0, 3, 200)})
    y = (rng.random(200) < 0.5).astype(int)
    pre = ColumnTransformer([("o", OrdinalEncoder(dtype=np.float32), ["g"]), ("s", StandardScaler(), ["b"])],
                            transformer_weights={"o": 0.1})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = Pipeline([("pre", pre), ("clf", LogisticRegression())]).fit(df, y)
    lr = pipe.steps[-1][1]
    lr.coef_[0, :] = [1.0, 0.0]
    lr.intercept_[:] = -0.100000001
    assert list(pipe.predict(pd.DataFrame({"g": ["A", "B"], "b": [0, 0]}))) == [0, 1]     # the runtime: violated
    sio.dump(pipe, tmp_path / "m.skops")
    (tmp_path / "s.fair").write_text(WEIGHTED_CODE_SPEC)
    rep = check(str(tmp_path / "s.fair"))
    assert not rep.has_errors, rep.diagnostics
    (v,) = rep.verdicts
    assert v.status in ("violated", "unknown"), (v.status, v.reason)
