"""Acknowledging a warning: ``# fairspec: ignore[FS427]`` on the warning's line or the line above, and
``--ignore FS427`` on lint and check. FS427 (a scikit-learn model fitted on an array, fed in declared
order) could not be acknowledged at all, so a CI treating warnings as errors had to refit the model.

Warnings only: an ignore naming an error code, an unknown code or no code is warning FS215 at it, and
the error stays. A suppressed warning is counted (``"suppressed": N`` in JSON, a line in text) and kept
in SARIF with a ``suppressions`` entry (``inSource`` / ``external``), never silently dropped. Honoured by
lint, check (also check's own FS427 for a pickle, which lint cannot read), SARIF and the editor server."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from fairspec.pipeline import lint

pytest.importorskip("sklearn")
pytest.importorskip("skops")

from test_declared_order import _project  # noqa: E402 - after the skips: it needs scikit-learn

ENCODE = "encode P for lr"


def _spec(tmp_path, before: str = "", after: str = "", suffix: str = ".skops", frame: bool = False):
    """The FS427 project of test_declared_order (a model fitted on an array; ``frame``: on a data frame,
    so no FS427), with ``before`` written on the line above the encode block and ``after`` at the end of
    its line."""
    tmp_path.mkdir(exist_ok=True)
    spec = _project(tmp_path, frame=frame, suffix=suffix)
    text = spec.read_text()
    i = text.index(ENCODE)
    j = text.index("\n", i)
    spec.write_text(text[:i] + (before + "\n" if before else "") + text[i:j] + after + text[j:])
    return spec


def test_the_parser_finds_ignore_comments():
    from fairspec.syntax.parser import parse_text

    m = parse_text('# fairspec: ignore[FS427, FS421]\nmodel m = onnx("a#fairspec: ignore[FS9].onnx")  '
                   '#fairspec:ignore[FS410]\n# fairspec: ignore\n# an ordinary comment\n', "f.fair")
    got = [(ig.line, [(c, s.line, s.column) for c, s in ig.codes]) for ig in m.ignores]
    # alone on its line: the next line; at the end of a line: that line; a string's '#' is no comment
    assert got == [(2, [("FS427", 1, 20), ("FS421", 1, 27)]), (2, [("FS410", 2, 66)]), (4, [])]


@pytest.mark.parametrize("where", ["above", "trailing"])
def test_a_comment_suppresses_its_warning_and_counts_it(tmp_path, where):
    spec = _spec(tmp_path, **({"before": "# fairspec: ignore[FS427]"} if where == "above"
                              else {"after": "  # fairspec: ignore[FS427]"}))
    res = lint(spec)
    assert res.diagnostics == [] and [(d.code, kind) for d, kind in res.suppressed] == [("FS427", "inSource")]
    assert res.spec.ignored and res.spec.ignores("FS427", res.suppressed[0][0].span)


def test_a_comment_elsewhere_or_for_another_code_suppresses_nothing(tmp_path):
    spec = _spec(tmp_path, before="# fairspec: ignore[FS427]\n# and something else")  # two lines above
    assert [d.code for d in lint(spec).diagnostics] == ["FS216", "FS427"]  # the comment is FS216 (below)
    spec = _spec(tmp_path / "b", after="  # fairspec: ignore[FS421]")
    assert [d.code for d in lint(spec).diagnostics] == ["FS427", "FS216"]


def test_errors_are_never_suppressed_and_bad_codes_are_fs215(tmp_path):
    spec = _spec(tmp_path, before="# fairspec: ignore[FS427, FS402, FS999]")
    text = spec.read_text().replace("sex : code", "sex : code  rase : raw")  # FS205 on the encode line
    spec.write_text(text.replace("# fairspec: ignore[FS427, FS402, FS999]",
                                 "# fairspec: ignore[FS427, FS205, FS999]"))
    ds = lint(spec).diagnostics
    got = {(d.code, d.severity) for d in ds}
    assert ("FS205", "error") in got, ds
    fs215 = sorted(d.message for d in ds if d.code == "FS215")
    assert fs215 == ["'FS999' is not a fairspec diagnostic code, so nothing is ignored by it",
                     "FS205 is an error, which cannot be ignored: only warnings can"]
    (err,) = [d for d in ds if "FS205 is an error" in d.message]
    assert err.severity == "warning" and "errors are never suppressible" in err.hint
    assert (err.span.line, err.span.column) == (8, 27)  # at the code in the comment
    spec = _spec(tmp_path / "b", after="  # fairspec: ignore")
    (d,) = [d for d in lint(spec).diagnostics if d.code == "FS215"]
    assert d.message == "this ignore comment names no code, so it ignores nothing"


def test_the_ignore_flag_on_lint(tmp_path):
    spec = _spec(tmp_path)
    r = run_cli("lint", spec, "--ignore", "FS427", "--format", "json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"diagnostics": [], "suppressed": 1}
    r = run_cli("lint", spec, "--ignore", "fs427,FS402", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "warning[FS215]: --ignore FS402: FS402 is an error, which cannot be ignored" in r.stdout
    assert "FS427" not in r.stdout and r.stderr.strip().endswith("0 errors, 1 warning, 1 suppressed")
    sarif = json.loads(run_cli("lint", spec, "--ignore", "FS427", "--format", "sarif", cwd=tmp_path).stdout)
    (res,) = sarif["runs"][0]["results"]
    assert res["ruleId"] == "FS427" and res["suppressions"][0]["kind"] == "external"
    r = run_cli("lint", spec, "--format", "github", "--ignore", "FS427", cwd=tmp_path)
    assert r.returncode == 0 and "FS427" not in r.stdout


def test_check_honours_comments_and_the_flag_and_counts(tmp_path):
    from fairspec.pipeline import check
    from fairspec.report import ci

    spec = _spec(tmp_path, before="# fairspec: ignore[FS427]")
    rep = check(spec)
    doc = rep.to_json()
    assert doc["diagnostics"] == [] and doc["suppressed"] == 1 and rep.verdicts
    sarif = json.loads(ci.to_sarif(rep.diagnostics, rep.verdicts, rep.property_spans, spec=rep.spec,
                                   suppressed=rep.suppressed))
    (res,) = [x for x in sarif["runs"][0]["results"] if x["ruleId"] == "FS427"]
    assert res["suppressions"] == [{"kind": "inSource",
                                    "justification": "a '# fairspec: ignore[...]' comment in the spec"}]
    assert res["locations"][0]["physicalLocation"]["region"]["startLine"] == 9
    plain = _spec(tmp_path / "b")
    r = run_cli("check", plain, "--ignore", "FS427", "--format", "json", cwd=plain.parent)
    doc = json.loads(r.stdout)
    assert doc["diagnostics"] == [] and doc["suppressed"] == 1, r.stdout + r.stderr


def test_check_suppresses_its_own_fs427_for_a_pickle(tmp_path):
    """Lint reads no pickle's input names: check says FS427 as a report warning once the model is
    loaded. The comment at the encode block acknowledges that one too."""
    from fairspec.pipeline import check

    said = check(_spec(tmp_path, suffix=".pkl"))
    assert [d.code for d in said.diagnostics] == ["FS427"] and "suppressed" not in said.to_json()
    quiet = check(_spec(tmp_path / "b", suffix=".pkl", after="  # fairspec: ignore[FS427]"))
    assert not quiet.diagnostics and not quiet.warnings
    assert quiet.to_json()["suppressed"] == 1 and [(d.code, how) for d, how in quiet.suppressed] == [("FS427", "inSource")]
    loud = check(_spec(tmp_path / "c", suffix=".pkl"), ignore=["FS427"])
    assert [(d.code, how) for d, how in loud.suppressed] == [("FS427", "external")]


def test_the_editor_server_honours_the_comment(tmp_path):
    """The language server lints an open buffer (parsed declaration by declaration): the comment in
    the buffer acknowledges the warning there too."""
    from fairspec.lsp.analysis import index as A

    spec = _spec(tmp_path)
    text = spec.read_text()
    assert [d.code for d in A.analyse(spec, {str(spec): text}).result.diagnostics] == ["FS427"]
    buffer = text.replace(ENCODE, "# fairspec: ignore[FS427]\n" + ENCODE)
    assert A.analyse(spec, {str(spec): buffer}).result.diagnostics == []


def test_the_python_api_takes_ignore(tmp_path):
    import fairspec

    spec = _spec(tmp_path)
    assert [d.code for d in fairspec.lint(spec)] == ["FS427"]
    assert fairspec.lint(spec, ignore=["FS427"]) == [] and fairspec.lint(spec, ignore="FS427") == []
    rep = fairspec.check(spec, ignore=("FS427",))
    assert rep.diagnostics == [] and rep.to_dict()["suppressed"] == 1
    with pytest.raises(fairspec.FairspecError, match="ignore is a warning code or a list of them"):
        fairspec.lint(spec, ignore=427)


def test_a_comment_that_suppresses_nothing_is_fs216(tmp_path):
    """As ruff's RUF100 / mypy's warn_unused_ignores: an ignore comment left after its warning was fixed
    (here the model refitted on a data frame: no FS427) or on the wrong line is a warning at its code."""
    spec = _spec(tmp_path, frame=True, after="  # fairspec: ignore[FS427]")
    (d,) = lint(spec).diagnostics
    assert (d.code, d.severity) == ("FS216", "warning")
    assert d.message == "this ignore comment suppresses nothing: there is no FS427 warning on this line"
    assert d.hint.startswith("remove it") and (d.span.line, d.span.column) == (8, 76), d.span  # at the code
    spec = _spec(tmp_path / "b", before="# fairspec: ignore[FS421, FS427]")  # FS427 used, FS421 idle
    res = lint(spec)
    assert [(d.code, d.span.line, d.span.column) for d in res.diagnostics] == [("FS216", 8, 20)]
    assert "no FS421 warning on line 9, the line below it" in res.diagnostics[0].message
    assert [d.code for d, _ in res.suppressed] == ["FS427"]
    # acknowledged like any warning: --ignore FS216, or ignore[FS216] acting on the comment's line
    assert lint(spec, ignore=["FS216"]).diagnostics == []
    quiet = _spec(tmp_path / "c", frame=True, after="  # fairspec: ignore[FS427, FS216]")
    assert lint(quiet).diagnostics == [] and [d.code for d, _ in lint(quiet).suppressed] == ["FS216"]
    r = run_cli("lint", spec, "--format", "json", cwd=spec.parent)
    assert [d["code"] for d in json.loads(r.stdout)["diagnostics"]] == ["FS216"] and r.returncode == 0


def test_an_unused_ignore_flag_and_a_spec_with_errors_say_nothing(tmp_path):
    spec = _spec(tmp_path, frame=True)
    assert lint(spec, ignore=["FS427", "FS211"]).diagnostics == []  # --ignore of a code that did not occur
    # with an error some checks did not run, so a comment may yet have had its warning: no FS216
    bad = _spec(tmp_path / "b", frame=True, after="  # fairspec: ignore[FS427]")
    bad.write_text(bad.read_text().replace("sex : code", "sex : code  rase : raw"))
    assert [d.code for d in lint(bad).diagnostics if d.code.startswith("FS21")] == []


def test_check_judges_a_comment_at_a_pickles_encode_block(tmp_path):
    """Lint reads no pickle's input names, so it cannot know whether check will say FS427: it leaves
    the comment alone, and check, having loaded the model, says FS216 when the model has its names."""
    from fairspec.pipeline import check

    named = _spec(tmp_path, suffix=".pkl", frame=True, after="  # fairspec: ignore[FS427]")
    assert lint(named).diagnostics == []
    rep = check(named)
    assert [(d.code, d.span.line) for d in rep.diagnostics] == [("FS216", 8)] and rep.verdicts
    assert rep.exit_code in (0, 1, 3)
    assert check(named, ignore=["FS216"]).diagnostics == []
    used = check(_spec(tmp_path / "b", suffix=".pkl", after="  # fairspec: ignore[FS427]"))
    assert used.diagnostics == [] and used.to_json()["suppressed"] == 1


def test_the_html_report_shows_the_suppressed_warnings(tmp_path):
    """The text report and JSON count the suppressed warnings; the HTML report did not say them at all."""
    import re

    from fairspec.pipeline import check
    from fairspec.report.html import render

    spec = _spec(tmp_path, before="# fairspec: ignore[FS427]")
    out = tmp_path / "report.html"
    r = run_cli("check", spec, "--html", out, cwd=tmp_path)
    assert r.returncode in (0, 1, 3), r.stdout + r.stderr
    html = out.read_text()
    (section,) = re.findall(r"<section id=suppressed>.*?</section>", html, re.S)
    assert "<summary>1 warning suppressed (# fairspec: ignore[...] comments, --ignore)</summary>" in section
    assert "<li><code>FS427</code> model &#x27;lr&#x27; records no input names" in section  # escaped
    assert section.endswith(f"({spec}:9): ignore comment</li></ul></details></section>")
    pickle = check(_spec(tmp_path / "b", suffix=".pkl", after="  # fairspec: ignore[FS427]"), ignore=["FS211"])
    page = render(pickle)
    assert "<summary>1 warning suppressed" in page and "<code>FS427</code> model" in page
    assert "id=suppressed" not in render(check(_spec(tmp_path / "c")))  # nothing suppressed: no section


def test_sarif_with_and_without_suppressions_is_valid_sarif_2_1_0(tmp_path, capsys):
    """The SARIF fairspec writes, with and without ``suppressions``, validates against the SARIF 2.1.0
    schema (the copy vendored in tests/data, as tests/test_ci_formats.py; none is installed in
    site-packages): lint and check, an ignore comment (``inSource``) and ``--ignore`` (``external``).
    A suppression has the spec's required ``kind`` and no ``status``, which the spec defaults to
    ``accepted`` (the result is suppressed: GitHub code scanning shows it dismissed, not open); a
    result not suppressed has no ``suppressions``. The schema does check suppressions here: a log
    with a pre-2.1.0 kind or an unknown status is refused.

    The commands run in this process (``fairspec.cli.main``: the same parsing of --ignore and the same
    SARIF writing as the console script, without a new interpreter each, about 5 s for check); SARIF
    from a ``fairspec lint --ignore`` subprocess is read in test_the_ignore_flag_on_lint."""
    import copy

    import jsonschema

    from fairspec.cli import main
    from fairspec.pipeline import check
    from fairspec.report import ci
    from test_ci_formats import SCHEMA, valid_sarif

    def fs427(log):
        (res,) = [r for run in log["runs"] for r in run["results"] if r["ruleId"] == "FS427"]
        return res

    plain = _spec(tmp_path / "plain")
    commented = _spec(tmp_path / "comment", before="# fairspec: ignore[FS427]")
    logs = {}
    for name, spec, extra in [("lint", plain, ()), ("lint comment", commented, ()),
                              ("lint --ignore", plain, ("--ignore", "FS427")),
                              ("check comment", commented, ()), ("check --ignore", plain, ("--ignore", "FS427"))]:
        code = main([name.split()[0], str(spec), "--format", "sarif", *extra])
        out = capsys.readouterr()
        assert code in (0, 1, 3) and "Traceback" not in out.err, (name, out.out, out.err)
        logs[name] = valid_sarif(out.out)
    rep = check(commented)
    logs["check --models"] = valid_sarif(ci.to_sarif_models([(str(commented.parent / "lr.skops"), rep)]))

    assert "suppressions" not in fs427(logs["lint"]) and fs427(logs["lint"])["level"] == "warning"
    want = {"lint comment": "inSource", "check comment": "inSource", "check --models": "inSource",
            "lint --ignore": "external", "check --ignore": "external"}
    for name, kind in want.items():
        (sup,) = fs427(logs[name])["suppressions"]
        assert sup["kind"] == kind and sup.get("status", "accepted") == "accepted", (name, sup)
        assert sup["justification"].strip(), name
        # every other result is not suppressed
        others = [r for run in logs[name]["runs"] for r in run["results"] if r["ruleId"] != "FS427"]
        assert not [r for r in others if "suppressions" in r], name

    validate = jsonschema.validators.validator_for(SCHEMA)(SCHEMA).validate
    for bad in ({"kind": "suppressedInSource"}, {"kind": "inSource", "status": "dismissed"}, {"status": "accepted"}):
        log = copy.deepcopy(logs["lint comment"])
        fs427(log)["suppressions"] = [bad]
        with pytest.raises(jsonschema.ValidationError):
            validate(log)
