"""The soundness campaign (issue 20): small random instances of every family, each property's
truth computed by enumerating its domain on the model's own runtime, fairspec's verdict judged
against it (tests/differential/).

    python bench/soundness.py --seed 1 --count 60 --workers 2
    python bench/soundness.py --families network,trees --count 20

Prints per family: instances, properties, wrong, unknown, unknown on small domains (at most
1,000 points), rejected specs, harness errors, seconds; then the wrong verdicts by defect class.
Writes bench/results/soundness.md and .json (unless --no-write) and, per wrong verdict (the
first of each defect class first, at most --repro-cap), a self-contained reproducer folder
under bench/results/soundness/repro/: spec.fair (that property alone), the model and data
files, truth.json (the truth, fairspec's verdict, and whether the folder reproduces it).
Re-run one with `fairspec check bench/results/soundness/repro/<dir>/spec.fair --format json`.

Targets: 0 wrong verdicts in at least 5,000 properties over all families (each violated with a
witness that replays); unknown on at most 1% of the properties whose domain has at most
1,000 points.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from differential import campaign  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--families", default="all", help="comma-separated, or 'all'")
    ap.add_argument("--count", type=int, default=40, help="instances per family")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repro-cap", type=int, default=40)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv)

    gens = campaign.families()
    fams = list(gens) if a.families == "all" else [f.strip() for f in a.families.split(",") if f.strip()]
    bad = [f for f in fams if f not in gens]
    if bad:
        ap.error(f"unknown families {bad}; known: {sorted(gens)}")
    tasks = [(f, campaign.instance_seed(a.seed, i)) for i in range(a.count) for f in fams]
    t0 = time.perf_counter()
    load0 = os.getloadavg()[0]
    cb = None if a.quiet else campaign.progress_printer(len(tasks))
    results = campaign.run_tasks(tasks, workers=a.workers, deadline=lambda fam: 900.0, progress=cb)
    wall = time.perf_counter() - t0
    load1 = os.getloadavg()[0]
    t = campaign.tally(results)
    tg = campaign.targets(t)
    print()
    print(campaign.table(t))
    print()
    print(campaign.classes_table(results))
    print()
    print(f"wall {wall:.0f} s on {a.workers} workers; load {load0:.1f} -> {load1:.1f}; "
          f"targets: 0 wrong in >= 5,000 properties: {tg['zero_wrong_in_5000']} ({tg['wrong']} wrong in "
          f"{tg['properties']}); unknown on small domains {tg['unknown_small']} / {tg['small']} "
          f"({100 * tg['unknown_small_share']:.1f}%, target <= 1%)")
    errors = [r for r in results if r.get("error")]
    for r in errors[:5]:
        print(f"harness error {r['family']} {r['seed']}: {r['error']}", file=sys.stderr)
    if a.no_write:
        return 0
    repro_root = a.out / "soundness" / "repro"
    repros = campaign.write_reproducers(results, repro_root, cap=a.repro_cap)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    doc = {"seed": a.seed, "families": fams, "count": a.count, "workers": a.workers, "wall_seconds": round(wall, 1),
           "load": [round(load0, 2), round(load1, 2)], "commit": commit, "python": platform.python_version(),
           "tally": t, "targets": tg, "reproducers": repros,
           "wrong": campaign.wrong_outcomes(results),
           "unknown_small": [o for r in results for o in r["outcomes"]
                             if o["klass"] == "unknown" and campaign.is_small(o)][:200],
           "rejected": [o for r in results for o in r["outcomes"] if o["klass"] == "rejected"][:50],
           "harness_errors": errors[:20]}
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "soundness.json").write_text(json.dumps(doc, indent=1, sort_keys=True, default=str) + "\n")
    md = [f"# Soundness campaign (bench/soundness.py --seed {a.seed} --count {a.count} --workers {a.workers} "
          f"--families {','.join(fams)})", "",
          f"Commit {commit}; wall {wall:.0f} s on {a.workers} workers; load {load0:.1f} -> {load1:.1f}. "
          "Every property's truth is computed by enumerating its domain on the model's own runtime; "
          "`seconds` is the sum of the instances' times (generation, truth and fairspec's check).", "",
          campaign.table(t), "", "## Wrong verdicts by family and issue-20 class", "",
          "The class is a best guess from the verdict, its reason and the generator's hints (a tie that "
          "the other strictness would decide otherwise, ...); each reproducer is the evidence.", "",
          campaign.classes_table(results), "", "## Wrong verdicts by defect tag and setting", "",
          campaign.defects_table(t), "",
          f"Targets: 0 wrong in >= 5,000 properties: **{tg['zero_wrong_in_5000']}** ({tg['wrong']} wrong in "
          f"{tg['properties']}); unknown on domains <= 1,000 points: {tg['unknown_small']} / {tg['small']} "
          f"({100 * tg['unknown_small_share']:.1f}%, target <= 1%).", "",
          "## Reproducers", "",
          "Each folder holds spec.fair (the property alone), its model and data files and truth.json "
          "(`fairspec check spec.fair --format json` shows the verdict).", ""]
    for r in repros:
        rel = os.path.relpath(r["path"], ROOT)
        md.append(f"- `{rel}` -- {r['class']}; {r['defect']}{'' if r['reproduces'] else ' (did not reproduce alone)'}: "
                  f"{r['why'][:200]}")
    (a.out / "soundness.md").write_text("\n".join(md) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
