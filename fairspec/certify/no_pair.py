"""``holds (proved)`` for an individual-fairness property whose pre-condition no pair meets: it holds
vacuously, whatever the model computes. The emptiness is decided by fairspec.ir.no_pair from the spec's
constants and the declared domains in exact integer arithmetic (each constant read as the float it
is stored as and as the decimal it is written as; empty only where both readings agree); sema warns with the same sentence (FS509)."""

from __future__ import annotations

from fairspec import ir
from fairspec.certify.proof import Proof, _mint


def prove_no_pair(prop: ir.IndividualFairness, fs: ir.FeatureSet) -> Proof | None:
    """The proof that no pair of ``fs``'s domain meets ``prop``'s pre-condition, or None."""
    from fairspec.ir.no_pair import no_pair_reason

    why = no_pair_reason(prop, fs)
    if why is None:
        return None
    return _mint("exact-arithmetic", f"no pair meets the pre-condition of {prop.name}: {why}", why=why,
                 relaxed=[list(r) for r in prop.relaxed], free=list(prop.free))
