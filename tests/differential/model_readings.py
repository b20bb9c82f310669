"""Model shapes the auditors of sessions 34-36 found wrong readings in (session 37), through the Python API
(``fairspec.check(spec, models={"m": obj}, data={"d": frame})``, the api family's judge).

One shape per instance (``SHAPES``, the seed's remainder):

- ``hgb-multi``: a HistGradientBoostingClassifier with 3-5 classes (one in three with 8-9: its softmax over many
  classes may round a point by its batch), ``categorical_features`` on the category columns coded 0 .. k-1;
- ``gb-init``: a GradientBoostingClassifier (2 or 3 classes) with ``init`` a LogisticRegression or a
  DummyClassifier (the init's raw prediction added to the trees');
- ``pre-tree``: a Pipeline of a StandardScaler / PCA / PolynomialFeatures before a decision tree, forest or
  gradient boosting (thresholds moved onto the transformed grid);
- ``forest-threads``: a RandomForestClassifier with ``n_jobs = 2`` (sums its trees in the order threads finish);
- ``meta``: CalibratedClassifierCV / VotingClassifier (soft, hard) / StackingClassifier / BaggingClassifier of
  trees;
- ``booster``: an LGBMClassifier with ``linear_tree`` / an XGBClassifier with ``base_score`` set (skipped to another
  shape when the library is not installed);
- ``onnx-tie``: an ONNX network (dyadic weights) with two output columns (logits or a softmax) that tie exactly at a
  domain point, read with ``index = 0`` or ``index = 1``.

Category / bool features are often code-encoded with uneven tables (``code {c0 = 0.3, c1 = 1.7}``). Per instance a
2-4 feature domain of at most ``MAX_POINTS`` points; properties: individual fairness (label / prob with eps at the
exact largest difference or grid values; class / prob of a class for 3+ classes), a group metric on the data rows
(the data backend) and, where every feature is a category or a bool, one over a declared distribution.

Truth: enumeration of the domain on the library's own predict / predict_proba (onnxruntime for the network) on the
whole domain in one batch AND one row at a time (three times for the threaded forest): a property whose verdict
differs between them is ``batch-dependent`` (only ``unknown`` is right), and a witness must reproduce in both.
"""

from __future__ import annotations

import copy
import itertools
import warnings
from fractions import Fraction

import numpy as np

from . import networks as nw
from . import shipped
from .api import ApiJudge, _frame, _pickled
from .core import Enc, Expect, Feature, Instance, Prop, Truth, claim_holds, decimal_text, encode_points, grid
from .multiclass import _class_checker, _diff_truth, _eps, _pair_spec, _text
from .networks import Outputs, _witness_checker, admissible, pair_groups
from .trees import _tie_value

FAMILY = "model-readings"
#: from this instance seed on, a ``pre-tree`` instance's final model is, two times in five, a soft vote of two
#: decision trees (session 40: models/split_edges reads a meta-estimator's members' thresholds); earlier seeds'
#: instances are as they were
META_AFTER_FROM = 146_000_000
SHAPES = ("hgb-multi", "gb-init", "pre-tree", "forest-threads", "meta", "booster", "onnx-tie")
CELLS = SHAPES
MAX_POINTS = 120
UNEVEN = ("0.3", "1.7", "0.1", "2.9", "-0.6", "1.1", "0.7")


def shape_of(seed: int) -> str:
    return SHAPES[seed % len(SHAPES)]


def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **k)


# ------------------------------------------------------------------ domain and encodings


def _features(rng) -> list[Feature]:
    while True:
        fs = [Feature("g", "cat", cats=tuple("ABC"[:int(rng.integers(2, 4))]), protected=True)
              if rng.random() < 0.7 else Feature("g", "bool", protected=True)]
        for k in range(int(rng.integers(1, 4))):
            kind = str(rng.choice(["int", "int", "cat", "bool"]))
            if kind == "int":
                lo = int(rng.choice([0, 0, 1, -2]))
                fs.append(Feature(f"f{k}", "int", lo=lo, hi=lo + int(rng.integers(1, 6))))
            elif kind == "cat":
                fs.append(Feature(f"f{k}", "cat", cats=tuple(f"c{i}" for i in range(int(rng.integers(2, 5))))))
            else:
                fs.append(Feature(f"f{k}", "bool"))
        if int(np.prod([f.size for f in fs])) <= MAX_POINTS:
            return fs


def _encoding(rng, f: Feature, shape: str) -> Enc:
    if shape == "hgb-multi" and f.kind != "int":
        return Enc(f, "code")                      # category codes 0 .. k-1: categorical_features reads them
    if f.kind != "int" and rng.random() < 0.5:      # an uneven code table
        codes = [str(c) for c in rng.choice(UNEVEN, size=f.size, replace=False)]
        return Enc(f, "code", codes=tuple(codes))
    return nw._encoding(rng, f, False)


# ------------------------------------------------------------------ the models


def _move(rng, trees, Xt):
    for t in trees:
        for n in range(t.node_count):
            if t.children_left[n] >= 0 and rng.random() < 0.5:
                t.threshold[n] = _tie_value(rng, Xt[:, int(t.feature[n])])


def _sk_trees(est):
    if hasattr(est, "tree_"):
        return [est.tree_]
    if hasattr(est, "estimators_"):
        return [e.tree_ for e in np.ravel(est.estimators_) if hasattr(e, "tree_")]
    return []


def _dt(rng, depth=None):
    from sklearn.tree import DecisionTreeClassifier

    return DecisionTreeClassifier(max_depth=depth or int(rng.integers(1, 4)), random_state=int(rng.integers(0, 1000)))


def _model(rng, shape: str, X: np.ndarray, y: np.ndarray, encs, info: dict, side=None):
    """(model object, its declaration, K classes); ``side``: a stream of its own for the tie edits (the other draws
    stay as they were)."""
    import sklearn.ensemble as E

    K = int(y.max()) + 1
    seed = int(rng.integers(0, 1000))
    if shape == "hgb-multi":
        mask = []
        for e in encs:
            mask += [e.kind == "code" and e.feature.kind == "cat"] * e.width
        cat = np.array(mask, dtype=bool)
        est = E.HistGradientBoostingClassifier(max_iter=int(rng.integers(1, 5)), max_depth=int(rng.integers(2, 4)),
                                               min_samples_leaf=2, random_state=seed,
                                               categorical_features=cat if cat.any() else None)
        _quiet(est.fit, X, y)
        for preds in est._predictors:
            for pr in preds:
                nodes = pr.nodes
                for n in range(len(nodes)):
                    if not nodes["is_leaf"][n] and not nodes["is_categorical"][n] and rng.random() < 0.5:
                        nodes["num_threshold"][n] = _tie_value(rng, X[:, nodes["feature_idx"][n]])
        if side.random() < 0.5:
            # ties on purpose: every leaf a multiple of 1/4 and the baseline 0, so classes' raw scores tie exactly at
            # some points (predict's first largest column; softmax columns equal)
            est._baseline_prediction[...] = 0.0
            for preds in est._predictors:
                for pr in preds:
                    leaf = pr.nodes["is_leaf"].astype(bool)
                    pr.nodes["value"][leaf] = np.round(pr.nodes["value"][leaf] * 4) / 4
            info["dyadic_leaves"] = True
        info["categorical"] = int(cat.sum())
        return est, 'sklearn("m.skops")', K
    if shape == "gb-init":
        from sklearn.dummy import DummyClassifier
        from sklearn.linear_model import LogisticRegression

        init = LogisticRegression() if rng.random() < 0.5 else DummyClassifier(strategy="prior")
        info["init"] = type(init).__name__
        est = E.GradientBoostingClassifier(n_estimators=int(rng.integers(1, 4)), max_depth=int(rng.integers(1, 3)),
                                           init=init, random_state=seed)
        _quiet(est.fit, X, y)
        _move(rng, _sk_trees(est), X)
        if side.random() < 0.5:       # leaves on a grid of quarters (ties of the trees' sums at different points)
            for t in _sk_trees(est):
                t.value[...] = np.round(t.value * 4) / 4
            info["dyadic_leaves"] = True
        return est, 'sklearn("m.skops")', K
    if shape == "pre-tree":
        from sklearn.decomposition import PCA
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import PolynomialFeatures, StandardScaler

        r = rng.random()
        pre = (StandardScaler() if r < 0.4 else PCA(n_components=min(2, X.shape[1]), random_state=seed) if r < 0.7
               else PolynomialFeatures(degree=2))
        kind = str(rng.choice(["dt", "rf", "gb"]))
        final = (_dt(rng) if kind == "dt" else
                 E.RandomForestClassifier(n_estimators=int(rng.integers(2, 4)), max_depth=int(rng.integers(1, 3)),
                                          random_state=seed) if kind == "rf" else
                 E.GradientBoostingClassifier(n_estimators=int(rng.integers(1, 3)), max_depth=2, random_state=seed))
        if info.get("instance_seed", 0) >= META_AFTER_FROM and side is not None and side.random() < 0.4:
            # session 40: a soft vote of trees after the step (split edges read through a meta-estimator's members)
            final = E.VotingClassifier([("a", _dt(side)), ("b", _dt(side))], voting="soft")
            kind = "vote"
        est = Pipeline([("pre", pre), ("clf", final)])
        _quiet(est.fit, X, y)
        members = [t for m in final.estimators_ for t in _sk_trees(m)] if kind == "vote" else _sk_trees(final)
        _move(rng, members, np.asarray(pre.transform(X), dtype=np.float64))
        info["pre"], info["final"] = type(pre).__name__, kind
        return est, 'sklearn("m.skops")', K
    if shape == "forest-threads":
        est = E.RandomForestClassifier(n_estimators=int(rng.integers(2, 5)), max_depth=int(rng.integers(1, 4)),
                                       n_jobs=2, random_state=seed)
        _quiet(est.fit, X, y)
        _move(rng, _sk_trees(est), X)
        return est, 'sklearn("m.skops")', K
    if shape == "meta":
        from sklearn.calibration import CalibratedClassifierCV
        from sklearn.linear_model import LogisticRegression

        r = rng.random()
        if r < 0.25:
            est = CalibratedClassifierCV(_dt(rng), cv=2, method=str(rng.choice(["sigmoid", "isotonic"])))
        elif r < 0.5:
            est = E.VotingClassifier([("a", _dt(rng)), ("b", _dt(rng))], voting="soft",
                                     weights=[0.3, 0.7] if rng.random() < 0.5 else None)
        elif r < 0.75:
            est = E.StackingClassifier([("a", _dt(rng)), ("b", _dt(rng))], cv=2,
                                       final_estimator=_dt(rng, 2) if rng.random() < 0.5 else LogisticRegression())
        else:
            est = E.BaggingClassifier(_dt(rng), n_estimators=int(rng.integers(2, 5)), random_state=seed)
        info["meta"] = type(est).__name__ + (f"-{est.voting}" if hasattr(est, "voting") else "")
        _quiet(est.fit, X, y)
        return est, 'sklearn("m.skops")', K
    if shape == "booster":
        if info["booster"] == "lgbm":
            import lightgbm as lgb

            est = lgb.LGBMClassifier(n_estimators=int(rng.integers(1, 4)), num_leaves=3, min_child_samples=3,
                                     linear_tree=True, verbose=-1, n_jobs=1, random_state=seed)
            _quiet(est.fit, X, y)
            return est, 'lightgbm("m.txt")', K
        import xgboost as xgb

        base = float(rng.choice([0.3, 0.7, 0.25]))
        est = xgb.XGBClassifier(n_estimators=int(rng.integers(1, 4)), max_depth=2, base_score=base, n_jobs=1,
                                random_state=seed, learning_rate=0.5)
        _quiet(est.fit, X, y)
        info["base_score"] = base
        return est, 'xgboost("m.json")', K
    raise ValueError(shape)


def _installed(name: str) -> bool:
    try:
        __import__(name)
        return True
    except ImportError:
        return False


def _onnx_net(rng, d_in: int, X32: np.ndarray, info: dict):
    """A dyadic ReLU network with two output columns whose difference is exactly 0 at one domain point (or more)."""
    import onnx

    head = str(rng.choice(["logit2", "prob2"]))
    net = nw._net(rng, d_in, head)
    net.Ws = [np.asarray(W, dtype=np.float64) for W in net.Ws]
    if not all(np.all(W == np.round(W * 4) / 4) for W in net.Ws):
        net.Ws = [np.round(W * 4) / 4 for W in net.Ws]
        net.bs = [np.round(b * 4) / 4 for b in net.bs]
    H = X32.astype(np.float64)
    for W, b in zip(net.Ws[:-1], net.bs[:-1]):
        H = np.maximum(H @ W.T + b, 0.0)
    i0 = int(rng.integers(0, X32.shape[0]))
    Z = H @ net.Ws[-1].T + net.bs[-1]
    net.bs[-1] = net.bs[-1].copy()
    net.bs[-1][1] += Z[i0, 0] - Z[i0, 1]            # dyadic: exact in float32, column 1 == column 0 at i0
    info["head"], info["tie_point"] = head, i0
    return onnx.load_from_string(net.onnx_bytes("float32")), net


# ------------------------------------------------------------------ runtime readings (batch and alone)


class Reading:
    """The runtime's class index per point and the probability / output matrix, on one batching."""

    def __init__(self, k: np.ndarray, Y: np.ndarray):
        self.k, self.Y = k, Y


def _sk_reading(est, X: np.ndarray, alone: bool) -> Reading:
    classes = list(est.classes_)
    if alone:       # predict row by row is predict_proba's first largest column (every model here but a stacking)
        Y = np.vstack([_quiet(est.predict_proba, X[i:i + 1]) for i in range(X.shape[0])])
        k = (np.array([classes.index(_quiet(est.predict, X[i:i + 1])[0]) for i in range(X.shape[0])])
             if type(est).__name__ == "StackingClassifier" else np.argmax(Y, axis=1))
    else:
        k = np.array([classes.index(v) for v in _quiet(est.predict, X)])
        Y = _quiet(est.predict_proba, X)
    return Reading(k, np.asarray(Y, dtype=np.float64))


def _forest_orders(est, X: np.ndarray) -> list:
    """A forest on threads adds its trees' probabilities into one array in the order the threads finish
    (sklearn's _accumulate_prediction), then divides by their number: its reading in every order of its trees."""
    parts = [np.asarray(_quiet(t.predict_proba, X), dtype=np.float64) for t in est.estimators_]
    out = []
    for order in itertools.permutations(range(len(parts))):
        acc = np.zeros_like(parts[0])
        for i in order:
            acc += parts[i]
        acc /= len(parts)
        out.append(Reading(np.argmax(acc, axis=1), acc))
    return out


def _onnx_reading(data: bytes, X32: np.ndarray, alone: bool) -> Reading:
    Y = (np.vstack([nw.run_onnx(data, X32[i:i + 1]) for i in range(X32.shape[0])]) if alone else
         nw.run_onnx(data, X32))
    Y = np.asarray(Y, dtype=np.float64)
    return Reading(np.argmax(Y, axis=1), Y)


def _binary_outputs(r: Reading, shape: str, head: str | None, index: int) -> Outputs:
    if shape == "onnx-tie":
        return nw.readout(head, r.Y, index)
    return Outputs(r.k == 1, None, r.Y[:, 1])


# ------------------------------------------------------------------ properties


def _both(make, rng, readings):
    """The property ``make(rng, reading)`` builds, its truth decided on each reading (same draws): the first's
    truth where every reading agrees on the status, ``batch-dependent`` where they do not; a witness must
    reproduce on every reading."""
    props = [make(copy.deepcopy(rng), r) for r in readings[:-1]] + [make(rng, readings[-1])]
    if any(q is None for q in props):
        return None
    p = props[0]
    statuses = {q.truth.status for q in props}
    checks = [q.truth.check_witness for q in props if q.truth.check_witness is not None]
    if checks:
        def check(w, checks=checks):
            for c in checks:
                bad = c(w)
                if bad:
                    return bad
            return None

        p.truth.check_witness = check
    if len(statuses) > 1:
        p.truth.status = "batch-dependent"
        p.truth.note = f"statuses {sorted(statuses)} on the domain's batch / row by row"
        p.truth.value = p.truth.value_kind = None
        p.meta["batch_dependent"] = True
    elif p.truth.value_kind == "max" and len({q.truth.value for q in props}) > 1:
        p.truth.value = max(q.truth.value for q in props if q.truth.value is not None)
    return p


def _multiclass_pair(rng, name, r: Reading, ctx) -> Prop:
    fs, P, X, size = ctx["fs"], ctx["P"], ctx["X"], ctx["size"]
    ps = _pair_spec(rng, fs)
    mode = str(rng.choice(["prove", "prove", "find", "maximize"]))
    extra = [] if mode == "prove" else [f"mode = {mode}"]
    meta = {"backend": "default", "mode": mode, "runtime": ctx["info"]["runtime"]}
    if rng.random() < 0.5:
        viol, npairs = False, 0
        for idx in pair_groups(P, ps):
            M = admissible(P, idx, ps)
            npairs += int(M.sum())
            kk = r.k[idx]
            viol |= bool(np.any(M & (kk[:, None] != kk[None, :])))
        truth = Truth("violated" if viol else "holds", check_witness=_class_checker(fs, P, ps, r.k), domain=size,
                      pairs=npairs)
        meta.update(post="class")
        return Prop(name, FAMILY, _text(name, fs, ps, "class(m(x)) == class(m(x'))", extra), truth, meta, 20.0)
    c = int(rng.integers(0, r.Y.shape[1]))
    col = r.Y[:, c]
    best = _diff_truth(col, P, ps, "<=", "0")[1]
    Dx = best[0] if best is not None else Fraction(0)
    op, eps = _eps(rng, Dx, float(Dx))
    status, _, npairs = _diff_truth(col, P, ps, op, eps)
    value = float(Dx) if mode == "maximize" and best is not None else None
    check = _witness_checker(fs, P, ps, Outputs(col > 0.5, col, None, True), "logit", op, eps, X)
    truth = Truth(status, value=value, value_kind="max" if value is not None else None, check_witness=check,
                  domain=size, pairs=npairs, exact=Fraction(Dx) if value is not None else None)
    meta.update(post="class_prob", op=op, eps=eps)
    return Prop(name, FAMILY, _text(name, fs, ps, f"|prob(m(x), {c}) - prob(m(x'), {c})| {op} {eps}", extra),
                truth, meta, 20.0)


def _distribution(rng, fs):
    """An independent distribution of the non-protected features (decimal probabilities): (lines, tables)."""
    lines, tables = [], {}
    for i, f in enumerate(fs):
        if f.protected:
            continue
        if f.kind == "bool":
            p = str(rng.choice(["0.3", "0.5", "0.41", "0.75", "0.9"]))
            tables[i] = [1 - Fraction(p), Fraction(p)]
            lines.append(f"  p({f.name}) = {p}")
            continue
        left, probs = Fraction(1), []
        for c in range(f.size - 1):
            p = Fraction(int(rng.integers(0, 5)), 20) + Fraction(1, 20)
            p = min(p, left)
            probs.append(p)
            left -= p
            lines.append(f"  p({f.name} = {f.cats[c]}) = {decimal_text(p)}")
        probs.append(left)
        tables[i] = probs
    return lines, tables


def _dist_prop(rng, name, label: np.ndarray, ctx, tables) -> Prop | None:
    fs, P = ctx["fs"], ctx["P"]
    rates = []
    for gv in range(fs[0].size):
        num = Fraction(0)
        for r in np.flatnonzero(P[:, 0] == gv):
            if label[r]:
                pr = Fraction(1)
                for i, t in tables.items():
                    pr *= t[int(P[r, i])]
                num += pr
        rates.append(num)
    metric = str(rng.choice(["statistical_parity", "disparate_impact"]))
    hi, lo = max(rates), min(rates)
    value = hi - lo if metric == "statistical_parity" else (None if hi == 0 else lo / hi)
    if value is None:
        metric, value = "statistical_parity", hi - lo
    upper = metric == "statistical_parity"
    op = ("<=" if rng.random() < 0.5 else "<") if upper else (">=" if rng.random() < 0.5 else ">")
    t = decimal_text(value)
    thr = t if t is not None and rng.random() < 0.5 else str(rng.choice(["0.1", "0.2", "0.5", "0.8"]))
    if op == "<" and Fraction(thr) <= 0:
        op = "<="
    if op == ">" and Fraction(thr) >= 1:
        op = ">="
    body = f"property {name} {{\n  {metric}(m, groups g, distribution dist) {op} {thr}\n  timeout = 20s\n}}"
    truth = Truth("holds" if claim_holds(value, op, thr) else "violated", value=float(value), value_kind="metric",
                  domain=ctx["size"], exact=value, note=f"exact value {value}")
    # incomplete: over a distribution fairspec decides trees, linear models and rules, and says `unknown` (naming
    # the model) for the opaque ones drawn here -- outside the unknown target
    return Prop(name, FAMILY, body, truth, {"metric": metric, "op": op, "threshold": thr, "post": "distribution",
                                            "runtime": ctx["info"]["runtime"], "incomplete": True}, 20.0)


# ------------------------------------------------------------------ the instance


def generate(seed: int, n_props: int = 5) -> Instance:
    rng = np.random.default_rng([61, seed])
    shape = shape_of(seed)
    info: dict = {"shape": shape}
    if shape == "booster":
        info["booster"] = "lgbm" if rng.random() < 0.5 else "xgb"
        if not _installed("lightgbm" if info["booster"] == "lgbm" else "xgboost"):
            info["booster"] = "xgb" if info["booster"] == "lgbm" else "lgbm"
            if not _installed("lightgbm" if info["booster"] == "lgbm" else "xgboost"):
                shape = info["shape"] = "meta"          # neither booster library: another shape, cleanly
    fs = _features(rng)
    names = [f.name for f in fs]
    encs = [_encoding(rng, f, shape) for f in fs]
    P = grid(fs)
    X = encode_points(encs, P, names)
    size = int(P.shape[0])
    info.update(points=size, encodings={e.feature.name: e.text() for e in encs})
    # training rows: the domain's points with a noisy linear score cut into K classes
    n = int(rng.integers(60, 140))
    rows = rng.integers(0, size, size=n)
    if shape == "hgb-multi":
        K = int(rng.choice([3, 4, 5, 8, 9])) if rng.random() < 0.4 else int(rng.choice([3, 4, 5]))
    elif shape in ("gb-init", "pre-tree", "forest-threads", "meta"):
        K = 2 if rng.random() < 0.6 else 3
    else:
        K = 2
    w = rng.normal(0, 1, X.shape[1])
    s = (X[rows] - X[rows].mean(0)) @ w + rng.normal(0, 0.7, n)
    ytr = np.digitize(s, np.quantile(s, np.arange(1, K) / K)).astype(np.int64)
    ytr[:K] = np.arange(K)                         # every class seen
    head, index = None, 1
    if shape == "onnx-tie":
        X32 = X.astype(np.float32)
        obj, net = _onnx_net(rng, X.shape[1], X32, info)
        index = int(rng.integers(0, 2))
        decl = f'onnx("m.onnx", index = {index})'
        head = info["head"]
        data = obj.SerializeToString()
        readings = [_onnx_reading(data, X32, False), _onnx_reading(data, X32, True)]
        info["runtime"], K = "onnx", 2
    else:
        info["instance_seed"] = seed
        obj, decl, K = _model(rng, shape, X[rows], ytr, encs, info, np.random.default_rng([62, seed]))
        info.pop("instance_seed", None)
        readings = [_sk_reading(obj, X, False), _sk_reading(obj, X, True)]
        if shape == "forest-threads":
            readings += _forest_orders(obj, X)
        info["runtime"] = {"booster": "xgboost" if info.get("booster") == "xgb" else "lightgbm"}.get(shape, "sklearn")
        if K > 2 and rng.random() < 0.3:        # a multiclass model read as "class i against the rest"
            index = int(rng.integers(0, K))
            decl = decl[:-1] + f", index = {index})"
    info["classes"] = K
    ylab = rng.integers(0, 2, size=n)
    frame = _frame(fs, P[rows], ylab)
    ctx = {"fs": fs, "P": P, "X": X, "rows": rows, "y": ylab, "info": info, "size": size}
    binary = K == 2 or "index" in decl
    dist_lines, tables = (_distribution(rng, fs) if binary and all(f.kind != "int" for f in fs) else (None, None))

    def outs(r: Reading) -> Outputs:
        if shape == "onnx-tie":
            return nw.readout(head, r.Y, index)
        if K > 2:           # index = i: predict is class i (the first largest column at a tie), prob its column
            return Outputs(r.k == index, None, r.Y[:, index])
        return Outputs(r.k == 1, None, r.Y[:, 1])

    props: list[Prop] = []
    for k in range(n_props):
        c = rng.random()
        if binary and dist_lines is not None and c < 0.2:
            p = _both(lambda g, r: _dist_prop(g, f"q{k}", outs(r).label, ctx, tables), rng, readings)
        elif binary and c < 0.45:
            p = _both(lambda g, r: shipped._metric(g, f"d{k}", outs(r), ctx), rng, readings)
            if p is None:
                continue
        elif binary:
            p = _both(lambda g, r: shipped._pair(g, f"p{k}", outs(r), ctx, ("default",)), rng, readings)
        else:
            p = _both(lambda g, r: _multiclass_pair(g, f"p{k}", r, ctx), rng, readings)
        p.family = FAMILY
        if K > 2 and binary:        # index = i of a multiclass model: prob names its class (FS416 without)
            p.text = p.text.replace("prob(m(x))", f"prob(m(x), {index})").replace("prob(m(x'))", f"prob(m(x'), {index})")
        p.meta.update(shape=shape, runtime=info["runtime"], classes=K)
        props.append(p)

    def prelude() -> str:
        text = ('data d = csv("d.csv", label = y == 1)\n'
                "features F from d {\n" + "\n".join(f.decl() for f in fs) + "\n}\n"
                f"model m = {decl}\n"
                "encode F for m {\n" + "\n".join(f"  {e.feature.name} : {e.text()}" for e in encs) + "\n}\n")
        if dist_lines is not None:
            text += "distribution dist {\n" + "\n".join(dist_lines) + "\n}\n"
        return text

    if info.get("booster") == "lgbm":
        # a linear-leaf LightGBM: its leaves are not constants, FS401 at lint (session 34: it was read as its
        # leaf values) -- every property of the spec refused with it
        props = [Prop("r0", FAMILY, "property r0 {\n  forall x, x' : F\n  require x.* == x'.* except {g}\n"
                      "  ensure label(m(x)) == label(m(x'))\n}", Truth("refused", domain=-1, note="FS401 at lint"),
                      {"shape": shape, "post": "label", "runtime": info["runtime"], "declared": "linear_tree"},
                      expect=Expect("FS401", "lint"))]
    judge = ApiJudge()
    for p in props:
        judge.objects[p.name] = ({"m": obj}, {"d": frame})
    files = {"objects.pkl": _pickled(judge.objects)}
    from .api import REPRO

    files["check.py"] = REPRO.encode()
    inst = Instance(FAMILY, seed, prelude(), files, props, info)
    inst.judge = judge
    return inst
