"""The language server's latency and memory (issue 14).

Targets: diagnostics published within 100 ms of a change to a 200-line spec
after the first open (models and data cached), the server's resident memory
under 300 MB with the Adult example open, and rename and semantic tokens in
under 50 ms on the largest shipped spec.

`fairspec lsp` runs as a subprocess and fairspec's LSP client (pygls) speaks
to it over stdio, as an editor does. The 200-line spec is the Adult example
(three models, the data, two shipped policies) with 20 more groups and 20
more properties, written to a temporary folder. Each change replaces the
whole text, alternating a changed threshold (still valid) with a misspelt
group (an FS205 error); the latency is from sending didChange to receiving
publishDiagnostics, client overhead included.

Baselines, measured in the same run on the same text: `lint()` in this
process with the file cache off (every model header and data sample read
again, imports warm), and `fairspec lint` as a new process (what an editor
that shells out to the command line pays per change).

With --half-typed, the cost of a text that does not parse instead: the server
lints it (the parse error is its diagnostic), publishes that, and only then
lints it again without the declarations that do not parse (the index hover,
definitions and completion navigate meanwhile; until it is built, requests are
answered from the older one).  On the Adult example and the largest shipped spec,
alternating a clean text with one whose first property has a half-typed line,
it prints change -> diagnostics in the server for each, and in this process
the two lints' parts (analyse, analyse(recover=True)) against the clean one.
(Before the diagnostics went out ahead of the second lint, the half-typed change
took 1.3-1.5x the clean one's time to its diagnostics; now about the first lint's.)

    python bench/lsp.py [--changes 40] [--out bench/results/lsp.json]
    python bench/lsp.py --half-typed [--changes 40] [--out bench/results/lsp_half_typed.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ADULT = ROOT / "examples" / "adult" / "adult.fair"


def spec_200(folder: Path) -> Path:
    text = ADULT.read_text(encoding="utf-8")
    base = ADULT.parent.resolve()
    text = text.replace('"data/', f'"{base}/data/').replace('"models/', f'"{base}/models/')
    lines = text.rstrip("\n").split("\n") + [""]
    i = 0
    while len(lines) < 200 - 4:
        lines += [f"group band_{i} = age >= {20 + 2 * i}"]
        if len(lines) + 4 <= 200:
            lines += [f"property parity_{i} {{", f"  statistical_parity(dt, groups sex x band_{i}) <= 0.25",
                      "  bootstrap = 200", "}"]
        i += 1
    lines += [""] * (200 - len(lines))
    p = folder / "adult_200.fair"
    p.write_text("\n".join(lines[:200]) + "\n", encoding="utf-8")
    return p


def rss_mb(pid: int) -> tuple[float, float]:
    """(resident, peak resident) in MB, from /proc."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = line.partition(":")
        if k in ("VmRSS", "VmHWM"):
            out[k] = int(v.split()[0]) / 1024
    return out["VmRSS"], out["VmHWM"]


async def serve(spec: Path, changes: int) -> dict:
    from fairspec.lsp.client import Session

    res = {}
    async with Session(wait=600) as s:
        t = time.perf_counter()
        await s.opened(ADULT)
        res["open_adult_s"] = time.perf_counter() - t
        res["rss_adult_mb"], res["peak_adult_mb"] = rss_mb(s.pid)

        t = time.perf_counter()
        uri, text, first = await s.opened(spec)
        res["open_200_s"] = time.perf_counter() - t
        assert not [d for d in first if d.severity == 1], first
        lat = []
        for k in range(changes):
            if k % 2 == 0:
                new = text.replace("<= 0.25", f"<= 0.{25 + k % 10}", 1)
            else:
                new = text.replace("groups sex x band_3)", "groups sex x bnad_3)")
            n = s.seen(uri)
            t = time.perf_counter()
            s.change(uri, new)
            diags = await s.diagnostics(uri, n)
            lat.append(time.perf_counter() - t)
            assert (k % 2 == 1) == any(d.code == "FS205" for d in diags), diags
        res["latency_s"] = lat
        res["rss_end_mb"], res["peak_end_mb"] = rss_mb(s.pid)
        # rename and semantic tokens (issue 26: under 50 ms) on the largest shipped spec, text unchanged
        from lsprotocol import types as T

        big = max(ROOT.glob("examples/**/*.fair"), key=lambda p: p.stat().st_size)
        buri, btext, _ = await s.opened(big)
        doc = T.TextDocumentIdentifier(uri=buri)
        name_at = s.pos(btext, "\nfeatures ", len("\nfeatures "))  # the first feature set's name
        ren, sem = [], []
        for _ in range(max(10, changes // 2)):
            t = time.perf_counter()
            await s.client.text_document_rename_async(T.RenameParams(text_document=doc, position=name_at,
                                                                     new_name="Renamed"))
            ren.append(time.perf_counter() - t)
            t = time.perf_counter()
            await s.client.text_document_semantic_tokens_full_async(T.SemanticTokensParams(text_document=doc))
            sem.append(time.perf_counter() - t)
        res["largest_spec"] = str(big.relative_to(ROOT))
        res["rename_s"], res["semantic_tokens_s"] = ren, sem
    return res


def _fairspec() -> list[str]:
    """The `fairspec` command: on PATH, else this Python's module (a venv not activated)."""
    import shutil
    import sys

    exe = shutil.which("fairspec")
    return [exe] if exe else [sys.executable, "-m", "fairspec"]


def baselines(spec: Path, runs: int) -> dict:
    from fairspec.pipeline import lint
    from fairspec import filecache

    text = spec.read_text(encoding="utf-8")
    lint(spec, sources={spec: text})  # imports warm
    cold = []
    for _ in range(runs):
        t = time.perf_counter()
        lint(spec, sources={spec: text})
        cold.append(time.perf_counter() - t)
    filecache.enable()
    lint(spec, sources={spec: text})
    warm = []
    for _ in range(runs):
        t = time.perf_counter()
        lint(spec, sources={spec: text})
        warm.append(time.perf_counter() - t)
    cli = []
    for _ in range(max(3, runs // 4)):
        t = time.perf_counter()
        subprocess.run([*_fairspec(), "lint", str(spec)], capture_output=True, check=False)
        cli.append(time.perf_counter() - t)
    return {"lint_in_process_uncached_s": cold, "lint_in_process_cached_s": warm, "cli_lint_s": cli}


def half_typed_text(text: str) -> str:
    """`text` with its first property's first body line cut after its first "(" (a call being typed)."""
    at = text.index("\nproperty ")
    line = text.index("\n", at + 1) + 1
    end = text.index("\n", line)
    paren = text.index("(", line, end)
    return text[:paren + 1] + text[end:]


async def serve_half_typed(specs: list[Path], changes: int) -> dict:
    """change -> diagnostics in the server, a clean text (a comment changed) against a half-typed one.
    Each change comes after a pause longer than the server's debounce (as keystrokes a moment apart),
    so it is linted at once: the latency is the lints' and the messages', not the debounce's wait."""
    from fairspec.lsp.client import Session
    from fairspec.lsp.indexes import DEBOUNCE

    res = {}
    async with Session(wait=600) as s:
        for spec in specs:
            uri, text, _ = await s.opened(spec)
            broken = half_typed_text(text)
            lat = {"clean": [], "half_typed": []}
            for k in range(changes):
                kind = "half_typed" if k % 2 else "clean"
                new = (broken if k % 2 else text) + f"# change {k}\n"
                await asyncio.sleep(2 * DEBOUNCE)
                n = s.seen(uri)
                t = time.perf_counter()
                s.change(uri, new)
                diags = await s.diagnostics(uri, n)
                lat[kind].append(time.perf_counter() - t)
                assert bool(k % 2) == any(d.code == "FS001" or d.severity == 1 for d in diags), diags
            res[str(spec.relative_to(ROOT))] = lat
    return res


def in_process_half_typed(specs: list[Path], runs: int) -> dict:
    """The analyses the server runs per change, timed in this process (file cache on, as the server)."""
    from fairspec import filecache
    from fairspec.lsp import analysis as A

    filecache.enable()
    res = {}
    for spec in specs:
        path = str(spec.resolve())
        text = spec.read_text(encoding="utf-8")
        broken = half_typed_text(text)
        t_clean, t_first, t_second = [], [], []
        for k in range(runs):
            src = {path: text + f"# change {k}\n"}
            t = time.perf_counter()
            assert A.analyse(path, src).ok
            t_clean.append(time.perf_counter() - t)
            src = {path: broken + f"# change {k}\n"}
            t = time.perf_counter()
            assert not A.analyse(path, src).ok
            t_first.append(time.perf_counter() - t)
            t = time.perf_counter()
            assert A.analyse(path, src, recover=True).ok
            t_second.append(time.perf_counter() - t)
        res[str(spec.relative_to(ROOT))] = {"clean_s": t_clean, "half_typed_first_s": t_first,
                                            "half_typed_recovering_s": t_second}
    return res


def main_half_typed(changes: int, out: str) -> None:
    load = os.getloadavg()
    big = max(ROOT.glob("examples/**/*.fair"), key=lambda p: p.stat().st_size)
    specs = [ADULT, big]
    server = asyncio.run(serve_half_typed(specs, changes))
    local = in_process_half_typed(specs, changes // 2)
    print(f"fairspec lsp, a half-typed text against a clean one, {changes} changes per spec; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'':62s} {'ms':>8s} {'x clean':>8s}")
    med = statistics.median
    for name in server:
        sv, lc = server[name], local[name]
        clean = med(sv["clean"])
        print(name)
        print(f"  {'server: change -> diagnostics, clean (median)':60s} {clean * 1000:8.1f} {1:8.2f}")
        v = med(sv["half_typed"])
        print(f"  {'server: change -> diagnostics, half-typed (median)':60s} {v * 1000:8.1f} {v / clean:8.2f}")
        c = med(lc["clean_s"])
        print(f"  {'in process: analyse, clean (median)':60s} {c * 1000:8.1f} {1:8.2f}")
        a, b = med(lc["half_typed_first_s"]), med(lc["half_typed_recovering_s"])
        print(f"  {'in process: analyse, half-typed (median)':60s} {a * 1000:8.1f} {a / c:8.2f}")
        print(f"  {'in process: analyse(recover=True), half-typed (median)':60s} {b * 1000:8.1f} {b / c:8.2f}")
        print(f"  {'in process: both, half-typed':60s} {(a + b) * 1000:8.1f} {(a + b) / c:8.2f}")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps({"load_average": load, "changes": changes, "server": server,
                                     "in_process": local}, indent=2) + "\n", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--changes", type=int, default=40)
    ap.add_argument("--out", default=None)
    ap.add_argument("--half-typed", action="store_true", help="the cost of a text that does not parse")
    args = ap.parse_args()
    if args.half_typed:
        return main_half_typed(args.changes, args.out or str(ROOT / "bench" / "results" / "lsp_half_typed.json"))
    args.out = args.out or str(ROOT / "bench" / "results" / "lsp.json")
    load = os.getloadavg()
    # inside the repository: the spec's project (the folder with .git) holds the Adult files it reads
    with tempfile.TemporaryDirectory(dir=ROOT / "bench", prefix=".lsp-") as tmp:
        spec = spec_200(Path(tmp))
        server = asyncio.run(serve(spec, args.changes))
        base = baselines(spec, args.changes)
    lat = sorted(server["latency_s"])
    med = statistics.median(lat)
    p90 = lat[int(0.9 * (len(lat) - 1))]
    rows = [("server: change -> diagnostics (median)", med, 0.100),
            ("server: change -> diagnostics (p90)", p90, 0.100),
            ("server: change -> diagnostics (max)", lat[-1], None),
            ("baseline: lint() in process, file cache off (median)",
             statistics.median(base["lint_in_process_uncached_s"]), None),
            ("baseline: lint() in process, file cache on (median)",
             statistics.median(base["lint_in_process_cached_s"]), None),
            ("baseline: `fairspec lint` new process (median)", statistics.median(base["cli_lint_s"]), None),
            (f"rename on {server['largest_spec']} (median)", statistics.median(server["rename_s"]), 0.050),
            (f"semantic tokens on {server['largest_spec']} (median)", statistics.median(server["semantic_tokens_s"]),
             0.050)]
    print(f"fairspec lsp, 200-line spec, {args.changes} changes; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'':58s} {'ms':>8s} {'x server':>9s} {'target':>8s}")
    for name, v, target in rows:
        print(f"{name:58s} {v * 1000:8.1f} {v / med:9.2f} {'' if target is None else f'{target * 1000:.0f}':>8s}")
    print(f"first open: Adult {server['open_adult_s']:.2f} s, the 200-line spec {server['open_200_s']:.2f} s")
    print(f"resident memory: {server['rss_adult_mb']:.0f} MB with Adult open (peak {server['peak_adult_mb']:.0f} MB; "
          f"target < 300 MB), {server['rss_end_mb']:.0f} MB after the 200-line spec and its changes "
          f"(peak {server['peak_end_mb']:.0f} MB)")
    verdict = {"latency_p90_under_100ms": p90 < 0.100, "latency_median_under_100ms": med < 0.100,
               "rename_median_under_50ms": statistics.median(server["rename_s"]) < 0.050,
               "semantic_tokens_median_under_50ms": statistics.median(server["semantic_tokens_s"]) < 0.050,
               "rss_adult_under_300mb": server["rss_adult_mb"] < 300}
    print("targets met:", ", ".join(f"{k} = {v}" for k, v in verdict.items()))
    out = {"load_average": load, "changes": args.changes, "server": server, "baselines": base,
           "median_s": med, "p90_s": p90, "targets": verdict}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
