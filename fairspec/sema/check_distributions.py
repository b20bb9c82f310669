"""Semantic analysis, the distribution declarations (part of fairspec.sema.check's Checker): the
distribution's kind and parameters, its data or its table (whose probabilities must sum to 1)."""

from __future__ import annotations

from fairspec import ir
from fairspec.sema.decl import Decl
from fairspec.sema.exprs import did_you_mean
from fairspec.syntax import ast
from fairspec.syntax.literals import number as _spec_number  # a spec number, read back exactly


class DistributionChecks:
    """The Checker's distributions part: `distribution` declarations (named or inline)."""

    def _distribution(self, d: Decl) -> None:
        node: ast.DistributionDecl = d.node
        if node.fn is None:
            rows = []
            for e in node.entries:
                if not 0.0 <= e.prob <= 1.0:
                    self.sink.add("FS309", f"probability {e.prob} is outside [0, 1]", e.span)
                    continue
                rows.append(ir.CptRow(e.target.feature.id, e.target.value,
                                      tuple((g.feature.id, g.value) for g in e.given), e.prob))
            self._table_sums(node, rows)
            self.distributions[node.name.id] = ir.Distribution(node.name.id, "table", table=tuple(rows), span=node.span)
            return
        kinds = ("empirical", "independent", "conditional", "bayes")
        if node.fn.id not in kinds:
            self.fail("FS209", f"unknown distribution '{node.fn.id}'", node.fn.span,
                      hint=did_you_mean(node.fn.id, kinds) or f"distributions are {', '.join(kinds)}")
        pos = [a for a in node.args if a.kind == "pos"]
        if len(pos) != 1 or not isinstance(pos[0].value, ast.Name):
            self.fail("FS305", f"{node.fn.id}(...) takes the data set it is estimated from", node.span)
        data = self._lookup(pos[0].value, ast.DataDecl, "a data set", self.datasets)
        params = []
        allowed = DISTRIBUTION_PARAMS.get(node.fn.id, {})
        for a in node.args:
            if a.kind in ("kw", "clause"):
                v = a.value
                if a.name.id not in allowed:
                    self.fail("FS208", f"{node.fn.id}(...) has no parameter '{a.name.id}'", a.name.span,
                              hint=did_you_mean(a.name.id, allowed)
                              or (f"parameters: {', '.join(sorted(allowed))}" if allowed else None))
                if isinstance(v, (ast.Num, ast.Str, ast.BoolLit)):
                    params.append((a.name.id, v.value))
                elif isinstance(v, ast.Name):
                    params.append((a.name.id, v.id))
                else:
                    self.fail("FS301", f"'{a.name.id}' must be a constant", v.span)
                check = allowed[a.name.id]
                if not check(params[-1][1]):
                    self.fail("FS307", f"{a.name.id} = {_shown(params[-1][1])} is not allowed: "
                                       f"{DISTRIBUTION_PARAM_WORDS[a.name.id]}", v.span)
        self.distributions[node.name.id] = ir.Distribution(node.name.id, node.fn.id, data.name, tuple(params),
                                                           span=node.span)

    def inline_distribution(self, node: ast.DistributionDecl) -> None:
        """A distribution written inside a property (``distribution = bayes(DATA)``)."""
        self._distribution(Decl(node, self.root.parent))

    def _table_sums(self, node: ast.DistributionDecl, rows: list) -> None:
        """FS310: the probabilities of one feature's values under one condition must sum to 1
        (to at most 1 while a value is left out: it gets the rest)."""
        names = {r.feature for r in rows} | {g for r in rows for g, _ in r.given}
        fs = next((fs for fs in self.feature_sets.values() if all(fs.get(n) for n in names)), None)
        groups: dict = {}
        for r, e in zip(rows, [e for e in node.entries if 0.0 <= e.prob <= 1.0]):
            groups.setdefault((r.feature, frozenset(r.given)), []).append((r, e))
        for (feature, given), items in groups.items():
            total = sum(r.prob for r, _ in items)
            values = {r.value for r, _ in items}
            f = fs.get(feature) if fs is not None else None
            if f is not None and isinstance(f.domain, ir.Boolean) or values <= {True, False}:
                complete = values == {True, False}
            elif f is not None and isinstance(f.domain, ir.Categorical):
                complete = {str(v) for v in values} >= {str(c) for c in f.domain.categories}
            else:
                complete = False
            if total > 1.0 + 1e-6 or (complete and abs(total - 1.0) > 1e-6):
                cond = (" given " + ", ".join(ir.event_text(g, v) for g, v in items[0][0].given)) if given else ""
                self.sink.add("FS310", f"the probabilities of '{feature}'{cond} sum to {_sum(total)}, not 1",
                              items[-1][1].span)


def _whole(lo):
    return lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and float(v).is_integer() and v >= lo


_BAYES_PARAMS = {"bins": _whole(1), "max_parents": _whole(0), "max_iter": _whole(1),
                 "score": lambda v: v in ("k2", "bic"),
                 "alpha": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0}


DISTRIBUTION_PARAMS = {
    "empirical": {},
    "independent": {k: _BAYES_PARAMS[k] for k in ("bins", "alpha")},
    "conditional": {k: _BAYES_PARAMS[k] for k in ("bins", "alpha")},
    "bayes": _BAYES_PARAMS,
}


DISTRIBUTION_PARAM_WORDS = {
    "bins": "the number of quantile bins of numeric features, a whole number >= 1",
    "max_parents": "the largest number of parents of a node, a whole number >= 0",
    "max_iter": "the number of hill-climbing steps, a whole number >= 1",
    "score": "the network score, k2 or bic",
    "alpha": "the Laplace smoothing of the probability tables, a number >= 0",
}


def _shown(v) -> str:
    return f'"{v}"' if isinstance(v, str) and not v.isidentifier() else str(v)


def _sum(total: float) -> str:
    """A table's sum as it is, to 12 digits (the float noise of adding the written numbers dropped):
    ``{:g}`` printed 1.0000015 as "1", and FS310 said the probabilities "sum to 1, not 1"."""
    return _spec_number(round(total, 12))
