"""`fairspec lsp`: the language server, over stdio, built on pygls.

Every request is answered from :mod:`fairspec.lsp.analysis`; this module only
converts between fairspec's spans (1-based) and LSP positions (0-based) and
keeps, per open document, the last index built from text that parsed (hover
and completion keep working while a line is half typed).  Diagnostics are
published on open, change and save for the document and for the files it
imports; model headers and data samples are cached between edits and re-read
when their files change (fairspec.filecache).

Hardened against a hostile or broken client (issue 21, class 10):

* the stdio framing is fairspec's own (:func:`read_frame`): a missing or malformed
  ``Content-Length``, a header line or a body over :data:`MAX_MESSAGE` bytes is answered with a
  JSON-RPC error (-32700 / -32600) and the reader resynchronises on the next ``Content-Length``
  header; nothing is allocated from a length the client claims before it is checked;
* a request before ``initialize`` is answered -32002; wrongly typed params (a position at line
  -1, a uri that is a number) -32602; an error response never carries a traceback;
* linting runs in one background thread: a change after a quiet spell at once, a burst of
  changes debounced (:data:`DEBOUNCE` seconds after the last one), and superseded by a newer version of the document (its stale result is dropped), so
  requests are answered meanwhile; a document over :data:`MAX_DOCUMENT` bytes is not analysed
  live: it gets one diagnostic saying so (``fairspec lint`` still checks it);
* go-to-definition, references and diagnostics never name a file outside the document's
  project and the shipped policies (the same confinement as ``check``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import sys
import threading
import time
from pathlib import Path

from lsprotocol import types as T
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import from_fs_path, to_fs_path

from fairspec.diagnostics import Diagnostic, Span
from fairspec.lsp import analysis as A

log = logging.getLogger("fairspec.lsp")

MAX_MESSAGE = 64 << 20   # bytes of one message (a 5 MB document's didOpen is about 5 MB)
MAX_HEADER_LINE = 8192   # bytes of one header line
# characters analysed as you type: by default what lint parses (fairspec.syntax.parser.MAX_SPEC_BYTES)
MAX_SPEC_BYTES = 512 << 10  # kept equal to fairspec.syntax.parser's (not imported here: lark loads lazily)
MAX_DOCUMENT = int(os.environ.get("FAIRSPEC_LSP_MAX_DOCUMENT", MAX_SPEC_BYTES))
DEBOUNCE = 0.05          # seconds without a change before a burst of changes is linted
IN_FLIGHT = 16           # messages read ahead of the one being handled

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


def _to_lsp(d: Diagnostic, root: str | None = None) -> T.Diagnostic:
    related = [T.DiagnosticRelatedInformation(_location(r.span), r.message) for r in d.related
               if r.span is not None and (root is None or _confined(r.span.file, root))]
    if d.hint and d.span is not None:
        related.append(T.DiagnosticRelatedInformation(_location(d.span), f"hint: {d.hint}"))
    return T.Diagnostic(range=_range(d.span), message=d.message, severity=_SEVERITY[d.severity], code=d.code,
                        source="fairspec", related_information=related or None)


class _Protocol(LanguageServerProtocol):
    """pygls's protocol, but an error response never carries a Python traceback (``error.data``)."""

    def _send_response(self, msg_id, result=None, error=None):
        if error is not None and getattr(error, "data", None) is not None:
            error = T.ResponseError(code=error.code, message=error.message)
        super()._send_response(msg_id, result, error)


def _confined(uri_or_path: str, root: str) -> bool:
    """The file lies in the project of ``root`` (the document) or the shipped policies."""
    from fairspec.files import Roots

    try:
        return Roots.for_spec(Path(root)).contains(Path(uri_or_path))
    except (OSError, ValueError, RuntimeError):
        return False


class FairspecServer(LanguageServer):
    def __init__(self):
        from fairspec import version

        super().__init__("fairspec", version(), protocol_cls=_Protocol)
        self.indexes: dict[str, A.Index] = {}      # uri -> the index of its current text
        self.good: dict[str, A.Index] = {}         # uri -> the last index whose text parsed
        self.published: dict[str, set[str]] = {}   # uri -> the uris it published diagnostics to
        self.initialized = False                   # set once `initialize` was answered
        self._lock = threading.RLock()             # one analysis at a time (filecache, the chunk cache)
        self._pending: dict[str, float] = {}       # uri -> when it last changed (waiting to be linted)
        self._linted: dict[str, float] = {}        # uri -> when its last lint ended
        self._wake = threading.Condition()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._worker: threading.Thread | None = None

    # ------------------------------------------------------------ analysis
    def sources(self) -> dict[str, str]:
        """The open documents' texts (a document over MAX_DOCUMENT is read from its file instead)."""
        out = {}
        for uri, doc in list(self.workspace.text_documents.items()):
            p = to_fs_path(uri)
            if p and len(doc.source) <= MAX_DOCUMENT:
                out[p] = doc.source
        return out

    def too_large(self, uri: str) -> int:
        """The document's size in characters when it is over MAX_DOCUMENT, else 0."""
        doc = self.workspace.text_documents.get(uri)
        n = len(doc.source) if doc is not None else 0
        return n if n > MAX_DOCUMENT else 0

    def analyse(self, uri: str) -> A.Index | None:
        path = to_fs_path(uri)
        if not path or self.too_large(uri):
            return None
        with self._lock:
            idx = A.analyse(path, self.sources())
        self.indexes[uri] = idx
        if idx.ok:
            self.good[uri] = idx
        return idx

    def schedule(self, uri: str) -> None:
        """Lint ``uri`` in the background once it has not changed for DEBOUNCE seconds."""
        with self._wake:
            self._pending[uri] = time.monotonic()
            self.indexes.pop(uri, None)  # a request meanwhile uses the last good index
            self._wake.notify()
        if self._worker is None:
            self._worker = threading.Thread(target=self._work, daemon=True, name="fairspec-lint")
            self._worker.start()

    def _work(self) -> None:
        while True:
            with self._wake:
                while True:
                    now = time.monotonic()
                    # a change after a quiet spell (the last lint of the document ended DEBOUNCE or
                    # more before it) is linted at once; changes in a burst wait for DEBOUNCE of quiet
                    due = [u for u, t in self._pending.items()
                           if now - t >= DEBOUNCE or t - self._linted.get(u, float("-inf")) >= DEBOUNCE]
                    if due:
                        uri = due[0]
                        del self._pending[uri]
                        break
                    wait = min((DEBOUNCE - (now - t) for t in self._pending.values()), default=None)
                    self._wake.wait(wait)
            try:
                self.lint_and_publish(uri)
            except Exception:  # noqa: BLE001 - the worker must survive whatever a document holds
                log.exception("lint failed")
            finally:
                self._linted[uri] = time.monotonic()

    def _publish(self, uri: str, diags: list) -> None:
        """Send from the event loop's thread (the protocol's writer is not shared between threads)."""
        params = T.PublishDiagnosticsParams(uri=uri, diagnostics=diags)
        if self._loop is not None and threading.current_thread() is not threading.main_thread():
            self._loop.call_soon_threadsafe(self.text_document_publish_diagnostics, params)
        else:
            self.text_document_publish_diagnostics(params)

    def _stale(self, uri: str, version) -> bool:
        """A newer text of ``uri`` came (or it was closed) while it was linted: drop the result."""
        doc = self.workspace.text_documents.get(uri)
        return doc is None or doc.version != version or uri in self._pending

    def lint_and_publish(self, uri: str) -> None:
        doc = self.workspace.text_documents.get(uri)
        version = doc.version if doc is not None else None
        size = self.too_large(uri)
        if size:
            d = T.Diagnostic(range=T.Range(T.Position(0, 0), T.Position(0, 0)), severity=T.DiagnosticSeverity.Warning,
                             code="FS106", source="fairspec",
                             message=f"this document is {size / 1e6:.1f} MB, over the language server's "
                                     f"limit of {MAX_DOCUMENT >> 10} KiB for analysing as you type "
                                     f"(FAIRSPEC_LSP_MAX_DOCUMENT): it is not analysed here; `fairspec lint` "
                                     f"reads spec files up to {MAX_SPEC_BYTES >> 10} KiB (FS107 above): split "
                                     f"it into files joined with import")
            self.indexes.pop(uri, None)
            self.good.pop(uri, None)
            for old in self.published.get(uri, set()) - {uri}:
                self._publish(old, [])
            self._publish(uri, [d])
            self.published[uri] = {uri}
            return
        try:
            idx = self.analyse(uri)
        except Exception as e:  # noqa: BLE001 - a fairspec bug must not take the editor's server down
            log.exception("lint failed")
            msg = T.LogMessageParams(T.MessageType.Error, f"fairspec: internal error: {e}")
            if self._loop is not None and threading.current_thread() is not threading.main_thread():
                self._loop.call_soon_threadsafe(self.window_log_message, msg)
            else:
                self.window_log_message(msg)
            return
        if idx is None or self._stale(uri, version):
            return
        root = Path(idx.path)
        by_uri: dict[str, list[T.Diagnostic]] = {uri: []}
        for d in idx.diagnostics:
            target = uri
            if d.span is not None and Path(d.span.file).resolve() != root:
                if _confined(d.span.file, idx.path):
                    target = from_fs_path(str(Path(d.span.file).resolve()))
            by_uri.setdefault(target, []).append(_to_lsp(d, idx.path))
        for old in self.published.get(uri, set()) - set(by_uri):
            self._publish(old, [])
        for target, diags in by_uri.items():
            if target != uri and target in self.workspace.text_documents:
                continue  # an open imported file publishes its own
            self._publish(target, diags)
        self.published[uri] = set(by_uri)

    def index_for(self, uri: str) -> A.Index | None:
        """The document's index; while a newer text waits to be linted, the last good one (a request
        never waits for a lint in progress: without an index it gets an empty answer)."""
        idx = self.indexes.get(uri)
        if idx is None and uri not in self._pending and self._lock.acquire(blocking=False):
            try:
                idx = self.analyse(uri)
            finally:
                self._lock.release()
        if idx is not None and idx.ok:
            return idx
        return self.good.get(uri, idx)


server = FairspecServer()


@server.feature(T.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: FairspecServer, params: T.DidOpenTextDocumentParams):
    ls.schedule(params.text_document.uri)


@server.feature(T.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: FairspecServer, params: T.DidChangeTextDocumentParams):
    ls.schedule(params.text_document.uri)


@server.feature(T.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: FairspecServer, params: T.DidSaveTextDocumentParams):
    ls.schedule(params.text_document.uri)


@server.feature(T.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: FairspecServer, params: T.DidCloseTextDocumentParams):
    uri = params.text_document.uri
    with ls._wake:
        ls._pending.pop(uri, None)
    for target in ls.published.pop(uri, set()):
        ls.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=target, diagnostics=[]))
    ls.indexes.pop(uri, None)
    ls.good.pop(uri, None)


@server.feature(T.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched(ls: FairspecServer, params: T.DidChangeWatchedFilesParams):
    for uri in list(ls.workspace.text_documents):  # a model, data or imported file changed on disk
        ls.schedule(uri)


def _where(params) -> tuple[str, int, int]:
    """(path, line, column) in fairspec's 1-based terms; a uri that is not a file is invalid params."""
    uri = params.text_document.uri
    path = to_fs_path(uri) if isinstance(uri, str) and uri.startswith("file:") else None
    if not path:
        raise JsonRpcInvalidParams(f"not a file uri: {params.text_document.uri!r}")
    return (str(Path(path).resolve()), params.position.line + 1, params.position.character + 1)


@server.feature(T.TEXT_DOCUMENT_HOVER)
def hover(ls: FairspecServer, params: T.HoverParams):
    where = _where(params)
    idx = ls.index_for(params.text_document.uri)
    if idx is None:
        return None
    text = A.hover(idx, *where)
    if not text:
        return None
    return T.Hover(contents=T.MarkupContent(kind=T.MarkupKind.Markdown, value=text))


@server.feature(T.TEXT_DOCUMENT_DEFINITION)
def definition(ls: FairspecServer, params: T.DefinitionParams):
    where = _where(params)
    idx = ls.index_for(params.text_document.uri)
    span = A.definition(idx, *where) if idx else None
    if span is None or not _confined(span.file, idx.path):  # never a file outside the project
        return None
    return _location(span)


@server.feature(T.TEXT_DOCUMENT_REFERENCES)
def references(ls: FairspecServer, params: T.ReferenceParams):
    where = _where(params)
    idx = ls.index_for(params.text_document.uri)
    if idx is None:
        return []
    spans = A.references(idx, *where, include_declaration=params.context.include_declaration)
    return [_location(s) for s in spans if _confined(s.file, idx.path)]


@server.feature(T.TEXT_DOCUMENT_COMPLETION, T.CompletionOptions(trigger_characters=[" ", ":", "(", "{", ","]))
def completion(ls: FairspecServer, params: T.CompletionParams):
    _, line, col = _where(params)
    if ls.too_large(params.text_document.uri):
        return T.CompletionList(is_incomplete=False, items=[])
    doc = ls.workspace.get_text_document(params.text_document.uri)
    idx = ls.index_for(params.text_document.uri)
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
    idx = ls.index_for(uri)
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
    if ls.too_large(params.text_document.uri):
        return []  # the diagnostic says why it is not analysed live
    try:
        new = format_text(doc.source, to_fs_path(params.text_document.uri) or "<buffer>")
    except DiagnosticError:
        return []  # the diagnostics already say why the text does not parse
    if new == doc.source:
        return []
    lines = doc.source.split("\n")
    end = T.Position(len(lines) - 1, len(lines[-1]))
    return [T.TextEdit(range=T.Range(T.Position(0, 0), end), new_text=new)]


@server.feature(T.TEXT_DOCUMENT_PREPARE_RENAME)
def prepare_rename(ls: FairspecServer, params: T.PrepareRenameParams):
    file, line, col = _where(params)
    idx = ls.index_for(params.text_document.uri)
    got = A.rename_target(idx, file, line, col) if idx else None
    if got is None:
        return None
    sym, span = got
    return T.PrepareRenamePlaceholder(range=_range(span), placeholder=sym.name)


@server.feature(T.TEXT_DOCUMENT_RENAME)
def rename(ls: FairspecServer, params: T.RenameParams):
    file, line, col = _where(params)
    idx = ls.index_for(params.text_document.uri)
    if idx is None:
        return None
    try:
        edits = A.rename(idx, file, line, col, params.new_name, idx.path)
    except A.RenameError as e:
        raise JsonRpcInvalidParams(str(e)) from None
    changes: dict = {}
    for span, text in edits:
        changes.setdefault(_location(span).uri, []).append(T.TextEdit(range=_range(span), new_text=text))
    return T.WorkspaceEdit(changes=changes)


@server.feature(T.TEXT_DOCUMENT_FOLDING_RANGE)
def folding_range(ls: FairspecServer, params: T.FoldingRangeParams):
    idx = ls.index_for(params.text_document.uri)
    path = to_fs_path(params.text_document.uri)
    if idx is None or not path:
        return []
    kinds = {"comment": T.FoldingRangeKind.Comment, "region": T.FoldingRangeKind.Region}
    return [T.FoldingRange(start_line=a - 1, end_line=b - 1, kind=kinds[k])
            for a, b, k in A.folding_ranges(idx, str(Path(path).resolve()))]


SEMANTIC_LEGEND = T.SemanticTokensLegend(token_types=A.TOKEN_TYPES, token_modifiers=A.TOKEN_MODIFIERS)


@server.feature(T.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, SEMANTIC_LEGEND)
def semantic_tokens(ls: FairspecServer, params: T.SemanticTokensParams):
    path = to_fs_path(params.text_document.uri)
    if not path or ls.too_large(params.text_document.uri):
        return T.SemanticTokens(data=[])
    doc = ls.workspace.get_text_document(params.text_document.uri)
    idx = ls.index_for(params.text_document.uri)
    data, prev_line, prev_col = [], 0, 0
    for line, col, length, kind, mods in A.semantic_tokens(idx, doc.source, str(Path(path).resolve())):
        line0, col0 = line - 1, col - 1
        delta_col = col0 - prev_col if line0 == prev_line else col0
        bits = sum(1 << A.TOKEN_MODIFIERS.index(m) for m in mods)
        data += [line0 - prev_line, delta_col, length, A.TOKEN_TYPES.index(kind), bits]
        prev_line, prev_col = line0, col0
    return T.SemanticTokens(data=data)


@server.feature(T.TEXT_DOCUMENT_SIGNATURE_HELP, T.SignatureHelpOptions(trigger_characters=["(", ","]))
def signature_help(ls: FairspecServer, params: T.SignatureHelpParams):
    _, line, col = _where(params)
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
    path = to_fs_path(params.text_document.uri)
    if idx is None or not path:
        return []
    return [T.CodeLens(range=_range(span), command=T.Command(
        title=f"check {name}", command="fairspec.checkProperty", arguments=[params.text_document.uri, name]))
        for span, name in A.lenses(idx, str(Path(path).resolve()))]


# ------------------------------------------------------------------ the stdio transport

_CONTENT_LENGTH = re.compile(rb"content-length\s*:", re.I)


class FrameError(Exception):
    """A message that cannot be read: (JSON-RPC code, message); the reader resynchronises."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


class FrameReader:
    """LSP base-protocol frames from a binary stream, every length checked before it is used.

    ``read()`` returns a message's body (bytes), None at the end of the stream, or raises
    :class:`FrameError` for a frame it cannot read; the next ``read()`` then skips to the next
    line holding a ``Content-Length`` header (also in the middle of a line: a body has no newline
    at its end, so the next header follows it on the same line)."""

    def __init__(self, stream, max_message: int = MAX_MESSAGE):
        self.stream = stream
        self.max_message = max_message
        self.resync = False
        self.carry = b""  # the start of a header found inside a line while resynchronising

    def _line(self) -> bytes:
        if self.carry:
            line, self.carry = self.carry, b""
            return line
        return self.stream.readline(MAX_HEADER_LINE + 1)

    def read(self) -> bytes | None:
        length = None
        seen = False
        while True:
            line = self._line()
            if not line:
                return None
            if self.resync:
                m = _CONTENT_LENGTH.search(line)
                if m is None:
                    continue  # still in the broken frame's body
                line, self.resync = line[m.start():], False
            if len(line) > MAX_HEADER_LINE or not line.endswith(b"\n"):
                self.resync = True
                raise FrameError(-32700, f"a header line is longer than {MAX_HEADER_LINE} bytes")
            if not line.strip():
                if not seen:
                    continue  # blank lines between frames
                break
            seen = True
            name, sep, value = line.partition(b":")
            if not sep:
                self.resync = True
                raise FrameError(-32700, f"malformed header line {line[:80]!r}")
            if name.strip().lower() == b"content-length":
                v = value.strip()
                if not v.isdigit() or len(v) > 18:
                    length = -1
                else:
                    length = int(v)
        if length is None:
            self.resync = True
            raise FrameError(-32700, "a message without a Content-Length header")
        if length < 0:
            self.resync = True
            raise FrameError(-32700, "the Content-Length header is not a whole number of bytes")
        if length > self.max_message:
            self.resync = True
            raise FrameError(-32600, f"a message of {length} bytes is over the server's limit of "
                                     f"{self.max_message} bytes")
        body = self.stream.read(length)
        if len(body) < length:
            return None  # the stream ended inside the body
        return body


def _error(protocol, msg_id, code: int, message: str) -> None:
    protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})


def _dispatch(ls: FairspecServer, body: bytes) -> None:
    """One message: checked, then handed to pygls (in the event loop's thread)."""
    protocol = ls.protocol
    try:
        raw = json.loads(body)
    except (ValueError, RecursionError) as e:
        _error(protocol, None, -32700, f"Parse error: the message is not JSON ({type(e).__name__})")
        return
    if not isinstance(raw, dict) or raw.get("jsonrpc") != "2.0":
        _error(protocol, raw.get("id") if isinstance(raw, dict) else None, -32600,
               "Invalid Request: not a JSON-RPC 2.0 message object")
        return
    msg_id = raw.get("id")
    method = raw.get("method")
    is_request = "method" in raw and "id" in raw
    if "method" in raw and not isinstance(method, str):
        if is_request:
            _error(protocol, msg_id, -32600, "Invalid Request: the method is not a string")
        return
    if is_request and not isinstance(msg_id, (int, str)):
        _error(protocol, None, -32600, "Invalid Request: the id is not a number or a string")
        return
    if method is not None and not ls.initialized and method not in ("initialize", "exit"):
        if is_request:
            _error(protocol, msg_id, -32002, f"Server not initialized: {method} before initialize")
        return  # a notification before initialize is dropped (the protocol says so)
    try:
        message = protocol.structure_message(raw)
    except Exception as e:  # noqa: BLE001 - wrongly typed params: an error response, never a dead request
        if is_request:
            why = str(getattr(e, "__cause__", None) or e) or type(e).__name__
            _error(protocol, msg_id, -32602, f"Invalid params for {method}: {why.splitlines()[0][:200]}")
        else:
            log.warning("dropped a notification %r with invalid params", method)
        return
    if method == "initialize":
        ls.initialized = True
    protocol.handle_message(message)


async def _serve(ls: FairspecServer, stdin, stop: threading.Event) -> None:
    """Frames are read by a daemon thread (a blocked read of stdin never delays the exit) and
    handled here, in the event loop's thread, one at a time; at most IN_FLIGHT read ahead."""
    loop = asyncio.get_running_loop()
    ls._loop = loop
    frames: asyncio.Queue = asyncio.Queue()
    room = threading.Semaphore(IN_FLIGHT)

    def pump() -> None:
        reader = FrameReader(stdin)
        while True:
            room.acquire()
            try:
                item = reader.read()
            except FrameError as e:
                item = e
            except (OSError, ValueError):  # stdin closed under us
                item = None
            try:
                loop.call_soon_threadsafe(frames.put_nowait, item)
            except RuntimeError:  # the loop is closed: the server is exiting
                return
            if item is None:
                return

    threading.Thread(target=pump, daemon=True, name="fairspec-lsp-reader").start()
    while not stop.is_set():
        item = await frames.get()
        room.release()
        if item is None:
            break
        if isinstance(item, FrameError):
            _error(ls.protocol, None, item.code, str(item))
            continue
        try:
            _dispatch(ls, item)
        except Exception:  # noqa: BLE001 - one bad message never ends the server
            log.exception("could not handle a message")


def main() -> int:
    """Serve over stdio. Anything a library prints goes to stderr, never into the protocol stream."""
    from pygls.io_ import StdoutWriter

    from fairspec import filecache

    filecache.enable()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    server._stop_event = stop = threading.Event()
    server.protocol.set_writer(StdoutWriter(protocol_out))
    try:
        # the reader thread gets its own buffered stream on a duplicate of fd 0: a daemon thread
        # blocked in sys.stdin's reader would abort the interpreter's shutdown (its lock is held)
        try:
            stdin = os.fdopen(os.dup(0), "rb")
        except OSError:
            stdin = sys.stdin.buffer
        asyncio.run(_serve(server, stdin, stop))
    except BrokenPipeError:
        log.error("the client closed the connection")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()
    return 0
