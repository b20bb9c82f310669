"""`fairspec lsp` end to end: the server runs as a subprocess and a real LSP
client (pygls's own, fairspec/lsp/client.py) speaks to it over stdio.

Waits are guards against a hung server, never speed requirements.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

import cli_forkserver

pytest.importorskip("pygls")

from lsprotocol import types as T  # noqa: E402

from conftest import EXAMPLES, FIXTURES, REPO  # noqa: E402
from fairspec.lsp.client import Session, apply_edits  # noqa: E402
from fairspec.syntax.format import format_text  # noqa: E402
from fairspec.syntax.parser import parse_text  # noqa: E402
from test_cli import PEOPLE, PEOPLE_CSV, PEOPLE_ONNX  # noqa: E402

ADULT = EXAMPLES / "adult" / "adult.fair"
FOUR_FIFTHS = REPO / "specs" / "policies" / "four_fifths.fair"


def run(scenario):
    asyncio.run(scenario())


def errors(diags):
    return [d for d in diags if d.severity == T.DiagnosticSeverity.Error]


def test_diagnostics_follow_edits_into_errors_and_back():
    async def scenario():
        async with Session() as s:
            uri, text, diags = await s.opened(ADULT)
            assert errors(diags) == []
            # a misspelt group: FS205 at the name, the hint as related information, a quick fix
            bad = text.replace("groups sex x older", "groups sex x oldr")
            n = s.seen(uri)
            s.change(uri, bad)
            (d,) = errors(await s.diagnostics(uri, n))
            assert d.code == "FS205" and d.source == "fairspec" and "oldr" in d.message
            p = s.pos(bad, "oldr")
            assert (d.range.start, d.range.end) == (p, T.Position(p.line, p.character + 4))
            assert any(r.message == "hint: did you mean 'older'?" for r in d.related_information)
            (action,) = await s.code_actions(uri, [d])
            assert action.title == "Change to 'older'" and action.kind == T.CodeActionKind.QuickFix
            fixed = apply_edits(bad, action.edit.changes[uri])
            assert fixed == text
            # half-typed text: a syntax diagnostic, and the server keeps answering
            half = text + "\nproperty p {\n  statistical_parity(mlp, groups "
            n = s.seen(uri)
            s.change(uri, half)
            (d,) = errors(await s.diagnostics(uri, n))
            assert d.code == "FS103"
            h = await s.hover(uri, s.pos(half, "model mlp", 6))
            assert h is not None and "input width: 46" in h.contents.value
            c = await s.completion(uri, T.Position(half.count("\n"), len(half.rsplit("\n", 1)[-1])))
            assert "sex" in {i.label for i in c.items}
            # and back to the original: no diagnostics
            n = s.seen(uri)
            s.change(uri, text)
            assert errors(await s.diagnostics(uri, n)) == []

    run(scenario)


def test_hover_definition_and_references_across_imports():
    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(ADULT)

            async def hover(needle, offset=0):
                h = await s.hover(uri, s.pos(text, needle, offset))
                assert h is not None, needle
                return h.contents.value

            feat = await hover("sex            :")
            assert "`{Female, Male}`" in feat and "protected" in feat
            assert "`mlp`: onehot, columns 44..45 of 46" in feat and "`lr`" in feat
            age = await hover("age            :")
            assert "int in [17, 90]" in age and "minmax" in age and "lo = 17, hi = 90" in age
            model = await hover("model mlp", 6)
            assert "onnx" in model and "mlp.onnx" in model and "input width: 46" in model and "output: logit" in model
            assert "age >= 40" in await hover("group older", 6)
            prop = await hover("property dt_parity_by_age", 9)
            assert "group metric" in prop and "planned backend: data; needs data rows" in prop
            assert "`bootstrap = 500`" in prop and "`confidence = 0.95` (default)" in prop
            assert "positive rates" in await hover("statistical_parity(dt")

            # definitions: a group, a feature inside a property, a shipped policy, the import line itself
            loc = await s.definition(uri, s.pos(text, "sex x older", 7))
            assert loc.uri == uri and loc.range.start == s.pos(text, "older = age")
            loc = await s.definition(uri, s.pos(text, "except {sex", 8))
            assert loc.uri == uri and loc.range.start == s.pos(text, "sex            :")
            loc = await s.definition(uri, s.pos(text, "apply four_fifths", 7))
            assert Path(loc.uri.removeprefix("file://")).resolve() == FOUR_FIFTHS.resolve()
            assert loc.range.start.line == FOUR_FIFTHS.read_text().splitlines().index(
                next(x for x in FOUR_FIFTHS.read_text().splitlines() if x.startswith("policy four_fifths")))
            loc = await s.definition(uri, s.pos(text, 'import "fairspec/policies/four_fifths', 10))
            assert Path(loc.uri.removeprefix("file://")).resolve() == FOUR_FIFTHS.resolve()

            # references: the group's declaration and its one use; the model across the file
            refs = await s.references(uri, s.pos(text, "group older", 6))
            assert sorted((r.range.start.line, r.range.start.character) for r in refs) == sorted(
                [(p.line, p.character) for p in (s.pos(text, "older = age"), s.pos(text, "older) <= 0.25"))])
            refs = await s.references(uri, s.pos(text, "model mlp", 6), include_declaration=False)
            assert len(refs) == text.count("(mlp") + text.count(" mlp {")
            # a policy's references reach into the shipped file
            refs = await s.references(uri, s.pos(text, "apply four_fifths", 7))
            assert any(Path(r.uri.removeprefix("file://")).resolve() == FOUR_FIFTHS.resolve() for r in refs)
            assert sum(r.uri == uri for r in refs) == 2

    run(scenario)


def test_completion_in_place():
    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(ADULT)

            async def labels(t, pos):
                n = s.seen(uri)
                s.change(uri, t)
                await s.diagnostics(uri, n)
                return {i.label for i in (await s.completion(uri, pos)).items}

            # a new top-level line: the declaration keywords
            t = text + "\n"
            top = await labels(t, T.Position(t.count("\n"), 0))
            assert {"model", "features", "property", "import", "apply"} <= top
            # in a property at the start of a statement: statement keywords, options, metrics, names in scope
            t = text.replace("  bootstrap = 500\n", "  bootstrap = 500\n  \n")
            line = t.split("\n").index("  bootstrap = 500") + 1
            inside = await labels(t, T.Position(line, 2))
            assert {"forall", "require", "ensure", "using"} <= inside
            assert {"timeout = ", "confidence = ", "min_group_size = "} <= inside
            assert {"statistical_parity", "disparate_impact", "sex", "older", "mlp"} <= inside
            # after using: the backends
            t2 = t.replace("  bootstrap = 500\n  \n", "  bootstrap = 500\n  using \n")
            assert {"milp", "smt", "data", "dp", "ssat"} <= await labels(t2, T.Position(line, 8))
            # in an encode block after ':' the encodings; before it the features
            i = t.split("\n").index("encode Applicant for dt {")
            t3 = "\n".join(t.split("\n")[:i + 1] + ["  age : ", "  "] + t.split("\n")[i + 1:])
            assert {"raw", "code", "onehot", "minmax", "standard"} <= await labels(t3, T.Position(i + 1, 8))
            assert {"age", "sex", "race"} <= await labels(t3, T.Position(i + 2, 2))

    run(scenario)


MESSY = 'model m=onnx( "m.onnx" ,output="logit" )   # the net\nfeatures F { age:int in [1,9]  sex:{A,B} protected }\n'


def test_outline_and_formatting():
    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(ADULT)
            syms = await s.symbols(uri)
            names = [x.name for x in syms]
            assert names[:3] == ["fairspec/policies/four_fifths.fair", "fairspec/policies/individual_fairness.fair",
                                 "adult"]
            assert {"Applicant", "mlp", "older", "dt_parity_by_age", "mlp_sex", "Applicant for mlp"} <= set(names)
            applicant = next(x for x in syms if x.name == "Applicant")
            assert applicant.kind == T.SymbolKind.Struct and "sex" in [c.name for c in applicant.children]
            assert apply_edits(text, await s.formatting(uri)) == format_text(text)

            n = s.seen(uri)
            s.change(uri, MESSY)
            await s.diagnostics(uri, n)
            edits = await s.formatting(uri)
            out = apply_edits(MESSY, edits)
            assert out == format_text(MESSY)
            parse_text(out)  # the fragment the server sends parses
            n = s.seen(uri)
            s.change(uri, "model m = onnx(")
            await s.diagnostics(uri, n)
            assert not await s.formatting(uri)  # nothing to format in text that does not parse

    run(scenario)


def test_missing_encoding_line_quick_fix_and_files_re_read(tmp_path):
    csv = tmp_path / "people.csv"
    shutil.copy(PEOPLE_CSV, csv)
    spec = tmp_path / "spec.fair"
    text = PEOPLE.format(csv=csv, onnx=PEOPLE_ONNX).replace("  member, score : raw\n", "  score : raw\n")
    spec.write_text(text)

    async def scenario():
        async with Session() as s:
            uri, _, diags = await s.opened(spec)
            (fs211,) = [d for d in diags if d.code == "FS211"]
            assert "member" in fs211.message
            (action,) = await s.code_actions(uri, [fs211])
            assert action.title.startswith("Encode 'member'")
            fixed = apply_edits(text, action.edit.changes[uri])
            assert "  member : raw\n}" in fixed
            parse_text(fixed)
            n = s.seen(uri)
            s.change(uri, fixed)
            assert [d.code for d in await s.diagnostics(uri, n)] == []
            # the '}' on the last feature's line: the new line goes after it, no blank left behind
            same_line = text.replace("  score : raw\n}", "  score : raw }")
            n = s.seen(uri)
            s.change(uri, same_line)
            (fs211,) = [d for d in await s.diagnostics(uri, n) if d.code == "FS211"]
            (action,) = await s.code_actions(uri, [fs211])
            assert "  score : raw\n  member : raw\n}" in apply_edits(same_line, action.edit.changes[uri])
            n = s.seen(uri)
            s.change(uri, fixed)
            assert [d.code for d in await s.diagnostics(uri, n)] == []
            # the data file changes on disk: its header is read again
            csv.write_text(csv.read_text().replace("age,sex", "years,sex", 1))
            n = s.seen(uri)
            s.client.text_document_did_save(T.DidSaveTextDocumentParams(T.TextDocumentIdentifier(uri)))
            after = await s.diagnostics(uri, n)
            assert any(d.code == "FS207" and "age" in d.message for d in after), after

    run(scenario)


@pytest.mark.parametrize("spec", sorted(EXAMPLES.rglob("*.fair")) + sorted((FIXTURES / "ok").glob("*.fair")),
                         ids=lambda p: p.stem)
def test_incremental_parse_equals_the_whole_parse(spec):
    from fairspec.lsp.analysis import parse_incremental

    text = spec.read_text(encoding="utf-8")
    file = str(spec.resolve())
    for t in (text, text.replace(" = ", " =  ", 1), "# new first line\n" + text, text + "\ngroup zz = true\n"):
        whole = parse_text(t, file)
        part = parse_incremental(t, file)
        assert part is not None
        assert part.decls == whole.decls
        assert [d.span for d in part.decls] == [d.span for d in whole.decls]
    assert parse_incremental(text + "\nproperty p {\n", file) is None  # the caller parses the whole text


def test_half_typed_text_never_raises():
    """Every prefix of the Adult example cut at a line (and mid-line) is linted, and hover, definition,
    references and completion answer at positions through it, from the last text that parsed."""
    from fairspec import filecache
    from fairspec.lsp import analysis as A

    was = filecache.ENABLED
    filecache.ENABLED = True  # as in the server: model headers and data samples read once
    try:
        _half_typed(A)
    finally:
        filecache.ENABLED = was


def _half_typed(A):
    text = ADULT.read_text(encoding="utf-8")
    path = str(ADULT.resolve())
    good = A.analyse(path)
    lines = text.split("\n")
    for n in range(1, len(lines), 6):
        for cut in ("\n".join(lines[:n]), "\n".join(lines[:n]) + "\n" + lines[n][: len(lines[n]) // 2]):
            idx = A.analyse(path, {path: cut})
            assert idx.diagnostics is not None
            use = idx if idx.ok else good
            last = cut.split("\n")
            for ln in range(1, len(last) + 1, 7):
                for col in (1, 3, len(last[ln - 1]) + 1):
                    A.hover(use, path, ln, col)
                    A.definition(use, path, ln, col)
                    A.references(use, path, ln, col)
                    A.completions(use, cut, ln, col)
            A.outline(use)
            for d in idx.diagnostics:
                A.fixes(use, d)


def test_the_client_reads_what_the_server_writes_on_stderr():
    """pygls pipes the server's stderr and never reads it: a server that writes more than the pipe
    holds (here 1 MB before it serves) blocked on the write and never answered or exited. The
    Session drains it and keeps its tail. The wait is a guard against the hang, never a speed need."""
    flood = ("import sys; sys.stderr.write('x' * (1 << 20)); sys.stderr.flush(); "
             "from fairspec.lsp.server import main; main()")

    async def scenario():
        async with Session(cli_forkserver.python_c(flood), wait=120) as s:
            uri = s.open(EXAMPLES / "adult" / "adult.fair")
            assert uri
            return bytes(s.stderr)

    err = asyncio.run(scenario())
    assert err.count(b"x") >= 1 << 16
