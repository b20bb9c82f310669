"""Every finding is located in the user's own file (issue 26): an applied policy's property at the
`apply` line, named with its policy, in SARIF, GitHub annotations and JSON; never a location inside
the installed package."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _run(*args) -> subprocess.CompletedProcess:
    return run_cli(*args, cwd=ROOT, timeout=900)


def _uris(log: dict) -> list[str]:
    out = []
    for run in log["runs"]:
        for r in run["results"]:
            for loc in r.get("locations", []) + r.get("relatedLocations", []):
                out.append(loc["physicalLocation"]["artifactLocation"]["uri"])
    return out


def test_lint_of_every_example_locates_findings_in_the_repository(monkeypatch, capsys):
    # the command line's main in this process, from the repository's root as a user runs it (one
    # subprocess per example spent its time starting Python: 14 of them)
    from fairspec.cli import main

    monkeypatch.chdir(ROOT)
    for spec in sorted(EXAMPLES.rglob("*.fair")):
        code = main(["lint", str(spec.relative_to(ROOT)), "--format", "sarif"])
        out, err = capsys.readouterr()
        assert code in (0, 1, 2), err
        for uri in _uris(json.loads(out)):
            assert not uri.startswith("file:") and not uri.startswith("/"), (spec, uri)


def test_applied_policy_findings_at_the_apply_line():
    spec = EXAMPLES / "adult" / "adult.fair"
    lines = spec.read_text().splitlines()
    apply_line = next(i for i, l in enumerate(lines, 1) if l.startswith("apply four_fifths(lr"))
    r = _run("check", spec.relative_to(ROOT), "--format", "sarif", "--property", "lr_sex_race.disparate_impact")
    log = json.loads(r.stdout)
    (res,) = [x for x in log["runs"][0]["results"] if x["ruleId"] in ("violated", "unknown")]
    loc = res["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "examples/adult/adult.fair"
    assert loc["region"]["startLine"] == apply_line
    assert "policy 'four_fifths', property 'disparate_impact', applied here" in res["message"]["text"]
    assert all(not u.startswith(("file:", "/")) for u in _uris(log))

    r = _run("check", spec.relative_to(ROOT), "--format", "github", "--property", "lr_sex_race.disparate_impact")
    (line,) = [x for x in r.stdout.splitlines() if "lr_sex_race" in x]
    assert f"file=examples/adult/adult.fair,line={apply_line}," in line

    r = _run("check", spec.relative_to(ROOT), "--format", "json", "--property", "lr_sex_race.disparate_impact")
    (p,) = json.loads(r.stdout)["properties"]
    assert p["location"] == {"file": "examples/adult/adult.fair", "line": apply_line, "column": 1}
    assert p["policy"]["name"] == "four_fifths" and p["policy"]["property"] == "disparate_impact"
