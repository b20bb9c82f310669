"""Reading a scikit-learn estimator from its file (fairspec.models.sklearn_model loads through these): a .skops
file's types checked before anything is built (scikit-learn's, numpy's and a few more trusted; import_skops_io
with torch / cupy array adapters kept out), a pickle only when the spec trusts it; then the fitted check and a
tree model's structure check, with the leaf boxes of a fitted tree (leaf_boxes)."""

from __future__ import annotations

import importlib
import pathlib
import sys
import zipfile

from .base import ModelLoadError, short_error

SKOPS_SUFFIXES = (".skops",)
PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib")
TRUSTED_PREFIXES = ("sklearn.", "numpy.", "builtins", "collections")


# functools.partial: scikit-learn stores one itself (HistGradientBoosting* with categorical_features keeps a
# FunctionTransformer(func=partial(check_array, ...)) in its fitted _preprocessor). Loading it calls nothing,
# and skops lists the function and arguments it wraps as types of their own, each judged here.
TRUSTED_NAMES = ("functools.partial",)


def _is_trusted(type_name: str) -> bool:
    return type_name.startswith(TRUSTED_PREFIXES) or type_name in TRUSTED_NAMES


# scikit-learn's vendored array-API adapters for other array libraries. Importing skops.io runs
# sklearn.utils.all_estimators(), whose pkgutil.walk_packages imports every sklearn *package* to
# look inside it -- among them these adapters, and the torch one imports torch (1-2 s here).
# all_estimators() ignores everything under sklearn.externals, so the list of estimators skops
# trusts does not depend on them (tests/test_models_loaders.py compares it with a plain import).
_VENDORED_ARRAY_ADAPTERS = ("sklearn.externals.array_api_compat.torch", "sklearn.externals.array_api_compat.cupy",
                            "sklearn.externals.array_api_compat.dask")


class _SkipVendoredArrayAdapters:
    """A meta-path finder that makes importing the adapters above fail with ImportError, which
    pkgutil.walk_packages ignores by contract (its onerror is None)."""

    def find_spec(self, name, path=None, target=None):  # noqa: ANN001
        if name.startswith(_VENDORED_ARRAY_ADAPTERS):
            raise ImportError(f"{name} is not needed to load a skops file")
        return None


def import_skops_io():
    """``import skops.io``, without importing torch through scikit-learn's estimator discovery.

    Only while skops.io itself is imported, and only when torch is not imported already;
    the adapters stay importable afterwards (a failed import leaves nothing in sys.modules)."""
    if "skops.io" in sys.modules or "torch" in sys.modules:
        return importlib.import_module("skops.io")
    finder = _SkipVendoredArrayAdapters()
    sys.meta_path.insert(0, finder)
    try:
        return importlib.import_module("skops.io")
    finally:
        sys.meta_path.remove(finder)


def _refused_hint(refused: list[str]) -> str:
    """What to do about types skops will not load: a function the training script defined (a lambda
    column selector, a FunctionTransformer's func) has no trusted name, so the hint names the
    scikit-learn ways to say the same; other types come from another library the model was built with."""
    if any(t.startswith("__main__.") or "<lambda>" in t for t in refused):
        return ("a function defined in the training script or notebook (a lambda or def, as a ColumnTransformer "
                "column selector or a FunctionTransformer's func) cannot be loaded safely: give the columns as a "
                "list of names or positions, or sklearn.compose.make_column_selector, and use scikit-learn's own "
                "transformers")
    return ("skops loads only scikit-learn, numpy and builtin types without running code; rebuild the model from "
            "scikit-learn parts, or save it as a pickle and add 'trust pickle' to its declaration if you trust its source")


def _load_skops(path: pathlib.Path):
    if not zipfile.is_zipfile(path):
        raise ModelLoadError(f"{path} is not a skops file (a skops file is a zip archive and this is not one)", path)
    try:
        with zipfile.ZipFile(path) as zf:
            has_schema = "schema.json" in zf.namelist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise ModelLoadError(f"{path} is not a skops file (the zip archive is damaged)", path) from exc
    if not has_schema:
        raise ModelLoadError(f"{path} is not a skops file (the zip archive has no schema.json)", path)
    try:
        sio = import_skops_io()
    except ImportError as exc:
        raise ModelLoadError(
            f"loading {path} needs skops, which is not installed (pip install 'specfair[sklearn]')", path
        ) from exc
    try:
        untrusted = sio.get_untrusted_types(file=str(path))
    except Exception as exc:  # noqa: BLE001
        raise ModelLoadError(f"{path} is not a readable skops file: {short_error(exc)}", path) from exc
    refused = sorted(t for t in untrusted if not _is_trusted(t))
    if refused:
        shown = ", ".join(refused[:5]) + (f" and {len(refused) - 5} more" if len(refused) > 5 else "")
        raise ModelLoadError(
            f"skops refused to load {path} because it contains types outside scikit-learn, numpy and the "
            f"Python builtins: {shown}",
            path, hint=_refused_hint(refused),
        )
    try:
        return sio.load(str(path), trusted=list(untrusted))
    except Exception as exc:  # noqa: BLE001
        raise ModelLoadError(f"skops could not load {path}: {short_error(exc)}", path) from exc


def _load_pickle(path: pathlib.Path):
    from .inert_pickle import not_a_pickle

    if (why := not_a_pickle(path)) is not None:  # empty, text, a CSV: said from its first bytes, as lint says
        raise ModelLoadError(why, path)
    try:
        import joblib
    except ImportError:  # pragma: no cover - joblib ships with scikit-learn
        joblib = None
    try:
        if joblib is not None:
            return joblib.load(str(path))
        import pickle

        with open(path, "rb") as fh:
            return pickle.load(fh)
    except ModuleNotFoundError as exc:
        raise ModelLoadError(
            f"unpickling {path} needs the module {exc.name!r}, which is not installed", path
        ) from exc
    except Exception as exc:  # noqa: BLE001
        said = short_error(exc)
        said = type(exc).__name__ if said == type(exc).__name__ else f"{type(exc).__name__}: {said}"
        raise ModelLoadError(
            f"{path} could not be unpickled, so it is probably not a pickle of a scikit-learn model ({said})",
            path,
        ) from exc


def _trees(est, depth: int = 0):
    """The fitted tree structures inside an estimator (a tree, a forest, boosting stages)."""
    if depth > 4:
        return
    tree = getattr(est, "tree_", None)
    if tree is not None and hasattr(tree, "children_left"):
        yield est, tree
    subs = getattr(est, "estimators_", None)
    if subs is not None:
        try:
            import numpy as np

            flat = list(np.ravel(np.asarray(subs, dtype=object)))
        except Exception:  # noqa: BLE001 - not a container of estimators
            flat = []
        for sub in flat:
            yield from _trees(sub, depth + 1)


def leaf_boxes(tree) -> dict[int, dict[int, tuple[float, float]]]:
    """Each leaf's path hypercube: leaf node -> {input column: (lo, hi)} meaning lo < x[col] <= hi
    (scikit-learn sends x[col] <= threshold left).  Columns the path does not test are absent."""
    left, right = tree.children_left, tree.children_right
    feat, thr = tree.feature, tree.threshold
    out: dict[int, dict[int, tuple[float, float]]] = {}
    stack = [(0, {})]
    while stack:
        node, box = stack.pop()
        if left[node] == -1:
            out[node] = box
            continue
        f, t = int(feat[node]), float(thr[node])
        lo, hi = box.get(f, (float("-inf"), float("inf")))
        stack.append((int(left[node]), {**box, f: (lo, min(hi, t))}))
        stack.append((int(right[node]), {**box, f: (max(lo, t), hi)}))
    return out


fitted_trees = _trees


def check_fitted(est, path) -> None:
    """An estimator or pipeline that was never fitted (scikit-learn's ``check_is_fitted``; a pipeline
    is fitted when its last step is): one sentence, before anything reads its fitted attributes."""
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    try:
        check_is_fitted(est)
    except NotFittedError:
        from .peek_sklearn import not_fitted

        raise ModelLoadError(not_fitted(path, type(est).__name__), path) from None
    except Exception:  # noqa: BLE001 - not an estimator scikit-learn can tell (no fit method): read it as it is
        return


def check_tree_structure(est, path) -> None:
    """Refuse a tree whose node arrays point outside themselves: scikit-learn walks them without
    bounds checks, so such a file (damaged, or crafted) would crash the process at prediction time."""
    import numpy as np

    for owner, t in _trees(est):
        n = int(t.node_count)
        left, right, feat = (np.asarray(a) for a in (t.children_left, t.children_right, t.feature))
        width = getattr(owner, "n_features_in_", None) or getattr(est, "n_features_in_", None)
        leaf = left == -1
        idx = np.arange(len(left))
        bad = (len(left) != n or len(right) != n or len(feat) != n
               or np.any(leaf != (right == -1))
               or np.any((left[~leaf] <= 0) | (left[~leaf] >= n) | (right[~leaf] <= 0) | (right[~leaf] >= n))
               # scikit-learn numbers a node's children after it: a child at or before its parent is a
               # self-loop or a cycle, which would make prediction loop forever
               or np.any((left[~leaf] <= idx[~leaf]) | (right[~leaf] <= idx[~leaf]))
               or np.any(feat[~leaf] < 0)
               or (width is not None and np.any(feat[~leaf] >= int(width))))
        if bad:
            raise ModelLoadError(
                f"{path} holds a decision tree whose nodes point outside the tree (a damaged or tampered file); "
                f"scikit-learn would crash on it, so it is not loaded", path)
        value, thr = np.asarray(t.value, dtype=np.float64), np.asarray(t.threshold, dtype=np.float64)
        if not np.all(np.isfinite(value)) or np.any(np.isnan(thr[~leaf])):
            raise ModelLoadError(
                f"{path} holds a decision tree with leaf values or thresholds that are not finite numbers (NaN or "
                f"inf); a model like that cannot be checked", path)
