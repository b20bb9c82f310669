"""The `repair` backend: FairRepair for scikit-learn decision trees and random forests.

hypercubes (cells and boxes) -> optimise (the LP and the exact choice of flips) -> core
(Algorithm 1, forests per section V) -> patch (the repaired trees) -> runner (the spec's
model and data in; the repaired model written, loaded back and re-verified).
"""

KINDS = frozenset({"repair"})


def run(prop, ctx, progress=None):
    from fairspec.backends.repair.runner import run_repair

    return run_repair(prop, ctx, progress)
