"""Models as teams ship them (session 17's audits): the file's outputs, columns and labels read
as the declaration names them, and refused when the declaration leaves them ambiguous.

One shape per instance (``SHAPES``, the seed's own), each with

* expected refusals (:class:`core.Expect`, judged by ``judge.judge_refusal`` on the command line's
  exit code and JSON): the declaration that does not say which output / column / score -- several
  ONNX outputs and none named, an output of labels or a ZipMap (FS413 at lint), a torch module that
  returns a tuple or a Softmax head of two columns without ``index`` (FS413, the model file's
  sentence at check), scikit-learn labels other than {0, 1} / {-1, 1} / {False, True} without
  ``index`` (FS413: at lint from a skops file, at check from a pickle, which lint never opens),
  ``prob(...)`` and ``calibration_gap`` of a LinearSVC without ``score = logit`` (FS415);
* verdicts on the declaration that names the choice, judged against enumeration on the model's
  own runtime: onnxruntime for skl2onnx graphs (the ``probabilities`` column ``index``, class 1 iff
  it is > 1/2), torch for torch modules (a Sequential's Sigmoid / Softmax head read as
  probabilities, declared or not; a tuple's element ``output``), scikit-learn's ``predict`` /
  ``predict_proba[:, index]`` / ``decision_function`` for skops and pickled models -- individual
  fairness (label / prob / logit posts, prove / find / maximize) and group metrics on the data
  rows (statistical parity, disparate impact, equal opportunity: the positive class counted).

Ties on purpose: weights multiples of 1/4, a decision exactly 0 (a probability exactly 1/2) at a
domain point, tree leaves with probabilities in {0, 1/4, 1/2, 3/4, 1}, thresholds equal to the
exact maximal difference or the metric's exact value.
"""

from __future__ import annotations

import io
import pickle
import warnings
from fractions import Fraction

import numpy as np

from . import networks as nw
from .core import Enc, Expect, Feature, Instance, Prop, Truth, claim_holds, decimal_text, encode_points, grid, \
    write_csv
from .data_metrics import _rates, _value

FAMILY = "shipped"

SHAPES = ("torch-sigmoid", "torch-softmax", "torch-tuple", "onnx-logistic", "onnx-tree", "sklearn-strings",
          "sklearn-12", "linearsvc")
LABELS = (("approve", "deny"), ("no", "yes"), ("bad", "good"))


def shape_of(seed: int) -> str:
    """The seed's shape: campaign seeds are seed * 1e6 + i, so consecutive instances take every shape."""
    return SHAPES[seed % len(SHAPES)]


# ------------------------------------------------------------------ the models


def _torch_script(module) -> bytes:
    import torch

    buf = io.BytesIO()
    torch.jit.save(torch.jit.script(module.eval()), buf)
    return buf.getvalue()


def _tuple_module(net: nw.Net):
    """A module (not a Sequential) returning (logit, sigmoid(logit)): the decision's head is the
    declaration's to name."""
    import torch

    class Heads(torch.nn.Module):
        def __init__(self, body):
            super().__init__()
            self.body = body

        def forward(self, x):
            z = self.body(x)
            return z, torch.sigmoid(z)

    seq = torch.nn.Sequential()
    for k, (W, b) in enumerate(zip(net.Ws, net.bs)):
        lin = torch.nn.Linear(W.shape[1], W.shape[0])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(W.astype(np.float32)))
            lin.bias.copy_(torch.from_numpy(b.astype(np.float32)))
        seq.append(lin)
        if k < len(net.Ws) - 1:
            seq.append(torch.nn.ReLU())
    return Heads(seq)


def _run_torch_tuple(data: bytes, X: np.ndarray, pos: int) -> np.ndarray:
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        m = torch.jit.load(io.BytesIO(data))
    with torch.no_grad():
        return m(torch.from_numpy(np.asarray(X, dtype=np.float32)))[pos].to(torch.float64).numpy()


def _fit_linear(rng, est, X: np.ndarray, y: np.ndarray):
    """A linear classifier fitted on X, then given dyadic weights and (mostly) a decision exactly 0
    at a domain point (a probability exactly 1/2)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    est.coef_ = nw._dyadic(rng, est.coef_.shape)
    est.intercept_ = np.zeros(1) if rng.random() < 0.5 else nw._dyadic(rng, (1,))
    if rng.random() < 0.7:
        i0 = int(rng.integers(0, X.shape[0]))
        est.intercept_ = est.intercept_ - est.decision_function(X[i0:i0 + 1])
    return est


def _fit_tree(rng, X: np.ndarray, y: np.ndarray):
    """A small decision tree whose leaves hold probabilities in {0, 1/4, 1/2, 3/4, 1}."""
    from sklearn.tree import DecisionTreeClassifier

    est = DecisionTreeClassifier(max_depth=int(rng.integers(1, 4)), random_state=0).fit(X, y)
    v = est.tree_.value
    for leaf in np.flatnonzero(est.tree_.children_left == -1):
        q = float(rng.choice([0.0, 0.25, 0.5, 0.5, 0.75, 1.0]))
        v[leaf, 0, :] = [1.0 - q, q]
    return est


def _skl2onnx(est, d_in: int, zipmap: bool) -> bytes:
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        onx = convert_sklearn(est, initial_types=[("x", FloatTensorType([None, d_in]))],
                              options={id(est): {"zipmap": zipmap}}, target_opset=17)
    return onx.SerializeToString()


def _onnx_probabilities(data: bytes, X: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    s = ort.InferenceSession(data, sess_options=opts, providers=["CPUExecutionProvider"])
    return np.asarray(s.run(["probabilities"], {"x": X.astype(np.float32)})[0], dtype=np.float64)


def _sklearn_outputs(est, X: np.ndarray, index: int, logit: bool) -> nw.Outputs:
    """The label by the estimator's own predict, its class-``index`` probability, its margin."""
    label = est.predict(X) == est.classes_[index]
    z = est.decision_function(X).astype(np.float64) if logit else None
    if hasattr(est, "predict_proba"):
        return nw.Outputs(label, z, est.predict_proba(X)[:, index].astype(np.float64), False)
    return nw.Outputs(label, z, None, True)         # score = logit: prob is the real sigmoid of the margin


def _model(rng, shape: str, X: np.ndarray, files: dict, info: dict):
    """(named declarations [(decl, Outputs, tag)], refusals [(decl, Expect, post)], backends)."""
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    d_in = X.shape[1]
    X32 = X.astype(np.float32)
    y = np.arange(X.shape[0]) % 2
    pairs_all = ("default", "default", "milp", "smt")
    if shape in ("torch-sigmoid", "torch-softmax", "torch-tuple"):
        head = {"torch-sigmoid": "sigmoid1", "torch-softmax": "prob2", "torch-tuple": "logit1"}[shape]
        net = nw._net(rng, d_in, head)
        info.update(nw._ties(rng, net, X32))
        info["runtime"], info["dtype"] = "torch", "float32"
        if shape == "torch-tuple":
            files["m.pt"] = _torch_script(_tuple_module(net))
            z, p = (_run_torch_tuple(files["m.pt"], X, k) for k in (0, 1))
            named = [('torch("m.pt", output = 0)', nw.readout("logit1", z), "output-0"),
                     ('torch("m.pt", output = 1, score = prob)', nw.readout("sigmoid1", p), "output-1")]
            return named, [('torch("m.pt")', Expect("FS413", "check", "does not say which one"), "label")], ("default",)
        files["m.pt"] = net.torch_bytes()
        Y = nw.run_torch(files["m.pt"], X)
        if shape == "torch-sigmoid":       # a Sequential ending in Sigmoid: probabilities, declared or not
            out = nw.readout("sigmoid1", Y)
            return [('torch("m.pt", score = prob)', out, "score-prob"), ('torch("m.pt")', out, "undeclared")], [], pairs_all
        i = net.index
        score = ", score = prob" if rng.random() < 0.5 else ""
        return ([(f'torch("m.pt", index = {i}{score})', nw.readout("prob2", Y, i), f"index-{i}")],
                [('torch("m.pt")', Expect("FS413", "check", "does not say which is the positive class"), "label")],
                pairs_all)
    if shape in ("onnx-logistic", "onnx-tree"):
        est = _fit_linear(rng, LogisticRegression(), X, y) if shape == "onnx-logistic" else _fit_tree(rng, X, y)
        files["m.onnx"] = _skl2onnx(est, d_in, zipmap=False)
        files["mz.onnx"] = _skl2onnx(est, d_in, zipmap=True)
        info["runtime"], info["dtype"] = "onnx", "float32"
        Pr = _onnx_probabilities(files["m.onnx"], X)
        i = 1 if rng.random() < 0.75 else 0
        # the argmax of the two probabilities, column 0 at an exact tie (s37 h2)
        out = nw.Outputs(Pr[:, 0] >= Pr[:, 1] if i == 0 else Pr[:, 1] > Pr[:, 0], None, Pr[:, i], False)
        refuse = [('onnx("m.onnx")', Expect("FS413", "lint"), "label"),
                  ('onnx("m.onnx", output = "label")', Expect("FS413", "lint"), "label"),
                  ('onnx("mz.onnx", output = "output_probability", index = 1)', Expect("FS413", "lint"), "prob")]
        return [(f'onnx("m.onnx", output = "probabilities", index = {i})', out, f"index-{i}")], refuse, ("default",)
    info["runtime"] = "sklearn"
    if shape == "linearsvc":
        labels = (0, 1) if rng.random() < 0.7 else (-1, 1)
        est = _fit_linear(rng, LinearSVC(), X, np.array(labels)[y])
        files["m.skops"] = sio.dumps(est)
        out = _sklearn_outputs(est, X, 1, logit=True)
        refuse = [('sklearn("m.skops")', Expect("FS415", "lint"), "prob"),
                  ('sklearn("m.skops")', Expect("FS415", "lint"), "calibration")]
        return [('sklearn("m.skops", score = logit)', out, "score-logit")], refuse, ("default",)
    labels = LABELS[int(rng.integers(0, len(LABELS)))] if shape == "sklearn-strings" else (1, 2)
    linear = rng.random() < 0.5
    est = _fit_linear(rng, LogisticRegression(), X, np.array(labels)[y]) if linear else \
        _fit_tree(rng, X, np.array(labels)[y])
    info["sklearn"] = "logistic" if linear else "tree"
    i = int(rng.integers(0, 2))
    if shape == "sklearn-12" and rng.random() < 0.5:   # pickled: lint never opens it, check refuses
        files["m.pkl"] = pickle.dumps(est)
        decl, stage = 'sklearn("m.pkl", trust pickle', "check"
    else:
        files["m.skops"] = sio.dumps(est)
        decl, stage = 'sklearn("m.skops"', "lint"
    est2 = pickle.loads(pickle.dumps(est))
    out = _sklearn_outputs(est2, X, i, logit=linear and i == 1)
    return ([(f"{decl}, index = {i})", out, f"index-{i}")],
            [(decl + ")", Expect("FS413", stage, "does not say which is the positive class"), "label")],
            pairs_all if linear else ("default",))


# ------------------------------------------------------------------ generation


def _features(rng) -> list[Feature]:
    while True:
        fs = [Feature("g", "cat", cats=tuple("ABC"[:int(rng.integers(2, 4))]), protected=True)
              if rng.random() < 0.7 else Feature("g", "bool", protected=True)]
        for k in range(int(rng.integers(1, 4))):
            kind = str(rng.choice(["int", "int", "cat", "bool"]))
            if kind == "int":
                lo = int(rng.choice([0, 0, 1, -2, 17]))
                fs.append(Feature(f"f{k}", "int", lo=lo, hi=lo + int(rng.integers(1, 8))))
            elif kind == "cat":
                fs.append(Feature(f"f{k}", "cat", cats=tuple(f"c{i}" for i in range(int(rng.integers(2, 5))))))
            else:
                fs.append(Feature(f"f{k}", "bool"))
        if int(np.prod([f.size for f in fs])) <= 400:
            return fs


def generate(seed: int, n_props: int = 6) -> Instance:
    rng = np.random.default_rng([31, seed])
    shape = shape_of(seed)
    fs = _features(rng)
    names = [f.name for f in fs]
    encs: list[Enc] = [nw._encoding(rng, f, False) for f in fs]
    P = grid(fs)
    X = encode_points(encs, P, names)
    n = int(rng.integers(40, 160))         # rows enough for the metrics' intervals to decide most claims
    rows = rng.integers(0, P.shape[0], size=n)
    ylab = rng.integers(0, 2, size=n)
    files: dict = {"d.csv": write_csv(fs, P[rows], {"y": ylab})}
    info = {"shape": shape, "points": int(P.shape[0]), "encodings": {e.feature.name: e.text() for e in encs}}
    named, refusals, backends = _model(rng, shape, X, files, info)
    info["head"] = shape

    def prelude(decl: str) -> str:
        return ('data d = csv("d.csv", label = y == 1)\n'
                "features F from d {\n" + "\n".join(f.decl() for f in fs) + "\n}\n"
                f"model m = {decl}\n"
                "encode F for m {\n" + "\n".join(f"  {e.feature.name} : {e.text()}" for e in encs) + "\n}\n")

    ctx = {"fs": fs, "P": P, "X": X, "rows": rows, "y": ylab, "info": info, "size": int(P.shape[0])}
    props: list[Prop] = []
    for k in range(n_props):
        decl, out, tag = named[k % len(named)]
        kind = "metric" if rng.random() < 0.3 else "pair"
        p = _metric(rng, f"d{k}", out, ctx) if kind == "metric" else None
        if p is None:
            p = _pair(rng, f"p{k}", out, ctx, backends)
        p.spec = None if decl == named[0][0] else prelude(decl)
        p.meta.update(shape=shape, declared=tag)
        props.append(p)
    for k, (decl, expect, post) in enumerate(refusals):
        if post == "calibration":
            text = f"property r{k} {{\n  calibration_gap(m, groups g) <= 0.1\n  min_group_size = 1\n}}"
        else:
            ensure = "label(m(x)) == label(m(x'))" if post == "label" else "|prob(m(x)) - prob(m(x'))| <= 0.1"
            text = (f"property r{k} {{\n  forall x, x' : F\n  require x.* == x'.* except {{g}}\n"
                    f"  ensure {ensure}\n}}")
        props.append(Prop(f"r{k}", FAMILY, text, Truth("refused", domain=-1, note=f"{expect.code} at {expect.stage}"),
                          {"shape": shape, "declared": "ambiguous", "post": post, "runtime": info["runtime"]},
                          spec=prelude(decl), expect=expect))
    return Instance(FAMILY, seed, prelude(named[0][0]), files, props, info)


def _pair(rng, name: str, out: nw.Outputs, ctx: dict, backends) -> Prop:
    """Individual fairness over g (the other features tied, or one int relaxed): label, prob or
    logit post, the threshold around the exact maximal difference."""
    fs, P, X = ctx["fs"], ctx["P"], ctx["X"]
    names = [f.name for f in fs]
    others = list(range(1, len(fs)))
    relaxed = []
    ints = [i for i in others if fs[i].kind == "int"]
    if ints and rng.random() < 0.4:
        i = ints[int(rng.integers(0, len(ints)))]
        tol, strict = [("1", False), ("1", True), ("2", True), ("2", False)][int(rng.integers(0, 4))]
        relaxed.append((i, tol, strict))
    ps = nw.PairSpec((0,), tuple(relaxed), tuple(i for i in others if i not in [r[0] for r in relaxed]))
    posts = ["label", "label", "prob"] + (["logit"] if out.logit is not None else [])
    post = posts[int(rng.integers(0, len(posts)))]
    op = eps = None
    if post == "label":
        status, best, n_pairs = nw.post_truth(out, P, ps, "label", None, None)
    else:
        _, best, n_pairs = nw.post_truth(out, P, ps, post, "<=", "0")
        Dx = nw.exact_measure(out, post, best[1], best[2]) if best is not None else Fraction(0)
        op = "<=" if rng.random() < 0.6 else "<"
        text = decimal_text(Dx) if isinstance(Dx, Fraction) else None
        c = rng.random()
        if c < 0.45 and text is not None:
            eps = text                                  # the threshold is the exact optimum: a tie
        elif c < 0.75:
            eps = str(float(Fraction(int(rng.integers(0, 5)), 4)))
        else:
            eps = f"{(best[0] if best else 0.0) * float(rng.choice([0.5, 0.999, 1.001, 2])):.6g}"
        if "e" in eps:
            eps = "0"
        if op == "<" and float(eps) == 0:
            op = "<="
        status, best, n_pairs = nw.post_truth(out, P, ps, post, op, eps)
    backend = backends[int(rng.integers(0, len(backends)))]
    mode = str(rng.choice(["prove", "prove", "find", "maximize"]))
    lines = ["forall x, x' : F", "require x.* == x'.* except {g}"]
    lines += [f"require |x.{names[i]} - x'.{names[i]}| {'<' if s else '<='} {t}" for i, t, s in relaxed]
    lines.append("ensure label(m(x)) == label(m(x'))" if post == "label" else f"ensure |{post}(m(x)) - {post}(m(x'))| {op} {eps}")
    if backend != "default":
        lines.append(f"using {backend}")
    if mode != "prove":
        lines.append(f"mode = {mode}")
    lines.append("timeout = 20s")
    value = nw.measure_value(out, post, best) if mode == "maximize" else None
    truth = Truth(status, value=value, value_kind="max" if value is not None else None,
                  check_witness=nw._witness_checker(fs, P, ps, out, post, op, eps, X), domain=ctx["size"],
                  pairs=n_pairs)
    meta = {"post": post, "op": op, "eps": eps, "backend": backend, "mode": mode, "runtime": ctx["info"]["runtime"],
            "relaxed": [(names[i], t, s) for i, t, s in relaxed]}
    return Prop(name, FAMILY, "property " + name + " {\n  " + "\n  ".join(lines) + "\n}", truth, meta, 20)


def _metric(rng, name: str, out: nw.Outputs, ctx: dict) -> Prop | None:
    """A group metric of the model on the data rows over g: the rows' decisions are the runtime's
    decisions at their domain points (the positive class as declared), rates as exact fractions."""
    import pandas as pd

    g = ctx["fs"][0]
    df = pd.DataFrame({"g": [g.csv(v) for v in ctx["P"][ctx["rows"], 0]], "__y": ctx["y"] == 1})
    dec = out.label[ctx["rows"]]
    w = np.array([Fraction(1)] * len(df), dtype=object)
    if df["g"].nunique() < 2:
        return None
    metric = str(rng.choice(["statistical_parity", "disparate_impact", "equal_opportunity"]))
    value = _value(metric, _rates(df, dec, w, ["g"]))
    if value is None:
        metric = "statistical_parity"
        value = _value(metric, _rates(df, dec, w, ["g"]))
    lower = metric != "disparate_impact"
    op = ("<=" if rng.random() < 0.5 else "<") if lower else (">=" if rng.random() < 0.5 else ">")
    t = decimal_text(value)
    c = rng.random()
    thr = t if (t is not None and c < 0.4) else f"{min(1.0, max(0.0, float(value) + float(rng.choice([-0.2, 0.1, 0.2])))):.6g}"
    if "e" in thr:
        thr = "0"
    if op == "<" and Fraction(thr) == 0:
        op = "<="
    if metric == "disparate_impact" and op == ">" and Fraction(thr) >= 1:  # a ratio > 1 is never met: FS507
        op = ">="
    body = (f"property {name} {{\n  {metric}(m, groups g) {op} {thr}\n  bootstrap = 100\n  seed = 1\n"
            "  min_group_size = 1\n}")
    truth = Truth("holds" if claim_holds(value, op, thr) else "violated", value=float(value), value_kind="metric",
                  domain=-1, exact=value, note=f"exact value {value} over {len(df)} rows")
    meta = {"metric": metric, "op": op, "threshold": thr, "runtime": ctx["info"]["runtime"], "point_value": True}
    return Prop(name, FAMILY, body, truth, meta, 60)
