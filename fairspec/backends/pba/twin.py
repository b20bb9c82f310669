"""The PBA problem as batched "twin" networks over a small offset box.

Paper 004 (Ceteris Paribus PBA fairness), Eq. (1)-(8): for an input x with true
class c_i and its counterfactual x' (one sensitive attribute flipped), the point is
PBA-verified when

    min  (x_ci - x_cj)(x~) - (x_ci - x_cj)(x~')      over the neighbourhood      (1)
    s.t. x~ and x~' share every non-sensitive feature; numerical features move
         jointly, |z_num - z~_num|_inf <= delta (Eq. 4); categorical ones are fixed
         (Eq. 5); both predictions equal the true class c_i (Eq. 3)

is > 0. For a binary classifier the logit difference ``x_c1 - x_c0`` is one number
``g`` (class 1 iff g > 0; a single-logit network is read as logits [0, g]), so with
``sigma = +1`` for class 1 and ``-1`` for class 0 the objective is
``sigma * (g(x~) - g(x~'))`` and Eq. (3) is ``sigma * g >= 0`` on both copies.

Both copies move the same offsets ``d`` (one per moving numerical feature, in the
feature's own units), so the first layer of each copy is ``z0 = C + A d`` with a
per-case bias ``C`` (``C'`` for the counterfactual) and the shared matrix
``A = W1[:, cols] * scale`` (the encoding's scaling folded in); every later layer is
shared. A :class:`TwinCases` holds P such cases at once; every bound, search and
solver works on it.

The "flipped" setting of Sec. 3.5 (x' as the input, x as its counterfactual) is the
same problem with the objective negated, so each case carries a side sign ``tau``:
``f(d) = tau * sigma * (g(x(d)) - g(x'(d)))``, verified iff ``min f > 0``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fairspec.models.network import Layer, PLNet, UnsupportedModel

__all__ = ["TwinCases", "logit_difference_net", "make_cases"]


def logit_difference_net(net: PLNet, positive: int | None = None) -> PLNet:
    """A network whose single output ``g`` is the logit of class 1 minus the logit of class 0.

    * one output (a logit, or the pre-sigmoid score; a two-class softmax was already
      rewritten by the loaders to ``b - a``): ``g`` is that output;
    * two outputs with no squashing, or a softmax over two: one logit per class,
      ``g = l[positive] - l[1 - positive]`` (``positive`` defaults to 1).
    More than two classes raise :class:`UnsupportedModel`.
    """
    last = net.layers[-1]
    n_out = last.n_out
    if n_out == 1:
        layers = list(net.layers)
    elif n_out == 2 and net.final in ("none", "softmax"):
        pos = 1 if positive is None else int(positive) % 2
        if last.relu:
            row = np.zeros((1, 2))
            row[0, pos], row[0, 1 - pos] = 1.0, -1.0
            layers = list(net.layers) + [Layer(row, np.zeros(1), False)]
        else:
            W = (last.W[pos] - last.W[1 - pos])[None, :]
            b = np.array([last.b[pos] - last.b[1 - pos]])
            layers = list(net.layers[:-1]) + [Layer(W, b, False)]
    else:
        raise UnsupportedModel("Output", "logits", f"PBA needs a binary classifier; the network has {n_out} outputs"
                                                   + (f" after a {net.final}" if net.final != "none" else ""))
    if layers[-1].relu:   # a ReLU on the output: keep g = relu(.) as an extra identity layer
        layers.append(Layer(np.ones((1, 1)), np.zeros(1), False))
    return PLNet(tuple(layers), 0, "none", net.source)


@dataclass(eq=False)
class TwinCases:
    """P cases; offsets ``d`` in ``[lo, hi]`` (integral where ``integer``).

    Attributes:
        A:       (n0, m) first-layer weights on the offsets (shared by all cases and copies).
        C, Cp:   (P, n0) first-layer pre-activations at the centre of x and of x'.
        relu0:   the first layer's ReLU.
        layers:  the shared later layers; the last has one row, g.
        lo, hi:  (P, m) the offset box.
        integer: (m,) offsets that must be whole numbers (int features).
        sigma:   (P,) +1 for true class 1, -1 for class 0.
        tau:     (P,) +1 to minimise the observed objective, -1 for the flipped one.
    """

    A: np.ndarray
    C: np.ndarray
    Cp: np.ndarray
    relu0: bool
    layers: tuple[Layer, ...]
    lo: np.ndarray
    hi: np.ndarray
    integer: np.ndarray
    sigma: np.ndarray
    tau: np.ndarray = field(default=None)

    def __post_init__(self):
        self.A = np.asarray(self.A, dtype=np.float64)
        self.C = np.atleast_2d(np.asarray(self.C, dtype=np.float64))
        self.Cp = np.atleast_2d(np.asarray(self.Cp, dtype=np.float64))
        self.lo = np.asarray(self.lo, dtype=np.float64)
        self.hi = np.asarray(self.hi, dtype=np.float64)
        self.integer = np.asarray(self.integer, dtype=bool)
        self.sigma = np.asarray(self.sigma, dtype=np.float64)
        self.tau = np.ones(len(self.C)) if self.tau is None else np.asarray(self.tau, dtype=np.float64)
        if (self.layers[-1].n_out if self.layers else self.A.shape[0]) != 1:
            raise ValueError("the last layer of a twin network has one output, g")

    @property
    def P(self) -> int:
        return self.C.shape[0]

    @property
    def m(self) -> int:
        return self.A.shape[1]

    @property
    def depth(self) -> int:
        """Number of affine layers (the first included)."""
        return 1 + len(self.layers)

    def subset(self, idx) -> "TwinCases":
        idx = np.asarray(idx)
        return TwinCases(self.A, self.C[idx], self.Cp[idx], self.relu0, self.layers, self.lo[idx], self.hi[idx],
                         self.integer, self.sigma[idx], self.tau[idx])

    def layer_relu(self, j: int) -> bool:
        return self.relu0 if j == 0 else self.layers[j - 1].relu

    # ---- evaluation --------------------------------------------------------------------------
    def g(self, C: np.ndarray, D: np.ndarray) -> np.ndarray:
        """g of one copy: C (k, n0) with offsets D (k, m) or (k, S, m) -> (k,) or (k, S)."""
        if D.ndim == 3:
            H = C[:, None, :] + D @ self.A.T
        else:
            H = C + D @ self.A.T
        if self.relu0:
            H = np.maximum(H, 0.0)
        for layer in self.layers:
            H = H @ layer.W.T + layer.b
            if layer.relu:
                H = np.maximum(H, 0.0)
        return H[..., 0]

    def pair(self, D: np.ndarray, idx=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(f, sigma*g(x), sigma*g(x')) at offsets D for the cases idx (default all)."""
        idx = np.arange(self.P) if idx is None else np.asarray(idx)
        gx = self.g(self.C[idx], D)
        gp = self.g(self.Cp[idx], D)
        s = self.sigma[idx]
        t = self.tau[idx]
        if D.ndim == 3:
            s, t = s[:, None], t[:, None]
        return t * s * (gx - gp), s * gx, s * gp

    def round_offsets(self, D: np.ndarray, idx=None) -> np.ndarray:
        """Integral offsets rounded, everything clipped into the box."""
        idx = np.arange(self.P) if idx is None else np.asarray(idx)
        lo, hi = self.lo[idx], self.hi[idx]
        if D.ndim == 3:
            lo, hi = lo[:, None, :], hi[:, None, :]
        D = np.where(self.integer, np.round(D), D)
        return np.clip(D, lo, hi)


def make_cases(net: PLNet, U: np.ndarray, Up: np.ndarray, cols, scale, lo, hi, integer, sigma, tau=None) -> TwinCases:
    """Twin cases from model-input centres U (x) and Up (x'), the moving input columns ``cols``
    (model input ``u[col] = u0[col] + scale * d``) and the offset box ``[lo, hi]``.

    ``net`` is the logit-difference network (:func:`logit_difference_net`) over model inputs.
    """
    first = net.layers[0]
    cols = np.asarray(cols, dtype=np.int64)
    scale = np.asarray(scale, dtype=np.float64)
    A = first.W[:, cols] * scale[None, :] if cols.size else np.zeros((first.n_out, 0))
    U = np.asarray(U, dtype=np.float64)
    Up = np.asarray(Up, dtype=np.float64)
    C = U @ first.W.T + first.b
    Cp = Up @ first.W.T + first.b
    return TwinCases(A, C, Cp, first.relu, tuple(net.layers[1:]), np.asarray(lo, dtype=np.float64).reshape(len(U), -1),
                     np.asarray(hi, dtype=np.float64).reshape(len(U), -1), integer, sigma, tau)
