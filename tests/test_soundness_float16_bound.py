"""A crash the soundness campaign found (bench/soundness.py --seed 54 --count 40, session 29):
network-solver-54000020-p2 / -p4, a label pair property of a float16 ONNX network whose output is read as
a probability (``score = prob``). The runtime's float16 rounding bound on the probability was 1/2 or more,
so no logit margin follows from it (``prob_error_to_logit`` is inf), and the branch and bound's claim
moved by an infinite margin raised OverflowError out of ``moved_threshold`` (an internal error, "this is
a fairspec bug"). Now the certification gives up with that reason and the refinement decides the domain
(the smt path already refused a non-finite margin).

Re-run: ``python bench/soundness.py --case network-solver-54000020-p2``."""

from __future__ import annotations

import math

import pytest

from differential import campaign


def test_an_infinite_runtime_margin_is_not_a_threshold():
    from fairspec.certify.pairlp.query import moved_threshold

    with pytest.raises(ValueError, match="finite"):
        moved_threshold("label", None, math.inf)
    with pytest.raises(ValueError, match="finite"):
        moved_threshold("prob", 0.1, math.nan)


def test_float16_probability_network_with_no_logit_margin():
    r = campaign.run_one("network-solver", 54000020)
    assert r["error"] is None, r["error"]
    bad = [f"{o['name']}: {o['why']} ({o['reason']})" for o in r["outcomes"] if o["klass"] == "wrong"]
    assert not bad, bad
    by = {o["name"]: o for o in r["outcomes"]}
    for name in ("p2", "p4"):
        assert "internal error" not in (by[name]["reason"] or ""), by[name]["reason"]
