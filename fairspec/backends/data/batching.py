"""Group metrics on data rows whose decisions depend on how the model is batched.

A runtime that rounds one point's score differently in batches of other sizes or orders (torch,
scikit-learn's networks and other non-tree models, onnxruntime in float64:
:func:`fairspec.models.batching.rounds_by_batch`) can decide a row whose score lies within that
rounding of the threshold one way in the data file's batch and the other way alone or in another
batch (a logit exactly 0: 0.49999994 in a batch of 89 rows, 0.50000006 alone, in float32). The
metric measured on the data's batches is then one of several answers the runtime gives.

As the rows stream past (``cell_counts._Counter.add``), the rows whose score lies within the assumed
spread of the runtime (:data:`fairspec.models.batching.ASSUMED_SPREAD`, per unit of 1 + the largest
score of the batch) of the threshold are re-decided in other batchings: each alone (the
:data:`MAX_ALONE` nearest of a batch), together as a batch of their own, that batch reversed, and in
batches of other sizes (:func:`_other_sizes`, the :data:`MAX_SIZED` nearest).
Only those rows are re-scored, so a large data set costs one more look at its scores. A row some
batching decides differently is *fragile*; the metric is then decided again with the fragile rows'
decisions at every combination of 0 / 1 per (group, label) cell they fall in (at most
:data:`MAX_CORNERS`; beyond that all 0, all 1) and as each is decided alone. Another verdict under
any of them: ``unknown`` (:data:`fairspec.models.batching.BATCHED`); none: the verdict is kept, with
the fragile rows and the range of the metric in ``details["batching"]``."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from fairspec.models.batching import ASSUMED_SPREAD, ASSUMED_SPREAD_OTHER, BATCHED, certified_spread, rounds_by_batch

#: distinct near-threshold points of one batch re-scored one at a time (the nearest first; the rows of
#: the others only in their own batch and reversed, and counted in the details)
MAX_ALONE = 1024
#: of those, the nearest this many are re-scored in batches of other sizes too (:func:`_other_sizes`); the
#: rows of the others count as fragile (decided both ways)
MAX_SIZED = 1024
#: at most this many combinations of the fragile (group, label) cells' decisions are decided
MAX_CORNERS = 64
#: the batch sizes the near points are re-scored in besides the data's, their own batch and alone: every
#: size up to 16 at every position in the batch (a runtime's vector kernels take another path for a short
#: batch or its tail: soundness case data-batched-125000007-d0, a torch logit 0 read 0.5 in batches of 1,
#: 18, 32 and 79 rows and 0.50000006 in a batch of 7), and sizes around the usual vector and block widths
SIZES_EVERY_POSITION = tuple(range(2, 17))
SIZES_FEW_POSITIONS = (17, 24, 31, 32, 33, 48, 63, 64, 65, 96, 127, 128, 129, 256)


def checked(model) -> bool:
    """Is the model's decision re-checked in other batchings (a runtime that rounds by batch)?"""
    return rounds_by_batch(model)


def _final(model):
    est = getattr(model, "raw", None)
    return est.steps[-1][1] if hasattr(est, "steps") else est


def _predict_is_score(model) -> bool:
    """Is a binary scikit-learn model's ``predict`` exactly its score against 1/2, computed in the same
    evaluation? MLPClassifier's (and a pipeline's ending in one) read as class 1: ``predict`` is
    ``LabelBinarizer.inverse_transform`` of the forward pass, ``y > 0.5``, and ``predict_proba[:, 1]`` is
    that same forward pass (scikit-learn's own code); class 0's probability is ``1 - y``, which at
    ``y = 1/2`` is not above 1/2 where predict says class 0, so index 0 takes predict itself."""
    return (getattr(model, "label_by_predict", False) and getattr(model, "method", "") == "predict_proba"
            and model.score_kind == "prob" and type(_final(model)).__name__ == "MLPClassifier"
            and model.readout.index not in (0, -2) and float(model.threshold) == 0.5)


def decides_by_score(model) -> bool:
    """Is the model's own decision (``LoadedModel.decide``) its score against its threshold, computed in
    the same evaluation? Not where the loaded model decides otherwise: a binary scikit-learn classifier's
    ``predict`` (``label_by_predict``; an MLP's is its score, :func:`_predict_is_score`), a boosted
    model's declared rule for ``index = 0``, nor "column ``index`` is the largest" of K >= 2 columns
    (``Readout.argmax_decision``: the argmax's class, the first maximal column at a tie, where the score
    ``y_i - max_{j != i} y_j`` against 0 calls a tie "not class i")."""
    from fairspec.models.base import LoadedModel

    if getattr(getattr(model, "readout", None), "argmax_decision", False) and not _predict_is_score(model):
        return False
    return type(model).decide is LoadedModel.decide and model.threshold is not None or _predict_is_score(model)


def decide_and_score(model, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """``(decisions, z, threshold)`` of one batch: the decisions, and the quantity ``z`` they threshold
    (where a row near ``threshold`` may be decided otherwise in another batch). One evaluation where
    the decision is the score against the threshold (the loaded model's own ``decide``, or an MLP's
    predict, :func:`_predict_is_score`); else the library's predict and, beside it, what predict
    thresholds: a binary scikit-learn model's ``decision_function`` against 0, or its probability
    against 1/2 (the score itself: a Platt-scaled SVC's probability is not what its predict compares); the
    argmax of two probability columns, ``p_i - p_j`` against 0 (``models.batching.argmax_gap``: two sigmoids tie
    where ``p_i`` is far from 1/2)."""
    from fairspec.models.batching import argmax_gap, two_probability_argmax
    from fairspec.models.runtime_layers import logit_scores

    if decides_by_score(model):
        s = np.asarray(model.score(X), dtype=np.float64)
        return (s > model.threshold).astype(np.int64), s, float(model.threshold)
    d = np.asarray(model.decide(X), dtype=np.int64)
    if two_probability_argmax(model):
        return d, argmax_gap(model, X), 0.0
    if getattr(model, "label_by_predict", False):
        z = logit_scores(model, X)
        if z is not None:
            return d, np.asarray(z, dtype=np.float64), 0.0
        if model.score_kind == "prob":
            return d, np.asarray(model.score(X), dtype=np.float64), 0.5
    return d, np.asarray(model.score(X), dtype=np.float64), float(model.threshold)


def spread(model, X: np.ndarray, z: np.ndarray, *, by_predict: bool = False, columns: bool = False
           ) -> tuple[float, str]:
    """``(spread, bound)``: how far apart two evaluations of a row's ``z`` may be in other batchings:
    twice certify's runtime error bound where it covers the model (``bound = "certified"``,
    :func:`fairspec.models.batching.certified_spread`; ``columns``: of each of a K-output network's
    columns), else the assumed spread (:data:`fairspec.models.batching.ASSUMED_SPREAD` x 2 per unit of
    1 + the batch's largest |z|, ``"assumed"``)."""
    s = certified_spread(model, X, by_predict=by_predict, columns=columns)
    if s is not None:
        return s, "certified"
    with np.errstate(over="ignore", invalid="ignore"):
        top = float(np.nanmax(np.abs(z))) if z.size else 0.0
    rel = ASSUMED_SPREAD.get(str(getattr(model, "precision", "float32")), ASSUMED_SPREAD_OTHER)
    return 2.0 * rel * (1.0 + (top if np.isfinite(top) else 0.0)), "assumed"


def decision_fragile(model, X: np.ndarray, d: np.ndarray, z: np.ndarray, thr: float) -> dict:
    """:func:`fragile_rows` of the model's own decision (``decide_and_score``)."""
    if z.size == 0:
        return fragile_rows(X, d, z, 0.0, "assumed", model.decide)
    width, bound = decision_spread(model, X, z)
    with np.errstate(invalid="ignore"):
        gap = np.abs(z - thr)
    from fairspec.models.split_edges import at_split_edges

    edges = at_split_edges(model, X)        # trees behind a PCA: a row on a split edge may jump, whatever its gap
    if edges is not None and edges.any():
        gap = np.where(edges, 0.0, gap)
    return fragile_rows(X, d, gap, width, bound, model.decide)


def decision_spread(model, X: np.ndarray, z: np.ndarray) -> tuple[float, str]:
    """:func:`spread` of the scores ``z`` the model's own decision thresholds (``decide_and_score``); of the argmax
    gap ``p_i - p_j`` of two probability columns, twice a column's spread (each column moves by at most it; the
    assumed spread of probabilities, which lie in [0, 1], per unit of 1 + 1)."""
    from fairspec.models.batching import two_probability_argmax

    if two_probability_argmax(model):
        width, bound = spread(model, X, np.ones(1), columns=True)
        return 2.0 * width, bound
    by_predict = bool(getattr(model, "label_by_predict", False)) and not _predict_is_score(model)
    return spread(model, X, z, by_predict=by_predict)


def fragile_rows(X: np.ndarray, d: np.ndarray, gap: np.ndarray, width: float, bound: str, decide,
                 rescore: bool = True) -> dict:
    """The rows of a batch (encoded X, decided ``d``) whose decision another batching may change: those
    whose ``gap`` to the decision's boundary is at most ``width`` (:func:`spread`: no other batching can
    move the others) re-decided by ``decide`` (a batch's 0/1 decisions) in a batch of their own, that
    batch reversed and each distinct point alone (the :data:`MAX_ALONE` nearest); a row one of them
    decides otherwise is fragile, and so is a near row not re-scored alone (past :data:`MAX_ALONE`, or
    ``rescore`` False: every near row), whose decision is then taken both ways.
    ``{"near", "rows", "alone": their decisions alone (the batch's where not re-scored alone),
    "unchecked", "bound"}``."""
    none = {"near": 0, "rows": np.zeros(0, dtype=np.int64), "alone": np.zeros(0, dtype=np.int64), "unchecked": 0,
            "bound": bound}
    if gap.size == 0:
        return none
    with np.errstate(invalid="ignore"):
        near = np.flatnonzero(~(gap > width))            # NaN scores too: nothing says they cannot move
    if near.size == 0:
        return none
    near = near[np.argsort(gap[near], kind="stable")]
    base = d[near]
    if not rescore:
        order = np.argsort(near, kind="stable")
        return {"near": int(near.size), "rows": near[order], "alone": base[order], "unchecked": 0, "bound": bound,
                "both_ways": int(near.size)}
    Xn = np.ascontiguousarray(X[near])
    own = np.asarray(decide(Xn), dtype=np.int64)
    rev = np.asarray(decide(np.ascontiguousarray(Xn[::-1])), dtype=np.int64)[::-1]
    # each distinct point alone (a row repeats its point's decision), the MAX_ALONE nearest points
    _, first, inv = np.unique(Xn, axis=0, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    pts = np.argsort(first, kind="stable")[:MAX_ALONE]
    by_point = np.full(first.size, -1, dtype=np.int64)
    by_point[pts] = [int(np.asarray(decide(np.ascontiguousarray(Xn[first[p]:first[p] + 1])))[0]) for p in pts]
    checked_alone = by_point[inv] >= 0
    alone = np.where(checked_alone, by_point[inv], base)
    sized_pts = pts[:MAX_SIZED]
    checked_sizes = np.zeros(first.size, dtype=bool)
    checked_sizes[sized_pts] = True
    moved_sized = np.zeros(first.size, dtype=bool)
    moved_sized[sized_pts] = _other_sizes(Xn[first[sized_pts]], decide, by_point[sized_pts])
    # a near row not re-scored alone and in the other sizes may still be decided otherwise: it counts as fragile
    unchecked = ~checked_alone | ~checked_sizes[inv]
    moved = (own != base) | (rev != base) | (alone != base) | moved_sized[inv] | unchecked
    order = np.argsort(near[moved], kind="stable")
    return {"near": int(near.size), "rows": near[moved][order], "alone": alone[moved][order],
            "unchecked": int(np.count_nonzero(unchecked)), "bound": bound}


def _sizes_tried() -> str:
    return (f"{SIZES_EVERY_POSITION[0]}-{SIZES_EVERY_POSITION[-1]} rows at every position and of "
            + ", ".join(map(str, SIZES_FEW_POSITIONS)) + " rows")


def _other_sizes(P: np.ndarray, decide, alone: np.ndarray) -> np.ndarray:
    """For each distinct near point (rows of ``P``, decided ``alone`` each alone): is it decided otherwise in
    a batch of another size (:data:`SIZES_EVERY_POSITION` at every position, :data:`SIZES_FEW_POSITIONS` at
    a few)? The points fill each batch in turn, cyclically (a batch larger than the points repeats them).
    Why these sizes: a row's rounding follows the kernel path it takes, which depends on where it falls in the
    blocks of rows a vector or matrix kernel works on (full block or tail) and on the tail's length; for blocks
    of up to 16 rows every (tail length, position) a larger batch can give already occurs in a batch of 2-16 rows
    (a batch of 25 in blocks of 8 ends in the tail a batch of 9 has), and the larger sizes probe the outer
    blocking. Re-scorings are evidence, not proof: a size not tried may still round otherwise (the details name
    the sizes tried)."""
    n = P.shape[0]
    moved = np.zeros(n, dtype=bool)
    if n == 0:
        return moved
    plan = [(s, range(s)) for s in SIZES_EVERY_POSITION] + [(s, sorted({0, 1, s // 2, s - 1}))
                                                            for s in SIZES_FEW_POSITIONS]
    for size, offsets in plan:
        length = size * -(-max(n, size) // size)
        for r in offsets:
            order = (np.arange(length) + r) % n
            got = np.concatenate([np.asarray(decide(np.ascontiguousarray(P[order[a:a + size]])), dtype=np.int64)
                                  .reshape(-1) for a in range(0, length, size)])
            np.logical_or.at(moved, order, got != alone[order])
    return moved


def _prob_width(model, X, raw) -> tuple[float, str]:
    """:func:`spread` of the probabilities fairspec reads off the runtime's scores ``raw``: the logistic
    of a logit moves by at most a quarter of the logit's move, and numpy's own rounding of it (< 2^-50)."""
    width, bound = spread(model, X, np.asarray(raw, dtype=np.float64).reshape(-1))
    return width + 2.0 ** -48, bound


def median_fragile(model, X, raw, s, median: float, d) -> dict:
    """``rate = scoring`` (a score above the sample's median): every row whose score lies within twice the
    spread of the median (the median of scores each moved by at most the spread moves by at most as much),
    taken both ways (not re-scored: another batching moves the median too)."""
    width, bound = _prob_width(model, X, raw)
    with np.errstate(invalid="ignore"):
        gap = np.abs(np.asarray(s, dtype=np.float64) - float(median))
    return fragile_rows(X, d, gap, 2.0 * width, bound, None, rescore=False)


@dataclasses.dataclass
class BinEdges:
    """Calibration metrics: the rows whose score lies within the runtime's spread of a bin edge k / B
    (another batching may count them in the neighbouring bin) and the largest spread: each row's group,
    weight and position in the data."""

    width: float = 0.0
    parts: list = dataclasses.field(default_factory=list)
    bounds: set = dataclasses.field(default_factory=set)

    def add(self, model, X, raw, s, B: int, idx, w, y, seen: int) -> None:
        width, bound = _prob_width(model, X, raw)
        self.width = max(self.width, width)
        self.bounds.add(bound)
        e = s * B
        k = np.clip(np.round(e), 1, B - 1)
        with np.errstate(invalid="ignore"):
            near = np.flatnonzero(~(np.abs(s - k / B) > width + 4 * 2.0 ** -53))
        if near.size:              # weighed by |s - y| + the spread: what the row adds to a bin's |S - P|
            v = np.abs(s[near] - y[near]) + width
            self.parts.append((idx[near], v if w is None else w[near] * v, seen + near))

    def renumber(self, order) -> None:
        remap = np.empty(len(order), dtype=np.int64)
        remap[np.asarray(order)] = np.arange(len(order))
        self.parts = [(remap[p[0]],) + tuple(p[1:]) for p in self.parts]


def calibration_moves(c, edges: BinEdges, eligible, seed: int, multiplicities) -> tuple[float, np.ndarray | None]:
    """How far another batching may move a calibration metric (a difference of ECEs, ``group_rates.ece``):
    in the data, and in each Poisson replicate. A group's ECE, sum over bins of |score sum - positives|
    over the group's weight, moves by at most twice the weight x |s - y| of its rows near an edge over
    its weight (a row moved to another bin changes two bins' |...| by at most that each; ``BinEdges``
    adds the spread to |s - y|) plus the spread (every score moved by at most it); a difference of two of them, or of one and the overall
    ECE (every group's rows, as compare = to_overall reads it), by twice the largest."""
    G = c.bins.shape[0]
    el = np.flatnonzero(eligible)
    g = np.concatenate([p[0] for p in edges.parts]) if edges.parts else np.zeros(0, dtype=np.int64)
    w = np.concatenate([p[1] for p in edges.parts]) if edges.parts else np.zeros(0)
    pos = np.concatenate([p[2] for p in edges.parts]) if edges.parts else np.zeros(0, dtype=np.int64)

    def most(near_w, tot_w):                                   # [..., G] each
        with np.errstate(divide="ignore", invalid="ignore"):
            per = np.where(tot_w[..., el] > 0, 2.0 * near_w[..., el] / tot_w[..., el], 0.0)
            tot = 2.0 * near_w.sum(axis=-1) / tot_w.sum(axis=-1)     # the overall ECE: every group's rows
        return 2.0 * (np.maximum(per.max(axis=-1, initial=0.0), np.nan_to_num(tot)) + edges.width)

    data = float(most(np.bincount(g, weights=w, minlength=G).astype(np.float64), c.bins.sum(axis=(-1, -2))))
    if c.boot_bins is None:
        return data, None
    R = c.boot_bins.shape[0]
    near_r = np.zeros((R, G))
    step = max(1, 2_000_000 // max(R, 1))
    for a in range(0, g.size, step):
        i = slice(a, a + step)
        m = multiplicities(seed, 0, R, 0, g[i].size, positions=pos[i]) * w[i][None, :]
        np.add.at(near_r, (slice(None), g[i]), m)
    return data, most(near_r, c.boot_bins.sum(axis=(-1, -2)))


def calibration_decide(prop, c, edges: BinEdges, eligible, value: float, boot, status: str, status_of,
                       multiplicities) -> tuple[str | None, dict]:
    """``(reason, details)``: ``unknown``'s reason when the calibration metric's verdict changes with the
    moves :func:`calibration_moves` allows (its value by D, each replicate by D_r: the interval's ends
    then within the quantiles of the replicates - D_r and + D_r), and ``details["batching"]``.
    ``status_of(lo, hi)``: the status of an interval as the metric decides it."""
    D, Dr = calibration_moves(c, edges, eligible, prop.options.seed, multiplicities)
    a = 1.0 - prop.options.confidence
    ql = qh = (value, value)                      # each end's quantile of the moved replicates: its range
    if boot is not None and Dr is not None and (~np.isnan(boot)).any():
        ok = ~np.isnan(boot)
        ql = tuple(float(np.quantile((boot + sign * Dr)[ok], a / 2)) for sign in (-1.0, 1.0))
        qh = tuple(float(np.quantile((boot + sign * Dr)[ok], 1 - a / 2)) for sign in (-1.0, 1.0))
    # the decided interval is [min(lo, value), max(hi, value)]: each end monotone in what moves
    los = (min(ql[0], value - D), min(ql[1], value + D))
    his = (max(qh[0], value - D), max(qh[1], value + D))
    seen = {status} | {status_of(lo, hi) for lo in los for hi in his if lo <= hi}
    n = int(sum(p[0].size for p in edges.parts))
    bound = "certified" if edges.bounds == {"certified"} else "assumed"
    details = {"bound": bound, "near_bin_edge": n, "spread": edges.width, "moves_by_at_most": D,
               "verdicts": sorted(seen)}
    rounding = ("the runtime's rounding (twice certify's error bound)" if bound == "certified"
                else "an assumed bound of the runtime's rounding")
    why = (f"another batch size or order may move every score by {rounding} ({edges.width:.3g}) and the "
           f"{n:,} rows within it of a bin edge to the next bin: {prop.metric} may move by {D:.3g} "
           f"(its interval's ends as far)")
    if len(seen) > 1:
        return f"{why}, and the verdict with it: {BATCHED}", details
    details["note"] = f"{why}; the verdict is the same anywhere in that range"
    return None, details


@dataclasses.dataclass
class Fragile:
    """The fragile rows of one property's pass: their group cell, label, weight, decision in the data's
    batch and alone, and position in the data (the key of their bootstrap multiplicities)."""

    near: int = 0
    unchecked: int = 0          # near rows not re-scored alone (beyond MAX_ALONE): fragile whatever they gave
    parts: list = dataclasses.field(default_factory=list)
    bounds: set = dataclasses.field(default_factory=set)    # "certified" / "assumed", per batch
    both_ways: int = 0          # near rows taken both ways without re-scoring (rate = scoring's median)

    @property
    def bound(self) -> str:
        """"certified" when every batch's near rows were chosen by certify's error bound, else "assumed"."""
        return "certified" if self.bounds == {"certified"} else "assumed"

    def add(self, found: dict, idx, y, w, d, seen: int) -> None:
        self.near += found["near"]
        self.unchecked += found["unchecked"]
        self.bounds.add(found["bound"])
        self.both_ways += found.get("both_ways", 0)
        r = found["rows"]
        if r.size:
            self.parts.append((idx[r], y[r], np.ones(r.size) if w is None else w[r], d[r], found["alone"], seen + r))

    def renumber(self, order) -> None:
        """Sparse group cells listed in ``order`` (``GroupCells.order``): each row's cell renumbered."""
        remap = np.empty(len(order), dtype=np.int64)
        remap[np.asarray(order)] = np.arange(len(order))
        self.parts = [(remap[p[0]],) + tuple(p[1:]) for p in self.parts]

    def arrays(self):
        return tuple(np.concatenate([p[i] for p in self.parts]) for i in range(6))


def _shifted(c, fr: tuple, new_d: np.ndarray, seed: int, multiplicities):
    """The counts ``c`` with the fragile rows decided ``new_d`` instead of their data-batch decision
    (``multiplicities``: ``cell_counts.poisson_multiplicities``, the rows' weights in the Poisson replicates)."""
    g, y, w, d, _, pos = fr
    ch = new_d != d
    cells = c.cells.copy()
    np.add.at(cells, (g[ch], d[ch], y[ch]), -w[ch])
    np.add.at(cells, (g[ch], new_d[ch], y[ch]), w[ch])
    out = dataclasses.replace(c, cells=cells)
    if c.boot_cells is not None:
        boot = c.boot_cells.copy()
        R = boot.shape[0]
        rows = np.flatnonzero(ch)
        step = max(1, 2_000_000 // max(R, 1))
        for a in range(0, rows.size, step):            # [R, rows] multiplicities, a chunk of rows at a time
            i = rows[a:a + step]
            m = multiplicities(seed, 0, R, 0, i.size, positions=pos[i]) * w[i][None, :]
            np.add.at(boot, (slice(None), g[i], d[i], y[i]), -m)
            np.add.at(boot, (slice(None), g[i], new_d[i], y[i]), m)
        out = dataclasses.replace(out, boot_cells=boot)
    return out


def assignments(fr: tuple) -> tuple[list[tuple[str, np.ndarray]], bool]:
    """The fragile rows' decisions to decide the metric under: each combination of 0 / 1 per (group,
    label) cell they fall in (all 0 and all 1 only, beyond :data:`MAX_CORNERS`), and each row alone;
    and whether every combination was taken."""
    g, y, _, _, alone, _ = fr
    keys = sorted(set(zip(g.tolist(), y.tolist())))
    at = np.array([keys.index(k) for k in zip(g.tolist(), y.tolist())])
    out = [("alone", alone)]
    full = 2 ** len(keys) <= MAX_CORNERS
    corners = itertools.product((0, 1), repeat=len(keys)) if full else [(0,) * len(keys), (1,) * len(keys)]
    for bits in corners:
        out.append(("cells " + "".join(map(str, bits)), np.asarray(bits, dtype=np.int64)[at]))
    return out, full


def _rounding(fragile: Fragile) -> str:
    return ("the runtime's rounding (twice certify's error bound)" if fragile.bound == "certified"
            else "an assumed bound of the runtime's rounding")


def decide(prop, c, fragile: Fragile, status: str, value: float, status_of, data_name: str, multiplicities):
    """``(reason, details)``: the reason of an ``unknown`` when the verdict changes with the fragile
    rows' decisions (None when it does not), and ``details["batching"]``. ``status_of(counts) ->
    (status, value)`` decides counts as the metric's own decision does; ``multiplicities``: see
    :func:`_shifted`."""
    details = {"bound": fragile.bound, "near_threshold": fragile.near}
    if fragile.unchecked:
        details["near_not_rescored_alone"] = fragile.unchecked
    if fragile.both_ways:
        details["near_median_taken_both_ways"] = fragile.both_ways
    within = (f"within twice {_rounding(fragile)} of the sample's median score (rate = scoring; another batching "
              f"moves the median too)" if fragile.both_ways else f"within {_rounding(fragile)} of the decision "
                                                                  f"threshold")
    if not fragile.parts:
        details.update(fragile_rows=0, note=(
            f"{fragile.near:,} row{'s' if fragile.near != 1 else ''} of '{data_name}' "
            f"{'lie' if fragile.near != 1 else 'lies'} {within}; each was decided the same alone, in a batch "
            f"of their own and reversed, and in batches of {_sizes_tried()}"))
        return None, details
    fr = fragile.arrays()
    n = int(fr[0].size)
    found, full = assignments(fr)
    seen, values = {status}, [value]
    for _, new_d in found:
        st, v = status_of(_shifted(c, fr, new_d, prop.options.seed, multiplicities))
        seen.add(st)
        if v == v:
            values.append(float(v))
    lo, hi = min(values), max(values)
    rows = f"{n:,} row{'s' if n != 1 else ''} of '{data_name}'"
    lie, are = ("lie", "are") if n != 1 else ("lies", "is")
    how = (("at every combination of 0 / 1 per group and label" if full else "all 0 and all 1")
           + " and as each is decided alone")
    otherwise = (f"{are} taken both ways" if fragile.both_ways else f"{are} decided otherwise when the model scores them in another batch size or order (alone, or "
                 f"in another batch)" + (f", or {'were' if n != 1 else 'was'} not all re-scored alone and in other "
                                          f"batch sizes (past the {MAX_SIZED:,} nearest points a batch)"
                                          if fragile.unchecked else ""))
    details.update({"fragile_rows": n, "value_in_data_batches": value, "value_range": [lo, hi],
                    "verdicts": sorted(seen), "combinations": len(found)})
    if len(seen) > 1:
        return (f"{rows} {lie} {within} and {otherwise}; {prop.metric} is {value:.6g} in the data's batches and "
                f"ranges over [{lo:.6g}, {hi:.6g}] with their decisions {how}: {BATCHED}"), details
    details["note"] = (f"{rows} {lie} {within} and {otherwise}; the verdict is the same with their decisions "
                       f"{how} ({prop.metric} over [{lo:.6g}, {hi:.6g}])")
    return None, details
