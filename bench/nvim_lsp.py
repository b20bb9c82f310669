"""`fairspec lsp` in a real editor: headless Neovim's built-in LSP client (bench/nvim_lsp.lua).

The Adult example is copied to a temporary folder and opened; the script asks for diagnostics,
hover, completion, a quick fix, formatting, rename, symbols and a definition, and edits the buffer
with emoji and CJK text before an error to check that Neovim underlines the right text (the server
speaks UTF-16, Neovim converts to bytes). Each check prints PASS or FAIL; the exit status is 1
when one failed. Without `nvim` on PATH (it is no dependency of fairspec) it says so and exits 0.

    python bench/nvim_lsp.py [--nvim PATH] [--keep]

FAIRSPEC_NVIM_WAIT (ms, default 120000) bounds each wait; FAIRSPEC_NVIM_LOG=1 has Neovim log every
LSP message to cache/nvim/lsp.log in the (kept) folder.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ADULT = ROOT / "examples" / "adult"
SCRIPT = Path(__file__).with_suffix(".lua")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nvim", default=shutil.which("nvim"))
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (its path is printed)")
    sys.path.insert(0, str(ROOT))
    args = ap.parse_args(argv)
    if not args.nvim:
        print("skipped: nvim is not installed")
        return 0
    folder = Path(tempfile.mkdtemp(prefix="fairspec-nvim-"))
    try:
        shutil.copytree(ADULT, folder / "adult", ignore=shutil.ignore_patterns("train.py", "README.md"))
        out = folder / "result.json"
        env = dict(os.environ, FAIRSPEC_NVIM_SPEC=str(folder / "adult" / "adult.fair"),
                   FAIRSPEC_NVIM_OUT=str(out),
                   FAIRSPEC_NVIM_CMD="\t".join([sys.executable, "-m", "fairspec", "lsp"]),
                   PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]),
                   XDG_STATE_HOME=str(folder / "state"), XDG_DATA_HOME=str(folder / "data"),
                   XDG_CACHE_HOME=str(folder / "cache"))
        proc = subprocess.run([args.nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n",
                               "-c", f"luafile {SCRIPT}"], env=env, cwd=folder / "adult",
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900)
        if not out.exists():
            print(f"FAIL: nvim wrote no result (status {proc.returncode})\n{proc.stdout}\n{proc.stderr}")
            return 1
        got = json.loads(out.read_text(encoding="utf-8"))
        print(f"Neovim {got['nvim']}")
        for line in got["log"]:
            print(f"  {line}")
        failed = 0
        for c in got["checks"]:
            failed += not c["ok"]
            detail = "" if c.get("got") is None else f"   got: {json.dumps(c['got'], ensure_ascii=False)[:200]}"
            print(f"{'PASS' if c['ok'] else 'FAIL'}  {c['name']}{detail}")
        final = got.get("final_text")
        if final is not None:  # what Neovim made of the server's last formatting edit
            from fairspec.syntax.format import format_text

            ok = format_text(final) == final
            failed += not ok
            print(f"{'PASS' if ok else 'FAIL'}  the buffer Neovim formatted is the formatter's fixed point")
            got["checks"].append({"ok": ok})
        print(f"{len(got['checks']) - failed} passed, {failed} failed")
        return 1 if failed else 0
    finally:
        if args.keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
