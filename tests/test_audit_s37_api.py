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


FRAME_SPEC = '''data people = csv("people.csv", label = y == 1)
features P from people {
  g : {F, M} protected
  a : int in [0, 3]
  s : real in [0, 3]
  b : bool
}
model m = sklearn("m.skops")
property sp {
  statistical_parity(m, groups g) <= 0.9
  min_group_size = 1
}
'''


@pytest.mark.parametrize("dtypes", ["arrow", "nullable"])
def test_a_frame_of_extension_dtypes_with_nulls_is_read_as_the_pipeline_reads_it(tmp_path, dtypes):
    """A guard (sound before): a pipeline fitted on a frame of pyarrow / pandas nullable dtypes (string, int64,
    float32, bool, a Categorical with categories the spec does not name), with nulls in several columns. The API's
    statistical parity is exactly the pipeline's own predict on the frame's complete rows, and no file is left in
    the caller's folder."""
    import warnings

    import numpy as np
    pytest.importorskip("skops")
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(12)
    n = 300
    df = pd.DataFrame({"g": rng.choice(["F", "M"], n), "a": rng.integers(0, 4, n),
                       "s": (rng.random(n) * 3).astype(np.float32), "b": rng.random(n) < 0.4})
    df["y"] = ((df.a + df.s * 0.9 + (df.g == "M") * 0.6 + df.b + rng.normal(0, 1, n)) > 3).astype(int)
    miss = rng.random(n) < 0.05
    if dtypes == "arrow":
        pytest.importorskip("pyarrow")
        df = df.astype({"g": "string[pyarrow]", "a": "int64[pyarrow]", "s": "float32[pyarrow]", "b": "bool[pyarrow]"})
        df.loc[miss, "g"] = None
    else:
        df = df.astype({"a": "Int64", "s": "Float32", "b": "boolean"})
        df["g"] = pd.Categorical(df.g.where(~miss), categories=["M", "F", "X"])
        df.loc[np.roll(miss, 7), "a"] = None
    df.loc[np.roll(miss, 3), "b"] = None
    df.loc[np.roll(miss, 5), "s"] = None
    X = df[["g", "a", "s", "b"]]
    keep = X.notna().all(axis=1).values
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = Pipeline([("pre", ColumnTransformer([("oh", OneHotEncoder(), ["g"])], remainder="passthrough")),
                         ("clf", LogisticRegression())]).fit(X[keep].astype({"s": "float32"}), df.y[keep])
        pred = pipe.predict(X[keep])
    g = X[keep].g.astype(str).values
    truth = abs(pred[g == "F"].mean() - pred[g == "M"].mean())
    spec = tmp_path / "s.fair"
    spec.write_text(FRAME_SPEC)
    rep = fairspec.check(spec, models={"m": pipe}, data={"people": df})
    (v,) = rep
    assert v.status == "holds" and v.details["rows"] == keep.sum(), (v.status, v.reason, v.details.get("rows"))
    assert v.value == pytest.approx(truth, abs=1e-12)
    assert list(tmp_path.iterdir()) == [spec]


def test_a_message_about_a_model_given_names_it_once(tmp_path):
    """FS413 about a torch module passed in memory read "model 'm': the output of the model given for 'm' has 2
    columns, ..." (the written file's path relabelled after the prefix that already names the model); now the
    model is named once, as in "model 'm': the output of m.pt has 2 columns" from `fairspec check`."""
    torch = pytest.importorskip("torch")
    net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Softmax(dim=1))
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC.replace("DECL", 'torch("m.pt")'))
    rep = fairspec.check(spec, models={"m": net})
    (d,) = [d for d in rep.diagnostics if d.code == "FS413"]
    assert d.message.startswith("the output of the model given for 'm' has 2 columns, one per class"), d.message
