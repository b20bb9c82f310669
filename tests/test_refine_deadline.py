"""The refinement keeps its time budget (audit s19 engines #6, round 2): a batch of sub-boxes is one
vectorised call no deadline interrupts, so a batch started with a second left used to run to its end
(the tie fallback on a 13-100-100-1 Fairify network spent 67 s of a 60 s timeout, one 1,024-box batch
taking 17 s). Each batch now takes only the sub-boxes the time left fits at the slowest pace a batch of
the call has had (the last batch's pace alone let a slow batch after a fast one overrun: session 21, h5).

No test here reads the machine's clock: the refinement's clock is a fake one that each decided sub-box
advances by one second, so the budget is counted in sub-boxes whatever the machine's speed."""

from __future__ import annotations

import numpy as np
import pytest

import fairspec.backends.refine as refine
import fairspec.certify.boxes as boxes
from fairspec.backends.milp.partition import fairify_partitions
from fairspec.backends.pair import PairProblem
from conftest import protected_weight_net


class _Clock:
    """monotonic / perf_counter of the refinement: seconds the sub-boxes decided so far cost."""

    def __init__(self):
        self.t = 0.0

    def monotonic(self):
        return self.t

    def perf_counter(self):
        return self.t


@pytest.fixture
def clock(monkeypatch):
    """The fake clock, and every sub-box the bounds see left undecided (so the refinement keeps splitting
    until its budget ends) at one second each."""
    c = _Clock()
    real = boxes.decide_boxes

    def slow_and_undecided(layers, LO, HI, *a, **kw):
        dec = real(layers, LO, HI, *a, **kw)
        c.t += len(LO)
        dec.status = np.zeros_like(dec.status)
        dec.cut = None
        return dec

    monkeypatch.setattr(refine, "time", c)
    monkeypatch.setattr(boxes, "decide_boxes", slow_and_undecided)
    return c


def _problem():
    net = protected_weight_net(1, 1.0, True, False, name="deadline-test")
    return PairProblem(net, lo=[0, 0, 0, 0], hi=[255, 255, 255, 1], integer=[True] * 4, free=(3,), post="logit",
                       eps=0.25)


@pytest.mark.parametrize("seconds", [5, 20, 47])
def test_the_whole_domain_refinement_stops_within_its_budget(clock, seconds):
    """The tie fallback's call (the domain as one box, TIE_BOXES at most): the batches double (1, 2, 4,
    ...) until the time left fits fewer; before, 20 s ran to 31 s (1 + 2 + 4 + 8 + 16 sub-boxes)."""
    p = _problem()
    whole = [(np.asarray(p.lo, dtype=np.float64), np.asarray(p.hi, dtype=np.float64))]
    (d,) = refine.decide_partitions(p, whole, seconds=float(seconds), max_boxes=4096, enum_points=0, split=False)
    assert d.status == "open"
    assert clock.t <= seconds, (clock.t, seconds)
    assert d.stats["boxes"] >= seconds - 1          # the budget is used, not given up early


def test_many_partitions_first_batch_is_small(clock):
    """Many boxes at the start (a partitioned property's refinement): the first batch, whose pace is not
    known yet, is FIRST_BATCH, not BATCH (before: 200 sub-boxes at once against 50 s)."""
    p = _problem()
    parts = fairify_partitions(p, threshold=16)[:200]
    assert len(parts) == 200
    refine.decide_partitions(p, parts, seconds=50.0, enum_points=0, split=False)
    assert clock.t <= 50.0, clock.t
    assert clock.t >= refine.FIRST_BATCH


class _Uneven:
    """A machine whose load changes between batches: the sub-boxes of the k-th call of the bounds cost
    ``costs[k % len(costs)]`` seconds each (the fake clock), every sub-box left undecided."""

    def __init__(self, monkeypatch, costs):
        self.t, self.k, self.costs, self.starts = 0.0, 0, costs, []
        real = boxes.decide_boxes

        def uneven(layers, LO, HI, *a, **kw):
            self.starts.append(self.t)
            dec = real(layers, LO, HI, *a, **kw)
            self.t += len(LO) * self.costs[self.k % len(self.costs)]
            self.k += 1
            dec.status = np.zeros_like(dec.status)
            dec.cut = None
            return dec

        monkeypatch.setattr(refine, "time", self)
        monkeypatch.setattr(boxes, "decide_boxes", uneven)

    def monotonic(self):
        return self.t

    def perf_counter(self):
        return self.t


@pytest.mark.parametrize("costs", [(1.0, 0.125), (1.0, 0.5, 0.0625), (0.5, 0.5, 1.0, 0.03125)])
@pytest.mark.parametrize("many", [False, True])
def test_a_fast_batch_does_not_license_a_slow_one_to_overrun(monkeypatch, costs, many):
    """Batches alternately fast and slow: a batch sized at the last (fast) batch's pace ran a slow one
    past the deadline; sized so that half the time left fits it at the slowest pace seen, no batch ends
    past the deadline unless it is more than twice as slow as every batch before it (the last costs: a
    batch twice as slow as any before, and a fast one after)."""
    clock = _Uneven(monkeypatch, costs)
    p = _problem()
    parts = fairify_partitions(p, threshold=16)[:200] if many else \
        [(np.asarray(p.lo, dtype=np.float64), np.asarray(p.hi, dtype=np.float64))]
    seconds = 300.0
    refine.decide_partitions(p, parts, seconds=seconds, max_boxes=None if many else 4096, enum_points=0,
                             split=False)
    slowest = max(costs)
    assert clock.t <= seconds, (clock.t, seconds)
    assert clock.t >= seconds - 2 * slowest * refine.FIRST_BATCH       # the budget is used


@pytest.mark.parametrize("slowdown", [4.0, 16.0])
def test_an_unseen_slowdown_overruns_by_at_most_its_own_excess(monkeypatch, slowdown):
    """A batch slower than anything seen (the machine's load jumps) is the one way past the deadline; it
    was sized to half the time left at the slowest pace before it, so it ends by ``slowdown / 2`` times
    the time left at its start, never more."""
    clock = _Uneven(monkeypatch, (0.25, 0.25, 0.25 * slowdown) + (0.25,) * 64)
    p = _problem()
    parts = fairify_partitions(p, threshold=16)[:200]
    seconds = 300.0
    refine.decide_partitions(p, parts, seconds=seconds, enum_points=0, split=False)
    # the third batch (the slow one) was sized to half the time left at its start at 0.25 s a sub-box
    start = clock.starts[2]
    assert start < seconds
    assert clock.t <= start + slowdown / 2 * (seconds - start), (clock.t, start)
