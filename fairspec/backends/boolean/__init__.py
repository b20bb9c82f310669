"""Classifiers in Boolean form, for the exact solvers over a distribution (dp, ssat, elimination).

* :mod:`.forms` -- the forms (``DecisionTree``, ``LinearRule``, ``CNFRule``) and the frozen
  formula nodes a rule passes through; their public names are this package's API:
  ``from fairspec.backends.boolean import DecisionTree``.
* :mod:`.compile` -- the compiler from a spec's rule or a scikit-learn model to a form.
* :mod:`.support` -- a linear model's rounded rule against the model's own predict on a discrete support.
* :mod:`.elimination` -- exact tree PPVs by variable elimination over a tree's paths.

Importing the package imports :mod:`.forms` only.
"""

from fairspec.backends.boolean.forms import (CNFRule, And, Classifier, Column, Constant, DecisionTree, Formula,
                                             Linear, LinearRule, Literal, Not, Or, Test, Threshold, cnf_rule, is_,
                                             leaf, linear_from_sklearn, linear_rule, split, tree_from_sklearn,
                                             tree_split_points)

__all__ = ["CNFRule", "And", "Classifier", "Column", "Constant", "DecisionTree", "Formula", "Linear", "LinearRule",
           "Literal", "Not", "Or", "Test", "Threshold", "cnf_rule", "is_", "leaf", "linear_from_sklearn",
           "linear_rule", "split", "tree_from_sklearn", "tree_split_points"]
