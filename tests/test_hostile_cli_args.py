"""Hostile command lines (session 27's hostile-input walk): every argument combination is a usage
error (exit 2, one sentence, the machine format's document on stdout) or a run, never an internal
error, and an option of one value is never silently dropped.

* ``--workers 99999999999999999999`` passed the ">= 1" check and overflowed the process pool's
  semaphore in multiprocessing: exit 4, "internal error: OverflowError". --workers is now a whole
  number in [1, 1024].
* ``--property p1 --property p2`` ran p2 alone (argparse keeps the last value), exit 0 on p2's verdict
  with p1 never run or named; ``--format json --format text`` printed text. A one-value option given
  twice with two values is a usage error; the same value twice is taken.
"""

from __future__ import annotations

import json

import pytest

from conftest import people_decls

SPEC = people_decls("people.csv", features="P") + '''model r = rule(score >= 0.5)
property p1 { statistical_parity(r, groups sex, data = people) <= 0.2 }
property p2 { statistical_parity(r, groups race, data = people) <= 0.2 }
'''


@pytest.fixture
def spec(tmp_path):
    from conftest import FIXTURES

    (tmp_path / "fairspec.toml").write_text("")
    (tmp_path / "people.csv").write_bytes((FIXTURES / "data" / "people.csv").read_bytes())
    s = tmp_path / "s.fair"
    s.write_text(SPEC)
    return s


def _main(capsys, *argv):
    from fairspec import cli

    try:
        code = cli.main(list(argv))
    except SystemExit as e:           # argparse's usage error leaves main() as SystemExit(2)
        code = e.code
    got = capsys.readouterr()
    assert "Traceback" not in got.err and "internal error" not in got.err, got.err
    return code, got


@pytest.mark.parametrize("n", ["99999999999999999999", "1025", "9" * 5000])
def test_a_huge_worker_count_is_a_usage_error_not_an_overflow(spec, capsys, n):
    code, got = _main(capsys, "check", str(spec), "--format", "json", "--workers", n)
    assert code == 2
    doc = json.loads(got.out)
    assert doc["properties"] == [] and "--workers" in doc["error"] and "[1, 1024]" in doc["error"], doc


def test_the_largest_worker_count_is_taken(spec, capsys):
    code, got = _main(capsys, "check", str(spec), "--format", "json", "--workers", "1024", "--property", "p1")
    assert code == 0, got.out
    assert [p["name"] for p in json.loads(got.out)["properties"]] == ["p1"]


@pytest.mark.parametrize("cmd, twice", [
    ("check", ["--property", "p1", "--property", "p2"]),
    ("check", ["--property=p1", "--prop", "p2"]),
    ("check", ["--html", "a.html", "--html", "b.html"]),
    ("check", ["--workers", "1", "--workers", "2"]),
    ("check", ["--models", "r=.", "--models", "r=./x"]),
    ("check", ["--cluster", "tcp://a:1", "--cluster", "tcp://b:1"]),
])
def test_a_one_value_option_given_twice_with_two_values_is_a_usage_error(spec, capsys, cmd, twice):
    # the reports' paths inside the test's folder: relative ones would land in the working directory (the
    # checkout), where a run before the fix wrote b.html
    twice = [str(spec.parent / a) if a.endswith(".html") else a for a in twice]
    code, got = _main(capsys, cmd, str(spec), "--format", "json", *twice)
    assert code == 2
    doc = json.loads(got.out)
    doc = doc["models"][0] if "models" in doc else doc     # --models' wrapper
    assert "given twice" in doc["error"] and doc["properties"] == [], doc
    assert not (spec.parent / "a.html").exists() and not (spec.parent / "b.html").exists()


@pytest.mark.parametrize("cmd", ["check", "lint"])
def test_two_formats_are_a_usage_error_in_the_last_ones_document(spec, capsys, cmd):
    code, got = _main(capsys, cmd, str(spec), "--format", "text", "--format", "json")
    assert code == 2
    doc = json.loads(got.out)
    said = doc["error"] if cmd == "check" else doc["diagnostics"][0]["message"]
    assert "--format" in said and "given twice" in said, doc


def test_the_same_value_twice_says_one_thing_and_is_taken(spec, capsys):
    code, got = _main(capsys, "check", str(spec), "--format", "json", "--format=json", "--property", "p1",
                      "--property", "p1", "--workers", "1")
    assert code == 0, got.out
    assert [p["name"] for p in json.loads(got.out)["properties"]] == ["p1"]
