"""The auditors' metrics end to end: tables of logged predictions, data bias with no model,
sample weights, comparison modes, per-group tables, and the diagnostics around them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import EXAMPLES, run_cli
from fairspec.pipeline import check, lint

LOG = """\
data log = csv("{csv}", label = outcome == 1)

features P from log {{
  sex  : {{F, M}}  protected
  band : {{a, b, c}}
}}

model logged = predictions(log, decision = "decision")
model scored = predictions(log, score = "score", threshold = 0.5)
"""


def _write(tmp_path, rows, body, name="spec.fair", weights=True):
    csv = tmp_path / f"{name}.csv"
    head = "sex,band,score,decision,outcome" + (",w" if weights else "")
    csv.write_text(head + "\n" + "\n".join(",".join(map(str, r)) for r in rows) + "\n")
    spec = tmp_path / name
    spec.write_text(LOG.format(csv=csv) + body)
    return spec


def _rows(n=400, seed=1):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        sex = rng.choice(["F", "M"])
        band = rng.choice(["a", "b", "c"])
        y = int(rng.random() < (0.3 if sex == "F" else 0.5))
        s = float(np.clip(rng.normal(0.35 + 0.3 * y + (0.1 if sex == "M" else 0.0), 0.2), 0, 1))
        out.append([sex, band, f"{s:.4f}", "yes" if s > 0.5 else "no", y, int(rng.integers(1, 4))])
    return out


def _verdicts(spec):
    rep = check(spec)
    assert not rep.has_errors, [d.message for d in rep.diagnostics] + [rep.error]
    assert not rep.internal_errors, rep.internal_errors
    return {v.name: v for v in rep.verdicts}


def test_logged_decision_and_score_columns_agree(tmp_path):
    body = """
property a { disparate_impact(logged, groups sex) >= 0.5  min_group_size = 1 }
property b { disparate_impact(scored, groups sex) >= 0.5  min_group_size = 1 }
property c { predictive_parity_difference(logged, groups sex x band) <= 0.5  min_group_size = 1 }
"""
    v = _verdicts(_write(tmp_path, _rows(), body))
    assert v["a"].value == v["b"].value
    table = {g["group"]: g for g in v["c"].details["groups"]}
    rows = _rows()
    for key, g in table.items():
        sex, band = (p.split("=")[1] for p in key.split(" x "))
        mine = [r for r in rows if r[0] == sex and r[1] == band]
        pos = [r for r in mine if r[3] == "yes"]
        assert g["rows"] == len(mine) and g["positives"] == len(pos)
        assert g["ppv"] == pytest.approx(sum(r[4] for r in pos) / len(pos), abs=1e-6)
    assert set(v["c"].details["rates"]) == {"label_positives", "ppv"}
    assert v["c"].details["overall"]["rows"] == len(rows)


def test_integer_weights_equal_repeated_rows(tmp_path):
    """weight = w counts a row w times: the metric equals the one on the table with rows repeated."""
    rows = _rows()
    body = """
property m { {metric}(logged, groups sex) {op} 0.5  min_group_size = 1 {w} }
"""
    for metric, op in (("statistical_parity", "<="), ("false_negative_rate_ratio", ">="),
                       ("average_odds_difference", "<="), ("accuracy_difference", "<=")):
        weighted = _verdicts(_write(tmp_path, rows, body.replace("{metric}", metric).replace("{op}", op)
                                    .replace("{w}", "weight = w"), name="w.fair"))["m"]
        repeated = [r for r in rows for _ in range(r[5])]
        plain = _verdicts(_write(tmp_path, repeated, body.replace("{metric}", metric).replace("{op}", op)
                                 .replace("{w}", ""), name="r.fair"))["m"]
        assert weighted.value == pytest.approx(plain.value, abs=1e-6), metric
        assert weighted.details["weight"] == "w"
        assert weighted.details["groups"][0]["weight"] == pytest.approx(sum(r[5] for r in rows if r[0] == "F"))


def test_compare_to_overall_and_inequality_indices(tmp_path):
    body = """
property between { false_positive_rate_difference(logged, groups band) <= 0.5  min_group_size = 1 }
property overall { false_positive_rate_difference(logged, groups band) <= 0.5  min_group_size = 1
                   compare = to_overall }
property theil { theil_index(logged) <= 0.5 }
property cal { calibration_gap(scored, groups sex) <= 0.5  min_group_size = 1 }
"""
    v = _verdicts(_write(tmp_path, _rows(), body))
    fpr = [g["fpr"] for g in v["between"].details["groups"]]
    o = v["overall"].details["overall"]["fpr"]
    assert v["between"].value == pytest.approx(max(fpr) - min(fpr), abs=2e-6)
    assert v["overall"].value == pytest.approx(max(abs(f - o) for f in fpr), abs=2e-6)
    assert v["overall"].details["compare"] == "to_overall"
    assert v["theil"].details["groups"][0]["group"] == "all" and "benefit" in v["theil"].details["groups"][0]
    g = v["cal"].details["groups"][0]
    assert len(g["reliability"]) == 10 and g["ece"] is not None
    assert v["cal"].bound[0] <= v["cal"].value <= v["cal"].bound[1]


def test_data_bias_without_a_model(tmp_path):
    body = """
property base { base_rate_ratio(log, groups sex) >= 0.5  min_group_size = 1 }
property di { disparate_impact(log, groups sex) >= 0.5  min_group_size = 1 }
"""
    rows = _rows()
    v = _verdicts(_write(tmp_path, rows, body))
    rate = {s: np.mean([r[4] for r in rows if r[0] == s]) for s in "FM"}
    assert v["base"].value == pytest.approx(min(rate.values()) / max(rate.values()), abs=1e-6)
    assert v["di"].value == v["base"].value


@pytest.mark.parametrize("body, code, needle", [
    ("property p { calibration_gap(logged, groups sex) <= 0.1 }", "FS501", "needs a score"),
    ("property p { equalized_odds(log, groups sex) <= 0.1 }", "FS501", "a data set alone"),
    ("property p { statistical_parity(logged, groups sex) <= 0.1  compare = overall }", "FS307", "to_overall"),
    ("property p { statistical_parity(logged, groups sex) <= 0.1  weight = wt }", "FS207", "weight column"),
    ("property p { statistical_parity(logged, groups sex) <= 0.1  exclude_below = 2 }", "FS307", "share"),
    ("property p { theil_index(logged, alpha = 2) <= 0.1 }", "FS208", "alpha"),
    ("property p { predictive_parity_ratio(logged, groups sex) >= 1.5 }", "FS507", "ratio"),
    ("property p {\n forall x, x' : P\n require x.* == x'.* except {sex}\n ensure label(logged(x)) == label(logged(x'))\n}",
     "FS502", "logged predictions"),
])
def test_diagnostics(tmp_path, body, code, needle):
    res = lint(_write(tmp_path, _rows(20), body))
    hits = [d for d in res.diagnostics if d.code == code]
    assert hits and needle in hits[0].message + (hits[0].hint or ""), [(d.code, d.message) for d in res.diagnostics]


def test_new_metric_over_a_distribution_is_a_diagnostic(tmp_path):
    from conftest import FIXTURES

    spec = tmp_path / "d.fair"
    spec.write_text(f"""\
data people = csv("{FIXTURES / 'data' / 'people.csv'}", label = hired == "yes")
features People from people {{
  sex : {{F, M}} protected
  race : {{A, B, C}} protected
}}
model r = rule(sex == M)
property p {{ predictive_parity_ratio(r, groups sex, distribution = people) >= 0.8 }}
""")
    res = lint(spec)
    assert any(d.code == "FS502" and "measured on data rows" in d.message for d in res.diagnostics), res.diagnostics


def test_predictions_example_json():
    r = run_cli("check", EXAMPLES / "predictions" / "decisions.fair", "--format", "json")
    assert r.returncode == 1, r.stderr
    out = json.loads(r.stdout)
    props = {p["name"]: p for p in out["properties"]}
    assert props["precision_parity"]["status"] == "holds"
    for p in props.values():
        assert p["details"]["groups"] and all("rows" in g and "positives" in g for g in p["details"]["groups"])
    assert props["error_rates_to_overall"]["details"]["weight"] == "weight"


def test_weighted_and_calibration_stream_identically(monkeypatch):
    """The weighted (Poisson) bootstrap and the calibration bins are accumulated batch by batch:
    streaming the file gives the same values and intervals as holding it in memory."""
    from fairspec.runtime import columnar

    spec = EXAMPLES / "predictions" / "decisions.fair"
    monkeypatch.setattr(columnar, "BATCH_ROWS", 1500)
    mem = _verdicts(spec)
    monkeypatch.setattr(columnar, "STREAM_ROWS", 0)
    streamed = _verdicts(spec)
    assert any(x.get("streamed") for x in check(spec).loads)
    for name, v in mem.items():  # sums of float weights in another batch order differ in the last bits only
        s = streamed[name]
        assert v.status == s.status, name
        assert v.value == pytest.approx(s.value, rel=1e-12, abs=1e-15), name
        assert v.bound == pytest.approx(s.bound, rel=1e-12, abs=1e-15), name


def test_properties_sharing_a_pass_equal_their_own_runs(monkeypatch):
    """Weighted (Poisson) bootstraps, calibration bins and plain counts of several properties are
    taken from one pass of the data: each property's value, interval, verdict and group table are
    exactly those of a run of that property alone, streamed or in memory."""
    from fairspec.runtime import columnar

    spec = EXAMPLES / "predictions" / "decisions.fair"
    monkeypatch.setattr(columnar, "BATCH_ROWS", 1500)
    for stream in (False, True):
        if stream:
            monkeypatch.setattr(columnar, "STREAM_ROWS", 0)
        shared = _verdicts(spec)
        assert len(shared) > 2
        for name, v in shared.items():
            (alone,) = check(spec, only=name).verdicts
            assert (v.status, v.value, v.bound, v.reason) == (alone.status, alone.value, alone.bound, alone.reason)
            assert v.details.get("groups") == alone.details.get("groups"), name
