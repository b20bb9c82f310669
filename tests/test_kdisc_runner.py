"""k-discrimination from the spec: search, replayed witness, explanation as a guardrail fragment."""

from pathlib import Path

from fairspec.pipeline import check, lint

AC1 = Path(__file__).resolve().parent.parent / "examples/fairify/ac1.fair"


def test_kdisc_on_ac1_replays_and_explains(tmp_path):
    spec = tmp_path / "kd.fair"
    spec.write_text(f'''import "{AC1.as_posix()}"
property clusters {{
  k_discrimination(ac1, over {{race, sex}}, eps = 0.05) < 3
  search annealing for 5s
  explain tree
}}
''')
    rep = check(spec)
    (v,) = rep.verdicts
    assert v.status == "violated" and v.value >= 3
    assert v.details["K"] == 10
    w = v.witness
    changed = {k for k in w.features if w.features[k] != w.features_prime[k]}
    assert changed <= {"race", "sex"} and changed
    assert abs(w.outputs[0] - w.outputs[1]) > 0  # replayed scores of the two extreme counterfactuals
    # the explanation is a usable guardrail: paste it into an individual-fairness property
    guard = v.details.get("guardrail", "")
    guarded = tmp_path / "guarded.fair"
    guarded.write_text(f'''import "{AC1.as_posix()}"
property guarded {{
  forall x, x' : Adult
  require x.* == x'.* except {{race, sex}}
  {guard}
  ensure |prob(ac1(x)) - prob(ac1(x'))| <= 0.05
}}
''')
    res = lint(guarded)
    assert not [d for d in res.diagnostics if d.is_error], [d.message for d in res.diagnostics]


def test_kdisc_claim_that_survives_search_is_proved_by_certify_not_by_the_search(tmp_path):
    """The search never says holds: AC-1 over {sex} stays below 0.99 everywhere, which certify's branch
    and bound over the network's individuals proves (fairspec.certify.kdisc_net); over age's bands (a value
    the search picks in each) nothing proves it, and the search's claim stays unknown."""
    spec = tmp_path / "kd.fair"
    spec.write_text(f'''import "{AC1.as_posix()}"
property loose {{
  k_discrimination(ac1, over {{sex}}, eps = 0.99) < 2
  search random for 1s
}}
property banded {{
  k_discrimination(ac1, over {{age, sex}}, eps = 0.99) < 2
  search random for 1s
}}
''')
    v = {x.name: x for x in check(spec).verdicts}
    assert v["loose"].status == "holds" and v["loose"].how == "proved", v["loose"].reason
    assert v["loose"].proof.method == "bab-certificate" and v["loose"].details["engine"] == "kdisc-bab"
    assert v["banded"].status == "unknown" and "cannot prove" in v["banded"].reason


def test_kdisc_with_age_bands_has_K_20(tmp_path):
    """HyFair's K = 20 on AC-1: age is declared with bins [39] in ac1.fair, so each counterfactual
    takes an age in [10, 39] or [40, 100] (a value the search picks), times race x sex."""
    spec = tmp_path / "kd.fair"
    spec.write_text(f'''import "{AC1.as_posix()}"
property k20 {{
  k_discrimination(ac1, over {{age, race, sex}}, eps = 0.05) < 8
  search annealing for 5s
}}
''')
    (v,) = check(spec).verdicts
    assert v.details["K"] == 20
    assert v.status == "violated" and v.value >= 8
    ages = [c["features"]["age"] for c in v.details["counterfactuals"]]
    assert len(ages) == 20 and len(set(ages)) == 2
    assert sorted(set(ages))[0] <= 39 < sorted(set(ages))[1]
    assert all(10 <= a <= 100 and float(a).is_integer() for a in ages)


def test_numeric_feature_without_bins_is_refused_with_a_hint(tmp_path):
    spec = tmp_path / "kd.fair"
    spec.write_text(f'''import "{AC1.as_posix()}"
property k {{
  k_discrimination(ac1, over {{hours_per_week, sex}}, eps = 0.05) < 3
}}
''')
    (d,) = [d for d in lint(spec).diagnostics if d.is_error]
    assert d.code == "FS308" and "bins" in d.hint
