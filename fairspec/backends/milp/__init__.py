"""MILP backend for pair (2-fairness) problems: HiGHS (default) or SCIP behind one encoding.

    from fairspec.backends.milp import find, prove, maximize, solve_partitioned
    res = find(problem, engine="highs", time_limit=60)        # -> PairResult

See :mod:`fairspec.backends.milp.modes` (modes, margins, measured engine timings),
:mod:`fairspec.backends.milp.encoding` (the pair encoding) and
:mod:`fairspec.backends.milp.partition` (input-space partitions and coverage).
"""

from fairspec.backends.milp.modes import DEFAULT_ENGINE, LABEL_MARGIN, PROB_MARGIN, find, maximize, prove, solve
from fairspec.backends.milp.partition import (default_partitions, fairify_partitions, grid_partitions,
                                              solve_partitioned, split_widest)

__all__ = ["find", "prove", "maximize", "solve", "solve_partitioned", "default_partitions", "fairify_partitions", "split_widest",
           "grid_partitions", "DEFAULT_ENGINE", "LABEL_MARGIN", "PROB_MARGIN"]
