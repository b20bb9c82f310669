"""Bounds on the neurons of a ReLU network over an input box, and on the *difference*
between the two copies of a pair.

* :func:`interval_bounds` — interval bound propagation (IBP) of the pre-activations
  ``z = W h + b`` layer by layer, exact per layer for one-hot groups (a group contributes
  one of its columns, not the sum of their ranges).
* :func:`lp_tighten` — per-neuron LP over the triangle relaxation of the earlier layers
  (HiGHS), optional: pays on small networks, costs ``2 x #neurons`` LPs.
* :func:`pair_bounds` — the single-copy bounds plus bounds on ``dz = z' - z`` and
  ``dh = relu(z') - relu(z)``: the copies share every tied input, so the difference starts
  at 0 there and stays far tighter than the two intervals apart. ReLU is monotone and
  1-Lipschitz, so ``dh`` lies between 0 and ``dz`` and ``|dh| <= max(u, 0)``; stably inactive
  neurons give ``dh = 0`` and stably active ones ``dh = dz``. With ``lp=True`` each ``dz``
  bound is further tightened by an LP over the relaxed pair encoding (both copies with the
  earlier difference rows).

These bounds give the big-M constants of the MILP and are added to it as rows
``dlo <= z' - z <= dhi`` (STACK.md: those rows cut SCIP's time to prove the maximal
violation about 10x on small networks). They are sound for every pair meeting the
pre-condition (a pair whose inputs lie in the box), whatever the post-condition.
"""

from __future__ import annotations

from fairspec.runtime.stdio import new_highs

import time
from dataclasses import dataclass

import numpy as np

from fairspec.models.network import PLNet

__all__ = ["NetBounds", "PairBounds", "interval_bounds", "lp_tighten", "input_difference",
           "difference_bounds", "pair_bounds"]


@dataclass(frozen=True, eq=False)
class NetBounds:
    """Per layer: bounds of the pre-activation ``z`` and of the layer's output ``h``."""

    z_lo: tuple[np.ndarray, ...]
    z_hi: tuple[np.ndarray, ...]
    h_lo: tuple[np.ndarray, ...]
    h_hi: tuple[np.ndarray, ...]

    def unstable(self, net: PLNet) -> int:
        """Number of ReLUs whose sign the bounds leave open (the binaries of the MILP)."""
        return int(sum(int(np.sum((lo < 0) & (hi > 0)))
                       for l, lo, hi in zip(net.layers, self.z_lo, self.z_hi) if l.relu))


@dataclass(frozen=True, eq=False)
class PairBounds:
    """Single-copy bounds (valid for x and x') and bounds on the differences ``z' - z``, ``h' - h``."""

    single: NetBounds
    dz_lo: tuple[np.ndarray, ...]
    dz_hi: tuple[np.ndarray, ...]
    dh_lo: tuple[np.ndarray, ...]
    dh_hi: tuple[np.ndarray, ...]
    din_lo: np.ndarray
    din_hi: np.ndarray
    seconds: float = 0.0


SLACK = 1e-9     # relative widening of every computed bound (floating-point rounding)


def _slack(W, a, b, bias=None) -> np.ndarray:
    """Outward slack for an interval sum computed in floating point: exact zeros stay zero,
    so a difference proved exactly 0 (no input can differ) is still shared by the copies."""
    mag = np.abs(W) @ np.maximum(np.abs(a), np.abs(b))
    if bias is not None:
        mag = mag + np.abs(bias)
    return SLACK * mag


def _relu_out(layer, lo, hi):
    if layer.relu:
        return np.maximum(lo, 0.0), np.maximum(hi, 0.0)
    return lo, hi


def _first_layer_interval(W, b, lo, hi, groups) -> tuple[np.ndarray, np.ndarray]:
    """z = W x + b over the box, each one-hot group contributing exactly one column."""
    in_group = np.zeros(W.shape[1], dtype=bool)
    zl = b.copy()
    zh = b.copy()
    for g in groups:
        g = list(g)
        in_group[g] = True
        Wg = W[:, g]
        zl += Wg.min(axis=1)
        zh += Wg.max(axis=1)
    Wr = W[:, ~in_group]
    Wp, Wn = np.maximum(Wr, 0), np.minimum(Wr, 0)
    zl += Wp @ lo[~in_group] + Wn @ hi[~in_group]
    zh += Wp @ hi[~in_group] + Wn @ lo[~in_group]
    sl = _slack(W, lo, hi, b) + SLACK * np.abs(zl) + SLACK * np.abs(zh)
    return zl - sl, zh + sl


def interval_bounds(net: PLNet, lo, hi, onehot_groups=()) -> NetBounds:
    """Interval bound propagation over the box ``[lo, hi]`` (one-hot groups taken exactly)."""
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    zls, zhs, hls, hhs = [], [], [], []
    hl, hh = lo, hi
    for k, layer in enumerate(net.layers):
        if k == 0:
            zl, zh = _first_layer_interval(layer.W, layer.b, lo, hi, onehot_groups)
        else:
            Wp, Wn = np.maximum(layer.W, 0), np.minimum(layer.W, 0)
            zl = Wp @ hl + Wn @ hh + layer.b
            zh = Wp @ hh + Wn @ hl + layer.b
            sl = _slack(layer.W, hl, hh, layer.b)
            zl, zh = zl - sl, zh + sl
        hl, hh = _relu_out(layer, zl, zh)
        zls.append(zl); zhs.append(zh); hls.append(hl); hhs.append(hh)
    return NetBounds(tuple(zls), tuple(zhs), tuple(hls), tuple(hhs))


def input_difference(problem) -> tuple[np.ndarray, np.ndarray]:
    """Bounds on ``x' - x`` per input: 0 when tied, ±t when relaxed, the box width when free."""
    p = problem
    n = p.n
    dlo = np.zeros(n)
    dhi = np.zeros(n)
    width = p.hi - p.lo
    for i in p.free:
        dlo[i], dhi[i] = -width[i], width[i]
    for i, t in p.relaxed:
        dlo[i], dhi[i] = -min(t, width[i]), min(t, width[i])
    return dlo, dhi


def difference_bounds(net: PLNet, single: NetBounds, din_lo, din_hi, free_groups=()) -> tuple:
    """Interval propagation of the copies' difference (see module docstring)."""
    dzl_s, dzh_s, dhl_s, dhh_s = [], [], [], []
    dl, dh = np.asarray(din_lo, dtype=np.float64), np.asarray(din_hi, dtype=np.float64)
    for k, layer in enumerate(net.layers):
        W = layer.W
        if k == 0 and free_groups:
            in_group = np.zeros(W.shape[1], dtype=bool)
            zl = np.zeros(W.shape[0])
            zh = np.zeros(W.shape[0])
            for g in free_groups:
                g = list(g)
                in_group[g] = True
                Wg = W[:, g]
                spread = Wg.max(axis=1) - Wg.min(axis=1)      # e_j - e_k over the group
                zl -= spread
                zh += spread
            Wr = W[:, ~in_group]
            Wp, Wn = np.maximum(Wr, 0), np.minimum(Wr, 0)
            zl += Wp @ dl[~in_group] + Wn @ dh[~in_group]
            zh += Wp @ dh[~in_group] + Wn @ dl[~in_group]
        else:
            Wp, Wn = np.maximum(W, 0), np.minimum(W, 0)
            zl = Wp @ dl + Wn @ dh
            zh = Wp @ dh + Wn @ dl
        sl = _slack(W, dl, dh)
        zl, zh = zl - sl, zh + sl
        # never looser than the two copies' intervals apart
        zlo, zhi = single.z_lo[k], single.z_hi[k]
        zl = np.maximum(zl, zlo - zhi)
        zh = np.minimum(zh, zhi - zlo)
        if layer.relu:
            u = np.maximum(zhi, 0.0)
            hl = np.maximum(np.minimum(zl, 0.0), -u)
            hh = np.minimum(np.maximum(zh, 0.0), u)
            inactive = zhi <= 0
            active = zlo >= 0
            hl = np.where(inactive, 0.0, np.where(active, zl, hl))
            hh = np.where(inactive, 0.0, np.where(active, zh, hh))
        else:
            hl, hh = zl, zh
        dzl_s.append(zl); dzh_s.append(zh); dhl_s.append(hl); dhh_s.append(hh)
        dl, dh = hl, hh
    return tuple(dzl_s), tuple(dzh_s), tuple(dhl_s), tuple(dhh_s)


def pair_bounds(problem, lp: bool = False, lp_time: float | None = None) -> PairBounds:
    """Single-copy and difference bounds for a :class:`~fairspec.backends.pair.PairProblem`.

    ``lp=True`` tightens both with LPs (HiGHS) within ``lp_time`` seconds (then falls back to
    the interval bounds for the neurons not reached).
    """
    t0 = time.perf_counter()
    p = problem
    single = interval_bounds(p.net, p.lo, p.hi, p.onehot_groups)
    din_lo, din_hi = input_difference(p)
    free_groups = tuple(g for g in p.onehot_groups if set(g) <= set(p.free))
    d = difference_bounds(p.net, single, din_lo, din_hi, free_groups)
    pb = PairBounds(single, *d, din_lo, din_hi, time.perf_counter() - t0)
    if lp:
        pb = lp_tighten(p, pb, time_limit=lp_time)
    return pb


# ---------------------------------------------------------------------------------------------
# LP tightening
# ---------------------------------------------------------------------------------------------

def lp_tighten(problem, bounds: PairBounds, time_limit: float | None = None,
               difference: bool = True) -> PairBounds:
    """Tighten single-copy and difference bounds layer by layer with LPs over the relaxed
    pair encoding (HiGHS, warm-started between objectives). Layers are processed in order and
    each layer's new bounds feed the next layer's relaxation. Stops tightening (keeping the
    sound interval bounds) once ``time_limit`` seconds have passed."""
    import highspy

    from fairspec.backends.milp.encoding import encode_prefix

    t0 = time.perf_counter()
    p = problem
    net = p.net
    zl = [a.copy() for a in bounds.single.z_lo]
    zh = [a.copy() for a in bounds.single.z_hi]
    dzl = [a.copy() for a in bounds.dz_lo]
    dzh = [a.copy() for a in bounds.dz_hi]

    def current() -> PairBounds:
        hl, hh = [], []
        for layer, a, b in zip(net.layers, zl, zh):
            x, y = _relu_out(layer, a, b)
            hl.append(x); hh.append(y)
        single = NetBounds(tuple(zl), tuple(zh), tuple(hl), tuple(hh))
        d = difference_bounds(net, single, bounds.din_lo, bounds.din_hi,
                              tuple(g for g in p.onehot_groups if set(g) <= set(p.free)))
        # keep the LP-tightened difference bounds of the layers already done
        dzl2 = [np.maximum(a, b) for a, b in zip(d[0], dzl)]
        dzh2 = [np.minimum(a, b) for a, b in zip(d[1], dzh)]
        dhl, dhh = [], []
        for k, layer in enumerate(net.layers):
            if layer.relu:
                u = np.maximum(zh[k], 0.0)
                a = np.maximum(np.minimum(dzl2[k], 0.0), -u)
                b = np.minimum(np.maximum(dzh2[k], 0.0), u)
                inactive, active = zh[k] <= 0, zl[k] >= 0
                a = np.where(inactive, 0.0, np.where(active, dzl2[k], a))
                b = np.where(inactive, 0.0, np.where(active, dzh2[k], b))
                a = np.maximum(a, d[2][k]); b = np.minimum(b, d[3][k])
            else:
                a, b = dzl2[k], dzh2[k]
            dhl.append(a); dhh.append(b)
        return PairBounds(single, tuple(dzl2), tuple(dzh2), tuple(dhl), tuple(dhh),
                          bounds.din_lo, bounds.din_hi, time.perf_counter() - t0 + bounds.seconds)

    for k in range(1, len(net.layers)):           # layer 0 is exact already (a box, linear)
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            break
        pb = current()
        enc = encode_prefix(p, pb, k)           # relaxed encoding of layers < k, both copies
        h = new_highs()
        lm = enc.model
        lm.to_highs(h, relax=True)
        layer = net.layers[k]
        rows_x = enc.layer_inputs(0)
        rows_xp = enc.layer_inputs(1)
        n_out = layer.n_out
        ncol = lm.n_vars
        for j in range(n_out):
            if time_limit is not None and time.perf_counter() - t0 > time_limit:
                break
            for which in ("z", "dz"):
                if which == "dz" and (not difference or (dzl[k][j] == 0 and dzh[k][j] == 0)):
                    continue
                cost = np.zeros(ncol)
                for idx, w in zip(rows_x, layer.W[j]):
                    if idx is not None:
                        cost[idx] += -w if which == "dz" else w
                if which == "dz":
                    for idx, w in zip(rows_xp, layer.W[j]):
                        if idx is not None:
                            cost[idx] += w
                const = layer.b[j] if which == "z" else 0.0
                for sense in (1, -1):   # 1: minimise, -1: maximise
                    h.changeColsCost(ncol, np.arange(ncol, dtype=np.int32), sense * cost)
                    h.changeObjectiveSense(highspy.ObjSense.kMinimize)
                    h.run()
                    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
                        continue
                    # the dual objective is a sound bound even if the primal is slightly off
                    val = sense * h.getInfo().objective_function_value + const
                    slack = 1e-7 * (1.0 + abs(val))
                    if which == "z":
                        if sense == 1:
                            zl[k][j] = max(zl[k][j], val - slack)
                        else:
                            zh[k][j] = min(zh[k][j], val + slack)
                    else:
                        if sense == 1:
                            dzl[k][j] = max(dzl[k][j], val - slack)
                        else:
                            dzh[k][j] = min(dzh[k][j], val + slack)
            if zl[k][j] > zh[k][j]:
                zl[k][j] = zh[k][j] = 0.5 * (zl[k][j] + zh[k][j])
            if dzl[k][j] > dzh[k][j]:
                dzl[k][j] = dzh[k][j] = 0.5 * (dzl[k][j] + dzh[k][j])
    return current()

