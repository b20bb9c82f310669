"""The shipped policies for real rules (specs/policies): each imported and applied on a table
whose counts are known, so every reported number can be checked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from fairspec.pipeline import check

# sex x race cells: (rows, selected, scores drawn so that the median split is known)
CELLS = {("F", "A"): (400, 120), ("F", "B"): (300, 60), ("F", "C"): (10, 1),
         ("M", "A"): (500, 250), ("M", "B"): (280, 112), ("M", "C"): (10, 9)}

SPEC = """\
import "fairspec/policies/{policy}.fair"
data log = csv("{csv}", label = outcome == 1)
features P from log {{
  sex  : {{F, M}}  protected
  race : {{A, B, C}}  protected
}}
model tool = predictions(log, decision = "selected")
model scorer = predictions(log, score = "score", threshold = 0.5)
{apply}
"""


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    folder = tmp_path_factory.mktemp("policies")
    rng = np.random.default_rng(0)
    lines = ["sex,race,selected,score,outcome"]
    for (sex, race), (n, k) in CELLS.items():
        for i in range(n):
            lines.append(f"{sex},{race},{int(i < k)},{rng.random():.6f},{int(rng.random() < 0.4)}")
    csv = folder / "log.csv"
    csv.write_text("\n".join(lines) + "\n")
    return folder, csv


def _run(table, policy, apply):
    folder, csv = table
    spec = folder / f"{policy}.fair"
    spec.write_text(SPEC.format(policy=policy, csv=csv, apply=apply))
    rep = check(spec)
    assert not rep.has_errors and not rep.internal_errors, ([d.message for d in rep.diagnostics], rep.error)
    return {v.name: v for v in rep.verdicts}


def _rates(keys):
    out = {}
    for key in keys:
        n = sum(CELLS[c][0] for c in CELLS if all(p in c for p in key))
        k = sum(CELLS[c][1] for c in CELLS if all(p in c for p in key))
        out[key] = (n, k, k / n)
    return out


def test_four_fifths(table):
    v = _run(table, "four_fifths", "apply four_fifths(tool, groups = sex)\n"
                                   "apply four_fifths(tool, groups = race, threshold = 0.5) as loose")
    r = _rates([("F",), ("M",)])
    assert v["four_fifths.disparate_impact"].value == pytest.approx(r[("F",)][2] / r[("M",)][2], abs=1e-6)
    assert v["four_fifths.disparate_impact"].status == "violated"  # 0.25 / 0.457 = 0.55
    # race C has 20 rows < min_size 30: it is not counted, and the verdict says so rather than holds
    loose = v["loose.disparate_impact"]
    assert {g["group"]: g["counted"] for g in loose.details["groups"]}["race=C"] is False
    assert loose.status in ("unknown", "holds", "violated")


def test_nyc_ll144_selection_rates(table):
    v = _run(table, "nyc_ll144", "apply nyc_ll144(tool, sex = sex, race = race)")
    assert set(v) == {"nyc_ll144.sex", "nyc_ll144.race_ethnicity", "nyc_ll144.intersectional"}
    inter = v["nyc_ll144.intersectional"]
    total = sum(n for n, _ in CELLS.values())
    rows = {tuple(p.split("=")[1] for p in g["group"].split(" x ")): g for g in inter.details["groups"]}
    # categories under 2% of the rows are excluded and listed; the impact ratio is over the most
    # selected counted category
    excluded = {c for c, (n, _) in CELLS.items() if n < 0.02 * total}
    assert excluded == {("F", "C"), ("M", "C")}
    assert {tuple(p.split("=")[1] for p in g["group"].split(" x ")) for g in inter.details["excluded_groups"]} == excluded
    top = max(k / n for c, (n, k) in CELLS.items() if c not in excluded)
    for c, (n, k) in CELLS.items():
        g = rows[c]
        assert (g["rows"], g["positives"]) == (n, k)
        assert g["positive_rate"] == pytest.approx(k / n, abs=1e-6)
        if c in excluded:
            assert g["impact_ratio"] is None and g["counted"] is False and g["excluded"]
        else:
            assert g["impact_ratio"] == pytest.approx((k / n) / top, abs=1e-6)
    assert inter.value == pytest.approx(min(k / n for c, (n, k) in CELLS.items() if c not in excluded) / top, abs=1e-6)
    assert inter.details["rate"] == "selection"
    # race alone: C has 20 rows of 1500 (1.3%), excluded as well
    race = v["nyc_ll144.race_ethnicity"]
    assert [g["group"] for g in race.details["excluded_groups"]] == ["race=C"]
    r = _rates([("A",), ("B",)])
    assert race.value == pytest.approx(min(x[2] for x in r.values()) / max(x[2] for x in r.values()), abs=1e-6)


def test_nyc_ll144_scoring_rates(table):
    """The scoring rate: the share of a category scoring above the median score of the whole sample."""
    folder, csv = table
    v = _run(table, "nyc_ll144", "apply nyc_ll144_scoring(scorer, sex = sex, race = race, exclude_below = 0, "
                                 "min_size = 1) as scoring")
    import csv as csvmod

    with open(csv) as f:
        rows = list(csvmod.DictReader(f))
    s = np.array([float(r["score"]) for r in rows])
    med = np.median(s)
    sex = np.array([r["sex"] for r in rows])
    rate = {x: float(np.mean(s[sex == x] > med)) for x in ("F", "M")}
    got = {g["group"]: g for g in v["scoring.sex"].details["groups"]}
    for x in ("F", "M"):
        assert got[f"sex={x}"]["positive_rate"] == pytest.approx(rate[x], abs=1e-6)
    assert v["scoring.sex"].value == pytest.approx(min(rate.values()) / max(rate.values()), abs=1e-6)
    assert v["scoring.sex"].details["rate"] == "scoring"
    assert "excluded_groups" not in v["scoring.intersectional"].details  # exclude_below = 0


def test_nyc_ll144_text_report_is_the_audit_table(table, capsys):
    from fairspec.cli import main

    folder, _ = table
    _run(table, "nyc_ll144", "apply nyc_ll144(tool, sex = sex, race = race)")
    main(["check", str(folder / "nyc_ll144.fair")])
    out = capsys.readouterr().out
    for words in ("applicants", "selected", "selection rate", "impact ratio", "excluded (under 2% of the rows)"):
        assert words in out, words
