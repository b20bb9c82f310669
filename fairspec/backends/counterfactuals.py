"""The counterfactual cases the refinement (:mod:`fairspec.backends.refine`) and the estimate
(:mod:`fairspec.backends.estimate`) decide an individual under, and the runtime's scores of them.

* :func:`protected_cases_of` -- every assignment of the protected inputs (one-hot categories, integer
  values of at most 16), :func:`counterfactuals` -- with the small integral relaxed inputs' values too,
  and the ordered pairs of cases the pre-condition admits (an individual is then the tied inputs:
  :func:`individual_of`);
* :func:`box_points` -- every individual of an integral box, as rows over all inputs;
* :func:`case_points` / :func:`case_scores` / :func:`batch_scores` -- the individuals under each case
  and the runtime's scores of them (one batch per case, with the batch-dependence flags
  ``BatchScorer.unsure`` gives), :func:`compared_scores` -- the scores the post-condition compares
  (a class readout: certify reads class c from the runtime's K outputs), :func:`counted_scores` -- what
  the count compares (the library's own probabilities where the scorer reads them), and
  :func:`runtime_scorer` -- the runtime's :class:`~fairspec.backends.pair.certify.BatchScorer` of a pair problem.

What :func:`fairspec.certify.enumerate.count_individuals` then counts exactly.
"""

from __future__ import annotations

import itertools

import numpy as np

__all__ = ["protected_cases_of", "counterfactuals", "tied_groups", "individual_of", "runtime_scorer", "box_points",
           "case_points", "case_scores", "batch_scores", "compared_scores", "counted_scores", "RELAXED_VALUES"]


def protected_cases_of(problem):
    """Every assignment of the protected inputs (None when they are not all small and discrete)."""
    from fairspec.backends.quantify import protected_cases

    free = set(problem.free)
    grouped = {i for g in problem.onehot_groups for i in g}
    for i in free - grouped:
        if not problem.integer[i] or problem.hi[i] - problem.lo[i] >= 16:
            return None
    return protected_cases(problem)


#: a relaxed input is taken by the decision pass only when it has at most this many values
RELAXED_VALUES = 16


def tied_groups(problem) -> list:
    """The one-hot groups with no protected member (each individual takes one category, and a pair's
    two copies share it)."""
    free = set(problem.free)
    return [tuple(int(i) for i in g) for g in problem.onehot_groups if not free.intersection(g)]


def counterfactuals(problem, tie_groups: bool = False):
    """``(cases, pairs)``: every assignment of the inputs a pair's two copies need not share -- the
    protected ones (:func:`protected_cases_of`) and the relaxed ones (each integer value of the domain) -- and the
    ordered ``(a, b)`` the pre-condition admits (differ where ``must_differ`` demands, every relaxed
    input within its tolerance). An individual is then the tied inputs only, so a pair never leaves it.
    ``tie_groups``: each unprotected one-hot group (:func:`tied_groups`) is one more integer-valued input
    of the cases, its values its categories (a member whose range reaches 1), which a pair's two cases
    share (an individual is then the other tied inputs: :func:`individual_of` with ``tie_groups``).
    None when they are not all small and integral (or more than ``MAX_CASES``)."""
    from fairspec.backends.quantify import MAX_CASES

    cases = protected_cases_of(problem)
    if cases is None:
        return None
    tied = tied_groups(problem) if tie_groups else []
    for g in tied:
        cats = [{j: (1.0 if j == i else 0.0) for j in g} for i in g if problem.hi[i] >= 1]
        cases = [{**c, **d} for c in cases for d in cats]
        if len(cases) > MAX_CASES:
            return None
    for i, _ in problem.relaxed:
        if not problem.integer[i] or problem.hi[i] - problem.lo[i] >= RELAXED_VALUES:
            return None
        vals = [float(v) for v in range(int(problem.lo[i]), int(problem.hi[i]) + 1)]
        cases = [{**c, i: v} for c in cases for v in vals]
    if len(cases) > MAX_CASES:
        return None
    must, tol = set(problem.must_differ), problem.relaxed
    pairs = [(a, b) for a in range(len(cases)) for b in range(len(cases))
             if a != b and any(cases[a].get(i) != cases[b].get(i) for i in must)
             and all(abs(cases[a][i] - cases[b][i]) <= t for i, t in tol)
             and all(cases[a][i] == cases[b][i] for g in tied for i in g)]
    return cases, pairs


def individual_of(problem, tie_groups: bool = False) -> tuple[int, ...]:
    """The inputs of an individual here: the tied ones (neither protected nor relaxed; with
    ``tie_groups`` not of an unprotected one-hot group either: those are the cases')."""
    from fairspec.backends.quantify import individual_inputs

    rel = {i for i, _ in problem.relaxed}
    if tie_groups:
        rel |= {i for g in tied_groups(problem) for i in g}
    return tuple(i for i in individual_inputs(problem) if i not in rel)


def runtime_scorer(problem):
    """The runtime's :class:`~fairspec.backends.pair.certify.BatchScorer` (feature-space points), or None."""
    from fairspec.backends.pair.certify import BatchScorer

    rt = problem.runtime
    if rt is None:                      # the network's own float64 forward is the runtime
        post = "prob-of-logit" if problem.post == "prob" else problem.post

        def score(X):
            return np.asarray(problem.net.forward(X), dtype=np.float64).reshape(-1)

        return BatchScorer(score, post, 0)
    return getattr(rt, "scores", None)


def box_points(problem, lo, hi, inputs):
    """Every individual of an integral box (one-hot groups among ``inputs``: each allowed category), as
    rows over all inputs."""
    free = set(problem.free)
    grouped = {i for g in problem.onehot_groups for i in g}
    axes = []
    for g in problem.onehot_groups:
        if free.intersection(g) or not set(g) <= set(inputs):
            continue
        forced = [i for i in g if lo[i] >= 1]
        allowed = forced if forced else [i for i in g if hi[i] >= 1]
        axes.append([{j: (1.0 if j == i else 0.0) for j in g} for i in allowed])
    for i in inputs:
        if i not in grouped:
            axes.append([{i: float(v)} for v in range(int(np.ceil(lo[i])), int(np.floor(hi[i])) + 1)])
    rows = []
    base = lo.copy()
    for combo in itertools.product(*axes):
        x = base.copy()
        for d in combo:
            for i, v in d.items():
                x[i] = v
        rows.append(x)
    return np.array(rows, dtype=np.float64).reshape(-1, lo.shape[0])


def case_points(X, cases) -> list:
    """The rows of ``X`` under each protected case (``{input: value}`` assignments written over the
    rows): one array per case."""
    out = []
    for c in cases:
        Xc = X.copy()
        for i, v in c.items():
            Xc[:, i] = v
        out.append(Xc)
    return out


def case_scores(score, X, cases) -> list:
    """The runtime's score of every row of ``X`` under each protected case: one array per case."""
    return [score(Xc) for Xc in case_points(X, cases)]


def batch_scores(scorer, X, cases, pairs) -> tuple:
    """``(S, unsure)``: the runtime's scores of the individuals X under each protected case (one batch
    per case, :func:`case_scores`), and per individual whether another batch of a float runtime may
    decide one of its pairs otherwise (``scorer.unsure``; None: every batch alike). What
    :func:`fairspec.certify.enumerate.count_individuals` counts, ``unsure`` left neither fair nor unfair."""
    points = case_points(X, cases)
    S = [scorer.fn(Xc) for Xc in points]
    return S, (scorer.unsure(points, compared_scores(scorer, S), pairs) if scorer.unsure is not None else None)


def compared_scores(scorer, S) -> list:
    """The scores the post-condition compares, from what ``scorer.fn`` gave (``S``): themselves, or for
    a class readout the class scores certify reads from the runtime's outputs."""
    if getattr(scorer, "readout", None) is None:
        return S
    from fairspec.certify.enumerate import class_scores_of

    return class_scores_of(S, scorer.readout, scorer.post, scorer.threshold)


def counted_scores(scorer, X, cases, S) -> tuple:
    """``(scores, post, options)`` :func:`fairspec.certify.enumerate.count_individuals` counts the
    individuals X by (``S``: :func:`batch_scores`' scores of them): ``S`` as ``scorer.post`` (``rounded``
    as the scorer says), or where the scorer reads the library's own probability (``scorer.prob``:
    predict_proba of a logistic of the logit) those floats under each case, compared exactly as ``prob``
    (ties within the logistic bounds' margin decided as the enumeration decides them; the Proof's detail
    says ``over = predict_proba``). Another batch's rounding is judged on ``S`` (``unsure``) either way."""
    prob = getattr(scorer, "prob", None)
    if prob is None:
        return S, scorer.post, {"rounded": getattr(scorer, "rounded", False),
                                **({"decisions": True} if getattr(scorer, "decisions", False) else {})}
    P = [np.asarray(prob(Xc), dtype=np.float64).reshape(-1) for Xc in case_points(X, cases)]
    return P, "prob", {"over": "predict_proba"}
