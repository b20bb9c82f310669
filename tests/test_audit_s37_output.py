"""Session 37 audit of the reports (HTML, JSON, SARIF) and the language server: each test failed before its fix."""

from __future__ import annotations

from fractions import Fraction

from fairspec.backends.quantify import Shares
from fairspec.pipeline import Report
from fairspec.verdict import Verdict


def _shares_verdict(certified: Fraction, falsified: Fraction) -> Verdict:
    sh = Shares("integer points", 10 ** 7, certified, falsified, 1 - certified - falsified, counterexample_points=1)
    return Verdict("ind", "individual_fairness", "violated", backend="milp", reason="a pair",
                   details={"coverage": {"partitions": 4, "shares": {**sh.to_json(), "summary": sh.line()}}})


def test_html_share_percent_is_the_text_reports(tmp_path):
    """A certified share below 1 is never "100%" in the HTML (the text report says ">99.99%"), a falsified share
    of one point in 10^12 never "1e-10%"."""
    from fairspec.report.html import render

    v = _shares_verdict(Fraction(10 ** 7 - 1, 10 ** 7), Fraction(1, 10 ** 7))
    page = render(Report(str(tmp_path / "s.fair"), [], verdicts=[v]))
    assert "<td class=num>&gt;99.99%</td>" in page, page[page.find("<th>percent"):][:600]
    assert "<td class=num>100%</td>" not in page
    assert "certified &gt;99.99%" in page or ">99.99%" in v.details["coverage"]["shares"]["summary"]
    v = _shares_verdict(1 - Fraction(2, 10 ** 12), Fraction(1, 10 ** 12))
    page = render(Report(str(tmp_path / "s.fair"), [], verdicts=[v]))
    assert "<td class=num>1e-10%</td>" in page  # as fmt_percent writes it: two significant digits
