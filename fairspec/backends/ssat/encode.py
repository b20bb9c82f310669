"""CNF encodings for SSAT: a Bayesian network (FVGM appendix F) and a classifier.

Variables of the distribution
-----------------------------
* A *random* Boolean root X: one random variable x with Pr[x] = Pr[X = 1].
* A random variable with k > 2 values (a binned or categorical feature) uses
  the *order encoding*: defined variables o_j == [X >= j] (j = 1..k-1) with
  o_j -> o_{j-1}, and for every parent assignment u and level j a random
  selector lambda_{j,u} with Pr = Pr[X >= j | X >= j-1, u]:
      U and o_{j-1} and lambda  -> o_j        U and o_{j-1} and not lambda -> not o_j
  (U is the conjunction of the parents' value literals).  This is FVGM's
  appendix F (indicator lambda_v,u with clauses (6)-(7)) generalised from
  Boolean to ordered multi-valued variables; with k = 2 it is exactly (6)-(7).
  A decision-tree threshold ``x > t`` is the order literal o_j itself, so the
  implications between thresholds on one feature are part of the encoding.
* Deterministic table entries (0 or 1) give clauses without a selector.
* A *choice* (protected) attribute: one outer variable per value (one-hot,
  exactly-one by a python-sat cardinality encoding) or a single variable when
  Boolean.  Its own table is never used: a PPV conditions on the group.

Classifier
----------
* tree: one clause per leaf of the other class (Justicia 3.4);
* CNF rule: its clauses; the negation by a (full, hence *defined*) Tseitin
  encoding;
* linear rule: sum_f w_f[x_f] >= t as a reduced multi-valued decision
  diagram read off the order (or one-hot) literals, nodes merged by bound
  intervals (``pb_encoding="mdd"``, the default), or written over order
  literals by telescoping (sum_v w[v][X=v] = w[0] + sum_j (w[j]-w[j-1]) [X>=j])
  and encoded with python-sat's ``PBEnc`` (its auxiliaries are inner
  existentials).  The negation is the rule ``clf.negated()``.
"""

from __future__ import annotations

import itertools
from typing import Mapping, Sequence

import numpy as np

from fairspec.analyses.distribution import BayesNet, DistributionError
from fairspec.backends.boolean import CNFRule, DecisionTree, LinearRule, Test
from fairspec.backends.ssat.formula import SSATFormula

__all__ = ["Encoder", "TRUE", "FALSE"]

TRUE = "T"
FALSE = "F"
_EPS = 1e-12


class Encoder:
    """Builds one SSAT formula from a network, the choice attributes and a classifier.

    ``choice`` names the protected attributes; ``choice_kind`` is "E" (learn the
    most favoured group, or enumerate with unit assumptions) or "A" (UR-SSAT;
    needs ``choice_encoding="log"`` for attributes with more than two values,
    since a universal player would break an exactly-one constraint).
    """

    def __init__(self, bn: BayesNet, choice: Sequence[str] = (), choice_kind: str = "E",
                 choice_encoding: str = "onehot", pb_encoding: str = "mdd",
                 batch: Sequence[BayesNet] | None = None):
        self.bn = bn
        # batch: networks with bn's structure; random variables get one probability per network
        self.batch = list(batch) if batch is not None else None
        self.choice = list(choice)
        self.choice_kind = choice_kind
        self.choice_encoding = choice_encoding
        self.pb_encoding = pb_encoding
        self.f = SSATFormula()
        self.order_vars: dict[str, list] = {}     # random k>2: [None, o_1..o_{k-1}]
        self.bool_var: dict[str, int] = {}        # Boolean random or choice: var of X = 1
        self.onehot: dict[str, list] = {}         # choice k>2: [e_0..e_{k-1}]
        self.eq_cache: dict = {}
        self.in_cache: dict = {}
        self.encoded: set = set()
        self.bn_clauses: list = []
        bn.check_choice(self.choice)
        if choice_kind == "A" and choice_encoding == "onehot":
            for a in self.choice:
                if bn.variables[a].k > 2:
                    raise DistributionError(
                        f"a universal choice over '{a}' ({bn.variables[a].k} values) needs the log encoding")

    # ------------------------------------------------------------------ helpers

    def _add(self, lits, store=None):
        out = []
        for l in lits:
            if l is TRUE or l == TRUE:
                return
            if l is FALSE or l == FALSE:
                continue
            out.append(int(l))
        c = tuple(dict.fromkeys(out))
        if any(-l in c for l in c):
            return
        self.f.add(c)
        if store is not None:
            store.append(c)

    @staticmethod
    def neg(l):
        if l == TRUE:
            return FALSE
        if l == FALSE:
            return TRUE
        return -l

    def _define_and(self, lits, name=None):
        """A defined variable t <-> and(lits)."""
        lits = [l for l in lits if l != TRUE]
        if any(l == FALSE for l in lits):
            return FALSE
        if not lits:
            return TRUE
        if len(lits) == 1:
            return lits[0]
        t = self.f.new_var("D", name=name)
        for l in lits:
            self._add([-t, l], self.bn_clauses)
        self._add([t] + [-l for l in lits], self.bn_clauses)
        return t

    def _define_or(self, lits, name=None):
        return self.neg(self._define_and([self.neg(l) for l in lits], name))

    # ------------------------------------------------------------------ variables

    def encode_network(self, names: Sequence[str]):
        """Encode the named variables and all their ancestors."""
        anc = self.bn.ancestors(names)
        for n in self.bn.order:
            if n in anc and n not in self.encoded:
                self._encode_var(n)

    def _table(self, n):
        """The CPT of n with a leading batch axis (length 1 without a batch)."""
        if self.batch is None:
            return self.bn.cpts[n][None]
        return np.stack([b.cpts[n] for b in self.batch])

    def _prob(self, q):
        """A scalar probability, or the batch vector."""
        return float(q[0]) if self.batch is None else np.array(q, dtype=float)

    def _encode_var(self, n):
        var = self.bn.variables[n]
        self.encoded.add(n)
        if n in self.choice:
            if var.k == 2:
                self.bool_var[n] = self.f.new_var(self.choice_kind, name=f"{n}")
            elif self.choice_encoding == "onehot":
                es = [self.f.new_var(self.choice_kind, name=f"{n}={v}") for v in var.values]
                if var.k <= 8:
                    # exactly one, pairwise (the clauses of CardEnc.equals(..., pairwise),
                    # written here to spare the 0.3 s import of python-sat)
                    self._add(es, self.bn_clauses)
                    for x, y in itertools.combinations(es, 2):
                        self._add([-x, -y], self.bn_clauses)
                else:
                    from pysat.card import CardEnc, EncType
                    cnf = CardEnc.equals(lits=es, bound=1, top_id=self.f.nv, encoding=EncType.seqcounter)
                    self.f.reserve(max(self.f.nv, cnf.nv), kind=self.choice_kind)
                    for c in cnf.clauses:
                        self._add(c, self.bn_clauses)
                self.onehot[n] = es
            elif self.choice_encoding == "log":
                bits = max(1, int(np.ceil(np.log2(var.k))))
                bs = [self.f.new_var(self.choice_kind, name=f"{n}#b{i}") for i in range(bits)]
                codes: dict[int, list] = {}
                for code in range(2 ** bits):
                    codes.setdefault(code % var.k, []).append(code)
                eqs = []
                for v in range(var.k):
                    terms = []
                    for code in codes[v]:
                        terms.append(self._define_and([bs[i] if (code >> i) & 1 else -bs[i] for i in range(bits)]))
                    eqs.append(self._define_or(terms, name=f"{n}={var.values[v]}"))
                self.onehot[n] = eqs
            else:
                raise ValueError(f"unknown choice encoding {self.choice_encoding!r}")
            return
        pa = self.bn.parents[n]
        cpt = self._table(n)                       # (batch, parent dims..., k)
        rows = list(itertools.product(*[range(self.bn.variables[p].k) for p in pa]))
        if var.k == 2 and not pa:
            p1 = cpt[:, 1]
            if np.all(p1 <= _EPS):
                self.bool_var[n] = self.f.new_var("D", name=n)
                self._add([-self.bool_var[n]], self.bn_clauses)
            elif np.all(p1 >= 1 - _EPS):
                self.bool_var[n] = self.f.new_var("D", name=n)
                self._add([self.bool_var[n]], self.bn_clauses)
            else:
                self.bool_var[n] = self.f.new_var("R", self._prob(p1), name=n)
            return
        # order encoding (k == 2 with parents is the same with one level)
        os_ = [None] + [self.f.new_var("D", name=f"{n}>={j}") for j in range(1, var.k)]
        self.order_vars[n] = os_
        if var.k == 2:
            self.bool_var[n] = os_[1]
        for j in range(2, var.k):
            self._add([-os_[j], os_[j - 1]], self.bn_clauses)
        # tails[..., j] = Pr[X >= j | u] for every batch entry and parent row u
        flat = cpt.reshape(cpt.shape[0], -1, var.k)                      # (batch, rows, k)
        tails = np.concatenate([np.cumsum(flat[:, :, ::-1], axis=2)[:, :, ::-1],
                                np.zeros(flat.shape[:2] + (1,))], axis=2)
        live = tails[:, :, :-2] > _EPS                                    # level j=1..k-1 reachable
        with np.errstate(invalid="ignore", divide="ignore"):
            q = np.where(live, tails[:, :, 1:-1] / np.where(live, tails[:, :, :-2], 1.0), 0.0)
        q = np.clip(q, 0.0, 1.0)                                          # (batch, rows, k-1)
        any_live = live.any(axis=0)
        all_zero = np.all(np.where(live, q <= _EPS, True), axis=0)
        all_one = np.all(np.where(live, q >= 1 - _EPS, True), axis=0)
        for r, u in enumerate(rows):
            U = [self.lit_eq(p, ui) for p, ui in zip(pa, u)]
            if any(l == FALSE for l in U):
                continue
            negU = [self.neg(l) for l in U]
            for j in range(1, var.k):
                if not any_live[r, j - 1]:
                    continue   # X >= j-1 impossible under u: the previous level already forbids it
                prev = [-os_[j - 1]] if j > 1 else []
                if all_zero[r, j - 1]:
                    self._add(negU + prev + [-os_[j]], self.bn_clauses)
                elif all_one[r, j - 1]:
                    self._add(negU + prev + [os_[j]], self.bn_clauses)
                else:
                    lam = self.f.new_var("R", self._prob(q[:, r, j - 1]), name=f"lambda[{n}>={j}|{u}]")
                    self._add(negU + prev + [-lam, os_[j]], self.bn_clauses)
                    self._add(negU + prev + [lam, -os_[j]], self.bn_clauses)

    # ------------------------------------------------------------------ literals

    def lit_ge(self, n, j):
        """Literal of X >= j (value index)."""
        var = self.bn.variables[n]
        if j <= 0:
            return TRUE
        if j >= var.k:
            return FALSE
        if n not in self.encoded:
            self.encode_network([n])
        if n in self.order_vars:
            return self.order_vars[n][j]
        if n in self.bool_var:
            return self.bool_var[n]
        return self.lit_in(n, frozenset(range(j, var.k)))

    def lit_eq(self, n, v):
        """Literal of X == v (value index)."""
        var = self.bn.variables[n]
        if n not in self.encoded:
            self.encode_network([n])
        if n in self.bool_var:
            b = self.bool_var[n]
            return b if v == 1 else -b
        if n in self.onehot:
            return self.onehot[n][v]
        key = (n, v)
        if key in self.eq_cache:
            return self.eq_cache[key]
        if v == 0:
            lit = self.neg(self.lit_ge(n, 1))
        elif v == var.k - 1:
            lit = self.lit_ge(n, v)
        else:
            lit = self._define_and([self.lit_ge(n, v), self.neg(self.lit_ge(n, v + 1))], name=f"{n}={var.values[v]}")
        self.eq_cache[key] = lit
        return lit

    def lit_in(self, n, S):
        """Literal of X in S (a set of value indices)."""
        var = self.bn.variables[n]
        S = frozenset(int(s) for s in S)
        if not S:
            return FALSE
        if len(S) == var.k:
            return TRUE
        key = (n, S)
        if key in self.in_cache:
            return self.in_cache[key]
        if n not in self.encoded:
            self.encode_network([n])
        comp = frozenset(range(var.k)) - S
        s = sorted(S)
        if len(S) == 1:
            lit = self.lit_eq(n, s[0])
        elif len(comp) == 1:
            lit = self.neg(self.lit_eq(n, next(iter(comp))))
        elif n in self.order_vars and s == list(range(s[0], s[-1] + 1)):
            if s[-1] == var.k - 1:
                lit = self.lit_ge(n, s[0])
            elif s[0] == 0:
                lit = self.neg(self.lit_ge(n, s[-1] + 1))
            else:
                lit = self._define_and([self.lit_ge(n, s[0]), self.neg(self.lit_ge(n, s[-1] + 1))])
        else:
            lit = self._define_or([self.lit_eq(n, v) for v in s], name=f"{n} in {s}")
        self.in_cache[key] = lit
        return lit

    def lit_test(self, test: Test, polarity: bool = True):
        l = self.lit_in(test.feature, test.values)
        return l if polarity else self.neg(l)

    # ------------------------------------------------------------------ classifier

    def encode_classifier(self, clf, positive: bool = True) -> list:
        """Add the clauses of ``Yhat = 1`` (or ``Yhat = 0``); returns them."""
        self.bn.check_covers(clf.features)
        self.encode_network(list(clf.features))
        out: list = []
        if isinstance(clf, DecisionTree):
            for clause in clf.cnf(positive):
                self._add([self.lit_test(t, p) for t, p in clause], out)
        elif isinstance(clf, CNFRule):
            if positive:
                for clause in clf.clauses:
                    self._add([self.lit_test(t, p) for t, p in clause], out)
            else:
                ts = []
                for clause in clf.clauses:
                    lits = [self.lit_test(t, p) for t, p in clause]
                    ts.append(self._define_and([self.neg(l) for l in lits]))
                self._add(ts, out)
        elif isinstance(clf, LinearRule):
            rule = clf if positive else clf.negated()
            self._encode_linear(rule, out)
        else:
            raise TypeError(f"cannot encode classifier {clf!r}")
        return out

    def _encode_linear(self, rule: LinearRule, out: list):
        # features in the network's topological order (parents before children:
        # the order in which a search over the random variables can cache)
        pos = {n: i for i, n in enumerate(self.bn.order)}
        items = sorted(rule.weights.items(), key=lambda fw: pos.get(fw[0], len(pos)))
        if self.pb_encoding == "mdd":
            self._linear_mdd(items, rule.threshold, out)
            return
        terms: list = []
        const = 0
        for f, w in items:
            w = [int(x) for x in w]
            if all(x == w[0] for x in w):
                const += w[0]
                continue
            self.bn.check_covers([f])
            if f in self.onehot:
                lo = min(w)
                const += lo
                for v, x in enumerate(w):
                    if x != lo:
                        terms.append((self.lit_eq(f, v), x - lo))
            else:
                const += w[0]
                for j in range(1, len(w)):
                    d = w[j] - w[j - 1]
                    if d:
                        terms.append((self.lit_ge(f, j), d))
        bound = rule.threshold - const
        lits, weights = [], []
        for l, d in terms:
            if l == TRUE:
                bound -= d
                continue
            if l == FALSE:
                continue
            if d < 0:
                bound -= d            # d*l = d - d*(not l)
                lits.append(-l)
                weights.append(-d)
            else:
                lits.append(l)
                weights.append(d)
        if bound <= 0:
            return
        if bound > sum(weights):
            self._add([], out)
            return
        from pysat.pb import EncType, PBEnc
        enc = getattr(EncType, self.pb_encoding)
        cnf = PBEnc.atleast(lits=lits, weights=weights, bound=int(bound), top_id=self.f.nv, encoding=enc)
        self.f.reserve(max(self.f.nv, cnf.nv), kind="I")
        for c in cnf.clauses:
            self._add(c, out)

    def _ladder(self, f, w):
        """A feature as a ladder of exit tests: [(x_1, a_1), .., (x_m, a_m)], a_final.

        Walking down the rungs, the first true x_j means X contributes a_j;
        when every x_j is false X contributes a_final.  Order-encoded (and
        Boolean) features exit at x_j = not [X >= j] (valid because
        [X >= j] -> [X >= j-1] is part of the encoding); one-hot (and
        log-encoded) choice attributes exit at [X = j] (exactly one holds)."""
        k = len(w)
        if f in self.onehot:
            rungs = [(self.lit_eq(f, j), w[j]) for j in range(k - 1)]
        else:
            rungs = [(self.neg(self.lit_ge(f, j)), w[j - 1]) for j in range(1, k)]
        out = []
        final = w[k - 1]
        for x, a in rungs:
            if x == FALSE:
                continue
            if x == TRUE:
                final = a
                break
            out.append((x, a))
        return out, final

    def _linear_mdd(self, items, threshold, out):
        """sum_f w_f[X_f] >= threshold as a reduced multi-valued decision diagram.

        Feature by feature (in ``items`` order) a feature is a ladder of exit
        tests on its own literals (``_ladder``): the diagram reads X's value
        from its order (or one-hot) literals the way the search decides them,
        so a rung's two children are "X is this value" and "X is larger" --
        never a partial telescoped sum that no value has (the BDD over the
        telescoped order literals is up to twice as wide).  Nodes are merged by
        the interval of bounds they stand for (Abio et al.'s reduced PB-BDD,
        Een & Soerensson's interval construction): a node of rung j and feature
        i with interval [lo, hi] is every bound b in it.

        Node variables are inner existentials with one-directional clauses
        (n and x -> exit child, n and not x -> next rung), so a node off the
        current path occurs only negatively and disappears by pure-literal
        elimination; after a prefix of decisions the residual formula is the
        active node's sub-diagram -- a function of the partial sum only, which
        the solver's component cache recognises (FVGM's dynamic-programming
        state).  The random side gets branching priorities in this order."""
        import bisect
        feats = []
        bound = int(threshold)
        for f, w in items:
            w = [int(x) for x in w]
            if all(x == w[0] for x in w):
                bound -= w[0]
                continue
            self.bn.check_covers([f])
            lo = min(w)
            bound -= lo
            rungs, final = self._ladder(f, [x - lo for x in w])
            if not rungs:
                bound -= final
                continue
            feats.append((rungs, final))
        n = len(feats)
        suffix = [0] * (n + 1)
        for i in range(n - 1, -1, -1):
            rungs, final = feats[i]
            suffix[i] = suffix[i + 1] + max([final] + [a for _, a in rungs])
        if bound <= 0:
            return
        if bound > suffix[0]:
            self._add([], out)
            return
        INF = float("inf")
        # per (feature, rung): parallel sorted lists of interval starts and (lo, hi, node)
        memo = [[([], []) for _ in feats[i][0]] for i in range(n)]

        def boundary(i, b):
            if b <= 0:
                return TRUE, -INF, 0
            if b > suffix[i]:
                return FALSE, suffix[i] + 1, INF
            return rung(i, 0, b)

        def rung(i, j, b):
            rungs, final = feats[i]
            los, ents = memo[i][j]
            k = bisect.bisect_right(los, b) - 1
            if k >= 0 and ents[k][1] >= b:
                return ents[k][2], ents[k][0], ents[k][1]
            x, a = rungs[j]
            e, elo, ehi = boundary(i + 1, b - a)
            elo, ehi = elo + a, ehi + a
            if j + 1 < len(rungs):
                h, hlo, hhi = rung(i, j + 1, b)
            else:
                h, hlo, hhi = boundary(i + 1, b - final)
                hlo, hhi = hlo + final, hhi + final
            lo, hi = max(elo, hlo), min(ehi, hhi)
            if h == e:
                node = h
            else:
                node = self.f.new_var("I", name=f"mdd[{i}.{j},{lo}..{hi}]")
                self._add([-node, self.neg(x), e], out)
                self._add([-node, x, h], out)
            k = bisect.bisect_right(los, lo)
            los.insert(k, lo)
            ents.insert(k, (lo, hi, node))
            return node, lo, hi

        import sys
        depth = sum(len(r) for r, _ in feats)
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, 4 * depth + 1000))
        try:
            root, _, _ = boundary(0, bound)
        finally:
            sys.setrecursionlimit(old)
        self._add([root], out)
        self._rank_network([f for f, _ in items])

    def _rank_network(self, features):
        """Branching priorities for the random side of the network: the value
        variables (Boolean or order literals) of the features and of their
        ancestors in topological order, levels ascending -- the order in which
        ``_linear_mdd`` reads them, with the common parents (e.g. the label of
        Justicia's distribution) first.  Without it the search decides the
        features before their parents and no residual formula repeats."""
        anc = self.bn.ancestors([f for f in features if f in self.bn.variables])
        base = len(self.f.priority)
        i = 0
        for n in self.bn.order:
            if n not in anc or n in self.choice:
                continue
            if n in self.order_vars:
                vs = self.order_vars[n][1:]
            elif n in self.bool_var:
                vs = [self.bool_var[n]]
            else:
                vs = []
            for v in vs:
                if v not in self.f.priority:
                    self.f.priority[v] = base + i
                    i += 1

    # ------------------------------------------------------------------ groups

    def group_literals(self, group: Mapping[str, int]) -> list:
        """Unit literals fixing the protected attributes to a group (value indices)."""
        out = []
        for a, v in group.items():
            if a not in self.encoded:
                self.encode_network([a])
            l = self.lit_eq(a, int(v))
            if l == FALSE:
                return [FALSE]
            if l != TRUE:
                out.append(l)
        return out

    def decode_group(self, assignment: Mapping[int, bool]) -> dict:
        """The group an outer assignment picks (value indices; unset attributes -> 0)."""
        out = {}
        for a in self.choice:
            var = self.bn.variables[a]
            if a in self.bool_var:
                out[a] = int(bool(assignment.get(self.bool_var[a], False)))
            elif self.choice_encoding == "onehot":
                es = self.onehot.get(a, [])
                val = 0
                for i, e in enumerate(es):
                    if assignment.get(e, False):
                        val = i
                        break
                out[a] = val
            else:
                # log encoding: recompute from the bits
                bits = [v for v, nm in self.f.names.items() if nm.startswith(f"{a}#b")]
                code = sum((1 << i) for i, b in enumerate(sorted(bits)) if assignment.get(b, False))
                out[a] = code % var.k
        return out
