"""Malformed XGBoost and LightGBM files (issue 21, class 3): each one a mutation of a valid model."""

from __future__ import annotations

import json
import re
from pathlib import Path


def _xgb_tree0(doc):
    return doc["learner"]["gradient_booster"]["model"]["trees"][0]


def xgboost_mutations() -> dict:
    """name -> function(doc) changing a parsed XGBoost JSON document in place."""
    def setn(key, i, v):
        def f(doc):
            _xgb_tree0(doc)[key][i] = v
        return f

    def many(*fs):
        def f(doc):
            for g in fs:
                g(doc)
        return f

    return {
        "cycle": many(setn("left_children", 1, 0)),                 # node 1's child is the root
        "self_loop": setn("left_children", 1, 1),
        "child_out_of_range": setn("right_children", 0, 999),
        "negative_child": setn("right_children", 0, -5),
        "feature_beyond_width": setn("split_indices", 0, 40),
        "nan_leaf": setn("split_conditions", 3, float("nan")),
        "inf_leaf": setn("split_conditions", 4, float("inf")),
        "short_array": lambda doc: _xgb_tree0(doc)["left_children"].pop(),
        "nodes_overstated": lambda doc: _xgb_tree0(doc)["tree_param"].__setitem__("num_nodes", "100000000"),
        "nan_base_score": lambda doc: doc["learner"]["learner_model_param"].__setitem__("base_score", "[NaN]"),
        # found by a mutation fuzzer: the library follows parents and tests a leaf by == -1
        "negative_parent": setn("parents", 5, -2),
        "leaf_child_minus_two": setn("left_children", 4, -2),
        "default_left_not_boolean": setn("default_left", 2, 7),
        # session 27: the library refuses these only when it loads the file or is first fed (lint passed them)
        "version_text": lambda doc: doc.__setitem__("version", "3.2.0"),
        "version_two_numbers": lambda doc: doc.__setitem__("version", [1, 2]),
        "feature_names_short": lambda doc: doc["learner"].__setitem__("feature_names", ["a"]),
        "feature_names_numbers": lambda doc: doc["learner"].__setitem__("feature_names", [1, 2, 3]),
    }


def write_xgboost(valid_json: Path, out: Path, mutate) -> Path:
    doc = json.loads(valid_json.read_text())
    mutate(doc)
    out.write_text(json.dumps(doc).replace("NaN", "NaN").replace("Infinity", "Infinity"))
    return out


def lightgbm_mutations() -> dict:
    """name -> function(text) -> text of a LightGBM text model file."""
    def tree0(key, fn):
        def f(text):
            text = re.sub(r"^tree_sizes=.*\n", "", text, count=1, flags=re.M)  # else the sizes differ first
            head, rest = text.split("Tree=0\n", 1)
            rest = re.sub(rf"^{key}=(.*)$", lambda m: f"{key}={fn(m.group(1).split())}", rest, count=1, flags=re.M)
            return head + "Tree=0\n" + rest
        return f

    def first(v):
        return lambda parts: " ".join([str(v)] + parts[1:])

    return {
        "child_out_of_range": tree0("left_child", first(77)),
        "leaf_out_of_range": tree0("right_child", first(-99)),
        "cycle": tree0("left_child", lambda parts: " ".join(parts[:1] + parts[:1] + parts[2:])),
        "num_leaves_huge": tree0("num_leaves", lambda parts: "100000000"),
        "feature_beyond_width": tree0("split_feature", first(40)),
        "nan_leaf": tree0("leaf_value", first("nan")),
        "inf_leaf": tree0("leaf_value", first("inf")),
        "truncated": lambda text: text[: len(text) // 3],
        "tree_sizes_past_the_end": lambda text: re.sub(r"^tree_sizes=(\d+)", lambda m: "tree_sizes=999999",
                                                        text, count=1, flags=re.M),
        "short_array": tree0("threshold", lambda parts: " ".join(parts[:-1])),
        # found by a mutation fuzzer: num_cat > 0 makes the library read category lists that are not there
        "num_cat_without_lists": tree0("num_cat", lambda parts: "7"),
    }
