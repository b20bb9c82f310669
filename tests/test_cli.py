"""The command line end to end: `fairspec lint | check` in a subprocess, with exit codes.

Exit codes: 0 every property holds, 1 a property is violated, 2 bad spec,
model, data or usage, 3 otherwise unknown.  Bad input never shows a
traceback, and neither command writes a file next to the spec.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import ERRORS, EXAMPLES, FIXTURES, OK, run_cli, snapshot

PEOPLE_CSV = FIXTURES / "data" / "people.csv"
PEOPLE_ONNX = FIXTURES / "models" / "people6.onnx"
AC1 = EXAMPLES / "fairify" / "ac1.fair"

PROPERTY_KEYS = {"name", "kind", "status", "how", "value", "bound", "reason", "witness", "seconds"}
DIAG_KEYS = {"code", "severity", "message", "file", "line", "column", "end_line", "end_column", "hint"}
CONCISE = re.compile(r"^.+:\d+:\d+: FS\d{3} (error|warning): .+$")

PEOPLE = """\
data people = csv("{csv}", label = hired == "yes")

features People from people {{
  age    : int in [18, 80]
  sex    : {{F, M}}  protected
  race   : {{A, B, C}}  protected
  member : bool
  score  : real in [0, 1]
}}

model net = onnx("{onnx}", output = "logit")

encode People for net {{
  age : standard
  sex : onehot
  race : code
  member, score : raw
}}
"""


def people_spec(folder: Path, body: str, *, csv: str | Path = PEOPLE_CSV, onnx: str | Path = PEOPLE_ONNX,
                name: str = "spec.fair") -> Path:
    p = folder / name
    p.write_text(PEOPLE.format(csv=csv, onnx=onnx) + "\n" + body, encoding="utf-8")
    return p


def no_traceback(r):
    both = r.stdout + r.stderr
    assert "Traceback" not in both, both
    assert "internal error" not in both, both


def one_sentence_error(r, name: str) -> str:
    """The failure is one sentence naming the file (the text report may wrap it at 120 columns)."""
    no_traceback(r)
    lines = [ln.strip() for ln in (r.stdout + r.stderr).splitlines() if ln.strip()]
    assert 1 <= len(lines) <= 3, lines  # the sentence, wrapped at most once; never a dump
    text = " ".join(lines)
    assert name in text, text
    assert text.count("error") == 1, text
    return text


# ------------------------------------------------------------------ lint

def test_lint_ok_exits_0():
    for spec in (OK / "rules.fair", EXAMPLES / "adult" / "adult.fair", AC1):
        r = run_cli("lint", spec)
        assert r.returncode == 0, r.stdout + r.stderr
        no_traceback(r)
        assert "0 errors" in r.stderr


def test_lint_error_exits_2_text():
    r = run_cli("lint", ERRORS / "unknown_category.fair")
    assert r.returncode == 2
    no_traceback(r)
    assert "error[FS206]: 'Woman' is not a category of sex" in r.stdout
    assert "^^^^^" in r.stdout
    assert "= hint:" in r.stdout
    assert "1 error, 0 warnings" in r.stderr


@pytest.mark.parametrize("spec", ["examples/nosuch.fair", "examples/worked"])
def test_lint_concise_locates_a_diagnostic_with_no_span_at_the_spec(spec):
    """FS203 (no such spec, a folder) has no span: its concise line is still file:line:col, at 1:1 of
    the path as given, never '<no location>'."""
    r = run_cli("lint", spec, "--format", "concise")
    assert r.returncode == 2
    (line,) = r.stdout.splitlines()
    assert CONCISE.match(line) and line.startswith(f"{spec}:1:1: FS203 error: "), line


def test_lint_error_concise():
    r = run_cli("lint", ERRORS / "width_mismatch.fair", "--format", "concise")
    assert r.returncode == 2
    lines = r.stdout.strip().splitlines()
    assert lines and all(CONCISE.match(ln) for ln in lines), lines
    assert lines[0].endswith("FS402 error: the encoding of People for net is 5 columns wide, "
                             "but the model takes 6 inputs")
    assert lines[0].startswith(str(ERRORS / "width_mismatch.fair") + ":15:1: ")


def test_lint_error_json():
    r = run_cli("lint", ERRORS / "import_cycle.fair", "--format", "json")
    assert r.returncode == 2
    data = json.loads(r.stdout)
    assert list(data) == ["diagnostics"]
    (d,) = data["diagnostics"]
    assert DIAG_KEYS <= set(d)
    assert d["code"] == "FS204" and d["severity"] == "error"
    assert d["file"].endswith("cycle_b.fair") and (d["line"], d["column"]) == (3, 1)
    assert d["end_line"] == 3 and d["end_column"] > 1
    assert d["hint"]


def test_lint_ok_json_is_empty_list():
    r = run_cli("lint", OK / "syntax_tour.fair", "--format", "json")
    assert r.returncode == 0
    assert json.loads(r.stdout) == {"diagnostics": []}


def test_lint_warnings_only_exit_0():
    r = run_cli("lint", OK / "warnings.fair", "--format", "concise")
    assert r.returncode == 0
    assert [ln.split(": ")[1].split()[0] for ln in r.stdout.strip().splitlines()] == ["FS211", "FS211", "FS213", "FS213"]


# ------------------------------------------------------------------ check

@pytest.fixture(scope="module")
def ac1_json():
    before = snapshot(AC1.parent)
    r = run_cli("check", AC1, "--format", "json", timeout=300)
    after = snapshot(AC1.parent)
    return r, before, after


def test_check_ac1_violated_exit_1(ac1_json):
    r, _, _ = ac1_json
    no_traceback(r)
    assert r.returncode == 1, r.stderr


def test_check_json_shape(ac1_json):
    r, _, _ = ac1_json
    data = json.loads(r.stdout)
    assert {"spec", "properties", "diagnostics"} <= set(data)
    assert data["spec"] == str(AC1)
    assert data["diagnostics"] == []
    names = [p["name"] for p in data["properties"]]
    assert names == ["fairify_sex", "hyfair_sex_race", "clusters", "clusters_k20", "parity_test_split"]
    for p in data["properties"]:
        assert PROPERTY_KEYS <= set(p), set(p)
        assert p["status"] in ("holds", "violated", "unknown")
        assert p["how"] in ("proved", "estimated", None)
        assert isinstance(p["seconds"], (int, float)) and p["seconds"] >= 0
        assert p["kind"] in ("group_metric", "individual_fairness", "k_discrimination", "pba", "repair")
        if p["status"] == "holds":
            assert p["how"] in ("proved", "estimated")
        else:
            assert p["how"] is None
            assert isinstance(p["reason"], str) and p["reason"]
        if p["value"] is not None:
            assert isinstance(p["value"], (int, float))
        if p["bound"] is not None:
            lo, hi = p["bound"]
            assert lo <= hi
        w = p["witness"]
        if w is None:
            continue
        assert isinstance(w, dict) and {"x", "x_prime"} <= set(w)
        assert len(w["x"]) == len(w["x_prime"]) == 13  # AC-1's input width, model-input space
        assert all(isinstance(v, (int, float)) for v in w["x"] + w["x_prime"])
    by = {p["name"]: p for p in data["properties"]}
    assert by["fairify_sex"]["status"] == "violated"
    w = by["fairify_sex"]["witness"]
    diff = [i for i, (a, b) in enumerate(zip(w["x"], w["x_prime"])) if a != b]
    assert diff == [8]  # only sex (input 8) differs
    assert by["parity_test_split"]["kind"] == "group_metric"
    assert by["parity_test_split"]["status"] == "violated"
    # loading is reported apart from the properties' own times
    loads = {(x["what"], x["name"]): x for x in data["loads"]}
    assert ("model", "ac1") in loads and all(x["seconds"] >= 0 and x["file"] for x in loads.values())
    assert data["seconds"] >= sum(p["seconds"] for p in data["properties"]) + sum(x["seconds"] for x in data["loads"]) - 0.01


def test_check_writes_nothing(ac1_json):
    _, before, after = ac1_json
    assert before == after


def test_check_all_hold_exit_0(tmp_path):
    spec = people_spec(tmp_path, """\
property parity { statistical_parity(net, groups sex) <= 0.99 }
property parity_race { statistical_parity(net, groups sex x race) <= 0.99 }
property impact { disparate_impact(net, groups race) >= 0.01 }
""")
    before = snapshot(tmp_path)
    r = run_cli("check", spec, "--format", "json")
    no_traceback(r)
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads(r.stdout)
    assert [p["status"] for p in data["properties"]] == ["holds"] * 3
    assert all(p["how"] == "estimated" and p["witness"] is None for p in data["properties"])
    r = run_cli("check", spec)  # the text report
    assert r.returncode == 0
    assert "holds (estimated)" in r.stdout
    assert snapshot(tmp_path) == before


def test_check_unknown_exit_3(tmp_path):
    spec = people_spec(tmp_path, """\
property parity { statistical_parity(net, groups sex) <= 0.99 }
property tiny_groups {
  statistical_parity(net, groups sex x race) <= 0.99
  min_group_size = 100000
}
""")
    r = run_cli("check", spec, "--format", "json")
    no_traceback(r)
    assert r.returncode == 3, r.stdout + r.stderr
    by = {p["name"]: p for p in json.loads(r.stdout)["properties"]}
    assert by["parity"]["status"] == "holds"
    assert by["tiny_groups"]["status"] == "unknown"
    assert "min_group_size" in by["tiny_groups"]["reason"]


def test_check_violated_beats_unknown(tmp_path):
    spec = people_spec(tmp_path, """\
property strict { statistical_parity(net, groups member) <= 0.0001 }
property tiny { statistical_parity(net, groups sex) <= 0.99
  min_group_size = 100000 }
""")
    r = run_cli("check", spec, "--format", "json")
    assert r.returncode == 1
    assert [p["status"] for p in json.loads(r.stdout)["properties"]] == ["violated", "unknown"]


def test_check_property_option(tmp_path):
    spec = people_spec(tmp_path, """\
property strict { statistical_parity(net, groups member) <= 0.0001 }
property loose { statistical_parity(net, groups sex) <= 0.99 }
""")
    r = run_cli("check", spec, "--format", "json", "--property", "loose")
    assert r.returncode == 0, r.stdout + r.stderr
    assert [p["name"] for p in json.loads(r.stdout)["properties"]] == ["loose"]
    r = run_cli("check", spec, "--format", "json", "--property", "strict")
    assert r.returncode == 1
    r = run_cli("check", spec, "--property", "nope")
    assert r.returncode == 2
    line = one_sentence_error(r, "nope")
    assert "strict" in line and "loose" in line  # names the properties there are


def test_check_policy_property_names(tmp_path):
    spec = people_spec(tmp_path, """\
import "fairspec/policies/four_fifths.fair"
apply four_fifths(net, groups = sex, threshold = 0.01) as ff
""")
    r = run_cli("check", spec, "--format", "json", "--property", "ff.disparate_impact")
    assert r.returncode == 0, r.stdout + r.stderr
    assert [p["name"] for p in json.loads(r.stdout)["properties"]] == ["ff.disparate_impact"]


def test_check_bad_spec_exit_2_with_diagnostics():
    r = run_cli("check", ERRORS / "unknown_model.fair", "--format", "json")
    assert r.returncode == 2
    data = json.loads(r.stdout)
    assert data["properties"] == []
    assert [d["code"] for d in data["diagnostics"]] == ["FS201"]
    r = run_cli("check", ERRORS / "unknown_model.fair")
    assert r.returncode == 2
    assert "error[FS201]" in r.stdout
    no_traceback(r)


# ------------------------------------------------------------------ bad model and data files

def test_garbage_onnx_exit_2(tmp_path):
    bad = tmp_path / "garbage.onnx"
    bad.write_bytes(bytes(range(256)) * 8)
    spec = people_spec(tmp_path, "property p { statistical_parity(net, groups sex) <= 0.99 }\n", onnx="garbage.onnx")
    before = snapshot(tmp_path)
    for cmd in ("lint", "check"):
        r = run_cli(cmd, spec, "--format", "json")
        assert r.returncode == 2
        no_traceback(r)
        (d,) = json.loads(r.stdout)["diagnostics"]
        assert d["code"] == "FS401" and "garbage.onnx" in d["message"]
    r = run_cli("check", spec)
    assert r.returncode == 2
    no_traceback(r)
    assert "garbage.onnx" in r.stdout
    assert snapshot(tmp_path) == before


def _broken_onnx(tmp_path) -> Path:
    """An ONNX file whose header, operators and types read fine (lint passes: an operator ONNX does
    not define, a Gemm over integers, ... are lint's FS401 now, tests/test_lint_sees_check.py) but which
    onnxruntime refuses: it has no CPU kernel for Relu on int64 values (ONNX's Relu takes them), which
    lint's table of kernels (peek_onnx.NO_CPU_KERNEL: Gemm and MatMul only) does not know."""
    onnx = pytest.importorskip("onnx")
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("Cast", ["x"], ["xi"], to=TensorProto.INT64), helper.make_node("Relu", ["xi"], ["ri"]),
             helper.make_node("Cast", ["ri"], ["r"], to=TensorProto.FLOAT), helper.make_node("Gemm", ["r", "W", "B"], ["logit"])]
    weights = [numpy_helper.from_array(np.ones((6, 1), np.float32), "W"), numpy_helper.from_array(np.zeros(1, np.float32), "B")]
    g = helper.make_graph(nodes, "bad", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 6])],
                          [helper.make_tensor_value_info("logit", TensorProto.FLOAT, ["N", 1])], initializer=weights)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(m, str(tmp_path / "broken.onnx"))
    return people_spec(tmp_path, "property p { statistical_parity(net, groups sex) <= 0.99 }\n", onnx="broken.onnx")


@pytest.fixture(scope="module")
def broken_onnx_json(tmp_path_factory):
    """(folder, spec, `check --format json` on the broken ONNX): run once for the two tests that read it."""
    folder = tmp_path_factory.mktemp("broken_onnx")
    spec = _broken_onnx(folder)
    return folder, spec, run_cli("check", spec, "--format", "json")


def test_onnx_that_fails_at_load_exit_2(broken_onnx_json):
    _, spec, json_run = broken_onnx_json
    assert run_cli("lint", spec).returncode == 0
    r = run_cli("check", spec)
    assert r.returncode == 2
    no_traceback(r)
    assert r.stdout.startswith("error: ") and "broken.onnx" in r.stdout
    r = json_run
    assert r.returncode == 2
    data = json.loads(r.stdout)
    assert "broken.onnx" in data["error"]


def test_onnx_that_fails_at_load_is_one_clear_sentence(broken_onnx_json):
    tmp_path, _, r = broken_onnx_json
    msg = json.loads(r.stdout)["error"]
    assert "broken.onnx" in msg
    short = msg.replace(str(tmp_path), "")  # the length of pytest's temporary folder is not the message's
    assert "onnxruntime_src" not in msg and "::" not in msg and len(short) < 300, msg


def test_untrusted_and_garbage_pickle(tmp_path):
    (tmp_path / "m.pkl").write_bytes(b"\x80\x04not really a pickle" * 10)
    body = "property p { statistical_parity(net, groups sex) <= 0.99 }\n"
    spec = tmp_path / "spec.fair"
    text = PEOPLE.format(csv=PEOPLE_CSV, onnx=PEOPLE_ONNX) + "\n" + body
    spec.write_text(text.replace(f'onnx("{PEOPLE_ONNX}", output = "logit")', 'sklearn("m.pkl")'))
    r = run_cli("check", spec, "--format", "json")
    assert r.returncode == 2
    assert [d["code"] for d in json.loads(r.stdout)["diagnostics"]] == ["FS408"]
    spec.write_text(text.replace(f'onnx("{PEOPLE_ONNX}", output = "logit")', 'sklearn("m.pkl", trust pickle)'))
    r = run_cli("check", spec)
    assert r.returncode == 2
    one_sentence_error(r, "m.pkl")


def test_bad_csv_field_count_exit_2(tmp_path):
    rows = PEOPLE_CSV.read_text().splitlines()
    rows[150] += ",surplus"
    (tmp_path / "people.csv").write_text("\n".join(rows) + "\n")
    spec = people_spec(tmp_path, "property p { statistical_parity(net, groups sex) <= 0.99 }\n", csv="people.csv")
    before = snapshot(tmp_path)
    for cmd in ("lint", "check"):  # lint counts every row's fields as check does (it sampled 200 rows)
        r = run_cli(cmd, spec)
        assert r.returncode == 2
        no_traceback(r)
        assert "error[FS404]: data file " in r.stdout and "people.csv line 151 has 8 fields, expected 7" in r.stdout
    r = run_cli("check", spec, "--format", "json")
    assert r.returncode == 2
    (d,) = json.loads(r.stdout)["diagnostics"]
    assert d["code"] == "FS404" and "people.csv" in d["message"] and "line 151" in d["message"]
    assert snapshot(tmp_path) == before


def test_csv_not_utf8_exit_2(tmp_path):
    (tmp_path / "people.csv").write_bytes(PEOPLE_CSV.read_bytes().replace(b"\nage", b"\nage").replace(b",F,", b",\xe9,", 1))
    spec = people_spec(tmp_path, "property p { statistical_parity(net, groups sex) <= 0.99 }\n", csv="people.csv")
    for cmd in ("lint", "check"):
        r = run_cli(cmd, spec)
        assert r.returncode == 2
        no_traceback(r)
        assert "people.csv" in r.stdout + r.stderr


def test_missing_files_exit_2(tmp_path):
    spec = people_spec(tmp_path, "", csv="nowhere.csv", onnx="nowhere.onnx")
    r = run_cli("check", spec, "--format", "json")
    assert r.returncode == 2
    codes = sorted(d["code"] for d in json.loads(r.stdout)["diagnostics"])
    assert codes == ["FS401", "FS404"]


# ------------------------------------------------------------------ usage

@pytest.mark.parametrize("argv", [
    [],
    ["frobnicate", "x.fair"],
    ["lint"],
    ["check"],
    ["lint", str(OK / "rules.fair"), "--format", "yaml"],
    ["check", str(OK / "rules.fair"), "--format", "concise"],
    ["check", str(OK / "rules.fair"), "--no-such-flag"],
])
def test_usage_errors_exit_2(argv):
    r = run_cli(*argv)
    assert r.returncode == 2, (argv, r.stdout, r.stderr)
    no_traceback(r)
    assert "usage:" in r.stderr


def test_version_and_help():
    r = run_cli("--version")
    assert r.returncode == 0 and r.stdout.startswith("fairspec ")
    r = run_cli("check", "--help")
    assert r.returncode == 0 and "--property" in r.stdout


def test_lint_and_check_write_nothing_next_to_the_spec(tmp_path):
    """Copy a fixture tree, run both commands on every ok spec, and compare the tree before and after."""
    tree = tmp_path / "fixtures"
    shutil.copytree(FIXTURES / "ok", tree / "ok")
    shutil.copytree(FIXTURES / "data", tree / "data")
    shutil.copytree(FIXTURES / "models", tree / "models")
    (tree / "fairspec.toml").write_text("")  # the project: ok/ reads ../data and ../models
    before = snapshot(tree)
    for cmd in (["lint", "encodings.fair"], ["check", "policies_local.fair", "--format", "json"]):
        r = run_cli(*cmd, cwd=tree / "ok")  # relative spec paths, run from the spec's folder
        assert r.returncode in (0, 1, 3), (cmd, r.stdout[-2000:], r.stderr[-2000:])
        no_traceback(r)
    assert snapshot(tree) == before
