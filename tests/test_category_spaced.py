"""A declared category with spaces around it (session 37, h4): fairspec reads every text cell without the
spaces around it, so `r : {" x", y, z}` matched no data row. With a pipeline fitted on " x", the rows holding
it (1209 of 2000) were dropped with the warning FS410 only, and statistical parity was `holds (estimated)`
at 0.0 over the other rows (the pipeline's own on the frame: 0.0248). Now error FS441 at the category."""

from __future__ import annotations

import numpy as np

import fairspec
from fairspec import pipeline

SPEC = """data d = csv("d.csv", label = y == "yes")
features F from d {
  r : {" x", y, z}  protected
  a : int in [0, 3]
}
model m = sklearn("m.skops")
property sp {
  statistical_parity(m, groups r) <= 0.01
  bootstrap = 20
  seed = 1
  min_group_size = 1
}
"""


def _frame():
    import pandas as pd

    i = np.arange(60)
    r = np.array([" x", "y", "z"])[i % 3]
    a = (i // 3) % 4
    y = np.where((a + (r == " x")) > 2, "yes", "no")
    return pd.DataFrame({"r": r, "a": a, "y": y})


def _model(df):
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    ct = ColumnTransformer([("oh", OneHotEncoder(), ["r"]), ("p", "passthrough", ["a"])])
    return Pipeline([("ct", ct), ("lr", LogisticRegression())]).fit(df[["r", "a"]], df["y"] == "yes")


def test_spaced_category_is_an_error_at_the_category(tmp_path):
    """Failed before: no diagnostic (the API's check said holds over the rows without " x")."""
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC, encoding="utf-8")
    df = _frame()
    diags = fairspec.lint(str(spec), models={"m": _model(df)}, data={"d": df})
    errs = [d for d in diags if d.severity == "error"]
    assert [d.code for d in errs] == ["FS441"], [(d.code, d.message) for d in diags]
    d = errs[0]
    assert (d.span.line, d.span.column, d.span.end_column) == (3, 8, 12), d.span
    assert "' x'" in d.message and 'declare "x"' in d.hint


def test_inner_spaces_and_plain_categories_are_no_error(tmp_path):
    (tmp_path / "d.csv").write_text("r,a,y\nx y,1,yes\nz,2,no\n", encoding="utf-8")
    spec = tmp_path / "s.fair"
    spec.write_text('data d = csv("d.csv", label = y == "yes")\n'
                    'features F from d {\n  r : {"x y", z}  protected\n  a : int in [0, 3]\n}\n', encoding="utf-8")
    res = pipeline.lint(str(spec))
    assert [d.code for d in res.diagnostics if d.code == "FS441"] == []
    assert not [d for d in res.diagnostics if d.is_error], [(d.code, d.message) for d in res.diagnostics]


def test_verdict_says_how_many_rows_were_dropped_outside_the_domain(tmp_path):
    """The rows outside a declared domain are dropped (README, FS410); the verdict now says how many, in
    details.rows_outside and the report, as it says rows_missing. Failed before (only a run-wide warning)."""
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC.replace('{" x", y, z}', "{x, y, z}").replace("[0, 3]", "[0, 2]"), encoding="utf-8")
    df = _frame()
    df["r"] = df["r"].str.strip()
    rep = fairspec.check(str(spec), models={"m": _model(df)}, data={"d": df})
    (p,) = rep.to_dict()["properties"]
    assert p["status"] in ("holds", "violated", "unknown"), p
    assert p["details"].get("rows_outside") == int((df["a"] == 3).sum()) == 15, p["details"]
    assert "15 rows outside a declared domain" in str(rep), str(rep)
