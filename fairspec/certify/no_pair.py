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


def prove_rule_reads_tied(prop: ir.IndividualFairness, rule: ir.Expr) -> Proof | None:
    """The proof that a rule model (a formula over feature values, written in the spec) decides both points of
    every admissible pair alike because it reads only features the pair ties: none free (``except``), none
    relaxed (``|x.f - x'.f| <= t``). None when it reads one of them."""
    read = sorted({x.feature for x in ir.subexpressions(rule) if isinstance(x, ir.FeatureRef)})
    moving = set(prop.free) | {n for n, _ in prop.relaxed}
    if set(read) & moving or prop.post != "label":
        return None
    return _mint("exact-arithmetic", f"the rule reads only {', '.join(read) or 'no feature'}, which every admissible "
                 f"pair of {prop.name} ties: both points of a pair are decided alike", read=read,
                 free=list(prop.free), relaxed=[list(r) for r in prop.relaxed])
