"""A partitioned run's `unknown` reads each kind of sub-reason once: it was
"3 of 4 partitions undecided (A in 2.1 s (time limit); A in 2.3 s (time limit); B)" -- the same phrase
repeated, parentheses inside parentheses, past three reasons the rest dropped. Now the reasons that
differ only in their numbers are one phrase with the numbers' range and the partitions it concerns."""

from __future__ import annotations

from conftest import protected_weight_net
from fairspec.backends.milp.undecided import undecided_reason
from fairspec.backends.pair import PairProblem, PairResult

A = "the certified branch and bound did not decide it in {} s (time limit)"
B = "the total time budget was spent before this partition"


def test_a_phrase_repeated_with_other_numbers_is_read_once_with_their_range():
    why = undecided_reason(3, 8, [A.format(2.3), A.format(2.1), B])
    assert why == ("3 of 8 partitions undecided: in 2, the certified branch and bound did not decide it in "
                   "2.1 to 2.3 s (time limit); in 1, the total time budget was spent before this partition"), why
    assert why.count("certified branch") == 1 and "((" not in why and "))" not in why


def test_every_kind_of_reason_is_kept_and_counted():
    reasons = [f"reason {c} here" for c in "abcdefgh"]   # 8 kinds: 6 shown, the rest counted
    why = undecided_reason(8, 8, reasons)
    assert why.count("; ") == 6 and why.endswith("in 2 more, 2 other reasons"), why
    assert undecided_reason(2, 4, [B, B]) == f"2 of 4 partitions undecided, each: {B}"
    assert undecided_reason(2, 4, []) == "2 of 4 partitions undecided"
    # indices stay indices; float32 is a name, not a number
    assert "partition 2, 5 failed" in undecided_reason(2, 4, ["partition 5 failed: lost", "partition 2 failed: lost"])
    assert "float32" in undecided_reason(1, 4, ["a float32 tie"])


def test_the_partitioned_runs_reason_is_it():
    import fairspec.backends.milp.partition as part

    net = protected_weight_net(0, 1.0, True, False, name="undecided")
    p = PairProblem(net, lo=[0, 0, 0, 0], hi=[31, 31, 15, 1], integer=[True] * 4, free=(3,), post="label")
    parts = [([0, 0, 0, 0], [15, 31, 15, 1]), ([16, 0, 0, 0], [31, 31, 15, 1])]
    results = [PairResult("unknown", reason=A.format(2.1), engine="bab", mode="decide"),
               PairResult("unknown", reason=A.format(2.3), engine="bab", mode="decide")]
    r = part._combine(p, "decide", parts, results, 4.4)
    assert r.status == "unknown"
    assert r.reason == ("2 of 2 partitions undecided, each: the certified branch and bound did not decide it "
                        "in 2.1 to 2.3 s (time limit)"), r.reason
