"""The Boolean-form compiler: a classifier the spec names, in a form the exact solvers read.

``classifier_form(model, ctx, fs)`` returns a :class:`Form` -- what the classifier reads,
which bin edges its tests need, and how to build it once the discretised variables are
known -- for a rule ``P + Q + R - S >= 2`` (a linear rule), a rule in and/or/not over
tests (a CNF rule), a scikit-learn decision tree (``DecisionTree``; the spec's encoding
maps its input columns back to features) or a linear scikit-learn model (a linear rule on
bin means whose agreement with the model on the data is reported).  The forms themselves
are the frozen classes of :mod:`fairspec.backends.boolean.forms`.  Anything that has no Boolean
form raises :class:`fairspec.verdict.Unsupported`.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import operator
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from fairspec import ir
from fairspec.analyses.distribution import Bins, DistributionError, Variable
from fairspec.backends.boolean.forms import And, Constant, Formula, Linear, Not, Or, Test, Threshold
from fairspec.backends.boolean.support import support_agreement
from fairspec.verdict import Unsupported
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly

__all__ = ["Form", "classifier_form", "rule_form"]

_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
MAX_CLAUSES = 20_000
MAX_TABLE = 4096


@dataclass
class Form:
    """A classifier on its way to Boolean form: what it reads, which bin edges its
    tests need, and how to build it once the variables are known."""

    kind: str                     # tree | cnf | linear
    reads: tuple[str, ...]
    needs: dict                   # feature -> [(lo, hi, preferred edge)]
    build_fn: object
    exact: bool = True
    source: str = "rule"          # rule | sklearn
    info: dict = field(default_factory=dict)

    def build(self, variables, ctx, rows, codes):
        return self.build_fn(variables, ctx, rows, codes)

    def describe(self, clf) -> dict:
        out = dict(self.info)
        if self.kind == "tree":
            out.update({"leaves": clf.n_leaves, "depth": clf.depth(), "reads": list(clf.features)})
        elif self.kind == "cnf":
            out.update({"clauses": len(clf.clauses), "reads": list(clf.features)})
        else:
            out.update({"rule": clf.describe() if len(clf.weights) <= 12 else f"{len(clf.weights)} weighted features",
                        "reads": list(clf.features)})
            if clf.multiplier is not None:
                out["multiplier"] = clf.multiplier
            if clf.agreement is not None:
                out["agreement"] = float(clf.agreement)
            if getattr(clf, "support", None) is not None:
                out["support_agreement"] = dict(clf.support)
        return out


def classifier_form(model: ir.Model, ctx, fs: ir.FeatureSet) -> Form:
    if model.format == "rule":
        if model.rule is None:
            raise Unsupported(f"rule model '{model.name}' has no rule")
        return rule_form(model.rule, fs)
    if model.format in ("sklearn", "xgboost", "lightgbm"):
        return _sklearn_form(model, ctx, fs)
    what = {"onnx": "an ONNX network", "torch": "a TorchScript network"}.get(model.format, model.format)
    raise Unsupported(f"model '{model.name}' is {what}; over a distribution fairspec verifies classifiers in "
                      f"Boolean form (decision trees, linear models, rules); measure it on data instead "
                      f"(data = DATA)")


def _variable(f: ir.Feature) -> Variable:
    if isinstance(f.domain, ir.Boolean):
        return Variable(f.name, (False, True))
    if isinstance(f.domain, ir.Categorical):
        return Variable(f.name, tuple(f.domain.categories))
    raise DistributionError(f"feature '{f.name}' is numeric; a declared distribution lists bool and "
                            f"categorical features (estimate numeric ones from data, with bins)")


# --------------------------------------------------------------------------- rules


class _NotLinear(Exception):
    pass


def _feature(fs, e) -> ir.Feature | None:
    return fs.get(e.feature) if isinstance(e, ir.FeatureRef) else None


def _is_numeric(f: ir.Feature) -> bool:
    return isinstance(f.domain, (ir.IntRange, ir.RealRange))


def _const_index(f: ir.Feature, v) -> int:
    if isinstance(f.domain, ir.Boolean):
        return int(bool(v))
    return int(v)


def _literal(fs, e):
    """(feature, frozenset of value indices) for a test on a bool/categorical feature, else None."""
    if isinstance(e, ir.FeatureRef):
        f = fs.get(e.feature)
        if f is not None and isinstance(f.domain, ir.Boolean):
            return f.name, frozenset({1})
        return None
    if isinstance(e, ir.Cmp) and e.op in ("==", "!="):
        a, b = e.left, e.right
        if isinstance(a, ir.Const):
            a, b = b, a
        f = _feature(fs, a)
        if f is None or _is_numeric(f) or not isinstance(b, ir.Const):
            return None
        k = len(f.values())
        s = frozenset({_const_index(f, b.value)})
        return f.name, (s if e.op == "==" else frozenset(range(k)) - s)
    if isinstance(e, ir.InSet):
        f = _feature(fs, e.item)
        if f is None or _is_numeric(f):
            return None
        k = len(f.values())
        s = frozenset(_const_index(f, v) for v in e.values)
        return f.name, (frozenset(range(k)) - s if e.negated else s)
    if isinstance(e, ir.NotE):
        inner = _literal(fs, e.arg)
        if inner is None:
            return None
        f = fs.get(inner[0])
        return inner[0], frozenset(range(len(f.values()))) - inner[1]
    return None


def _linear(fs, e):
    """(weights: feature -> {value index: Fraction}, constant Fraction) of a linear expression."""
    if isinstance(e, ir.Const):
        if isinstance(e.value, bool):
            return {}, Fraction(int(e.value))
        if isinstance(e.value, (int, float)):
            return {}, Fraction(repr(e.value)) if isinstance(e.value, float) else Fraction(e.value)
        raise _NotLinear(f"the constant {e.value!r}")
    lit = _literal(fs, e)
    if lit is not None:
        return {lit[0]: {i: Fraction(1) for i in lit[1]}}, Fraction(0)
    if isinstance(e, ir.FeatureRef):
        raise _NotLinear(f"numeric feature '{e.feature}' (a linear rule weighs bool features and category tests; "
                         f"compare numeric features with thresholds instead)")
    if isinstance(e, ir.ArithE):
        wa, ca = _linear(fs, e.left)
        wb, cb = _linear(fs, e.right)
        if e.op in ("+", "-"):
            s = 1 if e.op == "+" else -1
            out = {f: dict(w) for f, w in wa.items()}
            for f, w in wb.items():
                d = out.setdefault(f, {})
                for i, x in w.items():
                    d[i] = d.get(i, Fraction(0)) + s * x
            return out, ca + s * cb
        if e.op == "*":
            if not wa:
                return {f: {i: ca * x for i, x in w.items()} for f, w in wb.items()}, ca * cb
            if not wb:
                return {f: {i: cb * x for i, x in w.items()} for f, w in wa.items()}, ca * cb
            raise _NotLinear("a product of two features")
        if e.op == "/" and not wb:
            if cb == 0:
                raise _NotLinear("a division by zero")
            return {f: {i: x / cb for i, x in w.items()} for f, w in wa.items()}, ca / cb
        raise _NotLinear(f"the operator '{e.op}'")
    raise _NotLinear(f"a {type(e).__name__}")


def _threshold_atom(fs, e) -> Threshold | None:
    """A :class:`Threshold` for ``numeric_feature OP constant`` (either order), else None."""
    if not (isinstance(e, ir.Cmp) and e.op in _OPS):
        return None
    a, b, op = e.left, e.right, e.op
    if isinstance(a, ir.Const) and isinstance(b, ir.FeatureRef):
        a, b, op = b, a, {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]
    f = _feature(fs, a)
    if f is None or not _is_numeric(f) or not isinstance(b, ir.Const) or isinstance(b.value, bool):
        return None
    return Threshold(f.name, op, float(b.value))


def _formula(fs, e) -> Formula:
    """The rule as a formula over the frozen nodes of :mod:`fairspec.backends.boolean`."""
    lit = _literal(fs, e)
    if lit is not None:
        return Test(*lit)
    if isinstance(e, ir.Const) and isinstance(e.value, bool):
        return Constant(bool(e.value))
    thr = _threshold_atom(fs, e)
    if thr is not None:
        return thr
    if isinstance(e, ir.Logic):
        return (And if e.op == "and" else Or)(tuple(_formula(fs, a) for a in e.args))
    if isinstance(e, ir.NotE):
        return Not(_formula(fs, e.arg))
    if isinstance(e, ir.Cmp) and e.op in _OPS:
        try:
            W, T = _linear_constraint(fs, e)
        except _NotLinear as x:
            raise Unsupported(f"the rule cannot be put in Boolean form: it uses {x}") from None
        return Linear(tuple((f, tuple(w)) for f, w in W.items()), T)
    if isinstance(e, ir.Cmp):
        t = _threshold_atom(fs, dataclasses.replace(e, op=">="))
        if t is not None:
            raise Unsupported(f"the rule tests '{t.feature} {e.op} {_spec_number(t.value)}', which has probability 0 (or 1) under a "
                              f"binned distribution; compare numeric features with <, <=, > or >=")
    raise Unsupported(f"the rule cannot be put in Boolean form: it uses a {type(e).__name__}")


def _linear_constraint(fs, e: ir.Cmp):
    """``lhs OP rhs`` as integer weights per value and T with ``sum_f W_f[x_f] >= T``."""
    wl, cl = _linear(fs, e.left)
    wr, cr = _linear(fs, e.right)
    w = {f: dict(x) for f, x in wl.items()}
    for f, x in wr.items():
        d = w.setdefault(f, {})
        for i, v in x.items():
            d[i] = d.get(i, Fraction(0)) - v
    c = cl - cr                                    # sum w + c OP 0
    dens = [c.denominator] + [v.denominator for d in w.values() for v in d.values()]
    L = math.lcm(*dens) if dens else 1
    W = {}
    for f, d in w.items():
        k = len(fs.get(f).values())
        W[f] = [int(d.get(i, 0) * L) for i in range(k)]
    T = int(-c * L)
    if e.op == ">=":
        return W, T
    if e.op == ">":
        return W, T + 1
    neg = {f: [-x for x in v] for f, v in W.items()}
    if e.op == "<=":
        return neg, -T
    return neg, -T + 1


def _formula_features(node: Formula, out):
    if isinstance(node, (Test, Threshold)):
        out.setdefault(node.feature, None)
    elif isinstance(node, Linear):
        for f in node.features:
            out.setdefault(f, None)
    elif isinstance(node, Not):
        _formula_features(node.arg, out)
    elif isinstance(node, (And, Or)):
        for a in node.args:
            _formula_features(a, out)
    return out


def _threshold_needs(fs, node: Formula, out):
    if isinstance(node, Threshold):
        out.setdefault(node.feature, []).append(_edge_need(fs.get(node.feature), node.op, node.value))
    elif isinstance(node, Not):
        _threshold_needs(fs, node.arg, out)
    elif isinstance(node, (And, Or)):
        for a in node.args:
            _threshold_needs(fs, a, out)
    return out


def _edge_need(f: ir.Feature, op: str, t: float):
    """(lo, hi, preferred): an edge e in [lo, hi) (or e == lo when lo == hi) makes ``f OP t`` a union of bins.

    Real features: e = t (``x > t`` and ``x >= t`` differ on a set of probability
    0).  Integer features: ``x >= m`` is ``x > e`` for any e in [m - 1, m)."""
    if isinstance(f.domain, ir.IntRange):
        m = math.floor(t) + 1 if op in (">", "<=") else math.ceil(t)
        return (float(m - 1), float(m), float(m - 1))
    return (t, t, t)


def rule_form(rule: ir.Expr, fs: ir.FeatureSet) -> Form:
    """A rule model in Boolean form: a top-level linear threshold over bool
    features and category tests is a linear rule; anything else in and/or/not
    over tests is converted to CNF (numeric tests become tests on bins)."""
    if isinstance(rule, ir.Cmp) and rule.op in _OPS and _threshold_atom(fs, rule) is None:
        try:
            W, T = _linear_constraint(fs, rule)
        except _NotLinear as x:
            raise Unsupported(f"the rule cannot be put in Boolean form: it uses {x}") from None
        # the linear rule adds int64 weights: numbers that, over one common denominator, need more bits
        # (P + Q >= 1e-22, a threshold of 1e23) are refused, never an OverflowError in the backend
        big = max([abs(T), *(abs(x) for w in W.values() for x in w)])
        if big * (len(W) + 1) >= 2 ** 62:
            raise Unsupported("the rule's numbers, written as integers over one common denominator, do not fit "
                              "64 bits (a tiny or huge constant): round them to fewer digits")
        reads = tuple(f for f, w in W.items() if len(set(w)) > 1)

        def build(variables, ctx, rows, codes):
            from fairspec.backends.boolean.forms import linear_rule
            return linear_rule({f: w for f, w in W.items()}, T, variables)

        return Form("linear", reads, {}, build, info={"from": "rule"})
    node = _formula(fs, rule)
    reads = tuple(_formula_features(node, {}))
    needs = _threshold_needs(fs, node, {})

    def build(variables, ctx, rows, codes):
        from fairspec.backends.boolean.forms import CNFRule
        ints = {f.name for f in fs.features if isinstance(f.domain, ir.IntRange)}
        clauses = _cnf(node, True, variables, ints)
        out = [[(Test(f, s), True) for f, s in sorted(c.items())] for c in clauses]
        return CNFRule(out, variables)

    return Form("cnf", reads, needs, build, info={"from": "rule"})


def _resolve_threshold(var: Variable, op: str, t: float, f_is_int: bool) -> frozenset:
    """The bins where ``x OP t`` holds."""
    if var.bins is None:
        raise DistributionError(f"feature '{var.name}' is compared with {_spec_number(t)} but has no bins")
    if f_is_int:
        m = math.floor(t) + 1 if op in (">", "<=") else math.ceil(t)
        e = next((x for x in var.bins.edges if m - 1 <= x < m), None)
        if e is None:
            raise DistributionError(f"the bins of '{var.name}' have no edge in [{m - 1}, {m}) to decide "
                                    f"'{var.name} {op} {_spec_number(t)}'; add {m - 1} as a bin edge")
    else:
        e = t
    j = var.bins.upper_index(e, var.name)            # x > e  <=>  bin >= j
    above = frozenset(range(j, var.k))
    return above if op in (">", ">=") else frozenset(range(var.k)) - above


def _cnf(node: Formula, positive: bool, variables, ints=frozenset()) -> list[dict]:
    if isinstance(node, Constant):
        val = node.value if positive else not node.value
        return [] if val else [{}]
    if isinstance(node, (Test, Threshold)):
        f = node.feature
        if f not in variables:
            raise DistributionError(f"the distribution does not cover feature '{f}', which the classifier reads")
        var = variables[f]
        if isinstance(node, Test):
            s = frozenset(node.values)
        else:
            s = _resolve_threshold(var, node.op, node.value, f in ints)
        if not positive:
            s = frozenset(range(var.k)) - s
        return _clauses([{f: s}], variables)
    if isinstance(node, Not):
        return _cnf(node.arg, not positive, variables, ints)
    if isinstance(node, Linear):
        return _lin_cnf(node.weight_map(), node.threshold, positive, variables)
    if not isinstance(node, (And, Or)):
        raise TypeError(f"not a Boolean-form formula node: {node!r}")
    conj = isinstance(node, And) == positive
    parts = [_cnf(a, positive, variables, ints) for a in node.args]
    if conj:
        return _clauses([c for p in parts for c in p], variables)
    out = [{}]
    for p in parts:
        if not p:                   # a true disjunct: the disjunction is true
            return []
        nxt = []
        for c1 in out:
            for c2 in p:
                m = dict(c1)
                for f, s in c2.items():
                    m[f] = m.get(f, frozenset()) | s
                nxt.append(m)
        out = _clauses(nxt, variables)
        if len(out) > MAX_CLAUSES:
            raise Unsupported(f"the rule's conjunctive normal form has more than {MAX_CLAUSES} clauses")
    return out


def _clauses(cs, variables) -> list[dict]:
    """Drop empty literals and tautological / duplicate clauses."""
    out, seen = [], set()
    for c in cs:
        c = {f: s for f, s in c.items() if s}
        if any(len(s) >= variables[f].k for f, s in c.items()):
            continue
        key = frozenset(c.items())
        if key in seen:
            continue
        seen.add(key)
        out.append(c)
    return out


def _lin_cnf(W, T, positive, variables):
    """A linear constraint inside a Boolean formula, as CNF by its truth table."""
    feats = [f for f in W if f in variables]
    for f in W:
        if f not in variables:
            raise DistributionError(f"the distribution does not cover feature '{f}', which the classifier reads")
    ks = [variables[f].k for f in feats]
    if int(np.prod(ks)) > MAX_TABLE:
        raise Unsupported("a linear test nested inside and/or/not reads too many values to put in Boolean form; "
                          "write the linear rule on its own")
    out = []
    for vals in itertools.product(*[range(k) for k in ks]):
        s = sum(W[f][v] for f, v in zip(feats, vals))
        holds = s >= T
        if holds != positive:       # forbid this assignment
            out.append({f: frozenset(range(variables[f].k)) - {v} for f, v in zip(feats, vals)})
    return _clauses(out, variables)


# --------------------------------------------------------------------------- scikit-learn


def _columns(enc: ir.Encoding, fs: ir.FeatureSet):
    """(Column per model input, feature -> substitute Variable for code-encoded features)."""
    from fairspec.backends.boolean.forms import Column
    cols = []
    code_vars = {}
    for c in sorted(enc.columns, key=lambda c: c.offset):
        f = fs.get(c.feature)
        if c.kind == "onehot":
            var = _variable(f)
            cols.extend(Column(c.feature, value=var.values[i]) for i in range(c.width))
        elif c.kind == "minmax" and c.scale is not None:    # v * scale + shift == (v - offset) / (1 / scale)
            cols.append(Column(c.feature, None, offset=-float(c.shift) / float(c.scale), scale=1.0 / float(c.scale)))
        elif c.kind == "minmax":
            cols.append(Column(c.feature, None, offset=float(c.lo), scale=float(c.hi) - float(c.lo)))
        elif c.kind == "standard":
            cols.append(Column(c.feature, None, offset=float(c.mean), scale=float(c.std)))
        elif c.kind == "code":
            cols.append(Column(c.feature, None))
            code_vars[c.feature] = Variable(c.feature, tuple(float(x) for x in c.codes))
        else:
            cols.append(Column(c.feature, None))
    return cols, code_vars


def _model_variables(variables, code_vars, fs):
    """The variables as the model's columns read them: code-encoded categories by their codes
    (bools (False, True) already read as 0/1)."""
    out = dict(variables)
    for f, v in code_vars.items():
        if f in out:
            out[f] = v
    return out


MAX_COMPILED_LEAVES = 4096


def _compiled(model: ir.Model, trees, cols, fs: ir.FeatureSet, decide=None, code_vars=None, enc=None):
    """A forest's or boosted model's decision as one decision tree over the model's inputs
    (:mod:`fairspec.backends.trees.compile`), within the encoded domain (a code-encoded column: its
    codes as written, ``code {false = 0.3, true = 1.7}`` too); Unsupported when its Boolean form would
    have more than MAX_COMPILED_LEAVES leaves."""
    from fairspec.backends.trees.compile import TooLarge, compile_decision

    from fairspec.backends.boolean.split_points import boxes

    lo, hi = np.full(len(cols), -np.inf), np.full(len(cols), np.inf)
    fed_boxes = boxes(enc, fs, len(cols)) if enc is not None else {}
    for i, c in enumerate(cols):
        f = fs.get(c.feature)
        if c.value is not None:                       # one-hot column: 0 or 1
            lo[i], hi[i] = -0.5, 1.0
            continue
        if code_vars and c.feature in code_vars:
            # the codes the column holds (session 36, h6: the box was (-0.5, k - 1], which a code of 1.7 or
            # 2.9 lies outside, so the cuts above k - 1 were dropped and such points decided by the wrong side)
            codes = [float(x) for x in code_vars[c.feature].values]
            lo[i], hi[i] = float(np.nextafter(min(codes), -np.inf)), max(codes)
        elif i in fed_boxes:
            # the domain's ends as the runtime's encoder feeds them (split_points.box; (lo - mean) / std in
            # Python could differ from the encoder's float by a rounding: MinMaxScaler's v * scale + shift)
            lo[i], hi[i] = fed_boxes[i]
        elif f is not None and f.is_discrete:
            lo[i], hi[i] = -0.5, float(len(f.values()) - 1)
    try:
        return compile_decision(trees, lo, hi, MAX_COMPILED_LEAVES, decide=decide)
    except TooLarge:
        raise Unsupported(f"model '{model.name}' ({len(trees.trees)} trees) has no small Boolean form: its decision "
                          f"as one decision tree needs more than {MAX_COMPILED_LEAVES} leaves; measure it on data "
                          f"instead (data = DATA)") from None


def _sklearn_form(model: ir.Model, ctx, fs: ir.FeatureSet) -> Form:
    loaded = ctx.model(model.name)
    est = getattr(loaded, "raw", None)
    enc = ctx.encoding(model.name)
    cols, code_vars = _columns(enc, fs)
    classes = list(getattr(est, "classes_", [0, 1]))
    positive = None
    if getattr(loaded, "method", None) == "predict_proba" and loaded.index is not None and len(classes) == 2:
        positive = classes[loaded.index]
    name = type(est).__name__
    # every tree model (a decision tree too) compiled: cuts where the library sends inputs (its
    # float32 casts), boxes at the threshold decided by its predict
    from fairspec.models.network import UnsupportedModel

    try:
        trees = loaded.tree_ensemble()
    except UnsupportedModel as e:
        raise Unsupported(f"model '{model.name}': {e.message}") from e
    if trees is not None:
        from fairspec.backends.trees.runtime import runtime_outputs

        # boxes at the decision threshold are decided by the library's own predict
        est, positive = _compiled(model, trees, cols, fs,
                                  decide=lambda X: runtime_outputs(loaded, X, "label"), code_vars=code_vars,
                                  enc=enc), 1
        from fairspec.backends.boolean.split_points import in_raw_units

        # each numeric cut read on the raw values the runtime feeds below / above it, not its rounded image
        est, cols = in_raw_units(est, cols, enc, fs)
        name = f"{name} compiled into one decision tree ({est.tree_.n_leaves} leaves)"
    if hasattr(est, "tree_") and hasattr(est, "classes_"):
        from fairspec.backends.boolean.forms import tree_from_sklearn, tree_split_points
        t = est.tree_
        if t.n_features != len(cols):
            raise Unsupported(f"tree '{model.name}' reads {t.n_features} columns, its encoding gives {len(cols)}")
        used = sorted({int(i) for i in t.feature[t.children_left != -1]})
        reads = tuple(dict.fromkeys(cols[i].feature for i in used))
        needs = {}
        ints = set()
        for f, ts in tree_split_points(est, cols).items():
            feat = fs.get(f)
            if feat is not None and _is_numeric(feat) and f not in code_vars:
                if isinstance(feat.domain, ir.IntRange):
                    # on whole numbers x > t is x > floor(t): an integer edge, not t's float noise
                    ints.add(f)
                    needs[f] = sorted({(float(math.floor(x)), float(math.floor(x)) + 1.0, float(math.floor(x)))
                                       for x in ts})
                else:
                    needs[f] = [(x, x, x) for x in ts]

        def build(variables, ctx_, rows, codes):
            mv = _model_variables(variables, code_vars, fs)
            for f in ints:
                v = mv.get(f)
                if v is not None and v.bins is not None:
                    mv[f] = Variable(v.name, v.values, _IntBins(v.bins.edges, v.bins.means))
            tree = tree_from_sklearn(est, cols, mv, positive_class=positive)
            tree.variables = dict(variables)
            return tree

        return Form("tree", reads, needs, build, source="sklearn", info={"model": name})
    coef = getattr(est, "coef_", None)
    if coef is not None and np.ndim(coef) >= 1 and (np.ndim(coef) == 1 or np.shape(coef)[0] == 1):
        from fairspec.backends.boolean.forms import linear_from_sklearn
        w = np.asarray(coef, dtype=float).reshape(-1)
        if len(w) != len(cols):
            raise Unsupported(f"model '{model.name}' reads {len(w)} columns, its encoding gives {len(cols)}")
        reads = tuple(dict.fromkeys(c.feature for c, x in zip(cols, w) if x != 0))

        def build(variables, ctx_, rows, codes):
            mv = _model_variables(variables, code_vars, fs)
            X = cd = None
            if rows is not None:
                X = ctx_.model_input(model.name, rows.frame.values, rows.frame.n_rows)
                cd = codes if codes is not None else _codes_for(variables, rows, fs)
            rule = linear_from_sklearn(est, cols, mv, X=X, codes=cd,
                                       multiplier=None if X is not None else 100, positive_class=positive)
            rule.variables = dict(variables)
            rule.support = support_agreement(est, rule, reads, variables, fs, ctx_, model.name, positive)
            return rule

        return Form("linear", reads, {}, build, exact=False, source="sklearn", info={"model": name})
    raise Unsupported(f"model '{model.name}' is a scikit-learn {name}; over a distribution fairspec verifies "
                      f"decision trees and linear models (and rules); measure it on data instead (data = DATA)")


@dataclass(frozen=True)
class _IntBins(Bins):
    """Bins of a whole-number feature: a tree's ``x > t`` is decided by any edge in [floor(t), floor(t) + 1)."""

    def upper_index(self, threshold: float, feature: str = "feature") -> int:
        m = math.floor(float(threshold)) + 1
        for j, e in enumerate(self.edges):
            if m - 1 <= e < m:
                return j + 1
        return super().upper_index(threshold, feature)


def _codes_for(variables, rows, fs):
    """Value indices of the rows for discrete variables (a declared table: no bins)."""
    out = {}
    for n in variables:
        f = fs.get(n)
        if f is not None and f.is_discrete:
            out[n] = np.asarray(rows.frame.values[n]).astype(np.int64)
    return out


