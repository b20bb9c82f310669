"""Session 29's walk of hostile inputs around imports and the editor: a loop of symbolic links named as
an import, as the spec, as a data or model file, or as an open document's path (Path.resolve() raises
RuntimeError for one before Python 3.13: it was an internal error, exit 4, in lint, check, SARIF,
GitHub annotations, HTML and the language server); positions far outside a document are answered."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from conftest import run_cli
from fairspec.sema.check import check_file

SPEC = 'import "loop.fair"\nfeatures W {\n  P : bool protected\n}\nmodel m = rule(P)\n'


@pytest.fixture
def loops(tmp_path):
    (tmp_path / "fairspec.toml").write_text("")
    for name in ("loop.fair", "loop.csv", "loop.onnx"):
        os.symlink(name, tmp_path / name)  # each a link to itself
    os.symlink("two.fair", tmp_path / "one.fair")
    os.symlink("one.fair", tmp_path / "two.fair")
    (tmp_path / "a.fair").write_text(SPEC)
    return tmp_path


@pytest.mark.parametrize("spec, fmt", [("a.fair", "text"), ("a.fair", "sarif"), ("a.fair", "github"),
                                       ("loop.fair", "text"), ("loop.fair", "sarif"), ("loop.fair", "github"),
                                       ("one.fair", "json")])
def test_lint_of_a_spec_or_an_import_that_is_a_symlink_loop_is_fs203(loops, spec, fmt):
    r = run_cli("lint", spec, "--format", fmt, cwd=loops)
    out = r.stdout + r.stderr
    assert r.returncode == 2 and "internal error" not in out, out
    assert "is a loop of symbolic links" in out, out
    if fmt in ("sarif", "json"):
        json.loads(r.stdout)


@pytest.mark.parametrize("spec", ["a.fair", "loop.fair"])
def test_check_with_an_html_report_of_a_symlink_loop_is_fs203(loops, spec):
    r = run_cli("check", spec, "--html", "out.html", cwd=loops)
    out = r.stdout + r.stderr
    assert r.returncode == 2 and "internal error" not in out and "FS203" in out, out


def test_a_symlink_loop_as_the_data_or_the_model_file_is_one_sentence(loops):
    (loops / "e.fair").write_text('data d = csv("loop.csv", label = y == 1)\nfeatures W from d {\n'
                                  '  P : bool protected\n}\nmodel m = onnx("loop.onnx")\n')
    got = sorted((d.code, d.message.rsplit("/", 1)[-1]) for d in check_file(loops / "e.fair").diagnostics)
    assert got == [("FS401", "loop.onnx is a loop of symbolic links"),
                   ("FS404", "loop.csv is a loop of symbolic links")], got


def test_the_editor_over_symlink_loops_and_positions_out_of_range(loops, monkeypatch):
    pytest.importorskip("pygls")
    from lsprotocol import types as T

    from fairspec.lsp.client import Session

    monkeypatch.chdir(loops)
    far = [T.Position(10**6, 0), T.Position(1, 10**6), T.Position(2**31 - 1, 2**31 - 1)]

    async def scenario():
        async with Session() as s:
            uri, text, diags = await s.opened(loops / "a.fair")
            assert [d.code for d in diags] == ["FS203"] and "loop of symbolic links" in diags[0].message
            assert await s.definition(uri, s.pos(text, "loop.fair")) is None  # (was an internal error)
            for pos in far:
                assert await s.hover(uri, pos) is None
                assert await s.definition(uri, pos) is None
                assert list(await s.references(uri, pos)) == []
                await s.completion(uri, pos)
            # a document open under a path that is a loop (an unsaved buffer of it): linted from its text
            loop = (loops / "loop.fair").as_uri()
            s.client.text_document_did_open(T.DidOpenTextDocumentParams(T.TextDocumentItem(
                uri=loop, language_id="fairspec", version=1, text="features W {\n  P : bool\n}\ngroup g = Q\n")))
            got = await s.diagnostics(loop, after=0)
            assert [d.code for d in got] == ["FS205"], got
            assert await s.hover(loop, T.Position(1, 3)) is not None
            assert b"Traceback" not in bytes(s.stderr), bytes(s.stderr)[-2000:]

    asyncio.run(scenario())
