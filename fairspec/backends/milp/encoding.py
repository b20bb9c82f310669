"""The MILP pair encoding (HyFair Sec. III "Mixed Integer Linear Programs", after Fischetti & Jo).

Two copies ``v = 0, 1`` of the network. Every tied input is ONE variable shared by both
copies; free inputs get a variable per copy; relaxed inputs a variable per copy with the row
``-t <= x'_i - x_i <= t``. Integral inputs are integer variables; each one-hot group is an
exactly-one row per copy.

Each ReLU ``h = max(z, 0)`` with pre-activation bounds ``l < 0 < u`` gets a binary ``a``
(the activation state of the paper's ``z(v)``) and the big-M rows

    h >= z,   h <= z - l (1 - a),   h <= u a,   h >= 0

(the negative part ``s(v)`` of the paper is ``h - z``, left implicit). Stably inactive
neurons (``u <= 0``) vanish, stably active ones are ``h = z``; the bounds come from
:mod:`fairspec.backends.pair.bounds`. For the second copy the **difference rows**
``dlo <= z' - z <= dhi`` and ``dlo_h <= h' - h <= dhi_h`` are added, and a neuron whose
difference is bounded to exactly 0 is shared between the copies (no second binary).

"At least one of ``must_differ`` differs" is encoded exactly: a single two-valued input
``i`` as ``x_i + x'_i = lo_i + hi_i``; a whole free one-hot group as ``x_j + x'_j <= 1`` for
each member (both exactly-one, so they differ iff no position is 1 in both); otherwise
per input binaries ``p_i`` (``x_i - x'_i >= 1``) and ``n_i`` (``x'_i - x_i >= 1``) with
``sum p_i + n_i >= 1``.

The post-condition rows and the objective are added by :mod:`fairspec.backends.milp.modes`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fairspec.backends.milp.model import INF, LinModel

DIFFER_GAP = 1e-6      # "differs" for a continuous must_differ input: |x_i - x'_i| >= this


@dataclass
class PairEncoding:
    model: LinModel
    x: list[int]
    xp: list[int]
    h: list[list[list[int | None]]]             # h[copy][layer][unit] -> var or None (constant 0)
    relu_bin: list[tuple[int, int, int, int]] = field(default_factory=list)   # (var, copy, layer, unit)
    differ_bin: list[tuple[int, int, int]] = field(default_factory=list)     # (var, input, sign)
    z: tuple[int, int] | None = None            # the logit variable of each copy
    z_bounds: tuple[float, float] = (-INF, INF)
    upto: int = 0

    def layer_inputs(self, copy: int) -> list[int | None]:
        """The variables feeding layer ``upto`` (the inputs when upto == 0)."""
        if self.upto == 0:
            return list(self.x if copy == 0 else self.xp)
        return self.h[copy][self.upto - 1]

    def start(self, problem, x, x_prime) -> dict[int, float]:
        """A complete assignment for a known pair (a MIP start)."""
        net = problem.net
        vals: dict[int, float] = {}
        for c, v in ((0, np.asarray(x, dtype=np.float64)), (1, np.asarray(x_prime, dtype=np.float64))):
            idx = self.x if c == 0 else self.xp
            for i, var in enumerate(idx):
                if c == 0 or var not in vals:
                    vals[var] = float(v[i])
            hcur = v
            zs = []
            for k, layer in enumerate(net.layers[: self.upto]):
                zk = layer.W @ hcur + layer.b
                hk = np.maximum(zk, 0) if layer.relu else zk
                zs.append(zk)
                for j, var in enumerate(self.h[c][k]):
                    if var is not None:
                        vals[var] = float(hk[j])
                hcur = hk
            for var, cc, k, j in self.relu_bin:
                if cc == c:
                    vals[var] = 1.0 if zs[k][j] > 0 else 0.0
        x = np.asarray(x, dtype=np.float64)
        xp = np.asarray(x_prime, dtype=np.float64)
        for var, i, sign in self.differ_bin:
            vals[var] = 1.0 if sign * (x[i] - xp[i]) >= 0.5 else 0.0
        return vals


def _add_inputs(problem, lm: LinModel) -> tuple[list[int], list[int], list[tuple[int, int, int]]]:
    p = problem
    x = [lm.var(p.lo[i], p.hi[i], bool(p.integer[i]), f"x{i}") for i in range(p.n)]
    xp = list(x)
    free = set(p.free)
    for i in p.free:
        xp[i] = lm.var(p.lo[i], p.hi[i], bool(p.integer[i]), f"xp{i}")
    for i, t in p.relaxed:
        xp[i] = lm.var(p.lo[i], p.hi[i], bool(p.integer[i]), f"xp{i}")
        lm.row([xp[i], x[i]], [1.0, -1.0], -t, t)
    for g in p.onehot_groups:
        lm.row([x[i] for i in g], [1.0] * len(g), 1.0, 1.0)
        if free.issuperset(g):
            lm.row([xp[i] for i in g], [1.0] * len(g), 1.0, 1.0)
    differ_bin: list[tuple[int, int, int]] = []
    must = list(p.must_differ)
    if must:
        width = p.hi - p.lo
        groups_exact = [g for g in p.onehot_groups if set(g) == set(must)]
        if len(must) == 1 and p.integer[must[0]] and width[must[0]] == 1:
            i = must[0]
            lm.row([x[i], xp[i]], [1.0, 1.0], p.lo[i] + p.hi[i], p.lo[i] + p.hi[i])
        elif groups_exact:
            for i in must:
                lm.row([x[i], xp[i]], [1.0, 1.0], -INF, 1.0)
        else:
            binaries = []
            for i in must:
                gap = 1.0 if p.integer[i] else DIFFER_GAP
                if width[i] < gap:
                    continue
                M = width[i] + gap
                for sign in (1, -1):
                    b = lm.var(0, 1, True, f"d{'p' if sign > 0 else 'n'}{i}")
                    # sign*(x_i - x'_i) >= gap - M (1 - b)
                    lm.row([x[i], xp[i], b], [sign, -sign, -M], gap - M, INF)
                    binaries.append(b)
                    differ_bin.append((b, i, sign))
            lm.row(binaries, [1.0] * len(binaries), 1.0, INF)
    return x, xp, differ_bin


def encode_prefix(problem, bounds, upto: int, diff_rows: bool = True) -> PairEncoding:
    """Encode the inputs and layers ``[0, upto)`` of both copies."""
    p = problem
    net = p.net
    lm = LinModel()
    x, xp, differ_bin = _add_inputs(p, lm)
    enc = PairEncoding(lm, x, xp, [[], []], differ_bin=differ_bin, upto=upto)
    sb = bounds.single
    hin = [list(x), list(xp)]
    for k, layer in enumerate(net.layers[:upto]):
        zl, zh = sb.z_lo[k], sb.z_hi[k]
        dzl, dzh = bounds.dz_lo[k], bounds.dz_hi[k]
        dhl, dhh = bounds.dh_lo[k], bounds.dh_hi[k]
        outs: list[list[int | None]] = [[], []]
        for j in range(layer.n_out):
            w = layer.W[j]
            shared = dzl[j] == 0.0 and dzh[j] == 0.0
            for c in (0, 1):
                if c == 1 and shared:
                    outs[1].append(outs[0][j])
                    continue
                ins = [(v, wi) for v, wi in zip(hin[c], w) if v is not None and wi != 0.0]
                idx = [v for v, _ in ins]
                coef = [-wi for _, wi in ins]
                l, u = float(zl[j]), float(zh[j])
                if layer.relu and u <= 0:
                    outs[c].append(None)
                    continue
                if not layer.relu or l >= 0:
                    lo_h = l if not layer.relu else max(l, 0.0)
                    hv = lm.var(lo_h, u, False, f"h{c}_{k}_{j}")
                    lm.row([hv] + idx, [1.0] + coef, layer.b[j], layer.b[j])          # h = z
                else:
                    hv = lm.var(0.0, u, False, f"h{c}_{k}_{j}")
                    a = lm.var(0, 1, True, f"a{c}_{k}_{j}")
                    enc.relu_bin.append((a, c, k, j))
                    lm.row([hv] + idx, [1.0] + coef, layer.b[j], INF)                 # h >= z
                    lm.row([hv] + idx + [a], [1.0] + coef + [-l], -INF, layer.b[j] - l)  # h <= z - l(1-a)
                    lm.row([hv, a], [1.0, -u], -INF, 0.0)                              # h <= u a
                outs[c].append(hv)
            if diff_rows and not shared:
                h0, h1 = outs[0][j], outs[1][j]
                unstable = layer.relu and zl[j] < 0 < zh[j]
                if unstable and (dzl[j] > zl[j] - zh[j] or dzh[j] < zh[j] - zl[j]):
                    i0 = [v for v, wi in zip(hin[0], w) if v is not None and wi != 0.0]
                    w0 = [-wi for v, wi in zip(hin[0], w) if v is not None and wi != 0.0]
                    i1 = [v for v, wi in zip(hin[1], w) if v is not None and wi != 0.0]
                    w1 = [wi for v, wi in zip(hin[1], w) if v is not None and wi != 0.0]
                    lm.row(i1 + i0, w1 + w0, float(dzl[j]), float(dzh[j]))          # dz row
                if h0 is not None and h1 is not None:
                    lm.row([h1, h0], [1.0, -1.0], float(dhl[j]), float(dhh[j]))         # dh row
        enc.h[0].append(outs[0])
        enc.h[1].append(outs[1])
        hin = outs
    return enc


def encode_pair(problem, bounds, diff_rows: bool = True) -> PairEncoding:
    """The full pair encoding; ``enc.z`` are the two logit variables."""
    net = problem.net
    L = len(net.layers)
    enc = encode_prefix(problem, bounds, L, diff_rows)
    zs = []
    sb = bounds.single
    lo_z = float(sb.h_lo[-1][0])
    hi_z = float(sb.h_hi[-1][0])
    for c in (0, 1):
        v = enc.h[c][-1][0]
        if v is None:
            v = enc.model.var(0.0, 0.0, False, f"zconst{c}")
            enc.h[c][-1][0] = v
        zs.append(v)
    enc.z = (zs[0], zs[1])
    enc.z_bounds = (lo_z, hi_z)
    return enc
