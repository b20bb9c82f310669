"""`--format text` on a narrow terminal (80 or 100 columns): the summary table hides no column and cuts
no value with an ellipsis (rich squeezed the kind and the backend to nothing and printed ``0.52…``);
a long verdict wraps at its spaces, and a console too narrow for the table gets one block per property."""

from __future__ import annotations

import io

import pytest

from fairspec import report as rep
from fairspec.diagnostics import cell_len
from fairspec.pipeline import Report
from fairspec.verdict import Verdict


class _Proved(Verdict):
    """A verdict whose label is as long as a certified proof's ("holds (proved: exhaustive count ...)")."""

    @property
    def label(self) -> str:
        return "holds (proved: exhaustive count of 400 rows)"


def _report(name: str = "most") -> Report:
    return Report("tests/fixtures/ok/pba_repair_dist.fair", [], verdicts=[
        _Proved(name, "group_metric", "holds", how="proved", value=0.5202, bound=(0.5202, 0.520212345),
                backend="exhaustive", seconds=0.16),
        Verdict("ind", "individual_fairness", "unknown", reason="time-out", backend="milp", seconds=12.5),
        Verdict("kd", "k_discrimination", "violated", value=3, backend="search", reason="k = 3")])


def _text(report: Report, width: int) -> str:
    buf = io.StringIO()
    rep.print_text(report, rep.console(file=buf, width=width, force_terminal=True, color_system=None))
    return buf.getvalue()


@pytest.mark.parametrize("width", [80, 100, 200])
@pytest.mark.parametrize("name", ["most", "pba_repair_distribution_property"])
def test_the_summary_hides_no_column_and_cuts_no_value(width, name):
    out = _text(_report(name), width)
    assert "…" not in out and "..." not in out, out
    assert all(cell_len(line) <= width for line in out.splitlines()), out
    words = out.split()
    for shown in (name, "group", "individual", "k-discr.", "0.5202", "[0.5202,", "0.5203]", "exhaustive", "milp",
                  "search", "0.16s", "12.50s", "holds", "(proved:", "exhaustive", "count", "rows)", "unknown",
                  "violated"):
        assert shown in words or f"{shown}:" in words, (shown, out)


def test_a_table_where_it_fits_one_block_per_property_where_not():
    wide, narrow = _text(_report("most"), 80), _text(_report("pba_repair_distribution_property"), 80)
    for header in ("property", "kind", "verdict", "value", "interval", "backend", "time"):
        assert header in wide, wide  # every header shown, none squeezed to nothing
    assert "pba_repair_distribution_property: holds (proved: exhaustive count of 400 rows)" in narrow, narrow
    assert "k-discr. · value 3 · search · 0.00s" in narrow, narrow
