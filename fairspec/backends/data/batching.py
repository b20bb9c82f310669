"""Group metrics on data rows whose decisions depend on how the model is batched.

A runtime that rounds one point's score differently in batches of other sizes or orders (torch,
scikit-learn's networks and other non-tree models, onnxruntime in float64:
:func:`fairspec.models.batching.rounds_by_batch`) can decide a row whose score lies within that
rounding of the threshold one way in the data file's batch and the other way alone or in another
batch (a logit exactly 0: 0.49999994 in a batch of 89 rows, 0.50000006 alone, in float32). The
metric measured on the data's batches is then one of several answers the runtime gives.

As the rows stream past (``metrics._Counter.add``), the rows whose score lies within the assumed
spread of the runtime (:data:`fairspec.models.batching.ASSUMED_SPREAD`, per unit of 1 + the largest
score of the batch) of the threshold are re-decided in other batchings: each alone (the
:data:`MAX_ALONE` nearest of a batch), together as a batch of their own, and that batch reversed.
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

from fairspec.models.batching import ASSUMED_SPREAD, ASSUMED_SPREAD_OTHER, BATCHED, rounds_by_batch

#: distinct near-threshold points of one batch re-scored one at a time (the nearest first; the rows of
#: the others only in their own batch and reversed, and counted in the details)
MAX_ALONE = 1024
#: at most this many combinations of the fragile (group, label) cells' decisions are decided
MAX_CORNERS = 64


def checked(model) -> bool:
    """Is the model's decision re-checked in other batchings (a runtime that rounds by batch)?"""
    return rounds_by_batch(model)


def decide_and_score(model, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(decisions, scores)`` of one batch: one evaluation where the decision is the score against the
    threshold (the loaded model's own ``decide``), else the library's ``decide`` (scikit-learn's
    ``predict``) and the score beside it."""
    from fairspec.models.base import LoadedModel

    if type(model).decide is LoadedModel.decide and model.threshold is not None:
        s = np.asarray(model.score(X), dtype=np.float64)
        return (s > model.threshold).astype(np.int64), s
    return np.asarray(model.decide(X), dtype=np.int64), np.asarray(model.score(X), dtype=np.float64)


def fragile_rows(model, X: np.ndarray, d: np.ndarray, s: np.ndarray) -> dict:
    """The rows of a batch (encoded X, decided ``d`` on scores ``s`` in this batch) whose decision another
    batching changes: ``{"near": rows within the spread, "rows": their indices, "alone": their decisions
    alone (the batch's decision where not re-scored alone)}``."""
    none = {"near": 0, "rows": np.zeros(0, dtype=np.int64), "alone": np.zeros(0, dtype=np.int64), "unchecked": 0}
    thr = getattr(model, "threshold", None)
    if thr is None or s.size == 0:
        return none
    with np.errstate(over="ignore", invalid="ignore"):
        gap = np.abs(s - float(thr))
        top = float(np.nanmax(np.abs(s)))
    rel = ASSUMED_SPREAD.get(str(getattr(model, "precision", "float32")), ASSUMED_SPREAD_OTHER)
    near = np.flatnonzero(gap <= 2.0 * rel * (1.0 + (top if np.isfinite(top) else 0.0)))
    if near.size == 0:
        return none
    near = near[np.argsort(gap[near], kind="stable")]
    Xn = np.ascontiguousarray(X[near])
    base = d[near]
    own = np.asarray(model.decide(Xn), dtype=np.int64)
    rev = np.asarray(model.decide(np.ascontiguousarray(Xn[::-1])), dtype=np.int64)[::-1]
    # each distinct point alone (a row repeats its point's decision), the MAX_ALONE nearest points
    _, first, inv = np.unique(Xn, axis=0, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    pts = np.argsort(first, kind="stable")[:MAX_ALONE]
    by_point = np.full(first.size, -1, dtype=np.int64)
    by_point[pts] = [int(model.decide(np.ascontiguousarray(Xn[first[p]:first[p] + 1]))[0]) for p in pts]
    checked_alone = by_point[inv] >= 0
    alone = np.where(checked_alone, by_point[inv], base)
    moved = (own != base) | (rev != base) | (alone != base)
    order = np.argsort(near[moved], kind="stable")
    return {"near": int(near.size), "rows": near[moved][order], "alone": alone[moved][order],
            "unchecked": int(np.count_nonzero(~checked_alone))}


@dataclasses.dataclass
class Fragile:
    """The fragile rows of one property's pass: their group cell, label, weight, decision in the data's
    batch and alone, and position in the data (the key of their bootstrap multiplicities)."""

    near: int = 0
    unchecked: int = 0          # near rows whose point was not re-scored alone (beyond MAX_ALONE)
    parts: list = dataclasses.field(default_factory=list)

    def add(self, found: dict, idx, y, w, d, seen: int) -> None:
        self.near += found["near"]
        self.unchecked += found["unchecked"]
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
    (``multiplicities``: ``metrics.poisson_multiplicities``, the rows' weights in the Poisson replicates)."""
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


def decide(prop, c, fragile: Fragile, status: str, value: float, status_of, data_name: str, multiplicities):
    """``(reason, details)``: the reason of an ``unknown`` when the verdict changes with the fragile
    rows' decisions (None when it does not), and ``details["batching"]``. ``status_of(counts) ->
    (status, value)`` decides counts as the metric's own decision does; ``multiplicities``: see
    :func:`_shifted`."""
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
    details = {"near_threshold": fragile.near, "fragile_rows": n, "value_in_data_batches": value,
               "value_range": [lo, hi], "verdicts": sorted(seen), "combinations": len(found)}
    if fragile.unchecked:
        details["near_not_rescored_alone"] = fragile.unchecked
    if len(seen) > 1:
        return (f"{rows} {lie} within the runtime's rounding of the decision threshold and {are} decided otherwise "
                f"when the model scores them in another batch size or order (alone, or in another batch); "
                f"{prop.metric} is {value:.6g} in the data's batches and ranges over [{lo:.6g}, {hi:.6g}] with "
                f"their decisions {how}: {BATCHED}"), details
    details["note"] = (f"{rows} {lie} within the runtime's rounding of the threshold and {are} decided otherwise in "
                       f"another batch size or order; the verdict is the same with their decisions {how} "
                       f"({prop.metric} over [{lo:.6g}, {hi:.6g}])"
                       + (f"; {fragile.unchecked:,} other rows near the threshold were re-scored only in a batch "
                          f"of their own and reversed, not alone" if fragile.unchecked else ""))
    return None, details
