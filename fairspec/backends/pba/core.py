"""PBA for a batch of points: centres, eligibility, both settings, witnesses, replay, RB.

:func:`analyse` takes the points already in model-input space (the runner builds them
from the spec, the benchmark from its own preprocessing) and returns per case the
status of the observed setting (x persistently more confident than x', paper 004
Eq. 1 > 0) and of the flipped setting (x' more confident than x), each ``proved``,
``refuted`` (a witness pair inside the neighbourhood, replayed on the real model) or
``unknown``, and ``excluded`` for points whose centre pair is not classified as its
true class on both sides (Eq. 3).

The centre pair decides one setting at once: if ``f(0) > 0`` the flipped setting is
refuted by the centre itself and only the observed one needs a proof, and vice versa
(``f(0) = 0`` refutes both). So every point costs one optimisation, like the paper's
one LP per point.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from fairspec.backends.pba import verify
from fairspec.backends.pba.relax import copy_bounds
from fairspec.backends.pba.twin import TwinCases, make_cases
from fairspec.models.network import PLNet

__all__ = ["CaseSet", "Analysis", "analyse"]

REPLAY_TOL = 1e-5


@dataclass(eq=False)
class CaseSet:
    """P cases in model-input space.

    net:     the logit-difference network over model inputs (class 1 iff g > 0).
    U, Up:   (P, n) centres of x and of its counterfactual x'.
    cols:    (m,) model-input columns that move; ``scale`` (m,): input change per unit of
             the feature (``u = u0 + scale * d``, d in the feature's own units).
    lo, hi:  (P, m) the offset box (the delta, clipped to the feature's domain).
    integer: (m,) offsets that must be whole numbers.
    cls:     (P,) true class 0/1.
    raw, feeds: (P, m) the moving features' values at the centres and, per moving column, values -> the
             model inputs the runtime's encoder gives them: the point at offset D is then fed as the
             encoder feeds x + D (``(v + d - mean) / std``), not as ``u0 + scale * d``, which differs by a
             rounding -- one a split can lie between (None: ``u0 + scale * d``).
    """

    net: PLNet
    U: np.ndarray
    Up: np.ndarray
    cols: np.ndarray
    scale: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    integer: np.ndarray
    cls: np.ndarray
    raw: np.ndarray | None = None
    feeds: tuple | None = None

    def at(self, i: int, j: int, d: float) -> float:
        """Moving column j's model input at case i's offset d (as :meth:`inputs` gives it)."""
        if self.feeds is None:
            return float(self.U[i, self.cols[j]] + self.scale[j] * d)
        return float(self.feeds[j](np.array([self.raw[i, j] + d]))[0])

    @property
    def P(self) -> int:
        return len(self.U)

    def inputs(self, idx, D) -> tuple[np.ndarray, np.ndarray]:
        """Model inputs (x, x') of cases idx at offsets D (k, m)."""
        idx = np.asarray(idx)
        X = self.U[idx].copy()
        Xp = self.Up[idx].copy()
        if len(self.cols) and self.feeds is not None:
            D = np.asarray(D, dtype=np.float64).reshape(len(idx), len(self.cols))
            for j, c in enumerate(self.cols):
                u = self.feeds[j](np.asarray(self.raw[idx, j], dtype=np.float64) + D[:, j])
                X[:, c] = u
                Xp[:, c] = u
        elif len(self.cols):
            X[:, self.cols] += D * self.scale
            Xp[:, self.cols] += D * self.scale
        return X, Xp


@dataclass(eq=False)
class Analysis:
    eligible: np.ndarray          # (P,) bool
    pred_x: np.ndarray            # (P,) decision on x (real model)
    pred_p: np.ndarray            # (P,) decision on x'
    observed: np.ndarray          # (P,) proved | refuted | unknown | excluded
    flipped: np.ndarray
    stage_obs: np.ndarray         # what decided the observed setting
    stage_flip: np.ndarray
    witness_obs: dict             # case -> (x, x') model inputs (replayed)
    witness_flip: dict
    f_obs: np.ndarray             # observed objective at the witness (or the proved lower bound)
    rb_x: np.ndarray | None = None
    rb_p: np.ndarray | None = None
    seconds: dict = field(default_factory=dict)
    counts: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    #: case -> the moving features' values of x at its observed refutation's runtime witness (set by
    #: backends.pba.certified.certify_cases; kinds.pba checks them inside the exact neighbourhood)
    witness_values: dict = field(default_factory=dict)
    rb_batched: int = 0            # robustness statuses left unknown by the runtime's batch rounding


def _replay_check(cs: CaseSet, real: Callable, idx, D, side, decide: Callable | None = None) -> np.ndarray:
    """Which witnesses reproduce on the real model: both decisions equal the true class and
    the side's objective is <= 0, exactly (a witness within rounding of 0 is not one).

    Without ``decide``, ``real`` is ``g`` (class 1 iff ``g > 0``). With it, the decisions are
    ``decide``'s (the library's predict: its tie rule, e.g. class 0 at a probability of exactly
    1/2) and ``real`` is the model's own score, compared as it is: ``score - 1/2`` in float64
    rounds distinct tiny probabilities (below ~2**-31) to one number, which once "reproduced" a
    witness whose x was strictly more confident than x'."""
    if len(idx) == 0:
        return np.zeros(0, dtype=bool)
    X, Xp = cs.inputs(idx, D)
    both = np.concatenate([X, Xp])
    g = np.asarray(real(both), dtype=np.float64).reshape(-1)
    dec = (g > 0).astype(int) if decide is None else np.asarray(decide(both)).astype(int).reshape(-1)
    gx, gp = g[:len(idx)], g[len(idx):]
    c = cs.cls[idx]
    sigma = np.where(c == 1, 1.0, -1.0)
    dec_ok = (dec[:len(idx)] == c) & (dec[len(idx):] == c)
    # side * sigma * (gx - gp) <= 0, decided exactly (floats compare exactly; no tolerance)
    return dec_ok & np.where(side * sigma > 0, gx <= gp, gp <= gx)


def keep_replayed(cs: CaseSet, real: Callable, side: float, idx, D, status, stage, wit: dict, notes: list,
                  decide: Callable | None = None) -> None:
    """Replay the witnesses (offsets ``D``, one row per case of ``idx``) of one setting: those
    that reproduce go into ``wit``, the others become unknown ("replay-failed"); ``decide`` as
    :func:`_replay_check`."""
    ok = _replay_check(cs, real, idx, D, side, decide)
    for k, i in enumerate(idx):
        if ok[k]:
            wit[int(i)] = cs.inputs([i], D[k:k + 1])
        else:
            status[i], stage[i] = "unknown", "replay-failed"
    if (~ok).any():
        notes.append(f"{int((~ok).sum())} witnesses did not reproduce on the real model and were left unknown")


def analyse(cs: CaseSet, *, score: Callable | None = None, replay: Callable | None = None, mode: str = "exact",
            engine: str = "highs", time_limit: float = 60.0, case_limit: float = 10.0, workers: int = 1,
            rb: bool = True, rb_rows=None, rb_time: float | None = None, seed: int = 0,
            progress=None, decide: Callable | None = None) -> Analysis:
    """Decide both settings of every case (see the module docstring).

    score:  X -> g of the real model (fast path; decisions are ``g > 0``); default the IR.
    replay: X -> g on an independent evaluator, used to replay witnesses; default ``score``.
    decide: X -> the model's own 0/1 decisions (its library's predict); with it ``replay`` is the
            model's score itself, and witnesses replay on both (:func:`_replay_check`).
    mode:   "exact" (relaxation, search, LP, MILP) or "lp" (the plain LP relaxation).
    rb:     also decide robustness accuracy of x (cases ``rb_rows``, default all) and of x'.
    """
    from contextlib import nullcontext

    try:
        from threadpoolctl import threadpool_limits
        limiter = threadpool_limits(1)   # small matrices: BLAS threads only contend
    except Exception:  # noqa: BLE001 - optional
        limiter = nullcontext()
    with limiter:
        return _analyse(cs, score, replay, mode, engine, time_limit, case_limit, workers, rb, rb_rows, rb_time,
                        seed, progress, decide)


def _analyse(cs, score, replay, mode, engine, time_limit, case_limit, workers, rb, rb_rows, rb_time, seed,
             progress, decide=None) -> Analysis:
    t0 = time.perf_counter()
    P = cs.P
    net = cs.net
    score = score or net.forward
    replay = replay or score
    g_ir_x, g_ir_p = net.forward(cs.U), net.forward(cs.Up)
    if decide is None:
        g_x, g_p = score(cs.U), score(cs.Up)
        pred_x, pred_p = (g_x > 0).astype(int), (g_p > 0).astype(int)
    else:                   # the model's own decisions (its rule at a tie: >=, index = 0), not g > 0
        pred_x = np.asarray(decide(cs.U), dtype=int).reshape(-1)
        pred_p = np.asarray(decide(cs.Up), dtype=int).reshape(-1)
    agree = ((g_ir_x > 0).astype(int) == pred_x) & ((g_ir_p > 0).astype(int) == pred_p)
    cls = np.asarray(cs.cls, dtype=int)
    eligible = (pred_x == cls) & (pred_p == cls)
    notes = []
    if (eligible & ~agree).any():
        notes.append(f"{int((eligible & ~agree).sum())} points where the network IR and the model disagree at the "
                     "centre were left unknown")
    sigma = np.where(cls == 1, 1.0, -1.0)
    tc_all = make_cases(net, cs.U, cs.Up, cs.cols, cs.scale, cs.lo, cs.hi, cs.integer, sigma)
    t1 = time.perf_counter()
    bx, bp = copy_bounds(tc_all, tc_all.C), copy_bounds(tc_all, tc_all.Cp)
    seconds = {"bounds": round(time.perf_counter() - t1, 4)}

    observed = np.full(P, "excluded", dtype=object)
    flipped = np.full(P, "excluded", dtype=object)
    stage_obs = np.full(P, "", dtype=object)
    stage_flip = np.full(P, "", dtype=object)
    f_obs = np.full(P, np.nan)
    wit_obs: dict = {}
    wit_flip: dict = {}
    f0 = sigma * (g_ir_x - g_ir_p)
    usable = eligible & agree
    observed[eligible & ~agree] = "unknown"
    flipped[eligible & ~agree] = "unknown"
    stage_obs[eligible & ~agree] = stage_flip[eligible & ~agree] = "ir-mismatch"
    # the centre decides one side
    obs_ref = usable & (f0 <= 0)
    flip_ref = usable & (f0 >= 0)
    observed[obs_ref], stage_obs[obs_ref] = "refuted", "centre"
    flipped[flip_ref], stage_flip[flip_ref] = "refuted", "centre"
    f_obs[usable] = f0[usable]
    open_idx = np.flatnonzero(usable & (f0 != 0))
    tau = np.where(f0[open_idx] > 0, 1.0, -1.0)
    sub = tc_all.subset(open_idx)
    sub.tau = tau
    dec = verify.decide(sub, mode=mode, engine=engine, time_limit=time_limit, case_limit=case_limit,
                        workers=workers, seed=seed, progress=progress,
                        bounds=(bx.take(open_idx), bp.take(open_idx)))
    seconds.update({k: v for k, v in dec.seconds.items()})
    for j, i in enumerate(open_idx):
        st, sg = dec.status[j], dec.stage[j]
        if tau[j] > 0:
            observed[i], stage_obs[i] = st, sg
            if st == "proved":
                f_obs[i] = dec.bound[j] if not np.isnan(dec.bound[j]) else f_obs[i]
            elif st == "refuted":
                f_obs[i] = dec.f[j]
        else:
            flipped[i], stage_flip[i] = st, sg
            if st == "refuted":
                pass
    # witnesses: the centre (d = 0) or the offsets found, replayed on the real model
    m = len(cs.cols)
    t1 = time.perf_counter()
    for side, status, stage, wit, cases in ((1.0, observed, stage_obs, wit_obs, None),
                                             (-1.0, flipped, stage_flip, wit_flip, None)):
        idx = np.flatnonzero(status == "refuted")
        D = np.zeros((len(idx), m))
        for k, i in enumerate(idx):
            if stage[i] != "centre":
                j = int(np.searchsorted(open_idx, i))
                D[k] = dec.D[j]
        keep_replayed(cs, replay, side, idx, D, status, stage, wit, notes, decide)
    seconds["replay"] = round(time.perf_counter() - t1, 4)

    rb_x = rb_p = None
    if rb:
        t1 = time.perf_counter()
        budget = rb_time if rb_time is not None else max(1.0, 0.25 * time_limit)
        rows = np.arange(P) if rb_rows is None else np.asarray(rb_rows)
        rb_x = _robust(tc_all.subset(rows), bx.take(rows), bp.take(rows), "x", pred_x[rows] == cls[rows], mode,
                       engine, budget / 2, case_limit, workers)
        rb_p = _robust(tc_all, bx, bp, "p", pred_p == cls, mode, engine, budget / 2, case_limit, workers)
        seconds["rb"] = round(time.perf_counter() - t1, 4)
    seconds["total"] = round(time.perf_counter() - t0, 4)
    counts = {"cases": P, "eligible": int(eligible.sum()), "stages": dec.counts}
    return Analysis(eligible, pred_x, pred_p, observed, flipped, stage_obs, stage_flip, wit_obs, wit_flip, f_obs,
                    rb_x, rb_p, seconds, counts, notes)


def _robust(tc: TwinCases, bx, bp, which, correct, mode, engine, budget, case_limit, workers) -> np.ndarray:
    """Robustness accuracy statuses: a misclassified centre is refuted at once."""
    out = np.full(tc.P, "refuted", dtype=object)
    idx = np.flatnonzero(correct)
    if len(idx) == 0:
        return out
    sub = tc.subset(idx)
    b = (bx if which == "x" else bp).take(idx)
    o = (bp if which == "x" else bx).take(idx)
    dec = verify.decide_robust(sub, b, which, mode=mode, engine=engine, time_limit=budget,
                               case_limit=min(case_limit, 2.0), workers=workers, other=o)
    out[idx] = dec.status
    return out
