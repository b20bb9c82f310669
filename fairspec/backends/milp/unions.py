"""The union pass of :func:`fairspec.backends.milp.partition.solve_partitioned` (issue 24, reach):
neighbouring partitions proved together, coarse to fine.

After the attack, the partitions it left are merged into *unions*: boxes of at most
:data:`UNION_MEMBERS` neighbouring partitions (grid boxes equal in every input but one and adjacent
in it, merged input by input). Each union gets the certified branch and bound
(:func:`fairspec.backends.pair.certify.decide_by_bab`) with at most :data:`UNION_NODES` nodes per
member, within a quarter of its members' partition budgets; the partition pass runs it in rounds of
halving size (16, 8, 4, 2 members), each on what the previous round left. Its answer decides its
members:

* ``holds``: its bab-certificate is about the union box, which contains every member box, so each
  member is ``holds`` with that Proof (a claim over a box is a claim over each of its sub-boxes);
* ``violated``: the replayed pair lies in one member box (x and x' differ only in inputs no partition
  splits), which is refuted by it; the other members go on;
* ``unknown``: every member goes on to the per-partition pass, as without the union.

Why: the branch and bound splits inputs where it needs to, so one proof over k neighbouring boxes
takes far fewer nodes than k proofs (AC-11 sex, five partitions along native-country: 46-218 nodes
each, 102-396 for their union, 3-4x less CPU; AC-7 sex, 16 boxes: 168 nodes and 2.4 CPU s for their
union against 194 nodes but 17.1 CPU s one by one -- a box's fixed cost, the runtime's error bound
and the certified LP tightening at the root, is paid once; bench/results/fairify_portfolio.md).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from fairspec.backends.pair.problem import PairProblem, PairResult

__all__ = ["UNION_MEMBERS", "UNION_NODES", "UNION_SHARE", "union_boxes", "decide_union", "member_results",
           "union_pass"]

#: at most this many partitions per union
UNION_MEMBERS = 16
#: the union's branch and bound: at most this many nodes per member partition
UNION_NODES = 40
#: the union pass takes at most this share of the total budget left when it starts, as the attack does
#: (AC-11 race eps beside a CI run: one round of unions of 16 took 310 s of 555 and decided none; idle, 81 s).
#: A bound against such a round, not a budget: at 0.25 it cut AC-4 sex's productive union pass to 85 s (24
#: decided, 327 before; 148 more left in the row)
UNION_SHARE = 0.5


def _adjacent(a_hi: float, b_lo: float, integer: bool) -> bool:
    return (b_lo == a_hi + 1) if integer else (b_lo == a_hi)


def union_boxes(parts, keys, integer, max_members: int = UNION_MEMBERS) -> list[tuple[list[int], np.ndarray, np.ndarray]]:
    """Merge the partitions ``keys`` (indices into ``parts``, a grid of (lo, hi) boxes) into unions of
    at most ``max_members``: input by input (the inputs with most cuts first), boxes equal in every
    other input and adjacent in this one are merged in runs. Returns ``(members, lo, hi)`` for every
    union of two or more partitions; the union box is exactly the union of its members' boxes."""
    cur = [([k], np.asarray(parts[k][0], dtype=np.float64), np.asarray(parts[k][1], dtype=np.float64)) for k in keys]
    if len(cur) < 2:
        return []
    n = cur[0][1].size
    cuts = [len({float(parts[k][0][i]) for k in keys}) for i in range(n)]
    for f in sorted(range(n), key=lambda i: -cuts[i]):
        if cuts[f] < 2:
            break
        groups: dict[tuple, list] = {}
        for u in cur:
            key = tuple(np.delete(u[1], f)) + tuple(np.delete(u[2], f))
            groups.setdefault(key, []).append(u)
        nxt = []
        for us in groups.values():
            us.sort(key=lambda u: u[1][f])
            run = us[0]
            for u in us[1:]:
                if _adjacent(run[2][f], u[1][f], bool(integer[f])) and len(run[0]) + len(u[0]) <= max_members:
                    hi = run[2].copy()
                    hi[f] = u[2][f]
                    run = (run[0] + u[0], run[1], hi)
                else:
                    nxt.append(run)
                    run = u
            nxt.append(run)
        cur = nxt
    return [u for u in cur if len(u[0]) >= 2]


def decide_union(shared, item) -> PairResult:
    """One union (an executor job): the certified branch and bound over its box, at most
    :data:`UNION_NODES` nodes per member, within a quarter of its members' partition budgets (at
    least one: the node cap is meant to bind, not the clock; measured on AC-11 under load 15, a union
    of up to 16 boxes given one 10 s budget ran out of time, not nodes) and the total deadline."""
    from fairspec.backends.pair.certify import decide_by_bab

    problem, mode, _backend, kw, deadline = shared[:5]
    _, lo, hi, members = item
    tl = kw.get("time_limit")
    if tl is not None:
        tl = float(tl) * max(1.0, len(members) / 4.0)
    if deadline is not None:
        left = deadline - time.time()
        if left <= 0:
            return PairResult("unknown", reason="the union pass's share of the time budget was spent before this "
                              "union", engine="bab", mode=mode)
        tl = left if tl is None else min(float(tl), left)
    return decide_by_bab(problem.restrict(lo, hi), mode, tl, max_nodes=UNION_NODES * len(members))


def _inside(x, lo, hi) -> bool:
    x = np.asarray(x, dtype=np.float64)
    return bool(np.all(x >= lo) and np.all(x <= hi))


def member_results(problem: PairProblem, parts, union, r: PairResult) -> dict[int, PairResult]:
    """What a union's answer decides: ``{partition: result}`` (see the module docstring)."""
    members, lo, hi = union
    m = len(members)
    if r.status == "holds" and r.proof is not None:
        why = f"certified over the union of {m} neighbouring partitions: " + (r.reason or "")
        return {k: PairResult("holds", "proved", reason=why, seconds=r.seconds / m, engine="bab", mode=r.mode,
                              stats={**(r.stats or {}), "union": m}, proof=r.proof) for k in members}
    if r.status == "violated" and r.witness is not None:
        w = r.witness
        for k in members:
            plo, phi = np.asarray(parts[k][0], dtype=np.float64), np.asarray(parts[k][1], dtype=np.float64)
            if _inside(w.x, plo, phi) and _inside(w.x_prime, plo, phi):
                return {k: PairResult("violated", None, r.value, None, w, "the certified branch and bound over a "
                                      f"union of {m} partitions found a pair in this one that replays", r.seconds,
                                      engine="bab", mode=r.mode, best=w, stats={**(r.stats or {}), "union": m})}
    return {}


def union_pass(problem, parts, items, results, ex, shared, on_error) -> int:
    """The union pass (:mod:`fairspec.backends.milp.unions`): fills ``results`` for the partitions it
    decides; returns how many; within :data:`UNION_SHARE` of the budget left. Rounds of halving size
    (16, 8, 4, 2 members): the partitions a round leaves open are merged again into smaller unions (a
    union that ran out of nodes, or whose pair refuted one member, may have halves that are proved); a
    round that decides none ends them (AC-11 race eps: 418 s of rounds for 1 partition, where a branch
    and bound node with the certified tightening below its bands costs many LPs; AC-8 sex: 177 in 116 s).
    ``on_error``: the executor's result for a union whose job failed."""
    deadline = shared[4]
    if deadline is not None:
        # at most UNION_SHARE of what is left: the unions' jobs end there too (their deadline)
        deadline = time.time() + UNION_SHARE * max(0.0, deadline - time.time())
        shared = (*shared[:4], deadline, *shared[5:])
    n = 0
    size = UNION_MEMBERS
    while size >= 2 and (deadline is None or time.time() < deadline):
        us = union_boxes(parts, [it[0] for it in items if results[it[0]] is None], problem.integer, size)
        if not us:
            break
        jobs = [(j, lo, hi, members) for j, (members, lo, hi) in enumerate(us)]
        before = n
        for (j, *_), r in zip(jobs, ex.map(decide_union, jobs, shared=shared, on_error=on_error)):
            for k, rk in member_results(problem, parts, us[j], r).items():
                results[k] = replace(rk, stats={**(rk.stats or {}), "pass": "union"})
                n += 1
        if n == before:
            break
        size //= 2
    return n
