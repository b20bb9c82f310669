"""Session 34: FVGM's fairness influence (``influence(...)``) and path-specific causal fairness
(``path_specific(..., mediators {...})``) over the distribution family's declared network.

The truth is exact and computed here from the definitions (README 'Group metrics', the docstring of
``fairspec.analyses.group_metrics_exact``), not through fairspec:

* influence: FIF(S) = Q(D) - Q(D_-S), where D_-S hands the classifier independent uniform values
  (1/k each) for the features of S while every other variable (a child of a feature of S too) keeps
  the declared network; Q is statistical parity (max - min PPV) or disparate impact (min / max);
  the claim's value is the largest |FIF(S)| over the subsets (default: each non-protected feature the
  classifier reads, alone -- a feature it does not read has FIF 0, so the largest over every
  non-protected feature is the same number).
* path_specific: a_max is the most favoured group of the declared network; each mediator's edges from
  the protected features see a_max's values, every other edge the group's own; the value is max - min
  of the PPVs so obtained. Where several groups tie for most favoured, the value is computed for each:
  when they disagree on the verdict the truth is ``reading-dependent`` (meta ``amax_tie``; only unknown is
  right), as the definition does not say which a_max is taken (a `holds (proved)` on the first of them was
  fairspec's answer until session 34: distribution-104000208-q9).

Every probability is a Fraction of the decimals as written; the classifier's decision on each grid
point is the family's own (a rule in rationals, a tree by its library's predict).
"""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np

from .core import Prop, Truth, claim_holds, decimal_text

#: instance seeds from here on get the properties of this module (earlier instances are unchanged)
CAUSAL_FROM = 103_000_000


def _cond_probs(fs, cpts, P, fixed: dict | None = None):
    """Each grid point's probability given its protected values (Fractions): the product of the
    non-protected features' CPT rows; ``fixed`` {(child index, parent index): value} makes a child's
    row read that parent at the given value (an edge-specific intervention)."""
    fixed = fixed or {}
    out = []
    for x in P:
        pr = Fraction(1)
        for i, (parents, table) in cpts.items():
            key = tuple(fixed.get((i, j), int(x[j])) for j in parents)
            pr *= table[key][int(x[i])]
            if not pr:
                break
        out.append(pr)
    return out


def _group_keys(fs, P):
    prot = [i for i, f in enumerate(fs) if f.protected]
    return prot, [tuple(int(x[i]) for i in prot) for x in P]


def _ppvs_weighted(fs, P, probs, weight_num: np.ndarray, denom: int) -> dict:
    """{group: sum over the group's points of probs * weight_num / denom} (a PPV: probs sum to 1 per group)."""
    _, keys = _group_keys(fs, P)
    out: dict = {}
    for k, pr, w in zip(keys, probs, weight_num):
        out[k] = out.get(k, Fraction(0)) + (pr * Fraction(int(w), denom) if w else 0)
    return out


def _quantity(q: str, ppv: dict):
    vals = list(ppv.values())
    hi, lo = max(vals), min(vals)
    if q == "statistical_parity":
        return hi - lo
    return None if hi == 0 else lo / hi


def _uniform_counts(fs, decided, S: list[int]) -> tuple[np.ndarray, int]:
    """Per grid point: how many of the prod(k_f, f in S) uniform replacements of x[S] the classifier
    decides positive (the point's own x[S] ignored), and that product."""
    sizes = [f.size for f in fs]
    D = np.asarray(decided, dtype=np.int64).reshape(sizes)
    den = 1
    for i in S:
        D = D.sum(axis=i, keepdims=True)
        den *= sizes[i]
    return np.broadcast_to(D, sizes).reshape(-1), den


def influence_value(fs, cpts, P, decided, quantity: str, subsets: list[list[int]]):
    """(the largest |FIF(S)|, {subset: FIF}) in exact rationals, or (None, why) when Q is undefined."""
    probs = _cond_probs(fs, cpts, P)
    ones = np.asarray(decided, dtype=np.int64)
    base = _quantity(quantity, _ppvs_weighted(fs, P, probs, ones, 1))
    if base is None:
        return None, f"{quantity} is undefined"
    each = {}
    for S in subsets:
        cnt, den = _uniform_counts(fs, decided, S)
        q = _quantity(quantity, _ppvs_weighted(fs, P, probs, cnt, den))
        if q is None:
            return None, f"{quantity} is undefined without {S}"
        each[tuple(S)] = base - q
    return max(abs(v) for v in each.values()), each


def path_specific_values(fs, cpts, P, decided, mediators: list[int]) -> dict:
    """{a_max candidate: the PCF value} for every group tied for most favoured."""
    prot, _ = _group_keys(fs, P)
    probs = _cond_probs(fs, cpts, P)
    ones = np.asarray(decided, dtype=np.int64)
    base = _ppvs_weighted(fs, P, probs, ones, 1)
    top = max(base.values())
    out = {}
    for amax in (g for g, v in base.items() if v == top):
        fixed = {}
        for z in mediators:
            parents = cpts[z][0]
            for a, v in zip(prot, amax):
                if a in parents:
                    fixed[(z, a)] = v
        pr2 = _cond_probs(fs, cpts, P, fixed)
        ppv = _ppvs_weighted(fs, P, pr2, ones, 1)
        out[amax] = max(ppv.values()) - min(ppv.values())
    return out


def _reads(fs, decl: str, kind: str) -> list[int]:
    """Indices of the non-protected features the classifier reads (a rule: those its text names; a tree:
    every encoded feature, as lint reads an sklearn model)."""
    if kind == "tree":
        return [i for i, f in enumerate(fs) if not f.protected]
    rule = decl.split("rule(", 1)[1]
    named = set(re.findall(r"\b([A-Za-z_]\w*)\b", rule))
    return [i for i, f in enumerate(fs) if not f.protected and f.name in named]


def _reads_only_protected(fs, decided) -> bool:
    D = np.asarray(decided).reshape([f.size for f in fs])
    return all(np.array_equal(D, np.broadcast_to(D.take([0], axis=i), D.shape))
               for i, f in enumerate(fs) if not f.protected)


def _threshold(rng, value: Fraction, kind: str) -> str:
    exact_text = decimal_text(value)
    c = rng.random()
    if exact_text is not None and c < 0.45:
        thr = exact_text
    elif c < 0.85:
        thr = f"{float(value) + float(rng.choice([-1, 1])) * float(rng.choice([1e-9, 1e-4, 0.01, 0.1])):.12g}"
    else:
        thr = str(rng.choice(["0.05", "0.1", "0.2", "0.5"]))
    if thr.startswith("-") or "e" in thr:
        thr = "0"
    if Fraction(thr) > 1:
        thr = "1"
    return thr


def causal_props(seed: int, fs, cpts, P, decided, groups: str, backends, kind: str, decl: str, k0: int,
                 family: str, count: int = 3) -> list[Prop]:
    """``count`` properties, each an influence or a path_specific claim over ``distribution d``."""
    rng = np.random.default_rng([22, seed, 103])
    reads = _reads(fs, decl, kind)
    rest = [i for i, f in enumerate(fs) if not f.protected]
    out = []
    for k in range(k0, k0 + count):
        name = f"q{k}"
        backend = backends[int(rng.integers(0, len(backends)))]
        if rng.random() < 0.55 and reads:
            quantity = "statistical_parity" if rng.random() < 0.6 else "disparate_impact"
            if rng.random() < 0.4:
                subsets, sub_text = [[i] for i in rest], None          # the default: each feature alone
            else:
                n = int(rng.integers(1, min(3, len(reads)) + 1))
                subsets, seen = [], set()
                for _ in range(n):
                    m = int(rng.integers(1, min(2, len(reads)) + 1))
                    S = sorted(rng.choice(reads, size=m, replace=False).tolist())
                    if tuple(S) not in seen:
                        seen.add(tuple(S))
                        subsets.append(S)
                sub_text = "[" + ", ".join(
                    ("{" + ", ".join(fs[i].name for i in S) + "}") if len(S) > 1 or rng.random() < 0.6
                    else fs[S[0]].name for S in subsets) + "]"
            value, each = influence_value(fs, cpts, P, decided, quantity, subsets)
            if value is None:
                quantity = "statistical_parity"
                value, each = influence_value(fs, cpts, P, decided, quantity, subsets)
            op = str(rng.choice(["<=", "<", ">=", ">"]))
            thr = _threshold(rng, value, "influence")
            if op == "<" and Fraction(thr) <= 0:
                op = "<="
            args = f"influence(clf, groups {groups}, distribution d"
            if quantity != "statistical_parity" or rng.random() < 0.3:
                args += f", metric = {quantity}"
            if sub_text is not None:
                args += f", subsets = {sub_text}"
            claim = f"{args}) {op} {thr}"
            status = "holds" if claim_holds(value, op, thr) else "violated"
            note = f"exact largest |FIF| {value}; " + "; ".join(
                f"FIF({','.join(fs[i].name for i in S)}) = {v}" for S, v in each.items())
            meta = {"metric": "influence", "quantity": quantity, "op": op, "threshold": thr, "backend": backend,
                    "kind": kind, "tie": value == Fraction(thr)}
            if sub_text is None and _reads_only_protected(fs, decided):
                # a classifier deciding by protected features alone (a tree splitting on them, a rule that is a
                # tautology in the others) may read no subset to measure: unknown is fair there
                meta["incomplete"] = True
            truth = Truth(status, value=float(value), value_kind="metric", domain=int(P.shape[0]), note=note,
                          exact=value)
        else:
            if not rest:
                continue
            m = int(rng.integers(1, min(2, len(rest)) + 1))
            # mediators with a protected parent where there is one (else the value is plain statistical parity)
            withp = [i for i in rest if any(fs[j].protected for j in cpts[i][0])]
            pool = withp if withp and rng.random() < 0.8 else rest
            med = sorted(rng.choice(pool, size=min(m, len(pool)), replace=False).tolist())
            vals = path_specific_values(fs, cpts, P, decided, med)
            value = min(vals.values())
            op = str(rng.choice(["<=", "<", ">=", ">"]))
            thr = _threshold(rng, value if rng.random() < 0.7 else max(vals.values()), "path_specific")
            if op == "<" and Fraction(thr) <= 0:
                op = "<="
            if op == ">" and Fraction(thr) >= 1:
                op = ">="
            claim = (f"path_specific(clf, groups {groups}, mediators {{{', '.join(fs[i].name for i in med)}}}, "
                     f"distribution d) {op} {thr}")
            verdicts = {claim_holds(v, op, thr) for v in vals.values()}
            # the tied a_max readings decide otherwise: only unknown is right (fairspec since session 34)
            status = ("holds" if verdicts == {True} else "violated") if len(verdicts) == 1 else "reading-dependent"
            meta = {"metric": "path_specific", "op": op, "threshold": thr, "backend": backend, "kind": kind,
                    "tie": any(v == Fraction(thr) for v in vals.values()), "amax_tie": len(vals) > 1,
                    "mediators": [fs[i].name for i in med]}
            note = "; ".join(f"a_max {g}: {v}" for g, v in vals.items())
            if len(set(vals.values())) == 1:
                truth = Truth(status, value=float(value), value_kind="metric", domain=int(P.shape[0]), note=note,
                              exact=value)
            else:
                truth = Truth(status, domain=int(P.shape[0]), note=note)
        lines = [claim]
        if backend != "default":
            lines.append(f"using {backend}")
        lines.append("timeout = 20s")
        body = f"property {name} {{\n  " + "\n  ".join(lines) + "\n}"
        out.append(Prop(name, family, body, truth, meta, 20))
    return out


__all__ = ["CAUSAL_FROM", "causal_props", "influence_value", "path_specific_values"]
