"""Hover, definition and references just after an edit answer about the text the client has now.

The server answers from the last index whose text parsed while a newer text is half typed or waits
to be linted; its spans are positions in that older text. A request's position (in the current
text) is translated into the older text where the two agree (the same prefix, or the same suffix
shifted), and a span answered is translated back; a position inside the edited part gets an
index built from the current text, or no answer -- never the answer about another place.
A real client over stdio (fairspec/lsp/client.py); waits are guards, never speed requirements.
"""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("pygls")

from conftest import EXAMPLES  # noqa: E402
from fairspec.lsp.client import Session  # noqa: E402

ADULT = EXAMPLES / "adult" / "adult.fair"
ABOVE = "# three lines\n# written above\n# everything\n"
HALF = "\nproperty p {\n  statistical_parity(mlp, groups "       # does not parse: the old index answers


def run(scenario):
    asyncio.run(scenario())


def test_hover_and_definition_after_lines_were_added_above_use_the_edited_text():
    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(ADULT)
            new = ABOVE + text + HALF
            n = s.seen(uri)
            s.change(uri, new)
            assert any(d.code == "FS103" for d in await s.diagnostics(uri, n))   # linted: it does not parse
            h = await s.hover(uri, s.pos(new, "model mlp", 6))
            assert h is not None and "input width: 46" in h.contents.value and "mlp.onnx" in h.contents.value
            assert h.range is None or h.range.start.line == s.pos(new, "model mlp").line
            loc = await s.definition(uri, s.pos(new, "except {sex", 8))
            assert loc.uri == uri and loc.range.start == s.pos(new, "sex            :"), loc
            loc = await s.definition(uri, s.pos(new, "sex x older", 7))
            assert loc.range.start == s.pos(new, "older = age"), loc
            refs = await s.references(uri, s.pos(new, "group older", 6))
            assert sorted((r.range.start.line, r.range.start.character) for r in refs) == sorted(
                (p.line, p.character) for p in (s.pos(new, "older = age"), s.pos(new, "older) <= 0.25")))
            # inside the edited part (the half-typed property): no answer from the older text
            assert await s.hover(uri, s.pos(new, "property p", 9)) is None

    run(scenario)


def test_hover_right_after_a_change_is_about_the_new_text():
    """No wait between the change and the request: whichever index the server holds then, the answer
    is about the place asked for in the text sent."""
    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(ADULT)
            for k in range(3):
                new = ABOVE * (k + 1) + text
                s.change(uri, new)
                h = await s.hover(uri, s.pos(new, "model mlp", 6))
                assert h is not None and "input width: 46" in h.contents.value, (k, h)
                loc = await s.definition(uri, s.pos(new, "except {sex", 8))
                assert loc is not None and loc.range.start == s.pos(new, "sex            :"), (k, loc)

    run(scenario)
