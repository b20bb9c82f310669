"""PBA verdicts that rest on certify: every case's integral neighbourhood evaluated on the model's
own runtime, every comparison made by :mod:`fairspec.certify.enumerate`, exactly.

A case (a point ``x``, its counterfactual ``x'``, true class ``c``, ``sigma = +1`` for class 1,
``-1`` for class 0) is *verified* when every offset ``d`` of its neighbourhood that keeps both
decisions at ``c`` has ``sigma * (s(x + d) - s(x' + d)) > 0`` (paper 004, Eq. 1; ``s`` the runtime's
score as it computes it, the decisions its own -- ``LoadedModel.decide``, the library's predict with
its tie rule: XGBoost and a forest call class 0 at a probability of exactly 1/2, which ``score - 1/2
> 0`` got wrong with ``index = 0``; and ``score - 1/2`` in float64 is no comparison of two tiny
probabilities, which it rounds to one number). The centres' decisions are the runtime's too, so
eligibility is re-decided here. :func:`certify_cases` evaluates every
offset of each eligible case -- the feature values moved, then encoded by fairspec's runtime
encoder (``(v - lo) / span``, not the solver's ``u0 + scale * d``) and scored by the loaded model --
so each case is ``proved`` (certify compared every element) or ``refuted`` (the first offset that
breaks it, an exact runtime witness), overriding the solvers' float answers. Cases beyond the
evaluation budget (:data:`MAX_EVALUATIONS`), or whose moving feature is real, keep a refutation only where
feature values next to its witness, encoded by the runtime encoder, refute too (that runtime pair becomes the
witness; the witness ``u0 + scale * d`` may be an input no feature value encodes to); a solver's
``proved`` there is ``unknown`` ("not certified"). :func:`verdict_proof` then mints the verdict's
Proof: ``enumeration`` of every proved case's offsets; a share claim is certified by
:func:`fairspec.certify.pba_share.certify_share` on that proof and the refutations' witnesses.
"""

from __future__ import annotations

import itertools

import numpy as np

__all__ = ["certify_cases", "Evidence", "verdict_proof", "MAX_EVALUATIONS"]

MAX_EVALUATIONS = 2_000_000       # model evaluations (two per offset) per property


class Evidence:
    """The runtime outputs of every offset of every proved case (for the verdict's proof): the
    scores ``a`` (x + d), ``b`` (x' + d), the true class ``c`` and the runtime's decisions on both."""

    def __init__(self):
        self.a, self.b, self.c, self.da, self.db = [], [], [], [], []
        self.keys = []          # per proved case: (part, case index), part what the caller names (its flip)
        self.part = None
        self.budget = MAX_EVALUATIONS

    def add(self, a, b, c, da=None, db=None, key=None):
        self.keys.append((self.part, key))
        self.a.append(np.asarray(a, dtype=np.float64))
        self.b.append(np.asarray(b, dtype=np.float64))
        self.c.append(np.asarray(c, dtype=np.int64))
        self.da.append(np.asarray((self.a[-1] > 0) if da is None else da, dtype=np.int64))
        self.db.append(np.asarray((self.b[-1] > 0) if db is None else db, dtype=np.int64))

    def checks(self):
        from fairspec.certify.enumerate import Check

        a = np.concatenate(self.a) if self.a else np.zeros(0)
        b = np.concatenate(self.b) if self.b else np.zeros(0)
        c = np.concatenate(self.c) if self.c else np.zeros(0, dtype=np.int64)
        da = np.concatenate(self.da).astype(np.float64) if self.da else np.zeros(0)
        db = np.concatenate(self.db).astype(np.float64) if self.db else np.zeros(0)
        nan = np.full(a.shape, np.nan)
        one, zero = c == 1, c == 0
        return len(a), [
            Check(np.where(one, da, nan), "<=", 0), Check(np.where(one, db, nan), "<=", 0),   # class 1 lost
            Check(np.where(zero, da, nan), ">", 0), Check(np.where(zero, db, nan), ">", 0),   # class 0 lost
            Check(np.where(one, a, b), ">", 0, minus=np.where(one, b, a)),                      # sigma (a - b) > 0
        ]


def _fine(a, b, c, da, db) -> np.ndarray:
    """Per element: not both decided c (``da``, ``db``: the runtime's decisions), or sigma (a - b) > 0
    -- decided exactly."""
    from fairspec.certify.enumerate import compare_exact

    one = c == 1
    lost = (np.asarray(da) != c) | (np.asarray(db) != c)
    keeps = np.where(one, compare_exact(a, ">", 0, minus=b), compare_exact(b, ">", 0, minus=a))
    return lost | keeps


def certify_cases(res, *, values_x: dict, values_p: dict, moving: list, lo, hi, integer, cls, enc, score,
                  evidence: Evidence, decide=None, rb_rows=None, recheck: bool = False, spread=None,
                  box=None) -> None:
    """Decide the eligible cases of ``res`` (an :class:`~fairspec.backends.pba.core.Analysis`) by
    enumeration on the runtime (module docstring); updates ``res.observed`` / ``stage_obs`` /
    ``witness_obs`` / ``f_obs`` in place and records the proved cases' outputs in ``evidence``. The
    table's other per-point statuses are put on the runtime's decisions too (the solvers read class 1
    as ``g > 0``, which is not the model's rule at a tie: ``>=``, ``index = 0``): the flipped setting
    (``res.flipped``) from the same offsets, and robustness accuracy (``res.rb_x`` for the cases
    ``rb_rows``, ``res.rb_p``) -- every offset of x (of x') decided as the true class -- enumerated
    within the same budget; a solver's status that cannot be checked so is ``unknown``. ``recheck``: the
    statuses came from the network path's solvers (a tree's are its exact cells, on ``decide`` already:
    only the enumerated cases' flipped setting is re-decided, to the same answer).
    ``decide``: X -> the runtime's 0/1 decisions, ``score`` then the runtime's score itself; without
    it ``score`` is ``g`` (class 1 iff ``g > 0``). With it, which cases are eligible (both centres
    decided as the true class) is re-decided on ``decide`` first (``res.eligible`` / ``pred_x`` /
    ``pred_p``; a case that becomes eligible is ``unknown`` until enumerated). ``spread``
    (:func:`batch_spread`, a runtime that rounds by batch): a case decided on an offset whose scores lie
    within the runtime's rounding of each other or of the threshold is ``unknown`` (another batch size or
    order may decide it otherwise), unless an offset clear of it refutes it. ``box``: the neighbourhood's exact
    ends as feature values (two (P, m) arrays, kinds.pba._exact_box); a refutation's witness is taken only inside
    them (v + lo may round past the domain's end or past v +- delta)."""
    from fairspec.runtime.encoding import encode

    P = len(res.observed)
    integer = np.asarray(integer, dtype=bool)
    uncertified = 0
    cls = np.asarray(cls, dtype=np.int64)
    if decide is None:
        decide = lambda X: (np.asarray(score(X), dtype=np.float64).reshape(-1) > 0).astype(np.int64)  # noqa: E731
    elif P:
        dx = np.asarray(decide(encode(enc, values_x, P)), dtype=np.int64).reshape(-1)
        dp = np.asarray(decide(encode(enc, values_p, P)), dtype=np.int64).reshape(-1)
        now = (dx == cls) & (dp == cls)
        for i in np.flatnonzero(now != np.asarray(res.eligible, dtype=bool)):
            for status, stage, wit in ((res.observed, res.stage_obs, res.witness_obs),
                                       (res.flipped, res.stage_flip, res.witness_flip)):
                status[i], stage[i] = ("unknown", "runtime decision") if now[i] else ("excluded", "")
                wit.pop(int(i), None)
            res.f_obs[i] = np.nan
        if (now != np.asarray(res.eligible, dtype=bool)).any():
            res.notes.append(f"{int((now != res.eligible).sum())} points' eligibility re-decided on the model's own "
                             "decisions (its library's predict) at the centre")
        res.eligible, res.pred_x, res.pred_p = now, dx.astype(int), dp.astype(int)
    rb_pos = {} if rb_rows is None else {int(r): k for k, r in enumerate(np.asarray(rb_rows).reshape(-1))}
    done: set = set()
    flip_uncertified = batched = 0
    centre_near = _centres_near(res, values_x, values_p, enc, score, spread)
    for i in np.flatnonzero(centre_near & (res.observed == "excluded")):
        # excluded on one batch's decision at a centre within the runtime's rounding of the threshold: another batch
        # may decide it the true class; counted eligible and unknown (the share's bounds hold either way)
        res.eligible[i] = True
        res.observed[i], res.stage_obs[i] = "unknown", "runtime rounding"
        res.flipped[i], res.stage_flip[i] = "unknown", "runtime rounding"
        res.witness_obs.pop(int(i), None)
        res.witness_flip.pop(int(i), None)
        res.f_obs[i] = np.nan
        batched += 1
    pending = []                  # refutations not enumerated: re-decided below, in one batch
    for i in range(P):
        st = res.observed[i]
        if st == "excluded":
            continue
        D = _offsets(i, moving, integer, lo, hi)
        if D is None or 2 * len(D) > evidence.budget:
            if st == "proved":
                res.observed[i], res.stage_obs[i] = "unknown", "not certified"
                uncertified += 1
            if recheck and res.flipped[i] == "proved":
                res.flipped[i], res.stage_flip[i] = "unknown", "not certified"
                flip_uncertified += 1
            pending.append(i)
            continue
        size = len(D)
        evidence.budget -= 2 * size
        (X, a, da), (Xp, b, db) = _evaluate(i, D, (values_x, values_p), moving, enc, score, decide)
        c = np.full(size, int(cls[i]))
        sigma = 1.0 if cls[i] == 1 else -1.0
        done.add(i)
        near = np.zeros(size, dtype=bool) if spread is None else spread(np.concatenate([X, Xp]), a, b)
        if recheck:
            _robust_status(res, i, rb_pos, da, db, int(cls[i]), *_sides_near(spread, X, Xp, a, b))
            _flipped_status(res, i, X, Xp, a, b, c, da, db, near, bool(centre_near[i]))
        fine = _fine(a, b, c, da, db)
        if centre_near[i]:
            # whether the point counts at all (eligible: both centres decided its true class) rests on one batch's
            # decision at a centre: neither refuted nor proved (a proved point another batch excludes lowers the
            # share's lower end)
            fine[:] = True
            near[:] = True
        if near.any() if fine.all() else not (~fine & ~near).any():     # rests on one batch's rounding
            res.observed[i], res.stage_obs[i] = "unknown", "runtime rounding"
            res.witness_obs.pop(i, None)
            batched += 1
            continue
        if fine.all():
            res.observed[i], res.stage_obs[i] = "proved", "enumeration"
            evidence.add(a, b, c, da, db, key=int(i))
            res.witness_obs.pop(i, None)
            continue
        j = int(np.flatnonzero(~fine & ~near)[0])
        res.observed[i], res.stage_obs[i] = "refuted", "enumeration"
        res.witness_obs[i] = (X[j:j + 1], Xp[j:j + 1])
        res.f_obs[i] = sigma * (a[j] - b[j])
        getattr(res, "witness_values", {})[int(i)] = tuple(float(np.float64(np.asarray(values_x[name])[i]) + D[j, k])
                                           for k, name in enumerate(moving))
    rb_left = _robust_rest(res, done, rb_pos, cls, moving, integer, lo, hi, values_x, values_p, enc, score, decide,
                           evidence, spread, centre_near) if recheck else 0
    if res.rb_batched:
        from fairspec.models.batching import BATCHED

        res.notes.append(f"{res.rb_batched} robustness statuses are unknown: an offset's decision lies within the "
                         f"runtime's rounding of the threshold, and {BATCHED}")
    for i in pending:
        if centre_near[i]:
            # a refutation not enumerated, at a centre whose decision (eligibility) rests on one batch: unknown
            hit = False
            for status, stage, wit in ((res.observed, res.stage_obs, res.witness_obs),
                                       (res.flipped, res.stage_flip, res.witness_flip)):
                if status[i] == "refuted":
                    status[i], stage[i], hit = "unknown", "runtime rounding", True
                    wit.pop(int(i), None)
            batched += hit
    unrealized = _realized_refutations(res, pending, values_x, values_p, moving, lo, hi, integer, cls, enc, score,
                                       decide, spread, box)
    if unrealized:
        res.notes.append(f"{unrealized} refutations rested on a model input no value of the moving features encodes to "
                         "(the solver's or the tree cells' offset put on the encoded input, u0 + scale * d), and no "
                         "feature value next to it refutes on the runtime encoding: they are unknown")
    if batched:
        from fairspec.models.batching import BATCHED

        res.notes.append(f"{batched} points are unknown: an offset's scores lie within the runtime's rounding of each "
                         f"other or of the threshold, and {BATCHED} (another batch size or order may decide them)")
    if uncertified:
        res.notes.append(f"{uncertified} points proved by the solver could not be certified (neighbourhood beyond "
                         f"{MAX_EVALUATIONS:,} runtime evaluations, or a continuous feature moves) and are unknown")
    if flip_uncertified or rb_left:
        res.notes.append(f"{flip_uncertified} flipped-setting and {rb_left} robustness statuses of the solvers (their "
                         "decision g > 0, not the model's own rule) could not be checked on the runtime and are unknown")


#: feature values tried per moving feature around a refutation's model input (its preimage and nearby floats):
#: this many for one moving feature, REALIZE_CANDIDATES_MANY each for several
REALIZE_CANDIDATES = 9
REALIZE_CANDIDATES_MANY = 3


def _preimages(c, x: float, lo: float, hi: float, integer: bool, count: int) -> list:
    """Feature values of the numeric column ``c`` within [lo, hi] whose runtime encoding is at or next to the
    model input ``x``: the formula's inverse and the floats a few ulps either side, clipped into the box
    (whole numbers only for an int feature)."""
    from fairspec.runtime.encoding import raw_of_input

    v = raw_of_input(c, x)
    if integer:
        cands = [float(round(v)), float(np.floor(v)), float(np.ceil(v))]
    else:
        cands = [v]
        up = down = v
        for _ in range(count // 2):
            up, down = float(np.nextafter(up, np.inf)), float(np.nextafter(down, -np.inf))
            cands += [up, down]
    cands = [min(max(w, lo), hi) for w in cands]
    return list(dict.fromkeys(w for w in cands if lo <= w <= hi and (not integer or float(w).is_integer())))


def _realized_refutations(res, cases, values_x, values_p, moving, lo, hi, integer, cls, enc, score, decide,
                          spread, box=None) -> int:
    """The refutations (observed, flipped) of ``cases`` that were not enumerated: their witnesses are model
    inputs ``u0 + scale * d`` (a solver's offset, a tree cell's representative), which no value of the moving
    features may encode to (``standard(mean = 1000000.5, std = 1)``: the inputs near 0 are multiples of
    2^-33, and a cell (2e-11, 4e-11] of a tree reached only by such an input refuted a verified point).
    Each is re-decided at feature values next to the witness's (within the neighbourhood), encoded by the
    runtime encoder, all in one batch: kept with the first such runtime pair that refutes as its witness,
    else ``unknown``. Returns how many became unknown."""
    from fairspec.runtime.encoding import encode

    jobs = []                      # (case, setting, first row, rows)
    rows_x: dict = {f: [] for f in values_x}
    rows_p: dict = {f: [] for f in values_p}
    settings = ((res.observed, res.stage_obs, res.witness_obs, True),
                (res.flipped, res.stage_flip, res.witness_flip, False))
    count = REALIZE_CANDIDATES if len(moving) == 1 else REALIZE_CANDIDATES_MANY
    n = 0
    for i in cases:
        for si, (status, _stage, wit, _obs) in enumerate(settings):
            if status[i] != "refuted":
                continue
            w = wit.get(int(i))
            combos = []
            if w is not None and moving:
                X = np.asarray(w[0], dtype=np.float64).reshape(-1)
                lists = []
                for k, name in enumerate(moving):
                    col = enc.column(name)
                    r = float(np.asarray(values_x[name])[i])
                    if box is not None:     # the exact ends: r + lo may round past the domain or past r +- delta
                        a_k, b_k = float(box[0][i, k]), float(box[1][i, k])
                    else:
                        a_k, b_k = float(r + lo[i, k]), float(r + hi[i, k])
                    lists.append(_preimages(col, float(X[col.offset]), a_k, b_k, bool(integer[k]), count))
                combos = list(itertools.islice(itertools.product(*lists), 4096))
            jobs.append((i, si, n, len(combos)))
            for values, rows in ((values_x, rows_x), (values_p, rows_p)):
                for f, col in values.items():
                    rows[f].append(np.repeat(np.asarray(col[i:i + 1]), len(combos)))
                for k, name in enumerate(moving):
                    rows[name][-1] = np.array([cmb[k] for cmb in combos], dtype=np.float64)
            n += len(combos)
    if not jobs:
        return 0
    if n:
        Xs = [encode(enc, {f: np.concatenate(v) for f, v in rows.items()}, n) for rows in (rows_x, rows_p)]
        both = np.concatenate(Xs)
        g = np.asarray(score(both), dtype=np.float64).reshape(-1)
        d = np.asarray(decide(both), dtype=np.int64).reshape(-1)
        a, b, da, db = g[:n], g[n:], d[:n], d[n:]
        near = np.zeros(n, dtype=bool) if spread is None else np.asarray(spread(both, a, b), dtype=bool)
    lost = 0
    for job, (i, si, first, m) in enumerate(jobs):
        status, stage, wit, observed = settings[si]
        c = int(cls[i])
        found = None
        if m:
            sl = slice(first, first + m)
            cc = np.full(m, c)
            fine = _fine(a[sl], b[sl], cc, da[sl], db[sl]) if observed else _fine(b[sl], a[sl], cc, db[sl], da[sl])
            bad = np.flatnonzero(~fine & ~near[sl])
            if len(bad):
                j = first + int(bad[0])
                found = (Xs[0][j:j + 1], Xs[1][j:j + 1], (1.0 if c == 1 else -1.0) * (a[j] - b[j]))
                if observed and hasattr(res, "witness_values"):
                    res.witness_values[int(i)] = tuple(float(rows_x[name][job][int(bad[0])])
                                                       for name in moving)
        if found is None:
            status[i], stage[i] = "unknown", "runtime encoding"
            wit.pop(int(i), None)
            if observed:
                res.f_obs[i] = np.nan
            lost += 1
        else:
            wit[int(i)] = found[:2]
            if observed:
                res.f_obs[i] = found[2]
    return lost


def _flipped_status(res, i, X, Xp, a, b, c, da, db, near, centre_near: bool = False) -> None:
    """The flipped setting (x' more confident than x) of case i on its enumerated offsets, on the runtime's
    scores and decisions: proved, or refuted at the first offset that breaks it (an exact runtime witness);
    unknown where that rests on an offset ``near`` the runtime's rounding (:func:`certify_cases`), or where
    ``centre_near`` (the case's eligibility rests on one batch)."""
    back = _fine(b, a, c, db, da)
    if centre_near:
        back, near = np.ones_like(back), np.ones_like(near)
    if near.any() if back.all() else not (~back & ~near).any():
        res.flipped[i], res.stage_flip[i] = "unknown", "runtime rounding"
        res.witness_flip.pop(i, None)
        return
    if back.all():
        res.flipped[i], res.stage_flip[i] = "proved", "enumeration"
        res.witness_flip.pop(i, None)
        return
    j = int(np.flatnonzero(~back & ~near)[0])
    res.flipped[i], res.stage_flip[i] = "refuted", "enumeration"
    res.witness_flip[i] = (X[j:j + 1], Xp[j:j + 1])


def batch_spread(model, exact=None):
    """``near(X, a, b)`` for a runtime that rounds one point's score differently in other batches
    (:func:`fairspec.models.batching.rounds_by_batch`), else None: per offset, whether its scores ``a``
    (of x + d) and ``b`` (of x' + d), rows X, lie within the runtime's spread (twice its error bound where
    that covers the model, else the assumed one) of each other or of the decision threshold, and one of its
    two points is not shown computed exactly in every order (``exact(X, scores)``: per row, given by the
    caller, kinds/pba.py; dyadic weights at an exact tie stay decided)."""
    from fairspec.models.batching import ASSUMED_SPREAD, ASSUMED_SPREAD_OTHER, certified_spread, rounds_by_batch

    if not rounds_by_batch(model):
        return None
    thr = float(getattr(model, "threshold", 0.0) or 0.0)

    def near(X, a, b):
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        sp = certified_spread(model, X)
        if sp is None:
            top = float(np.nanmax(np.abs(np.concatenate([a, b])))) if a.size else 0.0
            rel = ASSUMED_SPREAD.get(str(getattr(model, "precision", "float32")), ASSUMED_SPREAD_OTHER)
            sp = 2.0 * rel * (1.0 + (top if np.isfinite(top) else 0.0))
        out = (np.abs(a - b) <= 2 * sp) | (np.abs(a - thr) <= sp) | (np.abs(b - thr) <= sp)
        if exact is not None and out.any():
            e = np.asarray(exact(X, np.concatenate([a, b])), dtype=bool)
            out &= ~(e[:a.size] & e[a.size:])
        return out

    def threshold(X, s):
        """Per row of X (scores ``s``): is its decision within the runtime's spread of the threshold, and the
        row not shown computed exactly in every order (another batch may decide it otherwise)?"""
        s = np.asarray(s, dtype=np.float64).reshape(-1)
        if not s.size:
            return np.zeros(0, dtype=bool)
        sp = _spread(X, s)
        out = np.abs(s - thr) <= sp
        if exact is not None and out.any():
            out &= ~np.asarray(exact(X, s), dtype=bool)
        return out

    def _spread(X, s):
        sp = certified_spread(model, X)
        if sp is None:
            top = float(np.nanmax(np.abs(s))) if s.size else 0.0
            rel = ASSUMED_SPREAD.get(str(getattr(model, "precision", "float32")), ASSUMED_SPREAD_OTHER)
            sp = 2.0 * rel * (1.0 + (top if np.isfinite(top) else 0.0))
        return sp

    near.threshold = threshold
    return near


def _centres_near(res, values_x, values_p, enc, score, spread) -> np.ndarray:
    """Per case: is a centre's decision (x or x', scored in one batch of every case) within the runtime's
    rounding of the threshold (``spread.threshold``), so that whether the case is eligible rests on that batch?"""
    from fairspec.runtime.encoding import encode

    P = len(res.observed)
    if spread is None or not P:
        return np.zeros(P, dtype=bool)
    both = np.concatenate([encode(enc, values_x, P), encode(enc, values_p, P)])
    t = spread.threshold(both, np.asarray(score(both), dtype=np.float64).reshape(-1))
    return t[:P] | t[P:]


def _sides_near(spread, X, Xp, a, b):
    """Per offset, x + d's and x' + d's decisions within the runtime's rounding of the threshold (None, None
    without a batch-rounding runtime)."""
    if spread is None:
        return None, None
    return spread.threshold(X, a), spread.threshold(Xp, b)


def _offsets(i, moving, integer, lo, hi):
    """Every integral offset of case i's neighbourhood (rows), or None when a continuous feature moves."""
    axes = []
    for k in range(len(moving)):
        if not integer[k]:
            return None
        axes.append(np.arange(int(round(lo[i, k])), int(round(hi[i, k])) + 1))
    size = int(np.prod([len(a) for a in axes])) if axes else 1
    return np.array(list(itertools.product(*axes)), dtype=np.float64).reshape(size, len(moving))


def _evaluate(i, D, sides, moving, enc, score, decide) -> list:
    """``(model inputs, runtime scores, runtime decisions)`` of case i's points (``sides``: the feature
    values of x, of x', or both) moved by each offset, all in one batch of the runtime (as its replay);
    no scores when ``score`` is None."""
    from fairspec.runtime.encoding import encode

    size = len(D)
    Xs = []
    for values in sides:
        v = {f: np.repeat(np.asarray(col[i:i + 1]), size) for f, col in values.items()}
        for k, name in enumerate(moving):
            v[name] = v[name].astype(np.float64) + D[:, k]
        Xs.append(encode(enc, v, size))
    both = np.concatenate(Xs)
    g = np.asarray(score(both), dtype=np.float64).reshape(-1) if score is not None else None
    d = np.asarray(decide(both), dtype=np.int64).reshape(-1)
    return [(X, None if g is None else g[k * size:(k + 1) * size], d[k * size:(k + 1) * size])
            for k, X in enumerate(Xs)]


def _robust_status(res, i, rb_pos, dx, dp, c, near_x=None, near_p=None) -> None:
    """Robustness accuracy of case i's x (where it has an RB entry) and x': every offset decided c by the
    runtime (``dx`` / ``dp``: its decisions; None: not evaluated). ``near_x`` / ``near_p`` (a runtime that
    rounds by batch): per offset, its decision rests on one batch (:func:`batch_spread`'s ``threshold``):
    refuted only by an offset clear of the threshold, proved only with none near it, else unknown."""
    batched = 0
    if dx is not None and res.rb_x is not None and i in rb_pos:
        res.rb_x[rb_pos[i]] = _robust(dx, c, near_x)
        batched += res.rb_x[rb_pos[i]] == "unknown"
    if dp is not None and res.rb_p is not None:
        res.rb_p[i] = _robust(dp, c, near_p)
        batched += res.rb_p[i] == "unknown"
    res.rb_batched += batched


def _robust(d, c, near) -> str:
    d = np.asarray(d)
    near = np.zeros(d.shape, dtype=bool) if near is None else np.asarray(near, dtype=bool)
    if ((d != c) & ~near).any():
        return "refuted"
    return "unknown" if near.any() else "proved"


def _robust_rest(res, done, rb_pos, cls, moving, integer, lo, hi, values_x, values_p, enc, score, decide,
                 evidence, spread=None, centre_near=None) -> int:
    """The robustness statuses of the cases not enumerated above, on the runtime's decisions: a centre the
    runtime misclassifies is refuted (not where its decision rests on one batch: ``centre_near``); otherwise
    the neighbourhood enumerated (budget allowing; with ``spread``, scored too, an offset's decision near the
    threshold deciding nothing), else the solver's status (its decision g > 0, not the model's rule) is
    unknown. Returns how many were left."""
    left = 0
    for i in range(len(cls)):
        if i in done:
            continue
        c = int(cls[i])
        sure = centre_near is None or not centre_near[i]
        need = []
        if res.rb_x is not None and i in rb_pos:
            if int(res.pred_x[i]) != c and sure:
                res.rb_x[rb_pos[i]] = "refuted"
            else:
                need.append("x")
        if res.rb_p is not None:
            if int(res.pred_p[i]) != c and sure:
                res.rb_p[i] = "refuted"
            else:
                need.append("p")
        if not need:
            continue
        D = _offsets(i, moving, integer, lo, hi)
        if D is None or len(need) * len(D) > evidence.budget:
            for side in need:
                if side == "x" and res.rb_x[rb_pos[i]] != "unknown":
                    res.rb_x[rb_pos[i]] = "unknown"
                    left += 1
                elif side == "p" and res.rb_p[i] != "unknown":
                    res.rb_p[i] = "unknown"
                    left += 1
            continue
        evidence.budget -= len(need) * len(D)
        got = dict(zip(need, _evaluate(i, D, [values_x if side == "x" else values_p for side in need], moving, enc,
                                       None if spread is None else score, decide)))
        dx = got["x"][2] if "x" in got else None
        dp = got["p"][2] if "p" in got else None
        nx, np_ = ((None if side not in got else spread.threshold(got[side][0], got[side][1])) if spread is not None
                   else None for side in ("x", "p"))
        _robust_status(res, i, rb_pos, dx, dp, c, nx, np_)
    return left


def verdict_proof(evidence: Evidence):
    """The enumeration Proof of the proved cases: every proved case's offsets compared by certify
    (``detail["_cases"]``: the keys of the cases it covers, (part, case index)); None when certify does
    not confirm it or no case is proved. A share claim is then decided by
    :func:`fairspec.certify.pba_share.certify_share` on it and the refutations."""
    from fairspec.certify.enumerate import by_enumeration

    count, checks = evidence.checks()
    if not count:
        return None
    return by_enumeration(checks, count=count, claim=f"{len(evidence.a)} PBA points verified on every offset "
                                                     "of their neighbourhood on the model's runtime",
                          unit="offset pairs", cases=len(evidence.keys), _cases=tuple(evidence.keys)).proof
