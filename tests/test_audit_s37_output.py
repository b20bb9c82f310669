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


def _excluded_report(tmp_path, below: float, rows: int, n: int):
    share = rows / n
    groups = [{"group": "g=a", "rows": n - rows, "positives": 1, "positive_rate": 1 / (n - rows), "counted": True},
              {"group": "g=b", "rows": rows, "positives": 1, "positive_rate": 1 / rows, "counted": False,
               "excluded": True}]
    v = Verdict("sp", "group_metric", "unknown", value=0.1, bound=(0.0, 0.3), reason="too few groups", backend="data",
                details={"metric": "statistical_parity", "rows": n, "groups": groups, "rates": ["positive_rate"],
                         "groups_label": "g", "exclude_below": below,
                         "excluded_groups": [{"group": "g=b", "rows": rows, "share": share}]})
    return Report(str(tmp_path / "s.fair"), [], verdicts=[v])


def test_excluded_groups_print_the_option_and_the_shares_on_their_side(tmp_path):
    """exclude_below = 0.005 printed "under 0%" (``:.0%``), 0.025 "under 2%"; a group of 19,999 rows in 10^6
    left out under 0.02 printed "2.00%" -- in the text report and the HTML alike."""
    from fairspec.report import console, print_text
    from fairspec.report.html import render

    for below, rows, n, want in ((0.005, 3, 1000, "under 0.5% of the rows): g=b (3 rows, 0.30%)"),
                                 (0.025, 24, 1000, "under 2.5% of the rows): g=b (24 rows, 2.40%)"),
                                 (0.02, 19_999, 10 ** 6, "under 2% of the rows): g=b (19,999 rows, 1.9999%)")):
        rep = _excluded_report(tmp_path, below, rows, n)
        c = console(record=True, width=300)
        print_text(rep, c)
        assert f"excluded ({want}" in c.export_text(), c.export_text()
        assert f"Excluded ({want}" in render(rep)


def test_a_confidence_level_prints_as_the_spec_writes_it(tmp_path):
    """confidence = 0.995 printed "the whole 100% interval" (``:.0%``) in the reason every report quotes, and in
    the HTML's interval words; 0.975 printed "98%"."""
    from fairspec.pipeline import check
    from fairspec.report.html import render
    from fairspec.syntax.literals import percent

    assert (percent(0.995), percent(0.975), percent(0.95), percent(0.9999)) == ("99.5%", "97.5%", "95%", "99.99%")
    rows = "".join(f"{g},{a}\n" for g in (0, 1) for a in range(6) for _ in range(20))
    (tmp_path / "d.csv").write_text("g,a\n" + rows, encoding="utf-8")
    (tmp_path / "s.fair").write_text("""data tab = csv("d.csv")
features P from tab {
  g : bool protected
  a : int in [0, 5]
}
model m = rule(a >= 3 and g)
property sp {
  statistical_parity(m, groups g) <= 0.1
  confidence = 0.995
  bootstrap = 50
}
""", encoding="utf-8")
    rep = check(tmp_path / "s.fair")
    v = rep.verdicts[0]
    assert v.status == "violated" and "99.5% interval" in v.reason and "100%" not in v.reason, v.reason
    page = render(rep)
    assert "99.5% Clopper-Pearson" in page or "99.5% bootstrap" in page
    assert "100% " not in page


def test_hover_shows_categories_and_column_values_as_one_code_span(tmp_path):
    """A category (or a data value) holding a backtick closed the hover's single-backtick code span: ``"`[x](u)`"``
    was drawn as a live Markdown link and ``"a`b, c"`` read as two categories. Each is now one span, with a fence
    longer than its backticks, the categories quoted as the spec writes them."""
    import re

    from fairspec.lsp import analysis as A

    (tmp_path / "v.csv").write_text('g,x\n"a`b, c",1\n"`[x](http://e)`",2\n', encoding="utf-8")
    text = ('data tab = csv("v.csv", columns = [g, x])\nfeatures P from tab {\n'
            '  g : {"a`b, c", "`[x](http://e)`"} protected\n  x : int in [0, 3]\n}\n')
    path = tmp_path / "u.fair"
    path.write_text(text, encoding="utf-8")

    def hover(needle, offset=0):
        idx = A.analyse(path, {str(path.resolve()): text})
        at = text.index(needle) + offset
        return A.hover(idx, idx.path, text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at))

    h = hover("g :")
    assert '``{"a`b, c", "`[x](http://e)`"}``' in h, h
    col = hover("[g, x]", 1)
    assert col is not None and "`` `[x](http://e)` ``" in col and "``a`b, c``" in col, col
    for md in (h, col):  # no Markdown link outside a code span
        assert not re.search(r"\]\(http", re.sub(r"(`+)(?:(?!\1).)*?\1", "", md)), md


def test_hover_shows_a_file_path_with_a_backtick_as_one_code_span(tmp_path):
    from fairspec.lsp import analysis as A

    (tmp_path / "a`b.csv").write_text("g,x\n1,2\n", encoding="utf-8")
    text = 'data tab = csv("a`b.csv")\n'
    path = tmp_path / "u.fair"
    path.write_text(text, encoding="utf-8")
    idx = A.analyse(path, {str(path.resolve()): text})
    for needle, offset in (("tab", 0), ('"a`b', 2)):
        at = text.index(needle) + offset
        h = A.hover(idx, idx.path, 1, at + 1)
        assert h and "``" in h and "a`b.csv``" in h, h


def _pba_verdict():
    import numpy as np

    from fairspec.backends.pba.aggregate import aggregate

    rng = np.random.default_rng(0)
    n = 40
    grp = rng.integers(0, 2, n)
    agg = aggregate(["sex=F", "sex=<M>"], row_group=grp, row_label=rng.random(n) < 0.5,
                    row_pred=rng.integers(0, 2, n), case_row=np.arange(n), case_group_x=grp, case_group_p=1 - grp,
                    case_class=rng.integers(0, 2, n), case_eligible=np.ones(n, bool), case_same=rng.random(n) < 0.8,
                    obs_status=rng.choice(["proved", "refuted", "unknown"], n),
                    flip_status=rng.choice(["proved", "refuted", "unknown"], n)).to_json()
    return Verdict("bias", "pba", "unknown", reason="some points undecided", backend="milp",
                   details={"table": {"sex": agg, "race": agg}})


def test_pba_with_several_flips_prints_each_table_in_text_and_html(tmp_path):
    """A PBA property flipping several features keeps one table per flip ({flip: table}, kinds/pba): the text
    report printed "(pba table not shown: 'rows')", and the HTML had only the charts, none of the table's numbers."""
    from fairspec.report import console, print_text
    from fairspec.report.html import render

    rep = Report(str(tmp_path / "s.fair"), [], verdicts=[_pba_verdict()])
    c = console(record=True, width=200)
    print_text(rep, c)
    text = c.export_text()
    assert "not shown" not in text and "PBA fairness (flip sex)" in text and "PBA fairness (flip race)" in text, text
    page = render(rep)
    assert page.count("<table class=pba>") == 2 and "<h3>PBA fairness (flip race)</h3>" in page
    assert "<td>sex=&lt;M&gt;</td>" in page and "<th>RB flip</th>" in page


def test_an_unknown_group_metric_names_its_lowest_and_highest_groups_in_every_format(tmp_path):
    """The text report adds "(lowest A ...; highest B ...)" to an unknown group metric whose reason does not name
    them; SARIF and the HTML left it out. The SARIF fingerprint (the text before the first ';') is unchanged."""
    from fairspec.report import console, print_text
    from fairspec.report.ci import _fingerprint, _verdict_message
    from fairspec.report.html import render

    groups = [{"group": "g=<a>", "rows": 50, "positives": 20, "positive_rate": 0.4, "counted": True},
              {"group": "g=b", "rows": 50, "positives": 25, "positive_rate": 0.5, "counted": True}]
    v = Verdict("sp", "group_metric", "unknown", value=0.1, bound=(0.0, 0.3), backend="data",
                reason="the threshold 0.1 lies inside the 95% confidence interval [0.0000, 0.3000]",
                details={"metric": "statistical_parity", "groups": groups, "rates": ["positive_rate"],
                         "worst_pair": {"low": "g=<a>", "low_rate": 0.4, "high": "g=b", "high_rate": 0.5}},
                thresholds=(0.1,))
    rep = Report(str(tmp_path / "s.fair"), [], verdicts=[v])
    c = console(record=True, width=300)
    print_text(rep, c)
    pair = "lowest g=<a> 0.4000; highest g=b 0.5000"
    assert f"({pair})" in c.export_text(), c.export_text()
    msg = _verdict_message(v)
    assert msg.endswith(pair), msg
    assert _fingerprint("unknown", None, msg) == _fingerprint("unknown", None, msg.split(";")[0])
    assert "(lowest g=&lt;a&gt; 0.4000; highest g=b 0.5000)</p>" in render(rep)
