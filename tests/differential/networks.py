"""ReLU networks, individual fairness: random small float32 ONNX nets (and TorchScript and
scikit-learn samples) over finite feature domains, every encoding and output head, label /
logit / prob post-conditions with `<=` and `<`, every backend, mode and partitioning.

The truth enumerates every domain point on the model's own runtime (onnxruntime, torch,
scikit-learn's predict / predict_proba / decision_function) and every admissible pair.

Ties on purpose: weights multiples of 1/4, zero biases, a first-layer neuron whose minimum
over the domain is exactly 0, an output exactly on the decision threshold at a domain point,
tolerances equal to the exact maximal difference.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from .core import (Enc, Feature, Instance, Prop, Truth, decimal_text, encode_points, exact, exact_max, grid,
                   near_max_pairs, write_csv)

FAMILY = "network"

HEADS = ("logit1", "sigmoid1", "logit2", "prob2")


# ------------------------------------------------------------------ the runtime


@dataclass
class Net:
    """Dense layers (float32 weights) with ReLU between them and a head."""
    Ws: list
    bs: list
    head: str                  # logit1 | sigmoid1 | logit2 | prob2
    index: int = 1             # the positive column of a two-column head

    def onnx_bytes(self, dtype: str = "float32", spelling: str = "plain") -> bytes:
        """The graph computing in ``dtype`` throughout (its input, weights and output). ``spelling``
        (:data:`ONNX_SPELLINGS`): ``exact-scale`` doubles the first hidden layer's output after its
        ReLU and halves the next layer's weights (the same numbers, a Mul the runtime does exactly);
        ``split-scale`` writes the first layer's product as a MatMul by 10 W, then a Mul by 0.1
        (two roundings where the folded layer has one: a layer that is not the runtime's own)."""
        import onnx
        from onnx import TensorProto, helper, numpy_helper

        dt = np.dtype(dtype)
        tp = {"float16": TensorProto.FLOAT16, "float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE}[dtype]
        nodes, inits = [], []
        cur = "x"
        exact_scale = spelling == "exact-scale" and len(self.Ws) > 1
        for k, (W, b) in enumerate(zip(self.Ws, self.bs)):
            if exact_scale and k == 1:
                W = W / 2.0
            if spelling == "split-scale" and k == 0:
                inits.append(numpy_helper.from_array((W.T.astype(np.float64) * 10.0).astype(dt), "W0"))
                inits += [numpy_helper.from_array(b.astype(dt), "b0"),
                          numpy_helper.from_array(np.array(0.1, dtype=dt), "c0")]
                nodes += [helper.make_node("MatMul", [cur, "W0"], ["m0"]),
                          helper.make_node("Mul", ["m0", "c0"], ["s0"])]
                out = "h0" if len(self.Ws) > 1 else "z"
                nodes.append(helper.make_node("Add", ["s0", "b0"], [out]))
                if len(self.Ws) > 1:
                    nodes.append(helper.make_node("Relu", [out], ["r0"]))
                    cur = "r0"
                continue
            inits.append(numpy_helper.from_array(W.T.astype(dt).copy(), f"W{k}"))
            inits.append(numpy_helper.from_array(b.astype(dt), f"b{k}"))
            last = k == len(self.Ws) - 1
            if k % 2 == 0:   # both spellings of a dense layer: Gemm, and MatMul + Add
                out = f"h{k}" if not last else "z"
                nodes.append(helper.make_node("Gemm", [cur, f"W{k}", f"b{k}"], [out]))
            else:
                nodes.append(helper.make_node("MatMul", [cur, f"W{k}"], [f"m{k}"]))
                out = f"h{k}" if not last else "z"
                nodes.append(helper.make_node("Add", [f"m{k}", f"b{k}"], [out]))
            if not last:
                nodes.append(helper.make_node("Relu", [out], [f"r{k}"]))
                cur = f"r{k}"
                if exact_scale and k == 0:
                    inits.append(numpy_helper.from_array(np.array(2.0, dtype=dt), "two"))
                    nodes.append(helper.make_node("Mul", [cur, "two"], ["r0x2"]))
                    cur = "r0x2"
        n_out = self.Ws[-1].shape[0]
        if self.head in ("logit1", "logit2"):
            nodes.append(helper.make_node("Identity", ["z"], ["out"]))
        elif self.head == "sigmoid1":
            nodes.append(helper.make_node("Sigmoid", ["z"], ["out"]))
        else:
            nodes.append(helper.make_node("Softmax", ["z"], ["out"], axis=1))
        d_in = self.Ws[0].shape[1]
        g = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", tp, ["N", d_in])],
                              [helper.make_tensor_value_info("out", tp, ["N", n_out])], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        onnx.checker.check_model(m)
        return m.SerializeToString()

    def torch_bytes(self, dtype: str = "float32") -> bytes:
        """The module with its parameters in ``dtype`` (it computes in it)."""
        import torch

        mods = []
        for k, (W, b) in enumerate(zip(self.Ws, self.bs)):
            lin = torch.nn.Linear(W.shape[1], W.shape[0])
            with torch.no_grad():
                lin.weight.copy_(torch.from_numpy(W.astype(np.float32)))
                lin.bias.copy_(torch.from_numpy(b.astype(np.float32)))
            mods.append(lin)
            if k < len(self.Ws) - 1:
                mods.append(torch.nn.ReLU())
        if self.head == "sigmoid1":
            mods.append(torch.nn.Sigmoid())
        elif self.head == "prob2":
            mods.append(torch.nn.Softmax(dim=1))
        seq = torch.nn.Sequential(*mods).eval().to(getattr(torch, dtype))
        buf = io.BytesIO()
        torch.jit.save(torch.jit.script(seq), buf)
        return buf.getvalue()


def run_onnx(data: bytes, X: np.ndarray) -> np.ndarray:
    """The graph's outputs on X (already in the graph's input type)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    s = ort.InferenceSession(data, sess_options=opts, providers=["CPUExecutionProvider"])
    return np.asarray(s.run(["out"], {"x": X})[0])


#: the element types of the family's ONNX graphs, with their odds (their own random stream, so the
#: other choices of a seed are those of the float32-only family): float64 graphs are certified in
#: float64, float16 ones in float16 (certify/half.py; a power-of-two scale is a layer of its own there)
ONNX_DTYPES = (("float32", 0.7), ("float64", 0.15), ("float16", 0.15))


def _draw(stream: int, seed: int, odds) -> str:
    """One name of ``odds`` ((name, probability), ...) from the random stream ``[stream, seed]``."""
    r = float(np.random.default_rng([stream, seed]).random())
    for name, p in odds:
        if r < p:
            return name
        r -= p
    return odds[-1][0]


def onnx_dtype(seed: int) -> str:
    return _draw(21, seed, ONNX_DTYPES)


#: how the family's ONNX graphs spell their layers, with their odds (their own random stream), from
#: campaign seed 25 on: the instances of earlier seeds keep their plain graphs, so the findings
#: recorded for them and the suite's slice replay as they were found
ONNX_SPELLINGS = (("plain", 0.6), ("exact-scale", 0.2), ("split-scale", 0.2))
SPELLINGS_FROM = 25_000_000


def onnx_spelling(seed: int) -> str:
    return "plain" if seed < SPELLINGS_FROM else _draw(23, seed, ONNX_SPELLINGS)


def run_torch(data: bytes, X: np.ndarray) -> np.ndarray:
    """The module's outputs on X, cast to its parameters' dtype (as fairspec feeds it)."""
    import torch

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        m = torch.jit.load(io.BytesIO(data))
    dt = next(iter(m.parameters())).dtype
    with torch.no_grad():
        return m(torch.from_numpy(np.asarray(X)).to(dt)).to(torch.float64).numpy()


def torch_dtype(seed: int) -> str:
    """A torch module's dtype: float64 for about one in four (its own random stream): certified in
    float64, and batch-dependent in float64 as in float32."""
    return "float64" if float(np.random.default_rng([22, seed]).random()) < 0.25 else "float32"


# ------------------------------------------------------------------ readout on the runtime


@dataclass
class Outputs:
    """Per domain point: the decision, and the observable scores (None when not observable)."""
    label: np.ndarray                       # bool
    logit: np.ndarray | None = None         # float64, exact values of the runtime's numbers
    prob: np.ndarray | None = None          # float64 (exact), or None: then sigmoid(logit), real
    prob_is_sigmoid: bool = False           # prob = the real sigmoid of logit
    cut: float = 0.0                        # the logit the label flips at (binary:logitraw's predict: 0.5)


def readout(head: str, Y: np.ndarray, index: int = 1) -> Outputs:
    Y = np.asarray(Y, dtype=np.float64)
    if head == "logit1":
        z = Y.reshape(-1)
        return Outputs(z > 0, z, None, True)
    if head == "sigmoid1":
        p = Y.reshape(-1)
        return Outputs(p > 0.5, None, p)
    if head == "logit2":
        z = Y[:, index] - Y[:, 1 - index]      # float32 - float32: exact in float64
        # the argmax's class (the first largest column at a tie, as class(m(x))): index 0 takes the tie (s36 h5)
        return Outputs(z >= 0 if index == 0 else z > 0, z, None, True)
    p = Y[:, index]
    # two probabilities: the argmax's class too, column 0 at an exact tie ([0.5, 0.5] is class 0; s37 h2)
    return Outputs(Y[:, 0] >= Y[:, 1] if index == 0 else Y[:, 1] > Y[:, 0], None, p)


# ------------------------------------------------------------------ pairs


@dataclass
class PairSpec:
    free: tuple                 # feature indices that may differ
    relaxed: tuple = ()         # (feature index, tolerance as decimal text, strict)
    tied: tuple = ()


def pair_groups(P: np.ndarray, ps: PairSpec):
    """Groups of point indices that agree on every tied feature; with the relaxed features'
    tolerance, (i, j) in a group is admissible iff every relaxed |v_i - v_j| is within it."""
    if ps.tied:
        _, inv = np.unique(P[:, list(ps.tied)], axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        order = np.argsort(inv, kind="stable")
        bounds = np.flatnonzero(np.diff(inv[order])) + 1
        return np.split(order, bounds)
    return [np.arange(P.shape[0])]


def admissible(P: np.ndarray, idx: np.ndarray, ps: PairSpec) -> np.ndarray:
    """Admissible ordered pairs of a group: at least one free (protected) feature differs
    (fairspec's and Fairify's reading of `x.* == x'.* except {...}`) and every relaxed feature
    is within its tolerance, `<` and `<=` as written."""
    F = P[idx][:, list(ps.free)]
    M = np.any(F[:, None, :] != F[None, :, :], axis=2)
    for f, tol, strict in ps.relaxed:
        d = np.abs(P[idx, f][:, None] - P[idx, f][None, :])
        t = Fraction(tol)                     # integer differences: d < t iff d <= ceil(t) - 1
        limit = (-((-t.numerator) // t.denominator) - 1) if strict else (t.numerator // t.denominator)
        M &= d <= limit
    return M


def sigmoid_exact(z: float, prec: int = 80):
    import mpmath

    with mpmath.workdps(prec):
        return 1 / (1 + mpmath.exp(-mpmath.mpf(float(z))))


def post_truth(out: Outputs, P: np.ndarray, ps: PairSpec, post: str, op: str, eps: str | None):
    """(status, max measure, n pairs): label / logit / prob post over every admissible pair."""
    groups = pair_groups(P, ps)
    n_pairs = 0
    best = None          # (measure float, i, j) of the largest measure
    viol = False
    near = []            # candidate pairs whose float measure is within 1e-9 of eps
    exacts = []          # per group, the exact largest measure (None: one the truth cannot settle)
    epsf = float(eps) if eps is not None else 0.0
    flip_best = None     # label: the largest measure over the flipping pairs (x labelled 1, x' 0)
    for idx in groups:
        M = admissible(P, idx, ps)
        n_pairs += int(M.sum())
        if post == "label":
            L = out.label[idx]
            if np.any(M & (L[:, None] != L[None, :])):
                viol = True
            if out.logit is not None:
                z = out.logit[idx]
                m = np.minimum(z[:, None] - out.cut, out.cut - z[None, :])
                for mask, which in ((M, "all"), (M & (L[:, None] > L[None, :]), "flips")):
                    mm = np.where(mask, m, -np.inf)
                    if not mask.any():
                        continue
                    k = np.unravel_index(np.argmax(mm), mm.shape)
                    cur = best if which == "all" else flip_best
                    if cur is None or mm[k] > cur[0]:
                        cur = (float(mm[k]), int(idx[k[0]]), int(idx[k[1]]))
                    if which == "all":
                        best = cur
                    else:
                        flip_best = cur
            continue
        if post == "logit":
            v = out.logit[idx]
        elif out.prob is not None:
            v = out.prob[idx]
        else:
            v = 1.0 / (1.0 + np.exp(-out.logit[idx]))
        D = np.abs(v[:, None] - v[None, :])
        D = np.where(M, D, -np.inf)
        k = np.unravel_index(np.argmax(D), D.shape)
        if best is None or D[k] > best[0]:
            best = (float(D[k]), int(idx[k[0]]), int(idx[k[1]]))
        if M.any():
            # the exact maximum (a float's rounding may hide a larger one among the float ties)
            got = exact_max(near_max_pairs(D, M, v), lambda a, b: exact_measure(out, post, int(idx[a]), int(idx[b])))
            exacts.append(None if got is None else got[0])
        close = np.argwhere(M & (np.abs(D - epsf) <= 1e-9 * max(1.0, epsf)))
        near.extend((int(idx[a]), int(idx[b])) for a, b in close)
        if op == "<=":
            viol |= bool(np.any(D > epsf + 1e-9 * max(1.0, epsf)))
        else:
            viol |= bool(np.any(D >= epsf + 1e-9 * max(1.0, epsf)))
    if post == "label":
        # the measure over the pairs the verdict is about (kinds.tree_pairs.label_meaning): the flipping
        # pairs of a violation (for a label that is the margin's side of the cut, the largest of every
        # pair too), every pair of a holds
        return ("violated" if viol else "holds"), (flip_best if viol and flip_best is not None else best), n_pairs
    if best is not None:
        # best[3]: the exact largest measure over every group (None when some cannot be settled)
        best = (*best[:3], None if None in exacts or not exacts else max(exacts))
    # decide the near ones exactly
    ambiguous = False
    e = exact(eps)
    for i, j in near:
        if viol:
            break
        d = exact_measure(out, post, i, j)
        if d is None:
            ambiguous = True
            continue
        if (d > e) if op == "<=" else (d >= e):
            viol = True
    if viol:
        return "violated", best, n_pairs
    return ("ambiguous" if ambiguous else "holds"), best, n_pairs


def exact_measure(out: Outputs, post: str, i: int, j: int):
    """|s_i - s_j| exactly (a Fraction); for the real sigmoid of logits an mpmath value at 80
    digits, or None when it is within 1e-60 of a tie it cannot settle."""
    if post == "logit":
        return abs(exact(out.logit[i]) - exact(out.logit[j]))
    if out.prob is not None:
        return abs(exact(out.prob[i]) - exact(out.prob[j]))
    zi, zj = out.logit[i], out.logit[j]
    if zi == zj:
        return Fraction(0)
    d = abs(sigmoid_exact(zi) - sigmoid_exact(zj))
    import mpmath

    return Fraction(mpmath.nstr(d, 70, min_fixed=-100, max_fixed=100).strip() or "0") if d > 1e-60 else None


def measure_value(out: Outputs, post: str, best) -> float | None:
    """The maximal violation measure (fairspec's maximize value): label min(z - c, c - z'), logit and
    prob |s - s'|; None when the score it needs is not observable on the runtime."""
    if best is None:
        return None
    if post == "label" and out.logit is None:
        return None
    return float(best[0])


# ------------------------------------------------------------------ generation


def _features(rng) -> list[Feature]:
    n = int(rng.integers(2, 5))
    fs = []
    kinds = ["int", "int", "cat", "bool"]
    # the protected feature first; then the others
    pk = rng.choice(["cat", "cat", "bool", "int"])
    if pk == "cat":
        fs.append(Feature("g", "cat", cats=tuple("ABCD"[:int(rng.integers(2, 4))]), protected=True))
    elif pk == "bool":
        fs.append(Feature("g", "bool", protected=True))
    else:
        fs.append(Feature("g", "int", lo=0, hi=int(rng.integers(1, 3)), protected=True))
    if rng.random() < 0.15:
        fs.append(Feature("h", "bool", protected=True))
    for k in range(n - 1):
        kind = kinds[int(rng.integers(0, len(kinds)))]
        name = f"f{k}"
        if kind == "int":
            lo = int(rng.choice([0, 0, 1, -2, 17]))
            fs.append(Feature(name, "int", lo=lo, hi=lo + int(rng.integers(1, 8))))
        elif kind == "cat":
            fs.append(Feature(name, "cat", cats=tuple(f"c{i}" for i in range(int(rng.integers(2, 5))))))
        else:
            fs.append(Feature(name, "bool"))
    return fs


def _encoding(rng, f: Feature, has_data: bool) -> Enc:
    if f.kind == "int":
        r = rng.random()
        if r < 0.3:
            return Enc(f, "raw")
        if r < 0.65:
            if has_data and rng.random() < 0.3:
                return Enc(f, "minmax", fitted=True)
            span_choice = rng.random()
            lo = f.lo if rng.random() < 0.7 else f.lo - int(rng.integers(1, 3))
            if span_choice < 0.5:   # a power-of-two span: an exact encoding
                span = 2 ** int(np.ceil(np.log2(max(1, f.hi - lo))))
                hi = lo + span
            else:
                hi = f.hi if rng.random() < 0.7 else f.hi + int(rng.integers(1, 4))
            return Enc(f, "minmax", lo=str(lo), hi=str(hi))
        if has_data and rng.random() < 0.3:
            return Enc(f, "standard", fitted=True)
        mean = rng.choice([f.lo, (f.lo + f.hi) / 2, f.lo + 0.25])
        std = rng.choice([1, 2, 0.5, 3, 1.5])
        return Enc(f, "standard", mean=decimal_text(Fraction(float(mean))), std=str(std))
    if f.kind == "bool":
        r = rng.random()
        if r < 0.5:
            return Enc(f, "raw")
        if r < 0.75:
            return Enc(f, "onehot")
        return Enc(f, "code", codes=("1", "0") if rng.random() < 0.5 else None)
    r = rng.random()
    if r < 0.6:
        return Enc(f, "onehot")
    if r < 0.9:
        return Enc(f, "code")
    codes = [str(c) for c in rng.permutation(f.size)]
    if rng.random() < 0.5:
        codes = [str(float(c) / 2) for c in codes]
    return Enc(f, "code", codes=tuple(codes))


def _tiny(rng, near: float) -> float:
    """A number a few units in the last place of ``near`` (at least 2**-53), either sign."""
    unit = max(float(np.spacing(abs(float(near)))), 2.0 ** -53)
    return float(rng.choice([-2.0, -1.0, 1.0, 2.0])) * unit


def _dyadic(rng, shape, scale=8):
    return rng.integers(-scale, scale + 1, size=shape).astype(np.float64) / 4


def _net(rng, d_in: int, head: str) -> Net:
    n_hidden = int(rng.integers(1, 3))
    sizes = [d_in] + [int(rng.integers(2, 7)) for _ in range(n_hidden)] + [2 if head in ("logit2", "prob2") else 1]
    dyadic = rng.random() < 0.75
    Ws, bs = [], []
    for a, b in zip(sizes[:-1], sizes[1:]):
        if dyadic:
            W = _dyadic(rng, (b, a))
            bias = np.zeros(b) if rng.random() < 0.5 else _dyadic(rng, (b,))
        else:
            W = rng.normal(0, 1, (b, a))
            bias = np.zeros(b) if rng.random() < 0.3 else rng.normal(0, 0.5, b)
        Ws.append(W.astype(np.float32).astype(np.float64))
        bs.append(bias.astype(np.float32).astype(np.float64))
    return Net(Ws, bs, head, index=int(rng.integers(0, 2)))


def _hidden(net: Net, X32: np.ndarray, upto: int) -> np.ndarray:
    H = X32.astype(np.float64)
    for k in range(upto):
        H = np.maximum(H @ net.Ws[k].T + net.bs[k], 0)
    return H


def _ties(rng, net: Net, X32: np.ndarray) -> dict:
    """Put a first-layer neuron's minimum over the domain exactly at 0 and the output exactly on
    the threshold at one domain point (exact when the weights and the encoded grid are dyadic)."""
    info = {}
    if rng.random() < 0.6:
        j = int(rng.integers(0, net.Ws[0].shape[0]))
        pre = X32.astype(np.float64) @ net.Ws[0][j] + net.bs[0][j]
        net.bs[0][j] = np.float32(net.bs[0][j] - pre.min())
        info["zero_min_neuron"] = j
    if rng.random() < 0.6:
        i0 = int(rng.integers(0, X32.shape[0]))
        H = _hidden(net, X32[i0:i0 + 1], len(net.Ws) - 1)
        z = H @ net.Ws[-1].T + net.bs[-1]
        if net.Ws[-1].shape[0] == 1:
            net.bs[-1][0] = np.float32(net.bs[-1][0] - z[0, 0])
        else:
            i = net.index
            net.bs[-1][i] = np.float32(net.bs[-1][i] - (z[0, i] - z[0, 1 - i]))
        info["tie_point"] = i0
    return info


def generate_sklearn(seed: int) -> Instance:
    """The ``network-sklearn`` family: the same instances with a scikit-learn runtime (logistic
    regression or MLP), whose decision is often a tiny non-zero number at a domain point, where
    ``predict`` and ``predict_proba > 1/2`` part (the truth is ``predict``)."""
    return generate(seed, runtime="sklearn", family=SKLEARN_FAMILY)


SKLEARN_FAMILY = "network-sklearn"


def generate(seed: int, n_props: int = 8, big: bool | None = None, runtime: str | None = None,
             family: str = FAMILY, props_fn=None) -> Instance:
    """One instance; ``big`` (by default one instance in eight) adds a wide integer feature so
    that the domain has thousands of points: beyond enumeration's reach, the solvers decide.
    ``runtime`` forces the model's runtime (onnx, torch, sklearn). ``props_fn(rng, fs, P, X, out,
    info, has_data, size)`` writes the properties instead (vacuous.py)."""
    rng = np.random.default_rng([20, seed])
    while True:
        fs = _features(rng)
        size = int(np.prod([f.size for f in fs]))
        if size <= 600:
            break
    if big is None:
        big = rng.random() < 0.125
    if big:
        fs.append(Feature("w", "int", lo=0, hi=int(rng.choice([49, 99, 199]))))
        size *= fs[-1].size
    has_data = rng.random() < 0.5
    encs = [_encoding(rng, f, has_data) for f in fs]
    if rng.random() < 0.3:   # the encode block lists features in another order than declared
        order = list(rng.permutation(len(encs)))
        encs = [encs[i] for i in order]
    names = [f.name for f in fs]
    P = grid(fs)
    files: dict = {}
    data_rows = None
    if has_data:
        n = int(rng.integers(8, 30))
        data_rows = P[rng.integers(0, P.shape[0], size=n)].copy()
        for e in encs:   # a fitted standard column: two values in equal numbers, mean and std exact
            if e.fitted and e.kind == "standard":
                c = names.index(e.feature.name)
                f = e.feature
                a, b = f.lo, f.hi
                data_rows[:, c] = np.where(np.arange(n) % 2 == 0, a, b)
                if n % 2:
                    data_rows = data_rows[:-1]
                    n -= 1
        for e in encs:
            if e.fitted:
                e.fit(data_rows[:, names.index(e.feature.name)])
        y = rng.integers(0, 2, size=data_rows.shape[0])
        files["d.csv"] = write_csv(fs, data_rows, {"y": y})
    X = encode_points(encs, P, names)
    X32 = X.astype(np.float32)
    d_in = X.shape[1]

    r = rng.random()
    runtime = runtime or ("onnx" if r < 0.8 else ("torch" if r < 0.9 else "sklearn"))
    if runtime == "onnx":
        head = HEADS[int(rng.integers(0, 4))]
    elif runtime == "torch":
        head = "logit1" if rng.random() < 0.7 else "sigmoid1"
    else:
        head = "sklearn"
    info = {"runtime": runtime, "head": head, "points": int(P.shape[0]), "big": bool(big),
            "encodings": {e.feature.name: e.text() for e in encs}}
    if runtime == "sklearn":
        model_decl, out = _sklearn(rng, X, files, info)
    else:
        net = _net(rng, d_in, head)
        info.update(_ties(rng, net, X32))
        if runtime == "onnx":
            dtype = info["dtype"] = onnx_dtype(seed)
            spelling = info["spelling"] = onnx_spelling(seed)
            files["m.onnx"] = net.onnx_bytes(dtype, spelling)
            Y = run_onnx(files["m.onnx"], X.astype(dtype))
            score = {"logit1": "logit", "logit2": "logit", "sigmoid1": "prob", "prob2": "prob"}[head]
            idx = f", index = {net.index}" if head in ("logit2", "prob2") else ""
            model_decl = f'model m = onnx("m.onnx", output = "out"{idx}, score = {score})'
        else:
            dtype = info["dtype"] = torch_dtype(seed)
            files["m.pt"] = net.torch_bytes(dtype)
            Y = run_torch(files["m.pt"], X.astype(dtype))
            model_decl = f'model m = torch("m.pt", score = {"logit" if head == "logit1" else "prob"})'
        out = readout(head, Y, net.index)
        info["weights"] = "dyadic" if all(np.all(W * 4 == np.round(W * 4)) for W in net.Ws) else "float"

    spec = ""
    if has_data:
        spec += 'data d = csv("d.csv", label = y == 1)\n'
    spec += "features F" + (" from d" if has_data else "") + " {\n" + "\n".join(f.decl() for f in fs) + "\n}\n"
    spec += model_decl + "\n"
    spec += "encode F for m {\n" + "\n".join(f"  {e.feature.name} : {e.text()}" for e in encs) + "\n}\n"

    if props_fn is not None:
        return Instance(family, seed, spec, files, props_fn(rng, fs, P, X, out, info, has_data, size), info)
    props = []
    for k in range(n_props):
        props.append(_property(rng, k, fs, P, X, out, info, has_data, size, family))
    return Instance(family, seed, spec, files, props, info)


def _sklearn(rng, X: np.ndarray, files: dict, info: dict):
    import warnings

    import skops.io as sio
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier

    y = np.arange(X.shape[0]) % 2
    if rng.random() < 0.5:
        est = MLPClassifier(hidden_layer_sizes=(int(rng.integers(2, 6)),), max_iter=5, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)
        est.coefs_ = [_dyadic(rng, c.shape) for c in est.coefs_]
        est.intercepts_ = [np.zeros(c.shape) if rng.random() < 0.5 else _dyadic(rng, c.shape)
                           for c in est.intercepts_]
        if rng.random() < 0.5:   # the output logit a tiny non-zero number at a domain point
            i0 = int(rng.integers(0, X.shape[0]))
            h = X[i0:i0 + 1]
            for W, b in zip(est.coefs_[:-1], est.intercepts_[:-1]):
                h = np.maximum(h @ W + b, 0.0)
            z = float((h @ est.coefs_[-1] + est.intercepts_[-1])[0, 0])
            est.intercepts_[-1] = est.intercepts_[-1] - z + _tiny(rng, est.intercepts_[-1][0] - z)
        kind = "mlp"
        decl = 'model m = sklearn("m.skops")'
    else:
        est = LogisticRegression()
        est.fit(X, y)
        est.coef_ = _dyadic(rng, est.coef_.shape)
        est.intercept_ = np.zeros(1) if rng.random() < 0.5 else _dyadic(rng, (1,))
        i0 = int(rng.integers(0, X.shape[0]))
        if rng.random() < 0.6:   # the decision function exactly 0 at a domain point
            est.intercept_ = est.intercept_ - est.decision_function(X[i0:i0 + 1])
            if rng.random() < 0.5:   # ... or a tiny non-zero number there: predict != predict_proba > 1/2
                est.intercept_ = est.intercept_ + _tiny(rng, est.intercept_[0])
        kind = "logistic"
        decl = 'model m = sklearn("m.skops")'
    buf = sio.dumps(est)
    files["m.skops"] = buf
    info["sklearn"] = kind
    est2 = sio.loads(buf, trusted=sio.get_untrusted_types(data=buf))
    label = est2.predict(X) == est2.classes_[1]
    p = est2.predict_proba(X)[:, 1]
    z = est2.decision_function(X) if kind == "logistic" else None
    return decl, Outputs(label, z, p, False)


POSTS = ("label", "label", "prob", "logit")
BACKENDS = ("default", "milp", "milp-scip", "smt")
MODES = ("prove", "prove", "find", "maximize")


def _property(rng, k, fs, P, X, out: Outputs, info, has_data, size, family: str = FAMILY) -> Prop:
    names = [f.name for f in fs]
    protected = [i for i, f in enumerate(fs) if f.protected]
    free = tuple(protected if rng.random() < 0.8 else protected[:1])
    others = [i for i in range(len(fs)) if i not in free]
    relaxed = []
    ints = [i for i in others if fs[i].kind == "int"]
    if ints and rng.random() < 0.4:
        i = ints[int(rng.integers(0, len(ints)))]
        tol, strict = [("1", False), ("1", True), ("2", True), ("0.5", False), ("2", False)][int(rng.integers(0, 5))]
        relaxed.append((i, tol, strict))
    tied = tuple(i for i in others if i not in [r[0] for r in relaxed])
    ps = PairSpec(free, tuple(relaxed), tied)

    posts = [p for p in POSTS if (p != "logit" or (out.logit is not None and not info.get("logit_ambiguous")))
             and (p != "prob" or not info.get("prob_ambiguous"))]
    post = posts[int(rng.integers(0, len(posts)))]
    op, eps = None, None
    status, best, n_pairs = post_truth(out, P, ps, "label", None, None) if post == "label" else (None, None, 0)
    if post != "label":
        # the exact maximal difference first, then a threshold chosen around it
        _, best, n_pairs = post_truth(out, P, ps, post, "<=", "0")
        D = best[0] if best is not None else 0.0
        Dx = exact_measure(out, post, best[1], best[2]) if best is not None else Fraction(0)
        op = "<=" if rng.random() < 0.6 else "<"
        choice = rng.random()
        text = decimal_text(Dx) if isinstance(Dx, Fraction) else None
        if choice < 0.4 and text is not None:
            eps = text                                    # the threshold is the exact optimum
        elif choice < 0.5 and op == "<=":
            eps = "0"
        elif choice < 0.75:
            eps = str(Fraction(int(rng.integers(0, 9)), 4).__float__())
        else:
            eps = f"{D * float(rng.choice([0.5, 0.9, 0.999, 1.001, 1.1, 2])):.6g}"
        eps = eps if "e" not in eps else "0"
        if op == "<" and float(eps) == 0:
            op = "<="                                     # `< 0` admits no pair: lint's FS307
        status, best, n_pairs = post_truth(out, P, ps, post, op, eps)
    # hints for the report's defect classes: would the other strictness (of the tolerance, of a
    # relaxed feature's bound, of the decision at the threshold) change the truth?
    hints = {}
    if post != "label":
        hints["tie"] = post_truth(out, P, ps, post, "<" if op == "<=" else "<=", eps)[0] != status
    else:
        alt = Outputs(out.logit >= 0 if out.logit is not None else out.prob >= 0.5, out.logit, out.prob,
                      out.prob_is_sigmoid)
        hints["tie"] = post_truth(alt, P, ps, "label", None, None)[0] != status
    if any(r[2] for r in relaxed):
        ps2 = PairSpec(free, tuple((i, t, False) for i, t, _ in relaxed), tied)
        hints["relaxed_tie"] = post_truth(out, P, ps2, post, op, eps)[0] != status

    backend = BACKENDS[int(rng.integers(0, len(BACKENDS)))]
    mode = MODES[int(rng.integers(0, len(MODES)))]
    parts = int(rng.choice([0, 0, 0, 2, 3, 4]))
    lines = ["forall x, x' : F", "require x.* == x'.* except {" + ", ".join(names[i] for i in free) + "}"]
    for i, tol, strict in relaxed:
        lines.append(f"require |x.{names[i]} - x'.{names[i]}| {'<' if strict else '<='} {tol}")
    if post == "label":
        lines.append("ensure label(m(x)) == label(m(x'))")
    else:
        lines.append(f"ensure |{post}(m(x)) - {post}(m(x'))| {op} {eps}")
    if backend == "milp":
        lines.append("using milp")
    elif backend == "milp-scip":
        lines += ["using milp", "engine = scip"]
    elif backend == "smt":
        lines.append("using smt")
    if mode != "prove" or rng.random() < 0.2:
        lines.append(f"mode = {mode}")
    if parts:
        lines.append(f"partitions = {parts}")
    timeout = 20
    lines.append(f"timeout = {timeout}s")
    name = f"p{k}"
    text = f"property {name} {{\n  " + "\n  ".join(lines) + "\n}"
    value = measure_value(out, post, best) if mode == "maximize" else None
    # the exact maximum where the floats round it (a difference of float64 scores, the real sigmoid);
    # a label's min(z, -z') is exact as it is. fairspec's measure of a logit model's prob is the real
    # logistic of each logit rounded down within 2**-40 (pair_runtime.runtime_measure): that much slack
    ex = best[3] if value is not None and post != "label" and len(best) > 3 else None
    slack = Fraction(1, 2 ** 39) if post == "prob" and out.prob is None else 0
    if value is not None and post != "label" and ex is None:
        value = None                       # a maximum the truth cannot settle exactly is not judged
    truth = Truth(status, value=value, value_kind="max" if value is not None else None,
                  check_witness=_witness_checker(fs, P, ps, out, post, op, eps, X), domain=size, pairs=n_pairs,
                  exact=ex, slack=slack)
    meta = {"post": post, "op": op, "eps": eps, "backend": backend, "mode": mode, "partitions": parts,
            "head": info["head"], "runtime": info["runtime"], "data": has_data,
            "relaxed": [(names[i], t, s) for i, t, s in relaxed], **hints}
    return Prop(name, family, text, truth, meta, timeout)


def _witness_checker(fs, P, ps: PairSpec, out: Outputs, post, op, eps, X):
    names = [f.name for f in fs]
    radix = [f.size for f in fs]
    offs = [f.lo if f.kind == "int" else 0 for f in fs]
    X32 = X.astype(np.float32).astype(np.float64)
    X16 = X.astype(np.float16).astype(np.float64)       # a float16 graph's inputs

    def index_of(vals):
        i = 0
        for v, r, o in zip(vals, radix, offs):
            i = i * r + (v - o)
        return i

    def check(w: dict) -> str | None:
        if not w:
            return "a violation without a witness"
        pts = []
        for side in ("features", "features_prime"):
            feats = w.get(side) or {}
            vals = []
            for f in fs:
                if f.name not in feats:
                    return f"the witness's {side} lack feature {f.name}"
                v = f.read(feats[f.name])
                if v is None:
                    return f"the witness's {side} value {f.name} = {feats[f.name]!r} is not in the domain"
                vals.append(v)
            pts.append(vals)
        a, b = index_of(pts[0]), index_of(pts[1])
        assert list(P[a]) == pts[0] and list(P[b]) == pts[1]
        if w.get("x") is not None:
            for side, i in (("x", a), ("x_prime", b)):
                got = np.asarray(w[side], dtype=np.float64)
                want = X[i]
                if got.shape != want.shape or not (np.allclose(got, want, rtol=1e-9, atol=1e-12)
                                                   or np.allclose(got, X32[i], rtol=1e-9, atol=1e-12)
                                                   or np.allclose(got, X16[i], rtol=1e-9, atol=1e-12)):
                    return f"the witness's {side} {got.tolist()} is not the encoding {want.tolist()} of its features"
        if all(pts[0][f] == pts[1][f] for f in ps.free):
            return "the witness pair does not differ in any protected feature"
        for f in ps.tied:
            if pts[0][f] != pts[1][f]:
                return f"the witness pair differs in {names[f]}, which the pre-condition ties"
        for f, tol, strict in ps.relaxed:
            d = Fraction(abs(pts[0][f] - pts[1][f]))
            if not (d < Fraction(tol) if strict else d <= Fraction(tol)):
                return f"the witness pair's {names[f]} differ by {d}, beyond the tolerance"
        if post == "label":
            if out.label[a] == out.label[b]:
                return "the witness pair gets the same decision on the model's runtime"
            return None
        d = exact_measure(out, post, a, b)
        if d is None:
            return None
        e = exact(eps)
        if (d > e) if op == "<=" else (d >= e):
            return None
        return f"the witness pair's {post} difference {float(d)!r} does not break {op} {eps} on the model's runtime"

    return check
