"""A wide CSV file (thousands of columns, the spec reading a handful): check converts only the columns
the spec reads (pyarrow's include_columns; each row's field count is still checked) and lint types only
the columns it is asked about; the verdicts are those of the same rows in a narrow file, and a missing
or misspelled column is still named, with the close names suggested (the header is read whole)."""

from __future__ import annotations

import json
import random

import pytest

from conftest import run_cli
from fairspec.sema.check import check_file

USED = ["age", "sex", "race", "member", "score", "hired"]

SPEC = '''data people = csv("{file}", label = hired == "yes"{extra})
features People from people {{
  age    : int in [18, 80]
  sex    : {{F, M}}  protected
  race   : {{A, B, C}}  protected
  member : bool
  score  : real in [0, 1]
}}
model net = rule(age >= 40 and member)
property p1 {{
  statistical_parity(net, groups sex) <= 0.2
  min_group_size = 5
}}
'''


def make_wide(path, columns: int = 5000, rows: int = 300, seed: int = 0, narrow=None, ragged_at=None):
    """A CSV of ``columns`` columns: the six the spec reads, spread among filler numbers (an empty cell
    and a "?" among them: in columns the spec never reads, they drop no row); ``narrow``: the same rows,
    the six columns only; ``ragged_at``: that row has one field too few."""
    rng = random.Random(seed)
    filler = [f"x{i}" for i in range(columns - len(USED))]
    names = filler[:1000] + USED[:3] + filler[1000:3000] + USED[3:] + filler[3000:]
    at = {n: i for i, n in enumerate(names)}
    lines, small = [",".join(names)], [",".join(USED)]
    for r in range(rows):
        vals = {"age": str(rng.randint(18, 80)), "sex": rng.choice("FM"), "race": rng.choice("ABC"),
                "member": rng.choice(["true", "false"]), "score": f"{rng.random():.4f}",
                "hired": rng.choice(["yes", "no"])}
        row = [f"{rng.random():.2f}"] * len(names)
        row[at["x7"]] = "" if r % 3 == 0 else "?" if r % 3 == 1 else "0.5"
        for n in USED:
            row[at[n]] = vals[n]
        if r == ragged_at:
            row = row[:-1]
        lines.append(",".join(row))
        small.append(",".join(vals[n] for n in USED))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if narrow is not None:
        narrow.write_text("\n".join(small) + "\n", encoding="utf-8")
    return names


@pytest.fixture
def project(tmp_path):
    (tmp_path / "fairspec.toml").write_text("")
    make_wide(tmp_path / "wide.csv", narrow=tmp_path / "narrow.csv")
    (tmp_path / "wide.fair").write_text(SPEC.format(file="wide.csv", extra=', missing = ["?"]'))
    (tmp_path / "narrow.fair").write_text(SPEC.format(file="narrow.csv", extra=', missing = ["?"]'))
    return tmp_path


def test_check_reads_only_the_columns_the_spec_reads(project):
    from fairspec.runtime.columnar import read_table

    res = check_file(project / "wide.fair", peek_models=False)
    assert [d.code for d in res.diagnostics if d.is_error] == []
    (d,) = res.spec.datasets
    assert sorted(d.used) == sorted(USED)
    t = read_table(d)
    assert sorted(t.columns) == sorted(USED)  # not 5,000 arrays
    assert t.n_rows == 300  # the empty cells and "?" of x7 (never read) drop no row


def test_the_verdict_is_that_of_the_same_rows_in_a_narrow_file(project):
    got = {}
    for name in ("wide", "narrow"):
        r = run_cli("check", project / f"{name}.fair", "--format", "json", cwd=project)
        assert r.returncode in (0, 1, 3), r.stderr
        (p,) = json.loads(r.stdout)["properties"]
        got[name] = (p["status"], p["value"], p["details"]["rows"],
                     [(g["group"], g["rows"], g["positives"]) for g in p["details"]["groups"]])
    assert got["wide"] == got["narrow"] and got["wide"][2] == 300, got


@pytest.mark.parametrize("wrong, code, said", [
    ("hired ==", "FS207", "did you mean 'hired'"),  # the label reads a misspelled column
    ("score  : real", "FS207", "'scor'"),  # a feature whose column is not there
])
def test_a_misspelled_column_of_a_wide_file_is_named_with_the_close_names(project, wrong, code, said):
    text = (project / "wide.fair").read_text()
    text = text.replace("hired ==", "hird ==") if wrong == "hired ==" else text.replace(wrong, "scor   : real")
    (project / "wide.fair").write_text(text)
    r = run_cli("check", project / "wide.fair", "--format", "json", cwd=project)
    assert r.returncode == 2, r.stderr
    (d,) = [d for d in json.loads(r.stdout)["diagnostics"] if d["severity"] == "error"]
    assert d["code"] == code and said in d["message"] + (d["hint"] or ""), d
    if wrong == "score  : real":
        assert "'scor'" in d["message"] and "score" in d["hint"], d


def test_a_short_row_past_lint_s_sample_is_named_by_check(tmp_path):
    (tmp_path / "fairspec.toml").write_text("")
    make_wide(tmp_path / "wide.csv", ragged_at=250)
    (tmp_path / "wide.fair").write_text(SPEC.format(file="wide.csv", extra=""))
    r = run_cli("check", tmp_path / "wide.fair", cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "line 252 has 4999 fields, expected 5000" in r.stdout + r.stderr, (r.stdout, r.stderr)


def test_lint_types_only_the_columns_it_is_asked_about(project, monkeypatch):
    import fairspec.sema.check_data as cd

    typed = []
    real = cd.PerColumn.__getitem__

    def spy(self, name):
        typed.append(name)
        return real(self, name)

    monkeypatch.setattr(cd.PerColumn, "__getitem__", spy)
    res = check_file(project / "wide.fair", peek_models=False)
    assert [d.code for d in res.diagnostics if d.is_error] == []
    assert 0 < len(set(typed)) <= 20, len(set(typed))


def test_a_wide_parquet_file_is_read_by_the_columns_the_spec_reads(project):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow.csv as pcsv

    from fairspec.runtime.columnar import read_table

    tab = pcsv.read_csv(project / "wide.csv")
    pq.write_table(tab, project / "wide.parquet")
    (project / "wide.fair").write_text(SPEC.format(file="wide.csv", extra=', missing = ["?"]')
                                       .replace('csv("wide.csv"', 'parquet("wide.parquet"'))
    res = check_file(project / "wide.fair", peek_models=False)
    assert [d.code for d in res.diagnostics if d.is_error] == []
    (d,) = res.spec.datasets
    t = read_table(d)
    assert sorted(t.columns) == sorted(USED) and t.n_rows == 300
    r = run_cli("check", project / "wide.fair", "--format", "json", cwd=project)
    n = run_cli("check", project / "narrow.fair", "--format", "json", cwd=project)
    (a,), (b,) = json.loads(r.stdout)["properties"], json.loads(n.stdout)["properties"]
    assert (a["status"], a["value"]) == (b["status"], b["value"]), (a, b)
