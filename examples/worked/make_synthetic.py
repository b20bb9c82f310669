"""Regenerate data/synthetic_1.csv: Justicia's Synthetic Example 1 (seeded).

older ~ Bernoulli(0.5) (the protected group, age >= 40);
income  ~ N(0.6, 0.1) if older else N(0.4, 0.1);
fitness ~ N(0.3, 0.1) if older else N(0.7, 0.1).

Under this distribution the Figure-1 tree (synthetic_1.fair) has disparate
impact 0.262 and statistical parity 0.521 (analytic, from the normal CDFs).

    python examples/worked/make_synthetic.py [--rows 50000] [--seed 1]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def rows(n: int, seed: int):
    rng = np.random.default_rng(seed)
    older = rng.random(n) < 0.5
    income = np.where(older, rng.normal(0.6, 0.1, n), rng.normal(0.4, 0.1, n))
    fitness = np.where(older, rng.normal(0.3, 0.1, n), rng.normal(0.7, 0.1, n))
    return older, income, fitness


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=str(Path(__file__).with_name("data") / "synthetic_1.csv"))
    a = ap.parse_args(argv)
    older, income, fitness = rows(a.rows, a.seed)
    lines = ["older,income,fitness"]
    lines += [f"{'true' if o else 'false'},{i:.4f},{f:.4f}" for o, i, f in zip(older, income, fitness)]
    Path(a.out).write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
