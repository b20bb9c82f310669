"""Boxes of individuals proved fair by splitting at a hidden layer instead of at the inputs
(issue 24: the fair sign partitions of Fairify's AC-7, whose per-copy bounds at the root are -0.24
to -4.3 below a logit plateau of +0.379 while input splitting needs thousands of sub-boxes).

For one box of individuals, one protected value (a *case*) and a hidden layer ``L`` (with a ReLU):
every individual's post-activations ``h_L = relu(p_L)`` of the exact network lie in the box
``[relu(l_L), relu(u_L)]``, where ``[l_L, u_L]`` are the rigorous bounds of the pre-activations
over the input box (:func:`fairspec.certify.boxes.box_bounds`: outward-rounded intervals
intersected with back-substituted linear bounds). A neuron with ``u_L <= 0`` is *dead*: exactly 0
for every individual. The rest of the network is a function ``g`` of ``h_L`` alone, so bounding
``g`` over boxes (*tiles*) that cover the few *live* coordinates' box (the dead ones fixed at 0)
bounds the score of every individual of the box. When few neurons are live (AC-7 race: 1-2 of 32
in the second hidden layer) a handful of tiles in 1-2 dimensions does what thousands of input
sub-boxes did not.

:func:`prove_layer_split` is given, per box and case, the certificate of a search (the backend's,
:func:`fairspec.backends.layer_splits.layer_split_plans`): the layer, the indices it calls live and the
tiles over those coordinates. It checks, itself:

* **the neurons called dead are dead**: every neuron not listed live has an upper bound ``<= 0``
  (its own bounds over the box, the case's protected inputs set);
* **the tiles cover the live box**: the union of the (closed) tiles holds every point of
  ``[max(l_L, 0), max(u_L, 0)]`` over the live coordinates (:func:`tiles_cover`: a region is
  covered when one tile holds it, else it is cut at a tile's face strictly inside it and both
  sides are checked; a region no tile holds with no face inside has uncovered points). Tiles may
  overlap and reach outside the box (a bound over a larger tile is still a bound);
* **the score over every tile**: ``g``'s bounds over the tile (the dead coordinates 0), by the
  same batched bounds, the readout's score (:func:`fairspec.certify.boxes._scores`), the least
  lower and the greatest upper bound over the tiles, widened by the runtime error bound E of the
  case exactly as :func:`fairspec.certify.boxes.decide_boxes` widens its per-copy bounds (E bounds
  the runtime's score against the exact network's over a box containing the box).

Then, for the ``label`` post-condition only (the sign property; threshold t 0 for a logit or
margin readout, 1/2 for a probability), the box is fair when for every allowed pair (a, b) case a
is surely not positive (``upper_a + E <= t``) or case b surely is (``lower_b - E > t``), every
comparison as :func:`decide_boxes` makes it. One ``interval`` Proof covers the boxes proved fair
(``detail["_boxes"]`` lists them when asked for, so :func:`fairspec.certify.tiling.prove_tiled`
accepts them as tiles). A certificate that fails a check leaves its box undecided.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from fairspec.certify.boxes import _encoded, _scores, box_bounds, down, up

__all__ = ["prove_layer_split", "tiles_cover", "certificates_by_layer", "layer_bounds", "tile_scores", "SplitDecisions"]


def tiles_cover(lo, hi, TL, TH) -> bool:
    """Does the union of the closed boxes ``[TL[j], TH[j]]`` hold every point of the closed box
    ``[lo, hi]`` (real coordinates)? Exact: float comparisons only. A box with ``hi < lo`` somewhere
    is empty (covered)."""
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    TL = np.atleast_2d(np.asarray(TL, dtype=np.float64))
    TH = np.atleast_2d(np.asarray(TH, dtype=np.float64))
    if np.any(hi < lo):
        return True
    if lo.size == 0:
        return TL.shape[0] > 0          # a point: any tile holds it
    if TL.shape != TH.shape or TL.shape[1:] != lo.shape or not np.all(np.isfinite(TL)) \
            or not np.all(np.isfinite(TH)) or not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        return False
    stack = [(lo, hi)]
    while stack:
        a, b = stack.pop()
        # the tiles that meet the region (closed boxes)
        meet = np.all((TL <= b) & (TH >= a), axis=1)
        L, H = TL[meet], TH[meet]
        if L.shape[0] == 0:
            return False
        if np.any(np.all((L <= a) & (H >= b), axis=1)):
            continue                    # one tile holds the region
        cut = None
        for d in range(a.shape[0]):
            if b[d] <= a[d]:
                continue
            faces = np.concatenate([L[:, d], H[:, d]])
            inside = faces[(faces > a[d]) & (faces < b[d])]
            if inside.size:
                mid = 0.5 * (a[d] + b[d])
                cut = (d, float(inside[np.argmin(np.abs(inside - mid))]))
                break
        if cut is None:
            # no tile holds the region and no face lies inside it: every tile meeting it misses its
            # relative interior (each either spans a coordinate or only touches the region's face),
            # so points of the region are uncovered
            return False
        d, c = cut
        b1 = b.copy()
        b1[d] = c
        a2 = a.copy()
        a2[d] = c
        stack.append((a, b1))
        stack.append((a2, b))
    return True


def certificates_by_layer(layers, certificates, entries: int, why: list, what: str) -> dict:
    """``{L: [k, ...]}``: the boxes whose certificate ``(L, per_entry)`` names a hidden ReLU layer ``L``
    (not the last) and has ``entries`` entries (one per case, or per pair); for every other box
    ``why[k]`` says what is wrong (``what``: "a case" / "a pair", the entry a short list lacks)."""
    by_layer: dict = {}
    for k, cert in enumerate(certificates):
        if cert is None:
            why[k] = "no certificate"
            continue
        try:
            L, per_entry = cert
            L = int(L)
            n = len(per_entry)
        except (TypeError, ValueError):
            why[k] = "a malformed certificate"
            continue
        if not (0 <= L < len(layers) - 1) or not layers[L][2] or n != entries:
            why[k] = f"the certificate's layer is not a hidden ReLU layer, or {what} is missing"
            continue
        by_layer.setdefault(L, []).append(k)
    return by_layer


def _prefix(layers, L):
    """The network up to the pre-activations of layer ``L`` (its ReLU dropped)."""
    W, b, _ = layers[L]
    return list(layers[:L]) + [(W, b, False)]


def layer_bounds(layers, L: int, XLO, XHI):
    """Rigorous bounds ``(plo, phi)`` (arrays (N, m_L)) of layer ``L``'s pre-activations of the exact
    network over each input box (rows of ``XLO`` / ``XHI``, model inputs after the encoding)."""
    XLO = np.atleast_2d(np.asarray(XLO, dtype=np.float64))
    XHI = np.atleast_2d(np.asarray(XHI, dtype=np.float64))
    pre = _prefix(layers, L)
    lo, hi = [], []
    for s in range(0, max(XLO.shape[0], 1), _CHUNK):
        plo, phi, _ = box_bounds(pre, XLO[s:s + _CHUNK], XHI[s:s + _CHUNK])
        lo.append(plo)
        hi.append(phi)
    return np.concatenate(lo), np.concatenate(hi)


def tile_scores(layers, L: int, TLO, THI, readout):
    """Rigorous bounds ``(s_lo, s_hi)`` (arrays (M,)) of the readout's score of the exact network
    given layer ``L``'s post-activations in each box ``[TLO[j], THI[j]]`` (arrays (M, m_L))."""
    TLO = np.atleast_2d(np.asarray(TLO, dtype=np.float64))
    THI = np.atleast_2d(np.asarray(THI, dtype=np.float64))
    sub = list(layers[L + 1:])
    lo, hi = [], []
    for s in range(0, max(TLO.shape[0], 1), _CHUNK):       # in chunks: the bounds' arrays grow with the tiles
        plo, phi, _ = box_bounds(sub, TLO[s:s + _CHUNK], THI[s:s + _CHUNK])
        a, b = _scores(plo, phi, readout)
        lo.append(a)
        hi.append(b)
    return np.concatenate(lo), np.concatenate(hi)


#: tiles bounded per batch (memory: the back-substitution's arrays are tiles x neurons x neurons)
_CHUNK = 1024


class SplitDecisions:
    """The outcome of :func:`prove_layer_split`: ``status[k]`` 1 (box k proved fair) or 0;
    ``proof`` the Proof of the boxes with status 1 (None when there are none); ``why[k]`` why a
    certificate was refused ("" when it was checked, whatever the bounds then said)."""

    __slots__ = ("status", "proof", "why")

    def __init__(self, status, proof, why):
        self.status, self.proof, self.why = status, proof, why


def prove_layer_split(runtime_net, LO, HI, cases: Sequence[dict], pairs: Sequence[tuple[int, int]],
                      certificates: Sequence, *, errors: Sequence[float], readout=("logit", 0), encoding=None,
                      integer=None, precision: str = "float32", complete: bool, claim: str,
                      keep_boxes: bool = False, post: str = "label", **detail) -> SplitDecisions:
    """Decide the boxes ``[LO[k], HI[k]]`` (model inputs, (N, n)) fair by a split at a hidden layer
    (see the module docstring).

    certificates: per box, None (not tried) or ``(L, per_case)``: ``L`` the index of a hidden layer
              with a ReLU (not the last layer), ``per_case[c]`` = ``(live, TLO, THI)`` for every case
              c: the indices of layer L's neurons it calls live and the tiles (arrays (M, len(live)))
              over those coordinates.
    cases, pairs, errors, readout, encoding, integer, precision, complete: as for
              :func:`fairspec.certify.boxes.decide_boxes` (``complete``: ``cases`` are every value
              the protected inputs may take; else nothing is proved).
    keep_boxes: the Proof lists the boxes it proved (``detail["_boxes"]``), for
              :func:`fairspec.certify.tiling.prove_tiled`.
    """
    from fairspec.certify.network import as_layers
    from fairspec.certify.proof import _mint

    layers = as_layers(runtime_net)
    LO = np.atleast_2d(np.asarray(LO, dtype=np.float64))
    HI = np.atleast_2d(np.asarray(HI, dtype=np.float64))
    N = LO.shape[0]
    status = np.zeros(N, dtype=np.int8)
    why = [""] * N
    if post != "label" or not complete or not pairs or readout[0] not in ("logit", "prob", "margin", "softmax") \
            or len(certificates) != N or len(errors) != len(cases):
        return SplitDecisions(status, None, ["not a complete sign property with one certificate per box"] * N)
    E = [float(e) for e in errors]
    if not all(e >= 0 for e in E):
        raise ValueError("the runtime error bound must be >= 0")
    t = 0.5 if readout[0] in ("prob", "softmax") else 0.0
    nc = len(cases)
    lows = np.full((N, nc), -np.inf)
    highs = np.full((N, nc), np.inf)
    ok = np.zeros(N, dtype=bool)
    by_layer = certificates_by_layer(layers, certificates, nc, why, "a case")
    for L, ks in by_layer.items():
        m = layers[L][0].shape[0]
        K = np.array(ks, dtype=np.int64)
        # layer L's bounds over every (box, case), one batch
        XL, XH = [], []
        for c, case in enumerate(cases):
            clo, chi = LO[K].copy(), HI[K].copy()
            for i, v in case.items():
                clo[:, i] = chi[:, i] = v
            xl, xh = _encoded(encoding, clo, chi, integer, precision)
            XL.append(xl)
            XH.append(xh)
        plo, phi = layer_bounds(layers, L, np.concatenate(XL), np.concatenate(XH))
        nK = len(ks)
        TL, TH, owner = [], [], []
        good = np.ones(nK, dtype=bool)
        for r, k in enumerate(ks):
            for c in range(nc):
                row = c * nK + r
                try:
                    live, tlo, thi = certificates[k][1][c]
                    live = np.asarray(live, dtype=np.int64).reshape(-1)
                    tlo = np.atleast_2d(np.asarray(tlo, dtype=np.float64))
                    thi = np.atleast_2d(np.asarray(thi, dtype=np.float64))
                except (TypeError, ValueError):
                    why[k] = "a malformed certificate"
                    good[r] = False
                    break
                if live.size and (live.min() < 0 or live.max() >= m or np.unique(live).size != live.size):
                    why[k] = "the certificate names a neuron the layer does not have"
                    good[r] = False
                    break
                dead = np.ones(m, dtype=bool)
                dead[live] = False
                if np.any(~(phi[row, dead] <= 0)):
                    why[k] = f"a neuron called dead at layer {L} may be active (case {c})"
                    good[r] = False
                    break
                if tlo.shape != thi.shape or tlo.shape[1] != live.size or tlo.shape[0] == 0:
                    why[k] = "the tiles do not match the live neurons"
                    good[r] = False
                    break
                blo = np.maximum(plo[row, live], 0.0)
                bhi = np.maximum(phi[row, live], 0.0)
                if not tiles_cover(blo, bhi, tlo, thi):
                    why[k] = f"the tiles do not cover the live neurons' box at layer {L} (case {c})"
                    good[r] = False
                    break
                full_lo = np.zeros((tlo.shape[0], m))
                full_hi = np.zeros((tlo.shape[0], m))
                full_lo[:, live] = tlo
                full_hi[:, live] = thi
                TL.append(full_lo)
                TH.append(full_hi)
                owner.append(np.full(tlo.shape[0], row, dtype=np.int64))
        if not TL:
            continue
        owner = np.concatenate(owner)
        s_lo, s_hi = tile_scores(layers, L, np.concatenate(TL), np.concatenate(TH), readout)
        rows = nc * nK
        lo_r = np.full(rows, np.inf)
        hi_r = np.full(rows, -np.inf)
        np.minimum.at(lo_r, owner, s_lo)
        np.maximum.at(hi_r, owner, s_hi)
        for r, k in enumerate(ks):
            if not good[r]:
                continue
            ok[k] = True
            for c in range(nc):
                lows[k, c] = down(lo_r[c * nK + r] - E[c])
                highs[k, c] = up(hi_r[c * nK + r] + E[c])
    fair = ok.copy()
    for a, b in pairs:
        fair &= (highs[:, a] <= t) | (lows[:, b] > t)
    with np.errstate(invalid="ignore"):
        fair &= np.all(np.isfinite(lows) & np.isfinite(highs), axis=1)
    status[fair] = 1
    if not fair.any():
        return SplitDecisions(status, None, why)
    kept = {"_boxes": (LO[fair].copy(), HI[fair].copy())} if keep_boxes else {}
    from fairspec.certify.claims import direct_record

    proof = _mint("interval", claim, boxes=int(fair.sum()), side="fair", post=post, cases=nc,
                  record=direct_record(post, readout=readout, precision=precision, relation=(cases, pairs)),
                  runtime_error=max(E), readout=list(readout), split="a hidden layer's live neurons, tiled",
                  layers=sorted({int(certificates[k][0]) for k in np.flatnonzero(fair)}), **kept, **detail)
    return SplitDecisions(status, proof, why)
