"""A constant the user wrote, and a threshold, is printed as written (fairspec.syntax.literals.number):
``{:g}`` rounded to 6 significant digits, so 0.1234567 read 0.123457 -- another claim -- in chart
labels, error sentences and reasons. Measured values keep their deliberate precision."""

from __future__ import annotations

import pytest

C = 0.1234567


def test_chart_reference_lines_name_the_threshold_as_written():
    from types import SimpleNamespace

    from fairspec.report.svg_charts import _reference_lines

    labels = []
    for metric, compare in (("disparate_impact", None), ("statistical_parity", None),
                            ("statistical_parity", "to_overall")):
        v = SimpleNamespace(details={"threshold": C, "metric": metric, "compare": compare,
                                     "overall": {"rate": 0.5}})
        labels += [name for name, _ in _reference_lines(v, ["rate"], [{"rate": 0.5}, {"rate": 0.4}])]
    assert len(labels) == 4 and all("0.1234567" in s for s in labels), labels


def test_search_post_conditions_describe_their_tolerance_and_threshold_as_written():
    from fairspec.backends.search.post import Post

    assert "0.1234567" in Post.prob(C).describe()
    assert "0.1234567" in Post.logit(C).describe()
    assert "0.1234567" in Post.label(C).describe()


def test_a_time_budget_is_named_as_the_spec_wrote_it():
    from fairspec.backends.data.budget import OutOfTime
    from fairspec.planning.registry import _duration

    assert "0.1234567s" in OutOfTime(C, 10).reason()
    assert _duration(4444.4444444) == "4444.4444444s"       # {:g}: 4444.44s
    assert _duration(7200) == "2h" and _duration(90) == "90s"


def test_the_boolean_backend_names_a_compared_constant_as_written():
    from fairspec.analyses.distribution import DistributionError, Variable
    from fairspec.backends.boolean.compile import _resolve_threshold

    with pytest.raises(DistributionError, match="0.1234567"):
        _resolve_threshold(Variable("age", ("a", "b")), ">", C, False)


def test_a_probability_table_that_sums_past_1_says_by_how_much(tmp_path):
    """FS310 said 'sum to 1, not 1' for 0.6 + 0.4000015 ({:g} rounds the sum to 1)."""
    import fairspec

    spec = tmp_path / "d.fair"
    spec.write_text("features W {\n  P : bool protected\n  Q : bool\n}\nmodel clf = rule(P and Q)\n"
                    "distribution d {\n  p(Q | P) = 0.6\n  p(Q | not P) = 0.3\n  p(not Q | P) = 0.4000015\n}\n"
                    "property most { most_favoured(clf, groups P, distribution d) >= 0.5 }\n")
    (d,) = [d for d in fairspec.lint(spec) if d.code == "FS310"]
    assert "sum to 1.0000015, not 1" in d.message, d.message


def test_a_duplicate_number_after_in_is_named_as_written(tmp_path):
    import fairspec

    spec = tmp_path / "d.fair"
    spec.write_text('features F {\n  s : {a, b} protected\n  r : real in [0, 1]\n}\n'
                    'model m = rule(r > 0.5)\ngroup g = r in {0.1234567, 0.1234567}\n')
    msgs = [d.message for d in fairspec.lint(spec) if d.code == "FS304"]
    assert msgs and "'0.1234567' is listed twice" in msgs[0], msgs

