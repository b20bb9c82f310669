"""The Python API on polars data frames: a polars DataFrame gives the report its pandas counterpart
gives (fairspec converts it with polars' own ``to_pandas()``), Enum and Categorical columns and
nulls included; what is not a DataFrame is one sentence.

polars is no dependency of fairspec (pyproject.toml declares it in no extra), so the tests that
need it skip where it is not installed; the refusals that need no polars run everywhere."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

import fairspec

SPEC = """data d = csv("d.csv", label = y == "yes")
features F from d {
  g : {a, b, c}  protected
  h : {lo, hi}
  x : int in [0, 3]
}
model m = sklearn("m.skops")
encode F for m {
  g : onehot
  h : code
  x : raw
}
property sp {
  statistical_parity(m, groups g) <= 0.1
  bootstrap = 50
  seed = 1
  min_group_size = 1
}
property flip {
  forall x, x' : F
  require x.* == x'.* except {g}
  ensure label(m(x)) == label(m(x'))
  using data
}
"""

N = 60
NULLS = {"g": 5, "h": 7, "x": 11, "y": 13}    # one null per column: four rows the spec drops


def _columns():
    i = np.arange(N)
    g = np.array(["a", "b", "c"])[i % 3]
    h = np.array(["lo", "hi"])[(i // 3) % 2]
    x = (i // 2) % 4
    y = (x + (g == "b")) > 2
    return g, h, x, y


def _model():
    from sklearn.tree import DecisionTreeClassifier

    g, h, x, y = _columns()
    X = np.column_stack([g == "a", g == "b", g == "c", h == "hi", x]).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y.astype(int))


def _values():
    """Each column's cells as Python values, None where the cell is null."""
    g, h, x, y = _columns()
    cols = {"g": list(g), "h": list(h), "x": [int(v) for v in x], "y": ["yes" if v else "no" for v in y]}
    for c, row in NULLS.items():
        cols[c][row] = None
    return cols


def _stable(report, fmt: str) -> dict:
    """The JSON report without what differs between two runs (times, the check's clock, the hash of
    the model's skops file, a zip archive that records when it was written). A CSV file's hash
    stays: the two frames are written to the same bytes; a Parquet file records the frame's pandas
    dtypes in its metadata (polars' strings are pandas' str, the order of a Categorical's categories
    is polars' order of first appearance), so its hash and size go."""
    doc = report.to_dict()
    doc.pop("seconds")
    for p in doc["properties"]:
        p.pop("seconds")
    for load in doc["loads"]:
        load.pop("seconds")
    doc["provenance"].pop("checked_at")
    for entry in doc["provenance"]["files"]:
        if entry["role"] == "model":
            entry.pop("sha256")
        if entry["role"] == "data" and fmt == "parquet":
            entry.pop("sha256"), entry.pop("bytes")
    return doc


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_polars_frame_gives_its_pandas_counterparts_report(tmp_path, fmt):
    pl = pytest.importorskip("polars")
    pd = pytest.importorskip("pandas")
    pytest.importorskip("skops.io")
    v = _values()
    frame = pl.DataFrame({"g": pl.Series(v["g"], dtype=pl.Enum(["a", "b", "c"])),
                          "h": pl.Series(v["h"], dtype=pl.Categorical),
                          "x": pl.Series(v["x"], dtype=pl.Int64),
                          "y": pl.Series(v["y"], dtype=pl.String)})
    # the same data as a pandas user holds it: categoricals, an integer column with a null is float
    pframe = pd.DataFrame({"g": pd.Categorical(v["g"], categories=["a", "b", "c"]), "h": pd.Categorical(v["h"]),
                           "x": [np.nan if c is None else float(c) for c in v["x"]],
                           "y": pd.Series(v["y"], dtype=object)})
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC if fmt == "csv" else SPEC.replace('csv("d.csv",', 'parquet("d.parquet",'))
    m = _model()

    polars_report = fairspec.check(spec, models={"m": m}, data={"d": frame})
    pandas_report = fairspec.check(spec, models={"m": m}, data={"d": pframe})

    assert _stable(polars_report, fmt) == _stable(pandas_report, fmt)
    sp, flip = polars_report["sp"], polars_report["flip"]
    assert sp.details["rows"] == N - len(NULLS) and sp.details["rows_missing"] == len(NULLS), sp.details
    assert [grp["group"] for grp in sp.details["groups"]] == ["g=a", "g=b", "g=c"]
    assert flip.status == "violated" and flip.witness is not None and flip.details["rows"] == N - len(NULLS)
    assert not polars_report.diagnostics, [d.message for d in polars_report.diagnostics]


def test_a_polars_lazy_frame_or_series_is_one_sentence(tmp_path):
    pl = pytest.importorskip("polars")
    pytest.importorskip("pandas")
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC)
    frame = pl.DataFrame(_values())
    with pytest.raises(fairspec.FairspecError, match=r"LazyFrame given is not computed; pass frame\.collect\(\)"):
        fairspec.check(spec, data={"d": frame.lazy()})
    with pytest.raises(fairspec.FairspecError, match=r"not a polars Series \(series\.to_frame\(\) makes one\)"):
        fairspec.check(spec, data={"d": frame["g"]})


class _PolarsLike:
    """Stands in for a polars DataFrame (its type's module is polars'), for the tests without polars."""

    __module__ = "polars.dataframe.frame"
    columns = ["g", "h", "x", "y"]

    def to_pandas(self):
        raise ModuleNotFoundError("No module named 'pandas'")


def test_a_polars_frame_without_pandas_is_one_sentence(tmp_path, monkeypatch):
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC)
    monkeypatch.setitem(sys.modules, "pandas", None)          # import pandas raises ImportError
    with pytest.raises(fairspec.FairspecError, match=r"converted with its to_pandas\(\), which needs pandas"):
        fairspec.check(spec, data={"d": _PolarsLike()})


def test_a_pandas_series_is_one_sentence(tmp_path):
    pd = pytest.importorskip("pandas")
    spec = tmp_path / "s.fair"
    spec.write_text(SPEC)
    with pytest.raises(fairspec.FairspecError, match=r"not a Series \(series\.to_frame\(\) makes one\)"):
        fairspec.check(spec, data={"d": pd.Series([1, 2])})
