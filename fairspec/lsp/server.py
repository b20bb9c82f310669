"""`fairspec lsp`: the language server, over stdio, built on pygls.

Every request is answered from :mod:`fairspec.lsp.analysis`; this module only
converts between fairspec's spans (1-based) and LSP positions (0-based) and
keeps, per open document, the last index built from text that parsed (hover
and completion keep working while a line is half typed).  Diagnostics are
published on open, change and save for the document and for the files it
imports; model headers and data samples are cached between edits and re-read
when their files change (fairspec.filecache).
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from lsprotocol import types as T
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from fairspec.diagnostics import Diagnostic, Span
from fairspec.lsp import analysis as A

log = logging.getLogger("fairspec.lsp")

_SEVERITY = {"error": T.DiagnosticSeverity.Error, "warning": T.DiagnosticSeverity.Warning,
             "note": T.DiagnosticSeverity.Information}
_SYMBOL = {"import": T.SymbolKind.Module, "model": T.SymbolKind.Class, "data": T.SymbolKind.File,
           "features": T.SymbolKind.Struct, "feature": T.SymbolKind.Field, "encode": T.SymbolKind.Namespace,
           "group": T.SymbolKind.Variable, "distribution": T.SymbolKind.Object, "property": T.SymbolKind.Event,
           "repair": T.SymbolKind.Method, "policy": T.SymbolKind.Function, "apply": T.SymbolKind.Module}
_COMPLETION = {"keyword": T.CompletionItemKind.Keyword, "function": T.CompletionItemKind.Function,
               "field": T.CompletionItemKind.Field, "variable": T.CompletionItemKind.Variable,
               "class": T.CompletionItemKind.Class, "file": T.CompletionItemKind.File,
               "value": T.CompletionItemKind.Value, "enum": T.CompletionItemKind.EnumMember,
               "module": T.CompletionItemKind.Module, "property": T.CompletionItemKind.Property,
               "struct": T.CompletionItemKind.Struct}


def _range(span: Span | None) -> T.Range:
    if span is None:
        return T.Range(T.Position(0, 0), T.Position(0, 0))
    return T.Range(T.Position(span.line - 1, span.column - 1),
                   T.Position(max(span.end_line - 1, 0), max(span.end_column - 1, 0)))


def _location(span: Span) -> T.Location:
    return T.Location(uri=from_fs_path(str(Path(span.file).resolve())), range=_range(span))


def _to_lsp(d: Diagnostic) -> T.Diagnostic:
    related = [T.DiagnosticRelatedInformation(_location(r.span), r.message) for r in d.related]
    if d.hint and d.span is not None:
        related.append(T.DiagnosticRelatedInformation(_location(d.span), f"hint: {d.hint}"))
    return T.Diagnostic(range=_range(d.span), message=d.message, severity=_SEVERITY[d.severity], code=d.code,
                        source="fairspec", related_information=related or None)


class FairspecServer(LanguageServer):
    def __init__(self):
        from fairspec import version

        super().__init__("fairspec", version())
        self.indexes: dict[str, A.Index] = {}      # uri -> the index of its current text
        self.good: dict[str, A.Index] = {}         # uri -> the last index whose text parsed
        self.published: dict[str, set[str]] = {}   # uri -> the uris it published diagnostics to

    # ------------------------------------------------------------ analysis
    def sources(self) -> dict[str, str]:
        out = {}
        for uri, doc in list(self.workspace.text_documents.items()):
            p = to_fs_path(uri)
            if p:
                out[p] = doc.source
        return out

    def analyse(self, uri: str) -> A.Index | None:
        path = to_fs_path(uri)
        if not path:
            return None
        idx = A.analyse(path, self.sources())
        self.indexes[uri] = idx
        if idx.ok:
            self.good[uri] = idx
        return idx

    def lint_and_publish(self, uri: str) -> None:
        try:
            idx = self.analyse(uri)
        except Exception as e:  # noqa: BLE001 - a fairspec bug must not take the editor's server down
            log.exception("lint failed")
            self.window_log_message(T.LogMessageParams(T.MessageType.Error, f"fairspec: internal error: {e}"))
            return
        if idx is None:
            return
        root = Path(idx.path)
        by_uri: dict[str, list[T.Diagnostic]] = {uri: []}
        for d in idx.diagnostics:
            target = uri
            if d.span is not None and Path(d.span.file).resolve() != root:
                target = from_fs_path(str(Path(d.span.file).resolve()))
            by_uri.setdefault(target, []).append(_to_lsp(d))
        for old in self.published.get(uri, set()) - set(by_uri):
            self.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=old, diagnostics=[]))
        for target, diags in by_uri.items():
            if target != uri and target in self.workspace.text_documents:
                continue  # an open imported file publishes its own
            self.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=target, diagnostics=diags))
        self.published[uri] = set(by_uri)

    def index_for(self, uri: str) -> A.Index | None:
        idx = self.indexes.get(uri)
        if idx is None:
            idx = self.analyse(uri)
        if idx is not None and idx.ok:
            return idx
        return self.good.get(uri, idx)


server = FairspecServer()


@server.feature(T.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: FairspecServer, params: T.DidOpenTextDocumentParams):
    ls.lint_and_publish(params.text_document.uri)


@server.feature(T.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: FairspecServer, params: T.DidChangeTextDocumentParams):
    ls.lint_and_publish(params.text_document.uri)


@server.feature(T.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: FairspecServer, params: T.DidSaveTextDocumentParams):
    ls.lint_and_publish(params.text_document.uri)


@server.feature(T.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: FairspecServer, params: T.DidCloseTextDocumentParams):
    uri = params.text_document.uri
    for target in ls.published.pop(uri, set()):
        ls.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=target, diagnostics=[]))
    ls.indexes.pop(uri, None)
    ls.good.pop(uri, None)


@server.feature(T.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched(ls: FairspecServer, params: T.DidChangeWatchedFilesParams):
    for uri in list(ls.workspace.text_documents):  # a model, data or imported file changed on disk
        ls.lint_and_publish(uri)


def _where(params) -> tuple[str, int, int]:
    """(path, line, column) in fairspec's 1-based terms."""
    return (str(Path(to_fs_path(params.text_document.uri)).resolve()),
            params.position.line + 1, params.position.character + 1)


@server.feature(T.TEXT_DOCUMENT_HOVER)
def hover(ls: FairspecServer, params: T.HoverParams):
    idx = ls.index_for(params.text_document.uri)
    if idx is None:
        return None
    text = A.hover(idx, *_where(params))
    if not text:
        return None
    return T.Hover(contents=T.MarkupContent(kind=T.MarkupKind.Markdown, value=text))


@server.feature(T.TEXT_DOCUMENT_DEFINITION)
def definition(ls: FairspecServer, params: T.DefinitionParams):
    idx = ls.index_for(params.text_document.uri)
    span = A.definition(idx, *_where(params)) if idx else None
    return _location(span) if span else None


@server.feature(T.TEXT_DOCUMENT_REFERENCES)
def references(ls: FairspecServer, params: T.ReferenceParams):
    idx = ls.index_for(params.text_document.uri)
    if idx is None:
        return []
    spans = A.references(idx, *_where(params), include_declaration=params.context.include_declaration)
    return [_location(s) for s in spans]


@server.feature(T.TEXT_DOCUMENT_COMPLETION, T.CompletionOptions(trigger_characters=[" ", ":", "(", "{", ","]))
def completion(ls: FairspecServer, params: T.CompletionParams):
    doc = ls.workspace.get_text_document(params.text_document.uri)
    idx = ls.index_for(params.text_document.uri)
    _, line, col = _where(params)
    items = [T.CompletionItem(label=lbl, kind=_COMPLETION.get(kind, T.CompletionItemKind.Text), detail=detail or None)
             for lbl, kind, detail in A.completions(idx, doc.source, line, col)]
    return T.CompletionList(is_incomplete=False, items=items)


@server.feature(T.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
def document_symbols(ls: FairspecServer, params: T.DocumentSymbolParams):
    idx = ls.index_for(params.text_document.uri)
    if idx is None:
        return []

    def conv(item):
        name, kind, span, name_span, kids = item
        return T.DocumentSymbol(name=name, kind=_SYMBOL.get(kind, T.SymbolKind.Variable), range=_range(span),
                                selection_range=_range(name_span), detail=kind, children=[conv(k) for k in kids] or None)

    return [conv(x) for x in A.outline(idx)]


@server.feature(T.TEXT_DOCUMENT_CODE_ACTION, T.CodeActionOptions(code_action_kinds=[T.CodeActionKind.QuickFix]))
def code_actions(ls: FairspecServer, params: T.CodeActionParams):
    uri = params.text_document.uri
    idx = ls.indexes.get(uri) or ls.analyse(uri)
    if idx is None:
        return []
    out = []
    for lsp_diag in params.context.diagnostics:
        for d in idx.diagnostics:
            if d.code != lsp_diag.code or _range(d.span) != lsp_diag.range:
                continue
            for title, span, new in A.fixes(idx, d):
                edit = T.TextEdit(range=_range(span), new_text=new)
                out.append(T.CodeAction(title=title, kind=T.CodeActionKind.QuickFix, diagnostics=[lsp_diag],
                                        is_preferred=True,
                                        edit=T.WorkspaceEdit(changes={_location(span).uri: [edit]})))
    return out


@server.feature(T.TEXT_DOCUMENT_FORMATTING)
def formatting(ls: FairspecServer, params: T.DocumentFormattingParams):
    from fairspec.diagnostics import DiagnosticError
    from fairspec.syntax.format import format_text

    doc = ls.workspace.get_text_document(params.text_document.uri)
    try:
        new = format_text(doc.source, to_fs_path(params.text_document.uri) or "<buffer>")
    except DiagnosticError:
        return []  # the diagnostics already say why the text does not parse
    if new == doc.source:
        return []
    lines = doc.source.split("\n")
    end = T.Position(len(lines) - 1, len(lines[-1]))
    return [T.TextEdit(range=T.Range(T.Position(0, 0), end), new_text=new)]


def main() -> int:
    """Serve over stdio. Anything a library prints goes to stderr, never into the protocol stream."""
    from fairspec import filecache

    filecache.enable()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    server.start_io(sys.stdin.buffer, protocol_out)
    return 0
