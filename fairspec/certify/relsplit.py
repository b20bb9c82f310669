"""Boxes of individuals proved fair for a *difference* post-condition (``logit`` / ``prob``: HyFair's
``|p(x) - p(x')| <= eps`` between the two copies that differ only in the protected inputs) by a
*relational* split at a hidden layer (issue 24: the open eps partitions of Fairify's AC-9, where one
first-layer neuron is live in both copies, so the network is a function of that one scalar, and the
copies' values of it differ by the constant ``W[0, protected] (x_b - x_a)``; input splitting over 12
inputs narrows it too slowly, the relational bound at the root is too loose for eps 0.05).

For one box of individuals, one ordered pair (a, b) of protected values and a hidden ReLU layer
``L``: write ``p_a(x)``, ``p_b(x)`` for layer ``L``'s pre-activations of the exact network at the two
copies of individual x. Over the box, ``p_a`` lies in ``[l_a, u_a]`` and ``p_b`` in ``[l_b, u_b]``
(rigorous bounds, :func:`fairspec.certify.boxes.box_bounds`), and the difference ``p_b - p_a`` in
``[dl, du]`` (:func:`fairspec.certify.boxes.relational_bounds` over the layers up to ``L``; at the
first layer on raw inputs the exact ``W[:, protected] (x_b - x_a)``, rounded outward). A neuron with
``u_a <= 0`` and ``u_b <= 0`` is *dead*: 0 in both copies. The certificate (the backend's search,
:func:`fairspec.backends.layer_splits.relational_split_plans`) tiles copy a's *pre*-activations of the
*live* neurons (the rest); for every individual, ``p_a(x)`` lies in some tile T, so ``p_b(x)`` lies in
``(T + [dl, du]) & [l_b, u_b]`` (the same individual in both copies: what makes it relational). The
rest of the network is a function of the post-activations alone, so per tile both copies' scores are
bounded over ``relu(T)`` and ``relu(T_b)`` (dead coordinates 0), and also their difference through
the rest of the network jointly (:func:`relational_bounds` from ``relu(p_b) - relu(p_a)``, the mean
value theorem for ``prob``), exactly as :func:`fairspec.certify.boxes.decide_boxes` bounds a box.

:func:`prove_relational_split` checks, itself, per box and pair:

* **the neurons called dead are dead** in both copies (their own bounds over the box);
* **the claimed shift holds the difference**: the certificate's ``[dlo, dhi]`` per live neuron
  contains the check's own ``[dl, du]`` (a wider shift is still a bound);
* **the tiles cover copy a's live box** ``[l_a, u_a]`` over the live neurons
  (:func:`fairspec.certify.layersplit.tiles_cover`, closed tiles, overlaps allowed);
* **every tile meets eps**: ``upper(score_a) - lower(score_b)`` over the tile (each copy widened by
  its runtime error bound E as ``decide_boxes`` widens it, the logistic rounded outward for ``prob``;
  the smaller of the per-copy and the relational bound) is ``<= eps`` (``< eps`` when the spec writes
  ``|...| < eps``), compared as ``decide_boxes`` compares it. A tile whose ``T_b`` is empty holds no
  individual (nothing to check).

A box is fair when every allowed pair's certificate passes. One ``interval`` Proof covers the boxes
proved fair (``detail["_boxes"]`` lists them when asked for, for
:func:`fairspec.certify.tiling.prove_tiled`). A certificate that fails a check leaves its box
undecided. Raw inputs only (as ``decide_boxes``' relational bound).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from fairspec.certify.boxes import (_logits, _scores, _sigmoid_hi, _sigmoid_lo, _slope_max, box_bounds, down,
                                    relational_bounds, relu_difference, up)
from fairspec.certify.layersplit import SplitDecisions, _prefix, certificates_by_layer, tiles_cover

__all__ = ["prove_relational_split", "pair_tile_gaps", "layer_pair_bounds", "meets_eps"]

#: tiles bounded per batch (memory: the back-substitution's arrays are tiles x neurons x neurons)
_CHUNK = 512


def meets_eps(gap, eps, strict: bool):
    """``gap`` (an upper bound of ``score_a - score_b``) is fair against eps exactly as
    :func:`fairspec.certify.boxes.decide_boxes` compares it: ``<= eps`` (``< eps`` when strict), eps
    read as written (a float interval when it is not a float)."""
    from fairspec.certify.exact import threshold_of
    from fairspec.certify.rounding import float_down, float_up

    e = threshold_of(eps)
    elo, ehi = float_down(e), float_up(e)
    gap = np.asarray(gap, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        if strict:
            return gap < elo
        return (gap <= elo) if elo == ehi else (gap < elo)


def layer_pair_bounds(layers, L: int, XA_lo, XA_hi, XB_lo, XB_hi, moved):
    """Per box (rows), layer ``L``'s pre-activation bounds of each copy and of their difference
    ``p_b - p_a``: ``(la, ua, lb, ub, dl, dh)`` arrays (N, m_L). ``X*_lo / X*_hi``: each copy's input box
    (raw model inputs); ``moved``: the inputs the copies may differ in (the protected ones the pair's
    cases set); every other input is the same individual's value in both copies (difference 0)."""
    pre = _prefix(layers, L)
    N = XA_lo.shape[0]
    keep: list = []
    box_bounds(pre, np.concatenate([XA_lo, XB_lo]), np.concatenate([XA_hi, XB_hi]), keep=keep)
    ka = [(lo[:N], hi[:N]) for lo, hi in keep]
    kb = [(lo[N:], hi[N:]) for lo, hi in keep]
    dlo = np.zeros_like(XA_lo)
    dhi = np.zeros_like(XA_lo)
    for i in moved:
        dlo[:, i] = down(XB_lo[:, i] - XA_hi[:, i])
        dhi[:, i] = up(XB_hi[:, i] - XA_lo[:, i])
    dl, dh = relational_bounds(pre, ka, kb, dlo, dhi)
    return ka[L][0], ka[L][1], kb[L][0], kb[L][1], dl, dh


def pair_tile_gaps(layers, L: int, PA_lo, PA_hi, PB_lo, PB_hi, D_lo, D_hi, Ea, Eb, readout, post):
    """Upper bounds (M,) of ``score_a - score_b`` (the post's units: the logit / margin for ``logit``,
    the probability for ``prob``) of the runtime, per tile j: copy a's layer-``L`` pre-activations in
    ``[PA_lo[j], PA_hi[j]]``, copy b's in ``[PB_lo[j], PB_hi[j]]``, their difference ``p_b - p_a`` in
    ``[D_lo[j], D_hi[j]]`` (arrays (M, m_L), full width; ``Ea`` / ``Eb`` arrays (M,) the runtime error
    bounds). The smaller of the per-copy bound (each copy's score bounds widened by its E) and the
    relational one (the difference through the rest of the network jointly, widened by both E;
    ``prob`` of a logit by the mean value theorem), as :func:`fairspec.certify.boxes.decide_boxes`."""
    kind = readout[0]
    sub = list(layers[L + 1:])
    M = PA_lo.shape[0]
    out = np.empty(M)
    Ea = np.broadcast_to(np.asarray(Ea, dtype=np.float64), (M,))
    Eb = np.broadcast_to(np.asarray(Eb, dtype=np.float64), (M,))
    for s in range(0, M, _CHUNK):
        sl = slice(s, s + _CHUNK)
        n = PA_lo[sl].shape[0]
        keep: list = []
        H_lo = np.maximum(np.concatenate([PA_lo[sl], PB_lo[sl]]), 0.0)
        H_hi = np.maximum(np.concatenate([PA_hi[sl], PB_hi[sl]]), 0.0)
        plo, phi, _ = box_bounds(sub, H_lo, H_hi, keep=keep)
        s_lo, s_hi = _scores(plo, phi, readout)
        ea, eb = Ea[sl], Eb[sl]
        hi_a = up(s_hi[:n] + ea)
        lo_b = down(s_lo[n:] - eb)
        if post == "prob" and kind not in ("prob", "softmax"):
            hi_a, lo_b = _sigmoid_hi(hi_a), _sigmoid_lo(lo_b)
        gap = up(hi_a - lo_b)
        # the relational bound: relu(p_b) - relu(p_a) through the rest of the network, both copies at once
        hl, hh = relu_difference(D_lo[sl], D_hi[sl], PA_lo[sl], PA_hi[sl], PB_lo[sl], PB_hi[sl])
        ka = [(lo[:n], hi[:n]) for lo, hi in keep]
        kb = [(lo[n:], hi[n:]) for lo, hi in keep]
        dl, du = relational_bounds(sub, ka, kb, hl, hh)
        kind_, cols = readout[0], list(readout[1:])
        if kind_ in ("logit", "prob"):
            rl = dl[:, cols[0]]
        else:
            i, j = cols
            rl = down(dl[:, i] - du[:, j])
        # rl <= score_b - score_a in exact arithmetic: score_a - score_b <= -rl
        za, zb = _logits(plo[:n], phi[:n], readout), _logits(plo[n:], phi[n:], readout)
        if kind in ("logit", "margin"):
            top = up(-rl + up(ea + eb))
            if post == "prob":
                Em = np.maximum(ea, eb)
                zl = np.minimum(za[0], zb[0]) - up(Em + 1e-300)
                zh = np.maximum(za[1], zb[1]) + up(Em + 1e-300)
                top = up(_slope_max(down(zl), up(zh)) * np.maximum(top, 0.0))
        else:                                                   # E in probability units
            zl, zh = np.minimum(za[0], zb[0]), np.maximum(za[1], zb[1])
            top = up(up(_slope_max(zl, zh) * np.maximum(up(-rl), 0.0)) + up(ea + eb))
        with np.errstate(invalid="ignore"):
            gap = np.where(np.isfinite(top) & (top < gap), top, gap)
            gap = np.where(np.isfinite(hi_a) & np.isfinite(lo_b), gap, np.inf)
        out[sl] = gap
    return out


def prove_relational_split(runtime_net, LO, HI, cases: Sequence[dict], pairs: Sequence[tuple[int, int]],
                           certificates: Sequence, *, errors: Sequence[float], post: str, eps,
                           eps_strict: bool = False, readout=("logit", 0), encoding=None, integer=None,
                           precision: str = "float32", complete: bool, claim: str, keep_boxes: bool = False,
                           **detail) -> SplitDecisions:
    """Decide the boxes ``[LO[k], HI[k]]`` (raw model inputs, (N, n)) fair for the ``logit`` / ``prob``
    post by a relational split at a hidden layer (see the module docstring).

    certificates: per box, None (not tried) or ``(L, per_pair)``: ``L`` a hidden ReLU layer (not the
              last), ``per_pair[i]`` for ``pairs[i] = (a, b)`` = ``(live, TLO, THI, dlo, dhi)``: the
              indices of layer L's neurons it calls live, the tiles (arrays (M, len(live))) over copy
              a's pre-activations of them, and the claimed bounds (arrays (len(live),)) of
              ``p_b - p_a`` there.
    cases, pairs, errors, readout, integer, precision, complete: as for
              :func:`fairspec.certify.boxes.decide_boxes`; ``eps`` / ``eps_strict`` the spec's bound and
              comparison. ``encoding`` must be raw (None or every input raw): else nothing is proved.
    """
    from fairspec.certify.network import as_layers
    from fairspec.certify.proof import _mint

    layers = as_layers(runtime_net)
    LO = np.atleast_2d(np.asarray(LO, dtype=np.float64))
    HI = np.atleast_2d(np.asarray(HI, dtype=np.float64))
    N = LO.shape[0]
    status = np.zeros(N, dtype=np.int8)
    raw = encoding is None or all(e.kind == "raw" for e in encoding)
    kind = readout[0]
    if post not in ("logit", "prob") or not raw or not complete or not pairs \
            or kind not in ("logit", "prob", "margin", "softmax") or (post == "logit" and kind in ("prob", "softmax")) \
            or len(certificates) != N or len(errors) != len(cases):
        return SplitDecisions(status, None, ["not a complete difference property on raw inputs with one "
                                             "certificate per box"] * N)
    E = [float(e) for e in errors]
    if not all(e >= 0 for e in E):
        raise ValueError("the runtime error bound must be >= 0")
    why = [""] * N
    ok = np.zeros(N, dtype=bool)
    by_layer = certificates_by_layer(layers, certificates, len(pairs), why, "a pair")
    for L, ks in by_layer.items():
        m = layers[L][0].shape[0]
        K = np.array(ks, dtype=np.int64)
        good = np.ones(len(ks), dtype=bool)
        tiles = []          # (r, PA_lo, PA_hi, PB_lo, PB_hi, D_lo, D_hi, Ea, Eb)
        for p, (a, b) in enumerate(pairs):
            xs = []
            for c in (a, b):
                clo, chi = LO[K].copy(), HI[K].copy()
                for i, v in cases[c].items():
                    clo[:, i] = chi[:, i] = v
                xs += [clo, chi]
            la, ua, lb, ub, dl, dh = layer_pair_bounds(layers, L, *xs, sorted(set(cases[a]) | set(cases[b])))
            for r, k in enumerate(ks):
                if not good[r]:
                    continue
                try:
                    live, tlo, thi, slo, shi = certificates[k][1][p]
                    live = np.asarray(live, dtype=np.int64).reshape(-1)
                    tlo = np.atleast_2d(np.asarray(tlo, dtype=np.float64))
                    thi = np.atleast_2d(np.asarray(thi, dtype=np.float64))
                    slo = np.asarray(slo, dtype=np.float64).reshape(-1)
                    shi = np.asarray(shi, dtype=np.float64).reshape(-1)
                except (TypeError, ValueError):
                    why[k] = "a malformed certificate"
                    good[r] = False
                    continue
                if live.size and (live.min() < 0 or live.max() >= m or np.unique(live).size != live.size):
                    why[k] = "the certificate names a neuron the layer does not have"
                    good[r] = False
                    continue
                dead = np.ones(m, dtype=bool)
                dead[live] = False
                if np.any(~(ua[r, dead] <= 0)) or np.any(~(ub[r, dead] <= 0)):
                    why[k] = f"a neuron called dead at layer {L} may be active (pair {a}, {b})"
                    good[r] = False
                    continue
                if tlo.shape != thi.shape or tlo.shape[1] != live.size or tlo.shape[0] == 0 \
                        or slo.shape != (live.size,) or shi.shape != (live.size,):
                    why[k] = "the tiles or the shift do not match the live neurons"
                    good[r] = False
                    continue
                if not (np.all(slo <= dl[r, live]) and np.all(shi >= dh[r, live])):
                    why[k] = f"the claimed shift at layer {L} does not hold the pair's difference (pair {a}, {b})"
                    good[r] = False
                    continue
                if not tiles_cover(la[r, live], ua[r, live], tlo, thi):
                    why[k] = f"the tiles do not cover copy {a}'s live box at layer {L} (pair {a}, {b})"
                    good[r] = False
                    continue
                M = tlo.shape[0]
                PA_lo = np.repeat(la[r:r + 1], M, axis=0)
                PA_hi = np.repeat(ua[r:r + 1], M, axis=0)
                PB_lo = np.repeat(lb[r:r + 1], M, axis=0)
                PB_hi = np.repeat(ub[r:r + 1], M, axis=0)
                D_lo = np.repeat(dl[r:r + 1], M, axis=0)
                D_hi = np.repeat(dh[r:r + 1], M, axis=0)
                PA_lo[:, live], PA_hi[:, live] = tlo, thi
                PB_lo[:, live] = np.maximum(down(tlo + slo), lb[r, live])
                PB_hi[:, live] = np.minimum(up(thi + shi), ub[r, live])
                D_lo[:, live], D_hi[:, live] = slo, shi
                tiles.append((r, PA_lo, PA_hi, PB_lo, PB_hi, D_lo, D_hi, np.full(M, E[a]), np.full(M, E[b])))
        tiles = [t for t in tiles if good[t[0]]]
        if not tiles:
            continue
        owner = np.concatenate([np.full(t[1].shape[0], t[0]) for t in tiles])
        cat = [np.concatenate([t[i] for t in tiles]) for i in range(1, 9)]
        PA_lo, PA_hi, PB_lo, PB_hi, D_lo, D_hi, Ea, Eb = cat
        nan = np.any(np.isnan(PA_lo) | np.isnan(PA_hi) | np.isnan(PB_lo) | np.isnan(PB_hi), axis=1)
        with np.errstate(invalid="ignore"):
            empty = (np.any(PB_lo > PB_hi, axis=1) | np.any(PA_lo > PA_hi, axis=1)) & ~nan
        # an empty tile holds no individual; bounded anyway over a stand-in (its result not used)
        PA_hi = np.where(empty[:, None], np.maximum(PA_lo, PA_hi), PA_hi)
        PB_hi = np.where(empty[:, None], np.maximum(PB_lo, PB_hi), PB_hi)
        gaps = pair_tile_gaps(layers, L, PA_lo, PA_hi, PB_lo, PB_hi, D_lo, D_hi, Ea, Eb, readout, post)
        passed = (meets_eps(gaps, eps, eps_strict) | empty) & ~nan
        bad = np.zeros(len(ks), dtype=bool)
        np.logical_or.at(bad, owner, ~passed)
        for r, k in enumerate(ks):
            if good[r] and not bad[r]:
                ok[k] = True
    status[ok] = 1
    if not ok.any():
        return SplitDecisions(status, None, why)
    kept = {"_boxes": (LO[ok].copy(), HI[ok].copy())} if keep_boxes else {}
    from fairspec.certify.claims import direct_record

    proof = _mint("interval", claim, boxes=int(ok.sum()), side="fair", post=post, cases=len(cases),
                  record=direct_record(post, eps=eps, eps_strict=eps_strict, readout=readout, precision=precision,
                                       relation=(cases, pairs)),
                  runtime_error=max(E), readout=list(readout),
                  split="a hidden layer's live pre-activations of one copy, tiled, the other copy's shifted by "
                        "the pair's difference bounds",
                  layers=sorted({int(certificates[k][0]) for k in np.flatnonzero(ok)}), **kept, **detail)
    return SplitDecisions(status, proof, why)
