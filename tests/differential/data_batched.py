"""Group metrics and counterfactual flips on data rows of models whose runtime rounds a row by the batch
it is scored in (``data-batched``): a torch Sigmoid network with rows at its logit's tie (the output bias
moved, a few ulps of 1/2 at a time, until those rows' probability is above 1/2 in some batchings and not in
others, when such a bias is found), a scikit-learn MLPClassifier with rows at a tiny logit (likewise), an SVC(probability=True) with rows between its Platt 1/2 and its decision
function's 0 (its label is ``predict``, not the Platt score), a GaussianNB (label ``predict``, the joint
likelihood's argmax).

The truth decides every row in several batchings (the file's rows in one batch, each alone, reversed,
in chunks of 7 and of 32): the label is the runtime's own (torch: probability > 1/2; scikit-learn:
``predict``). A metric whose verdict is the same in every batching has that truth (its exact value when
that is the same too); one whose verdict changes with the batching is ``batch-dependent``: fairspec must
say ``unknown`` (judge.judge_verdict; its reason then ends in campaign.BATCH_TIE). Flips: a row whose pair
(sex changed) is labelled apart in every batching (the data's, the pair, reversed, each alone) makes the
truth ``violated``; no pair apart in any batching, ``holds`` (the data backend never proves flips: its
answer is then `unknown`); else ``batch-dependent``. A flip witness must be labelled apart as a pair,
reversed, each point alone and within the data's batch. Flips with an eps (``eflips``, session 32:
``|prob(m(x)) - prob(m(x'))| <= eps``, eps often between two values the batchings give the largest difference,
or a few ulps below it) likewise: a row above eps in every batching makes the truth ``violated``, none in any
``holds``, else ``batch-dependent``; a witness must be above eps as a pair, reversed, alone and within the data.
"""

from __future__ import annotations

import copy
import io
import re
import warnings
from fractions import Fraction

import numpy as np

from .core import Instance, Prop, Truth, claim_holds, decimal_text
from .data_metrics import DIFF, LOWER_IS_FAIR, RATIO, _rates, _value

FAMILY = "data-batched"
KINDS = ("torch", "mlp", "svc", "gnb")
SEXES = ("F", "M")


def _batchings(n: int) -> dict:
    """name -> list of index arrays (the batches, in order)."""
    idx = np.arange(n)
    return {"data": [idx], "alone": [idx[i:i + 1] for i in range(n)], "reversed": [idx[::-1]],
            "chunks7": [idx[i:i + 7] for i in range(0, n, 7)], "chunks32": [idx[i:i + 32] for i in range(0, n, 32)]}


class Runtime:
    """The model's label on a batch, as its runtime gives it."""

    def __init__(self, kind: str, blob: bytes):
        self.kind, self.blob = kind, blob
        if kind == "torch":
            import torch
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                self.m = torch.jit.load(io.BytesIO(blob))
        else:
            import skops.io as sio
            self.m = sio.loads(blob, trusted=sio.get_untrusted_types(data=blob))

    def label(self, X: np.ndarray) -> np.ndarray:
        if self.kind == "torch":
            import torch
            with torch.no_grad():
                p = self.m(torch.from_numpy(np.asarray(X, dtype=np.float32))).to(torch.float64).numpy()[:, 0]
            return p > 0.5
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self.m.predict(np.asarray(X, dtype=np.float64)) == self.m.classes_[1]

    def prob(self, X: np.ndarray) -> np.ndarray:
        """The probability ``prob(m(x))`` reads: torch's Sigmoid output, scikit-learn's ``predict_proba`` of
        class 1 (float64)."""
        if self.kind == "torch":
            import torch
            with torch.no_grad():
                return self.m(torch.from_numpy(np.asarray(X, dtype=np.float32))).to(torch.float64).numpy()[:, 0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.asarray(self.m.predict_proba(np.asarray(X, dtype=np.float64)), dtype=np.float64)[:, 1]

    def labels(self, X: np.ndarray) -> dict:
        """batching name -> the rows' labels."""
        return self.labels_of(self.label, X)

    @staticmethod
    def labels_of(label, X: np.ndarray, dtype=bool) -> dict:
        out = {}
        for name, batches in _batchings(X.shape[0]).items():
            lab = np.zeros(X.shape[0], dtype=dtype)
            for b in batches:
                lab[b] = label(X[b])
            out[name] = lab
        return out


def _unstable(rt_label, X: np.ndarray, rows: np.ndarray) -> bool:
    """Are ``rows`` labelled otherwise in some batching?"""
    out = Runtime.labels_of(rt_label, X)
    return any((lab[rows] != out["data"][rows]).any() for lab in out.values())


#: offsets (in units of the threshold's ulp scale) tried on the tie row's bias until its label changes with the
#: batching (the first that does is kept, else the last: a tie stable in every batching tried)
OFFSETS = (0, 2, -2, 3, -3, 1, -1, 4, -4, 6, -6, 8, -8)


def _torch_model(rng, X, tie):
    import torch

    torch.manual_seed(int(rng.integers(0, 2 ** 31)))
    h = int(rng.integers(6, 32))
    body = torch.nn.Sequential(torch.nn.Linear(3, h), torch.nn.ReLU(), torch.nn.Linear(h, 1)).float()
    seq = torch.nn.Sequential(*body, torch.nn.Sigmoid()).eval()
    rows = np.flatnonzero((X == tie).all(axis=1))
    X32 = torch.from_numpy(X.astype(np.float32))

    def label(Xb):
        with torch.no_grad():
            return (seq(torch.from_numpy(np.asarray(Xb, dtype=np.float32))).to(torch.float64).numpy()[:, 0]) > 0.5
    with torch.no_grad():
        for _ in range(3):       # the tie row's logit (in the data's batch) within an ulp of 0
            z = body(X32)[rows[0], 0]
            body[2].bias -= z
        b0 = body[2].bias.clone()
        for k in OFFSETS:        # then a few ulps of 1/2 either way until the tie rows' label moves with the batch
            body[2].bias.copy_(b0 + k * 2.0 ** -24)
            if _unstable(label, X, rows):
                break
    buf = io.BytesIO()
    torch.jit.save(torch.jit.script(seq), buf)
    return buf.getvalue(), 'model m = torch("m.pt", score = prob)', "m.pt"


def _sklearn_model(rng, kind, X, y, tie):
    import skops.io as sio
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neural_network import MLPClassifier
    from sklearn.svm import SVC

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "mlp":
            est = MLPClassifier(hidden_layer_sizes=(int(rng.integers(3, 8)),), max_iter=30,
                                random_state=int(rng.integers(0, 1000))).fit(X, y)
            h = tie[None].astype(np.float64)
            for W, b in zip(est.coefs_[:-1], est.intercepts_[:-1]):
                h = np.maximum(h @ W + b, 0.0)
            z = float((h @ est.coefs_[-1] + est.intercepts_[-1])[0, 0])
            b0 = est.intercepts_[-1] - z      # the tie row's logit ~ 0 (an ulp or so), then a few ulps of 1/2 either way
            rows = np.flatnonzero((X == tie).all(axis=1))
            for k in OFFSETS:
                est.intercepts_[-1] = b0 + k * 2.0 ** -53
                if _unstable(lambda Xb: est.predict(Xb) == est.classes_[1], X, rows):
                    break
        elif kind == "svc":
            est = SVC(kernel="linear", probability=True, random_state=int(rng.integers(0, 1000))).fit(X, y)
        else:
            est = GaussianNB().fit(X, y)
    return sio.dumps(est), 'model m = sklearn("m.skops")', "m.skops"


def _between_platt_and_predict(blob, grid):
    """Grid points an SVC's predict and its Platt probability (> 1/2) label apart."""
    rt = Runtime("svc", blob)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = rt.m.predict_proba(grid)[:, 1] > 0.5
    return grid[p != rt.label(grid)]


def _shuffled(rng, X, y, extra):
    X = np.vstack([X, np.array(extra)])
    y = np.concatenate([y, (rng.random(len(extra)) < 0.5).astype(int)])
    perm = rng.permutation(X.shape[0])
    return X[perm], y[perm]


def generate(seed: int, n_props: int = 5) -> Instance:
    rng = np.random.default_rng([41, seed])
    kind = KINDS[seed % len(KINDS)] if rng.random() < 0.8 else str(rng.choice(KINDS))
    n = int(rng.integers(50, 160))
    a = rng.integers(0, 21, n)
    b = rng.integers(0, 21, n)
    s = (rng.random(n) < 0.55).astype(int)
    y = ((a + 0.5 * b + 3 * s + rng.normal(0, 4, n)) > 14).astype(int)
    X = np.column_stack([a, b, s]).astype(np.float64)
    tie = np.array([int(rng.integers(0, 21)), int(rng.integers(0, 21)), int(rng.integers(0, 2))], dtype=np.float64)
    # rows at the tie (and its other sex), in the data before the model is fitted and its tie placed
    extra = [tie] * int(rng.integers(8, 40)) + [tie * [1, 1, 0] + [0, 0, 1 - tie[2]]] * int(rng.integers(0, 6))
    X, y = _shuffled(rng, X, y, extra)
    if kind == "torch":
        blob, decl, fname = _torch_model(rng, X, tie)
    else:
        blob, decl, fname = _sklearn_model(rng, kind, X, y, tie)
    if kind == "svc":            # ... and rows between an SVC's Platt 1/2 and its predict
        g = np.array([[i, j, k] for i in range(21) for j in range(21) for k in (0, 1)], dtype=np.float64)
        between = _between_platt_and_predict(blob, g)
        if len(between):
            X, y = _shuffled(rng, X, y, [between[int(rng.integers(0, len(between)))]
                                         for _ in range(int(rng.integers(3, 15)))])
    n = X.shape[0]
    rt = Runtime("torch" if kind == "torch" else "sklearn", blob)
    labs = rt.labels(X)

    sex = np.array([SEXES[int(v)] for v in X[:, 2]])
    text = "a,b,sex,y\n" + "".join(f"{int(r[0])},{int(r[1])},{sex[i]},{int(y[i])}\n" for i, r in enumerate(X))
    files = {"d.csv": text.encode(), fname: blob}
    spec = ('data d = csv("d.csv", label = y == 1)\n'
            "features P from d {\n  a : int in [0, 20]\n  b : int in [0, 20]\n  sex : {F, M}  protected\n}\n"
            + decl + "\nencode P for m {\n  a : raw\n  b : raw\n  sex : code\n}\n")
    import pandas as pd
    df = pd.DataFrame({"sex": sex, "__y": y.astype(bool)})
    unit = np.array([Fraction(1)] * n, dtype=object)
    unstable = int(sum((labs[k] != labs["data"]).any() for k in labs))
    info = {"rows": n, "kind": kind, "tie": tie.tolist(), "unstable_rows":
            int(np.any([labs[k] != labs["data"] for k in labs], axis=0).sum()), "batchings_differing": unstable}
    runtime = "torch" if kind == "torch" else "sklearn"
    meta0 = {"runtime": runtime, "kind": kind, "dtype": "float32" if kind == "torch" else "float64"}
    props = []
    for k in range(n_props - 1):
        metric = str(rng.choice(list(DIFF) + list(RATIO) + ["equalized_odds"]))
        per = {}
        for name, lab in labs.items():
            per[name] = _value(metric, _rates(df, lab, unit, ["sex"]))
        if any(v is None for v in per.values()):
            metric = "statistical_parity"
            per = {name: _value(metric, _rates(df, lab, unit, ["sex"])) for name, lab in labs.items()}
        value = per["data"]
        lower = metric in LOWER_IS_FAIR
        op = ("<=" if rng.random() < 0.5 else "<") if lower else (">=" if rng.random() < 0.5 else ">")
        vals = sorted(set(per.values()))
        c = rng.random()
        if c < 0.5 and len(vals) > 1:        # a threshold between the batchings' values, or at one of them
            lo, hi = vals[0], vals[-1]
            t = decimal_text(vals[int(rng.integers(0, len(vals)))]) if rng.random() < 0.4 else None
            thr = t if t is not None else f"{float((lo + hi) / 2):.6g}"
        elif c < 0.75 and decimal_text(value) is not None:
            thr = decimal_text(value)
        else:
            thr = f"{float(value) + float(rng.choice([-0.2, -0.05, 0.05, 0.2])):.6g}"
        if thr.startswith("-") or "e" in thr:
            thr = "0"
        if Fraction(thr) > 1:
            thr = "1"
        if op == ">" and Fraction(thr) >= 1:    # every metric here lies in [0, 1]: never met, FS507 at lint
            op = ">="
        if op == "<" and Fraction(thr) <= 0:
            op = "<="
        seen = {("holds" if claim_holds(v, op, thr) else "violated") for v in per.values()}
        if len(seen) == 1:
            status = seen.pop()
            same = len(vals) == 1
            truth = Truth(status, value=float(value) if same else None, value_kind="metric" if same else None,
                          domain=-1, exact=value if same else None,
                          note=f"{metric} over {n} rows: {sorted(map(str, vals))} across batchings")
        else:
            truth = Truth("batch-dependent", domain=-1,
                          note=f"{metric} {dict((k, str(v)) for k, v in per.items())}: {op} {thr} changes with the batch")
        body = (f"property d{k} {{\n  {metric}(m, groups sex) {op} {thr}\n  bootstrap = 100\n  seed = {k}\n"
                f"  min_group_size = 1\n}}")
        props.append(Prop(f"d{k}", FAMILY, body, truth, {**meta0, "metric": metric, "op": op, "threshold": thr,
                                                        "point_value": len(vals) == 1,
                                                        "batch_dependent": len(seen) > 1}, 60))
    props.append(_flips(rt, X, labs, meta0))
    props.append(_eps_flips(rt, X, meta0, np.random.default_rng([43, seed])))
    inst = Instance(FAMILY, seed, spec, files, props, info)
    if seed >= SAMPLED_FROM:
        props += _sampled_flips(seed, rt, X, labs, meta0)
        inst.judge = _judge
    return inst


# ------------------------------------------------------------------ session 32: max_rows and seed on flips

#: instance seeds from here on also get the flips property with ``max_rows`` (and ``seed``); earlier instances
#: are unchanged
SAMPLED_FROM = 85_000_000


def _sampled_flips(seed, rt, X, labs, meta0) -> list:
    """The flips property with ``max_rows = N`` (README 'Options': flip a random sample of at most N data rows,
    seeded by ``seed``): 1, a few, half the rows, all of them or more. Its truth is the whole property's (a row
    outside the sample still counts): a `violated` needs a witness that replays as every flip's; a sample that
    finds none is no proof that no row flips, so `holds` is wrong unless every row was flipped
    (:func:`_judge`)."""
    rng = np.random.default_rng([41, seed, 85])
    n = X.shape[0]
    out = []
    whole = _flips(rt, X, labs, meta0)
    for j, N in enumerate(sorted({int(v) for v in rng.choice([1, 3, n // 2, n, 10 * n], size=2, replace=False)})):
        base = copy.copy(whole)
        lines = base.text.split("\n")
        opts = [f"  max_rows = {N}"] + ([f"  seed = {int(rng.integers(0, 2 ** 32))}"] if rng.random() < 0.7 else [])
        lines[-1:-1] = opts
        base.name = f"flips_s{j}"
        base.text = "\n".join(lines).replace("property flips {", f"property flips_s{j} {{", 1)
        base.meta = {**base.meta, "max_rows": N, "sampled": N < n}
        out.append(base)
    return out


def _judge(spec, props, base):
    """The default judgement, and: a flips property whose ``max_rows`` sample is smaller than the data proves
    nothing about the rows outside it (a `holds` there is wrong whatever the truth)."""
    from .judge import _check_group

    outs = _check_group(spec, props, base)
    by_name = {p.name: p for p in props}
    for o in outs:
        m = by_name[o.name].meta
        if m.get("sampled") and o.status == "holds" and o.klass != "wrong":
            o.klass, o.defect = "wrong", "sample-holds"
            o.why = f"holds from a sample of {m['max_rows']} rows"
        k = re.search(r"among (\d+) data rows", o.reason or "")
        if m.get("max_rows") and k and int(k.group(1)) > m["max_rows"] and o.klass != "wrong":
            o.klass, o.defect = "wrong", "sample-size"
            o.why = f"the reason counts {k.group(1)} rows flipped, more than max_rows = {m['max_rows']}"
    return outs


def _witness_pair(w: dict):
    """A flips witness's two points of the domain (a, b integers in [0, 20], sex one of SEXES), differing in sex
    alone, as model inputs; else why not."""
    if not w:
        return "a violation without a witness"
    pts = []
    for side in ("features", "features_prime"):
        f = w.get(side) or {}
        try:
            av, bv, sv = Fraction(str(f["a"])), Fraction(str(f["b"])), str(f["sex"])
        except (KeyError, ValueError):
            return f"the witness's {side} {f!r} is not a point of P"
        if av.denominator != 1 or bv.denominator != 1 or not (0 <= av <= 20 and 0 <= bv <= 20) or sv not in SEXES:
            return f"the witness's {side} {f!r} is not in the domain"
        pts.append(np.array([float(av), float(bv), float(SEXES.index(sv))]))
    x, xp = pts
    if x[0] != xp[0] or x[1] != xp[1] or x[2] == xp[2]:
        return "the witness pair does not differ in sex alone"
    return x, xp


def _pair_labels(rt: Runtime, x: np.ndarray, xp: np.ndarray, data: np.ndarray | None = None) -> list:
    """(label x, label x') in each batching of the pair: together, reversed, alone, within ``data``."""
    P = np.vstack([x, xp])
    out = [rt.label(P), rt.label(P[::-1])[::-1], np.concatenate([rt.label(P[:1]), rt.label(P[1:])])]
    if data is not None:
        out.append(rt.label(np.vstack([data, P]))[-2:])
    return [(bool(a), bool(b)) for a, b in out]


def _flips(rt: Runtime, X: np.ndarray, labs: dict, meta0: dict) -> Prop:
    Xp = X.copy()
    Xp[:, 2] = 1 - Xp[:, 2]
    cf = rt.labels(Xp)
    apart_any = np.zeros(X.shape[0], dtype=bool)
    apart_all = np.ones(X.shape[0], dtype=bool)
    for name in labs:
        d = labs[name] != cf[name]
        apart_any |= d
        apart_all &= d
    rows = sorted(set(np.flatnonzero(apart_any).tolist()))
    for i in rows:                           # the pair's own batchings (as fairspec replays a candidate)
        for l0, l1 in _pair_labels(rt, X[i], Xp[i]):
            apart_any[i] |= l0 != l1
            apart_all[i] &= l0 != l1
    if apart_all.any():
        status = "violated"
    elif not apart_any.any():
        status = "holds"
    else:
        status = "batch-dependent"

    def check(w: dict):
        pair = _witness_pair(w)
        if isinstance(pair, str):
            return pair
        x, xp = pair
        got = _pair_labels(rt, x, xp, X)
        if any(l0 == l1 for l0, l1 in got):
            return f"the witness pair is labelled alike in some batching ({got}): a flip that depends on the batch"
        return None

    truth = Truth(status, check_witness=check, domain=-1,
                  note=f"{int(apart_all.sum())} rows flip in every batching, {int(apart_any.sum())} in some")
    body = ("property flips {\n  forall x, x' : P\n  require x.* == x'.* except {sex}\n"
            "  ensure label(m(x)) == label(m(x'))\n  using data\n}")
    return Prop("flips", FAMILY, body, truth, {**meta0, "metric": "flips", "batch_dependent": status == "batch-dependent"}, 60)


def _pair_gaps(rt: Runtime, x: np.ndarray, xp: np.ndarray, data: np.ndarray | None = None) -> list:
    """|prob(x) - prob(x')| (exact, of the runtime's floats) in each batching of the pair: together, reversed,
    alone, within ``data``."""
    P = np.vstack([x, xp])
    runs = [rt.prob(P), rt.prob(P[::-1])[::-1], np.concatenate([rt.prob(P[:1]), rt.prob(P[1:])])]
    if data is not None:
        runs.append(rt.prob(np.vstack([data, P]))[-2:])
    return [abs(Fraction(float(a)) - Fraction(float(b))) for a, b in runs]


def _eps_flips(rt: Runtime, X: np.ndarray, meta0: dict, rng) -> Prop:
    """``|prob(m(x)) - prob(m(x'))| <= eps`` on the data rows (session 32): a row whose difference exceeds eps in
    every batching (the data's five, the pair's own three) makes the truth ``violated``; none in any, ``holds``
    (the data backend then says unknown); else ``batch-dependent``. eps is, half the time, between two values
    the batchings give the largest difference (at a batch tie), or a few ulps below it where they all agree."""
    Xp = X.copy()
    Xp[:, 2] = 1 - Xp[:, 2]
    a, b = Runtime.labels_of(rt.prob, X, np.float64), Runtime.labels_of(rt.prob, Xp, np.float64)
    gaps = [[abs(Fraction(float(a[k][i])) - Fraction(float(b[k][i]))) for k in a] for i in range(X.shape[0])]
    for i in range(X.shape[0]):
        gaps[i] += _pair_gaps(rt, X[i], Xp[i])
    top = max(range(X.shape[0]), key=lambda i: max(gaps[i]))
    vals = sorted(set(gaps[top]))
    c = rng.random()
    eps = None
    if c < 0.5:
        if len(vals) > 1:                    # between two of the batchings' values (a batch tie)
            k = int(rng.integers(0, len(vals) - 1))
            if vals[k + 1] - vals[k] > vals[k + 1] * Fraction(1, 10 ** 11):
                eps = decimal_text((vals[k] + vals[k + 1]) / 2) or f"{float((vals[k] + vals[k + 1]) / 2):.15g}"
        elif vals[0] > 0:                    # a few ulps below the one value (float32: about 1e-7 relative)
            eps = f"{float(vals[0]) * (1 - 1e-9):.15g}"
    if eps is None:
        eps = f"{float(vals[-1]) * float(rng.choice([0.3, 0.7, 0.95, 1.2])):.4g}"
    if "e" in eps:
        eps = np.format_float_positional(float(eps), trim="-")
    if Fraction(eps) <= 0:
        eps = "0.001"
    e = Fraction(eps)
    apart_all = [all(g > e for g in gs) for gs in gaps]
    apart_any = [any(g > e for g in gs) for gs in gaps]
    status = "violated" if any(apart_all) else "holds" if not any(apart_any) else "batch-dependent"

    def check(w: dict):
        pair = _witness_pair(w)
        if isinstance(pair, str):
            return pair
        x, xp = pair
        got = _pair_gaps(rt, x, xp, X)
        if any(g <= e for g in got):
            return (f"the witness pair's |p - p'| is at most eps = {eps} in some batching "
                    f"({[float(g) for g in got]}): a violation that depends on the batch")
        return None

    truth = Truth(status, check_witness=check, domain=-1,
                  note=f"eps {eps}: {sum(apart_all)} rows above it in every batching, {sum(apart_any)} in some")
    body = ("property eflips {\n  forall x, x' : P\n  require x.* == x'.* except {sex}\n"
            f"  ensure |prob(m(x)) - prob(m(x'))| <= {eps}\n  using data\n}}")
    return Prop("eflips", FAMILY, body, truth, {**meta0, "metric": "eps-flips",
                                                "batch_dependent": status == "batch-dependent"}, 60)
