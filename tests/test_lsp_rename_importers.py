"""Renaming in a policy library renames it in the specs that import it: a parameter an importing spec
passes by ``name = value``, a policy it applies. Over stdio with a real client: a library and two
importing specs (one open, one only on disk), the rename applied to all three and each linted as
before. A spec importing the library that cannot be renamed refuses the rename, naming its file and
import line."""

from __future__ import annotations

import asyncio
import shutil

import pytest

pytest.importorskip("pygls")

from lsprotocol import types as T  # noqa: E402

from conftest import EXAMPLES  # noqa: E402
from fairspec.lsp.client import Session, apply_edits  # noqa: E402
from fairspec.pipeline import lint  # noqa: E402

LIBRARY = """\
# a policy library: no apply
policy close_in_age(m: model, F: features, protected: set, gap: int = 2) {
  property close_in_age {
    forall x, x' : F
    require x.* == x'.* except protected
    require |x.age - x'.age| <= gap
    ensure label(m(x)) == label(m(x'))
  }
}
"""


def _said(path) -> list[tuple]:
    return sorted((d.code, d.severity, d.span.line if d.span else 0) for d in lint(path).diagnostics)


@pytest.fixture
def project(tmp_path):
    shutil.copytree(EXAMPLES / "adult", tmp_path / "adult", ignore=shutil.ignore_patterns("train.py"))
    root = tmp_path / "adult"
    (root / "lib.fair").write_text(LIBRARY, encoding="utf-8")
    base = (root / "adult.fair").read_text(encoding="utf-8")
    one = base.replace('import "fairspec/policies/four_fifths.fair"',
                       'import "fairspec/policies/four_fifths.fair"\nimport "lib.fair"', 1)
    (root / "one.fair").write_text(one + "\napply close_in_age(mlp, Applicant, {sex}, gap = 3) as mlp_age\n",
                                   encoding="utf-8")
    (root / "two.fair").write_text(one + "\napply close_in_age(lr, Applicant, protected = {sex, race}) as lr_age\n",
                                   encoding="utf-8")
    (root / "adult.fair").unlink()
    return root


def _rename(project, needle, offset, new, open_two=False):
    lib, one, two = project / "lib.fair", project / "one.fair", project / "two.fair"

    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(lib)
            await s.opened(one)
            if open_two:
                await s.opened(two)
            return await s.client.text_document_rename_async(T.RenameParams(
                text_document=T.TextDocumentIdentifier(uri=uri), position=s.pos(text, needle, offset), new_name=new))

    return asyncio.run(scenario())


def _apply(project, edit):
    for f in ("lib.fair", "one.fair", "two.fair"):
        p = project / f
        got = [es for u, es in edit.changes.items() if u.endswith("/" + f)]
        if got:
            p.write_text(apply_edits(p.read_text(encoding="utf-8"), got[0]), encoding="utf-8")


@pytest.mark.parametrize("open_two", [False, True])
def test_a_parameter_renamed_in_the_library_is_renamed_where_importers_pass_it_by_name(project, open_two):
    before = {f: _said(project / f) for f in ("lib.fair", "one.fair", "two.fair")}
    assert not [c for f in before.values() for c in f if c[1] == "error"], before
    edit = _rename(project, "protected: set", 0, "shielded", open_two)
    assert sorted(u.rsplit("/", 1)[1] for u in edit.changes) == ["lib.fair", "two.fair"], edit.changes
    _apply(project, edit)
    assert "protected = {sex, race}" not in (project / "two.fair").read_text(encoding="utf-8")
    assert "shielded = {sex, race}" in (project / "two.fair").read_text(encoding="utf-8")
    assert {f: _said(project / f) for f in before} == before
    # the default-valued one, passed by name in one.fair only
    edit = _rename(project, "gap: int", 0, "spread", open_two)
    assert sorted(u.rsplit("/", 1)[1] for u in edit.changes) == ["lib.fair", "one.fair"], edit.changes
    _apply(project, edit)
    assert "spread = 3" in (project / "one.fair").read_text(encoding="utf-8")
    assert {f: _said(project / f) for f in before} == before


def test_the_policy_renamed_in_the_library_is_renamed_where_it_is_applied(project):
    before = {f: _said(project / f) for f in ("lib.fair", "one.fair", "two.fair")}
    edit = _rename(project, "policy close_in_age", len("policy "), "near_in_age")
    assert sorted(u.rsplit("/", 1)[1] for u in edit.changes) == ["lib.fair", "one.fair", "two.fair"]
    _apply(project, edit)
    assert "apply near_in_age(lr" in (project / "two.fair").read_text(encoding="utf-8")
    assert {f: _said(project / f) for f in before} == before


def test_an_importer_where_the_new_name_is_taken_refuses_naming_it(project):
    two = project / "two.fair"
    two.write_text(two.read_text(encoding="utf-8") + "\ngroup shielded = age >= 40\n", encoding="utf-8")
    with pytest.raises(Exception, match=r"two\.fair:\d+, which imports lib\.fair"):
        _rename(project, "policy close_in_age", len("policy "), "shielded")
    assert (project / "lib.fair").read_text(encoding="utf-8") == LIBRARY


def test_renamed_from_an_importing_spec_the_other_importer_follows(project):
    before = {f: _said(project / f) for f in ("lib.fair", "one.fair", "two.fair")}

    async def scenario():
        async with Session() as s:
            uri, text, _ = await s.opened(project / "one.fair")
            return await s.client.text_document_rename_async(T.RenameParams(
                text_document=T.TextDocumentIdentifier(uri=uri), position=s.pos(text, "apply close_in_age", 6),
                new_name="near_in_age"))

    edit = asyncio.run(scenario())
    assert sorted(u.rsplit("/", 1)[1] for u in edit.changes) == ["lib.fair", "one.fair", "two.fair"]
    _apply(project, edit)
    assert {f: _said(project / f) for f in before} == before


def test_an_importer_in_another_folder_of_the_project_and_one_that_does_not_parse(tmp_path):
    """lib/ and specs/ under one project (fairspec.toml): the importer's edits are the user's to make;
    an importer that does not parse refuses the rename, naming it and its import line."""
    (tmp_path / "fairspec.toml").write_text("", encoding="utf-8")
    (tmp_path / "lib").mkdir()
    (tmp_path / "specs").mkdir()
    lib = tmp_path / "lib" / "lib.fair"
    lib.write_text("features P {\n  age : int in [0, 120]\n  sex : {f, m} protected\n}\n", encoding="utf-8")
    spec = tmp_path / "specs" / "a.fair"
    spec.write_text('import "../lib/lib.fair"\n\ngroup older = age >= 40\n', encoding="utf-8")
    before = _said(spec)

    async def rename(old, new):
        async with Session() as s:
            uri, text, _ = await s.opened(lib)
            return await s.client.text_document_rename_async(T.RenameParams(
                text_document=T.TextDocumentIdentifier(uri=uri), position=s.pos(text, old + " :"), new_name=new))

    edit = asyncio.run(rename("age", "years"))
    assert sorted(u.rsplit("/", 1)[1] for u in edit.changes) == ["a.fair", "lib.fair"], edit.changes
    for u, es in edit.changes.items():
        p = lib if u.endswith("lib.fair") else spec
        p.write_text(apply_edits(p.read_text(encoding="utf-8"), es), encoding="utf-8")
    assert "group older = years >= 40" in spec.read_text(encoding="utf-8")
    assert _said(spec) == before
    (tmp_path / "specs" / "b.fair").write_text('# b\nimport "../lib/lib.fair"\n\ngroup g = (\n', encoding="utf-8")
    with pytest.raises(Exception, match=r"b\.fair:2, which imports lib\.fair, does not parse"):
        asyncio.run(rename("years", "age"))


DEEP_LIB = """features F {
  age : int in [17, 90]
  sex : {Female, Male} protected
}
model m = rule(age >= 40)
policy pol(m: model, F: features) {
  property same {
    forall x, x' : F
    require x.* == x'.* except {sex}
    ensure label(m(x)) == label(m(x'))
  }
}
"""


@pytest.mark.parametrize("depth", [40, 70])
def test_a_rename_past_the_import_depth_cap_says_which_spec_it_did_not_follow(tmp_path, depth):
    """A spec reaching the library through more than MAX_DEPTH imports, one inside the other, is not
    followed to its end (the cap stays); the rename says so in a window/showMessage naming it."""
    from fairspec.lsp.renames import MAX_DEPTH

    assert MAX_DEPTH < 70
    (tmp_path / "fairspec.toml").write_text("", encoding="utf-8")
    (tmp_path / "lib.fair").write_text(DEEP_LIB, encoding="utf-8")
    for i in range(depth):  # c0 -> c1 -> ... -> c{depth-1} -> lib.fair
        nxt = f"c{i + 1}.fair" if i + 1 < depth else "lib.fair"
        (tmp_path / f"c{i}.fair").write_text(f'import "{nxt}"\n', encoding="utf-8")
    (tmp_path / "top.fair").write_text('import "c0.fair"\napply pol(m, F) as top\n', encoding="utf-8")
    shown, logged = [], []

    async def scenario():
        async with Session() as s:
            s.client.feature(T.WINDOW_SHOW_MESSAGE)(lambda p: shown.append(p))
            s.client.feature(T.WINDOW_LOG_MESSAGE)(lambda p: logged.append(p.message))
            uri, text, _ = await s.opened(tmp_path / "lib.fair")
            edit = await s.client.text_document_rename_async(T.RenameParams(
                text_document=T.TextDocumentIdentifier(uri=uri), position=s.pos(text, "pol(", 0), new_name="fair"))
            await s.hover(uri, s.pos(text, "pol(", 0))  # (a round trip: a message came before it)
            refs = await s.references(uri, s.pos(text, "pol(", 0))
            await s.hover(uri, s.pos(text, "pol(", 0))
            assert {r.uri.rsplit("/", 1)[-1] for r in refs} == ({"lib.fair"} if depth == 70 else {"lib.fair", "top.fair"})
            return edit

    edit = asyncio.run(scenario())
    renamed = sorted(u.rsplit("/", 1)[-1] for u in edit.changes)
    if depth == 40:
        assert renamed == ["lib.fair", "top.fair"] and shown == [], (renamed, shown)  # 41 imports: followed
        return
    assert renamed == ["lib.fair"], renamed
    assert [p.type for p in shown] == [T.MessageType.Warning] * 2, shown  # the rename's, the references'
    said = shown[0].message
    # top.fair and c0-c4 are 66-70 imports away from lib.fair: not followed, the first three named
    assert said.startswith("6 specs (c0.fair, c1.fair, c2.fair and 3 more) import through a chain of over 64 "
                           "imports, one inside the other, that was not followed to its end"), said
    assert said.endswith("if one imports lib.fair there, its uses of 'pol' were not renamed"), said
    assert said in logged
    assert shown[1].message == said.replace("were not renamed", "were not searched"), shown


def test_an_index_resolves_each_source_once_not_once_per_module(tmp_path, monkeypatch):
    """analyse resolved every source's path again for every module it read (a chain of n open specs: n * n
    realpath calls, 253k in the depth-70 rename above, most of its time); now a few per file."""
    from fairspec.lsp.analysis import index

    n = 40
    for i in range(n):
        (tmp_path / f"c{i}.fair").write_text(f'import "c{i + 1}.fair"\n' if i + 1 < n else "", encoding="utf-8")
    sources = {str(tmp_path / f"c{i}.fair"): (tmp_path / f"c{i}.fair").read_text() + f"# {i}\n" for i in range(n)}
    real, calls = index.real_path, []
    monkeypatch.setattr(index, "real_path", lambda p: calls.append(p) or real(p))
    idx = index.analyse(str(tmp_path / "c0.fair"), sources)
    by_real = {str(real(k)): v for k, v in sources.items()}
    assert len(idx.modules) == n and all(idx.texts[m.file] == by_real[str(real(m.file))] for m in idx.modules)
    assert len(calls) <= 6 * n, len(calls)
