"""Renders images/screenshot.png: the start of examples/compas/compas.fair coloured by this
extension's TextMate grammar (syntaxes/fairspec.tmLanguage.json) with VS Code's Dark+ colours, in
headless Chromium. Run from a checkout: python editors/vscode/make_screenshot.py"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPEC = HERE.parents[1] / "examples" / "compas" / "compas.fair"
COLOURS = [("comment", "#6A9955"), ("string", "#CE9178"), ("constant.numeric", "#B5CEA8"),
           ("storage.type", "#569CD6"), ("storage.modifier", "#569CD6"), ("keyword.control", "#C586C0"),
           ("keyword.operator", "#D4D4D4"), ("keyword", "#569CD6"), ("support.type", "#4EC9B0"),
           ("constant.language", "#569CD6"), ("support.function", "#DCDCAA"), ("entity.name.function", "#DCDCAA"),
           ("variable", "#9CDCFE"), ("punctuation", "#D4D4D4")]


def _rules(patterns, repo):
    out = []
    for p in patterns:
        if "include" in p:
            out += _rules(repo[p["include"].lstrip("#")]["patterns"], repo)
        else:
            out.append((re.compile(p["match"]), p["name"]))
    return out


def colour(scope: str) -> str:
    return next((c for prefix, c in COLOURS if scope.startswith(prefix)), "#D4D4D4")


def render_line(line: str, rules) -> str:
    out, pos = [], 0
    while pos < len(line):
        best = None
        for rx, scope in rules:
            m = rx.search(line, pos)
            if m and (best is None or m.start() < best[0].start()):
                best = (m, scope)
        if best is None or best[0].end() == best[0].start():
            out.append(html.escape(line[pos:]))
            break
        m, scope = best
        out.append(html.escape(line[pos:m.start()]))
        out.append(f"<span style='color:{colour(scope)}'>{html.escape(m.group())}</span>")
        pos = m.end()
    return "".join(out)


def main() -> None:
    gram = json.loads((HERE / "syntaxes" / "fairspec.tmLanguage.json").read_text(encoding="utf-8"))
    rules = _rules(gram["patterns"], gram["repository"])
    lines = SPEC.read_text(encoding="utf-8").splitlines()[7:44]
    body = "\n".join(f"<span class=n>{i:>3}</span>  {render_line(l, rules)}" for i, l in enumerate(lines, 8))
    page = ("<!doctype html><meta charset=utf-8><style>body{margin:0;background:#1E1E1E}"
            "pre{font:14px/1.45 'DejaVu Sans Mono',monospace;color:#D4D4D4;padding:14px;margin:0}"
            ".n{color:#858585}</style><pre>" + body + "</pre>")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "page.html"
        f.write_text(page, encoding="utf-8")
        (HERE / "images").mkdir(exist_ok=True)
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp}/p",
                        f"--screenshot={HERE / 'images' / 'screenshot.png'}", "--window-size=1000,790",
                        "--hide-scrollbars", f.as_uri()], check=True, capture_output=True, timeout=120)


if __name__ == "__main__":
    main()
