"""Group metrics on data of a forest that adds its trees in the order its threads finish (forest_threads).

Such a RandomForest / ExtraTrees (``n_jobs`` != 1, leaf values whose sums are not exact in every order) has no
one output, but every order's is within E of the trees' own order's (what ``n_jobs = 1`` computes:
:mod:`fairspec.models.forest_rows`). A row whose trees' outputs sum to one float in every order
(:mod:`fairspec.certify.row_sums`), or whose every class probability is more than its own E from the decision's
threshold and every two more than 2E apart (:func:`fairspec.certify.rounding.near_rows`), is decided the trees'
order's way in every order; the others, *near*, may be decided either way. The metric's counts are those of the
trees' order (:func:`decisions`), and the near rows are kept (:class:`NearRows`) with their (group, label) cell:

- no near row: the verdict is the trees' order's, which is every order's (exact counts, as for n_jobs = 1);
- near rows, every row counted once (no weights): a metric is a function of its (group, decision, label) counts
  (the bootstrap too: one multinomial draw of them), and the near rows of a (group, label) cell change that
  cell's count of positive decisions by 0 .. m. Every such count vector (at most :data:`MAX_COUNTS`) is decided
  as the metric decides (``status_of``); one verdict under all of them is the verdict (a note says so), else
  ``unknown`` naming the near rows and the metric's range;
- weighted rows, or too many count vectors: ``unknown`` naming how many rows are near.

Scores (calibration, rate = scoring, mean scores) are not read this way: the AmbiguousRuntime refusal stands.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

#: at most this many count vectors of the near rows' (group, label) cells are decided
MAX_COUNTS = 1024


def decisions(model, X: np.ndarray, memo: dict | None, name: str) -> np.ndarray:
    """The decisions of a model whose forest adds its trees in thread order: the trees' order's, and its near
    rows in ``memo[("forest_near", name)]`` as (mask, E, forests); the model's refusal (AmbiguousRuntime)
    where the per-row reading does not apply (:func:`fairspec.models.forest_rows.decide_rows`)."""
    from fairspec.models.forest_rows import decide_rows

    r = decide_rows(model, X)
    if r is None or (memo is None and r[1].any()):
        return model.decide(X)          # the AmbiguousRuntime refusal (forest_threads)
    d, near, E, forests = r
    if memo is not None:
        memo[("forest_near", name)] = (near, E, forests)
    return d


def score_refusal(model):
    """The AmbiguousRuntime of a metric of a threaded forest's scores (calibration, rate = scoring, a mean
    score): each row's score is only known within E there, and that interval is not carried through the
    metric: unknown, saying so."""
    from fairspec.models.base import AmbiguousRuntime

    return AmbiguousRuntime(type(model.raw).__name__, "n_jobs",
                            f"{model.path.name}: {model.order_problem}; a metric of its scores (calibration, "
                            f"rate = scoring, a mean score) is not decided from the trees' order (each score is "
                            f"known only within a reordering's error, which is not carried through the metric), "
                            f"while a metric of its decisions is, row by row")


@dataclasses.dataclass
class NearRows:
    """The near rows of one property's pass: their group cell, label, weight, trees'-order decision and the
    bound E; the forest's tree count and n_jobs for the sentences."""

    E: object = 0
    trees: int = 0
    n_jobs: object = None
    parts: list = dataclasses.field(default_factory=list)

    def add(self, found: tuple, idx, y, w, d) -> None:
        near, E, forests = found
        self.E = max(self.E, E)
        self.trees, self.n_jobs = len(forests[0].estimators_), forests[0].n_jobs
        r = np.flatnonzero(near)
        if r.size:
            self.parts.append((idx[r], y[r], np.ones(r.size) if w is None else w[r], d[r]))

    def renumber(self, order) -> None:
        remap = np.empty(len(order), dtype=np.int64)
        remap[np.asarray(order)] = np.arange(len(order))
        self.parts = [(remap[p[0]],) + tuple(p[1:]) for p in self.parts]

    @property
    def count(self) -> int:
        return int(sum(p[0].size for p in self.parts))

    def arrays(self):
        return tuple(np.concatenate([p[i] for p in self.parts]) for i in range(4))


def _e(near: NearRows) -> str:
    from fairspec.certify.rounding import float_up

    return f"{float(float_up(near.E)):.3g}"


def decide(prop, c, near: NearRows, status: str, value: float, status_of, data_name: str):
    """``(reason, details)``: the reason of an ``unknown`` when the near rows' decisions may change the verdict
    (None when they cannot), and ``details["forest_threads"]`` (its ``note`` is added to a decided verdict).
    ``status_of(counts) -> (status, value)`` decides counts as the metric does."""
    n = near.count
    who = (f"the forest adds its {near.trees} trees in the order its n_jobs = {near.n_jobs} threads finish, so "
           f"each class probability may move by up to E = {_e(near)} between calls")
    details = {"E": float(near.E), "rows_within_E": n}
    if n == 0:
        details["note"] = (f"{who}; every row of '{data_name}' is decided by more than that (its probabilities "
                           f"more than E from the threshold and 2E apart): the same decisions in every order")
        return None, details
    rows = f"{n:,} row{'s' if n != 1 else ''} of '{data_name}'"
    within = f"{'lie' if n != 1 else 'lies'} within E of a decision's threshold (or of a tie between two classes)"
    if c.weighted or c.boot_cells is not None:
        return (f"{who}; {rows} {within}, which another order may decide otherwise, and with weighted rows the "
                f"metric is not decided over their decisions: unknown (set n_jobs = 1 on the forest before "
                f"saving it)"), details
    g, y, w, d = near.arrays()
    keys = sorted(set(zip(g.tolist(), y.tolist())))
    members = [np.flatnonzero((g == k[0]) & (y == k[1])) for k in keys]
    total = 1
    for m in members:
        total *= m.size + 1
    details["count_vectors"] = total
    if total > MAX_COUNTS:
        return (f"{who}; {rows} {within}, which another order may decide otherwise, in {len(keys)} (group, label) "
                f"cells: {total:,} ways to count their decisions, more than the {MAX_COUNTS:,} decided: unknown "
                f"(set n_jobs = 1 on the forest before saving it)"), details
    base = c.cells.copy()
    np.add.at(base, (g, d, y), -w)              # the near rows out; each count vector puts them back
    seen, values = {status}, [value]
    for ks in itertools.product(*[range(m.size + 1) for m in members]):
        new_d = np.zeros(g.size, dtype=np.int64)
        for k, m in zip(ks, members):
            new_d[m[:k]] = 1
        cells = base.copy()
        np.add.at(cells, (g, new_d, y), w)
        st, v = status_of(dataclasses.replace(c, cells=cells))
        seen.add(st)
        if v == v:
            values.append(float(v))
    lo, hi = min(values), max(values)
    details.update(value_range=[lo, hi], verdicts=sorted(seen))
    each = (f"{rows} {within}, which another order may decide otherwise; with their decisions counted every way "
            f"({total:,} count vectors) {prop.metric} ranges over [{lo:.6g}, {hi:.6g}]")
    if len(seen) > 1:
        return f"{who}; {each}, and the verdict with it: unknown (set n_jobs = 1 on the forest before saving it)", \
            details
    details["note"] = f"{who}; {each}, and the verdict is the same throughout"
    return None, details
