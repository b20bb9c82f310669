"""The MILP encoding of a tree ensemble's pair problem (HiGHS or SCIP through :class:`LinModel`).

After Kantchelian et al. (robustness of tree ensembles, "ordered interval variables"): for
each input ``i`` read by a split and each distinct split value ``c_{i,1} < ... < c_{i,m}`` one
binary ``p_{i,j} = [v_i <= c_{i,j}]`` per copy (``p_{i,j} <= p_{i,j+1}``), linked to the
input variable by big-M rows (integral inputs: ``v_i <= c + M (1 - p)``,
``v_i >= c + 1 - M p``; continuous ones with a gap smaller than every interval between
split values, so no interval is lost). Each tree gets one leaf variable ``y_l in [0, 1]`` per
copy with ``sum y_l = 1`` and, for every split node on ``(i, c_{i,j})``, the leaves of its left
subtree summing to at most ``p_{i,j}`` and those of its right subtree to at most
``1 - p_{i,j}``: with integral ``p`` exactly one leaf (the one ``v`` reaches) is 1, so the
leaf variables need no integrality. ``S = base + sum value_l y_l / divisor`` per copy.

The pair: the inputs and the pre-condition (tied inputs shared, relaxed rows, one-hot rows,
"some protected input differs") are the same rows as the ReLU encoding
(:func:`fairspec.backends.milp.encoding._add_inputs`). A tree that reads only tied inputs
reaches the same leaf in both copies: its leaf variables (and the ``p`` of tied inputs) are
shared, so only trees reading a protected or relaxed input are encoded twice.
"""

from __future__ import annotations

import math
import time

import numpy as np

from fairspec.backends.milp.model import INF, ENGINES, LinModel
from fairspec.backends.trees.space import cuts_by_feature

__all__ = ["MilpTreeEngine"]


def _leaves_under(t) -> list[list[int]]:
    """For each node, the leaves of its subtree (nodes are in pre-order)."""
    out: list[list[int]] = [[] for _ in range(t.n_nodes)]
    for k in range(t.n_nodes - 1, -1, -1):
        if t.left[k] < 0:
            out[k] = [k]
        else:
            out[k] = out[t.left[k]] + out[t.right[k]]
    return out


class MilpTreeEngine:
    """Builds the encoding once; each query copies it and adds the rows it needs."""

    exact = False

    def __init__(self, problem, engine: str = "highs", threads: int = 1):
        from fairspec.backends.milp.encoding import _add_inputs

        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {sorted(ENGINES)}, not {engine!r}")
        self.name = engine
        self.solve_fn = ENGINES[engine]
        self.threads = threads
        p = problem
        ens = p.net
        lm = LinModel()
        x, xp, _ = _add_inputs(p, lm)
        self.x, self.xp = x, xp
        cuts = cuts_by_feature(ens)
        # the interval binaries of each input variable (shared when the variable is)
        pvars: dict[tuple[int, int], dict[float, int]] = {}
        for copy, xs in ((0, x), (1, xp)):
            for i, cs in cuts.items():
                var = xs[i]
                if (var, 0) in pvars:                 # a tied input: copy 1 shares copy 0's binaries
                    continue
                lo, hi = float(p.lo[i]), float(p.hi[i])
                if p.integer[i]:
                    gap = 1.0
                else:
                    pts = [lo] + list(cs) + [hi]
                    diffs = [b - a for a, b in zip(pts, pts[1:]) if b > a]
                    gap = min([1e-6] + [d / 4.0 for d in diffs])
                row = {}
                prev = None
                for c in cs:
                    # a split value outside [lo, hi] (a partition of the domain) fixes its binary
                    fixed = 1.0 if c >= hi else (0.0 if c < lo else None)
                    b = lm.var(0 if fixed is None else fixed, 1 if fixed is None else fixed, True,
                               f"p{copy}_{i}_{len(row)}")
                    if fixed is None:
                        m1, m2 = hi - c, c + gap - lo                  # exact big-M constants per row
                        lm.row([var, b], [1.0, m1], -INF, c + m1)      # v <= c + m1 (1 - p)
                        lm.row([var, b], [1.0, m2], c + gap, INF)      # v >= c + gap - m2 p
                    if prev is not None:
                        lm.row([prev, b], [1.0, -1.0], -INF, 0.0)      # p_j <= p_{j+1}
                    prev = b
                    row[c] = b
                pvars[(var, 0)] = row
        self.leaf_vars: list[tuple[list[int], list[int]]] = []
        s_idx: list[list[int]] = [[], []]
        s_val: list[list[float]] = [[], []]
        for k, t in enumerate(ens.trees):
            under = _leaves_under(t)
            leaves = [int(j) for j in np.nonzero(t.left < 0)[0]]
            per_copy = []
            for copy, xs in ((0, x), (1, xp)):
                shared = copy == 1 and all(xs[i] == x[i] for i in t.features())
                if shared:
                    per_copy.append(per_copy[0])
                    continue
                ys = {j: lm.var(0.0, 1.0, False, f"y{copy}_{k}_{j}") for j in leaves}
                lm.row(list(ys.values()), [1.0] * len(ys), 1.0, 1.0)
                for node in np.nonzero(t.left >= 0)[0]:
                    i = int(t.feature[node])
                    b = pvars[(xs[i], 0)][float(t.threshold[node])]
                    lv = [ys[j] for j in under[t.left[node]]]
                    rv = [ys[j] for j in under[t.right[node]]]
                    lm.row(lv + [b], [1.0] * len(lv) + [-1.0], -INF, 0.0)       # sum left <= p
                    lm.row(rv + [b], [1.0] * len(rv) + [1.0], -INF, 1.0)        # sum right <= 1 - p
                per_copy.append(ys)
            for copy in (0, 1):
                for j, v in per_copy[copy].items():
                    s_idx[copy].append(v)
                    s_val[copy].append(float(t.value[j]))
            self.leaf_vars.append((list(per_copy[0].values()), list(per_copy[1].values())))
        lo_s = ens.base + sum(float(t.value[t.left < 0].min()) for t in ens.trees) / ens.divisor
        hi_s = ens.base + sum(float(t.value[t.left < 0].max()) for t in ens.trees) / ens.divisor
        self.s = []
        for copy in (0, 1):
            s = lm.var(lo_s - 1.0, hi_s + 1.0, False, f"S{copy}")
            lm.row([s] + s_idx[copy], [1.0] + [-v / ens.divisor for v in s_val[copy]], ens.base, ens.base)
            self.s.append(s)
        self.s_bounds = (lo_s, hi_s)
        self.threshold = ens.threshold
        self.model = lm
        self.stats = {"engine": engine, "vars": lm.n_vars, "rows": lm.n_rows, "binaries": lm.n_int,
                      "solves": 0, "solver_seconds": 0.0}

    # ---- queries ----------------------------------------------------------------------------
    def query(self, rows, objective: str | None, deadline: float | None, first: bool = False):
        """Solve with extra ``rows`` and an objective (``"S"``, ``"diff"`` = S - S',
        ``"margin"`` = min(S - c, c - S') with ``c`` the decision threshold, or None).

        Rows: ``("S>=", v)``, ``("Sp<=", v)``, ``("diff>=", v)``, ``("cut", slope, icpt)``
        (``S >= slope * S' + icpt``). Returns (status, (x, x') or None, objective, bound) with
        status optimal | feasible | infeasible | timeout | error."""
        lm = self.model.copy()
        s, sp = self.s
        for r in rows:
            if r[0] == "S>=":
                lm.row([s], [1.0], r[1], INF)
            elif r[0] == "Sp<=":
                lm.row([sp], [1.0], -INF, r[1])
            elif r[0] == "diff>=":
                lm.row([s, sp], [1.0, -1.0], r[1], INF)
            elif r[0] == "cut":
                lm.row([s, sp], [1.0, -r[1]], r[2], INF)
            else:
                raise ValueError(r)
        if objective == "S":
            lm.set_objective({s: 1.0}, maximize=True)
        elif objective == "diff":
            lm.set_objective({s: 1.0, sp: -1.0}, maximize=True)
        elif objective == "margin":
            c = self.threshold
            t = lm.var(-INF, INF, False, "t")
            lm.row([t, s], [1.0, -1.0], -INF, -c)
            lm.row([t, sp], [1.0, 1.0], -INF, c)
            lm.set_objective({t: 1.0}, maximize=True)
        else:
            lm.set_objective({}, maximize=True)
        left = None if deadline is None else deadline - time.perf_counter()
        if left is not None and left <= 0:
            return "timeout", None, None, None
        out = self.solve_fn(lm, time_limit=left, first_solution=first or objective is None,
                            threads=self.threads)
        self.stats["solves"] += 1
        self.stats["solver_seconds"] = round(self.stats["solver_seconds"] + out.seconds, 4)
        pair = None
        if out.x is not None:
            pair = (out.x[self.x], out.x[self.xp])
        bound = out.bound
        if bound is not None and not math.isfinite(bound):
            bound = None
        if out.status == "optimal" and objective is None:
            return "feasible", pair, out.objective, None
        return out.status, pair, out.objective, bound

