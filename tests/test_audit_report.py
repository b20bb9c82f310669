"""A report an auditor can file (issue 26 item 3): provenance (SHA-256 of the spec, its imports,
models and data; fairspec, Python and library versions; the time) in JSON and HTML, the claim
beside each value, group tables with intervals and the failing groups marked; the page opens in
a real browser."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli
from test_html_report import CHROMIUM, _browser, _console_errors

ROOT = Path(__file__).resolve().parents[1]
COMPAS = ROOT / "examples" / "compas"


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def compas_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("audit")
    r = run_cli("check", "examples/compas/compas.fair", "--format", "json", "--html", out / "report.html", cwd=ROOT,
                timeout=900)
    assert r.returncode == 1, r.stderr
    return json.loads(r.stdout), (out / "report.html").read_text(encoding="utf-8"), out / "report.html"


def test_json_provenance(compas_run):
    doc, _, _ = compas_run
    prov = doc["provenance"]
    files = {f["file"]: f for f in prov["files"]}
    spec, data = "examples/compas/compas.fair", "examples/compas/data/compas-scores-two-years.csv"
    assert files[spec]["role"] == "spec" and files[spec]["sha256"] == _sha(ROOT / spec)
    assert files[data]["role"] == "data" and files[data]["sha256"] == _sha(ROOT / data)
    assert files[data]["bytes"] == (ROOT / data).stat().st_size
    assert prov["fairspec"] and prov["python"] and "numpy" in prov["libraries"]
    assert prov["checked_at"].endswith("+00:00")


def test_each_verdict_records_the_options_its_backend_ran_with(compas_run):
    """Provenance per verdict: the backend and every option it takes with the value it ran with (the
    spec's, else the default), so the run can be replayed -- the bootstrap's seed and resamples were
    nowhere in the report (its interval depends on them)."""
    doc, page, _ = compas_run
    for p in doc["properties"]:
        assert p["backend"] == "data"
        assert p["options"] == {"bootstrap": 1000, "compare": "between_groups", "confidence": 0.95,
                                "exclude_below": 0.0, "min_group_size": 30, "seed": 0, "timeout": None,
                                "weight": None}, p["options"]
    assert page.count("<p class=options>options: bootstrap 1000 &middot;") == len(doc["properties"])
    assert "seed 0 &middot; timeout not set" in page


def test_options_name_the_spec_values_and_the_backend_defaults(tmp_path):
    from fairspec.pipeline import check

    (tmp_path / "s.fair").write_text("""features W {
  P : bool protected
  Q : bool
}
model clf = rule(P + Q >= 1)
distribution d {
  p(Q) = 0.4
}
property sp {
  statistical_parity(clf, groups P, distribution d) <= 0.7
  using ssat
  seed = 7
}
""", encoding="utf-8")
    rep = check(tmp_path / "s.fair")
    (p,) = rep.to_json()["properties"]
    assert p["backend"] == "ssat" and p["status"] == "holds"
    assert p["options"] == {"bootstrap": None, "confidence": 0.95, "method": "enumerate", "seed": 7,
                            "timeout": 60.0}


def test_html_shows_provenance_claims_intervals_and_failing_groups(compas_run):
    doc, page, _ = compas_run
    assert "id=provenance" in page and _sha(COMPAS / "data" / "compas-scores-two-years.csv") in page
    assert "<th>claim</th>" in page and "≥ 0.8" in page
    assert "claim ≥ 0.8" in page  # beside the value in the property's section
    assert page.count("class=failing") >= 2 and "fails the claim" in page
    assert "<span class=interval>[" in page


def test_imported_policies_are_in_the_provenance():
    r = run_cli("check", "examples/predictions/decisions.fair", "--format", "json", cwd=ROOT, timeout=900)
    prov = json.loads(r.stdout)["provenance"]
    roles = {f["role"] for f in prov["files"]}
    assert {"spec", "imported spec", "data"} <= roles


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")
def test_audit_report_in_chromium(compas_run):
    _, _, page = compas_run
    r = _browser(page, "--dump-dom")
    assert not _console_errors(r.stderr)
    assert "Provenance" in r.stdout and "SHA-256" in r.stdout and "fails the claim" in r.stdout


def test_nyc_ll144_table(tmp_path):
    """An applied nyc_ll144 policy gets the table a bias audit publishes: sex, race/ethnicity and
    their intersection, applicants, selected, rate and impact ratio, excluded categories counted."""
    import numpy as np

    cells = {("F", "A"): (400, 120), ("F", "B"): (300, 60), ("F", "C"): (10, 1),
             ("M", "A"): (500, 250), ("M", "B"): (280, 112), ("M", "C"): (10, 9)}
    lines = ["sex,race,selected,outcome"]
    for (sex, race), (n, k) in cells.items():
        lines += [f"{sex},{race},{int(i < k)},{i % 2}" for i in range(n)]
    (tmp_path / "log.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "audit.fair").write_text('''import "fairspec/policies/nyc_ll144.fair"
data log = csv("log.csv", label = outcome == 1)
features P from log {
  sex  : {F, M}  protected
  race : {A, B, C}  protected
}
model tool = predictions(log, decision = "selected")
apply nyc_ll144(tool, sex = sex, race = race)
''')
    r = run_cli("check", "audit.fair", "--html", "audit.html", cwd=tmp_path, timeout=600)
    assert r.returncode in (0, 1, 3), r.stderr
    page = (tmp_path / "audit.html").read_text(encoding="utf-8")
    assert "Bias audit: NYC Local Law 144" in page
    section = page[page.index("class=ll144"):]
    section = section[:section.index("</section>")]
    for title in ("Sex", "Race/ethnicity", "Intersectional"):
        assert f"<td>{title}</td>" in section
    assert "<td>sex=M</td><td class=num>790</td><td class=num>371</td>" in section  # 500 + 280 + 10, 250 + 112 + 9
    assert "excluded" in section and "race=C (20 applicants" in section  # 20 of 1,500 rows: under 2%


def test_kdisc_explanation_drawn_as_a_tree(tmp_path):
    from fairspec.pipeline import Report
    from fairspec.report.html import render
    from fairspec.verdict import Verdict

    paths = [{"conditions": ["x.age <= 30", "x.sex == F"], "mean_k": 3.1, "mean_k_negated": 1.2, "support": 210,
              "volume": 0.12},
             {"conditions": ["x.age <= 30", "x.hours > 40"], "mean_k": 2.7, "mean_k_negated": 1.3, "support": 90,
              "volume": 0.05}]
    v = Verdict("kd", "k_discrimination", "violated", value=3, backend="search", reason="k = 3 found",
                details={"explanation": "text", "guardrail": "require not (x.age <= 30)", "explanation_tree": paths})
    page = render(Report(str(tmp_path / "s.fair"), [], verdicts=[v]))
    tree = page[page.index("<div class=explanation>"):page.index("</div>", page.index("<div class=explanation>"))]
    assert tree.count("<code>x.age &lt;= 30</code>") == 1  # the shared first condition is one branch
    assert "<code>x.sex == F</code>" in tree and "<code>x.hours &gt; 40</code>" in tree
    assert tree.count("class=leaf") == 2 and "mean k 3.10 (vs 1.20 elsewhere)" in tree


def _timeless(x):
    """The document without its times (README, "A report to file"): checked_at and every key that names seconds."""
    if isinstance(x, dict):
        return {k: _timeless(v) for k, v in x.items() if k != "checked_at" and "seconds" not in k}
    if isinstance(x, list):
        return [_timeless(v) for v in x]
    return x


DETERMINISM = ["examples/compas/compas.fair", "examples/worked/fvgm_3_1.fair",
               "examples/worked/adult_distribution.fair"]


@pytest.fixture(scope="module")
def two_runs() -> list[dict[str, list[str]]]:
    """Two fresh processes (each its own hash seed), each checking every spec of DETERMINISM once: per
    run, spec -> [its JSON, its SARIF]. One process a run, not one a spec: the specs' checks are what is
    compared, each process's start and imports (~2 s CPU) were paid six times."""
    # the two processes run at the same time (each its own start, seed and state: nothing shared but the files read)
    procs = [subprocess.Popen([sys.executable, "-c", _BOTH, *DETERMINISM], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    runs = []
    try:
        for p in procs:
            out = p.communicate(timeout=900)[0].split("\0\n")
            assert len(out) == 2 * len(DETERMINISM) + 1, out
            runs.append({spec: out[2 * i:2 * i + 2] for i, spec in enumerate(DETERMINISM)})
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    return runs


@pytest.mark.parametrize("spec", DETERMINISM)
def test_two_runs_give_the_same_document_apart_from_the_times(two_runs, spec):
    """Determinism an auditor can rely on: JSON equal but for the documented time fields (bootstrap,
    sampled estimates and the distribution learnt from data are seeded), SARIF byte-identical. Two
    fresh processes, not run_cli's forked ones: those share the fork server's hash seed."""
    first, second = (r[spec] for r in two_runs)
    assert _timeless(json.loads(first[0])) == _timeless(json.loads(second[0]))
    assert first[1] == second[1] and json.loads(first[1])["runs"][0]["results"]


# One process checks each spec once and prints its report as `fairspec check --format json`, then as
# `--format sarif` does (the command line's own printer, fairspec.cli._emit_check), a NUL line after each:
# two such processes are the two runs compared (each its own hash seed), half the checks of four
# `fairspec check` runs a spec (adult_distribution's learnt network and 100 bootstrap networks: ~20 s a check)
_BOTH = """import argparse, sys
from fairspec import cli
from fairspec.pipeline import check
for spec in sys.argv[1:]:
    result = check(spec)
    for fmt in ("json", "sarif"):
        cli._emit_check(argparse.Namespace(format=fmt, html=None), result)
        print("\\0", flush=True)
"""


def test_the_invocation_is_in_the_provenance():
    """What the command line asked beside the spec (--property, --ignore, --allow-path) shapes the
    report: the provenance names it, so the run can be replayed (it was nowhere)."""
    r = run_cli("check", "examples/compas/compas.fair", "--format", "json", "--property", "precision_parity",
                "--ignore", "fs433,FS211", "--allow-path", "examples", cwd=ROOT, timeout=900)
    doc = json.loads(r.stdout)
    assert [p["name"] for p in doc["properties"]] == ["precision_parity"]
    assert doc["provenance"]["invocation"] == {"property": "precision_parity", "ignore": ["FS211", "FS433"],
                                               "allow_path": ["examples"]}
