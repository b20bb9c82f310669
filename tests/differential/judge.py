"""The judge: run fairspec through its real entry point (``fairspec.pipeline.check``, in
process) on an instance's spec and classify each property's verdict against the truth.

Classes of an outcome:

* ``correct``
* ``wrong`` -- with a defect tag:
  ``false-proof`` (holds when the truth is violated), ``false-violation`` (violated when the
  truth holds), ``bad-witness`` (not a domain point, breaks the pre-condition, or does not
  reproduce on the runtime), ``false-estimate`` (holds (estimated) whose interval excludes
  the truth), ``max-below`` (a maximize bound / proved maximum below the true maximum),
  ``max-not-exact`` (a value called the maximum that is not), ``batch-verdict`` (holds or violated
  where the truth changes with how the runtime batches the rows: data_batched.py), ``interval`` (a maximize
  interval's lower end or value above the true maximum, or ends called the maximum that do not meet
  at it), ``value-wrong`` (an exact value
  that is not the truth), ``no-proof`` (``holds (proved)`` without a certify Proof, true or
  not: the charter's contract), ``crash`` (an internal error / exit 4 / exception), ``hang`` (the
  run outlived every budget it was given), ``missing`` (no verdict for the property)
* ``unknown`` -- tallied with the property's domain size
* ``correct`` also for any verdict but a wrong violation on a ``vacuous`` truth (nothing to
  decide) and for any verdict with a good witness on an ``ambiguous`` one (a real-arithmetic
  tie the spec's arithmetic leaves open)
* ``rejected`` -- lint refused a spec the generator believes valid (a harness or a fairspec
  bug: looked at by hand, never counted as correct)

An *expected refusal* (``Prop.expect``, a :class:`core.Expect`: an ambiguous declaration such as
several ONNX outputs and none named, class labels that do not say which is positive, ``prob(...)``
of a model without probabilities) is judged by :func:`judge_refusal` on the command line's own
exit codes and JSON (``fairspec lint`` and ``fairspec check --format json``, in process): refused
with the expected code, at the expected stage, exit code 2, no traceback is ``correct``; anything
else is ``wrong`` -- ``not-refused`` (a verdict, or exit 0 / 1 / 3), ``refused-otherwise`` (another
code, an error at lint where check was expected to be the first to see it is fine, but another
error is not; a check-time diagnostic that does not name the ambiguity), or ``crash`` (a traceback,
an internal error, exit 4).
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
    if t.status == "batch-dependent":
        # the verdict changes with how the runtime batches the rows (data_batched.py): only unknown is right
        o.klass, o.defect, o.why = "wrong", "batch-verdict", f"{o.status}, but the verdict changes with the batch: {t.note}"
        return o
    if t.status == "reading-dependent":
        # the verdict changes with how a constant of the spec is read, as a float or as a decimal (vacuous.py):
        # only unknown is right
        o.klass, o.defect, o.why = "wrong", "reading-verdict", f"{o.status}, but the verdict changes with the reading: {t.note}"
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
        return _check_interval(prop, o, v)
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


def _batched(prop: Prop) -> bool:
    """Does the property's runtime round a point by the batch it is scored in (campaign.is_batch_tie's
    rule: torch, scikit-learn, an ONNX graph in float64)?"""
    m = prop.meta
    return m.get("runtime") in ("torch", "sklearn") or (m.get("runtime") == "onnx" and m.get("dtype") == "float64")


def _check_interval(prop: Prop, o: Outcome, v: dict):
    """A maximize verdict against the true maximum T (``Truth.exact``, else the float ``Truth.value``;
    ``Truth.slack``: the truth's own documented imprecision), compared as exact rationals:

    * the upper end (a certified bound, when the verdict has one) is at least T: below it is ``max-below``;
    * the lower end and ``value`` (the best replayed pair's measure, the value its nearest float) are
      at most T: above it is ``interval``. On a runtime that rounds a point by its batch (torch,
      scikit-learn, float64 ONNX) fairspec's batch may score the maximum up to twice the runtime's
      spread higher than the truth's batch (README 'Whatever the batch': the interval
      [max, max + spread]): that much, ``details.runtime_rounding.spread`` or TOL_MAX_ABOVE relative,
      is allowed above T;
    * ``details.maximum`` calling the value the maximum ("proved", "exact ...") needs ends that meet
      at T (hi - lo within 1e-7 relative, fairspec's own rule, plus the batch allowance): else ``interval``;
    * a value with no upper end is the maximum only when ``details.maximum`` does not say otherwise
      ("not proved", "no certified upper bound", ...) and no ``details.best_value`` calls it the best
      found: then it must be T (``max-below`` / ``max-not-exact``), else it is only a lower end.
    """
    t = prop.truth
    if t.exact is None and not math.isfinite(t.value):
        return None
    T = exact(t.exact) if t.exact is not None else exact(t.value)
    slack = exact(t.slack or 0)
    scale = max(Fraction(1), abs(T))
    details = v.get("details") or {}
    said = str(details.get("maximum") or "")
    o.meta = {**o.meta, "maximum": said} if said else o.meta
    above = slack
    if _batched(prop):
        spread = (details.get("runtime_rounding") or {}).get("spread")
        above += max(2 * exact(spread) if isinstance(spread, (int, float)) else Fraction(0),
                     exact(TOL_MAX_ABOVE) * scale)
    b = v.get("bound")
    lo = hi = None
    if b is not None and len(b) == 2:
        lo, hi = _num(b[0]), _num(b[1])
    if hi is not None and math.isfinite(hi) and exact(hi) < T - slack:
        return "max-below", f"the certified upper end {hi!r} is below the true maximum {float(T)!r}"
    if hi is not None and hi == -math.inf and T > -math.inf:
        return "max-below", f"the certified upper end {hi!r} is below the true maximum {float(T)!r}"
    if lo is not None and math.isfinite(lo) and exact(lo) > T + above:
        return "interval", f"the lower end {lo!r} (the best replayed pair) is above the true maximum {float(T)!r}"
    val = o.value
    if val is not None and math.isfinite(val) and exact(val) > exact(float(T)) + above:
        # the value is the nearest float of a replayed pair's measure: at most the nearest float of T
        return ("interval" if hi is not None else "max-not-exact"), \
            f"the reported value {val!r} is above the true maximum {float(T)!r}"
    claims = said.startswith("proved") or said.startswith("exact")
    if claims and lo is not None and hi is not None and math.isfinite(lo) and math.isfinite(hi):
        if exact(hi) - exact(lo) > Fraction(1, 10 ** 7) * scale + above + slack:
            return "interval", f"details.maximum says {said!r}, but the ends {[lo, hi]} do not meet at {float(T)!r}"
    if hi is None and val is not None and math.isfinite(val) and not said and "best_value" not in details:
        # a value alone, nothing saying it is not the maximum: it claims to be it
        if exact(val) < exact(float(T)) - slack:
            return "max-below", f"the reported maximum {val!r} is below the true maximum {float(T)!r}"
    return None


def run_instance(inst: Instance, folder: Path, only: list[str] | None = None) -> list[Outcome]:
    """Write the instance into ``folder``, check each of its spec files in process, judge every
    property (an expected refusal through the command line, :func:`judge_refusal`)."""
    base = {"family": inst.family, "seed": inst.seed}
    env = inst.info.get("env") or {}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)         # e.g. FAIRSPEC_ENUMERATE_PAIRS=0: the solver path on a small domain
    try:
        outs = []
        for spec, props in inst.write_groups(folder, only):
            if inst.judge is not None:       # the instance checks its spec itself (the api family)
                outs += inst.judge(spec, props, base)
            elif props[0].expect is not None:
                outs += [judge_refusal(p, spec, base) for p in props]
            else:
                outs += _check_group(spec, props, base)
        return outs
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _check_group(spec: Path, props: list, base: dict, check=None) -> list[Outcome]:
    """``check``: spec path -> the pipeline's Report (default ``fairspec.pipeline.check``; the api
    family passes the Python API with its in-memory objects)."""
    from fairspec.api import FairspecError

    if check is None:
        from fairspec.pipeline import check

    t0 = time.perf_counter()
    try:
        rep = check(spec)
    except BaseException as e:  # noqa: BLE001 - the judge records every failure as a crash
        if isinstance(e, KeyboardInterrupt):
            raise
        if isinstance(e, FairspecError):     # the API refused an object the generator believes valid
            return [Outcome(**base, name=p.name, klass="rejected", why=f"the API refused: {e}", truth=p.truth.status,
                            domain=p.truth.domain, pairs=p.truth.pairs, meta=p.meta) for p in props]
        tb = traceback.format_exc(limit=6)
        return [Outcome(**base, name=p.name, klass="wrong", defect="crash",
                        why=f"check raised {type(e).__name__}: {e}\n{tb}", truth=p.truth.status,
                        domain=p.truth.domain, pairs=p.truth.pairs, meta=p.meta) for p in props]
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


# ------------------------------------------------------------------ expected refusals

CRASH_WORDS = ("Traceback (most recent call last)", "internal error", "this is a bug in fairspec")


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """``fairspec ARGV`` in this process, as the console script runs it: (exit code, stdout, stderr)."""
    import contextlib
    import io

    from fairspec.cli import main
    from fairspec.runtime import executor

    out, err = io.StringIO(), io.StringIO()
    kept = dict(executor._CONFIG)      # check's --workers configures the process: give it back after
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as e:    # argparse
                code = e.code if isinstance(e.code, int) else 2
    finally:
        executor._CONFIG.update(kept)
    return code, out.getvalue(), err.getvalue()


def _doc(text: str):
    import json

    try:
        return json.loads(text)
    except ValueError:
        return None


def judge_refusal(prop: Prop, spec: Path, base: dict) -> Outcome:
    """``fairspec lint`` and ``fairspec check --format json`` on a spec that must be refused
    (``prop.expect``): the expected code at the expected stage, exit code ``expect.exit``, no
    verdict, no traceback; anything else is wrong (``not-refused``, ``refused-otherwise``, ``crash``)."""
    e = prop.expect
    o = Outcome(**base, name=prop.name, klass="correct", truth=f"refused {e.code} at {e.stage}",
                domain=prop.truth.domain, pairs=prop.truth.pairs, meta={**prop.meta, "expect": e.code,
                                                                        "stage": e.stage})
    t0 = time.perf_counter()
    lcode, lout, lerr = run_cli(["lint", str(spec), "--format", "json"])
    ccode, cout, cerr = run_cli(["check", str(spec), "--format", "json", "--workers", "1"])
    o.seconds = time.perf_counter() - t0
    ldoc, cdoc = _doc(lout), _doc(cout)
    lint_errors = sorted({d["code"] for d in (ldoc or {}).get("diagnostics", []) if d.get("severity") == "error"})
    check_errors = sorted({d["code"] for d in (cdoc or {}).get("diagnostics", []) if d.get("severity") == "error"})
    sentence = (cdoc or {}).get("error") or ""
    verdicts = [(v.get("name"), v.get("status")) for v in (cdoc or {}).get("properties", [])]
    o.status = "refused" if ccode == e.exit and not verdicts else (verdicts[0][1] if verdicts else f"exit {ccode}")
    o.reason = "; ".join(x for x in (", ".join(check_errors), sentence) if x)[:400] or None

    def wrong(defect, why):
        o.klass, o.defect, o.why = "wrong", defect, why
        return o

    for cmd, code, text in (("lint", lcode, lerr), ("check", ccode, cerr)):
        hit = next((w for w in CRASH_WORDS if w in text), None)
        if code == 4 or hit:
            return wrong("crash", f"fairspec {cmd} exited {code}" + (f", stderr: {text.strip()[-300:]}" if text else ""))
    if ldoc is None or cdoc is None:
        return wrong("crash", f"fairspec {'lint' if ldoc is None else 'check'} --format json printed no JSON document")
    if verdicts or ccode in (0, 1, 3):
        return wrong("not-refused", f"check gave {verdicts or 'no verdict'} (exit {ccode}) where {e.code} "
                                    f"should refuse the spec at {e.stage}")
    if ccode != e.exit:
        return wrong("refused-otherwise", f"check exited {ccode}, not {e.exit}")
    if e.stage == "lint":
        if lint_errors != [e.code] or lcode != e.exit:
            return wrong("refused-otherwise" if lint_errors else "not-refused",
                         f"lint exited {lcode} with errors {lint_errors or 'none'}, not {e.code}")
        if check_errors != [e.code]:
            return wrong("refused-otherwise", f"check refused with {check_errors or sentence[:200]!r}, not {e.code}")
        return o
    if any(c != e.code for c in lint_errors) or lcode != (e.exit if lint_errors else 0):
        return wrong("refused-otherwise", f"lint exited {lcode} with errors {lint_errors}, not nothing or {e.code}")
    # a declaration only the loaded model shows ambiguous is the same diagnostic at check, at the
    # declaration (fairspec.runtime.context.model), whose message says what is ambiguous
    if check_errors != [e.code]:
        return wrong("refused-otherwise", f"check refused with {check_errors or sentence[:200]!r}, not {e.code}")
    said = " ".join(d.get("message", "") for d in cdoc.get("diagnostics", []) if d.get("code") == e.code)
    if e.words and e.words not in said:
        return wrong("refused-otherwise", f"check's {e.code} {said[:300]!r} does not say {e.words!r}")
    return o
