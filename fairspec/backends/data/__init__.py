"""The `data` backend: fairness measured on the declared data set with the real model.

* Group metrics (positive rate per group, disparate impact, statistical
  parity, equalized odds, equal opportunity) with bootstrap confidence
  intervals; a group smaller than `min_group_size` makes the verdict unknown.
* Counterfactual flips, the data-level form of individual fairness: every row
  with its protected attributes changed to every other value; a changed
  decision is a witness, replayed on the model's own runtime.  This backend
  never proves individual fairness.
"""

from __future__ import annotations

from fairspec.backends.data.flips import run_flips
from fairspec.backends.data.metrics import run_group_metric

KINDS = frozenset({"group_metric", "individual_fairness"})


def run(prop, ctx, progress=None):
    if prop.kind == "group_metric":
        return run_group_metric(prop, ctx)
    return run_flips(prop, ctx, progress)
