"""`fairspec check --models NAME=FOLDER` in every output format: text, JSON, SARIF (one run per
model file), GitHub annotations (the model file in each verdict) and one HTML page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairspec.cli import main

ROOT = Path(__file__).resolve().parent.parent
ADULT = ROOT / "examples" / "adult" / "adult.fair"
FILES = ("a_lr.skops", "b_dt.skops")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("candidates")
    for name in FILES:
        src = ROOT / "examples/adult/models" / ("lr.skops" if "lr" in name else "dt.skops")
        (d / name).write_bytes(src.read_bytes())
    return d


def _run(capsys, folder, *extra) -> tuple[int, str]:
    code = main(["check", str(ADULT), "--models", f"dt={folder}", "--property", "dt_parity_by_age", *extra])
    cap = capsys.readouterr()
    _run.err = cap.err
    return code, cap.out


@pytest.fixture(scope="module")
def as_json(folder):
    import io
    from contextlib import redirect_stdout

    buf = io.StringIO()
    with redirect_stdout(buf):
        code = main(["check", str(ADULT), "--models", f"dt={folder}", "--property", "dt_parity_by_age",
                     "--format", "json"])
    return code, json.loads(buf.getvalue())


def _statuses(as_json) -> dict:
    return {Path(m["model_file"]).name: m["properties"][0]["status"] for m in as_json[1]["models"]}


def test_sarif_has_one_run_per_model_file(capsys, folder, as_json):
    code, out = _run(capsys, folder, "--format", "sarif")
    log = json.loads(out)
    assert log["version"] == "2.1.0" and len(log["runs"]) == len(FILES)
    assert [Path(r["properties"]["model_file"]).name for r in log["runs"]] == list(FILES)
    ids = [r["automationDetails"]["id"] for r in log["runs"]]
    assert len(set(ids)) == len(FILES) and all(i.startswith("fairspec/models/") for i in ids)
    statuses = _statuses(as_json)
    for name, run in zip(FILES, log["runs"]):
        rules = [res["ruleId"] for res in run["results"]]
        want = [] if statuses[name] == "holds" else [statuses[name]]
        assert rules == want
        assert all("model file " in res["message"]["text"] and name in res["message"]["text"]
                   for res in run["results"])
    assert code == as_json[0]


def test_github_annotations_name_the_model_file(capsys, folder, as_json):
    code, out = _run(capsys, folder, "--format", "github")
    lines = [ln for ln in out.splitlines() if ln.startswith("::")]
    statuses = _statuses(as_json)
    assert len(lines) == sum(s != "holds" for s in statuses.values())
    for name, status in statuses.items():
        if status != "holds":
            (line,) = [ln for ln in lines if f"({name})" in ln]
            assert line.startswith("::error" if status == "violated" else "::warning")
            assert "adult.fair" in line and "model file" in line
    assert code == as_json[0]


def test_html_is_one_page_for_all_model_files(capsys, folder, tmp_path, as_json):
    page = tmp_path / "models.html"
    code, out = _run(capsys, folder, "--html", str(page))
    assert code == as_json[0]
    assert all("model file" in out and name in out for name in FILES)  # the text report still printed
    html = page.read_text()
    assert html.count("<html") == 1 and "over 2 model files" in html
    for k, name in enumerate(FILES):
        assert name in html and f"id='m{k}'" in html and f"id='m{k}p0'" in html and f"href='#m{k}p0'" in html


def test_html_refuses_to_overwrite_a_model_file(capsys, folder):
    code, _ = _run(capsys, folder, "--html", str(folder / FILES[0]))
    assert code == 2
    assert "is a file the spec reads" in _run.err


def test_a_link_in_the_folder_to_a_file_outside_is_refused_and_never_opened(capsys, tmp_path, monkeypatch):
    """As a declared model path leading out of the project is FS212 and never opened: that file's report
    is one FS212 naming it (no verdicts), the other files are checked, exit 2; the whole run stopped
    with one sentence before. The folder itself may lie anywhere (the user named it)."""
    monkeypatch.delenv("FAIRSPEC_ALLOW_PATH", raising=False)
    d = tmp_path / "cands"
    d.mkdir()
    (d / "a_dt.skops").write_bytes((ROOT / "examples/adult/models/dt.skops").read_bytes())
    secret = tmp_path / "elsewhere" / "secret.skops"
    secret.parent.mkdir()
    secret.write_text("TOP-SECRET")
    (d / "b_link.skops").symlink_to(secret)
    import fairspec.models as models

    opened = []
    real = models.load_model
    monkeypatch.setattr(models, "load_model", lambda fmt, path, *a, **k: opened.append(path) or real(fmt, path, *a, **k))
    import fairspec.models.peek_sklearn as peek

    peeked = []
    real_peek = peek.skops_unfitted
    monkeypatch.setattr(peek, "skops_unfitted", lambda path: peeked.append(Path(path).name) or real_peek(path))
    code, out = _run(capsys, d, "--format", "json")
    assert code == 2, _run.err
    by_file = {Path(m["model_file"]).name: m for m in json.loads(out)["models"]}
    assert list(by_file) == ["a_dt.skops", "b_link.skops"]
    assert by_file["a_dt.skops"]["properties"][0]["status"] in ("holds", "violated", "unknown")
    [diag] = by_file["b_link.skops"]["diagnostics"]
    assert diag["code"] == "FS212" and not by_file["b_link.skops"]["properties"]
    assert diag["message"].startswith(f"model file {d / 'b_link.skops'} is a symbolic link to a file outside the "
                                      f"project"), diag
    assert "TOP-SECRET" not in out + _run.err and [Path(p).name for p in opened] == ["a_dt.skops"]
    assert "b_link.skops" not in peeked and "secret.skops" not in peeked
    code, out = _run(capsys, d)  # the text report says it too, under that file's heading
    assert code == 2 and "b_link.skops is a symbolic link to a file outside the project" in out + _run.err
    opened.clear()
    (d / "b_link.skops").unlink()
    (d / "b_link.skops").symlink_to(d / "a_dt.skops")  # a link inside the folder is a model file like any other
    code, out = _run(capsys, d)
    assert code in (0, 1, 3) and out.count("model file") == 2, _run.err
    assert opened  # the spy sees the loads


def test_the_models_json_document_is_strict_json_written_once(capsys):
    """``--models --format json``: one document through report.dumps (a NaN or an infinity is null,
    a numpy number a number), not each report's text parsed back and written again."""
    import types

    import numpy as np

    from fairspec.cli import _emit_models

    class Rep:
        exit_code, inputs = 1, ()

        def to_json(self):
            return {"spec": "s.fair", "properties": [{"value": float("nan"), "bound": np.float32(0.5),
                                                      "ratio": float("inf")}]}

    code = _emit_models(types.SimpleNamespace(format="json", html=None), [("a.onnx", Rep()), ("b.onnx", Rep())])
    out = capsys.readouterr().out

    def refuse(token):
        raise AssertionError(f"{token} in strict JSON")

    doc = json.loads(out, parse_constant=refuse)
    assert code == 1 and doc["exit_code"] == 1
    assert [m["model_file"] for m in doc["models"]] == ["a.onnx", "b.onnx"]
    assert doc["models"][0]["properties"] == [{"value": None, "bound": 0.5, "ratio": None}]


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="no named pipes here")
def test_a_pipe_or_folder_named_as_a_model_file_is_said_never_skipped(capsys, tmp_path):
    """A FIFO (or a folder) named ``*.skops`` in the folder was left out in silence (only regular files were
    candidates): now it is a model file of the folder like any other, and its report is one FS401 sentence
    naming it; the pipe is never opened (that would block: the run is guarded), the other files are checked."""
    import os
    import threading

    d = tmp_path / "cands"
    d.mkdir()
    (d / "a_dt.skops").write_bytes((ROOT / "examples/adult/models/dt.skops").read_bytes())
    os.mkfifo(d / "b_pipe.skops")
    (d / "c_dir.skops").mkdir()
    out: dict = {}
    t = threading.Thread(target=lambda: out.setdefault("run", _run(capsys, d, "--format", "json")), daemon=True)
    t.start()
    t.join(300)
    assert not t.is_alive(), "the run blocked (the pipe was opened?)"
    code, text = out["run"]
    doc = json.loads(text)
    by_file = {Path(m["model_file"]).name: m for m in doc["models"]}
    assert list(by_file) == ["a_dt.skops", "b_pipe.skops", "c_dir.skops"], list(by_file)
    assert by_file["a_dt.skops"]["properties"][0]["status"] in ("holds", "violated", "unknown")
    pipe, folder = ([x["code"], x["message"]] for m in ("b_pipe.skops", "c_dir.skops")
                    for x in by_file[m]["diagnostics"])
    assert pipe == ["FS401", f"model file {d / 'b_pipe.skops'} is not a regular file (a device, pipe or socket)"]
    assert folder == ["FS401", f"model file {d / 'c_dir.skops'} is a folder"]
    assert code == 2 and not by_file["b_pipe.skops"]["properties"]
