"""The pair-solver drivers: ``find``, ``prove`` and ``maximize`` over an :class:`Engine`,
and the one "holds" rule (:func:`holds`) every pair backend uses.

A pair problem (:class:`~fairspec.backends.pair.PairProblem`) asks whether two inputs
``x, x'`` that satisfy the pre-condition can violate the post-condition; by the
pre-condition's symmetry every query looks for a violation with ``z >= z'`` (``z`` the
logit of ``x``). The *violation measure* (:func:`~fairspec.backends.pair.pair_measure`) is
``min(z, -z')`` for ``label``, ``z - z'`` for ``logit`` and ``sigmoid(z) - sigmoid(z')``
for ``prob``; a pair violates ``label`` when ``z > 0 >= z'`` and ``logit``/``prob`` when
its measure exceeds ``eps``.

**The holds rule** (:func:`holds`). A solver proves an upper bound ``B`` on the measure
over every admissible pair, either *non-strict* (every pair has measure ``<= B``: a MILP's
dual bound, an interval bound) or *strict* (no pair reaches ``B``: an infeasible / unsat
query "measure ``>= B``"). The property holds when

* ``label``: ``B < -HOLDS_TOL`` (non-strict) or ``B <= 0`` (strict) -- a pair of measure
  exactly 0 can be a flip (``z > 0``, ``z' = 0``), so a non-strict bound must be clear of 0
  by the solver's tolerance (``HOLDS_TOL`` = 1e-9, the MILP's absolute gap);
* ``logit`` / ``prob``: ``B <= eps`` (a violation needs a measure ``> eps``).

Before this module the MILP drivers applied the non-strict form and the SMT drivers
``B <= limit`` to every bound; the rule above is the sounder of the two (it is the MILP's
on non-strict bounds) and the same on the strict bounds both already used. Other pair
backends (the tree-ensemble drivers) import :func:`holds` too.

**The Engine interface** (:class:`Engine`): a solver that has built the pair encoding once
(network, pre-condition, domain) and answers feasibility queries of the violated
post-condition at a threshold: :meth:`Engine.check`. MILP (HiGHS / SCIP,
:mod:`fairspec.backends.milp.modes`) and SMT (z3, :mod:`fairspec.backends.smt`) implement
it; a new pair solver implements it and reuses these drivers.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["HOLDS_TOL", "LABEL_MARGIN", "PROB_MARGIN", "IMPROVE", "MAX_CUT_ROUNDS", "holds", "threshold",
           "Engine", "Check"]

HOLDS_TOL = 1e-9           # absolute tolerance of a non-strict bound on the label measure
LABEL_MARGIN = 1e-3        # find: first-stage margin on logits (label and logit posts)
PROB_MARGIN = 1e-6         # find: first-stage margin on probabilities
IMPROVE = 1e-7             # maximize: each round must beat the incumbent by this much
MAX_CUT_ROUNDS = 200       # prob: rounds of lazy tangent cuts per query


def threshold(post: str, eps: float) -> float:
    """The post-condition's threshold on the violation measure: 0 for ``label``, else ``eps``."""
    return 0.0 if post == "label" else float(eps)


def holds(post: str, eps: float, bound: float | None, strict: bool = False) -> bool:
    """Does a proved upper bound ``bound`` on the violation measure prove the property?

    ``strict=False``: every admissible pair has measure ``<= bound``; ``strict=True``: no
    admissible pair reaches ``bound``. ``None`` (no bound) never proves anything. See the
    module docstring for the rule and why."""
    if bound is None:
        return False
    bound = float(bound)
    if post == "label":
        return bound <= 0.0 if strict else bound < -HOLDS_TOL
    return bound <= float(eps)


class Check(tuple):
    """One solver answer: ``(status, x, x', z, z')`` with status ``sat`` (a raw pair and its
    two logits in the solver's model), ``unsat``, ``timeout`` or ``error`` (``x`` then holds
    the message)."""

    __slots__ = ()

    def __new__(cls, status: str, x=None, xp=None, z=None, zp=None):
        return super().__new__(cls, (status, x, xp, z, zp))

    @property
    def status(self) -> str:
        return self[0]


@runtime_checkable
class Engine(Protocol):
    """A pair solver with the pair encoding built once.

    Attributes: ``name`` (``highs``, ``scip``, ``z3``: the result's ``engine``), ``problem``,
    ``bounds`` (:func:`~fairspec.backends.bounds.pair_bounds`), ``z_bounds`` (interval
    bounds of the logit), ``deadline`` (``time.perf_counter()`` value or None; the drivers
    may lower it for a sub-search), ``stats`` (a dict the result carries),
    ``bisect`` (maximize's rounds bisect between incumbent and bound, or step by
    :data:`IMPROVE`), ``can_optimize`` (has :meth:`optimize`), and for reasons ``query``
    (e.g. "the MILP") and ``no`` (e.g. "infeasible").
    """

    name: str
    problem: Any
    bounds: Any
    z_bounds: tuple[float, float]
    deadline: float | None
    stats: dict
    bisect: bool
    can_optimize: bool
    query: str
    no: str

    def remaining(self) -> float | None:
        """Seconds left before ``deadline`` (None: no limit)."""

    def elapsed(self) -> float:
        """Seconds since the engine was built (encoding included)."""

    def check(self, thr: float | None, strict: bool = False, cuts=(), start=None) -> Check:
        """Is there a pair (pre-condition and domain) whose violation measure reaches ``thr``
        (``>`` if ``strict`` and the engine can state it, else ``>=``), with the prob tangent
        cuts ``cuts`` = [(a, e)] (:func:`~fairspec.backends.pair.prob_cut`)? ``thr=None``:
        the pre-condition alone. ``start`` = (x, x') warm-starts where supported."""

    def optimize(self, start=None) -> Any:
        """Only if ``can_optimize``: maximise the measure (``label``: ``min(z, -z')``, else
        ``z - z'``) and return an object with ``status`` (optimal | feasible | timeout |
        error | infeasible), ``x`` / ``xp`` (the raw pair or None), ``bound`` (dual bound or
        None), ``objective`` and ``raw_status``."""
