"""Finite-sample error bounds of the distributions (fairspec.analyses.distribution): Justicia's Theorem 3
(multiplicative epsilon_0) and a Hoeffding bound on each group's PPV (additive)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping

import numpy as np

from .bayes_net import BayesNet
from .variables import DistributionError


@dataclass(frozen=True)
class ErrorBound:
    """Finite-sample error of a value computed from an estimated distribution.

    ``epsilon0``: Justicia's Theorem 3 / Corollary 4 read with constant 1: from
    k rows, n existential (protected) and m random variables, with probability
    1 - delta the estimated PPVs satisfy p_hat <= epsilon0 * p with
    epsilon0 = exp((n + ln(1/delta)) * ln(m) / k), hence DI_hat <= epsilon0 * DI and
    SP_hat <= epsilon0 * SP.
    ``ppv_additive``: our Hoeffding bound: with probability 1 - delta every
    reported PPV is within this distance of the PPV under the true distribution
    (sum over the classifier's variables of the worst CPT row's total-variation
    bound, union bound over all rows).  ``value_additive`` is its consequence for
    the metric (2x for a difference; None for a ratio).
    """

    delta: float
    n_rows: int | None
    epsilon0: float | None
    ppv_additive: float | None
    value_additive: float | None = None

    def as_dict(self) -> dict:
        return {"delta": self.delta, "n_rows": self.n_rows, "epsilon0": self.epsilon0,
                "ppv_additive": self.ppv_additive, "value_additive": self.value_additive}


def justicia_epsilon0(n_rows: int, n_exists: int, n_random: int, delta: float = 0.05) -> float:
    """epsilon_0 of Justicia's Theorem 3 solved for k = n_rows (constant taken as 1)."""
    if n_rows <= 0:
        return math.inf
    if not 0 < delta < 1:
        raise DistributionError("the confidence parameter delta must be in (0, 1)")
    m = max(n_random, 2)
    return math.exp((n_exists + math.log(1 / delta)) * math.log(m) / n_rows)


def parent_marginal(bn: BayesNet, name: str, evidence: Mapping[str, int] | None = None) -> np.ndarray:
    """Pr[parents of ``name`` = r | evidence] under ``bn``: one entry per CPT row of ``name``.

    Exact, by summing the product of the CPTs of the parents' ancestors
    (``numpy.einsum``); ``evidence`` clamps variables to value indices.
    """
    pa = bn.parents[name]
    if not pa:
        return np.ones(())
    evidence = dict(evidence or {})
    keep = [n for n in bn.order if n in bn.ancestors(pa)]
    axis = {n: i for i, n in enumerate(keep)}
    operands: list = []
    for n in keep:
        t = bn.cpts[n]
        if n in evidence:
            ind = np.zeros(bn.variables[n].k)
            ind[int(evidence[n])] = 1.0
            t = t * ind
        operands += [t, [axis[q] for q in bn.parents[n]] + [axis[n]]]
    out = np.einsum(*operands, [axis[q] for q in pa], optimize="greedy")
    total = out.sum()
    return out / total if total > 0 else out


def _log_2k_minus_2(k: int) -> float:
    """ln(2^k - 2) without overflow (k >= 2)."""
    return k * math.log(2) + math.log1p(-2.0 ** (1 - k)) if k < 1000 else k * math.log(2)


def ppv_error_bound(bn: BayesNet, names: Iterable[str], delta: float = 0.05,
                    group: Mapping[str, int] | None = None) -> float | None:
    """Hoeffding bound on |PPV_hat - PPV| for a classifier reading ``names``.

    Write both distributions as products of CPTs in topological order and
    telescope: replacing the true CPT of variable j by its estimate moves
    E[f] (f in [0, 1]) by at most sum_r Pr_hat[pa_j = r] * TV_r, where the
    parent weights are those of the *estimated* network (the variables before j
    are already estimated in the hybrid) and TV_r is the total-variation error
    of row r.  A k-valued row estimated from n rows has
    TV_r <= min(1, sqrt((ln(2^k - 2) + ln(R / delta)) / (2 n))) for all R rows in
    play at once with probability 1 - delta (the L1 deviation inequality of
    Weissman et al. 2003, P(||p_hat - p||_1 >= e) <= (2^k - 2) exp(-n e^2 / 2),
    and a union bound); an empty row has TV_r <= 1 and weighs what the estimate
    gives its parents.
    Returns None for a declared network (no sample).
    """
    if bn.n_rows is None or not bn.row_counts:
        return None
    group = dict(group or {})
    use = [n for n in bn.order if n in bn.ancestors(names) and n not in group]
    counts = {}
    for n in use:
        rc = bn.row_counts.get(n)
        if rc is None:
            return None
        counts[n] = np.asarray(rc, dtype=float)
    R = sum(max(c.size, 1) for c in counts.values()) or 1
    tot = 0.0
    for n in use:
        k = bn.variables[n].k
        n_r = counts[n].reshape(bn.cpts[n].shape[:-1])
        with np.errstate(divide="ignore"):
            tv = np.minimum(1.0, np.sqrt((_log_2k_minus_2(k) + math.log(R / delta)) / (2 * n_r)))
        w = parent_marginal(bn, n, group)
        tot += float(np.sum(w * tv))
    return float(min(tot, 1.0))
