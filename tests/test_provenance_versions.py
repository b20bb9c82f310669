"""The versions a report's provenance names are read once per state of the installed distributions
(fairspec.report.provenance.installed): a process that checks many times reads them once (~12 ms CPU
a report), and a distribution installed, upgraded or removed in between (a notebook's `%pip install`)
is what the next report names."""

from __future__ import annotations

import os
import time

from fairspec.report import provenance


def _dist(folder, name: str, version: str):
    info = folder / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return info


def _age(folder, seconds: float = 60.0) -> None:
    then = time.time() - seconds
    os.utime(folder, (then, then))


def test_a_distribution_installed_upgraded_or_removed_between_two_reports_is_what_the_second_names(
        tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    _age(site)
    monkeypatch.syspath_prepend(str(site))
    before = provenance.installed()[1]
    assert before == provenance._versions() and before.get("numpy") != "99.0"

    old = _dist(site, "numpy", "99.0")           # installed (ahead of the real numpy on sys.path)
    _age(site)                                   # even with a time stamp in the past: it is another one
    assert provenance.installed()[1]["numpy"] == "99.0"
    assert provenance.installed()[1] == provenance._versions()

    old.rename(site / "numpy-99.1.dist-info")     # upgraded
    (site / "numpy-99.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: numpy\nVersion: 99.1\n")
    _age(site, 30.0)
    assert provenance.installed()[1]["numpy"] == "99.1"

    (site / "numpy-99.1.dist-info" / "METADATA").unlink()
    (site / "numpy-99.1.dist-info").rmdir()       # removed
    _age(site, 10.0)
    assert provenance.installed()[1] == before


def test_a_path_entry_changed_within_two_seconds_is_read_again(tmp_path, monkeypatch):
    """A file system with coarse time stamps could change an entry twice within one: not kept then."""
    site = tmp_path / "site"
    site.mkdir()                                  # modified now
    monkeypatch.syspath_prepend(str(site))
    assert provenance._metadata_key() is None
    provenance.installed()
    _dist(site, "numpy", "98.0")
    assert provenance.installed()[1]["numpy"] == "98.0"


def test_the_working_folder_entry_is_where_it_is_now(tmp_path, monkeypatch):
    """sys.path's "" is the working folder: another folder is another key."""
    a, b = tmp_path / "a", tmp_path / "b"
    for f in (a, b):
        f.mkdir()
        _age(f)
    monkeypatch.syspath_prepend("")
    monkeypatch.chdir(a)
    provenance.installed()
    _dist(b, "numpy", "97.0")
    _age(b)
    monkeypatch.chdir(b)
    assert provenance.installed()[1]["numpy"] == "97.0"


def test_a_reports_provenance_names_the_installed_versions():
    first = provenance.installed()
    assert first == provenance.installed()
    assert first[1] == provenance._versions() and "numpy" in first[1]
