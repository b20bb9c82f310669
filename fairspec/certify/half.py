"""The float16 runtime error model of certify (ONNX graphs with FLOAT16 tensors, torch half modules).

**What the runtimes do** (measured, ``tests/test_float16_runtime.py`` keeps measuring it):
onnxruntime's CPU provider has no float16 kernels for MatMul / Gemm / Add / Relu / Sigmoid /
Softmax; its graph transformer casts the inputs and the weights to float32 (exactly), runs the whole
chain in float32 (MatMul + Add fused into one Gemm, a Softmax expanded into ReduceMax, Sub, Exp,
ReduceSum, Div) and casts the output to float16 once. torch's CPU half Linear and sigmoid gave the
same bits as their float32 computation rounded once where first measured; on an AMD EPYC a half Linear
does not always (another kernel, session 27). The bound below does **not** rest on either: it
holds for any runtime that rounds every elementary operation to float16 *or* to float32, in any
order, with or without FMA.

**The affine layer** ``y = fl(W h + b)`` with n inputs. Every elementary operation (a product, an
addition, a cast) in round-to-nearest gives ``op(1 + delta) + e`` with ``|delta| <= u`` and
``|e| <= eta / 2`` (only a product or a cast can underflow), ``u`` the unit roundoff of the precision
it rounds to: ``u16 = 2**-11`` for float16, ``u32 = 2**-24 <= u16`` for float32; ``eta16 = 2**-24`` the
smallest float16 subnormal (float32's half-spacing ``2**-150`` is smaller). Along the path of one
term ``w_j h_j`` (or the bias) to the result there are at most ``n + 1`` float16 roundings (the product,
``n - 1`` additions, the bias's addition: the float16-throughout case) and at most ``n + 2`` float32
ones plus one float16 cast (the float32-then-cast case; a MatMul then Add in two float16 nodes: at
most ``n + 1`` float32 ones and two casts). With ``(1 + u32)**m <= 1 / (1 - m u32) <= 1 + u16`` for
``m <= MAX_TERMS`` (``m u32 <= u16 / (1 + u16)``), each term's factor is within
``(1 + u16)**(n + 2) - 1 <= gamma(n + 2, u16)`` of 1 (Higham, Lemma 3.1), so

    ``|fl(W h + b) - (W h + b)| <= gamma(n + 2, u16) (|W||h| + |b|) + (n + 2) eta16``

for every summation order: the float32 / float64 bound ``gamma(n + 1)`` with one more rounding (the
cast). Inputs: a value cast to float16 is exact when it is an integer of magnitude at most
``2**11`` (:data:`EXACT_INTEGERS`), else within ``u16 |x| + eta16``; weights must be float16 numbers
(``network._check_representable``). A cast by way of float32 (torch's float64 -> float16 conversion
rounds twice, measured) is within the same ``u16 |x| + eta16``: it differs from the direct rounding
only where ``fl32(x)`` is a float16 midpoint ``m``, at least ``2**e (1 + 2**-11)`` in the binade
``[2**e, 2**(e+1))``, and its error is then at most half a float16 spacing plus half a float32 one,
``2**e (2**-11 + 2**-24) <= u16 |x|`` since ``|x| >= |m| - 2**(e-24)``; below ``2**-14`` float32 is
still normal and the error at most ``eta16 / 2 + 2**-38 <= eta16``.

**torch half modules** (Linear, ReLU, a final Sigmoid / Softmax): each Linear is one layer of the
bound above (measured: the float32 product plus bias, cast to float16 once; the next Linear reads the
float16 values), ReLU exact, the heads as below. The network reader's agreement check on such a module
uses the same bound over the box of its inputs (:mod:`fairspec.certify.agreement`).

**No overflow.** The model holds only while no value leaves the finite range (float16's largest is
65504; beyond 65520 the cast gives inf). A partial sum of any subset of a layer's terms, computed in
any order, is at most ``mag + err`` in magnitude (``mag = |W|(H + d) + |b|``, ``H`` bounding the
exact layer input, ``d`` its runtime error, ``err`` the rounding bound above); so is every product,
the pre-activation and the layer's output. :func:`layer_rounding` refuses (ValueError) unless that is
strictly below 65504, and :func:`check_range` the encoded input.

**Sigmoid and softmax heads.** Both runtimes evaluate them in float32 on the float32 logits and
round the probability (in [0, 1]) once: within ``2**-12`` (half a float16 spacing below 1) plus the
float32 evaluation's assumed error (``2**-20`` for a sigmoid, ``2**-18`` for a K-class softmax, see
``network.SIGMOID_ABS_ERROR`` and ``class_prob.SOFTMAX_ABS_ERROR``): :data:`SIGMOID_ABS_ERROR16` and
:data:`SOFTMAX_ABS_ERROR16` (``2**-11``) cover both, with room. Measured: onnxruntime's and torch's
float16 sigmoid on every finite float16 input are within ``2**-12 (1 + 1.1e-4)`` of the exact
logistic; torch's half softmax (5 classes, 60,000 rows) within ``2**-12 (1 + 1e-4)`` of the exact
softmax of its float16 logits (bit for bit the float32 softmax cast once but for one value in ~10**5,
one float16 step off: another float32 evaluation path). The logit the head reads is the runtime's logit, whichever precision holds it: the layer
bound above covers both.

Pure numpy and fractions: no solver, no model library.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from fairspec.certify.rounding import float_up, gamma, up

__all__ = ["U16", "ETA16", "F16_MAX", "EXACT_INTEGERS", "MAX_TERMS", "SIGMOID_ABS_ERROR16", "SOFTMAX_ABS_ERROR16",
           "layer_rounding", "check_range"]

U16 = 2.0 ** -11          # unit roundoff of float16 (round to nearest)
ETA16 = 2.0 ** -24        # smallest positive float16 (subnormal)
F16_MAX = 65504.0         # largest finite float16
#: the largest integer magnitude up to which every integer is a number of the precision (a cast is exact)
EXACT_INTEGERS = {"float16": 2 ** 11, "float32": 2 ** 24, "float64": 2 ** 53}
#: the most terms (inputs + bias) of a float16 layer the mixed-precision argument covers
MAX_TERMS = 4096
SIGMOID_ABS_ERROR16 = 2.0 ** -11
SOFTMAX_ABS_ERROR16 = 2.0 ** -11


def check_range(precision: str, bound, what: str) -> None:
    """ValueError unless every value of ``bound`` (an upper bound of magnitudes) is strictly below
    float16's largest number; nothing for float32 / float64 (whose ranges the callers' boxes stay in)."""
    if precision != "float16":
        return
    b = np.asarray(bound, dtype=np.float64)
    if b.size and not float(np.max(b)) < F16_MAX:
        raise ValueError(f"{what} may reach {float(np.max(b)):.6g}, beyond float16's largest number (65504): "
                         "the float16 runtime may overflow there")


def layer_rounding(n: int, mag, precision: str, u: float, eta: float, k: int = 0):
    """The rounding error bound of one affine layer with ``n`` inputs, elementwise, given ``mag >=
    |W||h~| + |b|`` (``h~`` the runtime's layer input): ``gamma(n + 1, u) mag + (n + 1) eta`` for float32
    / float64, ``gamma(n + 2, u16) mag + (n + 2) eta16`` for float16 (see the module docstring), which
    also proves that no partial sum, product or output of the layer (``k``: its index) overflows."""
    m = n + 2 if precision == "float16" else n + 1
    if precision == "float16" and n + 1 > MAX_TERMS:
        raise ValueError(f"layer {k + 1} has {n} inputs: the float16 error model covers at most {MAX_TERMS - 1}")
    err = up(up(gamma(m, u) * np.asarray(mag, dtype=np.float64)) + float_up(Fraction(m) * Fraction(eta)))
    check_range(precision, up(mag + err), f"a partial sum of layer {k + 1}")
    return err
