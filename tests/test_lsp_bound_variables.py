"""Completion offers the variables a property binds -- `forall x, x' : S` (x and x'), and the class
variable of `ensure forall c : ...` inside that statement -- in that property only, whether the text
parses or is half typed (they are read from the text the client has now). Over stdio with a real
client (fairspec/lsp/client.py); waits are guards, never speed requirements."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("pygls")

from lsprotocol import types as T  # noqa: E402

from conftest import EXAMPLES  # noqa: E402
from fairspec.lsp.analysis import completions  # noqa: E402
from fairspec.lsp.client import Session  # noqa: E402

ADULT = EXAMPLES / "adult" / "adult.fair"
ENSURE = "  ensure |prob(lr(x)) - prob(lr(x'))| <= 0.05\n"


def _variables(comp) -> dict[str, str]:
    return {i.label: i.detail for i in comp.items if i.kind == T.CompletionItemKind.Variable}


def test_completion_offers_the_forall_variables_of_the_enclosing_property_before_and_after_edits():
    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(ADULT)
            inside = await s.completion(uri, s.pos(text, "prob(lr(", len("prob(lr(")))
            got = _variables(inside)
            assert got["x"] == got["x'"] == "forall x, x' : Applicant", got
            assert {"older", "sex", "statistical_parity"} <= {i.label for i in inside.items}  # the rest stays
            # a property without forall, and the top level: no x
            for at in (s.pos(text, "statistical_parity(dt, ", len("statistical_parity(dt, ")),
                       s.pos(text, "group older = ", len("group older = "))):
                labels = {i.label for i in (await s.completion(uri, at)).items}
                assert not {"x", "x'"} & labels, at

            # half typed: `m(` just typed, the text does not parse
            half = text.replace(ENSURE, "  ensure |prob(lr(\n")
            n = s.seen(uri)
            s.change(uri, half)
            diags = await s.diagnostics(uri, n)
            assert [d for d in diags if d.severity == T.DiagnosticSeverity.Error], diags
            got = _variables(await s.completion(uri, s.pos(half, "prob(lr(\n", len("prob(lr("))))
            assert set(got) >= {"x", "x'"}, got

            # a new property binding other names, half typed, then complete: its names, not x
            new = text + "\nproperty mine {\n  forall a, a' : Applicant\n  require a.* == a'.* except {sex}\n" \
                         "  ensure |prob(mlp(\n"
            n = s.seen(uri)
            s.change(uri, new)
            await s.diagnostics(uri, n)
            got = _variables(await s.completion(uri, s.pos(new, "prob(mlp(", len("prob(mlp("))))
            assert {"a", "a'"} <= set(got) and not {"x", "x'"} & set(got), got
            done = new + "a)) - prob(mlp(a'))| <= 0.1\n}\n"
            n = s.seen(uri)
            s.change(uri, done)
            assert not [d for d in await s.diagnostics(uri, n) if d.severity == T.DiagnosticSeverity.Error]
            got = _variables(await s.completion(uri, s.pos(done, "prob(mlp(a'", len("prob(mlp("))))
            assert {"a", "a'"} <= set(got) and not {"x", "x'"} & set(got), got
            got = _variables(await s.completion(uri, s.pos(done, "prob(lr(x'", len("prob(lr("))))
            assert {"x", "x'"} <= set(got) and not {"a", "a'"} & set(got), got
    asyncio.run(scenario())


def _labels(text: str, needle: str, offset: int | None = None) -> set[str]:
    at = text.index(needle) + (len(needle) if offset is None else offset)
    line = text.count("\n", 0, at) + 1
    col = at - (text.rfind("\n", 0, at) + 1) + 1
    return {lbl for lbl, kind, _ in completions(None, text, line, col) if kind == "variable"}


def test_the_class_variable_is_offered_only_in_its_ensure_and_a_policys_property_binds_its_own():
    text = ("property p {\n  forall x, x' : S\n  require x.* == x'.* except {sex}\n"
            "  ensure forall c : |prob(m(x), c) - prob(m(x'), c)|\n    <= 0.1\n  bootstrap = 10\n}\n"
            "policy q(m: model, F: features) {\n  property r {\n    forall u, u' : F\n    ensure label(m(u)) == 1\n"
            "  }\n}\n")
    assert _labels(text, "prob(m(", len("prob(m(")) == {"x", "x'", "c"}
    assert _labels(text, "    <= ") == {"x", "x'", "c"}          # the statement goes on
    assert _labels(text, "require x.* == ") == {"x", "x'"}         # before it: no c
    assert _labels(text, "label(m(") == {"u", "u'"}                # the policy's property
    assert _labels(text, "policy q(m: model, F: features) {\n") == set()
    assert _labels(text, "property p {\n") == set()                # a statement's start: keywords, options
