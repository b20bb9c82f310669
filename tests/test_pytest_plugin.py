"""The pytest plugin (pytest --fairspec): each property of a .fair file is an item; holds passes,
violated fails with the witness, unknown fails unless relaxed, lint errors are one failing item;
-k selects, ini patterns skip / xfail; assert_fair inside ordinary tests. Run with pytester, in this
process (`runpytest_inprocess`): what is tested is the plugin's collection and reports, not a process
boundary, and each inner pytest in a subprocess cost a fresh interpreter with every plugin and
library imported again (the file took 1-2 min of a loaded CI run).

In-process runs share this interpreter's modules: pytester drops the modules an inner run imports
when it ends, and numpy's and xgboost's C modules cannot be loaded twice. So `_warm` (autouse, module
scope: set up before any test's pytester snapshot) imports everything the inner runs use by running
the same check and lint in this process first."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import numpy  # noqa: F401 - loaded before pytester snapshots sys.modules (numpy cannot load twice)
import pytest
from conftest import NOTED_DIST, NOTED_DIST_NOTE
from test_python_api import _tiny_project

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]


def _plugin_args() -> list[str]:
    # when the distribution is installed with its entry point, pytest loads the plugin itself
    installed = any(ep.value == "fairspec.pytest_plugin" for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "fairspec.pytest_plugin"]


BAD = "property p {\n  nonsense(\n}\n"


@pytest.fixture(scope="module", autouse=True)
def _warm(tiny, tmp_path_factory):
    """What the inner runs import, imported before pytester's snapshot (see the module docstring)."""
    import fairspec.pytest_plugin  # noqa: F401
    import fairspec.testing  # noqa: F401
    from fairspec import pipeline
    from fairspec.diagnostics import render_full
    from fairspec.pytest_plugin import describe

    for v in pipeline.check(tiny / "spec.fair").verdicts:
        describe(v)
    bad = tmp_path_factory.mktemp("bad") / "bad.fair"
    bad.write_text(BAD)
    [render_full(d) for d in pipeline.lint(bad).diagnostics]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    """The tiny XGBoost project of test_python_api, made once, before pytester snapshots sys.modules
    (xgboost's and numpy's C modules cannot be loaded twice in one process)."""
    folder = tmp_path_factory.mktemp("tiny")
    spec = _tiny_project(folder)
    text = spec.read_text() + '''
property loose {
  disparate_impact(m, groups s, data = d) >= 0.01
}
property tight {
  disparate_impact(m, groups s, data = d) >= 0.95
}
'''
    spec.write_text(text)
    return folder


def _project(pytester, tiny) -> Path:
    for f in tiny.iterdir():
        (Path(pytester.path) / f.name).write_bytes(f.read_bytes())
    return Path(pytester.path) / "spec.fair"


def test_properties_are_items(pytester, tiny):
    spec = _project(pytester, tiny)
    res = pytester.runpytest_inprocess("--fairspec", "-rA", *_plugin_args())
    res.assert_outcomes(passed=1, failed=2)  # parity is unknown (0.8 inside its interval): a failure
    out = res.stdout.str()
    assert "spec.fair::parity" in out and "spec.fair::loose" in out
    assert "tight: violated" in out and "value:" in out and "parity: unknown" in out
    # the failure names the property's line in the spec, not only its name (a CI log's reader goes there)
    tight = 1 + spec.read_text().splitlines().index("property tight {")
    res.stdout.re_match_lines([rf"spec\.fair:{tight}: tight: violated"])
    res = pytester.runpytest_inprocess("--fairspec", "--fairspec-unknown=skip", "-rs", *_plugin_args())
    res.assert_outcomes(passed=1, failed=1, skipped=1)
    # -rs places the skip at the property in the spec (as a skip marker's), not inside the plugin
    line = 1 + spec.read_text().splitlines().index("property parity {")
    res.stdout.re_match_lines([rf"SKIPPED \[1\] spec\.fair:{line}: unknown: "])
    assert "pytest_plugin.py" not in res.stdout.str()


def test_inert_without_the_flag(pytester, tiny):
    _project(pytester, tiny)
    res = pytester.runpytest_inprocess(*_plugin_args())
    assert res.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_k_selects_and_ini_marks(pytester, tiny):
    _project(pytester, tiny)
    res = pytester.runpytest_inprocess("--fairspec", "-k", "loose", *_plugin_args())
    res.assert_outcomes(passed=1, deselected=2)
    pytester.makeini("[pytest]\nfairspec = true\nfairspec_skip =\n    *::parity\n"
                      "fairspec_xfail =\n    *::tight known gap, ticket 12\n")
    res = pytester.runpytest_inprocess("-rA", *_plugin_args())
    res.assert_outcomes(passed=1, skipped=1, xfailed=1)
    assert "known gap, ticket 12" in res.stdout.str()


def test_lint_errors_are_one_item(pytester):
    (Path(pytester.path) / "bad.fair").write_text(BAD)
    res = pytester.runpytest_inprocess("--fairspec", *_plugin_args())
    res.assert_outcomes(failed=1)
    assert "bad.fair::lint" in res.stdout.str() and "FS1" in res.stdout.str()


def test_assert_fair_in_an_ordinary_test(pytester, tiny):
    spec = _project(pytester, tiny)
    pytester.makepyfile(test_model=f'''
import pytest
from fairspec.testing import assert_fair

def test_loose_holds():
    assert_fair({str(spec)!r}, property="loose")

def test_tight_fails_with_its_value():
    with pytest.raises(AssertionError, match="tight: violated"):
        assert_fair({str(spec)!r}, property="tight")
''')
    res = pytester.runpytest_inprocess(*_plugin_args())
    res.assert_outcomes(passed=2)


def test_a_failing_assert_fair_shows_the_test_line_not_its_own_frame(pytester, tiny):
    spec = _project(pytester, tiny)
    pytester.makepyfile(test_model=f'''
from fairspec.testing import assert_fair

def test_tight():
    assert_fair({str(spec)!r}, property="tight")
''')
    res = pytester.runpytest_inprocess(*_plugin_args())
    res.assert_outcomes(failed=1)
    out = res.stdout.str()
    assert 'assert_fair(' in out and "tight: violated" in out        # the test's line and the message
    assert "raise AssertionError" not in out and "testing.py" not in out, out  # __tracebackhide__


NOTED = NOTED_DIST.replace("property sp {", "property tight {") + """
property loose {
  statistical_parity(m, groups P, distribution d) <= 1
}
"""
NOTE = NOTED_DIST_NOTE


def test_describe_carries_the_notes():
    """A failure message carries the notes the text report shows under the verdict (they were left out)."""
    from fairspec.pytest_plugin import describe
    from fairspec.verdict import Verdict

    v = Verdict("sp", "group_metric", "violated", value=0.5, details={"notes": ["`partitions` has no effect here"],
                                                                     "distribution": {"notes": [NOTE]}})
    assert describe(v).splitlines()[-2:] == ["  note: `partitions` has no effect here", f"  note: {NOTE}"]


def test_the_plugin_and_assert_fair_show_the_notes(pytester):
    """pytest --fairspec: a failing item's message has its verdict's notes; a passing item with notes warns
    them (FairspecNote, in the warnings summary), as assert_fair does for its holding properties."""
    from fairspec import pipeline

    spec = Path(pytester.path) / "noted.fair"
    spec.write_text(NOTED)
    assert [v.status for v in pipeline.check(spec).verdicts] == ["violated", "holds"]  # warms the imports too
    res = pytester.runpytest_inprocess("--fairspec", "-rA", *_plugin_args())
    res.assert_outcomes(passed=1, failed=1, warnings=1)
    out = res.stdout.str()
    assert f"  note: {NOTE}" in out and "tight: violated" in out
    assert f"FairspecNote: loose: holds; note: {NOTE}" in out
    spec.rename(Path(pytester.path) / "noted.txt")
    pytester.makepyfile(test_model=f'''
import pytest
from fairspec.pytest_plugin import FairspecNote
from fairspec.testing import assert_fair

def test_tight_fails_with_its_note():
    with pytest.raises(AssertionError) as e:
        assert_fair({str(Path(pytester.path) / "noted.txt")!r}, property="tight")
    assert {f"  note: {NOTE}"!r} in str(e.value).splitlines()

def test_loose_warns_its_note():
    with pytest.warns(FairspecNote, match="loose: holds; note: p"):
        assert_fair({str(Path(pytester.path) / "noted.txt")!r}, property="loose")
''')
    res = pytester.runpytest_inprocess(*_plugin_args())
    res.assert_outcomes(passed=2)


def test_a_note_under_warnings_as_errors_and_the_documented_filter(pytester):
    """Under -W error / filterwarnings = error (common in CI configs) a passing item's FairspecNote fails
    it, as any warning does there: the failure says so without a traceback, the message says how to
    silence it, and the README's filter does silence it (the item passes, nothing is warned)."""
    import re

    from fairspec.pytest_plugin import SILENCE

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    (documented,) = [b for b in re.findall(r"```ini\n(.*?)```", readme, re.S) if "FairspecNote" in b]
    assert SILENCE in documented
    (Path(pytester.path) / "noted.fair").write_text(NOTED)
    args = ("--fairspec", "-k", "loose", "-rA", *_plugin_args())
    # in fresh processes, as CI runs them (in-process runs after others may import a module twice: its
    # classes then differ, for isinstance and for the filter's class alike)
    pytester.makeini("[pytest]\nfilterwarnings =\n    error\n")
    res = pytester.runpytest_subprocess(*args)
    res.assert_outcomes(failed=1)
    out = res.stdout.str()
    assert f"FairspecNote: loose: holds; note: {NOTE} (the test passes; change the spec as the note says, or " \
           f"silence these notes with filterwarnings = {SILENCE})" in out
    assert "because warnings are errors here" in out and "Traceback" not in out
    pytester.makeini(documented)  # the README's block, as written
    res = pytester.runpytest_subprocess(*args)
    res.assert_outcomes(passed=1)
    assert "FairspecNote" not in res.stdout.str()
