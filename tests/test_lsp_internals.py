"""The pygls internals the language server relies on (fairspec/lsp/internals.py) are there, in the
shape fairspec uses: an upgrade that drops one fails here, naming it, instead of in an editor (the
extra has a lower bound only, tests/test_packaging.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("pygls")

from lsprotocol import types as T  # noqa: E402

from fairspec.lsp import internals  # noqa: E402


def test_every_pygls_internal_relied_on_is_there():
    gone = internals.missing()
    assert not gone, "\n".join(gone)


def test_the_check_names_a_missing_internal(monkeypatch):
    monkeypatch.setattr(internals, "INTERNALS", internals.INTERNALS + (
        ("pygls.workspace.workspace", "Workspace", "_no_such_thing", None, "a test"),
        ("pygls.protocol.json_rpc", "JsonRPCProtocol", "_send_data", ("data", "extra"), "another test")))
    gone = internals.missing()
    assert len(gone) == 2
    assert "pygls.workspace.workspace.Workspace._no_such_thing, which a test relies on" in gone[0]
    assert "changed pygls.protocol.json_rpc.JsonRPCProtocol._send_data" in gone[1]


def test_the_workspace_pygls_makes_cuts_lines_as_lsp_does():
    # what initialize does to the workspace pygls built: its documents are fairspec's, and pygls's
    # incremental edit (through TextDocument.lines) after a U+2028 lands on the line LSP means
    from pygls.workspace import Workspace

    from fairspec.lsp.server import _Document, _Workspace

    ws = Workspace(None, T.TextDocumentSyncKind.Incremental)
    ws.__class__ = _Workspace
    uri = "file:///x.fair"
    ws.put_text_document(T.TextDocumentItem(uri=uri, language_id="fairspec", version=1,
                                            text="# a\u2028b\ngroup g = Zz\n"))
    doc = ws.get_text_document(uri)
    assert isinstance(doc, _Document)
    ws.update_text_document(T.VersionedTextDocumentIdentifier(uri=uri, version=2), T.TextDocumentContentChangePartial(
        range=T.Range(T.Position(1, 10), T.Position(1, 12)), text="Q"))
    assert ws.get_text_document(uri).source == "# a\u2028b\ngroup g = Q\n"


# `fairspec lsp` with a pygls it was not written for (the extra has a lower bound only, so a user may
# have a pygls 3 -- none was released when this was written -- or an old 1.x): one sentence naming
# the version needed, never a traceback or a server that fails on the editor's first message.

def _lsp(monkeypatch, capsys, installed: str, serve=None):
    """`fairspec lsp` in this process with pygls reporting version ``installed``; the server itself
    replaced (it would read this process's stdin): (exit code, stderr)."""
    import fairspec.lsp.server as server
    from fairspec import cli

    monkeypatch.setattr(internals, "_installed_version", lambda: installed)
    monkeypatch.setattr(server, "main", serve or (lambda: 0))
    code = cli.main(["lsp"])
    return code, capsys.readouterr().err


def test_pygls_3_with_everything_relied_on_starts_with_one_warning(monkeypatch, capsys):
    code, err = _lsp(monkeypatch, capsys, "3.0.0")
    assert code == 0
    assert err.strip().count("\n") == 0 and "pygls 3.0.0 is installed" in err
    assert "written and tested for pygls 2.x, 2.1 or later" in err and "pip install 'pygls>=2.1,<3'" in err


def test_pygls_3_lacking_an_internal_is_one_sentence_and_exit_2(monkeypatch, capsys):
    monkeypatch.setattr(internals, "INTERNALS", internals.INTERNALS + (
        ("pygls.protocol.json_rpc", "JsonRPCProtocol", "_send_gone", None, "a test"),))
    code, err = _lsp(monkeypatch, capsys, "3.1.0", serve=lambda: pytest.fail("served"))
    assert code == 2 and err.strip().count("\n") == 0, err
    assert err.startswith("fairspec lsp needs pygls 2.x, 2.1 or later, and pygls 3.1.0 is installed, which lacks")
    assert "JsonRPCProtocol._send_gone" in err and err.rstrip().endswith("pip install 'pygls>=2.1,<3'")


def test_pygls_3_the_server_cannot_import_from_is_one_sentence(monkeypatch, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "fairspec.lsp.server", None)    # as if a name it imports were gone
    monkeypatch.setattr(internals, "_installed_version", lambda: "3.0.0")
    error, warning = internals.pygls_problem()
    assert warning is None and error.startswith("fairspec lsp needs pygls 2.x, 2.1 or later, and pygls 3.0.0 is "
                                                "installed, from which it cannot import")


@pytest.mark.parametrize("installed", ["1.3.1", "2.0.1"])
def test_a_pygls_before_2_1_is_one_sentence(monkeypatch, capsys, installed):
    code, err = _lsp(monkeypatch, capsys, installed, serve=lambda: pytest.fail("served"))
    assert code == 2
    assert err.strip() == (f"fairspec lsp needs pygls 2.x, 2.1 or later, and pygls {installed} is installed: "
                           f"pip install 'pygls>=2.1,<3'")


def test_the_installed_pygls_has_no_problem():
    assert internals.pygls_problem() == (None, None)


def test_no_pygls_names_the_extra(monkeypatch, capsys):
    code, err = _lsp(monkeypatch, capsys, None, serve=lambda: pytest.fail("served"))
    assert code == 2 and err.strip() == "fairspec lsp needs pygls: pip install 'specfair[lsp]'"
