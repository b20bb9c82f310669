"""A forest adding its trees in thread order (:mod:`fairspec.models.forest_threads`), row by row: its bound E and
the decisions of data rows that are the same in every order.

Every order's output of a RandomForest / ExtraTrees is within E (:func:`reorder_bound`,
:func:`fairspec.certify.rounding.reorder_error`) of the trees' own order's, which is what the forest computes with
``n_jobs = 1`` (:func:`one_thread`). A row whose every output column is more than E from the decision's threshold
and every two columns more than 2E apart (:func:`fairspec.certify.rounding.near_rows`) gets the trees' order's
decision in every order; the others (*near*) may get either. :func:`decide_rows` returns both, for the group
metrics on data (:mod:`fairspec.backends.data.forest_rows`) and the pair properties
(:mod:`fairspec.kinds.forest_margin`), only where the forest's own predict / predict_proba is the model's output
(:func:`own_forests`); None elsewhere (the AmbiguousRuntime refusal stands).
"""

from __future__ import annotations

import contextlib

from .forest_threads import FORESTS, _leaf_terms, threaded_forests


def leaf_total(forest):
    """T (a Fraction): the sum over the forest's trees of their largest |leaf value|."""
    from fractions import Fraction

    import numpy as np

    from fairspec.certify.rounding import fraction

    T = Fraction(0)
    for m in forest.estimators_:
        v = _leaf_terms(m)
        if v.size:
            T += fraction(float(np.max(np.abs(v))))
    return T


def reorder_bound(forest):
    """E (a Fraction): how far any order's output is from the trees' order's (certify.rounding.reorder_error)."""
    from fairspec.certify.rounding import reorder_error

    return reorder_error(len(forest.estimators_), leaf_total(forest))


def forests_of(model) -> list:
    """Every threaded forest of the loaded model (its estimator, a folded pipeline's runtime copy, the pipeline)."""
    out = []
    for est in (getattr(model, "raw", None), getattr(getattr(model, "folded", None), "runtime", None),
                getattr(model, "pipeline", None)):
        for f in threaded_forests(est):
            if all(f is not g for g in out):
                out.append(f)
    return out


def is_own(model, forest) -> bool:
    """Is the model's output the forest's own (the forest itself, a folded pipeline's runtime copy of it, or the
    last step of a pipeline evaluated whole, whose predict / predict_proba is the step's on the transformed rows)?"""
    if type(forest).__name__ not in FORESTS:
        return False
    for est in (getattr(model, "raw", None), getattr(getattr(model, "folded", None), "runtime", None),
                getattr(model, "pipeline", None)):
        steps = getattr(est, "steps", None)
        if est is forest or (isinstance(steps, list) and steps and steps[-1][1] is forest):
            return True
    return False


def own_forests(model) -> list | None:
    """The model's threaded forests when each is the model's own output (:func:`is_own`), else None."""
    forests = forests_of(model)
    return forests if forests and all(is_own(model, f) for f in forests) else None


@contextlib.contextmanager
def one_thread(model, forests):
    """The model with its forests on one thread (their trees' order), restored after."""
    saved = [(f, f.n_jobs) for f in forests]
    problem = model.order_problem
    try:
        for f, _ in saved:
            f.n_jobs = 1
        model.order_problem = None
        yield
    finally:
        for f, n_jobs in saved:
            f.n_jobs = n_jobs
        model.order_problem = problem


@contextlib.contextmanager
def recording(forests):
    """Each forest's trees' predict_proba, as the forest's own predict_proba calls them (an attribute of the
    tree instance, looked up by the forest at each call), recorded: yields ``calls``, a list of (forest index,
    tree index, output) in call order; the trees restored after."""
    import numpy as np

    calls, patched = [], []

    def wrap(fi, ti, tree, orig):
        def predict_proba(X, *args, **kwargs):
            out = orig(X, *args, **kwargs)
            calls.append((fi, ti, np.array(out, dtype=np.float64, copy=True) if not isinstance(out, list)
                          else None))
            return out
        return predict_proba

    try:
        for fi, f in enumerate(forests):
            for ti, tree in enumerate(f.estimators_):
                if any(tree is p[0] for p in patched):      # a runtime copy sharing its trees: recorded once
                    continue
                had = "predict_proba" in vars(tree)
                patched.append((tree, had, vars(tree).get("predict_proba")))
                tree.predict_proba = wrap(fi, ti, tree, tree.predict_proba)
        yield calls
    finally:
        for tree, had, old in reversed(patched):
            if had:
                tree.predict_proba = old
            else:
                vars(tree).pop("predict_proba", None)


def row_sums(calls, forests, rows: int):
    """certify.row_sums.RowSums of the trees' outputs recorded (:func:`recording`) during ONE predict_proba of
    the model on ``rows`` rows: one forest, its trees each called once per batch, in order, the batches
    covering the rows; None for anything else (the forest-wide bound then stands)."""
    import numpy as np

    from fairspec.certify.row_sums import RowSums

    if not calls or len({c[0] for c in calls}) != 1 or any(c[2] is None or c[2].ndim != 2 for c in calls):
        return None
    n = len(forests[calls[0][0]].estimators_)
    if len(calls) % n or any(c[1] != i % n for i, c in enumerate(calls)):
        return None
    parts = []
    for b in range(0, len(calls), n):
        sums = RowSums()
        batch = calls[b:b + n]
        if len({c[2].shape for c in batch}) != 1:
            return None
        for c in batch:
            sums.add(c[2])
        parts.append(sums)
    if len(parts) == 1:
        return parts[0] if parts[0].s.shape[0] == rows else None
    out = RowSums()
    out.n, out.k = n, np.concatenate([p.k for p in parts])
    out.s = np.concatenate([p.s for p in parts])
    return out if out.s.shape[0] == rows else None


def decide_rows(model, X):
    """``(d, near, E, forests)`` of a threaded classifier forest on the encoded rows X: the model's decisions
    (``LoadedModel.decide``: its predict, or its probability against the threshold) in the trees' order, the
    mask of rows some other order may decide otherwise, E (the forest-wide bound). A row is near when
    :func:`fairspec.certify.rounding.near_rows` calls it so against its OWN bound (the trees' outputs at that
    row, as the forest's predict_proba computed them: :func:`recording`, certify.row_sums) -- never when its
    sum is exact in every order (one float in every order: the trees' order's decision, ties included); the
    forest-wide E for every row when the trees' outputs could not be read. None where this reading does not
    apply: no order problem, a forest that is not the model's own output, a regression, a score that is not
    the forest's probability (a logit of it)."""
    import numpy as np

    if getattr(model, "order_problem", None) is None:
        return None
    forests = own_forests(model)
    if forests is None or getattr(model, "task", None) == "regression" or \
            getattr(model, "score_kind", None) != "prob" or not hasattr(model, "library_probabilities"):
        return None
    E = max(reorder_bound(f) for f in forests)       # a folded pipeline's runtime copy: the same trees
    with one_thread(model, forests):
        P, near = probabilities_near(model, forests, X, E)
        d = decisions_of(model, forests, P)
        if d is None:               # a decision that is no readout of predict_proba: the model's own, a second call
            d = np.asarray(model.decide(X), dtype=np.int64)
    if P.ndim != 2 or P.shape[0] != d.shape[0]:
        return None
    return d, near, E, forests


def decisions_of(model, forests, P):
    """``model.decide``'s decisions read from the forest's predict_proba ``P`` (the one-thread call that
    :func:`probabilities_near` records), or None where they are not a readout of it. A scikit-learn classifier's
    decision is its ``predict`` (``SklearnModel.decide``: the binary positive class, or class ``index`` of a
    multiclass model) and a single-output ForestClassifier's predict is ``classes_.take(argmax(predict_proba))``
    in scikit-learn's own code (the first largest column at a tie), a Pipeline's its last step's on the same
    transformed rows: so the decision is ``argmax(P) == column``. Anything else (a subclass overriding predict,
    several outputs, another readout) keeps the model's own call."""
    import numpy as np

    if getattr(model, "format", "") != "sklearn" or not _predict_is_argmax(model, forests):
        return None
    ro = model.readout
    if ro.task == "multiclass" and ro.index is not None and bool(getattr(model, "classes", None)):
        col = int(ro.index)
    elif getattr(model, "label_by_predict", False) and ro.task == "binary":
        col = 0 if ro.index == 0 else 1
    else:
        return None
    P = np.asarray(P)
    if P.ndim != 2 or not 0 <= col < P.shape[1] or P.shape[1] != len(forests[0].classes_):
        return None
    return (np.argmax(P, axis=1) == col).astype(np.int64)


def _predict_is_argmax(model, forests) -> bool:
    """Is every estimator the model's runtime may call for ``predict`` a single-output scikit-learn
    ForestClassifier whose predict / predict_proba are the library's own (or a Pipeline ending in one)?"""
    from sklearn.ensemble._forest import ForestClassifier
    from sklearn.pipeline import Pipeline

    for f in forests:
        if not isinstance(f, ForestClassifier) or getattr(f, "n_outputs_", None) != 1 or \
                type(f).predict is not ForestClassifier.predict or \
                type(f).predict_proba is not ForestClassifier.predict_proba:
            return False
    for est in (getattr(model, "raw", None), getattr(getattr(model, "folded", None), "runtime", None),
                getattr(model, "pipeline", None)):
        if est is None or any(est is f for f in forests):
            continue
        if type(est) is not Pipeline or not any(est.steps[-1][1] is f for f in forests):
            return False
    return True


def probabilities_near(model, forests, X, E):
    """``(P, near)``: the model's class probabilities on X (call it on one thread: :func:`one_thread`) and the
    mask of rows another order may decide otherwise: against each row's own bound, never a row exact in every
    order (certify.row_sums); against the forest-wide ``E`` where the trees' outputs could not be read."""
    import numpy as np

    from fairspec.certify.rounding import near_rows

    with recording(forests) as calls:
        P = np.asarray(model.library_probabilities(X), dtype=np.float64)
    threshold = getattr(model.readout, "threshold", None)
    sums = row_sums(calls, forests, P.shape[0]) if P.ndim == 2 else None
    if sums is None:
        return P, near_rows(P, E, threshold)
    return P, near_rows(P, sums.errors(), threshold) & ~sums.exact()
