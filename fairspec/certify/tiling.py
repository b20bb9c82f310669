"""One Proof for a box from proofs of the sub-boxes that tile it (issue 24: a partition the
MILP passes left open decided by the refinement, :func:`fairspec.backends.refine.decide_partitions`).

:func:`prove_tiled` is given the box ``[lo, hi]`` and groups of sub-boxes, each group with the
certify Proof that decided it. It checks, itself:

* **every tile is proved fair by its group's Proof**: an ``interval`` Proof of
  :func:`fairspec.certify.boxes.decide_boxes` minted for the boxes it proved *fair*
  (``detail["side"] == "fair"``), whose list of boxes (``detail["_boxes"]``, kept when asked for)
  holds the tile; or an ``enumeration`` Proof of :func:`fairspec.certify.enumerate.count_individuals`
  whose boxes (``detail["_boxes"]``) are exactly the group's tiles, whose count of individuals is
  the tiles' number of integer points over the inputs of an individual (every input its recorded
  cases do not assign among them), and which counted every one of them fair (none unfair);
* **the tiles tile the box**: every tile lies inside it, and every integer point of the box lies
  in exactly one tile. Checked by rebuilding a guillotine tree: a region is a leaf when exactly one
  tile is that region; otherwise it must be cut along some input at a value no tile straddles
  (``#(lo <= c) - #(hi <= c) == 0``), every tile falling on one side, and both sides are checked
  the same way (a side with integer points but no tile is a gap; two copies of a tile never make a
  leaf). The refinement's halvings are such cuts; a tiling that is not a guillotine one is refused
  (never accepted wrongly).

Only integer inputs (the tiles' integer points). None when any check fails.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from fairspec.certify.proof import Proof, _mint

__all__ = ["prove_tiled", "prove_tiled_many", "tiles_partition"]


def _points(LO, HI):
    """Integer points of each box (rows), exactly (Python ints: no overflow)."""
    n = np.floor(HI) - np.ceil(LO) + 1
    out = []
    for row in np.maximum(n, 0).astype(np.int64).tolist():
        m = 1
        for v in row:
            m *= int(v)
        out.append(m)
    return out


def tiles_partition(lo, hi, LO, HI) -> bool:
    """Does every integer point of the box ``[lo, hi]`` lie in exactly one of the boxes
    ``[LO[k], HI[k]]`` (and each of them inside the box)? Guillotine tilings only (see the module
    docstring); False for any other."""
    lo = np.ceil(np.asarray(lo, dtype=np.float64))
    hi = np.floor(np.asarray(hi, dtype=np.float64))
    LO = np.ceil(np.atleast_2d(np.asarray(LO, dtype=np.float64)))
    HI = np.floor(np.atleast_2d(np.asarray(HI, dtype=np.float64)))
    if LO.shape != HI.shape or LO.shape[1:] != lo.shape:
        return False
    if np.any(HI < LO):
        return False                    # an empty tile: not part of a tiling the refinement makes
    if LO.shape[0] == 0:
        return bool(np.any(hi < lo))    # no tile: only an empty box
    if np.any(LO < lo) or np.any(HI > hi):
        return False
    stack = [(lo, hi, np.arange(LO.shape[0]))]
    while stack:
        blo, bhi, ids = stack.pop()
        if np.any(bhi < blo):
            if ids.size:
                return False
            continue
        if ids.size == 0:
            return False                # integer points no tile holds
        if ids.size == 1:
            k = int(ids[0])
            if np.array_equal(LO[k], blo) and np.array_equal(HI[k], bhi):
                continue
            return False
        L, H = LO[ids], HI[ids]
        cut = None
        for d in range(lo.shape[0]):
            if bhi[d] <= blo[d]:
                continue
            cand = np.unique(H[:, d])
            cand = cand[cand < bhi[d]]
            if cand.size == 0:
                continue
            ls, hs = np.sort(L[:, d]), np.sort(H[:, d])
            straddle = np.searchsorted(ls, cand, side="right") - np.searchsorted(hs, cand, side="right")
            ok = cand[straddle == 0]
            if ok.size:
                mid = 0.5 * (blo[d] + bhi[d])
                cut = (d, float(ok[np.argmin(np.abs(ok - mid))]))
                break
        if cut is None:
            return False                # no guillotine cut: an overlap, or a tiling this check refuses
        d, c = cut
        left = H[:, d] <= c
        alo, ahi = blo, bhi.copy()
        ahi[d] = c
        b_lo, b_hi = blo.copy(), bhi
        b_lo[d] = c + 1
        stack.append((alo, ahi, ids[left]))
        stack.append((b_lo, b_hi, ids[~left]))
    return True


def _rows(A) -> set:
    A = np.ascontiguousarray(np.asarray(A, dtype=np.float64))
    return {r.tobytes() for r in A}


def prove_tiled(lo, hi, integer, groups: Sequence, *, claim: str, individual: Sequence[int] | None = None,
                pair: dict | None = None) -> Proof | None:
    """One Proof that no individual of the box ``[lo, hi]`` is unfair, from ``groups``:
    ``(LO, HI, proof)`` -- tiles (arrays (m, n)) and the Proof that decided them fair (see the
    module docstring for what is checked). None when a check fails. ``individual``: the inputs of an
    individual (the others, the protected ones, span the same range in every tile; default all):
    an enumeration counts individuals, the integer points over these inputs.

    The Proof's method: ``enumeration`` if any tile was enumerated, else ``interval`` (the weakest
    kind of evidence it rests on is named); its detail carries the tiles' count, the count per
    method, and the group Proofs themselves (``parts``).

    It records what it is about, for :func:`fairspec.certify.partitions.combine_partitions`: the box
    (``detail["box"]``), the distinct claim records of its groups (``detail["records"]``,
    :func:`fairspec.certify.claims.direct_record`; None when a group has none) and ``pair``, the
    caller's pair question (:func:`fairspec.certify.claims.pair_scope` of the problem it refined)."""
    return _prove_tiled(lo, hi, integer, groups, claim, individual, {}, pair)


def prove_tiled_many(items: Sequence, integer, *, claim: str, individual: Sequence[int] | None = None,
                     pair: dict | None = None) -> list[Proof | None]:
    """:func:`prove_tiled` for many boxes at once: ``items`` are ``(lo, hi, groups)``, one Proof (or None)
    each, the same checks. An ``interval`` Proof's list of boxes is read into a set once for all the
    boxes whose tiles it covers (a batch of bounds decides up to 1,024 sub-boxes of many partitions: read
    once per partition, that cost ~0.8 ms a partition, more than the bounds at the root; AC-1 sex's first
    decision pass proves 8,000 partitions, one tile each)."""
    memo: dict = {}
    return [_prove_tiled(lo, hi, integer, groups, claim, individual, memo, pair) for lo, hi, groups in items]


def _prove_tiled(lo, hi, integer, groups, claim, individual, memo, pair=None) -> Proof | None:
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    if not np.all(np.asarray(integer, dtype=bool)):
        return None
    if not groups:
        return None
    ind = list(range(lo.shape[0])) if individual is None else [int(i) for i in individual]
    LOs, HIs = [], []
    by = {"interval": 0, "enumeration": 0}
    enumerated = 0
    proofs = []
    for G in groups:
        if len(G) != 3:
            return None
        GL, GH, pr = G
        GL = np.atleast_2d(np.asarray(GL, dtype=np.float64))
        GH = np.atleast_2d(np.asarray(GH, dtype=np.float64))
        if GL.shape != GH.shape or GL.shape[1] != lo.shape[0] or GL.shape[0] == 0:
            return None
        if not isinstance(pr, Proof):
            return None
        boxes = pr.detail.get("_boxes")
        if boxes is None or len(boxes) != 2:
            return None
        PL, PH = (np.atleast_2d(np.asarray(b, dtype=np.float64)) for b in boxes)
        if PL.shape != PH.shape or PL.shape[1] != lo.shape[0]:
            return None
        if pr.method == "interval":
            if pr.detail.get("side") != "fair":
                return None
            # the Proof's boxes as a set, read once per Proof in this call (it is kept in the memo
            # beside its set, so its id cannot be reused by another object meanwhile)
            hit = memo.get(id(pr))
            if hit is None or hit[0] is not pr:
                hit = memo[id(pr)] = (pr, _rows(np.concatenate([PL, PH], axis=1)))
            have = hit[1]
            if any(r not in have for r in _rows(np.concatenate([GL, GH], axis=1))):
                return None
        elif pr.method == "enumeration":
            # the proof's boxes are the group's tiles, one for one, and it counted each point fair
            if PL.shape != GL.shape or not (np.array_equal(PL, GL) and np.array_equal(PH, GH)):
                return None
            pts = sum(_points(GL[:, ind], GH[:, ind]))
            d = pr.detail
            rel = d["record"].get("_relation") if isinstance(d.get("record"), dict) else None
            if rel is not None and rel[0] and not set(range(lo.shape[0])) - {int(i) for i, _ in rel[0][0]} <= set(ind):
                return None             # an input neither the cases' nor the individual's: not enumerated
            if d.get("unit") != "individuals" or d.get("count") != pts or d.get("fair") != pts or d.get("unfair") != 0:
                return None
            enumerated += pts
        else:
            return None
        by[pr.method] += GL.shape[0]
        LOs.append(GL)
        HIs.append(GH)
        proofs.append(pr)
    LO, HI = np.concatenate(LOs), np.concatenate(HIs)
    if not tiles_partition(lo, hi, LO, HI):
        return None
    total = sum(_points(lo[None, ind], hi[None, ind]))
    if sum(_points(LO[:, ind], HI[:, ind])) != total:
        return None                     # (cannot happen after the tree check; a second, independent count)
    method = "enumeration" if by["enumeration"] else "interval"
    # what the tiling is about: its box, its groups' claim records (distinct), the caller's pair question
    recs = []
    for pr in proofs:
        r = pr.detail.get("record")
        if not isinstance(r, dict):
            recs = None
            break
        if r not in recs:
            recs.append(r)
    about = dict(box=[[float(v) for v in lo], [float(v) for v in hi]], records=recs,
                 **({} if pair is None else {"pair": pair}))
    if method == "enumeration":
        return _mint("enumeration", claim, count=enumerated, unit="individuals", tiles=int(LO.shape[0]),
                     tiles_interval=by["interval"], tiles_enumerated=by["enumeration"], points=total,
                     parts=tuple(proofs), **about)
    return _mint("interval", claim, tiles=int(LO.shape[0]), tiles_interval=by["interval"], tiles_enumerated=0,
                 points=total, parts=tuple(proofs), side="fair", **about)
