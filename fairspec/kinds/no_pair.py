"""An individual-fairness property whose pre-condition no pair meets holds vacuously: ``holds (proved)``
on certify's proof (fairspec.certify.no_pair), before any backend is planned or any model loaded (no
backend takes a tolerance below 0). Its backend, :data:`BACKEND`, says what decided it. Lint warned of
it (FS509)."""

from __future__ import annotations

import time

from fairspec import ir
from fairspec.verdict import Verdict

REASON = "no pair meets the pre-condition"
#: what decided it (the report's backend column, JSON ``backend``): certify, from the pre-condition alone
BACKEND = "certify (pre-condition)"


def vacuous(prop, spec: ir.Spec) -> Verdict | None:
    """``holds (proved)`` with the reason :data:`REASON` and a note saying why, or None."""
    if prop.kind != "individual_fairness":
        return None
    from fairspec.certify.no_pair import prove_no_pair

    t0 = time.perf_counter()
    proof = prove_no_pair(prop, spec.feature_set(prop.features))
    if proof is None:
        return None
    why = proof.detail["why"]
    return Verdict(prop.name, prop.kind, "holds", how="proved", reason=REASON, proof=proof, backend=BACKEND,
                   seconds=time.perf_counter() - t0,
                   details={"vacuous": why, "notes": [f"the property holds vacuously: {why}; it says nothing about "
                                                      f"the model (fix the pre-condition to state a claim)"]})
