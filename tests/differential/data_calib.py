"""Session 34: ``calibration_gap`` on data rows (the data family's logged scores), and the same rows read
from a Parquet file (a declaration of its own, ``Prop.spec``).

README ('Group metrics'): each group's expected calibration error over ``bins`` equal-width score bins
(default 10; a score s falls in bin min(floor(s * B), B - 1)) is the sum over its bins of |the bin's
(weighted) score sum - its (weighted) positive labels|, over the group's weight; ``calibration_gap`` is
the largest minus the smallest group's (``compare = to_overall``: the largest |group's - the whole
population's|). The truth: every number an exact Fraction (the scores are multiples of 1/8, the weights the
decimals written, or in the Parquet file the doubles stored).
"""

from __future__ import annotations

import io
from fractions import Fraction

import numpy as np

from .core import Prop, Truth, claim_holds, decimal_text

#: instance seeds from here on get this module's properties (earlier instances are unchanged)
CALIB_FROM = 103_000_000


def ece_gap(df, w, groups, B: int, compare: str = "between_groups"):
    """(the calibration gap, {group: ECE}) in exact rationals; None when a group has no weight."""
    s = [Fraction(v) for v in df["s"]]
    y = df["__y"].to_numpy()
    b = [min(int(v * B), B - 1) for v in s]              # floor of a non-negative Fraction
    keys = list(zip(*[df[g] for g in groups]))

    def ece(rows):
        tot = sum((w[i] for i in rows), Fraction(0))
        if tot == 0:
            return None
        sums, pos = {}, {}
        for i in rows:
            sums[b[i]] = sums.get(b[i], Fraction(0)) + w[i] * s[i]
            pos[b[i]] = pos.get(b[i], Fraction(0)) + (w[i] if y[i] else 0)
        return sum((abs(sums[k] - pos[k]) for k in sums), Fraction(0)) / tot

    per = {}
    for k in sorted(set(keys)):
        per[k] = ece([i for i, kk in enumerate(keys) if kk == k])
        if per[k] is None:
            return None, per
    if compare == "to_overall":
        over = ece(range(len(keys)))
        return max(abs(v - over) for v in per.values()), per
    return max(per.values()) - min(per.values()), per


def _parquet(df, weighted: bool) -> bytes:
    """The kept rows as a typed Parquet file: text columns, age and y as integers, s (and w) as doubles."""
    import pandas as pd

    out = pd.DataFrame({"sex": df["sex"].astype(str), "race": df["race"].astype(str),
                        "age": df["age"].astype(int).astype("int64"), "y": df["y"].astype(int).astype("int64"),
                        "s": df["s"].astype(float)})
    if weighted:
        out["w"] = df["w"].astype(float)
    buf = io.BytesIO()
    out.to_parquet(buf, index=False)
    return buf.getvalue()


def calib_props(seed, df, w, weighted: bool, races, files, family: str, k0: int, count: int = 3) -> list[Prop]:
    """``count`` calibration_gap properties over the logged scores ``s`` (the data family's score mode); from the
    second on, half of them over the same rows read from d.parquet."""
    rng = np.random.default_rng([25, seed, 103])
    pq_spec = None
    out = []
    for k in range(k0, k0 + count):
        crossed = rng.random() < 0.35
        groups = ["sex", "race"] if crossed else ["sex"]
        B = int(rng.choice([2, 3, 4, 10, 10]))
        compare = "to_overall" if rng.random() < 0.3 else "between_groups"
        parquet = k > k0 and rng.random() < 0.5
        ww = w
        if parquet:
            if pq_spec is None:
                files["d.parquet"] = _parquet(df, weighted)
                pq_spec = ('data d = parquet("d.parquet", label = y == 1)\n'
                           "features P from d {\n  sex : {F, M}  protected\n  race : {" + ", ".join(races) +
                           "}  protected\n  age : int in [18, 80]\n}\n"
                           'model m = predictions(d, score = "s", threshold = 0.5)\n')
            if weighted:    # the doubles the file stores, not the decimals the CSV writes
                ww = np.array([Fraction(float(v)) for v in df["w"]], dtype=object)
        value, per = ece_gap(df, ww, groups, B, compare)
        if value is None:
            continue
        op = "<=" if rng.random() < 0.5 else "<"
        t = decimal_text(value)
        c = rng.random()
        if t is not None and c < 0.3:
            thr = t
        elif c < 0.8:
            thr = f"{float(value) + float(rng.choice([-0.2, -0.1, -0.01, 0.1, 0.2, 0.4])):.6g}"
        else:
            thr = str(rng.choice(["0.05", "0.1", "0.2", "0.5"]))
        if thr.startswith("-") or "e" in thr:
            thr = "0"
        if op == "<" and Fraction(thr) <= 0:
            op = "<="
        args = f"calibration_gap(m, groups {' x '.join(groups)}" + ("" if B == 10 and rng.random() < 0.5 else
                                                                     f", bins = {B}") + ")"
        lines = [f"{args} {op} {thr}"]
        if weighted:
            lines.append("weight = w")
        if compare != "between_groups":
            lines.append(f"compare = {compare}")
        lines += [f"bootstrap = {int(rng.choice([100, 200]))}", f"seed = {k}", "min_group_size = 1"]
        name = f"d{k}"
        body = f"property {name} {{\n  " + "\n  ".join(lines) + "\n}"
        status = "holds" if claim_holds(value, op, thr) else "violated"
        truth = Truth(status, value=float(value), value_kind="metric", domain=-1, exact=value,
                      note=f"exact calibration gap {value} over {len(df)} rows; per group "
                           + ", ".join(f"{'/'.join(g)}: {v}" for g, v in per.items()))
        out.append(Prop(name, family, body, truth, {"metric": "calibration_gap", "op": op, "threshold": thr,
                                                    "mode": "score", "weighted": weighted, "crossed": crossed,
                                                    "bins": B, "compare": compare, "parquet": parquet,
                                                    "point_value": True}, 60,
                        spec=pq_spec if parquet else None))
    return out
