"""The editor walked as a user of VS Code / Neovim would, one real stdio client session per case
(fairspec/lsp/client.py): hover on a `column "x"` of a features block without `from`; data and library
files changing on disk (didChangeWatchedFiles, and the watcher a client registers only when asked);
rename and references at the 5,000-spec cap and across importers; quick fixes of the newer codes, each
edit then linting clean; diagnostics while typing (every prefix, CRLF, non-ASCII, incremental edits);
formatting that keeps line ends and comments. Waits are guards, never speed requirements."""

from __future__ import annotations

import asyncio
import shutil

import pytest

import cli_forkserver

pytest.importorskip("pygls")

from lsprotocol import types as T  # noqa: E402

from conftest import EXAMPLES  # noqa: E402
from fairspec.lsp.client import Session, apply_edits  # noqa: E402

DECISIONS = EXAMPLES / "predictions" / "decisions.csv"


def run(scenario):
    asyncio.run(scenario())


FROMLESS = """{data}
features Applicant {{
  age  : int in [17, 90] column "age"
  sex  : {{Female, Male}} protected column "sex"
}}

model clf = rule(age >= 40)

property p {{
  statistical_parity(clf, groups sex, data = log) <= 0.15
}}
"""


@pytest.mark.parametrize("data, said", [
    ('data log = csv("decisions.csv")\n',
     "- read by feature `age` of `Applicant` as `int in [17, 90]` (no `from`: `log` is the only data set declared)"),
    ('data log = csv("decisions.csv")\ndata old = csv("decisions.csv")\n',
     "`Applicant` has no `from`, so the data set is the one a property passes (`data = ...`); 2 are declared: "
     "`log`, `old`"),
    ('data log = csv("gone.csv")\n', "`log`, the only data set declared, cannot be read"),
])
def test_a_column_of_a_features_block_without_from_names_its_data_set_or_says_it_is_not_one(tmp_path, data, said):
    shutil.copy(DECISIONS, tmp_path / "decisions.csv")
    spec = tmp_path / "s.fair"
    spec.write_text(FROMLESS.format(data=data), encoding="utf-8")

    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(spec)
            got = (await s.hover(uri, s.pos(text, 'column "age"', 9))).contents.value
            assert said in got, got
            if "only data set declared)" in said:
                assert got.startswith("**column** `age` of `log` (column 2 of 8)\n- whole numbers in the first"), got
            else:
                assert got.startswith("**column** `age`, read by feature `age` of `Applicant`: "), got
    run(scenario)


# ------------------------------------------------------------ files changing on disk

LIB = """policy pol(m: model, groups: groups) {
  property sp {
    statistical_parity(m, groups groups) <= 0.2
  }
}
"""
SPEC = """import "lib.fair"
data d = csv("d.csv", label = y == 1)
features F from d {
  age : int in [17, 90]
  sex : {Female, Male} protected
}
model m = rule(age >= 40)
apply pol(m, groups = sex)
"""


def _watched(s, *paths, kind=T.FileChangeType.Changed):
    from pygls.uris import from_fs_path

    s.client.workspace_did_change_watched_files(T.DidChangeWatchedFilesParams(
        [T.FileEvent(uri=from_fs_path(str(p)), type=kind) for p in paths]))


@pytest.fixture()
def watched(tmp_path):
    (tmp_path / "d.csv").write_text("age,sex,y\n30,Male,1\n50,Female,0\n", encoding="utf-8")
    (tmp_path / "lib.fair").write_text(LIB, encoding="utf-8")
    (tmp_path / "s.fair").write_text(SPEC, encoding="utf-8")
    return tmp_path


def test_a_data_file_or_a_library_changing_on_disk_relints_the_open_spec(watched):
    import os

    async def scenario():
        async with Session() as s:
            uri, _, diags = await s.opened(watched / "s.fair")
            assert diags == []
            # the data file rewritten in place, its size and modification time kept (`cp -p`, a tool that
            # restores the time): the event says it changed, so what was read from it is read again
            data = watched / "d.csv"
            st = data.stat()
            data.write_text("age,sey,y\n30,Male,1\n50,Female,0\n", encoding="utf-8")
            os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns))
            assert (data.stat().st_size, data.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
            n = s.seen(uri)
            _watched(s, data)
            got = await s.diagnostics(uri, after=n)
            assert [d.code for d in got] == ["FS207"] and "no column 'sex'" in got[0].message, got
            # a library the spec imports (not open) loses the policy: the importer says so
            lib = watched / "lib.fair"
            lib.write_text(LIB.replace("policy pol(", "policy pol2("), encoding="utf-8")
            n = s.seen(uri)
            _watched(s, lib)
            got = await s.diagnostics(uri, after=n)
            assert "FS201" in [d.code for d in got], got
            # both put back: clean again
            data.write_text("age,sex,y\n30,Male,1\n50,Female,0\n", encoding="utf-8")
            lib.write_text(LIB, encoding="utf-8")
            n = s.seen(uri)
            _watched(s, data, lib)
            assert await s.diagnostics(uri, after=n) == []
    run(scenario)


def _registrations(watched, watch_caps) -> list:
    """The registrations the server asks of a client with these didChangeWatchedFiles capabilities, once a
    spec (linted clean) is open."""
    caps = T.ClientCapabilities(workspace=T.WorkspaceClientCapabilities(did_change_watched_files=watch_caps))
    asked: list = []

    async def scenario():
        s = Session(capabilities=caps)

        @s.client.feature(T.CLIENT_REGISTER_CAPABILITY)
        def register(params: T.RegistrationParams):
            asked.extend(params.registrations)

        async with s:
            uri, _, diags = await s.opened(watched / "s.fair")
            assert diags == []
            await s.hover(uri, T.Position(0, 0))  # (a round trip: a registration would have come first)
    run(scenario)
    return asked


@pytest.mark.parametrize("dynamic", [True, False])
def test_a_client_that_watches_files_when_asked_is_asked_to(watched, dynamic):
    """Neovim, Helix, ... send workspace/didChangeWatchedFiles only for the globs a server registers."""
    asked = _registrations(watched, T.DidChangeWatchedFilesClientCapabilities(dynamic_registration=dynamic))
    if not dynamic:
        assert asked == []
        return
    assert [r.method for r in asked] == [T.WORKSPACE_DID_CHANGE_WATCHED_FILES], asked
    globs = [w["globPattern"] for w in asked[0].register_options["watchers"]]
    assert globs == ["**/*.{fair,onnx,pt,pth,skops,pkl,pickle,joblib,json,txt,ubj,csv,tsv,data,parquet}"], globs


# ------------------------------------------------------------ rename at the cap on specs looked through

POLICY = """policy pol(m: model, groups: groups) {
  property sp {
    statistical_parity(m, groups groups) <= 0.2
  }
}
"""


@pytest.mark.parametrize("extra", [0, 1])
def test_a_rename_in_a_project_over_the_cap_is_refused_saying_so(tmp_path, extra):
    """Every spec of the project may import the library: at the cap (5,000 .fair files) the rename is
    answered whole; one over it, it is refused with a sentence naming the limit, never partly done."""
    from fairspec.lsp.renames import MAX_SPECS

    (tmp_path / "fairspec.toml").write_text("", encoding="utf-8")
    (tmp_path / "d.csv").write_text("age,sex,y\n30,Male,1\n50,Female,0\n", encoding="utf-8")
    (tmp_path / "lib.fair").write_text(POLICY, encoding="utf-8")
    (tmp_path / "s.fair").write_text(SPEC, encoding="utf-8")
    last = tmp_path / "zz" / "last.fair"  # an importer the walk reaches last
    for i in range(MAX_SPECS - 3 + extra):
        folder = tmp_path / f"f{i // 500:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"x{i}.fair").write_text("# nothing\n", encoding="utf-8")
    last.parent.mkdir()
    last.write_text(SPEC.replace('"lib.fair"', '"../lib.fair"').replace('"d.csv"', '"../d.csv"'), encoding="utf-8")

    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(tmp_path / "lib.fair")
            params = T.RenameParams(text_document=T.TextDocumentIdentifier(uri=uri),
                                    position=s.pos(text, "pol(", 0), new_name="parity")
            if not extra:
                edit = await s.client.text_document_rename_async(params)
                assert sorted(p.rsplit("/", 1)[-1] for p in edit.changes) == ["last.fair", "lib.fair", "s.fair"]
                return
            with pytest.raises(Exception) as got:
                await s.client.text_document_rename_async(params)
            assert str(got.value).endswith(f"the project ({tmp_path}) holds over {MAX_SPECS} .fair files, too many to "
                                           f"look through for the specs importing lib.fair: nothing was renamed; "
                                           f"rename by hand"), got.value
            # the references: those of the open specs, and a message saying that only they were searched
            shown = []
            s.client.feature(T.WINDOW_SHOW_MESSAGE)(lambda p: shown.append(p.message))
            refs = await s.references(uri, s.pos(text, "pol(", 0))
            assert [r.uri.rsplit("/", 1)[-1] for r in refs] == ["lib.fair"], refs
            await s.hover(uri, s.pos(text, "pol(", 0))  # (a round trip: the message came before it)
            assert shown == [f"the project ({tmp_path}) holds over {MAX_SPECS} .fair files, too many to look through "
                             f"for the specs importing lib.fair: only the open specs were searched"], shown
    run(scenario)


def test_references_in_a_library_include_the_uses_in_the_specs_importing_it(watched):
    (watched / "fairspec.toml").write_text("", encoding="utf-8")
    (watched / "sub").mkdir()
    (watched / "sub" / "t.fair").write_text(SPEC.replace('"lib.fair"', '"../lib.fair"').replace('"d.csv"', '"../d.csv"')
                                            .replace("apply pol(m, groups = sex)", "apply pol(m, sex) as again"),
                                            encoding="utf-8")
    (watched / "other.fair").write_text("# imports nothing\n", encoding="utf-8")

    async def scenario():
        async with Session() as s:
            await s.opened(watched / "s.fair")  # one importer open, the other (sub/t.fair) only on disk
            uri, text, _ = await s.opened(watched / "lib.fair")
            got = await s.references(uri, s.pos(text, "pol(", 0))
            return sorted((r.uri.split(str(watched))[-1], r.range.start.line, r.range.start.character) for r in got)
    assert run_value(scenario) == [("/lib.fair", 0, 7), ("/s.fair", 7, 6), ("/sub/t.fair", 7, 6)]


# ------------------------------------------------------------ quick fixes for the newer codes

FIXTURES = EXAMPLES.parent / "tests" / "fixtures"


@pytest.fixture()
def fixtures_copy(tmp_path):
    (tmp_path / "fairspec.toml").write_text("", encoding="utf-8")  # the project: data/ and models/ beside specs/
    shutil.copytree(FIXTURES / "data", tmp_path / "data")
    shutil.copytree(FIXTURES / "models", tmp_path / "models")
    (tmp_path / "specs").mkdir()
    for sub in ("errors", "ok"):
        for f in (FIXTURES / sub).glob("*.fair"):
            shutil.copy(f, tmp_path / "specs" / f.name)
    return tmp_path / "specs"


@pytest.mark.parametrize("name, code, titles", [
    ("class_label_mismatch", "FS419", ["Add target = grade to data set 'grades'"]),
    ("label_text_case", "FS432", ['Write "yes"']),
    ("label_empty_cells", "FS433", ['List "" as missing for approved', "Ignore FS433 on this line"]),
    ("class_label_unnamed", "FS429", ["Ignore FS429 on this line"]),
    # the hint names no one edit: which value is the positive decision, which value the label meant, which
    # tolerance or bound the pre-condition meant
    ("decision_positive_unstated", "FS431", []),
    ("label_constant", "FS434", []),
    ("no_pair", "FS509", []),
])
def test_a_quick_fix_of_the_newer_codes_is_the_hints_edit_and_the_spec_then_lints_clean(fixtures_copy, name, code,
                                                                                       titles):
    from fairspec.pipeline import lint

    spec = fixtures_copy / f"{name}.fair"

    async def scenario():
        async with Session() as s:
            uri, text, diags = await s.opened(spec)
            mine = [d for d in diags if d.code == code]
            assert mine, diags
            acts = await s.code_actions(uri, mine[:1])
            assert [a.title for a in acts] == titles, acts
            # the one fix that is no ignore is preferred (an editor's auto-fix applies it)
            assert [a.is_preferred for a in acts] == [t == titles[0] and not t.startswith("Ignore") for t in titles]
            return text, [a.edit.changes for a in acts]

    text, edits = run_value(scenario)
    for changes in edits:
        assert list(changes) == [spec.as_uri()], changes
        spec.write_text(apply_edits(text, changes[spec.as_uri()]), encoding="utf-8")
        got = lint(spec)
        assert [(d.code, d.message) for d in got.diagnostics] == [], (spec.read_text(), got.diagnostics)
    spec.write_text(text, encoding="utf-8")


def run_value(scenario):
    return asyncio.run(scenario())


def test_a_label_whose_text_the_file_holds_in_two_cases_is_not_fixed_by_a_guess(fixtures_copy):
    (fixtures_copy / "cases.csv").write_text("sex,hired\nF,Yes\nM,YES\nF,no\nM,no\n", encoding="utf-8")
    spec = fixtures_copy / "cases.fair"
    spec.write_text('data people = csv("cases.csv", label = hired == "yes")\n\nfeatures People from people {\n'
                    '  sex : {F, M} protected\n}\n\nproperty base_rates { base_rate_difference(people, groups sex) '
                    '<= 0.1 }\n', encoding="utf-8")

    async def scenario():
        async with Session() as s:
            uri, text, diags = await s.opened(spec)
            assert [d.code for d in diags] == ["FS432"], diags
            assert diags[0].message.startswith("column 'hired' of 'people' holds \"YES\" and \"Yes\" in the rows lint "
                                               "read, never \"yes\""), diags[0].message
            hint = [r.message for r in diags[0].related_information if r.message.startswith("hint: ")]
            assert hint == ['hint: write the one you mean of "YES", "Yes" (the file holds each)'], hint
            assert not await s.code_actions(uri, diags)
    run(scenario)


# ------------------------------------------------------------ diagnostics while typing

def _inside(text: str, rng: T.Range) -> bool:
    """Both ends of rng are positions of text as the client counts them (UTF-16 units; lines cut at \\n,
    \\r\\n and \\r; the empty line after a final line end counts)."""
    import re

    lines = re.split(r"\r\n|\r|\n", text)
    for p in (rng.start, rng.end):
        if not (0 <= p.line < len(lines) and 0 <= p.character <= len(lines[p.line].encode("utf-16-le")) // 2):
            return False
    return (rng.start.line, rng.start.character) <= (rng.end.line, rng.end.character)


# `fairspec lsp` with no debounce: _typed awaits each prefix's diagnostics before it sends the next, so
# each change came within DEBOUNCE of the last lint and waited it out (50 ms a prefix, ~85% of the two
# walks' time); every prefix is still linted and its diagnostics read, as before. Forked from the warm server
# (cli_forkserver.python_c): the patch is to a module attribute the lint thread reads when it waits
UNDEBOUNCED = ("import sys; import fairspec.lsp.indexes as i; assert i.DEBOUNCE; i.DEBOUNCE = 0; "
               "from fairspec.cli import main; sys.argv = ['fairspec', 'lsp']; sys.exit(main())")


def _typed(path, text: str, cuts) -> None:
    """Type text into the open document, one prefix per change, each linted (its diagnostics awaited): none
    may lie outside the prefix, and the server answers a request after the last."""
    async def scenario():
        async with Session(cli_forkserver.python_c(UNDEBOUNCED)) as s:
            uri, _, _ = await s.opened(path, text="")
            for k in cuts:
                n = s.seen(uri)
                s.change(uri, text[:k])
                for d in await s.diagnostics(uri, after=n):
                    assert _inside(text[:k], d.range), (k, text[:k][-60:], d)
                    for r in d.related_information or ():
                        assert r.location.uri != uri or _inside(text[:k], r.location.range), (k, d)
            s.change(uri, text)
            assert await s.symbols(uri) is not None
    run(scenario)


def test_every_prefix_of_a_shipped_example_is_linted_inside_the_text():
    """Every prefix past the example's opening comment (there, one per line: a comment is skipped text)."""
    import re

    path = EXAMPLES / "worked" / "fvgm_3_2.fair"
    text = path.read_text(encoding="utf-8")
    body = re.search(r"^[^#\n]", text, re.M).start()
    _typed(path, text, [m.end() for m in re.finditer("\n", text[:body])] + list(range(body, len(text) + 1)))


def test_an_example_with_crlf_and_non_ascii_comments_typed_line_by_line(tmp_path):
    shutil.copytree(EXAMPLES / "adult", tmp_path / "adult", ignore=shutil.ignore_patterns("train.py"))
    path = tmp_path / "adult" / "adult.fair"
    text = path.read_text(encoding="utf-8").replace("# ", "# é😀 ").replace("\n", "\r\n")
    ends = [i + 2 for i in range(len(text)) if text.startswith("\r\n", i)]
    # at each line end, after its \r alone, and half way through the next line
    cuts = sorted({c for e in ends for c in (e, e - 1, e + (text.find("\r\n", e) - e) // 2)} | {len(text)})
    _typed(path, text, [c for c in cuts if 0 <= c <= len(text)])


# ------------------------------------------------------------ formatting

@pytest.mark.parametrize("end", ["\r\n", "\n", "\r"])
def test_formatting_keeps_the_documents_line_ends_and_comments_and_is_idempotent(tmp_path, end):
    """A CRLF document was formatted into LF: every line rewritten (a Windows user's whole-file diff)."""
    import re

    shutil.copytree(EXAMPLES / "adult", tmp_path / "adult", ignore=shutil.ignore_patterns("train.py"))
    path = tmp_path / "adult" / "adult.fair"
    canonical = path.read_text(encoding="utf-8").replace("# ", "# é😀 ").replace("\n", end)
    messy = canonical.replace("group older = age >= 40", "group   older =   age >= 40   # kept é😀")

    async def scenario():
        async with Session() as s:
            uri, _, _ = await s.opened(path, text=canonical)
            assert not await s.formatting(uri)  # the example is formatted already, whatever its line ends
            n = s.seen(uri)
            s.change(uri, messy)
            await s.diagnostics(uri, after=n)
            new = apply_edits(messy, await s.formatting(uri))
            assert new == canonical.replace("group older = age >= 40", "group older = age >= 40  # kept é😀"), new
            assert set(re.findall(r"\r\n|\r|\n", new)) == {end}
            assert re.findall(r"#[^\r\n]*", new) == re.findall(r"#[^\r\n]*", messy.replace("   # kept", "  # kept"))
            n = s.seen(uri)
            s.change(uri, new)
            await s.diagnostics(uri, after=n)
            assert not await s.formatting(uri)
    run(scenario)


def test_typing_incrementally_with_crlf_emoji_and_backspaces_leaves_the_servers_text_the_clients(tmp_path):
    """As an editor sends a typist's keys: small incremental edits at the end (UTF-16 positions; a \\r\\n
    split between two edits), a few backspaces, hovers meanwhile. The server's text is then the client's:
    its outline and semantic tokens are those of the same text opened whole."""
    import random

    from fairspec.lsp.client import UTF16
    from fairspec.lsp.positions import lines_of

    shutil.copytree(EXAMPLES / "worked", tmp_path / "w")
    typed, whole = tmp_path / "w" / "fvgm_3_1.fair", tmp_path / "w" / "copy.fair"
    full = typed.read_text(encoding="utf-8").replace("# ", "# é😀 ").replace("\n", "\r\n")
    whole.write_text(full, encoding="utf-8", newline="")
    rnd = random.Random(28)

    def tokens(s, uri):
        return s.client.text_document_semantic_tokens_full_async(T.SemanticTokensParams(
            text_document=T.TextDocumentIdentifier(uri=uri)))

    async def scenario():
        async with Session() as s:
            uri, _, _ = await s.opened(typed, text="")
            text, i = "", 0
            while i < len(full):
                chunk = full[i:i + rnd.choice([1, 1, 1, 2, 5])]
                i += len(chunk)
                end = lines_of(text).position(len(text), UTF16)
                s.edit(uri, end, end, chunk)
                text += chunk
                if rnd.random() < 0.03:
                    cut = max(0, len(text) - rnd.choice([1, 2, 3]))
                    s.edit(uri, lines_of(text).position(cut, UTF16), lines_of(text).position(len(text), UTF16), "")
                    i -= len(text) - cut
                    text = text[:cut]
                if rnd.random() < 0.02:
                    await s.hover(uri, lines_of(text).position(max(0, len(text) - 3), UTF16))
            assert text == full
            n = s.seen(uri)
            s.edit(uri, T.Position(0, 0), T.Position(0, 0), "")  # (one more change: its lint is the last)
            assert await s.diagnostics(uri, after=n) == []
            other, _, _ = await s.opened(whole)

            def outline(xs):
                return [(x.name, x.range, outline(x.children)) for x in xs or ()]
            assert outline(await s.symbols(uri)) == outline(await s.symbols(other))
            assert (await tokens(s, uri)).data == (await tokens(s, other)).data
    run(scenario)


def test_the_clients_diagnostics_are_of_its_current_text_whatever_arrives_first():
    """Session.diagnostics(uri, after=n) is the first publication after n about the client's current text: one
    for an older version (linted before the server read the later changes, and arriving after the test took n;
    on a loaded machine the typing test above got such a one, a half-typed text's error) is skipped. It was
    returned. A publication without a version, or for a document whose version the client does not track, is
    taken as it comes."""
    from fairspec.lsp.client import Session

    async def scenario():
        s = Session(command=["unused"])
        uri = "file:///t/a.fair"
        s.versions[uri] = 7

        async def publish(version, diags):
            # the client's own handler, as the server's notification would reach it
            await s.client.protocol.fm.features[T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS](
                T.PublishDiagnosticsParams(uri=uri, diagnostics=diags, version=version))

        old = [T.Diagnostic(range=T.Range(T.Position(0, 0), T.Position(0, 0)), message="half typed")]
        await publish(5, old)
        waiting = asyncio.ensure_future(s.diagnostics(uri, after=0))
        await publish(6, old)
        await asyncio.sleep(0)
        assert not waiting.done()
        await publish(7, [])
        assert await asyncio.wait_for(waiting, 60) == []
        s.versions[uri] = 9
        await publish(None, old)              # (a close's clearing, or a file not open: no version)
        assert await s.diagnostics(uri, after=3) == old
    run(scenario)


def test_vscode_s_client_capabilities_get_the_one_watcher_the_extension_relies_on(watched):
    """vscode-languageclient 9 declares didChangeWatchedFiles with dynamic and relative-pattern support;
    the extension (editors/vscode/extension.js) watches nothing itself, so the server's registration is
    the one watcher: each file event reported once, for every kind of file a spec reads."""
    asked = _registrations(watched, T.DidChangeWatchedFilesClientCapabilities(dynamic_registration=True,
                                                                              relative_pattern_support=True))
    (reg,) = asked
    (watcher,) = reg.register_options["watchers"]
    kinds = set(watcher["globPattern"].split("{")[1].rstrip("}").split(","))
    # every file the extension's own watcher used to report, and more
    assert {"fair", "onnx", "pt", "skops", "pkl", "json", "txt", "ubj", "csv", "data", "parquet"} <= kinds, kinds
    client = (EXAMPLES.parent / "editors" / "vscode" / "extension.js").read_text(encoding="utf-8")
    assert "createFileSystemWatcher" not in client and "fileEvents" not in client


def test_a_file_event_for_an_open_library_does_not_lint_the_open_specs_again(watched):
    """Saving an open library: its didChange / didSave lint it and its importers (they read the editor's
    text, never the disk), so its file event does not lint every open spec once more. An event for a
    file that is not open (the data) still does."""
    async def scenario():
        async with Session() as s:
            uri, _, diags = await s.opened(watched / "s.fair")
            assert diags == []
            n = s.seen(uri)
            await s.opened(watched / "lib.fair")
            await s.diagnostics(uri, after=n)  # its importer, linted again: it reads the buffer now
            n = s.seen(uri)
            _watched(s, watched / "lib.fair")
            await asyncio.sleep(3.0)  # a guard only: a lint of s.fair would be published in a fraction of it
            await s.hover(uri, T.Position(0, 0))
            assert s.seen(uri) == n, s.published[uri][n:]
            _watched(s, watched / "d.csv")
            assert await s.diagnostics(uri, after=n) == []
    run(scenario)
