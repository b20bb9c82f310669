"""`fairspec fmt`: canonical layout, comments kept, idempotent, meaning unchanged."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from conftest import EXAMPLES, OK, REPO, run_cli
from fairspec.diagnostics import DiagnosticError
from fairspec.pipeline import lint
from fairspec.sema.imports import load_modules
from fairspec.diagnostics import Sink
from fairspec.syntax.format import format_text

EXAMPLE_SPECS = sorted(EXAMPLES.rglob("*.fair"))
POLICIES = sorted((REPO / "specs").rglob("*.fair"))


def _closure(spec: Path) -> list[Path]:
    """The spec and every file it imports (the shipped policies among them)."""
    return [Path(m.file) for m in load_modules(spec, Sink())]


@pytest.mark.parametrize("spec", EXAMPLE_SPECS, ids=lambda p: p.relative_to(EXAMPLES).as_posix())
def test_ir_before_equals_ir_after_on_every_example(spec):
    files = _closure(spec)
    formatted = {f: format_text(f.read_text(encoding="utf-8"), str(f)) for f in files}
    before = lint(spec)
    after = lint(spec, sources=formatted)
    assert before.spec is not None and after.spec is not None
    assert after.spec == before.spec
    assert [(d.code, d.message) for d in after.diagnostics] == [(d.code, d.message) for d in before.diagnostics]
    for f, text in formatted.items():
        assert format_text(text, str(f)) == text, f"not idempotent: {f}"


def test_every_policy_is_covered_by_an_example_and_formats_idempotently():
    imported = {f.resolve() for spec in EXAMPLE_SPECS for f in _closure(spec)}
    assert POLICIES
    for p in POLICIES:
        text = format_text(p.read_text(encoding="utf-8"), str(p))
        assert format_text(text, str(p)) == text
        if p.resolve() not in imported:  # a policy no example imports: its declarations still parse the same
            from fairspec.syntax.parser import parse_text

            assert parse_text(text, str(p)) == parse_text(p.read_text(encoding="utf-8"), str(p))


@pytest.mark.parametrize("spec", sorted(OK.glob("*.fair")), ids=lambda p: p.stem)
def test_fixtures_format_idempotently_with_the_same_ast(spec):
    from fairspec.syntax.parser import parse_text

    src = spec.read_text(encoding="utf-8")
    out = format_text(src, str(spec))
    assert format_text(out, str(spec)) == out
    assert parse_text(out, str(spec)) == parse_text(src, str(spec))


MESSY = """\
# leading comment


import   "fairspec/policies/four_fifths.fair"   # shipped
model m=onnx( "m.onnx" ,output="logit" )
features F {   # the applicants
   age:int in [ 17 , 90 ]   # years
  sex : { Female,Male } protected

  # a comment before a feature
  hours_per_week : int in [1,99] column "hours-per-week"
}
encode F for m { age,hours_per_week:minmax(lo=1,hi=99) sex:onehot }
group older = age>=40 and not(sex==Female)
property p { forall x,x':F
  require x.*==x'.*except{sex}
  require |x.age-x'.age|<=-(-2)
  ensure |prob(m(x))-prob(m(x'))|<=0.05   # in probability
  search annealing for 60s


}
property q {
  pba(m, flip sex, around d, delta {age:1})
  report by sex x older
}
distribution w { p(Q)=0.4 p(Q|not P)=0.3 }
policy pol(a: model,t: real=0.8) { property r { disparate_impact(a, groups sex) >= t } }
data d = csv("people.csv",
   columns = [age, sex,
      "hours-per-week"],   # three columns
   missing = ["?"])
# trailing comment
"""

MESSY_FORMATTED = """\
# leading comment

import "fairspec/policies/four_fifths.fair"  # shipped
model m = onnx("m.onnx", output = "logit")
features F {  # the applicants
  age            : int in [17, 90]  # years
  sex            : {Female, Male} protected

  # a comment before a feature
  hours_per_week : int in [1, 99] column "hours-per-week"
}
encode F for m {
  age, hours_per_week : minmax(lo = 1, hi = 99)
  sex                 : onehot
}
group older = age >= 40 and not (sex == Female)
property p {
  forall x, x' : F
  require x.* == x'.* except {sex}
  require |x.age - x'.age| <= -(-2)
  ensure |prob(m(x)) - prob(m(x'))| <= 0.05  # in probability
  search annealing for 60s
}
property q {
  pba(m, flip sex, around d, delta {age: 1})
  report by sex x older
}
distribution w {
  p(Q) = 0.4
  p(Q | not P) = 0.3
}
policy pol(a: model, t: real = 0.8) {
  property r {
    disparate_impact(a, groups sex) >= t
  }
}
data d = csv("people.csv",
             columns = [age, sex,
                        "hours-per-week"],  # three columns
             missing = ["?"])
# trailing comment
"""


def test_canonical_layout_keeps_comments():
    out = format_text(MESSY)
    assert out == MESSY_FORMATTED
    assert format_text(out) == out


def test_hanging_bracket_and_own_line_comments_inside_a_call():
    src = 'data d = csv(\n"a.csv",\n    # the header\n  header = true\n)\n'
    out = format_text(src)
    assert out == 'data d = csv(\n  "a.csv",\n  # the header\n  header = true\n)\n'
    assert format_text(out) == out


def test_empty_and_comment_only_files():
    assert format_text("") == ""
    assert format_text("\n\n# only a comment   \n\n") == "# only a comment\n"


def test_unparseable_text_raises_the_diagnostic():
    with pytest.raises(DiagnosticError) as e:
        format_text("model m = onnx(\n", "bad.fair")
    assert e.value.diagnostics[0].code == "FS103"


# ------------------------------------------------------------------ the command


def test_fmt_check_lists_files_and_exits_1(tmp_path):
    a = tmp_path / "a.fair"
    b = tmp_path / "b.fair"
    a.write_text(MESSY)
    b.write_text(MESSY_FORMATTED)
    before = (a.read_bytes(), b.read_bytes())
    r = run_cli("fmt", "--check", a, b)
    assert r.returncode == 1, r.stderr
    assert r.stdout.split() == [str(a)]
    assert (a.read_bytes(), b.read_bytes()) == before  # --check changes nothing
    r = run_cli("fmt", "--check", b)
    assert r.returncode == 0 and r.stdout == ""


def test_fmt_rewrites_atomically_keeping_the_mode(tmp_path):
    a = tmp_path / "a.fair"
    a.write_text(MESSY)
    os.chmod(a, 0o640)
    r = run_cli("fmt", a)
    assert r.returncode == 0, r.stderr
    assert a.read_text() == MESSY_FORMATTED
    assert stat.S_IMODE(a.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.fair"]  # no temporary file left
    mtime = a.stat().st_mtime_ns
    assert run_cli("fmt", a).returncode == 0
    assert a.stat().st_mtime_ns == mtime  # already formatted: not rewritten


def test_fmt_leaves_an_unparseable_file_untouched(tmp_path):
    good = tmp_path / "good.fair"
    bad = tmp_path / "bad.fair"
    good.write_text(MESSY)
    bad.write_text("model m = onnx(\"m.onnx\"\nfeatures F {\n")
    before = bad.read_bytes()
    r = run_cli("fmt", bad, good)
    assert r.returncode == 2
    assert "FS101" in r.stderr and "bad.fair" in r.stderr and "Traceback" not in r.stderr
    assert bad.read_bytes() == before
    assert good.read_text() == MESSY_FORMATTED  # the other files are still formatted


def test_fmt_never_rewrites_a_read_only_file_or_through_a_link_leaving_the_project(tmp_path):
    """One sentence each, exit 2, the file untouched; the other files are still formatted, and a
    link inside the project is written through (its target formatted, the link kept)."""
    proj, outside = tmp_path / "proj", tmp_path / "outside"
    proj.mkdir()
    outside.mkdir()
    (proj / "fairspec.toml").write_text("")
    (outside / "o.fair").write_text(MESSY)
    (proj / "out.fair").symlink_to(outside / "o.fair")
    ro = proj / "ro.fair"
    ro.write_text(MESSY)
    os.chmod(ro, 0o444)  # the tests run as root too: the mode bits decide, not only os.access
    (proj / "sub").mkdir()
    (proj / "sub" / "t.fair").write_text(MESSY)
    (proj / "in.fair").symlink_to(proj / "sub" / "t.fair")
    good = proj / "good.fair"
    good.write_text(MESSY)
    r = run_cli("fmt", proj / "out.fair", ro, proj / "in.fair", good)
    assert r.returncode == 2, r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error[")]
    assert len(errors) == 2 and "Traceback" not in r.stderr, r.stderr
    assert "out.fair is a symbolic link to" in errors[0] and "outside the project" in errors[0]
    assert "ro.fair is read-only" in errors[1]
    assert (outside / "o.fair").read_text() == MESSY and ro.read_text() == MESSY
    assert stat.S_IMODE(ro.stat().st_mode) == 0o444
    assert good.read_text() == MESSY_FORMATTED and (proj / "sub" / "t.fair").read_text() == MESSY_FORMATTED
    assert (proj / "in.fair").is_symlink() and (proj / "out.fair").is_symlink()
    assert sorted(p.name for p in outside.iterdir()) == ["o.fair"]
    r = run_cli("fmt", "--check", proj / "out.fair", ro)  # --check writes nothing: it only lists them
    assert r.returncode == 1 and r.stdout.split() == [str(proj / "out.fair"), str(ro)]


def test_fmt_keeps_a_hard_link_and_a_symbolic_link(tmp_path):
    """A spec with a second name (os.link: st_nlink 2) is rewritten in place, so both names hold the
    formatted text (a rename over one name left the other with the old text and cut the link); a
    symbolic link stays a link, and a link to a hard-linked file keeps both."""
    (tmp_path / "fairspec.toml").write_text("")
    a = tmp_path / "a.fair"
    a.write_text(MESSY)
    os.chmod(a, 0o640)
    os.link(a, tmp_path / "also_a.fair")
    ino = a.stat().st_ino
    r = run_cli("fmt", a)
    assert r.returncode == 0, r.stderr
    assert a.read_text() == MESSY_FORMATTED and (tmp_path / "also_a.fair").read_text() == MESSY_FORMATTED
    assert a.stat().st_ino == ino and a.stat().st_nlink == 2 and stat.S_IMODE(a.stat().st_mode) == 0o640
    b = tmp_path / "b.fair"
    b.write_text(MESSY)
    os.link(b, tmp_path / "also_b.fair")
    (tmp_path / "sub").mkdir()
    os.symlink(b, tmp_path / "sub" / "link.fair")
    r = run_cli("fmt", tmp_path / "sub" / "link.fair")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "sub" / "link.fair").is_symlink() and os.readlink(tmp_path / "sub" / "link.fair") == str(b)
    assert b.read_text() == MESSY_FORMATTED and (tmp_path / "also_b.fair").read_text() == MESSY_FORMATTED
    assert b.stat().st_nlink == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.fair", "also_a.fair", "also_b.fair", "b.fair",
                                                        "fairspec.toml", "sub"]  # no temporary file left


def test_generated_and_mutated_specs_format_idempotently():
    """Specs from the grammar-aware fuzzer (tests/spec_fuzz.py; deep nesting included) that parse:
    formatting keeps the AST and is idempotent (a bounded, seeded run)."""
    import random

    from fairspec.syntax.parser import parse_text
    from spec_fuzz import SpecFuzzer

    fuzzer, rnd = SpecFuzzer(), random.Random(14)
    formatted = 0
    for i in range(120):
        text = fuzzer.generate(rnd) if i % 2 == 0 else fuzzer.mutate(rnd)
        try:
            before = parse_text(text, "f.fair")
        except (DiagnosticError, RecursionError):
            continue
        out = format_text(text, "f.fair")
        assert format_text(out, "f.fair") == out
        assert parse_text(out, "f.fair") == before
        formatted += 1
    assert formatted >= 30
