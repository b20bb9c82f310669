"""Boolean label and decision columns on data (CSV true/false, Parquet bool, with nulls): the
positive value is the one the spec states, and group metrics agree with fairlearn.

A Parquet boolean column is text "True" / "False" to a data expression, as lint samples and types
it: ``label = y == "True"`` once compared the table's 1.0 / 0.0 with that text, so the label was
false on every row and base_rate_difference held at 0 (a wrong verdict)."""

from __future__ import annotations

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
fm = pytest.importorskip("fairlearn.metrics")
pytest.importorskip("pyarrow")

from fairspec import api  # noqa: E402


def frame(nulls: bool):
    rng = np.random.default_rng(3)
    n = 400
    sex = rng.choice(["Female", "Male"], n)
    y = rng.random(n) < np.where(sex == "Male", 0.5, 0.3)
    d = rng.random(n) < 0.2 + 0.5 * y
    df = pd.DataFrame({"age": rng.integers(18, 80, n), "sex": sex, "y": y, "d": d})
    if nulls:
        df["y"] = pd.array(np.where(rng.random(n) < 0.1, None, y), dtype="boolean")
        df["d"] = pd.array(np.where(rng.random(n) < 0.1, None, d), dtype="boolean")
    return df


SPEC = """data log = {fmt}("t.{fmt}", label = y == "True"{extra})
features A from log {{
  age : int in [17, 90]
  sex : {{Female, Male}} protected
}}
model m = predictions(log, decision = "d")
property eo {{ equal_opportunity(m, groups sex) <= 0.5 }}
property br {{ base_rate_difference(log, groups sex) <= 0.5 }}
property sp {{ statistical_parity(m, groups sex) <= 0.5 }}
property fpr {{ false_positive_rate_difference(m, groups sex) <= 0.5 }}
"""


def values(tmp_path, df, fmt: str, extra: str = "") -> dict:
    if fmt == "csv":
        df.to_csv(tmp_path / "t.csv", index=False)     # True / False, a null an empty cell
    else:
        df.to_parquet(tmp_path / "t.parquet", index=False)   # bool, a null a Parquet null
    (tmp_path / "s.fair").write_text(SPEC.format(fmt=fmt, extra=extra))
    rep = api.check(str(tmp_path / "s.fair")).to_dict()
    assert not rep.get("diagnostics"), rep.get("diagnostics")
    return {p["name"]: p["value"] for p in rep["properties"]}


def reference(df) -> dict:
    df = df.dropna(subset=["y", "d"])
    y, d, g = df["y"].astype(bool), df["d"].astype(bool), df["sex"]
    return {"eo": fm.equal_opportunity_difference(y, d, sensitive_features=g),
            "br": abs(y[g == "Male"].mean() - y[g == "Female"].mean()),
            "sp": fm.demographic_parity_difference(y, d, sensitive_features=g),
            "fpr": fm.false_positive_rate_difference(y, d, sensitive_features=g)}


@pytest.mark.parametrize("nulls", [False, True])
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_boolean_label_and_decision_agree_with_fairlearn(tmp_path, fmt, nulls):
    df = frame(nulls)
    # a CSV null is an empty cell: the spec says it is missing (a Parquet null is one already)
    extra = ', missing = {y: [""], d: [""]}' if fmt == "csv" and nulls else ""
    got, ref = values(tmp_path, df, fmt, extra), reference(df)
    assert ref["br"] > 0.05
    for k in ref:
        assert got[k] == pytest.approx(ref[k], abs=1e-9), (k, got, ref)


# A logged decision column (predictions(DATA, decision = "col")) said its positive value only for 1/0,
# yes/no and true/false: any other number counted as 1 when not 0 (-1 / 1 and 2 / 1: every row positive)
# and any other text as 0 (approve / deny: no row positive), so statistical_parity held at 0 -- a wrong
# verdict. Now lint says FS431 (check the same sentence for values its sample missed), and positive = v
# states it.

DECISIONS = {"minus": ("-1", "1"), "two": ("1", "2"), "words": ("deny", "approve"), "empty": ("", "yes")}


def decision_project(tmp_path, kind: str, positive: str = "", rows: int = 400, late: str | None = None):
    df = frame(False)
    no, yes = DECISIONS.get(kind, ("no", "yes"))
    df["d"] = np.where(df["d"], yes, no)
    if late is not None:
        df.loc[rows - 50:, "d"] = late      # after the rows lint reads
    df.to_csv(tmp_path / "t.csv", index=False)
    spec = SPEC.format(fmt="csv", extra="").replace('decision = "d"', f'decision = "d"{positive}')
    (tmp_path / "s.fair").write_text(spec)
    return df, str(tmp_path / "s.fair")


@pytest.mark.parametrize("kind", sorted(DECISIONS))
def test_decision_column_without_a_stated_positive_is_FS431(tmp_path, kind):
    _, spec = decision_project(tmp_path, kind)
    codes = [(d.code, d.severity) for d in api.lint(spec)]
    assert ("FS431", "error") in codes, codes
    rep = api.check(spec).to_dict()
    assert rep["exit_code"] == 2 and not any(p["status"] == "holds" for p in rep["properties"])


@pytest.mark.parametrize("kind,positive", [("words", '"approve"'), ("minus", "1"), ("two", "2"), ("two", '"2"')])
def test_positive_states_the_decision(tmp_path, kind, positive):
    df, spec = decision_project(tmp_path, kind, positive=f", positive = {positive}")
    assert api.lint(spec) == []
    got = {p["name"]: p["value"] for p in api.check(spec).to_dict()["properties"]}
    df["d"] = df["d"].astype(str) == DECISIONS[kind][1]
    df["y"] = df["y"].astype(str) == "True"
    ref = reference(df)
    for k in ref:
        assert got[k] == pytest.approx(ref[k], abs=1e-9), (k, got, ref)


def test_a_positive_the_column_never_holds_is_FS431(tmp_path):
    _, spec = decision_project(tmp_path, "words", positive=', positive = "aprove"')
    [d] = api.lint(spec)
    assert d.code == "FS431" and "never the positive value" in d.message


def test_check_refuses_an_unstated_decision_lint_did_not_see(tmp_path):
    _, spec = decision_project(tmp_path, "yesno", late="pending")
    assert api.lint(spec) == []          # lint reads the first 200 rows
    rep = api.check(spec).to_dict()
    assert rep["exit_code"] == 2 and "'pending'" in rep["error"] and "t.csv" in rep["error"]
    assert not any(p["status"] == "holds" for p in rep["properties"])


# A label (or where) comparing a column with text it holds only in another case was false on every
# row: y == "true" over a Parquet boolean column (read as "True" / "False"), y == "Yes" over yes / no.
# base_rate_difference then held at 0. Lint now says FS432.

@pytest.mark.parametrize("fmt,written,label", [
    ("parquet", None, 'y == "true"'), ("parquet", None, 'y == "1"'), ("parquet", None, 'y in {"yes", "True"}'),
    ("csv", None, 'y == "true"'), ("csv", ("yes", "no"), 'y == "Yes"'), ("csv", ("yes", "no"), 'y != "NO"')])
def test_label_text_in_another_case_is_FS432(tmp_path, fmt, written, label):
    df = frame(False)
    if written:
        df["y"] = np.where(df["y"], *written)
    if fmt == "csv":
        df.to_csv(tmp_path / "t.csv", index=False)
    else:
        df.to_parquet(tmp_path / "t.parquet", index=False)
    spec = SPEC.format(fmt=fmt, extra="").replace('label = y == "True"', f"label = {label}")
    (tmp_path / "s.fair").write_text(spec)
    codes = [d.code for d in api.lint(str(tmp_path / "s.fair"))]
    assert codes == ["FS432"], codes


# The Python API: a pandas frame whose label and decision columns are bool, nullable boolean (with
# pd.NA) or categorical (with nulls), written as the declaration's format, agrees with fairlearn on
# the rows with both values; the label text in another case is FS432 there too.

def api_frame(shape: str):
    df = frame(False)
    rng = np.random.default_rng(5)
    y, d = df["y"].to_numpy(), df["d"].to_numpy()
    na_y, na_d = rng.random(len(df)) < 0.1, rng.random(len(df)) < 0.1
    if shape == "boolean":
        df["y"] = pd.array(np.where(na_y, None, y), dtype="boolean")
        df["d"] = pd.array(np.where(na_d, None, d), dtype="boolean")
    elif shape == "category":
        df["y"] = pd.Categorical(np.where(na_y, None, np.where(y, "True", "False")))
        df["d"] = pd.Categorical(np.where(na_d, None, np.where(d, "yes", "no")))
    return df


@pytest.mark.parametrize("shape", ["bool", "boolean", "category"])
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_api_frame_label_shapes_agree_with_fairlearn(tmp_path, fmt, shape):
    df = api_frame(shape)
    (tmp_path / "s.fair").write_text(SPEC.format(fmt=fmt, extra=""))
    rep = api.check(str(tmp_path / "s.fair"), data={"log": df}).to_dict()
    assert not rep.get("diagnostics") and not rep.get("error"), rep
    got = {p["name"]: p["value"] for p in rep["properties"]}
    r = df.dropna(subset=["y", "d"]).copy()
    r["y"] = r["y"].astype(str) == "True"
    r["d"] = r["d"].astype(str).isin(["True", "yes"])
    ref = reference(r)
    for k in ref:
        assert got[k] == pytest.approx(ref[k], abs=1e-9), (k, got, ref)
    (tmp_path / "s.fair").write_text(SPEC.format(fmt=fmt, extra="").replace('"True"', '"true"'))
    assert [d.code for d in api.lint(str(tmp_path / "s.fair"), data={"log": df})] == ["FS432"]


@pytest.mark.parametrize("label,code,hint", [
    ("y == 1", "FS301", 'write y == "True"'), ("y == true", "FS301", 'write y == "True"'),
    ("y", "FS306", 'write label = y == "True"')])
def test_parquet_boolean_label_written_as_number_or_condition_hints_the_text(tmp_path, label, code, hint):
    frame(False).to_parquet(tmp_path / "t.parquet", index=False)
    (tmp_path / "s.fair").write_text(SPEC.format(fmt="parquet", extra="").replace('label = y == "True"',
                                                                                 f"label = {label}"))
    [d] = api.lint(str(tmp_path / "s.fair"))
    assert d.code == code and hint in (d.hint or ""), (d.code, d.hint)


def test_csv_label_with_empty_cells_warns_FS433(tmp_path):
    """A CSV null (an empty cell) of a True/False label column is the text "": y == "True" is false there,
    a missing label counted as negative (base rate and TPR off fairlearn's on the rows with a label), where
    a Parquet null drops the row. Lint warns FS433; missing = {y: [""]} drops them."""
    df = frame(True)
    df.to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.fair").write_text(SPEC.format(fmt="csv", extra=', missing = {d: [""]}'))
    diags = api.lint(str(tmp_path / "s.fair"))
    assert [(x.code, x.severity) for x in diags] == [("FS433", "warning")] and 'missing = {y: [""]}' in diags[0].hint
    (tmp_path / "s.fair").write_text(SPEC.format(fmt="csv", extra=', missing = {y: [""], d: [""]}'))
    assert api.lint(str(tmp_path / "s.fair")) == []


@pytest.mark.parametrize("positive,rate", [('"True"', "d"), ('"False"', "not d")])
def test_parquet_boolean_decision_with_positive_named(tmp_path, positive, rate):
    """positive = "True" over a Parquet boolean decision column (lint reads it as the text True / False):
    check compared "True" with the column's 1 / 0 as text, so no decision was positive."""
    df = frame(False)
    df.to_parquet(tmp_path / "t.parquet", index=False)
    spec = SPEC.format(fmt="parquet", extra="").replace('decision = "d"', f'decision = "d", positive = {positive}')
    (tmp_path / "s.fair").write_text(spec)
    assert api.lint(str(tmp_path / "s.fair")) == []
    got = {p["name"]: p for p in api.check(str(tmp_path / "s.fair")).to_dict()["properties"]}
    d = df["d"] if rate == "d" else ~df["d"]
    assert got["sp"]["value"] == pytest.approx(
        fm.demographic_parity_difference(df["y"], d, sensitive_features=df["sex"]), abs=1e-9)
