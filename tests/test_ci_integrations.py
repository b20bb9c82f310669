"""pre-commit hooks (.pre-commit-hooks.yaml) and the GitHub Action (action.yml), run as CI runs them:
each hook's entry on good and bad files, and the Action's shell steps with GitHub's environment files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy  # noqa: F401
import pytest
import yaml
from conftest import run_cli
from test_python_api import _tiny_project

ROOT = Path(__file__).resolve().parents[1]
BIN = str(Path(sys.executable).parent)


def _env(**kw) -> dict:
    env = {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", ""), **kw}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _hook(hook_id: str) -> dict:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    return next(h for h in hooks if h["id"] == hook_id)


def _run_hook(hook: dict, files, cwd) -> subprocess.CompletedProcess:
    entry = hook["entry"].split()
    assert entry[0] == "python"
    assert all(re.search(hook["files"], str(f)) for f in files)
    return subprocess.run([sys.executable, *entry[1:], *map(str, files)], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=600)


def test_pre_commit_lint_hook(tmp_path):
    spec = _tiny_project(tmp_path)
    bad = tmp_path / "bad.fair"
    bad.write_text("property p {\n  nonsense(\n}\n")
    hook = _hook("fairspec-lint")
    assert _run_hook(hook, [spec], tmp_path).returncode == 0
    res = _run_hook(hook, [spec, bad], tmp_path)
    assert res.returncode == 2 and "bad.fair:3:1: FS101" in res.stdout + res.stderr


def test_pre_commit_fmt_hook(tmp_path):
    spec = _tiny_project(tmp_path)
    fmt = run_cli("fmt", spec, cwd=tmp_path)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
    hook = _hook("fairspec-fmt")
    assert _run_hook(hook, [spec], tmp_path).returncode == 0
    spec.write_text(spec.read_text().replace("  a : raw", "a:raw"))
    res = _run_hook(hook, [spec], tmp_path)
    assert res.returncode == 1 and "spec.fair" in res.stdout + res.stderr


def _step(action: dict, name: str) -> dict:
    return next(s for s in action["runs"]["steps"] if s.get("name") == name)


@pytest.mark.parametrize("threshold, code", [("0.01", 0), ("0.95", 1)])
def test_action_steps(tmp_path, threshold, code):
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) >= {"spec", "extras", "version", "args", "upload-sarif", "fail-on-unknown"}
    spec = _tiny_project(tmp_path)
    spec.write_text(spec.read_text().replace(">= 0.8", f">= {threshold}"))
    out, summary = tmp_path / "gh_output", tmp_path / "gh_summary"
    check = _step(action, "fairspec check")
    res = subprocess.run(["bash", "-c", check["run"]], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                         env=_env(SPEC=str(spec), ARGS="", GITHUB_OUTPUT=str(out), GITHUB_STEP_SUMMARY=str(summary)))
    assert res.returncode == 0, res.stderr
    assert out.read_text().strip() == f"exit-code={code}"
    log = json.loads((tmp_path / "fairspec.sarif").read_text())
    assert log["version"] == "2.1.0"
    text = summary.read_text()
    assert text.startswith("## fairspec")
    assert ("parity" in text) == (code != 0)
    verdict = _step(action, "verdict")
    res = subprocess.run(["bash", "-c", verdict["run"]], env=_env(CODE=str(code), FAIL_ON_UNKNOWN="true"))
    assert res.returncode == code
    res = subprocess.run(["bash", "-c", verdict["run"]], env=_env(CODE="3", FAIL_ON_UNKNOWN="false"))
    assert res.returncode == 0


def test_summary_escapes_markdown():
    from fairspec.hooks import summary

    log = {"runs": [{"results": [{"level": "error", "ruleId": "FS1|x",
                                  "message": {"text": "a | b [x](http://e) \x1b[31m"}}]}]}
    text = summary(log)
    assert "\\|" in text and "\\[x\\]" in text and "\x1b" not in text
