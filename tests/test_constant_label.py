"""A label or logged decision that is the same on every row a group metric uses: ``y == "maybe"`` over
a column that never holds "maybe" is false on every row, so base_rate_difference and
false_positive_rate_difference came out 0 and held -- a verdict that says nothing about the groups.
It is ``unknown`` with the reason; one group without positives is legitimate (overall, not per group)."""

from __future__ import annotations

import numpy as np

from fairspec import api

SPEC = """data log = csv("t.csv", label = y == "{label}")
features A from log {{
  age : int in [17, 90]
  sex : {{Female, Male}} protected
}}
model m = predictions(log, decision = "d")
property br {{ base_rate_difference(log, groups sex) <= 0.1 }}
property fpr {{ false_positive_rate_difference(m, groups sex) <= 0.5 }}
property acc {{ accuracy_difference(m, groups sex) <= 0.9 }}
property sp {{ statistical_parity(m, groups sex) <= 0.5 }}
"""


def run(tmp_path, label: str, y, d, sex=None) -> dict:
    n = len(y)
    sex = sex if sex is not None else np.where(np.arange(n) % 2 == 0, "Female", "Male")
    lines = ["age,sex,y,d"] + [f"{30 + i % 40},{s},{a},{b}" for i, (s, a, b) in enumerate(zip(sex, y, d))]
    (tmp_path / "t.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "s.fair").write_text(SPEC.format(label=label))
    rep = api.check(str(tmp_path / "s.fair")).to_dict()
    return {p["name"]: p for p in rep["properties"]}


def test_a_label_false_on_every_row_is_unknown_not_holds(tmp_path):
    rng = np.random.default_rng(0)
    n = 200
    y = rng.choice(["yes", "no"], n)
    d = (rng.random(n) < 0.4).astype(int)
    got = run(tmp_path, "maybe", y, d)
    for k in ("br", "fpr", "acc"):
        assert got[k]["status"] == "unknown", (k, got[k])
        assert "label of data 'log' is false on every one of the 200 rows" in got[k]["reason"], got[k]
    assert got["sp"]["status"] == "holds"      # the label is not read by statistical_parity


def test_a_group_without_positives_still_holds(tmp_path):
    n = 200
    sex = np.where(np.arange(n) % 2 == 0, "Female", "Male")
    y = np.where((sex == "Male") & (np.arange(n) % 4 == 1), "yes", "no")    # Female: no positive label
    d = np.zeros(n, dtype=int)
    d[::3] = 1
    got = run(tmp_path, "yes", y, d, sex)
    assert got["fpr"]["status"] in ("holds", "violated"), got["fpr"]
    assert "constant" not in (got["fpr"].get("details") or {})


def test_a_logged_decision_negative_on_every_row_is_unknown(tmp_path):
    rng = np.random.default_rng(1)
    n = 200
    y = rng.choice(["yes", "no"], n)
    got = run(tmp_path, "yes", y, np.zeros(n, dtype=int))
    assert got["sp"]["status"] == "unknown", got["sp"]
    assert "logged decision of model 'm' (column 'd') is negative on every one" in got["sp"]["reason"]
    assert got["br"]["status"] != "unknown" or "logged" not in got["br"]["reason"]   # base rates read no decision


def lint_codes(tmp_path, rows: list[str], label: str) -> list:
    (tmp_path / "t.csv").write_text("age,sex,y\n" + "\n".join(rows) + "\n")
    (tmp_path / "s.fair").write_text(f'data log = csv("t.csv", label = {label})\n'
                                     "features A from log {\n  sex : {F, M} protected\n}\n"
                                     "property br { base_rate_difference(log, groups sex) <= 0.5 }\n")
    return [(d.code, d.severity) for d in api.lint(str(tmp_path / "s.fair"))]


def test_lint_warns_FS434_only_where_it_reads_the_whole_file(tmp_path):
    small = [f"{30 + i},{'FM'[i % 2]},{'yes' if i % 3 else 'no'}" for i in range(50)]
    assert lint_codes(tmp_path, small, 'y == "maybe"') == [("FS434", "warning")]
    assert lint_codes(tmp_path, small, 'y != "maybe"') == [("FS434", "warning")]
    assert lint_codes(tmp_path, small, 'y == "yes"') == []
    nums = [f"{30 + i},{'FM'[i % 2]},{i % 2}" for i in range(50)]
    assert lint_codes(tmp_path, nums, "y == 2") == [("FS434", "warning")]
    assert lint_codes(tmp_path, nums, "y >= 0") == [("FS434", "warning")]
    assert lint_codes(tmp_path, nums, "y == 1") == []
    # a rare positive past the rows lint reads: no warning (it cannot see the whole column)
    big = [f"{30 + i % 40},{'FM'[i % 2]},no" for i in range(1000)] + ["40,F,yes"]
    assert lint_codes(tmp_path, big, 'y == "yes"') == []


def test_no_FS434_when_no_group_metric_reads_the_label(tmp_path):
    (tmp_path / "t.csv").write_text("age,sex,y\n" + "\n".join(f"{30 + i},{'FM'[i % 2]},no" for i in range(20)) + "\n")
    (tmp_path / "s.fair").write_text('data log = csv("t.csv", label = y == "yes")\n'
                                     "features A from log {\n  sex : {F, M} protected\n}\n"
                                     'model m = rule(sex == F)\n'
                                     "property sp { statistical_parity(m, groups sex) <= 0.5 }\n")
    assert [d.code for d in api.lint(str(tmp_path / "s.fair"))] == []
