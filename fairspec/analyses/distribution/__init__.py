"""Distributions over discretised features, for group-fairness metrics.

The distribution-based verifiers (Justicia, FVGM) compute, for a classifier and
a data-generating distribution, the *positive predictive value* (PPV) of every
compound protected group -- the probability of a positive prediction
``Pr[Yhat = 1 | A = a]``, also called the group's *passing rate*.  This module
holds the distribution side of that computation:

* ``Bins`` and ``discretise``: continuous features become ordered discrete
  variables by declared or learned (quantile) bins, right-closed
  ``(e[j-1], e[j]]`` so that a tree test ``x <= t`` is a union of bins when
  ``t`` is an edge.
* ``Variable``: a discrete feature (categorical values or bins).
* ``BayesNet``: one representation for every distribution we need.  With no
  edges it is the *independent marginals* distribution; with the protected
  attributes as the parents of every other variable it is Justicia's
  *conditional on the protected group* distribution; learned by hill climbing
  (K2 or BIC score, no edges into protected attributes, bounded in-degree) it
  is FVGM's correlated-feature model; declared with explicit CPTs it is
  whatever the user states.
* Finite-sample error bounds: Justicia's Theorem 3 (multiplicative epsilon_0)
  and a Hoeffding bound on each PPV (additive).

Every validation error raises ``DistributionError`` with one sentence.
numpy is imported at module level (it is a core dependency); nothing heavier.

The package re-exports these names; its modules: ``variables`` (bins, variables, discretised data),
``bayes_net`` (BayesNet), ``estimation`` (from data, structure learning), ``bounds`` (error bounds),
``results`` (GroupPPVs).
"""

from __future__ import annotations

from .bayes_net import BayesNet
from .bounds import ErrorBound, justicia_epsilon0, parent_marginal, ppv_error_bound
from .estimation import conditional, estimate, independent, learn_bayes_net, refit
from .results import GroupPPVs, all_groups
from .variables import Bins, Categorical, Continuous, DiscreteData, DistributionError, PROB_TOL, Variable, discretise


__all__ = [
    "DistributionError",
    "Bins",
    "Variable",
    "Categorical",
    "Continuous",
    "DiscreteData",
    "discretise",
    "BayesNet",
    "independent",
    "conditional",
    "learn_bayes_net",
    "estimate",
    "all_groups",
    "GroupPPVs",
    "ErrorBound",
    "justicia_epsilon0",
    "parent_marginal",
    "refit",
    "ppv_error_bound",
    "PROB_TOL",
]
