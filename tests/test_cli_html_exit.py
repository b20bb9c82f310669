"""``check --html FILE`` and the exit code the document states agree.

Under a machine format the HTML report is written before the document is printed: when the write
fails at the end (the folder removed during the run, a full disk, matplotlib missing), the document
carries the sentence as its error and exit code 2, the code the process exits with. The text report
states no exit code: its table is printed, the sentence goes to stderr and the process exits 2.
"""

from __future__ import annotations

import json
import shutil

import pytest

from test_cli import people_spec

BODY = "property p { statistical_parity(net, groups race) <= 0.99 }\n"


def _folder_vanishes_while_rendering(monkeypatch, folder):
    """The --html folder passes every check before the run, then is removed while the report renders."""
    from fairspec.report import html

    real = html.render

    def render(report):
        text = real(report)
        shutil.rmtree(folder)
        return text

    monkeypatch.setattr(html, "render", render)


def _run(tmp_path, monkeypatch, capsys, fmt):
    from fairspec import cli

    spec = people_spec(tmp_path, BODY)
    out = tmp_path / "out"
    out.mkdir()
    _folder_vanishes_while_rendering(monkeypatch, out)
    code = cli.main(["check", str(spec), "--format", fmt, "--workers", "1", "--html", str(out / "r.html")])
    got = capsys.readouterr()
    assert "Traceback" not in got.err and "internal error" not in got.err, got.err
    assert "cannot write the HTML report" in got.err and str(out) in got.err, got.err
    return code, got


def test_json_says_exit_code_2_and_the_error_when_the_html_write_fails(tmp_path, monkeypatch, capsys):
    code, got = _run(tmp_path, monkeypatch, capsys, "json")
    doc = json.loads(got.out)  # stdout holds the document and nothing else
    assert code == 2 and doc["exit_code"] == 2, (code, doc["exit_code"])
    assert "cannot write the HTML report" in doc["error"] and "r.html" in doc["error"], doc["error"]
    assert [p["name"] for p in doc["properties"]] == ["p"]  # the verdicts decided are still reported


@pytest.mark.parametrize("fmt", ["sarif", "github"])
def test_sarif_and_github_carry_the_html_write_error(tmp_path, monkeypatch, capsys, fmt):
    code, got = _run(tmp_path, monkeypatch, capsys, fmt)
    assert code == 2
    if fmt == "sarif":
        results = json.loads(got.out)["runs"][0]["results"]
        texts = [r["message"]["text"] for r in results if r["ruleId"] == "input"]
    else:
        texts = [ln for ln in got.out.splitlines() if "title=fairspec input::" in ln]
    assert len(texts) == 1 and "cannot write the HTML report" in texts[0] and "r.html" in texts[0], got.out


def test_text_prints_the_table_then_the_sentence_and_exits_2(tmp_path, monkeypatch, capsys):
    code, got = _run(tmp_path, monkeypatch, capsys, "text")
    assert code == 2 and "cannot write" not in got.out, got.out
    assert any(s in got.out for s in ("holds", "violated", "unknown")), got.out


def test_a_written_html_leaves_the_verdicts_exit_code(tmp_path, capsys):
    from fairspec import cli

    spec = people_spec(tmp_path, BODY)
    code = cli.main(["check", str(spec), "--format", "json", "--workers", "1", "--html", str(tmp_path / "r.html")])
    doc = json.loads(capsys.readouterr().out)
    assert code == doc["exit_code"] != 2 and "error" not in doc and (tmp_path / "r.html").is_file()


def test_models_json_says_exit_code_2_when_the_html_write_fails(tmp_path, monkeypatch, capsys):
    from fairspec import cli
    from test_cli import PEOPLE_ONNX

    spec = people_spec(tmp_path, BODY)
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(PEOPLE_ONNX, models / "a.onnx")
    out = tmp_path / "out"
    out.mkdir()
    from fairspec.report import html  # write_models renders with render_models

    real = html.render_models

    def render_models(reports):
        text = real(reports)
        shutil.rmtree(out)
        return text

    monkeypatch.setattr(html, "render_models", render_models)
    code = cli.main(["check", str(spec), "--format", "json", "--workers", "1", "--models", f"net={models}",
                     "--html", str(out / "r.html")])
    doc = json.loads(capsys.readouterr().out)
    assert code == 2 and doc["exit_code"] == 2, (code, doc["exit_code"])
    assert all("cannot write the HTML report" in m["error"] for m in doc["models"]), doc["models"]


# ---------------------------------------------------------------- a bug while rendering

def _render_raises(monkeypatch, name="render"):
    """A bug in the HTML report: the renderer raises what no write error is."""
    from fairspec.report import html

    def render(*a, **kw):
        raise RuntimeError("boom in the renderer")

    monkeypatch.setattr(html, name, render)


def _run_bug(tmp_path, monkeypatch, capsys, fmt, *extra):
    from fairspec import cli

    spec = people_spec(tmp_path, BODY)
    monkeypatch.delenv("FAIRSPEC_DEBUG", raising=False)
    code = cli.main(["check", str(spec), "--format", fmt, "--workers", "1", *extra, "--html", str(tmp_path / "r.html")])
    got = capsys.readouterr()
    assert "Traceback" not in got.err, got.err
    assert "internal error: RuntimeError: boom in the renderer" in got.err and "FAIRSPEC_DEBUG=1" in got.err, got.err
    assert not (tmp_path / "r.html").exists()
    return code, got


def test_json_still_prints_the_document_with_the_internal_error_and_exit_code_4(tmp_path, monkeypatch, capsys):
    """Before: the exception left the document unprinted (stdout empty) and the process exited 4."""
    _render_raises(monkeypatch)
    code, got = _run_bug(tmp_path, monkeypatch, capsys, "json")
    doc = json.loads(got.out)  # stdout holds the document and nothing else
    assert code == 4 and doc["exit_code"] == 4, (code, doc["exit_code"])
    assert doc["internal_errors"] == ["HTML report: RuntimeError: boom in the renderer"], doc
    assert "error" not in doc
    assert [p["name"] for p in doc["properties"]] == ["p"]  # the verdicts decided are still reported


@pytest.mark.parametrize("fmt", ["sarif", "github"])
def test_sarif_and_github_carry_the_internal_error(tmp_path, monkeypatch, capsys, fmt):
    _render_raises(monkeypatch)
    code, got = _run_bug(tmp_path, monkeypatch, capsys, fmt)
    assert code == 4
    if fmt == "sarif":
        run = json.loads(got.out)["runs"][0]
        texts = [r["message"]["text"] for r in run["results"] if r["ruleId"] == "internal"]
        assert [r["id"] for r in run["tool"]["driver"]["rules"] if r["id"] == "internal"] == ["internal"]
    else:
        texts = [ln for ln in got.out.splitlines() if ln.startswith("::error ") and "title=fairspec internal::" in ln]
    assert len(texts) == 1 and "RuntimeError: boom in the renderer" in texts[0], got.out


def test_models_json_carries_the_internal_error_in_every_report(tmp_path, monkeypatch, capsys):
    from test_cli import PEOPLE_ONNX

    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(PEOPLE_ONNX, models / "a.onnx")
    shutil.copy(PEOPLE_ONNX, models / "b.onnx")
    _render_raises(monkeypatch, "render_models")
    code, got = _run_bug(tmp_path, monkeypatch, capsys, "json", "--models", f"net={models}")
    doc = json.loads(got.out)
    assert code == 4 and doc["exit_code"] == 4, (code, doc["exit_code"])
    assert [m["internal_errors"] for m in doc["models"]] == [["HTML report: RuntimeError: boom in the renderer"]] * 2


@pytest.mark.parametrize("fmt", ["sarif", "github"])
def test_models_sarif_and_github_carry_the_internal_error(tmp_path, monkeypatch, capsys, fmt):
    from test_cli import PEOPLE_ONNX

    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(PEOPLE_ONNX, models / "a.onnx")
    _render_raises(monkeypatch, "render_models")
    code, got = _run_bug(tmp_path, monkeypatch, capsys, fmt, "--models", f"net={models}")
    assert code == 4
    if fmt == "sarif":
        texts = [r["message"]["text"] for run in json.loads(got.out)["runs"] for r in run["results"]
                 if r["ruleId"] == "internal"]
    else:
        texts = [ln for ln in got.out.splitlines() if "title=fairspec internal::" in ln]
    assert len(texts) == 1 and "boom in the renderer" in texts[0], got.out


def test_text_prints_the_table_then_reports_the_internal_error(tmp_path, monkeypatch, capsys):
    """The text report states no exit code: the table is printed, then the command line's internal error."""
    _render_raises(monkeypatch)
    code, got = _run_bug(tmp_path, monkeypatch, capsys, "text")
    assert code == 4 and any(s in got.out for s in ("holds", "violated", "unknown")), got.out


def test_fairspec_debug_raises_the_renderers_bug(tmp_path, monkeypatch, capsys):
    from fairspec import cli

    spec = people_spec(tmp_path, BODY)
    _render_raises(monkeypatch)
    monkeypatch.setenv("FAIRSPEC_DEBUG", "1")
    with pytest.raises(RuntimeError, match="boom in the renderer"):
        cli.main(["check", str(spec), "--format", "json", "--workers", "1", "--html", str(tmp_path / "r.html")])
