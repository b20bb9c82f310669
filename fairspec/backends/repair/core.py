"""FairRepair (Algorithm 1; section V for forests) on a fitted scikit-learn tree or forest.

1. cells: path hypercubes (forest: intersections of all trees' paths) x sensitive groups, with
   their row counts on the data (path probabilities);
2. the LP of IV-D: `minimal`, the least share of rows any repair changes;
3. flips (IV-E): the fewest cells whose decision flips, under every pairwise ratio >= c and
   changed rows <= alpha x minimal x N, chosen exactly by a MILP;
4. refinement (IV-F) when flips alone cannot: a cell may instead flip only a sub-hypercube holding
   its first j distinct points (lexicographic order of the input columns; thresholds on ordered
   columns, subsets of categories on one-hot columns), again chosen exactly, the fewest cells
   changed.  Fully refined cells are single points, so if this is infeasible no repair of the
   data within the bound exists, and the goal is reported unreachable (the paper would relax
   alpha, IV-G; a spec's bound is a hard requirement here);
5. the chosen flips are written into the trees (``patch``); a forest cell is flipped by giving
   the fewest trees a pure leaf for it so that the averaged vote crosses 1/2 (V-B).
   Choosing over intersections (V-A's I_d) rather than over each tree's paths is exact on the
   data: the rows an intersection holds are decided together by every tree, and any joint flip of
   tree paths changes the decision of whole intersections; the flip MILP over them is solved in
   aggregated form (``optimise.option_classes``), which is what makes 30-tree forests quick.
Everything here is independent of fairspec's IR: arrays in, an estimator and numbers out.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from fairspec.backends.repair.hypercubes import Cells, intersect, lex_points, make_cells, subset_boxes
from fairspec.backends.repair.optimise import (UNCHECKED, Choice, Options, choose, choose_counts, choose_points,
                                               exact_ratio, minimal_change, ratio_ok, row_budget)
from fairspec.backends.repair.patch import leaf_value, repaired_estimator
from fairspec.certify.exact import threshold_of
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly
from fairspec.syntax.literals import shown as _shown  # a bound rounded outward, on its side of c

SUPPORTED = ("DecisionTreeClassifier", "RandomForestClassifier")


class RepairUnsupported(Exception):
    """The model cannot be repaired here: one sentence."""


@dataclass
class Problem:
    X: np.ndarray                 # (n, d) the model input of the data rows
    group: np.ndarray             # (n,) sensitive group of each row
    group_names: list[str]
    group_boxes: list[dict]       # encoded-space box of each group
    c: float
    alpha: float
    strict: bool = False
    positive: int = 1             # predict_proba column of the positive decision
    solver: str = "highs"
    time_limit: float | None = None


@dataclass
class Outcome:
    status: str                   # met (nothing to do) | repaired | unreachable | timeout | unknown (reason)
    before: np.ndarray            # passing rates per group
    after: np.ndarray | None = None
    minimal: float = 0.0          # LP optimum, share of rows
    budget: tuple[int, int] | None = None   # (rows that may change, of rows): the bound as the solvers had it
    desired: np.ndarray | None = None
    achieved: float = 0.0         # share of rows whose decision changed
    rows_changed: int = 0
    paths_flipped: int = 0
    paths_refined: int = 0
    leaves_patched: int = 0       # tree leaves that became subtrees (a forest counts each tree)
    stage: str = ""               # flips | refinement
    optimal: bool = True          # the fewest changed paths proved (False: a solver time limit kept an incumbent)
    greedy: bool = False          # the incumbent kept is the greedy warm start
    solver_seconds: float = 0.0
    solver: str = ""
    estimator: object = None
    decisions: np.ndarray | None = None   # the repaired decisions on the rows (in memory)
    reason: str = ""
    note: str = ""                # why the fewest changed paths is not proven, other than a time limit
    best_ratio: float | None = None
    needed: float | None = None   # least semantic difference that reaches the goal (when unreachable)
    log: list = field(default_factory=list)


def model_kind(est) -> str:
    name = type(est).__name__
    if name not in SUPPORTED:
        raise RepairUnsupported(f"repair supports scikit-learn {' and '.join(SUPPORTED)}; this model is a {name}")
    classes = getattr(est, "classes_", None)
    if classes is None or len(classes) != 2 or getattr(est, "n_outputs_", 1) != 1:
        raise RepairUnsupported(f"repair supports binary classifiers with one output; this {name} has "
                                f"{'no' if classes is None else len(classes)} classes")
    return "tree" if name == "DecisionTreeClassifier" else "forest"


def _trees(est):
    return [est] if hasattr(est, "tree_") else list(est.estimators_)


def _proba(est, X):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(est.predict_proba(X))


def _decide(est, X, positive: int) -> np.ndarray:
    """The decisions as scikit-learn's own ``predict`` makes them (1 where it returns the positive class),
    as the runner and the written model are decided: a forest's averaged vote can be exactly 1/2 in the
    positive column and 0.49999999999999994 in the other (predict: positive; ``predict_proba > 1/2``: not),
    or 0.5000000000000001 in both (predict: the first class)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (np.asarray(est.predict(X)) == est.classes_[positive]).astype(np.int64)


def repair(est, pb: Problem, progress=None) -> Outcome:
    kind = model_kind(est)
    X = np.asarray(pb.X, dtype=np.float32).astype(np.float64)   # what the trees compare
    trees = _trees(est)
    dec = _decide(est, X, pb.positive)
    with warnings.catch_warnings():     # a tree fitted on a data frame: X is its columns in its order, unnamed
        warnings.simplefilter("ignore")
        leaves = np.column_stack([t.apply(X.astype(np.float32)) for t in trees])
    G = len(pb.group_names)
    sizes = np.bincount(pb.group, minlength=G).astype(np.int64)
    base = np.bincount(pb.group, weights=dec, minlength=G).astype(np.int64)
    before = base / sizes
    N = len(dec)
    say = progress or (lambda msg: None)
    if ratio_ok(base, sizes, pb.c, pb.strict):          # exactly: counts and c as written
        return Outcome("met", before, before, decisions=dec)
    if pb.strict and threshold_of(pb.c) >= 1:
        return Outcome("unreachable", before, decisions=dec, best_ratio=1.0,
                       reason=f"no passing-rate ratio (the lowest rate over the highest) exceeds 1, so no repair "
                              f"reaches > {_spec_number(pb.c)}")
    cells = make_cells(leaves, pb.group, dec)
    lp = minimal_change(before, sizes, pb.c, pb.strict)
    # exactly: a float alpha x minimal x N with a slack took 4.99999999968 rows as a budget of 5
    budget, exact_min, why = row_budget(pb.alpha, base, sizes, pb.c, pb.strict, lp.minimal)
    if why:
        return Outcome("unknown", before, minimal=lp.minimal, decisions=dec, reason=why)
    if exact_min is not None:
        lp.minimal = float(exact_min)
    say(f"{len(cells)} cells ({kind}, {len(trees)} tree(s)); minimal semantic difference {lp.minimal:.4f} "
        f"({lp.minimal * N:.1f} rows); bound {budget} rows")
    out = Outcome("repaired", before, minimal=lp.minimal, desired=lp.rates, solver=pb.solver, budget=(budget, N))

    # stage 1: flip whole cells
    sign = np.where(cells.decision == 1, -1, 1)
    flips = Options(np.arange(len(cells)), cells.group, sign * cells.size, cells.size.copy(), np.zeros(len(cells), int))
    ch = choose(flips, base, sizes, pb.c, pb.strict, budget, pb.solver, pb.time_limit)
    out.solver_seconds += ch.seconds
    out.log.append(("flips", ch.status, len(flips.cell), ch.seconds))
    say(f"flips: {ch.status} over {len(flips.cell)} cells in {ch.seconds:.2f}s")
    # changes: (cell, mask over its distinct points or None for the whole cell)
    changes: list[tuple[int, np.ndarray | None]] = []
    points: dict = {}
    if ch.status == "infeasible":
        # stage 2: refine.  First the relaxation where a cell may change any number of its rows
        # (fewest cells changed: a lower bound), then the exact full refinement -- every distinct
        # point of a cell may flip on its own -- over the cells it picked; when that cannot realise
        # the counts, over every cell.  Infeasible there means no repair of the data within the bound.
        out.stage = "refinement"
        if pb.solver != "highs":      # the refinement's MILPs are HiGHS's (scipy) whatever the engine: said
            out.solver = f"{pb.solver} (flips: infeasible), highs (refinement)"
        left = None if pb.time_limit is None else max(1.0, pb.time_limit - out.solver_seconds)
        t1 = time.perf_counter()
        st, k, note = choose_counts(cells.group, sign, cells.size, base, sizes, pb.c, pb.strict, budget, left)
        out.solver_seconds += time.perf_counter() - t1
        out.log.append(("refinement-counts", st, len(cells), time.perf_counter() - t1))
        say(f"refinement (counts): {st} over {len(cells)} cells")
        status = st
        if st in ("optimal", "feasible"):
            picked = np.flatnonzero(k > 0)
            for scope in (picked, None):
                t1 = time.perf_counter()
                status, changes, points, note = _refine_points(cells, X, sign, base, sizes, pb, budget, left, scope)
                out.solver_seconds += time.perf_counter() - t1
                out.log.append(("refinement-points", status, len(cells) if scope is None else len(scope),
                                time.perf_counter() - t1))
                say(f"refinement: {status} over the points of {len(cells) if scope is None else len(scope)} cells")
                if status in ("optimal", "feasible"):
                    break   # over the picked cells, optimal = as few cells as the relaxation's lower bound
        # the exact re-check's word (a tightened answer, or why none passed) reaches the verdict's reason
        ch = Choice(status, np.zeros(0, dtype=np.int64), 0.0, pb.solver,
                    note=note or (UNCHECKED if status == "unknown" else ""))
    else:
        out.stage = "flips"
        changes = [(int(flips.cell[k]), None) for k in ch.chosen]
    if ch.status == "timeout":
        who = "HiGHS refinement" if out.stage == "refinement" else f"{pb.solver} solver"
        out.status, out.reason = "timeout", f"the {who} reached its time limit without a repair"
        return out
    if ch.status == "unknown":     # no solver answer passed the exact re-check of the goal
        out.status, out.reason = "unknown", ch.note or UNCHECKED
        return out
    if ch.status == "infeasible":
        out.status = "unreachable"
        _explain_unreachable(out, cells, X, base, sizes, pb, budget, N)
        return out
    out.optimal = ch.status == "optimal"
    out.greedy = bool(getattr(ch, "greedy", False))
    out.note = ch.note
    new_dec = dec.copy()
    patches: list[dict[int, list]] = [dict() for _ in trees]
    box_cache: dict = {}   # tree -> its leaves' path hypercubes (this repair only)
    from fairspec.models.sklearn_files import leaf_boxes
    if kind == "forest" and changes:
        # each tree's vote on one row of every changed cell (a cell's rows share every leaf)
        reps = np.array([cells.rows(cell)[0] for cell, _ in changes])
        votes = np.column_stack([_proba(t, X[reps].astype(np.float32))[:, pb.positive] for t in trees])
    for n_change, (cell, mask) in enumerate(changes):
        rows = cells.rows(cell)
        target = 1 - int(cells.decision[cell])
        if mask is None or mask.all():
            boxes = [{}]
            changed = rows
            out.paths_flipped += 1
        else:
            P, _, inv = points[cell]
            boxes = subset_boxes(P, mask)
            changed = rows[mask[inv]]
            out.paths_refined += 1
        new_dec[changed] = target
        region = pb.group_boxes[int(cells.group[cell])]
        if kind == "forest":
            region = _intersection_box(trees, cells.keys[cell], region, box_cache)
            which = _trees_to_patch(votes[n_change], target)
        else:
            which = [0]
        for t in which:
            leaf = int(cells.keys[cell][t])
            vec = leaf_value(target, pb.positive)
            if t not in box_cache:
                box_cache[t] = leaf_boxes(trees[t].tree_)
            for b in boxes:
                bb = _drop_implied(intersect(region, b), box_cache[t][leaf])
                patches[t].setdefault(leaf, []).append((bb, vec))
    out.leaves_patched = sum(len(p) for p in patches)
    new = repaired_estimator(est, patches)
    got = _decide(new, X, pb.positive)
    if not np.array_equal(got, new_dec):
        bad = int((got != new_dec).sum())
        raise RuntimeError(f"the patched {type(est).__name__} decides {bad} rows differently from the chosen repair")
    out.estimator, out.decisions = new, got
    out.rows_changed = int((got != dec).sum())
    out.achieved = out.rows_changed / N
    out.after = np.bincount(pb.group, weights=got, minlength=G) / sizes
    return out


def _refine_points(cells: Cells, X: np.ndarray, sign, base, sizes, pb: Problem, budget: int, time_limit, scope):
    """The exact full refinement over the cells in ``scope`` (None: every cell): which distinct
    points of which cells flip.  Returns (status, [(cell, mask)], {cell: (points, counts, inv)},
    the exact re-check's note)."""
    order = np.argsort(cells.of_row, kind="stable")
    bounds = np.searchsorted(cells.of_row[order], np.arange(len(cells) + 1))
    ids = np.arange(len(cells)) if scope is None else np.asarray(scope)
    points, cell_of, group_of, sign_of, weight = {}, [], [], [], []
    for i, c in enumerate(ids):
        idx = order[bounds[c]:bounds[c + 1]]
        P, counts, inv = lex_points(X[idx])
        points[int(c)] = (P, counts, inv)
        cell_of.append(np.full(len(P), i)); group_of.append(np.full(len(P), cells.group[c]))
        sign_of.append(np.full(len(P), sign[c])); weight.append(counts)
    cat = [np.concatenate(v).astype(np.int64) for v in (cell_of, group_of, sign_of, weight)]
    st, y, note = choose_points(*cat, len(ids), base, sizes, pb.c, pb.strict, budget, time_limit)
    if y is None:
        return st, [], points, note
    changes = []
    for i, c in enumerate(ids):
        m = y[cat[0] == i]
        if m.any():
            changes.append((int(c), m))
    return st, changes, points, note


def _drop_implied(box: dict, path: dict) -> dict:
    """``box`` without the bounds that the leaf's own path hypercube already implies: inside the
    leaf they always hold, so the patch's subtree need not test them again."""
    out = {}
    for col, (lo, hi) in box.items():
        plo, phi = path.get(col, (-np.inf, np.inf))
        lo, hi = (lo if lo > plo else -np.inf), (hi if hi < phi else np.inf)
        if lo != -np.inf or hi != np.inf:
            out[col] = (lo, hi)
    return out


def _intersection_box(trees, key, region, cache: dict):
    """The box of an intersection of paths (one leaf per tree) within ``region``.  ``cache`` holds
    each tree's leaf boxes for this repair only: nothing is stored on the estimator (a deep copy of
    it is what gets written)."""
    from fairspec.models.sklearn_files import leaf_boxes

    box = dict(region)
    for t, (tree, leaf) in enumerate(zip(trees, key)):
        if t not in cache:
            cache[t] = leaf_boxes(tree.tree_)
        box = intersect(box, cache[t][int(leaf)])
        if box is None:  # pragma: no cover - the cell holds a data row, so it is not empty
            raise RuntimeError("an intersection of path hypercubes holding data is empty")
    return box


def _trees_to_patch(p: np.ndarray, target: int) -> list[int]:
    """The fewest trees whose leaf, made pure, moves the forest's averaged vote to ``target``
    (section V-B, with scikit-learn's soft vote: the mean of the trees' class probabilities);
    ``p``: each tree's probability of the positive decision on the cell."""
    p = np.asarray(p, dtype=float)
    n = len(p)
    order = np.argsort(p) if target == 1 else np.argsort(-p)
    cur = p.copy()
    chosen = []
    for t in order:
        mean = cur.sum() / n
        if (target == 1 and mean > 0.5 + 1e-9) or (target == 0 and mean < 0.5 - 1e-9):
            break
        cur[t] = 1.0 if target == 1 else 0.0
        chosen.append(int(t))
    return chosen


def _explain_unreachable(out: Outcome, cells, X, base, sizes, pb: Problem, budget, N):
    """Why no repair within the bound exists: the least share of rows any repair of the data must
    change (the counts relaxation, fewest rows instead of fewest paths: a lower bound),
    and an upper bound on the best ratio reachable within the bound (the LP of IV-D, bisected)."""
    sign = np.where(cells.decision == 1, -1, 1)
    probe = _PROBE_SECONDS if pb.time_limit is None else min(_PROBE_SECONDS, pb.time_limit)
    st, k, note = choose_counts(cells.group, sign, cells.size, base, sizes, pb.c, pb.strict, N, probe,
                                minimise_rows=True)
    if k is not None and st == "optimal" and not note:   # a lower bound only when proven fewest
        out.needed = float(k.sum()) / N
    out.best_ratio = _best_ratio_within(cells, sign, base, sizes, budget, pb, probe)
    op = ">" if pb.strict else ">="
    # a lower bound printed rounded down, an upper bound up and on its side of c (literals.shown)
    need = "" if out.needed is None else (f", and reaching {op} {_spec_number(pb.c)} needs at least "
                                          f"{_shown(out.needed, end='low', style='f')} of the rows changed")
    out.reason = (f"no repair changing at most alpha x minimal = {_spec_number(pb.alpha)} x {out.minimal:.4f} of the rows "
                  f"({budget} rows) reaches passing-rate ratio {op} {_spec_number(pb.c)}, even with every "
                  f"path hypercube refined to single points; the best ratio within the bound is at most "
                  f"{_shown(float(out.best_ratio), (pb.c,), end='high', style='f')}{need}")


_PROBE_SECONDS = 10.0   # each explanation probe of an unreachable goal


def _best_ratio_within(cells, sign, base, sizes, budget, pb: Problem, probe: float) -> float:
    """The largest ratio (to 1e-3) that the counts relaxation reaches within the budget: an upper
    bound on the ratio any repair within the bound reaches (a probe that times out or is unknown
    counts as reached, so the bound stays an upper bound)."""
    from fractions import Fraction

    now = exact_ratio(base, sizes)
    lo, hi = (Fraction(0) if now is None else now), threshold_of(pb.c)
    grid = 1 << 16      # probe thresholds on a grid of 2^-16: small exact denominators for the solver's rows
    while hi - lo > Fraction(1, 1000):
        mid = Fraction(round((lo + hi) / 2 * grid), grid)
        if not lo < mid < hi:   # pragma: no cover - the gap is far wider than the grid
            break
        st, _, _ = choose_counts(cells.group, sign, cells.size, base, sizes, mid, False, budget, probe,
                              minimise_rows=True)
        if st != "infeasible":
            lo = mid
        else:
            hi = mid
    return float(lo)


def passing_rates(decisions: np.ndarray, group: np.ndarray, G: int) -> np.ndarray:
    sizes = np.bincount(group, minlength=G)
    return np.bincount(group, weights=decisions, minlength=G) / sizes


def passing_counts(decisions: np.ndarray, group: np.ndarray, G: int) -> tuple[np.ndarray, np.ndarray]:
    """(passing, sizes): per group, the rows decided 1 and the rows, as integer counts."""
    sizes = np.bincount(group, minlength=G)
    passing = np.bincount(group, weights=(np.asarray(decisions) == 1).astype(np.int64), minlength=G)
    return passing.astype(np.int64), sizes


def pair_ratios(decisions: np.ndarray, group: np.ndarray, names: list[str]) -> list[dict]:
    """Every pair of groups: :func:`exact_ratio` of the two, rounded once to a float (None when both
    rates are 0, or a group has no rows)."""
    G = len(names)
    passing, sizes = passing_counts(decisions, group, G)
    out = []
    for i in range(G):
        for j in range(i + 1, G):
            r = exact_ratio(passing[[i, j]], sizes[[i, j]]) if sizes[i] and sizes[j] else None
            out.append({"groups": [names[i], names[j]], "ratio": None if r is None else float(r)})
    return out
