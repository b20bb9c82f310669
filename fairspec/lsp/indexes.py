"""The language server's documents and their indexes (:class:`Indexes`, a part of
:class:`fairspec.lsp.server.FairspecServer`): the one background lint thread, the diagnostics it publishes,
and which index answers a request.

Per open document the server keeps the index of its current text (:attr:`Indexes.indexes`), the last index
whose text parsed (:attr:`Indexes.good`) and, while the text does not parse, one of it without its
declarations that do not parse (:attr:`Indexes.partial`, built after the text's diagnostics are published and
put in place whole: until then the older one answers). A request is answered from :meth:`Indexes.index_for`
(or :meth:`Indexes.indexes_at`, each index with the request's position moved into its own text); an
answer that is an edit only from :meth:`Indexes.current_index`. A client answered semantic tokens or code
lenses from an older index (:meth:`Indexes.answered`) is asked to ask again once the newer one is in place
(:meth:`Indexes.refresh`).

Linting runs in one background thread: a change after a quiet spell at once, a burst of changes debounced
(:data:`DEBOUNCE` seconds after the last one); its result is sent from the event loop's thread only if the
document is still open at the version linted (a close or a newer text meanwhile drops it), so requests are
answered meanwhile and nothing is published after a close; a document over :data:`MAX_DOCUMENT` bytes
(UTF-8) is not analysed live: it gets one diagnostic saying so (``fairspec lint`` still checks it).

This class holds no protocol of its own: it is mixed into the pygls server, whose workspace, uris and
positions (``path_of``, ``uri_of``, ``to_lsp``, ``span_now``) and sending it uses.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from pathlib import Path

from lsprotocol import types as T
from pygls.capabilities import get_capability

from fairspec.files import real_path
from fairspec.lsp import analysis as A
from fairspec.lsp.disk import MAX_SPEC_BYTES, confined as _confined, unsaved as _unsaved
from fairspec.lsp.positions import changed

log = logging.getLogger("fairspec.lsp")

# bytes analysed as you type: by default what lint parses (fairspec.syntax.parser.MAX_SPEC_BYTES)
MAX_DOCUMENT = int(os.environ.get("FAIRSPEC_LSP_MAX_DOCUMENT", MAX_SPEC_BYTES))
DEBOUNCE = 0.05          # seconds without a change before a burst of changes is linted


def _size(n: int) -> str:
    return f"{n} bytes" if n < 10 << 10 else f"{n / (1 << 10):.0f} KiB" if n < 10 << 20 else f"{n / (1 << 20):.1f} MiB"


class Indexes:
    """The per-document indexes and the lint thread of :class:`fairspec.lsp.server.FairspecServer`."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.indexes: dict[str, A.Index] = {}      # uri -> the index of its current text
        self.good: dict[str, A.Index] = {}         # uri -> the last index whose text parsed
        self.partial: dict[str, A.Index] = {}      # uri -> its text after good's, without what does not parse
        self.published: dict[str, set[str]] = {}   # uri -> the uris it published diagnostics to
        self.imports: dict[str, set[str]] = {}     # uri -> the files its last lint read (imports)
        self._lock = threading.RLock()             # one analysis at a time (filecache, the chunk cache)
        self._pending: dict[str, float] = {}       # uri -> when it last changed (waiting to be linted)
        self._linted: dict[str, float] = {}        # uri -> when its last lint ended
        self._wake = threading.Condition()
        self._loop: asyncio.AbstractEventLoop | None = None   # the event loop's (fairspec.lsp.transport.serve)
        self._worker: threading.Thread | None = None
        self._read: dict[str, dict] = {}           # uri -> the open texts its last lint read (for recover)
        self._behind: set[str] = set()             # uris answered tokens or lenses from an older index (refresh)

    # ------------------------------------------------------------ analysis
    def sources(self) -> dict[str, str]:
        """The open documents' texts (a document over MAX_DOCUMENT is read from its file instead)."""
        out = {}
        for uri, doc in list(self.workspace.text_documents.items()):
            p = self.path_of(uri)
            if p and not self.too_large(uri):
                out[p] = doc.source
        return out

    def too_large(self, uri: str) -> int:
        """The document's size in bytes (UTF-8) when it is over MAX_DOCUMENT, else 0."""
        doc = self.workspace.text_documents.get(uri)
        if doc is None or len(doc.source) * 4 <= MAX_DOCUMENT:
            return 0  # (a code point is at most 4 bytes)
        n = len(doc.source.encode("utf-8", "surrogatepass"))
        return n if n > MAX_DOCUMENT else 0

    def analyse(self, uri: str, recover: bool = True) -> A.Index | None:
        """Lint the document's text and keep its index; a text that does not parse keeps the last
        :attr:`partial` (an older text's, whole) until :meth:`recover` replaces it: at once with
        ``recover``, else the caller's to call with ``_read[uri]`` (the worker, after the diagnostics)."""
        path = self.path_of(uri)
        if not path or self.too_large(uri):
            return None
        with self._lock:
            self._read[uri] = sources = self.sources()
            idx = A.analyse(path, sources)
        if path in self.unsaved:
            idx.result.diagnostics[:] = [_unsaved(d) for d in idx.result.diagnostics]
        self.indexes[uri] = idx
        if idx.ok:
            self.good[uri] = idx
            self.partial.pop(uri, None)
        # while a text does not parse, the files its partial index read stay (its imports, until recover)
        self.imports[uri] = ({str(real_path(m.file)) for m in idx.modules}
                             | {str(real_path(d.span.file)) for d in idx.diagnostics if d.span is not None}
                             | (set() if idx.ok else self.imports.get(uri, set()))) - {path}
        if recover and not idx.ok:
            self.recover(uri, path, sources)
        return idx

    def recover(self, uri: str, path: str, sources: dict[str, str]) -> None:
        """Index the texts without their declarations that do not parse (navigation while a line is
        half typed; its diagnostics are never published: the text's parse error is) as :attr:`partial`,
        put in place whole once built: a request meanwhile is answered from the older one."""
        good = self.good.get(uri)
        try:
            with self._lock:
                rec = A.analyse(path, sources, recover=True)
        except Exception:  # noqa: BLE001 - the text's own diagnostics went out; navigation keeps the older
            log.exception("analysing the parsable part failed")
            return
        if rec.ok:  # put in place in the event loop's thread: a request that sees it comes after its refresh
            self._on_loop(self._place_partial, uri, path, rec, good)

    def _place_partial(self, uri: str, path: str, rec: A.Index, good: A.Index | None) -> None:
        if uri not in self.workspace.text_documents or self.good.get(uri) is not good:
            return  # closed, or a text that parsed was linted since: its index is newer
        self.partial[uri] = rec
        self.imports[uri] = self.imports.get(uri, set()) | ({str(real_path(m.file)) for m in rec.modules} - {path})
        self.refresh(uri, rec)

    def answered(self, uri: str, idx: A.Index | None) -> None:
        """Semantic tokens or lenses of ``uri`` answered from ``idx``: none, or one not of the texts open
        now (their lint or partial index to come), leaves the client's behind until :meth:`refresh`."""
        doc = self.workspace.text_documents.get(uri)
        if doc is not None and (idx is None or not idx.ok or not self._reads_open_texts(idx, doc.source)):
            self._behind.add(uri)

    def refresh(self, uri: str, idx: A.Index) -> None:
        """``idx``, of the texts open now, is in place (event loop's thread): a client behind (:meth:`answered`)
        is asked to ask again, workspace/semanticTokens/refresh and /codeLens/refresh, each only if it
        declared support; for every document (each answered from an older index again is marked again)."""
        doc = self.workspace.text_documents.get(uri)
        if (uri not in self._behind or doc is None or uri in self._pending or not self.initialized or self.shut_down
                or self.exiting or not self._reads_open_texts(idx, doc.source)):
            return
        self._behind.clear()
        caps = self.client_capabilities
        if get_capability(caps, "workspace.semantic_tokens.refresh_support", False):
            self.workspace_semantic_tokens_refresh(None)
        if get_capability(caps, "workspace.code_lens.refresh_support", False):
            self.workspace_code_lens_refresh(None)

    def schedule(self, uri: str) -> None:
        """Lint ``uri`` in the background once it has not changed for DEBOUNCE seconds."""
        with self._wake:
            self._pending[uri] = time.monotonic()
            self.indexes.pop(uri, None)  # a request meanwhile uses the last good index
            self._wake.notify()
        if self._worker is None:
            self._worker = threading.Thread(target=self._work, daemon=True, name="fairspec-lint")
            self._worker.start()

    def schedule_importers(self, uri: str) -> None:
        """Lint again every open document whose last lint read ``uri`` (an import, perhaps indirect):
        its text changed, or it was opened or closed (its importers read the buffer, then the file)."""
        path = self.path_of(uri)
        for other, files in list(self.imports.items()):
            if other != uri and path in files and other in self.workspace.text_documents:
                self.schedule(other)

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

    def _on_loop(self, fn, *args) -> None:
        """Run fn in the event loop's thread (the protocol's writer and the documents are its)."""
        if self._loop is not None and threading.current_thread() is not threading.main_thread():
            self._loop.call_soon_threadsafe(fn, *args)
        else:
            fn(*args)

    def _publish(self, uri: str, diags: list, version: int | None = None) -> None:
        if self.exiting:    # a lint that ends after `exit`: its writer is closed, and pygls would log
            return          # every failed send and its failed report (megabytes on stderr)
        self.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=uri, diagnostics=diags,
                                                                          version=version))

    def _stale(self, uri: str, version) -> bool:
        """A newer text of ``uri`` came (or it was closed) while it was linted: drop the result."""
        doc = self.workspace.text_documents.get(uri)
        return doc is None or doc.version != version or uri in self._pending

    def _deliver(self, uri: str, version, by_uri: dict[str, list], idx: A.Index | None = None) -> None:
        """Publish one lint's diagnostics (in the event loop's thread, where didClose and didChange
        are handled: a result for a closed or superseded text is dropped here, never sent after the
        close's empty list); then, for the index of a text that parsed, :meth:`refresh`."""
        if self._stale(uri, version):
            return
        sent = set()
        for target, diags in by_uri.items():
            if target != uri and target in self.workspace.text_documents:
                continue  # an open imported file publishes its own
            self._publish(target, diags, version if target == uri else None)
            sent.add(target)
        for old in self.published.get(uri, set()) - sent:
            if old not in self.workspace.text_documents:
                self._publish(old, [])
        self.published[uri] = sent
        if idx is not None and idx.ok:
            self.refresh(uri, idx)

    def lint_and_publish(self, uri: str) -> None:
        doc = self.workspace.text_documents.get(uri)
        version = doc.version if doc is not None else None
        size = self.too_large(uri)
        if size:
            d = T.Diagnostic(range=T.Range(T.Position(0, 0), T.Position(0, 0)), severity=T.DiagnosticSeverity.Warning,
                             code="FS106", source="fairspec",
                             message=f"this document is {_size(size)}, over the language server's "
                                     f"limit of {_size(MAX_DOCUMENT)} for analysing as you type "
                                     f"(FAIRSPEC_LSP_MAX_DOCUMENT): it is not analysed here; `fairspec lint` "
                                     f"reads spec files up to {_size(MAX_SPEC_BYTES)} (FS107 above): split "
                                     f"it into files joined with import")
            self.indexes.pop(uri, None)
            self.good.pop(uri, None)
            self.partial.pop(uri, None)
            self._on_loop(self._deliver, uri, version, {uri: [d]})
            return
        try:
            idx = self.analyse(uri, recover=False)  # the diagnostics first, then the partial index
        except Exception as e:  # noqa: BLE001 - a fairspec bug must not take the editor's server down
            log.exception("lint failed")
            self._on_loop(self.window_log_message,
                          T.LogMessageParams(T.MessageType.Error, f"fairspec: internal error: {e}"))
            return
        if idx is None:
            return
        root = Path(idx.path)
        by_uri: dict[str, list[T.Diagnostic]] = {uri: []}
        for d in idx.diagnostics:
            target = uri
            if d.span is not None and real_path(d.span.file) != root:
                if _confined(d.span.file, idx.path):
                    target = self.uri_of(d.span.file)
            by_uri.setdefault(target, []).append(self.to_lsp(d, idx))
        self._on_loop(self._deliver, uri, version, by_uri, idx)
        if not idx.ok and uri not in self._pending:  # (a newer text waiting: its own lint recovers it)
            self.recover(uri, idx.path, self._read.get(uri, {}))

    def current_index(self, uri: str, build: bool = False) -> A.Index | None:
        """The index of the document's text as it is now, and of the open documents it imports: for
        an answer that is an edit (a quick fix, a rename), which the client applies to its current
        text. The last lint's when it read these texts; else, with ``build``, one made now (after a
        lint in progress); else None (a stale index's spans would edit the wrong text)."""
        doc = self.workspace.text_documents.get(uri)
        if doc is None or self.too_large(uri):
            return None
        idx = self.indexes.get(uri)
        if idx is not None and self._reads_open_texts(idx, doc.source):
            return idx
        if not build:
            return None
        with self._lock:
            idx = self.analyse(uri, recover=False)  # an edit is never computed from a partial index
        return idx if idx is not None and self._reads_open_texts(idx, doc.source) else None

    def _reads_open_texts(self, idx: A.Index, source: str) -> bool:
        if idx.source != source:
            return False
        for file, text in idx.texts.items():
            other = self.workspace.text_documents.get(self.uri_of(file))
            if other is not None and other.source != text:
                return False
        return True

    def indexes_at(self, uri: str, where: tuple[str, int, int]) -> list[tuple[A.Index, tuple[str, int, int]]]:
        """The indexes that may answer a request at ``where`` (in the document's text as it is now),
        first the best, each with that position in its own text: :meth:`index_for`'s, then the last
        good one. An index of an older text (while the text waits for its lint, or the last good one
        while a line is half typed) answers only where the texts agree (a position in their common
        prefix or suffix, or in lines difflib matches); inside the changed part, nothing -- never an
        answer about another place -- and an index without the declarations that do not parse
        nothing inside those, nor about a name whose declaration changed since (it is not there any more
        as that index knows it). Spans answered go back through :meth:`location_now`."""
        first = self.index_for(uri)
        doc = self.workspace.text_documents.get(uri)
        if first is None or doc is None:
            return [(first, where)] if first is not None else []
        out = []
        for idx in [first] + [g for g in [self.good.get(uri)] if g is not None and g is not first]:
            at = where
            if idx.source is not None and idx.source != doc.source:
                old = changed(idx.source, doc.source).to_older(where[1], where[2])
                at = None if old is None else (where[0], *old)
            if at is None or idx.in_broken(at[0], at[1]):
                continue
            sym = A.symbol_at(idx, *at)  # its whole declaration unchanged, or the answer is not about the text now
            if sym is None or self.span_now(getattr(sym.node, "span", None) or sym.span, idx) is not None:
                out.append((idx, at))
        return out

    def importers_of(self, uri: str) -> list[A.Index]:
        """The indexes (as they are: none is built here) of the other open documents whose last lint
        read ``uri``'s file: what they apply of a policy declared there (completion in a library)."""
        path = self.path_of(uri)
        out = []
        for other, files in list(self.imports.items()):
            idx = self.indexes.get(other) or self.good.get(other)
            if other != uri and path in files and other in self.workspace.text_documents and idx is not None:
                out.append(idx)
        return out

    def index_for(self, uri: str) -> A.Index | None:
        """The document's index; while its text does not parse, the index of that text without the
        declarations that do not parse (:attr:`partial`), else the last good one; while a newer text
        waits to be linted, the last of those (a request never waits for a lint in progress: without
        an index it gets an empty answer). Positions answered from it go through
        :meth:`location_now` (those in a changed part: no answer)."""
        idx = self.indexes.get(uri)
        if idx is None and uri not in self._pending and self._lock.acquire(blocking=False):
            try:
                idx = self.analyse(uri)
            finally:
                self._lock.release()
        if idx is not None and idx.ok:
            return idx
        return self.partial.get(uri) or self.good.get(uri, idx)
