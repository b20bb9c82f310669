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
