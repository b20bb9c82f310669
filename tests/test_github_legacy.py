"""GitHub's legacy workflow commands (``##[command]data``) in values fairspec prints.

The runner reads ``##[`` ANYWHERE in a line of a step's log (actions/runner, ActionCommand.TryParse:
``message.IndexOf("##[")``) and acts on the registered commands: ``stop-commands`` (no annotation
after it is read), ``add-mask``, ``set-output``, ``error``... (bench/results/audits_s19/github_legacy.md).
A category, a feature name or a spec string holding ``##[`` is printed ``##\\[`` by every text writer
(the one sanitiser, fairspec.diagnostics.visible) and ``##\\u005b`` in JSON and SARIF (the same string
to a JSON reader); ``\\[`` is a string escape, so a hint quoting such a value still parses to it.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import run_cli
from fairspec.diagnostics.visible import LEGACY, joined, json_text, visible, visible_value

HOSTILE = ["a##[add-mask]b", "x##[stop-commands]tok", "##[error]forged", "c###[set-output name=verdict]holds",
           "##[group]##[endgroup]", "tail#", "#[notice]head"]


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\") + '"'


def _project(tmp_path):
    (tmp_path / "fairspec.toml").write_text("")
    rows = ["g,approved,outcome"] + [f"{HOSTILE[i % len(HOSTILE)]},{'yes' if i % len(HOSTILE) == 1 or i % 3 == 0 else 'no'},{i % 2}"
                                     for i in range(40 * len(HOSTILE))]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    spec = tmp_path / "s.fair"
    spec.write_text(f"""data log = csv("d.csv", label = outcome == 1)
features A from log {{
  g : {{{", ".join(_quote(c) for c in HOSTILE)}}} protected
}}
model service = predictions(log, decision = "approved")
property strict {{
  statistical_parity(service, groups g) <= 0.01
}}
""")
    return spec


def test_visible_escapes_the_legacy_prefix_and_nothing_else():
    assert visible("a##[error]x") == "a##\\[error]x"
    assert visible_value("###[##[") == "###\\[##\\["
    assert visible("#[x] ## [y] [z]##") == "#[x] ## [y] [z]##"  # no ##[ here
    assert visible_value("#\n#[error]x") == "#\\n#[error]x"  # the line break shown: no ##[ formed
    for s in HOSTILE:
        assert LEGACY not in visible(s) and LEGACY not in visible_value(s)


def test_pieces_escaped_one_by_one_form_no_prefix_where_they_join():
    """A snippet's line is escaped in three pieces (before the caret, under it, after it)."""
    assert joined("a#", "#[b", "c") == ["a#", "#\\[b", "c"]
    assert joined("x##", "[y", "##", "[z") == ["x##", "\\[y", "##", "\\[z"]
    assert joined("ok", "fine") == ["ok", "fine"]


def test_json_keeps_the_value_and_hides_the_prefix():
    doc = {"v": HOSTILE, "k##[x]": 1}
    text = json_text(json.dumps(doc))
    assert LEGACY not in text and json.loads(text) == doc


@pytest.mark.parametrize("value", HOSTILE + ["back\\##[slash", 'q"##["'])
def test_a_value_shown_in_a_string_literal_still_parses_to_it(value):
    """Every spec fragment fairspec prints parses: a hint's string literal, shown through visible."""
    from fairspec.syntax import literals
    from fairspec.syntax.parser import parse_text

    shown = visible_value(literals.category(value))
    assert LEGACY not in shown
    mod = parse_text(f"features F {{ c : {{{shown}}} }}")
    features = next(d for d in mod.decls if hasattr(d, "features"))
    assert features.features[0].type.categories[0].value == value, shown


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_check_prints_no_legacy_command_in_any_format(tmp_path, fmt):
    spec = _project(tmp_path)
    r = run_cli("check", spec.name, "--format", fmt, "--workers", "1", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert LEGACY not in r.stdout and LEGACY not in r.stderr, r.stdout
    if fmt == "json":
        doc = json.loads(r.stdout)
        groups = {g["group"] for g in doc["properties"][0]["details"]["groups"]}
        assert {f"g={h}" for h in HOSTILE} <= groups, groups  # the values exactly, to a JSON reader
    if fmt == "text":
        assert "a##\\[add-mask]b" in r.stdout, r.stdout


@pytest.mark.parametrize("fmt", ["text", "concise", "json", "sarif", "github"])
def test_lint_prints_no_legacy_command_and_its_hint_parses(tmp_path, fmt):
    spec = _project(tmp_path)
    spec.write_text(spec.read_text() + 'group bad = g == "a##[add-mask]c"\n')
    r = run_cli("lint", spec.name, "--format", fmt, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert LEGACY not in r.stdout and LEGACY not in r.stderr, r.stdout
    if fmt == "json":
        (d,) = [d for d in json.loads(r.stdout)["diagnostics"] if d["code"] == "FS206"]
        assert "a##[add-mask]c" in d["message"] and '"a##[add-mask]b"' in d["hint"], d
    if fmt == "text":
        m = re.search(r"did you mean (.*)\?", r.stdout)
        assert m and m.group(1) == "'\"a##\\[add-mask]b\"'", r.stdout
        from fairspec.syntax.parser import parse_text

        fixed = spec.read_text().replace('"a##[add-mask]c"', m.group(1)[1:-1])
        parse_text(fixed)  # the suggested fragment is spec text
        assert "a##[add-mask]b" in spec.read_text()


def test_a_usage_error_quoting_the_prefix_is_escaped_on_stderr():
    r = run_cli("lint", "a.fair", "##[error]forged")
    assert r.returncode == 2 and LEGACY not in r.stderr and "##\\[error]forged" in r.stderr, r.stderr


def test_a_pytest_failure_shows_no_legacy_command():
    """`pytest --fairspec` and assert_fair print a verdict's reason and witness to the CI log too."""
    from fairspec.pytest_plugin import describe
    from fairspec.verdict import Verdict

    v = Verdict("p", "group_metric", "violated", value=0.5, reason="lowest g=a##[add-mask]b\n::error::x")
    text = describe(v)
    assert LEGACY not in text and "a##\\[add-mask]b\\n::error::x" in text, text
