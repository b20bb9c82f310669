"""Session 34: the shipped policies applied (``import "fairspec/policies/..."``, ``apply P(m, ...) as NAME``) to the
data family's model, in a spec of their own (``Prop.spec``: the instance's declarations and the import).

README 'Policies for real rules': ``four_fifths`` states ``disparate_impact(m, groups G) >= threshold`` with
``min_group_size = min_size``; ``nyc_ll144`` states ``impact_ratio`` (each category's selection rate over the most
selected category's; the value the lowest) for sex, race and sex x race, categories under ``exclude_below`` of the
rows left out. The harness applies them with ``min_size = 1`` and ``exclude_below = 0``, so each value is the lowest
over the highest selection rate of the rows (unweighted: the policies state no weight), an exact Fraction; each
property the policy states is one property here, named as fairspec names it (``NAME.property``).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .core import Prop, Truth, claim_holds, decimal_text

#: instance seeds from here on get this module's properties (earlier instances are unchanged)
POLICY_FROM = 103_000_000


def _ratio(df, decided, groups, rates):
    unit = np.array([Fraction(1)] * len(df), dtype=object)
    sel = [r["sel"] for r in rates(df, decided, unit, groups).values()]
    if len(sel) < 2 or any(v is None for v in sel) or max(sel) == 0:
        return None
    return min(sel) / max(sel)


def _threshold(rng, value: Fraction) -> str:
    t = decimal_text(value)
    c = rng.random()
    if t is not None and c < 0.3:
        thr = t
    elif c < 0.8:
        thr = f"{float(value) + float(rng.choice([-0.2, -0.05, 0.05, 0.2])):.6g}"
    else:
        thr = str(rng.choice(["0.8", "0.5", "0.9"]))
    if thr.startswith("-") or "e" in thr:
        thr = "0.1"
    if Fraction(thr) > 1:
        thr = "1"
    return thr


def policy_props(seed, df, decided, spec: str, family: str, k0: int, rates) -> list[Prop]:
    """One application of four_fifths or nyc_ll144 (its one or three properties)."""
    rng = np.random.default_rng([25, seed, 105])
    name = f"pol{k0}"
    if rng.random() < 0.5:
        groups = ["sex", "race"] if rng.random() < 0.3 else ["sex"]
        value = _ratio(df, decided, groups, rates)
        if value is None:
            return []
        thr = _threshold(rng, value)
        pspec = 'import "fairspec/policies/four_fifths.fair"\n' + spec
        text = f"apply four_fifths(m, groups = {' x '.join(groups)}, threshold = {thr}, min_size = 1) as {name}"
        parts = [("disparate_impact", groups)]
        policy = "four_fifths"
    else:
        pspec = 'import "fairspec/policies/nyc_ll144.fair"\n' + spec
        thr = _threshold(rng, _ratio(df, decided, ["sex"], rates) or Fraction(1, 2))
        text = f"apply nyc_ll144(m, sex = sex, race = race, threshold = {thr}, exclude_below = 0, min_size = 1) as {name}"
        parts = [("sex", ["sex"]), ("race_ethnicity", ["race"]), ("intersectional", ["sex", "race"])]
        policy = "nyc_ll144"
    out = []
    for prop, groups in parts:
        value = _ratio(df, decided, groups, rates)
        if value is None:
            return []
        status = "holds" if claim_holds(value, ">=", thr) else "violated"
        truth = Truth(status, value=float(value), value_kind="metric", domain=-1, exact=value,
                      note=f"lowest over highest selection rate of the {len(df)} rows by {' x '.join(groups)}: {value}")
        # every property of the application carries its apply line, written once (core.Instance.write_groups);
        # fairspec names each NAME.property
        out.append(Prop(f"{name}.{prop}", family, text, truth,
                        {"metric": "policy", "policy": policy, "op": ">=", "threshold": thr, "point_value": True},
                        60, spec=pspec))
    return out
