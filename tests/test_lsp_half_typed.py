"""While a line is half typed the rest of the file keeps working in the editor.

A text that does not parse is also indexed without its declarations that do not parse
(fairspec.lsp.analysis.parse_recovering): hover, definition, references, completion, the outline,
folding, code lenses and semantic tokens answer about the text the client has now outside the
half-typed declaration; inside it the last index whose text parsed answers where the texts agree;
the diagnostics are still the text's parse error. No answer ever points at text that is not what
the index read there. A real client over stdio (fairspec/lsp/client.py); waits are guards, never
speed requirements.
"""

from __future__ import annotations

import asyncio

import pytest

import cli_forkserver

pytest.importorskip("pygls")

from lsprotocol import types as T  # noqa: E402

from conftest import EXAMPLES  # noqa: E402
from fairspec.lsp.client import Session  # noqa: E402

ADULT = EXAMPLES / "adult" / "adult.fair"
GROUP = "group older = age >= 40\n"
# a declaration added and an incomplete one after it: the text does not parse, lines move down by 3
HALF = GROUP + "group younger = age < 30\nproperty p:\n  individual fairness of\n"


def run(scenario):
    asyncio.run(scenario())


def _doc(uri):
    return T.TextDocumentIdentifier(uri=uri)


def _at(text: str, rng: T.Range) -> str:
    """The text of a one-line range (the adult spec is ASCII: UTF-16 units are characters)."""
    assert rng.start.line == rng.end.line, rng
    return text.split("\n")[rng.start.line][rng.start.character:rng.end.character]


def _names_where(text: str, x: T.DocumentSymbol) -> bool:
    """The symbol's selection range is its name in the text (an import's: the import line)."""
    sel = _at(text, x.selection_range)
    return sel == x.name.split(" for ")[0] or (x.detail == "import" and sel == f'import "{x.name}"')


def _flat(symbols) -> list:
    out = []
    for x in symbols or []:
        out.append(x)
        out += _flat(x.children)
    return out


async def _tokens(s: Session, uri: str, text: str) -> list[tuple[int, int, str, str]]:
    """The semantic tokens decoded: (line, character, word, type)."""
    from fairspec.lsp.analysis import TOKEN_TYPES

    toks = await s.client.text_document_semantic_tokens_full_async(T.SemanticTokensParams(text_document=_doc(uri)))
    out, line, col, lines = [], 0, 0, text.split("\n")
    for i in range(0, len(toks.data), 5):
        d = toks.data[i:i + 5]
        line += d[0]
        col = d[1] if d[0] else col + d[1]
        out.append((line, col, lines[line][col:col + d[2]], TOKEN_TYPES[d[3]]))
    return out


async def _answers(s: Session, uri: str, text: str) -> dict:
    """What the server says about places outside the edited part (positions in ``text``)."""
    hover_sex = await s.hover(uri, s.pos(text, "except {sex", 8))
    hover_mlp = await s.hover(uri, s.pos(text, "model mlp", 6))
    defn = await s.definition(uri, s.pos(text, "sex x older", 7))
    refs = await s.references(uri, s.pos(text, "group older", 6))
    comp = await s.completion(uri, s.pos(text, "prob(lr(", len("prob(lr(")))
    syms = _flat(await s.symbols(uri))
    for x in syms:  # every symbol is where its name is in the text sent
        assert _names_where(text, x), (x.name, x.selection_range)
    return {"hover sex": hover_sex and hover_sex.contents.value, "hover mlp": hover_mlp and hover_mlp.contents.value,
            "definition": defn and (defn.uri, defn.range.start),
            "references": sorted((r.range.start.line, r.range.start.character) for r in refs),
            "completion": {i.label for i in comp.items}, "symbols": [x.name for x in syms]}


async def _until(probe, guard: float = 300.0):
    """probe()'s first truthy answer. The index of a half-typed text without what does not parse is
    built after its diagnostics are published: a request may come before it. A guard, never a speed
    requirement."""
    loop = asyncio.get_running_loop()
    end = loop.time() + guard
    while not (got := await probe()):
        assert loop.time() < end, "the partial index never answered"
        await asyncio.sleep(0.02)
    return got


def test_every_request_keeps_answering_about_the_rest_of_the_file_while_a_line_is_half_typed():
    async def scenario():
        async with Session() as s:
            uri, text, diags = await s.opened(ADULT)
            assert not [d for d in diags if d.severity == T.DiagnosticSeverity.Error]
            before = await _answers(s, uri, text)
            assert "**feature** `sex`" in before["hover sex"] and "input width: 46" in before["hover mlp"]
            assert before["definition"] == (uri, s.pos(text, "older = age"))
            assert {"mlp", "older", "sex", "statistical_parity"} <= before["completion"]

            new = text.replace(GROUP, HALF)
            n = s.seen(uri)
            s.change(uri, new)
            diags = await s.diagnostics(uri, n)
            # the diagnostics are the text's: its syntax error, at its line and column
            errors = [d for d in diags if d.severity == T.DiagnosticSeverity.Error]
            assert len(errors) == 1 and errors[0].code == "FS101", diags
            assert errors[0].range.start == s.pos(new, "property p:", len("property p")), errors[0]
            assert "expected '{'" in errors[0].message

            await _until(lambda: s.hover(uri, s.pos(new, "group younger", 6)))  # the partial index is built
            after = await _answers(s, uri, new)
            assert after["hover sex"] == before["hover sex"] and after["hover mlp"] == before["hover mlp"]
            assert after["definition"] == (uri, s.pos(new, "older = age"))   # moved down with its line
            assert after["references"] == sorted((p.line, p.character) for p in (
                s.pos(new, "older = age"), s.pos(new, "older) <= 0.25")))
            assert before["completion"] | {"younger"} == after["completion"]  # the new group is offered
            at = before["symbols"].index("older") + 1
            assert after["symbols"] == before["symbols"][:at] + ["younger"] + before["symbols"][at:]
            # the declaration added while the text does not parse is known
            h = await s.hover(uri, s.pos(new, "group younger", 6))
            assert h is not None and "**group** `younger`" in h.contents.value
            # inside the half-typed declaration: nothing (no older text has it)
            assert await s.hover(uri, s.pos(new, "individual fairness", 2)) is None
            assert await s.definition(uri, s.pos(new, "property p:", 9)) is None

            lenses = await s.client.text_document_code_lens_async(T.CodeLensParams(text_document=_doc(uri)))
            for lens in lenses:   # each above its declaration in the text now
                line = new.split("\n")[lens.range.start.line]
                assert line.startswith(("property ", "apply ")) and lens.command.title.split()[1].split(".")[0] in line
            assert len(lenses) > 3
            folds = await s.client.text_document_folding_range_async(T.FoldingRangeParams(text_document=_doc(uri)))
            assert new.split("\n").index("property dt_parity_by_age {") in {f.start_line for f in folds}
            words = {(w, t) for _, _, w, t in await _tokens(s, uri, new)}
            assert {("younger", "variable"), ("older", "variable"), ("mlp", "class")} <= words

            # typed to the end: it parses, and the answers are the full ones again
            done = new.replace("property p:\n  individual fairness of\n",
                               "property p {\n  statistical_parity(dt, groups sex) <= 0.2\n}\n")
            n = s.seen(uri)
            s.change(uri, done)
            assert not [d for d in await s.diagnostics(uri, n) if d.severity == T.DiagnosticSeverity.Error]
            final = await _answers(s, uri, done)
            assert "p" in final["symbols"] and "younger" in final["symbols"]

    run(scenario)


def test_inside_the_half_typed_declaration_the_last_good_text_answers_where_unchanged():
    """A feature line of the feature set cut short: the whole feature set does not parse. The other
    lines of the set are answered from the last text that parsed; a use of the cut feature is not
    (its declaration changed: what that text says about it may not be true any more)."""
    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(ADULT)
            line = "  sex            : {Female, Male} protected\n"
            new = text.replace(line, "  sex            : {Female, Ma\n")
            n = s.seen(uri)
            s.change(uri, new)
            errors = [d for d in await s.diagnostics(uri, n) if d.severity == T.DiagnosticSeverity.Error]
            # the set left open runs on to the next declaration, where the parser stops
            assert [(d.code, d.range.start) for d in errors] == [("FS101", s.pos(new, "model mlp", 6))], errors

            h = await s.hover(uri, s.pos(new, "  race   ", 3))                 # a line of the cut set
            assert h is not None and "**feature** `race`" in h.contents.value
            h = await s.hover(uri, s.pos(new, "except {sex, race}", len("except {sex, ")))  # a use elsewhere
            assert h is not None and "**feature** `race`" in h.contents.value
            loc = await s.definition(uri, s.pos(new, "except {sex, race}", len("except {sex, ")))
            assert loc is not None and loc.range.start == s.pos(new, "race           :"), loc
            # sex's declaration is the line being typed: no answer about it, here or elsewhere
            assert await s.hover(uri, s.pos(new, "except {sex", 8)) is None
            assert await s.definition(uri, s.pos(new, "except {sex", 8)) is None
            # the outline: everything but the feature set, each where it is
            names = [x.name for x in _flat(await s.symbols(uri))]
            assert "Applicant" not in names and {"mlp", "older", "lr_close_scores"} <= set(names)
            assert await s.hover(uri, s.pos(new, "model mlp", 6)) is not None

    run(scenario)


def test_a_keyword_being_typed_below_a_declaration_leaves_it_in_the_outline():
    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(ADULT)
            new = text + "\nprop"
            n = s.seen(uri)
            s.change(uri, new)
            errors = [d for d in await s.diagnostics(uri, n) if d.severity == T.DiagnosticSeverity.Error]
            assert errors and errors[0].range.start.line == len(new.split("\n")) - 1, errors
            syms = _flat(await s.symbols(uri))
            assert syms[-1].name == "lr_close_scores" and _names_where(new, syms[-1])
            lenses = await s.client.text_document_code_lens_async(T.CodeLensParams(text_document=_doc(uri)))
            assert "check lr_close_scores" in {lens.command.title for lens in lenses}

    run(scenario)


def test_answers_right_after_each_change_point_at_the_text_sent():
    """No wait between a change and the requests: whichever index the server holds then (the last
    good one, the previous text's, the text's own), every position answered is in the text sent."""
    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(ADULT)
            for k in range(4):  # one more comment line above each time; the text parses every other time
                new = "# one more line above\n" * (k + 1) + (text.replace(GROUP, HALF) if k % 2 == 0 else text)
                s.change(uri, new)
                syms = _flat(await s.symbols(uri))
                for x in syms:
                    assert _names_where(new, x), (k, x.name)
                    assert new.split("\n")[x.range.start.line].strip(), (k, x.name)
                lenses = await s.client.text_document_code_lens_async(T.CodeLensParams(text_document=_doc(uri)))
                for lens in lenses:
                    assert new.split("\n")[lens.range.start.line].startswith(("property ", "apply ")), (k, lens)
                loc = await s.definition(uri, s.pos(new, "sex x older", 7))
                assert loc is None or loc.range.start == s.pos(new, "older = age"), (k, loc)
                for _, _, word, kind in await _tokens(s, uri, new):
                    if kind == "variable":  # a group: only where a group's name is
                        assert word in ("older", "younger"), (k, word)

    run(scenario)


# `fairspec lsp` whose index of a text without its declarations that do not parse waits until a file
# exists: the moment between a half-typed text's diagnostics and that index, held open
GATED = """
import os, time
from fairspec.lsp import analysis as A
_analyse, gate = A.analyse, os.environ["FAIRSPEC_TEST_RECOVER_GATE"]
def analyse(path, sources=None, recover=False):
    end = time.monotonic() + 600  # a guard against a test that never opens the gate (longer than its wait)
    while recover and not os.path.exists(gate) and time.monotonic() < end:
        time.sleep(0.01)
    return _analyse(path, sources, recover)
A.analyse = analyse
from fairspec.lsp.server import main; main()
"""


def test_diagnostics_come_before_the_partial_index_and_requests_meanwhile_use_the_older_one(tmp_path, monkeypatch):
    """A half-typed text is linted once for its diagnostics, which are published at once; only then
    is it indexed without the declarations that do not parse. Here that second index is held back
    (GATED): the diagnostics arrive anyway, and hover, definition, references and the outline answer
    from the last whole index, the one of the text that parsed, its positions moved into the text
    sent -- never from an index half built. Once the gate opens the new declaration is known."""
    gate = tmp_path / "open"
    monkeypatch.setenv("FAIRSPEC_TEST_RECOVER_GATE", str(gate))

    async def scenario():
        async with Session(cli_forkserver.python_c(GATED), wait=120) as s:
            uri, text, _ = await s.opened(ADULT)
            before = await _answers(s, uri, text)
            new = text.replace(GROUP, HALF)
            n = s.seen(uri)
            s.change(uri, new)
            errors = [d for d in await s.diagnostics(uri, n) if d.severity == T.DiagnosticSeverity.Error]
            assert [(d.code, d.range.start) for d in errors] == [("FS101", s.pos(new, "property p:",
                                                                                  len("property p")))], errors
            assert not gate.exists()  # the diagnostics did not wait for the partial index

            meanwhile = await _answers(s, uri, new)  # every symbol at its name in the text sent (_answers)
            assert meanwhile["hover sex"] == before["hover sex"] and meanwhile["hover mlp"] == before["hover mlp"]
            assert meanwhile["definition"] == (uri, s.pos(new, "older = age"))
            assert meanwhile["references"] == sorted((p.line, p.character) for p in (
                s.pos(new, "older = age"), s.pos(new, "older) <= 0.25")))
            assert meanwhile["symbols"] == before["symbols"]  # the older text's declarations, moved
            assert await s.hover(uri, s.pos(new, "group younger", 6)) is None  # not in the older text

            gate.touch()
            h = await _until(lambda: s.hover(uri, s.pos(new, "group younger", 6)))
            assert "**group** `younger`" in h.contents.value
            after = await _answers(s, uri, new)
            assert after["symbols"] == before["symbols"][:before["symbols"].index("older") + 1] + ["younger"] + \
                before["symbols"][before["symbols"].index("older") + 1:]
            assert after["definition"] == meanwhile["definition"] and after["references"] == meanwhile["references"]

    run(scenario)


def test_parse_recovering_leaves_out_only_what_does_not_parse(tmp_path):
    from fairspec.lsp.analysis import parse_incremental, parse_recovering

    file = str(tmp_path / "a.fair")
    text = 'model m = onnx("m.onnx")\nproperty p:\n  x\ngroup g = age >= 3\n'
    assert parse_incremental(text, file) is None
    module, broken = parse_recovering(text, file)
    assert broken == ((2, 3),)  # the chunk's lines
    assert [d.name.id for d in module.decls] == ["m", "g"]
    g = module.decls[1]
    assert (g.name.span.line, g.name.span.column) == (4, 7)
    module, broken = parse_recovering(text.replace("property p:\n  x\n", ""), file)
    assert broken == () and len(module.decls) == 2
    # a keyword being typed at column 0 ends the declaration above it: only its own line is left out
    module, broken = parse_recovering(text.replace("property p:\n  x\n", "") + "prop\n", file)
    assert broken == ((3, 3),) and [d.name.id for d in module.decls] == ["m", "g"]
    module, broken = parse_recovering(text.replace("property p:\n  x\n", 'group h = age\n  >= 3 and\n'), file)
    assert broken == ((2, 3),) and [d.name.id for d in module.decls] == ["m", "g"]


REFRESH = T.ClientCapabilities(workspace=T.WorkspaceClientCapabilities(
    semantic_tokens=T.SemanticTokensWorkspaceClientCapabilities(refresh_support=True),
    code_lens=T.CodeLensWorkspaceClientCapabilities(refresh_support=True)))


@pytest.mark.parametrize("declared", [True, False], ids=["refresh-declared", "not-declared"])
def test_tokens_and_lenses_answered_from_the_older_index_are_refreshed_once_the_partial_one_is_in(
        tmp_path, monkeypatch, declared):
    """Semantic tokens and code lenses asked for between a half-typed text's diagnostics and its partial
    index come from the older index; nothing in the text tells the editor to ask again, so the server
    sends workspace/semanticTokens/refresh and workspace/codeLens/refresh once the partial index is in
    place -- only to a client that declared it supports them, and not after a lint nobody was answered
    an older index for. The partial index is held back by GATED; it is put in place in the event loop's
    thread right before its refresh, so once a request sees it the refresh has arrived."""
    gate = tmp_path / "open"
    monkeypatch.setenv("FAIRSPEC_TEST_RECOVER_GATE", str(gate))

    async def lenses(s, uri):
        return await s.client.text_document_code_lens_async(T.CodeLensParams(text_document=_doc(uri)))

    async def scenario():
        async with Session(cli_forkserver.python_c(GATED), wait=120,
                           capabilities=REFRESH if declared else None) as s:
            uri, text, _ = await s.opened(ADULT)
            assert await _tokens(s, uri, text) and await lenses(s, uri)  # the text's own index: not behind
            new = text.replace(GROUP, HALF)
            n = s.seen(uri)
            s.change(uri, new)
            await s.diagnostics(uri, n)
            assert "younger" not in {w for _, _, w, _ in await _tokens(s, uri, new)}  # the older index's
            assert await lenses(s, uri)
            assert s.refreshes == []  # the partial index is held back

            gate.touch()
            await _until(lambda: s.hover(uri, s.pos(new, "group younger", 6)))  # the partial index answers
            both = [T.WORKSPACE_SEMANTIC_TOKENS_REFRESH, T.WORKSPACE_CODE_LENS_REFRESH]
            assert s.refreshes == (both if declared else [])
            # asked again: the partial index answers, the new group is a token
            assert ("younger", "variable") in {(w, t) for _, _, w, t in await _tokens(s, uri, new)}
            await lenses(s, uri)

            # typed to the end and linted, nothing asked meanwhile: no refresh (nobody is behind)
            done = new.replace("property p:\n  individual fairness of\n",
                               "property p {\n  statistical_parity(dt, groups sex) <= 0.2\n}\n")
            n = s.seen(uri)
            s.change(uri, done)
            await s.diagnostics(uri, n)
            assert await s.hover(uri, s.pos(done, "model mlp", 6))  # a round trip after the lint's messages
            assert s.refreshes == (both if declared else [])

    run(scenario)
