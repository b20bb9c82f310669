"""A wrong verdict the soundness campaign found (bench/soundness.py --seed 42 --count 200
--families shipped, session 21): shipped-42000120-d0 / -d1, group metrics on the data rows of a
torch Sequential ending in Sigmoid whose logit is exactly 0 at one domain point (the harness's
tie on purpose). torch's float32 gives that point 0.50000006 in the harness's 4-point batch (and
alone) and 0.49999994 in the 89-row batch of the data file, so the point's label is 1 or 0 by batch
size: fairspec computed the metric on the data's batch (equal_opportunity 0.6, `violated`), the
harness's truth on the grid's batch (0, `holds`), and neither said the answer depends on the batch.

Now the data backend re-decides the rows near the threshold in other batchings
(fairspec/backends/data/batching.py): the 30 rows at the tie are decided otherwise alone, the metric
ranges over [0, 0.6] with their decisions, and the verdict is `unknown` (a batch tie); a property
whose verdict those rows do not change keeps it, with a note.

Re-run: ``python bench/soundness.py --case shipped-42000120-d0``."""

from __future__ import annotations

import pandas as pd
import pytest

from conftest import NO_BATCH_TIE, shipped_batch_tie
from differential import campaign


def test_group_metric_at_a_batch_dependent_tie(tmp_path):
    r = campaign.run_one("shipped", 42000120)
    assert r["error"] is None, r["error"]
    wrong = [f"{o['name']}: {o['why']} ({o['reason']})" for o in r["outcomes"] if o["klass"] == "wrong"]
    assert not wrong, wrong
    if not shipped_batch_tie(tmp_path):
        pytest.skip(NO_BATCH_TIE)
    by = {o["name"]: o for o in r["outcomes"]}
    for name in ("d0", "d1"):
        o = by[name]
        assert campaign.is_batch_tie(o), o
        assert "30 rows of 'd'" in o["reason"] and "ranges over [0, 0.6" in o["reason"], o["reason"]


KEPT = """
property keep_holds {
  equal_opportunity(m, groups g) <= 0.9
  bootstrap = 100
  seed = 1
  min_group_size = 1
}
property keep_violated {
  statistical_parity(m, groups g) >= 0.95
  bootstrap = 100
  seed = 1
  min_group_size = 1
}
property keep_weighted {
  statistical_parity(m, groups g) <= 0.9
  bootstrap = 100
  seed = 1
  min_group_size = 1
  weight = w
}
property flips_weighted {
  statistical_parity(m, groups g) <= 0.3
  bootstrap = 100
  seed = 1
  min_group_size = 1
  weight = w
}
"""


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    from fairspec import api

    d = tmp_path_factory.mktemp("batch_tie")
    inst = campaign.families()["shipped"](42000120)
    for k, v in inst.files.items():
        (d / k).write_bytes(v)
    rows = pd.read_csv(d / "d.csv")
    rows["w"] = [1 + i % 3 for i in range(len(rows))]         # Poisson replicates: the weighted bootstrap
    rows.to_csv(d / "d.csv", index=False)
    (d / "spec.fair").write_text(inst.spec + KEPT)
    r = api.check(str(d / "spec.fair"))
    assert not r.diagnostics, r.diagnostics
    return {v.name: v for v in r.verdicts}


@pytest.mark.parametrize("name, status", [("keep_holds", "holds"), ("keep_violated", "violated"),
                                          ("keep_weighted", "holds")])
def test_fragile_rows_that_do_not_change_the_verdict_leave_a_note(verdicts, name, status, tmp_path):
    v = verdicts[name]
    assert v.status == status, (v.status, v.reason)
    if not shipped_batch_tie(tmp_path):
        pytest.skip(NO_BATCH_TIE)
    b = v.details["batching"]
    assert b["fragile_rows"] == 30 and b["verdicts"] == [status]
    assert b["value_range"][0] == 0.0 and b["value_range"][1] == pytest.approx(v.value)
    assert "the verdict is the same" in b["note"]


def test_weighted_metric_at_a_batch_tie_is_unknown(verdicts, tmp_path):
    if not shipped_batch_tie(tmp_path):
        pytest.skip(NO_BATCH_TIE)
    v = verdicts["flips_weighted"]
    assert v.status == "unknown" and "depends on how the model is batched" in v.reason, v.reason
    assert {"holds", "violated"} <= set(v.details["batching"]["verdicts"])


def _counts(g, d, y, w, R, seed, G=3):
    """Counts as ``cell_counts._Counter.add`` accumulates them over one batch (rows at positions 0..n-1)."""
    import numpy as np

    from fairspec.backends.data.cell_counts import Counts, poisson_multiplicities

    cell = g * 4 + d * 2 + y
    m = poisson_multiplicities(seed, 0, R, 0, g.size) * w
    off = np.arange(R)[:, None]
    boot = np.bincount((off * G * 4 + cell).ravel(), weights=m.ravel(), minlength=R * G * 4).reshape(R, G, 2, 2)
    return Counts(np.bincount(cell, weights=w, minlength=G * 4).reshape(G, 2, 2), np.bincount(g, minlength=G),
                  ["a", "b", "c"], weighted=True, boot_cells=boot)


def test_shifted_counts_are_the_counts_of_the_other_decisions():
    import numpy as np

    from fairspec.backends.data import batching
    from fairspec.backends.data.cell_counts import poisson_multiplicities

    rng = np.random.default_rng(5)
    n, R, seed = 40, 7, 3
    g, d, y = rng.integers(0, 3, n), rng.integers(0, 2, n), rng.integers(0, 2, n)
    w = rng.random(n) + 0.5
    fr_rows = np.array([2, 5, 5 + 1, 17, 39])
    new = d.copy()
    new[fr_rows] = 1 - d[fr_rows]
    new[17] = d[17]                                  # a fragile row its new decision leaves alone
    fr = (g[fr_rows], y[fr_rows], w[fr_rows], d[fr_rows], new[fr_rows], fr_rows)
    got = batching._shifted(_counts(g, d, y, w, R, seed), fr, new[fr_rows], seed, poisson_multiplicities)
    want = _counts(g, new, y, w, R, seed)
    assert np.allclose(got.cells, want.cells) and np.allclose(got.boot_cells, want.boot_cells)


def test_only_runtimes_that_round_by_batch_are_rechecked():
    from types import SimpleNamespace as NS

    from fairspec.backends.data import batching

    assert batching.checked(NS(format="torch"))
    assert batching.checked(NS(format="onnx", precision="float64"))
    assert not batching.checked(NS(format="onnx", precision="float32"))
    assert not batching.checked(NS(format="xgboost"))
    from sklearn.neural_network import MLPClassifier
    from sklearn.tree import DecisionTreeClassifier

    assert batching.checked(NS(format="sklearn", raw=MLPClassifier()))
    assert not batching.checked(NS(format="sklearn", raw=DecisionTreeClassifier()))
