"""The `repair` backend: FairRepair for scikit-learn decision trees and random forests.

hypercubes (cells and boxes) -> optimise (the LP and the exact choice of flips) -> core
(Algorithm 1, forests per section V) -> patch (the repaired trees) -> runner (the spec's
model and data in; the repaired model written, loaded back and re-verified). Its runner, which
asks the planner for the options and passes them in, is :mod:`fairspec.kinds.repair`.
"""
