"""A failed import (a missing file, a library that does not parse, one outside the project) is said
once, at the import: the names the spec uses from it are not each reported unknown as well (FS201,
FS205, FS301 for a policy's model argument), in lint, check (exit code, JSON) and the editor. When
every import loaded, an unknown name is still FS201 / FS205."""

from __future__ import annotations

import asyncio
import json

import pytest

from conftest import FIXTURES, people_decls, run_cli
from fairspec.sema.check import check_file

LIB = (people_decls((FIXTURES / "data" / "people.csv").as_posix())
       + "model net = rule(age >= 40 and member)\ngroup older = age >= 50\n")

POLICIES = '''policy balanced(m: model, g: groups, gap: real = 0.2) {
  property parity {
    statistical_parity(m, groups g) <= gap
  }
}
'''

MAIN = '''import "lib.fair"
import "policies.fair"

group senior = age >= 60

apply balanced(net, sex)

property p1 {
  statistical_parity(net, groups senior x race x older) <= 0.2
}
property p2 {
  forall x, x' : People
  require x.* == x'.* except {sex}
  ensure label(net(x)) == label(net(x'))
}
'''


@pytest.fixture
def project(tmp_path):
    (tmp_path / "fairspec.toml").write_text("")
    (tmp_path / "lib.fair").write_text(LIB)
    (tmp_path / "policies.fair").write_text(POLICIES)
    (tmp_path / "main.fair").write_text(MAIN)
    return tmp_path


def _codes(path):
    return [(d.code, d.span.file.rsplit("/", 1)[-1] if d.span else None, d.span.line if d.span else None)
            for d in check_file(path, peek_models=False).diagnostics if d.is_error]


def test_the_project_lints(project):
    assert _codes(project / "main.fair") == []


@pytest.mark.parametrize("breakage", ["missing", "syntax", "outside"])
def test_a_failed_library_import_is_one_error_not_one_per_name(project, tmp_path_factory, breakage):
    lib = project / "lib.fair"
    if breakage == "missing":
        lib.unlink()
        code = "FS203"
    elif breakage == "syntax":
        lib.write_text(LIB + "features (\n")
        code = "FS101"
    else:
        away = tmp_path_factory.mktemp("away") / "lib.fair"
        away.write_text(LIB)
        (project / "main.fair").write_text(MAIN.replace('"lib.fair"', f'"{away.as_posix()}"'))
        code = "FS212"
    codes = _codes(project / "main.fair")
    assert [c for c, _, _ in codes] == [code], codes


def test_a_failed_policy_import_is_one_error(project):
    (project / "policies.fair").unlink()
    assert [(c, ln) for c, _, ln in _codes(project / "main.fair")] == [("FS203", 2)]


def test_with_every_import_loaded_an_unknown_name_is_still_said(project):
    (project / "main.fair").write_text(MAIN.replace("older) <=", "oldr) <=").replace("net, sex", "nett, sex")
                                       .replace("groups senior", "groups senoir"))
    codes = [(c, ln) for c, _, ln in _codes(project / "main.fair")]
    assert ("FS201", 6) in codes  # unknown model 'nett' (it was FS301 "must be a model")
    assert ("FS205", 9) in codes  # unknown feature or group 'senoir'


def test_an_import_that_fails_hides_no_unknown_feature_of_a_known_feature_set(project):
    (project / "policies.fair").unlink()
    (project / "main.fair").write_text(MAIN.replace("except {sex}", "except {sexx}"))
    codes = [(c, ln) for c, _, ln in _codes(project / "main.fair")]
    assert codes == [("FS203", 2), ("FS205", 13)], codes  # People is known: no import could add 'sexx'


def test_lint_and_check_json_say_the_import_once(project):
    (project / "lib.fair").unlink()
    for cmd in ("lint", "check"):
        r = run_cli(cmd, project / "main.fair", "--format", "json", cwd=project)
        assert r.returncode == 2, (cmd, r.stdout, r.stderr)
        doc = json.loads(r.stdout)
        assert [d["code"] for d in doc["diagnostics"] if d["severity"] == "error"] == ["FS203"], (cmd, doc)
    r = run_cli("lint", project / "main.fair", cwd=project)
    assert r.returncode == 2 and "FS203" in r.stdout + r.stderr and "FS201" not in r.stdout + r.stderr


def test_the_editor_publishes_the_import_error_alone(project, monkeypatch):
    pytest.importorskip("pygls")
    from fairspec.lsp.client import Session

    monkeypatch.chdir(project)
    (project / "lib.fair").unlink()

    async def scenario():
        async with Session() as s:
            _, _, diags = await s.opened(project / "main.fair", MAIN)
            assert sorted({d.code for d in diags if d.severity == 1}) == ["FS203"], diags

    asyncio.run(scenario())
