"""The searches for the splits at a hidden layer (issue 24): the backend's half of
:mod:`fairspec.certify.layersplit` (the sign property: a hidden layer's few live neurons, their box
tiled) and :mod:`fairspec.certify.relsplit` (the ``logit`` / ``prob`` posts: one copy's live
pre-activations tiled, the other copy's shifted by the pair's difference bounds). A search only
proposes certificates; certify checks each one itself and mints the Proof. Run by the decision pass of
:mod:`fairspec.backends.refine` on the sub-boxes its batched bounds leave."""

from __future__ import annotations

import itertools

import numpy as np

__all__ = ["layer_split_plans", "relational_split_plans", "SPLIT_LIVE", "SPLIT_TILES", "EPS_TILES"]

#: a layer is tried when at most this many of its neurons are live (upper bound > 0) for every case
SPLIT_LIVE = 3
#: at most this many tiles of a hidden layer's live box per box and case (a count; AC-7 race's partitions
#: take 1-7 at the root, bench/results/fairify_ac7.md)
SPLIT_TILES = 16


def _least_live(hidden, live_max, max_live: int):
    """``(L, ks)`` per hidden layer: the boxes ``ks`` whose least count of live neurons (``live_max``, one
    row per layer of ``hidden``, one column per box; the earlier layer on a tie) is at that layer and at
    most ``max_live``."""
    choice = np.argmin(live_max, axis=0)
    for L_at in np.unique(choice):
        ks = np.flatnonzero((choice == L_at) & (live_max[L_at] <= max_live))
        if ks.size:
            yield hidden[int(L_at)], ks


def _finished(rows, failed, done):
    """``(k, {case or pair: row id})`` per box ``k`` whose search finished: not given up (``failed``) and every
    row of it tiled (``done[row id]`` not empty); ``rows`` lists ``(box, case or pair)`` by row id."""
    by_box: dict = {}
    for rid, (k, c) in enumerate(rows):
        by_box.setdefault(k, {})[c] = rid
    for k, ids in by_box.items():
        if k not in failed and all(done[rid] for rid in ids.values()):
            yield k, ids


def _bisect(a, b, d: int):
    """A tile ``[a, b]`` halved on coordinate ``d``: ``(b1, a2)``, the first half ``[a, b1]`` and the
    second ``[a2, b]``; None when the midpoint is not strictly inside (a float tile too thin to halve)."""
    mid = 0.5 * (a[d] + b[d])
    if not (a[d] < mid < b[d]):
        return None
    b1, a2 = b.copy(), a.copy()
    b1[d] = mid
    a2[d] = mid
    return b1, a2


def layer_split_plans(layers, LO, HI, cases, errors, readout, *, encoding=None, integer=None,
                      precision="float32", max_live: int = SPLIT_LIVE, max_tiles: int = SPLIT_TILES,
                      bounds: list | None = None) -> list:
    """The search for :func:`fairspec.certify.layersplit.prove_layer_split`'s certificates: per box
    ``[LO[k], HI[k]]``, None or ``(L, per_case)``.

    The layer: every hidden ReLU layer's bounds over each (box, case) (one batch), its live neurons
    (upper bound > 0); the layer whose largest live count over the cases is least (at most
    ``max_live``; the earlier on a tie). First the live box's corners (points): one not surely on one
    side of the threshold (after E), or two on different sides (over every case of the box), and the
    box is given up; else that side is the target. The tiles: bisection of each case's live box (its
    widest side), all boxes and cases in one batch per round, a tile kept when its score is surely on
    the target side; a tile on the other side, or more than ``max_tiles``, gives its box up.
    ``bounds``: per case, every layer's pre-activation bounds over these boxes (``decide_boxes``'s
    ``keep_layers``), so they are not computed again. Only a search: certify checks what it finds."""
    from fairspec.certify.boxes import _encoded, box_bounds, down, up
    from fairspec.certify.layersplit import tile_scores

    LO = np.atleast_2d(np.asarray(LO, dtype=np.float64))
    HI = np.atleast_2d(np.asarray(HI, dtype=np.float64))
    N, nc = LO.shape[0], len(cases)
    out: list = [None] * N
    hidden = [L for L in range(len(layers) - 1) if layers[L][2]]
    if N == 0 or not hidden:
        return out
    t = 0.5 if readout[0] in ("prob", "softmax") else 0.0
    keep: list = []
    if bounds is None:
        XL, XH = [], []
        for case in cases:
            clo, chi = LO.copy(), HI.copy()
            for i, v in case.items():
                clo[:, i] = chi[:, i] = v
            xl, xh = _encoded(encoding, clo, chi, integer, precision)
            XL.append(xl)
            XH.append(xh)
        box_bounds(layers, np.concatenate(XL), np.concatenate(XH), keep=keep)   # rows: case c, box k at c*N+k
    else:
        keep = [(np.concatenate([b[j][0] for b in bounds]), np.concatenate([b[j][1] for b in bounds]))
                for j in range(len(bounds[0]))]
    live_max = np.stack([np.max((keep[L][1] > 0).reshape(nc, N, -1).sum(axis=2), axis=0) for L in hidden])
    for L, ks in _least_live(hidden, live_max, max_live):
        m = layers[L][0].shape[0]
        plo, phi = keep[L]
        # per (box, case): its live coordinates and its queue of tiles
        rows = [(k, c) for k in ks.tolist() for c in range(nc)]
        lives, done, side = {}, {}, {}
        queue = []                      # (row id, tlo, thi) over the live coordinates
        failed = set()
        for rid, (k, c) in enumerate(rows):
            r = c * N + k
            live = np.flatnonzero(phi[r] > 0)
            lives[rid] = live
            done[rid] = []
            queue.append((rid, np.maximum(plo[r, live], 0.0), np.maximum(phi[r, live], 0.0)))
        # the corners of every live box first (points: their bounds are nearly exact): a corner not
        # surely on one side, or two on different sides (of any case of the box), and the box is given up
        # at once -- what keeps the search cheap where it cannot succeed (AC-1, BM-1)
        CL, owner = [], []
        for rid, a, b in queue:
            for corner in itertools.product(*[(x, y) for x, y in zip(a.tolist(), b.tolist())]):
                v = np.zeros(m)
                v[lives[rid]] = corner
                CL.append(v)
                owner.append(rid)
        c_lo, c_hi = tile_scores(layers, L, np.array(CL), np.array(CL), readout)
        Ec = np.array([float(errors[rows[rid][1]]) for rid in owner])
        Sc = np.where(down(c_lo - Ec) > t, 1, np.where(up(c_hi + Ec) <= t, -1, 0)).tolist()
        box_side: dict = {}
        for rid, s in zip(owner, Sc):
            k = rows[rid][0]
            if s == 0 or box_side.setdefault(k, s) != s:
                failed.add(k)
            else:
                side[rid] = s
        count = {rid: 1 for rid in range(len(rows))}
        while queue:
            queue = [q for q in queue if rows[q[0]][0] not in failed]
            if not queue:
                break
            TL = np.zeros((len(queue), m))
            TH = np.zeros((len(queue), m))
            for j, (rid, a, b) in enumerate(queue):
                TL[j, lives[rid]] = a
                TH[j, lives[rid]] = b
            s_lo, s_hi = tile_scores(layers, L, TL, TH, readout)
            Eq = np.array([float(errors[rows[rid][1]]) for rid, _, _ in queue])
            S = np.where(down(s_lo - Eq) > t, 1, np.where(up(s_hi + Eq) <= t, -1, 0)).tolist()
            nxt = []
            for j, (rid, a, b) in enumerate(queue):
                k, c = rows[rid]
                if k in failed:
                    continue
                s = S[j]
                if s and side.setdefault(rid, s) != s:
                    failed.add(k)                   # tiles on both sides: the case changes sign
                    continue
                if s:
                    done[rid].append((a, b))
                    continue
                if a.size == 0 or count[rid] + 1 > max_tiles:
                    failed.add(k)
                    continue
                halves = _bisect(a, b, int(np.argmax(b - a)))
                if halves is None:
                    failed.add(k)
                    continue
                b1, a2 = halves
                count[rid] += 1
                nxt += [(rid, a, b1), (rid, a2, b)]
            queue = nxt
        for k, cs in _finished(rows, failed, done):
            if len({side.get(rid) for rid in cs.values()}) != 1:
                continue                            # one case surely positive, another surely not
            per_case = []
            for c in range(nc):
                rid = cs[c]
                A = np.stack([a for a, _ in done[rid]])
                B = np.stack([b for _, b in done[rid]])
                per_case.append((lives[rid], A, B))
            out[k] = (L, per_case)
    return out


#: at most this many tiles of copy a's live pre-activation box per box and pair in the relational split
#: for the eps posts (a count)
EPS_TILES = 16


def relational_split_plans(layers, LO, HI, cases, pairs, errors, readout, *, post, eps, eps_strict=False,
                           max_live: int = SPLIT_LIVE, max_tiles: int = EPS_TILES, bounds: list | None = None) -> list:
    """The search for :func:`fairspec.certify.relsplit.prove_relational_split`'s certificates (the
    ``logit`` / ``prob`` posts, raw inputs): per box ``[LO[k], HI[k]]``, None or ``(L, per_pair)``.

    The layer: the hidden ReLU layer whose largest count of neurons live in either copy of a pair (upper
    bound > 0) is least (at most ``max_live``; the earlier on a tie), from ``bounds`` (per case, every
    layer's pre-activation bounds over these boxes: ``decide_boxes``' ``keep_layers``) or computed. Per
    (box, pair): the live neurons, the pair's difference bounds there (the claimed shift), and tiles by
    best-first bisection (the widest side) of copy a's live pre-activation box, all boxes and pairs in
    one batch per round, a tile kept when it meets eps
    (:func:`fairspec.certify.relsplit.pair_tile_gaps`); first the corners and the centre of the box as
    point tiles: one that fails gives the box up at once (no tiling can pass there). More than
    ``max_tiles`` for a (box, pair) gives the box up. Only a search: certify checks what it finds."""
    from fairspec.certify.boxes import box_bounds, down, up
    from fairspec.certify.relsplit import layer_pair_bounds, meets_eps, pair_tile_gaps

    LO = np.atleast_2d(np.asarray(LO, dtype=np.float64))
    HI = np.atleast_2d(np.asarray(HI, dtype=np.float64))
    N, nc = LO.shape[0], len(cases)
    out: list = [None] * N
    hidden = [L for L in range(len(layers) - 1) if layers[L][2]]
    if N == 0 or not hidden or not pairs:
        return out

    def case_box(c, K):
        clo, chi = LO[K].copy(), HI[K].copy()
        for i, v in cases[c].items():
            clo[:, i] = chi[:, i] = v
        return clo, chi

    if bounds is None:
        bounds = []
        for c in range(nc):
            keep: list = []
            box_bounds(layers, *case_box(c, np.arange(N)), keep=keep)
            bounds.append(keep)
    live_max = np.stack([np.max([((bounds[a][L][1] > 0) | (bounds[b][L][1] > 0)).sum(axis=1) for a, b in pairs],
                                axis=0) for L in hidden])
    for L, ks in _least_live(hidden, live_max, max_live):
        m = layers[L][0].shape[0]
        rows, parts_ = [], []        # per (box, pair): (k, p); stacked (R, m) arrays of that row's bounds
        for p, (a, b) in enumerate(pairs):
            la, ua, lb, ub, dl, dh = layer_pair_bounds(layers, L, *case_box(a, ks), *case_box(b, ks),
                                                       sorted(set(cases[a]) | set(cases[b])))
            rows += [(k, p) for k in ks.tolist()]
            parts_.append((la, ua, lb, ub, dl, dh, np.full(len(ks), float(errors[a])),
                           np.full(len(ks), float(errors[b]))))
        LA, UA, LB, UB, DL, DH, EA, EB = (np.concatenate([q[i] for q in parts_]) for i in range(8))
        LIVE = (UA > 0) | (UB > 0)
        failed: set = set()

        def gaps(rids, TL, TH):
            """Tiles (full width: a row's dead coordinates at copy a's own bounds) -> does each meet eps."""
            mask = LIVE[rids]
            lb_, ub_ = LB[rids], UB[rids]
            BL = np.where(mask, np.maximum(down(TL + DL[rids]), lb_), lb_)
            BH = np.where(mask, np.minimum(up(TH + DH[rids]), ub_), ub_)
            empty = np.any(~(BL <= BH), axis=1) | np.any(~(TL <= TH), axis=1)
            AH = np.where(empty[:, None], np.maximum(TL, TH), TH)
            BH = np.where(empty[:, None], np.maximum(BL, BH), BH)
            g = pair_tile_gaps(layers, L, TL, AH, BL, BH, DL[rids], DH[rids], EA[rids], EB[rids], readout, post)
            return meets_eps(g, eps, eps_strict) | empty

        # point tiles first: the corners (at most 2^max_live) and the centre of every live box
        P_r, P_v = [], []
        for rid in range(len(rows)):
            live = np.flatnonzero(LIVE[rid])
            for corner in itertools.product(*[(x, y) for x, y in zip(LA[rid, live].tolist(), UA[rid, live].tolist())]):
                v = LA[rid].copy()
                v[live] = corner
                P_r.append(rid)
                P_v.append(v)
            c_ = LA[rid].copy()
            c_[live] = 0.5 * (LA[rid, live] + UA[rid, live])
            P_r.append(rid)
            P_v.append(c_)
        P_r = np.array(P_r, dtype=np.int64)
        P_v = np.array(P_v)
        for rid, okp in zip(P_r.tolist(), gaps(P_r, P_v, P_v).tolist()):
            if not okp:
                failed.add(rows[rid][0])
        # the queue: row ids and full-width tiles (the live coordinates bisected)
        Q_r = np.arange(len(rows), dtype=np.int64)
        Q_lo, Q_hi = LA.copy(), UA.copy()
        done = {rid: [] for rid in range(len(rows))}
        count = np.ones(len(rows), dtype=np.int64)
        while len(Q_r):
            keep = np.array([rows[r][0] not in failed for r in Q_r.tolist()], dtype=bool)
            Q_r, Q_lo, Q_hi = Q_r[keep], Q_lo[keep], Q_hi[keep]
            if not len(Q_r):
                break
            okt = gaps(Q_r, Q_lo, Q_hi)
            for j in np.flatnonzero(okt).tolist():
                if rows[Q_r[j]][0] not in failed:
                    done[int(Q_r[j])].append((Q_lo[j], Q_hi[j]))
            bad = np.flatnonzero(~okt)
            split_r, split_lo, split_hi = [], [], []
            for j in bad.tolist():
                rid = int(Q_r[j])
                k = rows[rid][0]
                if k in failed:
                    continue
                mask = LIVE[rid]
                if not mask.any() or count[rid] + 1 > max_tiles:
                    failed.add(k)
                    continue
                a_, b_ = Q_lo[j], Q_hi[j]
                halves = _bisect(a_, b_, int(np.argmax(np.where(mask, b_ - a_, -np.inf))))
                if halves is None:
                    failed.add(k)
                    continue
                b1, a2 = halves
                count[rid] += 1
                split_r += [rid, rid]
                split_lo += [a_, a2]
                split_hi += [b1, b_]
            if not split_r:
                break
            Q_r = np.array(split_r, dtype=np.int64)
            Q_lo, Q_hi = np.array(split_lo), np.array(split_hi)
        for k, ps in _finished(rows, failed, done):
            per_pair = []
            for p in range(len(pairs)):
                rid = ps[p]
                live = np.flatnonzero(LIVE[rid])
                per_pair.append((live, np.stack([a[live] for a, _ in done[rid]]),
                                 np.stack([b[live] for _, b in done[rid]]), DL[rid, live].copy(), DH[rid, live].copy()))
            out[k] = (L, per_pair)
    return out
