"""Coverage of fairspec's `holds (estimated)` bounds (session 36, brief h7).

Each scenario is a population whose metric is known exactly; N samples are drawn from it, `fairspec check` runs
on each, and the table counts the verdicts, how often the true value lies outside the printed interval, and
a one-sided binomial test of that count against alpha = 1 - confidence (and of the wrong verdicts against
alpha / 2). Writes bench/results/estimate_coverage_s36.md.

  PYTHONPATH=. python bench/estimate_coverage.py [--reps 1000] [--out bench/results/estimate_coverage_s36.md]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

DATA_SPEC = ('data d = csv("d.csv", label = y == 1)\nfeatures F from d {{\n  g : {{A, B}} protected\n}}\n'
             'model m = predictions(d, decision = "dec")\nproperty p {{ {claim} }}\n')
DIST_SPEC = ('data people = csv("d.csv", label = hired == 1)\nfeatures P from people {{\n  grp : {{no, yes}} protected\n'
             '  member : bool\n}}\nmodel r = rule(member)\nproperty p {{ {claim} }}\n')


def _data_rows(seed: int, n: int, p_b: float) -> str:
    """g, y uniform; dec = y in A; in B dec ~ Bern(p_b) where y = 1; dec = 0 where y = 0."""
    r = np.random.default_rng(seed)
    g, y = r.integers(0, 2, n), r.integers(0, 2, n)
    dec = np.where(y == 1, np.where(g == 0, 1, (r.random(n) < p_b).astype(int)), 0)
    return "g,dec,y\n" + "".join(f"{'AB'[a]},{b},{c}\n" for a, b, c in zip(g, dec, y))


def _dist_rows(seed: int, n: int, py: float, t0: float, t1: float) -> str:
    """grp uniform, hired ~ Bern(py), member ~ Bern(t_grp) when hired else Bern(0.3)."""
    r = np.random.default_rng(seed)
    g, h = r.integers(0, 2, n), (r.random(n) < py).astype(int)
    m = np.where(h == 1, r.random(n) < np.where(g == 1, t1, t0), r.random(n) < 0.3).astype(int)
    return "grp,hired,member\n" + "".join(f"{'no' if a == 0 else 'yes'},{b},{c}\n" for a, b, c in zip(g, h, m))


CAL_SPEC = ('data d = csv("d.csv", label = y == 1)\nfeatures F from d {{\n  g : {{A, B}} protected\n}}\n'
            'model m = predictions(d, score = "s", threshold = 0.5)\nproperty p {{ {claim} }}\n')


def _cal_rows(seed: int, n: int, shift: float) -> str:
    """g uniform, score s uniform in [0, 1]; y ~ Bern(s) in A (calibrated), Bern(min(1, s + shift)) in B."""
    r = np.random.default_rng(seed)
    g, s = r.integers(0, 2, n), r.random(n)
    y = (r.random(n) < np.clip(s + shift * (g == 1), 0, 1)).astype(int)
    return "g,s,y\n" + "".join(f"{'AB'[a]},{float(b)!r},{c}\n" for a, b, c in zip(g, s, y))


def _cal_truth(shift: float, bins: int = 10) -> float:
    """B's ECE over 10 equal-width bins (A's is 0): sum over bins of |E[(s - min(1, s + shift)) 1{s in bin}]|,
    integrated exactly (piecewise linear)."""
    from scipy.integrate import quad

    return sum(abs(quad(lambda s: s - min(1.0, s + shift), k / bins, (k + 1) / bins, points=[1 - shift])[0])
               for k in range(bins))


SCENARIOS = [
    # name, spec template, claim, rows(seed), truth, does the claim hold in truth
    ("data: equal_opportunity, B's TPR 0.94, 120 rows", DATA_SPEC, "equal_opportunity(m, groups g) <= 0.05",
     lambda s: _data_rows(s, 120, 0.94), 0.06, False),
    ("data: equal_opportunity, B's TPR 0.70, 120 rows", DATA_SPEC, "equal_opportunity(m, groups g) <= 0.2",
     lambda s: _data_rows(s, 120, 0.70), 0.30, False),
    ("data: equal_opportunity_ratio, B's TPR 0.94, 400 rows", DATA_SPEC, "equal_opportunity_ratio(m, groups g) >= 0.95",
     lambda s: _data_rows(s, 400, 0.94), 0.94, False),
    ("distribution conditional(DATA): equal_opportunity, 1% positives, 20,000 rows", DIST_SPEC,
     "equal_opportunity(r, groups grp, distribution conditional(people)) <= 0.1",
     lambda s: _dist_rows(s, 20000, 0.01, 0.5, 0.65), 0.15, False),
    ("distribution conditional(DATA): statistical_parity, 4,000 rows", DIST_SPEC,
     "statistical_parity(r, groups grp, distribution conditional(people)) <= 0.01",
     lambda s: _dist_rows(s, 4000, 0.3, 0.5, 0.65), 0.045, False),
    ("data: calibration_gap, B's label 0.06 above its score, 400 rows", CAL_SPEC,
     "calibration_gap(m, groups g) <= 0.05", lambda s: _cal_rows(s, 400, 0.06), _cal_truth(0.06), False),
    ("data: calibration_gap, B's label 0.06 above its score, 4,000 rows", CAL_SPEC,
     "calibration_gap(m, groups g) <= 0.05", lambda s: _cal_rows(s, 4000, 0.06), _cal_truth(0.06), False),
]


def run(reps: int, only: str = "") -> list[dict]:
    from scipy.stats import binomtest

    from fairspec.pipeline import check

    out = []
    for name, spec, claim, rows, truth, holds in SCENARIOS:
        if only and only not in name:
            continue
        d = Path(tempfile.mkdtemp(prefix="fairspec_cov_"))
        (d / "s.fair").write_text(spec.format(claim=claim))
        counts = {"holds": 0, "violated": 0, "unknown": 0}
        outside = proved = 0
        t0 = time.perf_counter()
        for s in range(reps):
            (d / "d.csv").write_text(rows(s))
            v = check(d / "s.fair").verdicts[0]
            counts[v.status] += 1
            proved += v.how == "proved"
            if v.bound is not None and not (v.bound[0] <= truth <= v.bound[1]):
                outside += 1
        wrong = counts["violated"] if holds else counts["holds"]
        out.append(dict(name=name, claim=claim, truth=truth, reps=reps, **counts, wrong=wrong, outside=outside,
                        proved=proved, p_outside=binomtest(outside, reps, 0.05, alternative="greater").pvalue,
                        p_wrong=binomtest(wrong, reps, 0.025, alternative="greater").pvalue,
                        seconds=time.perf_counter() - t0))
    return out


def table(rows: list[dict]) -> str:
    head = ("| scenario | claim | truth | samples | holds | violated | unknown | wrong verdicts | truth outside "
            "interval | p (outside > 5%) | p (wrong > 2.5%) |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
    return head + "".join(
        f"| {r['name']} | `{r['claim']}` | {r['truth']:g} | {r['reps']} | {r['holds']} | {r['violated']} | "
        f"{r['unknown']} | {r['wrong']} | {r['outside']} | {r['p_outside']:.3g} | {r['p_wrong']:.3g} |\n" for r in rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--out", default="bench/results/estimate_coverage_s36.md")
    ap.add_argument("--only", default="", help="only the scenarios whose name contains this")
    a = ap.parse_args()
    rows = run(a.reps, a.only)
    text = ("# Coverage of `holds (estimated)` bounds (session 36, h7)\n\n`PYTHONPATH=. python bench/estimate_coverage.py "
            f"--reps {a.reps}`; confidence 0.95 (the default) everywhere. A wrong verdict is a holds of a claim the "
            "population violates. p: one-sided binomial tests (a small p means the bound is NOT valid).\n\n"
            + table(rows))
    Path(a.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
