"""The tree-library family of the cheap model-file look-ups (fairspec.models.peek): XGBoost (JSON or
UBJSON) and LightGBM (text) model files, read without importing either library."""

from __future__ import annotations

import json
import pathlib

from .base import recorded_names, require_file


def xgboost_input_width(p: pathlib.Path) -> int | None:
    """num_feature of an XGBoost model file (JSON or UBJSON), after checking every tree
    (fairspec.models.treefile: a file the library would crash on is a ModelLoadError here)."""
    from .treefile import check_xgboost

    require_file(p)
    return check_xgboost(p)


def lightgbm_input_width(p: pathlib.Path) -> int | None:
    """max_feature_idx + 1 of a LightGBM text model file, after checking every tree (fairspec.models.treefile)."""
    from .treefile import check_lightgbm

    require_file(p)
    return check_lightgbm(p)


def xgboost_input_names(p: pathlib.Path) -> tuple[str, ...] | None:
    """``learner.feature_names`` of an XGBoost model file, JSON or UBJSON (a model fit on a DataFrame
    keeps its column names there, and the library reads them from either format: so does the loader,
    which evaluates the model under them, fairspec.models.trees.xgb_matrix); None when the file records
    none. The document is the one the width check parsed (treefile.read_xgboost: once a lint run)."""
    try:
        from .treefile import read_xgboost

        return recorded_names(read_xgboost(p)["learner"].get("feature_names"))
    except Exception:  # noqa: BLE001 - the loader gives the sentence at check time
        return None


def lightgbm_input_names(p: pathlib.Path) -> tuple[str, ...] | None:
    """The ``feature_names=`` line of a LightGBM text model file (``Column_0`` ... when the model
    was fit on an array)."""
    try:
        for line in _lightgbm_head(p):
            if line.startswith(b"feature_names="):
                return recorded_names(line.split(b"=", 1)[1].decode("utf-8", "replace").split())
    except OSError:
        return None
    return None


def _lightgbm_head(p: pathlib.Path) -> list[bytes]:
    """The first 64 lines of a LightGBM text model file (its header: objective, feature names...)."""
    lines = []
    with open(p, "rb") as fh:
        for _ in range(64):
            line = fh.readline()
            if not line:
                break
            lines.append(line)
    return lines


def xgboost_objective(p: pathlib.Path) -> str | None:
    """The objective an XGBoost model file (JSON or UBJSON) records, or None when it says none."""
    try:
        from .treefile import read_xgboost

        return str(read_xgboost(p)["learner"]["objective"]["name"]) or None
    except Exception:  # noqa: BLE001 - the loader gives the sentence at check time
        return None


def booster_objective(fmt: str, p: pathlib.Path) -> str | None:
    """The objective an XGBoost or LightGBM model file records (read without the library), or None."""
    try:
        if fmt == "xgboost":
            return xgboost_objective(p)
        for line in _lightgbm_head(p):
            if line.startswith(b"objective="):
                return line.split(b"=", 1)[1].decode("utf-8", "replace").strip() or None
    except Exception:  # noqa: BLE001 - the loader gives the sentence at check time
        return None
    return None


def booster_output_kind(fmt: str, p: pathlib.Path) -> tuple[str | None, int | None]:
    """(task, K) of an XGBoost or LightGBM model file from its objective (issue 25: binary,
    multiclass with K classes, regression; fairspec.models.boosted.task_of decides the same at load
    time), read without the library; (None, None) when the file does not say or fairspec does not
    read its objective (the loader gives the sentence)."""
    from .boosted import task_of

    obj, ncls = "", 0
    try:
        if fmt == "xgboost":
            from .treefile import read_xgboost

            learner = read_xgboost(p).get("learner", {})
            obj = str(learner.get("objective", {}).get("name", ""))
            ncls = int(learner.get("learner_model_param", {}).get("num_class", 0) or 0)
            what = "XGBoost"
        else:
            for line in _lightgbm_head(p):
                if line.startswith(b"objective="):
                    obj = line.split(b"=", 1)[1].decode("utf-8", "replace").strip()
                elif line.startswith(b"num_class="):
                    ncls = int(line.split(b"=", 1)[1])
            what = "LightGBM"
        task, k = task_of(what, obj, ncls, p)
    except Exception:  # noqa: BLE001 - the loader gives the sentence at check time
        return None, None
    return task, k


def _category_text(v) -> str:
    """A recorded category as the spec writes it: a whole float as its integer, booleans true/false."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def xgboost_input_categories(p: pathlib.Path) -> dict[int, tuple[str, ...]] | None:
    """{input index: its categories in the model's code order} of an XGBoost model fit on a data frame
    with categorical columns: XGBoost 3.1 and later record the categories each one was fit on
    (``learner.gradient_booster.model.cats``; code i is the i-th of them, whatever their names), and
    re-code a data frame by name before predicting. None when the file records none."""
    try:
        from .treefile import read_xgboost

        cats = read_xgboost(p)["learner"]["gradient_booster"]["model"].get("cats")
        if not isinstance(cats, dict) or not isinstance(cats.get("enc"), list):
            return None
        out: dict[int, tuple[str, ...]] = {}
        for i, enc in enumerate(cats["enc"]):
            values = list(enc.get("values") or ())
            if not values:
                continue
            offsets = list(enc.get("offsets") or ())
            if offsets:          # strings: UTF-8 bytes (signed), category k is values[offsets[k]:offsets[k + 1]]
                raw = bytes(int(b) & 0xFF for b in values)
                out[i] = tuple(raw[a:b].decode("utf-8", "replace") for a, b in zip(offsets, offsets[1:]))
            else:                # numbers
                out[i] = tuple(_category_text(v) for v in values)
        return out or None
    except Exception:  # noqa: BLE001 - the loader gives the sentence at check time
        return None


def lightgbm_input_categories(p: pathlib.Path) -> dict[int, tuple[str, ...]] | None:
    """{input index: its categories in the model's code order} of a LightGBM model fit on a data frame
    with categorical columns: the file's last line ``pandas_categorical:[[...], ...]`` lists each
    categorical column's categories (code i is the i-th), in the order of those columns, which
    ``feature_infos`` marks (a category list, not a ``[min:max]`` range); LightGBM re-codes a data
    frame by them before predicting. None when the file records none."""
    try:
        infos, recorded = None, None
        with open(p, "rb") as fh:
            for line in fh:
                if line.startswith(b"feature_infos=") and infos is None:
                    infos = line.split(b"=", 1)[1].decode("utf-8", "replace").split()
                elif line.startswith(b"pandas_categorical:"):
                    recorded = json.loads(line.split(b":", 1)[1].decode("utf-8"))
        if not infos or not isinstance(recorded, list) or not recorded:
            return None
        columns = [i for i, info in enumerate(infos) if not info.startswith("[") and info != "none"]
        if len(columns) != len(recorded):
            return None
        return {i: tuple(_category_text(v) for v in cats) for i, cats in zip(columns, recorded)}
    except Exception:  # noqa: BLE001 - the loader gives the sentence at check time
        return None


def categorical_split(fmt: str, p: pathlib.Path, allowed=()) -> str | None:
    """The sentence check gives for the first tree (in the library's order) of an XGBoost or LightGBM
    model file that the tree converters cannot rewrite (fairspec.models.trees), or None: one with a
    split by category (XGBoost ``split_type`` 1, LightGBM's categorical ``decision_type`` bit) on an
    input not in ``allowed`` ({input: its declared whole-number values},
    fairspec.models.base.category_domains; the first such split in node order), or one whose splits
    by category, rewritten over ``allowed``, would pass tree_categories.MAX_NODES (counted, not
    built: tree_categories.tree_size). None also when the file does not tell. Cheap: no ML library,
    no numpy."""
    from .base import categorical_split_sentence
    from .tree_categories import MAX_NODES, too_large, tree_size, xgboost_node_reader

    def refused(t, j, names):
        return categorical_split_sentence(p.name, t, j, names[j] if names and j < len(names) else None)

    try:
        if fmt == "xgboost":
            from .treefile import read_xgboost

            doc = read_xgboost(p)
            names = recorded_names(doc["learner"].get("feature_names"))
            for t, tj in enumerate(doc["learner"]["gradient_booster"]["model"]["trees"]):
                types = tj.get("split_type") or ()
                for k, s in enumerate(types):
                    j = int(tj["split_indices"][k])
                    if int(s) != 0 and j not in allowed:
                        return refused(t, j, names)
                if any(int(s) != 0 for s in types) and \
                        tree_size(0, xgboost_node_reader(tj, tj["split_conditions"]), allowed) > MAX_NODES:
                    return too_large(t)
            return None
        if fmt == "lightgbm":
            names = lightgbm_input_names(p)
            if names and all(n.startswith("Column_") for n in names):      # fit on an array: no names
                names = None
            tree, rows = None, {}

            def done():
                if tree is None or "decision_type" not in rows:
                    return None
                feats, kinds = [int(v) for v in rows["split_feature"]], [int(d) for d in rows["decision_type"]]
                for k, d in enumerate(kinds):
                    if d & 1 and k < len(feats) and feats[k] not in allowed:
                        return refused(tree, feats[k], names)
                if any(d & 1 for d in kinds) and tree_size(0, _lightgbm_node_reader(rows), allowed) > MAX_NODES:
                    return too_large(tree)
                return None

            with open(p, "rb") as fh:
                for line in fh:
                    if line.startswith(b"Tree=") or line.startswith(b"end of trees"):
                        said = done()
                        if said is not None:
                            return said
                        tree, rows = (int(line.split(b"=", 1)[1]), {}) if line.startswith(b"Tree=") else (None, {})
                    elif tree is not None and b"=" in line:
                        key, _, value = line.partition(b"=")
                        rows[key.decode()] = value.split()
            return done()
        return None
    except Exception:  # noqa: BLE001 - the loader gives the sentence at check time
        return None


def _lightgbm_node_reader(rows):
    """``node`` for tree_categories.tree_size over one tree of a LightGBM text file (its ``key=values``
    lines): internal nodes 0, 1, ..., a leaf ~i; a split by category's set, the bits of its
    ``cat_threshold`` words, goes left."""
    feats, kinds, thr = rows["split_feature"], rows["decision_type"], rows["threshold"]
    left, right = rows["left_child"], rows["right_child"]
    bounds, words = [int(v) for v in rows.get("cat_boundaries", ())], [int(v) for v in rows.get("cat_threshold", ())]

    def node(k):
        if k < 0:
            return ("leaf", 0.0)
        a, b = int(left[k]), int(right[k])
        if int(kinds[k]) & 1:
            c = int(float(thr[k]))
            members = frozenset(32 * w + bit for w, word in enumerate(words[bounds[c]:bounds[c + 1]])
                                for bit in range(32) if word >> bit & 1)
            return ("cat", int(feats[k]), members, a, b)
        return ("num", int(feats[k]), 0.0, a, b)

    return node
