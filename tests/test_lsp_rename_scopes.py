"""Rename and the variables a property binds (`forall x, x' : S`, `ensure forall c : ...`): those names are
their property's, so a feature, a group or a model may be renamed to `c` (or a variable to a feature's
name) wherever no use would then mean something else; where one would, the rename is refused with a
sentence naming the place. A rename never yields a spec lint reads differently: it is linted again
before it is answered, and here every declared name of the shipped examples is renamed and the result
linted (the same diagnostics, at the same places). Over stdio with a real client for the editor's view."""

from __future__ import annotations

import asyncio
import shutil

import pytest

pytest.importorskip("pygls")

from lsprotocol import types as T  # noqa: E402

from conftest import EXAMPLES  # noqa: E402
from fairspec.lsp import analysis as A  # noqa: E402
from fairspec.lsp.client import Session, apply_edits  # noqa: E402
from fairspec.pipeline import lint  # noqa: E402

GRADES = EXAMPLES / "german" / "grades.fair"
PROP = "property grade_probabilities_by_sex"


@pytest.fixture(scope="module", autouse=True)
def _files_read_once_as_the_server_does():
    """The analysis here runs in the test's process with fairspec.filecache on, as `fairspec lsp` runs
    it: a model header or a data sample is read again only when its file changes (each of the ~100
    lints a spec's renames make read the data file's rows again, a fifth of this file's time)."""
    from fairspec import filecache

    was = filecache.ENABLED
    filecache.enable()
    yield
    filecache.ENABLED = was
    if not was:
        filecache.clear()


def _at(text: str, needle: str, offset: int = 0) -> tuple[int, int]:
    at = text.index(needle) + offset
    return text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)


def _apply(text: str, edits) -> str:
    lines = text.split("\n")
    for span, new in sorted(edits, key=lambda e: (e[0].line, e[0].column), reverse=True):
        assert span.line == span.end_line
        ln = lines[span.line - 1]
        lines[span.line - 1] = ln[:span.column - 1] + new + ln[span.end_column - 1:]
    return "\n".join(lines)


def _index(path, text):
    return A.analyse(path, {str(path.resolve()): text})


def _lint(path, text) -> list[tuple]:
    """What lint says of ``text`` as ``path``: (code, severity, line) of each diagnostic."""
    return sorted((d.code, d.severity, d.span.line if d.span else 0)
                  for d in lint(path, sources={str(path.resolve()): text}).diagnostics)


def test_a_feature_or_a_group_renamed_to_a_class_variables_name_the_property_does_not_read():
    text = GRADES.read_text(encoding="utf-8").replace(
        "property grade_a_parity {\n  statistical_parity(grades, groups sex,",
        "group older = age >= 40\n\nproperty grade_a_parity {\n  statistical_parity(grades, groups sex x older,")
    idx = _index(GRADES, text)
    f = idx.path
    before = _lint(GRADES, text)
    # housing: in the encode block and k_discrimination's over {sex, housing}; the property binding c never reads it
    edits = A.rename(idx, f, *_at(text, "housing    :"), "c", f)
    new = _apply(text, edits)
    assert "over {sex, c})" in new and 'c    : {free, own, rent} column "housing"' in new, new
    assert _lint(GRADES, new) == before
    # sex: also in that property's `except {sex}` -- a feature's place, never the class variable's
    edits = A.rename(idx, f, *_at(text, "sex        :"), "c", f)
    new = _apply(text, edits)
    assert new.count("except {c}") == 3 and "groups c x older" in new, new
    assert _lint(GRADES, new) == before
    # the model: prob(c(x), c) calls the model c with the class variable c, as lint reads it
    edits = A.rename(idx, f, *_at(text, "model grades", len("model ")), "c", f)
    new = _apply(text, edits)
    assert "ensure forall c : |prob(c(x), c) - prob(c(x'), c)| <= 0.1" in new, new
    assert _lint(GRADES, new) == before
    # the group
    edits = A.rename(idx, f, *_at(text, "group older", len("group ")), "c", f)
    assert "groups sex x c," in _apply(text, edits) and _lint(GRADES, _apply(text, edits)) == before


def test_a_name_that_would_be_captured_is_refused_saying_where():
    """A policy's parameter and the class variable meet in one statement: renaming either to the
    other's name would change what `<= eps` (or `c`) reads; a third name is fine, and renaming the class
    variable renames it in its own statement only."""
    text = ("policy p(m: model, F: features, eps: real = 0.1) {\n"
            "  property q {\n    forall x, x' : F\n    require x.* == x'.* except {sex}\n"
            "    ensure forall c : |prob(m(x), c) - prob(m(x'), c)| <= eps\n  }\n"
            "  property r {\n    forall x, x' : F\n    require x.* == x'.* except {sex}\n"
            "    ensure forall c : |prob(m(x), c) - prob(m(x'), c)| <= 0.2\n  }\n}\n")
    path = EXAMPLES / "german" / "lib_for_test.fair"   # (never written: linted from this text)
    idx = _index(path, text)
    f = idx.path
    assert not [d for d in idx.diagnostics if d.severity == "error"], idx.diagnostics
    eps = _at(text, "eps: real", 0)
    with pytest.raises(A.RenameError, match=r"'c' is already declared \(variable c of property q at line 5\)"):
        A.rename(idx, f, *eps, "c", f)
    c = _at(text, "forall c", len("forall "))
    with pytest.raises(A.RenameError, match=r"'eps' is already declared \(parameter eps of policy p at line 1\)"):
        A.rename(idx, f, *c, "eps", f)
    # in r, which never reads eps: still refused (in a policy, lint reads a parameter's name as the
    # parameter wherever it is written, even where a property binds it)
    for at, new in ((_at(text, "forall c : |prob(m(x), c) - prob(m(x'), c)| <= 0.2", len("forall ")), "eps"),
                    (_at(text, "  property r {\n    forall x", len("  property r {\n    forall ")), "eps")):
        with pytest.raises(A.RenameError, match="'eps' is already declared"):
            A.rename(idx, f, *at, new, f)
    edits = A.rename(idx, f, *c, "k", f)
    assert [s.line for s, _ in edits] == [5, 5, 5], edits       # q's ensure only, not r's
    new = _apply(text, edits)
    assert "ensure forall k : |prob(m(x), k) - prob(m(x'), k)| <= eps" in new
    assert "ensure forall c : |prob(m(x), c) - prob(m(x'), c)| <= 0.2" in new
    assert _lint(path, new) == _lint(path, text)


def test_a_use_the_variable_would_capture_is_refused_naming_it():
    """A group read where the class variable is (lint says it is no number there, FS301, but the rename must
    not turn it into the variable): renaming it to c is refused with the place; to another name is not."""
    text = GRADES.read_text(encoding="utf-8").replace(
        PROP, "group older = age >= 40\n\n" + PROP).replace("prob(grades(x'), c)| <= 0.1", "prob(grades(x'), c)| <= older")
    idx = _index(GRADES, text)
    f = idx.path
    line = _at(text, "<= older")[0]
    with pytest.raises(A.RenameError, match=rf"renaming 'older' to 'c' would make the name at line {line} mean the "
                                            rf"variable c of property grade_probabilities_by_sex instead of the group "
                                            rf"older; choose another name"):
        A.rename(idx, f, *_at(text, "group older", len("group ")), "c", f)
    new = _apply(text, A.rename(idx, f, *_at(text, "group older", len("group ")), "old", f))
    assert "<= old\n" in new and _lint(GRADES, new) == _lint(GRADES, text)


def test_a_feature_named_like_a_variable_after_a_dot_is_the_feature():
    """`x.c` in the statement binding c reads the feature c (as lint does), so its hover, references and
    rename are the feature's (before, the index took it for the class variable)."""
    text = GRADES.read_text(encoding="utf-8").replace(
        "  housing    : {free, own, rent}", '  c          : {free, own, rent} column "housing"').replace(
        "housing", "c").replace('column "c"', 'column "housing"').replace(
        "ensure forall c : |prob(grades(x), c)", "ensure forall c : x.c == own and |prob(grades(x), c)")
    idx = _index(GRADES, text)
    f = idx.path
    before = _lint(GRADES, text)
    at = _at(text, "x.c == own", 2)
    assert A.hover(idx, f, *at).startswith("**feature** `c` of `Applicant`"), A.hover(idx, f, *at)
    assert len(A.references(idx, f, *at)) == len(A.references(idx, f, *_at(text, "  c          :", 2)))
    new = _apply(text, A.rename(idx, f, *_at(text, "  c          :", 2), "home", f))
    assert "x.home == own and |prob(grades(x), c)" in new and _lint(GRADES, new) == before


SPECS = [EXAMPLES / "adult" / "adult.fair", GRADES, EXAMPLES / "fairify" / "ac1.fair",
         EXAMPLES / "compas" / "score.fair"]


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.name)
def test_every_name_renamed_lints_as_before(path):
    """Every name declared in the spec, renamed to a new name, to a bound variable's (c) and to
    another declaration's: refused, or the result lints as the original did (the same codes on the
    same lines) and reads the renamed declaration where the original read it."""
    text = path.read_text(encoding="utf-8")
    idx = _index(path, text)
    f = idx.path
    before = _lint(path, text)
    decls = [o for o in idx.occurrences if o.is_declaration and A.index._same(o.span.file, f)]
    other = min(o.symbol.name for o in decls if o.symbol.kind in ("group", "model", "feature"))
    done = refused = 0
    for o in decls:
        for new in ("renamed_name", "c", other):
            try:
                edits = A.rename(idx, f, o.span.line, o.span.column, new, f)
            except A.RenameError:
                refused += 1
                continue
            after = _apply(text, edits)
            assert _lint(path, after) == before, (o.symbol, new)
            if new == "renamed_name":
                assert len(edits) >= len(A.references(idx, f, o.span.line, o.span.column)), o.symbol
            done += 1
    assert done > refused, (done, refused)


@pytest.fixture()
def grades_copy(tmp_path):
    shutil.copytree(EXAMPLES / "german", tmp_path / "german", ignore=shutil.ignore_patterns("train.py"))
    return tmp_path / "german" / "grades.fair"


def test_over_stdio_rename_to_c_and_a_refusal(grades_copy):
    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(grades_copy)
            doc = T.TextDocumentIdentifier(uri=uri)
            edit = await s.client.text_document_rename_async(T.RenameParams(
                text_document=doc, position=s.pos(text, "housing    :"), new_name="c"))
            new = apply_edits(text, edit.changes[uri])
            assert "over {sex, c})" in new
            assert _lint(grades_copy, new) == _lint(grades_copy, text)
            # a variable renamed to the other variable's name of its property: refused, the sentence says why
            with pytest.raises(Exception, match="already declared"):
                await s.client.text_document_rename_async(T.RenameParams(
                    text_document=doc, position=s.pos(text, "prob(grades(x), c)", len("prob(grades(")),
                    new_name="c"))

    asyncio.run(scenario())
