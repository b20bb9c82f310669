"""Issue 23 item 2: a pipeline converted with skl2onnx (one graph input per column, string and
numeric tensors) loads; inputs are matched by name; no encode block is needed."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("skl2onnx")
pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType, Int64TensorType, StringTensorType
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    d = tmp_path_factory.mktemp("multi")
    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame({"race": rng.choice(["A", "B", "C"], n), "age": rng.integers(18, 24, n).astype(np.float32),
                       "sex": rng.choice(["F", "M"], n), "h": rng.integers(1, 5, n).astype(np.int64),
                       "junk": rng.normal(size=n).astype(np.float32)})
    y = (((df.age > 20) & (df.sex == "M")) | (df.h > 3) | (df.race == "B")).astype(int)
    pipe = Pipeline([("pre", ColumnTransformer([("oh", OneHotEncoder(), ["sex", "race"]),
                                                ("sc", StandardScaler(), ["age", "h"]),
                                                ("d", "drop", ["junk"])])),
                     ("clf", LogisticRegression())]).fit(df, y)
    types = [("race", StringTensorType([None, 1])), ("age", FloatTensorType([None, 1])),
             ("sex", StringTensorType([None, 1])), ("h", Int64TensorType([None, 1])),
             ("junk", FloatTensorType([None, 1]))]             # dropped: no node reads it, no feature feeds it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        onx = convert_sklearn(pipe, initial_types=types, options={id(pipe.steps[-1][1]): {"zipmap": False}})
    (d / "m.onnx").write_bytes(onx.SerializeToString())
    df.assign(y=y).to_csv(d / "people.csv", index=False)
    return d, pipe, df


SPEC = '''data people = csv("people.csv", label = y == 1)
features P from people {
  age : int in [18, 23]
  sex : {F, M} protected
  race : {A, B, C}
  h : int in [1, 4]
}
model m = onnx("m.onnx", output = "probabilities", index = 1, score = prob)
'''


def test_the_inputs_and_width_are_read_from_the_file(converted):
    from fairspec.models import load_model, peek_input_width
    from fairspec.models.peek import peek_input_names

    d, _, _ = converted
    assert peek_input_names("onnx", d / "m.onnx") == ("race", "age", "sex", "h", "junk")
    assert peek_input_width("onnx", d / "m.onnx") == 5
    m = load_model("onnx", d / "m.onnx", output="probabilities", index=1, score_kind="prob")
    assert m.multi and m.input_width == 5 and m.input_names == ("race", "age", "sex", "h", "junk")


def test_without_an_encode_block_the_values_are_the_pipelines(converted):
    """Group metrics and data falsification through onnxruntime equal scikit-learn's own pipeline
    (float32 inside the graph: the same decisions on these rows)."""
    from fairspec.pipeline import check
    from fairspec.sema.check import check_file

    d, pipe, df = converted
    spec = d / "auto.fair"
    spec.write_text(SPEC + '''
property parity {
  statistical_parity(m, groups sex) <= 0.1
}
property same {
  forall x, x' : P
  require x.* == x'.* except {sex}
  ensure label(m(x)) == label(m(x'))
}
''')
    # FS506 (warning): the solvers cannot read the graph's ai.onnx.ml encoders as a ReLU network
    assert [x.code for x in check_file(spec).diagnostics] == ["FS506"]
    enc = check_file(spec).spec.encodings[0]
    assert [(c.feature, c.kind, c.offset) for c in enc.columns] == [("race", "code", 0), ("age", "raw", 1),
                                                                      ("sex", "code", 2), ("h", "raw", 3)]
    got = {v.name: v for v in check(spec).verdicts}
    rates = {s: pipe.predict(df[df.sex == s]).mean() for s in ("F", "M")}
    assert got["parity"].value == pytest.approx(abs(rates["F"] - rates["M"]), abs=1e-12)
    flips = pipe.predict(df.assign(sex="F")) != pipe.predict(df.assign(sex="M"))
    assert flips.any() and got["same"].status == "violated"
    w = got["same"].witness
    row = lambda f: pd.DataFrame([{**{k: f[k] for k in ("race", "age", "sex", "h")}, "junk": 0.0}])  # noqa: E731
    assert pipe.predict(row(w.features))[0] != pipe.predict(row(w.features_prime))[0]


def test_an_encode_block_is_matched_by_name(converted):
    from fairspec.pipeline import check
    from fairspec.sema.check import check_file

    d, _, _ = converted
    spec = d / "block.fair"
    body = '''
property parity {
  statistical_parity(m, groups sex) <= 0.1
}
'''
    spec.write_text(SPEC + "encode P for m {\n  race : code\n  age : raw\n  sex : code\n  h : raw\n}\n" + body)
    assert [x.code for x in check_file(spec).diagnostics] == []
    want = check(spec).verdicts[0].value
    spec.write_text(SPEC + "encode P for m {\n  age, h : raw\n  sex, race : code\n}\n" + body)
    assert [x.code for x in check_file(spec).diagnostics] == ["FS421"]      # mapped by name
    assert check(spec).verdicts[0].value == want


def test_a_feature_reading_another_inputs_column_feeds_that_input(converted):
    """Graph inputs are the data frame's columns: the one a feature's data column names takes it,
    as the encoding (fairspec.sema.pipelines) matched them. The loader bound by the feature's name
    first, so `age : ... column "h"` beside `h : ... column "age"` fed each input the other's values:
    a silently different model (the parity here moved from the pipeline's own)."""
    from fairspec.pipeline import check

    d, pipe, df = converted
    spec = d / "swap.fair"
    spec.write_text(SPEC.replace("  age : int in [18, 23]\n", '  age : int in [1, 4]  column "h"\n')
                        .replace("  h : int in [1, 4]\n", '  h : int in [18, 23]  column "age"\n') + '''
property parity {
  statistical_parity(m, groups sex) <= 0.1
}
''')
    rates = {s: pipe.predict(df[df.sex == s]).mean() for s in ("F", "M")}
    (v,) = check(spec).verdicts
    assert v.value == pytest.approx(abs(rates["F"] - rates["M"]), abs=1e-12)
