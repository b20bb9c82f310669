"""Session 37 audit (h7, round 4): spec predicates on data rows decided exactly, as rules are (runtime/exact_rule).

A derived group (``group low = 0.1 * a <= 0.3``), a data ``where`` and a data ``label`` were evaluated in float64
(runtime/evaluate): at a = 3, 0.1 * 3 = 0.30000000000000004 > 0.3, so every a = 3 row went to the wrong group,
was dropped by the where, or got the wrong label. They now go through runtime/exact_rule.decide_rule (the rows
near a tie re-decided in Fractions, each data value the decimal its float reads as). Each test failed before."""

from __future__ import annotations

import json

from conftest import run_cli

SPEC = """data d = csv("d.csv"DATA)
features P from d {
  a : int in [0, 5]
  g : {F, M} protected
}
model m = rule(a >= 3)
EXTRA
property q { statistical_parity(m, groups GROUPS) <= 1  min_group_size = 1 }
"""


def _run(tmp_path, rows, data=", label = y == 1", extra="", groups="g"):
    (tmp_path / "d.csv").write_text("\n".join(["a,g,y"] + rows) + "\n")
    (tmp_path / "fairspec.toml").write_text("")
    spec = SPEC.replace("DATA", data).replace("EXTRA", extra).replace("GROUPS", groups)
    (tmp_path / "s.fair").write_text(spec)
    r = run_cli("check", tmp_path / "s.fair", "--format", "json", cwd=tmp_path)
    (v,) = json.loads(r.stdout)["properties"]
    return v, {x["group"]: x for x in v["details"]["groups"]}


ROWS = [f"{a},{'F' if i % 2 else 'M'},{i % 2}" for a in (2, 3, 4) for i in range(100)]


def test_a_derived_group_is_decided_exactly(tmp_path):
    # exact: low = {a = 2, a = 3} (200 rows, 100 positive), not low = {a = 4} (100 rows, all positive);
    # float64 put the a = 3 rows in "not low" (100 / 200)
    v, groups = _run(tmp_path, ROWS, extra="group low = 0.1 * a <= 0.3", groups="low")
    low = [x for n, x in groups.items() if "not" not in n]
    high = [x for n, x in groups.items() if "not" in n]
    assert len(low) == 1 and len(high) == 1, groups
    assert low[0]["rows"] == 200 and low[0]["positives"] == 100, groups
    assert high[0]["rows"] == 100 and high[0]["positives"] == 100, groups


def test_a_where_is_decided_exactly(tmp_path):
    # exact: the where keeps a = 2 and a = 3 (300 rows with F / M alternating, positives the a = 3 ones)
    v, groups = _run(tmp_path, ROWS, data=", label = y == 1, where = 0.1 * a <= 0.3")
    assert sum(x["rows"] for x in groups.values()) == 200, groups
    assert sum(x["positives"] for x in groups.values()) == 100, groups


def test_a_label_is_decided_exactly(tmp_path):
    # the label 0.1 * a <= 0.3 is true on a = 2, 3: a metric reading labels (equal opportunity) sees
    # the a = 3 rows as label-positive; float64 saw none of them
    (tmp_path / "d.csv").write_text("\n".join(["a,g,y"] + ROWS) + "\n")
    (tmp_path / "fairspec.toml").write_text("")
    spec = SPEC.replace("DATA", ", label = 0.1 * a <= 0.3").replace("EXTRA", "").replace(
        "statistical_parity(m, groups GROUPS) <= 1", "equal_opportunity(m, groups g) <= 0.1")
    (tmp_path / "s.fair").write_text(spec)
    r = run_cli("check", tmp_path / "s.fair", "--format", "json", cwd=tmp_path)
    (v,) = json.loads(r.stdout)["properties"]
    # exact: label-positive rows are a = 2, 3; the model (a >= 3) is positive on half of them in each group
    # float64: label-positive rows are a = 2 only, where the model is never positive (rate 0 in each group)
    groups = {x["group"]: x for x in v["details"]["groups"]}
    assert all(x["label_positives"] == 100 for x in groups.values()), groups
    assert all(abs(x["tpr"] - 0.5) < 1e-12 for x in groups.values()), groups


FLIP_SPEC = """data d = csv("t.csv", label = y == 1)
features F from d {
  a : int in [0, 5]
  g : {A, B} protected
}
model m = sklearn("m.skops")
encode F for m { a : raw  g : code {A = 0, B = 1} }
property flips {
  forall x, x' : F
  require x.* == x'.* except {g}
  require 0.1 * x.a > 0.3
  ensure label(m(x)) == label(m(x'))
  using data
}
"""


def test_a_flip_s_pre_condition_is_met_as_written(tmp_path):
    """A tree whose label follows g only at a = 3: 0.1 * 3 > 0.3 is false as written (0.3 > 0.3), true in float64
    (0.30000000000000004), so the a = 3 flips are no witness. fairspec said ``violated`` with one; now a flip on
    data is admitted only where the pre-condition holds both as written and in float64 (README, further
    conditions: a witness is admitted in both readings)."""
    import numpy as np
    import pytest

    sio = pytest.importorskip("skops.io")
    from sklearn.tree import DecisionTreeClassifier

    from fairspec import api

    a = np.repeat(np.arange(6), 20)
    g = np.tile([0, 1], 60)
    y = np.where(a == 3, g, 0)
    est = DecisionTreeClassifier(random_state=0).fit(np.stack([a, g], 1).astype(float), y)
    sio.dump(est, tmp_path / "m.skops")
    rows = ["a,g,y"] + [f"{u},{'AB'[v]},{w}" for u, v, w in zip(a, g, y)]
    (tmp_path / "t.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "fairspec.toml").write_text("")
    (tmp_path / "s.fair").write_text(FLIP_SPEC)
    (v,) = api.check(str(tmp_path / "s.fair")).to_dict()["properties"]
    assert v["status"] != "violated", v
    # the same spec admitting a = 3 as written (>=): the flips are found
    (tmp_path / "s.fair").write_text(FLIP_SPEC.replace("0.1 * x.a > 0.3", "0.1 * x.a >= 0.3"))
    (v,) = api.check(str(tmp_path / "s.fair")).to_dict()["properties"]
    assert v["status"] == "violated", v
