"""A warm process that forks one fresh `fairspec` process per command line: the suite's `run_cli`
and its language servers.

Most of a `fairspec` subprocess's cost in the suite was starting Python and importing numpy, pandas,
scikit-learn and fairspec again (0.3 s CPU for a lint, 1-2 s for a check, ~0.8 s for a language
server) for each of several hundred command lines. This server imports those once per pytest-xdist
worker and forks a child per command line: the child gets the caller's stdin / stdout / stderr as its
file descriptors 0 / 1 / 2, the caller's working folder and environment, and runs
``fairspec.cli.main()`` as the console script does (which leaves through ``os._exit`` with the
command's exit code). The process boundary under test stays real: file descriptors (a solver's C-level
writes land in the captured stdout), exit codes, signals, and no state shared with the test's process.

What a child has that a fresh ``fairspec`` has not: the modules in ``WARM`` already imported (never
torch, skops or onnxruntime: fairspec reads ``"torch" in sys.modules``), and the values fairspec reads
from the environment when a module is imported come from the server's start, and so do what Python
reads when it starts (PYTHONIOENCODING, PYTHONPATH, PYTHONHASHSEED: every child has the server's hash
seed, the locale). A command line whose environment sets one of ``IMPORT_TIME_ENV``, or gives a
start-up variable a value no live server of the worker started with, gets a fresh process instead
(``run``), and so does every command line when ``FAIRSPEC_TEST_FRESH_PROCESS=1``. A worker keeps a server
per set of start-up values its own environment had (``KEEP`` at most). tests/test_cli_forkserver.py checks the two ways agree
(exit code, stdout, stderr) on lint, check, errors, a torch model and a language server session.

Three ways in:

- ``run(args, cwd, env, timeout)`` (``run_cli`` in tests/conftest.py): a ``CompletedProcess`` as
  ``subprocess.run(capture_output=True, text=True)`` returns it; ``stdout=`` / ``stderr=`` take a
  descriptor the command writes to instead (a file, /dev/full, a pipe whose reader is gone).
- ``command(*args)``: an argv whose process (``python cli_forkserver.py --run ARGS``, a small relay
  that imports nothing heavy) hands its own descriptors to a forked ``fairspec ARGS``, forwards
  SIGINT / SIGTERM / SIGHUP to it and exits with its exit status: for callers that start the process
  themselves (pygls's ``start_io`` for a language server).
- ``python_c(program, *args)``: the same for `python -c PROGRAM ARGS`, a language server a test patches
  before it serves (the program runs in the forked child, in a fresh ``__main__``, with ``WARM``
  imported already).

The protocol, over a Unix socket per command line: one JSON message ``{"args", "cwd", "env", "code"}``
(``code``: a `python -c` program, or null) with three descriptors; the answer is a line ``{"pid"}``
(the forked command's) and then a line ``{"status"}`` (its exit status as ``subprocess`` reports it:
``-N`` for a signal). The server forks an intermediate process per command line that forks the command
and waits for it, so the server never blocks on a command and serves the next command line at once (a
test may hold a language server open while it runs a command line); it reaps the intermediate processes
as they end, so the commands' CPU time counts in the test run's (``/usr/bin/time pytest`` measures the suite).
"""

from __future__ import annotations

import atexit
import gc
import json
import locale
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

# imported once in the server: what nearly every command line imports anyway, and the onnx package (its
# protobuf reader; not onnxruntime, which starts a thread when imported): every ONNX model fairspec loads is
# read by it (models/onnx_model._require_finite_onnx), ~0.5 CPU s a command line; and what a check imports of
# fairspec itself beyond the pipeline (a context, the data backend, the ONNX loader, the pair runner, certify:
# fairspec modules and `fractions` only, ~0.07 CPU s a check) (session 35)
WARM = ("numpy", "pandas", "sklearn.base", "fairspec.cli", "fairspec.pipeline", "fairspec.lsp.server", "onnx",
        "onnx.numpy_helper", "fairspec.runtime.context", "fairspec.backends.data.metrics", "fairspec.models.onnx_model",
        "fairspec.kinds.individual_fairness", "fairspec.certify")
# read by fairspec when its module is imported: a command line setting one gets a fresh process
IMPORT_TIME_ENV = ("FAIRSPEC_BATCH_ROWS", "FAIRSPEC_STREAM_ROWS", "FAIRSPEC_LSP_MAX_DOCUMENT")
FRESH_ENV = "FAIRSPEC_TEST_FRESH_PROCESS"
ADDRESS_ENV = "FAIRSPEC_TEST_FORKSERVER"  # the server's socket, for the relay


# ---------------------------------------------------------------------------------------------- server

def _become_fairspec(msg: dict, fds: list[int]) -> None:
    """In the forked command: `fairspec ARGS` with the request's descriptors, folder and environment."""
    code = 1
    try:
        for target, fd in enumerate(fds):
            if fd != target:
                os.dup2(fd, target)
                os.close(fd)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.chdir(msg["cwd"])
        os.environ.clear()
        os.environ.update(msg["env"])
        if msg.get("code") is None:
            sys.argv = ["fairspec", *msg["args"]]
            from fairspec.cli import main

            returned = main()  # the console script's path: it leaves through os._exit with the exit code
            code = returned if isinstance(returned, int) else 0
        else:
            _become_python_c(msg["code"], msg["args"])
            code = 0
    except SystemExit as e:  # argparse (--help, a usage error) raises, as in a fresh process
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, int) and e.code is not None:
            print(e.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - what Python prints for an uncaught exception, and its exit code
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - a closed pipe: nothing more to say
                pass
        os._exit(code)


def _become_python_c(program: str, args: list[str]) -> None:
    """In the forked command: what `python -c PROGRAM ARGS` runs, in a fresh ``__main__`` with the
    folder first on ``sys.path``; the modules in ``WARM`` are imported already (a patch the program makes
    to a module attribute that fairspec reads at call time, ``A.analyse = ...``, acts as in a fresh
    process). The caller leaves through ``os._exit`` (no atexit handlers: fairspec's language server and
    CLI leave that way themselves)."""
    import builtins
    import types

    sys.argv = ["-c", *args]
    sys.path.insert(0, "")
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main
    try:
        exec(compile(program, "<string>", "exec"), main.__dict__)
    except Exception as e:  # noqa: BLE001 - Python's report of an uncaught exception, from the program's frame on
        import traceback

        traceback.print_exception(type(e), e, e.__traceback__.tb_next)
        raise SystemExit(1) from None


def _serve_one(conn: socket.socket, msg: dict, fds: list[int]) -> None:
    """In the intermediate process: fork the command, say its pid, wait for it, say its status."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    pid = os.fork()
    if pid == 0:
        conn.close()
        _become_fairspec(msg, fds)
    for f in fds:
        os.close(f)
    try:
        conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        _, status = os.waitpid(pid, 0)
        conn.sendall(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
    except OSError:
        pass
    os._exit(0)


def _reap(exit_after: bool = False) -> None:
    """Wait for the intermediate processes that ended (their CPU time, and their commands', then counts
    in the server's, and the server's in the test run's: `/usr/bin/time pytest` measures the suite)."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass
    if exit_after:
        os._exit(0)


def serve(address: str) -> None:
    if sys.path and sys.path[0] == os.path.dirname(os.path.abspath(__file__)):
        sys.path.pop(0)  # the console script does not see the tests' folder
    for name in WARM:
        try:
            __import__(name)
        except ImportError:     # an optional extra that is not installed: its command lines import nothing more
            pass
    # the warm modules' objects out of the collector's reach: a child's collection no longer walks (and so
    # copies, page by page) the whole heap it shares with the server -- 0.1 CPU s a command line that the
    # onnx package alone added to every child that reads no ONNX model (session 35)
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind("\0" + address)
    listener.listen(16)
    signal.signal(signal.SIGTERM, lambda signum, frame: _reap(exit_after=True))
    print("ready", flush=True)
    while True:
        _reap()
        conn, _ = listener.accept()
        try:
            data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, 3)
            msg = json.loads(data)
        except (OSError, ValueError):
            conn.close()
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        if os.fork() == 0:
            listener.close()
            _serve_one(conn, msg, fds)
        for f in fds:
            os.close(f)
        conn.close()


# ---------------------------------------------------------------------------------------------- clients

def _request(address: str, args: list[str], cwd: str, env: dict, fds: list[int], code: str | None = None):
    """Send one command line (``code``: a `python -c` program, ``args`` its arguments); (the
    connection, its answer lines, the forked command's pid)."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect("\0" + address)
    socket.send_fds(conn, [json.dumps({"args": args, "cwd": cwd, "env": env, "code": code}).encode()], fds)
    lines = conn.makefile("rb")
    return conn, lines, json.loads(lines.readline())["pid"]


class ForkServer:
    """The test process's handle on one server (started on first use, one per pytest-xdist worker)."""

    def __init__(self) -> None:
        self.address = f"fairspec-tests-{os.getpid()}-{uuid.uuid4().hex}"  # a name in Linux's abstract namespace
        self.env = dict(os.environ)  # what the server starts with: a command line wanting other start-up values is fresh
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve", self.address],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=self.env)
        if self.proc.stdout.readline() != b"ready\n":
            raise RuntimeError("tests/cli_forkserver.py: the server did not start")
        atexit.register(self.close)

    def close(self) -> None:
        """End the server and reap it (its CPU time then counts as the test run's)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, args: list[str], cwd: str, env: dict, timeout: float, stdout: int | None = None,
            stderr: int | None = None, text: bool = True, stdin: int | None = None) -> subprocess.CompletedProcess:
        """``stdout`` / ``stderr``: a descriptor the command writes to as its own (a file, a pipe whose
        reader is gone: not captured, None in the result), or None: captured, as ``capture_output``.
        ``stdin``: a descriptor the command reads as its own, or None: /dev/null."""
        null = os.open(os.devnull, os.O_RDONLY) if stdin is None else os.dup(stdin)
        fds, captured = [null], []
        try:
            for given in (stdout, stderr):
                if given is None:
                    r, w = os.pipe()
                    captured.append(r)
                    fds.append(w)
                else:
                    captured.append(None)
                    fds.append(os.dup(given))
            conn, lines, pid = _request(self.address, args, cwd, env, fds)
        except BaseException:
            for f in captured:
                if f is not None:
                    os.close(f)
            raise
        finally:
            for f in fds:
                os.close(f)
        chunks: dict[int, bytes] = {}
        answer: list[bytes] = []

        def drain(fd: int) -> None:
            with os.fdopen(fd, "rb") as f:
                chunks[fd] = f.read()

        # the captured streams to their end, then the exit status (the only wait when nothing is captured)
        waits = [threading.Thread(target=drain, args=(fd,), daemon=True) for fd in captured if fd is not None]
        waits.append(threading.Thread(target=lambda: answer.append(lines.readline()), daemon=True))
        for t in waits:
            t.start()
        deadline = time.monotonic() + timeout
        with conn, lines:
            for t in waits:
                t.join(max(0.0, deadline - time.monotonic()))
            if any(t.is_alive() for t in waits):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                for t in waits:
                    t.join()
                raise subprocess.TimeoutExpired(["fairspec", *args], timeout)
            status = json.loads(answer[0])["status"]
        out = [None if fd is None else chunks[fd] for fd in captured]
        if text:  # as subprocess.run(text=True) decodes: the locale's encoding, universal newlines
            out = [None if b is None else
                   b.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")
                   for b in out]
        return subprocess.CompletedProcess(["fairspec", *args], status, out[0], out[1])


# the worker's servers by the start-up variables they started with, the last used last: a test that sets
# PYTHONIOENCODING for itself (test_hostile_output, test_cli_forkserver) or a module that prepends to
# PYTHONPATH (test_executor, test_dask_budget when the repository is not on it) starts one for its values, and
# the tests after it that have the old values again go back to the old server (each restart was a server's
# imports again, ~1.8 CPU s: ~4 a run) (session 35)
_SERVERS: dict[tuple, ForkServer] = {}
KEEP = 3  # servers kept per worker (~150 MB each): the least recently used one beyond is ended


def _read_at_start(env: dict) -> dict:
    """The variables Python, the locale and numpy's thread pools read when a process starts."""
    return {k: v for k, v in env.items()
            if k.startswith(("PYTHON", "LC_")) or k == "LANG" or k.endswith("_NUM_THREADS")}


def _key(env: dict) -> tuple:
    return tuple(sorted(_read_at_start(env).items()))


def _cached(env: dict) -> ForkServer | None:
    """The live server started with ``env``'s start-up values, made the last used; None when there is none."""
    server = _SERVERS.pop(_key(env), None)
    if server is not None and not server.alive():
        server.close()
        server = None
    if server is not None:
        _SERVERS[_key(server.env)] = server
    return server


def _server() -> ForkServer | None:
    """The worker's server for this process's own start-up variables, started when none has them yet
    (test_executor and test_dask_budget prepend the repository to PYTHONPATH for the rest of the worker's
    life: every later command line went to a fresh process, in CI the rest of the suite)."""
    if os.environ.get(FRESH_ENV) == "1" or not hasattr(os, "fork") or not sys.platform.startswith("linux"):
        return None
    server = _cached(os.environ)
    if server is None:
        server = _SERVERS[_key(os.environ)] = ForkServer()
        while len(_SERVERS) > KEEP:
            _SERVERS.pop(next(iter(_SERVERS))).close()
    return server


def run(args: list[str], cwd: str, env: dict, timeout: float, **streams) -> subprocess.CompletedProcess | None:
    """`fairspec ARGS` forked from a warm server, or None when this command line needs a fresh process:
    it sets a variable fairspec reads at import, or one Python reads at start (PYTHONIOENCODING,
    PYTHONPATH, PYTHONHASHSEED, the locale, ...) to a value no live server started with (a server is
    started only for this process's own values).
    ``streams``: ``stdin`` / ``stdout`` / ``stderr`` descriptors and ``text``, as :meth:`ForkServer.run` takes them."""
    if any(k in env for k in IMPORT_TIME_ENV) or _server() is None:
        return None
    server = _cached(env)
    if server is None:
        return None
    return server.run(args, cwd, env, timeout, **streams)


def command(*args: str) -> list[str] | None:
    """An argv that runs `fairspec ARGS` forked from the warm server (through the relay), or None (no
    server: ``FAIRSPEC_TEST_FRESH_PROCESS=1``, or not Linux)."""
    server = _server()
    if server is None:
        return None
    return [sys.executable, os.path.abspath(__file__), "--run", server.address, *args]


def python_c(program: str, *args: str) -> list[str]:
    """An argv that runs `python -c PROGRAM ARGS` forked from the warm server through the relay (a test's
    language server with a patch made before it serves: test_lsp_half_typed's and test_lsp_refresh's
    GATED, test_lsp_walk's UNDEBOUNCED), or that fresh `python -c` itself when ``command`` would say
    None. The program sees the warm modules imported already: it must patch what fairspec reads at call
    time (a module attribute), never rely on being first to import a module."""
    server = _server()
    if server is None:
        return [sys.executable, "-c", program, *args]
    return [sys.executable, os.path.abspath(__file__), "--python", server.address, program, *args]


# ---------------------------------------------------------------------------------------------- relay

def relay(address: str, args: list[str], program: str | None = None) -> None:
    """`python cli_forkserver.py --run ADDRESS ARGS`: hand this process's descriptors, folder and
    environment to a forked `fairspec ARGS`, forward signals to it and leave with its exit status
    (or become a fresh `fairspec ARGS` when the environment sets a value read at import time).
    ``--python ADDRESS PROGRAM ARGS`` (``program``): the same for `python -c PROGRAM ARGS`."""
    if any(k in os.environ for k in IMPORT_TIME_ENV):
        import shutil

        exe = shutil.which("fairspec")
        argv = [exe, *args] if exe else [sys.executable, "-m", "fairspec.cli", *args]
        if program is not None:
            argv = [sys.executable, "-c", program, *args]
        os.execv(argv[0], argv)
    conn, lines, pid = _request(address, args, os.getcwd(), dict(os.environ), [0, 1, 2], program)

    def forward(signum, frame):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, forward)
    line = lines.readline()
    status = json.loads(line)["status"] if line else 1
    if status < 0:  # killed by a signal: so is the relay
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    os._exit(status)


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        serve(sys.argv[2])
    elif sys.argv[1] == "--run":
        relay(sys.argv[2], sys.argv[3:])
    elif sys.argv[1] == "--python":
        relay(sys.argv[2], sys.argv[4:], sys.argv[3])
