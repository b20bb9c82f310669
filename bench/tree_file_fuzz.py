"""Mutation fuzzing of XGBoost and LightGBM model files against fairspec.models.treefile (issue 21, class 3).

    nice python bench/tree_file_fuzz.py [--cases 400] [--seed 7] [--out bench/results/tree_file_fuzz.md]

A small valid model of each library is trained, then each case changes one to three numbers of
one tree (children, split features, thresholds, leaf values, parents, default_left, split_type;
LightGBM's num_leaves, num_cat, decision_type, max_feature_idx, tree_sizes) to values chosen to
break things (-1, 0, 2^31-1, NaN, inf, 1e308, ...).  A file treefile refuses is counted; a file it
passes is loaded and predicted by the library in a child process (20 s limit): a signal (a native
crash) or a time-out is a finding, written with its case to --out.  0 findings is the target.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO)]

from fairspec.models import ModelLoadError  # noqa: E402
from fairspec.models.treefile import check_lightgbm, check_xgboost  # noqa: E402

VALUES = [-1, 0, 1, 2, 3, 5, 6, 7, 100, -2, -5, 2 ** 31 - 1, float("nan"), float("inf"), 1e308]
XGB_KEYS = ["left_children", "right_children", "split_indices", "split_conditions", "default_left", "split_type",
            "parents", "base_weights"]
LGB_KEYS = r"(left_child|right_child|split_feature|threshold|leaf_value|num_leaves|decision_type|num_cat|" \
           r"max_feature_idx|tree_sizes)="


def _models(folder: Path) -> tuple[dict, str]:
    import lightgbm as lgb
    import numpy as np
    import xgboost as xgb

    rng = np.random.default_rng(0)
    X = rng.random((300, 4))
    y = (X[:, 0] + X[:, 1] > 1).astype(int)
    xgb.XGBClassifier(n_estimators=3, max_depth=2, random_state=0, n_jobs=1).fit(X, y).get_booster() \
        .save_model(str(folder / "m.json"))
    lgb.LGBMClassifier(n_estimators=3, max_depth=2, random_state=0, n_jobs=1, verbose=-1, min_child_samples=5) \
        .fit(X, y).booster_.save_model(str(folder / "m.txt"))
    return json.loads((folder / "m.json").read_text()), (folder / "m.txt").read_text()


def _library(code: str) -> str:
    try:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return "hang"
    return "crash" if r.returncode < 0 else ("error" if r.returncode else "ok")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=400)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "tree_file_fuzz.md"))
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    stats = {"refused": 0, "passed, library ok": 0, "passed, library error": 0, "passed, crash": 0,
             "passed, hang": 0}
    findings = []
    t0 = time.time()
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        base_x, base_l = _models(folder)
        for i in range(args.cases):
            changes = []
            if i % 2 == 0:
                doc = json.loads(json.dumps(base_x))
                trees = doc["learner"]["gradient_booster"]["model"]["trees"]
                t = rnd.randrange(len(trees))
                for _ in range(rnd.randint(1, 3)):
                    k = rnd.choice(XGB_KEYS)
                    j, v = rnd.randrange(len(trees[t][k])), rnd.choice(VALUES)
                    trees[t][k][j] = v
                    changes.append(f"tree {t} {k}[{j}] = {v}")
                p = folder / f"c{i}.json"
                p.write_text(json.dumps(doc))
                check = check_xgboost
                code = (f"import xgboost as x, numpy as np; b = x.Booster(); b.load_model({str(p)!r}); "
                        "b.predict(x.DMatrix(np.random.rand(200, 4) * 10 - 5))")
            else:
                lines = base_l.split("\n")
                idx = [j for j, line in enumerate(lines) if re.match(LGB_KEYS, line)]
                for _ in range(rnd.randint(1, 3)):
                    j = rnd.choice(idx)
                    k, v = lines[j].split("=", 1)
                    parts = v.split()
                    q, new = rnd.randrange(len(parts)), str(rnd.choice(VALUES))
                    parts[q] = new
                    lines[j] = k + "=" + " ".join(parts)
                    changes.append(f"line {j + 1} {k}[{q}] = {new}")
                p = folder / f"c{i}.txt"
                p.write_text("\n".join(lines))
                check = check_lightgbm
                code = (f"import lightgbm as l, numpy as np; b = l.Booster(model_file={str(p)!r}); "
                        "b.predict(np.random.rand(200, 4) * 10 - 5)")
            try:
                check(p)
            except ModelLoadError:
                stats["refused"] += 1
                continue
            res = _library(code)
            stats[f"passed, library {res}" if res in ("ok", "error") else f"passed, {res}"] += 1
            if res in ("crash", "hang"):
                findings.append((p.suffix, res, changes))
            if (i + 1) % 50 == 0:
                print(f"{i + 1} cases, {stats}", flush=True)
    seconds = time.time() - t0
    out = [f"# Tree model file fuzzing (bench/tree_file_fuzz.py --cases {args.cases} --seed {args.seed})", "",
           f"{args.cases} mutated files (half XGBoost JSON, half LightGBM text), {seconds:.0f} s.", "",
           "| outcome | files |", "|---|---|", *(f"| {k} | {v} |" for k, v in stats.items()), "",
           f"Findings (a file treefile passed that crashed or hung the library): {len(findings)}", ""]
    out += [f"- {suffix} {res}: {'; '.join(ch)}" for suffix, res, ch in findings]
    Path(args.out).write_text("\n".join(out) + "\n")
    print("\n".join(out))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
