"""The VS Code package (editors/vscode/): its TextMate grammar against the examples, and its manifest.

The grammar is run by a small TextMate tokenizer (match rules only, as the
grammar uses: at each point the earliest match wins, ties go to the rule listed
first, as in vscode-textmate).  The ground truth is fairspec's own lexer: in
every example, policy and fixture, each keyword token, string, number and
comment the Lark parser sees must be coloured as one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import EXAMPLES, OK, REPO
from fairspec.syntax.format import _COMMENTS, _concrete_parser, _tokens_of

VSCODE = REPO / "editors" / "vscode"
GRAMMAR = json.loads((VSCODE / "syntaxes" / "fairspec.tmLanguage.json").read_text(encoding="utf-8"))
CORPUS = sorted(EXAMPLES.rglob("*.fair")) + sorted((REPO / "specs").rglob("*.fair")) + sorted(OK.glob("*.fair"))
# `none` appears in no example: one line that uses it
EXTRA = 'model m = onnx("m.onnx", output = none)\n'


def lark_keywords() -> set[str]:
    """Every keyword of grammar/fairspec.lark: the quoted words and the words of the CLAUSE, TRUST and X_OP terminals."""
    body = "\n".join(line.split("//")[0] for line in (REPO / "grammar" / "fairspec.lark").read_text().splitlines())
    words = set(re.findall(r'"([a-z_]+)"', body))
    for alt in re.findall(r"/\(([a-z|]+)\)\(\?!", body):
        words |= set(alt.split("|"))
    words |= set(re.findall(r"/([a-z]+)\(\?!", body))
    return words


def _rules(patterns, repo) -> list[tuple[re.Pattern, str]]:
    out = []
    for p in patterns:
        if "include" in p:
            out += _rules(repo[p["include"].lstrip("#")]["patterns"], repo)
        else:
            out.append((re.compile(p["match"]), p["name"]))
    return out


RULES = _rules(GRAMMAR["patterns"], GRAMMAR["repository"])


def tokenize(text: str) -> dict[tuple[int, int], tuple[int, str]]:
    """(line, column) 1-based start -> (end column, scope) of each token the grammar colours."""
    out = {}
    for ln, line in enumerate(text.split("\n"), 1):
        pos = 0
        while pos < len(line):
            best = None
            for rx, scope in RULES:
                m = rx.search(line, pos)
                if m and (best is None or m.start() < best[0].start()):
                    best = (m, scope)
            if best is None:
                break
            m, scope = best
            out[(ln, m.start() + 1)] = (m.end() + 1, scope)
            pos = m.end() if m.end() > m.start() else m.start() + 1
    return out


def lark_tokens(text: str):
    _COMMENTS.items = []
    tree = _concrete_parser().parse(text)
    comments, _COMMENTS.items = _COMMENTS.items, []
    return list(_tokens_of(tree)) + comments


KEYWORD_SCOPES = ("storage.type", "keyword.", "storage.modifier", "support.type", "constant.language")


def _expect(tok, keywords) -> tuple[str, ...] | None:
    if tok.type == "COMMENT":
        return ("comment.",)
    if tok.type == "STRING":
        return ("string.",)
    if tok.type in ("NUMBER", "DURATION"):
        return ("constant.numeric",)
    if str(tok) in keywords and tok.type != "NAME":
        return KEYWORD_SCOPES
    return None


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_grammar_colours_what_the_parser_sees(path):
    keywords = lark_keywords()
    text = path.read_text(encoding="utf-8")
    scopes = tokenize(text)
    for tok in lark_tokens(text):
        want = _expect(tok, keywords)
        if want is None:
            continue
        got = scopes.get((tok.line, tok.column))
        assert got is not None, f"{path.name}:{tok.line}:{tok.column}: {str(tok)!r} ({tok.type}) is not coloured"
        end, scope = got
        assert scope.startswith(want), f"{path.name}:{tok.line}:{tok.column}: {str(tok)!r} is {scope}"
        assert end == tok.column + len(str(tok).rstrip()), f"{path.name}:{tok.line}:{tok.column}: {str(tok)!r}"


def test_every_keyword_of_the_lark_grammar_is_coloured_in_the_examples():
    keywords = lark_keywords()
    assert {"property", "forall", "require", "ensure", "groups", "x", "p", "trust", "protected"} <= keywords
    coloured = set()
    for text in [p.read_text(encoding="utf-8") for p in CORPUS] + [EXTRA]:
        scopes = tokenize(text)
        for tok in lark_tokens(text):
            got = scopes.get((tok.line, tok.column))
            if str(tok) in keywords and tok.type != "NAME" and got and got[1].startswith(KEYWORD_SCOPES):
                coloured.add(str(tok))
    assert coloured == keywords


def test_names_are_not_coloured_as_keywords():
    scopes = tokenize("group sexual = sex x race_x and data_set == index\n")
    by_text = {}
    line = "group sexual = sex x race_x and data_set == index"
    for (ln, col), (end, scope) in scopes.items():
        by_text[line[col - 1:end - 1]] = scope
    for name in ("sexual", "sex", "race_x", "data_set", "index"):
        assert by_text[name].startswith("variable."), (name, by_text[name])
    assert by_text["x"].startswith("keyword.operator")
    assert by_text["and"].startswith("keyword.operator")


def test_vscode_manifest_language_configuration_and_client():
    pkg = json.loads((VSCODE / "package.json").read_text(encoding="utf-8"))
    (lang,) = pkg["contributes"]["languages"]
    assert lang["id"] == "fairspec" and lang["extensions"] == [".fair"]
    conf = json.loads((VSCODE / lang["configuration"]).read_text(encoding="utf-8"))
    assert conf["comments"] == {"lineComment": "#"}
    assert ["{", "}"] in conf["brackets"] and ["(", ")"] in conf["brackets"] and ["[", "]"] in conf["brackets"]
    (gram,) = pkg["contributes"]["grammars"]
    assert (VSCODE / gram["path"]).resolve() == (VSCODE / "syntaxes" / "fairspec.tmLanguage.json").resolve()
    assert gram["scopeName"] == GRAMMAR["scopeName"] == "source.fairspec"
    assert "vscode-languageclient" in pkg["dependencies"]
    # main is the bundle `npm run build` makes from extension.js (vsce runs it before packaging)
    assert pkg["main"] == "./dist/extension.js" and "extension.js --bundle" in pkg["scripts"]["build"]
    client = (VSCODE / "extension.js").read_text(encoding="utf-8")
    assert '["fairspec", "lsp"]' in client and "TransportKind.stdio" in client
    assert pkg["contributes"]["configuration"]["properties"]["fairspec.server.command"]["default"] == ["fairspec", "lsp"]


def test_every_metric_and_property_function_is_scoped():
    """Every metric the language knows (fairspec.sema.properties) is coloured as a metric (issue 26)."""
    from fairspec.sema.properties import PROPERTY_FUNCTIONS

    for name in sorted(PROPERTY_FUNCTIONS | {"label", "prob", "logit", "class", "value", "col"}):
        toks = tokenize(f"  {name}(m, groups sex) <= 0.1")
        assert toks[(1, 3)] == (3 + len(name), "support.function.metric.fairspec"), name


def test_vscode_package_is_complete():
    """What `vsce package` warns about when missing: a repository, a LICENSE, a .vscodeignore, a README."""
    pkg = json.loads((VSCODE / "package.json").read_text(encoding="utf-8"))
    assert pkg["repository"]["url"] and pkg["license"] == "MIT"
    assert (VSCODE / "LICENSE").is_file() and (VSCODE / ".vscodeignore").is_file()
    ignore = (VSCODE / ".vscodeignore").read_text(encoding="utf-8")
    assert "node_modules/**" in ignore.splitlines()  # the client library ships bundled in dist/extension.js
    readme = (VSCODE / "README.md").read_text(encoding="utf-8")
    assert "fairspec.server.command" in readme and "screenshot.png" in readme
    assert (VSCODE / "images" / "screenshot.png").is_file()


NPM = __import__("shutil").which("npm")
VSCE_MAJOR = 3
VSCE_FRESH_DAYS = 30


def _vsce_tool(scratch: Path) -> Path:
    """`vsce` (@vscode/vsce@3), installed from the npm registry once per machine into the user's cache
    (FAIRSPEC_TEST_CACHE, else $XDG_CACHE_HOME or ~/.cache, /fairspec-tests/vsce3) and reinstalled
    when older than VSCE_FRESH_DAYS: unpacking its ~200 packages was most of this test's time
    (about 100 s of disk writes even from npm's own cache). The extension's dependencies are still
    installed from the registry on every run: that they resolve is part of what is tested."""
    import os
    import shutil
    import subprocess
    import time

    root = os.environ.get("FAIRSPEC_TEST_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "fairspec-tests")
    cached = Path(root) / f"vsce{VSCE_MAJOR}"
    exe = cached / "node_modules" / ".bin" / "vsce"
    if exe.exists() and time.time() - cached.stat().st_mtime < VSCE_FRESH_DAYS * 86400:
        return exe
    tool = scratch / "tool"
    tool.mkdir()
    r = subprocess.run(["npm", "install", "--no-audit", "--no-fund", f"@vscode/vsce@{VSCE_MAJOR}"], cwd=tool,
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        pytest.skip(f"npm could not install the packaging tools: {r.stderr[-300:]}")
    try:  # into the cache by one rename (another run may be doing the same: either copy is whole)
        cached.parent.mkdir(parents=True, exist_ok=True)
        stale = cached.with_name(f"{cached.name}.old.{os.getpid()}")
        if cached.exists():
            cached.rename(stale)
        tool.rename(cached)
        shutil.rmtree(stale, ignore_errors=True)
    except OSError:  # a read-only or foreign cache (or another filesystem): use this run's copy
        return (tool if tool.exists() else cached) / "node_modules" / ".bin" / "vsce"
    return exe


@pytest.mark.skipif(NPM is None, reason="npm is not installed")
def test_vscode_extension_packages_without_warnings(tmp_path):
    """`vsce package` on a copy of editors/vscode (dependencies from the npm registry): no warning,
    the client bundled into dist/extension.js, no node_modules in the .vsix. Skipped when npm is
    absent or cannot reach the registry; the packaging tool is cached per machine (_vsce_tool)."""
    import shutil
    import subprocess

    work = tmp_path / "ext"
    shutil.copytree(VSCODE, work, ignore=shutil.ignore_patterns("node_modules", "dist", "*.vsix"))
    r = subprocess.run(["npm", "install", "--no-audit", "--no-fund"], cwd=work, capture_output=True, text=True,
                       timeout=600)
    if r.returncode != 0:
        pytest.skip(f"npm could not install the extension's dependencies: {r.stderr[-300:]}")
    vsce = _vsce_tool(tmp_path)
    r = subprocess.run([str(vsce), "package", "--no-rewrite-relative-links"],
                       cwd=work, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "WARNING" not in out and "ERROR" not in out, out
    (vsix,) = work.glob("*.vsix")
    import zipfile

    names = zipfile.ZipFile(vsix).namelist()
    assert "extension/dist/extension.js" in names and not any("node_modules" in n for n in names)
