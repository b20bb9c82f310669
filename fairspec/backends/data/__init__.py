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
    if prop.kind == "individual_fairness":
        from fairspec import ir
        from fairspec.verdict import unknown

        if prop.post in ir.MULTI_POSTS:     # issue 25: flips compare the binary decision only, for now
            return unknown(prop, f"the post-condition '{prop.post}' (issue 25: multiclass and regression "
                                 f"outputs) is not yet decided by the data backend", backend="data", seconds=0.0)
    return run_flips(prop, ctx, progress)
