"""Input-space partitioning (Fairify's "input partitions") with per-partition budgets.

The box of the *tied* inputs (the ones x and x' share, so every pair lies inside one
partition) is cut into sub-boxes (the schemes: :mod:`fairspec.backends.milp.schemes`); each partition is decided independently — tighter bounds,
fewer unstable ReLUs, a per-partition time budget — and the verdicts are combined:

* ``violated`` if any partition has a replayed witness (the lowest-numbered one is shown);
* ``holds`` (proved) only if every partition is proved;
* ``unknown`` otherwise, with a :class:`~fairspec.backends.pair.Coverage` that gives the
  share of partitions and of input-space volume (integer points over the partitioned
  inputs) proved / refuted / undecided, and FairQuant's exact certified / falsified /
  undecided shares of the domain (:mod:`fairspec.backends.quantify`: a refuted box counts
  only its replayed counterexample points as falsified).

On a network with a total budget a partition is decided by passes, each on what the previous ones
left: the batched attack, the first decision pass (many partitions only: a few sub-boxes each, see
:data:`DECIDE_FIRST_BOXES`), the attack again on what that pass left with far more points per box
(:data:`AGAIN_ROUNDS`) and, when it refuted some, the decision rounds again, the union pass, one solve per partition, the retry passes (:data:`RETRIES`),
the decision pass by refinement (:func:`_decide_pass`: sub-boxes proved fair / enumerated -- holds with
certify's tiling Proof -- or an unfair individual -- violated; a short one before the retries too), then
doubling budgets until the total is spent.

Partitions run through :mod:`fairspec.runtime.executor`; results come back in partition
order, so the report does not depend on the executor (up to time-outs, which depend on the
machine's load). With ``stop_on_violation`` partitions run in fixed-size chunks and stop
after the first chunk with a violation: the set of partitions decided is the same under any
executor.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from fairspec.backends.milp.schemes import default_partitions, fairify_partitions, grid_partitions, split_widest
from fairspec.backends.milp.undecided import undecided_reason
from fairspec.backends.pair import Coverage, PairProblem, PairResult
from fairspec.backends.pair.certify import _is_network
from fairspec.backends.quantify import replayed_attack, replayed_results

__all__ = ["fairify_partitions", "default_partitions", "split_widest", "grid_partitions", "solve_partitioned",
           "at_a_tie"]


def _solve_part(shared, item) -> PairResult:
    return _decide_part(shared, item)


def _grow_part(shared, item) -> list:
    """FairQuant's falsified share: a box of a refuted partition proved unfair (certify), grown around
    its counterexample in at most ``nodes`` proof attempts (``[(lo, hi, proof)]``, maybe empty)."""
    from fairspec.backends.quantify import unfair_boxes

    problem, deadline, nodes = shared[0], shared[4], shared[5]
    _, lo, hi, witness = item
    return unfair_boxes(problem.restrict(lo, hi), max_nodes=nodes, deadline=deadline, witness=witness)


def _no_boxes(item, reason: str) -> list:
    return []


def _decide_part(shared, item) -> PairResult:
    problem, mode, backend, kw, deadline = shared[:5]
    index, lo, hi = item[:3]
    if len(item) > 3 and item[3] is not None:
        return item[3]                  # refuted by the early falsification (a replayed witness)
    sub = problem.restrict(lo, hi)
    kw = dict(kw)
    bab_tried = kw.pop("bab_tried", False)      # a pass of the branch and bound itself ran on it before
    if deadline is not None:
        left = deadline - time.time()
        if left <= 0:
            return PairResult("unknown", reason="the total time budget was spent before this partition",
                              engine=kw.get("engine", backend), mode=mode)
        kw["time_limit"] = left if kw.get("time_limit") is None else min(kw["time_limit"], left)
    from fairspec.models.trees import TreeEnsemble

    if isinstance(problem.net, TreeEnsemble):
        from fairspec.backends.trees.modes import solve as tree_solve
        from fairspec.backends.trees.space import prune

        # the ensemble pruned to the partition: splits the box decides are gone (often every
        # split on the protected inputs, and then the partition is proved before any solver)
        sub = replace(sub, net=prune(sub.net, sub.lo, sub.hi, sub.integer))
        engine = "z3" if backend == "smt" else kw.pop("engine", "highs")
        if engine == "portfolio":
            engine = "highs"   # the tree engines' own portfolio (z3 first, then HiGHS)
        return tree_solve(sub, mode, engine=engine, **kw)
    if kw.get("engine") in ("bab", "max") and mode in ("find", "prove"):
        from fairspec.backends.pair.certify import decide_by_bab, refute_by_max

        return (decide_by_bab if kw["engine"] == "bab" else refute_by_max)(sub, mode, kw.get("time_limit"))
    if mode in ("find", "prove") and not bab_tried:
        from fairspec.backends.pair.certify import certify_first

        tl = kw.get("time_limit")
        first = certify_first(sub, mode, seconds=2.0 if tl is None else min(2.0, float(tl)))
        if first is not None:
            return first
    if backend == "smt":
        from fairspec.backends.smt import solve as smt_solve

        return smt_solve(sub, mode, **kw)
    from fairspec.backends.milp.modes import solve

    return solve(sub, mode, **kw)


def solve_partitioned(problem: PairProblem, mode: str = "prove", parts=None, *,
                      backend: str = "milp", time_per_part: float | None = 10.0,
                      time_limit: float | None = None, executor=None, stop_on_violation: bool = False,
                      chunk: int = 8, unfair_nodes: int = 0, falsify: bool = True, retries=None, unions: bool = True,
                      refine: float = 0.0, decide_share: float | None = None, estimate: int = 0, seed: int = 0,
                      confidence: float = 0.95, **solver_kw) -> PairResult:
    """Decide ``problem`` partition by partition.

    parts:         list of (lo, hi) boxes over the model inputs (default
                   :func:`default_partitions`: Fairify's scheme, at most 1024 boxes; see also
                   :func:`fairify_partitions`, :func:`split_widest`, :func:`grid_partitions`).
    mode:          find | prove | maximize (per partition; maximize takes the largest value).
    backend:       "milp" (``solver_kw``: engine, lp_bounds, diff_rows, ...) or "smt".
    time_per_part: each partition's budget (seconds; a time-out leaves it undecided).
    time_limit:    total wall-clock budget; partitions reached after it are undecided.
    executor:      an :class:`~fairspec.runtime.executor.Executor` (default: a process pool
                   over the cores when there is more than one partition).
    unfair_nodes:  proof attempts to grow a box proved unfair around a refuted partition's
                   witness (FairQuant's falsified share, :func:`fairspec.backends.quantify.unfair_boxes`;
                   0, the default: none, the falsified share is then the counterexample points
                   alone; a spec's ``partitions = N`` uses 12), after every partition is decided and
                   within ``time_limit`` (``stats["quantify_seconds"]``).
    falsify:       find / prove on a network: first one batched attack over every box
                   (:func:`fairspec.backends.milp.falsify.falsify_boxes`); a box it refutes with a
                   replayed witness is decided without a solver (``stats["attack_refuted"]``; its
                   unfair boxes are still grown); when the first decision pass ran and left between
                   :data:`AGAIN_MIN` and :data:`AGAIN_MAX` partitions (or more, when a sample of them shows
                   that it pays: :func:`_probe_pays`), the attack runs again on those with
                   the rounds :data:`AGAIN_ROUNDS` (far more points per box; a round that refutes none ends
                   them; at most :data:`AGAIN_SHARE` of what is left of the budget and :data:`AGAIN_SECONDS`
                   per partition;
                   ``stats["attack_again_refuted"]``, None when it did not run).
    refine:        seconds of FairQuant's refinement after everything else
                   (:func:`fairspec.backends.refine.refine_partitions`: every partition without a
                   certified holds split into sub-boxes, each proved fair, proved unfair or
                   enumerated on the runtime; counted in the shares; ``stats["refine"]``); 0: none.
    unions:        find / prove with the MILP on a network: before the per-partition pass, neighbouring
                   partitions the attack left are merged (at most 16 each) and each union is given the
                   certified branch and bound (:mod:`fairspec.backends.milp.unions`): a union proved
                   proves its members, a pair it finds refutes the member holding it; the rest go on
                   (``stats["union_decided"]``).
    retries:       find / prove with the MILP on a network: the passes after the first, as (engine, budget factor);
                   the partitions a pass leaves undecided go to the next with ``factor * time_per_part`` each, while
                   the total budget lasts. Default :data:`RETRIES`: SCIP, HiGHS with a longer budget, then the
                   certified branch and bound over the partition (``"bab"``: splits inputs and ReLU phases inside
                   the box, its proof a bab-certificate, its candidate pairs replayed); with ``engine="portfolio"``
                   :data:`PORTFOLIO_RETRIES` (the race again, 6x, then the branch and bound); for ``prob`` (the
                   first pass the branch and bound with :data:`PROB_FIRST` of the budget) :data:`PROB_RETRIES` (the
                   branch and bound with growing budgets first, and a falsifier, ``"max"``); ``()``: one pass. With
                   a ``time_limit``, what the retries leave then gets doubling budgets (the branch and bound and the
                   portfolio in turn, from twice the largest retry factor) until the total budget is spent.
    decide_share:  find / prove on a network with a total budget: after the retry passes (before the doubling ones),
                   the partitions still open are decided by the refinement
                   (:func:`fairspec.backends.refine.decide_partitions`: split into sub-boxes proved fair by batched
                   bounds or enumerated on the runtime -- holds with one certify Proof that the sub-boxes tile the
                   partition -- or an unfair individual found, whose pair replays -- violated), with this share of
                   what is left of the total budget (default :data:`DECIDE_SHARE`; 0: no such pass); a short pass
                   with :data:`DECIDE_EARLY` of that share also runs before the retries, and, when the attack leaves
                   at least :data:`DECIDE_FIRST_MIN` partitions, a first one (:data:`DECIDE_FIRST` of the share, in
                   rounds of at most :data:`DECIDE_FIRST_BOXES` sub-boxes per partition) before the union pass and
                   the solves, and after the second attack (see ``falsify``), when it refuted some and the first
                   pass's last round decided some, the rounds again on what is left (:data:`DECIDE_AGAIN_BOXES`, at
                   most :data:`DECIDE_AGAIN_SECONDS` per partition left); ``stats["refine_decided"]`` (counts, the
                   partitions decided, each pass's counts: "first", "after the second attack", "before retries",
                   "after retries").
    estimate:      individuals drawn uniformly from the undecided share (seeded with ``seed``) and
                   decided on the runtime: an *estimate* of its unfair / fair split with exact
                   Clopper-Pearson intervals at ``confidence`` (:mod:`fairspec.backends.estimate`;
                   ``coverage.estimate``, never mixed into the shares); 0, the default: none.
    """
    from fairspec.runtime.executor import SerialExecutor, default_executor

    t0 = time.perf_counter()
    if parts is None:
        parts = default_partitions(problem)
    parts = [(np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)) for lo, hi in parts]
    if not parts:
        raise ValueError("no partitions")
    own = executor is None
    ex = executor or (default_executor(len(parts)) if len(parts) > 1 else SerialExecutor())
    kw = dict(solver_kw)
    kw["time_limit"] = time_per_part
    deadline = None if time_limit is None else time.time() + float(time_limit)
    shared = (problem, mode, backend, kw, deadline, int(unfair_nodes))
    # the attack takes at most a quarter of the total budget: its light rounds, then its heavy one on at most
    # HEAVY_BOXES boxes -- on a seeded sample first when the first decision pass is to run (_heavy_round)
    stop = None if time_limit is None else time.time() + 0.25 * float(time_limit)
    attack = falsify and mode in ("find", "prove")
    attacked = replayed_attack(problem, _attack(problem, mode, parts, stop, ex)) if attack else {}
    first_pass = backend == "milp" and retries != () and deadline is not None and not (stop_on_violation and attacked) \
        and len(parts) - len(attacked) >= DECIDE_FIRST_MIN
    heavy, later = _heavy_round(problem, mode, parts, attacked, stop, ex, first_pass) if attack else (None, [])
    results: list[PairResult | None] = [attacked.get(k) for k in range(len(parts))]
    laps = _Laps(results, t0)
    laps("attack")
    items = [] if stop_on_violation and attacked else \
        [(k, lo, hi, None) for k, (lo, hi) in enumerate(parts) if k not in attacked]
    retried: dict[str, int] = {}
    by_union = 0
    first = second = None
    again = None
    try:
        share = DECIDE_SHARE if decide_share is None else float(decide_share)
        if len(items) >= DECIDE_FIRST_MIN and backend == "milp" and retries != ():
            # the first decision pass: batched bounds over every partition the attack left, a few sub-boxes
            # each, before any per-partition solve (which pays about a second per box even where the
            # bounds at the root decide it: AC-12 race left 4,968 such partitions unreached in 900 s)
            # rounds of growing sub-box caps on what the previous round left, all within one share
            def run_rounds(caps, each_seconds=None):
                nonlocal items
                until = None if deadline is None else time.time() + share * DECIDE_FIRST * (deadline - time.time())
                if until is not None and each_seconds is not None:
                    until = min(until, time.time() + each_seconds * len(items))
                done = []
                for each in caps:
                    if not items or until is None or time.time() >= until:
                        break
                    c = _decide_pass(problem, mode, parts, results, ex, deadline, share * DECIDE_FIRST,
                                     stop_on_violation, fresh=True, boxes_each=each, budget=until - time.time())
                    done.append((f"{each} sub-boxes each", c))
                    items = [it for it in items if results[it[0]] is None]
                    if not c or not (c["proved"] + c["refuted"]):
                        break       # a round that decides none: more sub-boxes are unlikely to (BM-1 age)
                return done

            rounds = run_rounds(DECIDE_FIRST_BOXES)
            first = _merge_passes(*rounds) if rounds else None
            laps("first decision rounds")
            if rounds and falsify and len(items) >= AGAIN_MIN and deadline is not None \
                    and _is_network(problem) and mode in ("find", "prove") \
                    and (len(items) <= AGAIN_MAX or _probe_pays(problem, mode, parts, items, results, ex, deadline)):
                # the attack again, on what the first pass left, with many more points per box: what the
                # bounds leave after 1,024 sub-boxes is mostly unfair partitions whose violations are rare
                # (AC-11 sex: a 16,384-point round refuted 155 of the 263 the first pass left in 20 s,
                # where the union pass and the per-partition solves took ~700 s for 183)
                from fairspec.backends.milp.falsify import ROUNDS

                keys = [it[0] for it in items]
                stop2 = time.time() + min(AGAIN_SHARE * (deadline - time.time()), AGAIN_SECONDS * len(keys))
                hit = _attack(problem, mode, [parts[k] for k in keys], stop2, ex, rounds=AGAIN_ROUNDS, seed=len(ROUNDS),
                              heavy_boxes=len(keys), until_none=True)
                for j, r in hit.items():
                    results[keys[j]] = _again(r)
                again = len(hit) + _probed(results)
                items = [it for it in items if results[it[0]] is None]
                laps("second attack")
                last = rounds[-1][1]
                if again and last and (last["proved"] + last["refuted"]):
                    # and the decision rounds again, bigger, on the fair partitions left (only when the first
                    # pass's last round still decided some: AC-9 race eps, its 128 round none, then a 1,024
                    # round on the 162 the attack left none in 42 s): inside a job the
                    # refinement splits the largest undecided sub-box first, over all its partitions, so
                    # the unfair ones (never proved fair) took most of the sub-boxes (AC-11 sex: the 61 the
                    # attacks left, all decided in 4 s by one 4,096 round; bench/results/fairify_ac11.md)
                    after = run_rounds(DECIDE_AGAIN_BOXES, DECIDE_AGAIN_SECONDS)
                    second = _merge_passes(*after) if after else None
                    laps("decision rounds after the second attack")
            elif _probed(results):
                again = _probed(results)        # the probe's sample alone (the attack did not pay)
                laps("second attack's probe")
        if later and again is None and deadline is not None and time.time() < deadline:
            # the heavy round put off by its sample (_heavy_round), on what the first decision pass left of
            # its boxes (the second attack, when it ran, began with a round as heavy on all of them)
            keys = [k for k in later if results[k] is None]
            hit = _attack_keys(problem, mode, parts, keys, time.time() + AGAIN_SHARE * (deadline - time.time()), ex)
            for k, r in hit.items():
                results[k] = replace(r, stats={**(r.stats or {}), "pass": "heavy round after the first decision pass"})
            heavy.update(after=len(keys), after_refuted=len(hit))
            items = [it for it in items if results[it[0]] is None]
            laps("heavy attack round after the first decision pass")
        if unions and items and mode in ("find", "prove") and backend == "milp" and _is_network(problem) \
                and kw.get("engine") != "bab":
            from fairspec.backends.milp.unions import union_pass

            by_union = union_pass(problem, parts, items, results, ex, shared, _failed_part)
            items = [it for it in items if results[it[0]] is None]
            laps("unions")
        step = max(1, chunk if stop_on_violation else len(items))
        first_shared = shared
        bab_first = problem.post == "prob" and backend == "milp" and _is_network(problem) \
            and mode in ("find", "prove") and kw.get("engine") != "bab" and retries != ()
        if bab_first:
            # prob: the first per-partition pass is the certified branch and bound (its band split of x''s
            # logit proves in a second what the MILP's bisection does not settle in its budget; AC-8 sex eps:
            # 985 partitions left at ~12 s each, certify_first then HiGHS, most never reached in 900 s);
            # the MILP engines come in the retry passes. A one-second sweep first (PROB_FIRST, PROB_RETRIES: at
            # 3 s or 10 s each the pass reached too few of AC-8 sex's; bench/results/fairify_band.md)
            first_kw = dict(kw, engine="bab",
                            time_limit=None if time_per_part is None else PROB_FIRST * float(time_per_part))
            first_shared = (problem, mode, backend, first_kw, deadline, int(unfair_nodes))
        for s in range(0, len(items), step):
            batch = items[s:s + step]
            for (k, *_), r in zip(batch, ex.map(_solve_part, batch, shared=first_shared, on_error=_failed_part)):
                results[k] = r
            if stop_on_violation and any(r is not None and r.status == "violated" for r in results):
                break
        laps("per partition, " + ("bab" if bab_first else str(kw.get("engine") or backend)))
        if retries is None:
            retries = (() if not (backend == "milp" and mode in ("find", "prove") and _is_network(problem))
                       else PORTFOLIO_RETRIES if kw.get("engine") == "portfolio"
                       else PROB_RETRIES if bab_first else RETRIES)
        # (a budget spent before the partitions -- time_per_part 0: the preparation took it all -- leaves them
        # undecided, said by the coverage: no doubling passes, whose factors divide by it)
        if retries and deadline is not None and time_per_part:
            # then, while the total budget lasts, the boxes still open get doubling budgets, the branch and
            # bound and the portfolio in turn: a deep network's last boxes (GC-5) need minutes, not seconds
            factor = 2.0 * max(f for _, f in retries)
            extra = []
            while factor * float(time_per_part) < float(time_limit):
                extra += [("bab", factor), ("portfolio", factor)]
                factor *= 2.0
            extra.append(("bab", float(time_limit) / float(time_per_part)))
            retries = tuple(retries) + tuple((e, f, f"{e} {f:g}x") for e, f in extra)
        n_retries = 0 if not retries else sum(1 for r in retries if len(r) == 2)
        engines = [r[0] for r in retries or () if len(r) == 2]     # one with two retries: named by budget
        by_refine = None
        # a short decision pass before the retries (what the bounds and enumeration settle in seconds need
        # not wait for minutes of SCIP and HiGHS), the longer one after them
        early = _decide_pass(problem, mode, parts, results, ex, deadline, share * DECIDE_EARLY,
                             stop_on_violation) if retries else None
        laps("decision pass before retries")
        for step_no, (engine, factor, *label) in enumerate(retries):
            if step_no == n_retries and by_refine is None:
                by_refine = _decide_pass(problem, mode, parts, results, ex, deadline, share, stop_on_violation) or {}
                laps("decision pass after retries")
            longer = bool(label)        # a pass past the retries: not for the boxes at a tie
            label = label[0] if label else engine if engines.count(engine) < 2 else f"{engine} {factor:g}x"
            if stop_on_violation and any(r is not None and r.status == "violated" for r in results):
                break
            if deadline is not None and time.time() >= deadline:
                break
            left = [k for k, r in enumerate(results) if r is not None and r.status == "unknown"
                    and (not longer or not at_a_tie(r))]
            if not left:
                break
            if engine == "max" and len(left) > MAX_LEFT:
                continue
            kw2 = dict(kw, engine=engine, time_limit=None if time_per_part is None else factor * float(time_per_part))
            if bab_first:
                kw2["bab_tried"] = True     # prob: the first pass was the branch and bound; no certify_first again
            shared2 = (problem, mode, backend, kw2, deadline, int(unfair_nodes))
            batch = [(k, parts[k][0], parts[k][1], None) for k in left]
            for (k, *_), r in zip(batch, ex.map(_solve_part, batch, shared=shared2, on_error=_failed_part)):
                before = results[k]
                results[k] = replace(r, seconds=before.seconds + r.seconds,
                                     stats={**(r.stats or {}), "pass": label})
                if r.status != "unknown":
                    retried[label] = retried.get(label, 0) + 1
            laps(f"retry, {label}")
        if by_refine is None and retries:
            by_refine = _decide_pass(problem, mode, parts, results, ex, deadline, share, stop_on_violation)
            laps("decision pass after retries")
        by_refine = _merge_passes(("first", first), ("after the second attack", second), ("before retries", early),
                                  ("after retries", by_refine))
        # then, in what is left of the budget, the boxes proved unfair around each refuted partition's
        # witness (the decisions come first: quantifying never costs a partition its verdict)
        t_q = time.perf_counter()
        grow = [(k, parts[k][0], parts[k][1], np.asarray(r.witness.x, dtype=np.float64))
                for k, r in enumerate(results) if unfair_nodes and r is not None and r.status == "violated"
                and r.witness is not None]
        if grow and (deadline is None or time.time() < deadline):
            for (k, *_), found in zip(grow, ex.map(_grow_part, grow, shared=shared, on_error=_no_boxes)):
                if found:
                    results[k] = replace(results[k], stats={**(results[k].stats or {}), "unfair_boxes": found})
        quantify_seconds = time.perf_counter() - t_q
        laps("unfair boxes")
        refined = None
        if refine and mode in ("find", "prove") and _is_network(problem):
            from fairspec.backends.refine import refine_partitions

            # its own budget, after the decisions (refining never costs a partition its verdict)
            refined = refine_partitions(problem, parts, results, seconds=float(refine))
            laps("refinement")
    finally:
        if own:
            ex.close()
    out = _combine(problem, mode, parts, results, time.perf_counter() - t0,
                   refined=() if refined is None else refined.decided)
    if estimate and out.coverage is not None and out.coverage.shares is not None:
        from fairspec.backends.estimate import estimate_shares, violated_by_sample

        t_e = time.perf_counter()
        est = estimate_shares(problem, parts, results, out.coverage.shares, refined, samples=int(estimate),
                              seed=int(seed), confidence=float(confidence))
        out = replace(out, coverage=replace(out.coverage, estimate=est),
                      stats={**out.stats, "estimate_seconds": round(time.perf_counter() - t_e, 4)})
        out = violated_by_sample(problem, out, est, mode)    # a sampled unfair individual is a witness
    if refined is not None:
        out.stats["refine"] = dict(refined.stats, reason=refined.reason)
        # where the undecided mass is: the 400 largest sub-boxes left and 400 drawn by measure (seeded)
        left = sorted(refined.undecided, key=lambda t: -t[3])
        sample = left[:400]
        if len(left) > 400:
            w = np.array([float(t[3]) for t in left[400:]])
            pick = np.random.default_rng(0).choice(len(w), size=min(400, len(w)), replace=False, p=w / w.sum())
            sample += [left[400 + int(i)] for i in sorted(pick)]
        out.stats["refine_undecided"] = {"boxes": sample, "measure": sum(t[3] for t in left)}
    out.stats["attack_refuted"] = len(attacked)
    out.stats["attack_again_refuted"] = again     # the second attack (None: it did not run)
    out.stats["attack_heavy"] = heavy             # the first attack's heavy round (None: it did not run)
    out.stats["union_decided"] = by_union         # partitions the union pass decided
    out.stats["retry_decided"] = retried          # partitions each retry pass decided
    out.stats["refine_decided"] = by_refine or {}  # the decision pass by refinement (_decide_pass)
    out.stats["quantify_seconds"] = round(quantify_seconds, 4)
    out.stats["phases"] = laps.done       # where the time went: each pass's seconds and partitions decided
    return out


class _Laps:
    """The timeline of :func:`solve_partitioned`: ``laps(name)`` records the seconds since the previous lap
    and the partitions decided in them (``done``: the laps that took time or decided any)."""

    def __init__(self, results, t0: float):
        self.results, self.t, self.n, self.done = results, t0, 0, []

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        n = sum(1 for r in self.results if r is not None and r.status != "unknown")
        if n != self.n or now - self.t >= 0.01:
            self.done.append({"phase": name, "seconds": round(now - self.t, 3), "decided": n - self.n})
        self.t, self.n = now, n


#: the second attack (after the first decision pass, on the partitions it left): rounds of far more
#: points per box than the first attack's (:data:`fairspec.backends.milp.falsify.ROUNDS`), each on what
#: the previous left, a round that refutes none ending them. AC-11 sex, the 263 partitions the first pass
#: left (one process, load 6): 16,384 points refuted 155 in 19.7 s; of the 108 left, 16,384 again (other
#: streams) 26 in 5.3 s, and the three rounds 47 in 35 s (bench/results/fairify_ac11.md)
AGAIN_ROUNDS = ((16384, 200, 64), (65536, 300, 128), (262144, 300, 256))
#: ... when the first decision pass ran and left at most this many partitions (AC-7 race leaves ~8,000:
#: no) ...
AGAIN_MAX = 1024
#: ... or, when it left more, a seeded sample of this many of them, attacked with the first of those rounds
#: first, refuted at least :data:`AGAIN_PROBE_HITS` of its partitions (their witnesses kept): the pass
#: left many unfair partitions, not fair ones the bounds are slow on (AC-8 sex eps: the first pass left
#: 2,319, the attack refuted 930 of them; AC-7 race sign leaves ~8,000, all fair) ...
AGAIN_PROBE = 256
#: ... (a fraction of the sample) ...
AGAIN_PROBE_HITS = 1 / 16
#: ... and at least this many (fewer: the union pass and the solves settle them in seconds; BM-1 age, 27
#: left: the attack took 11-18 s for 15 of them, a protected input of many values, where the row took 10 s
#: before; AC-1 sex, 3 left: HiGHS refutes each in 0.2-0.4 s) ...
AGAIN_MIN = 64
#: ... within this share of what is left of the total budget, and at most this many seconds per partition
AGAIN_SHARE = 0.25
AGAIN_SECONDS = 0.25
#: the first attack's heavy round, when the first decision pass is to run, on a seeded sample of this many
#: of the boxes its light rounds left first ...
HEAVY_PROBE = 16
#: ... and on the rest before that pass only when the sample refuted at least this share of it (else after
#: it, on what it leaves)
HEAVY_PROBE_HITS = 1 / 16
#: the share of what is left of the total budget after the retry passes that the decision pass by
#: refinement gets (the doubling passes get the rest)
DECIDE_SHARE = 0.5
#: the short decision pass before the retries gets this fraction of DECIDE_SHARE of what the first
#: pass left (so 10%)
DECIDE_EARLY = 0.2
#: the first decision pass (before the union pass and the per-partition solves) runs when the attack
#: leaves at least this many partitions (fewer: the solves reach them all anyway) ...
DECIDE_FIRST_MIN = 64
#: ... with at most this fraction of DECIDE_SHARE of the total budget (so 25%) ...
DECIDE_FIRST = 0.5
#: ... in rounds, each on what the previous one left, with at most this many sub-boxes per partition (a
#: count: what the bounds do not settle in a few splits goes on to the solvers; AC-11's open partitions
#: took 2-14, AC-12's 1; AC-7's need thousands; AC-11 race: 7,321 of 7,586 decided in the 16-box round,
#: 6 more of 263 in the 128-box round, bench/results/fairify_tight.md); a round that decides none ends them
#: (BM-1 age: the 128 and 1,024 rounds decided none of 27 in 8.5 s)
DECIDE_FIRST_BOXES = (16, 128, 1024)
#: after the second attack refuted some, when the first pass's last round still decided some, the rounds
#: again on what is left (the same share of what is left of the budget, the same stop at a round that
#: decides none) ...
DECIDE_AGAIN_BOXES = (1024, 4096, 16384)
#: ... and at most this many seconds per partition left (what its per-partition solve would cost at least,
#: about a second of fixed cost on one of two workers, halved): on a few boxes the solves are cheaper (BM-1
#: age, 12 left: uncapped, the 16,384 round took 32 s and decided none, the row 46.8 s against 10.1 s)
DECIDE_AGAIN_SECONDS = 0.25


def _again(r: PairResult, probe: bool = False) -> PairResult:
    """A partition the second attack refuted (``probe``: in :func:`_probe_pays`'s sample)."""
    return replace(r, reason="early falsification, again after the first decision pass: a sampled pair, replayed",
                   stats={**(r.stats or {}), "pass": "attack again, probe" if probe else "attack again"})


def _probed(results) -> int:
    """The partitions :func:`_probe_pays`'s sample refuted."""
    return sum(1 for r in results if r is not None and r.stats and r.stats.get("pass") == "attack again, probe")


def _probe_pays(problem, mode, parts, items, results, ex, deadline) -> bool:
    """Does the second attack pay on the many partitions (more than :data:`AGAIN_MAX`) the first decision
    pass left? A seeded sample of :data:`AGAIN_PROBE` of them gets the first of :data:`AGAIN_ROUNDS`
    (within its own share of the budget); the partitions it refutes are recorded in ``results`` whatever
    the answer, which is yes when it refuted at least :data:`AGAIN_PROBE_HITS` of the sample."""
    from fairspec.backends.milp.falsify import ROUNDS

    keys = [it[0] for it in items]
    rng = np.random.default_rng(len(keys))
    sample = sorted(int(k) for k in rng.choice(keys, size=min(AGAIN_PROBE, len(keys)), replace=False))
    stop = time.time() + min(AGAIN_SHARE * (deadline - time.time()), AGAIN_SECONDS * len(sample))
    hit = _attack(problem, mode, [parts[k] for k in sample], stop, ex, rounds=AGAIN_ROUNDS[:1], seed=len(ROUNDS),
                  heavy_boxes=len(sample), until_none=True)
    for j, r in hit.items():
        results[sample[j]] = _again(r, probe=True)
    items[:] = [it for it in items if results[it[0]] is None]
    return len(hit) >= AGAIN_PROBE_HITS * len(sample)


def _merge_passes(*named) -> dict | None:
    """The counts of the decision passes, ``(name, counts)`` each (None: the pass did not run), as one
    (``passes``: each pass's own counts by name)."""
    done = [(n, c) for n, c in named if c]
    if not done:
        ran = [c for _, c in named if c is not None]
        return ran[0] if ran else None
    out = {"tried": done[0][1]["tried"], "proved": 0, "refuted": 0, "open": done[-1][1]["open"], "seconds": 0.0,
           "decided": [], "passes": {}}
    for name, c in done:
        out["proved"] += c["proved"]
        out["refuted"] += c["refuted"]
        out["seconds"] = round(out["seconds"] + c["seconds"], 4)
        out["decided"] += c["decided"]
        out["passes"][name] = {k: v for k, v in c.items() if k != "decided"}
    return out


def _refine_chunk(shared, item) -> list:
    """One job of the decision pass: a chunk of open partitions refined together."""
    from fairspec.backends.refine import decide_partitions

    problem, seconds = shared[:2]
    each = shared[2] if len(shared) > 2 else None
    return decide_partitions(problem, [(lo, hi) for _, lo, hi in item], seconds=seconds,
                             max_boxes=None if each is None else each * len(item))


def _decide_pass(problem, mode, parts, results, ex, deadline, share, stop_on_violation, fresh: bool = False,
                 boxes_each: int | None = None, budget: float | None = None) -> dict | None:
    """The decision pass by refinement (see ``decide_share`` in :func:`solve_partitioned`): fills
    ``results`` for the open partitions it decides; returns its counts (None when it did not run).
    The open partitions are cut into chunks, one per job (at most four per worker, so each job's
    best-first splitting has a few partitions to choose from), each with the pass's time times the
    workers over the jobs. In this process when the problem's runtime does not travel to a worker
    (its enumeration needs the loaded model). ``fresh``: the partitions no pass has tried yet (the first
    decision pass, before the solves); ``boxes_each``: at most that many sub-boxes per partition (a count);
    ``budget``: its seconds (default ``share`` of what is left)."""
    from fairspec.runtime.executor import SerialExecutor

    if share <= 0 or deadline is None or mode not in ("find", "prove") or not _is_network(problem):
        return None
    if problem.runtime is not None and any(r is not None and r.status == "violated" for r in results):
        # a worker's pair, replayed on the runtime first: one that does not (a tie) opens its partition here
        replayed_results(problem, results, parts)
    if stop_on_violation and any(r is not None and r.status == "violated" for r in results):
        return None
    # boxes at a tie within rounding too: the enumeration decides an individual exactly on the runtime
    left = [k for k, r in enumerate(results) if (r is None if fresh else r is not None and r.status == "unknown")]
    budget = share * (deadline - time.time()) if budget is None else min(float(budget), deadline - time.time())
    if not left or budget <= 0:
        return None
    t0 = time.perf_counter()
    runner = ex if problem.runtime is None else SerialExecutor()
    workers = max(1, int(getattr(runner, "workers", 1)))
    n_jobs = min(len(left), 4 * workers) if workers > 1 else 1
    chunks = [left[j::n_jobs] for j in range(n_jobs)]
    seconds = budget * workers / n_jobs if workers > 1 else budget
    jobs = [[(k, parts[k][0], parts[k][1]) for k in c] for c in chunks]
    shared = (problem, float(seconds)) if boxes_each is None else (problem, float(seconds), int(boxes_each))
    counts = {"tried": len(left), "proved": 0, "refuted": 0, "open": 0, "seconds": 0.0, "decided": []}
    for chunk, decs in zip(chunks, runner.map(_refine_chunk, jobs, shared=shared, on_error=_no_boxes)):
        for k, d in zip(chunk, decs if isinstance(decs, list) and decs else [None] * len(chunk)):
            before = results[k] or PairResult("unknown", reason="not tried yet", engine="refine", mode=mode)
            if d is not None and d.status == "fair" and d.proof is not None:
                results[k] = PairResult("holds", "proved", reason="certified: sub-boxes tiling the partition, "
                                        f"{d.stats.get('tiles', 0):,} proved fair by bounds or enumerated",
                                        seconds=before.seconds, engine="refine", mode=mode,
                                        stats={**d.stats, "pass": "refine"}, proof=d.proof)
                counts["proved"] += 1
                counts["decided"].append(k)
            elif d is not None and d.status == "unfair" and d.pair is not None:
                from fairspec.backends.pair import pair_measure
                from fairspec.backends.pair.problem import make_witness

                w = make_witness(problem, *d.pair)
                if w.z < w.z_prime:
                    w = make_witness(problem, d.pair[1], d.pair[0])
                results[k] = PairResult("violated", None, float(pair_measure(problem.post, w.z, w.z_prime)), None, w,
                                        "the refinement enumerated an unfair individual; its pair replays",
                                        before.seconds, engine="refine", mode=mode, best=w,
                                        stats={**d.stats, "pass": "refine"})
                counts["refuted"] += 1
                counts["decided"].append(k)
            else:
                counts["open"] += 1
                if d is not None and d.reason and results[k] is not None:
                    results[k] = replace(before, stats={**(before.stats or {}), "refine": d.reason})
    counts["seconds"] = round(time.perf_counter() - t0, 4)
    return counts


def _attack_keys(problem, mode, parts, keys, deadline, ex) -> dict[int, PairResult]:
    """The heavy rounds of the first attack (:data:`~fairspec.backends.milp.falsify.HEAVY_ROUNDS`, their own
    random streams as in one attack) on the partitions ``keys``: their refutations by partition index."""
    from fairspec.backends.milp.falsify import HEAVY_ROUNDS, LIGHT_ROUNDS

    if not keys:
        return {}
    hit = _attack(problem, mode, [parts[k] for k in keys], deadline, ex, rounds=HEAVY_ROUNDS,
                  seed=len(LIGHT_ROUNDS), heavy_boxes=len(keys))
    return replayed_attack(problem, {keys[j]: r for j, r in hit.items()})


def _heavy_round(problem, mode, parts, attacked, deadline, ex, first_pass: bool) -> tuple[dict | None, list]:
    """The first attack's heavy round (16,384 points x 200 steps per box) on the partitions its light rounds
    left, when at most :data:`~fairspec.backends.milp.falsify.HEAVY_BOXES` are left; refutations go into
    ``attacked``. When the first decision pass is to run (``first_pass``), a seeded sample of
    :data:`HEAVY_PROBE` of them first: when it refutes fewer than :data:`HEAVY_PROBE_HITS` of it, the round
    waits for the first decision pass, whose bounds decide most such boxes in a fraction of its cost (GC-2
    sex and GC-5 age eps: 201 boxes, 13-15 CPU s of the round refuting none, the pass's 16-box round proving
    200 in 0.1-0.9 s), and the boxes returned get it after that pass (AC-4 race eps: it refutes 92 of 191,
    and runs at once). Returns its counts (None: it did not run) and the boxes it waits for."""
    from fairspec.backends.milp import falsify as fz
    from fairspec.models.network import PLNet

    left = [k for k in range(len(parts)) if k not in attacked]
    if not isinstance(problem.net, PLNet) or not fz.HEAVY_ROUNDS or not left or len(left) > fz.HEAVY_BOXES:
        return None, []             # (a tree ensemble: no attack)
    if not first_pass or len(left) <= HEAVY_PROBE:
        hit = _attack_keys(problem, mode, parts, left, deadline, ex)
        attacked.update(hit)
        return {"boxes": len(left), "refuted": len(hit)}, []
    rng = np.random.default_rng(len(left))
    sample = sorted(int(k) for k in rng.choice(left, size=HEAVY_PROBE, replace=False))
    hit = _attack_keys(problem, mode, parts, sample, deadline, ex)
    rest = sorted(set(left) - set(sample))
    pays = len(hit) >= HEAVY_PROBE_HITS * len(sample)
    counts = {"boxes": len(sample), "refuted": len(hit), "probe": len(sample), "probe_refuted": len(hit),
              "deferred": 0 if pays else len(rest)}
    if pays:
        more = _attack_keys(problem, mode, parts, rest, deadline, ex)
        hit.update(more)
        counts.update(boxes=len(left), refuted=len(hit))
    attacked.update(hit)
    return counts, [] if pays else rest


def _attack(problem: PairProblem, mode: str, parts, deadline, executor=None, **falsify_kw) -> dict[int, PairResult]:
    """The partitions the batched attack refutes, as ``violated`` results (see
    :mod:`fairspec.backends.milp.falsify`; its chunks of boxes run on ``executor``'s workers;
    ``falsify_kw``: :func:`~fairspec.backends.milp.falsify.falsify_boxes`' rounds, seed, ...);
    {} for tree ensembles."""
    from fairspec.backends.milp.falsify import LIGHT_ROUNDS, falsify_boxes
    from fairspec.backends.pair import pair_measure
    from fairspec.models.network import PLNet

    if not isinstance(problem.net, PLNet):
        return {}
    t0 = time.perf_counter()
    falsify_kw.setdefault("rounds", LIGHT_ROUNDS)        # the heavy ones apart (_heavy_round)
    wits = falsify_boxes(problem, parts, deadline=deadline, executor=executor, **falsify_kw)
    took = time.perf_counter() - t0
    each = took / max(len(parts), 1)
    return {k: PairResult("violated", None, float(pair_measure(problem.post, w.z, w.z_prime)), None, w,
                          "early falsification: a sampled pair, replayed", each, engine="attack", mode=mode, best=w,
                          stats={"attack_seconds": round(took, 4)})
            for k, w in enumerate(wits) if w is not None}


#: the passes after the first (engine, budget factor) for the partitions left undecided: SCIP, HiGHS
#: again with a longer budget (GC-1 sex: a box HiGHS refutes after 53 s, SCIP not in 60 s), then the
#: certified branch and bound over the box
RETRIES = (("scip", 3.0), ("highs", 6.0), ("bab", 3.0))
#: the retry passes when the first pass is the portfolio: the race again with 6x the budget (both
#: engines at once in place of SCIP's pass then HiGHS's), then the certified branch and bound
PORTFOLIO_RETRIES = (("portfolio", 6.0), ("bab", 3.0))
#: prob on a network: the first per-partition pass, the certified branch and bound, with this share of
#: ``time_per_part`` (AC-8 sex eps: of the 419 a 900 s row left at 0.3, mostly never reached, 1 s each
#: decided 155 in 172 s on 2 workers) ...
PROB_FIRST = 0.1
#: ... and the retry passes after it: the branch and bound at 0.3, the best-first search for the largest
#: violation (``"max"``, falsification only) when at most MAX_LEFT are open (GC-2 sex eps's partition 0: a pair
#: at 0.0535 > 0.05 in 3 s, where 900 s of other passes found none; AC-4 race's 76: none), then as RETRIES
PROB_RETRIES = (("bab", 0.3), ("max", 0.3), ("bab", 1.0)) + RETRIES
MAX_LEFT = 16


def at_a_tie(r: PairResult) -> bool:
    """Was the box left open because its only violations lie at the threshold within rounding (more
    time does not settle that), rather than for want of time?"""
    why = r.reason or ""
    return any(s in why for s in ("boundary", "rounding", "equals the threshold"))


def _failed_part(item, reason: str) -> PairResult:
    """A partition whose job failed for good (a lost worker, a solver crash): undecided, with the reason."""
    return PairResult("unknown", reason=f"partition {item[0]} failed: {reason}")


def _combine(problem, mode, parts, results, seconds, refined=()) -> PairResult:
    from fairspec.backends.quantify import count_shares

    replay = replayed_results(problem, results, parts)     # first: counts, shares and verdict agree
    feats = tuple(sorted({i for lo, hi in parts for i in range(problem.n)
                          if lo[i] != problem.lo[i] or hi[i] != problem.hi[i]}))
    total = problem.volume(over=feats)
    vols = [problem.volume(lo, hi, over=feats) for lo, hi in parts]
    per, (proved, refuted, undecided, uncertified), (vp, vr, vu) = Coverage.tally(results, vols)
    # sub-boxes of refuted partitions proved unfair, with their certify Proofs: (partition, lo, hi, proof)
    unfair = [(k, lo, hi, proof) for k, r in enumerate(results) if r is not None
              for lo, hi, proof in (r.stats or {}).get("unfair_boxes", ())]
    cov = Coverage(len(parts), proved, refuted, undecided, float(vp / total), float(vr / total), float(vu / total),
                   feats, per, count_shares(problem, parts, results, unfair=[u[:3] for u in unfair], replay=replay,
                                            refined=refined), uncertified=uncertified)
    done = [r for r in results if r is not None]
    viol = [r for r in done if r.status == "violated"]
    engine = next((r.engine for r in done if r.engine != "attack"), done[0].engine if done else "")
    values = [r.value for r in done if r.value is not None]
    value = max(values) if values else None
    # the part of the largest value, whose pair the caller replays on the runtime for maximize's lower end
    top = max(done, key=lambda r: -math.inf if r.value is None else r.value, default=None)
    bounds = [r.bound for r in done]
    bound = max(bounds) if bounds and all(b is not None for b in bounds) and len(done) == len(parts) else None
    stats = {"partitions": len(parts), "solved": len(done)}
    # each partition's certify Proof (None where it has none), aligned with ``parts``: a caller may
    # combine them (fairspec.certify.partitions.combine_partitions checks that they cover the domain)
    stats["part_proofs"] = [None if r is None else r.proof for r in results]
    stats["unfair_boxes"] = unfair
    if viol:
        if mode == "maximize":
            first = max(viol, key=lambda r: r.value if r.value is not None else -math.inf)
        else:
            first = viol[0]
        how = "proved" if mode == "maximize" and all(r.how == "proved" for r in done) and len(done) == len(parts) else None
        return PairResult("violated", how, value if mode == "maximize" else first.value, bound, first.witness,
                          f"{refuted} of {len(parts)} partitions refuted", seconds, cov, engine, mode,
                          first.best, stats)
    if proved + uncertified == len(parts):     # the caller certifies an uncertified holds or drops it
        why = f"all {len(parts)} partitions " + (f"hold ({uncertified} not certified)" if uncertified else "proved")
        return PairResult("holds", "proved", value, bound, None, why,
                          seconds, cov, engine, mode, top and (top.best or top.witness), stats)
    # each kind of reason once, the partitions it concerns counted (it listed 3, nested in parentheses)
    why = undecided_reason(undecided, len(parts), [r.reason for r in done if r.status == "unknown"])
    # maximize: every partition's certified bound bounds the domain's maximum (pair_ties.maximum_at_a_tie's value needs it)
    return PairResult("unknown", None, value, bound if mode == "maximize" else None, None, why, seconds, cov, engine,
                      mode, top and (top.best or top.witness), stats)
