"""Session 34: ``explain tree`` on k-discrimination (HyFair's Algorithm 2), judged on what it reports.

From instance seed 103,000,000 on, half the kdisc family's plain properties (not the banded ones) that do not
say ``explain tree`` yet say it (their claims and truths are unchanged). An explanation (JSON
``details.explanation_tree``) lists paths: a conjunction of conditions on the individual's features
(those not in ``over``: ``x.n0 >= 3``, ``x.c1 == v0``, ``x.g in {A, B}``, ...) with the mean k of the
perturbation samples meeting it (``mean_k``, over ``support`` samples). The samples are individuals of the
declared domain, so what the explanation reports is true on the model only if:

* a path with support > 0 is met by some individual of the domain, and
* its ``mean_k`` lies between the smallest and the largest k (on the model's runtime, the truth's own
  k of :mod:`.kdisc`) of the individuals meeting it;

and ``details.max_k`` is at most the true max k (the judge checks the witness and the value already). A
condition the parser here does not read leaves its path unjudged (``meta["explain_unread"]``).
"""

from __future__ import annotations

import re

import numpy as np

#: instance seeds from here on get ``explain tree`` on half their plain properties (earlier instances unchanged)
EXPLAIN_FROM = 103_000_000

_ATOM = re.compile(r"^x\.(\w+)\s*(==|!=|>=|<=|>|<|not in|in)\s*(.+)$")


def add_explain(seed: int, props: list, fs, P, probs, real_sigmoid) -> None:
    """Say ``explain tree`` on half the plain properties without it; every plain property with it is judged."""
    rng = np.random.default_rng([24, seed, 103])
    names = [f.name for f in fs]
    for p in props:
        if not re.fullmatch(r"k\d+", p.name):
            continue
        if "explain tree" not in p.text and rng.random() < 0.5:
            lines = p.text.split("\n")
            k = next(i for i, ln in enumerate(lines) if ln.strip().startswith("timeout"))
            lines.insert(k, "  explain tree")
            p.text = "\n".join(lines)
        if "explain tree" in p.text:
            m = re.search(r"over \{([^}]*)\}", p.text)
            over = [names.index(n.strip()) for n in m.group(1).split(",")]
            p.meta["explain"] = True
            p.explain = (fs, P, probs, over, p.meta["eps"], real_sigmoid)


def _value(f, text: str):
    t = text.strip().strip('"')
    if f.kind == "cat":
        return f.cats.index(t) if t in f.cats else None
    if f.kind == "bool":
        if t in ("true", "false"):
            return int(t == "true")
    try:
        return float(t)
    except ValueError:
        return None


def _mask(cond: str, fs, P):
    """The domain points meeting one printed condition (None: not read here)."""
    names = [f.name for f in fs]
    M = np.ones(P.shape[0], dtype=bool)
    for atom in cond.split(" and "):
        atom = atom.strip()
        if atom == "true":
            continue
        if atom == "false":
            return M & False
        m = _ATOM.match(atom)
        if not m or m.group(1) not in names:
            return None
        i = names.index(m.group(1))
        f, op, rhs = fs[i], m.group(2), m.group(3)
        col = P[:, i]
        if op in ("in", "not in"):
            vals = [_value(f, v) for v in rhs.strip().strip("{}").split(",")]
            if any(v is None for v in vals):
                return None
            hit = np.isin(col, vals)
            M &= hit if op == "in" else ~hit
            continue
        v = _value(f, rhs)
        if v is None:
            return None
        M &= {"==": col == v, "!=": col != v, ">=": col >= v, "<=": col <= v, ">": col > v, "<": col < v}[op]
    return M


def judge_explanation(p, v: dict | None) -> str | None:
    """None when what the explanation reports is true on the model (or was not read), else why not."""
    from fractions import Fraction

    from .kdisc import _individuals, _k

    if v is None or not hasattr(p, "explain"):
        return None
    details = v.get("details") or {}
    tree = details.get("explanation_tree")
    p.meta["explain_paths"] = len(tree or ())
    fs, P, probs, over, eps, real_sigmoid = p.explain
    eps = Fraction(eps)
    inv = _individuals(fs, P, over)
    ks, amb = {}, {}
    for ind in np.unique(inv):
        rows = np.flatnonzero(inv == ind)
        ks[int(ind)], amb[int(ind)] = _k(probs[rows], eps, real_sigmoid)
    # the header: "high k: k >= KAPPA (95th percentile of N samples, mean k M, starting k S)": every sample an
    # individual of the domain, so KAPPA, M and S lie within the individuals' k
    head = re.search(r"high k: k [>=]+ ([\d.]+) \(95th percentile of \d+ samples, mean k ([\d.]+), starting k (\d+)\)",
                     str(details.get("explanation") or ""))
    if head and not any(amb.values()):
        lo, hi = min(ks.values()), max(ks.values())
        p.meta["explain_judged"] = p.meta.get("explain_judged", 0) + 1
        for what, x, slack in (("95th percentile", head.group(1), 0), ("mean k", head.group(2), 0.005),
                               ("starting k", head.group(3), 0)):
            if not lo - slack <= float(x) <= hi + slack:
                return f"the explanation's {what} {x} lies outside the individuals' k [{lo}, {hi}] on the model's runtime"
    if not tree:
        return None
    for path in tree:
        M = np.ones(P.shape[0], dtype=bool)
        for cond in path.get("conditions") or ():
            m = _mask(cond, fs, P)
            if m is None:
                p.meta["explain_unread"] = cond
                return None
            M &= m
        inds = sorted({int(i) for i in inv[M]})
        if not inds:
            if int(path.get("support") or 0) > 0:
                return f"the explanation's path {path.get('conditions')} (support {path.get('support')}) is met by no " \
                       f"individual of the domain"
            continue
        if any(amb[i] for i in inds):
            continue
        lo, hi = min(ks[i] for i in inds), max(ks[i] for i in inds)
        p.meta["explain_judged"] = p.meta.get("explain_judged", 0) + 1
        mk = float(path.get("mean_k"))
        if not lo - 1e-4 <= mk <= hi + 1e-4:     # mean_k is rounded to 4 places
            return (f"the explanation's path {path.get('conditions')} reports mean k {mk}, but its {len(inds)} "
                    f"individuals have k in [{lo}, {hi}] on the model's runtime")
    return None


def judged(outs, props, captured):
    """The outcomes with each explanation judged: a false one makes a correct verdict wrong (``explanation``)."""
    by = {p.name: p for p in props}
    for o in outs:
        p = by.get(o.name)
        if p is None or not p.meta.get("explain") or o.klass == "wrong":
            continue
        why = judge_explanation(p, captured.get(o.name))
        if why:
            o.klass, o.defect, o.why = "wrong", "explanation", why
    return outs


def judge(spec, props, base):
    """The default judgement, each explanation judged too (:func:`judged`)."""
    from .judge import _check_group

    captured = {}

    def check(path):
        from fairspec.pipeline import check as real

        rep = real(path)
        for v in rep.verdicts:
            captured[v.name] = v.to_json()
        return rep

    return judged(_check_group(spec, props, base, check=check), props, captured)
