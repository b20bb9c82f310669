"""Assertions for ordinary tests: check a spec (with in-memory models and data) inside a test.

    from fairspec.testing import assert_fair

    def test_model_is_fair(trained_pipeline, test_frame):
        assert_fair("fairness/credit.fair", models={"clf": trained_pipeline}, data={"test": test_frame})

The plugin (``pytest --fairspec``, fairspec/pytest_plugin.py) turns .fair files into test items instead.
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = ["assert_fair"]


def assert_fair(spec, *, models: Mapping[str, Any] | None = None, data: Mapping[str, Any] | None = None,
                property: str | None = None, allow_unknown: bool = False, allow=()):
    """Check the spec; raise AssertionError naming every property that is violated (with its value,
    witness and notes) or unknown (unless ``allow_unknown``; an internal error -- a fairspec bug, exit code 4 --
    is never allowed), every lint error, and a spec that states no property. The notes of a
    property that passes are warned (``fairspec.pytest_plugin.FairspecNote``; silenced by the filter
    ``ignore::fairspec.pytest_plugin.FairspecNote``). Returns the report."""
    __tracebackhide__ = True  # pytest shows the failing test's line and the message, not this frame
    import fairspec
    from fairspec.diagnostics import render_full
    from fairspec.diagnostics.visible import visible_value
    from fairspec.pytest_plugin import describe, property_warnings, warn_notes, warn_warnings

    report = fairspec.check(spec, models=models, data=data, property=property, allow=allow)
    if report.report.interrupted:  # Ctrl-C stopped the check (it caught it to report what it had): stop the test run
        raise KeyboardInterrupt
    problems = [render_full(d) for d in report.diagnostics if d.is_error]
    if report.report.error:
        problems.append(visible_value(report.report.error))  # one line, no ##[: a CI log reads it
    # a bug in fairspec (exit code 4) is never an unknown the caller allowed: nothing decided that property
    problems.extend(f"internal error: {visible_value(e)}" for e in report.report.internal_errors)
    for v in report:
        if v.status == "violated" or (v.status == "unknown" and not allow_unknown):
            problems.append(describe(v) + "".join(f"\n  warning: {visible_value(w)}"
                                                  for w in property_warnings(report.report, v.name)))
        else:  # holds, or an unknown allowed: the test passes, its notes and the check's warnings are warned
            warn_notes(v)
            warn_warnings(report.report, v)
    if not problems and not len(report):  # nothing was checked: a test that asserts nothing must not pass
        problems.append("no property to check (the spec and the policies it applies state none)")
    if problems:
        raise AssertionError(f"{spec}: " + "\n".join(problems))
    return report
