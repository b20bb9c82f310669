"""`fairspec lsp`: the language server, over stdio, built on pygls.

Every request is answered from :mod:`fairspec.lsp.analysis`; this module is the pygls layer: its
handlers, and the conversion between fairspec's spans and LSP positions (:mod:`fairspec.lsp.positions`:
through an offset into the text, lines cut at \\n, \\r\\n and \\r as LSP cuts them, characters in the
encoding negotiated at ``initialize``, UTF-16 unless the client offers another, with pygls's codec).
Which index answers a request is :mod:`fairspec.lsp.indexes`'s (:class:`~fairspec.lsp.indexes.Indexes`,
mixed into :class:`FairspecServer`): per open document, the last index built from text that parsed and,
while the text does not, one of it without its declarations that do not parse (built after the text's
diagnostics are published, and put in place whole: until then the older one answers, and a client
answered semantic tokens or code lenses from an older index is asked to ask again once the newer one is
in place, ``Indexes.refresh``); every request keeps working outside the half-typed one; an older index
is asked at the request's position moved into its text, and the spans answered are moved back, where
the two texts agree, else left out (``Indexes.indexes_at``, :meth:`FairspecServer.span_now`); an answer
that is an edit (rename, a quick fix) is computed only from the index of the text the client has now
(``Indexes.current_index``).  Diagnostics are published on open, change and save for the document and
for the files it imports, with the version of the text they were computed from; an open document
importing another is linted again when that one is opened, changed or closed; model headers and data
samples are cached between edits and re-read when their files change (fairspec.filecache).  A document
whose uri is not a file (``untitled:``) is linted as a file in no folder: its relative paths resolve to
nothing, and its diagnostics say so.

Hardened against a hostile or broken client (issue 21, class 10; the framing and the checks
before pygls are :mod:`fairspec.lsp.transport`):

* linting runs in one background thread, debounced, its result sent from the event loop's thread
  only for a document still open at the version linted; a document over
  :data:`fairspec.lsp.indexes.MAX_DOCUMENT` bytes (UTF-8) is not analysed live
  (:mod:`fairspec.lsp.indexes`);
* go-to-definition, references and diagnostics never name a file outside the document's
  project and the shipped policies (the same confinement as ``check``);
* ``exit`` without ``shutdown`` (or the end of stdin) ends the process with status 1.

The pygls internals this module and the transport rely on (no public hook in pygls 2.x) are named in
:mod:`fairspec.lsp.internals`, checked by a test (an upgrade that drops one fails there, naming it).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import sys
import threading

from lsprotocol import types as T
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument, Workspace

from fairspec.diagnostics import Diagnostic, Span
from fairspec.files import real_path
from fairspec.lsp import analysis as A
from fairspec.lsp.disk import UNSAVED, confined as _confined, disk_text as _disk_text, same as _same
from fairspec.lsp.indexes import Indexes
from fairspec.lsp.positions import changed, lines_of, lsp_lines
from fairspec.lsp.renames import across_importers
from fairspec.lsp.transport import serve

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


class _Document(TextDocument):
    """pygls's document, its lines cut as LSP cuts them (\\n, \\r\\n, \\r): pygls's are
    ``str.splitlines``, which also cuts at U+2028, a form feed, U+0085 ..., so an incremental
    edit after one of them would land on the wrong line."""

    @property
    def lines(self):
        return lsp_lines(self.source)


class _Workspace(Workspace):
    def _create_text_document(self, doc_uri, source=None, version=None, language_id=None):
        return _Document(doc_uri, source=source, version=version, language_id=language_id,
                         sync_kind=self._sync_kind, position_codec=self.position_codec)


class _Protocol(LanguageServerProtocol):
    """pygls's protocol, but an error response never carries a Python traceback (``error.data``)."""

    def _send_response(self, msg_id, result=None, error=None):
        if error is not None and getattr(error, "data", None) is not None:
            error = T.ResponseError(code=error.code, message=error.message)
        super()._send_response(msg_id, result, error)


class FairspecServer(Indexes, LanguageServer):
    """The pygls server; its documents' indexes and lint thread are :class:`fairspec.lsp.indexes.Indexes`'s."""

    def __init__(self):
        from fairspec import version

        super().__init__("fairspec", version(), protocol_cls=_Protocol)
        self.unsaved: dict[str, str] = {}          # the path a document that is not a file is linted as -> uri
        self.initialized = False                   # set once `initialize` was answered
        self.shut_down = False                     # set by `shutdown` (pygls's own flag is internal)
        self.exiting = False                       # the serve loop ended: nothing is sent any more

    # ------------------------------------------------------------ uris, paths and positions
    def path_of(self, uri) -> str | None:
        """The file a uri names (resolved); for a document that is not a file (``untitled:``, ...), the
        path it is linted as, in :data:`UNSAVED`; None for a uri that is neither."""
        if not isinstance(uri, str):
            return None
        if uri.startswith("file:"):
            p = to_fs_path(uri)
            return str(real_path(p)) if p else None
        if uri not in self.workspace.text_documents:
            return None
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", uri)[:100]
        path = str(UNSAVED / (name if name.endswith(".fair") else name + ".fair"))
        self.unsaved[path] = uri
        return path

    def uri_of(self, path: str) -> str:
        return self.unsaved.get(path) or from_fs_path(str(real_path(path)))

    def text_of(self, file: str, idx: A.Index | None = None) -> str | None:
        """The text a span in ``file`` was read from: the index's, else the open document's."""
        if idx is not None:
            text = idx.texts.get(file)
            if text is None:
                text = next((v for k, v in idx.texts.items() if _same(k, file)), None)
            if text is not None:
                return text
        doc = self.workspace.text_documents.get(self.uri_of(file))
        return doc.source if doc is not None else _disk_text(file)

    def position(self, text: str | None, line: int, column: int) -> T.Position:
        """fairspec's 1-based (line, column) in ``text`` as an LSP position in the client's units."""
        if text is None:  # a file that cannot be read (or is no spec): code points, as said
            return T.Position(max(line - 1, 0), max(column - 1, 0))
        return lines_of(text).to_lsp(line, column, self.workspace.position_codec)

    def range(self, span: Span | None, idx: A.Index | None = None, text: str | None = None) -> T.Range:
        if span is None:
            return T.Range(T.Position(0, 0), T.Position(0, 0))
        text = text if text is not None else self.text_of(span.file, idx)
        start = self.position(text, span.line, span.column)
        end = self.position(text, span.end_line, span.end_column)
        return T.Range(start, max(start, end, key=lambda p: (p.line, p.character)))

    def location(self, span: Span, idx: A.Index | None = None) -> T.Location:
        return T.Location(uri=self.uri_of(span.file), range=self.range(span, idx))

    def location_now(self, span: Span, idx: A.Index) -> T.Location | None:
        """The location of a span of ``idx``'s texts in the text its file has now: an open document
        edited since the index was built has it moved where the two texts agree, else None."""
        old = self.text_of(span.file, idx)
        doc = self.workspace.text_documents.get(self.uri_of(span.file))
        if old is None or doc is None or doc.source == old:
            return self.location(span, idx)
        now = self.span_now(span, idx)
        return None if now is None else T.Location(uri=self.uri_of(span.file), range=self.range(now, text=doc.source))

    def span_now(self, span: Span, idx: A.Index) -> Span | None:
        """A span of ``idx``'s texts in the text its file has now (see :meth:`location_now`)."""
        old = self.text_of(span.file, idx)
        doc = self.workspace.text_documents.get(self.uri_of(span.file))
        return span if old is None or doc is None or doc.source == old else changed(old, doc.source).span_to_newer(span)

    def where(self, params) -> tuple[str, int, int]:
        """(path, line, column) in fairspec's 1-based terms of a request's position in its document;
        a uri that is neither a file nor an open document is invalid params."""
        uri = params.text_document.uri
        path = self.path_of(uri)
        if not path:
            raise JsonRpcInvalidParams(f"not a file uri: {uri!r}")
        doc = self.workspace.text_documents.get(uri)
        text = doc.source if doc is not None else _disk_text(path)
        pos = params.position
        if text is None:
            return path, pos.line + 1, pos.character + 1
        line, col = lines_of(text).to_fairspec(pos, self.workspace.position_codec)
        return path, line, col

    def to_lsp(self, d: Diagnostic, idx: A.Index) -> T.Diagnostic:
        related = [T.DiagnosticRelatedInformation(self.location(r.span, idx), r.message) for r in d.related
                   if r.span is not None and _confined(r.span.file, idx.path)]
        if d.hint and d.span is not None:
            related.append(T.DiagnosticRelatedInformation(self.location(d.span, idx), f"hint: {d.hint}"))
        return T.Diagnostic(range=self.range(d.span, idx), message=d.message, severity=_SEVERITY[d.severity],
                            code=d.code, source="fairspec", related_information=related or None)


server = FairspecServer()


@server.feature(T.INITIALIZE)
def initialize(ls: FairspecServer, params: T.InitializeParams):
    # pygls made the workspace (with the position encoding it negotiated); its documents cut lines
    # as LSP does (_Workspace adds no state: only the class of the documents it makes)
    ls.protocol.workspace.__class__ = _Workspace


# the files a spec reads that may change on disk (specs, models, data): the one watcher, which every client
# that registers dynamically (VS Code too: editors/vscode/extension.js watches nothing itself) is asked for
WATCHED = "**/*.{fair,onnx,pt,pth,skops,pkl,pickle,joblib,json,txt,ubj,csv,tsv,data,parquet}"


@server.feature(T.INITIALIZED)
def initialized(ls: FairspecServer, params: T.InitializedParams):
    from pygls.capabilities import get_capability

    # a client that watches files only when asked (Neovim, Helix, ...) is asked to: a model, data or
    # imported file changing on disk then re-lints the open specs (did_change_watched)
    if get_capability(ls.client_capabilities, "workspace.did_change_watched_files.dynamic_registration", False):
        ls.client_register_capability(T.RegistrationParams([T.Registration(
            id="fairspec-watched-files", method=T.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=T.DidChangeWatchedFilesRegistrationOptions(
                watchers=[T.FileSystemWatcher(glob_pattern=WATCHED)]))]))


@server.feature(T.SHUTDOWN)
def shutdown(ls: FairspecServer, params):
    ls.shut_down = True  # later requests are refused (transport.dispatch); `exit` is then status 0


@server.feature(T.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: FairspecServer, params: T.DidOpenTextDocumentParams):
    ls.schedule(params.text_document.uri)
    ls.schedule_importers(params.text_document.uri)  # they read this buffer now, not the file


@server.feature(T.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: FairspecServer, params: T.DidChangeTextDocumentParams):
    ls.schedule(params.text_document.uri)
    ls.schedule_importers(params.text_document.uri)


@server.feature(T.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: FairspecServer, params: T.DidSaveTextDocumentParams):
    ls.schedule(params.text_document.uri)


@server.feature(T.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: FairspecServer, params: T.DidCloseTextDocumentParams):
    uri = params.text_document.uri
    with ls._wake:
        ls._pending.pop(uri, None)
    # a lint of it still running is dropped when it ends (_deliver: the document is not open)
    for target in ls.published.pop(uri, set()) | {uri}:
        if target == uri or target not in ls.workspace.text_documents:
            ls._publish(target, [])
    ls.indexes.pop(uri, None)
    ls.good.pop(uri, None)
    ls.partial.pop(uri, None)
    ls._read.pop(uri, None)
    ls._behind.discard(uri)
    ls.schedule_importers(uri)  # they read the file on disk now
    ls.imports.pop(uri, None)


@server.feature(T.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched(ls: FairspecServer, params: T.DidChangeWatchedFilesParams):
    from fairspec import filecache

    # a model, data or imported file changed on disk: what was read from it is read again, even when a
    # rewrite kept its size and modification time, and every open spec is linted again -- unless every
    # file changed is an open document: the specs read its text from the editor, never the disk, so saving
    # an open library (linted at its didChange / didSave) is not linted a second time for its file event
    paths = {p for p in (ls.path_of(e.uri) for e in params.changes if e.uri.startswith("file:")) if p}
    filecache.forget(paths)
    opened = {ls.path_of(u) for u in list(ls.workspace.text_documents)}
    if paths and paths <= opened:
        return
    for uri in list(ls.workspace.text_documents):
        ls.schedule(uri)


@server.feature(T.TEXT_DOCUMENT_HOVER)
def hover(ls: FairspecServer, params: T.HoverParams):
    uri = params.text_document.uri
    text = next(filter(None, (A.hover(idx, *at, importers=ls.importers_of(uri))
                              for idx, at in ls.indexes_at(uri, ls.where(params)))), None)
    if not text:
        return None
    return T.Hover(contents=T.MarkupContent(kind=T.MarkupKind.Markdown, value=text))


@server.feature(T.TEXT_DOCUMENT_DEFINITION)
def definition(ls: FairspecServer, params: T.DefinitionParams):
    for idx, where in ls.indexes_at(params.text_document.uri, ls.where(params)):
        span = A.definition(idx, *where)
        if span is not None:
            # never a file outside the project
            return ls.location_now(span, idx) if _confined(span.file, idx.path) else None
    return None


@server.feature(T.TEXT_DOCUMENT_REFERENCES)
def references(ls: FairspecServer, params: T.ReferenceParams):
    from fairspec.lsp.renames import importer_references

    for idx, where in ls.indexes_at(params.text_document.uri, ls.where(params)):
        spans = A.references(idx, *where, include_declaration=params.context.include_declaration)
        if spans:
            found = [ls.location_now(s, idx) for s in spans if _confined(s.file, idx.path)]
            # and the uses in the specs importing the file the name is declared in (a library's policy)
            # (the specs not open are linted: under the analysis lock, waited for a little, never long
            # in the event loop; without it only the open ones are searched, and the message says so)
            locked = ls._lock.acquire(timeout=1.0)
            try:
                more, said = importer_references(ls, idx, A.symbol_at(idx, *where),
                                                 params.context.include_declaration, analyse=locked)
            finally:
                if locked:
                    ls._lock.release()
            if said:
                ls.window_show_message(T.ShowMessageParams(type=T.MessageType.Warning, message=said))
            found += [ls.location_now(s, of) for s, of in more]
            return [loc for loc in found if loc is not None]
    return []


@server.feature(T.TEXT_DOCUMENT_COMPLETION, T.CompletionOptions(trigger_characters=[" ", ":", "(", "{", ","]))
def completion(ls: FairspecServer, params: T.CompletionParams):
    _, line, col = ls.where(params)
    if ls.too_large(params.text_document.uri):
        return T.CompletionList(is_incomplete=False, items=[])
    doc = ls.workspace.get_text_document(params.text_document.uri)
    idx = ls.index_for(params.text_document.uri)
    old = idx.source if idx is not None and idx.source not in (None, doc.source) else None  # an older text's index
    at = (line, col) if old is None else changed(old, doc.source).to_older(line, col)
    # a space typed (a trigger character) asks only where a short known list comes next; Ctrl-Space asks anywhere
    space = (params.context is not None and params.context.trigger_kind == T.CompletionTriggerKind.TriggerCharacter
             and params.context.trigger_character == " ")
    items = [T.CompletionItem(label=lbl, kind=_COMPLETION.get(kind, T.CompletionItemKind.Text), detail=detail or None)
             for lbl, kind, detail in A.completions(idx, doc.source, line, col, at and at[0], space=space,
                                                    importers=ls.importers_of(params.text_document.uri))]
    return T.CompletionList(is_incomplete=False, items=items)


@server.feature(T.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
def document_symbols(ls: FairspecServer, params: T.DocumentSymbolParams):
    idx = ls.index_for(params.text_document.uri)
    if idx is None:
        return []

    def conv(item):  # an index of an older text: a declaration moved into the text now, or left out
        name, kind, span, name_span, kids = item
        whole, name_at = ls.location_now(span, idx), ls.location_now(name_span, idx)
        if whole is None or name_at is None:
            return None
        return T.DocumentSymbol(name=name, kind=_SYMBOL.get(kind, T.SymbolKind.Variable), range=whole.range,
                                selection_range=name_at.range, detail=kind,
                                children=[c for c in map(conv, kids) if c is not None] or None)

    return [c for c in map(conv, A.outline(idx)) if c is not None]


@server.feature(T.TEXT_DOCUMENT_CODE_ACTION, T.CodeActionOptions(code_action_kinds=[T.CodeActionKind.QuickFix]))
def code_actions(ls: FairspecServer, params: T.CodeActionParams):
    uri = params.text_document.uri
    idx = ls.current_index(uri)  # none while the text waits to be linted: a fix is never computed on an older text
    if idx is None:
        return []
    out = []
    for lsp_diag in params.context.diagnostics:
        for d in idx.diagnostics:
            if d.code != lsp_diag.code or ls.range(d.span, idx) != lsp_diag.range:
                continue
            found = A.fixes(idx, d)
            edits = [title for title, _, _ in found if not title.startswith("Ignore ")]
            for title, span, new in found:
                edit = T.TextEdit(range=ls.range(span, idx), new_text=new)
                # preferred (what an editor's auto-fix applies) only when it is the one fix, never an ignore
                out.append(T.CodeAction(title=title, kind=T.CodeActionKind.QuickFix, diagnostics=[lsp_diag],
                                        is_preferred=edits == [title],
                                        edit=T.WorkspaceEdit(changes={ls.uri_of(span.file): [edit]})))
    return out


@server.feature(T.TEXT_DOCUMENT_FORMATTING)
def formatting(ls: FairspecServer, params: T.DocumentFormattingParams):
    from fairspec.diagnostics import DiagnosticError
    from fairspec.syntax.format import format_text

    doc = ls.workspace.get_text_document(params.text_document.uri)
    if ls.too_large(params.text_document.uri):
        return []  # the diagnostic says why it is not analysed live
    try:
        new = format_text(doc.source, ls.path_of(params.text_document.uri) or "<buffer>")
    except DiagnosticError:
        return []  # the diagnostics already say why the text does not parse
    if new == doc.source:
        return []
    end = lines_of(doc.source).position(len(doc.source), ls.workspace.position_codec)
    return [T.TextEdit(range=T.Range(T.Position(0, 0), end), new_text=new)]


@server.feature(T.TEXT_DOCUMENT_PREPARE_RENAME)
def prepare_rename(ls: FairspecServer, params: T.PrepareRenameParams):
    file, line, col = ls.where(params)
    idx = ls.current_index(params.text_document.uri, build=True)  # the text the rename will edit
    got = A.rename_target(idx, file, line, col) if idx else None
    if got is None:
        return None
    sym, span = got
    return T.PrepareRenamePlaceholder(range=ls.range(span, idx), placeholder=sym.name)


@server.feature(T.TEXT_DOCUMENT_RENAME)
def rename(ls: FairspecServer, params: T.RenameParams):
    file, line, col = ls.where(params)
    idx = ls.current_index(params.text_document.uri, build=True)  # the text the edits apply to
    if idx is None:
        return None
    if not idx.ok:
        raise JsonRpcInvalidParams("this document does not parse: fix its syntax error (see its diagnostics), "
                                   "then rename")
    try:
        with ls._lock:  # the rename lints its result (one analysis at a time: the lint thread's lock)
            edits = A.rename(idx, file, line, col, params.new_name, idx.path)
            # the specs importing the file the name is declared in: renamed too, each linted again
            sym = A.rename_target(idx, file, line, col)[0]
            said: list = []  # specs not followed to the end (renames.MAX_DEPTH): the user is told
            edits = across_importers(ls, idx, sym, params.new_name, edits, said)
    except A.RenameError as e:
        raise JsonRpcInvalidParams(str(e)) from None
    for sentence in said:
        ls.window_show_message(T.ShowMessageParams(type=T.MessageType.Warning, message=sentence))
        ls.window_log_message(T.LogMessageParams(type=T.MessageType.Warning, message=sentence))
    changes: dict = {}
    for span, text, of in edits:
        changes.setdefault(ls.uri_of(span.file), []).append(T.TextEdit(range=ls.range(span, of), new_text=text))
    return T.WorkspaceEdit(changes=changes)


@server.feature(T.TEXT_DOCUMENT_FOLDING_RANGE)
def folding_range(ls: FairspecServer, params: T.FoldingRangeParams):
    idx = ls.index_for(params.text_document.uri)
    path = ls.path_of(params.text_document.uri)
    if idx is None or not path:
        return []
    kinds = {"comment": T.FoldingRangeKind.Comment, "region": T.FoldingRangeKind.Region}
    out = []
    for a, b, k in A.folding_ranges(idx, path):
        first, last = ls.location_now(Span(path, a, 1, a, 1), idx), ls.location_now(Span(path, b, 1, b, 1), idx)
        if first is None or last is None:  # a line of an older text changed since
            continue
        first, last = first.range.start.line, last.range.start.line
        if last > first:
            out.append(T.FoldingRange(start_line=first, end_line=last, kind=kinds[k]))
    return out


SEMANTIC_LEGEND = T.SemanticTokensLegend(token_types=A.TOKEN_TYPES, token_modifiers=A.TOKEN_MODIFIERS)


@server.feature(T.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, SEMANTIC_LEGEND)
def semantic_tokens(ls: FairspecServer, params: T.SemanticTokensParams):
    path = ls.path_of(params.text_document.uri)
    if not path or ls.too_large(params.text_document.uri):
        return T.SemanticTokens(data=[])
    doc = ls.workspace.get_text_document(params.text_document.uri)
    idx = ls.index_for(params.text_document.uri)
    ls.answered(params.text_document.uri, idx)
    data, prev_line, prev_col = [], 0, 0
    now = None if idx is None or idx.source == doc.source else (lambda sp: ls.span_now(sp, idx))  # an older text's
    for line, col, length, kind, mods in A.semantic_tokens(idx, doc.source, path, now):
        start = ls.position(doc.source, line, col)
        end = ls.position(doc.source, line, col + length)
        if end.line != start.line:  # a token across a lone \r (one line for fairspec): its first line's part
            end = lines_of(doc.source).line_end(start.line, ls.workspace.position_codec)
        if end.character <= start.character:
            continue
        delta_col = start.character - prev_col if start.line == prev_line else start.character
        bits = sum(1 << A.TOKEN_MODIFIERS.index(m) for m in mods)
        data += [start.line - prev_line, delta_col, end.character - start.character, A.TOKEN_TYPES.index(kind), bits]
        prev_line, prev_col = start.line, start.character
    return T.SemanticTokens(data=data)


@server.feature(T.TEXT_DOCUMENT_SIGNATURE_HELP, T.SignatureHelpOptions(trigger_characters=["(", ","]))
def signature_help(ls: FairspecServer, params: T.SignatureHelpParams):
    _, line, col = ls.where(params)
    doc = ls.workspace.get_text_document(params.text_document.uri)
    got = A.signature_at(ls.index_for(params.text_document.uri), doc.source, line, col)
    if got is None:
        return None
    label, documentation, params_, active = got
    sig = T.SignatureInformation(label=label, documentation=documentation,
                                 parameters=[T.ParameterInformation(label=p) for p in params_])
    return T.SignatureHelp(signatures=[sig], active_signature=0, active_parameter=active)


@server.feature(T.TEXT_DOCUMENT_CODE_LENS)
def code_lens(ls: FairspecServer, params: T.CodeLensParams):
    idx = ls.index_for(params.text_document.uri)
    ls.answered(params.text_document.uri, idx)
    path = ls.path_of(params.text_document.uri)
    if idx is None or not path:
        return []
    return [T.CodeLens(range=at.range, command=T.Command(
        title=f"check {name}", command="fairspec.checkProperty", arguments=[params.text_document.uri, name]))
        for span, name in A.lenses(idx, path) if (at := ls.location_now(span, idx)) is not None]


def main() -> int:
    """Serve over stdio (:func:`_serve`), then end the process at once with its exit status.

    ``os._exit`` after flushing, not a return into the interpreter's finalization, which would wait on
    what the daemon lint thread holds mid-lint; the server writes no file of its own. (CI once saw a
    server stay alive 300 s after ``exit``: a lint ending after it made pygls log every failed send on
    the closed writer, megabytes on stderr, and the pipe filled; ``exiting`` now stops those sends.)"""
    code = _serve()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _serve() -> int:
    """Serve over stdio. Anything a library prints goes to stderr, never into the protocol stream."""
    from pygls.io_ import StdoutWriter

    from fairspec import filecache

    filecache.enable()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    from fairspec.lsp.transport import AnsweredErrors

    for handler in logging.getLogger().handlers:
        handler.addFilter(AnsweredErrors())
    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    stop = threading.Event()
    server.protocol.set_writer(StdoutWriter(protocol_out))
    try:
        # the reader thread gets its own buffered stream on a duplicate of fd 0: a daemon thread
        # blocked in sys.stdin's reader would abort the interpreter's shutdown (its lock is held)
        try:
            stdin = os.fdopen(os.dup(0), "rb")
        except OSError:
            stdin = sys.stdin.buffer
        asyncio.run(serve(server, stdin, stop))
    except BrokenPipeError:
        log.error("the client closed the connection")
    except KeyboardInterrupt:
        pass
    except SystemExit as e:  # `exit`: pygls's status, 0 after `shutdown` and 1 without (the protocol's)
        return e.code if isinstance(e.code, int) else 1
    finally:
        server.exiting = True
        server.shutdown()
    # the end of stdin without `exit`: a clean end only after `shutdown`
    return 0 if server.shut_down else 1
