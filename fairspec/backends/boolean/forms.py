"""Classifiers in Boolean form, over discretised features.

Justicia and FVGM verify classifiers that can be written over Boolean
variables.  Every classifier here reads *discrete* features (categorical
values or the bins of a continuous feature, see ``analyses.distribution``)
through *tests* ``X in S`` (``Test``): a threshold ``x > t`` of a decision tree
on a binned feature is the test ``bin(x) >= j``, an upward-closed set of bins,
so the tests of one feature are nested and the implications
``x > t2  ->  x > t1`` (t2 > t1) hold by construction -- the SSAT encoder turns
each such test into an *order literal* defined from the feature's bin
variables, never into an independent coin.

Three forms:

* ``DecisionTree``: internal nodes test, leaves predict 0/1.  Its CNF for
  ``Yhat = 1`` has one clause per negative leaf (the negated path) and for
  ``Yhat = 0`` one per positive leaf (Justicia section 3.4).
* ``LinearRule``: ``sum_f w_f[x_f] >= threshold`` with integer weights per value
  (a pseudo-Boolean constraint; FVGM's stochastic subset sum).  Built from
  Boolean weights (``P + Q + R - S >= 2``) or from a fitted linear model on
  binned features (bin means, a multiplier, rounding; the agreement with the
  original model is reported).
* ``CNFRule``: clauses of tests, e.g. Justicia's ``(not F or I) and (F or J)``.

A rule on its way to a ``CNFRule`` is first a *formula* over frozen nodes
(``Test``, ``Threshold``, ``Linear``, ``Constant``, ``Not``, ``And``, ``Or``),
built by :mod:`fairspec.backends.boolean.compile` from the spec's IR.

No heavy import at module level; sklearn estimators are only read through
their public attributes (``tree_``, ``coef_``, ``intercept_``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from fairspec.analyses.distribution import DistributionError, Variable
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly

__all__ = [
    "Test", "DecisionTree", "LinearRule", "CNFRule", "Column",
    "split", "is_", "leaf", "tree_from_sklearn", "tree_split_points",
    "linear_from_sklearn", "linear_rule", "cnf_rule", "Classifier",
    "Threshold", "Linear", "Constant", "Not", "And", "Or", "Formula",
]


# --------------------------------------------------------------------------- formulas


@dataclass(frozen=True)
class Threshold:
    """``feature OP value`` on a numeric feature (OP in <, <=, >, >=); a union of bins
    once the feature's bin edges are known."""

    feature: str
    op: str
    value: float


@dataclass(frozen=True)
class Linear:
    """``sum_f weights_f[x_f] >= threshold`` with integer weights per value index;
    ``weights`` is ((feature, (w_0, ..., w_k-1)), ...)."""

    weights: tuple
    threshold: int

    @property
    def features(self) -> tuple[str, ...]:
        return tuple(f for f, _ in self.weights)

    def weight_map(self) -> dict[str, tuple[int, ...]]:
        return dict(self.weights)


@dataclass(frozen=True)
class Constant:
    value: bool


@dataclass(frozen=True)
class Not:
    arg: "Formula"


@dataclass(frozen=True)
class And:
    args: tuple


@dataclass(frozen=True)
class Or:
    args: tuple


# --------------------------------------------------------------------------- tests


@dataclass(frozen=True)
class Test:
    """``feature in values``: true when the feature's value index is in ``values``."""

    __test__ = False   # not a pytest test class

    feature: str
    values: frozenset

    def holds(self, codes: Mapping[str, np.ndarray]) -> np.ndarray:
        col = np.asarray(codes[self.feature])
        return np.isin(col, np.fromiter(self.values, dtype=np.int64, count=len(self.values)))

    def describe(self, variables: Mapping[str, Variable] | None = None) -> str:
        if variables and self.feature in variables:
            v = variables[self.feature]
            vals = sorted(self.values)
            if v.bins is not None and vals and vals == list(range(vals[0], v.k)) and vals[0] > 0:
                return f"{self.feature} > {_spec_number(v.bins.edges[vals[0] - 1])}"
            if len(vals) == 1:
                return f"{self.feature} = {v.values[vals[0]]}"
            return f"{self.feature} in {{{', '.join(str(v.values[i]) for i in vals)}}}"
        return f"{self.feature} in {sorted(self.values)}"


Literal = tuple  # (Test, polarity: bool)

# a rule's formula: a Test on a bool / categorical feature is its own leaf
Formula = Test | Threshold | Linear | Constant | Not | And | Or


# --------------------------------------------------------------------------- decision trees


@dataclass(frozen=True)
class _Split:
    feature: str
    threshold: float | None   # x > threshold goes to `above`
    value: Any                # or x == value goes to `above`
    above: Any
    below: Any


def split(feature: str, threshold: float, above, below) -> _Split:
    """A tree node on raw units: ``feature > threshold`` -> ``above`` else ``below``.

    With continuous data ``>=`` and ``>`` have the same probability, so Justicia's
    Figure 1 (``fitness >= 0.61``) is written ``split("fitness", 0.61, ...)``.
    """
    return _Split(feature, float(threshold), None, above, below)


def is_(feature: str, value, then, otherwise) -> _Split:
    """A tree node on a categorical feature: ``feature == value`` -> ``then``."""
    return _Split(feature, None, value, then, otherwise)


def leaf(cls: int) -> int:
    return int(cls)


class DecisionTree:
    """A binary decision tree over tests; leaves are 0/1.

    Build it with ``DecisionTree.from_nodes(root, variables)`` from ``split``/``is_``
    nodes in raw units, or with ``tree_from_sklearn``.
    """

    kind = "tree"

    def __init__(self, nodes: list, root: int = 0, variables: Mapping[str, Variable] | None = None):
        # nodes[i] = ("leaf", cls) | ("test", Test, true_child, false_child)
        self.nodes = nodes
        self.root = root
        self.variables = dict(variables or {})

    @staticmethod
    def from_nodes(root, variables: Mapping[str, Variable]) -> "DecisionTree":
        nodes: list = []

        def build(n) -> int:
            i = len(nodes)
            nodes.append(None)
            if isinstance(n, _Split):
                if n.feature not in variables:
                    raise DistributionError(f"the distribution does not cover feature '{n.feature}', which the classifier reads")
                var = variables[n.feature]
                if n.threshold is not None:
                    t = _threshold_test(var, n.threshold)
                else:
                    t = Test(n.feature, frozenset({var.index_of(n.value)}))
                a = build(n.above)
                b = build(n.below)
                nodes[i] = ("test", t, a, b)
            else:
                c = int(n)
                if c not in (0, 1):
                    raise DistributionError(f"a leaf predicts {n!r}; leaves predict 0 or 1")
                nodes[i] = ("leaf", c)
            return i

        build(root)
        return DecisionTree(nodes, 0, variables)

    @property
    def features(self) -> tuple[str, ...]:
        seen = []
        for n in self.nodes:
            if n[0] == "test" and n[1].feature not in seen:
                seen.append(n[1].feature)
        return tuple(seen)

    def tests(self) -> list[Test]:
        out = []
        for n in self.nodes:
            if n[0] == "test" and n[1] not in out:
                out.append(n[1])
        return out

    def predict(self, codes: Mapping[str, np.ndarray]) -> np.ndarray:
        n = len(np.asarray(next(iter(codes.values())))) if codes else 1
        out = np.zeros(n, dtype=bool)
        stack = [(self.root, np.ones(n, dtype=bool))]
        while stack:
            i, mask = stack.pop()
            node = self.nodes[i]
            if node[0] == "leaf":
                out[mask] = bool(node[1])
                continue
            h = node[1].holds(codes)
            stack.append((node[2], mask & h))
            stack.append((node[3], mask & ~h))
        return out

    def paths(self, cls: int) -> list[list[Literal]]:
        """Root-to-leaf paths ending in class ``cls``, as lists of (Test, polarity)."""
        out = []

        def walk(i, path):
            node = self.nodes[i]
            if node[0] == "leaf":
                if node[1] == cls:
                    out.append(list(path))
                return
            walk(node[2], path + [(node[1], True)])
            walk(node[3], path + [(node[1], False)])

        walk(self.root, [])
        return out

    def cnf(self, positive: bool = True) -> list[list[Literal]]:
        """CNF of ``Yhat = 1`` (or ``Yhat = 0``): the negated paths to the other class."""
        other = 0 if positive else 1
        return [[(t, not pol) for (t, pol) in p] for p in self.paths(other)]

    @property
    def n_leaves(self) -> int:
        return sum(1 for n in self.nodes if n[0] == "leaf")

    def depth(self) -> int:
        def d(i):
            node = self.nodes[i]
            return 0 if node[0] == "leaf" else 1 + max(d(node[2]), d(node[3]))
        return d(self.root)

    def threshold_literals(self) -> list[tuple[str, float, int]]:
        """(feature, threshold, j) for every threshold test ``x > threshold`` == ``bin >= j``,
        sorted by feature then threshold: consecutive entries of a feature are
        nested (x > t2 implies x > t1)."""
        out = set()
        for t in self.tests():
            var = self.variables.get(t.feature)
            if var is not None and var.bins is not None:
                vals = sorted(t.values)
                if vals == list(range(vals[0], var.k)) and vals[0] > 0:
                    out.add((t.feature, var.bins.edges[vals[0] - 1], vals[0]))
        return sorted(out)

    def __repr__(self) -> str:
        return f"DecisionTree(depth={self.depth()}, leaves={self.n_leaves}, features={list(self.features)})"


def _threshold_test(var: Variable, threshold: float) -> Test:
    """``x > threshold`` on a discretised (or numeric categorical) feature."""
    if var.bins is not None:
        j = var.bins.upper_index(threshold, var.name)
        return Test(var.name, frozenset(range(j, var.k)))
    try:
        nums = [float(v) for v in var.values]
    except (TypeError, ValueError):
        raise DistributionError(
            f"the classifier compares feature '{var.name}' with {_spec_number(threshold)}, but its values are "
            f"categories; declare it continuous with bins") from None
    return Test(var.name, frozenset(i for i, v in enumerate(nums) if v > threshold))


@dataclass(frozen=True)
class Column:
    """How one input column of a fitted model derives from a feature.

    ``value is None``: a numeric column, model input = (raw - offset) / scale.
    Otherwise a one-hot column: 1 when the feature equals ``value``.
    """

    feature: str
    value: Any = None
    offset: float = 0.0
    scale: float = 1.0


def _tree_arrays(est):
    t = getattr(est, "tree_", None)
    if t is None:
        raise DistributionError("the model is not a fitted decision tree (it has no tree_)")
    return t


def tree_split_points(est, columns: Sequence[Column]) -> dict[str, list[float]]:
    """Thresholds (raw units) a fitted sklearn tree uses on each numeric feature.

    Use them as bin edges: the tree's tests are then exact unions of bins.
    """
    t = _tree_arrays(est)
    out: dict[str, set] = {}
    for i in range(t.node_count):
        if t.children_left[i] == -1:
            continue
        c = columns[int(t.feature[i])]
        if c.value is None:
            out.setdefault(c.feature, set()).add(float(t.threshold[i]) * c.scale + c.offset)
    return {k: sorted(v) for k, v in out.items()}


def tree_from_sklearn(est, columns: Sequence[Column], variables: Mapping[str, Variable],
                      positive_class: Any = None) -> DecisionTree:
    """A fitted ``DecisionTreeClassifier`` as a ``DecisionTree`` over the features.

    ``columns[i]`` describes the model's input column i.  Numeric thresholds
    must be bin edges of the feature (see ``tree_split_points``); a one-hot
    column test ``col <= 0.5`` becomes ``feature != value``.
    """
    t = _tree_arrays(est)
    classes = list(getattr(est, "classes_", [0, 1]))
    if len(classes) != 2:
        raise DistributionError(f"the tree has {len(classes)} classes; only binary classifiers are supported")
    pos = classes.index(positive_class) if positive_class is not None else 1
    if t.n_features != len(columns):
        raise DistributionError(f"the tree reads {t.n_features} columns but {len(columns)} column descriptions were given")
    nodes: list = []
    index: dict[int, int] = {}

    def build(i) -> int:
        k = len(nodes)
        nodes.append(None)
        if t.children_left[i] == -1:
            v = t.value[i].reshape(-1)
            nodes[k] = ("leaf", int(int(np.argmax(v)) == pos))
            return k
        col = columns[int(t.feature[i])]
        if col.feature not in variables:
            raise DistributionError(f"the distribution does not cover feature '{col.feature}', which the classifier reads")
        var = variables[col.feature]
        thr = float(t.threshold[i])
        if col.value is None:
            test = _threshold_test(var, thr * col.scale + col.offset)   # x > thr -> right child
        else:
            if not (0.0 <= thr < 1.0):
                raise DistributionError(f"a one-hot column of '{col.feature}' is compared with {_spec_number(thr)}")
            test = Test(col.feature, frozenset({var.index_of(col.value)}))  # == value -> right child
        right = build(int(t.children_right[i]))
        left = build(int(t.children_left[i]))
        nodes[k] = ("test", test, right, left)
        return k

    build(0)
    tree = DecisionTree(nodes, 0, variables)
    return _simplify_tree(tree)


def _simplify_tree(tree: DecisionTree) -> DecisionTree:
    """Collapse subtrees whose leaves all predict the same class."""
    nodes = tree.nodes
    new: list = []

    def rec(i):
        node = nodes[i]
        if node[0] == "leaf":
            new.append(node)
            return len(new) - 1, node[1]
        a, ca = rec(node[2])
        b, cb = rec(node[3])
        if ca is not None and ca == cb:
            new.append(("leaf", ca))
            return len(new) - 1, ca
        new.append(("test", node[1], a, b))
        return len(new) - 1, None

    root, _ = rec(tree.root)
    return DecisionTree(new, root, tree.variables)


# --------------------------------------------------------------------------- linear rules


class LinearRule:
    """``sum_f weights[f][x_f] >= threshold`` with integer weights per value index.

    ``multiplier`` and ``agreement`` record how the rule approximates a fitted
    model (None for a rule given exactly).
    """

    kind = "linear"

    def __init__(self, weights: Mapping[str, Sequence[int]], threshold: int,
                 variables: Mapping[str, Variable] | None = None,
                 multiplier: int | None = None, agreement: float | None = None,
                 real_weights: Mapping[str, Sequence[float]] | None = None, real_bias: float | None = None):
        self.weights = {f: np.asarray(w, dtype=np.int64) for f, w in weights.items()}
        for f, w in weights.items():
            arr = np.asarray(w, dtype=float)
            if not np.all(np.isfinite(arr)) or not np.allclose(arr, np.round(arr)):
                raise DistributionError(f"the weights of '{f}' must be integers")
        self.threshold = int(threshold)
        self.variables = dict(variables or {})
        self.multiplier = multiplier
        self.agreement = agreement
        self.real_weights = real_weights
        self.real_bias = real_bias

    @property
    def features(self) -> tuple[str, ...]:
        return tuple(f for f, w in self.weights.items() if np.any(w != w[0]))

    def score(self, codes: Mapping[str, np.ndarray]) -> np.ndarray:
        n = len(np.asarray(next(iter(codes.values())))) if codes else 1
        s = np.zeros(n, dtype=np.int64)
        for f, w in self.weights.items():
            if f in codes:
                s = s + w[np.asarray(codes[f])]
            elif np.all(w == w[0]):
                s = s + w[0]        # a constant term: the feature does not matter
            else:
                raise KeyError(f)
        return s

    def predict(self, codes: Mapping[str, np.ndarray]) -> np.ndarray:
        return self.score(codes) >= self.threshold

    def negated(self) -> "LinearRule":
        """``sum < threshold`` as ``sum_f -w_f >= 1 - threshold``."""
        return LinearRule({f: -w for f, w in self.weights.items()}, 1 - self.threshold, self.variables)

    def describe(self) -> str:
        parts = []
        for f, w in self.weights.items():
            if len(w) == 2 and w[0] == 0:
                parts.append(f"{int(w[1]):+d}*{f}")
            else:
                parts.append(f"w_{f}{list(map(int, w))}")
        return " ".join(parts) + f" >= {self.threshold}"

    def __repr__(self) -> str:
        return f"LinearRule({self.describe()})"


def linear_rule(weights: Mapping[str, Any], threshold: float,
                variables: Mapping[str, Variable] | None = None) -> LinearRule:
    """A linear threshold rule given exactly, e.g. ``P + Q + R - S >= 2``:
    ``linear_rule({"P": 1, "Q": 1, "R": 1, "S": -1}, 2)``.  A scalar weight is a
    Boolean feature's weight; a sequence gives one weight per value."""
    ws = {}
    for f, w in weights.items():
        if np.ndim(w) == 0:
            ws[f] = [0, w]
            if variables and f in variables and variables[f].k != 2:
                raise DistributionError(f"feature '{f}' has {variables[f].k} values; give one weight per value")
        else:
            ws[f] = list(w)
            if variables and f in variables and variables[f].k != len(ws[f]):
                raise DistributionError(f"{len(ws[f])} weights were given for the {variables[f].k} values of '{f}'")
    if not float(threshold).is_integer():
        raise DistributionError("the threshold of a linear rule must be an integer")
    return LinearRule(ws, int(threshold), variables)


def _real_value_weights(coef, columns, variables):
    """Per-feature real weights by value: bin means for numeric columns."""
    W: dict[str, np.ndarray] = {}
    for c, col in zip(coef, columns):
        if col.feature not in variables:
            raise DistributionError(f"the distribution does not cover feature '{col.feature}', which the classifier reads")
        var = variables[col.feature]
        w = W.setdefault(col.feature, np.zeros(var.k))
        if col.value is not None:
            w[var.index_of(col.value)] += c
        else:
            if var.bins is not None:
                if var.bins.means is None:
                    raise DistributionError(f"the bins of '{var.name}' have no means; discretise it from data")
                vals = np.asarray(var.bins.means)
            else:
                try:
                    vals = np.asarray([float(v) for v in var.values])
                except (TypeError, ValueError):
                    raise DistributionError(
                        f"a numeric column reads categorical feature '{var.name}'; declare it continuous with bins") from None
            w += c * (vals - col.offset) / col.scale
    return W


def linear_from_sklearn(est, columns: Sequence[Column], variables: Mapping[str, Variable],
                        X=None, codes: Mapping[str, np.ndarray] | None = None,
                        multiplier: int | None = None, grid: Iterable[int] = range(1, 101),
                        positive_class: Any = None) -> LinearRule:
    """A fitted linear classifier (LogisticRegression, LinearSVC, ...) on binned features.

    FVGM section 3.5: a continuous feature x with weight w becomes the bins of x,
    bin j weighted w * mean_j; weights are scaled to [-1, 1], multiplied by an
    integer ``multiplier`` and rounded.  When model inputs ``X`` and the same
    rows' discretised ``codes`` are given, the multiplier is chosen from
    ``grid`` to maximise agreement with the original model's predictions (the
    smallest best one, for speed) and the agreement is recorded.
    """
    coef = np.asarray(getattr(est, "coef_", None), dtype=float)
    if coef is None or coef.ndim == 0:
        raise DistributionError("the model is not a fitted linear classifier (it has no coef_)")
    coef = coef.reshape(-1) if coef.ndim == 1 or coef.shape[0] == 1 else None
    if coef is None:
        raise DistributionError("the linear model has more than two classes; only binary classifiers are supported")
    if len(coef) != len(columns):
        raise DistributionError(f"the model reads {len(coef)} columns but {len(columns)} column descriptions were given")
    b = float(np.asarray(getattr(est, "intercept_", 0.0)).reshape(-1)[0])
    classes = list(getattr(est, "classes_", [0, 1]))
    sign = 1.0
    if positive_class is not None and classes.index(positive_class) == 0:
        sign = -1.0
    W = _real_value_weights(sign * coef, columns, variables)
    b = sign * b
    scale = max([float(np.abs(w).max()) for w in W.values()] + [abs(b), 1e-12])

    def build(l):
        iw = {f: np.round(l * w / scale).astype(np.int64) for f, w in W.items()}
        # positive iff sum_f W_f + b > 0  ~  sum round(l W/scale) >= floor(-l b/scale) + 1; of classes_[0]
        # (sign -1) iff the model's score <= 0, predict's tie included: ~ sum >= ceil(-l b/scale)
        thr = int(math.floor(-l * b / scale)) + 1 if sign > 0 else int(math.ceil(-l * b / scale))
        return iw, thr

    agreement = None
    if X is not None and codes is not None:
        from fairspec.models.base import unnamed_inputs

        with unnamed_inputs():                  # a model fitted on a data frame, read on the array
            want = np.asarray(est.predict(X))
        want = want == (classes[1] if positive_class is None else positive_class)
        best = None
        for l in ([multiplier] if multiplier else grid):
            iw, thr = build(l)
            r = LinearRule(iw, thr, variables)
            a = float(np.mean(r.predict(codes) == want))
            if best is None or a > best[0] + 1e-12:
                best = (a, l)
        agreement, multiplier = best
    elif multiplier is None:
        raise DistributionError("give a multiplier, or data to choose one by agreement with the model")
    iw, thr = build(multiplier)
    return LinearRule(iw, thr, variables, multiplier=multiplier, agreement=agreement,
                      real_weights={f: w for f, w in W.items()}, real_bias=b)


# --------------------------------------------------------------------------- CNF rules


class CNFRule:
    """A CNF classifier: ``Yhat = 1`` iff every clause has a true literal."""

    kind = "cnf"

    def __init__(self, clauses: Sequence[Sequence[Literal]], variables: Mapping[str, Variable] | None = None):
        self.clauses = [list(c) for c in clauses]
        self.variables = dict(variables or {})

    @property
    def features(self) -> tuple[str, ...]:
        out = []
        for c in self.clauses:
            for t, _ in c:
                if t.feature not in out:
                    out.append(t.feature)
        return tuple(out)

    def predict(self, codes: Mapping[str, np.ndarray]) -> np.ndarray:
        n = len(np.asarray(next(iter(codes.values())))) if codes else 1
        out = np.ones(n, dtype=bool)
        for c in self.clauses:
            sat = np.zeros(n, dtype=bool)
            for t, pol in c:
                h = t.holds(codes)
                sat |= h if pol else ~h
            out &= sat
        return out

    def cnf(self, positive: bool = True):
        if not positive:
            raise NotImplementedError("negate a CNFRule with a Tseitin encoding (ssat encoder)")
        return self.clauses

    def __repr__(self) -> str:
        def lit(t, p):
            return ("" if p else "~") + t.describe(self.variables)
        return "CNFRule(" + " & ".join("(" + " | ".join(lit(t, p) for t, p in c) + ")" for c in self.clauses) + ")"


def cnf_rule(clauses: Sequence[Sequence[Any]], variables: Mapping[str, Variable] | None = None) -> CNFRule:
    """Clauses of literals: ``"F"`` / ``"-F"`` / ``"~F"`` (Boolean feature F is 1 / 0),
    or ``(feature, value)`` / ``(feature, value, False)`` for ``feature == value`` / ``!=``."""
    out = []
    for c in clauses:
        cl = []
        for l in c:
            if isinstance(l, str):
                neg = l.startswith(("-", "~", "!", "¬"))
                name = l.lstrip("-~!¬ ").strip()
                if name.lower().startswith("not "):
                    neg, name = True, name[4:].strip()
                if variables and name in variables and variables[name].k != 2:
                    raise DistributionError(f"literal '{l}' names feature '{name}', which is not Boolean")
                cl.append((Test(name, frozenset({1})), not neg))
            else:
                f, v, *pol = l
                idx = variables[f].index_of(v) if variables and f in variables else int(v)
                cl.append((Test(f, frozenset({idx})), bool(pol[0]) if pol else True))
        out.append(cl)
    return CNFRule(out, variables)


Classifier = DecisionTree | LinearRule | CNFRule
