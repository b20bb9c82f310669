"""Tree models with K classes or a regression objective, individual fairness (issue 25):
scikit-learn decision trees, random forests and gradient boosting (skops), XGBoost JSON
(``multi:softprob`` / ``reg:squarederror``) and LightGBM text (``multiclass`` / ``regression``)
over finite feature domains; the posts ``class(m(x)) == class(m(x'))``, ``|prob(m(x), c) -
prob(m(x'), c)| op eps`` (one class, or every class with ``forall c:``) and ``|value(m(x)) -
value(m(x'))| op eps``, ``<=`` and ``<``, prove / find / maximize.

The truth is the library's own answer on every domain point, read back from the very file the
spec names: ``predict`` (the class it returns, as a column of ``classes_``), ``predict_proba`` and
a regressor's ``predict`` for scikit-learn, ``Booster.predict`` for XGBoost (float32) and
LightGBM. Ties on purpose: scikit-learn split thresholds moved onto encoded grid points (as in
:mod:`.trees`), forests of two or four trees whose votes tie (the first class wins), leaf values
on a grid of eighths (equal values at different points), tolerances equal to the exact largest
difference. Two families: ``trees-multiclass`` (:mod:`.tree_multiclass`) and ``trees-regression``
(:mod:`.tree_regression`).
"""

from __future__ import annotations

import io
import os
import tempfile
import warnings
from fractions import Fraction

import numpy as np

from .core import Instance, Prop, Truth, encode_points, exact, grid, write_csv
from .multiclass import _class_checker, _diff_truth, _eps, _pair_spec, _text
from .networks import Outputs, _encoding, _features, _witness_checker, admissible, pair_groups
from .trees import _tie_value

KINDS = ("dt", "rf", "gb", "xgb", "lgbm")
MODES = ("prove", "prove", "find", "maximize")
BACKENDS = ("default", "milp", "smt")


def _settings(rng):
    backend = BACKENDS[int(rng.integers(0, len(BACKENDS)))]
    mode = MODES[int(rng.integers(0, len(MODES)))]
    out = {"default": [], "milp": ["using milp"], "smt": ["using smt"]}[backend]
    if mode != "prove":
        out.append(f"mode = {mode}")
    return backend, mode, out


def _move_thresholds(rng, est, kind, X):
    trees = [est.tree_] if kind == "dt" else [e.tree_ for e in np.ravel(est.estimators_)]
    for t in trees:
        for k in range(t.node_count):
            if t.children_left[k] >= 0 and rng.random() < 0.5:
                t.threshold[k] = _tie_value(rng, X[:, int(t.feature[k])])


def _fit(rng, kind: str, X: np.ndarray, y: np.ndarray, regression: bool):
    """(file name, bytes, declaration) of a fitted model."""
    depth = int(rng.integers(1, 4))
    seed = int(rng.integers(0, 1000))
    if kind in ("dt", "rf", "gb"):
        import sklearn.ensemble as E
        import sklearn.tree as T
        import skops.io as sio

        name = {"dt": "DecisionTree", "rf": "RandomForest", "gb": "GradientBoosting"}[kind]
        name += "Regressor" if regression else "Classifier"
        cls = getattr(T, name, None) or getattr(E, name)
        kw = {"random_state": seed, "max_depth": depth}
        if kind == "rf":
            kw["n_estimators"] = int(rng.choice([2, 3, 4]))
        elif kind == "gb":
            kw["n_estimators"] = int(rng.integers(1, 4))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = cls(**kw).fit(X, y)
        _move_thresholds(rng, est, kind, X)
        buf = io.BytesIO()
        sio.dump(est, buf)
        return "m.skops", buf.getvalue(), 'model m = sklearn("m.skops")'
    if kind == "xgb":
        import xgboost as xgb

        params = {"max_depth": depth, "eta": 0.5, "seed": seed, "nthread": 1}
        params.update({"objective": "reg:squarederror"} if regression else
                      {"objective": "multi:softprob", "num_class": int(y.max()) + 1})
        b = xgb.train(params, xgb.DMatrix(X, label=y), int(rng.integers(1, 4)))
        return "m.json", bytes(b.save_raw("json")), 'model m = xgboost("m.json")'
    import lightgbm as lgb

    params = {"num_leaves": int(rng.integers(2, 5)), "min_data_in_leaf": 2, "verbose": -1, "num_threads": 1,
              "seed": seed, "min_data_in_bin": 1}
    params.update({"objective": "regression"} if regression else
                  {"objective": "multiclass", "num_class": int(y.max()) + 1})
    b = lgb.train(params, lgb.Dataset(X, label=y), int(rng.integers(1, 4)))
    return "m.txt", b.model_to_string().encode(), 'model m = lightgbm("m.txt")'


def library_outputs(kind: str, fname: str, data: bytes, X: np.ndarray, regression: bool):
    """(class column per point or None, probabilities (n, K) or None, values or None): the
    library's own answers, the model read back from the file's bytes."""
    if kind in ("dt", "rf", "gb"):
        import skops.io as sio

        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, fname)
            with open(p, "wb") as fh:
                fh.write(data)
            est = sio.load(p, trusted=sio.get_untrusted_types(file=p))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if regression:
                return None, None, np.asarray(est.predict(X), dtype=np.float64)
            col = {v: i for i, v in enumerate(est.classes_.tolist())}
            k = np.array([col[v] for v in est.predict(X).tolist()], dtype=np.int64)
            return k, np.asarray(est.predict_proba(X), dtype=np.float64), None
    if kind == "xgb":
        import xgboost as xgb

        b = xgb.Booster()
        b.load_model(bytearray(data))
        y = np.asarray(b.predict(xgb.DMatrix(X)), dtype=np.float64)
    else:
        import lightgbm as lgb

        b = lgb.Booster(model_str=data.decode())
        y = np.asarray(b.predict(X), dtype=np.float64)
    if regression:
        return None, None, y.reshape(-1)
    y = y.reshape(X.shape[0], -1)
    return np.argmax(y, axis=1), y, None


def _every_class_checker(fs, P, ps, Pr, op, eps, X):
    """A witness of 'every class': some class's probability breaks op eps on the pair."""
    checkers = [_witness_checker(fs, P, ps, Outputs(Pr[:, c] > 0.5, Pr[:, c], None, True), "logit", op, eps, X)
                for c in range(Pr.shape[1])]

    def check(w):
        msgs = [c(w) for c in checkers]
        return None if any(m is None for m in msgs) else msgs[0]

    return check


def generate(seed: int, family: str, regression: bool, n_props: int = 6) -> Instance:
    rng = np.random.default_rng([27 if regression else 28, seed])
    while True:
        fs = _features(rng)
        size = int(np.prod([f.size for f in fs]))
        if size <= 400:
            break
    encs = [_encoding(rng, f, False) for f in fs]
    names = [f.name for f in fs]
    P = grid(fs)
    X = encode_points(encs, P, names)
    kind = KINDS[int(rng.integers(0, len(KINDS)))]
    n = int(rng.integers(20, 60))
    rows = rng.integers(0, P.shape[0], size=n)
    Xt = X[rows]
    w = rng.normal(0, 1, X.shape[1])
    s = (Xt - Xt.mean(0)) @ w + rng.normal(0, 0.5, n)
    if regression:
        y = np.round(s * 8) / 8
    else:
        y = np.digitize(s, np.quantile(s, [1 / 3, 2 / 3])).astype(np.int64)
        y[:3] = [0, 1, 2]                      # every class seen
    fname, data, decl = _fit(rng, kind, Xt, y, regression)
    k, Pr, v = library_outputs(kind, fname, data, X, regression)
    has_data = rng.random() < 0.3
    files = {fname: data}
    spec = ""
    if has_data:
        sample = P[rng.integers(0, P.shape[0], size=int(rng.integers(8, 20)))].copy()
        files["d.csv"] = write_csv(fs, sample, {"y": rng.integers(0, 2, size=sample.shape[0])})
        spec = 'data d = csv("d.csv", label = y == 1)\n'
    spec += "features F" + (" from d" if has_data else "") + " {\n" + "\n".join(f.decl() for f in fs) + "\n}\n"
    spec += decl + "\n"
    spec += "encode F for m {\n" + "\n".join(f"  {e.feature.name} : {e.text()}" for e in encs) + "\n}\n"
    info = {"runtime": kind, "points": int(P.shape[0]), "encodings": {e.feature.name: e.text() for e in encs},
            "task": "regression" if regression else "multiclass"}
    props = []
    over = [i for i, f in enumerate(fs) if f.protected]
    kdisc_ok = not regression and all(fs[i].kind != "int" for i in over)
    for j in range(n_props):
        if kdisc_ok and rng.random() < 0.3:
            props.append(_kdisc_prop(rng, f"p{j}", family, fs, P, X, over, k, Pr, size, kind))
            continue
        ps = _pair_spec(rng, fs)
        backend, mode, extra = _settings(rng)
        meta = {"backend": backend, "mode": mode, "runtime": kind}
        if regression:
            post = "value"
        else:
            post = ["class", "class", "class_prob", "every"][int(rng.integers(0, 4))]
        if post == "class":
            viol = False
            npairs = 0
            for idx in pair_groups(P, ps):
                M = admissible(P, idx, ps)
                npairs += int(M.sum())
                kk = k[idx]
                viol |= bool(np.any(M & (kk[:, None] != kk[None, :])))
            truth = Truth("violated" if viol else "holds", check_witness=_class_checker(fs, P, ps, k), domain=size,
                          pairs=npairs)
            ensure = "class(m(x)) == class(m(x'))"
            meta.update(post="class")
        else:
            if post == "every":
                cols = [Pr[:, c] for c in range(Pr.shape[1])]
            elif post == "class_prob":
                c = int(rng.integers(0, Pr.shape[1]))
                cols = [Pr[:, c]]
            else:
                cols = [v]
            bests = [_diff_truth(col, P, ps, "<=", "0")[1] for col in cols]
            Dx = max((b[0] for b in bests if b is not None), default=Fraction(0))
            op, eps = _eps(rng, Dx, float(Dx))
            res = [_diff_truth(col, P, ps, op, eps) for col in cols]
            status = "violated" if any(r[0] == "violated" for r in res) else "holds"
            npairs = res[0][2]
            value = float(Dx) if mode == "maximize" and any(b is not None for b in bests) else None
            if post == "every":
                check = _every_class_checker(fs, P, ps, Pr, op, eps, X)
                ensure = f"forall c: |prob(m(x), c) - prob(m(x'), c)| {op} {eps}"
            else:
                col = cols[0]
                check = _witness_checker(fs, P, ps, Outputs(col > 0.5, col, None, True), "logit", op, eps, X)
                ensure = (f"|value(m(x)) - value(m(x'))| {op} {eps}" if post == "value" else
                          f"|prob(m(x), {c}) - prob(m(x'), {c})| {op} {eps}")
            truth = Truth(status, value=value, value_kind="max" if value is not None else None, check_witness=check,
                          domain=size, pairs=npairs, exact=Fraction(Dx) if value is not None else None)
            meta.update(post=post, op=op, eps=eps)
        props.append(Prop(f"p{j}", family, _text(f"p{j}", fs, ps, ensure, extra), truth, meta, 20.0))
    return Instance(family, seed, spec, files, props, info)


def _kdisc_prop(rng, name, family, fs, P, X, over, k, Pr, size, kind, logits=None) -> Prop:
    """k-discrimination of the multiclass model over its protected features: distinct predicted
    classes, or class c's probability in eps-buckets; the claim at the max k (holds with <=, violated
    with <) or one off. ``logits``: the runtime's logits of a network without a softmax head; class c's
    probability is then their REAL softmax (softmax_real, mpmath intervals), whose buckets decide the truth
    and the witness check (session 34, every seed: the claim is still drawn around ``Pr``'s max k, so the
    specs are unchanged; before, the truth bucketed the float64 softmax ``Pr``)."""
    from .kdisc import _individuals, _max_k, _witness_checker as kdisc_checker

    if rng.random() < 0.6:
        probs, eps, text = k.astype(np.float64) / 4, Fraction(1, 4), ""      # class c -> bucket c, exactly
        what = "class"
    else:
        c = int(rng.integers(0, Pr.shape[1]))
        eps_s = str(rng.choice(["0.1", "0.25", "0.2", "0.5"]))
        probs, eps, text = Pr[:, c], Fraction(eps_s), f", class = {c}, eps = {eps_s}"
        what = "class_prob"
    kmax, amb, _ = _max_k(fs, P, probs, over, eps, False)
    op = "<=" if rng.random() < 0.5 else "<"
    claim = max(1, kmax + int(rng.integers(-1, 2)))
    if op == "<" and claim <= 1:  # k >= 1 always: '< 1' is never met (FS507 at lint)
        op = "<="
    undecided = False
    if logits is not None and what == "class_prob":
        from .softmax_real import buckets

        B = buckets(logits, c, eps)
        undecided = bool(np.any(B < 0))
        # the exact buckets, each written as a dyadic point inside bucket B of width 1/16 (at most 10 buckets here)
        probs, eps = (np.maximum(B, 0).astype(np.float64) + 0.5) / 16, Fraction(1, 16)
        kmax, _, _ = _max_k(fs, P, probs, over, eps, False)
    viol = kmax >= claim if op == "<" else kmax > claim
    violated_at = claim if op == "<" else claim + 1
    names = ", ".join(fs[i].name for i in over)
    text = f"property {name} {{\n  k_discrimination(m, over {{{names}}}{text}) {op} {claim}\n  timeout = 20s\n}}"
    status = "ambiguous" if undecided else "violated" if viol else "holds"
    truth = Truth(status, value=float(kmax) if status == "holds" else None,
                  value_kind="k" if status == "holds" else None,
                  check_witness=kdisc_checker(fs, P, probs, over, eps, False, X, violated_at), domain=size,
                  pairs=int(len(np.unique(_individuals(fs, P, over)))))
    return Prop(name, family, text, truth, {"backend": "default", "mode": "kdisc", "post": f"kdisc-{what}",
                                            "runtime": kind}, 20.0)
