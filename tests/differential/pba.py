"""PBA (ceteris-paribus neighbourhoods, paper 004) on small float32 ONNX ReLU networks with a
logit readout (one logit, or two logits with `index`): `pba(m, flip g, around d, delta
{...})`, with and without a share threshold, engines highs / scip / lp; from seed 85,000,000 on, half the
instances on a tree model (trees.py's: scikit-learn, XGBoost, LightGBM; the decision its predict, the score its
probability of class 1 as the library gives it) and two more properties on a seeded sample (``points = N``,
``seed``) with ``report by`` half the time (session 32).

The truth enumerates every case (a data row and its counterfactual, the flipped attribute
set to each other value present among the rows) and every offset of its integral
neighbourhood on onnxruntime: a case is eligible when both centres are classified as the
row's true class; it is verified when every offset that keeps both classifications has
``sigma * (g(x~) - g(x~')) > 0`` (g the runtime's logit of class 1 minus class 0,
sigma = +1 for class 1, -1 for class 0), refuted otherwise. A network's class is the argmax's (the first
largest column at a tie): with ``index = 0`` of two logits, g = 0 is class 1 (networks.readout).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np

from . import networks
from .core import (Enc, Feature, Instance, Prop, Truth, claim_holds, decimal_text, encode_points, witness_points,
                   write_csv)

FAMILY = "pba"


def _features(rng) -> list[Feature]:
    fs = []
    if rng.random() < 0.6:
        fs.append(Feature("g", "bool", protected=True))
    else:
        fs.append(Feature("g", "cat", cats=tuple("ABC"[:int(rng.integers(2, 4))]), protected=True))
    for k in range(int(rng.integers(1, 3))):
        lo = int(rng.choice([0, 0, 1, 17]))
        fs.append(Feature(f"n{k}", "int", lo=lo, hi=lo + int(rng.integers(2, 9))))
    if rng.random() < 0.5:
        fs.append(Feature("c", "cat", cats=("u", "v", "w")[:int(rng.integers(2, 4))]))
    if rng.random() < 0.4:
        fs.append(Feature("b", "bool"))
    return fs


def _encoding(rng, f: Feature) -> Enc:
    if f.kind == "int":
        return networks._encoding(rng, f, False)
    if f.protected and f.kind == "cat" and f.size > 2:
        return Enc(f, "onehot")                      # a flipped attribute: binary or one-hot
    return networks._encoding(rng, f, False)


def _g(head: str, Y: np.ndarray, index: int) -> np.ndarray:
    Y = np.asarray(Y, dtype=np.float64)
    if head == "logit1":
        return Y.reshape(-1)
    return Y[:, index] - Y[:, 1 - index]


def generate(seed: int, n_props: int = 4) -> Instance:
    rng = np.random.default_rng([23, seed])
    fs = _features(rng)
    encs = [_encoding(rng, f) for f in fs]
    names = [f.name for f in fs]
    n_rows = int(rng.integers(6, 20))
    from .core import grid

    P = grid(fs)
    rows = P[rng.integers(0, P.shape[0], size=n_rows)]
    X = encode_points(encs, P, names)
    head = "logit1" if rng.random() < 0.6 else "logit2"
    net = networks._net(rng, X.shape[1], head)
    info = {"head": head, "points": int(P.shape[0]), "encodings": {e.feature.name: e.text() for e in encs},
            "rows": n_rows}
    info.update(networks._ties(rng, net, X.astype(np.float32)))
    files = {"m.onnx": net.onnx_bytes()}
    Y_net = networks.run_onnx(files["m.onnx"], X.astype(np.float32))
    g_all = _g(head, Y_net, net.index)
    radix = [f.size for f in fs]
    offs = [f.lo if f.kind == "int" else 0 for f in fs]

    def idx(v):
        i = 0
        for a, r, o in zip(v, radix, offs):
            i = i * r + (int(a) - o)
        return i

    # session 32: from seed 85,000,000 on, half the instances take a tree model instead (trees.py's models, on
    # streams of their own; the network is drawn all the same, so the rows and labels stay drawn as before)
    model_decl = f'model m = onnx("m.onnx", output = "out"{f", index = {net.index}" if head == "logit2" else ""}, score = logit)'
    # the decision is the argmax's class (the first largest column at a tie, as class(m(x)) and README read
    # `index`): with index = 0 of two logits a tie g = 0 is class 1 (networks.readout, s36 h5); the row labels
    # below stay drawn from `g > 0` so that every instance's files are those of earlier campaigns (a property
    # drawn around the truth's share -- its threshold, and so the draws after it -- may differ at such a tie)
    dec_all, s_all = networks.readout(head, Y_net, net.index).label, g_all
    drawn_all = g_all > 0
    if seed >= SAMPLE_FROM and np.random.default_rng([23, seed, 9]).random() < 0.5:
        from . import trees

        files = {}
        model_decl, out = trees._model(np.random.default_rng([23, seed, 10]), X, P, fs, encs, files, info)
        if info.get("margin"):      # PBA compares the library's probabilities: keep them, and its predict
            model_decl = model_decl.replace(', output = "margin"', "").replace(', output = "decision_function"', "")
            if info["model"] in ("xgb", "lgbm"):
                out.label = out.prob > 0.5
            info["margin"] = False
        dec_all, s_all = np.asarray(out.label, dtype=bool), np.asarray(out.prob, dtype=np.float64)
        drawn_all = dec_all
        head = info["head"] = "tree"
    pred_rows = drawn_all[[idx(r) for r in rows]]
    # true labels: mostly the model's own decision (so points are eligible), some flipped
    labels = np.where(rng.random(n_rows) < 0.8, pred_rows, ~pred_rows).astype(int)
    files["d.csv"] = write_csv(fs, rows, {"y": labels})
    spec = ('data d = csv("d.csv", label = y == 1)\n'
            "features F from d {\n" + "\n".join(f.decl() for f in fs) + "\n}\n"
            f"{model_decl}\n"
            "encode F for m {\n" + "\n".join(f"  {e.feature.name} : {e.text()}" for e in encs) + "\n}\n")
    ints = [i for i, f in enumerate(fs) if f.kind == "int"]
    props = []
    for k in range(n_props):
        props.append(_property(rng, k, fs, rows, labels, ints, (dec_all, s_all), idx, X, head))
    if seed >= SAMPLE_FROM:
        props += _sampled_props(seed, fs, rows, labels, ints, (dec_all, s_all), idx, X, head)
    return Instance(FAMILY, seed, spec, files, props, info)


def _property(rng, k, fs, rows, labels, ints, outs, idx, X, head, name=None, extra=(), sel=None) -> Prop:
    """One pba property over the data rows ``rows`` (``sel``: the indices of the rows analysed, every row
    when None); ``extra``: option lines written before the timeout."""
    if sel is not None:
        rows, labels = rows[sel], labels[sel]
    moving = [i for i in ints if rng.random() < 0.7] or ints[:1]
    deltas = {i: int(rng.integers(0, 3)) for i in moving}
    cases = _case_truth(fs, rows, labels, deltas, outs, idx)
    elig = [c for c in cases if c["status"] != "excluded"]
    proved = sum(c["status"] == "proved" for c in elig)
    refuted = sum(c["status"] == "refuted" for c in elig)
    n_points = sum(c["size"] for c in cases) * 2
    op, thr = None, None
    if rng.random() < 0.5:
        op = str(rng.choice([">=", ">", "<=", "<"]))
        share = Fraction(proved, len(elig)) if elig else Fraction(0)
        t = decimal_text(share)
        thr = t if (t is not None and rng.random() < 0.5) else str(rng.choice(["0", "0.5", "0.8", "1", "0.25"]))
        if (op == ">" and Fraction(thr) >= 1) or (op == "<" and Fraction(thr) <= 0):
            op += "="                           # a share is in [0, 1]: `> 1` / `< 0` are FS507 (never met)
    if not elig:
        status = "vacuous"                      # no eligible point: PBA has nothing to verify
    elif op is None:
        status = "violated" if refuted else "holds"
    else:
        status = "holds" if claim_holds(Fraction(proved, len(elig)), op, thr) else "violated"
    delta_text = ", ".join(f"{fs[i].name}: {d}" for i, d in deltas.items())
    lines = [f"pba(m, flip g, around d, delta {{{delta_text}}})" + (f" {op} {thr}" if op else "")]
    engine = str(rng.choice(["highs", "highs", "scip", "lp"]))
    if engine != "highs":
        lines.append(f"engine = {engine}")
    lines += list(extra)
    lines.append("timeout = 30s")
    name = name or f"b{k}"
    body = f"property {name} {{\n  " + "\n  ".join(lines) + "\n}"
    share = Fraction(proved, len(elig)) if elig else None
    truth = Truth(status, value=float(share) if share is not None else None,
                  value_kind="share" if share is not None else None,
                  check_witness=_witness_checker(fs, rows, labels, deltas, outs, idx, cases, X),
                  domain=n_points, note=f"{proved} proved, {refuted} refuted of {len(elig)} eligible",
                  exact=share)
    # an engine = lp run proves no more than the LP relaxation: `unknown` points are legitimate
    return Prop(name, FAMILY, body, truth, {"engine": engine, "op": op, "threshold": thr, "incomplete": engine == "lp",
                                            "head": head, "deltas": {fs[i].name: d for i, d in deltas.items()}}, 30)


#: session 32: from this instance seed on, two more properties analyse a sample (``points = N``, the README's
#: "analyse a random sample of at most N points", kinds/pba.py: "a seeded subset of N of the selected rows",
#: numpy's default_rng(seed).choice of N row indices without replacement, sorted; seed 0 unless written) and
#: half of them ``report by`` a feature (a table only: the verdict is the same)
SAMPLE_FROM = 85_000_000


def _sampled_props(seed, fs, rows, labels, ints, outs, idx, X, head) -> list:
    rng = np.random.default_rng([23, seed, 5])
    out = []
    for j in range(2):
        n = rows.shape[0]
        N = int(rng.integers(1, n + 1))
        extra = [f"points = {N}"]
        s = None
        if rng.random() < 0.6:
            s = int(rng.integers(0, 5))
            extra.append(f"seed = {s}")
        sel = np.arange(n) if N >= n else np.sort(np.random.default_rng(s or 0).choice(np.arange(n), N, replace=False))
        if rng.random() < 0.5:
            cands = [f.name for f in fs if f.kind != "int"]
            by = [cands[int(rng.integers(0, len(cands)))]]
            if len(cands) > 1 and rng.random() < 0.4:
                by = cands[:2]
            extra.append("report by " + " x ".join(by))
        p = _property(rng, 10 + j, fs, rows, labels, ints, outs, idx, X, head, name=f"bs{j}", extra=extra, sel=sel)
        p.meta.update(points=N, sample=sel.tolist())
        out.append(p)
    return out


def _flip_targets(fs, rows):
    g = fs[0]
    own = rows[:, 0]
    present = np.unique(own)
    pool = present if len(present) >= 2 else np.arange(g.size)
    out = []
    for r in range(rows.shape[0]):
        for v in pool:
            if v != own[r]:
                out.append((r, int(v)))
    return out


def _offsets(fs, row, deltas):
    axes = []
    for i, d in deltas.items():
        f = fs[i]
        v = int(row[i])
        axes.append(range(max(v - d, f.lo) - v, min(v + d, f.hi) - v + 1))
    return list(itertools.product(*axes)) if axes else [()]


def _case_truth(fs, rows, labels, deltas, outs, idx):
    cases = []
    dec, sc = outs
    for r, t in _flip_targets(fs, rows):
        c = int(labels[r])
        sigma = 1 if c == 1 else -1
        x0 = rows[r].copy()
        xp0 = x0.copy()
        xp0[0] = t
        eligible = (dec[idx(x0)] == bool(c)) and (dec[idx(xp0)] == bool(c))
        offs = _offsets(fs, x0, deltas)
        if not eligible:
            cases.append({"row": r, "target": t, "status": "excluded", "size": len(offs)})
            continue
        status = "proved"
        for d in offs:
            x, xp = x0.copy(), xp0.copy()
            for (i, _), o in zip(deltas.items(), d):
                x[i] += o
                xp[i] += o
            a, b = sc[idx(x)], sc[idx(xp)]
            if dec[idx(x)] == bool(c) and dec[idx(xp)] == bool(c):
                if sigma * (a - b) <= 0:         # float64 difference of float32 values: exact
                    status = "refuted"
                    break
        cases.append({"row": r, "target": t, "status": status, "size": len(offs)})
    return cases


def _witness_checker(fs, rows, labels, deltas, outs, idx, cases, X):
    def check(w: dict):
        if not w:
            return None                     # a share-threshold violation need not carry a witness
        pts = witness_points(w, fs)
        if isinstance(pts, str):
            return pts
        pts = [np.array(v) for v in pts]
        x, xp = pts
        for side, p in (("x", x), ("x_prime", xp)):
            if w.get(side) is not None:
                got = np.asarray(w[side], dtype=np.float64)
                want = X[idx(p)]
                if got.shape != want.shape or not np.allclose(got, want, rtol=1e-9, atol=1e-12):
                    return f"the witness's {side} {got.tolist()} is not the encoding of its features {want.tolist()}"
        moving = set(deltas)
        for case in cases:
            if case["status"] == "excluded":
                continue
            r, t = case["row"], case["target"]
            row = rows[r]
            if xp[0] != t or x[0] != row[0]:
                continue
            if any(x[i] != row[i] or xp[i] != row[i] for i in range(1, len(fs)) if i not in moving):
                continue
            if any(x[i] != xp[i] or abs(int(x[i]) - int(row[i])) > deltas[i] for i in moving):
                continue
            c = int(labels[r])
            a, b = outs[1][idx(x)], outs[1][idx(xp)]
            if outs[0][idx(x)] == bool(c) and outs[0][idx(xp)] == bool(c) and (1 if c else -1) * (a - b) <= 0:
                return None
        return "the witness pair is no refuting offset of any eligible case's neighbourhood on the runtime"

    return check
