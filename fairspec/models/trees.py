"""Tree ensembles: the form every exact tree encoding (MILP, SMT, brute force) works on.

A :class:`TreeEnsemble` is a tuple of binary decision trees over the model's input vector,
each node reading one input: ``x[feature] <= threshold`` goes left (``<`` for XGBoost's
trees, ``strict``), and each leaf holding a number. The ensemble's **aggregate** is

    S(x) = base + (sum over trees of the value of the leaf x reaches) / divisor

and its ``link`` says what S is:

* ``"identity"``: S is the probability of the chosen class (a decision tree's or a random
  forest's ``predict_proba`` column: each leaf value is that tree's class share and
  ``divisor`` the number of trees, summed then divided in that order as scikit-learn does, so
  that ties such as 15 of 30 votes are exactly 1/2); the decision is ``S > 1/2``.
* ``"logistic"``: S is a logit (gradient boosting's raw margin: scikit-learn's
  ``decision_function``, XGBoost's ``output_margin``, LightGBM's ``raw_score``); the
  probability is ``sigmoid(S)`` and the decision ``S > 0``.

The decision threshold on S is :attr:`TreeEnsemble.threshold`, the one place every tree encoding
(MILP, SMT, local search, compiled decision) and :meth:`TreeEnsemble.decide` read it: 1/2 or 0 by
the link, or ``cut`` when the library's class compares S with another number (an XGBoost
``binary:logitraw`` model read by its predict, which is the margin: class 1 iff it is > 0.5,
XGBClassifier.predict; the ensemble of class 0, whose S is the negated margin, at -0.5).
:meth:`TreeEnsemble.decide` (no backend calls it: a label is the loaded model's ``decide``) puts an
exact tie S == threshold where the library's predict does (:attr:`TreeEnsemble.tie`).

:meth:`TreeEnsemble.forward` returns the **logit** (``S`` itself, or ``logit(S)`` for the
identity link; ``S - cut`` with a cut, so that class 1 is still ``z > 0``), so the pair problem of
:mod:`fairspec.backends.pair` (decision ``z > 0``, ``prob`` through ``sigmoid``) reads a tree
ensemble exactly as it reads a ReLU network.

Converters (each checks itself against the library's own prediction on random inputs and
raises :class:`~fairspec.models.network.UnsupportedModel` on any difference):
:func:`from_sklearn` (DecisionTree, RandomForest, ExtraTrees, GradientBoosting and
HistGradientBoosting classifiers), :func:`from_xgboost` (a ``Booster``),
:func:`from_lightgbm` (a ``Booster``). Only numpy is imported at module level.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from fairspec.models.base import unnamed_inputs
from fairspec.models.network import UnsupportedModel, sigmoid
from fairspec.models.sklearn_hidden import check_constant_init, check_inputs_in_order, check_lightgbm_sum

__all__ = ["Tree", "TreeEnsemble", "from_sklearn", "from_xgboost", "from_lightgbm", "is_tree_model",
           "random_ensemble", "LINKS"]

LINKS = ("identity", "logistic")
_P_CLIP = 1e-15


@dataclass(frozen=True, eq=False)
class Tree:
    """One binary tree in flat arrays (node 0 is the root; a leaf has ``left == right == -1``).

    ``value`` holds each leaf's contribution to the aggregate (0 at internal nodes). With
    ``strict`` a node sends ``x < threshold`` left (XGBoost), otherwise ``x <= threshold``.
    ``f32``: the library casts the input to float32 before comparing (scikit-learn's trees,
    forests and GradientBoosting; XGBoost, whose thresholds are float32 numbers already).
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    strict: bool = False
    f32: bool = False

    def __post_init__(self):
        n = len(self.feature)
        arrs = {"feature": np.asarray(self.feature, dtype=np.int64), "left": np.asarray(self.left, dtype=np.int64),
                "right": np.asarray(self.right, dtype=np.int64),
                "threshold": np.asarray(self.threshold, dtype=np.float64),
                "value": np.asarray(self.value, dtype=np.float64)}
        for k, a in arrs.items():
            if a.shape != (n,):
                raise ValueError(f"tree array {k} has shape {a.shape}, expected ({n},)")
            a.setflags(write=False)
            object.__setattr__(self, k, a)
        leaf = self.left < 0
        if n == 0 or np.any(leaf != (self.right < 0)):
            raise ValueError("a tree needs nodes, and each node two children or none")
        inner = ~leaf
        if np.any((self.left[inner] >= n) | (self.right[inner] >= n) | (self.left[inner] <= 0)
                  | (self.right[inner] <= 0) | (self.feature[inner] < 0)):
            raise ValueError("a tree node points outside the tree")

    @property
    def n_nodes(self) -> int:
        return len(self.feature)

    @property
    def is_leaf(self) -> np.ndarray:
        return self.left < 0

    def go_left(self, node: int, v: np.ndarray) -> np.ndarray:
        """Does input value(s) ``v`` (model-input units) go left at ``node``?"""
        t = self.threshold[node]
        v = np.asarray(v, dtype=np.float64)
        if self.f32:
            v = v.astype(np.float32).astype(np.float64)
        return v < t if self.strict else v <= t

    def apply(self, X: np.ndarray) -> np.ndarray:
        """The leaf each row of X reaches (int64 (n,))."""
        X = np.asarray(X, dtype=np.float64)
        node = np.zeros(X.shape[0], dtype=np.int64)
        for _ in range(self.n_nodes):
            inner = self.left[node] >= 0
            if not inner.any():
                break
            idx = np.nonzero(inner)[0]
            nd = node[idx]
            f = self.feature[nd]
            v = X[idx, f]
            t = self.threshold[nd]
            if self.f32:
                v = v.astype(np.float32).astype(np.float64)
            left = v < t if self.strict else v <= t
            node[idx] = np.where(left, self.left[nd], self.right[nd])
        return node

    def features(self) -> set[int]:
        return {int(f) for f, l in zip(self.feature, self.left) if l >= 0}

    def depth(self) -> int:
        d = np.zeros(self.n_nodes, dtype=np.int64)
        best = 0
        for k in range(self.n_nodes):          # parents precede children in every converter
            if self.left[k] >= 0:
                d[self.left[k]] = d[self.right[k]] = d[k] + 1
            else:
                best = max(best, int(d[k]))
        return best


@dataclass(frozen=True, eq=False)
class TreeEnsemble:
    """Trees over ``n_inputs`` model inputs, aggregated as described in the module docstring."""

    trees: tuple[Tree, ...]
    n_inputs: int
    base: float = 0.0
    link: str = "identity"
    source: str = ""
    divisor: float = 1.0
    final: str = "sigmoid"      # the pair problem's reading: forward() is a logit
    # S is the library's raw margin times this (LightGBM's sigmoid factor, whose probability is
    # sigmoid(factor * raw_score)): a bound on S - S' bounds the margin's difference divided by it
    margin_scale: float = 1.0
    # the decision threshold on S when it is not the link's (see the module docstring), else None
    cut: float | None = None
    # the decision where S equals the threshold exactly: the library's tie rule read for the ensemble's
    # class (1 where the library's class at a tie is the class S scores: class 0's S of a forest, of
    # XGBoost / LightGBM / HistGradientBoosting, which call a tie class 0; class 1's of GradientBoosting,
    # whose predict is decision_function >= 0), set by the converters; 0: the strict side
    tie: int = 0

    def __post_init__(self):
        if self.link not in LINKS:
            raise ValueError(f"link must be one of {LINKS}")
        object.__setattr__(self, "trees", tuple(self.trees))
        for t in self.trees:
            if len(t.feature) and np.any(t.feature[t.left >= 0] >= self.n_inputs):
                raise ValueError(f"a tree reads an input beyond the {self.n_inputs} inputs")

    # ---- evaluation ----------------------------------------------------------------------
    def leaves(self, X) -> np.ndarray:
        """(n, n_trees) leaf index per row and tree."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        if not self.trees:
            return np.zeros((X.shape[0], 0), dtype=np.int64)
        return np.stack([t.apply(X) for t in self.trees], axis=1)

    def aggregate(self, X) -> np.ndarray:
        """S(x) (see the module docstring), float64 (n,)."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        acc = np.zeros(X.shape[0])
        for t in self.trees:
            acc = acc + t.value[t.apply(X)]
        return self.base + acc / self.divisor

    def combine(self, values) -> float:
        """S from the leaf values of the trees (in tree order), summed as :meth:`aggregate` does."""
        acc = 0.0
        for v in values:
            acc += float(v)
        return float(self.base + acc / self.divisor)

    def forward(self, X, dtype=np.float64) -> np.ndarray:
        """The logit: S (logistic link; S - cut with a cut) or logit(S) clipped to [1e-15, 1 - 1e-15]
        (identity): class 1 iff it is > 0."""
        s = self.aggregate(X)
        if self.link == "logistic":
            return s if self.cut is None else s - self.cut
        return agg_to_logit(s, "identity")

    def prob(self, X) -> np.ndarray:
        s = self.aggregate(X)
        return s if self.link == "identity" else sigmoid(s)

    def decide(self, X) -> np.ndarray:
        """Class 1 iff S > :attr:`threshold`, or S equals it and :attr:`tie` is 1 (the library's own
        predict at an exact tie: ``index = 0`` takes the tie where the library calls it class 0)."""
        s = self.aggregate(X)
        t = self.threshold
        return ((s > t) | ((s == t) & bool(self.tie))).astype(np.int64)

    # ---- structure -----------------------------------------------------------------------
    @property
    def threshold(self) -> float:
        """The decision threshold on S: ``cut`` when set, else 1/2 (identity link) or 0 (logistic)."""
        if self.cut is not None:
            return float(self.cut)
        return 0.5 if self.link == "identity" else 0.0

    def features(self) -> set[int]:
        out: set[int] = set()
        for t in self.trees:
            out |= t.features()
        return out

    def n_leaves(self) -> int:
        return int(sum(int(t.is_leaf.sum()) for t in self.trees))

    def max_depth(self) -> int:
        return max((t.depth() for t in self.trees), default=0)

    def describe(self) -> str:
        return (f"{len(self.trees)} tree(s), depth <= {self.max_depth()}, {self.n_leaves()} leaves, "
                f"{self.link} link, {self.n_inputs} inputs")

    def single_output(self) -> "TreeEnsemble":
        return self


def agg_to_logit(s, link: str) -> np.ndarray:
    s = np.asarray(s, dtype=np.float64)
    if link == "logistic":
        return s
    p = np.clip(s, _P_CLIP, 1.0 - _P_CLIP)
    out = np.log(p) - np.log1p(-p)
    return np.where(s == 0.5, 0.0, out)


def is_tree_model(obj) -> bool:
    return isinstance(obj, TreeEnsemble)


# ---------------------------------------------------------------------------------------------
# self-check against the library
# ---------------------------------------------------------------------------------------------

def _probe_points(ens: TreeEnsemble, k: int = 64, seed: int = 0, domains=None) -> np.ndarray:
    """Random inputs that straddle every threshold the trees use (plus integer points); an input
    split by category (``domains``, fairspec.models.tree_categories) takes its declared values only."""
    rng = np.random.default_rng(seed)
    n = ens.n_inputs
    cuts: list[list[float]] = [[] for _ in range(n)]
    for t in ens.trees:
        for f, th, l in zip(t.feature, t.threshold, t.left):
            if l >= 0:
                cuts[int(f)].append(float(th))
    X = np.zeros((k, n))
    for i in range(n):
        c = np.array(cuts[i]) if cuts[i] else np.array([0.0, 1.0])
        lo, hi = c.min() - 1.0, c.max() + 1.0
        X[:, i] = rng.uniform(lo, hi, size=k)
        X[: k // 2, i] = np.round(X[: k // 2, i])
    for i, vals in (domains or {}).items():
        X[:, i] = rng.choice(vals, size=k)
        X[: min(k, len(vals)), i] = vals[:k]             # each declared value at least once (up to k)
    return X


def _self_check(ens: TreeEnsemble, reference, what: str, tol: float = 1e-5, domains=None) -> TreeEnsemble:
    X = _probe_points(ens, domains=domains)
    got = ens.aggregate(X)
    with unnamed_inputs():                      # a model fitted on a data frame, read on the array
        want = np.asarray(reference(X), dtype=np.float64).reshape(-1)
    if want.shape != got.shape or not np.allclose(got, want, rtol=1e-5, atol=tol):
        k = int(np.argmax(np.abs(got - want))) if want.shape == got.shape else 0
        raise UnsupportedModel(what, "trees", "the tree structure read from the model does not reproduce its "
                               f"predictions (e.g. {got[k]:.6g} vs {want[k]:.6g}), so it is not encoded")
    return ens


def _with_base(ens: TreeEnsemble, reference, domains=None) -> TreeEnsemble:
    """Set ``base`` to the library's margin minus the summed leaves (read at one point)."""
    X = _probe_points(ens, k=8, seed=1, domains=domains)
    with unnamed_inputs():
        diff = np.asarray(reference(X), dtype=np.float64).reshape(-1) - (ens.aggregate(X) - ens.base)
    return replace(ens, base=float(np.median(diff)))


# ---------------------------------------------------------------------------------------------
# scikit-learn
# ---------------------------------------------------------------------------------------------

def _sk_tree(t, values: np.ndarray) -> Tree:
    left = np.asarray(t.children_left)
    right = np.asarray(t.children_right)
    leaf = left < 0
    return Tree(np.where(leaf, -1, np.asarray(t.feature)), np.where(leaf, 0.0, np.asarray(t.threshold)),
                np.where(leaf, -1, left), np.where(leaf, -1, right), np.where(leaf, values, 0.0), f32=True)


def _class_share(t, col: int) -> np.ndarray:
    v = np.asarray(t.value, dtype=np.float64)[:, 0, :]
    tot = v.sum(axis=1)
    return np.where(tot > 0, v[:, col] / np.where(tot > 0, tot, 1.0), 0.0)


SKLEARN_TREES = ("DecisionTreeClassifier", "RandomForestClassifier", "ExtraTreesClassifier",
                 "GradientBoostingClassifier", "HistGradientBoostingClassifier")


def from_sklearn(est, method: str = "predict_proba", index: int | None = None) -> TreeEnsemble:
    """A fitted scikit-learn tree classifier as a :class:`TreeEnsemble` of its chosen output
    (``predict_proba[:, index]`` or ``decision_function``)."""
    name = type(est).__name__
    width = int(getattr(est, "n_features_in_", 0) or 0)
    classes = list(getattr(est, "classes_", []))
    if name in ("DecisionTreeClassifier", "RandomForestClassifier", "ExtraTreesClassifier"):
        if method != "predict_proba":
            raise UnsupportedModel(name, "decision_function", "a tree or forest has only predict_proba")
        col = 1 if index is None else int(index)
        if getattr(est, "n_outputs_", 1) != 1:
            raise UnsupportedModel(name, "n_outputs_", "multi-output trees are not supported")
        members = [est] if name == "DecisionTreeClassifier" else list(est.estimators_)
        k = len(members)
        trees = []
        for m in members:
            # a forest member may have seen fewer classes than the forest: map by class. A forest fits
            # its members on the class *indices* (0.0, 1.0, ...), whatever the labels' type (strings,
            # integers 1/2): a member's classes_ are indices into the forest's classes_.
            mcls = list(getattr(m, "classes_", classes))
            key = (classes[col] if m is est else float(col)) if classes and col < len(classes) else None
            if key is not None and key in mcls:
                share = _class_share(m.tree_, mcls.index(key))
            else:
                share = np.zeros(m.tree_.node_count)
            trees.append(_sk_tree(m.tree_, share))
        # predict is the first column of the largest probability: a tie is column 0's
        ens = TreeEnsemble(tuple(trees), width, 0.0, "identity", name, divisor=float(k), tie=int(col == 0))
        return _self_check(ens, lambda X: est.predict_proba(X)[:, col], name)
    if name == "GradientBoostingClassifier":
        check_constant_init(est)
        if len(classes) != 2:
            raise UnsupportedModel(name, "classes_", "only binary gradient boosting has a single logit")
        f = sklearn_link_factor(est)
        if f is None:
            raise UnsupportedModel(name, "loss", "its predict_proba is not expit(decision_function) or "
                                                 "expit(2 * decision_function)")
        # S = f * decision_function (the exponential loss: f = 2, a power of two, so every product and
        # sum is the library's scaled exactly), whose sigmoid is predict_proba's column 1
        lr = float(est.learning_rate)
        trees = [_sk_tree(s[0].tree_, f * (lr * np.asarray(s[0].tree_.value, dtype=np.float64)[:, 0, 0]))
                 for s in est.estimators_]
        return _finish_boosted(TreeEnsemble(tuple(trees), width, 0.0, "logistic", name, margin_scale=f),
                               lambda X: f * np.asarray(est.decision_function(X), dtype=np.float64), method,
                               index, name)
    if name == "HistGradientBoostingClassifier":
        check_inputs_in_order(est)
        if len(classes) != 2:
            raise UnsupportedModel(name, "classes_", "only binary gradient boosting has a single logit")
        trees = []
        for it in est._predictors:
            pred = it[0]
            nodes = pred.nodes
            if np.any(nodes["is_categorical"][~nodes["is_leaf"].astype(bool)]):
                raise UnsupportedModel(name, "is_categorical", "categorical splits are not supported")
            leaf = nodes["is_leaf"].astype(bool)
            trees.append(Tree(np.where(leaf, -1, nodes["feature_idx"].astype(np.int64)), np.where(leaf, 0.0, nodes["num_threshold"]),
                              np.where(leaf, -1, nodes["left"].astype(np.int64)),
                              np.where(leaf, -1, nodes["right"].astype(np.int64)),
                              np.where(leaf, nodes["value"], 0.0)))
        return _finish_boosted(TreeEnsemble(tuple(trees), width, 0.0, "logistic", name),
                               lambda X: est.decision_function(X), method, index, name)
    raise UnsupportedModel(name, "estimator", f"estimator {name} is not a tree model "
                           f"(supported: {', '.join(SKLEARN_TREES)})")


def sklearn_link_factor(est) -> float | None:
    """f where a binary scikit-learn gradient booster's ``predict_proba[:, 1]`` is
    ``expit(f * decision_function)`` in float64 (and ``predict`` the positive class iff
    ``decision_function`` >= 0 for GradientBoosting, > 0 for HistGradientBoosting): 1.0 for the log
    loss (``HalfBinomialLoss``, ``LogitLink.inverse`` = expit), 2.0 for GradientBoosting's exponential
    loss (``ExponentialLoss``, ``HalfLogitLink.inverse`` = ``expit(2 * raw)``: 2 * raw is exact, so its
    rounding is the log loss's on the doubled margin). None for another estimator, loss or link (the
    exact classes, not subclasses: another predict_proba or link would pass isinstance)."""
    if type(est).__name__ not in ("HistGradientBoostingClassifier", "GradientBoostingClassifier"):
        return None
    loss = getattr(est, "_loss", None)
    link = getattr(loss, "link", None)
    if type(loss).__module__ != "sklearn._loss.loss" or type(link).__module__ != "sklearn._loss.link":
        return None
    pair = (type(loss).__name__, type(link).__name__)
    if pair == ("HalfBinomialLoss", "LogitLink"):
        return 1.0
    if pair == ("ExponentialLoss", "HalfLogitLink") and type(est).__name__ == "GradientBoostingClassifier":
        return 2.0
    return None


def _finish_boosted(ens: TreeEnsemble, margin, method: str, index: int | None, name: str,
                    domains=None) -> TreeEnsemble:
    ens = _with_base(ens, margin, domains)
    ens = _self_check(ens, margin, name, domains=domains)
    # a margin of exactly 0 is class 1 for GradientBoosting (decision_function >= 0), class 0 for the others
    one_at_tie = name == "GradientBoostingClassifier"
    if method == "predict_proba" and index == 0:
        # the probability of class 0 is sigmoid(-S)
        trees = tuple(replace(t, value=-t.value) for t in ens.trees)
        return replace(ens, trees=trees, base=-ens.base, tie=int(not one_at_tie))
    return replace(ens, tie=int(one_at_tie))


# ---------------------------------------------------------------------------------------------
# XGBoost and LightGBM
# ---------------------------------------------------------------------------------------------

def xgb_matrix(xgb, booster, X):
    """A DMatrix of the columns X under the names and types the booster records: a model fit
    on a data frame refuses unnamed data ("data did not contain feature names"). The encoding
    has put the columns in the model's order already (fairspec.sema.names)."""
    names = booster.feature_names
    if names and len(names) == X.shape[1]:
        types = booster.feature_types
        return xgb.DMatrix(X, feature_names=list(names), feature_types=types,
                           enable_categorical=bool(types) and "c" in types)
    return xgb.DMatrix(X)


class CategoricalSplit(UnsupportedModel):
    """A split by category (XGBoost split_type 1, LightGBM's categorical decision_type): the loaded
    model (fairspec.models.boosted) says it with its file, in the sentence lint gives (FS506)."""

    def __init__(self, lib: str, attr: str, tree: int, index: int, name: str | None):
        super().__init__(lib, attr, f"tree {tree} splits input {index} by category: categorical splits are not "
                                    f"supported")
        self.tree, self.index, self.name = tree, index, name


def _xgb_categorical(booster, tj, t: int, domains=None) -> None:
    """Raise for the first split by category (in node order, as lint reads the file) on an input
    without a declared domain of whole numbers."""
    for k, s in enumerate(tj.get("split_type", [])):
        j = int(tj["split_indices"][k])
        if int(s) != 0 and j not in (domains or {}):
            names = list(booster.feature_names or ())
            raise CategoricalSplit("XGBoost", "split_type", t, j, names[j] if j < len(names) else None)


def _xgb_tree(booster, tj, t: int, domains=None) -> Tree:
    """Tree ``t`` of an XGBoost JSON model; its splits by category rewritten over ``domains``
    (fairspec.models.tree_categories), or CategoricalSplit."""
    left = np.asarray(tj["left_children"], dtype=np.int64)
    right = np.asarray(tj["right_children"], dtype=np.int64)
    _xgb_categorical(booster, tj, t, domains)
    # XGBoost keeps float32 thresholds and leaf values, written in JSON as the shortest decimal
    # that reads back as that float32 ("0.44444445"): read as float64 the decimal is another
    # number (0.44444445 > float32(4/9)), and a value cast to float32 compares with the float32
    cond = np.asarray(tj["split_conditions"], dtype=np.float32).astype(np.float64)
    from . import tree_categories as C

    if C.has_categorical(tj):
        try:
            arrays = C.build(0, C.xgboost_node_reader(tj, cond), domains)
        except (KeyError, IndexError, TypeError, ValueError):
            raise UnsupportedModel("XGBoost", "categories", f"tree {t}'s split by category does not say its "
                                   "categories") from None
        except C.TooLarge:
            raise UnsupportedModel("XGBoost", "categories", C.too_large(t)) from None

        return Tree(*arrays, strict=True, f32=True)
    leaf = left < 0
    return Tree(np.where(leaf, -1, np.asarray(tj["split_indices"], dtype=np.int64)),
                np.where(leaf, 0.0, cond), np.where(leaf, -1, left), np.where(leaf, -1, right),
                np.where(leaf, cond, 0.0), strict=True, f32=True)


def from_xgboost(booster, index: int | None = None, domains=None) -> TreeEnsemble:
    """A binary XGBoost ``gbtree`` booster (``binary:logistic`` and friends) as the ensemble of
    its margin (``output_margin=True``); ``index = 0`` gives class 0. ``domains``: {input: its
    declared whole-number values} (fairspec.models.base.category_domains), over which splits by
    category are rewritten as thresholds; the ensemble then equals the booster on them only."""
    import xgboost as xgb

    cfg = json.loads(booster.save_config())
    learner = cfg.get("learner", {})
    gb = learner.get("gradient_booster", {}).get("name", "gbtree")
    if gb != "gbtree":
        raise UnsupportedModel("XGBoost", gb, f"booster {gb!r} is not supported (only gbtree)")
    obj = learner.get("objective", {}).get("name", "")
    if not obj.startswith("binary:") and obj != "reg:logistic":
        raise UnsupportedModel("XGBoost", obj, f"objective {obj!r} is not a binary classifier's")
    model = json.loads(booster.save_raw("json"))
    trees_json = model["learner"]["gradient_booster"]["model"]["trees"]
    width = int(booster.num_features())
    trees = [_xgb_tree(booster, tj, t, domains) for t, tj in enumerate(trees_json)]
    ens = TreeEnsemble(tuple(trees), width, 0.0, "logistic", "xgboost")
    probe = _probed(trees_json, domains, width)

    def margin(X):

        return booster.predict(xgb_matrix(xgb, booster, X), output_margin=True)

    return _finish_boosted(ens, margin, "predict_proba", index, "XGBoost", probe)


def _probed(trees_json, domains, width):
    """The declared values of the inputs some tree splits by category (the self-check probes them)."""
    from .tree_categories import domain_points

    split = {int(j) for tj in trees_json for s, j in zip(tj.get("split_type") or (), tj["split_indices"]) if int(s)}
    return domain_points({j: v for j, v in (domains or {}).items() if j in split}, width) or None


def _lightgbm_tree(structure, scale: float = 1.0, domains=None, tree: int | None = None) -> Tree:
    """One tree of a LightGBM ``dump_model()`` (its ``tree_structure``), leaf values times
    ``scale``; splits by category rewritten over ``domains`` (fairspec.models.tree_categories): on
    an input without one they raise (the first in LightGBM's split order, as lint reads the file),
    and so do zero-as-missing splits sending zero the other way."""
    from .tree_categories import TooLarge, build, lightgbm_members, too_large

    cats = []

    def scan(node):
        if "split_feature" in node:
            if node.get("decision_type", "<=") != "<=":
                cats.append((int(node.get("split_index", 0)), int(node["split_feature"])))
            scan(node["left_child"]), scan(node["right_child"])

    scan(structure)
    for _, j in sorted(cats):
        if j not in (domains or {}):
            raise CategoricalSplit("LightGBM", "decision_type", -1, j, None)

    def node(nd):
        if "leaf_value" in nd and "split_feature" not in nd:
            return ("leaf", scale * float(nd["leaf_value"]))
        if nd.get("decision_type", "<=") != "<=":      # "==": the set goes left
            return ("cat", int(nd["split_feature"]), lightgbm_members(nd["threshold"]), nd["left_child"],
                    nd["right_child"])
        t = float(nd["threshold"])
        if nd.get("missing_type") == "Zero" and bool(nd.get("default_left")) != (0.0 <= t):
            raise UnsupportedModel("LightGBM", "missing_type", "a split sending zero the other way "
                                   "(zero_as_missing) is not supported")
        return ("num", int(nd["split_feature"]), t, nd["left_child"], nd["right_child"])

    try:
        return Tree(*build(structure, node, domains or {}))
    except TooLarge:
        raise UnsupportedModel("LightGBM", "categories", too_large(tree)) from None


def _lightgbm_trees(dump, scale: float = 1.0, domains=None) -> list[Tree]:
    """Every tree of a LightGBM ``dump_model()``; a categorical split names its tree and input."""
    trees = []
    names = list(dump.get("feature_names") or ())
    check_lightgbm_sum(dump)
    for t, info in enumerate(dump.get("tree_info", [])):
        try:
            trees.append(_lightgbm_tree(info["tree_structure"], scale, domains, int(info.get("tree_index", t))))
        except CategoricalSplit as e:
            j = e.index
            name = names[j] if 0 <= j < len(names) and not names[j].startswith("Column_") else None
            raise CategoricalSplit("LightGBM", "decision_type", int(info.get("tree_index", t)), j, name) from None
    return trees


def _lightgbm_probed(booster, dump, domains):
    """The declared values of the inputs some tree splits by category (the self-check probes them)."""
    from .tree_categories import domain_points

    split = set()

    def scan(node):
        if "split_feature" in node:
            if node.get("decision_type", "<=") != "<=":
                split.add(int(node["split_feature"]))
            scan(node["left_child"]), scan(node["right_child"])

    for info in dump.get("tree_info", []):
        scan(info["tree_structure"])
    width = int(dump.get("max_feature_idx", booster.num_feature() - 1)) + 1
    return domain_points({j: v for j, v in (domains or {}).items() if j in split}, width) or None


def from_lightgbm(booster, index: int | None = None, domains=None) -> TreeEnsemble:
    """A binary LightGBM booster as the ensemble of its raw score (times the sigmoid factor)."""
    dump = booster.dump_model()
    obj = str(dump.get("objective", ""))
    parts = obj.split()
    if not parts or parts[0] not in ("binary", "cross_entropy", "xentropy"):
        raise UnsupportedModel("LightGBM", obj or "objective", f"objective {obj!r} is not a binary classifier's")
    scale = 1.0
    for p in parts[1:]:
        if p.startswith("sigmoid:"):
            scale = float(p.split(":", 1)[1])
    if int(dump.get("num_tree_per_iteration", 1)) != 1:
        raise UnsupportedModel("LightGBM", "num_tree_per_iteration", "only binary models are supported")
    width = int(dump.get("max_feature_idx", booster.num_feature() - 1)) + 1
    trees = _lightgbm_trees(dump, scale, domains)
    ens = TreeEnsemble(tuple(trees), width, 0.0, "logistic", "lightgbm", margin_scale=scale)

    def margin(X):
        return scale * np.asarray(booster.predict(X, raw_score=True), dtype=np.float64)

    return _finish_boosted(ens, margin, "predict_proba", index, "LightGBM", _lightgbm_probed(booster, dump, domains))


# scikit-learn regressors (read by every output column, fairspec.models.tree_columns)
SKLEARN_REGRESSORS = ("DecisionTreeRegressor", "RandomForestRegressor", "ExtraTreesRegressor",
                      "GradientBoostingRegressor", "HistGradientBoostingRegressor")


# ---------------------------------------------------------------------------------------------
# random ensembles for the tests
# ---------------------------------------------------------------------------------------------

def random_ensemble(seed: int, n_inputs: int, n_trees: int, depth: int, link: str = "identity",
                    lo: Sequence[float] | None = None, hi: Sequence[float] | None = None,
                    strict: bool = False) -> TreeEnsemble:
    """A random ensemble whose thresholds sit between the integer points of [lo, hi]."""
    rng = np.random.default_rng(seed)
    lo = np.zeros(n_inputs) if lo is None else np.asarray(lo, dtype=np.float64)
    hi = np.full(n_inputs, 3.0) if hi is None else np.asarray(hi, dtype=np.float64)
    trees = []
    for _ in range(n_trees):
        feat, thr, left, right, val = [], [], [], [], []

        def grow(d) -> int:
            k = len(feat)
            feat.append(-1), thr.append(0.0), left.append(-1), right.append(-1), val.append(0.0)
            if d >= depth or (d > 0 and rng.random() < 0.2):
                if link == "identity":
                    val[k] = float(rng.integers(0, 5)) / 4.0
                else:
                    val[k] = float(np.round(rng.normal(0, 1), 2))
                return k
            f = int(rng.integers(0, n_inputs))
            t = float(rng.integers(int(lo[f]), max(int(hi[f]), int(lo[f]) + 1))) + (1.0 if strict else 0.5)
            feat[k], thr[k] = f, t
            left[k] = grow(d + 1)
            right[k] = grow(d + 1)
            return k

        grow(0)
        trees.append(Tree(feat, thr, left, right, val, strict=strict))
    base = 0.0 if link == "identity" else float(np.round(rng.normal(0, 0.5), 2))
    return TreeEnsemble(tuple(trees), n_inputs, base, link, f"random(seed={seed})",
                        divisor=float(n_trees) if link == "identity" else 1.0)



def float_key(x: float) -> int:
    """An integer that orders float64 values as the reals they are (-0.0 and 0.0 alike): consecutive floats get
    consecutive keys, so a bisection over keys visits every float between two."""
    i = int(np.array([x], dtype=np.float64).view(np.int64)[0])
    return i if i >= 0 else -(i & 0x7FFFFFFFFFFFFFFF)


def float_of_key(k: int) -> float:
    """The float64 of a :func:`float_key`."""
    i = k if k >= 0 else (-k) | (-0x8000000000000000)
    return float(np.array([i], dtype=np.int64).view(np.float64)[0])


def last_left(a: float, b: float, left) -> float:
    """The largest float64 x in [a, b) with ``left(x)``, given ``left(a)`` and not ``left(b)`` and ``left``
    monotone (true up to a point, false after): a split's boundary as the runtime decides it, found by
    bisecting the floats between a and b (at most 64 calls)."""
    ka, kb = float_key(a), float_key(b)
    while kb - ka > 1:
        mid = (ka + kb) // 2
        if left(float_of_key(mid)):
            ka = mid
        else:
            kb = mid
    return float_of_key(ka)
