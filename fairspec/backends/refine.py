"""FairQuant's iterative refinement inside the partitions a decision left without a proof
(Kim et al., ICSE 2025; issue 24): a refuted partition's MILP stops at its first counterexample,
so the whole box was "undecided" for the shares although most of its individuals are fair.

:func:`refine_partitions` splits those boxes, best-first on the undecided measure (the largest
box first, over every partition at once), and decides each sub-box, many per batch:

1. **bounds** (:func:`fairspec.certify.boxes.decide_boxes`): for every value of the protected
   inputs, the runtime's score over the sub-box bounded by intervals and symbolic intervals,
   widened by the runtime error bound E (one E per protected value, over the whole domain): the
   sub-box is proved *fair* (no individual has a counterfactual that breaks the post-condition)
   or *unfair* (every individual has one), with an ``interval`` Proof per batch;
2. optionally (``bab_nodes``) the certified branch and bound with a node cap on the largest
   sub-boxes the bounds left (:func:`fairspec.backends.pair.certify.decide_by_bab`: ``holds``
   with its bab-certificate is a fair sub-box);
3. a sub-box with at most ``enum_points`` individuals is **enumerated**: every individual under
   every protected value evaluated on the runtime (one batch for all such sub-boxes), and
   :func:`fairspec.certify.enumerate.count_individuals` decides each one exactly and states the
   counts in an ``enumeration`` Proof;
3b. in the decision pass (:func:`decide_partitions`), a sub-box the bounds leave is tried *split at a
   hidden layer*: for the sign property :func:`~fairspec.backends.layer_splits.layer_split_plans` searches (the layer with the fewest live
   neurons, their box bisected into tiles), :func:`fairspec.certify.layersplit.prove_layer_split`
   checks and mints the Proof (the sub-box proved fair); for the eps posts (``logit`` / ``prob``, raw
   inputs) the relational split: :func:`~fairspec.backends.layer_splits.relational_split_plans` (one copy's live pre-activations tiled,
   the other's shifted by the pair's difference bounds), checked by
   :func:`fairspec.certify.relsplit.prove_relational_split`;
4. a sub-box the bounds leave is *cut* where its own linear bounds decide a slice of it along one
   input (``decide_boxes(cuts=True)``, label post on a logit readout of raw inputs): the slice, when it
   holds at least ``CUT_MIN`` of the box, is counted fair or unfair and the pieces beside it go back
   to the queue;
5. anything else is split in two on the input its bounds depend on most (symbolic coefficient
   times width; integer splits), and both halves go back to the queue.

What the budget leaves in the queue is undecided. Only integer points are enumerated (a box
with a real-valued input is split until the budget ends). The refinement needs the complete
list of protected values (one-hot groups, or integer inputs with at most 16 values each, at most
64 combinations) and no relaxed inputs; otherwise it does nothing and says why. The decision pass
(:func:`decide_partitions`) takes relaxed inputs too, small integral ones: their values join the
protected ones as counterfactual cases
(:func:`fairspec.backends.counterfactuals.counterfactuals`, the pairs within the tolerance), an
individual being the tied inputs only, so every pair the property admits is one of an individual's;
and a one-hot group outside the protected inputs likewise (``tie_groups``: its categories are cases, a
pair's two in the same one).
"""

from __future__ import annotations

import heapq
import itertools
import time
from dataclasses import dataclass, field

import numpy as np

from fairspec.backends.counterfactuals import (RELAXED_VALUES, batch_scores, box_points, counted_scores,
                                               counterfactuals, individual_of, protected_cases_of, runtime_scorer, tied_groups)

__all__ = ["Refined", "refine_partitions", "refinable", "decide_partitions", "PartDecision"]

#: sub-boxes decided per batch of bounds
BATCH = 1024
#: sub-boxes in the first batch of a call, before its pace is known (the later batches fit the time left)
FIRST_BATCH = 32
#: a sub-box with at most this many individuals is enumerated on the runtime
ENUM_POINTS = 64
#: an undecided box is cut at the slice its linear bounds decide when the slice holds at least this
#: share of the box (else it is halved)
CUT_MIN = 0.03


@dataclass
class Refined:
    """What :func:`refine_partitions` decided: ``decided`` entries ``(k, kind, lo, hi, n_fair, n_unfair,
    proof)`` -- ``kind`` "fair" / "unfair" (a whole sub-box of partition ``k``, its measure counted by
    the shares) or "count" (an enumerated sub-box: ``n_fair`` / ``n_unfair`` individuals; the rest
    undecided); ``stats`` the counts and the time; ``reason`` why nothing was refined (or "")."""

    decided: list = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    undecided: list = field(default_factory=list)     # (k, lo, hi, measure) the budget left in the queue
    reason: str = ""


def refinable(problem, relaxed: bool = False) -> str:
    """Why the refinement cannot run on ``problem`` ("" when it can); ``relaxed``: relaxed inputs taken
    (the decision pass: small integral ones, as counterfactual values of :func:`counterfactuals`; the
    shares' refinement counts individuals over every non-protected input and takes none)."""
    from fairspec.backends.pair.certify import _is_network, runtime_of

    if not _is_network(problem):
        return "the refinement needs a ReLU network"
    if problem.post not in ("label", "logit", "prob"):
        return f"the refinement does not decide the {problem.post} post-condition"
    if problem.relaxed and not relaxed:
        return "the refinement does not handle relaxed inputs"
    rt = runtime_of(problem)
    if rt.layers is None:
        return f"the runtime is outside the error model: {rt.why_not}"
    if rt.readout[0] not in ("logit", "prob", "margin", "softmax", "argmax"):
        return f"the refinement does not bound the {rt.readout[0]} readout"
    if protected_cases_of(problem) is None:
        return "the protected inputs take too many values to enumerate"
    if counterfactuals(problem) is None:
        return (f"the relaxed inputs are not all integral with at most {RELAXED_VALUES} values each (their values "
                "and the protected ones', at most 64 combinations, are what the refinement enumerates)")
    return ""


def _split(problem, lo, hi, infl, dims):
    """The two halves of a box along the splittable input with the largest influence (widest when the
    bounds depend on none)."""
    width = np.array([(hi[i] - lo[i] + 1) if problem.integer[i] else (hi[i] - lo[i]) for i in dims])
    can = np.array([(hi[i] > lo[i]) for i in dims])
    if not can.any():
        return None
    wd = np.array([hi[i] - lo[i] for i in dims])
    # the linear coefficient times the number of values (a length for a real-valued input)
    score = np.where(can, np.asarray(infl)[dims] / np.where(wd > 0, wd, 1.0) * width, -np.inf)
    if not np.any(score[can] > 0):
        score = np.where(can, width, -np.inf)
    from fairspec.backends.quantify import halve

    return halve(problem, lo, hi, dims[int(np.argmax(score))])


def _split_group(problem, lo, hi, inputs):
    """Halve the allowed categories of a one-hot group of the individual (None if none has two)."""
    free = set(problem.free)
    for g in problem.onehot_groups:
        if free.intersection(g) or not set(g) <= set(inputs) or any(lo[i] >= 1 for i in g):
            continue
        allowed = [i for i in g if hi[i] >= 1]
        if len(allowed) > 1:
            half = allowed[: len(allowed) // 2]
            a_hi, b_hi = hi.copy(), hi.copy()
            for i in allowed:
                if i in half:
                    b_hi[i] = 0.0
                else:
                    a_hi[i] = 0.0
            return (lo, a_hi), (lo.copy(), b_hi)
    return None


def refine_partitions(problem, parts, results, *, seconds: float, max_boxes: int | None = None,
                      batch: int = BATCH, enum_points: int = ENUM_POINTS, bab_nodes: int = 0,
                      bab_seconds: float = 1.0, bab_per_batch: int = 4, cut_min: float | None = CUT_MIN) -> Refined:
    """Refine every partition of ``parts`` whose result (``results[k]``) is not a certified ``holds``
    (see the module docstring), within ``seconds`` of wall time and at most ``max_boxes`` sub-boxes
    (a count: the tests' way to stop without timing the machine)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):          # small matrices: BLAS threads only contend (as falsify_boxes)
        return _refine(problem, parts, results, seconds=seconds, max_boxes=max_boxes, batch=batch,
                       enum_points=enum_points, bab_nodes=bab_nodes, bab_seconds=bab_seconds,
                       bab_per_batch=bab_per_batch, cut_min=cut_min)


def _refine(problem, parts, results, *, seconds, max_boxes, batch, enum_points, bab_nodes, bab_seconds,
            bab_per_batch, cut_min, track=None, split: bool = False) -> Refined:
    from fairspec.backends.pair.certify import decide_by_bab, runtime_of
    from fairspec.backends.quantify import INTEGER_POINTS, _kind, measure
    from fairspec.certify.boxes import decide_boxes
    from fairspec.certify.enumerate import count_individuals

    t0 = time.perf_counter()
    stop = time.monotonic() + max(0.0, float(seconds))
    out = Refined(stats={"boxes": 0, "fair_boxes": 0, "unfair_boxes": 0, "bab_boxes": 0, "enumerated": 0,
                         "enumerated_fair": 0, "enumerated_unfair": 0, "cut_fair": 0, "cut_unfair": 0,
                         "split_tried": 0, "split_boxes": 0, "left": 0})
    why = refinable(problem, relaxed=track is not None)
    if why:
        out.reason = why
        return out
    rt = runtime_of(problem)
    split = split and rt.readout[0] != "argmax"     # the split's plans and certify's check read one logit or margin
    # the decision pass: an unprotected one-hot group is one more tied input of the cases (its categories)
    tie = track is not None
    cf = counterfactuals(problem, tie_groups=tie)
    if cf is None:
        out.reason = "the protected values and the categories of the unprotected one-hot groups make too many cases"
        return out
    cases, pairs = cf
    if not pairs:
        out.reason = "no two protected values differ where the pre-condition demands"
        return out
    try:
        errors = case_errors(problem, rt, cases)
    except (ValueError, TypeError, AttributeError, ArithmeticError) as e:
        out.reason = f"no runtime error bound: {e}"
        return out
    inputs = individual_of(problem, tie_groups=tie)
    grouped = {i for g in problem.onehot_groups for i in g}
    dims = [i for i in inputs if i not in grouped]
    integral = _kind(problem) == INTEGER_POINTS
    scorer = runtime_scorer(problem) if integral else None
    heap: list = []
    seq = itertools.count()
    # the fast path: every input of the individual an ordinary integer one (Fairify's domains), where
    # a box's measure is the product of its value counts (exact in int64: below 2**63)
    fast = integral and not problem.onehot_groups
    idx = np.array(inputs, dtype=np.int64)

    # the relaxed inputs span the domain in every box (never split: their values are the cases'): their
    # values' count, which quantify.measure multiplies in, is divided out
    per = int(np.prod([problem.hi[i] - problem.lo[i] + 1 for i, _ in problem.relaxed]))
    tied = tied_groups(problem) if tie else []

    def push(k, lo, hi):
        # so are a tied one-hot group's categories (quantify.measure counts them: its factor divided out)
        cats = [sum(1 for i in g if hi[i] >= 1) if not any(lo[i] >= 1 for i in g)
                else int(sum(1 for i in g if lo[i] >= 1) == 1) for g in tied]
        m = measure(problem, lo, hi) // per // int(np.prod(cats)) if all(cats) else 0
        if m:
            heapq.heappush(heap, (-float(m), next(seq), k, lo, hi, m))

    def push_many(K, LO, HI):
        M = np.prod((HI[:, idx] - LO[:, idx] + 1).astype(np.int64), axis=1)
        for k, lo, hi, m in zip(K, LO, HI, M.tolist()):
            if m:
                heapq.heappush(heap, (-float(m), next(seq), k, lo, hi, m))

    for k, ((lo, hi), r) in enumerate(zip(parts, results)):
        if r is not None and r.status == "holds" and getattr(r, "proof", None) is not None:
            continue
        push(k, np.asarray(lo, dtype=np.float64).copy(), np.asarray(hi, dtype=np.float64).copy())
    claim_fair = ("no individual of each of these boxes has a counterfactual that breaks the post-condition "
                  "on the model's runtime")
    claim_unfair = ("every individual of each of these boxes has a counterfactual that breaks the "
                    "post-condition on the model's runtime")
    st = out.stats
    start_measure = sum(it[5] for it in heap)
    decided = [0]
    # the undecided share of the refined partitions over time: [seconds, sub-boxes, undecided / start]
    trajectory, every, last = [], max(1.0, float(seconds) / 12), time.monotonic()

    def mark():
        trajectory.append([round(time.perf_counter() - t0, 2), st["boxes"],
                           float(1 - decided[0] / start_measure) if start_measure else 0.0])

    prev = None                 # (start, sub-boxes) of the batch before: its seconds per sub-box
    per_box = None              # the slowest seconds per sub-box of any batch so far
    while heap and time.monotonic() < stop and (max_boxes is None or st["boxes"] < max_boxes):
        now = time.monotonic()
        if prev is not None and prev[1]:
            per_box = max(per_box or 0.0, (now - prev[0]) / prev[1])
        if now - last >= every:
            mark()
            last = time.monotonic()
        before = st["enumerated_fair"] + st["enumerated_unfair"]
        take = batch if max_boxes is None else max(1, min(batch, max_boxes - st["boxes"]))
        # a batch is one vectorised call that no deadline interrupts: it takes only the sub-boxes that half
        # the time left fits at the slowest pace any batch of this call has had (the first batch
        # FIRST_BATCH). So a batch passes the deadline only when it runs more than twice as slow as every
        # batch before it, and then by at most the time it overran its own prediction (a 1,024-box batch of
        # a 13-100-100-1 network took 17 s on a loaded 2-core box: the tie fallback spent 67 s of a 60 s
        # timeout; the last batch's pace alone, after a fast batch, let a slow one overrun as well)
        if per_box is None:
            take = min(take, FIRST_BATCH)
        elif per_box > 0:
            take = min(take, int(0.5 * (stop - now) / per_box))
        if take < 1:
            break
        prev = (now, min(take, len(heap)))
        items = [heapq.heappop(heap) for _ in range(min(take, len(heap)))]
        if track is not None:
            items = track.keep(items, out)      # a partition already refuted needs no more sub-boxes
            if not items:
                continue
        st["boxes"] += len(items)
        small = [it for it in items if scorer is not None and it[5] <= enum_points]
        big = [it for it in items if not (scorer is not None and it[5] <= enum_points)]
        if small:
            _enumerate(problem, small, cases, pairs, scorer, inputs, out, count_individuals, track)
            decided[0] += st["enumerated_fair"] + st["enumerated_unfair"] - before
        if not big:
            continue
        LO = np.stack([it[3] for it in big])
        HI = np.stack([it[4] for it in big])
        kept_layers = [] if split else None
        dec = decide_boxes(rt.layers, LO, HI, cases, pairs, post=problem.post, errors=errors, eps=problem.eps,
                           eps_strict=problem.eps_strict, readout=rt.readout, encoding=rt.encoding,
                           integer=problem.integer, precision=rt.precision, complete=True,
                           claim_fair=claim_fair, claim_unfair=claim_unfair, cuts=fast and cut_min is not None,
                           keep_boxes=track is not None, keep_layers=kept_layers)
        rest = []
        for j, it in enumerate(big):
            k, lo, hi, m = it[2], it[3], it[4], it[5]
            s = int(dec.status[j])
            if s == 1:
                out.decided.append((k, "fair", lo, hi, m, 0, dec.fair_proof))
                st["fair_boxes"] += 1
                decided[0] += m
            elif s == -1:
                out.decided.append((k, "unfair", lo, hi, 0, m, dec.unfair_proof))
                st["unfair_boxes"] += 1
                decided[0] += m
            else:
                rest.append(j)
        if split and rest and not (st["split_tried"] >= SPLIT_GIVE_UP and st["split_boxes"] * 100 < st["split_tried"]):
            # the split at a hidden layer (certify.layersplit) on the boxes the bounds left: few live
            # neurons there, tiled, where the input box needs thousands of sub-boxes (AC-7 race); given up
            # for the rest of the call once it has proved under 1% of SPLIT_GIVE_UP boxes or more
            st["split_tried"] += len(rest)
            rest, m = _split_at_layer(problem, rt, cases, pairs, errors, big, LO, HI, rest, kept_layers, out,
                                      claim_fair)
            decided[0] += m
        if bab_nodes and rest:
            # the certified branch and bound (a node cap) on the largest sub-boxes the bounds left
            keep = []
            for j in sorted(rest, key=lambda j: -big[j][5])[:bab_per_batch]:
                if time.monotonic() >= stop:
                    break
                k, lo, hi, m = big[j][2], big[j][3], big[j][4], big[j][5]
                r = decide_by_bab(problem.restrict(lo, hi), "prove", min(bab_seconds, stop - time.monotonic()),
                                  max_nodes=bab_nodes)
                if r.status == "holds" and r.proof is not None:
                    out.decided.append((k, "fair", lo, hi, m, 0, r.proof))
                    st["bab_boxes"] += 1
                    decided[0] += m
                    keep.append(j)
            rest = [j for j in rest if j not in set(keep)]
        if fast and dec.cut is not None and rest:
            # a box whose own linear bounds decide a slice of it (along one input, at least cut_min of
            # it) is cut there: the slice counted, the one or two pieces beside it back to the queue
            R = np.array(rest, dtype=np.int64)
            C = dec.cut[R]
            L, H = LO[R], HI[R]
            rows = np.arange(len(R))
            dim = C[:, 0]
            wd = H[rows, dim] - L[rows, dim] + 1
            use = (C[:, 3] != 0) & ((C[:, 2] - C[:, 1] + 1) >= cut_min * wd)
            U = np.flatnonzero(use)
            if len(U):
                RU, CU, ru = R[U], C[U], np.arange(len(U))
                i, first, end = CU[:, 0], CU[:, 1].astype(np.float64), CU[:, 2].astype(np.float64)
                SL, SH = LO[RU].copy(), HI[RU].copy()
                SL[ru, i], SH[ru, i] = first, end
                M = np.prod((SH[:, idx] - SL[:, idx] + 1).astype(np.int64), axis=1).tolist()
                K = [big[j][2] for j in RU.tolist()]
                for r, (k, m, kind) in enumerate(zip(K, M, CU[:, 3].tolist())):
                    if kind == 1:
                        out.decided.append((k, "fair", SL[r], SH[r], m, 0, dec.cut_fair_proof))
                    else:
                        out.decided.append((k, "unfair", SL[r], SH[r], 0, m, dec.cut_unfair_proof))
                    decided[0] += m
                st["cut_fair"] += int((CU[:, 3] == 1).sum())
                st["cut_unfair"] += int((CU[:, 3] == -1).sum())
                A = first > LO[RU, i]               # the piece below the slice
                AL, AH = LO[RU[A]].copy(), HI[RU[A]].copy()
                AH[np.arange(int(A.sum())), i[A]] = first[A] - 1
                push_many([K[r] for r in np.flatnonzero(A).tolist()], AL, AH)
                B = end < HI[RU, i]                 # the piece above it
                BL, BH = LO[RU[B]].copy(), HI[RU[B]].copy()
                BL[np.arange(int(B.sum())), i[B]] = end[B] + 1
                push_many([K[r] for r in np.flatnonzero(B).tolist()], BL, BH)
            rest = [j for j, u in zip(rest, use.tolist()) if not u]
        if fast:
            # every undecided box split at once (numpy), on the input with the largest influence
            R = np.array(rest, dtype=np.int64)
            L, H = LO[R], HI[R]
            can = H[:, idx] > L[:, idx]
            # the bounds' linear coefficient times the number of values (influence / width * values):
            # on GC-1, 30,000 sub-boxes certify 15.8% against 14.6% with coefficient times width
            wd = H[:, idx] - L[:, idx]
            inf = np.where(can, dec.influence[R][:, idx] / np.where(can, wd, 1.0) * (wd + 1), -np.inf)
            wid = np.where(can, H[:, idx] - L[:, idx] + 1, -np.inf)
            use_w = ~np.any(inf > 0, axis=1)
            col = np.where(use_w, np.argmax(wid, axis=1), np.argmax(inf, axis=1))
            ok = can[np.arange(len(R)), col]
            st["left"] += int((~ok).sum())          # single individuals the bounds left (not enumerable)
            R, L, H, col = R[ok], L[ok], H[ok], col[ok]
            dim = idx[col]
            rows = np.arange(len(R))
            mid = np.floor((L[rows, dim] + H[rows, dim]) / 2)
            AH, BL = H.copy(), L.copy()
            AH[rows, dim] = mid
            BL[rows, dim] = mid + 1
            K = [big[j][2] for j in R.tolist()]
            push_many(K, L, AH)
            push_many(K, BL, H)
            continue
        for j in rest:
            k, lo, hi, m = big[j][2], big[j][3], big[j][4], big[j][5]
            halves = _split(problem, lo, hi, dec.influence[j], dims) if dims else None
            if halves is None:
                halves = _split_group(problem, lo, hi, inputs)
            if halves is None:
                st["left"] += 1                 # a single individual the bounds left, not enumerable
                continue
            for a, b in halves:
                push(k, a, b)
    mark()
    st["trajectory"] = trajectory
    st["left"] += len(heap)
    out.undecided = [(it[2], it[3], it[4], it[5]) for it in heap]
    st["seconds"] = round(time.perf_counter() - t0, 4)
    return out


def _split_at_layer(problem, rt, cases, pairs, errors, big, LO, HI, rest, kept_layers, out, claim):
    """The boxes ``rest`` (indices into ``big``) proved fair by a split at a hidden layer: the search
    (:func:`~fairspec.backends.layer_splits.layer_split_plans`, or :func:`~fairspec.backends.layer_splits.relational_split_plans` for the eps posts, from the per-layer
    bounds ``decide_boxes`` kept), certify's check (:func:`fairspec.certify.layersplit.prove_layer_split`,
    or :func:`fairspec.certify.relsplit.prove_relational_split`, its Proof listing the boxes); each proved
    box goes to ``out.decided`` as fair. Returns the boxes left and the measure decided."""
    from fairspec.backends.layer_splits import layer_split_plans, relational_split_plans
    from fairspec.certify.boxes import linear_output
    from fairspec.certify.layersplit import prove_layer_split
    from fairspec.certify.network import as_layers
    from fairspec.certify.relsplit import prove_relational_split

    eps_post = problem.post in ("logit", "prob")
    if not eps_post and problem.post != "label":
        return rest, 0
    if eps_post and not (rt.encoding is None or all(e.kind == "raw" for e in rt.encoding)):
        return rest, 0                  # the relational split needs raw inputs (as decide_boxes' relational bound)
    R = np.array(rest, dtype=np.int64)
    layers = linear_output(as_layers(rt.layers))      # the layers decide_boxes kept bounds of (a final ReLU's identity)
    bounds = [[(lo[R], hi[R]) for lo, hi in per_case] for per_case in kept_layers]
    if eps_post:
        # the eps posts: the relational split (copy a's live pre-activations tiled, copy b's shifted)
        plans = relational_split_plans(layers, LO[R], HI[R], cases, pairs, errors, rt.readout, post=problem.post,
                                       eps=problem.eps, eps_strict=problem.eps_strict, bounds=bounds)
    else:
        plans = layer_split_plans(layers, LO[R], HI[R], cases, errors, rt.readout, encoding=rt.encoding,
                                  integer=problem.integer, precision=rt.precision, bounds=bounds)
    if not any(p is not None for p in plans):
        return rest, 0
    T = [j for j, p in enumerate(plans) if p is not None]
    if eps_post:
        dec = prove_relational_split(layers, LO[R[T]], HI[R[T]], cases, pairs, [plans[j] for j in T], errors=errors,
                                     post=problem.post, eps=problem.eps, eps_strict=problem.eps_strict,
                                     readout=rt.readout, encoding=rt.encoding, integer=problem.integer,
                                     precision=rt.precision, complete=True, claim=claim, keep_boxes=True)
    else:
        dec = prove_layer_split(layers, LO[R[T]], HI[R[T]], cases, pairs, [plans[j] for j in T], errors=errors,
                                readout=rt.readout, encoding=rt.encoding, integer=problem.integer,
                                precision=rt.precision, complete=True, claim=claim, keep_boxes=True)
    proved = set()
    m_all = 0
    for i, j in enumerate(T):
        if dec.status[i] == 1:
            it = big[rest[j]]
            out.decided.append((it[2], "fair", it[3], it[4], it[5], 0, dec.proof))
            out.stats["split_boxes"] += 1
            m_all += it[5]
            proved.add(rest[j])
    return [j for j in rest if j not in proved], m_all


def _enumerate(problem, items, cases, pairs, scorer, inputs, out, count_individuals, track=None):
    """Every individual of the small sub-boxes ``items`` under every protected value, one batch
    (with ``track``: one count and Proof per partition, listing its boxes, and each partition's
    first unfair individual kept, for :func:`decide_partitions`)."""
    P = [box_points(problem, it[3], it[4], inputs) for it in items]
    sizes = [p.shape[0] for p in P]
    X = np.concatenate(P)
    claim = ("each individual of these boxes counted fair or unfair on the model's runtime "
             "under every value of the protected inputs")
    if track is not None:
        track.enumerated(problem, items, P, scorer, cases, pairs, claim, out, count_individuals)
        return
    S, unsure = batch_scores(scorer, X, cases, pairs)
    C, post, opts = counted_scores(scorer, X, cases, S)
    res = count_individuals(C, pairs, post, eps=problem.eps, decision_threshold=scorer.threshold,
                            eps_strict=problem.eps_strict, claim=claim, unsure=unsure, boxes=len(items),
                            readout=scorer.readout, **opts)
    at = 0
    st = out.stats
    for it, n in zip(items, sizes):
        f = int(res.fair[at:at + n].sum())
        u = int(res.unfair[at:at + n].sum())
        at += n
        out.decided.append((it[2], "count", it[3], it[4], f, u, res.proof))
        st["enumerated"] += n
        st["enumerated_fair"] += f
        st["enumerated_unfair"] += u


# ---------------------------------------------------------------------------------------------
# Deciding whole partitions by the refinement (the partitions the MILP passes left open)
# ---------------------------------------------------------------------------------------------

@dataclass
class PartDecision:
    """What :func:`decide_partitions` made of one partition: ``status`` "fair" (``proof``: certify's
    :func:`fairspec.certify.tiling.prove_tiled` over its sub-boxes), "unfair" (``pair``: an
    individual and its counterfactual, ``(x, x')``, that replays) or "open" (``reason``)."""

    status: str
    proof: object = None
    pair: tuple | None = None
    reason: str = ""
    stats: dict = field(default_factory=dict)


class _Tracker:
    """The refinement's bookkeeping per partition for :func:`decide_partitions`: which partitions
    are refuted (their first unfair individual), and the enumerated sub-boxes per partition."""

    def __init__(self, problem):
        self.problem = problem
        self.unfair: dict = {}           # k -> an unfair individual (feature-space point)
        # k -> an individual unfair in the enumeration's batch, within a float runtime's rounding of the
        # threshold: the partition is refuted by it only when its pair replays (in every batching a user
        # replays it in) and nothing else decided the partition
        self.fragile: dict = {}
        self.seen = 0                    # out.decided entries looked at

    def _scan(self, out):
        for e in out.decided[self.seen:]:
            if e[1] == "unfair" and e[0] not in self.unfair:
                self.unfair[e[0]] = np.asarray(e[2], dtype=np.float64).copy()
        self.seen = len(out.decided)

    def keep(self, items, out):
        self._scan(out)
        return [it for it in items if it[2] not in self.unfair]

    def enumerated(self, problem, items, P, scorer, cases, pairs, claim, out, count_individuals):
        st = out.stats
        at = 0
        spans = []
        for it, p in zip(items, P):
            spans.append((it, at, at + p.shape[0]))
            at += p.shape[0]
        by: dict = {}
        for sp in spans:
            by.setdefault(sp[0][2], []).append(sp)
        X = np.concatenate(P)
        # one batch per protected case for every partition's boxes; the count per partition
        S, unsure = batch_scores(scorer, X, cases, pairs)
        S, post, opts = counted_scores(scorer, X, cases, S)
        for k, group in by.items():
            rows = np.concatenate([np.arange(a, b) for _, a, b in group])
            boxes = (np.stack([it[3] for it, _, _ in group]), np.stack([it[4] for it, _, _ in group]))
            res = count_individuals([s[rows] for s in S], pairs, post, eps=problem.eps,
                                    decision_threshold=scorer.threshold, eps_strict=problem.eps_strict, claim=claim,
                                    unsure=None if unsure is None else unsure[rows], boxes=len(group), cases=cases,
                                    _boxes=boxes, readout=scorer.readout, **opts)
            j = 0
            for it, a, b in group:
                n = b - a
                f = int(res.fair[j:j + n].sum())
                u = int(res.unfair[j:j + n].sum())
                if u and k not in self.unfair:
                    self.unfair[k] = X[rows[j + int(np.argmax(res.unfair[j:j + n]))]].copy()
                if res.unsure_unfair is not None and k not in self.fragile and res.unsure_unfair[j:j + n].any():
                    self.fragile[k] = X[rows[j + int(np.argmax(res.unsure_unfair[j:j + n]))]].copy()
                j += n
                out.decided.append((k, "count", it[3], it[4], f, u, res.proof))
                st["enumerated"] += n
                st["enumerated_fair"] += f
                st["enumerated_unfair"] += u

    def pair(self, k, cases, pairs, fragile: bool = False):
        """A pair of the unfair individual of partition ``k`` that replays (None if none does);
        ``fragile``: of its individual within the runtime's rounding of the threshold."""
        from fairspec.backends.pair.certify import replays

        x = (self.fragile if fragile else self.unfair)[k]
        for a, b in pairs:
            xa, xb = x.copy(), x.copy()
            for i, v in cases[a].items():
                xa[i] = v
            for i, v in cases[b].items():
                xb[i] = v
            if replays(self.problem, xa, xb):
                return xa, xb
        return None


def decide_partitions(problem, parts, *, seconds: float, max_boxes: int | None = None, batch: int = BATCH,
                      enum_points: int = ENUM_POINTS, cut_min: float | None = CUT_MIN,
                      split: bool = True) -> list[PartDecision]:
    """Decide the partitions ``parts`` (boxes the MILP passes left open) by the refinement (the same
    best-first splitting, batched bounds and enumeration as :func:`refine_partitions`, within
    ``seconds`` and at most ``max_boxes`` sub-boxes), one :class:`PartDecision` per partition:

    * ``split``: a sub-box the bounds leave is first tried split at a hidden layer (the sign property:
      :func:`~fairspec.backends.layer_splits.layer_split_plans`, checked by :func:`fairspec.certify.layersplit.prove_layer_split`; the
      eps posts on raw inputs: :func:`~fairspec.backends.layer_splits.relational_split_plans`, checked by
      :func:`fairspec.certify.relsplit.prove_relational_split`);
    * a sub-box proved unfair, or an enumerated unfair individual: the partition is refuted by that
      individual and a counterfactual that replays on the runtime (its other sub-boxes are dropped);
    * every sub-box proved fair (bounds) or enumerated fair: certify's
      :func:`fairspec.certify.tiling.prove_tiled_many` checks that the sub-boxes tile the partition (each
      integer point in exactly one) and that each is covered by its batch's Proof, and mints one Proof;
    * otherwise open (the budget ended first, or a check refused).

    Integer inputs only, relaxed inputs only as :func:`counterfactuals` takes them, and an enumerable
    runtime. An unprotected one-hot group is a tied input of the cases (``counterfactuals(tie_groups=True)``):
    each category a case, a pair's two cases in one category; the tiles span the group, and certify checks
    the recorded cases hold every category."""
    from fairspec.backends.quantify import INTEGER_POINTS, _kind
    from fairspec.certify.partitions import problem_scope
    from fairspec.certify.tiling import prove_tiled_many

    parts = [(np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)) for lo, hi in parts]
    why = refinable(problem, relaxed=True)
    if not why and (_kind(problem) != INTEGER_POINTS or not np.all(problem.integer)):
        why = "the decision by refinement needs integer inputs"
    if not why and counterfactuals(problem, tie_groups=True) is None:
        # an unprotected one-hot group is a tied input of the cases (a group of the individual: its tiles'
        # lattice points are not its categories, tiling counts 2**k corners of a group of k)
        why = "the protected values and the categories of the unprotected one-hot groups make too many cases"
    if not why and runtime_scorer(problem) is None:
        why = "the runtime cannot be evaluated here for the enumeration"
    if why:
        return [PartDecision("open", reason=why) for _ in parts]
    track = _Tracker(problem)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        ref = _refine(problem, parts, [None] * len(parts), seconds=seconds, max_boxes=max_boxes, batch=batch,
                      enum_points=enum_points, bab_nodes=0, bab_seconds=0.0, bab_per_batch=0, cut_min=cut_min,
                      track=track, split=split)
    if ref.reason:
        return [PartDecision("open", reason=ref.reason) for _ in parts]
    track._scan(ref)
    cases, pairs = counterfactuals(problem, tie_groups=True)
    waiting = {it[0] for it in ref.undecided}
    unsure = set()
    groups: dict = {}
    for k, kind, lo, hi, f, u, proof in ref.decided:
        if k in track.unfair or k in waiting:
            continue
        if kind == "fair" or (kind == "count" and u == 0 and proof.detail.get("fair") == proof.detail.get("count")):
            g = groups.setdefault(k, {}).setdefault(id(proof), (proof, [], []))
            g[1].append(lo)
            g[2].append(hi)
        else:
            # an enumerated sub-box (or one of its batch) with an individual neither fair nor unfair: a
            # logistic within rounding of the threshold, or a pair another batch may decide otherwise
            waiting.add(k)
            unsure.add(k)
    out = []
    claim = ("no individual of this partition has a counterfactual that breaks the post-condition on the model's "
             "runtime: its sub-boxes tile it, each proved fair by bounds or enumerated")
    tiled = {}                          # the partitions whose every sub-box was decided fair: checked at once
    for k, (lo, hi) in enumerate(parts):
        if k in track.unfair or k in waiting or k not in groups:
            continue
        tiled[k] = (lo, hi, [(np.stack(L), np.stack(H), p) for p, L, H in groups[k].values()])
    proofs = dict(zip(tiled, prove_tiled_many(list(tiled.values()), problem.integer, claim=claim,
                                              individual=individual_of(problem, tie_groups=True),
                                              pair=problem_scope(problem))))
    for k, (lo, hi) in enumerate(parts):
        if k in track.unfair:
            pr = track.pair(k, cases, pairs)
            out.append(PartDecision("unfair", pair=pr) if pr is not None else
                       PartDecision("open", reason="an individual proved unfair, but no counterfactual replayed"))
        elif k not in tiled and k in track.fragile and (pr := track.pair(k, cases, pairs, fragile=True)) is not None:
            # an individual within the runtime's rounding of the threshold whose pair replays
            out.append(PartDecision("unfair", pair=pr))
        elif k not in tiled and k in unsure:
            out.append(PartDecision("open", reason="an enumerated individual lies within the runtime's rounding of "
                                                   "the threshold, and another batch size or order may decide it "
                                                   "otherwise"))
        elif k not in tiled:
            out.append(PartDecision("open", reason=f"the refinement did not decide it in {ref.stats.get('seconds', 0):.1f} s "
                                                   f"({ref.stats.get('boxes', 0):,} sub-boxes)"))
        else:
            proof = proofs[k]
            out.append(PartDecision("fair", proof=proof, stats={"tiles": sum(len(g[0]) for g in tiled[k][2])})
                       if proof is not None else
                       PartDecision("open", reason="certify refused the tiling of the refined sub-boxes"))
    for d in out:
        d.stats.update(boxes=ref.stats.get("boxes", 0), seconds=ref.stats.get("seconds", 0))
    return out


#: the decision pass stops trying the split (for the rest of one call) once it has tried this many boxes
#: and proved under 1% of them (a count)
SPLIT_GIVE_UP = 256


def case_errors(problem, rt, cases) -> list[float]:
    """Per protected value (case), the runtime error bound E over the whole domain with that value set
    (:func:`fairspec.certify.network.runtime_error_bound`): what the batched bounds widen by."""
    from fairspec.certify.network import runtime_error_bound

    errors = []
    for c in cases:
        clo, chi = problem.lo.copy(), problem.hi.copy()
        for i, v in c.items():
            clo[i] = chi[i] = v
        errors.append(runtime_error_bound(rt.layers, clo, chi, encoding=rt.encoding, readout=rt.readout,
                                          precision=rt.precision, integer=problem.integer,
                                          onehot_groups=problem.onehot_groups))
    return errors
