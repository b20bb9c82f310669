"""One lint run parses each ONNX file once (fairspec.filecache.one_run, around sema.check.check_file):
its checks (width, input names, outputs, kind, obstacle) each ask for the signature. The next run
parses it again, whatever the file's timestamps say (the editor server lints in one long process)."""

from __future__ import annotations

import os
import shutil

from conftest import EXAMPLES

import fairspec.models.peek_onnx as po
from fairspec.pipeline import lint


def test_an_onnx_file_is_parsed_once_per_lint_run_and_again_in_the_next(tmp_path, monkeypatch):
    proj = tmp_path / "adult"
    shutil.copytree(EXAMPLES / "adult", proj)
    (proj / "fairspec.toml").write_text("")
    parses = []
    parse = po._parse_onnx_signature
    monkeypatch.setattr(po, "_parse_onnx_signature", lambda *a: parses.append(1) or parse(*a))
    spec = proj / "adult.fair"
    assert not [d for d in lint(spec).diagnostics if d.is_error]
    assert len(parses) == 1
    model = proj / "models" / "mlp.onnx"
    st = model.stat()
    shutil.copyfile(EXAMPLES / "fairify" / "models" / "AC-1.onnx", model)  # another input width
    os.utime(model, ns=(st.st_atime_ns, st.st_mtime_ns))  # the same timestamp: it decides nothing
    errs = [d.code for d in lint(spec).diagnostics if d.is_error]
    assert len(parses) == 2 and "FS402" in errs, errs
    from fairspec import filecache

    assert filecache._RUN.get() is None  # nothing kept past the run
