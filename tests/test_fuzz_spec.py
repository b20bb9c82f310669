"""Malformed specs never crash fairspec: mutated ok fixtures, garbage, odd paths.

Each mutation of a golden ok fixture (a token deleted, duplicated or swapped
with its neighbour, random bytes inserted, the file truncated) must lint
without an exception, every diagnostic must render in all three formats, and
the CLI must exit 0 or 2 with no traceback.  Mutated files are written to a
temporary folder only; relative paths inside the fixtures are made absolute
first, so the mutants still reach the real data and model files.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import OK, ok_fixtures, run_cli
from fairspec.cli import main as cli_main
from fairspec.diagnostics import Diagnostic, render
from fairspec.diagnostics.codes import CODES
from fairspec.pipeline import lint

from spec_fuzz import _STRING, TOKEN  # one tokenizer for both fuzzers (tests/spec_fuzz.py)


def _absolute_paths(path: Path) -> str:
    """The fixture's text with every relative file path made absolute (imports of fairspec/... stay)."""
    text = path.read_text(encoding="utf-8")

    def fix(m):
        s = m.group(0)[1:-1]
        if "/" in s and not s.startswith("fairspec/") and not s.startswith("/"):
            return '"' + str((path.parent / s).resolve()) + '"'
        if s.endswith((".fair", ".csv", ".onnx", ".skops", ".pkl", ".pt", ".ssv")):
            return '"' + str((path.parent / s).resolve()) + '"'
        return m.group(0)

    return _STRING.sub(fix, text)


SOURCES = [_absolute_paths(p) for p in ok_fixtures()]
TOKENS = [TOKEN.findall(s) for s in SOURCES]
for _src, _toks in zip(SOURCES, TOKENS):
    assert "".join(_toks) == _src


@st.composite
def mutants(draw) -> bytes:
    i = draw(st.integers(0, len(SOURCES) - 1))
    toks = list(TOKENS[i])
    solid = [k for k, t in enumerate(toks) if not t.isspace()]
    kind = draw(st.sampled_from(["delete", "duplicate", "swap", "bytes", "truncate", "replace", "borrow"]))
    n_edits = draw(st.integers(1, 3))
    data = "".join(toks).encode("utf-8")
    for _ in range(n_edits):
        if kind == "delete":
            k = draw(st.sampled_from(solid))
            toks[k] = ""
        elif kind == "duplicate":
            k = draw(st.sampled_from(solid))
            toks[k] = toks[k] + " " + toks[k]
        elif kind == "swap":
            j = draw(st.integers(0, len(solid) - 2))
            a, b = solid[j], solid[j + 1]
            toks[a], toks[b] = toks[b], toks[a]
        elif kind == "replace":
            k = draw(st.sampled_from(solid))
            toks[k] = draw(st.sampled_from(["{", "}", "(", ")", "x", "'", '"', "..", "-", "==", "except", "forall",
                                            "0", "1e999", "99999999999999999999", "nan", "true", "none",
                                            "property", "import", "|", ":", ",", "\\", "\u00e9", "\u200b"]))
        elif kind == "borrow":  # another token of the same file: well-formed more often, so sema is reached
            k, j = draw(st.sampled_from(solid)), draw(st.sampled_from(solid))
            toks[k] = toks[j]
        data = "".join(toks).encode("utf-8")
    if kind == "bytes":
        data = "".join(toks).encode("utf-8")
        pos = draw(st.integers(0, len(data)))
        junk = draw(st.binary(min_size=1, max_size=8))
        data = data[:pos] + junk + data[pos:]
    elif kind == "truncate":
        data = data[: draw(st.integers(0, len(data)))]
    return data


def _check_lint(path: Path):
    res = lint(path)  # must not raise
    assert isinstance(res.diagnostics, list)
    for d in res.diagnostics:
        assert isinstance(d, Diagnostic) and d.code in CODES
        assert d.message
    for fmt in ("text", "concise"):
        render(res.diagnostics, fmt)
    json.loads(render(res.diagnostics, "json"))
    return res


def _cli(argv) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli_main(argv)
        except SystemExit as e:  # argparse
            code = e.code
    return code, out.getvalue() + err.getvalue()


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


_counter = [0]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow])
@given(data=mutants())
def test_mutated_specs_never_crash(work, data):
    _counter[0] += 1
    path = work / f"m{_counter[0]}.fair"
    path.write_bytes(data)
    _check_lint(path)
    if _counter[0] % 5 == 0:  # the CLI on some of them, in-process
        for fmt in ("concise", "json"):
            code, out = _cli(["lint", str(path), "--format", fmt])
            assert code in (0, 2), out
            assert "Traceback" not in out and "internal error" not in out, out


def test_mutants_reach_the_checker():
    """Sanity: single deletions are not all syntax errors, so sema sees broken specs too."""
    import random

    from fairspec.diagnostics import DiagnosticError
    from fairspec.syntax.parser import parse_text

    rng = random.Random(0)
    outcomes = set()
    for _ in range(60):
        toks = list(TOKENS[rng.randrange(len(TOKENS))])
        solid = [k for k, t in enumerate(toks) if not t.isspace() and not t.startswith("#")]
        toks[rng.choice(solid)] = ""
        try:
            parse_text("".join(toks), "<mutant>")
            outcomes.add("parsed")
        except DiagnosticError as e:
            outcomes |= {d.code for d in e.diagnostics}
    assert "parsed" in outcomes and outcomes & {"FS101", "FS102", "FS103"}


# ------------------------------------------------------------------ odd inputs

def _odd_inputs(tmp_path: Path) -> dict[str, Path]:
    binary = tmp_path / "binary.fair"
    binary.write_bytes(bytes(range(256)) * 4)
    empty = tmp_path / "empty.fair"
    empty.write_bytes(b"")
    utf16 = tmp_path / "utf16.fair"
    utf16.write_bytes((OK / "rules.fair").read_text(encoding="utf-8").encode("utf-16"))
    nul = tmp_path / "nul.fair"
    nul.write_bytes(b"group a = age >= 4\x000\n")
    folder = tmp_path / "folder.fair"
    folder.mkdir()
    return {"binary": binary, "empty": empty, "utf16": utf16, "nul": nul, "folder": folder,
            "missing": tmp_path / "does-not-exist.fair"}


@pytest.mark.parametrize("which", ["binary", "empty", "utf16", "nul", "folder", "missing"])
def test_odd_inputs_in_process(tmp_path, which):
    path = _odd_inputs(tmp_path)[which]
    res = _check_lint(path)
    codes = [d.code for d in res.diagnostics]
    expected = {"binary": ["FS104"], "empty": [], "utf16": ["FS104"], "nul": ["FS102"],
                "folder": ["FS203"], "missing": ["FS203"]}[which]
    assert codes == expected
    for cmd in (["lint", str(path)], ["check", str(path), "--format", "json"]):
        code, out = _cli(cmd)
        # an empty spec lints clean but checks nothing: `check` exits 2 (a CI gate that checks nothing fails)
        assert code == (0 if which == "empty" and cmd[0] == "lint" else 2), out
        assert "Traceback" not in out and "internal error" not in out


def test_odd_inputs_messages(tmp_path):
    paths = _odd_inputs(tmp_path)
    msg = {k: [d.message for d in lint(p).diagnostics] for k, p in paths.items()}
    assert "UTF-16" in msg["utf16"][0]
    assert "folder" in msg["folder"][0]
    assert "not found" in msg["missing"][0]
    assert "binary" in msg["nul"][0]


def test_odd_inputs_subprocess(tmp_path):
    """Through the installed command: exit 2, a diagnostic, no traceback (all kinds run in-process above)."""
    paths = _odd_inputs(tmp_path)
    for args in (["lint", paths["binary"]], ["check", paths["utf16"], "--format", "json"],
                 ["lint", paths["folder"], "--format", "concise"], ["check", paths["missing"]]):
        r = run_cli(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        both = r.stdout + r.stderr
        assert "Traceback" not in both
        assert re.search(r"FS10[24]|FS203", both), both


def test_mutated_spec_subprocess(tmp_path):
    """A few mutants through the installed command (the rest run in-process above)."""
    src = SOURCES[0]
    cases = [src[: len(src) // 2], src.replace("=", "==", 3), src.replace('"', "'", 1)]
    for k, text in enumerate(cases):
        p = tmp_path / f"s{k}.fair"
        p.write_text(text, encoding="utf-8")
        r = run_cli("lint", p, "--format", "concise")
        assert r.returncode == 2, r.stdout + r.stderr
        assert "Traceback" not in r.stdout + r.stderr
        assert re.search(r":\d+:\d+: FS\d{3} error: ", r.stdout), r.stdout
