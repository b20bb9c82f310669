"""The undecided share of FairQuant's quantification, split by an *estimate* with its bound
(issue 24; the charter's second kind of ``holds``: estimated, never proved).

:mod:`fairspec.backends.quantify` counts the certified / falsified / undecided shares of the domain
of individuals exactly. Where the unfair individuals form a slab thinner than one integer step
(bench/results/fairify_shares2.md), no box proof can shrink the undecided share below the unfair
share. What an auditor can still have is an estimate of how the undecided part splits:

1. the **undecided boxes** (:func:`undecided_boxes`): every partition without a certified ``holds``
   (or, after FairQuant's refinement, the sub-boxes its budget left in the queue), less what the
   shares count as decided inside them (boxes proved unfair, replayed counterexample points);
2. ``samples`` individuals **drawn uniformly** from them (:func:`draw_undecided`): a box chosen in
   proportion to its measure (integer points, or volume, as the shares), then a uniform individual
   of it; one that lies in a decided region is rejected and drawn again (seeded numpy Generator:
   the same seed gives the same individuals);
3. each sampled individual **decided on the runtime** (:func:`estimate_undecided`) under every
   protected value, over every ordered pair the property quantifies over (the exact comparison of
   :func:`fairspec.certify.enumerate.count_individuals`, as the refinement's enumeration); each one
   counted unfair is a counterexample only once its pair replays on the runtime
   (:func:`fairspec.backends.pair.certify.replays`, the witnesses' own check), else it counts as
   neither fair nor unfair;
4. the sampled unfair and fair proportions with **exact Clopper-Pearson intervals** at the stated
   confidence (``scipy.stats.binomtest(...).proportion_ci(method="exact")``), scaled to shares of
   the domain: estimated unfair = falsified + undecided x p (interval likewise); a sampled individual
   neither fair nor unfair may be either, so it is in the upper end of both intervals
   (:func:`neither_widened`; an interval of the decided ones alone excluded the true fair share when
   many sampled individuals were exact ties, audit s19 engines #4).

Undecided individuals the boxes cannot reach (an enumerated sub-box's individuals left neither fair
nor unfair, a single individual the refinement dropped) are ``unsampled``: they widen the upper end
of every interval by their share, never the estimate. The estimate never makes a verdict ``holds``
and is never added to the certified or falsified shares; a sampled unfair individual whose pair
replays is a counterexample like any other (:func:`violated_by_sample`: a partitioned ``unknown``
becomes ``violated`` with it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Sequence

import numpy as np

from fairspec.backends.quantify import INTEGER_POINTS, _kind, fmt_percent, individual_inputs, measure
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly

__all__ = ["Estimate", "undecided_boxes", "draw_undecided", "estimate_undecided", "estimate_shares",
           "violated_by_sample", "DEFAULT_SAMPLES"]

#: individuals drawn from the undecided part by default (the ``estimate`` option; 0: none)
DEFAULT_SAMPLES = 10_000
#: at most this many proposals per requested individual before the sampler gives up
MAX_PROPOSALS = 200
METHOD = "Clopper-Pearson (exact binomial)"


@dataclass(frozen=True)
class Estimate:
    """An estimate of how the undecided share splits into unfair and fair individuals.

    samples, seed, confidence: the sample size, the numpy seed and the confidence of the intervals.
    unfair, fair, other:       sampled individuals counted unfair (their pair replayed), fair, neither.
    certified, falsified, undecided: the exact shares (copied from the Shares, never changed).
    unsampled:                 the part of ``undecided`` the sampler cannot reach (a share of the domain).
    unfair_ci, fair_ci:        Clopper-Pearson intervals of the sampled proportions (of the sampled part),
                               the neither ones in both upper ends (:func:`neither_widened`).
    counterexample:            the first sampled unfair individual's replayed pair (x, x'), or None.
    reason:                    why there is no estimate ("" when there is one)."""

    samples: int = 0
    seed: int = 0
    confidence: float = 0.95
    unfair: int = 0
    fair: int = 0
    other: int = 0
    certified: Fraction = Fraction(0)
    falsified: Fraction = Fraction(0)
    undecided: Fraction = Fraction(0)
    unsampled: Fraction = Fraction(0)
    unfair_ci: tuple[float, float] = (0.0, 1.0)
    fair_ci: tuple[float, float] = (0.0, 1.0)
    counterexample: tuple | None = field(default=None, compare=False)
    reason: str = ""

    @property
    def sampled(self) -> Fraction:
        """The share of the domain the individuals were drawn from (the undecided share less ``unsampled``)."""
        return self.undecided - self.unsampled

    def _scaled(self, p: float, ci, base: Fraction) -> tuple[float, float, float]:
        s, u = float(self.sampled), float(self.unsampled)
        return float(base) + s * p, float(base) + s * ci[0], float(base) + s * ci[1] + u

    @property
    def unfair_of_undecided(self) -> tuple[float, float, float]:
        """(estimate, low, high): the share of the undecided part that is unfair."""
        if not self.undecided or not self.samples:
            return 0.0, 0.0, 1.0
        e, lo, hi = self._scaled(self.unfair / self.samples, self.unfair_ci, Fraction(0))
        d = float(self.undecided)
        return e / d, lo / d, min(1.0, hi / d)

    @property
    def unfair_in_undecided(self) -> tuple[float, float, float]:
        """(estimate, low, high): unfair individuals of the undecided part, as a share of the domain."""
        return self._scaled(self.unfair / max(self.samples, 1), self.unfair_ci, Fraction(0))

    @property
    def fair_in_undecided(self) -> tuple[float, float, float]:
        return self._scaled(self.fair / max(self.samples, 1), self.fair_ci, Fraction(0))

    @property
    def unfair_of_domain(self) -> tuple[float, float, float]:
        """(estimate, low, high): falsified + undecided x p, the estimated unfair share of the domain."""
        return self._scaled(self.unfair / max(self.samples, 1), self.unfair_ci, self.falsified)

    @property
    def fair_of_domain(self) -> tuple[float, float, float]:
        """(estimate, low, high): certified + undecided x p, the estimated fair share of the domain."""
        return self._scaled(self.fair / max(self.samples, 1), self.fair_ci, self.certified)

    def line(self) -> str:
        """``undecided 44.38%: estimated 9.20% unfair [8.91, 9.57] and 35.18% fair [...] at 95% (...)``."""
        if self.reason:
            return f"undecided {fmt_percent(self.undecided)}: no estimate ({self.reason})"
        u, f = self.unfair_in_undecided, self.fair_in_undecided
        of = self.unfair_of_undecided
        conf = f"{_spec_number(round(self.confidence * 100, 10))}%"
        extra = []
        if self.other:
            extra.append(f"{self.other:,} neither fair nor unfair, in both upper ends")
        if self.unsampled:
            extra.append(f"{fmt_percent(self.unsampled)} of the domain unsampled, in the upper ends")
        return (f"undecided {fmt_percent(self.undecided)}: estimated {_pc(u[0])} unfair [{_pc(u[1], 0)}, "
                f"{_pc(u[2], 0)}] and {_pc(f[0])} fair [{_pc(f[1], 0)}, {_pc(f[2], 0)}] of the domain at {conf} "
                f"({_pc(of[0])} of the undecided part unfair; {self.samples:,} sampled individuals, seed "
                f"{self.seed}, {METHOD}" + "".join(f"; {x}" for x in extra) + ")")

    def to_json(self) -> dict:
        if self.reason:
            return {"estimated": False, "reason": self.reason, "samples": self.samples, "seed": self.seed,
                    "summary": self.line()}

        def tri(t):
            return {"estimate_percent": 100 * t[0], "interval_percent": [100 * t[1], 100 * t[2]]}

        ce = None
        if self.counterexample is not None:
            ce = {"x": [float(v) for v in self.counterexample[0]],
                  "x_prime": [float(v) for v in self.counterexample[1]]}
        return {"estimated": True, "method": METHOD, "confidence": self.confidence, "samples": self.samples,
                "seed": self.seed, "sampled_unfair": self.unfair, "sampled_fair": self.fair,
                "sampled_neither": self.other, "undecided": str(self.undecided),
                "unsampled": str(self.unsampled),
                "estimated_unfair_of_undecided": tri(self.unfair_of_undecided),
                "estimated_unfair_in_undecided": tri(self.unfair_in_undecided),
                "estimated_fair_in_undecided": tri(self.fair_in_undecided),
                "estimated_unfair_of_domain": tri(self.unfair_of_domain),
                "estimated_fair_of_domain": tri(self.fair_of_domain),
                "sampled_counterexample": ce,
                "note": "an estimate from individuals drawn uniformly from the undecided part, not a proof; "
                        "the certified and falsified shares do not include it",
                "summary": self.line()}


def _pc(x: float, digits: int | None = None) -> str:
    """A share as a percentage: two decimals, or two significant digits below 0.1%."""
    p = 100 * x
    if p == 0:
        return "0%" if digits is None else "0"
    s = f"{p:.2f}" if abs(p) >= 0.1 else f"{p:.2g}"
    return s + ("%" if digits is None else "")


# ---------------------------------------------------------------------------------------------
# The undecided boxes
# ---------------------------------------------------------------------------------------------

@dataclass
class UndecidedBoxes:
    """The undecided part of the domain: ``boxes`` ``(k, lo, hi, measure)`` (disjoint), less the
    regions ``exclude[k]`` (boxes inside partition ``k`` the shares count as decided) and the
    individuals ``points`` (replayed counterexamples, counted falsified); ``measure`` is the exact
    measure of what is left, ``unsampled`` the undecided measure outside the boxes."""

    boxes: list
    exclude: dict
    points: set
    measure: int | Fraction = 0
    unsampled: int | Fraction = 0

    def arrays(self):
        """(K, LO, HI, W): the boxes' partitions, bounds and float measures as arrays (built once)."""
        if getattr(self, "_arrays", None) is None:
            n = len(self.boxes)
            # np.concatenate, not np.stack: 5x faster on the 10^6 queue boxes of a long refinement
            self._arrays = (np.fromiter((b[0] for b in self.boxes), dtype=np.int64, count=n),
                            np.asarray(np.concatenate([b[1] for b in self.boxes]), dtype=np.float64).reshape(n, -1),
                            np.asarray(np.concatenate([b[2] for b in self.boxes]), dtype=np.float64).reshape(n, -1),
                            np.fromiter((float(b[3]) for b in self.boxes), dtype=np.float64, count=n))
        return self._arrays


def _certified(r) -> bool:
    return r is not None and r.status == "holds" and getattr(r, "proof", None) is not None


def undecided_boxes(problem, parts, results, shares, refined=None, replay=None) -> UndecidedBoxes | None:
    """The undecided part of ``problem``'s domain as :func:`fairspec.backends.quantify.count_shares`
    counts it (same ``parts`` and ``results``; ``refined`` the :class:`fairspec.backends.refine.Refined`
    or None; grown unfair boxes from ``results[k].stats["unfair_boxes"]``). None when its measure
    exceeds the shares' undecided measure (the two disagree: no estimate).

    The refinement's queue boxes and its decided sub-boxes tile each refined partition (disjoint), so
    a counterexample point inside a queue box of its partition lies in no decided sub-box: the shares
    count it as falsified unless a grown unfair box they count holds it -- exactly when it is excluded
    here."""
    from fairspec.backends.quantify import _point

    if replay is None:
        from fairspec.backends.pair.certify import replays

        def replay(x, xp):
            return replays(problem, x, xp)
    inputs = individual_inputs(problem)
    idx = list(inputs)
    refined_parts = set()
    for k, _kind_, _lo, _hi, _nf, _nu, proof in ([] if refined is None else refined.decided):
        if proof is not None and not _certified(results[k]):
            refined_parts.add(k)
    exclude: dict[int, list] = {}
    for k, r in enumerate(results):     # boxes grown around a witness, counted where no refinement decided
        if r is None or r.status == "holds" or k in refined_parts:
            continue
        for lo, hi, _proof in (r.stats or {}).get("unfair_boxes", ()):
            exclude.setdefault(k, []).append((np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)))
    if refined is not None and (refined.decided or refined.undecided or not refined.reason):
        # the refinement queues only partitions without a certified holds
        cert = {k for k, r in enumerate(results) if _certified(r)}
        boxes = refined.undecided if not cert else [b for b in refined.undecided if b[0] not in cert]
    else:
        boxes = [(k, lo, hi, measure(problem, lo, hi))
                 for k, ((lo, hi), r) in enumerate(zip(parts, results)) if not _certified(r)]
    und = UndecidedBoxes(boxes, exclude, set())
    total: int | Fraction = sum((b[3] for b in boxes), 0)
    undecided = shares.undecided * shares.domain
    if not boxes:
        und.unsampled = undecided
        return und
    K, LO, HI, _W = und.arrays()
    order = np.argsort(K, kind="stable")
    Ks = K[order]

    def rows_of(k):                     # the rows of partition k's boxes
        a, b = np.searchsorted(Ks, k, side="left"), np.searchsorted(Ks, k, side="right")
        return order[a:b]

    for k, ex in exclude.items():
        rows = rows_of(k)
        for e in ex:
            L, H = np.maximum(LO[rows], e[0]), np.minimum(HI[rows], e[1])
            for j in np.flatnonzero(np.all(L[:, idx] <= H[:, idx], axis=1)).tolist():
                total -= measure(problem, L[j], H[j])
    if _kind(problem) == INTEGER_POINTS:
        for k, r in enumerate(results):
            if r is None or r.status != "violated" or r.witness is None:
                continue
            x = np.asarray(r.witness.x, dtype=np.float64)
            xp = np.asarray(r.witness.x_prime, dtype=np.float64)
            if not replay(x, xp):
                continue
            rows = rows_of(k)
            for y in (x, xp):
                t = _point(problem, y, inputs)
                if t in und.points:
                    continue
                yi = y[idx]
                if not np.any(np.all((LO[rows][:, idx] <= yi) & (yi <= HI[rows][:, idx]), axis=1)):
                    continue            # not in the undecided boxes
                if any(np.all(a[idx] <= yi) and np.all(yi <= b[idx]) for a, b in exclude.get(k, ())):
                    continue            # in a grown unfair box the shares count
                und.points.add(t)
                total -= 1
    if total > undecided or total < 0:
        return None
    und.measure, und.unsampled = total, undecided - total
    return und


# ---------------------------------------------------------------------------------------------
# Sampling
# ---------------------------------------------------------------------------------------------

def _uniform_in(problem, rng, LO, HI) -> np.ndarray:
    """One uniform individual in each box (rows of LO, HI): integer inputs uniform over their
    integers, real-valued ones over their interval, a one-hot group uniform over its allowed
    categories (one forced by ``lo`` is kept); the free inputs are left at ``lo``."""
    n, d = LO.shape
    X = LO.copy()
    free = set(problem.free)
    grouped = {i for g in problem.onehot_groups for i in g}
    for i in range(d):
        if i in free or i in grouped:
            continue
        if problem.integer[i]:
            X[:, i] = rng.integers(np.ceil(LO[:, i]).astype(np.int64), np.floor(HI[:, i]).astype(np.int64) + 1)
        else:
            X[:, i] = LO[:, i] + (HI[:, i] - LO[:, i]) * rng.random(n)
    for g in problem.onehot_groups:
        if free.intersection(g):
            continue
        g = list(g)
        allowed = (HI[:, g] >= 1) & ~np.any(LO[:, g] >= 1, axis=1, keepdims=True) | (LO[:, g] >= 1)
        u = rng.random(n)
        cnt = allowed.sum(axis=1)
        pick = np.minimum((u * cnt).astype(np.int64), np.maximum(cnt - 1, 0))
        order = np.cumsum(allowed, axis=1) - 1
        onehot = allowed & (order == pick[:, None])
        X[:, g] = onehot.astype(np.float64)
    return X


def draw_undecided(problem, und: UndecidedBoxes, n: int, seed: int) -> np.ndarray | None:
    """``n`` individuals drawn uniformly from the undecided part (rows; the free inputs at their
    box's lower end): a box in proportion to its measure, a uniform individual of it, rejected and
    drawn again when it lies in an excluded box or is a counterexample point. None when the part is
    empty or the rejections exceed ``MAX_PROPOSALS`` per individual."""
    if n <= 0 or not und.boxes or und.measure <= 0:
        return None
    rng = np.random.default_rng(seed)
    K, LO_all, HI_all, w = und.arrays()
    cum = np.cumsum(w)
    inputs = list(individual_inputs(problem))
    got, have, tried = [], 0, 0
    while have < n:
        if tried > MAX_PROPOSALS * n:
            return None
        m = max(64, 2 * (n - have))
        tried += m
        j = np.minimum(np.searchsorted(cum, rng.random(m) * cum[-1], side="right"), len(cum) - 1)
        X = _uniform_in(problem, rng, LO_all[j], HI_all[j])
        keep = np.ones(m, dtype=bool)
        Kj = K[j]
        for k in sorted(set(Kj.tolist()) & set(und.exclude)):
            rows = np.flatnonzero(Kj == k)
            for lo, hi in und.exclude[k]:
                inside = np.all((X[rows][:, inputs] >= lo[inputs]) & (X[rows][:, inputs] <= hi[inputs]), axis=1)
                keep[rows[inside]] = False
        if und.points:
            for r in np.flatnonzero(keep).tolist():
                if tuple(float(v) for v in X[r, inputs]) in und.points:
                    keep[r] = False
        X = X[keep][: n - have]
        got.append(X)
        have += X.shape[0]
    return np.concatenate(got)


# ---------------------------------------------------------------------------------------------
# The estimate
# ---------------------------------------------------------------------------------------------

def _pairs(problem):
    from fairspec.backends.counterfactuals import protected_cases_of

    cases = protected_cases_of(problem)
    if cases is None:
        return None, None
    must = set(problem.must_differ)
    pairs = [(a, b) for a in range(len(cases)) for b in range(len(cases))
             if a != b and any(cases[a].get(i) != cases[b].get(i) for i in must)]
    return cases, pairs


def _with_case(X, case):
    Xc = X.copy()
    for i, v in case.items():
        Xc[:, i] = v
    return Xc


def clopper_pearson(k: int, n: int, confidence: float) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a binomial proportion ``k / n``: the beta quantiles
    ``B(a/2; k, n-k+1)`` and ``B(1-a/2; k+1, n-k)`` (scipy.special.betaincinv, as
    ``scipy.stats.binomtest(k, n).proportion_ci(method="exact")`` computes them, without importing
    scipy.stats)."""
    from scipy.special import betaincinv

    k, n, a = int(k), int(n), 1.0 - float(confidence)
    lo = 0.0 if k == 0 else float(betaincinv(k, n - k + 1, a / 2))
    hi = 1.0 if k == n else float(betaincinv(k + 1, n - k, 1 - a / 2))
    return lo, hi


def neither_widened(unfair: int, fair: int, n: int, confidence: float):
    """(unfair interval, fair interval) of ``n`` sampled individuals, ``unfair`` and ``fair`` of them
    decided, the rest *neither* (within the runtime's rounding, or a pair that did not replay): each
    interval runs from the Clopper-Pearson lower end of its decided count to the upper end of that
    count plus the neither ones. A neither individual may be fair or unfair; the true count lies between
    the two, and both ends are monotone in the count, so the interval covers the true proportion at
    least as often as the Clopper-Pearson interval of the true count does."""
    other = n - unfair - fair
    u, f = clopper_pearson(unfair, n, confidence), clopper_pearson(fair, n, confidence)
    if other <= 0:
        return u, f
    return ((u[0], clopper_pearson(unfair + other, n, confidence)[1]),
            (f[0], clopper_pearson(fair + other, n, confidence)[1]))


def evaluate_individuals(problem, X, replay=None):
    """Each row of ``X`` (an individual) decided on the runtime under every protected value:
    (fair, unfair, first replayed pair or None) boolean arrays; an individual counted unfair whose
    pair does not replay is neither. None when the protected values cannot be enumerated.

    The candidates' pairs are replayed in rounds, one batch per round (round r: each candidate not yet
    replayed, its r-th pair in its order), by :func:`fairspec.backends.pair.certify.replays_many`: a
    pair another batch of the runtime may decide otherwise is replayed alone there, every other pair is
    decided alike in any batch, so the counts and the first pair are those of replaying each candidate's
    pairs one at a time in order (the first pair: the lowest-numbered unfair individual's first pair
    that replays). A ``replay`` given here is called pair by pair."""
    from fairspec.backends.counterfactuals import batch_scores, compared_scores, counted_scores, runtime_scorer
    from fairspec.certify.enumerate import count_individuals

    cases, pairs = _pairs(problem)
    if not pairs:
        return None
    if replay is None:
        from fairspec.backends.pair.certify import replays_many

        def many(A, B):
            return replays_many(problem, A, B)
    else:
        def many(A, B):
            return np.array([bool(replay(a, b)) for a, b in zip(A, B)], dtype=bool)
    n = X.shape[0]
    Xc = [_with_case(X, c) for c in cases]
    # the runtime's scores in one batch (a network's runtime, or the model's own forward, which is
    # what the replay checks without a runtime); without a batch scorer every pair is replayed
    scorer = runtime_scorer(problem) if getattr(problem, "net", None) is not None else None
    order = [pairs] * n
    if scorer is not None:
        # an individual another batch of a float runtime may decide otherwise: neither fair nor unfair
        S, unsure = batch_scores(scorer, X, cases, pairs)
        C, post, opts = counted_scores(scorer, X, cases, S)
        res = count_individuals(C, pairs, post, eps=problem.eps, decision_threshold=scorer.threshold,
                                eps_strict=problem.eps_strict, unsure=unsure, readout=scorer.readout, **opts,
                                claim="sampled individuals counted on the model's runtime (an estimate, not a proof)")
        fair, cand = np.asarray(res.fair, dtype=bool), np.asarray(res.unfair, dtype=bool)
        # the pair most likely to break the post first: the highest-scoring case against the lowest
        Z = np.stack([np.asarray(z, dtype=np.float64).reshape(-1) for z in compared_scores(scorer, S)])
        hi_c, lo_c = np.argmax(Z, axis=0), np.argmin(Z, axis=0)
        allowed = set(pairs)
        for i in np.flatnonzero(cand).tolist():
            first_try = [q for q in ((int(hi_c[i]), int(lo_c[i])), (int(lo_c[i]), int(hi_c[i]))) if q in allowed]
            order[i] = first_try + [q for q in pairs if q not in first_try]
    else:                               # no batch scorer: every pair replayed
        fair, cand = np.zeros(n, dtype=bool), np.ones(n, dtype=bool)
    unfair = np.zeros(n, dtype=bool)
    found = {}                          # individual -> its first pair (a, b) that replays
    left = np.flatnonzero(cand)
    for r in range(len(pairs)):
        if not left.size:
            break
        A = np.array([order[i][r][0] for i in left.tolist()], dtype=np.int64)
        B = np.array([order[i][r][1] for i in left.tolist()], dtype=np.int64)
        XA = np.stack([Xc[a][i] for a, i in zip(A.tolist(), left.tolist())])
        XB = np.stack([Xc[b][i] for b, i in zip(B.tolist(), left.tolist())])
        hit = many(XA, XB)
        for i, a, b in zip(left[hit].tolist(), A[hit].tolist(), B[hit].tolist()):
            unfair[i] = True
            found[i] = (a, b)
        left = left[~hit]
    if scorer is None:
        fair[left] = True               # every pair replayed, none broke the post
    first = None
    if found:
        i = min(found)
        a, b = found[i]
        first = (Xc[a][i].copy(), Xc[b][i].copy())
    return fair, unfair & ~fair, first


def estimate_undecided(problem, shares, und: UndecidedBoxes | None, *, samples: int = DEFAULT_SAMPLES,
                       seed: int = 0, confidence: float = 0.95, replay=None) -> Estimate:
    """The estimate of the undecided part's split (see the module docstring)."""
    base = dict(samples=int(samples), seed=int(seed), confidence=float(confidence), certified=shares.certified,
                falsified=shares.falsified, undecided=shares.undecided)
    if problem.relaxed:
        return Estimate(**base, reason="a relaxed input's pairs cannot be enumerated per individual")
    if und is None:
        return Estimate(**base, reason="the undecided boxes do not match the shares")
    cases, pairs = _pairs(problem)
    if not pairs:
        return Estimate(**base, reason="the protected inputs take too many values to enumerate")
    X = draw_undecided(problem, und, int(samples), int(seed))
    if X is None:
        return Estimate(**base, reason="no individual could be drawn from the undecided boxes")
    try:
        out = evaluate_individuals(problem, X, replay)
    except (ValueError, TypeError, AttributeError, ArithmeticError) as e:    # outside what the runtime takes
        return Estimate(**base, reason=f"the sampled individuals could not be evaluated: {e}")
    if out is None:
        return Estimate(**base, reason="the protected inputs take too many values to enumerate")
    fair, unfair, first = out
    nu, nf = int(unfair.sum()), int(fair.sum())
    n = X.shape[0]
    try:
        uci, fci = neither_widened(nu, nf, n, confidence)
    except ImportError:
        return Estimate(**base, reason="scipy is not installed (pip install specfair[solvers])")
    return Estimate(**{**base, "samples": n}, unfair=nu, fair=nf, other=n - nu - nf,
                    unsampled=Fraction(und.unsampled) / shares.domain, unfair_ci=uci, fair_ci=fci,
                    counterexample=first)


def estimate_shares(problem, parts: Sequence, results: Sequence, shares, refined=None, *,
                    samples: int = DEFAULT_SAMPLES, seed: int = 0, confidence: float = 0.95,
                    replay=None) -> Estimate | None:
    """The estimate for a partitioned decision's shares (None when there is nothing undecided or
    ``samples`` is 0)."""
    if shares is None or not samples or shares.undecided == 0:
        return None
    und = undecided_boxes(problem, parts, results, shares, refined, replay)
    return estimate_undecided(problem, shares, und, samples=samples, seed=seed, confidence=confidence,
                              replay=replay)


def violated_by_sample(problem, res, est: Estimate | None, mode: str):
    """``res`` (a partitioned ``unknown``, find / prove) as ``violated`` when the estimate's sampled
    individuals hold a counterexample: its pair replayed on the runtime (:func:`evaluate_individuals`),
    it is a witness like any other (replayed again on the loaded model by the caller); the shares and
    the estimate stay as they are. Anything else: ``res`` unchanged."""
    from dataclasses import replace

    if res.status != "unknown" or mode not in ("find", "prove") or est is None or est.counterexample is None:
        return res
    from fairspec.backends.pair import pair_measure
    from fairspec.backends.pair.problem import make_witness

    x, xp = est.counterexample
    w = make_witness(problem, x, xp)
    if w.z < w.z_prime:                 # as the decision pass orders a refuted partition's pair
        w = make_witness(problem, xp, x)
    return replace(res, status="violated", how=None, value=float(pair_measure(problem.post, w.z, w.z_prime)),
                   bound=None, witness=w, best=w, proof=None,
                   reason=f"{res.reason}; an individual sampled from the undecided share is unfair: its pair "
                          "replays on the runtime")

