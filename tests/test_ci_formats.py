"""`--format sarif` and `--format github` on lint and check, for CI.

SARIF logs are validated against the SARIF 2.1.0 JSON schema vendored in
tests/data/sarif-schema-2.1.0.json (from Microsoft's SARIF SDK, the
`@microsoft/sarif-multitool` npm package, version 5.7.0).
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from conftest import ERRORS, EXAMPLES, run_cli
from test_cli import no_traceback, people_spec

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))


def valid_sarif(text: str) -> dict:
    log = json.loads(text)
    jsonschema.validators.validator_for(SCHEMA)(SCHEMA).validate(log)
    assert log["version"] == "2.1.0"
    return log


def test_lint_sarif_errors_validate_against_the_schema():
    spec = ERRORS / "unknown_feature.fair"
    if not spec.exists():
        spec = sorted(ERRORS.glob("*.fair"))[0]
    r = run_cli("lint", spec, "--format", "sarif")
    no_traceback(r)
    assert r.returncode == 2
    log = valid_sarif(r.stdout)
    run = log["runs"][0]
    rules = {x["id"]: x for x in run["tool"]["driver"]["rules"]}
    assert run["results"], "an erroneous spec has results"
    for res in run["results"]:
        assert res["ruleId"] in rules and res["ruleId"].startswith("FS")
        assert rules[res["ruleId"]]["help"]["text"]
        assert res["level"] in ("error", "warning", "note")
    located = [res for res in run["results"] if res["locations"]]
    assert located
    loc = located[0]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"].endswith(".fair")
    assert loc["region"]["startLine"] >= 1 and loc["region"]["startColumn"] >= 1


@pytest.mark.parametrize("spec", sorted(ERRORS.glob("*.fair"))[:12], ids=lambda p: p.stem)
def test_lint_sarif_every_error_fixture_is_valid(spec):
    r = run_cli("lint", spec, "--format", "sarif")
    no_traceback(r)
    valid_sarif(r.stdout)


def test_lint_sarif_clean_spec_has_no_results():
    r = run_cli("lint", EXAMPLES / "fairify" / "ac1.fair", "--format", "sarif")
    assert r.returncode == 0, r.stderr
    assert valid_sarif(r.stdout)["runs"][0]["results"] == []


def test_check_sarif_violated_and_unknown_at_the_property(tmp_path):
    spec = people_spec(tmp_path, """\
property strict { statistical_parity(net, groups member) <= 0.0001 }
property tiny { statistical_parity(net, groups sex) <= 0.99
  min_group_size = 100000 }
""")
    r = run_cli("check", spec, "--format", "sarif", cwd=tmp_path)
    no_traceback(r)
    assert r.returncode == 1
    log = valid_sarif(r.stdout)
    results = log["runs"][0]["results"]
    by = {res["ruleId"]: res for res in results}
    assert set(by) == {"violated", "unknown"}
    lines = spec.read_text().splitlines()
    for rid, name in (("violated", "strict"), ("unknown", "tiny")):
        loc = by[rid]["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"] == "spec.fair"
        assert f"property {name}" in lines[loc["region"]["startLine"] - 1]
        assert f"'{name}'" in by[rid]["message"]["text"]
    assert "min_group_size" in by["unknown"]["message"]["text"]


def test_github_annotations_lint_and_check(tmp_path):
    spec = people_spec(tmp_path, """\
property strict { statistical_parity(net, groups member) <= 0.0001 }
property oops { statistical_parity(net, groups sx) <= 0.1 }
""")
    r = run_cli("lint", spec, "--format", "github", cwd=tmp_path)
    no_traceback(r)
    assert r.returncode == 2
    (line,) = [x for x in r.stdout.splitlines() if "FS205" in x]
    assert line.startswith("::error file=spec.fair,line=")
    assert "title=fairspec FS205::" in line
    assert "%0Ahint: " in line  # the hint on its own line, escaped as a workflow command requires
    spec.write_text(spec.read_text().replace("groups sx", "groups sex"))
    r = run_cli("check", spec, "--format", "github", cwd=tmp_path)
    no_traceback(r)
    assert r.returncode == 1
    out = r.stdout.splitlines()
    assert out and all(x.startswith("::") for x in out), r.stdout
    assert any(x.startswith("::error file=spec.fair,line=") and "'strict' is violated" in x for x in out)


def every_result_located(log: dict, cwd: Path) -> list[dict]:
    """Every result has a location with an artifact and a start line (GitHub code scanning refuses
    a log with a result that has none), and a region in an existing file stays inside its lines."""
    out = []
    for run in log["runs"]:
        for res in run["results"]:
            assert res["locations"], res
            for loc in res["locations"]:
                phys = loc["physicalLocation"]
                assert phys["artifactLocation"]["uri"] and phys["region"]["startLine"] >= 1, res
                f = cwd / phys["artifactLocation"]["uri"]
                if f.is_file():  # columns in UTF-16 code units (the run's columnKind)
                    lines = [len(x.encode("utf-16-le")) // 2 for x in f.read_text(encoding="utf-8").split("\n")]
                    reg = phys["region"]
                    assert run["columnKind"] == "utf16CodeUnits"
                    assert reg["startColumn"] <= lines[reg["startLine"] - 1] + 1, res
                    if "endLine" in reg:
                        assert reg["endColumn"] <= lines[reg["endLine"] - 1] + 1, res
            out.append(res)
    return out


@pytest.mark.parametrize("cmd", ["lint", "check"])
def test_sarif_missing_spec_is_located_at_the_path_given(cmd):
    r = run_cli(cmd, "examples/nosuch.fair", "--format", "sarif")
    no_traceback(r)
    assert r.returncode == 2
    (res,) = every_result_located(valid_sarif(r.stdout), EXAMPLES.parent)
    assert res["ruleId"] == "FS203"
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "examples/nosuch.fair"
    assert res["locations"][0]["physicalLocation"]["region"]["startLine"] == 1


def test_sarif_input_errors_have_a_location(tmp_path):
    spec = people_spec(tmp_path, "property p { statistical_parity(net, groups race) <= 0.2 }\n")
    r = run_cli("check", spec, "--format", "sarif", "--property", "nosuch", cwd=tmp_path)
    no_traceback(r)
    assert r.returncode == 2
    (res,) = every_result_located(valid_sarif(r.stdout), tmp_path)
    assert res["ruleId"] == "input"
    loc = res["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "spec.fair" and loc["region"]["startLine"] == 1
    # no row of the data fits the declared domains: at the data declaration the error names
    text = spec.read_text().replace("age    : int in [18, 80]", "age    : int in [90, 99]")
    spec.write_text(text)
    r = run_cli("check", spec, "--format", "sarif", cwd=tmp_path)
    no_traceback(r)
    assert r.returncode == 2
    (res,) = [x for x in every_result_located(valid_sarif(r.stdout), tmp_path) if x["ruleId"] == "input"]
    loc = res["locations"][0]["physicalLocation"]
    assert text.splitlines()[loc["region"]["startLine"] - 1].startswith("data people = csv(")


def test_sarif_models_folder_with_a_broken_model_is_located(tmp_path):
    import shutil

    from test_cli import PEOPLE_ONNX

    spec = people_spec(tmp_path, "property p { statistical_parity(net, groups race) <= 0.2 }\n")
    cands = tmp_path / "cands"
    cands.mkdir()
    shutil.copy(PEOPLE_ONNX, cands / "a.onnx")
    shutil.copy(PEOPLE_ONNX.parent / "garbage.onnx", cands / "b.onnx")
    r = run_cli("check", spec, "--format", "sarif", "--workers", "1", "--models", f"net={cands}", cwd=tmp_path)
    no_traceback(r)
    assert r.returncode == 2
    log = valid_sarif(r.stdout)
    results = every_result_located(log, tmp_path)
    # each file of the folder is linted in place of the declared one: the broken one is FS401, as a
    # declared broken file is, at the declaration it replaces, and names the file
    (bad,) = [x for x in results if x["ruleId"] not in ("holds", "violated", "unknown")]
    assert bad["ruleId"] == "FS401" and "b.onnx" in bad["message"]["text"], bad
    loc = bad["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "spec.fair"
    assert spec.read_text().splitlines()[loc["region"]["startLine"] - 1].startswith("model net = onnx(")


def test_sarif_region_at_end_of_file_stays_inside_its_line():
    r = run_cli("lint", "tests/fixtures/errors/syntax_unclosed_brace.fair", "--format", "sarif")
    no_traceback(r)
    (res,) = every_result_located(valid_sarif(r.stdout), EXAMPLES.parent)
    assert res["ruleId"] == "FS103"


def test_a_form_feed_in_a_comment_starts_no_line_for_the_snippet_or_the_sarif_region(tmp_path):
    """One cache of a spec's lines (fairspec.diagnostics.source_lines), numbered as the parser
    numbers them: the snippet shows line 2 itself, not the comment's tail after the form feed, and
    the SARIF region is kept inside it even once the file is gone (the text as parsed is used)."""
    from fairspec.diagnostics import render_full
    from fairspec.pipeline import lint
    from fairspec.report.ci import to_sarif

    spec = tmp_path / "ff.fair"
    spec.write_text("# a\x0c comment\ngroup g = = x\n", encoding="utf-8")
    res = lint(spec)
    (d,) = res.diagnostics
    assert (d.span.line, d.span.column) == (2, 11)
    assert " 2 | group g = = x" in render_full(d).splitlines(), render_full(d)
    spec.unlink()
    wide = type(d)(d.code, d.message, type(d.span)(d.span.file, 2, 11, 2, 99), d.severity, d.hint, d.related)
    (res_,) = json.loads(to_sarif([wide]))["runs"][0]["results"]
    assert res_["locations"][0]["physicalLocation"]["region"] == {"startLine": 2, "startColumn": 11, "endLine": 2,
                                                                  "endColumn": 14}


@pytest.mark.parametrize("good,bad", [("old.csv", "d.csv"), ("d.csv", "d.csv.old")])
def test_an_input_error_is_located_at_the_declaration_of_the_same_file(tmp_path, good, bad):
    """By the real path the error carries (DataError.path), never by one declared path's text found
    inside the message: /p/d.csv is inside '/p/d.csv.old' (the second case was placed at line 1)."""
    from fairspec.pipeline import check
    from fairspec.report.ci import to_github

    (tmp_path / "fairspec.toml").write_text("")
    rows = "age,sex,approved,outcome\n30,Female,yes,1\n50,Male,no,0\n"
    (tmp_path / good).write_text(rows)
    # found only when every row is read: past the 200 rows lint samples (which say FS404 at the feature)
    (tmp_path / bad).write_text(rows + "40,Male,yes,1\n" * 250 + "abc,Male,yes,1\n")
    spec = tmp_path / "s.fair"
    spec.write_text(f'data old = csv("{good}", label = outcome == 1)\ndata d = csv("{bad}", label = outcome == 1)\n'
                    'features A from d {\n  age : int in [17, 90]\n  sex : {Female, Male} protected\n}\n'
                    'model service = predictions(d, decision = "approved")\n'
                    'property p {\n  statistical_parity(service, groups sex) <= 0.15\n}\n')
    r = check(spec)
    assert r.error and f"{bad} column 'age'" in r.error, r.error
    assert (r.error_span.line, r.error_span.column) == (2, 1)
    assert "line=2," in to_github([], [], {}, error=r.error, error_span=r.error_span)


def test_a_github_annotation_without_a_span_is_at_line_1_of_the_spec(tmp_path):
    """As SARIF places it (ci._location): a spec that is not there (FS203), an input error no
    declaration names, a usage error after the spec was named; with no spec, no file."""
    from fairspec.report.ci import to_github

    r = run_cli("lint", "nosuch.fair", "--format", "github", cwd=tmp_path)
    assert r.stdout.startswith("::error file=nosuch.fair,line=1,title=fairspec FS203::"), r.stdout
    r = run_cli("check", "nosuch.fair", "--format", "github", "--workers", "0", cwd=tmp_path)
    assert r.stdout.startswith("::error file=nosuch.fair,line=1,title=fairspec input::"), r.stdout
    assert to_github([], error="bad usage", spec=None) == "::error title=fairspec input::bad usage"
    assert to_github([], error="x", spec=str(tmp_path / "s.fair")).startswith(f"::error file={tmp_path}/s.fair,line=1,")


def test_sarif_columns_are_utf16_code_units_after_an_emoji(tmp_path):
    """SARIF's default columnKind (utf16CodeUnits, which the run states and GitHub code scanning reads):
    an emoji before an error counts two units, so a consumer slicing the line in UTF-16 gets the token."""
    (tmp_path / "fairspec.toml").write_text("")
    spec = tmp_path / "emoji.fair"
    spec.write_text('features W {\n  P : bool protected\n  C : {"😀😀", "中文", "ab"} protected\n}\n'
                    'group g1 = C == "😀😀" or C == "abc"\n'
                    'group g2 = C == "中文" or C == "😀😀x"\n'
                    'property p { statistical_parity(rule(P), groups Cc) <= 0.1 }\n', encoding="utf-8")
    r = run_cli("lint", spec, "--format", "sarif", cwd=tmp_path)
    no_traceback(r)
    log = valid_sarif(r.stdout)
    (run,) = log["runs"]
    assert run["columnKind"] == "utf16CodeUnits"
    lines = spec.read_text(encoding="utf-8").split("\n")
    got = []
    for res in every_result_located(log, tmp_path):
        reg = res["locations"][0]["physicalLocation"]["region"]
        assert reg["endLine"] == reg["startLine"]
        units = lines[reg["startLine"] - 1].encode("utf-16-le")
        got.append(units[2 * (reg["startColumn"] - 1):2 * (reg["endColumn"] - 1)].decode("utf-16-le"))
    assert '"abc"' in got and '"😀😀x"' in got, got


def test_a_finding_shows_the_estimate_with_its_interval():
    """A violated or unknown estimate's SARIF / GitHub message gives its value and interval, as the text
    report's table does: the reason names the confidence level ("fails over the whole 95% interval"),
    not the interval's ends, so an auditor reading code scanning saw an estimate without its bound."""
    from fairspec.report.ci import _verdict_message
    from fairspec.verdict import Verdict

    v = Verdict("tv", "group_metric", "violated", value=0.22664, bound=(0.19071, 0.27162), backend="data",
                reason="class_distribution_distance <= 0.05 fails over the whole 95% interval")
    # the interval rounded outward: 0.27162 is below 0.2717, not 0.2716 (tests/test_report_threshold_digits.py)
    assert _verdict_message(v) == ("property 'tv' is violated; value 0.2266; interval [0.1907, 0.2717]; "
                                   "class_distribution_distance <= 0.05 fails over the whole 95% interval")
    u = Verdict("lv", "individual_fairness", "unknown", value=0.5, bound=(0.5, 0.75), backend="milp",
                reason="the time limit passed")
    assert _verdict_message(u) == "property 'lv' is unknown: the time limit passed; value 0.5; interval [0.5, 0.75]"


def test_ci_paths_are_relative_to_the_repository_root_from_a_sub_folder(tmp_path):
    """A check run from a sub-folder of the repository (a workflow's ``working-directory``) names
    its files from the repository's root, as code scanning and annotations read them (they were
    relative to the working directory: ``spec.fair``, a file code scanning could not place)."""
    import shutil

    from test_cli import PEOPLE_CSV, PEOPLE_ONNX

    (tmp_path / ".git").mkdir()
    sub = tmp_path / "fairness"
    sub.mkdir()
    shutil.copy(PEOPLE_CSV, sub / "people.csv")
    shutil.copy(PEOPLE_ONNX, sub / "people.onnx")
    people_spec(sub, "property strict { statistical_parity(net, groups member) <= 0.0001 }\n",
                csv="people.csv", onnx="people.onnx")
    r = run_cli("check", "spec.fair", "--format", "sarif", "--workers", "1", cwd=sub)
    no_traceback(r)
    assert r.returncode == 1, r.stdout[-2000:]
    (res,) = every_result_located(valid_sarif(r.stdout), tmp_path)
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "fairness/spec.fair"
    r = run_cli("check", "spec.fair", "--format", "github", "--workers", "1", cwd=sub)
    assert r.stdout.startswith("::error file=fairness/spec.fair,line="), r.stdout
    r = run_cli("check", "spec.fair", "--format", "json", "--workers", "1", cwd=sub)
    doc = json.loads(r.stdout)
    assert doc["properties"][0]["location"]["file"] == "fairness/spec.fair"
    files = {f["role"]: f["file"] for f in doc["provenance"]["files"]}  # the same base for the provenance
    assert files == {"spec": "fairness/spec.fair", "model": "fairness/people.onnx", "data": "fairness/people.csv"}


def test_sarif_names_the_evidence_with_its_hashes(tmp_path):
    """A check's SARIF run lists the files it read as artifacts with their SHA-256 and size, as the
    JSON provenance does (the log named only its results' files, with no way to tell which model or
    data it was computed from)."""
    import hashlib
    import shutil

    from test_cli import PEOPLE_CSV, PEOPLE_ONNX

    shutil.copy(PEOPLE_CSV, tmp_path / "people.csv")
    shutil.copy(PEOPLE_ONNX, tmp_path / "people.onnx")
    spec = people_spec(tmp_path, "property strict { statistical_parity(net, groups member) <= 0.0001 }\n",
                       csv="people.csv", onnx="people.onnx")
    r = run_cli("check", "spec.fair", "--format", "sarif", "--workers", "1", cwd=tmp_path)
    run = valid_sarif(r.stdout)["runs"][0]
    arts = {a["location"]["uri"]: a for a in run["artifacts"]}
    for name in ("spec.fair", "people.csv", "people.onnx"):
        data = (tmp_path / name).read_bytes()
        assert arts[name]["hashes"]["sha-256"] == hashlib.sha256(data).hexdigest()
        assert arts[name]["length"] == len(data) and arts[name]["roles"] == ["analysisTarget"]
    assert spec.exists()
    cands = tmp_path / "cands"
    cands.mkdir()
    shutil.copy(PEOPLE_ONNX, cands / "a.onnx")
    r = run_cli("check", "spec.fair", "--format", "sarif", "--workers", "1", "--models", f"net={cands}", cwd=tmp_path)
    (run,) = valid_sarif(r.stdout)["runs"]
    assert "cands/a.onnx" in {a["location"]["uri"] for a in run["artifacts"]}
