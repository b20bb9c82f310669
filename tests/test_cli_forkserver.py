"""The suite's warm `fairspec` processes (tests/cli_forkserver.py) say what a fresh process says.

`run_cli` and the suite's language servers fork their `fairspec` from a server that has numpy, pandas,
scikit-learn and fairspec imported; a command line must not be able to tell: the same exit code, stdout
and stderr as a fresh `fairspec` process, for a lint, a check's JSON, a spec error, argparse's own exits,
a torch model (imported in the child, after the fork) and a language server session.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import cli_forkserver
from conftest import EXAMPLES, OK, REPO, _cli_env, fairspec_command, run_cli

pytestmark = pytest.mark.skipif(cli_forkserver.command() is None, reason="no fork server on this platform")


def _fresh(*args, cwd, env=None) -> subprocess.CompletedProcess:
    env = _cli_env(env)
    return subprocess.run([*fairspec_command(), *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env=env)


def _same(a: subprocess.CompletedProcess, b: subprocess.CompletedProcess) -> None:
    seconds = re.compile(r"\d+\.\d+ ?s\b|\"(seconds|checked_at)\": [^,}\n]+")
    assert a.returncode == b.returncode, (a.stderr, b.stderr)
    assert seconds.sub("T", a.stdout) == seconds.sub("T", b.stdout)
    assert seconds.sub("T", a.stderr) == seconds.sub("T", b.stderr)


@pytest.fixture
def torch_spec(tmp_path):
    """examples/adult with its torch model in place of the ONNX one (torch imported after the fork)."""
    shutil.copytree(EXAMPLES / "adult", tmp_path / "adult")
    spec = tmp_path / "adult" / "adult.fair"
    spec.write_text(spec.read_text().replace('onnx("models/mlp.onnx", output = "logit")', 'torch("models/mlp.pt")'))
    return spec


@pytest.mark.parametrize("args", [
    ("lint", str(OK / "warnings.fair")),
    ("lint", str(REPO / "tests" / "fixtures" / "errors" / "bad_duration.fair")),
    ("lint", str(OK / "warnings.fair"), "--format", "json"),
    ("check", str(OK / "no_pair.fair"), "--format", "json"),
    ("--version",),
    ("--help",),
    ("check",),                      # argparse's usage error: exit 2 on stderr
    ("no-such-command",),
], ids=["lint", "lint-error", "lint-json", "check-json", "version", "help", "usage", "unknown-command"])
def test_forked_command_lines_say_what_a_fresh_process_says(args, tmp_path):
    _same(run_cli(*args, cwd=tmp_path), _fresh(*args, cwd=tmp_path))


def test_a_torch_model_checks_the_same_after_the_fork(torch_spec):
    args = ("check", torch_spec.name, "--property", "mlp_equalized_odds", "--format", "json")
    forked, fresh = run_cli(*args, cwd=torch_spec.parent), _fresh(*args, cwd=torch_spec.parent)
    # 1: violated -- the example's threshold (0.05) lies below the whole valid interval of the TPR / FPR gap
    assert forked.returncode == 1, forked.stderr
    _same(forked, fresh)


def test_a_time_out_kills_the_forked_command(tmp_path):
    # a language server whose client never writes nor closes its stdin waits for ever
    r, w = os.pipe()
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            cli_forkserver.run(["lsp"], str(tmp_path), _cli_env(None), 2, stdin=r)
    finally:
        os.close(r)
        os.close(w)
    (tmp_path / "s.fair").write_text("# nothing\n")
    assert run_cli("lint", "s.fair", cwd=tmp_path).returncode == 0   # the server still serves


def test_the_conftest_patches_the_language_server_client_only_when_it_is_imported():
    """tests/conftest.py leaves fairspec.lsp.client (lsprotocol, ~0.55 CPU s) unimported -- the xdist controller and
    test_packaging's inner pytest runs start no language server -- and points its server_command at the relay
    once something imports it."""
    tests = os.path.dirname(os.path.abspath(__file__))
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import conftest; "
            "assert 'fairspec.lsp.client' not in sys.modules and 'lsprotocol' not in sys.modules, 'imported'; "
            "from fairspec.lsp.client import server_command; "
            "print(server_command.__qualname__, server_command.__module__)")
    r = subprocess.run([sys.executable, "-c", code, tests], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["_warm_language_server.<locals>.server_command", "conftest"], r.stdout


def test_a_language_server_through_the_relay_answers_as_a_fresh_one(tmp_path):
    from fairspec.lsp.client import Session, server_command

    assert "--run" in server_command()     # the suite's sessions go through the relay
    spec = tmp_path / "s.fair"
    spec.write_text((OK / "warnings.fair").read_text())

    async def diagnostics(command):
        async with Session(command=command) as s:
            return [(d.code, d.range.start.line, d.message) for d in await s.diagnostics(s.open(spec), after=0)]

    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        forked = asyncio.run(diagnostics(server_command()))
        fresh = asyncio.run(diagnostics([*fairspec_command(), "lsp"]))
    finally:
        os.chdir(cwd)
    assert forked == fresh and forked


def test_a_start_up_variable_the_server_did_not_start_with_gets_a_fresh_process(tmp_path):
    """Python reads PYTHONIOENCODING when it starts: a forked child would print with the server's
    encoding. A spec named é.fair, stdout in ASCII with backslashreplace, says ``\\xe9`` as a fresh one."""
    spec = tmp_path / "\u00e9.fair"
    spec.write_text((REPO / "tests" / "fixtures" / "errors" / "bad_duration.fair").read_text())
    env = {"PYTHONIOENCODING": "ascii:backslashreplace"}
    first = cli_forkserver._server()
    assert cli_forkserver.run(["lint", spec.name], str(tmp_path), dict(os.environ, **env), 60) is None
    with pytest.MonkeyPatch.context() as mp:    # a language server the test starts: its environment is the test's
        mp.setenv("PYTHONIOENCODING", env["PYTHONIOENCODING"])
        assert cli_forkserver.command("lsp") is not None     # a server starts with the test's value
        assert cli_forkserver._server().env["PYTHONIOENCODING"] == env["PYTHONIOENCODING"]
    # both are kept: the first serves the test's own values again (no restart), and the command line whose
    # values the second started with goes to it (a fresh process's argv starts with the executable's path)
    assert cli_forkserver._server() is first and first.alive()
    forked = run_cli("lint", spec.name, cwd=tmp_path, env=env)
    assert forked.args[0] == "fairspec"
    assert "\\xe9.fair" in forked.stdout + forked.stderr, forked.stdout + forked.stderr
    _same(forked, _fresh("lint", spec.name, cwd=tmp_path, env=env))


@pytest.mark.parametrize("target", ["file", "full", "gone"])
def test_a_stdout_descriptor_given_to_the_forked_command_is_its_own(tmp_path, target):
    """``stdout=`` a file, /dev/full or a pipe whose reader is gone: the command writes there itself,
    with the exit code and stderr a fresh process has (tests/test_hostile_output.py's cases)."""
    if target == "full" and not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full")
    args = ["check", str(OK / "no_pair.fair"), "--format", "json"]
    results = []
    for way in ("forked", "fresh"):
        out = tmp_path / f"{way}.json"
        if target == "gone":
            read, fd = os.pipe()
            os.close(read)
        else:
            fd = os.open(out if target == "file" else "/dev/full", os.O_WRONLY | os.O_CREAT)
        try:
            if way == "forked":
                r = cli_forkserver.run(args, str(tmp_path), dict(os.environ), 120, stdout=fd)
            else:
                r = subprocess.run([*fairspec_command(), *args], cwd=tmp_path, stdout=fd, stderr=subprocess.PIPE,
                                   text=True, timeout=120)
        finally:
            os.close(fd)
        assert r.stdout is None
        results.append((r.returncode, r.stderr, out.read_text() if target == "file" else None))
    _same(*(subprocess.CompletedProcess([], code, text or "", err) for code, err, text in results))
    if target == "file":
        assert json.loads(results[0][2])["properties"]


def test_a_start_up_variable_the_test_process_changes_restarts_the_server(monkeypatch, tmp_path):
    """test_executor and test_dask_budget prepend the repository to PYTHONPATH for the rest of their worker's
    life: the server starts again with it (in CI every later command line of that worker went fresh)."""
    first = cli_forkserver._server()
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    assert cli_forkserver.command("lsp") is not None
    assert cli_forkserver._server() is not first
    r = run_cli("lint", OK / "warnings.fair", cwd=tmp_path)
    assert r.args[0] == "fairspec"        # forked (a fresh process's argv starts with the executable's path)
    _same(r, _fresh("lint", OK / "warnings.fair", cwd=tmp_path))


@pytest.mark.parametrize("program", [
    "import sys; print(__name__, sys.argv, repr(sys.path[0])); print('to stderr', file=sys.stderr)",
    "import sys; sys.stdout.write('partial'); sys.exit(3)",
    "raise ValueError('uncaught')",                       # the traceback on stderr, exit 1
    "import fairspec.lsp.indexes as i; i.DEBOUNCE = 0; import sys; sys.exit('a message')",
], ids=["argv-path-streams", "exit-code", "uncaught", "exit-message"])
def test_a_python_c_program_forked_says_what_a_fresh_python_c_says(program, tmp_path):
    """``python_c``: the suite's patched language servers (GATED, UNDEBOUNCED, the flood server) run their
    `python -c` program in a child forked from the warm server, through the relay."""
    argv = cli_forkserver.python_c(program, "an-arg")
    assert "--python" in argv
    forked, fresh = (subprocess.run(a, cwd=tmp_path, capture_output=True, text=True, timeout=120, env=_cli_env(None))
                     for a in (argv, [sys.executable, "-c", program, "an-arg"]))
    _same(forked, fresh)


def test_a_patched_language_server_forked_through_python_c_serves_with_its_patch(tmp_path, monkeypatch):
    """The patch a program makes before it serves (a module attribute fairspec reads at call time, as GATED's
    ``A.analyse``) acts in the forked child as in a fresh process: each lint leaves a mark, and the
    diagnostics are a fresh server's."""
    from fairspec.lsp.client import Session

    spec = tmp_path / "s.fair"
    spec.write_text((OK / "warnings.fair").read_text())
    program = ("import os\n"
               "from pathlib import Path\n"
               "from fairspec.lsp import analysis as A\n"
               "_analyse = A.analyse\n"
               "def analyse(path, sources=None, recover=False):\n"
               "    Path(os.environ['FAIRSPEC_TEST_MARK']).touch()\n"
               "    return _analyse(path, sources, recover)\n"
               "A.analyse = analyse\n"
               "from fairspec.lsp.server import main; main()\n")

    async def diagnostics(command, mark):
        monkeypatch.setenv("FAIRSPEC_TEST_MARK", str(mark))
        async with Session(command=command, wait=120) as s:
            return [(d.code, d.range.start.line, d.message) for d in await s.diagnostics(s.open(spec), after=0)]

    forked = asyncio.run(diagnostics(cli_forkserver.python_c(program), tmp_path / "forked"))
    fresh = asyncio.run(diagnostics([sys.executable, "-c", program], tmp_path / "fresh"))
    assert forked == fresh and forked
    assert (tmp_path / "forked").exists() and (tmp_path / "fresh").exists()
