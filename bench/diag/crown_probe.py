"""Research probe (issue 24, reach): optimised CROWN bounds for the pair query of the certified branch and
bound, and what they would buy on the partitions a Fairify row left undecided. Needs torch.

The bound (:func:`crown_bounds`) back-substitutes both copies of the network from the objective to the
shared inputs, with a lower ReLU slope ``alpha`` per unstable neuron, a multiplier ``delta`` per neuron
for the node LP's difference rows (``h - h'`` in ``[DL, DU]``), one ``dz`` for the logits' difference row
and one ``m`` for the band on ``z'`` (its box); all optimised by Adam, a batch of nodes at a time. Every
such bound is the value of the node LP's Lagrangian at multipliers :func:`lp_multipliers` writes out,
so a node it closes is closed by certify itself (:meth:`TreeBuilder.close` checks the multipliers with
``certify.lp.upper_bound``): nothing here is trusted. Three probes:

* ``--probe leaves``: run the engine on each partition, collect the leaves its LPs closed, and report how
  many of them the optimised bound closes after 0-1,000 iterations, and its distance to the LP's value;
* ``--probe engine``: :func:`prove_below_crown`, the engine with this bound in place of the node LP
  wherever it is not within ``--lp-margin`` of the node's target (the LP, its candidates and the
  tightening otherwise), against the engine as it is, per partition;
* ``--probe cost``: the bound's cost per iteration against the batch size.

    python bench/diag/crown_probe.py --shared /work/shared \\
        --row bench/results/fairify_all_s10_eps_AC-4_sex.json --indices 4395,7521 --probe engine

Measured on AC-4 sex (bench/results/fairify_band.md, "Session 12"). Run it alone on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: Adam's step, the iterations for a node whose parent was bounded (warm start) and for a fresh one
LR = 0.03
ITERS = 50
ITERS_FRESH = 100
#: nodes bounded together (the stack's top, depth first)
BATCH = 64
#: a node whose bound is within this of its target goes to the LP (its candidate, its duals)
LP_MARGIN = 0.5


class Params:
    """One node's parameters: ``alpha[c][i]`` (copy c, i-th ReLU layer), ``delta[i]``, ``dz``, ``m``."""

    __slots__ = ("alpha", "delta", "dz", "m")

    def __init__(self, alpha, delta, dz, m):
        self.alpha, self.delta, self.dz, self.m = alpha, delta, dz, m


def supported(q) -> str:
    """Why the bound does not apply to a query ("" when it does)."""
    if q.post not in ("prob", "logit"):
        return f"post {q.post!r}: only prob and logit"
    if any(not r for _, _, r in q.layers[:-1]) or q.layers[-1][2]:
        return "every hidden layer a ReLU and a linear last layer"
    return ""


def init_params(q, st) -> Params:
    K = len(q.layers)
    alpha = [[(st.ibp[c][k][1] > -st.ibp[c][k][0]).astype(float) for k in range(K - 1)] for c in (0, 1)]
    return Params(alpha, [np.zeros(q.layers[k][0].shape[0]) for k in range(K - 1)], 0.0, 0.0)


def _objective(q):
    """The LP objective's coefficients on (z, z')."""
    return (1.0, -1.0) if q.post == "logit" else (1.0, 0.0)


def crown_bounds(q, states, params, iters: int, lr: float = LR, log=None, stop_early: bool = True):
    """Optimise the bound of every node (states: NodeStates) from ``params``; returns the best bound of
    each (float, not rigorous) and each node's best parameters. ``log``: ``(iterations, list)``, the best
    bounds appended to the list as ``(iteration, bounds)`` at those iterations. ``stop_early``: stop once
    every node's bound is below its target."""
    import torch

    torch.set_num_threads(1)
    K = len(q.layers)
    L = q.layout
    N = len(states)
    T = lambda arrs: torch.tensor(np.stack(arrs), dtype=torch.float64)  # noqa: E731
    ls = [[T([st.ibp[c][k][0] for st in states]) for k in range(K)] for c in (0, 1)]
    us = [[T([st.ibp[c][k][1] for st in states]) for k in range(K)] for c in (0, 1)]
    DL = [T([st.diff[k][0] for st in states]) for k in range(K)]
    DU = [T([st.diff[k][1] for st in states]) for k in range(K)]
    xlo, xhi = T([st.box[0][L.x] for st in states]), T([st.box[1][L.x] for st in states])
    plo, phi = T([st.box[0][L.xp] for st in states]), T([st.box[1][L.xp] for st in states])
    alpha = [[T([p.alpha[c][i] for p in params]).requires_grad_(True) for i in range(K - 1)] for c in (0, 1)]
    delta = [T([p.delta[i] for p in params]).requires_grad_(True) for i in range(K - 1)]
    dz = torch.tensor([p.dz for p in params], dtype=torch.float64, requires_grad=True)
    m = torch.tensor([p.m for p in params], dtype=torch.float64, requires_grad=True)
    tied = torch.zeros(q.n, dtype=torch.bool)
    tied[list(q.tied)] = True
    Ws = [torch.tensor(W, dtype=torch.float64) for W, _, _ in q.layers]
    bs = [torch.tensor(b, dtype=torch.float64) for _, b, _ in q.layers]
    tri = {}
    for c in (0, 1):
        for k in range(K - 1):
            l, u = ls[c][k], us[c][k]
            uns = (l < 0) & (u > 0)
            s = torch.where(uns, u / torch.where(uns, u - l, torch.ones_like(u)), torch.zeros_like(u))
            tri[(c, k)] = (s, -s * l, uns, l >= 0)
    c0, c1 = _objective(q)

    def bound():
        z1l, z1h = ls[1][K - 1][:, 0], us[1][K - 1][:, 0]
        const = torch.maximum(-m * z1l, -m * z1h) + torch.maximum(dz * DU[K - 1][:, 0], dz * DL[K - 1][:, 0])
        nu = [(c0 - dz)[:, None], (c1 + dz + m)[:, None]]
        for k in range(K - 1, -1, -1):
            const = const + nu[0] @ bs[k] + nu[1] @ bs[k]
            lam = [nu[0] @ Ws[k], nu[1] @ Ws[k]]
            if k == 0:
                g = torch.where(tied, lam[0] + lam[1], lam[0])
                g1 = torch.where(tied, torch.zeros_like(lam[1]), lam[1])
                return const + torch.sum(torch.maximum(g * xlo, g * xhi), 1) + \
                    torch.sum(torch.maximum(g1 * plo, g1 * phi), 1)
            j = k - 1
            d = delta[j]
            lam = [lam[0] - d, lam[1] + d]
            const = const + torch.sum(torch.maximum(d * DU[j], d * DL[j]), 1)
            nu = []
            for c in (0, 1):
                s, r, uns, act = tri[(c, j)]
                lc = lam[c]
                pos = lc >= 0
                zero = torch.zeros_like(lc)
                n_ = torch.where(act, lc, zero)
                n_ = torch.where(uns & pos, lc * s, n_)
                n_ = torch.where(uns & ~pos, lc * alpha[c][j], n_)
                const = const + torch.sum(torch.where(uns & pos, lc * r, zero), 1)
                nu.append(n_)

    opt = torch.optim.Adam([a for row in alpha for a in row] + delta + [dz, m], lr=lr)
    tgt = torch.tensor([float(st.target) for st in states], dtype=torch.float64)
    best = torch.full((N,), math.inf, dtype=torch.float64)
    keep = [None] * N
    for it in range(iters + 1):
        v = bound()
        vd = v.detach()
        better = vd < best
        if bool(better.any()):
            best = torch.where(better, vd, best)
            snap = ([[a.detach().clone() for a in row] for row in alpha], [d.detach().clone() for d in delta],
                    dz.detach().clone(), m.detach().clone())
            for i in torch.nonzero(better).flatten().tolist():
                keep[i] = snap
        if log is not None and it in log[0]:
            log[1].append((it, best.numpy().copy()))
        if it == iters or (stop_early and bool((best < tgt).all())):
            break
        opt.zero_grad()
        v.sum().backward()
        opt.step()
        with torch.no_grad():
            for row in alpha:
                for a in row:
                    a.clamp_(0.0, 1.0)
    out = []
    for i in range(N):
        a_, d_, dz_, m_ = keep[i]
        out.append(Params([[a_[c][j][i].numpy().copy() for j in range(K - 1)] for c in (0, 1)],
                          [d_[j][i].numpy().copy() for j in range(K - 1)], float(dz_[i]), float(m_[i])))
    return best.numpy(), out


def lp_multipliers(q, st, p: Params):
    """The node LP's multipliers ``(y_ub, y_eq)`` whose Lagrangian bound is the CROWN bound of ``p``:
    the equality rows ``p - W h = b`` get the back-substituted coefficient of ``p``; a ReLU whose
    coefficient is >= 0 takes it on its triangle row, one whose coefficient is < 0 takes ``alpha`` of it
    on its ``h >= p`` row (the rest is ``h >= 0``, the variable's box); the difference rows take the
    positive and negative parts of ``delta`` and ``dz``. ``m`` is left on ``z'``, for its box."""
    from fairspec.certify.rounding import down, up

    K = len(q.layers)
    L = q.layout
    y_eq = np.zeros(L.eq[0])
    y_ub = np.zeros(L.ub[0])
    off, r = {}, 0
    for c in (0, 1):
        for k, (W, _, _) in enumerate(q.layers):
            off[(c, k)] = r
            r += W.shape[0]
    c0, c1 = _objective(q)
    y_ub[L.zdiff_rows[0]], y_ub[L.zdiff_rows[1]] = max(p.dz, 0.0), max(-p.dz, 0.0)
    nu = [np.array([c0 - p.dz]), np.array([c1 + p.dz + p.m])]
    diff = {k: (r1, r2) for k, r1, r2 in L.diff_rows}
    for k in range(K - 1, -1, -1):
        W = q.layers[k][0]
        for c in (0, 1):
            y_eq[off[(c, k)]:off[(c, k)] + W.shape[0]] = nu[c]
        if k == 0:
            break
        j = k - 1
        d = p.delta[j]
        y_ub[diff[j][0]], y_ub[diff[j][1]] = np.maximum(d, 0.0), np.maximum(-d, 0.0)
        lam = [nu[0] @ W - d, nu[1] @ W + d]
        nu = []
        for c in (0, 1):
            ra, rb, _ = L.relu_rows[c][j]
            l, u = st.ibp[c][j]
            act, uns = l >= 0, (l < 0) & (u > 0)
            s = np.where(act, 1.0, 0.0)
            if np.any(uns):                      # the slope node_lp writes: u / (u - l), rounded up
                s[uns] = up(u[uns] / down(u[uns] - l[uns]))
            lc = lam[c]
            y_ub[rb] = np.where((act | uns) & (lc >= 0), lc, 0.0)
            y_ub[ra] = np.where(act & (lc < 0), -lc, np.where(uns & (lc < 0), -lc * p.alpha[c][j], 0.0))
            n_ = np.where(act, lc, 0.0)
            n_ = np.where(uns & (lc >= 0), lc * s, n_)
            nu.append(np.where(uns & (lc < 0), lc * p.alpha[c][j], n_))
    return y_ub, y_eq


def prove_below_crown(problem, threshold, strict: bool, deadline: float, start_bounds=None,
                      max_nodes: int = 1_000_000, keep_tree: bool = False):
    """``fairspec.backends.bab.engine.prove_below`` with the optimised bound first: the engine's own step
    (LP, candidate, tightening, split by the LP's duals) on the nodes it tightens and on those the bound
    leaves within :data:`LP_MARGIN` of their target; the others split without an LP (the band first, then
    the triangle whose multiplier times intercept is largest). ``stats`` adds ``crown_*`` and ``lp_path``."""
    import fairspec.backends.bab.engine as E
    from fairspec.certify.pairlp import TreeBuilder

    t0 = time.perf_counter()
    try:
        q = E._query(problem, threshold, strict, start_bounds, E.COUPLING_PROVE)
    except (ValueError, TypeError, AttributeError) as e:
        return E.BabResult("gave-up", reason=f"no certified branch and bound for this query: {e}")
    builder = TreeBuilder(q)
    S = E._Search(q, builder, deadline)
    S.bands = E.BAND_SPLIT is not None
    more = S.bands and q.post == "prob"
    chain = set(builder.roots()) if more else set()
    band_kids: set = set()
    thr = q.threshold
    fails = (lambda v: v >= thr) if q.strict else (lambda v: v > thr)
    S.stats.update(crown_nodes=0, crown_closed=0, crown_refused=0, crown_seconds=0.0, lp_path=0)
    use_crown = not supported(q)
    params: dict = {}

    def split(node, br):
        if br is None:
            return E.BabResult("gave-up", reason="a node that neither closes nor splits")
        var, at, prefer_high = br
        lo, hi = builder.split(node, var, at)
        if more and var[0] == "out" and builder._nodes[lo][2] <= E.TIGHTEN_BAND_DEPTH:
            band_kids.update((lo, hi))
        if node in params:
            params[lo] = params[hi] = params[node]
        return [lo, hi] if prefer_high else [hi, lo]

    def lp_step(node):
        st = builder.state(node)
        S.stats["lp_path"] += 1
        out = S.solve(node)
        if S.try_close(node, out):
            return []
        status, x_lp = out[0], out[1]
        if status == "optimal":
            x, xp, v = S.candidate(node, x_lp)
            if fails(v):
                return E.BabResult("candidate", pair=(x, xp), value=v)
            if E.TIGHTEN and (E._tighten_here(builder, node) or node in chain or node in band_kids):
                kid = S.tighten(node)
                if kid is not None:
                    if node in chain and builder._nodes[kid][2] <= E.TIGHTEN_CHAIN:
                        chain.add(kid)
                    if node in params:
                        params[kid] = params[node]
                    return [kid]
        if x_lp is None:
            x_lp = 0.5 * (st.box[0] + st.box[1])
        return split(node, S.branch(node, x_lp, out[3] if status == "optimal" else None))

    def crown_split(node, st, p):
        if S.bands and q.post == "prob":
            br = S._band(st)
            if br is not None:
                return split(node, br)
        y_ub, _ = lp_multipliers(q, st, p)
        best, score = None, 1e-12
        for c in (0, 1):
            for k in range(len(q.layers) - 1):
                l, u = st.ibp[c][k]
                uns = np.flatnonzero((l < 0) & (u > 0))
                if uns.size:
                    sc = y_ub[q.layout.relu_rows[c][k][1][uns]] * (u[uns] * -l[uns] / (u[uns] - l[uns]))
                    j = int(np.argmax(sc))
                    if sc[j] > score:
                        score, best = float(sc[j]), (("relu", c, k, int(uns[j])), None, True)
        return lp_step(node) if best is None else split(node, best)

    stack = list(reversed(builder.roots()))
    while stack:
        stop = E._over(S, t0, deadline, max_nodes)
        if stop is not None:
            return stop
        batch = []
        while stack and len(batch) < BATCH:
            node, st = E._pop_open(S, builder, stack)
            if node is None:
                continue
            tighten = E.TIGHTEN and (E._tighten_here(builder, node) or node in chain or node in band_kids)
            if tighten or not use_crown:
                res = lp_step(node)
                if isinstance(res, E.BabResult):
                    return E._done(res, S, t0)
                stack += res
                continue
            batch.append(node)
        if not batch:
            continue
        states = [builder.state(n) for n in batch]
        ps = [params.get(n) or init_params(q, st) for n, st in zip(batch, states)]
        tc = time.perf_counter()
        bnd, newp = crown_bounds(q, states, ps, ITERS if all(n in params for n in batch) else ITERS_FRESH)
        S.stats["crown_seconds"] += time.perf_counter() - tc
        S.stats["crown_nodes"] += len(batch)
        push = []
        for n, st, b, p in zip(batch, states, bnd, newp):
            params[n] = p
            target = float(st.target)
            if b < target:
                if builder.close(n, *lp_multipliers(q, st, p), farkas=False):
                    S.stats["crown_closed"] += 1
                    continue
                S.stats["crown_refused"] += 1
            res = lp_step(n) if b - target < LP_MARGIN else crown_split(n, st, p)
            if isinstance(res, E.BabResult):
                return E._done(res, S, t0)
            push.append(res)
        for kids in reversed(push):
            stack += kids
    proof = builder.proof()
    if proof is None:
        return E._done(E.BabResult("gave-up", reason="open nodes remain"), S, t0)
    res = E.BabResult("proved", proof=proof)
    return E._done(res, S, t0, builder)


def _collect_leaves(problem, seconds):
    """Run the engine; the states of the nodes its LP certificates closed, with the LP's value."""
    import fairspec.backends.bab.engine as E
    import fairspec.certify.pairlp.builder as B
    from fairspec.certify.pairlp import node_lp, node_state
    from fairspec.backends.pair.certify import decide_by_bab

    leaves, orig = [], B.TreeBuilder.close

    def close(self, node, y_ub=None, y_eq=None, farkas=None):
        case, dec = self._nodes[node][0], self._nodes[node][1]
        ok = orig(self, node, y_ub, y_eq, farkas)
        if ok and y_ub is not None and not farkas:
            st = node_state(self.q, case, dec)
            if not st.empty and not st.interval_ok:
                lp, _ = node_lp(self.q, case, dec, st)
                leaves.append((self.q, st, E._Highs(self.q, lp).solve(lp)[2]))
        return ok

    B.TreeBuilder.close = close
    try:
        r = decide_by_bab(problem, "prove", seconds)
    finally:
        B.TreeBuilder.close = orig
    return r, leaves


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=Path("../shared"))
    ap.add_argument("--row", type=Path, required=True, help="a bench/fairify.py JSON with one row")
    ap.add_argument("--indices", type=lambda s: [int(v) for v in s.split(",")], required=True)
    ap.add_argument("--probe", choices=("leaves", "engine", "cost"), default="engine")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--iters", type=int, default=ITERS)
    ap.add_argument("--lr", type=float, default=LR)
    ap.add_argument("--lp-margin", type=float, default=LP_MARGIN)
    a = ap.parse_args()
    try:
        import torch  # noqa: F401
    except ImportError:
        raise SystemExit("crown_probe: needs torch (pip install 'fairspec[torch]')") from None
    from threadpoolctl import threadpool_limits

    import fairspec.backends.bab.engine as E
    from fairify import EPS
    from rows import fairify_row

    threadpool_limits(1)
    globals().update(ITERS=a.iters, LR=a.lr, LP_MARGIN=a.lp_margin)
    row = json.loads(a.row.read_text())["rows"][0]
    p, parts, _, _ = fairify_row(a.shared, row["model"], row["protected"],
                                 "label" if row["property"] == "sign" else "prob",
                                 0.0 if row["property"] == "sign" else EPS)
    if a.probe == "cost":
        from fairspec.certify.pairlp import Decisions, PairQuery, node_state

        lo, hi = parts[a.indices[0]]
        q = PairQuery.from_problem(p.restrict(lo, hi), EPS, False)
        st = node_state(q, 0, Decisions())
        crown_bounds(q, [st], [init_params(q, st)], 5)
        print("| nodes | ms per iteration | us per node and iteration |\n|---:|---:|---:|")
        for n in (1, 8, 32, 128, 512):
            t = time.perf_counter()
            crown_bounds(q, [st] * n, [init_params(q, st)] * n, 50, stop_early=False)
            dt = (time.perf_counter() - t) / 51
            print(f"| {n} | {dt * 1e3:.2f} | {dt / n * 1e6:.1f} |")
        return
    from fairspec.backends.pair.certify import decide_by_bab

    for k in a.indices:
        lo, hi = parts[k]
        sub = p.restrict(lo, hi)
        if a.probe == "leaves":
            r, leaves = _collect_leaves(sub, a.seconds)
            print(f"partition {k}: {r.status}, {len(leaves)} leaves closed by the LP")
            if not leaves:
                continue
            q = leaves[0][0]
            states = [st for _, st, _ in leaves]
            tgt = np.array([float(st.target) for st in states])
            lpv = np.array([v for _, _, v in leaves])
            log = ((0, 10, 20, 50, 100, 200, 500, 1000), [])
            best, _ = crown_bounds(q, states, [init_params(q, st) for st in states], 1000, a.lr, log, stop_early=False)
            print("| iterations | leaves closed | median bound - target |\n|---:|---:|---:|")
            for it, b in log[1]:
                print(f"| {it} | {int(np.sum(b < tgt))} of {len(tgt)} | {np.median(b - tgt):.3f} |")
            print(f"LP value - target, median {np.median(lpv - tgt):.3f}; bound - LP value: "
                  f"min {np.min(best - lpv):.4f}, median {np.median(best - lpv):.4f}")
            continue
        orig = E.prove_below
        for name, fn in (("engine", orig), ("crown", prove_below_crown)):
            got = {}

            def run(*args, _fn=fn, **kw):
                r = _fn(*args, **kw)
                got.update(r.stats)
                return r

            E.prove_below = run
            t = time.perf_counter()
            try:
                r = decide_by_bab(sub, "prove", a.seconds)
            finally:
                E.prove_below = orig
            keys = ("nodes", "lp_solves", "tighten_lps", "crown_nodes", "crown_closed", "crown_refused",
                    "crown_seconds", "lp_path")
            print(f"partition {k} {name}: {r.status} in {time.perf_counter() - t:.2f} s",
                  {x: (round(got[x], 2) if isinstance(got[x], float) else got[x]) for x in keys if x in got})


if __name__ == "__main__":
    main()
