"""SSAT backend: PPVs of a classifier over a distribution by stochastic SAT.

``ppv_per_group``  Justicia_enum: one RE-SSAT formula per compound group (the
                   group fixed by unit clauses), all solved by one solver whose
                   component cache is shared between the groups;
``ppv_extremes``   Justicia_learn: the ER-SSAT formula (protected attributes
                   existential, outermost) gives the most favoured group and
                   its PPV; the ER-SSAT formula of the *negated* classifier gives
                   the least favoured group, PPV = 1 - its value (Lemma 1).  With
                   ``least="universal"`` the UR-SSAT formula is solved directly.

The distribution is a ``BayesNet`` encoded as CNF (FVGM appendix F); the
classifier a ``DecisionTree``, ``CNFRule`` or ``LinearRule`` (pseudo-Boolean
encoding).  An instance over the node/time budget gives status "unknown".
"""

from __future__ import annotations

import math
import time

import numpy as np
from typing import Mapping, Sequence

from fairspec.analyses.distribution import BayesNet, GroupPPVs, all_groups
from fairspec.backends.ssat.encode import FALSE, TRUE, Encoder
from fairspec.backends.ssat.formula import SSATFormula
from fairspec.backends.ssat.solver import SSATResult, SSATSolver, brute_force_ssat

__all__ = ["ppv_per_group", "sliced", "ppv_extremes", "build_formula", "Encoder", "SSATFormula",
           "SSATSolver", "SSATResult", "brute_force_ssat"]


def build_formula(bn: BayesNet, clf, protected: Sequence[str], positive: bool = True, choice_kind: str = "E",
           choice_encoding: str = "onehot", pb_encoding: str = "mdd",
           extra: Sequence[str] = ()) -> Encoder:
    """The SSAT encoding of ``Yhat = 1`` (or 0) over the network restricted to
    the classifier's features, the protected attributes and ``extra`` variables."""
    bn.check_covers(clf.features)
    bn.check_choice(protected)
    names = list(clf.features) + list(protected) + list(extra)
    sub = bn.restricted(names)
    enc = Encoder(sub, protected, choice_kind, choice_encoding, pb_encoding)
    enc.encode_network(names)
    enc.encode_classifier(clf, positive)
    return enc


def _lits(enc: Encoder, lits):
    out = []
    for l in lits:
        if l == FALSE:
            return None
        if l != TRUE:
            out.append(l)
    return out


def sliced(bn: BayesNet, protected: Sequence[str], group: Sequence[int]) -> BayesNet:
    """The network given the group: protected roots fixed (a point mass), their
    children's tables sliced at the group's values.  Every group's slice has the
    same structure, so one formula with per-group probabilities covers them all."""
    fixed = dict(zip(protected, group))
    vs, pa, cp = [], {}, {}
    for n in bn.order:
        var = bn.variables[n]
        vs.append(var)
        if n in fixed:
            t = np.zeros(var.k)
            t[int(fixed[n])] = 1.0
            pa[n], cp[n] = (), t
            continue
        idx, keep = [], []
        for p in bn.parents[n]:
            if p in fixed:
                idx.append(int(fixed[p]))
            else:
                idx.append(slice(None))
                keep.append(p)
        cp[n] = bn.cpts[n][tuple(idx)] if idx else bn.cpts[n]
        pa[n] = tuple(keep)
    return BayesNet._derived(vs, pa, cp, bn.n_rows, None, bn.kind, bn.order)


def ppv_per_group(bn: BayesNet, clf, protected: Sequence[str], groups=None,
                  evidence: Mapping[str, Sequence[int]] | None = None, max_nodes: int = 2_000_000,
                  time_limit: float = 60.0, pb_encoding: str = "mdd", batch: bool = True) -> GroupPPVs:
    """Justicia_enum: the PPV of every compound group (value-index tuples).

    With ``evidence`` (variable -> allowed value indices, e.g. the label) the
    PPV is Pr[Yhat = 1, evidence | group] / Pr[evidence | group].

    ``batch`` (default): the RE-SSAT formulas of all groups share one structure
    (the network sliced at each group), so one search with a probability vector
    per random variable gives every group's PPV; otherwise one solver call per
    group on the full network with the group fixed by unit clauses (the cache is
    still shared between the calls).
    """
    t0 = time.perf_counter()
    protected = tuple(protected)
    groups = list(groups) if groups is not None else all_groups(bn, protected)
    evidence = dict(evidence or {})
    bn.check_covers(clf.features)
    bn.check_choice(protected)
    if batch and groups:
        names = list(clf.features) + list(evidence)
        base = bn.restricted(list(dict.fromkeys(names + list(protected))))
        nets = [sliced(base, protected, g) for g in groups]
        # drop what the classifier and the evidence do not depend on
        nets = [b.restricted(names) for b in nets]
        enc = Encoder(nets[0], (), "E", "onehot", pb_encoding, batch=nets)
        enc.encode_network(names)
        enc.encode_classifier(clf, True)
        ev = _lits(enc, [enc.lit_in(n, frozenset(int(x) for x in vals)) for n, vals in evidence.items()])
        if ev is None:
            return GroupPPVs.from_values(protected, {g: math.nan for g in groups}, seconds=time.perf_counter() - t0,
                                         backend="ssat", method="enumerate")
        r = SSATSolver(enc.f, max_nodes=max_nodes, time_limit=time_limit).solve(ev)
        if r.status != "ok":
            return GroupPPVs.unknown(protected, r.reason, seconds=time.perf_counter() - t0,
                                     backend="ssat", method="enumerate")
        num = np.broadcast_to(np.asarray(r.probability, dtype=float), (len(groups),))
        nodes = r.nodes
        if evidence:
            f_ev = SSATFormula(enc.f.nv, list(enc.bn_clauses), enc.f.kind, enc.f.prob, enc.f.names)
            re = SSATSolver(f_ev, max_nodes=max_nodes,
                            time_limit=max(1e-3, time_limit - (time.perf_counter() - t0))).solve(ev)
            if re.status != "ok":
                return GroupPPVs.unknown(protected, re.reason, seconds=time.perf_counter() - t0,
                                         backend="ssat", method="enumerate")
            den = np.broadcast_to(np.asarray(re.probability, dtype=float), (len(groups),))
            nodes += re.nodes
            with np.errstate(invalid="ignore", divide="ignore"):
                num = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
        values = {g: float(v) for g, v in zip(groups, num)}
        return GroupPPVs.from_values(protected, values, seconds=time.perf_counter() - t0, backend="ssat",
                                     method="enumerate",
                                     stats={"nodes": nodes, "cache_hits": r.cache_hits, "batched": True,
                                            **enc.f.stats()})
    enc = build_formula(bn, clf, protected, True, "E", "onehot", pb_encoding, extra=list(evidence))
    ev = [enc.lit_in(n, frozenset(int(x) for x in vals)) for n, vals in evidence.items()]
    solver = SSATSolver(enc.f, max_nodes=max_nodes, time_limit=time_limit)
    ev_solver = None
    if evidence:
        f_ev = SSATFormula(enc.f.nv, list(enc.bn_clauses), enc.f.kind, enc.f.prob, enc.f.names)
        ev_solver = SSATSolver(f_ev, max_nodes=max_nodes, time_limit=time_limit)
    values = {}
    nodes = hits = 0
    for g in groups:
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0:
            return GroupPPVs.unknown(protected, f"the exact SSAT search exceeded its time limit of {time_limit:g} s",
                                     seconds=time.perf_counter() - t0, backend="ssat", method="enumerate")
        lits = _lits(enc, enc.group_literals(dict(zip(protected, g))) + ev)
        if lits is None:
            values[g] = 0.0 if not evidence else math.nan
            continue
        r = solver.solve(lits, max_nodes=max_nodes - nodes, time_limit=left)
        nodes += r.nodes
        hits += r.cache_hits
        if r.status != "ok":
            return GroupPPVs.unknown(protected, r.reason, seconds=time.perf_counter() - t0,
                                     backend="ssat", method="enumerate")
        p = r.probability
        if evidence:
            re = ev_solver.solve(lits, max_nodes=max(1, max_nodes - nodes),
                                 time_limit=max(1e-3, time_limit - (time.perf_counter() - t0)))
            nodes += re.nodes
            if re.status != "ok":
                return GroupPPVs.unknown(protected, re.reason, seconds=time.perf_counter() - t0,
                                         backend="ssat", method="enumerate")
            p = p / re.probability if re.probability > 0 else math.nan
        values[g] = p
    return GroupPPVs.from_values(protected, values, seconds=time.perf_counter() - t0, backend="ssat",
                                 method="enumerate",
                                 stats={"nodes": nodes, "cache_hits": hits, "batched": False, **enc.f.stats()})


def ppv_extremes(bn: BayesNet, clf, protected: Sequence[str], least: str = "negation",
                 max_nodes: int = 2_000_000, time_limit: float = 60.0, pb_encoding: str = "mdd") -> GroupPPVs:
    """Justicia_learn: most favoured group by ER-SSAT, least favoured by ER-SSAT
    on the negated classifier (``least="negation"``, Justicia's Lemma 1) or by
    UR-SSAT directly (``least="universal"``, log-encoded groups)."""
    t0 = time.perf_counter()
    protected = tuple(protected)
    stats = {}
    if least not in ("negation", "universal"):
        raise ValueError(f"unknown least-favoured method {least!r}")

    def choose(positive: bool, kind: str, groups: str):
        """Solve one choice problem: (group, probability, result, encoding)."""
        left = max(time_limit - (time.perf_counter() - t0), 1e-3)
        enc = build_formula(bn, clf, protected, positive, kind, groups, pb_encoding)
        r = SSATSolver(enc.f, max_nodes=max_nodes, time_limit=left).solve()
        if r.status != "ok":
            return None, r, enc
        gd = enc.decode_group(r.assignment)
        return tuple(gd[a] for a in protected), r, enc

    g, r, enc = choose(True, "E", "onehot")
    if g is None:
        return GroupPPVs.unknown(protected, r.reason, seconds=time.perf_counter() - t0, backend="ssat", method="learn")
    best = (g, r.probability)
    stats["er_nodes"] = r.nodes
    stats.update({f"er_{k}": v for k, v in enc.f.stats().items()})
    if least == "negation":
        g2, r2, _ = choose(False, "E", "onehot")
    else:
        g2, r2, _ = choose(True, "A", "log")
    if g2 is None:
        return GroupPPVs.unknown(protected, r2.reason, seconds=time.perf_counter() - t0, backend="ssat", method="learn")
    if least == "negation":
        worst = (g2, 1.0 - r2.probability)
        stats["negated_er_value"] = r2.probability
    else:
        worst = (g2, r2.probability)
    stats["least_nodes"] = r2.nodes
    per = {best[0]: best[1], worst[0]: worst[1]}
    return GroupPPVs(protected, per, best, worst, seconds=time.perf_counter() - t0, backend="ssat",
                     method="learn", stats=stats)
