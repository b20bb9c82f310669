"""The pair problem of individual fairness and the parts every pair solver shares.

* :mod:`.problem` -- the problem itself (two copies of one network, the pre- and
  post-condition, witnesses, results, brute force); solver-neutral, numpy only.  Its public
  names are this package's API: ``from fairspec.backends.pair import PairProblem``.
* :mod:`.bounds` -- interval and LP-tightened bounds of one copy and of the difference.
* :mod:`.drivers` -- the one copy of the ``find`` / ``prove`` / ``maximize`` drivers and the
  one "holds" rule over the small ``Engine`` interface (milp and smt implement it).
* :mod:`.certify` -- the bridge from a floating-point solver's answer to
  :mod:`fairspec.certify`: a ``holds`` without a Proof is certified on the model's runtime or
  becomes ``unknown``; a ``maximize`` bound is certified.
* :mod:`.multiclass` -- the ``class`` post of a K-output network (issue 25): K label
  sub-problems on the class scores ``min_j (y_c - y_j)``, certified per class and joined.

Importing the package imports :mod:`.problem` only (no solver).
"""

from fairspec.backends.pair.problem import (POSTS, Coverage, PairProblem, PairResult, Witness, brute_force,
                                            check_witness, clean_pair, enumerate_domain, is_violation, logit_fn,
                                            make_witness, pair_measure, precondition_holds, prob_cut,
                                            prob_cut_points)

__all__ = ["POSTS", "Coverage", "PairProblem", "PairResult", "Witness", "brute_force", "check_witness", "clean_pair",
           "enumerate_domain", "is_violation", "logit_fn", "make_witness", "pair_measure", "precondition_holds",
           "prob_cut", "prob_cut_points"]
