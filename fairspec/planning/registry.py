"""The one registry of backends: what each decides, what it needs, which options it takes.

A backend is a declared :class:`Backend`: its name (what ``using NAME`` says),
what it needs from a property (a ReLU network, a Boolean form, data rows, a
distribution), and one :class:`Capability` per property kind it decides --
the runner that decides it and the option schema (type, range, default) the
spec's ``name = value`` lines are checked against.  The registry lists only
what runs: a pair (backend, kind) is here exactly when a runner decides it.
:func:`fairspec.planning.plan` picks from it; nothing else chooses a backend.

Nothing here imports a solver, numpy or a model library (lint imports it).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from fairspec.syntax.literals import WEEK, number  # the longest duration an option takes; a value as written

# ------------------------------------------------------------------ options


@dataclass(frozen=True)
class Option:
    """One ``name = value`` option: its type, its range and what it means.

    type: ``int`` (a whole number in [lo, hi]), ``real`` (a number in (lo, hi) or [lo, hi]),
    ``duration`` (``60s``, ``500ms``, ``5min``, or a number of seconds in (0, hi]),
    ``choice`` (one of ``choices``), ``path`` (a string, relative to the spec file),
    ``column`` (a data column's name, bare or quoted),
    ``statement`` (written as its own statement: ``search ...``, ``explain ...``).
    """

    name: str
    type: str
    doc: str
    lo: float | None = None
    hi: float | None = None
    bounds: str = "[]"                       # real: "[]" lo <= v <= hi, "()" lo < v < hi, "[)" lo <= v < hi
    choices: tuple[str, ...] = ()
    default: object = None                   # None: the backend's own behaviour (see doc)

    def with_default(self, default) -> Option:
        return dataclasses.replace(self, default=default)

    @property
    def range_text(self) -> str:
        if self.type == "int":
            return f"a whole number in [{_n(self.lo)}, {_n(self.hi)}]"
        if self.type == "real":
            return f"a number in {self.bounds[0]}{_n(self.lo)}, {_n(self.hi)}{self.bounds[1]}"
        if self.type == "duration":
            return f"a duration such as 60s, 500ms or 5min, at most {_duration(self.hi)}"
        if self.type in ("choice", "statement"):
            return " | ".join(self.choices)
        if self.type == "column":
            return "a data column name"
        return "a file path (a string)"

    def check(self, value) -> str | None:
        """None when ``value`` (a Python constant from the spec) is allowed, else the message."""
        if self.type == "int":
            ok = (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                  and float(value).is_integer() and self.lo <= value <= self.hi)
        elif self.type == "real":
            ok = (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                  and (self.lo < value if self.bounds[0] == "(" else self.lo <= value)
                  and (value < self.hi if self.bounds[1] == ")" else value <= self.hi))
        elif self.type == "duration":
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= self.hi
        elif self.type in ("choice", "statement"):
            ok = value in self.choices
        else:  # path, column
            ok = isinstance(value, str) and value != ""
        if ok:
            return None
        numeric = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        shown = _duration(value) if self.type == "duration" and isinstance(value, (int, float)) \
            else number(value) if numeric else value         # as written: 0, not 0.0
        return f"{self.name} = {shown} is out of range: {self.name} is {self.range_text}"


def percent_hint(opt: Option, value) -> str | None:
    """``confidence = 95``: a fraction's option given a percentage -- the hint writes the fraction."""
    if opt.type == "real" and opt.hi is not None and opt.hi <= 1 and isinstance(value, (int, float)) \
            and not isinstance(value, bool) and 1 < value <= 100:
        return (f"{opt.name} is a fraction, not a percentage: write {number(value)} as {number(value / 100)} "
                f"({opt.doc})")
    return None


def _n(x) -> str:
    return f"{int(x):,}".replace(",", "_") if float(x).is_integer() and abs(x) >= 10_000 else number(x)


def _duration(s) -> str:
    if not isinstance(s, (int, float)) or not math.isfinite(s):
        return str(s)
    if s >= 3600 and float(s / 3600).is_integer():
        return f"{number(s / 3600)}h"
    if s >= 60 and float(s / 60).is_integer():
        return f"{number(s / 60)}min"
    return f"{number(s)}s"



# The options the language knows, with their types and ranges.  A backend's schema takes a
# subset of them, some with a default of its own (`timeout`: 60 s on the solvers, 120 s on PBA).
OPTIONS: dict[str, Option] = {o.name: o for o in (
    Option("timeout", "duration", "the time budget of the property; on expiry the verdict is unknown, "
           "never holds", hi=WEEK),
    Option("part_timeout", "duration", "the time budget of each input-space partition (default: timeout)",
           hi=WEEK),
    Option("seed", "int", "the seed of every random choice (resamples, sampled rows, search)",
           lo=0, hi=2**32 - 1, default=0),
    Option("confidence", "real", "the confidence of estimated intervals", lo=0, hi=1, bounds="()",
           default=0.95),
    Option("bootstrap", "int", "the number of bootstrap resamples", lo=1, hi=100_000),
    Option("min_group_size", "int", "a group with fewer rows is too small to judge (the verdict is then "
           "unknown, never holds)", lo=1, hi=1_000_000_000, default=30),
    Option("mode", "choice", "prove (decide the property), find (stop at the first violation) or maximize "
           "(the largest violation)", choices=("prove", "find", "maximize"), default="prove"),
    Option("partitions", "int", "split the input space into N boxes, each with its own budget; the coverage "
           "says what was decided", lo=1, hi=4096),
    Option("refine", "duration", "with partitions: FairQuant's refinement of the partitions left without a "
           "proof, for this long after the decisions (sub-boxes proved fair or unfair, small ones enumerated "
           "on the runtime; counted in the shares)", hi=WEEK),
    Option("estimate", "int", "with partitions: individuals drawn uniformly (seeded by seed) from the "
           "undecided share and decided on the runtime, for an estimate of its unfair / fair split with "
           "Clopper-Pearson intervals at confidence (an estimate beside the shares, never a proof; 0: none)",
           lo=0, hi=10_000_000, default=10_000),
    Option("max_rows", "int", "look at a random sample of at most N data rows", lo=1, hi=100_000_000),
    Option("engine", "choice", "the solver: highs or scip (MILP); the milp pair encoding also portfolio "
           "(HiGHS and SCIP raced, the first decision wins); pba(...) also takes lp (the plain LP "
           "relaxation), repair also z3 (MaxSMT) and rc2 (MaxSAT)",
           choices=("highs", "scip", "portfolio", "lp", "z3", "rc2"), default="highs"),
    Option("workers", "int", "worker processes (default: --workers, else the machine's cores)", lo=1, hi=64),
    Option("points", "int", "analyse a random sample of at most N selected points", lo=1, hi=100_000_000),
    Option("chart", "path", "write a chart of the table to this file (relative to the spec file)"),
    Option("method", "choice", "enumerate (a PPV per group) or learn (only the most and least favoured "
           "groups)", choices=("enumerate", "learn"), default="enumerate"),
    Option("compare", "choice", "between_groups (highest against lowest group) or to_overall (each group "
           "against the whole population)", choices=("between_groups", "to_overall"), default="between_groups"),
    Option("weight", "column", "the data column that holds each row's sample weight"),
    Option("exclude_below", "real", "leave out groups with fewer than this share of the rows", lo=0, hi=1,
           bounds="[)", default=0.0),
    Option("search", "statement", "the search strategy: random (random walk), annealing, or knn (annealing "
           "+ nearest neighbours), optionally with its own budget: search annealing for 60s",
           choices=("random", "annealing", "knn"), default="annealing"),
    Option("explain", "statement", "explain the violations found: explain tree", choices=("tree",)),
    Option("max_boxes", "int", "tree models: the boxes of leaf combinations the exact max k may split "
           "(beyond them: a proved upper bound, then the search)", lo=1, hi=100_000_000),
    Option("max_cells", "int", "tree models: the leaf combinations a point's neighbourhood may have "
           "(a point with more is unknown)", lo=1, hi=100_000_000),
)}


def _opts(*names, **defaults) -> tuple[Option, ...]:
    """Options by name (or an Option of the backend's own); ``name=value`` gives the backend's own default."""
    out = {o.name: o for o in (n if isinstance(n, Option) else OPTIONS[n] for n in names)}
    out.update({n: (out.get(n) or OPTIONS[n]).with_default(v) for n, v in defaults.items()})
    return tuple(sorted(out.values(), key=lambda o: o.name))


# ------------------------------------------------------------------ backends

# What a backend can need from a property (Plan.needs, ARCHITECTURE.md):
NEEDS = {
    "relu_network": "the model as a piecewise-linear (ReLU) network, or a tree ensemble",
    "model": "the model file, run as it is",
    "data": "data rows",
    "distribution": "a distribution with probabilities (declared or estimated from data)",
    "boolean_form": "the classifier in Boolean form (a decision tree, a CNF rule or a linear rule)",
    "rule": "a rule model written in the spec (`rule(...)`) over a small discrete domain",
}


@dataclass(frozen=True)
class Capability:
    """A backend deciding one property kind: the runner and the options it takes."""

    kind: str
    runner: str                            # "module:function", called as function(prop, ctx, progress)
    options: tuple[Option, ...]
    over: str | None = None                # group metrics: "data" (rows) or "distribution"
    forms: tuple[str, ...] = ()            # over a distribution: the Boolean forms it decides
    doc: str = ""

    def option(self, name: str) -> Option | None:
        return next((o for o in self.options if o.name == name), None)


@dataclass(frozen=True)
class Backend:
    name: str
    doc: str
    needs: tuple[str, ...]
    capabilities: tuple[Capability, ...] = field(default=())

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(c.kind for c in self.capabilities)

    def capability(self, kind: str, over: str | None = None) -> Capability | None:
        for c in self.capabilities:
            if c.kind == kind and (over is None or c.over is None or c.over == over):
                return c
        return None


BACKENDS: dict[str, Backend] = {}


def register(backend: Backend) -> Backend:
    """Add a backend (see ARCHITECTURE.md, "How to add a backend")."""
    for n in backend.needs:
        if n not in NEEDS:
            raise ValueError(f"backend {backend.name}: unknown need {n!r} (known: {', '.join(NEEDS)})")
    BACKENDS[backend.name] = backend
    return backend


_PAIR = ("timeout", "seed", "max_rows", "mode", "partitions", "part_timeout", "refine", "estimate", "confidence")   # falsified on data rows first
_OVER_DISTRIBUTION = ("seed", "confidence", "bootstrap", "method")

register(Backend(
    "data", "fairness measured on the declared data rows with the real model", ("data", "model"), (
        Capability("group_metric", "fairspec.kinds.on_data:run", _opts("seed", "confidence", "min_group_size",
                   "timeout", "compare", "weight", "exclude_below", bootstrap=1000), over="data",
                   doc="group metrics with bootstrap confidence intervals"),
        Capability("individual_fairness", "fairspec.kinds.on_data:run", _opts("seed", "max_rows", "timeout"),
                   doc="counterfactual flips of every data row (finds violations, never proves)"),
    )))
_PBA_ENGINE = Option("engine", "choice", "the MILP solver, or lp for the plain LP relaxation",
                     choices=("highs", "scip", "lp"), default="highs")
_PAIR_ENGINE = Option("engine", "choice", "the MILP solver: highs, scip, or portfolio (per query HiGHS, and SCIP "
                      "from 1 s on, raced in threads: the first decision wins, the other is stopped; on tree "
                      "models the tree engines' own portfolio, z3 then HiGHS)",
                      choices=("highs", "scip", "portfolio"), default="highs")
register(Backend(
    "milp", "mixed-integer linear programs over the ReLU network (HiGHS, SCIP)", ("relu_network",), (
        Capability("individual_fairness", "fairspec.kinds.individual_fairness:run_milp", _opts(*_PAIR, _PAIR_ENGINE,
                   timeout=60.0), doc="the pair encoding: prove, find or maximize"),
        Capability("pba", "fairspec.kinds.pba:run", _opts("seed", "workers", "points", "max_rows", "chart",
                   _PBA_ENGINE, timeout=120.0, max_cells=4096), doc="PBA neighbourhoods: bounds, LP, exact MILP "
                   "(tree models: exact over leaf combinations)"),
    )))
register(Backend(
    "smt", "SMT (pysmt with z3, exact rationals) over the ReLU network", ("relu_network",), (
        Capability("individual_fairness", "fairspec.kinds.individual_fairness:run_smt", _opts(*_PAIR, timeout=60.0),
                   doc="the pair encoding: prove, find or maximize"),
    )))
register(Backend(
    "enumerate", "every pair of a small discrete domain, a rule model evaluated in exact rationals", ("rule",), (
        Capability("individual_fairness", "fairspec.kinds.rule_pairs:run", _opts("mode", timeout=60.0),
                   doc="a rule model (`rule(...)`): every admissible pair of the features it reads, free and "
                       "relaxed ones, when they are discrete and the ordered pairs at most 4,000,000"),
    )))
register(Backend(
    "search", "HyFair's search for k-discrimination, on the model run as it is", ("model",), (
        Capability("k_discrimination", "fairspec.kinds.k_discrimination:run",
                   _opts("seed", "search", "explain", timeout=60.0, max_boxes=20000),
                   doc="random walk, simulated annealing, annealing + nearest neighbours; never proves"),
    )))
_DIST_RUNNER = "fairspec.kinds.distribution:run"
register(Backend(
    "dp", "FVGM's stochastic subset-sum dynamic programme", ("distribution", "boolean_form"), (
        Capability("group_metric", _DIST_RUNNER, _opts(*_OVER_DISTRIBUTION, timeout=60.0), over="distribution",
                   forms=("linear",), doc="linear classifiers"),
    )))
register(Backend(
    "ssat", "exact stochastic SAT over the classifier's Boolean form", ("distribution", "boolean_form"), (
        Capability("group_metric", _DIST_RUNNER, _opts(*_OVER_DISTRIBUTION, timeout=60.0), over="distribution",
                   forms=("tree", "cnf", "linear"), doc="decision trees, CNF rules, linear classifiers"),
    )))
register(Backend(
    "elimination", "exact variable elimination over a decision tree's paths", ("distribution", "boolean_form"), (
        Capability("group_metric", _DIST_RUNNER, _opts(*_OVER_DISTRIBUTION, timeout=60.0), over="distribution",
                   forms=("tree",), doc="decision trees over networks whose features depend on each other"),
    )))

_REPAIR_ENGINE = Option("engine", "choice", "the exact optimiser choosing the flips: highs or scip (MILP), z3 "
                        "(the paper's MaxSMT, Optimize) or rc2 (python-sat MaxSAT over pseudo-Boolean encodings)",
                        choices=("highs", "scip", "z3", "rc2"), default="highs")
register(Backend(
    "repair", "FairRepair: patch a scikit-learn decision tree or random forest on the data rows", ("data", "model"), (
        Capability("repair", "fairspec.kinds.repair:run", _opts("timeout", _REPAIR_ENGINE),
                   doc="fewest flipped or refined path hypercubes reaching every pairwise passing-rate ratio "
                       "within alpha x the LP's minimal semantic difference; written, loaded back, re-verified"),
    )))

# group metrics that exist only over a distribution: FVGM's fairness influence redraws
# features (D_{-S}), which data rows alone cannot do
DISTRIBUTION_ONLY_METRICS = frozenset({"influence"})


def backends_for(kind: str, over: str | None = None) -> list[str]:
    """The backends that decide property kind ``kind`` (group metrics: over data or a distribution)."""
    return [b.name for b in BACKENDS.values() if b.capability(kind, over) is not None]


def supports(backend: str, kind: str) -> bool:
    b = BACKENDS.get(backend)
    return b is not None and b.capability(kind) is not None


def supports_metric(backend: str, metric: str) -> bool:
    """True when ``backend`` can evaluate the group metric ``metric``."""
    b = BACKENDS.get(backend)
    if b is None:
        return False
    if metric in DISTRIBUTION_ONLY_METRICS:
        return b.capability("group_metric", "distribution") is not None
    return b.capability("group_metric") is not None
