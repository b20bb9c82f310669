"""A wrong verdict the soundness campaign found (bench/soundness.py --seed 42 --count 200
--families shipped, session 21): shipped-42000120-d0 / -d1, group metrics on the data rows of a
torch Sequential ending in Sigmoid whose logit is exactly 0 at one domain point (the harness's
tie on purpose). torch's float32 gives that point 0.50000006 in the harness's 4-point batch and
0.49999994 in the 89-row batch of the data file, so the point's label is 1 or 0 by batch size:
fairspec computes the metric on the data's batch (equal_opportunity 0.6, `violated`), the harness's
truth on the grid's batch (0, `holds`). Neither side says the answer depends on the batch.

Re-run: ``python bench/soundness.py --case shipped-42000120-d0``."""

from __future__ import annotations

import pytest

from differential import campaign


@pytest.mark.xfail(strict=True, reason=(
    "owner lead (open): a group metric on data rows of a batch-dependent runtime (torch float32) with a row "
    "whose score lies within the runtime's rounding of the threshold (0.5 +- 1 ulp here) is decided on one "
    "batch's labels, silently; the harness's truth takes another batch's. The fix is either fairspec's "
    "(such rows detected as pairs are: `unknown` / a note that the metric depends on how the model is "
    "batched) or the harness's (truth on the data file's own batch, or the property set apart as a batch tie)"))
def test_group_metric_at_a_batch_dependent_tie():
    r = campaign.run_one("shipped", 42000120)
    assert r["error"] is None, r["error"]
    wrong = [f"{o['name']}: {o['why']} ({o['reason']})" for o in r["outcomes"] if o["klass"] == "wrong"]
    assert not wrong, wrong
