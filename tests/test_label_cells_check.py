"""Lint reads a data file's first 200 rows; check reads all of them. FS432 (a label comparing a column
with text it holds only in another case) and FS433 (a label reading empty text cells as "", a missing
label counted negative) were lint's alone, so a file whose first such row lies past row 200 gave a
silently wrong group metric at check: y == "yes" over a column sorted No ... Yes held
base_rate_difference at 0 (no label positive), an empty label cell lowered a group's base rate. Check
now says the same codes (FS432 an error, FS433 a warning); a logged decision column read with
positive = v has the same trap for its empty cells (FS435, lint and check)."""

from __future__ import annotations

import numpy as np
import pytest

from fairspec import api
from fairspec.runtime import columnar

pd = pytest.importorskip("pandas")

SPEC = """data log = csv("t.csv", label = {label}{extra})
features A from log {{
  age : int in [17, 90]
  sex : {{F, M}} protected
}}
model m = predictions(log, decision = "d"{positive})
property br {{ base_rate_difference(log, groups sex) <= 0.5 }}
property eo {{ equal_opportunity(m, groups sex) <= 0.9 }}
property sp {{ statistical_parity(m, groups sex) <= 0.9 }}
"""


def frame(n: int = 600, seed: int = 0):
    rng = np.random.default_rng(seed)
    sex = rng.choice(["F", "M"], n)
    y = rng.random(n) < np.where(sex == "M", 0.5, 0.3)
    d = rng.random(n) < 0.2 + 0.5 * y
    return pd.DataFrame({"age": rng.integers(18, 80, n), "sex": sex, "y": np.where(y, "True", "False"),
                         "d": np.where(d, "approve", "deny")})


def project(tmp_path, df, label='y == "True"', extra="", positive=', positive = "approve"', comment=""):
    df.to_csv(tmp_path / "t.csv", index=False)
    spec = SPEC.format(label=label, extra=extra, positive=positive)
    if comment:
        spec = spec.replace("\n", f"  {comment}\n", 1)
    (tmp_path / "s.fair").write_text(spec)
    return str(tmp_path / "s.fair")


def late_empty(df, column: str, share: float = 0.3, seed: int = 1):
    """Empty cells in ``column`` of F rows past row 300 (lint reads the first 200)."""
    rng = np.random.default_rng(seed)
    hit = (df.index >= 300) & (df["sex"] == "F") & (rng.random(len(df)) < share)
    df.loc[hit, column] = ""
    return int(hit.sum())


def check(spec) -> dict:
    return api.check(spec).to_dict()


def said(rep: dict, code: str) -> list[dict]:
    """The report's diagnostics of ``code`` (check's warnings about the spec are located, as lint's)."""
    return [d for d in rep["diagnostics"] if d["code"] == code]


@pytest.mark.parametrize("stream", [False, True])
def test_empty_label_cells_past_lints_rows_are_FS433_at_check(tmp_path, monkeypatch, stream):
    if stream:
        monkeypatch.setattr(columnar, "STREAM_ROWS", 0)
    df = frame()
    k = late_empty(df, "y")
    spec = project(tmp_path, df)
    assert api.lint(spec) == []                     # the first 200 rows have none
    rep = check(spec)
    [w] = said(rep, "FS433")                        # at the label, as lint's is, with lint's hint
    assert f"in {k} of the 600 rows" in w["message"] and 'missing = {y: [""]}' in w["hint"]
    assert (w["severity"], w["line"], w["column"]) == ("warning", 1, 33) and w["file"] == spec
    assert not [x for x in rep.get("warnings", ()) if "FS433" in x]
    # listed as missing: the rows are dropped, no warning, and the base rates are those of the labelled rows
    spec = project(tmp_path, df, extra=', missing = {y: [""]}')
    rep = check(spec)
    assert not said(rep, "FS433")
    kept = df[df["y"] != ""]
    rates = kept.groupby("sex")["y"].apply(lambda s: (s == "True").mean())
    br = {p["name"]: p for p in rep["properties"]}["br"]
    assert br["value"] == pytest.approx(abs(rates["M"] - rates["F"]), abs=1e-12)


def test_FS433_at_check_is_acknowledged_at_the_label(tmp_path):
    df = frame()
    late_empty(df, "y")
    spec = project(tmp_path, df, comment="# fairspec: ignore[FS433]")
    assert api.lint(spec) == []                     # no FS216: lint cannot judge the rows it did not read
    rep = check(spec)
    assert not said(rep, "FS433") and rep.get("suppressed", 0) >= 1
    [(d, how)] = api.check(spec).report.suppressed
    assert (d.code, d.span.line, how) == ("FS433", 1, "inSource")


def test_lints_FS433_is_not_said_twice(tmp_path):
    df = frame()
    df.loc[[3, 400], "y"] = ""
    spec = project(tmp_path, df)
    assert [d.code for d in api.lint(spec)] == ["FS433"]
    rep = check(spec)
    assert [d["code"] for d in rep["diagnostics"]] == ["FS433"]
    assert not [w for w in rep.get("warnings", ()) if "FS433" in w]


@pytest.mark.parametrize("stream", [False, True])
def test_label_text_in_another_case_past_lints_rows_is_FS432_at_check(tmp_path, monkeypatch, stream):
    """Sorted No ... Yes: lint's rows hold only "No", so y == "yes" is not seen as a case slip there; the
    label was false on every row, and with `or` another condition it is no constant label either."""
    if stream:
        monkeypatch.setattr(columnar, "STREAM_ROWS", 0)
    df = frame()
    df["y"] = np.where(df["y"] == "True", "Yes", "No")
    df = df.sort_values("y", kind="stable").reset_index(drop=True)
    assert (df["y"][:200] == "No").all()
    spec = project(tmp_path, df, label='y == "yes" or age > 75')
    assert api.lint(spec) == []
    rep = check(spec)
    assert rep["exit_code"] == 2 and not any(p["status"] == "holds" for p in rep["properties"])
    [d] = [d for d in rep["diagnostics"] if d["code"] == "FS432"]
    assert '"Yes"' in d["message"] and "600 rows" in d["message"] and (d["line"], d["column"]) == (1, 33)
    # both cases written: no error
    spec = project(tmp_path, df, label='y in {"yes", "Yes"}')
    assert api.lint(spec) == [] and check(spec)["exit_code"] != 2


@pytest.mark.parametrize("stream", [False, True])
def test_where_text_in_another_case_past_lints_rows_is_FS432_at_check(tmp_path, monkeypatch, stream):
    """The where has the same trap: where = y == "yes" or age > 60 kept only the older rows, silently."""
    if stream:
        monkeypatch.setattr(columnar, "STREAM_ROWS", 0)
    df = frame()
    df["y"] = np.where(df["y"] == "True", "Yes", "No")
    df = df.sort_values("y", kind="stable").reset_index(drop=True)
    spec = project(tmp_path, df, label='d == "approve"', extra=', where = y == "yes" or age > 60')
    assert api.lint(spec) == []
    rep = check(spec)
    [d] = [d for d in rep["diagnostics"] if d["code"] == "FS432"]
    assert rep["exit_code"] == 2 and "the where never meets it" in d["message"] and d["line"] == 1


def test_lint_FS432_from_a_sample_says_so_and_spares_both_cases(tmp_path):
    df = frame()
    df["y"] = np.where(df["y"] == "True", "Yes", "No")
    [d] = api.lint(project(tmp_path, df, label='y == "yes"'))
    assert d.code == "FS432" and "the first 200 rows lint read" in d.message
    assert api.lint(project(tmp_path, df, label='y in {"yes", "Yes"}')) == []
    small = df[:50]
    [d] = api.lint(project(tmp_path, small, label='y == "yes"'))
    assert d.code == "FS432" and "in the rows lint read" in d.message and "first" not in d.message


def test_empty_decision_cells_with_positive_are_FS435(tmp_path):
    """positive = "approve" over a column with empty cells: each empty cell was a negative decision."""
    df = frame()
    df.loc[[5, 9], "d"] = ""
    spec = project(tmp_path, df)
    [d] = api.lint(spec)
    assert (d.code, d.severity, d.span.line) == ("FS435", "warning", 6) and 'missing = {d: [""]}' in d.hint
    rep = check(spec)
    assert [d["code"] for d in rep["diagnostics"]] == ["FS435"]     # said once, by lint
    spec = project(tmp_path, df, extra=', missing = {d: [""]}')
    assert api.lint(spec) == []
    # past the rows lint reads: check says it
    df = frame()
    k = late_empty(df, "d")
    spec = project(tmp_path, df)
    assert api.lint(spec) == []
    [w] = said(check(spec), "FS435")                # at the model, as lint's is, with lint's hint
    assert f"in {k} of the 600 rows" in w["message"] and "model 'm'" in w["message"] and w["line"] == 6
    assert 'missing = {d: [""]}' in w["hint"]
    at = 'positive = "approve")'
    text = (tmp_path / "s.fair").read_text().replace(at, at + "  # fairspec: ignore[FS435]")
    (tmp_path / "s.fair").write_text(text)
    assert api.lint(spec) == []                            # acknowledged at the model: no FS216 either
    rep = check(spec)
    assert not said(rep, "FS435") and rep.get("suppressed", 0) >= 1
    spec = project(tmp_path, df, extra=', missing = {d: [""]}')
    rep = check(spec)
    assert not said(rep, "FS435")
    kept = df[df["d"] != ""]
    dec = kept.groupby("sex")["d"].apply(lambda s: (s == "approve").mean())
    sp = {p["name"]: p for p in rep["properties"]}["sp"]
    assert sp["value"] == pytest.approx(abs(dec["M"] - dec["F"]), abs=1e-12)


def test_a_scikit_learn_model_on_late_empty_labels(tmp_path):
    """The same with a real model: equal_opportunity of a logistic regression, FS433 at check."""
    lm = pytest.importorskip("sklearn.linear_model")
    sio = pytest.importorskip("skops.io")
    df = frame()
    late_empty(df, "y")
    X = np.c_[df["age"], (df["sex"] == "M").astype(float)]
    sio.dump(lm.LogisticRegression().fit(X, df["y"] == "True"), tmp_path / "lr.skops")
    df.to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.fair").write_text('data log = csv("t.csv", label = y == "True")\n'
                                     "features A from log {\n  age : int in [17, 90]\n  sex : {F, M} protected\n}\n"
                                     'model lr = sklearn("lr.skops")\n'
                                     "encode A for lr { age : raw  sex : code }  # fairspec: ignore[FS427]\n"
                                     "property eo { equal_opportunity(lr, groups sex) <= 0.9 }\n")
    assert api.lint(str(tmp_path / "s.fair")) == []
    rep = check(str(tmp_path / "s.fair"))
    assert said(rep, "FS433"), rep["diagnostics"]


# The target column (target = COLUMN: the true class of a class = c metric). A Parquet boolean target was
# read as its number 1 / 0, no class of a model fitted on booleans (classes False / True), so every row's
# truth was "no class" and equal_opportunity(class = "True") had no positive truth; a 1 / 0 CSV target
# the same; a target written in another case than the model's classes ("HI" for "hi") counted every row
# as no class; an empty target cell as "not of class c". Now: the booleans and 1 / 0 match, another case
# is unknown with the reason, an empty cell is FS433 (lint, and check past lint's rows).

TSPEC = """data d = {fmt}("t.{fmt}", target = {target}{extra})
features A from d {{
  age : int in [17, 90]
  sex : {{F, M}} protected
}}
model lr = sklearn("{model}")
encode A for lr {{ age : raw  sex : code }}  # fairspec: ignore[FS427]
property eo {{ equal_opportunity(lr, groups sex, class = {cls}) <= 0.9 }}
"""


def target_project(tmp_path, fmt="csv", target="g", cls='"mid"', boolean=False, extra="", edit=None):
    lm = pytest.importorskip("sklearn.linear_model")
    sio = pytest.importorskip("skops.io")
    rng = np.random.default_rng(4)
    n = 600
    sex, age = rng.choice(["F", "M"], n), rng.integers(18, 80, n)
    X = np.c_[age, (sex == "M").astype(float)]
    z = 0.05 * (age - 50) + 0.8 * (sex == "M") + rng.normal(0, 1, n)
    y = z > 0 if boolean else np.where(z < -0.5, "lo", np.where(z < 0.7, "mid", "hi"))
    model = lm.LogisticRegression().fit(X, y)
    sio.dump(model, tmp_path / "lr.skops")
    df = pd.DataFrame({"age": age, "sex": sex, target: y})
    pred = model.predict(X)
    if edit is not None:
        df = edit(df)
    if fmt == "csv":
        df.to_csv(tmp_path / "t.csv", index=False)
    else:
        df.to_parquet(tmp_path / "t.parquet", index=False)
    (tmp_path / "s.fair").write_text(TSPEC.format(fmt=fmt, target=target, model="lr.skops", cls=cls, extra=extra))
    c = True if boolean else "mid"
    tpr = {s: (pred[(sex == s) & (y == c)] == c).mean() for s in ("F", "M")}
    return str(tmp_path / "s.fair"), abs(tpr["M"] - tpr["F"])


def eo(spec) -> dict:
    rep = check(spec)
    assert not [d for d in rep["diagnostics"] if d["severity"] == "error"], rep["diagnostics"]
    return {p["name"]: p for p in rep["properties"]}["eo"]


@pytest.mark.parametrize("how", ["csv", "parquet", "ones"])
def test_a_boolean_target_is_the_truth_of_a_model_fitted_on_booleans(tmp_path, how):
    edit = (lambda df: df.assign(b=df["b"].astype(int))) if how == "ones" else None
    spec, ref = target_project(tmp_path, fmt="parquet" if how == "parquet" else "csv", target="b", cls='"True"',
                               boolean=True, edit=edit)
    got = eo(spec)
    assert got["status"] != "unknown" and got["value"] == pytest.approx(ref, abs=1e-12), got


def test_a_target_in_another_case_than_the_classes_is_FS432_or_unknown(tmp_path):
    spec, _ = target_project(tmp_path, edit=lambda df: df.assign(g=df["g"].str.upper()))
    [d] = api.lint(spec)                                     # in lint's rows: the error, at the metric
    assert d.code == "FS432" and "its target" in d.message and d.span.line == 8, d.message

    def late(df):
        df.loc[df.index >= 300, "g"] = df["g"][df.index >= 300].str.upper()
        return df

    spec, _ = target_project(tmp_path, edit=late)            # past them: check's unknown, with the reason
    assert api.lint(spec) == []
    got = eo(spec)
    assert got["status"] == "unknown" and "where the model's class is" in got["reason"], got


def test_empty_target_cells_are_FS433(tmp_path):
    def early(df):
        df.loc[[2, 7, 450], "g"] = ""
        return df

    spec, _ = target_project(tmp_path, edit=early)
    [d] = api.lint(spec)
    assert (d.code, d.span.line) == ("FS433", 1) and "target" in d.message

    def late(df):
        df.loc[df.index[400::9], "g"] = ""
        return df

    spec, _ = target_project(tmp_path, edit=late)
    assert api.lint(spec) == []
    [w] = said(check(spec), "FS433")                # at the target
    assert "the target reads it" in w["message"] and 'missing = {g: [""]}' in w["hint"]
    first = (tmp_path / "s.fair").read_text().splitlines()[0]
    assert (w["line"], w["column"]) == (1, first.index("target = g") + len("target = ") + 1), w
    spec, _ = target_project(tmp_path, edit=late, extra=', missing = {g: [""]}')
    assert not said(check(spec), "FS433")


def test_a_truth_from_the_target_constant_says_target(tmp_path):
    spec, _ = target_project(tmp_path, edit=lambda df: df.assign(g=np.where(df["g"] == "mid", "lo", df["g"])))
    got = eo(spec)
    assert got["status"] == "unknown" and "target column 'g'" in got["reason"], got


# Lint reads the first 200 rows: what it claims from them must hold of the file. positive = "approve" over
# a decision column whose first rows hold only deny / pending (approvals rare, later) was the error FS431
# "never the positive value", though the file holds it: a near miss of a value they hold ("pendng") stays an error, any
# other value is check's to judge (a positive no row holds makes the metrics unknown). FS434 (a constant
# label) is said only of a file lint read whole.

def rare_project(tmp_path, positive: str, n: int = 600):
    df = frame(n)
    df["d"] = np.where(np.arange(n) % 2 == 0, "deny", "pending")
    late = (np.arange(n) >= 300) & (np.arange(n) % 5 == 0)
    df.loc[late, "d"] = "approve"
    return df, project(tmp_path, df, positive=f", positive = {positive}")


def test_a_rare_positive_past_lints_rows_is_no_FS431(tmp_path):
    df, spec = rare_project(tmp_path, '"approve"')
    assert api.lint(spec) == []
    got = {p["name"]: p for p in check(spec)["properties"]}["sp"]
    dec = df.groupby("sex")["d"].apply(lambda s: (s == "approve").mean())
    assert got["value"] == pytest.approx(abs(dec["M"] - dec["F"]), abs=1e-12)
    _, spec = rare_project(tmp_path, '"pendng"')           # a near miss of a value lint saw: still an error
    [d] = api.lint(spec)
    assert d.code == "FS431" and "first 200 rows" in d.message and d.hint == 'did you mean "pending"?'
    assert [d.code for d in api.lint(rare_project(tmp_path, '"Deny"')[1])] == ["FS431"]
    _, spec = rare_project(tmp_path, '"granted"')          # in no row: lint cannot know; check says unknown
    assert api.lint(spec) == []
    got = {p["name"]: p for p in check(spec)["properties"]}["sp"]
    assert got["status"] == "unknown" and "negative on every one" in got["reason"]
    _, spec = rare_project(tmp_path, '"granted"', n=150)   # a file lint read whole: certain
    assert [d.code for d in api.lint(spec)] == ["FS431"]


def test_FS434_is_said_only_of_a_file_lint_read_whole(tmp_path):
    df = frame(600)
    df["y"] = "False"
    df.loc[450, "y"] = "True"                                # one positive, past lint's rows
    assert api.lint(project(tmp_path, df)) == []
    assert [d.code for d in api.lint(project(tmp_path, df[:150]))] == ["FS434"]


# A column lint typed a number from its first rows (0.5, 0.7, ...) that holds text past them ("n/a"):
# label = s > 0.5 was an internal error at check (exit 4: '>' between str and float), s == 1 false on
# every row. Now one sentence naming the file and column, with the missing = {...} fix.

@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("label,extra", [("s > 0.5", ""), ("s == 1", ""), ("s + 0 > 0.5", ""),
                                         ('d == "approve"', ", where = s > 0.1")])
def test_text_past_lints_rows_in_a_number_column_is_one_sentence(tmp_path, monkeypatch, stream, label, extra):
    if stream:
        monkeypatch.setattr(columnar, "STREAM_ROWS", 0)
    df = frame()
    df["s"] = np.round(np.random.default_rng(2).random(len(df)), 3).astype(str)
    df.loc[450, "s"] = "n/a"
    spec = project(tmp_path, df, label=label, extra=extra)
    assert api.lint(spec) == []
    rep = check(spec)
    assert rep["exit_code"] == 2 and not rep.get("internal_errors"), rep
    assert "t.csv" in rep["error"] and "column 's' holds text (\"n/a\")" in rep["error"], rep["error"]
    assert 'missing = {s: ["n/a"]}' in rep["error"]
    spec = project(tmp_path, df, label=label, extra=extra + ', missing = {s: ["n/a"]}')
    # the file is read now; `s == 1` holds on no row, so equal_opportunity's TPR is 0/0 in every group: unknown
    # since session 34 (exit 3), not a verdict over the other groups
    rep = check(spec)
    assert rep["exit_code"] in (0, 1, 3) and not rep.get("internal_errors"), rep
