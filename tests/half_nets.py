"""Small float16 networks the float16 tests (test_float16_runtime: ONNX, test_float16_torch: torch
half modules) build and evaluate: layers [(W [out, in], b, relu)] of float16 numbers kept as float64,
their forward pass in float64 (exact for the small dyadic ones), and every integer point of a box."""

from __future__ import annotations

import numpy as np


def half_layers(rng, widths, dyadic: bool):
    """Random layers of ``widths``; ``dyadic``: multiples of 1/8 (weights, some exactly 0) and 1/4 (biases)."""
    out = []
    for k, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
        if dyadic:
            W = rng.integers(-16, 17, (b, a)) / 8.0
            W[rng.random((b, a)) < 0.2] = 0.0               # exact zeros
            bias = rng.integers(-8, 9, b) / 4.0
        else:
            W = rng.normal(0, 1.0 / np.sqrt(a), (b, a))
            bias = rng.normal(0, 0.5, b)
        out.append((W.astype(np.float16).astype(np.float64), bias.astype(np.float16).astype(np.float64),
                    k < len(widths) - 2))
    return out


def forward64(layers, X):
    """The layers' outputs at the rows of ``X`` in float64."""
    H = np.asarray(X, dtype=np.float64)
    for W, b, relu in layers:
        H = H @ W.T + b
        if relu:
            H = np.maximum(H, 0.0)
    return H


def integer_grid(top):
    """Every point of {0..top[0]} x {0..top[1]} x ..., one a row (float64)."""
    grids = np.meshgrid(*[np.arange(t + 1) for t in top], indexing="ij")
    return np.stack([g.ravel() for g in grids], 1).astype(np.float64)


def proofs_on_every_point(layers, X, y, ex, boxes, readout, precision: str = "float16", step=None) -> int:
    """Every threshold claim certify proves over each box of ``boxes`` (``<=``, ``<``, ``>=``, ``>`` at
    the extremes over the box's rows of ``X`` of the runtime's scores ``y`` and of ``ex`` (the float64
    ones), one float16 step either side and farther) holds at every one of those rows on the runtime
    (asserted); how many were proved. ``step``: the step instead of a float16 one of the largest |y|."""
    from fairspec.certify.network import prove_output_bound

    proved = 0
    for blo, bhi in boxes:
        inside = np.all((X >= blo) & (X <= bhi), axis=1)
        yb, eb = y[inside], ex[inside]
        dt = step or 2.0 ** -11 * max(1.0, float(np.max(np.abs(yb))))
        cands = {float(yb.max()), float(yb.min()), float(eb.max()), float(eb.min())}
        for t in list(cands):
            cands |= {t + k * dt for k in (-2, -1, 1, 2, 8, 64, -64, 4096, -4096)}
        for t in sorted(cands):
            for op in ("<=", "<", ">=", ">"):
                pr = prove_output_bound(layers, blo, bhi, op, t, claim="test", readout=readout,
                                        precision=precision, integer=[True] * X.shape[1])
                truth = bool(np.all({"<=": yb <= t, "<": yb < t, ">=": yb >= t, ">": yb > t}[op]))
                assert pr is None or truth, (op, t, blo, bhi, pr)
                proved += pr is not None
    return proved
