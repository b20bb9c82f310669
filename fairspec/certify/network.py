"""Rigorous bounds for ReLU networks: interval bounds of every neuron (exact real arithmetic,
rounded outward) and the runtime error bound E between the score a model's runtime computes
and the score of the network a proof reasons about, over every input of a box.

The error model (see ARCHITECTURE.md, "The certification spine"):

* **encoding** as fairspec's runtime computes it (``fairspec/runtime/encoding.py``): ``minmax``
  ``(v - lo) / (hi - lo)`` and ``standard`` ``(v - mean) / std`` in float64 (three / two
  roundings), then cast to the runtime's precision; ``onehot`` and ``code`` exact (codes are the
  small integers the solver backends require; ``codes``, a table ``first + step * rank``, exact when
  every code is a number of the runtime's precision); ``raw`` exact when the value is an integer of at
  most 2**24 in magnitude, else one rounding of the cast.
* **affine layers** ``fl(W h + b)`` in the runtime's precision (float32 for ONNX/torch: ``u = 2**-24``;
  float64 for scikit-learn), in any summation order, with or without FMA, blocked or not:
  ``|fl(W h + b) - (W h + b)| <= gamma(n+1) (|W||h| + |b|) + (n+1) eta``; float16 graphs
  (``u = 2**-11``): ``gamma(n+2)``, ``(n+2) eta`` and a proof of no overflow (``fairspec.certify.half``,
  which derives it for any mix of float16 and float32 rounding). The weights must be the
  runtime's own numbers (exactly representable in its precision; checked), each layer one
  Gemm / MatMul+Add with alpha = beta = 1 (the caller passes the runtime's layers; a chain of
  products with no ReLU between is several layers with identity between, ``runtime_chain``).
* **ReLU** is exact in floating point and 1-Lipschitz (errors pass through unchanged).
* **exact rows**: a row whose inputs lie on a dyadic grid over the whole box (integral variables read
  raw / onehot / code, dyadic code tables) and whose products and partial sums are then all multiples of
  ``2**q`` below ``2**(p + q)`` is computed exactly in every order (``fairspec.certify.exact_runtime.
  exact_rows``): no rounding term, and its output on the grid ``2**q`` for the next layer. Dyadic weights
  on small integer inputs (quantised or tie-built networks) have E = 0 for a logit readout, so a proof
  may close a pair exactly at the threshold.
* **readout**: ``("logit", i)`` the column itself; ``("margin", i, j)`` ``y_i - y_j`` (computed by
  fairspec in float64); ``("prob", i)`` a final sigmoid of column i; ``("softmax", i, j)`` the
  2-class softmax probability of column i. For the probabilities the runtime's own logistic /
  softmax evaluation is *assumed* within ``SIGMOID_ABS_ERROR`` (2**-20 absolute for float32
  runtimes, ~16 float32 ulps at 1/2: onnxruntime's MLAS logistic is a polynomial approximation,
  torch's is libm-accurate; 2**-48 for float64) of the exact function of its float inputs;
  ``tests/test_certify_network.py`` measures the real runtimes against it. Then
  ``|sigmoid(a) - sigmoid(b)| <= |a - b| / 4``.
* **the proof's network** (``proof_net``, e.g. the feature-space network with the encoding folded
  into the first layer by float64 products) may differ from the runtime's network in exact
  arithmetic: the difference is bounded layer by layer in exact rationals,
  ``|W' h' + b' - (W h + b)| <= |W'| |h' - h| + |W' - W| |h| + |b' - b|``; a proof layer folded
  from a run of runtime layers with no ReLU between is compared with their composite
  (``fairspec.certify.chains``, its float64 composition's error bounded and added).

All of this is rounded upward; the result E bounds ``|runtime score - proof network score|`` for
every input of the box (in the readout's units: logits, or probabilities for the prob readouts).
Pure numpy and fractions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np

from fairspec.certify.argmax import (_exact_diff, argmax_class_score, argmax_layers, class_readout, prove_class_stable,
                                     softmax_class_slack)
from fairspec.certify.chains import as_layers, runtime_blocks
from fairspec.certify.exact_runtime import exact_rows, input_grid, partial_sums_bound
from fairspec.certify.half import ETA16, EXACT_INTEGERS, SIGMOID_ABS_ERROR16, U16, check_range, layer_rounding
from fairspec.certify.rounding import (ETA32, ETA64, U32, U64, float_up, gamma, interval_matmul, matmul_with_error,
                                       sum_with_error, up, down)

__all__ = ["rigorous_ibp", "symbolic_bounds", "runtime_error_bound", "score_interval", "as_layers", "InputEncoding",
           "encoding_from_ir", "precision_refusal", "prob_error_to_logit", "equal_logits_readout", "SIGMOID_ABS_ERROR",
           "argmax_layers", "argmax_class_score", "prove_class_stable"]

SIGMOID_ABS_ERROR = {"float16": SIGMOID_ABS_ERROR16, "float32": 2.0 ** -20, "float64": 2.0 ** -48}
_U = {"float16": U16, "float32": U32, "float64": U64}
_ETA = {"float16": ETA16, "float32": ETA32, "float64": ETA64}
_NP = {"float16": np.float16, "float32": np.float32, "float64": np.float64}
#: the arithmetic the runtime error model covers (float16: fairspec.certify.half; bfloat16 / mixed: none)
BOUNDED_PRECISIONS = tuple(_U)


def precision_refusal(precision) -> str:
    """Why no runtime error bound holds for a runtime computing in ``precision`` (a model's
    ``precision``: "float16", "bfloat16", "mixed (float16, float32)", ...), as one sentence every
    refusal of such a runtime says; "" for float16, float32 and float64, which the error model covers."""
    p = str(precision)
    if p in BOUNDED_PRECISIONS:
        return ""
    return (f"the model's runtime computes in {p}, and {p} arithmetic has no error bound in certify yet (float16, "
            "float32 and float64 have one)")


# ---------------------------------------------------------------------------------------------
# Interval bounds
# ---------------------------------------------------------------------------------------------

_COLUMNS: dict = {}


def _columns(W, cols):
    """``W[:, cols]``, the same array object for the same W and columns (interval_matmul caches its
    product matrices by the arrays' identity; a fresh slice per call missed). The cache keeps W alive,
    so its id is not reused while cached."""
    key = (id(W), tuple(cols))
    hit = _COLUMNS.get(key)
    if hit is not None and hit[0] is W:
        return hit[1]
    if len(_COLUMNS) > 64:
        _COLUMNS.clear()
    sub = W[:, cols]
    _COLUMNS[key] = (W, sub)
    return sub


def _first_layer_bounds(W, b, lo, hi, onehot_groups):
    """Rigorous bounds of W x + b over the box with each one-hot group exactly one (a group
    contributes [min, max] of its allowed columns instead of the interval sum)."""
    if not onehot_groups:
        return interval_matmul(W, b, lo, hi)
    grouped = sorted({i for g in onehot_groups for i in g})
    rest = [i for i in range(W.shape[1]) if i not in set(grouped)]
    ylo, yhi = interval_matmul(_columns(W, rest), b, lo[rest], hi[rest])
    los, his = [ylo], [yhi]
    for g in onehot_groups:
        g = list(g)
        glo, ghi = lo[g], hi[g]
        fixed = [k for k, v in zip(g, glo) if v >= 1.0]
        allowed = fixed if fixed else [k for k, v in zip(g, ghi) if v >= 1.0]
        if not allowed or len(fixed) > 1:
            return None                                    # no point of the box satisfies the group
        Wa = W[:, allowed]
        los.append(Wa.min(axis=1))
        his.append(Wa.max(axis=1))
    s_lo, e_lo = sum_with_error(np.stack(los, axis=1), axis=1)
    s_hi, e_hi = sum_with_error(np.stack(his, axis=1), axis=1)
    return down(s_lo - e_lo), up(s_hi + e_hi)


def rigorous_ibp(net, lo, hi, onehot_groups: Sequence[Sequence[int]] = (), phases: dict | None = None,
                 clip: dict | None = None):
    """Outward-rounded interval bounds ``[(pre_lo, pre_hi), ...]`` of every layer's pre-activation
    ``W h + b`` over the box (exact real arithmetic on the exact floats of the weights and the
    box; one-hot groups exactly one). ``phases`` ``{(layer, neuron): 0 | 1}`` fixes ReLU phases
    (0: inactive, pre <= 0; 1: active, pre >= 0); the bounds are clipped accordingly, and so by
    ``clip`` ``{(layer, neuron): (lo, hi)}`` (bounds proved otherwise, e.g. by LP certificates). Returns
    None when the box (or a fixed phase) leaves no point."""
    layers = as_layers(net)
    lo = np.asarray(lo, dtype=np.float64).reshape(-1)
    hi = np.asarray(hi, dtype=np.float64).reshape(-1)
    if lo.shape[0] != layers[0][0].shape[1] or np.any(lo > hi) or not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        if np.any(lo > hi):
            return None
        raise ValueError("rigorous_ibp needs a finite box with one side per input")
    out = []
    hlo, hhi = lo, hi
    for k, (W, b, relu) in enumerate(layers):
        if k == 0:
            r = _first_layer_bounds(W, b, lo, hi, onehot_groups)
            if r is None:
                return None
            plo, phi = r
        else:
            plo, phi = interval_matmul(W, b, hlo, hhi)
        if clip:
            plo, phi = plo.copy(), phi.copy()
            for (lk, j), (cl, ch) in clip.items():
                if lk == k:
                    plo[j] = max(plo[j], cl)
                    phi[j] = min(phi[j], ch)
            if np.any(plo > phi):
                return None
        if phases:
            plo, phi = plo.copy(), phi.copy()
            for (lk, j), ph in phases.items():
                if lk != k:
                    continue
                if ph:
                    plo[j] = max(plo[j], 0.0)
                else:
                    phi[j] = min(phi[j], 0.0)
            if np.any(plo > phi):
                return None
        out.append((plo, phi))
        if relu:
            hlo, hhi = np.maximum(plo, 0.0), np.maximum(phi, 0.0)
        else:
            hlo, hhi = plo, phi
    return out


def _eq_bounds(A, c, lo, hi):
    """Rigorous ``[min, max]`` of ``A x + c`` over the box (exact arithmetic on the floats, outward)."""
    Ap, An = np.maximum(A, 0.0), np.minimum(A, 0.0)
    M = np.concatenate([Ap, An], axis=1)
    ylo, elo = matmul_with_error(M, np.concatenate([lo, hi]))
    yhi, ehi = matmul_with_error(M, np.concatenate([hi, lo]))
    return down(down(ylo - elo) + c), up(up(yhi + ehi) + c)


def _compose(W, b, Al, cl, Au, cu, mag, lower: bool):
    """A rigorous lower (upper) linear function of ``W h + b`` given ``Al x + cl <= h <= Au x + cu``:
    the coefficients in float64, their rounding errors (times the box's ``|x|`` bound ``mag``) and
    the constant's moved into the constant, downward (upward)."""
    M = np.concatenate([np.maximum(W, 0.0), np.minimum(W, 0.0)], axis=1)
    first, second = ((Al, cl), (Au, cu)) if lower else ((Au, cu), (Al, cl))
    A, eA = matmul_with_error(M, np.concatenate([first[0], second[0]]))
    c, ec = matmul_with_error(M, np.concatenate([first[1], second[1]]))
    f, ef = matmul_with_error(eA, mag)              # sum_j |error of A_ij| |x_j|
    slack = up(up(up(f + ef) + ec))
    if lower:
        return A, down(down(c + b) - slack)
    return A, up(up(c + b) + slack)


def symbolic_bounds(net, lo, hi):
    """Outward-rounded ``(lo, hi)`` of the last layer's output over the box by symbolic intervals
    (ReluVal / FairQuant): every neuron between a lower and an upper linear function of the inputs,
    a stable ReLU passing them on, an unstable one's lower side 0 and its upper side kept when its
    own lower bound is >= 0, else its constant upper bound. Every product and sum is carried with a
    rigorous error bound (:func:`~fairspec.certify.rounding.matmul_with_error`), so the result
    bounds the exact network; one-hot groups are relaxed to [0, 1] each (sound, looser). Tighter
    than :func:`rigorous_ibp` on boxes where inputs cancel; None for an empty box."""
    layers = as_layers(net)
    lo = np.asarray(lo, dtype=np.float64).reshape(-1)
    hi = np.asarray(hi, dtype=np.float64).reshape(-1)
    if np.any(lo > hi):
        return None
    n = lo.shape[0]
    mag = np.maximum(np.abs(lo), np.abs(hi))
    Al = Au = np.eye(n)
    cl = cu = np.zeros(n)
    for k, (W, b, relu) in enumerate(layers):
        nAl, ncl = _compose(W, b, Al, cl, Au, cu, mag, True)
        nAu, ncu = _compose(W, b, Al, cl, Au, cu, mag, False)
        Al, cl, Au, cu = nAl, ncl, nAu, ncu
        l_lo, _ = _eq_bounds(Al, cl, lo, hi)
        u_lo, u_hi = _eq_bounds(Au, cu, lo, hi)
        if not relu:
            if k == len(layers) - 1:
                return l_lo, u_hi
            continue                              # an identity between two layers: the bounds pass on
        active = l_lo >= 0
        dead = (u_hi <= 0) & ~active
        unstable = ~active & ~dead
        Al, cl, Au, cu = Al.copy(), cl.copy(), Au.copy(), cu.copy()
        Al[dead | unstable] = 0.0
        cl[dead | unstable] = 0.0
        Au[dead] = 0.0
        cu[dead] = 0.0
        concrete = unstable & (u_lo < 0)
        Au[concrete] = 0.0
        cu[concrete] = u_hi[concrete]
    return None                                   # unreachable: the last layer has no ReLU


# ---------------------------------------------------------------------------------------------
# The encoding
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class InputEncoding:
    """How one model input is computed from the proof's variable ``v`` (see the module docstring):
    ``kind`` raw | onehot | code | minmax (a = lo, b = hi) | standard (a = mean, b = std) | scaled
    (a = scale, b = shift: ``v * scale + shift``, a fitted scikit-learn MinMaxScaler's arithmetic) |
    codes (a = step, b = first: a code table whose sorted codes are ``first + step * v`` exactly, v the
    rank of the code, :func:`code_progression`; the runtime reads the table, no arithmetic)."""

    kind: str = "raw"
    a: float = 0.0
    b: float = 1.0

    def exact(self) -> tuple[Fraction, Fraction]:
        """``(scale, shift)`` of the exact map ``x = scale * v + shift``."""
        if self.kind in ("raw", "onehot", "code"):
            return Fraction(1), Fraction(0)
        if self.kind == "minmax":
            lo, hi = Fraction(self.a), Fraction(self.b)
            span = (hi - lo) if float(self.b) - float(self.a) != 0.0 else Fraction(1)
            return 1 / span, -lo / span
        if self.kind == "standard":
            s = Fraction(self.b) if float(self.b) != 0.0 else Fraction(1)
            return 1 / s, -Fraction(self.a) / s
        if self.kind in ("scaled", "codes"):
            return Fraction(self.a), Fraction(self.b)
        raise ValueError(f"unknown encoding kind {self.kind!r}")


def code_progression(codes) -> tuple[float, float] | None:
    """``(step, first)`` when a code table's codes, sorted, are exactly ``first + step * i`` for
    i = 0..k-1 (step > 0, in exact rationals, and float64's ``i * step + first`` computes each one
    exactly): the pair problem's variable of such a column is i, the rank of its code. None otherwise
    (codes 0..k-1 in any order: ``(1.0, 0.0)``, the variable is the code itself)."""
    q = sorted(Fraction(float(x)) for x in codes)
    if not q or len(q) > 2 ** 16:
        return None
    d = q[1] - q[0] if len(q) > 1 else Fraction(1)
    if d <= 0 or Fraction(float(d)) != d or any(q[i] != q[0] + i * d for i in range(len(q))):
        return None
    step, first = float(d), float(q[0])
    if any(Fraction(float(np.float64(i) * step + first)) != q[i] for i in range(len(q))):
        return None
    return step, first


def encoding_from_ir(enc) -> list[InputEncoding]:
    """One :class:`InputEncoding` per model input from a :class:`fairspec.ir.Encoding` (the proof's
    variable for a one-hot column is the column itself, for a code column the rank of its code in
    the sorted table, which the solver backends require to be a progression: the code itself for
    codes 0..k-1)."""
    out = [InputEncoding("raw")] * enc.width
    for c in enc.columns:
        for k in range(c.width):
            if c.kind == "minmax" and getattr(c, "scale", None) is not None:
                e = InputEncoding("scaled", float(c.scale), float(c.shift))
            elif c.kind == "minmax":
                e = InputEncoding("minmax", float(c.lo), float(c.hi))
            elif c.kind == "standard":
                e = InputEncoding("standard", float(c.mean), float(c.std))
            elif c.kind == "code":
                p = code_progression(c.codes)
                if p is None:
                    raise ValueError(f"the code table of {c.feature} is not a progression")
                e = InputEncoding("code") if p == (1.0, 0.0) else InputEncoding("codes", *p)
            else:
                e = InputEncoding(c.kind)
            out[c.offset + k] = e
    return out


def _encoded_box_and_error(encoding, lo, hi, integer, precision):
    """The exact encoded-input box (outward floats), |x| bounds and the input error bound of the
    runtime's encoding (float64 arithmetic, then the cast to the runtime's precision)."""
    n = lo.shape[0]
    xlo, xhi = np.empty(n), np.empty(n)
    err = np.zeros(n)
    u = _U[precision]
    eta = _ETA[precision]
    for i in range(n):
        e = encoding[i] if encoding is not None else InputEncoding("raw")
        if e.kind in ("raw", "onehot", "code"):
            xlo[i], xhi[i] = lo[i], hi[i]
            m = max(abs(lo[i]), abs(hi[i]))
            if e.kind in ("onehot", "code") or precision == "float64":
                if e.kind == "code" and m > min(2 ** 24, EXACT_INTEGERS[precision]):
                    raise ValueError(f"category codes beyond {min(2 ** 24, EXACT_INTEGERS[precision])}")
                continue
            if integer is not None and integer[i] and m <= EXACT_INTEGERS[precision]:
                continue
            err[i] = float_up(Fraction(u) * Fraction(m) + Fraction(eta))
            continue
        s, t = e.exact()
        if e.kind == "codes":       # the runtime reads the table: each code exact, cast exactly
            ks = range(math.ceil(float(lo[i])), math.floor(float(hi[i])) + 1)
            if len(ks) > 2 ** 16 or any(Fraction(float(_NP[precision](float(s * k + t)))) != s * k + t for k in ks):
                raise ValueError(f"category codes that are not {precision} numbers")
            xlo[i], xhi[i] = float(_down_q(s * Fraction(float(lo[i])) + t)), float(float_up(s * Fraction(float(hi[i])) + t))
            continue
        a = s * Fraction(float(lo[i])) + t
        c = s * Fraction(float(hi[i])) + t
        a, c = min(a, c), max(a, c)
        xlo[i], xhi[i] = float(_down_q(a)), float(float_up(c))
        X = max(abs(a), abs(c))
        rounds = 3 if e.kind == "minmax" else 2
        if e.kind == "scaled":      # fl(fl(v * s) + t): each rounding relative to its own result, not to x
            X = abs(s) * Fraction(max(abs(float(lo[i])), abs(float(hi[i])))) + abs(t)
        g64 = Fraction(gamma(rounds, U64))
        if precision == "float64":
            err[i] = float_up(g64 * X)
        else:
            err[i] = float_up(g64 * X + Fraction(u) * (1 + g64) * X + Fraction(eta))
    return xlo, xhi, err


def _down_q(q: Fraction) -> float:
    from fairspec.certify.rounding import float_down
    return float_down(q)


def _absmv_up(A_abs, v):
    """An upper bound of the exact |A| v for v >= 0 (A_abs = |A| given)."""
    y, e = matmul_with_error(A_abs, v)
    return up(y + e)


def _check_representable(layers, precision):
    if precision == "float64":
        return
    dt = _NP[precision]
    for k, (W, b, _) in enumerate(layers):
        with np.errstate(over="ignore"):
            if not (np.array_equal(W.astype(dt).astype(np.float64), W)
                    and np.array_equal(b.astype(dt).astype(np.float64), b)):
                raise ValueError(f"layer {k + 1}'s weights are not {precision} numbers: they are not the "
                                 f"runtime's own (a network folded from several operators?)")


# ---------------------------------------------------------------------------------------------
# The runtime error bound
# ---------------------------------------------------------------------------------------------

def _mismatch(Wp, bp, W, b, H, rows=None, bias: bool = True):
    """Upper bound of |W' h + b' - (W h + b)| over |h| <= H, elementwise, in exact rationals
    where the float numbers differ (zero where W' == W and b' == b exactly); ``bias`` False: of
    |(W' - W) h| only (the constant b' - b left out)."""
    out = np.zeros(Wp.shape[0])
    for j in range(Wp.shape[0]):
        wrow = W[j] if rows is None else rows[0](j)
        brow = b[j] if rows is None else rows[1](j)
        if isinstance(wrow, np.ndarray) and np.array_equal(Wp[j], wrow) and (bp[j] == brow or not bias):
            continue
        tot = abs(Fraction(float(bp[j])) - _fr(brow)) if bias else Fraction(0)
        for k in range(Wp.shape[1]):
            dw = Fraction(float(Wp[j, k])) - _fr(wrow[k])
            if dw:
                tot += abs(dw) * Fraction(float(H[k]))
        out[j] = float_up(tot)
    return out


def _fr(x):
    return x if isinstance(x, Fraction) else Fraction(float(x))


def runtime_error_bound(runtime_net, lo, hi, *, encoding: Sequence[InputEncoding] | None = None,
                        readout=("logit", 0), proof_net=None, precision: str = "float32",
                        integer=None, onehot_groups: Sequence[Sequence[int]] = (), base_net=None,
                        difference: bool = False) -> float:
    """A rigorous bound E on ``|score as the runtime computes it - score of proof_net in exact real
    arithmetic|`` for every input ``v`` of the box ``[lo, hi]`` (see the module docstring).

    runtime_net: the runtime's layers (``as_layers``), last layer with every column the readout reads.
    lo, hi:      the box of the proof's variables (feature space when ``encoding`` is given).
    encoding:    one :class:`InputEncoding` per model input (None: the model's inputs themselves).
    readout:     ``("logit", i)``, ``("margin", i, j)``, ``("prob", i)``, ``("softmax", i, j)``,
                 ``("argmax", c)`` / ``("argmax", c, "softmax")`` (the class score of a K-output network
                 whose runtime compares its logits / its softmax probabilities: certify.argmax).
    proof_net:   the single-logit network the proof reasons about over ``v`` (default: the runtime
                 network on the exact encoding with the readout's logit).
    precision:   "float32" (ONNX, torch) or "float64" (scikit-learn).
    integer:     mask of integral variables (a raw integer of at most 2**24 is cast exactly).
    base_net:    readout ``("argmax", c)`` only: the K-output network (feature space) of which
                 ``proof_net`` must be :func:`argmax_layers` (checked here, exactly); E is then the
                 largest of the margin readouts' bounds ``("margin", c, j)``, ``j != c`` (the min of
                 the margins is 1-Lipschitz in the largest coordinate), plus
                 :func:`~fairspec.certify.argmax.softmax_class_slack` under a softmax head.
    difference:  ``("logit", i)`` / ``("margin", i, j)`` only: E bounds half the error of a *difference*
                 of two scores, ``|(rt(v) - rt(v')) - (proof(v) - proof(v'))| <= 2 E`` for every two
                 inputs ``v, v'`` of the box (what a ``logit`` post reads). The proof network's constant
                 offset from the runtime's exact network in the output row (a scikit-learn intercept, an
                 encoding's offset folded into the proof's bias in float64) is the same number in both
                 copies and cancels in exact arithmetic; nothing else does: each score's own rounding
                 (the runtime's bias included: ``fl(s + b) - fl(s' + b)`` is not ``s - s'``, unless
                 both are exact, when E has no rounding term at all) and every input-dependent
                 mismatch stay in E. Behind a ReLU an offset is no offset of the output: only the
                 output row's own is dropped.
    Raises ValueError when a condition of the error model fails (weights that are not the runtime's
    numbers, a box that is not finite); the caller then has no runtime bound (unknown)."""
    if precision not in _U:
        raise ValueError(f"precision must be float16, float32 or float64, not {precision!r}")
    if difference and readout[0] not in ("logit", "margin"):
        raise ValueError(f"a difference bound is for a logit or margin readout, not {readout[0]!r}")
    if readout[0] == "argmax":
        return _argmax_error_bound(runtime_net, lo, hi, encoding=encoding, readout=readout, proof_net=proof_net,
                                   precision=precision, integer=integer, onehot_groups=onehot_groups,
                                   base_net=base_net)
    layers = as_layers(runtime_net)
    _check_representable(layers, precision)
    lo = np.asarray(lo, dtype=np.float64).reshape(-1)
    hi = np.asarray(hi, dtype=np.float64).reshape(-1)
    n_in = layers[0][0].shape[1]
    if lo.shape != (n_in,) or hi.shape != (n_in,):
        raise ValueError(f"the box must have {n_in} sides")
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))) or np.any(lo > hi):
        raise ValueError("a runtime error bound needs a finite, non-empty box")
    if encoding is not None and len(encoding) != n_in:
        raise ValueError(f"the encoding must describe {n_in} inputs")
    u = _U[precision]
    eta = _ETA[precision]
    xlo, xhi, d = _encoded_box_and_error(encoding, lo, hi, integer, precision)
    ibp = rigorous_ibp(layers, xlo, xhi, onehot_groups)
    if ibp is None:
        return 0.0                                      # an empty box: nothing to bound
    # forward error of the runtime against exact arithmetic on the exact encoded input
    H = np.maximum(np.abs(xlo), np.abs(xhi))
    check_range(precision, up(H + d), "an encoded input")
    Hs = [H]
    # the inputs on a dyadic grid (exact: d = 0 there), and per layer the rows the runtime computes exactly
    # in every order over the whole box (certify.exact_runtime.exact_rows): no rounding term for them
    grid = input_grid(encoding, lo, hi, integer, precision)
    d = np.where(np.isfinite(grid) | (grid > 0), 0.0, d)     # an encoding computed exactly: no input error
    hlo, hhi = xlo, xhi                                       # the exact inputs of the layer (signed)
    for k, (W, b, relu) in enumerate(layers):
        A = np.abs(W)
        # |W h~ + b - (W h^ + b)| <= |W| d ;  rounding <= gamma(n+1)(|W|(H + d) + |b|) + (n+1) eta (float16: n+2)
        mag = up(_absmv_up(A, up(H + d)) + np.abs(b))
        d = up(_absmv_up(A, d) + layer_rounding(W.shape[1], mag, precision, u, eta, k))
        # an exact row's inputs are exact (their own rows exact): within [hlo, hhi], so its partial sums too
        exact, grid = exact_rows(W, b, grid, np.minimum(mag, partial_sums_bound(W, b, hlo, hhi)), precision)
        d = np.where(exact, 0.0, d)
        plo, phi = ibp[k]
        hlo, hhi = (np.maximum(plo, 0.0), np.maximum(phi, 0.0)) if relu else (plo, phi)
        H = np.maximum(np.abs(plo), np.abs(phi))
        if relu:
            H = np.maximum(np.maximum(plo, 0.0), np.maximum(phi, 0.0))
        Hs.append(H)
    kind = readout[0]
    cols = list(readout[1:])
    y_mag = Hs[-1]
    if kind in ("logit", "prob"):
        (i,) = cols
        e_logit = float(d[i])
        signs = [1]
    elif kind in ("margin", "softmax"):
        i, j = cols
        e_logit = float(_up0(d[i] + d[j]))
        # fairspec subtracts the two float columns in float64: exact when both are on a grid it fits
        sub_exact = exact_rows(np.array([[1.0, -1.0]]), np.zeros(1), grid[[i, j]],
                               np.array([float(up(y_mag[i] + y_mag[j]))]), "float64")[0][0]
        if kind == "margin" and not (sub_exact and d[i] == 0 and d[j] == 0):
            e_logit = float(up(e_logit + float(up(2 * U64 * float(up(y_mag[i] + y_mag[j] + d[i] + d[j]))))))
        signs = [1, -1]
    else:
        raise ValueError(f"unknown readout {readout!r}")
    # the proof's network against the runtime's, in exact arithmetic
    if proof_net is not None:
        P = as_layers(proof_net)
        # a run of layers with no ReLU between (identity units) against the proof's one folded layer
        R, Hb, slack = runtime_blocks(layers, Hs, len(P))
        row_w, row_b = [R[-1][0][c] for c in cols], [R[-1][1][c] for c in cols]
        e_logit = float(_up0(e_logit + _proof_mismatch(P, R, encoding, lo, hi, Hb, row_w, row_b, signs, slack,
                                                     cols, offset=not difference)))
    if kind in ("logit", "margin"):
        return e_logit
    return float(up(up(e_logit / 4.0) + SIGMOID_ABS_ERROR[precision]))


# ---------------------------------------------------------------------------------------------
# Multiclass: the runtime error bound of the class score (the class score itself: certify.argmax)
# ---------------------------------------------------------------------------------------------

def _argmax_error_bound(runtime_net, lo, hi, *, encoding, readout, proof_net, precision, integer, onehot_groups,
                        base_net) -> float:
    got = class_readout(readout)
    if got is None:
        raise ValueError(f"unknown readout {readout!r}")
    c, head = got
    R = as_layers(runtime_net)
    K = R[-1][0].shape[0]
    base = R if base_net is None else as_layers(base_net)
    if base[-1][0].shape[0] != K:
        raise ValueError(f"the base network has {base[-1][0].shape[0]} outputs, the runtime's {K}")
    if proof_net is not None:
        want = argmax_layers(base, c)
        got = as_layers(proof_net)
        if len(want) != len(got) or any(not (np.array_equal(w[0], g[0]) and np.array_equal(w[1], g[1])
                                             and w[2] == g[2]) for w, g in zip(want, got)):
            raise ValueError("the proof's network is not the class score of the base network")
    if base[-1][2]:
        raise ValueError("a ReLU on the output layer is outside the runtime error model of a class score")
    E = 0.0
    for j in range(K):
        if j == c:
            continue
        W, b, _ = base[-1]
        margin = base[:-1] + [(_exact_diff(W[c], W[j]).reshape(1, -1),
                               _exact_diff(np.array([b[c]]), np.array([b[j]])), False)]
        pn = margin if (base_net is not None or proof_net is not None) else None
        e = runtime_error_bound(R, lo, hi, encoding=encoding, readout=("margin", c, j), proof_net=pn,
                                precision=precision, integer=integer, onehot_groups=onehot_groups)
        E = max(E, float(e))
    if head == "softmax":       # the runtime's class is its softmax's: certify.argmax's docstring
        E = float(up(E + softmax_class_slack(K, precision)))
    return E


def _proof_mismatch(P, R, encoding, lo, hi, Hs, row_w, row_b, signs, slack, cols, offset: bool = True) -> float:
    """Bound of |proof logit(v) - runtime exact logit(x_exact(v))| over the box (``R``: the runtime's
    layers or blocks of them composed, ``slack[k]`` bounding the error of block k's composition).
    ``offset`` False: the output row's constant part (its bias against the runtime's, with the
    encoding's offsets when the network is one layer) is left out, the same for every input: the bound
    of the mismatch's input-dependent part, which is what a difference of two scores sees."""
    if len(P) != len(R):
        raise ValueError(f"the proof's network has {len(P)} layers, the runtime's {len(R)}")
    n_in = R[0][0].shape[1]
    V = np.maximum(np.abs(lo), np.abs(hi))
    # layer 1: W' v + b'  against  W (S v + t) + b  =  (W S) v + (W t + b)
    W1, b1, _ = R[0]
    Wp, bp, _ = P[0]
    # a one-layer runtime read by a margin: the proof's one row against the readout's rows combined exactly
    one = len(R) == 1 and Wp.shape[0] == 1 and W1.shape[0] != 1 and Wp.shape[1] == W1.shape[1]
    if Wp.shape != W1.shape and not one:
        raise ValueError("the proof's first layer does not match the runtime's")
    st = [(encoding[i].exact() if encoding is not None else (Fraction(1), Fraction(0))) for i in range(n_in)]
    plain = [s == 1 and t == 0 for s, t in st]
    delta = np.zeros(Wp.shape[0])
    for j in range(Wp.shape[0]):
        if not one and all(plain) and np.array_equal(Wp[j], W1[j]) and bp[j] == b1[j]:
            continue
        const = Fraction(float(bp[j])) - (sum(sg * Fraction(float(b1[c])) for sg, c in zip(signs, cols)) if one
                                          else Fraction(float(b1[j])))
        tot = Fraction(0)
        for i in range(n_in):
            s, t = st[i]
            w = (sum(sg * Fraction(float(W1[c, i])) for sg, c in zip(signs, cols)) if one
                 else Fraction(float(W1[j, i])))
            if plain[i]:
                dw = Fraction(float(Wp[j, i])) - w
            else:
                dw = Fraction(float(Wp[j, i])) - w * s
                const -= w * t
            if dw:
                tot += abs(dw) * Fraction(float(V[i]))
        delta[j] = float_up(tot + (abs(const) if offset or len(R) > 1 else 0))
    first_slack = slack[0] if not one else np.array([float_up(sum(Fraction(float(slack[0][c])) for c in cols))])
    delta = _up0(delta + first_slack)
    # hidden layers: delta' = |W'| delta + |W' - W| H + |b' - b|
    for k in range(1, len(R)):
        Wp, bp, _ = P[k]
        W, b, _ = R[k]
        H = Hs[k]
        last = k == len(R) - 1
        if last:
            if Wp.shape[0] != 1:
                raise ValueError("the proof's network must end in one logit")
            wq = [sum((sg * Fraction(float(r[c])) for sg, r in zip(signs, row_w)), Fraction(0)) for c in range(W.shape[1])]
            bq = sum((sg * Fraction(float(r)) for sg, r in zip(signs, row_b)), Fraction(0))
            mis = _mismatch(Wp, bp, None, None, H, rows=(lambda j: wq, lambda j: bq), bias=offset)
            mis = _up0(mis + float_up(sum((Fraction(float(slack[k][c])) for c in cols), Fraction(0))))
        else:
            if Wp.shape != W.shape:
                raise ValueError(f"the proof's layer {k + 1} does not match the runtime's")
            mis = _up0(_mismatch(Wp, bp, W, b, H) + slack[k])     # a hidden block's composition error too
        delta = _up0(_absmv_up(np.abs(Wp), delta) + mis) if np.any(delta) else mis
    return float(delta[0])


def _up0(x):
    """``up`` of a sum of non-negative floats, but an exact 0 kept 0 (such a sum rounds to 0 only when every
    term is 0): a proof network equal to the runtime's in exact arithmetic then has no mismatch at all."""
    return np.where(np.asarray(x) == 0, 0.0, up(x))


def equal_logits_readout(runtime_net, lo, hi, *, post: str, eps, eps_strict: bool, readout, fixed_head: bool = False,
                         **bound) -> tuple | None:
    """The logit readout whose equality in the two copies of every pair proves a ``prob`` post at eps 0,
    or a ``label`` post, on the runtime, or None. ``|p - p'| <= 0`` holds iff ``p = p'`` for every pair;
    it does when the runtime's logits are the same float, ``z = z'``, and the probability is one fixed
    function of that float alone. A binary label is one function of that float too, the runtime's rule
    at the threshold included (``decision_function > 0``, ``expit(z) > 1/2``, ``score > threshold``; a
    margin's sign is the exact difference's), so equal floats give equal labels, also where a pair sits
    exactly at the threshold (which the label claim ``min(z, -z') < -E``, strict, cannot prove). The
    readouts:

    * readout ``("logit", i)`` / ``("margin", i, j)``: the post reads the real logistic of the runtime's
      logit (:class:`fairspec.certify.enumerate.SigmoidCheck`): one value for one input (and, strictly
      increasing, different for different ones: then the claim is also necessary);
    * readout ``("prob", i)`` with ``fixed_head``: the runtime's probability is one elementwise function
      of column i's float (scipy's ``expit`` of a scikit-learn model, a scalar loop with no lane or
      position dependence: :func:`fairspec.models.batching.elementwise_sigmoid_head`); a vectorised
      logistic (torch, onnxruntime) may round one input differently by its position: not taken.

    ``z = z'`` as floats follows from a proof that ``z - z' <= 0`` for every ordered pair (the pairs of a
    pair question are symmetric: each order is one) about the proof network, when the runtime's logit
    difference is the proof's exactly: :func:`runtime_error_bound` with ``difference=True`` is 0 (every
    row exact over the box, no input-dependent mismatch). ``bound``: its keyword arguments (encoding,
    proof_net, precision, integer, onehot_groups). eps is read as the spec writes it."""
    from fairspec.certify.exact import threshold_of

    if post != "label" and (post != "prob" or eps_strict or threshold_of(eps) != 0):
        return None
    kind = readout[0]
    if kind in ("logit", "margin"):
        logit = tuple(readout)
    elif kind == "prob" and fixed_head:
        logit = ("logit", readout[1])
    else:
        return None
    try:
        E = runtime_error_bound(runtime_net, lo, hi, readout=logit, difference=True, **bound)
    except (ValueError, TypeError, AttributeError):
        return None
    return logit if E == 0 else None


def prob_error_to_logit(e_prob: float) -> float:
    """A logit margin for a probability error: if ``|p~ - sigmoid(z)| <= e`` and ``p~ > 1/2`` then
    ``z > -4e / (1 - 2e)`` (``ln((1/2 + e) / (1/2 - e)) <= 4e / (1 - 2e)``); inf for e >= 1/2."""
    e = Fraction(float(e_prob))
    if e >= Fraction(1, 2):
        return math.inf
    return float_up(4 * e / (1 - 2 * e))


_E_MEMO: dict = {}


def _error_over(runtime_net, layers, elo, ehi, encoding, readout, precision, integer, onehot_groups) -> float:
    """:func:`runtime_error_bound` over the box [elo, ehi], remembered for the same network, encoding
    and box (the memo keeps the objects it keys by id alive and compares them, so an id is never
    mistaken for another object's)."""
    key = (id(runtime_net), id(encoding), elo.tobytes(), ehi.tobytes(), tuple(readout), precision,
           None if integer is None else np.asarray(integer, dtype=bool).tobytes(),
           tuple(tuple(g) for g in onehot_groups))
    hit = _E_MEMO.get(key)
    if hit is not None and hit[0] is runtime_net and hit[1] is encoding:
        return hit[2]
    E = runtime_error_bound(layers, elo, ehi, encoding=encoding, readout=readout, precision=precision,
                            integer=integer, onehot_groups=onehot_groups)
    if len(_E_MEMO) >= 256:
        _E_MEMO.clear()
    _E_MEMO[key] = (runtime_net, encoding, E)
    return E


def score_interval(runtime_net, lo, hi, *, readout=("logit", 0), encoding=None, precision: str = "float32",
                   integer=None, onehot_groups: Sequence[Sequence[int]] = (), symbolic: bool = False,
                   error_box=None):
    """``(lower, upper, E)``: rigorous bounds of the score **as the runtime computes it** over every
    input of the box (outward-rounded intervals of the exact network, with ``symbolic`` intersected
    with :func:`symbolic_bounds`, widened by the runtime error bound E of
    :func:`runtime_error_bound`; in the readout's units), or None for an empty box.

    ``error_box``: a box containing ``[lo, hi]`` (checked here) over which E is computed and
    remembered, so that the sub-boxes of one box share one E (a bound over a box holds on each
    of its sub-boxes)."""
    layers = as_layers(runtime_net)
    lo = np.asarray(lo, dtype=np.float64).reshape(-1)
    hi = np.asarray(hi, dtype=np.float64).reshape(-1)
    if error_box is not None:
        elo = np.asarray(error_box[0], dtype=np.float64).reshape(-1)
        ehi = np.asarray(error_box[1], dtype=np.float64).reshape(-1)
        if elo.shape != lo.shape or ehi.shape != hi.shape or np.any(elo > lo) or np.any(ehi < hi):
            raise ValueError("error_box must contain the box")
        E = _error_over(runtime_net, layers, elo, ehi, encoding, readout, precision, integer, onehot_groups)
    else:
        E = runtime_error_bound(layers, lo, hi, encoding=encoding, readout=readout, precision=precision,
                                integer=integer, onehot_groups=onehot_groups)
    xlo, xhi, _ = _encoded_box_and_error(encoding, lo, hi, integer, precision)
    ibp = rigorous_ibp(layers, xlo, xhi, onehot_groups)
    if ibp is None:
        return None
    plo, phi = ibp[-1]
    if symbolic:
        sym = symbolic_bounds(layers, xlo, xhi)
        if sym is not None:
            plo, phi = np.maximum(plo, sym[0]), np.minimum(phi, sym[1])
    kind, cols = readout[0], list(readout[1:])
    if kind in ("logit", "prob"):
        s_lo, s_hi = float(plo[cols[0]]), float(phi[cols[0]])
    else:
        i, j = cols
        s_lo, s_hi = float(down(plo[i] - phi[j])), float(up(phi[i] - plo[j]))
    if kind in ("prob", "softmax"):
        from fairspec.certify.rounding import sigmoid_down, sigmoid_up
        s_lo, s_hi = sigmoid_down(s_lo), sigmoid_up(s_hi)
    return float(down(s_lo - E)), float(up(s_hi + E)), E


def prove_output_bound(runtime_net, lo, hi, op: str, threshold, *, claim: str, readout=("logit", 0),
                       encoding=None, precision: str = "float32", integer=None,
                       onehot_groups: Sequence[Sequence[int]] = (), **detail):
    """An ``interval`` Proof that the score **as the runtime computes it** satisfies ``score op
    threshold`` for every input of the box, or None: certify bounds the exact network's score by
    outward-rounded intervals (one-hot groups exact), widens them by the runtime error bound E it
    computes itself (:func:`runtime_error_bound`), and decides with strictness as written
    (:func:`fairspec.certify.exact.interval_decide`; ``threshold`` as the spec writes it)."""
    from fairspec.certify.exact import interval_decide, threshold_of
    from fairspec.certify.proof import _mint

    r = score_interval(runtime_net, lo, hi, readout=readout, encoding=encoding, precision=precision,
                       integer=integer, onehot_groups=onehot_groups)
    if r is None:
        return None
    lo_r, hi_r, E = r
    thr = threshold_of(threshold)
    if interval_decide(lo_r, hi_r, op, thr) != "holds":
        return None
    return _mint("interval", claim, lower=lo_r, upper=hi_r, runtime_error=E, op=op, threshold=thr,
                 readout=list(readout), precision=precision, **detail)
