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


# ------------------------------------------------------------ the variables as names: hover, definition,
# references, rename (fairspec.lsp.analysis.index._bind)

GRADES = EXAMPLES / "german" / "grades.fair"
PROP = "property grade_probabilities_by_sex"


def _at(text: str, needle: str, offset: int = 0, after: str = PROP) -> tuple[int, int]:
    """fairspec's (line, column) of needle (plus offset), the first after ``after``, in text."""
    at = text.index(needle, text.index(after)) + offset
    return text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)


def _apply(text: str, edits) -> str:
    lines = text.split("\n")
    for span, new in sorted(edits, key=lambda e: (e[0].line, e[0].column), reverse=True):
        assert span.line == span.end_line
        ln = lines[span.line - 1]
        lines[span.line - 1] = ln[:span.column - 1] + new + ln[span.end_column - 1:]
    return "\n".join(lines)


def _index(text: str):
    from fairspec.lsp import analysis as A

    return A.analyse(GRADES, {str(GRADES.resolve()): text})


def test_a_propertys_variables_have_hover_a_definition_and_references_in_that_property_only():
    from fairspec.lsp import analysis as A

    text = GRADES.read_text(encoding="utf-8")
    idx = _index(text)
    f, x = idx.path, _at(text, "prob(grades(x)", len("prob(grades("))
    assert A.hover(idx, f, *x) == ("**variable** `x` of property `grade_probabilities_by_sex`: "
                                   "`forall x, x' : Applicant`, a pair of individuals of `Applicant`")
    d = A.definition(idx, f, *x)
    assert (d.line, d.column) == _at(text, "forall x", len("forall "))
    # x in this property: the forall, x.* and prob(grades(x), c); not the x of the other properties
    refs = sorted((s.line, s.column) for s in A.references(idx, f, *x))
    assert refs == [_at(text, "forall x", 7), _at(text, "x.*"), _at(text, "(x)", 1)], refs
    # x' is another variable
    assert A.hover(idx, f, *_at(text, "x'), c)")).startswith("**variable** `x'` of property `grade_probabilities_by_sex`")
    # the class variable: in its ensure statement
    c = _at(text, "forall c", len("forall "))
    assert A.hover(idx, f, *c).startswith("**class variable** `c` of property `grade_probabilities_by_sex`")
    assert len(A.references(idx, f, *c)) == 3  # forall c, prob(grades(x), c), prob(grades(x'), c)


def test_a_variable_shadows_a_declaration_of_its_name_and_renaming_keeps_them_apart():
    """A group named c and the class variable c of `ensure forall c`: inside the statement c is the
    variable (its hover, its references), the group's references and rename leave it alone; a forall
    variable renamed renames its pair (x, x' -> y, y'; FS501 wants the pair written so); the name of
    the property's other variable is refused, a declaration's the property does not use is not."""
    from fairspec.lsp import analysis as A

    text = GRADES.read_text(encoding="utf-8").replace(PROP, "group c = age >= 60\ngroup older = age >= 40\n\n" + PROP)
    idx = _index(text)
    f = idx.path
    group = _at(text, "group c", len("group "), after="group c")
    inside = _at(text, ", c)", 2)
    assert A.hover(idx, f, *inside).startswith("**class variable** `c`")
    assert A.hover(idx, f, *group).startswith("**group** `c`")
    assert [(s.line, s.column) for s in A.references(idx, f, *group)] == [group]
    assert [s.line for s, _ in A.rename(idx, f, *group, "old", f)] == [group[0]]

    x = _at(text, "x.*")
    edits = A.rename(idx, f, *x, "y", f)
    assert sorted(new for _, new in edits) == ["y"] * 3 + ["y'"] * 3
    renamed = _apply(text, edits)
    assert "forall y, y' : Applicant\n  require y.* == y'.* except {sex}\n" \
           "  ensure forall c : |prob(grades(y), c) - prob(grades(y'), c)| <= 0.1" in renamed
    assert renamed.count("forall x, x' : Applicant") == text.count("forall x, x' : Applicant") - 1
    again = _index(renamed)
    assert not [d for d in again.diagnostics if d.severity == "error"]
    assert sorted(new for _, new in A.rename(idx, f, *_at(text, "x'.*"), "z'", f)) == ["z"] * 3 + ["z'"] * 3
    with pytest.raises(A.RenameError, match="already declared"):   # the class variable of the same property
        A.rename(idx, f, *x, "c", f)
    # a feature's or a group's name the property does not read as a name (x.age reads age as a feature,
    # not as the variable): nothing changes meaning (tests/test_lsp_rename_scopes.py)
    for new in ("age", "older"):
        edits = A.rename(idx, f, *x, new, f)
        assert not [d for d in _index(_apply(text, edits)).diagnostics if d.severity == "error"], new
    assert A.rename(again, f, *_at(renamed, "group older", len("group "), after="group older"), "y", f)


def test_over_stdio_a_variable_is_hovered_defined_and_highlighted_as_a_parameter():
    from fairspec.lsp.analysis import TOKEN_TYPES

    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(ADULT)
            use = s.pos(text, "prob(lr(x'", len("prob(lr("))
            h = await s.hover(uri, use)
            assert h.contents.value.startswith("**variable** `x'` of property `lr_close_scores`"), h
            loc = await s.definition(uri, use)
            assert loc.uri == uri and loc.range.start == s.pos(text, "x' : Applicant"), loc
            toks = await s.client.text_document_semantic_tokens_full_async(T.SemanticTokensParams(
                text_document=T.TextDocumentIdentifier(uri=uri)))
            line, col, found = 0, 0, set()
            for i in range(0, len(toks.data), 5):
                d = toks.data[i:i + 5]
                line += d[0]
                col = d[1] if d[0] else col + d[1]
                word = text.split("\n")[line][col:col + d[2]]
                if word in ("x", "x'") and line >= s.pos(text, "property lr_close_scores").line:  # (not sex x race)
                    found.add((word, TOKEN_TYPES[d[3]]))
            assert found == {("x", "parameter"), ("x'", "parameter")}, found

    asyncio.run(scenario())
