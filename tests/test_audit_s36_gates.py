"""Session 36 audit of what CI and a test suite are told (brief h1): a gate that passes when it should not
is as bad as a wrong proof. Each test here failed before its fix.

* A spec that states no property (none of its own, and the policies it applies none) made `fairspec check`
  exit 0 in every format, the API's ``ok`` true and the pytest plugin collect no item (a suite passed that
  checked nothing of it): it is now exit 2, the report's error, one failing ``spec.fair::check`` item."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from conftest import FIXTURES, people_decls, run_cli

ROOT = Path(__file__).resolve().parents[1]
PEOPLE = FIXTURES / "data" / "people.csv"
RULE = "model r = rule(score >= 0.5)\n"
EMPTY_POLICY = "policy empty(m: model) {\n}\napply empty(r)\n"


def _empty(tmp_path, body: str = EMPTY_POLICY) -> Path:
    (tmp_path / "fairspec.toml").write_text("")
    spec = tmp_path / "s.fair"
    spec.write_text(people_decls(PEOPLE) + RULE + body)
    return spec


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_a_check_of_a_spec_with_no_property_exits_2_in_every_format(tmp_path, fmt):
    spec = _empty(tmp_path)
    r = run_cli("check", spec, "--format", fmt, cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "no property to check" in r.stdout and "checks nothing does not pass" in r.stdout
    if fmt == "json":
        doc = json.loads(r.stdout)
        assert doc["exit_code"] == 2 and doc["properties"] == [] and "no property to check" in doc["error"]
    elif fmt == "sarif":
        results = json.loads(r.stdout)["runs"][0]["results"]
        assert any(x["level"] == "error" and "no property to check" in x["message"]["text"] for x in results)
    elif fmt == "github":
        assert any(line.startswith("::error ") and "no property to check" in line for line in r.stdout.splitlines())


def test_a_spec_of_declarations_only_exits_2_and_the_api_agrees(tmp_path):
    import fairspec

    spec = _empty(tmp_path, body="")
    assert run_cli("check", spec, cwd=tmp_path).returncode == 2
    rep = fairspec.check(spec)
    assert rep.exit_code == 2 and not rep.ok and "no property to check" in rep.to_dict()["error"]
    from fairspec.testing import assert_fair

    with pytest.raises(AssertionError, match="no property to check"):
        assert_fair(spec)


def test_a_spec_with_a_property_still_passes(tmp_path):
    spec = _empty(tmp_path, body=EMPTY_POLICY + "property q {\n  statistical_parity(r, groups sex) <= 0.99\n}\n")
    r = run_cli("check", spec, "--format", "json", cwd=tmp_path)
    assert r.returncode == 0 and "error" not in json.loads(r.stdout), (r.stdout, r.stderr)


def _plugin_args() -> list[str]:
    installed = any(ep.value == "fairspec.pytest_plugin" for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "fairspec.pytest_plugin"]


def test_the_pytest_plugin_fails_a_spec_with_no_property(tmp_path):
    """It collected no item of it: a suite with any other test passed, checking nothing of the spec."""
    _empty(tmp_path)
    (tmp_path / "test_other.py").write_text("def test_other():\n    pass\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([sys.executable, "-m", "pytest", "--fairspec", "-q", "-o", "addopts=", "-p", "no:cacheprovider",
                        *_plugin_args(), "s.fair", "test_other.py"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "s.fair::check" in r.stdout and "no property to check" in r.stdout and "1 failed, 1 passed" in r.stdout
