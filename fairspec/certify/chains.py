"""A network's layers: :func:`as_layers` reads a network as ``[(W, b, relu), ...]`` (every certify
module's form of it); and a runtime's chain of affine layers with no ReLU between, against a proof's
network that has them folded into one layer.

A scikit-learn MLP with ``activation="identity"`` or a torch / ONNX chain of ``Linear`` layers with
nothing between computes ``fl(W2 fl(W1 h + b1) + b2)``: two roundings, with the runtime's own
numbers ``W1``, ``W2``. The solvers reason about the real map folded into one layer
``W2 W1 h + (W2 b1 + b2)`` (products in float64). :func:`fairspec.certify.network.runtime_error_bound`
bounds the runtime's rounding layer by layer on the chain itself (an identity passes an error on
unchanged); what is left is the difference, in exact arithmetic, between the proof's folded layer
and the chain's real composite. :func:`runtime_blocks` cuts the chain into blocks (each ends at a
ReLU or the output), composes each block in float64 with a rigorous elementwise bound of that
composition's own error, and returns the composites as the layers the proof's layers are compared
with, plus the composition error over the block's input box (``slack``), all rounded upward.

Pure numpy.
"""

from __future__ import annotations

import numpy as np

from fairspec.certify.rounding import ETA64, U64, matmul_with_error, up

__all__ = ["as_layers", "runtime_blocks"]


def as_layers(net) -> list[tuple[np.ndarray, np.ndarray, bool]]:
    """``[(W, b, relu), ...]`` of a network given as an object with ``.layers`` (each with ``W``,
    ``b``, ``relu``: a :class:`fairspec.models.network.PLNet`) or as a sequence of such layers or
    of ``(W, b, relu)`` tuples. W is [out, in], float64."""
    layers = getattr(net, "layers", net)
    out = []
    for L in layers:
        if isinstance(L, tuple):
            W, b, relu = L
        else:
            W, b, relu = L.W, L.b, L.relu
        W = np.asarray(W, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        if b.ndim != 1:
            b = b.reshape(-1)
        # (a float64 vector is passed on as the same object: interval_matmul's product cache is keyed by
        # the arrays' identity, which a fresh reshape view missed on every call)
        if W.ndim != 2 or b.shape != (W.shape[0],):
            raise ValueError(f"layer shapes do not fit: W {W.shape}, b {b.shape}")
        if out and out[-1][0].shape[0] != W.shape[1]:
            raise ValueError("layer widths do not chain")
        out.append((W, b, bool(relu)))
    if not out:
        raise ValueError("a network needs at least one layer")
    return out


def _abs_mv(A, v):
    """An upper bound of the exact ``|A| v`` for ``v >= 0`` (v a vector or a matrix)."""
    y, e = matmul_with_error(np.abs(A), v)
    return up(y + e)


def _compose(block):
    """``(C, c, eC, ec)``: ``W_k ... W_1`` and the block's bias in float64, with ``|C - exact| <= eC``
    and ``|c - exact| <= ec`` elementwise, of a block ``[(W, b, relu), ...]`` applied first to last."""
    C, c, _ = block[0]
    eC, ec = np.zeros_like(C), np.zeros_like(c)
    for W, b, _ in block[1:]:
        C2, e1 = matmul_with_error(W, C)
        y, e2 = matmul_with_error(W, c)
        c2 = y + b
        # |fl(y + b) - (y + b)| <= u |fl(y + b)| / (1 - u) + eta <= 2u |fl(y + b)| + eta
        e_add = up(up(2 * U64 * np.abs(c2)) + ETA64)
        eC = up(_abs_mv(W, eC) + e1) if eC.any() else e1
        ec = up(up(_abs_mv(W, ec) + e2) + e_add)
        C, c = C2, c2
    return C, c, eC, ec


def runtime_blocks(layers, Hs, n_proof: int):
    """``(R, H, slack)``: the runtime's ``layers`` (``[(W, b, relu), ...]``) as ``n_proof`` blocks, each
    a run of layers with no ReLU ending at a ReLU or at the output, composed (:func:`_compose`).
    ``Hs[k]`` bounds ``|input of layer k|`` (exact arithmetic); ``H[i]`` is that of block ``i``'s first
    layer and ``slack[i]`` bounds ``|C h + c - block(h)|`` over ``|h| <= H[i]`` elementwise. A chain
    with no two layers in one block is returned unchanged (zero slack). ValueError when the blocks
    are not ``n_proof``."""
    starts = [0] + [k + 1 for k, (_, _, relu) in enumerate(layers[:-1]) if relu]
    if len(starts) != n_proof:
        raise ValueError(f"the proof's network has {n_proof} layers, the runtime's {len(starts)} "
                         f"(of {len(layers)} rounded layers)")
    if len(starts) == len(layers):
        return list(layers), list(Hs[:len(layers)]), [np.zeros(W.shape[0]) for W, _, _ in layers]
    R, H, slack = [], [], []
    for i, a in enumerate(starts):
        z = starts[i + 1] if i + 1 < len(starts) else len(layers)
        C, c, eC, ec = _compose(layers[a:z])
        R.append((C, c, layers[z - 1][2]))
        H.append(Hs[a])
        slack.append(up(_abs_mv(eC, Hs[a]) + ec) if (eC.any() or ec.any()) else np.zeros(C.shape[0]))
    return R, H, slack
