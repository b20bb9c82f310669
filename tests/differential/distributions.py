"""Group metrics over a declared distribution: small Bayesian networks written in the spec
(decimal probabilities such as 0.41), classifiers that are linear rules, Boolean rules (and /
or / not over tests) or scikit-learn decision trees; most_favoured, least_favoured,
statistical_parity and disparate_impact with `<`, `<=`, `>`, `>=`; every backend (dp, ssat,
elimination, the default).

The truth is exact: every assignment of the non-protected features enumerated with its
probability as a product of the declared decimals read as Fractions, the classifier decided
exactly (a rule in rational arithmetic; a tree by its library's predict), each group's
positive rate (PPV) a Fraction. Thresholds are often the exact value (`<= 0.39` when the
value is 39/100).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np

from .core import Enc, Feature, Instance, Prop, Truth, claim_holds, decimal_text, encode_points
from .dist_causal import CAUSAL_FROM, causal_props

FAMILY = "distribution"

METRICS = ("most_favoured", "least_favoured", "statistical_parity", "disparate_impact")


def _prob(rng) -> str:
    r = rng.random()
    if r < 0.08:
        return "0"
    if r < 0.14:
        return "1"
    if r < 0.6:
        return str(Fraction(int(rng.integers(1, 20)), 20).__float__())        # 0.05 .. 0.95
    return f"0.{int(rng.integers(1, 100)):02d}".rstrip("0")                   # 0.41, 0.07, ...


def _features(rng) -> list[Feature]:
    fs = []
    if rng.random() < 0.6:
        fs.append(Feature("P", "bool", protected=True))
    else:
        fs.append(Feature("P", "cat", cats=tuple("abc"[:int(rng.integers(2, 4))]), protected=True))
    if rng.random() < 0.15:
        fs.append(Feature("G", "bool", protected=True))
    for i in range(int(rng.integers(2, 6))):
        if rng.random() < 0.65:
            fs.append(Feature(f"B{i}", "bool"))
        else:
            fs.append(Feature(f"C{i}", "cat", cats=tuple(f"v{j}" for j in range(int(rng.integers(2, 4))))))
    return fs


def _event(f: Feature, v: int) -> str:
    if f.kind == "bool":
        return f.name if v else f"not {f.name}"
    return f"{f.name} = {f.cats[v]}"


def _network(rng, fs: list[Feature]):
    """Parents (0-2 of the protected and earlier features) and a CPT per non-protected
    feature: {feature index: (parents, {parent values: [Fraction per value]}, text lines)}."""
    cpts = {}
    lines = []
    for i, f in enumerate(fs):
        if f.protected:
            continue
        cands = list(range(i))
        k = min(len(cands), int(rng.choice([0, 1, 1, 2])))
        parents = tuple(sorted(rng.choice(cands, size=k, replace=False).tolist())) if k else ()
        table = {}
        for pv in itertools.product(*[range(fs[j].size) for j in parents]):
            cond = ", ".join(_event(fs[j], v) for j, v in zip(parents, pv))
            bar = f" | {cond}" if cond else ""
            if f.kind == "bool":
                p = _prob(rng)
                table[pv] = [1 - Fraction(p), Fraction(p)]
                lines.append(f"  p({f.name}{bar}) = {p}")
            else:
                left = Fraction(1)
                probs = []
                for c in range(f.size - 1):
                    p = _prob(rng)
                    while Fraction(p) > left:
                        p = decimal_text(left * Fraction(int(rng.integers(0, 5)), 4)) or "0"
                    probs.append(Fraction(p))
                    left -= Fraction(p)
                    lines.append(f"  p({f.name} = {f.cats[c]}{bar}) = {p}")
                probs.append(left)
                table[pv] = probs
        cpts[i] = (parents, table)
    return cpts, lines


# ------------------------------------------------------------------ classifiers


def _term(rng, fs, i) -> tuple[str, callable]:
    f = fs[i]
    if f.kind == "bool":
        return f.name, (lambda x, i=i: x[i] == 1)
    c = int(rng.integers(0, f.size))
    if rng.random() < 0.8:
        return f"({f.name} == {f.cats[c]})", (lambda x, i=i, c=c: x[i] == c)
    return f"({f.name} != {f.cats[c]})", (lambda x, i=i, c=c: x[i] != c)


def _linear_rule(rng, fs):
    n = len(fs)
    k = int(rng.integers(2, min(n, 5) + 1))
    idx = rng.choice(n, size=k, replace=False)
    parts, fns = [], []
    for i in idx:
        w = str(rng.choice(["1", "1", "2", "-1", "-2", "0.5", "-0.5", "1.5"]))
        text, fn = _term(rng, fs, int(i))
        parts.append((w, text))
        fns.append((Fraction(w), fn))
    t = str(rng.choice(["0", "0.5", "1", "1.5", "2", "-0.5", "2.5"]))
    op = str(rng.choice([">=", ">", "<=", "<"]))
    expr = ""
    for j, (w, text) in enumerate(parts):
        sign = "-" if w.startswith("-") else "+"
        mag = w.lstrip("-")
        term = text if mag == "1" else f"{mag}*{text}"
        if j == 0:
            # a leading minus on a Boolean test is written -1*B (the language has no unary minus on a
            # condition: `- B` is FS301, while `x - B` and `2*B` read B as 0/1)
            expr += f"-{mag}*{text}" if sign == "-" else term
        else:
            expr += f" {sign} {term}"
    text = f"{expr} {op} {t}"

    def decide(x):
        s = sum((w for w, fn in fns if fn(x)), Fraction(0))
        return {">=": s >= Fraction(t), ">": s > Fraction(t), "<=": s <= Fraction(t), "<": s < Fraction(t)}[op]

    return text, decide


def _bool_rule(rng, fs, depth=0):
    """A random and/or/not formula over tests: (text, decide)."""
    if depth >= 2 or rng.random() < 0.3:
        i = int(rng.integers(0, len(fs)))
        text, fn = _term(rng, fs, i)
        if rng.random() < 0.3:
            return f"not {text}", (lambda x, fn=fn: not fn(x))
        return text, fn
    k = int(rng.integers(2, 4))
    subs = [_bool_rule(rng, fs, depth + 1) for _ in range(k)]
    op = "and" if rng.random() < 0.5 else "or"
    text = f" {op} ".join(f"({t})" for t, _ in subs)
    if op == "and":
        return text, (lambda x, subs=subs: all(fn(x) for _, fn in subs))
    return text, (lambda x, subs=subs: any(fn(x) for _, fn in subs))


def _tree(rng, fs, P, files, info):
    import warnings

    import skops.io as sio
    from sklearn.tree import DecisionTreeClassifier

    encs = []
    for f in fs:
        if f.kind == "bool":
            encs.append(Enc(f, "raw" if rng.random() < 0.7 else "onehot"))
        else:
            encs.append(Enc(f, "onehot" if rng.random() < 0.6 else "code"))
    names = [f.name for f in fs]
    X = encode_points(encs, P, names)
    w = rng.normal(0, 1, X.shape[1])
    y = (X @ w + rng.normal(0, 0.5, X.shape[0]) > np.median(X @ w)).astype(int)
    if y.min() == y.max():
        y[0] = 1 - y[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DecisionTreeClassifier(max_depth=int(rng.integers(1, 4)), random_state=0).fit(X, y)
    data = sio.dumps(est)
    files["t.skops"] = data
    est2 = sio.loads(data, trusted=sio.get_untrusted_types(data=data))
    pred = est2.predict(X) == est2.classes_[1]
    info["tree_leaves"] = int(est.get_n_leaves())
    enc_text = "encode W for clf {\n" + "\n".join(f"  {e.feature.name} : {e.text()}" for e in encs) + "\n}\n"
    return 'model clf = sklearn("t.skops")\n' + enc_text, pred


# ------------------------------------------------------------------ truth


def _ppvs(fs, cpts, P: np.ndarray, decided: np.ndarray, groups: list[int]) -> dict:
    """{group values: PPV as a Fraction} -- Pr[decision | group] over the declared network."""
    prot = [i for i, f in enumerate(fs) if f.protected]
    out = {}
    for gv in itertools.product(*[range(fs[i].size) for i in prot]):
        mask = np.all(P[:, prot] == np.array(gv), axis=1) if prot else np.ones(P.shape[0], bool)
        num = Fraction(0)
        for r in np.flatnonzero(mask):
            x = P[r]
            pr = Fraction(1)
            for i, (parents, table) in cpts.items():
                pr *= table[tuple(int(x[j]) for j in parents)][int(x[i])]
                if pr == 0:
                    break
            if pr and decided[r]:
                num += pr
        out[gv] = num
    # groups: the protected features grouped on (all of them, so every group is a chosen value)
    return out


def _metric(name: str, ppv: dict):
    vals = list(ppv.values())
    hi, lo = max(vals), min(vals)
    if name == "most_favoured":
        return hi
    if name == "least_favoured":
        return lo
    if name == "statistical_parity":
        return hi - lo
    return None if hi == 0 else lo / hi


def generate(seed: int, n_props: int = 8) -> Instance:
    rng = np.random.default_rng([22, seed])
    fs = _features(rng)
    cpts, lines = _network(rng, fs)
    from .core import grid

    P = grid(fs)
    files: dict = {}
    info: dict = {"features": [f.decl().strip() for f in fs], "points": int(P.shape[0])}
    r = rng.random()
    if r < 0.4:
        kind = "linear"
        text, fn = _linear_rule(rng, fs)
        decl = f"model clf = rule({text})\n"
        decided = np.array([bool(fn(x)) for x in P])
    elif r < 0.75:
        kind = "boolean"
        text, fn = _bool_rule(rng, fs)
        decl = f"model clf = rule({text})\n"
        decided = np.array([bool(fn(x)) for x in P])
    else:
        kind = "tree"
        decl, decided = _tree(rng, fs, P, files, info)
    info["classifier"] = kind
    ppv = _ppvs(fs, cpts, P, decided, [])
    info["ppv"] = {",".join(map(str, k)): str(v) for k, v in ppv.items()}
    prot = [f for f in fs if f.protected]
    groups = " x ".join(f.name for f in prot)
    spec = ("features W {\n" + "\n".join(f.decl() for f in fs) + "\n}\n" + decl +
            "distribution d {\n" + "\n".join(lines) + "\n}\n")
    backends = {"linear": ["default", "dp"], "boolean": ["default", "ssat"],
                "tree": ["default", "ssat", "elimination"]}[kind]
    props = []
    for k in range(n_props):
        metric = METRICS[int(rng.integers(0, len(METRICS)))]
        value = _metric(metric, ppv)
        if value is None:
            metric = "statistical_parity"
            value = _metric(metric, ppv)
        upper = metric == "statistical_parity" or (metric != "disparate_impact" and rng.random() < 0.3)
        op = ("<=" if rng.random() < 0.5 else "<") if upper else (">=" if rng.random() < 0.5 else ">")
        exact_text = decimal_text(value)
        c = rng.random()
        if exact_text is not None and c < 0.5:
            thr = exact_text                                   # the threshold is the exact value
        elif c < 0.8:
            thr = f"{float(value) + float(rng.choice([-1, 1])) * float(rng.choice([1e-9, 1e-4, 0.01, 0.1])):.12g}"
        else:
            thr = str(rng.choice(["0.1", "0.2", "0.5", "0.8", "0.41", "0.25"]))
        if thr.startswith("-") or "e" in thr:
            thr = "0"
        if Fraction(thr) > 1:                              # every metric here lies in [0, 1] (FS307)
            thr = "1"
        if op == ">" and Fraction(thr) >= 1:    # every metric here lies in [0, 1]: never met, FS507 at lint
            op = ">="
        if op == "<" and Fraction(thr) <= 0:    # (a difference, a rate or a ratio below 0 too)
            op = "<="
        backend = backends[int(rng.integers(0, len(backends)))]
        lines_p = [f"{metric}(clf, groups {groups}, distribution d) {op} {thr}"]
        if backend != "default":
            lines_p.append(f"using {backend}")
        if metric in ("most_favoured", "least_favoured") and rng.random() < 0.3:
            lines_p.append("method = learn")
        lines_p.append("timeout = 20s")
        name = f"q{k}"
        body = f"property {name} {{\n  " + "\n  ".join(lines_p) + "\n}"
        status = "holds" if claim_holds(value, op, thr) else "violated"
        truth = Truth(status, value=float(value), value_kind="metric", domain=int(P.shape[0]),
                      note=f"exact value {value}", exact=value)
        props.append(Prop(name, FAMILY, body, truth, {"metric": metric, "op": op, "threshold": thr,
                                                      "backend": backend, "kind": kind,
                                                      "tie": value == Fraction(thr)}, 20))
    if seed >= CAUSAL_FROM:       # session 34: influence and path_specific over the declared network
        props += causal_props(seed, fs, cpts, P, decided, groups, backends, kind, decl, len(props), FAMILY)
    inst = Instance(FAMILY, seed, spec, files, props, info)
    if seed >= FROM_DATA_FROM:
        inst.spec = _from_data(seed, fs, cpts, P, decided, groups, backends, files, info, props, spec)
        inst.judge = _judge
    return inst


# ------------------------------------------------------------------ session 32: distributions estimated from data

#: instance seeds from here on also get rows drawn from the declared network and properties over
#: ``independent(dd)`` and ``conditional(dd)`` estimated from them (earlier instances are unchanged)
FROM_DATA_FROM = 85_000_000


def _joint(fs, cpts, P, pa):
    """Each grid point's probability (Fractions): the protected values' ``pa`` times the declared network."""
    prot = [i for i, f in enumerate(fs) if f.protected]
    out = []
    for x in P:
        pr = Fraction(1)
        for i in prot:
            pr *= pa[i][int(x[i])]
        for i, (parents, table) in cpts.items():
            if not pr:
                break
            pr *= table[tuple(int(x[j]) for j in parents)][int(x[i])]
        out.append(pr)
    return out


def _model_ppvs(kind, fs, P, decided, J):
    """{group: PPV} under ``independent`` (each non-protected feature's marginal, whatever the group) or
    ``conditional`` (each non-protected feature's marginal given the protected features, jointly) fitted to the
    joint ``J`` (Fractions per grid point, true or the rows' frequencies); None when a group has probability 0."""
    prot = [i for i, f in enumerate(fs) if f.protected]
    rest = [i for i, f in enumerate(fs) if not f.protected]
    key = [tuple(int(x[i]) for i in prot) for x in P]
    mass = {}
    for k, j in zip(key, J):
        mass[k] = mass.get(k, Fraction(0)) + j
    if any(v == 0 for v in mass.values()):
        return None
    marg = {}                       # (group or None, feature, value) -> probability
    for x, k, j in zip(P, key, J):
        g = k if kind == "conditional" else None
        for i in rest:
            marg[(g, i, int(x[i]))] = marg.get((g, i, int(x[i])), Fraction(0)) + j
    out = {}
    for x, k, d in zip(P, key, decided):
        g = k if kind == "conditional" else None
        norm = mass[k] if kind == "conditional" else Fraction(1)
        pr = Fraction(1)
        for i in rest:
            pr *= marg.get((g, i, int(x[i])), Fraction(0)) / norm
        out[k] = out.get(k, Fraction(0)) + (pr if d else 0)
    return out


def _from_data(seed, fs, cpts, P, decided, groups, backends, files, info, props, spec):
    """Rows drawn from the declared network (the protected values with probabilities of their own), written to
    dd.csv (``features W from dd``), and four properties over ``independent(dd)`` / ``conditional(dd)``: fairspec's
    value must be the metric of the distribution fitted to the rows (exact: their frequencies), its verdict that
    of the distribution fitted to the true network (README 'Backends': `holds (estimated)` only when the whole
    error bound satisfies the claim, a `violated` likewise; the bound's miss has probability at most 1 - confidence)."""
    rng = np.random.default_rng([22, seed, 85])
    pa = {}
    for i, f in enumerate(fs):
        if f.protected:
            w = rng.integers(1, 6, f.size)
            pa[i] = [Fraction(int(v), int(w.sum())) for v in w]
    J = _joint(fs, cpts, P, pa)
    n = int(rng.choice([300, 2000, 20000]))
    pr = np.array([float(j) for j in J])
    idx = rng.choice(len(P), size=n, p=pr / pr.sum())
    counts = np.bincount(idx, minlength=len(P))
    F = [Fraction(int(c), n) for c in counts]
    rows = [",".join(f.csv(v) for f, v in zip(fs, P[r])) for r in idx]
    files["dd.csv"] = (",".join(f.name for f in fs) + "\n" + "\n".join(rows) + "\n").encode()
    spec = 'data dd = csv("dd.csv")\n' + spec.replace("features W {", "features W from dd {", 1)
    spec += "distribution ind = independent(dd)\ndistribution cond = conditional(dd)\n"
    info["rows"] = n
    k0 = len(props)
    for k in range(k0, k0 + 4):
        kind = "independent" if rng.random() < 0.5 else "conditional"
        if k == k0 + 3 and rng.random() < 0.7:        # bayes(dd): judged on the structure it learns (_judge)
            props.append(_bayes_prop(rng, k, fs, P, decided, J, F, groups, n))
            if "distribution bn" not in spec:
                spec += "distribution bn = bayes(dd)\n"
            continue
        true, est = _model_ppvs(kind, fs, P, decided, J), _model_ppvs(kind, fs, P, decided, F)
        if true is None or est is None:
            continue
        metric = str(rng.choice(["statistical_parity", "most_favoured", "least_favoured", "disparate_impact"]))
        tv, ev = _metric(metric, true), _metric(metric, est)
        if tv is None or ev is None:
            metric = "statistical_parity"
            tv, ev = _metric(metric, true), _metric(metric, est)
        upper = metric == "statistical_parity" or (metric != "disparate_impact" and rng.random() < 0.3)
        op = ("<=" if rng.random() < 0.5 else "<") if upper else (">=" if rng.random() < 0.5 else ">")
        c = rng.random()
        base = tv if c < 0.5 else ev
        thr = decimal_text(base) if c < 0.2 else None
        if thr is None:
            thr = f"{float(base) + float(rng.choice([-1, 1])) * float(rng.choice([0.01, 0.05, 0.2, 0.4])):.6g}"
        if thr.startswith("-") or "e" in thr:
            thr = "0"
        if Fraction(thr) > 1:
            thr = "1"
        if op == ">" and Fraction(thr) >= 1:
            op = ">="
        if op == "<" and Fraction(thr) <= 0:
            op = "<="
        backend = backends[int(rng.integers(0, len(backends)))]
        dist = "ind" if kind == "independent" else "cond"
        lines_p = [f"{metric}(clf, groups {groups}, distribution {dist}) {op} {thr}"]
        if backend != "default":
            lines_p.append(f"using {backend}")
        conf = str(rng.choice(["", "0.99", "0.999"]))
        if conf:
            lines_p.append(f"confidence = {conf}")
        lines_p.append("timeout = 20s")
        name = f"q{k}"
        body = f"property {name} {{\n  " + "\n  ".join(lines_p) + "\n}"
        status = "holds" if claim_holds(tv, op, thr) else "violated"
        truth = Truth(status, value=float(ev), value_kind="metric", domain=-1,
                      note=f"{kind} fitted to the true network: {tv}; to the {n} rows: {ev}", exact=ev)
        props.append(Prop(name, FAMILY, body, truth, {"metric": metric, "op": op, "threshold": thr,
                                                      "backend": backend, "kind": kind, "from_data": True,
                                                      "rows": n, "point_value": True, "true_value": str(tv),
                                                      "tie": tv == Fraction(thr)}, 20))
    if seed >= BOOTSTRAP_FROM:
        props += _bootstrap_props(seed, fs, P, decided, J, F, groups, n, len(props))
    return spec


#: session 33: from this instance seed on, two more properties over the distributions estimated from the rows
#: decide by ``bootstrap = N`` (README 'Backends': the percentile interval over N networks re-estimated from
#: resamples of the rows) instead of the rigorous bound (earlier instances are unchanged)
BOOTSTRAP_FROM = 90_000_000


def _bootstrap_props(seed, fs, P, decided, J, F, groups, n, k0, count=2):
    """``bootstrap = N`` over ``independent(dd)`` / ``conditional(dd)``: the value must be the metric of the
    distribution fitted to the rows (exact), a `holds (estimated)` / `violated` must have its whole interval on
    its side of the threshold (``_judge``), and a verdict that the true network's value contradicts is a miss of
    the percentile interval, recorded (``meta["bootstrap_miss"]``) but not wrong: the interval promises no
    coverage."""
    rng = np.random.default_rng([22, seed, 90])
    out = []
    for k in range(k0, k0 + count):
        kind = "independent" if rng.random() < 0.5 else "conditional"
        true, est = _model_ppvs(kind, fs, P, decided, J), _model_ppvs(kind, fs, P, decided, F)
        if true is None or est is None:
            continue
        metric = str(rng.choice(["statistical_parity", "most_favoured", "least_favoured", "disparate_impact"]))
        tv, ev = _metric(metric, true), _metric(metric, est)
        if tv is None or ev is None:
            metric = "statistical_parity"
            tv, ev = _metric(metric, true), _metric(metric, est)
        upper = metric == "statistical_parity" or (metric != "disparate_impact" and rng.random() < 0.3)
        op = ("<=" if rng.random() < 0.5 else "<") if upper else (">=" if rng.random() < 0.5 else ">")
        c = rng.random()
        thr = decimal_text(ev) if c < 0.2 else None
        if thr is None:
            thr = f"{float(ev) + float(rng.choice([-1, 1])) * float(rng.choice([0.01, 0.05, 0.2, 0.4])):.6g}"
        if thr.startswith("-") or "e" in thr:
            thr = "0"
        if Fraction(thr) > 1:
            thr = "1"
        if op == ">" and Fraction(thr) >= 1:
            op = ">="
        if op == "<" and Fraction(thr) <= 0:
            op = "<="
        dist = "ind" if kind == "independent" else "cond"
        boot = int(rng.choice([50, 200]))
        lines_p = [f"{metric}(clf, groups {groups}, distribution {dist}) {op} {thr}", f"bootstrap = {boot}",
                   f"seed = {k}"]
        conf = str(rng.choice(["", "0.9", "0.99"]))
        if conf:
            lines_p.append(f"confidence = {conf}")
        lines_p.append("timeout = 30s")
        name = f"q{k}"
        body = f"property {name} {{\n  " + "\n  ".join(lines_p) + "\n}"
        status = "holds" if claim_holds(tv, op, thr) else "violated"
        truth = Truth(status, value=float(ev), value_kind="metric", domain=-1,
                      note=f"{kind} fitted to the true network: {tv}; to the {n} rows: {ev}", exact=ev)
        out.append(Prop(name, FAMILY, body, truth, {"metric": metric, "op": op, "threshold": thr,
                                                    "backend": "default", "kind": kind, "from_data": True,
                                                    "rows": n, "point_value": True, "true_value": str(tv),
                                                    "bootstrap": boot, "tie": tv == Fraction(thr)}, 30))
    return out


def _bootstrap_judged(p, o, v):
    """A ``bootstrap = N`` property's outcome (``_bootstrap_props``): a verdict whose own interval does not lie on
    its side of the threshold is wrong (``interval``); a miss against the true network's value is not."""
    if not p.meta.get("bootstrap") or v is None or o.defect in ("crash", "missing", "value-wrong", "no-proof"):
        return o
    thr, op = Fraction(p.meta["threshold"]), p.meta["op"]
    at_end = (op == ">=" and thr == 1) or (op == "<=" and thr == 0)    # every metric here lies in [0, 1]
    if o.defect == "false-violation" and at_end:
        # a claim met only at its range's end: no percentile interval holds that end, so a violated there says
        # nothing about the population (README 'Backends'): wrong, as fairspec says unknown there since session 33
        o.why += " (a claim at the end of the metric's range, which a bootstrap interval cannot hold)"
        return o
    if o.defect in ("false-estimate", "false-violation"):
        o.meta = {**o.meta, "bootstrap_miss": o.why}
        o.klass, o.defect, o.why = "correct", "", ""
    if o.status in ("holds", "violated"):
        iv = ((v.get("details") or {}).get("bootstrap") or {}).get("interval")
        if o.status == "holds" and o.how != "estimated":
            o.klass, o.defect, o.why = "wrong", "interval", f"holds ({o.how}) from a bootstrap interval"
        elif iv is None:
            o.klass, o.defect, o.why = "wrong", "interval", f"{o.status} with no bootstrap interval in its details"
        else:
            want = o.status == "holds"
            ends = [claim_holds(x, p.meta["op"], p.meta["threshold"]) == want for x in iv]
            if not all(ends):
                o.klass, o.defect = "wrong", "interval"
                o.why = f"{o.status}, but its bootstrap interval {iv} is not on that side of {p.meta['threshold']}"
    return o


def _structure_ppvs(fs, P, decided, J, parents: dict):
    """{group: PPV} under the Bayesian network of structure ``parents`` (name -> parent names) fitted to the
    joint ``J`` (each CPT row the conditional frequency; a parent assignment of probability 0 takes the
    variable's marginal, as fairspec's estimation); None when a group has probability 0."""
    names = [f.name for f in fs]
    prot = [i for i, f in enumerate(fs) if f.protected]

    def mass(cond):
        return sum((j for x, j in zip(P, J) if all(int(x[i]) == v for i, v in cond)), Fraction(0))

    cache = {}

    def cpt(i, x):
        pa = tuple(names.index(q) for q in parents.get(names[i], ()))
        key = (i, int(x[i]), tuple(int(x[j]) for j in pa))
        if key not in cache:
            den = mass([(j, int(x[j])) for j in pa])
            if den == 0:
                den, pa = Fraction(1), ()
            cache[key] = mass([(j, int(x[j])) for j in pa] + [(i, int(x[i]))]) / den
        return cache[key]

    num, tot = {}, {}
    for x, d in zip(P, decided):
        pr = Fraction(1)
        for i in range(len(fs)):
            pr *= cpt(i, x)
            if not pr:
                break
        g = tuple(int(x[i]) for i in prot)
        tot[g] = tot.get(g, Fraction(0)) + pr
        num[g] = num.get(g, Fraction(0)) + (pr if d else 0)
    if any(v == 0 for v in tot.values()):
        return None
    return {g: num[g] / tot[g] for g in tot}


def _bayes_prop(rng, k, fs, P, decided, J, F, groups, n):
    metric = str(rng.choice(["statistical_parity", "most_favoured", "least_favoured"]))
    op = "<=" if metric == "statistical_parity" or rng.random() < 0.5 else ">="
    thr = str(rng.choice(["0.05", "0.1", "0.2", "0.3", "0.5", "0.7"]))
    body = (f"property q{k} {{\n  {metric}(clf, groups {groups}, distribution bn) {op} {thr}\n"
            "  timeout = 20s\n}")
    p = Prop(f"q{k}", FAMILY, body, Truth("unset", domain=-1, note="set by _judge from the learned structure"),
             {"metric": metric, "op": op, "threshold": thr, "backend": "default", "kind": "bayes",
              "from_data": True, "rows": n, "point_value": True}, 20)
    p.bayes = (fs, P, decided, J, F)
    return p


def _judge(spec, props, base):
    """The default judgement; a ``bayes(dd)`` property (``p.bayes``) is judged on the structure fairspec reports
    learning (``details.distribution.edges``): its value must be the metric of that structure fitted to the rows,
    its verdict that of the structure fitted to the true network (any structure is fairspec's to choose; its
    error bound is about the estimate within it)."""
    from .judge import _check_group, judge_verdict

    captured = {}

    def check(path):
        from fairspec.pipeline import check as real

        rep = real(path)
        for v in rep.verdicts:
            captured[v.name] = v.to_json()
        return rep

    outs = _check_group(spec, props, base, check=check)
    by_name = {p.name: p for p in props}
    for j, o in enumerate(outs):
        p = by_name[o.name]
        v = captured.get(o.name)
        if p.meta.get("bootstrap"):
            outs[j] = _bootstrap_judged(p, o, v)
            continue
        if not hasattr(p, "bayes") or v is None or o.defect == "crash":
            continue
        if o.klass == "correct":       # judged against the placeholder: no truth until the structure is read
            o.klass, o.why = "unknown", "no truth: the learned structure's distribution has a group of probability 0"
        edges = ((v.get("details") or {}).get("distribution") or {}).get("edges")
        if edges is None:
            o.why = "no truth: the verdict names no learned structure"
            continue
        parents: dict = {}
        for e in edges:
            a, b = (t.strip() for t in e.split("->"))
            parents.setdefault(b, []).append(a)
        fs, P, decided, J, F = p.bayes
        true, est = _structure_ppvs(fs, P, decided, J, parents), _structure_ppvs(fs, P, decided, F, parents)
        if true is None or est is None:
            continue
        tv, ev = _metric(p.meta["metric"], true), _metric(p.meta["metric"], est)
        status = "holds" if claim_holds(tv, p.meta["op"], p.meta["threshold"]) else "violated"
        p.truth = Truth(status, value=float(ev), value_kind="metric", domain=-1, exact=ev,
                        note=f"bayes structure {edges}: fitted to the true network {tv}; to the rows {ev}")
        o2 = judge_verdict(p, v, base)
        o2.meta = {**o2.meta, "edges": edges, "true_value": str(tv)}
        outs[j] = o2
    return outs
