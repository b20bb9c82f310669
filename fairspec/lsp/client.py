"""A small LSP client over stdio (pygls's own), for the tests and bench/lsp.py.

    async with Session() as s:            # starts `fairspec lsp` as a subprocess
        uri = s.open(path)                # didOpen with the file's text
        diags = await s.diagnostics(uri)  # the next publishDiagnostics for it
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

from lsprotocol import types as T
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path
from pygls.workspace.position_codec import PositionCodec

from fairspec.diagnostics import file_text
from fairspec.lsp.positions import lines_of

UTF16 = PositionCodec(T.PositionEncodingKind.Utf16)  # what a client says when it offers nothing else


def server_command() -> list[str]:
    exe = shutil.which("fairspec")
    return [exe, "lsp"] if exe else [sys.executable, "-m", "fairspec.cli", "lsp"]


class Session:
    """One `fairspec lsp` process and an initialised client talking to it."""

    def __init__(self, command: list[str] | None = None, wait: float = 300.0,
                 capabilities: T.ClientCapabilities | None = None):
        self.command = command or server_command()
        self.capabilities = capabilities or T.ClientCapabilities()
        self.encoding = None  # the position encoding the server chose
        self.wait = wait  # a guard against a hung server, never a speed requirement
        self.client = LanguageClient("fairspec-test", "0")
        self.published: dict[str, list[tuple[int, list[T.Diagnostic]]]] = {}
        self.published_versions: dict[str, list[int | None]] = {}
        self.versions: dict[str, int] = {}
        self.texts: dict[str, str] = {}
        self._news = asyncio.Condition()
        self.pid: int | None = None
        self.refreshes: list[str] = []  # the refresh requests the server sent (answered, whatever was declared)

        @self.client.feature(T.WORKSPACE_SEMANTIC_TOKENS_REFRESH)
        def on_tokens_refresh(params: None) -> None:
            self.refreshes.append(T.WORKSPACE_SEMANTIC_TOKENS_REFRESH)

        @self.client.feature(T.WORKSPACE_CODE_LENS_REFRESH)
        def on_lens_refresh(params: None) -> None:
            self.refreshes.append(T.WORKSPACE_CODE_LENS_REFRESH)

        @self.client.feature(T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        async def on_diagnostics(params: T.PublishDiagnosticsParams):
            async with self._news:
                self.published.setdefault(params.uri, []).append((len(self.published.get(params.uri, [])),
                                                                  list(params.diagnostics)))
                self.published_versions.setdefault(params.uri, []).append(params.version)
                self._news.notify_all()

    async def __aenter__(self) -> "Session":
        env = dict(os.environ)
        env.pop("FAIRSPEC_DEBUG", None)
        await self.client.start_io(*self.command, env=env)
        self.pid = self.client._server.pid  # noqa: SLF001 - the benchmark reads its memory
        # pygls pipes the server's stderr and never reads it: a server that logs more than the pipe
        # holds would block on the write (and never exit); it is read here, its tail kept
        self.stderr = bytearray()
        self._drain = asyncio.ensure_future(self._read_stderr(self.client._server.stderr))  # noqa: SLF001
        got = await self.client.initialize_async(T.InitializeParams(
            process_id=os.getpid(), root_uri=from_fs_path(os.getcwd()),
            capabilities=self.capabilities))
        self.encoding = got.capabilities.position_encoding
        self.client.initialized(T.InitializedParams())
        return self

    async def _read_stderr(self, stream, keep: int = 1 << 20) -> None:
        while stream is not None:
            chunk = await stream.read(1 << 16)
            if not chunk:
                return
            self.stderr += chunk
            del self.stderr[:-keep]

    async def __aexit__(self, *exc) -> None:
        try:
            await asyncio.wait_for(self.client.shutdown_async(None), self.wait)
            self.client.exit(None)
        finally:
            await asyncio.wait_for(self.client.stop(), self.wait)
            if not self._drain.done():      # the server's stderr ends with it; a guard, never a wait
                self._drain.cancel()

    # ------------------------------------------------------------ documents
    def open(self, path, text: str | None = None) -> str:
        """didOpen a file (its text, or ``text``); a path that is a uri (``untitled:...``) is opened as is."""
        if ":" in str(path) and not Path(path).is_absolute():
            uri = str(path)
        else:
            path = Path(path).resolve()
            uri = from_fs_path(str(path))
            text = file_text(str(path)) if text is None else text  # as an editor reads it: no newline translation
        self.versions[uri] = 1
        self.texts[uri] = text
        self.client.text_document_did_open(T.DidOpenTextDocumentParams(
            T.TextDocumentItem(uri=uri, language_id="fairspec", version=1, text=text)))
        return uri

    async def opened(self, path, text: str | None = None) -> tuple[str, str, list[T.Diagnostic]]:
        """Open a document and wait for its first diagnostics: (uri, text, diagnostics)."""
        uri = self.open(path, text)
        diags = await self.diagnostics(uri, after=0)
        return uri, self.texts[uri], diags

    def change(self, uri: str, text: str) -> None:
        """Replace the whole text (a full-content change)."""
        self.versions[uri] += 1
        self.texts[uri] = text
        self.client.text_document_did_change(T.DidChangeTextDocumentParams(
            T.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            [T.TextDocumentContentChangeWholeDocument(text=text)]))

    def edit(self, uri: str, start: T.Position, end: T.Position, text: str) -> None:
        """An incremental change: replace the range start-end (UTF-16 units) with text."""
        self.versions[uri] += 1
        rng = T.Range(start, end)
        self.texts[uri] = apply_edits(self.texts[uri], [T.TextEdit(range=rng, new_text=text)])
        self.client.text_document_did_change(T.DidChangeTextDocumentParams(
            T.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            [T.TextDocumentContentChangePartial(range=rng, text=text)]))

    def close(self, uri: str) -> None:
        self.client.text_document_did_close(T.DidCloseTextDocumentParams(T.TextDocumentIdentifier(uri=uri)))

    def seen(self, uri: str) -> int:
        return len(self.published.get(uri, []))

    def _current(self, uri: str, k: int) -> bool:
        """Is publication ``k`` of uri about the client's current text of it? A publication for an older version
        is not: the server linted that text before it read the client's later changes, which were on their way
        (how many such arrive, and when, is the two processes' speed). One without a version (a file the
        client has not open), or of a document whose version the client does not track, is taken as it is."""
        v, want = self.published_versions[uri][k], self.versions.get(uri)
        return v is None or want is None or v >= want

    async def diagnostics(self, uri: str, after: int | None = None) -> list[T.Diagnostic]:
        """The first diagnostics published for uri after `after` earlier publications (default: the next) about
        the client's current text of it: publications for an older version are skipped (:meth:`_current`)."""
        after = self.seen(uri) if after is None else after

        def first():
            return next((k for k in range(after, self.seen(uri)) if self._current(uri, k)), None)

        async def ready():
            async with self._news:
                await self._news.wait_for(lambda: first() is not None)

        await asyncio.wait_for(ready(), self.wait)
        return self.published[uri][first()][1]

    # ------------------------------------------------------------ requests
    @staticmethod
    def pos(text: str, needle: str, offset: int = 0) -> T.Position:
        """The LSP position (UTF-16 units; lines cut at \\n, \\r\\n and \\r) of `needle` (plus offset
        characters) in text."""
        return lines_of(text).position(text.index(needle) + offset, UTF16)

    def _doc(self, uri):
        return T.TextDocumentIdentifier(uri=uri)

    async def hover(self, uri, pos):
        return await asyncio.wait_for(self.client.text_document_hover_async(
            T.HoverParams(text_document=self._doc(uri), position=pos)), self.wait)

    async def definition(self, uri, pos):
        return await asyncio.wait_for(self.client.text_document_definition_async(
            T.DefinitionParams(text_document=self._doc(uri), position=pos)), self.wait)

    async def references(self, uri, pos, include_declaration=True):
        return await asyncio.wait_for(self.client.text_document_references_async(
            T.ReferenceParams(context=T.ReferenceContext(include_declaration=include_declaration),
                              text_document=self._doc(uri), position=pos)), self.wait)

    async def completion(self, uri, pos, trigger: str | None = None):
        """Completion at pos: invoked (Ctrl-Space), or as an editor asks when ``trigger`` was typed."""
        context = None if trigger is None else T.CompletionContext(
            trigger_kind=T.CompletionTriggerKind.TriggerCharacter, trigger_character=trigger)
        return await asyncio.wait_for(self.client.text_document_completion_async(
            T.CompletionParams(text_document=self._doc(uri), position=pos, context=context)), self.wait)

    async def symbols(self, uri):
        return await asyncio.wait_for(self.client.text_document_document_symbol_async(
            T.DocumentSymbolParams(text_document=self._doc(uri))), self.wait)

    async def code_actions(self, uri, diagnostics):
        rng = diagnostics[0].range
        return await asyncio.wait_for(self.client.text_document_code_action_async(
            T.CodeActionParams(text_document=self._doc(uri), range=rng,
                               context=T.CodeActionContext(diagnostics=list(diagnostics)))), self.wait)

    async def formatting(self, uri):
        return await asyncio.wait_for(self.client.text_document_formatting_async(
            T.DocumentFormattingParams(text_document=self._doc(uri),
                                       options=T.FormattingOptions(tab_size=2, insert_spaces=True))),
            self.wait)


def apply_edits(text: str, edits, codec: PositionCodec = UTF16) -> str:
    """Apply LSP TextEdits (non-overlapping) to text as a client does: positions in the codec's
    units (UTF-16 by default), lines cut at \\n, \\r\\n and \\r."""
    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        lines = lines_of(text)
        a, b = lines.from_position(e.range.start, codec), lines.from_position(e.range.end, codec)
        text = text[:a] + e.new_text + text[b:]
    return text
