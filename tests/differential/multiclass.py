"""Multiclass ReLU networks, individual fairness (issue 25): random small float32 ONNX nets with
K = 3 or 4 outputs (logits, or a softmax the file holds) over finite feature domains; the posts
``class(m(x)) == class(m(x'))`` (argmax, ties to the first largest column) and, for softmax heads,
``|prob(m(x), c) - prob(m(x'), c)| op eps`` (the runtime's probability column, compared exactly; for logit
heads, session 34, every seed: the REAL softmax of the runtime's logits, enclosed exactly by softmax_real -- the
posts' largest difference and k-discrimination's buckets).

The truth enumerates every domain point on onnxruntime (torch for three instances in ten) and every
admissible pair. Ties on
purpose: dyadic weights, zero biases, two outputs exactly equal at a domain point (the argmax's
tie rule decides), tolerances equal to the exact maximal difference. From instance seed 83,000,000 on
(session 32) a logit instance also declares the network with ``index = i`` and gets two binary posts of it
(label / prob / logit of "class i against the rest") and a ``logit(m(x), c)`` post, and half the MILP
properties run ``engine = portfolio``. The regression family
(:mod:`.regression`) shares the generator.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .core import (Instance, Prop, Truth, decimal_text, encode_points, exact, exact_max, grid,
                   near_max_pairs, write_csv)
from .networks import (Net, PairSpec, _encoding, _features, _witness_checker, admissible, onnx_dtype, pair_groups,
                       run_onnx, run_torch, torch_dtype)

FAMILY = "multiclass"

BACKENDS = ("default", "milp", "milp-scip", "smt")
MODES = ("prove", "prove", "find", "maximize")


def _dyadic(rng, shape):
    return rng.integers(-8, 9, size=shape).astype(np.float64) / 4


def _net(rng, d_in: int, k_out: int, head: str) -> Net:
    sizes = [d_in] + [int(rng.integers(2, 6)) for _ in range(int(rng.integers(1, 3)))] + [k_out]
    Ws, bs = [], []
    for a, b in zip(sizes[:-1], sizes[1:]):
        W = _dyadic(rng, (b, a))
        W[rng.random(W.shape) < 0.2] = 0.0
        Ws.append(W)
        bs.append(np.zeros(b) if rng.random() < 0.5 else _dyadic(rng, (b,)))
    return Net(Ws, bs, head)


def _hidden(net: Net, X: np.ndarray) -> np.ndarray:
    H = X.astype(np.float64)
    for W, b in zip(net.Ws[:-1], net.bs[:-1]):
        H = np.maximum(H @ W.T + b, 0)
    return H


def _tie(rng, net: Net, X32: np.ndarray, info: dict):
    """Two outputs exactly equal at one domain point (exact: dyadic weights and grid)."""
    if net.Ws[-1].shape[0] < 2 or rng.random() < 0.4:
        return
    i0 = int(rng.integers(0, X32.shape[0]))
    z = _hidden(net, X32[i0:i0 + 1]) @ net.Ws[-1].T + net.bs[-1]
    K = z.shape[1]
    a, b = (int(v) for v in rng.choice(K, size=2, replace=False))
    net.bs[-1][a] = np.float32(net.bs[-1][a] - (z[0, a] - z[0, b]))
    info["tie_point"] = i0


def _base(rng, k_out: int, head: str, family: str, runtime: str = "onnx", dtype: str = "float32"):
    """(features, encodings, points P, encoded X, spec head text, files, info, has_data, outputs Y).
    ``runtime`` "torch": the network saved as TorchScript and the truth scored by torch (which rounds
    one point differently in batches of other sizes or orders); ``dtype``: the type the graph or the
    module computes in."""
    while True:
        fs = _features(rng)
        size = int(np.prod([f.size for f in fs]))
        if size <= 400:
            break
    has_data = rng.random() < 0.3
    encs = [_encoding(rng, f, False) for f in fs]
    names = [f.name for f in fs]
    P = grid(fs)
    files: dict = {}
    if has_data:
        rows = P[rng.integers(0, P.shape[0], size=int(rng.integers(8, 20)))].copy()
        files["d.csv"] = write_csv(fs, rows, {"y": rng.integers(0, 2, size=rows.shape[0])})
    X = encode_points(encs, P, names)
    X32 = X.astype(np.float32)
    net = _net(rng, X.shape[1], k_out, head)
    info = {"runtime": runtime, "head": head, "outputs": k_out, "points": int(P.shape[0]),
            "encodings": {e.feature.name: e.text() for e in encs}}
    _tie(rng, net, X32, info)
    if runtime == "torch":
        files["m.pt"] = net.torch_bytes(dtype)
        Y = np.asarray(run_torch(files["m.pt"], X.astype(dtype)), dtype=np.float64)
        info["dtype"] = dtype
    else:
        files["m.onnx"] = net.onnx_bytes(dtype)
        Y = np.asarray(run_onnx(files["m.onnx"], X.astype(dtype)), dtype=np.float64)
        info["dtype"] = dtype
    spec = 'data d = csv("d.csv", label = y == 1)\n' if has_data else ""
    spec += "features F" + (" from d" if has_data else "") + " {\n" + "\n".join(f.decl() for f in fs) + "\n}\n"
    return fs, encs, P, X, spec, files, info, Y, size


def _pair_spec(rng, fs) -> PairSpec:
    protected = [i for i, f in enumerate(fs) if f.protected]
    free = tuple(protected if rng.random() < 0.8 else protected[:1])
    others = [i for i in range(len(fs)) if i not in free]
    relaxed = []
    ints = [i for i in others if fs[i].kind == "int"]
    if ints and rng.random() < 0.3:
        i = ints[int(rng.integers(0, len(ints)))]
        tol, strict = [("1", False), ("1", True), ("2", True)][int(rng.integers(0, 3))]
        relaxed.append((i, tol, strict))
    tied = tuple(i for i in others if i not in [r[0] for r in relaxed])
    return PairSpec(free, tuple(relaxed), tied)


def _settings(rng):
    backend = BACKENDS[int(rng.integers(0, len(BACKENDS)))]
    mode = MODES[int(rng.integers(0, len(MODES)))]
    out = {"default": [], "milp": ["using milp"], "milp-scip": ["using milp", "engine = scip"],
           "smt": ["using smt"]}[backend]
    if mode != "prove":
        out.append(f"mode = {mode}")
    return backend, mode, out


def _text(name, fs, ps: PairSpec, ensure: str, extra: list[str]) -> str:
    names = [f.name for f in fs]
    lines = ["forall x, x' : F", "require x.* == x'.* except {" + ", ".join(names[i] for i in ps.free) + "}"]
    for i, tol, strict in ps.relaxed:
        lines.append(f"require |x.{names[i]} - x'.{names[i]}| {'<' if strict else '<='} {tol}")
    lines.append(f"ensure {ensure}")
    lines += extra + ["timeout = 20s"]
    return f"property {name} {{\n  " + "\n  ".join(lines) + "\n}"


def _eps(rng, Dx: Fraction, D: float):
    op = "<=" if rng.random() < 0.6 else "<"
    c = rng.random()
    text = decimal_text(Dx)
    if c < 0.4 and text is not None:
        eps = text
    elif c < 0.75:
        eps = str(float(Fraction(int(rng.integers(0, 9)), 8)))
    else:
        eps = f"{D * float(rng.choice([0.5, 0.9, 1.1, 2])):.6g}"
    if "e" in eps:
        eps = "0"
    if op == "<" and float(eps) == 0:
        op = "<="
    return op, eps


def _diff_truth(v: np.ndarray, P, ps: PairSpec, op: str, eps: str):
    """(status, max |v_a - v_b| exactly (Fraction) and its pair, pairs) over admissible pairs."""
    e = exact(eps)
    viol, best, n = False, None, 0
    for idx in pair_groups(P, ps):
        M = admissible(P, idx, ps)
        n += int(M.sum())
        vv = np.asarray(v[idx], dtype=np.float64)
        # the exact maximum: among the pairs whose float difference is (within rounding) the largest
        got = exact_max(near_max_pairs(np.abs(vv[:, None] - vv[None, :]), M, vv),
                        lambda a, b: abs(exact(vv[a]) - exact(vv[b])))
        if got is not None:
            d, a, b = got
            if best is None or d > best[0]:
                best = (d, int(idx[a]), int(idx[b]))
            viol |= (d > e) if op == "<=" else (d >= e)
    return ("violated" if viol else "holds"), best, n


def _class_scores(Y: np.ndarray) -> list:
    """Per class c, the runtime's class score of every point as fairspec's maximize measures it
    (README: max over c of min(g_c(x), -g_c(x'))): g_c = min over j != c of y_c - y_j, positive
    exactly when c is the first largest column (a tie won by c scores the smallest positive float, a
    tie lost scores 0). The differences of float32 logits are exact in float64."""
    Y = np.asarray(Y, dtype=np.float64)
    first = np.argmax(Y, axis=1)
    out = []
    for c in range(Y.shape[1]):
        g = (Y[:, c][:, None] - np.delete(Y, c, axis=1)).min(axis=1)
        wins = first == c
        out.append(np.where(wins & (g <= 0), 5e-324, np.where(~wins & (g > 0), 0.0, g)))
    return out


def _class_checker(fs, P, ps, k):
    """The witness check of the class post: networks' checker with the class as a 0/1 'label'."""
    from .networks import Outputs

    def check(w):
        base = _witness_checker(fs, P, ps, Outputs(np.zeros(P.shape[0], bool)), "label", None, None,
                                np.zeros((P.shape[0], 1)))
        # the structural checks (domain point, pre-condition), then the class change itself
        msg = base({**w, "x": None, "x_prime": None})
        if msg is not None and "same decision" not in msg:
            return msg
        radix = [f.size for f in fs]
        offs = [f.lo if f.kind == "int" else 0 for f in fs]
        idx = []
        for side in ("features", "features_prime"):
            i = 0
            for f, r, o in zip(fs, radix, offs):
                i = i * r + (f.read(w[side][f.name]) - o)
            idx.append(i)
        if k[idx[0]] == k[idx[1]]:
            return "the witness pair gets the same predicted class on the model's runtime"
        return None

    return check


def generate(seed: int, n_props: int = 6) -> Instance:
    rng = np.random.default_rng([25, seed])
    k_out = int(rng.choice([3, 3, 4]))
    head = "logit2" if rng.random() < 0.75 else "prob2"       # Identity | Softmax over the K outputs
    # torch for three in ten instances, from a stream of its own (the onnx instances stay as they were)
    runtime = "torch" if np.random.default_rng([25, seed, 17]).random() < 0.3 else "onnx"
    fs, encs, P, X, spec, files, info, Y, size = _base(rng, k_out, head, FAMILY, runtime,
                                                       onnx_dtype(seed) if runtime == "onnx" else torch_dtype(seed))
    score = "logit" if head == "logit2" else "prob"
    spec += (f'model m = torch("m.pt", score = {score})\n' if runtime == "torch" else
             f'model m = onnx("m.onnx", output = "out", score = {score})\n')
    spec += "encode F for m {\n" + "\n".join(f"  {e.feature.name} : {e.text()}" for e in encs) + "\n}\n"
    k = np.argmax(Y, axis=1)                                   # the first largest column
    props = []
    for j in range(n_props):
        ps = _pair_spec(rng, fs)
        backend, mode, extra = _settings(rng)
        if head == "prob2" and rng.random() < 0.4:
            c = int(rng.integers(0, k_out))
            _, best, _ = _diff_truth(Y[:, c], P, ps, "<=", "0")
            Dx = best[0] if best is not None else Fraction(0)
            op, eps = _eps(rng, Dx, float(Dx))
            status, best, n = _diff_truth(Y[:, c], P, ps, op, eps)
            ensure = f"|prob(m(x), {c}) - prob(m(x'), {c})| {op} {eps}"
            from .networks import Outputs

            out = Outputs(Y[:, c] > 0.5, None, Y[:, c])
            check = _witness_checker(fs, P, ps, out, "prob", op, eps, X)
            value = float(best[0]) if (mode == "maximize" and best is not None) else None
            exact_value = best[0] if value is not None else None
            post = "class_prob"
        else:
            n, viol = 0, False
            G = _class_scores(Y) if mode == "maximize" and head == "logit2" else None
            value = None
            for idx in pair_groups(P, ps):
                M = admissible(P, idx, ps)
                n += int(M.sum())
                viol |= bool(np.any(M & (k[idx][:, None] != k[idx][None, :])))
                if G is not None and M.any():
                    m = max(float(np.max(np.where(M, np.minimum(g[idx][:, None], -g[idx][None, :]), -np.inf)))
                            for g in G)
                    value = m if value is None else max(value, m)
            status = "violated" if viol else "holds"
            ensure = "class(m(x)) == class(m(x'))"
            check = _class_checker(fs, P, ps, k)
            op, eps, post, exact_value = None, None, "class", None
        truth = Truth(status, value=value, value_kind="max" if value is not None else None, check_witness=check,
                      domain=size, pairs=n, exact=exact_value)
        meta = {"post": post, "op": op, "eps": eps, "backend": backend, "mode": mode, "head": head,
                "outputs": k_out, "runtime": runtime}
        props.append(Prop(f"p{j}", FAMILY, _text(f"p{j}", fs, ps, ensure, extra), truth, meta, 20.0))
    props += _prob_props(np.random.default_rng([25, seed, 2]), fs, P, X, Y, head, k_out, n_props, runtime=runtime)
    if head == "logit2" and seed >= INDEX_FROM:
        spec += _index_model(runtime, encs, rng_i := np.random.default_rng([25, seed, 3]), k_out, info)
        props += _index_props(rng_i, fs, P, X, Y, info, size, len(props))
    if head == "logit2" and seed >= INDEX_FROM:
        props += _logit_props(np.random.default_rng([25, seed, 5]), fs, P, X, Y, k_out, len(props), runtime)
    if seed >= INDEX_FROM:
        _portfolio(np.random.default_rng([25, seed, 4]), props)
    if seed >= KDISC_FROM and runtime == "onnx":
        props += _kdisc_props(np.random.default_rng([25, seed, 6]), fs, P, X, Y, head, k, size, len(props))
    elif seed >= TORCH_KDISC_FROM and runtime == "torch":
        props += _kdisc_props(np.random.default_rng([25, seed, 90]), fs, P, X, Y, head, k, size, len(props),
                              runtime="torch")
    return Instance(FAMILY, seed, spec, files, props, info)


#: session 32: from this instance seed on, an ONNX multiclass network gets two k-discrimination properties (the
#: tree family's: distinct predicted classes, or ``class = c, eps = e`` on class c's probability as fairspec reads it)
KDISC_FROM = 85_000_000
#: session 33: from this instance seed on, a torch multiclass network gets them too (distinct predicted classes,
#: ``class = c, eps = e``: the TorchScript module's batch, as the truth scores it)
TORCH_KDISC_FROM = 90_000_000


def _kdisc_props(rng, fs, P, X, Y, head, k, size, start, count=2, runtime="onnx"):
    """k-discrimination of the network over its protected features (all, or the first): README, "k-discrimination
    of a multiclass model (without index) counts, for every individual, the distinct predicted classes among its
    counterfactuals ... and with class = c buckets class c's probability by eps". A logit head's probability is
    the REAL softmax of the runtime's logits (softmax_real, exact buckets; session 34, every seed -- the specs are
    unchanged, their claims still drawn around the float64 softmax's max k)."""
    from .tree_outputs import _kdisc_prop

    prot = [i for i, f in enumerate(fs) if f.protected and f.kind != "int"]    # a numeric one needs bins (FS308)
    if not prot:
        return []
    Pr = _probabilities(Y, head)
    out = []
    for j in range(start, start + count):
        over = prot if rng.random() < 0.6 else prot[:1]
        out.append(_kdisc_prop(rng, f"p{j}", FAMILY, fs, P, X, over, k, Pr, size, runtime,
                               logits=Y if head == "logit2" else None))
    return out


def _portfolio(rng, props):
    """Session 32: half the MILP properties (from INDEX_FROM on) race HiGHS and SCIP per query (``engine =
    portfolio``) instead of the one engine they name; their truth is unchanged."""
    for p in props:
        if p.meta.get("backend") in ("milp", "milp-scip") and rng.random() < 0.5:
            lines = [ln for ln in p.text.split("\n") if ln.strip() != "engine = scip"]
            k = next(n for n, ln in enumerate(lines) if ln.strip() == "using milp")
            lines.insert(k + 1, "  engine = portfolio")
            p.text = "\n".join(lines)
            p.meta["backend"] = "milp-portfolio"


#: session 32: from this instance seed on, a logit head's instance also declares the network a second time
#: with ``index = i`` (README "Multiclass": "class i against the rest", the score column i minus the largest
#: other column, class 1 iff it is > 0) and gets two binary posts of it (label / logit, with the network
#: family's backends, modes, partitions and tolerances); earlier seeds' specs are as they were
INDEX_FROM = 83_000_000


def _index_model(runtime: str, encs, rng, k_out: int, info: dict) -> str:
    i = int(rng.integers(0, k_out))
    info["binary_index"] = i
    decl = (f'model mi = torch("m.pt", score = logit, index = {i})\n' if runtime == "torch" else
            f'model mi = onnx("m.onnx", output = "out", score = logit, index = {i})\n')
    return decl + "encode F for mi {\n" + "\n".join(f"  {e.feature.name} : {e.text()}" for e in encs) + "\n}\n"


def _index_props(rng, fs, P, X, Y, info, size, start, count=2):
    """Binary posts of ``mi`` (the network with ``index = i``): the truth is the network family's over the
    score s = y_i - max_{j != i} y_j (float32 columns: exact in float64), label "the argmax is i" (the first
    largest column at a tie, as class(m(x)) reads it: s36 h5; before, s > 0 called every tie class 0)."""
    from .networks import Outputs, _property

    i = info["binary_index"]
    Yd = np.asarray(Y, dtype=np.float64)
    s = Yd[:, i] - np.delete(Yd, i, axis=1).max(axis=1)
    out = Outputs(np.argmax(Yd, axis=1) == i, s, None, True)
    # no prob post: prob(mi(x)) of a multiclass model read with index = i names no class (FS416 since session 37:
    # the index reads the decision "predict is class i", a margin, not a probability); the harness wrote it and
    # fairspec rejected the spec (26 of 75 properties of seed 141 x 6 "rejected")
    ninfo = {**info, "head": "index", "prob_ambiguous": True}
    props = []
    for j in range(start, start + count):
        p = _property(rng, j, fs, P, X, out, ninfo, False, size, FAMILY)
        p.text = p.text.replace("(m(x", "(mi(x")
        p.meta.update(index=i, outputs=Yd.shape[1], post=f"index-{p.meta['post']}")
        props.append(p)
    return props


def _probabilities(Y: np.ndarray, head: str) -> np.ndarray:
    """prob(m(x), c) as fairspec reads it: the runtime's columns of a softmax head, else the softmax of
    the float32 logits computed in float64 exactly as fairspec's readout does (bit for bit)."""
    if head == "prob2":
        return Y.copy()
    z = Y - Y.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _prob_props(rng, fs, P, X, Y, head, k_out, start, count=2, runtime="onnx"):
    """More ``prob(m(x), c)`` posts (one class, or ``forall c``) on logit and softmax heads, drawn from
    their own random stream (the instances' other properties are unchanged): the issue-25 softmax
    branch and bound beyond enumeration (the -solver family), eps on the exact largest difference
    (ties) or near it."""
    from .networks import Outputs

    Pr = _probabilities(Y, head)
    out = []
    for j in range(start, start + count):
        ps = _pair_spec(rng, fs)
        backend, mode, extra = _settings(rng)
        every = rng.random() < 0.4
        cs = list(range(k_out)) if every else [int(rng.integers(0, k_out))]
        Dx = Fraction(0)
        for c in cs:
            _, best, _ = _diff_truth(Pr[:, c], P, ps, "<=", "0")
            if best is not None and best[0] > Dx:
                Dx = best[0]
        op, eps = _eps(rng, Dx, float(Dx))
        status, best_all, n = "holds", None, 0
        checks = []
        for c in cs:
            ck = _witness_checker(fs, P, ps, Outputs(Pr[:, c] > 0.5, None, Pr[:, c]), "prob", op, eps, X)
            # a logit head's status, maximum and witness check are the REAL softmax's, below (_real_softmax_truth)
            st, best, n = _diff_truth(Pr[:, c], P, ps, op, eps)
            if st == "violated" or (st == "ambiguous" and status == "holds"):
                status = st
            if best is not None and (best_all is None or best[0] > best_all[0]):
                best_all = best
            checks.append(ck)

        def any_check(w, checks=checks):
            msgs = [ck(w) for ck in checks]
            return None if any(m is None for m in msgs) else msgs[0]

        check = any_check
        cls = "c" if every else str(cs[0])
        ensure = (("forall c: " if every else "") + f"|prob(m(x), {cls}) - prob(m(x'), {cls})| {op} {eps}")
        top, slack = (best_all[0] if best_all is not None else None), 0
        if head == "logit2":            # the real softmax of the logits, not float64's (spec unchanged)
            status, top, slack, check = _real_softmax_truth(fs, P, ps, Y, Pr, cs, op, eps, checks, status)
        value = float(top) if (mode == "maximize" and top is not None) else None
        truth = Truth(status, value=value, value_kind="max" if value is not None else None, check_witness=check,
                      domain=int(P.shape[0]), pairs=n, exact=top if value is not None else None,
                      slack=slack if value is not None else 0)
        meta = {"post": "class_prob", "op": op, "eps": eps, "backend": backend, "mode": mode, "head": head,
                "outputs": k_out, "runtime": runtime, "every_class": every}
        if head == "logit2":
            meta["real_softmax"] = True
        out.append(Prop(f"p{j}", FAMILY, _text(f"p{j}", fs, ps, ensure, extra), truth, meta, 20.0))
    return out


def _real_softmax_truth(fs, P, ps, Y, Pr, cs, op, eps, checks, status):
    """Session 34, every seed (a pure truth change: eps is still drawn around the float64 softmax's largest
    difference): ``prob(m(x), c)`` of a logit head is the REAL softmax of the runtime's logits (README; fairspec
    reports the float at or below the exact measure). (status, the exact maximum's lower end L, U - L, the
    witness check): the status of the largest difference in [L, U] against eps (ambiguous if it straddles), a
    witness accepted where its pair breaks the post on the real softmax (or cannot be told) -- after the float
    check's structural tests (a domain pair meeting the pre-condition)."""
    from .core import exact as exact_of, witness_points
    from .softmax_real import max_difference, pair_breaks, status as real_status

    got = max_difference(Y, Pr, cs, ((idx, admissible(P, idx, ps)) for idx in pair_groups(P, ps)))
    e = exact_of(eps)
    top, slack = (None, 0) if got is None else (got[0], got[1] - got[0])
    if got is not None:
        status = real_status(got[0], got[1], op, e)
    radix = [f.size for f in fs]
    offs = [f.lo if f.kind == "int" else 0 for f in fs]

    def index(vals):
        i = 0
        for v, r, o in zip(vals, radix, offs):
            i = i * r + (int(v) - o)
        return i

    def check(w, checks=checks):
        msgs = [ck(w) for ck in checks]
        if not all(m is None or m.startswith("the witness pair's prob difference") for m in msgs):
            return next(m for m in msgs if m is not None and not m.startswith("the witness pair's prob difference"))
        pts = witness_points(w, fs)
        a, b = index(pts[0]), index(pts[1])
        if any(pair_breaks(Y, c, a, b, op, e) is not False for c in cs):
            return None
        return f"the witness pair's real-softmax prob difference does not break {op} {eps} on the model's runtime"

    return status, top, slack, check


def _logit_props(rng, fs, P, X, Y, k_out, start, runtime, count=1):
    """Session 32: ``|logit(m(x), c) - logit(m(x'), c)| op eps`` (README: logit column c of an output of logits;
    enumerated on small domains, larger ones unknown): the float32 column as the runtime computes it, its
    differences exact in float64, eps at the exact largest difference or near it."""
    from .networks import Outputs

    out = []
    for j in range(start, start + count):
        ps = _pair_spec(rng, fs)
        backend, mode, extra = _settings(rng)
        c = int(rng.integers(0, k_out))
        col = np.asarray(Y[:, c], dtype=np.float64)
        _, best, _ = _diff_truth(col, P, ps, "<=", "0")
        Dx = best[0] if best is not None else Fraction(0)
        op, eps = _eps(rng, Dx, float(Dx))
        status, best, n = _diff_truth(col, P, ps, op, eps)
        check = _witness_checker(fs, P, ps, Outputs(col > 0, col, None, True), "logit", op, eps, X)
        value = float(best[0]) if (mode == "maximize" and best is not None) else None
        truth = Truth(status, value=value, value_kind="max" if value is not None else None, check_witness=check,
                      domain=int(P.shape[0]), pairs=n, exact=best[0] if value is not None else None)
        meta = {"post": "class_logit", "op": op, "eps": eps, "backend": backend, "mode": mode, "head": "logit2",
                "outputs": k_out, "runtime": runtime}
        ensure = f"|logit(m(x), {c}) - logit(m(x'), {c})| {op} {eps}"
        out.append(Prop(f"p{j}", FAMILY, _text(f"p{j}", fs, ps, ensure, extra), truth, meta, 20.0))
    return out
