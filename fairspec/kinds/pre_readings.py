"""``mode = maximize`` of a small-domain individual-fairness property whose pre-condition's two readings
part (session 33): its constants read as the floats they are stored as and as the decimals they are
written as admit different pairs (kinds/pair_pre.py, :attr:`PairPre.parted`), and each reading has its own
largest difference, neither of which is chosen.

:func:`readings_maximum` runs the enumeration three times: once in ``prove`` mode over the union of the two
admitted sets (the verdict, its proof and its witness, exactly as a ``prove`` of the property: ``holds
(proved)`` by certify's enumeration over the union, ``violated`` only with a pair both readings admit, else
``unknown`` naming where they part), and once per reading in ``maximize`` mode with :func:`reading` forcing
PairPre to that reading alone (the ordinary single-reading maximize: its value and certified interval over
exactly the pairs that reading admits). The two maxima equal (the same value and interval): that value and
interval, as usual. Else no value (none is THE maximum) and the hull of the two certified intervals, which
holds both readings' true maxima (the convention of a relaxed run's bound, README: a bound and no value);
``details.maximum_by_reading`` and the reason name each reading's (``{"pairs": 0}``: a reading no pair meets,
whose maximum is -inf, the max over no pair; no value: a reading that gives no interval) and its verdict (a run
held to it); an ``unknown`` whose readings' verdicts differ (one holds, one violated) says so in its reason."""

from __future__ import annotations

import contextvars
import math
from contextlib import contextmanager

_READING: contextvars.ContextVar = contextvars.ContextVar("fairspec_pre_reading", default=None)

#: the readings, as PairPre's (float reading, decimal reading) index them
NAMES = ("float", "decimal")


def one_reading() -> int | None:
    """The reading PairPre is held to (0: the floats the constants are stored as, 1: the decimals they are
    written as), or None: both, kept apart where they part."""
    return _READING.get()


@contextmanager
def reading(r: int):
    """PairPre reads the constants in reading ``r`` alone inside the block."""
    token = _READING.set(r)
    try:
        yield
    finally:
        _READING.reset(token)


def _interval(v):
    """A reading's verdict's (value, [lo, hi]) of its maximum, or None where it gives none; no pair: -inf."""
    if v.bound is not None and None not in v.bound:
        return v.value, (float(v.bound[0]), float(v.bound[1]))
    if v.value == -math.inf or (v.details or {}).get("pairs") == 0:
        return -math.inf, (-math.inf, -math.inf)
    return None


def _verdict(v) -> str:
    """A reading's verdict as the report words it: ``holds (proved)``, ``violated``, ``unknown``."""
    return f"{v.status} ({v.how})" if v.how else v.status


def readings_maximum(run, parted: str):
    """The maximize verdict of a property whose pre-condition's readings part (at ``parted``, PairPre's
    words); ``run(mode)``: the enumeration's verdict in that mode (the caller's own function)."""
    from dataclasses import replace

    union = run("prove")
    per = []
    for r in (0, 1):
        with reading(r):
            per.append(run("maximize"))
    got = [_interval(v) for v in per]
    details = {k: x for k, x in (union.details or {}).items() if k not in ("domain_maximum", "witness_value")}
    details["mode"] = "maximize"
    details["maximum_by_reading"] = {n: {**({} if g is None else {"pairs": 0} if g[0] == -math.inf else
                                            {"value": g[0], "bound": list(g[1])}), "verdict": _verdict(v)}
                                     for n, g, v in zip(NAMES, got, per)}
    if union.status == "violated" and union.value is not None:
        details["witness_value"] = union.value      # the witness's measure, rounded down (pair_measure)
    if got[0] == got[1] or None in got:
        same = got[0] == got[1]
        value, bound = (got[0][0], got[0][1]) if same and got[0] is not None else (None, None)
        if value == -math.inf and bound == (-math.inf, -math.inf):
            bound = None                            # no pair in either reading: the usual -inf, no interval
        if same and "maximum" in (per[0].details or {}):
            details["maximum"] = per[0].details["maximum"]
        elif not same:
            details["maximum"] = (f"no value: the {NAMES[got.index(None)]} reading gives no certified interval (each "
                                  f"reading of the constants has its own largest difference)")
        said = ("" if not same or value is None else
                f"; both readings of the constants give the largest difference {value!r}")
    else:
        value, bound = None, (min(g[1][0] for g in got), max(g[1][1] for g in got))
        each = "; ".join(f"the {n} reading admits no pair (its maximum -inf)" if g[0] == -math.inf else
                         f"the {n} reading's largest difference is {g[0]!r} (in [{g[1][0]!r}, {g[1][1]!r}])"
                         for n, g in zip(NAMES, got))
        details["maximum"] = (f"no value: each reading of the constants has its own largest difference ({each}); the "
                              f"interval holds both")
        said = (f"; the pre-condition's constants read as floats and as decimals admit different pairs (they part "
                f"at {parted}): {each}, so no value is reported, and [{bound[0]!r}, {bound[1]!r}] holds both")
    verdicts = [_verdict(v) for v in per]
    if union.status == "unknown" and verdicts[0] != verdicts[1]:     # each reading decided, and not alike
        said += ("; each reading alone: " + ", ".join(f"the {n} reading's verdict is {w}" for n, w in zip(NAMES, verdicts))
                 + " -- the property as both readings read it is neither (a violation shown only by pairs one reading "
                   "admits), so unknown")
    seconds = max(v.seconds for v in (union, *per))      # each run's is since the same start: the last one's
    return replace(union, value=value, bound=bound, details=details, seconds=seconds,
                   reason=f"{union.reason}{said}" if union.reason else union.reason)
