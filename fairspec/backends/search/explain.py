"""Explanations of k-discrimination (HyFair, paper 000_*, Algorithm 2).

Given individuals with high k (e.g. ``KDiscResult.top``):

1. localPerturbation: n samples around them (each shared coordinate moved
   with probability ``p_change``: a Gaussian step of ``scale`` times its range,
   or, with probability ``p_uniform``, a fresh uniform value; one-hot groups
   jump to a random category);
2. k of every sample (all K counterfactuals, one batch);
3. getHighLowKLabels: high = k at or above the 95th percentile (the paper:
   "only the top 5% of k values belong to the high-K class"; with ties at the
   percentile, whichever of k >= kappa and k > kappa gives a share nearer 5%,
   never an empty or a full class);
4. a scikit-learn DecisionTreeClassifier on the shared coordinates;
5. for every high leaf, its root-to-leaf path pi; sampleCounterExamples(pi):
   samples satisfying pi with one predicate pushed to its other side;
   meanKDiff = mean k on pi's samples - mean k on the negations; the path is
   kept when meanKDiff >= delta.

Paths are conjunctions of predicates (model-input coordinate, "<=" or ">",
threshold) simplified to one interval per coordinate. ``format_path`` prints
them with feature names and a decoder (category names), ``to_spec`` renders a
guardrail pre-condition ``require not (...)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from fairspec.backends.search.space import Space


@dataclass(frozen=True)
class Predicate:
    feature: int      # model-input coordinate
    op: str           # "<=" | ">"
    threshold: float

    def holds(self, X: np.ndarray) -> np.ndarray:
        col = np.asarray(X, dtype=np.float64)[:, self.feature]
        return col <= self.threshold if self.op == "<=" else col > self.threshold


@dataclass(frozen=True)
class Path:
    predicates: tuple[Predicate, ...]
    mean_k: float            # mean k of the perturbation samples satisfying the path
    mean_k_negated: float    # mean k of samples negating it
    diff: float              # mean_k - mean_k_negated
    support: int             # perturbation samples satisfying the path
    high_share: float        # share of high-k samples among them
    volume: float            # share of the domain box satisfying the path

    def holds(self, X: np.ndarray) -> np.ndarray:
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        ok = np.ones(X.shape[0], dtype=bool)
        for p in self.predicates:
            ok &= p.holds(X)
        return ok

    def to_dict(self) -> dict:
        return {"predicates": [[p.feature, p.op, p.threshold] for p in self.predicates],
                "mean_k": self.mean_k, "mean_k_negated": self.mean_k_negated, "diff": self.diff,
                "support": self.support, "high_share": self.high_share, "volume": self.volume}


@dataclass(frozen=True, eq=False)
class Explanation:
    paths: tuple[Path, ...]          # kept (diff >= delta), best first
    candidates: tuple[Path, ...]     # every high-k leaf's path
    kappa: float                     # the high-k threshold (95th percentile)
    high_rule: str                   # ">=" or ">" against kappa
    n_samples: int
    k_init: int                      # the highest k among the starting individuals
    mean_k: float                    # mean k over all perturbation samples
    tree_accuracy: float
    delta: float
    tree: object = None              # the fitted DecisionTreeClassifier

    def holds(self, X: np.ndarray) -> np.ndarray:
        """True where some kept path holds (the region a guardrail would refuse)."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        ok = np.zeros(X.shape[0], dtype=bool)
        for p in self.paths:
            ok |= p.holds(X)
        return ok


# ---------------------------------------------------------------------------- helpers
def simplify(preds: Sequence[Predicate]) -> tuple[Predicate, ...]:
    """One interval per coordinate: the largest '>' threshold and the smallest '<='."""
    lo: dict[int, float] = {}
    hi: dict[int, float] = {}
    for p in preds:
        if p.op == ">":
            lo[p.feature] = max(lo.get(p.feature, -math.inf), p.threshold)
        else:
            hi[p.feature] = min(hi.get(p.feature, math.inf), p.threshold)
    out = []
    for f in sorted(set(lo) | set(hi)):
        if f in lo:
            out.append(Predicate(f, ">", float(lo[f])))
        if f in hi:
            out.append(Predicate(f, "<=", float(hi[f])))
    return tuple(out)


def intervals(preds: Sequence[Predicate]) -> dict[int, tuple[float | None, float | None]]:
    """coordinate -> (lo, hi) meaning lo < x <= hi (None = unbounded)."""
    out: dict[int, list] = {}
    for p in simplify(preds):
        iv = out.setdefault(p.feature, [None, None])
        if p.op == ">":
            iv[0] = p.threshold
        else:
            iv[1] = p.threshold
    return {f: (a, b) for f, (a, b) in out.items()}


def _group_of(space: Space) -> dict[int, tuple[int, ...]]:
    """coordinate -> its one-hot group (exactly one of the group's coordinates is 1)."""
    return {i: g for g in space.box.onehot_groups for i in g}


def box_volume(preds: Sequence[Predicate], space: Space) -> float:
    """The share of the domain where the conjunction holds (integers counted; a one-hot group counted
    by its categories: ``x.c != c2`` of three categories is 2/3 of the domain, not the 1/2 of its
    coordinate read as an independent 0/1)."""
    box = space.box
    vol = 1.0
    groups = _group_of(space)
    iv = intervals(preds)
    for g in {groups[f] for f in iv if f in groups}:
        # category j holds the conjunction iff every constrained coordinate i of the group meets a < x_i <= b
        # at x_i = (1 if i == j else 0)
        ok = sum(all((a is None or (1.0 if i == j else 0.0) > a) and (b is None or (1.0 if i == j else 0.0) <= b)
                     for i, (a, b) in iv.items() if i in g) for j in g)
        vol *= ok / len(g)
    for f, (a, b) in iv.items():
        if f in groups:
            continue
        lo, hi = float(box.lo[f]), float(box.hi[f])
        a_ = lo if a is None else a
        b_ = hi if b is None else b
        if box.integer[f]:
            first = max(math.floor(a_) + 1 if a is not None else math.ceil(lo), math.ceil(lo))
            last = min(math.floor(b_), math.floor(hi))
            total = math.floor(hi) - math.ceil(lo) + 1
            vol *= max(0, last - first + 1) / total if total > 0 else 0.0
        else:
            span = hi - lo
            vol *= max(0.0, min(b_, hi) - max(a_, lo)) / span if span > 0 else 1.0
    return float(vol)


def _perturb(rng: np.random.Generator, space: Space, S0: np.ndarray, n: int, p_change: float,
             scale: float, p_uniform: float) -> np.ndarray:
    S = S0[rng.integers(0, S0.shape[0], n)].copy()
    for gene in space.genes:
        if gene.kind == "relax":
            continue
        r = np.flatnonzero(rng.random(n) < p_change)
        if r.size == 0:
            continue
        if gene.kind == "group":
            cols = np.asarray(gene.cols)
            S[np.ix_(r, cols)] = 0.0
            S[r, cols[rng.integers(0, len(cols), r.size)]] = 1.0
            continue
        c = gene.cols[0]
        span = gene.hi - gene.lo
        new = S[r, c] + rng.standard_normal(r.size) * scale * span
        uni = rng.random(r.size) < p_uniform
        new = np.where(uni, space._uniform(rng, r.size, gene), new)
        new = np.clip(new, gene.lo, gene.hi)
        if gene.integer:
            new = np.round(new)
        S[r, c] = new
    return S


def _negate(rng: np.random.Generator, space: Space, S: np.ndarray, preds: Sequence[Predicate]) -> np.ndarray:
    """Each row: one predicate (chosen at random among those that can be negated inside
    the domain) pushed to its other side with a uniform value there. A predicate on a one-hot
    coordinate is negated by a category of its group (one coordinate 1, the rest 0): ``x.c != c2``
    by c2, ``x.c == c2`` by another category (setting the coordinate alone made rows with two
    categories, or none, that no individual is, and the model's k on them was averaged in)."""
    S = S.copy()
    box = space.box
    groups = _group_of(space)
    options = []
    for p in preds:
        f = p.feature
        if f in groups:
            g = groups[f]
            # the categories j whose one-hot row puts coordinate f on the other side of the predicate
            cats = [j for j in g if not (((1.0 if j == f else 0.0) <= p.threshold) if p.op == "<="
                                         else ((1.0 if j == f else 0.0) > p.threshold))]
            if cats:
                options.append(("group", g, cats))
            continue
        lo, hi = float(box.lo[f]), float(box.hi[f])
        if p.op == "<=":   # negation: x > t
            a = math.floor(p.threshold) + 1 if box.integer[f] else np.nextafter(p.threshold, np.inf)
            b = hi
        else:              # negation: x <= t
            a = lo
            b = math.floor(p.threshold) if box.integer[f] else p.threshold
        if a <= b:
            options.append((f, a, b, bool(box.integer[f])))
    if not options:
        return S[:0]
    which = rng.integers(0, len(options), S.shape[0])
    for o, opt in enumerate(options):
        r = np.flatnonzero(which == o)
        if r.size == 0:
            continue
        if opt[0] == "group":
            _, g, cats = opt
            S[np.ix_(r, list(g))] = 0.0
            S[r, np.asarray(cats)[rng.integers(0, len(cats), r.size)]] = 1.0
            continue
        f, a, b, integer = opt
        if integer:
            S[r, f] = rng.integers(int(a), int(b) + 1, r.size)
        else:
            S[r, f] = a + rng.random(r.size) * (b - a)
    return S


def _states_of(space: Space, witnesses) -> np.ndarray:
    rows = []
    for w in witnesses:
        if hasattr(w, "inputs") and hasattr(w, "x"):
            rows.append(np.asarray(w.x, dtype=np.float64))
        elif hasattr(w, "x_prime"):
            rows.append(np.asarray(w.x, dtype=np.float64))
        else:
            rows.append(np.asarray(w, dtype=np.float64).reshape(-1))
    if not rows:
        raise ValueError("explain needs at least one individual to start from")
    S = space.from_inputs(np.vstack(rows))
    if space.width > space.d:  # band representatives chosen by the search
        from .kdisc import _band_reps

        for q, w in enumerate(witnesses):
            if hasattr(w, "inputs") and hasattr(w, "x"):
                S[q, space.d:] = _band_reps(space, w)
    return S


# ---------------------------------------------------------------------------- Algorithm 2
def explain(evaluate: Callable[[np.ndarray], np.ndarray], space: Space, witnesses, *,
            eps: float = 0.05,
            scores: str = "logit",
            cluster: str = "buckets",
            n: int = 5000,
            percentile: float = 95.0,
            delta: float = 1.0,
            max_depth: int = 4,
            min_samples_leaf: int = 20,
            class_weight: str | dict | None = "balanced",
            p_change: float = 0.5,
            scale: float = 0.15,
            p_uniform: float = 0.2,
            n_cex: int = 1000,
            seed: int = 0) -> Explanation:
    """HyFair Algorithm 2 around ``witnesses`` (KWitness objects, Witness pairs, or
    model-input rows). ``delta``: the minimal mean-k difference for a path to be kept."""
    from sklearn.tree import DecisionTreeClassifier

    from .kdisc import _KEval

    rng = np.random.default_rng(seed)
    kev = _KEval(evaluate, space, eps, scores, cluster, False)
    S0 = _states_of(space, witnesses)
    _, k0, _, _ = kev(S0)
    S = np.vstack([S0, _perturb(rng, space, S0, max(n - S0.shape[0], 0), p_change, scale, p_uniform)])
    _, k, _, _ = kev(S)
    kappa = float(np.percentile(k, percentile))
    # ties at the percentile: take whichever of >= / > leaves a share nearer 5% (never none or all)
    target = 1.0 - percentile / 100.0
    options = [(r, m) for r, m in ((">=", k >= kappa), (">", k > kappa)) if 0 < m.sum() < m.size]
    if options:
        rule, high = min(options, key=lambda o: abs(o[1].mean() - target))
    else:
        rule, high = ">=", k >= kappa
    feats = np.flatnonzero(space.shared_mask)
    Xf = S[:, feats]
    empty = Explanation((), (), kappa, rule, int(S.shape[0]), int(k0.max()), float(k.mean()), 1.0, delta, None)
    if high.all() or not high.any():
        return empty
    tree = DecisionTreeClassifier(max_depth=max_depth, min_samples_leaf=min_samples_leaf,
                                  class_weight=class_weight, random_state=seed).fit(Xf, high)
    acc = float((tree.predict(Xf) == high).mean())
    t = tree.tree_
    high_class = int(np.flatnonzero(tree.classes_ == True)[0])  # noqa: E712
    candidates: list[Path] = []

    def walk(node: int, preds: list[Predicate]):
        if t.children_left[node] == -1:
            if int(np.argmax(t.value[node][0])) == high_class:
                candidates.append(_evaluate_path(simplify(preds)))
            return
        f = int(feats[t.feature[node]])
        thr = float(t.threshold[node])
        walk(t.children_left[node], preds + [Predicate(f, "<=", thr)])
        walk(t.children_right[node], preds + [Predicate(f, ">", thr)])

    def _evaluate_path(preds: tuple[Predicate, ...]) -> Path:
        sat = np.ones(S.shape[0], dtype=bool)
        for p in preds:
            sat &= p.holds(S)
        support = int(sat.sum())
        mean_k = float(k[sat].mean()) if support else 0.0
        high_share = float(high[sat].mean()) if support else 0.0
        base = S[sat] if support else S0
        pick = base[rng.integers(0, base.shape[0], n_cex)]
        neg = _negate(rng, space, pick, preds)
        if neg.shape[0]:
            _, kn, _, _ = kev(neg)
            mean_neg = float(kn.mean())
        else:
            mean_neg = mean_k
        return Path(preds, mean_k, mean_neg, mean_k - mean_neg, support, high_share, box_volume(preds, space))

    walk(0, [])
    candidates.sort(key=lambda p: (-p.diff, -p.support))
    kept = tuple(p for p in candidates if p.diff >= delta)
    return Explanation(kept, tuple(candidates), kappa, rule, int(S.shape[0]), int(k0.max()),
                       float(k.mean()), acc, delta, tree)


# ---------------------------------------------------------------------------- rendering
def _quote(name) -> str:
    from fairspec.syntax.literals import category

    if isinstance(name, (bool, np.bool_)):      # a bool feature's value: true / false, bare (a string is FS301)
        return "true" if name else "false"
    return category(name)


Decoder = Callable[[str, int, "float | None", "float | None"], "str | None"]


def category_decoder(names: Sequence[str], categories: Mapping[int, Sequence[str]] | None = None,
                     onehot: Mapping[int, tuple[str, str]] | None = None) -> Decoder:
    """A decoder for label-coded categorical coordinates (``categories``: coordinate ->
    category names by code 0, 1, ...) and one-hot coordinates (``onehot``: coordinate ->
    (attribute, category))."""
    categories = dict(categories or {})
    onehot = dict(onehot or {})

    def dec(var: str, f: int, lo, hi):
        if f in onehot:
            attr, cat = onehot[f]
            inside1 = (lo is None or lo < 1) and (hi is None or hi >= 1)
            inside0 = (lo is None or lo < 0) and (hi is None or hi >= 0)
            if inside1 and not inside0:
                return f"{var}.{attr} == {_quote(cat)}"
            if inside0 and not inside1:
                return f"{var}.{attr} != {_quote(cat)}"
            return "true" if inside0 else "false"
        if f in categories:
            cats = list(categories[f])
            codes = [c for c in range(len(cats)) if (lo is None or c > lo) and (hi is None or c <= hi)]
            nm = names[f]
            if len(codes) == len(cats):
                return "true"
            if not codes:
                return "false"
            if len(codes) == 1:
                return f"{var}.{nm} == {_quote(cats[codes[0]])}"
            if len(codes) == len(cats) - 1:
                miss = [c for c in range(len(cats)) if c not in codes][0]
                return f"{var}.{nm} != {_quote(cats[miss])}"
            if 2 * len(codes) > len(cats):
                rest = [c for c in range(len(cats)) if c not in codes]
                return f"{var}.{nm} not in {{{', '.join(_quote(cats[c]) for c in rest)}}}"
            return f"{var}.{nm} in {{{', '.join(_quote(cats[c]) for c in codes)}}}"
        return None

    return dec


def _num(v: float) -> str:
    """A threshold as spec text that reads back exactly (``{:.6g}`` printed 123456.5 as 123456: an
    auditor copying the guardrail got another pre-condition)."""
    from fairspec.syntax.literals import number

    return number(v)


def format_conditions(preds: Sequence[Predicate], names: Sequence[str] | None = None,
                      decoder: Decoder | None = None, var: str = "x",
                      integer: Sequence[bool] | np.ndarray | None = None) -> list[str]:
    """One condition string per coordinate of the simplified conjunction."""
    out = []
    for f, (lo, hi) in intervals(preds).items():
        text = decoder(var, f, lo, hi) if decoder is not None else None
        if text == "true":                 # the coordinate is not constrained after all
            continue
        if text is None:
            nm = names[f] if names is not None else f"f{f}"
            isint = bool(integer[f]) if integer is not None else False
            parts = []
            if isint and lo is not None and hi is not None and math.floor(lo) + 1 == math.floor(hi):
                out.append(f"{var}.{nm} == {math.floor(hi)}")
                continue
            if lo is not None:
                parts.append(f"{var}.{nm} >= {math.floor(lo) + 1}" if isint else f"{var}.{nm} > {_num(lo)}")
            if hi is not None:
                parts.append(f"{var}.{nm} <= {math.floor(hi)}" if isint else f"{var}.{nm} <= {_num(hi)}")
            text = " and ".join(parts)
        out.append(text)
    return out


def format_path(path: Path | Sequence[Predicate], names: Sequence[str] | None = None,
                decoder: Decoder | None = None, var: str = "x",
                integer: Sequence[bool] | np.ndarray | None = None) -> str:
    """'x.age <= 30 and x.sex == Male' (names per model-input coordinate)."""
    preds = path.predicates if isinstance(path, Path) else tuple(path)
    conds = format_conditions(preds, names, decoder, var, integer)
    return " and ".join(conds) if conds else "true"


def describe(expl: Explanation, names: Sequence[str] | None = None, decoder: Decoder | None = None,
             integer: Sequence[bool] | np.ndarray | None = None) -> str:
    """A short human report of the kept paths."""
    from fairspec.syntax.literals import shown

    # a mean k beside the high-k cut and a path's difference beside delta keep their side of it (a mean k of
    # 1.996 against k >= 2 read 2.00; a kept difference of 0.1 against delta 0.105 read 0.10)
    cut = (expl.kappa,)
    lines = [f"high k: k {expl.high_rule} {expl.kappa:g} (95th percentile of {expl.n_samples} samples, "
             f"mean k {shown(float(expl.mean_k), cut, digits=2, style='f')}, starting k {expl.k_init}); "
             f"tree accuracy {expl.tree_accuracy:.2f}"]
    if not expl.paths:
        lines.append(f"no path with mean-k difference >= {_num(expl.delta)}")
    for i, p in enumerate(expl.paths, 1):
        lines.append(f"{i}. {format_path(p, names, decoder, 'x', integer)}")
        mk, mn = (shown(float(x), cut, digits=2, style="f") for x in (p.mean_k, p.mean_k_negated))
        diff = shown(float(p.diff), (expl.delta,), digits=2, style="f")
        lines.append(f"   mean k {mk} vs {mn} negated (diff {diff}), "
                     f"{p.support} samples, {p.volume:.3g} of the domain")
    return "\n".join(lines)


def to_spec(paths: Explanation | Sequence[Path], names: Sequence[str] | None = None,
            decoder: Decoder | None = None, var: str = "x",
            integer: Sequence[bool] | np.ndarray | None = None) -> str:
    """The guardrail pre-condition: one ``require not (...)`` line per path."""
    if isinstance(paths, Explanation):
        paths = paths.paths
    lines = []
    for p in paths:
        lines.append(f"require not ({format_path(p, names, decoder, var, integer)})")
    return "\n".join(lines)
