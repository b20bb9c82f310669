"""A scikit-learn forest whose predict sums its trees in the order its threads finish.

RandomForest and ExtraTrees (classifier and regressor) with ``n_jobs`` other than 1 / None predict by adding each
tree's output into one array under a lock, in the order the threads finish (sklearn.ensemble._forest's
``_accumulate_prediction``), then dividing by the number of trees. A float sum depends on its order, so two
calls on the same input can differ in the last bits (measured: a forest of 200 trees, n_jobs = 4, up to 1,693 of
5,000 rows differ between two calls): at a tie (``|prob(m(x)) - prob(m(x'))| <= 0``, a probability equal to a
threshold) such a model has no one output, and a verdict decided on one call (or on fairspec's tree order) need
not hold on the next.

What fairspec does (:func:`order_problem`): a threaded forest of 3 or more trees whose every sum is exact in every
order is one function (a sum of 2 is commutative; a sum of leaf values that are all multiples of ``2**-k``, whose
largest possible total times ``2**k`` is below ``2**53``, is exact whatever the order: a forest of fully grown
trees, whose leaves hold the probabilities 0 and 1, is one) and is decided as before. Any other threaded forest is
:class:`~fairspec.models.base.AmbiguousRuntime` wherever fairspec reads it (every property of it is ``unknown``,
the sentence naming ``n_jobs`` and the fix: set ``n_jobs = 1`` before saving), except where
:mod:`fairspec.kinds.forest_margin` decides a pair property by a margin larger than any reordering's error and
:mod:`fairspec.backends.data.forest_rows` a metric of its decisions on data row by row. A model
with ``n_jobs`` 1 / None sums its trees in their order, bit for bit fairspec's: nothing changes.

:func:`threaded_forests` walks the estimator (a Pipeline's steps, a Voting / Stacking / Bagging ensemble's
members) without importing scikit-learn; :func:`order_problem` imports numpy only.
"""

from __future__ import annotations

FORESTS = ("RandomForestClassifier", "RandomForestRegressor", "ExtraTreesClassifier", "ExtraTreesRegressor")


def threaded(est) -> bool:
    """A forest of 3 or more trees that predicts on several threads (``n_jobs`` neither 1 nor None)."""
    if type(est).__name__ not in FORESTS:
        return False
    n_jobs = getattr(est, "n_jobs", None)
    return n_jobs is not None and n_jobs != 1 and len(getattr(est, "estimators_", ()) or ()) >= 3


def threaded_forests(est, depth: int = 0) -> list:
    """Every threaded forest (:func:`threaded`) in the estimator: itself, a Pipeline's steps, a
    ColumnTransformer's transformers, an ensemble's fitted members (Voting, Stacking, Bagging, OneVsRest), a
    CalibratedClassifierCV's calibrated members, a FrozenEstimator's model, any other estimator among its
    attributes (a TransformedTargetRegressor's regressor_), nested; each once."""
    if est is None or depth > 8:
        return []
    if threaded(est):
        return [est]
    if type(est).__name__ in FORESTS:
        return []
    out = []
    kids = []
    for name in ("steps", "transformers_"):
        for step in getattr(est, name, None) or ():
            if isinstance(step, tuple) and len(step) >= 2:
                kids.append(step[1])
    for name in ("estimators_", "final_estimator_", "estimator_"):
        v = getattr(est, name, None)
        kids.extend(v if isinstance(v, (list, tuple)) else [v])
    # CalibratedClassifierCV's fitted members (calibrated_classifiers_[i].estimator), a FrozenEstimator's model
    kids.extend(getattr(c, "estimator", None) for c in getattr(est, "calibrated_classifiers_", None) or ())
    if type(est).__name__ == "FrozenEstimator":
        kids.append(getattr(est, "estimator", None))
    # any other estimator it holds (a TransformedTargetRegressor's regressor_, a search's best_estimator_, ...):
    # one more forest found only refuses more, one missed reads a threaded model as one function
    for v in list(vars(est).values()) if hasattr(est, "__dict__") else ():
        for k in (v if isinstance(v, (list, tuple)) else v.values() if isinstance(v, dict) else [v]):
            if hasattr(k, "get_params") and not isinstance(k, type) and all(k is not j for j in kids):
                kids.append(k)
    seen = []
    for k in kids:
        if k is not None and not isinstance(k, str) and all(k is not j for j in seen):
            seen.append(k)
            for f in threaded_forests(k, depth + 1):
                if all(f is not g for g in out):
                    out.append(f)
    return out


def _leaf_terms(tree_est):
    """The values a member adds into the forest's sum: its leaves' ``tree_.value`` (a classifier's class
    probabilities, which its predict_proba returns as they are; a regressor's mean)."""
    import numpy as np

    t = tree_est.tree_
    leaves = np.asarray(t.children_left) == -1
    return np.asarray(t.value, dtype=np.float64)[leaves].reshape(int(leaves.sum()), -1)


def order_free(forest) -> bool:
    """True when every sum the forest's predict computes is exact in every order: every leaf value is a
    multiple of ``2**-k`` and (sum over trees of their largest |leaf value|) * 2**k < 2**53, so every
    partial sum, in any order, is a float exactly."""
    import math

    import numpy as np

    total, k = 0.0, 0
    for m in forest.estimators_:
        v = _leaf_terms(m)
        if v.size == 0:
            continue
        if not np.all(np.isfinite(v)):
            return False
        total += float(np.max(np.abs(v)))
        for x in np.unique(v):
            if x != 0.0:
                mant, exp = math.frexp(float(x))         # x = mant * 2**exp, 0.5 <= |mant| < 1
                den = (float(mant).as_integer_ratio()[1]).bit_length() - 1 - exp
                k = max(k, den)
    return math.ldexp(total, k) < 2.0 ** 53 if total > 0 else True


def order_problem(est) -> str | None:
    """None when the model's trees sum to one number in every order; else the sentence of its ``unknown``."""
    bad = [f for f in threaded_forests(est) if not order_free(f)]
    if not bad:
        return None
    f = bad[0]
    return (f"its {type(f).__name__} predicts on n_jobs = {f.n_jobs} threads, adding its "
            f"{len(f.estimators_)} trees' outputs in the order the threads finish, and its leaf values are not "
            f"sums exact in every order: its predict is not a function of its input in the last bits (two calls "
            f"can differ at a tie), so no verdict on one order is one on the model; set n_jobs = 1 on the "
            f"forest before saving it (the trees then add in their order) to check it")


def _threads(n_jobs, trees) -> bool:
    ok = isinstance(n_jobs, int) and not isinstance(n_jobs, bool)
    return ok and n_jobs != 1 and isinstance(trees, int) and trees >= 3


def _skops_forests(node, depth: int = 0):
    """(class, n_jobs, trees) of every threaded forest in a skops schema node (nothing is loaded)."""
    import json

    if depth > 40:
        return
    if isinstance(node, list):
        for x in node:
            yield from _skops_forests(x, depth + 1)
        return
    if not isinstance(node, dict):
        return
    if node.get("__class__") in FORESTS and node.get("__loader__") == "ObjectNode":
        inner = node.get("content", {}).get("content", {}) if isinstance(node.get("content"), dict) else {}

        def num(name):
            v = inner.get(name) if isinstance(inner, dict) else None
            try:
                return json.loads(v["content"]) if isinstance(v, dict) and v.get("__loader__") == "JsonNode" else None
            except (KeyError, TypeError, ValueError):
                return None
        fitted = inner.get("estimators_") if isinstance(inner, dict) else None
        trees = len(fitted["content"]) if isinstance(fitted, dict) and isinstance(fitted.get("content"), list) \
            else num("n_estimators")            # the fitted trees, as check counts them (n_estimators may be reset)
        if _threads(num("n_jobs"), trees):
            yield node["__class__"], num("n_jobs"), trees
        return
    for v in node.values():
        if isinstance(v, (dict, list)):
            yield from _skops_forests(v, depth + 1)


def _pickle_forests(obj, depth: int = 0, seen=None):
    from .inert_pickle import _state, _Stub

    seen = set() if seen is None else seen
    if depth > 40 or id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, _Stub):
        st = _state(obj)
        if obj._qual[1] in FORESTS:
            fitted = st.get("estimators_")
            trees = len(fitted) if isinstance(fitted, (list, tuple)) else st.get("n_estimators")
            if _threads(st.get("n_jobs"), trees):
                yield obj._qual[1], st.get("n_jobs"), trees
            return
        for v in st.values():
            yield from _pickle_forests(v, depth + 1, seen)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _pickle_forests(v, depth + 1, seen)
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _pickle_forests(v, depth + 1, seen)


def peek_threaded_forest(path) -> tuple[str, int, int] | None:
    """Lint's look (nothing is loaded or run): (class, n_jobs, trees) of the first RandomForest / ExtraTrees
    in a skops file or a pickle (read inertly) that predicts on several threads, or None."""
    import json
    import pathlib
    import zipfile

    p = pathlib.Path(path)
    try:
        if p.suffix.lower() == ".skops":
            with zipfile.ZipFile(p) as zf:
                return next(_skops_forests(json.loads(zf.read("schema.json"))), None)
        from .inert_pickle import _load_inert_pickle

        return next(_pickle_forests(_load_inert_pickle(p)), None)
    except Exception:  # noqa: BLE001 - lint's look only: an unreadable file gets its sentence elsewhere
        return None


def lint_sentence(model: str, found: tuple) -> str:
    """FS440's message."""
    cls, n_jobs, trees = found
    return (f"model '{model}' is a {cls} of {trees} trees predicting on n_jobs = {n_jobs} threads: it adds its "
            f"trees' outputs in the order the threads finish, so where its leaf values do not sum exactly in "
            f"every order its predict is not a function of its input in the last bits (two calls can differ at "
            f"a tie); check decides it as one function only where every sum is exact in every order (fully "
            f"grown trees, leaves 0 / 1), otherwise only by a margin larger than any reordering moves an output "
            f"(a pair property, a metric of its decisions on data row by row), and says unknown elsewhere")
