"""Tree regressions (issue 25): see :mod:`.tree_outputs`."""

from __future__ import annotations

from .tree_outputs import generate as _generate

FAMILY = "trees-regression"


def generate(seed: int, n_props: int = 6):
    return _generate(seed, FAMILY, True, n_props)
