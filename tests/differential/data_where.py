"""Session 34: group metrics on a sub-population, the data declaration's row filter ``where = COND`` (README 'A
short tour': a filter over the raw columns), in a declaration of its own (``Prop.spec``).

The truth: the rows the data family keeps (missing values and ages outside the declared range dropped),
those meeting COND alone, every rate an exact Fraction, as the family's other properties.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .core import Prop, Truth, claim_holds, decimal_text

#: instance seeds from here on get this module's properties (earlier instances are unchanged)
WHERE_FROM = 103_000_000


def _condition(rng, df, races):
    """(the condition as the spec writes it, the rows of ``df`` meeting it)."""
    age = df["age"].astype(int).to_numpy()
    a = int(rng.integers(25, 65))
    c = rng.random()
    if c < 0.35:
        return f"age >= {a}", age >= a
    if c < 0.6:
        return f"age < {a}", age < a
    if c < 0.8 and len(races) == 3:
        return f"race != \"{races[0]}\"", (df["race"] != races[0]).to_numpy()
    return f"age >= {a} and race != \"{races[-1]}\"", (age >= a) & (df["race"] != races[-1]).to_numpy()


def where_props(seed, df, decided, w, weighted: bool, races, spec: str, family: str, k0: int, rates, value_of,
                lower_is_fair, count: int = 2) -> list[Prop]:
    """``count`` properties of the family's group metrics over ``data d = csv(..., where = COND, ...)``."""
    rng = np.random.default_rng([25, seed, 104])
    cond, keep = _condition(rng, df, races)
    if "data d = csv(" not in spec or "label = y == 1" not in spec:
        return []
    wspec = spec.replace("label = y == 1", f"where = {cond}, label = y == 1", 1)
    sub = df[keep].reset_index(drop=True)
    dsub, wsub = np.asarray(decided)[keep], np.asarray(w, dtype=object)[keep]
    out = []
    for k in range(k0, k0 + count):
        groups = ["sex", "race"] if rng.random() < 0.3 else ["sex"]
        metric = str(rng.choice(["statistical_parity", "disparate_impact", "equal_opportunity", "equalized_odds",
                                 "accuracy_difference"]))
        if len(sub) == 0:
            return out
        rt = rates(sub, dsub, wsub, groups)
        value = value_of(metric, rt) if len(rt) > 1 else None
        if value is None:
            metric = "statistical_parity"
            value = value_of(metric, rt) if len(rt) > 1 else None
        if value is None:
            continue
        lower = metric in lower_is_fair
        op = ("<=" if rng.random() < 0.5 else "<") if lower else (">=" if rng.random() < 0.5 else ">")
        t = decimal_text(value)
        c = rng.random()
        if t is not None and c < 0.3:
            thr = t
        elif c < 0.8:
            thr = f"{float(value) + float(rng.choice([-0.3, -0.1, 0.1, 0.3])):.6g}"
        else:
            thr = str(rng.choice(["0.1", "0.2", "0.8", "0.5"]))
        if thr.startswith("-") or "e" in thr:
            thr = "0"
        if Fraction(thr) > 1:
            thr = "1"
        if not lower and op == ">" and Fraction(thr) >= 1:
            op = ">="
        if lower and op == "<" and Fraction(thr) <= 0:
            op = "<="
        lines = [f"{metric}(m, groups {' x '.join(groups)}) {op} {thr}"]
        if weighted:
            lines.append("weight = w")
        lines += [f"bootstrap = {int(rng.choice([100, 200]))}", f"seed = {k}", "min_group_size = 1"]
        name = f"d{k}"
        body = f"property {name} {{\n  " + "\n  ".join(lines) + "\n}"
        status = "holds" if claim_holds(value, op, thr) else "violated"
        truth = Truth(status, value=float(value), value_kind="metric", domain=-1, exact=value,
                      note=f"exact value {value} over the {len(sub)} of {len(df)} rows where {cond}")
        out.append(Prop(name, family, body, truth, {"metric": metric, "op": op, "threshold": thr, "where": cond,
                                                    "weighted": weighted, "point_value": True}, 60, spec=wspec))
    return out
