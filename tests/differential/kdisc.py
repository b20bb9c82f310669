"""k-discrimination (HyFair) over networks and tree models: `k_discrimination(m, over {...},
eps = e) < c` (and `<=`), on float32 ONNX nets (logit or probability heads; about half the one-output
ones saved for torch instead) and the tree libraries (scikit-learn, XGBoost, LightGBM).

The truth enumerates every individual (a point of the features not in `over`) with its K
counterfactuals (every combination of the `over` features' values) on the model's runtime:
k = the number of distinct buckets floor(p / eps) (the last bucket closed) of the K
probabilities, computed exactly (p read as the exact value of the runtime's number, eps as
the decimal the spec writes); the claim is decided on the exact max k. Probabilities of a
logit model are the real sigmoid of the runtime's logit (a bucket boundary within 1e-9 of
such a value leaves the property ambiguous).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np

from . import networks, trees
from .core import Feature, Instance, Prop, Truth, encode_points, grid, witness_points, write_csv

FAMILY = "kdisc"


def _bucket(p: float, eps: Fraction) -> int:
    """floor(p / eps) in exact arithmetic, clipped to the ceil(1 / eps) buckets (the last closed)."""
    q = Fraction(float(p))
    n = Fraction(1) / eps
    nb = n.numerator // n.denominator + (n.denominator != 1)
    b = (q / eps).__floor__() if q > 0 else 0
    return min(max(int(b), 0), nb - 1)


def _features(rng) -> list[Feature]:
    fs = [Feature("g", "cat", cats=tuple("ABC"[:int(rng.integers(2, 4))]), protected=True)]
    if rng.random() < 0.5:
        fs.append(Feature("h", "bool", protected=True))
    for k in range(int(rng.integers(1, 4))):
        if rng.random() < 0.6:
            lo = int(rng.choice([0, 1, 17]))
            fs.append(Feature(f"n{k}", "int", lo=lo, hi=lo + int(rng.integers(1, 6))))
        else:
            fs.append(Feature(f"c{k}", "cat", cats=tuple(f"v{j}" for j in range(int(rng.integers(2, 4))))))
    return fs


def generate(seed: int, n_props: int = 4) -> Instance:
    rng = np.random.default_rng([24, seed])
    while True:
        fs = _features(rng)
        size = int(np.prod([f.size for f in fs]))
        if size <= 800:
            break
    names = [f.name for f in fs]
    has_data = rng.random() < 0.3
    encs = [networks._encoding(rng, f, False) for f in fs]
    P = grid(fs)
    X = encode_points(encs, P, names)
    files: dict = {}
    info = {"points": int(P.shape[0]), "encodings": {e.feature.name: e.text() for e in encs}}
    if rng.random() < 0.5:
        head = str(rng.choice(["logit1", "sigmoid1", "logit2", "prob2"]))
        net = networks._net(rng, X.shape[1], head)
        info.update(networks._ties(rng, net, X.astype(np.float32)))
        score = "logit" if head in ("logit1", "logit2") else "prob"
        # torch for about half the one-output networks, from a stream of its own (the onnx instances stay
        # as they were, and these keep their network): it rounds one point differently in batches of other sizes or orders
        if head in ("logit1", "sigmoid1") and np.random.default_rng([24, seed, 17]).random() < 0.5:
            dtype = networks.torch_dtype(seed)
            files["m.pt"] = net.torch_bytes(dtype)
            Y = networks.run_torch(files["m.pt"], X.astype(dtype))
            info["dtype"] = dtype
            decl = f'model m = torch("m.pt", score = {score})'
            info.update(model="torch", head=head)
        else:
            dtype = networks.onnx_dtype(seed)
            files["m.onnx"] = net.onnx_bytes(dtype)
            Y = networks.run_onnx(files["m.onnx"], X.astype(dtype))
            idx = f", index = {net.index}" if head in ("logit2", "prob2") else ""
            decl = f'model m = onnx("m.onnx", output = "out"{idx}, score = {score})'
            info.update(model="onnx", head=head, dtype=dtype)
        out = networks.readout(head, Y, net.index)
    else:
        decl, out = trees._model(rng, X, P, fs, encs, files, info)
        if info.get("margin"):                     # k-discrimination reads probabilities: keep the prob output
            decl = decl.replace(', output = "margin"', "").replace(', output = "decision_function"', "")
            info["margin"] = False
    if has_data:
        rows = P[rng.integers(0, P.shape[0], size=int(rng.integers(5, 20)))]
        files["d.csv"] = write_csv(fs, rows, {"y": rng.integers(0, 2, size=rows.shape[0])})
    spec = ""
    if has_data:
        spec += 'data d = csv("d.csv", label = y == 1)\n'
    spec += "features F" + (" from d" if has_data else "") + " {\n" + "\n".join(f.decl() for f in fs) + "\n}\n"
    spec += decl + "\n"
    spec += "encode F for m {\n" + "\n".join(f"  {e.feature.name} : {e.text()}" for e in encs) + "\n}\n"

    if out.prob is not None:
        probs, real_sigmoid = out.prob, False
    else:
        probs, real_sigmoid = 1.0 / (1.0 + np.exp(-out.logit)), True
    protected = [i for i, f in enumerate(fs) if f.protected]
    props = []
    # a third of the properties give the search no budget of their own (no `search ... for`: its first
    # iterations and the early branch and bound run before it, and the search takes half the timeout) and
    # a short timeout, some of them with `explain tree`; from a stream of their own, so the instances'
    # models, claims and truths stay as they were
    shape = np.random.default_rng([24, seed, 31])
    for k in range(n_props):
        over = protected if rng.random() < 0.7 else protected[:1]
        eps_text = str(rng.choice(["0.05", "0.1", "0.25", "0.2", "0.125", "0.3"]))
        eps = Fraction(eps_text)
        kmax, ambiguous, best = _max_k(fs, P, probs, over, eps, real_sigmoid)
        K = int(np.prod([fs[i].size for i in over]))
        op = "<" if rng.random() < 0.6 else "<="
        c = max(1, kmax + int(rng.choice([-1, 0, 0, 1])))
        if op == "<" and c <= 1:  # k >= 1 always: '< 1' is never met (FS507 at lint)
            op = "<="
        violated = (kmax >= c) if op == "<" else (kmax > c)
        status = "ambiguous" if ambiguous else ("violated" if violated else "holds")
        over_text = ", ".join(fs[i].name for i in over)
        search = str(rng.choice(["random", "annealing", "knn"]))
        claim = f"k_discrimination(m, over {{{over_text}}}, eps = {eps_text}) {op} {c}"
        if shape.random() < 1 / 3:
            timeout = int(shape.choice([4, 6]))
            lines = [claim, f"search {search}", f"timeout = {timeout}s"]
            if shape.random() < 0.3:
                lines.append("explain tree")
        else:
            timeout = 20
            lines = [claim, f"search {search} for 3s", "timeout = 20s"]
        name = f"k{k}"
        body = f"property {name} {{\n  " + "\n  ".join(lines) + "\n}"
        truth = Truth(status, value=float(kmax), value_kind="k",
                      check_witness=_witness_checker(fs, P, probs, over, eps, real_sigmoid, X,
                                                     c if op == "<" else c + 1),
                      domain=int(P.shape[0]), note=f"max k = {kmax} of K = {K}")
        props.append(Prop(name, FAMILY, body, truth, {"op": op, "k": c, "eps": eps_text, "K": K,
                                                      "model": info.get("model"), "head": info.get("head"),
                                                      "runtime": info.get("model"),
                                                      "search": "budget" if timeout == 20 else "none"}, timeout))
    if seed >= BANDS_FROM:
        spec = _banded_props(seed, fs, P, probs, real_sigmoid, X, info, spec, props)
    inst = Instance(FAMILY, seed, spec, files, props, info)
    if seed >= EXPLAIN_FROM:        # session 34: `explain tree` on more properties, its report judged
        from .kdisc_explain import add_explain, judge

        add_explain(seed, props, fs, P, probs, real_sigmoid)
        inst.judge = judge
    return inst


#: session 32: from this instance seed on, an int feature is declared with ``bins [..]`` and one or two more
#: properties put it in ``over`` (README: "a numeric feature declared with bins (age ... bins [39]) adds one
#: counterfactual age per band")
BANDS_FROM = 85_000_000
#: session 34 (kdisc_explain.py)
EXPLAIN_FROM = 103_000_000


def _bands(f, edges) -> list[tuple[int, int]]:
    """An int feature's bands cut by right-closed bins inside its range: [lo, e0], [e0 + 1, e1], ..."""
    out, start = [], f.lo
    for e in list(edges) + [f.hi]:
        end = min(f.hi, int(e))
        if end >= start:
            out.append((start, end))
        start = max(start, int(e) + 1)
        if start > f.hi:
            break
    return out


def _banded_props(seed, fs, P, probs, real_sigmoid, X, info, spec, props) -> str:
    """The banded properties (a stream of their own; the others unchanged): the truth reads the README's
    definition -- an individual is a point of the features not in ``over``; its counterfactuals are every
    combination of the discrete ``over`` features' values with one value of the banded feature per band, the
    value in band j the same for every combination (HyFair's age bands: one representative age per band), and
    its k is the largest number of distinct buckets over every choice of those representatives."""
    rng = np.random.default_rng([24, seed, 41])
    ints = [i for i, f in enumerate(fs) if f.kind == "int" and not f.protected]
    if not ints:
        return spec
    bi = ints[int(rng.integers(0, len(ints)))]
    f = fs[bi]
    cuts = sorted(set(int(e) for e in rng.integers(f.lo, f.hi, size=int(rng.integers(1, 3)))))
    bands = _bands(f, cuts)
    if len(bands) < 2:
        return spec
    old = f.decl()
    new = old.replace(f"int in [{f.lo}, {f.hi}]", f"int in [{f.lo}, {f.hi}] bins [{', '.join(map(str, cuts))}]")
    spec = spec.replace(old + "\n", new + "\n", 1)
    info["bins"] = {f.name: cuts}
    protected = [i for i, g in enumerate(fs) if g.protected]
    for j in range(int(rng.integers(1, 3))):
        disc = protected if rng.random() < 0.6 else protected[:1] if rng.random() < 0.7 else []
        eps_text = str(rng.choice(["0.05", "0.1", "0.25", "0.2", "0.125", "0.3"]))
        eps = Fraction(eps_text)
        per, amb = _banded_k(fs, P, probs, disc, bi, bands, eps, real_sigmoid)
        kmax = max(per.values())
        K = int(np.prod([fs[i].size for i in disc])) * len(bands)
        op = "<" if rng.random() < 0.6 else "<="
        c = max(1, kmax + int(rng.choice([-1, 0, 0, 1])))
        if op == "<" and c <= 1:
            op = "<="
        violated_at = c if op == "<" else c + 1
        status = "ambiguous" if amb else ("violated" if kmax >= violated_at else "holds")
        over_text = ", ".join([fs[i].name for i in disc] + [f.name])
        claim = f"k_discrimination(m, over {{{over_text}}}, eps = {eps_text}) {op} {c}"
        search = str(rng.choice(["random", "annealing", "knn"]))
        lines = [claim, f"search {search} for 3s", "timeout = 20s"]
        name = f"kb{j}"
        body = f"property {name} {{\n  " + "\n  ".join(lines) + "\n}"
        truth = Truth(status, value=float(kmax), value_kind="k",
                      check_witness=_banded_checker(fs, P, disc, bi, per, X, violated_at, amb),
                      domain=int(P.shape[0]), note=f"max k = {kmax} of K = {K} ({len(bands)} bands of {f.name})")
        props.append(Prop(name, FAMILY, body, truth, {"op": op, "k": c, "eps": eps_text, "K": K,
                                                      "model": info.get("model"), "head": info.get("head"),
                                                      "runtime": info.get("model"), "search": "budget",
                                                      "bands": bands}, 20))
    return spec


def _banded_k(fs, P, probs, disc, bi, bands, eps, real_sigmoid):
    """{individual (the values of the features not in over): its k}, and whether a bucket edge within 1e-9 of
    a real sigmoid leaves some k open."""
    rest = [i for i in range(len(fs)) if i not in disc and i != bi]
    table: dict = {}
    for r in range(P.shape[0]):
        ind = tuple(int(v) for v in P[r, rest])
        table.setdefault(ind, {})[(tuple(int(v) for v in P[r, disc]), int(P[r, bi]))] = probs[r]
    combos = sorted({key[0] for t in table.values() for key in t})
    per, amb = {}, False
    for ind, t in table.items():
        best = 0
        for reps in itertools.product(*[range(a, b + 1) for a, b in bands]):
            k, a = _k([t[(d, rv)] for d in combos for rv in reps], eps, real_sigmoid)
            amb |= a
            best = max(best, k)
        per[ind] = best
    return per, amb


def _banded_checker(fs, P, disc, bi, per, X, violated_at, amb):
    rest = [i for i in range(len(fs)) if i not in disc and i != bi]

    def check(w: dict):
        if not w:
            return "a violation without a witness"
        pts = witness_points(w, fs)
        if isinstance(pts, str):
            return pts
        inds = {tuple(int(p[i]) for i in rest) for p in pts}
        if len(inds) != 1:
            return "the witness's two inputs are not counterfactuals of one individual"
        k = per[inds.pop()]
        if k < violated_at and not amb:
            return f"the witness's individual has k = {k} (over every choice of one value per band), not >= {violated_at}"
        return None

    return check


def _individuals(fs, P, over):
    rest = [i for i in range(len(fs)) if i not in over]
    if rest:
        _, inv = np.unique(P[:, rest], axis=0, return_inverse=True)
        inv = inv.reshape(-1)
    else:
        inv = np.zeros(P.shape[0], dtype=int)
    return inv


def _k(ps, eps, real_sigmoid) -> tuple[int, bool]:
    amb = False
    bs = set()
    for p in ps:
        if real_sigmoid and p != 0.5:
            r = float(p) / float(eps)
            if abs(r - round(r)) < 1e-9:
                amb = True
        bs.add(_bucket(p, eps))
    return len(bs), amb


def _max_k(fs, P, probs, over, eps, real_sigmoid):
    inv = _individuals(fs, P, over)
    best, amb, arg = 0, False, None
    for ind in np.unique(inv):
        rows = np.flatnonzero(inv == ind)
        k, a = _k(probs[rows], eps, real_sigmoid)
        amb |= a
        if k > best:
            best, arg = k, ind
    return best, amb, arg


def _witness_checker(fs, P, probs, over, eps, real_sigmoid, X, violated_at):
    radix = [f.size for f in fs]
    offs = [f.lo if f.kind == "int" else 0 for f in fs]
    inv = _individuals(fs, P, over)

    def idx(v):
        i = 0
        for a, r, o in zip(v, radix, offs):
            i = i * r + (int(a) - o)
        return i

    def check(w: dict):
        if not w:
            return "a violation without a witness"
        pts = witness_points(w, fs)
        if isinstance(pts, str):
            return pts
        for side, p in (("x", pts[0]), ("x_prime", pts[1])):
            if w.get(side) is not None:
                got = np.asarray(w[side], dtype=np.float64)
                want = X[idx(p)]
                if got.shape != want.shape or not np.allclose(got, want, rtol=1e-9, atol=1e-12):
                    return f"the witness's {side} {got.tolist()} is not the encoding of its features {want.tolist()}"
        a, b = idx(pts[0]), idx(pts[1])
        if inv[a] != inv[b]:
            return "the witness's two inputs are not counterfactuals of one individual"
        rows = np.flatnonzero(inv == inv[a])
        k, amb = _k(probs[rows], eps, real_sigmoid)
        if k < violated_at and not amb:
            return f"the witness's individual has k = {k} on the model's runtime, not >= {violated_at}"
        return None

    return check
