"""The weighted cell counts of a group metric, accumulated over record batches in one streamed pass.

Every metric is a function of weighted cell counts (fairspec.analyses.group_rates): the sum of sample
weight per (group, decision, label) cell, and for calibration per (group, score bin, label) with the
bins' score sums.  When rows are not exchangeable cell by cell (weights, scores) each row enters each
bootstrap replicate with a Poisson(1) multiplicity, counted here with the rows.  One pass serves every
group metric of the run over the same rows (``count``).  Moved out of
:mod:`fairspec.backends.data.metrics` (which resamples and decides), unchanged."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairspec import ir
from fairspec.analyses.group_rates import METRICS
from fairspec.backends.data import batching
from fairspec.backends.data.budget import NONE as NO_LIMIT, WEIGHT_TOTAL, Budget
from fairspec.backends.data.groups import GroupCells
from fairspec.backends.data.row_decisions import model_input, scores, subject_decisions


@dataclass
class Counts:
    """Weighted counts of one property's rows: the only input of the metric definitions.

    ``boot_*`` hold R bootstrap replicates of the same counts when rows are not exchangeable
    cell by cell (sample weights, calibration scores): each row enters replicate r with a
    Poisson(1) multiplicity, drawn batch by batch as the rows stream past."""

    cells: np.ndarray  # [G, 2, 2] weight per (group, decision, label)
    sizes: np.ndarray  # [G] rows per group (unweighted: min_group_size counts rows)
    names: list[str]
    bins: np.ndarray | None = None  # [G, B, 2] calibration: weight per (group, score bin, label)
    score_sums: np.ndarray | None = None  # [G, B]
    weighted: bool = False
    whole_weights: bool = True  # every weight a whole number: the weighted cells are exact integer sums
    labelled: bool = False
    boot_cells: np.ndarray | None = None  # [R, G, 2, 2]
    boot_bins: np.ndarray | None = None  # [R, G, B, 2]
    boot_sums: np.ndarray | None = None  # [R, G, B]
    combinations: int | None = None  # crossed groups too many to enumerate: only occupied cells are listed
    fragile: batching.Fragile | None = None  # rows another batching of the runtime decides otherwise
    edges: batching.BinEdges | None = None   # calibration: rows another batching may put in another bin
    forest: object | None = None     # forest_rows.NearRows: rows a forest adding in thread order may decide otherwise


# Poisson(1) cumulative probabilities P[K <= k], k = 0..19 (the rest, < 1e-18, counts as 19)
_POISSON1_CDF = np.cumsum([np.exp(-1.0) / np.prod(np.arange(1, k + 1, dtype=np.float64)) for k in range(20)])


def poisson_multiplicities(seed: int, r0: int, k: int, start: int, n: int, positions=None) -> np.ndarray:
    """[k, n] Poisson(1) multiplicities of rows start..start+n-1 (or of the rows at ``positions``) in
    replicates r0..r0+k-1.

    A counter-based draw (splitmix64 of seed, replicate and the row's position in the data),
    so a row gets the same multiplicity however the rows are cut into batches: streaming a
    file and holding it in memory give the same bootstrap."""
    with np.errstate(over="ignore"):
        i = (np.arange(start, start + n, dtype=np.uint64) if positions is None
             else np.asarray(positions, dtype=np.uint64))[None, :]
        r = np.arange(r0, r0 + k, dtype=np.uint64)[:, None]
        x = i * np.uint64(0x9E3779B97F4A7C15) + (r + np.uint64(1)) * np.uint64(0xD1B54A32D192ED03) \
            + np.uint64(seed & 0xFFFFFFFFFFFFFFFF) * np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    u = (x >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)
    return np.searchsorted(_POISSON1_CDF, u, side="right")


def _add(acc, part):
    return part if acc is None else acc + part


MAX_RESAMPLE_BYTES = 2 * 2**30  # the resampled counts a bootstrap may keep in memory


def _grow(acc, part, axis: int):
    """acc + part, the shorter one padded with zero groups along ``axis`` (sparse cells appear
    as the batches stream past)."""
    if acc is None:
        return part
    ga, gp = acc.shape[axis], part.shape[axis]
    if ga != gp:
        pad = [(0, 0)] * acc.ndim
        if ga < gp:
            pad[axis] = (0, gp - ga)
            acc = np.pad(acc, pad)
        else:
            pad[axis] = (0, ga - gp)
            part = np.pad(part, pad)
    return acc + part


class _Counter:
    """One property's counts, accumulated batch by batch; several properties over the same rows
    share one pass (``count``), each with its own counter."""

    def __init__(self, prop: ir.GroupMetric, ctx, R: int):
        self.prop, self.ctx, self.R = prop, ctx, R
        self.fs = ctx.spec.feature_set(prop.features)
        self.calib = METRICS[prop.metric].needs_score
        self.B = int(prop.param("bins", 10))
        self.wcol = prop.options.get("weight")
        self.median = None
        self.cellids = GroupCells(prop.groups, self.fs)
        self.c = Counts(None, None, None, weighted=self.wcol is not None)
        self.poisson = R > 0 and (self.wcol is not None or self.calib)
        spec_model = ctx.spec.model(prop.model) if prop.model else None
        # the rows another batching of the runtime may decide otherwise (batching.py): the model's own
        # decision, class = / threshold = (outputs.output_fragile), a score above the median (rate = scoring)
        # and a score's calibration bin
        self.fragile = self.edges = self.fkey = None
        if spec_model is not None and spec_model.format != "predictions" and batching.checked(ctx.model(prop.model)):
            from fairspec.backends.data.outputs import fragile_key

            scoring = prop.param("rate") == "scoring"
            self.fkey = (fragile_key(prop) if prop.param("class") is not None or prop.param("threshold") is not None
                         else None if scoring else ("fragile", prop.model))
            self.fragile = batching.Fragile() if not self.calib else None      # calibration: bins, not decisions
            self.edges = batching.BinEdges() if self.calib else None
        self.forest = None                     # forest_rows.NearRows, when decisions() found a threaded forest
        if self.poisson:  # sized before it starts: R resamples of every occupied cell are kept
            G = len(self.cellids)
            if not self.cellids.dense:  # at most one occupied cell per row
                from fairspec.runtime import columnar

                G = min(G, max(1, columnar.estimated_rows(ctx.spec.data(prop.data))))
            need = R * G * (4 + (3 * self.B if self.calib else 0)) * 8
            if need > MAX_RESAMPLE_BYTES:
                from fairspec.verdict import Unsupported

                raise Unsupported(f"bootstrap = {R} over {G} groups would keep about {need / 2**30:.1f} GiB of "
                                  f"resampled counts (at most {MAX_RESAMPLE_BYTES / 2**30:.0f} GiB); lower bootstrap "
                                  f"or cross fewer groups")

    def add(self, rows, seen: int, memo: dict | None = None) -> None:
        """Count one batch; ``seen`` rows came before it (the position keying each row's multiplicities)."""
        prop, ctx, c, B, R = self.prop, self.ctx, self.c, self.B, self.R
        values, n = rows.frame.values, rows.frame.n_rows
        c.labelled = rows.labels is not None
        y = rows.labels.astype(np.int64) if rows.labels is not None else np.zeros(n, dtype=np.int64)
        if prop.model and (prop.param("class") is not None or prop.param("threshold") is not None):
            from fairspec.backends.data.outputs import output_truth

            truth = output_truth(prop, ctx, rows)      # issue 25: the target read one class / above t
            if truth is not None:
                y, c.labelled = truth, True
        d = subject_decisions(prop, ctx, rows, values, n, y, self.median, memo)
        idx = self.cellids.index(values, n)
        G = len(self.cellids)
        w = rows.numeric(self.wcol) if self.wcol else None
        if memo is not None and ("forest_near", prop.model) in memo and prop.param("rate") != "scoring" and \
                prop.param("class") is None and prop.param("threshold") is None:
            from fairspec.backends.data.forest_rows import NearRows

            self.forest = self.forest or NearRows()
            self.forest.add(memo[("forest_near", prop.model)], idx, y, w, d)
        if self.fragile is not None and memo is not None:
            found = memo.get(self.fkey) if self.fkey is not None else batching.median_fragile(
                ctx.model(prop.model), model_input(ctx, prop.model, values, n, memo), memo[("raw", prop.model)],
                scores(ctx, prop.model, rows, values, n, memo), self.median, d)
            if found is not None:
                self.fragile.add(found, idx, y, w, d, seen)
        if self.wcol and (w is None or not np.isfinite(w).all() or (w < 0).any()):
            from fairspec.runtime.data import DataError

            path = ctx.spec.data(prop.data).path
            raise DataError(f"data file {path} column {self.wcol!r} (weight) must hold non-negative numbers", path)
        if w is not None and c.whole_weights:
            c.whole_weights = bool(np.all(w == np.floor(w)))
        cell = idx * 4 + d * 2 + y
        c.cells = _grow(c.cells, np.bincount(cell, weights=w, minlength=G * 4).reshape(G, 2, 2)
                        .astype(np.float64), 0)
        c.sizes = _grow(c.sizes, np.bincount(idx, minlength=G), 0)
        if self.wcol and not float(c.cells.sum()) <= WEIGHT_TOTAL:   # inf / inf was a NaN rate, reported 0
            from fairspec.runtime.data import DataError

            path = ctx.spec.data(prop.data).path
            raise DataError(f"data file {path} column {self.wcol!r} (weight): the weights sum past {WEIGHT_TOTAL:g}, "
                            f"where float sums overflow; rescale them (a rate is the same under a common factor)", path)
        if self.calib:
            s = np.clip(scores(ctx, prop.model, rows, values, n, memo), 0.0, 1.0)
            b = np.minimum((s * B).astype(np.int64), B - 1)
            if self.edges is not None and memo is not None:
                self.edges.add(ctx.model(prop.model), model_input(ctx, prop.model, values, n, memo),
                               memo[("raw", prop.model)], s, B, idx, w, y, seen)
            sb = idx * B + b
            c.bins = _grow(c.bins, np.bincount(sb * 2 + y, weights=w, minlength=G * B * 2).reshape(G, B, 2)
                           .astype(np.float64), 0)
            c.score_sums = _grow(c.score_sums, np.bincount(sb, weights=s if w is None else s * w,
                                                           minlength=G * B).reshape(G, B), 0)
        if self.poisson:
            # per replicate, the counts are the multiplicities (x weights) summed per cell: one
            # bincount over [k replicates x n rows] at a time, no Python loop over resamples
            ww = np.ones(n) if w is None else w
            chunk = max(1, 2_000_000 // max(n, 1))
            parts, bparts, sparts = [], [], []
            for r0 in range(0, R, chunk):
                k = min(chunk, R - r0)
                m = (poisson_multiplicities(prop.options.seed, r0, k, seen, n) * ww).ravel()
                off = np.arange(k)[:, None]
                parts.append(np.bincount((off * G * 4 + cell).ravel(), weights=m, minlength=k * G * 4)
                             .reshape(k, G, 2, 2))
                if self.calib:
                    bparts.append(np.bincount((off * G * B * 2 + sb * 2 + y).ravel(), weights=m,
                                              minlength=k * G * B * 2).reshape(k, G, B, 2))
                    sparts.append(np.bincount((off * G * B + sb).ravel(), weights=m * np.tile(s, k),
                                              minlength=k * G * B).reshape(k, G, B))
            c.boot_cells = _grow(c.boot_cells, np.concatenate(parts), 1)
            if self.calib:
                c.boot_bins = _grow(c.boot_bins, np.concatenate(bparts), 1)
                c.boot_sums = _grow(c.boot_sums, np.concatenate(sparts), 1)

    def result(self) -> Counts:
        """The counts, their cells in the order of the group names (sparse cells sorted by key)."""
        c, ids = self.c, self.cellids
        if c.cells is None:  # no batch (row_batches raises first; kept for safety)
            c.cells, c.sizes = np.zeros((len(ids), 2, 2)), np.zeros(len(ids), dtype=np.int64)
        G = len(ids)
        for f, axis in (("cells", 0), ("sizes", 0), ("bins", 0), ("score_sums", 0), ("boot_cells", 1),
                        ("boot_bins", 1), ("boot_sums", 1)):  # cells no batch reached (dense ids)
            v = getattr(c, f)
            if v is not None and v.shape[axis] < G:
                pad = [(0, 0)] * v.ndim
                pad[axis] = (0, G - v.shape[axis])
                setattr(c, f, np.pad(v, pad))
        c.fragile = self.fragile if self.fragile is not None and self.fragile.near else None
        c.edges, c.forest = self.edges, self.forest
        if ids.dense:
            c.names = ids.names()
        else:
            order = ids.order()
            c.names = ids.names(order)
            for f in (c.fragile, c.edges, c.forest):      # the fragile rows' cells in the same order
                if f is not None:
                    f.renumber(order)
            for f, axis in (("cells", 0), ("sizes", 0), ("bins", 0), ("score_sums", 0), ("boot_cells", 1),
                            ("boot_bins", 1), ("boot_sums", 1)):
                v = getattr(c, f)
                if v is not None:
                    setattr(c, f, np.take(v, order, axis=axis))
            c.combinations = ids.combinations
        return c


def _pass_mates(prop: ir.GroupMetric, ctx) -> list:
    """The other properties of this run that count the same rows on the data backend, each with its
    resamples (the pipeline names the run's group metrics the planner gives the data backend in
    ``ctx.pass_mates``, as (property, bootstrap) pairs): they are counted in the same pass."""
    done = ctx.__dict__.setdefault("_group_counts", {})
    out = []
    for o, resamples in getattr(ctx, "pass_mates", ()):
        if (o is prop or o.name == prop.name or o.name in done or o.kind != "group_metric" or o.data != prop.data
                or o.features != prop.features or o.data is None or o.metric == "path_specific"
                or o.param("rate") == "scoring"):
            continue
        out.append((o, resamples))
    return out


def _forget_inputs(memo: dict, ctx, later: list) -> None:
    """Drop the batch's encoded matrices no later property of the pass reads (they are the
    largest arrays of a batch: rows x encoded width floats)."""
    inputs = [k for k in memo if k[0] == "input"]
    if not inputs:
        return
    keep = set()
    for k in later:
        m = k.prop.model
        if not m or ctx.spec.encoding_for(m) is None:
            continue
        needs = [("decide", m)] + ([("score", m)] if k.calib else [])
        if any(x not in memo for x in needs):
            enc = ctx.encoding(m)
            keep.add(("input", enc.width, enc.columns))
    for k in inputs:
        if k not in keep:
            del memo[k]


def count(prop: ir.GroupMetric, ctx, R: int = 0, budget: Budget = NO_LIMIT) -> Counts:
    """Accumulate the property's cells over record batches of the data (bounded memory: no row is
    kept after its batch; rate = scoring first reads the scores once for their median).

    One pass serves every property of the run over the same rows (``_pass_mates``): each batch is
    read, encoded and run through each model once, and every property's counter takes its counts
    from it; the others' counts wait in the context until their turn (the same counts, so the same
    verdicts, as a pass of their own). A property with a time ``budget`` counts alone (its budget is
    its own work, not its mates'), and looks at its clock before each batch (``OutOfTime``)."""
    done = ctx.__dict__.setdefault("_group_counts", {})
    if prop.name in done and done[prop.name][0] is prop:
        out = done.pop(prop.name)[1]
        if isinstance(out, BaseException):
            raise out
        return out
    fs = ctx.spec.feature_set(prop.features)
    counters = {prop.name: _Counter(prop, ctx, R)}
    if prop.param("rate") == "scoring":
        parts = []
        for r in ctx.row_batches(fs.name, prop.data):
            budget.check(0)
            parts.append(scores(ctx, prop.model, r, r.frame.values, r.frame.n_rows))
        counters[prop.name].median = float(np.median(np.concatenate(parts)))
    failed: dict = {}
    mates = {}
    for o, resamples in (_pass_mates(prop, ctx) if budget.limit is None else ()):
        mates[o.name] = o
        try:
            counters[o.name] = _Counter(o, ctx, resamples)
        except Exception as e:  # noqa: BLE001 - that property's own error, raised when it runs
            failed[o.name] = e
    seen = 0
    for rows in ctx.row_batches(fs.name, prop.data):
        budget.check(seen)
        memo: dict = {}
        order = list(counters.items())
        for i, (name, k) in enumerate(order):
            try:
                k.add(rows, seen, memo)
            except Exception as e:  # noqa: BLE001 - a mate's error is its own, raised when it runs
                if name == prop.name:
                    raise
                failed[name] = e
                del counters[name]
            _forget_inputs(memo, ctx, [x for _, x in order[i + 1:]])
        seen += rows.frame.n_rows
    for name, o in mates.items():
        done[name] = (o, failed[name] if name in failed else counters[name].result())
    return counters[prop.name].result()

