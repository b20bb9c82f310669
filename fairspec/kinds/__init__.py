"""One module per property kind: its runner (``run(prop, ctx, progress) -> Verdict``) and lowering.

    individual_fairness   the pair problem on milp / smt (falsified on data rows first)
    rule_pairs            a rule model's individual fairness (the enumerate backend): small domains in exact rationals
    k_discrimination      HyFair's search (tree ensembles' enumeration in cells; certify's branch and bound of a network: kdisc_net)
    pba                   PBA neighbourhoods
    distribution          group metrics and fairness influence over a distribution (dp, ssat, elimination)
    lowering              a pair property in feature space (shared by individual fairness and k-discrimination)

Group metrics on data rows and counterfactual flips run in the data backend (fairspec/backends/data).
"""
