"""The HTML report at many properties: a group metric's rate chart is written by hand (report/svg_charts),
never through matplotlib's layout and SVG backend (~0.2 s and ~22 KB a chart: 1,000 properties took minutes
and a 22 MB page, bench/results/html_report.md), and each bar's tooltip is the per-group table's own cell."""

from __future__ import annotations

import html
import re

import pytest

from fairspec.pipeline import Report
from fairspec.verdict import Verdict

pytest.importorskip("matplotlib")


def _verdicts(n: int) -> list[Verdict]:
    out = []
    for i in range(n):
        groups = [{"group": f"race=G{j}", "rows": 100 + j, "positives": 10 * j + i % 7,
                   "positive_rate": (10 * j + i % 7) / (100 + j),
                   "positive_rate_interval": [(10 * j) / (100 + j) * 0.8, min(1.0, (10 * j + 9) / (100 + j) * 1.2)],
                   "counted": True} for j in range(1, 5)]
        low, high = groups[0], groups[-1]
        out.append(Verdict(f"p{i}", "group_metric", "violated", value=high["positive_rate"] - low["positive_rate"],
                           bound=(0.1, 0.5), reason="too far apart", backend="data",
                           details={"metric": "statistical_parity", "groups": groups, "rates": ["positive_rate"],
                                    "groups_label": "race", "confidence": 0.95,
                                    "worst_pair": {"low": low["group"], "high": high["group"],
                                                   "low_rate": low["positive_rate"],
                                                   "high_rate": high["positive_rate"]}}))
    return out


def test_many_rate_charts_never_go_through_matplotlib(tmp_path, monkeypatch):
    from fairspec.report import charts
    from fairspec.report.html import render

    def costly(build):
        raise AssertionError("a rate chart went through matplotlib")

    monkeypatch.setattr(charts, "svg", costly)
    rep = Report(str(tmp_path / "spec.fair"), [], verdicts=_verdicts(40))
    rep.claims = {f"p{i}": ("<=", 0.1) for i in range(40)}
    page = render(rep)
    assert page.count("<svg") == 40 and "(no picture" not in page
    ids = re.findall(r'<pattern id="([^"]+)"', page)
    assert len(ids) == len(set(ids))  # every chart's hatches are its own
    assert len(page) < 40 * 8_000  # a few KB a chart (matplotlib's: ~22 KB)
    for svg in re.findall(r"<svg.*?</svg>", page, re.S):  # an unquoted value never swallows a '/' of '/>'
        assert not re.search(r'=[^"\s>]*/>', svg), svg


def test_each_bar_carries_the_tables_numbers(tmp_path):
    """Every group's bar has as its tooltip the number the per-group table prints for it (the failing pair's as
    the text report prints a worst pair), with its interval rounded outward."""
    from fairspec.report.html import render

    rep = Report(str(tmp_path / "spec.fair"), [], verdicts=_verdicts(3))
    rep.claims = {f"p{i}": ("<=", 0.1) for i in range(3)}
    page = render(rep)
    for sec in re.findall(r"<section class=property.*?</section>", page, re.S):
        svg = sec[sec.index("<svg"):sec.index("</svg>")]
        table = sec[sec.index("<table>"):]
        cells = re.findall(r"<tr(?: class=failing)?><td>(race=G\d)[^<]*(?:<span[^>]*>[^<]*</span>)?</td>"
                           r"<td class=num>[^<]*</td><td class=num>[^<]*</td>"
                           r"<td class=num>([^<]*) <span class=interval>([^<]*)</span></td>", table)
        assert len(cells) == 4, table
        tips = [html.unescape(t) for t in re.findall(r"<title>([^<]*)</title>", svg)]
        for group, rate, interval in cells:
            assert f"{group}: positive rate {rate.strip()} {interval}" in tips, (group, rate, tips)


def test_a_rate_or_bound_that_is_not_a_number_still_gets_its_chart(tmp_path):
    """A group's rate NaN, an overall rate NaN, an interval or bound with an open end: the chart is drawn
    (no '(no picture' note), with no 'nan' or 'inf' coordinate."""
    from fairspec.report.html import render

    nan, inf = float("nan"), float("inf")
    groups = [{"group": "a", "rows": 10, "positive_rate": nan, "positive_rate_interval": [0, inf], "counted": True},
              {"group": "b", "rows": 10, "positive_rate": 0.4, "counted": True}]
    rep = Report(str(tmp_path / "s.fair"), [], verdicts=[
        Verdict("p", "group_metric", "unknown", value=0.3, bound=(-inf, 0.2), backend="data", reason="r",
                details={"metric": "statistical_parity", "compare": "to_overall", "groups": groups,
                         "rates": ["positive_rate"], "overall": {"positive_rate": nan}})])
    rep.claims = {"p": ("<=", 0.1)}
    page = render(rep)
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert "(no picture" not in page
    assert not re.search(r"nan|inf", re.sub(r"<title>.*?</title>", "", svg).replace("url(", ""), re.I)
