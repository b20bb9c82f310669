"""A row within the runtime's rounding of the threshold is fragile even when re-scoring it alone, in a batch
of the near rows and reversed gives its data-batch decision: float32 rounding moves with the batch size (the
soundness case data-batched-125000007-d0, session 37: a torch logit 0 gives 1/2 in batches of 1, 18, 32 and
79, 0.50000006 in a batch of 7; fairspec said holds (estimated) for a false-positive-rate difference of 1/8
in the data's batch and 17/24 in chunks of 7)."""

from __future__ import annotations

import numpy as np

from fairspec.backends.data import batching


class _SizeRounding:
    """A model whose tie rows' score is 1/2 except in batches of 7 rows (1/2 + 2^-24 there)."""

    precision = "float32"
    threshold = 0.5

    def __init__(self, tie):
        self.tie = np.asarray(tie, dtype=np.float64)

    def score(self, X):
        X = np.asarray(X, dtype=np.float64)
        at = (X == self.tie).all(axis=1)
        return np.where(at, 0.5 + (2.0 ** -24 if X.shape[0] == 7 else 0.0), 0.1)

    def decide(self, X):
        return (self.score(X) > 0.5).astype(np.int64)


def test_a_near_row_is_fragile_though_three_rescorings_agree(monkeypatch):
    monkeypatch.setattr(batching, "decision_spread", lambda model, X, z: (1e-6, "certified"))
    tie = [7.0, 19.0, 1.0]
    X = np.array([tie] * 18 + [[1.0, 2.0, 0.0]] * 61)
    m = _SizeRounding(tie)
    d = m.decide(X)
    z = m.score(X)
    assert (m.decide(X[:7]) != d[:7]).any()       # the batch of 7 decides the tie rows otherwise
    found = batching.decision_fragile(m, X, d, z, 0.5)
    assert found["near"] == 18, found
    assert sorted(found["rows"].tolist()) == list(range(18)), found    # before the fix: none (own, reversed, alone agree)
