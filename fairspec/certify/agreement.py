"""How far a torch runtime may lie from the network read from it: the tolerance of the network
reader's agreement check on a float16, float32 or float64 torch module (``models.network_torch.from_torch``).

The reader runs the module on a few inputs and compares its outputs with the converted network's
float64 forward pass; a module whose forward() does not apply its children in order disagrees. In
float32 a fixed relative tolerance separates the two (the rounding is far below it); in float16 the
rounding itself is of the order of such a tolerance, so the check uses the float16 error model
(:mod:`fairspec.certify.half`) at each point instead of a guessed constant; float32 and float64 modules
are checked the same way at their own precision (a fixed relative tolerance of 1e-4 let a forward() that
moves a logit of magnitude 100 by 2^-7 pass the check, and a class proof about the children's network hold
where the module's class changed): for an input row ``x``
(float64, which the runtime casts to float16) and output column ``j``,

    ``|runtime_j(x) - forward64_j(x)| <= E16_j(x) + E64_j(x)``

with ``E16`` :func:`~fairspec.certify.network.runtime_error_bound` at float16 over the box of the
check's inputs (the cast of ``x`` included, the runtime against the exact network) and ``E64`` the
same bound at float64 (numpy's forward pass against the exact network). The heads: a final sigmoid reads
the probability readout (``|a - b| / 4`` plus the evaluation's error); a final softmax over K columns
moves each probability by at most half the largest logit error (its Jacobian's rows have absolute sum
``2 p_i (1 - p_i) <= 1/2``), plus the evaluation's assumed error
(``class_prob.SOFTMAX_ABS_ERROR``). A point where the bound does not hold (a value that may overflow
65504) is a refusal, not a mismatch: :func:`float16_disagreement` says so.

Pure numpy and fractions: no solver, no model library.
"""

from __future__ import annotations

import numpy as np

from fairspec.certify.network import as_layers, runtime_error_bound
from fairspec.certify.rounding import up

__all__ = ["float16_tolerance", "float16_disagreement", "runtime_tolerance", "runtime_disagreement"]

#: the assumed evaluation error of a K-class softmax head (class_prob.SOFTMAX_ABS_ERROR, which imports
#: the network module this one does not need)
_SOFTMAX_ABS_ERROR = {"float16": 2.0 ** -11, "float32": 2.0 ** -18, "float64": 2.0 ** -40}


def float16_tolerance(net, X, final: str = "none") -> np.ndarray:
    """:func:`runtime_tolerance` of a float16 runtime."""
    return runtime_tolerance(net, X, final, "float16")


def float16_disagreement(net, X, final: str, got) -> str:
    """:func:`runtime_disagreement` of a float16 runtime."""
    return runtime_disagreement(net, X, final, got, "float16")


def runtime_tolerance(net, X, final: str = "none", precision: str = "float16") -> np.ndarray:
    """``(rows, columns)`` bounds of ``|runtime - float64 forward pass|`` of the layers ``net`` (the
    runtime's own numbers, computed in ``precision``) at the rows of ``X``, with the head ``final`` ("none",
    "sigmoid", "softmax"): the bounds over the box of the rows (one box, not one per row: a bound per
    row cost the reader seconds on a wide module; it holds at every row all the same). Raises ValueError
    where the error model does not hold (an overflow, weights that are not the precision's numbers)."""
    layers = as_layers(net)
    X = np.asarray(X, dtype=np.float64)
    lo, hi = X.min(axis=0), X.max(axis=0)
    K = layers[-1][0].shape[0]

    def bound(j, precision, head):
        return runtime_error_bound(layers, lo, hi, readout=(head, j), precision=precision)

    if final == "softmax":
        worst = max(up(bound(j, precision, "logit") + bound(j, "float64", "logit")) for j in range(K))
        tol = np.full(K, up(up(worst / 2.0) + _SOFTMAX_ABS_ERROR[precision] + _SOFTMAX_ABS_ERROR["float64"]))
    else:
        head = "prob" if final == "sigmoid" else "logit"
        tol = np.array([up(bound(j, precision, head) + bound(j, "float64", head)) for j in range(K)])
    return np.broadcast_to(tol, (X.shape[0], K)).copy()


def runtime_disagreement(net, X, final: str, got, precision: str = "float16") -> str:
    """Why the runtime's outputs ``got`` (computed in ``precision``) at the rows of ``X`` are not the
    network ``net``'s (its runtime layers, the head ``final`` applied; computed here in float64) within
    :func:`runtime_tolerance`, as one sentence; "" when every one is."""
    X = np.asarray(X, dtype=np.float64)
    got = np.asarray(got, dtype=np.float64)
    expected = _forward(net, X, final)
    if expected.shape != got.shape:
        return f"the converted network gives outputs of shape {expected.shape}, the module {got.shape}"
    try:
        tol = runtime_tolerance(net, X, final, precision)
    except ValueError as exc:
        return f"the {precision} error model does not hold on the check's inputs ({exc})"
    bad = ~(np.abs(expected - got) <= tol)             # NaN / inf: a disagreement
    if np.any(bad):
        r, j = np.argwhere(bad)[0]
        return (f"at a check input the module gives {got[r, j]:.6g} in column {j}, the converted network "
                f"{expected[r, j]:.6g}, beyond the {precision} error bound {tol[r, j]:.3g}")
    return ""


def _forward(net, X, final):
    """numpy's float64 forward pass of the layers and the head (the ``E64`` the tolerance counts)."""
    H = X
    for W, b, relu in as_layers(net):
        H = H @ W.T + b
        if relu:
            H = np.maximum(H, 0.0)
    if final == "sigmoid":
        e = np.exp(-np.abs(H))
        return np.where(H >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    if final == "softmax":
        e = np.exp(H - H.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    return H
