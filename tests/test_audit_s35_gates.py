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
