"""Deciding every case: cheap bounds for all, refinement where they do not decide, then the MILP.

Stages (each only on the cases the previous ones left open):

1. ``crown``  batched interval + linear relaxation of the joint objective (all cases);
2. ``search`` batched falsification (gradient + random + integral sweeps): witnesses;
3. ``bab``    batched branch and bound over the offset box with the same relaxation
              (:mod:`fairspec.backends.pba.bab`), within a sub-box budget per case;
4. ``lp``     the paper's LP relaxation (triangle ReLU relaxation) per case; its optimal
              offsets are also tried as a witness (``lp-point``);
5. ``milp``   the exact MILP per case (complete up to its time limit); a solution is a
              witness (``milp-point``), infeasibility a proof.

``mode="lp"`` runs stages 1 and 4 only: the plain LP relaxation of the paper (every case
it does not prove is unknown; the relaxation bound of stage 1 never proves a case the LP
would not, it only saves the LP), for comparison.

Witness offsets returned here satisfy ``f <= 0`` with both predictions kept *on the
network IR*; the caller replays them on the real model before reporting them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from fairspec.backends.pba import attack, bab, exact
from fairspec.backends.pba.relax import CopyBounds, copy_bounds, objective_lower, robust_lower
from fairspec.backends.pba.twin import TwinCases

__all__ = ["Decisions", "decide", "decide_robust", "witness_ok"]

BOUND_EPS = 1e-9   # a relaxation bound proves f > 0 only above this


@dataclass(eq=False)
class Decisions:
    """Per case: status (proved | refuted | unknown), the stage that decided it, the best
    sound lower bound of min f (nan if none), witness offsets (nan rows if none)."""

    status: np.ndarray
    stage: np.ndarray
    bound: np.ndarray
    D: np.ndarray
    f: np.ndarray
    seconds: dict = field(default_factory=dict)
    counts: dict = field(default_factory=dict)
    reasons: dict = field(default_factory=dict)
    bounds: tuple | None = None   # (CopyBounds of x, of x'), reusable
    bab_boxes: int = 0            # sub-boxes the branch and bound bounded

    @classmethod
    def empty(cls, P: int, m: int) -> "Decisions":
        return cls(np.full(P, "unknown", dtype=object), np.full(P, "", dtype=object), np.full(P, np.nan),
                   np.full((P, m), np.nan), np.full(P, np.nan))

    def open(self) -> np.ndarray:
        return np.flatnonzero(self.status == "unknown")


def witness_ok(tc: TwinCases, i: int, d: np.ndarray, objective: str = "pba") -> tuple[bool, float]:
    """Re-evaluate offsets d of case i on the network IR: (is a witness, f)."""
    d = tc.round_offsets(np.asarray(d, dtype=np.float64)[None, :], [i])
    if np.any(d < tc.lo[i] - 1e-12) or np.any(d > tc.hi[i] + 1e-12):
        return False, np.nan
    if objective == "pba":
        f, ax, ap = tc.pair(d, [i])
        cls1 = tc.sigma[i] > 0
        keep = (ax[0] > 0 and ap[0] > 0) if cls1 else (ax[0] >= 0 and ap[0] >= 0)
        return bool(f[0] <= 0 and keep), float(f[0])
    C = tc.C if objective == "robust_x" else tc.Cp
    sg = tc.sigma[i] * tc.g(C[[i]], d)[0]
    bad = sg <= 0 if tc.sigma[i] > 0 else sg < 0
    return bool(bad), float(sg)


# ------------------------------------------------------------------ per-case worker (LP, MILP)

_STATE: dict = {}


def _case_task(i: int):
    st = _STATE
    tc, bx, bp = st["tc"], st["bx"], st["bp"]
    objective, engine, mode = st["objective"], st["engine"], st["mode"]
    out = {"i": i, "status": "unknown", "stage": "", "bound": np.nan, "D": None, "f": np.nan, "t_lp": 0.0,
           "t_milp": 0.0}
    t0 = time.perf_counter()
    lp_bound, lp_d, _ = exact.solve_case_lp(tc, i, bx, bp, objective=objective, engine="highs")
    out["t_lp"] = time.perf_counter() - t0
    if lp_bound is not None:
        out["bound"] = lp_bound
        if lp_bound > BOUND_EPS:
            out.update(status="proved", stage="lp")
            return out
    if mode == "lp":
        out["stage"] = "lp-open"
        return out
    if lp_d is not None:
        ok, f = witness_ok(tc, i, lp_d, objective)
        if ok:
            out.update(status="refuted", stage="lp-point", D=lp_d, f=f)
            return out
    remaining = st["deadline"] - time.time()
    limit = min(st["case_limit"], remaining)
    if limit <= 0.05:
        out["stage"] = "budget"
        return out
    t1 = time.perf_counter()
    res, d, o = exact.solve_case_milp(tc, i, bx, bp, objective=objective, engine=engine, time_limit=limit)
    if res == "candidate":
        ok, f = witness_ok(tc, i, d, objective)
        if not ok:   # a solution within the cut but not <= 0 on the IR: ask for a clear violation
            res, d, o = exact.solve_case_milp(tc, i, bx, bp, objective=objective, engine=engine,
                                              time_limit=max(0.05, limit - (time.perf_counter() - t1)),
                                              cut=-exact.CUT)
            ok, f = witness_ok(tc, i, d, objective) if res == "candidate" else (False, np.nan)
            if res == "proved":   # min f in (-CUT, CUT]: too close to 0 to call
                res = "borderline"
        if ok:
            out.update(status="refuted", stage="milp-point", D=d, f=f)
    elif res == "proved":
        out.update(status="proved", stage="milp")
    out["t_milp"] = time.perf_counter() - t1
    if out["status"] == "unknown":
        out["stage"] = {"timeout": "timeout", "borderline": "borderline"}.get(res, "solver-" + res)
    return out


def _case_batch(state, idx):
    """One executor job: a batch of cases, with the shared problem installed in this process."""
    if _STATE is not state:
        _STATE.clear()
        _STATE.update(state)
    return [_case_task(int(i)) for i in idx]


def _run_cases(idx, workers: int, progress=None, task=None):
    """Run _case_task over idx, in batches through the executor when worth it (two cases or more:
    one LP/MILP case can take its whole case limit); yields results in order."""
    if workers > 1 and len(idx) >= 2:
        from fairspec.runtime.executor import get_executor

        size = max(1, len(idx) // (8 * workers))
        batches = [[int(i) for i in idx[a:a + size]] for a in range(0, len(idx), size)]
        ex = get_executor(len(batches))
        state = dict(_STATE)
        # With a progress bar, a few batches at a time so that it moves; without one (every
        # parallel run from the command line), all batches in one map: a group of batches
        # waits for its slowest case, and one hard case would leave the other workers idle.
        step = 2 * ex.workers if progress is not None else len(batches)
        try:
            for a in range(0, len(batches), step):
                group = batches[a:a + step]
                done = ex.map(_case_batch, group, shared=state,
                              on_error=lambda b, why: [_failed_case(i, why) for i in b])
                for rs in done:
                    for r in rs:
                        if progress is not None and task is not None:
                            progress.advance(task)
                        yield r
        finally:
            ex.close()
        return
    for i in idx:
        r = _case_task(int(i))
        if progress is not None and task is not None:
            progress.advance(task)
        yield r


def _bab_chunk(state, chunk):
    """One executor job: branch and bound over a chunk of the cases."""
    tc, kw = state
    return bab.branch_and_bound(tc, np.asarray(chunk, dtype=np.int64), **kw)


def _branch_and_bound(tc: TwinCases, idx, workers: int, **kw):
    """:func:`bab.branch_and_bound` over ``idx``, split into interleaved chunks of cases run
    through the executor when ``workers > 1`` (each case's sub-boxes are its own: the split
    changes no case's answer, except which cases a time-out leaves undecided)."""
    idx = np.asarray(idx, dtype=np.int64)
    if workers <= 1 or len(idx) < 2 * workers:
        return bab.branch_and_bound(tc, idx, **kw)
    from fairspec.runtime.executor import get_executor

    ex = get_executor(len(idx))
    n = 2 * max(1, ex.workers)
    chunks = [idx[c::n].tolist() for c in range(n)]
    chunks = [c for c in chunks if c]

    def failed(chunk, why):
        k = len(chunk)
        return (np.full(k, "unknown", dtype=object), np.full((k, tc.m), np.nan), np.full(k, np.nan),
                np.zeros(k, dtype=np.int64))

    try:
        outs = ex.map(_bab_chunk, chunks, shared=(tc, kw), on_error=failed)
    finally:
        ex.close()
    k = len(idx)
    status = np.full(k, "unknown", dtype=object)
    D = np.full((k, tc.m), np.nan)
    f = np.full(k, np.nan)
    used = np.zeros(k, dtype=np.int64)
    for c, (st, Dc, fc, uc) in enumerate(outs):
        pos = np.arange(c, k, n)
        status[pos], D[pos], f[pos], used[pos] = st, Dc, fc, uc
    return status, D, f, used


def _failed_case(i: int, why: str) -> dict:
    return {"i": i, "status": "unknown", "stage": "failed: " + why, "bound": np.nan, "D": None, "f": np.nan,
            "t_lp": 0.0, "t_milp": 0.0}


def _exact_stage(dec: Decisions, tc, bx, bp, idx, *, objective, engine, mode, time_limit, case_limit, workers,
                 progress, t_start):
    if len(idx) == 0:
        return
    _STATE.clear()
    _STATE.update(tc=tc, bx=bx, bp=bp, objective=objective, engine=engine, mode=mode,
                  deadline=time.time() + max(0.0, time_limit - (time.perf_counter() - t_start)),
                  case_limit=case_limit)
    task = progress.add_task(f"PBA {'LP' if mode == 'lp' else 'LP/MILP'} ({objective})", total=len(idx)) \
        if progress else None
    t_lp = t_milp = 0.0
    for r in _run_cases(idx, workers, progress, task):
        i = r["i"]
        t_lp += r["t_lp"]
        t_milp += r["t_milp"]
        if not np.isnan(r["bound"]):
            dec.bound[i] = np.nanmax([dec.bound[i], r["bound"]])
        dec.status[i] = r["status"]
        dec.stage[i] = r["stage"]
        if r["D"] is not None:
            dec.D[i] = r["D"]
            dec.f[i] = r["f"]
    if progress and task is not None:
        progress.remove_task(task)
    dec.seconds["lp_cpu"] = round(t_lp, 4)
    dec.seconds["milp_cpu"] = round(t_milp, 4)
    _STATE.clear()


def decide(tc: TwinCases, *, mode: str = "exact", engine: str = "highs", time_limit: float = 60.0,
           case_limit: float = 10.0, workers: int = 1, seed: int = 0, progress=None,
           bounds: tuple[CopyBounds, CopyBounds] | None = None, bab_boxes: int = 2048,
           bab_share: float = 0.5, search: bool = True) -> Decisions:
    """Decide ``min f > 0`` for every case of ``tc`` (see the module docstring)."""
    t_start = time.perf_counter()
    dec = Decisions.empty(tc.P, tc.m)
    if tc.P == 0:
        return dec
    t0 = time.perf_counter()
    bx, bp = bounds if bounds is not None else (copy_bounds(tc, tc.C), copy_bounds(tc, tc.Cp))
    lb = objective_lower(tc, bx, bp)
    dec.bound[:] = lb
    proved = lb > BOUND_EPS
    dec.status[proved] = "proved"
    dec.stage[proved] = "crown"
    dec.seconds["crown"] = round(time.perf_counter() - t0, 4)
    if mode != "lp" and search:
        t0 = time.perf_counter()
        idx = dec.open()
        D, f, found = attack.search(tc, idx, seed=seed)
        for j in np.flatnonzero(found):
            i = idx[j]
            ok, fv = witness_ok(tc, i, D[j])
            if ok:
                dec.status[i], dec.stage[i], dec.D[i], dec.f[i] = "refuted", "search", D[j], fv
        dec.seconds["search"] = round(time.perf_counter() - t0, 4)
    if mode != "lp" and bab_boxes > 0:
        t0 = time.perf_counter()
        idx = dec.open()
        st, D, f, used = _branch_and_bound(tc, idx, workers, time_limit=min(bab_share * time_limit,
                                                                          max(0.0, time_limit - (t0 - t_start))),
                                           max_boxes=bab_boxes)
        for j, i in enumerate(idx):
            if st[j] == "refuted":
                ok, fv = witness_ok(tc, i, D[j])
                if ok:
                    dec.status[i], dec.stage[i], dec.D[i], dec.f[i] = "refuted", "bab-point", D[j], fv
            elif st[j] == "proved":
                dec.status[i], dec.stage[i] = "proved", "bab"
        dec.seconds["bab"] = round(time.perf_counter() - t0, 4)
        dec.bab_boxes = int(used.sum())
    t0 = time.perf_counter()
    _exact_stage(dec, tc, bx, bp, dec.open(), objective="pba", engine=engine, mode=mode, time_limit=time_limit,
                 case_limit=case_limit, workers=workers, progress=progress, t_start=t_start)
    dec.seconds["exact"] = round(time.perf_counter() - t0, 4)
    dec.seconds["total"] = round(time.perf_counter() - t_start, 4)
    stages, counts = np.unique(dec.stage.astype(str), return_counts=True)
    dec.counts = {str(s or "open"): int(c) for s, c in zip(stages, counts)}
    dec.bounds = (bx, bp)
    return dec


def decide_robust(tc: TwinCases, b: CopyBounds, which: str, *, mode: str = "exact", engine: str = "highs",
                  time_limit: float = 30.0, case_limit: float = 5.0, workers: int = 1, progress=None,
                  other: CopyBounds | None = None, bab_boxes: int = 1024) -> Decisions:
    """Robustness accuracy of one copy (``which`` = "x" | "p"): ``sigma g > 0`` over the whole box
    (class 0: ``g <= 0``), the RB metric of paper 004 (Nanda et al.) by formal verification."""
    t_start = time.perf_counter()
    objective = "robust_x" if which == "x" else "robust_p"
    dec = Decisions.empty(tc.P, tc.m)
    if tc.P == 0:
        return dec
    lb = robust_lower(tc, b)
    dec.bound[:] = lb
    proved = lb > BOUND_EPS
    dec.status[proved] = "proved"
    dec.stage[proved] = "crown"
    # the centre and a short gradient search on sigma g
    idx = dec.open()
    if len(idx):
        C = tc.C if which == "x" else tc.Cp
        m = tc.m
        rng = np.random.default_rng(0)
        lo, hi = tc.lo[idx], tc.hi[idx]
        starts = np.concatenate([np.zeros((len(idx), 1, m)),
                                 lo[:, None, :] + rng.random((len(idx), 4, m)) * (hi - lo)[:, None, :]], axis=1)
        D = tc.round_offsets(starts, idx)
        for it in range(12):
            g, masks = attack._forward_masks(tc, C[idx], D)
            G = attack._grad(tc, masks, D.shape[:2]) * tc.sigma[idx][:, None, None]
            sg = tc.sigma[idx][:, None] * g
            bad = np.where(tc.sigma[idx][:, None] > 0, sg <= 0, sg < 0)
            for j in np.flatnonzero(bad.any(axis=1)):
                i = idx[j]
                if dec.status[i] == "unknown":
                    s = int(np.argmax(bad[j]))
                    ok, fv = witness_ok(tc, i, D[j, s], objective)
                    if ok:
                        dec.status[i], dec.stage[i], dec.D[i], dec.f[i] = "refuted", "search", D[j, s], fv
            step = (hi - lo)[:, None, :] * (0.5 * (1 - it / 12) + 0.02)
            D = tc.round_offsets(np.clip(D - step * np.sign(G), lo[:, None, :], hi[:, None, :]), idx)
    idx = dec.open()
    if mode != "lp" and bab_boxes > 0 and len(idx):
        st, D, f, _ = bab.branch_and_bound(tc, idx, time_limit=0.5 * time_limit, max_boxes=bab_boxes,
                                           objective=objective)
        for j, i in enumerate(idx):
            if st[j] == "refuted":
                ok, fv = witness_ok(tc, i, D[j], objective)
                if ok:
                    dec.status[i], dec.stage[i], dec.D[i], dec.f[i] = "refuted", "bab-point", D[j], fv
            elif st[j] == "proved":
                dec.status[i], dec.stage[i] = "proved", "bab"
    bx, bp = (b, other) if which == "x" else (other, b)
    _exact_stage(dec, tc, bx, bp, dec.open(), objective=objective, engine=engine, mode=mode, time_limit=time_limit,
                 case_limit=case_limit, workers=workers, progress=progress, t_start=t_start)
    dec.seconds["total"] = round(time.perf_counter() - t_start, 4)
    return dec
