"""The certification spine: every ``holds (proved)`` carries a :class:`Proof` that a function of
this package made after checking the evidence itself (see ARCHITECTURE.md, "The certification
spine", and tools' CERTIFY_API contract).

Imports numpy, fractions and the standard library only: never a solver, a model library, a
backend, a kind or a loader (``tests/test_import_graph.py`` enforces it).
"""

from fairspec.certify.enumerate import Check, Enumerated, by_enumeration, compare_exact, pair_checks
from fairspec.certify.exact import decide, exact_value, interval_decide, prove_exact, prove_exhaustive, threshold_of
from fairspec.certify.proof import METHODS, Proof, ProofRefused

__all__ = [
    "Proof", "ProofRefused", "METHODS", "decide", "interval_decide", "threshold_of", "exact_value",
    "prove_exact", "prove_exhaustive", "Check", "Enumerated", "by_enumeration", "compare_exact", "pair_checks",
]
