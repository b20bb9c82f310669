"""What a proof is: a :class:`Proof` names the check certify made itself, the claim it supports
and the numbers an auditor wants.

A ``Proof`` cannot be built outside :mod:`fairspec.certify`: its constructor refuses unless one of
certify's own checking functions (which mint through :func:`_mint`) is running. ``dataclasses.replace``
goes through the constructor and is refused too; copying or pickling an existing proof keeps it.
So ``holds (proved)`` with a ``Proof`` means certify saw the evidence and checked it.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from fractions import Fraction

__all__ = ["Proof", "METHODS", "ProofRefused"]

#: the checks certify makes (extend only with a method that is itself a check)
METHODS = {
    "enumeration": "every point / pair of a finite domain evaluated on the model's own runtime; "
                   "certify compared each output with the threshold exactly as the spec writes it",
    "exact-arithmetic": "a value computed in exact rational arithmetic compared exactly with the threshold",
    "interval": "rigorous outward-rounded interval bounds (with the runtime's float error) clear of the threshold",
    "lp-certificate": "an LP dual / Farkas vector checked with rigorous rounding against an LP certify built",
    "bab-certificate": "a branch-and-bound tree whose splits certify checked cover the domain and whose every "
                       "leaf has an lp-certificate or an interval proof",
    "exact-smt": "an exact decision procedure over rationals answered unsat on an encoding with exact constants",
    "exhaustive-data": "a statement about finitely many data rows counted exactly",
    "partitioned": "one proof per box of a partition of the domain (each of the methods above), each about the "
                   "whole claim restricted to its box; certify checked the boxes cover the domain exactly once "
                   "and cut only inputs a pair shares",
    "per-class": "one proof per class c (each of the methods above) that no admissible pair has class c on one "
                 "side only; certify checked every class has its proof, so a pair whose predicted class changes "
                 "is one of these cases",
    "per-column": "one proof per logit column c of a K-output network (each of the methods above) that no "
                  "admissible pair moves column c beyond eps; certify checked every column has its proof, so a "
                  "pair that moves some column beyond eps is one of these cases",
}


class ProofRefused(TypeError):
    """A Proof was constructed outside fairspec.certify's checking functions."""


_minting = threading.local()


@dataclass(frozen=True)
class Proof:
    """Evidence that certify checked. ``method`` is one of :data:`METHODS`; ``claim`` one sentence
    of what was proved; ``detail`` the auditor's numbers (points enumerated, leaves, margin,
    error bound, ...)."""

    method: str
    claim: str
    detail: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        if not getattr(_minting, "depth", 0):
            raise ProofRefused("a Proof is made only by fairspec.certify's checking functions")
        if self.method not in METHODS:
            raise ValueError(f"unknown proof method {self.method!r}; one of {sorted(METHODS)}")
        object.__setattr__(self, "detail", dict(self.detail))

    def to_json(self) -> dict:
        return {"method": self.method, "claim": self.claim, "detail": _jsonable(self.detail)}

    @property
    def summary(self) -> str:
        """A few words for the text report: ``holds (proved: <summary>)``."""
        d = self.detail
        if isinstance(d.get("by_method"), dict) and isinstance(d.get("partitions"), int):
            if d["partitions"] == 1:        # the whole domain as one part (a solver's tie, decided by refinement)
                return f"the domain as one box, certified ({', '.join(d['by_method'])})"
            each = ", ".join(f"{m} x {k:,}" for m, k in d["by_method"].items())
            return f"{d['partitions']:,} partitions, each certified ({each})"
        if self.method == "per-class" and isinstance(d.get("case_summaries"), list):
            return "per-class proofs: " + "; ".join(f"class {c}: {s}" for c, s in enumerate(d["case_summaries"]))
        if self.method == "per-column" and isinstance(d.get("case_summaries"), list):
            return (f"every one of {len(d['case_summaries'])} logit columns proved: "
                    + "; ".join(f"column {c}: {s}" for c, s in enumerate(d["case_summaries"])))
        if self.method == "enumeration":
            n = d.get("count")
            unit = d.get("unit", "points")
            return f"enumeration of {n:,} {unit}" if isinstance(n, int) else "enumeration"
        if self.method == "exhaustive-data":
            n = d.get("rows")
            return f"exhaustive count of {n:,} rows" if isinstance(n, int) else "exhaustive count of the data"
        if self.method == "bab-certificate":
            n = d.get("leaves")
            return f"branch and bound, {n:,} certified leaves" if isinstance(n, int) else "branch and bound certificate"
        return {"exact-arithmetic": "exact arithmetic", "interval": "rigorous interval bounds",
                "lp-certificate": "LP certificate", "exact-smt": "exact SMT",
                "partitioned": "partitions, each certified", "per-class": "per-class proofs",
                "per-column": "per-column proofs"}[self.method]

    def __hash__(self):
        return hash((self.method, self.claim))


def _mint(method: str, claim: str, **detail) -> Proof:
    """Build a Proof. Called only by certify's checking functions, after they checked."""
    _minting.depth = getattr(_minting, "depth", 0) + 1
    try:
        return Proof(method, claim, detail)
    finally:
        _minting.depth -= 1


def _jsonable(v):
    if isinstance(v, Proof):
        return {"method": v.method, "claim": v.claim}
    if isinstance(v, dict):
        # keys starting with "_" are certify's own working data (e.g. the boxes a batch proof covers)
        return {str(k): _jsonable(x) for k, x in v.items() if not str(k).startswith("_")}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, Fraction):
        return str(v)
    if hasattr(v, "item") and getattr(v, "shape", None) == ():   # numpy scalar
        return _jsonable(v.item())
    if hasattr(v, "tolist"):
        return _jsonable(v.tolist())
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    return str(v)
