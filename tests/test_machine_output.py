"""Machine output is clean (issue 9, items 2 and 6).

* Under ``--format json`` stdout holds the JSON document and nothing else, whatever a
  solver prints: HiGHS writes its banner to file descriptor 1 when a model is created.
* Every spec fragment fairspec prints parses and means what it says: k-discrimination's
  guardrail and explanation over one-hot encoded categories with dashes, categories that are
  keywords or numbers, and the code in did-you-mean hints.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import ERRORS, EXAMPLES, FIXTURES, error_fixtures, run_cli

PROVE_SPEC = """\
features Plain {
  age    : int in [18, 80]
  sex    : {F, M} protected
  race   : {1, 2, 3}
  member : bool
  score  : real in [-1, 1e0]
}
model plain = onnx("MODEL")
encode Plain for plain {
  age : minmax(lo = 18, hi = 80)
  member : onehot
  race : code { 1 = 0, 2 = 1, 3 = 2 }
  sex : code
  score : standard(mean = -0.5, std = 0.25)
}
property prove_flip {
  forall x, x' : Plain
  require x.* == x'.* except {sex}
  ensure label(plain(x)) == label(plain(x'))
  using milp
  mode = prove
}
"""


def test_json_stdout_is_only_the_document_when_highs_runs(tmp_path):
    spec = tmp_path / "prove.fair"
    spec.write_text(PROVE_SPEC.replace("MODEL", str(FIXTURES / "models" / "people6.onnx")), encoding="utf-8")
    out = run_cli("check", spec, "--format", "json", timeout=600)
    assert out.returncode in (0, 1, 3), out.stdout[-2000:] + out.stderr[-2000:]
    doc = json.loads(out.stdout)               # the whole of stdout: one JSON document
    p = doc["properties"][0]
    assert p["name"] == "prove_flip" and p["backend"].startswith("milp")
    # what the solver printed went to stderr, not nowhere and not stdout
    assert "HiGHS" not in out.stdout



def test_no_highs_banner_in_the_text_report_or_through_the_python_api(tmp_path):
    """HiGHS prints "Running HiGHS ..." on the first model of a process whatever its options:
    fairspec makes that one with fd 1 on devnull (runtime.stdio.new_highs), so neither the text
    report (stderr included) nor a Python caller's own stdout shows it."""
    import subprocess

    import cli_forkserver

    spec = tmp_path / "prove.fair"
    spec.write_text(PROVE_SPEC.replace("MODEL", str(FIXTURES / "models" / "people6.onnx")), encoding="utf-8")
    out = run_cli("check", spec, "--workers", "1", timeout=600)
    assert out.returncode in (0, 1, 3), out.stdout[-2000:] + out.stderr[-2000:]
    assert "prove_flip" in out.stdout and "Running HiGHS" not in out.stdout + out.stderr
    code = ("from fairspec.pipeline import check\n"
            f"r = check({str(spec)!r})\n"
            "print('STATUS', [v.status for v in r.verdicts])\n")
    # a Python caller's process of its own (forked from the suite's warm server: highspy is first imported,
    # and its first model made, in it)
    api = subprocess.run(cli_forkserver.python_c(code), capture_output=True, text=True, timeout=600)
    assert "STATUS" in api.stdout, api.stderr[-2000:]
    assert "HiGHS" not in api.stdout + api.stderr

# ---------------------------------------------------------------- item 6: printed fragments parse

def _applicant_spec(tmp_path, body: str):
    text = (EXAMPLES / "adult" / "adult.fair").read_text()
    head = text[:text.index("encode Applicant for lr")]
    head = head.replace('"data/', f'"{(EXAMPLES / "adult").as_posix()}/data/').replace(
        '"models/', f'"{(EXAMPLES / "adult").as_posix()}/models/')
    head = "\n".join(l for l in head.splitlines() if not l.startswith("import "))
    spec = tmp_path / "s.fair"
    spec.write_text(head + "\n" + body, encoding="utf-8")
    return spec


def _lint_errors(path):
    from fairspec.pipeline import lint

    return [(d.code, d.message) for d in lint(path).diagnostics if d.is_error]


@pytest.fixture(scope="module")
def kdisc_onehot(tmp_path_factory):
    """k-discrimination with explain tree on the one-hot encoded Adult MLP (a bounded search)."""
    from fairspec.pipeline import check

    tmp = tmp_path_factory.mktemp("kd")
    spec = _applicant_spec(tmp, """
property clusters {
  k_discrimination(mlp, over {sex, race}, eps = 0.05) < 2
  search random for 3s
  seed = 3
  explain tree
}
""")
    (v,) = check(spec, only="clusters").verdicts
    assert v.status == "violated", v.reason
    return tmp, v


def test_guardrail_over_onehot_categories_parses(kdisc_onehot):
    tmp, v = kdisc_onehot
    guard = v.details["guardrail"]
    assert guard.startswith("require not (")
    assert not re.search(r"\.[a-z_]+=[A-Za-z]", guard), guard       # no 'x.marital_status=Never-married'
    spec = _applicant_spec(tmp, f"""
property guarded {{
  forall x, x' : Applicant
  require x.* == x'.* except {{sex, race}}
  {guard}
  ensure |prob(mlp(x)) - prob(mlp(x'))| <= 0.05
}}
""")
    assert _lint_errors(spec) == []


def test_explanation_paths_parse(kdisc_onehot):
    tmp, v = kdisc_onehot
    paths = [l.split(". ", 1)[1] for l in v.details["explanation"].splitlines() if re.match(r"^\d+\. ", l)]
    assert paths
    # the HTML report's tree draws the same conditions, one per branch
    assert [" and ".join(p["conditions"]) for p in v.details["explanation_tree"]] == paths
    for i, cond in enumerate(paths):
        spec = _applicant_spec(tmp, f"""
property p{i} {{
  forall x, x' : Applicant
  require x.* == x'.* except {{sex}}
  require {cond}
  ensure label(mlp(x)) == label(mlp(x'))
  using data
}}
""")
        assert _lint_errors(spec) == [], cond


@pytest.mark.parametrize("value", ["Never-married", "Self-emp-inc", "not", "in", "over", "x", "a b", 'say "hi"',
                                   "3", "-2", "2.5", "Male", "_x1"])
def test_category_literals_parse_back(value):
    from fairspec.syntax import ast
    from fairspec.syntax.literals import category
    from fairspec.syntax.parser import parse_text

    mod = parse_text(f"group g = sex == {category(value)}\n")
    rhs = mod.decls[0].expr.right
    if isinstance(rhs, ast.Str):
        assert rhs.value == value
    elif isinstance(rhs, ast.Name):
        assert rhs.id == value
    else:                                   # a number, possibly negated
        assert re.fullmatch(r"-?[0-9.]+", value), (value, rhs)


def test_did_you_mean_hints_are_code_that_fixes_the_error(tmp_path):
    """Every 'did you mean X?' hint lint gives on the error fixtures: X, pasted at the caret, clears it."""
    from fairspec.pipeline import lint

    seen = 0
    for fx in error_fixtures():
        for d in lint(fx).diagnostics:
            m = re.fullmatch(r"did you mean '([^']+)'\?", d.hint or "")
            if not m or d.span is None or d.span.file != str(fx) and d.span.file != fx.as_posix():
                continue
            lines = fx.read_text().splitlines(keepends=True)
            ln = lines[d.span.line - 1]
            a, b = d.span.column - 1, (d.span.end_column - 1 if d.span.end_line == d.span.line else len(ln))
            lines[d.span.line - 1] = ln[:a] + m.group(1) + ln[b:]
            fixed = fx.parent / f"_fixed_{fx.name}"
            fixed.write_text("".join(lines))
            try:
                after = [(x.code, x.span.line, x.span.column) for x in lint(fixed).diagnostics if x.span]
            finally:
                fixed.unlink()
            assert (d.code, d.span.line, d.span.column) not in after, (fx.name, d.message, m.group(1))
            seen += 1
    assert seen >= 3


def _strict(text: str):
    """json.loads as RFC 8259 reads it: a NaN, Infinity or -Infinity token is an error."""
    def refuse(token):
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


def test_json_and_sarif_are_strict_json_with_nan_and_inf_in_nested_details():
    import numpy as np

    from fairspec import report as rep
    from fairspec.pipeline import Report
    from fairspec.report import ci
    from fairspec.verdict import Verdict

    nan, inf = float("nan"), float("inf")
    v = Verdict("p", "group_metric", "violated", "estimated", value=nan, bound=(-inf, inf),
                details={"groups": [{"group": "x", "benefit": nan, "rates": (np.float64(nan), np.float32(-inf))},
                                    {"group": "y", "benefit": 0.5, "deep": {"a": [[inf, np.array([1.0, nan])]]}}],
                         "weight": np.int64(3), 2.5: "a float key", (1, 2): "a tuple key"})
    doc = _strict(rep.to_json(Report("s.fair", [], [v])))
    (p,) = doc["properties"]
    assert p["value"] is None and p["bound"] == [None, None]
    g = p["details"]["groups"]
    assert g[0]["benefit"] is None and g[0]["rates"] == [None, None]
    assert g[1]["deep"] == {"a": [[None, [1.0, None]]]} and p["details"]["weight"] == 3
    assert p["details"]["2.5"] == "a float key" and p["details"]["(1, 2)"] == "a tuple key"
    log = _strict(ci.to_sarif([], [v], {}, version="0", spec="s.fair"))
    assert log["runs"][0]["results"][0]["ruleId"] == "violated"


def test_weighted_theil_with_a_weightless_group_prints_strict_json(tmp_path):
    """A group whose weights are all 0 has no mean benefit: null, like its rates, never a bare NaN."""
    rows = (FIXTURES / "data" / "people.csv").read_text().splitlines()
    head = rows[0].split(",")
    race = head.index("race")
    out = [rows[0] + ",w"] + [r + (",0" if r.split(",")[race] == "C" else ",1.5") for r in rows[1:]]
    (tmp_path / "w.csv").write_text("\n".join(out) + "\n")
    (tmp_path / "spec.fair").write_text("""\
data log = csv("w.csv", label = hired == "yes")
features P from log {
  age  : int in [18, 80]
  sex  : {F, M} protected
  race : {A, B, C} protected
}
model svc = predictions(log, decision = "member")
property theil {
  theil_index(svc, groups race) <= 0.5
  weight = w
}
""")
    r = run_cli("check", "spec.fair", "--format", "json", "--workers", "1", cwd=tmp_path)
    assert r.returncode in (0, 1, 3), r.stderr
    (p,) = _strict(r.stdout)["properties"]
    groups = {g["group"]: g for g in p["details"]["groups"]}
    assert any(k.endswith("C") for k in groups), groups
    assert all(g.get("benefit") is None for k, g in groups.items() if k.endswith("C")), groups


ERRORS_BEFORE_ANY_CHECK = {  # exit-2 errors the command line finds before any check: args, words in the error
    "html_folder": (["--html", "."], "folder"),
    "models_no_folder": (["--models", "net=nosuchdir"], "nosuchdir"),
    "models_unknown_name": (["--models", "nosuch=."], "'nosuch'"),
    "workers_0": (["--workers", "0"], "--workers"),
    "workers_0_abbreviated": (["--work=0"], "--workers"),
    "unknown_option": (["--bogus"], "--bogus"),
}


@pytest.mark.parametrize("fmt", ["json", "sarif", "github"])
@pytest.mark.parametrize("case", sorted(ERRORS_BEFORE_ANY_CHECK))
def test_errors_before_any_check_still_print_the_document(tmp_path, case, fmt):
    """A bad --html target, a --models folder or name that is not there, an argparse usage error:
    under a machine format stdout holds the document the other input errors give (exit code 2)."""
    from test_cli import people_spec

    args, words = ERRORS_BEFORE_ANY_CHECK[case]
    spec = people_spec(tmp_path, "property p { statistical_parity(net, groups race) <= 0.2 }\n")
    r = run_cli("check", spec.name, "--format", fmt, *args, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    if fmt == "github":
        (line,) = r.stdout.splitlines()
        assert line.startswith("::error ") and "title=fairspec input::" in line and words in line, line
        return
    doc = _strict(r.stdout)
    if fmt == "json":
        doc = doc["models"][0] if "models" in doc else doc
        assert doc["exit_code"] == 2 and doc["properties"] == [] and doc["spec"] == "spec.fair"
        assert words in doc["error"], doc["error"]
    else:
        (res,) = doc["runs"][0]["results"]
        assert res["ruleId"] == "input" and words in res["message"]["text"]
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"] == "spec.fair" and loc["region"]["startLine"] == 1


def test_a_usage_error_with_no_spec_is_a_sarif_notification_not_an_unlocated_result():
    r = run_cli("lint", "--format", "sarif")
    assert r.returncode == 2
    run = _strict(r.stdout)["runs"][0]
    assert run["results"] == []
    (note,) = run["invocations"][0]["toolExecutionNotifications"]
    assert "spec" in note["message"]["text"] and run["invocations"][0]["executionSuccessful"] is False
    r = run_cli("check", "--format", "json")
    assert r.returncode == 2 and "spec" in _strict(r.stdout)["error"]
    r = run_cli("check", "x.fair", "--format", "text", "--workers", "0")  # a human format: the usage only
    assert r.returncode == 2 and r.stdout == "" and "--workers" in r.stderr


LINT_JSON_KEYS = {"code", "severity", "message", "file", "line", "column", "end_line", "end_column", "hint", "related"}


@pytest.mark.parametrize("argv,what", [
    (["lint", "--format", "json"], "required: spec"),               # no spec
    (["lint", "--format", "json", "--bogus", "s.fair"], "--bogus"),  # an unknown option
    (["lint", "a.fair", "b.fair", "--format=json"], "b.fair"),      # two specs where one is expected
    (["lint", "--format", "json", "s.fair", "--allow-path", ""], "empty"),  # a bad option value
])
def test_a_lint_usage_error_prints_lints_document_not_checks(argv, what):
    """Lint's JSON is {"diagnostics": [...]}: a usage error is one FS001 error in it, never check's
    report (spec, properties, exit_code, provenance), which a reader of lint's document does not expect."""
    from fairspec.cli import _build
    from fairspec.errordoc import usage_error

    doc = json.loads(usage_error(_build().commands, argv, f"argparse says {what}", version="0"))
    assert set(doc) == {"diagnostics"}, doc
    (d,) = doc["diagnostics"]
    assert set(d) == LINT_JSON_KEYS and (d["code"], d["severity"]) == ("FS001", "error")
    assert what in d["message"] and "lint --help" in d["hint"]


def test_a_lint_usage_error_through_the_command_line_in_each_machine_format():
    r = run_cli("lint", "a.fair", "b.fair", "--format", "json")
    assert r.returncode == 2 and "usage:" in r.stderr
    doc = _strict(r.stdout)
    assert set(doc) == {"diagnostics"} and doc["diagnostics"][0]["code"] == "FS001"
    assert "unrecognized arguments: b.fair" in doc["diagnostics"][0]["message"]
    r = run_cli("lint", "a.fair", "--zz", "--format", "sarif")  # a result at the spec named, as FS203
    run = _strict(r.stdout)["runs"][0]
    assert r.returncode == 2 and [x["id"] for x in run["tool"]["driver"]["rules"]] == ["FS001"]
    (res,) = run["results"]
    assert res["ruleId"] == "FS001" and "--zz" in res["message"]["text"] and "invocations" not in run
    r = run_cli("lint", "--format", "github")  # no spec: an annotation with no file
    assert r.returncode == 2
    assert r.stdout == ("::error title=fairspec FS001::bad usage: the following arguments are required: spec"
                        "%0Ahint: see fairspec lint --help\n"), r.stdout
    r = run_cli("lint", "--format", "concise")  # a human format: the usage on stderr only
    assert r.returncode == 2 and r.stdout == "" and "usage:" in r.stderr



@pytest.mark.parametrize("argv,spec", [
    (["--h", "x.html", "s.fair"], None),            # --help, or --html and its value: argparse stopped
    (["s.fair", "--h", "x.html"], "s.fair"),        # the spec was named before the ambiguous prefix
    (["--h=x.html", "s.fair"], "s.fair"),           # a value given with '=': the next word is positional
    (["--ht", "x.html", "s.fair"], "s.fair"),       # a unique prefix takes its value
    (["--bogus", "s.fair"], "s.fair"),              # an unknown option takes no value (as argparse reads it)
])
def test_a_usage_error_names_the_spec_argparse_would_have_read_or_none(argv, spec):
    """`check --format json --h x.html s.fair`: the document named x.html (the value of --html, if
    --h meant it) as the spec."""
    from fairspec.cli import _build
    from fairspec.errordoc import usage_error

    for argv_ in (["check", "--format", "json", *argv], ["check", *argv, "--format", "json"]):
        doc = json.loads(usage_error(_build().commands, argv_, "ambiguous option", version="0"))
        assert doc["spec"] == spec, (argv_, doc["spec"])
    if argv[0] != "--h":
        return
    r = run_cli("check", "--format", "json", *argv)  # through the command line once
    assert r.returncode == 2 and _strict(r.stdout)["spec"] is None and "ambiguous option: --h" in r.stderr

# ------------------------------------------------------------------ spec fragments in hints parse

HINT_SPEC = """\
data d = csv("d.csv", label = hired == "yes"WHERE)
features P from d {
  age : int in [18, 80]
  race : {"Amer-Indian-Eskimo", Black, White} protected
  HOURS
}
GROUP"""


def _hint_project(tmp_path, where="", hours='hours : int in [0, 99] column "hours-per-week"', group=""):
    races = ["Amer-Indian-Eskimo", "Black", "White"]
    rows = [f"{20 + i % 30},{races[i % 3]},{10 + i % 40},{'yes' if i % 4 else 'no'}" for i in range(60)]
    (tmp_path / "d.csv").write_text("age,race,hours-per-week,hired\n" + "\n".join(rows) + "\n")
    (tmp_path / "fairspec.toml").write_text("")
    spec = tmp_path / "spec.fair"
    spec.write_text(HINT_SPEC.replace("WHERE", where).replace("HOURS", hours).replace("GROUP", group))
    return spec


def _apply(spec, d, text) -> str:
    """The spec with ``text`` in place of the diagnostic's span (what the editor's quick fix does)."""
    lines = spec.read_text().splitlines(keepends=True)
    ln = lines[d.span.line - 1]
    a, b = d.span.column - 1, (d.span.end_column - 1 if d.span.end_line == d.span.line else len(ln))
    lines[d.span.line - 1] = ln[:a] + text + ln[b:]
    return "".join(lines)


@pytest.mark.parametrize("where, hours, group, code, fragment", [
    (", where = hours_per_week >= 1", None, "", "FS207", 'col("hours-per-week")'),
    (', where = col("hours-per-wek") >= 1', None, "", "FS207", '"hours-per-week"'),
    ("", 'hours : int in [0, 99] column "hours-per-wek"', "", "FS207", '"hours-per-week"'),
    ("", None, 'group g = race == "Amer-Indian-Eskmo"\n', "FS206", '"Amer-Indian-Eskimo"'),
    ("", None, "group g = race == Whit\n", "FS206", "White"),
], ids=["bare_column", "col_string", "column_clause", "quoted_category", "bare_category"])
def test_did_you_mean_is_spec_text_for_its_span(tmp_path, where, hours, group, code, fragment):
    """The suggestion parses in place (a dashed column as col("..."), a quoted category keeps its
    quotes); the editor's quick fix, built from the hint, replaces the span with it and clears the error."""
    from fairspec.lsp.analysis.edits import fixes
    from fairspec.pipeline import lint
    from fairspec.syntax.parser import parse_text

    spec = _hint_project(tmp_path, where, **({"hours": hours} if hours else {}), group=group)
    (d,) = [x for x in lint(spec).diagnostics if x.is_error]
    assert d.code == code and d.hint == f"did you mean '{fragment}'?", (d.message, d.hint)
    ((_, span, text),) = fixes(None, d)
    assert span == d.span and text == fragment
    parse_text(f"group g = x == {fragment}\n")  # parses alone as an expression
    spec.write_text(_apply(spec, d, text))
    assert [(x.code, x.message) for x in lint(spec).diagnostics if x.is_error] == []


def test_a_feature_column_that_is_not_a_name_is_hinted_as_a_column_clause(tmp_path):
    from fairspec.lsp.analysis.edits import fixes
    from fairspec.pipeline import lint

    spec = _hint_project(tmp_path, hours="hours_per_week : int in [0, 99]")
    (d,) = [x for x in lint(spec).diagnostics if x.is_error]
    assert d.code == "FS207" and "did you mean" not in d.hint and fixes(None, d) == []
    clause = re.search(r'column "[^"]*"', d.hint).group(0)
    spec.write_text(spec.read_text().replace("hours_per_week : int in [0, 99]", f"hours_per_week : int in [0, 99] {clause}"))
    assert [x.code for x in lint(spec).diagnostics if x.is_error] == []


def test_the_categories_not_a_category_lists_are_spec_text(tmp_path):
    from fairspec.pipeline import lint

    spec = _hint_project(tmp_path, group="group g = race == Zzzzzzzzzz\n")
    (d,) = [x for x in lint(spec).diagnostics if x.is_error]
    assert d.code == "FS206" and d.hint == 'the categories are {"Amer-Indian-Eskimo", Black, White}'


def test_the_pipeline_order_hint_is_a_category_set_that_fixes_fs422(tmp_path):
    """FS422: a one-hot pipeline fitted on dashed categories; the hint's set parses as the feature's
    type and, pasted in, clears the error."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("skops")
    import warnings

    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    from fairspec.models.sklearn_model import import_skops_io
    from fairspec.pipeline import lint
    from fairspec.syntax.parser import parse_text

    spec = _hint_project(tmp_path, group="""\
model m = sklearn("p.skops")
property p { statistical_parity(m, groups race) <= 0.5 }
""")
    df = pd.read_csv(tmp_path / "d.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = Pipeline([("pre", ColumnTransformer([("oh", OneHotEncoder(), ["race"]),
                                                    ("num", "passthrough", ["age"])])),
                         ("clf", LogisticRegression())]).fit(df[["race", "age"]], df.hired == "yes")
    import_skops_io().dump(pipe, str(tmp_path / "p.skops"))
    text = spec.read_text().replace('{"Amer-Indian-Eskimo", Black, White}', '{White, "Amer-Indian-Eskimo", Black}')
    text = text.replace('  HOURS\n', "").replace('  hours : int in [0, 99] column "hours-per-week"\n', "")
    spec.write_text(text)
    (d,) = [x for x in lint(spec).diagnostics if x.is_error]
    assert d.code == "FS422", d.message
    fragment = d.hint.split(": ", 1)[1]
    assert fragment == '{"Amer-Indian-Eskimo", Black, White}', d.hint
    parse_text(f"features F {{ race : {fragment} }}\n")
    spec.write_text(text.replace('{White, "Amer-Indian-Eskimo", Black}', fragment))
    assert [x.code for x in lint(spec).diagnostics if x.is_error] == []


@pytest.mark.parametrize("value", ["education-num", "hours per week", "in", "x", "O'Brien", 'say "hi"', "a\\b",
                                   "tab\there", "line\nbreak", "age", "_x1"])
def test_literals_write_columns_strings_and_names_that_parse_back(value):
    from fairspec.syntax import ast
    from fairspec.syntax.literals import column, name_or_string, string
    from fairspec.syntax.parser import parse_text

    def rhs(text):
        return parse_text(f"group g = sex == {text}\n").decls[0].expr.right

    s = rhs(string(value))
    assert isinstance(s, ast.Str) and s.value == value
    n = rhs(name_or_string(value))
    assert (n.id if isinstance(n, ast.Name) else n.value) == value
    c = rhs(column(value))
    if isinstance(c, ast.Name):
        assert c.id == value
    else:
        assert isinstance(c, ast.Call) and c.fn.id == "col" and c.positional()[0].value == value


def test_the_text_report_never_wraps_a_spec_fragment():
    """At 120 columns (stdout not a terminal) the guardrail, the explanation's paths and a hint are
    printed whole: a line break inside a quoted category would not parse."""
    import io

    from fairspec import report as rep
    from fairspec.diagnostics import Diagnostic
    from fairspec.pipeline import Report
    from fairspec.syntax.literals import category_set
    from fairspec.syntax.parser import parse_text
    from fairspec.verdict import Verdict

    cats = category_set(["Married civ spouse", "Never married", "Self emp not inc", "Other service",
                         "Amer Indian Eskimo", "Asian Pac Islander"])
    guard = f"require not (x.marital in {cats} and x.race in {cats} and x.age >= 30)"
    path = f"1. marital in {cats} and age >= 30"
    v = Verdict("clusters", "k_discrimination", "violated", reason="2 clusters",
                details={"explanation": f"the clusters:\n{path}", "guardrail": guard})
    hint = f"declare the categories of 'race' in the pipeline's order: {cats}"
    d = Diagnostic("FS410", "a warning", None, "warning", hint=hint)
    buf = io.StringIO()
    rep.print_text(Report("s.fair", [d], [v]), rep.console(file=buf, width=120))
    lines = buf.getvalue().splitlines()
    assert len(guard) > 120 and guard in lines, lines
    assert path in lines and any(line.endswith(hint) for line in lines)
    parse_text(f"property p {{\n  forall x, x' : P\n  {guard}\n  ensure label(m(x)) == label(m(x'))\n}}\n")
