"""Hostile output paths (issue 21, classes 5, 6, 7 and 11): every file fairspec writes goes through
fairspec.files (check_target before any work, safe_write at the end): confined, atomic, never onto
a folder, a device or a pipe, never blocking on a FIFO, no temporary file left behind; a write
that fails at the end costs only its own property."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import FIXTURES, people_decls, run_cli
from fairspec.files import CHART_SUFFIXES, OutsideRoot, PathError, Roots, check_spec_output, check_target, safe_write
from fairspec.pipeline import check, lint

PEOPLE = FIXTURES / "data" / "people.csv"
ONNX = FIXTURES / "models" / "people6.onnx"


@pytest.fixture
def confined(monkeypatch):
    monkeypatch.delenv("FAIRSPEC_ALLOW_PATH", raising=False)


def _project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "fairspec.toml").write_text("")
    (proj / "people.csv").write_bytes(PEOPLE.read_bytes())
    (proj / "net.onnx").write_bytes(ONNX.read_bytes())
    return proj


def _pba_spec(proj: Path, chart: str) -> Path:
    spec = proj / "spec.fair"
    spec.write_text(people_decls("people.csv", "P") + f'''
model net = onnx("net.onnx", output = "logit")
encode P for net {{ age : standard  sex : onehot  race : code  member, score : raw }}
property shares {{
  pba(net, flip {{sex}}, delta {{age: 0}})
  points = 20
  chart = "{chart}"
}}
property parity {{
  statistical_parity(net, groups sex) <= 0.99
}}
''')
    return spec


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


# ---------------------------------------------------------------- class 5: chart = is confined

@pytest.mark.parametrize("chart,code", [("../x.png", "FS212"), ("{outside}/x.png", "FS212"), ("sub/../x.png", "FS212"),
                                        ("link/x.png", "FS212"), ("chart.txt", "FS307"), ("chart.csv", "FS307"),
                                        ("chart.fair", "FS307"), ("chart.onnx", "FS307"), ("chart.skops", "FS307"),
                                        ("fifo.svg", "FS307"), ("missing/x.png", "FS307"), ("", "FS307"),
                                        ("adir.png", "FS307")])
def test_a_chart_path_is_checked_in_lint(tmp_path, confined, chart, code):
    proj = _project(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (proj / "link").symlink_to(outside)
    (proj / "adir.png").mkdir()
    os.mkfifo(proj / "fifo.svg")
    spec = _pba_spec(proj, chart.format(outside=outside))
    res = lint(spec)
    errs = [(d.code, d.span.line) for d in res.diagnostics if d.is_error]
    assert errs == [(code, 15)], [(d.code, d.message) for d in res.diagnostics]
    r = run_cli("check", spec, "--format", "json", cwd=proj)
    assert r.returncode == 2, r.stderr
    assert "internal error" not in r.stderr
    assert not list(outside.iterdir()) and not (tmp_path / "x.png").exists()
    assert (proj / "fifo.svg").is_fifo()


def test_check_spec_output_refuses_what_lint_refuses(tmp_path, confined):
    proj = _project(tmp_path)
    roots = Roots.for_spec(proj / "spec.fair")
    for bad in ("../x.png", "/tmp/x.png", "a/../../x.png"):
        with pytest.raises(OutsideRoot):
            check_spec_output(bad, proj, roots, "chart file", suffixes=CHART_SUFFIXES)
    with pytest.raises(PathError, match="must end in"):
        check_spec_output("x.txt", proj, roots, "chart file", suffixes=CHART_SUFFIXES)
    assert check_spec_output("x.svg", proj, roots, "chart file", suffixes=CHART_SUFFIXES) == (proj / "x.svg").resolve()


def test_a_valid_chart_is_written_atomically_inside_the_project(tmp_path, confined):
    pytest.importorskip("matplotlib")
    proj = _project(tmp_path)
    (proj / "charts").mkdir()
    spec = _pba_spec(proj, "charts/shares.svg")
    assert not [d for d in lint(spec).diagnostics if d.is_error]
    res = check(spec)
    assert res.error is None, res.error
    assert [v.status for v in res.verdicts][1] in ("holds", "violated", "unknown")
    assert (proj / "charts" / "shares.svg").read_text().lstrip().startswith("<?xml")
    assert _files(proj / "charts") == {"shares.svg"}


def test_a_fifo_appearing_after_lint_never_blocks_the_chart(tmp_path, confined):
    """The runtime writer refuses a FIFO too (it never opens the target): a warning, the other verdicts
    kept, and the PBA property is not `holds` (unknown with the reason, or violated with its witness)."""
    pytest.importorskip("matplotlib")
    proj = _project(tmp_path)
    spec = _pba_spec(proj, "late.svg")
    from fairspec import pipeline

    real_check = pipeline.lint

    def lint_then_fifo(*a, **k):
        out = real_check(*a, **k)
        if not (proj / "late.svg").exists():
            os.mkfifo(proj / "late.svg")
        return out

    pipeline.lint = lint_then_fifo
    try:
        res = check(spec)
    finally:
        pipeline.lint = real_check
    assert len(res.verdicts) == 2 and res.error is None
    assert (proj / "late.svg").is_fifo()
    assert any("late.svg" in w and "not a regular file" in w for w in res.warnings), res.warnings
    shares = res.verdicts[0]
    assert shares.status != "holds"  # the chart asked for is missing: never a clean holds
    if shares.status == "unknown":
        assert "late.svg could not be written" in shares.reason, shares.reason


# ---------------------------------------------------------------- class 6: --html

@pytest.mark.parametrize("target", ["/dev/null", "/dev/full", "fifo", "", "dir", "missing/r.html", "spec"])
def test_html_onto_a_node_that_is_not_a_regular_file_is_refused_before_any_work(tmp_path, target):
    proj = _project(tmp_path)
    spec = _pba_spec(proj, "c.png")
    os.mkfifo(proj / "fifo")
    (proj / "dir").mkdir()
    path = {"fifo": proj / "fifo", "dir": proj / "dir", "spec": spec,
            "missing/r.html": proj / "missing" / "r.html"}.get(target, target)
    if str(path).startswith("/dev/") and not os.path.exists(path):
        pytest.skip(f"{path} does not exist here")
    before = os.stat(path) if os.path.exists(path) else None
    spec_text = spec.read_text()
    r = run_cli("check", spec, "--html", path, cwd=proj)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("fairspec: cannot write the HTML report"), r.stderr
    assert r.stdout == ""  # refused before any work: no report
    if before is not None:
        after = os.stat(path)
        assert (after.st_ino, after.st_mode, after.st_rdev) == (before.st_ino, before.st_mode, before.st_rdev)
    assert spec.read_text() == spec_text
    assert not [f for f in _files(proj) if "fairspec-" in f or f.endswith(".tmp")]


def test_check_target_and_safe_write_refuse_devices_and_leave_nothing(tmp_path):
    roots = Roots(tmp_path)
    os.mkfifo(tmp_path / "p")
    for bad in (tmp_path / "p", tmp_path):
        with pytest.raises(PathError):
            check_target(bad, roots)
        with pytest.raises(PathError):
            safe_write(bad, b"x", roots)
    with pytest.raises(PathError, match="empty"):
        check_target("", roots)
    if os.path.exists("/dev/null"):
        with pytest.raises(PathError, match="not a regular file"):
            safe_write("/dev/null", b"x", Roots(Path("/dev")))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p"]


# ---------------------------------------------------------------- class 7: repair write

def _repair_spec(proj: Path, write: str) -> Path:
    pytest.importorskip("skops")
    (proj / "dt.skops").write_bytes((FIXTURES / "models" / "people_dt.skops").read_bytes())
    spec = proj / "spec.fair"
    spec.write_text(people_decls("people.csv", "P") + f'''
model dt = sklearn("dt.skops")
encode P for dt {{ sex, race : onehot  age, member, score : raw }}
property parity {{
  statistical_parity(dt, groups sex) <= 0.99
}}
repair fix for dt {{
  goal passing_rate_ratio(groups sex) >= 0.8
  write "{write}"
}}
''')
    return spec


@pytest.mark.parametrize("write,code", [("missing/fixed.skops", "FS505"), ("fixed.onnx", "FS505"),
                                        ("fifo.skops", "FS505"), ("../fixed.skops", "FS212")])
def test_a_repair_write_that_cannot_happen_is_a_lint_error(tmp_path, confined, write, code):
    proj = _project(tmp_path)
    os.mkfifo(proj / "fifo.skops")
    spec = _repair_spec(proj, write)
    res = lint(spec)
    assert [d.code for d in res.diagnostics if d.is_error] == [code], [(d.code, d.message) for d in res.diagnostics]


def test_a_write_failing_at_the_end_makes_only_that_property_unknown(tmp_path, confined, monkeypatch):
    proj = _project(tmp_path)
    spec = _repair_spec(proj, "out/fixed.skops")
    (proj / "out").mkdir()
    assert not [d for d in lint(spec).diagnostics if d.is_error]
    import fairspec.files as files

    real = files.safe_write

    def failing(path, *a, **k):
        if str(path).endswith("fixed.skops"):
            raise PathError(f"the folder of the output file {path} does not exist")
        return real(path, *a, **k)

    monkeypatch.setattr(files, "safe_write", failing)
    res = check(spec)
    assert res.error is None
    got = {v.name: v for v in res.verdicts}
    assert set(got) == {"parity", "fix"}
    assert got["parity"].status in ("holds", "violated")
    assert got["fix"].status == "unknown" and "could not be written" in got["fix"].reason
    assert not (proj / "out" / "fixed.skops").exists()


# ---------------------------------------------------------------- class 11: one error per cause

def test_fs212_on_a_model_path_is_the_only_error_for_it(tmp_path, confined):
    proj = _project(tmp_path)
    spec = proj / "spec.fair"
    spec.write_text(people_decls("people.csv", "P") + f'''
model net = onnx("{ONNX}", output = "logit")
encode P for net {{ age : standard  sex : onehot  race : code  member, score : raw }}
property a {{
  statistical_parity(net, groups sex) <= 0.99
}}
property b {{
  forall x, x' : P
  require x.* == x'.* except {{sex}}
  ensure label(net(x)) == label(net(x'))
}}
''')
    res = lint(spec)
    errs = [(d.code, d.span.line) for d in res.diagnostics if d.is_error]
    assert errs == [("FS212", 10)], [(d.code, d.message) for d in res.diagnostics]
    r = run_cli("lint", spec, "--format", "json", cwd=proj)
    assert r.returncode == 2
    assert [d["code"] for d in json.loads(r.stdout)["diagnostics"] if d["severity"] == "error"] == ["FS212"]


# ---------------------------------------------------------------- fmt: the same writer

def test_fmt_never_opens_a_fifo_and_rewrites_through_the_one_writer(tmp_path):
    os.mkfifo(tmp_path / "pipe.fair")
    r = run_cli("fmt", tmp_path / "pipe.fair", timeout=60)  # a blocking open would time out here
    assert r.returncode == 2 and "not a regular file" in r.stderr and "Traceback" not in r.stderr
    f = tmp_path / "s.fair"
    f.write_text("group   older=age>=40\n")
    os.chmod(f, 0o640)
    r = run_cli("fmt", f)
    assert r.returncode == 0, r.stderr
    assert f.read_text() == "group older = age >= 40\n" and (f.stat().st_mode & 0o777) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe.fair", "s.fair"]


def test_a_data_set_that_failed_is_not_reported_again_at_its_uses(tmp_path, confined):
    proj = _project(tmp_path)
    spec = proj / "spec.fair"
    spec.write_text(people_decls("/etc/passwd", "P") + '''
property c {
  base_rate_ratio(people, groups sex) >= 0.8
}
''')
    res = lint(spec)
    assert [(d.code, d.span.line) for d in res.diagnostics if d.is_error] == [("FS212", 1)], \
        [(d.code, d.message) for d in res.diagnostics]


# ---------------------------------------------------------------- no write replaces a file the spec reads

DT = FIXTURES / "models" / "people_dt.skops"


def _reads_project(tmp_path: Path, write: str) -> tuple[Path, Path]:
    """A spec (named spec.skops) that imports lib.skops, reads people.skops (a CSV) and two
    models, and repairs dt into ``write``: every file it reads ends in .skops."""
    pytest.importorskip("skops")
    proj = _project(tmp_path)
    (proj / "dt.skops").write_bytes(DT.read_bytes())
    (proj / "dt2.skops").write_bytes(DT.read_bytes())
    (proj / "people.skops").write_bytes(PEOPLE.read_bytes())
    (proj / "lib.skops").write_text("group senior = age >= 60\n")
    spec = proj / "spec.skops"
    spec.write_text('import "lib.skops"\n' + people_decls("people.skops", "P") + f'''
model dt = sklearn("dt.skops")
model dt2 = sklearn("dt2.skops")
encode P for dt {{ sex, race : onehot  age, member, score : raw }}
encode P for dt2 {{ sex, race : onehot  age, member, score : raw }}
repair fix for dt {{
  goal passing_rate_ratio(groups sex) >= 0.8
  write "{write}"
}}
''')
    return proj, spec


@pytest.mark.parametrize("write,what", [("dt2.skops", "a model file the spec reads"),
                                        ("people.skops", "a data file the spec reads"),
                                        ("lib.skops", "a spec file the spec imports"),
                                        ("./spec.skops", "the spec itself")])
def test_a_repair_write_over_any_file_the_spec_reads_is_a_lint_error_at_the_path(tmp_path, confined, write, what):
    proj, spec = _reads_project(tmp_path, write)
    before = {p.name: p.read_bytes() for p in proj.iterdir()}
    res = lint(spec)
    lines = spec.read_text().splitlines()
    line = next(i for i, t in enumerate(lines, 1) if t.strip().startswith("write "))
    errs = [(d.code, d.span.line, d.span.column) for d in res.diagnostics if d.is_error]
    assert errs == [("FS505", line, lines[line - 1].index('"') + 1)], [d.message for d in res.diagnostics]
    d = next(d for d in res.diagnostics if d.is_error)
    assert what in d.message and d.hint and "new .skops file" in d.hint
    r = run_cli("check", spec, "--format", "json", cwd=proj)
    assert r.returncode == 2 and "internal error" not in r.stderr
    assert {p.name: p.read_bytes() for p in proj.iterdir()} == before  # nothing replaced, nothing added


def test_the_spec_lists_every_file_it_reads_and_the_writers_refuse_them(tmp_path, confined):
    """Past lint (a file changed on disk, the Python API): the repair writer and the chart writer
    themselves refuse every file of ir.Spec.inputs."""
    from sklearn.tree import DecisionTreeClassifier

    from fairspec.backends.repair.runner import write_model
    from fairspec.models import ModelLoadError

    proj, spec = _reads_project(tmp_path, "fixed.skops")
    res = lint(spec)
    assert not [d for d in res.diagnostics if d.is_error], [d.message for d in res.diagnostics]
    names = {Path(p).name for p in res.spec.inputs}
    assert {"spec.skops", "lib.skops", "people.skops", "dt.skops", "dt2.skops"} <= names
    assert {Path(p).name for p in res.inputs} >= names
    est = DecisionTreeClassifier().fit([[0.0], [1.0]], [0, 1])
    roots = Roots.for_spec(spec)
    for name in ("lib.skops", "people.skops", "dt2.skops", "spec.skops"):
        before = (proj / name).read_bytes()
        with pytest.raises(ModelLoadError, match="a file the spec reads"):
            write_model(est, str(proj / name), str(proj / "dt.skops"), roots, protect=res.spec.inputs)
        assert (proj / name).read_bytes() == before
    with pytest.raises(PathError, match="a file the spec reads"):
        check_spec_output("lib.skops", proj, roots, "chart file", protect=res.spec.inputs)


def test_a_chart_over_an_imported_file_is_a_lint_error(tmp_path, confined):
    proj = _project(tmp_path)
    spec = _pba_spec(proj, "lib.svg")
    (proj / "lib.svg").write_text("group senior = age >= 60\n")
    spec.write_text('import "lib.svg"\n' + spec.read_text())
    res = lint(spec)
    errs = [(d.code, d.span.line) for d in res.diagnostics if d.is_error]
    assert errs == [("FS307", 16)], [(d.code, d.message) for d in res.diagnostics]
    assert "a file the spec reads" in res.diagnostics[0].message


def test_a_read_only_file_is_never_replaced(tmp_path):
    roots = Roots(tmp_path)
    f = tmp_path / "report.html"
    f.write_text("kept")
    os.chmod(f, 0o444)  # root passes os.access: the mode bits say "leave it"
    with pytest.raises(PathError, match="read-only"):
        safe_write(f, b"new", roots)
    assert f.read_text() == "kept" and sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


# ---------------------------------------------------------------- --html: imports, links

def _html_spec(proj: Path, head: str = "") -> Path:
    (proj / "lib.fair").write_text("group senior = age >= 60\n")
    spec = proj / "spec.fair"
    spec.write_text(head + 'import "lib.fair"\n' + people_decls("people.csv", "P") + '''
model net = onnx("net.onnx", output = "logit")
encode P for net { age : standard  sex : onehot  race : code  member, score : raw }
property parity {
  statistical_parity(net, groups sex) <= 0.99
}
''')
    return spec


@pytest.mark.parametrize("target", ["lib.fair", "people.csv", "net.onnx", "broken.fair"])
@pytest.mark.parametrize("models", [False, True])
def test_html_over_an_import_a_model_or_data_is_refused_before_any_model_is_loaded(tmp_path, confined, target,
                                                                                    models):
    """Known only once lint has read the imports: refused then, before loading anything (under
    --format json stdout is the input error's document, with no verdict), with one sentence and exit
    2; also when lint fails (a broken import)."""
    proj = _project(tmp_path)
    (proj / "broken.fair").write_text("group = = oops\n")
    spec = _html_spec(proj, 'import "broken.fair"\n' if target == "broken.fair" else "")
    extra = ("--models", f"net={proj / 'cands'}") if models else ()
    if models:
        (proj / "cands").mkdir()
        (proj / "cands" / "a.onnx").write_bytes(ONNX.read_bytes())
    before = {p: p.read_bytes() for p in proj.rglob("*") if p.is_file()}
    r = run_cli("check", spec, "--format", "json", "--html", target, *extra, cwd=proj)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"fairspec: cannot write the HTML report: the HTML report {target} is a file the spec "
                               "reads"), r.stderr
    doc = json.loads(r.stdout)
    reports = doc["models"] if models else [doc]
    assert all(d["properties"] == [] and "is a file the spec reads" in d["error"] for d in reports), doc
    assert {p: p.read_bytes() for p in proj.rglob("*") if p.is_file()} == before


def test_html_onto_a_symbolic_link_is_refused_and_an_explicit_outside_path_is_written(tmp_path, confined):
    pytest.importorskip("matplotlib")
    proj = _project(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    precious = outside / "precious.txt"
    precious.write_text("precious user data")
    (proj / "report.html").symlink_to(precious)          # planted in the project, pointing out
    (proj / "inner.html").symlink_to(proj / "real.html")  # inside too: refused, as a repair's write
    (proj / "out").symlink_to(outside)                   # a folder in the project that leads out
    spec = _html_spec(proj)
    for target, why in (("report.html", "is a symbolic link"), ("inner.html", "is a symbolic link"),
                        ("out/r.html", "leads out of the project")):
        r = run_cli("check", spec, "--html", target, cwd=proj)
        assert r.returncode == 2 and r.stdout == "", r.stdout + r.stderr
        assert r.stderr.count("\n") == 1 and why in r.stderr, r.stderr
    assert precious.read_text() == "precious user data" and sorted(os.listdir(outside)) == ["precious.txt"]
    assert not (proj / "real.html").exists()
    # a path outside the project typed on the command line is the user's choice: written
    r = run_cli("check", spec, "--html", outside / "explicit.html", cwd=proj)
    assert r.returncode in (0, 1), r.stderr
    assert (outside / "explicit.html").read_text().lstrip().lower().startswith("<!doctype html")


def test_an_in_place_write_that_fails_keeps_the_new_content_and_names_it(tmp_path, monkeypatch):
    """A file with hard links is written in place (not atomic): when that write fails part-way, the
    temporary file holding the whole new content is kept and the sentence names it."""
    import fairspec.files as files

    a = tmp_path / "a.fair"
    a.write_text("old\n")
    os.link(a, tmp_path / "b.fair")

    def fail(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files, "_copy_into", fail)
    with pytest.raises(PathError) as e:
        safe_write(a, b"new text\n", Roots(tmp_path))
    kept = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert len(kept) == 1 and kept[0].read_bytes() == b"new text\n"
    assert str(kept[0]) in str(e.value) and "a.fair" in str(e.value)


def test_a_chart_matplotlib_cannot_draw_is_never_a_clean_holds(tmp_path, confined, monkeypatch):
    """The chart asked for and not written because matplotlib is missing is a write that failed at the
    end, as any other (README: a holds becomes unknown with the reason; a violation stays, with the
    warning): it was a warning alone, under a clean holds."""
    import fairspec.backends.pba as pba

    def no_matplotlib(*a, **k):
        raise ImportError("No module named 'matplotlib'")

    monkeypatch.setattr(pba, "write_chart", no_matplotlib)
    proj = _project(tmp_path)
    spec = _pba_spec(proj, "shares.svg")
    spec.write_text(spec.read_text().replace("delta {age: 0})\n", "delta {age: 0}) >= 0.0\n"))   # holds: a share >= 0
    res = check(spec)
    assert res.error is None and len(res.verdicts) == 2
    assert any("needs matplotlib" in w for w in res.warnings), res.warnings
    shares = res.verdicts[0]
    assert shares.status == "unknown" and "could not be written: matplotlib is not installed" in shares.reason, \
        (shares.status, shares.reason)
    assert not (proj / "shares.svg").exists()


def test_html_onto_a_file_that_is_no_report_is_refused_and_a_report_is_replaced(tmp_path, confined):
    """``--html README.md`` is a slip of the hand: a file holding anything but a report fairspec wrote is
    refused before any work (one sentence, exit 2, the file untouched); an empty file, an earlier report
    and a report of the older head (before the generator mark) are replaced."""
    pytest.importorskip("matplotlib")
    proj = _project(tmp_path)
    spec = _html_spec(proj)
    notes = proj / "README.md"
    notes.write_text("# our model card\n\nhand-written notes\n")
    for fmt in ("text", "json"):
        r = run_cli("check", spec, "--format", fmt, "--html", "README.md", cwd=proj)
        assert r.returncode == 2, r.stdout + r.stderr
        assert r.stderr.count("\n") == 1 and "README.md exists and is not an HTML report fairspec wrote" in r.stderr, \
            r.stderr
        if fmt == "json":
            assert "not an HTML report" in json.loads(r.stdout)["error"]
    assert notes.read_text() == "# our model card\n\nhand-written notes\n"
    old_head = ('<!doctype html>\n<html lang="en"><head><meta charset="utf-8">\n<meta name="viewport" '
                'content="width=device-width, initial-scale=1">\n<link rel="icon" href="data:,">\n<title>x</title>')
    (proj / "old.html").write_text(old_head)
    (proj / "empty.html").write_text("")
    for target in ("empty.html", "old.html", "empty.html"):  # the last: the report just written, again
        r = run_cli("check", spec, "--html", target, cwd=proj)
        assert r.returncode in (0, 1), r.stderr
        assert 'content="fairspec"' in (proj / target).read_text()
