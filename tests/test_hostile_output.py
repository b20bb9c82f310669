"""Hostile input, round two (issue 21, classes 1 and 2): no verdict text a data value can forge.

Categories in a CSV and strings in a spec carrying ESC sequences (a cleared screen, an OSC title,
a carriage return, a bidi override) and rich markup (``[bold green]holds (proved)[/]``, ``[/]``,
a ``[link=...]``) go through every text writer: the report table, reasons, the per-group table,
lint's messages and snippets, ``--format github``.  None reaches the terminal raw; every one is
printed as written (markup) or as a visible escape (control characters); nothing crashes.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess

import pytest

import cli_forkserver
from conftest import fairspec_command, run_cli
from fairspec.diagnostics import render_full
from fairspec.diagnostics.visible import visible, visible_value
from fairspec.pipeline import check, lint

ESC = "\x1b"
HOSTILE = [f"{ESC}]0;pwned{ESC}\\x", "[bold green]holds (proved)[/]", "[/]", "[link=https://evil.example]holds[/link]",
           f"a{ESC}[2Jb", "c\rholds", "d\u202eolleh", "[x]"]
SGR = re.compile(r"\x1b\[[0-9;]*m")  # the colours rich itself writes on a terminal


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\") + '"'


def _spec_quote(s: str) -> str:
    """As the spec writes it: a carriage return as the escape \\r (a raw one ends the line, as in an editor)."""
    return _quote(s).replace("\r", "\\r")


def _project(tmp_path, *, extra_value: str | None = None):
    (tmp_path / "fairspec.toml").write_text("")
    rows = ["g,approved,outcome"]
    for i in range(40 * len(HOSTILE)):
        # the second group always approved, the others one in three: `strict` is violated by more than the
        # simultaneous Clopper-Pearson interval of 40 rows a group leaves open, `loose` holds (the first group's
        # text, its backslash doubled by _quote, is not a declared value: its rows are dropped)
        yes = i % len(HOSTILE) == 1 or i % 3 == 0
        rows.append(f"{_quote(HOSTILE[i % len(HOSTILE)])},{'yes' if yes else 'no'},{i % 2}")
    if extra_value:
        rows.append(f"{_quote(extra_value)},yes,1")
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n", newline="")
    spec = tmp_path / "s.fair"
    spec.write_text(f"""data log = csv("d.csv", label = outcome == 1)
features A from log {{
  g : {{{", ".join(_spec_quote(c) for c in HOSTILE)}}} protected
}}
model service = predictions(log, decision = "approved")
property strict {{
  statistical_parity(service, groups g) <= 0.01
}}
property loose {{
  statistical_parity(service, groups g) <= 0.99
}}
""", newline="")
    return spec


def _no_raw_controls(text: str) -> None:
    stripped = SGR.sub("", text)
    bad = {c for c in stripped if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f
           or c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"}
    assert not bad, sorted(map(hex, map(ord, bad)))


def test_visible_shows_every_control_character():
    assert visible(f"a{ESC}[2Jb") == "a\\x1b[2Jb"
    assert visible("x\ry\u202ez\x9b\x7f") == "x\\ry\\u202ez\\x9b\\x7f"
    assert visible("two\nlines\tok") == "two\nlines\tok"
    assert visible_value("two\nlines") == "two\\nlines"
    assert visible(3.5) == "3.5"


def test_the_text_report_prints_values_as_text_on_a_colour_terminal(tmp_path):
    from fairspec import report as rep

    res = check(_project(tmp_path))
    assert [v.status for v in res.verdicts] == ["violated", "holds"]
    buf = io.StringIO()
    rep.print_text(res, rep.console(file=buf, force_terminal=True, width=200, color_system="truecolor"))
    out = buf.getvalue()
    _no_raw_controls(out)
    plain = SGR.sub("", out)
    for s in HOSTILE:  # every category printed as written, control characters as escapes
        assert visible_value(s) in plain, s
    assert "\\x1b]0;pwned" in plain and "\\u202e" in plain
    assert "]8;" not in plain  # no OSC 8 hyperlink from [link=...]
    # the verdict column says what was decided, whatever the categories say
    assert plain.count("holds (proved)") == plain.count("[bold green]holds (proved)[/]")


def test_any_console_is_safe_with_print_text(tmp_path):
    """A plain rich Console (markup on, as a library user would pass) prints the same: every value is Text."""
    from rich.console import Console

    from fairspec import report as rep

    res = check(_project(tmp_path))
    buf = io.StringIO()
    rep.print_text(res, Console(file=buf, force_terminal=True, width=200))
    _no_raw_controls(buf.getvalue())
    assert "[bold green]holds (proved)[/]" in SGR.sub("", buf.getvalue())


def test_the_fairspec_console_makes_any_string_visible():
    from fairspec import report as rep

    buf = io.StringIO()
    c = rep.console(file=buf, force_terminal=True, width=100)
    c.print(f"[bold]x[/] {ESC}]0;t{ESC}\\ [/]")
    out = buf.getvalue()
    _no_raw_controls(out)
    assert "[bold]x[/]" in out and "\\x1b]0;t" in out


@pytest.mark.parametrize("fmt", ["text", "github", "json", "sarif"])
def test_check_in_every_format_never_passes_a_control_character(tmp_path, fmt):
    spec = _project(tmp_path)
    r = run_cli("check", spec, "--format", fmt, cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    _no_raw_controls(r.stdout)
    _no_raw_controls(r.stderr)
    if fmt in ("json", "sarif"):
        doc = json.loads(r.stdout)  # the document's strings keep the values exactly (JSON escapes them)
        assert "[bold green]holds (proved)[/]" in json.dumps(doc, ensure_ascii=False)
    if fmt == "github":
        lines = r.stdout.splitlines()
        assert all(line.startswith("::") for line in lines), lines  # no value starts a command line
        assert "\\x1b" in r.stdout


def test_lint_messages_and_snippets_show_escapes(tmp_path):
    spec = _project(tmp_path)
    text = spec.read_bytes().decode()
    spec.write_text(text + f'group bad = g == "zz{ESC}[2J\u202e[/]"\n', newline="")
    res = lint(spec)
    errs = [d for d in res.diagnostics if d.is_error]
    assert errs, res.diagnostics
    for d in errs:
        _no_raw_controls(render_full(d))
    for fmt in ("text", "concise", "github"):
        r = run_cli("lint", spec, "--format", fmt, cwd=tmp_path)
        assert r.returncode == 2, r.stdout + r.stderr
        _no_raw_controls(r.stdout)
        _no_raw_controls(r.stderr)
        assert "\\x1b[2J" in r.stdout


def test_a_snippet_keeps_its_caret_under_the_escaped_text(tmp_path):
    from fairspec.diagnostics import Diagnostic, Span, register_source

    f = str(tmp_path / "x.fair")
    register_source(f, f'a = "{ESC}{ESC}" zzz\n')
    out = render_full(Diagnostic("FS101", "bad", Span(f, 1, 10, 1, 13), "error", None))
    line, carets = out.splitlines()[3], out.splitlines()[4]
    assert "\\x1b\\x1b" in line
    assert line[carets.index("^"):].startswith("zzz")


@pytest.mark.parametrize("fmt", ["text", "concise", "json", "sarif", "github"])
def test_an_undecodable_file_name_never_breaks_a_strict_utf8_stream(tmp_path, monkeypatch, fmt):
    """A spec path with a byte that is not UTF-8 (a lone surrogate in Python) is shown as \\udcff:
    printing it raw to a strict UTF-8 stdout (a UTF-8 locale) would be an internal error."""
    monkeypatch.setenv("PYTHONIOENCODING", "utf-8:strict")
    folder = tmp_path / "b\udcffd"
    try:
        folder.mkdir()
    except (UnicodeEncodeError, OSError):
        pytest.skip("the file system does not take undecodable names")
    spec = _project(folder)
    spec.write_text(spec.read_text() + 'group bad = g == "nope"\n')
    r = run_cli("lint", spec, "--format", fmt, cwd=folder)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "internal error" not in r.stderr
    r = run_cli("lint", folder / "missing\udcff.fair", "--format", fmt, cwd=folder)
    assert r.returncode == 2 and "internal error" not in r.stderr, r.stderr


# ------------------------------------------------------------------ stdout and stderr the environment broke

def _small(tmp_path, bound: float):
    """A project that checks in a second: everything holds (bound 0.99) or a property is violated."""
    (tmp_path / "fairspec.toml").write_text("")
    biased = bound < 0.5  # then group a is always approved and b never: violated at once
    rows = ["g,approved,outcome"] + [f"{'ab'[i % 2]},{'yes' if (i % 2 == 0 if biased else i % 3) else 'no'},{i % 2}"
                                     for i in range(60)]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    spec = tmp_path / "s.fair"
    spec.write_text(f"""data log = csv("d.csv", label = outcome == 1)
features A from log {{
  g : {{a, b}} protected
}}
model service = predictions(log, decision = "approved")
property parity {{
  statistical_parity(service, groups g) <= {bound}
}}
""")
    return spec


def _run(*args, cwd, stdout=None, stderr=subprocess.PIPE, close=()):
    """`fairspec ARGS` with stdout / stderr given (a file, a pipe) or closed (``close``: fds 1, 2). Given
    ones go to a command forked from the warm server (tests/cli_forkserver.py: it writes to them as its
    own); a closed one needs a fresh process (Python starts with ``sys.stdout = None`` then)."""
    env = {k: v for k, v in os.environ.items() if k != "FAIRSPEC_DEBUG"}
    if not close and stdout is not None and stderr is not None:
        fds = {k: None if s == subprocess.PIPE else s if isinstance(s, int) else s.fileno()
               for k, s in (("stdout", stdout), ("stderr", stderr))}
        done = cli_forkserver.run([str(a) for a in args], str(cwd), env, 120, text=False, **fds)
        if done is not None:
            return done
    return subprocess.run([*fairspec_command(), *map(str, args)], cwd=cwd, stdout=stdout, stderr=stderr,
                          env=env, timeout=120, preexec_fn=(lambda: [os.close(fd) for fd in close]) if close else None)


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_a_reader_that_closes_the_pipe_early_leaves_the_verdicts_exit_code(tmp_path, fmt):
    """`fairspec check | head`: the reader's read end is closed before anything is written (every write
    is EPIPE, whatever the machine's speed); the exit code is the verdicts', in every format."""
    for bound, want in ((0.99, 0), (0.0001, 1)):
        spec = _small(tmp_path, bound)
        read, write = os.pipe()
        os.close(read)
        try:
            r = _run("check", spec, "--format", fmt, "--html", tmp_path / "r.html", cwd=tmp_path, stdout=write)
        finally:
            os.close(write)
        err = r.stderr.decode()
        assert r.returncode == want, (bound, err)
        assert "Traceback" not in err and "internal error" not in err and "Exception ignored" not in err, err
        assert (tmp_path / "r.html").read_text().startswith("<!doctype html>")  # still written
        (tmp_path / "r.html").unlink()


def _environment_error(r, stream: str = "standard output") -> None:
    err = r.stderr.decode() if r.stderr else ""
    assert r.returncode == 2, err
    assert "Traceback" not in err and "internal error" not in err and "Exception ignored" not in err, err
    assert len(err.strip().splitlines()) == 1 and stream in err, err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("argv", [["check", "s.fair", "--format", "json"], ["check", "s.fair"],
                                  ["lint", "s.fair", "--format", "json"], ["--version"], ["check", "--help"]])
def test_a_full_stdout_is_exit_2_and_one_sentence(tmp_path, argv):
    _small(tmp_path, 0.99)
    with open("/dev/full", "w") as full:
        _environment_error(_run(*argv, cwd=tmp_path, stdout=full))


@pytest.mark.parametrize("argv", [["check", "s.fair"], ["check", "s.fair", "--format", "json"], ["--version"]])
def test_a_closed_stdout_is_exit_2_and_one_sentence(tmp_path, argv):
    _small(tmp_path, 0.0001)  # violated: 2 replaces 1, the report was never seen
    r = _run(*argv, cwd=tmp_path, close=(1,))
    _environment_error(r)
    assert "closed" in r.stderr.decode()


def test_a_closed_stderr_is_exit_2_and_silent_only_when_something_had_to_be_said(tmp_path):
    _small(tmp_path, 0.99)
    r = _run("lint", "s.fair", cwd=tmp_path, stdout=subprocess.PIPE, stderr=None, close=(2,))
    assert r.returncode == 2  # lint's summary line goes to stderr, which is closed
    r = _run("check", "s.fair", "--format", "json", cwd=tmp_path, stdout=subprocess.PIPE, stderr=None, close=(2,))
    assert r.returncode == 0 and json.loads(r.stdout)["properties"][0]["status"] == "holds"  # nothing to say there
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            r = _run("lint", "s.fair", cwd=tmp_path, stdout=full, stderr=full)
        assert r.returncode == 2


def test_a_snippet_caret_counts_terminal_cells_under_wide_characters(tmp_path):
    """An emoji or a CJK character takes two cells of a terminal, a combining mark none: the caret is
    placed and sized in cells (what pyte, a VT emulator, shows under the line), not in characters."""
    from rich.cells import cell_len

    from fairspec.diagnostics import Diagnostic, Span, register_source

    f = str(tmp_path / "w.fair")
    line = 'group g = C == "😀😀" or C == "中文e\u0301" or C == "abc"'
    register_source(f, line + "\n")
    for token in ('"中文e\u0301"', '"abc"'):
        col = line.index(token) + 1
        out = render_full(Diagnostic("FS206", "bad", Span(f, 1, col, 1, col + len(token)), "error", None))
        shown, carets = out.splitlines()[3], out.splitlines()[4]
        gutter = shown.index("| ") + 2
        start = carets.index("^")
        # the cells before the caret are the cells of the text before the token
        assert start - gutter == cell_len(line[:col - 1]), (shown, carets)
        assert carets.count("^") == cell_len(token), (shown, carets)


def test_a_value_with_a_line_break_never_starts_a_line_of_lint_or_an_annotation(tmp_path):
    """A category ``"a\\n::error file=x::pwned"``: lint's message shows the line break as ``\\n`` (a CI log
    reads a line that starts with ``::error`` as a workflow command), and in ``--format github`` the
    message is one line too (the hint's own line break stays ``%0A``); a tab is shown as ``\\t``."""
    (tmp_path / "fairspec.toml").write_text("")
    spec = tmp_path / "s.fair"
    spec.write_text('features W {\n  P : bool protected\n  C : {"a", "b"} protected\n}\n'
                    'group g = C == "a\\n::error file=x::pwned\\tz"\n')
    r = run_cli("lint", spec, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert not [x for x in r.stdout.splitlines() if x.lstrip().startswith("::")], r.stdout
    assert "'a\\n::error file=x::pwned" in r.stdout
    r = run_cli("lint", spec, "--format", "github", cwd=tmp_path)
    (line,) = r.stdout.splitlines()
    assert line.startswith("::error file=s.fair,line=5,")
    message = line.split("::", 2)[2]
    assert message.startswith("'a\\n::error file=x::pwned\\tz' is not a category of C%0Ahint: "), message
    assert "\t" not in line


def test_a_hint_quoting_a_value_with_a_line_break_is_one_line():
    """The hint, like the message, may quote a category: one line in lint's text (``\\n`` shown)."""
    from fairspec.diagnostics import Diagnostic, Span, render_full

    d = Diagnostic("FS206", "unknown category", Span.point("s.fair"), hint="did you mean 'a\n::error file=x::pwned'?")
    shown = render_full(d)
    assert not [x for x in shown.splitlines() if x.lstrip().startswith("::")], shown
    assert "= hint: did you mean 'a\\n::error file=x::pwned'?" in shown, shown


def test_a_value_with_a_line_break_or_a_space_never_starts_a_line_of_the_check_report(tmp_path):
    """``check``'s text report: a reason quoting a category ``"a\\n::error file=x::pwned"`` shows the
    line break as ``\\n``, and a reason is never wrapped at the console's width (the terminal wraps
    it), so a category ``"b ::error::..."`` cannot land at the start of a wrapped line either. GitHub's
    runner strips leading whitespace before it looks for ``::``, so no line may start with it even
    indented; every width, since where rich would wrap depends on it."""
    import csv

    (tmp_path / "fairspec.toml").write_text("")
    cats = ["a\n::error file=x::pwned", "b c ::error::wrapped"]
    with open(tmp_path / "d.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["C", "age", "y"])
        for i in range(200):
            w.writerow([cats[i % 2], 18 + (i * 7) % 60, int(i % 3 == 0)])
    (tmp_path / "s.fair").write_text(
        'data d = csv("d.csv", label = y == 1)\n'
        'features W from d {\n  C : {"a\\n::error file=x::pwned", "b c ::error::wrapped"} protected\n'
        '  age : int in [18, 80]\n}\nmodel clf = rule(age >= 40)\n'
        'property p { statistical_parity(clf, groups C) <= 0.1 }\n')
    for width in (40, 80, 120, 200):
        r = run_cli("check", "s.fair", cwd=tmp_path, env={"COLUMNS": str(width)})
        assert r.returncode == 3, r.stdout + r.stderr  # unknown: the threshold lies in the interval
        assert not [x for x in (r.stdout + r.stderr).splitlines() if x.lstrip().startswith("::")], r.stdout
        (reason,) = [x for x in r.stdout.splitlines() if x.startswith("p: ") and "lowest" in x]
        assert "C=a\\n::error file=x::pwned" in reason and "C=b c ::error::wrapped" in reason, reason


def test_a_spec_path_with_a_workflow_command_never_starts_a_line_of_the_summary(tmp_path):
    """The summary's title names the spec as given: a folder name holding ``" ::error file=a::x"`` was
    wrapped at the table's width onto a line of its own; it is printed by ``say`` now (one line)."""
    folder = tmp_path / ("fairness of the hiring model " * 3 + "::error file=a::injected")
    folder.mkdir()
    (folder / "fairspec.toml").write_text("")
    (folder / "d.csv").write_text("s,age,y\n" + "".join(f"{'FM'[i % 2]},{20 + i},{i % 2}\n" for i in range(40)))
    (folder / "s.fair").write_text('data d = csv("d.csv", label = y == 1)\n'
                                   'features W from d {\n  s : {F, M} protected\n  age : int in [18, 80]\n}\n'
                                   'model clf = rule(age >= 40)\nproperty p { statistical_parity(clf, groups s) <= 0.9 }\n')
    for width in (40, 60, 120):
        r = run_cli("check", folder / "s.fair", cwd=folder, env={"COLUMNS": str(width)})
        assert r.returncode in (0, 1, 3), r.stdout + r.stderr      # a verdict, whichever
        lines = (r.stdout + r.stderr).splitlines()
        assert not [x for x in lines if x.lstrip().startswith(("::", "file=a::"))], r.stdout
        assert any(x.startswith("fairspec check ") and x.endswith("injected/s.fair") for x in lines), r.stdout


def test_say_prints_one_line_whatever_the_console_width():
    """The writer of reasons, errors and warnings: one physical line, its line breaks as ``\\n``."""
    from fairspec.report import console, say

    buf = io.StringIO()
    c = console(file=buf, width=20)
    say(c, "error: " + "word " * 10 + "::error::x\n::warning::y", "bold red")
    (line,) = buf.getvalue().splitlines()
    assert line.endswith("word ::error::x\\n::warning::y"), line
