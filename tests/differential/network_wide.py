"""Networks on wide domains with FairQuant's refinement (session 30): the ``network`` family's instances
with the wide integer feature always (``big``: 50-200 values, so sub-boxes of more than
``refine.ENUM_POINTS`` individuals), four properties, most given ``partitions`` and ``refine = 3s``. Run as
``network-wide-solver`` (campaign.families: enumeration of small domains off), the partitions the solvers
leave and their shares go to the refinement: sub-boxes bounded by ``certify.boxes.decide_boxes``, split at a
hidden layer (``certify.layersplit`` / ``certify.relsplit``), enumerated (``count_individuals``), and the
whole domain after a solver's tie (``_decide_at_a_tie``).

Judged as the network family (the verdict, its witness, a maximum) and, where the property has no relaxed
feature, on its shares (``details.coverage.shares``): an individual (the tied features' values) is unfair
when some pair of its counterfactuals breaks the post-condition on the runtime, fair otherwise, counted by
enumeration; the ``certified`` share must be at most the fair individuals' share, ``falsified`` at most
the unfair ones', over a ``domain`` of that many individuals (exact fractions).
"""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np

from . import networks as nw
from .core import exact

FAMILY = "network-wide-solver"


def generate(seed: int):
    def props_fn(rng, fs, P, X, out, info, has_data, size):
        props = [nw._property(rng, k, fs, P, X, out, info, has_data, size, "network-wide") for k in range(4)]
        sub = np.random.default_rng([20, seed, 30])
        for p in props:
            if p.meta["mode"] != "maximize" and sub.random() < 0.7:
                parts = p.meta["partitions"] or int(sub.choice([2, 4, 8]))
                lines = [ln for ln in p.text.split("\n") if not ln.strip().startswith("partitions")]
                lines.insert(-2, f"  partitions = {parts}\n  refine = 3s")
                p.text = "\n".join(lines)
                p.meta.update(partitions=parts, refine=True)
            p.meta["shares_truth"] = _shares_truth(p, fs, P, out)
        return props

    inst = nw.generate(seed, big=True, runtime="onnx" if seed % 4 else "torch", family="network-wide",
                       props_fn=props_fn)
    inst.judge = judge
    return inst


def _shares_truth(p, fs, P, out):
    """(fair individuals, unfair individuals, individuals) of a property without relaxed features, else None."""
    if p.meta.get("relaxed"):
        return None
    m = re.search(r"except \{([^}]*)\}", p.text)
    free = {n.strip() for n in m.group(1).split(",")}
    tied = [i for i, f in enumerate(fs) if f.name not in free]
    post, op, eps = p.meta["post"], p.meta["op"], p.meta["eps"]
    groups = nw.pair_groups(P, nw.PairSpec(tuple(i for i, f in enumerate(fs) if f.name in free), (), tuple(tied)))
    fair = unfair = 0
    for idx in groups:
        if post == "label":
            bad = bool(np.any(out.label[idx] != out.label[idx][0]))
        else:
            v = out.logit[idx] if post == "logit" else (out.prob[idx] if out.prob is not None else out.logit[idx])
            hi, lo = int(idx[np.argmax(v)]), int(idx[np.argmin(v)])     # the sigmoid is monotone
            d = nw.exact_measure(out, post, hi, lo)
            if d is None:
                return None                                  # a tie the truth cannot settle
            e = exact(eps)
            bad = (d > e) if op == "<=" else (d >= e)
        unfair += bad
        fair += not bad
    return fair, unfair, fair + unfair


def judge(spec, props, base):
    """The network family's judgement, and the shares (module docstring)."""
    from .judge import _check_group

    captured = {}

    def check(path):
        from fairspec.pipeline import check as real

        rep = real(path)
        for v in rep.verdicts:
            captured[v.name] = v.to_json()
        return rep

    outs = _check_group(spec, props, base, check=check)
    by_name = {p.name: p for p in props}
    for o in outs:
        p = by_name[o.name]
        truth = p.meta.get("shares_truth")
        v = captured.get(o.name) or {}
        shares = ((v.get("details") or {}).get("coverage") or {}).get("shares") if isinstance(
            (v.get("details") or {}).get("coverage"), dict) else None
        if o.klass == "wrong" or truth is None or not shares:
            continue
        fair, unfair, total = truth
        o.meta = {**o.meta, "shares_checked": True}
        if shares.get("measure") != "integer points" or int(shares.get("domain")) != total:
            o.meta["shares_domain"] = [shares.get("measure"), shares.get("domain"), total]
            continue
        cert, fals = Fraction(shares["certified"]), Fraction(shares["falsified"])
        if cert > Fraction(fair, total):
            o.klass, o.defect = "wrong", "share-wrong"
            o.why = f"certified share {cert} above the fair individuals' share {Fraction(fair, total)}"
        elif fals > Fraction(unfair, total):
            o.klass, o.defect = "wrong", "share-wrong"
            o.why = f"falsified share {fals} above the unfair individuals' share {Fraction(unfair, total)}"
    return outs

