"""`fairspec lsp` positions, line ends and document lifecycles as a real client sees them (a pygls
client over stdio, fairspec/lsp/client.py): UTF-16 units after characters outside the BMP, lines cut
only at \\n, \\r\\n and \\r, importers linted again when an open import changes or closes, nothing
published after a close, diagnostics versioned, untitled documents.

Every wait is for an event (a publication, a reply), with a guard against a hung server only."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("pygls")

from lsprotocol import types as T  # noqa: E402

from fairspec.lsp.client import Session, apply_edits  # noqa: E402
from fairspec.syntax.format import format_text  # noqa: E402
from fairspec.syntax.parser import parse_text  # noqa: E402

EMOJI = '''features W {
  P : bool protected
  C : {"😀😀", "中文", "é", "ab"} protected
  Quux : bool
}
model clf = rule(P and Quux)
group g1 = C == "😀😀" or C == "abc"
'''


def run(scenario):
    asyncio.run(scenario())


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "fairspec.toml").write_text("")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _units(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


def test_an_emoji_before_a_diagnostic_and_its_quick_fix(project):
    async def scenario():
        async with Session() as s:
            assert s.encoding == T.PositionEncodingKind.Utf16
            uri, text, diags = await s.opened(project / "emoji.fair", EMOJI)
            (d,) = [d for d in diags if d.code == "FS206"]
            line = text.split("\n")[6]
            start = _units(line[:line.index('"abc"')])
            assert (d.range.start, d.range.end) == (T.Position(6, start), T.Position(6, start + 5))
            assert start == line.index('"abc"') + 2  # two emoji: two UTF-16 units more than code points
            (action,) = await s.code_actions(uri, [d])
            fixed = apply_edits(text, action.edit.changes[uri])
            assert fixed.split("\n")[6] == 'group g1 = C == "😀😀" or C == "ab"'
            parse_text(fixed, "x.fair")
            # hover on the C after the emoji, asked in UTF-16 units, is the feature
            h = await s.hover(uri, s.pos(text, 'C == "abc"'))
            assert h is not None and "**feature** `C`" in h.contents.value
            n = s.seen(uri)
            s.change(uri, fixed)
            assert [d for d in await s.diagnostics(uri, n) if d.severity == T.DiagnosticSeverity.Error] == []

    run(scenario)


def test_formatting_a_file_ending_in_an_emoji_line_without_a_newline(project):
    text = 'features W {\n  P : bool protected\n  C : {"😀😀", ab} protected\n}\ngroup   g = C == "😀😀"'

    async def scenario():
        async with Session() as s:
            uri, _, _ = await s.opened(project / "fmt.fair", text)
            edits = await s.formatting(uri)
            assert edits[0].range.end == T.Position(4, _units('group   g = C == "😀😀"'))
            out = apply_edits(text, edits)
            assert out == format_text(text)
            parse_text(out, "x.fair")

    run(scenario)


@pytest.mark.parametrize("brk", ["\u2028", "\x0c", "\x85"], ids=["U+2028", "form-feed", "NEL"])
def test_a_line_separator_in_a_comment_then_an_incremental_edit(project, brk):
    text = f"features W {{\n  P : bool protected\n  Q : bool\n}}\n# a{brk}b\ngroup   g = Zz\n"

    async def scenario():
        async with Session() as s:
            uri, _, diags = await s.opened(project / "sep.fair", text)
            (d,) = diags
            assert d.code == "FS205" and d.range.start == T.Position(5, 12)  # LSP's line 5: no break at brk
            n = s.seen(uri)
            s.edit(uri, T.Position(5, 12), T.Position(5, 14), "Q")
            assert await s.diagnostics(uri, n) == []  # the server's copy is the client's
            edits = await s.formatting(uri)
            assert apply_edits(s.texts[uri], edits) == f"features W {{\n  P : bool protected\n  Q : bool\n}}\n# a{brk}b\ngroup g = Q\n"

    run(scenario)


def test_a_file_with_lone_cr_line_ends(project):
    text = "features W {\r  P : bool protected\r}\rgroup g = Zz\r"

    async def scenario():
        async with Session() as s:
            uri, _, diags = await s.opened(project / "cr.fair", text)
            (d,) = diags
            assert d.code == "FS205"
            assert (d.range.start, d.range.end) == (T.Position(3, 10), T.Position(3, 12))
            n = s.seen(uri)
            s.edit(uri, T.Position(3, 10), T.Position(3, 12), "P")
            assert await s.diagnostics(uri, n) == []
            syms = await s.symbols(uri)
            assert [(x.name, x.selection_range.start.line) for x in syms] == [("W", 0), ("g", 3)]

    run(scenario)


def test_a_client_that_offers_utf32_gets_code_points(project):
    caps = T.ClientCapabilities(general=T.GeneralClientCapabilities(
        position_encodings=[T.PositionEncodingKind.Utf32, T.PositionEncodingKind.Utf16]))

    async def scenario():
        async with Session(capabilities=caps) as s:
            assert s.encoding == T.PositionEncodingKind.Utf32
            uri, text, diags = await s.opened(project / "emoji.fair", EMOJI)
            (d,) = [d for d in diags if d.code == "FS206"]
            line = text.split("\n")[6]
            assert d.range.start == T.Position(6, line.index('"abc"'))

    run(scenario)


def test_a_client_that_offers_utf8_first_gets_bytes(project):
    # Neovim 0.10 and later offer ["utf-8", "utf-16", "utf-32"]: pygls takes the first
    caps = T.ClientCapabilities(general=T.GeneralClientCapabilities(position_encodings=[
        T.PositionEncodingKind.Utf8, T.PositionEncodingKind.Utf16, T.PositionEncodingKind.Utf32]))

    async def scenario():
        async with Session(capabilities=caps) as s:
            assert s.encoding == T.PositionEncodingKind.Utf8
            uri, text, diags = await s.opened(project / "emoji.fair", EMOJI)
            (d,) = [d for d in diags if d.code == "FS206"]
            line = text.split("\n")[6]
            start = len(line[:line.index('"abc"')].encode())
            assert (d.range.start, d.range.end) == (T.Position(6, start), T.Position(6, start + 5))

    run(scenario)


def test_an_importer_is_linted_again_when_its_open_import_changes_or_closes(project):
    (project / "lib.fair").write_text("features W {\n  P : bool protected\n  Q : bool\n}\n")
    (project / "main.fair").write_text('import "lib.fair"\nmodel clf = rule(P and Qnew)\ngroup g = Qnew\n')

    async def scenario():
        async with Session() as s:
            main, _, diags = await s.opened(project / "main.fair")
            assert [d.code for d in diags] == ["FS205", "FS205"]
            n = s.seen(main)
            lib, lib_text, _ = await s.opened(project / "lib.fair",
                                              (project / "lib.fair").read_text().replace("Q :", "Qnew :"))
            assert await s.diagnostics(main, n) == []  # main reads the unsaved buffer of lib
            n = s.seen(main)
            s.change(lib, lib_text.replace("Qnew :", "Q2 :"))
            assert [d.code for d in await s.diagnostics(main, n)] == ["FS205", "FS205"]
            n = s.seen(main)
            s.change(lib, lib_text)
            assert await s.diagnostics(main, n) == []
            n = s.seen(main)
            s.close(lib)  # the file on disk still says Q
            assert [d.code for d in await s.diagnostics(main, n)] == ["FS205", "FS205"]

    run(scenario)


def test_no_diagnostics_survive_a_rapid_open_and_close(project):
    async def scenario():
        async with Session() as s:
            uris = []
            for i in range(12):
                uris.append(s.open(project / f"race{i}.fair", "group g = Zz\n" * 50))
                s.close(uris[-1])
            # one worker lints in order: once a document opened afterwards has its diagnostics,
            # every lint of the closed ones has ended (and its result was dropped or cleared)
            await s.opened(project / "last.fair", "group g = Zz\n")
            for uri in uris:
                assert s.published[uri][-1][1] == [], uri

    run(scenario)


def test_diagnostics_carry_the_version_they_were_computed_for(project):
    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(project / "v.fair", "group g = Zz\n")
            assert s.published_versions[uri][-1] == 1
            n = s.seen(uri)
            s.change(uri, "group g = Zy\n")
            (d,) = await s.diagnostics(uri, n)
            assert "Zy" in d.message and s.published_versions[uri][n] == 2

    run(scenario)


def test_an_untitled_document_is_linted_and_its_imports_are_said_to_resolve_nowhere(project):
    # Zz may be a feature lib.fair would declare: not said while the import fails; the FS301 is
    text = 'import "lib.fair"\nfeatures W {\n  P : bool protected\n}\ngroup g = Zz\ngroup h = P == "z"\n'

    async def scenario():
        async with Session() as s:
            uri, _, diags = await s.opened("untitled:Untitled-1", text)
            by = {d.code: d for d in diags}
            assert set(by) == {"FS203", "FS301"}
            assert "not saved" in by["FS203"].message and "fairspec-unsaved" not in by["FS203"].message
            assert by["FS301"].range.start == T.Position(5, 10)
            h = await s.hover(uri, T.Position(4, 10))
            assert h is None  # Zz names nothing; the request is answered, not refused
            h = await s.hover(uri, T.Position(2, 2))
            assert h is not None and "`P`" in h.contents.value
            c = await s.completion(uri, T.Position(4, 10))
            assert "P" in {i.label for i in c.items}

    run(scenario)


def test_a_diagnostic_in_an_import_that_is_not_open_is_in_utf16_units(project):
    # lib.fair is read from disk (no open text): its syntax error after two emoji is published for it
    # in the client's units, not in code points
    bad = 'group g = C == "😀😀" or )\n'
    (project / "lib.fair").write_bytes(('features W {\n  C : {"😀😀", ab} protected\n}\n' + bad).encode())
    (project / "main.fair").write_text('import "lib.fair"\ngroup g2 = C == ab\n')

    async def scenario():
        async with Session() as s:
            main, _, _ = await s.opened(project / "main.fair")
            lib = main.replace("main.fair", "lib.fair")
            async with s._news:
                await asyncio.wait_for(s._news.wait_for(lambda: s.seen(lib) > 0), s.wait)
            (d,) = s.published[lib][-1][1]
            assert d.code == "FS101"
            at = _units(bad[:bad.index(")")])
            assert (d.range.start, d.range.end) == (T.Position(3, at), T.Position(3, at + 1))
            assert [r.location.range.start for r in d.related_information] == [T.Position(3, at)]

    run(scenario)


@pytest.mark.parametrize("head", [b"# a\r# b\rgroup h = C == ab\r", b"\xef\xbb\xbf", b"# a\r\n"],
                         ids=["lone-CR", "BOM", "CRLF"])
def test_a_definition_in_an_import_that_is_not_open_is_read_as_the_parser_reads_it(project, head):
    # lib.fair's text is read from disk: a lone \r is a line end for LSP and for fairspec alike (its
    # comment ends there), and no byte-order mark is counted as a character
    lib = head + 'group g = C == "😀😀"\nfeatures W {\n  C : {"😀😀", ab} protected\n}\n'.encode()
    (project / "lib.fair").write_bytes(lib)
    (project / "main.fair").write_text('import "lib.fair"\ngroup g2 = g\n')

    async def scenario():
        async with Session() as s:
            main, text, _ = await s.opened(project / "main.fair")
            loc = await s.definition(main, s.pos(text, "= g", 2))
            loc = loc[0] if isinstance(loc, list) else loc
            lsp_lines = lib.decode("utf-8-sig").replace("\r\n", "\n").replace("\r", "\n").split("\n")
            line = next(i for i, x in enumerate(lsp_lines) if x.startswith("group g "))
            assert (loc.range.start, loc.range.end) == (T.Position(line, 6), T.Position(line, 7))
            h = await s.hover(main, s.pos(text, "= g", 2))
            assert h is not None and '`C == "😀😀"`' in h.contents.value

    run(scenario)
