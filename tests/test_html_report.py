"""`fairspec check --html`: one self-contained file, every property with its section and picture,
opened in a real headless browser (Debian's chromium) with no console error."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from conftest import EXAMPLES, run_cli

pytest.importorskip("matplotlib")

from fairspec.pipeline import Report  # noqa: E402
from fairspec.report.html import ReportWriteError, render, write  # noqa: E402
from fairspec.verdict import Verdict, Witness  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SECTION = re.compile(r"<section class=property id='p(\d+)' data-property='([^']*)'>(.*?)</section>", re.S)


def _browser(html_file: Path, *extra: str) -> subprocess.CompletedProcess:
    """Load the file in headless chromium with logging on; stdout is the DOM (--dump-dom) or nothing."""
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
             "--enable-logging=stderr", "--v=0", *extra, html_file.as_uri()],
            capture_output=True, text=True, timeout=300)


def _console_errors(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ":CONSOLE" in ln]


def _sections(text: str) -> dict[str, str]:
    return {m.group(2): m.group(3) for m in SECTION.finditer(text)}


def _dom_sections(dom: str) -> list[str]:
    """The properties whose section the browser built (its DOM quotes attributes its own way)."""
    return re.findall(r"""<section[^>]*class=["']property["'][^>]*data-property=["']([^"']*)["']""", dom)


def _no_network(text: str) -> None:
    """Nothing is fetched at view time: no script, no stylesheet, image or font from elsewhere."""
    assert "<script" not in text
    for m in re.finditer(r"""(?:src|href)\s*=\s*["']?([^"' >]+)""", text):
        assert m.group(1).startswith(("#", "data:")), m.group(0)
    assert not re.search(r"url\((?!#)", text) and "@import" not in text  # url(#id): a reference inside an SVG


def _synthetic_report(tmp_path) -> Report:
    """One verdict of every kind the report draws, with the details its backend produces."""
    from fairspec.backends.pba.aggregate import aggregate

    rng = np.random.default_rng(0)
    n = 60
    grp = rng.integers(0, 2, n)
    agg = aggregate(["sex=F", "sex=M"], row_group=grp, row_label=rng.random(n) < 0.5,
                    row_pred=rng.integers(0, 2, n), case_row=np.arange(n), case_group_x=grp, case_group_p=1 - grp,
                    case_class=rng.integers(0, 2, n), case_eligible=np.ones(n, bool), case_same=rng.random(n) < 0.8,
                    obs_status=rng.choice(["proved", "refuted", "unknown"], n),
                    flip_status=rng.choice(["proved", "refuted", "unknown"], n))
    groups = [{"group": "sex=F", "rows": 40, "positives": 10, "positive_rate": 0.25,
               "positive_rate_interval": [0.12, 0.4], "counted": True},
              {"group": "sex=M", "rows": 60, "positives": 30, "positive_rate": 0.5,
               "positive_rate_interval": [0.38, 0.62], "counted": True},
              {"group": "sex=X", "rows": 2, "positives": 1, "positive_rate": 0.5, "counted": False, "excluded": True}]
    rel = [{"bin": [i / 4, (i + 1) / 4], "weight": 10.0, "mean_score": i / 4 + 0.1, "positive_share": i / 4 + 0.05}
           for i in range(4)]
    verdicts = [
        Verdict("di", "group_metric", "violated", value=0.5, bound=(0.3, 0.7), reason="too low", backend="data",
                details={"metric": "disparate_impact", "groups": groups, "rates": ["positive_rate"],
                         "overall": {"rows": 102, "positives": 41, "positive_rate": 0.4}, "groups_label": "sex",
                         "excluded_groups": [{"group": "sex=X", "rows": 2, "share": 0.0196}],
                         "exclude_below": 0.02, "confidence": 0.95}),
        Verdict("cal", "group_metric", "holds", how="estimated", value=0.01, bound=(0.0, 0.02), backend="data",
                details={"metric": "calibration_gap", "rates": ["ece"], "groups_label": "sex",
                         "groups": [{"group": "sex=F", "rows": 40, "positives": 10, "ece": 0.03, "reliability": rel,
                                     "counted": True},
                                    {"group": "sex=M", "rows": 60, "positives": 30, "ece": 0.02, "reliability": rel,
                                     "counted": True}]}),
        Verdict("dist", "group_metric", "holds", how="proved", value=0.9, backend="ssat",
                details={"groups": [{"group": "sex=F", "ppv": 0.4}, {"group": "sex=M", "ppv": 0.44}]}),
        Verdict("infl", "group_metric", "violated", value=0.2, backend="dp", reason="influence too high",
                details={"influence_metric": "statistical_parity",
                         "influence": [{"subset": ["age"], "fif": 0.2}, {"subset": ["edu", "job"], "fif": -0.05}]}),
        Verdict("pba", "pba", "unknown", reason="some points undecided", backend="milp",
                details={"table": agg.to_json()}),
        Verdict("kd", "k_discrimination", "violated", value=3, backend="search", reason="k = 3 found",
                details={"explanation": "age <= 30\n  sex == F -> 3 clusters", "guardrail": "require x.age > 30"}),
        Verdict("ind", "individual_fairness", "violated", backend="milp", reason="a pair",
                witness=Witness((0.0, 1.0), (1.0, 1.0), {"sex": "F", "age": 30}, {"sex": "M", "age": 30},
                                (0.4, -0.2), "onnx")),
        Verdict("rep", "repair", "holds", how="proved", backend="smt",
                details={"c": 0.8, "pairs_before": [{"groups": ["sex=F", "sex=M"], "ratio": 0.6}],
                         "pairs_after": [{"groups": ["sex=F", "sex=M"], "ratio": 0.85}]}),
        Verdict("timeout", "individual_fairness", "unknown", reason="time-out after 60 s", backend="milp"),
    ]
    rep = Report(str(tmp_path / "spec.fair"), [], verdicts=verdicts)
    rep.claims = {"di": (">=", 0.8), "cal": ("<=", 0.05), "infl": ("<=", 0.1), "rep": (">=", 0.8)}
    return rep


def test_every_kind_has_its_section_and_picture(tmp_path):
    rep = _synthetic_report(tmp_path)
    text = render(rep)
    _no_network(text)
    sections = _sections(text)
    assert list(sections) == [v.name for v in rep.verdicts]
    for name in ("di", "cal", "dist", "infl", "pba", "rep"):
        assert "<svg" in sections[name], name
    assert "<figcaption>" in sections["di"] and "0.8 x highest" in sections["di"]  # the threshold is drawn
    assert "Excluded (under 2% of the rows)" in sections["di"]
    assert "Explanation tree" in sections["kd"] and "Guardrail" in sections["kd"]
    assert "class=differs" in sections["ind"] and "1 feature differ" in sections["ind"]
    assert "time-out after 60 s" in sections["timeout"]
    assert "@media print" in text


def test_write_is_atomic_and_keeps_the_inputs(tmp_path):
    rep = _synthetic_report(tmp_path)
    data = tmp_path / "data.csv"
    data.write_text("a\n1\n")
    with pytest.raises(ReportWriteError, match="is a file the spec reads"):
        write(rep, data, keep=(str(data),))
    assert data.read_text() == "a\n1\n"
    with pytest.raises(ReportWriteError, match="does not exist"):
        write(rep, tmp_path / "missing" / "r.html")
    out = write(rep, tmp_path / "r.html")
    assert out.read_text().startswith("<!doctype html>")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".fairspec-")]


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")
def test_chromium_sees_console_errors(tmp_path):
    """The browser check can fail: a page with a script error is caught."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!doctype html><html><head><link rel='icon' href='data:,'></head><body>"
                   "<script>console.error('boom'); notDefined();</script></body></html>")
    r = _browser(bad, "--dump-dom")
    assert len(_console_errors(r.stderr)) == 2, r.stderr


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")
def test_synthetic_report_renders_in_chromium(tmp_path):
    out = write(_synthetic_report(tmp_path), tmp_path / "report.html")
    r = _browser(out, "--dump-dom")
    assert r.returncode == 0, r.stderr[-2000:]
    assert not _console_errors(r.stderr), _console_errors(r.stderr)
    assert _dom_sections(r.stdout) == [v.name for v in _synthetic_report(tmp_path).verdicts]


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")
def test_adult_example_html_report(tmp_path):
    """The Adult example's report: every property has its section with its picture (a chart, or the
    witness pair), it renders in chromium with no console error, and a screenshot is not blank."""
    out = tmp_path / "adult.html"
    r = run_cli("check", EXAMPLES / "adult" / "adult.fair", "--html", out, "--format", "json", timeout=900)
    assert r.returncode == 1, r.stderr
    text = out.read_text()
    _no_network(text)
    sections = _sections(text)
    names = [p["name"] for p in json.loads(r.stdout)["properties"]]  # stdout stays the JSON document
    assert names and list(sections) == names, (list(sections), names)
    for name, body in sections.items():
        assert "<svg" in body or "class=witness" in body, name
    png = tmp_path / "shot.png"      # one browser run: the DOM on stdout and the screenshot (one start, ~1 CPU s)
    shown = _browser(out, "--dump-dom", f"--screenshot={png}", "--window-size=1200,3000", "--hide-scrollbars")
    assert shown.returncode == 0 and not _console_errors(shown.stderr), _console_errors(shown.stderr)
    assert _dom_sections(shown.stdout) == names
    from PIL import Image

    pixels = np.asarray(Image.open(png).convert("L"))
    assert (pixels < 200).mean() > 0.02  # text, tables and charts drawn, not an empty page


def test_html_refuses_to_overwrite_the_spec(tmp_path):
    spec = tmp_path / "s.fair"
    spec.write_text('data d = csv("nothing.csv")\n')
    before = spec.read_text()
    r = run_cli("check", spec, "--html", spec)
    assert r.returncode == 2 and "is a file the spec reads" in r.stderr and "Traceback" not in r.stderr
    assert spec.read_text() == before


def test_pba_repair_and_distribution_pictures_end_to_end(tmp_path):
    """The other kinds from a real run: PBA's shares with its replayed witness, repair's ratios before
    and after, group metrics over distributions (a picture where a value exists, the reason where not)."""
    from conftest import FIXTURES

    shutil.copytree(FIXTURES, tmp_path / "fx")
    spec = tmp_path / "fx" / "ok" / "pba_repair_dist.fair"
    text = spec.read_text().replace('  write "dt_fair.skops"\n', "").replace("points = 400", "points = 60")
    spec.write_text(text)
    (tmp_path / "fx" / "fairspec.toml").write_text("")
    out = tmp_path / "r.html"
    r = run_cli("check", spec, "--html", out, "--format", "json", timeout=900)
    assert r.returncode in (1, 3), r.stderr
    props = {p["name"]: p for p in json.loads(r.stdout)["properties"]}
    sections = _sections(out.read_text())
    assert list(sections) == list(props)
    for name, p in props.items():
        if p["kind"] == "pba" and p["details"].get("table"):
            assert "<svg" in sections[name] and ("class=witness" in sections[name]) == bool(p["witness"]), name
        if p["kind"] == "repair" and p["details"].get("pairs_before"):
            assert "<svg" in sections[name], name
        if p["kind"] == "group_metric" and p["details"].get("groups"):
            assert "<svg" in sections[name], name


# categories a chart once read as mathtext ($...$: drawn in math italics, or the whole picture and its
# table lost to a ParseSyntaxException) or that the bidi algorithm reorders (RLO ... PDF: "live")
_HOSTILE_CATEGORIES = ["$25k-$50k", "$\\frac{$", "\u202eevil\u202c", "</script><b>x", "plain"]
_BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f"


def _hostile_project(tmp_path) -> Path:
    import csv

    (tmp_path / "fairspec.toml").write_text("")
    with open(tmp_path / "d.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["grp", "age", "y"])
        for i in range(500):
            w.writerow([_HOSTILE_CATEGORIES[i % 5], 20 if i % 5 in (0, 2) else 60, (i // 5) % 2])
    cats = ", ".join('"' + c.replace("\\", "\\\\") + '"' for c in _HOSTILE_CATEGORIES)
    spec = tmp_path / "spec.fair"
    spec.write_text(f"""data d = csv("d.csv", label = y == 1)
features F from d {{
  grp : {{{cats}}} protected
  age : int in [18, 80]
}}
model clf = rule(age >= 40)
property sp {{ statistical_parity(clf, groups grp) <= 0.1 }}
""", encoding="utf-8")
    return spec


def test_labels_are_drawn_as_written_and_bidi_controls_are_escaped(tmp_path):
    """A category with ``$`` is drawn as written (no mathtext: the chart and the per-group table both
    stand), and a bidi override in a category or a witness value is shown as an escape in the table,
    the chart and the witness, as the text report shows it; chromium shows the page with no error."""
    spec = _hostile_project(tmp_path)
    out = tmp_path / "r.html"
    r = run_cli("check", spec, "--html", out, cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    text = out.read_text(encoding="utf-8")
    section = _sections(text)["sp"]
    assert "(no picture" not in section and "<svg" in section and "Per group (grp)" in section
    svg = section[section.index("<svg"):section.index("</svg>")]
    table = section[section.index("Per group"):]
    for shown in ("grp=$25k-$50k", "grp=$\\frac{$", "grp=\\u202eevil\\u202c"):
        assert shown in svg, shown  # one text element, the label as written (mathtext splits it into glyphs)
        assert shown in table, shown
    assert not set(text) & set(_BIDI)
    # the witness of an individual-fairness verdict, a value holding an override
    rep = Report(str(tmp_path / "spec.fair"), [], verdicts=[
        Verdict("ind", "individual_fairness", "violated", backend="milp", reason="a pair \u202ereversed",
                witness=Witness((0.0,), (1.0,), {"s": "\u202eFM", "age": 30}, {"s": "MF\u2066", "age": 30},
                                (0.4, -0.2), "onnx"))])
    page = render(rep)
    assert "\\u202eFM" in _sections(page)["ind"] and "MF\\u2066" in page and "a pair \\u202ereversed" in page
    assert not set(page) & set(_BIDI)
    if CHROMIUM is not None:
        shown = _browser(out, "--dump-dom")
        assert shown.returncode == 0 and not _console_errors(shown.stderr), _console_errors(shown.stderr)
        assert _dom_sections(shown.stdout) == ["sp"]
        assert "grp=\\u202eevil\\u202c" in shown.stdout and not set(shown.stdout) & set(_BIDI)


def test_a_chart_that_fails_leaves_its_table(tmp_path, monkeypatch):
    from fairspec.report import svg_charts

    def broken(v, texts=None):
        raise RuntimeError("no chart today")

    monkeypatch.setattr(svg_charts, "rates_svg", broken)
    section = _sections(render(_synthetic_report(tmp_path)))["di"]
    assert "(no picture: RuntimeError: no chart today)" in section
    assert "Per group (sex)" in section and "<td>sex=F</td>" in section


def test_the_shares_legend_stays_inside_its_figure():
    """FairQuant's shares with an estimate: five legend entries, in rows of three inside the figure
    (in one row they ran past its right edge: "estimated fai")."""
    from fairspec.report import charts

    sh = {"certified_percent": 40.0, "falsified_percent": 10.0, "undecided_percent": 50.0, "measure": "volume",
          "estimate": {"estimated": True, "estimated_unfair_in_undecided": {"estimate_percent": 20.0},
                       "estimated_fair_in_undecided": {"estimate_percent": 30.0}}}
    for est in (sh["estimate"], None):
        with charts._context():
            fig = charts.shares_fig(sh, est)
            fig.draw_without_rendering()
            box, frame = fig.axes[0].get_legend().get_window_extent(), fig.bbox
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1, (box, frame)


def test_the_header_says_when_the_check_ran_not_only_when_the_page_was_rendered(tmp_path):
    """A page rendered later (``Result.to_html()``) showed only the render time, which an auditor reads as
    the check's: the header shows the check's time (the provenance's ``checked_at``) and the render time."""
    import datetime as dt

    from fairspec.report.html import render_models

    rep = Report(str(tmp_path / "spec.fair"), [], verdicts=[Verdict("a", "individual_fairness", "unknown",
                                                                   reason="time-out", backend="milp")])
    rep.started = dt.datetime(2026, 3, 1, 9, 30, 5, tzinfo=dt.timezone.utc)
    meta = re.search(r"<p class=meta>(.*?)</p>", render(rep)).group(1)
    assert meta.startswith("checked 2026-03-01 09:30 UTC &middot; rendered "), meta
    assert "checked 2026-03-01 09:30 UTC" in re.search(r"<p class=meta>(.*?)</p>",
                                                       render_models([("m.onnx", rep)])).group(1)
    rep.started = dt.datetime.now(dt.timezone.utc)  # rendered as it ran: one time
    assert "rendered" not in re.search(r"<p class=meta>(.*?)</p>", render(rep)).group(1) or \
        dt.datetime.now(dt.timezone.utc).minute != rep.started.minute
    rep.started = None
    assert re.search(r"<p class=meta>(.*?)</p>", render(rep)).group(1).startswith("rendered ")
