"""pytest plugin: every property of a .fair file is a test item.

Inert unless asked: run ``pytest --fairspec`` (or set ``fairspec = true`` in the ini file) and pytest
collects the ``.fair`` files it walks past; each property becomes an item named after it
(``spec.fair::four_fifths.disparate_impact``), selectable with ``-k`` and ``-m fairspec``.

    holds (proved or estimated)  passes (its notes and the check's warnings about it -- FS439, ... --, if
                                 any, each a FairspecNote warning: silence them with
                                 filterwarnings = ignore::fairspec.pytest_plugin.FairspecNote)
    violated                     fails, with the value, the claim and the replayed witness
    unknown                      fails (``--fairspec-unknown=skip`` or ``xfail`` to relax it; an internal
                                 error, a fairspec bug, always fails)
    a spec with lint errors      one failing item, ``spec.fair::lint``, with the diagnostics

ini options: ``fairspec_skip`` / ``fairspec_xfail``: lines ``PATTERN [reason]``, where PATTERN is an
fnmatch pattern over the item's node id (``specs/*.fair::*.equalized_odds``): matching items are
skipped / marked xfail (strict; only a verdict -- violated, or unknown -- is the expected failure: a
file that cannot be used or an internal error still fails). Items also carry the marker ``fairspec``.

Inside ordinary tests, :func:`fairspec.testing.assert_fair` checks a spec (and in-memory models).
"""

from __future__ import annotations

import fnmatch
import warnings
from pathlib import Path

import pytest

from fairspec.diagnostics.visible import visible_value


def pytest_addoption(parser):
    group = parser.getgroup("fairspec", "fairness specifications (.fair files)")
    group.addoption("--fairspec", action="store_true", default=None,
                    help="collect .fair files: each property is a test item")
    group.addoption("--fairspec-unknown", choices=("fail", "skip", "xfail"), default=None,
                    help="what an `unknown` verdict is (default: fail)")
    parser.addini("fairspec", type="bool", default=False, help="collect .fair files (as --fairspec)")
    parser.addini("fairspec_unknown", default="fail", help="fail | skip | xfail for `unknown` verdicts")
    parser.addini("fairspec_skip", type="linelist", default=[], help="PATTERN [reason]: skip matching items")
    parser.addini("fairspec_xfail", type="linelist", default=[], help="PATTERN [reason]: xfail matching items")


def pytest_configure(config):
    config.addinivalue_line("markers", "fairspec: a property of a .fair specification")


def _enabled(config) -> bool:
    opt = config.getoption("--fairspec")
    return bool(opt) if opt is not None else bool(config.getini("fairspec"))


def pytest_collect_file(file_path: Path, parent):
    if file_path.suffix == ".fair" and _enabled(parent.config):
        return SpecFile.from_parent(parent, path=file_path)
    return None


def _rules(config, name: str):
    for line in config.getini(name):
        pattern, _, reason = line.strip().partition(" ")
        if pattern:
            yield pattern, reason.strip() or f"{name} in the ini file"


class SpecFile(pytest.File):
    def collect(self):
        from fairspec import pipeline

        res = pipeline.lint(self.path)
        if any(d.is_error for d in res.diagnostics) or res.spec is None:
            yield LintItem.from_parent(self, name="lint", diagnostics=res.diagnostics)
            return
        if not res.spec.properties:
            # a file that applies policies and so states no property meant to check something: one failing item
            # (no item would let the suite pass); one of declarations and policies only is a library, no item
            if _applies(res, self.path):
                yield NothingItem.from_parent(self, name="check")
            return
        for prop in res.spec.properties:
            item = PropertyItem.from_parent(self, name=prop.name, line=getattr(prop.span, "line", 1))
            item.add_marker(pytest.mark.fairspec)
            for pattern, reason in _rules(self.config, "fairspec_skip"):
                if fnmatch.fnmatch(item.nodeid, pattern):
                    item.add_marker(pytest.mark.skip(reason=reason))
            for pattern, reason in _rules(self.config, "fairspec_xfail"):
                if fnmatch.fnmatch(item.nodeid, pattern):
                    item.add_marker(pytest.mark.xfail(reason=reason, strict=True, raises=FairspecVerdictFailure))
            yield item

    def report_for(self, name: str, session):
        """One check per file: all the file's selected properties at once (models loaded once)."""
        from fairspec import pipeline

        cache = self.__dict__.setdefault("_fairspec_reports", {})
        if "all" in cache:
            return cache["all"]
        if name in cache:
            return cache[name]
        mine = [i for i in (getattr(session, "items", None) or []) if i.parent is self]
        if len(mine) > 1:
            cache["all"] = pipeline.check(self.path)
            return cache["all"]
        cache[name] = pipeline.check(self.path, only=name)
        return cache[name]


class FairspecFailure(Exception):
    """An item that fails: a spec, model or data file that cannot be used, an internal error, or (the
    subclass) a verdict."""


class FairspecVerdictFailure(FairspecFailure):
    """A verdict that fails its item (violated, or unknown not relaxed): the only failure an ini
    ``fairspec_xfail`` pattern expects -- a data file that cannot be read is never an expected failure."""


class FairspecNote(UserWarning):
    """A note a backend left on a verdict that holds (``details.notes``: an option with no effect
    here, a table row the model does not use): a passing test has no message, so it is a warning.
    Under ``-W error`` / ``filterwarnings = error`` it fails the item, as any warning does there; the
    message says how to silence it: ``filterwarnings = ignore::fairspec.pytest_plugin.FairspecNote``."""


SILENCE = "ignore::fairspec.pytest_plugin.FairspecNote"


def warn_notes(verdict) -> None:
    """Warn the notes of a verdict whose test passes (``holds``): the text report shows them under it."""
    from fairspec.report import verdict_notes

    for n in verdict_notes(verdict):
        warnings.warn(FairspecNote(f"{verdict.name}: {verdict.status}; note: {visible_value(n)} (the test "
                                   f"passes; change the spec as the note says, or silence these notes with "
                                   f"filterwarnings = {SILENCE})"), stacklevel=2)


def property_warnings(report, name: str) -> list[str]:
    """The warnings the check said while deciding property ``name`` (FS439 at the model's declaration,
    a pickle's FS427, ...: ``Report.property_warnings``), each as one line: the CLI prints them above its
    table, so an item names them too."""
    out = []
    for w in (getattr(report, "property_warnings", None) or {}).get(name, ()):
        if hasattr(w, "code"):
            where = f" ({w.span.file}:{w.span.line})" if getattr(w, "span", None) is not None else ""
            out.append(f"{w.code}: {w.message}{where}" + (f" (hint: {w.hint})" if w.hint else ""))
        else:
            out.append(str(w))
    return out


def warn_warnings(report, verdict) -> None:
    """Warn what the check said while deciding a verdict that holds (:func:`property_warnings`), as its notes."""
    for w in property_warnings(report, verdict.name):
        warnings.warn(FairspecNote(f"{verdict.name}: {verdict.status}; warning {visible_value(w)} (the test "
                                   f"passes; act on the warning, acknowledge it with an ignore comment, or "
                                   f"silence these notes with filterwarnings = {SILENCE})"), stacklevel=2)


class LintItem(pytest.Item):
    def __init__(self, *, diagnostics, **kw):
        super().__init__(**kw)
        self.diagnostics = diagnostics

    def runtest(self):
        from fairspec.diagnostics import render_full

        raise FairspecFailure("\n".join(render_full(d) for d in self.diagnostics if d.is_error))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, FairspecFailure):
            return f"{self.path.name} has lint errors:\n{excinfo.value}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, 0, f"fairspec lint {self.path.name}"


def _applies(res, path) -> bool:
    """Does the spec file itself (not an import) apply a policy?"""
    from fairspec.syntax import ast

    mine = [m for m in res.modules or () if Path(str(m.file)).resolve() == Path(path).resolve()]
    return any(isinstance(d, ast.ApplyDecl) for m in mine for d in m.decls)


class NothingItem(pytest.Item):
    """``spec.fair::check`` of a spec that applies policies and states no property (fairspec.pipeline.
    nothing_to_check): it fails, as `fairspec check` exits 2 and ``assert_fair`` raises."""

    def runtest(self):
        from fairspec.pipeline import nothing_to_check

        raise FairspecFailure(visible_value(nothing_to_check(self.path.name)))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, FairspecFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, 0, f"fairspec check {self.path.name}"


class PropertyItem(pytest.Item):
    def __init__(self, *, line: int = 1, **kw):
        super().__init__(**kw)
        self.line = line

    def runtest(self):
        report = self.parent.report_for(self.name, self.session)
        if report.interrupted:  # Ctrl-C stopped the check, which caught it: pytest stops as it does on Ctrl-C
            raise KeyboardInterrupt
        if report.error:  # every text from a value made visible: a CI log reads a pytest failure too
            raise FairspecFailure(visible_value(report.error))
        verdict = next((v for v in report.verdicts if v.name == self.name), None)
        if verdict is None:
            errors = [d for d in report.diagnostics if d.is_error]
            raise FairspecFailure(visible_value("; ".join(d.message for d in errors)) or f"no verdict for {self.name}")
        if verdict.status == "holds":
            warn_notes(verdict)
            warn_warnings(report, verdict)
            return
        bug = [e for e in report.internal_errors if e.startswith(f"{self.name}: ")]
        if bug:  # a fairspec bug (exit code 4) is no unknown --fairspec-unknown may skip or xfail: it fails
            raise FairspecFailure(visible_value(f"internal error: {bug[0]}"))
        if verdict.status == "unknown":
            from fairspec.report import verdict_notes

            mode = self.config.getoption("--fairspec-unknown") or self.config.getini("fairspec_unknown")
            said = "".join(f"; note: {visible_value(n)}" for n in verdict_notes(verdict))
            if mode == "skip":  # located at the property (reportinfo), as a skip marker is, not at this line
                raise pytest.skip.Exception(f"unknown: {visible_value(verdict.reason)}{said}", _use_item_location=True)
            if mode == "xfail":
                pytest.xfail(f"unknown: {visible_value(verdict.reason)}{said}")
        said = "".join(f"\n  warning: {visible_value(w)}" for w in property_warnings(report, self.name))
        raise FairspecVerdictFailure(describe(verdict) + said)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, FairspecFailure):
            # located as a compiler's message is (file:line: ...), the property's line in the spec: the header
            # pytest prints above it names the property only
            return f"{self.location[0]}:{self.line}: {excinfo.value}"
        if isinstance(excinfo.value, FairspecNote):  # warnings are errors here: say so, not a traceback
            return (f"FairspecNote: {excinfo.value}\n(a warning, which fails the item because warnings are errors "
                    f"here: -W error or filterwarnings = error)")
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, max(0, self.line - 1), f"fairspec: {self.name}"


def describe(verdict) -> str:
    """A verdict as the few lines a test failure shows, each value through visible_value (no control
    character, line break or ``##[`` from a value: fairspec.diagnostics.visible)."""
    from fairspec.report import bound_texts, cell_text as _cell, value_text, verdict_notes, witness_text

    def cell_text(x) -> str:
        return visible_value(_cell(x))

    head = f"{verdict.name}: {verdict.status}" + (f" ({verdict.how})" if verdict.how else "")
    lines = [head]
    if verdict.value is not None:       # 4 decimals, more where they would move it onto or across a threshold
        lines.append(f"  value: {visible_value(value_text(verdict, 'f')) if isinstance(verdict.value, float) else cell_text(verdict.value)}")
    if verdict.bound is not None:       # rounded outward, each end kept on its side of the thresholds
        lo, hi = bound_texts(verdict, "f") if all(isinstance(x, float) for x in verdict.bound) else map(_cell, verdict.bound)
        lines.append(f"  bound: [{visible_value(lo)}, {visible_value(hi)}]")
    if verdict.reason:
        lines.append(f"  reason: {cell_text(verdict.reason)}")
    lines.extend(f"  note: {visible_value(n)}" for n in verdict_notes(verdict))  # as the text report
    w = verdict.witness
    if w is not None:
        lines.append(f"  witness x : {cell_text(witness_text(w.features, w.x))}")   # spec text, not a dict
        lines.append(f"  witness x': {cell_text(witness_text(w.features_prime, w.x_prime))}")
        if w.outputs:
            shown = w.output_texts() if w.output_labels is not None else list(w.outputs)
            shown = ", ".join(map(str, shown)) if w.output_labels is not None else str(shown)
            lines.append(f"  outputs   : {cell_text(shown)} (replayed by {cell_text(w.replayed_by)})")
    return "\n".join(lines)
