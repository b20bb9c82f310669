"""FairRepair (session 30): ``repair NAME for MODEL { goal passing_rate_ratio(groups ...) op c ... }`` on
small scikit-learn decision trees and random forests fit on few, repeated data rows (three forests in five
with leaf probabilities from :data:`TIE_VOTES`, whose averages sit at 1/2 where ``predict`` and
``predict_proba > 1/2`` part), judged on the model the user ends up with.

Each instance is a data file (8-40 rows drawn from a small grid, many repeated), a tree or forest fit on
it (skops), and 3-5 repair blocks: goals `>=` / `>` with c the exact current ratio (a tie), a short
decimal near it, 1 (`>=` only) or a round value; alpha from 1 to 50 or the default 1.2; most with a
`write` file, some without; from seed 85,000,000 on, each block's ``engine`` is one of highs / scip / z3 / rc2 or
none (session 32).

The truth never comes from fairspec:

* the goal is decided on integer passing counts as exact rationals (c as its decimal; `> c` strict);
* ``minimal`` is the LP of the README (section IV-D): the least share of rows whose decision changes
  over group passing rates x_g in [0, 1] meeting every pairwise ratio (strict: one count unit, 1 / (n_i
  n_j b) for c = a / b) with some row passing -- solved here with scipy's HiGHS, written from the
  definition, not fairspec's code;
* whether a repair within the bound exists: any change of the decisions of the distinct model inputs
  (a repaired tree may refine a cell down to single points; rows with the same input change together)
  changing at most floor(alpha x minimal x N) rows. Per group the passing count can move up by any
  subset sum of the failing points' row counts and down by any subset sum of the passing ones', both at
  once (a net +2 from points of 3 and 1 rows costs 4; session 37, seed 125000000): every combination is
  tried. A bound within 1e-6 of a whole number of rows whose two roundings disagree is a tie the float LP
  leaves open: ``ambiguous``.

Judged (``RepairJudge``): ``holds (proved)`` needs a certify proof; then, if repaired, the written file
is loaded again through skops and its own ``predict`` run on every data row: the goal must hold exactly
and at most the bound's rows may differ from the original model's ``predict``; if not repaired, the
original model must meet the goal and nothing be written. ``violated`` when a repair exists within the
bound (or the model already meets the goal) is a false violation; nothing may be written then. The
model file must never change; ``details.minimal`` must be the LP's optimum (to 1e-6).
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import time
import traceback
from fractions import Fraction
from pathlib import Path

import numpy as np

from .core import Enc, Feature, Instance, Prop, Truth, decimal_text, encode_points, write_csv
from .judge import Outcome

FAMILY = "repair"
ALPHAS = (None, None, "1", "1.5", "2", "3", "10", "50")
#: session 32: from this instance seed on, each block's engine is drawn from ENGINES
ENGINES_FROM = 85_000_000
ENGINES = ("default", "highs", "scip", "z3", "rc2")
ROUND_C = ("0.5", "0.75", "0.8", "0.9", "0.6", "0.25")


# ------------------------------------------------------------------ the truth


def ratio_meets(passing, sizes, c: str, strict: bool) -> bool:
    """Every ordered pair of groups: p_i / n_i op c x p_j / n_j, in integers (c = a / b as its
    decimal); no group passing (0/0) meets nothing."""
    cf = Fraction(c)
    a, b = cf.numerator, cf.denominator
    if not any(passing):
        return False
    for i, j in itertools.permutations(range(len(sizes)), 2):
        lhs, rhs = b * passing[i] * sizes[j], a * passing[j] * sizes[i]
        if not (lhs > rhs if strict else lhs >= rhs):
            return False
    return True


def exact_ratio(passing, sizes) -> Fraction | None:
    rates = [Fraction(int(p), int(n)) for p, n in zip(passing, sizes)]
    return None if max(rates) == 0 else min(rates) / max(rates)


def lp_minimal(passing, sizes, c: str, strict: bool) -> float:
    """The README's `minimal`: min sum_g (n_g / N) |x_g - r_g| over x in [0, 1]^G with x_i >= c x_j
    (+ 1 / (n_i n_j b) when strict) for every ordered pair and sum_g n_g x_g >= 1."""
    from scipy.optimize import linprog

    G = len(sizes)
    n = np.asarray(sizes, dtype=float)
    r = np.asarray(passing, dtype=float) / n
    cf = Fraction(c)
    A, ub = [], []
    for g in range(G):              # t_g >= |x_g - r_g|
        row = np.zeros(2 * G); row[g], row[G + g] = 1, -1; A.append(row); ub.append(r[g])
        row = np.zeros(2 * G); row[g], row[G + g] = -1, -1; A.append(row); ub.append(-r[g])
    for i, j in itertools.permutations(range(G), 2):
        row = np.zeros(2 * G); row[i], row[j] = -1, float(cf); A.append(row)
        ub.append(-float(Fraction(1, int(sizes[i]) * int(sizes[j]) * cf.denominator)) if strict else 0.0)
    row = np.zeros(2 * G); row[:G] = -n; A.append(row); ub.append(-1.0)
    res = linprog(np.concatenate([np.zeros(G), n / n.sum()]), A_ub=np.array(A), b_ub=np.array(ub),
                  bounds=[(0, 1)] * G + [(0, None)] * G, method="highs")
    assert res.status == 0, res.message
    return max(0.0, float(res.fun))


def _subset_sums(weights) -> set:
    s = {0}
    for w in weights:
        s |= {x + w for x in s}
    return s


def repair_exists(points, base, sizes, c: str, strict: bool, budget: int) -> bool:
    """Is there a change of the distinct points' decisions, at most ``budget`` rows, meeting the goal?
    ``points``: per group, (row counts of failing points, row counts of passing points)."""
    moves = []                      # per group: net change of its passing count -> least rows changed
    for g, (fail, pas) in enumerate(points):
        up = [d for d in _subset_sums(fail) if d <= budget]
        down = [d for d in _subset_sums(pas) if d <= budget]
        best: dict[int, int] = {}
        for u, d in itertools.product(up, down):    # both ways at once: +3 -1 reaches a net +2
            if u + d <= budget and u + d < best.get(u - d, budget + 1):
                best[u - d] = u + d
        moves.append(sorted(best.items(), key=lambda kv: kv[1]))
    for combo in itertools.product(*moves):
        if sum(cost for _, cost in combo) > budget:
            continue
        if ratio_meets([b + d for b, (d, _) in zip(base, combo)], sizes, c, strict):
            return True
    return False


# ------------------------------------------------------------------ generation


def _features(rng) -> list[Feature]:
    fs = [Feature("a", "int", lo=0, hi=int(rng.integers(2, 8)))]
    if rng.random() < 0.5:
        fs.append(Feature("b", "cat", cats=("u", "v", "w")[:int(rng.integers(2, 4))]))
    fs.append(Feature("s", "cat", cats=("F", "M", "X")[:2 if rng.random() < 0.7 else 3], protected=True))
    if rng.random() < 0.2:
        fs.append(Feature("t", "bool", protected=True))
    return fs


def _rows(rng, fs: list[Feature]) -> np.ndarray:
    """8-40 rows over few distinct points (repeats on purpose), every group of the protected features
    present."""
    n = int(rng.integers(8, 41))
    k = int(rng.integers(3, 12))
    distinct = np.stack([rng.integers(0, f.size, size=k) + (f.lo if f.kind == "int" else 0) for f in fs], axis=1)
    rows = distinct[rng.integers(0, k, size=n)]
    prot = [i for i, f in enumerate(fs) if f.protected]
    combos = list(itertools.product(*[range(fs[i].size) for i in prot]))
    if rng.random() < 0.6:      # group sizes 2, 4, 5, 8, 10: passing rates short decimals, ratios often too
        parts = []
        for combo in combos:
            m = int(rng.choice([2, 4, 5, 8, 10]))
            r = distinct[rng.integers(0, k, size=m)].copy()
            r[:, prot] = combo
            parts.append(r)
        rows = np.concatenate(parts, axis=0)
        rows = rows[rng.permutation(rows.shape[0])]
        n = rows.shape[0]
    extra = []
    for combo in combos:        # every group has a row
        have = np.all(rows[:, prot] == np.array(combo), axis=1).any()
        if not have:
            r = rows[int(rng.integers(0, n))].copy()
            r[prot] = combo
            extra.append(r)
    if extra:
        rows = np.concatenate([rows, np.array(extra)], axis=0)
    return rows


def _encs(rng, fs):
    out = []
    for f in fs:
        if f.kind == "int":
            out.append(Enc(f, "raw"))
        elif f.kind == "bool":
            out.append(Enc(f, "raw" if rng.random() < 0.5 else "code"))
        else:
            out.append(Enc(f, "onehot" if rng.random() < 0.4 else "code"))
    return out


def _model(rng, X, y, tie_rng):
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.tree import DecisionTreeClassifier

    if rng.random() < 0.6:
        est = DecisionTreeClassifier(max_depth=int(rng.integers(1, 5)), random_state=int(rng.integers(0, 1000)))
        kind = "tree"
    else:
        est = RandomForestClassifier(n_estimators=int(rng.integers(2, 6)), max_depth=int(rng.integers(1, 4)),
                                     random_state=int(rng.integers(0, 1000)))
        kind = "forest"
    est.fit(X, y)
    if kind == "forest" and tie_rng.random() < 0.6:     # a stream of its own: the other draws stay as they were
        _tie_votes(tie_rng, est)
    return est, kind


#: leaf probabilities of the positive class whose forest average is 1/2 in one column and not the other:
#: (0.3, 0.4, 0.8) averages to 0.5 and 0.49999999999999994 (predict positive, predict_proba > 1/2 not);
#: (0.2, 7/12, 0.4, 5/12, 0.9) to 0.5000000000000001 in both (predict negative, > 1/2 positive)
TIE_VOTES = (0.3, 0.4, 0.8, 0.2, 0.5833333333333334, 0.4166666666666667, 0.9, 0.5, 0.25, 0.75, 0.1, 0.7)


TIE_TUPLES = ((0.3, 0.4, 0.8), (0.2, 0.5833333333333334, 0.4, 0.4166666666666667, 0.9))


def _tie_votes(rng, est):
    """A forest of 3 or 5 trees whose leaves mostly carry tree t's share of a tie tuple
    (:data:`TIE_TUPLES`), the others a probability from :data:`TIE_VOTES`: rows reaching the tuple's
    leaves in every tree are where ``predict`` and ``predict_proba > 1/2`` part (the repair core counted
    the latter until session 30)."""
    tup = TIE_TUPLES[int(rng.integers(0, 2))]
    trees = list(est.estimators_)
    while len(trees) < len(tup):
        trees.append(copy.deepcopy(trees[int(rng.integers(0, len(trees)))]))
    est.estimators_ = trees[:len(tup)]
    est.n_estimators = len(tup)
    for t, p_t in zip(est.estimators_, tup):
        tr = t.tree_
        for leaf in range(tr.node_count):
            if tr.children_left[leaf] == -1:
                p = p_t if rng.random() < 0.7 else float(rng.choice(TIE_VOTES))
                tr.value[leaf, 0] = [1 - p, p]


def _predict(est, X) -> np.ndarray:
    return (est.predict(X) == 1).astype(np.int64)


def generate(seed: int) -> Instance:
    import skops.io as sio

    rng = np.random.default_rng([31, seed])
    fs = _features(rng)
    names = [f.name for f in fs]
    rows = _rows(rng, fs)
    encs = _encs(rng, fs)
    X = encode_points(encs, rows, names)
    y = rng.integers(0, 2, size=rows.shape[0])
    y[0], y[1] = 0, 1                               # both classes
    est, kind = _model(rng, X, y, np.random.default_rng([31, seed, 7]))
    files = {"d.csv": write_csv(fs, rows, {"y": y}), "m.skops": sio.dumps(est)}
    back = sio.loads(files["m.skops"], trusted=sio.get_untrusted_types(data=files["m.skops"]))
    d0 = _predict(back, X)

    prot = [f for f in fs if f.protected]
    spec = ('data d = csv("d.csv", label = y == 1)\n'
            "features P from d {\n" + "\n".join(f.decl() for f in fs) + "\n}\n"
            'model m = sklearn("m.skops")\n'
            "encode P for m {\n" + "\n".join(f"  {e.feature.name} : {e.text()}" for e in encs) + "\n}\n")
    info = {"model": kind, "rows": int(rows.shape[0]), "encodings": {e.feature.name: e.text() for e in encs},
            "depth": int(getattr(est, "max_depth", 0) or 0)}
    props = []
    for k in range(int(rng.integers(3, 6))):
        groups = [prot[0]] if len(prot) == 1 or rng.random() < 0.5 else prot
        props.append(_property(rng, k, fs, groups, rows, X, d0, kind))
    if seed >= ENGINES_FROM:
        # session 32: every engine repair takes (README: highs | scip | z3 | rc2), from a stream of its own (the
        # blocks and their truths are the same: the engine must not change what is true)
        er = np.random.default_rng([31, seed, 11])
        for p in props:
            engine = str(er.choice(ENGINES))
            p.text = p.text.replace("  engine = scip\n", "")
            if engine != "default":
                p.text = p.text.replace("  timeout = 20s", f"  engine = {engine}\n  timeout = 20s")
            p.meta["engine"] = engine
    inst = Instance(FAMILY, seed, spec, files, props, info)
    inst.judge = RepairJudge(X, d0)
    return inst


def _near_ties(base, sizes) -> list[str]:
    """The short decimals (at most 6 digits) strictly between 0 and 1 that the ratio is exactly after
    moving each group's passing count by at most 2 rows: goals a repair can meet exactly at the tie."""
    out = set()
    for d in itertools.product(range(-2, 3), repeat=len(sizes)):
        p = [b + x for b, x in zip(base, d)]
        if any(q < 0 or q > n for q, n in zip(p, sizes)):
            continue
        r = exact_ratio(p, sizes)
        t = decimal_text(r, 6) if r is not None and 0 < r < 1 else None
        if t is not None:
            out.add(t)
    return sorted(out)


def _group_index(fs, groups, rows) -> tuple[np.ndarray, int]:
    cols = [fs.index(f) for f in groups]
    sizes = [f.size for f in groups]
    g = np.zeros(rows.shape[0], dtype=np.int64)
    for c, s in zip(cols, sizes):
        g = g * s + rows[:, c]
    return g, int(np.prod(sizes))


def _property(rng, k, fs, groups, rows, X, d0, kind) -> Prop:
    gidx, G = _group_index(fs, groups, rows)
    sizes = np.bincount(gidx, minlength=G)
    base = np.bincount(gidx, weights=d0, minlength=G).astype(np.int64)
    strict = rng.random() < 0.4
    r = exact_ratio(base, sizes)
    pick = rng.random()
    c = None
    if pick < 0.3 and r is not None and 0 < r < 1:
        c = decimal_text(r, 12)                     # the exact ratio: a tie
    if c is None and pick < 0.65:                   # a tie a repair of a few rows reaches
        near = _near_ties(base, sizes)
        c = near[int(rng.integers(0, len(near)))] if near else None
    if c is None and pick < 0.75 and not strict:
        c = "1"
    if c is None and pick < 0.85 and r is not None and 0 < r < 1:
        c = f"{float(r) + float(rng.choice([-0.05, -0.01, 0.01, 0.05])):.2f}"
        c = c if 0 < float(c) < 1 else None
    if c is None:
        c = str(rng.choice(ROUND_C))
    c = decimal_text(Fraction(c))
    alpha = ALPHAS[int(rng.integers(0, len(ALPHAS)))]
    write = rng.random() < 0.8
    op = ">" if strict else ">="
    label = " x ".join(f.name for f in groups)
    lines = [f"goal passing_rate_ratio(groups {label}) {op} {c}"]
    if alpha is not None:
        lines.append(f"bound semantic_difference <= {alpha} * minimal")
    if write:
        lines.append(f'write "r{k}.skops"')
    if rng.random() < 0.15:
        lines.append("engine = scip")
    lines.append("timeout = 20s")
    name = f"r{k}"
    text = f"repair {name} for m {{\n  " + "\n  ".join(lines) + "\n}"

    # the truth: the LP's minimal, the budget in whole rows, a repair of the distinct inputs within it
    N = int(rows.shape[0])
    minimal = lp_minimal(base, sizes, c, strict)
    af = float(alpha or "1.2")
    x = af * minimal * N
    lo_budget, hi_budget = int(np.floor(x - 1e-6)), int(np.floor(x + 1e-6))
    _, inv = np.unique(X.astype(np.float32), axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    points = []
    for g in range(G):
        fail, pas = [], []
        for p in np.unique(inv[gidx == g]):
            m = (inv == p) & (gidx == g)
            (pas if d0[m][0] else fail).append(int(m.sum()))
        points.append((fail, pas))
    met = ratio_meets(base, sizes, c, strict)
    ex_lo = met or repair_exists(points, base, sizes, c, strict, max(lo_budget, 0))
    ex_hi = met or repair_exists(points, base, sizes, c, strict, max(hi_budget, 0))
    status = "holds" if ex_lo else ("violated" if not ex_hi else "ambiguous")
    truth = Truth(status, domain=N, note=f"ratio before {r}; LP minimal {minimal:.6g}; budget {x:.6g} rows")
    meta = {"model": kind, "op": op, "c": c, "alpha": alpha or "1.2",
            "write": write, "met": met, "groups": label, "minimal": minimal, "budget": [lo_budget, hi_budget],
            "tie": r is not None and Fraction(c) == r, "gidx": gidx.tolist(), "sizes": sizes.tolist(),
            "strict": strict, "backend": "repair"}
    return Prop(name, FAMILY, text, truth, meta, 20.0)


# ------------------------------------------------------------------ the judge


class RepairJudge:
    """(spec path, properties, outcome base) -> outcomes: fairspec.pipeline.check in process, each
    verdict judged on the files it leaves (module docstring)."""

    def __init__(self, X, d0):
        self.X, self.d0 = X, d0

    def __call__(self, spec: Path, props: list[Prop], base: dict) -> list[Outcome]:
        from fairspec.pipeline import check

        folder = spec.parent
        model = folder / "m.skops"
        digest = hashlib.sha256(model.read_bytes()).hexdigest()
        t0 = time.perf_counter()
        try:
            rep = check(spec)
        except Exception as e:  # noqa: BLE001 - a crash is a wrong verdict
            tb = traceback.format_exc(limit=6)
            return [Outcome(**base, name=p.name, klass="wrong", defect="crash", why=f"check raised {e!r}\n{tb}",
                            truth=p.truth.status, domain=p.truth.domain, meta=_meta(p)) for p in props]
        elapsed = time.perf_counter() - t0
        if rep.has_errors:
            msg = rep.error or "; ".join(f"{d.code} {d.message}" for d in rep.diagnostics if d.is_error)
            return [Outcome(**base, name=p.name, klass="rejected", why=msg, truth=p.truth.status,
                            domain=p.truth.domain, meta=_meta(p)) for p in props]
        verdicts = {v.name: v.to_json() for v in rep.verdicts}
        outs = []
        for p in props:
            o = self.judge(p, verdicts.get(p.name), base, folder)
            o.seconds = o.seconds or elapsed / max(1, len(props))
            crash = [e for e in rep.internal_errors if e.startswith(p.name + ":")]
            if crash and o.klass != "wrong":
                o.klass, o.defect, o.why = "wrong", "crash", crash[0]
            outs.append(o)
        if hashlib.sha256(model.read_bytes()).hexdigest() != digest:
            for o in outs:
                o.klass, o.defect, o.why = "wrong", "model-overwritten", "the model file m.skops changed"
        return outs

    def judge(self, p: Prop, v: dict | None, base: dict, folder: Path) -> Outcome:
        m, t = p.meta, p.truth
        o = Outcome(**base, name=p.name, klass="correct", truth=t.status, domain=t.domain, meta=_meta(p))
        if v is None:
            o.klass, o.defect, o.why = "wrong", "missing", "no verdict for this property"
            return o
        o.status, o.how, o.value, o.reason = v["status"], v.get("how"), v.get("value"), v.get("reason")
        proof = v.get("proof")
        o.proof = proof.get("method") if isinstance(proof, dict) else None
        o.seconds = float(v.get("seconds") or 0.0)
        details = v.get("details") or {}
        written = folder / f"{p.name}.skops"

        def wrong(defect, why):
            o.klass, o.defect, o.why = "wrong", defect, why
            return o

        reported = details.get("minimal")
        if isinstance(reported, (int, float)) and abs(reported - m["minimal"]) > 1e-6:
            return wrong("value-wrong", f"details.minimal {reported!r} is not the LP's optimum {m['minimal']!r}")
        if o.status == "unknown":
            if "internal error" in (o.reason or "") or "fairspec bug" in (o.reason or ""):
                return wrong("crash", o.reason)
            if written.exists():
                return wrong("bad-write", f"unknown, but {written.name} was written")
            o.klass = "unknown"
            return o
        gidx, sizes = np.array(m["gidx"]), m["sizes"]
        G = len(sizes)
        if o.status == "violated":
            if written.exists():
                return wrong("bad-write", f"violated, but {written.name} was written")
            if t.status == "holds":
                return wrong("false-violation", f"violated, but {'the model already meets the goal' if m['met'] else 'a repair within the bound exists'} ({t.note})")
            return o
        # holds
        if o.how != "proved" or o.proof is None:
            return wrong("no-proof", f"holds ({o.how}) without a certify proof")
        if t.status == "violated":
            return wrong("false-proof", f"holds, but no repair within the bound exists ({t.note})")
        if not details.get("repaired"):
            if not m["met"]:
                return wrong("false-proof", f"holds with nothing repaired, but the model fails the goal ({t.note})")
            if written.exists():
                return wrong("bad-write", f"nothing repaired, but {written.name} was written")
            return o
        if not m["write"]:
            if written.exists():
                return wrong("bad-write", f"no write line, but {written.name} was written")
            changed = details.get("rows_changed")
            if isinstance(changed, int) and changed > m["budget"][1]:
                return wrong("false-proof", f"{changed} rows changed, beyond the bound's {m['budget'][1]} rows")
            return o
        if not written.exists():
            return wrong("bad-write", f"repaired with a write line, but {written.name} is not there")
        import skops.io as sio

        est = sio.load(written, trusted=sio.get_untrusted_types(file=written))
        d1 = _predict(est, self.X)
        after = np.bincount(gidx, weights=d1, minlength=G).astype(np.int64)
        if not ratio_meets(after.tolist(), sizes, m["c"], m["strict"]):
            return wrong("false-proof", f"the written model's passing counts {after.tolist()} of {sizes} fail "
                                        f"{m['op']} {m['c']} (ratio {exact_ratio(after, sizes)})")
        o.meta["tie_after"] = exact_ratio(after, sizes) == Fraction(m["c"])     # the goal met exactly at c
        changed = int((d1 != self.d0).sum())
        if changed > m["budget"][1]:
            return wrong("false-proof", f"the written model changes {changed} rows, beyond the bound's "
                                        f"{m['budget'][1]} rows (alpha {m['alpha']} x minimal {m['minimal']:.6g})")
        if details.get("rows_changed") not in (None, changed):
            return wrong("value-wrong", f"details.rows_changed {details.get('rows_changed')} but the written model "
                                        f"changes {changed} rows")
        return o


def _meta(p: Prop) -> dict:
    return {k: v for k, v in p.meta.items() if k not in ("gidx", "sizes")}
