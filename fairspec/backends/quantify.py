"""FairQuant's quantification of individual fairness over the input domain (Kim et al., ICSE 2025).

The domain of *individuals* is the box of every input the pair does not vary: all inputs but the
free (protected) ones; a relaxed input (``|x_i - x'_i| <= t``) belongs to the individual too. A
partitioned decision cuts that domain into boxes (Fairify's input partitions); each individual
falls in exactly one of three shares:

* **certified**: its box was proved fair -- a partition whose ``holds`` carries a certify
  :class:`~fairspec.certify.Proof` (a ``holds`` without one, e.g. a tree engine's, is no proof and
  counts as undecided);
* **falsified**: its box was *proved unfair* (every individual in it has a counterfactual that
  flips: :func:`fairspec.certify.unfair.prove_box_unfair`), or it is itself a counterexample point:
  the ``x`` (and ``x'``) of a partition's witness, replayed again here on the runtime;
* **undecided**: everything else -- a refuted partition is *not* falsified as a whole: one
  counterexample says nothing about the other individuals of its box.

Shares are counted exactly (Python ints and :class:`fractions.Fraction`, never floats) in the
measure FairQuant uses: **integer points** when every input of the individual is integral
(categorical one-hot groups count as their number of categories), else **volume** (integer points
times the lengths of the real-valued inputs; a real-valued input fixed to one value counts 1). In a
volume a single point weighs nothing, so there the falsified share comes from proved-unfair boxes
only. The three shares sum to exactly 1 when the boxes partition the domain (their measures add
up to the domain's; otherwise no shares are given).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np

__all__ = ["Shares", "individual_inputs", "measure", "count_shares", "replayed_results", "replayed_attack"]

INTEGER_POINTS = "integer points"
VOLUME = "volume"


@dataclass(frozen=True)
class Shares:
    """The certified / falsified / undecided shares of the domain of individuals.

    measure:               ``"integer points"`` or ``"volume"`` (see the module docstring).
    domain:                the domain's measure (an int for integer points, a Fraction for volume).
    certified, falsified, undecided: exact fractions of ``domain``; they sum to 1.
    certified_boxes:       partitions proved fair (with a certify Proof).
    unfair_boxes:          boxes proved unfair (whole partitions or sub-boxes of one).
    counterexample_points: distinct replayed counterexample individuals outside those boxes
                           (in a volume they weigh nothing).
    fair_subboxes:         sub-boxes of undecided or refuted partitions proved fair by the
                           refinement (:mod:`fairspec.backends.refine`; counted in ``certified``).
    enumerated:            individuals the refinement decided one by one on the runtime.
    """

    measure: str
    domain: int | Fraction
    certified: Fraction
    falsified: Fraction
    undecided: Fraction
    certified_boxes: int = 0
    unfair_boxes: int = 0
    counterexample_points: int = 0
    fair_subboxes: int = 0
    enumerated: int = 0

    def __post_init__(self):
        assert self.certified + self.falsified + self.undecided == 1, "shares must sum to 1"

    def percent(self, which: str) -> float:
        return float(getattr(self, which) * 100)

    def line(self) -> str:
        """One line for a reason: ``certified 97.5%, falsified 0.0001% (...), undecided 2.4999% of ...``."""
        pts = f"{self.counterexample_points:,} counterexample point{'s' if self.counterexample_points != 1 else ''}"
        how = [pts] if self.measure == INTEGER_POINTS else []
        if self.unfair_boxes:
            how.insert(0, f"{self.unfair_boxes:,} box{'es' if self.unfair_boxes != 1 else ''} proved unfair")
        if self.enumerated:
            how.append(f"{self.enumerated:,} individuals enumerated")
        cert = f" ({self.fair_subboxes:,} refined sub-boxes proved fair)" if self.fair_subboxes else ""
        what = f"{self.domain:,} integer points" if self.measure == INTEGER_POINTS else \
            f"volume {float(self.domain):.4g}"
        return (f"certified {fmt_percent(self.certified)}{cert}, falsified {fmt_percent(self.falsified)}"
                + (f" ({', '.join(how)})" if how else "")
                + f", undecided {fmt_percent(self.undecided)} of the domain ({what})")

    def to_json(self) -> dict:
        """Exact shares as strings ``"p/q"`` (and percentages as floats, for reading)."""
        return {"measure": self.measure, "domain": str(self.domain),
                "certified": str(self.certified), "falsified": str(self.falsified), "undecided": str(self.undecided),
                "certified_percent": self.percent("certified"), "falsified_percent": self.percent("falsified"),
                "undecided_percent": self.percent("undecided"), "certified_boxes": self.certified_boxes,
                "unfair_boxes": self.unfair_boxes, "counterexample_points": self.counterexample_points,
                "fair_subboxes": self.fair_subboxes, "enumerated": self.enumerated}


def fmt_percent(q: Fraction) -> str:
    """A share as a percentage that never shows a non-zero share as 0% nor a share below 1 as 100%."""
    p = float(q * 100)
    if q == 0 or q == 1:
        return f"{p:.0f}%"
    s = f"{p:.2f}"
    if s == "0.00":
        s = f"{p:.2g}"
    elif s == "100.00":
        s = ">99.99"
    return s + "%"


def individual_inputs(problem) -> tuple[int, ...]:
    """The inputs of an individual: every input but the free (protected) ones."""
    free = set(problem.free)
    return tuple(i for i in range(problem.n) if i not in free)


def _kind(problem) -> str:
    inputs = individual_inputs(problem)
    cont = [i for i in inputs if not problem.integer[i] and problem.hi[i] > problem.lo[i]]
    return VOLUME if cont else INTEGER_POINTS


def measure(problem, lo=None, hi=None) -> int | Fraction:
    """The exact measure of a box of individuals (the problem's domain by default): integer points
    of the integral inputs (a one-hot group: its categories) times lengths of the real-valued ones."""
    lo = problem.lo if lo is None else np.asarray(lo, dtype=np.float64)
    hi = problem.hi if hi is None else np.asarray(hi, dtype=np.float64)
    free = set(problem.free)
    grouped = {i for g in problem.onehot_groups for i in g}
    m: int | Fraction = 1
    for g in problem.onehot_groups:
        if free.intersection(g):
            continue
        forced = [i for i in g if lo[i] >= 1]
        allowed = [i for i in g if hi[i] >= 1]
        m *= (1 if len(forced) == 1 else 0) if forced else len(allowed)
    for i in individual_inputs(problem):
        if i in grouped:
            continue
        if problem.integer[i]:
            m *= max(0, int(np.floor(hi[i])) - int(np.ceil(lo[i])) + 1)
        elif problem.hi[i] > problem.lo[i]:
            m *= max(Fraction(0), Fraction(float(hi[i])) - Fraction(float(lo[i])))
    return m


def _point(problem, x, inputs) -> tuple:
    return tuple(float(x[i]) for i in inputs)


def _inside(lo, hi, x) -> bool:
    x = np.asarray(x, dtype=np.float64)
    return bool(np.all(x >= lo) and np.all(x <= hi))


#: a partition whose witness did not replay is asked of certify (a tie) for at most this many seconds,
#: and at most this many partitions are
TIE_SECONDS = 5.0
TIE_PARTS = 8


def replayed_results(problem, results: list, parts=None):
    """Every refuted partition's witness replayed on the runtime here, once: a partition's worker
    checked it without the loaded model (the network's float64 forward), so at a tie the runtime may
    disagree. A witness that does not replay leaves its partition undecided (``results`` is changed in
    place, so the counts, the shares and the verdict agree) unless, with its box in ``parts``, certify
    proves it at the tie (:func:`fairspec.backends.pair.certify.certify_tie`). Returns the replay,
    memoised by pair, for :func:`count_shares`."""
    from dataclasses import replace

    from fairspec.backends.pair.certify import certify_tie, replays

    seen: dict = {}
    tries = 0

    def replay(x, xp) -> bool:
        key = (tuple(np.asarray(x, dtype=np.float64).tolist()), tuple(np.asarray(xp, dtype=np.float64).tolist()))
        if key not in seen:
            seen[key] = bool(replays(problem, np.asarray(x, dtype=np.float64), np.asarray(xp, dtype=np.float64)))
        return seen[key]

    for k, r in enumerate(results):
        if r is not None and r.status == "violated" and r.witness is not None \
                and not replay(r.witness.x, r.witness.x_prime):
            tie = None
            if parts is not None and tries < TIE_PARTS:
                tries += 1
                tie = certify_tie(problem.restrict(*parts[k]), r, TIE_SECONDS)
            results[k] = tie if tie is not None and tie.status == "holds" else \
                replace(r, status="unknown", how=None, witness=None, best=None,
                        reason="its witness did not replay on the model's runtime (within rounding of the threshold)")
    return replay


def replayed_attack(problem, attacked: dict) -> dict:
    """The batched attack's refutations (``{partition: PairResult}``) whose pair replays on the runtime, in
    one batch: a worker replays on the float64 network only (the runtime's replay does not travel), and
    at a tie the runtime may round the pair back inside the threshold (an MLPClassifier's expit(2**-53) is
    exactly 1/2). A partition whose pair does not replay is not refuted: it goes on to the solvers and the
    decision pass, and a find does not stop at it."""
    rt = getattr(problem, "runtime", None)
    if not attacked or rt is None or getattr(rt, "replay", None) is None:
        return attacked
    from fairspec.backends.pair.certify import replays_many

    keys = sorted(attacked)
    X = np.array([attacked[k].witness.x for k in keys], dtype=np.float64)
    XP = np.array([attacked[k].witness.x_prime for k in keys], dtype=np.float64)
    ok = replays_many(problem, X, XP)
    return {k: attacked[k] for k, good in zip(keys, ok) if good}


def count_shares(problem, parts: Sequence[tuple[np.ndarray, np.ndarray]], results: Sequence,
                 unfair: Sequence[tuple[int, np.ndarray, np.ndarray]] = (), replay=None,
                 refined: Sequence[tuple] = ()) -> Shares | None:
    """The exact shares of ``problem``'s domain given each partition's result.

    parts:   the (lo, hi) boxes, a partition of the domain (None is returned if their measures
             do not add up to the domain's).
    results: one PairResult (or None: not reached) per box.
    unfair:  ``(k, lo, hi)``: sub-boxes of box ``k`` proved unfair (disjoint; none in a certified box).
    replay:  ``(x, x') -> bool``, the runtime's re-check of a witness (default
             :func:`fairspec.backends.pair.certify.replays`); only witnesses that replay count.
    refined: the refinement's decisions (:attr:`fairspec.backends.refine.Refined.decided`:
             ``(k, kind, lo, hi, n_fair, n_unfair, proof)``, disjoint sub-boxes of partition ``k``):
             "fair" / "unfair" sub-boxes count their measure as certified / falsified, an
             enumerated ("count") one its fair and unfair individuals. A refined partition's boxes
             grown around its witness (``unfair``) are not counted: they may overlap the sub-boxes.
    """
    inputs = individual_inputs(problem)
    if not all(np.isfinite(problem.lo[i]) and np.isfinite(problem.hi[i]) for i in inputs):
        return None                         # an unbounded input: no finite measure to share
    total = measure(problem)
    if total == 0:
        return None
    kind = _kind(problem)
    vols = [measure(problem, lo, hi) for lo, hi in parts]
    if sum(vols) != total:
        return None
    if replay is None:
        from fairspec.backends.pair.certify import replays

        def replay(x, xp):
            return replays(problem, x, xp)
    certified: int | Fraction = 0
    n_cert = 0
    for r, v in zip(results, vols):
        if r is not None and r.status == "holds" and getattr(r, "proof", None) is not None:
            certified += v
            n_cert += 1
    by_part: dict[int, list] = {}
    falsified: int | Fraction = 0
    n_fair_sub = n_unfair_sub = n_enum = 0
    for k, kind_, lo, hi, n_fair, n_unfair, proof in refined:
        r = results[k]
        if proof is None or (r is not None and r.status == "holds" and getattr(r, "proof", None) is not None):
            continue                        # only proved decisions, never inside a certified partition
        lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
        by_part.setdefault(k, []).append((lo, hi))
        if kind_ == "fair":
            certified += measure(problem, lo, hi)
            n_fair_sub += 1
        elif kind_ == "unfair":
            falsified += measure(problem, lo, hi)
            n_unfair_sub += 1
        elif kind == INTEGER_POINTS:        # an enumerated sub-box: its individuals, one by one
            certified += int(n_fair)
            falsified += int(n_unfair)
            n_enum += measure(problem, lo, hi)
    refined_parts = set(by_part)
    n_grown = 0
    for k, lo, hi in unfair:
        r = results[k]
        if r is not None and r.status == "holds":
            continue                        # cannot happen for a sound pair of proofs; never count twice
        if k in refined_parts:
            continue                        # the refinement's disjoint sub-boxes count instead
        n_grown += 1
        lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
        by_part.setdefault(k, []).append((lo, hi))
        falsified += measure(problem, lo, hi)
    points: set[tuple] = set()
    for k, r in enumerate(results):
        if r is None or r.status != "violated" or r.witness is None:
            continue
        x, xp = np.asarray(r.witness.x, dtype=np.float64), np.asarray(r.witness.x_prime, dtype=np.float64)
        if not replay(x, xp):
            continue
        for y in (x, xp):                   # both are unfair individuals (the pre-condition is symmetric)
            if any(_inside(lo, hi, y) for lo, hi in by_part.get(k, ())):
                continue
            points.add(_point(problem, y, inputs))
    if kind == INTEGER_POINTS:
        falsified += len(points)
    cert, fals = Fraction(certified) / total, Fraction(falsified) / total
    return Shares(kind, total, cert, fals, 1 - cert - fals, n_cert, n_unfair_sub + n_grown, len(points),
                  n_fair_sub, int(n_enum))


# ---------------------------------------------------------------------------------------------
# Boxes proved unfair
# ---------------------------------------------------------------------------------------------

MAX_CASES = 64


def protected_cases(problem) -> list[dict[int, float]] | None:
    """Assignments of the free (protected) inputs a counterfactual may take: every category of a
    free one-hot group, every value of a free integer input with at most 16 values (else its two
    ends), the two ends of a real-valued one (any fixed value is a valid counterfactual, so a
    subset suffices for a proof of unfairness). None when there are more than ``MAX_CASES``."""
    free = set(problem.free)
    units: list[list[dict[int, float]]] = []
    grouped = set()
    for g in problem.onehot_groups:
        if free.intersection(g):
            grouped.update(g)
            units.append([{i: (1.0 if i == j else 0.0) for i in g} for j in g if problem.hi[j] >= 1])
    for i in sorted(free - grouped):
        lo, hi = float(problem.lo[i]), float(problem.hi[i])
        if problem.integer[i] and hi - lo < 16:
            vals = [float(v) for v in range(int(lo), int(hi) + 1)]
        else:
            vals = sorted({lo, hi})
        units.append([{i: v} for v in vals])
    n = 1
    for u in units:
        n *= len(u)
    if n > MAX_CASES or n < 2:
        return None
    import itertools

    out = []
    for combo in itertools.product(*units):
        d: dict[int, float] = {}
        for part in combo:
            d.update(part)
        out.append(d)
    return out


def _case_box(lo, hi, case):
    lo, hi = lo.copy(), hi.copy()
    for i, v in case.items():
        lo[i] = hi[i] = v
    return lo, hi


def _split(problem, lo, hi):
    """Halve the widest splittable input of the individual (by values, or length); None if a point."""
    grouped = {i for g in problem.onehot_groups for i in g}
    best, size = None, 0.0
    for i in individual_inputs(problem):
        if i in grouped:
            continue
        s = (hi[i] - lo[i]) if not problem.integer[i] else (hi[i] - lo[i] + 1 if hi[i] > lo[i] else 0)
        if s > size:
            best, size = i, s
    if best is None or size <= 0:
        return None
    return halve(problem, lo, hi, best)


def halve(problem, lo, hi, j: int):
    """The box [lo, hi] cut in two at the middle of input ``j`` (integral: into ``[.., mid]`` and
    ``[mid + 1, ..]``, so every integer point lies in exactly one half)."""
    a_hi, b_lo = hi.copy(), lo.copy()
    if problem.integer[j]:
        mid = np.floor((lo[j] + hi[j]) / 2)
        a_hi[j], b_lo[j] = mid, mid + 1
    else:
        mid = 0.5 * (lo[j] + hi[j])
        a_hi[j], b_lo[j] = mid, mid
    return (lo, a_hi), (b_lo, hi)


def unfair_boxes(problem, lo=None, hi=None, *, max_nodes: int = 31, deadline: float | None = None,
                 witness=None) -> list[tuple[np.ndarray, np.ndarray, object]]:
    """Sub-boxes of ``[lo, hi]`` (the problem's box by default) proved unfair on the runtime, each
    with its certify Proof (:func:`fairspec.certify.unfair.prove_box_unfair`); at most
    ``max_nodes`` proof attempts (a count, not a time, so the answer does not depend on the machine).

    With a ``witness`` (a counterexample's x): one box grown around it -- the witness's own point
    first, then rounds in which each side of each individual input in turn doubles the box's
    extent along it (clipped to the box's bounds), a side that the proof no longer covers dropped.
    Without one: a bisection of the box (boxes whose centre pair breaks the post-condition on the
    float64 network tried, the others split). Empty for a tree ensemble or when the protected
    inputs take too many values."""
    import time

    from fairspec.backends.pair.certify import _is_network, runtime_of
    from fairspec.certify.unfair import prove_box_unfair

    if not _is_network(problem) or problem.post not in ("label", "prob", "logit"):
        return []
    rt = runtime_of(problem)
    if rt.layers is None:
        return []
    cases = protected_cases(problem)
    if cases is None:
        return []
    must = set(problem.must_differ)
    pairs = [(a, b) for a in range(len(cases)) for b in range(len(cases))
             if a != b and any(cases[a].get(i) != cases[b].get(i) for i in must)]
    lo = problem.lo.copy() if lo is None else np.asarray(lo, dtype=np.float64).copy()
    hi = problem.hi.copy() if hi is None else np.asarray(hi, dtype=np.float64).copy()
    nodes = 0
    outer = [_case_box(lo, hi, c) for c in cases]      # the runtime error bound over the whole box, once

    def prove(blo, bhi):
        nonlocal nodes
        nodes += 1
        boxes = [_case_box(blo, bhi, c) for c in cases]
        try:
            return prove_box_unfair(rt.layers, boxes, pairs, error_boxes=outer, post=problem.post, eps=problem.eps,
                                    eps_strict=problem.eps_strict, readout=rt.readout, encoding=rt.encoding,
                                    precision=rt.precision, integer=problem.integer,
                                    onehot_groups=problem.onehot_groups,
                                    claim="every individual of the box has a counterfactual that breaks "
                                          "the post-condition on the model's runtime",
                                    lo=[float(v) for v in blo], hi=[float(v) for v in bhi])
        except (ValueError, TypeError, AttributeError, ArithmeticError):   # outside the error model
            return None

    def out_of_budget():
        return nodes >= max_nodes or (deadline is not None and time.time() > deadline)

    if witness is not None:
        w = np.asarray(witness, dtype=np.float64)
        free = set(problem.free)
        if not _inside(np.where([i in free for i in range(len(w))], -np.inf, lo),
                       np.where([i in free for i in range(len(w))], np.inf, hi), w):
            return []
        blo, bhi = lo.copy(), hi.copy()
        for i in individual_inputs(problem):
            blo[i] = bhi[i] = w[i]
        proof = prove(blo, bhi)
        if proof is None:
            return []
        grouped = {i for g in problem.onehot_groups for i in g}
        dims = [i for i in individual_inputs(problem) if i not in grouped]
        # rounds of doubling: each direction of each input in turn grows by the box's current extent
        # along it (at least one value, or 1/64 of a real-valued range), until the proof fails there
        active = [(i, side) for i in dims for side in (1, 0)]
        while active and not out_of_budget():
            keep = []
            for i, side in active:
                if out_of_budget():
                    keep.append((i, side))
                    continue
                room = (hi[i] - bhi[i]) if side else (blo[i] - lo[i])
                if room <= 0:
                    continue
                if problem.integer[i]:
                    step = min(room, bhi[i] - blo[i] + 1)
                else:
                    step = min(room, max(bhi[i] - blo[i], (hi[i] - lo[i]) / 64))
                tlo, thi = blo.copy(), bhi.copy()
                if side:
                    thi[i] = bhi[i] + step
                else:
                    tlo[i] = blo[i] - step
                p2 = prove(tlo, thi)
                if p2 is not None:
                    blo, bhi, proof = tlo, thi, p2
                    keep.append((i, side))
            active = keep
        return [(blo, bhi, proof)]
    found = []
    queue = [(lo, hi)]
    while queue and not out_of_budget():
        blo, bhi = queue.pop(0)
        if _centre_breaks(problem, blo, bhi, cases, pairs):
            proof = prove(blo, bhi)
            if proof is not None:
                found.append((blo, bhi, proof))
                continue
        else:
            nodes += 1
        halves = _split(problem, blo, bhi)
        if halves is not None:
            queue.extend(halves)
    return found


def _centre_breaks(problem, lo, hi, cases, pairs) -> bool:
    """Does the pair at the box's centre (integers rounded down) break the post-condition on the
    float64 network for some allowed pair of cases? (A box can be unfair only if its centre is.)"""
    c = 0.5 * (lo + hi)
    c = np.where(problem.integer, np.floor(c), c)
    X = np.stack([_case_box(c, c, case)[0] for case in cases])
    z = np.asarray(problem.net.forward(X), dtype=np.float64).reshape(-1)
    for a, b in pairs:
        if problem.post == "label":
            if (z[a] > 0) != (z[b] > 0):
                return True
        else:
            d = (1 / (1 + np.exp(-z[a])) - 1 / (1 + np.exp(-z[b]))) if problem.post == "prob" else z[a] - z[b]
            if d > problem.eps:
                return True
    return False
