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
* linear rule: sum_f w_f[x_f] >= t written over order literals by telescoping
  (sum_v w[v][X=v] = w[0] + sum_j (w[j]-w[j-1]) [X>=j]) and encoded with
  python-sat's ``PBEnc`` (its auxiliaries are inner existentials); the
  negation is ``PBEnc.atmost(t - 1)``.
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
        terms: list = []
        const = 0
        for f, w in rule.weights.items():
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
        if self.pb_encoding == "mdd":
            self._pb_bdd(lits, weights, int(bound), out)
            return
        from pysat.pb import EncType, PBEnc
        enc = getattr(EncType, self.pb_encoding)
        cnf = PBEnc.atleast(lits=lits, weights=weights, bound=int(bound), top_id=self.f.nv, encoding=enc)
        self.f.reserve(max(self.f.nv, cnf.nv), kind="I")
        for c in cnf.clauses:
            self._add(c, out)

    def _pb_bdd(self, lits, weights, bound, out):
        """sum c_i l_i >= bound as a reduced BDD (Een & Soerensson's interval
        construction) over the literals in the given order (feature by feature,
        levels ascending: the order FVGM's dynamic program follows).

        Node variables are inner existentials with one-directional clauses
        (n and l -> hi, n and not l -> lo), so a node off the current path occurs
        only negatively and disappears by pure-literal elimination; the residual
        formula after deciding a prefix is the active node's sub-diagram, which
        the solver's cache then recognises (the DP's state).  The input literals
        get branching priorities in BDD order."""
        import bisect
        n = len(lits)
        suffix = [0] * (n + 1)
        for i in range(n - 1, -1, -1):
            suffix[i] = suffix[i + 1] + weights[i]
        memo: list = [[] for _ in range(n + 1)]   # per level: sorted (lo, hi, node)
        INF = float("inf")

        def build(i, b):
            if b <= 0:
                return TRUE, -INF, 0
            if b > suffix[i]:
                return FALSE, suffix[i] + 1, INF
            lv = memo[i]
            k = bisect.bisect_right(lv, (b, INF, INF)) - 1
            if k >= 0 and lv[k][0] <= b <= lv[k][1]:
                return lv[k][2], lv[k][0], lv[k][1]
            h, hlo, hhi = build(i + 1, b - weights[i])
            e, elo, ehi = build(i + 1, b)
            lo = max(hlo + weights[i], elo)
            hi = min(hhi + weights[i], ehi)
            if h == e:
                node = h
            else:
                node = self.f.new_var("I", name=f"bdd[{i},{lo}..{hi}]")
                l = lits[i]
                self._add([-node, -l, h], out)
                self._add([-node, l, e], out)
            bisect.insort(lv, (lo, hi, node))
            return node, lo, hi

        import sys
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, 4 * n + 1000))
        try:
            root, _, _ = build(0, bound)
        finally:
            sys.setrecursionlimit(old)
        self._add([root], out)
        base = len(self.f.priority)
        for i, l in enumerate(lits):
            self.f.priority.setdefault(abs(l), base + i)

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
