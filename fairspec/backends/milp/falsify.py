"""Early falsification of input partitions: one batched attack over every box before any solver.

Most partitions of a network that is not fair hold a violating pair that a few evaluations find
(Fairify's AC-4: 64 random points per box refute 10,302 of its 16,000 partitions); a MILP per box
spends 0.02-5 s on each. :func:`falsify_boxes` runs, for all boxes at once (numpy, float32, in
chunks):

1. **samples**: the box's centre and random points of the box (integral where the input is, a
   one-hot group as one of its vectors), the tied inputs shared by both copies; most of them
   drawn towards the box's corners (:data:`CORNER_SHARE`, :data:`CORNER_P`), where a piecewise
   linear network's measure peaks when the box lies in few of its linear regions;
2. **the protected values**: every assignment of the free inputs (all of them when there are at
   most :data:`MAX_ASSIGNMENTS`, else a fixed random sample of them); for each point the pair of
   assignments with the largest and the smallest logit is the point's most violating pair (the
   measure ``min(z, -z')`` / ``z - z'`` / ``sigmoid(z) - sigmoid(z')`` grows with ``z`` and
   falls with ``z'``);
3. **signed-gradient ascent** (FGSM/PGD steps, Goodfellow et al. 2015, Madry et al. 2018) on that
   measure (for ``prob``, of the probability difference itself, ``sigmoid'(z) grad z -
   sigmoid'(z') grad z'``) from the best few points of every box not yet refuted, over the tied inputs that are
   not in a one-hot group, projected onto the box and rounded onto the domain;
4. **escalation**: the boxes left get a second and a third round with 5x and 20x the points and
   more steps (:data:`ROUNDS`): on a box that is not fair a violation is usually near, and each
   round costs less than one MILP per box it refutes.

The attack proves nothing and decides nothing by itself: a box is *refuted* only by a pair that
:func:`fairspec.backends.pair.drivers.checked` accepts on the restricted problem (the pre-condition
inside the box and the property broken by ``net.forward`` in float64), that still breaks it in
float32 (:func:`~fairspec.backends.pair.drivers.is_robust`: the model files' precision) and that
:func:`fairspec.backends.pair.certify.replays` on the model's runtime. Every other box goes to the
solvers as before.
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np

from fairspec.backends.pair import PairProblem, Witness

__all__ = ["falsify_boxes", "MAX_ASSIGNMENTS", "ROUNDS", "LIGHT_ROUNDS", "HEAVY_ROUNDS"]

#: assignments of the protected (free) inputs tried per point
MAX_ASSIGNMENTS = 32
#: the rounds, each on the boxes the previous ones left: (random points per box besides its
#: centre, signed-gradient steps, points per box the ascent starts from). Measured on Fairify's
#: AC-4 (sex, 16,000 boxes, load ~16 on 2 cores): 10,464 refuted by the first round (12 s), 905
#: left after the second (19 s), 128 after the third (14 s)
ROUNDS = ((48, 12, 4), (256, 30, 8), (1024, 60, 16), (16384, 200, 64))
#: a round of more than :data:`HEAVY_SAMPLES` points runs only when at most this many boxes are left
#: (GC-1 sex: the one box the first three rounds leave, refuted by HiGHS only after 53 s, falls to
#: 16,384 points in 1.4 s)
HEAVY_BOXES = 256
HEAVY_SAMPLES = 4096
#: the rounds of :data:`ROUNDS` up to :data:`HEAVY_SAMPLES` points, and the heavy ones after them
#: (the partition driver runs the heavy ones apart: ``partition.HEAVY_PROBE``)
LIGHT_ROUNDS = tuple(r for r in ROUNDS if r[0] <= HEAVY_SAMPLES)
HEAVY_ROUNDS = ROUNDS[len(LIGHT_ROUNDS):]
SAMPLES, STEPS, STARTS = ROUNDS[0]
#: the share of each box's random points drawn towards its corners: each input outside a one-hot group
#: at its low end with probability CORNER_P / 2, at its high end with CORNER_P / 2, else uniform. Fairify's
#: AC-4 eps (sex), 200 of the partitions session 9's row left, one round of 16,384 points: uniform points
#: refuted 15 (16 with the prob gradient), a share of 0.5 at CORNER_P 2/3 76, 0.75 at 0.9 90, every point at a corner 86; the first
#: rounds on all 16,000 partitions refuted 13,077 in 18 s where uniform points refuted 10,868 in 25 s
#: (bench/results/fairify_band.md, session 10)
CORNER_SHARE = 0.75
CORNER_P = 0.9
#: rows evaluated at once (memory: rows x widest layer x 4 bytes)
CHUNK = 1 << 15


def _layers(net):
    return [(np.asarray(l.W, dtype=np.float32), np.asarray(l.b, dtype=np.float32), bool(l.relu))
            for l in net.layers]


def _forward(layers, X, grad: bool = False):
    """Logits (N,) in float32, and with ``grad`` their gradient w.r.t. the inputs (N, n)."""
    H = X.astype(np.float32, copy=False)
    masks = []
    for W, b, relu in layers:
        H = H @ W.T + b
        if relu:
            m = H > 0
            H = H * m
            masks.append(m)
        else:
            masks.append(None)
    z = H[:, 0]
    if not grad:
        return z, None
    G = np.zeros((X.shape[0], layers[-1][0].shape[0]), dtype=np.float32)
    G[:, 0] = 1.0
    for (W, _, _), m in zip(reversed(layers), reversed(masks)):
        if m is not None:
            G = G * m
        G = G @ W
    return z, G


def _assignments(p: PairProblem, rng) -> np.ndarray:
    """(K, len(free)) values of the free inputs, one row per assignment."""
    free = list(p.free)
    if not free:
        return np.zeros((0, 0))
    pos = {i: k for k, i in enumerate(free)}
    factors = []                      # (columns, options[m, len(columns)])
    seen = set()
    for g in p.onehot_groups:
        if set(g) <= set(free):
            opts = [np.eye(len(g))[j] for j, i in enumerate(g) if p.hi[i] >= 1]
            factors.append(([pos[i] for i in g], np.array(opts)))
            seen.update(g)
    for i in free:
        if i in seen:
            continue
        if p.integer[i]:
            vals = np.arange(p.lo[i], p.hi[i] + 0.5)
            if len(vals) > 64:
                vals = np.unique(np.round(np.linspace(p.lo[i], p.hi[i], 64)))
        else:
            vals = np.linspace(p.lo[i], p.hi[i], 5)
        factors.append(([pos[i]], vals[:, None]))
    total = math.prod(len(o) for _, o in factors)
    if total <= MAX_ASSIGNMENTS:
        combos = itertools.product(*[range(len(o)) for _, o in factors])
    else:
        combos = {tuple(int(rng.integers(len(o))) for _, o in factors) for _ in range(4 * MAX_ASSIGNMENTS)}
        combos = sorted(combos)[:MAX_ASSIGNMENTS]
    rows = []
    for c in combos:
        r = np.zeros(len(free))
        for (cols, opts), j in zip(factors, c):
            r[cols] = opts[j]
        rows.append(r)
    return np.array(rows)


def _sample(p: PairProblem, L: np.ndarray, H: np.ndarray, S: int, rng) -> np.ndarray:
    """(B, S + 1, n) points: each box's centre, then S random points (integral inputs integral,
    one-hot groups one-hot), the first :data:`CORNER_SHARE` of them drawn towards the corners."""
    B, n = L.shape
    U = rng.random((B, S, n))
    span = np.where(p.integer, H - L + 1.0, H - L)
    X = L[:, None, :] + U * span[:, None, :]
    X = np.where(p.integer, np.floor(X), X)
    k = int(S * CORNER_SHARE)
    if k:
        R = rng.random((B, k, n))
        X[:, :k] = np.where(R < CORNER_P / 2, L[:, None, :], np.where(R < CORNER_P, H[:, None, :], X[:, :k]))
    C = np.where(p.integer, np.floor(0.5 * (L + H)), 0.5 * (L + H))[:, None, :]
    X = np.minimum(np.concatenate([C, X], axis=1), H[:, None, :])
    for g in p.onehot_groups:
        g = list(g)
        allowed = H[:, g] >= 1                                     # (B, |g|)
        forced = L[:, g] >= 1
        score = rng.random((B, S + 1, len(g))) + np.where(forced, 2.0, 0.0)[:, None, :]
        score = np.where(allowed[:, None, :], score, -1.0)
        pick = np.argmax(score, axis=2)
        X[:, :, g] = np.eye(len(g))[pick]
    return X


def _best_pairs(layers, p, X, A):
    """For points X (N, n): the logits under every assignment A (K, f); per point the indices of
    the largest / smallest logit and the measure of that pair."""
    N = X.shape[0]
    K = max(len(A), 1)
    Z = np.empty((N, K), dtype=np.float32)
    free = list(p.free)
    for k in range(K):
        Xk = X.copy()
        if free:
            Xk[:, free] = A[k]
        Z[:, k] = _forward(layers, Xk)[0]
    ia, ib = Z.argmax(1), Z.argmin(1)
    za, zb = Z[np.arange(N), ia], Z[np.arange(N), ib]
    return ia, ib, _measure(p.post, za, zb)


def _measure(post, za, zb):
    if post == "label":
        return np.minimum(za, -zb)
    if post == "logit":
        return za - zb
    return 1.0 / (1.0 + np.exp(-za.astype(np.float64))) - 1.0 / (1.0 + np.exp(-zb.astype(np.float64)))


def _slope(z):
    """The logistic's derivative at float32 logits ``z``, in float64, from the side where the logistic
    is small (``s(-|z|) (1 - s(-|z|))``: above zero up to ``|z|`` of about 745, where ``s(z) (1 - s(z))``
    is 0 beyond 37)."""
    from fairspec.models.network import sigmoid

    s = sigmoid(-np.abs(z.astype(np.float64)))
    return s * (1.0 - s)


def _threshold(p: PairProblem) -> float:
    return 0.0 if p.post == "label" else p.eps


def _ascend(layers, p, X, A, ia, ib, L, H, steps):
    """Signed-gradient ascent of the pair measure from points X (N, n) with their assignment pairs;
    returns the best point seen per start (rounded onto the domain) and its measure."""
    free = list(p.free)
    in_group = {i for g in p.onehot_groups for i in g}
    movable = np.array([i in set(p.tied) and i not in in_group for i in range(p.n)])
    span = np.where(p.integer, H - L + 1.0, H - L)
    cur = X.astype(np.float64).copy()
    best = X.copy()
    best_m = np.full(X.shape[0], -np.inf)
    thr = _threshold(p)
    for s in range(steps + 1):
        Xr = np.where(p.integer, np.round(cur), cur)
        Xr = np.clip(Xr, L, H)
        Xa, Xb = Xr.copy(), Xr.copy()
        if free:
            Xa[:, free] = A[ia]
            Xb[:, free] = A[ib]
        za, ga = _forward(layers, Xa, grad=True)
        zb, gb = _forward(layers, Xb, grad=True)
        m = _measure(p.post, za, zb)
        up = m > best_m
        best[up], best_m[up] = Xr[up], m[up]
        if s == steps:
            break
        if p.post == "label":
            g = np.where((za < -zb)[:, None], ga, -gb)
        elif p.post == "prob":
            # the probability difference's own gradient, its two weights scaled to the larger one
            # (float64: the signs survive where float32 saturates)
            da, db = _slope(za), _slope(zb)
            top = np.maximum(np.maximum(da, db), 1e-300)[:, None]
            g = (da[:, None] / top) * ga - (db[:, None] / top) * gb
        else:
            g = ga - gb
        step = 0.5 ** (1 + s // 3) * span
        cur = np.clip(cur + np.where(movable, np.sign(g) * step, 0.0), L, H)
        if np.all(best_m > thr + 1.0):
            break
    return best, best_m


def _replayed(p: PairProblem, L, H, xa, xb):
    """Vectorised :func:`~fairspec.backends.pair.check_witness` of pairs (xa[i], xb[i]) in the boxes
    [L[i], H[i]] (the pre-condition of the restricted problem) on ``net.forward`` in float64 *and*
    in float32 (:func:`~fairspec.backends.pair.drivers.is_robust`); returns (ok, z(xa), z(xb))."""
    from fairspec.backends.pair import is_violation

    tol = 1e-9
    ok = np.ones(len(xa), dtype=bool)
    for v in (xa, xb):
        ok &= np.all(np.isfinite(v), axis=1)
        ok &= np.all((v >= L - tol) & (v <= H + tol), axis=1)
        ok &= np.all(np.abs(v[:, p.integer] - np.round(v[:, p.integer])) <= tol, axis=1)
        for g in p.onehot_groups:
            ok &= np.abs(v[:, list(g)].sum(axis=1) - 1.0) <= tol
    tied = list(p.tied)
    ok &= np.all(np.abs(xa[:, tied] - xb[:, tied]) <= tol, axis=1)
    for i, t in p.relaxed:
        ok &= np.abs(xa[:, i] - xb[:, i]) <= t + tol
    if p.must_differ:
        md = list(p.must_differ)
        need = np.where(p.integer[md], 0.5, tol)
        ok &= np.any(np.abs(xa[:, md] - xb[:, md]) > need, axis=1)
    st = p.eps_strict
    res = []
    for dt in (np.float64, np.float32):
        z = p.net.forward(np.vstack([xa, xb]), dtype=dt)
        za, zb = z[:len(xa)], z[len(xa):]
        ok &= np.isfinite(za) & np.isfinite(zb)
        ok &= (is_violation(p.post, p.eps, za, zb, st) | is_violation(p.post, p.eps, zb, za, st))
        res.append((za, zb))
    return ok, res[0][0], res[0][1]


def falsify_boxes(problem: PairProblem, parts, *, rounds=ROUNDS, seed: int = 0,
                  deadline: float | None = None, executor=None, heavy_boxes: int | None = None,
                  until_none: bool = False) -> list[Witness | None]:
    """For each box ``(lo, hi)`` of ``parts`` a witness that refutes it (see the module docstring:
    replayed on the restricted problem, in float32 and on the runtime), or None. ``rounds``: see
    :data:`ROUNDS` (round ``r`` draws from the random streams of ``seed + r``); ``deadline``
    (``time.time()``) stops the attack between chunks; a round of more than 4,096 points runs only
    when at most ``heavy_boxes`` boxes are left (default :data:`HEAVY_BOXES`); ``until_none``: a
    round that refutes no box ends the rounds. With an ``executor`` of more than one worker, each
    round's chunks of boxes run as its jobs (the problem sent once per worker); every chunk has its
    own random stream, so the witnesses are the same whatever runs them (up to the deadline)."""
    from threadpoolctl import threadpool_limits

    from fairspec.models.network import PLNet

    out: list[Witness | None] = [None] * len(parts)
    if not isinstance(problem.net, PLNet) or not parts:
        return out
    if executor is not None and getattr(executor, "workers", 1) <= 1:
        executor = None
    with threadpool_limits(1):          # small matrices: BLAS threads only contend (30x on a loaded box)
        for r, (samples, steps, starts) in enumerate(rounds):
            left = [k for k, w in enumerate(out) if w is None]
            if not left or (deadline is not None and time.time() > deadline):
                break
            if samples > HEAVY_SAMPLES and len(left) > (HEAVY_BOXES if heavy_boxes is None else heavy_boxes):
                break
            found: list[Witness | None] = [None] * len(left)
            _falsify(problem, [parts[k] for k in left], samples, steps, starts, seed + r, deadline, found, executor)
            for k, w in zip(left, found):
                out[k] = w
            if until_none and not any(w is not None for w in found):
                break
    return out


def _falsify(p, parts, samples, steps, starts, seed, deadline, out, executor=None):
    """One round over ``parts``: chunks of boxes (as many as fit :data:`CHUNK` rows), chunk ``c``
    drawing its points from the random stream ``(seed, c)``; in this process, or as the jobs of
    ``executor`` (a job that fails leaves its boxes to the solvers)."""
    A = _assignments(p, np.random.default_rng(seed))
    if len(p.free) and len(A) < 2:
        return
    layers = _layers(p.net)
    width = max(max(W.shape[0] for W, _, _ in layers), p.n)
    per_box = (samples + 1) * max(len(A), 1)
    boxes = max(1, CHUNK * 64 // (per_box * width) if width > 64 else CHUNK // per_box)
    jobs = [(c, samples, steps, starts, seed, deadline, A,
             np.array([lo for lo, _ in parts[s0:s0 + boxes]], dtype=np.float64),
             np.array([hi for _, hi in parts[s0:s0 + boxes]], dtype=np.float64))
            for c, s0 in enumerate(range(0, len(parts), boxes))]
    if executor is None or len(jobs) <= 1:
        found = []
        for job in jobs:
            if deadline is not None and time.time() > deadline:
                break
            found.append(_chunk(p, layers, job))
    else:
        found = executor.map(_chunk_job, jobs, shared=p, on_error=lambda job, reason: [])
    for (c, *_), hits in zip(jobs, found):
        for j, w in hits:
            out[c * boxes + j] = w


def _chunk_job(p, job):
    """An executor job: one chunk of boxes (``_falsify``'s), with BLAS on one thread."""
    from threadpoolctl import threadpool_limits

    if job[5] is not None and time.time() > job[5]:
        return []
    with threadpool_limits(1):
        return _chunk(p, _layers(p.net), job)


def _chunk(p, layers, job) -> list[tuple[int, Witness]]:
    """The witnesses found in one chunk of boxes, as (index in the chunk, witness)."""
    from fairspec.backends.pair.certify import replays

    c, samples, steps, starts, seed, deadline, A, L, H = job
    rng = np.random.default_rng((seed, c))
    free = list(p.free)
    thr = _threshold(p)
    hits: list[tuple[int, Witness]] = []
    X = _sample(p, L, H, samples, rng)                     # (B, S+1, n)
    B, S1, n = X.shape
    ia, ib, m = _best_pairs(layers, p, X.reshape(-1, n), A)
    ia, ib, m = ia.reshape(B, S1), ib.reshape(B, S1), m.reshape(B, S1)
    top = np.argsort(-m, axis=1)[:, :starts]               # best starts per box
    rows = np.arange(B)[:, None]
    cand_x = X[rows, top].reshape(-1, n)
    cand_a, cand_b = ia[rows, top].reshape(-1), ib[rows, top].reshape(-1)
    cand_m = m[rows, top].reshape(-1)
    LL, HH = np.repeat(L, top.shape[1], axis=0), np.repeat(H, top.shape[1], axis=0)
    # the ascent only where the sampled points do not already violate clearly
    need = np.repeat(m[rows, top[:, :1]].reshape(-1) <= thr + 1e-3, top.shape[1])
    if steps > 0 and need.any():
        bx, bm = _ascend(layers, p, cand_x[need], A, cand_a[need], cand_b[need], LL[need], HH[need], steps)
        better = bm > cand_m[need]
        sel = np.flatnonzero(need)[better]
        cand_x[sel], cand_m[sel] = bx[better], bm[better]
    # every box's best candidate that breaks the property, replayed in float64 and float32
    cand_m = cand_m.reshape(B, -1)
    T = top.shape[1]
    order = np.argsort(-cand_m, axis=1)
    done = np.zeros(B, dtype=bool)
    for j in range(T):
        r = np.arange(B) * T + order[:, j]
        live = ~done & (cand_m[np.arange(B), order[:, j]] > thr)
        if not live.any():
            break
        r = r[live]
        xa, xb = cand_x[r].astype(np.float64), cand_x[r].astype(np.float64)
        if free:
            xa[:, free] = A[cand_a[r]]
            xb[:, free] = A[cand_b[r]]
        ok, za, zb = _replayed(p, L[live], H[live], xa, xb)
        for bb, good, x1, x2, z1, z2 in zip(np.flatnonzero(live), ok, xa, xb, za, zb):
            if not good:
                continue
            if z1 < z2:
                x1, x2, z1, z2 = x2, x1, z2, z1
            if p.runtime is not None and getattr(p.runtime, "replay", None) is not None and \
                    not replays(p.restrict(L[bb], H[bb]), x1, x2):
                continue
            hits.append((int(bb), Witness([float(v) for v in x1], [float(v) for v in x2], float(z1), float(z2))))
            done[bb] = True
    return hits


def best_pair(problem: PairProblem, *, samples: int = 2048, steps: int = 60, starts: int = 32, seed: int = 0):
    """A pair of large violation measure (``label`` / ``logit`` posts of a network) by the same
    sampling and signed-gradient ascent over the whole domain: the incumbent ``maximize`` starts
    from (the MILP's primal side finds good pairs slowly on wide domains: German credit 19-32-32-1,
    sex flipped, ``|v - v'|``: the MILP's best after 60 s 0.80, after 600 s 3.38). Proves nothing;
    None when there is no pair to try."""
    from threadpoolctl import threadpool_limits

    from fairspec.models.network import PLNet

    p = problem
    if not isinstance(p.net, PLNet) or p.post not in ("label", "logit"):
        return None
    rng = np.random.default_rng(seed)
    with threadpool_limits(1):
        layers = _layers(p.net)
        A = _assignments(p, rng)
        if len(p.free) and len(A) < 2:
            return None
        L, H = p.lo[None, :], p.hi[None, :]
        X = _sample(p, L, H, samples, rng)[0]
        ia, ib, m = _best_pairs(layers, p, X, A)
        top = np.argsort(-m)[:starts]
        k = len(top)
        bx, bm = _ascend(layers, p, X[top], A, ia[top], ib[top], np.repeat(L, k, 0), np.repeat(H, k, 0), steps)
        bx, bm = _coordinates(layers, p, np.asarray(bx, dtype=np.float64), bm, A, ia[top], ib[top])
        j = int(np.argmax(bm))
        xa = np.asarray(bx[j], dtype=np.float64).copy()
        xb = xa.copy()
        free = list(p.free)
        if free:
            xa[free] = A[ia[top][j]]
            xb[free] = A[ib[top][j]]
    return xa, xb


def _coordinates(layers, p: PairProblem, X, m, A, ia, ib, rounds: int = 12, values: int = 33):
    """Greedy coordinate search from points X (k, n): each tied input outside one-hot groups in turn
    set to ``values`` evenly spaced values of its range (integral where the input is), kept where the
    measure grows; rounds until nothing moves."""
    free = list(p.free)
    in_group = {i for g in p.onehot_groups for i in g}
    coords = [i for i in p.tied if i not in in_group and p.hi[i] > p.lo[i]]
    X, m = X.copy(), np.asarray(m, dtype=np.float64).copy()
    for _ in range(rounds):
        moved = False
        for i in coords:
            grid = np.linspace(p.lo[i], p.hi[i], values)
            if p.integer[i]:
                grid = np.unique(np.round(grid))
            C = np.repeat(X, len(grid), axis=0)
            C[:, i] = np.tile(grid, X.shape[0])
            Ca, Cb = C.copy(), C.copy()
            if free:
                Ca[:, free] = np.repeat(A[ia], len(grid), axis=0)
                Cb[:, free] = np.repeat(A[ib], len(grid), axis=0)
            mm = _measure(p.post, _forward(layers, Ca)[0], _forward(layers, Cb)[0]).reshape(X.shape[0], len(grid))
            j = np.argmax(mm, axis=1)
            best = mm[np.arange(X.shape[0]), j]
            up = best > m + 1e-12
            if up.any():
                X[up, i] = grid[j[up]]
                m[up] = best[up]
                moved = True
        if not moved:
            break
    return X, m
