"""Data files as they are published (issue 23): a header that names a column twice, empty cells
in number columns, missing-value markers per column, and the ProPublica COMPAS file with its usual
filter (examples/compas), cross-checked against pandas."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli
from fairspec.pipeline import check, lint
from fairspec import ir
from fairspec.runtime.data import DataError, dedupe_names

ROOT = Path(__file__).resolve().parents[1]
COMPAS = ROOT / "examples" / "compas"


def test_dedupe_names_by_position():
    assert dedupe_names(["a", "b", "a", "a"]) == (["a", "b", "a.1", "a.2"], [("a", "a.1", 3), ("a", "a.2", 4)])
    # a name the header already has is skipped
    assert dedupe_names(["a", "a.1", "a"])[0] == ["a", "a.1", "a.2"]
    assert dedupe_names(["x", "y"]) == (["x", "y"], [])


def _project(tmp_path, body: str, data: str) -> Path:
    (tmp_path / "d.csv").write_text(data)
    spec = tmp_path / "s.fair"
    spec.write_text(body)
    return spec


ROWS = ("score,sex,score,age,note,y\n"
        "0.9,F,1,30,,1\n"      # note empty: not read by the spec -> the row is kept
        "0.2,M,2,,x,0\n"       # age empty: a number column the spec reads -> the row is dropped
        "0.7,M,3,41,,1\n"
        "0.6,F,4,?,,0\n"       # '?' is a missing marker of age only
        "0.1,F,?,50,,0\n")     # '?' in the second score column, which the spec does not read


def _spec(missing: str = 'missing = {age: ["?"]},') -> str:
    return f'''data d = csv("d.csv", {missing} label = y == 1)
features P from d {{
  sex : {{F, M}} protected
  age : int in [18, 90]
}}
model m = predictions(d, score = "score", threshold = 0.5)
property rates {{
  statistical_parity(m, groups sex) <= 0.999
}}
'''


def test_duplicate_header_empty_cells_and_markers_per_column(tmp_path):
    spec = _project(tmp_path, _spec(), ROWS)
    res = lint(spec)
    codes = [d.code for d in res.diagnostics]
    assert codes == ["FS430"], [(d.code, d.message) for d in res.diagnostics]
    assert "'score' more than once" in res.diagnostics[0].message and "'score.1'" in res.diagnostics[0].message
    d = res.spec.data("d")
    assert d.used is not None and "note" not in d.used and "score.1" not in d.used and {"sex", "age", "score", "y"} <= set(d.used)
    (v,) = check(spec).verdicts
    assert v.details["rows"] == 3  # rows 1, 3 and 5: empty age and age '?' dropped; note and score.1 ignored


@pytest.mark.parametrize("rows", [3, 250])
def test_csv_column_the_spec_reads_of_missing_markers_only_is_named_when_lint_read_it_all(tmp_path, rows):
    # check said only "no rows left after the missing-value and where filters"; lint reads the first 200
    # rows, so it names the column only when those are the whole file (a note column of markers: not read)
    data = "score,sex,age,note,y\n" + "".join(f"0.{k % 9},{'FM'[k % 2]},?,?,{k % 2}\n" for k in range(rows))
    spec = _project(tmp_path, _spec('missing = ["?"],'), data)
    errs = [d for d in lint(spec).diagnostics if d.is_error]
    if rows > 200:
        assert errs == []
    else:
        assert [d.code for d in errs] == ["FS404"] and errs[0].message == (
            f"data file {tmp_path / 'd.csv'}: column 'age', which the spec reads, is empty (a missing value in all "
            f"{rows} rows); a row missing a value the spec reads is dropped, so no row would be left"), errs[0].message
    rep = check(spec)
    assert rep.has_errors and not rep.verdicts


def test_a_repeated_name_the_spec_does_not_read_is_quiet(tmp_path):
    spec = _project(tmp_path, _spec().replace('score = "score", threshold = 0.5', 'decision = "y"'), ROWS)
    assert [d.code for d in lint(spec).diagnostics] == []


def test_missing_per_column_names_a_column(tmp_path):
    spec = _project(tmp_path, _spec('missing = {agee: ["?"]},'), ROWS)
    (d,) = [x for x in lint(spec).diagnostics if x.is_error]
    assert d.code == "FS207" and "agee" in d.message and d.hint and "age" in d.hint


def test_columns_choose_the_names(tmp_path):
    body = _spec().replace('csv("d.csv",', 'csv("d.csv", header = true, columns = [score, sex, score2, age, note, y],')
    spec = _project(tmp_path, body, ROWS)
    assert [d.code for d in lint(spec).diagnostics] == []
    (v,) = check(spec).verdicts
    assert v.details["rows"] == 3


def test_parquet_nulls_only_in_read_columns(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    tab = pa.table({"score": [0.9, 0.2, 0.7, 0.6], "sex": ["F", "M", "M", "F"], "age": [30, None, 41, 50],
                    "note": [None, None, "x", None], "y": [1, 0, 1, 0]})
    pq.write_table(tab, tmp_path / "d.parquet")
    spec = tmp_path / "s.fair"
    spec.write_text(_spec("").replace('csv("d.csv",', 'parquet("d.parquet",'))
    (v,) = check(spec).verdicts
    assert v.details["rows"] == 3


def test_compas_as_published_matches_pandas():
    pd = pytest.importorskip("pandas")
    res = lint(COMPAS / "compas.fair")
    assert [d.code for d in res.diagnostics] == ["FS430", "FS430"]  # decile_score, read by both data sets
    out = run_cli("check", COMPAS / "compas.fair", "--format", "json", timeout=600)
    assert out.returncode == 1, out.stderr
    props = {p["name"]: p for p in json.loads(out.stdout)["properties"]}
    assert props["high_risk_by_sex"]["details"]["rows"] == 6172  # ProPublica's filter (REFERENCE.md)

    df = pd.read_csv(COMPAS / "data" / "compas-scores-two-years.csv")  # pandas names the repeats .1 too
    df = df[(df.days_b_screening_arrest <= 30) & (df.days_b_screening_arrest >= -30) & (df.is_recid != -1)
            & (df.c_charge_degree != "O") & (df.score_text != "N/A")]
    assert len(df) == 6172
    bw = df[df.race.isin(["African-American", "Caucasian"])]
    high = bw.decile_score > 4.5
    fpr = {r: float(high[(bw.race == r) & (bw.two_year_recid == 0)].mean()) for r in ("African-American", "Caucasian")}
    fnr = {r: float((~high)[(bw.race == r) & (bw.two_year_recid == 1)].mean()) for r in ("African-American", "Caucasian")}
    assert props["false_positive_balance"]["status"] == "violated"
    assert props["false_positive_balance"]["value"] == pytest.approx(min(fpr.values()) / max(fpr.values()), abs=1e-12)
    assert props["false_negative_balance"]["value"] == pytest.approx(min(fnr.values()) / max(fnr.values()), abs=1e-12)


# Parquet column types (audit s17, section 12): lint and check read every column the same way.

def _parquet_project(tmp_path, **columns) -> Path:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    base = {"score": [0.9, 0.2, 0.7, 0.6], "sex": ["F", "M", "M", "F"], "age": [30, 40, 41, 50], "y": [1, 0, 1, 0]}
    base.update(columns)
    pq.write_table(pa.table({k: (v if isinstance(v, pa.Array) else pa.array(v)) for k, v in base.items()}),
                   tmp_path / "d.parquet")
    spec = tmp_path / "s.fair"
    spec.write_text(_spec("").replace('csv("d.csv",', 'parquet("d.parquet",'))
    return spec


def _errors(res) -> list[str]:
    return [d.message for d in res.diagnostics if d.is_error]


def test_parquet_binary_text_is_read_as_utf8_by_lint_and_check(tmp_path):
    pa = pytest.importorskip("pyarrow")
    spec = _parquet_project(tmp_path, sex=pa.array([b"F", b"M", b"M", b"F"], pa.binary()))
    assert [d.code for d in lint(spec).diagnostics] == []  # no FS410 "b'F'" outside {F, M}
    (v,) = check(spec).verdicts
    assert v.details["rows"] == 4


def test_parquet_binary_that_is_not_utf8_is_one_sentence_in_lint_and_check(tmp_path):
    pa = pytest.importorskip("pyarrow")
    from fairspec.runtime.columnar import read_table

    spec = _parquet_project(tmp_path, sex=pa.array([b"F", b"\xff", b"M", b"F"], pa.binary()))
    (msg,) = _errors(lint(spec))
    assert msg.endswith("d.parquet column 'sex' holds bytes that are not UTF-8 text"), msg
    with pytest.raises(DataError) as e:
        read_table(ir.Data("d", "parquet", str(tmp_path / "d.parquet")))
    assert str(e.value) == msg


@pytest.mark.parametrize("encoded", [False, True])
def test_parquet_null_in_a_text_column_is_missing_for_lint_as_for_check(tmp_path, encoded):
    # lint sampled a null as the text "" and warned FS410 "outside the declared domain (e.g. '')";
    # check reads it as a missing value (the row dropped for that). A pandas or polars categorical
    # is stored dictionary-encoded: the same
    pa = pytest.importorskip("pyarrow")
    sex = pa.array(["F", None, "M", "F"])
    spec = _parquet_project(tmp_path, sex=sex.dictionary_encode() if encoded else sex)
    assert [d.code for d in lint(spec).diagnostics] == []
    (v,) = check(spec).verdicts
    assert v.details["rows"] == 3 and v.details["rows_missing"] == 1, v.details


@pytest.mark.parametrize("kind", ["struct", "list"])
def test_parquet_nested_column_the_spec_reads_is_named(tmp_path, kind):
    from fairspec.runtime.columnar import read_table

    value = {"struct": [{"a": s} for s in "FMMF"], "list": [[s] for s in "FMMF"]}[kind]
    spec = _parquet_project(tmp_path, sex=value)
    res = lint(spec)
    (d,) = [d for d in res.diagnostics if d.is_error]
    assert d.code == "FS404" and d.message.endswith(f"d.parquet column 'sex' is a {kind} column (nested values), "
                                                    "where one number or text per row is expected"), d.message
    assert not [x for x in res.diagnostics if x.code == "FS410"]  # no sampled "{'a': 'F'}" outside {F, M}
    rep = check(spec)
    assert rep.has_errors and d.message in [x.message for x in rep.diagnostics] + [rep.error]
    with pytest.raises(DataError, match=f"column 'sex' is a {kind} column"):  # the reader says it too
        read_table(ir.Data("d", "parquet", str(tmp_path / "d.parquet")))


@pytest.mark.parametrize("typed", [True, False])
def test_parquet_column_the_spec_reads_that_is_all_null_is_named_by_lint(tmp_path, typed):
    # check said only "no rows left after the missing-value and where filters"; the file's metadata says
    # which column: a column of type null, or a typed one whose statistics count a null in every row
    pa = pytest.importorskip("pyarrow")
    spec = _parquet_project(tmp_path, age=pa.nulls(4, pa.float64() if typed else pa.null()),
                            note=pa.nulls(4, pa.string()))            # note: never read, ignored
    res = lint(spec)
    (d,) = [d for d in res.diagnostics if d.is_error]
    assert d.code == "FS404" and d.message == (
        f"data file {tmp_path / 'd.parquet'}: column 'age', which the spec reads, is empty (a missing value in all 4 rows); "
        "a row missing a value the spec reads is dropped, so no row would be left"), d.message
    rep = check(spec)
    assert rep.has_errors and not rep.verdicts


def test_parquet_nested_column_the_spec_never_reads_is_ignored(tmp_path):
    spec = _parquet_project(tmp_path, tags=[["a"], [], ["b", "c"], None], meta=[{"k": 1}] * 4)
    assert [d.code for d in lint(spec).diagnostics] == []
    (v,) = check(spec).verdicts
    assert v.details["rows"] == 4


def test_parquet_uint64_past_float_range_is_dropped_as_lint_says(tmp_path):
    pa = pytest.importorskip("pyarrow")
    spec = _parquet_project(tmp_path, age=pa.array([30, 40, 2**64 - 1, 50], pa.uint64()))
    (w,) = lint(spec).diagnostics
    assert w.code == "FS410" and "18446744073709551615" in w.message and "check drops those rows" in w.message
    rep = check(spec)
    assert rep.error is None
    (v,) = rep.verdicts
    assert v.details["rows"] == 3  # the row is dropped, the file is read


def test_parquet_with_no_rows_says_no_rows_without_a_header_line(tmp_path):
    spec = _parquet_project(tmp_path, score=[], sex=[], age=[], y=[])
    (msg,) = _errors(lint(spec))
    assert msg.endswith("d.parquet has no rows"), msg
    rep = check(spec)
    assert rep.has_errors and all("header" not in (x.message) for x in rep.diagnostics)
