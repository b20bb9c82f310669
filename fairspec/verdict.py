"""Verdicts: what a property evaluates to.

Exactly one of
  holds (proved)            a complete procedure finished without a time-out;
  holds (estimated)         an estimate whose whole confidence interval satisfies the claim;
  violated                  with a witness that was replayed on the real model;
  unknown                   with the reason (time-out, too few rows, backend not available, ...).
A time-out is never `holds`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where it is checked: `fairspec lint` loads this module (models.base) but no proof
    from fairspec.certify.proof import Proof


class Unsupported(Exception):
    """A backend cannot lower this construct (a model that is no network, a pre-condition its
    encoding cannot state, ...).  Any backend raises it; the pipeline reports the property
    ``unknown`` with this sentence as the reason (and ``details`` when given)."""

    def __init__(self, reason: str, details: dict | None = None):
        super().__init__(reason)
        self.details = details or {}


@dataclass(frozen=True)
class Witness:
    """A counterexample pair in model-input space, with its spec-level reading."""

    x: tuple[float, ...]
    x_prime: tuple[float, ...]
    features: dict = field(default_factory=dict)        # feature -> value of x (category names, unscaled)
    features_prime: dict = field(default_factory=dict)  # feature -> value of x'
    outputs: tuple[float, float] | None = None          # the model's score on x and x' (replayed; a tree
    # model's: what the post reads, its library's label, probability or margin)
    replayed_by: str = ""                               # which evaluator reproduced it
    output_labels: tuple | None = None                  # a `class` post: the class labels the model records
    # for the two predicted classes in ``outputs`` (which are columns, 0 .. K-1)

    def to_json(self) -> dict:
        out = {"x": _signless(self.x), "x_prime": _signless(self.x_prime), "features": self.features,
               "features_prime": self.features_prime,
               "outputs": _signless(self.outputs) if self.outputs else None, "replayed_by": self.replayed_by}
        if self.output_labels is not None:
            out["output_labels"] = list(self.output_labels)
        return out

    def output_texts(self) -> tuple[str, str] | None:
        """The two outputs as a report shows them: a predicted class as its label and column
        (``"low (class 1)"``) when the model records labels, else the number."""
        if not self.outputs:
            return None
        if self.output_labels is not None:
            return tuple(f"{lab} (class {int(o)})" for lab, o in zip(self.output_labels, self.outputs))
        return _output_text(self.outputs[0]), _output_text(self.outputs[1])


def _output_text(o) -> str:
    """A replayed output as text that reads back as it: 6 significant digits where they do, else the float32's
    shortest text when the runtime's number is a float32 (a network's probability), else the double's. (6 digits
    alone printed a pair 0.5250001 / 0.475 breaking ``<= 0.05`` as 0.525 / 0.475, which seems to meet it.)"""
    v = float(o)
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    text = f"{v:.6g}"
    if float(text) == v or v != v:
        return text
    import numpy as np

    f32 = np.float32(v) if abs(v) <= float(np.finfo(np.float32).max) else None  # no overflow warning
    return str(f32) if f32 is not None and float(f32) == v else repr(v)


def _signless(values) -> list:
    """``values`` as a list, a float zero as +0.0: a solver's -0.0 (an input at its bound 0, a logit of
    exactly 0) is the number 0, and its sign says nothing the spec asked."""
    return [0.0 if isinstance(v, float) and v == 0.0 else v for v in values]


@dataclass(frozen=True)
class Verdict:
    name: str
    kind: str
    status: str  # holds | violated | unknown
    how: str | None = None  # proved | estimated | None
    value: float | None = None
    bound: tuple[float, float] | None = None
    reason: str | None = None
    witness: Witness | None = None
    seconds: float = 0.0
    backend: str | None = None
    details: dict = field(default_factory=dict)
    # what certify checked: the evidence of `holds (proved)` (or of a certified bound of maximize)
    proof: Proof | None = field(default=None, compare=False)
    # the thresholds the property's claim names (as the spec writes them): a report prints the value
    # and the interval with the digits that keep them on the side of each that they are on (literals.shown)
    thresholds: tuple = field(default=(), compare=False, repr=False)

    def __post_init__(self):
        assert self.status in ("holds", "violated", "unknown"), self.status
        # -0.0 (label's min(z, -z') at a logit of exactly 0) is 0: no sign the spec asked for ("-0")
        if isinstance(self.value, float) and self.value == 0.0:
            object.__setattr__(self, "value", 0.0)
        if self.bound is not None:
            object.__setattr__(self, "bound", tuple(_signless(self.bound)))
        if self.proof is not None:
            from fairspec.certify.proof import Proof

            assert isinstance(self.proof, Proof), "proof must be a fairspec.certify.Proof"
        if self.status == "holds":
            assert self.how in ("proved", "estimated"), "a holds verdict says how it was established"
        if self.status == "unknown":
            assert self.reason, "an unknown verdict carries its reason"

    @property
    def label(self) -> str:
        if self.proof is not None and self.how == "proved":
            return f"{self.status} ({self.how}: {self.proof.summary})"
        return f"{self.status} ({self.how})" if self.how else self.status

    def to_json(self) -> dict:
        return {
            "name": self.name, "kind": self.kind, "status": self.status, "how": self.how,
            "value": self.value, "bound": list(self.bound) if self.bound is not None else None,
            "reason": self.reason,
            "witness": self.witness.to_json() if self.witness else None,
            "seconds": round(self.seconds, 4), "backend": self.backend, "details": self.details,
            "proof": self.proof.to_json() if self.proof is not None else None,
        }


def unknown(prop, reason: str, *, backend: str | None = None, seconds: float = 0.0, **kw) -> Verdict:
    return Verdict(prop.name, prop.kind, "unknown", reason=reason, backend=backend, seconds=seconds, **kw)


_CLAIM_OPS = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def with_note(v: Verdict, note: str) -> Verdict:
    """``v`` with ``note`` added to its ``details.notes`` (an option with no effect here, ...): what the
    text and HTML reports print under the verdict, and the pytest plugin's messages carry."""
    from dataclasses import replace

    d = v.details or {}
    return replace(v, details={**d, "notes": [*d.get("notes", ()), note]})


def interval_status(op: str, threshold: float, lo: float, hi: float) -> str:
    """Decide `value op threshold` for an estimate known only to lie in [lo, hi].

    "holds" when the whole interval satisfies the claim, "violated" when none of it
    does, "unknown" when the threshold lies inside (an estimate is never more)."""
    sat = _CLAIM_OPS[op]
    ok_lo, ok_hi = sat(lo, threshold), sat(hi, threshold)
    if ok_lo and ok_hi:
        return "holds"
    if not ok_lo and not ok_hi:
        return "violated"
    return "unknown"
