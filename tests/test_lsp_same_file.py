"""Requests ask which occurrences are under the cursor, in which file: a file is compared by its text
first and resolved on disk only when the texts differ and the span is around the position. Every
occurrence of every module (the imported policies' too) was resolved twice per request -- an lstat per
path component, 80% of test_lsp's half-typed walk (83 s of its 90)."""

from __future__ import annotations

from pathlib import Path

from conftest import EXAMPLES
from fairspec.lsp import analysis as A
from fairspec.lsp.analysis.index import _same

ADULT = EXAMPLES / "adult" / "adult.fair"


def test_requests_in_a_spec_that_imports_policies_resolve_no_path_per_occurrence(monkeypatch):
    path = str(ADULT.resolve())
    idx = A.analyse(path)
    assert idx.ok and len({o.span.file for o in idx.occurrences}) >= 2     # its own and the policies'
    resolved = []
    real = Path.resolve

    def counting(self, *a, **k):
        resolved.append(str(self))
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "resolve", counting)
    lines = ADULT.read_text(encoding="utf-8").split("\n")
    asked = 0
    for ln in range(1, len(lines) + 1, 5):
        for col in (1, 3, len(lines[ln - 1]) + 1):
            A.hover(idx, path, ln, col)
            A.definition(idx, path, ln, col)
            A.references(idx, path, ln, col)
            asked += 3
    # a few per module at most (12 a request here), never two per occurrence (133 here: 45,770 in all before)
    assert asked > 100 and len(resolved) <= 4 * len(idx.modules) * asked, (asked, len(resolved), resolved[:5])


def test_a_file_named_by_another_text_is_still_the_same_file(tmp_path):
    (tmp_path / "a.fair").write_text("", encoding="utf-8")
    (tmp_path / "link.fair").symlink_to(tmp_path / "a.fair")
    a = str(tmp_path / "a.fair")
    assert _same(a, a) and _same(a, str(tmp_path / "sub" / ".." / "a.fair")) and _same(a, str(tmp_path / "link.fair"))
    assert not _same(a, str(tmp_path / "b.fair"))
