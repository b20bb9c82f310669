"""The pipeline constructs session 28 taught fairspec, through the Python API (session 29).

One construct per instance (``SHAPES``, the seed's remainder), the others drawn beside it now and
then, in a Pipeline(ColumnTransformer(...), final) fit on the domain's frame and checked with
``fairspec.check(spec, models={"m": pipe}, data={"d": frame})`` (the api family's judge):

- ``infrequent``: an OrdinalEncoder that groups infrequent categories (``max_categories`` /
  ``min_frequency``, fit on rows whose category counts differ): folded (its codes read off its transform;
  several grouped share a code, folded since session 33);
- ``weights``: ColumnTransformer ``transformer_weights`` (folded on passthrough numbers, code tables and
  scalers times a power of 2; evaluated whole on a one-hot block or a scaler times 3, FS423);
- ``imputer``: a SimpleImputer whose ``missing_values`` is a domain value (an int, or a category
  string imputed by the most frequent or a constant one), alone or before a scaler / encoder in a
  nested pipeline, evaluated whole (FS423);
- ``extra-cats``: an OrdinalEncoder fitted on categories the feature does not declare (warning
  FS437, the properties range over the declared ones); a OneHotEncoder so fitted is error FS422
  where the pipeline folds (an expected refusal, at lint; FS437 where it is evaluated whole), and so
  is an encoder fitted without a declared category, folded or whole;
- ``xgb`` / ``lgbm``: an XGBClassifier (half with early stopping: its predict reads rounds 0 ..
  best_iteration) / LGBMClassifier as the final step, about half its split thresholds moved onto
  grid points of the transformed columns (decided as a tree model through its booster); about a
  third of the LGBMClassifiers trained with objective multiclass / multiclassova and num_class = 2
  (a margin per class; drawn from a stream of their own, so the other draws stay as they were).

The other finals are api._final's (LogisticRegression with dyadic weights and a decision exactly 0
at a domain point, a tree with thresholds on grid points, an MLP with dyadic weights, histogram
gradient boosting). Truth: enumeration with the pipeline's own predict / predict_proba /
decision_function on the domain's frame; witnesses' encodings are the transformed columns when the
pipeline folds, the declared codes when it is evaluated whole.
"""

from __future__ import annotations

import re

import numpy as np

from . import api, shipped, trees
from .api import ApiJudge, _frame, _quiet
from .core import Expect, Feature, Instance, Prop, Truth, grid

FAMILY = "pipelines"
SHAPES = ("infrequent", "weights", "imputer", "extra-cats", "xgb", "lgbm")
FINALS = ("logistic", "tree", "mlp", "hgb")
#: every value the ``shape`` of a property may take (cells)
CELLS = SHAPES


def shape_of(seed: int) -> str:
    return SHAPES[seed % len(SHAPES)]


def _features(rng, shape: str) -> list[Feature]:
    fs = api._features(rng, "pipeline")
    cats = [f for f in fs if f.kind == "cat"]
    if shape in ("infrequent", "extra-cats") and not any(len(f.cats) >= 3 for f in cats):
        f = cats[-1]
        f.cats = tuple(f.cats) + tuple(f"x{i}" for i in range(3 - len(f.cats)))
    if shape == "imputer" and not any(f.kind == "int" for f in fs):
        fs.append(Feature(f"n{len(fs)}", "int", lo=int(rng.choice([0, -1, 1])), hi=int(rng.integers(2, 4))))
    return fs


def _take(rng, c: str, force: str | None, want: set, p: float = 0.5) -> bool:
    """Whether this step takes construct c: the one it is forced to, or one drawn beside (once)."""
    if force == c or (c in want and force is None and rng.random() < p):
        want.discard(c)
        return True
    return False


def _cat_step(rng, f: Feature, fit_frame, want: set, info: dict, force: str | None = None):
    """The encoder of category feature f (maybe after a SimpleImputer of one of its categories)."""
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

    declared = list(f.cats)
    if len(declared) >= 3 and _take(rng, "infrequent", force, want):
        if rng.random() < 0.5:
            opts = {"max_categories": int(rng.integers(2, len(declared)))}
        else:
            counts = fit_frame[f.name].value_counts()
            opts = {"min_frequency": int(np.median(counts.values)) + int(rng.integers(0, 2))}
        if rng.random() < 0.3:
            opts.update(handle_unknown="use_encoded_value", unknown_value=-1)
        if rng.random() < 0.3:      # a one-hot block grouping them too (folded since session 33, in the declared
            if "handle_unknown" in opts:    # order: a folded one-hot block in another is FS422)
                opts.update(handle_unknown="infrequent_if_exist")
                opts.pop("unknown_value")
            step = OneHotEncoder(sparse_output=False, categories=[declared], **opts)
        else:
            step = OrdinalEncoder(**opts)
        info.setdefault("constructs", []).append(f"{type(step).__name__} {f.name} {opts}")
    elif _take(rng, "extra-cats", force, want):
        known = list(declared)
        for k in range(int(rng.integers(1, 3))):
            known.insert(int(rng.integers(0, len(known) + 1)), f"zz{k}")
        step = OrdinalEncoder(categories=[known])
        info.setdefault("constructs", []).append(f"ordinal {f.name} fitted on {known}")
        info["extra"] = (f.name, known)
    elif rng.random() < 0.6:
        step = OneHotEncoder(categories=[declared] if rng.random() < 0.5 or declared != sorted(declared) else "auto",
                             sparse_output=False)
    else:
        step = OrdinalEncoder(categories=[[declared[int(i)] for i in rng.permutation(len(declared))]])
    if _take(rng, "imputer", force, want, 0.3):
        from sklearn.impute import SimpleImputer

        mv = declared[int(rng.integers(0, len(declared)))]
        if rng.random() < 0.5:
            imp = SimpleImputer(missing_values=mv, strategy="most_frequent")
        else:
            imp = SimpleImputer(missing_values=mv, strategy="constant",
                                fill_value=[c for c in declared if c != mv][int(rng.integers(0, len(declared) - 1))])
        info.setdefault("constructs", []).append(f"imputer {f.name} {mv!r} {imp.strategy}")
        step = Pipeline([("imp", imp), ("enc", step)])
    return step


def _num_step(rng, f: Feature, want: set, info: dict, force: str | None = None):
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import MinMaxScaler, StandardScaler

    r = rng.random()
    step = "passthrough" if r < 0.3 else StandardScaler() if r < 0.65 else MinMaxScaler()
    if _take(rng, "imputer", force, want):
        from sklearn.impute import SimpleImputer

        mv = 0 if f.lo <= 0 <= f.hi and rng.random() < 0.6 else int(rng.integers(f.lo, f.hi + 1))
        strategy = str(rng.choice(["mean", "median", "most_frequent", "constant"]))
        imp = SimpleImputer(missing_values=mv, strategy=strategy,
                            **({"fill_value": int(rng.integers(f.lo, f.hi + 1))} if strategy == "constant" else {}))
        info.setdefault("constructs", []).append(f"imputer {f.name} {mv} {strategy}")
        step = imp if step == "passthrough" or rng.random() < 0.3 else Pipeline([("imp", imp), ("sc", step)])
    return step


def _booster_final(rng, kind: str, Xt: np.ndarray, info: dict, side=None):
    """An XGBClassifier / LGBMClassifier fit on the transformed matrix, about half its thresholds on grid points.
    ``side`` (its own stream, so the instances drawn before stay as they were): now and then an LGBMClassifier
    trained with objective multiclass / multiclassova and num_class = 2 (two classes to scikit-learn, a raw
    margin per class to LightGBM: its (n, 2) decision_function was flattened to 2n numbers, session 30)."""
    y = trees._labels(rng, Xt)
    kw = dict(max_depth=int(rng.integers(1, 4)), n_jobs=1, random_state=int(rng.integers(0, 1000)),
              learning_rate=float(rng.choice([0.3, 0.5, 1.0])))
    if kind == "xgb":
        import xgboost as xgb

        # now and then an objective whose probability is not the logistic of the margin, or a missing
        # value a domain point holds (the booster's trees do not say either: pipeline_boosters refuses)
        if rng.random() < 0.25:
            kw["objective"] = info["objective"] = str(rng.choice(["binary:logitraw", "binary:hinge", "reg:logistic"]))
        if rng.random() < 0.15:
            kw["missing"] = info["missing"] = 0.0
        if rng.random() < 0.5:
            yv = rng.integers(0, 2, size=Xt.shape[0])
            est = _quiet(xgb.XGBClassifier(n_estimators=6, early_stopping_rounds=2, **kw).fit, Xt, y,
                         eval_set=[(Xt, yv)], verbose=False)
            info["best_iteration"] = int(est.best_iteration)
        else:
            est = _quiet(xgb.XGBClassifier(n_estimators=int(rng.integers(1, 5)), **kw).fit, Xt, y)
        if rng.random() < 0.6:
            est = api._xgb_edit(rng, est, Xt)
            if "missing" in kw:             # a wrapper's parameter, not the booster's JSON
                est.set_params(missing=kw["missing"])
            info["edited"] = True
        return est
    import lightgbm as lgb

    if side is not None and side.random() < 0.35:
        kw.update(objective=str(side.choice(["multiclass", "multiclassova"])), num_class=2)
        info["objective"] = kw["objective"]
    est = lgb.LGBMClassifier(n_estimators=int(rng.integers(1, 5)), verbose=-1, min_child_samples=2, num_leaves=7, **kw)
    _quiet(est.fit, Xt, y)
    if rng.random() < 0.6:
        text = est.booster_.model_to_string()

        def block(b: str) -> str:
            sf, th = re.search(r"^split_feature=(.*)$", b, re.M), re.search(r"^threshold=(.*)$", b, re.M)
            if not sf or not th:
                return b
            t = th.group(1).split()
            for i, fi in enumerate(int(v) for v in sf.group(1).split()):
                if rng.random() < 0.5:
                    t[i] = repr(trees._tie_value(rng, Xt[:, fi]))
            return b[:th.start(1)] + " ".join(t) + b[th.end(1):]

        head, sep, rest = text.partition("\nTree=")
        text = head + sep + "\nTree=".join(block(b) for b in rest.split("\nTree="))
        text = re.sub(r"^tree_sizes=.*\n", "", text, count=1, flags=re.M)
        est._Booster = lgb.Booster(model_str=text)
        info["edited"] = True
    return est


def _whole(pipe, fs=None) -> bool:
    """Whether fairspec evaluates the fitted pipeline whole (FS423): an imputer of a value of a number or one
    mapping a category onto another before a OneHotEncoder, a OneHotEncoder grouping infrequent categories, a
    transformer weight on a one-hot block or, other than a power of 2, on a scaler (session 32 folds the other
    weights, and an encoder whose one infrequent category gets a code of its own). The folded encoding's columns
    are checked against the pipeline's own transform (tests/test_pipeline_fold_maps.py); here the decision only
    says in which terms a witness's encoding is (the truth is the pipeline's own predict either way). With the
    instance's features ``fs``, settled against their domains as fairspec does (sklearn_pipeline.settle: a scaler
    times a weight other than a power of 2 folds where every int domain value rounds alike, an imputer of a number
    no domain value holds; judged whole before session 34, so such a witness's folded encoding was "no domain
    point")."""
    from fairspec.models.sklearn_pipeline import fold, settle

    folded = fold(pipe)
    if fs is not None and folded.clipped is not None:
        folded = settle(folded, _feature_set(fs))
    return bool(folded.unfoldable)


def _feature_set(fs):
    """The instance's features as the ir.FeatureSet a spec declaring them gives (each read from its own column)."""
    from fairspec import ir

    def domain(f):
        return (ir.IntRange(f.lo, f.hi) if f.kind == "int" else ir.Boolean() if f.kind == "bool" else
                ir.Categorical(tuple(f.cats)))

    return ir.FeatureSet("F", tuple(ir.Feature(f.name, domain(f), f.protected, f.name) for f in fs), "d")


def _unit_blocks(pre, Xt: np.ndarray, frame=None) -> np.ndarray:
    """The transformed matrix with each one-hot block a transformer weight w scaled (0 / w) back to 0 / 1:
    fairspec's encoding of a folded pipeline (it reads the final estimator widened, its weights times w)."""
    X = Xt.copy()
    for name, w in (pre.transformer_weights or {}).items():
        step = pre.named_transformers_[name]
        last = step.steps[-1][1] if hasattr(step, "steps") else step
        if type(last).__name__ == "OneHotEncoder" and w != 1:
            sl = pre.output_indices_[name]
            X[:, sl] = X[:, sl] / w
    return X if frame is None else _whole_grouped_blocks(pre, X, frame)


def _whole_grouped_blocks(pre, X: np.ndarray, frame) -> np.ndarray:
    """``X`` with each OneHotEncoder block grouping infrequent categories (one column for the group) written as
    fairspec encodes it since session 33: one 0 / 1 column per category of the encoder, the frame's own category
    set (the pipeline's estimator reads a group's column as the sum of its categories')."""
    pieces = []
    for name, sl in sorted(pre.output_indices_.items(), key=lambda kv: kv[1].start):
        if sl.stop <= sl.start:
            continue
        step = pre.named_transformers_[name]
        last = step.steps[-1][1] if hasattr(step, "steps") else step
        grouped = type(last).__name__ == "OneHotEncoder" and any(
            g is not None for g in (getattr(last, "infrequent_categories_", None) or []))
        if grouped:
            cols = [c for n, _, c in pre.transformers_ if n == name][0]
            col = cols[0] if isinstance(cols, (list, tuple)) else cols
            cats = list(last.categories_[0])
            v = frame[col].to_numpy()
            pieces.append(np.stack([(v == c).astype(np.float64) for c in cats], axis=1))
        else:
            pieces.append(X[:, sl])
    return np.concatenate(pieces, axis=1) if pieces else X


def _build(rng, shape: str, fs: list[Feature], P: np.ndarray, fit_frame, side=None):
    """(pipe, X for witnesses, logit observable, refusals, info); ``side``: :func:`_booster_final`'s."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    frame = _frame(fs, P)
    want = {s for s in ("infrequent", "weights", "imputer", "extra-cats") if rng.random() < 0.12}
    if shape == "weights":
        want.add("weights")
    info: dict = {"runtime": "sklearn"}
    parts = []
    # the feature the seed's construct goes to (the others are drawn beside it, at most once each)
    if shape in ("infrequent", "extra-cats"):
        target = next(f for f in fs if f.kind == "cat" and len(f.cats) >= 3).name
    elif shape == "imputer":
        ints = [f.name for f in fs if f.kind == "int"]
        target = ints[int(rng.integers(0, len(ints)))] if rng.random() < 0.7 else \
            [f.name for f in fs if f.kind == "cat"][0]
    else:
        target = None
    for f in fs:
        force = shape if f.name == target else None
        step = (_cat_step(rng, f, fit_frame, want, info, force) if f.kind == "cat" else
                _num_step(rng, f, want, info, force))
        parts.append((f"t_{f.name}", step, [f.name]))
    weights = None
    if "weights" in want:
        weights = {n: float(rng.choice([1.0, 0.5, 2.0, 0.25, 3.0])) for n, _, _ in parts if rng.random() < 0.6}
        info["weights"] = weights
    pre = ColumnTransformer(parts, remainder="drop", transformer_weights=weights or None)
    _quiet(pre.fit, fit_frame)
    Xt = np.asarray(_quiet(pre.transform, frame), dtype=np.float64)
    final = shape if shape in ("xgb", "lgbm") else FINALS[int(rng.integers(0, len(FINALS)))]
    if shape not in ("xgb", "lgbm") and rng.random() < 0.3:
        final = str(rng.choice(["xgb", "lgbm"]))
    info["final"] = final
    if final in ("xgb", "lgbm"):
        est, logit = _booster_final(rng, final, Xt, info, side), False
    else:
        est, logit = api._final(rng, final, Xt)
    pipe = Pipeline([("pre", pre), ("clf", est)])
    whole = _whole(pipe, fs)
    info["whole"] = whole
    X = P.astype(np.float64) if whole else _unit_blocks(pre, Xt, frame)
    refusals = []
    if "extra" in info and rng.random() < 0.5:
        # a one-hot block fitted on the extra categories the feature leaves out: FS422 at lint
        from sklearn.linear_model import LogisticRegression

        name, known = info["extra"]
        bad_parts = [(n, OneHotEncoder(categories=[known], sparse_output=False) if n == f"t_{name}" else s, c)
                     for n, s, c in parts]
        bad_pre = _quiet(ColumnTransformer(bad_parts, remainder="drop").fit, fit_frame)
        bad_Xt = np.asarray(_quiet(bad_pre.transform, frame), dtype=np.float64)
        yb = np.arange(bad_Xt.shape[0]) % 2
        bad = Pipeline([("pre", bad_pre), ("clf", _quiet(LogisticRegression().fit, bad_Xt, yb))])
        if not _whole(bad, fs):     # evaluated whole: FS437, a warning (session 29), the verdicts as ever
            refusals.append(('sklearn("m.skops")', bad, Expect("FS422", "lint"), "label"))
    if shape == "extra-cats" and rng.random() < 0.5:
        # an encoder fitted without a declared category (it raises on it): FS422 at lint, folded or whole
        from sklearn.linear_model import LogisticRegression
        from sklearn.preprocessing import OrdinalEncoder

        f = next(f for f in fs if f.name == target)
        gone = f.cats[int(rng.integers(0, len(f.cats)))]
        fewer = [c for c in f.cats if c != gone]
        enc = (OneHotEncoder(categories=[fewer], sparse_output=False) if rng.random() < 0.5 else
               OrdinalEncoder(categories=[fewer]))
        bad_parts = [(n, enc if n == f"t_{target}" else s, c) for n, s, c in parts]
        seen = fit_frame[fit_frame[target] != gone]
        bad_pre = _quiet(ColumnTransformer(bad_parts, remainder="drop", transformer_weights=weights or None).fit, seen)
        bad_Xt = np.asarray(_quiet(bad_pre.transform, seen), dtype=np.float64)
        bad = Pipeline([("pre", bad_pre), ("clf", _quiet(LogisticRegression().fit, bad_Xt,
                                                         np.arange(bad_Xt.shape[0]) % 2))])
        refusals.append(('sklearn("m.skops")', bad, Expect("FS422", "lint"), "label"))
        info["unknown_category"] = (target, gone)
    return pipe, X, logit, refusals, info


def generate(seed: int, n_props: int = 5) -> Instance:
    rng = np.random.default_rng([41, seed])
    shape = shape_of(seed)
    fs = _features(rng, shape)
    P = grid(fs)
    n = int(rng.integers(40, 160))
    rows = rng.integers(0, P.shape[0], size=n)
    ylab = rng.integers(0, 2, size=n)
    frame = _frame(fs, P[rows], ylab)
    # the preprocessing is fit on the domain with some rows repeated (category counts differ)
    fit_frame = _frame(fs, np.vstack([P, P[rows[: max(1, n // 3)]]]))
    pipe, X, logit, refusals, more = _build(rng, shape, fs, P, fit_frame, np.random.default_rng([43, seed]))
    info = {"shape": shape, "points": int(P.shape[0]), **more}
    out = api._sk_outputs(pipe, _frame(fs, P), 1, logit)

    def prelude() -> str:
        return ('data d = csv("d.csv", label = y == 1)\n'
                "features F from d {\n" + "\n".join(f.decl() for f in fs) + "\n}\n"
                'model m = sklearn("m.skops")\n')

    judge = ApiJudge()
    ctx = {"fs": fs, "P": P, "X": X, "rows": rows, "y": ylab, "info": info, "size": int(P.shape[0])}
    props: list[Prop] = []
    for k in range(n_props):
        p = shipped._metric(rng, f"d{k}", out, ctx) if rng.random() < 0.3 else None
        if p is None:
            p = shipped._pair(rng, f"p{k}", out, ctx, api.PAIRS_ALL)
        p.family = FAMILY
        # milp / smt on a booster final: each such property in a spec of its own (until session 29 lint
        # rejected an XGBClassifier final there, FS506, and took the instance's other properties with it)
        alone = info["final"] in ("xgb", "lgbm") and p.meta.get("backend") in ("milp", "smt")
        p.spec = prelude() + f"# {p.name} in a spec of its own\n" if alone else None
        p.meta.update(shape=shape, final=info["final"], whole=info["whole"], runtime="sklearn")
        if p.meta.get("post") == "prob" and info.get("objective") in api.NO_PROBABILITY:
            # a final XGBClassifier whose predict_proba is its 0 / 1 decision (binary:hinge) or its margin
            # (binary:logitraw): prob is FS415 at lint as for the booster saved alone (session 30; check said
            # unknown and lint nothing before), in a spec of its own
            p.truth, p.expect, p.spec = Truth("refused", domain=-1, note="FS415 at lint"), Expect("FS415", "lint"), \
                prelude()
        judge.objects[p.name] = ({"m": pipe}, {"d": frame})
        props.append(p)
    for k, (decl, obj, expect, post) in enumerate(refusals):
        text = ("property r{k} {{\n  forall x, x' : F\n  require x.* == x'.* except {{g}}\n"
                "  ensure label(m(x)) == label(m(x'))\n}}").format(k=k)
        props.append(Prop(f"r{k}", FAMILY, text, Truth("refused", domain=-1, note=f"{expect.code} at {expect.stage}"),
                          {"shape": shape, "declared": "ambiguous", "post": post, "runtime": "sklearn"},
                          spec=prelude(), expect=expect))
        judge.objects[f"r{k}"] = ({"m": obj}, {"d": frame})
    files = {"objects.pkl": api._pickled(judge.objects), "check.py": api.REPRO.encode()}
    inst = Instance(FAMILY, seed, prelude(), files, props, info)
    inst.judge = judge
    return inst
