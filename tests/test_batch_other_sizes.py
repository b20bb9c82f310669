"""The data backend re-scores the rows near a decision threshold in batches of other sizes, not only alone,
as a batch of their own and reversed (backends/data/batching._other_sizes). Soundness case
data-batched-125000007-d0 (session 37, an Intel Xeon): a torch sigmoid whose logit is 0 at one point gave 0.5 in
batches of 1, 18, 32 and 79 rows and 0.50000006 in a batch of 7; the three re-scorings agreed, the row was called
stable and fairspec said ``holds (estimated)`` where the harness's batching in chunks of 7 violates. Whether a
CPU's kernels do that is the machine's business, so these tests give the runtime that behaviour themselves
(a model rounding by batch size or by position in the batch) and pass on any CPU. Each failed before the fix."""

from __future__ import annotations

import numpy as np
import pytest

from test_batch_recheck_paths import BATCHED, _ByBatch as _BySize, _check, _prop


X5 = np.array([[1, 0], [0, 0], [0, 1], [1, 1], [0, 0]], dtype=np.float64)


@pytest.mark.parametrize("size, position", [(7, None), (12, 5), (64, 0), (3, 2)])
def test_a_row_that_rounds_otherwise_in_another_batch_size_is_fragile(size, position):
    from fairspec.backends.data.outputs import _decide_outputs, output_fragile

    m = _BySize(2.0, size, position)
    Y = m.outputs(X5)
    d = _decide_outputs(m, Y, None, 2.0)
    assert d.tolist() == [0, 1, 0, 0, 1]
    found = output_fragile(m, X5, Y, d, None, 2.0)
    # alone, as a batch of their own (2 rows) and reversed the two near rows round below t, as in the data
    assert found["near"] == 2 and found["rows"].tolist() == [0, 3], found


def test_a_row_stable_in_every_size_tried_stays_decided():
    from fairspec.backends.data.outputs import _decide_outputs, output_fragile

    m = _BySize(2.0, 10_000)                  # rounds otherwise only in a batch of 10,000 rows: never tried
    Y = m.outputs(X5)
    d = _decide_outputs(m, Y, None, 2.0)
    found = output_fragile(m, X5, Y, d, None, 2.0)
    assert found["near"] == 2 and found["rows"].size == 0 and found["unchecked"] == 0, found


def test_past_the_nearest_points_rescored_in_other_sizes_the_rows_are_fragile(monkeypatch):
    from fairspec.backends.data import batching
    from fairspec.backends.data.outputs import _decide_outputs, output_fragile

    monkeypatch.setattr(batching, "MAX_SIZED", 0)
    m = _BySize(2.0, 10_000)
    Y = m.outputs(X5)
    d = _decide_outputs(m, Y, None, 2.0)
    found = output_fragile(m, X5, Y, d, None, 2.0)
    assert found["rows"].tolist() == [0, 3] and found["unchecked"] == 2, found


def test_the_model_decision_on_data_at_a_tie_that_moves_in_a_batch_of_seven(tmp_path, monkeypatch):
    """End to end on the harness's shipped-42000120 torch network (a Sequential ending in Sigmoid, logit exactly
    0 at one point, 30 of the 89 data rows), its runtime made to read that point 0.50000006 in a batch of 7 rows
    and 0.49999994 in any other: equal opportunity is 0.6 in the data's batch and 0 in chunks of 7, so the
    verdict depends on the batching. Before: the re-scorings alone, as 30 rows and reversed agreed, and the
    property was decided."""
    pytest.importorskip("torch")
    import torch

    from fairspec.models.torch_model import TorchModel

    real = TorchModel._forward

    def forward(self, X):
        y = real(self, X)
        with torch.no_grad():
            tie = (y - 0.5).abs() <= 2.0 ** -22
            moved = torch.full_like(y, 0.50000006 if len(X) == 7 else 0.49999994)
            return torch.where(tie, moved, y)

    monkeypatch.setattr(TorchModel, "_forward", forward)
    v = _check(tmp_path, _prop("d0", "equal_opportunity(m, groups g) <= 0.1"))["d0"]
    assert v.status == "unknown" and BATCHED in v.reason, (v.status, v.reason)
    assert v.details["batching"]["fragile_rows"] == 30, v.details["batching"]
