"""Networks on wide domains with FairQuant's refinement (session 30): the ``network`` family's instances
with the wide integer feature always (``big``: 50-200 values, so sub-boxes of more than
``refine.ENUM_POINTS`` individuals), four properties, most given ``partitions`` and ``refine = 3s``. Run as
``network-wide-solver`` (campaign.families: enumeration of small domains off), the partitions the solvers
leave and their shares go to the refinement: sub-boxes bounded by ``certify.boxes.decide_boxes``, split at a
hidden layer (``certify.layersplit`` / ``certify.relsplit``), enumerated (``count_individuals``), and the
whole domain after a solver's tie (``pair_ties.decide_at_a_tie``).

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
        if seed >= OPTIONS_FROM:
            _partition_options(seed, props)
        return props

    inst = nw.generate(seed, big=True, runtime="onnx" if seed % 4 else "torch", family="network-wide",
                       props_fn=props_fn)
    inst.judge = judge
    return inst


#: instance seeds from here on give their partitioned properties ``estimate``, ``confidence``, ``part_timeout`` and
#: ``seed`` (session 32; earlier instances are unchanged)
OPTIONS_FROM = 85_000_000
#: a confidence at least this high makes an estimate interval that excludes the true share wrong (a miss has
#: probability at most 1 - confidence); below it a miss is only counted (``meta["estimate_miss"]``)
SURE = 0.999


def _partition_options(seed, props):
    """The partitions' options (README 'Options'): ``estimate`` (individuals sampled from the undecided share),
    ``confidence`` (of its Clopper-Pearson intervals; 0.999999 makes them judged, :data:`SURE`),
    ``part_timeout`` (a partition's budget: 1 ms times every part out) and ``seed`` (the sample's)."""
    rng = np.random.default_rng([20, seed, 85])
    for p in props:
        if not p.meta.get("refine"):
            continue
        extra = {}
        if rng.random() < 0.8:
            extra["estimate"] = int(rng.choice([0, 300, 3000]))
        if rng.random() < 0.7:
            extra["confidence"] = str(rng.choice(["0.5", "0.9", "0.999999"]))
        if rng.random() < 0.5:
            extra["part_timeout"] = str(rng.choice(["1ms", "50ms", "2s"]))
        if rng.random() < 0.6:
            extra["seed"] = int(rng.integers(0, 2 ** 32))
        if not extra:
            continue
        lines = p.text.split("\n")
        if extra.get("estimate") and rng.random() < 0.6:     # no refinement: an undecided share to estimate
            lines = [ln for ln in lines if not ln.strip().startswith("refine")]
            extra["refine"] = None
        at = next(i for i, ln in enumerate(lines) if ln.strip().startswith("partitions")) + 1
        lines[at:at] = [f"  {k} = {v}" for k, v in extra.items() if v is not None]
        p.text = "\n".join(lines)
        p.meta["partition_options"] = extra


def _estimate_wrong(est: dict, truth, shares, conf) -> str | None:
    """Why the partitions' estimate (``shares.estimate``) is wrong, else None: a sampled unfair (fair) individual
    where none is unfair (fair); an interval that excludes the true unfair / fair share of the undecided part
    (its unfair individuals are the unfair ones less the falsified share, its fair ones the fair less the
    certified) at a confidence of at least :data:`SURE`; the exact shares changed."""
    fair, unfair, total = truth
    if est.get("undecided") is not None and Fraction(est["undecided"]) != Fraction(shares["undecided"]):
        return f"the estimate's undecided share {est['undecided']} is not the shares' {shares['undecided']}"
    if not unfair and est.get("sampled_unfair"):
        return f"{est['sampled_unfair']} sampled individuals counted unfair, but no individual is unfair"
    if not fair and est.get("sampled_fair"):
        return f"{est['sampled_fair']} sampled individuals counted fair, but no individual is fair"
    if conf is None or conf < SURE:
        return None
    cert, fals = Fraction(shares["certified"]), Fraction(shares["falsified"])
    for key, want in (("estimated_unfair_in_undecided", Fraction(unfair, total) - fals),
                      ("estimated_fair_in_undecided", Fraction(fair, total) - cert)):
        lo, hi = (est.get(key) or {}).get("interval_percent") or (None, None)
        if lo is None:
            continue
        w = 100 * float(want)
        if not (float(lo) - 1e-9 <= w <= float(hi) + 1e-9):
            return f"{key} [{lo}, {hi}] % at {conf} excludes the true {w!r} %"
    return None


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
        elif isinstance(shares.get("estimate"), dict) and shares["estimate"].get("estimated"):
            opts = p.meta.get("partition_options") or {}
            conf = float(opts.get("confidence", 0.95))
            o.meta["estimate_checked"] = conf
            bad = _estimate_wrong(shares["estimate"], truth, shares, conf)
            if bad is None and conf < SURE:
                o.meta["estimate_miss"] = _estimate_wrong(shares["estimate"], truth, shares, 1.0)
            elif bad is not None:
                o.klass, o.defect, o.why = "wrong", "estimate-wrong", bad
    return outs

