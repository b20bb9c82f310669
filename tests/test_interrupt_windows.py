"""A Ctrl-C / SIGTERM at any moment of a stream swap leaves the streams as they were.

The CLI's handler raises KeyboardInterrupt wherever the main thread is. Code that points
``sys.stdout`` / ``sys.stderr`` or file descriptor 1 elsewhere for a while must give them back
however it is left: ``contextlib.redirect_stderr`` swaps in its ``__enter__``, and an interrupt
raised there (after the swap, before the ``with`` block runs) skipped ``__exit__``; ``sys.stderr``
stayed a buffer for the rest of the run and the "interrupted" sentence vanished (a loaded suite saw
`--models ... SIGTERM` exit with stderr empty). Deterministic: KeyboardInterrupt is raised at each
moment of the swap where the interpreter runs a signal's handler (a function entered, a call
returned), in turn, never timed.
"""

from __future__ import annotations

import os
import sys

import pytest

from fairspec.runtime import stdio

pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

from test_interrupt import _net  # noqa: E402


def _interrupt_at(n: int, call, files: tuple[str, ...]) -> bool:
    """Run ``call()`` raising KeyboardInterrupt at the ``n``-th moment a signal's handler could run in
    the code of ``files`` (and contextlib's): as a Python function is entered, and as any call it
    makes returns (a profile function's exception on 'return' / 'c_return' comes out of the call, as
    the interpreter's check for a pending signal after a call does). True when the n-th came."""
    seen = [0]
    hit = [False]
    watched = (*files, "contextlib.py")

    def profile(frame, event, arg):
        if event in ("call", "c_return") and frame.f_code.co_filename.endswith(watched) or \
                event == "return" and frame.f_back is not None and frame.f_back.f_code.co_filename.endswith(watched):
            seen[0] += 1
            if seen[0] == n:
                hit[0] = True
                raise KeyboardInterrupt

    sys.setprofile(profile)
    try:
        call()
    except KeyboardInterrupt:
        pass
    finally:
        sys.setprofile(None)
    return hit[0]


def _every_moment(call, files, check) -> int:
    n = 1
    while _interrupt_at(n, call, files):
        check(n)
        n += 1
        assert n < 5000, "the traced code never ends"
    check(n)
    return n


def test_an_interrupt_while_onnxruntime_loads_leaves_sys_stderr(tmp_path):
    from fairspec.models import onnx_model

    _net(tmp_path / "net.onnx")
    out, err = sys.stdout, sys.stderr

    def check(n):
        assert sys.stdout is out and sys.stderr is err, f"a stream was left swapped (interrupt at moment {n})"

    n = _every_moment(lambda: onnx_model.load_onnx(tmp_path / "net.onnx"), ("onnx_model.py",), check)
    assert n > 3


def _fd1() -> tuple[int, int]:
    st = os.fstat(1)
    return st.st_dev, st.st_ino


def test_an_interrupt_while_fd1_is_pointed_away_gives_it_back(capfd):
    before = _fd1()

    def check(n):
        assert _fd1() == before, f"file descriptor 1 was left pointed away (interrupt at moment {n})"

    _every_moment(lambda: stdio.quiet(lambda: None)(), ("stdio.py",), check)


def test_an_interrupt_while_a_solver_runs_quiet_gives_fd1_back(capfd):
    """stdio.quiet nested (repair's HiGHS solves; nested calls share one redirect): fd 1 comes back and the
    nesting count is 0 after an interrupt at any moment. Session 37's context manager fd1_quiet could leave fd 1
    on devnull (an interrupt between its dup2 and its try, or as its __enter__ returned)."""
    before = _fd1()

    def check(n):
        assert _fd1() == before, f"file descriptor 1 was left pointed away (interrupt at moment {n})"
        assert stdio._QUIET == {"depth": 0, "saved": None}, (n, stdio._QUIET)

    inner = stdio.quiet(lambda: os.write(1, b""))
    n = _every_moment(lambda: stdio.quiet(lambda: inner() and inner())(), ("stdio.py",), check)
    assert n > 10



def _env() -> dict:
    """The child runs this worktree's fairspec (it starts in tmp_path: an installed copy would come first)."""
    from pathlib import Path

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parent.parent),
                                                       os.environ.get("PYTHONPATH", "")]))
    env.pop("FAIRSPEC_DEBUG", None)
    return env


_BETWEEN = r"""
import contextlib, os, signal, sys, time
import fairspec.pipeline
from fairspec import cli, interrupt
from fairspec.pipeline import Report

fairspec.pipeline.check = lambda *a, **k: Report("spec.fair", [])
real = interrupt.installed


@contextlib.contextmanager
def installed(*, defer=False, fresh=True):
    with real(defer=defer, fresh=fresh):
        yield
    if not defer:  # the check's own handler is gone: the moment between the check and its report
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.2)


interrupt.installed = installed
sys.argv = ["fairspec", "check", "spec.fair", "--format", "json"]
cli.main()
"""


def test_sigterm_between_the_check_and_its_report_is_recorded_not_the_default_action(tmp_path):
    """SIGTERM between the check's handler and the report's was at its default action: the process
    ended at once, no report, nothing on stderr. Now the whole check runs inside a recording handler:
    the report is printed, the signal said, exit 143."""
    import json
    import subprocess

    env = _env()
    p = subprocess.run([sys.executable, "-c", _BETWEEN], cwd=tmp_path, capture_output=True, text=True,
                       env=env, timeout=120)
    assert p.returncode == 143, (p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    assert json.loads(p.stdout)["properties"] == []
    assert "interrupted (SIGTERM) after every verdict was decided" in p.stderr, p.stderr


_TO_THE_EXIT = r"""
import os, signal, sys
import fairspec.pipeline
from fairspec import cli, interrupt
from fairspec.pipeline import Report

fairspec.pipeline.check = lambda *a, **k: Report("spec.fair", [])
log = open(sys.argv[1], "w", buffering=1)


class Exited(BaseException):
    pass


def _exit(code):
    raise Exited(code)


os._exit = _exit  # the console script leaves with os._exit: here the harness takes the code instead
sys.argv = ["fairspec", "check", "spec.fair", "--format", "json"]
n = 1
while n < 5000:
    seen, after, sent = [0], [False], [False]

    def profile(frame, event, arg):
        # every moment the interpreter may run a signal's handler (a function entered, a call
        # returned) from the check's return on: the n-th sends SIGTERM
        if event == "return" and frame.f_code.co_name == "_check" and frame.f_code.co_filename.endswith("cli.py"):
            after[0] = True
        elif event == "call" and frame.f_code.co_name == "<lambda>" and frame.f_back.f_code.co_name == "_exit_now":
            after[0] = False  # the exit code is worked out now, and os._exit is next: the process is gone
        elif after[0] and event in ("call", "return", "c_return") and not sent[0]:
            seen[0] += 1
            if seen[0] == n:
                sent[0] = True
                os.kill(os.getpid(), signal.SIGTERM)

    sys.setprofile(profile)
    try:
        cli.main()
        code = "returned"
    except Exited as e:
        code = e.args[0]
    finally:
        sys.setprofile(None)
    for block in reversed(cli._CONSOLE["held"]):  # the harness's own end of the held blocks
        block.__exit__(None, None, None)
    cli._CONSOLE["held"].clear()
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, signal.default_int_handler if s == signal.SIGINT else signal.SIG_DFL)
    interrupt.reset()
    log.write(f"{n} {sent[0]} {code}\n")
    if not sent[0]:
        break
    n += 1
log.write("done\n")
"""


def test_sigterm_from_the_report_to_the_exit_is_recorded_not_the_default_action(tmp_path):
    """The check's recording handler ended with its block, and ``_leave`` installed its own only at the
    end of main: SIGTERM in between was at its default action (the process ended with -15). Run as the
    console script, the recording block is now held to the exit: SIGTERM at each moment from the
    check's return to ``os._exit`` in turn (sent, never timed) ends the run with 143."""
    import subprocess

    env = _env()
    log = tmp_path / "moments.log"
    p = subprocess.run([sys.executable, "-c", _TO_THE_EXIT, str(log)], cwd=tmp_path, capture_output=True,
                       text=True, env=env, timeout=600)
    lines = log.read_text().splitlines()
    assert p.returncode == 0 and lines[-1] == "done", (p.returncode, lines[-3:], p.stderr[-2000:])
    moments = [line.split() for line in lines[:-1]]
    assert len(moments) > 10, moments  # the traced window is not empty
    assert moments[-1][1:] == ["False", "0"], moments[-1]  # past the last moment: no signal, the verdicts' code
    wrong = [m for m in moments[:-1] if m[1:] != ["True", "143"]]
    assert not wrong, wrong
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
