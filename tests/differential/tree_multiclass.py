"""Tree models with K = 3 classes (issue 25): see :mod:`.tree_outputs`."""

from __future__ import annotations

from .tree_outputs import generate as _generate

FAMILY = "trees-multiclass"


def generate(seed: int, n_props: int = 6):
    return _generate(seed, FAMILY, False, n_props)
