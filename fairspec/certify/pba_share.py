"""A PBA share claim (``pba(...) <= 0.05``, ``>= 0.6``) certified: the exact ratio of counts compared with
the threshold as written, and the rows that ratio rests on checked one by one.

PBA (kinds/pba.py) counts its eligible points as proved (verified on every offset of the neighbourhood),
refuted (a runtime witness breaks them) or unknown. A share claim holds for every outcome of the unknown
points when

* ``>=`` / ``>``: ``proved / eligible`` meets it -- which rests on the **proved** rows: each one counted must
  be covered by the enumeration :class:`~fairspec.certify.proof.Proof` of the proved points (certify
  compared every offset's runtime outputs);
* ``<=`` / ``<``: ``(eligible - refuted) / eligible`` meets it -- which rests on the **refuted** rows: each
  one counted must have a recorded witness (the moving features' values at a runtime refutation) that lies
  inside its row's exact neighbourhood, ``max(v - delta, lo) <= w <= min(v + delta, hi)`` compared on exact
  rationals (a witness one float past ``v + delta`` refutes nothing: the row may be verified, and the share
  larger), a whole number for an int feature.

:func:`certify_share` makes those checks and mints the ``exact-arithmetic`` Proof, which records the
refutations' witnesses and boxes and the proved points' Proof. A share that misses the claim for every
outcome (``violated``) rests on the other side's rows, checked the same way: ``(eligible - refuted) /
eligible`` below a ``>=`` on the refutations, ``proved / eligible`` above a ``<=`` on the proved rows.
Anything it cannot confirm is ``unknown`` with the reason. Imports nothing but certify and the standard library.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["Refutation", "ShareDecision", "certify_share", "certify_every_point", "witnessed_inside"]

#: refutations listed in the proof's JSON (the Proof object keeps every one, under ``_witnesses``)
SHOWN_WITNESSES = 10


@dataclass(frozen=True)
class Refutation:
    """One counted refutation: ``row`` names it (any hashable: kinds/pba uses (flip, row of the data));
    ``witness`` the moving features' values at its runtime witness (floats read bit for bit, or Fractions;
    None when none was recorded); ``lo`` / ``hi`` the exact ends of its neighbourhood per moving feature
    (Fractions: ``max(v - delta, domain lo)``, ``min(v + delta, domain hi)``); ``integer`` per moving
    feature, whether only whole numbers belong to it."""

    row: object
    witness: tuple | None
    lo: tuple
    hi: tuple
    integer: tuple


@dataclass(frozen=True)
class ShareDecision:
    """``status`` "holds" (with ``proof``), "violated" (the share misses the claim for every outcome of the
    unknown points, on the rows checked) or "unknown" (with ``reason``, why certify did not confirm it)."""

    status: str
    reason: str
    proof: object = None


def _exact(x):
    """x as an exact rational, None when it is no finite number."""
    if isinstance(x, bool):
        return None
    if isinstance(x, (Fraction, int)):
        return Fraction(x)
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return Fraction(f) if math.isfinite(f) else None


def _inside(ref: Refutation) -> str | None:
    """None when ``ref``'s witness lies inside its exact neighbourhood, else why not."""
    if ref.witness is None:
        return "has no recorded runtime witness"
    w = tuple(ref.witness)
    if not (len(w) == len(ref.lo) == len(ref.hi) == len(ref.integer)):
        return "has a witness and a neighbourhood of different dimensions"
    for k, (x, a, b, whole) in enumerate(zip(w, ref.lo, ref.hi, ref.integer)):
        q, a, b = _exact(x), _exact(a), _exact(b)
        if q is None or a is None or b is None:
            return f"has a witness or a neighbourhood end that is no finite number (moving feature {k})"
        if not a <= q <= b:
            return f"has its witness outside the exact neighbourhood (moving feature {k}: {float(q)!r} not in " \
                   f"[{a}, {b}])"
        if whole and q.denominator != 1:
            return f"has its witness at {float(q)!r}, not a whole number of an int feature (moving feature {k})"
    return None


def witnessed_inside(ref: Refutation) -> bool:
    """Whether ``ref`` has a recorded runtime witness inside its exact neighbourhood (a whole number for an int
    feature): what a PBA ``violated`` without a share rests on (kinds/pba.py picks its witness among these)."""
    return _inside(ref) is None


def _points_cover(points_proof, proved_rows) -> str | None:
    """None when the enumeration Proof ``points_proof`` covers every one of ``proved_rows``, else why not."""
    from fairspec.certify.proof import Proof

    rows = list(proved_rows)
    if not rows:
        return None
    if not isinstance(points_proof, Proof) or points_proof.method != "enumeration":
        return "the proved points have no enumeration proof"
    covered = points_proof.detail.get("_cases")
    if covered is None:
        return "the proved points' proof does not say which points it covers"
    missing = set(rows) - set(covered)
    if missing:
        return f"{len(missing)} point(s) counted as proved are not covered by the proved points' proof"
    return None


def certify_share(*, eligible: int, proved: int, refuted: int, unknown: int, op: str, threshold,
                  proved_rows=(), points_proof=None, refutations=(), claim: str = "") -> ShareDecision:
    """Whether ``share op threshold`` holds for every outcome of the unknown points, certified; or fails for
    every one of them (``violated``).

    ``eligible`` / ``proved`` / ``refuted`` / ``unknown``: the counts (eligible = the sum of the other
    three); ``op`` one of ``<``, ``<=``, ``>``, ``>=``; ``threshold`` as the spec writes it
    (:func:`fairspec.certify.exact.threshold_of`). ``proved_rows``: the keys of the rows counted as proved,
    each of which ``points_proof`` (the enumeration Proof of the proved points, whose ``detail["_cases"]``
    lists the keys it covers) must cover; ``refutations``: a :class:`Refutation` per row counted as
    refuted. The share lies in [proved / eligible, (eligible - refuted) / eligible], compared exactly (``<``
    is not ``<=``). ``holds``: its worst end meets the claim -- the lower for ``>=`` / ``>`` (resting on the
    proved rows), the upper for ``<=`` / ``<`` (resting on the refutations, and the proved rows checked too);
    ``violated``: its best end misses it -- the upper for ``>=`` / ``>`` (resting on the refutations), the
    lower for ``<=`` / ``<`` (resting on the proved rows); else ``unknown``, also when what it rests on is
    not confirmed (the reason says what)."""
    from fairspec.certify.exact import prove_exact, threshold_of
    from fairspec.certify.proof import Proof

    def no(reason: str) -> ShareDecision:
        return ShareDecision("unknown", reason)

    counts = (eligible, proved, refuted, unknown)
    if any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in counts):
        return no("the counts are not whole numbers >= 0")
    if eligible != proved + refuted + unknown:
        return no(f"the counts do not add up ({proved} proved + {refuted} refuted + {unknown} unknown != "
                  f"{eligible} eligible)")
    if eligible == 0:
        return no("no eligible point: the share is undefined")
    if op not in ("<", "<=", ">", ">="):
        return no(f"a share compared with {op!r}")
    try:
        t = threshold_of(threshold)
    except (TypeError, ValueError, ZeroDivisionError) as e:
        return no(f"the threshold {threshold!r} is no exact number ({e})")

    def meets(v: Fraction) -> bool:
        return {"<": v < t, "<=": v <= t, ">": v > t, ">=": v >= t}[op]

    low, high = Fraction(proved, eligible), Fraction(eligible - refuted, eligible)
    upper = op in ("<", "<=")
    worst, best = (high, low) if upper else (low, high)
    rows, refs = list(proved_rows), list(refutations)

    def proved_ok() -> str | None:
        if len(rows) != proved or len(set(rows)) != proved:
            return f"{proved} points are counted as proved, {len(set(rows))} proved rows are given"
        return _points_cover(points_proof, rows)

    def refuted_ok() -> str | None:
        if len(refs) != refuted or len({r.row for r in refs}) != refuted:
            return f"{refuted} points are counted as refuted, {len({r.row for r in refs})} refutations are given"
        for r in refs:
            why = _inside(r)
            if why:
                return f"a refutation the share rests on (row {r.row}) {why}"
        return None

    if not meets(worst):
        if meets(best):
            return no(f"the share lies in [{low}, {high}]: {op} {t} depends on the unknown points")
        # violated for every outcome: rests on the refutations (>= / >: the share is at most high) or on the
        # proved points (<= / <: at least low)
        why = proved_ok() if upper else refuted_ok()
        if why:
            return no(f"the share lies in [{low}, {high}], never {op} {t}, but {why}")
        return ShareDecision("violated", f"the share lies in [{low}, {high}]: never {op} {t}")
    # holds: the proved points are checked for either side (a >= / > claim rests on them; a <= / < one only on
    # the refutations, but a share whose proved points certify does not confirm is no proof either)
    why = proved_ok() or (refuted_ok() if upper else None)
    if why:
        return no(why)
    witnesses = [{"row": r.row, "witness": [float(x) for x in r.witness],
                  "lo": [str(a) for a in r.lo], "hi": [str(b) for b in r.hi]} for r in refs] if upper else []
    proof = prove_exact(worst, op, t, claim=claim or f"the share of PBA-verified points {op} {t}",
                        eligible=eligible, proved=proved, refuted=refuted, unknown=unknown,
                        rests_on="the refuted points, each witnessed inside its exact neighbourhood" if upper
                        else "the proved points, each covered by their enumeration proof",
                        points=points_proof.to_json() if isinstance(points_proof, Proof) else None,
                        refutations=len(witnesses), witnesses=witnesses[:SHOWN_WITNESSES], _witnesses=witnesses)
    if proof is None:       # (the comparison above is the one prove_exact makes)
        return no(f"the share {worst} is not {op} {t}")
    return ShareDecision("holds", "", proof)


def certify_every_point(*, eligible: int, proved: int, refuted: int, unknown: int, proved_rows=(),
                        points_proof=None) -> ShareDecision:
    """PBA without a share (``pba(...)`` alone): every eligible point verified. ``holds`` with the enumeration
    Proof of the proved points when every eligible point is counted proved (none refuted, none unknown) and that
    proof covers each proved row (``detail["_cases"]``); else ``unknown`` with the reason (a refuted point is the
    caller's ``violated``, on its replayed witness)."""
    counts = (eligible, proved, refuted, unknown)
    if any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in counts) or eligible == 0 \
            or eligible != proved + refuted + unknown:
        return ShareDecision("unknown", "the counts are not those of a nonempty set of points")
    if proved != eligible:
        return ShareDecision("unknown", f"{eligible - proved} of {eligible} eligible points are not proved")
    rows = list(proved_rows)
    if len(rows) != proved or len(set(rows)) != proved:
        return ShareDecision("unknown", f"{proved} points are counted as proved, {len(set(rows))} proved rows "
                                        "are given")
    why = _points_cover(points_proof, rows)
    if why:
        return ShareDecision("unknown", why)
    return ShareDecision("holds", "", points_proof)
