"""The Python API on in-memory objects (session 19): ``fairspec.check(spec, models={"m": obj},
data={"d": frame})`` judged against what the object the user holds computes.

One shape per instance (``SHAPES``, the seed's own): a scikit-learn LogisticRegression, decision
tree, random forest or MLP (relu) object; a Pipeline(ColumnTransformer(OneHotEncoder / OrdinalEncoder,
passthrough / StandardScaler / MinMaxScaler), LogisticRegression) fit on a data frame (the spec has
no encode block: fairspec folds the pipeline); an XGBClassifier, fit or tie-edited and loaded back
(about one in three fit on a named frame); one fit with early stopping (its ``predict`` uses rounds
0 .. best_iteration; also declared ``rounds = best`` and ``rounds = all``, the latter judged against
the object's own booster, every round); a LightGBM ``LGBMClassifier`` (half with early stopping) or
a raw ``Booster`` with tie-edited thresholds; about one XGBoost / LightGBM model in three fit on a
frame whose category features are pandas ``category`` columns, in the declared order or another (the
encode line then the model's code table; the declared order as implicit codes must be refused, FS420);
a torch ``nn.Sequential`` (float32, one in five float64; Dropout; given in training mode). The data is
a pandas DataFrame (ints, category strings, Python bools).

The spec's declarations name no file that exists: the API binds each in-memory object to the
declaration of its name (``models={"m": ...}``, ``data={"d": ...}``) and writes it in the declared
format itself. Each property's truth is enumeration of the domain with the OBJECT's own ``predict``
/ ``predict_proba`` / ``decision_function`` / ``forward`` (``output_margin`` / ``raw_score`` for the
boosters' margins): individual fairness (label / prob / logit posts, prove / find / maximize, every
pair backend) and group metrics on the frame's rows, both drawn as the ``shipped`` family draws them.

Expected refusals (:class:`core.Expect`, judged by :func:`ApiJudge.refusal` on the API itself):
an XGBClassifier with ``missing = 0.0`` (stage ``api``: a FairspecError naming it), a raw XGBoost
Booster whose best iteration leaves rounds out without ``rounds = ...`` (FS425 at lint), string class
labels without ``index`` (FS413 at lint), a category feature coded in the declared order where the
model was fit on another (FS420 at lint), a torch module returning a tuple or a two-column Softmax
head without ``output`` / ``index`` (FS413 at check). Anything but the refusal -- a verdict, another
code, another exception -- is wrong.

Ties on purpose: dyadic weights and scaler parameters, a decision exactly 0 at a domain point, split
thresholds on encoded grid points (trees._tie_value), thresholds equal to the exact optimum.
"""

from __future__ import annotations

import copy
import json
import pickle
import time
import traceback
import warnings

import numpy as np

from . import networks as nw
from . import shipped, trees
from .core import Enc, Expect, Feature, Instance, Prop, Truth, encode_points, grid
from .judge import Outcome, _check_group

FAMILY = "api"
SHAPES = ("logistic", "tree", "forest", "mlp", "pipeline", "xgb", "xgb-early", "lgbm", "torch")
PAIRS_ALL = ("default", "default", "milp", "smt")


def shape_of(seed: int) -> str:
    """The seed's shape: campaign seeds are seed * 1e6 + i, so consecutive instances take every shape."""
    return SHAPES[seed % len(SHAPES)]


# ------------------------------------------------------------------ the judge: the API, in process


class ApiJudge:
    """Checks one spec file of an instance through ``fairspec.check`` with the objects its
    properties were drawn on (``objects``: property name -> (models, data)); verdicts are judged
    as every family's (:func:`judge._check_group`), expected refusals by :meth:`refusal`."""

    def __init__(self):
        self.objects: dict = {}

    def __call__(self, spec, props, base) -> list:
        models, data = self.objects[props[0].name]
        if props[0].expect is not None:
            return [self.refusal(p, spec, base, models, data) for p in props]
        import fairspec

        return _check_group(spec, props, base, check=lambda path: fairspec.check(path, models=models, data=data).report)

    @staticmethod
    def refusal(prop: Prop, spec, base: dict, models: dict, data: dict) -> Outcome:
        """The API must refuse: stage ``api`` -- FairspecError whose sentence says ``expect.words``;
        ``lint`` -- fairspec.lint reports exactly ``expect.code`` and check refuses with it (exit 2, no
        verdict); ``check`` -- lint reports nothing, check refuses with ``expect.code`` naming ``words``."""
        import fairspec

        e = prop.expect
        o = Outcome(**base, name=prop.name, klass="correct", truth=f"refused {e.code} at {e.stage}",
                    domain=prop.truth.domain, pairs=prop.truth.pairs,
                    meta={**prop.meta, "expect": e.code, "stage": e.stage})

        def wrong(defect, why):
            o.klass, o.defect, o.why = "wrong", defect, why
            return o

        t0 = time.perf_counter()
        try:
            lint = fairspec.lint(spec, models=models, data=data)
            rep = fairspec.check(spec, models=models, data=data)
        except fairspec.FairspecError as err:
            o.seconds = time.perf_counter() - t0
            o.status, o.reason = "refused", str(err)[:400]
            if e.stage != "api":
                return wrong("refused-otherwise", f"the API raised FairspecError ({err}) where {e.code} at "
                                                  f"{e.stage} should refuse the spec")
            if e.words and e.words not in str(err):
                return wrong("refused-otherwise", f"the API's sentence {str(err)[:300]!r} does not say {e.words!r}")
            if "\n" in str(err) or "Traceback" in str(err):
                return wrong("crash", f"the API's error is not one sentence: {str(err)[:300]!r}")
            return o
        except Exception as err:  # noqa: BLE001 - any other exception is a crash
            o.seconds = time.perf_counter() - t0
            return wrong("crash", f"the API raised {type(err).__name__}: {err}\n{traceback.format_exc(limit=6)}")
        o.seconds = time.perf_counter() - t0
        doc = rep.to_dict()
        verdicts = [(v.get("name"), v.get("status")) for v in doc.get("properties", [])]
        lint_errors = sorted({d.code for d in lint if d.is_error})
        check_errors = sorted({d["code"] for d in doc.get("diagnostics", []) if d.get("severity") == "error"})
        o.status = "refused" if rep.exit_code == e.exit and not verdicts else \
            (verdicts[0][1] if verdicts else f"exit {rep.exit_code}")
        o.reason = "; ".join(x for x in (", ".join(check_errors), doc.get("error") or "") if x)[:400] or None
        if rep.exit_code == 4 or rep.report.internal_errors:
            return wrong("crash", f"check's exit code {rep.exit_code}: {rep.report.internal_errors[:1]}")
        if e.stage == "api":
            return wrong("not-refused", f"the API raised nothing where it must refuse ({e.words}); check gave "
                                        f"{verdicts or check_errors or 'no verdict'} (exit {rep.exit_code})")
        if verdicts or rep.exit_code in (0, 1, 3):
            return wrong("not-refused", f"check gave {verdicts or 'no verdict'} (exit {rep.exit_code}) where "
                                        f"{e.code} should refuse the spec at {e.stage}")
        if rep.exit_code != e.exit:
            return wrong("refused-otherwise", f"check exited {rep.exit_code}, not {e.exit}")
        if e.stage == "lint" and lint_errors != [e.code]:
            return wrong("refused-otherwise" if lint_errors else "not-refused",
                         f"lint gave errors {lint_errors or 'none'}, not {e.code}")
        if e.stage == "check" and any(c != e.code for c in lint_errors):
            return wrong("refused-otherwise", f"lint gave errors {lint_errors}, not nothing or {e.code}")
        if check_errors != [e.code]:
            return wrong("refused-otherwise", f"check refused with {check_errors or doc.get('error')!r}, not {e.code}")
        said = " ".join(d.get("message", "") for d in doc.get("diagnostics", []) if d.get("code") == e.code)
        if e.stage == "check" and e.words and e.words not in said:
            return wrong("refused-otherwise", f"check's {e.code} {said[:300]!r} does not say {e.words!r}")
        return o


# ------------------------------------------------------------------ the objects and their truth


def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **k)


def _sk_outputs(est, X, index: int, logit: bool) -> nw.Outputs:
    """The estimator's own predict / predict_proba[:, index] / decision_function (class ``index`` positive)."""
    label = _quiet(est.predict, X) == est.classes_[index]
    z = np.asarray(_quiet(est.decision_function, X), dtype=np.float64) if logit else None   # classes_[1]'s margin
    return nw.Outputs(label, z, np.asarray(_quiet(est.predict_proba, X)[:, index], dtype=np.float64), False)


def _sklearn(rng, shape: str, X: np.ndarray, fs):
    """(named [(decl, model object, Outputs, tag)], refusals [(decl, object, Expect, post)], backends, info)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier

    strings = rng.random() < 0.25
    labels = np.array(shipped.LABELS[int(rng.integers(0, len(shipped.LABELS)))] if strings else (0, 1))
    if shape == "logistic":
        est = shipped._fit_linear(rng, LogisticRegression(), X, labels[np.arange(X.shape[0]) % 2])
        logit = True
    elif shape in ("tree", "forest"):      # thresholds on grid points; string classes are "no" / "yes"
        est, _ = trees._fit_sklearn(rng, "dt" if shape == "tree" else "rf", X, trees._labels(rng, X), strings)
        labels = est.classes_
        logit = False
    else:
        est = MLPClassifier(hidden_layer_sizes=(int(rng.integers(2, 6)),), max_iter=5, random_state=0)
        _quiet(est.fit, X, labels[np.arange(X.shape[0]) % 2])
        est.coefs_ = [nw._dyadic(rng, c.shape) for c in est.coefs_]
        est.intercepts_ = [np.zeros(c.shape) if rng.random() < 0.5 else nw._dyadic(rng, c.shape)
                           for c in est.intercepts_]
        if rng.random() < 0.6:       # the output logit exactly 0 (or a tiny number) at a domain point
            i0 = int(rng.integers(0, X.shape[0]))
            h = X[i0:i0 + 1]
            for W, b in zip(est.coefs_[:-1], est.intercepts_[:-1]):
                h = np.maximum(h @ W + b, 0.0)
            z = float((h @ est.coefs_[-1] + est.intercepts_[-1])[0, 0])
            est.intercepts_[-1] = est.intercepts_[-1] - z
            if rng.random() < 0.3:
                est.intercepts_[-1] = est.intercepts_[-1] + nw._tiny(rng, float(est.intercepts_[-1][0]))
        logit = False
    info = {"runtime": "sklearn", "labels": [str(v) for v in labels]}
    if not strings:
        out = _sk_outputs(est, X, 1, logit)
        return [('sklearn("m.skops")', est, out, "plain")], [], PAIRS_ALL, info
    i = int(rng.integers(0, 2))
    out = _sk_outputs(est, X, i, logit and i == 1)
    refuse = [('sklearn("m.skops")', est, Expect("FS413", "lint"), "label")]
    return [(f'sklearn("m.skops", index = {i})', est, out, f"index-{i}")], refuse, ("default",), info


def _pipeline(rng, fs, P):
    """A Pipeline(ColumnTransformer(...), LogisticRegression) fit on the domain's frame; its scalers'
    parameters made dyadic (or left as fitted), the final estimator's weights dyadic with a decision
    exactly 0 at a domain point. Returns (pipe, the domain frame, its transformed matrix, info)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import MinMaxScaler, OneHotEncoder, OrdinalEncoder, StandardScaler

    frame = _frame(fs, P)
    parts, kinds = [], {}
    remainder = "passthrough" if rng.random() < 0.3 else "drop"     # int columns left to the remainder
    for f in fs:
        if f.kind == "cat":
            # the categories as fitted ("auto": sorted) or given in another order; a one-hot block is
            # declared in the pipeline's order (README: another order is FS422), a code table in any
            cats = "auto" if rng.random() < 0.6 else [[f.cats[int(i)] for i in rng.permutation(len(f.cats))]]
            if rng.random() < 0.75:
                cats = "auto" if list(f.cats) == sorted(f.cats) and rng.random() < 0.5 else [list(f.cats)]
                parts.append((f"oh_{f.name}", OneHotEncoder(categories=cats), [f.name]))
                kinds[f.name] = "onehot" + ("" if cats == "auto" else f" {cats[0]}")
            else:
                parts.append((f"ord_{f.name}", OrdinalEncoder(categories=cats), [f.name]))
                kinds[f.name] = "ordinal" + ("" if cats == "auto" else f" {cats[0]}")
        else:
            r = rng.random()
            kind = ("passthrough" if r < 0.3 else "standard" if r < 0.55 else "standard-no-mean" if r < 0.65 else
                    "standard-no-std" if r < 0.75 else "minmax")
            if kind == "passthrough" and remainder == "passthrough":
                kinds[f.name] = "remainder"
                continue
            kinds[f.name] = kind
            step = {"passthrough": "passthrough", "standard": StandardScaler(), "minmax": MinMaxScaler(),
                    "standard-no-mean": StandardScaler(with_mean=False),
                    "standard-no-std": StandardScaler(with_std=False)}[kind]
            parts.append((f"{kind}_{f.name}", step, [f.name]))
    pipe = Pipeline([("pre", ColumnTransformer(parts, remainder=remainder)), ("clf", LogisticRegression())])
    y = np.arange(P.shape[0]) % 2
    _quiet(pipe.fit, frame, y)
    pre = pipe.named_steps["pre"]
    for name, step, cols in pre.transformers_:
        if type(step).__name__ == "StandardScaler" and rng.random() < 0.7:
            f = next(x for x in fs if x.name == cols[0])
            step.mean_ = np.array([float(rng.choice([f.lo, (f.lo + f.hi) / 2, f.lo + 0.25]))])
            if step.with_std:
                step.scale_ = np.array([float(rng.choice([1, 2, 0.5, 1.5, 3]))])
                step.var_ = step.scale_ ** 2
    Xt = np.asarray(_quiet(pre.transform, frame), dtype=np.float64)
    shipped._fit_linear(rng, pipe.named_steps["clf"], Xt, y)
    return pipe, frame, Xt, {"runtime": "sklearn", "columns": kinds}


def _xgb_edit(rng, clf, X):
    """A copy of ``clf`` with about half its split thresholds moved onto encoded grid points, loaded
    back into a fresh XGBClassifier (best_iteration and feature names kept by the model's JSON)."""
    import xgboost as xgb

    doc = json.loads(bytes(clf.get_booster().save_raw("json")))
    for tr in doc["learner"]["gradient_booster"]["model"]["trees"]:
        for n, left in enumerate(tr["left_children"]):
            if left != -1 and rng.random() < 0.5:
                tr["split_conditions"][n] = trees._tie_value(rng, X[:, tr["split_indices"][n]])
    out = xgb.XGBClassifier(n_jobs=1)
    out.load_model(bytearray(json.dumps(doc).encode()))
    return out


#: XGBoost objectives without a probability (fairspec.models.boosted.XGB_NO_PROBABILITY): prob is FS415
NO_PROBABILITY = ("binary:hinge", "binary:logitraw")


def _xgboost(rng, shape: str, X: np.ndarray, encs, cats=None):
    import xgboost as xgb

    names = [e.feature.name for e in encs] if all(e.width == 1 for e in encs) and rng.random() < 0.35 else None
    Xf = _named(X, names) if cats is None else _categorical_frame(X, encs, cats)
    y = trees._labels(rng, X)
    kw = dict(max_depth=int(rng.integers(1, 4)), n_jobs=1, random_state=int(rng.integers(0, 1000)),
              learning_rate=float(rng.choice([0.3, 0.5, 1.0])))
    info: dict = {"runtime": "library", "model": "xgb", "feature_names": names is not None or cats is not None}
    if cats is not None:
        kw["enable_categorical"] = True
    # the objective: binary:logitraw's predict is margin > 0.5 and its predict_proba[:, 1] the margin
    # (XGBClassifier reads whatever the booster predicts as a probability), binary:hinge's are 0 / 1
    objective = "binary:logistic" if rng.random() < 0.7 else str(rng.choice(["binary:logitraw", "binary:hinge",
                                                                             "reg:logistic"]))
    if objective != "binary:logistic":
        kw["objective"] = info["objective"] = objective
    if shape == "xgb":
        clf = _quiet(xgb.XGBClassifier(n_estimators=int(rng.integers(1, 5)), **kw).fit, Xf, y)
    else:
        for attempt in range(6):    # early stopping that leaves rounds out (best_iteration < rounds - 1)
            yv = rng.integers(0, 2, size=X.shape[0])
            clf = _quiet(xgb.XGBClassifier(n_estimators=8, early_stopping_rounds=2, **kw).fit, Xf, y,
                         eval_set=[(Xf, yv)], verbose=False)
            if clf.best_iteration < clf.get_booster().num_boosted_rounds() - 1:
                break
        info.update(best_iteration=int(clf.best_iteration), rounds=int(clf.get_booster().num_boosted_rounds()))
    if rng.random() < 0.5 and cats is None:
        clf = _xgb_edit(rng, clf, X)
        info["edited"] = True

    # the label's measure min(z - c, c - z') is from the cut c its predict flips at: 0.5 on binary:logitraw's margin
    cut = 0.5 if objective == "binary:logitraw" else 0.0

    def outs(obj, every_round=False) -> nw.Outputs:
        if every_round:             # the object's own booster, every round
            b = obj.get_booster()
            dm = xgb.DMatrix(Xf, enable_categorical=cats is not None)
            p = np.asarray(b.predict(dm), dtype=np.float64)
            return nw.Outputs(p > 0.5, np.asarray(b.predict(dm, output_margin=True), dtype=np.float64), p, False, cut)
        return nw.Outputs(obj.predict(Xf) == 1, np.asarray(obj.predict(Xf, output_margin=True), dtype=np.float64),
                          np.asarray(obj.predict_proba(Xf)[:, 1], dtype=np.float64), False, cut)

    margin = rng.random() < 0.25
    o = outs(clf)
    if margin:     # output = "margin": the decision is margin > 0
        o = nw.Outputs(o.logit > 0, o.logit, o.prob, False)
    # binary:logitraw: whether its label is predict > 0.5 (XGBClassifier.predict) or margin > 0 is the
    # declaration's to say (FS426 without output): "predict" states the wrapper's rule
    pred = ', output = "predict"' if objective == "binary:logitraw" else ""
    named = [('xgboost("m.json"' + (', output = "margin"' if margin else pred) + ")", clf, o,
              "margin" if margin else "predict")]
    bad = copy.deepcopy(clf)
    bad.set_params(missing=float(rng.choice([0.0, -1.0])))
    refuse = [('xgboost("m.json")', bad, Expect("API", "api", "as missing"), "label")]
    if pred:
        refuse.append(('xgboost("m.json")', clf, Expect("FS426", "lint"), "label"))
    if shape == "xgb-early":
        named += [(f'xgboost("m.json", rounds = best{pred})', clf, outs(clf), "rounds-best"),
                  (f'xgboost("m.json", rounds = all{pred})', clf, outs(clf, every_round=True), "rounds-all")]
        if info["best_iteration"] < info["rounds"] - 1:
            refuse.append((f'xgboost("m.json"{pred})', clf.get_booster(), Expect("FS425", "lint"), "label"))
    return named, refuse, PAIRS_ALL, info, names


def _lightgbm(rng, X: np.ndarray, encs, cats=None):
    import lightgbm as lgb

    names = [e.feature.name for e in encs] if all(e.width == 1 for e in encs) and rng.random() < 0.35 else None
    Xf = _named(X, names) if cats is None else _categorical_frame(X, encs, cats)
    y = trees._labels(rng, X)
    info: dict = {"runtime": "library", "model": "lgbm", "feature_names": names is not None or cats is not None}
    if rng.random() < 0.4 and cats is None:          # a raw Booster, thresholds on grid points
        text, _ = trees._fit_lgbm(rng, X, y, names)
        obj = lgb.Booster(model_str=text.decode())
        p = np.asarray(obj.predict(Xf), dtype=np.float64)
        z = np.asarray(obj.predict(Xf, raw_score=True), dtype=np.float64)
        out = nw.Outputs(p > 0.5, z, p, False)
        info["object"] = "Booster"
    else:
        kw = dict(n_estimators=int(rng.integers(2, 8)), max_depth=int(rng.integers(1, 4)), n_jobs=1, verbose=-1,
                  random_state=int(rng.integers(0, 1000)), min_child_samples=2, num_leaves=7,
                  learning_rate=float(rng.choice([0.3, 0.5, 1.0])))
        obj = lgb.LGBMClassifier(**kw)
        if rng.random() < 0.5:
            yv = rng.integers(0, 2, size=X.shape[0])
            _quiet(obj.fit, Xf, y, eval_set=[(Xf, yv)], callbacks=[lgb.early_stopping(2, verbose=False)])
            info["best_iteration"] = int(obj.best_iteration_ or 0)
        else:
            _quiet(obj.fit, Xf, y)
        out = nw.Outputs(_quiet(obj.predict, Xf) == 1, np.asarray(_quiet(obj.predict, Xf, raw_score=True), dtype=np.float64),
                         np.asarray(_quiet(obj.predict_proba, Xf)[:, 1], dtype=np.float64), False)
        info["object"] = "LGBMClassifier"
    margin = rng.random() < 0.25
    if margin:
        out = nw.Outputs(out.logit > 0, out.logit, out.prob, False)
    decl = 'lightgbm("m.txt"' + (', output = "margin"' if margin else "") + ")"
    return [(decl, obj, out, "margin" if margin else "predict")], [], PAIRS_ALL, info, names


def _torch(rng, X: np.ndarray):
    import torch

    head = str(rng.choice(["logit1", "logit1", "sigmoid1", "prob2", "logit2"]))
    net = nw._net(rng, X.shape[1], head)
    ties = nw._ties(rng, net, X.astype(np.float32))
    dtype = "float64" if rng.random() < 0.2 else "float32"
    dropout = rng.random() < 0.3        # identity in eval mode, random in training: the API scripts eval
    mods = []
    for k, (W, b) in enumerate(zip(net.Ws, net.bs)):
        lin = torch.nn.Linear(W.shape[1], W.shape[0])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(W.astype(np.float32)))
            lin.bias.copy_(torch.from_numpy(b.astype(np.float32)))
        mods.append(lin)
        if k < len(net.Ws) - 1:
            mods.append(torch.nn.ReLU())
            if dropout:
                mods.append(torch.nn.Dropout(0.25))
    if head == "sigmoid1":
        mods.append(torch.nn.Sigmoid())
    elif head == "prob2":
        mods.append(torch.nn.Softmax(dim=1))
    seq = torch.nn.Sequential(*mods).to(getattr(torch, dtype))
    if rng.random() < 0.5:
        seq.train()                 # given in training mode: the API scripts it in eval mode
    with torch.no_grad():
        training = seq.training
        Y = seq.eval()(torch.from_numpy(X.astype(dtype))).to(torch.float64).numpy()
        seq.train(training)
    out = nw.readout(head, Y, net.index)
    info = {"runtime": "torch", "dtype": dtype, "head": head, "dropout": dropout, "training": training, **ties}
    refuse = []
    if head in ("logit1", "sigmoid1"):
        score = {"logit1": "logit", "sigmoid1": "prob"}[head]
        decl = f'torch("m.pt", score = {score})' if rng.random() < 0.5 else 'torch("m.pt")'
        if rng.random() < 0.4:
            refuse.append(('torch("m.pt")', shipped._tuple_module(net).to(getattr(torch, dtype)),
                           Expect("FS413", "check", "does not say which one"), "label"))
    else:
        score = ", score = prob" if head == "prob2" and rng.random() < 0.5 else (", score = logit" if head == "logit2" else "")
        decl = f'torch("m.pt", index = {net.index}{score})'
        if head == "prob2":
            refuse.append(('torch("m.pt")', seq, Expect("FS413", "check", "does not say which is the positive class"),
                           "label"))
    return [(decl, seq, out, head)], refuse, PAIRS_ALL, info


def _categorical(rng, fs: list[Feature], encs: list[Enc]) -> dict | None:
    """About one tree model in three is fit on a data frame whose category features are pandas
    ``category`` columns (XGBoost ``enable_categorical``, LightGBM's own detection), their categories in
    the declared order or another: the model codes category i of that order as i, so the encode line is
    the model's table (``code {B = 0, C = 1, A = 2}``; implicit ``code`` when the orders agree). One-hot
    lines become ``code`` / ``raw`` (a frame has one column per feature). Returns {feature: order} (a
    separate random stream: the other draws of a seed stay as they were), or None."""
    if not any(f.kind == "cat" for f in fs) or rng.random() >= 0.35:
        return None
    orders = {}
    for k, e in enumerate(encs):
        f = e.feature
        if f.kind == "cat":
            order = tuple(f.cats) if rng.random() < 0.4 else tuple(f.cats[int(i)] for i in rng.permutation(len(f.cats)))
            orders[f.name] = order
            table = None if order == tuple(f.cats) and rng.random() < 0.7 else tuple(str(order.index(c)) for c in f.cats)
            encs[k] = Enc(f, "code", codes=table)
        elif e.kind == "onehot":
            encs[k] = Enc(f, "raw")
    return orders


def _categorical_frame(X: np.ndarray, encs: list[Enc], cats: dict):
    """The encoded matrix as the frame the model is fit on: each category feature a pandas category
    column in its order (X holds each one's code there), the others their numbers."""
    import pandas as pd

    cols = {}
    for j, e in enumerate(encs):
        name = e.feature.name
        cols[name] = (pd.Categorical.from_codes(X[:, j].astype(int), categories=list(cats[name])) if name in cats
                      else X[:, j])
    return pd.DataFrame(cols)


def _named(X: np.ndarray, names):
    if names is None:
        return X
    import pandas as pd

    return pd.DataFrame(X, columns=names)


def _frame(fs: list[Feature], P: np.ndarray, y=None):
    """The domain points as a user's data frame: ints, category strings, Python bools."""
    import pandas as pd

    cols = {}
    for j, f in enumerate(fs):
        v = P[:, j]
        cols[f.name] = (v.astype(np.int64) if f.kind == "int" else
                        v.astype(bool) if f.kind == "bool" else np.array([f.cats[int(k)] for k in v], dtype=object))
    if y is not None:
        cols["y"] = np.asarray(y, dtype=np.int64)
    return pd.DataFrame(cols)


# ------------------------------------------------------------------ session 20: wider pipelines, frames

#: the final estimators of a wide pipeline (``_pipeline_wide``); its instance's shape is "pipeline-" + one
WIDE_FINALS = ("logistic", "tree", "forest", "extra", "gb", "hgb", "mlp")
#: regressors as a wide pipeline's final estimator (value posts): about one wide pipeline in two from
#: session 21's seeds on (>= 37,000,000; a stream of their own, [39, seed]), so that every earlier seed's
#: instance, and the slice's cells, stay as they were
WIDE_REGRESSORS = ("tree-reg", "forest-reg", "gb-reg", "hgb-reg", "linear-reg", "mlp-reg")
#: every value the ``shape`` of an api property may take (the slice's cells)
CELLS = SHAPES + tuple(f"pipeline-{k}" for k in WIDE_FINALS + WIDE_REGRESSORS)


def _regressor(seed: int) -> bool:
    return seed >= 37_000_000 and bool(np.random.default_rng([39, seed]).random() < 0.5)


def _wide(seed: int) -> bool:
    """A pipeline instance drawn wide (session 20), from a stream of its own: the draws of a classic
    pipeline instance stay as they were."""
    return bool(np.random.default_rng([38, seed]).random() < 0.7)


def _selector(rng, cols: list[str], inputs: list[str]):
    """A ColumnTransformer entry's columns, as a user may select them: by name, position, boolean
    mask, slice (when contiguous) or make_column_selector; (selector, how)."""
    from sklearn.compose import make_column_selector

    idx = [inputs.index(c) for c in cols]
    r = rng.random()
    if r < 0.35:
        return list(cols), "names"
    if r < 0.55:
        return idx, "positions"
    if r < 0.7:
        return [n in cols for n in inputs], "mask"
    if r < 0.8 and idx == list(range(idx[0], idx[-1] + 1)):
        return slice(idx[0], idx[-1] + 1), "slice"
    return make_column_selector(pattern="^(" + "|".join(cols) + ")$"), "selector"


def _final(rng, kind: str, Xt: np.ndarray):
    """The final estimator fit on the transformed matrix: trees with thresholds on its grid points,
    an MLP with dyadic weights (a decision exactly 0 at a point, often), a LogisticRegression with
    dyadic weights and a decision 0 at a point. (estimator, its labels, logit observable)"""
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier

    y = np.arange(Xt.shape[0]) % 2
    if kind == "logistic":
        return shipped._fit_linear(rng, _quiet(LogisticRegression().fit, Xt, y), Xt, y), True
    if kind == "mlp":
        est = MLPClassifier(hidden_layer_sizes=(int(rng.integers(2, 6)),), max_iter=5, random_state=0)
        _quiet(est.fit, Xt, y)
        est.coefs_ = [nw._dyadic(rng, c.shape) for c in est.coefs_]
        est.intercepts_ = [np.zeros(c.shape) if rng.random() < 0.5 else nw._dyadic(rng, c.shape)
                           for c in est.intercepts_]
        if rng.random() < 0.6:
            i0 = int(rng.integers(0, Xt.shape[0]))
            h = Xt[i0:i0 + 1]
            for W, b in zip(est.coefs_[:-1], est.intercepts_[:-1]):
                h = np.maximum(h @ W + b, 0.0)
            z = float((h @ est.coefs_[-1] + est.intercepts_[-1])[0, 0])
            est.intercepts_[-1] = est.intercepts_[-1] - z
        return est, False
    if kind.endswith("-reg"):
        return _final_regressor(rng, kind, Xt), False
    code = {"tree": "dt", "forest": "rf", "extra": "et", "gb": "gb", "hgb": "hgb"}[kind]
    est, _ = trees._fit_sklearn(rng, code, Xt, trees._labels(rng, Xt), False)
    return est, False


def _final_regressor(rng, kind: str, Xt: np.ndarray):
    """A regressor fit on the transformed matrix, targets on a grid of eighths (equal values at
    different points): trees, forests, gradient boosting (plain and histogram), a LinearRegression
    and an MLPRegressor with dyadic weights."""
    import sklearn.ensemble as E
    from sklearn.linear_model import LinearRegression
    from sklearn.neural_network import MLPRegressor
    from sklearn.tree import DecisionTreeRegressor

    y = np.round(rng.normal(0, 1, Xt.shape[0]) * 8) / 8
    depth, seed = int(rng.integers(1, 4)), int(rng.integers(0, 1000))
    if kind == "linear-reg":
        est = _quiet(LinearRegression().fit, Xt, y)
        est.coef_ = nw._dyadic(rng, est.coef_.shape)
        est.intercept_ = float(nw._dyadic(rng, (1,))[0])
        return est
    if kind == "mlp-reg":
        est = MLPRegressor(hidden_layer_sizes=(int(rng.integers(2, 6)),), max_iter=5, random_state=0)
        _quiet(est.fit, Xt, y)
        est.coefs_ = [nw._dyadic(rng, c.shape) for c in est.coefs_]
        est.intercepts_ = [np.zeros(c.shape) if rng.random() < 0.5 else nw._dyadic(rng, c.shape)
                           for c in est.intercepts_]
        return est
    if kind == "tree-reg":
        est = DecisionTreeRegressor(max_depth=depth, random_state=seed)
    elif kind == "forest-reg":
        est = E.RandomForestRegressor(n_estimators=int(rng.integers(2, 5)), max_depth=depth, random_state=seed)
    elif kind == "gb-reg":
        est = E.GradientBoostingRegressor(n_estimators=int(rng.integers(1, 4)), max_depth=depth, random_state=seed)
    else:
        est = E.HistGradientBoostingRegressor(max_iter=int(rng.integers(1, 4)), max_depth=depth + 1,
                                              min_samples_leaf=2, random_state=seed)
    return _quiet(est.fit, Xt, y)


def _value_pair(rng, name: str, v: np.ndarray, ctx: dict, backends, pick=None) -> Prop:
    """Individual fairness of a regressor's value over g (the other features tied, or one int
    relaxed): ``|value(m(x)) - value(m(x'))| op eps`` around the exact largest difference of its
    ``predict`` on the domain (the truth: the library's own numbers). ``pick``: a stream of its own
    for the backend (else ``rng``'s)."""
    from fractions import Fraction

    from .multiclass import _diff_truth, _eps, _pair_spec, _text

    fs, P, X = ctx["fs"], ctx["P"], ctx["X"]
    ps = _pair_spec(rng, fs)
    backend = backends[int((rng if pick is None else pick).integers(0, len(backends)))]
    mode = ("prove", "prove", "find", "maximize")[int(rng.integers(0, 4))]
    extra = {"default": [], "milp": ["using milp"], "smt": ["using smt"]}.get(backend, [f"using {backend}"])
    if mode != "prove":
        extra.append(f"mode = {mode}")
    best = _diff_truth(v, P, ps, "<=", "0")[1]
    Dx = best[0] if best is not None else Fraction(0)
    op, eps = _eps(rng, Dx, float(Dx))
    status, _, npairs = _diff_truth(v, P, ps, op, eps)
    value = float(Dx) if mode == "maximize" and best is not None else None
    check = nw._witness_checker(fs, P, ps, nw.Outputs(v > 0.5, v, None, True), "logit", op, eps, X)
    truth = Truth(status, value=value, value_kind="max" if value is not None else None, check_witness=check,
                  domain=int(P.shape[0]), pairs=npairs)
    meta = {"post": "value", "op": op, "eps": eps, "backend": backend, "mode": mode}
    return Prop(name, FAMILY, _text(name, fs, ps, f"|value(m(x)) - value(m(x'))| {op} {eps}", extra), truth, meta,
                20.0)


def _whole_blocks(pre, Xt: np.ndarray) -> np.ndarray:
    """The transformed matrix with each one-hot block a OneHotEncoder(drop=...) wrote put back whole:
    the dropped category's column inserted where scikit-learn's categories_ put it, 1 where the
    rest of its block is all zeros (fairspec encodes a dropped one-hot so, session 22)."""
    cols, at = [], 0
    blocks = sorted(((pre.output_indices_[name], trans) for name, trans, _ in pre.transformers_
                     if type(trans).__name__ == "OneHotEncoder" and getattr(trans, "drop_idx_", None) is not None),
                    key=lambda b: b[0].start)
    for sl, enc in blocks:
        cols.append(Xt[:, at:sl.start])
        j = sl.start
        for cats, d in zip(enc.categories_, enc.drop_idx_):
            w = len(cats) - (d is not None)
            block = Xt[:, j:j + w]
            if d is not None:
                block = np.insert(block, int(d), 1.0 - block.sum(axis=1), axis=1)
            cols.append(block)
            j += w
        at = sl.stop
    cols.append(Xt[:, at:])
    return np.hstack(cols)


def _pipeline_wide(rng, fs, P, regressor: bool = False):
    """A Pipeline(ColumnTransformer(...), final) fit on the domain's frame with the options a user
    may pick: one-hot with drop / handle_unknown / sparse output, several columns in one encoder,
    ordinal with categories given, min-max ranges and clip, the remainder passed through or dropped,
    columns selected by name, position, mask, slice or selector; the final estimator any of
    WIDE_FINALS. What fairspec cannot fold (clip=True where it acts on the domain) is evaluated whole.
    Returns (pipe, transformed matrix, logit observable, refusals, info)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import MinMaxScaler, OneHotEncoder, OrdinalEncoder, StandardScaler

    frame = _frame(fs, P)
    inputs = [f.name for f in fs]
    finals = WIDE_REGRESSORS if regressor else WIDE_FINALS
    final = finals[int(rng.integers(0, len(finals)))]
    remainder = "passthrough" if rng.random() < 0.3 else "drop"
    parts, kinds, how = [], {}, {}
    catf = [f for f in fs if f.kind == "cat"]
    grouped = len(catf) > 1 and rng.random() < 0.3     # the category columns in one encoder
    groups = [catf] if grouped else [[f] for f in catf]
    for grp in groups:
        names = [f.name for f in grp]
        if rng.random() < 0.7:
            opts: dict = {}
            r = rng.random()
            if r < 0.2:
                opts["drop"] = "first"
            elif r < 0.35:
                opts["drop"] = "if_binary"
            if rng.random() < 0.3:
                opts["handle_unknown"] = "ignore"
            opts["sparse_output"] = bool(rng.random() < 0.5)
            cats = [list(f.cats) for f in grp]
            if all(list(f.cats) == sorted(f.cats) for f in grp) and rng.random() < 0.5:
                cats = "auto"
            trans = OneHotEncoder(categories=cats, **opts)
            tag = "onehot" + "".join(f" {k}={v}" for k, v in opts.items())
        else:
            cats = "auto" if rng.random() < 0.5 else [[f.cats[int(i)] for i in rng.permutation(len(f.cats))]
                                                      for f in grp]
            opts = {"handle_unknown": "use_encoded_value", "unknown_value": -1} if rng.random() < 0.3 else {}
            trans = OrdinalEncoder(categories=cats, **opts)
            tag = "ordinal" + ("" if cats == "auto" else " given") + (" unknown=-1" if opts else "")
        sel, h = _selector(rng, names, inputs)
        parts.append(("enc_" + "_".join(names), trans, sel))
        for n in names:
            kinds[n], how[n] = tag, h
    for f in fs:
        if f.kind == "cat":
            continue
        r = rng.random()
        kind = ("passthrough" if r < 0.3 else "standard" if r < 0.5 else "minmax" if r < 0.75 else
                "minmax(-1,1)" if r < 0.88 else "minmax-clip")
        if kind == "passthrough" and remainder == "passthrough":
            kinds[f.name] = "remainder"
            continue
        step = {"passthrough": "passthrough", "standard": StandardScaler(), "minmax": MinMaxScaler(),
                "minmax(-1,1)": MinMaxScaler(feature_range=(-1, 1)), "minmax-clip": MinMaxScaler(clip=True)}[kind]
        sel, h = _selector(rng, [f.name], inputs)
        parts.append((f"{kind}_{f.name}", step, sel))
        kinds[f.name], how[f.name] = kind, h
    sparse = float(rng.choice([0.0, 0.3, 1.0]))
    if final.startswith("hgb"):
        # HistGradientBoosting* take no sparse input: the pipeline's own predict would raise (a user's
        # broken model, not one to check); only instances that raised change (the draw is kept)
        sparse = 0.0
    pre = ColumnTransformer(parts, remainder=remainder, sparse_threshold=sparse)
    _quiet(pre.fit, frame)
    Xt = _quiet(pre.transform, frame)
    Xt = np.asarray(Xt.toarray() if hasattr(Xt, "toarray") else Xt, dtype=np.float64)
    est, logit = _final(rng, final, Xt)
    pipe = Pipeline([("pre", pre), ("clf", est)])
    # what fairspec cannot fold is evaluated whole, on one column per input: a number raw, a
    # category its code in declared order (README); a witness is in those terms then
    # a (-1, 1) range folds, and a one-hot drop (session 22: the estimator widened to the whole block);
    # clip=True folds where the clip never acts on the domain (session 22): scale_ and min_ at the
    # domain's ends, as the scaler computes them, inside its feature_range (here fitted on the domain)
    whole = False
    for tname, trans, _ in pre.transformers_:
        if type(trans).__name__ == "MinMaxScaler" and trans.clip:     # named minmax-clip_<feature>
            col = frame[tname.split("_", 1)[1]].astype(np.float64)
            z = np.array([col.min(), col.max()]) * trans.scale_[0] + trans.min_[0]
            whole |= bool(z[0] < trans.feature_range[0] or z[1] > trans.feature_range[1])
    if whole:
        Xt = P.astype(np.float64)
    else:
        Xt = _whole_blocks(pre, Xt)
    refusals = []
    if rng.random() < 0.25:
        # a lambda as a column selector: skops will not load what it saved (FS401 at lint)
        bad = copy.deepcopy(pipe)
        name, trans, cols = bad.named_steps["pre"].transformers[0]
        resolved = bad.named_steps["pre"].transformers_[0][2]
        bad.named_steps["pre"].transformers[0] = (name, trans, lambda X, c=resolved: c)
        refusals.append(('sklearn("m.skops")', bad, Expect("FS401", "lint"), "label"))
    info = {"runtime": "sklearn", "final": final, "columns": kinds, "selected": how, "remainder": remainder,
            "sparse_threshold": sparse, "grouped": grouped, "whole": whole}
    return pipe, Xt, logit, refusals, info


def _frame_variant(seed: int, frame, fs: list[Feature], rows: np.ndarray, y: np.ndarray):
    """The data frame as a user may hand it (a stream of its own, so the seed's other draws stay):
    about one in four with missing values -- NaN / None in a feature column, in the label column, or
    in a column the spec never reads (fairspec drops a row missing a column the spec reads, and keeps
    one missing only another: README) --, about three in ten with the label as text. (Not polars:
    pyproject.toml declares no polars, and tests import only what it declares, tests/test_packaging.py.)
    Returns (frame, the rows that count, their labels, info)."""
    rng = np.random.default_rng([36, seed])
    info: dict = {}
    keep = np.ones(len(frame), dtype=bool)
    if rng.random() < 0.25:
        frame = frame.copy()
        where = str(rng.choice(["feature", "feature", "label", "unread"]))
        k = int(rng.integers(1, max(2, len(frame) // 5)))
        hit = rng.choice(len(frame), size=k, replace=False)
        if where == "feature":
            f = fs[int(rng.integers(0, len(fs)))]
            col = f.name
        else:
            col = "y" if where == "label" else "note"
        if where == "unread":
            frame["note"] = np.arange(len(frame), dtype=np.float64)
        if where == "feature" and f.kind != "int":
            values = frame[col].astype(object)          # category strings, Python bools
        else:
            values = frame[col].astype(np.float64)      # ints, the label, the unread column
        values = values.copy()
        values.iloc[hit] = None if values.dtype == object and rng.random() < 0.5 else np.nan
        frame[col] = values
        if where != "unread":
            keep[hit] = False
        info["missing"] = {"column": col, "where": where, "rows": int(k)}
    if rng.random() < 0.3:
        # the label as text ("yes" / "no"; a missing one stays missing): `label = y == "yes"`
        frame = frame.copy()
        frame["y"] = frame["y"].map({1: "yes", 0: "no", 1.0: "yes", 0.0: "no"}).astype(object)
        info["label_text"] = True
    return frame, rows[keep], y[keep], info


# ------------------------------------------------------------------ generation


def _features(rng, shape: str) -> list[Feature]:
    fs = shipped._features(rng)
    if shape == "pipeline":          # encoders take categories: a bool is a two-category feature here
        fs = [Feature(f.name, "cat", cats=("n", "y"), protected=f.protected) if f.kind == "bool" else f for f in fs]
        for f in fs:                 # declared in another order than sorted (a pipeline given that order)
            if f.kind == "cat" and rng.random() < 0.3:
                f.cats = tuple(f.cats[int(i)] for i in rng.permutation(len(f.cats)))
    return fs


def generate(seed: int, n_props: int = 6) -> Instance:
    rng = np.random.default_rng([33, seed])
    shape = shape_of(seed)
    fs = _features(rng, shape)
    names = [f.name for f in fs]
    P = grid(fs)
    encs: list[Enc] = [] if shape == "pipeline" else [nw._encoding(rng, f, False) for f in fs]
    n = int(rng.integers(40, 160))
    rows = rng.integers(0, P.shape[0], size=n)
    ylab = rng.integers(0, 2, size=n)
    frame = _frame(fs, P[rows], ylab)
    info = {"shape": shape, "points": int(P.shape[0])}
    frame, rows, ylab, more = _frame_variant(seed, frame, fs, rows, ylab)
    info.update(more)
    cats = _categorical(np.random.default_rng([34, seed]), fs, encs) if shape in ("xgb", "xgb-early", "lgbm") else None
    if cats:
        info["categories"] = {k: list(v) for k, v in cats.items()}
    values, pick = None, None
    if shape == "pipeline" and _wide(seed):
        regressor = _regressor(seed)
        pipe, X, logit, refusals, more = _pipeline_wide(rng, fs, P, regressor)
        shape = info["shape"] = f"pipeline-{more['final']}"
        if regressor:       # its value, as its own predict computes it on the domain's frame
            values = np.asarray(_quiet(pipe.predict, _frame(fs, P)), dtype=np.float64).reshape(-1)
            out = nw.Outputs(values > 0.5, values, None, True)
            # label of a regression: FS415 at lint (it has no decision)
            refusals = [r for r in refusals if r[3] != "label"] + [
                ('sklearn("m.skops")', pipe, Expect("FS415", "lint"), "label")]
        else:
            out = _sk_outputs(pipe, _frame(fs, P), 1, logit)
        named, backends = [('sklearn("m.skops")', pipe, out, "pipeline")], PAIRS_ALL
        if more["final"] == "linear-reg":
            # milp / smt encode a LinearRegression since session 21: its backend is drawn from a stream
            # of its own ([40, seed]), so that this stream's other cells stay as they were (one
            # backend drew nothing from it)
            pick = np.random.default_rng([40, seed])
    elif shape == "pipeline":
        pipe, _, X, more = _pipeline(rng, fs, P)
        dom = _frame(fs, P)
        out = _sk_outputs(pipe, dom, 1, True)
        named, refusals, backends = [('sklearn("m.skops")', pipe, out, "pipeline")], [], PAIRS_ALL
    else:
        X = encode_points(encs, P, names)
        info["encodings"] = {e.feature.name: e.text() for e in encs}
        if shape in ("logistic", "tree", "forest", "mlp"):
            named, refusals, backends, more = _sklearn(rng, shape, X, fs)
        elif shape in ("xgb", "xgb-early"):
            named, refusals, backends, more, _ = _xgboost(rng, shape, X, encs, cats)
        elif shape == "lgbm":
            named, refusals, backends, more, _ = _lightgbm(rng, X, encs, cats)
        else:
            named, refusals, backends, more = _torch(rng, X)
        if cats and any(cats[f] != fs[names.index(f)].cats for f in cats):
            # the declared order written as implicit codes: not the model's (FS420 at lint)
            refusals.append((named[0][0], named[0][1], Expect("FS420", "lint"), "label"))
    info.update(more)
    info.setdefault("head", shape)

    def prelude(decl: str, implicit: bool = False) -> str:
        label = 'y == "yes"' if info.get("label_text") else "y == 1"
        text = (f'data d = csv("d.csv", label = {label})\n'
                "features F from d {\n" + "\n".join(f.decl() for f in fs) + "\n}\n"
                f"model m = {decl}\n")
        if encs:        # implicit: every code line without its table
            text += "encode F for m {\n" + "\n".join(f"  {e.feature.name} : {'code' if implicit and e.kind == 'code' else e.text()}"
                                                       for e in encs) + "\n}\n"
        return text

    judge = ApiJudge()
    ctx = {"fs": fs, "P": P, "X": X, "rows": rows, "y": ylab, "info": info, "size": int(P.shape[0])}
    props: list[Prop] = []
    for k in range(n_props):
        decl, obj, out, tag = named[k % len(named)]
        p = shipped._metric(rng, f"d{k}", out, ctx) if rng.random() < 0.3 and values is None else None
        if values is not None:
            p = _value_pair(rng, f"p{k}", values, ctx, backends, pick)
        elif p is None:
            p = shipped._pair(rng, f"p{k}", out, ctx, backends)
        p.family = FAMILY
        p.spec = None if decl == named[0][0] else prelude(decl)
        p.meta.update(shape=shape, declared=tag, runtime=info["runtime"])
        if p.meta.get("post") == "prob" and info.get("objective") in NO_PROBABILITY:
            # binary:hinge's predict_proba is its 0 / 1 decision, binary:logitraw's its margin: prob is
            # refused at lint whatever the declared output (neither it nor the margin's logistic, silently)
            p.truth, p.expect, p.spec = Truth("refused", domain=-1, note="FS415 at lint"), Expect("FS415", "lint"), \
                prelude(decl)
        judge.objects[p.name] = ({"m": obj}, {"d": frame})
        props.append(p)
    for k, (decl, obj, expect, post) in enumerate(refusals):
        ensure = "label(m(x)) == label(m(x'))" if post == "label" else "|prob(m(x)) - prob(m(x'))| <= 0.1"
        text = f"property r{k} {{\n  forall x, x' : F\n  require x.* == x'.* except {{g}}\n  ensure {ensure}\n}}"
        props.append(Prop(f"r{k}", FAMILY, text, Truth("refused", domain=-1, note=f"{expect.code} at {expect.stage}"),
                          {"shape": shape, "declared": "ambiguous", "post": post, "runtime": info["runtime"]},
                          spec=prelude(decl, implicit=expect.code == "FS420"), expect=expect))
        judge.objects[f"r{k}"] = ({"m": obj}, {"d": frame})
    files = {"objects.pkl": _pickled(judge.objects), "check.py": REPRO.encode()}
    inst = Instance(FAMILY, seed, prelude(named[0][0]), files, props, info)
    inst.judge = judge
    return inst


def _pickled(objects: dict) -> bytes:
    try:
        return pickle.dumps(objects)
    except Exception as e:  # noqa: BLE001 - a reproducer nicety, never the judgement
        return f"not picklable: {type(e).__name__}: {e}".encode()


#: a reproducer folder's script: the spec checked through the API with the property's objects
REPRO = '''"""python check.py spec.fair PROPERTY (a --case folder): fairspec.check(SPEC, models=..., data=...) with the objects
the property was drawn on (objects.pkl: property name -> (models, data))."""
import pickle
import sys

import fairspec

models, data = pickle.load(open("objects.pkl", "rb"))[sys.argv[2]]
print(fairspec.check(sys.argv[1], models=models, data=data).to_json())
'''
