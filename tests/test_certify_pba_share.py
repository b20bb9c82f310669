"""certify/pba_share.py: a PBA share claim certified from its counts and the rows it rests on."""

import math
from fractions import Fraction

import pytest

from fairspec.certify.pba_share import Refutation, certify_share

V, DELTA = 0.25, Fraction(1, 8)          # a point at v = 0.25 moving by delta = 0.125: [0.125, 0.375], floats both


def _ref(w, row=0, integer=False, lo=Fraction(V) - DELTA, hi=Fraction(V) + DELTA):
    return Refutation(("s", row), None if w is None else (w,), (lo,), (hi,), (integer,))


def _le(refs, op="<=", threshold="0.5", eligible=2, proved=0, unknown=1):
    return certify_share(eligible=eligible, proved=proved, refuted=len(refs), unknown=unknown, op=op,
                         threshold=threshold, refutations=refs)


def test_a_refutation_outside_its_box_does_not_hold():
    """One float past v + delta refutes nothing: the share (1 of 2 refuted: at most 1/2) may be 1."""
    past = math.nextafter(0.375, 1)                     # the float after 0.375
    assert Fraction(past) > Fraction(V) + DELTA
    got = _le([_ref(past)])
    assert got.status == "unknown" and got.proof is None
    assert "outside the exact neighbourhood" in got.reason
    assert _le([_ref(math.nextafter(0.125, 0))]).status == "unknown"     # below v - delta


def test_a_refutation_at_the_box_boundary_holds():
    """Exactly v + delta (and v - delta) is inside the neighbourhood: 1 of 2 refuted, the share <= 1/2 holds,
    and the proof records the witness it rests on."""
    for w in (0.375, 0.125):
        got = _le([_ref(w)])
        assert got.status == "holds", got.reason
        p = got.proof
        assert p.method == "exact-arithmetic" and p.detail["value"] == Fraction(1, 2)
        assert p.detail["refutations"] == 1 and p.detail["witnesses"][0]["witness"] == [w]
        assert p.detail["_witnesses"][0]["hi"] == ["3/8"]
        assert p.to_json()["detail"]["witnesses"][0]["row"] == ["s", 0]


def test_strict_is_not_weak():
    """The exact ratio compared as written: 1/2 < 1/2 does not hold, 1/2 <= 1/2 does."""
    assert _le([_ref(0.3)], op="<").status == "unknown"
    assert _le([_ref(0.3)], op="<=").status == "holds"
    assert _le([_ref(0.3)], op="<", threshold="0.5000001").status == "holds"


def test_missing_or_uncounted_refutations_do_not_hold():
    assert _le([_ref(None)]).status == "unknown"                                   # no runtime witness
    got = certify_share(eligible=2, proved=0, refuted=1, unknown=1, op="<=", threshold="0.5", refutations=())
    assert got.status == "unknown"                                                 # counted, not given
    assert _le([_ref(0.3, row=0), _ref(0.3, row=0)], eligible=3).status == "unknown"   # one row counted twice
    assert _le([_ref(0.5, integer=True, lo=Fraction(0), hi=Fraction(1))]).status == "unknown"   # not whole
    assert _le([_ref(1.0, integer=True, lo=Fraction(0), hi=Fraction(1))]).status == "holds"
    assert _le([Refutation(("s", 0), (0.3,), (None,), (Fraction(1),), (False,))]).status == "unknown"
    assert _le([_ref(float("nan"))]).status == "unknown"


def test_counts_must_add_up():
    assert certify_share(eligible=3, proved=0, refuted=1, unknown=1, op="<=", threshold="0.9",
                         refutations=[_ref(0.3)]).status == "unknown"
    assert certify_share(eligible=0, proved=0, refuted=0, unknown=0, op="<=", threshold="0.9").status == "unknown"


def test_ge_holds_only_on_proved_rows_the_points_proof_covers():
    """``>=`` / ``>`` rests on the proved rows: each counted must be covered by the enumeration proof."""
    import numpy as np

    from fairspec.certify.enumerate import Check, by_enumeration

    def points(keys):
        return by_enumeration([Check(np.ones(len(keys)), ">", 0)], count=len(keys), claim="points",
                              _cases=tuple(keys)).proof

    rows = [("s", 0), ("s", 1)]
    ask = dict(eligible=3, proved=2, refuted=1, unknown=0, op=">=", threshold="0.6")
    got = certify_share(proved_rows=rows, points_proof=points(rows), **ask)
    assert got.status == "holds" and got.proof.detail["value"] == Fraction(2, 3)
    assert certify_share(proved_rows=rows, points_proof=points(rows[:1]), **ask).status == "unknown"
    assert certify_share(proved_rows=rows, points_proof=None, **ask).status == "unknown"
    assert certify_share(proved_rows=rows[:1], points_proof=points(rows), **ask).status == "unknown"
    assert certify_share(proved_rows=rows, points_proof=points(rows), **{**ask, "op": ">", "threshold": "2/3"}
                         ).status == "unknown"


@pytest.mark.parametrize("op", ["==", "!="])
def test_other_comparisons_are_unknown(op):
    assert _le([_ref(0.3)], op=op).status == "unknown"


def test_violated_rests_on_the_other_sides_rows():
    """A share that misses the claim for every outcome is violated only on the rows that says so: ``>=``
    on the refutations (each inside its box), ``<=`` on the proved rows (each covered by their proof)."""
    import numpy as np

    from fairspec.certify.enumerate import Check, by_enumeration

    # >= 0.6 with 2 of 3 refuted: the share is at most 1/3
    ask = dict(eligible=3, proved=0, refuted=2, unknown=1, op=">=", threshold="0.6")
    inside = [_ref(0.3, row=0), _ref(0.375, row=1)]
    assert certify_share(refutations=inside, **ask).status == "violated"
    got = certify_share(refutations=[_ref(0.3, row=0), _ref(math.nextafter(0.375, 1), row=1)], **ask)
    assert got.status == "unknown" and "outside the exact neighbourhood" in got.reason
    # <= 0.2 with 2 of 3 proved: the share is at least 2/3
    rows = [("s", 0), ("s", 1)]
    points = by_enumeration([Check(np.ones(2), ">", 0)], count=2, claim="points", _cases=tuple(rows)).proof
    ask = dict(eligible=3, proved=2, refuted=0, unknown=1, op="<=", threshold="0.2", proved_rows=rows)
    assert certify_share(points_proof=points, **ask).status == "violated"
    assert certify_share(points_proof=None, **ask).status == "unknown"
    # between the ends: depends on the unknown points
    got = certify_share(eligible=3, proved=1, refuted=1, unknown=1, op=">=", threshold="0.5",
                        proved_rows=rows[:1], points_proof=points, refutations=[_ref(0.3)])
    assert got.status == "unknown" and "depends on the unknown points" in got.reason


def test_every_point_holds_only_on_every_eligible_point_proved_and_covered():
    import numpy as np

    from fairspec.certify.enumerate import Check, by_enumeration
    from fairspec.certify.pba_share import certify_every_point

    rows = [("s", 0), ("s", 1)]
    points = by_enumeration([Check(np.ones(2), ">", 0)], count=2, claim="points", _cases=tuple(rows)).proof
    got = certify_every_point(eligible=2, proved=2, refuted=0, unknown=0, proved_rows=rows, points_proof=points)
    assert got.status == "holds" and got.proof is points
    assert certify_every_point(eligible=3, proved=2, refuted=0, unknown=1, proved_rows=rows,
                               points_proof=points).status == "unknown"
    assert certify_every_point(eligible=2, proved=2, refuted=0, unknown=0, proved_rows=[("s", 0), ("t", 0)],
                               points_proof=points).status == "unknown"
    assert certify_every_point(eligible=2, proved=2, refuted=0, unknown=0, proved_rows=rows,
                               points_proof=None).status == "unknown"


def test_witnessed_inside():
    from fairspec.certify.pba_share import witnessed_inside

    assert witnessed_inside(_ref(0.375)) and witnessed_inside(_ref(0.125))
    assert not witnessed_inside(_ref(math.nextafter(0.375, 1)))
    assert not witnessed_inside(_ref(None))
