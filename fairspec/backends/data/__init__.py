"""The `data` backend: fairness measured on the declared data set with the real model.

* Group metrics (positive rate per group, disparate impact, statistical
  parity, equalized odds, equal opportunity) with bootstrap confidence
  intervals; a group smaller than `min_group_size` makes the verdict unknown
  (not for theil_index / generalized_entropy_index, over individuals: groups only split their table).
* Counterfactual flips, the data-level form of individual fairness: every row
  with its protected attributes changed to every other value; a changed
  decision is a witness, replayed on the model's own runtime.  This backend
  never proves individual fairness.
* Rows a batch-dependent runtime (torch, ...) decides otherwise in another batching
  (``batching.py``): the group metric decided again with their decisions either way;
  a changed verdict is unknown ("depends on how the model is batched").

Its runner, which asks the planner for the options and passes them in, is
:mod:`fairspec.kinds.on_data`.
"""
