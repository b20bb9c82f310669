"""A clean edit's semantic tokens and code lenses: asked for in the gap between the edit and the index
of the new text, they are answered from the older index, and the server then asks the client to ask
again (workspace/semanticTokens/refresh, workspace/codeLens/refresh; fairspec.lsp.indexes.Indexes.refresh)
once the new index is in place -- only a client that declared it supports them.

Whether a request lands in that gap used to depend on the machine's speed; here the order is held:
the server runs with its background lint held at a gate (GATED: the lint thread waits inside
``analysis.analyse``, holding the analysis lock, while the file ``hold`` exists, and says so with the
file ``entered``), so a request is sent while the new index certainly is not there, and the gate is
opened after its answer. A real client over stdio (fairspec/lsp/client.py); waits are guards, never
speed requirements.
"""

from __future__ import annotations

import asyncio

import pytest

import cli_forkserver

pytest.importorskip("pygls")

from lsprotocol import types as T  # noqa: E402

from fairspec.lsp.client import Session  # noqa: E402
from test_lsp_half_typed import ADULT, GROUP, REFRESH, _doc, _tokens  # noqa: E402

CLEAN = GROUP + "group younger = age < 30\n"   # a declaration added: the text parses
BOTH = [T.WORKSPACE_SEMANTIC_TOKENS_REFRESH, T.WORKSPACE_CODE_LENS_REFRESH]

GATED = """
import os, threading, time
from pathlib import Path
from fairspec.lsp import analysis as A
_analyse, gate = A.analyse, Path(os.environ["FAIRSPEC_TEST_LINT_GATE"])
def analyse(path, sources=None, recover=False):
    if threading.current_thread().name == "fairspec-lint" and (gate / "hold").exists():
        (gate / "entered").touch()
        end = time.monotonic() + 600  # a guard against a test that never opens the gate (longer than its wait)
        while (gate / "hold").exists() and time.monotonic() < end:
            time.sleep(0.01)
    return _analyse(path, sources, recover)
A.analyse = analyse
from fairspec.lsp.server import main; main()
"""


async def _lenses(s: Session, uri: str) -> list[T.CodeLens]:
    return await asyncio.wait_for(s.client.text_document_code_lens_async(T.CodeLensParams(text_document=_doc(uri))),
                                  s.wait)


async def _exists(path, guard: float = 300.0) -> None:
    """Wait until ``path`` exists (the server's lint thread reached the gate). A guard, never a speed
    requirement."""
    loop = asyncio.get_running_loop()
    end = loop.time() + guard
    while not path.exists():
        assert loop.time() < end, "the lint thread never reached the gate"
        await asyncio.sleep(0.02)


@pytest.mark.parametrize("declared", [True, False], ids=["refresh-declared", "not-declared"])
@pytest.mark.parametrize("gap", ["being-linted", "waiting"])
def test_tokens_and_lenses_asked_before_a_clean_edit_is_indexed_are_refreshed_once_it_is(
        tmp_path, monkeypatch, declared, gap):
    """``being-linted``: the request comes while the lint thread is analysing the new text (the lock is
    held: the request does not build an index itself). ``waiting``: while the new text waits for the lint
    thread, busy with another document (held at the gate)."""
    monkeypatch.setenv("FAIRSPEC_TEST_LINT_GATE", str(tmp_path))
    hold, entered = tmp_path / "hold", tmp_path / "entered"

    async def scenario():
        async with Session(cli_forkserver.python_c(GATED), wait=120,
                           capabilities=REFRESH if declared else None) as s:
            uri, text, _ = await s.opened(ADULT)
            assert await _tokens(s, uri, text) and await _lenses(s, uri)  # the text's own index: not behind
            new = text.replace(GROUP, CLEAN)
            n = s.seen(uri)
            hold.touch()
            if gap == "being-linted":
                s.change(uri, new)
                await _exists(entered)              # the lint of the new text is held, the lock with it
            else:
                s.open("untitled:busy.fair", "# the lint thread is held on this one\n")
                await _exists(entered)
                s.change(uri, new)                  # waits for the lint thread
            toks = await _tokens(s, uri, new)       # the older index's, its positions moved into the new text
            assert toks and "younger" not in {w for _, _, w, _ in toks}
            assert ("older", "variable") in {(w, t) for _, _, w, t in toks}
            assert await _lenses(s, uri)
            assert s.seen(uri) == n and s.refreshes == []  # nothing linted yet: the gate holds it

            hold.unlink()
            diags = await s.diagnostics(uri, n)
            assert not [d for d in diags if d.severity == T.DiagnosticSeverity.Error], diags
            assert await s.hover(uri, s.pos(new, "model mlp", 6))  # a round trip after the lint's messages
            assert s.refreshes == (BOTH if declared else [])
            # asked again: the new index answers, the new group is a token
            assert ("younger", "variable") in {(w, t) for _, _, w, t in await _tokens(s, uri, new)}
            assert await _lenses(s, uri)

            # edited again and linted, nothing asked meanwhile: no refresh (nobody is behind)
            again = new.replace(CLEAN, CLEAN + "group oldest = age >= 60\n")
            n = s.seen(uri)
            s.change(uri, again)
            await s.diagnostics(uri, n)
            assert await s.hover(uri, s.pos(again, "model mlp", 6))
            assert s.refreshes == (BOTH if declared else [])

    asyncio.run(scenario())
