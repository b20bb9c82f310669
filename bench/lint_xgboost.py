"""`fairspec lint` on a spec whose model is a large XGBoost file (JSON and UBJSON), fit on a data frame
with feature names and a categorical column (so every look-up lint makes has something to read:
the width check of every tree, the names, the categories, the rounds, the objective).

    python bench/lint_xgboost.py [--trees 300 1000] [--repeat 3]

Each row: the file, its size, and lint's wall time in this process (the best of --repeat runs;
fairspec.pipeline.lint, the editor cache off), with the number of times the file was parsed in one
run (calls of fairspec.models.treefile's JSON/UBJSON parse, counted by wrapping json.loads and the
UBJSON reader). Training the models is not timed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

N_FEATURES = 20
SPEC = """features P {
FEATURES
  g : {B, C, A}
  s : {F, M} protected
}
model m = xgboost("FILE")
encode P for m {
ENCODE
  g : code
  s : code
}
property same {
  forall x, x' : P
  require x.* == x'.* except {s}
  ensure label(m(x)) == label(m(x'))
}
"""


def train(folder: Path, trees: int) -> list[Path]:
    import numpy as np
    import pandas as pd
    import xgboost as xgb

    rng = np.random.default_rng(0)
    n = 4000
    cols = {f"x{i}": rng.integers(0, 10, n).astype(float) for i in range(N_FEATURES)}
    g = rng.choice(["A", "B", "C"], n)
    s = rng.integers(0, 2, n).astype(float)
    frame = pd.DataFrame({**cols, "g": pd.Categorical(g, categories=["B", "C", "A"]), "s": s})
    y = ((frame.x0 + frame.x1 + 3 * s + (g == "B") + rng.normal(0, 3, n)) > 10).astype(int)
    clf = xgb.XGBClassifier(n_estimators=trees, max_depth=6, enable_categorical=True, n_jobs=1, random_state=0)
    booster = clf.fit(frame, y).get_booster()
    out = []
    for ext in ("json", "ubj"):
        p = folder / f"m{trees}.{ext}"
        booster.save_model(str(p))
        out.append(p)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trees", type=int, nargs="+", default=[300, 1000])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from fairspec import filecache
    from fairspec.models import treefile
    from fairspec.pipeline import lint

    filecache.ENABLED = False
    parses = [0]
    real_loads, real_ubj = json.loads, treefile._Ubj.value

    def counting_loads(*a, **kw):
        parses[0] += 1
        return real_loads(*a, **kw)

    def counting_ubj(self, t=None, depth=0):
        if depth == 0 and self.pos == 0:
            parses[0] += 1
        return real_ubj(self, t, depth)

    json.loads = counting_loads     # the names peek and treefile both call json.loads
    treefile._Ubj.value = counting_ubj
    feats = "\n".join(f"  x{i} : int in [0, 9]" for i in range(N_FEATURES))
    enc = "\n".join(f"  x{i} : raw" for i in range(N_FEATURES))
    rows = []
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        (d / "fairspec.toml").write_text("")
        for trees in args.trees:
            for model in train(d, trees):
                spec = d / f"{model.stem}_{model.suffix[1:]}.fair"
                spec.write_text(SPEC.replace("FEATURES", feats).replace("ENCODE", enc).replace("FILE", model.name))
                best, codes = float("inf"), None
                for _ in range(args.repeat):
                    parses[0] = 0
                    t = time.perf_counter()
                    res = lint(spec)
                    best = min(best, time.perf_counter() - t)
                    codes = sorted({x.code for x in res.diagnostics}) or ["-"]
                rows.append((model.name, model.stat().st_size / 1e6, best, parses[0], ",".join(codes)))
    print(f"| file | MB | lint s (best of {args.repeat}) | parses in one run | diagnostics |")
    print("|---|---:|---:|---:|---|")
    for name, mb, s, n, codes in rows:
        print(f"| {name} | {mb:.1f} | {s:.3f} | {n} | {codes} |")


if __name__ == "__main__":
    main()
