"""Hostile and broken input (issue 10): file access is confined, writes are safe, trusted pickles
are announced.  Every test goes through the public lint/check path (or the CLI) where it can.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES, REPO, people_decls, run_cli
from fairspec.files import OutsideRoot, PathError, Roots, project_root, safe_write
from fairspec.pipeline import check, lint

PEOPLE = FIXTURES / "data" / "people.csv"
ONNX = FIXTURES / "models" / "people6.onnx"
SECRET = "TOP-SECRET-LINE do not print me"


@pytest.fixture
def confined(monkeypatch):
    """The default confinement: no FAIRSPEC_ALLOW_PATH (the suite's conftest sets one)."""
    monkeypatch.delenv("FAIRSPEC_ALLOW_PATH", raising=False)


def _cli(*args, cwd=None):
    env_before = os.environ.pop("FAIRSPEC_ALLOW_PATH", None)
    try:
        return run_cli(*args, cwd=cwd)
    finally:
        if env_before is not None:
            os.environ["FAIRSPEC_ALLOW_PATH"] = env_before


def _codes(res):
    return [d.code for d in res.diagnostics if d.is_error]


def _project(tmp_path: Path) -> tuple[Path, Path]:
    """A project folder (with fairspec.toml) and a secret file outside it."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "fairspec.toml").write_text("")
    secret = tmp_path / "secret.fair"
    secret.write_text(SECRET + "\n")
    return proj, secret


# ---------------------------------------------------------------- 1. confinement of reads

@pytest.mark.parametrize("imp", ["fairspec/../../../../../../../../../../{secret}", "{secret}", "../secret.fair",
                                 "sub/../../secret.fair"])
def test_import_outside_the_project_is_fs212_and_never_read(tmp_path, confined, imp):
    proj, secret = _project(tmp_path)
    (proj / "spec.fair").write_text(f'import "{imp.format(secret=secret)}"\n')
    res = lint(proj / "spec.fair")
    assert _codes(res) == ["FS212"]
    d = res.diagnostics[0]
    assert d.span.file == str(proj / "spec.fair") and d.span.line == 1
    for fmt in ("text", "json", "concise"):
        r = _cli("lint", proj / "spec.fair", "--format", fmt)
        assert r.returncode == 2
        assert "TOP-SECRET" not in r.stdout + r.stderr
        assert "Traceback" not in r.stderr


def test_data_and_model_outside_are_fs212_at_the_path(tmp_path, confined):
    proj, _ = _project(tmp_path)
    (proj / "spec.fair").write_text(f'data d = csv("{PEOPLE}")\nmodel m = onnx("{ONNX}")\n')
    res = lint(proj / "spec.fair")
    got = sorted((d.code, d.span.line, d.span.column) for d in res.diagnostics if d.is_error)
    assert got == [("FS212", 1, 14), ("FS212", 2, 16)]


def test_allow_path_widens_the_root(tmp_path, confined):
    proj, _ = _project(tmp_path)
    (proj / "spec.fair").write_text(f'data d = csv("{PEOPLE}")\nmodel m = onnx("{ONNX}")\n')
    assert not _codes(lint(proj / "spec.fair", allow=[FIXTURES]))
    r = _cli("lint", proj / "spec.fair", "--allow-path", FIXTURES / "data", "--allow-path", FIXTURES / "models")
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli("lint", proj / "spec.fair", "--allow-path", FIXTURES / "data")
    assert r.returncode == 2 and "FS212" in r.stdout


def test_an_empty_allow_path_is_refused_not_the_working_directory(tmp_path, confined, monkeypatch):
    """`--allow-path "$UNSET"` would allow the working directory: one sentence, exit 2 (the
    environment variable and the Python API ignore empty entries)."""
    proj, secret = _project(tmp_path)
    (proj / "spec.fair").write_text('import "../secret.fair"\n')
    for cmd in ("lint", "check"):
        r = _cli(cmd, proj / "spec.fair", "--allow-path", "", cwd=tmp_path)
        assert r.returncode == 2 and r.stdout == "", r.stdout + r.stderr
        assert r.stderr.splitlines()[-1].endswith("--allow-path: the folder is empty; name a folder (an empty value "
                                                  "would allow the working directory)"), r.stderr
        assert "TOP-SECRET" not in r.stderr
    monkeypatch.chdir(tmp_path)  # the working directory holds secret.fair
    assert Roots.for_spec(proj / "spec.fair", [""]).extra == Roots.for_spec(proj / "spec.fair").extra
    assert _codes(lint(proj / "spec.fair", allow=[""])) == ["FS212"]


def test_project_root_is_the_nearest_marker_else_the_spec_folder(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert project_root(tmp_path / "a" / "b" / "s.fair") == (tmp_path / "a" / "b").resolve()
    (tmp_path / "a" / "fairspec.toml").write_text("")
    assert project_root(tmp_path / "a" / "b" / "s.fair") == (tmp_path / "a").resolve()
    (tmp_path / "a" / "b" / ".git").mkdir()
    assert project_root(tmp_path / "a" / "b" / "s.fair") == (tmp_path / "a" / "b").resolve()
    assert project_root(REPO / "examples" / "adult" / "adult.fair") == REPO.resolve()


def test_sibling_folders_of_a_project_are_inside(tmp_path, confined):
    proj, _ = _project(tmp_path)
    (proj / "specs").mkdir()
    (proj / "data").mkdir()
    (proj / "data" / "p.csv").write_bytes(PEOPLE.read_bytes())
    (proj / "specs" / "s.fair").write_text('data d = csv("../data/p.csv")\n')
    assert not _codes(lint(proj / "specs" / "s.fair"))


def test_symlink_out_of_the_root_is_refused(tmp_path, confined):
    proj, secret = _project(tmp_path)
    (proj / "link.fair").symlink_to(secret)
    (proj / "data.csv").symlink_to(PEOPLE)
    (proj / "spec.fair").write_text('import "link.fair"\ndata d = csv("data.csv")\n')
    res = lint(proj / "spec.fair")
    assert _codes(res) == ["FS212", "FS212"]
    assert all(SECRET not in d.message for d in res.diagnostics)


def test_shipped_policies_stay_importable(tmp_path, confined):
    proj, _ = _project(tmp_path)
    shipped = sorted(str(p.relative_to(REPO / "specs")) for p in (REPO / "specs").rglob("*.fair"))
    assert shipped
    (proj / "spec.fair").write_text(f'import "fairspec/{shipped[0]}"\n')
    assert "FS212" not in _codes(lint(proj / "spec.fair"))


# ---------------------------------------------------------------- 2. writes

def _repair_spec(proj: Path, write: str) -> Path:
    (proj / "people.csv").write_bytes(PEOPLE.read_bytes())
    (proj / "net.onnx").write_bytes(ONNX.read_bytes())
    spec = proj / "spec.fair"
    spec.write_text(f"""
data people = csv("people.csv", label = hired == "yes")
features P from people {{
  age : int in [18, 80]
  sex : {{F, M}} protected
  race : {{A, B, C}} protected
  member : bool
  score : real in [0, 1]
}}
model net = onnx("net.onnx", output = "logit")
encode P for net {{ age : standard  sex : onehot  race : code  member, score : raw }}
repair fix for net {{
  goal passing_rate_ratio(net, groups sex) >= 0.8
  write "{write}"
}}
""")
    return spec


@pytest.mark.parametrize("target,code", [("/etc/passwd", "FS212"), ("../../../../../../../../../tmp/x.onnx", "FS212"),
                                         (".", "FS505"), ("net.onnx", "FS505")])
def test_repair_write_is_confined(tmp_path, confined, target, code):
    proj, _ = _project(tmp_path)
    res = lint(_repair_spec(proj, target))
    assert code in _codes(res), [d.message for d in res.diagnostics]


def test_safe_write_is_atomic_and_confined(tmp_path):
    proj, secret = _project(tmp_path)
    roots = Roots.for_spec(proj / "spec.fair")
    out = proj / "out.bin"
    out.write_bytes(b"old")
    os.chmod(out, 0o640)
    assert safe_write(out, b"new", roots) == out.resolve()
    assert out.read_bytes() == b"new" and (out.stat().st_mode & 0o777) == 0o640
    assert not [p for p in proj.iterdir() if p.name.endswith(".tmp")]
    # a function that writes to the path it is given (skops.io.dump, torch.save, ...)
    safe_write(proj / "f.bin", lambda p: p.write_bytes(b"via function"), roots)
    assert (proj / "f.bin").read_bytes() == b"via function"
    # a failure mid-write leaves the old file and no temporary file
    with pytest.raises(RuntimeError):
        safe_write(out, lambda p: (p.write_bytes(b"half"), (_ for _ in ()).throw(RuntimeError("boom"))), roots)
    assert out.read_bytes() == b"new"
    assert not [p for p in proj.iterdir() if p.name.endswith(".tmp")]
    with pytest.raises(OutsideRoot):
        safe_write(secret, b"x", roots)
    with pytest.raises(PathError, match="folder"):
        safe_write(proj, b"x", roots)
    (proj / "out").symlink_to(secret)
    with pytest.raises(OutsideRoot):
        safe_write(proj / "out", b"x", roots)
    assert secret.read_text().startswith(SECRET)
    with pytest.raises(PathError, match="a file the spec reads"):
        safe_write(out, b"x", roots, protect=[out])
    with pytest.raises(PathError, match="does not exist"):
        safe_write(proj / "nowhere" / "x.bin", b"x", roots)
    if os.path.exists("/dev/null"):
        with pytest.raises(PathError):
            safe_write("/dev/null", b"x", Roots(Path("/dev")))


# ---------------------------------------------------------------- 3. trust pickle is announced

def test_trusted_pickle_is_announced_once_on_stderr(tmp_path):
    spec = tmp_path / "p.fair"
    spec.write_text(f"""
data people = csv("{PEOPLE}", label = hired == "yes")
features P from people {{
  age : int in [18, 80]
  sex : {{F, M}} protected
  race : {{A, B, C}} protected
  member : bool
  score : real in [0, 1]
}}
model lr = sklearn("{FIXTURES / 'models' / 'people6.pkl'}", trust pickle, score = prob)
encode P for lr {{ age : standard  sex : onehot  race : code  member, score : raw }}
property a {{ statistical_parity(lr, groups sex) <= 0.9 }}
property b {{ statistical_parity(lr, groups race) <= 0.9 }}
""")
    r = run_cli("check", spec, "--format", "json")
    assert r.returncode in (0, 1), r.stdout + r.stderr
    json.loads(r.stdout)
    lines = [ln for ln in r.stderr.splitlines() if "pickle" in ln]
    assert len(lines) == 1 and "people6.pkl" in lines[0] and "runs the code" in lines[0], r.stderr


def test_a_stray_own_objects_marker_does_not_silence_a_users_trusted_pickle(tmp_path):
    """Only a pickle the Python API wrote (its name and SHA-256 in the marker) loads without the stderr line: a
    user's folder holding a file named .fairspec-own-objects (empty, or naming the file with another hash) still
    hears that loading it runs the code inside."""
    import shutil

    from fairspec.models.base import OWN_OBJECTS, mark_own_object, own_object

    user = tmp_path / "user"
    user.mkdir()
    model = user / "people6.pkl"
    shutil.copy(FIXTURES / "models" / "people6.pkl", model)
    marker = user / OWN_OBJECTS
    marker.touch()
    assert not own_object(model)
    marker.write_text("0" * 64 + " people6.pkl\n")
    assert not own_object(model)
    other = user / "other.pkl"
    other.write_bytes(b"x")
    mark_own_object(other)                     # the marker names another file: not this one
    assert own_object(other) and not own_object(model)
    spec = tmp_path / "p.fair"
    spec.write_text(f"""
data people = csv("{PEOPLE}", label = hired == "yes")
features P from people {{
  age : int in [18, 80]
  sex : {{F, M}} protected
  race : {{A, B, C}} protected
  member : bool
  score : real in [0, 1]
}}
model lr = sklearn("{model}", trust pickle, score = prob)
encode P for lr {{ age : standard  sex : onehot  race : code  member, score : raw }}
property a {{ statistical_parity(lr, groups sex) <= 0.9 }}
""")
    marker.write_text("")
    r = run_cli("check", spec, "--format", "json")
    assert r.returncode in (0, 1), r.stdout + r.stderr
    assert "people6.pkl runs the code inside the pickle" in r.stderr, r.stderr
    mark_own_object(model)                     # the exact file, as the API records its own: silent
    assert own_object(model)
    model.write_bytes(model.read_bytes() + b"\n")   # changed since: its hash no longer matches
    assert not own_object(model)


class _CallsExit:
    def __reduce__(self):
        import sys

        return sys.exit, (7,)


def test_a_trusted_pickle_calling_sys_exit_is_the_model_files_sentence_not_its_exit_code(tmp_path):
    import pickle

    (tmp_path / "m.pkl").write_bytes(pickle.dumps(_CallsExit(), protocol=4))
    decls = people_decls(PEOPLE) + 'model lr = sklearn("m.pkl", trust pickle, score = prob)\n'
    encode = "encode People for lr { age : standard  sex : onehot  race : code  member, score : raw }\n"
    prop = "property a { statistical_parity(lr, groups sex) <= 0.9 }\n"
    (tmp_path / "p.fair").write_text(decls + encode + prop)
    r = run_cli("check", tmp_path / "p.fair")  # loaded by check
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert "m.pkl" in r.stdout and "sys.exit(7)" in r.stdout, r.stdout
    # a compressed joblib file the inert peek cannot read, and no encode block: lint loads it (a pipeline?)
    import joblib

    joblib.dump(_CallsExit(), tmp_path / "m.joblib", compress=3)
    (tmp_path / "q.fair").write_text(decls.replace("m.pkl", "m.joblib") + prop)
    r = run_cli("lint", tmp_path / "q.fair", "--format", "json")
    assert r.returncode == 2, r.stdout + r.stderr
    (d,) = json.loads(r.stdout)["diagnostics"]
    assert d["code"] == "FS401" and "sys.exit(7)" in d["message"] and "m.joblib" in d["message"], d


@pytest.mark.parametrize("name, content, says", [
    ("m.pkl", b"", "is empty"),
    ("m.joblib", PEOPLE.read_bytes(), "not a pickle or joblib file"),        # a CSV saved as .joblib
    ("m.pickle", b"hello, I am text\n", "not a pickle or joblib file"),
    ("m.pkl", b"PK\x03\x04" + b"\0" * 40, "not a pickle or joblib file"),    # a zip archive
    ("m.pkl", b"\x80\x09N.", "protocol 9"),
])
def test_lint_says_a_file_that_is_no_pickle_at_the_model_path(tmp_path, name, content, says):
    """From the first bytes alone (nothing is unpickled): lint's FS401 where check would fail."""
    (tmp_path / name).write_bytes(content)
    spec = tmp_path / "p.fair"
    spec.write_text(people_decls(PEOPLE) + f'model lr = sklearn("{name}", trust pickle, score = prob)\n')
    (d,) = [d for d in lint(spec).diagnostics if d.is_error]
    assert d.code == "FS401" and says in d.message and name in d.message, d.message
    assert (d.span.line, d.span.column) == (9, 20)  # the path argument
    from fairspec.models import ModelLoadError, load_model

    with pytest.raises(ModelLoadError) as e:  # the loader (lint not run first) says the same, never "EOFError: EOFError"
        load_model("sklearn", tmp_path / name, trust_pickle=True)
    assert str(e.value) == d.message


def test_lint_passes_every_pickle_and_joblib_layout_a_model_is_saved_in(tmp_path):
    import joblib
    import pickle

    est = joblib.load(FIXTURES / "models" / "people6.joblib")
    files = {"p0.pkl": pickle.dumps(est, protocol=0), "p2.pkl": pickle.dumps(est, protocol=2),
             "p5.pickle": pickle.dumps(est, protocol=5)}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    for compress in (0, 3, ("gzip", 3), ("bz2", 3), ("xz", 3), ("lzma", 3)):
        name = f"c{len(files)}.joblib"
        joblib.dump(est, tmp_path / name, compress=compress)
        files[name] = b""
    for name in files:
        spec = tmp_path / "p.fair"
        spec.write_text(people_decls(PEOPLE) + f'model lr = sklearn("{name}", trust pickle, score = prob)\n')
        assert _codes(lint(spec)) == [], name


def test_sys_exit_while_a_model_is_evaluated_is_a_model_load_error():
    import sys

    from fairspec.models import ModelLoadError, load_model

    m = load_model("onnx", ONNX, output="logit")
    with pytest.raises(ModelLoadError, match=r"people6\.onnx.*sys\.exit\(3\)"):
        m._guard(lambda X: sys.exit(3), np.zeros((2, 6)))


# ---------------------------------------------------------------- 4-5. numbers and depth

def _check_json(spec: Path, *extra) -> dict:
    r = run_cli("check", spec, "--format", "json", *extra)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr[-2000:]
    assert r.returncode != 4, r.stderr
    return json.loads(r.stdout)


PEOPLE_DECLS = "\n" + people_decls(PEOPLE) + f"""\
model net = onnx("{ONNX}", output = "logit")
encode People for net {{ age : standard  sex : onehot  race : code  member, score : raw }}
"""

HUGE = "9" * 400


@pytest.mark.parametrize("where", [
    f"features F {{ a : int in [0, {HUGE}] }}",
    f"features F {{ a : real in [0, 1] bins [0.5, {HUGE}] }}",
    f"group g = age >= {HUGE}",
    f"property p {{ statistical_parity(net, groups sex) <= {HUGE} }}",
    f"property p {{ statistical_parity(net, groups sex) <= 1e999 }}",
    f"property p {{ statistical_parity(net, groups sex) <= 0.5  timeout = {HUGE}s }}",
    f"property p {{ statistical_parity(net, groups sex) <= 0.5  timeout = {HUGE} }}",
    f"property p {{ statistical_parity(net, groups sex) <= 0.5  bootstrap = {HUGE} }}",
    f"property p {{ statistical_parity(net, groups sex) <= 0.5  seed = {'1' * 5000} }}",
    f"property p {{ statistical_parity(net, groups sex) <= 0.5  seed = {'0' * 5000}1{'1' * 20} }}",  # bench/fuzz.py
    f"encode People for net {{ age : minmax(lo = 0, hi = {HUGE})  sex : onehot  race : code  member, score : raw }}",
])
def test_a_huge_number_is_fs307_at_its_span(tmp_path, where):
    spec = tmp_path / "n.fair"
    spec.write_text(PEOPLE_DECLS.replace("encode People for net", "encode People for net0") + where + "\n")
    res = lint(spec)
    bad = [d for d in res.diagnostics if d.code == "FS307"]
    assert bad, [d.message for d in res.diagnostics]
    line = spec.read_text().splitlines()[bad[0].span.line - 1]
    assert line[bad[0].span.column - 1:].startswith(("9" * 10, "1e999", "1" * 10, "0" * 10))
    assert _check_json(spec)["exit_code"] == 2


N = 1000


@pytest.mark.parametrize("expr", [
    " and ".join(["age >= 20"] * N),
    " or ".join(["(age >= 20 and sex == F)"] * N),
    "not " * N + "member",
    "not " * (N + 1) + "member",
    " + ".join(["score"] * N) + " >= 1",
    " * ".join(["score"] * N) + " <= 1",
    "- " * N + "score <= 1",
], ids=["and", "or", "not-even", "not-odd", "plus", "times", "neg"])
def test_long_associative_chains_are_checked_not_crashed(tmp_path, expr):
    spec = tmp_path / "c.fair"
    spec.write_text(PEOPLE_DECLS + f"""
model r = rule({expr})
group g = {expr}
property rule_parity {{ statistical_parity(r, groups sex) <= 1 }}
property net_parity {{ statistical_parity(net, groups g) <= 1 }}
""")
    res = lint(spec)
    assert not [d for d in res.diagnostics if d.is_error], [d.message for d in res.diagnostics]
    out = _check_json(spec)
    statuses = [p["status"] for p in out["properties"]]
    assert len(statuses) == 2 and "internal_errors" not in out


@pytest.mark.parametrize("expr", ["age - " * N + "1 >= 0", "score / " * N + "1 >= 0",
                                  "(" * 50 + "|" * 120 + "age" + "|" * 120 + ")" * 50 + " >= 0",
                                  "(" * 50 + "|- " * 120 + "age" + "|" * 120 + ")" * 50 + " >= 0"],
                         ids=["minus-chain", "div-chain", "abs", "abs-neg"])
def test_deep_nesting_is_fs105(tmp_path, expr):
    spec = tmp_path / "d.fair"
    spec.write_text(PEOPLE_DECLS + f"group g = {expr}\n")
    r = run_cli("lint", spec, "--format", "concise")
    assert r.returncode == 2 and "FS105" in r.stdout and "Traceback" not in r.stderr, r.stdout + r.stderr


def test_nesting_just_under_the_bound_runs_every_phase(tmp_path):
    """Every recursive walker after the parser (AST builder, sema, IR lowering, the data evaluator,
    the MILP encoder) survives the deepest tree the parser lets through."""
    from fairspec.syntax.parser import MAX_DEPTH

    k = MAX_DEPTH - 12  # the statement and call around the expression take some levels
    neg = "- " * k + "1"
    nots = "not " * (k - (k % 2)) + "(x.member == true)"
    spec = tmp_path / "u.fair"
    spec.write_text(PEOPLE_DECLS + f"""
group g = {"not " * (k - (k % 2))}(age >= 30)
model r = rule(score >= {neg} + 1)
property deep_data {{ statistical_parity(net, groups g) <= 1 }}
property deep_rule {{ statistical_parity(r, groups sex) <= 1 }}
property deep_milp {{
  forall x, x' : People
  require x.* == x'.* except {{sex}}
  require {nots}
  require x.score >= {neg} + 1
  ensure label(net(x)) == label(net(x'))
  using milp
}}
""")
    res = lint(spec)
    assert not [d for d in res.diagnostics if d.is_error], [d.message for d in res.diagnostics]
    out = _check_json(spec)
    assert [p["name"] for p in out["properties"]] == ["deep_data", "deep_rule", "deep_milp"]
    assert "internal_errors" not in out


# ---------------------------------------------------------------- 8. output bounded by the cap, not the input

def test_many_errors_on_one_long_line_are_capped(tmp_path):
    spec = tmp_path / "many.fair"
    spec.write_text("features F { " + " ".join("a : int in [0, 1]" for _ in range(3000)) + " }\n")
    for fmt in ("text", "concise", "json"):
        r = run_cli("lint", spec, "--format", fmt)
        assert r.returncode == 2 and "Traceback" not in r.stderr
        assert len(r.stdout) < 100_000, (fmt, len(r.stdout))
        assert "2899 more diagnostics" in r.stdout
    text = run_cli("lint", spec).stdout
    assert max(len(line) for line in text.splitlines()) < 400


def test_a_long_line_is_cut_around_the_caret_and_long_tokens_in_messages(tmp_path):
    spec = tmp_path / "long.fair"
    spec.write_text("group g = " + "x" * 60_000 + " )\n")
    r = run_cli("lint", spec)
    assert r.returncode == 2 and len(r.stdout) < 2_000, r.stdout[:500]
    caret_line = [ln for ln in r.stdout.splitlines() if ln.strip().startswith("|") and "^" in ln][0]
    code_line = [ln for ln in r.stdout.splitlines() if ln.startswith(" 1 | ")][0]
    assert code_line[caret_line.index("^")] == ")"  # the caret still points at the ')'
    spec.write_text("group g = " + "y" * 60_000 + "\n")
    r = run_cli("lint", spec, "--format", "json")
    assert len(r.stdout) < 3_000


# ---------------------------------------------------------------- 6, 12, 13. user paths and data files

def _data_spec(folder: Path, csv_path: str, label: str = 'label = hired == "yes"') -> Path:
    spec = folder / "d.fair"
    spec.write_text(f"""
data people = csv("{csv_path}", {label})
features People from people {{
  age : int in [18, 80]
  sex : {{F, M}} protected
}}
model r = rule(age >= 40)
property p {{ statistical_parity(r, groups sex) <= 1  min_group_size = 1 }}
""")
    return spec


def _lint_messages(spec: Path) -> list[str]:
    res = lint(spec)
    return [f"{d.code} {d.message}" for d in res.diagnostics if d.is_error]


def test_a_byte_order_mark_is_not_part_of_the_first_column(tmp_path):
    (tmp_path / "bom.csv").write_bytes("\ufeffage,sex,hired\n30,F,yes\n50,M,no\n".encode("utf-8"))
    spec = _data_spec(tmp_path, "bom.csv")
    assert _lint_messages(spec) == []
    out = _check_json(spec)
    assert out["exit_code"] in (0, 1) and out["properties"][0]["status"] != "unknown"


def test_a_header_only_csv_says_no_rows(tmp_path):
    (tmp_path / "h.csv").write_text("age,sex,hired\n")
    msgs = _lint_messages(_data_spec(tmp_path, "h.csv"))
    assert len(msgs) == 1 and msgs[0].startswith("FS404") and "no rows" in msgs[0], msgs


def test_a_duplicated_column_name_is_named_in_a_warning(tmp_path):
    # issue 23: a CSV header that repeats a name is read by position (the later column as age.1),
    # as published files need; the spec reads 'age', so lint says which column that is (FS430)
    (tmp_path / "dup.csv").write_text("age,sex,age,hired\n30,F,31,yes\n")
    res = lint(_data_spec(tmp_path, "dup.csv"))
    assert not [d for d in res.diagnostics if d.is_error]
    (w,) = [d for d in res.diagnostics if d.code == "FS430"]
    assert "'age'" in w.message and "more than once" in w.message and "'age.1'" in w.message


def test_a_renamed_column_and_a_missing_one_print_each_hint_once_whole(tmp_path):
    """Audit s17 (d_dupcol): 'race' headed 'age' is FS430 and FS207; each hint is one line, printed once
    (at 120 columns the FS430 hint broke onto a second line, which read as a hint printed twice)."""
    rows = PEOPLE.read_text().splitlines()
    (tmp_path / "p.csv").write_text("\n".join([rows[0].replace("race", "age"), *rows[1:]]) + "\n")
    spec = tmp_path / "s.fair"
    spec.write_text(people_decls("p.csv"))
    for cmd in ("lint", "check"):
        r = run_cli(cmd, spec, env={"COLUMNS": "80"})
        assert r.returncode == 2, r.stdout + r.stderr
        out = r.stdout + r.stderr
        hints = [line for line in out.splitlines() if line.lstrip().startswith("= hint:")]
        assert len(hints) == 2, out
        assert hints[0].endswith("to choose your own names") and hints[1].endswith('name the column with: column "..."')
        assert out.count("to choose your own names") == 1 and out.count("name the column with") == 1, out
        assert out.count("error[FS207]: data set 'people' has no column 'race'") == 1, out


@pytest.mark.parametrize("what", ["folder", "device", "long", "missing"])
def test_a_data_path_that_is_not_a_file_is_said_as_what_it_is(tmp_path, what):
    (tmp_path / "sub").mkdir()
    path, expect = {"folder": ("sub", "is a folder"), "device": ("/dev/zero", "not a regular file"),
                    "long": ("x" * 300 + ".csv", "too long"), "missing": ("nope.csv", "does not exist")}[what]
    spec = _data_spec(tmp_path, path)
    extra = ("--allow-path", "/dev") if what == "device" else ()
    r = run_cli("lint", spec, "--format", "concise", *extra)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "FS404" in r.stdout and expect in r.stdout, r.stdout
    assert len(r.stdout.splitlines()) == 1, r.stdout


@pytest.mark.parametrize("what", ["folder", "device", "long", "deep-long"])
def test_a_model_path_that_is_not_a_file_is_one_sentence(tmp_path, what):
    (tmp_path / "sub").mkdir()
    path, expect = {"folder": ("sub", "is a folder"), "device": ("/dev/zero", "not a regular file"),
                    "long": ("m" * 300 + ".onnx", "too long"),
                    "deep-long": ("/".join(["d" * 200] * 30) + "/m.onnx", "too long")}[what]
    spec = tmp_path / "m.fair"
    spec.write_text(f'model m = onnx("{path}")\n')
    extra = ("--allow-path", "/dev") if what == "device" else ()
    for cmd in ("lint", "check"):
        r = run_cli(cmd, spec, "--format", "json", *extra)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        (d,) = json.loads(r.stdout)["diagnostics"]
        assert d["code"] == "FS401" and expect in d["message"], d
        assert d["line"] == 1 and d["column"] == 16


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")
@pytest.mark.parametrize("kind", ["data", "model"])
def test_a_fifo_as_a_data_or_model_path_is_refused_never_opened(tmp_path, kind):
    """A FIFO is never a model or data file: opened, its read would wait for a writer for ever (lint and
    check both read the file). It is refused by its kind, before any open, with the one sentence of a
    device: FS404 / FS401 at the path, in lint and check alike (run_cli's time-out fails a hang)."""
    os.mkfifo(tmp_path / "pipe")
    if kind == "data":
        spec, code, col = _data_spec(tmp_path, "pipe"), "FS404", 19
    else:
        spec, code, col = tmp_path / "m.fair", "FS401", 16
        spec.write_text('model m = onnx("pipe")\n')
    for cmd in ("lint", "check"):
        r = run_cli(cmd, spec, "--format", "json")
        assert r.returncode == 2 and "Traceback" not in r.stderr, (cmd, r.returncode, r.stderr)
        (d,) = [d for d in json.loads(r.stdout)["diagnostics"] if d["severity"] == "error"]
        assert d["code"] == code and "pipe is not a regular file (a device, pipe or socket)" in d["message"], d
        assert d["line"] == (2 if kind == "data" else 1) and d["column"] == col, d


# ---------------------------------------------------------------- findings of bench/fuzz.py

@pytest.mark.parametrize("text,code", [
    ("group g = 20 - 1000000\n", "FS308"),          # a group that reads no feature (was IndexError)
    ('data d = csv("x.csv", sep = "ab")\n', "FS307"),  # a separator of two characters (was TypeError)
    ('data d = csv("x.csv", sep = "")\n', "FS307"),
])
def test_fuzz_findings_are_diagnostics(tmp_path, text, code):
    (tmp_path / "x.csv").write_text("a,b\n1,2\n")
    spec = tmp_path / "f.fair"
    spec.write_text(text)
    assert code in _codes(lint(spec))


# ---------------------------------------------------------------- 9. memory sized before it is used

def _bool_spec(tmp_path: Path, k: int, prop_tail: str = "") -> Path:
    import random

    rnd = random.Random(0)
    cols = [f"b{i}" for i in range(k)]
    lines = [",".join(cols + ["s", "w", "y"])]
    for _ in range(60):
        lines.append(",".join([rnd.choice(["true", "false"]) for _ in cols] + [rnd.choice("FM"), "1", rnd.choice("01")]))
    (tmp_path / "b.csv").write_text("\n".join(lines) + "\n")
    feats = "\n".join(f"  {c} : bool" for c in cols)
    spec = tmp_path / "b.fair"
    spec.write_text(f"""data d = csv("b.csv", label = y == 1)
features P from d {{
  s : {{F, M}} protected
{feats}
}}
model m = rule(b0 and b1)
property c {{ statistical_parity(m, groups {' x '.join(cols)}) <= 1  min_group_size = 1 {prop_tail} }}
""")
    return spec


def test_45_crossed_groups_over_a_distribution_are_refused_before_any_cell_exists(tmp_path):
    """A distribution's backends enumerate every crossed cell: 2^45 of them is FS308 in lint."""
    spec = _bool_spec(tmp_path, 45)
    spec.write_text(spec.read_text().replace("min_group_size = 1", "")
                    .replace(") <= 1", ", distribution conditional(d)) <= 1"))
    res = lint(spec)
    (d,) = [d for d in res.diagnostics if d.is_error]
    assert d.code == "FS308" and "35,184,372,088,832 groups" in d.message
    assert _check_json(spec)["exit_code"] == 2


def test_45_crossed_groups_on_data_count_only_the_occupied_cells(tmp_path, monkeypatch):
    """On data only the cells some row falls in exist (issue 10 item 9): 2^45 crossed booleans over
    60 rows are decided with at most 60 cells, however the rows are cut into batches."""
    from fairspec.backends.data import metrics
    from fairspec.runtime import columnar

    spec = _bool_spec(tmp_path, 45)
    assert not [d for d in lint(spec).diagnostics if d.is_error]
    rows = (tmp_path / "b.csv").read_text().splitlines()[1:]
    occupied = len({tuple(r.split(",")[:45]) for r in rows})
    seen = []
    real = metrics.count

    def spy(prop, ctx, R=0, *budget):
        c = real(prop, ctx, R, *budget)
        seen.append(c)
        return c

    monkeypatch.setattr(metrics, "count", spy)
    for stream in (False, True):
        if stream:
            monkeypatch.setattr(columnar, "STREAM_ROWS", 0)
            monkeypatch.setattr(columnar, "BATCH_ROWS", 7)
        r = check(spec)
        (v,) = r.verdicts
        assert v.status in ("holds", "violated", "unknown") and "internal" not in (v.reason or ""), v
        c = seen[-1]
        assert c.cells.shape == (occupied, 2, 2) and c.sizes.sum() == len(rows)
        assert len(c.names) == occupied and v.details["empty_groups_count"] == 2**45 - occupied
    a, b = seen[-2], seen[-1]
    assert a.names == b.names and np.array_equal(a.cells, b.cells)


def test_a_bootstrap_that_would_not_fit_is_refused_naming_the_option(tmp_path):
    spec = _bool_spec(tmp_path, 16, "bootstrap = 4000  weight = w")
    out = _check_json(spec)
    (p,) = out["properties"]
    assert p["status"] == "unknown" and "bootstrap = 4000" in p["reason"] and "GiB" in p["reason"], p
    spec = _bool_spec(tmp_path, 3, "bootstrap = 200  weight = w")  # small: runs
    (p,) = _check_json(spec)["properties"]
    assert p["status"] in ("holds", "violated", "unknown") and "GiB" not in (p["reason"] or "")


# ---------------------------------------------------------------- 11. the budget covers the whole property

def test_the_time_budget_counts_the_preparation(tmp_path, monkeypatch):
    """Runners ask the context what is left of the budget; the pipeline starts the clock before the
    runner's preparation (lowering, bounds, falsification on data), so the solver gets the rest."""
    import time as _time

    from fairspec import pipeline
    from fairspec.runtime.context import Context

    seen = {}
    real = Context.remaining

    def spy(self, limit):
        left = real(self, limit)
        seen.setdefault("left", left)
        return left

    monkeypatch.setattr(Context, "remaining", spy)
    original = Context.begin_property

    def slow_start(self):  # a preparation of 0.5 s after the clock starts
        original(self)
        _time.sleep(0.5)

    monkeypatch.setattr(Context, "begin_property", slow_start)
    spec = tmp_path / "t.fair"
    spec.write_text(PEOPLE_DECLS + """
features G {
  age : int in [18, 80]
  sex : {F, M} protected
  race : {A, B, C} protected
  member : bool
  score : real in [0, 1]
}
model g = onnx("%s", output = "logit")
encode G for g { age : minmax(lo = 18, hi = 80)  sex : onehot  race : code  member, score : raw }
property p {
  forall x, x' : G
  require x.* == x'.* except {sex}
  ensure label(g(x)) == label(g(x'))
  using milp
  timeout = 2s
}
""" % ONNX)
    rep = pipeline.check(spec)
    assert not rep.internal_errors and rep.verdicts
    assert seen["left"] is not None and seen["left"] <= 1.5, seen
