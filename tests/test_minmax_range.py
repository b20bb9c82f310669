"""A pipeline's MinMaxScaler with a feature_range other than (0, 1) is folded (transform is X * scale_ +
min_ whatever the range) so the solvers take it: it was `unknown` ("fairspec folds (0, 1)") on every
solver path. Checked against brute force on the pipeline's own predict_proba; an encode block's
minmax(lo, hi), which maps onto (0, 1), disagrees with such a scaler: FS422."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("skops")

from fairspec.models.sklearn_model import import_skops_io  # noqa: E402

SPEC = """data d = csv("d.csv", label = y == 1)
features F from d {
  sex : {F, M}  protected
  h : int in [1, 7]
}
model m = sklearn("m.skops")
ENCODE
property p {
  forall x, x' : F
  require x.* == x'.* except {sex}
  ensure |prob(m(x)) - prob(m(x'))| <= EPS
  using ENGINE
}
"""


@pytest.fixture(scope="module", params=[(-1, 1), (2, 5)])
def project(request, tmp_path_factory):
    from sklearn.compose import ColumnTransformer
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import MinMaxScaler, OneHotEncoder

    d = tmp_path_factory.mktemp("mm")
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"sex": rng.choice(["F", "M"], 120), "h": rng.integers(1, 8, 120)})
    y = ((df.h > 4) | (df.sex == "M")).astype(int)
    pre = ColumnTransformer([("oh", OneHotEncoder(), ["sex"]), ("mm", MinMaxScaler(request.param), ["h"])])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = Pipeline([("pre", pre), ("clf", MLPClassifier((3,), max_iter=300, random_state=0))]).fit(df, y)
    import_skops_io().dump(pipe, d / "m.skops")
    df.assign(y=y).to_csv(d / "d.csv", index=False)
    grid = pd.DataFrame({"sex": ["F"] * 7 + ["M"] * 7, "h": list(range(1, 8)) * 2})
    p = pipe.predict_proba(grid)[:, 1].reshape(2, 7)
    return d, float(np.max(np.abs(p[0] - p[1])))


def _run(d, eps, engine, encode="", monkeypatch=None):
    from fairspec.pipeline import check

    (d / "s.fair").write_text(SPEC.replace("EPS", repr(eps)).replace("ENGINE", engine).replace("ENCODE", encode))
    return check(str(d / "s.fair"))


@pytest.mark.parametrize("engine", ["milp", "smt"])
def test_a_scaler_onto_another_range_is_decided_by_the_solvers_as_brute_force_says(project, engine, monkeypatch):
    monkeypatch.setenv("FAIRSPEC_ENUMERATE_PAIRS", "0")      # the solver path, not the enumeration
    d, truth = project
    above = _run(d, truth * 1.001 + 1e-9, engine)
    [v] = above.verdicts
    assert v.status == "holds" and v.how is not None and v.how.startswith("proved"), (v.status, v.reason)
    below = _run(d, truth * 0.999, engine)
    [v] = below.verdicts
    assert v.status == "violated", (v.status, v.reason)
    w = v.witness
    assert abs(w.outputs[0] - w.outputs[1]) > truth * 0.999


def test_an_encode_block_scaling_onto_0_1_disagrees_with_the_scaler(project):
    d, _ = project
    from fairspec.pipeline import check

    from fairspec.models import load_model

    mm = load_model("sklearn", d / "m.skops").pipeline.steps[0][1].named_transformers_["mm"]
    if tuple(mm.feature_range) == (0, 1):
        pytest.skip("a unit range")
    block = (f"encode F for m {{\n  sex : onehot\n  h : minmax(lo = {float(mm.data_min_[0])!r}, "
             f"hi = {float(mm.data_max_[0])!r})\n}}\n")
    (d / "s.fair").write_text(SPEC.replace("EPS", "0.5").replace("ENGINE", "milp").replace("ENCODE", block))
    rep = check(str(d / "s.fair"))
    codes = [x.code for x in rep.diagnostics]
    assert "FS422" in codes, codes
    msg = next(x.message for x in rep.diagnostics if x.code == "FS422")
    assert "range" in msg and "(0, 1)" in msg
    assert json.dumps(msg)
