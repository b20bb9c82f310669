"""Session 35 audit of how check reads data files into labels, where filters and groups (brief h5).
Truth: pandas reading the same file, and the metric computed on it by plain numpy."""

from __future__ import annotations

import pytest

SPEC = """\
data log = csv("{csv}", label = outcome == "1"{where})

features P from log {{
  sex : {{F, M}}  protected
}}

model s = predictions(log, decision = "approved")

property acc {{ accuracy_difference(s, groups sex) <= 0.05 }}
"""


def _check(tmp_path, rows: str, where: str = ""):
    from fairspec.pipeline import check

    csv = tmp_path / "log.csv"
    csv.write_text(rows)
    spec = tmp_path / "t.fair"
    spec.write_text(SPEC.format(csv=csv, where=where))
    rep = check(spec)
    assert not rep.has_errors and not rep.internal_errors, ([d.message for d in rep.diagnostics], rep.internal_errors)
    return {v.name: v for v in rep.verdicts}


# every row is decided right: F approved with label "1", M refused with label "0" (accuracy 1 in both groups);
# the first rows hold "x" in outcome (lint types the column as text, so `outcome == "1"` compares text)
ROWS = ("sex,approved,outcome,kind\n" + "F,1,x,b\nM,0,x,b\n" * 3 + "F,1,1,a\nM,0,0,a\n" * 600)


def test_a_label_comparing_text_reads_the_column_as_text_in_a_streamed_batch_of_numbers(tmp_path, monkeypatch):
    # streamed in batches of 500 rows: the later batches hold only "1" / "0" in outcome. Read as numbers
    # there, `outcome == "1"` (a float against a string) was false on every row: F's accuracy fell to
    # ~0 and accuracy_difference was violated; pandas reads the column as text and both accuracies are ~1
    from fairspec.runtime import columnar

    monkeypatch.setattr(columnar, "STREAM_ROWS", 10)
    monkeypatch.setattr(columnar, "BATCH_ROWS", 500)
    v = _check(tmp_path, ROWS)["acc"]
    assert v.status != "violated", (v.status, v.value, v.reason)
    assert v.value == pytest.approx(3 / 603, abs=1e-9), v.value   # F: 3 of 603 wrong ("x" rows), M: 3 of 603 right


def test_a_where_comparing_text_and_a_label_after_it_read_the_columns_as_text(tmp_path):
    # the where drops the "x" rows: outcome then holds only numbers, and the label read it as numbers
    # (false on every row): F's accuracy 0, M's 1, violated. pandas: df[df.kind == "a"].outcome == "1" holds on
    # F's 600 rows, both accuracies are 1
    v = _check(tmp_path, ROWS, where=', where = kind == "a"')["acc"]
    assert v.status == "holds", (v.status, v.value, v.reason)
    assert v.value == 0.0


NAN_SPEC = """\
data log = {fmt}("{path}", label = outcome == 1{missing})

features P from log {{
  sex : {{F, M}}  protected
}}

model s = predictions(log, decision = "approved")

property acc {{ accuracy_difference(s, groups sex) <= 0.05 }}
"""


def _nan_check(tmp_path, fmt: str, missing: str = ""):
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq
    from fairspec.pipeline import check

    # F and M approved and labelled 1 (accuracy 1); 300 more F rows approved with a NaN label, which pandas
    # reads as NaN (read_csv's "nan", a Parquet NaN): a missing label, never a negative one
    sex = ["F", "M"] * 600 + ["F"] * 300
    outcome = [1.0] * 1200 + [np.nan] * 300
    path = tmp_path / f"log.{fmt}"
    if fmt == "csv":
        pd.DataFrame({"sex": sex, "approved": 1, "outcome": outcome}).to_csv(path, index=False, na_rep="nan")
    else:   # pyarrow keeps a NaN a NaN (from_pandas would write a null)
        pq.write_table(pa.table({"sex": sex, "approved": [1] * 1500, "outcome": pa.array(outcome, pa.float64())}),
                       path)
    spec = tmp_path / "t.fair"
    spec.write_text(NAN_SPEC.format(fmt=fmt, path=path, missing=missing))
    return check(spec)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_nan_cell_the_label_reads_as_a_number_is_never_a_negative_label(tmp_path, fmt):
    # it was: outcome == 1 false on the 300 NaN rows, F's accuracy 0.667, accuracy_difference violated
    rep = _nan_check(tmp_path, fmt)
    assert rep.has_errors, [(v.name, v.status, v.value) for v in rep.verdicts]
    text = " ".join([d.message for d in rep.diagnostics] + [str(rep.error or "")])
    assert "'outcome'" in text and "NaN" in text and "missing" in text, text


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_nan_listed_as_missing_drops_those_rows(tmp_path, fmt):
    rep = _nan_check(tmp_path, fmt, missing=', missing = {outcome: ["nan"]}')
    assert not rep.has_errors, [d.message for d in rep.diagnostics]
    v = {v.name: v for v in rep.verdicts}["acc"]
    assert v.value == 0.0 and v.status != "violated", (v.status, v.value, v.reason)


DECISION_SPEC = """\
data log = csv("{path}", label = outcome == 1)

features P from log {{
  sex : {{F, M}}  protected
}}

model s = predictions(log, {model})

property sp {{ statistical_parity(s, groups sex) <= 0.05 }}
"""


@pytest.mark.parametrize("model,extra", [('decision = "approved", positive = "1"', "F,nan,1,0.9\n"),
                                         ('score = "sc", threshold = 0.5', "F,1,1,NaN\n")])
def test_a_nan_logged_decision_or_score_is_never_a_negative_decision(tmp_path, model, extra):
    # 300 F rows whose decision (or score) is NaN: compared (NaN == 1, NaN > 0.5), each was a negative
    # decision -- statistical_parity 0.333, violated, where pandas reads a missing value and the rest agree
    from fairspec.pipeline import check

    path = tmp_path / "log.csv"
    path.write_text("sex,approved,outcome,sc\n" + "F,1,1,0.9\nM,1,1,0.9\n" * 600 + extra * 300)
    spec = tmp_path / "t.fair"
    spec.write_text(DECISION_SPEC.format(path=path, model=model))
    rep = check(spec)
    assert rep.has_errors, [(v.name, v.status, v.value) for v in rep.verdicts]
    text = " ".join([d.message for d in rep.diagnostics] + [str(rep.error or "")])
    assert "NaN" in text and "missing = {" in text, text


@pytest.mark.parametrize("cell", ["0_5", "\uff15", "\u0665"])   # an underscore, a full-width 5, an Arabic-Indic 5
def test_a_cell_python_reads_as_a_number_but_pandas_as_text_is_not_a_number(tmp_path, cell):
    # Python's float() reads "0_5" and non-ASCII digits as 5; pandas (and pyarrow) read the column as text, which
    # no model is fed. Read as 5, those rows were counted in the metric (here M's 150 approved rows: 0.4, violated)
    from fairspec.pipeline import check

    path = tmp_path / "log.csv"
    path.write_text("sex,approved,outcome,age\n" + "F,1,1,3\nM,0,1,4\n" * 100 + f"M,1,1,{cell}\n" * 150,
                    encoding="utf-8")
    spec = tmp_path / "t.fair"
    spec.write_text(DECISION_SPEC.format(path=path, model='decision = "approved"').replace(
        "protected\n", "protected\n  age : int in [0, 9]\n"))
    rep = check(spec)
    assert rep.has_errors, [(v.name, v.status, v.value) for v in rep.verdicts]
    text = " ".join([d.message for d in rep.diagnostics] + [str(rep.error or "")])
    assert "'age'" in text and "numeric" in text, text


def test_weights_whose_sum_overflows_are_refused(tmp_path):
    # F's two rows of weight 1e308 sum to inf in float64: F's rate was inf / inf = NaN and statistical_parity
    # was reported 0.0, where F's rate is ~1 and M's ~0 (a difference of ~1)
    from fairspec.pipeline import check

    path = tmp_path / "log.csv"
    path.write_text("sex,approved,outcome,w\n" + "F,1,1,1\nF,0,1,1\nM,1,1,1\nM,0,1,1\n" * 100
                    + "F,1,1,1e308\nF,1,1,1e308\nM,0,1,1e308\n")
    spec = tmp_path / "t.fair"
    spec.write_text(DECISION_SPEC.format(path=path, model='decision = "approved"').replace(
        "<= 0.05 }", "<= 0.05  weight = w }"))
    rep = check(spec)
    assert rep.has_errors, [(v.name, v.status, v.value) for v in rep.verdicts]
    text = " ".join([d.message for d in rep.diagnostics] + [str(rep.error or "")])
    assert "'w'" in text and "weight" in text, text


@pytest.mark.parametrize("prop", ["mean_error_difference(m, groups sex) <= 0.05",
                                  "equal_opportunity(m, groups sex, threshold = 2) <= 0.05"])
def test_a_nan_target_is_refused(tmp_path, prop):
    # a regression target "nan" on some F rows: the mean error of F was NaN, said as "0/0 in sex=F (no row ...)";
    # with threshold = 2 the truth target >= 2 was false there (a negative truth, pandas: a missing one)
    import numpy as np
    import skops.io as sio
    from sklearn.linear_model import LinearRegression

    from fairspec.pipeline import check

    a = np.arange(200) % 5
    sex = (np.arange(200) // 5) % 2
    sio.dump(LinearRegression().fit(np.c_[a, sex], a * 1.0), tmp_path / "m.skops")
    cells = [("nan" if i < 40 and s == 0 else str(float(v))) for i, (v, s) in enumerate(zip(a, sex))]
    (tmp_path / "log.csv").write_text("a,sex,t\n" + "".join(f"{v},{'FM'[s]},{c}\n" for v, s, c in zip(a, sex, cells)))
    (tmp_path / "t.fair").write_text("""data log = csv("log.csv", target = t)
features P from log {
  a : int in [0, 4]
  sex : {F, M}  protected
}
model m = sklearn("m.skops")
# fairspec: ignore[FS427]
encode P for m {
  a : raw
  sex : code {F = 0, M = 1}
}
property me { PROP }
""".replace("PROP", prop))
    rep = check(tmp_path / "t.fair")
    assert rep.has_errors, [(v.name, v.status, v.value, v.reason) for v in rep.verdicts]
    assert "'t'" in str(rep.error) and "NaN" in str(rep.error), rep.error


def test_a_label_testing_a_column_against_numbers_refuses_text_past_lints_sample(tmp_path):
    # `outcome in {1}` over 1 / 0, with "n/a" on row 1,202 (lint samples 200): the column was read as text and
    # "1" in {1} was false on every row -- F's accuracy 0, violated; `outcome == 1` already said the text
    from fairspec.pipeline import check

    path = tmp_path / "log.csv"
    path.write_text("sex,approved,outcome\n" + "F,1,1\nM,0,0\n" * 600 + "F,1,n/a\n")
    spec = tmp_path / "t.fair"
    spec.write_text(SPEC.replace('label = outcome == "1"{where}', "label = outcome in {{1}}").format(csv=path))
    rep = check(spec)
    assert rep.has_errors, [(v.name, v.status, v.value) for v in rep.verdicts]
    assert "n/a" in str(rep.error) and "missing = {outcome" in str(rep.error), rep.error


def test_a_parquet_boolean_column_read_by_categories_is_its_text_true_false(tmp_path):
    # lint samples a Parquet boolean as "True" / "False" (as the label reads it); check's frame read it as "1" /
    # "0": `flag : {False, True}` fitted no row ("no row fits the declared domains")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from fairspec.pipeline import check

    pq.write_table(pa.table({"flag": [True, False] * 300, "approved": [1, 1, 1, 0] * 150, "outcome": [1] * 600}),
                   tmp_path / "log.parquet")
    (tmp_path / "t.fair").write_text("""data log = parquet("log.parquet", label = outcome == 1)
features P from log {
  flag : {False, True}  protected
}
model s = predictions(log, decision = "approved")
property sp { statistical_parity(s, groups flag) <= 0.05 }
""")
    rep = check(tmp_path / "t.fair")
    assert not rep.has_errors, rep.error
    (v,) = rep.verdicts
    assert v.value == pytest.approx(0.5) and v.status == "violated", (v.status, v.value)   # True: 1.0, False: 0.5


def test_lint_reads_a_parquet_float_column_as_check_does(tmp_path):
    # categories {1, 2} over a Parquet float column of 1.0 / 2.0: check reads each value as "1" / "2" (its
    # number's text) and keeps every row; lint sampled "1.0" / "2.0" and said FS410 (check drops every row)
    import pyarrow as pa
    import pyarrow.parquet as pq

    import fairspec

    pq.write_table(pa.table({"grade": [1.0, 2.0] * 100, "approved": [1, 0] * 100, "outcome": [1] * 200}),
                   tmp_path / "log.parquet")
    (tmp_path / "t.fair").write_text("""data log = parquet("log.parquet", label = outcome == 1)
features P from log {
  grade : {"1", "2"}  protected
}
model s = predictions(log, decision = "approved")
property sp { statistical_parity(s, groups grade) <= 0.05 }
""")
    assert not [d.code for d in fairspec.lint(tmp_path / "t.fair")]
    rep = fairspec.check(tmp_path / "t.fair")
    assert [v.value for v in rep] == [1.0]
