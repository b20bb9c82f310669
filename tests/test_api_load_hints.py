"""The hint of a model that cannot be loaded says what to do about it: a pipeline holding a function its
training script defined (a lambda column selector) cannot be read back from skops, and the Python API's
hint spoke of paths relative to the spec file, which the user never wrote."""

from __future__ import annotations

import warnings
from itertools import product

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("skops")

import fairspec  # noqa: E402

SPEC = """data d = csv("d.csv", label = y == 1)
features F from d {
  g : {n, y}  protected
  f0 : int in [0, 2]
  f1 : {a, b, c}
}
model m = sklearn("m.skops")

property p {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure label(m(x)) == label(m(x'))
}
"""


def _fit(selector):
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    frame = pd.DataFrame([{"g": g, "f0": f0, "f1": f1} for g, f0, f1 in product("ny", range(3), "abc")] * 3)
    y = (np.arange(len(frame)) * 7 // 5) % 2
    pre = ColumnTransformer([("oh", OneHotEncoder(), selector), ("sc", StandardScaler(), ["f0"])])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Pipeline([("pre", pre), ("clf", LogisticRegression())]).fit(frame, y), frame.assign(y=y)


def _fs401(report):
    found = [d for d in report.report.diagnostics if d.code == "FS401"]
    assert len(found) == 1, report.report.diagnostics
    return found[0]


def test_a_lambda_column_selector_gets_a_hint_about_selectors_not_paths(tmp_path):
    pipe, data = _fit(lambda df: ["g", "f1"])
    (tmp_path / "s.fair").write_text(SPEC)
    rep = fairspec.check(tmp_path / "s.fair", models={"m": pipe}, data={"d": data})
    d = _fs401(rep)
    assert "the model given for 'm'" in d.message and "<lambda>" in d.message
    assert "make_column_selector" in d.hint and "relative to the spec" not in d.hint
    assert d.hint not in d.message       # said once, as the hint
    assert not list(rep)                 # no verdict on a model that was not read


def test_a_selector_scikit_learn_can_save_is_checked(tmp_path):
    # what the hint suggests works: the property is decided, on the pipeline's own predict
    from sklearn.compose import make_column_selector

    pipe, data = _fit(make_column_selector(dtype_include=object))
    (tmp_path / "s.fair").write_text(SPEC)
    rep = fairspec.check(tmp_path / "s.fair", models={"m": pipe}, data={"d": data})
    assert not [d for d in rep.report.diagnostics if d.code == "FS401"]
    frame = data.drop(columns="y")
    flips = pipe.predict(frame.assign(g="n")) != pipe.predict(frame.assign(g="y"))
    assert rep["p"].status == ("violated" if flips.any() else "holds"), rep["p"].reason


def test_the_same_file_on_the_command_line_gets_the_same_hint(tmp_path):
    import skops.io as sio

    from fairspec.cli import main

    pipe, data = _fit(lambda df: ["g", "f1"])
    sio.dump(pipe, tmp_path / "m.skops")
    data.to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "s.fair").write_text(SPEC)
    import contextlib
    import io
    import json

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["lint", str(tmp_path / "s.fair"), "--format", "json"])
    assert code == 2, out.getvalue()     # a lint error
    doc = json.loads(out.getvalue())
    [d] = [d for d in doc["diagnostics"] if d["code"] == "FS401"]
    assert "make_column_selector" in d["hint"] and "<lambda>" in d["message"]
