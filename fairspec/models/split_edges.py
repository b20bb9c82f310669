"""A scikit-learn pipeline evaluated whole whose tree model follows a step summing over columns (PCA, a
PolynomialFeatures, ...): that step rounds a value by batch (models/batching.rounds_by_batch), and the trees turn
a change of one ulp into a jump of their output wherever the value sits on a split threshold. The spread assumed
for a model outside the runtime error model (models/batching.ASSUMED_SPREAD, a small share of its output) does
not bound such a jump: an unfolded Pipeline(onehot + passthrough, PCA(2), HistGradientBoostingClassifier) whose
root split sits at a domain point's PCA value (one ulp apart in the whole domain's batch and alone) was said
``holds (proved)`` by the enumeration, while its own predict, each point alone, breaks the property (session 36).

:func:`at_split_edges` says, per encoded row, whether the trees' input lies within that rounding of one of their
split thresholds (another batch may send it down the other branch); kinds/pair_enumeration then widens the
assumed spread over every output the model gives, so such a row decides nothing alone."""

from __future__ import annotations

import numpy as np

#: how far another batch may move a value of the steps before the trees, relative to 1 + the largest magnitude
#: of them (measured: one ulp, 3.6e-15 at magnitudes near 5, between a row alone and a batch of 512, PCA of
#: 4-32 columns); float64's assumed spread (models/batching.ASSUMED_SPREAD)
INPUT_SPREAD = 2.0 ** -40


def mixed_trees(model) -> bool:
    """Is ``model`` a pipeline evaluated whole whose final tree model follows a step summing over columns (the
    case models/batching.rounds_by_batch calls batch dependent for a tree final)?"""
    from fairspec.models.batching import rounds_by_batch
    from fairspec.models.pipeline_boosters import BOOSTER_CLASSIFIERS
    from fairspec.models.trees import SKLEARN_REGRESSORS, SKLEARN_TREES

    from fairspec.models.meta_estimators import row_fixed

    est = getattr(model, "raw", None)
    if getattr(model, "format", "") != "sklearn" or not hasattr(est, "steps"):
        return False
    final = est.steps[-1][1]
    # a meta-estimator of tree models (models/meta_estimators.row_fixed) reads the steps' output through its
    # members' trees as well: a row on one of their split edges jumps too (session 37: a soft vote of one
    # HistGradientBoosting behind a PCA was proved, its own predict of the edge pair alone differing)
    return (type(final).__name__ in SKLEARN_TREES + SKLEARN_REGRESSORS + BOOSTER_CLASSIFIERS or row_fixed(final)) \
        and rounds_by_batch(model)


def at_split_edges(model, X) -> np.ndarray | None:
    """Per encoded row of ``X``: does the final tree model's input (the pipeline's steps before it, on the frame
    the model builds) lie within :data:`INPUT_SPREAD` (plus one float32 ulp: scikit-learn's trees cast it to
    float32) of a split threshold on its column? None when ``model`` is no :func:`mixed_trees` pipeline; every
    row when the thresholds are not read here (an XGBoost / LightGBM final, a categorical split)."""
    if not mixed_trees(model):
        return None
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    est = model.raw
    splits = _splits(est.steps[-1][1])
    if splits is None:
        return np.ones(X.shape[0], dtype=bool)
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            Z = est[:-1].transform(model._as_frame(X))
    except Exception:  # noqa: BLE001 - the steps' own failure: nothing shows a row clear of the edges
        return np.ones(X.shape[0], dtype=bool)
    Z = np.asarray(Z.toarray() if hasattr(Z, "toarray") else Z, dtype=np.float64)
    top = float(np.nanmax(np.abs(Z))) if Z.size else 0.0
    delta = INPUT_SPREAD * (1.0 + (top if np.isfinite(top) else 0.0))
    out = ~np.all(np.isfinite(Z), axis=1)
    for f, t in splits:
        if f >= Z.shape[1]:
            return np.ones(X.shape[0], dtype=bool)
        z = Z[:, f]
        ulp = np.spacing(np.abs(z).astype(np.float32)).astype(np.float64)
        out |= np.any(np.abs(z[:, None] - t[None, :]) <= (delta + ulp)[:, None], axis=1)
    return out


def _splits(final):
    """The (column, thresholds) of every split of a scikit-learn tree model or a meta-estimator of them (the
    columns its members read, as a bag's ``estimators_features_`` maps them); None when not read here (an XGBoost /
    LightGBM member, a categorical split, a Stacking passing the raw columns to its final estimator)."""
    pairs = _split_pairs(final, 0)
    return None if pairs is None else _grouped(pairs)


def _split_pairs(est, depth: int):
    """(column, threshold) pairs of ``est``'s splits on the columns it is given, or None (see :func:`_splits`)."""
    from fairspec.models.meta_estimators import META, _members

    name = type(est).__name__
    if depth > 8 or est is None:
        return None
    if name == "_ConstantPredictor":
        return []
    if name == "FrozenEstimator":
        return _split_pairs(getattr(est, "estimator", None), depth + 1)
    if name in META:
        # a Stacking's final estimator reads its members' outputs (not the steps' columns: they move only where a
        # member jumps, which the members' own splits flag); with passthrough it reads the columns too: not read
        if name.startswith("Stacking") and getattr(est, "passthrough", False):
            return None
        final = getattr(est, "final_estimator_", None) if name.startswith("Stacking") else None
        members = [m for m in _members(est) if final is None or m is not final]
        if not members:
            return None
        maps = list(getattr(est, "estimators_features_", None) or ()) if name.startswith("Bagging") else []
        if maps and len(maps) != len(members):
            return None
        out = []
        for k, m in enumerate(members):
            got = _split_pairs(m, depth + 1)
            if got is None:
                return None
            cols = np.asarray(maps[k]) if maps else None
            out.extend((int(cols[f]) if cols is not None else f, t) for f, t in got)
        return out
    if name.startswith("HistGradientBoosting"):
        if getattr(est, "_preprocessor", None) is not None:
            return None     # its own encoder reorders the columns (categorical ones first): feature_idx is not ours
        out = []
        for per_iter in getattr(est, "_predictors", ()):
            for p in per_iter:
                nodes = p.nodes
                inner = nodes["is_leaf"] == 0
                if "is_categorical" in nodes.dtype.names and np.any(nodes["is_categorical"][inner]):
                    return None
                out.extend(zip(nodes["feature_idx"][inner].tolist(), nodes["num_threshold"][inner].tolist()))
        return out
    trees = [est] if hasattr(est, "tree_") else list(np.ravel(getattr(est, "estimators_", [])))
    if not trees or not all(hasattr(m, "tree_") for m in trees):
        return None
    out = []
    init = getattr(est, "init_", None)        # a GradientBoosting's init model reads the columns too
    if init is not None and not isinstance(init, str):
        from fairspec.models.meta_estimators import constant_init

        if not constant_init(est):
            got = _split_pairs(init, depth + 1)     # a tree or a forest: its splits; another model: not read
            if got is None:
                return None
            out.extend(got)
    for m in trees:
        inner = m.tree_.feature >= 0
        out.extend(zip(m.tree_.feature[inner].tolist(), m.tree_.threshold[inner].tolist()))
    return out


def _grouped(pairs):
    """The split pairs as (column, thresholds array) per column."""
    by = {}
    for f, t in pairs:
        by.setdefault(int(f), []).append(float(t))
    return [(f, np.unique(np.asarray(ts, dtype=np.float64))) for f, ts in by.items()]


def spread_over_edges(model, X, spread: float, top: float) -> float:
    """kinds/pair_enumeration's assumed ``spread`` of the rows ``X`` (``top``: their largest output magnitude),
    widened to cover every output (twice 1 + ``top``: every score then lies within it of any threshold, so no
    pair is decided on this batch alone) when a row's tree input lies on a split edge (:func:`at_split_edges`)."""
    edges = at_split_edges(model, X)
    if edges is None or not edges.any():
        return spread
    return max(spread, float(np.nextafter(2.0 * (1.0 + top), np.inf)))
