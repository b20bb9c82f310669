"""The certification spine: every ``holds (proved)`` carries a :class:`Proof` that a function of
this package made after checking the evidence itself (see ARCHITECTURE.md, "The certification
spine").

Imports numpy, fractions and the standard library only: never a solver, a model library, a
backend, a kind or a loader (``tests/test_import_graph.py`` enforces it). The names below are
loaded lazily, so that ``fairspec.verdict`` (which needs only :class:`Proof`) stays free of numpy
and ``lint`` stays fast.
"""

from __future__ import annotations

import importlib

from fairspec.certify.proof import METHODS, Proof, ProofRefused

_LAZY = {
    "Check": "enumerate", "Enumerated": "enumerate", "by_enumeration": "enumerate",
    "compare_exact": "enumerate", "pair_checks": "enumerate",
    "decide": "exact", "exact_value": "exact", "interval_decide": "exact", "prove_exact": "exact",
    "prove_exhaustive": "exact", "threshold_of": "exact",
}

__all__ = ["Proof", "ProofRefused", "METHODS", *_LAZY]


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'fairspec.certify' has no attribute {name!r}")
    return getattr(importlib.import_module(f"fairspec.certify.{mod}"), name)
