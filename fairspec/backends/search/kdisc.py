"""k-discrimination (HyFair, paper 000_*): clusters of counterfactual outcomes.

For an individual x (its non-protected part) and the K counterfactuals that set
the protected attributes to every combination of their declared values, the
model's K scores are clustered by C_eps; k is the number of clusters. A model is
k-discriminant when some x gives k clusters; the search looks for the largest k.

The clustering, following the paper exactly (Sec. III, "Search for
k-Discrimination"): "Since the output of F lies in the range [0,1], the
threshold eps can be used to define uniform partitions of the outcome space for
clustering", and Algorithm 1's initialisation "query[ies] the DNN over all
possible protected values to measure the number of buckets". So C_eps cuts
[0, 1] into ceil(1/eps) buckets of width eps (the last one closed) and k is the
number of occupied buckets (``cluster="buckets"``, the default). The other
reading, outputs chained into one group while consecutive sorted scores are
within eps (single linkage), is ``cluster="gaps"``.

An individual discriminatory instance (ID) is a 2-discriminant in the paper's
Dist_eps sense: two of its counterfactual scores differ by more than eps
(max - min > eps).

Algorithm 1 (HyFair Search) runs here as ``chains`` independent chains advanced
in lock-step, every step evaluating all K counterfactuals of all chains'
candidates in one batch:

    if curEval > bestEval: bestEval, bestSol = curEval, curSol        (lines 5-6)
    else:                  curSol = Solver(curSol)                   (line 8)
    RW:     cand = RandNeighbor(curSol); accept                      (lines 10-11)
    SA:     cand = curSol w.p. p, else Rand(A); Metropolis accept    (lines 14, 18-21)
    SA+KNN: cand = KNN(curSol) w.p. p, else Rand(A); Metropolis      (lines 15-16, 18-21)

``Solver`` is the paper's MILP/SMT call seeded by the current solution. Here it
is pluggable (``solver=``: model-input rows in, model-input rows out, e.g. a
MILP ``find`` around each seed); the default is a batched local move: the best
of ``solver_children`` random neighbours by fitness. Fitness is k, plus (with
``tiebreak``) the score spread max - min in [0, 1) so chains can climb inside
a plateau of equal k; only k is ever reported. Temp(i) = temp0 * cooling^i
(floored at ``temp_min``). Rand(A) draws a data row (a uniform domain point
without data). KNN draws one of the ``knn`` nearest data rows (shared
coordinates scaled to [0, 1]).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np

from fairspec.backends.search.post import sigmoid
from fairspec.backends.search.space import Space

METHODS = ("rw", "sa", "sa+knn")
CLUSTERINGS = ("buckets", "gaps")


# ---------------------------------------------------------------------------- C_eps
def _n_buckets(eps: float) -> int:
    r = 1.0 / eps
    return int(round(r)) if abs(r - round(r)) < 1e-9 else int(np.ceil(r))


def bucket_of(p: np.ndarray, eps: float) -> np.ndarray:
    """The bucket index of every probability: floor(p / eps), the last bucket closed."""
    nb = _n_buckets(eps)
    p = np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)
    if abs(1.0 / eps - nb) < 1e-9:
        b = np.floor(p * nb + 1e-12)
    else:
        b = np.floor(p / eps + 1e-12)
    return np.minimum(b, nb - 1).astype(np.int64)


def k_of(P: np.ndarray, eps: float = 0.05, cluster: str = "buckets") -> np.ndarray:
    """k = |C_eps| for every row of probabilities P (n, K) -> int (n,)."""
    P = np.atleast_2d(np.asarray(P, dtype=np.float64))
    if P.shape[1] == 0:
        return np.zeros(P.shape[0], dtype=np.int64)
    if cluster == "buckets":
        B = np.sort(bucket_of(P, eps), axis=1)
        return 1 + np.count_nonzero(np.diff(B, axis=1), axis=1)
    if cluster == "gaps":
        Q = np.sort(P, axis=1)
        return 1 + np.count_nonzero(np.diff(Q, axis=1) > eps, axis=1)
    raise ValueError(f"cluster must be one of {CLUSTERINGS}, not {cluster!r}")


def cluster_labels(p: np.ndarray, eps: float = 0.05, cluster: str = "buckets") -> np.ndarray:
    """Cluster index (0 = lowest scores) of each of K probabilities."""
    p = np.asarray(p, dtype=np.float64).reshape(-1)
    if cluster == "buckets":
        b = bucket_of(p, eps)
        _, lab = np.unique(b, return_inverse=True)
        return lab.astype(np.int64)
    if cluster == "gaps":
        order = np.argsort(p, kind="stable")
        lab_sorted = np.concatenate(([0], np.cumsum(np.diff(p[order]) > eps)))
        lab = np.empty_like(lab_sorted)
        lab[order] = lab_sorted
        return lab.astype(np.int64)
    raise ValueError(f"cluster must be one of {CLUSTERINGS}, not {cluster!r}")


# ---------------------------------------------------------------------------- results
@dataclass(frozen=True, eq=False)
class KWitness:
    """One individual with its K counterfactuals: inputs (K, d), their probabilities
    and cluster labels, and k."""

    x: np.ndarray
    inputs: np.ndarray
    scores: np.ndarray
    clusters: np.ndarray
    k: int
    seconds: float
    labels: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"k": int(self.k), "x": [float(v) for v in self.x],
                "inputs": [[float(v) for v in row] for row in self.inputs],
                "scores": [float(v) for v in self.scores], "clusters": [int(c) for c in self.clusters],
                "labels": list(self.labels), "seconds": float(self.seconds)}


@dataclass(frozen=True, eq=False)
class KDiscResult:
    max_k: int
    K: int
    eps: float
    method: str
    cluster: str
    witness: KWitness | None            # one individual reaching max_k
    top: tuple[KWitness, ...]           # distinct individuals with the highest k (explanations start here)
    ids: int                            # distinct 2-discriminants (max - min > eps)
    ids_at_max_k: int                   # distinct individuals reaching max_k
    candidates: int                     # states evaluated (each = K model rows)
    success_rate: float                 # ID states / states evaluated
    avg_k: float                        # mean k over evaluated ID states
    seconds_to_first_id: float | None
    seconds_to_max_k: float | None
    seconds: float
    iterations: int
    evaluations: int
    seed: int
    history: tuple[tuple[float, int], ...] = field(default=())  # (seconds, k) at every increase of max k

    def to_dict(self, witnesses: bool = True) -> dict:
        d = {k: getattr(self, k) for k in ("max_k", "K", "eps", "method", "cluster", "ids", "ids_at_max_k",
                                           "candidates", "success_rate", "avg_k", "seconds_to_first_id",
                                           "seconds_to_max_k", "seconds", "iterations", "evaluations", "seed")}
        d["history"] = [list(h) for h in self.history]
        if witnesses and self.witness is not None:
            d["witness"] = self.witness.to_dict()
        return d


# ---------------------------------------------------------------------------- search
class _KEval:
    def __init__(self, evaluate, space: Space, eps, scores, cluster, tiebreak):
        self.evaluate, self.space, self.eps = evaluate, space, eps
        self.scores, self.cluster, self.tiebreak = scores, cluster, tiebreak
        self.evaluations = 0

    def __call__(self, S: np.ndarray):
        """-> fitness (n,), k (n,), spread (n,), probabilities (n, K)."""
        n, K, d = S.shape[0], self.space.K, self.space.d
        if n == 0:
            z = np.zeros(0)
            return z, z.astype(np.int64), z, np.zeros((0, K))
        X = self.space.expand(S)
        raw = np.asarray(self.evaluate(X.reshape(-1, d)), dtype=np.float64).reshape(n, K)
        self.evaluations += n * K
        P = sigmoid(raw) if self.scores == "logit" else raw
        k = k_of(P, self.eps, self.cluster)
        spread = P.max(axis=1) - P.min(axis=1)
        fit = k.astype(np.float64) + (np.minimum(spread, 1.0) * 0.999 if self.tiebreak else 0.0)
        return fit, k, spread, P


class _KRecorder:
    def __init__(self, space: Space, eps, cluster, keep_top, t0, clock):
        from fairspec.backends.search.falsify import IdCounter

        self.space, self.eps, self.cluster = space, eps, cluster
        self.ids = IdCounter()
        self.id_states = 0
        self.candidates = 0
        self.k_sum = 0
        self.max_k = 0
        self.at_max = IdCounter()
        self._IdCounter = IdCounter
        self.first_id = None
        self.t_max = None
        self.history: list[tuple[float, int]] = []
        self.keep_top = keep_top
        self.top: dict[bytes, tuple[int, float, KWitness]] = {}
        self.t0, self.clock = t0, clock

    def add(self, S, k, spread, P):
        n = S.shape[0]
        if n == 0:
            return
        self.candidates += n
        isid = spread > self.eps
        now = self.clock() - self.t0
        if isid.any():
            if self.first_id is None:
                self.first_id = now
            self.id_states += int(isid.sum())
            self.k_sum += int(k[isid].sum())
            self.ids.add(self.space.hash_keys(S[isid]))
        kmax = int(k.max())
        if kmax > self.max_k:
            self.max_k = kmax
            self.t_max = now
            self.at_max = self._IdCounter()
            self.history.append((now, kmax))
        if kmax == self.max_k:
            self.at_max.add(self.space.hash_keys(S[k == kmax]))
        # top individuals by (k, spread)
        if self.keep_top:
            m = min(self.keep_top, n)
            score = k + np.minimum(spread, 1.0) * 0.999
            cand = np.argpartition(-score, m - 1)[:m]
            floor = min((v[0] + v[1] * 0.999 for v in self.top.values()), default=-1.0) \
                if len(self.top) >= self.keep_top else -1.0
            cand = cand[score[cand] > floor]
            if cand.size:
                keys = self.space.keys(S[cand])
                X = self.space.expand(S[cand])
                labels = tuple(self.space.combo_labels())
                for q, (r, key) in enumerate(zip(cand, keys)):
                    if key in self.top and self.top[key][0] >= k[r]:
                        continue
                    w = KWitness(S[r, : self.space.d].copy(), X[q].copy(), P[r].copy(),
                                 cluster_labels(P[r], self.eps, self.cluster), int(k[r]), now, labels)
                    self.top[key] = (int(k[r]), float(spread[r]), w)
                if len(self.top) > self.keep_top:
                    items = sorted(self.top.items(), key=lambda kv: (-kv[1][0], -kv[1][1], kv[1][2].seconds))
                    self.top = dict(items[: self.keep_top])

    def result_top(self):
        items = sorted(self.top.values(), key=lambda v: (-v[0], -v[1], v[2].seconds))
        return tuple(v[2] for v in items)


def _band_reps(space: Space, w: "KWitness") -> np.ndarray:
    """The band representatives of a witness (read back from its counterfactual inputs)."""
    reps = []
    for a, (p, cols) in enumerate(zip(space.protected, space._band_cols)):
        for j, _c in enumerate(cols):
            row = int(np.flatnonzero(space.combos[:, a] == j)[0])
            reps.append(w.inputs[row, p.index[0]])
    extra = np.zeros(space.width - space.d)
    extra[: len(reps)] = reps
    return extra


def _sweep_candidates(space: Space, S: np.ndarray, max_values: int = 48,
                      rng: np.random.Generator | None = None) -> np.ndarray:
    """Every single-gene change of every state: for each gene, all its values (integers up
    to ``max_values`` of them, else an even grid plus the 6 nearest values), one-hot
    groups every category. Rows: state-major."""
    out = []
    for s in S:
        for gene in space.genes:
            if gene.kind == "relax":
                continue
            if gene.kind == "group":
                cols = np.asarray(gene.cols)
                C = np.repeat(s[None, :], len(cols), axis=0)
                C[:, cols] = np.eye(len(cols))
                out.append(C)
                continue
            c = gene.cols[0]
            if gene.integer and gene.hi - gene.lo + 1 <= max_values:
                vals = np.arange(gene.lo, gene.hi + 1)
            else:
                grid = np.linspace(gene.lo, gene.hi, max_values)
                near = s[c] + np.array([-3, -2, -1, 1, 2, 3]) * (1.0 if gene.integer else (gene.hi - gene.lo) / 200)
                vals = np.clip(np.concatenate([grid, near]), gene.lo, gene.hi)
                if gene.integer:
                    vals = np.unique(np.round(vals))
            C = np.repeat(s[None, :], vals.size, axis=0)
            C[:, c] = vals
            out.append(C)
    return np.vstack(out) if out else S[:0]


def _knn_index(space: Space, data_states: np.ndarray):
    from sklearn.neighbors import NearestNeighbors

    cols = space.key_cols
    lo = np.concatenate([space.box.lo, np.zeros(space.width - space.d)])[cols]
    hi = np.concatenate([space.box.hi, np.ones(space.width - space.d)])[cols]
    scale = np.where(hi > lo, hi - lo, 1.0)
    Z = (data_states[:, cols] - lo) / scale
    nn = NearestNeighbors().fit(Z)
    return nn, lo, scale


def kdisc_search(evaluate: Callable[[np.ndarray], np.ndarray], space: Space, *,
                 eps: float = 0.05,
                 scores: str = "logit",
                 method: str = "sa",
                 cluster: str = "buckets",
                 data: np.ndarray | None = None,
                 seeds: Iterable | None = None,
                 solver: Callable[[np.ndarray], np.ndarray | None] | None = None,
                 seed: int = 0,
                 budget_seconds: float | None = 60.0,
                 max_iters: int | None = None,
                 max_evals: int | None = None,
                 stop_at_k: int | None = None,
                 chains: int = 128,
                 p: float = 0.9,
                 temp0: float = 1.0,
                 cooling: float = 0.995,
                 temp_min: float = 0.02,
                 knn: int = 10,
                 solver_children: int = 8,
                 tiebreak: bool = True,
                 keep_top: int = 16,
                 sweep_every: int = 10,
                 on_progress: Callable[[dict], None] | None = None,
                 cancel: Callable[[], bool] | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> KDiscResult:
    """Algorithm 1 of HyFair, batched. See the module docstring.

    evaluate: batched model, (n, d) -> (n,) logits (``scores="logit"``) or probabilities.
    space:    box and protected attributes; K = space.K counterfactuals per individual.
    data:     the data set A (model-input rows): Rand(A), KNN, and the first seeds.
    seeds:    model-input points (or (x, x') pairs, or objects with .x/.x_prime) that
              start chains, e.g. solver or falsifier witnesses.
    solver:   the Solver of line 8: (m, d) model inputs -> (m, d) model inputs (rows of
              NaN = no solution); default: a batched best-of-neighbours move.
    stop_at_k: stop once this k is reached (e.g. K, or a 30-minute run's max).
    cancel:   polled once per iteration: stop when it returns True (another restart reached stop_at_k).
    """
    method = method.lower()
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, not {method!r}")
    if cluster not in CLUSTERINGS:
        raise ValueError(f"cluster must be one of {CLUSTERINGS}, not {cluster!r}")
    if not 0 < eps < 1:
        raise ValueError("eps must lie in (0, 1)")
    t0 = clock()
    rng = np.random.default_rng(seed)
    ev = _KEval(evaluate, space, eps, scores, cluster, tiebreak)
    rec = _KRecorder(space, eps, cluster, keep_top, t0, clock)

    def evaluate_states(S):
        fit, k, spread, P = ev(S)
        rec.add(S, k, spread, P)
        return fit

    # the data set A
    A = None
    if data is not None:
        A = space.from_inputs(np.asarray(data, dtype=np.float64))
        _, first = np.unique(np.round(A[:, space.key_cols], 9), axis=0, return_index=True)
        A = A[np.sort(first)]
        if A.shape[0] == 0:
            A = None

    def rand_A(m: int) -> np.ndarray:
        if A is None:
            return space.sample(rng, m)
        return A[rng.integers(0, A.shape[0], m)].copy()

    knn_index = None
    if method == "sa+knn" and A is not None:
        knn_index = _knn_index(space, A)

    def knn_of(S: np.ndarray) -> np.ndarray:
        if knn_index is None:
            return space.mutate(rng, S, 1)
        nn, lo, scale = knn_index
        kk = min(knn + 1, A.shape[0])
        _, idx = nn.kneighbors((S[:, space.key_cols] - lo) / scale, n_neighbors=kk)
        pick = idx[np.arange(S.shape[0]), rng.integers(min(1, kk - 1), kk, S.shape[0])]
        return A[pick].copy()

    def solve(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Line 8: new current solutions from the solver seeded by S."""
        m = S.shape[0]
        out = None
        if solver is not None and m:
            got = solver(S[:, : space.d].copy())
            if got is not None:
                got = np.asarray(got, dtype=np.float64).reshape(m, space.d)
                ok = ~np.isnan(got).any(axis=1)
                out = S.copy()
                if ok.any():
                    out[ok] = space.from_inputs(got[ok])
                    # keep band representatives of the seed
                    out[ok, space.d:] = S[ok, space.d:]
                if ok.all():
                    return out, evaluate_states(out)
        C = space.mutate(rng, S, solver_children)
        f = evaluate_states(C).reshape(m, solver_children)
        best = np.argmax(f, axis=1)
        newS = C[np.arange(m) * solver_children + best]
        newf = f[np.arange(m), best]
        if out is not None:  # external solver answered for some rows
            okr = ~np.isnan(np.asarray(got)).any(axis=1)
            fo = evaluate_states(out[okr])
            newS[okr], newf[okr] = out[okr], fo
        return newS, newf

    # initialisation: seed <- Rand(A) (plus handed-in seeds); curSol <- Solver(seed)
    init = []
    if seeds is not None:
        pts = []
        for s in seeds:
            if isinstance(s, (tuple, list)) and len(s) == 2 and np.ndim(s[0]) == 1:
                pts.extend([np.asarray(s[0], dtype=np.float64), np.asarray(s[1], dtype=np.float64)])
            elif hasattr(s, "x_prime"):
                pts.extend([np.asarray(s.x, dtype=np.float64), np.asarray(s.x_prime, dtype=np.float64)])
            elif hasattr(s, "inputs"):
                pts.append(np.asarray(s.x, dtype=np.float64))
            else:
                pts.append(np.asarray(s, dtype=np.float64).reshape(-1))
        if pts:
            init.append(space.from_inputs(np.vstack(pts))[:chains])
    n_init = sum(x.shape[0] for x in init)
    if n_init < chains:
        init.append(rand_A(chains - n_init))
    seedS = np.vstack(init)
    evaluate_states(seedS)
    cur, cur_f = solve(seedS)
    best_f = np.full(chains, -np.inf)
    it = 0

    def stop() -> bool:
        if budget_seconds is not None and clock() - t0 >= budget_seconds:
            return True
        if max_iters is not None and it >= max_iters:
            return True
        if max_evals is not None and ev.evaluations >= max_evals:
            return True
        if stop_at_k is not None and rec.max_k >= stop_at_k:
            return True
        if cancel is not None and cancel():
            return True
        return False

    while not stop():
        improved = cur_f > best_f
        best_f = np.where(improved, cur_f, best_f)
        stuck = np.flatnonzero(~improved)
        if stuck.size:
            cur[stuck], cur_f[stuck] = solve(cur[stuck])
        if method == "rw":
            cand = space.mutate(rng, cur, 1)
            cur, cur_f = cand, evaluate_states(cand)
        else:
            temp = max(temp_min, temp0 * cooling ** it)
            heads = rng.random(chains) < p
            if method == "sa":
                # cand = curSol with probability p: the same point, accepted with ratio 1
                idx = np.flatnonzero(~heads)
                cand = rand_A(idx.size)
            else:
                idx = np.arange(chains)
                cand = rand_A(chains)
                h = np.flatnonzero(heads)
                if h.size:
                    cand[h] = knn_of(cur[h])
            if idx.size:
                cand_f = evaluate_states(cand)
                diff = cur_f[idx] - cand_f
                accept = np.exp(-np.maximum(diff, 0.0) / temp) >= rng.random(idx.size)
                acc = idx[accept]
                cur[acc], cur_f[acc] = cand[accept], cand_f[accept]
        it += 1
        if sweep_every and it % sweep_every == 0:
            # intensification (beyond Algorithm 1): coordinate sweeps from the best individuals
            # so far; the improved ones replace the worst chains
            tops = rec.result_top()[:2]
            if tops:
                base = space.from_inputs(np.vstack([w.x for w in tops]))
                for q, w in enumerate(tops):  # keep the band representatives of the witness
                    base[q, space.d:] = _band_reps(space, w)
                newS = np.empty_like(base)
                newf = np.empty(base.shape[0])
                for q in range(base.shape[0]):
                    C = _sweep_candidates(space, base[q:q + 1])
                    f = evaluate_states(C)
                    b = int(np.argmax(f))
                    newS[q], newf[q] = C[b], f[b]
                worst = np.argsort(cur_f)[: base.shape[0]]
                cur[worst], cur_f[worst] = newS, newf
        if on_progress is not None:
            on_progress({"iterations": it, "max_k": rec.max_k, "ids": len(rec.ids), "seconds": clock() - t0})

    seconds = clock() - t0
    top = rec.result_top()
    witness = top[0] if top and top[0].k == rec.max_k else None
    return KDiscResult(
        max_k=int(rec.max_k), K=space.K, eps=eps, method=method, cluster=cluster, witness=witness, top=top,
        ids=len(rec.ids), ids_at_max_k=len(rec.at_max), candidates=rec.candidates,
        success_rate=(rec.id_states / rec.candidates) if rec.candidates else 0.0,
        avg_k=(rec.k_sum / rec.id_states) if rec.id_states else 0.0,
        seconds_to_first_id=rec.first_id, seconds_to_max_k=rec.t_max, seconds=seconds, iterations=it,
        evaluations=ev.evaluations, seed=seed, history=tuple(rec.history))


# ---------------------------------------------------------------------------- restarts
RESTARTS = 4  # a fixed number, not the number of workers: the merged result does not depend on who runs them


def restart_seeds(seed: int, restarts: int = RESTARTS) -> list[int]:
    """One seed per restart, fixed by the search's seed (``SeedSequence(seed).spawn``), never by a process."""
    return [int(ss.generate_state(1)[0]) for ss in np.random.SeedSequence(int(seed)).spawn(restarts)]


def restart_job(state, item: dict) -> KDiscResult:
    """One executor job: one restart of the search. ``state`` is ``(evaluate, space, kwargs)`` (the
    model, the space and the fixed options: built once per worker); ``item`` the restart's seed,
    chains and budget. A restart that reaches ``stop_at_k`` touches ``item["found"]`` (a file), and
    every restart on this machine stops when it exists: a violation found by one ends them all."""
    import os

    evaluate, space, kwargs = state
    item = dict(item)
    found = item.pop("found", None)
    deadline = item.pop("deadline", None)
    if deadline is not None:
        left = max(0.0, deadline - time.time())
        item["budget_seconds"] = left if item.get("budget_seconds") is None else min(item["budget_seconds"], left)

    def cancel() -> bool:
        return found is not None and os.path.exists(found)

    res = kdisc_search(evaluate, space, **kwargs, **item, cancel=cancel if found else None)
    stop = kwargs.get("stop_at_k", item.get("stop_at_k"))
    if found is not None and stop is not None and res.max_k >= stop:
        try:
            open(found, "a").close()
        except OSError:
            pass
    return res


def kdisc_restarts(state, *, executor=None, init=None, seed: int = 0, restarts: int = RESTARTS,
                   chains: int = 128, budget_seconds: float | None = 60.0, max_iters: int | None = None,
                   early_stop: bool = True) -> KDiscResult:
    """The search as ``restarts`` independent restarts (``chains // restarts`` chains each, seeds
    from :func:`restart_seeds`) run through the executor and merged in restart order
    (:func:`merge_restarts`), so with a budget in iterations the result is the same whatever
    runs them. ``state`` is ``(evaluate, space, kwargs)``, or ``init=(factory, args)`` builds it
    in each worker. A time budget is shared so that the wall time stays about ``budget_seconds``:
    each restart gets ``budget * min(workers, restarts) / restarts``, and none runs past the
    deadline. With ``early_stop`` (and ``stop_at_k`` in kwargs) the first restart to reach that k
    stops the others (on this machine; that makes the witness depend on timing, never the verdict)."""
    import os
    import tempfile

    from fairspec.runtime.executor import SerialExecutor

    ex = executor or SerialExecutor()
    per = None
    deadline = None
    if budget_seconds is not None:
        per = float(budget_seconds) * min(max(1, ex.workers), restarts) / restarts
        deadline = time.time() + float(budget_seconds)
    found = None
    if early_stop:
        fd, found = tempfile.mkstemp(prefix="fairspec-kdisc-", suffix=".found")
        os.close(fd)
        os.unlink(found)
    items = [{"seed": s, "chains": max(1, chains // restarts), "budget_seconds": per, "max_iters": max_iters,
              "deadline": deadline, "found": found} for s in restart_seeds(seed, restarts)]
    try:
        outs = ex.map(restart_job, items, shared=None if init is not None else state, init=init,
                      on_error=lambda item, why: why)
    finally:
        if found is not None and os.path.exists(found):
            os.unlink(found)
    ok = [r for r in outs if isinstance(r, KDiscResult)]
    if not ok:
        from fairspec.runtime.executor import JobError

        raise JobError("; ".join(sorted({str(r) for r in outs})) or "no restart ran")
    return merge_restarts(ok, seed)


def merge_restarts(results: list[KDiscResult], seed: int = 0) -> KDiscResult:
    """One result from restarts, in their order: max k over all; the witness of the first restart
    that reached it; the best individuals of all (by k, score spread, restart order); counts summed
    (``ids`` is the sum of each restart's distinct IDs: an individual found by two restarts counts twice)."""
    if len(results) == 1:
        return results[0]
    max_k = max(r.max_k for r in results)
    first = next(r for r in results if r.max_k == max_k)
    ranked = sorted(((-w.k, -(float(np.max(w.scores)) - float(np.min(w.scores))), q, j, w)
                     for q, r in enumerate(results) for j, w in enumerate(r.top)), key=lambda t: t[:4])
    keep = max(len(r.top) for r in results)
    top, seen = [], set()
    for *_, w in ranked:
        key = np.asarray(w.x, dtype=np.float64).round(9).tobytes()
        if key in seen:
            continue
        seen.add(key)
        top.append(w)
        if len(top) >= keep:
            break
    candidates = sum(r.candidates for r in results)
    id_states = sum(r.success_rate * r.candidates for r in results)
    k_sum = sum(r.avg_k * r.success_rate * r.candidates for r in results)
    firsts = [r.seconds_to_first_id for r in results if r.seconds_to_first_id is not None]
    at_max = [r.seconds_to_max_k for r in results if r.max_k == max_k and r.seconds_to_max_k is not None]
    history, best = [], 0
    for t, k in sorted(h for r in results for h in r.history):
        if k > best:
            history.append((t, k))
            best = k
    return KDiscResult(
        max_k=max_k, K=first.K, eps=first.eps, method=first.method, cluster=first.cluster, witness=first.witness,
        top=tuple(top), ids=sum(r.ids for r in results),
        ids_at_max_k=sum(r.ids_at_max_k for r in results if r.max_k == max_k), candidates=candidates,
        success_rate=(id_states / candidates) if candidates else 0.0,
        avg_k=(k_sum / id_states) if id_states else 0.0,
        seconds_to_first_id=min(firsts) if firsts else None, seconds_to_max_k=min(at_max) if at_max else None,
        seconds=max(r.seconds for r in results), iterations=sum(r.iterations for r in results),
        evaluations=sum(r.evaluations for r in results), seed=seed, history=tuple(history))


def k_of_inputs(evaluate: Callable[[np.ndarray], np.ndarray], space: Space, X: np.ndarray, *,
                eps: float = 0.05, scores: str = "logit", cluster: str = "buckets") -> np.ndarray:
    """k for model-input rows X (n, d) (their protected coordinates are replaced by every
    combination): one batched evaluation of n * K rows."""
    S = space.from_inputs(np.atleast_2d(np.asarray(X, dtype=np.float64)))
    _, k, _, _ = _KEval(evaluate, space, eps, scores, cluster, False)(S)
    return k


def milp_solver(problem, *, radius: float = 0.1, time_limit: float = 1.0, per_call: int = 1,
                engine: str | None = None) -> Callable[[np.ndarray], np.ndarray]:
    """HyFair's Solver(D, Z, X, seed) for ``kdisc_search(solver=...)``: helper 3a's MILP
    ``find`` on the pair problem restricted to a box around each seed (shared inputs within
    ``radius`` of their range, protected inputs free), returning the witness's x, or NaN
    rows where no 2-discriminant was found in ``time_limit``. At most ``per_call`` seeds are
    solved per call (the rest get NaN, i.e. the search's own local move), so the MILP
    re-seeds the search without stalling it."""
    from fairspec.backends import milp

    lo0, hi0 = np.asarray(problem.lo, dtype=np.float64), np.asarray(problem.hi, dtype=np.float64)
    span = hi0 - lo0
    free = set(problem.free) | {i for i, _ in problem.relaxed}
    shared = np.array([i not in free for i in range(problem.n)])
    kw = {} if engine is None else {"engine": engine}

    def solve(X: np.ndarray) -> np.ndarray:
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        out = np.full_like(X, np.nan)
        for r in range(min(per_call, X.shape[0])):
            lo = np.where(shared, np.maximum(lo0, X[r] - radius * span), lo0)
            hi = np.where(shared, np.minimum(hi0, X[r] + radius * span), hi0)
            lo = np.where(problem.integer, np.floor(lo), lo)
            hi = np.where(problem.integer, np.ceil(hi), hi)
            try:
                res = milp.find(problem.restrict(lo, hi), time_limit=time_limit, **kw)
            except Exception:  # noqa: BLE001 - a solver failure is "no solution" here
                continue
            if res.status == "violated" and res.witness is not None:
                out[r] = np.asarray(res.witness.x, dtype=np.float64)
        return out

    return solve
