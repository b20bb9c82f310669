"""Proof path: ``certify.exact.prove_exhaustive`` for a repair's goal (``backends/repair/runner._goal_proof``),
end to end at the tie: every ``holds (proved)`` is re-checked on the model the user ends up with -- the
written file, loaded again through skops and run with its own ``predict`` on every row of the data file
(the original model when nothing was repaired) -- with the passing-rate ratio in exact fractions and the
goal's ``>`` / ``>=`` as written. The audit's two rows sets make the ratio exactly 4/5 before repair."""

from __future__ import annotations

import csv
from fractions import Fraction

import numpy as np
import pytest

from test_repair_ties import A_AUDIT, B_AUDIT, _tie_project, _verdicts

pytest.importorskip("skops")


def _ratio(path, rows) -> Fraction:
    """min / max of the groups' passing rates of the model file ``path`` on ``rows``, exactly."""
    from fairspec.models.sklearn_model import import_skops_io

    sio = import_skops_io()
    est = sio.load(path, trusted=sio.get_untrusted_types(file=path))
    X = np.array([[float(r["a"]), 1.0 if r["s"] == "M" else 0.0] for r in rows])
    dec = est.predict(X)
    rates = []
    for g in ("F", "M"):
        m = np.array([r["s"] == g for r in rows])
        rates.append(Fraction(int(dec[m].sum()), int(m.sum())))
    return min(rates) / max(rates)


@pytest.mark.parametrize("rows", [A_AUDIT, B_AUDIT], ids=["7of10-7of8", "4of10-5of10"])
def test_repair_goal_proofs_hold_on_the_written_model(tmp_path, rows):
    blocks = []
    for i, (op, alpha) in enumerate([(">=", None), (">", 3), (">", 50), (">", 1000), (">=", 2)]):
        bound = f"  bound semantic_difference <= {alpha} * minimal\n" if alpha else ""
        blocks.append(f"repair r{i} for dt {{\n  goal passing_rate_ratio(groups s) {op} 0.8\n{bound}"
                      f"  write \"r{i}.skops\"\n}}\n")
    spec = _tie_project(tmp_path, rows, "".join(blocks))
    with open(tmp_path / "d.csv") as fh:
        data = list(csv.DictReader(fh))
    before = _ratio(tmp_path / "dt.skops", data)
    assert before == Fraction(4, 5)
    v = _verdicts(spec)
    proved = 0
    for i, (op, _) in enumerate([(">=", None), (">", 3), (">", 50), (">", 1000), (">=", 2)]):
        r = v[f"r{i}"]
        written = tmp_path / f"r{i}.skops"
        if r.status == "holds":
            assert r.how == "proved" and r.proof is not None and r.proof.method == "exhaustive-data"
            after = _ratio(written if written.exists() else tmp_path / "dt.skops", data)
            assert (after > Fraction(4, 5)) if op == ">" else (after >= Fraction(4, 5)), (i, after, r.reason)
            assert written.exists() == bool(r.details.get("repaired")), (i, r.details)
            proved += 1
        else:
            assert r.status in ("violated", "unknown"), r.status
            assert not written.exists()
            if op == ">=":
                pytest.fail(f"a goal the model already meets (4/5 >= 0.8) is {r.status}: {r.reason}")
            if r.status == "violated":
                # brute force: the model as it is fails > 4/5 (exactly 4/5), and a bound admitting no row
                # changed leaves it so
                assert "(0 rows)" in r.reason, r.reason
    assert proved >= 2
