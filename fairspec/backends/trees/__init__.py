"""Exact individual fairness (the pair problem) on tree ensembles: MILP and SMT encodings."""
