"""Group metrics on data with bootstrap confidence intervals.

Every metric is a function of weighted cell counts (fairspec.analyses.group_rates):
the sum of sample weight per (group, decision, label) cell, and for calibration
per (group, score bin, label) with the bins' score sums.  The bootstrap
resamples rows; when every row weighs 1 a replicate is one multinomial draw of
the cell counts (1000 replicates over 30,000 rows cost milliseconds), otherwise
(weights, scores) each row enters each replicate with a Poisson(1) multiplicity.
The counts, and those replicates, are accumulated over record batches
(``count``), so a data set larger than memory is decided in one streamed pass,
bootstrap included, with the same verdict as in memory.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from fairspec import ir
from fairspec.analyses.group_rates import BETWEEN, METRICS, metric_value, rate
from fairspec.backends.data import batching
from fairspec.backends.data.budget import NONE as NO_LIMIT, WEIGHT_TOTAL, Budget, OutOfTime
from fairspec.backends.data.constant import constant_reason, lost_reason, lost_replicates, undefined_reason
from fairspec.backends.data.group_table import exact_cells, group_table, metric_columns, rate_intervals, \
    report_number as _r
from fairspec.backends.data.estimate_bounds import note
from fairspec.backends.data.groups import GroupCells, estimated_holds, missing_rows, small_undo_reason
from fairspec.syntax.literals import interval as _interval
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly
from fairspec.verdict import Verdict, interval_status, unknown



def decisions(ctx, model_name: str, values: dict, n: int, memo: dict | None = None) -> np.ndarray:
    """The model's decision per row; ``memo`` (one dict per batch) keeps it for every property of
    a shared pass that asks for the same model on the same rows."""
    if memo is not None and ("decide", model_name) in memo:
        return memo[("decide", model_name)]
    model = ctx.model(model_name)
    if getattr(model, "format", None) == "rule":
        d = model.decide_values(values, n)
    elif memo is not None and batching.checked(model):
        # a runtime that rounds by batch: the rows near the threshold re-decided in other batchings
        X = model_input(ctx, model_name, values, n, memo)
        d, z, thr = batching.decide_and_score(model, X)
        memo[("fragile", model_name)] = batching.decision_fragile(model, X, d, z, thr)
    elif getattr(model, "order_problem", None) is not None:      # a forest adding its trees in thread order
        from fairspec.backends.data.forest_rows import decisions as forest_decisions

        d = forest_decisions(model, model_input(ctx, model_name, values, n, memo), memo, model_name)
    else:
        d = model.decide(model_input(ctx, model_name, values, n, memo))
    if memo is not None:
        memo[("decide", model_name)] = d
    return d


def model_input(ctx, model_name: str, values: dict, n: int, memo: dict | None = None) -> np.ndarray:
    """The encoded rows; models with the same fitted encoding share one matrix per batch."""
    if memo is None:
        return ctx.model_input(model_name, values, n)
    enc = ctx.encoding(model_name)
    key = ("input", enc.width, enc.columns)
    if key not in memo:
        memo[key] = ctx.model_input(model_name, values, n)
    return memo[key]


class NoScore(Exception):
    """The subject has no score (a rule, a table of logged decisions): one sentence why."""


def scores(ctx, model_name: str, rows, values: dict, n: int, memo: dict | None = None) -> np.ndarray:
    """The subject's score per row, as a probability in [0, 1] when it is a logit."""
    if memo is not None and ("score", model_name) in memo:
        return memo[("score", model_name)]
    s = _scores(ctx, model_name, rows, values, n, memo)
    if memo is not None:
        memo[("score", model_name)] = s
    return s


def _scores(ctx, model_name: str, rows, values: dict, n: int, memo: dict | None) -> np.ndarray:
    m = ctx.spec.model(model_name)
    if m.format == "predictions":
        if m.score_column is None:
            raise NoScore(f"model '{m.name}' is a column of logged decisions ({m.decision_column}) with no score")
        return rows.decided_numbers(m.score_column, f"read as the score of model '{m.name}'")
    model = ctx.model(model_name)
    if getattr(model, "format", None) == "rule":
        raise NoScore(f"model '{m.name}' is a rule: it decides, but has no score")
    if getattr(model, "order_problem", None) is not None:     # a forest adding its trees in thread order
        from fairspec.backends.data.forest_rows import score_refusal

        raise score_refusal(model)
    read, logit = model.prob_reader()          # a booster declared by its margin: its library's probability
    s = read(model_input(ctx, model_name, values, n, memo))
    if memo is not None:                       # what the runtime computed (batching's spread is about it)
        memo[("raw", model_name)] = np.asarray(s, dtype=np.float64)
    return 1.0 / (1.0 + np.exp(-s)) if logit else s


def subject_decisions(prop: ir.GroupMetric, ctx, rows, values: dict, n: int, y: np.ndarray,
                      median: float | None = None, memo: dict | None = None) -> np.ndarray:
    """The decision per row: the model's, a logged column's, or the label (the data set itself);
    with rate = scoring (NYC LL 144's scoring rate) a score above the sample's median score."""
    if not prop.model:
        return y
    m = ctx.spec.model(prop.model)
    if prop.param("rate") == "scoring":
        return (scores(ctx, prop.model, rows, values, n, memo) > median).astype(np.int64)
    if m.format == "predictions":
        if m.decision_column is not None:
            return rows.truthy(m.decision_column, m.positive)
        score = rows.decided_numbers(m.score_column, f"read as the score of model '{m.name}'")
        return (score > m.threshold).astype(np.int64)
    if prop.param("class") is not None or prop.param("threshold") is not None:   # issue 25
        from fairspec.backends.data.outputs import output_decisions

        return output_decisions(prop, ctx, model_input(ctx, prop.model, values, n, memo), memo)
    return decisions(ctx, prop.model, values, n, memo)


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


BOOT_CHUNK_CELLS = 4_000_000  # resampled cells evaluated at a time (32 MB of float64)


def bootstrap(prop: ir.GroupMetric, c: Counts, R: int, rng, eligible,
              budget: Budget = NO_LIMIT) -> tuple[np.ndarray, dict]:
    """The metric over R bootstrap replicates [R], and each compared rate per group [R, G].

    Multinomial replicates are drawn and evaluated a chunk of resamples at a time (the same
    draws as all at once: the generator fills replicate after replicate), so memory is R x G
    rates, not R x G x 4 counts, however many cells the groups occupy."""
    rates = METRICS[prop.metric].rates
    if c.boot_cells is not None:  # Poisson replicates, counted with the rows (sized before the pass)
        boot, _ = evaluate_counts(prop, c.boot_cells, eligible, c.boot_bins, c.boot_sums)
        return boot, {r: rate(c.boot_cells, r) for r in rates}
    flat = c.cells.reshape(-1)
    total = int(flat.sum())
    k = max(1, min(R, BOOT_CHUNK_CELLS // max(1, flat.size)))
    boots, per = [], {r: [] for r in rates}
    for r0 in range(0, R, k):
        budget.check(int(c.sizes.sum()), r0)
        cells = rng.multinomial(total, flat / total, size=min(k, R - r0)).reshape((-1,) + c.cells.shape) \
            .astype(np.float64)
        boots.append(evaluate_counts(prop, cells, eligible)[0])
        for r in rates:
            per[r].append(rate(cells, r))
    return np.concatenate(boots), {r: np.concatenate(v) for r, v in per.items()}


def evaluate_counts(prop: ir.GroupMetric, cells, eligible, bins=None, score_sums=None):
    """The metric over the eligible groups (the whole population for overall rates) [...], and the
    per-group quantity it compares [..., G_eligible]."""
    mode = prop.options.get("compare", BETWEEN)
    kw = dict(alpha=float(prop.param("alpha", 2.0)), overall_cells=cells.sum(axis=-3))
    if bins is not None:
        kw.update(bins=bins[..., eligible, :, :], score_sums=score_sums[..., eligible, :], overall_bins=bins,
                  overall_sums=score_sums)
    return metric_value(prop.metric, cells[..., eligible, :, :], mode, **kw)


def run_group_metric(prop: ir.GroupMetric, ctx, *, resamples: int, timeout: float | None = None,
                     why: str | None = None) -> Verdict:
    """A group metric measured on data rows. Its runner (:mod:`fairspec.kinds.on_data`) passes in what
    it asked the planner: ``resamples``, the option ``bootstrap`` (the spec's, else the schema's default),
    ``timeout``, the option (None: no limit; past it the verdict is unknown, see :mod:`.budget`), and
    ``why``, the planner's reason for a property over a distribution that is not the data's."""
    t0 = time.perf_counter()
    try:
        v = _run_group_metric(prop, ctx, resamples, Budget(ctx, timeout), why, t0)
        note = ((v.details or {}).get("forest_threads") or {}).get("note")
        if note and v.status in ("holds", "violated"):       # decided in every order of a threaded forest
            from fairspec.verdict import with_note

            v = with_note(v, note)
        return v
    except OutOfTime as e:
        return unknown(prop, e.reason(), backend="data", seconds=time.perf_counter() - t0,
                       details={"timed_out": {"budget": e.limit, "rows": e.rows, "resamples": e.resamples}})


def _run_group_metric(prop: ir.GroupMetric, ctx, resamples: int, budget: Budget, why: str | None,
                      t0: float) -> Verdict:
    if prop.data is None:
        dist = next((d for d in ctx.spec.distributions if d.name == prop.distribution), None)
        if dist is not None and dist.kind == "empirical" and prop.metric != "influence":
            return run_empirical(prop, ctx, dist, resamples=resamples, timeout=budget.limit)
        why = why or (f"the data backend measures group metrics on data rows, and this one is "
                      f"over distribution '{prop.distribution}' (dp, ssat or elimination)")
        return unknown(prop, why, backend="data")
    if prop.metric == "path_specific":
        return unknown(prop, "path-specific causal fairness needs a distribution with a causal structure: "
                             "distribution = bayes(DATA), conditional(DATA) or a declared table", backend="data")
    if METRICS[prop.metric].output:              # issue 25: multiclass and regression metrics
        from fairspec.backends.data.outputs import run_output_metric

        return run_output_metric(prop, ctx, resamples=resamples, budget=budget)
    R = resamples  # the option bootstrap (the schema's default when not set)
    rng = np.random.default_rng(prop.options.seed)
    try:
        c = count(prop, ctx, R, budget)
    except NoScore as e:
        return unknown(prop, f"{prop.metric} needs a score: {e}", backend="data")
    mdef = METRICS[prop.metric]
    opts = prop.options
    cells, sizes, names = c.cells, c.sizes, c.names
    G, n = len(names), int(sizes.sum())
    # an inequality index over individuals (theil_index, generalized_entropy_index) is one value of every
    # row, whatever its group: groups only split the table, so none is too small or left out
    individual = mdef.form == "inequality"
    share = 0.0 if individual else float(opts.get("exclude_below", 0.0))
    excluded = (sizes < share * n) & (sizes > 0) if share > 0 else np.zeros(G, dtype=bool)
    eligible = sizes > 0 if individual else (sizes >= opts.min_group_size) & ~excluded
    large = int(eligible.sum())
    if mdef.form == "between_inequality":   # every row's benefit is its group's mean, over ALL the rows: a small
        eligible = (sizes > 0) & ~excluded  # group is in the index (not monotone in the groups), keeps holds unknown
    small = [] if individual else [(names[g], int(sizes[g])) for g in range(G)
                                   if 0 < sizes[g] < opts.min_group_size and not excluded[g]]
    empty = [names[g] for g in range(G) if sizes[g] == 0]
    details = {
        "rows": n, "metric": prop.metric, "groups_label": prop.groups.label or "all rows",
        "compare": opts.get("compare", BETWEEN), "bootstrap": R, "confidence": opts.confidence,
    }
    if not individual:
        details["min_group_size"] = opts.min_group_size
    if opts.get("weight"):
        details["weight"] = opts.get("weight")
    details.update(missing_rows(ctx, prop.data))
    if empty:
        details["empty_groups"] = empty
    if c.combinations is not None:  # sparse cells: the groups no row falls in are not listed one by one
        details["empty_groups_count"] = c.combinations - G
    if share > 0:
        details["exclude_below"] = share
    if excluded.any():
        details["excluded_groups"] = [{"group": names[g], "rows": int(sizes[g]), "share": sizes[g] / n}
                                      for g in range(G) if excluded[g]]
    details["groups"], details["overall"] = group_table(prop, c, eligible, excluded)
    if prop.model and (prop.param("class") is not None or prop.param("threshold") is not None):
        from fairspec.backends.data.outputs import decision_words
        details.update(decision_words(prop, ctx))       # 'predicted "C"' / 'grade is "C"' for the report
    if prop.param("class") is not None and ctx.spec.data(prop.data).target is not None:
        from fairspec.backends.data.outputs import confusion_by_group   # issue 25: the whole confusion matrix

        for row, cm in zip(details["groups"], confusion_by_group(prop, ctx, names)):
            row["confusion"] = cm
            row["confusion_matrix"] = str(cm.get("matrix"))      # the text and HTML tables' column
    details["rates"] = metric_columns(prop)
    if any("confusion" in r for r in details["groups"]):
        details["rates"].append("confusion_matrix")
    if prop.metric == "impact_ratio":
        details["rate"] = prop.param("rate", "selection")
    if individual and n == 0:
        return unknown(prop, f"{prop.metric} has no data rows to measure", backend="data",
                       seconds=time.perf_counter() - t0, details=details)
    if large < 2 and not individual:
        return unknown(prop, f"fewer than two groups of {prop.groups.label} have at least {opts.min_group_size} rows "
                             f"(min_group_size)", backend="data", seconds=time.perf_counter() - t0, details=details)
    enames = [names[g] for g in range(G) if eligible[g]]
    value, rates = evaluate_counts(prop, cells, eligible, c.bins, c.score_sums)
    value = float(value)
    constant = constant_reason(prop, ctx, cells, sizes, eligible, c.labelled)   # y == "maybe": never holds
    if constant:
        details["constant"] = constant
    if np.isnan(value):
        return unknown(prop, constant or f"{prop.metric} is undefined here (a rate it compares has no rows in its "
                       f"denominator in every group, e.g. no positive decision)", backend="data",
                       seconds=time.perf_counter() - t0, details=details)
    a = b = None
    if not np.isnan(rates).all() and mdef.form != "inequality":
        a, b = int(np.nanargmin(rates)), int(np.nanargmax(rates))
        details["worst_pair"] = {"low": enames[a], "low_rate": _r(rates[a]), "high": enames[b],
                                 "high_rate": _r(rates[b])}
    boot, per_rate = bootstrap(prop, c, R, rng, eligible, budget)
    rate_intervals(details, prop, per_rate, opts.confidence)
    lost, lost_in = lost_replicates([per_rate[r] for r in mdef.rates], [rate(cells, r) for r in mdef.rates],
                                    eligible, names)
    boot_all, boot = boot, boot[~np.isnan(boot) & ~(lost if lost.size else False)]
    alpha = 1.0 - opts.confidence
    lo, hi = (float(np.quantile(boot, alpha / 2)), float(np.quantile(boot, 1 - alpha / 2))) if boot.size else (value, value)
    lo_b, hi_b = min(lo, value), max(hi, value)                 # the bootstrap's (its reasons come first)
    lo, hi = _with_box(prop, c, eligible, lo_b, hi_b, details)   # widened to a valid bound (rate_bounds)
    exact = _exact(prop, c, eligible)
    # reported: the exact value rounded once (7/10 : 7/8 is 0.8, not 0.7999999999999999), and an end
    # point equal to the float value stands for it, as in the decision
    shown = float(exact) if exact is not None else value
    seconds = time.perf_counter() - t0
    common = dict(value=_r(shown), bound=(_r(shown if lo == value else lo), _r(shown if hi == value else hi)),
                  backend="data", seconds=seconds, details=details)
    claim = f"{prop.metric} {prop.op} {_spec_number(prop.threshold)}"      # as written: 0.1234567, not 0.123457
    status, why_unknown = _decide(prop, c, exact, value, lo_b, hi_b, n, details)
    if c.fragile is not None:       # rows another batching decides otherwise: the verdict under their decisions
        batched = _batched(prop, c, eligible, R, n, "unknown" if why_unknown else status, shown, details, ctx, small)
        if batched:
            return Verdict(prop.name, prop.kind, "unknown", reason=batched, **common)
    if c.edges is not None:         # calibration: scores another batching moves, rows to a neighbouring bin
        batched, details["batching"] = batching.calibration_decide(
            prop, c, c.edges, eligible, value, boot_all if c.boot_bins is not None else None,
            "unknown" if why_unknown else status, lambda lo2, hi2: _decide(prop, c, None, value, lo2, hi2, n, {})[0],
            poisson_multiplicities)
        if batched:
            return Verdict(prop.name, prop.kind, "unknown", reason=batched, **common)
    if c.forest is not None:        # a forest adding its trees in thread order: its rows within E of a threshold
        from fairspec.backends.data.forest_rows import decide as forest_decide

        threaded, details["forest_threads"] = forest_decide(
            prop, c, c.forest, "unknown" if why_unknown else status, shown,
            lambda c2: _status_of(prop, c2, eligible, R, n, ctx, small), prop.data)
        if threaded:
            return Verdict(prop.name, prop.kind, "unknown", reason=threaded, **common)
    why_unknown = (why_unknown or undefined_reason(prop, cells, eligible, names, status)
                   or (None if mdef.form == "between_inequality" else small_undo_reason(
                       prop, claim, small, opts.min_group_size, status, mdef.form not in ("ratio", "min_rate")))
                   or lost_reason(prop, status, boot, boot_all[lost] if lost.size else [], lost_in, alpha, value))
    if why_unknown:
        return Verdict(prop.name, prop.kind, "unknown", reason=why_unknown, **common)
    if status != "unknown" and (lo, hi) != (lo_b, hi_b) and _decide(prop, c, exact, value, lo, hi, n, {})[0] != status:
        return Verdict(prop.name, prop.kind, "unknown", reason=(
            f"the threshold {_spec_number(prop.threshold)} lies inside the {opts.confidence:.0%} interval "
            f"{_interval(lo, hi, (prop.threshold,), exact=exact)} that bounds "
            f"{_METHOD_WORDS.get(details['interval'].get('method', ''), 'the metric (union bound)')}, though not inside "
            f"the bootstrap's {_interval(lo_b, hi_b, (prop.threshold,))}: a group's value on few rows (a rate near 0 or "
            f"1) is not known to the bootstrap's precision; more data "
            f"would decide it"),
            **common)
    if status == "holds" and constant:
        return Verdict(prop.name, prop.kind, "unknown", reason=constant, **common)
    if status == "holds":
        return estimated_holds(prop, claim, small, opts.min_group_size, common, opts.confidence)
    if status == "violated":
        where = (f"; lowest {enames[a]} ({rates[a]:.3f}), highest {enames[b]} ({rates[b]:.3f})"
                 if a is not None else "")
        return Verdict(prop.name, prop.kind, "violated",
                       reason=f"{claim} fails over the whole {opts.confidence:.0%} interval{note(details)}{where}",
                       **common)
    return Verdict(prop.name, prop.kind, "unknown",
                   reason=f"the threshold {_spec_number(prop.threshold)} lies inside the {opts.confidence:.0%} confidence "
                          f"interval {_interval(lo, hi, (prop.threshold,), exact=exact)}; more data would decide it", **common)


_METHOD_WORDS = {"bootstrap joined with clopper_pearson (valid, union bound)":
                 "every compared rate of every group at once (Clopper-Pearson, union bound)",
                 "bootstrap joined with mcdiarmid (valid, union bound)":
                 "every compared group's ECE at once (McDiarmid, union bound)"}


def _batched(prop: ir.GroupMetric, c: Counts, eligible, R: int, n: int, status: str, value: float,
             details: dict, ctx=None, small=()) -> str | None:
    """The reason of an ``unknown`` when the verdict changes with the decisions of the rows another
    batching of the runtime decides otherwise (:mod:`fairspec.backends.data.batching`), else None; the
    rows and the metric's range go to ``details["batching"]`` either way."""
    reason, details["batching"] = batching.decide(prop, c, c.fragile, status, value,
                                                  lambda c2: _status_of(prop, c2, eligible, R, n, ctx, small), prop.data,
                                                  poisson_multiplicities)
    return reason


def _status_of(prop: ir.GroupMetric, c2: Counts, eligible, R: int, n: int, ctx=None, small=()):
    """(status, value) of other counts (another batching's or another summation order's decisions), decided as
    the metric's own decision is, refusals included: a rate 0/0 in an eligible group (undefined_reason), the
    replicates that lost a group's denominator (lost_replicates / lost_reason), the small groups that could
    undo a violated, the simultaneous interval and a constant label (review r3, session 36: a count vector with
    no positive decision in a group made its PPV 0/0 and was decided over the other group alone)."""
    mdef = METRICS[prop.metric]
    v2 = float(evaluate_counts(prop, c2.cells, eligible, c2.bins, c2.score_sums)[0])
    if np.isnan(v2):
        return "unknown", v2
    b2, per_rate = bootstrap(prop, c2, R, np.random.default_rng(prop.options.seed), eligible)
    lost, lost_in = lost_replicates([per_rate[r] for r in mdef.rates], [rate(c2.cells, r) for r in mdef.rates],
                                    eligible, c2.names)
    b2_all, b2 = b2, b2[~np.isnan(b2) & ~(lost if lost.size else False)]
    a = 1.0 - prop.options.confidence
    lo2, hi2 = (float(np.quantile(b2, a / 2)), float(np.quantile(b2, 1 - a / 2))) if b2.size else (v2, v2)
    x2 = _exact(prop, c2, eligible)
    value = float(x2) if x2 is not None else v2
    lo_b, hi_b = min(lo2, v2), max(hi2, v2)
    st, why = _decide(prop, c2, x2, v2, lo_b, hi_b, n, {})
    claim = f"{prop.metric} {prop.op} {_spec_number(prop.threshold)}"
    why = (why or undefined_reason(prop, c2.cells, eligible, c2.names, st)
           or (None if mdef.form == "between_inequality" else small_undo_reason(
               prop, claim, list(small), prop.options.min_group_size, st, mdef.form not in ("ratio", "min_rate")))
           or lost_reason(prop, st, b2, b2_all[lost] if lost.size else [], lost_in, a, v2))
    if why or st == "unknown":
        return "unknown", value
    lo, hi = _with_box(prop, c2, eligible, lo_b, hi_b, {})
    if (lo, hi) != (lo_b, hi_b) and _decide(prop, c2, x2, v2, lo, hi, n, {})[0] != st:
        return "unknown", value
    if st == "holds" and ctx is not None and constant_reason(prop, ctx, c2.cells, c2.sizes, eligible, c2.labelled):
        return "unknown", value
    return st, value


def _with_box(prop: ir.GroupMetric, c: Counts, eligible, lo: float, hi: float, details: dict) -> tuple[float, float]:
    """[lo, hi] (the bootstrap's, the value inside) widened to contain a valid simultaneous interval where one
    is simple (:mod:`.rate_bounds`, :mod:`.estimate_bounds`): the printed bound is then valid at the stated
    confidence. Elsewhere ``details["interval"]`` names the bootstrap's an approximation, and says why."""
    from fairspec.backends.data import estimate_bounds, rate_bounds

    conf = prop.options.confidence
    method, box = "clopper_pearson", None
    if rate_bounds.applies(prop, c):
        box = rate_bounds.box_interval(prop, c.cells, eligible, conf)
    elif METRICS[prop.metric].form == "calibration" and c.bins is not None:
        method, box = "mcdiarmid", estimate_bounds.ece_interval(prop, c, eligible, conf)
    if box is None:
        details["interval"] = {"bootstrap": [_r(lo), _r(hi)], "method": "bootstrap (approximate)",
                               "approximate": estimate_bounds.approximate_reason(prop, c.weighted)}
        return lo, hi
    details["interval"] = {"bootstrap": [_r(lo), _r(hi)], method: [_r(box[0]), _r(box[1])],
                           "method": f"bootstrap joined with {method} (valid, union bound)"}
    return min(lo, box[0]), max(hi, box[1])


def _exact(prop: ir.GroupMetric, c: Counts, eligible):
    """Rows counted (or whole-number weights, ``exact_cells``): the metric recomputed from the exact
    counts in rationals (``group_rates.exact_metric_value``); None for fractional weights or a
    form without an exact value."""
    from fairspec.analyses.group_rates import exact_metric_value

    cells = c.cells
    if not exact_cells(c):
        return None
    ints = cells.astype(np.int64)
    return exact_metric_value(prop.metric, ints[eligible].tolist(), prop.options.get("compare", BETWEEN),
                              ints.sum(axis=-3).tolist())


def _decide(prop: ir.GroupMetric, c: Counts, exact, value: float, lo: float, hi: float, n: int,
            details: dict) -> tuple[str, str | None]:
    """The status of ``[lo, hi]`` (``value`` inside) against the threshold as written, ``<`` vs ``<=``.

    Rows counted or whole-number weights: ``exact`` (``_exact``), the value in rationals, stands for
    every end point equal to the float value, so a value exactly on the threshold is decided as the
    spec writes the comparison. Fractional weights (rounded float sums): an end point within the
    sums' rounding bound of the threshold gives unknown."""
    from fairspec.certify import exact as cx

    if exact is not None:
        details["exact_value"] = str(exact)
        lo_x = exact if lo == value else cx.exact_value(lo)
        hi_x = exact if hi == value else cx.exact_value(hi)
        return cx.interval_decide(min(lo_x, exact), max(hi_x, exact), prop.op, prop.threshold), None
    status = interval_status(prop.op, prop.threshold, lo, hi)
    if status != "unknown" and c.weighted:
        # each cell a float sum of <= n + 1 non-negative terms: relative error <= gamma(n + 1) each;
        # a rate or a difference / ratio of two rates then moves by at most 8 (n + 2) u
        tol = 8.0 * (n + 2) * 2.0 ** -53
        t = float(prop.threshold)
        if min(abs(lo - t), abs(hi - t)) <= tol * max(1.0, abs(t)):
            return "unknown", (f"{prop.metric} = {value:.12g} lies within the rounding of the weighted sums "
                               f"({tol:.2g}) of the threshold {_spec_number(t)}; the comparison cannot be decided")
    return status, None


def run_empirical(prop, ctx, dist: ir.Distribution, *, resamples: int, timeout: float | None = None) -> Verdict:
    """The empirical distribution of a data set is the data: measure it there (``resamples``: the data
    backend's resamples for ``prop``)."""
    if prop.metric == "path_specific":
        return unknown(prop, "path-specific causal fairness needs a distribution with a causal structure: "
                             "distribution = bayes(DATA) or conditional(DATA), or a declared table",
                       backend="data")
    v = run_group_metric(dataclasses.replace(prop, data=dist.data, distribution=None), ctx, resamples=resamples,
                         timeout=timeout)
    return dataclasses.replace(v, details={**v.details, "distribution": {"name": dist.name, "kind": "empirical",
                                                                       "data": dist.data}})

