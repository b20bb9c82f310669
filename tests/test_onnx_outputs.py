"""Which graph output an ONNX declaration reads, and what it holds, is never guessed from position.

skl2onnx writes a classifier's predicted ``label`` (int64) as output 0 and its ``probabilities``
as output 1. Reading output 0 as a logit made ``prob`` the sigmoid of a 0/1 label, and a property
on probabilities was ``holds (proved)`` while 52 domain cells broke it (an audit's case). Several
outputs and no ``output = ...``, or an output of labels, is lint error FS413 naming the outputs;
a Sigmoid/Softmax output holds probabilities and an ai.onnx.ml regressor's a regression's value
whatever the output's name."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

pytest.importorskip("skl2onnx")
ort = pytest.importorskip("onnxruntime")

from fairspec.pipeline import check, lint  # noqa: E402

HEAD = """data d = csv("d.csv", label = y == 1)
features P from d {{
  age : int in [18, 30]
  edu : int in [1, 5]
  sex : {{F, M}} protected
}}
model clf = onnx("m.onnx"{opts})
encode P for clf {{
  age, edu : raw
  sex : onehot
}}
"""
PROB = """property prob_sex {
  forall x, x' : P
  require x.* == x'.* except {sex}
  ensure |prob(clf(x)) - prob(clf(x'))| <= 0.3
}
"""


def _X(df):
    return np.column_stack([df[:, 0], df[:, 1], df[:, 2] == 0, df[:, 2] == 1]).astype(np.float32)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A logistic regression leaning on sex (probability gaps up to ~0.4) and a linear regression,
    converted by skl2onnx as teams do (zipmap off), with a small data file."""
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.linear_model import LinearRegression, LogisticRegression

    d = tmp_path_factory.mktemp("outputs")
    rng = np.random.default_rng(0)
    n = 300
    raw = np.column_stack([rng.integers(18, 31, n), rng.integers(1, 6, n), rng.integers(0, 2, n)])
    y = (((raw[:, 1] >= 3) & (raw[:, 2] == 1)) ^ (rng.random(n) < 0.1)).astype(int)
    X = _X(raw)
    lr = LogisticRegression(C=10.0).fit(X, y)
    reg = LinearRegression().fit(X, y * 0.8 + 0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, est, opts in (("m.onnx", lr, {id(lr): {"zipmap": False}}), ("reg.onnx", reg, None)):
            onx = convert_sklearn(est, initial_types=[("x", FloatTensorType([None, 4]))], options=opts)
            (d / name).write_bytes(onx.SerializeToString())
    with open(d / "d.csv", "w") as f:
        f.write("age,edu,sex,y\n")
        for (a, e, s), t in zip(raw, y):
            f.write(f"{a},{e},{'FM'[s]},{t}\n")
    return d


def _spec(folder, opts: str, body: str, name: str = "spec.fair", model: str = "m.onnx"):
    p = folder / name
    p.write_text(HEAD.format(opts=opts).replace("m.onnx", model) + body)
    return p


def _codes(path):
    return [(d.code, d.message, d.hint) for d in lint(path).diagnostics if d.is_error]


def test_several_outputs_and_none_named_is_fs413_naming_them(folder):
    errs = _codes(_spec(folder, "", PROB))
    assert [c for c, *_ in errs] == ["FS413"], errs
    _, message, hint = errs[0]
    assert "'label'" in message and "'probabilities'" in message
    assert 'output = "probabilities", index = 1' in hint
    report = check(folder / "spec.fair")
    assert report.has_errors and all(v.status != "holds" for v in report.verdicts)


def test_an_output_of_labels_is_fs413(folder):
    errs = _codes(_spec(folder, ', output = "label"', PROB))
    assert [c for c, *_ in errs] == ["FS413"] and "int64" in errs[0][1] and "not scores" in errs[0][1], errs


def test_the_probabilities_named_give_the_runtime_verdict(folder):
    """The declaration that names the output decides on onnxruntime's own probabilities: the
    verdict agrees with brute force over the domain (the audit's false proof is a violation)."""
    path = _spec(folder, ', output = "probabilities", index = 1', PROB)
    assert _codes(path) == []
    v = check(path).verdicts[0]
    sess = ort.InferenceSession(str(folder / "m.onnx"), providers=["CPUExecutionProvider"])
    cells = np.array([(a, e) for a, e in itertools.product(range(18, 31), range(1, 6))])
    p = [sess.run(["probabilities"], {"x": _X(np.column_stack([cells, np.full(len(cells), s)]))})[0][:, 1]
         for s in (0, 1)]
    worst = float(np.max(np.abs(p[0].astype(np.float64) - p[1])))
    assert worst > 0.3                                   # the fixture does break the property
    assert v.status == "violated" and v.witness is not None


def test_a_sigmoid_head_holds_probabilities_whatever_its_name(tmp_path):
    """A Gemm then Sigmoid output named "y": its values are probabilities, so the decision is
    y > 1/2 (read as a logit, every point was class 1)."""
    from onnx_nets import mlp_model

    import onnx

    from fairspec.models import load_model

    W = np.array([[1.0, -1.0]], dtype=np.float32)
    onnx.save(mlp_model([(W, np.zeros(1, dtype=np.float32), False)], final="Sigmoid", name="y"),
              str(tmp_path / "s.onnx"))
    m = load_model("onnx", tmp_path / "s.onnx")
    X = np.array([[2.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    assert m.score_kind == "prob"
    assert list(m.decide(X)) == [1, 0, 0]               # sigmoid(0) = 1/2 is not above 1/2


def test_an_onnx_regressor_is_a_regression_model(folder):
    """skl2onnx writes a LinearRegression as an ai.onnx.ml LinearRegressor: a binary metric or
    label of it is refused as for the same model saved with skops (FS418, FS415), never read as
    "value > 0"; value(...) and score = logit (the user's word) are accepted."""
    body = "property parity { statistical_parity(clf, groups sex) <= 0.1 }\n"
    errs = _codes(_spec(folder, "", body, "reg.fair", "reg.onnx"))
    assert [c for c, *_ in errs] == ["FS418"], errs
    label = "property same { forall x, x' : P\n require x.* == x'.* except {sex}\n ensure label(clf(x)) == label(clf(x')) }\n"
    assert [c for c, *_ in _codes(_spec(folder, "", label, "reg2.fair", "reg.onnx"))] == ["FS415"]
    assert _codes(_spec(folder, ", score = logit", body, "reg3.fair", "reg.onnx")) == []
    from fairspec.models import load_model

    assert load_model("onnx", folder / "reg.onnx").readout.task == "regression"
