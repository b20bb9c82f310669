"""SSAT formulas: a CNF and a quantifier for every variable.

Quantifier kinds (the prefix is always ``outer  random  inner``):

``E``  existential in the outer block (a choice: the protected attributes when
       *learning* the most favoured group, Justicia's ER-SSAT);
``A``  universal in the outer block (UR-SSAT, the least favoured group);
``R``  randomized with probability ``prob[v]`` of being true (chance variables:
       the features drawn from the distribution);
``D``  inner existential that is *functionally defined* by the outer and random
       variables (order literals of a binned feature, CPT selectors of a Bayesian
       network, full Tseitin definitions).  For every assignment of E/A/R
       variables exactly one value of a D variable satisfies its defining clauses,
       so a solver may branch on it and *sum* the two branches once no outer
       variable is left;
``I``  inner existential without that guarantee (auxiliary variables of
       pseudo-Boolean / cardinality encodings): only ever decided by a SAT check
       after all random variables are assigned.

An RE-SSAT formula (Justicia's per-group enumeration) has no E/A variables; the
group is fixed by unit clauses.  ``to_sdimacs`` writes the usual SSAT DIMACS
dialect (``e``/``a``/``r p`` prefix lines) for external solvers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["SSATFormula", "KINDS"]

KINDS = ("E", "A", "R", "D", "I")


@dataclass
class SSATFormula:
    nv: int = 0
    clauses: list = field(default_factory=list)
    kind: dict = field(default_factory=dict)     # var -> one of KINDS
    prob: dict = field(default_factory=dict)     # var -> Pr[var = 1] for kind R (float, or
                                                 # a numpy vector in a batched formula)
    names: dict = field(default_factory=dict)    # var -> readable name
    unsat: bool = False                          # an empty clause was added
    priority: dict = field(default_factory=dict)  # var -> branching rank (lower first); a hint
                                                  # for random/defined variables, e.g. BDD order

    def new_var(self, kind: str, prob: float | None = None, name: str | None = None) -> int:
        if kind not in KINDS:
            raise ValueError(f"unknown quantifier kind {kind!r}")
        self.nv += 1
        v = self.nv
        self.kind[v] = kind
        if kind == "R":
            if prob is None:
                raise ValueError(f"random variable {name or v} needs a probability")
            if isinstance(prob, (int, float)):
                if not (0.0 <= prob <= 1.0):
                    raise ValueError(f"random variable {name or v} needs a probability in [0, 1], got {prob}")
                self.prob[v] = float(prob)
            else:
                # a batch of probabilities (one per parameterisation, e.g. per group)
                import numpy as np
                arr = np.asarray(prob, dtype=float)
                if arr.ndim != 1 or np.any(arr < 0) or np.any(arr > 1):
                    raise ValueError(f"random variable {name or v} needs probabilities in [0, 1]")
                self.prob[v] = arr
        if name:
            self.names[v] = name
        return v

    def reserve(self, top: int, kind: str = "I") -> None:
        """Declare variables nv+1..top (auxiliaries made by an external encoder)."""
        for v in range(self.nv + 1, top + 1):
            self.kind[v] = kind
        self.nv = max(self.nv, top)

    def add(self, clause) -> None:
        c = tuple(int(l) for l in clause)
        if not c:
            self.unsat = True
        self.clauses.append(c)

    def copy(self) -> "SSATFormula":
        return SSATFormula(self.nv, list(self.clauses), dict(self.kind), dict(self.prob),
                           dict(self.names), self.unsat, dict(self.priority))

    def stats(self) -> dict:
        from collections import Counter
        k = Counter(self.kind.values())
        return {"vars": self.nv, "clauses": len(self.clauses),
                "literals": sum(len(c) for c in self.clauses), **{f"n_{q}": k.get(q, 0) for q in KINDS}}

    def to_sdimacs(self) -> str:
        lines = [f"p cnf {self.nv} {len(self.clauses)}"]
        blocks = [("E", "e"), ("A", "a")]
        for q, tag in blocks:
            vs = [v for v in range(1, self.nv + 1) if self.kind.get(v) == q]
            if vs:
                lines.append(f"{tag} " + " ".join(map(str, vs)) + " 0")
        for v in range(1, self.nv + 1):
            if self.kind.get(v) == "R":
                if not isinstance(self.prob[v], float):
                    raise ValueError("a batched formula has no single SDIMACS form")
                lines.append(f"r {self.prob[v]:.17g} {v} 0")
        inner = [v for v in range(1, self.nv + 1) if self.kind.get(v) in ("D", "I")]
        if inner:
            lines.append("e " + " ".join(map(str, inner)) + " 0")
        for c in self.clauses:
            lines.append(" ".join(map(str, c)) + " 0")
        return "\n".join(lines) + "\n"
