"""Tree ensembles, individual fairness: scikit-learn DT / RF / ET / GB / HGB (skops), XGBoost
JSON and LightGBM text files over finite feature domains; label / prob / logit (margin)
post-conditions with `<=` and `<`, every backend, mode and partitioning.

The truth is the library's own answer on every domain point: ``predict`` and
``predict_proba`` (and ``decision_function``) for scikit-learn, ``Booster.predict`` (float32
probabilities and margins) for XGBoost, ``Booster.predict`` for LightGBM -- each read back
from the very file the spec names.

Ties on purpose: split thresholds moved onto encoded grid points (exactly, as the float32
the library may round them to, or at the .5 point between two grid values), class labels
that are strings, models fit on a DataFrame (feature names recorded in the file).
"""

from __future__ import annotations

import io
import json
import os
import re
import tempfile
import warnings

import numpy as np

from . import networks
from .core import Instance, encode_points, grid, write_csv
from .networks import Outputs

FAMILY = "trees"
KINDS = ("dt", "rf", "et", "gb", "hgb", "xgb", "lgbm")
SKLEARN = {"dt": "DecisionTreeClassifier", "rf": "RandomForestClassifier", "et": "ExtraTreesClassifier",
           "gb": "GradientBoostingClassifier", "hgb": "HistGradientBoostingClassifier"}


def _labels(rng, X: np.ndarray) -> np.ndarray:
    w = rng.normal(0, 1, X.shape[1])
    s = (X - X.mean(0)) @ w + rng.normal(0, 0.3, X.shape[0])
    y = (s > np.median(s)).astype(int)
    if y.min() == y.max():
        y[0] = 1 - y[0]
    return y


def _tie_value(rng, col: np.ndarray) -> float:
    """A threshold on the encoded grid of one column: a grid value, its float32 rounding, or
    the midpoint between two neighbouring values."""
    vals = np.unique(col)
    r = rng.random()
    v = float(vals[int(rng.integers(0, len(vals)))])
    if r < 0.45 or len(vals) < 2:
        return v
    if r < 0.65:
        return float(np.float32(v))
    i = int(rng.integers(0, len(vals) - 1))
    return float((vals[i] + vals[i + 1]) / 2)


def _sk_trees(est, kind):
    if kind == "dt":
        return [est.tree_]
    if kind in ("rf", "et"):
        return [e.tree_ for e in est.estimators_]
    if kind == "gb":
        return [e.tree_ for e in est.estimators_.ravel()]
    return []


def _fit_sklearn(rng, kind, X, y, strings: bool, exponential: bool = False):
    """``exponential``: half the GradientBoosting models (by their random_state's parity, so the rng
    stream, and every other instance, is the same as without) use loss = 'exponential' (predict_proba
    expit(2 z))."""
    import sklearn.ensemble as E
    import sklearn.tree as T

    cls = getattr(T, SKLEARN[kind], None) or getattr(E, SKLEARN[kind])
    kw = {"random_state": int(rng.integers(0, 1000))}
    depth = int(rng.integers(1, 4))
    if kind in ("rf", "et", "gb"):
        kw.update(n_estimators=int(rng.integers(1, 5)), max_depth=depth)
    if kind == "gb" and exponential and kw["random_state"] % 2:
        kw.update(loss="exponential")
    elif kind == "hgb":
        kw.update(max_iter=int(rng.integers(1, 5)), max_depth=depth + 1, min_samples_leaf=2)
    else:
        kw.update(max_depth=depth)
    yy = np.where(y == 1, "yes", "no") if strings else y
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = cls(**kw).fit(X, yy)
    ties = 0
    for t in _sk_trees(est, kind):
        th = t.threshold
        for n in range(t.node_count):
            if t.children_left[n] != -1 and rng.random() < 0.5:
                th[n] = _tie_value(rng, X[:, t.feature[n]])
                ties += 1
    if kind == "hgb":
        for preds in est._predictors:
            for pr in preds:
                nodes = pr.nodes
                for n in range(len(nodes)):
                    if not nodes["is_leaf"][n] and rng.random() < 0.5:
                        nodes["num_threshold"][n] = _tie_value(rng, X[:, nodes["feature_idx"][n]])
                        ties += 1
    return est, ties


def _fit_xgb(rng, X, y, names):
    import xgboost as xgb

    kw = dict(n_estimators=int(rng.integers(1, 5)), max_depth=int(rng.integers(1, 4)), n_jobs=1,
              random_state=int(rng.integers(0, 1000)), learning_rate=float(rng.choice([0.3, 0.5, 1.0])))
    if names is not None:
        import pandas as pd

        Xf = pd.DataFrame(X, columns=names)
    else:
        Xf = X
    b = xgb.XGBClassifier(**kw).fit(Xf, y).get_booster()
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "m.json")
        b.save_model(p)
        doc = json.load(open(p))
    ties = 0
    for tr in doc["learner"]["gradient_booster"]["model"]["trees"]:
        for n, left in enumerate(tr["left_children"]):
            if left != -1 and rng.random() < 0.5:
                tr["split_conditions"][n] = _tie_value(rng, X[:, tr["split_indices"][n]])
                ties += 1
    return json.dumps(doc).encode(), ties


def _fit_lgbm(rng, X, y, names):
    import lightgbm as lgb

    kw = dict(n_estimators=int(rng.integers(1, 5)), max_depth=int(rng.integers(1, 4)), n_jobs=1, verbose=-1,
              random_state=int(rng.integers(0, 1000)), min_child_samples=2, num_leaves=7,
              learning_rate=float(rng.choice([0.3, 0.5, 1.0])))
    if names is not None:
        import pandas as pd

        Xf = pd.DataFrame(X, columns=names)
    else:
        Xf = X
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = lgb.LGBMClassifier(**kw).fit(Xf, y)
    text = m.booster_.model_to_string()
    ties = [0]
    feats: list = []

    def tree_block(block: str) -> str:
        sf = re.search(r"^split_feature=(.*)$", block, re.M)
        th = re.search(r"^threshold=(.*)$", block, re.M)
        if not sf or not th:
            return block
        f = [int(v) for v in sf.group(1).split()]
        t = th.group(1).split()
        for i, fi in enumerate(f):
            if rng.random() < 0.5:
                t[i] = repr(_tie_value(rng, X[:, fi]))
                ties[0] += 1
        return block[:th.start(1)] + " ".join(t) + block[th.end(1):]

    head, sep, rest = text.partition("\nTree=")
    parts = rest.split("\nTree=")
    parts = [tree_block(p) for p in parts]
    text = head + sep + "\nTree=".join(parts)
    # the header's tree_sizes are byte offsets of the trees, which the edits moved: LightGBM
    # reads the trees one after the other without them
    text = re.sub(r"^tree_sizes=.*\n", "", text, count=1, flags=re.M)
    return text.encode(), ties[0]


def _outputs(kind, data: bytes, X: np.ndarray, names, margin_declared: bool) -> Outputs:
    if kind in SKLEARN:
        import skops.io as sio

        est = sio.loads(data, trusted=sio.get_untrusted_types(data=data))
        label = est.predict(X) == est.classes_[1]
        p = est.predict_proba(X)[:, 1]
        z = est.decision_function(X) if kind in ("gb", "hgb") else None
        return Outputs(label, z, p, False)
    if kind == "xgb":
        import xgboost as xgb

        with tempfile.TemporaryDirectory() as d:
            f = os.path.join(d, "m.json")
            open(f, "wb").write(data)
            b = xgb.Booster(model_file=f)
        dm = xgb.DMatrix(X, feature_names=names) if names is not None else xgb.DMatrix(X)
        p = np.asarray(b.predict(dm), dtype=np.float64)
        z = np.asarray(b.predict(dm, output_margin=True), dtype=np.float64)
        label = (z > 0) if margin_declared else (p > 0.5)
        return Outputs(label, z, p, False)
    import lightgbm as lgb

    b = lgb.Booster(model_str=data.decode())
    p = np.asarray(b.predict(X), dtype=np.float64)
    z = np.asarray(b.predict(X, raw_score=True), dtype=np.float64)
    label = (z > 0) if margin_declared else (p > 0.5)
    return Outputs(label, z, p, False)


def _model(rng, X: np.ndarray, P, fs, encs, files: dict, info: dict):
    kind = KINDS[int(rng.integers(0, len(KINDS)))]
    y = _labels(rng, X)
    names = None
    if kind in ("xgb", "lgbm") and all(e.width == 1 for e in encs) and rng.random() < 0.3:
        names = [e.feature.name for e in encs]          # fit on a DataFrame: the file records the names
    margin = False
    if kind in SKLEARN:
        strings = rng.random() < 0.2
        est, ties = _fit_sklearn(rng, kind, X, y, strings, exponential=True)
        import skops.io as sio

        data = sio.dumps(est)
        files["m.skops"] = data
        margin = kind in ("gb", "hgb") and rng.random() < 0.25
        decl = ('model m = sklearn("m.skops"' + (', output = "decision_function"' if margin else "")
                + (", index = 1" if strings else "") + ")")   # "no" / "yes": the spec names "yes" (FS413 without)
        info["string_labels"] = strings
    elif kind == "xgb":
        data, ties = _fit_xgb(rng, X, y, names)
        files["m.json"] = data
        margin = rng.random() < 0.25
        decl = 'model m = xgboost("m.json"' + (', output = "margin"' if margin else "") + ")"
    else:
        data, ties = _fit_lgbm(rng, X, y, names)
        files["m.txt"] = data
        margin = rng.random() < 0.25
        decl = 'model m = lightgbm("m.txt"' + (', output = "margin"' if margin else "") + ")"
    out = _outputs(kind, data, X, names, margin)
    if kind in ("dt", "rf", "et"):
        out.logit = None                     # a logit bound on a tree or forest is refused by lint (FS506)
    loss = str(getattr(est, "loss", "")) if kind in SKLEARN else ""
    info.update(model=kind, ties=ties, feature_names=names is not None, margin=margin)
    if loss == "exponential":
        # logit(m(x)) is z or 2 z: refused by lint (FS415) unless declared by its decision_function; the
        # margin z stays the label's measure; declared by it, prob(m(x)) is expit(z) or predict_proba's
        # expit(2 z): refused by lint (FS415) too
        info.update(loss=loss, logit_ambiguous=not margin, prob_ambiguous=margin)
    return decl, out


def generate(seed: int, n_props: int = 6) -> Instance:
    rng = np.random.default_rng([21, seed])
    while True:
        fs = networks._features(rng)
        size = int(np.prod([f.size for f in fs]))
        if size <= 600:
            break
    has_data = rng.random() < 0.4
    encs = [networks._encoding(rng, f, has_data) for f in fs]
    names = [f.name for f in fs]
    P = grid(fs)
    files: dict = {}
    if has_data:
        n = int(rng.integers(8, 30))
        rows = P[rng.integers(0, P.shape[0], size=n)].copy()
        for e in encs:
            if e.fitted and e.kind == "standard":
                c = names.index(e.feature.name)
                rows[:, c] = np.where(np.arange(n) % 2 == 0, e.feature.lo, e.feature.hi)
                if n % 2:
                    rows = rows[:-1]
                    n -= 1
        for e in encs:
            if e.fitted:
                e.fit(rows[:, names.index(e.feature.name)])
        files["d.csv"] = write_csv(fs, rows, {"y": rng.integers(0, 2, size=rows.shape[0])})
    X = encode_points(encs, P, names)
    info = {"points": int(P.shape[0]), "encodings": {e.feature.name: e.text() for e in encs}, "runtime": "library"}
    # train on the domain itself (with repeats), so the splits fall where the grid is
    decl, out = _model(rng, X, P, fs, encs, files, info)
    info["head"] = info["model"]
    spec = ""
    if has_data:
        spec += 'data d = csv("d.csv", label = y == 1)\n'
    spec += "features F" + (" from d" if has_data else "") + " {\n" + "\n".join(f.decl() for f in fs) + "\n}\n"
    spec += decl + "\n"
    spec += "encode F for m {\n" + "\n".join(f"  {e.feature.name} : {e.text()}" for e in encs) + "\n}\n"
    props = [networks._property(rng, k, fs, P, X, out, info, has_data, size, family=FAMILY) for k in range(n_props)]
    for p in props:
        p.meta["model"] = info["model"]
    return Instance(FAMILY, seed, spec, files, props, info)
