"""Falsify first: batched search for pairs (x, x') that violate a pair property.

Pairs agree on every shared coordinate, differ in the protected attributes
(every pair of distinct protected combinations when ``must_differ``), and may
differ by at most t on relaxed coordinates. Three phases, every one batched:

1. seeds: inputs handed in (e.g. the MILP's witnesses), with all their
   protected counterfactuals;
2. data: every data row with every protected counterfactual;
3. search: a population of the best states so far; each round every parent gets
   ``children`` mutants (``Space.mutate``), all evaluated in one batch, and a
   parent is replaced by its best child when that child is at least as good
   (greedy hill climbing on ``Post.objective``, drifting across plateaus);
   parents that stop improving restart from a data row or a random point.

For one state the best pair among its K counterfactuals is (argmax, argmin)
of the transformed scores (the objective is monotone in both arguments), so a
state costs K model rows (2K with relaxed coordinates, where the full K x K
pair matrix is scanned).

Deterministic given ``seed`` and a count limit (``max_evals`` / ``max_rounds``);
a time budget only decides where the same sequence stops.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np

from fairspec.syntax.literals import shown as _shown

from .post import Post
from .space import Space


@dataclass(frozen=True, eq=False)
class Witness:
    """A violating pair in model-input space, with the evaluator's raw scores."""

    x: np.ndarray
    x_prime: np.ndarray
    score: float
    score_prime: float
    violation: float
    source: str          # "seed" | "data" | "random" | "search"
    seconds: float       # when it was found, from the start of the search

    def to_dict(self) -> dict:
        return {"x": [float(v) for v in self.x], "x_prime": [float(v) for v in self.x_prime],
                "score": float(self.score), "score_prime": float(self.score_prime),
                "violation": float(self.violation), "source": self.source, "seconds": float(self.seconds)}


@dataclass(frozen=True, eq=False)
class SearchResult:
    """status: "violated" (witnesses found; replay them before trusting) or "unknown"
    (a search never proves anything). ``ids``: distinct individuals (shared part)
    with a violating pair; ``best_objective``: the best ``Post.objective`` seen
    (> 0 iff violated), a lower bound on the worst violation."""

    status: str
    how: str
    witnesses: tuple[Witness, ...]
    ids: int
    seconds_to_first: float | None
    seconds: float
    evaluations: int
    rounds: int
    best_objective: float
    best_pair: tuple[np.ndarray, np.ndarray] | None
    ids_by_source: dict = field(default_factory=dict)
    seed: int = 0
    reason: str = ""
    ids_capped: bool = False
    first_witness: Witness | None = None   # the first violation found (may not be among ``witnesses``)

    @property
    def violated(self) -> bool:
        return self.status == "violated"


@dataclass(eq=False)
class PairScores:
    obj: np.ndarray        # (n,) best objective over the state's pairs
    viol: np.ndarray       # (n,) bool
    size: np.ndarray       # (n,) Post.violation of the best pair
    i: np.ndarray          # (n,) index of x's combination
    j: np.ndarray          # (n,) index of x''s combination
    raw: np.ndarray        # (n, K)
    raw_prime: np.ndarray  # (n, K)


def pair_scores(evaluate: Callable, space: Space, post: Post, S: np.ndarray,
                must_differ: bool = True) -> PairScores:
    """Score every state: the best pair among its counterfactuals."""
    S = np.asarray(S, dtype=np.float64)
    n, K, d = S.shape[0], space.K, space.d
    if n == 0:
        e = np.zeros(0)
        return PairScores(e, e.astype(bool), e, e.astype(int), e.astype(int), np.zeros((0, K)), np.zeros((0, K)))
    X = space.expand(S)
    raw = np.asarray(evaluate(X.reshape(-1, d)), dtype=np.float64).reshape(n, K)
    A = post.transform(raw)
    rows = np.arange(n)
    if space.has_relaxed:
        Xp = space.expand_prime(S)
        rawp = np.asarray(evaluate(Xp.reshape(-1, d)), dtype=np.float64).reshape(n, K)
        B = post.transform(rawp)
        M = post.objective(A[:, :, None], B[:, None, :])
        if must_differ and K > 1:
            M[:, np.arange(K), np.arange(K)] = -np.inf
        flat = np.argmax(M.reshape(n, -1), axis=1)
        i, j = flat // K, flat % K
    else:
        rawp, B = raw, A
        i = np.argmax(A, axis=1)
        j = np.argmin(A, axis=1)
        same = i == j
        if same.any():
            j = np.where(same, (i + 1) % K, j)
    a, b = A[rows, i], B[rows, j]
    return PairScores(post.objective(a, b), post.violated(a, b), post.violation(a, b), i, j, raw, rawp)


class IdCounter:
    """Distinct 64-bit keys in two sorted numpy arrays (a big one and a recent one,
    merged when the recent one reaches a quarter of the big one). Stops storing, and
    marks the count as a lower bound, beyond ``cap`` keys."""

    def __init__(self, cap: int = 20_000_000):
        self.cap = cap
        self.seen = np.zeros(0, dtype=np.uint64)
        self.recent = np.zeros(0, dtype=np.uint64)
        self.capped = False

    @staticmethod
    def _absent(sorted_arr: np.ndarray, h: np.ndarray) -> np.ndarray:
        if sorted_arr.size == 0:
            return np.ones(h.size, dtype=bool)
        pos = np.searchsorted(sorted_arr, h)
        pos[pos >= sorted_arr.size] = 0
        return sorted_arr[pos] != h

    def add(self, h: np.ndarray) -> int:
        """Add keys; returns how many were new."""
        if h.size == 0 or self.capped:
            return 0
        h = np.sort(h)
        if h.size > 1:
            h = h[np.concatenate(([True], h[1:] != h[:-1]))]
        h = h[self._absent(self.seen, h)]
        h = h[self._absent(self.recent, h)]
        if h.size:
            self.recent = np.insert(self.recent, np.searchsorted(self.recent, h), h)
            if self.recent.size > max(1 << 16, self.seen.size // 4):
                self.seen = np.insert(self.seen, np.searchsorted(self.seen, self.recent), self.recent)
                self.recent = np.zeros(0, dtype=np.uint64)
                if self.seen.size >= self.cap:
                    self.capped = True
        return int(h.size)

    def __len__(self) -> int:
        return int(self.seen.size + self.recent.size)


class _Recorder:
    """Distinct discriminatory instances and the best witnesses."""

    def __init__(self, space: Space, max_witnesses: int, t0: float, clock):
        self.space = space
        self.ids = IdCounter()
        self.by_source: dict[str, int] = {}
        self.pool: dict[bytes, Witness] = {}
        self.max_w = max_witnesses
        self.t0 = t0
        self.clock = clock
        self.first: float | None = None
        self.first_witness: Witness | None = None
        self.best_obj = -np.inf
        self.best_pair = None

    def add(self, S: np.ndarray, ps: PairScores, source: str, evaluate_inputs=None):
        if ps.obj.size == 0:
            return
        b = int(np.argmax(ps.obj))
        if ps.obj[b] > self.best_obj:
            self.best_obj = float(ps.obj[b])
            X = self.space.expand(S[b:b + 1])[0]
            Xp = self.space.expand_prime(S[b:b + 1])[0]
            self.best_pair = (X[ps.i[b]].copy(), Xp[ps.j[b]].copy())
        v = np.flatnonzero(ps.viol)
        if v.size == 0:
            return
        now = self.clock() - self.t0
        if self.first is None:
            self.first = now
            r = int(v[np.argmax(ps.size[v])])
            X = self.space.expand(S[r:r + 1])[0]
            Xp = self.space.expand_prime(S[r:r + 1])[0] if self.space.has_relaxed else X
            self.first_witness = Witness(X[ps.i[r]].copy(), Xp[ps.j[r]].copy(), float(ps.raw[r, ps.i[r]]),
                                         float(ps.raw_prime[r, ps.j[r]]), float(ps.size[r]), source, now)
        self.by_source[source] = self.by_source.get(source, 0) + self.ids.add(self.space.hash_keys(S[v]))
        # witnesses: only the batch's best few reach the pool
        take = v
        if v.size > self.max_w:
            take = v[np.argpartition(-ps.size[v], self.max_w - 1)[: self.max_w]]
        keys = self.space.keys(S[take])
        floor = self._floor()
        X = Xp = None
        for r, key in zip(take, keys):
            size = float(ps.size[r])
            if len(self.pool) >= self.max_w and size <= floor:
                continue
            old = self.pool.get(key)
            if old is not None and old.violation >= size:
                continue
            if X is None:
                X = self.space.expand(S[take])
                Xp = self.space.expand_prime(S[take]) if self.space.has_relaxed else X
                pos = {int(t): q for q, t in enumerate(take)}
            q = pos[int(r)]
            self.pool[key] = Witness(X[q, ps.i[r]].copy(), Xp[q, ps.j[r]].copy(), float(ps.raw[r, ps.i[r]]),
                                     float(ps.raw_prime[r, ps.j[r]]), size, source, now)
            if len(self.pool) > 2 * self.max_w:
                self._prune()
                floor = self._floor()
        self._prune()

    def _floor(self) -> float:
        if len(self.pool) < self.max_w:
            return -np.inf
        return min(w.violation for w in self.pool.values())

    def _prune(self):
        if len(self.pool) > self.max_w:
            keep = sorted(self.pool.items(), key=lambda kv: -kv[1].violation)[: self.max_w]
            self.pool = dict(keep)

    def witnesses(self) -> tuple[Witness, ...]:
        return tuple(sorted(self.pool.values(), key=lambda w: (-w.violation, w.seconds)))


def falsify(evaluate: Callable[[np.ndarray], np.ndarray], space: Space, post: Post, *,
            data: np.ndarray | None = None,
            seeds: Iterable | None = None,
            seed: int = 0,
            budget_seconds: float | None = 10.0,
            max_evals: int | None = None,
            max_rounds: int | None = None,
            stop_at_first: bool = False,
            max_witnesses: int = 64,
            population: int = 128,
            children: int = 16,
            random_init: int | None = None,
            patience: int = 25,
            must_differ: bool = True,
            data_chunk: int = 16384,
            on_progress: Callable[[dict], None] | None = None,
            clock: Callable[[], float] = time.perf_counter) -> SearchResult:
    """Search for violating pairs.

    evaluate:  batched model, float64 (n, d) -> (n,) raw scores (logits or probabilities,
               as ``post.scores`` says).
    space:     the box, protected attributes (and relaxed coordinates).
    post:      the post-condition.
    data:      model-input rows (n, d): each row with all its counterfactuals.
    seeds:     model-input points or (x, x_prime) pairs to start from (solver witnesses).
    budget_seconds / max_evals / max_rounds: limits (any that is set stops the search).
    stop_at_first: return as soon as one violation is found.
    """
    t0 = clock()
    rng = np.random.default_rng(seed)
    if space.K < 2 and not space.has_relaxed:
        raise ValueError("a pair property needs at least two protected combinations (or relaxed coordinates)")
    rec = _Recorder(space, max_witnesses, t0, clock)
    evals = 0
    rounds = 0
    per_state = space.K * (2 if space.has_relaxed else 1)

    def out_of_budget() -> bool:
        if budget_seconds is not None and clock() - t0 >= budget_seconds:
            return True
        if max_evals is not None and evals >= max_evals:
            return True
        return False

    def done() -> bool:
        return (stop_at_first and rec.first is not None) or out_of_budget()

    def score(S, source):
        nonlocal evals
        ps = pair_scores(evaluate, space, post, S, must_differ)
        evals += S.shape[0] * per_state
        rec.add(S, ps, source)
        return ps

    pool_S: list[np.ndarray] = []
    pool_obj: list[np.ndarray] = []

    def keep_best(S, obj, limit):
        if S.shape[0] > limit:
            top = np.argpartition(-obj, limit - 1)[:limit]
            S, obj = S[top], obj[top]
        pool_S.append(S)
        pool_obj.append(obj)

    # 1. seeds --------------------------------------------------------------
    if seeds is not None:
        pts = []
        for s in seeds:
            if isinstance(s, (tuple, list)) and len(s) == 2 and np.ndim(s[0]) == 1:
                pts.extend([np.asarray(s[0], dtype=np.float64), np.asarray(s[1], dtype=np.float64)])
            elif hasattr(s, "x") and hasattr(s, "x_prime"):
                if s.x is not None:
                    pts.append(np.asarray(s.x, dtype=np.float64))
                if s.x_prime is not None:
                    pts.append(np.asarray(s.x_prime, dtype=np.float64))
            else:
                pts.append(np.asarray(s, dtype=np.float64).reshape(-1))
        if pts:
            S = space.from_inputs(np.vstack(pts))
            ps = score(S, "seed")
            keep_best(S, ps.obj, population)

    # 2. data rows ---------------------------------------------------------
    data_states = None
    if data is not None and not done():
        D = space.from_inputs(np.asarray(data, dtype=np.float64))
        # rows that differ only in protected coordinates are one individual
        _, first = np.unique(np.round(D[:, space.key_cols], 9), axis=0, return_index=True)
        D = D[np.sort(first)]
        data_states = D
        for a in range(0, D.shape[0], data_chunk):
            if done():
                break
            S = D[a:a + data_chunk]
            ps = score(S, "data")
            keep_best(S, ps.obj, population)

    # 3. random points --------------------------------------------------------
    n_rand = population * 4 if random_init is None else random_init
    if n_rand and not done():
        S = space.sample(rng, n_rand)
        ps = score(S, "random")
        keep_best(S, ps.obj, population)

    if pool_S:
        allS, allobj = np.vstack(pool_S), np.concatenate(pool_obj)
    else:
        allS, allobj = np.zeros((0, space.width)), np.zeros(0)
    if allS.shape[0] < population:
        extra = space.sample(rng, population - allS.shape[0])
        ps = score(extra, "random")
        allS, allobj = np.vstack([allS, extra]), np.concatenate([allobj, ps.obj])
    order = np.argsort(-allobj, kind="stable")[:population]
    P, Pobj = allS[order].copy(), allobj[order].copy()
    stale = np.zeros(P.shape[0], dtype=np.int64)

    # 4. greedy population search ---------------------------------------------
    while not done() and (max_rounds is None or rounds < max_rounds):
        C = space.mutate(rng, P, children)
        ps = score(C, "search")
        rounds += 1
        obj = ps.obj.reshape(P.shape[0], children)
        best = np.argmax(obj, axis=1)
        bobj = obj[np.arange(P.shape[0]), best]
        better = bobj >= Pobj
        strictly = bobj > Pobj + 1e-12
        P[better] = C[np.arange(P.shape[0]) * children + best][better]
        Pobj[better] = bobj[better]
        stale = np.where(strictly, 0, stale + 1)
        restart = np.flatnonzero(stale > patience)
        if restart.size:
            m = restart.size
            if data_states is not None and data_states.shape[0]:
                fromdata = rng.random(m) < 0.5
                R = space.sample(rng, m)
                idx = rng.integers(0, data_states.shape[0], m)
                R[fromdata] = data_states[idx[fromdata]]
            else:
                R = space.sample(rng, m)
            rps = score(R, "search")
            P[restart], Pobj[restart], stale[restart] = R, rps.obj, 0
        if on_progress is not None:
            on_progress({"evaluations": evals, "ids": len(rec.ids), "best": rec.best_obj,
                         "seconds": clock() - t0, "rounds": rounds})

    seconds = clock() - t0
    ws = rec.witnesses()
    status = "violated" if ws else "unknown"
    reason = "" if ws else (f"no violation found in {evals} model evaluations ({seconds:.1f} s); "
                            f"best objective {_shown(float(rec.best_obj), (0,))} (> 0 would be a violation)")
    return SearchResult(status, "search", ws, len(rec.ids), rec.first, seconds, evals, rounds,
                        float(rec.best_obj), rec.best_pair, dict(rec.by_source), seed, reason,
                        rec.ids.capped, rec.first_witness)


def replay(witnesses: Sequence[Witness], evaluate: Callable[[np.ndarray], np.ndarray], post: Post,
           space: Space | None = None) -> list[tuple[Witness, float, float]]:
    """Re-evaluate witnesses on an independent evaluator; keep those that still violate
    (and, when ``space`` is given, lie in the box). Returns (witness, score, score')."""
    if not witnesses:
        return []
    X = np.vstack([w.x for w in witnesses])
    Xp = np.vstack([w.x_prime for w in witnesses])
    s = np.asarray(evaluate(X), dtype=np.float64).reshape(-1)
    sp = np.asarray(evaluate(Xp), dtype=np.float64).reshape(-1)
    ok = post.violated(post.transform(s), post.transform(sp))
    if space is not None:
        ok &= space.box.contains(X) & space.box.contains(Xp)
    return [(w, float(a), float(b)) for w, a, b, k in zip(witnesses, s, sp, ok) if k]
