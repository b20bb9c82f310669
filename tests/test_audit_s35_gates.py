"""Session 35 audit of what CI and a test suite are told (brief h1 round 2): exit codes, the GitHub
Action's verdict step, fairspec.testing.assert_fair, the pytest plugin and the machine formats. A gate
that passes when it should not is as bad as a wrong proof: each test here failed before its fix."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _verdict_step() -> str:
    import yaml

    action = yaml.safe_load((ROOT / "action.yml").read_text())
    return next(s for s in action["runs"]["steps"] if s.get("name") == "verdict")["run"]


@pytest.mark.parametrize("value, code", [("true", 3), ("True", 3), ("TRUE", 3), ("yes", 3), ("", 3), (" true", 3),
                                         ("false", 0), ("False", 0), ("FALSE", 0)])
def test_the_action_lets_an_unknown_pass_only_when_fail_on_unknown_says_false(value, code):
    """fail-on-unknown relaxed exit 3 for every value but the exact string 'true' ('True', 'yes', an empty
    expression): README and action.yml promise the job fails on an unknown unless the input is 'false'."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "CODE": "3", "FAIL_ON_UNKNOWN": value}
    assert subprocess.run(["bash", "-c", _verdict_step()], env=env).returncode == code


@pytest.mark.parametrize("c", ["0", "1", "2", "4", "130"])
def test_the_action_step_keeps_every_other_code_whatever_fail_on_unknown_says(c):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "CODE": c, "FAIL_ON_UNKNOWN": "false"}
    assert subprocess.run(["bash", "-c", _verdict_step()], env=env).returncode == int(c)


def test_the_action_step_fails_when_the_check_step_left_no_exit_code():
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "CODE": "", "FAIL_ON_UNKNOWN": "false"}
    assert subprocess.run(["bash", "-c", _verdict_step()], env=env, capture_output=True).returncode == 2


# --- a tiny project: a logistic regression (skops), 2 features, a data table --------------------------

SPEC = '''data d = csv("d.csv", label = y == 1)
features P from d {
  a : int in [0, 5]
  s : {M, F} protected
}
model m = sklearn("m.skops")
encode P for m {  # fairspec: ignore[FS427]
  a : raw
  s : code
}
'''
LOOSE = "property loose {\n  disparate_impact(m, groups s, data = d) >= 0.01\n}\n"


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    import numpy as np
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    folder = tmp_path_factory.mktemp("gates")
    rng = np.random.default_rng(0)
    a, s = rng.integers(0, 6, 300), rng.integers(0, 2, 300)
    y = ((a + 2 * s + rng.normal(0, 1.5, 300)) > 3.5).astype(int)
    (folder / "d.csv").write_text("a,s,y\n" + "".join(f"{x},{'MF'[z]},{w}\n" for x, z, w in zip(a, s, y)))
    sio.dump(LogisticRegression().fit(np.column_stack([a, s]).astype(float), y), folder / "m.skops")
    (folder / "fairspec.toml").write_text("")
    return folder


def _spec(project: Path, name: str, body: str) -> Path:
    p = project / name
    p.write_text(SPEC + body)
    return p


def _broken(monkeypatch):
    """A bug in the data backend: the property is unknown naming the internal error (exit code 4)."""
    import fairspec.kinds.on_data as on_data

    def boom(*a, **k):
        raise RuntimeError("a bug")

    monkeypatch.delenv("FAIRSPEC_DEBUG", raising=False)
    monkeypatch.setattr(on_data, "run", boom)


def test_assert_fair_fails_on_an_internal_error_even_when_unknowns_are_allowed(project, monkeypatch):
    """allow_unknown=True passed a property whose backend crashed (a fairspec bug, exit code 4) as an
    allowed unknown: the test passed on a property nothing decided."""
    from fairspec.testing import assert_fair

    spec = _spec(project, "internal.fair", LOOSE)
    _broken(monkeypatch)
    with pytest.raises(AssertionError, match="internal error"):
        assert_fair(spec, allow_unknown=True)


CONFTEST = '''
import fairspec.kinds.on_data as on_data

_run = on_data.run


def run(prop, *a, **k):
    if prop.name == "crash":
        raise RuntimeError("a bug")
    if prop.name == "stop":
        raise KeyboardInterrupt
    if prop.name == "broken":
        from fairspec.runtime.data import DataError

        raise DataError("d.csv cannot be read: row 7 is cut short")
    return _run(prop, *a, **k)


on_data.run = run
'''


def _inner_pytest(project, tmp_path, name: str, last: str, *extra: str):
    """pytest --fairspec --fairspec-unknown=skip on a spec with `loose` and `last`, in a subprocess, as CI runs
    it (the plugin as installed), with CONFTEST's broken backend."""
    from conftest import _cli_env

    for f in ("d.csv", "m.skops", "fairspec.toml"):
        (tmp_path / f).write_bytes((project / f).read_bytes())
    _spec(tmp_path, name, LOOSE + f"property {last} {{\n  disparate_impact(m, groups s, data = d) >= 0.01\n}}\n")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    env = _cli_env()
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(tmp_path)])
    return subprocess.run([os.sys.executable, "-m", "pytest", "--fairspec", "--fairspec-unknown=skip", "-rA", "-q",
                           "-p", "no:cacheprovider", "-o", "addopts=", *extra, name],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def test_the_plugin_stops_the_run_on_a_ctrl_c_the_check_caught(project, tmp_path):
    """Ctrl-C during a property's check was caught by the check (the property unknown, interrupted), and
    under --fairspec-unknown=skip the item was skipped and pytest went on, exit 0 at the end."""
    r = _inner_pytest(project, tmp_path, "stop.fair", "stop")
    assert r.returncode == 2 and "KeyboardInterrupt" in r.stdout + r.stderr, r.stdout + r.stderr


def test_the_plugin_fails_an_internal_error_under_fairspec_unknown_skip(project, tmp_path):
    """--fairspec-unknown=skip skipped a property whose backend crashed (exit code 4 on the command line):
    the run was green."""
    r = _inner_pytest(project, tmp_path, "spec.fair", "crash")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "PASSED spec.fair::loose" in r.stdout and "FAILED spec.fair::crash" in r.stdout, r.stdout
    assert "internal error" in r.stdout, r.stdout


@pytest.mark.parametrize("fmt", ["json", "sarif", "github"])
def test_lint_in_a_machine_format_keeps_what_a_library_writes_to_fd_1_off_stdout(project, monkeypatch, capfd, fmt):
    """lint loads the models to type-check them (LightGBM's logger and xgboost's non-warning log lines are
    Python prints, C libraries write to fd 1 directly): `lint --format json` printed that text before its
    document, which then did not parse. check already pointed fd 1 at stderr while it works; lint did not."""
    import json

    from fairspec import cli, pipeline

    spec = _spec(project, "lintfd.fair", LOOSE)
    real = pipeline.lint

    def chatty(*a, **k):
        os.write(1, b"[LightGBM] [Warning] a C library's line on fd 1\n")
        print("a Python print from a library's logger")
        return real(*a, **k)

    monkeypatch.setattr(pipeline, "lint", chatty)
    assert cli.main(["lint", str(spec), "--format", fmt]) == 0
    out, err = capfd.readouterr()
    assert "LightGBM" not in out and "a Python print" not in out, out
    assert "LightGBM" in err and "a Python print" in err
    if fmt != "github":
        json.loads(out)


def test_assert_fair_fails_on_a_spec_that_states_no_property(project):
    """A spec with models and data but no property passed assert_fair: the test asserted nothing."""
    from fairspec.testing import assert_fair

    spec = _spec(project, "none.fair", "")
    with pytest.raises(AssertionError, match="no property"):
        assert_fair(spec)
    assert_fair(_spec(project, "one.fair", LOOSE))  # one that holds still passes


def test_the_action_summary_never_says_every_property_holds_for_a_run_that_failed():
    """A SARIF log whose run failed before any result (a usage error in the Action's `args`: a tool execution
    notification, no result) was summarised "No findings: every property holds" on the run's page."""
    from fairspec.hooks import summary

    note = {"level": "error", "message": {"text": "bad usage: argument --workers: got '0'"}, "descriptor": {"id": "input"}}
    log = {"runs": [{"results": [], "invocations": [{"executionSuccessful": False,
                                                     "toolExecutionNotifications": [note]}]}]}
    text = summary(log)
    assert "every property holds" not in text and "--workers" in text and "error" in text
    ok = {"runs": [{"results": [], "invocations": [{"executionSuccessful": True}]}]}
    assert "every property holds" in summary(ok)


def _interrupted(monkeypatch):
    """Ctrl-C while the data backend works: pipeline.check catches it, reports the property unknown
    (interrupted) and the report's exit code is 130 -- but nothing in the API raised it again."""
    import fairspec.kinds.on_data as on_data

    def ctrl_c(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(on_data, "run", ctrl_c)


def test_assert_fair_raises_keyboard_interrupt_again_after_a_ctrl_c(project, monkeypatch):
    """assert_fair(allow_unknown=True) passed a check that Ctrl-C stopped (the property reported unknown,
    interrupted): the test passed and the test run went on as if the user had not asked it to stop."""
    from fairspec.testing import assert_fair

    spec = _spec(project, "ctrlc.fair", LOOSE)
    _interrupted(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        assert_fair(spec, allow_unknown=True)


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_check_in_a_machine_format_keeps_what_the_html_report_prints_off_stdout(project, monkeypatch, capfd,
                                                                               tmp_path, fmt):
    """Under --format json|sarif with --html, the HTML report (matplotlib, drawn after the check) was written
    with fd 1 and sys.stdout back on the real stdout: whatever it printed went before the document."""
    import json

    from fairspec import cli
    from fairspec.report import html

    spec = _spec(project, "htmlfd.fair", LOOSE)
    real = html.write

    def chatty(*a, **k):
        os.write(1, b"a C library's line on fd 1\n")
        print("a Python print while drawing")
        return real(*a, **k)

    monkeypatch.setattr(html, "write", chatty)
    assert cli.main(["check", str(spec), "--format", fmt, "--html", str(tmp_path / "r.html")]) == 0
    out, err = capfd.readouterr()
    assert "C library" not in out and "a Python print" not in out, out
    assert "C library" in err and "a Python print" in err
    json.loads(out)
    assert (tmp_path / "r.html").is_file()


def test_an_xfail_pattern_does_not_hide_a_data_file_that_cannot_be_read(project, tmp_path):
    """fairspec_xfail expects the property to be violated (or unknown); a data file that fails to load made
    the item fail with the same exception, so it was reported xfailed and the run was green."""
    r = _inner_pytest(project, tmp_path, "xf.fair", "broken", "-o", "fairspec_xfail=*::broken known unfair")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAILED xf.fair::broken" in r.stdout and "cannot be read" in r.stdout, r.stdout


def test_a_witness_output_is_printed_with_the_digits_that_read_back_as_it():
    """A witness's outputs were printed to 6 significant digits (text report, SARIF, pytest failure): a
    float32 probability pair 0.5250001 / 0.475 breaking |p - p'| <= 0.05 printed as 0.525 / 0.475, a pair
    that looks like it meets the claim. Each printed output now reads back as the runtime's number (as the
    float32 it is, or the double)."""
    import numpy as np

    from fairspec.verdict import Witness

    a, b = float(np.float32(0.5250001)), float(np.float32(0.475))
    assert a - b > 0.05
    w = Witness((0.0,), (1.0,), outputs=(a, b))
    ta, tb = w.output_texts()
    assert float(np.float32(ta)) == a and float(np.float32(tb)) == b, (ta, tb)
    assert float(ta) - float(tb) > 0.05
    assert Witness((0.0,), (1.0,), outputs=(1.0, 0.0)).output_texts() == ("1", "0")
    exact = 0.1 + 0.2  # a double that is no float32: its shortest double text
    assert float(Witness((0.0,), (1.0,), outputs=(exact, 0.25)).output_texts()[0]) == exact


@pytest.mark.parametrize("fmt", ["sarif", "github"])
def test_a_property_left_unknown_by_a_fairspec_bug_is_an_error_finding_not_only_a_warning(project, monkeypatch,
                                                                                          capsys, fmt):
    """A backend that crashed (exit code 4) was, in SARIF and GitHub annotations, only the property's
    `unknown` warning: code scanning showed a warning for a run that ended in an internal error. It is now
    also an error finding of rule `internal`, as an internal error of the HTML report already was."""
    import json

    from fairspec import cli

    spec = _spec(project, "internal_ci.fair", LOOSE)
    _broken(monkeypatch)
    assert cli.main(["check", str(spec), "--format", fmt]) == 4
    out = capsys.readouterr().out
    if fmt == "sarif":
        results = json.loads(out)["runs"][0]["results"]
        assert any(r["ruleId"] == "internal" and r["level"] == "error" and "a bug" in r["message"]["text"]
                   for r in results), results
    else:
        assert any(line.startswith("::error") and "internal" in line and "a bug" in line for line in out.splitlines()), out


@pytest.mark.parametrize("fmt", ["sarif", "github"])
def test_models_runs_carry_a_backend_internal_error_as_an_error_finding(project, monkeypatch, capsys, tmp_path, fmt):
    """check --models: as above, per model file (each run of the SARIF log, each file's annotations)."""
    import json

    from fairspec import cli

    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "m2.skops").write_bytes((project / "m.skops").read_bytes())
    spec = _spec(project, "internal_models.fair", LOOSE)
    _broken(monkeypatch)
    assert cli.main(["check", str(spec), "--format", fmt, "--models", f"m={folder}", "--allow-path",
                     str(tmp_path)]) == 4
    out = capsys.readouterr().out
    if fmt == "sarif":
        (run,) = json.loads(out)["runs"]
        assert any(r["ruleId"] == "internal" and r["level"] == "error" for r in run["results"]), run["results"]
    else:
        assert any(line.startswith("::error") and "internal" in line and "a bug" in line for line in out.splitlines()), out
