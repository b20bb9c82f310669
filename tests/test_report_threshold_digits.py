"""A printed value never contradicts its verdict: a value, an interval's end, prints with the digits
that keep it on its side of each threshold of the claim (equal only when it is equal), and an
interval's ends are rounded outward (literals.shown, through report.value_text / bound_texts), in the
text report, SARIF, GitHub annotations, the HTML report's text and the pytest plugin's message."""

from __future__ import annotations

import html
import io
import json
import re
from fractions import Fraction

import pytest

from fairspec.report import check_report, ci
from fairspec.report import html as html_report
from fairspec.report import print_text
from fairspec.syntax.literals import shown
from fairspec.verdict import Verdict


def _v(status, value, bound=None, threshold=0.8, **kw):
    return Verdict("p", "group_metric", status, how="estimated" if status == "holds" else None, value=value,
                   bound=bound, reason="r" if status != "holds" else None, backend="data",
                   thresholds=(threshold,), **kw)


def test_shown_keeps_a_value_on_its_side_of_the_threshold():
    assert shown(0.79996, (0.8,)) == "0.79996"          # violated >= 0.8: never "0.8"
    assert shown(0.049996, (0.05,)) == "0.049996"       # holds <= 0.05: never "0.05"
    assert shown(0.80004, (0.8,)) == "0.80004"
    assert shown(0.79996, ()) == "0.8"                  # no threshold near: 4 digits as before
    assert shown(0.4234, (0.8,)) == "0.4234"
    assert shown(0.79996, (0.8,), style="f") == "0.79996"
    # equal only when equal: the exact value 4/5 (rows counted) is on the threshold
    assert shown(0.8, (0.8,), exact="4/5") == "0.8"
    assert shown(0.7999999, (0.8,), exact=None) == "0.7999999"
    for x in (0.79996, 0.8000001, 0.049996, 0.0500004, 0.12345678, 1234.56789, 3e-7):
        for t in (0.8, 0.05, 0.1234568, 1234.568):
            p = Fraction(shown(x, (t,)))
            q, tt = Fraction(x), Fraction(repr(t))
            assert (p > tt) - (p < tt) == (q > tt) - (q < tt), (x, t)


def test_shown_rounds_an_interval_end_outward():
    assert shown(0.39961, (), end="low") == "0.3996" and shown(0.39961, (), end="high") == "0.3997"
    assert shown(0.44649, (), end="high") == "0.4465" and shown(0.44641, (), end="low") == "0.4464"
    assert shown(0.80004, (0.8,), end="low") == "0.80004"       # down, yet not onto the threshold (0.8000)
    assert shown(0.79996, (0.8,), end="high") == "0.79996"      # up, yet not onto it (0.8000)
    assert shown(0.5, (), end="low") == "0.5" and shown(2.0, (), end="high") == "2"
    for x in (0.123456, -0.123456, 98765.4321, 1.23456e-7, 0.79996, 0.1 + 0.2, 2 / 3):
        lo, hi = shown(x, (0.8,), end="low"), shown(x, (0.8,), end="high")
        # outward, or a text that reads back as the float itself (0.79996 is that float, not 19999/25000)
        assert float(lo) == x or Fraction(lo) <= Fraction(x), (x, lo)
        assert float(hi) == x or Fraction(hi) >= Fraction(x), (x, hi)
        assert float(lo) <= x <= float(hi)


def _cases():
    # violated >= 0.8 at 0.79996, its interval straddling nothing but ending just below 0.8
    yield _v("violated", 0.79996, (0.7501, 0.79999), 0.8), ("0.79996", "0.7501", "0.79999"), ("0.8]", "value 0.8 ")
    # holds <= 0.05 at 0.049996, the interval's upper end just below 0.05
    yield _v("holds", 0.049996, (0.04, 0.0499999), 0.05), ("0.049996", "0.04", "0.0499999"), ("value 0.05", "0.05]")
    # unknown: the interval straddles 0.8, its ends just either side of it
    yield _v("unknown", 0.8000001, (0.79999, 0.80001), 0.8), ("0.8000001", "0.7999", "0.8001"), ("[0.8,", ", 0.8]")


@pytest.mark.parametrize("v,want,never", list(_cases()))
def test_every_printer_keeps_the_value_and_the_interval_on_their_side(v, want, never):
    report = check_report.Report("s.fair", [], verdicts=[v], claims={"p": (">=", v.thresholds[0])})
    from rich.console import Console

    out = io.StringIO()
    print_text(report, Console(file=out, width=200, color_system=None))
    sarif = json.loads(ci.to_sarif([], [v], {}, spec="s.fair"))["runs"][0]["results"]
    sarif_text = " ".join(r["message"]["text"] for r in sarif)
    github = ci.to_github([], [v], {}, spec="s.fair")
    page = html.unescape(re.sub(r"<[^>]+>", " ", html_report.render(report)))
    from fairspec.pytest_plugin import describe

    texts = {"text": out.getvalue(), "describe": describe(v), "html": page}
    if v.status != "holds":      # SARIF and annotations carry violated and unknown properties
        texts.update(sarif=sarif_text, github=github)
    for name, text in texts.items():
        for w in want:
            assert w in text, (name, w, text)
        if name != "html":   # the page also prints the claim's threshold itself
            for n in never:
                assert n not in text, (name, n, text)
    assert "claim ≥ 0.8" in page or "claim ≥ 0.05" in page or v.thresholds[0] == 0.05


def test_the_check_stamps_each_verdict_with_its_claims_thresholds():
    from fairspec import ir
    from fairspec.pipeline import claim_thresholds

    opts = ir.Options() if hasattr(ir, "Options") else None
    g = ir.GroupMetric(name="g", kind="group_metric", options=opts, threshold=0.8)
    assert claim_thresholds(g) == (0.8,)
    assert claim_thresholds(ir.IndividualFairness(name="f", kind="individual_fairness", options=opts,
                                                  post="prob", eps=0.05)) == (0.05,)
    assert claim_thresholds(ir.IndividualFairness(name="f", kind="individual_fairness", options=opts)) == ()


def test_a_reasons_interval_is_outward_and_on_its_side():
    from fairspec.syntax.literals import interval

    assert interval(0.79996, 0.90004, (0.8,)) == "[0.7999, 0.9001]"         # was [0.8000, 0.9000]
    assert interval(0.80004, 0.9, (0.8,)) == "[0.80004, 0.9000]"            # holds >= 0.8: never [0.8000, ...]
    assert interval(0.8, 0.9, (0.8,), exact="4/5") == "[0.8000, 0.9000]"    # exactly on it (rows counted)
    assert interval(0.04, 0.049996, (0.05,)) == "[0.0400, 0.049996]"
