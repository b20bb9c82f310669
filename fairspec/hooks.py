"""Entry points for pre-commit and the GitHub Action (they pass many files, or a SARIF log).

    python -m fairspec.hooks lint FILE...        fairspec lint on each file; the worst exit code
    python -m fairspec.hooks fmt FILE...         fairspec fmt --check on the files
    python -m fairspec.hooks summary LOG.sarif   a Markdown summary of a SARIF log (the Action
                                                 appends it to $GITHUB_STEP_SUMMARY)
"""

from __future__ import annotations

import json
import sys


def _lint(files: list[str]) -> int:
    from fairspec.cli import main

    worst = 0
    for f in files:
        code = main(["lint", f, "--format", "concise"])
        worst = max(worst, code or 0)
    return worst


def _fmt(files: list[str]) -> int:
    from fairspec.cli import main

    return main(["fmt", "--check", *files]) or 0 if files else 0


def _cell(text: str) -> str:
    """Markdown table cell: one line, pipes and markup characters escaped, control characters dropped."""
    text = "".join(ch if ch.isprintable() else " " for ch in str(text))
    for ch in "\\|`*_[]<>":
        text = text.replace(ch, "\\" + ch)
    return text[:300]


def summary(log: dict) -> str:
    levels = {"error": "error", "warning": "warning", "note": "note", "none": "note"}
    rows, counts = [], {}
    for run in log.get("runs", []):
        for r in run.get("results", []):
            level = levels.get(r.get("level", "warning"), "warning")
            counts[level] = counts.get(level, 0) + 1
            loc = ""
            locs = r.get("locations") or []
            if locs:
                phys = locs[0].get("physicalLocation", {})
                uri = phys.get("artifactLocation", {}).get("uri", "")
                line = phys.get("region", {}).get("startLine")
                loc = f"{uri}:{line}" if line else uri
            rows.append(f"| {level} | {_cell(r.get('ruleId', ''))} | {_cell(loc)} | "
                        f"{_cell(r.get('message', {}).get('text', ''))} |")
        failed = False
        for inv in run.get("invocations") or []:  # a run that stopped before any result: a usage error, ...
            failed |= inv.get("executionSuccessful") is False
            for n in inv.get("toolExecutionNotifications") or []:
                level = levels.get(n.get("level", "error"), "error")
                counts[level] = counts.get(level, 0) + 1
                rows.append(f"| {level} | {_cell((n.get('descriptor') or {}).get('id', ''))} | (the run) | "
                            f"{_cell(n.get('message', {}).get('text', ''))} |")
        if failed and not rows:
            counts["error"] = counts.get("error", 0) + 1
            rows.append("| error |  | (the run) | the check did not complete |")
    head = "## fairspec\n\n"
    if not rows:
        return head + "No findings: every property holds and the spec has no diagnostics.\n"
    tally = ", ".join(f"{n} {k}{'s' if n != 1 else ''}" for k, n in sorted(counts.items()))
    return head + f"{tally}.\n\n| level | rule | where | message |\n|---|---|---|---|\n" + "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in ("lint", "fmt", "summary"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    what, rest = args[0], args[1:]
    if what == "lint":
        return _lint(rest)
    if what == "fmt":
        return _fmt(rest)
    if len(rest) != 1:
        print("summary takes one SARIF file", file=sys.stderr)
        return 2
    try:
        with open(rest[0], encoding="utf-8") as fh:
            log = json.load(fh)
    except (OSError, ValueError) as e:
        print(f"cannot read the SARIF log {rest[0]}: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(summary(log))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
