"""The judge: run fairspec through its real entry point (``fairspec.pipeline.check``, in
process) on an instance's spec and classify each property's verdict against the truth.

Classes of an outcome:

* ``correct``
* ``wrong`` -- with a defect tag:
  ``false-proof`` (holds when the truth is violated), ``false-violation`` (violated when the
  truth holds), ``bad-witness`` (not a domain point, breaks the pre-condition, or does not
  reproduce on the runtime), ``false-estimate`` (holds (estimated) whose interval excludes
  the truth), ``max-below`` (a maximize bound / proved maximum below the true maximum),
  ``max-not-exact`` (a value called the maximum that is not), ``value-wrong`` (an exact value
  that is not the truth), ``no-proof`` (``holds (proved)`` without a certify Proof, true or
  not: the charter's contract), ``crash`` (an internal error / exit 4 / exception), ``hang`` (the
  run outlived every budget it was given), ``missing`` (no verdict for the property)
* ``unknown`` -- tallied with the property's domain size
* ``correct`` also for any verdict but a wrong violation on a ``vacuous`` truth (nothing to
  decide) and for any verdict with a good witness on an ``ambiguous`` one (a real-arithmetic
  tie the spec's arithmetic leaves open)
* ``rejected`` -- lint refused a spec the generator believes valid (a harness or a fairspec
  bug: looked at by hand, never counted as correct)
"""

from __future__ import annotations

import math
import os
import time
import traceback
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from .core import Instance, Prop, exact

TOL_MAX_ABOVE = 1e-6       # a reported maximum this far above the truth is not exact (relative)


@dataclass
class Outcome:
    family: str
    seed: int
    name: str
    klass: str                 # correct | wrong | unknown | rejected
    defect: str = ""           # the wrong verdict's tag
    why: str = ""
    status: str = ""           # fairspec's verdict
    how: str | None = None
    value: float | None = None
    bound: list | None = None
    reason: str | None = None
    proof: str | None = None   # the certify method of a holds (proved)
    truth: str = ""
    truth_value: float | None = None
    domain: int = 0
    pairs: int = 0
    seconds: float = 0.0
    meta: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return dict(self.__dict__)


def _num(x):
    if x is None:
        return None
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x


def judge_verdict(prop: Prop, v: dict | None, base: dict) -> Outcome:
    t = prop.truth
    o = Outcome(**base, name=prop.name, klass="correct", truth=t.status, truth_value=t.value, domain=t.domain,
                pairs=t.pairs, meta=prop.meta)
    if v is None:
        o.klass, o.defect, o.why = "wrong", "missing", "no verdict for this property"
        return o
    o.status, o.how, o.value, o.reason = v["status"], v.get("how"), _num(v.get("value")), v.get("reason")
    o.bound = v.get("bound")
    proof = v.get("proof")
    o.proof = proof.get("method") if isinstance(proof, dict) else None
    o.seconds = float(v.get("seconds") or 0.0)
    reason = v.get("reason") or ""
    if o.status == "unknown":
        if "internal error" in reason or "fairspec bug" in reason:
            o.klass, o.defect, o.why = "wrong", "crash", reason
        elif t.status != "vacuous":      # vacuous: nothing to decide (PBA without an eligible point)
            o.klass = "unknown"
        return o
    if o.status == "violated":
        if t.check_witness is not None and prop.meta.get("witness", True):
            bad = t.check_witness(v.get("witness"))
            if bad:
                o.klass, o.defect, o.why = "wrong", "bad-witness", bad
                return o
        if t.status in ("holds", "vacuous"):
            o.klass, o.defect, o.why = "wrong", "false-violation", f"violated, but the truth is {t.status}"
            return o
    if o.status == "holds":
        if t.status == "violated":
            o.klass = "wrong"
            o.defect = "false-proof" if o.how == "proved" else "false-estimate"
            o.why = f"holds ({o.how}), but the truth is violated"
            return o
        if o.how == "proved" and o.proof is None:
            # the charter: `holds (proved)` only with a certify.Proof (JSON "proof": {method, ...})
            o.klass, o.defect = "wrong", "no-proof"
            o.why = "holds (proved) without a certify proof (JSON 'proof' is null)"
            return o
    bad = _check_value(prop, o, v)
    if bad:
        o.klass, o.defect, o.why = "wrong", bad[0], bad[1]
    return o


def _check_value(prop: Prop, o: Outcome, v: dict):
    """A maximize interval / proved maximum, a metric's exact value, a proved max k."""
    t = prop.truth
    if t.value is None or t.value_kind is None:
        return None
    truth = t.value
    if t.value_kind == "max":
        # maximize: an interval [best replayed value, certified upper bound] when the verdict
        # carries one; a value alone is a claim that it is the maximum (holds or violated)
        scale = max(1.0, abs(truth)) if math.isfinite(truth) else 1.0
        b = v.get("bound")
        if b is not None and len(b) == 2 and _num(b[1]) is not None:
            lo, hi = _num(b[0]), _num(b[1])
            if hi < truth - 1e-12 * scale:
                return "max-below", f"the certified upper bound {hi!r} is below the true maximum {truth!r}"
            if lo is not None and lo > truth + TOL_MAX_ABOVE * scale:
                return "max-not-exact", f"the best replayed value {lo!r} is above the true maximum {truth!r}"
            if o.value is not None and o.value > truth + TOL_MAX_ABOVE * scale:
                return "max-not-exact", f"the reported value {o.value!r} is above the true maximum {truth!r}"
            return None
        if o.value is None or not math.isfinite(o.value) or not math.isfinite(truth):
            return None
        if o.value > truth + TOL_MAX_ABOVE * scale:
            return "max-not-exact", f"the reported maximum {o.value!r} is above the true maximum {truth!r}"
        if o.value < truth - 1e-12 * scale:
            return "max-below", f"the reported maximum {o.value!r} is below the true maximum {truth!r}"
        return None
    if t.value_kind == "metric":
        want = t.exact if t.exact is not None else exact(truth)
        if o.value is not None and (o.how == "proved" or prop.meta.get("point_value")):
            if abs(exact(o.value) - want) > Fraction(1, 10 ** 9) * max(1, abs(want)):
                return "value-wrong", f"the exact value {o.value!r} is not the true value {truth!r}"
        b = v.get("bound")
        if o.how == "estimated" and b is not None and None not in b:
            if not (float(b[0]) - 1e-12 <= truth <= float(b[1]) + 1e-12):
                return "false-estimate", f"the interval {b} excludes the true value {truth!r}"
        return None
    if t.value_kind == "share":
        # PBA: bound = [share proved, share proved or unknown] must contain the true share
        b = v.get("bound")
        want = float(t.exact if t.exact is not None else truth)
        if b is not None and len(b) == 2 and None not in b:
            if float(b[0]) > want + 1e-12 or float(b[1]) < want - 1e-12:
                return "value-wrong", f"the share interval {b} excludes the true share {want!r}"
        return None
    if t.value_kind == "k":
        if o.value is not None and o.how == "proved" and int(round(o.value)) != int(truth):
            return "value-wrong", f"the proved max k {o.value!r} is not the true max k {truth!r}"
        if o.value is not None and o.value > truth:
            return "value-wrong", f"the reported k {o.value!r} exceeds the true max k {truth!r}"
        return None
    return None


def run_instance(inst: Instance, folder: Path, only: list[str] | None = None) -> list[Outcome]:
    """Write the instance into ``folder``, check it in process, judge every property."""
    from fairspec.pipeline import check

    spec = inst.write(folder, only)
    props = [p for p in inst.props if only is None or p.name in only]
    base = {"family": inst.family, "seed": inst.seed}
    t0 = time.perf_counter()
    env = inst.info.get("env") or {}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)         # e.g. FAIRSPEC_ENUMERATE_PAIRS=0: the solver path on a small domain
    try:
        rep = check(spec)
    except BaseException as e:  # noqa: BLE001 - the judge records every failure as a crash
        if isinstance(e, KeyboardInterrupt):
            raise
        tb = traceback.format_exc(limit=6)
        return [Outcome(**base, name=p.name, klass="wrong", defect="crash",
                        why=f"check raised {type(e).__name__}: {e}\n{tb}", truth=p.truth.status,
                        domain=p.truth.domain, pairs=p.truth.pairs, meta=p.meta) for p in props]
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    elapsed = time.perf_counter() - t0
    if rep.has_errors:
        msg = rep.error or "; ".join(f"{d.code} {d.message} ({d.span.line if d.span else '?'})"
                                     for d in rep.diagnostics if d.is_error)
        return [Outcome(**base, name=p.name, klass="rejected", why=msg, truth=p.truth.status,
                        domain=p.truth.domain, pairs=p.truth.pairs, meta=p.meta, seconds=elapsed / max(1, len(props)))
                for p in props]
    verdicts = {v.name: v.to_json() for v in rep.verdicts}
    outs = []
    for p in props:
        o = judge_verdict(p, verdicts.get(p.name), base)
        crash = [e for e in rep.internal_errors if e.startswith(p.name + ":")]
        if crash and o.klass != "wrong":
            o.klass, o.defect, o.why = "wrong", "crash", crash[0]
        outs.append(o)
    return outs
