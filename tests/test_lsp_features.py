"""The editor features beyond navigation (issue 26 item 5), through a real LSP client over stdio:
rename (across the file, a feature keeps its data column, refusals), folding ranges, semantic
tokens, signature help for metrics and policies, and a code lens per property."""

from __future__ import annotations

import asyncio
import shutil

import pytest

pytest.importorskip("pygls")

from lsprotocol import types as T  # noqa: E402

from conftest import EXAMPLES  # noqa: E402
from fairspec.lsp.client import Session, apply_edits  # noqa: E402
from fairspec.pipeline import lint  # noqa: E402

ADULT = EXAMPLES / "adult" / "adult.fair"


def run(scenario):
    asyncio.run(scenario())


def _doc(uri):
    return T.TextDocumentIdentifier(uri=uri)


@pytest.fixture()
def adult_copy(tmp_path):
    shutil.copytree(EXAMPLES / "adult", tmp_path / "adult", ignore=shutil.ignore_patterns("train.py"))
    return tmp_path / "adult" / "adult.fair"


def test_rename_a_group_and_a_feature(adult_copy):
    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(adult_copy)
            c = s.client
            prep = await c.text_document_prepare_rename_async(
                T.PrepareRenameParams(text_document=_doc(uri), position=s.pos(text, "group older", 6)))
            assert prep.placeholder == "older"
            edit = await c.text_document_rename_async(T.RenameParams(
                text_document=_doc(uri), position=s.pos(text, "group older", 6), new_name="over_forty"))
            new = apply_edits(text, edit.changes[uri])
            assert "group over_forty = age >= 40" in new and "sex x over_forty" in new and "older" not in new
            # a feature named after its column keeps reading that column
            edit = await c.text_document_rename_async(T.RenameParams(
                text_document=_doc(uri), position=s.pos(text, "age            :", 0), new_name="years"))
            new = apply_edits(text, edit.changes[uri])
            assert 'years            : int in [17, 90] column "age"' in new and "group older = years >= 40" in new
            adult_copy.write_text(new)
            assert [d.code for d in lint(adult_copy).diagnostics if d.is_error] == []
            # refusals: a keyword, a name already declared, a shipped policy's use outside the project
            for bad, why in (("group", "not a name"), ("sex", "already declared")):
                with pytest.raises(Exception, match=why):
                    await c.text_document_rename_async(T.RenameParams(
                        text_document=_doc(uri), position=s.pos(text, "group older", 6), new_name=bad))

    run(scenario)


def test_folding_semantic_tokens_signature_help_and_code_lens():
    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(ADULT)
            c = s.client
            folds = await c.text_document_folding_range_async(T.FoldingRangeParams(text_document=_doc(uri)))
            lines = text.split("\n")
            starts = {f.start_line for f in folds}
            assert lines.index(next(l for l in lines if l.startswith("features Applicant"))) in starts
            assert any(f.kind == T.FoldingRangeKind.Comment for f in folds)

            toks = await c.text_document_semantic_tokens_full_async(T.SemanticTokensParams(text_document=_doc(uri)))
            legend = (await c.initialize_async(T.InitializeParams(capabilities=T.ClientCapabilities()))
                      if False else None)  # the legend is the server's: decode with its order
            from fairspec.lsp.analysis import TOKEN_TYPES

            decoded, line, col = [], 0, 0
            d = toks.data
            for i in range(0, len(d), 5):
                line += d[i]
                col = d[i + 1] if d[i] else col + d[i + 1]
                decoded.append((line, col, d[i + 2], TOKEN_TYPES[d[i + 3]]))
            word = {lines[l][cc:cc + n]: t for l, cc, n, t in decoded}
            assert word["model"] == "keyword" and word["mlp"] == "class" and word["statistical_parity"] == "function"
            assert word["older"] == "variable" and word["Applicant"] == "type"

            pos = s.pos(text, "statistical_parity(dt, groups", len("statistical_parity(dt, "))
            sig = await c.text_document_signature_help_async(
                T.SignatureHelpParams(text_document=_doc(uri), position=pos))
            assert sig.signatures[0].label.startswith("statistical_parity(MODEL, groups G")
            assert sig.active_parameter == 1
            pos = s.pos(text, "apply four_fifths(lr, ", len("apply four_fifths(lr, "))
            sig = await c.text_document_signature_help_async(
                T.SignatureHelpParams(text_document=_doc(uri), position=pos))
            assert sig.signatures[0].label.startswith("four_fifths(") and sig.active_parameter == 1

            lenses = await c.text_document_code_lens_async(T.CodeLensParams(text_document=_doc(uri)))
            titles = {l.command.title for l in lenses}
            assert "check dt_parity_by_age" in titles and "check lr_sex_race.disparate_impact" in titles
            assert all(l.command.command == "fairspec.checkProperty" for l in lenses)

    run(scenario)


async def _current(s, uri):
    """The diagnostics of the client's current text (publications of older versions skipped)."""
    while not s.published_versions.get(uri) or s.published_versions[uri][-1] != s.versions[uri]:
        await s.diagnostics(uri)
    return s.published[uri][-1][1]


def test_rename_and_quick_fixes_right_after_edits_are_computed_on_the_new_text(adult_copy):
    # a burst of edits (debounced: not linted yet), then a rename at once: its edits are made on the
    # text the client has now, never on the last linted one (two lines added between the declaration
    # and a use: the old spans of the use are two lines off, and a client applying them corrupts
    # the document)
    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(adult_copy)
            prop = "property dt_parity_by_age"
            s.change(uri, text.replace(prop, "# one\n" + prop))
            s.change(uri, text.replace(prop, "# one\n# two\n" + prop).replace("sex x older", "sex x oldr"))
            new = s.texts[uri]
            edit = await s.client.text_document_rename_async(T.RenameParams(
                text_document=_doc(uri), position=s.pos(new, "group older", 6), new_name="olders"))
            out = apply_edits(new, edit.changes[uri])
            assert out == new.replace("group older", "group olders")
            s.change(uri, out)
            (d,) = [d for d in await _current(s, uri) if d.code == "FS205"]  # oldr: did you mean 'olders'?
            # the same burst, then a quick fix asked with that diagnostic (of the text before it): none
            # is offered, rather than an edit computed on a text the client no longer has
            s.change(uri, "# three\n" + out)
            s.change(uri, "# three\n# four\n" + out)
            assert not await s.code_actions(uri, [d])
            (d,) = [d for d in await _current(s, uri) if d.code == "FS205"]
            (action,) = await s.code_actions(uri, [d])
            assert apply_edits(s.texts[uri], action.edit.changes[uri]) == "# three\n# four\n" + out.replace(
                "sex x oldr", "sex x olders")

    run(scenario)
