"""The branch-and-bound engine (see the package docstring)."""

from __future__ import annotations

from fairspec.runtime.stdio import new_highs

import heapq
import math
import time
from dataclasses import dataclass, field

import numpy as np

from fairspec.certify.lp import LinearProgram
from fairspec.certify.pairlp import PairQuery, TreeBuilder
from fairspec.certify.proof import Proof

__all__ = ["BabResult", "prove_below", "upper_bound", "maximize"]

#: how a node is split: "dual" (the unstable ReLU whose triangle row has the largest dual times
#: intercept: what splitting it can remove; measured: 10% fewer LPs than "relu" on BM-1), "relu"
#: (the largest relaxation gap at the LP point) or "input"
#: (the widest input, halved); see bench/certify.py
STRATEGY = "dual"
#: tighten the unstable hidden pre-activations by certified LP bounds when a node's LP fails, at
#: the depths in TIGHTEN_DEPTHS (bench: BM-1's hardest partition, 642 -> 444 LPs at the root)
TIGHTEN = True
TIGHTEN_DEPTHS = (0,)
#: prob, prove_below: a node is split on the logit of x' first (a *band* of it: the claim's threshold
#: for x's logit is the logistic's inverse at the band's low end plus eps) while that logit's range is
#: wider than this share of the room the threshold leaves there (``target - z'_lo``). Without it the
#: band split came last, after every unstable ReLU and fractional integer input: on AC-8 sex's open eps
#: partitions (true max |dp| 0.006-0.038 against eps 0.05, z' over [-20, 11]) the tree grew to 90,000+
#: nodes in 120 s without a proof; with bands first at 0.25, 128-3,308 nodes in 0.3-4.4 s on a loaded
#: machine (at 0.5 up to 10,468 nodes; at 1.0, 3 of 8 not proved in 60 s; bench/results/fairify_band.md)
BAND_SPLIT = 0.25
#: prove_below: single pairs closed exactly *at* the threshold (a tie the exact leaves prove, on a runtime
#: exact over the box, certify.exact_runtime) before the search gives up: a plateau of tied pairs is
#: point-by-point enumeration here, which the refinement's enumeration does faster (seed 44's
#: network-solver 44000028 p0 timed out in the branch and bound instead of being enumerated). Measured
#: (bench/results/exact_ties_s25.md): proofs on the tie tests used 3-47 tie nodes, a give-up cost <= 0.17 s,
#: unbounded one plateau ran 600 s (155,791 tie nodes); at seed 46 no search reached a tie node
TIE_POINTS = 64


#: prob, prove_below: more certified LP tightening (:class:`~fairspec.certify.pairlp.Tighten` nodes) than
#: TIGHTEN_DEPTHS: the root's tightened child again, down a chain of at most TIGHTEN_CHAIN Tighten nodes
#: (each pass starts from the bounds the previous one proved: AC-11 sex partition 9150, z in
#: [-314, 135] -> [-92, 50] -> [-40, 29] -> [-26, 28]), and every child of a band split down to depth
#: TIGHTEN_BAND_DEPTH (the band's bound on x''s logit carries back into the hidden layers). AC-11 sex eps
#: (13-10-10-10-10-1), 60 s per partition on a loaded machine: 7314 not proved before, in 19 s with the
#: chain, in 8 s (191 nodes) with the band children too; AC-8 sex's eight band-split partitions
#: unchanged (0.2-5.3 s; bench/results/fairify_band.md)
TIGHTEN_CHAIN = 3
TIGHTEN_BAND_DEPTH = 40


def _tighten_here(builder, node) -> bool:
    return builder._nodes[node][2] in TIGHTEN_DEPTHS


@dataclass
class BabResult:
    status: str                       # proved | candidate | timeout | gave-up
    proof: Proof | None = None
    pair: tuple | None = None         # (x, x') in the problem's input space (a candidate to replay)
    stats: dict = field(default_factory=dict)
    reason: str = ""
    value: float | None = None        # maximize: the best measure found on the network (float64)
    bound: float | None = None        # maximize: the certified upper bound
    trees: list | None = None         # keep_tree: the certified tree per case (for check_tree)
    query: object = None              # keep_tree: the PairQuery it is about


class _Highs:
    """One HiGHS LP for every node of a query: the rows are the same, only the variable bounds,
    the right-hand sides and the triangle slopes change from node to node."""

    def __init__(self, q: PairQuery, lp: LinearProgram, threads: int = 1):
        import highspy

        self.hs = highspy
        self.inf = highspy.kHighsInf
        h = new_highs()
        h.setOptionValue("threads", int(threads))
        h.setOptionValue("random_seed", 0)
        self.h = h
        self.m_eq = lp.m_eq
        self.m_ub = lp.m_ub
        self.n = lp.n
        # rows: equalities first, then the inequalities; column-wise matrix
        rows = np.concatenate([lp.A_eq.row, lp.A_ub.row + self.m_eq])
        cols = np.concatenate([lp.A_eq.col, lp.A_ub.col])
        vals = np.concatenate([lp.A_eq.val, lp.A_ub.val])
        # keep every slope entry in the matrix (value 0 allowed) so that changeCoeff only edits
        # the coefficients that change from node to node: the triangle slopes and the coupling rows
        self.slope_at = np.asarray(q.layout.coef_at, dtype=np.int64)
        self.slope_row = (lp.A_ub.row[self.slope_at] + self.m_eq).astype(np.int32)
        self.slope_col = lp.A_ub.col[self.slope_at].astype(np.int32)
        order = np.lexsort((rows, cols))
        rows, cols, vals = rows[order], cols[order], vals[order]
        keep = (vals != 0) | np.isin(order, self.m_eq_offset_slopes(lp))
        rows, cols, vals = rows[keep], cols[keep], vals[keep]
        starts = np.searchsorted(cols, np.arange(self.n + 1)).astype(np.int32)
        hl = highspy.HighsLp()
        hl.num_col_ = self.n
        hl.num_row_ = self.m_eq + self.m_ub
        hl.col_cost_ = np.asarray(lp.c, dtype=np.float64)
        hl.col_lower_ = lp.lo.copy()
        hl.col_upper_ = lp.hi.copy()
        hl.row_lower_ = np.concatenate([lp.b_eq, np.full(self.m_ub, -self.inf)])
        hl.row_upper_ = np.concatenate([lp.b_eq, lp.b_ub])
        hl.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        hl.a_matrix_.num_col_ = self.n
        hl.a_matrix_.num_row_ = self.m_eq + self.m_ub
        hl.a_matrix_.start_ = starts
        hl.a_matrix_.index_ = rows.astype(np.int32)
        hl.a_matrix_.value_ = vals
        hl.sense_ = highspy.ObjSense.kMaximize
        h.passModel(hl)
        self.cur_slopes = lp.A_ub.val[self.slope_at].copy()
        self.ub_rows = np.arange(self.m_eq, self.m_eq + self.m_ub, dtype=np.int32)
        self.all_cols = np.arange(self.n, dtype=np.int32)
        self.lower_ub = np.full(self.m_ub, -self.inf)
        self.cur_cost = lp.c
        self.keep_basis = False
        self.basis = None

    def m_eq_offset_slopes(self, lp):
        # positions (in the concatenated eq+ub entry list) of the slope entries
        return lp.A_eq.val.size + self.slope_at

    def solve(self, lp: LinearProgram, cost=None, basis=None):
        h = self.h
        self.basis = None
        cost = lp.c if cost is None else cost
        if self.cur_cost is not cost and not np.array_equal(self.cur_cost, cost):
            h.changeColsCost(self.n, self.all_cols, np.asarray(cost, dtype=np.float64))
        self.cur_cost = cost
        h.changeColsBounds(self.n, self.all_cols, lp.lo, lp.hi)
        h.changeRowsBounds(self.m_ub, self.ub_rows, self.lower_ub, lp.b_ub)
        new = lp.A_ub.val[self.slope_at]
        for k in np.flatnonzero(new != self.cur_slopes):
            h.changeCoeff(int(self.slope_row[k]), int(self.slope_col[k]), float(new[k]))
        self.cur_slopes = new.copy()
        if basis is not None:
            h.setBasis(basis)
        h.run()
        ms = h.getModelStatus()
        M = self.hs.HighsModelStatus
        if ms == M.kOptimal:
            if self.keep_basis:
                self.basis = h.getBasis()
            s = h.getSolution()
            x = np.array(s.col_value)
            y = np.array(s.row_dual)
            return "optimal", x, h.getInfo().objective_function_value, y[self.m_eq:], y[:self.m_eq]
        if ms == M.kInfeasible:
            try:
                r = h.getDualRay()
                has, ray = (r[1], r[2]) if len(r) == 3 else (r[0], r[1])
            except Exception:  # noqa: BLE001
                has, ray = False, None
            if has:
                ray = np.asarray(ray, dtype=np.float64)
                return "infeasible", None, None, ray[self.m_eq:], ray[:self.m_eq]
            return "infeasible", None, None, None, None
        # anything else: start the next solve from scratch
        h.clearSolver()
        return "error", None, None, None, None


def _measure(post: str, z: float, zp: float) -> float:
    if post == "label":
        return min(z, -zp)
    if post == "logit":
        return z - zp
    from fairspec.models.network import sigmoid
    s = sigmoid(np.array([z, zp]))
    return float(s[0] - s[1])


def _clean(q: PairQuery, x, xp):
    x = np.clip(x, q.lo, q.hi)
    xp = np.clip(xp, q.lo, q.hi)
    x = np.where(q.integer, np.round(x), x)
    xp = np.where(q.integer, np.round(xp), xp)
    for g in q.onehot_groups:
        g = list(g)
        for v in (x, xp):
            k = int(np.argmax(v[g]))
            v[g] = 0.0
            v[g[k]] = 1.0
    tied = list(q.tied)
    xp[tied] = x[tied]
    for i, t in q.relaxed:
        xp[i] = min(max(xp[i], x[i] - t), x[i] + t)
    return x, xp


def _forward(q: PairQuery, X):
    H = np.asarray(X, dtype=np.float64)
    for W, b, relu in q.layers:
        H = H @ W.T + b
        if relu:
            H = np.maximum(H, 0.0)
    return H[:, 0]


def _polish(q: PairQuery, x, xp, value: float, rounds: int = 6, values: int = 65):
    """Greedy coordinate search from a pair (maximize's primal side): each tied input outside
    one-hot groups in turn set to every value of its range (integral inputs; at most ``values``
    evenly spaced ones), in both copies, kept where the measure grows; until nothing moves.
    Returns ``(x, x', measure)`` on the float64 network. Proves nothing."""
    grp = {i for g in q.onehot_groups for i in g}
    coords = [i for i in q.tied if i not in grp and q.hi[i] > q.lo[i]]
    x, xp = np.array(x, dtype=np.float64), np.array(xp, dtype=np.float64)
    for _ in range(rounds):
        moved = False
        for i in coords:
            grid = np.linspace(q.lo[i], q.hi[i], values)
            if q.integer[i]:
                grid = np.unique(np.round(grid))
            Xa = np.repeat(x[None, :], len(grid), axis=0)
            Xb = np.repeat(xp[None, :], len(grid), axis=0)
            Xa[:, i] = grid
            Xb[:, i] = grid
            z = _forward(q, np.vstack([Xa, Xb]))
            m = np.array([_measure(q.post, float(a), float(b)) for a, b in zip(z[:len(grid)], z[len(grid):])]) \
                if q.post == "prob" else (np.minimum(z[:len(grid)], -z[len(grid):]) if q.post == "label"
                                          else z[:len(grid)] - z[len(grid):])
            j = int(np.argmax(m))
            if m[j] > value + 1e-12:
                x[i] = xp[i] = grid[j]
                value = float(m[j])
                moved = True
        if not moved:
            break
    return x, xp, value


class _Search:
    def __init__(self, q: PairQuery, builder: TreeBuilder, deadline: float):
        self.q = q
        self.b = builder
        self.deadline = deadline
        self.hs = None
        self.stats = {"nodes": 0, "lp_solves": 0, "lp_seconds": 0.0, "refused": 0}
        self.strategy = STRATEGY
        self.keep_basis = False
        self.bands = False              # prove_below, prob: the band split first (BAND_SPLIT)

    def _lp_solver(self, lp):
        if self.hs is None:
            self.hs = _Highs(self.q, lp)
            self.hs.keep_basis = self.keep_basis
            if self.keep_basis:          # every solve starts from a basis: presolve only costs time
                self.hs.h.setOptionValue("presolve", "off")
        return self.hs

    def solve(self, node, basis=None):
        lp = self.b.lp(node)
        self._lp_solver(lp)
        t0 = time.perf_counter()
        out = self.hs.solve(lp, basis=basis)
        self.stats["lp_seconds"] += time.perf_counter() - t0
        self.stats["lp_solves"] += 1
        return out

    def try_close(self, node, out):
        status, x, obj, y_ub, y_eq = out
        if y_ub is None and y_eq is None:
            return False
        inf = status == "infeasible"
        if self.b.close(node, y_ub, y_eq, farkas=inf):
            return True
        if inf and self.b.close(node, -y_ub, -y_eq, farkas=True):
            return True
        self.stats["refused"] += 1
        return False

    def tighten(self, node) -> int | None:
        """Certified LP bounds of the unstable pre-activations of the hidden layers after the first
        (both copies): two LPs per neuron, multipliers checked by certify; the node is replaced by
        its tightened child (None when nothing was gained)."""
        q, L = self.q, self.q.layout
        st = self.b.state(node)
        lp = self.b.lp(node)
        bounds, certs = {}, {}
        for c in (0, 1):
            for k in range(1, len(q.layers)):
                if not q.layers[k][2]:
                    continue
                l, u = st.ibp[c][k]
                for j in np.flatnonzero((l < 0) & (u > 0)):
                    col = int(L.p[c][k][j])
                    new = [float(l[j]), float(u[j])]
                    for side, sign in (("hi", 1.0), ("lo", -1.0)):
                        obj = np.zeros(lp.n)
                        obj[col] = sign
                        status, x, val, y_ub, y_eq = self.solve_obj(lp, obj)
                        if status != "optimal":
                            continue
                        from fairspec.certify.lp import upper_bound as _ub
                        b = _ub(lp, y_ub, y_eq, c=obj)
                        if side == "hi" and b < new[1]:
                            new[1] = float(b)
                            certs[(c, k, int(j), "hi")] = (y_ub, y_eq)
                        if side == "lo" and -b > new[0]:
                            new[0] = float(-b)
                            certs[(c, k, int(j), "lo")] = (y_ub, y_eq)
                    if new[0] > l[j] or new[1] < u[j]:
                        bounds[(c, k, int(j))] = (new[0] if (c, k, int(j), "lo") in certs else -math.inf,
                                                  new[1] if (c, k, int(j), "hi") in certs else math.inf)
        if not bounds:
            return None
        return self.b.tighten(node, bounds, certs)

    def solve_obj(self, lp, obj):
        self._lp_solver(lp)
        t0 = time.perf_counter()
        out = self.hs.solve(lp, obj)
        self.stats["lp_seconds"] += time.perf_counter() - t0
        self.stats["lp_solves"] += 1
        self.stats["tighten_lps"] = self.stats.get("tighten_lps", 0) + 1
        return out

    def fractional_input(self, node, x_lp):
        """A split of the most fractional integral input at the LP point (None: none is)."""
        q, L = self.q, self.q.layout
        vlo, vhi = self.b.state(node).box
        frac, fvar = 1e-7, None
        for var, col in [(("x", i), L.x[i]) for i in range(q.n)] + [(("xp", i), L.xp[i]) for i, _ in q.relaxed]:
            if q.integer[var[1]] and vhi[col] > vlo[col]:
                f = abs(x_lp[col] - round(x_lp[col]))
                if f > frac:
                    frac, fvar = f, (var, math.floor(x_lp[col]), None)
        return fvar

    def _unstable(self, st, x_lp):
        """Per copy c and ReLU layer k with unstable neurons (bounds l < 0 < u): (c, k, l, u, the
        unstable indices, their pre-activations p and outputs h at the LP point)."""
        q, L = self.q, self.q.layout
        for c in (0, 1):
            for k, (_, _, relu) in enumerate(q.layers):
                if not relu:
                    continue
                l, u = st.ibp[c][k]
                uns = np.flatnonzero((l < 0) & (u > 0))
                if uns.size:
                    yield c, k, l, u, uns, x_lp[L.p[c][k][uns]], x_lp[L.h[c][k][uns]]

    def _branch_value(self, st, x_lp, y_eq):
        q = self.q
        off, r = {}, 0
        for c in (0, 1):                          # the equality rows p - W h = b, copy by copy
            for k, (W, _, _) in enumerate(q.layers):
                off[(c, k)] = r
                r += W.shape[0]
        best, best_score = None, 1e-12
        gap_min = 1e-6                            # as branch(): smaller gaps leave the LP as it is
        for c, k, _l, _u, uns, p, h in self._unstable(st, x_lp):
            gap = np.maximum(h - np.maximum(p, 0.0), 0.0)
            Wn = q.layers[k + 1][0]
            ye = y_eq[off[(c, k + 1)]:off[(c, k + 1)] + Wn.shape[0]]
            score = np.where(gap > gap_min, gap * np.abs(Wn[:, uns].T @ ye) + 1e-9 * gap, 0.0)
            j = int(np.argmax(score))
            if score[j] > best_score:
                best_score = float(score[j])
                best = (("relu", c, k, int(uns[j])), None, p[j] > 0)
        return best

    def candidate(self, node, x_lp):
        """The LP point rounded onto the domain and evaluated on the network (float64)."""
        L = self.q.layout
        x, xp = _clean(self.q, x_lp[L.x], x_lp[L.xp])
        z = _forward(self.q, np.vstack([x, xp]))
        return x, xp, _measure(self.q.post, float(z[0]), float(z[1]))

    def _band(self, st):
        """prob: the split of x''s logit at its midpoint while its range is wider than
        :data:`BAND_SPLIT` times the room the node's threshold leaves above its low end; else None."""
        z1l, z1h = float(st.ibp[1][-1][0][0]), float(st.ibp[1][-1][1][0])
        target = float(st.target)
        if not (math.isfinite(target) and math.isfinite(z1l) and math.isfinite(z1h)):
            return None
        room = target - z1l
        if room > 0 and z1h - z1l > BAND_SPLIT * room:
            return (("out", 1), 0.5 * (z1l + z1h), None)
        return None

    def branch(self, node, x_lp, y_ub=None, y_eq=None, strategy=None):
        """A split of an open node: the unstable ReLU with the largest relaxation gap, else a
        fractional integral input, else (prob) the output of x', else the widest input.
        ``strategy`` "value" (with the LP's duals ``y_eq``): the gap times the LP's marginal value of
        the neuron's output, ``|W_next^T y|`` over the next layer's rows."""
        q, L = self.q, self.q.layout
        st = self.b.state(node)
        if self.bands and q.post == "prob":
            br = self._band(st)
            if br is not None:
                return br
        if strategy == "value" and y_eq is not None:
            br = self._branch_value(st, x_lp, y_eq)
            if br is not None:
                return br
        if self.strategy == "input":
            vlo, vhi = st.box
            wide, wvar = 0.0, None
            for var, col in [(("x", i), L.x[i]) for i in range(q.n)] + [(("xp", i), L.xp[i]) for i, _ in q.relaxed]:
                w = vhi[col] - vlo[col]
                if w > wide:
                    mid = 0.5 * (vlo[col] + vhi[col])
                    wide, wvar = w, (var, math.floor(mid) if q.integer[var[1]] else mid, None)
            if wvar is not None:
                return wvar
        best, best_gap = None, 1e-9
        for c, k, l, u, uns, p, h in self._unstable(st, x_lp):
            gap = h - np.maximum(p, 0.0)
            if self.strategy == "dual" and y_ub is not None:
                # the triangle row's dual times its intercept -s l: what splitting it can remove
                rb = L.relu_rows[c][k][1][uns]
                lu, uu = l[uns], u[uns]
                score = np.maximum(y_ub[rb], 0.0) * (uu * -lu / (uu - lu)) + 1e-3 * np.maximum(gap, 0.0)
            else:
                # weight by the triangle's area (how much the relaxation can still give)
                score = np.maximum(gap, 0.0) + 1e-6 * np.minimum(-l[uns], u[uns])
            j = int(np.argmax(score))
            if score[j] > best_gap:
                best_gap = float(score[j])
                best = (("relu", c, k, int(uns[j])), None, p[j] > 0)
        if best is not None and best_gap > 1e-6:
            return best
        vlo, vhi = st.box
        xs = [(("x", i), L.x[i]) for i in range(q.n)] + [(("xp", i), L.xp[i]) for i, _ in q.relaxed]
        frac, fvar = 1e-7, None
        for var, col in xs:
            i = var[1]
            if q.integer[i] and vhi[col] > vlo[col]:
                f = abs(x_lp[col] - round(x_lp[col]))
                if f > frac:
                    frac, fvar = f, (var, math.floor(x_lp[col]), None)
        if fvar is not None:
            return fvar
        if q.post == "prob":
            z1l, z1h = float(st.ibp[1][-1][0][0]), float(st.ibp[1][-1][1][0])
            if z1h - z1l > 1e-3:
                return (("out", 1), 0.5 * (z1l + z1h), None)
        if best is not None:
            return best
        wide, wvar = 0.0, None
        for var, col in xs:
            w = vhi[col] - vlo[col]
            if w > wide:
                wide = w
                mid = 0.5 * (vlo[col] + vhi[col])
                wvar = (var, math.floor(mid) if q.integer[var[1]] else mid, None)
        return wvar


#: the coupling rows of the node LPs (:class:`fairspec.certify.pairlp.PairQuery` ``coupling``) in
#: maximize: measured on the issue-25 regression network (bench/multiclass.py)
COUPLING_MAX = True
#: ... and in prove_below
COUPLING_PROVE = False
#: maximize branches by the duals too ("dual" strategy)
BRANCH_DUALS = False
#: maximize's split: "value" (an unstable ReLU's relaxation gap times the LP's marginal value of its
#: output); None: STRATEGY. Issue-25 regression net, bound at 600 nodes: 3.716 (gap) -> 3.660
#: (value); BaBSR-style dual x intercept 3.831
MAX_STRATEGY = "value"
#: maximize: when the LP is exact at its optimum (the network's measure at the unrounded LP point
#: reaches the node's bound) split the most fractional integral input, not a ReLU
INTEGRAL_FIRST = True
INTEGRAL_TOL = 1e-6
#: maximize tightens the roots' hidden pre-activations by certified LP bounds (Tighten) first
TIGHTEN_MAX = False
#: maximize solves a node's children from the node's own optimal basis (best-first jumps across
#: the tree, so the last basis HiGHS holds is usually a stranger's)
WARM_PARENT = True
#: maximize polishes (greedy coordinate search, :func:`_polish`) each node's rounded LP point whose
#: measure is within this share of the best (0: never)
POLISH = 0.25


def _query(problem, threshold, strict, start_bounds, coupling: bool = False):
    if start_bounds is not None:
        problem = problem.restrict(*start_bounds)
    return PairQuery.from_problem(problem, threshold, strict, coupling=coupling)


def prove_below(problem, threshold, strict: bool, deadline: float, start_bounds=None,
                max_nodes: int = 1_000_000, keep_tree: bool = False, runtime: dict | None = None,
                base_net=None) -> BabResult:
    """Prove that the measure of every pair is ``< threshold`` (strict) or ``<= threshold`` (see the
    package docstring). ``start_bounds``: an optional sub-box ``(lo, hi)`` of the problem's domain;
    ``runtime``: the runtime claim the threshold was moved to, recorded in the proof
    (:func:`fairspec.certify.claims.runtime_record`); ``base_net``: the K-output network under a class
    readout ``("argmax", c)`` (certify checks the query's network is its class score and records it)."""
    t0 = time.perf_counter()
    try:
        q = _query(problem, threshold, strict, start_bounds, COUPLING_PROVE)
        builder = TreeBuilder(q, runtime=runtime, base_net=base_net)
    except (ValueError, TypeError, AttributeError) as e:
        return BabResult("gave-up", reason=f"no certified branch and bound for this query: {e}")
    S = _Search(q, builder, deadline)
    S.bands = BAND_SPLIT is not None
    more = S.bands and q.post == "prob"
    # prob: the nodes tightened besides TIGHTEN_DEPTHS, marked as they are made: a chain of Tighten nodes
    # from each root (TIGHTEN_CHAIN) and the children of band splits (TIGHTEN_BAND_DEPTH)
    chain = set(builder.roots()) if more else set()
    band_kids: set = set()
    thr = q.threshold
    claim_fails = (lambda m: m >= thr) if q.strict else (lambda m: m > thr)
    # an LP point this close to the threshold is a pair at a tie; counted only where the runtime error is 0
    # (elsewhere the claim sits 2E inside the threshold and a tie is a candidate at once)
    exact = runtime is not None and runtime.get("runtime_error") == 0.0 and q.post != "prob"
    tie_at = float(thr) - 1e-9 * max(1.0, abs(float(thr))) if exact else math.inf
    for root in builder.roots():
        stack = [root]
        while stack:
            stop = _over(S, t0, deadline, max_nodes)
            if stop is not None:
                return stop
            node, st = _pop_open(S, builder, stack)
            if node is None:
                if exact and _tie_point(q, st) and _one_more_tie(S):
                    return _done(_ties(), S, t0)
                continue
            out = S.solve(node)
            if S.try_close(node, out):
                continue
            status, x_lp = out[0], out[1]
            if status == "optimal":
                x, xp, m = S.candidate(node, x_lp)
                if claim_fails(m):
                    return _done(BabResult("candidate", pair=(x, xp), value=m), S, t0)
                if m >= tie_at and _one_more_tie(S):
                    return _done(_ties(), S, t0)
            if TIGHTEN and status == "optimal" and (_tighten_here(builder, node) or node in chain or node in band_kids):
                kid = S.tighten(node)
                if kid is not None:
                    if node in chain and builder._nodes[kid][2] <= TIGHTEN_CHAIN:
                        chain.add(kid)
                    stack.append(kid)
                    continue
            if x_lp is None:
                x_lp = 0.5 * (st.box[0] + st.box[1])
            br = S.branch(node, x_lp, out[3] if status == "optimal" else None)
            if br is None:
                if status == "optimal":     # every input fixed and the LP exact: a pair at the threshold
                    x, xp, m = S.candidate(node, x_lp)
                    return _done(BabResult("candidate", pair=(x, xp), value=m,
                                           reason="a pair within rounding of the threshold"), S, t0)
                return _done(BabResult("gave-up", reason="a node that neither closes nor splits"), S, t0)
            var, at, prefer_high = br
            lo, hi = builder.split(node, var, at)
            if more and var[0] == "out" and builder._nodes[lo][2] <= TIGHTEN_BAND_DEPTH:
                band_kids.update((lo, hi))
            if prefer_high:
                stack += [lo, hi]
            else:
                stack += [hi, lo]
    proof = builder.proof()
    if proof is None:        # pragma: no cover - every node was closed above
        return _done(BabResult("gave-up", reason="open nodes remain"), S, t0)
    S.stats["leaves"] = proof.detail["leaves"]
    res = BabResult("proved", proof=proof)
    if keep_tree:
        res.trees, res.query = builder.trees(), q
    return _done(res, S, t0, builder)


def _ties() -> BabResult:
    return BabResult("gave-up", reason=f"more than {TIE_POINTS} nodes at the threshold within rounding (a plateau "
                     "of ties, left to enumeration)")


def _one_more_tie(S: _Search) -> bool:
    """Count a node at the threshold (:data:`TIE_POINTS`); True when there were too many."""
    S.stats["ties"] = S.stats.get("ties", 0) + 1
    return S.stats["ties"] > TIE_POINTS


def _tie_point(q, st) -> bool:
    """Is a node its interval bound closed a single pair whose measure lies at the threshold (its bound,
    rounded up, not below the threshold's float)?"""
    if st is None or st.empty or st.box is None or q.post == "prob" or q.threshold is None:
        return False
    L = q.layout
    lo, hi = st.box
    return bool(np.all(lo[L.x] == hi[L.x]) and np.all(lo[L.xp] == hi[L.xp])
                and st.measure_ub >= float(q.threshold))


def _pop_open(S: _Search, builder: TreeBuilder, stack: list):
    """The next node off a depth-first stack, counted, and its state; ``(None, state)`` when it is
    empty or its interval bound proves it (then it is closed here)."""
    node = stack.pop()
    S.stats["nodes"] += 1
    st = builder.state(node)
    if st.empty or st.interval_ok:
        builder.close(node)
        return None, st
    return node, st


def _over(S: _Search, t0: float, deadline: float, max_nodes: int) -> BabResult | None:
    """The result that stops a search at its deadline or its node cap (None: go on)."""
    if time.monotonic() > deadline:
        return _done(BabResult("timeout", reason="time-out in the certified branch and bound"), S, t0)
    if S.stats["nodes"] >= max_nodes:
        return _done(BabResult("gave-up", reason=f"more than {max_nodes} nodes"), S, t0)
    return None


def _done(res: BabResult, S: _Search, t0: float, builder=None) -> BabResult:
    res.stats = dict(S.stats, seconds=time.perf_counter() - t0)
    if builder is not None:
        res.stats["depth"] = builder.depth
        res.stats["leaves"] = sum(builder.counts.values())
    return res


def maximize(problem, deadline: float, start_bounds=None, tol: float = 1e-9, max_nodes: int = 1_000_000) -> BabResult:
    """Best-first search for the maximal measure: ``value`` the best pair found (float64 network),
    ``bound`` a certified upper bound (the proof a bab-certificate in bound mode). On a time-out
    the bound still holds (every open node is closed with its own certificate)."""
    t0 = time.perf_counter()
    try:
        q = _query(problem, 0, False, start_bounds, COUPLING_MAX)
    except (ValueError, TypeError, AttributeError) as e:
        return BabResult("gave-up", reason=f"no certified branch and bound for this query: {e}")
    builder = TreeBuilder(q, bound_mode=True)
    S = _Search(q, builder, deadline)
    S.keep_basis = WARM_PARENT
    best_val, best_pair = -math.inf, None
    heap = []            # (-bound, tie, node, multipliers)
    tie = 0

    def evaluate(node, basis=None):
        nonlocal best_val, best_pair, tie
        st = builder.state(node)
        if st.empty:
            builder.close(node)
            return
        out = S.solve(node, basis)
        nb = S.hs.basis if S.hs is not None else None
        status, x_lp, obj, y_ub, y_eq = out
        mult = (y_ub, y_eq) if y_ub is not None else (None, None)
        if status == "infeasible" and y_ub is not None:
            # a Farkas ray may come with either sign
            bound = math.inf
            for sg in (1.0, -1.0):
                if builder.leaf_bound(node, sg * y_ub, sg * y_eq, farkas=True) == -math.inf:
                    mult, bound = (sg * y_ub, sg * y_eq), -math.inf
                    break
            if bound == math.inf:
                mult, bound = (None, None), builder.leaf_bound(node)
        else:
            bound = builder.leaf_bound(node, *mult)
        if status == "optimal":
            x, xp, m = S.candidate(node, x_lp)
            if POLISH and m > best_val - POLISH * max(1.0, abs(best_val)):
                x, xp, m = _polish(q, x, xp, m)
                S.stats["polished"] = S.stats.get("polished", 0) + 1
            if m > best_val:
                best_val, best_pair = m, (x, xp)
        tie += 1
        heapq.heappush(heap, (-bound, tie, node, mult, x_lp if x_lp is not None else 0.5 * (st.box[0] + st.box[1]), nb))

    timed_out = False
    for root in builder.roots():
        if timed_out or time.monotonic() > deadline:
            # the deadline came while the roots (one per ordered pair of protected values) were being
            # evaluated: the rest are closed with their interval bounds (certified, only looser), not solved
            timed_out = True
            builder.close(root)
            continue
        if TIGHTEN_MAX and not builder.state(root).empty:
            kid = S.tighten(root)
            if kid is not None:
                root = kid
        evaluate(root)
    while heap:
        top = -heap[0][0]
        if top <= best_val + tol or top == -math.inf:
            break
        if time.monotonic() > deadline or S.stats["nodes"] >= max_nodes:
            timed_out = True
            break
        negb, _, node, mult, x_lp, nb = heapq.heappop(heap)
        S.stats["nodes"] += 1
        br = None
        if INTEGRAL_FIRST and mult[0] is not None:
            # the LP is exact at its optimum (the network's own measure at the LP point, inputs
            # unrounded, reaches the bound): ReLU splits cannot lower it, only integrality can
            L = q.layout
            z = _forward(q, np.vstack([x_lp[L.x], x_lp[L.xp]]))
            if -negb - _measure(q.post, float(z[0]), float(z[1])) <= INTEGRAL_TOL * max(1.0, abs(negb)):
                br = S.fractional_input(node, x_lp)
                if br is not None:
                    S.stats["integral_splits"] = S.stats.get("integral_splits", 0) + 1
        if br is None:
            br = S.branch(node, x_lp, mult[0] if BRANCH_DUALS else None, mult[1], MAX_STRATEGY)
        if br is None:
            builder.close(node, *mult)
            continue
        var, at, _ = br
        for child in builder.split(node, var, at):
            evaluate(child, nb)
    while heap:                                   # close the frontier with its own certificates
        _, _, node, mult, _, _ = heapq.heappop(heap)
        builder.close(node, *mult)
    proof = builder.proof()
    bound = builder.bound
    res = BabResult("timeout" if timed_out else "proved", proof=proof, value=best_val,
                    bound=bound, pair=best_pair)
    return _done(res, S, t0, builder)


def upper_bound(problem, deadline: float, start_bounds=None) -> tuple[float, Proof | None]:
    """A certified upper bound on the problem's maximal violation measure, and its proof."""
    r = maximize(problem, deadline, start_bounds)
    if r.proof is None:
        return math.inf, None
    return r.bound, r.proof
