"""`fairspec check | lint | fmt | lsp`: the command line.

Exit codes: 0 every property holds, 1 a property is violated, 2 bad spec,
model, data or usage, 3 no violation found but not everything holds
(unknown), 4 an internal error (a fairspec bug), 130 interrupted by Ctrl-C
(SIGINT), 143 interrupted by SIGTERM (the verdicts decided before the signal
are reported, in every format, and the HTML report is written). A closed or full stdout or
stderr is exit 2; a reader that closes the pipe early leaves the exit code as it was.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from fairspec import version
from fairspec.runtime.stdio import flush_c_stdio, guarded_streams
from fairspec.diagnostics.visible import visible_value

EXIT_INTERNAL = 4
_IGNORE_HELP = ("suppress warning CODE everywhere (repeatable, or CODE,CODE); a warning on one line is "
                "acknowledged in the spec instead, with a comment '# fairspec: ignore[CODE]' on it or the line "
                "above. Errors are never suppressed; suppressed warnings are counted")
_ALLOW_HELP = ("also let the spec read and write inside DIR (repeatable); by default it may use only its "
               "project (the nearest folder with fairspec.toml or .git) and the shipped policies")


class _UsageError(SystemExit):
    """argparse's usage error (exit code 2), with its message: _main prints a machine format's document."""

    def __init__(self, message: str):
        super().__init__(2)
        self.message = message


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # usage errors exit 2 with one line, as argparse does, but never a traceback
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {visible_value(message)}\n")  # it quotes the arguments
        raise _UsageError(message)


class _Once(argparse._StoreAction):
    """An option that takes one value: given twice with two values (``--property a --property b``) it is
    a usage error, not the last one silently (argparse's default dropped ``a`` and ran ``b`` alone);
    the same value twice says one thing and is taken."""

    def __call__(self, parser, namespace, values, option_string=None):  # noqa: ANN001
        seen = namespace.__dict__.setdefault("_given_once", {})
        if self.dest in seen and seen[self.dest] != values:
            raise argparse.ArgumentError(self, f"given twice ({seen[self.dest]!r} and {values!r}); give it once")
        seen[self.dest] = values
        setattr(namespace, self.dest, values)


def _stdout_width() -> int | None:
    """The text report's width: a terminal's own (None: rich reads it, and COLUMNS); piped or
    redirected, COLUMNS when it is set to a width (at least 20 columns), else 120. It was always 120
    off a terminal: ``COLUMNS=200 fairspec check s.fair | less`` still wrapped at 120."""
    if sys.stdout.isatty():
        return None
    cols = os.environ.get("COLUMNS", "").strip()
    return max(20, int(cols)) if cols.isdigit() and int(cols) > 0 else 120


def _build() -> argparse.ArgumentParser:
    p = _Parser(prog="fairspec", description="Check fairness specifications (.fair files) against real models and data.")
    p.add_argument("--version", action=_LazyVersion, nargs=0, help="show the version and exit")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    c = sub.add_parser("check", help="lint, load the models and data, and decide every property")
    c.add_argument("spec")
    c.add_argument("--format", action=_Once, choices=("text", "json", "sarif", "github"), default="text")
    c.add_argument("--property", action=_Once, help="run only this property")
    c.add_argument("--allow-path", action="append", default=[], metavar="DIR", help=_ALLOW_HELP, type=_folder)
    c.add_argument("--html", action=_Once, metavar="FILE", help="also write a self-contained HTML report (plots inlined) to FILE")
    c.add_argument("--workers", action=_Once, type=_positive, metavar="N",
                   help="independent jobs at once (default: the machine's cores); N > 1 also runs the "
                        "properties (and --models' files) in parallel")
    c.add_argument("--cluster", action=_Once, metavar="ADDRESS",
                   help="run the jobs on a running Dask scheduler, e.g. tcp://host:8786 (or set FAIRSPEC_CLUSTER)")
    c.add_argument("--models", action=_Once, metavar="[NAME=]FOLDER",
                   help="check the spec against each model file in FOLDER in place of model NAME")
    c.add_argument("--ignore", action="append", default=[], metavar="CODE", help=_IGNORE_HELP)
    l = sub.add_parser("lint", help="every check that needs no solver (reads model headers and data samples)")
    l.add_argument("spec")
    l.add_argument("--format", action=_Once, choices=("text", "concise", "json", "sarif", "github"), default="text")
    l.add_argument("--allow-path", action="append", default=[], metavar="DIR", help=_ALLOW_HELP, type=_folder)
    l.add_argument("--ignore", action="append", default=[], metavar="CODE", help=_IGNORE_HELP)
    f = sub.add_parser("fmt", help="rewrite .fair files in the canonical layout (comments kept)")
    f.add_argument("files", nargs="+", metavar="FILE")
    f.add_argument("--check", action="store_true", help="change nothing; list the files that would change, exit 1")
    sub.add_parser("lsp", help="the language server for editors, over stdio (pygls)")
    p.commands = {"check": c, "lint": l}  # for a usage error's document (fairspec.errordoc.usage_error)
    return p


class _LazyVersion(argparse.Action):
    """--version without importing importlib.metadata on every run (it costs ~20 ms of lint's budget)."""

    def __call__(self, parser, namespace, values, option_string=None):  # noqa: ANN001
        print(f"fairspec {_version()}")
        parser.exit()


def _version() -> str:
    return version()


def _lint(args) -> int:
    from fairspec.diagnostics import render
    from fairspec.pipeline import lint

    with _solver_chatter_to_stderr(args.format != "text"):  # lint loads the models: what they print is not the document
        res = lint(args.spec, allow=args.allow_path, ignore=args.ignore)
    if args.format in ("sarif", "github"):
        from fairspec.report import ci

        text = (ci.to_sarif(res.diagnostics, version=_version(), spec=args.spec, suppressed=res.suppressed)
                if args.format == "sarif" else ci.to_github(res.diagnostics, spec=args.spec))
    else:
        text = render(res.diagnostics, args.format, spec=args.spec, suppressed=len(res.suppressed))
    if text:
        print(text)
    errors = sum(d.is_error for d in res.diagnostics)
    if args.format == "text":
        warnings = len(res.diagnostics) - errors
        hidden = f", {len(res.suppressed)} suppressed" if res.suppressed else ""  # ignore comments, --ignore
        print(f"{visible_value(args.spec)}: {errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}"
              f"{hidden}", file=sys.stderr)
    return 2 if errors else 0


def _fmt(args) -> int:
    """Exit 0: every file is (now) formatted; 1: --check found files to reformat; 2: a file does not parse."""
    from fairspec.diagnostics import DiagnosticError, render_full
    from fairspec.syntax.format import format_file

    changed = bad = 0
    for name in args.files:
        try:
            if format_file(name, write=not args.check):
                changed += 1
                print(visible_value(name) if args.check else f"reformatted {visible_value(name)}", file=sys.stdout if args.check else sys.stderr)
        except DiagnosticError as e:  # the file is left as it is
            bad += 1
            for d in e.diagnostics:
                print(render_full(d), file=sys.stderr)
    if args.check and changed:
        print(f"{changed} file{'s' * (changed != 1)} would be reformatted", file=sys.stderr)
    return 2 if bad else (1 if args.check and changed else 0)


def _lsp(args) -> int:
    from fairspec.lsp import internals

    # a missing or incompatible pygls is one sentence naming the version needed, before serving
    # (not an ImportError's traceback, nor a server that fails on the editor's first message)
    error, warning = internals.pygls_problem()
    if error is not None:
        print(error, file=sys.stderr)
        return 2
    if warning is not None:
        print(warning, file=sys.stderr)
    from fairspec.lsp.server import main as serve

    return serve()


@contextlib.contextmanager
def _solver_chatter_to_stderr(on: bool):
    """While checking for a machine format, nothing but the document may reach stdout.

    Solvers are C/C++ libraries that write to file descriptor 1 themselves (HiGHS prints its
    banner when a model is created, whatever its options; SCIP, z3 and others may log), so
    redirecting ``sys.stdout`` is not enough: fd 1 (and ``sys.stdout``) point at stderr for the
    whole check and a duplicate of the real stdout is restored for the document, after libc's
    buffers are flushed (to stderr).
    """
    if not on:
        yield
        return
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no real file descriptors (an embedding host): nothing to redirect
        yield
        return
    py_stdout = sys.stdout
    try:  # redirected inside the try: a Ctrl-C / SIGTERM right after dup2 still restores fd 1
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        yield
    finally:
        try:
            sys.stderr.flush()
            flush_c_stdio()
        finally:
            sys.stdout = py_stdout
            os.dup2(saved, 1)
            os.close(saved)


def _folder(text: str) -> str:
    if not text.strip():  # "" would allow the working directory (a wrapper's unset variable): refused
        raise argparse.ArgumentTypeError("the folder is empty; name a folder (an empty value would allow the "
                                         "working directory)")
    return text


#: the most worker processes --workers asks for (a bigger number overflowed the process pool's
#: semaphore, an internal error, and no machine runs more checks at once usefully)
MAX_WORKERS = 1024


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"expected a whole number of workers in [1, {MAX_WORKERS}], got {text!r}")
    return n




def _check(args) -> int:
    from fairspec import report as rep
    from fairspec.runtime import executor
    from fairspec.pipeline import InputError, check

    if args.html is not None and not _html_target_ok(args.html, args.spec, args):
        return 2  # checked before any work: a report that cannot be written is known now
    executor.configure(workers=args.workers, cluster=args.cluster)
    parallel = bool((args.workers or 1) > 1 or executor.cluster_address())
    if args.models:
        return _check_models(args, parallel)

    err = rep.console(stderr=True)
    progress = None
    if args.format == "text" and err.is_terminal:
        from rich.progress import Progress

        progress = Progress(console=err, transient=True)
        progress.start()
    from fairspec import interrupt

    # the whole check in a recording handler, the check itself in the raising one: from the check's
    # start to the report's end (to the process's exit, run as the console script: _recording)
    # SIGTERM is never at its default action (which ended the process silently when it came between the two)
    with _recording():
        try:
            with interrupt.installed(fresh=False), _solver_chatter_to_stderr(args.format != "text"):
                # Ctrl-C / SIGTERM stops the solver; the verdicts decided so far are printed
                try:
                    result = check(args.spec, only=args.property, progress=None if parallel else progress,
                                   parallel=parallel, allow=args.allow_path, before=_html_guard(args),
                                   ignore=args.ignore)
                except KeyboardInterrupt:  # before any property ran (lint, loading): a report with no verdicts
                    result = rep_interrupted(args.spec)
                if result.interrupted:
                    _end_workers()
        except InputError as e:  # --html FILE is a file the spec reads (known after lint): nothing ran
            _input_error(args, str(e))
            return 2
        finally:
            if progress:
                progress.stop()
        # a signal while the report is printed and written is recorded, not raised: the report is
        # finished, then the exit code says the run was interrupted (a second signal exits at once)
        code = _emit_check(args, result)
    if code == result.exit_code and interrupt.requested() and not result.interrupted:
        print(f"fairspec: interrupted ({interrupt.what()}) after every verdict was decided; the report is "
              f"complete", file=sys.stderr)
        return interrupt.exit_code()
    return code


_CONSOLE: dict = {"script": False, "held": []}  # main() run as the console script; the recording blocks it holds


@contextlib.contextmanager
def _recording():
    """The check's recording handler (``interrupt.installed(defer=True)``: a signal is recorded, the report
    is finished). Run as the console script it is not left at the block's end but held to the process's
    exit (:func:`_leave`, which leaves with ``os._exit``): between the report and the exit a signal is
    recorded too, never at SIGTERM's default action (the process ended at once with -15, or a
    KeyboardInterrupt came out of main). Called in-process it ends with its block: the caller's
    handlers come back."""
    from fairspec import interrupt

    if not _CONSOLE["script"]:
        with interrupt.installed(defer=True):
            yield
        return
    block = interrupt.installed(defer=True)
    block.__enter__()
    _CONSOLE["held"].append(block)  # referenced: a collected generator would run its finally (the handlers' end)
    yield


def _emit_check(args, result) -> int:
    """Print ``result`` in ``args.format`` and write ``--html``; the exit code."""
    from fairspec import report as rep

    if result.interrupted:
        print("fairspec: interrupted; the properties not decided are reported unknown", file=sys.stderr)
    internal = ()
    if args.format != "text" and args.html is not None:  # written first: the document says if it failed
        with _solver_chatter_to_stderr(True):  # what matplotlib (or a library it loads) prints is not the document
            internal = _html_error_into(lambda html: html.write(result, args.html, keep=result.inputs), [result])
    if args.format == "json":
        print(rep.to_json(result))
    elif args.format in ("sarif", "github"):
        from fairspec.report import ci

        # every internal error (a backend's, which left its property unknown, and the HTML report's, already in
        # result.internal_errors) is an error finding of rule `internal`: exit 4 is never only a warning
        internal = tuple(dict.fromkeys((*result.internal_errors, *internal)))
        policies = getattr(result, "policy_sites", None)
        text = (ci.to_sarif(result.diagnostics, result.verdicts, result.property_spans, error=result.error,
                            version=_version(), policies=policies, spec=result.spec, error_span=result.error_span,
                            internal=internal, suppressed=result.suppressed,
                            provenance=result.provenance() if result.started is not None else None)
                if args.format == "sarif"
                else ci.to_github(result.diagnostics, result.verdicts, result.property_spans, error=result.error,
                                  policies=policies, error_span=result.error_span, spec=result.spec,
                                  internal=internal))
        if text:
            print(text)
    else:
        rep.print_text(result, rep.console(width=_stdout_width()))
        if args.html is not None and _write_html(lambda html: html.write(result, args.html, keep=result.inputs)):
            return 2  # the table printed, the sentence on stderr: the text report states no exit code
    return result.exit_code


def _html_target_ok(path: str, spec: str, args=None) -> bool:
    """``--html FILE`` checked before any work (fairspec.files.check_target): empty, a folder, a
    device or pipe, a missing folder, the spec itself is one sentence on stderr (and, given ``args``
    with a machine format, the error's document on stdout) and False."""
    from fairspec.report import html

    try:
        html.check_path(path, keep=(spec,), foreign=False)  # a file lint finds the spec reads: named then
    except html.ReportWriteError as e:
        _input_error(args, str(e))
        return False
    return True


def _html_guard(args):
    """``--html FILE`` checked again once lint knows every file the spec reads (its imports, models
    and data), before any model is loaded: InputError (one sentence) when it cannot take the report."""
    if args.html is None:
        return None
    from fairspec.pipeline import InputError
    from fairspec.report import html

    def guard(reads):
        try:
            html.check_path(args.html, keep=reads, spec=args.spec, allow=args.allow_path)
        except html.ReportWriteError as e:
            raise InputError(str(e)) from None
    return guard


def _input_error(args, message: str) -> None:
    """An input error found before any check ran: one sentence on stderr and, under a machine format,
    the document the other input errors give (fairspec.errordoc)."""
    print(f"fairspec: {visible_value(message)}", file=sys.stderr)  # one line: see report.say
    if args is not None and args.format != "text":
        from fairspec import errordoc

        print(errordoc.document(args.format, args.spec, message, models=bool(args.models), version=_version()))


def _write_html(write) -> str | None:
    """Run ``write(fairspec.report.html)``; a file that cannot be written or a missing matplotlib
    is one sentence on stderr, returned (None: written)."""
    from fairspec.report import html

    try:
        write(html)
    except html.ReportWriteError as e:
        message = str(e)
    except ImportError as e:
        message = (f"the HTML report needs matplotlib ({e.name} is not installed): "
                   f"pip install 'specfair[report]'")
    else:
        return None
    print(f"fairspec: {visible_value(message)}", file=sys.stderr)
    return message


def _html_error_into(write, reports) -> tuple[str, ...]:
    """Under a machine format ``--html`` is written before the document is printed: when it fails,
    each report carries the sentence as its ``error`` (after any error it had), so the document's
    ``exit_code`` (2, or 130 / 143 when interrupted) and its error entry say what the process
    exits with and why.

    A bug while rendering (any other exception) is an internal error: reported on stderr as the
    command line reports one, and added to each report's ``internal_errors``, so the document is
    still printed on stdout, names it and states exit code 4 (the code the process exits with; 2 when
    the run had an input error, 130 / 143 when interrupted). Returned for SARIF and GitHub, which
    carry it as a finding of rule ``internal``; () otherwise. FAIRSPEC_DEBUG=1 raises it, as elsewhere."""
    try:
        message = _write_html(write)
    except Exception as e:  # noqa: BLE001 - a bug in fairspec's HTML report, not bad input
        if os.environ.get("FAIRSPEC_DEBUG"):
            raise
        print(_internal_error_text(e), file=sys.stderr)
        entry = f"HTML report: {type(e).__name__}: {e}"
        for r in reports:
            r.internal_errors.append(entry)
        return (entry,)
    if message is not None:
        for r in reports:
            r.error = message if r.error is None else f"{r.error}; {message}"
    return ()


def _internal_error_text(e: BaseException) -> str:
    """What the command line says of a bug in fairspec (stderr)."""
    return (f"fairspec: internal error: {type(e).__name__}: {visible_value(e)}\n"
            f"this is a bug in fairspec; rerun with FAIRSPEC_DEBUG=1 for the traceback")


def _check_models(args, parallel: bool) -> int:
    """``--models [NAME=]FOLDER``: one report per model file, in file order; the worst exit code."""
    from fairspec.pipeline import InputError, check_models

    # NAME=FOLDER splits at the first '=' after a name: a folder such as runs/lr=0.1 is a folder (the
    # last '=' made it model 'runs/lr' in folder '0.1'), and NAME= with no folder is not the current one
    name, sep, folder = args.models.partition("=")
    if not (sep and name.isidentifier()):
        name, folder = "", args.models
    if not folder:
        _input_error(args, f"--models {args.models} names no folder (write --models NAME=FOLDER or --models FOLDER)")
        return 2
    from fairspec import interrupt

    with _recording():  # as in _check: no moment at SIGTERM's default action
        try:
            with interrupt.installed(fresh=False), _solver_chatter_to_stderr(args.format != "text"):
                try:
                    reports = check_models(args.spec, name or None, folder, only=args.property, parallel=parallel,
                                           allow=args.allow_path, before=_html_guard(args), ignore=args.ignore)
                except KeyboardInterrupt:  # before any job ran: one report with no verdicts
                    reports = [(None, rep_interrupted(args.spec))]
                if any(r.interrupted for _, r in reports):
                    _end_workers()
        except InputError as e:
            _input_error(args, str(e))
            return 2
        code = _emit_models(args, reports)  # as in _check: a signal now is recorded, the reports finished
    if code not in (2, 130, 143) and interrupt.requested():
        print(f"fairspec: interrupted ({interrupt.what()}) after every verdict was decided; the report is "
              f"complete", file=sys.stderr)
        return interrupt.exit_code()
    return code


def _emit_models(args, reports) -> int:
    from fairspec import report as rep

    internal = ()
    if args.format != "text" and args.html is not None:  # as in _emit_check: written before the document
        keep = tuple(x for _, r in reports for x in (r.inputs or ()))
        with _solver_chatter_to_stderr(True):  # as in _emit_check: nothing printed while drawing reaches stdout
            internal = _html_error_into(lambda html: html.write_models(reports, args.html, keep=keep),
                                        [r for _, r in reports])
    codes = [r.exit_code for _, r in reports]
    code = next((c for c in (130, 143, 2, 4, 1, 3) if c in codes), 0)
    if code in (130, 143):
        print("fairspec: interrupted; the properties not decided are reported unknown", file=sys.stderr)
    if args.format == "json":
        print(rep.dumps({"models": [{"model_file": f, **r.to_json()} for f, r in reports], "exit_code": code}))
    elif args.format in ("sarif", "github"):  # SARIF: one run per model file; GitHub: the file in each annotation
        from fairspec.report import ci

        text = ci.to_sarif_models(reports, version=_version(), internal=internal) if args.format == "sarif" \
            else ci.to_github_models(reports, internal=internal)
        if text:
            print(text)
    else:
        out = rep.console(width=_stdout_width())
        for f, r in reports:
            out.print(rep.value(f"model file {f}"))
            rep.print_text(r, out)
        keep = tuple(x for _, r in reports for x in (r.inputs or ()))
        if args.html is not None and _write_html(lambda html: html.write_models(reports, args.html, keep=keep)):
            return 2
    return code


def rep_interrupted(spec):
    """The report of a run interrupted before any property ran."""
    from fairspec import interrupt
    from fairspec.pipeline import Report

    return Report(str(spec), [], interrupted=True, signal=interrupt.signal_number())


def _end_workers() -> None:
    """After Ctrl-C / SIGTERM: the worker processes end now (multiprocessing's resource tracker with this process),
    before the report is printed, so none outlives the run (a CI cancel kills the rest)."""
    import sys as _sys

    if "fairspec.runtime.executor" in _sys.modules:
        _sys.modules["fairspec.runtime.executor"].shutdown_pools(wait=False)


def main(argv=None) -> int:
    # stdout and stderr never raise: a closed or full one is exit 2 (one sentence on stderr if it
    # works), a reader that closed the pipe early leaves the verdicts' exit code (README, exit codes)
    _CONSOLE["script"] = argv is None
    with guarded_streams() as streams:
        try:
            code = streams.exit_code(_main(argv))
        except SystemExit as e:  # argparse: --help, --version, a usage error
            was = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if streams.exit_code(was) != was:
                raise SystemExit(2) from None
            raise
    if argv is None:   # the console script: interrupted (130 / 143) or not, it leaves without teardown
        _leave(code)
    if "fairspec.interrupt" in sys.modules:  # called in-process: a later check starts uninterrupted
        sys.modules["fairspec.interrupt"].reset()
    return code


def _exit_now(code) -> None:
    """The command line was interrupted and everything is reported, written and the workers ended:
    leave without the interpreter's teardown (finalising torch, onnxruntime and the solvers' native
    state took 0.7-0.9 s of the 1.2 s from Ctrl-C to exit, measured in bench/interrupt_latency.py)."""
    try:
        _end_workers()  # a signal after the check (while printing): the kept pool goes too
    except Exception:  # noqa: BLE001 - exiting regardless
        pass
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    flush_c_stdio()
    os._exit(code() if callable(code) else code)  # a callable: the code as it stands at the last moment


def _leave(code: int) -> None:
    """The command line's normal end, the report out: Ctrl-C / SIGTERM from now on is noted, not
    raised, the worker pools end, and the process leaves without the interpreter's teardown (as
    :func:`_exit_now`). A signal in that window (2-3 s of joining pool threads and finalising native
    libraries) printed a KeyboardInterrupt traceback from threading's shutdown and left the verdicts'
    exit code; now it is the interrupt's exit code, 128 + the signal, with nothing on stderr. So is a
    signal the check's recording handler (held to here, see :func:`_recording`) noted after the check
    returned its exit code (an error's 2 and an interrupt's own code stay)."""
    import signal

    got: list[int] = []
    for s in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(s, lambda signum, frame: got.append(signum))
        except (ValueError, OSError):  # not the main thread: nothing to note
            pass
    interrupt = sys.modules.get("fairspec.interrupt")
    if not got and interrupt is not None and interrupt.requested() and code not in (2, 130, 143):
        code = interrupt.exit_code()
    _end_workers()
    _exit_now(lambda: 128 + got[0] if got else code)  # a signal while the workers end counts too


def _main(argv=None) -> int:
    parser = _build()
    try:
        args = parser.parse_args(argv)
    except _UsageError as e:  # under a machine format stdout still holds a document (exit code 2)
        from fairspec.errordoc import usage_error

        try:
            doc = usage_error(parser.commands, list(sys.argv[1:] if argv is None else argv), e.message,
                              version=_version())
        except Exception:  # noqa: BLE001 - a usage error is never a traceback; the usage on stderr stands
            doc = None
        if doc is not None:
            with contextlib.suppress(OSError):  # a closed stdout: the usage on stderr says it all
                print(doc)
        raise
    try:
        return {"check": _check, "lint": _lint, "fmt": _fmt, "lsp": _lsp}[args.command](args)
    except KeyboardInterrupt:
        from fairspec import interrupt

        print("fairspec: interrupted", file=sys.stderr)
        return interrupt.exit_code()
    except Exception as e:  # noqa: BLE001 - a bug in fairspec, not bad input
        if os.environ.get("FAIRSPEC_DEBUG"):
            raise
        print(_internal_error_text(e), file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
