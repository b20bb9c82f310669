"""Pre-conditions no pair meets, and their neighbours that some pair just meets (session 30): the
``network`` family's ONNX models and domains, each individual-fairness property given bounds on its
integer features besides the `x.* == x'.* except {...}` line.

Shapes of the bounds (one or two per property, dyadic constants so that a float and a decimal reading
agree): ``range`` (one bound of one input at or past the declared range: lo - 1, lo - 1/2, lo, hi, hi +
1/2, hi + 1, any of < <= > >= ==, sometimes written ``c op x.f``); ``window`` (two bounds of one input
on one feature, 0 to 2 apart, `and` or two require lines: ``x.f > 3 and x.f < 4`` admits no whole
number); ``tied`` (a feature the pair ties, bounded on x and on x' apart); ``apart`` (a relaxed
feature's tolerance t against bounds on x and x' that lie t - 1/2, t, t + 1/2 or t + 1 apart, `<` and
`<=` on both); ``negative`` (a tolerance below 0, ``< 0`` or ``<= -1/2``); ``or`` (an empty
disjunction fairspec's rules do not read: the backends decide it); ``order`` (the two inputs of a relaxed
feature compared, ``x.f >= x'.f + c``, c in -1 .. 1 by halves, any of < <= > >=); ``cat`` (session 32, two more
properties per instance from seed 83,000,000 on: a test of one input of any feature, a protected one half the
time -- ``==``, ``!=``, ``in {..}``, ``not (..)``, two joined by ``and`` / ``or`` -- which the solvers relax and
the witness check reads exactly; half their MILP runs ``engine = portfolio``, half their logit posts
``mode = maximize``); ``nd`` (session 32, three more from seed 85,000,000 on: a bound of an int input with
constants that are not dyadic -- ``x.f * 0.1 >= 0.3``, ``x.f / 10 < 0.2``, ``x.f + 0.1 > 3.1``, ``x.f <= 2.9``,
``x.f * 0.3 == 0.9``, ``x.f * 0.1 > x'.f * 0.1 + 0.2`` -- each constant read as the float it is stored as and as
the decimal it is written as (README, further conditions): the truth is that of both readings where they agree,
else ``reading-dependent``, where only `unknown` is right; a witness must meet the condition in both readings);
``real`` (session 33, three more from seed 90,000,000 on, v12-v14: a real feature ``rr`` declared with dyadic ends,
encoded last and read by the network with weight 0 -- ``mr.onnx``, kept only where it scores every domain point as
``m.onnx`` does -- tied by the pair and bounded at an end of its range with non-dyadic constants, ``x.rr + 0.2 >
1.2``, ``x'.rr * 0.3 <= 0.15``, ``x.rr / 10 < 0.025``: the pairs meeting it are all or none of the discrete ones,
per reading; outside the unknown target, the domain being continuous).

Every property is in the unknown target (session 30): a pre-condition some pair meets is decided by the
enumeration over exactly the pairs meeting it (fairspec/kinds/pair_pre.py), not left unknown.

The truth enumerates every ordered pair of domain points: admissible as the network family reads the
pre-condition, every bound decided exactly (Fractions) on the pair's own side. No pair: ``holds`` (any
`violated` is a false violation; `holds (proved)` by certify's no-pair proof or by a backend). Some
pair: the label / logit post over exactly those pairs, as the network family decides it (a witness
must be a domain pair meeting every bound and break the post on the runtime).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from . import networks as nw
from .core import Prop, Truth, decimal_text, exact

FAMILY = "vacuous"
SHAPES = ("range", "window", "tied", "apart", "negative", "or", "order")
OPS = ("<", "<=", ">", ">=", "==")
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "=="}
_CMP = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
        "==": lambda a, b: a == b}


def generate(seed: int):
    """The network family's instance (ONNX, no wide feature) of a seed derived from ``seed`` with at
    least one integer feature, its properties written here."""
    for k in range(50):
        inner = 70_000_000 + seed * 50 + k
        holder = {}

        def props_fn(rng, fs, P, X, out, info, has_data, size, holder=holder):
            if not any(f.kind == "int" for f in fs):
                return []
            holder["ok"] = True
            props = [_property(rng, j, fs, P, X, out, info, size) for j in range(6)]
            if seed >= CAT_FROM:     # session 32: two more, from a stream of their own (the six are unchanged)
                sub = np.random.default_rng([70, seed, 5])
                props += [_property(sub, j, fs, P, X, out, info, size, shapes=["cat"] + (
                    [str(sub.choice(("cat", "range", "tied")))] if sub.random() < 0.4 else []), logit_odds=2)
                    for j in (6, 7)]
                for p in props[6:]:     # and half of their MILP runs race HiGHS and SCIP
                    if p.meta["backend"] == "milp" and sub.random() < 0.5:
                        p.text = p.text.replace("  using milp\n", "  using milp\n  engine = portfolio\n")
                        p.meta["backend"] = "milp-portfolio"
                # and a prob post (the runtime's probability, or the real logistic of its logit) under a cat
                # pre-condition, from a stream of its own
                pr = np.random.default_rng([70, seed, 7])
                props.append(_property(pr, 8, fs, P, X, out, info, size, shapes=["cat"], force_post="prob"))
                mx = np.random.default_rng([70, seed, 6])
                for p in props[6:]:     # half of their logit posts maximize (the largest over the pairs meeting it)
                    if p.truth.exact is not None and mx.random() < 0.5:
                        p.text = p.text.replace("  mode = find\n", "").replace("  timeout", "  mode = maximize\n  timeout")
                        p.truth.value, p.truth.value_kind, p.meta["mode"] = float(p.truth.exact), "max", "maximize"
                    else:
                        p.truth.exact = None
            if seed >= ND_FROM:     # session 32: non-dyadic constants, read as floats and as decimals
                nd = np.random.default_rng([70, seed, 8])
                for j in (9, 10, 11):
                    shapes = ["nd"] + ([str(nd.choice(("nd", "range", "cat")))] if nd.random() < 0.4 else [])
                    props.append(_property(nd, j, fs, P, X, out, info, size, shapes=shapes, logit_odds=2,
                                           force_post="prob" if j == 11 and nd.random() < 0.5 else None))
            if seed >= REAL_FROM:   # session 33: a real feature the network reads with weight 0, bounded
                rl = np.random.default_rng([70, seed, 90])
                info["real"] = _real_range(rl)
                holder["X"] = X
                for j in (12, 13, 14):
                    shapes = ["real"] + ([str(rl.choice(("nd", "range", "cat")))] if rl.random() < 0.3 else [])
                    p = _property(rl, j, fs, P, X, out, info, size, shapes=shapes, logit_odds=2,
                                  force_post="prob" if j == 14 and rl.random() < 0.5 else None)
                    p.truth.domain = -1          # a continuous domain: outside the unknown target
                    p.meta["real"] = list(info["real"][:2])
                    props.append(p)
            return props

        inst = nw.generate(inner, big=False, runtime="onnx", family=FAMILY, props_fn=props_fn)
        if holder.get("ok"):
            inst.seed = seed
            inst.info["network_seed"] = inner
            for p in inst.props:
                p.meta.setdefault("dtype", inst.info.get("dtype"))
            inst.judge = judge
            if "real" in inst.info:
                _real_spec(inst, holder["X"])
            return inst
    raise RuntimeError(f"no instance with an integer feature near seed {seed}")


VACUOUS_REASON = "no pair meets the pre-condition"       # fairspec.kinds.no_pair.REASON


def judge(spec, props, base):
    """The network family's judge, and one rule more: a `holds` for the reason that no pair meets the
    pre-condition, where some pair does, is wrong (``false-vacuous``) even when the property holds."""
    from .judge import _check_group

    outs = _check_group(spec, props, base)
    by_name = {p.name: p for p in props}
    for o in outs:
        p = by_name[o.name]
        if o.klass != "wrong" and p.truth.pairs > 0 and VACUOUS_REASON in (o.reason or ""):
            o.klass, o.defect = "wrong", "false-vacuous"
            o.why = f"'{o.reason}', but {p.truth.pairs} pairs of the domain meet it"
    return outs


def _text(q: Fraction) -> str:
    return decimal_text(Fraction(q))


class Bound:
    """``side.f op c`` (side 0: x, 1: x'), written as ``text``."""

    def __init__(self, side: int, f: int, op: str, c: Fraction, names, flip: bool = False):
        self.side, self.f, self.op, self.c = side, f, op, Fraction(c)
        v = ("x", "x'")[side]
        self.text = (f"{_text(self.c)} {_FLIP[op]} {v}.{names[f]}" if flip else f"{v}.{names[f]} {op} {_text(self.c)}")

    def holds(self, vals: np.ndarray) -> np.ndarray:
        """Per value of the feature (whole numbers), does the bound hold (exactly)?"""
        return np.array([_CMP[self.op](Fraction(int(v)), self.c) for v in vals], dtype=bool)


def _property(rng, k, fs, P, X, out, info, size, shapes=None, logit_odds=1, force_post=None) -> Prop:
    names = [f.name for f in fs]
    ints = [i for i, f in enumerate(fs) if f.kind == "int"]
    protected = [i for i, f in enumerate(fs) if f.protected]
    free = tuple(protected)
    if shapes is None:
        shapes = [str(rng.choice(SHAPES))]
        if rng.random() < 0.3:
            shapes.append(str(rng.choice(("range", "window", "tied"))))
    # a relaxed int feature (not protected) for `apart` / `negative`, sometimes for the others
    cand = [i for i in ints if i not in free]
    relaxed = []
    if cand and ({"apart", "negative", "order"} & set(shapes) or rng.random() < 0.3):
        i = cand[int(rng.integers(0, len(cand)))]
        if "negative" in shapes:
            tol, strict = [("0", True), ("-0.5", False), ("-1", False)][int(rng.integers(0, 3))]
        else:
            tol, strict = [("1", False), ("1", True), ("2", True), ("0.5", False), ("2", False),
                           ("1.5", True)][int(rng.integers(0, 6))]
        relaxed.append((i, tol, strict))
    tied = tuple(i for i in range(len(fs)) if i not in free and i not in [r[0] for r in relaxed])
    ps = nw.PairSpec(free, tuple(relaxed), tied)

    lines_extra, bounds, ors, rels = [], [], [], []  # require lines; conjunctive bounds; or-groups; x vs x'
    for shape in shapes:
        if shape == "real":         # session 33: a non-dyadic bound on the real feature (REAL_FROM)
            rc = _real_cond(rng, info["real"])
            rels.append(rc)
            lines_extra.append(rc.text)
            continue
        _shape(rng, shape, fs, ints, ps, names, lines_extra, bounds, ors, rels)

    # every ordered pair of domain points: admissible, every bound on its side, every or-group
    n = P.shape[0]
    M = nw.admissible(P, np.arange(n), ps)
    for i in tied:
        M &= P[:, i][:, None] == P[:, i][None, :]
    for b in bounds:
        ok = b.holds(P[:, b.f])
        M &= ok[:, None] if b.side == 0 else ok[None, :]
    for grp in ors:
        any_ = np.zeros_like(M)
        for b in grp:
            ok = b.holds(P[:, b.f])
            any_ |= ok[:, None] if b.side == 0 else ok[None, :]
        M &= any_
    # session 32: a non-dyadic condition (NDCond) is read twice, its constants as the floats they are stored as
    # (Mf) and as the decimals they are written as (M)
    Mf = M.copy() if any(isinstance(r, (NDCond, RealCond)) for r in rels) else None
    for r in rels:
        if isinstance(r, (NDCond, RealCond)):
            M &= r.pairs(P, DECIMAL)
            Mf &= r.pairs(P, FLOAT)
        else:
            M &= r.pairs(P)
            if Mf is not None:
                Mf &= r.pairs(P)
    n_pairs = int(M.sum())

    posts = ["label", "label"] + (["logit"] * logit_odds if out.logit is not None and not info.get("logit_ambiguous")
                                  else [])
    post = posts[int(rng.integers(0, len(posts)))]
    post = force_post or post
    op = eps = max_exact = None
    if post == "label":
        status = _label_status(out, M)
    elif post == "prob":
        status, op, eps = _prob_truth(rng, out, M, n_pairs)
    else:
        z = out.logit
        D = np.abs(z[:, None] - z[None, :])
        Dm = np.where(M, D, -np.inf)
        top = float(Dm.max()) if n_pairs else 0.0
        ex = None
        if n_pairs:
            a, b = np.unravel_index(np.argmax(Dm), Dm.shape)
            ex = decimal_text(abs(exact(z[a]) - exact(z[b])), 15)
        op = "<=" if rng.random() < 0.6 else "<"
        eps = ex if (ex is not None and rng.random() < 0.4) else str(rng.choice(["0.25", "0.5", "1", "2", "0.125"]))
        if op == "<" and Fraction(eps) == 0:
            op = "<="
        e = Fraction(eps)
        # the exact largest difference over the pairs meeting the pre-condition (kept for a maximize, above)
        cand = np.argwhere(M & (Dm >= top * (1 - 1e-9))) if n_pairs else []
        max_exact = max((abs(exact(z[a]) - exact(z[b])) for a, b in cand), default=None)
        status = _logit_status(z, M, op, e)
        _ = top
    if Mf is not None:
        # decided in both readings, or only `unknown` is right (README: "a constant read both as the float it is
        # stored as and as the decimal it is written as")
        e_ = Fraction(eps) if eps is not None else None
        status_f = (_label_status(out, Mf) if post == "label" else _prob_status(out, Mf, op, e_) if post == "prob"
                    else _logit_status(out.logit, Mf, op, e_))
        if status_f != status:
            status = "reading-dependent"
        n_pairs = max(n_pairs, int(Mf.sum()))
        max_exact = None
    backend = str(rng.choice(["default", "default", "milp", "smt"]))
    mode = "find" if rng.random() < 0.25 else "prove"
    lines = ["forall x, x' : F", "require x.* == x'.* except {" + ", ".join(names[i] for i in free) + "}"]
    for i, tol, strict in relaxed:
        line = f"require |x.{names[i]} - x'.{names[i]}| {'<' if strict else '<='} {tol}"
        if (k + i) % 3 == 0:
            # a second, looser tolerance on the same feature (both are required: the pair meets the tighter;
            # session 30: the solvers and tree paths read the last line alone), before or after it; chosen
            # without drawing from rng, so the instances are the same
            looser = f"require |x.{names[i]} - x'.{names[i]}| <= {_text(Fraction(tol) + 1)}"
            lines += [looser, line] if k % 2 else [line, looser]
        else:
            lines.append(line)
    lines += [f"require {t}" for t in lines_extra]
    lines.append("ensure label(m(x)) == label(m(x'))" if post == "label"
                 else f"ensure |{post}(m(x)) - {post}(m(x'))| {op} {eps}")
    if backend == "milp":
        lines.append("using milp")
    elif backend == "smt":
        lines.append("using smt")
    if mode != "prove":
        lines.append(f"mode = {mode}")
    lines.append("timeout = 20s")
    name = f"v{k}"
    text = f"property {name} {{\n  " + "\n  ".join(lines) + "\n}"
    base_check = nw._witness_checker(fs, P, ps, out, post, op, eps, X)
    reals = [r for r in rels if isinstance(r, RealCond)]
    if reals:
        base_check = reals[0].checker(base_check)

    def check(w):
        bad = base_check(w)
        if bad:
            return bad
        pts = [[f.read(w[side][f.name]) for f in fs] for side in ("features", "features_prime")]
        for b in bounds:
            if not _CMP[b.op](Fraction(pts[b.side][b.f]), b.c):
                return f"the witness pair breaks the pre-condition's {b.text}"
        for r in rels:
            if not r.ok(pts[0], pts[1]):
                return f"the witness pair breaks the pre-condition's {r.text}"
        for grp in ors:
            if not any(_CMP[b.op](Fraction(pts[b.side][b.f]), b.c) for b in grp):
                return f"the witness pair breaks the pre-condition's {' or '.join(b.text for b in grp)}"
        return None

    truth = Truth(status, check_witness=check, domain=size, pairs=n_pairs,
                  note="no pair meets the pre-condition" if n_pairs == 0 else
                  f"{n_pairs} pairs meet it" + (" (the float and decimal readings of a constant disagree on the "
                                                "verdict)" if status == "reading-dependent" else ""),
                  exact=max_exact if post == "logit" else None)
    meta = {"post": post, "op": op, "eps": eps, "backend": backend, "mode": mode, "runtime": "onnx",
            "head": info["head"], "shape": "+".join(shapes), "empty": n_pairs == 0,
            "cell": "empty" if n_pairs == 0 else "met", "relaxed": [(names[i], t, s) for i, t, s in relaxed],
            "incomplete": False}
    return Prop(name, FAMILY, text, truth, meta, 20.0)


def _prob_truth(rng, out, M, n_pairs):
    """(status, op, eps) of ``|prob(m(x)) - prob(m(x'))| op eps`` over the pairs M: the differences decided
    exactly (networks.exact_measure: the runtime's probabilities, or the real logistic of its logits at 80
    digits), ``ambiguous`` where a pair within 1e-9 of eps cannot be settled; eps at the largest difference
    (its decimal when exactly one of at most 15 digits, else a number near it) or a round number."""
    pr = out.prob if out.prob is not None else 1.0 / (1.0 + np.exp(-out.logit))
    Dm = np.where(M, np.abs(pr[:, None] - pr[None, :]), -np.inf)
    top = float(Dm.max()) if n_pairs else 0.0
    op = "<=" if rng.random() < 0.6 else "<"
    r = rng.random()
    if n_pairs and r < 0.5:
        cand = np.argwhere(M & (Dm >= top * (1 - 1e-9)))
        exs = [nw.exact_measure(out, "prob", int(a), int(b)) for a, b in cand]
        best = None if (not exs or None in exs) else max(exs)
        text = decimal_text(best, 15) if best is not None else None
        # not a short decimal: near it, as the network family writes it (a float at the real logistic's
        # difference is a tie within its rounding, `unknown` by design)
        eps = text if text is not None else f"{top * float(rng.choice([0.5, 0.999, 1.001, 2])):.6g}"
    else:
        eps = str(rng.choice(["0.25", "0.5", "0.125", "0.05", "0.1"]))
    if "e" in eps:
        eps = "0"
    if op == "<" and Fraction(eps) == 0:
        op = "<="
    return _prob_status(out, M, op, Fraction(eps)), op, eps


def _label_status(out, M) -> str:
    return "violated" if np.any(M & (out.label[:, None] != out.label[None, :])) else "holds"


def _logit_status(z, M, op, e: Fraction) -> str:
    """``|logit(m(x)) - logit(m(x'))| op e`` over the pairs M, each difference exact."""
    D = np.abs(z[:, None] - z[None, :])
    for a, b in np.argwhere(M & (D >= float(e) - 1e-9 * max(1.0, float(e)))):
        d = abs(exact(z[a]) - exact(z[b]))
        if (d > e) if op == "<=" else (d >= e):
            return "violated"
    return "holds"


def _prob_status(out, M, op, e: Fraction) -> str:
    """``|prob(m(x)) - prob(m(x'))| op e`` over the pairs M (networks.exact_measure; ``ambiguous`` where a
    difference within 1e-9 of e cannot be settled)."""
    pr = out.prob if out.prob is not None else 1.0 / (1.0 + np.exp(-out.logit))
    D = np.abs(pr[:, None] - pr[None, :])
    ambiguous = False
    for a, b in np.argwhere(M & (D >= float(e) - 1e-9 * max(1.0, float(e)))):
        d = nw.exact_measure(out, "prob", int(a), int(b))
        if d is None:
            ambiguous = True
            continue
        if (d > e) if op == "<=" else (d >= e):
            return "violated"
    return "ambiguous" if ambiguous else "holds"


def _edge_constants(f) -> list[Fraction]:
    lo, hi = Fraction(f.lo), Fraction(f.hi)
    return [lo - 1, lo - Fraction(1, 2), lo, lo + Fraction(1, 2), hi - Fraction(1, 2), hi, hi + Fraction(1, 2), hi + 1]


class Rel:
    """``x.f op x'.f + c``, written as ``text``."""

    def __init__(self, f: int, op: str, c: Fraction, names):
        self.f, self.op, self.c = f, op, Fraction(c)
        tail = "" if self.c == 0 else f" {'+' if self.c > 0 else '-'} {_text(abs(self.c))}"
        self.text = f"x.{names[f]} {op} x'.{names[f]}{tail}"

    def pairs(self, P: np.ndarray) -> np.ndarray:
        return self.holds(P[:, self.f])

    def ok(self, p0, p1) -> bool:
        return _CMP[self.op](Fraction(p0[self.f]), Fraction(p1[self.f]) + self.c)

    def holds(self, vals: np.ndarray) -> np.ndarray:
        """(n, n): does the pair of points (i, j) meet it (exactly)?"""
        u = sorted(set(int(v) for v in vals))
        ok = {(a, b): _CMP[self.op](Fraction(a), Fraction(b) + self.c) for a in u for b in u}
        iv = np.array([int(v) for v in vals])
        T = np.array([[ok[(a, b)] for b in u] for a in u], dtype=bool)
        k = np.searchsorted(np.array(u), iv)
        return T[k[:, None], k[None, :]]


#: session 32: the ``cat`` shape's properties (two per instance, appended) from this instance seed on
CAT_FROM = 83_000_000


def _value_text(f, v: int) -> str:
    return f.cats[v] if f.kind == "cat" else ("true" if v else "false") if f.kind == "bool" else str(v)


class Cond:
    """A condition on one input of any feature (a protected one included), exact on domain values: ``side.f ==
    v``, ``!= v``, ``in {..}`` (a category), ``not (...)``, and two of them joined by ``and`` / ``or``; ``pred``
    maps (values of x, values of x') to bool."""

    def __init__(self, text: str, pred):
        self.text, self.pred = text, pred

    def pairs(self, P: np.ndarray) -> np.ndarray:
        n = P.shape[0]
        return np.broadcast_to(self.pred(P[:, None, :], P[None, :, :]), (n, n)).copy()

    def ok(self, p0, p1) -> bool:
        return bool(self.pred(np.asarray(p0), np.asarray(p1)))


def _atom(rng, fs, names) -> Cond:
    """One test of one input: a protected feature half the time."""
    prot = [i for i, f in enumerate(fs) if f.protected]
    i = prot[int(rng.integers(0, len(prot)))] if rng.random() < 0.5 else int(rng.integers(0, len(fs)))
    f, side = fs[i], int(rng.integers(0, 2))
    v = ("x", "x'")[side]
    if f.kind == "cat" and f.size > 2 and rng.random() < 0.4:
        vals = sorted(int(a) for a in rng.choice(f.size, size=int(rng.integers(1, f.size)), replace=False))
        text = f"{v}.{names[i]} in {{{', '.join(f.cats[a] for a in vals)}}}"
        return Cond(text, lambda p0, p1, i=i, s=side, vals=tuple(vals): np.isin((p0, p1)[s][..., i], vals))
    a = int(rng.integers(0, f.size)) + (f.lo if f.kind == "int" else 0)
    op = "==" if rng.random() < 0.6 else "!="
    text = f"{v}.{names[i]} {op} {_value_text(f, a)}"
    return Cond(text, lambda p0, p1, i=i, s=side, a=a, eq=op == "==": ((p0, p1)[s][..., i] == a) == eq)


def _cat_cond(rng, fs, names) -> Cond:
    a = _atom(rng, fs, names)
    r = rng.random()
    if r < 0.2:
        return Cond(f"not ({a.text})", lambda p0, p1, a=a: ~a.pred(p0, p1))
    if r < 0.45:
        b = _atom(rng, fs, names)
        return Cond(f"{a.text} or {b.text}", lambda p0, p1, a=a, b=b: a.pred(p0, p1) | b.pred(p0, p1))
    if r < 0.6:
        b = _atom(rng, fs, names)
        return Cond(f"{a.text} and {b.text}", lambda p0, p1, a=a, b=b: a.pred(p0, p1) & b.pred(p0, p1))
    return a


def _shape(rng, shape, fs, ints, ps, names, lines, bounds, ors, rels):
    relaxed = [r[0] for r in ps.relaxed]
    if shape == "nd":
        c = _nd_cond(rng, fs, ints, ps, names)
        rels.append(c)
        lines.append(c.text)
        return
    if shape == "cat":
        c = _cat_cond(rng, fs, names)
        rels.append(c)
        lines.append(c.text)
        return
    if shape == "order" and not relaxed:
        shape = "range"
    if shape == "order":
        i = relaxed[0]
        r = Rel(i, str(rng.choice(["<", "<=", ">", ">="])), Fraction(int(rng.integers(-2, 3)), 2), names)
        rels.append(r)
        lines.append(r.text)
        return
    if shape in ("apart", "negative") and not relaxed:
        shape = "window"
    if shape == "tied":
        tied_ints = [i for i in ints if i in ps.tied]
        if not tied_ints:
            shape = "window"
    if shape == "range":
        i = ints[int(rng.integers(0, len(ints)))]
        c = _edge_constants(fs[i])[int(rng.integers(0, 8))]
        b = Bound(int(rng.integers(0, 2)), i, str(rng.choice(OPS)), c, names, flip=rng.random() < 0.3)
        bounds.append(b)
        lines.append(b.text)
    elif shape == "window":
        i = ints[int(rng.integers(0, len(ints)))]
        f = fs[i]
        side = int(rng.integers(0, 2))
        c1 = Fraction(int(rng.integers(f.lo, f.hi + 1))) + Fraction(int(rng.choice([0, 0, 1])), 2)
        c2 = c1 + Fraction(int(rng.choice([0, 1, 2, 3, 4])), 2)
        b1 = Bound(side, i, str(rng.choice([">", ">="])), c1, names)
        b2 = Bound(side, i, str(rng.choice(["<", "<="])), c2, names, flip=rng.random() < 0.3)
        bounds += [b1, b2]
        if rng.random() < 0.5:
            lines.append(f"{b1.text} and {b2.text}")
        else:
            lines += [b1.text, b2.text]
    elif shape == "tied":
        i = [j for j in ints if j in ps.tied][0] if rng.random() < 0.5 else \
            [j for j in ints if j in ps.tied][-1]
        f = fs[i]
        c1 = Fraction(int(rng.integers(f.lo, f.hi + 1))) + Fraction(int(rng.choice([0, 1])), 2)
        c2 = c1 + Fraction(int(rng.choice([-2, -1, 0, 1])), 2)
        b1 = Bound(0, i, str(rng.choice([">", ">="])), c1, names)
        b2 = Bound(1, i, str(rng.choice(["<", "<="])), c2, names)
        bounds += [b1, b2]
        lines += [b1.text, b2.text]
    elif shape == "apart":
        i, tol, strict = ps.relaxed[0]
        f = fs[i]
        t = Fraction(tol)
        a = Fraction(int(rng.integers(f.lo, f.hi + 1))) + Fraction(int(rng.choice([0, 1])), 2)
        gap = t + Fraction(int(rng.choice([-1, 0, 0, 1, 2])), 2)
        lo_side = int(rng.integers(0, 2))
        b1 = Bound(lo_side, i, str(rng.choice(["<", "<="])), a, names)
        b2 = Bound(1 - lo_side, i, str(rng.choice([">", ">="])), a + gap, names, flip=rng.random() < 0.3)
        bounds += [b1, b2]
        lines.append(f"{b1.text} and {b2.text}")
    elif shape == "negative":
        pass                    # the relaxed tolerance itself is below 0 (or `< 0`)
    elif shape == "or":
        i = ints[int(rng.integers(0, len(ints)))]
        f = fs[i]
        side = int(rng.integers(0, 2))
        out = rng.random() < 0.7        # both past the range: empty; else one reaches the edge
        b1 = Bound(side, i, ">", Fraction(f.hi) + (0 if out else -1), names)
        b2 = Bound(side, i, "<", Fraction(f.lo), names)
        ors.append([b1, b2])
        lines.append(f"{b1.text} or {b2.text}")


#: session 32: non-dyadic constants in the pre-condition (three properties per instance, appended) from this
#: instance seed on
ND_FROM = 85_000_000
FLOAT, DECIMAL = 0, 1


def _read(text: str, reading: int) -> Fraction:
    """A constant as fairspec reads it (fairspec.ir.no_pair's two readings): the float it is stored as, or the
    decimal its shortest repr writes (the texts written here are their own shortest reprs)."""
    v = float(text)
    return Fraction(v) if reading == FLOAT else Fraction(repr(v))


class NDCond:
    """A condition with non-dyadic constants on int inputs: ``fn(a, b, reading)`` -> bool, where a / b are the
    values of the feature on x / x' (whole numbers), every constant read with ``reading``, arithmetic exact."""

    def __init__(self, text: str, f: int, fn):
        self.text, self.f, self.fn = text, f, fn

    def pairs(self, P: np.ndarray, reading: int) -> np.ndarray:
        u = sorted(set(int(v) for v in P[:, self.f]))
        T = np.array([[self.fn(Fraction(a), Fraction(b), reading) for b in u] for a in u], dtype=bool)
        k = np.searchsorted(np.array(u), np.array([int(v) for v in P[:, self.f]]))
        return T[k[:, None], k[None, :]]

    def ok(self, p0, p1) -> bool:
        """A witness must meet it in both readings."""
        a, b = Fraction(p0[self.f]), Fraction(p1[self.f])
        return all(self.fn(a, b, r) for r in (FLOAT, DECIMAL))


def _tenths(k: int) -> str:
    return decimal_text(Fraction(k, 10))


def _nd_cond(rng, fs, ints, ps, names) -> NDCond:
    """One bound of an int input with constants that are not dyadic (0.1, 0.3, 2.1, ...), placed so that the
    two readings of a constant may disagree at a value of the domain: ``x.f * 0.1 op k/10``, ``x.f / 10 op
    k/10``, ``x.f + 0.1 op k + 0.1``, ``x.f op k + d/10``, ``x.f * 0.3 op 3k/10``, or the two inputs of the
    feature compared, ``x.f * 0.1 op x'.f * 0.1 + d/10``."""
    relaxed = [r[0] for r in ps.relaxed]
    i = relaxed[0] if relaxed and rng.random() < 0.5 else ints[int(rng.integers(0, len(ints)))]
    f = fs[i]
    side = int(rng.integers(0, 2))
    v = ("x", "x'")[side]
    op = str(rng.choice(OPS))
    k = int(rng.integers(f.lo - 1, f.hi + 2))
    form = int(rng.integers(0, 6))
    cmp = _CMP[op]
    sel = (lambda a, b: a) if side == 0 else (lambda a, b: b)
    if form == 0:
        c = _tenths(k)
        text = f"{v}.{names[i]} * 0.1 {op} {c}"
        fn = lambda a, b, r, c=c: cmp(sel(a, b) * _read("0.1", r), _read(c, r))
    elif form == 1:
        c = _tenths(k)
        text = f"{v}.{names[i]} / 10 {op} {c}"
        fn = lambda a, b, r, c=c: cmp(sel(a, b) / 10, _read(c, r))
    elif form == 2:
        c = decimal_text(Fraction(k) + Fraction(1, 10))
        text = f"{v}.{names[i]} + 0.1 {op} {c}"
        fn = lambda a, b, r, c=c: cmp(sel(a, b) + _read("0.1", r), _read(c, r))
    elif form == 3:
        c = decimal_text(Fraction(k) + Fraction(int(rng.choice([1, 3, 7, 9, -1, -3])), 10))
        text = f"{v}.{names[i]} {op} {c}"
        fn = lambda a, b, r, c=c: cmp(sel(a, b), _read(c, r))
    elif form == 4:
        c = decimal_text(Fraction(3 * k, 10))
        text = f"{v}.{names[i]} * 0.3 {op} {c}"
        fn = lambda a, b, r, c=c: cmp(sel(a, b) * _read("0.3", r), _read(c, r))
    else:
        d = int(rng.choice([-3, -2, -1, 1, 2, 3]))
        c = _tenths(abs(d))
        text = f"x.{names[i]} * 0.1 {op} x'.{names[i]} * 0.1 {'+' if d > 0 else '-'} {c}"
        sg = 1 if d > 0 else -1
        fn = lambda a, b, r, c=c, sg=sg: cmp(a * _read("0.1", r), b * _read("0.1", r) + sg * _read(c, r))
    return NDCond(text, i, fn)


# ------------------------------------------------------------------ session 33: a real feature

#: from this instance seed on, three more properties (v12-v14) bound a real feature ``rr`` with non-dyadic constants
REAL_FROM = 90_000_000
REAL_RANGES = ((0, 1), (-1, 2), (0, Fraction(1, 2)), (1, 4), (Fraction(1, 4), 3))


def _real_range(rng):
    """(lo, hi, encoding text) of the real feature ``rr``: dyadic ends (a float and a decimal reading agree)."""
    lo, hi = (Fraction(v) for v in REAL_RANGES[int(rng.integers(0, len(REAL_RANGES)))])
    enc = "raw" if rng.random() < 0.6 else f"minmax(lo = {_text(lo)}, hi = {_text(hi)})"
    return lo, hi, enc


class RealCond:
    """``v.rr * a + b op c`` with non-dyadic constants (read as the floats they are stored as and as the decimals
    they are written as), on the real feature ``rr`` the pair ties and the network reads with weight 0: the pairs
    meeting it are every admissible pair of the discrete features when some value of [lo, hi] meets it in that
    reading (a half-line meets the range iff it holds an end, a dyadic float: a witness exists there), none else."""

    def __init__(self, text, lo, hi, enc, fn):
        self.text, self.lo, self.hi, self.enc, self.fn = text, lo, hi, enc, fn

    def met(self, reading) -> bool:
        return self.fn(self.lo, reading) or self.fn(self.hi, reading)

    def pairs(self, P, reading):
        return np.full((P.shape[0], P.shape[0]), self.met(reading), dtype=bool)

    def ok(self, p0, p1) -> bool:
        return True                  # read from the witness itself (checker)

    def checker(self, base):
        """The network's witness check on the discrete features (the encoded vectors less their last column,
        ``rr``'s), and ``rr``: one value on both sides, in [lo, hi], meeting the bound in both readings, encoded
        as declared."""
        def check(w):
            if not w:
                return "a violation without a witness"
            vals = []
            for side in ("features", "features_prime"):
                v = (w.get(side) or {}).get("rr")
                if v is None:
                    return f"the witness's {side} lack feature rr"
                try:
                    vals.append(Fraction(v) if isinstance(v, str) else Fraction(float(v)))
                except (TypeError, ValueError):
                    return f"the witness's {side} value rr = {v!r} is not a number"
            if vals[0] != vals[1]:
                return f"the witness pair differs in rr ({float(vals[0])!r}, {float(vals[1])!r}), which it ties"
            r = vals[0]
            if not self.lo <= r <= self.hi:
                return f"the witness's rr = {float(r)!r} is outside [{self.lo}, {self.hi}]"
            if not all(self.fn(r, k) for k in (FLOAT, DECIMAL)):
                return f"the witness's rr = {float(r)!r} breaks {self.text} in a reading of its constants"
            w2 = dict(w)
            if w.get("x") is not None:
                want = float(r) if self.enc == "raw" else float((r - self.lo) / (self.hi - self.lo))
                for side in ("x", "x_prime"):
                    got = list(np.asarray(w[side], dtype=np.float64))
                    if not got or abs(got[-1] - want) > 1e-9 * max(1.0, abs(want)):
                        return f"the witness's {side} {got} does not end with rr's encoding {want!r}"
                    w2[side] = got[:-1]
            return base(w2)
        return check


def _real_cond(rng, real) -> RealCond:
    """One bound of ``rr`` at an end of its range t, written with non-dyadic constants: ``v.rr + a op t + a``,
    ``v.rr * a op t * a``, ``v.rr / 10 op t / 10`` or ``v.rr op t + d/10`` (v: x or x', the same value)."""
    lo, hi, enc = real
    at_lo = rng.random() < 0.5
    t = lo if at_lo else hi
    # pointing out of the range two times in three: at most the end itself meets it, where the readings part
    out_ = rng.random() < 2 / 3
    op = str(rng.choice(("<", "<=") if out_ == at_lo else (">", ">=")))
    v = ("x", "x'")[int(rng.integers(0, 2))]
    cmp = _CMP[op]
    form = int(rng.choice([0, 0, 1, 1, 2, 3]))
    if form == 0:
        a = str(rng.choice(["0.1", "0.2", "0.3", "0.7"]))
        c = decimal_text(t + Fraction(a))
        text = f"{v}.rr + {a} {op} {c}"
        fn = lambda r, k, a=a, c=c: cmp(r + _read(a, k), _read(c, k))
    elif form == 1:
        a = str(rng.choice(["0.1", "0.3", "0.7"]))
        c = decimal_text(t * Fraction(a))
        text = f"{v}.rr * {a} {op} {c}"
        fn = lambda r, k, a=a, c=c: cmp(r * _read(a, k), _read(c, k))
    elif form == 2:
        c = decimal_text(t / 10)
        text = f"{v}.rr / 10 {op} {c}"
        fn = lambda r, k, c=c: cmp(r / 10, _read(c, k))
    else:
        c = decimal_text(t + Fraction(int(rng.choice([-3, -1, 1, 3])), 10))
        text = f"{v}.rr {op} {c}"
        fn = lambda r, k, c=c: cmp(r, _read(c, k))
    return RealCond(text, lo, hi, enc, fn)


def _with_zero_input(onnx_bytes: bytes) -> bytes:
    """The network with one more input column (the last), weighted 0 in its first layer (initializer W0)."""
    import onnx
    from onnx import numpy_helper

    m = onnx.load_from_string(onnx_bytes)
    for k, init in enumerate(m.graph.initializer):
        if init.name == "W0":
            W = numpy_helper.to_array(init)
            W2 = np.concatenate([W, np.zeros((1, W.shape[1]), dtype=W.dtype)], axis=0)
            m.graph.initializer[k].CopyFrom(numpy_helper.from_array(W2, "W0"))
    dim = m.graph.input[0].type.tensor_type.shape.dim[1]
    dim.dim_value = dim.dim_value + 1
    onnx.checker.check_model(m)
    return m.SerializeToString()


def _real_spec(inst, X):
    """The real properties' spec: ``rr : real in [lo, hi]`` declared, encoded last, the network ``mr.onnx`` (the
    same weights, a zero row for rr); kept only where it scores every domain point (at rr = lo and hi) exactly as
    the network the truth scored (else the properties are dropped)."""
    lo, hi, enc = inst.info["real"]
    dtype = inst.info.get("dtype") or "float32"
    blob = _with_zero_input(inst.files["m.onnx"])
    Y = nw.run_onnx(inst.files["m.onnx"], X.astype(dtype))
    for r in (lo, hi):
        col = float(r) if enc == "raw" else float((r - lo) / (hi - lo))
        Xr = np.concatenate([X, np.full((X.shape[0], 1), col)], axis=1)
        Yr = nw.run_onnx(blob, Xr.astype(dtype))
        if not np.array_equal(np.asarray(Y), np.asarray(Yr)):
            inst.props = [p for p in inst.props if "real" not in p.meta]
            inst.info["real_dropped"] = True
            return
    inst.files["mr.onnx"] = blob
    spec = inst.spec.replace('onnx("m.onnx"', 'onnx("mr.onnx"', 1)
    if 'csv("d.csv"' in spec:       # features F from d: the rows get an rr column (its ends, in turn)
        rows = [ln for ln in inst.files["d.csv"].decode().split("\n") if ln]
        ends = (_text(lo), _text(hi))
        rows = [rows[0] + ",rr"] + [f"{ln},{ends[k % 2]}" for k, ln in enumerate(rows[1:])]
        inst.files["dr.csv"] = ("\n".join(rows) + "\n").encode()
        spec = spec.replace('csv("d.csv"', 'csv("dr.csv"', 1)
    head, sep, rest = spec.partition("features F")
    decl, brace, rest = rest.partition("{\n")
    spec = head + sep + decl + brace + f"  rr : real in [{_text(lo)}, {_text(hi)}]\n" + rest
    head, sep, rest = spec.partition("encode F for m {\n")
    end = rest.index("\n}\n") + 1           # the block's own closing line (a code table has braces too)
    spec = head + sep + rest[:end] + f"  rr : {enc}\n" + rest[end:]
    inst.info["real"] = [str(lo), str(hi), enc]
    for p in inst.props:
        if "real" in p.meta:
            p.spec = spec
