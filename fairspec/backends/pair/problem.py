"""The pair problem of individual fairness (Fairify's / HyFair's 2-fairness), solver-neutral.

Two copies of one network, inputs ``x`` and ``x'`` (the *counterfactual*):

* **pre-condition** — both inside the verification domain ``[lo, hi]`` (integral where
  ``integer``; each one-hot group exactly one); ``x_i == x'_i`` for every *tied* input
  (neither ``free`` nor ``relaxed``); ``|x_i - x'_i| <= t`` for each relaxed ``(i, t)``;
  at least one index in ``must_differ`` differs (Fairify: the protected attribute differs).
* **post-condition** (what fairness demands; a *violation* is a pair breaking it):

  ========  ==========================================  =====================================
  post      fair when                                   violation measure (directional)
  ========  ==========================================  =====================================
  label     ``(z > 0) == (z' > 0)`` (same decision)     flip margin ``min(z, -z')``
  logit     ``|z - z'| <= eps``                         ``z - z'``
  prob      ``|sigmoid(z) - sigmoid(z')| <= eps``       ``sigmoid(z) - sigmoid(z')``
  ========  ==========================================  =====================================

  where ``z = net.forward(x)`` is the logit. The pre-condition is symmetric in ``x, x'``, so
  a violation exists iff one exists with ``z >= z'``: every encoding fixes that direction,
  which removes the absolute value of HyFair's ``max |F1 - F2|`` objective.

  A pair violates ``label`` iff ``z > 0 >= z'`` (either order); ``logit``/``prob`` iff the
  measure is ``> eps`` (strict: ``|diff| == eps`` is fair). The **maximal violation** of a
  problem is the largest measure over all pairs satisfying the pre-condition (for ``label``
  the largest flip margin: positive iff some pair flips, ignoring the measure-zero case
  ``z' == 0``).

This module imports numpy only: no solver. :func:`brute_force` enumerates small integral
domains and is the ground truth of the tests; :func:`check_witness` re-checks a candidate
pair with any evaluator (the PLNet, or the real loaded model) and rejects forged ones.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator, Sequence

import numpy as np

from fairspec.certify.claims import tied_inputs
from fairspec.certify.proof import Proof
from fairspec.models.network import PLNet, sigmoid

__all__ = [
    "POSTS", "PairProblem", "Witness", "Coverage", "PairResult", "brute_force", "check_witness",
    "pair_measure", "is_violation", "enumerate_domain", "prob_cut", "logit_fn", "preconditions_hold",
]

POSTS = ("label", "prob", "logit")


def logit_fn(p: float) -> float:
    """The inverse of the logistic function (clipped away from 0 and 1)."""
    p = min(max(float(p), 1e-300), 1.0 - 1e-16)
    return math.log(p) - math.log1p(-p)


@dataclass(frozen=True, eq=False)
class PairProblem:
    """One pair query in model-input space (see the module docstring for the semantics).

    Attributes:
        net:           the piecewise-linear network (its chosen logit is ``z``), or a tree
                       ensemble in feature space (:class:`fairspec.models.trees.TreeEnsemble`,
                       whose ``forward`` is a logit too; solved by :mod:`fairspec.backends.trees`).
        lo, hi:        float64 bounds per model input (the verification domain).
        integer:       bool mask of integral inputs (one-hot members are forced integral).
        onehot_groups: exactly-one groups; each member in [0, 1] and integral.
        free:          inputs allowed to differ between x and x' (the protected ones; for a
                       one-hot group all its indices).
        must_differ:   at least one of these must differ (default: ``free``).
        relaxed:       ``(i, t)``: ``|x_i - x'_i| <= t`` instead of equality.
        post:          ``"label"`` | ``"prob"`` | ``"logit"``.
        eps:           the tolerance of ``prob``/``logit`` (ignored by ``label``).
        eps_strict:    the spec writes ``|...| < eps``: a measure of exactly ``eps`` violates
                       (a violation is ``>= eps``; default ``> eps``).
        runtime:       what certification needs about the model's runtime
                       (:class:`fairspec.backends.pair.certify.Runtime`), or None: the network's
                       own float64 ``forward`` is the runtime.
    """

    net: PLNet
    lo: np.ndarray
    hi: np.ndarray
    integer: np.ndarray | None = None
    onehot_groups: tuple[tuple[int, ...], ...] = ()
    free: tuple[int, ...] = ()
    must_differ: tuple[int, ...] | None = None
    relaxed: tuple[tuple[int, float], ...] = ()
    post: str = "label"
    eps: float = 0.0
    eps_strict: bool = False
    runtime: object = field(default=None, compare=False)

    def __post_init__(self):
        n = self.net.n_inputs
        lo = np.array(self.lo, dtype=np.float64).reshape(-1)
        hi = np.array(self.hi, dtype=np.float64).reshape(-1)
        if lo.shape != (n,) or hi.shape != (n,):
            raise ValueError(f"lo/hi must have {n} entries (the network's inputs), got {lo.shape}, {hi.shape}")
        integer = np.zeros(n, dtype=bool) if self.integer is None else np.array(self.integer, dtype=bool).reshape(-1)
        if integer.shape != (n,):
            raise ValueError(f"integer mask must have {n} entries")
        groups = tuple(tuple(int(i) for i in g) for g in self.onehot_groups)
        seen: set[int] = set()
        for g in groups:
            if len(g) < 1 or seen.intersection(g) or len(set(g)) != len(g):
                raise ValueError(f"one-hot groups must be non-empty and disjoint: {groups}")
            seen.update(g)
            for i in g:
                integer[i] = True
                lo[i] = max(lo[i], 0.0)
                hi[i] = min(hi[i], 1.0)
        lo = np.where(integer, np.ceil(lo - 1e-9), lo)
        hi = np.where(integer, np.floor(hi + 1e-9), hi)
        if np.any(lo > hi):
            bad = int(np.argmax(lo > hi))
            raise ValueError(f"empty domain for input {bad}: [{lo[bad]}, {hi[bad]}]")
        free = tuple(sorted({int(i) for i in self.free}))
        must = free if self.must_differ is None else tuple(sorted({int(i) for i in self.must_differ}))
        relaxed = tuple(sorted((int(i), float(t)) for i, t in self.relaxed))
        rset = {i for i, _ in relaxed}
        if len(rset) != len(relaxed):
            raise ValueError("an input is relaxed twice")
        if rset & set(free):
            raise ValueError(f"inputs {sorted(rset & set(free))} are both free and relaxed")
        if any(t < 0 for _, t in relaxed):
            raise ValueError("relaxation tolerances must be >= 0")
        if not set(must) <= set(free) | rset:
            raise ValueError(f"must_differ {must} must be a subset of the free (or relaxed) inputs")
        for i in list(free) + list(must) + sorted(rset):
            if not 0 <= i < n:
                raise ValueError(f"input index {i} out of range for {n} inputs")
        fs = set(free)
        for g in groups:
            inside = fs.intersection(g)
            if inside and len(inside) != len(g):
                raise ValueError(f"one-hot group {g} is partly free: free it whole or not at all")
            if rset.intersection(g):
                raise ValueError(f"one-hot group {g} cannot be relaxed")
        if self.post not in POSTS:
            raise ValueError(f"post must be one of {POSTS}, not {self.post!r}")
        if self.net.final == "softmax":
            raise ValueError("a softmax over more than two classes has no single logit")
        if self.eps < 0:
            raise ValueError("eps must be >= 0")
        lo.setflags(write=False)
        hi.setflags(write=False)
        integer.setflags(write=False)
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)
        object.__setattr__(self, "integer", integer)
        object.__setattr__(self, "onehot_groups", groups)
        object.__setattr__(self, "free", free)
        object.__setattr__(self, "must_differ", must)
        object.__setattr__(self, "relaxed", relaxed)
        object.__setattr__(self, "eps", float(self.eps))
        if isinstance(self.net, PLNet) and (self.net.layers[-1].n_out != 1 or self.net.output_index != 0):
            object.__setattr__(self, "net", self.net.single_output())

    # ---- derived ---------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return self.net.n_inputs

    @property
    def tied(self) -> tuple[int, ...]:
        """Inputs shared by both copies (neither free nor relaxed: certify's :func:`~fairspec.certify.claims.tied_inputs`)."""
        return tied_inputs(self.n, self.free, self.relaxed)

    @property
    def relaxed_dict(self) -> dict[int, float]:
        return dict(self.relaxed)

    def restrict(self, lo, hi) -> "PairProblem":
        """The same problem on a sub-box (used for input-space partitions)."""
        return replace(self, lo=np.asarray(lo, dtype=np.float64), hi=np.asarray(hi, dtype=np.float64))

    def with_post(self, post: str, eps: float | None = None) -> "PairProblem":
        return replace(self, post=post, eps=self.eps if eps is None else eps)

    def volume(self, lo=None, hi=None, over: Sequence[int] | None = None) -> float:
        """Number of integer points (integral inputs) times lengths (continuous ones) of a box."""
        lo = self.lo if lo is None else np.asarray(lo)
        hi = self.hi if hi is None else np.asarray(hi)
        idx = range(self.n) if over is None else over
        v = 1.0
        for i in idx:
            v *= (hi[i] - lo[i] + 1.0) if self.integer[i] else (hi[i] - lo[i])
        return v


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Witness:
    """A pair (x, x') in model-input space with the logits the network gives them."""

    x: list
    x_prime: list
    z: float = float("nan")
    z_prime: float = float("nan")

    def __iter__(self) -> Iterator[list]:
        yield self.x
        yield self.x_prime


@dataclass(frozen=True)
class Coverage:
    """Share of the input space (partitions, and volume over the partitioned inputs)
    proved fair / refuted (a replayed witness) / undecided (time-out). ``volume_refuted`` is
    the volume of the partitions with a counterexample, not the unfair share of the domain:
    ``shares`` (FairQuant's certified / falsified / undecided) is that."""

    partitions: int
    proved: int
    refuted: int
    undecided: int
    volume_proved: float
    volume_refuted: float
    volume_undecided: float
    features: tuple[int, ...] = ()
    parts: tuple[tuple[str, float], ...] = ()     # per partition: (status, seconds)
    # FairQuant's exact certified / falsified / undecided shares of the domain of individuals
    # (fairspec.backends.quantify.Shares; volume_refuted above counts whole refuted boxes, this does not)
    shares: object = None
    # an *estimate* of the undecided share's unfair / fair split from sampled individuals, with its
    # bound (fairspec.backends.estimate.Estimate; None: not asked for); never part of ``shares``
    estimate: object = None
    # partitions whose holds has no certify Proof (a solver's word): neither ``proved`` nor
    # ``undecided`` (their volume is in ``volume_undecided``); proved + refuted + undecided +
    # uncertified = partitions
    uncertified: int = 0

    @staticmethod
    def tally(results, volumes) -> tuple[tuple, tuple[int, int, int, int], tuple[float, float, float]]:
        """(per-partition (status, seconds), counts (proved, refuted, undecided, uncertified), volumes
        (proved, refuted, undecided)) of the partitions' PairResults (None: skipped). ``proved`` only with
        a certify Proof: a holds on a solver's or an instant check's word is ``uncertified`` (an auditor
        reads "proved" literally), its volume undecided."""
        per, counts, vols = [], [0, 0, 0, 0], [0.0, 0.0, 0.0]
        for r, v in zip(results, volumes):
            bare = r is not None and r.status == "holds" and r.proof is None
            per.append(("skipped" if r is None else "holds (uncertified)" if bare else r.status,
                        0.0 if r is None else round(r.seconds, 4)))
            st = None if r is None else r.status
            k = 3 if bare else 0 if st == "holds" else 1 if st == "violated" else 2
            counts[k] += 1
            vols[min(k, 2)] += v            # an uncertified holds' volume is undecided
        return tuple(per), tuple(counts), tuple(vols)

    @property
    def fractions(self) -> dict[str, float]:
        n = max(self.partitions, 1)
        return {"proved": self.proved / n, "refuted": self.refuted / n, "undecided": self.undecided / n}


@dataclass(frozen=True)
class PairResult:
    """The verdict of one pair query.

    status: ``"violated"`` (a witness re-checked with :func:`check_witness` on ``net.forward``),
            ``"holds"`` (only with ``how == "proved"``: the solver closed the search space), or
            ``"unknown"`` (``reason`` says why: time-out, iteration limit, boundary cases).
    value:  the best violation measure found (maximize: the incumbent's replayed value).
    bound:  a proved upper bound on the maximal violation (maximize), or None.
    proof:  the :class:`fairspec.certify.Proof` certify made for ``holds`` (and for ``bound``).
    """

    status: str
    how: str | None = None
    value: float | None = None
    bound: float | None = None
    witness: Witness | None = None
    reason: str = ""
    seconds: float = 0.0
    coverage: Coverage | None = None
    engine: str = ""
    mode: str = ""
    best: Witness | None = None
    stats: dict = field(default_factory=dict, compare=False)
    proof: Proof | None = field(default=None, compare=False)

    def __post_init__(self):
        if self.proof is not None and not isinstance(self.proof, Proof):
            raise ValueError("proof must be a fairspec.certify.Proof")
        if self.status not in ("violated", "holds", "unknown"):
            raise ValueError(f"bad status {self.status!r}")
        if self.status == "holds" and self.how != "proved":
            raise ValueError("'holds' needs how='proved'")
        if self.status == "violated" and self.witness is None:
            raise ValueError("'violated' needs a witness")


# ---------------------------------------------------------------------------------------------
# Measures and witnesses
# ---------------------------------------------------------------------------------------------

def pair_measure(post: str, z, z_prime):
    """The directional violation measure (see module docstring), vectorised."""
    z = np.asarray(z, dtype=np.float64)
    zp = np.asarray(z_prime, dtype=np.float64)
    if post == "logit":
        return z - zp
    if post == "prob":
        return sigmoid(np.atleast_1d(z)).reshape(z.shape) - sigmoid(np.atleast_1d(zp)).reshape(zp.shape)
    if post == "label":
        return np.minimum(z, -zp)
    raise ValueError(post)


def is_violation(post: str, eps: float, z, z_prime, strict: bool = False):
    """Does the directional pair (z, z') violate the post-condition? (vectorised; ``strict``:
    the tolerance is written ``< eps``, so a measure of exactly eps violates)"""
    z = np.asarray(z, dtype=np.float64)
    zp = np.asarray(z_prime, dtype=np.float64)
    if post == "label":
        return (z > 0) & (zp <= 0)
    m = pair_measure(post, z, zp)
    return m >= eps if strict else m > eps


def _to_logit(scores: np.ndarray, score_kind: str) -> np.ndarray:
    if score_kind == "logit":
        return scores
    if score_kind == "prob":
        p = np.clip(scores, 1e-300, 1 - 1e-16)
        return np.log(p) - np.log1p(-p)
    raise ValueError(f"score_kind must be 'logit' or 'prob', not {score_kind!r}")


def precondition_holds(problem: PairProblem, x, x_prime, tol: float = 1e-9) -> tuple[bool, str]:
    """Check the pre-condition of a pair; returns (ok, reason-if-not)."""
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    xp = np.asarray(x_prime, dtype=np.float64).reshape(-1)
    p = problem
    if x.shape != (p.n,) or xp.shape != (p.n,):
        return False, f"the pair must have {p.n} inputs each"
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(xp))):
        return False, "non-finite input"
    for v, nm in ((x, "x"), (xp, "x'")):
        if np.any(v < p.lo - tol) or np.any(v > p.hi + tol):
            i = int(np.argmax((v < p.lo - tol) | (v > p.hi + tol)))
            return False, f"{nm}[{i}] = {v[i]} is outside [{p.lo[i]}, {p.hi[i]}]"
        ints = p.integer
        if np.any(np.abs(v[ints] - np.round(v[ints])) > tol):
            return False, f"{nm} has a non-integral value on an integral input"
        for g in p.onehot_groups:
            if abs(float(np.sum(v[list(g)])) - 1.0) > tol:
                return False, f"{nm} breaks the one-hot group {g}"
    for i in p.tied:
        if abs(x[i] - xp[i]) > tol:
            return False, f"input {i} must be equal in x and x' but is {x[i]} vs {xp[i]}"
    for i, t in p.relaxed:
        if abs(x[i] - xp[i]) > t + tol:
            return False, f"input {i} differs by {abs(x[i] - xp[i])} > {t}"
    if p.must_differ:
        gap = np.abs(x[list(p.must_differ)] - xp[list(p.must_differ)])
        need = np.where(p.integer[list(p.must_differ)], 0.5, tol)
        if not np.any(gap > need):
            return False, f"none of the inputs {p.must_differ} differs"
    return True, ""


def preconditions_hold(problem: PairProblem, X, XP, tol: float = 1e-9) -> np.ndarray:
    """:func:`precondition_holds`'s ``ok`` of each row pair (``X[i]``, ``XP[i]``): the same comparisons,
    on whole columns."""
    p = problem
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    XP = np.atleast_2d(np.asarray(XP, dtype=np.float64))
    m = X.shape[0]
    if X.shape != (m, p.n) or XP.shape != (m, p.n):
        return np.zeros(m, dtype=bool)
    ok = np.all(np.isfinite(X), axis=1) & np.all(np.isfinite(XP), axis=1)
    ints = p.integer
    for V in (X, XP):
        ok &= ~np.any((V < p.lo - tol) | (V > p.hi + tol), axis=1)
        ok &= ~np.any(np.abs(V[:, ints] - np.round(V[:, ints])) > tol, axis=1)
        for g in p.onehot_groups:
            ok &= ~(np.abs(np.sum(V[:, list(g)], axis=1) - 1.0) > tol)
    for i in p.tied:
        ok &= ~(np.abs(X[:, i] - XP[:, i]) > tol)
    for i, t in p.relaxed:
        ok &= ~(np.abs(X[:, i] - XP[:, i]) > t + tol)
    if p.must_differ:
        md = list(p.must_differ)
        gap = np.abs(X[:, md] - XP[:, md])
        need = np.where(p.integer[md], 0.5, tol)
        ok &= np.any(gap > need, axis=1)
    return ok


def check_witness(problem: PairProblem, x, x_prime, evaluate: Callable[[np.ndarray], np.ndarray],
                  score_kind: str = "logit", tol: float = 1e-9) -> bool:
    """Re-check a claimed violating pair with an independent evaluator.

    ``evaluate`` maps a float64 batch (2, n) to scores (2,) — the PLNet's ``forward`` or the
    real model's ``score``/``replay``; ``score_kind`` says whether they are logits or
    probabilities. True iff the pre-condition holds and the post-condition is violated (in
    either order). A forged witness (outside the domain, tied inputs changed, protected
    inputs equal, or outputs that do not break the post-condition) gives False.
    """
    ok, _ = precondition_holds(problem, x, x_prime, tol)
    if not ok:
        return False
    X = np.vstack([np.asarray(x, dtype=np.float64), np.asarray(x_prime, dtype=np.float64)])
    s = np.asarray(evaluate(X), dtype=np.float64).reshape(-1)
    if s.shape != (2,) or not np.all(np.isfinite(s)):
        return False
    st = problem.eps_strict
    if problem.post == "prob" and score_kind == "prob":
        return bool(abs(s[0] - s[1]) >= problem.eps if st else abs(s[0] - s[1]) > problem.eps)
    z = _to_logit(s, score_kind)
    return bool(is_violation(problem.post, problem.eps, z[0], z[1], st)
                or is_violation(problem.post, problem.eps, z[1], z[0], st))


def make_witness(problem: PairProblem, x, x_prime) -> Witness:
    x = [float(v) for v in np.asarray(x, dtype=np.float64)]
    xp = [float(v) for v in np.asarray(x_prime, dtype=np.float64)]
    z = problem.net.forward(np.array([x, xp]))
    return Witness(x, xp, float(z[0]), float(z[1]))


def clean_pair(problem: PairProblem, x, x_prime) -> tuple[np.ndarray, np.ndarray]:
    """Round a solver's pair onto the domain: integral inputs rounded, tied inputs copied,
    everything clipped into [lo, hi]."""
    p = problem
    x = np.clip(np.asarray(x, dtype=np.float64), p.lo, p.hi)
    xp = np.clip(np.asarray(x_prime, dtype=np.float64), p.lo, p.hi)
    x = np.where(p.integer, np.round(x), x)
    xp = np.where(p.integer, np.round(xp), xp)
    tied = list(p.tied)
    xp[tied] = x[tied]
    return x, xp


# ---------------------------------------------------------------------------------------------
# The logistic post-condition: tangent cuts (outer approximation)
# ---------------------------------------------------------------------------------------------

def prob_cut(a: float, eps: float) -> tuple[float, float] | None:
    """A tangent ``z >= slope * z' + intercept`` at ``z' = a`` of ``g(w) = logit(sigmoid(w) + eps)``.

    ``sigmoid(z) - sigmoid(z') > eps`` iff ``z > g(z')`` (and ``z' < logit(1 - eps)``). ``g`` is
    convex, so every tangent lies below it: each cut keeps all true violations (an outer
    approximation, sound for proofs) and cuts off spurious solutions near ``a``. Returns None
    where ``g`` is undefined (``sigmoid(a) + eps >= 1``, or ``<= 0``: eps 0 at a logit whose sigmoid
    underflows to 0, a < -745).
    """
    p = float(sigmoid(np.array([a]))[0])
    q = p + eps
    if q >= 1.0 - 1e-12 or q <= 0.0:
        return None
    g = logit_fn(q)
    slope = p * (1.0 - p) / (q * (1.0 - q))
    # loosen by a hair so floating-point error never cuts off a true violation
    intercept = g - slope * a - 1e-9 * (1.0 + abs(g))
    return slope, intercept


def prob_cut_points(z_lo: float, z_hi: float, eps: float, k: int = 8) -> list[float]:
    """Initial tangent points spread over the reachable logit range."""
    top = min(z_hi, logit_fn(1.0 - eps) - 1e-6) if eps > 0 else z_hi
    lo = max(z_lo, -30.0)
    top = min(top, 30.0)
    if top <= lo:
        return [lo]
    return list(np.linspace(lo, top, k))


# ---------------------------------------------------------------------------------------------
# Brute force: the ground truth on small integral domains
# ---------------------------------------------------------------------------------------------

def _factors(problem: PairProblem, which: Sequence[int]) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """Independent factors of the domain over the given inputs: (indices, values[k, len])."""
    p = problem
    which = set(which)
    out = []
    in_group = set()
    for g in p.onehot_groups:
        in_group.update(g)
        if which.issuperset(g):
            out.append((g, np.eye(len(g))))
        elif which.intersection(g):
            raise ValueError(f"one-hot group {g} straddles tied and varying inputs")
    for i in sorted(which - in_group):
        if not p.integer[i]:
            raise ValueError(f"brute force needs integral inputs; input {i} is continuous")
        vals = np.arange(p.lo[i], p.hi[i] + 0.5)
        out.append(((i,), vals[:, None]))
    return out


def _product(n: int, factors, base: np.ndarray | None = None) -> np.ndarray:
    grid = np.zeros((1, n)) if base is None else base[None, :].copy()
    for idx, vals in factors:
        k = vals.shape[0]
        rep = np.repeat(grid, k, axis=0)
        rep[:, list(idx)] = np.tile(vals, (grid.shape[0], 1))
        grid = rep
    return grid


def enumerate_domain(problem: PairProblem, max_points: int = 2_000_000) -> np.ndarray:
    """Every point of an integral domain (one-hot groups as their one-hot vectors)."""
    f = _factors(problem, range(problem.n))
    size = math.prod(v.shape[0] for _, v in f)
    if size > max_points:
        raise ValueError(f"the domain has {size} points, more than {max_points}")
    return _product(problem.n, f)


def brute_force(problem: PairProblem, evaluate: Callable[[np.ndarray], np.ndarray] | None = None,
                max_pairs: int = 50_000_000) -> PairResult:
    """Enumerate every pair of the (small, integral) domain: the exact verdict and maximum.

    ``evaluate`` (default ``net.forward``) gives logits. The result's ``value`` is the maximal
    violation measure over all pairs meeting the pre-condition (-inf if there are none),
    ``witness`` the maximising pair when it violates, and ``stats['violations']`` the number of
    violating ordered pairs.
    """
    t0 = time.perf_counter()
    p = problem
    ev = evaluate or p.net.forward
    vary = [i for i in range(p.n) if i not in set(p.tied)]
    tied_f = _factors(p, p.tied)
    vary_f = _factors(p, vary)
    T = math.prod(v.shape[0] for _, v in tied_f)
    V = math.prod(v.shape[0] for _, v in vary_f)
    if T * V * V > max_pairs:
        raise ValueError(f"brute force over {T * V * V} pairs exceeds {max_pairs}")
    tgrid = _product(p.n, tied_f)                       # (T, n) with varying inputs 0
    vgrid = _product(p.n, vary_f)                       # (V, n) with tied inputs 0
    # pre-condition between varying parts
    valid = np.ones((V, V), dtype=bool)
    rel = p.relaxed_dict
    for i, t in rel.items():
        valid &= np.abs(vgrid[:, i][:, None] - vgrid[:, i][None, :]) <= t + 1e-12
    if p.must_differ:
        md = list(p.must_differ)
        diff = np.zeros((V, V), dtype=bool)
        for i in md:
            diff |= vgrid[:, i][:, None] != vgrid[:, i][None, :]
        valid &= diff
    best_val = -np.inf
    best_pair = None
    count = 0
    chunk = max(1, 2_000_000 // max(V * V, 1))
    for s in range(0, T, chunk):
        tg = tgrid[s:s + chunk]
        X = (tg[:, None, :] + vgrid[None, :, :]).reshape(-1, p.n)
        z = np.asarray(ev(X), dtype=np.float64).reshape(tg.shape[0], V)
        M = pair_measure(p.post, z[:, :, None], z[:, None, :])
        viol = is_violation(p.post, p.eps, z[:, :, None], z[:, None, :], p.eps_strict) & valid[None]
        count += int(viol.sum())
        M = np.where(valid[None], M, -np.inf)
        k = int(np.argmax(M))
        if M.reshape(-1)[k] > best_val:
            best_val = float(M.reshape(-1)[k])
            t_i, a, b = np.unravel_index(k, M.shape)
            best_pair = (X.reshape(tg.shape[0], V, p.n)[t_i, a], X.reshape(tg.shape[0], V, p.n)[t_i, b])
        if count and p.post == "label" and best_pair is not None and \
                not is_violation(p.post, p.eps, *ev(np.vstack(best_pair)), p.eps_strict):
            # the maximum flip margin may be 0 (z' == 0) while a violation exists: keep one
            vk = int(np.argmax(viol.reshape(-1)))
            t_i, a, b = np.unravel_index(vk, viol.shape)
            best_pair = (X.reshape(tg.shape[0], V, p.n)[t_i, a], X.reshape(tg.shape[0], V, p.n)[t_i, b])
    secs = time.perf_counter() - t0
    best = make_witness(p, *best_pair) if best_pair is not None else None
    if count:
        return PairResult("violated", None, best_val, best_val, best, "", secs, engine="brute",
                          mode="maximize", best=best, stats={"violations": count, "pairs": int(valid.sum()) * T})
    return PairResult("holds", "proved", best_val, best_val, None, "exhaustive enumeration", secs,
                      engine="brute", mode="maximize", best=best,
                      stats={"violations": 0, "pairs": int(valid.sum()) * T})
